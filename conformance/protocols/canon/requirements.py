"""The Canon Agent Verbs requirement table. Verbs, schemas and the limits that the
spec's descriptions state come from specs/canon/canon.verbs.v1.json; bindings and
error codes are the profile's (profiles/canon-verbs.yaml)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from conformance.checks import auth, idempotency
from conformance.checks.errors import expect_catalogued, expect_error, expect_result
from conformance.checks.inputs import (
    examples_refused,
    invalid_inputs_rejected,
    result_matches,
    valid_inputs_accepted,
)
from conformance.model import Profile, Requirement, Source
from conformance.protocols.canon.client import CanonClient, fresh
from conformance.protocols.canon.model import CanonMachine
from conformance.runner import CheckContext, NotApplicable
from conformance.spec.schemas import validator_for
from conformance.table import Table, slug

REJECTION = "VALIDATION_ERROR"
MINUTE_MS = 60_000


# ----------------------------------------------------------------------------------
# every verb: valid inputs, invalid inputs, results
# ----------------------------------------------------------------------------------
def text_unless_attachments(value: Any) -> Any:
    """send_to_input's `text` description: text is required unless attachments carry the content."""
    if isinstance(value, dict) and "text" not in value and not (value.get("messageOptions") or {}).get("attachments"):
        value["text"] = "conformance check"
    return value


