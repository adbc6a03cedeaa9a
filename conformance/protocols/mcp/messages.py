"""The JSON-RPC message rules every MCP revision's transport adopts, over each MCP binding
of the profile: a notification gets no JSON-RPC response (202 and no body, or an HTTP
error status), and a batch, which the revisions here no longer let a client send, is
refused or answered as JSON-RPC 2.0 answers one. Each row is a family over the profile's
MCP bindings (surface.py); its faults patch the shared server, its variants are the
server's settings (variants.py)."""

from __future__ import annotations

import json
from typing import Any

from conformance.kit.check import CheckContext
from conformance.kit.declare import Cite, chosen, requirement
from conformance.kit.faults import replaces
from conformance.model import Profile
from conformance.protocols.mcp.server import McpHost, McpReply
from conformance.protocols.mcp.surface import TITLE, McpBinding, bindings, fresh_client, page, server, started
from conformance.transport.http import HttpReply
from conformance.transport.mcp import stream_messages

HANDSHAKE_PAGE, STATELESS_PAGE = "basic-transports", "basic-transports-streamable-http"


def accepts_notification(profile: Profile, b: McpBinding) -> Cite:
    """Where the binding's revision says what an accepted notification gets."""
    if b.rev.stateless:
        needle = "If the server accepts it, the server **MUST** return HTTP status"
        return page(STATELESS_PAGE, needle)(profile, b)
    return page(HANDSHAKE_PAGE, "If the server accepts the input, the server **MUST**")(profile, b)


def unanswered_or_refused(ctx: CheckContext, reply: HttpReply, what: str) -> None:
    """The transports' two answers to a notification: accepted, 202 and no body; or not
    accepted, an HTTP error status whose body, if it is JSON-RPC, is an error with no id.
    Never a JSON-RPC response to it, nor a 2xx with a body."""
    body = reply.json() if reply.content.strip() else None
    if reply.status < 400:
        ctx.expect(reply.status == 202 and not reply.content.strip(),
                   f"{what} was answered HTTP {reply.status} {reply.text[:200]!r}: an accepted notification "
                   "gets 202 Accepted with no body", kind="wrong_status")
        return
    ctx.expect(not (isinstance(body, dict) and ("result" in body or body.get("id") is not None)),
               f"{what} was refused with HTTP {reply.status} and a JSON-RPC response carrying "
               f"{'a result' if isinstance(body, dict) and 'result' in body else 'an id'}: "
               f"{reply.text[:200]!r}; the body may only be an error response that has no id",
               kind="malformed_answer")


@requirement(id="{mcp.prefix}-NOTIFICATION-NO-RESPONSE", level="MUST",
             title=TITLE + "a notification gets 202 and no body, or an HTTP error status, never a response",
             document="mcp", each=bindings(accepts_notification),
             faults=["mcp_notification_answered", "mcp_notification_error_200"])
def check_notification_no_response(ctx: CheckContext, mcp: McpBinding) -> None:
    """``notifications/cancelled`` naming a request the kit never sent (a receiver may
    ignore a cancellation it cannot match; the stateless revision defines no client
    notification over HTTP but keeps the transport's rule for any notification POST),
    sent as the client sends every message of the binding's era."""
    client = fresh_client(ctx, mcp.name)
    started(ctx, client)
    params = client.with_meta({"requestId": "conformance-never-sent", "reason": "conformance check"})
    reply = client.notify("notifications/cancelled", params)
    unanswered_or_refused(ctx, reply, "notifications/cancelled (a notification: no id)")


@check_notification_no_response.fault
def mcp_notification_error_200(ref: McpHost) -> None:
    """A notification other than initialized gets a JSON-RPC error with HTTP 200."""
    @replaces(server(ref).notification_reply)
    def reply(original: Any, method: str = "") -> McpReply:
        if method == "notifications/initialized":
            return original(method)
        return McpReply(200, {"jsonrpc": "2.0", "id": None,
                              "error": {"code": -32601, "message": f"no handler for {method}"}})


