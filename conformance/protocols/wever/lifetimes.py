"""Wever Connect over time: task, request and mailbox expiry, renewal, retry
tombstones, closing a mailbox, and what a grant and its revocation cover. Time moves
through the control interface (``advance_clock``); without one these are untested (the
shortest wait, a connection request's, is a day), before they send anything. Closing a
mailbox runs without control on a mailbox of the run's own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from conformance import locate
from conformance.check import CheckContext
from conformance.checks.errors import expect_refused, expect_result
from conformance.model import Requirement
from conformance.protocols.wever.client import RECIPIENT, SENDER, STRANGER, Task, WeverClient, fresh_key
from conformance.protocols.wever.reads import marked, named_values
from conformance.transport.http import json_excerpt

MINUTE_S = 60
HOUR_S = 3600
DAY_S = 24 * HOUR_S


def hours(ctx: CheckContext, name: str) -> int:
    return ctx.limit(name)


def needs_clock(ctx: CheckContext, limit: str) -> None:
    """Without control the check would wait ``limit`` out: longer than any run."""
    if ctx.run.live:
        ctx.needs_control(f"advance_clock past {limit} ({ctx.profile.limits[limit].value})")


def gone(c: WeverClient, task: Task, who: str = SENDER) -> bool:
    """The task is no longer readable, or readable without its content (nothing of it
    carries the task's marker)."""
    reply = c.get(task.id, who)
    return not reply.ok or not marked(reply.result, task.marker)


def check_task_expiry(ctx: CheckContext) -> None:
    """A task lives task_hours after submission, then is gone (purge timing aside)."""
    needs_clock(ctx, "task_hours")
    c = WeverClient(ctx)
    life = hours(ctx, "task_hours") * HOUR_S
    task = c.new_task("offered")
    c.advance(life - MINUTE_S)
    ctx.expect(not gone(c, task), f"the task is gone a minute before its {life // HOUR_S} hours are up")
    c.advance(2 * MINUTE_S + HOUR_S)  # past the expiry and one hourly purge
    ctx.expect(gone(c, task), f"the task is still readable {life // HOUR_S} hours and an hour after submission")
    ctx.expect(task.id not in c.inbox_ids(RECIPIENT), "an expired task is still in the inbox")


def check_task_capped_by_mailbox(ctx: CheckContext) -> None:
    """A task never outlives either mailbox's expiry at submission."""
    needs_clock(ctx, "mailbox_days")
    c = WeverClient(ctx)
    mailbox_s = hours(ctx, "mailbox_days") * DAY_S
    c.allow(SENDER, RECIPIENT)
    c.advance(mailbox_s - 2 * HOUR_S)  # both mailboxes have two hours left
    data, marker = c.marked()
    task = replace(c.task_of(c.send(SENDER, RECIPIENT, data=data), "send_task two hours before the mailboxes expire"), marker=marker)
    expect_result(ctx, c.call("renew_mailbox", {}, SENDER), "renew_mailbox of the sender")
    c.advance(3 * HOUR_S + HOUR_S)  # past the recipient's expiry (and a purge)
    ctx.expect(gone(c, task, SENDER), "a task outlived its recipient's mailbox expiry at submission")


def check_mailbox_expiry(ctx: CheckContext) -> None:
    needs_clock(ctx, "mailbox_days")
    c = WeverClient(ctx)
    life = hours(ctx, "mailbox_days") * DAY_S
    c.advance(life - HOUR_S)
    expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox an hour before expiry")
    c.advance(2 * HOUR_S)
    expect_refused(ctx, c.call("get_mailbox", {}, RECIPIENT), f"get_mailbox {life // DAY_S} days and an hour after registration")


def check_renew(ctx: CheckContext) -> None:
    """renew_mailbox gives an unexpired mailbox mailbox_days more, and no new credential."""
    needs_clock(ctx, "mailbox_days")
    c = WeverClient(ctx)
    life = hours(ctx, "mailbox_days") * DAY_S
    field = c.vocab.token_field
    c.advance(life - DAY_S)
    renewed = expect_result(ctx, c.call("renew_mailbox", {}, RECIPIENT), "renew_mailbox a day before expiry")
    ctx.expect(not named_values(renewed, field), f"renew_mailbox returned a credential ({field}); it returns none: "
               f"{json_excerpt(renewed)}", kind="schema_mismatch")
    c.advance(2 * DAY_S)
    expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox a day after the original expiry, renewed")
    with ctx.subcheck("an expired mailbox"):
        c.advance(life)
        expect_refused(ctx, c.call("renew_mailbox", {}, STRANGER), "renew_mailbox of an expired mailbox")


def check_tombstone(ctx: CheckContext) -> None:
    """A deleted or expired task's key creates no new work until tombstone_hours after
    submission; after that it does. (The retries carry the first body, and the check
    looks for that body's marker in the inbox.)"""
    needs_clock(ctx, "tombstone_hours")
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    (key, data, marker), (late_key, late_data, late_marker) = ((fresh_key(), *c.marked()) for _ in range(2))
    task = c.task_of(c.send(SENDER, RECIPIENT, data=data, key=key), "send_task")
    c.task_of(c.send(SENDER, RECIPIENT, data=late_data, key=late_key), "send_task of a task left to expire")
    with ctx.subcheck("a deleted task's key"):
        expect_result(ctx, c.call("cancel_task", {"task_id": task.id}, SENDER), "cancel_task")
        expect_result(ctx, c.call("delete_task_content", {"task_id": task.id}, SENDER), "delete_task_content")
        watch = c.watch(RECIPIENT)
        expect_refused(ctx, c.send(SENDER, RECIPIENT, data=data, key=key), "send_task reusing a deleted task's key")
        watch.nothing_delivered(marker, "a retry under a deleted task's key")
    with ctx.subcheck("an expired task's key"):
        c.advance(hours(ctx, "task_hours") * HOUR_S + HOUR_S)  # the task expired; its tombstone lives on
        watch = c.watch(RECIPIENT)
        expect_refused(ctx, c.send(SENDER, RECIPIENT, data=late_data, key=late_key), "send_task reusing an expired task's key")
        watch.nothing_delivered(late_marker, "a retry under an expired task's key")
    c.advance((hours(ctx, "tombstone_hours") - hours(ctx, "task_hours")) * HOUR_S)  # past the tombstone; mailboxes live longer
    new = c.task_of(c.send(SENDER, RECIPIENT, data=data, key=key), "send_task with the key after its tombstone expired")
    ctx.expect(new.id != task.id, "after the tombstone the key still names the deleted task")


def check_close_mailbox(ctx: CheckContext) -> None:
    """Closing a mailbox revokes its token, removes its profile and grants, and erases
    the shared content of its tasks for both sides."""
    c = WeverClient(ctx, victim=RECIPIENT)  # the recipient closes: without control, a mailbox of the run's own
    if c.live:  # before anything is sent: closing a configured mailbox would harm it
        ctx.lasting(c.label(RECIPIENT), str(ctx.profile.settings["lasting"]["close_mailbox"]))
    task = c.new_task("completed")
    c.advertise(RECIPIENT, discoverable=True)
    expect_result(ctx, c.grant(RECIPIENT, SENDER), "allow_sender: alice allows bob")
    expect_result(ctx, c.call("close_mailbox", {}, RECIPIENT), "close_mailbox")
    with ctx.subcheck("the token"):
        expect_refused(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox with a closed mailbox's token")
    with ctx.subcheck("the profile"):
        peers = expect_result(ctx, c.open_call("find_peers", {}), "find_peers")
        ctx.expect(not locate.holds(peers, c.mailbox(RECIPIENT)), "find_peers still lists a closed mailbox")
    with ctx.subcheck("grants"):
        mine = expect_result(ctx, c.call("get_mailbox", {}, SENDER), "get_mailbox")
        ctx.expect(not locate.holds(mine, c.mailbox(RECIPIENT)), f"a grant to a closed mailbox remains: get_mailbox of the "
                   f"mailbox that allowed it still names {c.mailbox(RECIPIENT)}: {json_excerpt(mine)}")
    with ctx.subcheck("shared content"):
        ctx.expect(gone(c, task, SENDER), "the other participant still reads a closed mailbox's task content")


def check_conn_expiry(ctx: CheckContext) -> None:
    needs_clock(ctx, "connection_request_hours")
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    first = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER), "request_connection")
    c.advance(hours(ctx, "connection_request_hours") * HOUR_S + HOUR_S)
    listed = expect_result(ctx, c.call("list_connection_requests", {}, RECIPIENT), "list_connection_requests")
    ctx.expect(not locate.holds(listed, first), f"list_connection_requests still shows the expired request {first}")
    again = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER), "request_connection after expiry")
    ctx.expect(again != first, f"the expired request {first} was returned as if retained")


