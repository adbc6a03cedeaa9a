"""Section 5.1: an agent that supports several bindings gives the same operations, the same
results and the same errors, with the same authentication, over each of them. Where the
card declares one of the profile's bindings only, the rows are untested (the section is
about an agent that supports several).

Whatever the run's binding, each row talks to every binding the card declares
(``ctx.binding_named``); the requests are the kit's own (a task it created, ids no agent
issued, the smallest request of each method, the first break of it both bindings carry),
and answers are compared by their A2A meaning (``params.outcome``): a JSON-RPC -32001 and an
HTTP 404 are both TaskNotFoundError."""

from __future__ import annotations

import json
import re
from typing import Any

from conformance.checks.causes import cause_of
from conformance.generation.invalid import _example
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces, returns
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import offers, routes
from conformance.protocols.a2a.answers import error_name, outcome, reason_given, speaks_jsonrpc
from conformance.protocols.a2a.client import A2AClient, blocked_looks, state
from conformance.protocols.a2a.expectations import rejected
from conformance.protocols.a2a.inputs import Inputs, Safe
from conformance.protocols.a2a.names import METHOD_NOT_FOUND, error_named
from conformance.protocols.a2a.reference import REST_PREFIX, A2AReference
from conformance.transport.binding import Reply, dig


def bindings(ctx: CheckContext) -> dict[str, A2AClient]:
    """A client per binding of the profile the card declares (untested with fewer than two)."""
    A2AClient(ctx)  # reads the card: where each binding lives
    names = [name for name in ctx.profile.settings["bindings"] if name in ctx.run.endpoints]
    if len(names) < 2:
        raise Untested(f"the agent card declares {', '.join(names) or 'none'} of the profile's bindings: "
                       "section 5.1 is about an agent that supports several", "optional")
    return {name: A2AClient(ctx, binding=name) for name in names}


def new_task(ctx: CheckContext, client: A2AClient, what: str) -> dict[str, Any]:
    """A task the check created over ``client``'s binding, as it stands once the agent stopped
    working on it (untested when the agent answers with a Message)."""
    with ctx.setup(what):
        reply = client.send(client.drive("completed"))
        ctx.expect(reply.ok, f"SendMessage over {client.binding.name} was refused: {reply.describe()}",
                   kind="rejected_valid")
        task = client.task_of(reply, what)
    return client.settled(task)


def smallest(client: A2AClient, method: str, in_world: bool, task: str | None) -> Any:
    """The smallest request of ``method`` made safe (with what its route's path names),
    naming ``task`` where it names one."""
    safe = Safe(client, method, world=[task] if task else [])
    return safe(_example(client.ctx.profile.operations[method].params_schema), in_world=in_world)


def compared(ctx: CheckContext, what: str, replies: dict[str, Reply]) -> None:
    """The answers of the bindings to one request mean the same."""
    said = {name: outcome(ctx, reply) for name, reply in replies.items()}
    ctx.expect(len(set(said.values())) == 1,
               f"{what}: " + "; ".join(f"over {name} {said[name]} ({reply.describe()})"
                                       for name, reply in replies.items()),
               kind="wrong_error_code")


# -- the same task over each binding ----------------------------------------------------------
def facts(task: Any, settled: bool) -> dict[str, Any]:
    """What two views of one task must agree on: its id and context and, once it has settled
    (a terminal or interrupted state: nothing moves it meanwhile), its state and artifacts."""
    out = {"id": dig(task, "id"), "contextId": dig(task, "contextId")}
    if settled:
        out.update({"state": state(task), "artifacts": dig(task, "artifacts") or []})
    return out


@requirement(id="A2A-AGREE-TASK", level="MUST",
             title="A task created over one binding is the same task over the other (GetTask: id, contextId, "
                   "state, artifacts; ListTasks lists it)",
             source=docs.spec("**Consistent Behavior**", after="### 5.1"))
