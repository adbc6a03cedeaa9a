"""The A2A errors (sections 3.3.2, 5.4, 9.5, 11.6): each error of the table provoked by the
request that causes it and answered in the form the table gives it over the run's binding
(the JSON-RPC code; the HTTP status with an ErrorInfo naming it), and what every error
carries: a fitting code and a message, details that are typed, over HTTP+JSON an ErrorInfo
with the reason and domain section 11.6 gives (a SHOULD over JSON-RPC), and for a validation
error a google.rpc.BadRequest naming the field at fault (a SHOULD). The helpers that judge an
answer as one error of the table serve capabilities.py and version.py too."""

from __future__ import annotations

import dataclasses
import functools
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from conformance.check import Blocked, CheckContext, NotApplicable, Untested
from conformance.declare import Each, fault, requirement, variant
from conformance.documents.prose import document_text
from conformance.documents.schemas import SpecError
from conformance.faults import replaces, returns
from conformance.model import ErrorCode, Profile
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import offers
from conformance.protocols.a2a.client import (
    LOOKS_KEY,
    A2AClient,
    a2a_error,
    blocked_looks,
    grpc_validation_status,
    reached,
)
from conformance.reference import Refusal
from conformance.transport.binding import Reply, first_event, is_event_stream
from conformance.transport.http import json_excerpt

JSONRPC, REST, GRPC = "jsonrpc-http", "http-routes", "grpc"  # the kinds of the profile's bindings
VERSION = "VersionNotSupportedError"
Provocations = Iterator[tuple[str, Reply]]


# -- what an answer carries ------------------------------------------------------------
def kind_of(ctx: CheckContext) -> str:
    """The kind of the run's binding, read off the profile (``ctx.binding`` is built once a
    check asks for it, and must wait for the card to say where the binding lives)."""
    return str(ctx.profile.settings["bindings"].get(ctx.run.binding or "", {}).get("kind", ""))


def binding_only(ctx: CheckContext, kind: str) -> None:
    """A statement of one binding: not applicable over the other."""
    if kind_of(ctx) != kind:
        which = {JSONRPC: "JSON-RPC (section 9)", REST: "HTTP+JSON (section 11)",
                 GRPC: "gRPC (section 10)"}[kind]
        raise NotApplicable(f"a statement of the {which} binding; this run speaks {ctx.run.binding}")


def table(ctx: CheckContext | Profile) -> dict[str, ErrorCode]:
    """The rows of section 5.4 by error name."""
    profile = ctx.profile if isinstance(ctx, CheckContext) else ctx
    return {e.name: e for e in profile.errors.values()}


def describe(reply: Reply) -> str:
    """The answer quoted, an event stream by its first event."""
    if is_event_stream(reply.http):
        first = json_excerpt(first_event(reply.http))
        return f"HTTP {reply.status}, an event stream whose first event is {first}"
    return reply.describe()


def info_in(reply: Reply) -> dict[str, Any] | None:
    """The google.rpc.ErrorInfo among an error's details (its ``@type`` as section 11.6 gives it)."""
    for detail in reply.error_data if isinstance(reply.error_data, list) else []:
        if isinstance(detail, dict) and detail.get("@type") == docs.error_info()["@type"]:
            return detail
    return None


@functools.lru_cache(maxsize=4)
def detail_type(name: str) -> str:
    """The ``@type`` of the google.rpc detail ``name`` as the specification's examples write it."""
    found = re.search(rf'"@type": "([^"]*\.{re.escape(name)})"', document_text(docs.SPEC))
    if found is None:
        raise SpecError(f"{docs.SPEC} shows no error detail of type {name}")
    return found.group(1)


@functools.lru_cache(maxsize=1)
def problem_type() -> str:
    """Section 6.4's example answers an unsupported version with a problem document of this
    ``type`` instead of google.rpc.Status: the second reading of a version refusal over HTTP."""
    text = document_text(docs.SPEC)
    section = text[text.index("### 6.4. Version Negotiation Error"):]
    found = re.search(r'"type": "([^"]+)"', section[:section.index("\n### ", 1)])
    if found is None:
        raise SpecError(f"{docs.SPEC} section 6.4 no longer shows the type of its version error")
    return found.group(1)


def version_problem(reply: Reply) -> bool:
    body = reply.http.json()
    return not reply.ok and isinstance(body, dict) and body.get("type") == problem_type()


def carries(ctx: CheckContext, reply: Reply, name: str) -> bool:
    """The answer is error ``name``: by its JSON-RPC code; over HTTP+JSON by its ErrorInfo
    reason (or the status only ``name`` has), or, for a version refusal, section 6.4's form."""
    if reply.ok:
        return False
    return a2a_error(ctx, reply) == name or (name == VERSION and version_problem(reply))


def form(ctx: CheckContext, name: str) -> str:
    """How the table says ``name`` comes over the run's binding."""
    err = table(ctx)[name]
    if kind_of(ctx) == JSONRPC:
        return f"JSON-RPC code {err.code}"
    if kind_of(ctx) == GRPC:
        return f"gRPC {docs.grpc_statuses()[name]} with an ErrorInfo whose reason is {docs.reason_of(name)}"
    return f"HTTP {err.http_status} with an ErrorInfo whose reason is {docs.reason_of(name)}"


