"""Reading Canon answers by what the document names. The <verb>_result schemas name every
member a check reads (status, conversationId, messageId, action, ...), so checks read
them by those names; a result that is not an object, or lacks what a check needs, is a
finding that quotes it (kind ``malformed_answer``), never a crash inside a check. Where
the document names a value but not its place (its one error code), ``carries`` finds it
anywhere in the answer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from conformance.checks.expect import expect_list, expect_mapping, expect_result
from conformance.kit.check import CheckContext
from conformance.kit.locate import expanded, holds
from conformance.transport.binding import Reply


def carries(reply: Reply, value: Any) -> bool:
    """Whether the answer holds ``value`` anywhere: in what the binding read it from, or in
    the JSON of a text block (an MCP tool result may carry its content only as text)."""
    answer = reply.envelope if reply.envelope is not None else reply.http.json()
    return any(holds(part, value) for part in expanded(answer))


def result_of(ctx: CheckContext, reply: Reply, what: str, keys: Iterable[str] = ()) -> dict[str, Any]:
    """A success whose result is an object (holding ``keys``)."""
    return expect_mapping(ctx, expect_result(ctx, reply, what), f"{what} result", keys)


def items(ctx: CheckContext, reply: Reply, what: str, member: str) -> list[dict[str, Any]]:
    """The objects of the list a result holds under ``member`` (contacts, conversations)."""
    listed = expect_list(ctx, result_of(ctx, reply, what, [member])[member], f"{what} result's {member}")
    return [expect_mapping(ctx, item, f"an item of the {what} result's {member}") for item in listed]


def objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a list (anything else holds none)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def members_of(conversation: dict[str, Any]) -> list[Any]:
    """A conversation's memberIds (a list; anything else names no one)."""
    members = conversation.get("memberIds")
    return list(members) if isinstance(members, list) else []
