"""What the profile's bindings add to the document (profiles/canon-verbs.yaml: the HTTP
and MCP bindings and the error codes both carry): a schema break gets VALIDATION_ERROR
on every verb, errors carry the profile's code and status, a bearer token is required,
and the MCP surface the shared MCP rows need (conformance/protocols/mcp/)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from conformance.checks import auth
from conformance.checks.expect import expect_catalogued
from conformance.checks.inputs import invalid_code_everywhere
from conformance.documents.schemas import validator_for
from conformance.kit.check import CheckContext
from conformance.kit.declare import chosen, code, fault, requirement
from conformance.kit.faults import noop, replaces, returns
from conformance.model import Profile, Source
from conformance.protocols.canon.client import CanonClient, fresh
from conformance.protocols.canon.reference import CanonReference, VerbError
from conformance.protocols.canon.shared import CODES, REJECTION
from conformance.protocols.mcp.surface import McpSurface


@fault
def refusal_codes_swapped(ref: CanonReference) -> None:
    """Every refusal but MESSAGE_ID_EXISTS carries another code of the profile's catalogue (status unchanged).
    """
    codes = sorted(c for c in ref.errors if c != "MESSAGE_ID_EXISTS")

    @replaces(ref.error_body)
    def body(original: Any, err: VerbError) -> dict[str, Any]:
        out = original(err)
        if err.code in codes:
            out["error"]["code"] = codes[(codes.index(err.code) + 1) % len(codes)]
        return out


@requirement(id="CANON-INPUT-INVALID-CODE", level="SHOULD",
             title=f"An input breaking its schema gets {REJECTION} (every verb)", source=code(REJECTION),
             faults=CODES)
def check_invalid_code(ctx: CheckContext) -> None:
    invalid_code_everywhere(ctx, send=CanonClient(ctx).call, error=REJECTION)


@requirement(id="CANON-BINDING-ERRORS", level="SHOULD",
             title="Errors carry the profile's code, flagged by the binding, with the profile's HTTP status",
             source=lambda profile: chosen(f"profiles/{profile.name}.yaml#/errors"),
             faults=[returns("errors_as_200", "error_status", 200,
                             "Errors are sent with HTTP 200 (and over MCP as isError false results).")])
def check_binding_errors(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    replies = [
        ("schema-invalid input", c.call("react", {"emoji": ""})),
        ("unknown conversation", c.send("x", targetConversationId=fresh("conv"))),
        ("not a contact", c.call("share_contact", {"conversationId": c.role("owner_chat"),
                                                   "contactUserId": c.role("stranger")})),
    ]
    for what, reply in replies:
        expect_catalogued(ctx, reply, what, require_error=True)


def verbs_as_callers(ctx: CheckContext) -> dict[str, Callable[[Any], Any]]:
    """The auth family's rows: harmless verbs with valid inputs, each taking a caller."""
    c = CanonClient(ctx)
    inputs: dict[str, dict[str, Any]] = {
        "list_contacts": {}, "list_conversations": {"limit": 1},
        "send_to": {"targetConversationId": c.role("owner_chat"), "text": "conformance check"}}

    def call(verb: str, payload: dict[str, Any], who: Any) -> Any:
        return c.binding.call(verb, payload, caller=who)

    return {verb: functools.partial(call, verb, payload) for verb, payload in inputs.items()}


@requirement(id="CANON-AUTH-REQUIRED", level="SHOULD",
             title="With a bearer token configured, a call without one gets UNAUTHENTICATED (401)",
             source=lambda profile: chosen(f"profiles/{profile.name}.yaml#/credentials/full"),
             faults=[noop("auth_not_enforced", "unauthorized", "Calls without the bearer token are served.")],
             needs=["full"])
def check_auth_required(ctx: CheckContext) -> None:
    auth.token_required(ctx, operations=verbs_as_callers(ctx), error="UNAUTHENTICATED")


# -- the MCP binding ---------------------------------------------------------------------
def _strip_additional_false(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_strip_additional_false(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: _strip_additional_false(v) for k, v in schema.items()
            if not (k == "additionalProperties" and v is False)}


@fault
def mcp_tool_schema_looser(ref: CanonReference) -> None:
    """tools/list inputSchemas drop every additionalProperties: false."""
    @replaces(ref.tool_input_schema)
    def schema(original: Any, verb: str) -> Any:
        return _strip_additional_false(original(verb))


def _without_one_of(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_without_one_of(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: _without_one_of(v) for k, v in schema.items() if k != "oneOf"}


# as an MCP server that validates a call's arguments against the inputSchema its tool declares
@fault
def mcp_tool_one_of_flattened(ref: CanonReference) -> None:
    """Tool inputSchemas lose every oneOf, and tools/call holds to them: send_to takes no target, or two."""
    @replaces(ref.tool_input_schema)
    def schema(original: Any, verb: str) -> Any:
        return _without_one_of(original(verb))

    @replaces(ref.validate_tool_input)
    def validate(original: Any, verb: str, args: Any) -> None:
        errors = list(validator_for(ref.tool_input_schema(verb)).iter_errors(args))
        if errors:
            raise VerbError("VALIDATION_ERROR", errors[0].message[:300])


def mcp_surface(profile: Profile) -> McpSurface:
    """What the MCP rows need of Canon: one tool per verb (the profile's binding), the
    verbs' schemas, a harmless read and a call the spec refuses (an unknown conversation)."""
    src = Source("profile", f"profiles/{profile.name}.yaml#/bindings/mcp")
    return McpSurface(
        tools=lambda p: {v: op.params_schema for v, op in p.operations.items()},
        results=lambda p: {v: op.result_schema for v, op in p.operations.items()},
        harmless=lambda ctx: ("list_contacts", {}),
        refused=lambda ctx: ("send_to", {"targetConversationId": fresh("conv"), "text": "x"}),
        tools_source=src, tools_level="SHOULD", versions_source=src, versions_level="SHOULD", exact=True)

