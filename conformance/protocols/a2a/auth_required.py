"""A task asking for authorization in the middle of its work (sections 7.6.1, 14.1.1): it says so in
a status message, and takes the messages that follow."""

from __future__ import annotations

from typing import Any

from conformance.documents.schemas import schema_errors
from conformance.kit.check import CheckContext
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.client import A2AClient, state
from conformance.protocols.a2a.documents import schema, spec
from conformance.protocols.a2a.driving import fetched, follow_up, reaching, task_answer
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.http import json_excerpt


@requirement(id="A2A-TASK-AUTH-REQUIRED-MESSAGE", level="MUST",
             title="A task in TASK_STATE_AUTH_REQUIRED carries a status message explaining the authorization",
             source=spec("MUST include a TaskStatus message explaining the required authorization"),
             faults=["auth_required_without_message"])
def check_auth_required_message(ctx: CheckContext) -> None:
    """The exception ("negotiated out-of-band or via an extension") cannot hold for the kit's
    request: it activates no extension, and negotiated nothing out of band."""
    c = A2AClient(ctx)
    task = reaching(c, "auth_required")
    for what, shown in (("SendMessage", task), ("GetTask", fetched(c, task["id"]))):
        with ctx.subcheck(what):
            message = (shown.get("status") or {}).get("message")
            if not isinstance(message, dict):
                ctx.fail(f"{what}: the task in {state(shown)} has no status message: "
                         f"{json_excerpt(shown.get('status'))}", kind="expectation")
            assert isinstance(message, dict)
            problems = schema_errors(schema(ctx.profile, "Message"), message, limit=3)
            ctx.expect(not problems and message.get("parts"),
                       f"{what}: the status message is not a Message with parts: {'; '.join(problems)} "
                       f"{json_excerpt(message)}", kind="schema_mismatch")


@check_auth_required_message.fault
def auth_required_without_message(ref: A2AReference) -> None:
    """A task asking for authorization carries no status message."""
    @replaces(ref.set_status)
    def set_status(original: Any, task: dict[str, Any], state_word: str, text: str | None = None) -> None:
        original(task, state_word, None if state_word == "auth_required" else text)


@requirement(id="A2A-MULTI-AUTH-REQUIRED-MESSAGE", level="SHOULD",
             title="A task in TASK_STATE_AUTH_REQUIRED accepts a message directed to it",
             source=spec("Agents SHOULD support receiving messages directed to the Task while the Task "
                         "remains"),
             faults=["auth_required_refuses_messages"])
def check_auth_required_accepts(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    task = reaching(c, "auth_required")
    reply = follow_up(c, task)
    ctx.expect(reply.ok, f"a message to task {task['id']} in {state(task)} was refused: {reply.describe()}",
               kind="rejected_valid")
    answered = task_answer(ctx, reply, f"SendMessage to task {task['id']}")
    ctx.expect(answered["id"] == task["id"], f"a message to task {task['id']} was answered with another "
                                             "task, "
                                             f"{answered['id']}", kind="expectation")


@check_auth_required_accepts.fault
def auth_required_refuses_messages(ref: A2AReference) -> None:
    """A message to a task in TASK_STATE_AUTH_REQUIRED is refused."""
    @replaces(ref.op_SendMessage)
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        task = ref.tasks.get(params["message"].get("taskId") or "")
        if task is not None and task["status"]["state"] == docs.state_named("auth_required"):
            raise Refusal("UnsupportedOperationError", "the task waits for authorization")
        return original(params, caller)