def check_agree_task(ctx: CheckContext) -> None:
    clients = bindings(ctx)
    for made_over, maker in clients.items():
        task = new_task(ctx, maker, f"a task created over {made_over}")
        views = {name: c.get(task["id"]) for name, c in clients.items()}
        settled = state(views[made_over].result) in (*docs.terminal_states(), *docs.interrupted_states())
        for name, reply in views.items():
            with ctx.subcheck(f"created over {made_over}, GetTask over {name}"):
                ctx.expect(reply.ok, f"GetTask over {name} of the task created over {made_over} "
                                     f"({task['id']}): {reply.describe()}", kind="not_found_expected")
                mine, theirs = facts(reply.result, settled), facts(views[made_over].result, settled)
                ctx.expect(mine == theirs, f"GetTask over {name} answers {json.dumps(mine)[:300]}, over "
                                           f"{made_over} {json.dumps(theirs)[:300]}", kind="expectation")
        for name, reader in clients.items():
            if name == made_over:
                continue
            with ctx.subcheck(f"created over {made_over}, ListTasks over {name}"):
                what = f"ListTasks over {name} by the contextId of the task created over {made_over}"
                listed = reader.look_or_later("ListTasks", {"contextId": task.get("contextId")}, what)
                if listed is None:  # refused over every binding: A2A-LIST-RESPONSE's; over one: -OPERATIONS'
                    continue
                ids = [dig(t, "id") for t in dig(listed, "tasks") or []]
                ctx.expect(task["id"] in ids, f"{what} does not list it: {json.dumps(listed)[:300]}",
                           kind="expectation")
    blocked_looks(ctx)


@check_agree_task.fault
def bindings_apart(ref: A2AReference) -> None:
    """Each binding keeps its own tasks: a task created over JSON-RPC is not found over
    HTTP+JSON, and one created over HTTP+JSON not over JSON-RPC."""
    apart: dict[str, Any] = {"tasks": {}, "owners": {}, "updated": {}}

    @replaces(ref.rest)
    async def rest(original: Any, request: Any) -> Any:
        kept = {key: getattr(ref, key) for key in apart}
        for key, value in apart.items():
            setattr(ref, key, value)
        try:
            return await original(request)
        finally:
            for key, value in kept.items():
                apart[key] = getattr(ref, key)
                setattr(ref, key, value)


@check_agree_task.fault
def rest_task_without_artifacts(ref: A2AReference) -> None:
    """Over HTTP+JSON, GetTask leaves the task's artifacts out (JSON-RPC gives them)."""
    from starlette.responses import JSONResponse

    @replaces(ref.rest)
    async def rest(original: Any, request: Any) -> Any:
        response = await original(request)
        if request.method == "GET" and re.search(r"/tasks/[^/:]+$", request.url.path) and \
                response.status_code == 200:
            body = json.loads(response.body)
            body.pop("artifacts", None)
            return JSONResponse(body, media_type=response.media_type)
        return response


@check_agree_task.fault
def grpc_task_without_artifacts(ref: A2AReference) -> None:
    """Over gRPC, GetTask leaves the task's artifacts out (JSON-RPC and HTTP+JSON give them)."""
    @replaces(ref.grpc_call)
    def grpc_call(original: Any, method: str, params: Any, context: Any) -> Any:
        result = original(method, params, context)
        return {k: v for k, v in result.items() if k != "artifacts"} if method == "GetTask" else result


# -- the same operations ----------------------------------------------------------------------
def missing(ctx: CheckContext, reply: Reply, other: Reply | None) -> bool:
    """Whether an answer says the operation is not there: JSON-RPC's -32601, or over HTTP+JSON
    a 404, 405 or 501 naming no A2A error (a 404 is TaskNotFoundError's status too: read so
    where the other binding says the task is not found)."""
    if speaks_jsonrpc(ctx, reply):
        return error_name(ctx, reply) == METHOD_NOT_FOUND
    if reply.ok or reason_given(ctx, reply) or reply.status not in (404, 405, 501):
        return False
    not_found = error_named(ctx.profile, "TaskNotFoundError")
    return reply.status != 404 or other is None or error_name(ctx, other) != not_found


