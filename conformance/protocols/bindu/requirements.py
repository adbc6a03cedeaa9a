"""The Bindu requirement table: one requirement per testable statement of
specs/bindu/openapi.yaml, each with its level, source, check and the faults it
must catch. Method names, schemas, error codes and examples come from the spec."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from typing import Any

import base58

from conformance.checks import auth, idempotency
from conformance.checks.errors import error_named, expect_catalogued, expect_error, expect_result, not_found
from conformance.checks.inputs import (
    expect_matches,
    invalid_inputs_rejected,
    result_matches,
    valid_inputs_accepted,
)
from conformance.checks.jsonrpc import answer_check, expect_envelope
from conformance.model import Profile, Requirement, Source
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.protocols.bindu.model import TaskLifecycle, terminal_states
from conformance.protocols.bindu.signing import sign_request, verify_signature
from conformance.runner import CheckContext, Untested
from conformance.spec.openapi import schema_at
from conformance.spec.schemas import resolve_pointer
from conformance.table import Table, slug
from conformance.transport.binding import RawToken, is_event_stream, rest_reply, stream_events

POST = "/paths/~1/post"
CARD = "/paths/~1.well-known~1agent.json"
ONE_MB = 1024 * 1024


# ----------------------------------------------------------------------------------
# JSON-RPC envelope
# ----------------------------------------------------------------------------------
def check_parse_error(ctx: CheckContext) -> None:
    for body in ('{"jsonrpc": "2.0", "method": ', "not json at all", "\x00\xff"):
        reply = ctx.binding.send_raw(body)
        expect_error(ctx, reply, "Parse error", f"body {body!r}")
        ctx.expect("id" in reply.envelope and reply.envelope["id"] is None, f"parse error must carry id null, got {reply.envelope.get('id')!r}")


def check_invalid_request(ctx: CheckContext) -> None:
    bodies = [
        {"jsonrpc": "1.0", "method": "tasks/list", "id": 1, "params": {}},
        {"method": "tasks/list", "id": 2, "params": {}},
        {"jsonrpc": "2.0", "method": 42, "id": 3, "params": {}},
        {"jsonrpc": "2.0", "method": "tasks/list", "id": {"nested": True}, "params": {}},
        ["not", "an", "object"],
    ]
    for body in bodies:
        reply = ctx.binding.send_raw(json.dumps(body))
        expect_error(ctx, reply, "Invalid Request", f"request {json.dumps(body)}")


def check_method_not_found(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    for method in ("tasks/explode", "message/sendd", "conformance/unknown"):
        reply = c.call(method, {})
        expect_error(ctx, reply, "Method not found", f"unknown method {method!r}")


def check_id_echo(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    for request_id in (7, "req-abc", 0, "550e8400-e29b-41d4-a716-446655440099"):
        reply = c.call("tasks/list", {}, request_id=request_id)
        expect_envelope(ctx, reply, f"tasks/list with id {request_id!r}", request_id=request_id)
        reply = c.call("tasks/get", {"taskId": fresh_id()}, request_id=request_id)
        expect_envelope(ctx, reply, f"tasks/get error with id {request_id!r}", request_id=request_id)


def check_body_limit(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    params = c.send_params(text="x" * (int(ctx.profile.limits["body_bytes"].value) + ONE_MB))  # the limit + 1 MB
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": params})
    reply = ctx.binding.send_raw(body)
    ctx.expect(reply.status == 413, f"an {len(body) // ONE_MB} MB body got HTTP {reply.status}, expected 413")
    env = reply.envelope
    ctx.expect(not (isinstance(env, dict) and "jsonrpc" in env), "413 must not use the JSON-RPC error envelope")


# ----------------------------------------------------------------------------------
# params and results, one requirement per method
# ----------------------------------------------------------------------------------
def fresh_caller_ids(params: Any) -> Any:
    """Generated params are made safe to send repeatedly: fresh caller-chosen ids."""
    msg = params.get("message") if isinstance(params, dict) else None
    if isinstance(msg, dict):
        for key in ("taskId", "contextId"):
            if key in msg:
                msg[key] = fresh_id()
    return params


# Errors that mean "your request is malformed": a schema-valid request must never get them.
REJECTIONS = ("Parse error", "Invalid Request", "Invalid params")


def valid_params(method: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        c = BinduClient(ctx)
        valid_inputs_accepted(ctx, ctx.profile.operations[method], lambda p: c.call(method, p), REJECTIONS,
                              fresh_caller_ids, extra_property="x_conformance_extra", answer_check=answer_check)
    return check


def invalid_params(method: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        c = BinduClient(ctx)
        also = ("UnsupportedOperation",) if method == "message/stream" and not _streaming(c) else ()
        invalid_inputs_rejected(ctx, ctx.profile.operations[method], lambda p: c.call(method, p), "Invalid params",
                                also, answer_check=answer_check)
    return check


def _streaming(c: BinduClient) -> bool:
    return bool((c.card().get("capabilities") or {}).get("streaming"))


def result_schema(method: str) -> Callable[[CheckContext], None]:
    """Drive the method to a success with realistic params and validate the result."""
    def check(ctx: CheckContext) -> None:
        c = BinduClient(ctx)
        op = ctx.profile.operations[method]
        task = c.new_task()
        c.new_task()
        calls: dict[str, Callable[[], Any]] = {
            "message/send": lambda: c.send(),
            "tasks/get": lambda: c.get(task["id"]),
            "tasks/list": lambda: c.list_tasks(),
            "tasks/feedback": lambda: c.feedback(task["id"]),
            "contexts/list": lambda: c.list_contexts(),
            "contexts/clear": lambda: c.clear(task["context_id"]),
        }
        if method == "tasks/cancel":
            c.outcome("working")
            working = c.send()
            ctx.expect(working.ok, f"message/send: {working.describe()}")
            calls[method] = lambda: c.cancel(working.result["id"])
        if method == "message/stream":
            if not _streaming(c):
                raise Untested("the agent card says capabilities.streaming is false: no stream to validate")
            check_stream_events(ctx, c)
            return
        result_matches(ctx, op, calls[method]())
    return check


def check_stream_events(ctx: CheckContext, c: BinduClient) -> None:
    reply = c.call("message/stream", c.send_params())
    ctx.expect(reply.status == 200 and is_event_stream(reply.http), f"message/stream must answer text/event-stream: {reply.describe()}")
    events = stream_events(reply.http)
    ctx.expect(events, "message/stream sent no data events")
    schema = ctx.profile.operations["message/stream"].result_schema or {}
    for env in events:
        ctx.expect(isinstance(env, dict) and env.get("jsonrpc") == "2.0" and "result" in env, f"stream event is not a JSON-RPC result: {env!r:.120}")
        expect_matches(ctx, schema, env["result"], "stream event result")


def check_stream_capability(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    reply = c.call("message/stream", c.send_params())
    if _streaming(c):
        ctx.expect(reply.status == 200 and is_event_stream(reply.http),
                   f"card says streaming; message/stream answered HTTP {reply.status} {reply.http.headers.get('content-type')}")
    else:
        expect_error(ctx, reply, "UnsupportedOperation", "message/stream on an agent whose card says streaming: false")


# ----------------------------------------------------------------------------------
# error catalog
# ----------------------------------------------------------------------------------
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
    replies.append(("message to completed task", c.send(task_id=task["id"], context_id=task["context_id"])))
    if ctx.has_credential("read"):
        replies.append(("read scope sends", c.send(caller="read")))
    seen = 0
    for what, reply in replies:
        expect_envelope(ctx, reply, what)
        expect_catalogued(ctx, reply, what)
        seen += reply.error is not None
    ctx.expect(seen >= len(replies) - 2, f"only {seen} of {len(replies)} error-provoking requests were answered with an error")


def unknown_tasks(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    c = BinduClient(ctx)
    return {"tasks/get of an unknown task": lambda: c.get(fresh_id()),
            "tasks/cancel of an unknown task": lambda: c.cancel(fresh_id()),
            "tasks/feedback of an unknown task": lambda: c.feedback(fresh_id())}


def unknown_contexts(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    c = BinduClient(ctx)
    return {"contexts/clear of an unknown context": lambda: c.clear(fresh_id())}


# ----------------------------------------------------------------------------------
# tasks
# ----------------------------------------------------------------------------------
def check_send_creates_task(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    params = c.send_params(text="capital of France?")
    msg = params["message"]
    task = expect_result(ctx, c.call("message/send", params), "message/send")
    ctx.expect(task.get("id") == msg["taskId"], f"task id {task.get('id')!r} is not the caller's taskId {msg['taskId']!r}")
    ctx.expect(task.get("context_id") == msg["contextId"], f"context_id {task.get('context_id')!r} is not the caller's contextId")
    ids = [m.get("message_id") for m in task.get("history") or []]
    ctx.expect(msg["message_id"] in ids, "the sent message is not in the task's history")
    fresh = expect_result(ctx, c.send(task_id=None, context_id=None), "message/send without ids")
    ctx.expect(fresh.get("id") and fresh.get("context_id"), "a task without caller ids must get a server id and context")
    got = expect_result(ctx, c.get(task["id"]), "tasks/get of the new task")
    ctx.expect(got.get("id") == task["id"], "tasks/get returned another task")


def resend(ctx: CheckContext) -> Callable[[], Any]:
    """The same message/send, again and again (no caller task id)."""
    c = BinduClient(ctx)
    params = c.send_params(task_id=None)
    return lambda: c.call("message/send", params)


def check_output_modes(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    reply = c.send(output_modes=["application/x-conformance-unknown"])
    expect_error(ctx, reply, "ContentTypeNotSupported", "acceptedOutputModes with no overlap")
    expect_result(ctx, c.send(output_modes=[c.output_modes()[0]]), "acceptedOutputModes overlapping the card's modes")


def _grow_history(c: BinduClient) -> dict[str, Any]:
    task = c.new_task("input-required")
    reply = c.send(task_id=task["id"], context_id=task["context_id"])
    c.ctx.expect(reply.ok, f"message/send to an input-required task: {reply.describe()}")
    return reply.result


def check_history_length(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = _grow_history(c)
    full = expect_result(ctx, c.get(task["id"]), "tasks/get")["history"]
    ctx.expect(len(full) >= 3, f"a task after two messages shows only {len(full)} history entries")
    for cap in (0, 1, 2):
        got = expect_result(ctx, c.get(task["id"], history_length=cap), f"tasks/get historyLength={cap}")
        hist = got.get("history") or []
        ctx.expect(hist == (full[-cap:] if cap else []), f"tasks/get historyLength={cap} returned {len(hist)} messages, not the last {cap}")
    sent = expect_result(ctx, c.send(history_length=0), "message/send historyLength=0")
    ctx.expect(not sent.get("history"), f"message/send configuration.historyLength=0 returned {len(sent.get('history') or [])} messages")


def check_list_history(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    a, b = _grow_history(c), c.new_task()
    listed = expect_result(ctx, c.list_tasks(history_length=1), "tasks/list history_length=1")
    ids = {t.get("id") for t in listed}
    ctx.expect({a["id"], b["id"]} <= ids, "tasks/list history_length=1 dropped tasks: it must cap history, not the number of tasks")
    for t in listed:
        ctx.expect(len(t.get("history") or []) <= 1, f"task {t.get('id')} in tasks/list history_length=1 has {len(t.get('history') or [])} messages")


def check_contexts_list(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    first = c.new_task()
    second = c.new_task(context_id=first["context_id"])
    listed = expect_result(ctx, c.list_contexts(), "contexts/list")
    mine = [x for x in listed if x.get("context_id") == first["context_id"]]
    ctx.expect(mine, "contexts/list lacks the caller's context")
    ctx.expect({first["id"], second["id"]} <= set(mine[0].get("tasks") or []), "contexts/list does not list the context's tasks")
    capped = expect_result(ctx, c.list_contexts(history_length=1), "contexts/list history_length=1")
    mine = [x for x in capped if x.get("context_id") == first["context_id"]]
    ctx.expect(mine and len(mine[0].get("tasks") or []) <= 1, "contexts/list history_length=1 must cap tasks per context to 1")


def check_cancel_terminal(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    states = sorted(terminal_states(ctx.profile.spec))
    for state in states:
        try:
            task = c.new_task(state) if state != "canceled" else _canceled(c)
        except Untested:
            if state != "completed":
                continue
            raise
        reply = c.cancel(task["id"])
        expect_error(ctx, reply, "TaskNotCancelable", f"tasks/cancel of a {state} task")
        ctx.expect(c.state_of(task["id"]) == state, f"tasks/cancel of a {state} task changed its state")


def _canceled(c: BinduClient) -> dict[str, Any]:
    task = c.new_task("working")
    reply = c.cancel(task["id"])
    c.ctx.expect(reply.ok, f"tasks/cancel of a working task: {reply.describe()}")
    return reply.result


def check_cancel_running(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    for state in ("working", "input-required"):
        task = c.new_task(state)
        result = expect_result(ctx, c.cancel(task["id"]), f"tasks/cancel of a {state} task")
        ctx.expect(result["status"]["state"] == "canceled", f"tasks/cancel of a {state} task answered state {result['status']['state']!r}")
        ctx.expect(c.state_of(task["id"]) == "canceled", f"after tasks/cancel, tasks/get of the {state} task does not say canceled")


def check_terminal_immutable(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task()
    before = expect_result(ctx, c.get(task["id"]), "tasks/get")
    reply = c.send(task_id=task["id"], context_id=task["context_id"])
    expect_error(ctx, reply, "TaskImmutable", "message/send to a completed task")
    after = expect_result(ctx, c.get(task["id"]), "tasks/get")
    ctx.expect(after["status"] == before["status"] and after.get("history") == before.get("history"), "the completed task changed")


def check_resume_input_required(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task("input-required")
    reply = c.send(task_id=task["id"], context_id=task["context_id"])
    result = expect_result(ctx, reply, "message/send to an input-required task")
    ctx.expect(result["id"] == task["id"], "message/send to an input-required task must continue that task")
    ctx.expect(len(result.get("history") or []) > len(task.get("history") or []), "the answer to the paused task did not reach its history")


def check_feedback(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    for state in ("completed", "working"):
        try:
            task = c.new_task(state)
        except Untested:
            if state == "completed":
                raise
            continue
        before = expect_result(ctx, c.get(task["id"]), "tasks/get")
        result = expect_result(ctx, c.feedback(task["id"]), f"tasks/feedback on a {state} task")
        ctx.expect(result.get("success") is True, f"tasks/feedback answered {result!r}, expected success true")
        after = expect_result(ctx, c.get(task["id"]), "tasks/get after feedback")
        ctx.expect(after["status"]["state"] == before["status"]["state"], "tasks/feedback changed the task's state")
        ctx.expect(after.get("history") == before.get("history"), "tasks/feedback changed the task's history")
        ctx.expect(after.get("artifacts") == before.get("artifacts"), "tasks/feedback changed the task's artifacts")


def check_context_clear(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task()
    other = c.new_task(context_id=task["context_id"])
    result = expect_result(ctx, c.clear(task["context_id"]), "contexts/clear of a context with finished tasks")
    ctx.expect(result.get("success") is True, f"contexts/clear answered {result!r}")
    for t in (task, other):
        expect_error(ctx, c.get(t["id"]), "TaskNotFound", "tasks/get of a task in a cleared context")
    listed = expect_result(ctx, c.list_contexts(), "contexts/list")
    ctx.expect(all(x.get("context_id") != task["context_id"] for x in listed), "the cleared context is still listed")


def check_context_clear_running(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    running = c.new_task("working")
    reply = c.clear(running["context_id"])
    if reply.error is not None:
        expect_error(ctx, reply, "ContextNotCancelable", "contexts/clear of a context with a working task")
    got = c.get(running["id"])
    ctx.expect(got.ok and got.result["status"]["state"] == "working", f"contexts/clear affected a working task: {got.describe()}")


def check_chained_tasks(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    first = c.new_task()
    before = expect_result(ctx, c.get(first["id"]), "tasks/get")
    reply = c.send(reference_task_ids=[first["id"]], context_id=first["context_id"])
    chained = expect_result(ctx, reply, "message/send with referenceTaskIds of a completed task")
    ctx.expect(chained["id"] != first["id"], "a chained message must create a new task, not reopen the referenced one")
    after = expect_result(ctx, c.get(first["id"]), "tasks/get of the referenced task")
    ctx.expect(after["status"] == before["status"], "the referenced task changed")


def check_casing(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task()
    snake = expect_result(ctx, c.call("tasks/get", {"task_id": task["id"], "history_length": 1}), "tasks/get with snake_case task_id")
    ctx.expect(snake.get("id") == task["id"], "tasks/get with task_id returned another task")
    ctx.expect(len(snake.get("history") or []) <= 1, "history_length (snake_case) was ignored")
    params = c.send_params()
    msg = params["message"]
    msg["task_id"], msg["context_id"] = msg.pop("taskId"), msg.pop("contextId")
    sent = expect_result(ctx, c.call("message/send", params), "message/send with snake_case task_id/context_id")
    ctx.expect(sent.get("id") == msg["task_id"], "message/send ignored snake_case task_id")
    for t in (snake, sent):
        ctx.expect("context_id" in t and "contextId" not in t, f"responses must be snake_case: task keys {sorted(t)}")


# ----------------------------------------------------------------------------------
# auth
# ----------------------------------------------------------------------------------
def operations(methods: Callable[[], dict[str, Callable[[BinduClient, Any], Any]]]) -> auth.Operations:
    """The auth families' rows: each method as a call that takes a caller."""
    def rows(ctx: CheckContext) -> dict[str, Callable[[Any], Any]]:
        c = BinduClient(ctx)
        return {name: functools.partial(f, c) for name, f in methods().items()}
    return rows


