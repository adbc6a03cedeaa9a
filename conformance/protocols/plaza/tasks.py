"""A text's task (`tasks`): submitted or working until a later peer message completes it,
CancelTask ends only the caller's wait, a completed task is not cancelled and takes no
text, historyLength 0 omits the history, ListTasks lists the caller's own, another
agent's task is neither read nor cancelled, and a blocking send past the server's
deadline ends in a recoverable error. Each requirement is declared on its check, with
the faults that prove it can fail."""

from __future__ import annotations

import json
import time
from typing import Any

from conformance.checks.expect import expect_result, refused_as
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, fault, requirement
from conformance.kit.faults import noop, recodes, replaces
from conformance.protocols.a2a.names import INPUT_REQUIRED
from conformance.protocols.plaza.answers import (
    OPEN_STATES,
    detail_type,
    drain,
    error_info,
    expect_state,
    served,
    texts_in,
)
from conformance.protocols.plaza.client import (
    ALICE,
    BOB,
    CANCELED,
    CAROL,
    COMPLETED,
    SHORT_DEADLINE_S,
    WORKING,
    PlazaClient,
    dig,
    fresh_id,
)
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import (
    ACTIVE,
    CLOSED,
    INVALID_STATE,
    NOT_FOUND,
    TASK_NOT_FOUND,
    Principal,
    SiteError,
)


def get(c: PlazaClient, task_id: str, who: str = ALICE, what: str = "GetTask",
        **fields: Any) -> dict[str, Any]:
    return c.task_of(c.get_task(task_id, who, **fields), what)


@requirement(id="PLAZA-TASK-STATES", level="MUST",
             title="A text's task is submitted or working until a later peer message completes it",
             source=at("/tasks/completed"))
def check_task_states(ctx: CheckContext) -> None:
    """Submitted or working until a later peer message exists; accepting alone is no reply."""
    c = PlazaClient(ctx)
    task, connection = c.invite()
    expect_state(ctx, get(c, task["id"], what="GetTask of a pending invitation"), OPEN_STATES,
                 "a pending invitation")
    c.accept(connection, BOB)
    expect_state(ctx, get(c, task["id"], what="GetTask after the peer accepted"), OPEN_STATES,
                 "an accepted invitation without reply",
                 "accepting is not a chat reply: submitted or working")
    drain(c, BOB, c.client_key(BOB))  # bob acknowledges the invitation's receive batch: an ack is no reply
    expect_state(ctx, get(c, task["id"], what="GetTask after the peer acknowledged its receive batch"),
                 OPEN_STATES,
                 "a task whose peer only acknowledged the receive batch",
                 "a transport ack is no reply: submitted or working")
    c.say(BOB, connection, "a real later peer message")
    expect_state(ctx, get(c, task["id"], what="GetTask after the peer wrote"), (COMPLETED,),
                 "a task with a later peer message",
                 "completed once a real later peer message is present")


@check_task_states.fault
def accept_completes_task(ref: PlazaReference) -> None:
    """Accepting an invitation completes its task (an accept taken for a chat reply)."""
    @replaces(ref.task_state)
    def task_state(original: Any, task: dict[str, Any]) -> str:
        state: str = original(task)
        conn = ref.s["connections"][task["connection_id"]]
        accepted = conn["state"] == ACTIVE and conn["inviter"] == task["owner"]
        return COMPLETED if state == WORKING and accepted else state


@check_task_states.fault
def peer_message_not_completing(ref: PlazaReference) -> None:
    """A task never completes, whatever the peer writes."""
    @replaces(ref.task_state)
    def task_state(original: Any, task: dict[str, Any]) -> str:
        state: str = original(task)
        return WORKING if state == COMPLETED else state


