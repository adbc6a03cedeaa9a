"""The Bindu task state model, and the hypothesis state machine that drives a
target through it and compares every answer with the model's prediction."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.checks.expect import error_named, expect_catalogued, expect_result
from conformance.checks.lifecycle import LifecycleMachine
from conformance.kit.machine import first_step, pick
from conformance.protocols.bindu.answers import expect_done, history_of, state_of, task_result, tasks_listed
from conformance.protocols.bindu.states import agent_moves, moves_by_itself, terminal_states

PAUSED = ("input-required", "auth-required")
# the generic machine's judgement of one transition, without its drawing of an object


class TaskLifecycle(LifecycleMachine):
    """The spec's task state machine (profiles/bindu.yaml, lifecycle:) plus what is
    Bindu's own: tasks share contexts, the agent progresses (control), history caps,
    contexts/clear purges finished tasks, and history grows only with messages. Without a
    control interface the tasks start where the agent leaves them and progress only as the
    agent takes them itself.

    The model follows what the target shows: a task the agent holds (``submitted``,
    ``working``) may move on by itself between two requests ("Poll that task by id until
    it terminates"), so before a rule judges such a task it asks the target where it is
    now, and judges that move by the document's state machine (``moves_by_itself``)
    instead of failing on its own stale belief."""

    noun = "task"

    def protocol_setup(self) -> None:
        from conformance.protocols.bindu.client import BinduClient

        self.client = BinduClient(self.ctx)
        self.spec = self.ctx.profile.spec
        self.terminal = terminal_states(self.spec)
        self.moving = agent_moves(self.spec)
        self.context: dict[str, str] = {}  # task -> context, in the order the run made them
        self.history: dict[str, int] = {}  # task -> messages in history as last observed
        self.rated: set[tuple[str, str]] = set()  # (task, state) pairs tasks/feedback was tried on
        # task -> (state, history) when its history cap was last checked
        self.capped: dict[str, tuple[str, int]] = {}
        self.created: dict[str, str] = {}  # task -> the state the target showed once it was made
        self.err = {name: error_named(self.ctx.profile, name).code
                    for name in ("TaskNotFound", "ContextNotCancelable")}
        # Without a control interface nothing tells the agent where to take a task: each one
        # starts where the agent leaves it (the model follows what the target shows), and the
        # agent moves on only by itself; the machine walks the states this agent reaches.
        self.controlled = bool(self.ctx.run.control_path)
        if not self.controlled:
            self.starts = ["completed"]  # new_task asks for nothing: the task as the agent leaves it

    # -- following the target --------------------------------------------------------
    def follow(self, task: str, seen: Any, what: str) -> bool:
        """The target shows ``task`` in ``seen``: that is the model's state, or one the
        agent may have taken it to by itself (then it becomes the model's); anything else is
        a finding. Returns whether the task moved by itself."""
        believed = self.states[task]
        if seen == believed:
            return False
        self.ctx.expect(isinstance(seen, str) and moves_by_itself(self.spec, believed, seen),
                        f"{what}: task {task} is {seen!r}, the model says {believed!r} (the state machine "
                        f"does not take a task from {believed!r} to {seen!r} without a request)",
                        kind="state_changed")
        self.ctx.machine_stats[f"moved by itself from {believed} to {seen}"] += 1
        self.states[task] = str(seen)
        return True

    def refresh(self, tasks: Any) -> None:
        """Ask the target where each task the agent holds (the model says submitted or
        working) is now, and follow it there."""
        for task in [t for t in tasks if self.states.get(t) in self.moving]:
            view = task_result(self.ctx, self.client.get(task),
                               f"tasks/get of the {self.states[task]} task {task}")
            if self.follow(task, state_of(view), "tasks/get"):
                self.history[task] = len(history_of(self.ctx, view, "tasks/get"))

    def judge(self, obj: str, data: st.DataObject) -> None:
        self.refresh([obj])
        super().judge(obj, data)

    def create_in(self, state: str, data: st.DataObject) -> str:
        obj = self.create_object(state, data)
        self.states[obj] = self.created.pop(obj, state)
        return obj

    def teardown(self) -> None:
        """At the end of each run the target shows every task where the model has it, or
        where the agent took it by itself from there."""
        if not self.states:
            return
        seen = self.states_seen()
        for task, state in list(self.states.items()):
            self.ctx.expect(task in seen, f"the target no longer shows task {task} ({state})",
                            kind="state_changed")
            self.follow(task, seen[task], "tasks/list at the end of the run")
        self.client.clear_made()  # after each run, not only when the requirement ends: the
        # runs' tasks would otherwise fill the tasks/list every later teardown reads

    # -- the hooks of the generic machine ------------------------------------------
    def create_object(self, state: str, data: st.DataObject) -> str:
        known = list(dict.fromkeys(self.context.values()))  # draws must not depend on id values
        same = bool(known) and data.draw(st.booleans(), label="same context")
        context = pick(data, known, label="context") if same else "new"
        # without control: the task as message/send answered it (the model follows the target)
        task = self.client.new_task(state, context_id=context, wait=self.controlled)
        self.context[task["id"]] = self.client.context_of(task)
        self.history[task["id"]] = len(history_of(self.ctx, task, "message/send"))
        self.created[task["id"]] = str(state_of(task))
        return str(task["id"])

    def perform(self, operation: str, task: str) -> Any:
        if operation == "message/send":
            return self.client.send(task_id=task, context_id=self.context[task])
        if operation == "tasks/cancel":
            return self.client.cancel(task)
        return self.client.feedback(task)

    def state_of(self, task: str) -> str:
        return self.client.state_of(task)

    def state_in(self, reply: Any) -> str | None:
        state = state_of(reply.result) if reply.ok else None
        return state if isinstance(state, str) else None

    def checked(self, operation: str, task: str, reply: Any) -> None:
        """History grows with an accepted message, never with anything else (but the
        agent's own work, where the task moved on by itself)."""
        before = self.history[task]
        view = task_result(self.ctx, self.client.get(task), f"tasks/get after {operation}")
        moved = self.follow(task, state_of(view), f"tasks/get after {operation}")
        after = len(history_of(self.ctx, view, f"tasks/get after {operation}"))
        if operation == "message/send" and reply.ok:
            self.ctx.expect(after > before, f"message/send: history did not grow ({before} -> {after})",
                            kind="state_changed")
        elif operation == "tasks/feedback" and not moved:
            self.ctx.expect(after == before,
                            f"tasks/feedback changed the history ({before} -> {after} messages)",
                            kind="state_changed")
        self.history[task] = after

    def states_seen(self) -> dict[str, str]:
        listed = tasks_listed(self.ctx, self.client.list_tasks(history_length=0), "tasks/list")
        return {str(t["id"]): str(state_of(t)) for t in listed if isinstance(state_of(t), str)}

    @first_step(data=st.data())
    def first_tasks(self, data: st.DataObject) -> None:
        """Every run starts with a task in each paused state, a running and a terminal one,
        so each rule has one to work on."""
        kinds = [*([s] for s in self.starts if s in PAUSED),
                 [s for s in self.starts if s not in self.terminal and s not in PAUSED],
                 [s for s in self.starts if s in self.terminal]]
        if not self.controlled:
            kinds = [self.starts, self.starts]  # two tasks as the agent leaves them
        for states in kinds:
            self.create_in(pick(data, states, label="start"), data)

    # -- Bindu's own rules -----------------------------------------------------------
    @precondition(lambda self: any(s in PAUSED for s in self.states.values()))
    @rule(data=st.data())
    def resume_paused(self, data: st.DataObject) -> None:
        """A message to a paused task (input-required, auth-required) continues that task."""
        task = pick(data, [t for t, s in self.states.items() if s in PAUSED], label="task")
        before = self.states[task]
        reply = self.perform("message/send", task)
        self.ctx.machine_stats[f"transition message/send from {before}: allowed"] += 1
        result = expect_result(self.ctx, reply, f"message/send to an {before} task")
        self.ctx.expect(isinstance(result, dict) and result.get("id") == task,
                        f"message/send to an {before} task did not continue it")
        self.states[task] = self.state_in(reply) or self.state_of(task)
        self.checked("message/send", task, reply)

    @precondition(lambda self: self.controlled and any(s not in self.terminal for s in self.states.values()))
    @rule(data=st.data(), end=st.sampled_from(("completed", "failed", "input-required", "auth-required")))
    def agent_progresses(self, data: st.DataObject, end: str) -> None:
        """The agent takes an open task on (control set_state)."""
        self.refresh(list(self.states))  # a task the agent finished by itself is no longer open
        open_tasks = [t for t, s in self.states.items() if s not in self.terminal]
        if not open_tasks:
            return
        task = pick(data, open_tasks)
        reply = self.ctx.control("set_state", task_id=task, state=end)
        self.states[task] = end
        answer = reply.json()
        view = answer.get("task") if isinstance(answer, dict) else None
        # finishing work may add the agent's reply
        if isinstance(view, dict) and isinstance(view.get("history", []), list):
            self.history[task] = len(view.get("history") or [])
        else:
            got = task_result(self.ctx, self.client.get(task), "tasks/get")
            self.history[task] = len(history_of(self.ctx, got, "tasks/get"))

    def uncapped(self) -> list[str]:
        """Tasks whose state or history moved since their history cap was last checked."""
        return [t for t, s in self.states.items() if self.capped.get(t) != (s, self.history[t])]

    @precondition(lambda self: bool(self.uncapped()))
    @rule(data=st.data(), cap=st.integers(0, 3))
    def get_with_history_cap(self, data: st.DataObject, cap: int) -> None:
        # creation order: draws do not depend on ids
        task = pick(data, self.uncapped(), label="task")
        self.capped[task] = (self.states[task], self.history[task])
        full = task_result(self.ctx, self.client.get(task), "tasks/get")
        capped = task_result(self.ctx, self.client.get(task, history_length=cap),
                             f"tasks/get historyLength={cap}")
        whole = history_of(self.ctx, full, "tasks/get")
        if self.follow(task, state_of(full), "tasks/get"):
            self.history[task] = len(whole)
        part = history_of(self.ctx, capped, f"tasks/get historyLength={cap}")
        self.ctx.expect(len(part) <= cap, f"tasks/get historyLength={cap} returned {len(part)} messages")
        expected = whole[-cap:] if cap else []
        self.ctx.expect(part == expected,
                        f"tasks/get historyLength={cap} did not return the last {cap} messages")

    def unrated(self) -> list[str]:
        return [t for t, s in self.states.items() if (t, s) not in self.rated]

    @precondition(lambda self: bool(self.unrated()))
    @rule(data=st.data())
    def feedback(self, data: st.DataObject) -> None:
        """tasks/feedback: a completed task is rated ("Rate a completed task"); another
        one may be rated or refused with a catalogued error (the spec does not say);
        either way the task never changes. Each task is rated once per state."""
        task = pick(data, self.unrated(), label="task")
        self.refresh([task])
        before = self.states[task]
        self.rated.add((task, before))
        reply = self.client.feedback(task)
        what = f"tasks/feedback on a {before} task"
        outcome = "allowed" if reply.ok else "refused"
        self.ctx.machine_stats[f"transition tasks/feedback from {before}: {outcome}"] += 1
        if before == "completed" or reply.ok:
            expect_done(self.ctx, reply, what)
        else:
            expect_catalogued(self.ctx, reply, what, require_error=True)
        self.checked("tasks/feedback", task, reply)

    # clearing purges tasks: leave the other rules some first
    @precondition(lambda self: len(self.states) >= 3)
    @rule(data=st.data())
    def clear_context(self, data: st.DataObject) -> None:
        """contexts/clear purges finished tasks and never touches running ones; it may
        refuse (-32021) while a task is in use. Whether a paused task (input-required,
        auth-required) is "running" the spec does not say: it may be kept, purged, or
        make the agent refuse. The model first asks where its running tasks are now."""
        contexts = list(dict.fromkeys(self.context[t] for t in self.states))
        context = pick(data, contexts, label="context")
        members = [t for t in self.states if self.context[t] == context]
        self.refresh(members)
        reply = self.client.clear(context)
        what = f"contexts/clear of a context with tasks in {sorted({self.states[t] for t in members})}"
        running = [t for t in members if self.states[t] in self.moving]
        paused = [t for t in members if self.states[t] in PAUSED]
        if (running or paused) and reply.error_code == self.err["ContextNotCancelable"]:
            expect_catalogued(self.ctx, reply, what)
            return
        self.ctx.expect(reply.ok, f"{what}: {reply.describe()}")
        for t in members:
            got = self.client.get(t)
            if t in running:
                self.ctx.expect(got.ok, f"{what}: running task {t} was purged ({got.describe()})",
                                kind="state_changed")
                self.follow(t, state_of(got.result), f"{what}: tasks/get of the running task")
            elif t in paused and got.ok:
                self.ctx.expect(state_of(got.result) == self.states[t],
                                f"{what}: paused task {t} changed state ({got.describe()})",
                                kind="state_changed")
            else:
                self.ctx.expect(got.error_code == self.err["TaskNotFound"],
                                f"{what}: purged task {t} still answers {got.describe()}",
                                kind="state_changed")
                del self.states[t]
