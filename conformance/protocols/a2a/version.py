"""Versioning (sections 3.2.6, 3.6, 14.2.1): the A2A-Version service parameter travels as an
HTTP header (sections 9.2, 11.2) and a request naming the version the interface declares is
served; one naming a version it does not serve gets VersionNotSupportedError; a patch number
changes nothing; an empty version means 0.3 (so a 1.0-only interface refuses it); and the
version as a request parameter instead of a header (section 3.6.1 lets clients send it so:
the servers' side is not stated, hence a SHOULD)."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext, NotApplicable, Untested
from conformance.kit.declare import requirement, variant
from conformance.kit.faults import noop, replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import JSONRPC, VERSION, carries, describe, kind_of
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.driving import any_task, task_from
from conformance.protocols.a2a.expectations import expect_carries
from conformance.protocols.a2a.negotiation import EMPTY_MEANS, HEADER, declared, serves_profile_version
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply


def versionless(client: A2AClient) -> A2AClient:
    """A client of the same binding whose calls carry no A2A-Version header."""
    other = A2AClient(client.ctx)
    binding = client.ctx.binding_named(client.binding.name)
    binding.headers = {k: v for k, v in binding.headers.items() if k.lower() != HEADER.lower()}
    other.binding = binding
    return other


def expect_served(ctx: CheckContext, reply: Reply, what: str) -> None:
    ctx.expect(reply.ok, f"{what}: refused: {describe(reply)}", kind="rejected_valid")


@requirement(id="A2A-VERSION-HEADER", level="MUST",
             title="A request whose A2A-Version header names the version the interface declares is served "
                   "(the header's name in any case)",
             source=docs.spec("Agents MUST process requests using the semantics of the requested",
                              after="### 3.6.2"),
             faults=["version_header_ignored"])
def check_header(ctx: CheckContext) -> None:
    """Sections 9.2 and 11.2: service parameters are HTTP headers, their names case-insensitive."""
    client = A2AClient(ctx)
    pinned = serves_profile_version(client)
    sent = client.send(client.drive("completed"), headers={HEADER: pinned})
    with ctx.subcheck(f"{HEADER}: {pinned}"):
        expect_served(ctx, sent, f"SendMessage with {HEADER}: {pinned}")
    if not sent.ok:
        return
    task = task_from(client, sent, "SendMessage")
    with ctx.subcheck(f"{HEADER.lower()}: {pinned}"):
        reply = versionless(client).call("GetTask", {"id": task["id"]}, headers={HEADER.lower(): pinned})
        expect_served(ctx, reply, f"GetTask with the header named {HEADER.lower()}: {pinned}")


@check_header.fault
def version_header_ignored(ref: A2AReference) -> None:
    """The A2A-Version header is not read (only the request parameter is): every request counts as 0.3."""
    @replaces(ref.requested_version)
    def requested(original: Any, request: Any) -> str:
        return str(request.query_params.get(HEADER) or "").strip()


@requirement(id="A2A-VERSION-UNSUPPORTED", level="MUST",
             title="A request naming a version the interface does not serve (0.5, 9.9) gets "
                   "VersionNotSupportedError",
             source=docs.spec("If the version is not supported by the interface, agents MUST return",
                              after="### 3.6.2"),
             faults=["version_unchecked", "version_error_recoded"])
def check_unsupported(ctx: CheckContext) -> None:
    """Over HTTP+JSON the error is told by its ErrorInfo (section 11.6), or by the problem
    document section 6.4's example shows for exactly this error: both readings pass."""
    client = A2AClient(ctx)
    _, all_declared = declared(client)
    for version in ("0.5", "9.9"):
        if version in all_declared:
            continue
        with ctx.subcheck(f"{HEADER}: {version}"):
            reply = client.send(client.message(), headers={HEADER: version})
            expect_carries(ctx, reply, VERSION, f"SendMessage with {HEADER}: {version}")


check_unsupported.fault(noop("version_unchecked", "check_version",
                             "The A2A-Version a request names is not checked: every version is served."))


