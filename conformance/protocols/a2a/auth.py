"""Authentication and authorization scoping (sections 3.3.2, 7.4, 13.1): where the card
declares a security scheme (``securitySchemes`` and ``securityRequirements``), a request
without credentials, or with a token the agent never issued, is rejected; and a second
caller (the ``other`` credential) neither reads, cancels, continues nor lists the main
caller's tasks, and cannot tell them from tasks that do not exist.

Not applicable where the card declares no security (an agent may serve anyone), untested where
the run was given no ``other`` credential. The requests are the kit's own: a task the check created
as the main caller, and the core operations that a token lets through (a refusal counts only
for its cause: the same request with the main token must be served first). Every credential,
and the one the agent never issued, goes where the card's security schemes ask (an API key in
its header, query parameter or cookie, HTTP Basic, a bearer token, a client certificate:
client.card_ways)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

from conformance.kit.check import Blocked, CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import error_name, speaks_jsonrpc
from conformance.protocols.a2a.client import A2AClient, state
from conformance.protocols.a2a.expectations import rejected
from conformance.protocols.a2a.names import CONTEXT_ID, INTERNAL, a2a_names, error_named, named
from conformance.protocols.a2a.offers import secured
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import DEFAULT, RawToken, Reply, dig
from conformance.transport.http import TransportFailure

SCHEMES, REQUIREMENTS = named("securitySchemes", "securityRequirements")
Caller = str | RawToken | None


def probes(ctx: CheckContext, client: A2AClient) -> dict[str, Callable[[Caller], Reply]]:
    """The core operations, each with a request the main token gets served (a task the check
    created to name), called as a given caller."""
    reply = client.send(client.drive("completed"))
    task = dig(reply.result, "task", "id") if reply.ok else None
    if not isinstance(task, str):
        raise Blocked(f"set-up failed: SendMessage with the main token made no task: {reply.describe()}",
                      kind="rejected_valid")
    return {"SendMessage": lambda who: client.send(client.message(), caller=who),
            "GetTask": lambda who: client.call("GetTask", {"id": task}, caller=who),
            "ListTasks": lambda who: client.call("ListTasks", {}, caller=who),
            "CancelTask": lambda who: client.call("CancelTask", {"id": task}, caller=who)}


def each_probe(ctx: CheckContext, who: Callable[[], Caller], judge: Callable[[Reply, str], None],
               label: str) -> None:
    """Each probe sent as ``who()``, judged, where the main token's same request is let through."""
    client = A2AClient(ctx)
    ctx.token("full")
    caller = who()
    if isinstance(caller, RawToken):  # goes where the card asks: it may ask for none the kit makes
        try:
            client.binding.presented(caller)
        except TransportFailure as exc:
            raise Untested(f"{exc} (the kit makes no client certificate the agent never issued)",
                           "credential") from None
    for name, call in probes(ctx, client).items():
        with ctx.subcheck(name):
            control = call(DEFAULT)
            if control.status in (401, 403):
                raise Untested(f"{name} with the main token was refused too ({control.describe()}): give a "
                               "credential the agent accepts", "credential")
            judge(call(who()), f"{name} {label}")


@requirement(id="A2A-AUTH-REQUIRED", level="MUST",
             title="Where the card declares security, a request without credentials is rejected",
             source=docs.spec("Servers **MUST** reject requests with invalid or missing authentication",
                              after="#### 3.3.2"),
             faults=["no_token_accepted"],
             applies=secured)
def check_auth_required(ctx: CheckContext) -> None:
    each_probe(ctx, lambda: None, lambda reply, what: rejected(ctx, reply, what), "without credentials")


@check_auth_required.fault
def no_token_accepted(ref: A2AReference) -> None:
    """A request without an Authorization header is served as the main caller."""
    @replaces(ref.caller)
    def caller(original: Any, request: Any) -> str:
        if not request.headers.get("authorization"):
            return "full"
        return str(original(request))


