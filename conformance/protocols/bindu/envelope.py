"""Bindu's JSON-RPC envelope (specs/bindu/openapi.yaml, the error catalog in
/info/description): parse errors, invalid requests, unknown methods, the id echo, the body
size limit, and every error code the wire can reach being catalogued. Each requirement is
declared on its check, with the faults that prove it can fail."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from conformance.checks.expect import error_named, expect_catalogued, expect_error, expect_result
from conformance.checks.jsonrpc import expect_envelope
from conformance.documents.schemas import resolve_pointer
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, limit, recodes, replaces, returns
from conformance.protocols.bindu.answers import plain_401
from conformance.protocols.bindu.client import EXAMPLES, BinduClient, fresh_id
from conformance.protocols.bindu.reference import BinduReference, RpcError
from conformance.transport.binding import RawToken
from conformance.transport.http import json_excerpt

CATALOG = "/info/description"
POST = "/paths/~1/post"
ONE_MB = 1024 * 1024


@requirement(id="BINDU-RPC-PARSE-ERROR", level="MUST",
             title="A body that is not JSON gets -32700 with id null and HTTP 400",
             source=at(CATALOG, "| `-32700` |"))
def check_parse_error(ctx: CheckContext) -> None:
    for body in ('{"jsonrpc": "2.0", "method": ', "not json at all", "\x00\xff"):
        reply = ctx.binding.send_raw(body)
        expect_error(ctx, reply, "Parse error", f"body {body!r}")
        env = reply.envelope if isinstance(reply.envelope, dict) else {}
        ctx.expect("id" in env and env["id"] is None,
                   f"parse error must carry id null, got {json_excerpt(reply.envelope)}",
                   kind="malformed_answer")


@check_parse_error.fault
def parse_error_http_200(ref: BinduReference) -> None:
    """Parse errors are sent with HTTP 200."""
    @replaces(ref.parse_error_response)
    def response(original: Any) -> Response:
        reply: Response = original()
        reply.status_code = 200
        return reply


@check_parse_error.fault
def parse_error_id_not_null(ref: BinduReference) -> None:
    """A -32700 Parse error is answered with id 0 instead of null."""
    @replaces(ref.parse_error_response)
    def response(_original: Any) -> Response:
        return ref.error_response(0, RpcError("Parse error"))


@requirement(id="BINDU-RPC-INVALID-REQUEST", level="MUST",
             title="JSON that is not a JSON-RPC request gets -32600", source=at(CATALOG, "| `-32600` |"),
             faults=[recodes("invalid_request_as_parse_error", "check_envelope",
                             lambda err: RpcError("Parse error"),
                             "A JSON body that is not a valid request is answered with the Parse error code.",
                             catch=RpcError)])
def check_invalid_request(ctx: CheckContext) -> None:
    # ids shaped as the spec's
    example_id = resolve_pointer(ctx.profile.spec, f"{EXAMPLES}/messageSend/value/id")
    bodies = [
        {"jsonrpc": "1.0", "method": "tasks/list", "id": example_id, "params": {}},
        {"method": "tasks/list", "id": example_id, "params": {}},
        {"jsonrpc": "2.0", "method": 42, "id": example_id, "params": {}},
        {"jsonrpc": "2.0", "method": "tasks/list", "id": {"nested": True}, "params": {}},
    ]
    for body in bodies:
        with ctx.subcheck(f"request {json.dumps(body)}"):
            reply = ctx.binding.send_raw(json.dumps(body))
            expect_error(ctx, reply, "Invalid Request", f"request {json.dumps(body)}")
    for batch in (["not", "an", "object"], []):
        with ctx.subcheck(f"array body {json.dumps(batch)}"):
            check_array_body(ctx, batch)


def check_array_body(ctx: CheckContext, batch: list[Any]) -> None:
    """A JSON array is not a request object (-32600), or, in JSON-RPC 2.0, a batch: then
    every element that is not a request is answered -32600 with id null, in an array
    (an empty batch gets one -32600). Both readings pass."""
    what = f"array body {json.dumps(batch)}"
    reply = ctx.binding.send_raw(json.dumps(batch))
    answer = reply.http.json()
    if not isinstance(answer, list):
        expect_error(ctx, reply, "Invalid Request", what)
        return
    ctx.expect(batch, f"{what}: an empty batch must get one -32600 error, not an array",
               kind="malformed_answer")
    ctx.expect(len(answer) == len(batch), f"{what}: a batch of {len(batch)} got {len(answer)} answers",
               kind="malformed_answer")
    code = error_named(ctx.profile, "Invalid Request").code
    for item in answer:
        err = item.get("error") if isinstance(item, dict) else None
        ctx.expect(isinstance(err, dict) and err.get("code") == code and item.get("id") is None
                   and item.get("jsonrpc") == "2.0",
                   f"{what}: batch element answered {item!r:.120}, expected a -32600 error with id null",
                   kind="wrong_error_code")
    ctx.expect(reply.status in (200, 400), f"{what}: a batch answer came with HTTP {reply.status}",
               kind="wrong_status")


@requirement(id="BINDU-RPC-NOTIFICATION", level="SHOULD",
             title="A request without an id (a JSON-RPC 2.0 notification) gets no JSON-RPC response, or "
                   "-32600",
             source=chosen("the spec calls its envelope JSON-RPC 2.0 (/components/schemas/JsonRpcRequest "
                           "description) and JSON-RPC 2.0 section 4.1 says a notification gets no response, "
                           "but the same schema requires id, so a request without one is also 'JSON but not "
                           "a valid JSON-RPC request' (-32600, /info/description); the document never lets "
                           "a client send one, so the profile accepts both readings and asks for one of "
                           "them"))
def check_notification(ctx: CheckContext) -> None:
    """A tasks/list without an id (it changes nothing, so the target doing it is harmless):
    either no JSON-RPC response at all (JSON-RPC 2.0: an empty 2xx body), or the catalog's
    -32600 with id null. A result, or any other error, answers what neither reading answers."""
    body = json.dumps({"jsonrpc": "2.0", "method": "tasks/list", "params": {}})
    reply = ctx.binding.send_raw(body)
    unanswered = reply.status // 100 == 2 and not reply.http.content.strip()  # a 2xx, no body
    if unanswered:
        ctx.expect(unanswered, "no response to a notification")  # the JSON-RPC 2.0 reading
        return
    what = "a tasks/list notification (no id)"
    ctx.expect(reply.error is not None,
               f"{what} was answered as a request: {reply.describe()}; JSON-RPC 2.0 says a notification "
               "gets no response, and the spec's request requires an id (-32600)", kind="malformed_answer")
    expect_error(ctx, reply, "Invalid Request", what)
    env = reply.envelope if isinstance(reply.envelope, dict) else {}
    ctx.expect(env.get("id", "absent") is None,
               f"{what}: the -32600 must carry id null, got {json_excerpt(reply.envelope)}",
               kind="malformed_answer")


@check_notification.fault
def notification_answered(ref: BinduReference) -> None:
    """A request without an id is served as a request: its result comes back with id null."""
    @replaces(ref.check_envelope)
    def check(original: Any, body: Any) -> tuple[str, Any]:
        if isinstance(body, dict) and "id" not in body:
            return original({**body, "id": 0})
        return original(body)


@requirement(id="BINDU-RPC-METHOD-NOT-FOUND", level="MUST",
             title="An unknown method gets -32601 with HTTP 404", source=at(CATALOG, "| `-32601` |"),
             faults=[recodes("unknown_method_internal_error", "check_method",
                             lambda err: RpcError("Internal error"),
                             "An unknown method is answered with Internal error (HTTP 500).",
                             catch=RpcError)])
def check_method_not_found(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    for method in ("tasks/explode", "message/sendd", "conformance/unknown"):
        reply = c.call(method, {})
        expect_error(ctx, reply, "Method not found", f"unknown method {method!r}")


@requirement(id="BINDU-RPC-ID-ECHO", level="MUST",
             title="Every response echoes the request id, with jsonrpc 2.0 and one of result/error",
             source=at("/components/schemas/JsonRpcRequest/properties/id"),
             faults=[answer("id_not_echoed", "echo_id", "An integer request id is echoed back as a string.",
                            edit=lambda rid, *_: str(rid)
                            if isinstance(rid, int) and not isinstance(rid, bool) else rid)])
def check_id_echo(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    for request_id in (7, "req-abc", 0, "550e8400-e29b-41d4-a716-446655440099"):
        reply = c.call("tasks/list", {}, request_id=request_id)
        expect_envelope(ctx, reply, f"tasks/list with id {request_id!r}", request_id=request_id)
        reply = c.call("tasks/get", {"taskId": fresh_id()}, request_id=request_id)
        expect_envelope(ctx, reply, f"tasks/get error with id {request_id!r}", request_id=request_id)


def _list_body(size: int) -> str:
    """A tasks/list request of exactly ``size`` bytes (padded in params.metadata), its
    id a UUID string as in the spec's examples."""
    request_id = fresh_id()
    empty = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tasks/list",
                        "params": {"metadata": {"pad": ""}}})
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tasks/list",
                       "params": {"metadata": {"pad": "x" * (size - len(empty))}}})
    assert len(body) == size
    return body


