"""Multi-turn interactions (section 3.4): the contextId the agent generates comes back with
the task, a client's contextId is kept or refused (never replaced), a taskId names an
existing task or is TaskNotFoundError, the context follows the task when only its taskId is
given, a mismatched pair is refused, and a task the agent asked for input on is continued
(the same task, not a new one), several times in a row."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.checks.expect import expect_refused
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import answer, arguments, replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answer_edits import drop_in
from conformance.protocols.a2a.client import A2AClient, a2a_error, state
from conformance.protocols.a2a.documents import proto_at, spec
from conformance.protocols.a2a.driving import (
    OUTCOME,
    driven,
    fetched,
    follow_up,
    new_task,
    reaching,
    result_of,
    task_answer,
)
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.http import json_excerpt


def asking_task(c: A2AClient) -> dict[str, Any]:
    """A new task the agent asked for input on (untested where the agent goes elsewhere)."""
    return reaching(c, "input_required")


# -- contexts ------------------------------------------------------------------------------
@requirement(id="A2A-MULTI-CONTEXT-RETURNED", level="MUST",
             title="A contextId the agent generated for a new task comes back in SendMessage's answer (the "
                   "one GetTask shows)",
             source=spec("If an agent generates a new `contextId`, it **MUST** be included in the response"),
             faults=[answer("answer_without_context_id", "op_SendMessage",
                            "SendMessage answers a new task without the contextId the agent gave it.",
                            edit=lambda out, *a: drop_in(out, "task", "contextId"))])
def check_context_returned(ctx: CheckContext) -> None:
    """Whether the agent generated one shows in GetTask: where it did not (the MAY), the
    requirement is untested."""
    c = A2AClient(ctx)
    task = new_task(c, what="SendMessage without contextId")
    later = fetched(c, task["id"]).get("contextId")
    if not later and not task.get("contextId"):
        raise Untested("the agent gives this task no contextId at all (section 3.4.1: it MAY generate one)",
                       OUTCOME)
    ctx.expect(task.get("contextId") == later,
               f"SendMessage answered the new task with contextId {task.get('contextId', '(absent)')!r}; "
               f"GetTask shows {later!r}", kind="expectation")


@requirement(id="A2A-MULTI-CONTEXT-KEPT", level="MUST",
             title="A new message with a client-made contextId is answered in that context, or refused: "
                   "never in a context the agent made up",
             source=spec("**MUST NOT** generate a new `contextId` for the response"),
             faults=[arguments("client_context_replaced", "op_SendMessage",
                               "A client's contextId on a new task is replaced by a new one the agent makes.",
                               index=0, edit=lambda p: {**p, "message": {
                                   k: v for k, v in p["message"].items()
                                   if k != "contextId" or p["message"].get("taskId")}})])
def check_context_kept(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    mine = f"conformance-context-{uuid.uuid4()}"
    reply = c.send(driven(c, "completed", contextId=mine))
    if not reply.ok:  # refused: the other reading of section 3.4.1 (which error is A2A-ERR-*'s)
        expect_refused(ctx, reply, f"SendMessage with contextId {mine}")
        return
    result = result_of(ctx, reply, f"SendMessage with contextId {mine}")
    answered = (result.get("task") or result.get("message") or {}).get("contextId")
    ctx.expect(answered == mine, f"a new message with contextId {mine} was answered in context {answered!r}: "
                                 f"kept or refused, never replaced ({reply.describe()})", kind="expectation")


@requirement(id="A2A-MULTI-UNKNOWN-TASK", level="MUST",
             title="A message naming a taskId no task has is refused with TaskNotFoundError",
             source=spec("Agents **MUST** return a [`TaskNotFoundError`]"),
             faults=[arguments("unknown_task_starts_new", "op_SendMessage",
                               "A message naming an unknown taskId starts a new task.",
                               index=0, edit=lambda p: {**p, "message": {
                                   k: v for k, v in p["message"].items() if k != "taskId"}}),
                     "unknown_task_invalid_params"])
def check_unknown_task(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    unknown = f"conformance-no-such-task-{uuid.uuid4()}"
    reply = c.send(driven(c, "completed", taskId=unknown))
    ctx.expect(a2a_error(ctx, reply) == "TaskNotFoundError",
               f"a message with taskId {unknown}, which names no task, was answered {reply.describe()}: "
               "expected TaskNotFoundError", kind="accepted_invalid" if reply.ok else "wrong_error_code")


@check_unknown_task.fault
def unknown_task_invalid_params(ref: A2AReference) -> None:
    """A message naming an unknown taskId is refused as invalid parameters."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task_id = (params.get("message") or {}).get("taskId")
        if task_id and task_id not in ref.tasks:
            ref.next_outcome()  # the message is handled: the agent's next outcome is spent, as it would be
            raise Refusal("InvalidParamsError", f"taskId {task_id} is invalid")
        return dict(original(params, caller))


@requirement(id="A2A-MULTI-CONTEXT-INFERRED", level="MUST",
             title="A message giving only a taskId continues the task in the task's own context",
             source=spec("Agents **MUST** infer `contextId` from the task if only `taskId` is provided"),
             faults=["follow_up_context_lost"])