@requirement(id="A2A-AUTH-UNKNOWN-TOKEN", level="MUST",
             title="Where the card declares security, a request with a token the agent never issued is "
                   "rejected",
             source=docs.spec("Servers **MUST** reject requests with invalid or missing authentication",
                              after="#### 3.3.2"),
             faults=["unknown_token_accepted"],
             applies=secured)
def check_unknown_token(ctx: CheckContext) -> None:
    each_probe(ctx, lambda: RawToken("conformance-not-a-token-" + uuid.uuid4().hex),
               lambda reply, what: rejected(ctx, reply, what), "with a token the agent never issued")


@check_unknown_token.fault
def unknown_token_accepted(ref: A2AReference) -> None:
    """Any bearer token is served as the main caller (none at all is still refused)."""
    @replaces(ref.caller)
    def caller(original: Any, request: Any) -> str:
        if request.headers.get("authorization", "").lower().startswith("bearer "):
            return "full"
        return str(original(request))


def auth_code(ctx: CheckContext, reply: Reply) -> bool:
    """HTTP 401; over JSON-RPC also a custom error (a code neither section 9.5's table nor
    section 5.4's gives): section 3.3.2's examples."""
    if reply.status == 401:
        return True
    known = {*docs.jsonrpc_errors().values(), *(e.code for e in ctx.profile.errors.values())}
    return speaks_jsonrpc(ctx, reply) and reply.flagged and reply.error_code not in known


@requirement(id="A2A-AUTH-STATUS", level="SHOULD",
             title="A request without credentials is rejected with HTTP 401 (over JSON-RPC: or a custom "
                   "error code)",
             source=docs.spec("**SHOULD** use appropriate binding-specific error codes for authentication",
                              after="### 7.4"),
             faults=["unauthenticated_as_400"],
             applies=secured)
def check_auth_status(ctx: CheckContext) -> None:
    def judge(reply: Reply, what: str) -> None:
        ctx.expect(not reply.ok and auth_code(ctx, reply),
                   f"{what}: rejected with {reply.describe()}, not HTTP 401"
                   + (" or a custom JSON-RPC error" if speaks_jsonrpc(ctx, reply) else ""),
                   kind="wrong_status", expected_status=401, actual_status=reply.status)
    each_probe(ctx, lambda: None, judge, "without credentials")


@check_auth_status.fault
def unauthenticated_as_400(ref: A2AReference) -> None:
    """Missing or unknown credentials are refused with HTTP 400 (JSON-RPC: a -32603 at HTTP 200)."""
    @replaces(ref.caller)
    def caller(original: Any, request: Any) -> str:
        try:
            return str(original(request))
        except Refusal as refusal:
            raise Refusal(refusal.name, refusal.message, status=400) from refusal


def declared_schemes(card: dict[str, Any]) -> set[str]:
    """The HTTP authentication schemes the card's httpAuthSecurityScheme entries name (lower case)."""
    found = set()
    for entry in (card.get(SCHEMES) or {}).values() if isinstance(card.get(SCHEMES), dict) else []:
        scheme = dig(entry, "httpAuthSecurityScheme", "scheme")
        if isinstance(scheme, str):
            found.add(scheme.lower())
    return found


@requirement(id="A2A-AUTH-CHALLENGE", level="SHOULD",
             title="A rejection for missing credentials carries a WWW-Authenticate challenge naming a scheme "
                   "the card declares",
             source=docs.spec("Servers **SHOULD** include authentication challenge information",
                              after="#### 3.3.2"),
             faults=["challenge_missing"],
             applies=secured)
def check_auth_challenge(ctx: CheckContext) -> None:
    """HTTP's challenge header (RFC 9110) says which scheme to use; where the card declares HTTP
    authentication schemes, the challenge names one of them."""
    client = A2AClient(ctx)
    wanted = declared_schemes(client.card)

    def judge(reply: Reply, what: str) -> None:
        value = reply.http.headers.get("www-authenticate", "")
        ctx.expect(value, f"{what}: rejected ({reply.describe()}) without a WWW-Authenticate challenge",
                   kind="expectation")
        named_scheme = value.split(" ", 1)[0].strip().lower()
        ctx.expect(not wanted or named_scheme in wanted,
                   f"{what}: the challenge {value!r} names none of the card's schemes {sorted(wanted)}",
                   kind="expectation")
    each_probe(ctx, lambda: None, judge, "without credentials")


