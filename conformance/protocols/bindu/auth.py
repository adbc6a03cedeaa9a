"""Bindu's Layer 1 (specs/bindu/openapi.yaml, /info/description): bearer tokens, the
scopes of the "Scope | Unlocks" table and one caller never reaching another's tasks or
contexts. Each requirement is an instance of an engine family (conformance/checks/auth.py)
where there is one, and names the faults that prove it can fail."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from conformance.checks import auth
from conformance.checks.expect import expect_catalogued, expect_error
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, noop, replaces, returns
from conformance.kit.locate import holds
from conformance.protocols.bindu.answers import contexts_listed, plain_401, state_of, task_ids_of, task_result
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.protocols.bindu.reference import BinduReference, Caller, Context, RpcError, Task, TokenInfo
from conformance.transport.binding import RawToken
from conformance.transport.http import json_excerpt

CATALOG = "/info/description"
REFUSALS = ("InsufficientPermissions", "AuthenticationRequired", "InvalidToken")

Method = Callable[[BinduClient, Any], Any]  # a method called by a client, as a caller
WRITE_METHODS: dict[str, Method] = {
    "message/send": lambda c, who: c.send(who),
    "tasks/cancel": lambda c, who: c.cancel(fresh_id(), who),
    "tasks/feedback": lambda c, who: c.feedback(fresh_id(), who),
    "contexts/clear": lambda c, who: c.clear(fresh_id(), who),
}
READ_METHODS: dict[str, Method] = {
    "tasks/get": lambda c, who: c.get(fresh_id(), who),
    "tasks/list": lambda c, who: c.list_tasks(who),
    "contexts/list": lambda c, who: c.list_contexts(who),
}
ALL_METHODS: dict[str, Method] = {**WRITE_METHODS, **READ_METHODS}


def operations(ctx: CheckContext, methods: Mapping[str, Method]) -> dict[str, Callable[[Any], Any]]:
    """The auth families' operations: each method as a call that takes a caller."""
    c = BinduClient(ctx)
    return {name: functools.partial(f, c) for name, f in methods.items()}


# -- bearer tokens -----------------------------------------------------------------------
@requirement(id="BINDU-AUTH-REQUIRED", level="MUST",
             title="Every writable method without a bearer token gets -32009 (HTTP 401)",
             source=at(CATALOG, "| `-32009` |"))
def check_token_required(ctx: CheckContext) -> None:
    auth.token_required(ctx, operations=operations(ctx, WRITE_METHODS), error="AuthenticationRequired",
                        documented=plain_401)


@check_token_required.fault
def auth_not_enforced(ref: BinduReference) -> None:
    """A request without a bearer token is accepted."""
    @replaces(ref.authenticate)
    def authenticate(original: Any, headers: Any, method: str) -> Caller:
        if ref.bearer_token(headers) is None:
            return Caller("anonymous")
        return original(headers, method)


@requirement(id="BINDU-AUTH-REQUIRED-READ", level="SHOULD",
             title="The read methods without a bearer token get -32009 too",
             source=chosen("POST / declares bearerAuth for every method, but the prose requires a token on "
                           "writable methods only (/info/description, \"Layer 1\"): the profile prefers the "
                           "stricter reading"),
             faults=["auth_not_enforced"])
def check_token_required_read(ctx: CheckContext) -> None:
    auth.token_required(ctx, operations=operations(ctx, READ_METHODS), error="AuthenticationRequired",
                        documented=plain_401)


@requirement(id="BINDU-AUTH-INVALID-TOKEN", level="MUST",
             title="A token the server never issued gets -32010 (HTTP 401)",
             source=at(CATALOG, "| `-32010` |"),
             faults=[answer("invalid_token_accepted", "lookup_token",
                            "An unknown token is treated as a full-scope caller.",
                            edit=lambda info, token: info or TokenInfo("unknown-token-client",
                                                                       ("agent:read", "agent:write")))])
def check_invalid_token(ctx: CheckContext) -> None:
    auth.token_refused(ctx, operations=operations(ctx, ALL_METHODS), error="InvalidToken",
                       documented=plain_401)


@requirement(id="BINDU-AUTH-EXPIRED-TOKEN", level="MUST",
             title="An expired token is refused: -32011 (or -32010: introspection calls it inactive) with "
                   "HTTP 401",
             source=at(CATALOG, "| `-32011` |"), needs=["expired"],
             faults=[returns("expired_token_accepted", "is_expired", False,
                             "A token whose exp is in the past is accepted.")])
