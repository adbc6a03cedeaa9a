"""Bindu's message/send (specs/bindu/openapi.yaml): the task it creates under the caller's
ids, a send whose answer was lost, never deduplicated, output modes, a message to a
terminal or a paused task, referenceTaskIds, push configuration, the agent's malformed
result and blocking. Each requirement is declared on its check, with the faults that
prove it can fail."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from conformance.checks import idempotency
from conformance.checks.expect import expect_error, expect_mapping, expect_result
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import answer, noop, replaces, returns
from conformance.kit.locate import Search, holds
from conformance.protocols.bindu.answers import (
    contexts_listed,
    history_of,
    message_ids,
    state_of,
    task_ids_of,
    task_result,
    tasks_listed,
)
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.protocols.bindu.reference import BinduReference, Caller, Context, RpcError
from conformance.protocols.bindu.states import terminal_states
from conformance.transport.binding import dig
from conformance.transport.http import json_excerpt

CATALOG = "/info/description"
POST = "/paths/~1/post"
ANSWERS = f"{POST}/responses/200/content/application~1json/examples"
CONFIGURATION = "/components/schemas/MessageSendConfiguration/properties"


@requirement(id="BINDU-SEND-CREATES-TASK", level="MUST",
             title="message/send creates a task under the caller's taskId and contextId",
             source=at("/components/schemas/UserMessage/properties/taskId"))
def check_send_creates_task(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    params = c.send_params(text="capital of France?")
    msg = params["message"]
    task = expect_mapping(ctx, task_result(ctx, c.call("message/send", params), "message/send"),
                          "message/send result", ["context_id"])
    ctx.expect(task["id"] == msg["taskId"],
               f"task id {task['id']!r} is not the caller's taskId {msg['taskId']!r}")
    ctx.expect(task["context_id"] == msg["contextId"],
               f"context_id {task['context_id']!r} is not the caller's contextId")
    ids = message_ids(history_of(ctx, task, "message/send"))
    ctx.expect(msg["message_id"] in ids,
               f"the sent message is not in the task's history: {json_excerpt(task.get('history'))}")
    had = {x["context_id"] for x in contexts_listed(ctx, c.list_contexts(), "contexts/list")}
    fresh = task_result(ctx, c.send(task_id=None, context_id=None), "message/send without ids")
    ctx.expect(fresh["id"] and fresh.get("context_id"),
               f"a task without caller ids must get a server id and context_id: {json_excerpt(fresh)}")
    # "New contexts are created automatically when omitted": not one the caller already had
    ctx.expect(fresh.get("context_id") not in had,
               f"a message without a contextId was put in the caller's existing context "
               f"{fresh.get('context_id')} (the spec: new contexts are created automatically when omitted): "
               f"{json_excerpt(fresh)}", kind="state_changed")
    got = task_result(ctx, c.get(task["id"]), "tasks/get of the new task")
    ctx.expect(got["id"] == task["id"], f"tasks/get returned another task: {json_excerpt(got)}")


@check_send_creates_task.fault
def ignores_caller_task_id(ref: BinduReference) -> None:
    """A new task gets a server-made id even when the caller gave a taskId."""
    @replaces(ref.choose_task_id)
    def choose(_original: Any, requested: str | None) -> str:
        return ref.new_id()


@check_send_creates_task.fault
def send_without_ids_refused(ref: BinduReference) -> None:
    """A message without taskId or contextId (optional in UserMessage) gets -32700 (Bindu 2026.36.7)."""
    for method in (ref.message_send, ref.message_stream):
        @replaces(method)
        def send(original: Any, params: dict[str, Any], caller: Caller) -> Any:
            message = params["message"]
            if not (message.get("taskId") and message.get("contextId")):
                raise RpcError("Parse error", "Failed to parse JSON payload")
            return original(params, caller)


@check_send_creates_task.fault
def send_joins_oldest_context(ref: BinduReference) -> None:
    """A message without a contextId is put in the caller's oldest context, not a new one."""
    @replaces(ref.context_for)
    def context_for(original: Any, caller: Caller, context_id: str | None) -> Context | None:
        if context_id is None:
            return next((c for c in ref.contexts.values() if ref.owns(caller, c.owner)), None)
        return original(caller, context_id)


