"""The A2A task model, and the hypothesis state machine that drives a target through it:
new tasks (each outcome the agent can be driven to, in new or shared contexts, sent or
streamed), follow-ups on tasks the agent asked for input on, messages to finished tasks,
cancels of any task, subscriptions (to a task the agent works on, where control has it work
while the kit is subscribed; to a finished task), GetTask and ListTasks, in any order. After
every step the target agrees with the model (what one answer must be, the refusal of a message
or a subscription to a finished task, the state of a blocking answer, is its own row's):

- a terminal task never changes again (its state and its artifacts), whatever is sent;
- GetTask and ListTasks show a task as the last answer about it left it; a task the agent
  holds (submitted, working, or waiting for input) may have moved on by itself since, to a
  TaskState (the machine follows it there);
- a follow-up continues its task; a cancel of a task in progress cancels it, is refused
  with TaskNotCancelableError, or finds it ended by the agent first; a cancel, a message or a
  subscription of a finished task changes nothing.

Every choice among the model's tasks goes by the order the run made them, never by the
target's ids, so a replayed example takes the same path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.kit.check import CheckContext
from conformance.kit.declare import fault, requirement
from conformance.kit.faults import replaces
from conformance.kit.machine import ProfileMachine, first_step, pick
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.client import LOOKS_KEY, A2AClient, a2a_error, blocked_looks, state
from conformance.protocols.a2a.documents import proto_at
from conformance.protocols.a2a.driving import (
    artifact_ids,
    drivable,
    driven,
    follow_up,
    is_message_answer,
    result_of,
    task_object,
    task_result,
)
from conformance.protocols.a2a.pages import walk
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply

STARTS = ("completed", "input_required", "long_running", "failed", "rejected", "auth_required")
MOST_TASKS = 5
PAGES = 12


@dataclass
class Tracked:
    """One task of the run as the model has it."""

    id: str
    context: str
    state: str
    artifacts: list[Any] = field(default_factory=list)
    probed: set[tuple[str, str]] = field(default_factory=set)  # (what, state) tried once: cancel, message
    read: str = ""  # the state GetTask last showed
    listed: str = ""  # the state ListTasks last showed

    def untried(self, what: str) -> bool:
        return (what, self.state) not in self.probed


class TaskMachine(ProfileMachine):
    """The model of the check's own tasks (see the module's docstring)."""

    def setup(self) -> None:
        self.c = A2AClient(self.ctx)
        self.tasks: dict[str, Tracked] = {}  # in the order the run made them
        self.starts = [o for o in STARTS if drivable(self.ctx, o)]
        self.terminal = frozenset(docs.terminal_states())
        # the states in which the agent works on a task by itself (neither finished nor waiting)
        self.moving = frozenset(s for s in docs.task_states()
                                if s not in self.terminal and s not in docs.interrupted_states())

    # -- the model ---------------------------------------------------------------------
    def of(self, states: frozenset[str]) -> list[Tracked]:
        return [t for t in self.tasks.values() if t.state in states]

    def untried(self, what: str, states: frozenset[str] | None = None) -> list[Tracked]:
        """The tasks (in ``states``) that ``what`` was not yet tried on in their present state."""
        return [t for t in self.tasks.values() if t.untried(what) and (states is None or t.state in states)]

    def unread(self) -> list[Tracked]:
        return [t for t in self.tasks.values() if t.read != t.state]

    def unlisted(self) -> list[str]:
        moved = [t.context for t in self.tasks.values() if t.context and t.listed != t.state]
        return list(dict.fromkeys(moved))

    def record(self, task: dict[str, Any], what: str) -> Tracked:
        """A task an answer showed: new to the model, or followed to where it is now."""
        known = self.tasks.get(task["id"])
        if known is None:
            self.ctx.expect(state(task) in docs.task_states(), f"{what}: a new task in {state(task)!r}, not "
                                                              "a TaskState", kind="schema_mismatch")
            known = Tracked(task["id"], str(task.get("contextId") or ""), str(state(task)))
            self.tasks[task["id"]] = known
        else:
            self.follow(known, task, what)
        if known.state in self.terminal and not known.artifacts:
            known.artifacts = artifact_ids(task)
        return known

    def follow(self, known: Tracked, seen: dict[str, Any], what: str) -> None:
        """The target shows ``known`` as ``seen``: a finished task exactly as it was; one the
        agent holds in its state, or moved on by itself to another TaskState."""
        now = state(seen)
        if known.state in self.terminal:
            self.ctx.expect(now == known.state, f"{what}: task {known.id} was {known.state}, a terminal "
                                                f"state, and is now {now!r}", kind="state_changed")
            if "artifacts" in seen:
                self.ctx.expect(artifact_ids(seen) == known.artifacts,
                                f"{what}: the finished task {known.id} had artifacts {known.artifacts}, now "
                                f"{artifact_ids(seen)}", kind="state_changed")
            return
        self.ctx.expect(now in docs.task_states(), f"{what}: task {known.id} is in {now!r}, not a TaskState",
                        kind="schema_mismatch")
        if now != known.state:
            self.ctx.machine_stats[f"moved by itself from {known.state} to {now}"] += 1
            known.state = str(now)

    def read(self, known: Tracked, what: str) -> dict[str, Any] | None:
        """GetTask of a task of the model, followed; None where a canceled task was purged
        (section 3.3.1), which leaves the model."""
        reply = self.c.get(known.id)
        if known.state == docs.state_named("canceled") and a2a_error(self.ctx, reply) == "TaskNotFoundError":
            del self.tasks[known.id]
            return None
        got = task_result(self.ctx, reply, f"{what}: GetTask {known.id}")
        self.follow(known, got, f"{what}: GetTask")
        known.read = known.state
        return got

    # -- starting ----------------------------------------------------------------------
    @first_step()
    def first_tasks(self) -> None:
        """A finished task and one the agent asks for input on (where it can be driven
        there), so every rule has a task to work on from the first step."""
        for outcome in ("completed", "input_required"):
            if outcome in self.starts:
                self.start(outcome, "")

    def start(self, outcome: str, context: str) -> None:
        configuration = {"returnImmediately": True} if outcome == "long_running" else None
        fields = {"contextId": context} if context else {}
        reply = self.c.send(driven(self.c, outcome, **fields), configuration)
        if context and not reply.ok:  # section 3.4.1: an agent may refuse a context it made
            self.ctx.machine_stats["new task in a known context: refused"] += 1
            return
        result = result_of(self.ctx, reply, f"SendMessage ({outcome})")
        if is_message_answer(result):
            self.ctx.machine_stats["answered with a Message"] += 1
            return
        task = task_object(self.ctx, result.get("task"), f"SendMessage ({outcome})", reply)
        # what state a blocking answer shows is A2A-SEND-BLOCKING's, the context of a new task in
        # a known one A2A-MULTI-NEW-TASK-IN-CONTEXT's: the model follows the task from there
        self.record(task, f"SendMessage ({outcome})")
        self.ctx.machine_stats[f"started {outcome} as {state(task)}"] += 1

    @precondition(lambda self: len(self.tasks) < MOST_TASKS)
    @rule(data=st.data())
    def send(self, data: st.DataObject) -> None:
        """A new task: any outcome the agent can be driven to, in a new context or in the
        context of a task of the run."""
        outcome = pick(data, self.starts, label="outcome")
        contexts = list(dict.fromkeys(t.context for t in self.tasks.values() if t.context))
        shared = bool(contexts) and data.draw(st.booleans(), label="shared context")
        self.start(outcome, pick(data, contexts, label="context") if shared else "")

    # -- messages to existing tasks --------------------------------------------------------
    @precondition(lambda self: bool(self.of(frozenset(docs.interrupted_states()))))
    @rule(data=st.data())
    def follow_up_waiting(self, data: st.DataObject) -> None:
        """A message to a task waiting for input continues that task."""
        known = pick(data, self.of(frozenset(docs.interrupted_states())), label="task")
        outcome = pick(data, [o for o in ("completed", "input_required") if o in self.starts],
                       label="outcome")
        reply = follow_up(self.c, {"id": known.id, "contextId": known.context or None}, outcome)
        result = result_of(self.ctx, reply, f"SendMessage continuing the {known.state} task {known.id}")
        if is_message_answer(result):
            self.ctx.machine_stats["follow-up answered with a Message"] += 1
            return
        task = task_object(self.ctx, result.get("task"), "SendMessage continuing a task", reply)
        self.ctx.expect(task["id"] == known.id, f"a message continuing task {known.id} was answered with "
                                                f"task {task['id']}", kind="expectation")
        before = known.state
        known.state = str(state(task))  # the follow-up moves it: the answer is the model's now
        if known.state in self.terminal:
            known.artifacts = artifact_ids(task)
        self.ctx.machine_stats[f"follow-up from {before} to {known.state}"] += 1

    @precondition(lambda self: bool(self.untried("message", self.terminal)))
    @rule(data=st.data())
    def message_finished(self, data: st.DataObject) -> None:
        """A message to a finished task is refused and changes nothing."""
        known = pick(data, self.untried("message", self.terminal), label="task")
        known.probed.add(("message", known.state))
        reply = follow_up(self.c, {"id": known.id, "contextId": known.context or None})
        # the refusal is A2A-TASK-TERMINAL's to judge; the model holds that the task stays as it was
        answer = "accepted" if reply.ok else "refused"
        self.ctx.machine_stats[f"message to a {known.state} task: {answer}"] += 1
        self.read(known, f"after a message to the {known.state} task")

    # -- cancel, read, list -----------------------------------------------------------------
    @precondition(lambda self: bool(self.untried("cancel")))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        """A task in progress is canceled (or the agent says it cannot be); a finished one
        is refused or answered as it is, and stays so. Once per task and state."""
        known = pick(data, self.untried("cancel"), label="task")
        before = known.state
        known.probed.add(("cancel", before))
        reply = self.c.call("CancelTask", {"id": known.id})
        outcome = "answered" if reply.ok else str(a2a_error(self.ctx, reply))
        self.ctx.machine_stats[f"cancel of a {before} task: {outcome}"] += 1
        if before in self.terminal:
            self.cancel_finished(known, reply)
        else:
            self.cancel_holding(known, reply)
        if known.id in self.tasks:
            self.read(known, f"after a cancel of the {before} task")

    def cancel_finished(self, known: Tracked, reply: Reply) -> None:
        if reply.ok:
            what = f"CancelTask of the {known.state} task"
            self.follow(known, task_result(self.ctx, reply, what), what)
        elif known.state == docs.state_named("canceled") and a2a_error(self.ctx, reply) \
                == "TaskNotFoundError":
            del self.tasks[known.id]  # canceled and purged (section 3.3.1)

    def cancel_holding(self, known: Tracked, reply: Reply) -> None:
        if a2a_error(self.ctx, reply) == "TaskNotCancelableError":
            return  # "success is not guaranteed": GetTask says where it is
        got = task_result(self.ctx, reply, f"CancelTask of the {known.state} task {known.id}")
        canceled = docs.state_named("canceled")
        if state(got) != canceled and state(got) in self.terminal:
            # the agent ended the task first, by itself (finished its work, or gave up waiting
            # for input: nothing keeps an agent from failing a task it holds)
            self.follow(known, got, "CancelTask")
            return
        self.ctx.expect(state(got) == canceled,
                        f"CancelTask of the {known.state} task {known.id} answered it {state(got)!r}",
                        kind="expectation")
        known.state = str(state(got))

    @precondition(lambda self: bool(self.unread()))
    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        """GetTask of a task whose state moved since it was last read."""
        known = pick(data, self.unread(), label="task")
        self.read(known, "GetTask")

    @precondition(lambda self: bool(self.tasks))
    @rule(data=st.data())
    def read_again(self, data: st.DataObject) -> None:
        """GetTask of any task of the run: what there is to do once the run holds its most
        tasks and each was tried, read and listed (a finished one is read as it was)."""
        known = pick(data, list(self.tasks.values()), label="task")
        self.read(known, "GetTask again")

    @precondition(lambda self: bool(self.unlisted()) and not self.ctx.scratch.get(LOOKS_KEY))
    @rule(data=st.data())
    def list_context(self, data: st.DataObject) -> None:
        """A context of the run holding a task that moved since it was last listed, listed
        over all its pages: each task of the run in it once, as the model has it. A ListTasks
        the agent refuses is A2A-LIST-RESPONSE's: the model lists no more, and the row is
        blocked in its name once the rest ran."""
        context = pick(data, self.unlisted(), label="context")
        if self.c.look_or_later("ListTasks", {"contextId": context}, f"ListTasks of context {context}") \
                is None:
            return
        shown = self.listed(context)
        for known in [t for t in self.tasks.values() if t.context == context]:
            mine = [t for t in shown if t.get("id") == known.id]
            self.ctx.expect(len(mine) == 1, f"ListTasks of context {context} shows task {known.id} "
                                            f"{len(mine)} times", kind="expectation")
            self.follow(known, mine[0], f"ListTasks of context {context}")
            known.listed = known.state

    # -- streams ----------------------------------------------------------------------------
    def streams(self) -> bool:
        return self.c.capability("streaming")

    @precondition(lambda self: len(self.tasks) < MOST_TASKS and self.streams())
    @rule(data=st.data())
    def stream_send(self, data: st.DataObject) -> None:
        """A new task sent by SendStreamingMessage: the stream's Task is the model's, followed
        through its updates to the last state streamed (what GetTask must show later)."""
        from conformance.protocols.a2a.event_streams import expect_stream, open_stream

        outcomes = [o for o in self.starts if o not in ("long_running", "auth_required")]  # streams stay open
        outcome = pick(data, outcomes, label="outcome")
        what = f"SendStreamingMessage ({outcome})"
        stream = open_stream(self.c, "SendStreamingMessage", {"message": driven(self.c, outcome)}, what)
        expect_stream(self.ctx, stream)
        first = stream.events[0] if stream.events else None
        if first is not None and first.kind == "message":
            self.ctx.machine_stats["stream answered with a Message"] += 1
            return
        self.ctx.expect(first is not None and first.kind == "task" and isinstance(first.body, dict)
                        and isinstance(first.body.get("id"), str),
                        f"{what}: the stream does not begin with a Task: {stream.describe()}",
                        kind="expectation")
        assert first is not None
        known = self.record(first.body, what)
        self.streamed(known, stream)

    def streamed(self, known: Tracked, stream: Any) -> None:
        """The model follows ``known`` through a stream's status updates; a task it finished
        keeps the artifacts the stream built."""
        from conformance.protocols.a2a.event_streams import rebuilt

        for event in stream.events[1:]:
            if event.state is not None and known.state not in self.terminal:
                known.state = str(event.state)
                if known.state in self.terminal:
                    known.artifacts = list(rebuilt(stream)[0])
        self.ctx.machine_stats[f"streamed to {known.state}"] += 1

    @precondition(lambda self: self.streams() and bool(self.ctx.run.control_path)
                  and bool(self.untried("subscribe", self.moving)))
    @rule(data=st.data())
    def subscribe_working(self, data: st.DataObject) -> None:
        """A subscription to a task the agent works on sees it to its end (control has the
        agent work it while the kit is subscribed)."""
        from conformance.protocols.a2a.event_streams import expect_stream, subscription

        known = pick(data, self.untried("subscribe", self.moving), label="task")
        known.probed.add(("subscribe", known.state))
        self.ctx.control("progress_on_subscribe", id=known.id)
        stream = subscription(self.c, known.id, f"SubscribeToTask of the {known.state} task {known.id}")
        expect_stream(self.ctx, stream)
        first = stream.events[0] if stream.events else None
        if first is not None and first.kind == "task" and isinstance(first.body, dict):
            self.follow(known, first.body, stream.what)
        self.streamed(known, stream)

    @precondition(lambda self: self.streams() and bool(self.untried("subscribe", self.terminal)))
    @rule(data=st.data())
    def subscribe_finished(self, data: st.DataObject) -> None:
        """A subscription to a finished task is refused, and the task stays as it was."""
        from conformance.protocols.a2a.event_streams import subscription

        known = pick(data, self.untried("subscribe", self.terminal), label="task")
        known.probed.add(("subscribe", known.state))
        stream = subscription(self.c, known.id, f"SubscribeToTask of the {known.state} task {known.id}")
        refused = stream.reply is not None and not stream.reply.ok and not stream.events
        # the refusal is A2A-SUB-TERMINAL-REFUSED's to judge; the model holds that the task stays
        answer = "refused" if refused else "served"
        self.ctx.machine_stats[f"subscription to a {known.state} task: {answer}"] += 1
        self.read(known, f"after a subscription to the {known.state} task")

    def listed(self, context: str) -> list[dict[str, Any]]:
        pages = walk(self.c, {"contextId": context}, PAGES, f"ListTasks of context {context}")
        return [t for page in pages for t in page["tasks"]]

    def teardown(self) -> None:
        """At the end of each run every finished task is still as it finished."""
        for known in self.of(self.terminal):
            self.read(known, "at the end of the run")


@requirement(id="A2A-TASK-MACHINE", level="MUST",
             title="Under any sequence of new tasks (sent or streamed), follow-ups, messages to finished "
                   "tasks, cancels, subscriptions, GetTask and ListTasks, a terminal task never changes and "
                   "GetTask and ListTasks agree with the last answer (stateful)",
             source=proto_at("This is a terminal state."),
             faults=["list_shows_first_state", "waiting_cancel_not_stored", "canceled_task_resumes",
                     "streamed_task_left_working"])
def check_task_machine(ctx: CheckContext) -> None:
    ctx.run_machine(TaskMachine)
    blocked_looks(ctx)


@check_task_machine.fault
def list_shows_first_state(ref: A2AReference) -> None:
    """ListTasks shows each task in the state it was created in."""
    first: dict[str, dict[str, Any]] = {}

    @replaces(ref.set_status)
    def set_status(original: Any, task: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        original(task, *args, **kwargs)
        first.setdefault(task["id"], dict(task["status"]))

    @replaces(ref.op_ListTasks)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        out: dict[str, Any] = original(params, caller)
        for task in out.get("tasks", []):
            task["status"] = first.get(task.get("id"), task.get("status"))
        return out


@check_task_machine.fault
def waiting_cancel_not_stored(ref: A2AReference) -> None:
    """CancelTask of a task waiting for input answers it canceled, but the task keeps waiting."""
    @replaces(ref.op_CancelTask)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = ref.tasks.get(params.get("id", ""))
        before = dict(task["status"]) if task else None
        out: dict[str, Any] = original(params, caller)
        if task is not None and before is not None and before["state"] in docs.interrupted_states():
            task["status"] = before
        return out


@check_task_machine.fault
def canceled_task_resumes(ref: A2AReference) -> None:
    """A message to a canceled task is taken: the agent runs again on it."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = ref.tasks.get((params.get("message") or {}).get("taskId", ""))
        if task is not None and task["status"]["state"] == docs.state_named("canceled"):
            task["status"] = {**task["status"], "state": docs.state_named("working")}
        return dict(original(params, caller))



@fault
def streamed_task_left_working(ref: A2AReference) -> None:
    """A task sent by SendStreamingMessage streams its completion, but is stored as it started
    (working)."""
    @replaces(ref.op_SendStreamingMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> Any:
        stream = original(params, caller)
        task = ref.tasks.get(stream.task_id) if stream.task_id else None
        if task is not None:
            task["status"] = {**task["status"], "state": docs.state_named("working")}
        return stream
