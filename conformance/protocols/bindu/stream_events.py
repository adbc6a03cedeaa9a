"""message/stream as rows of several modules read it: whether the agent card declares
streaming, and what every event of a stream must carry (the request's id, the task the
message started)."""

from __future__ import annotations

import json

from conformance.kit.check import CheckContext
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.transport.binding import dig, is_event_stream, stream_events


def streaming(c: BinduClient) -> bool:
    """Whether the agent card says capabilities.streaming."""
    return bool(dig(c.card(), "capabilities", "streaming"))


def streaming_declared(ctx: CheckContext, c: BinduClient) -> None:
    """Not applicable, by the card's own declaration, where the agent card says
    capabilities.streaming is false (the spec's AgentCard: message/stream is then refused,
    which BINDU-STREAM-CAPABILITY judges): asked once a run."""
    said = dig(c.card(), "capabilities", "streaming")  # read each row, as before; the verdict is the run's

    def read() -> tuple[bool, str]:
        return bool(said), ("the agent card does not say capabilities.streaming" if said is None else
                            f"the agent card says capabilities.streaming is {json.dumps(said)}")

    ctx.require_declared("streaming", read, why="no stream to validate; BINDU-STREAM-CAPABILITY judges the "
                                                "refusal")


def check_stream_events(ctx: CheckContext, c: BinduClient) -> None:
    """An SSE stream of JSON-RPC results carrying the request's id, each about the task
    the message started. What a "task delta" holds the spec does not say: full Task
    snapshots are the profile's reading (BINDU-STREAM-TASK-SNAPSHOTS)."""
    params = c.send_params()
    task_id = params["message"]["taskId"]
    request_id = fresh_id()
    reply = c.call("message/stream", params, request_id=request_id)
    ctx.expect(reply.status == 200 and is_event_stream(reply.http),
               f"message/stream must answer text/event-stream: {reply.describe()}")
    events = stream_events(reply.http)
    ctx.expect(events, "message/stream sent no data events")
    for env in events:
        ctx.expect(isinstance(env, dict) and env.get("jsonrpc") == "2.0" and "result" in env
                   and "error" not in env,
                   f"stream event is not a JSON-RPC result: {env!r:.120}", kind="malformed_answer")
        ctx.expect(env.get("id") == request_id,
                   f"stream event id {env.get('id')!r} does not echo the request id", kind="malformed_answer")
        result = env["result"]
        named = {result.get(k) for k in ("id", "task_id", "taskId")} if isinstance(result, dict) else set()
        ctx.expect(task_id in named,
                   f"stream event is not about the task the message started ({task_id}): {result!r:.120}",
                   kind="schema_mismatch")
