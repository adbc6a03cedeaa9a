"""A row that needs a finished task waits for one: an agent that answers SendMessage before the
task ends (TASK_STATE_SUBMITTED) is polled with GetTask to where the task ends, so
A2A-TASK-TERMINAL and A2A-SUB-TERMINAL-REFUSED judge it (and fail a server that takes a message
to a finished task, where they passed with nothing judged); an agent whose tasks never end
leaves them untested, saying why for each terminal state, never passed."""

from __future__ import annotations

from typing import Any

from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute

PROFILE = load_profile("a2a")
ROWS = {r.id: r for r in PROFILE.requirements}
SUBMITTED = docs.state_named("submitted")


def answered_early(ref: Any, stays: bool = False) -> None:
    """SendMessage answers every new task SUBMITTED (the agent finishes it later); with
    ``stays``, GetTask shows every task working too, and none can be canceled (the agent never
    finishes, and "success is not guaranteed")."""
    @replaces(ref.op_SendMessage)
    def send(original: Any, params: Any, caller: str) -> Any:
        out = original(params, caller)
        if isinstance(out.get("task"), dict):
            out["task"]["status"] = {**out["task"]["status"], "state": SUBMITTED}
        return out

    if stays:
        @replaces(ref.op_GetTask)
        def get(original: Any, params: Any, caller: str) -> Any:
            out = original(params, caller)
            out["status"] = {**out["status"], "state": docs.state_named("working")}
            return out

        @replaces(ref.op_CancelTask)
        def cancel(original: Any, params: Any, caller: str) -> Any:
            raise Refusal("TaskNotCancelableError", "this agent does not stop")


def verdict(rid: str, *faults: str, stays: bool | None = None) -> Any:
    run = open_run(PROFILE, "reference", budget="quick", binding="jsonrpc", faults=faults)
    if stays is not None:
        answered_early(run.reference, stays)
    return execute(ROWS[rid], run)


def test_a_task_answered_before_it_ends_is_polled_to_its_end_and_judged():
    for rid in ("A2A-TASK-TERMINAL", "A2A-SUB-TERMINAL-REFUSED"):
        assert verdict(rid, stays=False).status == "passed", rid
    taken = verdict("A2A-TASK-TERMINAL", "terminal_task_accepts_message", stays=False)
    assert taken.status == "failed" and "was accepted" in taken.message, taken.message


def test_a_row_that_never_sees_a_finished_task_is_untested_saying_why():
    for rid in ("A2A-TASK-TERMINAL", "A2A-SUB-TERMINAL-REFUSED"):
        got = verdict(rid, stays=True)
        assert got.status == "untested", (rid, got.status, got.message)
        assert "no task of the check's reached a terminal state" in got.message
        for outcome in ("completed", "failed", "rejected", "canceled"):
            assert f"{outcome}:" in got.message, got.message
