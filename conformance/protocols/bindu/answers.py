"""Reading Bindu answers without crashing on another shape. The spec's schemas name
every member a check reads (Task: ``id``, ``context_id``, ``status.state``, ``history``;
Context: ``context_id``, ``tasks``), so checks read them by those names; an answer that
lacks one, or holds it in another type, is a finding (kind ``malformed_answer``) whose
message says what was looked for and quotes the answer, never a KeyError inside a check."""

from __future__ import annotations

from typing import Any

from conformance.checks.expect import expect_list, expect_mapping, expect_result
from conformance.documents.openapi import schema_at
from conformance.documents.schemas import schema_errors
from conformance.kit.check import CheckContext
from conformance.kit.locate import walk
from conformance.transport.binding import Reply, dig
from conformance.transport.http import json_excerpt

UNAUTHORIZED = "/paths/~1/post/responses/401/content/application~1json/schema"  # the documented 401
TASK_KEYS = ("id", "status")  # required by the spec's Task, and read by every check of a task
CONTEXT_KEYS = ("context_id",)  # required by the spec's Context


def state_of(task: Any) -> Any:
    """A Task's ``status.state`` (None where the answer has another shape)."""
    return dig(task, "status", "state")


def expect_task(ctx: CheckContext, value: Any, what: str) -> dict[str, Any]:
    """``value`` as a Task: an object with id and status.state (a check that reads the
    task's context asks for it where it does: ``BinduClient.context_of``)."""
    task = expect_mapping(ctx, value, what, TASK_KEYS)
    ctx.expect(isinstance(state_of(task), str),
               f"{what}: expected a Task whose status holds a state (status.state), got {json_excerpt(task)}",
               kind="malformed_answer")
    return task


def task_result(ctx: CheckContext, reply: Reply, what: str) -> dict[str, Any]:
    """A success whose result is a Task."""
    return expect_task(ctx, expect_result(ctx, reply, what), f"{what} result")


def history_of(ctx: CheckContext, task: dict[str, Any], what: str) -> list[Any]:
    """A Task's history (optional in the schema: absent is empty)."""
    history = task.get("history")
    return [] if history is None else expect_list(ctx, history, f"{what}: the task's history")


def message_ids(history: list[Any]) -> list[Any]:
    """The message_id of each history entry that is an object."""
    return [m.get("message_id") for m in history if isinstance(m, dict)]


def items_of(ctx: CheckContext, reply: Reply, what: str, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """A listing's items (tasks/list: Tasks, contexts/list: Contexts), each an object with ``keys``."""
    items = expect_list(ctx, expect_result(ctx, reply, what), f"{what} result")
    return [expect_mapping(ctx, item, f"an item of the {what} result", keys) for item in items]


def tasks_listed(ctx: CheckContext, reply: Reply, what: str) -> list[dict[str, Any]]:
    return items_of(ctx, reply, what, ("id",))


def contexts_listed(ctx: CheckContext, reply: Reply, what: str) -> list[dict[str, Any]]:
    return items_of(ctx, reply, what, CONTEXT_KEYS)


def task_ids_of(context: dict[str, Any]) -> list[str]:
    """The strings a Context entry holds besides its own context_id, wherever they sit:
    checks ask whether a task id they know is among them. The spec's Context names
    ``tasks`` ("IDs of every task in this context") but makes it optional and allows other
    members, so a server that lists them as ``task_ids`` (Bindu 2026.36.7 does) lists them
    too; the members' names are BINDU-RESULT-CONTEXTS-LIST's subject, not every row's."""
    own = context.get("context_id")
    return [f.value for f in walk(context) if isinstance(f.value, str) and f.value != own]


def expect_done(ctx: CheckContext, reply: Reply, what: str) -> Any:
    """A success of tasks/feedback or contexts/clear that does not say it failed: the
    spec's result is ``{success: boolean}``, so ``success: false`` is a refusal; whether
    the result has that shape at all is BINDU-RESULT-TASKS-FEEDBACK's and
    BINDU-RESULT-CONTEXTS-CLEAR's subject (Bindu 2026.36.7 answers ``{message, task_id}``),
    so the rows about what the call does judge what it did, not the members it answered."""
    result = expect_result(ctx, reply, what)
    ctx.expect(dig(result, "success") is not False, f"{what} answered {json_excerpt(result)}: success false",
               kind="rejected_valid")
    return result



def plain_401(ctx: CheckContext, reply: Any) -> bool:
    """The documented 401 answer of POST / ({"error": "..."}, no JSON-RPC envelope)."""
    env = reply.envelope
    body = env if isinstance(env, dict) and "jsonrpc" not in env else reply.http.json()
    return (reply.status == 401 and isinstance(body, dict) and "jsonrpc" not in body
            and isinstance(body.get("error"), str)
            and not schema_errors(schema_at(ctx.profile.spec, UNAUTHORIZED), body))
