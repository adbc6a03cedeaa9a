"""Agent Plaza's groups (groupChat, issue 14), part two: groups (private by default,
discover, list filters), membership (applications and admission, invitations and responses,
member actions, at most max_members, no history from before joining), the manager's rules
and the loop guard, closing, and routing (group_id only inside data), each requirement
declared on its check with the faults that prove it can fail. The calls, readers and set-up
are groups.py's; what the reference serves reference/groups.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.checks.expect import expect_result
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, fault, requirement
from conformance.kit.faults import answer, arguments, noop, recodes, replaces, returns
from conformance.protocols.plaza.answers import INVALID, text_of
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.groups_client import (
    CHAT,
    Data,
    add_member,
    asked_for,
    authorize,
    call,
    chat,
    contents,
    create,
    group_pair,
    ok,
    remember,
    send,
    sent,
)
from conformance.protocols.plaza.parts import GROUPS, command_at, names, prop, refused, served
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.reference.groups import MANAGER_ROLE
from conformance.protocols.plaza.site import NOT_FOUND, NOT_PERMITTED, Issue, Principal, SiteError
from conformance.transport.binding import RawToken, Reply
from conformance.transport.http import json_excerpt


# ----------------------------------------------------------------------------------------------
# groups
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-GROUP-LIST", level="MUST", optional=GROUPS,
             title="group_list filters created, joined and all (the default)",
             source=command_at("group_list", "/properties/filter"),
             faults=[arguments("list_filter_ignored", "cmd_group_list",
                               "group_list lists all the caller's groups whatever the filter.",
                               set={"filter": "all"})])
@served(GROUPS)
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
            listing: Any = views.get(name, {})
            ctx.expect(all(names(listing, g) for g in present) and not any(names(listing, g) for g in absent),
                       f"group_list {name} should list {present} and not {absent}: "
                       f"{json_excerpt(listing, 400)}")


@requirement(id="PLAZA-GROUP-CREATE", level="MUST", optional=GROUPS,
             title="A group created with a name only is private and takes no member invites",
             source=command_at("group_create", "/properties"),
             faults=[returns("create_default_public", "group_default", "public",
                             "A group created without visibility is public.",
                             when=asked_for("group_create", "visibility")),
                     answer("create_default_member_invites", "rule_defaults",
                            "A group created without rules lets every member invite.",
                            set={"member_invites": True})])
@served(GROUPS)
def check_create(ctx: CheckContext) -> None:
    """A group made with a name only is private (outsiders do not find it), and members may not invite."""
    c = PlazaClient(ctx)
    name = text_of("defaults")
    gid = create(c, ALICE, name=name)
    with ctx.subcheck("private"):
        found = ok(c, CAROL, "group_discover", q=name)
        ctx.expect(not names(found, gid), "a group made without visibility is discoverable by outsiders: "
                   f"{json_excerpt(found, 300)}")
    with ctx.subcheck("no member invites"):
        add_member(c, ALICE, BOB, gid)
        refused(c, call(c, BOB, "group_invite", group_id=gid, visitor_id=c.agent_id(CAROL)),
                "a member's (not a manager's) group_invite under the default rules")


@requirement(id="PLAZA-GROUP-CREATE-DEFAULTS", level="SHOULD", optional=GROUPS,
             title="group_detail shows a new group's visibility, announcement and rules "
                   "(the profile's group view) with the schema's defaults",
             source=chosen("docs/agent-plaza.md#groups"), faults=["create_default_public"])
@served(GROUPS)
def check_create_defaults(ctx: CheckContext) -> None:
    """The profile's group view: group_detail shows group.visibility, group.announcement and
    group.rules with the schema's defaults of a group made with a name only."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE)
    group = ok(c, ALICE, "group_detail", group_id=gid).get("group")
    rules = prop(ctx, "group_create", "rules")["properties"]
    stated = {"visibility": prop(ctx, "group_create", "visibility")["default"],
              "announcement": prop(ctx, "group_create", "announcement")["default"]}
    shown = {k: dig(group, k) for k in stated}
    shown.update({k: dig(group, "rules", k) for k, v in rules.items() if "default" in v})
    stated.update({k: v["default"] for k, v in rules.items() if "default" in v})
    ctx.expect(shown == stated,
               f"group_detail's group shows {shown}; a group created with a name only has {stated}")


