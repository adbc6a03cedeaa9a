"""Variants of the task operations: what the specification allows an agent that the
reference does not do. Each patches one reference instance, its docstring quoting the text
that allows it; no MUST requirement may fail on one (`conformance selftest`)."""

from __future__ import annotations

import re
from typing import Any

from conformance.kit.declare import variant
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import dig


@variant
def ordinary_messages_answered_directly(ref: A2AReference) -> None:
    """A new message the agent would complete is answered with a direct Message, no task.

    allowed by: section 3.1.1 "The agent MAY create a new `Task` to process the provided
    message asynchronously or MAY return a direct `Message` response for simple interactions"."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        message = params.get("message") or {}
        if message.get("taskId") or (ref.script and ref.script[0] != "completed"):
            return dict(original(params, caller))
        ref.next_outcome()
        return {"message": ref.agent_message(ref.text_of(message),
                                             context_id=message.get("contextId") or ref.new_id("ctx"))}


@variant
def return_immediately_after_agent(ref: A2AReference) -> None:
    """With returnImmediately the answer shows the task as the agent already left it
    (completed, input-required), not the working snapshot.

    allowed by: section 3.2.2 "The returned task will have an in-progress state (e.g.,
    `TASK_STATE_WORKING`, `TASK_STATE_INPUT_REQUIRED`)" (examples, not a rule) and the
    proto's return_immediately: "returns immediately after creating the task, even if
    processing is still in progress"."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        out: dict[str, Any] = original(params, caller)
        task = ref.tasks.get(dig(out, "task", "id"))
        if dig(params, "configuration", "returnImmediately") is True and task is not None:
            return {"task": ref.view(task, dig(params, "configuration", "historyLength"))}
        return out


@variant
def client_context_refused(ref: A2AReference) -> None:
    """A new message with a contextId the agent never issued is refused as invalid.

    allowed by: section 3.4.1 "If an agent cannot accept a client-provided `contextId`, it
    **MUST** reject the request with an error"."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        message = params.get("message") or {}
        context = message.get("contextId")
        issued = {t["contextId"] for t in ref.tasks.values()}
        if context and not message.get("taskId") and context not in issued:
            ref.next_outcome()  # the message is handled: the agent's next outcome is spent
            raise Refusal("InvalidParamsError", f"contextId {context!r} is not one this agent issued")
        return dict(original(params, caller))


@variant
def history_zero_empty(ref: A2AReference) -> None:
    """historyLength 0 shows the history as an empty array rather than leaving it out.

    allowed by: section 3.2.4 "0: No history should be returned; the `history` field SHOULD
    be omitted" (a SHOULD: an empty history returns no message either)."""
    @replaces(ref.view)
    def view(original: Any, task: dict[str, Any], history_length: Any = None, *args: Any) -> dict[str, Any]:
        out: dict[str, Any] = original(task, history_length, *args)
        if history_length is not None and int(history_length) == 0:
            out["history"] = []
        return out


@variant
def no_history_by_default(ref: A2AReference) -> None:
    """Without historyLength no history is shown at all.

    allowed by: section 3.2.4 "Unset/undefined: No limit imposed; server returns its default
    amount of history (implementation-defined, may be all history)"."""
    @replaces(ref.view)
    def view(original: Any, task: dict[str, Any], history_length: Any = None, *args: Any) -> dict[str, Any]:
        out: dict[str, Any] = original(task, history_length, *args)
        if history_length is None:
            out.pop("history", None)
        return out


@variant
def agent_messages_in_history(ref: A2AReference) -> None:
    """The agent's status messages (asking for input, failing) are kept in the history too.

    allowed by: section 3.7 "The Task History field contains Messages exchanged during task
    execution ... The agent is responsible to determine which Messages are persisted"."""
    @replaces(ref.set_status)
    def set_status(original: Any, task: dict[str, Any], state: str, text: str | None = None) -> None:
        original(task, state, text)
        if text is not None:
            task.setdefault("history", []).append(task["status"]["message"])


