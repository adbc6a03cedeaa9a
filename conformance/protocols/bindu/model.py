"""The Bindu task state model, and the hypothesis state machine that drives a
target through it and compares every answer with the model's prediction."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from conformance.checks.errors import error_named, expect_catalogued, expect_result
from conformance.checks.lifecycle import LifecycleMachine
from conformance.spec.schemas import resolve_pointer

STATE = "/components/schemas/TaskStatus/properties/state"
PAUSED = ("input-required", "auth-required")
# the generic machine's judgement of one transition, without its drawing of an object


def task_states(spec: dict[str, Any]) -> list[str]:
    return list(resolve_pointer(spec, STATE)["enum"])


def terminal_states(spec: dict[str, Any]) -> frozenset[str]:
    """The states the spec calls terminal, read from TaskStatus.state's description."""
    text = resolve_pointer(spec, STATE)["description"]
    named = re.findall(r"`([a-z-]+)`", text.split("Terminal", 1)[1])
    return frozenset(s for s in named if s in task_states(spec))


class TaskLifecycle(LifecycleMachine):
    """The spec's task state machine (profiles/bindu.yaml, lifecycle:) plus what is
    Bindu's own: tasks share contexts, the agent progresses (control), history caps,
    contexts/clear purges finished tasks, and history grows only with messages."""

    noun = "task"

    def protocol_setup(self) -> None:
        from conformance.protocols.bindu.client import BinduClient

        self.client = BinduClient(self.ctx)
        self.terminal = terminal_states(self.ctx.profile.spec)
        self.context: dict[str, str] = {}  # task -> context, in the order the run made them
        self.history: dict[str, int] = {}  # task -> messages in history as last observed
        self.rated: set[tuple[str, str]] = set()  # (task, state) pairs tasks/feedback was tried on
        self.capped: dict[str, tuple[str, int]] = {}  # task -> (state, history) when its history cap was last checked
        self.err = {name: error_named(self.ctx.profile, name).code for name in ("TaskNotFound", "ContextNotCancelable")}

    # -- the hooks of the generic machine ------------------------------------------
    def create_object(self, state: str, data: st.DataObject) -> str:
        known = list(dict.fromkeys(self.context.values()))  # draws must not depend on id values
        same = bool(known) and data.draw(st.booleans(), label="same context")
        context = data.draw(st.sampled_from(known), label="context") if same else "new"
        task = self.client.new_task(state, context_id=context)
        self.context[task["id"]] = task["context_id"]
        self.history[task["id"]] = len(task.get("history") or [])
        return task["id"]

    def perform(self, operation: str, task: str) -> Any:
        if operation == "message/send":
            return self.client.send(task_id=task, context_id=self.context[task])
        if operation == "tasks/cancel":
            return self.client.cancel(task)
        return self.client.feedback(task)

    def state_of(self, task: str) -> str:
        return self.client.state_of(task)

    def state_in(self, reply: Any) -> str | None:
        task = reply.result if reply.ok else None
        return task["status"]["state"] if isinstance(task, dict) and isinstance(task.get("status"), dict) else None

    def checked(self, operation: str, task: str, reply: Any) -> None:
        """History grows with an accepted message, never with anything else."""
        before = self.history[task]
        got = self.client.get(task)
        self.ctx.expect(got.ok, f"tasks/get after {operation}: {got.describe()}")
        after = len(got.result.get("history") or [])
        if operation == "message/send" and reply.ok:
            self.ctx.expect(after > before, f"message/send: history did not grow ({before} -> {after})", kind="state_changed")
        elif operation == "tasks/feedback":
            self.ctx.expect(after == before, f"tasks/feedback changed the history ({before} -> {after} messages)",
                            kind="state_changed")
        self.history[task] = after

    def states_seen(self) -> dict[str, str]:
        reply = self.client.list_tasks(history_length=0)
        self.ctx.expect(reply.ok, f"tasks/list: {reply.describe()}")
        return {t["id"]: t["status"]["state"] for t in reply.result if isinstance(t, dict) and "status" in t}

    @initialize(data=st.data())
    def first_tasks(self, data: st.DataObject) -> None:
        """Every run starts with a task in each paused state, a running and a terminal one,
        so each rule has one to work on."""
        kinds = [*([s] for s in self.starts if s in PAUSED), [s for s in self.starts if s not in self.terminal and s not in PAUSED],
                 [s for s in self.starts if s in self.terminal]]
        for states in kinds:
            self.create_in(data.draw(st.sampled_from(states), label="start"), data)

    # -- Bindu's own rules -----------------------------------------------------------
    @precondition(lambda self: any(s in PAUSED for s in self.states.values()))
    @rule(data=st.data())
    def resume_paused(self, data: st.DataObject) -> None:
        """A message to a paused task (input-required, auth-required) continues that task."""
        task = data.draw(st.sampled_from([t for t, s in self.states.items() if s in PAUSED]), label="task")
        before = self.states[task]
        reply = self.perform("message/send", task)
        self.ctx.machine_stats[f"transition message/send from {before}: allowed"] += 1
        result = expect_result(self.ctx, reply, f"message/send to an {before} task")
        self.ctx.expect(isinstance(result, dict) and result.get("id") == task, f"message/send to an {before} task did not continue it")
        self.states[task] = self.state_in(reply) or self.state_of(task)
        self.checked("message/send", task, reply)

    @precondition(lambda self: any(s not in self.terminal for s in self.states.values()))
    @rule(data=st.data(), end=st.sampled_from(("completed", "failed", "input-required", "auth-required")))
    def agent_progresses(self, data: st.DataObject, end: str) -> None:
        open_tasks = [t for t, s in self.states.items() if s not in self.terminal]
        task = data.draw(st.sampled_from(open_tasks))
        reply = self.ctx.control("set_state", task_id=task, state=end)
        self.states[task] = end
        view = (reply.json() or {}).get("task")
        if isinstance(view, dict):  # finishing work may add the agent's reply to the history
            self.history[task] = len(view.get("history") or [])
        else:
            got = self.client.get(task)
            self.ctx.expect(got.ok, f"tasks/get: {got.describe()}")
            self.history[task] = len(got.result.get("history") or [])

    def uncapped(self) -> list[str]:
        """Tasks whose state or history moved since their history cap was last checked."""
        return [t for t, s in self.states.items() if self.capped.get(t) != (s, self.history[t])]

    @precondition(lambda self: bool(self.uncapped()))
    @rule(data=st.data(), cap=st.integers(0, 3))
    def get_with_history_cap(self, data: st.DataObject, cap: int) -> None:
        task = data.draw(st.sampled_from(self.uncapped()), label="task")  # creation order: draws do not depend on ids
        self.capped[task] = (self.states[task], self.history[task])
        full = self.client.get(task)
        capped = self.client.get(task, history_length=cap)
        self.ctx.expect(full.ok and capped.ok, f"tasks/get: {full.describe()} / {capped.describe()}")
        state = full.result["status"]["state"]
        self.ctx.expect(state == self.states[task], f"tasks/get: task {task} is {state!r}, the model says {self.states[task]!r}",
                        kind="state_changed")
        whole = full.result.get("history") or []
        part = capped.result.get("history") or []
        self.ctx.expect(len(part) <= cap, f"tasks/get historyLength={cap} returned {len(part)} messages")
        expected = whole[-cap:] if cap else []
        self.ctx.expect(part == expected, f"tasks/get historyLength={cap} did not return the last {cap} messages")

    def unrated(self) -> list[str]:
        return [t for t, s in self.states.items() if (t, s) not in self.rated]

    @precondition(lambda self: bool(self.unrated()))
    @rule(data=st.data())
    def feedback(self, data: st.DataObject) -> None:
        """tasks/feedback: a completed task is rated ("Rate a completed task"); another
        one may be rated or refused with a catalogued error (the spec does not say);
        either way the task never changes. Each task is rated once per state."""
        task = data.draw(st.sampled_from(self.unrated()), label="task")
        before = self.states[task]
        self.rated.add((task, before))
        reply = self.client.feedback(task)
        what = f"tasks/feedback on a {before} task"
        self.ctx.machine_stats[f"transition tasks/feedback from {before}: {'allowed' if reply.ok else 'refused'}"] += 1
        if before == "completed":
            result = expect_result(self.ctx, reply, what)
            self.ctx.expect(result.get("success") is True, f"{what} answered {result!r}, expected success true")
        elif reply.ok:
            self.ctx.expect(isinstance(reply.result, dict) and reply.result.get("success") is True,
                            f"{what} answered {reply.result!r}, expected success true")
        else:
            expect_catalogued(self.ctx, reply, what, require_error=True)
        got = self.client.state_of(task)
        self.ctx.expect(got == before, f"{what} moved the task to {got!r}", kind="state_changed")
        self.checked("tasks/feedback", task, reply)

    @precondition(lambda self: len(self.states) >= 3)  # clearing purges tasks: leave the other rules some first
    @rule(data=st.data())
    def clear_context(self, data: st.DataObject) -> None:
        """contexts/clear purges finished tasks and never touches running ones; it may
        refuse (-32021) while a task is in use. Whether a paused task (input-required,
        auth-required) is "running" the spec does not say: it may be kept, purged, or
        make the agent refuse."""
        contexts = list(dict.fromkeys(self.context[t] for t in self.states))
        context = data.draw(st.sampled_from(contexts), label="context")
        members = [t for t in self.states if self.context[t] == context]
        reply = self.client.clear(context)
        what = f"contexts/clear of a context with tasks in {sorted({self.states[t] for t in members})}"
        running = [t for t in members if self.states[t] in ("working", "submitted")]
        paused = [t for t in members if self.states[t] in ("input-required", "auth-required")]
        if (running or paused) and reply.error_code == self.err["ContextNotCancelable"]:
            expect_catalogued(self.ctx, reply, what)
            return
        self.ctx.expect(reply.ok, f"{what}: {reply.describe()}")
        for t in members:
            got = self.client.get(t)
            if t in running:
                self.ctx.expect(got.ok, f"{what}: running task {t} was purged ({got.describe()})", kind="state_changed")
            elif t in paused and got.ok:
                self.ctx.expect(got.result["status"]["state"] == self.states[t], f"{what}: paused task {t} changed state",
                                kind="state_changed")
            else:
                self.ctx.expect(got.error_code == self.err["TaskNotFound"], f"{what}: purged task {t} still answers {got.describe()}",
                                kind="state_changed")
                del self.states[t]
