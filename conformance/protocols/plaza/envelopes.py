"""Requests built by hand: the JSON-RPC envelope, a request sent as its text (watched on a
live site, keeper.py) and the document's status example with a fresh messageId, the
harmless request every part's refusal rows control with; the pointer of the document's
wireFormat they cite."""

from __future__ import annotations

import json
from typing import Any

from conformance.kit.check import CheckContext
from conformance.protocols.a2a import wire
from conformance.protocols.plaza.client import ALICE, PlazaClient, fresh_id, keeper_for
from conformance.transport.binding import Reply

WIRE = "/wireFormat"


# ----------------------------------------------------------------------------------
# requests built by hand
# ----------------------------------------------------------------------------------
def envelope(method: str, params: Any, request_id: Any = wire.AUTO) -> dict[str, Any]:
    """A JSON-RPC request as A2A's JSON-RPC binding frames it (protocols/a2a/wire.py)."""
    return wire.request(method, params, request_id)


def raw(ctx: CheckContext, body: Any, headers: dict[str, str | None] | None = None,
        who: Any = ALICE) -> Reply:
    """A request sent as its text (watched on a live site, keeper.py)."""
    text = body if isinstance(body, str) else json.dumps(body)
    keeper = keeper_for(ctx)
    if keeper is not None and isinstance(body, dict):
        keeper.before(str(body.get("method")), body.get("params"), who)
    reply = ctx.binding.send_raw(text, headers=headers, caller=who)
    if keeper is not None:
        keeper.after_raw(text, who, reply)
    return reply


def status_request(c: PlazaClient) -> dict[str, Any]:
    """The document's status example with a fresh messageId: the harmless request."""
    body = c.example("status")
    body["params"]["message"]["messageId"] = fresh_id()
    return body