def valid_inputs(verb: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        c = CanonClient(ctx)
        prepare = text_unless_attachments if verb == "send_to" else (lambda v: v)
        valid_inputs_accepted(ctx, ctx.profile.operations[verb], lambda v: c.call(verb, v), (REJECTION,), prepare)
    return check


def invalid_inputs(verb: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        c = CanonClient(ctx)
        invalid_inputs_rejected(ctx, ctx.profile.operations[verb], lambda v: c.call(verb, v), REJECTION, state=c.snapshot)
    return check


def success_call(c: CanonClient, verb: str) -> Any:
    """Drive ``verb`` to a success with a realistic input."""
    r = c.role
    if verb == "send_to":
        return c.send()
    if verb == "request_input":
        c.script("request_input", action="answer", value="yes")
        return c.call(verb, {"conversationId": r("owner_chat"), "prompt": "Proceed?", "timeoutMs": MINUTE_MS})
    if verb == "request_approval":
        c.script("request_approval", action="allow")
        return c.call(verb, {"conversationId": r("owner_chat"), "toolName": "deploy", "toolSummary": "Deploy it"})
    if verb == "check_approval":
        pending = c.detached_approval()
        return c.call(verb, {"approvalId": pending["approvalId"]})
    if verb == "send_card":
        return c.call(verb, {"conversationId": r("owner_chat"), "card": c.card()})
    if verb == "request_card":
        c.script("request_card", action="submit", actionId="ok", values={})
        return c.call(verb, {"conversationId": r("owner_chat"), "card": c.card(actions=True), "timeoutMs": MINUTE_MS})
    if verb == "share_contact":
        return c.call(verb, {"conversationId": r("owner_chat"), "contactUserId": r("member")})
    if verb == "react":
        return c.call(verb, {"conversationId": r("owner_chat"), "messageId": r("owner_message"), "emoji": "+1"})
    if verb == "forward":
        return c.call(verb, {"sourceConversationId": r("owner_chat"), "targetConversationId": r("agent_group"), "messageId": r("owner_message")})
    if verb == "create_group":
        return c.call(verb, {"name": "conformance", "memberIds": [r("open_user")]})
    if verb == "add_member":
        return c.call(verb, {"conversationId": c.group(r("member")), "userId": r("open_user")})
    if verb == "remove_member":
        return c.call(verb, {"conversationId": c.group(r("open_user")), "userId": r("open_user")})
    if verb == "leave_conversation":
        return c.call(verb, {"conversationId": c.group(r("open_user"))})
    if verb == "list_conversations":
        return c.call(verb, {"limit": 5})
    if verb == "no_reply":
        return c.call(verb, {"conversationId": r("owner_chat"), "reason": "nothing to add"})
    return c.call(verb, {})


def result_schema(verb: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        c = CanonClient(ctx)
        result_matches(ctx, ctx.profile.operations[verb], success_call(c, verb), f"{verb} driven to success")
    return check


# ----------------------------------------------------------------------------------
# idempotency and single-use ids
# ----------------------------------------------------------------------------------
def send_with_message_id(ctx: CheckContext) -> idempotency.Send:
    c = CanonClient(ctx)
    return lambda key, body: c.send("once" if body == "a" else "different", messageOptions={"messageId": key})


def owner_chat_messages(ctx: CheckContext) -> Callable[[], int]:
    c = CanonClient(ctx)
    return lambda: len(c.messages(c.role("owner_chat"), c.role("owner")))


def message_id_conflicts(ctx: CheckContext) -> dict[str, idempotency.Send]:
    c = CanonClient(ctx)

    def share(key: str, body: str) -> Any:
        extra = {} if body == "a" else {"text": "changed"}
        return c.call("share_contact", {"conversationId": c.role("owner_chat"), "contactUserId": c.role("member"),
                                        "messageId": key, **extra})

    return {"send_to with a messageId": send_with_message_id(ctx), "share_contact with a messageId": share}


def reserved_message_ids(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    """The forms messageId's `not` names: '.', '..' and __x__."""
    c = CanonClient(ctx)
    return {f"messageId {mid!r}": functools.partial(c.send, "reserved", messageOptions={"messageId": mid})
            for mid in (".", "..", "__x__", "__reserved__")}


def world_digest(ctx: CheckContext) -> Callable[[], Any]:
    return CanonClient(ctx).snapshot


def input_ids(ctx: CheckContext) -> dict[str, Callable[[str], Any]]:
    c = CanonClient(ctx)

    def ask(iid: str) -> Any:
        c.script("request_input", action="answer", value="a")
        return c.call("request_input", {"conversationId": c.role("owner_chat"), "inputId": iid, "prompt": "Which?",
                                        "timeoutMs": MINUTE_MS})

    return {"request_input with an inputId": ask}


def approval_ids(ctx: CheckContext) -> dict[str, Callable[[str], Any]]:
    c = CanonClient(ctx)
    return {"request_approval (detached) with an approvalId": lambda aid: c.call("request_approval", {
        "approvalId": aid, "toolName": "deploy", "toolSummary": "Deploy it", "mode": "detached",
        "conversationId": c.role("owner_chat")})}


# ----------------------------------------------------------------------------------
# send_to
# ----------------------------------------------------------------------------------
def _self_context() -> dict[str, str]:
    return {"type": "cross_session", "context": "private note: moved from the owner chat"}


def check_self_context_private(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    note = _self_context()
    result = expect_result(ctx, c.send("hello", targetConversationId=c.role("group"), sourceConversationId=c.role("owner_chat"), selfContext=note),
                       "send_to with selfContext")
    ctx.expect(result.get("selfContextId"), f"send_to with selfContext must report selfContextId: {result}")
    for viewer in (c.role("member"), c.role("owner")):
        seen = json.dumps(c.messages(c.role("group"), viewer))
        ctx.expect(note["context"] not in seen, f"the selfContext reached recipient {viewer}")
    mine = json.dumps(c.messages(c.role("group"), c.role("agent")))
    ctx.expect(note["context"] in mine, "the sender's own view lacks its selfContext")


def check_self_context_source(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    left = c.group(c.role("open_user"))
    expect_result(ctx, c.call("leave_conversation", {"conversationId": left}), "leave_conversation")
    reply = c.send("hi", targetConversationId=c.role("owner_chat"), sourceConversationId=left, selfContext=_self_context())
    expect_error(ctx, reply, "NOT_A_MEMBER", "send_to with a selfContext whose sourceConversationId the agent is not in")


def check_admission(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    opened = expect_result(ctx, c.send("hi", targetUserId=c.role("open_user")), "send_to an open user")
    ctx.expect(opened.get("status") == "messaged" and opened.get("conversationId"), f"an open target must be messaged: {opened}")
    asked = expect_result(ctx, c.send("hi", targetUserId=c.role("approval_user")), "send_to an approval-required user")
    ctx.expect(asked.get("status") in ("requested", "pending") and "requestId" in asked, f"an approval-required target gets a contact request: {asked}")
    closed = expect_result(ctx, c.send("hi", targetUserId=c.role("closed_user")), "send_to a closed user")
    ctx.expect(closed.get("status") == "unavailable" and closed.get("reason") == "closed",
               f"a closed target must be status unavailable, reason closed: {closed}")


def check_deferred_send(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    text = "deferred " + fresh()
    asked = expect_result(ctx, c.send(text, targetUserId=c.role("approval_user"), sessionSelection={"mode": "new"}), "send_to an approval-required user")
    ctx.expect(asked.get("requestId"), f"no requestId to approve: {asked}")
    ctx.control("approve_request", requestId=asked["requestId"])
    convs = expect_result(ctx, c.call("list_conversations", {}), "list_conversations")["conversations"]
    mine = [x for x in convs if c.role("approval_user") in (x.get("memberIds") or [])]
    delivered = any(text in json.dumps(c.messages(x["id"], c.role("approval_user"))) for x in mine)
    ctx.expect(delivered, "after the contact request was approved the deferred message never arrived")


def check_session_selection(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    user = c.role("open_user")
    first = expect_result(ctx, c.send("a", targetUserId=user, sessionSelection={"mode": "new"}), "send_to mode new")
    second = expect_result(ctx, c.send("b", targetUserId=user, sessionSelection={"mode": "new"}), "send_to mode new again")
    ctx.expect(first["conversationId"] != second["conversationId"], "sessionSelection mode new reused a conversation")
    latest = expect_result(ctx, c.send("c", targetUserId=user, sessionSelection={"mode": "continue_latest"}), "send_to mode continue_latest")
    ctx.expect(latest.get("conversationId") == second["conversationId"], f"continue_latest did not continue the latest conversation: {latest}")
    specific = expect_result(ctx, c.send("d", targetUserId=user, sessionSelection={"mode": "specific", "conversationId": first["conversationId"]}),
                         "send_to mode specific")
    ctx.expect(specific.get("conversationId") == first["conversationId"], f"mode specific went elsewhere: {specific}")


def check_mentions(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    expect_result(ctx, c.send("hi", targetConversationId=c.role("group"), messageOptions={"mentions": [c.role("member")]}), "mention of a member")
    reply = c.send("hi", targetConversationId=c.role("group"), messageOptions={"mentions": [c.role("stranger")]})
    expect_error(ctx, reply, "INVALID_MENTION", "mention of a non-member")


# ----------------------------------------------------------------------------------
# humans in the loop
# ----------------------------------------------------------------------------------
def check_deadline_ceiling(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    probe = c.detached_approval(timeoutMs=MINUTE_MS)
    now = probe["expiresAt"] - MINUTE_MS  # the target's own clock, read off a deadline it set
    hour = 60 * MINUTE_MS
    limit = {name: int(lim.value) for name, lim in ctx.profile.limits.items()}
    cases = [  # each ceiling + 90 minutes (+ 8 hours for approvals)
        ("request_input", {"conversationId": c.role("owner_chat"), "prompt": "?", "expiresAt": now + limit["input_ceiling_ms"] + 90 * MINUTE_MS}),
        ("request_card", {"conversationId": c.role("owner_chat"), "card": c.card(actions=True), "expiresAt": now + limit["card_ceiling_ms"] + 90 * MINUTE_MS}),
        ("request_approval", {"toolName": "t", "toolSummary": "s", "mode": "detached", "expiresAt": now + limit["approval_ceiling_ms"] + 8 * hour}),
    ]
    for verb, payload in cases:
        expect_error(ctx, c.call(verb, payload), "DEADLINE_TOO_FAR", f"{verb} with a deadline past its ceiling")
    within = limit["approval_ceiling_ms"] - 2 * hour
    ok = c.call("request_approval", {"toolName": "t", "toolSummary": "s", "mode": "detached", "expiresAt": now + within})
    expect_result(ctx, ok, f"request_approval {within / hour:g} hours ahead (within the {limit['approval_ceiling_ms'] / hour:g}-hour ceiling)")


def check_approval_fails_closed(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    c.script("request_approval", action="timeout")
    result = expect_result(ctx, c.call("request_approval", {"toolName": "rm", "toolSummary": "delete", "timeoutMs": 1000}), "request_approval that nobody answers")
    ctx.expect(result.get("status") == "timeout", f"an unanswered blocking approval must time out (fail closed), got {result}")


def check_approval_detached(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    pending = c.detached_approval()
    ctx.expect(isinstance(pending.get("expiresAt"), int), f"a detached approval must carry expiresAt: {pending}")
    ctx.control("decide_approval", approvalId=pending["approvalId"], decision="allow")
    got = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "check_approval after allow")
    ctx.expect(got.get("status") == "resolved" and got.get("decision") == "allow", f"check_approval must answer resolved/allow: {got}")


def check_approval_statuses(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    unknown = expect_result(ctx, c.call("check_approval", {"approvalId": fresh("none")}), "check_approval of an unknown id")
    ctx.expect(unknown.get("status") == "unknown", f"an unknown approval is 'unknown', not a decision: {unknown}")
    pending = c.detached_approval(timeoutMs=MINUTE_MS)
    got = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "check_approval of an undecided approval")
    ctx.expect(got.get("status") == "pending", f"an undecided approval is pending: {got}")
    ctx.control("advance_clock", seconds=120)
    got = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "check_approval after the deadline")
    ctx.expect(got.get("status") == "expired", f"an approval past its deadline is expired (not a denial): {got}")


def check_approval_replay(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    pending = c.detached_approval()
    ctx.control("decide_approval", approvalId=pending["approvalId"], decision="deny")
    first = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "first check_approval")
    again = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "second check_approval")
    ctx.expect(first.get("status") == again.get("status") == "resolved" and again.get("decision") == "deny",
               f"a resolved decision replays within the window: {first} then {again}")
    late_ms = int(ctx.profile.limits["approval_replay_window_ms"].value) + 60 * MINUTE_MS  # the window + 1 hour
    ctx.control("advance_clock", seconds=late_ms // 1000)
    late = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "check_approval after the replay window")
    ctx.expect(late.get("status") == "unknown", f"{late_ms / (60 * MINUTE_MS):g} hours after the first consume the id is unknown: {late}")


def check_approval_bound(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    pending = c.detached_approval()
    ctx.control("decide_approval", approvalId=pending["approvalId"], decision="allow")
    other = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"], "conversationId": c.role("group")}),
                      "check_approval from another conversation")
    ctx.expect(other.get("status") != "resolved", f"check_approval from another conversation must not see the decision: {other}")


def check_secret_owner_only(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    owner, member = c.role("owner"), c.role("member")
    variants: list[dict[str, Any]] = [{"kind": "secret", "secretName": "API"}, {"kind": "sudo"}, {"sensitive": True},
                                      {"questions": [{"id": "q", "question": "Password?", "isSecret": True}]}]
    for extra in variants:
        iid = fresh("in")
        c.script("request_input", action="cancel")
        c.call("request_input", {"conversationId": c.role("group"), "inputId": iid, "prompt": "?", "responseUserId": member,
                                 "timeoutMs": MINUTE_MS, **extra})
        routed = c.interaction(iid).get("responseUserId")
        ctx.expect(routed == owner, f"request_input {extra} was routed to {routed!r}; secret kinds go to the owner only")


def check_session_rule_owner_only(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    rule = {"type": "approve-tool", "toolPattern": "deploy"}
    c.script("request_approval", action="allow", sessionRule=rule, **{"as": c.role("member")})
    reply = c.call("request_approval", {"conversationId": c.role("group"), "toolName": "deploy", "toolSummary": "x",
                                        "allowSessionRule": True, "responseUserId": c.role("member")})
    result = expect_result(ctx, reply, "request_approval answered by a non-owner")
    ctx.expect(result.get("status") == "allow", f"scripted allow did not arrive: {result}")
    ctx.expect("sessionRule" not in result, f"a non-owner's sessionRule must be dropped: {result}")
    c.script("request_approval", action="allow", sessionRule=rule)
    owner = expect_result(ctx, c.call("request_approval", {"toolName": "deploy", "toolSummary": "x", "allowSessionRule": True}),
                      "request_approval answered by the owner")
    ctx.expect(owner.get("sessionRule") == rule, f"the owner's sessionRule must be kept: {owner}")


def check_input_outcomes(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    base = {"conversationId": c.role("owner_chat"), "prompt": "Pick", "timeoutMs": MINUTE_MS}
    for script, expected in ((dict(action="answer", value="blue"), "submitted"), (dict(action="cancel"), "cancelled"),
                             (dict(action="timeout"), "timeout")):
        c.script("request_input", **script)
        got = expect_result(ctx, c.call("request_input", {**base, "inputId": fresh("in")}), f"request_input answered with {script['action']}")
        ctx.expect(got.get("status") == expected, f"a human's {script['action']} must give status {expected!r}: {got}")
    c.script("request_card", action="cancel")
    got = expect_result(ctx, c.call("request_card", {"card": c.card(actions=True), "timeoutMs": MINUTE_MS}), "request_card cancelled")
    ctx.expect(got.get("status") == "cancelled", f"a cancelled card must say cancelled: {got}")


# ----------------------------------------------------------------------------------
# cards
# ----------------------------------------------------------------------------------
def check_card_actions_required(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    expect_error(ctx, c.call("request_card", {"card": c.card(actions=False), "timeoutMs": MINUTE_MS}), "CARD_REJECTED", "request_card without an actions block")
    expect_result(ctx, c.call("send_card", {"card": c.card(actions=False)}), "send_card without actions (display only)")


def check_card_envelope(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    before = c.snapshot()
    expect_error(ctx, c.call("send_card", {"card": c.card(apiToken="abc")}), "CARD_REJECTED", "a card with a secret-bearing top-level key")
    limit = int(ctx.profile.limits["card_envelope_bytes"].value)
    big = c.card(blocks=[{"type": "text", "text": "x" * 600} for _ in range(limit // 600 + 6)])  # a few KB over
    ctx.expect(validator_for(ctx.profile.operations["send_card"].params_schema).is_valid({"card": big}), "the oversized card must be schema-valid")
    expect_error(ctx, c.call("send_card", {"card": big}), "CARD_REJECTED", f"a card over {limit} serialized bytes")
    ctx.expect(c.snapshot() == before, "a rejected card changed the state")


# ----------------------------------------------------------------------------------
# messages, contacts, groups
# ----------------------------------------------------------------------------------
def check_react_toggle(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    sent = expect_result(ctx, c.send("react to me"), "send_to")
    payload = {"conversationId": sent["conversationId"], "messageId": sent["messageId"], "emoji": "tada"}
    first = expect_result(ctx, c.call("react", payload), "react")
    second = expect_result(ctx, c.call("react", payload), "react again")
    ctx.expect((first.get("action"), second.get("action")) == ("added", "removed"), f"react must toggle added then removed: {first} {second}")
    expect_error(ctx, c.call("react", {**payload, "messageId": fresh("nomsg")}), "MESSAGE_NOT_FOUND", "react to an unknown message")


def check_forward(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    sent = expect_result(ctx, c.send("forward me"), "send_to")
    fwd = expect_result(ctx, c.call("forward", {"sourceConversationId": sent["conversationId"], "targetConversationId": c.role("agent_group"),
                                            "messageId": sent["messageId"]}), "forward")
    ctx.expect(fwd.get("targetConversationId") == c.role("agent_group"), f"forward went elsewhere: {fwd}")
    left = c.group(c.role("open_user"))
    inside = expect_result(ctx, c.send("secret", targetConversationId=left), "send_to the group")
    expect_result(ctx, c.call("leave_conversation", {"conversationId": left}), "leave_conversation")
    reply = c.call("forward", {"sourceConversationId": left, "targetConversationId": c.role("agent_group"), "messageId": inside["messageId"]})
    expect_error(ctx, reply, "NOT_A_MEMBER", "forward out of a conversation the agent left")


def check_share_contact(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    ok = expect_result(ctx, c.call("share_contact", {"conversationId": c.role("owner_chat"), "contactUserId": c.role("member")}), "share_contact of a contact")
    ctx.expect(ok.get("status") == "shared", f"share_contact must say shared: {ok}")
    reply = c.call("share_contact", {"conversationId": c.role("owner_chat"), "contactUserId": c.role("stranger")})
    expect_error(ctx, reply, "NOT_A_CONTACT", "share_contact of a user outside the agent's contacts")


def check_group_admission(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    r = c.role
    made = expect_result(ctx, c.call("create_group", {"memberIds": [r("open_user"), r("approval_user"), r("closed_user")]}), "create_group")
    ctx.expect(made.get("added") == [r("open_user")], f"only the open user is added at creation: {made.get('added')}")
    ctx.expect([p.get("userId") for p in made.get("pending") or []] == [r("approval_user")], f"the approval-required user is pending: {made.get('pending')}")
    ctx.expect([s.get("userId") for s in made.get("skipped") or []] == [r("closed_user")], f"the closed user is skipped: {made.get('skipped')}")
    invite_only = expect_result(ctx, c.call("create_group", {"memberIds": [r("approval_user")]}), "create_group with only a pending invite")
    ctx.expect(invite_only.get("added") == [] and invite_only.get("pending"), f"a creator-only group with a pending invite is valid: {invite_only}")
    expect_error(ctx, c.call("create_group", {"memberIds": [r("closed_user")]}), "GROUP_EMPTY", "create_group where everyone is skipped")


def check_add_member(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    r = c.role
    group = c.group(r("member"))
    ctx.expect(expect_result(ctx, c.call("add_member", {"conversationId": group, "userId": r("open_user")}), "add_member open").get("status") == "added",
               "an open user is added")
    pending = expect_result(ctx, c.call("add_member", {"conversationId": group, "userId": r("approval_user")}), "add_member approval-required")
    ctx.expect(pending.get("status") == "pending" and pending.get("requestId"), f"an approval-required user yields a pending invite: {pending}")
    expect_error(ctx, c.call("add_member", {"conversationId": group, "userId": r("closed_user")}), "ADMISSION_DENIED", "add_member of a closed user")


def check_remove_member(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    reply = c.call("remove_member", {"conversationId": c.role("group"), "userId": c.role("member")})
    expect_error(ctx, reply, "NOT_GROUP_ADMIN", "remove_member by a plain member")
    group = c.group(c.role("open_user"))
    expect_result(ctx, c.call("remove_member", {"conversationId": group, "userId": c.role("open_user")}), "remove_member by the owner")


def check_leave(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    group = c.group(c.role("open_user"))
    left = expect_result(ctx, c.call("leave_conversation", {"conversationId": group}), "leave_conversation")
    ctx.expect(left.get("status") == "left", f"leave_conversation must say left: {left}")
    convs = expect_result(ctx, c.call("list_conversations", {}), "list_conversations")["conversations"]
    ctx.expect(all(x.get("id") != group for x in convs), "the agent still lists the conversation it left")
    expect_error(ctx, c.send("still here?", targetConversationId=group), "NOT_A_MEMBER", "send_to a conversation the agent left")


def check_list_contacts(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    ids = {x.get("id") for x in expect_result(ctx, c.call("list_contacts", {}), "list_contacts")["contacts"]}
    ctx.expect(c.role("member") in ids, "list_contacts lacks a contact")
    ctx.expect(c.role("stranger") not in ids and c.role("closed_user") not in ids, f"list_contacts lists non-contacts: {sorted(ids)}")


def check_list_conversations(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    c.group(c.role("open_user"))
    every = expect_result(ctx, c.call("list_conversations", {}), "list_conversations")["conversations"]
    ctx.expect(len(every) >= 2, f"list_conversations shows {len(every)} conversations")
    capped = expect_result(ctx, c.call("list_conversations", {"limit": 1}), "list_conversations limit 1")["conversations"]
    ctx.expect(len(capped) == 1, f"limit 1 returned {len(capped)} conversations")


def check_no_reply(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    chat = c.role("owner_chat")
    before = c.messages(chat, c.role("owner"))
    got = expect_result(ctx, c.call("no_reply", {"conversationId": chat, "reason": "nothing to say"}), "no_reply")
    ctx.expect(got.get("status") == "acknowledged", f"no_reply must say acknowledged: {got}")
    ctx.expect(c.messages(chat, c.role("owner")) == before, "no_reply posted something")


# ----------------------------------------------------------------------------------
# bindings
# ----------------------------------------------------------------------------------
def verbs_as_callers(ctx: CheckContext) -> dict[str, Callable[[Any], Any]]:
    """The auth family's rows: harmless verbs with valid inputs, each taking a caller."""
    c = CanonClient(ctx)
    inputs = {"list_contacts": {}, "list_conversations": {"limit": 1},
              "send_to": {"targetConversationId": c.role("owner_chat"), "text": "conformance check"}}
    return {verb: functools.partial(lambda verb, payload, who: c.binding.call(verb, payload, caller=who), verb, payload)
            for verb, payload in inputs.items()}


def check_binding_errors(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    replies = [
        ("schema-invalid input", c.call("react", {"emoji": ""})),
        ("unknown conversation", c.send("x", targetConversationId=fresh("conv"))),
        ("not a contact", c.call("share_contact", {"conversationId": c.role("owner_chat"), "contactUserId": c.role("stranger")})),
    ]
    for what, reply in replies:
        expect_catalogued(ctx, reply, what, require_error=True)


def check_mcp_tools(ctx: CheckContext) -> None:
    if ctx.binding.kind != "mcp-tools":
        raise NotApplicable("tools/list exists only in the mcp binding")
    from hypothesis import strategies as st

    from conformance.spec.invalid import invalid_strategy

    c = CanonClient(ctx)
    tools = {t.get("name"): t for t in c.binding.list_tools()}
    ops = ctx.profile.operations
    ctx.expect(set(tools) == set(ops), f"tools/list names {sorted(set(tools) ^ set(ops))} differently from the spec's verbs")

    from conformance.spec.schemas import strategy_for

    for verb, op in sorted(ops.items()):  # one valid input per verb plus an unknown property
        def extra_refused(base: Any, verb: str = verb, op: Any = op) -> None:
            extra = {**base, "x_conformance_unknown": True} if isinstance(base, dict) else base
            if not validator_for(op.params_schema).is_valid(extra):
                ctx.expect(not validator_for(tools[verb].get("inputSchema") or {}).is_valid(extra),
                           f"tool {verb}'s inputSchema accepts an unknown property that {verb}_input forbids")
        ctx.for_all(strategy_for(op.params_schema), extra_refused, examples=1)

    def body(pair: tuple[str, Any]) -> None:
        verb, bad = pair
        accepted = validator_for(tools[verb].get("inputSchema") or {}).is_valid(bad.instance)
        ctx.expect(not accepted, f"tool {verb}'s inputSchema accepts an input {verb}_input rejects ({bad.violation.description})")

    ctx.for_all(st.one_of([st.tuples(st.just(v), invalid_strategy(op.params_schema)) for v, op in sorted(ops.items())]), body)


# ----------------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------------
# Verbs whose inputs have no required property of their own (send_to requires one
# target through its oneOf) or whose results carry no status need faults of their own.
VALID_FAULTS = {"send_to": ("contact_id_target_rejected",)}
RESULT_FAULTS = {"list_contacts": ("contact_items_incomplete",), "list_conversations": ("conversation_items_incomplete",)}

def build(profile: Profile) -> list[Requirement]:
    yaml_src = f"profiles/{profile.name}.yaml"
    table = Table(profile)
    at, req = table.at, table.req

    d = "/$defs"
    reqs = [
        req("CANON-MESSAGE-ID-REPLAY", "MUST", "The same messageId with an identical payload replays the original result, once",
            at(f"{d}/messageId/description"), idempotency.replay_once(send_with_message_id, owner_chat_messages, "send_to with a messageId"), ("message_id_replay_duplicates",)),
        req("CANON-MESSAGE-ID-CONCURRENT", "MUST", "Identical sends with one messageId arriving at once store one message",
            at(f"{d}/messageId/description"),
            idempotency.replay_concurrent(send_with_message_id, owner_chat_messages, "send_to with a messageId"),
            ("message_id_replay_duplicates",)),
        req("CANON-MESSAGE-ID-CONFLICT", "MUST", "The same messageId with a different payload gets 409 MESSAGE_ID_EXISTS",
            at(f"{d}/messageId/description"), idempotency.conflict_refused(message_id_conflicts, "MESSAGE_ID_EXISTS"), ("message_id_conflict_accepted",)),
        req("CANON-MESSAGE-ID-RESERVED", "MUST", "The reserved messageIds '.', '..' and __x__ are refused and change nothing",
            at(f"{d}/messageId/not"), examples_refused(reserved_message_ids, REJECTION, world_digest), ("reserved_ids_accepted",)),
        req("CANON-INPUT-ID-SINGLE-USE", "MUST", "An inputId is single-use: reuse gets 409",
            at(f"{d}/request_input_input/properties/inputId/description"), idempotency.single_use(input_ids, "ID_ALREADY_USED"), ("input_id_reuse_accepted",)),
        req("CANON-APPROVAL-ID-SINGLE-USE", "MUST", "An approvalId is durable and single-use: reuse is refused",
            at(f"{d}/request_approval_input/properties/approvalId/description"), idempotency.single_use(approval_ids, "ID_ALREADY_USED"), ("approval_id_reuse_accepted",)),
        req("CANON-SELF-CONTEXT-PRIVATE", "MUST", "A selfContext is visible only to the sending agent, never to recipients",
            at(f"{d}/selfContext/description"), check_self_context_private, ("self_context_leaks",)),
        req("CANON-SELF-CONTEXT-SOURCE", "MUST", "A selfContext send needs a sourceConversationId the agent is a member of",
            at(f"{d}/send_to_input/properties/sourceConversationId/description"), check_self_context_source, ("self_context_without_membership",)),
        req("CANON-SEND-ADMISSION", "MUST", "send_to a user: open gets messaged, approval-required requested/pending, closed unavailable/closed",
            at(f"{d}/send_to_input/description"), check_admission, ("approval_required_messaged", "closed_target_reason_wrong")),
        req("CANON-SEND-DEFERRED", "MUST", "A send to an approval-required user is delivered once the request is approved",
            at(f"{d}/send_to_input/description"), check_deferred_send, ("deferred_send_lost",)),
        req("CANON-SEND-SESSION-SELECTION", "MUST", "sessionSelection new / continue_latest / specific pick the conversation they name",
            at(f"{d}/sessionSelection"), check_session_selection, ("session_new_reuses",)),
        req("CANON-MENTIONS-MEMBERS", "MUST", "Every mention must be a conversation member (400 otherwise)",
            at(f"{d}/messageOptions/properties/mentions/description"), check_mentions, ("mention_non_member_accepted",)),
        req("CANON-DEADLINE-CEILING", "MUST", f"Deadlines stay within the ceilings: input {profile.limits['input_ceiling_ms'].value / MINUTE_MS:g} minutes, "
            f"card {profile.limits['card_ceiling_ms'].value / MINUTE_MS:g} minutes, approval {profile.limits['approval_ceiling_ms'].value / (60 * MINUTE_MS):g} hours",
            at(f"{d}/request_approval_input/description"), check_deadline_ceiling, ("deadline_ceiling_ignored",)),
        req("CANON-APPROVAL-FAILS-CLOSED", "MUST", "An unanswered blocking approval times out and never allows",
            at(f"{d}/request_approval_input/description"), check_approval_fails_closed, ("approval_timeout_allows",)),
        req("CANON-APPROVAL-DETACHED", "MUST", "mode detached answers pending at once; the decision arrives through check_approval",
            at(f"{d}/request_approval_input/description"), check_approval_detached, ("detached_approval_blocks",)),
        req("CANON-CHECK-APPROVAL-STATUSES", "MUST", "check_approval: unknown is not a denial, pending while open, expired after the deadline",
            at(f"{d}/check_approval_result/description"), check_approval_statuses, ("expired_reported_deny", "unknown_reported_deny")),
        req("CANON-CHECK-APPROVAL-REPLAY", "MUST", f"A resolved decision replays for {profile.limits['approval_replay_window_ms'].value / (60 * MINUTE_MS):g} h after the first consume, then is unknown",
            at(f"{d}/check_approval_input/description"), check_approval_replay, ("check_approval_replay_consumed",)),
        req("CANON-CHECK-APPROVAL-BOUND", "SHOULD", "check_approval is bound to the conversation that created the approval",
            at(f"{d}/check_approval_input/description"), check_approval_bound, ("approval_conversation_unbound",)),
        req("CANON-SECRET-OWNER-ONLY", "MUST", "sudo/secret kinds, sensitive and isSecret questions route to the owner only",
            at(f"{d}/request_input_input/description"), check_secret_owner_only, ("secret_input_routed_to_member",)),
        req("CANON-SESSION-RULE-OWNER-ONLY", "MUST", "A non-owner responder's session rule is dropped; the owner's is kept",
            at(f"{d}/sessionRule/description"), check_session_rule_owner_only, ("non_owner_session_rule_kept",)),
        req("CANON-HUMAN-OUTCOMES", "MUST", "request_input / request_card report submitted, cancelled and timeout as the human acted",
            at(f"{d}/request_input_result"), check_input_outcomes, ("input_cancel_reported_timeout",)),
        req("CANON-CARD-ACTIONS-REQUIRED", "MUST", "request_card needs at least one actions block; send_card needs none",
            at(f"{d}/request_card_input/description"), check_card_actions_required, ("card_without_actions_accepted",)),
        req("CANON-CARD-ENVELOPE", "MUST", f"Cards over {profile.limits['card_envelope_bytes'].value} bytes or with secret-bearing top-level keys are refused",
            at(f"{d}/runtimeCard/description"), check_card_envelope, ("card_secret_key_accepted", "card_size_unchecked")),
        req("CANON-REACT-TOGGLE", "MUST", "react toggles: added, then removed",
            at(f"{d}/react_input/description"), check_react_toggle, ("react_always_adds",)),
        req("CANON-FORWARD", "MUST", "forward copies a message the agent can see into another conversation",
            at(f"{d}/forward_input/description"), check_forward, ("forward_from_nonmember_allowed",)),
        req("CANON-SHARE-CONTACT", "MUST", "share_contact of someone outside the agent's contacts gets 403",
            at(f"{d}/share_contact_input/description"), check_share_contact, ("share_non_contact_allowed",)),
        req("CANON-GROUP-STAGED-ADMISSION", "MUST", "create_group adds, invites (pending) and skips by each target's policy",
            at(f"{d}/create_group_input/description"), check_group_admission, ("create_group_ignores_policy",)),
        req("CANON-GROUP-ADD-MEMBER", "MUST", "add_member of an approval-required user yields a pending invite",
            at(f"{d}/add_member_input/description"), check_add_member, ("add_member_ignores_policy",)),
        req("CANON-GROUP-REMOVE-ADMIN-ONLY", "MUST", "remove_member needs a group owner or admin",
            at(f"{d}/remove_member_input/description"), check_remove_member, ("remove_member_by_non_admin",)),
        req("CANON-GROUP-LEAVE", "MUST", "leave_conversation ends the agent's membership",
            at(f"{d}/leave_conversation_result"), check_leave, ("leave_keeps_membership",)),
        req("CANON-LIST-CONTACTS", "MUST", "list_contacts lists the agent's contacts and no one else",
            at(f"{d}/list_contacts_result"), check_list_contacts, ("list_contacts_includes_strangers",)),
        req("CANON-LIST-CONVERSATIONS-LIMIT", "MUST", "list_conversations limit caps the number of conversations",
            at(f"{d}/list_conversations_input/properties/limit/description"), check_list_conversations, ("list_conversations_ignores_limit",)),
        req("CANON-NO-REPLY-SILENT", "MUST", "no_reply posts nothing",
            at(f"{d}/no_reply_input/description"), check_no_reply, ("no_reply_posts_message",)),
        req("CANON-BINDING-ERRORS", "SHOULD", "Errors carry the profile's code, flagged by the binding, with the profile's HTTP status",
            Source("profile", f"{yaml_src}#/errors"), check_binding_errors, ("errors_as_200",)),
        req("CANON-AUTH-REQUIRED", "SHOULD", "With a bearer token configured, a call without one gets UNAUTHENTICATED (401)",
            Source("profile", f"{yaml_src}#/credentials/full"), auth.token_required(verbs_as_callers, "UNAUTHENTICATED"),
            ("auth_not_enforced",), ("full",)),
        req("CANON-MCP-TOOLS", "SHOULD", "tools/list has one tool per verb whose inputSchema accepts nothing <verb>_input rejects",
            Source("profile", f"{yaml_src}#/bindings/mcp"), check_mcp_tools, ("mcp_tool_schema_looser",)),
        req("CANON-LIFECYCLE", "MUST", "Conversations, groups and approvals move as the model predicts (stateful)",
            at(d), lambda ctx: ctx.run_machine(CanonMachine),
            ("leave_keeps_membership",)),
    ]
    for verb, op in profile.operations.items():
        reqs.append(req(f"CANON-INPUT-VALID-{slug(verb)}", "MUST", f"Generated valid {verb} inputs are accepted",
                        op.source, valid_inputs(verb), VALID_FAULTS.get(verb, ("minimal_input_rejected",))))
        reqs.append(req(f"CANON-INPUT-INVALID-{slug(verb)}", "MUST", f"{verb} inputs breaking one schema rule are refused and change nothing",
                        op.source, invalid_inputs(verb), ("accepts_invalid_input", "validation_after_write")))
        reqs.append(req(f"CANON-RESULT-{slug(verb)}", "MUST", f"{verb} results match {verb}_result",
                        at(f"{d}/{verb}_result"), result_schema(verb), RESULT_FAULTS.get(verb, ("result_status_renamed",))))
    return reqs
