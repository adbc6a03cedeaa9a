"""Bindu's message/stream (specs/bindu/openapi.yaml): it follows the card's
capabilities.streaming, its events are JSON-RPC results about the task the message
started (BINDU-RESULT-MESSAGE-STREAM, in methods.py, judges them with
``check_stream_events``), and, in the profile's reading, each is a full Task snapshot."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from conformance.check import CheckContext
from conformance.checks.expect import expect_error
from conformance.checks.inputs import expect_matches
from conformance.declare import at, chosen, fault, requirement
from conformance.faults import replaces
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.protocols.bindu.reference import BinduReference, Caller
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


@fault
def stream_events_without_id(ref: BinduReference) -> None:
    """message/stream events carry id null instead of the request's id."""
    @replaces(ref, "event_stream_response")
    def events(original: Any, request_id: Any, stream: Any) -> Response:
        return original(None, stream)


@fault
def stream_events_of_another_task(ref: BinduReference) -> None:
    """message/stream events report a task id other than the one the message started."""
    @replaces(ref, "message_stream")
    def stream(original: Any, params: dict[str, Any], caller: Caller) -> Any:
        out = original(params, caller)
        for result in out.results:
            result["id"] = ref.new_id()
        return out


@requirement(id="BINDU-STREAM-CAPABILITY", level="MUST",
             title="message/stream follows the card's capabilities.streaming (-32004 when false)",
             source=at("/components/schemas/AgentCard/properties/capabilities/properties/streaming"))
def check_stream_capability(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    reply = c.call("message/stream", c.send_params())
    if streaming(c):
        ctx.expect(reply.status == 200 and is_event_stream(reply.http),
                   f"card says streaming; message/stream answered HTTP {reply.status} "
                   f"{reply.http.headers.get('content-type')}")
    else:
        expect_error(ctx, reply, "UnsupportedOperation",
                     "message/stream on an agent whose card says streaming: false")


@check_stream_capability.fault
def stream_ignores_capability(ref: BinduReference) -> None:
    """message/stream answers a plain JSON Task whatever capabilities.streaming says."""
    @replaces(ref, "message_stream")
    def stream(_original: Any, params: dict[str, Any], caller: Caller) -> Any:
        return ref.message_send(params, caller)


@requirement(id="BINDU-STREAM-TASK-SNAPSHOTS", level="SHOULD",
             title="Each message/stream event is a full Task snapshot",
             source=chosen("the spec calls the stream 'task deltas' without saying what a delta holds; the "
                           "profile reads message/stream's result as what message/send answers "
                           "(profiles/bindu.yaml, jsonrpc.results)"),
             faults=["camel_case_responses"])
def check_stream_snapshots(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    streaming_declared(ctx, c)
    reply = c.call("message/stream", c.send_params())
    schema = ctx.profile.operations["message/stream"].result_schema or {}
    for env in stream_events(reply.http):
        result = env.get("result") if isinstance(env, dict) else None
        expect_matches(ctx, schema, result, "stream event result")
