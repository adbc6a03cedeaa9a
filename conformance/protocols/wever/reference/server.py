"""The in-memory Wever Connect reference relay: mailboxes, sender grants, connection
requests and tasks behind a Starlette app that serves the HTTP actions
(``routes.actions``), the A2A adapter (``protocols.a2a``), MCP (``protocols.mcp``),
the agent card, the OpenAPI document and, when enabled, a control interface.

Everything the manifest states (actions, input schemas, limits, routes, the A2A
state mapping, headers and media types, the MCP versions) is read from the profile;
what it leaves open (error codes and statuses, result shapes) is the profile's choice
(profiles/wever-connect.yaml, ``errors:``). Every behaviour is one small method of
``WeverReference`` so that a fault or a variant replaces exactly one.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from conformance.documents.limits import load_limits
from conformance.documents.schemas import validator_for, violations
from conformance.kit.reference import CodedRefusal, Reference, is_int, strict_json
from conformance.kit.reference import ReferenceConfig as BaseConfig
from conformance.model import Profile
from conformance.protocols.a2a import wire
from conformance.protocols.a2a.documents import jsonrpc_codes
from conformance.protocols.a2a.names import EXTENSIONS_HEADER, VERSION_HEADER
from conformance.protocols.mcp.server import McpHost, McpServer, to_response

HOUR_S = 3600
DAY_S = 86400

# Id shapes; the manifest's input patterns must accept them (checked at start).
MAILBOX_PREFIX, MAILBOX_HEX = "mbx_", 24
TASK_PREFIX, TASK_HEX = "task_", 32
REQUEST_PREFIX, REQUEST_HEX = "conn_", 32
TOKEN_PREFIX = "wvr_"

# The mailboxes seeded at start and after a control reset: label -> (id, token).
SEEDED_LABELS = ("alice", "bob", "carol")
SEEDED_WITH_CAPABILITY = ("bob", "carol")  # they advertise the A2A example's capability

# Task states (the keys of protocols.a2a.state_mapping; checked at start).
OFFERED, ACCEPTED, COMPLETED, DECLINED, CANCELLED = ("offered", "accepted", "completed", "declined",
                                                     "cancelled")
TERMINAL_STATES = frozenset({COMPLETED, DECLINED, CANCELLED})
INBOX_STATES = (OFFERED, ACCEPTED)

# Connection request statuses (the profile's choice).
PENDING, ALLOWED, DENIED = "pending", "allowed", "denied"

# JSON-RPC error codes of the A2A adapter: A2A's own (sections 9.5 and 5.4, read there), and
# the profile's choice where A2A names none.
(PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, TASK_NOT_FOUND, TASK_NOT_CANCELABLE,
 UNSUPPORTED_OPERATION, CONTENT_TYPE_NOT_SUPPORTED, VERSION_NOT_SUPPORTED) = (
    jsonrpc_codes()[name] for name in (
        "JSONParseError", "InvalidRequestError", "MethodNotFoundError", "InvalidParamsError",
        "TaskNotFoundError", "TaskNotCancelableError", "UnsupportedOperationError",
        "ContentTypeNotSupportedError", "VersionNotSupportedError"))
RELAY_REFUSED = -32050  # a Connect refusal; data.code is the Connect error code

# A2A request fields this strict profile refuses, named by their entry in protocols.a2a.unsupported.
BLOCKING = "blocking SendMessage"
CONTINUATION = "task continuation"
CONTEXT = "conversation context"
TENANT = "tenant routing"
METADATA = "request metadata"
EXTENSIONS = "protocol extensions"
PUSH = "push notifications"
NON_DATA_PARTS = "text or file parts"
A2A_EXTENSIONS_HEADER = EXTENSIONS_HEADER  # A2A's extension activation header (section 3.2.6)
PUSH_CONFIG_KEYS = ("pushNotificationConfig", "taskPushNotificationConfig", "pushNotification")
NON_DATA_PART_KEYS = ("text", "file", "raw", "url")
SEND_PARAMS_KEYS = ("message", "configuration")
MESSAGE_KEYS = ("messageId", "role", "parts")
CONFIGURATION_KEYS = ("acceptedOutputModes", "historyLength", "returnImmediately")
PART_KEYS = ("data", "mediaType")
TASK_PARAMS_KEYS = {"get_task": ("id", "historyLength"), "cancel_task": ("id",)}
ARTIFACT_ID = "result"

# MCP: the revision from which a request needs no initialize handshake.
MCP_SERVER_NAME = "wever-connect-reference"

# Control: the most extra mailboxes one seed_mailboxes call registers.
SEED_MAILBOXES_MAX = 10_000


# --------------------------------------------------------------------------- config


@dataclass
class ReferenceConfig(BaseConfig):
    """How one reference instance behaves (control, seed and clock: the base's)."""

    # limits served lower (or higher) than the manifest's, by the profile's limit name: a
    # relay that breaks its own manifest (tests: a run meeting a quota sooner than it planned)
    limits: dict[str, int] | None = None
    mcp_sessions: bool = True  # MCP initialize issues a session id
    mcp_page_size: int | None = None  # tools/list in pages of this many tools (None: one page)


class RelayError(CodedRefusal):
    """A refusal named by its profile error code (profiles/wever-connect.yaml ``errors:``)."""


class RpcError(Exception):
    """A JSON-RPC error of the A2A adapter, with the HTTP status its answer carries."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None,
                 status: int = 200) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status


@dataclass
class Call:
    """One action as the relay runs it, whichever surface it came through."""

    action: str
    args: dict[str, Any]
    caller: str | None = None  # the bearer's mailbox id (None on actions without bearer)
    key: str | None = None  # the request key: Idempotency-Key, or the A2A-derived one
    source: str = ""  # the source address (registrations are counted per source)


# --------------------------------------------------------------------------- helpers


def seeded_mailbox(label: str) -> tuple[str, str]:
    """The fixed (id, token) of a seeded mailbox: the same in every process."""
    mailbox_hash = hashlib.sha256(f"wever-reference-mailbox:{label}".encode()).hexdigest()
    mailbox_id = MAILBOX_PREFIX + mailbox_hash[:MAILBOX_HEX]
    token = TOKEN_PREFIX + hashlib.sha256(f"wever-reference-token:{label}".encode()).hexdigest()[:40]
    return mailbox_id, token


def reference_credentials() -> dict[str, Any]:
    """The seeded mailboxes as run credentials: label -> {id, token}."""
    out: dict[str, Any] = {}
    for label in SEEDED_LABELS:
        mailbox_id, token = seeded_mailbox(label)
        out[label] = {"id": mailbox_id, "token": token}
    return out


def iso(ts: float) -> str:
    """ISO 8601 UTC with milliseconds and a Z."""
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_day(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).date().isoformat()


def compact_json(value: Any, sort_keys: bool = False) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)


def fingerprint(value: Any) -> str:
    """What a retry must repeat: a hash of the canonical JSON (a tombstone keeps no content)."""
    return hashlib.sha256(compact_json(value, sort_keys=True).encode()).hexdigest()


def json_depth(value: Any) -> int:
    """Container nesting depth (``{}`` is 1, a scalar 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def key_prefix_of(retry_text: str) -> str:
    """The A2A request-key prefix the manifest's retry prose names ("messageId becomes a2a- plus ...")."""
    match = re.search(r"messageId becomes (\S+) plus", retry_text)
    if match is None:
        raise ValueError("protocols.a2a.retry names no request-key prefix")
    return match.group(1)


# --------------------------------------------------------------------------- the reference


class WeverReference(McpHost, Reference):
    """State and behaviour of the reference relay. All mutable state lives in ``self.s``
    (plain JSON) so that ``digest`` covers it whole, the clock's offset included."""

    config: ReferenceConfig

    def __init__(self, profile: Profile, config: ReferenceConfig | None = None) -> None:
        self.s: dict[str, Any] = {}  # before the base sets clock_offset, which lives in it
        super().__init__(profile, config or ReferenceConfig())
        self.spec = profile.spec
        if not self.limit_values:  # a profile built without its limits: read from the spec
            limits = load_limits(profile.settings.get("limits"), profile.spec, profile.spec_relpath)
            self.limit_values = {name: lim.value for name, lim in limits.items()}
        self.limit_values.update(self.config.limits or {})
        self.actions: dict[str, dict[str, Any]] = self.spec["actions"]
        self.validators = {name: validator_for(op.params_schema) for name, op in profile.operations.items()}
        self.key_header: str = profile.settings["bindings"]["http"]["idempotency"]["header"]
        self.a2a: dict[str, Any] = self.spec["protocols"]["a2a"]
        self.send_spec: dict[str, Any] = self.a2a["send_message"]
        self.data_validator = validator_for(self.send_spec["data_schema"])
        self.a2a_key_prefix = key_prefix_of(self.a2a["retry"])
        self.a2a_methods: dict[str, str] = dict(self.a2a["methods"])
        self.version_header, self.a2a_version = self.a2a_version_requirement()
        self.registration_action = self.a2a["access_setup"]["path"].rsplit("/", 1)[-1]
        self.mcp_versions: list[str] = list(self.spec["protocols"]["mcp"]["versions"])
        self.mcp_sessions, self.mcp_page_size = self.config.mcp_sessions, self.config.mcp_page_size
        self.mcp_streamed = False
        self.mcp = McpServer(self)
        example = self.a2a["send_message_example"]["params"]["message"]["parts"][0]["data"]
        self.example_capability: str = example["capability"]
        self.lock = threading.RLock()
        self.minted = 0  # ids minted so far (reproducible ids when config.seed is set)
        self.check_manifest()
        self.reset()

    def check_manifest(self) -> None:
        """Fail at start, not mid-run, when the manifest no longer matches what the code assumes."""
        missing = [name for name in self.actions if not callable(getattr(self, f"act_{name}", None))]
        if missing:
            raise ValueError(f"the reference has no handler for actions {missing}")
        if set(self.a2a["state_mapping"]) != {OFFERED, ACCEPTED, COMPLETED, DECLINED, CANCELLED}:
            raise ValueError(f"protocols.a2a.state_mapping has states {sorted(self.a2a['state_mapping'])}")
        unknown = {BLOCKING, CONTINUATION, CONTEXT, TENANT, METADATA, EXTENSIONS, PUSH,
                   NON_DATA_PARTS} - set(self.a2a["unsupported"])
        if unknown:
            raise ValueError(f"protocols.a2a.unsupported no longer lists {sorted(unknown)}")
        if set(self.a2a_methods.values()) - set(self.a2a_handlers()):
            raise ValueError("protocols.a2a.methods maps to actions the adapter does not serve: "
                             f"{self.a2a_methods}")
        samples = {
            ("allow_sender", "sender_id"): MAILBOX_PREFIX + "0" * MAILBOX_HEX,
            ("get_task", "task_id"): TASK_PREFIX + "0" * TASK_HEX,
            ("respond_connection_request", "request_id"): REQUEST_PREFIX + "0" * REQUEST_HEX,
        }
        for (action, field), sample in samples.items():
            pattern = self.actions[action]["inputSchema"]["properties"][field]["pattern"]
            if not re.fullmatch(pattern, sample):
                raise ValueError(f"{action}.{field} pattern {pattern!r} does not accept the reference's ids")

    def a2a_version_requirement(self) -> tuple[str, str]:
        """(header, value) of the required version header of protocols.a2a.required_headers
        (A2A's A2A-Version service parameter, section 3.2.6)."""
        if VERSION_HEADER not in self.a2a["required_headers"]:
            raise ValueError(f"protocols.a2a.required_headers names no {VERSION_HEADER}")
        return VERSION_HEADER, str(self.a2a["required_headers"][VERSION_HEADER])

    # ------------------------------------------------------------------ basics

    @property
    def clock_offset(self) -> float:
        """Seconds control moved the clock forward (the base's ``now()`` adds them): kept
        in ``self.s``, so a snapshot covers them and a reset sets them back to 0."""
        return float(self.s.get("clock_offset", 0.0))

    @clock_offset.setter
    def clock_offset(self, seconds: float) -> None:
        self.s["clock_offset"] = seconds

    def new_hex(self, length: int) -> str:
        """Fresh lowercase hex; reproducible from the seed when one is set."""
        self.minted += 1
        if self.config.seed is None:
            return secrets.token_hex((length + 1) // 2)[:length]
        return hashlib.sha256(f"{self.config.seed}:{self.minted}".encode()).hexdigest()[:length]

    def new_id(self, prefix: str, length: int, taken: Mapping[str, Any]) -> str:
        while True:
            candidate = prefix + self.new_hex(length)
            if candidate not in taken:
                return candidate

    def new_token(self) -> str:
        return TOKEN_PREFIX + self.new_hex(40)

    def digest(self) -> str:
        """A hash of the whole relay state (control ``snapshot``)."""
        return hashlib.sha256(json.dumps(self.s, sort_keys=True, default=str).encode()).hexdigest()

    def reset(self) -> None:
        """A fresh relay: the three seeded mailboxes, no grants, counters cleared, clock offset 0."""
        self.minted = 0
        self.s = {"clock_offset": 0.0, "mailboxes": {}, "tokens": {}, "grants": {}, "requests": {},
                  "tasks": {},
                  "keys": {}, "counters": {}, "task_seq": 0}
        for label in SEEDED_LABELS:
            mailbox_id, token = seeded_mailbox(label)
            capabilities = [self.example_capability] if label in SEEDED_WITH_CAPABILITY else []
            self.add_mailbox(label, capabilities, False, mailbox_id=mailbox_id, token=token)

    # ------------------------------------------------------------------ expiry

    def mailbox_expiry(self, now: float) -> float:
        """A mailbox (new or renewed) lives mailbox_days from now."""
        return now + self.limit("mailbox_days") * DAY_S

    def task_expiry(self, sender: dict[str, Any], recipient: dict[str, Any], now: float) -> float:
        """task_hours after submission, never after either mailbox's expiry at submission."""
        return min(now + self.limit("task_hours") * HOUR_S, sender["expires_at"], recipient["expires_at"])

    def tombstone_expiry(self, created_at: float) -> float:
        return created_at + self.limit("tombstone_hours") * HOUR_S

    def request_expiry(self, sender: dict[str, Any], recipient: dict[str, Any], now: float) -> float:
        """connection_request_hours, capped by both mailbox expiries."""
        return min(now + self.limit("connection_request_hours") * HOUR_S, sender["expires_at"],
                   recipient["expires_at"])

    def purge_expired(self, now: float) -> None:
        """Drop what has expired: tasks, retry tombstones, connection requests, mailboxes
        (with their tokens, grants and requests) and counters older than yesterday (UTC).
        The strict reading runs it on every request."""
        state = self.s
        for task_id in [t for t, task in state["tasks"].items() if task["expires_at"] <= now]:
            del state["tasks"][task_id]
        for key in [k for k, record in state["keys"].items() if record["tombstone_until"] <= now]:
            del state["keys"][key]
        for request_id in [r for r, req in state["requests"].items() if req["expires_at"] <= now]:
            del state["requests"][request_id]
        for mailbox_id in [m for m, box in state["mailboxes"].items() if box["expires_at"] <= now]:
            self.retire_mailbox(mailbox_id)
            del state["mailboxes"][mailbox_id]
        oldest = utc_day(now - DAY_S)
        for key in [k for k in state["counters"] if k.split("|", 1)[0] < oldest]:
            del state["counters"][key]

    # ------------------------------------------------------------------ quotas

    def counter_key(self, scope: str, subject: str) -> str:
        return f"{utc_day(self.now())}|{scope}|{subject}"

    def counter(self, scope: str, subject: str) -> int:
        """Today's (UTC) count of ``scope`` for ``subject``."""
        return int(self.s["counters"].get(self.counter_key(scope, subject), 0))

    def consume_quota(self, charges: Iterable[tuple[str, str, str]]) -> None:
        """Charge one unit to each (scope, subject, limit name), all or nothing:
        QUOTA_EXCEEDED (and nothing charged) when any is at its limit."""
        charges = list(charges)
        for scope, subject, limit in charges:
            if self.counter(scope, subject) >= self.limit(limit):
                raise RelayError("QUOTA_EXCEEDED", f"{limit} ({self.limit(limit)}) reached for today (UTC)")
        for scope, subject, _ in charges:
            key = self.counter_key(scope, subject)
            self.s["counters"][key] = self.s["counters"].get(key, 0) + 1

    def task_bytes(self, data: Any) -> int:
        """Size of task or result data: its compact JSON serialization in UTF-8."""
        return len(compact_json(data).encode("utf-8"))

    def check_size(self, data: Any, what: str) -> None:
        if self.task_bytes(data) > self.limit("task_or_result_bytes"):
            raise RelayError("TOO_LARGE",
                             f"{what} is over {self.limit('task_or_result_bytes')} bytes of compact JSON")

    # ------------------------------------------------------------------ mailboxes

    def add_mailbox(self, label: str, capabilities: list[str], discoverable: bool, *,
                    mailbox_id: str | None = None, token: str | None = None) -> tuple[dict[str, Any], str]:
        """A new active mailbox and its token (no quota: registration charges before)."""
        now = self.now()
        mailbox_id = mailbox_id or self.new_id(MAILBOX_PREFIX, MAILBOX_HEX, self.s["mailboxes"])
        token = token or self.new_token()
        box = {"id": mailbox_id, "label": label, "capabilities": list(capabilities),
               "discoverable": discoverable,
               "accepts_connection_requests": False, "created_at": now,
               "expires_at": self.mailbox_expiry(now),
               "closed": False}
        self.s["mailboxes"][mailbox_id] = box
        self.s["tokens"][token] = mailbox_id
        return box, token

    def is_active(self, box: dict[str, Any] | None) -> bool:
        return box is not None and not box["closed"] and self.now() < box["expires_at"]

    def active_mailbox(self, mailbox_id: str) -> dict[str, Any]:
        """An unexpired, unclosed mailbox; NOT_FOUND otherwise."""
        box = self.s["mailboxes"].get(mailbox_id)
        if not self.is_active(box):
            raise RelayError("NOT_FOUND", f"no active mailbox {mailbox_id}")
        assert box is not None
        return box

    def active_mailbox_count(self) -> int:
        return sum(1 for box in self.s["mailboxes"].values() if self.is_active(box))

    def is_discoverable(self, box: dict[str, Any]) -> bool:
        """Listed by find_peers: opted in, unexpired and not closed."""
        return bool(box["discoverable"]) and self.is_active(box)

    def accepts_requests(self, box: dict[str, Any]) -> bool:
        return bool(box["accepts_connection_requests"])

    def mailbox_view(self, box: dict[str, Any]) -> dict[str, Any]:
        return {"mailbox_id": box["id"], "label": box["label"], "capabilities": list(box["capabilities"]),
                "discoverable": box["discoverable"],
                "accepts_connection_requests": box["accepts_connection_requests"],
                "expires_at": iso(box["expires_at"]), "allowed_senders": self.allowed_senders(box["id"])}

    def peer_view(self, box: dict[str, Any]) -> dict[str, Any]:
        return {"mailbox_id": box["id"], "label": box["label"], "capabilities": list(box["capabilities"]),
                "accepts_connection_requests": box["accepts_connection_requests"]}

    def retire_mailbox(self, mailbox_id: str) -> None:
        """A closed or expired mailbox: token dead, grants (both ways) and its connection requests gone."""
        for token in [t for t, owner in self.s["tokens"].items() if owner == mailbox_id]:
            del self.s["tokens"][token]
        self.s["grants"].pop(mailbox_id, None)
        for senders in self.s["grants"].values():
            senders.pop(mailbox_id, None)
        for request_id in [r for r, req in self.s["requests"].items()
                           if mailbox_id in (req["sender_id"], req["recipient_id"])]:
            del self.s["requests"][request_id]

    # ------------------------------------------------------------------ authentication

    def bearer_token(self, headers: Mapping[str, str]) -> str | None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return (token.strip() or None) if scheme.lower() == "bearer" else None

    def mailbox_for_token(self, token: str | None) -> str | None:
        """The active mailbox a token belongs to, or None (unknown, closed or expired)."""
        mailbox_id = self.s["tokens"].get(token) if token else None
        return mailbox_id if mailbox_id and self.is_active(self.s["mailboxes"].get(mailbox_id)) else None

    def authenticate(self, headers: Mapping[str, str]) -> str:
        mailbox_id = self.mailbox_for_token(self.bearer_token(headers))
        if mailbox_id is None:
            raise RelayError("UNAUTHENTICATED", "a bearer token of an active mailbox is required")
        return mailbox_id

    # ------------------------------------------------------------------ grants

    def has_grant(self, recipient_id: str, sender_id: str) -> bool:
        """Whether ``recipient_id`` allows ``sender_id`` to send it tasks."""
        return sender_id in self.s["grants"].get(recipient_id, {})

    def allowed_senders(self, recipient_id: str) -> list[str]:
        return sorted(self.s["grants"].get(recipient_id, {}))

    def check_grant_capacity(self, recipient_id: str) -> None:
        """allowed_senders_per_mailbox caps the grants a mailbox holds."""
        if len(self.s["grants"].get(recipient_id, {})) >= self.limit("allowed_senders_per_mailbox_count"):
            raise RelayError("QUOTA_EXCEEDED", "allowed_senders_per_mailbox reached")

    def add_grant(self, recipient_id: str, sender_id: str) -> bool:
        """Grant (True when newly created). An existing grant consumes nothing; a new one
        is capped and charged per recipient and service-wide per UTC day."""
        if self.has_grant(recipient_id, sender_id):
            return False
        self.check_grant_capacity(recipient_id)
        self.consume_quota([("grants_recipient", recipient_id,
                             "new_sender_grants_per_recipient_per_day_count"),
                            ("grants", "service", "service_new_sender_grants_per_day_count")])
        self.s["grants"].setdefault(recipient_id, {})[sender_id] = self.now()
        return True

    def remove_grant(self, recipient_id: str, sender_id: str) -> bool:
        """Revoke (always available, charges nothing); True when a grant was removed."""
        return self.s["grants"].get(recipient_id, {}).pop(sender_id, None) is not None

    # ------------------------------------------------------------------ tasks

    def check_capability(self, recipient: dict[str, Any], capability: str) -> bool:
        """Whether the recipient advertises the capability a task asks for."""
        return capability in recipient["capabilities"]

    def result_digest(self, result: Any) -> str | None:
        if result is None:
            return None
        return "sha256:" + hashlib.sha256(compact_json(result, sort_keys=True).encode("utf-8")).hexdigest()

    def task_view(self, task: dict[str, Any]) -> dict[str, Any]:
        return {"task_id": task["task_id"], "sender_id": task["sender_id"],
                "recipient_id": task["recipient_id"],
                "capability": task["capability"], "state": task["state"], "task": copy.deepcopy(task["task"]),
                "result": copy.deepcopy(task["result"]), "result_digest": self.result_digest(task["result"]),
                "created_at": iso(task["created_at"]), "updated_at": iso(task["updated_at"]),
                "expires_at": iso(task["expires_at"])}

    def create_task(self, sender: dict[str, Any], recipient: dict[str, Any], capability: str,
                    data: Any) -> dict[str, Any]:
        now = self.now()
        self.s["task_seq"] += 1
        task = {"task_id": self.new_id(TASK_PREFIX, TASK_HEX, self.s["tasks"]), "sender_id": sender["id"],
                "recipient_id": recipient["id"], "capability": capability, "state": OFFERED,
                "task": copy.deepcopy(data),
                "result": None, "created_at": now, "updated_at": now,
                "expires_at": self.task_expiry(sender, recipient, now),
                "order": self.s["task_seq"], "content_erased": False}
        self.s["tasks"][task["task_id"]] = task
        return task

    def participant_task(self, caller: str, task_id: str, role: str | None = None) -> dict[str, Any]:
        """The task when ``caller`` takes part in it: NOT_FOUND for anyone else (an id grants
        no access); NOT_ALLOWED when ``role`` (sender or recipient) is the other participant's."""
        task = self.s["tasks"].get(task_id)
        if task is None or caller not in (task["sender_id"], task["recipient_id"]):
            raise RelayError("NOT_FOUND", f"no task {task_id} of yours")
        if role is not None and task[f"{role}_id"] != caller:
            raise RelayError("NOT_ALLOWED", f"only the task's {role} may do this")
        return task

    def set_state(self, task: dict[str, Any], state: str) -> None:
        task["state"] = state
        task["updated_at"] = self.now()

    def can_accept(self, task: dict[str, Any]) -> bool:
        return task["state"] == OFFERED

    def can_decline(self, task: dict[str, Any]) -> bool:
        return task["state"] == OFFERED

    def can_cancel(self, task: dict[str, Any]) -> bool:
        """The sender cancels only while the task is offered."""
        return task["state"] == OFFERED

    def can_complete(self, task: dict[str, Any]) -> bool:
        return task["state"] == ACCEPTED

    def can_delete_content(self, task: dict[str, Any]) -> bool:
        """Shared content is erasable only once the task is terminal."""
        return task["state"] in TERMINAL_STATES

    def erase_content(self, task: dict[str, Any]) -> None:
        """Erase task data and result for both participants (the record stays)."""
        task["task"] = None
        task["result"] = None
        task["content_erased"] = True

    def inbox_tasks(self, recipient_id: str) -> list[dict[str, Any]]:
        """Offered or accepted tasks addressed to the recipient, oldest first, capped."""
        mine = [t for t in self.s["tasks"].values() if t["recipient_id"] == recipient_id
                and t["state"] in INBOX_STATES]
        mine.sort(key=lambda t: (t["created_at"], t["order"]))
        return mine[: self.limit("inbox_tasks_count")]

    # ------------------------------------------------------------------ request keys

    def key_id(self, sender_id: str, key: str) -> str:
        return f"{sender_id}|{key}"

    def replay_for_key(self, sender_id: str, key: str, body_fingerprint: str) -> dict[str, Any] | None:
        """The task an earlier submission with this key created (same body), None for a fresh
        key; GONE when that task's content was deleted or expired while the tombstone lives,
        IDEMPOTENCY_CONFLICT for another body."""
        record = self.s["keys"].get(self.key_id(sender_id, key))
        if record is None:
            return None
        task = self.s["tasks"].get(record["task_id"])
        if task is None or task["content_erased"]:
            raise RelayError("GONE", "the work this key identified was deleted or expired")
        if record["fingerprint"] != body_fingerprint:
            raise RelayError("IDEMPOTENCY_CONFLICT", "this request key was used with another body")
        return task

    def remember_key(self, sender_id: str, key: str, body_fingerprint: str, task: dict[str, Any]) -> None:
        """A minimal retry tombstone: the key, a body hash and the task id, until tombstone_hours."""
        self.s["keys"][self.key_id(sender_id, key)] = {
            "fingerprint": body_fingerprint, "task_id": task["task_id"],
            "tombstone_until": self.tombstone_expiry(task["created_at"])}

    def require_key(self, call: Call) -> str:
        if not call.key:
            raise RelayError("IDEMPOTENCY_KEY_REQUIRED", f"send_task requires an {self.key_header} header")
        return call.key

    # ------------------------------------------------------------------ connection requests

    def request_view(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"request_id": req["request_id"], "sender_id": req["sender_id"],
                "recipient_id": req["recipient_id"],
                "status": req["status"], "created_at": iso(req["created_at"]),
                "expires_at": iso(req["expires_at"])}

    def retained_request(self, sender_id: str, recipient_id: str) -> dict[str, Any] | None:
        """The unexpired request of this exact pair (pending or decided), if any."""
        for req in self.s["requests"].values():
            if req["sender_id"] == sender_id and req["recipient_id"] == recipient_id:
                return req
        return None

    def check_pending_caps(self, sender_id: str, recipient_id: str) -> None:
        """Pending requests are capped per sender and per recipient."""
        pending = [r for r in self.s["requests"].values() if r["status"] == PENDING]
        if sum(r["sender_id"] == sender_id
               for r in pending) >= self.limit("pending_connection_requests_per_sender_count"):
            raise RelayError("QUOTA_EXCEEDED", "pending_connection_requests_per_sender reached")
        if sum(r["recipient_id"] == recipient_id
               for r in pending) >= self.limit("pending_connection_requests_per_recipient_count"):
            raise RelayError("QUOTA_EXCEEDED", "pending_connection_requests_per_recipient reached")

    # ------------------------------------------------------------------ dispatch

    def requires_bearer(self, action: str) -> bool:
        return bool(self.actions[action].get("requires_bearer", True))

    def validate_input(self, action: str, args: Any) -> None:
        """The action's inputSchema, strictly; VALIDATION_ERROR names the first break."""
        broken = violations(self.validators[action], args, limit=1, length=300)
        if broken:
            raise RelayError("VALIDATION_ERROR", broken[0])

    def run_action(self, call: Call) -> dict[str, Any]:
        """Validate, then run the action's handler (looked up now, so a patch takes effect)."""
        self.validate_input(call.action, call.args)
        result: dict[str, Any] = getattr(self, f"act_{call.action}")(call)
        return result

    def error_status(self, err: RelayError) -> int:
        return self.profile.errors[err.code].http_status

    def error_body(self, err: RelayError) -> dict[str, Any]:
        return {"error": {"code": err.code, "message": err.message}}

    def error_response(self, err: RelayError) -> Response:
        return JSONResponse(self.error_body(err), status_code=self.error_status(err))

    # ------------------------------------------------------------------ actions: mailboxes

    def registration_charges(self, source: str) -> list[tuple[str, str, str]]:
        return [("registrations_source", source, "registrations_per_source_per_day_count"),
                ("registrations", "service", "registrations_per_day_count")]

    def act_register_mailbox(self, call: Call) -> dict[str, Any]:
        if self.active_mailbox_count() >= self.limit("active_mailboxes_count"):
            raise RelayError("QUOTA_EXCEEDED", "active_mailboxes reached")
        self.consume_quota(self.registration_charges(call.source))
        args = call.args
        box, token = self.add_mailbox(args["label"], args.get("capabilities", []),
                                      args.get("discoverable", False))
        return {"mailbox_id": box["id"], "access_token": token, "expires_at": iso(box["expires_at"]),
                "label": box["label"], "capabilities": list(box["capabilities"]),
                "discoverable": box["discoverable"],
                "accepts_connection_requests": box["accepts_connection_requests"]}

    def act_get_mailbox(self, call: Call) -> dict[str, Any]:
        return self.mailbox_view(self.active_mailbox(str(call.caller)))

    def act_update_mailbox(self, call: Call) -> dict[str, Any]:
        """Omitting accepts_connection_requests preserves it; opting out revokes no grant."""
        box = self.active_mailbox(str(call.caller))
        box.update(label=call.args["label"], capabilities=list(call.args["capabilities"]),
                   discoverable=call.args["discoverable"])
        if "accepts_connection_requests" in call.args:
            box["accepts_connection_requests"] = call.args["accepts_connection_requests"]
        return self.mailbox_view(box)

    def act_renew_mailbox(self, call: Call) -> dict[str, Any]:
        box = self.active_mailbox(str(call.caller))
        box["expires_at"] = self.mailbox_expiry(self.now())
        return {"mailbox_id": box["id"], "expires_at": iso(box["expires_at"])}

    def act_close_mailbox(self, call: Call) -> dict[str, Any]:
        """Token dead, profile unlisted, grants gone, shared content of its tasks erased for both."""
        box = self.active_mailbox(str(call.caller))
        box.update(closed=True, discoverable=False, accepts_connection_requests=False)
        self.retire_mailbox(box["id"])
        for task in self.s["tasks"].values():
            if box["id"] in (task["sender_id"], task["recipient_id"]):
                self.erase_content(task)
        return {"mailbox_id": box["id"], "closed": True}

    def act_find_peers(self, call: Call) -> dict[str, Any]:
        """Discoverable mailboxes in ascending id order; ``after`` is an exclusive cursor."""
        capability, after = call.args.get("capability"), call.args.get("after")
        size = call.args.get("limit", self.limit("find_peers_limit_count"))
        peers = sorted((b for b in self.s["mailboxes"].values() if self.is_discoverable(b)),
                       key=lambda b: b["id"])
        if capability is not None:
            peers = [b for b in peers if capability in b["capabilities"]]
        if after is not None:
            peers = [b for b in peers if b["id"] > after]
        page = peers[:size]
        return {"peers": [self.peer_view(b) for b in page],
                "next": page[-1]["id"] if len(peers) > size else None}

    # ------------------------------------------------------------------ actions: permission

    def act_allow_sender(self, call: Call) -> dict[str, Any]:
        recipient, sender_id = str(call.caller), call.args["sender_id"]
        if call.args["allowed"]:
            self.active_mailbox(sender_id)
            self.add_grant(recipient, sender_id)
        else:
            self.remove_grant(recipient, sender_id)
        return {"sender_id": sender_id, "allowed": self.has_grant(recipient, sender_id)}

    def act_request_connection(self, call: Call) -> dict[str, Any]:
        """An exact-pair retry returns the retained request (a denial too) until it expires."""
        sender = self.active_mailbox(str(call.caller))
        recipient = self.active_mailbox(call.args["recipient_id"])
        retained = self.retained_request(sender["id"], recipient["id"])
        if retained is not None:
            return {"request": self.request_view(retained)}
        if not self.accepts_requests(recipient):
            raise RelayError("REQUESTS_DISABLED", "the recipient does not accept connection requests")
        self.check_pending_caps(sender["id"], recipient["id"])
        self.consume_quota([("requests_sender", sender["id"], "connection_requests_per_sender_per_day_count"),
                            ("requests_recipient", recipient["id"],
                             "connection_requests_per_recipient_per_day_count"),
                            ("requests", "service", "service_connection_requests_per_day_count")])
        now = self.now()
        req = {"request_id": self.new_id(REQUEST_PREFIX, REQUEST_HEX, self.s["requests"]),
               "sender_id": sender["id"],
               "recipient_id": recipient["id"], "status": PENDING, "created_at": now,
               "expires_at": self.request_expiry(sender, recipient, now)}
        self.s["requests"][req["request_id"]] = req
        return {"request": self.request_view(req)}

    def act_list_connection_requests(self, call: Call) -> dict[str, Any]:
        mine = [r for r in self.s["requests"].values() if r["recipient_id"] == call.caller
                and r["status"] == PENDING]
        mine.sort(key=lambda r: (r["created_at"], r["request_id"]))
        return {"requests": [self.request_view(r) for r in mine]}

    def act_respond_connection_request(self, call: Call) -> dict[str, Any]:
        """Allow grants, deny revokes the pair's permission, with the decision, atomically. A
        repeated matching response changes nothing; a different one is INVALID_STATE."""
        req = self.s["requests"].get(call.args["request_id"])
        if req is None or call.caller not in (req["sender_id"], req["recipient_id"]):
            raise RelayError("NOT_FOUND", "no such connection request of yours")
        if req["recipient_id"] != call.caller:
            raise RelayError("NOT_ALLOWED", "only the recipient responds to a connection request")
        decision = ALLOWED if call.args["allowed"] else DENIED
        if req["status"] != PENDING and req["status"] != decision:
            raise RelayError("INVALID_STATE", f"the request was already {req['status']}")
        if req["status"] == PENDING:
            if decision == ALLOWED:
                self.add_grant(req["recipient_id"], req["sender_id"])  # may refuse before anything changes
            else:
                self.remove_grant(req["recipient_id"], req["sender_id"])
            req["status"] = decision
            req["decided_at"] = self.now()
        return {"request": self.request_view(req),
                "allowed": self.has_grant(req["recipient_id"], req["sender_id"])}

    # ------------------------------------------------------------------ actions: tasks

    def act_send_task(self, call: Call) -> dict[str, Any]:
        key = self.require_key(call)
        sender_id, args = str(call.caller), call.args
        body = fingerprint(args)
        replay = self.replay_for_key(sender_id, key, body)
        if replay is not None:
            return {"task": self.task_view(replay)}
        sender = self.active_mailbox(sender_id)
        recipient = self.active_mailbox(args["recipient_id"])
        if not self.has_grant(recipient["id"], sender_id):
            raise RelayError("NOT_ALLOWED", "the recipient has not allowed this sender")
        if not self.check_capability(recipient, args["capability"]):
            raise RelayError("NOT_ALLOWED", "the recipient does not advertise this capability")
        self.check_size(args["task"], "task data")
        self.consume_quota([("sent", sender_id, "sent_tasks_per_mailbox_per_day_count"),
                            ("received", recipient["id"], "received_tasks_per_mailbox_per_day_count"),
                            ("tasks", "service", "service_tasks_per_day_count")])
        task = self.create_task(sender, recipient, args["capability"], args["task"])
        self.remember_key(sender_id, key, body, task)
        return {"task": self.task_view(task)}

    def act_inbox(self, call: Call) -> dict[str, Any]:
        return {"tasks": [self.task_view(t) for t in self.inbox_tasks(str(call.caller))]}

    def act_get_task(self, call: Call) -> dict[str, Any]:
        return {"task": self.task_view(self.participant_task(str(call.caller), call.args["task_id"]))}

    def act_accept_task(self, call: Call) -> dict[str, Any]:
        """offered -> accepted; a repeated acceptance returns the accepted task."""
        task = self.participant_task(str(call.caller), call.args["task_id"], "recipient")
        if task["state"] != ACCEPTED:
            if not self.can_accept(task):
                raise RelayError("INVALID_STATE", f"a {task['state']} task cannot be accepted")
            self.set_state(task, ACCEPTED)
        return {"task": self.task_view(task)}

    def act_decline_task(self, call: Call) -> dict[str, Any]:
        """offered -> declined; a repeated decline returns the declined task."""
        task = self.participant_task(str(call.caller), call.args["task_id"], "recipient")
        if task["state"] != DECLINED:
            if not self.can_decline(task):
                raise RelayError("INVALID_STATE", f"a {task['state']} task cannot be declined")
            self.set_state(task, DECLINED)
        return {"task": self.task_view(task)}

    def act_cancel_task(self, call: Call) -> dict[str, Any]:
        """Sender only, only while offered; a repeated cancel returns the cancelled task."""
        task = self.participant_task(str(call.caller), call.args["task_id"], "sender")
        if task["state"] != CANCELLED:
            if not self.can_cancel(task):
                raise RelayError("INVALID_STATE", f"a {task['state']} task cannot be cancelled")
            self.set_state(task, CANCELLED)
        return {"task": self.task_view(task)}

    def act_complete_task(self, call: Call) -> dict[str, Any]:
        """accepted -> completed with a bounded result; repeating the same result returns the task."""
        task = self.participant_task(str(call.caller), call.args["task_id"], "recipient")
        result = call.args["result"]
        if task["state"] == COMPLETED and task["result"] == result:
            return {"task": self.task_view(task)}
        if not self.can_complete(task):
            raise RelayError("INVALID_STATE", f"a {task['state']} task cannot be completed")
        self.check_size(result, "result")
        task["result"] = copy.deepcopy(result)
        self.set_state(task, COMPLETED)
        return {"task": self.task_view(task)}

    def act_delete_task_content(self, call: Call) -> dict[str, Any]:
        """Either participant, terminal tasks only; both lose access, the key's tombstone stays."""
        task = self.participant_task(str(call.caller), call.args["task_id"])
        if not self.can_delete_content(task):
            raise RelayError("INVALID_STATE", f"a {task['state']} task is not terminal")
        self.erase_content(task)
        del self.s["tasks"][task["task_id"]]
        return {"task_id": task["task_id"], "content_deleted": True}

    # ------------------------------------------------------------------ HTTP surface

    def source_of(self, request: Request) -> str:
        return request.client.host if request.client else "unknown"

    def parse_action_body(self, raw: bytes) -> Any:
        try:
            return strict_json(raw)
        except (ValueError, RecursionError) as exc:
            raise RelayError("VALIDATION_ERROR", "the body is not JSON") from exc

    def serve_action(self, action: str, raw: bytes, headers: Mapping[str, str], source: str) -> Response:
        """POST /v1/actions/{action}: known action, bearer, JSON body, then the action."""
        self.purge_expired(self.now())
        try:
            if action not in self.actions:
                raise RelayError("NOT_FOUND", f"unknown action {action!r}")
            caller = self.authenticate(headers) if self.requires_bearer(action) else None
            args = self.parse_action_body(raw)
            result = self.run_action(Call(action, args, caller, headers.get(self.key_header) or None, source))
        except RelayError as err:
            return self.error_response(err)
        return JSONResponse(result)

    async def http_action(self, request: Request) -> Response:
        raw = await request.body()
        with self.lock:
            return self.serve_action(request.path_params["action"], raw, request.headers,
                                     self.source_of(request))

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    def openapi_document(self) -> dict[str, Any]:
        """OpenAPI 3.1: one POST path per action, its requestBody schema the inputSchema."""
        statuses: dict[int, list[str]] = {}
        for code, row in self.profile.errors.items():
            statuses.setdefault(row.http_status, []).append(str(code))
        errors = {
            str(status): {"description": ", ".join(codes), "content": {"application/json": {"schema": {
                "type": "object", "required": ["error"],
                "properties": {"error": {"type": "object", "required": ["code", "message"],
                                         "properties": {"code": {"type": "string"},
                                                        "message": {"type": "string"}}}}}}}}
            for status, codes in sorted(statuses.items())
        }
        paths: dict[str, Any] = {}
        for name, action in self.actions.items():
            operation: dict[str, Any] = {
                "operationId": name, "description": action.get("description", ""),
                "requestBody": {"required": True, "content": {
                    "application/json": {"schema": copy.deepcopy(action["inputSchema"])}}},
                "responses": {"200": {"description": "the action's result", "content": {
                    "application/json": {"schema": {"type": "object"}}}}, **copy.deepcopy(errors)},
                "security": [{"bearer": []}] if self.requires_bearer(name) else [],
            }
            if name == "send_task":
                operation["parameters"] = [{"name": self.key_header, "in": "header", "required": True,
                                            "schema": {"type": "string", "minLength": 1}}]
            paths[self.spec["routes"]["actions"].replace("{action}", name)] = {"post": operation}
        return {"openapi": "3.1.0", "info": {"title": self.spec["name"], "version": self.spec["version"],
                                             "description": self.spec.get("purpose", "")},
                "paths": paths,
                "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}}

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(self.openapi_document())

    # ------------------------------------------------------------------ A2A adapter

    def agent_card(self, base_url: str) -> dict[str, Any]:
        """An A2A 1.0 agent card naming the JSON-RPC endpoint; no streaming, no push."""
        media = self.send_spec["part_media_type"]
        return {
            "name": self.spec["name"], "description": self.spec.get("purpose", ""),
                "version": self.spec["version"],
            "supportedInterfaces": [{"url": base_url.rstrip("/") + self.a2a["endpoint"],
                                     "protocolBinding": self.a2a["protocol_binding"],
                                     "protocolVersion": self.a2a["protocol_version"]}],
            "capabilities": {"streaming": False, "pushNotifications": False, "extendedAgentCard": False},
            "defaultInputModes": [media], "defaultOutputModes": [media],
            "skills": [{"id": "send_task", "name": "Relay a permissioned task",
                        "description": self.actions["send_task"]["description"], "tags": ["relay", "tasks"],
                        "inputModes": [media], "outputModes": [media]}],
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {
                "scheme": self.a2a["access_setup"]["token_type"]}}},
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        }

    async def agent_card_endpoint(self, request: Request) -> Response:
        return JSONResponse(self.agent_card(str(request.base_url)))

    def a2a_parse(self, raw: bytes) -> Any:
        """The body as JSON within the adapter's limits (request_bytes, json_container_depth)."""
        if len(raw) > self.limit("a2a_request_bytes"):
            raise RpcError(INVALID_REQUEST, f"request body over {self.limit('a2a_request_bytes')} bytes")
        try:
            body = strict_json(raw)
        except RecursionError as exc:
            raise RpcError(INVALID_REQUEST, "JSON nested too deeply") from exc
        except ValueError as exc:
            raise RpcError(PARSE_ERROR, "Parse error") from exc
        if json_depth(body) > self.limit("a2a_json_depth_count"):
            raise RpcError(INVALID_REQUEST, f"JSON nested deeper than {self.limit('a2a_json_depth_count')}")
        return body

    @staticmethod
    def request_id(body: Any) -> str | int | None:
        rid = body.get("id") if isinstance(body, dict) else None
        return rid if isinstance(rid, str) or is_int(rid) else None

    def a2a_envelope(self, body: Any) -> tuple[str, Any]:
        """(method, params) of one JSON-RPC 2.0 request; batches and notifications are unsupported."""
        if isinstance(body, list):
            raise RpcError(INVALID_REQUEST, "batch requests are not supported")
        if not isinstance(body, dict) or body.get("jsonrpc") != wire.VERSION \
                or not isinstance(body.get("method"), str):
            raise RpcError(INVALID_REQUEST, "not a JSON-RPC 2.0 request object")
        if "id" not in body:
            raise RpcError(INVALID_REQUEST, "notifications are not supported")
        if self.request_id(body) is None:
            raise RpcError(INVALID_REQUEST, "the id must be a string or an integer")
        return body["method"], body.get("params")

    def a2a_check_version(self, headers: Mapping[str, str]) -> None:
        if headers.get(self.version_header) != self.a2a_version:
            raise RpcError(VERSION_NOT_SUPPORTED,
                           f"VersionNotSupported: {self.version_header} must be {self.a2a_version}")

    def a2a_authenticate(self, headers: Mapping[str, str]) -> str:
        try:
            return self.authenticate(headers)
        except RelayError as err:
            raise RpcError(RELAY_REFUSED, err.message, {"code": err.code}, self.error_status(err)) from err

    def a2a_action(self, method: str) -> str:
        """The Connect action an A2A method maps to; everything else is not found."""
        if method not in self.a2a_methods:
            raise RpcError(METHOD_NOT_FOUND, f"method {method!r} is not served by this adapter")
        return self.a2a_methods[method]

    def relay_refusal(self, err: RelayError) -> RpcError:
        return RpcError(RELAY_REFUSED, err.message, {"code": err.code})

    def a2a_reject_unsupported(self, action: str, params: dict[str, Any],
                               headers: Mapping[str, str]) -> str | None:
        """The first unsupported item (its protocols.a2a.unsupported entry) a request uses, or None."""
        if headers.get(A2A_EXTENSIONS_HEADER, "").strip():
            return EXTENSIONS
        if "tenant" in params:
            return TENANT
        if "metadata" in params:
            return METADATA
        if action != "send_task":
            return None
        message = params["message"]
        for field, item in (("metadata", METADATA), ("extensions", EXTENSIONS), ("contextId", CONTEXT),
                            ("referenceTaskIds", CONTINUATION)):
            if field in message:
                return item
        configuration = params.get("configuration")
        if isinstance(configuration, dict) and any(k in configuration for k in PUSH_CONFIG_KEYS):
            return PUSH
        if self.wants_blocking(configuration):
            return BLOCKING
        parts = message.get("parts")
        if isinstance(parts, list) and any(isinstance(p, dict) and any(k in p for k in NON_DATA_PART_KEYS)
                                           for p in parts):
            return NON_DATA_PARTS
        return None

    def wants_blocking(self, configuration: Any) -> bool:
        """Blocking unless returnImmediately is true (A2A 1.0: absent means blocking). A
        configuration of the wrong type is invalid params, judged later."""
        if configuration is None:
            return True
        return isinstance(configuration, dict) and configuration.get("returnImmediately", False) is False

    def a2a_continuation(self, caller: str, task_id: Any) -> None:
        """A supplied taskId is read with participant authorization, then refused."""
        task = self.s["tasks"].get(task_id) if isinstance(task_id, str) else None
        if task is None or caller not in (task["sender_id"], task["recipient_id"]):
            raise RpcError(TASK_NOT_FOUND, "TaskNotFound")
        raise RpcError(UNSUPPORTED_OPERATION, f"UnsupportedOperation: {CONTINUATION}")

    def valid_history_length(self, value: Any) -> bool:
        return is_int(value) and 0 <= value <= self.limit("a2a_history_length_maximum_count")

    def a2a_check_output_modes(self, configuration: dict[str, Any]) -> None:
        """acceptedOutputModes: absent, empty, or a string list containing the part media type."""
        if "acceptedOutputModes" not in configuration:
            return
        modes = configuration["acceptedOutputModes"]
        if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
            raise RpcError(INVALID_PARAMS, "acceptedOutputModes must be a list of strings")
        if modes and self.send_spec["part_media_type"] not in modes:
            raise RpcError(CONTENT_TYPE_NOT_SUPPORTED,
                           f"ContentTypeNotSupported: results are {self.send_spec['part_media_type']}")

    def a2a_check_configuration(self, configuration: Any) -> None:
        if not isinstance(configuration, dict) or set(configuration) - set(CONFIGURATION_KEYS):
            raise RpcError(INVALID_PARAMS, f"configuration must be an object of {list(CONFIGURATION_KEYS)}")
        if configuration.get("returnImmediately") is not True:
            raise RpcError(INVALID_PARAMS, "configuration.returnImmediately must be a boolean")
        if "historyLength" in configuration and not self.valid_history_length(configuration["historyLength"]):
            raise RpcError(INVALID_PARAMS, "historyLength must be a nonnegative int32")
        self.a2a_check_output_modes(configuration)

    def a2a_check_message(self, message: dict[str, Any]) -> dict[str, Any]:
        """The message's shape (role, messageId, one data part); returns the part's data."""
        if set(message) - set(MESSAGE_KEYS):
            raise RpcError(INVALID_PARAMS,
                           f"unknown message fields {sorted(set(message) - set(MESSAGE_KEYS))}")
        if message.get("role") != self.send_spec["role"]:
            raise RpcError(INVALID_PARAMS, f"message.role must be {self.send_spec['role']}")
        message_id = message.get("messageId")
        if not isinstance(message_id, str) or not message_id:
            raise RpcError(INVALID_PARAMS, "message.messageId must be a nonempty string")
        if len(message_id.encode("utf-8")) > self.limit("a2a_message_id_bytes"):
            raise RpcError(INVALID_PARAMS, f"messageId over {self.limit('a2a_message_id_bytes')} UTF-8 bytes")
        parts = message.get("parts")
        if not isinstance(parts, list) or len(parts) != self.send_spec["part_count"]:
            raise RpcError(INVALID_PARAMS,
                           f"message.parts must hold exactly {self.send_spec['part_count']} part")
        part = parts[0]
        if not isinstance(part, dict) or set(part) - set(PART_KEYS) or "data" not in part:
            raise RpcError(INVALID_PARAMS, "the part must be a data part")
        if part.get("mediaType") != self.send_spec["part_media_type"]:
            raise RpcError(INVALID_PARAMS,
                           f"the part's mediaType must be {self.send_spec['part_media_type']}")
        errors = sorted(self.data_validator.iter_errors(part["data"]), key=lambda e: list(e.absolute_path))
        if errors:
            raise RpcError(INVALID_PARAMS, f"the data part breaks data_schema: {errors[0].message[:200]}")
        data: dict[str, Any] = part["data"]
        return data

    def a2a_request_key(self, message_id: str) -> str:
        """The sender's request key for a messageId: the prefix plus the SHA-256 of its UTF-8."""
        return self.a2a_key_prefix + hashlib.sha256(message_id.encode("utf-8")).hexdigest()

    def a2a_send_message(self, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        """SendMessage -> send_task: everything unsupported or invalid is refused before delivery."""
        if not isinstance(params, dict) or not isinstance(params.get("message"), dict):
            raise RpcError(INVALID_PARAMS, "params.message must be an object")
        item = self.a2a_reject_unsupported("send_task", params, headers)
        if item is not None:
            raise RpcError(UNSUPPORTED_OPERATION, f"UnsupportedOperation: {item}")
        message = params["message"]
        if "taskId" in message:
            self.a2a_continuation(caller, message["taskId"])
        if set(params) - set(SEND_PARAMS_KEYS):
            raise RpcError(INVALID_PARAMS, f"unknown params {sorted(set(params) - set(SEND_PARAMS_KEYS))}")
        self.a2a_check_configuration(params.get("configuration"))
        data = self.a2a_check_message(message)
        call = Call("send_task", data, caller, self.a2a_request_key(message["messageId"]))
        try:
            result = self.run_action(call)
        except RelayError as err:
            raise self.relay_refusal(err) from err
        return {"task": self.a2a_task(result["task"])}

    def a2a_task_id(self, action: str, params: Any, headers: Mapping[str, str]) -> str:
        """The id of GetTask/CancelTask params ({id, historyLength?})."""
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "params must be an object")
        item = self.a2a_reject_unsupported(action, params, headers)
        if item is not None:
            raise RpcError(UNSUPPORTED_OPERATION, f"UnsupportedOperation: {item}")
        allowed = TASK_PARAMS_KEYS[action]
        if set(params) - set(allowed) or not isinstance(params.get("id"), str):
            raise RpcError(INVALID_PARAMS, f"params must be {{id}} with optional {list(allowed[1:])}")
        if "historyLength" in params and not self.valid_history_length(params["historyLength"]):
            raise RpcError(INVALID_PARAMS, "historyLength must be a nonnegative int32")
        return str(params["id"])

    def a2a_get_task(self, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        """Sender or recipient only; anyone else, an unknown or a deleted task: TaskNotFound."""
        task_id = self.a2a_task_id("get_task", params, headers)
        try:
            result = self.run_action(Call("get_task", {"task_id": task_id}, caller))
        except RelayError as err:
            if err.code in ("NOT_FOUND", "VALIDATION_ERROR"):
                raise RpcError(TASK_NOT_FOUND, "TaskNotFound") from err
            raise self.relay_refusal(err) from err
        return self.a2a_task(result["task"])

    def a2a_cancel_task(self, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        """Sender only while offered (a repeat returns the canceled task); else TaskNotCancelable."""
        task_id = self.a2a_task_id("cancel_task", params, headers)
        try:
            result = self.run_action(Call("cancel_task", {"task_id": task_id}, caller))
        except RelayError as err:
            if err.code in ("NOT_FOUND", "VALIDATION_ERROR"):
                raise RpcError(TASK_NOT_FOUND, "TaskNotFound") from err
            if err.code in ("NOT_ALLOWED", "INVALID_STATE"):
                raise RpcError(TASK_NOT_CANCELABLE, f"TaskNotCancelable: {err.message}") from err
            raise self.relay_refusal(err) from err
        return self.a2a_task(result["task"])

    def a2a_task(self, view: dict[str, Any]) -> dict[str, Any]:
        """A Connect task as an A2A Task: mapped state, the result as one JSON artifact once
        completed, no history (returned_history_messages)."""
        out: dict[str, Any] = {"id": view["task_id"],
                               "status": {"state": self.a2a["state_mapping"][view["state"]],
                                          "timestamp": view["updated_at"]}}
        if view["state"] == COMPLETED and view["result"] is not None:
            out["artifacts"] = [{"artifactId": ARTIFACT_ID, "parts": [
                {"data": view["result"], "mediaType": self.send_spec["part_media_type"]}]}]
        out["history"] = []  # protocols.a2a.limits.returned_history_messages is 0
        return out

    def a2a_handlers(self) -> dict[str, Callable[[str, Any, Mapping[str, str]], dict[str, Any]]]:
        return {"send_task": self.a2a_send_message, "get_task": self.a2a_get_task,
                "cancel_task": self.a2a_cancel_task}

    def rpc_error_response(self, request_id: Any, err: RpcError) -> Response:
        error = wire.error_object(err.code, err.message, err.data)
        return JSONResponse(wire.response(request_id, error=error), status_code=err.status)

    def serve_a2a(self, raw: bytes, headers: Mapping[str, str]) -> Response:
        """POST /a2a: limits, envelope, version, bearer, method, then the mapped action."""
        self.purge_expired(self.now())
        request_id: Any = None
        try:
            body = self.a2a_parse(raw)
            request_id = self.request_id(body)
            method, params = self.a2a_envelope(body)
            self.a2a_check_version(headers)
            caller = self.a2a_authenticate(headers)
            action = self.a2a_action(method)
            result = self.a2a_handlers()[action](caller, params, headers)
        except RpcError as err:
            return self.rpc_error_response(request_id, err)
        return JSONResponse(wire.response(request_id, result))

    async def a2a_endpoint(self, request: Request) -> Response:
        raw = await request.body()
        with self.lock:
            return self.serve_a2a(raw, request.headers)

    # ------------------------------------------------------------------ MCP

    def mcp_tool_actions(self) -> list[str]:
        """Every action but registration (manifest setup: "Registration is not an MCP tool")."""
        return [name for name in self.actions if name != self.registration_action]

    def mcp_tools(self) -> list[dict[str, Any]]:
        """One tool per action, its inputSchema the action's, unchanged."""
        return [{"name": name, "description": self.actions[name].get("description", name),
                 "inputSchema": copy.deepcopy(self.actions[name]["inputSchema"])}
                for name in self.mcp_tool_actions()]

    def mcp_tool_names(self) -> list[str]:
        return self.mcp_tool_actions()

    def mcp_input_schema(self, name: Any) -> Any:
        return self.actions[name]["inputSchema"] if name in self.mcp_tool_actions() else None

    def mcp_server_info(self) -> dict[str, str]:
        return {"name": MCP_SERVER_NAME, "version": str(self.spec["version"])}

    def mcp_call_tool(self, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        """Run the action as the bearer's mailbox; a refusal is an isError result."""
        if not isinstance(params, dict) or params.get("name") not in self.mcp_tool_actions():
            name = params.get("name") if isinstance(params, dict) else None
            raise RpcError(INVALID_PARAMS, f"unknown tool {name!r}")
        arguments = params.get("arguments", {})
        call = Call(params["name"], arguments, caller, headers.get(self.key_header) or None)
        try:
            result = self.run_action(call)
        except RelayError as err:
            body = self.error_body(err)
            return {"content": [{"type": "text", "text": json.dumps(body)}], "structuredContent": body,
                    "isError": True}
        return {"content": [{"type": "text", "text": json.dumps(result)}], "structuredContent": result,
                "isError": False}

    def serve_mcp(self, raw: bytes, headers: Mapping[str, str], method: str = "POST") -> Response:
        """The MCP endpoint: the bearer on every request, then MCP as its documents say
        (protocols/mcp/server.py)."""
        self.purge_expired(self.now())
        try:
            caller = self.authenticate(headers)
        except RelayError as err:
            return self.error_response(err)
        return to_response(self.mcp.handle(method, caller, raw, headers))

    async def mcp_endpoint(self, request: Request) -> Response:
        raw = await request.body()
        with self.lock:
            return self.serve_mcp(raw, request.headers, request.method)

    # ------------------------------------------------------------------ control

    def control_advance_clock(self, args: dict[str, Any]) -> Response:
        """The base's, answering the new time as control ``now`` says it (ISO 8601)."""
        answer = super().control_advance_clock(args)
        return answer if answer.status_code != 200 else JSONResponse({"ok": True, "now": iso(self.now())})

    def control_now(self, args: dict[str, Any]) -> Response:
        return JSONResponse({"now": iso(self.now())})

    def control_seed_mailboxes(self, args: dict[str, Any]) -> Response:
        """Register ``count`` extra mailboxes bypassing every registration quota."""
        count = args.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= SEED_MAILBOXES_MAX:
            return self.control_error(400, f"count must be an integer from 1 to {SEED_MAILBOXES_MAX}")
        capabilities = args.get("capabilities", [])
        if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
            return self.control_error(400, "capabilities must be a list of strings")
        self.purge_expired(self.now())
        made = []
        for index in range(count):
            box, token = self.add_mailbox(f"{args.get('label', 'seeded')}-{index + 1}", capabilities,
                                          bool(args.get("discoverable", False)))
            box["accepts_connection_requests"] = bool(args.get("accepts_connection_requests", False))
            made.append({"id": box["id"], "token": token})
        return JSONResponse({"mailboxes": made})

    # ------------------------------------------------------------------ routes

    def own_routes(self) -> list[BaseRoute]:
        """The relay's wire (control is the base's); endpoints look their handler up at
        request time, so a patched method takes effect."""
        paths = self.spec["routes"]
        return [
            Route(paths["actions"], self.endpoint("http_action"), methods=["POST"]),
            Route(paths["a2a"], self.endpoint("a2a_endpoint"), methods=["POST"]),
            Route(paths["mcp"], self.endpoint("mcp_endpoint"), methods=["POST", "GET", "DELETE"]),
            Route(paths["health"], self.endpoint("health"), methods=["GET"]),
            Route(paths["openapi"], self.endpoint("openapi"), methods=["GET"]),
            Route(self.a2a["agent_card"], self.endpoint("agent_card_endpoint"), methods=["GET"]),
        ]


def create_app(profile: Profile, config: ReferenceConfig | None = None) -> Starlette:
    """The reference as an ASGI app; ``app.state.reference`` is the instance faults patch."""
    return WeverReference(profile, config).app()


__all__ = ["Call", "ReferenceConfig", "RelayError", "RpcError", "WeverReference", "create_app",
           "reference_credentials"]
