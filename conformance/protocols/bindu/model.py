"""The Bindu task state model, and the hypothesis state machine that drives a
target through it and compares every answer with the model's prediction."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, precondition, rule

from conformance.checks.errors import error_named, expect_catalogued
from conformance.spec.schemas import resolve_pointer
from conformance.table import ProfileMachine

STATE = "/components/schemas/TaskStatus/properties/state"


def task_states(spec: dict[str, Any]) -> list[str]:
    return list(resolve_pointer(spec, STATE)["enum"])


def terminal_states(spec: dict[str, Any]) -> frozenset[str]:
    """The states the spec calls terminal, read from TaskStatus.state's description."""
    text = resolve_pointer(spec, STATE)["description"]
    named = re.findall(r"`([a-z-]+)`", text.split("Terminal", 1)[1])
    return frozenset(s for s in named if s in task_states(spec))


@dataclass
class TaskModel:
    id: str
    context: str
    state: str
    history: int = 0  # messages in history as last observed


@dataclass
class BinduModel:
    terminal: frozenset[str]
    tasks: dict[str, TaskModel] = field(default_factory=dict)

    def is_terminal(self, task_id: str) -> bool:
        return self.tasks[task_id].state in self.terminal

    def contexts(self) -> list[str]:
        """Contexts in the order the run made them: draws must not depend on id values,
        or hypothesis could not replay a run against fresh ids."""
        return list(dict.fromkeys(t.context for t in self.tasks.values()))


# Outcomes the control interface can make the agent's next run end in.
OUTCOMES = ("completed", "working", "input-required", "failed", "rejected")


