"""Messages, contacts and groups: react toggles, forward, share_contact, group creation
and admission, removing and leaving, the listings, and no_reply's silence."""

from __future__ import annotations

from typing import Any

from conformance.checks.expect import expect_error, expect_result, refused_as
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import noop, replaces, returns, returns_arg
from conformance.protocols.canon.answers import items, members_of, objects
from conformance.protocols.canon.client import CanonClient, fresh
from conformance.protocols.canon.reference import CanonReference
from conformance.protocols.canon.shared import CODES, DEFS


@requirement(id="CANON-REACT-TOGGLE", level="MUST",
             title="react toggles: added, then removed; an unknown message is refused",
             source=at(f"{DEFS}/react_input/description"), code="MESSAGE_NOT_FOUND", code_faults=CODES)
def check_react_toggle(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    sent = expect_result(ctx, c.send("react to me"), "send_to", ["conversationId", "messageId"])
    payload = {"conversationId": sent["conversationId"], "messageId": sent["messageId"], "emoji": "tada"}
    first = expect_result(ctx, c.call("react", payload), "react")
    second = expect_result(ctx, c.call("react", payload), "react again")
    ctx.expect((first.get("action"), second.get("action")) == ("added", "removed"),
               f"react must toggle added then removed: {first} {second}")
    refused_as(ctx, c.call("react", {**payload, "messageId": fresh("nomsg")}), "MESSAGE_NOT_FOUND",
               "react to an unknown message", strict)


@check_react_toggle.fault
def react_always_adds(ref: CanonReference) -> None:
    """react never toggles off: a second identical reaction is added again."""
    @replaces(ref.toggle_reaction)
    def toggle(original: Any, msg: dict[str, Any], emoji: str, user_id: str) -> str:
        msg["reactions"].setdefault(emoji, []).append(user_id)
        return "added"


@requirement(id="CANON-FORWARD", level="MUST",
             title="forward copies a message the agent can see into another conversation",
             source=at(f"{DEFS}/forward_input/description"),
             faults=[returns("forward_from_nonmember_allowed", "forward_source_allowed", True,
                             "forward accepts a source conversation the agent is not a member of.")],
             code="NOT_A_MEMBER", code_faults=CODES)
def check_forward(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    sent = expect_result(ctx, c.send("forward me"), "send_to", ["conversationId", "messageId"])
    fwd = expect_result(ctx, c.call("forward", {"sourceConversationId": sent["conversationId"],
                                                "targetConversationId": c.role("agent_group"),
                                                "messageId": sent["messageId"]}), "forward")
    ctx.expect(fwd.get("targetConversationId") == c.role("agent_group"), f"forward went elsewhere: {fwd}")
    left = c.group(c.role("open_user"))
    inside = expect_result(ctx, c.send("secret", targetConversationId=left), "send_to the group",
                           ["messageId"])
    expect_result(ctx, c.call("leave_conversation", {"conversationId": left}), "leave_conversation")
    reply = c.call("forward", {"sourceConversationId": left, "targetConversationId": c.role("agent_group"),
                               "messageId": inside["messageId"]})
    refused_as(ctx, reply, "NOT_A_MEMBER", "forward out of a conversation the agent left", strict)


@requirement(id="CANON-SHARE-CONTACT", level="MUST",
             title="share_contact of someone outside the agent's contacts is refused (403)",
             source=at(f"{DEFS}/share_contact_input/description"), code="NOT_A_CONTACT", code_faults=CODES)
def check_share_contact(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    ok = expect_result(ctx, c.call("share_contact", {"conversationId": c.role("owner_chat"),
                                                     "contactUserId": c.role("member")}),
                       "share_contact of a contact")
    ctx.expect(ok.get("status") == "shared", f"share_contact must say shared: {ok}")
    reply = c.call("share_contact", {"conversationId": c.role("owner_chat"),
                                     "contactUserId": c.role("stranger")})
    refused_as(ctx, reply, "NOT_A_CONTACT", "share_contact of a user outside the agent's contacts", strict)


@check_share_contact.fault
def share_non_contact_allowed(ref: CanonReference) -> None:
    """share_contact accepts a user who is not the agent's contact."""
    @replaces(ref.shareable)
    def shareable(original: Any, user_id: str) -> bool:
        return ref.user(user_id) is not None


@requirement(id="CANON-GROUP-STAGED-ADMISSION", level="MUST",
             title="create_group adds (the caller too), invites (pending) and skips by policy; nobody to add "
                   "is refused",
             source=at(f"{DEFS}/create_group_input/description"), code="GROUP_EMPTY", code_faults=CODES)
def check_group_admission(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    r = c.role
    made = expect_result(ctx, c.call("create_group", {"memberIds": [r("open_user"), r("approval_user"),
                                                                    r("closed_user")]}), "create_group")
    ctx.expect(made.get("added") == [r("open_user")],
               f"only the open user is added at creation: {made.get('added')}")
    ctx.expect([p.get("userId") for p in objects(made.get("pending"))] == [r("approval_user")],
               f"the approval-required user is pending: {made.get('pending')}")
    ctx.expect([s.get("userId") for s in objects(made.get("skipped"))] == [r("closed_user")],
               f"the closed user is skipped: {made.get('skipped')}")
    convs = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    mine = [x for x in convs if x.get("id") == made.get("conversationId")]
    ctx.expect(mine and r("agent") in members_of(mine[0]),
               f"the caller is added to its new group automatically: {mine}")
    invite_only = expect_result(ctx, c.call("create_group", {"memberIds": [r("approval_user")]}),
                                "create_group with only a pending invite")
    ctx.expect(invite_only.get("added") == [] and invite_only.get("pending"),
               f"a creator-only group with a pending invite is valid: {invite_only}")
    refused_as(ctx, c.call("create_group", {"memberIds": [r("closed_user")]}), "GROUP_EMPTY",
               "create_group where everyone is skipped", strict)


@check_group_admission.fault
def create_group_ignores_policy(ref: CanonReference) -> None:
    """create_group adds approval-required users directly."""
    @replaces(ref.group_create_outcome)
    def outcome(original: Any, user_id: str) -> tuple[str, str | None]:
        got = original(user_id)
        return ("added", None) if got[0] == "pending" else got


@check_group_admission.fault
def creator_not_added(ref: CanonReference) -> None:
    """create_group leaves the caller out of the new group."""
    @replaces(ref.add_conversation)
    def add(original: Any, kind: str, members: list[str], owner: str | None, name: str | None = None,
            conv_id: str | None = None) -> dict[str, Any]:
        if kind == "group" and owner == ref.agent and conv_id is None:
            members = [m for m in members if m != ref.agent] or members[1:]
        return original(kind, members, owner, name, conv_id)


@requirement(id="CANON-GROUP-ADD-MEMBER", level="MUST",
             title="add_member of an approval-required user yields a pending invite; a closed user is not "
                   "added",
             source=at(f"{DEFS}/add_member_input/description"), code="ADMISSION_DENIED", code_faults=CODES)
def check_add_member(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    r = c.role
    group = c.group(r("member"))
    added = expect_result(ctx, c.call("add_member", {"conversationId": group, "userId": r("open_user")}),
                          "add_member open")
    ctx.expect(added.get("status") == "added", "an open user is added")
    pending = expect_result(ctx, c.call("add_member", {"conversationId": group,
                                                       "userId": r("approval_user")}),
                            "add_member approval-required")
    ctx.expect(pending.get("status") == "pending" and pending.get("requestId"),
               f"an approval-required user yields a pending invite: {pending}")
    reply = c.call("add_member", {"conversationId": group, "userId": r("closed_user")})
    if strict:
        expect_error(ctx, reply, "ADMISSION_DENIED", "add_member of a closed user")
        return
    convs = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    members = next((members_of(x) for x in convs if x.get("id") == group), [])
    added_anyway = reply.ok and (reply.result or {}).get("status") == "added"
    ctx.expect(r("closed_user") not in members and not added_anyway,
               f"a closed user must not be added ({reply.describe()}; members {members})")


@check_add_member.fault
def add_member_ignores_policy(ref: CanonReference) -> None:
    """add_member adds approval-required users directly."""
    @replaces(ref.add_member_outcome)
    def outcome(original: Any, user_id: str) -> str:
        original(user_id)  # unknown and closed users still fail
        return "added"


REMOVE_FROM_GROUP = ("asks to remove `member` from the configured group `group` (the owner's), where the "
                     "agent is a plain member: a target that wrongly lets it removes them for good "
                     "(the agent cannot add them back)")


@requirement(id="CANON-GROUP-REMOVE-ADMIN-ONLY", level="MUST",
             title="remove_member needs a group owner or admin",
             source=at(f"{DEFS}/remove_member_input/description"),
             faults=[returns("remove_member_by_non_admin", "is_group_admin", True,
                             "remove_member is allowed to a plain member (no NOT_GROUP_ADMIN).")],
             code="NOT_GROUP_ADMIN", code_faults=CODES, lasting=REMOVE_FROM_GROUP)
def check_remove_member(ctx: CheckContext, strict: bool = False) -> None:
    """A plain member's remove_member needs a group where the agent is no admin: only the
    configured ``group`` is one (a group the agent makes, it owns). A compliant target
    refuses; one that does not removes ``member`` for good, so the row is lasting."""
    c = CanonClient(ctx)
    group, member = c.role("group"), c.role("member")
    ctx.lasting("full", REMOVE_FROM_GROUP)
    reply = c.call("remove_member", {"conversationId": group, "userId": member})
    if reply.ok:  # the harm a wrong answer did: try to put it back (the agent may not be allowed to)
        ctx.put_back(f"{member} removed from {group}",
                     lambda: c.call("add_member", {"conversationId": group, "userId": member}).ok)
    refused_as(ctx, reply, "NOT_GROUP_ADMIN", "remove_member by a plain member", strict)
    group = c.group(c.role("open_user"))
    expect_result(ctx, c.call("remove_member", {"conversationId": group, "userId": c.role("open_user")}),
                  "remove_member by the owner")


@requirement(id="CANON-GROUP-LEAVE", level="MUST", title="leave_conversation ends the agent's membership",
             source=at(f"{DEFS}/leave_conversation_result"),
             faults=[noop("leave_keeps_membership", "leave",
                          "leave_conversation answers left but the agent stays a member.")],
             code="NOT_A_MEMBER", code_faults=CODES)
def check_leave(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    group = c.group(c.role("open_user"))
    left = expect_result(ctx, c.call("leave_conversation", {"conversationId": group}), "leave_conversation")
    ctx.expect(left.get("status") == "left", f"leave_conversation must say left: {left}")
    convs = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    ctx.expect(all(x.get("id") != group for x in convs), "the agent still lists the conversation it left")
    refused_as(ctx, c.send("still here?", targetConversationId=group), "NOT_A_MEMBER",
               "send_to a conversation the agent left", strict)


@requirement(id="CANON-LIST-CONTACTS", level="MUST",
             title="list_contacts lists the agent's contacts and no one else",
             source=at(f"{DEFS}/list_contacts_result"))
def check_list_contacts(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    ids = {str(x["id"]) for x in items(ctx, c.call("list_contacts", {}), "list_contacts", "contacts")
           if isinstance(x.get("id"), str)}
    ctx.expect(c.role("member") in ids, "list_contacts lacks a contact")
    ctx.expect(c.role("stranger") not in ids and c.role("closed_user") not in ids,
               f"list_contacts lists non-contacts: {sorted(ids)}")


@check_list_contacts.fault
def list_contacts_includes_strangers(ref: CanonReference) -> None:
    """list_contacts also lists users who are not the agent's contacts."""
    @replaces(ref.contact_list)
    def contacts(original: Any) -> list[dict[str, Any]]:
        out = original()
        known = {c["id"] for c in out}
        out += [{"id": uid, "source": "unknown", "addedAt": None, "displayNameOverride": None}
                for uid, user in ref.w["users"].items() if uid not in known and uid != ref.agent]
        return out


@requirement(id="CANON-LIST-CONVERSATIONS-LIMIT", level="MUST",
             title="list_conversations limit caps the number of conversations",
             source=at(f"{DEFS}/list_conversations_input/properties/limit/description"),
             faults=[returns_arg("list_conversations_ignores_limit", "apply_limit", 0,
                                 "list_conversations returns every conversation whatever the limit.")])
def check_list_conversations(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    c.group(c.role("open_user"))
    every = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    ctx.expect(len(every) >= 2, f"list_conversations shows {len(every)} conversations")
    capped = items(ctx, c.call("list_conversations", {"limit": 1}), "list_conversations limit 1",
                   "conversations")
    ctx.expect(len(capped) == 1, f"limit 1 returned {len(capped)} conversations")


@requirement(id="CANON-NO-REPLY-SILENT", level="MUST", title="no_reply posts nothing",
             source=at(f"{DEFS}/no_reply_input/description"))
def check_no_reply(ctx: CheckContext) -> None:
    """Nothing is posted: the owner's view of the chat (control messages) is unchanged, or,
    without control, the chat's lastMessage as list_conversations shows it to the agent."""
    c = CanonClient(ctx)
    chat = c.role("owner_chat")

    def seen() -> Any:
        if ctx.run.control_path:
            return c.messages(chat, c.role("owner"))
        return c.listed(chat).get("lastMessage")

    before = seen()
    got = expect_result(ctx, c.call("no_reply", {"conversationId": chat, "reason": "nothing to say"}),
                        "no_reply")
    ctx.expect(got.get("status") == "acknowledged", f"no_reply must say acknowledged: {got}")
    ctx.expect(seen() == before, "no_reply posted something")


@check_no_reply.fault
def no_reply_posts_message(ref: CanonReference) -> None:
    """no_reply posts a message to the conversation."""
    @replaces(ref.no_reply_effect)
    def effect(original: Any, conv: dict[str, Any], args: dict[str, Any]) -> None:
        ref.store_message(conv, ref.agent, "(no reply)")