def check_conn_capped_by_mailbox(ctx: CheckContext) -> None:
    """A request lives no longer than either mailbox: made an hour before the sender's
    mailbox expires, it is gone from the (renewed) recipient's list after that."""
    needs_clock(ctx, "mailbox_days")
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    c.advance(hours(ctx, "mailbox_days") * DAY_S - HOUR_S)
    expect_result(ctx, c.call("renew_mailbox", {}, RECIPIENT), "renew_mailbox of the recipient")
    request = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                           "request_connection an hour before the sender's mailbox expires")
    c.advance(2 * HOUR_S)
    listed = expect_result(ctx, c.call("list_connection_requests", {}, RECIPIENT), "list_connection_requests")
    ctx.expect(not locate.holds(listed, request), f"the connection request {request} outlived its sender's mailbox")


def check_mailbox_senders(ctx: CheckContext) -> None:
    """get_mailbox names the senders the mailbox allows and not one it revoked (allowed
    sender IDs, wherever the answer puts them)."""
    c = WeverClient(ctx)
    for step, (who, allowed) in enumerate(((SENDER, True), (STRANGER, True), (SENDER, False))):
        with ctx.subcheck(f"step {step + 1}: {'allow' if allowed else 'revoke'} {who}"):
            expect_result(ctx, c.grant(who, RECIPIENT, allowed=allowed), "allow_sender")
    mine = expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox")
    named = c.mailbox_ids(mine)
    ctx.expect(c.mailbox(STRANGER) in named, f"get_mailbox does not name the allowed sender {c.mailbox(STRANGER)}: {json_excerpt(mine)}")
    ctx.expect(c.mailbox(SENDER) not in named, f"get_mailbox still names the revoked sender {c.mailbox(SENDER)}: {json_excerpt(mine)}")


