"""A Wever Connect mailbox seen by others and by itself: its profile (update_mailbox
keeps what it omits), discovery (find_peers lists opted-in profiles only, filters and
pages), its inbox, and the senders it allows (get_mailbox names them; a grant covers
every advertised capability; a revocation stops new tasks, not delivered ones)."""

from __future__ import annotations

from typing import Any

from conformance.checks.expect import expect_refused, expect_result
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import replaces
from conformance.protocols.wever.answers import listing_ids
from conformance.protocols.wever.client import RECIPIENT, SENDER, STRANGER, WeverClient, still_pending
from conformance.protocols.wever.reference import Call, WeverReference
from conformance.transport.http import json_excerpt


@requirement(id="WEVER-UPDATE-MAILBOX", level="MUST",
             title="update_mailbox keeps accepts_connection_requests when omitted; opting out revokes no "
             "grant",
             source=at("/actions/update_mailbox/description"),
             faults=["omitted_flag_reset", "opt_out_revokes"])
def check_update_mailbox(ctx: CheckContext) -> None:
    """accepts_connection_requests: set, kept when omitted, and opting out revokes no grant."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    with ctx.subcheck("omitted flag"):
        c.advertise(RECIPIENT)
        reply = c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER)
        ctx.expect(reply.ok, "after an update_mailbox without accepts_connection_requests, a connection "
                   f"request to the mailbox (which had opted in) was refused: {reply.describe()}")
    with ctx.subcheck("opting out keeps grants"):
        expect_result(ctx, c.grant(SENDER, RECIPIENT), "allow_sender")
        c.advertise(RECIPIENT, accepts_connection_requests=False)
        c.task_of(c.send(SENDER, RECIPIENT), "send_task after the recipient opted out of requests")


@check_update_mailbox.fault
def omitted_flag_reset(ref: WeverReference) -> None:
    """update_mailbox without accepts_connection_requests turns it off."""
    @replaces(ref.act_update_mailbox)
    def update(original: Any, call: Call) -> dict[str, Any]:
        args = {"accepts_connection_requests": False, **call.args}
        return dict(original(Call(call.action, args, call.caller, call.key)))


@check_update_mailbox.fault
def opt_out_revokes(ref: WeverReference) -> None:
    """Opting out of connection requests revokes every grant."""
    @replaces(ref.act_update_mailbox)
    def update(original: Any, call: Call) -> dict[str, Any]:
        if call.args.get("accepts_connection_requests") is False:
            ref.s["grants"].pop(str(call.caller), None)
        return dict(original(call))


@requirement(id="WEVER-DISCOVERY-OPT-IN", level="MUST",
             title="find_peers lists discoverable mailboxes only, filters by capability, pages with limit "
             "and after",
             source=at("/actions/find_peers/description"),
             faults=["private_profile_listed", "capability_filter_ignored"])
def check_discovery(ctx: CheckContext) -> None:
    """find_peers lists discoverable mailboxes only, filters by capability, and pages
    with limit and after. Without control it publishes mailboxes of the run's own only."""
    c = WeverClient(ctx, own=True)
    c.advertise(RECIPIENT, discoverable=True)
    c.advertise(STRANGER, discoverable=False)
    c.advertise(SENDER, capabilities=[f"{c.capability}.other"], discoverable=True)
    ids = {who: c.mailbox(who) for who in (SENDER, RECIPIENT, STRANGER)}
    pattern = c.vocab.mailbox_id

    def peers(params: dict[str, Any], what: str) -> list[list[str]]:
        """The mailbox ids of each listed peer (the listing: the list whose items carry our ids)."""
        return listing_ids(expect_result(ctx, c.open_call("find_peers", params), what), ids.values(), pattern)

    listed = [i for item in peers({}, "find_peers") for i in item]
    ctx.expect(ids[RECIPIENT] in listed and ids[SENDER] in listed,
               f"find_peers misses discoverable mailboxes: {listed}")
    ctx.expect(ids[STRANGER] not in listed, "find_peers lists a mailbox that is not discoverable",
               kind="auth_not_enforced")
    with ctx.subcheck("capability filter"):
        only = [i for item in peers({"capability": c.capability}, "find_peers by capability") for i in item]
        ctx.expect(ids[RECIPIENT] in only and ids[SENDER] not in only,
                   f"find_peers capability={c.capability} answered {only}")
    with ctx.subcheck("limit and after"):
        first = peers({"limit": 1}, "find_peers limit=1")
        ctx.expect(len(first) == 1 and len(first[0]) == 1,
                   f"find_peers limit=1 answered {len(first)} peers: {first}")
        rest = [i for item in peers({"after": first[0][0]}, "find_peers after") for i in item]
        ctx.expect(first[0][0] not in rest, f"find_peers after={first[0][0]} lists that peer again")


@check_discovery.fault
def capability_filter_ignored(ref: WeverReference) -> None:
    """find_peers ignores its capability filter."""
    @replaces(ref.act_find_peers)
    def find(original: Any, call: Call) -> dict[str, Any]:
        args = {k: v for k, v in call.args.items() if k != "capability"}
        return dict(original(Call(call.action, args, call.caller, call.key)))


@requirement(id="WEVER-INBOX", level="MUST",
             title="The inbox shows the offered and accepted tasks addressed to the caller, nothing else",
             source=at("/actions/inbox/description"), faults=["inbox_shows_others", "inbox_shows_terminal"])
