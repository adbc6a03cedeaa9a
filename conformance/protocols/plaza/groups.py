"""Part 2 requirements (issue 14) of the groups part: the owner's group authorization
(preflight, requests that grant nothing, grants with their scopes and expiry, revocation at
once), groups (private by default, discover, list filters), membership (applications and
admission, invitations and responses, member actions, at most max_members, no history from
before joining), messages (pages, ack, content, retries rechecked), rate limits and the loop
guard, queue and flush, schedules, routing (group_id only inside data) and the group work
kinds of durable receive. See part_groups.py for what the reference serves.

The document names commands and fields but no answer shapes: the MUST checks judge what a
member can read (contents found anywhere in an answer), what is refused and what is
stored; the profile's shapes are SHOULDs of ``source: profile``. Set-up relays an owner's
grant with ``group_authorize`` (owner_authorized: true), as the branch requires."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.checks.errors import expect_refused, expect_result, refused_as
from conformance.model import Requirement
from conformance.protocols.plaza.answers import (
    batch_items,
    drain,
    listed,
    mentions,
    pull,
    receiver,
    text_of,
    walk,
)
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.runner import CheckContext, CheckFailed, Untested
from conformance.table import Table
from conformance.transport.binding import RawToken, Reply
from conformance.transport.http import json_excerpt

Who = Any  # a credential label or a RawToken (a seeded agent)
AUTHZ = "/durableReceive/authorization"
CHAT = "/groupChat"


# ----------------------------------------------------------------------------------------------
# the document's values
# ----------------------------------------------------------------------------------------------
def branch_index(ctx_or_table: Any, name: str) -> int:
    branches = ctx_or_table.profile.spec["schemas"]["command"]["anyOf"]
    return next(i for i, b in enumerate(branches) if dig(b, "properties", "operation", "const") == name)


def prop(ctx: CheckContext, command: str, *path: str) -> Any:
    """A field's schema in a command's branch (``rules``' fields with ``"rules", name``)."""
    node: Any = ctx.profile.spec["schemas"]["command"]["anyOf"][branch_index(ctx, command)]["properties"]
    for i, key in enumerate(path):
        node = node[key] if i == 0 else node["properties"][key]
    return node


def chat(ctx: CheckContext, key: str) -> Any:
    return ctx.profile.spec["groupChat"][key]


# ----------------------------------------------------------------------------------------------
# calls and readers
# ----------------------------------------------------------------------------------------------
def call(c: PlazaClient, who: Who, operation: str, /, **fields: Any) -> Reply:
    """A group command; a fresh request_key where its branch takes one and none is given."""
    schema = c.spec["schemas"]["command"]["anyOf"][branch_index(c.ctx, operation)]
    if "request_key" in schema["properties"] and "request_key" not in fields:
        fields["request_key"] = fresh_id()
    return c.command(operation, fields, who)


def ok(c: PlazaClient, who: Who, operation: str, /, **fields: Any) -> dict[str, Any]:
    return c.data_of(call(c, who, operation, **fields), f"{operation} by {label(who)}")


def label(who: Who) -> str:
    return "a seeded agent" if isinstance(who, RawToken) else str(who)


def refused(c: PlazaClient, reply: Reply, what: str) -> None:
    expect_refused(c.ctx, reply, what)


def group_id_of(ctx: CheckContext, data: dict[str, Any], what: str) -> str:
    """The new group's id: ``group.group_id`` / ``group.id`` / ``group_id`` of the answer."""
    for found in (dig(data, "group", "group_id"), dig(data, "group", "id"), data.get("group_id"), data.get("id")):
        if isinstance(found, str) and found:
            return found
    raise CheckFailed(f"{what}: the answer names no group id: {json_excerpt(data, 300)}", "malformed_answer")


def is_message(value: Any) -> bool:
    return isinstance(value, dict) and ("content" in value or "seq" in value)


def content_of(message: dict[str, Any]) -> Any:
    return message.get("content", message.get("text"))


def messages(c: PlazaClient, who: Who, gid: str, what: str, **fields: Any) -> list[dict[str, Any]]:
    data = c.data_of(call(c, who, "group_messages", group_id=gid, **fields), what)
    return listed(c.ctx, data, "messages", what, is_message)


def contents(c: PlazaClient, who: Who, gid: str, what: str, **fields: Any) -> list[Any]:
    return [content_of(m) for m in messages(c, who, gid, what, **fields)]


def seq_number(ctx: CheckContext, message: dict[str, Any], what: str) -> int:
    value = message.get("seq")
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise CheckFailed(f"{what}: a group message's seq {value!r} is no integer to page after ({json_excerpt(message)})",
                      "malformed_answer")


# ----------------------------------------------------------------------------------------------
# set-up: grants, groups, members
# ----------------------------------------------------------------------------------------------
def authorize(c: PlazaClient, who: Who, **fields: Any) -> dict[str, Any]:
    """The owner's grant relayed by the Agent (the branch requires owner_authorized: true)."""
    with c.ctx.setup(f"{label(who)}'s owner grants group authorization", by="PLAZA-GROUP-AUTHORIZE"):
        return ok(c, who, "group_authorize", owner_authorized=True, **fields)


def revoke(c: PlazaClient, who: Who) -> None:
    with c.ctx.setup(f"{label(who)}'s group authorization is revoked", by="PLAZA-GROUP-AUTH-REVOKE"):
        ok(c, who, "group_authorization_revoke")


def create(c: PlazaClient, who: Who = ALICE, *, grant: dict[str, Any] | None = None, **fields: Any) -> str:
    """A new group of ``who`` (granted create, invite, join and send first)."""
    authorize(c, who, allow_create=True, allow_invite=True, allow_join=True, allow_send=True, **(grant or {}))
    fields.setdefault("name", text_of("group"))
    with c.ctx.setup(f"{label(who)} creates a group", by="PLAZA-GROUP-CREATE"):
        return group_id_of(c.ctx, ok(c, who, "group_create", **fields), "group_create")


def visitor_id(c: PlazaClient, who: Who, ids: dict[str, str] | None = None) -> str:
    return ids[who.value] if isinstance(who, RawToken) and ids else c.agent_id(who)


def add_member(c: PlazaClient, owner: Who, member: Who, gid: str, *, member_id: str | None = None,
               grant: dict[str, Any] | None = None) -> None:
    """``owner`` invites ``member``, whose owner grants joining and sending; it accepts."""
    authorize(c, member, allow_join=True, allow_send=True, allow_invite=True, **(grant or {}))
    with c.ctx.setup(f"{label(member)} joins the group by invitation", by="PLAZA-GROUP-MEMBERSHIP"):
        ok(c, owner, "group_invite", group_id=gid, visitor_id=member_id or c.agent_id(member))
        ok(c, member, "group_respond", group_id=gid, decision="accept")


def send(c: PlazaClient, who: Who, gid: str, content: str, **fields: Any) -> Reply:
    return call(c, who, "group_send", group_id=gid, content=content, **fields)


def sent(c: PlazaClient, who: Who, gid: str, content: str, **fields: Any) -> dict[str, Any]:
    with c.ctx.setup(f"{label(who)} sends a group message", by="PLAZA-GROUP-SEND"):
        return c.data_of(send(c, who, gid, content, **fields), f"group_send by {label(who)}")


def group_pair(c: PlazaClient, **fields: Any) -> str:
    """A group of alice's with bob as a member."""
    gid = create(c, ALICE, **fields)
    add_member(c, ALICE, BOB, gid)
    return gid


# ----------------------------------------------------------------------------------------------
# authorization
# ----------------------------------------------------------------------------------------------
def check_auth_preflight(ctx: CheckContext) -> None:
    """group_authorization answers the caller's own permission with permission_attention,
    before a grant and after it."""
    c = PlazaClient(ctx)
    for moment in ("before a grant", "after a grant"):
        with ctx.subcheck(moment):
            if moment == "after a grant":
                authorize(c, ALICE)
            data = ok(c, ALICE, "group_authorization")
            ctx.expect(any(isinstance(v, dict) and "permission_attention" in v for v in walk(data)),
                       f"group_authorization {moment} carries no permission_attention: {json_excerpt(data, 300)}")


def state_of(data: dict[str, Any]) -> Any:
    return dig(data, "authorization", "state")


def check_auth_shape(ctx: CheckContext) -> None:
    """The profile's preflight: authorization.state none / active / revoked, live in permission_attention."""
    c = PlazaClient(ctx)
    revoke(c, ALICE)
    before = ok(c, ALICE, "group_authorization")
    ctx.expect(state_of(before) in ("none", "revoked") and dig(before, "permission_attention", "live") is False,
               f"before a grant the preflight says {json_excerpt(before, 300)}; the profile says state none or revoked, live false")
    authorize(c, ALICE)
    after = ok(c, ALICE, "group_authorization")
    ctx.expect(state_of(after) == "active" and dig(after, "permission_attention", "live") is True,
               f"after a grant the preflight says {json_excerpt(after, 300)}; the profile says state active, live true")


def request_id(data: dict[str, Any]) -> Any:
    return next((v["request_id"] for v in walk(data) if isinstance(v, dict) and isinstance(v.get("request_id"), str)), None)


def check_auth_request(ctx: CheckContext) -> None:
    """A request grants nothing (the Agent still cannot create), repeats are deduplicated,
    and a request without scopes asks for the schema's default scopes."""
    c = PlazaClient(ctx)
    revoke(c, ALICE)
    first = ok(c, ALICE, "group_authorization_request", scopes=["allow_create"])
    again = ok(c, ALICE, "group_authorization_request", scopes=["allow_create"])
    with ctx.subcheck("no authority"):
        refused(c, call(c, ALICE, "group_create", name=text_of("requested")), "group_create after only a request for allow_create")
    with ctx.subcheck("deduplicated"):
        a, b = request_id(first), request_id(again)
        ctx.expect(a == b, f"the same request twice named two requests, {a!r} and {b!r}: owner requests are deduplicated")
    with ctx.subcheck("default scopes"):
        data = ok(c, BOB, "group_authorization_request")
        asked = dig(data, "request", "scopes")
        wanted = prop(ctx, "group_authorization_request", "scopes")["default"]
        ctx.expect(asked is None or sorted(asked) == sorted(wanted), f"a request without scopes asked for {asked}, not {wanted}")


def check_authorize(ctx: CheckContext) -> None:
    """No grant: no group; the default grant allows join and send, not create or invite."""
    c = PlazaClient(ctx)
    revoke(c, ALICE)
    with ctx.subcheck("create without a grant"):
        refused(c, call(c, ALICE, "group_create", name=text_of("ungranted")), "group_create without a grant")
    authorize(c, ALICE)
    with ctx.subcheck("create under the default grant"):
        refused(c, call(c, ALICE, "group_create", name=text_of("default")), "group_create under a grant without allow_create")
    gid = create(c, BOB, rules={"member_invites": True})
    with c.ctx.setup("bob invites alice", by="PLAZA-GROUP-MEMBERSHIP"):
        ok(c, BOB, "group_invite", group_id=gid, visitor_id=c.agent_id(ALICE))
    with ctx.subcheck("join under the default grant"):
        expect_result(ctx, call(c, ALICE, "group_respond", group_id=gid, decision="accept"), "group_respond accept under the default grant")
    with ctx.subcheck("send under the default grant"):
        expect_result(ctx, send(c, ALICE, gid, text_of("default send")), "group_send under the default grant")
    with ctx.subcheck("invite under the default grant"):
        refused(c, call(c, ALICE, "group_invite", group_id=gid, visitor_id=c.agent_id(CAROL)),
                "group_invite under a grant without allow_invite (the group allows member invites)")


def check_auth_expiry(ctx: CheckContext) -> None:
    """A grant of expires_hours lapses after that many hours."""
    c = PlazaClient(ctx)
    hours = prop(ctx, "group_authorize", "expires_hours")["minimum"]
    gid = create(c, ALICE, grant={"expires_hours": hours})
    ctx.control("advance_clock", seconds=hours * 3600 + 1)
    refused(c, send(c, ALICE, gid, text_of("expired")), f"group_send {hours} h after a grant of expires_hours {hours}")


def check_auth_revoke(ctx: CheckContext) -> None:
    """After revocation the next send and create are refused at once."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE)
    sent(c, ALICE, gid, text_of("before"))
    expect_result(ctx, call(c, ALICE, "group_authorization_revoke"), "group_authorization_revoke")
    with ctx.subcheck("send"):
        refused(c, send(c, ALICE, gid, text_of("after")), "group_send right after the revocation")
    with ctx.subcheck("create"):
        refused(c, call(c, ALICE, "group_create", name=text_of("revoked")), "group_create right after the revocation")


# ----------------------------------------------------------------------------------------------
# groups
# ----------------------------------------------------------------------------------------------
def check_list(ctx: CheckContext) -> None:
    """created lists the caller's own group, joined the group it joined, all (the default) both."""
    c = PlazaClient(ctx)
    mine = create(c, ALICE)
    theirs = create(c, BOB)
    add_member(c, BOB, ALICE, theirs)
    views = {f: ok(c, ALICE, "group_list", filter=f) for f in prop(ctx, "group_list", "filter")["enum"]}
    views["(no filter)"] = ok(c, ALICE, "group_list")
    wanted = {"created": ([mine], [theirs]), "joined": ([theirs], []), "all": ([mine, theirs], []),
              "(no filter)": ([mine, theirs], [])}
    for name, (present, absent) in wanted.items():
        with ctx.subcheck(name):
            listing = views.get(name, {})
            ctx.expect(all(mentions(listing, g) for g in present) and not any(mentions(listing, g) for g in absent),
                       f"group_list {name} should list {present} and not {absent}: {json_excerpt(listing, 400)}")


def check_create(ctx: CheckContext) -> None:
    """A group made with a name only is private (outsiders do not find it), and members may not invite."""
    c = PlazaClient(ctx)
    name = text_of("defaults")
    gid = create(c, ALICE, name=name)
    with ctx.subcheck("private"):
        found = ok(c, CAROL, "group_discover", q=name)
        ctx.expect(not mentions(found, gid), f"a group made without visibility is discoverable by outsiders: {json_excerpt(found, 300)}")
    with ctx.subcheck("no member invites"):
        add_member(c, ALICE, BOB, gid)
        refused(c, call(c, BOB, "group_invite", group_id=gid, visitor_id=c.agent_id(CAROL)),
                "a member's (not a manager's) group_invite under the default rules")
    with ctx.subcheck("stated defaults"):
        group = ok(c, ALICE, "group_detail", group_id=gid)
        rules = prop(ctx, "group_create", "rules")["properties"]
        stated = {"visibility": prop(ctx, "group_create", "visibility")["default"],
                  "announcement": prop(ctx, "group_create", "announcement")["default"],
                  **{k: v["default"] for k, v in rules.items() if "default" in v}}
        found_values = {k: v for node in walk(group) if isinstance(node, dict) for k, v in node.items() if k in stated}
        wrong = {k: v for k, v in found_values.items() if v != stated[k]}
        ctx.expect(not wrong, f"group_detail shows {wrong}; a group created with a name only has {stated}")


def check_discover(ctx: CheckContext) -> None:
    """Discover finds public groups by q, never private ones, at most limit (default 20)."""
    c = PlazaClient(ctx)
    token = fresh_id()[:8]
    public = [create(c, ALICE, name=f"public {token} {i}", visibility="public") for i in range(3)]
    private = create(c, ALICE, name=f"private {token}", visibility="private")
    with ctx.subcheck("q"):
        found = ok(c, CAROL, "group_discover", q=token)
        ctx.expect(all(mentions(found, g) for g in public), f"group_discover q={token!r} misses a public group: {json_excerpt(found, 400)}")
        ctx.expect(not mentions(found, private), f"group_discover lists a private group: {json_excerpt(found, 400)}")
    with ctx.subcheck("limit"):
        found = ok(c, CAROL, "group_discover", q=token, limit=2)
        ctx.expect(sum(mentions(found, g) for g in public) <= 2, f"group_discover limit 2 listed more: {json_excerpt(found, 400)}")
    with ctx.subcheck("default limit"):
        found = ok(c, CAROL, "group_discover")
        rows = [v for v in walk(found) if isinstance(v, dict) and ("group_id" in v or "name" in v)]
        default = prop(ctx, "group_discover", "limit")["default"]
        ctx.expect(len(rows) <= default, f"group_discover without limit listed {len(rows)} groups, more than {default}")


def check_private(ctx: CheckContext, strict: bool = False) -> None:
    """An outsider neither finds, sees, reads, acknowledges nor writes a private group."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE, name=text_of("private"))
    sent(c, ALICE, gid, text_of("members only"))
    authorize(c, CAROL, allow_join=True, allow_send=True)
    calls: dict[str, Callable[[], Reply]] = {
        "group_detail": lambda: call(c, CAROL, "group_detail", group_id=gid),
        "group_messages": lambda: call(c, CAROL, "group_messages", group_id=gid),
        "group_ack": lambda: call(c, CAROL, "group_ack", group_id=gid, seq=0),
        "group_send": lambda: send(c, CAROL, gid, text_of("intruder")),
    }
    for name, make in calls.items():
        with ctx.subcheck(name):
            refused_as(ctx, make(), "NOT_FOUND", f"carol's {name} of alice's private group", strict)
    if not strict:
        with ctx.subcheck("group_discover"):
            found = ok(c, CAROL, "group_discover")
            ctx.expect(not mentions(found, gid), f"carol discovers alice's private group: {json_excerpt(found, 300)}")


# ----------------------------------------------------------------------------------------------
# membership
# ----------------------------------------------------------------------------------------------
def check_membership(ctx: CheckContext) -> None:
    """Applications wait for group_admit; invitations for group_respond; member actions govern who writes."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE, visibility="public")
    authorize(c, CAROL, allow_join=True, allow_send=True)
    authorize(c, BOB, allow_join=True, allow_send=True)
    with ctx.subcheck("join waits for admit"):
        expect_result(ctx, call(c, CAROL, "group_join_request", group_id=gid), "carol's group_join_request")
        refused(c, send(c, CAROL, gid, text_of("applicant")), "an applicant's group_send before group_admit")
        expect_result(ctx, call(c, ALICE, "group_admit", group_id=gid, visitor_id=c.agent_id(CAROL), decision="approve"),
                      "alice's group_admit approve")
        expect_result(ctx, send(c, CAROL, gid, text_of("admitted")), "an admitted member's group_send")
    with ctx.subcheck("admit decline"):
        expect_result(ctx, call(c, BOB, "group_join_request", group_id=gid), "bob's group_join_request")
        expect_result(ctx, call(c, ALICE, "group_admit", group_id=gid, visitor_id=c.agent_id(BOB), decision="decline"),
                      "alice's group_admit decline")
        refused(c, send(c, BOB, gid, text_of("declined")), "a declined applicant's group_send")
    other = create(c, ALICE)
    with ctx.subcheck("invitation declined, then accepted"):
        expect_result(ctx, call(c, ALICE, "group_invite", group_id=other, visitor_id=c.agent_id(BOB)), "alice's group_invite")
        expect_result(ctx, call(c, BOB, "group_respond", group_id=other, decision="decline"), "bob's group_respond decline")
        refused(c, send(c, BOB, other, text_of("declined invite")), "group_send after declining the invitation")
        expect_result(ctx, call(c, ALICE, "group_invite", group_id=other, visitor_id=c.agent_id(BOB)), "alice's second group_invite")
        expect_result(ctx, call(c, BOB, "group_respond", group_id=other, decision="accept"), "bob's group_respond accept")
        expect_result(ctx, send(c, BOB, other, text_of("accepted")), "group_send after accepting the invitation")
    member_actions(ctx, c, gid)
    with ctx.subcheck("leave"):
        expect_result(ctx, call(c, BOB, "group_member", group_id=other, action="leave"), "bob's group_member leave")
        refused(c, send(c, BOB, other, text_of("left")), "group_send after leaving")


def member_actions(ctx: CheckContext, c: PlazaClient, gid: str) -> None:
    """mute / unmute, pause / resume, promote / demote, remove on carol, a member of gid."""
    carol = c.agent_id(CAROL)

    def act(action: str) -> None:
        expect_result(ctx, call(c, ALICE, "group_member", group_id=gid, visitor_id=carol, action=action), f"alice's group_member {action}")

    for stop, go in (("mute", "unmute"), ("pause", "resume")):
        with ctx.subcheck(f"{stop} and {go}"):
            act(stop)
            refused(c, send(c, CAROL, gid, text_of(stop)), f"a member's group_send after {stop}")
            act(go)
            expect_result(ctx, send(c, CAROL, gid, text_of(go)), f"a member's group_send after {go}")
    with ctx.subcheck("promote and demote"):
        act("promote")
        expect_result(ctx, call(c, CAROL, "group_settings", group_id=gid, announcement=text_of("manager")), "a promoted member's group_settings")
        act("demote")
        refused(c, call(c, CAROL, "group_settings", group_id=gid, announcement=text_of("member")), "a demoted member's group_settings")
    with ctx.subcheck("remove"):
        act("remove")
        refused(c, send(c, CAROL, gid, text_of("removed")), "a removed member's group_send")
        refused(c, call(c, CAROL, "group_messages", group_id=gid), "a removed member's group_messages")


def check_history_join(ctx: CheckContext) -> None:
    """A new member reads what follows its joining, never what came before (after_seq 0 included)."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE)
    before, after = text_of("before joining"), text_of("after joining")
    sent(c, ALICE, gid, before)
    add_member(c, ALICE, BOB, gid)
    sent(c, ALICE, gid, after)
    for fields in ({}, {"after_seq": 0}):
        with ctx.subcheck(f"group_messages {fields or 'default'}"):
            seen = contents(c, BOB, gid, "bob's group_messages", **fields)
            ctx.expect(before not in seen, f"bob reads {before!r}, sent before he joined: {seen}")
            ctx.expect(after in seen, f"bob does not read {after!r}, sent after he joined: {seen}", kind="malformed_answer")


def check_max_members(ctx: CheckContext) -> None:
    """With max_members members no one more is admitted."""
    c = PlazaClient(ctx)
    cap = int(chat(ctx, "max_members"))
    gid = create(c, ALICE)
    agents = (ctx.control("seed_agents", count=cap, invite=ALICE).json() or {}).get("agents") or []
    ctx.expect(len(agents) == cap, f"control seed_agents gave {len(agents)} agents, not {cap}", kind="malformed_answer")
    for agent in agents[: cap - 1]:  # alice and cap - 1 others: the group is full
        add_member(c, ALICE, RawToken(agent["token"]), gid, member_id=agent["id"])
    last = RawToken(agents[-1]["token"])
    authorize(c, last, allow_join=True)
    with c.ctx.setup("alice invites one more agent", by="PLAZA-GROUP-MEMBERSHIP"):
        invited = call(c, ALICE, "group_invite", group_id=gid, visitor_id=agents[-1]["id"])
    if invited.ok:
        refused(c, call(c, last, "group_respond", group_id=gid, decision="accept"), f"an acceptance that makes {cap + 1} members")


# ----------------------------------------------------------------------------------------------
# settings, limits, close, routing
# ----------------------------------------------------------------------------------------------
def check_settings(ctx: CheckContext) -> None:
    """A manager's rules apply (max_messages_per_hour at its minimum stops a second message)."""
    c = PlazaClient(ctx)
    top = prop(ctx, "group_authorize", "max_messages_per_hour")["maximum"]
    gid = create(c, ALICE, grant={"max_messages_per_hour": top})
    add_member(c, ALICE, BOB, gid)
    low = prop(ctx, "group_settings", "rules", "max_messages_per_hour")["minimum"]
    ok(c, ALICE, "group_settings", group_id=gid, rules={"max_messages_per_hour": low})
    with ctx.subcheck("max_messages_per_hour"):
        for i in range(low):
            expect_result(ctx, send(c, ALICE, gid, text_of(f"within {i}")), f"group_send {i + 1} of {low} per hour")
        refused(c, send(c, ALICE, gid, text_of("over")), f"group_send {low + 1} within the hour under max_messages_per_hour {low}")


def check_roles(ctx: CheckContext) -> None:
    """The profile's roles: a plain member changes no group settings (the document names
    managers but not what a member may not do)."""
    c = PlazaClient(ctx)
    top = prop(ctx, "group_authorize", "max_messages_per_hour")["maximum"]
    gid = create(c, ALICE, grant={"max_messages_per_hour": top})
    add_member(c, ALICE, BOB, gid)
    refused(c, call(c, BOB, "group_settings", group_id=gid, rules={"max_messages_per_hour": top}), "a member's group_settings")


def check_turn_cap(ctx: CheckContext) -> None:
    """Two agents answering each other are stopped by the loop guard (max_autonomous_turns at its minimum)."""
    c = PlazaClient(ctx)
    turns = prop(ctx, "group_create", "rules", "max_autonomous_turns")
    rate = prop(ctx, "group_authorize", "max_messages_per_hour")["maximum"]
    gid = create(c, ALICE, grant={"max_messages_per_hour": rate},
                 rules={"max_autonomous_turns": turns["minimum"], "max_messages_per_hour": rate})
    add_member(c, ALICE, BOB, gid, grant={"max_messages_per_hour": rate})
    bound = 2 * (int(turns["maximum"]) + 1) + 1
    for i in range(bound):
        who = (ALICE, BOB)[i % 2]
        if not send(c, who, gid, text_of(f"turn {i}")).ok:
            return
    ctx.fail(f"{bound} alternating messages of two agents all passed under max_autonomous_turns {turns['minimum']}: no loop guard")


def check_close(ctx: CheckContext) -> None:
    """A closed group takes no message and no member."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    authorize(c, CAROL, allow_join=True)
    with c.ctx.setup("alice invites carol", by="PLAZA-GROUP-MEMBERSHIP"):
        ok(c, ALICE, "group_invite", group_id=gid, visitor_id=c.agent_id(CAROL))
    expect_result(ctx, call(c, ALICE, "group_close", group_id=gid), "alice's group_close")
    with ctx.subcheck("message"):
        refused(c, send(c, BOB, gid, text_of("closed")), "group_send to a closed group")
    with ctx.subcheck("member"):
        refused(c, call(c, CAROL, "group_respond", group_id=gid, decision="accept"), "accepting an invitation to a closed group")


def check_routing(ctx: CheckContext, strict: bool = False) -> None:
    """group_id goes in data only: a group command with contextId, taskId or recipientId is refused and stores nothing."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    shapes = {"contextId": {"context": gid}, "taskId": {"taskId": gid}, "recipientId": {"to": c.agent_id(BOB)}}
    for name, extra in shapes.items():
        with ctx.subcheck(name):
            content = text_of(f"routed by {name}")
            data = {"operation": "group_send", "group_id": gid, "content": content, "request_key": fresh_id()}
            reply = c.send(c.params({"data": data}, **extra), ALICE)
            refused_as(ctx, reply, "A2A_INVALID_PARAMETERS", f"group_send with message.{name}", strict)
            if not strict:
                ctx.expect(content not in contents(c, BOB, gid, "bob's group_messages"), f"the refused group_send with {name} was stored")


# ----------------------------------------------------------------------------------------------
# messages, retries
# ----------------------------------------------------------------------------------------------
def check_messages(ctx: CheckContext) -> None:
    """Pages are seq > after_seq (an integer), at most limit; a member acknowledges a seq, an outsider none."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    texts = [text_of(f"page {i}") for i in range(3)]
    for text in texts:
        sent(c, ALICE, gid, text)
    page = messages(c, BOB, gid, "bob's group_messages")
    ours = [m for m in page if content_of(m) in texts]
    ctx.expect([content_of(m) for m in ours] == texts, f"bob's page holds {[content_of(m) for m in page]}, not {texts} in order")
    first = seq_number(ctx, ours[0], "group_messages")
    with ctx.subcheck("after_seq"):
        later = contents(c, BOB, gid, "group_messages after_seq", after_seq=first)
        ctx.expect([t for t in later if t in texts] == texts[1:], f"after_seq {first} gave {later}, expected {texts[1:]}")
    with ctx.subcheck("limit"):
        one = messages(c, BOB, gid, "group_messages limit 1", after_seq=first, limit=1)
        ctx.expect([content_of(m) for m in one] == texts[1:2], f"limit 1 after seq {first} gave {[content_of(m) for m in one]}")
    last = seq_number(ctx, ours[-1], "group_messages")
    with ctx.subcheck("group_ack"):
        expect_result(ctx, call(c, BOB, "group_ack", group_id=gid, seq=last), f"bob's group_ack of seq {last}")
        refused(c, call(c, CAROL, "group_ack", group_id=gid, seq=last), "an outsider's group_ack")


def check_send(ctx: CheckContext) -> None:
    """A member's message of the maximum length, with a mention, is read whole by another member."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    size = int(prop(ctx, "group_send", "content")["maxLength"])
    stem = text_of("long")
    content = (stem + " " + "x" * size)[:size]
    expect_result(ctx, send(c, ALICE, gid, content, mentions=[c.agent_id(BOB)]), f"a group_send of {size} characters")
    seen = contents(c, BOB, gid, "bob's group_messages")
    ctx.expect(content in seen, f"bob does not read the {size}-character message whole: {[str(s)[:40] for s in seen]}")


def check_retry(ctx: CheckContext) -> None:
    """A retry with the same request_key stores one message and is refused once the sender
    is removed or its grant revoked."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    key, content = fresh_id(), text_of("retried")
    with ctx.subcheck("one message"):
        expect_result(ctx, send(c, BOB, gid, content, request_key=key), "bob's group_send")
        expect_result(ctx, send(c, BOB, gid, content, request_key=key), "bob's retry with the same request_key")
        seen = contents(c, ALICE, gid, "alice's group_messages")
        ctx.expect(seen.count(content) == 1, f"a send and its retry stored {seen.count(content)} messages {content!r}")
    with ctx.subcheck("revoked"):
        other = fresh_id()
        expect_result(ctx, send(c, BOB, gid, text_of("before revoke"), request_key=other), "bob's group_send")
        revoke(c, BOB)
        refused(c, send(c, BOB, gid, text_of("before revoke"), request_key=other), "a retry after the grant was revoked")
        authorize(c, BOB, allow_join=True, allow_send=True)
    with ctx.subcheck("removed"):
        expect_result(ctx, call(c, ALICE, "group_member", group_id=gid, visitor_id=c.agent_id(BOB), action="remove"), "bob removed")
        refused(c, send(c, BOB, gid, content, request_key=key), "a retry after the sender was removed")


# ----------------------------------------------------------------------------------------------
# queue, flush, schedule
# ----------------------------------------------------------------------------------------------
def group_work(ctx: CheckContext, data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [i for i in batch_items(ctx, data) if kind in i.values()]


def check_queue_not_delivery(ctx: CheckContext) -> None:
    """A queued message reaches no member until group_flush sends it."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    key = receiver(c, BOB)
    drain(c, BOB, key)
    content = text_of("queued")
    delay = prop(ctx, "group_queue", "after_seconds")["minimum"]
    expect_result(ctx, call(c, ALICE, "group_queue", group_id=gid, content=content, after_seconds=delay), "alice's group_queue")
    with ctx.subcheck("not delivered"):
        ctx.expect(content not in contents(c, BOB, gid, "bob's group_messages"), f"a queued message {content!r} was delivered")
        work = group_work(ctx, pull(c, BOB, key, "bob's receive_pull", limit=40), "group_message")
        ctx.expect(not work, f"a queued message reached bob's durable receive: {json_excerpt(work, 300)}")
    with ctx.subcheck("flushed"):
        expect_result(ctx, call(c, ALICE, "group_flush", group_id=gid), "alice's group_flush")
        ctx.expect(content in contents(c, BOB, gid, "bob's group_messages"), f"after group_flush bob does not read {content!r}")


def check_queue_auth(ctx: CheckContext) -> None:
    """Queueing and flushing need a live grant: after revocation both are refused and nothing is sent."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    content = text_of("queued before revoke")
    delay = prop(ctx, "group_queue", "after_seconds")["minimum"]
    with ctx.setup("alice queues a message", by="PLAZA-GROUP-QUEUE-NOT-DELIVERY"):
        ok(c, ALICE, "group_queue", group_id=gid, content=content, after_seconds=delay)
    revoke(c, ALICE)
    with ctx.subcheck("group_queue"):
        refused(c, call(c, ALICE, "group_queue", group_id=gid, content=text_of("revoked"), after_seconds=delay),
                "group_queue without a live grant")
    with ctx.subcheck("group_flush"):
        refused(c, call(c, ALICE, "group_flush", group_id=gid), "group_flush without a live grant")
        ctx.expect(content not in contents(c, BOB, gid, "bob's group_messages"), "a flush refused for the revoked grant sent the queue")


def check_schedule(ctx: CheckContext) -> None:
    """A schedule of up to max_scheduled_runs is registered, one more run is refused, and
    (with control) the registration sends nothing by itself."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    runs = int(chat(ctx, "max_scheduled_runs"))
    delay = prop(ctx, "group_schedule", "after_seconds")["minimum"]
    before = contents(c, BOB, gid, "bob's group_messages")
    with ctx.subcheck(f"{runs} runs"):
        expect_result(ctx, call(c, ALICE, "group_schedule", group_id=gid, enabled=True, after_seconds=delay, max_runs=runs),
                      f"group_schedule with max_runs {runs}")
    with ctx.subcheck(f"{runs + 1} runs"):
        refused(c, call(c, ALICE, "group_schedule", group_id=gid, enabled=True, max_runs=runs + 1), f"group_schedule with max_runs {runs + 1}")
    with ctx.subcheck("registration only"):
        if ctx.run.control_path:
            ctx.control("advance_clock", seconds=delay * (runs + 1))
        after = contents(c, BOB, gid, "bob's group_messages")
        ctx.expect(after == before, f"a schedule with nothing queued made messages: {after[len(before):]}")


# ----------------------------------------------------------------------------------------------
# durable receive
# ----------------------------------------------------------------------------------------------
def check_recv_work_group(ctx: CheckContext) -> None:
    """Group invitations, applications, messages and membership changes arrive as receive work."""
    c = PlazaClient(ctx)
    keys = {who: receiver(c, who) for who in (ALICE, BOB, CAROL)}
    gid = create(c, ALICE, visibility="public")
    authorize(c, BOB, allow_join=True, allow_send=True)
    authorize(c, CAROL, allow_join=True, allow_send=True)
    kinds = [k for k in ctx.profile.spec["durableReceive"]["supported_work"] if k.startswith("group_")]
    steps: dict[str, tuple[str, Callable[[], Any]]] = {
        "group_invitation": (BOB, lambda: ok(c, ALICE, "group_invite", group_id=gid, visitor_id=c.agent_id(BOB))),
        "group_application": (ALICE, lambda: ok(c, CAROL, "group_join_request", group_id=gid)),
        "group_membership_change": (CAROL, lambda: ok(c, ALICE, "group_admit", group_id=gid, visitor_id=c.agent_id(CAROL),
                                                      decision="approve")),
        "group_message": (CAROL, lambda: sent(c, ALICE, gid, text_of("work"))),
    }
    if not set(kinds) <= set(steps):
        raise Untested(f"supported_work names group kinds {kinds}; this check makes only {list(steps)}")
    for kind in [k for k in steps if k in kinds]:  # in an order that makes each
        with ctx.subcheck(kind):
            who, step = steps[kind]
            with ctx.setup(f"what makes {kind}", by="PLAZA-GROUP-MEMBERSHIP"):
                step()
            got = group_work(ctx, pull(c, who, keys[who], f"{who}'s receive_pull", limit=40), kind)
            ctx.expect(got, f"{who}'s receive_pull holds no {kind} item after it happened")
            drain(c, who, keys[who])


# ----------------------------------------------------------------------------------------------
# the example world (friendship.py fills the groupMessages example with it)
# ----------------------------------------------------------------------------------------------
def example_group(c: PlazaClient) -> str:
    """A group of alice's for the groupMessages example."""
    return create(c, ALICE)


# ----------------------------------------------------------------------------------------------
# rows
# ----------------------------------------------------------------------------------------------
def rows(t: Table) -> list[Requirement]:
    at, req = t.at, t.req

    def cmd(name: str, tail: str = "") -> Any:
        return at(f"/schemas/command/anyOf/{branch_index(t, name)}{tail}")

    return [
        req("PLAZA-GROUP-AUTH-PREFLIGHT", "MUST", "group_authorization is the preflight: it answers the caller's permission with "
            "permission_attention", at(f"{AUTHZ}/group_preflight"), check_auth_preflight, ("preflight_without_attention",)),
        req("PLAZA-GROUP-AUTH-SHAPE", "SHOULD", "The preflight names authorization.state (none, active, revoked) and permission_attention.live",
            t.chosen("docs/agent-plaza.md#groups"), check_auth_shape, ("preflight_state_stale",)),
        req("PLAZA-GROUP-AUTH-REQUEST", "MUST", "group_authorization_request asks the owner: it grants nothing, repeats are "
            "deduplicated, the default scopes are allow_join and allow_send", at(f"{AUTHZ}/request_is_authority"), check_auth_request,
            ("request_grants_authority", "requests_not_deduplicated")),
        req("PLAZA-GROUP-AUTHORIZE", "MUST", "Without the owner's grant no group is created; the default grant allows join and send, "
            "not create or invite", cmd("group_authorize", "/properties"), check_authorize,
            ("create_without_authorization", "authorize_default_invite")),
        req("PLAZA-GROUP-AUTH-EXPIRY", "MUST", "A group authorization lapses after expires_hours", cmd("group_authorize", "/properties/expires_hours"),
            check_auth_expiry, ("grant_never_expires",)),
        req("PLAZA-GROUP-AUTH-REVOKE", "MUST", "group_authorization_revoke takes effect at once", cmd("group_authorization_revoke"),
            check_auth_revoke, ("revoke_ignored",)),
        req("PLAZA-GROUP-LIST", "MUST", "group_list filters created, joined and all (the default)", cmd("group_list", "/properties/filter"),
            check_list, ("list_filter_ignored",)),
        req("PLAZA-GROUP-CREATE", "MUST", "A group created with a name only is private and takes no member invites",
            cmd("group_create", "/properties"), check_create, ("create_default_public", "create_default_member_invites")),
        req("PLAZA-GROUP-DISCOVER", "MUST", "group_discover finds public groups by q, never private ones, at most limit",
            cmd("group_discover", "/properties"), check_discover, ("discover_ignores_limit",)),
        *t.pair("PLAZA-GROUP-PRIVATE", "Outsiders neither find, see, read nor write a private group", at(f"{CHAT}/private"), check_private,
                ("private_group_readable",), "NOT_FOUND", ("private_group_wrong_code",)),
        req("PLAZA-GROUP-MEMBERSHIP", "MUST", "Applications wait for group_admit, invitations for group_respond; member actions govern who writes",
            cmd("group_join_request"), check_membership, ("join_admits_at_once", "mute_ignored", "leave_ignored")),
        req("PLAZA-GROUP-HISTORY-JOIN", "MUST", "A member sees no history from before it joined", at(f"{CHAT}/history_before_join_visible"),
            check_history_join, ("history_before_join_visible",)),
        req("PLAZA-GROUP-MAX-MEMBERS", "MUST", "A group has at most max_members members", at(f"{CHAT}/max_members"), check_max_members,
            ("members_unbounded",)),
        req("PLAZA-GROUP-SETTINGS", "MUST", "A manager's group_settings rules apply (max_messages_per_hour)",
            cmd("group_settings", "/properties/rules"), check_settings, ("rate_limit_ignored",)),
        req("PLAZA-GROUP-ROLES", "SHOULD", "A plain member's group_settings are refused (the profile's roles)",
            t.chosen("docs/agent-plaza.md#groups"), check_roles, ("members_act_as_managers",)),
        req("PLAZA-GROUP-TURN-CAP", "MUST", "The automatic loop guard stops agents answering each other past max_autonomous_turns",
            at(f"{CHAT}/automatic_loop_guard"), check_turn_cap, ("loop_guard_off",)),
        req("PLAZA-GROUP-CLOSE", "MUST", "A closed group takes no further messages or members", cmd("group_close"), check_close,
            ("close_ignored",)),
        *t.pair("PLAZA-GROUP-ROUTING", "group_id lives in data only: a group command with contextId, taskId or recipientId is refused",
                at(f"{CHAT}/scope"), check_routing, ("group_routing_unchecked",), "A2A_INVALID_PARAMETERS", ("group_routing_wrong_code",)),
        req("PLAZA-GROUP-MESSAGES", "MUST", "group_messages pages by integer after_seq and limit; group_ack takes a member's seq only",
            cmd("group_messages", "/properties"), check_messages, ("group_after_seq_inclusive", "group_limit_ignored")),
        req("PLAZA-GROUP-SEND", "MUST", "A group message of the maximum length is stored and read whole", cmd("group_send", "/properties/content"),
            check_send, ("group_content_truncated",)),
        req("PLAZA-GROUP-RETRY-RECHECK", "MUST", "A retry with the same request_key stores one message and is rechecked against the "
            "current grant and membership", at(f"{CHAT}/continuation"), check_retry, ("group_retry_stores_again", "group_retry_skips_recheck")),
        req("PLAZA-GROUP-QUEUE-NOT-DELIVERY", "MUST", "A queued group message is not delivered until group_flush",
            cmd("group_queue", "/properties/after_seconds"), check_queue_not_delivery, ("queue_delivers_at_once",)),
        req("PLAZA-GROUP-QUEUE-AUTH", "MUST", "Queueing and flushing need the live group authorization",
            at(f"{CHAT}/queue_requires_live_authorization"), check_queue_auth, ("queue_without_authorization", "flush_skips_authorization")),
        req("PLAZA-GROUP-SCHEDULE", "MUST", "A group schedule is a bounded registration: at most max_scheduled_runs, nothing sent by itself",
            at(f"{CHAT}/max_scheduled_runs"), check_schedule, ("schedule_runs_unbounded", "schedule_sends_message")),
        req("PLAZA-RECV-WORK-GROUP", "MUST", "Group invitations, applications, messages and membership changes arrive as receive work",
            at("/durableReceive/supported_work"), check_recv_work_group, ("group_messages_not_logged",)),
    ]


__all__ = ["example_group", "rows"]