def check_context_inferred(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    task = asking_task(c)
    reply = follow_up(c, task, context=False)
    got = task_answer(ctx, reply, "SendMessage continuing a task by its taskId alone")
    ctx.expect(got.get("contextId") == task.get("contextId"),
               f"the task was in context {task.get('contextId')!r}; continued by taskId alone it is answered "
               f"in {got.get('contextId')!r}", kind="expectation")
    later = fetched(c, task["id"])
    ctx.expect(later.get("contextId") == task.get("contextId"),
               f"after a message giving only its taskId, GetTask shows the task in context "
               f"{later.get('contextId')!r}, not {task.get('contextId')!r}", kind="state_changed")


@check_context_inferred.fault
def follow_up_context_lost(ref: A2AReference) -> None:
    """A message giving only a taskId moves the task to a new context."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        message = params.get("message") or {}
        task = ref.tasks.get(message.get("taskId", ""))
        if task is not None and not message.get("contextId"):
            task["contextId"] = ref.new_id("ctx")
        return dict(original(params, caller))


@requirement(id="A2A-MULTI-CONTEXT-MISMATCH", level="MUST",
             title="A message whose contextId is not its task's is refused, and the task does not move",
             source=spec("Agents **MUST** reject messages containing mismatching `contextId` and `taskId`"),
             faults=["context_mismatch_accepted"])
def check_context_mismatch(ctx: CheckContext) -> None:
    """A task waiting for input, sent a message with its taskId and the context of another
    task of the check's (a refusal for this cause: the task would take a message)."""
    c = A2AClient(ctx)
    task = asking_task(c)
    other = new_task(c, what="SendMessage making a second context").get("contextId")
    if not other or other == task.get("contextId"):
        other = f"conformance-context-{uuid.uuid4()}"
    reply = c.send(driven(c, "completed", taskId=task["id"], contextId=other))
    ctx.expect(not reply.ok, f"a message with the taskId of a task in context {task.get('contextId')!r} and "
                             f"contextId {other!r} was accepted: {reply.describe()}", kind="accepted_invalid")
    later = fetched(c, task["id"])
    ctx.expect(state(later) == state(task), f"the task was {state(task)}; after the refused message it is "
                                            f"{state(later)!r}", kind="state_changed")


@check_context_mismatch.fault
def context_mismatch_accepted(ref: A2AReference) -> None:
    """A message whose contextId is not its task's is taken as if it named the task's."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        message = dict(params.get("message") or {})
        task = ref.tasks.get(message.get("taskId", ""))
        if task is not None and message.get("contextId"):
            message["contextId"] = task["contextId"]
        return dict(original({**params, "message": message}, caller))


# -- continuing a task ------------------------------------------------------------------------
@requirement(id="A2A-MULTI-RESUME", level="MUST",
             title="A message with the taskId and contextId of a task the agent asked for input on continues "
                   "that task, not a new one",
             source=proto_at("If set, the message will be associated with the given task"),
             faults=["follow_up_new_task"])
def check_resume(ctx: CheckContext) -> None:
    """Section 3.4.3: "The client continues the interaction by sending a new message with
    the same taskId and contextId"; the answer is that task (GetTask agrees)."""
    c = A2AClient(ctx)
    task = asking_task(c)
    got = task_answer(ctx, follow_up(c, task), "SendMessage continuing the task the agent asked for input on")
    ctx.expect(got["id"] == task["id"], f"the message continuing task {task['id']} was answered with task "
                                        f"{got['id']}: it must be the same task", kind="expectation")
    later = fetched(c, task["id"])
    ctx.expect(state(later) == state(got), f"GetTask shows the continued task {state(later)!r}, the answer "
                                           f"showed {state(got)!r}", kind="expectation")


@check_resume.fault
def follow_up_new_task(ref: A2AReference) -> None:
    """A message continuing a task the agent asked for input on starts a new task instead."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        message = dict(params.get("message") or {})
        task = ref.tasks.get(message.get("taskId", ""))
        if task is not None and task["status"]["state"] in docs.interrupted_states():
            message.pop("taskId")
        return dict(original({**params, "message": message}, caller))


TURNS = 3


@requirement(id="A2A-MULTI-FOLLOW-UPS", level="MUST",
             title=f"Several messages in a row on a task the agent keeps asking for input on all continue "
                   f"that one task ({TURNS} turns)",
             source=spec("Clients can send additional messages with `taskId` references to continue"),
             faults=["third_turn_new_task"])
def check_follow_ups(ctx: CheckContext) -> None:
    """The agent asked for input again at each turn, then the last turn ends the task;
    every answer is the one task, and GetTask agrees with the last."""
    c = A2AClient(ctx)
    task = asking_task(c)
    for turn in range(1, TURNS + 1):
        outcome = "input_required" if turn < TURNS else "completed"
        got = task_answer(ctx, follow_up(c, task, outcome), f"SendMessage turn {turn + 1}")
        if got["id"] == task["id"]:  # where the agent works on it, as it stands once it stopped
            got = c.settled(got)
        ctx.expect(got["id"] == task["id"], f"turn {turn + 1} on task {task['id']} was answered with task "
                                            f"{got['id']}: every turn continues the one task",
                   kind="expectation")
        if turn < TURNS and state(got) != docs.state_named("input_required"):
            raise Untested(f"the agent took the task to {state(got)!r} at turn {turn + 1}, not "
                           "input-required again", OUTCOME)
    later = fetched(c, task["id"])
    ctx.expect(state(later) == state(got), f"after {TURNS + 1} turns GetTask shows {state(later)!r}, the "
                                           f"last answer {state(got)!r}: {json_excerpt(later)}",
               kind="expectation")


@check_follow_ups.fault
def third_turn_new_task(ref: A2AReference) -> None:
    """The third message on a task starts a new task."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        message = dict(params.get("message") or {})
        task = ref.tasks.get(message.get("taskId", ""))
        if task is not None and len(task.get("history", [])) >= 2:
            message.pop("taskId")
        return dict(original({**params, "message": message}, caller))

