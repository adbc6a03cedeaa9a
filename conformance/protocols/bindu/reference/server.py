"""The in-memory Bindu reference agent: a Starlette app that answers every path of
the spec the way the spec says, deterministically and without any network.

Everything the spec states (methods, params schemas, error catalog, response
schemas, the limits its prose states) is read from the profile. What the spec leaves to an
implementation (the scope table, the echo agent, the negotiation score) lives here, each
piece in a small method of ``BinduReference`` so that a fault can replace exactly one.
What every reference shares (the limits a fault changes, the clock control moves, the
control interface, the app) is the kit's base (conformance/kit/reference.py).
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from conformance.documents.limits import load_limits
from conformance.documents.openapi import schema_at
from conformance.documents.schemas import validator_for
from conformance.kit import reference as base
from conformance.model import Profile
from conformance.protocols.bindu import signing

ERROR_DETAIL_CHARS = 200  # how much of a validation message an Invalid params error carries
DEFAULT_AGENT_SEED = hashlib.sha256(b"conformance bindu reference agent").digest()
DEFAULT_CALLER_SEED = hashlib.sha256(b"conformance bindu reference did caller").digest()
CALLER_DID = "did:bindu:conformance_at_example_com:caller:reference"
KEYLESS_DID = "did:bindu:conformance_at_example_com:caller:no-public-key"
KEYED_PLAIN_CLIENT = "reference-keyed-client"  # not a DID, yet with a registered key (Gate 1)
MAIN_CLIENT = "reference-client"
OTHER_CLIENT = "reference-other-client"

# The spec's "Scope | Unlocks" table, plus message/stream (which starts work like
# message/send). agent:execute (legacy) implies every scope.
SCOPE_METHODS: dict[str, tuple[str, ...]] = {
    "agent:read": ("tasks/get", "tasks/list", "contexts/list"),
    "agent:write": ("message/send", "message/stream", "tasks/cancel", "tasks/feedback", "contexts/clear"),
}
LEGACY_SCOPE = "agent:execute"
TERMINAL_STATES = frozenset({"completed", "failed", "canceled", "rejected"})
BUSY_STATES = frozenset({"working", "submitted"})
OUTCOMES = ("submitted", "working", "input-required", "auth-required", "completed", "failed", "rejected")
HEALTH_COMPONENTS = ("storage", "scheduler", "bus", "grpc", "extensions")
ERROR_NAMES = (
    "Parse error",
    "Invalid Request",
    "Method not found",
    "Invalid params",
    "Internal error",
    "TaskNotFound",
    "TaskNotCancelable",
    "PushNotificationNotSupported",
    "UnsupportedOperation",
    "ContentTypeNotSupported",
    "TaskImmutable",
    "AuthenticationRequired",
    "InvalidToken",
    "TokenExpired",
    "InvalidTokenSignature",
    "InsufficientPermissions",
    "ContextNotFound",
    "ContextNotCancelable",
    "SkillNotFound",
)
# JSON-RPC method -> the BinduReference method that answers it.
HANDLERS = {
    "message/send": "message_send",
    "message/stream": "message_stream",
    "tasks/get": "tasks_get",
    "tasks/list": "tasks_list",
    "tasks/cancel": "tasks_cancel",
    "tasks/feedback": "tasks_feedback",
    "contexts/list": "contexts_list",
    "contexts/clear": "contexts_clear",
}


# --------------------------------------------------------------------------- data


@dataclass
class TokenInfo:
    """What introspecting a bearer token yields (stands in for Ory Hydra)."""

    client_id: str
    scopes: tuple[str, ...]
    active: bool = True
    exp: float | None = None
    public_key: str | None = None  # base58 Ed25519 key (Hydra client metadata)


@dataclass
class ReferenceConfig(base.ReferenceConfig):
    """How one reference instance behaves; the defaults are a typical Bindu agent (control
    off unless asked for, as on an operator's server; seed and clock as the base's)."""

    auth: bool = True
    tokens: dict[str, TokenInfo] | None = None
    streaming: bool = False
    paid: bool = False
    control: bool = False
    agent_key_seed: bytes = DEFAULT_AGENT_SEED
    # tasks and contexts the callers already hold when the reference starts, as on an
    # operator's server (a completed and a working task, each in its context, per caller):
    # what a live run must leave as it found it (tests/e2e/test_bindu_live.py)
    held: bool = False


@dataclass
class Caller:
    """Who is calling: the owner id of what they create, and their token (if any)."""

    client_id: str
    token: TokenInfo | None = None


@dataclass
class Task:
    id: str
    context_id: str
    owner: str
    state: str
    timestamp: float
    history: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    status_message: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    feedback: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Context:
    id: str
    owner: str
    name: str
    created_at: float
    updated_at: float
    task_ids: list[str] = field(default_factory=list)


@dataclass
class PaymentSession:
    id: str
    status: str
    created_at: float
    expires_at: float


@dataclass
class EventStream:
    """What a streaming handler returns: the results to send as SSE events, each
    wrapped by ``rpc`` in a JSON-RPC envelope carrying the request's id."""

    results: list[Any]


class RpcError(base.Refusal):
    """A JSON-RPC error named as in the spec's catalog; code and HTTP status are
    looked up there when the response is built."""


# --------------------------------------------------------------------------- credentials

TOKEN_STRINGS = {
    "full": "ory_at_reference_full",
    "read": "ory_at_reference_read",
    "write": "ory_at_reference_write",
    "legacy": "ory_at_reference_legacy",
    "other": "ory_at_reference_other",
    "expired": "ory_at_reference_expired",
    "did": "ory_at_reference_did",
    "did_nokey": "ory_at_reference_did_nokey",
    "plain_signer": "ory_at_reference_plain_signer",
}
# credentials that are a signing caller ({id, token, seed}) rather than a token string
SIGNER_LABELS = ("did", "did_nokey", "plain_signer")


