"""The A2A 1.0 wire of the personal endpoint: the required headers (A2A-Version,
A2A-Extensions, Content-Type, the bearer token), the JSON-RPC envelope and the message
format (ROLE_USER, one text or data part, 600 characters, configuration beside the
message, the answers' roles and wrapping). Each requirement is declared on its check,
with the faults that prove it can fail; the helpers every part's checks share (a raw
request, the served control of a refusal, the ErrorInfo detail) are here too."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from conformance import locate
from conformance.check import CheckContext
from conformance.checks import auth
from conformance.checks.errors import expect_error, expect_result, refused_as
from conformance.checks.jsonrpc import expect_envelope
from conformance.declare import at, chosen, fault, requirement
from conformance.faults import answer, arguments, noop, recodes, refuses, replaces
from conformance.protocols.plaza.client import ALICE, BOB, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.keeper import keeper_of
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import INVALID_PARAMETERS, INVALID_REQUEST, Principal, SiteError
from conformance.transport.binding import Reply

INVALID = "A2A_INVALID_PARAMETERS"
HEADERS = "/requiredHeaders"
WIRE = "/wireFormat"


# ----------------------------------------------------------------------------------
# requests built by hand, and what every part's checks read the same way
# ----------------------------------------------------------------------------------
def envelope(method: str, params: Any, request_id: Any = "auto") -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        body["id"] = fresh_id() if request_id == "auto" else request_id
    return body


def raw(ctx: CheckContext, body: Any, headers: dict[str, str | None] | None = None,
        who: Any = ALICE) -> Reply:
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


def served(ctx: CheckContext, reply: Reply, what: str, by: str = "PLAZA-EXAMPLE-STATUS") -> None:
    """The control of a refusal row: the same request without the break, same credential
    and binding, is served; a refusal counts only then (else the row is blocked, for the
    requirement ``by`` that is about that request)."""
    with ctx.setup(f"{what} (the same request without the break) is served", by=by):
        expect_result(ctx, reply, what)


# ----------------------------------------------------------------------------------
# headers
# ----------------------------------------------------------------------------------
def check_header(ctx: CheckContext, name: str, values: tuple[str | None, ...], error: str,
                 strict: bool) -> None:
    """A request whose ``name`` header is missing (None) or another value is refused."""
    c = PlazaClient(ctx, reset=False)
    served(ctx, raw(ctx, status_request(c)), f"the status example with {name} as the document requires")
    for value in values:
        what = f"SendMessage {'without ' + name if value is None else f'with {name}: {value}'}"
        with ctx.subcheck(what):
            refused_as(ctx, raw(ctx, status_request(c), {name: value}), error, what, strict)


@requirement(id="PLAZA-HDR-VERSION", level="MUST",
             title=lambda p: f"A2A-Version missing or other than {p.spec['requiredHeaders']['A2A-Version']} "
                             "is refused",
             source=at(f"{HEADERS}/A2A-Version"),
             faults=[noop("version_header_ignored", "check_version", "Any A2A-Version, or none, is served.")],
             code="VERSION_NOT_SUPPORTED", code_faults=["version_wrong_code"])
def check_version_header(ctx: CheckContext, strict: bool = False) -> None:
    check_header(ctx, "A2A-Version", (None, "0.3"), "VERSION_NOT_SUPPORTED", strict)


fault(recodes("version_wrong_code", "check_version", lambda err: SiteError(INVALID_REQUEST, err.message),
              "A wrong A2A-Version is refused INVALID_REQUEST, not VERSION_NOT_SUPPORTED.", catch=SiteError))


@requirement(id="PLAZA-HDR-EXTENSIONS", level="MUST",
             title="A2A-Extensions without the friendship extension is refused",
             source=at(f"{HEADERS}/A2A-Extensions"),
             faults=[noop("extension_header_ignored", "check_extensions",
                          "Requests without the friendship extension in A2A-Extensions are served.")],
             code="EXTENSION_SUPPORT_REQUIRED", code_faults=["extension_wrong_code"])
def check_extensions_header(ctx: CheckContext, strict: bool = False) -> None:
    check_header(ctx, "A2A-Extensions", (None, "https://example.invalid/other-extension"),
                 "EXTENSION_SUPPORT_REQUIRED", strict)


fault(recodes("extension_wrong_code", "check_extensions", lambda err: SiteError(INVALID_REQUEST, err.message),
              "", catch=SiteError))


@requirement(id="PLAZA-HDR-CONTENT-TYPE", level="MUST",
             title="A body not sent as application/json is refused",
             source=at(f"{HEADERS}/Content-Type"),
             faults=[noop("content_type_ignored", "check_content_type",
                          "A body sent as text/plain is served as JSON.")])
def check_content_type(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    served(ctx, raw(ctx, status_request(c)), "the status example sent as application/json")
    reply = raw(ctx, status_request(c), {"Content-Type": "text/plain"})
    ctx.expect(not reply.ok, f"a body sent as text/plain was served: {reply.describe()}",
               kind="accepted_invalid")
    ctx.expect(reply.status < 500, f"a body sent as text/plain made the server fail: {reply.describe()}",
               kind="wrong_status")


@requirement(id="PLAZA-AUTH-REQUIRED", level="MUST",
             title="A request without a valid bearer token is refused",
             source=at(f"{HEADERS}/Authorization"), code="UNAUTHENTICATED",
             code_faults=["unauthenticated_as_200"])
def check_bearer(ctx: CheckContext, strict: bool = False) -> None:
    """The status example without a token and with one the site never issued (the auth
    families); the profile's code (strict) comes with HTTP 401."""
    c = PlazaClient(ctx, reset=False)
    served(ctx, raw(ctx, status_request(c)), "the status example with alice's bearer token")
    sent: list[tuple[str, Reply]] = []

    def send(who: Any) -> Reply:
        reply = raw(ctx, status_request(c), who=who)
        sent.append(("without a bearer token" if who is None else "with a token the site never issued",
                     reply))
        return reply

    error = "UNAUTHENTICATED" if strict else None
    auth.token_required(ctx, operations={"SendMessage": send}, error=error, credential=ALICE)
    auth.token_refused(ctx, operations={"SendMessage": send}, error=error, credential=ALICE)
    for what, reply in sent if strict else ():
        with ctx.subcheck(f"SendMessage {what}: HTTP status"):
            ctx.expect(reply.status == 401,
                       f"SendMessage {what}: HTTP {reply.status}, the profile answers 401",
                       kind="wrong_status")


