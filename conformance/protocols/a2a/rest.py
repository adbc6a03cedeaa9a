"""The HTTP+JSON binding (section 11) on the wire: every method reachable at the route the
proto's google.api.http annotations give it (SubscribeToTask by either verb: the proto
says GET, sections 5.3 and 11.3.2 say POST), errors as google.rpc.Status JSON, the
application/a2a+json media type (a SHOULD), request fields as camelCase query parameters
on GET routes, and the /{tenant} routes where the card declares a tenant. Every row here
is NotApplicable over JSON-RPC."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.kit.check import CheckContext, NotApplicable
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import REST, describe
from conformance.protocols.a2a.client import A2AClient, blocked_looks
from conformance.protocols.a2a.driving import any_task, push_config, task_from
from conformance.protocols.a2a.expectations import over
from conformance.protocols.a2a.provocations import a2a_errors, validation_errors
from conformance.protocols.a2a.reference import A2AReference
from conformance.protocols.a2a.routes import STREAM_TIMEOUT, reached, subscribe
from conformance.transport.binding import Reply


def route_calls(client: A2AClient, task_id: str) -> dict[str, Callable[[], Reply]]:
    """A call of each method about the check's own task (push configs: the one it creates)."""
    made: dict[str, Any] = {}

    def create() -> Reply:
        reply = client.call("CreateTaskPushNotificationConfig", push_config(task_id))
        made["id"] = reply.result.get("id") if reply.ok and isinstance(reply.result, dict) else None
        return reply

    def config() -> dict[str, Any]:
        return {"taskId": task_id, "id": made.get("id") or "conformance-no-such-config"}

    return {
        "SendStreamingMessage": lambda: client.call("SendStreamingMessage", {"message": client.message()},
                                                    timeout=STREAM_TIMEOUT),
        "GetTask": lambda: client.get(task_id),
        "ListTasks": lambda: client.call("ListTasks", {}),
        "CancelTask": lambda: client.call("CancelTask", {"id": task_id}),
        "SubscribeToTask": lambda: subscribe(client, task_id),
        "CreateTaskPushNotificationConfig": create,
        "GetTaskPushNotificationConfig": lambda: client.call("GetTaskPushNotificationConfig", config()),
        "ListTaskPushNotificationConfigs": lambda: client.call("ListTaskPushNotificationConfigs",
                                                               {"taskId": task_id}),
        "DeleteTaskPushNotificationConfig": lambda: client.call("DeleteTaskPushNotificationConfig", config()),
        "GetExtendedAgentCard": lambda: client.call("GetExtendedAgentCard", {}),
    }


@requirement(id="A2A-REST-ROUTES", level="MUST",
             title="Every method of A2AService is reachable at the route the proto's google.api.http "
                   "annotation gives it",
             source=docs.proto_at('post: "/message:send"', after="service A2AService"),
             faults=["rest_cancel_unrouted"],
             applies=over(REST))
def check_routes(ctx: CheckContext) -> None:
    """Each route called about a task the check made; an answer that is not 404, 405 or 501
    without an A2A error shows the route reaches its method, whatever the method says."""
    client = A2AClient(ctx)
    routes = docs.rest_routes(ctx.profile)
    sent = client.send(client.drive("completed"))
    with ctx.subcheck("SendMessage"):
        ctx.expect(reached(ctx, sent), f"SendMessage at {routes['SendMessage'][0]['path']}: {describe(sent)}",
                   kind="not_found_expected")
    with ctx.setup("SendMessage making the task the other routes are called about"):
        task = task_from(client, sent, "SendMessage")
    calls = route_calls(client, task["id"])
    for method in routes:
        if method == "SendMessage":
            continue
        with ctx.subcheck(method):
            call = calls.get(method, lambda m=method: client.call(m, {}))
            reply = call()
            route = routes[method][0]
            ctx.expect(reached(ctx, reply), f"{method} at {route['verb'].upper()} {route['path']}: no route "
                                            f"answers it: {describe(reply)}", kind="not_found_expected")


@check_routes.fault
def rest_cancel_unrouted(ref: A2AReference) -> None:
    """POST /tasks/{id}:cancel has no route (404)."""
    @replaces(ref.match_route)
    def match_route(original: Any, verb: str, path: str) -> Any:
        found = original(verb, path)
        return None if found is not None and found[0] == "CancelTask" else found