@check_auth_challenge.fault
def challenge_missing(ref: A2AReference) -> None:
    """Authentication refusals come without a WWW-Authenticate header."""
    @replaces(ref.challenge)
    def challenge(original: Any, refusal: Refusal) -> dict[str, str]:
        return {}


# -- another caller's tasks -------------------------------------------------------------------
def owner_task(ctx: CheckContext) -> tuple[A2AClient, dict[str, Any]]:
    """A completed task of the main caller (untested without the ``other`` credential; the rows
    calling this apply where the card declares security: ``applies=secured``)."""
    client = A2AClient(ctx)
    ctx.token("full")
    ctx.token("other")
    with ctx.setup("a task of the main caller"):
        reply = client.send(client.drive("completed"))
        ctx.expect(reply.ok, f"SendMessage as the main caller was refused: {reply.describe()}",
                   kind="rejected_valid")
        return client, client.task_of(reply, "SendMessage as the main caller")


@requirement(id="A2A-AUTH-TASK-SCOPE", level="MUST",
             title="Another caller's GetTask, CancelTask and follow-up SendMessage of the main caller's task "
                   "get TaskNotFoundError, and leave the task as it was",
             source=docs.spec("Servers **MUST NOT** reveal the existence of resources the client is not",
                              after="#### 3.3.2"),
             faults=["foreign_task_served", "foreign_state_revealed"], needs=["other"],
             applies=secured)
def check_task_scope(ctx: CheckContext) -> None:
    """Sections 3.3.2 and 13.1: a task the caller may not access is not found (the resource
    errors' MUST), never refused in a way that shows it exists (an authorization error for it
    alone, its state): an answer other than TaskNotFoundError tells a stranger it is there."""
    client, task = owner_task(ctx)
    wanted = error_named(ctx.profile, "TaskNotFoundError")
    follow_up = client.message(taskId=task["id"])
    calls = {"GetTask": lambda: client.call("GetTask", {"id": task["id"]}, caller="other"),
             "CancelTask": lambda: client.call("CancelTask", {"id": task["id"]}, caller="other"),
             "SendMessage": lambda: client.send(follow_up, caller="other")}
    for name, call in calls.items():
        with ctx.subcheck(name):
            reply = call()
            ctx.expect(not reply.ok, f"{name} of the main caller's task as another caller was served: "
                                     f"{reply.describe()}", kind="auth_not_enforced")
            ctx.expect(error_name(ctx, reply) == wanted,
                       f"{name} of the main caller's task as another caller: {reply.describe()}, not "
                       f"{wanted} (any other answer shows the task exists)", kind="not_found_expected")
    after = client.get(task["id"])
    ctx.expect(after.ok and state(after.result) == state(task),
               f"after another caller's requests the main caller's task is {after.describe()}, was "
               f"{state(task)}", kind="state_changed")


@check_task_scope.fault
def foreign_task_served(ref: A2AReference) -> None:
    """Any caller reads, cancels and continues any task by its id."""
    @replaces(ref.owned_task)
    def owned_task(original: Any, task_id: Any, caller: str) -> Any:
        found = ref.tasks.get(task_id) if isinstance(task_id, str) else None
        return found if found is not None else original(task_id, caller)


@check_task_scope.fault
def foreign_state_revealed(ref: A2AReference) -> None:
    """CancelTask looks at a task's state before its owner: another caller's terminal task
    is answered TaskNotCancelableError (which tells the caller it exists)."""
    @replaces(ref.op_CancelTask)
    def cancel(original: Any, params: Any, caller: str) -> Any:
        found = ref.tasks.get(params.get("id")) if isinstance(params.get("id"), str) else None
        if found is not None and found["status"]["state"] in docs.terminal_states():
            raise Refusal("TaskNotCancelableError", f"task {found['id']} is {found['status']['state']}")
        return original(params, caller)


