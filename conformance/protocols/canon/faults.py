"""Named faults: each replaces ONE method of a CanonReference instance, so the
reference misbehaves in exactly one way a requirement must catch."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.faults import replaces
from conformance.protocols.canon.reference import CanonReference, VerbError
from conformance.table import FaultRegistry

Fault = Callable[[CanonReference], None]
FAULTS = FaultRegistry()
fault = FAULTS
FAULTS.constants(Path(__file__).with_name("faults.yaml"))

RESERVED_IDS = (".", "..")


def _strip_additional_false(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_strip_additional_false(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: _strip_additional_false(v) for k, v in schema.items() if not (k == "additionalProperties" and v is False)}


def _is_reserved(message_id: Any) -> bool:
    return isinstance(message_id, str) and (
        message_id in RESERVED_IDS or (len(message_id) >= 4 and message_id.startswith("__") and message_id.endswith("__"))
    )


# ------------------------------------------------------------------ validation


@fault
def minimal_input_rejected(ref: CanonReference) -> None:
    """An input holding only its required properties gets VALIDATION_ERROR."""
    @replaces(ref, "validate_input")
    def validate(original: Any, verb: str, args: Any) -> None:
        required = set(ref.input_schemas[verb].get("required", []))
        if isinstance(args, dict) and set(args) <= required:
            raise VerbError("VALIDATION_ERROR", "(root): more properties are needed")
        original(verb, args)


@fault
def validation_after_write(ref: CanonReference) -> None:
    """World state (the id counter) changes before the input is validated."""
    @replaces(ref, "validate_input")
    def validate(original: Any, verb: str, args: Any) -> None:
        ref.w["seq"] += 1
        original(verb, args)


@fault
def result_status_renamed(ref: CanonReference) -> None:
    """Every success result says status "ok"."""

    def finish(verb: str, result: dict[str, Any]) -> dict[str, Any]:
        return {**result, "status": "ok"} if "status" in result else result

    ref.finish_result = finish  # type: ignore[method-assign]


@fault
def check_approval_status_renamed(ref: CanonReference) -> None:
    """check_approval results say status "ok" (the approval it reads is set up as usual)."""
    @replaces(ref, "finish_result")
    def finish(original: Any, verb: str, result: dict[str, Any]) -> dict[str, Any]:
        result = original(verb, result)
        return {**result, "status": "ok"} if verb == "check_approval" and "status" in result else result


@fault
def reserved_ids_accepted(ref: CanonReference) -> None:
    """Reserved messageIds ('.', '..', '__x__') are accepted."""
    @replaces(ref, "validate_input")
    def validate(original: Any, verb: str, args: Any) -> None:
        if isinstance(args, dict):
            probe = copy.deepcopy(args)
            options = probe.get("messageOptions")
            holder: dict[str, Any] = options if isinstance(options, dict) else probe
            if _is_reserved(holder.get("messageId")):
                holder["messageId"] = "x"
                original(verb, probe)
                return
        original(verb, args)


@fault
def contact_id_target_rejected(ref: CanonReference) -> None:
    """send_to naming its target by canonContactId gets VALIDATION_ERROR."""
    @replaces(ref, "validate_input")
    def validate(original: Any, verb: str, args: Any) -> None:
        if verb == "send_to" and isinstance(args, dict) and "canonContactId" in args:
            raise VerbError("VALIDATION_ERROR", "(root): canonContactId is not supported")
        original(verb, args)


# ------------------------------------------------------------------ idempotency and ids


def _reuse_accepted(ref: CanonReference, reused: str) -> None:
    @replaces(ref, "check_fresh_id")
    def check(original: Any, kind: str, interaction_id: str | None) -> None:
        if kind != reused:
            original(kind, interaction_id)


@fault
def input_id_reuse_accepted(ref: CanonReference) -> None:
    """A reused inputId is accepted (no ID_ALREADY_USED)."""
    _reuse_accepted(ref, "input")


@fault
def approval_id_reuse_accepted(ref: CanonReference) -> None:
    """A reused approvalId is accepted (no ID_ALREADY_USED)."""
    _reuse_accepted(ref, "approval")


# ------------------------------------------------------------------ send_to


@fault
def self_context_leaks(ref: CanonReference) -> None:
    """Recipients see the sender's selfContext."""
    @replaces(ref, "message_view")
    def view(original: Any, msg: dict[str, Any], viewer: str) -> dict[str, Any]:
        return original(msg, msg["senderId"])


@fault
def approval_required_messaged(ref: CanonReference) -> None:
    """An approval-required target is messaged directly (no contact request)."""
    @replaces(ref, "send_admission")
    def admission(original: Any, user_id: str) -> str:
        policy = original(user_id)
        return "open" if policy == "approval" else policy


