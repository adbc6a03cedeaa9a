"""GetTask and CancelTask, and what holds of every task (sections 3.1.3, 3.1.5, 3.3.1,
3.4.2, 4.1.3): GetTask answers the task asked for, its history capped by historyLength; a
task in progress is canceled and stays so, a second cancel has the same effect; a terminal
task takes no further message and does not move; each new task has an id of its own; and
every state a task shows is one of the proto's."""

from __future__ import annotations

from typing import Any

from conformance.documents.schemas import schema_errors
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import answer, arguments, replaces, returns
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.client import A2AClient, a2a_error, blocked_looks, state
from conformance.protocols.a2a.documents import proto_at, schema, spec
from conformance.protocols.a2a.driving import (
    OUTCOME,
    artifact_ids,
    canceled_task,
    drivable,
    fetched,
    finished,
    follow_up,
    history_of,
    new_task,
    result_of,
    task_result,
    task_with_history,
)
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.http import json_excerpt


# -- GetTask -----------------------------------------------------------------------------
@requirement(id="A2A-GET-TASK", level="MUST",
             title="GetTask answers the Task asked for (its id), with the proto's REQUIRED fields",
             source=spec("Current state and artifacts of the requested task", after="#### 3.1.3"),
             faults=[answer("get_task_other_id", "op_GetTask", "GetTask answers the task under another id.",
                            set={"id": "conformance-reference-other-task"}),
                     answer("get_task_without_status", "op_GetTask",
                            "GetTask answers a Task without its status.",
                            drop=["status"])])
