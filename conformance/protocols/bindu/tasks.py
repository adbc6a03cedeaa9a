"""Bindu's tasks/* methods (specs/bindu/openapi.yaml): an unknown task, the history caps of
tasks/get and tasks/list, tasks/cancel of a terminal and of a running task, and
tasks/feedback that never changes the task. Each requirement is declared on its check,
with the faults that prove it can fail."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from conformance.checks.expect import expect_catalogued, expect_error, expect_result, not_found
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, fault, requirement
from conformance.kit.faults import noop, replaces, returns
from conformance.protocols.bindu.answers import expect_done, history_of, state_of, task_result, tasks_listed
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.protocols.bindu.reference import BinduReference, Caller, RpcError, Task
from conformance.protocols.bindu.states import terminal_states

CATALOG = "/info/description"
POST = "/paths/~1/post"


def unknown_tasks(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    c = BinduClient(ctx)
    return {"tasks/get of an unknown task": lambda: c.get(fresh_id()),
            "tasks/cancel of an unknown task": lambda: c.cancel(fresh_id()),
            "tasks/feedback of an unknown task": lambda: c.feedback(fresh_id())}


@requirement(id="BINDU-TASK-NOT-FOUND", level="MUST", title="An unknown task id gets -32001 TaskNotFound",
             source=at(CATALOG, "| `-32001` |"),
             faults=[returns("unknown_task_internal_error", "task_not_found", RpcError("Internal error"),
                             "An unknown task is answered with Internal error (HTTP 500).")])
def check_task_not_found(ctx: CheckContext) -> None:
    not_found(ctx, calls=unknown_tasks(ctx), error="TaskNotFound")


# -- history caps ------------------------------------------------------------------------
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


@requirement(id="BINDU-HISTORY-LENGTH", level="MUST",
             title="historyLength caps history to the most recent N messages",
             source=at("/components/schemas/TasksGetParams/properties/historyLength"),
             faults=[returns("history_length_ignored", "requested_history_length", None,
                             "tasks/get and message/send ignore historyLength.",
                             when=lambda method, params: method in ("tasks/get", "message/send"))])
def check_history_length(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = _grow_history(c)
    full = history_of(ctx, task_result(ctx, c.get(task["id"]), "tasks/get"), "tasks/get")
    if len(full) < 2:  # the Task's history is optional: a server that shows less has nothing to cap
        raise Untested(f"tasks/get shows {len(full)} history entries of a task after a message and its "
                       "answer (the spec's Task.history is optional): no history to cap", "other")
    for cap in (0, 1, 2):
        got = task_result(ctx, c.get(task["id"], history_length=cap), f"tasks/get historyLength={cap}")
        hist = history_of(ctx, got, f"tasks/get historyLength={cap}")
        ctx.expect(hist == (full[-cap:] if cap else []),
                   f"tasks/get historyLength={cap} returned {len(hist)} messages, not the last {cap}")
    sent = task_result(ctx, c.send(history_length=0), "message/send historyLength=0")
    hist = history_of(ctx, sent, "message/send historyLength=0")
    ctx.expect(not hist, f"message/send configuration.historyLength=0 returned {len(hist)} messages")


@requirement(id="BINDU-TASKS-LIST-HISTORY", level="MUST",
             title="tasks/list history_length caps each task's history, not the number of tasks",
             source=at("/components/schemas/TasksListParams"))
def check_list_history(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    a, b = _grow_history(c), c.new_task()
    listed = tasks_listed(ctx, c.list_tasks(history_length=1), "tasks/list history_length=1")
    ids = {t["id"] for t in listed if isinstance(t["id"], str)}
    ctx.expect({a["id"], b["id"]} <= ids,
               f"tasks/list history_length=1 answered {len(listed)} task(s) without "
               f"{sorted({a['id'], b['id']} - ids)}: it must cap history, not the number of tasks")
    for t in listed:
        hist = history_of(ctx, t, "tasks/list history_length=1")
        ctx.expect(len(hist) <= 1, f"task {t['id']} in tasks/list history_length=1 has {len(hist)} messages")


@check_list_history.fault
def list_history_caps_tasks(ref: BinduReference) -> None:
    """tasks/list history_length caps the number of tasks returned, not each history."""
    @replaces(ref.tasks_list)
    def tasks_list(_original: Any, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        views = [ref.task_view(t) for t in ref.tasks.values() if ref.owns(caller, t.owner)]
        return ref.cap(views, params.get("history_length"))


# -- tasks/cancel ------------------------------------------------------------------------
@requirement(id="BINDU-CANCEL-TERMINAL", level="MUST",
             title="tasks/cancel of a terminal task gets -32002 and leaves it unchanged",
             source=at(CATALOG, "| `-32002` |"),
             faults=[returns("cancel_terminal_succeeds", "is_cancelable", True,
                             "tasks/cancel of a terminal task succeeds instead of TaskNotCancelable.")])
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


@requirement(id="BINDU-CANCEL-RUNNING", level="MUST",
             title="tasks/cancel of a non-terminal task makes it canceled",
             source=at(CATALOG, "`canceled` — user terminated via `tasks/cancel`"), needs=["control"],
             faults=[noop("cancel_noop", "cancel_task",
                          "tasks/cancel of a non-terminal task returns it unchanged.")])
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
        ctx.expect(state_of(result) == "canceled",
                   f"tasks/cancel of a {state} task answered state {state_of(result)!r}")
        ctx.expect(c.state_of(task["id"]) == "canceled",
                   f"after tasks/cancel, tasks/get of the {state} task does not say canceled")
    if len(unreached) == 2:
        raise unreached[0]


# -- tasks/feedback ----------------------------------------------------------------------
@requirement(id="BINDU-FEEDBACK-NO-STATE-CHANGE", level="MUST",
             title="tasks/feedback is stored and never changes the task",
             source=at(f"{POST}/requestBody/content/application~1json/examples/tasksFeedback/description"),
             faults=["feedback_changes_state", "feedback_refused_as_failure"])
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
            expect_done(ctx, reply, f"tasks/feedback on a {state} task")
        else:
            expect_catalogued(ctx, reply, f"tasks/feedback on a {state} task", require_error=True)
        after = task_result(ctx, c.get(task["id"]), "tasks/get after feedback")
        for key in ("status", "history", "artifacts"):
            was, now = before.get(key), after.get(key)
            if key == "status":
                was, now = state_of(before), state_of(after)
            ctx.expect(was == now,
                       f"tasks/feedback changed the task's {'state' if key == 'status' else key}: "
                       f"{json.dumps(was)[:120]} before, {json.dumps(now)[:120]} after (tasks/get)")


# the result's members are the result rows' subject (methods.py RESULT_FAULTS); defined here, by the
# method that answers them
fault(returns("success_as_string", "success_result", {"success": "true"},
              'tasks/feedback and contexts/clear answer {"success": "true"} (a string).'))
fault(returns("success_as_message", "success_result", {"message": "Done"},
              'tasks/feedback and contexts/clear answer {"message": "Done"}, no success (Bindu 2026.36.7).'))


@check_feedback.fault
def feedback_refused_as_failure(ref: BinduReference) -> None:
    """tasks/feedback answers a result saying success false, and stores nothing."""
    @replaces(ref.tasks_feedback)
    def feedback(_original: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        ref.find_task(caller, params["taskId"])
        return {"success": False}


@check_feedback.fault
def feedback_changes_state(ref: BinduReference) -> None:
    """tasks/feedback appends a user message with the feedback text to the task's history."""
    @replaces(ref.store_feedback)
    def store(_original: Any, task: Task, params: dict[str, Any]) -> None:
        message = ref.agent_message(task, params["feedback"], role="user")
        task.history.append(message)
