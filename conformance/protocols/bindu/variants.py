"""Variants: behaviours the spec allows but the reference does not choose. Each
patches one reference instance, like a fault, and its docstring quotes the spec
text that allows it; `conformance selftest` runs every requirement against every
variant, and no MUST requirement may fail on one."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from conformance.kit.declare import variant
from conformance.kit.faults import refuses, replaces
from conformance.protocols.bindu.reference import (
    BUSY_STATES,
    TERMINAL_STATES,
    BinduReference,
    Caller,
    Context,
    RpcError,
)

PAUSED_STATES = frozenset({"input-required", "auth-required"})


@variant
def feedback_refused_when_open(ref: BinduReference) -> None:
    """tasks/feedback on a task that is not terminal is refused with -32004 UnsupportedOperation
    (only finished tasks are rated).

    allowed by: /info/description "| `tasks/feedback` | Rate a completed task." (nothing says an open task
    may be rated)"""
    @replaces(ref.tasks_feedback)
    def feedback(original: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        task = ref.find_task(caller, params["taskId"])
        if task.state not in TERMINAL_STATES:
            raise RpcError("UnsupportedOperation",
                           f"Only a finished task can be rated; this one is '{task.state}'")
        return original(params, caller)


@variant
def batch_answered_per_element(ref: BinduReference) -> None:
    """A JSON array body is a JSON-RPC 2.0 batch: each element is answered in an array of
    responses (an element that is not a request gets -32600 with id null); an empty array
    gets one -32600.

    allowed by: /info/summary "A2A-protocol agent over JSON-RPC 2.0" (JSON-RPC 2.0, section 6: Batch)"""
    @replaces(ref.rpc)
    def rpc(original: Any, request: Request, raw: bytes) -> Response:
        try:
            body = ref.parse_json(raw)
        except ValueError:
            return original(request, raw)
        if not isinstance(body, list) or not body:
            return original(request, raw)
        answers = []
        for element in body:
            reply = original(request, json.dumps(element).encode())
            answers.append(json.loads(bytes(reply.body)))
        return JSONResponse(answers)


@variant
def anonymous_reads(ref: BinduReference) -> None:
    """The read methods (tasks/get, tasks/list, contexts/list) are served without a bearer
    token, as an anonymous caller who owns nothing; a token that is sent is still checked.

    allowed by: /info/description "### Layer 1 — bearer token (required on writable methods)\""""
    reads = ("tasks/get", "tasks/list", "contexts/list")

    @replaces(ref.authenticate)
    def authenticate(original: Any, headers: Any, method: str) -> Caller:
        if method in reads and ref.bearer_token(headers) is None:
            return Caller("anonymous")
        return original(headers, method)


variant(refuses(
    "extended_card_not_configured", "check_method",
    lambda method: RpcError("AuthenticatedExtendedCardNotConfigured",
                            "This agent publishes no extended card"),
    """A request for the authenticated extended card (agent/getAuthenticatedExtendedCard,
    A2A's method) gets -32007 instead of -32601.

    allowed by: /info/description "| `-32007` | AuthenticatedExtendedCardNotConfigured | 400 | Extended card
    requested but agent didn't publish one |\"""",
    when=lambda method: method == "agent/getAuthenticatedExtendedCard"))


@variant
def signing_keyed_on_x_did(ref: BinduReference) -> None:
    """DID signing is checked only when X-DID is sent: X-DID-Timestamp and X-DID-Signature
    without X-DID are ignored (the request is served as an unsigned one).

    allowed by: /components/securitySchemes/didSignature/description "When `X-DID` is sent, the request body
    is signed\""""
    @replaces(ref.signing_requested)
    def requested(_original: Any, headers: Any) -> bool:
        return "x-did" in headers


