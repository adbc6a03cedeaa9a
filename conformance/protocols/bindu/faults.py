"""Named faults: each replaces ONE method or attribute of a BinduReference instance,
so the reference misbehaves in exactly one way a requirement must catch."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from conformance.protocols.bindu.reference import BinduReference, Caller, Context, RpcError, Task, TokenInfo
from conformance.table import FaultRegistry

Fault = Callable[[BinduReference], None]
FAULTS = FaultRegistry()
fault = FAULTS


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


# ------------------------------------------------------------------ JSON-RPC envelope


@fault
def parse_error_http_200(ref: BinduReference) -> None:
    """Parse errors are sent with HTTP 200."""

    def response() -> Response:
        reply = ref.error_response(None, RpcError("Parse error"))
        reply.status_code = 200
        return reply

    ref.parse_error_response = response  # type: ignore[method-assign]


@fault
def parse_error_id_not_null(ref: BinduReference) -> None:
    """A -32700 Parse error is answered with id 0 instead of null."""
    ref.parse_error_response = lambda: ref.error_response(0, RpcError("Parse error"))  # type: ignore[method-assign]


@fault
def invalid_request_as_parse_error(ref: BinduReference) -> None:
    """A JSON body that is not a valid request is answered with the Parse error code."""
    original = ref.check_envelope

    def check(body: Any) -> tuple[str, Any]:
        try:
            return original(body)
        except RpcError as err:
            raise RpcError("Parse error") from err

    ref.check_envelope = check  # type: ignore[method-assign]


@fault
def unknown_method_internal_error(ref: BinduReference) -> None:
    """An unknown method is answered with Internal error (HTTP 500)."""
    original = ref.check_method

    def check(method: str) -> None:
        try:
            original(method)
        except RpcError as err:
            raise RpcError("Internal error") from err

    ref.check_method = check  # type: ignore[method-assign]


@fault
def id_not_echoed(ref: BinduReference) -> None:
    """An integer request id is echoed back as a string."""
    ref.echo_id = lambda rid: str(rid) if isinstance(rid, int) and not isinstance(rid, bool) else rid  # type: ignore[method-assign, assignment]


@fault
def no_body_limit(ref: BinduReference) -> None:
    """Bodies over the spec's size limit are accepted (no 413)."""
    ref.max_body_bytes = None


# ------------------------------------------------------------------ params


@fault
def rejects_unknown_params(ref: BinduReference) -> None:
    """A params object with a property the schema does not name is rejected with InvalidParams."""
    original = ref.validate_params

    def validate(method: str, params: Any) -> None:
        known = ref.profile.operations[method].params_schema.get("properties", {})
        extra = sorted(set(params) - set(known)) if isinstance(params, dict) else []
        if extra:
            raise RpcError("Invalid params", f"Invalid params: unknown property '{extra[0]}'")
        original(method, params)

    ref.validate_params = validate  # type: ignore[method-assign]


@fault
def skip_params_validation(ref: BinduReference) -> None:
    """Params are never validated against the method's schema."""
    ref.validate_params = lambda method, params: None  # type: ignore[method-assign]


@fault
def invalid_params_as_parse_error(ref: BinduReference) -> None:
    """What should be InvalidParams is answered with the Parse error code (HTTP 400)."""
    original = ref.validate_params

    def validate(method: str, params: Any) -> None:
        try:
            original(method, params)
        except RpcError as err:
            raise RpcError("Parse error") from err

    ref.validate_params = validate  # type: ignore[method-assign]


@fault
def snake_case_params_rejected(ref: BinduReference) -> None:
    """No casing normalisation: only the schema's own spelling of a param is understood."""
    ref.normalise_params = lambda schema, value: value  # type: ignore[method-assign]


# ------------------------------------------------------------------ error mapping


@fault
def errors_with_http_200(ref: BinduReference) -> None:
    """Every JSON-RPC error is sent with HTTP 200."""
    ref.error_status = lambda err: 200  # type: ignore[method-assign]


