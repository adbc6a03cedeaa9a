"""The JSON-RPC binding (section 9) on the wire: the standard errors of section 9.5 for a
body that is not JSON, a request that is not a JSON-RPC 2.0 Request object and a method
the service does not have; every method of the proto's service answering under its
PascalCase name; the response envelope (jsonrpc "2.0", the request's id echoed, exactly one
of result and error, application/json); and the tenant field an interface declares. Every
row here is NotApplicable over HTTP+JSON."""

from __future__ import annotations

import json
import uuid
from typing import Any

from starlette.responses import Response

from conformance.checks.jsonrpc import expect_batch, expect_no_response
from conformance.kit.check import CheckContext, NotApplicable
from conformance.kit.declare import chosen, requirement, variant
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import wire
from conformance.protocols.a2a.answers import JSONRPC, describe
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.driving import any_task, never_issued, task_from
from conformance.protocols.a2a.expectations import over
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply, dig


def standard(name: str) -> int:
    return docs.jsonrpc_errors()[name]


def expect_standard(ctx: CheckContext, reply: Reply, names: tuple[str, ...], what: str) -> None:
    """A JSON-RPC error whose code is one of the standard errors ``names`` (section 9.5)."""
    codes = [standard(n) for n in names]
    ctx.expect(reply.flagged and reply.error_code in codes,
               f"{what}: expected the JSON-RPC error {' or '.join(map(str, codes))} ({' or '.join(names)}), "
               f"got {describe(reply)}", kind="accepted_invalid" if reply.ok else "wrong_error_code",
               expected_code=codes[0], actual_code=reply.error_code)


def raw(ctx: CheckContext, body: str) -> Reply:
    """``body`` sent as it is to the run's JSON-RPC endpoint (with the run's headers)."""
    reply: Reply = A2AClient(ctx).binding.send_raw(body)
    return reply


def request(method: Any = "GetTask", **changes: Any) -> dict[str, Any]:
    """A GetTask of an id never issued (harmless whatever the agent makes of it), changed."""
    out = wire.request(method, {"id": never_issued()}, request_id=1)
    out.update(changes)
    return {k: v for k, v in out.items() if v is not DROP}


DROP = object()


# -- the standard errors of section 9.5 --------------------------------------------------
@requirement(id="A2A-RPC-PARSE-ERROR", level="MUST",
             title="A body that is not JSON is answered -32700 (JSONParseError) with a null id",
             source=docs.spec("| `-32700`", after="### 9.5"),
             faults=["rpc_parse_error_recoded", "rpc_parse_error_id_not_null"],
             applies=over(JSONRPC))