@check_send_creates_task.fault
def caller_task_id_refused(ref: BinduReference) -> None:
    """message/send with a caller-chosen taskId for a new task is refused as Invalid params."""
    @replaces(ref.message_send)
    def send(original: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        task_id = params["message"].get("taskId")
        if task_id and task_id not in ref.tasks:
            raise RpcError("Invalid params", "Invalid params: taskId is assigned by the server")
        return original(params, caller)


@requirement(id="BINDU-SEND-FINDABLE", level="MUST",
             title="A message whose answer was lost is found by its message_id through tasks/list, its "
                   "context through contexts/list",
             source=at(f"{POST}/description", "client generate a stable `messageId`"),
             faults=[answer("list_omits_history", "tasks_list",
                            "tasks/list answers every task without its history (a lost send cannot be found "
                            "by its messageId).",
                            edit=lambda views, *_: [{k: v for k, v in view.items() if k != "history"}
                                                    for view in views])])
def check_send_findable(ctx: CheckContext) -> None:
    """The spec's recipe for a send whose answer was lost ("have your client generate a
    stable `messageId` and use `contexts/list` + `tasks/list` to check whether you've
    already sent it"): after a message/send whose answer the kit ignores (it looks only
    for its message_id, not for the ids it chose), tasks/list shows a task holding that
    message_id, and contexts/list shows that task's context. The send is a set-up step:
    a target that refuses it is blocked here, never failed for what it could not find."""
    c = BinduClient(ctx)
    params = c.send_params()  # fresh caller ids, as any client may send: the check then forgets them
    message_id = params["message"]["message_id"]
    with ctx.setup("send the message whose answer is then lost", by="BINDU-SEND-CREATES-TASK"):
        # a refused send made nothing to find (BINDU-SEND-CREATES-TASK's finding); the
        # answer is otherwise "lost": nothing below reads it, nor the ids the kit chose
        task_result(ctx, c.call("message/send", params), "message/send (the message then looked for)")
    listed = tasks_listed(ctx, c.list_tasks(), "tasks/list")
    mine = [t for t in listed if holds(t.get("history"), message_id)]
    search = Search(f"the message_id {message_id}", "the history of each task tasks/list answers")
    ctx.expect(mine, f"tasks/list shows no task whose history holds the message_id {message_id} just sent: "
               f"{search.looked_for(listed)}", kind="state_changed")
    context = mine[0].get("context_id")
    contexts = contexts_listed(ctx, c.list_contexts(), "contexts/list")
    ctx.expect(any(x["context_id"] == context or mine[0]["id"] in task_ids_of(x) for x in contexts),
               f"contexts/list does not show the context {context!r} of the task that holds the message: "
               f"{json_excerpt(contexts)}", kind="state_changed")


def task_id_of(task: Any) -> Any:
    """The id a message/send result names (None when the result is not a task)."""
    return task.get("id") if isinstance(task, dict) else None


def resend(ctx: CheckContext) -> Callable[[], Any]:
    """The same message/send, again and again (no caller task id: a repeat naming one would
    continue that task). The first is a set-up step: a target that refuses a message without
    a taskId, which the spec lets a client send, is BINDU-SEND-CREATES-TASK's finding, and
    this row is blocked by it; a refused repeat is this row's."""
    c = BinduClient(ctx)
    params = c.send_params(task_id=None)
    sent = 0

    def send() -> Any:
        nonlocal sent
        sent += 1
        reply = c.call("message/send", params)
        if sent == 1:
            with ctx.setup("message/send without a taskId (the server assigns the task id)",
                           by="BINDU-SEND-CREATES-TASK"):
                task_result(ctx, reply, "message/send without a taskId")
        return reply

    return send


@requirement(id="BINDU-SEND-NOT-IDEMPOTENT", level="MUST", title="A repeated message/send creates a new task",
             source=at(f"{POST}/description", "**Idempotency:**"))
def check_send_not_idempotent(ctx: CheckContext) -> None:
    idempotency.never_deduplicated(ctx, send=resend(ctx), identity=task_id_of, what="message/send")


@check_send_not_idempotent.fault
def dedupes_message_id(ref: BinduReference) -> None:
    """A repeated message/send with the same message_id and no taskId returns the earlier task."""
    seen: dict[tuple[str, str], str] = {}

    @replaces(ref.message_send)
    def send(original: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        message = params["message"]
        key = (caller.client_id, message["message_id"])
        if "taskId" not in message and key in seen and seen[key] in ref.tasks:
            return ref.task_view(ref.tasks[seen[key]])
        result = original(params, caller)
        seen[key] = result["id"]
        return result


@requirement(id="BINDU-SEND-OUTPUT-MODES", level="MUST",
             title="acceptedOutputModes with no overlap gets -32005",
             source=at(f"{CONFIGURATION}/acceptedOutputModes"),
             faults=[noop("ignores_output_modes", "check_output_modes",
                          "configuration.acceptedOutputModes is never checked (no "
                          "ContentTypeNotSupported).")])
def check_output_modes(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    reply = c.send(output_modes=["application/x-conformance-unknown"])
    expect_error(ctx, reply, "ContentTypeNotSupported", "acceptedOutputModes with no overlap")
    expect_result(ctx, c.send(output_modes=[c.output_modes()[0]]),
                  "acceptedOutputModes overlapping the card's modes")


# -- a message to an existing task -----------------------------------------------------
@requirement(id="BINDU-TERMINAL-IMMUTABLE", level="MUST",
             title="A message to a terminal task gets -32008 and the task stays as it was",
             source=at(CATALOG, "**Terminal tasks are immutable.**"),
             faults=[returns("terminal_task_reopened", "is_mutable", True,
                             "message/send to a terminal task appends and reruns instead of TaskImmutable.")])
def check_terminal_immutable(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task()
    before = task_result(ctx, c.get(task["id"]), "tasks/get")
    reply = c.send(task_id=task["id"], context_id=c.context_of(task))
    expect_error(ctx, reply, "TaskImmutable", "message/send to a completed task")
    after = task_result(ctx, c.get(task["id"]), "tasks/get")
    ctx.expect(after["status"] == before["status"] and after.get("history") == before.get("history"),
               "the completed task changed")


@requirement(id="BINDU-INPUT-REQUIRED-RESUME", level="MUST",
             title="A message to an input-required task continues that task",
             source=at(f"{ANSWERS}/tasksGetInputRequired/description"),
             needs=["control"],
             faults=[returns("input_required_not_resumable", "is_mutable", False,
                             "message/send to an input-required task is refused with TaskImmutable.",
                             when=lambda task: task.state == "input-required")])
def check_resume_input_required(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task("input-required")
    reply = c.send(task_id=task["id"], context_id=c.context_of(task))
    result = task_result(ctx, reply, "message/send to an input-required task")
    ctx.expect(result["id"] == task["id"],
               f"message/send to an input-required task must continue that task: {json_excerpt(result)}")
    ctx.expect(len(history_of(ctx, result, "message/send")) > len(history_of(ctx, task, "message/send")),
               "the answer to the paused task did not reach its history")


@requirement(id="BINDU-CHAINED-TASKS", level="MUST",
             title="referenceTaskIds of an earlier task start a new task and leave the old one unchanged",
             source=at("/components/schemas/UserMessage/properties/referenceTaskIds"))
def check_chained_tasks(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    first = c.new_task()
    before = task_result(ctx, c.get(first["id"]), "tasks/get")
    reply = c.send(reference_task_ids=[first["id"]], context_id=c.context_of(first))
    chained = task_result(ctx, reply, "message/send with referenceTaskIds of a completed task")
    ctx.expect(chained["id"] != first["id"],
               "a chained message must create a new task, not reopen the referenced one")
    after = task_result(ctx, c.get(first["id"]), "tasks/get of the referenced task")
    ctx.expect(after["status"] == before["status"], "the referenced task changed")


@check_chained_tasks.fault
def reference_task_rejected(ref: BinduReference) -> None:
    """Any referenceTaskIds is answered with TaskNotFound."""
    @replaces(ref.check_references)
    def check(_original: Any, caller: Caller, reference_ids: list[str]) -> None:
        if reference_ids:
            raise ref.task_not_found(reference_ids[0])


# -- the configuration and the agent ---------------------------------------------------------
@requirement(id="BINDU-PUSH-NOT-SUPPORTED", level="MUST",
             title="pushNotificationConfig to an agent without push gets -32003",
             source=at(CATALOG, "| `-32003` |"))
def check_push_not_supported(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    said = dig(c.card(), "capabilities", "pushNotifications")
    ctx.require_declared("push_notifications", lambda: (
        bool(said), "the agent card does not say capabilities.pushNotifications" if said is None else
        f"the agent card says capabilities.pushNotifications is {json.dumps(said)}"), offered=False,
        why="the error is for an agent without push notifications")
    params = c.send_params()
    # the spec's pushNotificationConfig is a free object ("[Reserved]"): sent with an id and a
    # url, as A2A shapes one, so no reading of its members makes the request itself malformed
    params["configuration"]["pushNotificationConfig"] = {"id": fresh_id(),
                                                         "url": "https://conformance.invalid/webhook"}
    expect_error(ctx, c.call("message/send", params), "PushNotificationNotSupported",
                 "message/send with pushNotificationConfig to an agent whose card says "
                 "pushNotifications: false")


@check_push_not_supported.fault
def push_config_ignored(ref: BinduReference) -> None:
    """configuration.pushNotificationConfig is accepted silently by an agent without push (no -32003)."""
    @replaces(ref.check_configuration)
    def check(_original: Any, configuration: dict[str, Any]) -> None:
        ref.check_output_modes(configuration)


@requirement(id="BINDU-INVALID-AGENT-RESPONSE", level="MUST",
             title="A malformed result of the agent gets -32006 (HTTP 500)",
             source=at(CATALOG, "| `-32006` |"), needs=["control"],
             faults=[returns("agent_fault_internal_error", "invalid_agent_response",
                             RpcError("Internal error"),
                             "A malformed result of the agent is answered with Internal error (-32603) "
                             "instead of -32006.")])
def check_invalid_agent_response(ctx: CheckContext) -> None:
    if not ctx.run.control_path:
        ctx.needs_control("an agent whose handler produces a malformed result (control next_agent_fault): "
                          "no request of a client makes a compliant agent do that")
    c = BinduClient(ctx)
    ctx.control("next_agent_fault", kind="malformed_result")
    expect_error(ctx, c.send(), "InvalidAgentResponse",
                 "message/send whose agent produced a malformed result")


@requirement(id="BINDU-SEND-BLOCKING", level="MUST",
             title="message/send with blocking: true answers once the task is terminal",
             source=at(f"{CONFIGURATION}/blocking", "If `true`, the server holds the HTTP connection open"),
             needs=["control"],
             faults=[returns("blocking_ignored", "wants_blocking", False,
                             "configuration.blocking: true is ignored: the answer comes while the task "
                             "still works.")])
def check_send_blocking(ctx: CheckContext) -> None:
    """With control the agent's first run leaves the task working; without, the check asks
    whether the agent leaves a task open by itself (an asynchronous agent): an agent that
    finishes every task at once answers the same with or without blocking, so nothing tells
    them apart and the requirement needs control."""
    c = BinduClient(ctx)
    if ctx.run.control_path:
        c.outcome("working")  # the agent's first run leaves the task working
    else:
        left = state_of(c.new_task(wait=False))
        if left in terminal_states(ctx.profile.spec):
            ctx.needs_control(f"a task the agent does not finish at once: it answered a message without "
                              f"blocking in {left!r}, so blocking: true cannot be told apart (control "
                              f"next_outcome working)")
    params = c.send_params()
    params["configuration"]["blocking"] = True
    state = state_of(task_result(ctx, c.call("message/send", params), "message/send with blocking: true"))
    ctx.expect(state in terminal_states(ctx.profile.spec),
               f"message/send with blocking: true answered while the task was {state!r}")