@fault
def uncatalogued_error_code(ref: BinduReference) -> None:
    """ContextNotFound is answered with code -32099 (HTTP 404), which the catalog lacks."""
    original = ref.error_body

    def body(err: RpcError) -> dict[str, Any]:
        out = original(err)
        if err.name == "ContextNotFound":
            out["code"] = -32099
        return out

    ref.error_body = body  # type: ignore[method-assign]


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
def ignores_output_modes(ref: BinduReference) -> None:
    """configuration.acceptedOutputModes is never checked (no ContentTypeNotSupported)."""
    ref.check_output_modes = lambda configuration: None  # type: ignore[method-assign]


@fault
def history_length_ignored(ref: BinduReference) -> None:
    """tasks/get and message/send ignore historyLength."""
    original = ref.requested_history_length

    def length(method: str, params: dict[str, Any]) -> int | None:
        return None if method in ("tasks/get", "message/send") else original(method, params)

    ref.requested_history_length = length  # type: ignore[method-assign]


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
def cancel_terminal_succeeds(ref: BinduReference) -> None:
    """tasks/cancel of a terminal task succeeds instead of TaskNotCancelable."""
    ref.is_cancelable = lambda task: True  # type: ignore[method-assign]


@fault
def cancel_noop(ref: BinduReference) -> None:
    """tasks/cancel of a non-terminal task returns it unchanged."""
    ref.cancel_task = lambda task: None  # type: ignore[method-assign]


@fault
def terminal_task_reopened(ref: BinduReference) -> None:
    """message/send to a terminal task appends and reruns instead of TaskImmutable."""
    ref.is_mutable = lambda task: True  # type: ignore[method-assign]


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
def clear_keeps_tasks(ref: BinduReference) -> None:
    """contexts/clear says success but keeps the context's tasks."""
    ref.delete_context = lambda ctx: None  # type: ignore[method-assign]


@fault
def clear_purges_running(ref: BinduReference) -> None:
    """contexts/clear deletes working tasks too (no ContextNotCancelable)."""
    ref.context_busy = lambda ctx: False  # type: ignore[method-assign]


