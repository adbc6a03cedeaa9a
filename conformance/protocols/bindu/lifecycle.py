"""Bindu's task states (specs/bindu/openapi.yaml, "### State machine" of /info/description):
the hypothesis machine that drives tasks through them (machine.py), and what single states
promise: auth-required is open, completed has its artifacts, status.timestamp moves with
each transition. Each requirement is declared on its check, with the faults that prove it
can fail."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, requirement
from conformance.kit.faults import replaces
from conformance.protocols.bindu.answers import history_of, state_of, task_result
from conformance.protocols.bindu.client import BinduClient
from conformance.protocols.bindu.machine import TaskLifecycle
from conformance.protocols.bindu.reference import BinduReference, Task
from conformance.transport.binding import dig

CATALOG = "/info/description"


@requirement(id="BINDU-LIFECYCLE", level="MUST",
             title="Tasks move only along the state machine: terminal states are final, cancel, feedback, "
                   "clear and history behave",
             source=at(CATALOG, "### State machine"), needs=["control"],
             faults=["terminal_task_reopened", "cancel_terminal_succeeds", "feedback_changes_state",
                     "input_required_not_resumable"])
def check_lifecycle(ctx: CheckContext) -> None:
    ctx.run_machine(TaskLifecycle)


@requirement(id="BINDU-AUTH-REQUIRED-STATE", level="MUST",
             title="An auth-required task is open: a message continues it, tasks/cancel cancels it",
             source=at(CATALOG, "- `auth-required` — paused"), needs=["control"])
def check_auth_required_state(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task("auth-required")
    with ctx.subcheck("message/send continues an auth-required task"):
        result = task_result(ctx, c.send(task_id=task["id"], context_id=c.context_of(task)),
                             "message/send to an auth-required task")
        ctx.expect(result["id"] == task["id"],
                   "message/send to an auth-required task must continue that task")
        ctx.expect(len(history_of(ctx, result, "message/send")) > len(history_of(ctx, task, "message/send")),
                   "the message did not reach the task's history")
    with ctx.subcheck("tasks/cancel stops an auth-required task"):
        other = c.new_task("auth-required")
        result = task_result(ctx, c.cancel(other["id"]), "tasks/cancel of an auth-required task")
        ctx.expect(state_of(result) == "canceled",
                   f"tasks/cancel of an auth-required task answered {state_of(result)!r}")


@check_auth_required_state.fault
def auth_required_treated_terminal(ref: BinduReference) -> None:
    """A task in auth-required is treated as terminal: no message continues it, no cancel stops it."""
    @replaces(ref.is_mutable)
    def mutable(original: Any, task: Task) -> bool:
        return task.state != "auth-required" and original(task)

    @replaces(ref.is_cancelable)
    def cancelable(original: Any, task: Task) -> bool:
        return task.state != "auth-required" and original(task)


@requirement(id="BINDU-COMPLETED-ARTIFACTS", level="MUST", title="A completed task has its artifacts",
             source=at(CATALOG, "- `completed` — success, artifacts available"))
def check_completed_artifacts(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = task_result(ctx, c.get(c.new_task()["id"]), "tasks/get of a completed task")
    ctx.expect(state_of(task) == "completed", f"the task is {state_of(task)!r}, expected completed")
    ctx.expect(task.get("artifacts"),
               f"a completed task has artifacts {json.dumps(task.get('artifacts'))} (tasks/get): "
               "the spec says its artifacts are available", kind="schema_mismatch")


@check_completed_artifacts.fault
def completed_without_artifacts(ref: BinduReference) -> None:
    """A completed task carries its answer in history only, with no artifact."""
    @replaces(ref.complete)
    def complete(original: Any, task: Task) -> None:
        original(task)
        task.artifacts.clear()


def _instant(ctx: CheckContext, stamp: Any, what: str) -> datetime:
    try:
        when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        ctx.fail(f"{what}: status.timestamp {stamp!r} is not ISO 8601", kind="schema_mismatch")
    ctx.expect(when.tzinfo is not None, f"{what}: status.timestamp {stamp!r} has no UTC offset",
               kind="schema_mismatch")
    return when


@requirement(id="BINDU-STATUS-TIMESTAMP", level="MUST",
             title="status.timestamp is ISO 8601 with an offset and moves with each transition",
             source=at("/components/schemas/TaskStatus/properties/timestamp",
                       "ISO 8601 with UTC offset, of the last state transition"),
             needs=["control"])
def check_status_timestamp(ctx: CheckContext) -> None:
    """status.timestamp carries an offset and is the time of the last transition: a
    cancel more than a second later moves it forward."""
    c = BinduClient(ctx)
    task = c.new_task("working")
    first = _instant(ctx, dig(task_result(ctx, c.get(task["id"]), "tasks/get"), "status", "timestamp"),
                     "a working task")
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
    ctx.expect(then > first,
               f"status.timestamp did not move with the transition to canceled ({first.isoformat()} -> "
               f"{then.isoformat()})", kind="state_changed")


@check_status_timestamp.fault
def status_timestamp_frozen(ref: BinduReference) -> None:
    """status.timestamp stays at the task's creation time whatever transitions follow."""
    @replaces(ref.set_state)
    def set_state(original: Any, task: Task, state: str, message: dict[str, Any] | None = None) -> None:
        first = task.timestamp
        original(task, state, message)
        task.timestamp = first
