"""Bindu's message/stream (specs/bindu/openapi.yaml): it follows the card's
capabilities.streaming, its events are JSON-RPC results about the task the message
started (BINDU-RESULT-MESSAGE-STREAM, in methods.py, judges them with stream_events.py's
``check_stream_events``), and, in the profile's reading, each is a full Task snapshot."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from conformance.checks.expect import expect_error
from conformance.checks.inputs import expect_matches
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, fault, requirement
from conformance.kit.faults import replaces
from conformance.protocols.bindu.client import BinduClient
from conformance.protocols.bindu.reference import BinduReference, Caller
from conformance.protocols.bindu.stream_events import streaming, streaming_declared
from conformance.transport.binding import is_event_stream, stream_events


@fault
def stream_events_without_id(ref: BinduReference) -> None:
    """message/stream events carry id null instead of the request's id."""
    @replaces(ref.event_stream_response)
    def events(original: Any, request_id: Any, stream: Any) -> Response:
        return original(None, stream)


@fault
def stream_events_of_another_task(ref: BinduReference) -> None:
    """message/stream events report a task id other than the one the message started."""
    @replaces(ref.message_stream)
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
    @replaces(ref.message_stream)
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