def default_tokens() -> dict[str, TokenInfo]:
    """The tokens a default reference knows: one main caller holding several tokens,
    a second caller, an expired token and a DID caller with a registered key."""
    rw = ("agent:read", "agent:write")
    caller_key = signing.public_key_b58(DEFAULT_CALLER_SEED)
    return {
        TOKEN_STRINGS["full"]: TokenInfo(MAIN_CLIENT, rw),
        TOKEN_STRINGS["read"]: TokenInfo(MAIN_CLIENT, ("agent:read",)),
        TOKEN_STRINGS["write"]: TokenInfo(MAIN_CLIENT, ("agent:write",)),
        TOKEN_STRINGS["legacy"]: TokenInfo(MAIN_CLIENT, (LEGACY_SCOPE,)),
        TOKEN_STRINGS["other"]: TokenInfo(OTHER_CLIENT, rw),
        TOKEN_STRINGS["expired"]: TokenInfo(MAIN_CLIENT, rw, exp=1.0),
        TOKEN_STRINGS["did"]: TokenInfo(CALLER_DID, rw, public_key=caller_key),
        TOKEN_STRINGS["did_nokey"]: TokenInfo(KEYLESS_DID, rw),
        TOKEN_STRINGS["plain_signer"]: TokenInfo(KEYED_PLAIN_CLIENT, rw, public_key=caller_key),
    }


def reference_credentials(config: ReferenceConfig | None = None) -> dict[str, Any]:
    """Label -> token string for the tokens the reference knows (``did`` is a dict
    with the caller's DID, token and hex seed). Custom token tables keep only the
    default labels whose token they still contain."""
    config = config or ReferenceConfig()
    tokens = config.tokens if config.tokens is not None else default_tokens()
    creds: dict[str, Any] = {}
    for label, token in TOKEN_STRINGS.items():
        if token not in tokens:
            continue
        if label in SIGNER_LABELS:
            creds[label] = {"id": tokens[token].client_id, "token": token, "seed": DEFAULT_CALLER_SEED.hex()}
        else:
            creds[label] = token
    return creds


# --------------------------------------------------------------------------- helpers


def iso(ts: float) -> str:
    """ISO 8601 with an explicit +00:00 offset, as in the spec's examples."""
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="microseconds")