@fault
def clear_unknown_context_succeeds(ref: BinduReference) -> None:
    """contexts/clear of an unknown context answers success."""
    original = ref.contexts_clear

    def clear(params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        if params["contextId"] not in ref.contexts:
            return ref.success_result()
        return original(params, caller)

    ref.contexts_clear = clear  # type: ignore[method-assign]


# ------------------------------------------------------------------ response shapes


@fault
def camel_case_responses(ref: BinduReference) -> None:
    """Task views say contextId instead of context_id."""
    original = ref.task_view

    def view(task: Task, history_length: int | None = None) -> dict[str, Any]:
        return {_camel(k): v for k, v in original(task, history_length).items()}

    ref.task_view = view  # type: ignore[method-assign]


@fault
def context_missing_created_at(ref: BinduReference) -> None:
    """contexts/list entries lack the required created_at."""
    original = ref.context_view

    def view(ctx: Context, history_length: int | None = None) -> dict[str, Any]:
        out = original(ctx, history_length)
        out.pop("created_at", None)
        return out

    ref.context_view = view  # type: ignore[method-assign]


@fault
def success_as_string(ref: BinduReference) -> None:
    """tasks/feedback and contexts/clear answer {"success": "true"} (a string)."""
    ref.success_result = lambda: {"success": "true"}  # type: ignore[method-assign]


# ------------------------------------------------------------------ authentication


@fault
def auth_not_enforced(ref: BinduReference) -> None:
    """A request without a bearer token is accepted."""
    original = ref.authenticate

    def authenticate(headers: Any, method: str) -> Caller:
        if ref.bearer_token(headers) is None:
            return Caller("anonymous")
        return original(headers, method)

    ref.authenticate = authenticate  # type: ignore[method-assign]


@fault
def invalid_token_accepted(ref: BinduReference) -> None:
    """An unknown token is treated as a full-scope caller."""
    original = ref.lookup_token
    full = ("agent:read", "agent:write")
    ref.lookup_token = lambda token: original(token) or TokenInfo("unknown-token-client", full)  # type: ignore[method-assign]


@fault
def expired_token_accepted(ref: BinduReference) -> None:
    """A token whose exp is in the past is accepted."""
    ref.is_expired = lambda info: False  # type: ignore[method-assign]


@fault
def scope_check_skipped(ref: BinduReference) -> None:
    """Any valid token may call any method, whatever its scopes."""
    ref.check_scope = lambda info, method: None  # type: ignore[method-assign]


@fault
def write_implies_read(ref: BinduReference) -> None:
    """agent:write also unlocks the read methods."""
    original = ref.granted_methods

    def granted(scopes: Any) -> set[str]:
        scopes = tuple(scopes)
        extra = original(("agent:read",)) if "agent:write" in scopes else set()
        return original(scopes) | extra

    ref.granted_methods = granted  # type: ignore[method-assign]


@fault
def legacy_execute_rejected(ref: BinduReference) -> None:
    """The legacy agent:execute scope grants nothing."""
    original = ref.granted_methods
    ref.granted_methods = lambda scopes: original(s for s in scopes if s != "agent:execute")  # type: ignore[method-assign]


@fault
def ownership_not_enforced(ref: BinduReference) -> None:
    """Other callers' tasks and contexts are visible and operable."""
    ref.owns = lambda caller, owner: True  # type: ignore[method-assign]


# ------------------------------------------------------------------ DID signing


@fault
def rejects_valid_signature(ref: BinduReference) -> None:
    """The verifier builds the payload with compact separators, so valid signatures fail."""

    def payload(body: bytes, did: str, timestamp: int) -> bytes:
        doc = {"body": body.decode("utf-8"), "did": did, "timestamp": timestamp}
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

    ref.signed_payload = payload  # type: ignore[method-assign]


@fault
def signature_not_verified(ref: BinduReference) -> None:
    """The Ed25519 verification is skipped (any well-formed signature passes)."""
    ref.verify = lambda public_key, message, signature: True  # type: ignore[method-assign]


@fault
def stale_timestamp_accepted(ref: BinduReference) -> None:
    """X-DID-Timestamp is not checked against the spec's window."""
    ref.timestamp_fresh = lambda timestamp: True  # type: ignore[method-assign]


@fault
def did_mismatch_accepted(ref: BinduReference) -> None:
    """Gate 2 is skipped: X-DID need not equal the token's client_id."""
    ref.did_matches = lambda header_did, client_id: True  # type: ignore[method-assign]


@fault
def malformed_signature_crashes(ref: BinduReference) -> None:
    """A malformed signature crashes the verifier (Internal error, HTTP 500)."""
    original = ref.decode_signature

    def decode(signature: str) -> bytes | None:
        raw = original(signature)
        if raw is None:
            raise ValueError("signature is not 64 base58-encoded bytes")
        return raw

    ref.decode_signature = decode  # type: ignore[method-assign]


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
    original = ref.agent_card

    def card(base_url: str) -> dict[str, Any]:
        out = original(base_url)
        out.pop("did", None)
        return out

    ref.agent_card = card  # type: ignore[method-assign]


@fault
def health_wrong_content_type(ref: BinduReference) -> None:
    """/health is served as text/plain."""
    original = ref.health

    def health(request: Request, body: bytes) -> Response:
        reply = original(request, body)
        return PlainTextResponse(bytes(reply.body).decode(), status_code=reply.status_code)

    ref.health = health  # type: ignore[method-assign]


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
    original = ref.start_payment

    def start(request: Request, body: bytes) -> Response:
        reply = original(request, body)
        if reply.status_code == 404:
            reply.status_code = 200
        return reply

    ref.start_payment = start  # type: ignore[method-assign]


__all__ = ["FAULTS", "Fault"]
