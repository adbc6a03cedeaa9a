"""Streaming (sections 3.1.2, 3.1.6, 3.5.2, 9.4.2, 9.4.6, 11.7): SendStreamingMessage and
SubscribeToTask answered as server-sent events, each event a whole answer of the binding (a
JSON-RPC response envelope; over HTTP+JSON a StreamResponse), the Task (or one Message)
first, every change of the task in the order it happened, the stream closed by the server
once the task is terminal. What a stream says is judged against what GetTask shows
afterwards: a server that drops or reorders updates fails.

A stream is read whole, within the kit's limits (the exchange's deadline, ``STREAM_TIMEOUT``,
and its size cap): one that never ends, drips or grows past the cap is a finding quoting
what arrived. Every row is not applicable where the card does not declare
capabilities.streaming (A2A-CAP-STREAMING-OFF judges that agent). A subscription needs a
task the agent keeps working (control's long_running, or scenarios.long_running) and, to
see it change while subscribed, the reference's control (``progress_on_subscribe``)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from typing import Any

from conformance.kit.check import CheckContext, NotApplicable, Untested
from conformance.kit.declare import requirement, variant
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import offers
from conformance.protocols.a2a.answers import GRPC, REST, describe, kind_of
from conformance.protocols.a2a.client import A2AClient, a2a_error, state
from conformance.protocols.a2a.driving import driven, finished
from conformance.protocols.a2a.event_streams import (
    UPDATES,
    Stream,
    after_first,
    against_task,
    expect_stream,
    open_stream,
    send_stream,
    shape_problems,
    subscription,
    task_stream,
    terminal_problems,
    watched,
    working_task,
)
from conformance.protocols.a2a.expectations import expect_carries
from conformance.protocols.a2a.offers import secured, streaming
from conformance.protocols.a2a.reference import A2AReference
from conformance.protocols.a2a.routes import STREAM_TIMEOUT, post_verb, reached
from conformance.transport.binding import is_event_stream

STREAMING = "streaming"
UNSUPPORTED = "UnsupportedOperationError"


def rehear(ref: Any, stream: Any, hear: Any) -> None:
    """A fault's listener in place of ``stream``'s own, run holding the stream's lock (a
    reader in another thread sees the queue only as the fault leaves it)."""
    def locked(task: Any, event: Any) -> None:
        with stream.lock:
            hear(task, event)
    if stream.hear in ref.listeners:
        ref.listeners[ref.listeners.index(stream.hear)] = locked
    stream.hear = locked


# -- SendStreamingMessage ---------------------------------------------------------------------
def over_http(ctx: CheckContext) -> None:
    """Applies over the HTTP bindings, whose streams are Server-Sent Events."""
    if kind_of(ctx) == GRPC:
        raise NotApplicable("a statement of the HTTP bindings' Server-Sent Events; the gRPC binding streams "
                            "the proto's `stream StreamResponse` (section 10), whose messages the other "
                            "stream rows judge")


@requirement(id="A2A-STREAM-SSE", level="MUST", optional=offers.STREAMING,
             title="SendStreamingMessage is answered HTTP 200, Content-Type text/event-stream, each event's "
                   "data JSON (JSON-RPC at its method, HTTP+JSON at POST /message:stream)",
             source=docs.spec("**Response:** HTTP 200 with `Content-Type: text/event-stream`",
                              after="#### 9.4.2"),
             applies=(over_http, streaming))
def check_sse(ctx: CheckContext) -> None:
    """Section 11.7 says the same of HTTP+JSON ("Content-Type: text/event-stream", "the
    `data` field containing JSON serializations"); the route is the proto's."""
    client = A2AClient(ctx)
    stream = send_stream(client)
    expect_stream(ctx, stream)
    ctx.expect(bool(stream.events), f"{stream.what}: the stream holds no event: {stream.describe()}",
               kind="malformed_answer")
    bad = [e for e in stream.events if e.value is None]
    ctx.expect(not bad, f"{stream.what}: {len(bad)} events whose data is not JSON: {bad[0].data[:120]!r}"
               if bad else "", kind="malformed_answer")


@check_sse.fault
def stream_as_json(ref: A2AReference) -> None:
    """Streamed answers are sent as one JSON array of the events (application/json), not as SSE."""
    from starlette.responses import JSONResponse

    @replaces(ref.sse)
    def sse(original: Any, stream: Any, wrap: Any) -> Any:
        return JSONResponse([wrap(e) for e in stream.queue])


@requirement(id="A2A-STREAM-EVENT-SHAPE", level="MUST", optional=offers.STREAMING,
             title="Each streamed event is a whole answer of the binding holding one StreamResponse (a "
                   "JSON-RPC response to the request; over HTTP+JSON the StreamResponse itself)",
             source=docs.spec('data: {"jsonrpc": "2.0", "id": 1, "result": { /* StreamResponse',
                              after="#### 9.4.2"),
             applies=streaming)
def check_event_shape(ctx: CheckContext) -> None:
    """Judged by the StreamResponse schema the kit loads (exactly one of task, message,
    statusUpdate, artifactUpdate, each with its REQUIRED members: the proto's oneof and
    TaskStatusUpdateEvent/TaskArtifactUpdateEvent), on a streamed send and, where the
    agent keeps a task working, a subscription."""
    client = A2AClient(ctx)
    streams = [send_stream(client)]
    try:
        streams.append(watched(client)[1])
    except Untested:
        pass
    for stream in streams:
        with ctx.subcheck(stream.what):
            expect_stream(ctx, stream)
            ctx.expect(bool(stream.events), f"{stream.what}: no whole event arrived (section 3.1.2: the "
                                            f"Task or Message first): {stream.describe()}",
                       kind="malformed_answer")
            problems = shape_problems(ctx, stream)
            ctx.expect(not problems, f"{stream.what}: " + "; ".join(problems[:3]), kind="schema_mismatch")


@check_event_shape.fault
def stream_events_of_the_other_binding(ref: A2AReference) -> None:
    """Each event is what the other binding sends: over JSON-RPC the bare StreamResponse, over
    HTTP+JSON one inside a JSON-RPC envelope."""
    @replaces(ref.sse)
    def sse(original: Any, stream: Any, wrap: Any) -> Any:
        def other(event: Any) -> Any:
            wrapped = wrap(event)
            return event if wrapped is not event else {"jsonrpc": "2.0", "id": 1, "result": event}
        return original(stream, other)


@check_event_shape.fault
def stream_event_empty(ref: A2AReference) -> None:
    """After its first event a stream sends a StreamResponse holding none of task, message,
    statusUpdate, artifactUpdate (a wire any binding carries: an empty protobuf message too)."""
    @replaces(ref.open_stream)
    def open_stream(original: Any, first: list[Any], task_id: Any) -> Any:
        return original([*first[:1], {}, *first[1:]], task_id)


@check_event_shape.fault
def status_update_without_context(ref: A2AReference) -> None:
    """Streamed status updates leave out their REQUIRED contextId."""
    @replaces(ref.sse_event)
    def sse_event(original: Any, payload: Any) -> str:
        inner = payload.get("result", payload) if isinstance(payload, dict) else payload
        if isinstance(inner, dict) and isinstance(inner.get("statusUpdate"), dict):
            inner["statusUpdate"].pop("contextId", None)
        return str(original(payload))


@requirement(id="A2A-STREAM-TASK-FIRST", level="MUST", optional=offers.STREAMING,
             title="A streamed Task answer begins with the Task, then only status and artifact updates of "
                   "that task (a final Task snapshot allowed)",
             source=docs.spec("the stream MUST begin with the Task object", after="#### 3.1.2"),
             applies=streaming)
def check_task_first(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    stream = task_stream(client)
    first = stream.events[0] if stream.events else None
    ctx.expect(first is not None and first.kind == "task" and isinstance(dig_id(first.body), str),
               f"{stream.what}: the first event is not a Task: {stream.describe()}", kind="expectation")
    assert first is not None
    problems = after_first(ctx, stream, dig_id(first.body))
    ctx.expect(not problems, f"{stream.what}: " + "; ".join(problems[:3]), kind="expectation")


def dig_id(task: Any) -> Any:
    return task.get("id") if isinstance(task, dict) else None


@check_task_first.fault
def stream_without_task(ref: A2AReference) -> None:
    """A streamed Task answer leaves the Task out: it begins with the first update."""
    @replaces(ref.open_stream)
    def open_stream(original: Any, first: list[Any], task_id: Any) -> Any:
        return original(first[1:] if task_id and len(first) > 1 else first, task_id)


@requirement(id="A2A-STREAM-MESSAGE-ONLY", level="MUST", optional=offers.STREAMING,
             title="A streamed Message answer is exactly one Message, and the stream closes",
             source=docs.spec("the stream MUST contain exactly one `Message` object and then close "
                              "immediately", after="#### 3.1.2"),
             applies=streaming)
def check_message_only(ctx: CheckContext) -> None:
    """Driven to the message outcome (control, or scenarios.message); a Task answer leaves it
    untested (section 3.1.2: the agent MAY answer either)."""
    client = A2AClient(ctx)
    stream = send_stream(client, "message")
    expect_stream(ctx, stream)
    if not any(e.kind == "message" for e in stream.events):
        raise Untested(f"{stream.what}: the agent streamed no Message ({stream.describe()})", "outcome")
    ctx.expect(stream.closed, f"{stream.what}: the stream was not closed after its Message: "
                              f"{stream.describe()}", kind="expectation")
    ctx.expect([e.kind for e in stream.events] == ["message"],
               f"{stream.what}: a Message stream holds {len(stream.events)} events, not exactly one Message: "
               f"{stream.describe()}", kind="expectation")


@check_message_only.fault
def message_stream_goes_on(ref: A2AReference) -> None:
    """A streamed Message answer is followed by a second copy of the Message."""
    @replaces(ref.open_stream)
    def open_stream(original: Any, first: list[Any], task_id: Any) -> Any:
        return original(first * 2 if task_id is None else first, task_id)


def expect_closed_at_terminal(ctx: CheckContext, stream: Stream) -> None:
    """The server closed ``stream``, and it ends with the task's terminal state (sections
    3.1.2 and 3.1.6 say it of both kinds of stream)."""
    with ctx.subcheck("closed"):
        ctx.expect(stream.closed, f"{stream.what}: the server did not close the stream: {stream.describe()}",
                   kind="no_answer")
    with ctx.subcheck("terminal"):
        problems = terminal_problems(stream)
        ctx.expect(not problems, f"{stream.what}: " + "; ".join(problems), kind="expectation")


@requirement(id="A2A-STREAM-CLOSE-TERMINAL", level="MUST", optional=offers.STREAMING,
             title="A streamed task's stream carries its terminal state and the server closes it there "
                   "(only a final Task snapshot may follow)",
             source=docs.spec("The stream MUST close when the task reaches a terminal state",
                              after="#### 3.1.2"),
             applies=streaming)
def check_close_terminal(ctx: CheckContext) -> None:
    """Section 11.7 "MAY optionally resend a final `Task` snapshot before closing". A stream
    still open at the kit's deadline is a finding quoting what arrived."""
    client = A2AClient(ctx)
    stream = task_stream(client)
    states = [e.state for e in stream.events if e.state]
    if stream.closed and states and states[-1] in docs.interrupted_states() \
            and not any(s in docs.terminal_states() for s in states):
        raise Untested(f"{stream.what}: the agent took the task to {states[-1]}, where section 11.7 closes "
                       "the stream (\"until the task reaches a terminal or interrupted state\"): no terminal "
                       f"state to judge ({stream.describe()})", "outcome")
    expect_closed_at_terminal(ctx, stream)


@check_close_terminal.fault
def stream_goes_on_after_terminal(ref: A2AReference) -> None:
    """After the terminal status update, the stream sends the task's status update again."""
    @replaces(ref.open_stream)
    def open_stream(original: Any, first: list[Any], task_id: Any) -> Any:
        ends = [e for e in first if "statusUpdate" in e]
        return original(first + ends[-1:] if task_id else first, task_id)


@requirement(id="A2A-STREAM-ORDER", level="MUST", optional=offers.STREAMING,
             title="A streamed task's updates are every change in the order it happened: the last state is "
                   "the one GetTask shows afterwards, and the artifact updates build its artifacts",
             source=docs.spec("All implementations MUST deliver events in the order they were generated",
                              after="#### 3.5.2"),
             faults=["streamed_task_left_working"],
             applies=streaming)
def check_order(ctx: CheckContext) -> None:
    """``append`` adds to the artifact of that id sent before, ``lastChunk`` ends it (the
    proto's TaskArtifactUpdateEvent): applied in the order streamed they must build what
    GetTask shows. Section 11.7's SHOULD ("SHOULD avoid re-ordering events") is this MUST's."""
    client = A2AClient(ctx)
    stream = task_stream(client)
    first = stream.events[0].body if stream.events else None
    if not isinstance(dig_id(first), str):
        ctx.fail(f"{stream.what}: no Task first to follow: {stream.describe()}", kind="expectation")
    against_task(ctx, client, stream, str(dig_id(first)))


@check_order.fault
def stream_drops_artifact(ref: A2AReference) -> None:
    """A streamed task's artifact updates are not sent (GetTask shows the artifact)."""
    @replaces(ref.open_stream)
    def open_stream(original: Any, first: list[Any], task_id: Any) -> Any:
        return original([e for e in first if "artifactUpdate" not in e], task_id)


# -- SubscribeToTask --------------------------------------------------------------------------
@requirement(id="A2A-SUB-ROUTE", level="MUST", optional=offers.STREAMING,
             title="SubscribeToTask of a working task is answered with an event stream (JSON-RPC method; "
                   "HTTP+JSON GET /tasks/{{id}}:subscribe, or POST as section 5.3's table says)",
             source=docs.spec("**Response:** SSE stream (same format as `SendStreamingMessage`)",
                              after="#### 9.4.6"),
             applies=streaming)
def check_sub_route(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    _task, stream = watched(client)
    if not stream.closed and stream.events:
        return  # a stream of the working task, open as it should be while nothing changes it
    expect_stream(ctx, stream)
    ctx.expect(bool(stream.events), f"{stream.what}: the stream holds no event: {stream.describe()}",
               kind="malformed_answer")


@check_sub_route.fault
def subscribe_unrouted(ref: A2AReference) -> None:
    """SubscribeToTask has no route or method: 404 over HTTP+JSON (both verbs), MethodNotFound over
    JSON-RPC."""
    @replaces(ref.op_SubscribeToTask)
    def refuse(original: Any, params: Any, caller: str) -> Any:
        raise Refusal("MethodNotFoundError", "no such method", status=404)


@requirement(id="A2A-SUB-TASK-FIRST", level="MUST", optional=offers.STREAMING,
             title="A subscription's first event is the Task as it stands (its id, its current state)",
             source=docs.spec("The operation MUST return a `Task` object as the first event in the stream",
                              after="#### 3.1.6"),
             applies=streaming)
def check_sub_task_first(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    task, stream = watched(client)
    first = stream.events[0] if stream.events else None
    ctx.expect(first is not None and first.kind == "task" and dig_id(first.body) == task["id"],
               f"{stream.what}: the first event is not the Task {task['id']}: {stream.describe()}",
               kind="expectation")
    assert first is not None
    # a submitted task is one the agent takes up on its own: by the subscription it may be further on
    moved_on = state(task) == docs.state_named("submitted") and first.state in docs.task_states()
    ctx.expect(first.state == state(task) or moved_on,
               f"{stream.what}: the Task first shows {first.state!r}, while the task is {state(task)!r}",
               kind="expectation")


@check_sub_task_first.fault
def subscription_without_task(ref: A2AReference) -> None:
    """A subscription begins with a status update instead of the Task."""
    @replaces(ref.open_stream)
    def open_stream(original: Any, first: list[Any], task_id: Any) -> Any:
        if first and "task" in first[0] and len(first) == 1:
            task = first[0]["task"]
            first = [{"statusUpdate": {"taskId": task["id"], "contextId": task["contextId"],
                                       "status": task["status"]}}]
        return original(first, task_id)


@requirement(id="A2A-SUB-UPDATES", level="MUST", optional=offers.STREAMING,
             title="A subscription carries every change of the task in order: its last state and its "
                   "artifact updates are what GetTask shows afterwards",
             source=docs.spec("Stream of [`TaskStatusUpdateEvent`](#421-taskstatusupdateevent) and",
                              after="#### 3.1.6"),
             needs=("control",),
             applies=streaming)
def check_sub_updates(ctx: CheckContext) -> None:
    """The official TCK passes a server that drops the updates after a subscription; here the
    agent works the task while the kit is subscribed, and the stream is judged against GetTask
    (section 3.5.2: "deliver events in the order they were generated")."""
    client = A2AClient(ctx)
    task, stream = watched(client)
    with ctx.subcheck("updates"):
        ctx.expect(any(e.kind in UPDATES for e in stream.events),
                   f"{stream.what}: the task changed while subscribed and no update was streamed: "
                   f"{stream.describe()}", kind="expectation")
    with ctx.subcheck("against GetTask"):
        against_task(ctx, client, stream, task["id"])


@check_sub_updates.fault
def subscription_drops_updates(ref: A2AReference) -> None:
    """A subscription streams the Task and then nothing of what changes (it closes at the end)."""
    @replaces(ref.open_stream)
    def open_stream(original: Any, first: list[Any], task_id: Any) -> Any:
        stream = original(first, task_id)
        hear = stream.hear

        def only_the_end(task: Any, event: Any) -> None:
            held = len(stream.queue)
            hear(task, event)
            del stream.queue[held:]
        rehear(ref, stream, only_the_end)
        return stream


@check_sub_updates.fault
def subscription_chunks_reordered(ref: A2AReference) -> None:
    """An artifact's first chunk is published after the chunk appended to it."""
    held: list[Any] = []

    @replaces(ref.publish)
    def publish(original: Any, task: Any, event: Any) -> None:
        update = event.get("artifactUpdate") or {}
        if update and not update.get("append") and not update.get("lastChunk"):
            held.append(event)
            return
        original(task, event)
        while held:
            original(task, held.pop(0))


@requirement(id="A2A-SUB-CLOSE-TERMINAL", level="MUST", optional=offers.STREAMING,
             title="A subscription carries the task's terminal state and the server closes it there",
             source=docs.spec("The stream MUST terminate when the task reaches a terminal state",
                              after="#### 3.1.6"),
             needs=("control",),
             applies=streaming)
def check_sub_close(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    _task, stream = watched(client)
    expect_closed_at_terminal(ctx, stream)


@check_sub_close.fault
def subscription_goes_on_after_terminal(ref: A2AReference) -> None:
    """After the terminal state, a subscription sends an artifact update again."""
    @replaces(ref.open_stream)
    def open_stream(original: Any, first: list[Any], task_id: Any) -> Any:
        stream = original(first, task_id)
        hear = stream.hear
        seen: list[Any] = []

        def again(task: Any, event: Any) -> None:
            hear(task, event)
            seen.extend(e for e in [event] if "artifactUpdate" in e)
            if not stream.open and seen:
                stream.queue.append(seen.pop())
        rehear(ref, stream, again)
        return stream


@requirement(id="A2A-SUB-TERMINAL-REFUSED", level="MUST", optional=offers.STREAMING,
             title="SubscribeToTask of a task in a terminal state gets UnsupportedOperationError, not a "
                   "stream",
             source=docs.spec("The operation is attempted on a task that is in a terminal state",
                              after="#### 3.1.6"),
             applies=streaming)
def check_sub_terminal(ctx: CheckContext) -> None:
    """A finished task of each terminal state the agent can be driven to (polled to its end
    where the agent answers before finishing), subscribed to; untested when none ended."""
    client = A2AClient(ctx)
    judged, skipped = 0, []
    for outcome in ("completed", "failed", "rejected", "canceled"):
        try:
            task = finished(client, outcome)
        except Untested as exc:
            skipped.append(f"{outcome}: {exc}")
            continue
        judged += 1
        with ctx.subcheck(str(state(task))):
            stream = subscription(client, task["id"], f"SubscribeToTask of a {state(task)} task")
            reply = stream.reply
            ctx.expect(reply is not None, f"{stream.what}: streamed, not refused: {stream.describe()}",
                       kind="accepted_invalid")
            assert reply is not None
            expect_carries(ctx, reply, UNSUPPORTED, stream.what)
    if not judged:
        raise Untested("no task of the check's reached a terminal state: " + "; ".join(skipped), "outcome")


@check_sub_terminal.fault
def subscription_of_terminal_task_served(ref: A2AReference) -> None:
    """SubscribeToTask of a completed task streams the Task and closes."""
    @replaces(ref.op_SubscribeToTask)
    def subscribe(original: Any, params: Any, caller: str) -> Any:
        task = ref.owned_task(params.get("id"), caller)
        if task["status"]["state"] in docs.terminal_states():
            return ref.open_stream([{"task": ref.view(task)}], None)
        return original(params, caller)


@requirement(id="A2A-SUB-SCOPED", level="MUST", optional=offers.STREAMING,
             title="SubscribeToTask of another caller's task is refused, never streamed",
             source=docs.spec("Task-related operations (Cancel, Subscribe, Push Notification Config)",
                              after="### 13.1"),
             needs=("other",),
             applies=(streaming, secured))  # without security every caller is one: no other caller's task
def check_sub_scoped(ctx: CheckContext) -> None:
    """The agent's authorization model decides how (TaskNotFoundError, or an authorization
    error): any refusal passes; a stream showing the task does not."""
    client = A2AClient(ctx)
    ctx.token("full")
    ctx.token("other")
    task = working_task(client)
    if ctx.run.control_path:  # a subscription served by mistake then ends at once, with the task
        ctx.control("progress_on_subscribe", id=task["id"])
    request_id = f"conformance-{uuid.uuid4()}"
    reply = client.call("SubscribeToTask", {"id": task["id"]}, caller="other", timeout=STREAM_TIMEOUT,
                        request_id=request_id)
    if client.binding.kind == REST and not reached(ctx, reply):
        reply = post_verb(client, "SubscribeToTask").call("SubscribeToTask", {"id": task["id"]},
                                                         caller="other", timeout=STREAM_TIMEOUT)
    shown = task["id"] in reply.http.text and (reply.ok or is_event_stream(reply.http))
    ctx.expect(not shown, f"SubscribeToTask of another caller's task {task['id']}: streamed to the other "
                          f"caller ({describe(reply)})", kind="auth_not_enforced")
    ctx.expect(not reply.ok or a2a_error(ctx, reply) is not None,
               f"SubscribeToTask of another caller's task: served: {describe(reply)}",
               kind="auth_not_enforced")


@check_sub_scoped.fault
def subscription_of_any_owner(ref: A2AReference) -> None:
    """SubscribeToTask finds a task whoever owns it."""
    @replaces(ref.op_SubscribeToTask)
    def subscribe(original: Any, params: Any, caller: str) -> Any:
        owner = ref.owners.get(params.get("id"))
        return original(params, owner or caller)


@requirement(id="A2A-SUB-BROADCAST", level="MUST", optional=offers.STREAMING,
             title="Two subscriptions open at once to one task both get every change, the same events in "
                   "the same order",
             source=docs.spec("Events MUST be broadcast to all active streams for that task",
                              after="#### 3.5.2"),
             applies=streaming)
def check_broadcast(ctx: CheckContext) -> None:
    """Two subscriptions of a working task, each read in a thread of its own; the change
    comes from control (the agent works the task once both are open) or, without control,
    from the protocol: a CancelTask once both have had time to open (``SETTLE``). Only streams
    whose Task first shows the task not yet ended are compared (submitted or working: the agent
    may have moved it on since the answer): one opened after the change saw less, as it may."""
    client = A2AClient(ctx)
    task = working_task(client)
    controlled = bool(ctx.run.control_path)
    if controlled:
        ctx.control("progress_on_subscribe", id=task["id"], streams=2)
    streams, crashed = two_subscriptions(client, task["id"], controlled)
    if crashed:
        raise crashed[0]
    before = [s for s in streams  # the task still in progress (submitted or working: it may have moved on)
              if s.events and s.events[0].kind == "task" and s.events[0].state not in docs.terminal_states()]
    for stream in streams:
        with ctx.subcheck(stream.what):
            expect_stream(ctx, stream)
            ctx.expect(stream.closed, f"{stream.what}: the server did not close the stream once the task "
                                      f"ended: {stream.describe()}", kind="no_answer")
    if len(before) < 2:
        raise Untested(f"of two subscriptions, {len(before)} began while the task was still working "
                       f"({'; '.join(s.describe() for s in streams)})", "other")
    first, second = ([json.dumps(e.payload, sort_keys=True) for e in s.events[1:]] for s in before)
    with ctx.subcheck("the same events"):
        ctx.expect(bool(first) and first == second,
                   f"two subscriptions of task {task['id']} got different events: {len(first)} after the "
                   f"first's Task ({before[0].describe()}), {len(second)} after the second's "
                   f"({before[1].describe()})", kind="expectation")


SETTLE = 1.0  # seconds the subscriptions have to open before a live run's CancelTask


def two_subscriptions(client: A2AClient, task_id: str,
                      controlled: bool) -> tuple[list[Stream], list[BaseException]]:
    """Two subscriptions of ``task_id`` read at once (each in a thread); without control, a
    CancelTask is the change they must both see."""
    got: dict[str, Stream] = {}
    crashed: list[BaseException] = []

    def follow(name: str) -> None:
        try:
            got[name] = subscription(client, task_id, f"SubscribeToTask ({name} of two)")
        except BaseException as exc:  # noqa: BLE001 - raised again in the check's own thread
            crashed.append(exc)

    threads = [threading.Thread(target=follow, args=(name,), daemon=True) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    if not controlled:
        time.sleep(SETTLE)
        canceled = client.call("CancelTask", {"id": task_id})
        if not canceled.ok:
            for thread in threads:
                thread.join(STREAM_TIMEOUT + 5)
            raise Untested(f"CancelTask of the working task {task_id}, the change both subscriptions should "
                           f"see, was refused: {describe(canceled)}", "outcome")
    for thread in threads:
        thread.join(STREAM_TIMEOUT + 5)
    return [got[name] for name in ("first", "second") if name in got], crashed


@check_broadcast.fault
def broadcast_to_first_only(ref: A2AReference) -> None:
    """Only the first open subscription of a task hears its changes; a second gets the Task and
    then, at the end, nothing."""
    listening: set[str] = set()

    @replaces(ref.open_stream)
    def open_stream(original: Any, first: list[Any], task_id: Any) -> Any:
        stream = original(first, task_id)
        if task_id is None or task_id not in listening:
            listening.add(task_id)
            return stream
        hear = stream.hear

        def only_the_end(task: Any, event: Any) -> None:
            held = len(stream.queue)
            hear(task, event)
            del stream.queue[held:]
        rehear(ref, stream, only_the_end)
        return stream


@requirement(id="A2A-STREAM-AUTH-REQUIRED-OPEN", level="SHOULD", optional=offers.STREAMING,
             title="A streamed task that goes to auth-required keeps its stream open: once the credential "
                   "arrives out of band, the same stream carries the rest",
             source=docs.spec("the agent SHOULD maintain any active response streams", after="#### 7.6.1"),
             needs=("control",),
             applies=streaming)
def check_auth_required_open(ctx: CheckContext) -> None:
    """SendStreamingMessage driven to auth-required, read in a thread; the kit finds the task
    (ListTasks, by the message it sent), control gives the agent the credential out of band,
    and the stream must go on to the task's end. Section 11.7 lets a stream close at an
    interrupted state, so this is the SHOULD of 7.6.1, not a MUST."""
    client = A2AClient(ctx)
    if not ctx.run.control_path:
        ctx.needs_control("a credential the agent receives out of band (section 7.6.1)")
    message = driven(client, "auth_required")
    got: dict[str, Any] = {}

    def follow() -> None:
        try:
            got["stream"] = open_stream(client, "SendStreamingMessage", {"message": message},
                                        "SendStreamingMessage (auth_required)")
        except BaseException as exc:  # noqa: BLE001 - raised again in the check's own thread
            got["crash"] = exc

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    task_id = waiting_task(client, message["messageId"], thread)
    if task_id is not None:
        ctx.control("authorize", id=task_id)
    thread.join(STREAM_TIMEOUT + 5)
    if "crash" in got:
        raise got["crash"]
    stream: Stream = got["stream"]
    expect_stream(ctx, stream)
    waiting = docs.state_named("auth_required")
    if task_id is None:  # a ListTasks the agent refuses is A2A-LIST-RESPONSE's: blocked in its name
        client.look("ListTasks", {"status": waiting}, f"ListTasks of the tasks in {waiting}")
    at = next((n for n, e in enumerate(stream.events) if e.state == waiting), None)
    if task_id is None or at is None:
        raise Untested(f"the agent took no streamed task to {waiting} ({stream.describe()})", "outcome")
    later = [e.state for e in stream.events[at + 1:] if e.state]
    ctx.expect(any(s in docs.terminal_states() for s in later),
               f"{stream.what}: the stream ended at {waiting}; once the credential arrived the task went on "
               f"without it (states streamed after it: {later or 'none'}): {stream.describe()}",
               kind="expectation")


def waiting_task(client: A2AClient, message_id: str, thread: threading.Thread) -> str | None:
    """The id of the task holding ``message_id`` once the agent set it to auth-required (ListTasks
    of that state, a few times while the stream opens); None if it never does."""
    waiting = docs.state_named("auth_required")
    for _ in range(40):
        reply = client.call("ListTasks", {"status": waiting})
        if not reply.ok:
            return None
        tasks = reply.result.get("tasks") if isinstance(reply.result, dict) else None
        for task in tasks if isinstance(tasks, list) else []:
            history = task.get("history") if isinstance(task, dict) else None
            if any(isinstance(m, dict) and m.get("messageId") == message_id for m in history or []):
                return str(task.get("id"))
        if not thread.is_alive() and tasks is not None:
            return None
        time.sleep(0.05)
    return None


@check_auth_required_open.fault
def auth_required_closes_stream(ref: A2AReference) -> None:
    """A stream closes when its task goes to auth-required (the credential comes later)."""
    @replaces(ref.stream_ends)
    def ends(original: Any) -> tuple[str, ...]:
        return (*original(), docs.state_named("auth_required"))


# -- variants: what the documents allow that the reference does not choose --------------------
@variant
def streaming_declared_off(ref: A2AReference) -> None:
    """The card declares capabilities.streaming false, and both streaming methods are refused
    with UnsupportedOperationError (the rows above are then not applicable; A2A-CAP-STREAMING-OFF
    and the generated-input rows judge the refusals).

    allowed by: specs/a2a/specification.md section 3.3.4 "If `AgentCard.capabilities.streaming` is
    `false` or not present, attempts to use `SendStreamingMessage` or `SubscribeToTask` operations
    **MUST** return [`UnsupportedOperationError`]" (streaming is a capability an agent declares)"""
    ref.config = dataclasses.replace(ref.config, streaming=False)


@variant
def stream_final_task_snapshot(ref: A2AReference) -> None:
    """A task's stream resends the Task as it ended before it closes.

    allowed by: specs/a2a/specification.md section 11.7 "Implementations SHOULD avoid re-ordering
    events and MAY optionally resend a final `Task` snapshot before closing\""""
    @replaces(ref.sse)
    def sse(original: Any, stream: Any, wrap: Any) -> Any:
        if stream.task_id is None:
            return original(stream, wrap)

        async def with_snapshot(idle: float) -> Any:
            async for event in type(stream).events(stream, idle):
                yield event
            yield {"task": ref.view(ref.tasks[stream.task_id])}
        stream.events = with_snapshot
        return original(stream, wrap)


@variant
def sse_framing(ref: A2AReference) -> None:
    """Each event is framed as the SSE standard allows: a comment first, ``event`` and ``id``
    fields, the JSON spread over several ``data`` lines, CRLF line ends.

    allowed by: specs/a2a/specification.md section 11.7 "REST streaming uses Server-Sent Events
    with the `data` field containing JSON serializations of the protocol data objects" (the
    other fields and the framing are the SSE standard's: "data" lines join with a line feed)"""
    numbers = iter(range(1, 1 << 30))

    @replaces(ref.sse_event)
    def sse_event(original: Any, payload: Any) -> str:
        lines = json.dumps(payload, indent=1).split("\n")
        return (": conformance\r\nevent: message\r\nid: " + str(next(numbers)) + "\r\n"
                + "".join(f"data: {line}\r\n" for line in lines) + "\r\n")