def _write_methods() -> dict[str, Callable[[BinduClient, Any], Any]]:
    return {
        "message/send": lambda c, who: c.send(who),
        "tasks/cancel": lambda c, who: c.cancel(fresh_id(), who),
        "tasks/feedback": lambda c, who: c.feedback(fresh_id(), who),
        "contexts/clear": lambda c, who: c.clear(fresh_id(), who),
    }


def _read_methods() -> dict[str, Callable[[BinduClient, Any], Any]]:
    return {
        "tasks/get": lambda c, who: c.get(fresh_id(), who),
        "tasks/list": lambda c, who: c.list_tasks(who),
        "contexts/list": lambda c, who: c.list_contexts(who),
    }


def _all_methods() -> dict[str, Callable[[BinduClient, Any], Any]]:
    return {**_write_methods(), **_read_methods()}


REFUSALS = ("InsufficientPermissions", "AuthenticationRequired", "InvalidToken")


def _own_task(ctx: CheckContext) -> dict[str, Any]:
    return BinduClient(ctx).new_task()


def _foreign(ctx: CheckContext) -> dict[str, Callable[[Any, Any], Any]]:
    c = BinduClient(ctx)
    return {"tasks/get": lambda task, who: c.get(task["id"], who),
            "tasks/cancel": lambda task, who: c.cancel(task["id"], who),
            "tasks/feedback": lambda task, who: c.feedback(task["id"], who),
            "contexts/clear": lambda task, who: c.clear(task["context_id"], who)}