@check_create_defaults.fault
def create_default_rules_wrong(ref: PlazaReference) -> None:
    """A group created without rules allows the schema's largest max_autonomous_turns, not its default."""
    @replaces(ref.rule_defaults)
    def rule_defaults(original: Any) -> Data:
        rules = ref.branches["group_create"]["properties"]["rules"]["properties"]
        top = rules["max_autonomous_turns"]["maximum"]
        return {**original(), "max_autonomous_turns": top}


@requirement(id="PLAZA-GROUP-DISCOVER", level="MUST", optional=GROUPS,
             title="group_discover finds public groups by q, never private ones, at most limit (default 20)",
             source=command_at("group_discover", "/properties"))
@served(GROUPS)
def check_discover(ctx: CheckContext) -> None:
    """Discover finds public groups by q, never private ones, at most limit (and, with
    control, at most the default limit without one)."""
    c = PlazaClient(ctx)
    token = fresh_id()[:8]
    public = [create(c, ALICE, name=f"public {token} {i}", visibility="public") for i in range(3)]
    private = create(c, ALICE, name=f"private {token}", visibility="private")
    with ctx.subcheck("q"):
        found = ok(c, CAROL, "group_discover", q=token)
        ctx.expect(all(names(found, g) for g in public),
                   f"group_discover q={token!r} misses a public group: {json_excerpt(found, 400)}")
        ctx.expect(not names(found, private),
                   f"group_discover lists a private group: {json_excerpt(found, 400)}")
    with ctx.subcheck("limit"):
        found = ok(c, CAROL, "group_discover", q=token, limit=2)
        ctx.expect(sum(names(found, g) for g in public) <= 2,
                   f"group_discover limit 2 listed more: {json_excerpt(found, 400)}")
    if c.live():
        return  # more public groups than the default limit would crowd a live site's discovery
    with ctx.subcheck("default limit"):
        default = int(prop(ctx, "group_discover", "limit")["default"])
        more = [create(c, ALICE, granted=True, name=f"public {token} more {i}", visibility="public")
                for i in range(default + 1 - len(public))]
        found = ok(c, CAROL, "group_discover", q=token)
        shown = sum(names(found, g) for g in public + more)
        ctx.expect(shown <= default,
                   f"group_discover without limit listed {shown} of {default + 1} matching groups, "
                   f"more than the default limit {default}")


@check_discover.fault
def discover_ignores_limit(ref: PlazaReference) -> None:
    """group_discover lists up to the schema's maximum whatever the limit."""
    @replaces(ref.cmd_group_discover)
    def discover(original: Any, who: Principal, data: Data) -> Data:
        top = ref.branches["group_discover"]["properties"]["limit"]["maximum"]
        out: Data = original(who, {**data, "limit": top})
        return out


@check_discover.fault
def discover_default_limit_ignored(ref: PlazaReference) -> None:
    """group_discover without limit lists every match (the schema's default is 20)."""
    @replaces(ref.cmd_group_discover)
    def discover(original: Any, who: Principal, data: Data) -> Data:
        top = ref.branches["group_discover"]["properties"]["limit"]["maximum"]
        out: Data = original(who, data if "limit" in data else {**data, "limit": top})
        return out


# the fault of PLAZA-GROUP-PRIVATE-CODE (its code twin names it): the refusal stays, its code changes
fault(recodes("private_group_wrong_code", "visible_group",
              lambda err: SiteError(NOT_PERMITTED if err.name == NOT_FOUND else err.name, err.message),
              "A group the caller cannot see is refused NOT_PERMITTED instead of NOT_FOUND.",
              catch=SiteError))


