"""Variants of the generated-input, binding-agreement and access rows (params.py, agree.py,
auth.py): behaviours the specification allows that the reference does not choose. Each
patches one reference instance; `conformance selftest` runs every requirement against each,
and no MUST may fail on one (a SHOULD may: it asks for the preferred reading)."""

from __future__ import annotations

import dataclasses
from typing import Any

from starlette.responses import JSONResponse, Response

from conformance.kit.declare import variant
from conformance.kit.faults import answer, replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.names import CAPABILITIES, ID, INVALID_PARAMS, capability_of, error_named
from conformance.protocols.a2a.reference import A2AReference

CUSTOM_CODE = -31001  # a JSON-RPC application error: outside -32768..-32000 and the tables


@variant
def no_security(ref: A2AReference) -> None:
    """The card declares no security scheme, and every caller is served as one.

    allowed by: specs/a2a/a2a.proto AgentCard "map<string, SecurityScheme> security_schemes = 8;"
    (no REQUIRED: an agent may ask for no credentials; section 7.3 "The client discovers the
    server's required authentication schemes via the `securitySchemes` field")"""
    ref.config = dataclasses.replace(ref.config, security=False)


variant(answer("jsonrpc_only", "card", """The card declares the JSON-RPC interface only.

    allowed by: §5.1 "When an agent supports multiple protocols, all supported protocols **MUST**:"
    (an agent may support one; §5.2 "Agents **MUST** declare all supported protocols")""",
               edit=lambda card, *a: {**card, "supportedInterfaces": [
                   i for i in card["supportedInterfaces"] if i.get("protocolBinding") == "JSONRPC"]},
               binding_kind="jsonrpc-http"))


def unset_nulls(value: Any) -> Any:
    """ProtoJSON: a null member is the member unset."""
    if isinstance(value, dict):
        return {k: unset_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [unset_nulls(v) for v in value]
    return value


@variant
def protojson_nulls_accepted(ref: A2AReference) -> None:
    """A member given as null is read as unset (a REQUIRED one is then missing).

    allowed by: §5.5 "Enum values **MUST** be represented according to the [ProtoJSON
    specification]" and "This follows the ProtoJSON specification as adopted in ADR-001"
    (ProtoJSON: "null is an accepted value for all field types and treated as the default value")"""
    @replaces(ref.validate)
    def validate(original: Any, method: str, params: Any) -> None:
        original(method, unset_nulls(params) if isinstance(params, dict) else params)


@variant
def unknown_members_refused(ref: A2AReference) -> None:
    """A request holding a member the proto does not name is refused as invalid params.

    allowed by: §5.7 "Implementations **SHOULD** ignore unrecognized fields in messages" (a
    SHOULD: a strict reader may refuse them; A2A-PARAMS-UNKNOWN-FIELDS asks for it)"""
    from conformance.protocols.a2a.params import unknown_request_members_refused

    unknown_request_members_refused(ref)


@variant
def capability_before_validation(ref: A2AReference) -> None:
    """A method whose capability the card declares off gets the capability error before its
    request is validated (an invalid request of it included).

    allowed by: §3.3.4 "operations related to push notification configuration (Create, Get,
    List, Delete) **MUST** return [`PushNotificationNotSupportedError`]" (for any request of them)"""
    @replaces(ref.dispatch)
    def dispatch(original: Any, method: str, params: Any, caller: str) -> Any:
        need = capability_of(ref.profile, method) if method in ref.methods else None
        declared = dict(zip(CAPABILITIES, (ref.config.streaming, ref.config.push_notifications,
                                           ref.config.extended_agent_card), strict=True))
        if need is not None and not declared[need[0]]:
            raise Refusal(need[1], f"{method}: {need[0]} is not supported")
        return original(method, params, caller)


@variant(binding_kind="http-routes")
def invalid_params_unprocessable(ref: A2AReference) -> None:
    """Over HTTP+JSON, invalid params are refused with HTTP 422.

    allowed by: §3.3.2 "Example error codes: HTTP `400 Bad Request`" (an example; the binding
    names no status for invalid params)"""
    @replaces(ref.http_status)
    def status(original: Any, refusal: Refusal) -> int:
        return 422 if refusal.name == INVALID_PARAMS else int(original(refusal))


@variant(binding_kind="jsonrpc-http")
def unauthenticated_custom_code(ref: A2AReference) -> None:
    """Over JSON-RPC, a request without valid credentials gets a custom JSON-RPC error at HTTP 200.

    allowed by: §3.3.2 "Example error codes: HTTP `401 Unauthorized`, gRPC `UNAUTHENTICATED`,
    JSON-RPC custom error\""""
    @replaces(ref.rpc_error)
    def rpc_error(original: Any, request_id: Any, refusal: Refusal) -> Response:
        if refusal.status != 401:
            return original(request_id, refusal)
        return JSONResponse({"jsonrpc": "2.0", "id": request_id,
                             "error": {"code": CUSTOM_CODE, "message": refusal.message}})


@variant
def missing_id_not_found(ref: A2AReference) -> None:
    """GetTask and CancelTask without an id read it as unset (the empty id) and answer
    TaskNotFoundError, instead of refusing the request as invalid.

    allowed by: §5.7 "Implementations **SHOULD** validate these requirements and reject messages
    with missing required fields" (a SHOULD)"""
    @replaces(ref.validate)
    def validate(original: Any, method: str, params: Any) -> None:
        if method in ("GetTask", "CancelTask") and isinstance(params, dict) and ID not in params:
            raise Refusal(error_named(ref.profile, "TaskNotFoundError"), "task '' not found")
        original(method, params)


@variant(binding_kind="jsonrpc-http")
def forbidden_custom_code_in_data(ref: A2AReference) -> None:
    """Over JSON-RPC, a caller denied an operation gets a custom error at HTTP 200 saying
    "forbidden", the permission it lacks named in ``data`` only.

    allowed by: §3.3.2 "Example error codes: HTTP `403 Forbidden`, gRPC `PERMISSION_DENIED`,
    JSON-RPC custom error" (examples; "**SHOULD** indicate what permission or scope is missing"
    gives no place to say it)"""
    @replaces(ref.rpc_error)
    def rpc_error(original: Any, request_id: Any, refusal: Refusal) -> Response:
        if refusal.status != 403:
            return original(request_id, refusal)
        return JSONResponse({"jsonrpc": "2.0", "id": request_id,
                             "error": {"code": CUSTOM_CODE, "message": "forbidden", "data": refusal.data}})


@variant
def authorized_after_lookup(ref: A2AReference) -> None:
    """The agent finds the task before it asks whether the caller may act on it: a denied
    CancelTask of the caller's own finished task is TaskNotCancelableError, as it would be
    for a caller permitted to cancel.

    allowed by: §7.5 "Authorization logic is implementation-specific" (the order of the
    checks is the agent's)"""
    permit = ref.permit

    @replaces(ref.permit)
    def permit_first(original: Any, method: str, caller: str) -> None:
        if method != "CancelTask":
            original(method, caller)

    @replaces(ref.op_CancelTask)
    def cancel(original: Any, params: Any, caller: str) -> Any:
        task = ref.owned_task(params.get("id"), caller)
        if task["status"]["state"] not in docs.terminal_states():
            permit("CancelTask", caller)
        return original(params, caller)
