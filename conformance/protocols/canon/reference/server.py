"""The in-memory Canon reference: a seeded world of users, contacts and conversations
behind a Starlette app that serves the Canon Agent Verbs over both bindings of the
profile (``POST /verbs/{verb}`` and MCP at ``POST /mcp``).

The verb list, input schemas and error codes/statuses are read from the spec and the
profile. What the spec states only in prose (deadline ceilings, card envelope limits,
the replay window) is read through the profile's ``limits:`` block. Every
behaviour is one small method of ``CanonReference`` so that a fault replaces one.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from conformance.documents.schemas import validator_for, violations
from conformance.documents.verbs import verb_operations
from conformance.kit.reference import CodedRefusal, Reference
from conformance.kit.reference import ReferenceConfig as BaseConfig
from conformance.model import Profile
from conformance.protocols.mcp.server import McpHost, McpServer, to_response

MINUTE_MS = 60_000
# The reference's own choice when no deadline is given (the spec requires bindings to fill one).
DEFAULT_DEADLINE_MS = 10 * MINUTE_MS
# The deadline ceilings, the replay window and the card envelope size are the profile's
# `limits:` (input_ceiling_ms, card_ceiling_ms, approval_ceiling_ms,
# approval_replay_window_ms, card_envelope_bytes), read from the spec's descriptions.
SECRET_KEY_MARKERS = ("secret", "token", "password", "apikey", "api_key", "privatekey", "private_key",
                      "credential")
# The one error code outside the profile: a verb the spec does not define.
UNKNOWN_VERB = "UNKNOWN_VERB"
UNKNOWN_VERB_STATUS = 404
# A handler that crashed (only possible when a fault let an invalid input through).
INTERNAL = "INTERNAL"
INTERNAL_STATUS = int(HTTPStatus.INTERNAL_SERVER_ERROR)
BLOCKING_VERBS = ("request_input", "request_approval", "request_card")
# Attachment URLs the reference's (imaginary) upload flow and GIF picker issue: its allowlist.
MEDIA_PREFIXES = ("https://media.canon.reference/uploads/", "https://media.canon.reference/gif/")
MEDIA_URL = MEDIA_PREFIXES[0] + "conformance.png"
# unifiedDiff sanitizing: paths the reference treats as sensitive, and secret tokens it redacts
SENSITIVE_PATH = re.compile(r"(^|/)(\.env(\..*)?|id_rsa|id_ed25519|.*\.pem|\.npmrc|\.netrc"
                            r"|credentials(\.json)?)$")
SECRET_TOKEN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----"
                          r"|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}",
                          re.S)
REDACTED = "[REDACTED]"

# role -> (id, kind, admission policy); conversations are built in seed_world.
USERS = {
    "agent": ("agent_ref", "agent", "closed"),
    "owner": ("user_owner", "human", "open"),
    "member": ("user_member", "human", "open"),
    "open_user": ("user_open", "human", "open"),
    "approval_user": ("user_approval", "human", "approval"),
    "closed_user": ("user_closed", "human", "closed"),
    "stranger": ("user_stranger", "human", "open"),
}
CONTACT_ROLES = ("owner", "member", "open_user", "approval_user")
# role -> id of what seed_world builds besides the users (its conversations and message)
SEEDED_OBJECTS = {"owner_chat": "conv_owner_chat", "owner_message": "msg_owner_message",
                  "group": "conv_group", "agent_group": "conv_agent_group", "active_chat": "conv_owner_chat",
                  "media_url": MEDIA_URL}


def world_roles() -> dict[str, str]:
    """Every role of the seeded world with its id: what control ``world`` answers, and what
    a config's ``world:`` names for a live run (``Profile.reference_world``)."""
    return {**{role: uid for role, (uid, _, _) in USERS.items()}, **SEEDED_OBJECTS}


@dataclass
class ReferenceConfig(BaseConfig):
    """How one reference instance behaves (control, seed and clock: the base's)."""

    token: str | None = None  # when set, both bindings require it as the bearer token
    mcp_sessions: bool = True  # MCP initialize issues a session id
    mcp_page_size: int | None = None  # tools/list in pages of this many tools (None: one page)


class VerbError(CodedRefusal):
    """A verb failure named by its profile error code (profiles/canon-verbs.yaml ``errors:``)."""


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


