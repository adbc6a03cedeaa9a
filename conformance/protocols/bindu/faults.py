"""Named faults: each replaces ONE method or attribute of a BinduReference instance,
so the reference misbehaves in exactly one way a requirement must catch."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from conformance.faults import replaces
from conformance.protocols.bindu.reference import BinduReference, Caller, Context, RpcError, Task, TokenInfo
from conformance.table import FaultRegistry

Fault = Callable[[BinduReference], None]
FAULTS = FaultRegistry()
fault = FAULTS
FAULTS.constants(Path(__file__).with_name("faults.yaml"))


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


# ------------------------------------------------------------------ JSON-RPC envelope


# ------------------------------------------------------------------ params


@fault
def rejects_unknown_params(ref: BinduReference) -> None:
    """A params object with a property the schema does not name is rejected with InvalidParams."""
    @replaces(ref, "validate_params")
    def validate(original: Any, method: str, params: Any) -> None:
        known = ref.profile.operations[method].params_schema.get("properties", {})
        extra = sorted(set(params) - set(known)) if isinstance(params, dict) else []
        if extra:
            raise RpcError("Invalid params", f"Invalid params: unknown property '{extra[0]}'")
        original(method, params)


@fault
def invalid_params_as_parse_error(ref: BinduReference) -> None:
    """What should be InvalidParams is answered with the Parse error code (HTTP 400)."""
    @replaces(ref, "validate_params")
    def validate(original: Any, method: str, params: Any) -> None:
        try:
            original(method, params)
        except RpcError as err:
            raise RpcError("Parse error") from err


# ------------------------------------------------------------------ error mapping


@fault
def unknown_task_internal_error(ref: BinduReference) -> None:
    """An unknown task is answered with Internal error (HTTP 500)."""
    ref.task_not_found = lambda task_id: RpcError("Internal error")  # type: ignore[method-assign]


# ------------------------------------------------------------------ message/send and tasks


@fault
def ignores_caller_task_id(ref: BinduReference) -> None:
    """A new task gets a server-made id even when the caller gave a taskId."""
    ref.choose_task_id = lambda requested: ref.new_id()  # type: ignore[method-assign]


@fault
def caller_task_id_refused(ref: BinduReference) -> None:
    """message/send with a caller-chosen taskId for a new task is refused as Invalid params."""
    @replaces(ref, "message_send")
    def send(original: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        task_id = params["message"].get("taskId")
        if task_id and task_id not in ref.tasks:
            raise RpcError("Invalid params", "Invalid params: taskId is assigned by the server")
        return original(params, caller)


@fault
def dedupes_message_id(ref: BinduReference) -> None:
    """A repeated message/send with the same message_id and no taskId returns the earlier task."""
    original = ref.message_send
    seen: dict[tuple[str, str], str] = {}

    def send(params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        message = params["message"]
        key = (caller.client_id, message["message_id"])
        if "taskId" not in message and key in seen and seen[key] in ref.tasks:
            return ref.task_view(ref.tasks[seen[key]])
        result = original(params, caller)
        seen[key] = result["id"]
        return result

    ref.message_send = send  # type: ignore[method-assign]


@fault
def history_length_ignored(ref: BinduReference) -> None:
    """tasks/get and message/send ignore historyLength."""
    @replaces(ref, "requested_history_length")
    def length(original: Any, method: str, params: dict[str, Any]) -> int | None:
        return None if method in ("tasks/get", "message/send") else original(method, params)


@fault
def list_history_caps_tasks(ref: BinduReference) -> None:
    """tasks/list history_length caps the number of tasks returned, not each history."""

    def tasks_list(params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        views = [ref.task_view(t) for t in ref.tasks.values() if ref.owns(caller, t.owner)]
        return ref.cap(views, params.get("history_length"))

    ref.tasks_list = tasks_list  # type: ignore[method-assign]


@fault
def contexts_history_ignored(ref: BinduReference) -> None:
    """contexts/list ignores history_length (every task id is listed)."""
    original = ref.context_view
    ref.context_view = lambda ctx, history_length=None: original(ctx, None)  # type: ignore[method-assign]


@fault
def input_required_not_resumable(ref: BinduReference) -> None:
    """message/send to an input-required task is refused with TaskImmutable."""
    original = ref.is_mutable
    ref.is_mutable = lambda task: task.state != "input-required" and original(task)  # type: ignore[method-assign]


@fault
def feedback_changes_state(ref: BinduReference) -> None:
    """tasks/feedback appends a user message with the feedback text to the task's history."""

    def store(task: Task, params: dict[str, Any]) -> None:
        message = ref.agent_message(task, params["feedback"], role="user")
        task.history.append(message)

    ref.store_feedback = store  # type: ignore[method-assign]


