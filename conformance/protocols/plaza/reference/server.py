"""The in-memory Agent Plaza reference site: an A2A 1.0 personal endpoint (JSON-RPC
``SendMessage``, ``GetTask``, ``ListTasks``, ``CancelTask``) with the site's friendship
extension: texts that open and carry friendships, the data commands of part 1 (durable
receive, status, discover, friends, conversation reads, message status, the inbox and
its mailbox attention, consent controls), the agent card and, when enabled, a control
interface (``/_control/<action>``).

What the document states (headers, methods, schemas, limits, the extension URI, the
mailbox attention groups and authority flags) is read from the spec and the profile;
what it leaves open (error codes, result shapes, consent states) is the profile's choice
(docs/agent-plaza.md, profiles/agent-plaza.yaml ``errors:``). Every behaviour is one
small method of ``PlazaReference`` so that a fault or a variant replaces exactly one.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from conformance.documents.schemas import resolve_pointer, validator_for
from conformance.kit.reference import Reference, let_others_in, strict_json
from conformance.model import ErrorCode, Profile
from conformance.protocols.a2a import wire
from conformance.protocols.a2a.names import (
    CANCELED,
    COMPLETED,
    EXTENSIONS_HEADER,
    SUBMITTED,
    VERSION_HEADER,
    WORKING,
)
from conformance.protocols.plaza.reference.continuation import ContinuationPart
from conformance.protocols.plaza.reference.groups import GroupsPart
from conformance.protocols.plaza.reference.private import PrivateRelayPart
from conformance.protocols.plaza.site import (  # noqa: F401
    # the site's names, re-exported for faults and variants
    ACCOUNT_AGENT,
    ACTIVE,
    BLOCKED,
    CANCEL_TASK_SCHEMA,
    CLOSED,
    COMMAND_SCOPES,
    CONNECTIONS_READ,
    CONNECTIONS_WRITE,
    CONTEXT_CONSUMED,
    CREDENTIAL_LABELS,
    DEADLINE_EXCEEDED,
    DECISION_OPTIONS,
    DECLINED,
    DISCOVER_PAGE_DEFAULT,
    EPOCH,
    ERROR_NAMES,
    EXTENDED_CARD_NOT_CONFIGURED,
    EXTENSION_REQUIRED,
    EXTERNAL_GROUP,
    FIRST_CONTACT_SCOPE,
    FORBIDDEN,
    FRIEND_CHANNEL_CHANGE,
    FRIEND_INVITATION,
    FRIEND_MESSAGE,
    FRIENDS_PAGE,
    INVALID_PARAMETERS,
    INVALID_REQUEST,
    INVALID_STATE,
    INVITATION,
    LIST_TASKS_PAGE_DEFAULT,
    LIST_TASKS_PAGE_MAXIMUM,
    LIST_TASKS_SCHEMA,
    MEDIA_JSON,
    MEDIA_TEXT,
    MESSAGES_READ,
    MESSAGES_WRITE,
    METHOD_NOT_FOUND,
    METHOD_SCOPES,
    NOT_FOUND,
    NOT_PERMITTED,
    OPEN_STATES,
    OWNER,
    OWNER_OF,
    PARSE_ERROR,
    PEOPLE_READ,
    PUSH_CONFIG_KEY,
    PUSH_NOT_SUPPORTED,
    READ_SCOPES,
    READER_OF,
    RECIPIENT_FIELD,
    REFUSED_METHODS,
    REMOVED,
    RFC3339,
    SEED_AGENTS_MAXIMUM,
    SEEDED_VISITORS,
    SENDER_KIND,
    SITE_NAME,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TERMINAL_TASK_STATES,
    TEXT_SCOPE,
    UNAUTHENTICATED,
    UNSUPPORTED_HTTP_STATUS,
    UNSUPPORTED_OPERATION,
    VERSION_NOT_SUPPORTED,
    VISITOR,
    WAIT_STEP_S,
    WELL_KNOWN_CARD,
    Call,
    Issue,
    Pending,
    Principal,
    ReferenceConfig,
    RpcError,
    SiteError,
    Validators,
    Wait,
    days_from_civil,
    derived_token,
    derived_uuid,
    dotted,
    fingerprint,
    iso,
    owner_token,
    parse_ms,
    reader_token,
    reference_credentials,
    seeded_visitor,
    valid_request_id,
)

PARTS = ("groups", "private", "continuation")  # each a part_<name>.py mixin with reset_<name>
# the validators compiled from a document, by the id of the document they were compiled from
_COMPILED: dict[int, tuple[dict[str, Any], Validators]] = {}


class PlazaReference(GroupsPart, PrivateRelayPart, ContinuationPart, Reference):
    """State and behaviour of the reference site. All mutable state lives in ``self.s``
    (plain JSON) so that ``digest`` covers it whole, the clock control moved included."""

    def __init__(self, profile: Profile, config: ReferenceConfig | None = None) -> None:
        self.s: dict[str, Any] = {}  # the state holds the clock offset the base sets
        super().__init__(profile, config or ReferenceConfig())
        self.spec = profile.spec
        self.errors: dict[str, ErrorCode] = {row.name: row for row in profile.errors.values()}
        self.ext: str = self.spec["requiredHeaders"][EXTENSIONS_HEADER]
        self.version: str = str(self.spec["requiredHeaders"][VERSION_HEADER])
        self.media_type: str = self.spec["requiredHeaders"]["Content-Type"]
        self.request_role: str = self.spec["wireFormat"]["requestRole"]
        self.response_role: str = self.spec["wireFormat"]["responseRole"]
        self.methods: list[str] = list(self.spec["methods"])
        self.evidence: dict[str, Any] = self.spec["durableReceive"]["private_chat"]["message_evidence"]
        self.attention_spec: dict[str, Any] = self.spec["mailboxAttention"]
        self.domain = urlparse(self.spec["endpoint"]).hostname or ""
        self.endpoint_path = urlparse(self.spec["endpoint"]).path
        self.card_path = urlparse(self.spec["agentCard"]).path
        account = self.spec["identity"]["profiles"]["accountAgent"]
        self.supported_scopes: list[str] = list(account["supportedScopes"])
        self.branches: dict[str, dict[str, Any]] = self.command_branches()
        self.validators = self.build_validators()
        self.seq_maximum = self.exact_limit("seq_maximum_count")
        self.lock = threading.RLock()
        self.minted = 0
        self.deadline_s: float = self.served_deadline()
        self.check_document()
        self.reset()

    # ------------------------------------------------------------------ start

    def command_branches(self) -> dict[str, dict[str, Any]]:
        """The data command schemas (profile ``commands:``), by their operation const."""
        settings = self.profile.settings["commands"]
        branches = resolve_pointer(self.spec, settings["pointer"])
        return {resolve_pointer(b, settings["name"]): b for b in branches}

    def method_schema(self, method: str) -> dict[str, Any]:
        """The params schema the profile names for a method (``methods.params``)."""
        pointer = (self.profile.settings.get("methods") or {}).get("params", {}).get(method)
        return dict(resolve_pointer(self.spec, pointer)) if pointer else {"type": "object"}

    def build_validators(self) -> Validators:
        """Compile once per document (every run makes a reference, a selftest hundreds): SendMessage
        without its part union (a part and its data command are validated against the one
        branch they name, so an anyOf failure never hides the cause). Each instance gets its
        own maps (a fault replaces a command's validator on its instance only)."""
        cached = _COMPILED.get(id(self.spec))
        if cached is None or cached[0] is not self.spec:
            cached = _COMPILED[id(self.spec)] = (self.spec, self.compile_validators())
        shared = cached[1]
        return Validators(send_shell=shared.send_shell, text_part=shared.text_part,
                          data_part_shell=shared.data_part_shell, commands=dict(shared.commands),
                          methods=dict(shared.methods))

    def compile_validators(self) -> Validators:
        send = copy.deepcopy(self.method_schema("SendMessage"))
        parts = send["properties"]["message"]["properties"]["parts"]
        part_branches = parts["items"]["anyOf"]
        parts["items"] = {}
        text_part = next(b for b in part_branches if "text" in b.get("required", []))
        data_part = copy.deepcopy(next(b for b in part_branches if "data" in b.get("required", [])))
        data_part["properties"]["data"] = {}
        return Validators(
            send_shell=validator_for(send), text_part=validator_for(text_part),
            data_part_shell=validator_for(data_part),
            commands={name: validator_for(schema) for name, schema in self.branches.items()},
            methods={"GetTask": validator_for(self.method_schema("GetTask")),
                     "ListTasks": validator_for(LIST_TASKS_SCHEMA),
                     "CancelTask": validator_for(CANCEL_TASK_SCHEMA)},
        )

    def check_document(self) -> None:
        """Fail at start, not mid-run, when the document no longer matches what the code assumes."""
        if set(self.methods) != set(self.rpc_handlers()):
            raise ValueError(f"/methods is {self.methods}, the reference serves "
                             f"{sorted(self.rpc_handlers())}")
        missing = [n for n in self.command_scopes
                   if n not in self.branches or not callable(getattr(self, f"cmd_{n}", None))]
        if missing:
            raise ValueError("commands the reference serves are not branches of the document (or lack a "
                             f"handler): {missing}")
        unknown_scopes = {*self.command_scopes.values(), *METHOD_SCOPES.values(), TEXT_SCOPE,
                          FIRST_CONTACT_SCOPE} - set(self.supported_scopes)
        if unknown_scopes:
            raise ValueError(f"supportedScopes no longer lists {sorted(unknown_scopes)}")
        absent = [name for name in ERROR_NAMES if name not in self.errors]
        if absent:
            raise ValueError(f"the profile's errors: block lacks {absent}")
        work = set(self.spec["durableReceive"]["supported_work"])
        if not {FRIEND_INVITATION, FRIEND_MESSAGE, FRIEND_CHANNEL_CHANGE} <= work:
            raise ValueError("durableReceive.supported_work no longer lists the friend work kinds")
        if EXTERNAL_GROUP not in self.attention_spec["groups"]:
            raise ValueError(f"mailboxAttention.groups no longer lists {EXTERNAL_GROUP}")
        decisions = self.branches["respond"]["properties"]["decision"]["enum"]
        if not set(DECISION_OPTIONS) <= set(decisions):
            raise ValueError(f"respond decisions are {decisions}")

    # ------------------------------------------------------------------ basics

    def exact_limit(self, name: str) -> int:
        """A limit as an exact integer. conformance.documents.limits reads numbers through float,
        which rounds integers past 2**53 (seq_maximum_count); re-read the stated digits."""
        entry = (self.profile.settings.get("limits") or {}).get(name) or {}
        if "pointer" in entry and "pattern" in entry:
            text = resolve_pointer(self.spec, entry["pointer"])
            match = re.search(str(entry["pattern"]), str(text))
            if match is not None:
                return int(match.group(1))
        return self.limit(name)

    @property
    def clock_offset(self) -> float:
        """Seconds control moved the clock forward (the base's ``advance_clock``), kept in the
        state as whole milliseconds: a reset clears it and the snapshot covers it."""
        return int(self.s.get("clock_offset_ms", 0)) / 1000

    @clock_offset.setter
    def clock_offset(self, seconds: float) -> None:
        self.s["clock_offset_ms"] = round(seconds * 1000)

    def now_ms(self) -> int:
        """The site's clock in milliseconds: the configured one plus the offset, added exactly."""
        return int(self.config.clock() * 1000) + int(self.s.get("clock_offset_ms", 0))

    def new_bytes(self, size: int) -> bytes:
        """Fresh random bytes; reproducible from the seed when one is set."""
        self.minted += 1
        if self.config.seed is None:
            return secrets.token_bytes(size)
        out = b""
        while len(out) < size:
            out += hashlib.sha256(f"{self.config.seed}:{self.minted}:{len(out)}".encode()).digest()
        return out[:size]

    def new_uuid(self) -> str:
        return str(uuid.UUID(bytes=self.new_bytes(16), version=4))

    def served_deadline(self) -> float:
        """The document's deadline, or the one this site was configured with."""
        configured = getattr(self.config, "deadline_s", None)
        return float(self.limit("deadline_s") if configured is None else configured)

    def new_receipt(self) -> str:
        """43 base64url characters (32 bytes), the receive_ack receipt pattern."""
        return base64.urlsafe_b64encode(self.new_bytes(32)).decode().rstrip("=")

    def digest(self) -> str:
        """A hash of the whole stored state (control ``snapshot``)."""
        return hashlib.sha256(json.dumps(self.s, sort_keys=True, default=str).encode()).hexdigest()

    def reset(self) -> None:
        """A fresh site: the seeded visitors and credentials, nothing else; default deadline."""
        self.minted = 0
        self.deadline_s = self.served_deadline()
        self.s = {"visitors": {}, "tokens": {}, "connections": {}, "tasks": {}, "message_ids": {}, "logs": {},
                  "receivers": {}, "notices": {}, "notice_seq": 0, "task_seq": 0, "visitor_seq": 0}
        for label, (alias, interests) in SEEDED_VISITORS.items():
            visitor_id, token = seeded_visitor(label)
            self.add_visitor(alias, interests, visitor_id=visitor_id, token=token)
        self.s["tokens"][reader_token()] = {"visitor_id": seeded_visitor(READER_OF)[0],
                                            "scopes": list(READ_SCOPES),
                                            "kind": ACCOUNT_AGENT}
        self.s["tokens"][owner_token()] = {"visitor_id": seeded_visitor(OWNER_OF)[0], "scopes": [],
                                           "kind": OWNER}
        for part in PARTS:
            getattr(self, f"reset_{part}")()

    @property
    def command_scopes(self) -> dict[str, str]:
        """Each served command and the scope it needs: part 1's and every part's."""
        return {**COMMAND_SCOPES, **GroupsPart.PART_COMMANDS, **PrivateRelayPart.PART_COMMANDS,
                **ContinuationPart.PART_COMMANDS}

    # ------------------------------------------------------------------ visitors

    def add_visitor(self, alias: str, interests: list[str], *, visitor_id: str | None = None,
                    token: str | None = None) -> tuple[dict[str, Any], str]:
        """A public visitor with every supported scope, and its token."""
        self.s["visitor_seq"] += 1
        visitor = {"id": visitor_id or self.new_uuid(), "alias": alias, "interests": list(interests),
                   "stopped": False,
                   "order": self.s["visitor_seq"]}
        token = token or derived_token(f"minted:{visitor['id']}")
        self.s["visitors"][visitor["id"]] = visitor
        self.s["tokens"][token] = {"visitor_id": visitor["id"], "scopes": list(self.supported_scopes),
                                   "kind": VISITOR}
        return visitor, token

    def visitor(self, visitor_id: str) -> dict[str, Any]:
        visitor: dict[str, Any] = self.s["visitors"][visitor_id]
        return visitor

    def person(self, visitor_id: str) -> dict[str, Any]:
        """The public ``{id, alias}`` of a visitor."""
        return {"id": visitor_id, "alias": self.visitor(visitor_id)["alias"]}

    # ------------------------------------------------------------------ authentication and scopes

    def bearer_token(self, headers: Mapping[str, str]) -> str | None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return (token.strip() or None) if scheme.lower() == "bearer" else None

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """The token's principal; UNAUTHENTICATED for none or an unknown one, FORBIDDEN for
        an owner account's credential (ownerAccountCredentialAccepted: false)."""
        token = self.bearer_token(headers)
        record = self.s["tokens"].get(token) if token else None
        if record is None or record["visitor_id"] not in self.s["visitors"]:
            raise SiteError(UNAUTHENTICATED, "a bearer token the site issued is required")
        if record["kind"] == OWNER:
            raise SiteError(FORBIDDEN,
                            "an owner account's credential is not accepted here; use an Agent credential")
        return Principal(record["visitor_id"], frozenset(record["scopes"]), record["kind"])

    def require_scope(self, principal: Principal, scope: str) -> None:
        if scope not in principal.scopes:
            raise SiteError(FORBIDDEN, f"the credential lacks the {scope} scope", {"requiredScope": scope})

    def require_not_stopped(self, visitor_id: str) -> None:
        """A stopped agent sends nothing until its owner resumes it."""
        if self.visitor(visitor_id)["stopped"]:
            raise SiteError(NOT_PERMITTED, "this agent is stopped; its owner must resume it")

    # ------------------------------------------------------------------ headers and envelope

    def check_content_type(self, headers: Mapping[str, str]) -> None:
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != self.media_type.lower():
            raise SiteError(INVALID_REQUEST, f"Content-Type must be {self.media_type}",
                            status=UNSUPPORTED_HTTP_STATUS)

    def check_version(self, headers: Mapping[str, str]) -> None:
        if headers.get(VERSION_HEADER.lower(), "").strip() != self.version:
            raise SiteError(VERSION_NOT_SUPPORTED, f"A2A-Version must be {self.version}",
                            {"supportedVersions": self.version})

    def check_extensions(self, headers: Mapping[str, str]) -> None:
        named = [uri.strip() for uri in headers.get(EXTENSIONS_HEADER.lower(), "").split(",")]
        if self.ext not in named:
            raise SiteError(EXTENSION_REQUIRED, "A2A-Extensions must name the friendship extension",
                            {"requiredExtension": self.ext})

    def parse_body(self, raw: bytes) -> Any:
        try:
            return strict_json(raw)
        except (ValueError, RecursionError) as exc:
            raise SiteError(PARSE_ERROR, "Parse error") from exc

    def request_id_of(self, raw: bytes) -> Any:
        """The id of a body, when it has a valid one (for answers refused before the envelope)."""
        try:
            body = strict_json(raw)
        except (ValueError, RecursionError):
            return None
        rid = body.get("id") if isinstance(body, dict) else None
        return rid if valid_request_id(rid) else None

    def envelope(self, body: Any) -> tuple[Any, str, Any]:
        """(id, method, params) of one JSON-RPC 2.0 request with an id (requestIdRequired)."""
        if not isinstance(body, dict) or body.get("jsonrpc") != self.spec["wireFormat"]["jsonrpc"]:
            raise SiteError(INVALID_REQUEST, "not a JSON-RPC 2.0 request object")
        if "id" not in body or not valid_request_id(body["id"]):
            raise SiteError(INVALID_REQUEST, "a string or number id is required")
        if not isinstance(body.get("method"), str):
            raise SiteError(INVALID_REQUEST, "method must be a string")
        return body["id"], body["method"], body.get("params")

    def check_method(self, method: str) -> None:
        if method in self.rpc_handlers():
            return
        if method in REFUSED_METHODS:
            raise SiteError(REFUSED_METHODS[method], f"{method} is not supported by this endpoint")
        raise SiteError(METHOD_NOT_FOUND, "Method not found")

    # ------------------------------------------------------------------ params validation

    def schema_issues(self, validator: Any, instance: Any, base: str) -> list[Issue]:
        """Issues of one compiled schema, in a stable order, with paths from ``base``."""
        errors = sorted(validator.iter_errors(instance),
                        key=lambda e: ([str(p) for p in e.absolute_path], e.validator))
        return [issue for error in errors for issue in self.error_issues(error, base)]

    def error_issues(self, error: Any, base: str) -> list[Issue]:
        """Safe issues of one jsonschema error: an unknown key at its parent, a missing
        declared key at its own path, an anyOf narrowed to the one branch of the right type."""
        path = dotted(base, error.absolute_path)
        if error.validator == "additionalProperties":
            return [Issue(path, "additional_property")]
        if error.validator == "required":
            present = error.instance if isinstance(error.instance, dict) else {}
            return [Issue(dotted(path, [name]), "required")
                    for name in error.validator_value if name not in present]
        if error.validator in ("anyOf", "oneOf"):
            branch = self.typed_branch(error)
            if branch is not None:
                return [issue for sub in branch for issue in self.error_issues(sub, base)]
        return [Issue(path, str(error.validator))]

    def typed_branch(self, error: Any) -> list[Any] | None:
        """The errors of the only union branch whose type matches the value, if exactly one does."""
        by_branch: dict[Any, list[Any]] = {}
        for sub in error.context or []:
            by_branch.setdefault(sub.relative_schema_path[0], []).append(sub)
        typed = [subs for subs in by_branch.values()
                 if not any(s.validator == "type" and not s.relative_path for s in subs)]
        return typed[0] if len(typed) == 1 else None

    def command_issues(self, data: Any, base: str) -> list[Issue]:
        """A data command against the branch its ``operation`` names (enum when none does)."""
        if not isinstance(data, dict):
            return [Issue(base, "type")]
        operation = data.get("operation")
        validator = self.validators.commands.get(operation) if isinstance(operation, str) else None
        if validator is None:
            return [Issue(f"{base}.operation", "enum")]
        return self.schema_issues(validator, data, base)

    def part_issues(self, part: Any, base: str) -> list[Issue]:
        """A part against the branch it names: data when it has ``data``, text otherwise."""
        if not isinstance(part, dict):
            return [Issue(base, "type")]
        if "data" in part:
            return (self.schema_issues(self.validators.data_part_shell, part, base)
                    + self.command_issues(part["data"], f"{base}.data"))
        return self.schema_issues(self.validators.text_part, part, base)

    def send_issues(self, params: Any) -> list[Issue]:
        issues = self.schema_issues(self.validators.send_shell, params, "params")
        message = params.get("message") if isinstance(params, dict) else None
        parts = message.get("parts") if isinstance(message, dict) else None
        if isinstance(parts, list):
            for index, part in enumerate(parts):
                issues += self.part_issues(part, f"params.message.parts[{index}]")
        if not issues and isinstance(message, dict):
            issues = self.send_semantic_issues(message)
        return issues

    def send_semantic_issues(self, message: dict[str, Any]) -> list[Issue]:
        """What the schema cannot say: one text target, a matching contextId, seq bounds."""
        part = message["parts"][0]
        if "text" in part:
            return self.text_target_issues(message)
        data = part["data"]
        issues: list[Issue] = self.continuation_route_issues(message, data)
        if "connection_id" in data and "contextId" in message \
                and message["contextId"] != data["connection_id"]:
            issues.append(Issue("params.message.contextId", "const"))
        return (issues + self.command_semantic_issues(data, "params.message.parts[0].data")
                + self.group_routing_issues(message, data))

    def text_target_issues(self, message: dict[str, Any]) -> list[Issue]:
        """A text names exactly one of message.contextId and metadata[EXT].recipientId."""
        metadata = message.get("metadata", {})
        ext = metadata.get(self.ext) if isinstance(metadata, dict) else None
        if ext is not None and (not isinstance(ext, dict)
                                or not isinstance(ext.get(RECIPIENT_FIELD, ""), str)):
            return [Issue("params.message.metadata", "type")]
        has_recipient = isinstance(ext, dict) and RECIPIENT_FIELD in ext
        has_context = "contextId" in message
        if has_recipient and has_context:
            return [Issue("params.message", "oneOf")]
        if not has_recipient and not has_context:
            return [Issue("params.message.contextId", "required")]
        return []

    def command_semantic_issues(self, data: dict[str, Any], base: str) -> list[Issue]:
        issues: list[Issue] = []
        operation = data["operation"]
        if operation == "read_conversation":
            if "after_seq" in data and "before_seq" in data:
                issues.append(Issue(f"{base}.before_seq", "not"))
            for key in ("after_seq", "before_seq"):
                if isinstance(data.get(key), str) and int(data[key]) > self.seq_maximum:
                    issues.append(Issue(f"{base}.{key}", "maximum"))
        return issues

    def params_issues(self, method: str, params: Any) -> list[Issue]:
        if params is None:
            return [Issue("params", "required")]
        if method == "SendMessage":
            return self.send_issues(params)
        return self.schema_issues(self.validators.methods[method], params, "params")

    def invalid_params(self, method: str, issues: list[Issue]) -> SiteError:
        """-32602 with the document's ErrorInfo: string metadata, a bounded JSON list of
        {path, code}, and on a SendMessage the two "nothing was sent" flags."""
        unique = list(dict.fromkeys(issues))[: self.limit("validation_issues_count")]
        metadata = {"version": self.spec["parameterValidation"]["version"],
                    "validationIssues": json.dumps([i.to_json() for i in unique], separators=(",", ":"))}
        if method == "SendMessage":
            metadata.update(messageSent="false", sendHandleConsumedByThisRequest="false")
        return SiteError(INVALID_PARAMETERS, "Invalid parameters", metadata)

    def validate_params(self, method: str, params: Any) -> dict[str, Any]:
        issues = self.params_issues(method, params)
        if issues:
            raise self.invalid_params(method, issues)
        assert isinstance(params, dict)
        return params

    # ------------------------------------------------------------------ errors and answers

    def rpc_error(self, err: SiteError) -> RpcError:
        row = self.errors[err.name]
        info = {"@type": self.spec["parameterValidation"]["detailType"], "reason": err.name,
                "domain": self.domain,
                "metadata": {k: str(v) for k, v in err.metadata.items()}}
        return RpcError(int(row.code), err.message, [info], err.status or row.http_status)

    def error_response(self, request_id: Any, err: SiteError) -> Response:
        rpc = self.rpc_error(err)
        body = wire.response(request_id, error={"code": rpc.code, "message": rpc.message, "data": rpc.data})
        return JSONResponse(body, status_code=rpc.status)

    def result_response(self, request_id: Any, result: Any) -> Response:
        return JSONResponse(wire.response(request_id, result))

    # ------------------------------------------------------------------ connections

    def connections_of(self, visitor_id: str) -> list[dict[str, Any]]:
        return [c for c in self.s["connections"].values() if visitor_id in (c["inviter"], c["invitee"])]

    def peer_of(self, conn: dict[str, Any], visitor_id: str) -> str:
        return str(conn["invitee"] if conn["inviter"] == visitor_id else conn["inviter"])

    def participant_connection(self, visitor_id: str, connection_id: Any) -> dict[str, Any]:
        """The connection when the caller takes part; NOT_FOUND (same text) for missing and foreign."""
        conn = self.s["connections"].get(connection_id) if isinstance(connection_id, str) else None
        if conn is None or visitor_id not in (conn["inviter"], conn["invitee"]):
            raise SiteError(NOT_FOUND, "no such connection")
        found: dict[str, Any] = conn
        return found

    def pair_connection(self, a: str, b: str) -> dict[str, Any] | None:
        """The newest connection between two visitors, if any."""
        pair = [c for c in self.s["connections"].values() if {c["inviter"], c["invitee"]} == {a, b}]
        return max(pair, key=lambda c: c["order"]) if pair else None

    def connection_view(self, conn: dict[str, Any]) -> dict[str, Any]:
        return {"connection_id": conn["id"], "state": conn["state"], "round_no": conn["round_no"]}

    def touch(self, conn: dict[str, Any]) -> None:
        conn["updated_at"] = self.now_ms()

    def check_can_invite(self, sender_id: str, recipient_id: str) -> None:
        """A first contact needs no open, pending or blocked connection between the pair."""
        if sender_id == recipient_id:
            raise SiteError(NOT_PERMITTED, "an agent cannot invite itself")
        existing = self.pair_connection(sender_id, recipient_id)
        if existing is not None and existing["state"] == BLOCKED:
            raise SiteError(NOT_PERMITTED, "the connection is blocked")
        if existing is not None and existing["state"] == INVITATION:
            raise SiteError(NOT_PERMITTED, "an invitation between you is pending")
        if existing is not None and existing["state"] == ACTIVE:
            raise SiteError(NOT_PERMITTED, "you are already connected; send with message.contextId")

    def check_can_text(self, conn: dict[str, Any], visitor_id: str) -> None:
        """Only an active connection takes further texts, from either side."""
        if conn["state"] == INVITATION:
            raise SiteError(NOT_PERMITTED, "the invitation is pending; the invitee must accept it first")
        if conn["state"] != ACTIVE:
            raise SiteError(NOT_PERMITTED, f"the connection is {conn['state']}")

    def check_can_replay(self, conn: dict[str, Any], visitor_id: str) -> None:
        """A replay rechecks the controls: the connection must still be open (pending or active)."""
        if conn["state"] not in OPEN_STATES:
            raise SiteError(NOT_PERMITTED, f"the connection is {conn['state']}")

    def check_can_read(self, conn: dict[str, Any], visitor_id: str) -> None:
        """Reads are rechecked: a removed connection, or one the peer blocked, is not readable."""
        if conn["state"] == REMOVED:
            raise SiteError(NOT_PERMITTED, "the connection was removed")
        if conn["state"] == BLOCKED and conn["blocked_by"] != visitor_id:
            raise SiteError(NOT_PERMITTED, "the connection is blocked")

    def open_connection(self, inviter: str, invitee: str) -> dict[str, Any]:
        now = self.now_ms()
        conn = {"id": self.new_uuid(), "inviter": inviter, "invitee": invitee, "state": INVITATION,
                "round_no": 1,
                "round_open": True, "created_at": now, "updated_at": now, "last_seq": 0, "messages": [],
                "read_marks": {}, "blocked_by": None, "state_before_block": None,
                "order": len(self.s["connections"]) + 1}
        self.s["connections"][conn["id"]] = conn
        return conn

    def set_state(self, conn: dict[str, Any], state: str, actor: str, change: str) -> None:
        """A state change, a notice and a receive item for the other participant."""
        conn["state"] = state
        self.touch(conn)
        self.connection_event(conn, actor, change)

    # ------------------------------------------------------------------ messages

    def store_message(self, conn: dict[str, Any], sender: str, text: str,
                      client_message_id: str) -> dict[str, Any]:
        """Append a message (opening the next round when the last one was completed); the
        recipient gets a receive item."""
        if not conn["round_open"]:
            conn["round_no"] += 1
            conn["round_open"] = True
        conn["last_seq"] += 1
        msg = {"id": self.new_uuid(), "seq": conn["last_seq"], "created_at": self.now_ms(), "sender": sender,
               "text": text,
               "round_no": conn["round_no"], "client_message_id": client_message_id}
        conn["messages"].append(msg)
        self.touch(conn)
        kind = FRIEND_INVITATION if conn["state"] == INVITATION and msg["seq"] == 1 else FRIEND_MESSAGE
        self.log_work(self.peer_of(conn, sender), kind, conn, message_id=msg["id"], seq=str(msg["seq"]))
        if kind == FRIEND_INVITATION:
            self.add_notice(self.peer_of(conn, sender), kind, conn, "invited")
        return msg

    def message_evidence(self, msg: dict[str, Any], with_text: bool = False) -> dict[str, Any]:
        """M: the document's common evidence fields (durableReceive message_evidence)."""
        out = {"id": msg["id"], "seq": str(msg["seq"]), "created_at": iso(msg["created_at"]),
               "sender": msg["sender"],
               "sender_kind": SENDER_KIND, "record_type": self.evidence["message_record_type"]}
        if with_text:
            out["text"] = msg["text"]
        return out

    def receipt(self, msg: dict[str, Any], replay: bool = False) -> dict[str, Any]:
        """A send receipt; a replay says nothing new was stored and returns the original M."""
        out: dict[str, Any] = {"record_type": self.evidence["receipt_record_type"],
                               "message_sent": not replay}
        if replay:
            out["original_message_sent"] = True
        out["message"] = self.message_evidence(msg)
        return out

    def find_message(self, conn: dict[str, Any], message_id: str) -> dict[str, Any] | None:
        return next((m for m in conn["messages"] if m["id"] == message_id), None)

    def later_peer_messages(self, conn: dict[str, Any], msg: dict[str, Any]) -> list[dict[str, Any]]:
        """Messages of the other participant after ``msg`` in its round."""
        return [m for m in conn["messages"] if m["seq"] > msg["seq"] and m["sender"] != msg["sender"]
                and m["round_no"] == msg["round_no"]]

    def unread_count(self, conn: dict[str, Any], visitor_id: str) -> int:
        """Peer messages after the visitor's own latest message (reading changes nothing)."""
        own = [m["seq"] for m in conn["messages"] if m["sender"] == visitor_id]
        since = max(own, default=0)
        return sum(1 for m in conn["messages"] if m["sender"] != visitor_id and m["seq"] > since)

    def mark_retrieved(self, conn: dict[str, Any], visitor_id: str) -> None:
        """A successful read observes everything stored so far (message_status evidence)."""
        conn["read_marks"][visitor_id] = conn["last_seq"]

    # ------------------------------------------------------------------ receive log and notices

    def log_work(self, visitor_id: str, kind: str, conn: dict[str, Any], **extra: Any) -> None:
        """Append an item to the visitor's durable receive log."""
        item = {"event_id": self.new_uuid(), "kind": kind, "connection_id": conn["id"],
                "round_no": conn["round_no"],
                "created_at": self.now_ms(), **extra}
        self.s["logs"].setdefault(visitor_id, []).append(item)

    def add_notice(self, visitor_id: str, kind: str, conn: dict[str, Any], change: str) -> None:
        self.s["notice_seq"] += 1
        self.s["notices"].setdefault(visitor_id, []).append({
            "notice_id": str(self.s["notice_seq"]), "kind": kind, "change": change,
            "connection_id": conn["id"],
            "state": conn["state"], "round_no": conn["round_no"], "created_at": self.now_ms()})

    def connection_event(self, conn: dict[str, Any], actor: str, change: str) -> None:
        """A connection event affects the other participant: a notice and a receive item."""
        peer = self.peer_of(conn, actor)
        self.add_notice(peer, FRIEND_CHANNEL_CHANGE, conn, change)
        self.log_work(peer, FRIEND_CHANNEL_CHANGE, conn, change=change, state=conn["state"])

    def notice_view(self, notice: dict[str, Any]) -> dict[str, Any]:
        return {**notice, "created_at": iso(notice["created_at"])}

    # ------------------------------------------------------------------ native requests

    def read_request(self, connection_id: str, round_no: int) -> dict[str, Any]:
        """The native read_conversation request an attention or receive item points to."""
        return {"operation": "read_conversation", "connection_id": connection_id, "round_no": round_no}

    def a2a_request(self, data: dict[str, Any], context_id: str | None = None) -> dict[str, Any]:
        """A complete JSON-RPC SendMessage envelope carrying one native command, with a fresh messageId."""
        message: dict[str, Any] = {"messageId": self.new_uuid(), "role": self.request_role,
                                   "parts": [{"data": copy.deepcopy(data), "mediaType": MEDIA_JSON}]}
        if context_id is not None:
            message["contextId"] = context_id
        return wire.request("SendMessage", {"message": message, "configuration": {"returnImmediately": True}},
                            self.new_uuid())

    # ------------------------------------------------------------------ idempotency

    def message_id_key(self, visitor_id: str, message_id: str) -> str:
        return f"{visitor_id}|{message_id}"

    def used_message_id(self, visitor_id: str, message: dict[str, Any]) -> dict[str, Any] | None:
        """The earlier use of this messageId by this caller: None when fresh, the record
        when the same message comes again, CONTEXT_CONSUMED for another message."""
        record = self.s["message_ids"].get(self.message_id_key(visitor_id, message["messageId"]))
        if record is None:
            return None
        if record["fingerprint"] != fingerprint(message):
            raise SiteError(CONTEXT_CONSUMED,
                            "this messageId was already used with another message; nothing was sent")
        return dict(record)

    def remember_message_id(self, visitor_id: str, message: dict[str, Any], **record: Any) -> None:
        self.s["message_ids"][self.message_id_key(visitor_id, message["messageId"])] = {
            "fingerprint": fingerprint(message), **record}

    # ------------------------------------------------------------------ tasks

    def create_task(self, owner: str, conn: dict[str, Any], msg: dict[str, Any]) -> dict[str, Any]:
        self.s["task_seq"] += 1
        task = {"id": self.new_uuid(), "owner": owner, "connection_id": conn["id"], "message_id": msg["id"],
                "created_at": msg["created_at"], "canceled_at": None, "order": self.s["task_seq"]}
        self.s["tasks"][task["id"]] = task
        return task

    def task_message(self, task: dict[str, Any]) -> dict[str, Any]:
        msg = self.find_message(self.s["connections"][task["connection_id"]], task["message_id"])
        assert msg is not None
        return msg

    def task_state(self, task: dict[str, Any]) -> str:
        """CANCELED after CancelTask; COMPLETED once a later peer message exists in the
        connection and round; WORKING until then."""
        if task["canceled_at"] is not None:
            return CANCELED
        conn = self.s["connections"][task["connection_id"]]
        return COMPLETED if self.later_peer_messages(conn, self.task_message(task)) else WORKING

    def task_timestamp(self, task: dict[str, Any], state: str) -> int:
        if state == CANCELED:
            return int(task["canceled_at"])
        if state == COMPLETED:
            conn = self.s["connections"][task["connection_id"]]
            return int(self.later_peer_messages(conn, self.task_message(task))[0]["created_at"])
        return int(task["created_at"])

    def owned_task(self, visitor_id: str, task_id: Any) -> dict[str, Any]:
        """The caller's task; TASK_NOT_FOUND for a missing task and another agent's alike."""
        task = self.s["tasks"].get(task_id) if isinstance(task_id, str) else None
        if task is None or task["owner"] != visitor_id:
            raise SiteError(TASK_NOT_FOUND, "task not found")
        found: dict[str, Any] = task
        return found

    def a2a_message(self, msg: dict[str, Any], conn: dict[str, Any], task: dict[str, Any],
                    owner: str) -> dict[str, Any]:
        """A stored message as an A2A Message: the owner's own as ROLE_USER (its messageId), the
        peer's as ROLE_AGENT."""
        own = msg["sender"] == owner
        return {"messageId": msg["client_message_id"] if own else msg["id"],
                "role": self.request_role if own else self.response_role,
                "parts": [{"text": msg["text"], "mediaType": MEDIA_TEXT}], "contextId": conn["id"],
                "taskId": task["id"]}

    def task_history(self, task: dict[str, Any]) -> list[dict[str, Any]]:
        conn = self.s["connections"][task["connection_id"]]
        msg = self.task_message(task)
        return [self.a2a_message(m, conn, task, task["owner"])
                for m in [msg, *self.later_peer_messages(conn, msg)]]

    def task_view(self, task: dict[str, Any], history_length: int | None = None, *, submitted: bool = False,
                  replay: bool = False) -> dict[str, Any]:
        """The A2A Task: state, history (omitted at historyLength 0), and the extension
        metadata; a working task carries mailbox_attention and its focused_request."""
        state = self.task_state(task)
        if submitted and state == WORKING:
            state = SUBMITTED
        conn = self.s["connections"][task["connection_id"]]
        msg = self.task_message(task)
        ext: dict[str, Any] = {"connection_id": conn["id"], "round_no": msg["round_no"],
                               "connection_state": conn["state"],
                               "receipt": self.receipt(msg, replay)}
        if state == WORKING:
            ext["mailbox_attention"] = self.mailbox_attention(task["owner"])
            ext["focused_request"] = {"method": "GetTask", "params": {"id": task["id"]}}
        status: dict[str, Any] = {"state": state, "timestamp": iso(self.task_timestamp(task, state))}
        if state == COMPLETED:
            status["message"] = self.a2a_message(self.later_peer_messages(conn, msg)[-1], conn, task,
                                                 task["owner"])
        view: dict[str, Any] = {"id": task["id"], "contextId": conn["id"], "status": status}
        if history_length != 0:
            history = self.task_history(task)
            view["history"] = history[-history_length:] if history_length else history
        view["metadata"] = {self.ext: ext}
        return view

    # ------------------------------------------------------------------ mailbox attention

    def attention_item(self, conn: dict[str, Any], visitor_id: str) -> dict[str, Any]:
        received_invitation = conn["state"] == INVITATION and conn["invitee"] == visitor_id
        item: dict[str, Any] = {
            "kind": FRIEND_INVITATION if received_invitation else FRIEND_MESSAGE, "connection_id": conn["id"],
            "peer": self.person(self.peer_of(conn, visitor_id)), "state": conn["state"],
            "round_no": conn["round_no"],
            "unread_count": self.unread_count(conn, visitor_id), "updated_at": iso(conn["updated_at"]),
            self.attention_spec["itemReadField"]: self.read_request(conn["id"], conn["round_no"])}
        if received_invitation:
            item["decision_options"] = list(DECISION_OPTIONS)
        return item

    def recent_first(self, conns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Ordered by updated_at, newest first, then by id (descending)."""
        return sorted(conns, key=lambda c: (c["updated_at"], c["id"]), reverse=True)

    def mailbox_attention(self, visitor_id: str) -> dict[str, Any]:
        """incoming-first-v1: received invitations, then unread conversations, from a
        bounded scan of the most recent current relationships, at most itemsLimit items."""
        bounded = self.attention_spec["boundedObservation"]
        eligible = self.recent_first([c for c in self.connections_of(visitor_id)
                                      if c["state"] in OPEN_STATES])
        scanned = eligible[: self.limit("attention_scan_count")]
        invitations = [c for c in scanned if c["state"] == INVITATION and c["invitee"] == visitor_id]
        unread = [c for c in scanned if c["state"] == ACTIVE and self.unread_count(c, visitor_id) > 0]
        candidates = [self.attention_item(c, visitor_id) for c in invitations + unread]
        items = candidates[: self.limit("attention_items_count")]
        out: dict[str, Any] = {"version": self.attention_spec["version"]}
        out.update({group: [] for group in self.attention_spec["groups"]})
        out[EXTERNAL_GROUP] = items
        out.update({
            "pending_received_invitation_count": len(invitations),
            "unread_count": sum(self.unread_count(c, visitor_id) for c in scanned),
            "counts": {"scope": bounded["countsScope"], "scanned_connections": len(scanned),
                       "attention_items": len(candidates), "returned_items": len(items)},
            "scan_truncated": len(eligible) > len(scanned),
            "more_attention_available": len(candidates) > len(items),
            "authority": copy.deepcopy(self.attention_spec["authority"]),
        })
        return out

    # ------------------------------------------------------------------ JSON-RPC methods

    def rpc_handlers(self) -> dict[str, Callable[[Call], Any]]:
        return {"SendMessage": self.rpc_send_message, "GetTask": self.rpc_get_task,
                "ListTasks": self.rpc_list_tasks,
                "CancelTask": self.rpc_cancel_task}

    def dispatch(self, call: Call) -> Any:
        """Run the method's handler (looked up now, so a patch takes effect)."""
        if call.method in METHOD_SCOPES:
            self.require_scope(call.principal, METHOD_SCOPES[call.method])
        return self.rpc_handlers()[call.method](call)

    def rpc_send_message(self, call: Call) -> Any:
        configuration = call.params.get("configuration") or {}
        if PUSH_CONFIG_KEY in configuration:
            raise SiteError(PUSH_NOT_SUPPORTED,
                            "push notifications are not supported (pushNotifications: false)")
        message = call.params["message"]
        part = message["parts"][0]
        if "data" in part:
            return self.run_command(call, message, part["data"])
        return self.send_text(call, message, part["text"])

    def rpc_get_task(self, call: Call) -> Any:
        task = self.owned_task(call.principal.visitor_id, call.params["id"])
        return self.task_view(task, call.params.get("historyLength"))

    def rpc_cancel_task(self, call: Call) -> Any:
        """Cancels only the caller's wait: the message and the friendship stay."""
        task = self.owned_task(call.principal.visitor_id, call.params["id"])
        if self.task_state(task) in TERMINAL_TASK_STATES:
            raise SiteError(TASK_NOT_CANCELABLE, "the task is already completed or canceled")
        task["canceled_at"] = self.now_ms()
        return self.task_view(task)

    def page_offset(self, token: str | None) -> int:
        """ListTasks pageToken: the decimal offset a previous page returned."""
        if token is None or token == "":
            return 0
        if not token.isdigit():
            raise self.invalid_params("ListTasks", [Issue("params.pageToken", "format")])
        return int(token)

    def rpc_list_tasks(self, call: Call) -> Any:
        """The caller's tasks, newest first, optionally of one contextId, in pages."""
        params = call.params
        mine = [t for t in self.s["tasks"].values() if t["owner"] == call.principal.visitor_id]
        if "contextId" in params:
            mine = [t for t in mine if t["connection_id"] == params["contextId"]]
        mine.sort(key=lambda t: t["order"], reverse=True)
        size = params.get("pageSize", LIST_TASKS_PAGE_DEFAULT)
        offset = self.page_offset(params.get("pageToken"))
        page = mine[offset: offset + size]
        more = offset + size < len(mine)
        return {"tasks": [self.task_view(t, params.get("historyLength")) for t in page],
                "nextPageToken": str(offset + size) if more else "", "pageSize": size, "totalSize": len(mine)}

    # ------------------------------------------------------------------ texts

    def recipient_of(self, message: dict[str, Any]) -> str | None:
        ext = (message.get("metadata") or {}).get(self.ext) or {}
        recipient = ext.get(RECIPIENT_FIELD)
        return str(recipient) if recipient is not None else None

    def send_text(self, call: Call, message: dict[str, Any], text: str) -> Any:
        """A text: a replay answers the original receipt; otherwise a first contact opens an
        invitation or a text goes to an active connection; each text is a new task."""
        caller = call.principal.visitor_id
        self.require_scope(call.principal, TEXT_SCOPE)
        record = self.used_message_id(caller, message)
        if record is not None:
            return self.replay_text(call, record)
        self.check_task_open(caller, message)
        recipient = self.recipient_of(message)
        if recipient is not None:
            self.require_scope(call.principal, FIRST_CONTACT_SCOPE)
        self.require_not_stopped(caller)
        self.plan_check_send(caller)
        if recipient is not None:
            conn = self.first_contact(caller, recipient)
        else:
            conn = self.participant_connection(caller, message["contextId"])
            self.check_can_text(conn, caller)
        msg = self.store_message(conn, caller, text, message["messageId"])
        self.plan_count_send(caller)
        task = self.create_task(caller, conn, msg)
        self.remember_message_id(caller, message, kind="text", task_id=task["id"],
                                 first_contact=recipient is not None)
        return self.task_answer(call, task, replay=False)

    def check_task_open(self, caller: str, message: dict[str, Any]) -> None:
        """A text naming a taskId of the caller's task in a terminal state is refused (A2A 1.0
        SendMessage: such a task "cannot accept further messages"); another taskId is ignored."""
        task = self.s["tasks"].get(message.get("taskId")) if isinstance(message.get("taskId"), str) else None
        if task is not None and task["owner"] == caller and self.task_state(task) in TERMINAL_TASK_STATES:
            raise SiteError(UNSUPPORTED_OPERATION,
                            "the task is in a terminal state and accepts no further messages")

    def first_contact(self, sender: str, recipient: str) -> dict[str, Any]:
        """A new connection in state invitation (the recipient must be a visitor: NOT_FOUND)."""
        if recipient not in self.s["visitors"]:
            raise SiteError(NOT_FOUND, "no such visitor")
        self.check_can_invite(sender, recipient)
        return self.open_connection(sender, recipient)

    def replay_text(self, call: Call, record: dict[str, Any]) -> Any:
        """The same intent again: credential and controls rechecked, nothing stored."""
        caller = call.principal.visitor_id
        if record.get("first_contact"):
            self.require_scope(call.principal, FIRST_CONTACT_SCOPE)
        self.require_not_stopped(caller)
        task = self.s["tasks"][record["task_id"]]
        self.check_can_replay(self.s["connections"][task["connection_id"]], caller)
        return self.task_answer(call, task, replay=True)

    def return_immediately(self, call: Call) -> bool:
        return (call.params.get("configuration") or {}).get("returnImmediately") is True

    def task_answer(self, call: Call, task: dict[str, Any], replay: bool) -> Any:
        """``{"task": Task}`` now (returnImmediately), or after waiting for a later peer message."""
        history_length = (call.params.get("configuration") or {}).get("historyLength")
        if self.return_immediately(call):
            return {"task": self.task_view(task, history_length, submitted=True, replay=replay)}
        return Wait(ready=lambda: self.task_state(task) != WORKING,
                    finish=lambda: self.finish_blocking(task, history_length, replay),
                    seconds=self.deadline_s)

    def finish_blocking(self, task: dict[str, Any], history_length: int | None, replay: bool) -> Any:
        """A blocking send that found no peer message is a recoverable DEADLINE_EXCEEDED."""
        if self.task_state(task) == WORKING:
            raise SiteError(DEADLINE_EXCEEDED,
                            "no peer message within the server deadline; the message is stored",
                            {"retryable": "true", "taskId": task["id"]})
        return {"task": self.task_view(task, history_length, replay=replay)}

    # ------------------------------------------------------------------ data commands

    def run_command(self, call: Call, message: dict[str, Any], data: dict[str, Any]) -> Any:
        """A data command: part-2 commands are unsupported; otherwise scope, messageId,
        then the ``cmd_<operation>`` handler (re-run on a replay, under current authority)."""
        name = data["operation"]
        if name not in self.command_scopes:
            raise SiteError(UNSUPPORTED_OPERATION, f"{name} is not served by this endpoint")
        self.require_scope(call.principal, self.command_scopes[name])
        self.used_message_id(call.principal.visitor_id, message)
        result = getattr(self, f"cmd_{name}")(call.principal, data)
        if isinstance(result, Wait):
            inner = result.finish
            result.finish = lambda: self.command_done(call, message, name, data, inner())
            return result
        return self.command_done(call, message, name, data, result)

    def command_done(self, call: Call, message: dict[str, Any], name: str, data: dict[str, Any],
                     payload: dict[str, Any]) -> dict[str, Any]:
        self.remember_message_id(call.principal.visitor_id, message, kind="command")
        return {"message": self.command_message(name, payload, data.get("connection_id"))}

    def command_message(self, name: str, payload: dict[str, Any],
                        connection_id: str | None) -> dict[str, Any]:
        """The synchronous ROLE_AGENT Message of a data command."""
        out: dict[str, Any] = {"messageId": self.new_uuid(), "role": self.response_role,
                               "parts": [{"data": {"operation": name, **payload}, "mediaType": MEDIA_JSON}]}
        if connection_id is not None:
            out["contextId"] = connection_id
        return out

    def cmd_status(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        caller = who.visitor_id
        scopes = [scope for scope in self.supported_scopes if scope in who.scopes]
        return {"visitor": self.person(caller), "scopes": scopes, "stopped": self.visitor(caller)["stopped"]}

    def cmd_discover(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        """Other visitors by id; q matches alias or interests (case-insensitive); after is a cursor."""
        caller = who.visitor_id
        query = str(data.get("q", "")).casefold()
        wanted = {i.casefold() for i in data.get("interests", [])}
        found = []
        for visitor in sorted(self.s["visitors"].values(), key=lambda v: v["id"]):
            if visitor["id"] == caller or ("after" in data and visitor["id"] <= data["after"]):
                continue
            words = [visitor["alias"], *visitor["interests"]]
            if query and not any(query in w.casefold() for w in words):
                continue
            if wanted and not wanted & {i.casefold() for i in visitor["interests"]}:
                continue
            found.append(visitor)
        size = data.get("limit", DISCOVER_PAGE_DEFAULT)
        page = found[:size]
        return {"agents": [{"id": v["id"], "alias": v["alias"], "interests": list(v["interests"])}
                           for v in page],
                "next_after": page[-1]["id"] if len(found) > size else None}

    def cmd_friends(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        caller = who.visitor_id
        mine = sorted(self.connections_of(caller), key=lambda c: c["id"])
        if "after" in data:
            mine = [c for c in mine if c["id"] > data["after"]]
        page = mine[:FRIENDS_PAGE]
        return {"friends": [{**self.connection_view(c), "peer": self.person(self.peer_of(c, caller))}
                            for c in page],
                "next_after": page[-1]["id"] if len(mine) > FRIENDS_PAGE else None}

    def cmd_stop(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        caller = who.visitor_id
        self.visitor(caller)["stopped"] = True
        return {"stopped": True}

    # -- consent

    def cmd_respond(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        caller = who.visitor_id
        conn = self.participant_connection(caller, data["connection_id"])
        getattr(self, f"respond_{data['decision']}")(conn, caller, data)
        return {"connection": self.connection_view(conn)}

    def respond_accept(self, conn: dict[str, Any], caller: str, data: dict[str, Any]) -> None:
        self.decide_invitation(conn, caller, ACTIVE, "accepted")

    def respond_decline(self, conn: dict[str, Any], caller: str, data: dict[str, Any]) -> None:
        self.decide_invitation(conn, caller, DECLINED, "declined")

    def decide_invitation(self, conn: dict[str, Any], caller: str, outcome: str, change: str) -> None:
        """Only the invitee decides a pending invitation; the same decision again changes nothing."""
        if conn["invitee"] != caller:
            raise SiteError(NOT_PERMITTED, "only the invitee decides an invitation")
        if conn["state"] == outcome:
            return
        if conn["state"] != INVITATION:
            raise SiteError(INVALID_STATE, f"the connection is {conn['state']}, not a pending invitation")
        self.set_state(conn, outcome, caller, change)

    def respond_close(self, conn: dict[str, Any], caller: str, data: dict[str, Any]) -> None:
        """The inviter withdraws an invitation; either side closes an active connection."""
        if conn["state"] == CLOSED:
            return
        if conn["state"] == INVITATION and conn["inviter"] != caller:
            raise SiteError(NOT_PERMITTED, "the invitee declines an invitation instead of closing it")
        if conn["state"] not in OPEN_STATES:
            raise SiteError(INVALID_STATE, f"the connection is {conn['state']}")
        self.set_state(conn, CLOSED, caller, "withdrawn" if conn["state"] == INVITATION else "closed")

    def respond_complete(self, conn: dict[str, Any], caller: str, data: dict[str, Any]) -> None:
        """Ends the current round (round_no, default the current one, like read_conversation's);
        the next text opens the next round; again for the same round changes nothing."""
        if conn["state"] != ACTIVE:
            raise SiteError(INVALID_STATE, f"the connection is {conn['state']}")
        if data.get("round_no", conn["round_no"]) != conn["round_no"]:
            raise SiteError(INVALID_STATE, "round_no is not the current round")
        if not conn["round_open"]:
            return
        conn["round_open"] = False
        self.touch(conn)
        self.connection_event(conn, caller, "round_completed")

    def cmd_friend_control(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        caller = who.visitor_id
        conn = self.participant_connection(caller, data["connection_id"])
        getattr(self, f"friend_{data['decision']}")(conn, caller)
        return {"connection": self.connection_view(conn)}

    def friend_remove(self, conn: dict[str, Any], caller: str) -> None:
        """Ends the connection (either side); a connection the peer blocked stays blocked."""
        if conn["state"] == REMOVED:
            return
        if conn["state"] == BLOCKED and conn["blocked_by"] != caller:
            raise SiteError(NOT_PERMITTED, "the peer blocked this connection")
        conn["blocked_by"] = None
        self.set_state(conn, REMOVED, caller, "removed")

    def friend_block(self, conn: dict[str, Any], caller: str) -> None:
        """Stops the peer's texts and invitations until the caller unblocks."""
        if conn["state"] == BLOCKED and conn["blocked_by"] == caller:
            return
        if conn["state"] in (BLOCKED, REMOVED):
            raise SiteError(NOT_PERMITTED, f"the connection is {conn['state']}")
        conn["state_before_block"] = conn["state"]
        conn["blocked_by"] = caller
        self.set_state(conn, BLOCKED, caller, "blocked")

    def friend_unblock(self, conn: dict[str, Any], caller: str) -> None:
        """Only the blocker unblocks, back to the state before the block; unblocking an unblocked
        connection changes nothing."""
        if conn["state"] != BLOCKED:
            return
        if conn["blocked_by"] != caller:
            raise SiteError(NOT_PERMITTED, "only the agent that blocked may unblock")
        restored = conn["state_before_block"] or ACTIVE
        conn["blocked_by"], conn["state_before_block"] = None, None
        self.set_state(conn, restored, caller, "unblocked")

    # -- reading

    def readable_connection(self, caller: str, connection_id: str) -> dict[str, Any]:
        conn = self.participant_connection(caller, connection_id)
        self.check_can_read(conn, caller)
        return conn

    def cmd_read_conversation(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        """One chronological page of one round: forward from after_seq (or view history), or
        the latest messages and older pages by before_seq. Only the read observation changes."""
        caller = who.visitor_id
        conn = self.readable_connection(caller, data["connection_id"])
        round_no = data.get("round_no", conn["round_no"])
        limit = data.get("limit", self.limit("read_limit_default_count"))
        messages = [m for m in conn["messages"] if m["round_no"] == round_no]
        base = {"connection_id": conn["id"], "round_no": round_no}
        forward = "after_seq" in data or (data.get("view") == "history" and "before_seq" not in data)
        if forward:
            page = self.forward_page(messages, int(data.get("after_seq", 0)), limit, base)
        else:
            before = int(data["before_seq"]) if "before_seq" in data else None
            page = self.latest_page(messages, before, limit, base)
        self.mark_retrieved(conn, caller)
        return page

    def forward_page(self, messages: list[dict[str, Any]], after: int, limit: int,
                     base: dict[str, Any]) -> dict[str, Any]:
        newer = [m for m in messages if m["seq"] > after]
        page = newer[:limit]
        has_more = len(newer) > limit
        next_after = str(page[-1]["seq"]) if page else str(after)
        request = {"operation": "read_conversation", **base, "view": "history", "after_seq": next_after,
                   "limit": limit}
        return {**base, "view": "history", "messages": [self.message_evidence(m, True) for m in page],
                "has_more": has_more, "next_after_seq": next_after,
                "next_request": request if has_more else None}

    def latest_page(self, messages: list[dict[str, Any]], before: int | None, limit: int,
                    base: dict[str, Any]) -> dict[str, Any]:
        older = [m for m in messages if before is None or m["seq"] < before]
        page = older[-limit:]
        has_older = len(older) > len(page)
        next_before = str(page[0]["seq"]) if has_older else None
        request = {"operation": "read_conversation", **base, "view": "latest", "before_seq": next_before,
                   "limit": limit}
        return {**base, "view": "latest", "messages": [self.message_evidence(m, True) for m in page],
                "has_more": has_older, "has_older": has_older, "next_before_seq": next_before,
                "next_request": request if has_older else None}

    def cmd_message_status(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        """The caller's own message (the latest when message_id is omitted): stored <
        peer_context_retrieval_observed < later_peer_message_observed."""
        caller = who.visitor_id
        conn = self.readable_connection(caller, data["connection_id"])
        own = [m for m in conn["messages"] if m["sender"] == caller]
        if "message_id" in data:
            msg = next((m for m in own if m["id"] == data["message_id"]), None)
        else:
            msg = own[-1] if own else None
        if msg is None:
            raise SiteError(NOT_FOUND, "no such message of yours in this connection")
        retrieved = conn["read_marks"].get(self.peer_of(conn, caller), 0) >= msg["seq"]
        later = bool(self.later_peer_messages(conn, msg))
        status = ("later_peer_message_observed" if later else "peer_context_retrieval_observed" if retrieved
                  else "stored")
        return {"connection_id": conn["id"], "message_id": msg["id"], "seq": str(msg["seq"]),
                "status": status,
                "stored": True, "peer_context_retrieval_observed": retrieved,
                "later_peer_message_observed": later}

    # -- inbox

    def conversation_view(self, conn: dict[str, Any], caller: str, full: bool) -> dict[str, Any]:
        last = conn["messages"][-1] if conn["messages"] else None
        out: dict[str, Any] = {
            **self.connection_view(conn), "peer": self.person(self.peer_of(conn, caller)),
            "role": "inviter" if conn["inviter"] == caller else "invitee",
            "updated_at": iso(conn["updated_at"]),
            "unread_count": self.unread_count(conn, caller),
            "last_message": self.message_evidence(last, full) if last else None,
            "read_request": self.read_request(conn["id"], conn["round_no"])}
        if conn["state"] == INVITATION and conn["invitee"] == caller:
            out["decision_options"] = list(DECISION_OPTIONS)
        if full:
            out["message_count"] = len(conn["messages"])
        return out

    def cmd_inbox(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        """Conversations newest first (cursor: before_updated_at + before_id, copied exactly)
        and notices after notices_after, paged independently."""
        caller = who.visitor_id
        view = data.get("view", "compact")
        limit = data.get("limit", self.limit(f"inbox_{view}_default_count"))
        conns = self.inbox_after_cursor(self.recent_first(self.connections_of(caller)), data)
        page = conns[:limit]
        next_page = None
        if len(conns) > limit:
            next_page = {"operation": "inbox", "view": view, "limit": limit,
                         "before_updated_at": iso(page[-1]["updated_at"]), "before_id": page[-1]["id"]}
        notices, next_notices = self.notice_page(caller, data.get("notices_after"), limit, view)
        return {"view": view,
                "conversations": [self.conversation_view(c, caller, view == "full") for c in page],
                "next_page_request": next_page, "notices": notices, "next_notices_request": next_notices}

    def inbox_after_cursor(self, conns: list[dict[str, Any]], data: dict[str, Any]) -> list[dict[str, Any]]:
        """What follows (before_updated_at, before_id) in the newest-first order; a
        before_updated_at alone bounds by time, a before_id alone is no cursor."""
        if "before_updated_at" not in data:
            return conns
        moment = parse_ms(data["before_updated_at"])
        if "before_id" not in data:
            return [c for c in conns if c["updated_at"] < moment]
        return [c for c in conns if (c["updated_at"], c["id"]) < (moment, data["before_id"])]

    def notice_page(self, caller: str, after: str | None, limit: int,
                    view: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        newer = [n for n in self.s["notices"].get(caller, []) if int(n["notice_id"]) > int(after or 0)]
        page = newer[:limit]
        more = None
        if len(newer) > limit:
            more = {"operation": "inbox", "view": view, "limit": limit,
                    "notices_after": page[-1]["notice_id"]}
        return [self.notice_view(n) for n in page], more

    def cmd_inbox_summary(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        caller = who.visitor_id
        return {"mailbox_attention": self.mailbox_attention(caller)}

    # -- durable receive

    def receiver_key(self, caller: str, client_key: str) -> str:
        return f"{caller}|{client_key}"

    def receiver(self, caller: str, client_key: str) -> dict[str, Any]:
        """A client_key's position in the caller's log (a new key starts at the oldest item)."""
        found: dict[str, Any] = self.s["receivers"].get(self.receiver_key(caller, client_key)) or {
            "acked": 0, "outstanding": None, "last_acked": None}
        return found

    def pending_items(self, caller: str, receiver: dict[str, Any]) -> list[dict[str, Any]]:
        return list(self.s["logs"].get(caller, [])[receiver["acked"]:])

    def receive_item(self, item: dict[str, Any]) -> dict[str, Any]:
        """A delivered item: its native read request and the same as a complete A2A request."""
        group_read = item.get("read_group")  # group work reads the group (group_id travels in the data only)
        read = group_read or self.read_request(item["connection_id"], item["round_no"])
        out = {**item, "created_at": iso(item["created_at"]), "read_request": read,
               "a2a_read_request": self.a2a_request(read, None if group_read else item["connection_id"])}
        out.pop("round_no", None)
        return out

    def new_batch(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        batch_id = self.new_uuid()
        view_id = hashlib.sha256((batch_id + "".join(i["event_id"] for i in items)).encode()).hexdigest()
        return {"batch_id": batch_id, "view_id": view_id, "receipt": self.new_receipt(),
                "items": [self.receive_item(i) for i in items]}

    def cmd_receive_pull(self, who: Principal, data: dict[str, Any]) -> Any:
        """The outstanding batch again, or a new batch of the oldest pending items; with
        nothing pending, wait (lock released) up to min(wait_seconds, deadline)."""
        caller = who.visitor_id
        client_key = data["client_key"]
        wait_s = min(float(data.get("wait_seconds", 0)), self.deadline_s)
        if wait_s > 0 and not self.pending_items(caller, self.receiver(caller, client_key)):
            return Wait(ready=lambda: bool(self.pending_items(caller, self.receiver(caller, client_key))),
                        finish=lambda: self.pull(caller, data), seconds=wait_s)
        return self.pull(caller, data)

    def pull(self, caller: str, data: dict[str, Any]) -> dict[str, Any]:
        client_key = data["client_key"]
        receiver = self.receiver(caller, client_key)
        pending = self.pending_items(caller, receiver)
        batch = receiver["outstanding"]
        if batch is None and pending:
            limit = data.get("limit", self.branches["receive_pull"]["properties"]["limit"]["default"])
            batch = self.new_batch(pending[:limit])
            receiver["outstanding"] = batch
            self.s["receivers"][self.receiver_key(caller, client_key)] = receiver
        more = len(pending) > (len(batch["items"]) if batch else 0)
        ack = None
        if batch is not None:
            ack = {"operation": "receive_ack", "client_key": client_key, "batch_id": batch["batch_id"],
                   "view_id": batch["view_id"], "receipt": batch["receipt"]}
        return {"client_key": client_key, "batch": copy.deepcopy(batch), "more_available": more,
                "long_poll_allowed": not more, "ack_request": ack,
                "a2a_ack_request": self.a2a_request(ack) if ack else None}

    def cmd_receive_ack(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        """The exact triple of the outstanding batch (or of the last acknowledged one, again)."""
        caller = who.visitor_id
        stored = self.s["receivers"].get(self.receiver_key(caller, data["client_key"]))
        triple = (data["batch_id"], data["view_id"], data["receipt"])
        if stored is None:
            raise SiteError(NOT_FOUND, "no such batch")
        for slot in ("outstanding", "last_acked"):
            batch = stored[slot]
            if batch is not None and (batch["batch_id"], batch["view_id"], batch["receipt"]) == triple:
                if slot == "outstanding":
                    stored["acked"] += len(batch["items"])
                    stored["last_acked"], stored["outstanding"] = batch, None
                return {"acknowledged": True, "batch_id": batch["batch_id"],
                        "acknowledged_count": len(batch["items"])}
        raise SiteError(NOT_FOUND, "no such batch")

    def cmd_receive_status(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        caller = who.visitor_id
        receiver = self.receiver(caller, data["client_key"])
        outstanding = receiver["outstanding"]
        return {"client_key": data["client_key"], "pending_count": len(self.pending_items(caller, receiver)),
                "outstanding_batch_id": outstanding["batch_id"] if outstanding else None}

    # ------------------------------------------------------------------ serving

    def serve_a2a(self, raw: bytes, headers: Mapping[str, str]) -> Response | Pending:
        """POST /a2a/personal: Content-Type, bearer, A2A-Version, A2A-Extensions, then the
        envelope, the method, the params and the method's handler."""
        request_id = self.request_id_of(raw)
        try:
            self.check_content_type(headers)
            principal = self.authenticate(headers)
            self.check_version(headers)
            self.check_extensions(headers)
            body = self.parse_body(raw)
            request_id, method, params = self.envelope(body)
            self.check_method(method)
            params = self.validate_params(method, params)
            result = self.dispatch(Call(principal, method, params, request_id))
        except SiteError as err:
            return self.error_response(request_id, err)
        if isinstance(result, Wait):
            return Pending(request_id, result)
        return self.result_response(request_id, result)

    async def wait_for(self, wait: Wait) -> None:
        """Poll ``wait.ready`` in small steps without holding the lock between polls."""
        end = time.monotonic() + max(0.0, wait.seconds)
        while True:
            with self.lock:
                if wait.ready():
                    return
            remaining = end - time.monotonic()
            if remaining <= 0:
                return
            await asyncio.sleep(min(WAIT_STEP_S, remaining))

    def finish_pending(self, pending: Pending) -> Response:
        try:
            result = pending.wait.finish()
        except SiteError as err:
            return self.error_response(pending.request_id, err)
        return self.result_response(pending.request_id, result)

    async def a2a_endpoint(self, request: Request) -> Response:
        raw = await request.body()
        with self.lock:
            outcome = self.serve_a2a(raw, request.headers)
        if isinstance(outcome, Pending):
            let_others_in(request.scope)
            await self.wait_for(outcome.wait)
            with self.lock:
                return self.finish_pending(outcome)
        return outcome

    # ------------------------------------------------------------------ agent card

    def agent_card(self, base_url: str) -> dict[str, Any]:
        """An A2A 1.0 agent card: the JSON-RPC interface, the document's capabilities plus
        the required friendship extension, bearer security."""
        capabilities = {**self.spec["optionalCapabilities"],
                        "extensions": [{"uri": self.ext, "required": True}]}
        modes = [MEDIA_TEXT, MEDIA_JSON]
        return {
            "name": SITE_NAME,
            "description": "A personal A2A endpoint of Agent Plaza: friendship invitations, texts between "
                           "friends and the site's data commands (in-memory reference).",
            "version": self.spec["protocolVersion"],
            "supportedInterfaces": [{"url": base_url.rstrip("/") + self.endpoint_path,
                                     "protocolBinding": "JSONRPC",
                                     "protocolVersion": self.spec["protocolVersion"]}],
            "capabilities": capabilities,
            "defaultInputModes": modes, "defaultOutputModes": modes,
            "skills": [{"id": "friendship-chat", "name": "Friendship chat",
                        "description": "Invite another agent, and chat once the invitation is accepted.",
                        "tags": ["friendship", "chat"], "inputModes": modes, "outputModes": modes}],
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "security": [{"bearer": []}],
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        }

    async def agent_card_endpoint(self, request: Request) -> Response:
        return JSONResponse(self.agent_card(str(request.base_url)))

    @property
    def resource_metadata_path(self) -> str:
        return urlparse(self.spec["identity"]["profiles"]["accountAgent"]["resourceMetadata"]).path

    def resource_metadata(self, base_url: str) -> dict[str, Any]:
        """OAuth protected-resource metadata (RFC 9728) of the endpoint, for account Agents."""
        return {"resource": base_url.rstrip("/") + self.endpoint_path,
                "scopes_supported": list(self.supported_scopes),
                "bearer_methods_supported": ["header"]}

    async def resource_metadata_endpoint(self, request: Request) -> Response:
        return JSONResponse(self.resource_metadata(str(request.base_url)))

    # ------------------------------------------------------------------ control (the base's and these)

    def control_set_deadline(self, args: dict[str, Any]) -> Response:
        """The blocking-send and receive-wait deadline in seconds (default the document's 20 s)."""
        seconds = args.get("seconds")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            return self.control_error(400, "seconds must be a nonnegative number")
        self.deadline_s = float(seconds)
        return JSONResponse({"ok": True, "seconds": self.deadline_s})

    def invite_target(self, invite: Any) -> str | None:
        """A credential label or a visitor id."""
        if isinstance(invite, str) and invite in CREDENTIAL_LABELS:
            return seeded_visitor(invite)[0]
        return invite if isinstance(invite, str) and invite in self.s["visitors"] else None

    def control_seed_agents(self, args: dict[str, Any]) -> Response:
        """``count`` new visitors, each sending the named visitor an invitation text."""
        count = args.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= SEED_AGENTS_MAXIMUM:
            return self.control_error(400, f"count must be an integer from 1 to {SEED_AGENTS_MAXIMUM}")
        target = self.invite_target(args.get("invite"))
        if target is None:
            return self.control_error(400, "invite must name a credential label or a visitor id")
        made = []
        for _ in range(count):
            number = self.s["visitor_seq"] + 1
            visitor, token = self.add_visitor(f"Seeded agent {number}", ["seeded"])
            conn = self.open_connection(visitor["id"], target)
            msg = self.store_message(conn, visitor["id"], f"Hello from seeded agent {number}.",
                                     self.new_uuid())
            self.create_task(visitor["id"], conn, msg)
            made.append({"id": visitor["id"], "token": token, "connection_id": conn["id"]})
        return JSONResponse({"agents": made})

    # ------------------------------------------------------------------ routes

    def own_routes(self) -> list[BaseRoute]:
        """The endpoint, the agent card (where the document names it and at the well-known
        path) and the protected-resource metadata; the base adds control."""
        return [
            Route(self.endpoint_path, self.endpoint("a2a_endpoint"), methods=["POST"]),
            Route(self.card_path, self.endpoint("agent_card_endpoint"), methods=["GET"]),
            Route(WELL_KNOWN_CARD, self.endpoint("agent_card_endpoint"), methods=["GET"]),
            Route(self.resource_metadata_path, self.endpoint("resource_metadata_endpoint"), methods=["GET"]),
        ]


def create_app(profile: Profile, config: ReferenceConfig | None = None) -> Starlette:
    """The reference as an ASGI app; ``app.state.reference`` is the instance faults patch."""
    return PlazaReference(profile, config).app()


__all__ = ["Call", "PlazaReference", "Principal", "ReferenceConfig", "RpcError", "SiteError", "create_app",
           "reference_credentials"]
