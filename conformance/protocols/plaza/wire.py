"""The A2A 1.0 wire of the personal endpoint: required headers, the JSON-RPC envelope,
the message format (ROLE_USER, one text or data part, 600 characters, configuration
beside the message), parameter errors as `parameterValidation` describes them, the
methods, the agent card and the capabilities the card declares false."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import Any

from conformance import locate
from conformance.check import CheckContext
from conformance.checks.errors import expect_error, expect_mapping, expect_refused, expect_result, refused_as
from conformance.checks.inputs import invalid_inputs_rejected, valid_inputs_accepted
from conformance.checks.jsonrpc import expect_envelope
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance, invalid_strategy
from conformance.model import Operation, Requirement
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.keeper import keeper_of
from conformance.table import Table
from conformance.transport.binding import RawToken, Reply

INVALID = "A2A_INVALID_PARAMETERS"
MARKER = "conformance-marker-7f3a"  # a string no error message may quote back


# ----------------------------------------------------------------------------------
# requests built by hand
# ----------------------------------------------------------------------------------
def envelope(method: str, params: Any, request_id: Any = "auto") -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        body["id"] = fresh_id() if request_id == "auto" else request_id
    return body


def raw(ctx: CheckContext, body: Any, headers: dict[str, str | None] | None = None, who: Any = ALICE) -> Reply:
    """A request sent as its text (watched on a live site, keeper.py)."""
    text = body if isinstance(body, str) else json.dumps(body)
    keeper = keeper_of(ctx)
    if keeper is not None and isinstance(body, dict):
        keeper.before(str(body.get("method")), body.get("params"), who)
    reply = ctx.binding.send_raw(text, headers=headers, caller=who)
    if keeper is not None:
        keeper.after_raw(text, who, reply)
    return reply


def status_request(c: PlazaClient) -> dict[str, Any]:
    """The document's status example with a fresh messageId: the harmless request."""
    body = c.example("status")
    body["params"]["message"]["messageId"] = fresh_id()
    return body


def walk_values(answer: Any) -> list[Any]:
    """Every value of an answer (conformance/locate.py's bounded walk)."""
    return [f.value for f in locate.walk(answer)]


def detail_type(ctx: CheckContext) -> str:
    """The type of the error detail the document names (parameterValidation.detailType)."""
    return str(ctx.profile.spec["parameterValidation"]["detailType"])


def error_info(reply: Reply, detail_type: str) -> dict[str, Any] | None:
    """The google.rpc.ErrorInfo of an error, by content: the object in error.data (a list
    of details, a details list, the detail itself, at any depth) that carries the
    document's detailType (parameterValidation.detailType) as a value."""
    return locate.object_holding(reply.error_data, detail_type)


# ----------------------------------------------------------------------------------
# headers
# ----------------------------------------------------------------------------------
def served(ctx: CheckContext, reply: Reply, what: str, by: str = "PLAZA-EXAMPLE-STATUS") -> None:
    """The control of a refusal row: the same request without the break, same credential
    and binding, is served; a refusal counts only then (else the row is blocked, for the
    requirement ``by`` that is about that request)."""
    with ctx.setup(f"{what} (the same request without the break) is served", by=by):
        expect_result(ctx, reply, what)


def check_header(name: str, values: tuple[str | None, ...], error: str, ctx: CheckContext, strict: bool = False) -> None:
    """A request whose ``name`` header is missing (None) or another value is refused."""
    c = PlazaClient(ctx, reset=False)
    served(ctx, raw(ctx, status_request(c)), f"the status example with {name} as the document requires")
    for value in values:
        what = f"SendMessage {'without ' + name if value is None else f'with {name}: {value}'}"
        with ctx.subcheck(what):
            refused_as(ctx, raw(ctx, status_request(c), {name: value}), error, what, strict)