def check_expired_token(ctx: CheckContext) -> None:
    auth.token_refused(ctx, operations=operations(ctx, READ_METHODS), error="TokenExpired", caller="expired",
                       credential="expired", also=("InvalidToken",), documented=plain_401)


@requirement(id="BINDU-AUTH-ENVELOPE", level="SHOULD",
             title="Auth failures come as the catalog's own code in the JSON-RPC envelope (-32009, -32010, "
                   "-32011)",
             source=chosen("POST / documents a 401 body {error} beside the catalog's envelope codes, and an "
                           "expired token is both 'exp in the past' (-32011) and inactive at introspection "
                           "(-32010): the profile prefers the catalog's own row"),
             faults=["auth_not_enforced", "invalid_token_accepted", "expired_token_accepted"])
def check_auth_envelope(ctx: CheckContext) -> None:
    """The profile's reading: auth failures are the catalog's codes in the envelope."""
    ctx.token("full")
    c = BinduClient(ctx)
    cases: list[tuple[str, Any, str]] = [
        ("without a bearer token", None, "AuthenticationRequired"),
        ("with a token the server never issued", RawToken("conformance-not-a-token-" + fresh_id()),
         "InvalidToken")]
    if ctx.has_credential("expired"):
        cases.append(("with an expired token", "expired", "TokenExpired"))
    for what, who, error in cases:
        with ctx.subcheck(what):
            expect_error(ctx, c.list_tasks(who) if who is not None else c.send(None), error,
                         f"{'message/send' if who is None else 'tasks/list'} {what}")


# -- scopes ------------------------------------------------------------------------------
@requirement(id="BINDU-SCOPE-READ", level="MUST",
             title="agent:read unlocks the read methods and nothing else (-32013)",
             source=at(CATALOG, "| `agent:read` |"), needs=["read"],
             faults=[noop("scope_check_skipped", "check_scope",
                          "Any valid token may call any method, whatever its scopes.")])
def check_scope_read(ctx: CheckContext) -> None:
    auth.scopes(ctx, credential="read", allowed=operations(ctx, READ_METHODS),
                denied=operations(ctx, WRITE_METHODS), denied_error="InsufficientPermissions",
                refusals=REFUSALS)


@requirement(id="BINDU-SCOPE-WRITE", level="MUST",
             title="agent:write unlocks the write methods and nothing else (-32013)",
             source=at(CATALOG, "| `agent:write` |"), needs=["write"], faults=["scope_check_skipped"])
def check_scope_write(ctx: CheckContext) -> None:
    auth.scopes(ctx, credential="write", allowed=operations(ctx, WRITE_METHODS),
                denied=operations(ctx, READ_METHODS), denied_error="InsufficientPermissions",
                refusals=REFUSALS)


@check_scope_write.fault
def write_implies_read(ref: BinduReference) -> None:
    """agent:write also unlocks the read methods."""
    @replaces(ref.granted_methods)
    def granted(original: Any, scopes: Any) -> set[str]:
        scopes = tuple(scopes)
        extra = original(("agent:read",)) if "agent:write" in scopes else set()
        return original(scopes) | extra


@requirement(id="BINDU-SCOPE-LEGACY-EXECUTE", level="MUST",
             title="The legacy agent:execute scope implies agent:read and agent:write",
             source=at(CATALOG, "`agent:execute` (legacy)"), needs=["legacy"])
def check_scope_legacy(ctx: CheckContext) -> None:
    auth.scopes(ctx, credential="legacy", allowed=operations(ctx, ALL_METHODS), denied={},
                denied_error="InsufficientPermissions", refusals=REFUSALS)


@check_scope_legacy.fault
def legacy_execute_rejected(ref: BinduReference) -> None:
    """The legacy agent:execute scope grants nothing."""
    @replaces(ref.granted_methods)
    def granted(original: Any, scopes: Any) -> set[str]:
        return original(s for s in scopes if s != "agent:execute")


# -- one caller, another's tasks and contexts ------------------------------------------------
def _own_task(ctx: CheckContext) -> dict[str, Any]:
    """The owner's task, with the context it is in (what the kit sent, where the answer does not say)."""
    c = BinduClient(ctx)
    task = c.new_task()
    return {**task, "context_id": c.context_of(task)}