def typed(ctx: CheckContext, reply: Reply, err: ErrorCode) -> dict[str, Any]:
    if kind_of(ctx) == JSONRPC:
        return {"expected_code": err.code, "actual_code": reply.error_code}
    if kind_of(ctx) == GRPC:
        return {"expected_code": docs.grpc_statuses()[err.name], "actual_code": grpc_status(reply)}
    return {"expected_status": err.http_status, "actual_status": reply.status}


def expect_carries(ctx: CheckContext, reply: Reply, name: str, what: str) -> None:
    """``what`` was refused with error ``name`` (however the binding lets it be told)."""
    err = table(ctx)[name]
    ctx.expect(not reply.ok, f"{what}: served ({describe(reply)}); expected {name} ({form(ctx, name)})",
               kind="accepted_invalid", **typed(ctx, reply, err))
    got = a2a_error(ctx, reply)
    ctx.expect(carries(ctx, reply, name),
               f"{what}: expected {name} ({form(ctx, name)}), got {got or 'no error of the table'}: "
               f"{describe(reply)}", kind="wrong_error_code", **typed(ctx, reply, err))


def expect_mapped(ctx: CheckContext, reply: Reply, name: str, what: str) -> None:
    """``what`` was refused with ``name`` in the form section 5.4 maps it to: its JSON-RPC
    code, or its HTTP status and (section 11.6) an ErrorInfo with its reason."""
    err = table(ctx)[name]
    statement = str(err.source)
    ctx.expect(not reply.ok, f"{what}: served ({describe(reply)}); expected {name} ({form(ctx, name)})",
               kind="accepted_invalid", statement=statement, **typed(ctx, reply, err))
    if kind_of(ctx) == JSONRPC:
        ctx.expect(reply.flagged and reply.error_code == err.code,
                   f"{what}: expected the JSON-RPC error {err.code} ({name}), got {describe(reply)}",
                   kind="wrong_error_code", statement=statement, **typed(ctx, reply, err))
        return
    if kind_of(ctx) == GRPC:
        wanted = docs.grpc_statuses()[name]
        with ctx.subcheck("gRPC status"):
            ctx.expect(grpc_status(reply) == wanted,
                       f"{what}: {name} came with gRPC status {grpc_status(reply) or 'none'}, the table says "
                       f"{wanted}: {describe(reply)}", kind="wrong_error_code", statement=statement,
                       **typed(ctx, reply, err))
        with ctx.subcheck("ErrorInfo"):
            reason = (info_in(reply) or {}).get("reason")
            ctx.expect(reason == docs.reason_of(name),
                       f"{what}: the status's details hold no ErrorInfo with reason {docs.reason_of(name)} "
                       f"(reason: {reason!r}): {describe(reply)}", kind="wrong_error_code",
                       statement=str(info_statement(GRPC)))
        return
    with ctx.subcheck("HTTP status"):
        ctx.expect(reply.status == err.http_status,
                   f"{what}: {name} came with HTTP {reply.status}, the table says {err.http_status}: "
                   f"{describe(reply)}", kind="wrong_status", statement=statement, **typed(ctx, reply, err))
    with ctx.subcheck("ErrorInfo"):
        reason = (info_in(reply) or {}).get("reason")
        ctx.expect(reason == docs.reason_of(name) or (name == VERSION and version_problem(reply)),
                   f"{what}: the error's details hold no ErrorInfo with reason {docs.reason_of(name)} "
                   f"(reason: {reason!r}): {describe(reply)}", kind="wrong_error_code",
                   statement=str(info_statement()))


def info_statement(kind: str = REST) -> Any:
    if kind == GRPC:
        return docs.spec("implementations **MUST** include a `google.rpc.ErrorInfo` message",
                         after="### 10.6")
    return docs.spec("implementations **MUST** include a `google.rpc.ErrorInfo` object", after="### 11.6")


def grpc_status(reply: Reply) -> str:
    """The name of a gRPC answer's status ("" for another binding's answer)."""
    return str(getattr(reply, "grpc_status", ""))


# -- the requests that cause each error ------------------------------------------------
def never_issued() -> str:
    return f"conformance-never-issued-{uuid.uuid4()}"


def task_from(client: A2AClient, reply: Reply, what: str) -> dict[str, Any]:
    """The Task of a SendMessage answer; a refusal is a finding (the valid request refused)."""
    client.ctx.expect(reply.ok, f"{what}: refused: {describe(reply)}", kind="rejected_valid")
    return client.task_of(reply, what)


def own_task(client: A2AClient, outcome: str = "completed") -> dict[str, Any]:
    """A task this check made, in the state ``outcome`` names (making it is a set-up step:
    a refusal blocks the requirement; another state leaves it untested), once the agent
    stopped working on it by itself (``A2AClient.settled``)."""
    with client.ctx.setup(f"a task the agent takes to {outcome}"):
        reply = client.send(client.drive(outcome))
        task = task_from(client, reply, f"SendMessage driving the agent to {outcome}")
    task = client.settled(task)
    reached(task, outcome)
    return task


