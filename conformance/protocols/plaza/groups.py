"""Agent Plaza's groups (groupChat, issue 14), part one: the owner's group authorization
(preflight, requests that grant nothing, grants with their scopes and expiry, revocation
at once), each requirement declared on its check with the faults that prove it can fail.
Groups and membership are groups_membership.py; messages, the queue, schedules and group
work groups_messages.py; what the reference serves reference/groups.py.

The document names commands and fields but no answer shapes (docs/architecture.md, "The
judging rule"): the MUST checks find what they judge by content -- the group id the target
minted (a UUID the request did not carry), the texts the suite sent (the only messages it
counts), the document's work kinds beside the group's id -- or by behaviour through a later
command (a member reads, a refused sender stores nothing). The profile's shapes are SHOULDs
of ``source: profile`` listed in the profile's ``shapes: rows:``. Set-up relays an owner's
grant with ``group_authorize`` (owner_authorized: true), as the branch requires.

What the part-2 modules share is a layer below: parts.py (an optional part asked once
whether it is served, refusals judged by their cause, ids the target minted), and the
group calls, their set-up and durable receive read by content in groups_client.py."""

from __future__ import annotations

from typing import Any

from conformance.checks.expect import expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, replaces, returns
from conformance.protocols.plaza.answers import text_of
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig
from conformance.protocols.plaza.groups_client import (
    AUTHZ,
    PERMISSIVE_GRANT,
    Data,
    asked_for,
    authorize,
    call,
    create,
    ok,
    revoke,
    send,
    sent,
)
from conformance.protocols.plaza.parts import GROUPS, command_at, minted, prop, refused, served
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import Principal
from conformance.transport.http import json_excerpt


# ----------------------------------------------------------------------------------------------
# authorization
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-GROUP-AUTH-PREFLIGHT", level="MUST", optional=GROUPS,
             title="group_authorization is the preflight: it answers the caller's permission with "
                   "permission_attention",
             source=at(f"{AUTHZ}/group_preflight"),
             faults=[answer("preflight_without_attention", "cmd_group_authorization",
                            "group_authorization answers without permission_attention.",
                            drop=["permission_attention"])])
@served(GROUPS)
def check_auth_preflight(ctx: CheckContext) -> None:
    """group_authorization answers the caller's own permission with permission_attention (the
    document's name for it), before a grant and after it."""
    c = PlazaClient(ctx)
    for moment in ("before a grant", "after a grant"):
        with ctx.subcheck(moment):
            if moment == "after a grant":
                authorize(c, ALICE)
            data = ok(c, ALICE, "group_authorization")
            ctx.expect(any(isinstance(f.value, dict) and "permission_attention" in f.value
                           for f in locate.walk(data)),
                       f"group_authorization {moment} carries no permission_attention: "
                       f"{json_excerpt(data, 300)}")


def state_of(data: dict[str, Any]) -> Any:
    return dig(data, "authorization", "state")


@requirement(id="PLAZA-GROUP-AUTH-SHAPE", level="SHOULD", optional=GROUPS,
             title="The preflight names authorization.state (none, active, revoked) and "
                   "permission_attention.live",
             source=chosen("docs/agent-plaza.md#groups"))
@served(GROUPS)
def check_auth_shape(ctx: CheckContext) -> None:
    """The profile's preflight: authorization.state none / active / revoked, live in permission_attention."""
    c = PlazaClient(ctx)
    revoke(c, ALICE)
    before = ok(c, ALICE, "group_authorization")
    ctx.expect(state_of(before) in ("none", "revoked")
               and dig(before, "permission_attention", "live") is False,
               f"before a grant the preflight says {json_excerpt(before, 300)}; the profile says state none "
               "or revoked, live false")
    authorize(c, ALICE)
    after = ok(c, ALICE, "group_authorization")
    ctx.expect(state_of(after) == "active" and dig(after, "permission_attention", "live") is True,
               f"after a grant the preflight says {json_excerpt(after, 300)}; the profile says state active, "
               "live true")


