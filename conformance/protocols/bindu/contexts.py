"""Bindu's contexts/* methods (specs/bindu/openapi.yaml): an unknown context, contexts/list
with its history cap, and contexts/clear of finished and of running tasks. Each
requirement is declared on its check, with the faults that prove it can fail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.checks.expect import error_named, expect_error, not_found
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import noop, replaces, returns
from conformance.protocols.bindu.answers import (
    contexts_listed,
    expect_done,
    state_of,
    task_ids_of,
    task_result,
)
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.protocols.bindu.reference import BinduReference, Caller, Context
from conformance.transport.http import json_excerpt

CATALOG = "/info/description"
EXAMPLES = "/paths/~1/post/requestBody/content/application~1json/examples"


def unknown_contexts(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    c = BinduClient(ctx)
    return {"contexts/clear of an unknown context": lambda: c.clear(fresh_id())}


@requirement(id="BINDU-CONTEXT-NOT-FOUND", level="MUST",
             title="contexts/clear of an unknown context gets -32020 ContextNotFound",
             source=at(CATALOG, "| `-32020` |"),
             faults=["clear_unknown_context_succeeds", "uncatalogued_error_code"])
def check_context_not_found(ctx: CheckContext) -> None:
    not_found(ctx, calls=unknown_contexts(ctx), error="ContextNotFound")


@check_context_not_found.fault
def clear_unknown_context_succeeds(ref: BinduReference) -> None:
    """contexts/clear of an unknown context answers success."""
    @replaces(ref.contexts_clear)
    def clear(original: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        if params["contextId"] not in ref.contexts:
            return ref.success_result()
        return original(params, caller)


@requirement(id="BINDU-CONTEXTS-LIST", level="MUST",
             title="contexts/list shows the caller's contexts and their tasks; history_length caps tasks per "
                   "context",
             source=at(f"{EXAMPLES}/contextsList"))
def check_contexts_list(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    first = c.new_task()
    second = c.new_task(context_id=c.context_of(first))
    listed = contexts_listed(ctx, c.list_contexts(), "contexts/list")
    mine = [x for x in listed if x["context_id"] == c.context_of(first)]
    ctx.expect(mine,
               f"contexts/list lacks the caller's context {c.context_of(first)}: {json_excerpt(listed)}")
    ctx.expect({first["id"], second["id"]} <= set(task_ids_of(mine[0])),
               f"contexts/list does not list the context's tasks: {json_excerpt(mine[0])}")
    other = c.new_task()  # a second context
    capped = contexts_listed(ctx, c.list_contexts(history_length=1), "contexts/list history_length=1")
    shown = {x["context_id"] for x in capped if isinstance(x["context_id"], str)}
    ctx.expect({c.context_of(first), c.context_of(other)} <= shown,
               f"contexts/list history_length=1 answered {len(capped)} context(s) without "
               f"{sorted({c.context_of(first), c.context_of(other)} - shown)}: it caps tasks per context, "
               "not the number of contexts")
    mine = [x for x in capped if x["context_id"] == c.context_of(first)]
    shown_tasks = {first["id"], second["id"]} & set(task_ids_of(mine[0]))
    ctx.expect(len(shown_tasks) <= 1,
               "contexts/list history_length=1 must cap tasks per context to 1, answered "
               f"{json_excerpt(mine[0])} for the context of two tasks")


@check_contexts_list.fault
def contexts_history_ignored(ref: BinduReference) -> None:
    """contexts/list ignores history_length (every task id is listed)."""
    @replaces(ref.context_view)
    def view(original: Any, ctx: Context, history_length: int | None = None) -> dict[str, Any]:
        return original(ctx, None)


@check_contexts_list.fault
def contexts_history_caps_contexts(ref: BinduReference) -> None:
    """contexts/list history_length caps the number of contexts as well as the tasks in each."""
    @replaces(ref.contexts_list)
    def contexts_list(original: Any, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        out = original(params, caller)
        return ref.cap(out, params.get("history_length"))


@requirement(id="BINDU-CONTEXT-CLEAR", level="MUST",
             title="contexts/clear purges the context's finished tasks; the context takes new messages",
             source=at(f"{EXAMPLES}/contextsClear"),
             faults=[noop("clear_keeps_tasks", "delete_context",
                          "contexts/clear says success but keeps the context's tasks.")])
def check_context_clear(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task()
    other = c.new_task(context_id=c.context_of(task))
    expect_done(ctx, c.clear(c.context_of(task)), "contexts/clear of a context with finished tasks")
    gone = error_named(ctx.profile, "TaskNotFound").code
    for t in (task, other):
        # the code says the task is gone; its HTTP status is BINDU-TASK-NOT-FOUND's subject
        got = c.get(t["id"])
        ctx.expect(got.error_code == gone,
                   f"tasks/get of a task in a cleared context answered {got.describe()}, not TaskNotFound "
                   f"({gone})", kind="state_changed")
    listed = contexts_listed(ctx, c.list_contexts(), "contexts/list")
    # "Reset a context": it may stay, emptied
    kept = [x for x in listed if x["context_id"] == c.context_of(task)]
    ctx.expect(not kept or not {task["id"], other["id"]} & set(task_ids_of(kept[0])),
               "the cleared context still lists its purged tasks")
    with ctx.subcheck("a cleared context takes new messages (it is reset, not revoked)"):
        again = task_result(ctx, c.send(context_id=c.context_of(task)), "message/send to the cleared context")
        ctx.expect(again.get("context_id") in (None, c.context_of(task)),
                   f"message/send to the cleared context {c.context_of(task)} went to another context: "
                   f"{json_excerpt(again)}", kind="state_changed")


@check_context_clear.fault
def cleared_context_refused(ref: BinduReference) -> None:
    """A context that contexts/clear reset refuses new messages (ContextNotFound)."""
    cleared: set[str] = set()

    @replaces(ref.delete_context)
    def delete(original: Any, ctx: Context) -> None:
        cleared.add(ctx.id)
        original(ctx)

    @replaces(ref.context_for)
    def context_for(original: Any, caller: Caller, context_id: str | None) -> Context | None:
        if context_id in cleared:
            raise ref.context_not_found(context_id)
        return original(caller, context_id)


@requirement(id="BINDU-CONTEXT-CLEAR-RUNNING", level="MUST",
             title="contexts/clear never affects a working task (it may refuse with -32021)",
             source=at(f"{EXAMPLES}/contextsClear/description"), needs=["control"],
             faults=[returns("clear_purges_running", "context_busy", False,
                             "contexts/clear deletes working tasks too (no ContextNotCancelable).")])
def check_context_clear_running(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    running = c.new_task("working")
    reply = c.clear(c.context_of(running))
    if reply.error is not None:
        expect_error(ctx, reply, "ContextNotCancelable", "contexts/clear of a context with a working task")
    got = c.get(running["id"])
    ctx.expect(got.ok and state_of(got.result) == "working",
               f"contexts/clear affected a working task: {got.describe()}")
