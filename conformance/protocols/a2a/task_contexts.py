"""A new task in a known context (section 3.4.3): a message naming a context the agent issued, and
no task, starts a new task in that context."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.documents import spec
from conformance.protocols.a2a.driving import OUTCOME, driven, reaching, task_answer
from conformance.protocols.a2a.reference import A2AReference


@requirement(id="A2A-MULTI-NEW-TASK-IN-CONTEXT", level="MUST",
             title="A message naming a known contextId and no taskId is answered with a new task in that "
                   "context (or a Message, or refused)",
             source=spec("use `contextId` without `taskId` to start a new task within an existing "
                         "conversation"),
             faults=["known_context_replaced", "known_context_continues_task"])
def check_new_task_in_context(ctx: CheckContext) -> None:
    """The context is one the agent made (for a completed task of the check's); a refusal
    (section 3.4.1: agents may expire contexts) or a Message answer leaves it untested."""
    c = A2AClient(ctx)
    first = reaching(c)
    context = first.get("contextId")
    if not isinstance(context, str) or not context:
        raise Untested("the agent gave the task no contextId", OUTCOME)
    reply = c.send(driven(c, "completed", contextId=context))
    if not reply.ok:
        raise Untested(f"the agent refused a new message in its context {context} ({reply.describe()})",
                       OUTCOME)
    task = task_answer(ctx, reply, f"SendMessage with contextId {context} and no taskId")
    ctx.expect(task["id"] != first["id"], f"a message naming context {context} and no taskId was answered "
                                          "with the "
                                          f"earlier task {first['id']}, not a new one", kind="expectation")
    ctx.expect(task.get("contextId") == context, f"the new task is in context {task.get('contextId')!r}, "
                                                 "not the "
                                                 f"one named, {context}", kind="expectation")


def known_context(ref: A2AReference, params: dict[str, Any]) -> Any:
    """The task of the context a message without taskId names, where one exists."""
    message = params.get("message") or {}
    if message.get("taskId") or not message.get("contextId"):
        return None
    in_context = [t for t in ref.tasks.values() if t["contextId"] == message["contextId"]]
    return in_context[-1] if in_context else None


@check_new_task_in_context.fault
def known_context_replaced(ref: A2AReference) -> None:
    """A message naming a context the agent made (and no taskId) gets a new task in a new context."""
    @replaces(ref.op_SendMessage)
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        if known_context(ref, params) is not None:
            params = {**params, "message": {k: v for k, v in params["message"].items() if k != "contextId"}}
        return original(params, caller)


@check_new_task_in_context.fault
def known_context_continues_task(ref: A2AReference) -> None:
    """A message naming a context the agent made (and no taskId) is added to the context's latest
    task, which is answered again."""
    @replaces(ref.op_SendMessage)
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        task = known_context(ref, params)
        if task is None:
            return original(params, caller)
        task.setdefault("history", []).append({**params["message"], "taskId": task["id"]})
        return {"task": ref.view(task)}