def _listings(ctx: CheckContext) -> dict[str, tuple[Callable[[Any], Any], Callable[[Any, Any], bool]]]:
    c = BinduClient(ctx)
    return {"tasks/list": (lambda who: c.list_tasks(who), lambda listed, task: any(t.get("id") == task["id"] for t in listed)),
            "contexts/list": (lambda who: c.list_contexts(who),
                              lambda listed, task: any(x.get("context_id") == task["context_id"] for x in listed))}


def _still_there(ctx: CheckContext, task: dict[str, Any]) -> bool:
    return BinduClient(ctx).get(task["id"]).ok


# ----------------------------------------------------------------------------------
# DID request signing
# ----------------------------------------------------------------------------------
def _did_call(ctx: CheckContext, tamper: str = "") -> Any:
    """tasks/list signed as the DID caller, with one deliberate defect."""
    did = ctx.credential("did")
    seed = bytes.fromhex(did["seed"])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}}).encode()
    window = int(ctx.profile.limits["did_timestamp_window_s"].value)
    ts = int(time.time()) - (window + 1 if tamper == "stale" else 0) + (window + 100 if tamper == "future" else 0)
    headers = sign_request(seed, did["id"], body, ts)
    if tamper == "body":
        body = body.replace(b'"params": {}', b'"params": {"history_length": 1}')
    elif tamper == "did":
        headers["X-DID"] = did["id"] + "-someone-else"
        headers.update({k: v for k, v in sign_request(seed, headers["X-DID"], body, ts).items() if k != "X-DID"})
    elif tamper == "malformed":
        headers["X-DID-Signature"] = "0OIl-not-base58"
    elif tamper == "short":
        headers["X-DID-Signature"] = base58.b58encode(b"\x01" * 12).decode()
    elif tamper == "missing":
        del headers["X-DID-Signature"]
    headers["Authorization"] = f"Bearer {did['token']}"
    return ctx.binding.send_raw(body, headers=headers)