def check_revoke_new_only(ctx: CheckContext) -> None:
    """Revoking affects new submissions, not delivered tasks."""
    c = WeverClient(ctx)
    task = c.new_task("offered")
    expect_result(ctx, c.grant(SENDER, RECIPIENT, allowed=False), "allow_sender allowed=false")
    expect_result(ctx, c.call("accept_task", {"task_id": task.id}, RECIPIENT), "accept_task of a task delivered before the revocation")
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after the revocation")


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
        from conformance.protocols.wever.requirements import still_pending

        new = c.new_pair(STRANGER, RECIPIENT)
        request = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, STRANGER), "request_connection")
        if not new:
            still_pending(c, request)
        expect_result(ctx, c.call("respond_connection_request", {"request_id": request, "allowed": True}, RECIPIENT),
                      "respond_connection_request allowed=true")
        for capability in (c.capability, other):
            c.task_of(c.send(STRANGER, RECIPIENT, capability=capability), f"send_task for {capability} after the approval")


def rows(req: Callable[..., Requirement], at: Callable[..., Any], lim: dict[str, int]) -> list[Requirement]:
    return [
        req("WEVER-TASK-EXPIRY", "MUST", f"A task expires {lim['task_hours']} hours after submission and never outlives either mailbox's expiry",
            at("/retention"), both(check_task_expiry, check_task_capped_by_mailbox), ("task_never_expires", "task_outlives_mailbox")),
        req("WEVER-MAILBOX-EXPIRY", "MUST", f"A mailbox expires {lim['mailbox_days']} days after registration unless renewed",
            at("/retention"), check_mailbox_expiry, ("mailbox_never_expires",)),
        req("WEVER-RENEW", "MUST", f"renew_mailbox gives an unexpired mailbox {lim['mailbox_days']} more days and no new credential",
            at("/actions/renew_mailbox/description"), check_renew, ("renew_ignored", "renew_returns_token")),
        req("WEVER-SEND-TOMBSTONE", "MUST", f"A deleted or expired task's key creates no new work for {lim['tombstone_hours']} hours after submission; then it does",
            at("/retention"), check_tombstone, ("tombstone_forgotten", "tombstone_forever", "expired_key_forgotten")),
        req("WEVER-CLOSE-MAILBOX", "MUST", "close_mailbox revokes the token, removes profile and grants, and erases shared task content for both sides",
            at("/actions/close_mailbox/description"), check_close_mailbox, ("close_keeps_content", "close_keeps_grants")),
        req("WEVER-CONN-EXPIRY", "MUST", f"A connection request expires after {lim['connection_request_hours']} hours",
            at("/limits/connection_request_hours"), both(check_conn_expiry, check_conn_capped_by_mailbox),
            ("requests_never_expire", "request_outlives_mailbox")),
        req("WEVER-MAILBOX-SENDERS", "MUST", "get_mailbox lists exactly the senders the mailbox allows",
            at("/actions/get_mailbox/description"), check_mailbox_senders, ("allowed_senders_stale",)),
        req("WEVER-REVOKE-NEW-ONLY", "MUST", "Revoking a sender affects new submissions, not delivered tasks",
            at("/actions/allow_sender/description"), check_revoke_new_only, ("revocation_ignored", "revoke_cancels_delivered")),
        req("WEVER-GRANT-ALL-CAPABILITIES", "MUST", "One grant covers every capability the recipient advertises",
            at("/permissions"), check_grant_all_capabilities, ("grant_per_capability",)),
    ]


def both(*checks: Callable[[CheckContext], None]) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        for one in checks:
            with ctx.subcheck((one.__doc__ or one.__name__).strip().splitlines()[0]):
                one(ctx)
    return check