# -- errors -----------------------------------------------------------------------------------
def status_problems(reply: Reply) -> list[str]:
    """What an HTTP+JSON error gets wrong of google.rpc.Status JSON (section 11.6)."""
    body = reply.http.json()
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return [f"the body holds no error object: {describe(reply)}"]
    problems = []
    if not (reply.status >= 400 and type(error.get("code")) is int and error.get("code") == reply.status):
        problems.append(f"error.code is {error.get('code')!r} at HTTP {reply.status}: both carry the error "
                        "code")
    if not isinstance(error.get("message"), str):
        problems.append(f"error.message is {error.get('message')!r}, not a string")
    if "details" in error and not isinstance(error["details"], list):
        problems.append(f"error.details is {error['details']!r}, not an array")
    return problems


@requirement(id="A2A-REST-ERROR-BODY", level="MUST",
             title="An HTTP+JSON error is google.rpc.Status JSON: error.code the HTTP status, error.message, "
                   "error.details an array",
             source=docs.spec("HTTP error responses use the [google.rpc.Status]", after="### 11.6"),
             faults=["rest_error_code_jsonrpc", "rest_error_unwrapped"],
             applies=over(REST))
def check_error_body(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    answers = [(what, reply) for what, reply, _name in a2a_errors(client)]
    answers += [(what, reply) for what, reply, _field in validation_errors(client)]
    for what, reply in answers:
        with ctx.subcheck(what):
            ctx.expect(not reply.ok, f"{what}: served: {describe(reply)}", kind="accepted_invalid")
            problems = status_problems(reply)
            ctx.expect(not problems, f"{what}: " + "; ".join(problems), kind="malformed_answer")
    blocked_looks(ctx)


@check_error_body.fault
def rest_error_code_jsonrpc(ref: A2AReference) -> None:
    """HTTP+JSON errors carry the JSON-RPC code as error.code (-32001 at HTTP 404)."""
    @replaces(ref.rest_error_body)
    def body(original: Any, refusal: Any, status: int) -> dict[str, Any]:
        out = original(refusal, status)
        out["error"]["code"] = ref.jsonrpc_code(refusal)
        return dict(out)


@check_error_body.fault
def rest_error_unwrapped(ref: A2AReference) -> None:
    """HTTP+JSON errors are the Status object itself, without the error member around it."""
    @replaces(ref.rest_error_body)
    def body(original: Any, refusal: Any, status: int) -> dict[str, Any]:
        return dict(original(refusal, status)["error"])


# -- the media type ---------------------------------------------------------------------------
@requirement(id="A2A-REST-CONTENT-TYPE", level="SHOULD",
             title="HTTP+JSON answers, results and errors, are application/a2a+json",
             source=docs.spec("application/a2a+json **SHOULD** be used for requests and responses",
                              after="### 11.1"),
             faults=["rest_answers_json"],
             applies=over(REST))
def check_content_type(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    sent = client.send(client.drive("completed"))
    answers = [("SendMessage", sent)]
    if sent.ok and isinstance(sent.result, dict) and isinstance(sent.result.get("task"), dict):
        answers.append(("GetTask", client.get(str(sent.result["task"].get("id")))))
    what, reply, _name = next(a2a_errors(client))
    answers.append((what, reply))
    wanted = str(ctx.profile.settings["bindings"]["http-json"]["content_type"])
    for what, reply in answers:
        with ctx.subcheck(what):
            media = reply.http.headers.get("content-type", "").split(";")[0].strip().lower()
            ctx.expect(media == wanted, f"{what}: Content-Type {media or '(none)'!r}, not {wanted} "
                                        f"({describe(reply)})", kind="expectation")


@check_content_type.fault
def rest_answers_json(ref: A2AReference) -> None:
    """HTTP+JSON answers are application/json."""
    @replaces(ref.rest_response)
    def response(original: Any, body: Any, status: int = 200) -> Any:
        out = original(body, status)
        out.headers["content-type"] = "application/json"
        return out


# -- query parameters ---------------------------------------------------------------------------
def history(task: Any) -> list[Any]:
    found = task.get("history") if isinstance(task, dict) else None
    return found if isinstance(found, list) else []


def listed(ctx: CheckContext, reply: Reply, what: str) -> list[dict[str, Any]]:
    ctx.expect(reply.ok and isinstance(reply.result, dict) and isinstance(reply.result.get("tasks"), list),
               f"{what}: expected a ListTasksResponse, got {describe(reply)}", kind="rejected_valid")
    return [t for t in reply.result["tasks"] if isinstance(t, dict)]


@requirement(id="A2A-REST-QUERY-PARAMS", level="MUST",
             title="On GET routes the request's fields are honoured as camelCase query parameters "
                   "(GetTask historyLength; ListTasks contextId, pageSize)",
             source=docs.spec("Query parameter names **MUST** use `camelCase`", after="### 11.5"),
             faults=["rest_query_camel_case_ignored"],
             applies=over(REST))
def check_query_params(ctx: CheckContext) -> None:
    """Each field narrows the answer (the proto: "The server MUST NOT return more messages
    than the provided value"; a context filter; a page size), so a field the route ignores
    shows; a part is left out where the agent gives it nothing to narrow."""
    client = A2AClient(ctx)
    first, second = any_task(client), any_task(client)
    full = client.get(first["id"])
    if history(full.result):
        with ctx.subcheck("GetTask ?historyLength=0"):
            reply = client.get(first["id"], historyLength=0)
            ctx.expect(reply.ok and not history(reply.result),
                       f"GetTask ?historyLength=0 of a task with {len(history(full.result))} messages of "
                       f"history: {describe(reply)}", kind="expectation")
    if first.get("contextId") != second.get("contextId"):
        with ctx.subcheck("ListTasks ?contextId="):
            tasks = listed(ctx, client.call("ListTasks", {"contextId": first.get("contextId")}), "ListTasks")
            others = [t.get("id") for t in tasks if t.get("contextId") != first.get("contextId")]
            ctx.expect(not others, f"ListTasks ?contextId={first.get('contextId')} lists tasks of other "
                                   f"contexts: {others[:5]}", kind="expectation")
    with ctx.subcheck("ListTasks ?pageSize=1"):
        tasks = listed(ctx, client.call("ListTasks", {"pageSize": 1}), "ListTasks")
        ctx.expect(len(tasks) <= 1, f"ListTasks ?pageSize=1 lists {len(tasks)} tasks (the check made two)",
                   kind="expectation")


@check_query_params.fault
def rest_query_camel_case_ignored(ref: A2AReference) -> None:
    """Query parameters named in camelCase are ignored (only the proto's snake_case names are read)."""
    @replaces(ref.query_params)
    def query_params(original: Any, method: str, request: Any) -> dict[str, Any]:
        camel = {key for key in request.query_params if key != key.lower()}
        return {k: v for k, v in original(method, request).items() if k not in camel}


# -- tenants ---------------------------------------------------------------------------------
@requirement(id="A2A-REST-TENANT-PATHS", level="MUST",
             title="Where the card's HTTP+JSON interface declares a tenant, the proto's /{{tenant}}/... "
                   "routes reach the methods",
             source=docs.proto_at('post: "/{tenant}/message:send"', after="service A2AService"),
             faults=["rest_tenant_unrouted"],
             applies=over(REST))
def check_tenant_paths(ctx: CheckContext) -> None:
    """The proto's additional_bindings: every call of this run already goes to them (the
    client sets the declared tenant, section 8.3.2); here SendMessage, GetTask and ListTasks
    must answer there."""
    client = A2AClient(ctx)
    if not client.tenant:
        raise NotApplicable("the card's HTTP+JSON interface declares no tenant")
    sent = client.send(client.drive("completed"))
    with ctx.subcheck("SendMessage"):
        ctx.expect(sent.ok, f"POST /{client.tenant}/message:send: {describe(sent)}", kind="rejected_valid")
    if not sent.ok:
        return
    task = task_from(client, sent, "SendMessage")
    with ctx.subcheck("GetTask"):
        reply = client.get(task["id"])
        ctx.expect(reply.ok and isinstance(reply.result, dict) and reply.result.get("id") == task["id"],
                   f"GET /{client.tenant}/tasks/{task['id']}: {describe(reply)}", kind="rejected_valid")
    with ctx.subcheck("ListTasks"):
        listed(ctx, client.call("ListTasks", {}), f"GET /{client.tenant}/tasks")


@check_tenant_paths.fault
def rest_tenant_unrouted(ref: A2AReference) -> None:
    """The card's HTTP+JSON interface declares a tenant, and no /{tenant}/... route is served."""
    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = dict(original(request))
        out["supportedInterfaces"] = [{**i, "tenant": "conformance-tenant"}
                                      if i["protocolBinding"] == "HTTP+JSON" else i
                                      for i in out["supportedInterfaces"]]
        return out

    @replaces(ref.match_route)
    def match_route(original: Any, verb: str, path: str) -> Any:
        found = original(verb, path)
        return None if found is not None and "tenant" in found[1] else found