def snake(name: str) -> str:
    """camelCase -> snake_case (snake_case is unchanged)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def first_text(parts: Iterable[Any]) -> str:
    """The text the echo agent answers to: the first text part, else ``data``."""
    for part in parts:
        if isinstance(part, dict) and part.get("kind") == "text" and isinstance(part.get("text"), str):
            return part["text"]
    return "data"


def json_error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def sse(events: list[dict[str, Any]]) -> StreamingResponse:
    """A finished list of events as a text/event-stream body."""
    chunks = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
    return StreamingResponse(iter(chunks), media_type="text/event-stream")


# --------------------------------------------------------------------------- the reference


class BinduReference(base.Reference):
    """State and behaviour of the reference agent. Each behaviour is one small method
    so that a fault replaces one method on one instance and nothing else changes."""

    config: ReferenceConfig

    def __init__(self, profile: Profile, config: ReferenceConfig | None = None) -> None:
        super().__init__(profile, config or ReferenceConfig())
        # the limits the spec states (profile `limits:`); a Profile built without them reads the block
        if not profile.limits:
            limits = load_limits(profile.settings.get("limits"), profile.spec, profile.spec_relpath)
            self.limit_values = {name: lim.value for name, lim in limits.items()}
        self.tokens: dict[str, TokenInfo] = (
            dict(self.config.tokens) if self.config.tokens is not None else default_tokens()
        )
        self.catalog = {err.name: err for err in profile.errors.values()}
        missing = [name for name in ERROR_NAMES if name not in self.catalog]
        if missing:
            raise ValueError(f"the error catalog lacks {missing}")
        unhandled = set(profile.operations) - set(HANDLERS)
        if unhandled:
            raise ValueError(f"the reference has no handler for {sorted(unhandled)}")
        states = set(schema_at(profile.spec, "/components/schemas/TaskStatus")["properties"]["state"]["enum"])
        if not set(OUTCOMES) | TERMINAL_STATES <= states:
            raise ValueError(f"the spec's task states {sorted(states)} lack some the reference uses")
        self.validators = {name: validator_for(op.params_schema) for name, op in profile.operations.items()}
        self.rng = random.Random(self.config.seed) if self.config.seed is not None else None
        self.output_modes = ["application/json", "text/plain", "text/markdown"]
        self.input_modes = ["text/plain", "application/json"]
        self.agent_public_key = signing.public_key_b58(self.config.agent_key_seed)
        digest = hashlib.sha256(self.agent_public_key.encode()).digest()[:16]
        self.agent_did = f"did:bindu:conformance_at_example_com:reference-agent:{uuid.UUID(bytes=digest)}"
        self.created = self.now()
        self.tasks: dict[str, Task] = {}
        self.contexts: dict[str, Context] = {}
        self.outcomes: list[str] = []
        self.agent_faults: list[str] = []  # one-shot agent misbehaviours queued by control
        self.payments: dict[str, PaymentSession] = {}
        self.health_checks = dict.fromkeys(HEALTH_COMPONENTS, "ok")
        self.request_counts: Counter[tuple[str, str, int]] = Counter()
        self.completed_counts: Counter[str] = Counter()
        if self.config.held:
            self.seed_held()

    def seed_held(self) -> None:
        """What each caller already holds: a completed task and a working one, each in a
        context of its own (the operator's work, which a live run must not touch)."""
        for client in (MAIN_CLIENT, OTHER_CLIENT):
            caller = Caller(client)
            for outcome in ("completed", "working"):
                message = {"message_id": self.new_id(),
                           "parts": [{"kind": "text", "text": f"held {outcome} work"}]}
                task = self.start_task({"message": message}, caller)
                self.apply_outcome(task, outcome)

    # ------------------------------------------------------------------ basics

    def new_id(self) -> str:
        """A UUID4, reproducible when the config has a seed."""
        if self.rng is None:
            return str(uuid.uuid4())
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def spec_schema(self, name: str) -> dict[str, Any]:
        return schema_at(self.profile.spec, f"/components/schemas/{name}")

    # ------------------------------------------------------------------ HTTP plumbing

    def too_large(self) -> Response:
        """413 at the HTTP layer, deliberately not a JSON-RPC envelope."""
        return PlainTextResponse("Payload Too Large", status_code=413)

    async def read_body(self, request: Request) -> bytes | Response:
        """The whole body, or a 413 as soon as it is known to exceed the limit."""
        limit = self.limit("body_bytes")
        declared = request.headers.get("content-length", "")
        if limit is not None and declared.isdigit() and int(declared) > limit:
            return self.too_large()
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if limit is not None and size > limit:
                return self.too_large()
            chunks.append(chunk)
        return b"".join(chunks)

    def body_endpoint(self, name: str) -> Callable[[Request], Awaitable[Response]]:
        """A route endpoint that reads the body, then calls ``self.<name>(request, body)``
        looked up at request time (so a patched method takes effect). Handlers are
        synchronous: no await happens in the middle of a state change."""

        async def handle(request: Request) -> Response:
            body = await self.read_body(request)
            if isinstance(body, Response):
                return body
            return getattr(self, name)(request, body)

        return handle

    def count_request(self, method: str, path: str, status: int) -> None:
        self.request_counts[(method, path, status)] += 1

    # ------------------------------------------------------------------ JSON-RPC envelope

    def echo_id(self, request_id: Any) -> Any:
        """The id a response carries: the request's, unchanged."""
        return request_id

    def error_body(self, err: RpcError) -> dict[str, Any]:
        """The ``error`` member, with the code from the catalog row of ``err.name``."""
        body: dict[str, Any] = {"code": self.catalog[err.name].code, "message": err.message}
        if err.data is not None:
            body["data"] = err.data
        return body

    def error_status(self, err: RpcError) -> int:
        """HTTP status of an error response: the catalog's HTTP column."""
        return self.catalog[err.name].http_status

    def error_response(self, request_id: Any, err: RpcError) -> Response:
        envelope = {"jsonrpc": "2.0", "id": self.echo_id(request_id), "error": self.error_body(err)}
        return JSONResponse(envelope, status_code=self.error_status(err))

    def success_response(self, request_id: Any, result: Any) -> Response:
        return JSONResponse({"jsonrpc": "2.0", "id": self.echo_id(request_id), "result": result})

    def event_stream_response(self, request_id: Any, stream: EventStream) -> Response:
        """text/event-stream, one ``data:`` line per result, each a full envelope."""
        rid = self.echo_id(request_id)
        return sse([{"jsonrpc": "2.0", "id": rid, "result": result} for result in stream.results])

    def parse_error_response(self) -> Response:
        """Parse error: the id cannot be known, so it is null."""
        return self.error_response(None, RpcError("Parse error"))

    def parse_json(self, raw: bytes) -> Any:
        """The body as JSON; ValueError when it is not UTF-8 JSON."""
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, RecursionError) as exc:
            raise ValueError(str(exc)) from exc

    @staticmethod
    def valid_id(body: Any) -> str | int | None:
        """The request id when it is a string or an integer (not a bool), else None."""
        if isinstance(body, dict):
            rid = body.get("id")
            if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
                return rid
        return None

    def check_envelope(self, body: Any) -> tuple[str, Any]:
        """(method, params) of a well-formed JSON-RPC 2.0 request; Invalid Request otherwise."""
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
            raise RpcError("Invalid Request")
        if not isinstance(body.get("method"), str) or self.valid_id(body) is None:
            raise RpcError("Invalid Request")
        return body["method"], body.get("params", {})  # absent means {}; an explicit null is invalid

    def check_method(self, method: str) -> None:
        """Only the methods of the spec's method enum exist."""
        if method not in self.profile.operations:
            raise RpcError("Method not found", data={"method": method})

    def rpc(self, request: Request, raw: bytes) -> Response:
        """POST /: parse, check the envelope, authenticate, verify a DID signature,
        normalise and validate params, dispatch. Every step may end in an error."""
        try:
            body = self.parse_json(raw)
        except ValueError:
            return self.parse_error_response()
        request_id = self.valid_id(body)
        try:
            method, params = self.check_envelope(body)
            self.check_method(method)
            caller = self.authenticate(request.headers, method)
            self.check_signature(request.headers, raw, caller)
            params = self.prepare_params(method, params)
            result = getattr(self, HANDLERS[method])(params, caller)
        except RpcError as err:
            return self.error_response(request_id, err)
        except Exception:
            return self.error_response(request_id, RpcError("Internal error"))
        if isinstance(result, EventStream):
            return self.event_stream_response(request_id, result)
        return self.success_response(request_id, result)

    # ------------------------------------------------------------------ authentication

    def bearer_token(self, headers: Mapping[str, str]) -> str | None:
        value = headers.get("authorization", "")
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return token.strip()

    def lookup_token(self, token: str) -> TokenInfo | None:
        """Introspection: the token's info, or None for a token nobody issued."""
        return self.tokens.get(token)

    def is_expired(self, info: TokenInfo) -> bool:
        return info.exp is not None and info.exp < self.now()

    def granted_methods(self, scopes: Iterable[str]) -> set[str]:
        """Methods a set of scopes unlocks; the legacy scope implies all of them."""
        granted: set[str] = set()
        for scope in scopes:
            if scope == LEGACY_SCOPE:
                granted.update(m for methods in SCOPE_METHODS.values() for m in methods)
            granted.update(SCOPE_METHODS.get(scope, ()))
        return granted

    def check_scope(self, info: TokenInfo, method: str) -> None:
        if method in self.granted_methods(info.scopes):
            return
        needed = next((s for s, methods in SCOPE_METHODS.items() if method in methods), LEGACY_SCOPE)
        raise RpcError(
            "InsufficientPermissions",
            f"Scope '{' '.join(info.scopes)}' does not permit method '{method}'; requires '{needed}'",
        )

    def authenticate(self, headers: Mapping[str, str], method: str) -> Caller:
        """The caller behind the bearer token (anonymous when auth is off)."""
        if not self.config.auth:
            return Caller("anonymous")
        token = self.bearer_token(headers)
        if token is None:
            raise RpcError("AuthenticationRequired", f"Authentication required for method '{method}'")
        info = self.lookup_token(token)
        if info is None or not info.active:
            raise RpcError("InvalidToken", "Invalid or inactive token")
        if self.is_expired(info):
            raise RpcError("TokenExpired", "Token has expired")
        self.check_scope(info, method)
        return Caller(info.client_id, info)

    # ------------------------------------------------------------------ DID signing

    def signing_requested(self, headers: Mapping[str, str]) -> bool:
        """Signing is checked as soon as any one of the three headers is present."""
        return any(h in headers for h in ("x-did", "x-did-timestamp", "x-did-signature"))

    def signature_failure(self, reason: str) -> RpcError:
        return RpcError("InvalidTokenSignature", "Invalid DID signature",
                        {"reason": reason, "did_verified": False})

    def did_matches(self, header_did: str, client_id: str) -> bool:
        """Gate 2: the X-DID header names the token's own client."""
        return header_did == client_id

    def public_key_for_did(self, did: str) -> str | None:
        """With auth off there is no token: find the key registered for the DID."""
        for info in self.tokens.values():
            if info.client_id == did and info.public_key:
                return info.public_key
        return None

    def timestamp_fresh(self, timestamp: int) -> bool:
        return abs(self.now() - timestamp) <= self.limit("did_timestamp_window_s")

    def decode_signature(self, signature: str) -> bytes | None:
        """The 64 raw signature bytes, or None when malformed."""
        return signing.decode_signature(signature)

    def signed_payload(self, body: bytes, did: str, timestamp: int) -> bytes:
        return signing.signing_payload(body, did, timestamp)

    def verify(self, public_key: str, message: bytes, signature: str) -> bool:
        return signing.verify_signature(public_key, message, signature)

    def signing_key_for(self, did: str, caller: Caller) -> str | None:
        """Gates 1-3: the public key the signature must verify against."""
        if not self.config.auth or caller.token is None:
            return self.public_key_for_did(did)
        if not caller.client_id.startswith("did:") or not self.did_matches(did, caller.client_id):
            raise self.signature_failure("did_mismatch")
        return caller.token.public_key

    def check_signature(self, headers: Mapping[str, str], raw: bytes, caller: Caller) -> None:
        """Layer 2: verify the X-DID headers when a request carries any of them."""
        if not self.signing_requested(headers):
            return
        did, stamp, signature = (headers.get(h, "") for h in ("x-did", "x-did-timestamp", "x-did-signature"))
        if not (did and stamp and signature):
            raise self.signature_failure("missing_signature_headers")
        key = self.signing_key_for(did, caller)
        if not key:
            raise self.signature_failure("public_key_unavailable")
        if not re.fullmatch(r"-?[0-9]+", stamp.strip()):
            raise self.signature_failure("malformed_input")
        timestamp = int(stamp)
        if not self.timestamp_fresh(timestamp):
            raise self.signature_failure("timestamp_out_of_window")
        if self.decode_signature(signature) is None:
            raise self.signature_failure("malformed_input")
        if not self.verify(key, self.signed_payload(raw, did, timestamp), signature):
            raise self.signature_failure("crypto_mismatch")

    # ------------------------------------------------------------------ params

    def normalise_params(self, schema: Any, value: Any) -> Any:
        """Rename keys to the spelling the schema uses (taskId <-> task_id), following
        the schema's nested object properties and array items."""
        if not isinstance(schema, dict):
            return value
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [self.normalise_params(schema["items"], item) for item in value]
        props = schema.get("properties")
        if not isinstance(value, dict) or not isinstance(props, dict):
            return value
        spelling = {snake(name): name for name in props}
        out: dict[str, Any] = {}
        key: str
        for key, item in value.items():
            target = key if key in props else spelling.get(snake(key), key)
            if target != key and target in value:
                target = key  # both spellings sent: keep the schema's own
            out[target] = self.normalise_params(props.get(target), item)
        return out

    def validate_params(self, method: str, params: Any) -> None:
        """InvalidParams with the first schema violation."""
        errors = sorted(self.validators[method].iter_errors(params),
                        key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            first = errors[0]
            where = "/".join(map(str, first.absolute_path))
            detail = f"{where}: {first.message}" if where else first.message
            raise RpcError("Invalid params", f"Invalid params: {detail[:ERROR_DETAIL_CHARS]}")

    def prepare_params(self, method: str, params: Any) -> Any:
        params = self.normalise_params(self.profile.operations[method].params_schema, params)
        self.validate_params(method, params)
        return params

    # ------------------------------------------------------------------ lookups

    def owns(self, caller: Caller, owner: str) -> bool:
        return caller.client_id == owner

    def task_not_found(self, task_id: str) -> RpcError:
        return RpcError("TaskNotFound", "Task not found", {"taskId": task_id})

    def context_not_found(self, context_id: str) -> RpcError:
        return RpcError("ContextNotFound", "Context not found", {"contextId": context_id})

    def find_task(self, caller: Caller, task_id: str) -> Task:
        task = self.tasks.get(task_id)
        if task is None or not self.owns(caller, task.owner):
            raise self.task_not_found(task_id)
        return task

    def find_context(self, caller: Caller, context_id: str) -> Context:
        ctx = self.contexts.get(context_id)
        if ctx is None or not self.owns(caller, ctx.owner):
            raise self.context_not_found(context_id)
        return ctx

    # ------------------------------------------------------------------ views

    def cap(self, items: list[Any], length: int | None) -> list[Any]:
        """The last ``length`` items (all when None, none when 0)."""
        if length is None:
            return list(items)
        return list(items[-length:]) if length else []

    def task_view(self, task: Task, history_length: int | None = None) -> dict[str, Any]:
        """A Task as the spec shows it: snake_case, status with an ISO timestamp."""
        status: dict[str, Any] = {"state": task.state, "timestamp": iso(task.timestamp)}
        if task.status_message is not None:
            status["message"] = copy.deepcopy(task.status_message)
        return {
            "id": task.id,
            "context_id": task.context_id,
            "kind": "task",
            "status": status,
            "history": copy.deepcopy(self.cap(task.history, history_length)),
            "artifacts": copy.deepcopy(task.artifacts),
            "metadata": copy.deepcopy(task.metadata),
        }

    def context_view(self, ctx: Context, history_length: int | None = None) -> dict[str, Any]:
        """A Context as the spec shows it; history_length caps its task list."""
        return {
            "context_id": ctx.id,
            "kind": "context",
            "role": "user",
            "name": ctx.name,
            "tasks": self.cap(ctx.task_ids, history_length),
            "status": "active",
            "created_at": iso(ctx.created_at),
            "updated_at": iso(ctx.updated_at),
            "metadata": {},
        }

    def success_result(self) -> dict[str, Any]:
        return {"success": True}

    def requested_history_length(self, method: str, params: dict[str, Any]) -> int | None:
        """Where each method carries its history cap."""
        if method in ("message/send", "message/stream"):
            return (params.get("configuration") or {}).get("historyLength")
        if method == "tasks/get":
            return params.get("historyLength")
        return params.get("history_length")

    # ------------------------------------------------------------------ the agent

    def sign_artifact(self, text: str) -> str:
        return signing.sign_text(self.config.agent_key_seed, text)

    def next_outcome(self) -> str:
        """The one-shot outcome control queued, else ``completed``."""
        return self.outcomes.pop(0) if self.outcomes else "completed"

    def agent_message(self, task: Task, text: str, role: str = "agent") -> dict[str, Any]:
        return {
            "kind": "message",
            "role": role,
            "parts": [{"kind": "text", "text": text}],
            "task_id": task.id,
            "context_id": task.context_id,
            "message_id": self.new_id(),
        }

    def set_state(self, task: Task, state: str, message: dict[str, Any] | None = None) -> None:
        """Every state transition goes here: new timestamp, status note, metrics."""
        task.state = state
        task.timestamp = self.now()
        task.status_message = message
        if state in TERMINAL_STATES:
            self.completed_counts[state] += 1
        ctx = self.contexts.get(task.context_id)
        if ctx is not None:
            ctx.updated_at = task.timestamp

    def complete(self, task: Task) -> None:
        """The echo agent's answer: a reply in history and one signed artifact."""
        users = [m for m in task.history if m.get("role") == "user"]
        text = "Echo: " + first_text(users[-1]["parts"] if users else [])
        task.history.append(self.agent_message(task, text, role="assistant"))
        part = {"kind": "text", "text": text, "metadata": {"did.message.signature": self.sign_artifact(text)}}
        task.artifacts.append({"artifact_id": self.new_id(), "name": "result", "parts": [part]})
        self.set_state(task, "completed")

    def apply_outcome(self, task: Task, outcome: str) -> None:
        """Move a task to ``outcome`` the way an agent would get there."""
        if outcome == "completed":
            self.complete(task)
        elif outcome in ("input-required", "auth-required"):
            question = ("Which period should I analyze?" if outcome == "input-required"
                        else "Please authorize.")
            self.set_state(task, outcome, self.agent_message(task, question))
        elif outcome in ("failed", "rejected"):
            self.set_state(task, outcome, self.agent_message(task, f"The agent {outcome} this request."))
        else:
            self.set_state(task, outcome)

    def run_agent(self, task: Task) -> None:
        if self.agent_faults:
            self.agent_faults.pop(0)  # the agent's handler answered something that is not a result
            self.set_state(task, "failed", self.agent_message(task, "The agent produced a malformed result."))
            raise self.invalid_agent_response()
        self.apply_outcome(task, self.next_outcome())

    def invalid_agent_response(self) -> RpcError:
        return RpcError("InvalidAgentResponse", "Agent produced a malformed result")

    def wants_blocking(self, params: dict[str, Any]) -> bool:
        return bool((params.get("configuration") or {}).get("blocking"))

    def finish_blocking(self, task: Task) -> None:
        """blocking: true holds the answer until the task is terminal; the reference
        waits by letting the agent run on (a pause for the user ends the wait too:
        nothing can progress until the user answers)."""
        while task.state in BUSY_STATES:
            self.apply_outcome(task, self.next_outcome())

    # ------------------------------------------------------------------ message/send

    def is_mutable(self, task: Task) -> bool:
        """Terminal tasks are immutable; every other state accepts a new message."""
        return task.state not in TERMINAL_STATES

    def is_cancelable(self, task: Task) -> bool:
        return task.state not in TERMINAL_STATES

    def choose_task_id(self, requested: str | None) -> str:
        """The caller's taskId when given (so they can correlate), else a new one."""
        return requested or self.new_id()

    def check_output_modes(self, configuration: dict[str, Any]) -> None:
        accepted = configuration.get("acceptedOutputModes")
        if accepted is None or "*/*" in accepted or set(accepted) & set(self.output_modes):
            return
        raise RpcError("ContentTypeNotSupported", f"None of {accepted} is among {self.output_modes}")

    def check_configuration(self, configuration: dict[str, Any]) -> None:
        self.check_output_modes(configuration)
        if "pushNotificationConfig" in configuration:
            raise RpcError("PushNotificationNotSupported", "Push notifications are not supported")

    def check_references(self, caller: Caller, reference_ids: list[str]) -> None:
        for ref_id in reference_ids:
            self.find_task(caller, ref_id)

    def existing_task(self, caller: Caller, task_id: str | None) -> Task | None:
        """The task a message continues, or None for a new task; TaskNotFound if the
        id is someone else's, TaskImmutable if it is terminal."""
        if task_id is None or task_id not in self.tasks:
            return None
        task = self.find_task(caller, task_id)
        if not self.is_mutable(task):
            raise RpcError("TaskImmutable",
                           f"Task is in terminal state '{task.state}' and cannot be modified")
        return task

    def context_for(self, caller: Caller, context_id: str | None) -> Context | None:
        """The caller's existing context, None when a new one is to be made, and
        ContextNotFound when the id belongs to another caller."""
        if context_id is None or context_id not in self.contexts:
            return None
        return self.find_context(caller, context_id)

    def user_message(self, task: Task, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "message",
            "role": "user",
            "parts": copy.deepcopy(message["parts"]),
            "task_id": task.id,
            "context_id": task.context_id,
            "message_id": message["message_id"],
        }

    def start_task(self, params: dict[str, Any], caller: Caller) -> Task:
        """Check everything first, then create or continue the task (state submitted)."""
        message = params["message"]
        self.check_configuration(params.get("configuration") or {})
        references = message.get("referenceTaskIds") or []
        self.check_references(caller, references)
        task = self.existing_task(caller, message.get("taskId"))
        if task is None:
            ctx = self.context_for(caller, message.get("contextId"))
            if ctx is None:
                ctx = self.create_context(caller, message.get("contextId"), first_text(message["parts"]))
            task = Task(self.choose_task_id(message.get("taskId")), ctx.id, caller.client_id, "submitted",
                        self.now())
            self.tasks[task.id] = task
            ctx.task_ids.append(task.id)
        if references:
            task.metadata["reference_task_ids"] = list(references)
        task.history.append(self.user_message(task, message))
        self.set_state(task, "submitted")
        return task

    def create_context(self, caller: Caller, context_id: str | None, text: str) -> Context:
        now = self.now()
        ctx = Context(context_id or self.new_id(), caller.client_id, text[:40] or "conversation", now, now)
        self.contexts[ctx.id] = ctx
        return ctx

    def message_send(self, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        task = self.start_task(params, caller)
        self.run_agent(task)
        if self.wants_blocking(params):
            self.finish_blocking(task)
        return self.task_view(task, self.requested_history_length("message/send", params))

    def streaming_enabled(self) -> bool:
        return self.config.streaming

    def message_stream(self, params: dict[str, Any], caller: Caller) -> EventStream:
        """SSE: one JSON-RPC envelope per state the task passes through."""
        if not self.streaming_enabled():
            raise RpcError("UnsupportedOperation", "Streaming is not supported by this agent")
        length = self.requested_history_length("message/stream", params)
        task = self.start_task(params, caller)
        events = [self.task_view(task, length)]
        self.run_agent(task)
        events.append(self.task_view(task, length))
        return EventStream(events)

    # ------------------------------------------------------------------ tasks/*

    def tasks_get(self, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        task = self.find_task(caller, params["taskId"])
        return self.task_view(task, self.requested_history_length("tasks/get", params))

    def tasks_list(self, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        """Every task of the caller; limit/offset of older specs are ignored (the spec says so)."""
        length = self.requested_history_length("tasks/list", params)
        return [self.task_view(t, length) for t in self.tasks.values() if self.owns(caller, t.owner)]

    def cancel_task(self, task: Task) -> None:
        self.set_state(task, "canceled")

    def tasks_cancel(self, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        task = self.find_task(caller, params["taskId"])
        if not self.is_cancelable(task):
            raise RpcError(
                "TaskNotCancelable",
                f"Task is already in terminal state '{task.state}' and cannot be canceled",
            )
        self.cancel_task(task)
        return self.task_view(task)

    def store_feedback(self, task: Task, params: dict[str, Any]) -> None:
        """Advisory only: kept on the task, never shown, never a state change."""
        task.feedback.append({k: params[k] for k in ("feedback", "rating", "metadata") if k in params})

    def tasks_feedback(self, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        self.store_feedback(self.find_task(caller, params["taskId"]), params)
        return self.success_result()

    # ------------------------------------------------------------------ contexts/*

    def contexts_list(self, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        length = self.requested_history_length("contexts/list", params)
        return [self.context_view(c, length) for c in self.contexts.values() if self.owns(caller, c.owner)]

    def context_busy(self, ctx: Context) -> bool:
        return any(self.tasks[t].state in BUSY_STATES for t in ctx.task_ids if t in self.tasks)

    def delete_context(self, ctx: Context) -> None:
        for task_id in ctx.task_ids:
            self.tasks.pop(task_id, None)
        self.contexts.pop(ctx.id, None)

    def contexts_clear(self, params: dict[str, Any], caller: Caller) -> dict[str, Any]:
        ctx = self.find_context(caller, params["contextId"])
        if self.context_busy(ctx):
            raise RpcError("ContextNotCancelable", "Context has tasks still in progress")
        self.delete_context(ctx)
        return self.success_result()

    # ------------------------------------------------------------------ discovery

    def skills(self) -> list[dict[str, Any]]:
        """The skills this agent publishes (SkillDetail shape)."""
        return [
            {
                "id": "echo-v1",
                "name": "Echo",
                "description": "Answers every message with 'Echo: ' and its first text part.",
                "tags": ["echo", "text", "demo"],
                "version": "1.0.0",
                "inputModes": ["text/plain", "application/json"],
                "outputModes": ["text/plain"],
                "inputSchema": {"type": "object"},
                "outputSchema": {"type": "object"},
                "examples": [{"input": {"text": "hi"}, "output": {"text": "Echo: hi"}}],
            }
        ]

    def skill_summary(self, skill: dict[str, Any]) -> dict[str, Any]:
        return {k: skill[k] for k in ("id", "name", "description", "tags", "version")}

    def agent_card(self, base_url: str) -> dict[str, Any]:
        return {
            "name": "bindu-reference",
            "description": "In-memory Bindu reference agent of the conformance suite.",
            "version": "1.0.0",
            "protocolVersion": "0.3.0",
            "did": self.agent_did,
            "url": base_url,
            "defaultInputModes": list(self.input_modes),
            "defaultOutputModes": list(self.output_modes),
            "capabilities": {
                "streaming": self.streaming_enabled(),
                "pushNotifications": False,
                "stateTransitionHistory": True,
            },
            "skills": [self.skill_summary(s) for s in self.skills()],
            "extensions": [{"name": "DID", "version": "1.0.0",
                            "description": "Ed25519-backed cryptographic identity"}]
            + ([{"name": "x402", "version": "1", "description": "Paid agent: x402 payments"}]
               if self.config.paid else []),
        }

    def root_get(self, request: Request, body: bytes) -> Response:
        return RedirectResponse("/.well-known/agent.json", status_code=302)

    def root(self, request: Request, body: bytes) -> Response:
        return self.root_get(request, body) if request.method in ("GET", "HEAD") else self.rpc(request, body)

    def card_get(self, request: Request, body: bytes) -> Response:
        return JSONResponse(self.agent_card(str(request.base_url)))

    def card_options(self, request: Request, body: bytes) -> Response:
        headers = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS"}
        return Response(status_code=204, headers=headers)

    def card(self, request: Request, body: bytes) -> Response:
        if request.method == "OPTIONS":
            return self.card_options(request, body)
        return self.card_get(request, body)  # Starlette drops the body of a HEAD

    def skill_not_found(self, skill_id: str) -> Response:
        err = self.catalog["SkillNotFound"]
        return json_error(err.http_status, f"Skill '{skill_id}' not found", code=err.code)

    def find_skill(self, skill_id: str) -> dict[str, Any] | None:
        return next((s for s in self.skills() if s["id"] == skill_id), None)

    def skills_list(self, request: Request, body: bytes) -> Response:
        return JSONResponse([self.skill_summary(s) for s in self.skills()])

    def skill_detail(self, request: Request, body: bytes) -> Response:
        skill = self.find_skill(request.path_params["skill_id"])
        return JSONResponse(skill) if skill else self.skill_not_found(request.path_params["skill_id"])

    def skill_documentation(self, request: Request, body: bytes) -> Response:
        skill = self.find_skill(request.path_params["skill_id"])
        if skill is None:
            return self.skill_not_found(request.path_params["skill_id"])
        doc = (f"---\nname: {skill['name']}\nversion: {skill['version']}\n---\n"
               f"# {skill['name']}\n\n{skill['description']}\n")
        return Response(doc, media_type="text/markdown")

    # ------------------------------------------------------------------ DID resolution

    def did_document(self, did: str) -> dict[str, Any] | None:
        if did != self.agent_did:
            return None
        method = {
            "id": f"{did}#key-1",
            "type": "Ed25519VerificationKey2020",
            "controller": did,
            "publicKeyBase58": self.agent_public_key,
        }
        return {
            "@context": ["https://www.w3.org/ns/did/v1", "https://getbindu.com/ns/v1"],
            "id": did,
            "created": iso(self.created),
            "authentication": [method],
            "verificationMethod": [method],
        }

    def resolve(self, query: Any) -> Response:
        """Validate ``{"did": ...}`` against the spec's request schema, then look it up."""
        schema = schema_at(self.profile.spec,
                           "/paths/~1did~1resolve/post/requestBody/content/application~1json/schema")
        if not isinstance(query, dict) or not validator_for(schema).is_valid(query):
            return json_error(400, "Missing or malformed 'did'")
        document = self.did_document(query["did"])
        return JSONResponse(document) if document else json_error(404, "DID not found")

    def did_resolve_get(self, request: Request, body: bytes) -> Response:
        return self.resolve({"did": request.query_params["did"]} if "did" in request.query_params else {})

    def did_resolve_post(self, request: Request, body: bytes) -> Response:
        try:
            return self.resolve(json.loads(body))
        except ValueError:
            return json_error(400, "Body is not JSON")

    def did_resolve(self, request: Request, body: bytes) -> Response:
        if request.method == "POST":
            return self.did_resolve_post(request, body)
        return self.did_resolve_get(request, body)

    # ------------------------------------------------------------------ negotiation

    def negotiation_factors(self, req: dict[str, Any]) -> tuple[dict[str, float], list[str]]:
        """Each factor in [0, 1] with a one-line reason."""
        text = req["task_summary"] + " " + req.get("task_details", "")
        words = set(re.findall(r"[a-z0-9]+", text.lower()))
        keywords = {w for s in self.skills()
                    for w in [*s["tags"], *re.findall(r"[a-z0-9]+", s["name"].lower())]}
        matched = sorted(words & keywords)
        inputs = req.get("input_mime_types") or []
        outputs = req.get("output_mime_types") or []
        outputs_ok = not outputs or set(outputs) & set(self.output_modes)
        io_ok = all(m in self.input_modes for m in inputs) and outputs_ok
        active = sum(1 for t in self.tasks.values() if t.state not in TERMINAL_STATES)
        factors = {
            "skill_match": 1.0 if matched else 0.2,
            "io_compatibility": 1.0 if io_ok else 0.0,
            "performance": 1.0 if req.get("max_latency_ms", 1000) >= 1000 else 0.5,
            "load": max(0.0, 1.0 - active / 100),
            "cost": 1.0,
        }
        reasons = [
            (f"Skill keywords matched: {', '.join(matched)}" if matched
             else "No skill keyword matches the task"),
            "Input/output MIME types within declared modes" if io_ok else "MIME types outside declared modes",
            f"{active} active tasks",
        ]
        return factors, reasons

    def negotiation_score(self, req: dict[str, Any]) -> float:
        factors, _ = self.negotiation_factors(req)
        score = sum(float(req["weights"].get(name, 0)) * value for name, value in factors.items())
        if req.get("required_tools"):
            score = 0.0  # this agent has no tools
        return round(min(1.0, max(0.0, score)), 4)

    def negotiate(self, request: Request, body: bytes) -> Response:
        try:
            req = json.loads(body)
        except ValueError:
            return json_error(400, "Body is not JSON")
        if not validator_for(self.spec_schema("NegotiationRequest")).is_valid(req):
            return json_error(400, "Body is not a NegotiationRequest")
        score = self.negotiation_score(req)
        _, reasons = self.negotiation_factors(req)
        return JSONResponse(
            {
                "can_handle": score >= req.get("min_score", 0.5),
                "score": score,
                "reasons": reasons,
                "estimated_latency_ms": 1000,
                "estimated_cost_amount": "0",
            }
        )

    # ------------------------------------------------------------------ payments

    def payments_enabled(self) -> bool:
        return self.config.paid

    def payment_view(self, session: PaymentSession, base_url: str) -> dict[str, Any]:
        expired = session.status == "pending" and self.now() > session.expires_at
        status = "expired" if expired else session.status
        return {
            "session_id": session.id,
            "status": status,
            "amount": "0.01",
            "asset": "USDC",
            "network": "base-sepolia",
            "pay_to": "0x" + hashlib.sha256(self.agent_did.encode()).hexdigest()[:40],
            "created_at": iso(session.created_at),
            "expires_at": iso(session.expires_at),
            "capture_url": f"{base_url}payment-capture?session_id={session.id}",
        }

    def start_payment(self, request: Request, body: bytes) -> Response:
        if not self.payments_enabled():
            return json_error(404, "This agent does not take payments")
        now = self.now()
        ttl = self.limit("payment_session_ttl_s")
        session = PaymentSession("ps_" + self.new_id().replace("-", ""), "pending", now, now + ttl)
        self.payments[session.id] = session
        return JSONResponse(self.payment_view(session, str(request.base_url)))

    def payment_status(self, request: Request, body: bytes) -> Response:
        session = self.payments.get(request.path_params["session_id"]) if self.payments_enabled() else None
        if session is None:
            return json_error(404, "Payment session not found")
        return JSONResponse(self.payment_view(session, str(request.base_url)))

    def payment_capture(self, request: Request, body: bytes) -> Response:
        if not self.payments_enabled():
            return json_error(404, "This agent does not take payments")
        session = self.payments.get(request.query_params.get("session_id", ""))
        if session is None:
            return json_error(404, "Payment session not found")
        return HTMLResponse(f"<html><body><h1>Pay session {session.id}</h1></body></html>")

    # ------------------------------------------------------------------ operations

    def health(self, request: Request, body: bytes) -> Response:
        healthy = all(v == "ok" for v in self.health_checks.values())
        doc = {"status": "healthy" if healthy else "degraded", "checks": dict(self.health_checks),
               "timestamp": iso(self.now())}
        return JSONResponse(doc, status_code=200 if healthy else 503)

    def metrics_text(self) -> str:
        lines = ["# HELP http_requests_total Total HTTP requests.", "# TYPE http_requests_total counter"]
        for (method, path, status), count in sorted(self.request_counts.items()):
            label = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")  # Prometheus escaping
            lines.append(f'http_requests_total{{method="{method}",path="{label}",status="{status}"}} {count}')
        lines += ["# HELP http_request_duration_seconds Request latency.",
                  "# TYPE http_request_duration_seconds histogram"]
        total = sum(self.request_counts.values())
        lines += [f'http_request_duration_seconds_bucket{{le="+Inf"}} {total}',
                  "http_request_duration_seconds_sum 0", f"http_request_duration_seconds_count {total}"]
        lines += ["# HELP agent_tasks_active Active tasks by state.", "# TYPE agent_tasks_active gauge"]
        active = Counter(t.state for t in self.tasks.values() if t.state not in TERMINAL_STATES)
        for state in ("submitted", "working", "input-required", "auth-required"):
            lines.append(f'agent_tasks_active{{state="{state}"}} {active[state]}')
        lines += ["# HELP agent_tasks_completed_total Lifetime terminal tasks by state.",
                  "# TYPE agent_tasks_completed_total counter"]
        for state in sorted(TERMINAL_STATES):
            lines.append(f'agent_tasks_completed_total{{state="{state}"}} {self.completed_counts[state]}')
        lines += ["# HELP agent_llm_tokens_total LLM tokens used (the echo agent uses none).",
                  "# TYPE agent_llm_tokens_total counter",
                  'agent_llm_tokens_total{direction="input",model="echo"} 0',
                  'agent_llm_tokens_total{direction="output",model="echo"} 0']
        return "\n".join(lines) + "\n"

    def metrics(self, request: Request, body: bytes) -> Response:
        return Response(self.metrics_text(), media_type="text/plain; version=0.0.4")

    # ------------------------------------------------------------------ control

    # POST /_control/<action> (the base's control()): the hooks a test needs to reach every state

    def control_next_outcome(self, args: dict[str, Any]) -> Response:
        if args.get("state") not in OUTCOMES:
            return json_error(400, f"state must be one of {list(OUTCOMES)}")
        self.outcomes.append(args["state"])
        return JSONResponse({"ok": True, "queued": list(self.outcomes)})

    def control_next_agent_fault(self, args: dict[str, Any]) -> Response:
        """The agent's next run produces a malformed result (for -32006)."""
        if args.get("kind") != "malformed_result":
            return json_error(400, "kind must be 'malformed_result'")
        self.agent_faults.append(args["kind"])
        return JSONResponse({"ok": True})

    def control_set_state(self, args: dict[str, Any]) -> Response:
        task = self.tasks.get(str(args.get("task_id")))
        if task is None:
            return json_error(404, "task not found")
        if args.get("state") not in OUTCOMES and args.get("state") != "canceled":
            return json_error(400, "state is not a task state")
        if task.state in TERMINAL_STATES:
            return json_error(409, f"task is already terminal ({task.state})")
        self.apply_outcome(task, args["state"])
        return JSONResponse({"ok": True, "task": self.task_view(task)})

    def control_advance_clock(self, args: dict[str, Any]) -> Response:
        """Move the clock by ``seconds``, back as well as forward: a check that moved it
        forward puts it back (BINDU-STATUS-TIMESTAMP, before DID timestamps are compared
        with the caller's clock), so unlike the base's, negative seconds are taken."""
        seconds = args.get("seconds")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool):
            return json_error(400, "seconds must be a number")
        self.clock_offset += seconds
        return JSONResponse({"ok": True, "now": self.now()})

    def control_set_health(self, args: dict[str, Any]) -> Response:
        component, status = args.get("component"), args.get("status")
        if not isinstance(component, str) or not isinstance(status, str):
            return json_error(400, "component and status must be strings")
        if status != "ok" and not status.startswith("error"):
            return json_error(400, "status must be 'ok' or 'error: <reason>'")
        self.health_checks[component] = status
        return JSONResponse({"ok": True, "checks": dict(self.health_checks)})

    def reset(self) -> None:
        """Control ``reset``: no tasks, no contexts, nothing queued for the agent."""
        self.tasks.clear()
        self.contexts.clear()
        self.outcomes.clear()
        self.agent_faults.clear()

    # ------------------------------------------------------------------ routes

    def own_routes(self) -> list[BaseRoute]:
        e = self.body_endpoint
        return [
            Route("/", e("root"), methods=["GET", "POST"]),
            Route("/.well-known/agent.json", e("card"), methods=["GET", "HEAD", "OPTIONS"]),
            Route("/did/resolve", e("did_resolve"), methods=["GET", "POST"]),
            Route("/agent/skills", e("skills_list"), methods=["GET"]),
            Route("/agent/skills/{skill_id}", e("skill_detail"), methods=["GET"]),
            Route("/agent/skills/{skill_id}/documentation", e("skill_documentation"), methods=["GET"]),
            Route("/agent/negotiation", e("negotiate"), methods=["POST"]),
            Route("/api/start-payment-session", e("start_payment"), methods=["POST"]),
            Route("/api/payment-status/{session_id}", e("payment_status"), methods=["GET"]),
            Route("/payment-capture", e("payment_capture"), methods=["GET"]),
            Route("/health", e("health"), methods=["GET"]),
            Route("/metrics", e("metrics"), methods=["GET"]),
        ]


class MetricsMiddleware:
    """Counts every HTTP response by method, path and status for /metrics."""

    def __init__(self, app: ASGIApp, reference: BinduReference) -> None:
        self.app = app
        self.reference = reference

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            self.reference.count_request(scope["method"], scope["path"], status)


def create_app(profile: Profile, config: ReferenceConfig | None = None) -> Starlette:
    """The reference as an ASGI app, counting every response for /metrics;
    ``app.state.reference`` is the instance faults patch."""
    reference = BinduReference(profile, config)
    return reference.app([Middleware(MetricsMiddleware, reference=reference)])


__all__ = [
    "BinduReference",
    "Caller",
    "Context",
    "EventStream",
    "ReferenceConfig",
    "RpcError",
    "Task",
    "TokenInfo",
    "create_app",
    "default_tokens",
    "reference_credentials",
]