@requirement(id="A2A-AGREE-OPERATIONS", level="MUST",
             title="Every operation answers over each binding the card declares (no method or route missing "
                   "from one)",
             source=docs.spec("**Identical Functionality**", after="### 5.1"))
def check_agree_operations(ctx: CheckContext) -> None:
    """Each method of the proto, with its smallest request naming a task the check created,
    over every binding: none answers that the operation is not there."""
    clients = bindings(ctx)
    first = next(iter(clients.values()))
    task = new_task(ctx, first, "a task for the operations to name")["id"]
    for method in ctx.profile.operations:
        with ctx.subcheck(method):
            replies = {name: call(c, method, smallest(c, method, True, task)) for name, c in clients.items()}
            for name, reply in replies.items():
                others = [r for n, r in replies.items() if n != name]
                ctx.expect(not missing(ctx, reply, others[0] if others else None),
                           f"{method} over {name} answers that it is not there ({reply.describe()}); over "
                           + ", ".join(f"{n}: {outcome(ctx, r)}" for n, r in replies.items() if n != name),
                           kind="expectation")


@check_agree_operations.fault
def rest_lacks_list_tasks(ref: A2AReference) -> None:
    """The HTTP+JSON binding has no ListTasks route (404), which JSON-RPC serves."""
    @replaces(ref.match_route)
    def match_route(original: Any, verb: str, path: str) -> Any:
        found = original(verb, path)
        return None if found and found[0] == "ListTasks" else found


@check_agree_operations.fault
def jsonrpc_lacks_cancel(ref: A2AReference) -> None:
    """The JSON-RPC binding answers CancelTask with -32601 (method not found), which
    HTTP+JSON serves."""
    @replaces(ref.jsonrpc)
    async def jsonrpc(original: Any, request: Any) -> Any:
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("method") == "CancelTask":
            return ref.rpc_error(body.get("id"), Refusal(METHOD_NOT_FOUND, "method 'CancelTask' not found"))
        return await original(request)


check_agree_operations.fault(returns("grpc_lacks_cancel", "grpc_serves", False,
                                     "The gRPC binding does not serve CancelTask (UNIMPLEMENTED), which the "
                                     "other bindings serve.", when=lambda method: method == "CancelTask"))


# -- the same errors --------------------------------------------------------------------------
@requirement(id="A2A-AGREE-ERRORS", level="MUST",
             title="The same request gets the same error over each binding (the A2A error of the table, or "
                   "invalid params)",
             source=docs.spec("**Same Error Handling**", after="### 5.1"))
def check_agree_errors(ctx: CheckContext) -> None:
    """Each method's smallest request naming a task no agent issued, and naming a completed
    task the check created; and its first break both bindings carry: the answers over the
    bindings mean the same (a JSON-RPC -32001 is an HTTP 404, a -32602 an HTTP 4xx naming no
    A2A error)."""
    clients = bindings(ctx)
    first = next(iter(clients.values()))
    task = new_task(ctx, first, "a task for the requests to name")["id"]
    for method in ctx.profile.operations:
        with ctx.subcheck(method):
            for in_world in (False, True) if Safe(first, method).names_task() else (False,):
                named = "a completed task the check created" if in_world else "no real task"
                what = f"{method} naming {named}"
                compared(ctx, what, {name: call(c, method, smallest(c, method, in_world, task))
                                     for name, c in clients.items()})
            broken, carriers = first_break(ctx, clients, method, task)
            if broken is not None:
                compared(ctx, f"{method} breaking '{broken.violation.keyword}' at {broken.violation.pointer}",
                         {name: call(clients[name], method, broken.instance) for name in carriers})