@check_task_states.fault
def ack_completes_task(ref: PlazaReference) -> None:
    """A receive ack by the peer completes the sender's task, as if it were a reply."""
    acked: set[str] = set()

    @replaces(ref.cmd_receive_ack)
    def ack(original: Any, who: Principal, data: dict[str, Any]) -> Any:
        out = original(who, data)
        acked.add(who.visitor_id)
        return out

    @replaces(ref.task_view)
    def view(original: Any, task: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = original(task, *args, **kwargs)
        peer = ref.peer_of(ref.s["connections"][task["connection_id"]], task["owner"])
        if out["status"]["state"] == WORKING and peer in acked:
            out["status"]["state"] = COMPLETED
        return out


@requirement(id="PLAZA-TASK-CANCEL", level="MUST",
             title="CancelTask ends only the caller's wait; messages and friendship remain",
             source=at("/tasks/cancel"))
def check_task_cancel(ctx: CheckContext) -> None:
    """CancelTask ends only the caller's wait: the message and the friendship remain."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    text = f"then cancelled {fresh_id()[:6]}"
    task = c.say(ALICE, connection, text)
    with ctx.setup("bob reads the delivered text before the cancel", by="PLAZA-FRIEND-MESSAGE"):
        ctx.expect(text in texts_in(c, BOB, connection, [text]),
                   f"looked for a message record carrying {text!r} in bob's read of the connection and found "
                   "none")
    done = c.task_of(c.rpc("CancelTask", {"id": task["id"]}), "CancelTask")
    expect_state(ctx, done, CANCELED, "CancelTask of a working task")
    ctx.expect(text in texts_in(c, BOB, connection, [text]),
               f"bob read the delivered text {text!r} before CancelTask and no longer finds it after",
               kind="state_changed")
    c.task_of(c.text(ALICE, "the friendship remains", context=connection), "a text after CancelTask")


@check_task_cancel.fault
def cancel_deletes_message(ref: PlazaReference) -> None:
    """CancelTask recalls the delivered message."""
    @replaces(ref.rpc_cancel_task)
    def cancel(original: Any, call: Any) -> Any:
        out = original(call)
        ref.task_message(ref.owned_task(call.principal.visitor_id, call.params["id"]))["text"] = "[recalled]"
        return out


@check_task_cancel.fault
def cancel_ends_friendship(ref: PlazaReference) -> None:
    """CancelTask closes the connection."""
    @replaces(ref.rpc_cancel_task)
    def cancel(original: Any, call: Any) -> Any:
        out = original(call)
        task = ref.owned_task(call.principal.visitor_id, call.params["id"])
        ref.s["connections"][task["connection_id"]]["state"] = CLOSED
        return out


@requirement(id="PLAZA-TASK-TERMINAL", level="MUST",
             title="A completed task is not cancelled and takes no further text",
             source=at("/tasks/cancel"),
             faults=["cancel_completed_allowed",
                     noop("terminal_task_text_accepted", "check_task_open",
                          "A text naming a completed taskId is stored like any other (the taskId is "
                          "ignored).")],
             code="TASK_NOT_CANCELABLE", code_faults=["not_cancelable_wrong_code"])
def check_task_terminal(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx)
    connection = c.befriend()
    task = c.say(ALICE, connection, "answered soon")
    c.say(BOB, connection, "the answer")
    refused_as(ctx, c.rpc("CancelTask", {"id": task["id"]}), "TASK_NOT_CANCELABLE",
               "CancelTask of a completed task",
               strict)
    expect_state(ctx, get(c, task["id"]), (COMPLETED,), "a completed task after a refused CancelTask")
    # multiTurn: a new intent goes "without a terminal taskId" (A2A: a terminal task takes no message)
    if not strict:
        with ctx.subcheck("a text naming the completed task"):
            refused_as(ctx, c.text(ALICE, "to a finished task", context=connection, taskId=task["id"]),
                       "UNSUPPORTED_OPERATION", "a text naming a completed taskId", False)
            served(ctx, c.text(ALICE, "to a finished task", context=connection),
                   "the same text without the taskId",
                   by="PLAZA-FRIEND-MESSAGE")
    waiting = c.say(ALICE, connection, "not answered yet")
    served(ctx, c.rpc("CancelTask", {"id": waiting["id"]}), "CancelTask of alice's task still waiting",
           by="PLAZA-TASK-CANCEL")


@check_task_terminal.fault
def cancel_completed_allowed(ref: PlazaReference) -> None:
    """A completed task can be cancelled."""
    @replaces(ref.rpc_cancel_task)
    def cancel(original: Any, call: Any) -> Any:
        task = ref.owned_task(call.principal.visitor_id, call.params["id"])
        if task["canceled_at"] is None:
            task["canceled_at"] = ref.now_ms()
        return ref.task_view(task)


fault(recodes("not_cancelable_wrong_code", "rpc_cancel_task",
              lambda err: SiteError(INVALID_STATE, err.message), "",
              catch=SiteError))


@requirement(id="PLAZA-TASK-HISTORY-ZERO", level="MUST", title="historyLength 0 omits the history",
             source=at("/tasks/historyLengthZero"))
def check_history_zero(ctx: CheckContext) -> None:
    c = PlazaClient(ctx)
    connection = c.befriend()
    params = c.params({"text": "history zero"}, context=connection)
    params["configuration"]["historyLength"] = 0
    with ctx.subcheck("configuration.historyLength 0"):
        task = c.task_of(c.send(params), "SendMessage with historyLength 0")
        ctx.expect(not task.get("history"),
                   f"historyLength 0 answered history {json.dumps(task.get('history'))[:200]}")
    with ctx.subcheck("GetTask historyLength 0"):
        seen = get(c, task["id"], historyLength=0)
        ctx.expect(not seen.get("history"),
                   f"GetTask historyLength 0 answered history {json.dumps(seen.get('history'))[:200]}")


@check_history_zero.fault
def history_zero_ignored(ref: PlazaReference) -> None:
    """historyLength 0 is taken as "all of it"."""
    @replaces(ref.task_view)
    def task_view(original: Any, task: dict[str, Any], history_length: int | None = None,
                  **kw: Any) -> dict[str, Any]:
        result: dict[str, Any] = original(task, None if history_length == 0 else history_length, **kw)
        return result


def task_ids(c: PlazaClient, who: str) -> set[Any]:
    result = expect_result(c.ctx, c.rpc("ListTasks", {}, who), f"ListTasks as {who}", ["tasks"])
    return {dig(t, "id") for t in result["tasks"]} if isinstance(result["tasks"], list) else set()


@requirement(id="PLAZA-TASK-LIST-OWN", level="MUST", title="ListTasks lists the caller's tasks only",
             source=at("/tasks/resume"))
def check_list_own(ctx: CheckContext) -> None:
    c = PlazaClient(ctx)
    mine, _ = c.invite(ALICE, BOB)
    theirs, _ = c.invite(CAROL, BOB)
    listed = task_ids(c, ALICE)
    ctx.expect(mine["id"] in listed, f"ListTasks as alice lacks alice's task {mine['id']}")
    ctx.expect(theirs["id"] not in listed, "ListTasks as alice lists carol's task", kind="auth_not_enforced")


@check_list_own.fault
def list_tasks_of_everyone(ref: PlazaReference) -> None:
    """ListTasks lists every agent's tasks."""
    @replaces(ref.rpc_list_tasks)
    def list_tasks(original: Any, call: Any) -> Any:
        tasks = sorted(ref.s["tasks"].values(), key=lambda t: t["order"], reverse=True)
        return {"tasks": [ref.task_view(t) for t in tasks], "nextPageToken": "", "pageSize": len(tasks),
                "totalSize": len(tasks)}


@requirement(id="PLAZA-TASK-ISOLATION", level="MUST",
             title="Another agent's task is neither read nor cancelled",
             source=at("/authorization"), code="TASK_NOT_FOUND", code_faults=["foreign_task_wrong_code"])
def check_task_isolation(ctx: CheckContext, strict: bool = False) -> None:
    """Carol's GetTask and CancelTask of alice's task are refused (the profile's code:
    TASK_NOT_FOUND, strict) and leave it open. Not auth.isolation: the MUST takes any
    refusal (the document says "refused", the code is the profile's), the family asks
    for one error."""
    c = PlazaClient(ctx)
    task, _ = c.invite(ALICE, BOB)
    for method in ("GetTask", "CancelTask"):
        with ctx.subcheck(f"{method} by another agent"):
            refused_as(ctx, c.rpc(method, {"id": task["id"]}, CAROL), "TASK_NOT_FOUND",
                       f"{method} of alice's task by carol",
                       strict)
    expect_state(ctx, get(c, task["id"]), OPEN_STATES, "alice's task after carol's refused CancelTask")


@check_task_isolation.fault
def foreign_task_readable(ref: PlazaReference) -> None:
    """Any agent reads (and cancels) any task by its id."""
    @replaces(ref.owned_task)
    def owned_task(original: Any, visitor_id: str, task_id: Any) -> dict[str, Any]:
        task: dict[str, Any] | None = ref.s["tasks"].get(task_id) if isinstance(task_id, str) else None
        if task is None:
            found: dict[str, Any] = original(visitor_id, task_id)
            return found
        return task


@check_task_isolation.fault
def foreign_task_cancelable(ref: PlazaReference) -> None:
    """CancelTask cancels any agent's task by its id (GetTask stays strict)."""
    @replaces(ref.rpc_cancel_task)
    def cancel(original: Any, call: Any) -> Any:
        task = ref.s["tasks"].get(call.params["id"])
        if task is not None and task["owner"] != call.principal.visitor_id:
            task["canceled_at"] = ref.now_ms()
            return ref.task_view(task)
        return original(call)


fault(recodes("foreign_task_wrong_code", "owned_task", lambda err: SiteError(NOT_FOUND, err.message), "",
              catch=SiteError,
              when=lambda err: err.name == TASK_NOT_FOUND))


@requirement(id="PLAZA-TASK-DEADLINE", level="MUST",
             title="A blocking send past the server's deadline ends in a recoverable error",
             source=at("/tasks/blocking"), code="DEADLINE_EXCEEDED", code_faults=["deadline_not_retryable"])
def check_deadline(ctx: CheckContext, strict: bool = False) -> None:
    """A blocking send (returnImmediately defaults to false) with no peer reply ends at the
    server's deadline in a recoverable error, never a fake input-required task."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    deadline = float(ctx.profile.limits["deadline_s"].value)
    if ctx.run.control_path:
        deadline = SHORT_DEADLINE_S
        ctx.control("set_deadline", seconds=deadline)
    served(ctx, c.text(ALICE, "not waiting for a reply", context=connection),
           "a text with returnImmediately in the connection", by="PLAZA-FRIEND-MESSAGE")
    started = time.monotonic()
    reply = c.send(c.params({"text": "waiting for a reply"}, context=connection, configuration=None),
                   timeout=deadline + 10)
    took = time.monotonic() - started
    ctx.expect(not reply.ok,
               f"a blocking send without a peer reply answered {reply.describe()} after {took:.1f} s: "
               f"the document says a wait past the deadline yields a deadline error, not a status",
               kind="state_changed")
    refused_as(ctx, reply, "DEADLINE_EXCEEDED", "a blocking send past the deadline", strict)
    if strict:
        retry = dig(error_info(reply, detail_type(ctx)), "metadata", "retryable")
        ctx.expect(retry == "true",
                   f"the deadline error's metadata says retryable {retry!r}, the profile says \"true\"",
                   kind="schema_mismatch")


@check_deadline.fault
def deadline_fake_input_required(ref: PlazaReference) -> None:
    """A blocking send past the deadline answers a fake input-required task."""
    @replaces(ref.finish_blocking)
    def finish(original: Any, task: dict[str, Any], history_length: int | None, replay: bool) -> Any:
        if ref.task_state(task) == WORKING:
            view = ref.task_view(task, history_length)
            view["status"]["state"] = INPUT_REQUIRED
            return {"task": view}
        return original(task, history_length, replay)


@fault
def deadline_not_retryable(ref: PlazaReference) -> None:
    """The deadline error does not say it is retryable."""
    @replaces(ref.finish_blocking)
    def finish(original: Any, task: dict[str, Any], history_length: int | None, replay: bool) -> Any:
        try:
            return original(task, history_length, replay)
        except SiteError as err:
            err.metadata["retryable"] = "false"
            raise


__all__ = ["get"]