def any_task(client: A2AClient) -> dict[str, Any]:
    """A task this check made, in whatever state the agent left it."""
    with client.ctx.setup("a task of the check's own"):
        return task_from(client, client.send(client.drive("completed")), "SendMessage")


def push_config(task_id: str) -> dict[str, Any]:
    """A TaskPushNotificationConfig for ``task_id`` (its REQUIRED url: a host that never resolves)."""
    return {"taskId": task_id, "url": "https://conformance.invalid/a2a-webhook"}


def task_not_found(client: A2AClient) -> Provocations:
    unknown = never_issued()
    yield "GetTask of an id never issued", client.get(unknown)
    yield "CancelTask of an id never issued", client.call("CancelTask", {"id": unknown})
    yield "SendMessage continuing a task id never issued", client.send(client.message(taskId=unknown))


def task_not_cancelable(client: A2AClient) -> Provocations:
    task = own_task(client)
    yield "CancelTask of a completed task", client.call("CancelTask", {"id": task["id"]})


def unsupported_operation(client: A2AClient) -> Provocations:
    task = own_task(client)
    follow = client.message(taskId=task["id"], contextId=task.get("contextId"))
    yield "SendMessage to a completed task", client.send(follow)


def push_not_supported(client: A2AClient) -> Provocations:
    offers.require(client, offers.PUSH, offered=False,
                   why="the error is for agents without it; part 2 tests push notifications")
    task = any_task(client)
    yield ("CreateTaskPushNotificationConfig while capabilities.pushNotifications is not true",
           client.call("CreateTaskPushNotificationConfig", push_config(task["id"])))


UNSUPPORTED_MEDIA = "application/x-conformance-unsupported"


def content_type_not_supported(client: A2AClient) -> Provocations:
    """A part whose mediaType the card's defaultInputModes do not name: untested when the
    agent takes it, or refuses it as invalid parameters (section 3.3.2 lists an unsupported
    content type among validation errors, -32602)."""
    modes = client.card.get("defaultInputModes")
    if not isinstance(modes, list) or UNSUPPORTED_MEDIA in modes or any("*" in str(m) for m in modes):
        raise Untested(f"the card's defaultInputModes {modes!r} may cover any media type", "other")
    part = {"text": "a part of a media type the agent does not name", "mediaType": UNSUPPORTED_MEDIA}
    reply = client.send(client.message(parts=[part]))
    if reply.ok:
        raise Untested(f"the agent accepted a part of media type {UNSUPPORTED_MEDIA}, which its "
                       f"defaultInputModes {modes} do not name ({reply.describe()}): nothing was refused",
                       "other")
    if invalid_params(client.ctx, reply):
        raise Untested(f"the agent refused a part of media type {UNSUPPORTED_MEDIA} as invalid parameters "
                       f"({reply.describe()}); section 3.3.2 lists an unsupported content type among "
                       "validation errors, so the ContentTypeNotSupportedError mapping is not exercised",
                       "other")
    yield f"SendMessage with a part of media type {UNSUPPORTED_MEDIA}", reply


def invalid_params(ctx: CheckContext, reply: Reply) -> bool:
    """A validation refusal: -32602, or over HTTP+JSON a 400 (over gRPC INVALID_ARGUMENT)
    naming no error of the table."""
    if kind_of(ctx) == JSONRPC:
        return bool(reply.error_code == docs.jsonrpc_errors()["InvalidParamsError"])
    reasons = {docs.reason_of(name) for name in table(ctx)}
    if kind_of(ctx) == GRPC:
        return (grpc_status(reply) == grpc_validation_status()
                and (info_in(reply) or {}).get("reason") not in reasons)
    return reply.status == 400 and (info_in(reply) or {}).get("reason") not in reasons


def extended_card_not_configured(client: A2AClient) -> Provocations:
    offers.require(client, offers.XCARD, why="the error is for an agent that declares it and has no extended "
                                             "card")
    reply = client.call("GetExtendedAgentCard", {})
    if reply.ok:
        raise NotApplicable(f"the agent serves its extended card ({reply.describe()}): it is configured")
    yield "GetExtendedAgentCard while the card declares extendedAgentCard", reply


UNSUPPORTED_VERSION = "9.9"


def version_not_supported(client: A2AClient) -> Provocations:
    yield (f"SendMessage with A2A-Version {UNSUPPORTED_VERSION}",
           client.send(client.message(), headers={"A2A-Version": UNSUPPORTED_VERSION}))


@dataclass(frozen=True)
class Provoked:
    label: str  # as the statement map names its rows
    error: str
    provoke: Callable[[A2AClient], Provocations]
    faults: tuple[str, ...] = ()  # named over every binding
    rest_info: bool = True  # the HTTP+JSON row catches a missing ErrorInfo
    mapping: bool = True  # the reference answers it: the code and status faults apply
    # what a fault first changes so the reference answers the error (a capability it declares on)
    setup: Callable[[Any], None] | None = None


def push_declared_off(ref: Any) -> None:
    """The reference declares (and serves) no push notifications: its faults of the push-off
    error start from there, the reference serving push by default."""
    ref.config = dataclasses.replace(ref.config, push_notifications=False)