@requirement(id="A2A-AUTH-TASK-HIDDEN", level="SHOULD",
             title="Another caller's task and a task that does not exist get the same answer (status, code, "
                   "message but the id)",
             source=docs.spec("Servers **SHOULD NOT** distinguish between \"does not exist\"",
                              after="#### 3.3.2"),
             faults=["foreign_task_named"], needs=["other"],
             applies=secured)
def check_task_hidden(ctx: CheckContext) -> None:
    """The answer to another caller's task, next to the answers to two tasks that do not
    exist: what tells those two apart (a message naming each id in its own way) is not
    compared; everything else is."""
    client, task = owner_task(ctx)
    unknown = [f"conformance-no-such-task-{uuid.uuid4().hex[:12]}" for _ in range(2)]
    foreign = client.call("GetTask", {"id": task["id"]}, caller="other")
    missing = [client.call("GetTask", {"id": u}, caller="other") for u in unknown]

    def said(reply: Reply, task_id: str, message: bool) -> tuple[Any, ...]:
        text = re.sub(re.escape(task_id), "<id>", reply.error_message) if message else ""
        return reply.status, reply.error_code, text
    message = said(missing[0], unknown[0], True) == said(missing[1], unknown[1], True)
    ctx.expect(said(foreign, task["id"], message) == said(missing[0], unknown[0], message),
               f"GetTask as another caller: the main caller's task is answered {foreign.describe()}, a task "
               f"that does not exist {missing[0].describe()}", kind="expectation")


@check_task_hidden.fault
def foreign_task_named(ref: A2AReference) -> None:
    """Another caller's task is answered TaskNotFoundError with a message saying whose it is."""
    @replaces(ref.owned_task)
    def owned_task(original: Any, task_id: Any, caller: str) -> Any:
        if isinstance(task_id, str) and task_id in ref.tasks and ref.owners.get(task_id) != caller:
            raise Refusal("TaskNotFoundError", f"task {task_id!r} belongs to another caller")
        return original(task_id, caller)


@requirement(id="A2A-AUTH-LIST-SCOPE", level="MUST",
             title="Another caller's ListTasks does not list the main caller's task, with or without a "
                   "contextId filter",
             source=docs.spec("Even when `contextId` or other filter parameters are not specified",
                              after="### 13.1"),
             faults=["list_unscoped", "list_scoped_without_filter_only"], needs=["other"],
             applies=secured)
def check_list_scope(ctx: CheckContext) -> None:
    client, task = owner_task(ctx)
    for label, params in (("no filter", {}), ("the task's contextId", {CONTEXT_ID: task.get(CONTEXT_ID)})):
        with ctx.subcheck(label):
            reply = client.call("ListTasks", params, caller="other")
            if not reply.ok:  # nothing listed: the main caller's same listing says if ListTasks is served
                client.look("ListTasks", params, f"ListTasks as the main caller ({label})")
                raise Untested(f"ListTasks as another caller ({label}) was refused, the main caller's "
                               f"served: nothing listed to judge ({reply.describe()})", "credential")
            ids = [dig(t, "id") for t in dig(reply.result, "tasks") or []]
            ctx.expect(task["id"] not in ids,
                       f"ListTasks as another caller ({label}) lists the main caller's task {task['id']}",
                       kind="auth_not_enforced")


def listing_for_everyone(ref: A2AReference, when: Callable[[dict[str, Any]], bool]) -> None:
    @replaces(ref.op_ListTasks)
    def op(original: Any, params: dict[str, Any], caller: str) -> Any:
        if not when(params):
            return original(params, caller)
        kept = ref.owners
        ref.owners = {task_id: caller for task_id in ref.tasks}
        try:
            return original(params, caller)
        finally:
            ref.owners = kept


@check_list_scope.fault
def list_unscoped(ref: A2AReference) -> None:
    """ListTasks lists every caller's tasks."""
    listing_for_everyone(ref, lambda params: True)