class LifecycleMachine(ProfileMachine):
    """Rules send operations; the model predicts; every answer is compared."""

    tasks = Bundle("tasks")
    contexts = Bundle("contexts")

    def setup(self) -> None:
        from conformance.protocols.bindu.client import BinduClient

        self.client = BinduClient(self.ctx)
        self.model = BinduModel(terminal_states(self.ctx.profile.spec))
        self.err = {name: error_named(self.ctx.profile, name).code for name in (
            "TaskImmutable", "TaskNotCancelable", "TaskNotFound", "ContextNotCancelable")}

    def _observe(self, task: dict[str, Any], what: str) -> TaskModel:
        ctx = self.ctx
        ctx.expect(isinstance(task, dict) and "status" in task, f"{what}: answer is not a task")
        model = self.model.tasks[task["id"]]
        state = task["status"]["state"]
        if model.state in self.model.terminal:
            ctx.expect(state == model.state, f"{what}: terminal task {model.id} moved from {model.state!r} to {state!r}")
        model.history = len(task.get("history") or [])
        return model

    @rule(target=tasks, outcome=st.sampled_from(OUTCOMES), same_context=st.booleans(), data=st.data())
    def send_new(self, outcome: str, same_context: bool, data: st.DataObject) -> str:
        known = self.model.contexts()
        context = data.draw(st.sampled_from(known)) if same_context and known else "new"
        self.client.outcome(outcome)
        reply = self.client.send(context_id=context)
        self.ctx.expect(reply.ok, f"message/send of a new task: {reply.describe()}")
        task = reply.result
        state = task["status"]["state"]
        self.ctx.expect(state == outcome, f"message/send: the agent was told to end in {outcome!r}, the task says {state!r}")
        self.model.tasks[task["id"]] = TaskModel(task["id"], task["context_id"], state, len(task.get("history") or []))
        return task["id"]

    @rule(task=tasks)
    def continue_task(self, task: str) -> None:
        if task not in self.model.tasks:
            return
        model = self.model.tasks[task]
        reply = self.client.send(task_id=task, context_id=model.context)
        what = f"message/send to {model.state} task"
        if self.model.is_terminal(task):
            self.ctx.expect(reply.error_code == self.err["TaskImmutable"], f"{what}: expected TaskImmutable, got {reply.describe()}")
            expect_catalogued(self.ctx, reply, what)
        else:
            self.ctx.expect(reply.ok, f"{what}: a non-terminal task must accept a new message, got {reply.describe()}")
            before = model.history
            self._observe(reply.result, what)
            self.ctx.expect(model.history > before, f"{what}: history did not grow ({before} -> {model.history})")
            model.state = reply.result["status"]["state"]

    @rule(task=tasks)
    def cancel(self, task: str) -> None:
        if task not in self.model.tasks:
            return
        model = self.model.tasks[task]
        reply = self.client.cancel(task)
        what = f"tasks/cancel of a {model.state} task"
        if self.model.is_terminal(task):
            self.ctx.expect(reply.error_code == self.err["TaskNotCancelable"], f"{what}: expected TaskNotCancelable, got {reply.describe()}")
            expect_catalogued(self.ctx, reply, what)
        else:
            self.ctx.expect(reply.ok, f"{what}: {reply.describe()}")
            got = reply.result["status"]["state"]
            self.ctx.expect(got == "canceled", f"{what}: state is {got!r}, expected 'canceled'")
            model.state = "canceled"

    @rule(task=tasks)
    def feedback(self, task: str) -> None:
        if task not in self.model.tasks:
            return
        model = self.model.tasks[task]
        reply = self.client.feedback(task)
        self.ctx.expect(reply.ok, f"tasks/feedback: {reply.describe()}")
        after = self.client.get(task)
        self.ctx.expect(after.ok, f"tasks/get after feedback: {after.describe()}")
        state = after.result["status"]["state"]
        history = len(after.result.get("history") or [])
        self.ctx.expect(state == model.state, f"tasks/feedback changed the state {model.state!r} -> {state!r}")
        self.ctx.expect(history == model.history, f"tasks/feedback changed the history ({model.history} -> {history} messages)")

    @precondition(lambda self: any(t.state not in self.model.terminal for t in self.model.tasks.values()))
    @rule(data=st.data(), end=st.sampled_from(("completed", "failed", "input-required")))
    def agent_progresses(self, data: st.DataObject, end: str) -> None:
        open_tasks = [t.id for t in self.model.tasks.values() if t.state not in self.model.terminal]
        task = data.draw(st.sampled_from(open_tasks))
        reply = self.ctx.control("set_state", task_id=task, state=end)
        model = self.model.tasks[task]
        model.state = end
        view = (reply.json() or {}).get("task")
        if isinstance(view, dict):  # finishing work may add the agent's reply to the history
            model.history = len(view.get("history") or [])
        else:
            self._refresh(task)

    def _refresh(self, task: str) -> None:
        got = self.client.get(task)
        self.ctx.expect(got.ok, f"tasks/get: {got.describe()}")
        self.model.tasks[task].history = len(got.result.get("history") or [])

    @rule(task=tasks, cap=st.integers(0, 3))
    def get_with_history_cap(self, task: str, cap: int) -> None:
        if task not in self.model.tasks:
            return
        full = self.client.get(task)
        capped = self.client.get(task, history_length=cap)
        self.ctx.expect(full.ok and capped.ok, f"tasks/get: {full.describe()} / {capped.describe()}")
        state = full.result["status"]["state"]
        model = self.model.tasks[task]
        self.ctx.expect(state == model.state, f"tasks/get: task {task} is {state!r}, the model says {model.state!r}")
        whole = full.result.get("history") or []
        part = capped.result.get("history") or []
        self.ctx.expect(len(part) <= cap, f"tasks/get historyLength={cap} returned {len(part)} messages")
        expected = whole[-cap:] if cap else []
        self.ctx.expect(part == expected, f"tasks/get historyLength={cap} did not return the last {cap} messages")

    @rule(data=st.data())
    def clear_context(self, data: st.DataObject) -> None:
        contexts = self.model.contexts()
        if not contexts:
            return
        context = data.draw(st.sampled_from(contexts))
        members = [t for t in self.model.tasks.values() if t.context == context]
        reply = self.client.clear(context)
        what = f"contexts/clear of a context with tasks in {sorted({t.state for t in members})}"
        running = [t for t in members if t.state in ("working", "submitted")]
        if running and reply.error_code == self.err["ContextNotCancelable"]:
            expect_catalogued(self.ctx, reply, what)
            return
        self.ctx.expect(reply.ok, f"{what}: {reply.describe()}")
        for t in members:
            got = self.client.get(t.id)
            if t in running:
                self.ctx.expect(got.ok, f"{what}: running task {t.id} was purged ({got.describe()})")
            else:
                self.ctx.expect(got.error_code == self.err["TaskNotFound"], f"{what}: purged task {t.id} still answers {got.describe()}")
                del self.model.tasks[t.id]

    def teardown(self) -> None:
        """At the end of each run the target's view of every task equals the model's."""
        if not self.model.tasks:
            return
        reply = self.client.list_tasks(history_length=0)
        self.ctx.expect(reply.ok, f"tasks/list: {reply.describe()}")
        seen = {t["id"]: t["status"]["state"] for t in reply.result if isinstance(t, dict)}
        for task in self.model.tasks.values():
            self.ctx.expect(task.id in seen, f"tasks/list lacks the caller's task {task.id} ({task.state})")
            self.ctx.expect(seen[task.id] == task.state, f"task {task.id}: model says {task.state!r}, target says {seen[task.id]!r}")
