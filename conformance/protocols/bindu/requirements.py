"""The Bindu requirement table: one requirement per testable statement of
specs/bindu/openapi.yaml, each with its level, source, check and the faults it
must catch. Method names, schemas, error codes and examples come from the spec."""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import base58

from conformance.check import CheckContext, Untested
from conformance.checks import auth, idempotency
from conformance.checks.errors import (
    error_named,
    expect_catalogued,
    expect_error,
    expect_list,
    expect_mapping,
    expect_result,
    not_found,
)
from conformance.checks.inputs import (
    expect_matches,
    invalid_inputs_rejected,
    result_matches,
    valid_inputs_accepted,
)
from conformance.checks.jsonrpc import answer_check, expect_envelope
from conformance.declare import slug
from conformance.documents.openapi import schema_at
from conformance.documents.schemas import resolve_pointer, schema_errors
from conformance.locate import Search, holds
from conformance.model import Profile, Requirement, Source
from conformance.protocols.bindu.answers import (
    contexts_listed,
    history_of,
    message_ids,
    state_of,
    task_ids_of,
    task_result,
    tasks_listed,
)
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.protocols.bindu.machine import TaskLifecycle, terminal_states
from conformance.protocols.bindu.signing import sign_request, verify_signature
from conformance.table import Table
from conformance.transport.binding import RawToken, dig, is_event_stream, rest_reply, stream_events
from conformance.transport.http import json_excerpt

POST = "/paths/~1/post"
CARD = "/paths/~1.well-known~1agent.json"
ONE_MB = 1024 * 1024


# ----------------------------------------------------------------------------------
# JSON-RPC envelope
# ----------------------------------------------------------------------------------







# ----------------------------------------------------------------------------------
# params and results, one requirement per method
# ----------------------------------------------------------------------------------
def fresh_caller_ids(params: Any) -> Any:
    """Generated params are made safe to send repeatedly: fresh caller-chosen ids."""
    msg = params.get("message") if isinstance(params, dict) else None
    if isinstance(msg, dict):
        for key in ("taskId", "contextId"):
            if key in msg:
                msg[key] = fresh_id()
    return params


# Errors that mean "your request is malformed": a schema-valid request must never get them.
REJECTIONS = ("Parse error", "Invalid Request", "Invalid params")


# Listings answer every stored task or context: where control allows, their checks start
# from an empty store, so an answer's size is what the check itself made (not everything
# the run made before it; these rows are `alone:` in the profile).
LISTINGS = ("tasks/list", "contexts/list")


def valid_params(method: str) -> Callable[[CheckContext], None]:
    """Generated params are accepted, sent as drawn (an unknown id is refused as not found,
    never as invalid) and, where they name a task or a context, naming one the check made
    (``InWorld``): the row passes only on inputs that were served."""
    def check(ctx: CheckContext) -> None:
        c = BinduClient(ctx)
        if method in LISTINGS and ctx.run.control_path:
            ctx.control("reset")
        world = InWorld.made(c, method)
        valid_inputs_accepted(ctx, ctx.profile.operations[method], lambda p: c.call(method, p), REJECTIONS,
                              fresh_caller_ids, extra_property="x_conformance_extra", answer_check=answer_check,
                              in_world=world)
    return check


# The member of each method's params that names an object the target holds, and what the
# object is: a task or a context (the spec's params schemas: taskId, contextId).
NAMES = {"tasks/get": ("taskId", "task"), "tasks/feedback": ("taskId", "task"),
         "tasks/cancel": ("taskId", "running task"), "contexts/clear": ("contextId", "context")}
CONSUMED = 3  # objects made for a method that uses up what it names (a cancel, a clear): one per draw, then a repeat


class InWorld:
    """Drawn params naming an object the check made: a completed task (tasks/get and
    tasks/feedback leave it as it was), a running task per draw for tasks/cancel (a
    canceled one is not cancelable again), and a context per draw for contexts/clear (a
    cleared context is gone). Past the objects made, the last is named again: its refusal
    (not cancelable, not found) is one the spec gives, and only none served blocks."""

    def __init__(self, member: str, ids: list[str]) -> None:
        self.member, self.ids, self.used = member, ids, 0

    @classmethod
    def made(cls, c: BinduClient, method: str) -> InWorld | None:
        if method not in NAMES:
            return None
        member, what = NAMES[method]
        count = CONSUMED if method in ("tasks/cancel", "contexts/clear") else 1
        with c.ctx.setup(f"create {count} {what}{'s' if count > 1 else ''} for {method} to name"):
            if method == "tasks/cancel":
                ids = [str(_running(c)["id"]) for _ in range(count)]
            elif method == "contexts/clear":
                ids = [c.context_of(c.new_task()) for _ in range(count)]
            else:
                ids = [str(c.new_task()["id"])]
        return cls(member, ids)

    def __call__(self, params: Any) -> Any:
        if not isinstance(params, dict):
            return params
        name = self.ids[min(self.used, len(self.ids) - 1)]
        self.used += 1
        return {**params, self.member: name}


def _running(c: BinduClient) -> dict[str, Any]:
    """A task tasks/cancel can cancel: with control, one the agent holds in ``working``;
    without, the task as the agent leaves it, while that is open (an agent working
    asynchronously). An agent that finishes each task at once leaves none to cancel: then
    the requirement needs control (untested), having asked for nothing it cannot judge."""
    if c.ctx.run.control_path:
        return c.new_task("working")
    task = c.new_task(wait=False)  # polling would let an asynchronous agent finish it
    if state_of(task) in terminal_states(c.ctx.profile.spec):
        c.ctx.needs_control(f"a task tasks/cancel applies to: the agent finished the task it was sent at once "
                            f"({state_of(task)!r}), and only control next_outcome working keeps one open")
    return task


