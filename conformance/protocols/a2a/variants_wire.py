"""Variants of the wire: behaviours the documents allow that the reference does not choose
(the verbs, error forms, tenants and capabilities of the bindings). Each patches one
reference instance like a fault; its docstring quotes the text that allows it; no MUST may
fail on one (`conformance selftest`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from starlette.responses import JSONResponse

from conformance.kit.declare import variant
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import VERSION, problem_type
from conformance.protocols.a2a.reference import A2AReference

TENANT = "conformance-tenant"


@variant(binding_kind="http-routes")
def rest_subscribe_post_only(ref: A2AReference) -> None:
    """SubscribeToTask is served only as POST /tasks/{id}:subscribe (GET has no route).

    allowed by: specification.md section 11.3.2 "`POST /tasks/{id}:subscribe` - Subscribe to task
    updates" and the table of section 5.3 (the proto's annotation says GET: both readings stand)"""
    ref.routes_of = {**ref.routes_of, "SubscribeToTask": [{**route, "verb": "post", "body": "*"}
                                                          for route in ref.routes_of["SubscribeToTask"]]}


@variant(binding_kind="http-routes")
def version_error_problem_json(ref: A2AReference) -> None:
    """An unsupported A2A-Version is refused over HTTP+JSON with the problem document of
    section 6.4 (HTTP 400, application/problem+json), not google.rpc.Status.

    allowed by: specification.md section 6.4 "Version Negotiation Error", whose response is
    "HTTP/1.1 400 Bad Request / Content-Type: application/problem+json" with a "type" naming
    version-not-supported"""
    @replaces(ref.rest_error)
    def rest_error(original: Any, refusal: Refusal) -> Any:
        if refusal.name != VERSION:
            return original(refusal)
        return JSONResponse({"type": problem_type(), "title": "Protocol Version Not Supported", "status": 400,
                             "detail": refusal.message, "supportedVersions": [ref.config.version]},
                            status_code=400, media_type="application/problem+json")


@variant
def tenant_declared(ref: A2AReference) -> None:
    """The card declares a tenant on both interfaces (every request carries it: the tenant
    field over JSON-RPC, the /{tenant}/... routes over HTTP+JSON).

    allowed by: a2a.proto AgentInterface.tenant "Optional. An opaque string used for routing
    requests to a specific agent or tenant when multiple agents are served behind a single A2A
    endpoint\""""
    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = dict(original(request))
        out["supportedInterfaces"] = [{**i, "tenant": TENANT} for i in out["supportedInterfaces"]]
        return out


@variant
def card_capabilities_absent(ref: A2AReference) -> None:
    """The card's capabilities object names none of streaming, pushNotifications,
    extendedAgentCard (each is then off).

    allowed by: specification.md section 3.3.4 "If `AgentCard.capabilities.pushNotifications` is
    `false` or not present" (and likewise streaming and extendedAgentCard)"""
    ref.config = dataclasses.replace(ref.config, streaming=False)  # what the card says, the agent does

    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        return {**original(request), "capabilities": {}}


@variant
def content_type_refused_invalid_params(ref: A2AReference) -> None:
    """A part whose media type the agent does not take is refused as invalid parameters
    (-32602, HTTP 400 without ErrorInfo), not ContentTypeNotSupportedError.

    allowed by: specification.md section 3.3.2, Validation Errors: "Example error codes: HTTP `400
    Bad Request`, gRPC `INVALID_ARGUMENT`, JSON-RPC `-32602 Invalid params`" with "Example
    scenarios: ... unsupported content type\""""
    @replaces(ref.check_media_types)
    def check(original: Any, message: dict[str, Any]) -> None:
        try:
            original(message)
        except Refusal as refusal:
            raise Refusal("InvalidParamsError", refusal.message, data={"field": "message.parts"}) from None


@variant(binding_kind="jsonrpc-http")
def rpc_errors_without_data(ref: A2AReference) -> None:
    """JSON-RPC errors carry no data member.

    allowed by: specification.md section 3.3.2 "**Error Details** (optional): An array of objects"
    (section 9.5 asks for well-known types only as a SHOULD)"""
    @replaces(ref.rpc_error_object)
    def rpc(original: Any, refusal: Refusal) -> dict[str, Any]:
        return {k: v for k, v in original(refusal).items() if k != "data"}


@variant(binding_kind="http-routes")
def rest_error_details_extra(ref: A2AReference) -> None:
    """HTTP+JSON errors carry a further typed detail before the ErrorInfo.

    allowed by: specification.md section 11.6 "Additional error context **MAY** be included as
    further objects in the `details` array\""""
    prefix = docs.error_info()["@type"].rsplit("/", 1)[0]

    @replaces(ref.rest_error_body)
    def body(original: Any, refusal: Refusal, status: int) -> dict[str, Any]:
        out = original(refusal, status)
        extra = {"@type": f"{prefix}/google.rpc.LocalizedMessage", "locale": "en", "message": refusal.message}
        out["error"]["details"] = [extra, *out["error"].get("details", [])]
        return dict(out)


@variant
def xcard_declared_unconfigured(ref: A2AReference) -> None:
    """The card declares capabilities.extendedAgentCard, but no extended card is configured:
    GetExtendedAgentCard answers ExtendedAgentCardNotConfiguredError.

    allowed by: specification.md section 3.3.4 "If the agent declares support but has not
    configured an extended card, it **MUST** return `ExtendedAgentCardNotConfiguredError`\""""
    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = dict(original(request))
        out["capabilities"] = {**out.get("capabilities", {}), "extendedAgentCard": True}
        return out

    @replaces(ref.op_GetExtendedAgentCard)
    def extended(original: Any, params: Any, caller: str) -> Any:
        raise Refusal("ExtendedAgentCardNotConfiguredError", "no extended agent card is configured")