@requirement(id="A2A-VERSION-MINOR-UNSUPPORTED", level="MUST",
             title="A request naming a minor version the interface does not declare (1.1, 1.9) gets "
                   "VersionNotSupportedError, not the 1.0 semantics",
             source=docs.spec("Agents MUST process requests using the semantics of the requested",
                              after="### 3.6.2"),
             faults=["version_major_only", "version_unchecked"])
def check_minor_unsupported(ctx: CheckContext) -> None:
    """A version is its Major.Minor (section 3.6: "identified using the `Major.Minor` elements");
    3.6.2 serves "the semantics of the requested `A2A-Version` (matching `Major.Minor`)" and
    refuses a version the interface does not support. An interface declaring 1.0 cannot serve
    1.1's semantics: serving it as 1.0 (comparing the major alone) breaks both sentences.
    Versions any interface of the card declares are left out (the agent may serve them)."""
    client = A2AClient(ctx)
    pinned = serves_profile_version(client)
    _, all_declared = declared(client)
    major = pinned.split(".")[0]
    asked = [v for v in (f"{major}.1", f"{major}.9") if v not in all_declared]
    if not asked:
        raise Untested(f"the card declares {', '.join(all_declared)}: no minor version of {major} is left "
                       "that it does not declare", "other")
    for version in asked:
        with ctx.subcheck(f"{HEADER}: {version}"):
            reply = client.send(client.message(), headers={HEADER: version})
            expect_carries(ctx, reply, VERSION,
                           f"SendMessage with {HEADER}: {version} (the interface declares {pinned})")


@check_minor_unsupported.fault
def version_major_only(ref: A2AReference) -> None:
    """Only the major version is compared: A2A-Version 1.1 or 1.9 is served as 1.0 (what the
    official Python SDK does)."""
    @replaces(ref.check_version)
    def check(original: Any, request: Any) -> None:
        asked = ref.requested_version(request) or EMPTY_MEANS
        if asked.split(".")[0] != ref.config.version.split(".")[0]:
            raise Refusal(VERSION, f"A2A-Version {asked} is not supported")


@requirement(id="A2A-VERSION-PATCH-IGNORED", level="MUST",
             title="A patch number in A2A-Version (1.0.1) changes nothing: the request is served",
             source=docs.spec("MUST not be considered when clients and servers negotiate protocol versions",
                              after="### 3.6 Versioning"),
             faults=["version_patch_considered"])