PROVOKED = (
    Provoked("TASK-NOT-FOUND", "TaskNotFoundError", task_not_found),
    Provoked("TASK-NOT-CANCELABLE", "TaskNotCancelableError", task_not_cancelable),
    Provoked("PUSH-NOT-SUPPORTED", "PushNotificationNotSupportedError", push_not_supported,
             setup=push_declared_off),
    Provoked("UNSUPPORTED-OPERATION", "UnsupportedOperationError", unsupported_operation),
    # a 400 without ErrorInfo may be a validation refusal: untested, not failed
    Provoked("CONTENT-TYPE-NOT-SUPPORTED", "ContentTypeNotSupportedError", content_type_not_supported,
             rest_info=False),
    # the reference declares no extended card: only a fault that declares one reaches these rows
    Provoked("EXTENDED-CARD-NOT-CONFIGURED", "ExtendedAgentCardNotConfiguredError",
             extended_card_not_configured,
             faults=("xcard_declared_unconfigured_unsupported",), rest_info=False, mapping=False),
    Provoked("VERSION-NOT-SUPPORTED", VERSION, version_not_supported, faults=("version_error_recoded",)),
)
PROVOKERS = {p.error: p.provoke for p in PROVOKED}


def mapping_faults(profile: Profile, provoked: Provoked, kind: str) -> list[Any]:
    """The mapping faults (``mapped_faults``), each starting with the provocation's ``setup``."""
    faults = mapped_faults(profile, provoked, kind)
    if provoked.setup is None:
        return faults
    stem = docs.reason_of(provoked.error).lower()
    shared = {"rest_error_info_missing": f"{stem}_error_info_missing",
              "grpc_error_info_missing": f"{stem}_grpc_error_info_missing"}
    return [after_setup(provoked.setup, named_patch(f) if isinstance(f, str) else f, shared.get(f))
            for f in faults]


def named_patch(name: str) -> Any:
    """A fault named in a row's list: this module's, or the gRPC rows' (grpc.py)."""
    if name in globals():
        return globals()[name]
    from conformance.protocols.a2a import grpc as grpc_rows

    return getattr(grpc_rows, name)


def after_setup(setup: Callable[[Any], None], patch: Any, name: str | None) -> Any:
    """``patch`` applied after ``setup`` (under ``name``, where the bare patch is shared)."""
    def apply(ref: Any) -> None:
        setup(ref)
        patch(ref)

    apply.__name__ = apply.__qualname__ = name or patch.__name__
    apply.__doc__ = f"{(setup.__doc__ or '').splitlines()[0]} Then: {patch.__doc__}"
    apply.__module__ = patch.__module__
    return apply


def mapped_faults(profile: Profile, provoked: Provoked, kind: str) -> list[Any]:
    """The error's JSON-RPC code, or its HTTP status, answered as another's; over HTTP+JSON
    its ErrorInfo left out; and the faults of its own provocation."""
    faults: list[Any] = list(provoked.faults)
    if not provoked.mapping:
        return faults
    rows = table(profile)
    err = rows[provoked.error]
    stem = docs.reason_of(provoked.error).lower()
    if kind == JSONRPC:
        code = docs.jsonrpc_errors()["InternalError"]
        return [returns(f"{stem}_jsonrpc_code_wrong", "jsonrpc_code", code,
                        f"{provoked.error} is answered with JSON-RPC code {code}, not {err.code}.",
                        when=lambda refusal, name=provoked.error: refusal.name == name), *faults]
    if kind == GRPC:
        wanted = docs.grpc_statuses()[provoked.error]
        other = next(s for s in docs.grpc_statuses().values() if s != wanted)
        return [returns(f"{stem}_grpc_status_wrong", "grpc_status", other,
                        f"{provoked.error} is answered with gRPC status {other}, not {wanted}.",
                        when=lambda refusal, name=provoked.error: refusal.name == name),
                *(["grpc_error_info_missing"] if provoked.rest_info else []), *faults]
    status = next(e.http_status for e in rows.values() if e.http_status != err.http_status)
    info = ["rest_error_info_missing"] if provoked.rest_info else []
    return [returns(f"{stem}_http_status_wrong", "http_status", status,
                    f"{provoked.error} is answered with HTTP {status}, not {err.http_status}.",
                    when=lambda refusal, name=provoked.error: refusal.name == name), *info, *faults]


@fault
def version_error_recoded(ref: Any) -> None:
    """An unsupported A2A-Version is refused as UnsupportedOperationError."""
    @replaces(ref, "check_version")
    def check(original: Any, request: Any) -> None:
        try:
            original(request)
        except Refusal as refusal:
            if refusal.name != VERSION:
                raise
            raise Refusal("UnsupportedOperationError", refusal.message) from None


@fault
def xcard_declared_unconfigured_unsupported(ref: Any) -> None:
    """The card declares capabilities.extendedAgentCard, the agent has no extended card, and
    GetExtendedAgentCard answers UnsupportedOperationError (not ExtendedAgentCardNotConfiguredError)."""
    @replaces(ref, "card")
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = dict(original(request))
        out["capabilities"] = {**out.get("capabilities", {}), "extendedAgentCard": True}
        return out

    @replaces(ref, "op_GetExtendedAgentCard")
    def extended(original: Any, params: Any, caller: str) -> Any:
        raise Refusal("UnsupportedOperationError", "no extended agent card")