@check_list_scope.fault
def list_scoped_without_filter_only(ref: A2AReference) -> None:
    """ListTasks is scoped to the caller only without a filter: by contextId it lists every
    caller's tasks in that context."""
    listing_for_everyone(ref, lambda params: bool(params.get(CONTEXT_ID)))


# -- a caller the agent knows but does not permit -----------------------------------------
def denied_operations(ctx: CheckContext) -> dict[str, str]:
    """The operations the ``limited`` credential may not call, each with the permission it
    lacks where the config names one (section 7.5: authorization is the agent's own policy,
    so only the operator can say what a caller lacks)."""
    given = ctx.credential("limited")
    denied = given.get("denied") if isinstance(given, dict) else None
    if isinstance(denied, list):
        denied = {str(op): "" for op in denied}
    if not isinstance(denied, dict) or not denied:
        raise Untested("credentials.limited names no operation it is denied (give credentials.limited as "
                       "token: and denied: [operations])", "credential")
    return {str(op): str(permission or "") for op, permission in denied.items()}


def limited_calls(ctx: CheckContext, client: A2AClient) -> dict[str, Callable[[Caller], Reply]]:
    """Each core operation as a request a caller can be served: a task of the caller's own
    to name (made by SendMessage as that caller, or, where the ``limited`` caller may not
    send, the main caller's: another caller's task is not found, which hides its existence
    and says nothing about permissions)."""
    tasks: dict[str, str | None] = {}

    def own_task(who: Caller) -> str:
        key = str(who)
        if key not in tasks:
            reply = client.send(client.drive("completed"), caller=who)
            tasks[key] = dig(reply.result, "task", "id") if reply.ok else None
        found = tasks[key]
        if not isinstance(found, str):
            raise Untested(f"no task of this caller to name: SendMessage made none ({who})", "other")
        return found
    return {"SendMessage": lambda who: client.send(client.message(), caller=who),
            "GetTask": lambda who: client.call("GetTask", {"id": own_task(who)}, caller=who),
            "ListTasks": lambda who: client.call("ListTasks", {}, caller=who),
            "CancelTask": lambda who: client.call("CancelTask", {"id": own_task(who)}, caller=who)}


def each_denied(ctx: CheckContext, judge: Callable[[Reply, Reply, str, str], None]) -> None:
    """Each denied core operation the kit can form, sent as the ``limited`` caller and judged
    beside the main caller's same request (``judge(limited, main, operation, permission)``),
    once the ``limited`` caller was served an operation it is not denied (a credential the
    agent refuses outright is not one it knows)."""
    client = A2AClient(ctx)
    ctx.token("full")
    ctx.token("limited")
    denied = denied_operations(ctx)
    calls = limited_calls(ctx, client)
    unknown = sorted(set(denied) - set(calls))
    if not set(denied) & set(calls):
        raise Untested(f"credentials.limited is denied {', '.join(unknown)}: none of {', '.join(calls)}, the "
                       "operations the kit forms", "credential")
    answers = []
    for allowed in [op for op in ("ListTasks", "SendMessage") if op not in denied]:
        reply = calls[allowed]("limited")
        if reply.ok:
            break
        answers.append(f"{allowed}: {reply.describe()}")
    else:
        if answers:
            raise Untested(f"the limited caller was refused what credentials.limited does not deny it ("
                           f"{'; '.join(answers)}): give a credential the agent accepts", "credential")
    for name in [op for op in calls if op in denied]:
        with ctx.subcheck(name):
            main = calls[name]("full")
            if main.status in (401, 403):
                raise Untested(f"{name} with the main token was refused too ({main.describe()}): give a "
                               "credential the agent permits", "credential")
            judge(calls[name]("limited"), main, name, denied[name])


@requirement(id="A2A-AUTH-FORBIDDEN", level="MUST",
             title="A caller the agent accepts but does not permit an operation gets an error for it: not "
                   "served, not a server failure, not an A2A error as if the request were let through",
             source=docs.spec("Servers **MUST** return an authorization error when the authenticated",
                              after="#### 3.3.2"),
             faults=["permission_ignored", "forbidden_as_internal", "forbidden_as_unsupported"],
             needs=["limited"],
             applies=secured)