@requirement(id="BINDU-RPC-BODY-LIMIT", level="MUST",
             title=lambda profile: f"Bodies over {profile.limits['body_bytes'].value / ONE_MB:g} MB get 413 "
                                   "outside the JSON-RPC envelope",
             source=at(f"{POST}/description", "**Size limit:**"),
             faults=[limit("no_body_limit", "body_bytes", None,
                           "Bodies over the spec's size limit are accepted (no 413).")])
def check_body_limit(ctx: CheckContext) -> None:
    """The limit's "MB" reads as 10^6 or 2^20 bytes: a body over the larger reading must
    get 413 (outside the envelope), one of the smaller reading's size must not."""
    mib = ctx.limit("body_bytes")  # the profile reads MB as 2^20 bytes
    decimal = mib // ONE_MB * 1_000_000
    for what, size in ((f"a body one byte over {mib} bytes", mib + 1),
                       (f"a body {ONE_MB} bytes over the limit", mib + ONE_MB)):
        with ctx.subcheck(what):
            reply = ctx.binding.send_raw(_list_body(size))
            ctx.expect(reply.status == 413, f"{what} got HTTP {reply.status}, expected 413")
            env = reply.envelope
            ctx.expect(not (isinstance(env, dict) and "jsonrpc" in env),
                       "413 must not use the JSON-RPC error envelope")
    with ctx.subcheck(f"a body of exactly {decimal} bytes (the limit in decimal megabytes)"):
        reply = ctx.binding.send_raw(_list_body(decimal))
        ctx.expect(reply.status != 413,
                   f"a body of {decimal} bytes, within the limit by either reading of MB, got 413",
                   kind="rejected_valid")
        expect_result(ctx, reply, f"tasks/list in a body of {decimal} bytes")