@requirement(id="PLAZA-GROUP-PRIVATE", level="MUST", optional=GROUPS,
             title="Outsiders neither find, see, read nor write a private group",
             source=at(f"{CHAT}/private"),
             faults=[returns("private_group_readable", "can_see", True,
                             "Anyone sees a private group's detail (visibility ignored).")],
             code="NOT_FOUND", code_faults=["private_group_wrong_code"])
@served(GROUPS)
def check_private(ctx: CheckContext, strict: bool = False) -> None:
    """An outsider neither finds, sees, reads, acknowledges nor writes a private group."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE, name=text_of("private"))
    secret = text_of("members only")
    sent(c, ALICE, gid, secret)
    authorize(c, CAROL, allow_join=True, allow_send=True)
    calls: dict[str, Callable[[], Reply]] = {
        "group_detail": lambda: call(c, CAROL, "group_detail", group_id=gid),
        "group_messages": lambda: call(c, CAROL, "group_messages", group_id=gid),
        "group_ack": lambda: call(c, CAROL, "group_ack", group_id=gid, seq=0),
        "group_send": lambda: send(c, CAROL, gid, text_of("intruder")),
    }
    for name, make in calls.items():
        with ctx.subcheck(name):
            reply = make()
            refused(c, reply, f"carol's {name} of alice's private group", error="NOT_FOUND", strict=strict)
            if not strict:
                ctx.expect(secret not in reply.http.text,
                           f"carol's refused {name} shows the members' message: {reply.describe()}")
    if not strict:
        with ctx.subcheck("group_discover"):
            found = ok(c, CAROL, "group_discover")
            ctx.expect(not names(found, gid),
                       f"carol discovers alice's private group: {json_excerpt(found, 300)}")


# ----------------------------------------------------------------------------------------------
# membership
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-GROUP-MEMBERSHIP", level="MUST", optional=GROUPS,
             title="Applications wait for group_admit, invitations for group_respond; member actions "
                   "govern who writes",
             source=command_at("group_join_request"),
             faults=["join_admits_at_once",
                     noop("mute_ignored", "member_mute", "group_member mute changes nothing."),
                     noop("leave_ignored", "member_leave", "group_member leave changes nothing.")])
@served(GROUPS)
def check_membership(ctx: CheckContext) -> None:
    """Applications wait for group_admit; invitations for group_respond; member actions govern who writes."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE, visibility="public")
    authorize(c, CAROL, allow_join=True, allow_send=True)
    authorize(c, BOB, allow_join=True, allow_send=True)
    with ctx.subcheck("join waits for admit"):
        expect_result(ctx, call(c, CAROL, "group_join_request", group_id=gid), "carol's group_join_request")
        refused(c, send(c, CAROL, gid, text_of("applicant")), "an applicant's group_send before group_admit")
        expect_result(ctx,
                      call(c, ALICE, "group_admit", group_id=gid, visitor_id=c.agent_id(CAROL),
                           decision="approve"),
                      "alice's group_admit approve")
        expect_result(ctx, send(c, CAROL, gid, text_of("admitted")), "an admitted member's group_send")
    with ctx.subcheck("admit decline"):
        expect_result(ctx, call(c, BOB, "group_join_request", group_id=gid), "bob's group_join_request")
        expect_result(ctx,
                      call(c, ALICE, "group_admit", group_id=gid, visitor_id=c.agent_id(BOB),
                           decision="decline"),
                      "alice's group_admit decline")
        refused(c, send(c, BOB, gid, text_of("declined")), "a declined applicant's group_send")
    other = create(c, ALICE)
    with ctx.subcheck("invitation declined, then accepted"):
        expect_result(ctx, call(c, ALICE, "group_invite", group_id=other, visitor_id=c.agent_id(BOB)),
                      "alice's group_invite")
        expect_result(ctx, call(c, BOB, "group_respond", group_id=other, decision="decline"),
                      "bob's group_respond decline")
        refused(c, send(c, BOB, other, text_of("declined invite")),
                "group_send after declining the invitation")
        expect_result(ctx, call(c, ALICE, "group_invite", group_id=other, visitor_id=c.agent_id(BOB)),
                      "alice's second group_invite")
        expect_result(ctx, call(c, BOB, "group_respond", group_id=other, decision="accept"),
                      "bob's group_respond accept")
        expect_result(ctx, send(c, BOB, other, text_of("accepted")),
                      "group_send after accepting the invitation")
    member_actions(ctx, c, gid)
    with ctx.subcheck("leave"):
        expect_result(ctx, call(c, BOB, "group_member", group_id=other, action="leave"),
                      "bob's group_member leave")
        refused(c, send(c, BOB, other, text_of("left")), "group_send after leaving")


