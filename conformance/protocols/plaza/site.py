"""What the Agent Plaza reference site is built from, shared by its parts: the names of
states, errors and scopes, the small records a request travels in (Principal, Call,
Issue, Wait), the refusal a part raises (SiteError) and helpers for ids and times. The
site itself is reference/server.py; the parts of the protocol it serves are mixins beside it."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from conformance.kit.reference import ReferenceConfig as BaseConfig
from conformance.kit.reference import Refusal, is_int
from conformance.protocols.a2a.names import CANCELED, COMPLETED

# Connection states (the profile's choice, docs/agent-plaza.md "Consent and controls").
INVITATION, ACTIVE, DECLINED = "invitation", "active", "declined"
CLOSED, REMOVED, BLOCKED = "closed", "removed", "blocked"
OPEN_STATES = (INVITATION, ACTIVE)  # "eligible current relationships" of mailbox attention

# A2A 1.0 task states (the proto's TaskState, protocols/a2a/names.py).
TERMINAL_TASK_STATES = (COMPLETED, CANCELED)

# Error names: keys of the profile's ``errors:`` block (checked at start).
PARSE_ERROR = "PARSE_ERROR"
INVALID_REQUEST = "INVALID_REQUEST"
METHOD_NOT_FOUND = "METHOD_NOT_FOUND"
INVALID_PARAMETERS = "A2A_INVALID_PARAMETERS"
TASK_NOT_FOUND = "TASK_NOT_FOUND"
TASK_NOT_CANCELABLE = "TASK_NOT_CANCELABLE"
PUSH_NOT_SUPPORTED = "PUSH_NOTIFICATION_NOT_SUPPORTED"
UNSUPPORTED_OPERATION = "UNSUPPORTED_OPERATION"
EXTENDED_CARD_NOT_CONFIGURED = "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
EXTENSION_REQUIRED = "EXTENSION_SUPPORT_REQUIRED"
VERSION_NOT_SUPPORTED = "VERSION_NOT_SUPPORTED"
UNAUTHENTICATED = "UNAUTHENTICATED"
FORBIDDEN = "FORBIDDEN"
NOT_FOUND = "NOT_FOUND"
NOT_PERMITTED = "NOT_PERMITTED"
CONTEXT_CONSUMED = "CONTEXT_CONSUMED"
DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
INVALID_STATE = "INVALID_STATE"
ERROR_NAMES = (PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMETERS, TASK_NOT_FOUND,
               TASK_NOT_CANCELABLE, PUSH_NOT_SUPPORTED, UNSUPPORTED_OPERATION, EXTENDED_CARD_NOT_CONFIGURED,
               EXTENSION_REQUIRED, VERSION_NOT_SUPPORTED, UNAUTHENTICATED, FORBIDDEN, NOT_FOUND,
               NOT_PERMITTED, CONTEXT_CONSUMED, DEADLINE_EXCEEDED, INVALID_STATE)
UNSUPPORTED_HTTP_STATUS = 415  # a body that is not application/json

# A2A methods this site refuses, with the refusal (the agent card's capabilities are all false).
REFUSED_METHODS = {
    "SendStreamingMessage": UNSUPPORTED_OPERATION,
    "SubscribeToTask": UNSUPPORTED_OPERATION,
    "CreateTaskPushNotificationConfig": PUSH_NOT_SUPPORTED,
    "GetTaskPushNotificationConfig": PUSH_NOT_SUPPORTED,
    "ListTaskPushNotificationConfigs": PUSH_NOT_SUPPORTED,
    "DeleteTaskPushNotificationConfig": PUSH_NOT_SUPPORTED,
    "GetExtendedAgentCard": EXTENDED_CARD_NOT_CONFIGURED,
}
PUSH_CONFIG_KEY = "taskPushNotificationConfig"

# Scopes (identity.profiles.accountAgent.supportedScopes) and what each allows (the profile's mapping).
PEOPLE_READ, CONNECTIONS_READ, CONNECTIONS_WRITE = "people:read", "connections:read", "connections:write"
MESSAGES_READ, MESSAGES_WRITE = "messages:read", "messages:write"
READ_SCOPES = (CONNECTIONS_READ, PEOPLE_READ, MESSAGES_READ)
COMMAND_SCOPES = {  # part 1's commands; each part mixin adds its own (PART_COMMANDS)
    "status": PEOPLE_READ, "discover": PEOPLE_READ, "friends": CONNECTIONS_READ,
    "respond": CONNECTIONS_WRITE, "friend_control": CONNECTIONS_WRITE, "stop": CONNECTIONS_WRITE,
    "read_conversation": MESSAGES_READ, "message_status": MESSAGES_READ, "inbox": MESSAGES_READ,
    "inbox_summary": MESSAGES_READ, "receive_pull": MESSAGES_READ, "receive_ack": MESSAGES_READ,
    "receive_status": MESSAGES_READ,
}
METHOD_SCOPES = {"GetTask": MESSAGES_READ, "ListTasks": MESSAGES_READ, "CancelTask": MESSAGES_WRITE}
TEXT_SCOPE, FIRST_CONTACT_SCOPE = MESSAGES_WRITE, CONNECTIONS_WRITE

# Durable receive work kinds (durableReceive.supported_work) and the mailbox attention group this part fills.
FRIEND_INVITATION, FRIEND_MESSAGE = "friend_invitation", "friend_message"
FRIEND_CHANNEL_CHANGE = "friend_channel_change"
EXTERNAL_GROUP = "external_agent_items"
DECISION_OPTIONS = ("accept", "decline")  # respond decisions an invitee may take (respond's enum, checked)
RECIPIENT_FIELD = "recipientId"

# A2A ListTasks and CancelTask params (the document gives no schema; these are A2A 1.0's fields).
LIST_TASKS_PAGE_DEFAULT, LIST_TASKS_PAGE_MAXIMUM = 50, 100
LIST_TASKS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tenant": {"type": "string", "maxLength": 200},
        "contextId": {"type": "string", "minLength": 1, "maxLength": 120},
        "pageSize": {"type": "integer", "minimum": 1, "maximum": LIST_TASKS_PAGE_MAXIMUM},
        "pageToken": {"type": "string", "maxLength": 120},
        "historyLength": {"type": "integer", "minimum": 0, "maximum": 2147483647},
    },
    "additionalProperties": False,
}
CANCEL_TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"tenant": {"type": "string", "maxLength": 200},
                   "id": {"type": "string", "minLength": 1, "maxLength": 120},
                   "metadata": {"type": "object"}},
    "required": ["id"],
    "additionalProperties": False,
}

# Page sizes the document does not state (the profile's choice).
DISCOVER_PAGE_DEFAULT = 20
FRIENDS_PAGE = 50

# Agents seeded at start and after a reset: label -> (alias, interests). The first three are
# the run's credentials; the others give discover something to find.
SEEDED_VISITORS: dict[str, tuple[str, list[str]]] = {
    "alice": ("Alice", ["reading", "travel"]),
    "bob": ("Bob", ["chess", "cooking"]),
    "carol": ("Carol", ["music"]),
    "dana": ("Dana", ["reading", "gardening"]),
    "emil": ("Emil", ["chess", "reading groups"]),
    "fay": ("Fay", ["music", "hiking"]),
}
CREDENTIAL_LABELS = ("alice", "bob", "carol")
READER_OF, OWNER_OF = "alice", "alice"  # the read-only account Agent credential and the owner's are alice's
VISITOR, ACCOUNT_AGENT, OWNER = "visitor", "account_agent", "owner"
SEED_AGENTS_MAXIMUM = 80

WAIT_STEP_S = 0.02  # polling step of a blocking send or a waiting receive (the lock is released between)
SITE_NAME = "Agent Plaza personal endpoint (reference)"
WELL_KNOWN_CARD = "/.well-known/agent-card.json"
MEDIA_TEXT, MEDIA_JSON = "text/plain", "application/json"
SENDER_KIND = "agent"


# --------------------------------------------------------------------------- config


@dataclass
class ReferenceConfig(BaseConfig):
    """How one reference instance behaves (the base's control, seed and clock): the seed
    makes minted ids, batches and receipts reproducible; the clock gives timestamps
    (waits use real time)."""

    # the server's deadline for a blocking send, when not the document's 20 s: the tests'
    # sites without control, so a run does not wait 20 s for each deadline row (no check
    # judges how long the deadline is, only what ends a wait)
    deadline_s: float | None = None


class SiteError(Refusal):
    """A refusal named by its profile error name (profiles/agent-plaza.yaml ``errors:``),
    with its ErrorInfo metadata; ``status`` overrides the row's HTTP status (415)."""

    def __init__(self, name: str, message: str | None = None, metadata: dict[str, str] | None = None,
                 status: int | None = None) -> None:
        super().__init__(name, message, status=status)
        self.metadata = dict(metadata or {})


class RpcError(Exception):
    """A JSON-RPC error as it goes on the wire, with the HTTP status its answer carries."""

    def __init__(self, code: int, message: str, data: list[dict[str, Any]], status: int = 200) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status


@dataclass(frozen=True)
class Principal:
    """Who a bearer token speaks for, and with which scopes."""

    visitor_id: str
    scopes: frozenset[str]
    kind: str = VISITOR


@dataclass
class Call:
    """One JSON-RPC request as the site runs it."""

    principal: Principal
    method: str
    params: dict[str, Any]
    request_id: Any = None


@dataclass
class Wait:
    """An answer that waits (lock released) until ``ready()`` or ``seconds`` pass; then
    ``finish()`` (under the lock) gives the result or raises a SiteError."""

    ready: Callable[[], bool]
    finish: Callable[[], Any]
    seconds: float


@dataclass
class Pending:
    request_id: Any
    wait: Wait


@dataclass(frozen=True)
class Issue:
    """One entry of ``validationIssues``: a safe dotted path and the JSON Schema keyword broken."""

    path: str
    code: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "code": self.code}