def mapped_members(profile: Profile) -> Iterator[Each]:
    rows = table(profile)
    for provoked in PROVOKED:
        err = rows[provoked.error]
        for kind, suffix, shown in ((JSONRPC, "JSONRPC", f"JSON-RPC code {err.code}"),
                                    (REST, "REST", f"HTTP {err.http_status} with an ErrorInfo whose reason "
                                                   f"is {docs.reason_of(err.name)}"),
                                    (GRPC, "GRPC", f"gRPC {docs.grpc_statuses()[err.name]} with an ErrorInfo "
                                                   f"whose reason is {docs.reason_of(err.name)}")):
            yield Each({"error": provoked.error, "kind": kind}, source=err.source,
                       faults=mapping_faults(profile, provoked, kind),
                       labels={"label": provoked.label, "binding": suffix, "form": shown})


@requirement(id="A2A-ERR-{label}-{binding}", level="MUST",
             title="{error}, provoked by the request that causes it, is {form} (section 5.4)",
             each=mapped_members)
def check_error_mapped(ctx: CheckContext, error: str, kind: str) -> None:
    """Each error of the table as its binding carries it; one sub-check per request."""
    binding_only(ctx, kind)
    client = A2AClient(ctx)
    for what, reply in PROVOKERS[error](client):
        with ctx.subcheck(what):
            expect_mapped(ctx, reply, error, what)


# -- what every error carries ----------------------------------------------------------
def invalid_message() -> dict[str, Any]:
    """A SendMessage whose message breaks the proto: parts is a repeated Part, not a string."""
    return {"messageId": f"conformance-{uuid.uuid4()}", "role": docs.role_named("user"),
            "parts": "not a list of parts"}


def validation_errors(client: A2AClient) -> Iterator[tuple[str, Reply, str]]:
    """Requests that break a method's request message, with the field at fault: only those the
    agent refused as such (``refused``). The rows about an error's form judge what the error
    is; one the agent served, or refused as an error of the table about something else (a
    number read as a task id it does not know), shows no validation error to look at: that is
    A2A-PARAMS-INVALID-*'s finding, and the row is blocked in its name."""
    asked: list[tuple[str, str, dict[str, Any], str]]
    if client.binding.kind == GRPC:  # protobuf carries no string as a repeated Part: a REQUIRED list
        # left empty instead
        asked = [("SendMessage whose message has no parts", "SendMessage",
                  {"message": {**invalid_message(), "parts": []}}, "parts")]
    else:
        asked = [("SendMessage whose message.parts is not an array", "SendMessage",
                  {"message": invalid_message()}, "parts")]
        if client.binding.kind == JSONRPC:  # over HTTP+JSON the id is a path segment: always a string
            asked.append(("GetTask whose id is a number", "GetTask", {"id": 42}, "id"))
    for what, method, params, field_name in asked:
        reply = client.call(method, params)
        if refused(client, what, reply, f"A2A-PARAMS-INVALID-{docs.reason_of(method).replace('_', '-')}",
                   a2a=False):
            yield what, reply, field_name


def refused(client: A2AClient, what: str, reply: Reply, by: str, a2a: bool = True) -> bool:
    """Whether ``reply`` is an error to judge the form of: refused, and (unless ``a2a``) with no
    error of the table below a server failure, which would say the request was read as valid (a
    failure is judged: a validation error answered as one has the wrong code). Else the refusal
    the row looks at never came: kept as a set-up step ``by`` is about (``blocked_looks`` raises
    it once the other answers were judged)."""
    if not reply.ok and (a2a or reply.status >= 500 or a2a_error(client.ctx, reply) not in table(client.ctx)):
        return True
    client.ctx.scratch.setdefault(LOOKS_KEY, []).append(Blocked(
        f"set-up failed: {what} (the subject of {by}): no error to look at: {describe(reply)}",
        kind="accepted_invalid"))
    return False


def a2a_errors(client: A2AClient) -> Iterator[tuple[str, Reply, str]]:
    """Errors of the table every agent can be brought to, with their names (one the agent
    serves instead is its mapping row's finding: ``refused``)."""
    label = {JSONRPC: "JSONRPC", REST: "REST", GRPC: "GRPC"}[client.binding.kind]
    for provoke, name in ((task_not_found, "TaskNotFoundError"),
                          (task_not_cancelable, "TaskNotCancelableError"),
                          (unsupported_operation, "UnsupportedOperationError")):
        what, reply = next(provoke(client))
        by = f"A2A-ERR-{docs.reason_of(name).replace('_', '-')}-{label}"
        if refused(client, what, reply, by):
            yield what, reply, name


@requirement(id="A2A-ERR-CODE-MESSAGE", level="MUST",
             title="Every error carries its fitting code (the table's, -32602 or a 4xx for a validation "
                   "error) and a human-readable message",
             source=docs.spec("All error responses in the A2A protocol, regardless of binding"),
             faults=["error_message_dropped", "validation_as_internal_error"])
