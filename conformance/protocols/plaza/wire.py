"""The A2A 1.0 wire of the personal endpoint: the required headers (A2A-Version,
A2A-Extensions, Content-Type, the bearer token) and the JSON-RPC envelope (an id on every
request, echoed in every answer); the message itself is message.py's. Each requirement is
declared on its check, with the faults that prove it can fail. What every part's checks
share of the wire is a layer below: requests built by hand in envelopes.py, the served
control of a refusal and the ErrorInfo detail in answers.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.checks import auth
from conformance.checks.expect import refused_as
from conformance.checks.jsonrpc import expect_envelope
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, fault, requirement
from conformance.kit.faults import noop, recodes, refuses, replaces
from conformance.protocols.a2a.names import EXTENSIONS_HEADER, VERSION_HEADER
from conformance.protocols.plaza.answers import served
from conformance.protocols.plaza.client import ALICE, BOB, PlazaClient, fresh_id
from conformance.protocols.plaza.envelopes import WIRE, envelope, raw, status_request
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import INVALID_PARAMETERS, INVALID_REQUEST, Principal, SiteError
from conformance.transport.binding import Reply

HEADERS = "/requiredHeaders"


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
    check_header(ctx, VERSION_HEADER, (None, "0.3"), "VERSION_NOT_SUPPORTED", strict)


fault(recodes("version_wrong_code", "check_version", lambda err: SiteError(INVALID_REQUEST, err.message),
              "A wrong A2A-Version is refused INVALID_REQUEST, not VERSION_NOT_SUPPORTED.", catch=SiteError))


@requirement(id="PLAZA-HDR-EXTENSIONS", level="MUST",
             title="A2A-Extensions without the friendship extension is refused",
             source=at(f"{HEADERS}/A2A-Extensions"),
             faults=[noop("extension_header_ignored", "check_extensions",
                          "Requests without the friendship extension in A2A-Extensions are served.")],
             code="EXTENSION_SUPPORT_REQUIRED", code_faults=["extension_wrong_code"])
def check_extensions_header(ctx: CheckContext, strict: bool = False) -> None:
    check_header(ctx, EXTENSIONS_HEADER, (None, "https://example.invalid/other-extension"),
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
    @replaces(ref.authenticate)
    def authenticate(original: Any, headers: Mapping[str, str]) -> Principal:
        try:
            return original(headers)
        except SiteError:
            visitor = next(iter(ref.s["visitors"]))
            return Principal(visitor, frozenset(ref.supported_scopes), "visitor")


@fault
def unauthenticated_as_200(ref: PlazaReference) -> None:
    """The refusal of a missing token comes with HTTP 200 instead of 401."""
    @replaces(ref.rpc_error)
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
    @replaces(ref.envelope)
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
    @replaces(ref.result_response)
    def result_response(original: Any, request_id: Any, result: Any) -> Any:
        return original(None, result)

    @replaces(ref.error_response)
    def error_response(original: Any, request_id: Any, err: SiteError) -> Any:
        return original(None, err)