def check_inbox(ctx: CheckContext) -> None:
    """inbox: offered and accepted tasks addressed to the caller, nothing else."""
    c = WeverClient(ctx)
    offered, accepted, declined = c.new_task("offered"), c.new_task("accepted"), c.new_task("declined")
    shown = c.inbox_ids(RECIPIENT)
    ctx.expect(offered.id in shown and accepted.id in shown,
               f"the inbox misses offered or accepted tasks: {shown}")
    ctx.expect(declined.id not in shown, "the inbox shows a declined task")
    mine = {offered.id, accepted.id, declined.id}
    ctx.expect(not mine & set(c.inbox_ids(SENDER)), "the sender's inbox shows tasks it sent",
               kind="auth_not_enforced")


@check_inbox.fault
def inbox_shows_terminal(ref: WeverReference) -> None:
    """The inbox lists declined, cancelled and completed tasks too."""
    @replaces(ref.inbox_tasks)
    def inbox(original: Any, recipient_id: str) -> list[dict[str, Any]]:
        mine = [t for t in ref.s["tasks"].values() if t["recipient_id"] == recipient_id]
        return sorted(mine, key=lambda t: (t["created_at"], t["order"]))


# ----------------------------------------------------------------------------------
# the senders a mailbox allows
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-MAILBOX-SENDERS", level="MUST",
             title="get_mailbox lists exactly the senders the mailbox allows",
             source=at("/actions/get_mailbox/description"), faults=["allowed_senders_stale"])
def check_mailbox_senders(ctx: CheckContext) -> None:
    """get_mailbox names the senders the mailbox allows and not one it revoked (allowed
    sender IDs, wherever the answer puts them)."""
    c = WeverClient(ctx)
    for step, (who, allowed) in enumerate(((SENDER, True), (STRANGER, True), (SENDER, False))):
        with ctx.subcheck(f"step {step + 1}: {'allow' if allowed else 'revoke'} {who}"):
            expect_result(ctx, c.grant(who, RECIPIENT, allowed=allowed), "allow_sender")
    mine = expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox")
    named = c.mailbox_ids(mine)
    ctx.expect(c.mailbox(STRANGER) in named,
               f"get_mailbox does not name the allowed sender {c.mailbox(STRANGER)}: {json_excerpt(mine)}")
    ctx.expect(c.mailbox(SENDER) not in named,
               f"get_mailbox still names the revoked sender {c.mailbox(SENDER)}: {json_excerpt(mine)}")


@check_mailbox_senders.fault
def allowed_senders_stale(ref: WeverReference) -> None:
    """get_mailbox lists every sender ever allowed, revoked ones too."""
    ever: dict[str, set[str]] = {}

    @replaces(ref.add_grant)
    def add_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        ever.setdefault(recipient_id, set()).add(sender_id)
        return bool(original(recipient_id, sender_id))

    @replaces(ref.allowed_senders)
    def allowed(original: Any, recipient_id: str) -> list[str]:
        return sorted(ever.get(recipient_id, set()))


@requirement(id="WEVER-REVOKE-NEW-ONLY", level="MUST",
             title="Revoking a sender affects new submissions, not delivered tasks",
             source=at("/actions/allow_sender/description"),
             faults=["revocation_ignored", "revoke_cancels_delivered"])
def check_revoke_new_only(ctx: CheckContext) -> None:
    """Revoking affects new submissions, not delivered tasks."""
    c = WeverClient(ctx)
    task = c.new_task("offered")
    expect_result(ctx, c.grant(SENDER, RECIPIENT, allowed=False), "allow_sender allowed=false")
    expect_result(ctx, c.call("accept_task", {"task_id": task.id}, RECIPIENT),
                  "accept_task of a task delivered before the revocation")
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after the revocation")


@requirement(id="WEVER-GRANT-ALL-CAPABILITIES", level="MUST",
             title="One grant covers every capability the recipient advertises",
             source=at("/permissions"), faults=["grant_per_capability"])
def check_grant_all_capabilities(ctx: CheckContext) -> None:
    """One grant covers every advertised capability: a direct grant, and the recipient's
    approval of a connection request."""
    c = WeverClient(ctx)
    other = f"{c.capability}.second"
    c.advertise(RECIPIENT, capabilities=[c.capability, other], accepts_connection_requests=True)
    expect_result(ctx, c.grant(SENDER, RECIPIENT), "allow_sender")
    for capability in (c.capability, other):
        with ctx.subcheck(f"allow_sender, {capability}"):
            c.task_of(c.send(SENDER, RECIPIENT, capability=capability), f"send_task for {capability}")
    with ctx.subcheck("an approved connection request"):
        new = c.new_pair(STRANGER, RECIPIENT)
        request = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, STRANGER),
                               "request_connection")
        if not new:
            still_pending(c, request)
        expect_result(ctx,
                      c.call("respond_connection_request", {"request_id": request, "allowed": True},
                             RECIPIENT),
                      "respond_connection_request allowed=true")
        for capability in (c.capability, other):
            c.task_of(c.send(STRANGER, RECIPIENT, capability=capability),
                      f"send_task for {capability} after the approval")


@check_grant_all_capabilities.fault
def grant_per_capability(ref: WeverReference) -> None:
    """A grant covers only the first capability the recipient advertises."""
    @replaces(ref.check_capability)
    def check(original: Any, recipient: dict[str, Any], capability: str) -> bool:
        return capability in recipient["capabilities"][:1]