@dataclass
class Validators:
    """The compiled schemas of the params and of every data command branch."""

    send_shell: Any
    text_part: Any
    data_part_shell: Any
    commands: dict[str, Any] = field(default_factory=dict)
    methods: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers


def derived_uuid(text: str) -> str:
    """A version-4-shaped UUID derived from ``text`` (the same in every process)."""
    return str(uuid.UUID(bytes=hashlib.sha256(text.encode()).digest()[:16], version=4))


def derived_token(text: str) -> str:
    return "plz_" + hashlib.sha256(f"plaza-reference-token:{text}".encode()).hexdigest()[:40]


def seeded_visitor(label: str) -> tuple[str, str]:
    """The fixed (public id, token) of a seeded visitor."""
    return derived_uuid(f"plaza-reference-visitor:{label}"), derived_token(label)


def reader_token() -> str:
    return derived_token(f"{READER_OF}:account-agent-read")


def owner_token() -> str:
    return derived_token(f"{OWNER_OF}:owner-account")


def reference_credentials() -> dict[str, Any]:
    """The seeded agents as run credentials (profiles/agent-plaza.yaml ``credentials:``)."""
    out: dict[str, Any] = {}
    for label in CREDENTIAL_LABELS:
        visitor_id, token = seeded_visitor(label)
        out[label] = {"id": visitor_id, "token": token}
    out["reader"] = {"id": seeded_visitor(READER_OF)[0], "token": reader_token(), "scopes": list(READ_SCOPES)}
    out["owner"] = {"token": owner_token()}
    return out


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso(ms: int) -> str:
    """ISO 8601 UTC with milliseconds and a Z, from integer milliseconds."""
    return (EPOCH + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
                     r"(?:[Zz]|([+-])(\d{2}):(\d{2}))")


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, year 0 too)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def parse_ms(text: str) -> int:
    """Integer milliseconds of an RFC 3339 date-time, exactly: no float rounding, and the
    forms datetime.fromisoformat refuses (a leap second, year 0, lowercase t/z) too."""
    match = RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 date-time: {text[:40]!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, sign, off_h, off_m = match.group(7), match.group(8), match.group(9), match.group(10)
    seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    if sign is not None:
        seconds -= (1 if sign == "+" else -1) * (int(off_h) * 3600 + int(off_m) * 60)
    return seconds * 1000 + int((fraction or "0")[:3].ljust(3, "0"))


def fingerprint(value: Any) -> str:
    """What a replay must repeat: a hash of the canonical JSON."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def valid_request_id(value: Any) -> bool:
    """JSON-RPC ids: a string or a number (never null, a boolean or a container)."""
    return isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))


def dotted(base: str, parts: Iterable[Any]) -> str:
    """``params`` + ["message", "parts", 0, "text"] -> ``params.message.parts[0].text``."""
    out = base
    for part in parts:
        out += f"[{part}]" if is_int(part) else f".{part}"
    return out


# --------------------------------------------------------------------------- the reference