def check_get_task(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    task = new_task(c)
    reply = c.get(task["id"])
    got = result_of(ctx, reply, f"GetTask of the task the check made ({task['id']})")
    problems = schema_errors(schema(ctx.profile, "Task"), got, limit=5)
    ctx.expect(not problems, "the GetTask answer is not a Task: " + "; ".join(problems),
               kind="schema_mismatch")
    ctx.expect(got.get("id") == task["id"], f"GetTask of {task['id']} answered task {got.get('id')!r}",
               kind="expectation")


@requirement(id="A2A-GET-HISTORY-LENGTH", level="MUST",
             title="GetTask's historyLength caps the history: 0 shows no message, 1 at most one (of a longer "
                   "history)",
             source=proto_at("The server MUST NOT", after="message GetTaskRequest"),
             faults=[arguments("get_history_ignored", "op_GetTask", "GetTask ignores historyLength.",
                               index=0, drop=["historyLength"])])
def check_get_history_length(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    task = task_with_history(c)
    for cap in (0, 1):
        with ctx.subcheck(f"historyLength {cap}"):
            what = f"GetTask historyLength {cap}"
            shown = history_of(ctx, task_result(ctx, c.get(task["id"], historyLength=cap), what), what)
            ctx.expect(len(shown) <= cap, f"GetTask with historyLength {cap} answered {len(shown)} history "
                                          f"message(s): {json_excerpt(shown)}", kind="expectation")


@requirement(id="A2A-TASK-HISTORY-OMITTED", level="SHOULD",
             title="With historyLength 0, SendMessage, GetTask and ListTasks leave the history member out "
                   "(not [])",
             source=spec("the `history` field SHOULD be omitted", after="#### 3.2.4"),
             faults=["history_zero_empty_list"])
def check_history_omitted(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    task = new_task(c, configuration={"historyLength": 0}, what="SendMessage with historyLength 0")
    shown = {"SendMessage": [task]}
    got = c.look_or_later("GetTask", {"id": task["id"], "historyLength": 0}, "GetTask with historyLength 0")
    if got is not None:
        shown["GetTask"] = [got]
    if task.get("contextId"):
        listing = c.look_or_later("ListTasks", {"contextId": task["contextId"], "historyLength": 0},
                                  "ListTasks with historyLength 0")
        listed = (listing or {}).get("tasks")
        if listing is not None:
            rows = listed if isinstance(listed, list) else []
            shown["ListTasks"] = [t for t in rows if isinstance(t, dict)]
    for what, tasks in shown.items():
        with ctx.subcheck(what):
            carrying = [(t.get("id"), json_excerpt(t["history"])) for t in tasks if "history" in t]
            ctx.expect(not carrying, f"{what} with historyLength 0 shows a history member: {carrying}",
                       kind="expectation")
    blocked_looks(ctx)


@check_history_omitted.fault
def history_zero_empty_list(ref: A2AReference) -> None:
    """historyLength 0 shows the history as [] instead of leaving it out."""
    @replaces(ref.view)
    def view(original: Any, task: dict[str, Any], history_length: Any = None, *args: Any) -> dict[str, Any]:
        out: dict[str, Any] = original(task, history_length, *args)
        if history_length is not None and int(history_length) == 0:
            out["history"] = []
        return out


# -- CancelTask ------------------------------------------------------------------------------
@requirement(id="A2A-CANCEL-TASK", level="MUST",
             title="CancelTask of a task in progress answers it TASK_STATE_CANCELED, and GetTask then shows "
                   "it canceled",
             source=spec("Updated [`Task`](#411-task) with cancellation status", after="#### 3.1.5"),
             faults=[answer("cancel_answers_working", "op_CancelTask",
                            "CancelTask answers the task still working.",
                            edit=lambda out, *a: out["status"].update(state=docs.state_named("working"))),
                     "cancel_not_stored"])
def check_cancel_task(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    canceled = docs.state_named("canceled")
    got = canceled_task(c)
    with ctx.subcheck("the answer"):
        ctx.expect(state(got) == canceled, f"CancelTask answered the task in {state(got)!r}, not {canceled}",
                   kind="expectation")
    with ctx.subcheck("GetTask after"):
        later = c.get(got["id"])
        ctx.expect(later.ok and state(later.result) == canceled,
                   f"GetTask of the canceled task: {later.describe()}, expected {canceled}",
                   kind="state_changed")


@check_cancel_task.fault
def cancel_not_stored(ref: A2AReference) -> None:
    """CancelTask answers the task canceled but the task keeps working."""
    @replaces(ref.op_CancelTask)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = ref.tasks.get(params.get("id", ""))
        before = dict(task["status"]) if task else None
        out: dict[str, Any] = original(params, caller)
        if task is not None and before is not None:
            task["status"] = before
        return out


@requirement(id="A2A-CANCEL-IDEMPOTENT", level="MUST",
             title="A second CancelTask of a canceled task has the same effect: the canceled task, "
                   "TaskNotCancelableError, or TaskNotFoundError (purged); it stays canceled",
             source=spec("**Cancel Task** operations are idempotent"),
             faults=["cancel_again_fails", "cancel_again_revives"])
def check_cancel_idempotent(ctx: CheckContext) -> None:
    """Section 3.1.5 names TaskNotCancelableError for a task "already ... canceled", and
    section 3.3.1 TaskNotFoundError for one canceled and purged: either, or the canceled
    task again; and the task is still canceled (or gone) after."""
    c = A2AClient(ctx)
    canceled = docs.state_named("canceled")
    first = canceled_task(c)
    if state(first) != canceled:
        raise Untested(f"the first CancelTask answered {state(first)!r}: A2A-CANCEL-TASK is about it",
                       OUTCOME)
    reply = c.call("CancelTask", {"id": first["id"]})
    error = a2a_error(ctx, reply)
    with ctx.subcheck("the second answer"):
        ctx.expect((reply.ok and isinstance(reply.result, dict) and state(reply.result) == canceled)
                   or error in ("TaskNotCancelableError", "TaskNotFoundError"),
                   f"a second CancelTask of a canceled task answered {reply.describe()}: expected the "
                   "canceled task, TaskNotCancelableError or TaskNotFoundError", kind="expectation")
    with ctx.subcheck("GetTask after"):
        later = c.get(first["id"])
        purged = a2a_error(ctx, later) == "TaskNotFoundError"
        ctx.expect(purged or (later.ok and state(later.result) == canceled),
                   f"GetTask after a second CancelTask: {later.describe()}, expected the task still "
                   f"{canceled}",
                   kind="state_changed")


@check_cancel_idempotent.fault
def cancel_again_fails(ref: A2AReference) -> None:
    """A second CancelTask of a canceled task fails with an internal error."""
    @replaces(ref.op_CancelTask)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = ref.tasks.get(params.get("id", ""))
        if task is not None and task["status"]["state"] == docs.state_named("canceled"):
            raise Refusal("InternalError", "the task is already canceled")
        return dict(original(params, caller))


@check_cancel_idempotent.fault
def cancel_again_revives(ref: A2AReference) -> None:
    """A second CancelTask of a canceled task sets it working again."""
    @replaces(ref.op_CancelTask)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = ref.tasks.get(params.get("id", ""))
        if task is not None and task["status"]["state"] == docs.state_named("canceled"):
            ref.set_status(task, "working")
            return dict(ref.view(task))
        return dict(original(params, caller))


# -- a terminal task -----------------------------------------------------------------------------
@requirement(id="A2A-TASK-TERMINAL", level="MUST",
             title="A task in a terminal state refuses a further message, and neither its state nor its "
                   "artifacts change",
             source=spec("cannot accept further messages", after="#### 3.1.1"),
             faults=["terminal_task_accepts_message", "terminal_refusal_moves_state"])
def check_task_terminal(ctx: CheckContext) -> None:
    """A finished task of each terminal state the agent can be driven to (completed, failed,
    rejected: polled to its end where the agent answers before finishing; canceled: a
    long-running task the agent canceled), continued with its taskId and contextId. Which
    error refuses it is A2A-ERR-*'s. Untested when no task of the agent's ended."""
    c = A2AClient(ctx)
    judged, skipped = 0, []
    for outcome in ("completed", "failed", "rejected", "canceled"):
        try:
            task = finished(c, outcome)
        except Untested as exc:
            skipped.append(f"{outcome}: {exc}")
            continue
        judged += 1
        with ctx.subcheck(f"{state(task)}"):
            before = fetched(c, task["id"])
            reply = follow_up(c, task)
            ctx.expect(not reply.ok, f"a message to the {state(task)} task {task['id']} was accepted: "
                                     f"{reply.describe()}", kind="accepted_invalid")
            after = fetched(c, task["id"])
            ctx.expect(state(after) == state(before) and artifact_ids(after) == artifact_ids(before),
                       f"the {state(before)} task changed after a message to it: now {state(after)!r} with "
                       f"artifacts {artifact_ids(after)} (were {artifact_ids(before)})", kind="state_changed")
    if not judged:
        raise Untested("no task of the check's reached a terminal state: " + "; ".join(skipped), OUTCOME)


@check_task_terminal.fault
def terminal_task_accepts_message(ref: A2AReference) -> None:
    """A message to a terminal task is accepted: the agent runs again on it."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = ref.tasks.get((params.get("message") or {}).get("taskId", ""))
        if task is not None and task["status"]["state"] in docs.terminal_states():
            task["status"] = {**task["status"], "state": docs.state_named("working")}
        return dict(original(params, caller))


@check_task_terminal.fault
def terminal_refusal_moves_state(ref: A2AReference) -> None:
    """A message to a terminal task is refused, but the task is left working."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        try:
            return dict(original(params, caller))
        except Refusal as refusal:
            task = ref.tasks.get((params.get("message") or {}).get("taskId", ""))
            if refusal.name == "UnsupportedOperationError" and task is not None:
                ref.set_status(task, "working")
            raise


# -- ids and states --------------------------------------------------------------------------
@requirement(id="A2A-TASK-IDS-UNIQUE", level="MUST",
             title="Each new task gets a taskId of its own",
             source=spec("Agents **MUST** generate a unique `taskId` for each new task they create"),
             faults=[returns("task_ids_repeat", "new_id", "task-conformance-same",
                             "Every new task gets the same id.", when=lambda kind: kind == "task")])
def check_task_ids_unique(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    ids = [new_task(c, what=f"SendMessage {n + 1} of 3")["id"] for n in range(3)]
    ctx.expect(len(set(ids)) == len(ids), f"three new tasks got the ids {ids}", kind="expectation")


def states_seen(c: A2AClient) -> list[tuple[str, Any]]:
    """(what, state) of every task answer the check can get: an ordinary task, each outcome
    the agent can be driven to, a task answered at once, and one canceled."""
    seen: list[tuple[str, Any]] = []
    for outcome in ("completed", "input_required", "auth_required", "failed", "rejected"):
        if drivable(c.ctx, outcome):
            task = new_task(c, outcome)
            seen += [(f"SendMessage ({outcome})", state(task)),
                     (f"GetTask ({outcome})", state(fetched(c, task["id"])))]
    if drivable(c.ctx, "long_running"):
        task = new_task(c, "long_running", {"returnImmediately": True})
        seen.append(("SendMessage (long_running, returnImmediately)", state(task)))
        reply = c.call("CancelTask", {"id": task["id"]})
        if reply.ok:
            seen.append(("CancelTask", state(reply.result)))
        seen.append(("GetTask after CancelTask", state(fetched(c, task["id"]))))
    return seen


@requirement(id="A2A-TASK-STATES", level="MUST",
             title="Every state a task shows is one of the proto's TaskState values, never "
                   "TASK_STATE_UNSPECIFIED",
             source=spec("indicate that the field **MUST** be present and set", after="### 5.7"),
             faults=["working_state_unspecified"])
def check_task_states(ctx: CheckContext) -> None:
    """TaskStatus.state is REQUIRED: present and set, and an enum set is not its zero
    value (UNSPECIFIED). Each state an answer shows is judged on its own."""
    c = A2AClient(ctx)
    known = docs.task_states()
    for what, seen in states_seen(c):
        with ctx.subcheck(what):
            ctx.expect(seen in known, f"{what}: the task's state is {seen!r}, not one of {', '.join(known)}",
                       kind="schema_mismatch")


@check_task_states.fault
def working_state_unspecified(ref: A2AReference) -> None:
    """A working task shows TASK_STATE_UNSPECIFIED."""
    @replaces(ref.set_status)
    def set_status(original: Any, task: dict[str, Any], state_word: str, text: str | None = None) -> None:
        original(task, state_word, text)
        if state_word == "working":
            task["status"]["state"] = docs.proto().enums["TaskState"][0]