@check_body_limit.fault
def body_limit_too_small(ref: BinduReference) -> None:
    """Bodies are cut at half the spec's size limit."""
    ref.limit_values = {**ref.limit_values, "body_bytes": ref.limit("body_bytes") // 2}


@requirement(id="BINDU-ERRORS-CATALOGUED", level="MUST",
             title="Every error code that comes back is in the catalog, with the catalog's HTTP status",
             source=at(CATALOG, "## Error catalog"),
             faults=[returns("errors_with_http_200", "error_status", 200,
                             "Every JSON-RPC error is sent with HTTP 200."),
                     answer("uncatalogued_error_code", "error_body",
                            "ContextNotFound is answered with code -32099 (HTTP 404), which the catalog "
                            "lacks.",
                            set={"code": -32099}, when=lambda err: err.name == "ContextNotFound")])
def check_errors_catalogued(ctx: CheckContext) -> None:
    """Provoke every error the wire can reach; each code must be in the catalog with its status."""
    c = BinduClient(ctx)
    replies = [
        ("parse error", ctx.binding.send_raw("{")),
        ("unknown method", c.call("no/such-method", {})),
        ("missing params", c.call("tasks/get", {})),
        ("unknown task", c.get(fresh_id())),
        ("unknown task cancel", c.cancel(fresh_id())),
        ("unknown context clear", c.clear(fresh_id())),
        ("no token", c.call("tasks/list", {}, caller=None)),
        ("bad token", c.call("tasks/list", {}, caller=RawToken("not-a-real-token"))),
        ("foreign output modes", c.send(output_modes=["application/x-conformance-none"])),
    ]
    task = c.new_task()
    replies.append(("cancel completed task", c.cancel(task["id"])))
    replies.append(("message to completed task", c.send(task_id=task["id"], context_id=c.context_of(task))))
    if ctx.has_credential("read"):
        replies.append(("read scope sends", c.send(caller="read")))
    seen = 0
    for what, reply in replies:
        seen += reply.error is not None or plain_401(ctx, reply)
        if plain_401(ctx, reply):
            continue  # POST / documents this 401 body beside the catalog's -32009/-32010
        expect_envelope(ctx, reply, what)
        expect_catalogued(ctx, reply, what)
    ctx.expect(seen >= len(replies) - 2,
               f"only {seen} of {len(replies)} error-provoking requests were answered with an error")