def fingerprint(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"))


def spec_verbs(spec: dict[str, Any], profile_settings: dict[str, Any]) -> list[str]:
    """Every ``<verb>_input`` under the profile's defs pointer that has a ``<verb>_result``."""
    return list(verb_operations(spec, profile_settings.get("spec", ""), profile_settings["verbs"]))


class CanonReference(McpHost, Reference):
    """State and behaviour of the reference Canon world. All mutable state lives in
    ``self.w`` (plain JSON) so that ``digest`` covers it whole: the clock's offset too."""

    config: ReferenceConfig

    def __init__(self, profile: Profile, config: ReferenceConfig | None = None) -> None:
        self.w: dict[str, Any] = {}  # before the base sets the clock's offset, which lives in it
        super().__init__(profile, config or ReferenceConfig())
        profile_settings, spec = profile.settings, profile.spec
        self.settings = profile_settings
        self.spec = spec
        self.errors: dict[str, dict[str, Any]] = dict(profile_settings["errors"])
        ops = verb_operations(spec, profile_settings.get("spec", ""), profile_settings["verbs"])
        self.verbs = list(ops)
        self.input_schemas = {v: op.params_schema for v, op in ops.items()}
        self.result_schemas = {v: op.result_schema or {} for v, op in ops.items()}
        self.validators = {v: validator_for(s) for v, s in self.input_schemas.items()}
        self.seed_world()
        # MCP: the revision the profile's mcp binding names, served strictly (protocols/mcp/server.py)
        mcp = profile_settings.get("bindings", {}).get("mcp", {})
        self.mcp_versions: list[str] = [str(mcp.get("protocol_version", "2025-06-18"))]
        self.mcp_sessions = self.config.mcp_sessions
        self.mcp_page_size = self.config.mcp_page_size
        self.mcp_streamed = False
        self.mcp = McpServer(self)

    # ------------------------------------------------------------------ basics

    @property
    def clock_offset(self) -> float:
        """Seconds control (or a wait nobody answers) moved the clock: part of the world
        (``w``), so a reset starts it over and the digest covers it."""
        return float(self.w.get("clock_offset", 0.0))

    @clock_offset.setter
    def clock_offset(self, seconds: float) -> None:
        self.w["clock_offset"] = seconds

    def now_ms(self) -> int:
        return int(round(self.now() * 1000))

    def jump_clock_to(self, at_ms: int) -> None:
        """Blocking waits without a scripted human: time passes until the deadline."""
        gap = at_ms - self.now_ms()
        if gap > 0:
            self.clock_offset += gap / 1000

    def new_id(self, prefix: str) -> str:
        """A fresh id; reproducible from the seed and the id counter when seeded."""
        self.w["seq"] += 1
        if self.config.seed is None:
            tail = uuid.uuid4().hex[:16]
        else:
            tail = hashlib.sha256(f"{self.config.seed}:{self.w['seq']}".encode()).hexdigest()[:16]
        return f"{prefix}_{tail}"

    def role(self, name: str) -> str:
        return self.w["roles"][name]

    @property
    def agent(self) -> str:
        return self.role("agent")

    @property
    def owner(self) -> str:
        return self.role("owner")

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.w, sort_keys=True, default=str).encode()).hexdigest()

    # ------------------------------------------------------------------ world

    def reset(self) -> None:
        self.seed_world()

    def seed_world(self) -> None:
        now = int(round(self.config.clock() * 1000))
        roles = world_roles()
        self.w = {
            "seq": 0,
            "clock_offset": 0.0,
            "roles": roles,
            "users": {uid: {"id": uid, "kind": kind, "policy": policy}
                      for uid, kind, policy in USERS.values()},
            "contacts": {
                roles[r]: {"id": roles[r], "source": "direct_add", "addedAt": iso(now),
                           "displayNameOverride": None}
                for r in CONTACT_ROLES
            },
            "conversations": {},
            "sent": {},
            "interactions": {"input": {}, "approval": {}, "card": {}},
            "requests": {},
            "admitted": [],
            "scripts": {verb: [] for verb in BLOCKING_VERBS},
        }
        agent, owner, member = roles["agent"], roles["owner"], roles["member"]
        chat = self.add_conversation("direct", [agent, owner], owner=None, conv_id=roles["owner_chat"])
        self.store_message(chat, owner, "Hello from your owner", message_id=roles["owner_message"])
        self.add_conversation("group", [owner, agent, member], owner=owner, name="Owner's group",
                              conv_id=roles["group"])
        self.add_conversation("group", [agent, member], owner=agent, name="Agent's group",
                              conv_id=roles["agent_group"])
        self.w["active_conversation"] = roles["active_chat"]

    def add_conversation(self, kind: str, members: list[str], owner: str | None, name: str | None = None,
                         conv_id: str | None = None) -> dict[str, Any]:
        cid = conv_id or self.new_id("conv")
        conv = {
            "id": cid, "type": kind, "name": name, "topic": None, "members": list(dict.fromkeys(members)),
            "owner": owner, "admins": [owner] if owner else [], "createdAt": self.now_ms(),
            "order": len(self.w["conversations"]), "messages": [],
        }
        self.w["conversations"][cid] = conv
        return conv

    def store_message(self, conv: dict[str, Any], sender: str, text: str | None,
                      message_id: str | None = None, **extra: Any) -> dict[str, Any]:
        msg = {
            "messageId": message_id or self.new_id("msg"), "senderId": sender, "text": text,
            "contentType": extra.pop("contentType", "text"), "createdAt": self.now_ms(), "reactions": {},
            **extra,
        }
        conv["messages"].append(msg)
        return msg

    def user(self, user_id: str) -> dict[str, Any] | None:
        return self.w["users"].get(user_id)

    def conversation(self, conv_id: str) -> dict[str, Any]:
        conv = self.w["conversations"].get(conv_id)
        if conv is None:
            raise VerbError("CONVERSATION_NOT_FOUND", f"conversation {conv_id!r} not found")
        return conv

    def member_conversation(self, conv_id: str | None) -> dict[str, Any]:
        """The conversation (the active one when None) the agent is a member of."""
        conv = self.conversation(conv_id or self.w["active_conversation"])
        self.check_member(conv, self.agent)
        return conv

    def check_member(self, conv: dict[str, Any], user_id: str) -> None:
        if user_id not in conv["members"]:
            raise VerbError("NOT_A_MEMBER", f"{user_id!r} is not a member of {conv['id']!r}")

    def is_human_member(self, conv: dict[str, Any], user_id: str) -> bool:
        user = self.user(user_id)
        return user is not None and user["kind"] == "human" and user_id in conv["members"]

    def direct_conversations(self, user_id: str) -> list[dict[str, Any]]:
        """Direct conversations of the agent and ``user_id``, oldest first."""
        pair = {self.agent, user_id}
        convs = [c for c in self.w["conversations"].values()
                 if c["type"] == "direct" and set(c["members"]) == pair]
        return sorted(convs, key=lambda c: (c["createdAt"], c["order"]))

    # ------------------------------------------------------------------ dispatch

    def validate_input(self, verb: str, args: Any) -> None:
        broken = violations(self.validators[verb], args, limit=1, length=300)
        if broken:
            raise VerbError("VALIDATION_ERROR", broken[0])

    def call_verb(self, verb: str, args: Any, validate: Any = None) -> dict[str, Any]:
        """Run one verb: known verb, valid input (``validate``: the binding's check of it,
        ``validate_input`` by default), then the handler; VerbError on failure."""
        if verb not in self.verbs:
            raise VerbError(UNKNOWN_VERB, f"unknown verb {verb!r}")
        (validate or self.validate_input)(verb, args)
        self.check_prose(verb, args)
        result = getattr(self, f"verb_{verb}")(args)
        return self.finish_result(verb, result)

    def finish_result(self, verb: str, result: dict[str, Any]) -> dict[str, Any]:
        return result

    # ------------------------------------------------------------------ rules of the descriptions

    def text_fits(self, text: str, limit: str) -> bool:
        """send_to text and forward captions: at most N bytes of UTF-8 (the schema counts chars)."""
        return len(text.encode()) <= self.limit(limit)

    def metadata_fits(self, metadata: Any) -> bool:
        """turnMetadata: JSON.stringify length in UTF-16 code units, not bytes."""
        text = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False)
        return len(text.encode("utf-16-le")) // 2 <= self.limit("metadata_utf16_units")

    def attachment_allowed(self, url: str) -> bool:
        """Server allowlist, fail-closed: only URLs the upload flow or the GIF picker issued."""
        return url.startswith(MEDIA_PREFIXES)

    def check_prose(self, verb: str, args: dict[str, Any]) -> None:
        """What the descriptions state beyond <verb>_input; refused like a schema break."""
        if verb in ("send_to", "forward") and isinstance(args.get("text"), str):
            limit = "text_bytes" if verb == "send_to" else "caption_bytes"
            if not self.text_fits(args["text"], limit):
                raise VerbError("VALIDATION_ERROR", f"/text: over {self.limit(limit)} bytes of UTF-8")
        opts = args.get("messageOptions") or {}
        if "metadata" in opts and not self.metadata_fits(opts["metadata"]):
            raise VerbError("VALIDATION_ERROR", "/messageOptions/metadata: serialized over the limit")
        for att in opts.get("attachments") or []:
            if not self.attachment_allowed(att["url"]):
                raise VerbError("VALIDATION_ERROR",
                                "/messageOptions/attachments: url is not from a Canon upload")

    def error_status(self, err: VerbError) -> int:
        """HTTP status of an error: the profile's row for its code."""
        if err.code == UNKNOWN_VERB:
            return UNKNOWN_VERB_STATUS
        return int(self.errors[err.code]["status"])

    def error_body(self, err: VerbError) -> dict[str, Any]:
        return {"error": {"code": err.code, "message": err.message}}

    # ------------------------------------------------------------------ idempotency

    def message_id_record(self, sender: str, message_id: str | None,
                          args: dict[str, Any]) -> dict[str, Any] | None:
        """The replayed result of an identical earlier send; MESSAGE_ID_EXISTS on a different one."""
        if message_id is None:
            return None
        record = self.w["sent"].get(f"{sender}|{message_id}")
        if record is None:
            return None
        if record["fingerprint"] == fingerprint(args):
            return self.replay_result(record)
        self.message_id_conflict(record)
        return None

    def replay_result(self, record: dict[str, Any]) -> dict[str, Any] | None:
        return copy.deepcopy(record["result"])

    def message_id_conflict(self, record: dict[str, Any]) -> None:
        raise VerbError("MESSAGE_ID_EXISTS", "messageId already used with a different payload")

    def remember_send(self, sender: str, message_id: str | None, args: dict[str, Any],
                      result: dict[str, Any]) -> None:
        if message_id is not None:
            self.w["sent"][f"{sender}|{message_id}"] = {"fingerprint": fingerprint(args),
                                                         "result": copy.deepcopy(result)}

    def check_fresh_id(self, kind: str, interaction_id: str | None) -> None:
        """inputId / approvalId are single-use."""
        if interaction_id is not None and interaction_id in self.w["interactions"][kind]:
            raise VerbError("ID_ALREADY_USED", f"{kind} id {interaction_id!r} was used before")

    # ------------------------------------------------------------------ deadlines

    def requested_deadline(self, args: dict[str, Any], now: int) -> int:
        """expiresAt wins over timeoutMs; without either, the binding's default."""
        if "expiresAt" in args:
            return int(args["expiresAt"])
        if "timeoutMs" in args:
            return now + int(args["timeoutMs"])
        return now + DEFAULT_DEADLINE_MS

    def deadline(self, args: dict[str, Any], ceiling_ms: int) -> int:
        now = self.now_ms()
        expires = self.requested_deadline(args, now)
        self.check_deadline(expires, now, ceiling_ms)
        return int(expires)

    def check_deadline(self, expires_at: int, now: int, ceiling_ms: int) -> None:
        if expires_at - now > ceiling_ms:
            raise VerbError("DEADLINE_TOO_FAR",
                            f"deadline is more than {ceiling_ms // MINUTE_MS} minutes ahead")

    def pop_script(self, verb: str) -> dict[str, Any]:
        queue = self.w["scripts"][verb]
        return queue.pop(0) if queue else {"action": "timeout"}

    def record_interaction(self, kind: str, iid: str, conv: dict[str, Any], responder: str, expires: int,
                           status: str, **extra: Any) -> dict[str, Any]:
        record = {"id": iid, "kind": kind, "conversationId": conv["id"], "responseUserId": responder,
                  "expiresAt": expires, "status": status, "createdAt": self.now_ms(), **extra}
        self.w["interactions"][kind][iid] = record
        return record

    def responder(self, conv: dict[str, Any], requested: str | None) -> str:
        """responseUserId must be a human member; the owner by default."""
        if requested is None:
            return self.owner
        if not self.is_human_member(conv, requested):
            raise VerbError("NOT_A_MEMBER",
                            f"responder {requested!r} is not a human member of {conv['id']!r}")
        return requested

    # ------------------------------------------------------------------ send_to

    def check_content(self, args: dict[str, Any]) -> None:
        if "text" not in args and not args.get("messageOptions", {}).get("attachments"):
            raise VerbError("VALIDATION_ERROR",
                            "text is required unless messageOptions.attachments is non-empty")

    def check_self_context_source(self, args: dict[str, Any]) -> None:
        """A selfContext's sourceConversationId must be a conversation the agent is in."""
        if "selfContext" not in args:
            return
        source = self.w["conversations"].get(args["sourceConversationId"])
        if source is None or self.agent not in source["members"]:
            raise VerbError("NOT_A_MEMBER", "the agent is not a member of sourceConversationId")

    def check_mentions(self, members: list[str], mentions: list[str]) -> None:
        for uid in mentions:
            if uid not in members:
                raise VerbError("INVALID_MENTION", f"mention {uid!r} is not a member of the conversation")

    def resolve_target_user(self, args: dict[str, Any]) -> str:
        if "targetUserId" in args:
            uid = args["targetUserId"]
        else:
            contact = args["canonContactId"]
            uid = contact.removeprefix("contact:") if contact.startswith("contact:") else ""
            if uid not in self.w["contacts"]:
                raise VerbError("USER_NOT_FOUND", f"contact {contact!r} does not resolve")
        if self.user(uid) is None or uid == self.agent:
            raise VerbError("USER_NOT_FOUND", f"user {uid!r} not found")
        return uid

    def send_admission(self, user_id: str) -> str:
        """open | approval | closed, for a user-targeted send by the agent."""
        policy = self.user(user_id)["policy"]  # type: ignore[index]
        if policy == "approval" and user_id in self.w["admitted"]:
            return "open"
        return policy

    def closed_result(self) -> dict[str, Any]:
        return {"status": "unavailable", "reason": "closed"}

    def pick_session(self, user_id: str, selection: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        """(conversation, created) for an open user target; (None, False) = no_session.
        A conversation to create is returned with created=True and not yet stored."""
        mode = selection.get("mode", "continue_or_create")
        existing = self.direct_conversations(user_id)
        if mode == "specific":
            match = [c for c in existing if c["id"] == selection["conversationId"]]
            if not match:
                raise VerbError("CONVERSATION_NOT_FOUND", "not a direct conversation with that user")
            return match[0], False
        if mode == "new":
            return None, True
        if existing:
            return existing[-1], False
        return None, mode == "continue_or_create"

    def compose(self, args: dict[str, Any]) -> dict[str, Any]:
        """Stored fields of a message sent from send_to's args."""
        opts = args.get("messageOptions", {})
        attachments = opts.get("attachments") or []
        content_type = opts.get("contentType") or (attachments[0]["kind"] if attachments else "text")
        extra: dict[str, Any] = {"contentType": content_type}
        for key in ("attachments", "mentions", "replyTo", "metadata"):
            if key in opts:
                extra[key] = opts[key]
        if "selfContext" in args:
            extra["selfContext"] = args["selfContext"]
            extra["sourceConversationId"] = args["sourceConversationId"]
        return extra

    def deliver(self, conv: dict[str, Any], args: dict[str, Any], message_id: str | None) -> dict[str, Any]:
        extra = self.compose(args)
        if "selfContext" in extra:
            extra["selfContextId"] = self.new_id("selfctx")
        msg = self.store_message(conv, self.agent, args.get("text"), message_id=message_id, **extra)
        out = {"status": "messaged", "conversationId": conv["id"], "messageId": msg["messageId"]}
        if "selfContextId" in msg:
            out["selfContextId"] = msg["selfContextId"]
        return out

    def verb_send_to(self, args: dict[str, Any]) -> dict[str, Any]:
        opts = args.get("messageOptions", {})
        message_id = opts.get("messageId")
        replay = self.message_id_record(self.agent, message_id, args)
        if replay is not None:
            return replay
        self.check_content(args)
        self.check_self_context_source(args)
        if "targetConversationId" in args:
            conv = self.conversation(args["targetConversationId"])
            self.check_member(conv, self.agent)
            self.check_mentions(conv["members"], opts.get("mentions", []))
            result = self.deliver(conv, args, message_id)
        else:
            uid = self.resolve_target_user(args)
            self.check_mentions([self.agent, uid], opts.get("mentions", []))
            admission = self.send_admission(uid)
            if admission == "closed":
                return self.closed_result()
            if admission == "approval":
                result = self.defer_send(uid, args, message_id)
            else:
                selection = args.get("sessionSelection", {})
                picked, created = self.pick_session(uid, selection)
                if picked is None and not created:
                    return {"status": "no_session",
                            "reason": "no direct conversation with this user to continue"}
                if picked is None:
                    picked = self.add_conversation("direct", [self.agent, uid], owner=None)
                result = self.deliver(picked, args, message_id)
                result.update(created=created, reused=not created,
                              sessionSelection=selection.get("mode", "continue_or_create"))
        self.remember_send(self.agent, message_id, args, result)
        return result

    def defer_send(self, user_id: str, args: dict[str, Any], message_id: str | None) -> dict[str, Any]:
        """Approval-required target: one contact request, the send deferred until approval."""
        pending = [r for r in self.w["requests"].values()
                   if r["kind"] == "contact" and r["userId"] == user_id and r["status"] == "pending"]
        intent = {"id": self.new_id("intent"), "args": copy.deepcopy(args), "messageId": message_id}
        if pending:
            request = pending[0]
            status = "pending"
        else:
            request = {"id": self.new_id("req"), "kind": "contact", "userId": user_id, "status": "pending",
                       "note": self.request_note(args), "deferred": []}
            self.w["requests"][request["id"]] = request
            status = "requested"
        request["deferred"].append(intent)
        return {"status": status, "requestId": request["id"], "deferredIntentId": intent["id"]}

    def request_note(self, args: dict[str, Any]) -> str:
        """The contact-request note: requestMessage, else the text, truncated to the limit in chars."""
        return str(args.get("requestMessage", args.get("text", "")))[: self.limit("request_message_chars")]

    def deliver_deferred(self, request: dict[str, Any]) -> None:
        """On approval, each deferred send lands in a new direct conversation."""
        for intent in request["deferred"]:
            conv = self.add_conversation("direct", [self.agent, request["userId"]], owner=None)
            self.deliver(conv, intent["args"], intent["messageId"])
            intent["delivered"] = conv["id"]

    # ------------------------------------------------------------------ request_input

    def input_forces_owner(self, args: dict[str, Any]) -> bool:
        return (args.get("kind") in ("sudo", "secret") or args.get("sensitive") is True
                or any(q.get("isSecret") for q in args.get("questions", [])))

    def input_responder(self, args: dict[str, Any], conv: dict[str, Any]) -> str:
        if self.input_forces_owner(args):
            return self.owner
        return self.responder(conv, args.get("responseUserId"))

    def input_outcome(self, response: dict[str, Any], input_id: str) -> dict[str, Any]:
        action = response.get("action")
        if action == "answer":
            out = {"status": "submitted", "inputId": input_id, "value": self.free_text(response)}
            if "answers" in response:
                out["answers"] = response["answers"]
            return out
        if action == "cancel":
            return {"status": "cancelled", "inputId": input_id}
        return {"status": "timeout", "inputId": input_id}

    def free_text(self, response: dict[str, Any]) -> str:
        """The free-text answer: '' when structured answers were used."""
        return "" if "answers" in response else str(response.get("value", ""))

    def verb_request_input(self, args: dict[str, Any]) -> dict[str, Any]:
        conv = self.member_conversation(args.get("conversationId"))
        self.check_fresh_id("input", args.get("inputId"))
        expires = self.deadline(args, self.limit("input_ceiling_ms"))
        responder = self.input_responder(args, conv)
        input_id = args.get("inputId") or self.new_id("input")
        result = self.input_outcome(self.pop_script("request_input"), input_id)
        if result["status"] == "timeout":
            self.jump_clock_to(expires)
        self.record_interaction("input", input_id, conv, responder, expires, result["status"])
        return result

    # ------------------------------------------------------------------ approvals

    def approval_mode(self, args: dict[str, Any]) -> str:
        return args.get("mode", "blocking")

    def session_rule_allowed(self, responder: str, args: dict[str, Any]) -> bool:
        """Standing rules only from the owner (and not when the caller turned them off)."""
        return responder == self.owner and args.get("allowSessionRule", True) is not False

    def approval_timeout_result(self, approval_id: str) -> dict[str, Any]:
        return {"status": "timeout", "approvalId": approval_id}

    def decide(self, record: dict[str, Any], decision: str, by: str, session_rule: Any) -> None:
        record.update(status=decision, respondedBy=by, decidedAt=self.now_ms())
        if session_rule is not None and self.session_rule_allowed(by, record["args"]):
            record["sessionRule"] = session_rule
        else:
            record.pop("sessionRule", None)

    def verb_request_approval(self, args: dict[str, Any]) -> dict[str, Any]:
        conv = self.member_conversation(args.get("conversationId"))
        self.check_fresh_id("approval", args.get("approvalId"))
        expires = self.deadline(args, self.limit("approval_ceiling_ms"))
        responder = self.responder(conv, args.get("responseUserId"))
        approval_id = args.get("approvalId") or self.new_id("appr")
        record = self.record_interaction("approval", approval_id, conv, responder, expires, "pending",
                                         args=copy.deepcopy(args), consumedAt=None)
        if "diff" in args:
            record["diff"] = self.sanitize_diff(args["diff"])
        if self.approval_mode(args) == "detached":
            return {"status": "pending", "approvalId": approval_id, "conversationId": conv["id"],
                    "expiresAt": expires, "responseUserId": responder}
        response = self.pop_script("request_approval")
        if response.get("action") not in ("allow", "deny"):
            self.jump_clock_to(expires)
            record["status"] = "timeout"
            return self.approval_timeout_result(approval_id)
        self.decide(record, response["action"], response.get("as", self.owner), response.get("sessionRule"))
        out = {"status": record["status"], "approvalId": approval_id, "respondedBy": record["respondedBy"]}
        if "sessionRule" in record:
            out["sessionRule"] = record["sessionRule"]
        return out

    def path_sensitive(self, path: str) -> bool:
        return SENSITIVE_PATH.search(path) is not None

    def redact(self, text: str) -> str:
        return SECRET_TOKEN.sub(REDACTED, text)

    @staticmethod
    def clip_bytes(text: str, limit: int) -> str:
        """At most ``limit`` bytes of UTF-8, cut on a character boundary."""
        raw = text.encode()
        return text if len(raw) <= limit else raw[: max(limit, 0)].decode(errors="ignore")

    def sanitize_diff(self, diff: dict[str, Any]) -> dict[str, Any]:
        """What humans see: sensitive paths suppressed, secret tokens redacted, each file's
        diff clipped to the per-file limit and all of them to the total."""
        left = self.limit("diff_total_clip_bytes")
        truncated = bool(diff.get("truncated"))
        files = []
        for f in diff.get("files", []):
            f = copy.deepcopy(f)
            if self.path_sensitive(f["path"]) or self.path_sensitive(f.get("oldPath", "")):
                f.pop("diff", None)
                f["suppressed"] = True
            elif "diff" in f:
                text = self.redact(f["diff"])
                clipped = self.clip_bytes(self.clip_bytes(text, self.limit("diff_file_clip_bytes")), left)
                truncated |= clipped != text
                left -= len(clipped.encode())
                f["diff"] = clipped
            files.append(f)
        return {"files": files, "truncated": truncated}

    def approval_bound(self, record: dict[str, Any], args: dict[str, Any]) -> bool:
        """A check names no conversation or the one that created the approval."""
        return "conversationId" not in args or args["conversationId"] == record["conversationId"]

    def approval_replayable(self, record: dict[str, Any]) -> bool:
        consumed = record.get("consumedAt")
        return consumed is None or self.now_ms() - consumed <= self.limit("approval_replay_window_ms")

    def approval_unknown_result(self, approval_id: str) -> dict[str, Any]:
        return {"status": "unknown", "approvalId": approval_id}

    def approval_expired_result(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"status": "expired", "approvalId": record["id"]}

    def verb_check_approval(self, args: dict[str, Any]) -> dict[str, Any]:
        approval_id = args["approvalId"]
        record = self.w["interactions"]["approval"].get(approval_id)
        if record is None or not self.approval_bound(record, args):
            return self.approval_unknown_result(approval_id)
        if record["status"] in ("allow", "deny"):
            if not self.approval_replayable(record):
                return self.approval_unknown_result(approval_id)
            if record.get("consumedAt") is None:
                record["consumedAt"] = self.now_ms()
            return {"status": "resolved", "approvalId": approval_id, "decision": record["status"],
                    "respondedBy": record["respondedBy"], "conversationId": record["conversationId"]}
        if record["status"] == "pending" and self.now_ms() < record["expiresAt"]:
            return {"status": "pending", "approvalId": approval_id, "expiresAt": record["expiresAt"]}
        return self.approval_expired_result(record)

    # ------------------------------------------------------------------ cards

    def card_size_ok(self, card: dict[str, Any]) -> bool:
        size = len(json.dumps(card, separators=(",", ":"), ensure_ascii=False).encode())
        return size <= self.limit("card_envelope_bytes")

    def card_secret_keys(self, card: dict[str, Any]) -> list[str]:
        return [k for k in card if any(m in k.lower() for m in SECRET_KEY_MARKERS)]

    def card_has_actions(self, card: dict[str, Any]) -> bool:
        return any(isinstance(b, dict) and b.get("type") == "actions" for b in card.get("blocks", []))

    def check_card(self, card: dict[str, Any], needs_actions: bool) -> None:
        if not self.card_size_ok(card):
            raise VerbError("CARD_REJECTED",
                            f"card is over {self.limit('card_envelope_bytes')} bytes serialized")
        secrets = self.card_secret_keys(card)
        if secrets:
            raise VerbError("CARD_REJECTED", f"secret-bearing top-level key {secrets[0]!r}")
        if needs_actions and not self.card_has_actions(card):
            raise VerbError("CARD_REJECTED", "an interactive card needs at least one actions block")

    def card_id(self, args: dict[str, Any]) -> str:
        return args.get("cardId") or args["card"].get("cardId") or self.new_id("card")

    def verb_send_card(self, args: dict[str, Any]) -> dict[str, Any]:
        conv = self.member_conversation(args.get("conversationId"))
        self.check_card(args["card"], needs_actions=False)
        card_id = self.card_id(args)
        self.store_message(conv, self.agent, args["card"]["fallbackText"], contentType="card",
                           card=copy.deepcopy(args["card"]), cardId=card_id)
        return {"status": "displayed", "cardId": card_id, "conversationId": conv["id"]}

    @staticmethod
    def depth(value: Any) -> int:
        """Nesting depth of objects and arrays (a scalar is 0, {} is 1)."""
        if isinstance(value, dict):
            return 1 + max((CanonReference.depth(v) for v in value.values()), default=0)
        if isinstance(value, list):
            return 1 + max((CanonReference.depth(v) for v in value), default=0)
        return 0

    def card_values_ok(self, values: Any) -> bool:
        """A human's submitted values: at most N serialized bytes and depth M."""
        size = len(json.dumps(values, separators=(",", ":"), ensure_ascii=False).encode())
        return (size <= self.limit("card_values_bytes")
                and self.depth(values) <= self.limit("card_values_depth"))

    def card_outcome(self, response: dict[str, Any], card_id: str, responder: str) -> dict[str, Any]:
        action = response.get("action")
        if action == "submit" and not self.card_values_ok(response.get("values", {})):
            action = "timeout"  # the server refuses the submission; the card stays open until its deadline
        if action == "submit":
            return {"status": "submitted", "cardId": card_id, "actionId": response.get("actionId", ""),
                    "values": response.get("values", {}), "respondedBy": responder}
        if action == "cancel":
            return {"status": "cancelled", "cardId": card_id, "respondedBy": responder}
        return {"status": "timeout", "cardId": card_id}

    def verb_request_card(self, args: dict[str, Any]) -> dict[str, Any]:
        conv = self.member_conversation(args.get("conversationId"))
        self.check_card(args["card"], needs_actions=True)
        expires = self.deadline(args, self.limit("card_ceiling_ms"))
        responder = self.responder(conv, args.get("responseUserId"))
        card_id = self.card_id(args)
        result = self.card_outcome(self.pop_script("request_card"), card_id, responder)
        if result["status"] == "timeout":
            self.jump_clock_to(expires)
        self.store_message(conv, self.agent, args["card"]["fallbackText"], contentType="card",
                           card=copy.deepcopy(args["card"]), cardId=card_id)
        self.record_interaction("card", card_id, conv, responder, expires, result["status"])
        return result

    # ------------------------------------------------------------------ messages

    def shareable(self, user_id: str) -> bool:
        return user_id in self.w["contacts"]

    def verb_share_contact(self, args: dict[str, Any]) -> dict[str, Any]:
        message_id = args.get("messageId")
        replay = self.message_id_record(self.agent, message_id, args)
        if replay is not None:
            return replay
        conv = self.member_conversation(args["conversationId"])
        if not self.shareable(args["contactUserId"]):
            raise VerbError("NOT_A_CONTACT", f"{args['contactUserId']!r} is not one of the agent's contacts")
        msg = self.store_message(conv, self.agent, args.get("text"), message_id=message_id,
                                 contentType="contact_card", contact={"userId": args["contactUserId"]})
        result = {"status": "shared", "messageId": msg["messageId"]}
        self.remember_send(self.agent, message_id, args, result)
        return result

    def find_message(self, conv: dict[str, Any], message_id: str) -> dict[str, Any]:
        for msg in conv["messages"]:
            if msg["messageId"] == message_id:
                return msg
        raise VerbError("MESSAGE_NOT_FOUND", f"message {message_id!r} not found in {conv['id']!r}")

    def toggle_reaction(self, msg: dict[str, Any], emoji: str, user_id: str) -> str:
        users = msg["reactions"].setdefault(emoji, [])
        if user_id in users:
            users.remove(user_id)
            if not users:
                del msg["reactions"][emoji]
            return "removed"
        users.append(user_id)
        return "added"

    def verb_react(self, args: dict[str, Any]) -> dict[str, Any]:
        conv = self.member_conversation(args["conversationId"])
        msg = self.find_message(conv, args["messageId"])
        action = self.toggle_reaction(msg, args["emoji"], self.agent)
        return {"status": "reacted", "action": action,
                "reactions": {emoji: len(users) for emoji, users in msg["reactions"].items()}}

    def forward_source_allowed(self, conv: dict[str, Any]) -> bool:
        return self.agent in conv["members"]

    def verb_forward(self, args: dict[str, Any]) -> dict[str, Any]:
        source = self.conversation(args["sourceConversationId"])
        if not self.forward_source_allowed(source):
            raise VerbError("NOT_A_MEMBER", "the agent is not a member of the source conversation")
        target = self.member_conversation(args["targetConversationId"])
        original = self.find_message(source, args["messageId"])
        extra: dict[str, Any] = {"contentType": original["contentType"],
                                 "forwardedFrom": {"conversationId": source["id"],
                                                   "messageId": original["messageId"]}}
        if "text" in args:
            extra["caption"] = args["text"]
        msg = self.store_message(target, self.agent, original.get("text"), **extra)
        return {"status": "forwarded", "messageId": msg["messageId"], "targetConversationId": target["id"]}

    def no_reply_effect(self, conv: dict[str, Any], args: dict[str, Any]) -> None:
        """Silence posts nothing."""

    def verb_no_reply(self, args: dict[str, Any]) -> dict[str, Any]:
        conv = self.member_conversation(args.get("conversationId"))
        self.no_reply_effect(conv, args)
        return {"status": "acknowledged", "conversationId": conv["id"]}

    # ------------------------------------------------------------------ groups

    def group_create_outcome(self, user_id: str) -> tuple[str, str | None]:
        """(added | pending | skipped, reason) for a create_group member."""
        user = self.user(user_id)
        if user is None:
            return "skipped", "not_found"
        if user["policy"] == "closed":
            return "skipped", "closed"
        if user["policy"] == "approval":
            return "pending", None
        return "added", None

    def add_member_outcome(self, user_id: str) -> str:
        user = self.user(user_id)
        if user is None:
            raise VerbError("USER_NOT_FOUND", f"user {user_id!r} not found")
        if user["policy"] == "closed":
            raise VerbError("ADMISSION_DENIED", f"{user_id!r} does not accept group invites")
        return "pending" if user["policy"] == "approval" else "added"

    def invite(self, conv_id: str, user_id: str) -> str:
        request_id = self.new_id("req")
        self.w["requests"][request_id] = {"id": request_id, "kind": "group_invite", "userId": user_id,
                                          "conversationId": conv_id, "status": "pending"}
        return request_id

    def verb_create_group(self, args: dict[str, Any]) -> dict[str, Any]:
        added: list[str] = []
        pending_users: list[str] = []
        skipped: list[dict[str, Any]] = []
        for uid in dict.fromkeys(args["memberIds"]):
            if uid == self.agent:
                continue
            outcome, reason = self.group_create_outcome(uid)
            if outcome == "added":
                added.append(uid)
            elif outcome == "pending":
                pending_users.append(uid)
            else:
                skipped.append({"userId": uid, "reason": reason})
        if not added and not pending_users:
            raise VerbError("GROUP_EMPTY", "nobody could be added and no invite is pending")
        conv = self.add_conversation("group", [self.agent, *added], owner=self.agent, name=args.get("name"))
        pending = [{"userId": uid, "requestId": self.invite(conv["id"], uid)} for uid in pending_users]
        return {"status": "created", "conversationId": conv["id"], "added": added, "pending": pending,
                "skipped": skipped}

    def verb_add_member(self, args: dict[str, Any]) -> dict[str, Any]:
        conv = self.member_conversation(args["conversationId"])
        outcome = self.add_member_outcome(args["userId"])
        if outcome == "pending":
            return {"status": "pending", "requestId": self.invite(conv["id"], args["userId"])}
        if args["userId"] not in conv["members"]:
            conv["members"].append(args["userId"])
        return {"status": "added"}

    def is_group_admin(self, conv: dict[str, Any], user_id: str) -> bool:
        return user_id == conv["owner"] or user_id in conv["admins"]

    def verb_remove_member(self, args: dict[str, Any]) -> dict[str, Any]:
        conv = self.member_conversation(args["conversationId"])
        if not self.is_group_admin(conv, self.agent):
            raise VerbError("NOT_GROUP_ADMIN", "only a group owner/admin can remove members")
        if self.user(args["userId"]) is None:
            raise VerbError("USER_NOT_FOUND", f"user {args['userId']!r} not found")
        self.check_member(conv, args["userId"])
        conv["members"].remove(args["userId"])
        return {"status": "removed"}

    def leave(self, conv: dict[str, Any], user_id: str) -> None:
        conv["members"].remove(user_id)

    def verb_leave_conversation(self, args: dict[str, Any]) -> dict[str, Any]:
        conv = self.member_conversation(args["conversationId"])
        self.leave(conv, self.agent)
        return {"status": "left"}

    # ------------------------------------------------------------------ listings

    def contact_list(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(c) for c in self.w["contacts"].values()]

    def verb_list_contacts(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"contacts": self.contact_list()}

    def apply_limit(self, items: list[Any], limit: int | None) -> list[Any]:
        return items if limit is None else items[:limit]

    def conversation_view(self, conv: dict[str, Any]) -> dict[str, Any]:
        visible = conv["messages"]
        last = None
        if visible:
            m = visible[-1]
            sender = self.user(m["senderId"])
            last = {"text": m.get("text"), "messageId": m["messageId"], "senderId": m["senderId"],
                    "senderType": sender["kind"] if sender else "unknown", "contentType": m["contentType"],
                    "timestamp": iso(m["createdAt"])}
        return {"id": conv["id"], "type": conv["type"], "name": conv["name"], "topic": conv["topic"],
                "memberIds": list(conv["members"]),
                "isAgentChat": any((self.user(u) or {}).get("kind") == "agent" for u in conv["members"]),
                "lastMessage": last, "createdAt": iso(conv["createdAt"])}

    def verb_list_conversations(self, args: dict[str, Any]) -> dict[str, Any]:
        mine = [self.conversation_view(c) for c in self.w["conversations"].values()
                if self.agent in c["members"]]
        return {"conversations": self.apply_limit(mine, args.get("limit"))}

    # ------------------------------------------------------------------ views

    def message_view(self, msg: dict[str, Any], viewer: str) -> dict[str, Any]:
        """A message as ``viewer`` sees it: the selfContext only for its sender."""
        out = {k: copy.deepcopy(v) for k, v in msg.items() if k not in ("selfContext", "selfContextId")}
        out["reactions"] = {emoji: len(users) for emoji, users in msg["reactions"].items()}
        if viewer == msg["senderId"]:
            for key in ("selfContext", "selfContextId"):
                if key in msg:
                    out[key] = copy.deepcopy(msg[key])
        return out

    # ------------------------------------------------------------------ HTTP binding

    def unauthorized(self, request: Request) -> Response | None:
        """401 unless the request carries the configured bearer token."""
        if self.config.token is None or request.headers.get("authorization") == f"Bearer {self.config.token}":
            return None
        err = VerbError("UNAUTHENTICATED", "a bearer token is required")
        return JSONResponse(self.error_body(err), status_code=self.error_status(err))

    async def http_verb(self, request: Request) -> Response:
        verb = request.path_params["name"]
        if (refused := self.unauthorized(request)) is not None:
            return refused
        try:
            if verb not in self.verbs:
                raise VerbError(UNKNOWN_VERB, f"unknown verb {verb!r}")
            try:
                args = json.loads(await request.body())
            except ValueError as exc:
                raise VerbError("VALIDATION_ERROR", "body is not JSON") from exc
            if not isinstance(args, dict):
                raise VerbError("VALIDATION_ERROR", "body is not a JSON object")
            result = self.call_verb(verb, args)
        except VerbError as err:
            return JSONResponse(self.error_body(err), status_code=self.error_status(err))
        except Exception as exc:  # only reachable with a fault that skips validation
            return JSONResponse(self.error_body(VerbError(INTERNAL, repr(exc))), status_code=INTERNAL_STATUS)
        return JSONResponse(result)

    # ------------------------------------------------------------------ MCP binding

    def card_document_schema(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """The envelope composed with the card document's authoring caps (the spec's runtimeCard
        description: a tool binding MUST compose the full document schema): capped title,
        fallbackText and blocks, each block an object naming its type."""
        card = copy.deepcopy(envelope)
        props = card.setdefault("properties", {})
        props["title"] = {**props.get("title", {}), "maxLength": self.limit("card_title_authoring_chars")}
        props["fallbackText"] = {**props.get("fallbackText", {}),
                                 "maxLength": self.limit("card_fallback_authoring_chars")}
        block = {"type": "object", "required": ["type"],
                 "properties": {"type": {"type": "string", "minLength": 1}}}
        props["blocks"] = {**props.get("blocks", {}), "maxItems": self.limit("card_blocks_authoring_count"),
                           "items": block}
        return card

    def tool_input_schema(self, verb: str) -> dict[str, Any]:
        schema = copy.deepcopy(self.input_schemas[verb])
        if isinstance(schema.get("properties", {}).get("card"), dict):
            schema["properties"]["card"] = self.card_document_schema(schema["properties"]["card"])
        return schema

    def tools(self) -> list[dict[str, Any]]:
        return [{"name": verb, "description": self.input_schemas[verb].get("description", verb),
                 "inputSchema": self.tool_input_schema(verb)} for verb in self.verbs]

    def validate_tool_input(self, verb: str, args: Any) -> None:
        """How the MCP binding checks a tool's arguments: against the verb's input schema
        (the tool's inputSchema is that schema, its card composed: stricter, never looser)."""
        self.validate_input(verb, args)

    def tool_call(self, params: dict[str, Any]) -> dict[str, Any]:
        verb = params["name"]
        args = params.get("arguments", {})
        try:
            if not isinstance(args, dict):
                raise VerbError("VALIDATION_ERROR", "arguments is not a JSON object")
            result = self.call_verb(verb, args, self.validate_tool_input)
        except VerbError as err:
            body = self.error_body(err)
            return {"content": [{"type": "text", "text": err.message}], "structuredContent": body,
                    "isError": self.error_status(err) >= 400}
        except Exception as exc:  # only reachable with a fault that skips validation
            body = self.error_body(VerbError(INTERNAL, repr(exc)))
            return {"content": [{"type": "text", "text": repr(exc)}], "structuredContent": body,
                    "isError": True}
        return {"content": [{"type": "text", "text": json.dumps(result)}], "structuredContent": result,
                "isError": False}

    # MCP host (protocols/mcp/server.py): the tools, a call, the server's name
    def mcp_tools(self) -> list[dict[str, Any]]:
        return self.tools()

    def mcp_tool_names(self) -> list[str]:
        return list(self.verbs)

    def mcp_input_schema(self, name: Any) -> Any:
        return self.tool_input_schema(name) if name in self.verbs else None

    def mcp_call_tool(self, caller: Any, params: dict[str, Any],
                      headers: Mapping[str, str]) -> dict[str, Any]:
        return self.tool_call(params)

    def mcp_server_info(self) -> dict[str, str]:
        return {"name": "canon-reference", "version": "1.0.0"}

    async def mcp_endpoint(self, request: Request) -> Response:
        if (refused := self.unauthorized(request)) is not None:
            return refused
        return to_response(self.mcp.handle(request.method, None, await request.body(), request.headers))

    # ------------------------------------------------------------------ control
    # (reset, advance_clock and snapshot: the base's)

    def control_world(self, args: dict[str, Any]) -> Response:
        return JSONResponse({"roles": dict(self.w["roles"])})

    def control_messages(self, args: dict[str, Any]) -> Response:
        conv = self.w["conversations"].get(args.get("conversationId"))
        if conv is None:
            return self.control_error(404, "conversation not found")
        viewer = args.get("as", self.agent)
        return JSONResponse({"messages": [self.message_view(m, viewer) for m in conv["messages"]]})

    def control_script(self, args: dict[str, Any]) -> Response:
        verb, response = args.get("verb"), args.get("response")
        if verb not in BLOCKING_VERBS:
            return self.control_error(400, f"verb must be one of {list(BLOCKING_VERBS)}")
        if not isinstance(response, dict) or not isinstance(response.get("action"), str):
            return self.control_error(400, "response must be an object with an action")
        self.w["scripts"][verb].append(copy.deepcopy(response))
        return JSONResponse({"ok": True, "queued": len(self.w["scripts"][verb])})

    def control_decide_approval(self, args: dict[str, Any]) -> Response:
        record = self.w["interactions"]["approval"].get(args.get("approvalId"))
        if record is None:
            return self.control_error(404, "approval not found")
        if record["status"] != "pending" or self.now_ms() >= record["expiresAt"]:
            return self.control_error(409, f"approval is not pending ({record['status']})")
        if args.get("decision") not in ("allow", "deny"):
            return self.control_error(400, "decision must be allow or deny")
        self.decide(record, args["decision"], args.get("as", self.owner), args.get("sessionRule"))
        return JSONResponse({"ok": True, "status": record["status"], "respondedBy": record["respondedBy"]})

    def control_interaction(self, args: dict[str, Any]) -> Response:
        for kind, records in self.w["interactions"].items():
            record = records.get(args.get("id"))
            if record is not None:
                status = record["status"]
                if status == "pending" and self.now_ms() >= record["expiresAt"]:
                    status = "expired"
                out = {"kind": kind, "responseUserId": record["responseUserId"], "status": status,
                       "conversationId": record["conversationId"], "expiresAt": record["expiresAt"]}
                if "diff" in record:
                    out["diff"] = copy.deepcopy(record["diff"])
                return JSONResponse(out)
        return self.control_error(404, "interaction not found")

    def control_contact_request(self, args: dict[str, Any]) -> Response:
        """A request as its recipient sees it (the note of a contact request)."""
        request = self.w["requests"].get(args.get("requestId"))
        if request is None:
            return self.control_error(404, "request not found")
        return JSONResponse({"kind": request["kind"], "userId": request["userId"],
                             "status": request["status"], "note": request.get("note")})

    def control_approve_request(self, args: dict[str, Any]) -> Response:
        request = self.w["requests"].get(args.get("requestId"))
        if request is None:
            return self.control_error(404, "request not found")
        if request["status"] != "pending":
            return self.control_error(409, "request is not pending")
        request["status"] = "approved"
        if request["kind"] == "contact":
            if request["userId"] not in self.w["admitted"]:
                self.w["admitted"].append(request["userId"])
            self.deliver_deferred(request)
        else:
            conv = self.w["conversations"][request["conversationId"]]
            if request["userId"] not in conv["members"]:
                conv["members"].append(request["userId"])
        return JSONResponse({"ok": True, "request": copy.deepcopy(request)})

    # ------------------------------------------------------------------ routes

    def own_routes(self) -> list[BaseRoute]:
        return [
            Route(self.binding_path("http", "/verbs/{name}"), self.endpoint("http_verb"), methods=["POST"]),
            Route(self.binding_path("mcp", "/mcp"), self.endpoint("mcp_endpoint"),
                  methods=["POST", "GET", "DELETE"]),
        ]

    def binding_path(self, binding: str, default: str) -> str:
        return str(self.settings.get("bindings", {}).get(binding, {}).get("path", default))


def create_app(profile: Profile, config: ReferenceConfig | None = None) -> Starlette:
    """The reference as an ASGI app; ``app.state.reference`` is the instance faults patch."""
    return CanonReference(profile, config).app()


__all__ = ["CanonReference", "ReferenceConfig", "VerbError", "create_app", "spec_verbs"]
