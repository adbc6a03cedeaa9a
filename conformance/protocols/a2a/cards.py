"""The agent card and the extended agent card, fetched (sections 8.2, 3.1.11)."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext
from conformance.protocols.a2a.client import CARD_PATH, A2AClient

XCARD = "GetExtendedAgentCard"
CAPABILITY = "extendedAgentCard"


def fetched_card(ctx: CheckContext) -> Any:
    reply = ctx.http.request("GET", CARD_PATH, headers={"Accept": "application/json"})
    ctx.expect(reply.status == 200, f"GET {CARD_PATH}: HTTP {reply.status} {reply.text[:120]!r}, expected "
                                    "the "
                                    "agent card", kind="rejected_valid")
    return reply


def extended_card(client: A2AClient) -> dict[str, Any] | None:
    """The extended card the run's credential gets, or None where the agent serves none
    (for checks that compare answers: A2A-IDEM-GET)."""
    if not client.capability(CAPABILITY):
        return None
    reply = client.call(XCARD, {})
    return reply.result if reply.ok and isinstance(reply.result, dict) else None
