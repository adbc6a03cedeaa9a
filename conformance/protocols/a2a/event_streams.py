"""Streams a check opens and reads (sections 3.1.2, 9.4.2, 11.7): server-sent events read whole
within the kit's limits, each event a whole answer of the binding, and what a stream's updates
build compared with the task GetTask shows."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from conformance.documents.schemas import schema_errors
from conformance.kit.check import CheckContext, Untested
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import GRPC, REST, describe, kind_of
from conformance.protocols.a2a.client import A2AClient, state
from conformance.protocols.a2a.driving import driven, task_from
from conformance.protocols.a2a.routes import STREAM_TIMEOUT, post_verb, reached
from conformance.transport.binding import Reply, is_event_stream
from conformance.transport.http import TransportFailure, json_excerpt, parse_json
from conformance.transport.sse import sse_events

PAYLOADS = ("task", "message", "statusUpdate", "artifactUpdate")  # StreamResponse's oneof, read below
UPDATES = ("statusUpdate", "artifactUpdate")


# -- reading a stream -----------------------------------------------------------------------
@dataclass
class Event:
    """One server-sent event: its data, the JSON it holds, and the StreamResponse it carries
    (over JSON-RPC the envelope's ``result``)."""

    data: str
    value: Any = None
    payload: Any = None
    problem: str = ""  # why the event is not a whole answer of the binding

    @property
    def kind(self) -> str | None:
        """The StreamResponse member the event holds (None unless exactly one)."""
        held = [k for k in PAYLOADS if isinstance(self.payload, dict) and k in self.payload]
        return held[0] if len(held) == 1 else None

    @property
    def body(self) -> Any:
        return self.payload.get(self.kind) if self.kind else None

    @property
    def state(self) -> Any:
        return state(self.body) if self.kind in ("task", "statusUpdate") else None


@dataclass
class Stream:
    """A streamed answer as read: the reply (None where reading was cut), its events, and
    whether the server closed it within the kit's limits (``cut`` says why not)."""

    what: str
    reply: Reply | None
    events: list[Event] = field(default_factory=list)
    cut: str = ""
    request_id: Any = None

    @property
    def closed(self) -> bool:
        return not self.cut

    @property
    def is_stream(self) -> bool:
        return self.reply is None or streamed(self.reply)

    def describe(self) -> str:
        """A short account quoting what arrived."""
        kinds = ", ".join(e.kind or "?" for e in self.events[:12]) or "no event"
        head = describe(self.reply) if self.reply is not None and not self.is_stream else \
            f"{len(self.events)} events ({kinds})"
        first = f"; first: {json_excerpt(self.events[0].value)}" if self.events else ""
        return head + (f"; not closed: {self.cut}" if self.cut else "") + first


def streamed(reply: Reply) -> bool:
    """Whether ``reply`` is a stream as its binding gives one: a gRPC server stream ended with
    status OK (section 10's ``stream StreamResponse``), else HTTP 200 with text/event-stream."""
    if isinstance(getattr(reply, "events", None), list):
        return reply.ok
    return reply.status == 200 and is_event_stream(reply.http)


def reply_events(reply: Reply, binding_kind: str, request_id: Any) -> list[Event]:
    """The events of a streamed answer whatever its binding: each message of a gRPC server
    stream (a StreamResponse as ProtoJSON: the binding's whole answer), else the SSE events."""
    messages = getattr(reply, "events", None)
    if isinstance(messages, list):
        return [Event(json.dumps(m), m, m) for m in messages]
    return read_events(reply.http.text, binding_kind, request_id) if is_event_stream(reply.http) else []


def read_events(text: str, binding_kind: str, request_id: Any) -> list[Event]:
    out = []
    for data in sse_events(text):
        value, error = parse_json(data.encode())
        event = Event(data, value)
        if error:
            event.problem = f"its data is not JSON ({error}): {data[:120]!r}"
        elif binding_kind != REST:
            env = value if isinstance(value, dict) else {}
            if env.get("jsonrpc") != "2.0" or env.get("id") != request_id or "result" not in env:
                event.problem = (f"not a JSON-RPC response to the request (jsonrpc \"2.0\", id "
                                 f"{json.dumps(request_id)}, result): {json_excerpt(value)}")
            event.payload = env.get("result")
        else:
            event.payload = value
        out.append(event)
    return out


def open_stream(client: A2AClient, method: str, params: dict[str, Any], what: str,
                by_post: bool = False) -> Stream:
    """``method`` called and its answer read as a stream (cut at the kit's limits: a finding
    there, never an exception of the check)."""
    ctx = client.ctx
    request_id = f"conformance-{uuid.uuid4()}"
    caller = post_verb(client, method) if by_post else client
    try:
        reply = caller.call(method, params, timeout=STREAM_TIMEOUT, request_id=request_id)
    except TransportFailure as exc:
        cut = [e for e in reversed(ctx.http.log) if e.error]  # another thread's may be later
        mine = next((e for e in cut if request_id in str(e.request.get("body") or "")),
                    cut[0] if cut else None)
        text = str(((mine.response if mine else None) or {}).get("body") or "")
        return Stream(what, None, read_events(text, client.binding.kind, request_id), str(exc), request_id)
    events = reply_events(reply, client.binding.kind, request_id)
    stopped = str(getattr(reply, "cut", "") or "")  # a gRPC stream the kit stopped reading: as one cut above
    return Stream(what, None if stopped else reply, events, stopped, request_id)


def expect_stream(ctx: CheckContext, stream: Stream) -> None:
    """A streamed answer: HTTP 200, text/event-stream; over gRPC a server stream ending OK
    (a finding otherwise)."""
    shape = "a gRPC server stream ending with status OK" if kind_of(ctx) == GRPC else \
        "HTTP 200, text/event-stream"
    ctx.expect(stream.is_stream, f"{stream.what}: not an event stream ({shape}): {stream.describe()}",
               kind="malformed_answer")


def send_stream(client: A2AClient, outcome: str = "completed") -> Stream:
    """SendStreamingMessage of a message driving the agent to ``outcome``."""
    return open_stream(client, "SendStreamingMessage", {"message": driven(client, outcome)},
                       f"SendStreamingMessage ({outcome})")


def task_stream(client: A2AClient) -> Stream:
    """A SendStreamingMessage stream the agent answered with a Task (untested on a Message)."""
    stream = send_stream(client)
    expect_stream(client.ctx, stream)
    if stream.events and stream.events[0].kind == "message" and len(stream.events) == 1:
        raise Untested(f"{stream.what}: the agent streamed a Message, not a Task (section 3.1.2 allows it)",
                       "outcome")
    return stream


# -- a task the agent keeps working, and a subscription to it ---------------------------------
def working_task(client: A2AClient) -> dict[str, Any]:
    """A task of the check's own the agent keeps working (returnImmediately, section 3.2.2)."""
    ctx = client.ctx
    with ctx.setup("a task the agent keeps working (long_running, returnImmediately)"):
        reply = client.send(driven(client, "long_running"), {"returnImmediately": True})
        task = task_from(client, reply, "SendMessage driving the agent to long_running")
    going = [docs.state_named("submitted"), docs.state_named("working")]  # on its way: the agent goes on
    if state(task) not in going:
        raise Untested(f"the agent took the task to {state(task)!r}, not {' or '.join(going)}: a "
                       "subscription needs a task the agent is still working on (scenarios.long_running in "
                       "--config)", "outcome")
    return task


def subscription(client: A2AClient, task_id: str, what: str = "SubscribeToTask") -> Stream:
    """SubscribeToTask of ``task_id``: over HTTP+JSON by the proto's GET, else (no route
    answers it) by POST, section 5.3's verb: both readings."""
    stream = open_stream(client, "SubscribeToTask", {"id": task_id}, what)
    if client.binding.kind == REST and stream.reply is not None and not reached(client.ctx, stream.reply):
        stream = open_stream(client, "SubscribeToTask", {"id": task_id}, what + " (POST)", by_post=True)
    return stream


def watched(client: A2AClient) -> tuple[dict[str, Any], Stream]:
    """A working task and a subscription to it; with the reference's control the agent works
    the task to its end while the kit is subscribed (without it the stream stays open, as it
    should, until the kit's deadline cuts it: what arrived is judged)."""
    task = working_task(client)
    if client.ctx.run.control_path:
        client.ctx.control("progress_on_subscribe", id=task["id"])
    stream = subscription(client, task["id"])
    expect_stream(client.ctx, stream)
    return task, stream


# -- judging ----------------------------------------------------------------------------------
def shape_problems(ctx: CheckContext, stream: Stream) -> list[str]:
    """What of each event is not a whole answer of the binding holding one StreamResponse."""
    schema = docs.schema(ctx.profile, "StreamResponse")
    out = []
    for n, event in enumerate(stream.events):
        if event.problem:
            out.append(f"event {n + 1}: {event.problem}")
            continue
        errors = schema_errors(schema, event.payload, limit=2)
        if errors:
            out.append(f"event {n + 1} is no StreamResponse ({'; '.join(errors)}): "
                       f"{json_excerpt(event.value)}")
    return out


def after_first(ctx: CheckContext, stream: Stream, task_id: Any) -> list[str]:
    """What follows the first event that is not an update of ``task_id`` (or a Task snapshot
    of it: section 11.7 "MAY optionally resend a final `Task` snapshot")."""
    out = []
    for n, event in enumerate(stream.events[1:], start=2):
        body = event.body if isinstance(event.body, dict) else {}
        ours = body.get("taskId" if event.kind in UPDATES else "id") == task_id
        if event.kind not in (*UPDATES, "task") or not ours:
            out.append(f"event {n} is {event.kind or 'no StreamResponse'} "
                       f"{json_excerpt(event.payload)}, not an update of task {task_id}")
    return out


def terminal_problems(stream: Stream) -> list[str]:
    """The stream reached a terminal state, and nothing but a Task snapshot follows it."""
    terminal = docs.terminal_states()
    at = next((n for n, e in enumerate(stream.events) if e.state in terminal), None)
    if at is None:
        states = [e.state for e in stream.events if e.state]
        return [f"no event shows a terminal state (states streamed: {states or 'none'})"]
    later = [e for e in stream.events[at + 1:] if e.kind != "task"]
    return [f"{len(later)} events follow the terminal state {stream.events[at].state}: "
            f"{json_excerpt(later[0].payload)}"] if later else []


def rebuilt(stream: Stream) -> tuple[dict[str, list[Any]], list[str]]:
    """The artifacts the stream's updates build, in order (``append`` adds the parts to the
    artifact of that id sent before; otherwise the parts replace it), and what breaks the
    order (an append before any chunk of its artifact, a chunk after its ``lastChunk``)."""
    built: dict[str, list[Any]] = {}
    last: set[str] = set()
    problems = []
    for event in stream.events:
        if event.kind == "task" and isinstance(event.body, dict):
            for shown in event.body.get("artifacts") or []:
                if isinstance(shown, dict) and isinstance(shown.get("artifactId"), str):
                    built[shown["artifactId"]] = list(shown.get("parts") or [])
        if event.kind != "artifactUpdate" or not isinstance(event.body, dict):
            continue
        found = event.body.get("artifact")
        artifact: dict[str, Any] = found if isinstance(found, dict) else {}
        key, parts = artifact.get("artifactId"), list(artifact.get("parts") or [])
        if not isinstance(key, str):
            continue
        if key in last:
            problems.append(f"a chunk of artifact {key} follows its lastChunk")
        if event.body.get("append") is True:
            if key not in built:
                problems.append(f"a chunk appended to artifact {key} comes before any chunk of it")
            built.setdefault(key, []).extend(parts)
        else:
            built[key] = parts
        if event.body.get("lastChunk") is True:
            last.add(key)
    return built, problems


def against_task(ctx: CheckContext, client: A2AClient, stream: Stream, task_id: str) -> None:
    """What the stream says against GetTask afterwards: its last state is the task's, and its
    artifact updates, applied in order, build each artifact the task shows."""
    reply = client.get(task_id)
    task = reply.result if reply.ok and isinstance(reply.result, dict) else None
    if task is None:
        ctx.fail(f"GetTask {task_id} after {stream.what}: {describe(reply)}", kind="rejected_valid")
    assert task is not None
    states = [e.state for e in stream.events if e.state]
    ctx.expect(bool(states) and states[-1] == state(task),
               f"{stream.what}: the last state streamed is {states[-1] if states else 'none'}, GetTask "
               f"afterwards says {state(task)!r}: an update is missing", kind="expectation")
    built, problems = rebuilt(stream)
    ctx.expect(not problems, f"{stream.what}: artifact updates out of order: {'; '.join(problems[:3])}",
               kind="expectation")
    for artifact in task.get("artifacts") or []:
        key = artifact.get("artifactId") if isinstance(artifact, dict) else None
        ctx.expect(key in built and built[key] == artifact.get("parts"),
                   f"{stream.what}: artifact {key} as GetTask shows it afterwards "
                   f"({json_excerpt(artifact.get('parts'))}) is not what the stream's updates build "
                   f"({json_excerpt(built.get(key)) if key in built else 'never streamed'})",
                   kind="expectation")
