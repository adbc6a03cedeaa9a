"""The gRPC binding's own rows (section 10): the service the proto defines is served, service
parameters travel as metadata and the server reads them (an a2a-version it does not serve
is refused, a missing or malformed one is validated), and A2A errors carry a
google.rpc.ErrorInfo in status.details. The status of each error of the table over gRPC is
errors.py's (A2A-ERR-*-GRPC, one row per error, as for the other bindings); the agreement
of all bindings is agree.py's. Each row is about the gRPC interface: not applicable over
the others."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement, variant
from conformance.kit.faults import noop, replaces, returns
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import GRPC, VERSION, describe, grpc_status, info_statement
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.expectations import expect_carries, expect_info, over
from conformance.protocols.a2a.negotiation import (
    EMPTY_MEANS,
    HEADER,
    declared,
    major_minor,
    serves_profile_version,
)
from conformance.protocols.a2a.provocations import UNSUPPORTED_VERSION, a2a_errors
from conformance.protocols.a2a.reference import A2AReference


def smallest(method: str, client: A2AClient) -> dict[str, Any]:
    """A request each method of the service takes (ids no agent issued where it names a task)."""
    request = client.ctx.profile.operations[method].params_schema
    unknown = f"conformance-never-issued-{uuid.uuid4()}"
    named = set((request or {}).get("properties") or {})
    out: dict[str, Any] = {}
    if "message" in named:
        out["message"] = client.message()
    for key in ("id", "taskId"):
        if key in named:
            out[key] = unknown
    if "url" in named:  # a push notification config: its REQUIRED url
        out["url"] = "https://conformance.invalid/a2a-webhook"
    return out


@requirement(id="A2A-GRPC-SERVICE", level="MUST",
             title="Every method of the proto's A2AService is served over gRPC at the service's full name "
                   "(none answers UNIMPLEMENTED)",
             source=docs.spec("**Service:** Implement the `A2AService` gRPC service", after="### 10.1"),
             faults=["grpc_service_misnamed", "grpc_method_unimplemented"],
             applies=over(GRPC))
def check_service(ctx: CheckContext) -> None:
    """Each method of the service, with a small request: an answer of the method (a result
    or any status but UNIMPLEMENTED, which says the method is not served)."""
    client = A2AClient(ctx)
    for method in ctx.profile.operations:
        with ctx.subcheck(method):
            reply = client.call(method, smallest(method, client))
            ctx.expect(reply.ok or reply.spoke, f"{method}: no gRPC answer: {describe(reply)}",
                       kind="malformed_answer")
            ctx.expect(grpc_status(reply) != "UNIMPLEMENTED",
                       f"{method}: the A2AService method is not served: {describe(reply)}",
                       kind="wrong_error_code")


check_service.fault(returns("grpc_service_misnamed", "grpc_service_name", "a2a.v1.A2AService",
                            "The service is served under another package's name (a2a.v1.A2AService, not the "
                            "proto's lf.a2a.v1.A2AService): every call is UNIMPLEMENTED."))
check_service.fault(returns("grpc_method_unimplemented", "grpc_serves", False,
                            "ListTasks is not served over gRPC (UNIMPLEMENTED).",
                            when=lambda method: method == "ListTasks"))


def served(ctx: CheckContext, client: A2AClient, what: str, **options: Any) -> None:
    """A SendMessage carrying the version the interface serves is served (a set-up step)."""
    with ctx.setup(what):
        reply = client.send(**options)
        ctx.expect(reply.ok, f"{what}: refused: {describe(reply)}", kind="rejected_valid")


@requirement(id="A2A-GRPC-METADATA", level="MUST",
             title="The a2a-version service parameter is read from the call's metadata: the version the "
                   "interface serves is served, one it does not (9.9) gets VersionNotSupportedError",
             source=docs.spec("Implementations **MUST** extract A2A service parameters from gRPC metadata",
                              after="### 10.2"),
             faults=["grpc_version_metadata_ignored"],
             applies=over(GRPC))
def check_metadata(ctx: CheckContext) -> None:
    """Sections 10.2 and 3.6.2: a server that ignores the metadata serves 9.9 as if it were
    its own version (the kit sends the metadata key in lower case, as gRPC carries it)."""
    client = A2AClient(ctx)
    pinned = serves_profile_version(client)
    served(ctx, client, f"SendMessage with a2a-version {pinned}")
    reply = client.send(headers={HEADER: UNSUPPORTED_VERSION})
    expect_carries(ctx, reply, VERSION, f"SendMessage with a2a-version {UNSUPPORTED_VERSION} in its metadata")


check_metadata.fault(noop("grpc_version_metadata_ignored", "grpc_check_version",
                          "The gRPC server does not read a2a-version from the metadata: any version is "
                          "served."))


@requirement(id="A2A-GRPC-VERSION", level="SHOULD",
             title="The a2a-version metadata is validated: a call without it (0.3) or with a value that "
                   "names no version the interface serves is refused with VersionNotSupportedError",
             source=docs.spec("Servers **SHOULD** validate required service parameters", after="### 10.2"),
             faults=["grpc_version_missing_served"],
             applies=over(GRPC))
def check_version(ctx: CheckContext) -> None:
    """Section 3.6.2 reads a missing version as 0.3: unless the gRPC interface serves 0.3,
    the call is refused; a value that is no version at all is refused likewise."""
    client = A2AClient(ctx)
    serves_profile_version(client)
    own, _ = declared(client)
    checked = 0
    if major_minor(own) != EMPTY_MEANS:
        checked += 1
        with ctx.subcheck("no a2a-version"):
            expect_carries(ctx, client.send(headers={HEADER: None}), VERSION,
                           f"SendMessage without a2a-version (taken as {EMPTY_MEANS})")
    with ctx.subcheck("a2a-version that is no version"):
        checked += 1
        expect_carries(ctx, client.send(headers={HEADER: "one.zero"}), VERSION,
                       "SendMessage with a2a-version one.zero")
    if not checked:
        raise Untested("nothing to validate", "other")


@check_version.fault
def grpc_version_missing_served(ref: A2AReference) -> None:
    """A gRPC call without a2a-version is served as the current version (not taken as 0.3)."""
    @replaces(ref.grpc_check_version)
    def check(original: Any, request: Any) -> None:
        if request.headers.get(HEADER):
            original(request)


@requirement(id="A2A-GRPC-ERRORINFO", level="MUST",
             title="Over gRPC an A2A error's status.details hold a google.rpc.ErrorInfo with its reason and "
                   "the a2a-protocol.org domain",
             source=info_statement(GRPC),
             faults=["grpc_error_info_missing", "error_info_reason_wrong", "error_info_domain_wrong"],
             applies=over(GRPC))
def check_errorinfo(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    for what, reply, name in a2a_errors(client):
        with ctx.subcheck(what):
            expect_info(ctx, reply, name, what)


@check_errorinfo.fault
def grpc_error_info_missing(ref: A2AReference) -> None:
    """gRPC errors carry no ErrorInfo in status.details (no grpc-status-details-bin detail of it)."""
    @replaces(ref.grpc_details)
    def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
        return [d for d in original(refusal) if d.get("@type") != docs.error_info()["@type"]]



# -- what the spec allows over gRPC ----------------------------------------------------------
@variant
def grpc_url_with_scheme(ref: A2AReference) -> None:
    """The card names the gRPC interface by a URL with its scheme (http://127.0.0.1:PORT), not
    as host:port.

    allowed by: specification.md section 8.4's example card declares its gRPC interface as
    `{"url": "https://georoute-agent.example.com/a2a/grpc", "protocolBinding": "GRPC"`"""
    @replaces(ref.grpc_interface)
    def interface(original: Any) -> dict[str, Any]:
        out = dict(original())
        return {**out, "url": f"http://{out['url']}"}


@variant
def grpc_error_context(ref: A2AReference) -> None:
    """An A2A error's ErrorInfo carries context in its metadata (the task id, a timestamp),
    and the status carries a google.rpc.LocalizedMessage before it.

    allowed by: specification.md section 10.6 "`metadata`: Optional map of additional error
    context" (its example: task_id, timestamp) and "**Error Details**: Mapped to
    `status.details` (repeated google.protobuf.Any messages)\""""
    @replaces(ref.grpc_details)
    def details(original: Any, refusal: Any) -> list[dict[str, Any]]:
        out = []
        for detail in original(refusal):
            if detail.get("@type") == docs.error_info()["@type"]:
                out.append({"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US",
                            "message": refusal.message})
                detail = {**detail, "metadata": {**detail.get("metadata", {}), "task_id": "t-1",
                                                 "timestamp": "2025-11-09T10:30:00Z"}}
            out.append(detail)
        return out