def check_parse_error(ctx: CheckContext) -> None:
    """JSON-RPC 2.0 (section 9.1's protocol): an id the server could not read is null."""
    whole = json.dumps(request())
    for what, body in (("a body that is not JSON", "{this is not json"),
                       ("a JSON request cut short", whole[:len(whole) // 2])):
        with ctx.subcheck(what):
            reply = raw(ctx, body)
            expect_standard(ctx, reply, ("JSONParseError",), what)
            envelope = reply.envelope if isinstance(reply.envelope, dict) else {}
            ctx.expect("id" in envelope and envelope["id"] is None,
                       f"{what}: the error's id is {envelope.get('id', '(absent)')!r}; JSON-RPC 2.0 wants "
                       "null when the request's id could not be read", kind="malformed_answer")


@check_parse_error.fault
def rpc_parse_error_recoded(ref: A2AReference) -> None:
    """A body that is not JSON is answered -32600 (InvalidRequestError)."""
    @replaces(ref.rpc_error)
    def rpc_error(original: Any, request_id: Any, refusal: Refusal) -> Any:
        if refusal.name == "JSONParseError":
            refusal = Refusal("InvalidRequestError", refusal.message)
        return original(request_id, refusal)


@check_parse_error.fault
def rpc_parse_error_id_not_null(ref: A2AReference) -> None:
    """The parse error's id is 0 instead of null."""
    @replaces(ref.rpc_error)
    def rpc_error(original: Any, request_id: Any, refusal: Refusal) -> Any:
        return original(0 if refusal.name == "JSONParseError" else request_id, refusal)


INVALID_REQUESTS: tuple[tuple[str, Any, tuple[str, ...]], ...] = (
    ("no jsonrpc member", request(jsonrpc=DROP), ("InvalidRequestError",)),
    ('jsonrpc "1.0"', request(jsonrpc="1.0"), ("InvalidRequestError",)),
    ("a method that is not a string", request(method=42), ("InvalidRequestError",)),
    ("no method member", request(method=DROP), ("InvalidRequestError",)),
    ("an id that is an object", request(id={"not": "an id"}), ("InvalidRequestError",)),
    ("a JSON string instead of a Request object", "GetTask", ("InvalidRequestError",)),
    # JSON-RPC 2.0: params "MUST be a Structured value"; A2A's -32602 is the other reading
    ("params that are a string", request(params="not structured"),
     ("InvalidRequestError", "InvalidParamsError")),
)


@requirement(id="A2A-RPC-INVALID-REQUEST", level="MUST",
             title="JSON that is not a JSON-RPC 2.0 Request object is answered -32600 (InvalidRequestError)",
             source=docs.spec("| `-32600`", after="### 9.5"),
             faults=["rpc_invalid_request_unchecked"],
             applies=over(JSONRPC))
def check_invalid_request(ctx: CheckContext) -> None:
    for what, body, names in INVALID_REQUESTS:
        with ctx.subcheck(what):
            expect_standard(ctx, raw(ctx, json.dumps(body)), names, what)


@check_invalid_request.fault
def rpc_invalid_request_unchecked(ref: A2AReference) -> None:
    """Any JSON is taken for a Request object: members missing or of the wrong type are not refused."""
    @replaces(ref.is_request)
    def is_request(original: Any, body: Any) -> bool:
        return isinstance(body, dict) and "method" in body or bool(original(body))


@requirement(id="A2A-RPC-METHOD-NOT-FOUND", level="MUST",
             title="A method the service does not have is answered -32601 (MethodNotFoundError)",
             source=docs.spec("| `-32601`", after="### 9.5"),
             faults=["rpc_unknown_method_invalid_params"],
             applies=over(JSONRPC))
def check_method_not_found(ctx: CheckContext) -> None:
    service = {m.name for m in docs.proto().service(ctx.profile.settings["proto"]["service"])}
    for name in ("ConformanceNoSuchMethod", "SendMessageToNobody"):
        assert name not in service
        with ctx.subcheck(name):
            reply = A2AClient(ctx).call(name, {"id": never_issued()})
            expect_standard(ctx, reply, ("MethodNotFoundError",), f"method {name}")


@check_method_not_found.fault
def rpc_unknown_method_invalid_params(ref: A2AReference) -> None:
    """An unknown method is answered -32602 (InvalidParamsError)."""
    @replaces(ref.dispatch)
    def dispatch(original: Any, method: str, params: Any, caller: str) -> Any:
        if method not in ref.methods:
            raise Refusal("InvalidParamsError", f"no such method {method!r}")
        return original(method, params, caller)


@requirement(id="A2A-RPC-METHODS", level="MUST",
             title="Every method of the proto's A2AService answers under its PascalCase name (never -32601)",
             source=docs.spec("PascalCase method names matching gRPC conventions", after="### 9.1"),
             faults=["rpc_list_tasks_unrouted"],
             applies=over(JSONRPC))
def check_methods(ctx: CheckContext) -> None:
    """Each method called with empty params: any JSON-RPC answer but -32601 shows the name is
    served (an error about the params, a capability or a task is the method's own)."""
    client = A2AClient(ctx)
    for method in docs.proto().service(ctx.profile.settings["proto"]["service"]):
        with ctx.subcheck(method.name):
            reply = client.call(method.name, {}, timeout=10)
            ctx.expect(reply.ok or reply.spoke, f"{method.name}: the answer is no JSON-RPC response: "
                                                f"{describe(reply)}", kind="malformed_answer")
            ctx.expect(reply.error_code != standard("MethodNotFoundError"),
                       f"{method.name}: answered as an unknown method: {describe(reply)}",
                       kind="wrong_error_code")


@check_methods.fault
def rpc_list_tasks_unrouted(ref: A2AReference) -> None:
    """ListTasks is not served: answered -32601."""
    @replaces(ref.dispatch)
    def dispatch(original: Any, method: str, params: Any, caller: str) -> Any:
        if method == "ListTasks":
            raise Refusal("MethodNotFoundError", "method 'ListTasks' not found")
        return original(method, params, caller)


# -- the response envelope ----------------------------------------------------------------
def envelope_problems(reply: Reply, sent_id: Any) -> list[str]:
    """What a JSON-RPC 2.0 response to a request with id ``sent_id`` gets wrong."""
    envelope = reply.envelope
    if not isinstance(envelope, dict):
        return [f"the answer is no JSON object: {describe(reply)}"]
    problems = []
    if envelope.get("jsonrpc") != "2.0":
        problems.append(f"jsonrpc is {envelope.get('jsonrpc', '(absent)')!r}, not \"2.0\"")
    got = envelope.get("id", "(absent)")
    if got != sent_id or type(got) is not type(sent_id):
        problems.append(f"the id is {got!r}, the request's was {sent_id!r}")
    members = [m for m in ("result", "error") if m in envelope]
    if len(members) != 1:
        held = " and ".join(members) or "neither result nor error"
        problems.append(f"it holds {held}: exactly one is wanted")
    error = envelope.get("error")
    if "error" in envelope and not (isinstance(error, dict) and type(error.get("code")) is int
                                    and isinstance(error.get("message"), str)):
        problems.append(f"the error is not an object with an integer code and a string message: {error!r}")
    media = reply.http.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        problems.append(f"its Content-Type is {media or '(none)'!r}, section 9.1 says application/json")
    return problems


@requirement(id="A2A-RPC-ENVELOPE", level="MUST",
             title="Each answer is a JSON-RPC 2.0 response: jsonrpc \"2.0\", the request's id (string or "
                   "integer) echoed, exactly one of result and error, application/json",
             source=docs.spec("**Protocol:** JSON-RPC 2.0 over HTTP(S)", after="### 9.1"),
             faults=["rpc_id_stringified", "rpc_version_member_missing", "rpc_result_beside_error",
                     "rpc_answers_text_plain"],
             applies=over(JSONRPC))
def check_envelope(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    for sent_id in (f"conformance-{uuid.uuid4()}", 4242):
        for what, call in (("SendMessage (a result)", lambda i: client.send(request_id=i)),
                           ("GetTask of an id never issued (an error)",
                            lambda i: client.call("GetTask", {"id": never_issued()}, request_id=i))):
            label = f"{what}, id {sent_id!r}"
            with ctx.subcheck(label):
                problems = envelope_problems(call(sent_id), sent_id)
                ctx.expect(not problems, f"{label}: " + "; ".join(problems), kind="malformed_answer")


@check_envelope.fault
def rpc_id_stringified(ref: A2AReference) -> None:
    """The response's id is the request's id as a string (4242 comes back "4242")."""
    @replaces(ref.rpc_envelope)
    def envelope(original: Any, request_id: Any, member: str, value: Any) -> dict[str, Any]:
        return dict(original(None if request_id is None else str(request_id), member, value))


@check_envelope.fault
def rpc_version_member_missing(ref: A2AReference) -> None:
    """Responses leave out the jsonrpc member."""
    @replaces(ref.rpc_envelope)
    def envelope(original: Any, request_id: Any, member: str, value: Any) -> dict[str, Any]:
        return {k: v for k, v in original(request_id, member, value).items() if k != "jsonrpc"}


@check_envelope.fault
def rpc_result_beside_error(ref: A2AReference) -> None:
    """Error responses carry "result": null beside the error."""
    @replaces(ref.rpc_envelope)
    def envelope(original: Any, request_id: Any, member: str, value: Any) -> dict[str, Any]:
        out = dict(original(request_id, member, value))
        if member == "error":
            out["result"] = None
        return out


@check_envelope.fault
def rpc_answers_text_plain(ref: A2AReference) -> None:
    """JSON-RPC answers come as text/plain."""
    @replaces(ref.rpc_response)
    def response(original: Any, envelope: dict[str, Any], status: int = 200) -> Any:
        out = original(envelope, status)
        out.headers["content-type"] = "text/plain; charset=utf-8"
        return out


# -- the tenant an interface declares -------------------------------------------------------
@requirement(id="A2A-RPC-TENANT-FIELD", level="MUST",
             title="Where the card's JSONRPC interface declares a tenant, requests carrying it in their "
                   "tenant field are served",
             source=docs.proto_at("The server is responsible for", after="message AgentInterface"),
             faults=["rpc_tenant_refused"],
             applies=over(JSONRPC))
def check_tenant_field(ctx: CheckContext) -> None:
    """Section 8.3.2 rule 4: a client sets the declared tenant in every request message;
    the server routes by it. A SendMessage and a GetTask of its task, with the tenant."""
    client = A2AClient(ctx)
    if not client.tenant:
        raise NotApplicable("the card's JSONRPC interface declares no tenant")
    sent = client.send(client.drive("completed"))
    task = task_from(client, sent, f"SendMessage with tenant {client.tenant!r}")
    reply = client.get(task["id"])
    got = reply.result.get("id") if reply.ok and isinstance(reply.result, dict) else None
    ctx.expect(got == task["id"],
               f"GetTask of {task['id']!r} with tenant {client.tenant!r}: {describe(reply)}",
               kind="rejected_valid")


@check_tenant_field.fault
def rpc_tenant_refused(ref: A2AReference) -> None:
    """The card's JSONRPC interface declares a tenant, and requests carrying it are refused."""
    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = dict(original(request))
        out["supportedInterfaces"] = [{**i, "tenant": "conformance-tenant"}
                                      if i["protocolBinding"] == "JSONRPC" else i
                                      for i in out["supportedInterfaces"]]
        return out

    @replaces(ref.dispatch)
    def dispatch(original: Any, method: str, params: Any, caller: str) -> Any:
        if isinstance(params, dict) and params.get("tenant"):
            raise Refusal("InvalidParamsError", f"unknown tenant {params['tenant']!r}")
        return original(method, params, caller)


# -- notifications and batches: what JSON-RPC 2.0, which the binding adopts, says of them ---------
JSONRPC_2 = docs.spec("**Protocol:** JSON-RPC 2.0 over HTTP(S)", after="### 9.1")


@requirement(id="A2A-RPC-NOTIFICATION", level="MUST",
             title="A JSON-RPC notification (a request without id) gets no JSON-RPC response: an answer "
                   "without one (an empty 200, 202 or 204, say), whatever the method or its outcome",
             source=docs.spec("All JSON-RPC requests **MUST** follow the standard JSON-RPC 2.0 format",
                              after="### 9.3"),
             faults=["notification_answered", "notification_refused"],
             applies=over(JSONRPC))
def check_notification(ctx: CheckContext) -> None:
    """The binding is JSON-RPC 2.0 (sections 9.1 and 9.3), whose section 4.1 says "The Server
    MUST NOT reply to a Notification", errors included ("the Client would not be aware of any
    errors"). Over HTTP the server still answers the HTTP request: any answer that carries no
    JSON-RPC Response object (checks/jsonrpc.py ``expect_no_response``). Sent: requests that
    change nothing (a task no agent issued, a listing, a method the service does not have),
    each of which a request with an id gets a response to."""
    for what, method, params in (("GetTask of an id never issued", "GetTask", {"id": never_issued()}),
                                 ("ListTasks", "ListTasks", {"pageSize": 1}),
                                 ("a method the service does not have", "ConformanceNoSuchMethod", {})):
        with ctx.subcheck(what):
            body = wire.request(method, params, request_id=None)
            expect_no_response(ctx, raw(ctx, json.dumps(body)), f"the notification {json.dumps(body)}")


@check_notification.fault
def notification_answered(ref: A2AReference) -> None:
    """A notification is answered like a request, with a response whose id is null."""
    @replaces(ref.rpc_notified)
    def notified(original: Any, refusal: Refusal | None) -> Any:
        if refusal is not None:
            return ref.rpc_error(None, refusal)
        return ref.rpc_response(ref.rpc_envelope(None, "result", {}))


@check_notification.fault
def notification_refused(ref: A2AReference) -> None:
    """A request without id is refused as an invalid request (-32600, id null): an A2A request
    read as needing an id (section 9.3's example has one), where JSON-RPC 2.0 says not to reply."""
    @replaces(ref.is_request)
    def is_request(original: Any, body: Any) -> bool:
        return isinstance(body, dict) and "id" in body and bool(original(body))


@variant(binding_kind="jsonrpc-http")
def notification_answered_empty_200(ref: A2AReference) -> None:
    """A notification is answered HTTP 200 with an empty body.

    allowed by: JSON-RPC 2.0 (the binding's protocol: specs/a2a/specification.md section 9.1
    "**Protocol:** JSON-RPC 2.0 over HTTP(S)"), section 4.1: the server does not reply to a
    notification; over HTTP an empty answer of any success status carries no reply"""
    @replaces(ref.rpc_notified)
    def notified(original: Any, refusal: Refusal | None) -> Any:
        out = original(refusal)
        return Response(status_code=200) if out.status_code == 204 else out


@variant(binding_kind="jsonrpc-http")
def notification_answered_202(ref: A2AReference) -> None:
    """A notification is answered HTTP 202 Accepted with an empty body.

    allowed by: as notification_answered_empty_200 (an empty answer carries no JSON-RPC reply)"""
    @replaces(ref.rpc_notified)
    def notified(original: Any, refusal: Refusal | None) -> Any:
        out = original(refusal)
        return Response(status_code=202) if out.status_code == 204 else out


@requirement(id="A2A-RPC-BATCH", level="SHOULD",
             title="A JSON-RPC batch is answered as JSON-RPC 2.0 says (an array holding each request's "
                   "response, by its id) or refused as a whole with one error response; an empty batch "
                   "gets one Invalid Request (-32600)",
             source=chosen("the A2A document adopts JSON-RPC 2.0 (section 9.1, line 2235) and says nothing "
                           "of batches: JSON-RPC 2.0 section 6 lets a client send an array of requests and "
                           "says the server should answer an array of their responses, and an empty array "
                           "with one Invalid Request; a server that takes no batches refuses the array "
                           "(not a Request object) with one error. Either is asked, as a SHOULD, never a "
                           "server failure or an answer of neither form"),
             faults=["batch_server_failure", "batch_first_answer_only"],
             applies=over(JSONRPC))
def check_batch(ctx: CheckContext) -> None:
    """A batch of two GetTasks (the check's own task, by a string id; one never issued, by an
    integer id); then the empty batch."""
    client = A2AClient(ctx)
    task = any_task(client)
    sent: list[dict[str, Any]] = [{"jsonrpc": "2.0", "id": f"conformance-{uuid.uuid4()}", "method": "GetTask",
             "params": {"id": task["id"]}},
            {"jsonrpc": "2.0", "id": 4242, "method": "GetTask", "params": {"id": never_issued()}}]
    with ctx.subcheck("a batch of two GetTasks"):
        reply = raw(ctx, json.dumps(sent))
        body = expect_batch(ctx, reply.http, sent, f"the batch {json.dumps(sent)[:200]}", str(JSONRPC_2))
        if isinstance(body, list):  # answered: each response is its request's
            mine = next(v for v in body if v.get("id") == sent[0]["id"])
            ctx.expect(dig(mine, "result", "id") == task["id"], f"the batch's GetTask of the check's task "
                       f"{task['id']} was answered {json.dumps(mine)[:200]}", kind="expectation")
            other = next(v for v in body if v.get("id") == sent[1]["id"])
            ctx.expect("error" in other, f"the batch's GetTask of an id never issued was answered "
                                         f"{json.dumps(other)[:200]}", kind="expectation")
    with ctx.subcheck("an empty batch"):
        reply = raw(ctx, "[]")
        body = reply.http.json() if reply.http.text.strip() else None
        expect_standard(ctx, reply, ("InvalidRequestError",), "an empty batch []")
        ctx.expect(isinstance(body, dict), f"an empty batch was answered {reply.http.text[:160]!r}: JSON-RPC "
                                           "2.0 wants one response, not an array", kind="malformed_answer")


@check_batch.fault
def batch_server_failure(ref: A2AReference) -> None:
    """A batch is answered HTTP 500."""
    @replaces(ref.rpc_batch)
    def batch(original: Any, request: Any, items: list[Any]) -> Any:
        return Response("batch failed", status_code=500)


@check_batch.fault
def batch_first_answer_only(ref: A2AReference) -> None:
    """A batch is answered with its first request's response alone, not an array."""
    @replaces(ref.rpc_batch)
    def batch(original: Any, request: Any, items: list[Any]) -> Any:
        if not items:
            return original(request, items)
        return ref.rpc_one(request, items[0])