def check_code_message(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    for what, reply, name in a2a_errors(client):
        with ctx.subcheck(what):
            expect_code(ctx, reply, name, what)
            expect_message(ctx, reply, what)
    for what, reply, _field in validation_errors(client):
        with ctx.subcheck(what):
            expect_validation(ctx, reply, what)
            expect_message(ctx, reply, what)
    blocked_looks(ctx)


def expect_code(ctx: CheckContext, reply: Reply, name: str, what: str) -> None:
    """The machine code of error ``name`` over the run's binding: its JSON-RPC code, or its
    HTTP status (as the status and as error.code, section 11.6)."""
    err = table(ctx)[name]
    ctx.expect(not reply.ok, f"{what}: served ({describe(reply)}); expected {name}", kind="accepted_invalid")
    if kind_of(ctx) == JSONRPC:
        ctx.expect(reply.error_code == err.code,
                   f"{what}: expected the JSON-RPC error {err.code} ({name}), got {describe(reply)}",
                   kind="wrong_error_code",
                   statement=str(err.source), **typed(ctx, reply, err))
        return
    if kind_of(ctx) == GRPC:
        ctx.expect(grpc_status(reply) == docs.grpc_statuses()[name],
                   f"{what}: {name} wants gRPC status {docs.grpc_statuses()[name]}, got {describe(reply)}",
                   kind="wrong_error_code", statement=str(err.source), **typed(ctx, reply, err))
        return
    ctx.expect(reply.status == err.http_status == reply.error_code,
               f"{what}: {name} wants HTTP {err.http_status}, as the status and as error.code; got "
               f"{describe(reply)}", kind="wrong_status", statement=str(err.source), **typed(ctx, reply, err))


def expect_message(ctx: CheckContext, reply: Reply, what: str) -> None:
    ctx.expect(isinstance(reply.error_code, int) and not isinstance(reply.error_code, bool),
               f"{what}: the error carries no integer code: {describe(reply)}", kind="malformed_answer")
    message = (reply.error or {}).get("message")
    ctx.expect(isinstance(message, str) and message.strip(),
               f"{what}: the error carries no human-readable message: {describe(reply)}",
               kind="malformed_answer")


def expect_validation(ctx: CheckContext, reply: Reply, what: str) -> None:
    """Section 9.5: invalid parameters are -32602; over HTTP+JSON a client error (section 3.3.2)."""
    ctx.expect(not reply.ok, f"{what}: served: {describe(reply)}", kind="accepted_invalid")
    if kind_of(ctx) == JSONRPC:
        code = docs.jsonrpc_errors()["InvalidParamsError"]
        ctx.expect(reply.error_code == code,
                   f"{what}: expected the JSON-RPC error {code} (InvalidParamsError), got {describe(reply)}",
                   kind="wrong_error_code",
                   statement=str(docs.spec("| `-32602`", after="### 9.5")), expected_code=code,
                   actual_code=reply.error_code)
    elif kind_of(ctx) == GRPC:  # a client's error: a status google.rpc.Code maps to a 4xx
        ctx.expect(400 <= reply.status < 500,
                   f"{what}: a validation error must be a client error (a status google/rpc/code.proto "
                   f"maps to a 4xx, as INVALID_ARGUMENT), got {describe(reply)}", kind="wrong_error_code")
    else:
        ctx.expect(400 <= reply.status < 500, f"{what}: a validation error must be a client error (4xx), got "
                                              f"{describe(reply)}", kind="wrong_status")


def validation_as_internal_error(ref: Any) -> None:
    """Invalid parameters are answered as an internal error (JSON-RPC -32603, HTTP 500)."""
    @replaces(ref, "jsonrpc_code")
    def code(original: Any, refusal: Any) -> int:
        if refusal.name == "InvalidParamsError":
            return int(ref.standard["InternalError"])
        return int(original(refusal))

    @replaces(ref, "http_status")
    def status(original: Any, refusal: Any) -> int:
        return 500 if refusal.name == "InvalidParamsError" else int(original(refusal))

    @replaces(ref, "grpc_status")
    def grpc(original: Any, refusal: Any) -> str:
        return "INTERNAL" if refusal.name == "InvalidParamsError" else str(original(refusal))


def error_message_dropped(ref: Any) -> None:
    """Errors carry no message (JSON-RPC error.message, HTTP+JSON error.message)."""
    @replaces(ref, "rpc_error_object")
    def rpc(original: Any, refusal: Any) -> dict[str, Any]:
        return {k: v for k, v in original(refusal).items() if k != "message"}

    @replaces(ref, "rest_error_body")
    def rest(original: Any, refusal: Any, status: int) -> dict[str, Any]:
        body = original(refusal, status)
        body["error"].pop("message", None)
        return dict(body)

    @replaces(ref, "grpc_abort")
    def grpc(original: Any, context: Any, refusal: Any) -> None:
        silent = Refusal(refusal.name, data=refusal.data, status=refusal.status)
        silent.message = ""
        original(context, silent)


check_code_message.fault(validation_as_internal_error)
check_code_message.fault(error_message_dropped)


@requirement(id="A2A-ERR-DETAILS-TYPED", level="MUST",
             title="An error's details (JSON-RPC error.data, HTTP+JSON error.details), when present, are an "
                   "array of objects each with an @type",
             source=docs.spec("Each object in the array **MUST** include a `@type` key", after="### 3.3.2"),
             faults=["error_details_untyped", "error_details_not_array"])
def check_details_typed(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    if client.binding.kind == GRPC:
        raise NotApplicable("gRPC's status.details is a repeated google.protobuf.Any (section 10.6): an "
                            "array of typed messages by the wire itself")
    answers = [(what, reply) for what, reply, _name in a2a_errors(client)]
    answers += [(what, reply) for what, reply, _field in validation_errors(client)]
    for what, reply in answers:
        with ctx.subcheck(what):
            ctx.expect(not reply.ok, f"{what}: served: {describe(reply)}", kind="accepted_invalid")
            data = reply.error_data
            if data is None:
                continue
            ctx.expect(isinstance(data, list),
                       f"{what}: the error's details are not an array: {describe(reply)}",
                       kind="malformed_answer")
            untyped = [d for d in data if not isinstance(d, dict) or not isinstance(d.get("@type"), str)]
            ctx.expect(not untyped, f"{what}: details without an @type: {json_excerpt(untyped)}",
                       kind="malformed_answer")
    blocked_looks(ctx)


@check_details_typed.fault
def error_details_untyped(ref: Any) -> None:
    """The details of an error have no @type."""
    @replaces(ref, "error_details")
    def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
        return [{k: v for k, v in d.items() if k != "@type"} for d in original(refusal)]


@check_details_typed.fault
def error_details_not_array(ref: Any) -> None:
    """An error's details are its first detail object, not an array (JSON-RPC error.data,
    HTTP+JSON error.details)."""
    @replaces(ref, "rpc_error_object")
    def rpc(original: Any, refusal: Any) -> dict[str, Any]:
        error = dict(original(refusal))
        if isinstance(error.get("data"), list) and error["data"]:
            error["data"] = error["data"][0]
        return error

    @replaces(ref, "rest_error_body")
    def rest(original: Any, refusal: Any, status: int) -> dict[str, Any]:
        body = original(refusal, status)
        if body["error"].get("details"):
            body["error"]["details"] = body["error"]["details"][0]
        return dict(body)


def expect_info(ctx: CheckContext, reply: Reply, name: str, what: str) -> None:
    """An ErrorInfo: the @type, reason and domain section 11.6 gives."""
    ctx.expect(not reply.ok, f"{what}: served: {describe(reply)}", kind="accepted_invalid")
    info = info_in(reply)
    ctx.expect(info is not None,
               f"{what}: no detail of @type {docs.error_info()['@type']}: {describe(reply)}",
               kind="malformed_answer")
    assert info is not None
    reason, domain = docs.reason_of(name), docs.error_info()["domain"]
    ctx.expect(info.get("reason") == reason and info.get("domain") == domain,
               f"{what}: the ErrorInfo says reason {info.get('reason')!r}, domain {info.get('domain')!r}; "
               f"{name} wants reason {reason!r}, domain {domain!r}", kind="wrong_error_code")


@requirement(id="A2A-ERR-ERRORINFO-REST", level="MUST",
             title="Over HTTP+JSON an A2A error's details hold a google.rpc.ErrorInfo with its reason and "
                   "the a2a-protocol.org domain",
             source=info_statement(),
             faults=["rest_error_info_missing", "error_info_reason_wrong", "error_info_domain_wrong"])
def check_errorinfo_rest(ctx: CheckContext) -> None:
    binding_only(ctx, REST)
    for what, reply, name in a2a_errors(A2AClient(ctx)):
        with ctx.subcheck(what):
            expect_info(ctx, reply, name, what)


@requirement(id="A2A-ERR-ERRORINFO-JSONRPC", level="SHOULD",
             title="Over JSON-RPC an A2A error's data holds a google.rpc.ErrorInfo with its reason and "
                   "domain",
             source=docs.spec("**SHOULD** use well-known types such as `google.rpc.ErrorInfo`",
                              after="### 9.5"),
             faults=["rpc_error_info_missing", "error_info_reason_wrong", "error_info_domain_wrong"])
def check_errorinfo_jsonrpc(ctx: CheckContext) -> None:
    """Section 9.5 asks for well-known types without saying which an A2A error uses: the
    ErrorInfo section 11.6 gives HTTP+JSON (and 9.5's own example shows) is the reading."""
    binding_only(ctx, JSONRPC)
    for what, reply, name in a2a_errors(A2AClient(ctx)):
        with ctx.subcheck(what):
            expect_info(ctx, reply, name, what)


@check_errorinfo_rest.fault
def rest_error_info_missing(ref: Any) -> None:
    """HTTP+JSON errors carry no ErrorInfo in their details."""
    @replaces(ref, "rest_error_body")
    def rest(original: Any, refusal: Any, status: int) -> dict[str, Any]:
        body = original(refusal, status)
        body["error"]["details"] = [d for d in body["error"].get("details", [])
                                    if d.get("@type") != docs.error_info()["@type"]]
        return dict(body)


@check_errorinfo_jsonrpc.fault
def rpc_error_info_missing(ref: Any) -> None:
    """JSON-RPC errors carry no data."""
    @replaces(ref, "rpc_error_object")
    def rpc(original: Any, refusal: Any) -> dict[str, Any]:
        return {k: v for k, v in original(refusal).items() if k != "data"}


def _edit_info(key: str, value: Callable[[Any], Any]) -> Callable[[Any], None]:
    def patch(ref: Any) -> None:
        @replaces(ref, "error_details")
        def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
            return [{**d, key: value(d.get(key))} if d.get("@type") == docs.error_info()["@type"] else d
                    for d in original(refusal)]
    return patch


def error_info_reason_wrong(ref: Any) -> None:
    """An ErrorInfo's reason keeps the "Error" suffix (TASK_NOT_FOUND_ERROR)."""
    _edit_info("reason", lambda reason: f"{reason}_ERROR")(ref)


def error_info_domain_wrong(ref: Any) -> None:
    """An ErrorInfo's domain is not a2a-protocol.org."""
    _edit_info("domain", lambda domain: "conformance.invalid")(ref)


for _fault in (error_info_reason_wrong, error_info_domain_wrong):
    check_errorinfo_rest.fault(_fault)
    check_errorinfo_jsonrpc.fault(_fault)


def bad_request_statement(ctx: CheckContext) -> Any:
    """The binding's own words for google.rpc.BadRequest on validation errors."""
    if kind_of(ctx) == JSONRPC:
        return docs.spec("or `google.rpc.BadRequest` to attach structured data to validation errors",
                         after="### 9.5")
    return docs.spec("such as `google.rpc.BadRequest` to attach structured data to validation errors",
                     after="### 11.6")


def texts_of(value: Any) -> Iterator[str]:
    """Every string in a JSON value (its members' names aside), within a small depth."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            yield item
        elif depth < 6 and isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif depth < 6 and isinstance(item, list):
            stack += [(v, depth + 1) for v in item]


@requirement(id="A2A-ERR-VALIDATION-DETAILS", level="SHOULD",
             title="A validation error names the field at fault: in a google.rpc.BadRequest detail, another "
                   "detail, or its message",
             source=docs.spec("Servers **SHOULD** specify which parameter(s) failed validation and why",
                              after="### 3.3.2"),
             faults=["validation_field_unnamed"])
def check_validation_details(ctx: CheckContext) -> None:
    """Section 3.3.2's SHOULD asks that the parameter at fault be named; where is left open.
    Sections 9.5 and 11.6 recommend google.rpc.BadRequest "such as" a well-known type, and
    9.5's example shows fieldViolations: one form among others, not the rule. So the field may
    be named in a BadRequest's fieldViolations, in any other detail, or in the error's message
    (a BadRequest is not asked for: a server naming the field in its message is not failed)."""
    wanted = detail_type("BadRequest")
    for what, reply, field_name in validation_errors(A2AClient(ctx)):
        with ctx.subcheck(what):
            ctx.expect(not reply.ok, f"{what}: served: {describe(reply)}", kind="accepted_invalid")
            data = reply.error_data if isinstance(reply.error_data, list) else []
            fields = [str(v.get("field")) for d in data if isinstance(d, dict) and d.get("@type") == wanted
                      for v in (d.get("fieldViolations") or []) if isinstance(v, dict)]
            said = [reply.error_message or "", *texts_of(data)]
            ctx.expect(any(re.search(rf"(^|\.){field_name}$", f) for f in fields)
                       or any(re.search(rf"(?<![A-Za-z0-9_]){field_name}(?![A-Za-z0-9_])", s) for s in said),
                       f"{what}: the error names no field {field_name!r}: neither a {wanted} detail's "
                       f"fieldViolations (fields named: {fields}), another detail, nor the message: "
                       f"{describe(reply)}", kind="expectation", statement=str(bad_request_statement(ctx)))
    blocked_looks(ctx)


@check_validation_details.fault
def validation_field_unnamed(ref: Any) -> None:
    """Validation errors name no field: no google.rpc.BadRequest, and a message that says only
    that the parameters are invalid."""
    @replaces(ref, "error_details")
    def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
        return [d for d in original(refusal) if d.get("@type") != detail_type("BadRequest")]

    @replaces(ref, "validate")
    def validate(original: Any, method: str, params: Any) -> None:
        try:
            original(method, params)
        except Refusal as refusal:
            raise Refusal(refusal.name, "Invalid parameters", status=refusal.status) from None


@variant
def validation_field_in_message(ref: Any) -> None:
    """Validation errors carry no google.rpc.BadRequest: the field at fault is named in the
    error's message only (the reference's messages start with it: "message.parts: ...").

    allowed by: specs/a2a/specification.md section 3.3.2 "Servers **SHOULD** specify which
    parameter(s) failed validation and why" (where is not said); 9.5 "Implementations **SHOULD**
    use well-known types such as `google.rpc.ErrorInfo` ... or `google.rpc.BadRequest`" (an
    example of a form, as 9.5's error example is)"""
    @replaces(ref, "error_details")
    def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
        return [d for d in original(refusal) if d.get("@type") != detail_type("BadRequest")]
