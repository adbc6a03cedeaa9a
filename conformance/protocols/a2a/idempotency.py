"""Reads that change nothing and a repeated messageId (sections 3.3.1, 3.4.3): GetTask and
ListTasks twice see the same, and a SendMessage repeating a messageId is answered or refused as
documented."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import REST
from conformance.protocols.a2a.cards import extended_card
from conformance.protocols.a2a.client import A2AClient, a2a_error, blocked_looks, state
from conformance.protocols.a2a.documents import spec
from conformance.protocols.a2a.driving import OUTCOME, driven, new_task, task_answer
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt


def settled(task: dict[str, Any]) -> bool:
    return state(task) in (*docs.terminal_states(), *docs.interrupted_states())


def same_twice(ctx: CheckContext, c: A2AClient, method: str, params: dict[str, Any], what: str,
               ignore: tuple[str, ...] = ()) -> None:
    """``method`` twice with nothing changed between: the same answer (``ignore``'s members
    aside). The first is a look: refused, the row is blocked in the operation's own name."""
    first = c.look_or_later(method, params, what)
    if first is None:
        return
    second = c.call(method, params)
    ctx.expect(second.ok, f"{what}: served once, then refused: {second.describe()}", kind="rejected_valid")
    views = [{k: v for k, v in r.items() if k not in ignore} if isinstance(r, dict) else r
             for r in (first, second.result)]
    ctx.expect(views[0] == views[1], f"{what} twice with nothing changed between answered differently: "
                                     f"{json_excerpt(views[0])} then {json_excerpt(views[1])}",
               kind="state_changed")


@requirement(id="A2A-IDEM-GET", level="MUST",
             title="GetTask, ListTasks and GetExtendedAgentCard repeated with nothing changed between give "
                   "the same answer",
             source=spec("**Get operations** (Get Task, List Tasks, Get Extended Agent Card) are naturally "
                         "idempotent"),
             faults=["get_task_counts_reads", "list_tasks_counts_reads"])
def check_idem_get(ctx: CheckContext) -> None:
    """About a task the check made, in a state that does not move by itself (terminal or
    interrupted); ListTasks filtered to its context. A page token is opaque: a new one for
    the same page is not judged."""
    c = A2AClient(ctx)
    task = c.settled(new_task(c))
    if not settled(task):
        raise Untested(f"the agent left the task in {state(task)!r}, which may still change", OUTCOME)
    with ctx.subcheck("GetTask"):
        same_twice(ctx, c, "GetTask", {"id": task["id"]}, f"GetTask {task['id']}")
    if isinstance(task.get("contextId"), str):
        with ctx.subcheck("ListTasks"):
            same_twice(ctx, c, "ListTasks", {"contextId": task["contextId"]},
                       f"ListTasks of context {task['contextId']}", ignore=("nextPageToken",))
    if extended_card(c) is not None:
        with ctx.subcheck("GetExtendedAgentCard"):
            same_twice(ctx, c, "GetExtendedAgentCard", {}, "GetExtendedAgentCard")
    blocked_looks(ctx)


def count_read(task: dict[str, Any]) -> None:
    task["metadata"] = {**task.get("metadata", {}), "reads": task.get("metadata", {}).get("reads", 0) + 1}


@check_idem_get.fault
def get_task_counts_reads(ref: A2AReference) -> None:
    """Each GetTask counts itself in the task's metadata (a read changes the task)."""
    @replaces(ref.op_GetTask)
    def get(original: Any, params: dict[str, Any], caller: str) -> Any:
        task = ref.tasks.get(params.get("id", ""))
        if isinstance(task, dict):
            count_read(task)
        return original(params, caller)


@check_idem_get.fault
def list_tasks_counts_reads(ref: A2AReference) -> None:
    """Each ListTasks counts itself in the metadata of every task it lists."""
    @replaces(ref.op_ListTasks)
    def listing(original: Any, params: dict[str, Any], caller: str) -> Any:
        out = original(params, caller)
        for shown in out.get("tasks", []):
            count_read(ref.tasks[shown["id"]])
        return out


def documented(ctx: CheckContext, reply: Reply) -> bool:
    """A refusal the documents name for a request: an A2A error of the table, or a JSON-RPC
    error of section 9.5 other than an internal one; over HTTP+JSON, a 4xx."""
    name = a2a_error(ctx, reply)
    if name == "InternalError" or reply.status >= 500:
        return False
    if ctx.binding.kind == REST:
        return 400 <= reply.status < 500
    return name is not None


@requirement(id="A2A-IDEM-SEND", level="MUST",
             title="A SendMessage repeating a messageId is answered (the same task or a new one) or refused "
                   "with a documented error, never failed",
             source=spec("**Send Message** operations MAY be idempotent"),
             faults=["repeated_message_internal_error"])
def check_idem_send(ctx: CheckContext) -> None:
    """Section 3.3.1 lets the agent detect the duplicate (the same task again) or not (a new
    task): both pass; section 3.3.2 wants any error an appropriate one."""
    c = A2AClient(ctx)
    message = driven(c, "completed")
    first = c.send(message)
    task_answer(ctx, first, "SendMessage")
    again = c.send(driven(c, "completed", messageId=message["messageId"]))
    if again.ok:  # served: the same task or a new one, as a SendMessageResponse holding one
        answer = again.result if isinstance(again.result, dict) else {}
        ctx.expect("task" in answer or "message" in answer,
                   f"SendMessage repeating messageId {message['messageId']} was served with no task or "
                   f"message: {again.describe()}", kind="malformed_answer")
        return
    ctx.expect(documented(ctx, again), f"SendMessage repeating messageId {message['messageId']} failed with "
                                       "an "
                                       f"error the documents do not name for it: {again.describe()}",
               kind="wrong_error_code")


@check_idem_send.fault
def repeated_message_internal_error(ref: A2AReference) -> None:
    """A repeated messageId makes the agent fail with an internal error."""
    seen: set[str] = set()

    @replaces(ref.op_SendMessage)
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        message_id = str(params["message"].get("messageId"))
        if message_id in seen:
            raise Refusal("InternalError", "duplicate key", status=500)
        seen.add(message_id)
        return original(params, caller)