@fault
def closed_target_reason_wrong(ref: CanonReference) -> None:
    """A closed target is answered status "blocked" instead of "unavailable"."""
    ref.closed_result = lambda: {"status": "blocked", "reason": "closed"}  # type: ignore[method-assign]


@fault
def session_new_reuses(ref: CanonReference) -> None:
    """sessionSelection mode "new" reuses the latest direct conversation."""
    @replaces(ref, "pick_session")
    def pick(original: Any, user_id: str, selection: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        if selection.get("mode") == "new":
            return original(user_id, {"mode": "continue_or_create"})
        return original(user_id, selection)


# ------------------------------------------------------------------ deadlines and approvals


@fault
def approval_timeout_allows(ref: CanonReference) -> None:
    """A blocking approval that times out is answered allow."""
    ref.approval_timeout_result = lambda approval_id: {"status": "allow", "approvalId": approval_id}  # type: ignore[method-assign]


@fault
def expired_reported_deny(ref: CanonReference) -> None:
    """check_approval of an expired approval answers resolved deny."""

    def expired(record: dict[str, Any]) -> dict[str, Any]:
        return {"status": "resolved", "approvalId": record["id"], "decision": "deny",
                "conversationId": record["conversationId"]}

    ref.approval_expired_result = expired  # type: ignore[method-assign]


@fault
def unknown_reported_deny(ref: CanonReference) -> None:
    """check_approval of an unknown approval answers resolved deny."""
    ref.approval_unknown_result = lambda approval_id: {  # type: ignore[method-assign]
        "status": "resolved", "approvalId": approval_id, "decision": "deny"}


@fault
def check_approval_replay_consumed(ref: CanonReference) -> None:
    """A resolved decision answers unknown on its second check (no replay)."""
    ref.approval_replayable = lambda record: record.get("consumedAt") is None  # type: ignore[method-assign]


@fault
def input_cancel_reported_timeout(ref: CanonReference) -> None:
    """A cancelled input is reported as timeout."""
    @replaces(ref, "input_outcome")
    def outcome(original: Any, response: dict[str, Any], input_id: str) -> dict[str, Any]:
        out = original(response, input_id)
        return {**out, "status": "timeout"} if out["status"] == "cancelled" else out


# ------------------------------------------------------------------ cards


@fault
def card_secret_key_accepted(ref: CanonReference) -> None:
    """A card with a secret-bearing top-level key is accepted."""
    ref.card_secret_keys = lambda card: []  # type: ignore[method-assign]


# ------------------------------------------------------------------ messages and groups


@fault
def react_always_adds(ref: CanonReference) -> None:
    """react never toggles off: a second identical reaction is added again."""

    def toggle(msg: dict[str, Any], emoji: str, user_id: str) -> str:
        msg["reactions"].setdefault(emoji, []).append(user_id)
        return "added"

    ref.toggle_reaction = toggle  # type: ignore[method-assign]


@fault
def share_non_contact_allowed(ref: CanonReference) -> None:
    """share_contact accepts a user who is not the agent's contact."""
    ref.shareable = lambda user_id: ref.user(user_id) is not None  # type: ignore[method-assign]


@fault
def create_group_ignores_policy(ref: CanonReference) -> None:
    """create_group adds approval-required users directly."""
    @replaces(ref, "group_create_outcome")
    def outcome(original: Any, user_id: str) -> tuple[str, str | None]:
        got = original(user_id)
        return ("added", None) if got[0] == "pending" else got


@fault
def add_member_ignores_policy(ref: CanonReference) -> None:
    """add_member adds approval-required users directly."""
    @replaces(ref, "add_member_outcome")
    def outcome(original: Any, user_id: str) -> str:
        original(user_id)  # unknown and closed users still fail
        return "added"


@fault
def list_contacts_includes_strangers(ref: CanonReference) -> None:
    """list_contacts also lists users who are not the agent's contacts."""
    @replaces(ref, "contact_list")
    def contacts(original: Any) -> list[dict[str, Any]]:
        out = original()
        known = {c["id"] for c in out}
        out += [{"id": uid, "source": "unknown", "addedAt": None, "displayNameOverride": None}
                for uid, user in ref.w["users"].items() if uid not in known and uid != ref.agent]
        return out


@fault
def contact_items_incomplete(ref: CanonReference) -> None:
    """list_contacts items lack displayNameOverride (a required item property)."""
    @replaces(ref, "contact_list")
    def contacts(original: Any) -> list[dict[str, Any]]:
        return [{k: v for k, v in c.items() if k != "displayNameOverride"} for c in original()]


@fault
def conversation_items_incomplete(ref: CanonReference) -> None:
    """list_conversations items lack isAgentChat (a required item property)."""
    @replaces(ref, "conversation_view")
    def view(original: Any, conv: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in original(conv).items() if k != "isAgentChat"}


@fault
def no_reply_posts_message(ref: CanonReference) -> None:
    """no_reply posts a message to the conversation."""

    def effect(conv: dict[str, Any], args: dict[str, Any]) -> None:
        ref.store_message(conv, ref.agent, "(no reply)")

    ref.no_reply_effect = effect  # type: ignore[method-assign]


# ------------------------------------------------------------------ bindings


@fault
def mcp_tool_schema_looser(ref: CanonReference) -> None:
    """tools/list inputSchemas drop every additionalProperties: false."""
    original = ref.tool_input_schema
    ref.tool_input_schema = lambda verb: _strip_additional_false(original(verb))  # type: ignore[method-assign]


__all__ = ["FAULTS", "Fault"]


# ------------------------------------------------------------------ added with the statement map (issue 9)


@fault
def refusal_codes_swapped(ref: CanonReference) -> None:
    """Every refusal but MESSAGE_ID_EXISTS carries another code of the profile's catalogue (status unchanged)."""
    codes = sorted(c for c in ref.errors if c != "MESSAGE_ID_EXISTS")

    @replaces(ref, "error_body")
    def body(original: Any, err: VerbError) -> dict[str, Any]:
        out = original(err)
        if err.code in codes:
            out["error"]["code"] = codes[(codes.index(err.code) + 1) % len(codes)]
        return out


@fault
def message_id_conflict_wrong_code(ref: CanonReference) -> None:
    """A messageId reused with a different payload is refused as VALIDATION_ERROR (400), not 409 MESSAGE_ID_EXISTS."""
    def conflict(record: dict[str, Any]) -> None:
        raise VerbError("VALIDATION_ERROR", "messageId already used with a different payload")

    ref.message_id_conflict = conflict  # type: ignore[method-assign]


@fault
def conflict_code_beside_error(ref: CanonReference) -> None:
    """The messageId conflict (409) carries MESSAGE_ID_EXISTS beside the error member, not as its code."""
    @replaces(ref, "error_body")
    def body(original: Any, err: VerbError) -> dict[str, Any]:
        out = original(err)
        if err.code == "MESSAGE_ID_EXISTS":
            return {"reason": err.code, "error": {"code": "CONFLICT", "message": err.message}}
        return out


@fault
def deferred_intent_missing(ref: CanonReference) -> None:
    """A deferred send answers without deferredIntentId."""
    @replaces(ref, "defer_send")
    def defer(original: Any, user_id: str, args: dict[str, Any], message_id: str | None) -> dict[str, Any]:
        out = original(user_id, args, message_id)
        out.pop("deferredIntentId", None)
        return out


@fault
def request_message_ignored(ref: CanonReference) -> None:
    """The contact-request note is always the text, even when requestMessage is given."""
    @replaces(ref, "request_note")
    def note(original: Any, args: dict[str, Any]) -> str:
        return original({k: v for k, v in args.items() if k != "requestMessage"})


@fault
def request_message_untruncated(ref: CanonReference) -> None:
    """The contact-request note defaulted from a long text is not truncated."""
    ref.request_note = lambda args: str(args.get("requestMessage", args.get("text", "")))  # type: ignore[method-assign]


@fault
def session_default_new(ref: CanonReference) -> None:
    """A user-targeted send without sessionSelection always opens a new conversation."""
    @replaces(ref, "pick_session")
    def pick(original: Any, user_id: str, selection: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        return original(user_id, selection or {"mode": "new"})


@fault
def reply_to_validated(ref: CanonReference) -> None:
    """messageOptions.replyTo naming an unknown message is refused."""
    @replaces(ref, "check_prose")
    def prose(original: Any, verb: str, args: dict[str, Any]) -> None:
        reply_to = (args.get("messageOptions") or {}).get("replyTo")
        known = {m["messageId"] for c in ref.w["conversations"].values() for m in c["messages"]}
        if reply_to is not None and reply_to not in known:
            raise VerbError("MESSAGE_NOT_FOUND", f"replyTo {reply_to!r} not found")
        original(verb, args)


@fault
def content_type_always_text(ref: CanonReference) -> None:
    """A message with attachments and no contentType is stored as text."""
    @replaces(ref, "compose")
    def compose(original: Any, args: dict[str, Any]) -> dict[str, Any]:
        out = original(args)
        if "contentType" not in (args.get("messageOptions") or {}):
            out["contentType"] = "text"
        return out


@fault
def responder_unchecked(ref: CanonReference) -> None:
    """responseUserId is taken as given, member or not."""
    ref.responder = lambda conv, requested: requested or ref.owner  # type: ignore[method-assign]


@fault
def timeout_wins(ref: CanonReference) -> None:
    """timeoutMs wins over expiresAt when both are given."""
    @replaces(ref, "requested_deadline")
    def pick(original: Any, args: dict[str, Any], now: int) -> int:
        return original({k: v for k, v in args.items() if not ("timeoutMs" in args and k == "expiresAt")}, now)


@fault
def timeout_ms_ignored(ref: CanonReference) -> None:
    """timeoutMs is ignored: the default deadline applies."""
    @replaces(ref, "requested_deadline")
    def pick(original: Any, args: dict[str, Any], now: int) -> int:
        return original({k: v for k, v in args.items() if k != "timeoutMs"}, now)


@fault
def deadline_ceiling_loose(ref: CanonReference) -> None:
    """Each deadline ceiling is enforced one minute late."""
    @replaces(ref, "check_deadline")
    def check(original: Any, expires_at: int, now: int, ceiling_ms: int) -> None:
        original(expires_at, now, ceiling_ms + 60_000)


@fault
def replay_window_loose(ref: CanonReference) -> None:
    """A resolved decision keeps replaying an hour past the replay window."""
    def replayable(record: dict[str, Any]) -> bool:
        consumed = record.get("consumedAt")
        return consumed is None or ref.now_ms() - consumed <= ref.limit("approval_replay_window_ms") + 3_600_000

    ref.approval_replayable = replayable  # type: ignore[method-assign]


@fault
def share_contact_replay_duplicates(ref: CanonReference) -> None:
    """share_contact ignores its messageId: an identical replay shares the card again."""
    @replaces(ref, "message_id_record")
    def record(original: Any, sender: str, message_id: str | None, args: dict[str, Any]) -> dict[str, Any] | None:
        return None if "contactUserId" in args else original(sender, message_id, args)

    @replaces(ref, "remember_send")
    def remember(original: Any, sender: str, message_id: str | None, args: dict[str, Any], result: dict[str, Any]) -> None:
        if "contactUserId" not in args:
            original(sender, message_id, args, result)


@fault
def structured_value_not_empty(ref: CanonReference) -> None:
    """value repeats the structured answers instead of being ''."""
    @replaces(ref, "free_text")
    def free(original: Any, response: dict[str, Any]) -> str:
        return json.dumps(response["answers"]) if "answers" in response else original(response)


@fault
def responded_by_agent(ref: CanonReference) -> None:
    """check_approval names the agent, not the human who decided, as respondedBy."""
    @replaces(ref, "verb_check_approval")
    def check(original: Any, args: dict[str, Any]) -> dict[str, Any]:
        out = original(args)
        return {**out, "respondedBy": ref.agent} if "respondedBy" in out else out


@fault
def card_responded_by_agent(ref: CanonReference) -> None:
    """request_card names the agent as respondedBy."""
    @replaces(ref, "card_outcome")
    def outcome(original: Any, response: dict[str, Any], card_id: str, responder: str) -> dict[str, Any]:
        return original(response, card_id, ref.agent)


@fault
def creator_not_added(ref: CanonReference) -> None:
    """create_group leaves the caller out of the new group."""
    @replaces(ref, "add_conversation")
    def add(original: Any, kind: str, members: list[str], owner: str | None, name: str | None = None,
            conv_id: str | None = None) -> dict[str, Any]:
        if kind == "group" and owner == ref.agent and conv_id is None:
            members = [m for m in members if m != ref.agent] or members[1:]
        return original(kind, members, owner, name, conv_id)


@fault
def approval_never_expires(ref: CanonReference) -> None:
    """check_approval keeps answering pending after the deadline."""
    ref.approval_expired_result = lambda record: {  # type: ignore[method-assign]
        "status": "pending", "approvalId": record["id"], "expiresAt": record["expiresAt"]}


@fault
def active_conversation_ignored(ref: CanonReference) -> None:
    """A verb without conversationId goes to the agent's own group, not the active conversation."""
    @replaces(ref, "member_conversation")
    def pick(original: Any, conv_id: str | None) -> dict[str, Any]:
        return original(conv_id or ref.role("agent_group"))


@fault
def kind_default_secret(ref: CanonReference) -> None:
    """A request_input without kind is owner-only, as if kind defaulted to secret rather than clarify."""
    @replaces(ref, "input_forces_owner")
    def forces(original: Any, args: dict[str, Any]) -> bool:
        return "kind" not in args or original(args)