def call(client: A2AClient, method: str, params: Any) -> Reply:
    """``method`` over ``client``'s binding; over HTTP+JSON, a method the proto's verb does not
    reach is tried by POST as sections 5.3 and 11.3.2 write it (SubscribeToTask: both readings)."""
    reply = client.call(method, params)
    if method == "SubscribeToTask" and client.binding.kind == "http-routes" and not routes.reached(client.ctx,
                                                                                                    reply):
        return routes.post_verb(client, method).call(method, params)
    return reply


def first_break(ctx: CheckContext, clients: dict[str, A2AClient], method: str,
                task: str) -> tuple[Any, list[str]]:
    """The first break of the method's requests (the sweep) that two bindings or more carry,
    and the bindings that carry it (a break one wire cannot carry, such as a JSON type
    protobuf refuses, is still compared between the others)."""
    readers = {name: Inputs(ctx, method, binding=name) for name in clients}
    for inputs in readers.values():
        inputs.safe.world = [task]
    for bad in next(iter(readers.values())).sweep("must"):
        carriers = [name for name, inputs in readers.items() if inputs.carried(bad.instance)]
        if len(carriers) >= 2:
            return bad, carriers
    return None, []


@check_agree_errors.fault
def rest_not_cancelable_as_unsupported(ref: A2AReference) -> None:
    """Over HTTP+JSON, a task that cannot be canceled is answered UnsupportedOperationError
    (JSON-RPC says TaskNotCancelableError)."""
    @replaces(ref.rest_error)
    def rest_error(original: Any, refusal: Refusal) -> Any:
        if refusal.name == "TaskNotCancelableError":
            refusal = Refusal("UnsupportedOperationError", refusal.message)
        return original(refusal)


@check_agree_errors.fault
def grpc_not_cancelable_as_unsupported(ref: A2AReference) -> None:
    """Over gRPC, a task that cannot be canceled is answered UnsupportedOperationError (the
    other bindings say TaskNotCancelableError)."""
    @replaces(ref.grpc_abort)
    def grpc_abort(original: Any, context: Any, refusal: Refusal) -> None:
        if refusal.name == "TaskNotCancelableError":
            refusal = Refusal("UnsupportedOperationError", refusal.message)
        original(context, refusal)


# -- the same authentication ------------------------------------------------------------------
@requirement(id="A2A-AGREE-AUTH", level="MUST", optional=offers.SECURITY,
             title="Where the card declares security, each binding serves the main token and rejects a "
                   "request without credentials",
             source=docs.spec("**Equivalent Authentication**", after="### 5.1"))
def check_agree_auth(ctx: CheckContext) -> None:
    clients = bindings(ctx)
    offers.require(next(iter(clients.values())), offers.SECURITY, why="an agent may serve any caller")
    ctx.token("full")
    for name, client in clients.items():
        with ctx.subcheck(name):
            served = client.call("ListTasks", {})
            if not served.ok and served.status not in (401, 403) and cause_of(ctx, served) != "credential":
                # refused for another cause than the caller: ListTasks is A2A-LIST-RESPONSE's
                client.look_or_later("ListTasks", {}, f"ListTasks over {name} with the main token")
                continue
            ctx.expect(served.ok, f"ListTasks over {name} with the main token: {served.describe()}",
                       kind="rejected_valid")
            rejected(ctx, client.call("ListTasks", {}, caller=None),
                     f"ListTasks over {name} without credentials")
    blocked_looks(ctx)


@check_agree_auth.fault
def rest_without_auth(ref: A2AReference) -> None:
    """The HTTP+JSON binding serves requests without credentials (JSON-RPC rejects them)."""
    @replaces(ref.caller)
    def caller(original: Any, request: Any) -> str:
        if request.url.path.startswith(REST_PREFIX) and not request.headers.get("authorization"):
            return "full"
        return str(original(request))


@check_agree_auth.fault
def grpc_without_auth(ref: A2AReference) -> None:
    """The gRPC binding serves calls without credentials (the other bindings reject them)."""
    @replaces(ref.grpc_caller)
    def caller(original: Any, request: Any) -> str:
        return "full" if not request.headers.get("authorization") else str(original(request))