@check_bearer.fault
def bearer_not_enforced(ref: PlazaReference) -> None:
    """No token, or an unknown one, is served as the first visitor."""
    @replaces(ref, "authenticate")
    def authenticate(original: Any, headers: Mapping[str, str]) -> Principal:
        try:
            return original(headers)
        except SiteError:
            visitor = next(iter(ref.s["visitors"]))
            return Principal(visitor, frozenset(ref.supported_scopes), "visitor")


@fault
def unauthenticated_as_200(ref: PlazaReference) -> None:
    """The refusal of a missing token comes with HTTP 200 instead of 401."""
    @replaces(ref, "rpc_error")
    def rpc_error(original: Any, err: SiteError) -> Any:
        out = original(err)
        out.status = 200
        return out


# ----------------------------------------------------------------------------------
# the envelope
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-WIRE-REQUEST-ID", level="MUST",
             title="A request without an id is refused and not carried out",
             source=at(f"{WIRE}/requestIdRequired"), code="INVALID_REQUEST",
             code_faults=["missing_id_wrong_code"])
def check_request_id(ctx: CheckContext, strict: bool = False) -> None:
    """requestIdRequired: a request without id (a notification) is refused, not served silently."""
    c = PlazaClient(ctx)
    c.clear_pair(ALICE, BOB)  # a live site: the control below is a first contact
    before = c.snapshot() if ctx.run.control_path else None
    params = c.params({"text": "no id"}, to=c.agent_id(BOB))
    reply = raw(ctx, envelope("SendMessage", params, request_id=None))
    refused_as(ctx, reply, "INVALID_REQUEST", "SendMessage without a request id", strict)
    if before is not None:
        ctx.expect(c.snapshot() == before, "a SendMessage without a request id was carried out",
                   kind="state_changed")
    served(ctx, raw(ctx, envelope("SendMessage", params)), "the same first text with a request id",
           by="PLAZA-FRIEND-INVITE")