@check_membership.fault
def join_admits_at_once(ref: PlazaReference) -> None:
    """A join request makes the applicant a member without any group_admit."""
    @replaces(ref.cmd_group_join_request)
    def join(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        group = ref.s["groups"][data["group_id"]]
        ref.add_member(group, who.visitor_id)
        return out


def member_actions(ctx: CheckContext, c: PlazaClient, gid: str) -> None:
    """mute / unmute, pause / resume, promote / demote, remove on carol, a member of gid."""
    carol = c.agent_id(CAROL)

    def act(action: str) -> None:
        expect_result(ctx, call(c, ALICE, "group_member", group_id=gid, visitor_id=carol, action=action),
                      f"alice's group_member {action}")

    for stop, go in (("mute", "unmute"), ("pause", "resume")):
        with ctx.subcheck(f"{stop} and {go}"):
            act(stop)
            refused(c, send(c, CAROL, gid, text_of(stop)), f"a member's group_send after {stop}")
            act(go)
            expect_result(ctx, send(c, CAROL, gid, text_of(go)), f"a member's group_send after {go}")
    with ctx.subcheck("promote and demote"):
        act("promote")
        expect_result(ctx, call(c, CAROL, "group_settings", group_id=gid, announcement=text_of("manager")),
                      "a promoted member's group_settings")
        act("demote")
        refused(c, call(c, CAROL, "group_settings", group_id=gid, announcement=text_of("member")),
                "a demoted member's group_settings")
    with ctx.subcheck("remove"):
        act("remove")
        refused(c, send(c, CAROL, gid, text_of("removed")), "a removed member's group_send")
        refused(c, call(c, CAROL, "group_messages", group_id=gid), "a removed member's group_messages")


@requirement(id="PLAZA-GROUP-HISTORY-JOIN", level="MUST", optional=GROUPS,
             title="A member sees no history from before it joined",
             source=at(f"{CHAT}/history_before_join_visible"))
@served(GROUPS)
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
            reply = call(c, BOB, "group_messages", group_id=gid, **fields)
            data = c.data_of(reply, "bob's group_messages")
            ctx.expect(not names(data, before),
                       f"bob reads {before!r}, sent before he joined: {json_excerpt(data, 300)}")
            ctx.expect(names(data, after),
                       f"bob does not read {after!r}, sent after he joined: {json_excerpt(data, 300)}",
                       kind="malformed_answer")


@check_history_join.fault
def history_before_join_visible(ref: PlazaReference) -> None:
    """A member reads the whole history, from before it joined too."""
    @replaces(ref.visible_messages)
    def visible(original: Any, group: Data, member: Any) -> list[Any]:
        return list(group["messages"])


@requirement(id="PLAZA-GROUP-MAX-MEMBERS", level="MUST", optional=GROUPS,
             title="A group has at most max_members members",
             source=at(f"{CHAT}/max_members"),
             faults=[returns("members_unbounded", "max_members", 10 ** 6,
                             "A group admits members past max_members.")])
@served(GROUPS)
def check_max_members(ctx: CheckContext) -> None:
    """With max_members members no one more is admitted."""
    c = PlazaClient(ctx)
    cap = int(chat(ctx, "max_members"))
    gid = create(c, ALICE)
    agents = (ctx.control("seed_agents", count=cap, invite=ALICE).json() or {}).get("agents") or []
    agents = [a for a in agents if isinstance(a, dict) and isinstance(a.get("token"), str)
              and isinstance(a.get("id"), str)]
    ctx.expect(len(agents) == cap,
               f"control seed_agents gave {len(agents)} agents with an id and a token, not {cap}",
               kind="malformed_answer")
    for agent in agents[: cap - 1]:  # alice and cap - 1 others: the group is full
        add_member(c, ALICE, RawToken(agent["token"]), gid, member_id=agent["id"])
    last = RawToken(agents[-1]["token"])
    authorize(c, last, allow_join=True)
    with c.ctx.setup("alice invites one more agent", by="PLAZA-GROUP-MEMBERSHIP"):
        invited = call(c, ALICE, "group_invite", group_id=gid, visitor_id=agents[-1]["id"])
    if invited.ok:
        refused(c, call(c, last, "group_respond", group_id=gid, decision="accept"),
                f"an acceptance that makes {cap + 1} members")
    else:
        refused(c, invited, f"an invitation that would make {cap + 1} members")


# ----------------------------------------------------------------------------------------------
# settings, limits, close, routing
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-GROUP-SETTINGS", level="MUST", optional=GROUPS,
             title="A manager's group_settings rules apply (max_messages_per_hour)",
             source=command_at("group_settings", "/properties/rules"),
             faults=[noop("rate_limit_ignored", "check_rate", "max_messages_per_hour is not enforced.")])
