"""The message of a SendMessage (`wireFormat`): ROLE_USER, exactly one part, text or data
and nothing else, A2A's text field (no alias), at most textMaximumCharacters characters,
no v0.3 forms, configuration beside the message and nowhere else; and the answers the
endpoint writes: ROLE_AGENT, wrapped as the profile chooses. Each requirement is declared
on its check, with the faults that prove it can fail."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from conformance.checks.expect import expect_error, expect_result
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, arguments, replaces
from conformance.protocols.plaza.answers import INVALID, served
from conformance.protocols.plaza.client import ALICE, BOB, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.envelopes import WIRE, envelope, raw
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.shared_faults import unwrapped, wrapped
from conformance.transport.binding import Reply


def bad_message(c: PlazaClient, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    params = c.params({"text": "conformance"}, context=fresh_id())
    change(params)
    return params


def refused_invalid(ctx: CheckContext, c: PlazaClient,
                    cases: dict[str, Callable[[dict[str, Any]], None]]) -> None:
    """Each changed SendMessage is an invalid-parameters error (the document's -32602)."""
    for what, change in cases.items():
        with ctx.subcheck(what):
            expect_error(ctx, c.send(bad_message(c, change)), INVALID, f"SendMessage with {what}")


def set_at(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(params: dict[str, Any]) -> None:
        target = params
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def validating_copy(ref: PlazaReference, change: Callable[[str, Any], Any]) -> None:
    """Params are validated as ``change(method, copy)`` makes them; the handler gets the original."""
    @replaces(ref.validate_params)
    def validate(original: Any, method: str, params: Any) -> dict[str, Any]:
        original(method, change(method, copy.deepcopy(params)))
        assert isinstance(params, dict)
        return params


def message_change(edit: Callable[[dict[str, Any]], None]) -> Callable[[str, Any], Any]:
    def change(method: str, params: Any) -> Any:
        message = params.get("message") if isinstance(params, dict) else None
        if method == "SendMessage" and isinstance(message, dict):
            edit(message)
        return params
    return change


def part_change(edit: Callable[[dict[str, Any]], None]) -> Callable[[str, Any], Any]:
    def each(message: dict[str, Any]) -> None:
        for part in message.get("parts") or []:
            if isinstance(part, dict):
                edit(part)
    return message_change(each)


@requirement(id="PLAZA-WIRE-LEGACY", level="MUST",
             title="v0.3 forms (role: user, part.kind) are rejected as invalid parameters",
             source=at(f"{WIRE}/versionDifference"))
def check_legacy_forms(ctx: CheckContext) -> None:
    """v0.3's lowercase role and part.kind are rejected: no alias conversion."""
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {
        "role: user": set_at(("message", "role"), "user"),
        "a part with kind: text": set_at(("message", "parts", 0, "kind"), "text"),
    })


@check_legacy_forms.fault
def legacy_role_accepted(ref: PlazaReference) -> None:
    """v0.3's lowercase role: user passes as ROLE_USER."""
    def edit(message: dict[str, Any]) -> None:
        if message.get("role") == "user":
            message["role"] = "ROLE_USER"
    validating_copy(ref, message_change(edit))


@check_legacy_forms.fault
def legacy_kind_accepted(ref: PlazaReference) -> None:
    """v0.3's part.kind is ignored."""
    validating_copy(ref, part_change(lambda part: part.pop("kind", None)))


@requirement(id="PLAZA-WIRE-ROLE", level="MUST", title="A request's message has role ROLE_USER",
             source=at(f"{WIRE}/requestRole"))
def check_role(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {"role: ROLE_AGENT": set_at(("message", "role"), "ROLE_AGENT"),
                             "no role": lambda p: p["message"].pop("role")})


@check_role.fault
def agent_role_accepted(ref: PlazaReference) -> None:
    """A request message with role ROLE_AGENT is served."""
    def edit(message: dict[str, Any]) -> None:
        if message.get("role") == "ROLE_AGENT":
            message["role"] = "ROLE_USER"
    validating_copy(ref, message_change(edit))


@requirement(id="PLAZA-WIRE-ONE-PART", level="MUST", title="A message has exactly one part",
             source=at(f"{WIRE}/partsCount"))
def check_one_part(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {
        "no part": set_at(("message", "parts"), []),
        "two text parts": set_at(("message", "parts"), [{"text": "one"}, {"text": "two"}]),
    })


@check_one_part.fault
def two_parts_accepted(ref: PlazaReference) -> None:
    """Parts after the first are ignored instead of refused."""
    def edit(message: dict[str, Any]) -> None:
        if isinstance(message.get("parts"), list) and len(message["parts"]) > 1:
            message["parts"] = message["parts"][:1]
    validating_copy(ref, message_change(edit))


@requirement(id="PLAZA-WIRE-PART-CONTENT", level="MUST", title="A part is text or data, nothing else",
             source=at(f"{WIRE}/partContentOneOf"))
def check_part_content(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {
        "a file part": set_at(("message", "parts"),
                              [{"url": "https://example.invalid/a.txt", "mediaType": "text/plain"}]),
        "a part with both text and data": set_at(("message", "parts"),
                                                 [{"text": "x", "data": {"operation": "status"}}]),
    })


@check_part_content.fault
def file_part_accepted(ref: PlazaReference) -> None:
    """A file (url) part is taken as a text naming the file."""
    def edit(message: dict[str, Any]) -> None:
        parts = message.get("parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], dict) and "url" in parts[0]:
            message["parts"] = [{"text": str(parts[0]["url"])}]
    validating_copy(ref, message_change(edit))

    @replaces(ref.rpc_send_message)
    def send(original: Any, call: Any) -> Any:
        part = call.params["message"]["parts"][0]
        if "url" in part:
            call.params["message"]["parts"] = [{"text": str(part["url"])}]
        return original(call)


@requirement(id="PLAZA-WIRE-TEXT-PART", level="MUST", title="A2A text parts need text; content is no alias",
             source=at(f"{WIRE}/textFieldsByTransport"))
def check_text_part(ctx: CheckContext) -> None:
    """A2A text parts need ``text``: the native transports' ``content`` is no alias."""
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {"content instead of text": set_at(("message", "parts"), [{"content": "hello"}]),
                             "an empty text": set_at(("message", "parts"), [{"text": ""}])})


@check_text_part.fault
def content_alias_accepted(ref: PlazaReference) -> None:
    """The native transports' content field is converted to text (automaticAliasConversion)."""
    def alias(part: dict[str, Any]) -> None:
        if "content" in part and "text" not in part:
            part["text"] = part.pop("content")
    validating_copy(ref, part_change(alias))

    @replaces(ref.rpc_send_message)
    def send(original: Any, call: Any) -> Any:
        alias(call.params["message"]["parts"][0])
        return original(call)


@requirement(id="PLAZA-WIRE-TEXT-MAX", level="MUST",
             title="A text holds at most textMaximumCharacters characters",
             source=at(f"{WIRE}/textMaximumCharacters"))
def check_text_maximum(ctx: CheckContext) -> None:
    """A text of the maximum is sent; one character more is an invalid parameter."""
    c = PlazaClient(ctx)
    limit = ctx.limit("text_characters_count")
    connection = c.befriend(ALICE, BOB)
    with ctx.subcheck(f"a text of {limit} characters"):
        c.task_of(c.text(ALICE, "x" * limit, context=connection), f"a text of {limit} characters")
    with ctx.subcheck(f"a text of {limit + 1} characters"):
        expect_error(ctx, c.text(ALICE, "x" * (limit + 1), context=connection), INVALID,
                     f"a text of {limit + 1} characters")


def text_length(ref: PlazaReference, keep: Callable[[str, int], str]) -> None:
    """Texts are validated as ``keep(text, limit)`` makes them (the handler gets the original)."""
    limit = ref.limit("text_characters_count")

    def edit(part: dict[str, Any]) -> None:
        if isinstance(part.get("text"), str):
            part["text"] = keep(part["text"], limit)
    validating_copy(ref, part_change(edit))


@check_text_maximum.fault
def text_over_maximum_accepted(ref: PlazaReference) -> None:
    """Texts over the maximum are stored (only the first characters are validated)."""
    text_length(ref, lambda text, limit: text[:limit])


@check_text_maximum.fault
def text_maximum_refused(ref: PlazaReference) -> None:
    """A text of exactly the maximum is refused (an off-by-one limit)."""
    text_length(ref, lambda text, limit: text + "x" if len(text) == limit else text)


@requirement(id="PLAZA-WIRE-CONFIG-LOCATION", level="MUST",
             title="configuration goes beside message, never inside it",
             source=at(f"{WIRE}/configurationLocation"))
def check_configuration_location(ctx: CheckContext) -> None:
    """configuration belongs beside message, never inside it."""
    c = PlazaClient(ctx, reset=False)

    def inside(params: dict[str, Any]) -> None:
        params["message"]["configuration"] = params.pop("configuration")
    refused_invalid(ctx, c, {"configuration inside message": inside})


@check_configuration_location.fault
def configuration_in_message_accepted(ref: PlazaReference) -> None:
    """configuration inside message is taken as if beside it."""
    @replaces(ref.validate_params)
    def validate(original: Any, method: str, params: Any) -> dict[str, Any]:
        message = params.get("message") if isinstance(params, dict) else None
        if method == "SendMessage" and isinstance(message, dict) and "configuration" in message:
            params = {**params, "configuration": message["configuration"],
                      "message": {k: v for k, v in message.items() if k != "configuration"}}
        result: dict[str, Any] = original(method, params)
        return result


PATIENCE_S = 1.0  # how long a blocking send must stay unanswered before its peer writes (a live site)


@requirement(id="PLAZA-WIRE-CONFIG-ELSEWHERE", level="SHOULD",
             title="configuration in message.metadata or at the JSON-RPC root takes no effect",
             source=at(f"{WIRE}/configurationLocation"))
def check_configuration_elsewhere(ctx: CheckContext) -> None:
    """configuration placed in message.metadata or at the JSON-RPC root takes no effect:
    a text whose only returnImmediately: true stands there is a blocking send, never
    answered at once, or it is refused. With control the server's deadline is made short
    and the send must end without a status; without it, the send must still be waiting
    after a while and end only once bob, its peer, has answered (no 20-second wait)."""
    c = PlazaClient(ctx)
    connection = c.befriend(ALICE, BOB)
    if ctx.run.control_path:
        ctx.control("set_deadline", seconds=0.2)
    immediate = c.configuration()
    served(ctx, c.text(ALICE, "configured beside the message", context=connection),
           "a text with the configuration beside message", by="PLAZA-FRIEND-MESSAGE")
    in_metadata = c.params({"text": "configured in metadata"}, context=connection, configuration=None,
                           metadata={"configuration": immediate})
    at_root = envelope("SendMessage",
                       c.params({"text": "configured at the root"}, context=connection, configuration=None))
    at_root["configuration"] = immediate
    deadline = float(ctx.profile.limits["deadline_s"].value)
    sends: list[tuple[str, Callable[[], Reply]]] = [
        ("configuration in message.metadata", lambda: c.send(in_metadata, timeout=deadline + 10)),
        ("configuration at the JSON-RPC root", lambda: raw(ctx, at_root))]
    for what, send in sends:
        with ctx.subcheck(what):
            reply = send() if ctx.run.control_path else answered_before_peer(c, connection, send, what)
            # None: still waiting until bob wrote, so the configuration took no effect
            ctx.expect(reply is None or not reply.ok,
                       f"a text with {what} (returnImmediately: true) was answered as a send that returns at "
                       f"once: {reply.describe() if reply else ''}; the document says configuration goes in "
                       "params.configuration, never there")


def answered_before_peer(c: PlazaClient, connection: str, send: Callable[[], Reply],
                         what: str) -> Reply | None:
    """Send alice's text in a thread: its answer when it came within PATIENCE_S (before any
    reply of bob's), or None when it was still waiting then and ended after bob wrote."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(send)
        try:
            return pending.result(timeout=PATIENCE_S)
        except FutureTimeout:
            pass
        c.say(BOB, connection, f"bob answers the text with {what}")
        pending.result()
    return None


@check_configuration_elsewhere.fault
def configuration_in_metadata_honoured(ref: PlazaReference) -> None:
    """message.metadata.configuration.returnImmediately is honoured like params.configuration's."""
    @replaces(ref.return_immediately)
    def immediately(original: Any, call: Any) -> bool:
        meta = (call.params.get("message") or {}).get("metadata") or {}
        return bool(original(call) or (meta.get("configuration") or {}).get("returnImmediately") is True)


@check_configuration_elsewhere.fault
def configuration_at_root_honoured(ref: PlazaReference) -> None:
    """A configuration at the JSON-RPC root is taken as params.configuration."""
    @replaces(ref.envelope)
    def envelope(original: Any, body: Any) -> Any:
        request_id, method, params = original(body)
        configuration = body.get("configuration")
        if isinstance(params, dict) and isinstance(configuration, dict) and "configuration" not in params:
            params = {**params, "configuration": configuration}
        return request_id, method, params


# ----------------------------------------------------------------------------------
# the answers
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-WIRE-RESPONSE-ROLE", level="MUST",
             title="Messages the endpoint writes have role ROLE_AGENT",
             source=at(f"{WIRE}/responseRole"),
             faults=[answer("answer_role_user", "command_message",
                            "Command answers are written as ROLE_USER.",
                            set={"role": "ROLE_USER"})])