@check_request_id.fault
def notification_served(ref: PlazaReference) -> None:
    """A request without an id is carried out (answered with id null)."""
    @replaces(ref, "envelope")
    def envelope(original: Any, body: Any) -> Any:
        if isinstance(body, dict) and "id" not in body:
            body = {**body, "id": None}
            return None, body.get("method"), body.get("params")
        return original(body)


fault(refuses("missing_id_wrong_code", "envelope",
              lambda body: SiteError(INVALID_PARAMETERS, "an id is required"), "",
              when=lambda body: isinstance(body, dict) and "id" not in body))


@requirement(id="PLAZA-WIRE-JSONRPC", level="MUST",
             title="Answers are JSON-RPC 2.0 envelopes echoing the request id",
             source=at(f"{WIRE}/jsonrpc"))
def check_envelope(ctx: CheckContext) -> None:
    """Answers are JSON-RPC 2.0 envelopes echoing the request id, for results and errors alike."""
    c = PlazaClient(ctx, reset=False)
    for what, body in (("the status example", status_request(c)),
                       ("GetTask of an unknown task", envelope("GetTask", {"id": fresh_id()}))):
        with ctx.subcheck(what):
            body["id"] = f"conformance-{fresh_id()[:8]}"
            expect_envelope(ctx, raw(ctx, body), what, request_id=body["id"])


@check_envelope.fault
def id_not_echoed(ref: PlazaReference) -> None:
    """Answers carry id null instead of the request's id."""
    @replaces(ref, "result_response")
    def result_response(original: Any, request_id: Any, result: Any) -> Any:
        return original(None, result)

    @replaces(ref, "error_response")
    def error_response(original: Any, request_id: Any, err: SiteError) -> Any:
        return original(None, err)


# ----------------------------------------------------------------------------------
# the message format
# ----------------------------------------------------------------------------------
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
    @replaces(ref, "validate_params")
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

    @replaces(ref, "rpc_send_message")
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

    @replaces(ref, "rpc_send_message")
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
    @replaces(ref, "validate_params")
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
            if reply is None:
                continue  # still waiting until bob wrote: the configuration took no effect
            ctx.expect(not reply.ok,
                       f"a text with {what} (returnImmediately: true) was answered as a send that returns at "
                       f"once: {reply.describe()}; the document says configuration goes in "
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
    @replaces(ref, "return_immediately")
    def immediately(original: Any, call: Any) -> bool:
        meta = (call.params.get("message") or {}).get("metadata") or {}
        return bool(original(call) or (meta.get("configuration") or {}).get("returnImmediately") is True)


@check_configuration_elsewhere.fault
def configuration_at_root_honoured(ref: PlazaReference) -> None:
    """A configuration at the JSON-RPC root is taken as params.configuration."""
    @replaces(ref, "envelope")
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


def wrapped(request_id: Any, result: Any) -> bool:
    """A result the profile wraps: {message} or {task}."""
    return isinstance(result, dict) and len(result) == 1 and ("message" in result or "task" in result)


def unwrapped(result: dict[str, Any]) -> Any:
    return next(iter(result.values()))


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


__all__ = ["INVALID", "detail_type", "envelope", "error_info", "raw", "served", "status_request",
           "walk_values"]