def _reason(reply: Any) -> Any:
    env = reply.envelope if isinstance(reply.envelope, dict) else {}
    data = (env.get("error") or {}).get("data") if isinstance(env.get("error"), dict) else None
    details = env.get("details") if isinstance(env.get("details"), dict) else None
    return (data or {}).get("reason") or (details or {}).get("reason")


def did_rejected(tamper: str, reason: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        reply = _did_call(ctx, tamper)
        ctx.expect(reply.status == 403, f"signed request with {tamper} defect: HTTP {reply.status}, expected 403 ({reply.describe()})")
        got = _reason(reply)
        ctx.expect(got == reason, f"signed request with {tamper} defect: reason {got!r}, expected {reason!r}")
    return check


def check_did_valid(ctx: CheckContext) -> None:
    reply = _did_call(ctx)
    ctx.expect(reply.ok and reply.status == 200, f"a correctly signed request was refused: {reply.describe()}")


# ----------------------------------------------------------------------------------
# artifacts and DID documents
# ----------------------------------------------------------------------------------
def _agent_key(ctx: CheckContext, c: BinduClient) -> str:
    did = c.card().get("did")
    ctx.expect(isinstance(did, str), "the agent card has no did")
    reply = ctx.http.request("GET", "/did/resolve", params={"did": did})
    doc = reply.json()
    ctx.expect(reply.status == 200 and isinstance(doc, dict), f"/did/resolve of the card's DID: HTTP {reply.status}")
    methods = doc.get("verificationMethod") or doc.get("authentication") or []
    keys: list[Any] = [m.get("publicKeyBase58") for m in methods if isinstance(m, dict)]
    ctx.expect(keys and keys[0], "the DID document has no publicKeyBase58")
    return keys[0]


def check_artifact_signatures(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    key = _agent_key(ctx, c)
    task = expect_result(ctx, c.get(c.new_task()["id"]), "tasks/get of a completed task")
    signed = 0
    for artifact in task.get("artifacts") or []:
        for part in artifact.get("parts") or []:
            sig = (part.get("metadata") or {}).get("did.message.signature")
            if sig is None:
                continue
            signed += 1
            text = part["text"] if "text" in part else json.dumps(part.get("data"), sort_keys=True)
            ctx.expect(verify_signature(key, text.encode(), sig), f"artifact {artifact.get('artifact_id')} signature does not verify with the agent's DID key")
    if not signed:
        raise Untested("no artifact part carried did.message.signature")


def check_did_resolve(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    did = c.card().get("did")
    schema = schema_at(ctx.profile.spec, "/components/schemas/DidDocument")
    got = ctx.http.request("GET", "/did/resolve", params={"did": did})
    posted = ctx.http.request("POST", "/did/resolve", json_body={"did": did})
    ctx.expect(got.status == 200, f"GET /did/resolve: HTTP {got.status}")
    ctx.expect(posted.status == 200, f"POST /did/resolve: HTTP {posted.status}")
    expect_matches(ctx, schema, got.json(), "GET /did/resolve document")
    ctx.expect(got.json() == posted.json(), "POST /did/resolve returns a different document than GET")
    ctx.expect(got.json().get("id") == did, "the DID document's id is not the DID asked for")
    for vm in got.json().get("authentication") or []:
        ctx.expect(len(base58.b58decode(vm["publicKeyBase58"])) == 32, "publicKeyBase58 is not a 32-byte Ed25519 key")
    missing = ctx.http.request("POST", "/did/resolve", json_body={})
    ctx.expect(missing.status == 400, f"POST /did/resolve without did: HTTP {missing.status}, expected 400")
    unknown = ctx.http.request("GET", "/did/resolve", params={"did": "did:bindu:conformance:unknown:" + fresh_id()})
    ctx.expect(unknown.status == 404, f"GET /did/resolve of an unknown DID: HTTP {unknown.status}, expected 404")


# ----------------------------------------------------------------------------------
# REST surface
# ----------------------------------------------------------------------------------
REST_EXCLUDED = ("/api/", "/payment-capture")  # paid endpoints: their own requirement


def check_rest_schemathesis(ctx: CheckContext) -> None:
    from conformance.checks.openapi_rest import check_rest_operations

    def include(method: str, path: str) -> bool:
        """Every REST operation but the JSON-RPC endpoint and the paid ones."""
        return not (method == "POST" and path == "/") and not path.startswith(REST_EXCLUDED)

    check_rest_operations(ctx, ctx.profile.spec, include=include, headers=BinduClient(ctx).auth())


def check_root_redirect(ctx: CheckContext) -> None:
    reply = ctx.http.request("GET", "/")
    ctx.expect(reply.status == 302, f"GET /: HTTP {reply.status}, expected 302")
    expected = resolve_pointer(ctx.profile.spec, "/paths/~1/get/responses/302/headers/Location/schema/example")
    location = reply.headers.get("location", "")
    ctx.expect(location.endswith(expected), f"GET / redirects to {location!r}, expected {expected!r}")


def check_card_head_options(ctx: CheckContext) -> None:
    head = ctx.http.request("HEAD", "/.well-known/agent.json")
    ctx.expect(head.status == 200, f"HEAD agent card: HTTP {head.status}")
    opts = ctx.http.request("OPTIONS", "/.well-known/agent.json", headers={"Origin": "http://127.0.0.1", "Access-Control-Request-Method": "GET"})
    ctx.expect(opts.status == 204, f"OPTIONS agent card: HTTP {opts.status}, expected 204")
    ctx.expect("access-control-allow-origin" in opts.headers, "OPTIONS agent card lacks Access-Control-Allow-Origin")
    allowed = opts.headers.get("access-control-allow-methods", "")
    ctx.expect("GET" in allowed, f"Access-Control-Allow-Methods {allowed!r} does not allow GET")


SKILL_ERROR_AT = {"code": "/code", "message": "/error"}  # the 404 body of /agent/skills/{skillId}


def unknown_skill(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    path = "/agent/skills/conformance-no-such-skill"
    return {f"GET {path}": lambda: rest_reply(ctx.http.request("GET", path), SKILL_ERROR_AT)}


def check_skill_not_found(ctx: CheckContext) -> None:
    not_found(unknown_skill, "SkillNotFound")(ctx)  # 404 with the catalog's code in the body
    path = "/agent/skills/conformance-no-such-skill/documentation"  # documented 404, no body
    reply = ctx.http.request("GET", path)
    status = error_named(ctx.profile, "SkillNotFound").http_status
    ctx.expect(reply.status == status, f"GET {path}: HTTP {reply.status}, expected {status}", kind="not_found_expected")


def check_skills_consistent(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    listed = ctx.http.request("GET", "/agent/skills").json() or []
    card_ids = {s.get("id") for s in c.card().get("skills") or []}
    ctx.expect({s.get("id") for s in listed} == card_ids, "/agent/skills differs from the agent card's skills")
    detail = schema_at(ctx.profile.spec, "/components/schemas/SkillDetail")
    for skill in listed:
        one = ctx.http.request("GET", f"/agent/skills/{skill['id']}")
        ctx.expect(one.status == 200, f"GET /agent/skills/{skill['id']}: HTTP {one.status}")
        expect_matches(ctx, detail, one.json(), f"skill {skill['id']}")
        doc = ctx.http.request("GET", f"/agent/skills/{skill['id']}/documentation")
        ctx.expect(doc.status == 200 and doc.headers.get("content-type", "").startswith("text/markdown"),
                   f"skill {skill['id']} documentation: HTTP {doc.status} {doc.headers.get('content-type')}")


def check_negotiation(ctx: CheckContext) -> None:
    from conformance.spec.schemas import strategy_for

    req_schema = schema_at(ctx.profile.spec, "/components/schemas/NegotiationRequest")
    resp_schema = schema_at(ctx.profile.spec, "/components/schemas/NegotiationResponse")
    example = resolve_pointer(ctx.profile.spec, "/paths/~1agent~1negotiation/post/requestBody/content/application~1json/example")

    def body(request: Any) -> None:
        for payload in (example, request):
            reply = ctx.http.request("POST", "/agent/negotiation", json_body=payload)
            ctx.expect(reply.status == 200, f"POST /agent/negotiation: HTTP {reply.status}")
            answer = reply.json()
            expect_matches(ctx, resp_schema, answer, "negotiation response")
            ctx.expect(0 <= answer["score"] <= 1, f"negotiation score {answer['score']} outside 0..1")

    ctx.for_all(strategy_for(req_schema), body)


def check_health(ctx: CheckContext) -> None:
    reply = ctx.http.request("GET", "/health")
    ctx.expect(reply.status in (200, 503), f"/health: HTTP {reply.status}")
    ctx.expect(reply.headers.get("content-type", "").startswith("application/json"), f"/health content type {reply.headers.get('content-type')!r}")
    body = reply.json()
    expect_matches(ctx, schema_at(ctx.profile.spec, "/components/schemas/HealthResponse"), body, "/health body")
    expected = "healthy" if reply.status == 200 else "degraded"
    ctx.expect(body["status"] == expected, f"/health HTTP {reply.status} says status {body['status']!r}")


def check_metrics(ctx: CheckContext) -> None:
    import re

    reply = ctx.http.request("GET", "/metrics")
    ctx.expect(reply.status == 200, f"/metrics: HTTP {reply.status}")
    ctx.expect(reply.headers.get("content-type", "").startswith("text/plain"), f"/metrics content type {reply.headers.get('content-type')!r}")
    label = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
    sample = re.compile(rf"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{{({label})?(,{label})*,?\}})? [-+0-9.eEinfNa]+( -?\d+)?$")
    lines = [ln for ln in reply.text.split("\n") if ln.strip()]  # label values may hold other line breaks
    ctx.expect(lines, "/metrics is empty")
    for ln in lines:
        ctx.expect(ln.startswith("#") or sample.match(ln), f"/metrics line is not Prometheus text: {ln[:100]!r}")


def _paid(card: dict[str, Any]) -> bool:
    """The profile's reading: an agent is paid when its card lists an x402 extension."""
    return any("x402" in str(ext.get("name", "")).lower() for ext in card.get("extensions") or [] if isinstance(ext, dict))


def check_payment_unpaid(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    if _paid(c.card()):
        raise Untested("the agent card lists an x402 extension: the agent is paid")
    for method, path in (("POST", "/api/start-payment-session"), ("GET", "/api/payment-status/conformance-none")):
        reply = ctx.http.request(method, path, headers=c.auth(), json_body={} if method == "POST" else None)
        ctx.expect(reply.status == 404, f"{method} {path} on an unpaid agent: HTTP {reply.status}, expected 404")


# ----------------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------------
def build(profile: Profile) -> list[Requirement]:
    table = Table(profile)
    at, req = table.at, table.req

    catalog = "/info/description"
    reqs = [
        req("BINDU-RPC-PARSE-ERROR", "MUST", "A body that is not JSON gets -32700 with id null and HTTP 400",
            at(catalog, "| `-32700` |"), check_parse_error, ("parse_error_http_200", "parse_error_id_not_null")),
        req("BINDU-RPC-INVALID-REQUEST", "MUST", "JSON that is not a JSON-RPC request gets -32600",
            at(catalog, "| `-32600` |"), check_invalid_request, ("invalid_request_as_parse_error",)),
        req("BINDU-RPC-METHOD-NOT-FOUND", "MUST", "An unknown method gets -32601 with HTTP 404",
            at(catalog, "| `-32601` |"), check_method_not_found, ("unknown_method_internal_error",)),
        req("BINDU-RPC-ID-ECHO", "MUST", "Every response echoes the request id, with jsonrpc 2.0 and one of result/error",
            at("/components/schemas/JsonRpcRequest/properties/id"), check_id_echo, ("id_not_echoed",)),
        req("BINDU-RPC-BODY-LIMIT", "MUST", f"Bodies over {profile.limits['body_bytes'].value / ONE_MB:g} MB get 413 outside the JSON-RPC envelope",
            at(f"{POST}/description", "**Size limit:**"), check_body_limit, ("no_body_limit",)),
        req("BINDU-ERRORS-CATALOGUED", "MUST", "Every error code that comes back is in the catalog, with the catalog's HTTP status",
            at(catalog, "## Error catalog"), check_errors_catalogued, ("errors_with_http_200", "uncatalogued_error_code")),
        req("BINDU-TASK-NOT-FOUND", "MUST", "An unknown task id gets -32001 TaskNotFound",
            at(catalog, "| `-32001` |"), not_found(unknown_tasks, "TaskNotFound"), ("unknown_task_internal_error",)),
        req("BINDU-CONTEXT-NOT-FOUND", "MUST", "contexts/clear of an unknown context gets -32020 ContextNotFound",
            at(catalog, "| `-32020` |"), not_found(unknown_contexts, "ContextNotFound"), ("clear_unknown_context_succeeds", "uncatalogued_error_code")),
        req("BINDU-SEND-CREATES-TASK", "MUST", "message/send creates a task under the caller's taskId and contextId",
            at("/components/schemas/UserMessage/properties/taskId"), check_send_creates_task, ("ignores_caller_task_id",)),
        req("BINDU-SEND-NOT-IDEMPOTENT", "MUST", "A repeated message/send creates a new task",
            at(f"{POST}/description", "**Idempotency:**"), idempotency.never_deduplicated(resend, lambda task: task.get("id"), "message/send"), ("dedupes_message_id",)),
        req("BINDU-SEND-OUTPUT-MODES", "MUST", "acceptedOutputModes with no overlap gets -32005",
            at("/components/schemas/MessageSendConfiguration/properties/acceptedOutputModes"), check_output_modes, ("ignores_output_modes",)),
        req("BINDU-HISTORY-LENGTH", "MUST", "historyLength caps history to the most recent N messages",
            at("/components/schemas/TasksGetParams/properties/historyLength"), check_history_length, ("history_length_ignored",), ("control",)),
        req("BINDU-TASKS-LIST-HISTORY", "MUST", "tasks/list history_length caps each task's history, not the number of tasks",
            at("/components/schemas/TasksListParams"), check_list_history, ("list_history_caps_tasks",), ("control",)),
        req("BINDU-CONTEXTS-LIST", "MUST", "contexts/list shows the caller's contexts and their tasks; history_length caps tasks per context",
            at(f"{POST}/requestBody/content/application~1json/examples/contextsList"), check_contexts_list, ("contexts_history_ignored",)),
        req("BINDU-CANCEL-TERMINAL", "MUST", "tasks/cancel of a terminal task gets -32002 and leaves it unchanged",
            at(catalog, "| `-32002` |"), check_cancel_terminal, ("cancel_terminal_succeeds",)),
        req("BINDU-CANCEL-RUNNING", "MUST", "tasks/cancel of a non-terminal task makes it canceled",
            at(catalog, "`canceled` — user terminated via `tasks/cancel`"), check_cancel_running, ("cancel_noop",), ("control",)),
        req("BINDU-TERMINAL-IMMUTABLE", "MUST", "A message to a terminal task gets -32008 and the task stays as it was",
            at(catalog, "**Terminal tasks are immutable.**"), check_terminal_immutable, ("terminal_task_reopened",)),
        req("BINDU-INPUT-REQUIRED-RESUME", "MUST", "A message to an input-required task continues that task",
            at(f"{POST}/responses/200/content/application~1json/examples/tasksGetInputRequired/description"),
            check_resume_input_required, ("input_required_not_resumable",), ("control",)),
        req("BINDU-FEEDBACK-NO-STATE-CHANGE", "MUST", "tasks/feedback is stored and never changes the task",
            at(f"{POST}/requestBody/content/application~1json/examples/tasksFeedback/description"), check_feedback,
            ("feedback_changes_state", "success_as_string")),
        req("BINDU-CONTEXT-CLEAR", "MUST", "contexts/clear purges the context's finished tasks",
            at(f"{POST}/requestBody/content/application~1json/examples/contextsClear"), check_context_clear, ("clear_keeps_tasks",)),
        req("BINDU-CONTEXT-CLEAR-RUNNING", "MUST", "contexts/clear never affects a working task (it may refuse with -32021)",
            at(f"{POST}/requestBody/content/application~1json/examples/contextsClear/description"), check_context_clear_running,
            ("clear_purges_running",), ("control",)),
        req("BINDU-CHAINED-TASKS", "MUST", "referenceTaskIds of an earlier task start a new task and leave the old one unchanged",
            at("/components/schemas/UserMessage/properties/referenceTaskIds"), check_chained_tasks, ("reference_task_rejected",)),
        req("BINDU-PARAMS-CASING", "MUST", "camelCase and snake_case params are both accepted; responses are snake_case",
            at(f"{POST}/description", "**Casing tolerance:**"), check_casing, ("snake_case_params_rejected", "camel_case_responses")),
        req("BINDU-STREAM-CAPABILITY", "MUST", "message/stream follows the card's capabilities.streaming (-32004 when false)",
            at("/components/schemas/AgentCard/properties/capabilities/properties/streaming"), check_stream_capability, ("stream_ignores_capability",)),
        req("BINDU-LIFECYCLE", "MUST", "Tasks move only along the state machine: terminal states are final, cancel, feedback, clear and history behave",
            at(catalog, "### State machine"), lambda ctx: ctx.run_machine(TaskLifecycle),
            ("terminal_task_reopened", "cancel_terminal_succeeds", "feedback_changes_state", "input_required_not_resumable"),
            ("control",)),
        req("BINDU-AUTH-REQUIRED", "MUST", "Every method without a bearer token gets -32009 (HTTP 401)",
            at(catalog, "| `-32009` |"), auth.token_required(operations(_all_methods), "AuthenticationRequired"), ("auth_not_enforced",)),
        req("BINDU-AUTH-INVALID-TOKEN", "MUST", "A token the server never issued gets -32010 (HTTP 401)",
            at(catalog, "| `-32010` |"), auth.token_refused(operations(_all_methods), "InvalidToken"), ("invalid_token_accepted",)),
        req("BINDU-AUTH-EXPIRED-TOKEN", "MUST", "An expired token gets -32011 (HTTP 401)",
            at(catalog, "| `-32011` |"), auth.token_refused(operations(_read_methods), "TokenExpired", caller="expired", credential="expired"), ("expired_token_accepted",), ("expired",)),
        req("BINDU-SCOPE-READ", "MUST", "agent:read unlocks the read methods and nothing else (-32013)",
            at(catalog, "| `agent:read` |"), auth.scopes("read", operations(_read_methods), operations(_write_methods), "InsufficientPermissions", REFUSALS), ("scope_check_skipped",), ("read",)),
        req("BINDU-SCOPE-WRITE", "MUST", "agent:write unlocks the write methods and nothing else (-32013)",
            at(catalog, "| `agent:write` |"), auth.scopes("write", operations(_write_methods), operations(_read_methods), "InsufficientPermissions", REFUSALS), ("scope_check_skipped", "write_implies_read"), ("write",)),
        req("BINDU-SCOPE-LEGACY-EXECUTE", "MUST", "The legacy agent:execute scope implies agent:read and agent:write",
            at(catalog, "`agent:execute` (legacy)"), auth.scopes("legacy", operations(_all_methods), operations(dict), "InsufficientPermissions", REFUSALS), ("legacy_execute_rejected",), ("legacy",)),
        req("BINDU-OWNERSHIP", "MUST", "Another caller's tasks and contexts are not found, listed or cleared",
            at(catalog, "| `-32001` |"), auth.isolation(_own_task, _foreign, lambda name: "ContextNotFound" if name == "contexts/clear" else "TaskNotFound",
                           _listings, _still_there), ("ownership_not_enforced",), ("other",)),
        req("BINDU-DID-VALID", "MUST", "A correctly signed request (the spec's payload, base58 Ed25519) is accepted",
            at("/components/securitySchemes/didSignature/description"), check_did_valid, ("rejects_valid_signature",), ("did",)),
        req("BINDU-DID-TAMPERED", "MUST", "A body changed after signing is refused: 403 crypto_mismatch",
            at(catalog, 'reason: "crypto_mismatch"'), did_rejected("body", "crypto_mismatch"),
            ("signature_not_verified",), ("did",)),
        req("BINDU-DID-TIMESTAMP", "MUST", f"A timestamp outside ±{profile.limits['did_timestamp_window_s'].value} s is refused: 403 timestamp_out_of_window",
            at(catalog, "| `X-DID-Timestamp` |"), did_rejected("stale", "timestamp_out_of_window"), ("stale_timestamp_accepted",), ("did",)),
        req("BINDU-DID-MISMATCH", "MUST", "An X-DID that is not the token's client_id is refused: 403 did_mismatch",
            at(catalog, "Gate 2"), did_rejected("did", "did_mismatch"), ("did_mismatch_accepted",), ("did",)),
        req("BINDU-DID-MALFORMED", "MUST", "A signature that is not base58 Ed25519 is refused: 403 malformed_input",
            at(f"{POST}/responses/403/content/application~1json/schema/properties/details/properties/reason"),
            did_rejected("malformed", "malformed_input"), ("malformed_signature_crashes",), ("did",)),
        req("BINDU-DID-MISSING-HEADERS", "MUST", "X-DID without all three signing headers is refused: 403 missing_signature_headers",
            at("/components/securitySchemes/didSignature/description"), did_rejected("missing", "missing_signature_headers"),
            ("partial_headers_ignored",), ("did",)),
        req("BINDU-ARTIFACT-SIGNATURE", "MUST", "Artifact did.message.signature verifies with the key /did/resolve gives for the card's DID",
            at("/components/schemas/Artifact/properties/parts/description"), check_artifact_signatures, ("artifact_signature_wrong",)),
        req("BINDU-DID-RESOLVE", "MUST", "/did/resolve GET and POST give the same DID document; unknown 404, missing did 400",
            at("/paths/~1did~1resolve"), check_did_resolve, ("did_resolve_post_missing",)),
        req("BINDU-REST-OPENAPI", "MUST", "REST paths answer documented status codes, content types and schemas (schemathesis)",
            at("/paths"), check_rest_schemathesis, ("card_missing_did", "health_wrong_content_type")),
        req("BINDU-ROOT-REDIRECT", "MUST", "GET / redirects (302) to the agent card",
            at("/paths/~1/get"), check_root_redirect, ("root_not_redirect",)),
        req("BINDU-CARD-HEAD-OPTIONS", "MUST", "The agent card answers HEAD (200) and OPTIONS (204 with CORS headers)",
            at(CARD), check_card_head_options, ("card_options_405",)),
        req("BINDU-SKILL-NOT-FOUND", "MUST", "An unknown skill gets 404 with code -32030",
            at(catalog, "| `-32030` |"), check_skill_not_found, ("skill_not_found_500",)),
        req("BINDU-SKILLS-CONSISTENT", "SHOULD", "/agent/skills matches the card; each skill has details and Markdown documentation",
            Source("profile", "the spec does not tie /agent/skills to the card's skills"), check_skills_consistent, ("skill_docs_missing",)),
        req("BINDU-NEGOTIATION-SCORE", "MUST", "Negotiation answers a NegotiationResponse with a score within 0..1",
            at("/components/schemas/NegotiationResponse/properties/score"), check_negotiation, ("negotiation_score_percent",)),
        req("BINDU-HEALTH", "MUST", "/health answers 200 healthy or 503 degraded, as a HealthResponse",
            at("/paths/~1health/get"), check_health, ("health_wrong_content_type",)),
        req("BINDU-METRICS", "MUST", "/metrics answers Prometheus text",
            at("/paths/~1metrics/get"), check_metrics, ("metrics_json",)),
        req("BINDU-PAYMENT-UNPAID", "MUST", "An unpaid agent answers 404 on the payment endpoints",
            at("/paths/~1api~1start-payment-session/post/description"), check_payment_unpaid, ("payment_session_on_unpaid",)),
    ]
    per_method_faults = {
        "result": {
            "message/send": ("camel_case_responses",), "message/stream": ("camel_case_responses",),
            "tasks/get": ("camel_case_responses",), "tasks/list": ("camel_case_responses",),
            "tasks/cancel": ("camel_case_responses",), "tasks/feedback": ("success_as_string",),
            "contexts/list": ("context_missing_created_at",), "contexts/clear": ("success_as_string",),
        },
    }
    for method, op in profile.operations.items():
        reqs.append(req(f"BINDU-PARAMS-VALID-{slug(method)}", "MUST", f"Generated valid {method} params are accepted",
                        op.source, valid_params(method), ("rejects_unknown_params",)))
        reqs.append(req(f"BINDU-PARAMS-INVALID-{slug(method)}", "MUST", f"{method} params breaking one schema rule get -32602",
                        op.source, invalid_params(method), ("skip_params_validation", "invalid_params_as_parse_error")))
        result_ptr = profile.settings["jsonrpc"]["results"][method]
        reqs.append(req(f"BINDU-RESULT-{slug(method)}", "MUST", f"{method} results match the spec's result schema",
                        at(result_ptr), result_schema(method), per_method_faults["result"][method]))
    return reqs
