"""The A2A errors (sections 3.3.2, 5.4, 9.5, 11.6): each error of the table provoked by the
request that causes it and answered in the form the table gives it over the run's binding
(the JSON-RPC code; the HTTP status with an ErrorInfo naming it), and what every error
carries: a fitting code and a message, details that are typed, over HTTP+JSON an ErrorInfo
with the reason and domain section 11.6 gives (a SHOULD over JSON-RPC), and for a validation
error a google.rpc.BadRequest naming the field at fault (a SHOULD). What the rows read an
error by lives in answers.py and expectations.py, the requests that provoke each error in
provocations.py."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from conformance.kit.check import CheckContext, NotApplicable
from conformance.kit.declare import REGISTRY, Each, fault, requirement, variant
from conformance.kit.faults import replaces, returns
from conformance.kit.reference import Refusal
from conformance.model import Profile
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import (
    GRPC,
    JSONRPC,
    REST,
    VERSION,
    describe,
    detail_type,
    grpc_status,
    info_statement,
    kind_of,
    table,
    typed,
)
from conformance.protocols.a2a.client import A2AClient, blocked_looks
from conformance.protocols.a2a.expectations import expect_info, expect_mapped, over
from conformance.protocols.a2a.provocations import (
    Provocations,
    a2a_errors,
    content_type_not_supported,
    declares_extended_card,
    extended_card_not_configured,
    push_declared_off,
    push_not_supported,
    task_not_cancelable,
    task_not_found,
    unsupported_operation,
    validation_errors,
    version_not_supported,
    without_push,
)
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt


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
    # when its rows apply besides their binding: the card's declaration the error is about
    applies: tuple[Callable[[CheckContext], None], ...] = ()


PROVOKED = (
    Provoked("TASK-NOT-FOUND", "TaskNotFoundError", task_not_found),
    Provoked("TASK-NOT-CANCELABLE", "TaskNotCancelableError", task_not_cancelable),
    Provoked("PUSH-NOT-SUPPORTED", "PushNotificationNotSupportedError", push_not_supported,
             setup=push_declared_off, applies=(without_push,)),
    Provoked("UNSUPPORTED-OPERATION", "UnsupportedOperationError", unsupported_operation),
    # a 400 without ErrorInfo may be a validation refusal: untested, not failed
    Provoked("CONTENT-TYPE-NOT-SUPPORTED", "ContentTypeNotSupportedError", content_type_not_supported,
             rest_info=False),
    # the reference declares no extended card: only a fault that declares one reaches these rows
    Provoked("EXTENDED-CARD-NOT-CONFIGURED", "ExtendedAgentCardNotConfiguredError",
             extended_card_not_configured,
             faults=("xcard_declared_unconfigured_unsupported",), rest_info=False, mapping=False,
             applies=(declares_extended_card,)),
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
    """A fault named in a row's list: this module's, or one another module of the profile
    registered (the gRPC rows' of grpc.py), read from the registry: rows are built once every
    module of the profile is imported, and a requirement module imports no other."""
    if name in globals():
        return globals()[name]
    for module, faults in REGISTRY.faults.items():
        if module.startswith(f"{__package__}.") and name in faults:
            return faults[name]
    raise ValueError(f"no module of {__package__} registers the fault {name!r}")


def after_setup(setup: Callable[[Any], None], patch: Any, name: str | None) -> Any:
    """``patch`` applied after ``setup`` (under ``name``, where the bare patch is shared)."""
    def apply(ref: A2AReference) -> None:
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
def version_error_recoded(ref: A2AReference) -> None:
    """An unsupported A2A-Version is refused as UnsupportedOperationError."""
    @replaces(ref.check_version)
    def check(original: Any, request: Any) -> None:
        try:
            original(request)
        except Refusal as refusal:
            if refusal.name != VERSION:
                raise
            raise Refusal("UnsupportedOperationError", refusal.message) from None


@fault
def xcard_declared_unconfigured_unsupported(ref: A2AReference) -> None:
    """The card declares capabilities.extendedAgentCard, the agent has no extended card, and
    GetExtendedAgentCard answers UnsupportedOperationError (not ExtendedAgentCardNotConfiguredError)."""
    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = dict(original(request))
        out["capabilities"] = {**out.get("capabilities", {}), "extendedAgentCard": True}
        return out

    @replaces(ref.op_GetExtendedAgentCard)
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
            yield Each({"error": provoked.error}, source=err.source,
                       faults=mapping_faults(profile, provoked, kind),
                       labels={"label": provoked.label, "binding": suffix, "form": shown},
                       applies=(over(kind), *provoked.applies))


@requirement(id="A2A-ERR-{label}-{binding}", level="MUST",
             title="{error}, provoked by the request that causes it, is {form} (section 5.4)",
             each=mapped_members)
def check_error_mapped(ctx: CheckContext, error: str) -> None:
    """Each error of the table as its binding carries it (the member applies over that
    binding only, and where the card declares what the error is about: ``Provoked.applies``);
    one sub-check per request."""
    client = A2AClient(ctx)
    for what, reply in PROVOKERS[error](client):
        with ctx.subcheck(what):
            expect_mapped(ctx, reply, error, what)


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


def validation_as_internal_error(ref: A2AReference) -> None:
    """Invalid parameters are answered as an internal error (JSON-RPC -32603, HTTP 500)."""
    @replaces(ref.jsonrpc_code)
    def code(original: Any, refusal: Any) -> int:
        if refusal.name == "InvalidParamsError":
            return int(ref.standard["InternalError"])
        return int(original(refusal))

    @replaces(ref.http_status)
    def status(original: Any, refusal: Any) -> int:
        return 500 if refusal.name == "InvalidParamsError" else int(original(refusal))

    @replaces(ref.grpc_status)
    def grpc(original: Any, refusal: Any) -> str:
        return "INTERNAL" if refusal.name == "InvalidParamsError" else str(original(refusal))


def error_message_dropped(ref: A2AReference) -> None:
    """Errors carry no message (JSON-RPC error.message, HTTP+JSON error.message)."""
    @replaces(ref.rpc_error_object)
    def rpc(original: Any, refusal: Any) -> dict[str, Any]:
        return {k: v for k, v in original(refusal).items() if k != "message"}

    @replaces(ref.rest_error_body)
    def rest(original: Any, refusal: Any, status: int) -> dict[str, Any]:
        body = original(refusal, status)
        body["error"].pop("message", None)
        return dict(body)

    @replaces(ref.grpc_abort)
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
def error_details_untyped(ref: A2AReference) -> None:
    """The details of an error have no @type."""
    @replaces(ref.error_details)
    def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
        return [{k: v for k, v in d.items() if k != "@type"} for d in original(refusal)]


@check_details_typed.fault
def error_details_not_array(ref: A2AReference) -> None:
    """An error's details are its first detail object, not an array (JSON-RPC error.data,
    HTTP+JSON error.details)."""
    @replaces(ref.rpc_error_object)
    def rpc(original: Any, refusal: Any) -> dict[str, Any]:
        error = dict(original(refusal))
        if isinstance(error.get("data"), list) and error["data"]:
            error["data"] = error["data"][0]
        return error

    @replaces(ref.rest_error_body)
    def rest(original: Any, refusal: Any, status: int) -> dict[str, Any]:
        body = original(refusal, status)
        if body["error"].get("details"):
            body["error"]["details"] = body["error"]["details"][0]
        return dict(body)


@requirement(id="A2A-ERR-ERRORINFO-REST", level="MUST",
             title="Over HTTP+JSON an A2A error's details hold a google.rpc.ErrorInfo with its reason and "
                   "the a2a-protocol.org domain",
             source=info_statement(),
             faults=["rest_error_info_missing", "error_info_reason_wrong", "error_info_domain_wrong"],
             applies=over(REST))
def check_errorinfo_rest(ctx: CheckContext) -> None:
    for what, reply, name in a2a_errors(A2AClient(ctx)):
        with ctx.subcheck(what):
            expect_info(ctx, reply, name, what)


@requirement(id="A2A-ERR-ERRORINFO-JSONRPC", level="SHOULD",
             title="Over JSON-RPC an A2A error's data holds a google.rpc.ErrorInfo with its reason and "
                   "domain",
             source=docs.spec("**SHOULD** use well-known types such as `google.rpc.ErrorInfo`",
                              after="### 9.5"),
             faults=["rpc_error_info_missing", "error_info_reason_wrong", "error_info_domain_wrong"],
             applies=over(JSONRPC))
def check_errorinfo_jsonrpc(ctx: CheckContext) -> None:
    """Section 9.5 asks for well-known types without saying which an A2A error uses: the
    ErrorInfo section 11.6 gives HTTP+JSON (and 9.5's own example shows) is the reading."""
    for what, reply, name in a2a_errors(A2AClient(ctx)):
        with ctx.subcheck(what):
            expect_info(ctx, reply, name, what)


@check_errorinfo_rest.fault
def rest_error_info_missing(ref: A2AReference) -> None:
    """HTTP+JSON errors carry no ErrorInfo in their details."""
    @replaces(ref.rest_error_body)
    def rest(original: Any, refusal: Any, status: int) -> dict[str, Any]:
        body = original(refusal, status)
        body["error"]["details"] = [d for d in body["error"].get("details", [])
                                    if d.get("@type") != docs.error_info()["@type"]]
        return dict(body)


@check_errorinfo_jsonrpc.fault
def rpc_error_info_missing(ref: A2AReference) -> None:
    """JSON-RPC errors carry no data."""
    @replaces(ref.rpc_error_object)
    def rpc(original: Any, refusal: Any) -> dict[str, Any]:
        return {k: v for k, v in original(refusal).items() if k != "data"}


def _edit_info(key: str, value: Callable[[Any], Any]) -> Callable[[Any], None]:
    def patch(ref: A2AReference) -> None:
        @replaces(ref.error_details)
        def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
            return [{**d, key: value(d.get(key))} if d.get("@type") == docs.error_info()["@type"] else d
                    for d in original(refusal)]
    return patch


def error_info_reason_wrong(ref: A2AReference) -> None:
    """An ErrorInfo's reason keeps the "Error" suffix (TASK_NOT_FOUND_ERROR)."""
    _edit_info("reason", lambda reason: f"{reason}_ERROR")(ref)


def error_info_domain_wrong(ref: A2AReference) -> None:
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
def validation_field_unnamed(ref: A2AReference) -> None:
    """Validation errors name no field: no google.rpc.BadRequest, and a message that says only
    that the parameters are invalid."""
    @replaces(ref.error_details)
    def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
        return [d for d in original(refusal) if d.get("@type") != detail_type("BadRequest")]

    @replaces(ref.validate)
    def validate(original: Any, method: str, params: Any) -> None:
        try:
            original(method, params)
        except Refusal as refusal:
            raise Refusal(refusal.name, "Invalid parameters", status=refusal.status) from None


@variant
def validation_field_in_message(ref: A2AReference) -> None:
    """Validation errors carry no google.rpc.BadRequest: the field at fault is named in the
    error's message only (the reference's messages start with it: "message.parts: ...").

    allowed by: specs/a2a/specification.md section 3.3.2 "Servers **SHOULD** specify which
    parameter(s) failed validation and why" (where is not said); 9.5 "Implementations **SHOULD**
    use well-known types such as `google.rpc.ErrorInfo` ... or `google.rpc.BadRequest`" (an
    example of a form, as 9.5's error example is)"""
    @replaces(ref.error_details)
    def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
        return [d for d in original(refusal) if d.get("@type") != detail_type("BadRequest")]