def check_answer_roles(ctx: CheckContext) -> None:
    """Every message the endpoint writes is ROLE_AGENT: command answers and task status messages."""
    c = PlazaClient(ctx)
    message = c.message_of(c.command("status", {}), "the status command")
    ctx.expect(message.get("role") == "ROLE_AGENT",
               f"the answer to status has role {message.get('role')!r}, the document says ROLE_AGENT")
    task, _ = c.invite()
    status_message = dig(task, "status", "message")
    if isinstance(status_message, dict):
        ctx.expect(status_message.get("role") == "ROLE_AGENT",
                   f"the task's status message has role {status_message.get('role')!r}, "
                   "the document says ROLE_AGENT")


@requirement(id="PLAZA-WIRE-ANSWER-SHAPE", level="SHOULD",
             title="A command answers {{message}}, a text {{task}}",
             source=chosen("docs/agent-plaza.md#results"),
             faults=[arguments("answer_unwrapped", "result_response",
                               "Results are the bare Message or Task, not {message} / {task} (an A2A reading "
                               "the profile does not choose).", edit=unwrapped, when=wrapped)])
def check_answer_shape(ctx: CheckContext) -> None:
    """The profile's wrapping: a command answers {message}, a text {task}."""
    c = PlazaClient(ctx)
    result = expect_result(ctx, c.command("status", {}), "the status command")
    ctx.expect(isinstance(result, dict) and isinstance(result.get("message"), dict),
               f"the status command answered {json.dumps(result)[:200]}, "
               "the profile answers {message: ...}",
               kind="schema_mismatch")
    c.clear_pair(ALICE, BOB)  # a live site: no open connection left between the two
    result = expect_result(ctx, c.text(ALICE, "hello", to=c.agent_id(BOB)), "a first text")
    ctx.expect(isinstance(result, dict) and isinstance(result.get("task"), dict),
               f"a first text answered {json.dumps(result)[:200]}, the profile answers {{task: ...}}",
               kind="schema_mismatch")