def no_batches(profile: Profile, b: McpBinding) -> Cite:
    changelog = b.rev.page_relpath("changelog")
    transports = b.rev.page_relpath(STATELESS_PAGE if b.rev.stateless else HANDSHAKE_PAGE)
    return chosen(f"2025-06-18's changelog removes JSON-RPC batching ({changelog}: 'Remove support for "
                  f"JSON-RPC **[batching]'), and the transport asks a single message of the client "
                  f"({transports}: 'MUST be a single JSON-RPC'), but no revision says what a server "
                  "answers to a batch; JSON-RPC 2.0, which basic-index adopts, answers one with an array. "
                  "The profile accepts either: a refusal (an HTTP 4xx, or a JSON-RPC error with id null) "
                  "or an array answering each request by its id; never a server failure or a lone result")


def body_of(reply: HttpReply) -> Any:
    """The JSON body, or the messages of an SSE stream (a list, as a batch's answer is)."""
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        return stream_messages(reply)
    return reply.json()


@requirement(id="{mcp.prefix}-BATCH", level="SHOULD",
             title=TITLE + "a JSON-RPC batch (no longer a client's to send) is refused, or answered as "
                           "JSON-RPC 2.0 answers one",
             document="mcp", each=bindings(no_batches),
             faults=["mcp_batch_crashes", "mcp_batch_first_only"])
def check_batch(ctx: CheckContext, mcp: McpBinding) -> None:
    """Two tools/list requests in one JSON array, with the headers the client sends for one."""
    client = fresh_client(ctx, mcp.name)
    started(ctx, client)
    ids = ["conformance-batch-1", "conformance-batch-2"]
    batch = [{"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": client.with_meta({})}
             for rid in ids]
    reply = client.post(json.dumps(batch), client.headers_for(batch[0]))
    what = f"a batch of two tools/list requests: HTTP {reply.status} {reply.text[:200]!r}"
    ctx.expect(reply.status < 500, f"{what}: the server failed instead of refusing or answering",
               kind="wrong_status")
    body = body_of(reply)
    if isinstance(body, list):  # JSON-RPC 2.0's answer to a batch
        answered = [m.get("id") for m in body if isinstance(m, dict) and ("result" in m or "error" in m)]
        ctx.expect(reply.status < 300 and sorted(map(str, answered)) == sorted(ids),
                   f"{what}: an array must answer each request of the batch by its id",
                   kind="malformed_answer")
        return
    if reply.status >= 400:
        ctx.expect(not (isinstance(body, dict) and "result" in body),
                   f"{what}: a refusal carries no result", kind="malformed_answer")
        return
    error = body.get("error") if isinstance(body, dict) else None
    ctx.expect(isinstance(error, dict) and body.get("id") is None,
               f"{what}: neither a refusal (an HTTP 4xx, or a JSON-RPC error with id null) nor an array of "
               "answers", kind="malformed_answer")


@check_batch.fault
def mcp_batch_crashes(ref: McpHost) -> None:
    """A JSON array body makes the server fail (HTTP 500)."""
    @replaces(server(ref).parse)
    def parse(original: Any, raw: bytes) -> dict[str, Any]:
        if raw.lstrip()[:1] == b"[":
            raise RuntimeError("a batch")
        return original(raw)

    @replaces(server(ref).answer)
    def answer(original: Any, http_method: str, caller: Any, raw: bytes, headers: Any) -> McpReply:
        try:
            return original(http_method, caller, raw, headers)
        except RuntimeError:
            return McpReply(500, {"error": "internal"})


@check_batch.fault
def mcp_batch_first_only(ref: McpHost) -> None:
    """A batch is answered as its first request alone: one result object with HTTP 200."""
    @replaces(server(ref).parse)
    def parse(original: Any, raw: bytes) -> dict[str, Any]:
        value = json.loads(raw)
        if isinstance(value, list) and value:
            return original(json.dumps(value[0]).encode())
        return original(raw)