def check_patch_ignored(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    with_patch = serves_profile_version(client) + ".1"
    reply = client.send(client.drive("completed"), headers={HEADER: with_patch})
    expect_served(ctx, reply, f"SendMessage with {HEADER}: {with_patch}")


@check_patch_ignored.fault
def version_patch_considered(ref: A2AReference) -> None:
    """The whole A2A-Version is compared, patch number included: 1.0.1 is refused."""
    @replaces(ref.check_version)
    def check(original: Any, request: Any) -> None:
        asked = ref.requested_version(request) or EMPTY_MEANS
        if asked != ref.config.version:
            raise Refusal(VERSION, f"A2A-Version {asked} is not supported")


def header_reading() -> str:
    """The other reading of a version sent as a request parameter, cited: service parameters
    travel as headers (sections 9.2 and 11.2), so a request without the header is 0.3 (3.6.2)."""
    cited = (docs.spec("**MUST** be transmitted using standard HTTP request headers, as JSON-RPC",
                       after="### 9.2"),
             docs.spec("**MUST** be transmitted using standard HTTP request headers.", after="### 11.2"),
             docs.spec("Agents MUST interpret empty value as 0.3 version", after="### 3.6.2"))
    return "; ".join(map(str, cited))


QUERY_PARAM = docs.spec("Clients MAY provide the `A2A-Version` as a request parameter", after="### 3.6.1")


@requirement(id="A2A-VERSION-QUERY-PARAM", level="SHOULD",
             title="A request naming its version as the request parameter ?A2A-Version=1.0, without the "
                   "header, is served (or, on the headers-only reading, refused as version 0.3)",
             source=QUERY_PARAM, faults=["version_query_invalid"])
def check_query_param(ctx: CheckContext) -> None:
    """Two readings: section 3.6.1 lets a client send the version as a request parameter, so a
    server reads it (served); sections 9.2 and 11.2 say service parameters MUST travel as
    headers and 3.6.2 that no version means 0.3, so a server refuses the request with
    VersionNotSupportedError. The first passes; the second is untested, citing both (a server
    following it is never failed); anything else follows neither (a server failure, another
    refusal) and fails. Over JSON-RPC the parameter goes on the endpoint's URL (a POST has no
    other query)."""
    client = A2AClient(ctx)
    if client.binding.kind == "grpc":
        raise NotApplicable("a request parameter is an HTTP URL's: over gRPC service parameters are metadata "
                            "only (section 10.2)")
    pinned = serves_profile_version(client)
    task = any_task(client)
    bare = versionless(client)
    if kind_of(ctx) == JSONRPC:
        bare.binding.path = f"{bare.binding.path}?{HEADER}={pinned}"
        reply = bare.call("GetTask", {"id": task["id"]})
    else:
        reply = bare.call("GetTask", {"id": task["id"], HEADER: pinned})
    what = f"GetTask with ?{HEADER}={pinned} and no header"
    if carries(ctx, reply, VERSION):
        raise Untested(f"{what}: refused as version {EMPTY_MEANS} ({describe(reply)}): the server reads "
                       f"service parameters from headers only ({header_reading()}), which the document "
                       f"allows beside {QUERY_PARAM} (a client MAY send the parameter): not judged",
                       "other")
    expect_served(ctx, reply, f"{what} (neither read as the version, nor refused as no version)")


@check_query_param.fault
def version_query_invalid(ref: A2AReference) -> None:
    """A request carrying the A2A-Version request parameter is refused as invalid params (neither
    reading: the parameter is not read as the version, and the request is not taken as 0.3)."""
    @replaces(ref.check_version)
    def check(original: Any, request: Any) -> None:
        if HEADER in request.query_params and not request.headers.get(HEADER):
            raise Refusal("InvalidParamsError", f"unknown request parameter {HEADER}")
        original(request)


@variant
def version_query_ignored(ref: A2AReference) -> None:
    """The A2A-Version request parameter is not read (only the header is): a request naming its
    version so is taken as 0.3 and refused with VersionNotSupportedError (A2A-VERSION-QUERY-PARAM
    is then untested, citing both readings).

    allowed by: specs/a2a/specification.md section 9.2 "A2A service parameters ... **MUST** be
    transmitted using standard HTTP request headers", section 11.2 (the same for HTTP+JSON), and
    3.6.2 "Agents MUST interpret empty value as 0.3 version"; section 3.6.1 only lets clients
    send the parameter"""
    @replaces(ref.requested_version)
    def requested(original: Any, request: Any) -> str:
        return str(request.headers.get(HEADER) or "").strip()


@requirement(id="A2A-VERSION-EMPTY-IS-0-3", level="MUST",
             title="A request without A2A-Version (or with an empty one) is taken as 0.3: an interface that "
                   "declares only 1.0 answers VersionNotSupportedError",
             source=docs.spec("Agents MUST interpret empty value as 0.3 version", after="### 3.6.2"),
             faults=["version_empty_is_current"])
def check_empty_is_0_3(ctx: CheckContext) -> None:
    """Untested where the card declares a 0.3 interface (it may serve 0.3 at this URL too)."""
    client = A2AClient(ctx)
    serves_profile_version(client)
    _, all_declared = declared(client)
    if EMPTY_MEANS in all_declared:
        raise Untested(f"the card declares a {EMPTY_MEANS} interface: a request without {HEADER} may be "
                       f"served as {EMPTY_MEANS}", "other")
    bare = versionless(client)
    for what, headers in ((f"no {HEADER} header", {}), (f"{HEADER} empty", {HEADER: ""})):
        with ctx.subcheck(what):
            reply = bare.send(bare.message(), headers=headers)
            expect_carries(ctx, reply, VERSION, f"SendMessage with {what}")


@check_empty_is_0_3.fault
def version_empty_is_current(ref: A2AReference) -> None:
    """A request without A2A-Version is served as the current version (not as 0.3)."""
    @replaces(ref.requested_version)
    def requested(original: Any, request: Any) -> str:
        return str(original(request) or ref.config.version)