def _foreign(ctx: CheckContext) -> dict[str, Callable[[Any, Any], Any]]:
    c = BinduClient(ctx)
    return {"tasks/get": lambda task, who: c.get(task["id"], who),
            "tasks/cancel": lambda task, who: c.cancel(task["id"], who),
            "tasks/feedback": lambda task, who: c.feedback(task["id"], who),
            "contexts/clear": lambda task, who: c.clear(task["context_id"], who)}


@requirement(id="BINDU-OWNERSHIP-SEND", level="MUST",
             title="message/send naming another caller's taskId gets -32001; neither it nor their contextId "
                   "reaches the owner's task or context",
             source=at(CATALOG, "| `-32001` |"), needs=["other"],
             faults=["send_continues_foreign_task", "send_joins_foreign_context",
                     returns("ownership_not_enforced", "owns", True,
                             "Other callers' tasks and contexts are visible and operable.")])
def check_send_foreign(ctx: CheckContext) -> None:
    """message/send naming another caller's task or context never reaches it: a taskId
    that "isn't yours" gets -32001 (the catalog's row), and the owner's task and context
    are as they were (a contextId of another caller may be refused, or the message may
    start a context of the caller's own, but never joins the owner's)."""
    ctx.token("other")
    c = BinduClient(ctx)
    task = _own_task(ctx)
    before = task_result(ctx, c.get(task["id"]), "tasks/get of the owner's task")
    with ctx.subcheck("message/send naming another caller's taskId"):
        reply = c.send("other", task_id=task["id"], context_id=task["context_id"])
        expect_error(ctx, reply, "TaskNotFound", "message/send as another caller, naming the owner's taskId")
    with ctx.subcheck("message/send naming another caller's contextId"):
        reply = c.send("other", context_id=task["context_id"])
        if reply.ok:
            theirs = task_result(ctx, reply, "message/send as another caller, naming the owner's contextId")
            contexts = contexts_listed(ctx, c.list_contexts(), "contexts/list of the owner")
            joined = [x for x in contexts if theirs["id"] in task_ids_of(x)]
            ctx.expect(not joined,
                       f"another caller's message joined the owner's context: {json_excerpt(joined)}",
                       kind="auth_not_enforced")
            ctx.expect(not holds(c.list_tasks().result, theirs["id"]),
                       "the owner's tasks/list shows another caller's task", kind="auth_not_enforced")
        else:
            expect_catalogued(ctx, reply, "message/send as another caller, naming the owner's contextId")
    after = task_result(ctx, c.get(task["id"]), "tasks/get of the owner's task")
    ctx.expect(state_of(after) == state_of(before) and after.get("history") == before.get("history"),
               f"another caller's message/send changed the owner's task: {json_excerpt(before)} before, "
               f"{json_excerpt(after)} after", kind="state_changed")


@check_send_foreign.fault
def send_continues_foreign_task(ref: BinduReference) -> None:
    """message/send naming another caller's taskId continues that task (no ownership check on the task)."""
    @replaces(ref.existing_task)
    def existing(_original: Any, caller: Caller, task_id: str | None) -> Task | None:
        task = ref.tasks.get(task_id) if task_id is not None else None
        if task is not None and not ref.is_mutable(task):
            raise RpcError("TaskImmutable",
                           f"Task is in terminal state '{task.state}' and cannot be modified")
        return task


@check_send_foreign.fault
def send_joins_foreign_context(ref: BinduReference) -> None:
    """message/send naming another caller's contextId puts the new task in that caller's context."""
    @replaces(ref.context_for)
    def context_for(_original: Any, caller: Caller, context_id: str | None) -> Context | None:
        return ref.contexts.get(context_id) if context_id else None


@requirement(id="BINDU-OWNERSHIP", level="MUST",
             title="Another caller's tasks and contexts are not found, listed or cleared",
             source=at(CATALOG, "| `-32001` |"), needs=["other"], faults=["ownership_not_enforced"])
def check_ownership(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    auth.isolation(ctx, create=lambda: _own_task(ctx), hidden=_foreign(ctx),
                   error=lambda name: "ContextNotFound" if name == "contexts/clear" else "TaskNotFound",
                   unlisted={"tasks/list": auth.Listing(
                                 lambda who: c.list_tasks(who),
                                 lambda listed, task: holds(listed, task["id"])),
                             "contexts/list": auth.Listing(
                                 lambda who: c.list_contexts(who),
                                 lambda listed, task: holds(listed, task["context_id"]))},
                   intact=lambda task: c.get(task["id"]).ok)