def check_content_type(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    served(ctx, raw(ctx, status_request(c)), "the status example sent as application/json")
    reply = raw(ctx, status_request(c), {"Content-Type": "text/plain"})
    ctx.expect(not reply.ok, f"a body sent as text/plain was served: {reply.describe()}", kind="accepted_invalid")
    ctx.expect(reply.status < 500, f"a body sent as text/plain made the server fail: {reply.describe()}", kind="wrong_status")


def check_bearer(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx, reset=False)
    served(ctx, raw(ctx, status_request(c)), "the status example with alice's bearer token")
    for what, who in (("without a bearer token", None), ("with a token the site never issued", RawToken("plaza-" + fresh_id()))):
        with ctx.subcheck(what):
            reply = raw(ctx, status_request(c), who=who)
            refused_as(ctx, reply, "UNAUTHENTICATED", f"SendMessage {what}", strict)
            if strict:
                ctx.expect(reply.status == 401, f"SendMessage {what}: HTTP {reply.status}, the profile answers 401", kind="wrong_status")


# ----------------------------------------------------------------------------------
# the envelope and the message format
# ----------------------------------------------------------------------------------
def check_request_id(ctx: CheckContext, strict: bool = False) -> None:
    """requestIdRequired: a request without id (a notification) is refused, not served silently."""
    c = PlazaClient(ctx)
    c.clear_pair(ALICE, BOB)  # a live site: the control below is a first contact
    before = c.snapshot() if ctx.run.control_path else None
    params = c.params({"text": "no id"}, to=c.agent_id(BOB))
    reply = raw(ctx, envelope("SendMessage", params, request_id=None))
    refused_as(ctx, reply, "INVALID_REQUEST", "SendMessage without a request id", strict)
    if before is not None:
        ctx.expect(c.snapshot() == before, "a SendMessage without a request id was carried out", kind="state_changed")
    served(ctx, raw(ctx, envelope("SendMessage", params)), "the same first text with a request id", by="PLAZA-FRIEND-INVITE")


def check_envelope(ctx: CheckContext) -> None:
    """Answers are JSON-RPC 2.0 envelopes echoing the request id, for results and errors alike."""
    c = PlazaClient(ctx, reset=False)
    for what, body in (("the status example", status_request(c)), ("GetTask of an unknown task", envelope("GetTask", {"id": fresh_id()}))):
        with ctx.subcheck(what):
            body["id"] = f"conformance-{fresh_id()[:8]}"
            expect_envelope(ctx, raw(ctx, body), what, request_id=body["id"])


def bad_message(c: PlazaClient, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    params = c.params({"text": "conformance"}, context=fresh_id())
    change(params)
    return params


def refused_invalid(ctx: CheckContext, c: PlazaClient, cases: dict[str, Callable[[dict[str, Any]], None]]) -> None:
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


def check_legacy_forms(ctx: CheckContext) -> None:
    """v0.3's lowercase role and part.kind are rejected: no alias conversion."""
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {
        "role: user": set_at(("message", "role"), "user"),
        "a part with kind: text": set_at(("message", "parts", 0, "kind"), "text"),
    })


def check_role(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {"role: ROLE_AGENT": set_at(("message", "role"), "ROLE_AGENT"),
                             "no role": lambda p: p["message"].pop("role")})


def check_one_part(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {
        "no part": set_at(("message", "parts"), []),
        "two text parts": set_at(("message", "parts"), [{"text": "one"}, {"text": "two"}]),
    })


def check_part_content(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {
        "a file part": set_at(("message", "parts"), [{"url": "https://example.invalid/a.txt", "mediaType": "text/plain"}]),
        "a part with both text and data": set_at(("message", "parts"), [{"text": "x", "data": {"operation": "status"}}]),
    })


def check_text_part(ctx: CheckContext) -> None:
    """A2A text parts need ``text``: the native transports' ``content`` is no alias."""
    c = PlazaClient(ctx, reset=False)
    refused_invalid(ctx, c, {"content instead of text": set_at(("message", "parts"), [{"content": "hello"}]),
                             "an empty text": set_at(("message", "parts"), [{"text": ""}])})


def check_text_maximum(ctx: CheckContext) -> None:
    """A text of the maximum is sent; one character more is an invalid parameter."""
    c = PlazaClient(ctx)
    limit = ctx.limit("text_characters_count")
    connection = c.befriend(ALICE, BOB)
    with ctx.subcheck(f"a text of {limit} characters"):
        c.task_of(c.text(ALICE, "x" * limit, context=connection), f"a text of {limit} characters")
    with ctx.subcheck(f"a text of {limit + 1} characters"):
        expect_error(ctx, c.text(ALICE, "x" * (limit + 1), context=connection), INVALID, f"a text of {limit + 1} characters")


def check_configuration_location(ctx: CheckContext) -> None:
    """configuration belongs beside message, never inside it."""
    c = PlazaClient(ctx, reset=False)

    def inside(params: dict[str, Any]) -> None:
        params["message"]["configuration"] = params.pop("configuration")
    refused_invalid(ctx, c, {"configuration inside message": inside})


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
    served(ctx, c.text(ALICE, "configured beside the message", context=connection), "a text with the configuration beside message",
           by="PLAZA-FRIEND-MESSAGE")
    in_metadata = c.params({"text": "configured in metadata"}, context=connection, configuration=None,
                           metadata={"configuration": immediate})
    at_root = envelope("SendMessage", c.params({"text": "configured at the root"}, context=connection, configuration=None))
    at_root["configuration"] = immediate
    deadline = float(ctx.profile.limits["deadline_s"].value)
    sends: list[tuple[str, Callable[[], Reply]]] = [
        ("configuration in message.metadata", lambda: c.send(in_metadata, timeout=deadline + 10)),
        ("configuration at the JSON-RPC root", lambda: raw(ctx, at_root))]
    for what, send in sends:
        with ctx.subcheck(what):
            reply = send() if ctx.run.control_path else answered_before_peer(c, connection, send, what)
            if reply is None:
                continue  # still waiting until bob wrote: the configuration took no effect
            ctx.expect(not reply.ok, f"a text with {what} (returnImmediately: true) was answered as a send that returns at once: "
                       f"{reply.describe()}; the document says configuration goes in params.configuration, never there")


PATIENCE_S = 1.0  # how long a blocking send must stay unanswered before its peer writes (a live site)


def answered_before_peer(c: PlazaClient, connection: str, send: Callable[[], Reply], what: str) -> Reply | None:
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


def check_answer_roles(ctx: CheckContext) -> None:
    """Every message the endpoint writes is ROLE_AGENT: command answers and task status messages."""
    c = PlazaClient(ctx)
    message = c.message_of(c.command("status", {}), "the status command")
    ctx.expect(message.get("role") == "ROLE_AGENT", f"the answer to status has role {message.get('role')!r}, the document says ROLE_AGENT")
    task, _ = c.invite()
    status_message = dig(task, "status", "message")
    if isinstance(status_message, dict):
        ctx.expect(status_message.get("role") == "ROLE_AGENT",
                   f"the task's status message has role {status_message.get('role')!r}, the document says ROLE_AGENT")


def check_answer_shape(ctx: CheckContext) -> None:
    """The profile's wrapping: a command answers {message}, a text {task}."""
    c = PlazaClient(ctx)
    result = expect_result(ctx, c.command("status", {}), "the status command")
    ctx.expect(isinstance(result, dict) and isinstance(result.get("message"), dict),
               f"the status command answered {json.dumps(result)[:200]}, the profile answers {{message: ...}}", kind="schema_mismatch")
    c.clear_pair(ALICE, BOB)  # a live site: no open connection left between the two
    result = expect_result(ctx, c.text(ALICE, "hello", to=c.agent_id(BOB)), "a first text")
    ctx.expect(isinstance(result, dict) and isinstance(result.get("task"), dict),
               f"a first text answered {json.dumps(result)[:200]}, the profile answers {{task: ...}}", kind="schema_mismatch")


# ----------------------------------------------------------------------------------
# methods, the card, capabilities
# ----------------------------------------------------------------------------------
def check_methods(ctx: CheckContext) -> None:
    """Each of the four methods is served."""
    c = PlazaClient(ctx)
    task, _ = c.invite()
    calls = {"SendMessage": lambda: c.command("status", {}), "GetTask": lambda: c.get_task(task["id"]),
             "ListTasks": lambda: c.rpc("ListTasks", {}), "CancelTask": lambda: c.rpc("CancelTask", {"id": task["id"]})}
    for method in ctx.profile.spec["methods"]:
        with ctx.subcheck(method):
            expect_result(ctx, calls[method](), method)


def check_unknown_method(ctx: CheckContext) -> None:
    """A method outside the list is JSON-RPC's method-not-found."""
    c = PlazaClient(ctx, reset=False)
    for method in ("message/send", "GetConversation"):
        with ctx.subcheck(method):
            expect_error(ctx, c.rpc(method, {}), "METHOD_NOT_FOUND", f"the method {method}")


def card_path(ctx: CheckContext) -> str:
    from urllib.parse import urlparse
    return urlparse(ctx.profile.spec["agentCard"]).path


def check_card(ctx: CheckContext) -> None:
    """The card is published, says A2A 1.0, the friendship extension and the capabilities as the document."""
    spec = ctx.profile.spec
    reply = ctx.http.request("GET", card_path(ctx))
    card = expect_mapping(ctx, reply.json() if reply.status == 200 else None, f"GET {card_path(ctx)} (HTTP {reply.status})")
    # A2A's names, wherever the card puts them (a card may carry a wrapper or members of its own)
    versions = {f.value.get("protocolVersion") for f in locate.walk(card) if isinstance(f.value, dict)}
    ctx.expect(spec["protocolVersion"] in versions, f"the card names protocol versions {sorted(map(str, versions - {None}))}, "
               f"the document says {spec['protocolVersion']}")
    found = next((f.value["capabilities"] for f in locate.walk(card) if isinstance(f.value, dict) and "capabilities" in f.value), None)
    capabilities = expect_mapping(ctx, found, "the card's capabilities (looked for A2A's capabilities anywhere in the card)")
    for name, value in spec["optionalCapabilities"].items():
        ctx.expect(bool(capabilities.get(name, False)) == value,
                   f"the card declares capabilities.{name} = {capabilities.get(name)!r}, the document says {value}")
    uris = [dig(e, "uri") for e in capabilities.get("extensions") or [] if isinstance(e, dict)]
    ext = spec["requiredHeaders"]["A2A-Extensions"]
    ctx.expect(ext in uris, f"the card's extensions {uris} do not name the friendship extension {ext}")


def check_streaming(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx, reset=False)
    served(ctx, c.send(status_request(c)["params"]), "the status example's params by SendMessage")
    for method, params in (("SendStreamingMessage", status_request(c)["params"]), ("SubscribeToTask", {"id": fresh_id()})):
        with ctx.subcheck(method):
            refused_as(ctx, c.rpc(method, params), "UNSUPPORTED_OPERATION", f"{method} (capabilities.streaming is false)", strict)


def check_push(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx)
    with ctx.subcheck("SendMessage with a push notification config"):
        c.clear_pair(ALICE, BOB)  # a first contact: refused for the push config, not for an open connection
        params = c.params({"text": "conformance"}, to=c.agent_id(BOB))
        params["configuration"]["taskPushNotificationConfig"] = {"url": "https://127.0.0.1:9/hook", "token": "x"}
        refused_as(ctx, c.send(params), "PUSH_NOTIFICATION_NOT_SUPPORTED", "a push notification config (pushNotifications is false)", strict)
        plain = copy.deepcopy(params)
        del plain["configuration"]["taskPushNotificationConfig"]
        plain["message"]["messageId"] = fresh_id()
        served(ctx, c.send(plain), "the same first text without the push notification config", by="PLAZA-FRIEND-INVITE")
    with ctx.subcheck("CreateTaskPushNotificationConfig"):
        refused_as(ctx, c.rpc("CreateTaskPushNotificationConfig", {"taskId": fresh_id(), "url": "https://127.0.0.1:9/hook"}),
                   "PUSH_NOTIFICATION_NOT_SUPPORTED", "CreateTaskPushNotificationConfig", strict)


def check_extended_card(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx, reset=False)
    refused_as(ctx, c.rpc("GetExtendedAgentCard", {}), "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
               "GetExtendedAgentCard (extendedAgentCard is false)", strict)


# ----------------------------------------------------------------------------------
# generated parameters and their errors
# ----------------------------------------------------------------------------------
def text_operation(op: Operation) -> Operation:
    """SendMessage with text parts only: data parts are generated per command (PLAZA-CMD-*),
    since the whole union is far too slow to generate at once."""
    schema = copy.deepcopy(op.params_schema)
    items = schema["properties"]["message"]["properties"]["parts"]["items"]
    schema["properties"]["message"]["properties"]["parts"]["items"] = items["anyOf"][0]
    return Operation(op.name, schema, None, op.source)


def with_target(params: Any) -> Any:
    """A generated text goes somewhere: a contextId where it names none (a text with no
    target is refused by the document's textTarget, not by the schema)."""
    if isinstance(params, dict) and isinstance(params.get("message"), dict):
        params["message"].setdefault("contextId", fresh_id())
    return params


def in_connection(connection: Callable[[], str], params: Any, broken_at: str | None = None) -> Any:
    """A generated text sent where it can be served: in a real connection of alice's
    (contextId), without a taskId of no task or a push config (refused for what they
    are), returning at once; what the break (``broken_at``, a pointer) is about stays."""
    if not isinstance(params, dict) or not isinstance(params.get("message"), dict):
        return params
    params = copy.deepcopy(params)
    message = params["message"]

    def free(pointer: str) -> bool:
        return broken_at is None or not (broken_at == pointer or broken_at.startswith(pointer + "/") or pointer.startswith(broken_at + "/"))

    if free("/message/contextId"):
        message["contextId"] = connection()
    if free("/message/taskId"):
        message.pop("taskId", None)
    if free("/message/metadata"):
        message.pop("metadata", None)
    config = params.get("configuration")
    if config is None and free("/configuration"):
        config = params["configuration"] = {}
    if isinstance(config, dict):
        if free("/configuration/taskPushNotificationConfig"):
            config.pop("taskPushNotificationConfig", None)
        if free("/configuration/returnImmediately"):
            config["returnImmediately"] = True
    return params


def short_waits(ctx: CheckContext) -> None:
    """With control, a served text whose break is its returnImmediately waits a short
    deadline, not the document's 20 seconds."""
    if ctx.run.control_path:
        ctx.control("set_deadline", seconds=0.2)


def check_send_valid(ctx: CheckContext) -> None:
    c = PlazaClient(ctx)  # a reset site: alice's connection with bob is made afresh
    connection = functools.cache(lambda: c.befriend(ALICE, BOB))
    valid_inputs_accepted(ctx, text_operation(ctx.profile.operations["SendMessage"]), c.send, (INVALID,),
                          prepare=lambda p: in_connection(connection, p), catalogued=False)


def check_send_invalid(ctx: CheckContext) -> None:
    c = PlazaClient(ctx)
    short_waits(ctx)
    connection = functools.cache(lambda: c.befriend(ALICE, BOB))
    invalid_inputs_rejected(ctx, text_operation(ctx.profile.operations["SendMessage"]), c.send, INVALID,
                            prepare=lambda bad: in_connection(connection, bad.instance,
                                                              None if bad.instance is bad.base else bad.violation.pointer))


def check_get_task_valid(ctx: CheckContext) -> None:
    """Generated GetTask params naming alice's own task (a random id names none: not found)."""
    c = PlazaClient(ctx)
    task = functools.cache(lambda: str(c.say(ALICE, c.befriend(ALICE, BOB), "a task to read")["id"]))

    def own(params: Any) -> Any:
        return {**params, "id": task()} if isinstance(params, dict) else params
    valid_inputs_accepted(ctx, ctx.profile.operations["GetTask"], lambda p: c.rpc("GetTask", p), (INVALID,), prepare=own,
                          catalogued=False)


def check_get_task_invalid(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    invalid_inputs_rejected(ctx, ctx.profile.operations["GetTask"], lambda p: c.rpc("GetTask", p), INVALID)


def marked(bad: InvalidInstance, schema: dict[str, Any]) -> Any:
    """An invalid SendMessage whose text carries a marker no error may quote; unmarked
    where the marker would mend the break (an empty text broke minLength)."""
    params = copy.deepcopy(bad.instance)
    parts = dig(params, "message", "parts")
    if isinstance(parts, list) and parts and isinstance(parts[0], dict) and isinstance(parts[0].get("text"), str):
        parts[0]["text"] = (MARKER + parts[0]["text"])[: max(len(parts[0]["text"]), len(MARKER))]
    return bad.instance if validator_for(schema).is_valid(params) else params


def issues_of(ctx: CheckContext, info: dict[str, Any]) -> list[Any]:
    raw_issues = dig(info, "metadata", "validationIssues")
    try:
        issues = json.loads(raw_issues) if isinstance(raw_issues, str) else None
    except ValueError:
        issues = None
    ctx.expect(isinstance(issues, list), f"metadata.validationIssues is {json.dumps(raw_issues)[:200]}, "
               "the document says a JSON-encoded list", kind="schema_mismatch")
    return issues if isinstance(issues, list) else []


def invalid_answers(ctx: CheckContext, judge: Callable[[Reply, Any, InvalidInstance], None]) -> None:
    """Generated invalid SendMessage params (text parts), each refused as -32602 and
    handed with what was sent to ``judge``."""
    c = PlazaClient(ctx, reset=False)
    op = text_operation(ctx.profile.operations["SendMessage"])

    def body(bad: InvalidInstance) -> None:
        sent = marked(bad, op.params_schema)
        reply = c.send(sent)
        expect_error(ctx, reply, INVALID, f"SendMessage breaking '{bad.violation.keyword}' at {bad.violation.pointer}")
        judge(reply, sent, bad)

    ctx.for_all(invalid_strategy(op.params_schema), body)


def check_error_shape(ctx: CheckContext) -> None:
    """-32602 carries a google.rpc.ErrorInfo with reason A2A_INVALID_PARAMETERS."""
    reason = ctx.profile.spec["parameterValidation"]["reason"]

    def judge(reply: Reply, sent: Any, bad: InvalidInstance) -> None:
        info = error_info(reply, detail_type(ctx))
        ctx.expect(info is not None, f"looked for an object carrying {detail_type(ctx)} anywhere in error.data and found none: "
                   f"{reply.describe()}", kind="schema_mismatch")
        ctx.expect(locate.holds(info, reason), f"the ErrorInfo detail {json.dumps(info)[:200]} does not carry the document's reason "
                   f"{reason}", kind="schema_mismatch")
    invalid_answers(ctx, judge)


def check_error_metadata(ctx: CheckContext) -> None:
    """Every metadata value is a string; validationIssues a JSON list of field paths and codes."""
    def judge(reply: Reply, sent: Any, bad: InvalidInstance) -> None:
        info = expect_mapping(ctx, error_info(reply, detail_type(ctx)), "the ErrorInfo detail (the object carrying the detailType)")
        metadata = expect_mapping(ctx, info.get("metadata"), "ErrorInfo.metadata")
        odd = {k: v for k, v in metadata.items() if not isinstance(v, str)}
        ctx.expect(not odd, f"ErrorInfo.metadata values must all be strings: {json.dumps(odd)[:200]}", kind="schema_mismatch")
        for issue in issues_of(ctx, info):
            ctx.expect(isinstance(issue, str) or (isinstance(issue, dict) and any(isinstance(v, str) for v in issue.values())),
                       f"a validation issue is {json.dumps(issue)[:120]}, not a field path or code", kind="schema_mismatch")
    invalid_answers(ctx, judge)


def check_error_bound(ctx: CheckContext) -> None:
    """The profile's bound on validationIssues, with a message breaking many fields at once."""
    c = PlazaClient(ctx, reset=False)
    bound = ctx.limit("validation_issues_count")
    params = c.params({"text": ""}, context="", message_id="", role="user", referenceTaskIds=[""] * 30, extensions=[""] * 30)
    info = expect_mapping(ctx, error_info(c.send(params), detail_type(ctx)), "the ErrorInfo detail of a message with many broken fields")
    issues = issues_of(ctx, info)
    ctx.expect(0 < len(issues) <= bound, f"validationIssues lists {len(issues)} issues, the profile bounds it to {bound}",
               kind="schema_mismatch")


def leaks(text: str, sent: Any, bad: InvalidInstance, token: str) -> list[str]:
    """What an error quotes back: the marker, a credential, or an unknown key's name."""
    found = [w for w in (MARKER, token) if w and w in text]
    if bad.violation.keyword == "additionalProperties":
        key = bad.violation.pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        found += [key] if len(key) > 3 and json.dumps(key)[1:-1] in text else []
    return found


def check_no_echo(ctx: CheckContext) -> None:
    """validationIssues (and the whole error) never quotes submitted text, credentials or
    unknown key names."""
    token = ctx.token(ALICE) or ""

    def error_text(reply: Reply) -> str:
        return json.dumps(reply.envelope.get("error") if isinstance(reply.envelope, dict) else reply.envelope)

    def judge(reply: Reply, sent: Any, bad: InvalidInstance) -> None:
        text = error_text(reply)
        found = leaks(text, sent, bad, token)
        ctx.expect(not found, f"the invalid-parameters error quotes what was sent: {found} in {text[:300]}", kind="schema_mismatch")
    with ctx.subcheck("an unknown key named by the caller"):
        c = PlazaClient(ctx, reset=False)
        key = f"x_{MARKER.replace('-', '_')}"
        reply = c.send(c.params({"text": "hello", key: "value"}, context=fresh_id()))
        expect_error(ctx, reply, INVALID, "a text part with an unknown key")
        ctx.expect(key not in error_text(reply), f"the invalid-parameters error names the unknown key {key}: {error_text(reply)[:300]}",
                   kind="schema_mismatch")
    invalid_answers(ctx, judge)


def check_presend(ctx: CheckContext) -> None:
    """A SendMessage refused before it runs says messageSent and sendHandleConsumedByThisRequest
    false, consumes nothing (the messageId serves a valid message afterwards) and stores nothing."""
    c = PlazaClient(ctx)
    connection = c.befriend(ALICE, BOB)
    message_id = fresh_id()
    bad = c.params({"text": "x" * (ctx.limit("text_characters_count") + 1)}, context=connection, message_id=message_id)
    reply = c.send(bad)
    expect_error(ctx, reply, INVALID, "a text over the maximum")
    metadata = dig(error_info(reply, detail_type(ctx)), "metadata") or {}
    for flag in ("messageSent", "sendHandleConsumedByThisRequest"):
        ctx.expect(metadata.get(flag) == "false", f"a pre-send parameter failure carries {flag} = {metadata.get(flag)!r}, "
                   "the document says false", kind="schema_mismatch")
    with ctx.subcheck("the messageId afterwards"):
        c.task_of(c.text(ALICE, "the valid message", context=connection, message_id=message_id),
                  "a valid text under the messageId of a refused one")
    with ctx.subcheck("a refusal that is no parameter failure"):  # "Only a SendMessage parameter failure ... carries"
        other = c.text(CAROL, "not a participant", context=connection)
        expect_refused(ctx, other, "carol's text in alice and bob's connection")
        flags = {f: any(isinstance(v, dict) and v.get(f) == "false" for v in walk_values(other.error_data))
                 for f in ("messageSent", "sendHandleConsumedByThisRequest")}
        ctx.expect(not any(flags.values()), f"a refusal for the caller's participation, no parameter failure, carries "
                   f"{[f for f, hit in flags.items() if hit]} false: {other.describe()}; only a pre-send parameter failure does",
                   kind="schema_mismatch")


def check_no_effect(ctx: CheckContext) -> None:
    """Invalid parameters change nothing: no message, no invitation."""
    c = PlazaClient(ctx)
    before = c.snapshot()
    for what, params in (("a 601-character invitation", c.params({"text": "x" * 601}, to=c.agent_id(BOB))),
                         ("an invitation with role user", c.params({"text": "hi"}, to=c.agent_id(BOB), role="user"))):
        with ctx.subcheck(what):
            expect_error(ctx, c.send(params), INVALID, what)
    ctx.expect(c.snapshot() == before, "a SendMessage refused for its parameters changed the site's state", kind="state_changed")


# ----------------------------------------------------------------------------------
# rows
# ----------------------------------------------------------------------------------
def rows(t: Table) -> list[Requirement]:
    hdr = t.profile.spec["requiredHeaders"]
    return [
        *t.pair("PLAZA-HDR-VERSION", f"A2A-Version missing or other than {hdr['A2A-Version']} is refused", t.at("/requiredHeaders/A2A-Version"),
                partial(check_header, "A2A-Version", (None, "0.3"), "VERSION_NOT_SUPPORTED"), ("version_header_ignored",), "VERSION_NOT_SUPPORTED",
                ("version_wrong_code",)),
        *t.pair("PLAZA-HDR-EXTENSIONS", "A2A-Extensions without the friendship extension is refused", t.at("/requiredHeaders/A2A-Extensions"),
                partial(check_header, "A2A-Extensions", (None, "https://example.invalid/other-extension"), "EXTENSION_SUPPORT_REQUIRED"), ("extension_header_ignored",),
                "EXTENSION_SUPPORT_REQUIRED", ("extension_wrong_code",)),
        t.req("PLAZA-HDR-CONTENT-TYPE", "MUST", "A body not sent as application/json is refused", t.at("/requiredHeaders/Content-Type"),
              check_content_type, ("content_type_ignored",)),
        *t.pair("PLAZA-AUTH-REQUIRED", "A request without a valid bearer token is refused", t.at("/requiredHeaders/Authorization"),
                check_bearer, ("bearer_not_enforced",), "UNAUTHENTICATED", ("unauthenticated_as_200",)),
        *t.pair("PLAZA-WIRE-REQUEST-ID", "A request without an id is refused and not carried out", t.at("/wireFormat/requestIdRequired"),
                check_request_id, ("notification_served",), "INVALID_REQUEST", ("missing_id_wrong_code",)),
        t.req("PLAZA-WIRE-JSONRPC", "MUST", "Answers are JSON-RPC 2.0 envelopes echoing the request id", t.at("/wireFormat/jsonrpc"),
              check_envelope, ("id_not_echoed",)),
        t.req("PLAZA-WIRE-LEGACY", "MUST", "v0.3 forms (role: user, part.kind) are rejected as invalid parameters",
              t.at("/wireFormat/versionDifference"), check_legacy_forms, ("legacy_role_accepted", "legacy_kind_accepted")),
        t.req("PLAZA-WIRE-ROLE", "MUST", "A request's message has role ROLE_USER", t.at("/wireFormat/requestRole"), check_role,
              ("agent_role_accepted",)),
        t.req("PLAZA-WIRE-ONE-PART", "MUST", "A message has exactly one part", t.at("/wireFormat/partsCount"), check_one_part,
              ("two_parts_accepted",)),
        t.req("PLAZA-WIRE-PART-CONTENT", "MUST", "A part is text or data, nothing else", t.at("/wireFormat/partContentOneOf"),
              check_part_content, ("file_part_accepted",)),
        t.req("PLAZA-WIRE-TEXT-PART", "MUST", "A2A text parts need text; content is no alias", t.at("/wireFormat/textFieldsByTransport"),
              check_text_part, ("content_alias_accepted",)),
        t.req("PLAZA-WIRE-TEXT-MAX", "MUST", "A text holds at most textMaximumCharacters characters", t.at("/wireFormat/textMaximumCharacters"),
              check_text_maximum, ("text_over_maximum_accepted", "text_maximum_refused")),
        t.req("PLAZA-WIRE-CONFIG-LOCATION", "MUST", "configuration goes beside message, never inside it",
              t.at("/wireFormat/configurationLocation"), check_configuration_location, ("configuration_in_message_accepted",)),
        t.req("PLAZA-WIRE-CONFIG-ELSEWHERE", "SHOULD", "configuration in message.metadata or at the JSON-RPC root takes no effect",
              t.at("/wireFormat/configurationLocation"), check_configuration_elsewhere,
              ("configuration_in_metadata_honoured", "configuration_at_root_honoured")),
        t.req("PLAZA-WIRE-RESPONSE-ROLE", "MUST", "Messages the endpoint writes have role ROLE_AGENT", t.at("/wireFormat/responseRole"),
              check_answer_roles, ("answer_role_user",)),
        t.req("PLAZA-WIRE-ANSWER-SHAPE", "SHOULD", "A command answers {message}, a text {task}", t.chosen("docs/agent-plaza.md#results"),
              check_answer_shape, ("answer_unwrapped",)),
        t.req("PLAZA-METHODS", "MUST", "SendMessage, GetTask, ListTasks and CancelTask are served", t.at("/methods"), check_methods,
              ("list_tasks_missing",)),
        t.req("PLAZA-METHODS-UNKNOWN", "MUST", "Another method is JSON-RPC's method not found (-32601)", t.at("/methods"),
              check_unknown_method, ("unknown_method_wrong_code",)),
        t.req("PLAZA-CARD", "MUST", "The agent card says A2A 1.0, the friendship extension and the optional capabilities", t.at("/agentCard"),
              check_card, ("card_streaming_true", "card_without_extension")),
        *t.pair("PLAZA-CAPS-STREAMING", "Streaming methods are refused (streaming: false)", t.at("/optionalCapabilities/streaming"),
                check_streaming, ("streaming_served",), "UNSUPPORTED_OPERATION", ("streaming_wrong_code",)),
        *t.pair("PLAZA-CAPS-PUSH", "Push notification configs are refused (pushNotifications: false)",
                t.at("/optionalCapabilities/pushNotifications"), check_push, ("push_config_ignored",), "PUSH_NOTIFICATION_NOT_SUPPORTED",
                ("push_wrong_code",)),
        *t.pair("PLAZA-CAPS-EXTENDED-CARD", "GetExtendedAgentCard is refused (extendedAgentCard: false)",
                t.at("/optionalCapabilities/extendedAgentCard"), check_extended_card, ("extended_card_served",),
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED", ("extended_card_wrong_code",)),
        t.req("PLAZA-SEND-PARAMS-VALID", "MUST", "Schema-valid SendMessage params (text parts) are not refused as invalid",
              t.at("/schemas/sendMessageParams"), check_send_valid, ("reference_task_ids_refused",)),
        t.req("PLAZA-SEND-PARAMS-INVALID", "MUST", "SendMessage params breaking the schema are invalid parameters (-32602)",
              t.at("/parameterValidation/code"), check_send_invalid, ("send_params_unvalidated",)),
        t.req("PLAZA-GETTASK-PARAMS-VALID", "MUST", "Schema-valid GetTask params are not refused as invalid", t.at("/schemas/getTaskParams"),
              check_get_task_valid, ("get_task_history_length_refused",)),
        t.req("PLAZA-GETTASK-PARAMS-INVALID", "MUST", "GetTask params breaking the schema are invalid parameters (-32602)",
              t.at("/schemas/getTaskParams"), check_get_task_invalid, ("get_task_unvalidated",)),
        t.req("PLAZA-PARAM-ERROR-SHAPE", "MUST", "-32602 carries a google.rpc.ErrorInfo with reason A2A_INVALID_PARAMETERS",
              t.at("/parameterValidation/detailType"), check_error_shape, ("error_info_missing", "error_reason_wrong")),
        t.req("PLAZA-PARAM-ERROR-METADATA", "MUST", "ErrorInfo metadata values are strings; validationIssues a JSON list",
              t.at("/parameterValidation/metadataFormat"), check_error_metadata, ("metadata_not_strings", "issues_not_json")),
        t.req("PLAZA-PARAM-ERROR-BOUND", "SHOULD", "validationIssues lists at most the profile's bound",
              t.chosen("profiles/agent-plaza.yaml#/limits/validation_issues_count"), check_error_bound, ("issues_unbounded",)),
        t.req("PLAZA-PARAM-ERROR-NO-ECHO", "MUST", "Parameter errors never quote submitted text, credentials or unknown key names",
              t.at("/parameterValidation/metadataFormat"), check_no_echo, ("issues_echo_input", "issues_echo_key")),
        t.req("PLAZA-PARAM-ERROR-PRESEND", "MUST", "A pre-send failure says messageSent and sendHandleConsumedByThisRequest false and consumes nothing",
              t.at("/parameterValidation/preSendFailure"), check_presend, ("presend_flags_missing", "invalid_send_consumes_id",
                                                                    "presend_flags_on_every_refusal")),
        t.req("PLAZA-PARAM-ERROR-NO-EFFECT", "MUST", "A parameter error stores nothing and makes no invitation",
              t.at("/parameterValidation/recovery"), check_no_effect, ("invalid_text_stored",)),
    ]


__all__ = ["INVALID", "detail_type", "error_info", "raw", "rows", "status_request"]
