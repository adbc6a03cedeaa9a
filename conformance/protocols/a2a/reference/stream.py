"""The reference's streaming (sections 3.1.2, 3.1.6, 3.5.2; SSE over JSON-RPC, section 9.4.2,
and HTTP+JSON, section 11.7): a mixin of A2AReference.

A streamed answer is an ``EventStream``: the events the operation produced while it ran (the
Task or Message first), then, while the task is not in a terminal or interrupted state, what
``publish()`` tells its listener. ``jsonrpc()`` and ``rest()`` answer it as
``text/event-stream``, one event per SSE ``data:`` line: a JSON-RPC response envelope over
JSON-RPC, a StreamResponse over HTTP+JSON. The stream closes after the event that takes the
task to a terminal or interrupted state (section 11.7: "until the task reaches a terminal or
interrupted state, at which point the stream closes"), but auth-required, where section
7.6.1 asks the agent to keep it open (control ``authorize`` is the credential arriving out
of band: the agent completes the task), or after ``stream_idle`` seconds with
nothing to send: a stream waiting for a change nothing makes would never end, and a check
reading it whole would wait with it.

Control ``progress_on_subscribe`` (``id``, ``streams``) makes the next subscriptions of a
working task (one, or ``streams`` open at once) see the agent work it: a status update with a
message, an artifact in two chunks (the second with ``append``, ``lastChunk``), then
completed."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.reference.host import Host

STREAM_IDLE = 5.0  # seconds a reference stream waits for a change before it closes


def copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def event_state(event: dict[str, Any]) -> Any:
    """The task state a StreamResponse carries (a Task's or a status update's), else None."""
    for member in ("task", "statusUpdate"):
        status = event.get(member, {}).get("status") if isinstance(event.get(member), dict) else None
        if isinstance(status, dict):
            return status.get("state")
    return None


class EventStream:
    """A streamed answer: the events so far and, while ``open``, those ``hear`` adds. Read
    by SSE in an event loop (``events``) or by gRPC in a thread of its pool (iterating it);
    ``lock`` guards the queue for the latter (a fault holds it to change the queue at once
    with ``hear``)."""

    def __init__(self, first: list[dict[str, Any]], task_id: str | None, ends: tuple[str, ...],
                 idle: float = STREAM_IDLE, done: Callable[[], None] = lambda: None) -> None:
        self.queue = [copy(e) for e in first]
        self.task_id = task_id
        self.ends = ends
        self.open = task_id is not None and not any(event_state(e) in self.ends for e in first)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.wake: asyncio.Event | None = None
        self.lock = threading.Condition(threading.RLock())
        self.idle, self.done = idle, done  # how long a thread's reader waits; what ends the listening

    def hear(self, task: dict[str, Any], event: dict[str, Any]) -> None:
        """A listener of ``publish()``: a change of this stream's task."""
        with self.lock:
            if not self.open or task.get("id") != self.task_id:
                return
            self.queue.append(copy(event))
            if event_state(event) in self.ends:
                self.open = False
            self.lock.notify_all()
        if self.loop is not None and self.wake is not None:
            self.loop.call_soon_threadsafe(self.wake.set)

    def stop(self) -> None:
        """The reader went away (a gRPC call cancelled, its deadline passed): a thread waiting
        for the next event ends now, not ``idle`` seconds later."""
        with self.lock:
            self.open = False
            self.queue.clear()
            self.lock.notify_all()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The events read in a plain thread (the gRPC binding's server stream): those queued,
        then each one ``hear`` adds, until the stream closes or ``idle`` seconds pass with
        nothing to send (as ``events``)."""
        try:
            while True:
                with self.lock:
                    if not self.queue and self.open and \
                            not self.lock.wait_for(lambda: bool(self.queue) or not self.open, self.idle):
                        self.open = False
                    if not self.queue and not self.open:
                        return
                    event = self.queue.pop(0)
                yield event
        finally:
            self.done()

    async def events(self, idle: float) -> AsyncIterator[dict[str, Any]]:
        self.loop, self.wake = asyncio.get_running_loop(), asyncio.Event()
        while True:
            while self.queue:
                yield self.queue.pop(0)
            if not self.open:
                return
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), idle)
            except TimeoutError:
                self.open = False


class StreamParts(Host):
    stream_idle = STREAM_IDLE

    def reset_part(self) -> None:
        """This part's share of the world as it starts (A2AReference.reset)."""
        self.on_subscribe: dict[str, int] = {}  # task id -> subscriptions awaited
        self.subscribed: dict[str, int] = {}  # task id -> subscriptions so far

    # -- the operations --------------------------------------------------------------------
    def streams_served(self) -> None:
        """Section 3.3.4: refused unless the card declares capabilities.streaming."""
        if not self.config.streaming:
            raise Refusal("UnsupportedOperationError", "streaming is not supported (capabilities.streaming)")

    def op_SendStreamingMessage(self, params: dict[str, Any], caller: str) -> Any:
        """SendMessage, answered as the Task as it starts (or the Message) and then each change."""
        self.streams_served()
        heard: list[tuple[str, dict[str, Any]]] = []

        def listen(task: dict[str, Any], event: dict[str, Any]) -> None:
            heard.append((task["id"], copy(event)))

        ref: Any = self
        ref.listeners.append(listen)
        try:
            config = dict(params.get("configuration") or {})
            result = ref.op_SendMessage({**params, "configuration": {**config, "returnImmediately": True}},
                                        caller)
        finally:
            ref.listeners.remove(listen)
        if "message" in result:
            return self.open_stream([result], None)
        task = result["task"]
        mine = [event for task_id, event in heard if task_id == task["id"]]
        started = [i for i, e in enumerate(mine)
                   if (e.get("statusUpdate") or {}).get("status") == task["status"]]
        return self.open_stream([{"task": task}, *mine[started[-1] + 1 if started else 0:]], task["id"])

    def op_SubscribeToTask(self, params: dict[str, Any], caller: str) -> Any:
        """The task as it stands, then each change (section 3.1.6); refused for a terminal task."""
        self.streams_served()
        ref: Any = self
        task = ref.owned_task(params.get("id"), caller)
        if task["status"]["state"] in docs.terminal_states():
            raise Refusal("UnsupportedOperationError", f"task {task['id']} is {task['status']['state']}: "
                                                       "there is nothing to subscribe to")
        stream = self.open_stream([{"task": ref.view(task)}], task["id"])
        self.subscribed[task["id"]] = self.subscribed.get(task["id"], 0) + 1
        if self.subscribed[task["id"]] >= self.on_subscribe.get(task["id"], 1 << 30):
            del self.on_subscribe[task["id"]]
            self.progress(task)
        return stream

    def stream_ends(self) -> tuple[str, ...]:
        """The states a stream closes at: terminal, and interrupted (section 11.7) but
        auth-required, where section 7.6.1 asks that streams stay open for the credential."""
        return (*docs.terminal_states(),
                *(s for s in docs.interrupted_states() if s != docs.state_named("auth_required")))

    def open_stream(self, first: list[dict[str, Any]], task_id: str | None) -> EventStream:
        stream = EventStream(first, task_id, self.stream_ends(), self.stream_idle)
        stream.done = lambda: self.unlisten(stream)
        if stream.open:
            self.listeners.append(stream.hear)
        return stream

    def unlisten(self, stream: EventStream) -> None:
        """The stream is read to its end: its listener (a fault's in its place) goes."""
        if stream.hear in self.listeners:
            self.listeners.remove(stream.hear)

    def progress(self, task: dict[str, Any]) -> None:
        """The agent works a task to its end: a working status with a message, an artifact
        in two chunks (TaskArtifactUpdateEvent.append and last_chunk), completed."""
        ref: Any = self
        ref.set_status(task, "working", "working on it")
        text = ref.text_of(task["history"][-1]) if task.get("history") else ""
        chunks = [text[:len(text) // 2] or "(", text[len(text) // 2:] or ")"]
        artifact: dict[str, Any] = {"artifactId": ref.new_id("artifact"), "name": "echo", "parts": []}
        task.setdefault("artifacts", []).append(artifact)
        for i, chunk in enumerate(chunks):
            artifact["parts"].append({"text": chunk})
            ref.publish(task, {"artifactUpdate": {
                "taskId": task["id"], "contextId": task["contextId"],
                "artifact": {"artifactId": artifact["artifactId"], "name": "echo",
                             "parts": [{"text": chunk}]},
                "append": i > 0, "lastChunk": i == len(chunks) - 1}})
        ref.set_status(task, "completed")

    def control_progress_on_subscribe(self, args: dict[str, Any]) -> Response:
        """Once ``streams`` (default 1) more subscriptions of task ``id`` are open, the agent
        works it to completion: each of them sees it."""
        task_id, streams = str(args.get("id")), args.get("streams", 1)
        if task_id not in self.tasks:
            return JSONResponse({"error": "no such task"}, status_code=404)
        if not isinstance(streams, int) or isinstance(streams, bool) or streams < 1:
            return JSONResponse({"error": "streams must be a positive integer"}, status_code=400)
        self.on_subscribe[task_id] = self.subscribed.get(task_id, 0) + streams
        return JSONResponse({"ok": True})

    def control_authorize(self, args: dict[str, Any]) -> Response:
        """The credential a task in auth-required waits for arrives out of band (section 7.6.1):
        the agent goes on and completes the task."""
        ref: Any = self
        task = ref.tasks.get(str(args.get("id")))
        if task is None or task["status"]["state"] != docs.state_named("auth_required"):
            return JSONResponse({"error": "no such task waiting for authorization"}, status_code=404)
        ref.complete(task, ref.text_of(task["history"][-1]) if task.get("history") else "")
        return JSONResponse({"ok": True})

    # -- the wire --------------------------------------------------------------------------
    def sse(self, stream: EventStream, wrap: Callable[[dict[str, Any]], Any]) -> Response:
        """An EventStream as text/event-stream: each event ``wrap``ped (a JSON-RPC envelope)."""
        async def body() -> AsyncIterator[str]:
            try:
                async for event in stream.events(self.stream_idle):
                    yield self.sse_event(wrap(event))
            finally:
                self.unlisten(stream)
        return StreamingResponse(body(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    def sse_event(self, payload: Any) -> str:
        """One server-sent event whose data is ``payload`` as JSON."""
        return f"data: {json.dumps(payload)}\n\n"
