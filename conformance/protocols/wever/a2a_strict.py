"""What the A2A adapter's strict profile refuses before any delivery: a missing or
other A2A-Version, every item of protocols.a2a.unsupported, a task continuation, data
breaking data_schema (or the role, part count, media type), output modes without
application/json, and requests past the adapter's limits; and the agent card it serves."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance, invalid_strategy
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import limit, noop, replaces
from conformance.protocols.a2a import wire
from conformance.protocols.wever.client import (
    MARKER_FIELD,
    RECIPIENT,
    SENDER,
    STRANGER,
    WeverClient,
    dig,
    refused_rpc,
    rpc_error,
    served_rpc,
)
from conformance.protocols.wever.reference import WeverReference
from conformance.protocols.wever.shared_faults import UNBOUNDED
from conformance.transport.http import HttpReply

A2A = "/protocols/a2a"


@requirement(id="WEVER-A2A-VERSION-REQUIRED", level="MUST",
             title="A SendMessage with a missing or other A2A-Version is rejected and delivers nothing",
             source=at(f"{A2A}/strict_profile"),
             faults=[noop("a2a_version_optional", "a2a_check_version",
                          "A2A requests with a missing or another A2A-Version are served.")])
def check_a2a_version(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    for version in (None, "0.3", "2.0"):
        with ctx.subcheck(f"A2A-Version {version or 'missing'}"):
            data, marker = c.marked()
            reply = c.a2a_call("SendMessage", c.a2a_message(data=data), version=version)
            ctx.expect(rpc_error(reply) is not None or reply.status >= 400,
                       f"SendMessage with A2A-Version {version or 'missing'} was served: HTTP {reply.status} "
                       f"{reply.text[:200]}",
                       kind="accepted_invalid")
            watch.nothing_delivered(marker, "a refused SendMessage")


def unsupported_requests(c: WeverClient, data: Any = None) -> dict[str, Callable[[], HttpReply]]:
    """One request per item of protocols.a2a.unsupported (and the strict profile's rules),
    each SendMessage carrying ``data``."""
    def msg() -> dict[str, Any]:
        return c.a2a_message(data=data)

    def with_(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        params = msg()
        change(params)
        return params

    def text_part(p: dict[str, Any]) -> None:
        p["message"]["parts"] = [{"text": "hello", "mediaType": "text/plain"}]

    envelope = wire.request("SendMessage", msg(), request_id="1")
    return {
        "blocking SendMessage": lambda: c.a2a_call("SendMessage", with_(lambda p: p["configuration"].update(
            returnImmediately=False))),
        "ListTasks": lambda: c.a2a_call("ListTasks", {}),
        "streaming": lambda: c.a2a_call("SendStreamingMessage", msg()),
        "subscriptions": lambda: c.a2a_call("SubscribeToTask", {"id": "task_" + "0" * 32}),
        "push notifications": lambda: c.a2a_call("SendMessage", with_(lambda p: p["configuration"].update(
            pushNotificationConfig={"url": "https://example.invalid/hook"}))),
        "extended agent card": lambda: c.a2a_call("GetExtendedAgentCard", {}),
        "task continuation": lambda: c.a2a_call("SendMessage", with_(lambda p: p["message"].update(
            taskId="task_" + "0" * 32))),
        "conversation context": lambda: c.a2a_call("SendMessage", with_(lambda p: p["message"].update(
            contextId="ctx-conformance"))),
        "tenant routing": lambda: c.a2a_call("SendMessage", with_(lambda p: p.update(tenant="conformance"))),
        "request metadata": lambda: c.a2a_call("SendMessage", with_(lambda p: p.update(metadata={"k": "v"}))),
        "protocol extensions": lambda: c.a2a_call("SendMessage",
                                                  with_(lambda p: p["message"].update(extensions=["urn:x"]))),
        "text or file parts": lambda: c.a2a_call("SendMessage", with_(text_part)),
        "batch requests": lambda: c.a2a_call("SendMessage", {}, raw=json.dumps([envelope])),
        "notifications": lambda: c.a2a_call("SendMessage", {},
                                            raw=json.dumps({k: v for k, v in envelope.items() if k != "id"})),
    }


@requirement(id="WEVER-A2A-STRICT", level="MUST",
             title="Every unsupported A2A feature is rejected before any delivery",
             source=at(f"{A2A}/unsupported"), faults=["a2a_blocking_served", "a2a_metadata_ignored"])
def check_a2a_strict(ctx: CheckContext) -> None:
    """Every item of protocols.a2a.unsupported is refused before any delivery."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    data, marker = c.marked()
    requests = unsupported_requests(c, data)
    listed = c.a2a["unsupported"]
    ctx.expect(set(listed) <= set(requests),
               "the manifest lists unsupported items the check does not know: "
               f"{sorted(set(listed) - set(requests))}",
               kind="crash")
    watch = c.watch(RECIPIENT)
    for item in listed:
        with ctx.subcheck(item):
            reply = requests[item]()
            served = reply.status < 400 and rpc_error(reply) is None
            body = reply.json()
            batch_all_errors = isinstance(body, list) and all(isinstance(x, dict) and "error" in x
                                                              for x in body)
            ctx.expect(not served or batch_all_errors or (item == "notifications" and not reply.content),
                       f"{item}: served: HTTP {reply.status} {reply.text[:200]}", kind="accepted_invalid")
    watch.nothing_delivered(marker, "an unsupported request")


@check_a2a_strict.fault
def a2a_blocking_served(ref: WeverReference) -> None:
    """A blocking SendMessage (returnImmediately false or absent) is served as a
    non-blocking one instead of refused UnsupportedOperation."""
    @replaces(ref.wants_blocking)
    def wants_blocking(original: Any, configuration: Any) -> bool:
        return False

    @replaces(ref.a2a_check_configuration)
    def configuration(original: Any, value: Any) -> None:
        if value is None:
            value = {}
        if isinstance(value, dict) and value.get("returnImmediately", False) is False:
            value = {**value, "returnImmediately": True}
        original(value)


@check_a2a_strict.fault
def a2a_metadata_ignored(ref: WeverReference) -> None:
    """SendMessage request metadata (params.metadata, message.metadata) is dropped and
    the message served, instead of refused UnsupportedOperation."""
    @replaces(ref.a2a_send_message)
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        if isinstance(params, dict):
            params = {k: v for k, v in params.items() if k != "metadata"}
            if isinstance(params.get("message"), dict):
                params["message"] = {k: v for k, v in params["message"].items() if k != "metadata"}
        result: dict[str, Any] = original(caller, params, headers)
        return result


@requirement(id="WEVER-A2A-TASK-ID", level="MUST",
             title="A supplied taskId is refused as task continuation, for participants and strangers alike",
             source=at(f"{A2A}/strict_profile"), faults=["a2a_continuation_served"])
def check_a2a_task_id(ctx: CheckContext) -> None:
    """A supplied taskId is read with participant authorization, then continuation is
    refused: a stranger and a participant are both refused, and nothing is delivered."""
    c = WeverClient(ctx)
    task = c.new_task("offered")
    c.allow(STRANGER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    for who in (SENDER, STRANGER):
        with ctx.subcheck(f"as the {'sender' if who == SENDER else 'stranger'}"):
            params = c.a2a_message(data=data)
            params["message"]["taskId"] = task.id
            refused_rpc(ctx, c.a2a_call("SendMessage", params, who=who),
                        "SendMessage continuing an existing task")
    watch.nothing_delivered(marker, "a task continuation")


@check_a2a_task_id.fault
def a2a_continuation_served(ref: WeverReference) -> None:
    """A supplied taskId is ignored: the message becomes new work."""
    @replaces(ref.a2a_send_message)
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        if isinstance(params, dict) and isinstance(params.get("message"), dict):
            params = {**params, "message": {k: v for k, v in params["message"].items() if k != "taskId"}}
        return dict(original(caller, params, headers))


@requirement(id="WEVER-A2A-CARD", level="MUST",
             title="The agent card names the adapter's endpoint and A2A version",
             source=at(f"{A2A}/agent_card"), faults=["agent_card_missing"])
def check_a2a_card(ctx: CheckContext) -> None:
    """The agent card at protocols.a2a.agent_card names the adapter's endpoint and A2A version."""
    a2a = ctx.profile.spec["protocols"]["a2a"]
    reply = ctx.http.request("GET", a2a["agent_card"])
    card = reply.json()
    ctx.expect(reply.status == 200 and isinstance(card, dict),
               f"GET {a2a['agent_card']}: HTTP {reply.status} {reply.text[:200]}")
    text = json.dumps(card)
    ctx.expect(a2a["endpoint"] in text,
               f"the agent card does not name the endpoint {a2a['endpoint']}: {text[:300]}",
               kind="schema_mismatch")
    ctx.expect(f'"{a2a["protocol_version"]}"' in text,
               f"the agent card does not name protocol version {a2a['protocol_version']}",
               kind="schema_mismatch")


@check_a2a_card.fault
def agent_card_missing(ref: WeverReference) -> None:
    """No agent card at protocols.a2a.agent_card."""
    @replaces(ref.agent_card_endpoint)
    async def missing(original: Any, request: Request) -> Response:
        return JSONResponse({"error": "not found"}, status_code=404)


@requirement(id="WEVER-A2A-DATA-SCHEMA", level="MUST",
             title="A SendMessage breaking data_schema, the role, part count or media type is rejected "
             "before delivery",
             source=at(f"{A2A}/send_message/data_schema"),
             faults=["a2a_data_unchecked", "a2a_role_unchecked"])
def check_a2a_data_schema(ctx: CheckContext) -> None:
    """A SendMessage whose data breaks data_schema, or whose message breaks the profile's
    role, part count or media type, is rejected before any delivery."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    spec = c.a2a["send_message"]
    watch = c.watch(RECIPIENT)
    marked, marker = c.marked()

    def shaped(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        params = c.a2a_message(data=marked)
        change(params["message"])
        return params

    part = c.a2a_message(data=marked)["message"]["parts"][0]
    cases = {
        "role user (not ROLE_USER)": shaped(lambda m: m.update(role="user")),
        f"{spec['part_count'] + 1} parts": shaped(
            lambda m: m.update(parts=[copy.deepcopy(part)] * (spec["part_count"] + 1))),
        "mediaType text/plain": shaped(lambda m: m["parts"][0].update(mediaType="text/plain")),
        # beside the generated breaks, two that only the data schema forbids
        "data with an unknown property": shaped(
            lambda m: m["parts"][0]["data"].update(x_conformance_unknown=True)),
        "task data that is not an object": shaped(
            lambda m: m["parts"][0]["data"].update(task="not an object")),
    }
    for what, params in cases.items():
        with ctx.subcheck(what):
            refused_rpc(ctx, c.a2a_call("SendMessage", params), f"SendMessage with {what}")

    real = {"recipient_id": c.mailbox(RECIPIENT), "capability": c.capability}
    validator = validator_for(spec["data_schema"])

    def body(bad: InvalidInstance) -> None:
        """The data breaks one keyword; where it names a recipient or capability outside
        the break, the real ones, so it is refused for the break and nothing else."""
        data = bad.instance
        if isinstance(data, dict):
            named = {k: (real[k] if k in real and not bad.violation.pointer.startswith(f"/{k}") else v)
                     for k, v in data.items()}
            task = named.get("task")
            if isinstance(task, dict) and not bad.violation.pointer.startswith("/task"):
                named["task"] = {**task, MARKER_FIELD: marker}  # found again if it were delivered
            data = data if validator.is_valid(named) else named
        params = c.a2a_message()
        params["message"]["parts"][0]["data"] = data
        refused_rpc(ctx, c.a2a_call("SendMessage", params),
                    f"SendMessage with data breaking '{bad.violation.keyword}' at "
                                                              f"{bad.violation.pointer or '(root)'}")

    ctx.for_all(invalid_strategy(spec["data_schema"]), body)
    watch.nothing_delivered(marker, "a rejected SendMessage")


@check_a2a_data_schema.fault
def a2a_data_unchecked(ref: WeverReference) -> None:
    """The adapter trusts the data part: neither data_schema nor send_task's inputSchema
    is checked on SendMessage (HTTP send_task still validates)."""
    ref.data_validator = validator_for({})  # the empty schema: any data is valid
    in_adapter = [False]

    @replaces(ref.a2a_send_message)
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        in_adapter[0] = True
        try:
            return dict(original(caller, params, headers))
        finally:
            in_adapter[0] = False

    @replaces(ref.validate_input)
    def validate(original: Any, action: str, args: Any) -> None:
        if not in_adapter[0]:
            original(action, args)


@check_a2a_data_schema.fault
def a2a_role_unchecked(ref: WeverReference) -> None:
    """Any message role is taken for ROLE_USER."""
    @replaces(ref.a2a_check_message)
    def check(original: Any, message: dict[str, Any]) -> dict[str, Any]:
        return dict(original({**message, "role": ref.send_spec["role"]}))


@requirement(id="WEVER-A2A-OUTPUT-MODES", level="MUST",
             title="acceptedOutputModes absent, empty or containing application/json is served; other lists "
             "are rejected",
             source=at(f"{A2A}/output_negotiation"),
             faults=[noop("a2a_output_modes_unchecked", "a2a_check_output_modes",
                          "acceptedOutputModes without application/json is accepted.")])
def check_a2a_output_modes(ctx: CheckContext) -> None:
    """acceptedOutputModes may be absent, empty, or a list containing application/json;
    a list without it is rejected."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    media = c.a2a["send_message"]["part_media_type"]
    for what, modes in (("absent", None), ("empty", []), (f"[{media}]", [media]),
                        (f"[text/plain, {media}]", ["text/plain", media])):
        with ctx.subcheck(f"acceptedOutputModes {what}"):
            params = c.a2a_message()
            if modes is None:
                params["configuration"].pop("acceptedOutputModes", None)
            else:
                params["configuration"]["acceptedOutputModes"] = modes
            served_rpc(ctx, c.a2a_call("SendMessage", params), f"SendMessage with acceptedOutputModes {what}")
    with ctx.subcheck("acceptedOutputModes [text/plain]"):
        params = c.a2a_message()
        params["configuration"]["acceptedOutputModes"] = ["text/plain"]
        refused_rpc(ctx, c.a2a_call("SendMessage", params),
                    "SendMessage with acceptedOutputModes [text/plain]")


def nested(depth: int) -> dict[str, Any]:
    """An object ``depth`` containers deep."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"d": value}
    return value


@requirement(id="WEVER-A2A-LIMITS", level="MUST",
             title="The adapter's limits hold at their edge: messageId bytes, historyLength, JSON depth, "
             "request bytes",
             source=at(f"{A2A}/limits"),
             faults=[limit("a2a_message_id_unbounded", "a2a_message_id_bytes", UNBOUNDED,
                           "messageIds of any length are accepted."),
                     limit("a2a_depth_unbounded", "a2a_json_depth_count", UNBOUNDED,
                           "Requests nested deeper than json_container_depth are accepted.")])
def check_a2a_limits(ctx: CheckContext) -> None:
    """The adapter's own limits, each at its edge and one past it."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    lim = {name: int(v.value) for name, v in ctx.profile.limits.items() if name.startswith("a2a_")}
    with ctx.subcheck("messageId bytes"):
        size = lim["a2a_message_id_bytes"]
        served_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message("é" * (size // 2) + "m" * (size % 2))),
                   f"a messageId of {size} UTF-8 bytes")
        refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message("é" * (size // 2) + "mm")),
                    f"a messageId of {size + 1 + size % 2} UTF-8 bytes")
    with ctx.subcheck("historyLength"):
        top = lim["a2a_history_length_maximum_count"]
        task = served_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message()), "SendMessage")
        task_id = dig(task, "task", "id")
        ctx.expect(isinstance(task_id, str), f"SendMessage: no result.task.id in {str(task)[:200]}",
                   kind="malformed_answer")
        served_rpc(ctx, c.a2a_call("GetTask", {"id": task_id, "historyLength": top}),
                   f"GetTask historyLength {top}")
        for bad in (-1, top + 1):
            refused_rpc(ctx, c.a2a_call("GetTask", {"id": task_id, "historyLength": bad}),
                        f"GetTask historyLength {bad}")
    with ctx.subcheck("JSON depth"):
        depth = lim["a2a_json_depth_count"]
        deep = c.a2a_message(data=nested(depth + 1))
        refused_rpc(ctx, c.a2a_call("SendMessage", deep), f"a request nested over {depth} containers")
    with ctx.subcheck("request bytes"):
        size = lim["a2a_request_bytes"]
        params = c.a2a_message()
        params["padding"] = "x" * size
        refused_rpc(ctx, c.a2a_call("SendMessage", params), f"a request over {size} bytes")
