"""Cards (send_card, request_card and the runtimeCard envelope): an interactive card
needs an actions block, the envelope's size and secret-bearing keys, a human's submitted
values within their limits, and the tool bindings' composed card document schema."""

from __future__ import annotations

import json
from typing import Any

from conformance.checks.expect import expect_result, refused_as
from conformance.documents.schemas import validator_for
from conformance.kit.check import CheckContext, NotApplicable
from conformance.kit.declare import at, requirement
from conformance.kit.faults import returns, returns_arg
from conformance.protocols.canon.client import CanonClient
from conformance.protocols.canon.shared import CODES, DEFS, MINUTE_MS, needs_control
from conformance.protocols.mcp.surface import ToolSchema


@requirement(id="CANON-CARD-ACTIONS-REQUIRED", level="MUST",
             title="request_card needs at least one actions block; send_card needs none",
             source=at(f"{DEFS}/request_card_input/description"),
             faults=[returns("card_without_actions_accepted", "card_has_actions", True,
                             "request_card accepts a card with no actions block.")],
             code="CARD_REJECTED", code_faults=CODES)
def check_card_actions_required(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    refused_as(ctx, c.call("request_card", {"card": c.card(actions=False), "timeoutMs": MINUTE_MS}),
               "CARD_REJECTED", "request_card without an actions block", strict)
    expect_result(ctx, c.call("send_card", {"card": c.card(actions=False)}),
                  "send_card without actions (display only)")


@requirement(id="CANON-CARD-ENVELOPE", level="MUST",
             title="Cards of {limits[card_envelope_bytes]} serialized bytes are accepted; one byte more or "
                   "secret-bearing top-level keys are refused",
             source=at(f"{DEFS}/runtimeCard/description"),
             faults=[returns("card_secret_key_accepted", "card_secret_keys", [],
                             "A card with a secret-bearing top-level key is accepted."),
                     returns("card_size_unchecked", "card_size_ok", True,
                             "A card over the envelope's serialized size limit is accepted.")],
             code="CARD_REJECTED", code_faults=CODES)
def check_card_envelope(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    before = c.snapshot()
    refused_as(ctx, c.call("send_card", {"card": c.card(apiToken="abc")}), "CARD_REJECTED",
               "a card with a secret-bearing top-level key", strict)
    limit = ctx.limit("card_envelope_bytes")
    base = c.card(blocks=[{"type": "text", "text": ""}])
    pad = len(json.dumps(base, separators=(",", ":"), ensure_ascii=False).encode())
    edge = c.card(blocks=[{"type": "text", "text": "x" * (limit - pad)}])
    big = c.card(blocks=[{"type": "text", "text": "x" * (limit - pad + 1)}])
    ctx.expect(validator_for(ctx.profile.operations["send_card"].params_schema).is_valid({"card": big}),
               "the oversized card must be schema-valid")
    refused_as(ctx, c.call("send_card", {"card": big}), "CARD_REJECTED",
               f"a card one byte over {limit} serialized bytes", strict)
    ctx.expect(c.snapshot() == before, "a rejected card changed the state", kind="state_changed")
    expect_result(ctx, c.call("send_card", {"card": edge}), f"a card of exactly {limit} serialized bytes")


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"v": "x"}
    for _ in range(depth - 1):
        value = {"n": value}
    return value


@requirement(id="CANON-CARD-VALUES-LIMITS", level="MUST",
             title="A human's card values within {limits[card_values_bytes]} bytes / depth "
                   "{limits[card_values_depth]} come back; past them they never do",
             source=at(f"{DEFS}/request_card_result/oneOf/0/properties/values/description"),
             faults=[returns("card_values_unchecked", "card_values_ok", True,
                             "A human's card values over the byte or depth limit are accepted and "
                             "returned.")])
@needs_control("a human who submits the card with the values under test (control script)")
def check_card_values(ctx: CheckContext) -> None:
    """A human's values: within the limits they come back; over them they never do."""
    c = CanonClient(ctx)
    size = ctx.limit("card_values_bytes")
    depth = ctx.limit("card_values_depth")
    pad = len(json.dumps({"v": ""}, separators=(",", ":")))
    cases = [(f"values of exactly {size} bytes", {"v": "x" * (size - pad)}, True),
             (f"values of {size + 1} bytes", {"v": "x" * (size + 1 - pad)}, False),
             # within the limit however depth is counted
             (f"values {depth - 1} levels deep", nested(depth - 1), True),
             (f"values {depth + 2} levels deep", nested(depth + 2), False)]
    for what, values, kept in cases:
        with ctx.subcheck(what):
            c.script("request_card", action="submit", actionId="ok", values=values)
            got = expect_result(ctx, c.call("request_card", {"card": c.card(actions=True),
                                                             "timeoutMs": MINUTE_MS}),
                                f"request_card submitted with {what}")
            if kept:
                ctx.expect(got.get("status") == "submitted" and got.get("values") == values,
                           f"{what} are within the limits and must come back: {str(got)[:200]}")
            else:
                ctx.expect(got.get("status") != "submitted" or got.get("values") != values,
                           f"{what} are over the limits and came back: {str(got)[:200]}")


def tool_schema(ctx: CheckContext, tools: dict[Any, dict[str, Any]], verb: str) -> ToolSchema:
    return ToolSchema(ctx, verb, tools.get(verb, {}).get("inputSchema") or {})


@requirement(id="CANON-MCP-CARD-SCHEMA", level="MUST",
             title="The send_card / request_card tools compose the card document schema (authoring caps "
                   "enforced)",
             source=at(f"{DEFS}/runtimeCard/description"),
             faults=[returns_arg("mcp_card_schema_envelope_only", "card_document_schema", 0,
                                 "The send_card / request_card tools carry the envelope-only card schema, "
                                 "not the composed document schema.")])
def check_mcp_card_schema(ctx: CheckContext) -> None:
    """Tool bindings compose the card document schema: the send_card / request_card tools
    refuse cards past the document's authoring caps (envelope-valid) and accept one at them."""
    if ctx.binding.kind != "mcp-tools":
        raise NotApplicable("tool input schemas exist only in the mcp binding")
    c = CanonClient(ctx)
    lim = {k: int(v.value) for k, v in ctx.profile.limits.items()}
    tools = {t["name"]: t for t in c.binding.list_tools() if isinstance(t.get("name"), str)}
    block = {"type": "text", "text": "x"}
    at_caps = c.card(title="t" * lim["card_title_authoring_chars"],
                     fallbackText="f" * lim["card_fallback_authoring_chars"],
                     blocks=[block] * (lim["card_blocks_authoring_count"] - 1)
                     + [{"type": "actions", "actions": [{"id": "ok", "label": "OK"}]}])
    past = {"title": c.card(title="t" * (lim["card_title_authoring_chars"] + 1)),
            "fallbackText": c.card(fallbackText="f" * (lim["card_fallback_authoring_chars"] + 1)),
            "blocks": c.card(blocks=[block] * (lim["card_blocks_authoring_count"] + 1)),
            "a block that is not an object": c.card(blocks=[42])}
    for verb in ("send_card", "request_card"):
        envelope = validator_for(ctx.profile.operations[verb].params_schema)
        tool = tool_schema(ctx, tools, verb)
        with ctx.subcheck(f"{verb} at the caps"):
            ctx.expect(tool.is_valid({"card": at_caps}),
                       f"tool {verb}'s inputSchema refuses a card at the document's authoring caps")
        for what, card in past.items():
            with ctx.subcheck(f"{verb}: {what}"):
                ctx.expect(envelope.is_valid({"card": card}), f"the probe ({what}) must be envelope-valid")
                ctx.expect(not tool.is_valid({"card": card}),
                           f"tool {verb}'s inputSchema accepts a card past the document schema ({what}): "
                           "it is not composed with the card schema")