@fault
def reference_task_rejected(ref: BinduReference) -> None:
    """Any referenceTaskIds is answered with TaskNotFound."""

    def check(caller: Caller, reference_ids: list[str]) -> None:
        if reference_ids:
            raise ref.task_not_found(reference_ids[0])

    ref.check_references = check  # type: ignore[method-assign]


@fault
def stream_ignores_capability(ref: BinduReference) -> None:
    """message/stream answers a plain JSON Task whatever capabilities.streaming says."""
    ref.message_stream = lambda params, caller: ref.message_send(params, caller)  # type: ignore[method-assign, assignment, return-value]


# ------------------------------------------------------------------ contexts


@fault
def clear_unknown_context_succeeds(ref: BinduReference) -> None:
    """contexts/clear of an unknown context answers success."""
    @replaces(ref, "contexts_clear")
    def clear(original: Any, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        if params["contextId"] not in ref.contexts:
            return ref.success_result()
        return original(params, caller)


# ------------------------------------------------------------------ response shapes


@fault
def camel_case_responses(ref: BinduReference) -> None:
    """Task views say contextId instead of context_id."""
    @replaces(ref, "task_view")
    def view(original: Any, task: Task, history_length: int | None = None) -> dict[str, Any]:
        return {_camel(k): v for k, v in original(task, history_length).items()}


@fault
def context_missing_created_at(ref: BinduReference) -> None:
    """contexts/list entries lack the required created_at."""
    @replaces(ref, "context_view")
    def view(original: Any, ctx: Context, history_length: int | None = None) -> dict[str, Any]:
        out = original(ctx, history_length)
        out.pop("created_at", None)
        return out


@fault
def success_as_string(ref: BinduReference) -> None:
    """tasks/feedback and contexts/clear answer {"success": "true"} (a string)."""
    ref.success_result = lambda: {"success": "true"}  # type: ignore[method-assign]


# ------------------------------------------------------------------ authentication


@fault
def auth_not_enforced(ref: BinduReference) -> None:
    """A request without a bearer token is accepted."""
    @replaces(ref, "authenticate")
    def authenticate(original: Any, headers: Any, method: str) -> Caller:
        if ref.bearer_token(headers) is None:
            return Caller("anonymous")
        return original(headers, method)


@fault
def invalid_token_accepted(ref: BinduReference) -> None:
    """An unknown token is treated as a full-scope caller."""
    original = ref.lookup_token
    full = ("agent:read", "agent:write")
    ref.lookup_token = lambda token: original(token) or TokenInfo("unknown-token-client", full)  # type: ignore[method-assign]


@fault
def write_implies_read(ref: BinduReference) -> None:
    """agent:write also unlocks the read methods."""
    @replaces(ref, "granted_methods")
    def granted(original: Any, scopes: Any) -> set[str]:
        scopes = tuple(scopes)
        extra = original(("agent:read",)) if "agent:write" in scopes else set()
        return original(scopes) | extra


@fault
def legacy_execute_rejected(ref: BinduReference) -> None:
    """The legacy agent:execute scope grants nothing."""
    original = ref.granted_methods
    ref.granted_methods = lambda scopes: original(s for s in scopes if s != "agent:execute")  # type: ignore[method-assign]


# ------------------------------------------------------------------ DID signing


@fault
def rejects_valid_signature(ref: BinduReference) -> None:
    """The verifier builds the payload with compact separators, so valid signatures fail."""

    def payload(body: bytes, did: str, timestamp: int) -> bytes:
        doc = {"body": body.decode("utf-8"), "did": did, "timestamp": timestamp}
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

    ref.signed_payload = payload  # type: ignore[method-assign]


@fault
def malformed_signature_crashes(ref: BinduReference) -> None:
    """A malformed signature crashes the verifier (Internal error, HTTP 500)."""
    @replaces(ref, "decode_signature")
    def decode(original: Any, signature: str) -> bytes | None:
        raw = original(signature)
        if raw is None:
            raise ValueError("signature is not 64 base58-encoded bytes")
        return raw


@fault
def partial_headers_ignored(ref: BinduReference) -> None:
    """Signing is checked only when all three X-DID headers are present."""
    names = ("x-did", "x-did-timestamp", "x-did-signature")
    ref.signing_requested = lambda headers: all(h in headers for h in names)  # type: ignore[method-assign]


@fault
def artifact_signature_wrong(ref: BinduReference) -> None:
    """Artifacts are signed over a different text than the one they carry."""
    original = ref.sign_artifact
    ref.sign_artifact = lambda text: original(text + " ")  # type: ignore[method-assign]


# ------------------------------------------------------------------ REST endpoints


@fault
def did_resolve_post_missing(ref: BinduReference) -> None:
    """POST /did/resolve answers 405."""
    ref.did_resolve_post = lambda request, body: JSONResponse({"error": "Method Not Allowed"}, status_code=405)  # type: ignore[method-assign]


@fault
def card_missing_did(ref: BinduReference) -> None:
    """The agent card lacks the required did."""
    @replaces(ref, "agent_card")
    def card(original: Any, base_url: str) -> dict[str, Any]:
        out = original(base_url)
        out.pop("did", None)
        return out


@fault
def health_wrong_content_type(ref: BinduReference) -> None:
    """/health is served as text/plain."""
    @replaces(ref, "health")
    def health(original: Any, request: Request, body: bytes) -> Response:
        reply = original(request, body)
        return PlainTextResponse(bytes(reply.body).decode(), status_code=reply.status_code)


@fault
def root_not_redirect(ref: BinduReference) -> None:
    """GET / answers 200 with the agent card instead of a 302 redirect."""
    ref.root_get = lambda request, body: ref.card_get(request, body)  # type: ignore[method-assign]


@fault
def card_options_405(ref: BinduReference) -> None:
    """OPTIONS on the agent card answers 405 (no CORS preflight)."""
    ref.card_options = lambda request, body: PlainTextResponse("Method Not Allowed", status_code=405)  # type: ignore[method-assign]


@fault
def skill_not_found_500(ref: BinduReference) -> None:
    """An unknown skill is answered with HTTP 500."""
    ref.skill_not_found = lambda skill_id: JSONResponse({"error": "Internal Server Error"}, status_code=500)  # type: ignore[method-assign]


@fault
def skill_docs_missing(ref: BinduReference) -> None:
    """/agent/skills/{id}/documentation is 404 even for existing skills."""
    ref.skill_documentation = lambda request, body: ref.skill_not_found(request.path_params["skill_id"])  # type: ignore[method-assign]


@fault
def negotiation_score_percent(ref: BinduReference) -> None:
    """The negotiation score is a percentage (multiplied by 100) instead of in [0, 1]."""
    original = ref.negotiation_score
    ref.negotiation_score = lambda req: original(req) * 100  # type: ignore[method-assign]


@fault
def metrics_json(ref: BinduReference) -> None:
    """/metrics is served as JSON instead of Prometheus text."""

    def metrics(request: Request, body: bytes) -> Response:
        counts = [{"method": m, "path": p, "status": s, "count": n} for (m, p, s), n in ref.request_counts.items()]
        return JSONResponse({"http_requests_total": counts})

    ref.metrics = metrics  # type: ignore[method-assign]


@fault
def payment_session_on_unpaid(ref: BinduReference) -> None:
    """An unpaid agent answers 200 (its refusal as the body) on /api/start-payment-session instead of 404."""
    @replaces(ref, "start_payment")
    def start(original: Any, request: Request, body: bytes) -> Response:
        reply = original(request, body)
        if reply.status_code == 404:
            reply.status_code = 200
        return reply


# ------------------------------------------------------------------ added for the statement map


@fault
def push_config_ignored(ref: BinduReference) -> None:
    """configuration.pushNotificationConfig is accepted silently by an agent without push (no -32003)."""
    ref.check_configuration = ref.check_output_modes  # type: ignore[method-assign]


@fault
def agent_fault_internal_error(ref: BinduReference) -> None:
    """A malformed result of the agent is answered with Internal error (-32603) instead of -32006."""
    ref.invalid_agent_response = lambda: RpcError("Internal error")  # type: ignore[method-assign]


EXTENDED_CARD_METHOD = "agent/getAuthenticatedExtendedCard"


@fault
def extended_card_internal_error(ref: BinduReference) -> None:
    """A request for the authenticated extended card crashes (Internal error, HTTP 500)."""
    @replaces(ref, "check_method")
    def check(original: Any, method: str) -> None:
        if method == EXTENDED_CARD_METHOD:
            raise RpcError("Internal error")
        original(method)


@fault
def auth_required_treated_terminal(ref: BinduReference) -> None:
    """A task in auth-required is treated as terminal: no message continues it, no cancel stops it."""
    mutable, cancelable = ref.is_mutable, ref.is_cancelable
    ref.is_mutable = lambda task: task.state != "auth-required" and mutable(task)  # type: ignore[method-assign]
    ref.is_cancelable = lambda task: task.state != "auth-required" and cancelable(task)  # type: ignore[method-assign]


@fault
def completed_without_artifacts(ref: BinduReference) -> None:
    """A completed task carries its answer in history only, with no artifact."""
    @replaces(ref, "complete")
    def complete(original: Any, task: Task) -> None:
        original(task)
        task.artifacts.clear()


@fault
def status_timestamp_frozen(ref: BinduReference) -> None:
    """status.timestamp stays at the task's creation time whatever transitions follow."""
    @replaces(ref, "set_state")
    def set_state(original: Any, task: Task, state: str, message: dict[str, Any] | None = None) -> None:
        first = task.timestamp
        original(task, state, message)
        task.timestamp = first


@fault
def list_honours_limit(ref: BinduReference) -> None:
    """tasks/list pages by the limit/offset of older specs, which the spec says are ignored."""
    @replaces(ref, "tasks_list")
    def tasks_list(original: Any, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        out = original(params, caller)
        offset, limit = params.get("offset"), params.get("limit")
        start = offset if isinstance(offset, int) else 0
        return out[start:start + limit] if isinstance(limit, int) else out[start:]


@fault
def contexts_honour_length(ref: BinduReference) -> None:
    """contexts/list caps the number of contexts by `length`, which the spec says is ignored."""
    @replaces(ref, "contexts_list")
    def contexts_list(original: Any, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        out = original(params, caller)
        return out[:params["length"]] if isinstance(params.get("length"), int) else out


@fault
def contexts_history_caps_contexts(ref: BinduReference) -> None:
    """contexts/list history_length caps the number of contexts as well as the tasks in each."""
    @replaces(ref, "contexts_list")
    def contexts_list(original: Any, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        out = original(params, caller)
        return ref.cap(out, params.get("history_length"))


@fault
def gate1_skipped(ref: BinduReference) -> None:
    """Gate 1 is skipped: a client whose client_id is not a DID may sign (if X-DID equals its client_id)."""
    def key_for(did: str, caller: Caller) -> str | None:
        if caller.token is None:
            return ref.public_key_for_did(did)
        if not ref.did_matches(did, caller.client_id):
            raise ref.signature_failure("did_mismatch")
        return caller.token.public_key

    ref.signing_key_for = key_for  # type: ignore[method-assign]


@fault
def no_key_accepted(ref: BinduReference) -> None:
    """Gate 3 is skipped: a DID client without a registered public key passes unverified."""
    @replaces(ref, "check_signature")
    def check(original: Any, headers: Any, raw: bytes, caller: Caller) -> None:
        try:
            original(headers, raw, caller)
        except RpcError as err:
            if (err.data or {}).get("reason") != "public_key_unavailable":
                raise


@fault
def future_timestamp_accepted(ref: BinduReference) -> None:
    """Only timestamps in the past are held to the window: any future X-DID-Timestamp passes."""
    window = ref.limits["did_timestamp_window_s"].value
    ref.timestamp_fresh = lambda timestamp: ref.now() - timestamp <= window  # type: ignore[method-assign]


@fault
def window_too_narrow(ref: BinduReference) -> None:
    """The X-DID-Timestamp window is half as wide as the spec's."""
    window = ref.limits["did_timestamp_window_s"].value / 2
    ref.timestamp_fresh = lambda timestamp: abs(ref.now() - timestamp) <= window  # type: ignore[method-assign]


@fault
def negotiation_creates_task(ref: BinduReference) -> None:
    """POST /agent/negotiation starts the task it was asked about (as the main caller)."""
    from conformance.protocols.bindu.reference import MAIN_CLIENT

    @replaces(ref, "negotiate")
    def negotiate(original: Any, request: Request, body: bytes) -> Response:
        reply = original(request, body)
        message = {"role": "user", "kind": "message", "message_id": ref.new_id(), "parts": [{"kind": "text", "text": "negotiated"}]}
        ref.message_send({"message": message}, Caller(MAIN_CLIENT))
        return reply


@fault
def health_always_200(ref: BinduReference) -> None:
    """/health answers HTTP 200 even when a component fails (the body still says degraded)."""
    @replaces(ref, "health")
    def health(original: Any, request: Request, body: bytes) -> Response:
        reply = original(request, body)
        reply.status_code = 200
        return reply


@fault
def metrics_missing_series(ref: BinduReference) -> None:
    """/metrics lacks agent_llm_tokens_total, one of the series the spec names."""
    @replaces(ref, "metrics_text")
    def text(original: Any) -> str:
        return "".join(ln + "\n" for ln in original().splitlines() if "agent_llm_tokens_total" not in ln)


@fault
def missing_timestamp_ignored(ref: BinduReference) -> None:
    """A request with X-DID and X-DID-Signature but no X-DID-Timestamp is served unverified."""
    @replaces(ref, "check_signature")
    def check(original: Any, headers: Any, raw: bytes, caller: Caller) -> None:
        if "x-did-timestamp" not in headers and "x-did" in headers:
            return
        original(headers, raw, caller)


@fault
def stream_events_without_id(ref: BinduReference) -> None:
    """message/stream events carry id null instead of the request's id."""
    @replaces(ref, "event_stream_response")
    def events(original: Any, request_id: Any, stream: Any) -> Response:
        return original(None, stream)


@fault
def stream_events_of_another_task(ref: BinduReference) -> None:
    """message/stream events report a task id other than the one the message started."""
    @replaces(ref, "message_stream")
    def stream(original: Any, params: dict[str, Any], caller: Caller) -> Any:
        out = original(params, caller)
        for result in out.results:
            result["id"] = ref.new_id()
        return out


@fault
def list_omits_history(ref: BinduReference) -> None:
    """tasks/list answers every task without its history (a lost send cannot be found by its messageId)."""
    @replaces(ref, "tasks_list")
    def listing(original: Any, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        return [{k: v for k, v in view.items() if k != "history"} for view in original(params, caller)]


@fault
def send_continues_foreign_task(ref: BinduReference) -> None:
    """message/send naming another caller's taskId continues that task (no ownership check on the task)."""
    def existing(caller: Caller, task_id: str | None) -> Task | None:
        task = ref.tasks.get(task_id) if task_id is not None else None
        if task is not None and not ref.is_mutable(task):
            raise RpcError("TaskImmutable", f"Task is in terminal state '{task.state}' and cannot be modified")
        return task

    ref.existing_task = existing  # type: ignore[method-assign]


@fault
def send_joins_foreign_context(ref: BinduReference) -> None:
    """message/send naming another caller's contextId puts the new task in that caller's context."""
    ref.context_for = lambda caller, context_id: ref.contexts.get(context_id) if context_id else None  # type: ignore[method-assign]


@fault
def cleared_context_refused(ref: BinduReference) -> None:
    """A context that contexts/clear reset refuses new messages (ContextNotFound)."""
    cleared: set[str] = set()

    @replaces(ref, "delete_context")
    def delete(original: Any, ctx: Context) -> None:
        cleared.add(ctx.id)
        original(ctx)

    @replaces(ref, "context_for")
    def context_for(original: Any, caller: Caller, context_id: str | None) -> Context | None:
        if context_id in cleared:
            raise ref.context_not_found(context_id)
        return original(caller, context_id)


__all__ = ["FAULTS", "Fault"]