@variant
def cancel_again_answers_task(ref: A2AReference) -> None:
    """A second CancelTask of a canceled task answers the canceled task again.

    allowed by: section 3.3.1 "**Cancel Task** operations are idempotent - multiple
    cancellation requests have the same effect"."""
    @replaces(ref.op_CancelTask)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = ref.owned_task(params.get("id"), caller)
        if task["status"]["state"] == docs.state_named("canceled"):
            return dict(ref.view(task))
        return dict(original(params, caller))


@variant
def canceled_task_purged(ref: A2AReference) -> None:
    """A second CancelTask of a canceled task purges it: TaskNotFoundError, and the task is gone.

    allowed by: section 3.3.1 "A duplicate cancellation request MAY return
    `TaskNotFoundError` if the task has already been canceled and purged"."""
    @replaces(ref.op_CancelTask)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = ref.owned_task(params.get("id"), caller)
        if task["status"]["state"] == docs.state_named("canceled"):
            ref.tasks.pop(task["id"], None)
            ref.owners.pop(task["id"], None)
            raise Refusal("TaskNotFoundError", f"task {task['id']} was canceled and purged")
        return dict(original(params, caller))


@variant
def cancel_refused_in_progress(ref: A2AReference) -> None:
    """CancelTask of a task the agent is working on is refused: it cannot be canceled now.

    allowed by: section 3.1.5 "The server will attempt to cancel the task, but success is not
    guaranteed (e.g., ... cancellation might not be supported at its current stage)"."""
    @replaces(ref.op_CancelTask)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = ref.owned_task(params.get("id"), caller)
        if task["status"]["state"] == docs.state_named("working"):
            raise Refusal("TaskNotCancelableError", f"task {task['id']} cannot be canceled while it works")
        return dict(original(params, caller))


@variant
def page_size_clamped(ref: A2AReference) -> None:
    """A pageSize above the maximum is served at the maximum, one below 1 at the default.

    allowed by: the proto's ListTasksRequest.page_size "The service may return fewer than this
    value" with "The maximum value is 100" (a bound, not a refusal the proto names)."""
    @replaces(ref.op_ListTasks)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        size = params.get("pageSize")
        if isinstance(size, int) and not 1 <= size <= ref.limit("list_page_size_max"):
            size = ref.limit("list_page_size_max") if size > 1 else ref.limit("list_page_size_default")
            params = {**params, "pageSize": size}
        return dict(original(params, caller))


@variant
def list_pages_of_one(ref: A2AReference) -> None:
    """ListTasks serves one task a page, whatever pageSize asks.

    allowed by: the proto's ListTasksRequest.page_size "The maximum number of tasks to return.
    The service may return fewer than this value"."""
    @replaces(ref.op_ListTasks)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        if isinstance(params.get("pageSize"), int) and params["pageSize"] < 1:
            return dict(original(params, caller))  # refused as before
        return dict(original({**params, "pageSize": 1}, caller))


@variant
def timestamps_whole_seconds(ref: A2AReference) -> None:
    """Status timestamps are whole seconds, without a fraction.

    allowed by: section 5.6.1 "When millisecond precision is not available, the fractional
    seconds portion **MAY** be omitted or zero-filled"."""
    @replaces(ref.set_status)
    def set_status(original: Any, task: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        original(task, *args, **kwargs)
        task["status"]["timestamp"] = re.sub(r"\.\d+Z$", "Z", task["status"]["timestamp"])


@variant
def no_status_timestamps(ref: A2AReference) -> None:
    """A task's status carries no timestamp.

    allowed by: the proto's TaskStatus.timestamp, an optional field (not REQUIRED)."""
    @replaces(ref.set_status)
    def set_status(original: Any, task: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        original(task, *args, **kwargs)
        task["status"].pop("timestamp", None)
