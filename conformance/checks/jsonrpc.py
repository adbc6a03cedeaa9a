"""JSON-RPC 2.0 (jsonrpc.org/specification), for bindings of kind jsonrpc-http: the response
envelope, notifications (no reply) and batches (an array of responses, or the batch refused
as a whole). Protocol-free: a profile whose binding adopts JSON-RPC 2.0 calls these."""

from __future__ import annotations

from typing import Any

from conformance.jsontext import json_excerpt, parse_json
from conformance.kit.check import CheckContext
from conformance.transport.binding import Reply, is_event_stream


def expect_envelope(ctx: CheckContext, reply: Reply, what: str, request_id: Any = None) -> dict[str, Any]:
    """The answer is a JSON-RPC 2.0 response object with exactly one of result/error
    (and, given ``request_id``, echoes it with its type)."""
    env = reply.envelope
    ctx.expect(isinstance(env, dict), f"{what}: answer is not a JSON object ({reply.describe()})",
               kind="malformed_answer")
    ctx.expect(env.get("jsonrpc") == "2.0", f"{what}: answer lacks jsonrpc '2.0' ({reply.describe()})",
               kind="malformed_answer")
    ctx.expect(("result" in env) != ("error" in env),
               f"{what}: answer must hold exactly one of result and error",
               kind="malformed_answer")
    if request_id is not None:
        got = env.get("id")
        ctx.expect(
            got == request_id and type(got) is type(request_id),
            f"{what}: response id {got!r} does not echo the request id {request_id!r}",
            kind="malformed_answer",
        )
    return env


def answer_check(ctx: CheckContext, reply: Reply, what: str) -> None:
    """For the input families: every answer is an envelope."""
    expect_envelope(ctx, reply, what)


# -- notifications and batches (JSON-RPC 2.0 sections 4.1 and 6) ---------------------------
def is_response(value: Any) -> bool:
    """A JSON-RPC 2.0 Response object: ``jsonrpc`` "2.0" with a result or an error."""
    return isinstance(value, dict) and value.get("jsonrpc") == "2.0" and \
        ("result" in value or "error" in value)


def responses_in(http: Any) -> list[Any]:
    """The JSON-RPC Response objects an HTTP answer carries: its body as one, the members of
    an array, or the data of its server-sent events."""
    if is_event_stream(http):
        values = []
        for line in http.text.splitlines():
            if line.startswith("data:"):
                parsed, _ = parse_json(line[5:].strip())
                values.append(parsed)
    else:
        values = [http.json()] if http.text.strip() else []
    out = []
    for value in values:
        out += [v for v in (value if isinstance(value, list) else [value]) if is_response(v)]
    return out


def expect_no_response(ctx: CheckContext, reply: Reply, what: str, statement: str | None = None) -> None:
    """JSON-RPC 2.0: "The Server MUST NOT reply to a Notification". Over HTTP every request
    gets an HTTP answer, so no reply means an answer that carries no JSON-RPC Response object:
    an empty body whatever its status (200, 202 and 204 are each a reading of "nothing" over
    HTTP), or a body that holds none (a transport's own refusal, 401 say)."""
    found = responses_in(reply.http)
    ctx.expect(not found, f"{what}: answered with a JSON-RPC response (HTTP {reply.status}: "
                          f"{json_excerpt(found[0] if found else None)}); a notification gets none",
               kind="malformed_answer", statement=statement)


def batch_problems(http: Any, sent: list[dict[str, Any]]) -> list[str]:
    """What of the answer to the batch ``sent`` (requests with ids) is neither JSON-RPC 2.0's
    batch answer (an array holding one Response per request, each with its request's id) nor
    one error Response refusing the batch as a whole (a server that takes no batches); empty
    when it is one of them."""
    body = http.json() if http.text.strip() else None
    if http.status >= 500:
        return [f"the server failed (HTTP {http.status}): {http.text[:160]!r}"]
    if isinstance(body, dict) and is_response(body) and isinstance(body.get("error"), dict):
        return []  # the batch refused as a whole
    if not isinstance(body, list):
        return [f"the answer is neither an array of responses nor one error response: HTTP {http.status} "
                f"{http.text[:160]!r}"]
    problems = [f"member {n} is no JSON-RPC response: {json_excerpt(v)}" for n, v in enumerate(body)
                if not is_response(v)]
    ids = [v.get("id") for v in body if isinstance(v, dict)]
    for request in sent:
        matching = [i for i in ids if i == request["id"] and type(i) is type(request["id"])]
        if len(matching) != 1:
            problems.append(f"{len(matching)} responses carry the id {request['id']!r} of request "
                            f"{request.get('method')!r} (one is wanted)")
    strangers = [i for i in ids if not any(i == r["id"] and type(i) is type(r["id"]) for r in sent)]
    if strangers:
        problems.append(f"responses carry ids no request had: {strangers}")
    return problems


def expect_batch(ctx: CheckContext, http: Any, sent: list[dict[str, Any]], what: str,
                 statement: str | None = None) -> Any:
    """``batch_problems`` none; the answer's body returned."""
    problems = batch_problems(http, sent)
    ctx.expect(not problems, f"{what}: " + "; ".join(problems), kind="malformed_answer", statement=statement)
    return http.json()
