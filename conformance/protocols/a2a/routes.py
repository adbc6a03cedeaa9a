"""The HTTP+JSON routes called by hand: whether an answer came from the method's route, and
SubscribeToTask by either verb (the proto says GET, sections 5.3 and 11.3.2 say POST)."""

from __future__ import annotations

from conformance.kit.check import CheckContext
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import REST, info_in, table
from conformance.protocols.a2a.client import A2AClient
from conformance.transport.binding import Reply

STREAM_TIMEOUT = 10.0  # seconds a streamed answer may take (a stream closes at a terminal state)
NO_ROUTE = (404, 405, 501)


def reached(ctx: CheckContext, reply: Reply) -> bool:
    """The route reached the method: anything but a 404, 405 or 501 that names no error of
    the table (a 404 with TASK_NOT_FOUND is the method's own answer)."""
    if reply.status not in NO_ROUTE:
        return True
    reasons = {docs.reason_of(name) for name in table(ctx)}
    return (info_in(reply) or {}).get("reason") in reasons


def post_verb(client: A2AClient, method: str) -> A2AClient:
    """A client whose routes for ``method`` are POST with the fields as the body: section 5.3
    and 11.3.2's reading of SubscribeToTask, where the proto says GET."""
    other = A2AClient(client.ctx)
    binding = client.ctx.binding_named(client.binding.name)
    routes = binding.entry.get("routes") or {}
    posted = [{**route, "verb": "post", "body": "*"} for route in routes.get(method, [])]
    binding.entry = {**binding.entry, "routes": {**routes, method: posted}}
    other.binding = binding
    return other


def subscribe(client: A2AClient, task_id: str) -> Reply:
    """SubscribeToTask of ``task_id``: over HTTP+JSON by the proto's GET, then, where no
    route answers it, by POST (both readings of the documents)."""
    reply = client.call("SubscribeToTask", {"id": task_id}, timeout=STREAM_TIMEOUT)
    if client.binding.kind != REST or reached(client.ctx, reply):
        return reply
    posted = post_verb(client, "SubscribeToTask")
    return posted.call("SubscribeToTask", {"id": task_id}, timeout=STREAM_TIMEOUT)