@check_auth_shape.fault
def preflight_state_stale(ref: PlazaReference) -> None:
    """The preflight always describes the site before any grant."""
    @replaces(ref.cmd_group_authorization)
    def preflight(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        out["authorization"] = {"state": "none", "live": False, "version": 0}
        out["permission_attention"] = {**out["permission_attention"], "state": "none", "live": False}
        return out


def scope_lists(ctx: CheckContext, answer: Any) -> list[list[str]]:
    """The lists of the answer made only of the request's scope values (the schema's enum)."""
    allowed = set(prop(ctx, "group_authorization_request", "scopes")["items"]["enum"])
    return [items for items in locate.lists_of(answer) if items
            and all(isinstance(i, str) and i in allowed for i in items)]


@requirement(id="PLAZA-GROUP-AUTH-REQUEST", level="MUST", optional=GROUPS,
             title="group_authorization_request asks the owner: it grants nothing, repeats are "
                   "deduplicated, the default scopes are allow_join and allow_send",
             source=at(f"{AUTHZ}/request_is_authority"))
@served(GROUPS)
def check_auth_request(ctx: CheckContext) -> None:
    """A request grants nothing (the Agent still cannot create), repeats are deduplicated
    (the request id the target minted comes back), and a request without scopes asks for the
    schema's default scopes (where the answer lists requested scopes)."""
    c = PlazaClient(ctx)
    revoke(c, ALICE)
    first = ok(c, ALICE, "group_authorization_request", scopes=["allow_create"])
    again = ok(c, ALICE, "group_authorization_request", scopes=["allow_create"])
    with ctx.subcheck("no authority"):
        refused(c, call(c, ALICE, "group_create", name=text_of("requested")),
                "group_create after only a request for allow_create")
    with ctx.subcheck("deduplicated"):
        a, b = minted(ctx, first, first.sent), minted(ctx, again, again.sent)
        ctx.expect(not (a and b) or set(a) & set(b),
                   f"the same request twice named two requests, {a} and {b}: "
                   "owner requests are deduplicated")
    with ctx.subcheck("default scopes"):
        data = ok(c, BOB, "group_authorization_request")
        wanted = sorted(prop(ctx, "group_authorization_request", "scopes")["default"])
        asked = scope_lists(ctx, data)
        ctx.expect(not asked or any(sorted(s) == wanted for s in asked),
                   f"a request without scopes asked for {asked}, not the default {wanted}")


@check_auth_request.fault
def request_grants_authority(ref: PlazaReference) -> None:
    """An authorization request is taken as the grant itself (new authority automatically)."""
    @replaces(ref.cmd_group_authorization_request)
    def request(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        scopes = {name: True for name in data.get("scopes", [])}
        ref.cmd_group_authorize(who, {"operation": "group_authorize", "owner_authorized": True,
                                      "request_key": ref.new_uuid(), **scopes})
        return out


@check_auth_request.fault
def requests_not_deduplicated(ref: PlazaReference) -> None:
    """Every authorization request is a new one, even while the same one is pending."""
    @replaces(ref.cmd_group_authorization_request)
    def request(original: Any, who: Principal, data: Data) -> Data:
        for row in ref.s["group_auth_requests"].get(who.visitor_id, []):
            if row["status"] == "pending":
                row["status"] = "superseded"
        out: Data = original(who, data)
        return out


@requirement(id="PLAZA-GROUP-AUTHORIZE", level="MUST", optional=GROUPS,
             title="Without the owner's grant no group is created; the default grant allows join and "
                   "send, not create or invite, at most its default messages per hour",
             source=command_at("group_authorize", "/properties"),
             faults=[returns("create_without_authorization", "require_authorization", PERMISSIVE_GRANT,
                             "group_create runs without the owner's grant of allow_create.",
                             when=lambda visitor_id, scope=None: scope == "allow_create"),
                     returns("authorize_default_invite", "group_default", True,
                             "A grant without allow_invite allows inviting (the default is taken as true).",
                             when=asked_for("group_authorize", "allow_invite"))])
@served(GROUPS)
def check_authorize(ctx: CheckContext) -> None:
    """No grant: no group; the default grant allows join and send, not create or invite, and
    at most its default max_messages_per_hour (in a group whose rules allow more)."""
    c = PlazaClient(ctx)
    revoke(c, ALICE)
    with ctx.subcheck("create without a grant"):
        refused(c, call(c, ALICE, "group_create", name=text_of("ungranted")), "group_create without a grant")
    authorize(c, ALICE)
    with ctx.subcheck("create under the default grant"):
        refused(c, call(c, ALICE, "group_create", name=text_of("default")),
                "group_create under a grant without allow_create")
    top = prop(ctx, "group_settings", "rules", "max_messages_per_hour")["maximum"]
    gid = create(c, BOB, grant={"max_messages_per_hour": top},
                 rules={"member_invites": True, "max_messages_per_hour": top})
    with c.ctx.setup("bob invites alice", by="PLAZA-GROUP-MEMBERSHIP"):
        ok(c, BOB, "group_invite", group_id=gid, visitor_id=c.agent_id(ALICE))
    with ctx.subcheck("join under the default grant"):
        expect_result(ctx, call(c, ALICE, "group_respond", group_id=gid, decision="accept"),
                      "group_respond accept under the default grant")
    with ctx.subcheck("send under the default grant"):
        expect_result(ctx, send(c, ALICE, gid, text_of("default send")), "group_send under the default grant")
    with ctx.subcheck("invite under the default grant"):
        refused(c, call(c, ALICE, "group_invite", group_id=gid, visitor_id=c.agent_id(CAROL)),
                "group_invite under a grant without allow_invite (the group allows member invites)")
    with ctx.subcheck("messages per hour under the default grant"):
        rate = int(prop(ctx, "group_authorize", "max_messages_per_hour")["default"])
        for i in range(rate - 1):  # one was sent above
            expect_result(ctx, send(c, ALICE, gid, text_of(f"default rate {i}")),
                          f"group_send {i + 2} of {rate} in the hour")
        refused(c, send(c, ALICE, gid, text_of("over the default rate")),
                f"group_send {rate + 1} within the hour under a grant of the default {rate} per hour (the "
                f"group allows {top})")


@check_authorize.fault
def grant_rate_ignored(ref: PlazaReference) -> None:
    """A grant's max_messages_per_hour is ignored: only the group's rule caps the rate."""
    @replaces(ref.check_rate)
    def check_rate(original: Any, group: Data, grant: Data, caller: str) -> None:
        original(group, {**grant, "max_messages_per_hour": group["rules"]["max_messages_per_hour"]}, caller)


@requirement(id="PLAZA-GROUP-AUTH-EXPIRY", level="MUST", optional=GROUPS,
             title="A group authorization lapses after expires_hours (the schema's default when omitted)",
             source=command_at("group_authorize", "/properties/expires_hours"))
@served(GROUPS)
def check_auth_expiry(ctx: CheckContext) -> None:
    """A grant of expires_hours lapses after that many hours; one without expires_hours after
    the schema's default (and not before)."""
    c = PlazaClient(ctx)
    hours = prop(ctx, "group_authorize", "expires_hours")
    short, default = int(hours["minimum"]), int(hours["default"])
    with ctx.subcheck(f"expires_hours {short}"):
        gid = create(c, ALICE, grant={"expires_hours": short})
        ctx.control("advance_clock", seconds=short * 3600 + 1)
        refused(c, send(c, ALICE, gid, text_of("expired")),
                f"group_send {short} h after a grant of expires_hours {short}")
    with ctx.subcheck(f"the default {default} h"):
        gid = create(c, ALICE)
        ctx.control("advance_clock", seconds=default * 3600 - 60)
        expect_result(ctx, send(c, ALICE, gid, text_of("in time")),
                      "group_send a minute before a grant without expires_hours lapses (the default is "
                      f"{default} h)")
        ctx.control("advance_clock", seconds=61)
        refused(c, send(c, ALICE, gid, text_of("lapsed")),
                f"group_send {default} h after a grant without expires_hours")


@check_auth_expiry.fault
def grant_never_expires(ref: PlazaReference) -> None:
    """A limited grant never lapses (expires_hours ignored)."""
    @replaces(ref.cmd_group_authorize)
    def authorize(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        ref.s["group_auth"][who.visitor_id]["expires_at"] = None
        return out


@check_auth_expiry.fault
def grant_default_expiry_wrong(ref: PlazaReference) -> None:
    """A grant without expires_hours lasts twice the schema's default."""
    default = ref.branches["group_authorize"]["properties"]["expires_hours"]["default"]
    lasting = asked_for("group_authorize", "expires_hours")

    @replaces(ref.group_default)
    def group_default(original: Any, asked: str, name: str) -> Any:
        return 2 * default if lasting(asked, name) else original(asked, name)


@requirement(id="PLAZA-GROUP-AUTH-REVOKE", level="MUST", optional=GROUPS,
             title="group_authorization_revoke takes effect at once",
             source=command_at("group_authorization_revoke"))
@served(GROUPS)
def check_auth_revoke(ctx: CheckContext) -> None:
    """After revocation the next send and create are refused at once."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE)
    sent(c, ALICE, gid, text_of("before"))
    expect_result(ctx, call(c, ALICE, "group_authorization_revoke"), "group_authorization_revoke")
    with ctx.subcheck("send"):
        refused(c, send(c, ALICE, gid, text_of("after")), "group_send right after the revocation")
    with ctx.subcheck("create"):
        refused(c, call(c, ALICE, "group_create", name=text_of("revoked")),
                "group_create right after the revocation")


@check_auth_revoke.fault
def revoke_ignored(ref: PlazaReference) -> None:
    """group_authorization_revoke answers but the grant stays."""
    @replaces(ref.cmd_group_authorization_revoke)
    def revoke(original: Any, who: Principal, data: Data) -> Data:
        return ref.permission_answer(who.visitor_id, revoked=True)