def check_forbidden(ctx: CheckContext) -> None:
    """What an authorization error looks like the spec gives by example only (HTTP 403, gRPC
    PERMISSION_DENIED, a JSON-RPC custom error), so any refusal of the caller counts but
    these: the request served, the server failing, or an error of the A2A tables (which
    says the request was read and failed for another reason), unless the main caller got
    that very error for the same request (the agent may look at the task first)."""
    def judge(reply: Reply, main: Reply, name: str, permission: str) -> None:
        what = f"{name} as a caller the agent does not permit it"
        ctx.expect(not reply.ok, f"{what}: served ({reply.describe()}); the spec wants an authorization "
                                 "error", kind="auth_not_enforced")
        if reply.ok:
            return
        error = error_name(ctx, reply)
        ctx.expect(reply.status < 500 and error != INTERNAL,
                   f"{what}: the server failed instead of refusing the caller: {reply.describe()}",
                   kind="wrong_status")
        ctx.expect(error not in a2a_names(ctx.profile) or error == error_name(ctx, main),
                   f"{what}: answered {error}, as if the request had been let through (the main caller's "
                   f"same request: {main.describe()}): {reply.describe()}", kind="auth_not_enforced")
    each_denied(ctx, judge)


@check_forbidden.fault
def permission_ignored(ref: A2AReference) -> None:
    """A caller is served every operation whatever it is denied."""
    @replaces(ref.permit)
    def permit(original: Any, method: str, caller: str) -> None:
        return None


@check_forbidden.fault
def forbidden_as_internal(ref: A2AReference) -> None:
    """A denied operation fails the server (InternalError, HTTP 500)."""
    @replaces(ref.permit)
    def permit(original: Any, method: str, caller: str) -> None:
        try:
            original(method, caller)
        except Refusal as refusal:
            raise Refusal(INTERNAL, refusal.message, status=500) from refusal


@check_forbidden.fault
def forbidden_as_unsupported(ref: A2AReference) -> None:
    """A denied operation is answered UnsupportedOperationError, as if the agent had no such
    operation."""
    @replaces(ref.permit)
    def permit(original: Any, method: str, caller: str) -> None:
        try:
            original(method, caller)
        except Refusal as refusal:
            raise Refusal("UnsupportedOperationError", refusal.message) from refusal


def names_what_is_missing(reply: Reply, name: str, permission: str) -> bool:
    """The refusal says what is missing: the permission the config names, else the operation
    (found anywhere in the error's message, its details, or the challenge header)."""
    said = " ".join([reply.error_message or "", json.dumps(reply.error_data, default=str),
                     reply.http.headers.get("www-authenticate", "")]).lower()
    return (permission or name).lower() in said


@requirement(id="A2A-AUTH-FORBIDDEN-DETAIL", level="SHOULD",
             title="The authorization error says what permission is missing (the operation, or the "
                   "permission the config names)",
             source=docs.spec("Servers **SHOULD** indicate what permission or scope is missing",
                              after="#### 3.3.2"),
             faults=["permission_unnamed"], needs=["limited"],
             applies=secured)
def check_forbidden_detail(ctx: CheckContext) -> None:
    def judge(reply: Reply, main: Reply, name: str, permission: str) -> None:
        if reply.ok:
            raise Untested(f"{name} as the limited caller was served: A2A-AUTH-FORBIDDEN says so", "other")
        ctx.expect(names_what_is_missing(reply, name, permission),
                   f"{name} refused without naming what is missing ({permission or name!r} appears neither "
                   f"in the message, the details nor WWW-Authenticate): {reply.describe()}",
                   kind="expectation")
    each_denied(ctx, judge)


@check_forbidden_detail.fault
def permission_unnamed(ref: A2AReference) -> None:
    """The authorization error says only "forbidden"."""
    @replaces(ref.permit)
    def permit(original: Any, method: str, caller: str) -> None:
        try:
            original(method, caller)
        except Refusal as refusal:
            raise Refusal(refusal.name, "forbidden", status=refusal.status) from refusal