@served(GROUPS)
def check_settings(ctx: CheckContext) -> None:
    """A manager's rules apply (max_messages_per_hour at its minimum stops a second message)."""
    c = PlazaClient(ctx)
    top = prop(ctx, "group_authorize", "max_messages_per_hour")["maximum"]
    gid = create(c, ALICE, grant={"max_messages_per_hour": top})
    add_member(c, ALICE, BOB, gid)
    low = prop(ctx, "group_settings", "rules", "max_messages_per_hour")["minimum"]
    with ctx.setup("alice sets the rules", by="PLAZA-GROUP-SETTINGS"):
        ok(c, ALICE, "group_settings", group_id=gid, rules={"max_messages_per_hour": low})
    with ctx.subcheck("max_messages_per_hour"):
        for i in range(low):
            expect_result(ctx, send(c, ALICE, gid, text_of(f"within {i}")),
                          f"group_send {i + 1} of {low} per hour")
        refused(c, send(c, ALICE, gid, text_of("over")),
                f"group_send {low + 1} within the hour under max_messages_per_hour {low}")


@requirement(id="PLAZA-GROUP-ROLES", level="SHOULD", optional=GROUPS,
             title="A plain member's group_settings are refused (the profile's roles)",
             source=chosen("docs/agent-plaza.md#groups"))
@served(GROUPS)
def check_roles(ctx: CheckContext) -> None:
    """The profile's roles: a plain member changes no group settings (the document names
    managers but not what a member may not do)."""
    c = PlazaClient(ctx)
    top = prop(ctx, "group_authorize", "max_messages_per_hour")["maximum"]
    gid = create(c, ALICE, grant={"max_messages_per_hour": top})
    add_member(c, ALICE, BOB, gid)
    refused(c, call(c, BOB, "group_settings", group_id=gid, rules={"max_messages_per_hour": top}),
            "a member's group_settings")


@check_roles.fault
def members_act_as_managers(ref: PlazaReference) -> None:
    """Any member may do what a manager does (settings, admission, invitations)."""
    @replaces(ref.require_role)
    def require_role(original: Any, group: Data, caller: str, role: str) -> None:
        if role != MANAGER_ROLE:
            original(group, caller, role)