@variant
def body_limit_decimal_mb(ref: BinduReference) -> None:
    """The body limit's megabytes are read as decimal ones (10^6 bytes, not 2^20).

    allowed by: /paths/~1/post/description "**Size limit:** request bodies over" (its "MB": 10^6 or 2^20
    bytes)"""
    ref.limit_values = {**ref.limit_values,
                        "body_bytes": ref.limit("body_bytes") // (1024 * 1024) * 1_000_000}


@variant
def clear_refuses_paused(ref: BinduReference) -> None:
    """contexts/clear refuses (-32021) while a task of the context is paused (input-required,
    auth-required), not only while one works: a paused task is still in use.

    allowed by: /info/description "| `-32021` | ContextNotCancelable | 400 | Tried to clear a context still in
    use |\""""
    @replaces(ref.context_busy)
    def busy(_original: Any, ctx: Context) -> bool:
        return any(ref.tasks[t].state in BUSY_STATES | PAUSED_STATES
                   for t in ctx.task_ids if t in ref.tasks)


@variant
def clear_keeps_paused(ref: BinduReference) -> None:
    """contexts/clear purges finished tasks only: paused tasks (input-required,
    auth-required) stay, like running ones, and so does their context.

    allowed by: /paths/~1/post/requestBody/content/application~1json/examples/contextsClear/summary
    "Clear a context (all non-running tasks purged)" (a paused task may count as running)"""
    @replaces(ref.delete_context)
    def delete(_original: Any, ctx: Context) -> None:
        kept = [t for t in ctx.task_ids if t in ref.tasks and ref.tasks[t].state in PAUSED_STATES]
        for task_id in ctx.task_ids:
            if task_id not in kept:
                ref.tasks.pop(task_id, None)
        if kept:
            ctx.task_ids[:] = kept
        else:
            ref.contexts.pop(ctx.id, None)


AUTH_ERRORS = ("AuthenticationRequired", "InvalidToken", "TokenExpired")


@variant
def auth_plain_401(ref: BinduReference) -> None:
    """A missing, unknown or expired bearer token on POST / is answered with the 401 body
    the path documents ({"error": "Unauthorized"}) instead of the JSON-RPC envelope.

    allowed by: /paths/~1/post/responses/401 "Missing or invalid bearer token" (schema: {error: string})"""
    @replaces(ref.error_response)
    def response(original: Any, request_id: Any, err: RpcError) -> Response:
        if err.name in AUTH_ERRORS:
            return JSONResponse({"error": "Unauthorized"}, status_code=401)
        return original(request_id, err)


@variant
def expired_as_inactive(ref: BinduReference) -> None:
    """An expired token is reported as inactive by introspection, so it gets -32010
    InvalidToken rather than -32011 TokenExpired.

    allowed by: /info/description "| `-32010` | InvalidToken | 401 | Token introspection returned `active:
    false` |" (Hydra reports an expired token inactive)"""
    @replaces(ref.lookup_token)
    def lookup(original: Any, token: str) -> Any:
        info = original(token)
        if info is not None and ref.is_expired(info):
            return None
        return info


@variant
def clear_keeps_empty_context(ref: BinduReference) -> None:
    """contexts/clear purges the context's tasks but keeps the context itself, empty
    (it is reset, not deleted), so contexts/list still shows it.

    allowed by: /info/description "| `contexts/clear` | Reset a context. |\""""
    @replaces(ref.delete_context)
    def delete(_original: Any, ctx: Context) -> None:
        for task_id in ctx.task_ids:
            ref.tasks.pop(task_id, None)
        ctx.task_ids.clear()


@variant
def stream_status_deltas(ref: BinduReference) -> None:
    """message/stream sends A2A-style deltas: one status-update event per state the task
    passes through (task_id, context_id, status, final), not whole Task snapshots.

    allowed by: /info/description "| `message/stream` | *(Experimental)* SSE stream of task deltas. |\""""
    @replaces(ref.message_stream)
    def stream(original: Any, params: dict[str, Any], caller: Caller) -> Any:
        out = original(params, caller)
        last = len(out.results) - 1
        out.results = [{"kind": "status-update", "task_id": view["id"], "context_id": view["context_id"],
                        "status": view["status"], "final": i == last} for i, view in enumerate(out.results)]
        return out


@variant
def send_answers_submitted(ref: BinduReference) -> None:
    """message/send answers as soon as the task is queued (state submitted); the agent picks
    it up in the background and has run by the next request, where tasks/get shows the state
    its work took it to. A blocking send, and a run whose result is malformed (-32006, which
    only the answer to the send can carry), still wait for the agent.

    allowed by: /info/description "| `tasks/get` | Poll that task by id until it terminates. |" and
    /paths/~1/post/responses/200/content/application~1json/examples/messageSendSubmitted/description
    "Task created and queued. Poll `tasks/get` for progress.\""""
    queued: dict[str, str] = {}  # task id -> the outcome of its agent's run

    def run_queued() -> None:
        for task_id, outcome in list(queued.items()):
            del queued[task_id]
            task = ref.tasks.get(task_id)
            if task is not None and task.state == "submitted":
                ref.apply_outcome(task, outcome)

    @replaces(ref.message_send)
    def send(original: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        if ref.wants_blocking(params) or ref.agent_faults:
            return original(params, caller)
        task = ref.start_task(params, caller)
        queued[task.id] = ref.next_outcome()
        return ref.task_view(task, ref.requested_history_length("message/send", params))

    @replaces(ref.rpc)
    def rpc(original: Any, request: Request, raw: bytes) -> Response:
        run_queued()
        return original(request, raw)

    @replaces(ref.control)
    def control(original: Any, request: Request) -> Any:
        run_queued()
        return original(request)  # the base's control(): a coroutine its endpoint awaits


@variant
def contexts_list_task_ids(ref: BinduReference) -> None:
    """contexts/list names each context's tasks ``task_ids``, beside a ``task_count``, and
    leaves out the optional ``tasks`` (as Bindu 2026.36.7 does); history_length still caps
    the ids listed.

    allowed by: /components/schemas/Context/properties/tasks "IDs of every task in this context." (not in
    the Context's required members, and the schema allows others)"""
    @replaces(ref.context_view)
    def view(original: Any, ctx: Context, history_length: int | None = None) -> dict[str, Any]:
        out = original(ctx, history_length)
        out["task_ids"] = out.pop("tasks")
        out["task_count"] = len(ctx.task_ids)
        return out


@variant
def notifications_unanswered(ref: BinduReference) -> None:
    """A request without an id is a JSON-RPC 2.0 notification: it is processed and gets no
    response (HTTP 204, no body), instead of -32600.

    allowed by: /components/schemas/JsonRpcRequest/description "JSON-RPC 2.0 request envelope." (JSON-RPC
    2.0, section 4.1: "The Server MUST NOT reply to a Notification")"""
    @replaces(ref.rpc)
    def rpc(original: Any, request: Request, raw: bytes) -> Response:
        try:
            body = ref.parse_json(raw)
        except ValueError:
            return original(request, raw)
        if isinstance(body, dict) and "id" not in body and body.get("jsonrpc") == "2.0":
            original(request, json.dumps({**body, "id": 0}).encode())
            return Response(status_code=204)
        return original(request, raw)


@variant
def streaming_off(ref: BinduReference) -> None:
    """The agent card says capabilities.streaming is false, and message/stream is refused with
    UnsupportedOperation (the rows about a stream are then not applicable, by that declaration).

    allowed by: /info/description "| `-32004` | UnsupportedOperation | 400 | e.g. `message/stream` on a
    non-streaming agent |" (and the AgentCard example's "streaming: false")"""
    @replaces(ref.streaming_enabled)
    def enabled(original: Any) -> bool:
        return False