def invalid_params(method: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        c = BinduClient(ctx)
        also = ("UnsupportedOperation",) if method == "message/stream" and not _streaming(c) else ()
        invalid_inputs_rejected(ctx, ctx.profile.operations[method], lambda p: c.call(method, p), "Invalid params",
                                also, answer_check=answer_check)
    return check


def _streaming(c: BinduClient) -> bool:
    return bool(dig(c.card(), "capabilities", "streaming"))


def result_schema(method: str) -> Callable[[CheckContext], None]:
    """Drive the method to a success with realistic params and validate the result."""
    def check(ctx: CheckContext) -> None:
        c = BinduClient(ctx)
        op = ctx.profile.operations[method]
        task = c.new_task()
        c.new_task()
        calls: dict[str, Callable[[], Any]] = {
            "message/send": lambda: c.send(),
            "tasks/get": lambda: c.get(task["id"]),
            "tasks/list": lambda: c.list_tasks(),
            "tasks/feedback": lambda: c.feedback(task["id"]),
            "contexts/list": lambda: c.list_contexts(),
            "contexts/clear": lambda: c.clear(c.context_of(task)),
        }
        if method == "tasks/cancel":
            with ctx.setup("create a task tasks/cancel applies to", by="BINDU-SEND-CREATES-TASK"):
                working_id = _running(c)["id"]
            calls[method] = lambda: c.cancel(working_id)
        if method == "message/stream":
            if not _streaming(c):
                raise Untested("the agent card says capabilities.streaming is false: no stream to validate", "optional")
            check_stream_events(ctx, c)
            return
        result_matches(ctx, op, calls[method]())
    return check


def check_stream_events(ctx: CheckContext, c: BinduClient) -> None:
    """An SSE stream of JSON-RPC results carrying the request's id, each about the task
    the message started. What a "task delta" holds the spec does not say: full Task
    snapshots are the profile's reading (BINDU-STREAM-TASK-SNAPSHOTS)."""
    params = c.send_params()
    task_id = params["message"]["taskId"]
    request_id = fresh_id()
    reply = c.call("message/stream", params, request_id=request_id)
    ctx.expect(reply.status == 200 and is_event_stream(reply.http), f"message/stream must answer text/event-stream: {reply.describe()}")
    events = stream_events(reply.http)
    ctx.expect(events, "message/stream sent no data events")
    for env in events:
        ctx.expect(isinstance(env, dict) and env.get("jsonrpc") == "2.0" and "result" in env and "error" not in env,
                   f"stream event is not a JSON-RPC result: {env!r:.120}", kind="malformed_answer")
        ctx.expect(env.get("id") == request_id, f"stream event id {env.get('id')!r} does not echo the request id",
                   kind="malformed_answer")
        result = env["result"]
        named = {result.get(k) for k in ("id", "task_id", "taskId")} if isinstance(result, dict) else set()
        ctx.expect(task_id in named, f"stream event is not about the task the message started ({task_id}): {result!r:.120}",
                   kind="schema_mismatch")


def check_stream_snapshots(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    if not _streaming(c):
        raise Untested("the agent card says capabilities.streaming is false: no stream to validate", "optional")
    reply = c.call("message/stream", c.send_params())
    schema = ctx.profile.operations["message/stream"].result_schema or {}
    for env in stream_events(reply.http):
        result = env.get("result") if isinstance(env, dict) else None
        expect_matches(ctx, schema, result, "stream event result")


def check_stream_capability(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    reply = c.call("message/stream", c.send_params())
    if _streaming(c):
        ctx.expect(reply.status == 200 and is_event_stream(reply.http),
                   f"card says streaming; message/stream answered HTTP {reply.status} {reply.http.headers.get('content-type')}")
    else:
        expect_error(ctx, reply, "UnsupportedOperation", "message/stream on an agent whose card says streaming: false")


# ----------------------------------------------------------------------------------
# error catalog
# ----------------------------------------------------------------------------------

def unknown_tasks(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    c = BinduClient(ctx)
    return {"tasks/get of an unknown task": lambda: c.get(fresh_id()),
            "tasks/cancel of an unknown task": lambda: c.cancel(fresh_id()),
            "tasks/feedback of an unknown task": lambda: c.feedback(fresh_id())}


def unknown_contexts(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    c = BinduClient(ctx)
    return {"contexts/clear of an unknown context": lambda: c.clear(fresh_id())}


# ----------------------------------------------------------------------------------
# tasks
# ----------------------------------------------------------------------------------
def check_send_creates_task(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    params = c.send_params(text="capital of France?")
    msg = params["message"]
    task = expect_mapping(ctx, task_result(ctx, c.call("message/send", params), "message/send"), "message/send result", ["context_id"])
    ctx.expect(task["id"] == msg["taskId"], f"task id {task['id']!r} is not the caller's taskId {msg['taskId']!r}")
    ctx.expect(task["context_id"] == msg["contextId"], f"context_id {task['context_id']!r} is not the caller's contextId")
    ids = message_ids(history_of(ctx, task, "message/send"))
    ctx.expect(msg["message_id"] in ids, f"the sent message is not in the task's history: {json_excerpt(task.get('history'))}")
    fresh = task_result(ctx, c.send(task_id=None, context_id=None), "message/send without ids")
    ctx.expect(fresh["id"] and fresh.get("context_id"), f"a task without caller ids must get a server id and context_id: {json_excerpt(fresh)}")
    got = task_result(ctx, c.get(task["id"]), "tasks/get of the new task")
    ctx.expect(got["id"] == task["id"], f"tasks/get returned another task: {json_excerpt(got)}")


def task_id_of(task: Any) -> Any:
    """The id a message/send result names (None when the result is not a task)."""
    return task.get("id") if isinstance(task, dict) else None


def resend(ctx: CheckContext) -> Callable[[], Any]:
    """The same message/send, again and again (no caller task id)."""
    c = BinduClient(ctx)
    params = c.send_params(task_id=None)
    return lambda: c.call("message/send", params)


def check_send_findable(ctx: CheckContext) -> None:
    """The spec's recipe for a send whose answer was lost ("have your client generate a
    stable `messageId` and use `contexts/list` + `tasks/list` to check whether you've
    already sent it"): after a message/send whose answer the kit ignores (no taskId, no
    contextId: it knows only its message_id), tasks/list shows a task holding that
    message_id, and contexts/list shows that task's context."""
    c = BinduClient(ctx)
    params = c.send_params(task_id=None, context_id=None)
    message_id = params["message"]["message_id"]
    c.call("message/send", params)  # the answer is "lost": nothing below reads it
    listed = tasks_listed(ctx, c.list_tasks(), "tasks/list")
    mine = [t for t in listed if holds(t.get("history"), message_id)]
    ctx.expect(mine, f"tasks/list shows no task whose history holds the message_id {message_id} just sent: "
               f"{Search(f'the message_id {message_id}', 'the history of each task tasks/list answers').looked_for(listed)}",
               kind="state_changed")
    context = mine[0].get("context_id")
    contexts = contexts_listed(ctx, c.list_contexts(), "contexts/list")
    ctx.expect(any(x["context_id"] == context or mine[0]["id"] in task_ids_of(x) for x in contexts),
               f"contexts/list does not show the context {context!r} of the task that holds the message: {json_excerpt(contexts)}",
               kind="state_changed")


def check_output_modes(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    reply = c.send(output_modes=["application/x-conformance-unknown"])
    expect_error(ctx, reply, "ContentTypeNotSupported", "acceptedOutputModes with no overlap")
    expect_result(ctx, c.send(output_modes=[c.output_modes()[0]]), "acceptedOutputModes overlapping the card's modes")


def _grow_history(c: BinduClient) -> dict[str, Any]:
    """A task with history to cap. With a control interface, one that paused for input
    and got a second message (three or more entries); without one, a completed task
    (the user's message and the agent's answer): control only where nothing else
    produces the state."""
    if not c.ctx.run.control_path:
        return c.new_task()
    task = c.new_task("input-required")
    with c.ctx.setup("send a second message to an input-required task", by="BINDU-INPUT-REQUIRED-RESUME"):
        reply = c.send(task_id=task["id"], context_id=c.context_of(task))
        return task_result(c.ctx, reply, "message/send to an input-required task")


def check_history_length(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = _grow_history(c)
    full = expect_list(ctx, expect_result(ctx, c.get(task["id"]), "tasks/get", ["history"])["history"], "history")
    ctx.expect(len(full) >= 2, f"a task after a message and its answer shows only {len(full)} history entries")
    for cap in (0, 1, 2):
        got = task_result(ctx, c.get(task["id"], history_length=cap), f"tasks/get historyLength={cap}")
        hist = history_of(ctx, got, f"tasks/get historyLength={cap}")
        ctx.expect(hist == (full[-cap:] if cap else []), f"tasks/get historyLength={cap} returned {len(hist)} messages, not the last {cap}")
    sent = task_result(ctx, c.send(history_length=0), "message/send historyLength=0")
    hist = history_of(ctx, sent, "message/send historyLength=0")
    ctx.expect(not hist, f"message/send configuration.historyLength=0 returned {len(hist)} messages")


def check_list_history(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    a, b = _grow_history(c), c.new_task()
    listed = tasks_listed(ctx, c.list_tasks(history_length=1), "tasks/list history_length=1")
    ids = {t["id"] for t in listed if isinstance(t["id"], str)}
    ctx.expect({a["id"], b["id"]} <= ids, f"tasks/list history_length=1 answered {len(listed)} task(s) without "
               f"{sorted({a['id'], b['id']} - ids)}: it must cap history, not the number of tasks")
    for t in listed:
        hist = history_of(ctx, t, "tasks/list history_length=1")
        ctx.expect(len(hist) <= 1, f"task {t['id']} in tasks/list history_length=1 has {len(hist)} messages")


def check_contexts_list(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    first = c.new_task()
    second = c.new_task(context_id=c.context_of(first))
    listed = contexts_listed(ctx, c.list_contexts(), "contexts/list")
    mine = [x for x in listed if x["context_id"] == c.context_of(first)]
    ctx.expect(mine, f"contexts/list lacks the caller's context {c.context_of(first)}: {json_excerpt(listed)}")
    ctx.expect({first["id"], second["id"]} <= set(task_ids_of(mine[0])),
               f"contexts/list does not list the context's tasks: {json_excerpt(mine[0])}")
    other = c.new_task()  # a second context
    capped = contexts_listed(ctx, c.list_contexts(history_length=1), "contexts/list history_length=1")
    mine = [x for x in capped if x["context_id"] == c.context_of(first)]
    ctx.expect(mine and len(task_ids_of(mine[0])) <= 1, "contexts/list history_length=1 must cap tasks per context "
               f"to 1, answered {json_excerpt(mine[0].get('tasks') if mine else None)} for the context of two tasks")
    shown = {x["context_id"] for x in capped if isinstance(x["context_id"], str)}
    ctx.expect({c.context_of(first), c.context_of(other)} <= shown,
               "contexts/list history_length=1 dropped contexts: it caps tasks per context, not the number of contexts")


def check_cancel_terminal(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    states = sorted(terminal_states(ctx.profile.spec))
    for state in states:
        try:
            task = c.new_task(state) if state != "canceled" else _canceled(c)
        except Untested:
            if state != "completed":
                continue
            raise
        reply = c.cancel(task["id"])
        expect_error(ctx, reply, "TaskNotCancelable", f"tasks/cancel of a {state} task")
        ctx.expect(c.state_of(task["id"]) == state, f"tasks/cancel of a {state} task changed its state")


def _canceled(c: BinduClient) -> dict[str, Any]:
    """A canceled task: cancelling a working one is BINDU-CANCEL-RUNNING's subject."""
    task = c.new_task("working")
    with c.ctx.setup("cancel a working task", by="BINDU-CANCEL-RUNNING"):
        return expect_result(c.ctx, c.cancel(task["id"]), "tasks/cancel of a working task")


def check_cancel_running(ctx: CheckContext) -> None:
    """A working and an input-required task (control); without control, those of the two
    the agent leaves a task in by itself, at least one (else the row needs control)."""
    c = BinduClient(ctx)
    unreached: list[Untested] = []
    for state in ("working", "input-required"):
        try:
            task = c.new_task(state)
        except Untested as exc:
            if ctx.run.control_path:
                raise
            unreached.append(exc)
            continue
        result = task_result(ctx, c.cancel(task["id"]), f"tasks/cancel of a {state} task")
        ctx.expect(state_of(result) == "canceled", f"tasks/cancel of a {state} task answered state {state_of(result)!r}")
        ctx.expect(c.state_of(task["id"]) == "canceled", f"after tasks/cancel, tasks/get of the {state} task does not say canceled")
    if len(unreached) == 2:
        raise unreached[0]


def check_terminal_immutable(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task()
    before = task_result(ctx, c.get(task["id"]), "tasks/get")
    reply = c.send(task_id=task["id"], context_id=c.context_of(task))
    expect_error(ctx, reply, "TaskImmutable", "message/send to a completed task")
    after = task_result(ctx, c.get(task["id"]), "tasks/get")
    ctx.expect(after["status"] == before["status"] and after.get("history") == before.get("history"), "the completed task changed")


def check_resume_input_required(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task("input-required")
    reply = c.send(task_id=task["id"], context_id=c.context_of(task))
    result = task_result(ctx, reply, "message/send to an input-required task")
    ctx.expect(result["id"] == task["id"], f"message/send to an input-required task must continue that task: {json_excerpt(result)}")
    ctx.expect(len(history_of(ctx, result, "message/send")) > len(history_of(ctx, task, "message/send")),
               "the answer to the paused task did not reach its history")


def check_feedback(ctx: CheckContext) -> None:
    """A completed task is rated ("Rate a completed task"); a working one may be rated or
    refused with a catalogued error (the spec does not say); neither ever changes."""
    c = BinduClient(ctx)
    for state in ("completed", "working"):
        try:
            task = c.new_task(state)
        except Untested:
            if state == "completed":
                raise
            continue
        before = task_result(ctx, c.get(task["id"]), "tasks/get")
        reply = c.feedback(task["id"])
        if state == "completed" or reply.ok:
            result = expect_result(ctx, reply, f"tasks/feedback on a {state} task", ["success"])
            ctx.expect(result["success"] is True, f"tasks/feedback answered {result!r}, expected success true")
        else:
            expect_catalogued(ctx, reply, f"tasks/feedback on a {state} task", require_error=True)
        after = task_result(ctx, c.get(task["id"]), "tasks/get after feedback")
        for key in ("status", "history", "artifacts"):
            was, now = before.get(key), after.get(key)
            if key == "status":
                was, now = state_of(before), state_of(after)
            ctx.expect(was == now, f"tasks/feedback changed the task's {'state' if key == 'status' else key}: "
                                   f"{json.dumps(was)[:120]} before, {json.dumps(now)[:120]} after (tasks/get)")


def check_context_clear(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task()
    other = c.new_task(context_id=c.context_of(task))
    result = expect_result(ctx, c.clear(c.context_of(task)), "contexts/clear of a context with finished tasks", ["success"])
    ctx.expect(result["success"] is True, f"contexts/clear answered {result!r}")
    for t in (task, other):
        expect_error(ctx, c.get(t["id"]), "TaskNotFound", "tasks/get of a task in a cleared context")
    listed = contexts_listed(ctx, c.list_contexts(), "contexts/list")
    kept = [x for x in listed if x["context_id"] == c.context_of(task)]  # "Reset a context": it may stay, emptied
    ctx.expect(not kept or not {task["id"], other["id"]} & set(task_ids_of(kept[0])),
               "the cleared context still lists its purged tasks")
    with ctx.subcheck("a cleared context takes new messages (it is reset, not revoked)"):
        again = task_result(ctx, c.send(context_id=c.context_of(task)), "message/send to the cleared context")
        ctx.expect(again.get("context_id") in (None, c.context_of(task)),
                   f"message/send to the cleared context {c.context_of(task)} went to another context: {json_excerpt(again)}",
                   kind="state_changed")


def check_context_clear_running(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    running = c.new_task("working")
    reply = c.clear(c.context_of(running))
    if reply.error is not None:
        expect_error(ctx, reply, "ContextNotCancelable", "contexts/clear of a context with a working task")
    got = c.get(running["id"])
    ctx.expect(got.ok and state_of(got.result) == "working", f"contexts/clear affected a working task: {got.describe()}")


def check_chained_tasks(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    first = c.new_task()
    before = task_result(ctx, c.get(first["id"]), "tasks/get")
    reply = c.send(reference_task_ids=[first["id"]], context_id=c.context_of(first))
    chained = task_result(ctx, reply, "message/send with referenceTaskIds of a completed task")
    ctx.expect(chained["id"] != first["id"], "a chained message must create a new task, not reopen the referenced one")
    after = task_result(ctx, c.get(first["id"]), "tasks/get of the referenced task")
    ctx.expect(after["status"] == before["status"], "the referenced task changed")


def check_casing(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task()
    snake = expect_result(ctx, c.call("tasks/get", {"task_id": task["id"], "history_length": 1}), "tasks/get with snake_case task_id", ["id"])
    ctx.expect(snake["id"] == task["id"], "tasks/get with task_id returned another task")
    hist = snake.get("history")
    ctx.expect(not isinstance(hist, list) or len(hist) <= 1, "history_length (snake_case) was ignored")
    params = c.send_params()
    msg = params["message"]
    msg["task_id"], msg["context_id"] = msg.pop("taskId"), msg.pop("contextId")
    sent = expect_result(ctx, c.call("message/send", params), "message/send with snake_case task_id/context_id", ["id"])
    ctx.expect(sent["id"] == msg["task_id"], "message/send ignored snake_case task_id")
    for t in (snake, sent):
        ctx.expect("context_id" in t and "contextId" not in t, f"responses must be snake_case: task keys {sorted(t)}")


# ----------------------------------------------------------------------------------
# auth
# ----------------------------------------------------------------------------------
def operations(methods: Callable[[], dict[str, Callable[[BinduClient, Any], Any]]]) -> Callable[[CheckContext], dict[str, Callable[[Any], Any]]]:
    """The auth families' rows: each method as a call that takes a caller."""
    def rows(ctx: CheckContext) -> dict[str, Callable[[Any], Any]]:
        c = BinduClient(ctx)
        return {name: functools.partial(f, c) for name, f in methods().items()}
    return rows


def _write_methods() -> dict[str, Callable[[BinduClient, Any], Any]]:
    return {
        "message/send": lambda c, who: c.send(who),
        "tasks/cancel": lambda c, who: c.cancel(fresh_id(), who),
        "tasks/feedback": lambda c, who: c.feedback(fresh_id(), who),
        "contexts/clear": lambda c, who: c.clear(fresh_id(), who),
    }


def _read_methods() -> dict[str, Callable[[BinduClient, Any], Any]]:
    return {
        "tasks/get": lambda c, who: c.get(fresh_id(), who),
        "tasks/list": lambda c, who: c.list_tasks(who),
        "contexts/list": lambda c, who: c.list_contexts(who),
    }


def _all_methods() -> dict[str, Callable[[BinduClient, Any], Any]]:
    return {**_write_methods(), **_read_methods()}


REFUSALS = ("InsufficientPermissions", "AuthenticationRequired", "InvalidToken")
UNAUTHORIZED = "/paths/~1/post/responses/401/content/application~1json/schema"


def plain_401(ctx: CheckContext, reply: Any) -> bool:
    """The documented 401 answer of POST / ({"error": "..."}, no JSON-RPC envelope)."""
    env = reply.envelope
    body = env if isinstance(env, dict) and "jsonrpc" not in env else reply.http.json()
    return (reply.status == 401 and isinstance(body, dict) and "jsonrpc" not in body and isinstance(body.get("error"), str)
            and not schema_errors(schema_at(ctx.profile.spec, UNAUTHORIZED), body))


def check_auth_envelope(ctx: CheckContext) -> None:
    """The profile's reading: auth failures are the catalog's codes in the envelope."""
    ctx.token("full")
    c = BinduClient(ctx)
    cases: list[tuple[str, Any, str]] = [("without a bearer token", None, "AuthenticationRequired"),
                                         ("with a token the server never issued", RawToken("conformance-not-a-token-" + fresh_id()), "InvalidToken")]
    if ctx.has_credential("expired"):
        cases.append(("with an expired token", "expired", "TokenExpired"))
    for what, who, error in cases:
        with ctx.subcheck(what):
            expect_error(ctx, c.list_tasks(who) if who is not None else c.send(None), error, f"{'message/send' if who is None else 'tasks/list'} {what}")


def _own_task(ctx: CheckContext) -> dict[str, Any]:
    """The owner's task, with the context it is in (what the kit sent, where the answer does not say)."""
    c = BinduClient(ctx)
    task = c.new_task()
    return {**task, "context_id": c.context_of(task)}


def _foreign(ctx: CheckContext) -> dict[str, Callable[[Any, Any], Any]]:
    c = BinduClient(ctx)
    return {"tasks/get": lambda task, who: c.get(task["id"], who),
            "tasks/cancel": lambda task, who: c.cancel(task["id"], who),
            "tasks/feedback": lambda task, who: c.feedback(task["id"], who),
            "contexts/clear": lambda task, who: c.clear(task["context_id"], who)}


def check_send_foreign(ctx: CheckContext) -> None:
    """message/send naming another caller's task or context never reaches it: a taskId
    that "isn't yours" gets -32001 (the catalog's row), and the owner's task and context
    are as they were (a contextId of another caller may be refused, or the message may
    start a context of the caller's own, but never joins the owner's)."""
    ctx.token("other")
    c = BinduClient(ctx)
    task = _own_task(ctx)
    before = task_result(ctx, c.get(task["id"]), "tasks/get of the owner's task")
    with ctx.subcheck("message/send naming another caller's taskId"):
        reply = c.send("other", task_id=task["id"], context_id=task["context_id"])
        expect_error(ctx, reply, "TaskNotFound", "message/send as another caller, naming the owner's taskId")
    with ctx.subcheck("message/send naming another caller's contextId"):
        reply = c.send("other", context_id=task["context_id"])
        if reply.ok:
            theirs = task_result(ctx, reply, "message/send as another caller, naming the owner's contextId")
            contexts = contexts_listed(ctx, c.list_contexts(), "contexts/list of the owner")
            joined = [x for x in contexts if theirs["id"] in task_ids_of(x)]
            ctx.expect(not joined, f"another caller's message joined the owner's context: {json_excerpt(joined)}",
                       kind="auth_not_enforced")
            ctx.expect(not holds(c.list_tasks().result, theirs["id"]), "the owner's tasks/list shows another caller's task",
                       kind="auth_not_enforced")
        else:
            expect_catalogued(ctx, reply, "message/send as another caller, naming the owner's contextId")
    after = task_result(ctx, c.get(task["id"]), "tasks/get of the owner's task")
    ctx.expect(state_of(after) == state_of(before) and after.get("history") == before.get("history"),
               f"another caller's message/send changed the owner's task: {json_excerpt(before)} before, {json_excerpt(after)} after",
               kind="state_changed")


def check_ownership(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    auth.isolation(ctx, create=lambda: _own_task(ctx), hidden=_foreign(ctx),
                   error=lambda name: "ContextNotFound" if name == "contexts/clear" else "TaskNotFound",
                   unlisted={"tasks/list": auth.Listing(lambda who: c.list_tasks(who), lambda listed, task: holds(listed, task["id"])),
                             "contexts/list": auth.Listing(lambda who: c.list_contexts(who),
                                                           lambda listed, task: holds(listed, task["context_id"]))},
                   intact=lambda task: c.get(task["id"]).ok)


# ----------------------------------------------------------------------------------
# DID request signing
# ----------------------------------------------------------------------------------
def _did_call(ctx: CheckContext, tamper: str = "", offset: int = 0, drop: tuple[str, ...] = (), signer: str = "did") -> Any:
    """tasks/list signed as the ``signer`` credential, with one deliberate defect: a
    timestamp ``offset`` seconds off, ``drop``ped headers, or a ``tamper``."""
    did = ctx.credential(signer)
    seed = bytes.fromhex(did["seed"])
    body = json.dumps({"jsonrpc": "2.0", "id": fresh_id(), "method": "tasks/list", "params": {}}).encode()
    ts = int(time.time()) + offset
    headers = sign_request(seed, did["id"], body, ts)
    if tamper == "body":
        body = body.replace(b'"params": {}', b'"params": {"history_length": 1}')
    elif tamper == "did":
        headers["X-DID"] = did["id"] + "-someone-else"
        headers.update({k: v for k, v in sign_request(seed, headers["X-DID"], body, ts).items() if k != "X-DID"})
    elif tamper == "malformed":
        headers["X-DID-Signature"] = "0OIl-not-base58"
    elif tamper == "short":
        headers["X-DID-Signature"] = base58.b58encode(b"\x01" * 12).decode()
    for name in drop:
        del headers[name]
    headers["Authorization"] = f"Bearer {did['token']}"
    return ctx.binding.send_raw(body, headers=headers)


def _reason(reply: Any) -> Any:
    return dig(reply.envelope, "error", "data", "reason") or dig(reply.envelope, "details", "reason")


def expect_did_refused(ctx: CheckContext, reply: Any, reasons: tuple[str, ...], what: str) -> None:
    """403 with one of ``reasons`` (in error.data or in the documented 403 body's details)."""
    ctx.expect(reply.status == 403, f"{what}: HTTP {reply.status}, expected 403 ({reply.describe()})", kind="wrong_status")
    got = _reason(reply)
    ctx.expect(got in reasons, f"{what}: reason {got!r}, expected {' or '.join(map(repr, reasons))}")


def did_rejected(tamper: str, reason: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        expect_did_refused(ctx, _did_call(ctx, tamper), (reason,), f"signed request with {tamper} defect")
    return check


def check_did_timestamp(ctx: CheckContext) -> None:
    """Outside the window on either side is refused, inside near either edge is served.
    The probes stand 2 s beyond and inside the edges, for the exchange's own latency."""
    window = ctx.limit("did_timestamp_window_s")
    for side, sign in (("past", -1), ("future", 1)):
        with ctx.subcheck(f"timestamp {window + 2} s in the {side}"):
            expect_did_refused(ctx, _did_call(ctx, offset=sign * (window + 2)), ("timestamp_out_of_window",),
                               f"signed request stamped {window + 2} s in the {side}")
        with ctx.subcheck(f"timestamp {window - 2} s in the {side}"):
            reply = _did_call(ctx, offset=sign * (window - 2))
            ctx.expect(reply.ok and reply.status == 200,
                       f"a request stamped {window - 2} s in the {side}, inside ±{window} s, was refused: {reply.describe()}",
                       kind="rejected_valid")


SIGNING_HEADERS = ("X-DID", "X-DID-Timestamp", "X-DID-Signature")


def check_did_missing_headers(ctx: CheckContext) -> None:
    """Each signing header dropped in turn, and X-DID alone: refused with
    missing_signature_headers. Without X-DID the spec also reads as "not signed"
    ("When X-DID is sent"), so a request served unsigned then passes too."""
    cases = [(h,) for h in SIGNING_HEADERS] + [("X-DID-Timestamp", "X-DID-Signature")]
    for drop in cases:
        what = "signed request without " + " and ".join(drop)
        with ctx.subcheck(what):
            reply = _did_call(ctx, drop=drop)
            if "X-DID" in drop and reply.ok:
                continue  # the other reading: without X-DID the request is simply unsigned
            expect_did_refused(ctx, reply, ("missing_signature_headers",), what)


DID_REASONS = "/paths/~1/post/responses/403/content/application~1json/schema/properties/details/properties/reason/enum"


def check_did_gate_client(ctx: CheckContext) -> None:
    """Gate 1: a client whose client_id is not a DID, signing with a key it has (and
    X-DID equal to its client_id, so Gate 2 holds), is refused with a 403 reason."""
    reasons = tuple(resolve_pointer(ctx.profile.spec, DID_REASONS))
    signer = ctx.credential("plain_signer")
    if str(signer["id"]).startswith("did:"):
        raise Untested("credentials.plain_signer.id must be a client_id that is not a DID", "credential")
    expect_did_refused(ctx, _did_call(ctx, signer="plain_signer"), reasons, "a request signed by a client whose client_id is not a DID")


def check_did_no_public_key(ctx: CheckContext) -> None:
    """Gate 3: a DID client without a registered public_key is refused: public_key_unavailable."""
    expect_did_refused(ctx, _did_call(ctx, signer="did_nokey"), ("public_key_unavailable",),
                       "a request signed by a DID client without a registered public key")


def check_did_valid(ctx: CheckContext) -> None:
    reply = _did_call(ctx)
    ctx.expect(reply.ok and reply.status == 200, f"a correctly signed request was refused: {reply.describe()}")


# ----------------------------------------------------------------------------------
# artifacts and DID documents
# ----------------------------------------------------------------------------------
def _agent_key(ctx: CheckContext, c: BinduClient) -> str:
    did = c.card().get("did")
    ctx.expect(isinstance(did, str), "the agent card has no did")
    reply = ctx.http.request("GET", "/did/resolve", params={"did": did})
    doc = reply.json()
    ctx.expect(reply.status == 200 and isinstance(doc, dict), f"/did/resolve of the card's DID: HTTP {reply.status}")
    methods = doc.get("verificationMethod") or doc.get("authentication") or []
    keys = [m.get("publicKeyBase58") for m in methods if isinstance(m, dict)] if isinstance(methods, list) else []
    ctx.expect(keys and isinstance(keys[0], str) and keys[0],
               f"the DID document has no publicKeyBase58 in verificationMethod or authentication: {json_excerpt(doc)}",
               kind="malformed_answer")
    return str(keys[0])


def check_artifact_signatures(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    key = _agent_key(ctx, c)
    task = task_result(ctx, c.get(c.new_task()["id"]), "tasks/get of a completed task")
    signed = 0
    for artifact in _objects(task.get("artifacts")):
        for part in _objects(artifact.get("parts")):
            sig = dig(part, "metadata", "did.message.signature")
            if sig is None:
                continue
            signed += 1
            text = part["text"] if "text" in part else json.dumps(part.get("data"), sort_keys=True)
            ctx.expect(isinstance(text, str) and isinstance(sig, str) and verify_signature(key, text.encode(), sig),
                       f"artifact {artifact.get('artifact_id')} signature {str(sig)[:24]}... does not verify "
                       f"with the agent's DID key over the part's text {str(text)[:60]!r}")
    if not signed:
        raise Untested("no artifact part carried did.message.signature")


def _objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a list in an answer (anything else holds none)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _key_bytes(value: Any) -> int:
    """How many bytes a base58 key decodes to (-1 when it is not base58)."""
    try:
        return len(base58.b58decode(value)) if isinstance(value, str) else -1
    except ValueError:
        return -1


def check_did_resolve(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    did = c.card().get("did")
    schema = schema_at(ctx.profile.spec, "/components/schemas/DidDocument")
    got = ctx.http.request("GET", "/did/resolve", params={"did": did})
    posted = ctx.http.request("POST", "/did/resolve", json_body={"did": did})
    ctx.expect(got.status == 200, f"GET /did/resolve: HTTP {got.status}")
    ctx.expect(posted.status == 200, f"POST /did/resolve: HTTP {posted.status}")
    doc = expect_mapping(ctx, got.json(), "GET /did/resolve document")
    expect_matches(ctx, schema, doc, "GET /did/resolve document")
    ctx.expect(doc == posted.json(), "POST /did/resolve returns a different document than GET")
    ctx.expect(doc.get("id") == did, f"the DID document's id is not the DID asked for: {json_excerpt(doc)}")
    for vm in _objects(doc.get("authentication")):
        ctx.expect(_key_bytes(vm.get("publicKeyBase58")) == 32, f"publicKeyBase58 is not a 32-byte Ed25519 key: {json_excerpt(vm)}")
    missing = ctx.http.request("POST", "/did/resolve", json_body={})
    ctx.expect(missing.status == 400, f"POST /did/resolve without did: HTTP {missing.status}, expected 400")
    unknown = ctx.http.request("GET", "/did/resolve", params={"did": "did:bindu:conformance:unknown:" + fresh_id()})
    ctx.expect(unknown.status == 404, f"GET /did/resolve of an unknown DID: HTTP {unknown.status}, expected 404")


# ----------------------------------------------------------------------------------
# REST surface
# ----------------------------------------------------------------------------------
REST_EXCLUDED = ("/api/", "/payment-capture")  # paid endpoints: their own requirement


def check_rest_schemathesis(ctx: CheckContext) -> None:
    from conformance.checks.openapi_rest import check_rest_operations

    def include(method: str, path: str) -> bool:
        """Every REST operation but the JSON-RPC endpoint and the paid ones."""
        return not (method == "POST" and path == "/") and not path.startswith(REST_EXCLUDED)

    check_rest_operations(ctx, ctx.profile.spec, include=include, headers=BinduClient(ctx).auth())


def check_root_redirect(ctx: CheckContext) -> None:
    reply = ctx.http.request("GET", "/")
    ctx.expect(reply.status == 302, f"GET /: HTTP {reply.status}, expected 302")
    expected = resolve_pointer(ctx.profile.spec, "/paths/~1/get/responses/302/headers/Location/schema/example")
    location = reply.headers.get("location", "")
    ctx.expect(location.endswith(expected), f"GET / redirects to {location!r}, expected {expected!r}")


def check_card_head_options(ctx: CheckContext) -> None:
    head = ctx.http.request("HEAD", "/.well-known/agent.json")
    ctx.expect(head.status == 200, f"HEAD agent card: HTTP {head.status}")
    opts = ctx.http.request("OPTIONS", "/.well-known/agent.json", headers={"Origin": "http://127.0.0.1", "Access-Control-Request-Method": "GET"})
    ctx.expect(opts.status == 204, f"OPTIONS agent card: HTTP {opts.status}, expected 204")
    ctx.expect("access-control-allow-origin" in opts.headers, "OPTIONS agent card lacks Access-Control-Allow-Origin")
    allowed = opts.headers.get("access-control-allow-methods", "")
    ctx.expect("GET" in allowed, f"Access-Control-Allow-Methods {allowed!r} does not allow GET")


SKILL_ERROR_AT = {"code": "/code", "message": "/error"}  # the 404 body of /agent/skills/{skillId}


def unknown_skill(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    path = "/agent/skills/conformance-no-such-skill"
    return {f"GET {path}": lambda: rest_reply(ctx.http.request("GET", path), SKILL_ERROR_AT)}


def check_skill_not_found(ctx: CheckContext) -> None:
    not_found(ctx, calls=unknown_skill(ctx), error="SkillNotFound")  # 404 with the catalog's code in the body
    path = "/agent/skills/conformance-no-such-skill/documentation"  # documented 404, no body
    reply = ctx.http.request("GET", path)
    status = error_named(ctx.profile, "SkillNotFound").http_status
    ctx.expect(reply.status == status, f"GET {path}: HTTP {reply.status}, expected {status}", kind="not_found_expected")


def check_skills_consistent(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    listed = [s for s in expect_list(ctx, ctx.http.request("GET", "/agent/skills").json() or [], "GET /agent/skills")
              if expect_mapping(ctx, s, "a skill of GET /agent/skills", ["id"])]
    card_ids = {s.get("id") for s in c.card().get("skills") or [] if isinstance(s, dict)}
    ctx.expect({s.get("id") for s in listed} == card_ids, "/agent/skills differs from the agent card's skills")
    detail = schema_at(ctx.profile.spec, "/components/schemas/SkillDetail")
    for skill in listed:
        one = ctx.http.request("GET", f"/agent/skills/{skill['id']}")
        ctx.expect(one.status == 200, f"GET /agent/skills/{skill['id']}: HTTP {one.status}")
        expect_matches(ctx, detail, one.json(), f"skill {skill['id']}")
        doc = ctx.http.request("GET", f"/agent/skills/{skill['id']}/documentation")
        ctx.expect(doc.status == 200 and doc.headers.get("content-type", "").startswith("text/markdown"),
                   f"skill {skill['id']} documentation: HTTP {doc.status} {doc.headers.get('content-type')}")


def check_negotiation(ctx: CheckContext) -> None:
    from conformance.generation.strategies import strategy_for

    req_schema = schema_at(ctx.profile.spec, "/components/schemas/NegotiationRequest")
    resp_schema = schema_at(ctx.profile.spec, "/components/schemas/NegotiationResponse")
    example = resolve_pointer(ctx.profile.spec, "/paths/~1agent~1negotiation/post/requestBody/content/application~1json/example")

    def body(request: Any) -> None:
        for payload in (example, request):
            reply = ctx.http.request("POST", "/agent/negotiation", json_body=payload)
            ctx.expect(reply.status == 200, f"POST /agent/negotiation: HTTP {reply.status}")
            answer = reply.json()
            expect_matches(ctx, resp_schema, answer, "negotiation response")
            ctx.expect(0 <= answer["score"] <= 1, f"negotiation score {answer['score']} outside 0..1")

    ctx.for_all(strategy_for(req_schema), body)


def check_health(ctx: CheckContext) -> None:
    reply = ctx.http.request("GET", "/health")
    ctx.expect(reply.status in (200, 503), f"/health: HTTP {reply.status}")
    ctx.expect(reply.headers.get("content-type", "").startswith("application/json"), f"/health content type {reply.headers.get('content-type')!r}")
    body = reply.json()
    expect_matches(ctx, schema_at(ctx.profile.spec, "/components/schemas/HealthResponse"), body, "/health body")
    expected = "healthy" if reply.status == 200 else "degraded"
    ctx.expect(body["status"] == expected, f"/health HTTP {reply.status} says status {body['status']!r}")


def check_metrics(ctx: CheckContext) -> None:
    import re

    reply = ctx.http.request("GET", "/metrics")
    ctx.expect(reply.status == 200, f"/metrics: HTTP {reply.status}")
    ctx.expect(reply.headers.get("content-type", "").startswith("text/plain"), f"/metrics content type {reply.headers.get('content-type')!r}")
    label = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
    sample = re.compile(rf"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{{({label})?(,{label})*,?\}})? [-+0-9.eEinfNa]+( -?\d+)?$")
    lines = [ln for ln in reply.text.split("\n") if ln.strip()]  # label values may hold other line breaks
    ctx.expect(lines, "/metrics is empty")
    for ln in lines:
        ctx.expect(ln.startswith("#") or sample.match(ln), f"/metrics line is not Prometheus text: {ln[:100]!r}")


def _paid(card: dict[str, Any]) -> bool:
    """The profile's reading: an agent is paid when its card lists an x402 extension."""
    return any("x402" in str(ext.get("name", "")).lower() for ext in card.get("extensions") or [] if isinstance(ext, dict))


def check_payment_unpaid(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    if _paid(c.card()):
        raise Untested("the agent card lists an x402 extension: the agent is paid", "optional")
    for method, path in (("POST", "/api/start-payment-session"), ("GET", "/api/payment-status/conformance-none")):
        reply = ctx.http.request(method, path, headers=c.auth(), json_body={} if method == "POST" else None)
        ctx.expect(reply.status == 404, f"{method} {path} on an unpaid agent: HTTP {reply.status}, expected 404")


# ----------------------------------------------------------------------------------
# statements the first table left unchecked
# ----------------------------------------------------------------------------------
def check_push_not_supported(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    if dig(c.card(), "capabilities", "pushNotifications"):
        raise Untested("the agent card says capabilities.pushNotifications is true: there is no webhook here to receive pushes")
    params = c.send_params()
    params["configuration"]["pushNotificationConfig"] = {"url": "https://conformance.invalid/webhook"}
    expect_error(ctx, c.call("message/send", params), "PushNotificationNotSupported",
                 "message/send with pushNotificationConfig to an agent whose card says pushNotifications: false")


def check_invalid_agent_response(ctx: CheckContext) -> None:
    if not ctx.run.control_path:
        ctx.needs_control("an agent whose handler produces a malformed result (control next_agent_fault): "
                          "no request of a client makes a compliant agent do that")
    c = BinduClient(ctx)
    ctx.control("next_agent_fault", kind="malformed_result")
    expect_error(ctx, c.send(), "InvalidAgentResponse", "message/send whose agent produced a malformed result")


EXTENDED_CARD_METHOD = "agent/getAuthenticatedExtendedCard"  # A2A's method; the spec's method list lacks it


def check_extended_card(ctx: CheckContext) -> None:
    """Without a published extended card, asking for one is refused: -32007 (the catalog)
    or -32601 (the method is not among the spec's accepted methods)."""
    c = BinduClient(ctx)
    if c.card().get("supportsAuthenticatedExtendedCard"):
        raise Untested("the agent card says it publishes an authenticated extended card")
    reply = c.call(EXTENDED_CARD_METHOD, {})
    expect_envelope(ctx, reply, EXTENDED_CARD_METHOD)
    expect_error(ctx, reply, "AuthenticatedExtendedCardNotConfigured", f"{EXTENDED_CARD_METHOD} on an agent without one",
                 also=("Method not found",))


def check_auth_required_state(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task("auth-required")
    with ctx.subcheck("message/send continues an auth-required task"):
        result = task_result(ctx, c.send(task_id=task["id"], context_id=c.context_of(task)), "message/send to an auth-required task")
        ctx.expect(result["id"] == task["id"], "message/send to an auth-required task must continue that task")
        ctx.expect(len(history_of(ctx, result, "message/send")) > len(history_of(ctx, task, "message/send")),
                   "the message did not reach the task's history")
    with ctx.subcheck("tasks/cancel stops an auth-required task"):
        other = c.new_task("auth-required")
        result = task_result(ctx, c.cancel(other["id"]), "tasks/cancel of an auth-required task")
        ctx.expect(state_of(result) == "canceled", f"tasks/cancel of an auth-required task answered {state_of(result)!r}")


def check_completed_artifacts(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = task_result(ctx, c.get(c.new_task()["id"]), "tasks/get of a completed task")
    ctx.expect(state_of(task) == "completed", f"the task is {state_of(task)!r}, expected completed")
    ctx.expect(task.get("artifacts"), f"a completed task has artifacts {json.dumps(task.get('artifacts'))} (tasks/get): "
               "the spec says its artifacts are available", kind="schema_mismatch")


def _instant(ctx: CheckContext, stamp: Any, what: str) -> datetime:
    try:
        when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        ctx.fail(f"{what}: status.timestamp {stamp!r} is not ISO 8601", kind="schema_mismatch")
    ctx.expect(when.tzinfo is not None, f"{what}: status.timestamp {stamp!r} has no UTC offset", kind="schema_mismatch")
    return when


def check_status_timestamp(ctx: CheckContext) -> None:
    """status.timestamp carries an offset and is the time of the last transition: a
    cancel more than a second later moves it forward."""
    c = BinduClient(ctx)
    task = c.new_task("working")
    first = _instant(ctx, dig(task_result(ctx, c.get(task["id"]), "tasks/get"), "status", "timestamp"), "a working task")
    try:  # let two seconds pass: on the target's clock when its control offers that, else on the wall clock
        ctx.control("advance_clock", seconds=2)
        advanced = True
    except Untested:
        time.sleep(1.1)  # past any whole-second resolution
        advanced = False
    try:
        canceled = task_result(ctx, c.cancel(task["id"]), "tasks/cancel of a working task")
    finally:
        if advanced:  # later checks (DID timestamps) compare the target's clock with ours
            ctx.control("advance_clock", seconds=-2)
    then = _instant(ctx, dig(canceled, "status", "timestamp"), "the canceled task")
    ctx.expect(then > first, f"status.timestamp did not move with the transition to canceled ({first.isoformat()} -> {then.isoformat()})",
               kind="state_changed")


def check_list_ignored_params(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    for _ in range(3):
        c.new_task()
    with ctx.subcheck("tasks/list ignores limit and offset"):
        every = {json.dumps(t["id"]) for t in tasks_listed(ctx, c.list_tasks(), "tasks/list")}
        paged = {json.dumps(t["id"]) for t in tasks_listed(ctx, c.call("tasks/list", {"limit": 1, "offset": 1}), "tasks/list limit=1 offset=1")}
        ctx.expect(paged == every, f"tasks/list with limit=1 offset=1 returned {len(paged)} of the caller's {len(every)} tasks")
    with ctx.subcheck("contexts/list ignores length"):
        every = {json.dumps(x["context_id"]) for x in contexts_listed(ctx, c.list_contexts(), "contexts/list")}
        capped = {json.dumps(x["context_id"]) for x in contexts_listed(ctx, c.call("contexts/list", {"length": 1}), "contexts/list length=1")}
        ctx.expect(capped == every, f"contexts/list with length=1 returned {len(capped)} of the caller's {len(every)} contexts")


def check_send_blocking(ctx: CheckContext) -> None:
    """With control the agent's first run leaves the task working; without, the check asks
    whether the agent leaves a task open by itself (an asynchronous agent): an agent that
    finishes every task at once answers the same with or without blocking, so nothing tells
    them apart and the requirement needs control."""
    c = BinduClient(ctx)
    if ctx.run.control_path:
        c.outcome("working")  # the agent's first run leaves the task working
    else:
        left = state_of(c.new_task(wait=False))
        if left in terminal_states(ctx.profile.spec):
            ctx.needs_control(f"a task the agent does not finish at once: it answered a message without blocking in "
                              f"{left!r}, so blocking: true cannot be told apart (control next_outcome working)")
    params = c.send_params()
    params["configuration"]["blocking"] = True
    state = state_of(task_result(ctx, c.call("message/send", params), "message/send with blocking: true"))
    ctx.expect(state in terminal_states(ctx.profile.spec), f"message/send with blocking: true answered while the task was {state!r}")


NEGOTIATION_EXAMPLE = "/paths/~1agent~1negotiation/post/requestBody/content/application~1json/example"


def check_negotiation_advisory(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    before = len(expect_list(ctx, expect_result(ctx, c.list_tasks(history_length=0), "tasks/list"), "tasks/list result"))
    reply = ctx.http.request("POST", "/agent/negotiation", json_body=resolve_pointer(ctx.profile.spec, NEGOTIATION_EXAMPLE))
    ctx.expect(reply.status == 200, f"POST /agent/negotiation: HTTP {reply.status}")
    after = len(expect_list(ctx, expect_result(ctx, c.list_tasks(history_length=0), "tasks/list"), "tasks/list result"))
    ctx.expect(after == before, f"negotiation performed work: the caller had {before} tasks before and {after} after", kind="state_changed")


CHECK_VALUE = re.compile(r"^(ok|error: .+)$")


def _health(ctx: CheckContext, status: int, word: str) -> dict[str, Any]:
    reply = ctx.http.request("GET", "/health")
    body = reply.json()
    ctx.expect(reply.status == status, f"/health answered HTTP {reply.status}, expected {status} ({word})", kind="wrong_status")
    ctx.expect(isinstance(body, dict) and body.get("status") == word, f"/health body {body!r:.120}, expected status {word!r}")
    checks = body.get("checks")
    ctx.expect(isinstance(checks, dict), f"/health body has no checks object: {json_excerpt(body)}", kind="schema_mismatch")
    for name, value in checks.items():
        ctx.expect(isinstance(value, str) and CHECK_VALUE.match(value), f"/health check {name} is {value!r}, not \"ok\" or \"error: <reason>\"",
                   kind="schema_mismatch")
    return body


def check_health_degraded(ctx: CheckContext) -> None:
    if not ctx.run.control_path:
        ctx.needs_control("a failing component (control set_health): no request of a client makes /health degrade")
    ctx.control("set_health", component="storage", status="error: conformance check")
    try:
        body = _health(ctx, 503, "degraded")
        ctx.expect(str(dig(body, "checks", "storage") or "").startswith("error"), f"/health does not name the failing component: {json_excerpt(body)}")
    finally:
        ctx.control("set_health", component="storage", status="ok")
    _health(ctx, 200, "healthy")


def check_metrics_series(ctx: CheckContext) -> None:
    text = resolve_pointer(ctx.profile.spec, "/paths/~1metrics/get/description")
    names = re.findall(r"^- `([a-zA-Z_:][a-zA-Z0-9_:]*)", text, flags=re.M)
    ctx.expect(names, "the spec's /metrics description names no series (the check reads them from it)")
    reply = ctx.http.request("GET", "/metrics")
    ctx.expect(reply.status == 200, f"/metrics: HTTP {reply.status}")
    exposed = set(re.findall(r"^#\s*TYPE\s+(\S+)", reply.text, flags=re.M))
    exposed |= {re.split(r"[{ ]", ln, maxsplit=1)[0] for ln in reply.text.splitlines() if ln and not ln.startswith("#")}
    for name in names:
        with ctx.subcheck(name):
            ctx.expect(any(e == name or e.startswith(name + "_") for e in exposed), f"/metrics lacks the series {name}")


# ----------------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------------
def build(profile: Profile) -> list[Requirement]:
    table = Table(profile)
    at, req = table.at, table.req

    catalog = "/info/description"
    reqs = [
        req("BINDU-TASK-NOT-FOUND", "MUST", "An unknown task id gets -32001 TaskNotFound",
            at(catalog, "| `-32001` |"), lambda ctx: not_found(ctx, calls=unknown_tasks(ctx), error="TaskNotFound"), ("unknown_task_internal_error",)),
        req("BINDU-CONTEXT-NOT-FOUND", "MUST", "contexts/clear of an unknown context gets -32020 ContextNotFound",
            at(catalog, "| `-32020` |"), lambda ctx: not_found(ctx, calls=unknown_contexts(ctx), error="ContextNotFound"), ("clear_unknown_context_succeeds", "uncatalogued_error_code")),
        req("BINDU-SEND-CREATES-TASK", "MUST", "message/send creates a task under the caller's taskId and contextId",
            at("/components/schemas/UserMessage/properties/taskId"), check_send_creates_task, ("ignores_caller_task_id", "caller_task_id_refused")),
        req("BINDU-SEND-FINDABLE", "MUST", "A message whose answer was lost is found by its message_id through tasks/list, its context through contexts/list",
            at(f"{POST}/description", "client generate a stable `messageId`"), check_send_findable, ("list_omits_history",)),
        req("BINDU-OWNERSHIP-SEND", "MUST", "message/send naming another caller's taskId gets -32001; neither it nor their contextId reaches the owner's task or context",
            at(catalog, "| `-32001` |"), check_send_foreign, ("send_continues_foreign_task", "send_joins_foreign_context", "ownership_not_enforced"),
            ("other",)),
        req("BINDU-SEND-NOT-IDEMPOTENT", "MUST", "A repeated message/send creates a new task",
            at(f"{POST}/description", "**Idempotency:**"), lambda ctx: idempotency.never_deduplicated(ctx, send=resend(ctx), identity=task_id_of, what="message/send"), ("dedupes_message_id",)),
        req("BINDU-SEND-OUTPUT-MODES", "MUST", "acceptedOutputModes with no overlap gets -32005",
            at("/components/schemas/MessageSendConfiguration/properties/acceptedOutputModes"), check_output_modes, ("ignores_output_modes",)),
        req("BINDU-HISTORY-LENGTH", "MUST", "historyLength caps history to the most recent N messages",
            at("/components/schemas/TasksGetParams/properties/historyLength"), check_history_length, ("history_length_ignored",)),
        req("BINDU-TASKS-LIST-HISTORY", "MUST", "tasks/list history_length caps each task's history, not the number of tasks",
            at("/components/schemas/TasksListParams"), check_list_history, ("list_history_caps_tasks",)),
        req("BINDU-CONTEXTS-LIST", "MUST", "contexts/list shows the caller's contexts and their tasks; history_length caps tasks per context",
            at(f"{POST}/requestBody/content/application~1json/examples/contextsList"), check_contexts_list, ("contexts_history_ignored", "contexts_history_caps_contexts")),
        req("BINDU-CANCEL-TERMINAL", "MUST", "tasks/cancel of a terminal task gets -32002 and leaves it unchanged",
            at(catalog, "| `-32002` |"), check_cancel_terminal, ("cancel_terminal_succeeds",)),
        req("BINDU-CANCEL-RUNNING", "MUST", "tasks/cancel of a non-terminal task makes it canceled",
            at(catalog, "`canceled` — user terminated via `tasks/cancel`"), check_cancel_running, ("cancel_noop",), ("control",)),
        req("BINDU-TERMINAL-IMMUTABLE", "MUST", "A message to a terminal task gets -32008 and the task stays as it was",
            at(catalog, "**Terminal tasks are immutable.**"), check_terminal_immutable, ("terminal_task_reopened",)),
        req("BINDU-INPUT-REQUIRED-RESUME", "MUST", "A message to an input-required task continues that task",
            at(f"{POST}/responses/200/content/application~1json/examples/tasksGetInputRequired/description"),
            check_resume_input_required, ("input_required_not_resumable",), ("control",)),
        req("BINDU-FEEDBACK-NO-STATE-CHANGE", "MUST", "tasks/feedback is stored and never changes the task",
            at(f"{POST}/requestBody/content/application~1json/examples/tasksFeedback/description"), check_feedback,
            ("feedback_changes_state", "success_as_string")),
        req("BINDU-CONTEXT-CLEAR", "MUST", "contexts/clear purges the context's finished tasks; the context takes new messages",
            at(f"{POST}/requestBody/content/application~1json/examples/contextsClear"), check_context_clear, ("clear_keeps_tasks", "cleared_context_refused")),
        req("BINDU-CONTEXT-CLEAR-RUNNING", "MUST", "contexts/clear never affects a working task (it may refuse with -32021)",
            at(f"{POST}/requestBody/content/application~1json/examples/contextsClear/description"), check_context_clear_running,
            ("clear_purges_running",), ("control",)),
        req("BINDU-CHAINED-TASKS", "MUST", "referenceTaskIds of an earlier task start a new task and leave the old one unchanged",
            at("/components/schemas/UserMessage/properties/referenceTaskIds"), check_chained_tasks, ("reference_task_rejected",)),
        req("BINDU-PARAMS-CASING", "MUST", "camelCase and snake_case params are both accepted; responses are snake_case",
            at(f"{POST}/description", "**Casing tolerance:**"), check_casing, ("snake_case_params_rejected", "camel_case_responses")),
        req("BINDU-STREAM-CAPABILITY", "MUST", "message/stream follows the card's capabilities.streaming (-32004 when false)",
            at("/components/schemas/AgentCard/properties/capabilities/properties/streaming"), check_stream_capability, ("stream_ignores_capability",)),
        req("BINDU-STREAM-TASK-SNAPSHOTS", "SHOULD", "Each message/stream event is a full Task snapshot",
            Source("profile", "the spec calls the stream 'task deltas' without saying what a delta holds; the profile reads "
                   "message/stream's result as what message/send answers (profiles/bindu.yaml, jsonrpc.results)"),
            check_stream_snapshots, ("camel_case_responses",)),
        req("BINDU-LIFECYCLE", "MUST", "Tasks move only along the state machine: terminal states are final, cancel, feedback, clear and history behave",
            at(catalog, "### State machine"), lambda ctx: ctx.run_machine(TaskLifecycle),
            ("terminal_task_reopened", "cancel_terminal_succeeds", "feedback_changes_state", "input_required_not_resumable"),
            ("control",)),
        req("BINDU-AUTH-REQUIRED", "MUST", "Every writable method without a bearer token gets -32009 (HTTP 401)",
            at(catalog, "| `-32009` |"), lambda ctx: auth.token_required(ctx, operations=operations(_write_methods)(ctx), error="AuthenticationRequired", documented=plain_401), ("auth_not_enforced",)),
        req("BINDU-AUTH-REQUIRED-READ", "SHOULD", "The read methods without a bearer token get -32009 too",
            Source("profile", "POST / declares bearerAuth for every method, but the prose requires a token on writable methods only "
                   "(/info/description, \"Layer 1\"): the profile prefers the stricter reading"),
            lambda ctx: auth.token_required(ctx, operations=operations(_read_methods)(ctx), error="AuthenticationRequired", documented=plain_401), ("auth_not_enforced",)),
        req("BINDU-AUTH-INVALID-TOKEN", "MUST", "A token the server never issued gets -32010 (HTTP 401)",
            at(catalog, "| `-32010` |"), lambda ctx: auth.token_refused(ctx, operations=operations(_all_methods)(ctx), error="InvalidToken", documented=plain_401), ("invalid_token_accepted",)),
        req("BINDU-AUTH-EXPIRED-TOKEN", "MUST", "An expired token is refused: -32011 (or -32010: introspection calls it inactive) with HTTP 401",
            at(catalog, "| `-32011` |"), lambda ctx: auth.token_refused(ctx, operations=operations(_read_methods)(ctx), error="TokenExpired", caller="expired", credential="expired", also=("InvalidToken",), documented=plain_401),
            ("expired_token_accepted",), ("expired",)),
        req("BINDU-AUTH-ENVELOPE", "SHOULD", "Auth failures come as the catalog's own code in the JSON-RPC envelope (-32009, -32010, -32011)",
            Source("profile", "POST / documents a 401 body {error} beside the catalog's envelope codes, and an expired token is "
                   "both 'exp in the past' (-32011) and inactive at introspection (-32010): the profile prefers the catalog's own row"),
            check_auth_envelope, ("auth_not_enforced", "invalid_token_accepted", "expired_token_accepted")),
        req("BINDU-SCOPE-READ", "MUST", "agent:read unlocks the read methods and nothing else (-32013)",
            at(catalog, "| `agent:read` |"), lambda ctx: auth.scopes(ctx, credential="read", allowed=operations(_read_methods)(ctx), denied=operations(_write_methods)(ctx), denied_error="InsufficientPermissions", refusals=REFUSALS), ("scope_check_skipped",), ("read",)),
        req("BINDU-SCOPE-WRITE", "MUST", "agent:write unlocks the write methods and nothing else (-32013)",
            at(catalog, "| `agent:write` |"), lambda ctx: auth.scopes(ctx, credential="write", allowed=operations(_write_methods)(ctx), denied=operations(_read_methods)(ctx), denied_error="InsufficientPermissions", refusals=REFUSALS), ("scope_check_skipped", "write_implies_read"), ("write",)),
        req("BINDU-SCOPE-LEGACY-EXECUTE", "MUST", "The legacy agent:execute scope implies agent:read and agent:write",
            at(catalog, "`agent:execute` (legacy)"), lambda ctx: auth.scopes(ctx, credential="legacy", allowed=operations(_all_methods)(ctx), denied=operations(dict)(ctx), denied_error="InsufficientPermissions", refusals=REFUSALS), ("legacy_execute_rejected",), ("legacy",)),
        req("BINDU-OWNERSHIP", "MUST", "Another caller's tasks and contexts are not found, listed or cleared",
            at(catalog, "| `-32001` |"), check_ownership, ("ownership_not_enforced",), ("other",)),
        req("BINDU-DID-VALID", "MUST", "A correctly signed request (the spec's payload, base58 Ed25519) is accepted",
            at("/components/securitySchemes/didSignature/description"), check_did_valid, ("rejects_valid_signature",), ("did",), optional="did_signing"),
        req("BINDU-DID-TAMPERED", "MUST", "A body changed after signing is refused: 403 crypto_mismatch",
            at(catalog, 'reason: "crypto_mismatch"'), did_rejected("body", "crypto_mismatch"),
            ("signature_not_verified",), ("did",), optional="did_signing"),
        req("BINDU-DID-TIMESTAMP", "MUST", f"A timestamp outside ±{profile.limits['did_timestamp_window_s'].value} s is refused: 403 timestamp_out_of_window",
            at(catalog, "| `X-DID-Timestamp` |"), check_did_timestamp, ("stale_timestamp_accepted", "future_timestamp_accepted", "window_too_narrow"), ("did",), optional="did_signing"),
        req("BINDU-DID-MISMATCH", "MUST", "An X-DID that is not the token's client_id is refused: 403 did_mismatch",
            at(catalog, "Gate 2"), did_rejected("did", "did_mismatch"), ("did_mismatch_accepted",), ("did",), optional="did_signing"),
        req("BINDU-DID-MALFORMED", "MUST", "A signature that is not base58 Ed25519 is refused: 403 malformed_input",
            at(f"{POST}/responses/403/content/application~1json/schema/properties/details/properties/reason"),
            did_rejected("malformed", "malformed_input"), ("malformed_signature_crashes",), ("did",), optional="did_signing"),
        req("BINDU-DID-MISSING-HEADERS", "MUST", "A request with some but not all three signing headers is refused: 403 missing_signature_headers",
            at("/components/securitySchemes/didSignature/description", "**Three headers** must all be present"), check_did_missing_headers,
            ("partial_headers_ignored", "missing_timestamp_ignored"), ("did",), optional="did_signing"),
        req("BINDU-DID-GATE-CLIENT", "MUST", "Gate 1: a signed request whose token's client_id is not a DID is refused (403)",
            at(catalog, "1. Gate 1"), check_did_gate_client, ("gate1_skipped",), ("plain_signer",), optional="did_signing"),
        req("BINDU-DID-NO-PUBLIC-KEY", "MUST", "Gate 3: a DID client without a registered public key is refused: 403 public_key_unavailable",
            at(catalog, "3. Gate 3"), check_did_no_public_key, ("no_key_accepted",), ("did_nokey",), optional="did_signing"),
        req("BINDU-ARTIFACT-SIGNATURE", "MUST", "Artifact did.message.signature verifies with the key /did/resolve gives for the card's DID",
            at("/components/schemas/Artifact/properties/parts/description"), check_artifact_signatures, ("artifact_signature_wrong",)),
        req("BINDU-DID-RESOLVE", "MUST", "/did/resolve GET and POST give the same DID document; unknown 404, missing did 400",
            at("/paths/~1did~1resolve"), check_did_resolve, ("did_resolve_post_missing",)),
        req("BINDU-REST-OPENAPI", "MUST", "REST paths answer documented status codes, content types and schemas (schemathesis)",
            at("/paths"), check_rest_schemathesis, ("card_missing_did", "health_wrong_content_type")),
        req("BINDU-ROOT-REDIRECT", "MUST", "GET / redirects (302) to the agent card",
            at("/paths/~1/get"), check_root_redirect, ("root_not_redirect",)),
        req("BINDU-CARD-HEAD-OPTIONS", "MUST", "The agent card answers HEAD (200) and OPTIONS (204 with CORS headers)",
            at(CARD), check_card_head_options, ("card_options_405",)),
        req("BINDU-SKILL-NOT-FOUND", "MUST", "An unknown skill gets 404 with code -32030",
            at(catalog, "| `-32030` |"), check_skill_not_found, ("skill_not_found_500",)),
        req("BINDU-SKILLS-CONSISTENT", "SHOULD", "/agent/skills matches the card; each skill has details and Markdown documentation",
            Source("profile", "the spec does not tie /agent/skills to the card's skills"), check_skills_consistent, ("skill_docs_missing",)),
        req("BINDU-NEGOTIATION-SCORE", "MUST", "Negotiation answers a NegotiationResponse with a score within 0..1",
            at("/components/schemas/NegotiationResponse/properties/score"), check_negotiation, ("negotiation_score_percent",)),
        req("BINDU-HEALTH", "MUST", "/health answers 200 healthy or 503 degraded, as a HealthResponse",
            at("/paths/~1health/get"), check_health, ("health_wrong_content_type",)),
        req("BINDU-METRICS", "MUST", "/metrics answers Prometheus text",
            at("/paths/~1metrics/get"), check_metrics, ("metrics_json",)),
        req("BINDU-PUSH-NOT-SUPPORTED", "MUST", "pushNotificationConfig to an agent without push gets -32003",
            at(catalog, "| `-32003` |"), check_push_not_supported, ("push_config_ignored",)),
        req("BINDU-INVALID-AGENT-RESPONSE", "MUST", "A malformed result of the agent gets -32006 (HTTP 500)",
            at(catalog, "| `-32006` |"), check_invalid_agent_response, ("agent_fault_internal_error",), ("control",)),
        req("BINDU-EXTENDED-CARD", "MUST", "Asking an agent without an extended card for one gets -32007 (or -32601: the method is not in the list)",
            at(catalog, "| `-32007` |"), check_extended_card, ("extended_card_internal_error",)),
        req("BINDU-AUTH-REQUIRED-STATE", "MUST", "An auth-required task is open: a message continues it, tasks/cancel cancels it",
            at(catalog, "- `auth-required` — paused"), check_auth_required_state, ("auth_required_treated_terminal",), ("control",)),
        req("BINDU-COMPLETED-ARTIFACTS", "MUST", "A completed task has its artifacts",
            at(catalog, "- `completed` — success, artifacts available"), check_completed_artifacts, ("completed_without_artifacts",)),
        req("BINDU-STATUS-TIMESTAMP", "MUST", "status.timestamp is ISO 8601 with an offset and moves with each transition",
            at("/components/schemas/TaskStatus/properties/timestamp", "ISO 8601 with UTC offset, of the last state transition"),
            check_status_timestamp, ("status_timestamp_frozen",), ("control",)),
        req("BINDU-LIST-IGNORED-PARAMS", "MUST", "tasks/list ignores limit/offset and contexts/list ignores length",
            at("/components/schemas/TasksListParams/description", "collection) use `limit`/`offset`"), check_list_ignored_params,
            ("list_honours_limit", "contexts_honour_length")),
        req("BINDU-SEND-BLOCKING", "MUST", "message/send with blocking: true answers once the task is terminal",
            at("/components/schemas/MessageSendConfiguration/properties/blocking", "If `true`, the server holds the HTTP connection open"),
            check_send_blocking, ("blocking_ignored",), ("control",)),
        req("BINDU-NEGOTIATION-ADVISORY", "MUST", "Negotiation never performs the task",
            at("/paths/~1agent~1negotiation/post/description", "This endpoint never actually performs the task"), check_negotiation_advisory,
            ("negotiation_creates_task",)),
        req("BINDU-HEALTH-DEGRADED", "MUST", "A failing component makes /health 503 degraded; each check is \"ok\" or \"error: <reason>\"",
            at("/paths/~1health/get/description", "Returns 200 when healthy, 503 when"), check_health_degraded, ("health_always_200",), ("control",)),
        req("BINDU-METRICS-SERIES", "MUST", "/metrics exposes the series the spec names",
            at("/paths/~1metrics/get/description", "Key series include"), check_metrics_series, ("metrics_missing_series",)),
        req("BINDU-PAYMENT-UNPAID", "MUST", "An unpaid agent answers 404 on the payment endpoints",
            at("/paths/~1api~1start-payment-session/post/description"), check_payment_unpaid, ("payment_session_on_unpaid",)),
    ]
    per_method_faults = {
        "result": {
            "message/send": ("camel_case_responses",), "message/stream": ("stream_events_without_id", "stream_events_of_another_task"),
            "tasks/get": ("camel_case_responses",), "tasks/list": ("camel_case_responses",),
            "tasks/cancel": ("camel_case_responses",), "tasks/feedback": ("success_as_string",),
            "contexts/list": ("context_missing_created_at",), "contexts/clear": ("success_as_string",),
        },
    }
    for method, op in profile.operations.items():
        reqs.append(req(f"BINDU-PARAMS-VALID-{slug(method)}", "MUST", f"Generated valid {method} params are accepted",
                        op.source, valid_params(method), ("rejects_unknown_params",)))
        reqs.append(req(f"BINDU-PARAMS-INVALID-{slug(method)}", "MUST", f"{method} params breaking one schema rule get -32602",
                        op.source, invalid_params(method), ("skip_params_validation", "invalid_params_as_parse_error")))
        result_ptr = profile.settings["jsonrpc"]["results"][method]
        reqs.append(req(f"BINDU-RESULT-{slug(method)}", "MUST", f"{method} results match the spec's result schema",
                        at(result_ptr), result_schema(method), per_method_faults["result"][method]))
    return reqs