@requirement(id="PLAZA-GROUP-TURN-CAP", level="MUST", optional=GROUPS,
             title="The automatic loop guard stops agents answering each other past max_autonomous_turns",
             source=at(f"{CHAT}/automatic_loop_guard"),
             faults=[noop("loop_guard_off", "check_turns", "No cap on autonomous turns.")])
@served(GROUPS)
def check_turn_cap(ctx: CheckContext) -> None:
    """Two agents answering each other are stopped by the loop guard (max_autonomous_turns at
    its minimum), for the guard's reason, and not at the very first message."""
    c = PlazaClient(ctx)
    turns = prop(ctx, "group_create", "rules", "max_autonomous_turns")
    rate = prop(ctx, "group_authorize", "max_messages_per_hour")["maximum"]
    gid = create(c, ALICE, grant={"max_messages_per_hour": rate},
                 rules={"max_autonomous_turns": turns["minimum"], "max_messages_per_hour": rate})
    add_member(c, ALICE, BOB, gid, grant={"max_messages_per_hour": rate})
    bound = 2 * (int(turns["maximum"]) + 1) + 1
    for i in range(bound):
        who = (ALICE, BOB)[i % 2]
        reply = send(c, who, gid, text_of(f"turn {i}"))
        if not reply.ok:
            refused(c, reply, f"{who}'s group_send {i + 1} of an exchange under max_autonomous_turns "
                              f"{turns['minimum']}")
            ctx.expect(i > 0, f"the first message of the exchange was refused ({reply.describe()}): it "
                              "answers no one")
            return
    ctx.fail(f"{bound} alternating messages of two agents all passed under max_autonomous_turns "
             f"{turns['minimum']}: no loop guard")


@requirement(id="PLAZA-GROUP-CLOSE", level="MUST", optional=GROUPS,
             title="A closed group takes no further messages or members",
             source=command_at("group_close"),
             faults=[noop("close_ignored", "require_open",
                          "A closed group still takes messages and members.")])
@served(GROUPS)
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
        refused(c, call(c, CAROL, "group_respond", group_id=gid, decision="accept"),
                "accepting an invitation to a closed group")


@fault  # of PLAZA-GROUP-ROUTING-CODE (its code twin names it)
def group_routing_wrong_code(ref: PlazaReference) -> None:
    """A misrouted group command is refused NOT_PERMITTED instead of as invalid parameters."""
    @replaces(ref.group_routing_issues)
    def routing(original: Any, message: Data, data: Data) -> list[Issue]:
        if original(message, data):
            raise SiteError(NOT_PERMITTED, "group_id lives inside data")
        return []


@requirement(id="PLAZA-GROUP-ROUTING", level="MUST", optional=GROUPS,
             title="group_id lives in data only: a group command with contextId, taskId or recipientId "
                   "is refused",
             source=at(f"{CHAT}/scope"),
             faults=[returns("group_routing_unchecked", "group_routing_issues", [],
                             "A group command carrying contextId, taskId or recipientId is served.")],
             code="A2A_INVALID_PARAMETERS", code_faults=["group_routing_wrong_code"])
@served(GROUPS)
def check_routing(ctx: CheckContext, strict: bool = False) -> None:
    """group_id goes in data only: a group command with contextId, taskId or recipientId is
    refused and stores nothing."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    shapes = {"contextId": {"context": gid}, "taskId": {"taskId": gid},
              "recipientId": {"to": c.agent_id(BOB)}}
    for name, extra in shapes.items():
        with ctx.subcheck(name):
            content = text_of(f"routed by {name}")
            remember(c, content)
            data = {"operation": "group_send", "group_id": gid, "content": content, "request_key": fresh_id()}
            reply = c.send(c.params({"data": data}, **extra), ALICE)
            refused(c, reply, f"group_send with message.{name}", error=INVALID, strict=strict)
            if not strict:
                ctx.expect(content not in contents(c, BOB, gid, "bob's group_messages"),
                           f"the refused group_send with {name} was stored")
