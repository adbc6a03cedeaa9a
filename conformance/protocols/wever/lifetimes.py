"""Wever Connect over time: task, request and mailbox expiry, renewal, retry
tombstones, closing a mailbox, and what a grant and its revocation cover. Time moves
through the control interface (``advance_clock``); without one these are untested."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.checks.errors import expect_refused, expect_result
from conformance.model import Requirement
from conformance.protocols.wever.client import RECIPIENT, SENDER, STRANGER, WeverClient, dig, fresh_key
from conformance.runner import CheckContext

MINUTE_S = 60
HOUR_S = 3600
DAY_S = 24 * HOUR_S


def hours(ctx: CheckContext, name: str) -> int:
    return int(ctx.profile.limits[name].value)


def gone(c: WeverClient, task_id: str, who: str = SENDER) -> bool:
    """The task is no longer readable (or readable without content)."""
    reply = c.get(task_id, who)
    if not reply.ok:
        return True
    return dig(reply.result, "task", "task") in (None, {}) and dig(reply.result, "task", "result") in (None, {})


def check_task_expiry(ctx: CheckContext) -> None:
    """A task lives task_hours after submission, then is gone (purge timing aside)."""
    c = WeverClient(ctx)
    life = hours(ctx, "task_hours") * HOUR_S
    task = c.new_task("offered")
    c.advance(life - MINUTE_S)
    ctx.expect(not gone(c, task["task_id"]), f"the task is gone a minute before its {life // HOUR_S} hours are up")
    c.advance(2 * MINUTE_S + HOUR_S)  # past the expiry and one hourly purge
    ctx.expect(gone(c, task["task_id"]), f"the task is still readable {life // HOUR_S} hours and an hour after submission")
    ctx.expect(task["task_id"] not in c.inbox_ids(RECIPIENT), "an expired task is still in the inbox")


def check_task_capped_by_mailbox(ctx: CheckContext) -> None:
    """A task never outlives either mailbox's expiry at submission."""
    c = WeverClient(ctx)
    mailbox_s = hours(ctx, "mailbox_days") * DAY_S
    c.allow(SENDER, RECIPIENT)
    c.advance(mailbox_s - 2 * HOUR_S)  # both mailboxes have two hours left
    task = c.task_of(c.send(SENDER, RECIPIENT), "send_task two hours before the mailboxes expire")
    expect_result(ctx, c.call("renew_mailbox", {}, SENDER), "renew_mailbox of the sender")
    c.advance(3 * HOUR_S + HOUR_S)  # past the recipient's expiry (and a purge)
    ctx.expect(gone(c, task["task_id"], SENDER), "a task outlived its recipient's mailbox expiry at submission")


def check_mailbox_expiry(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    life = hours(ctx, "mailbox_days") * DAY_S
    c.advance(life - HOUR_S)
    expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox an hour before expiry")
    c.advance(2 * HOUR_S)
    expect_refused(ctx, c.call("get_mailbox", {}, RECIPIENT), f"get_mailbox {life // DAY_S} days and an hour after registration")


def check_renew(ctx: CheckContext) -> None:
    """renew_mailbox gives an unexpired mailbox mailbox_days more, and no new credential."""
    c = WeverClient(ctx)
    life = hours(ctx, "mailbox_days") * DAY_S
    field = c.a2a["access_setup"]["token_response_field"]
    c.advance(life - DAY_S)
    renewed = expect_result(ctx, c.call("renew_mailbox", {}, RECIPIENT), "renew_mailbox a day before expiry")
    ctx.expect(field not in renewed, f"renew_mailbox returned a credential ({field}); it returns none", kind="schema_mismatch")
    c.advance(2 * DAY_S)
    expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox a day after the original expiry, renewed")
    with ctx.subcheck("an expired mailbox"):
        c.advance(life)
        expect_refused(ctx, c.call("renew_mailbox", {}, STRANGER), "renew_mailbox of an expired mailbox")


def check_tombstone(ctx: CheckContext) -> None:
    """A deleted task's key creates no new work until tombstone_hours after submission;
    after that it does."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    key = fresh_key()
    task = c.task_of(c.send(SENDER, RECIPIENT, key=key), "send_task")
    expect_result(ctx, c.call("cancel_task", {"task_id": task["task_id"]}, SENDER), "cancel_task")
    expect_result(ctx, c.call("delete_task_content", {"task_id": task["task_id"]}, SENDER), "delete_task_content")
    before = c.inbox_ids(RECIPIENT)
    expect_refused(ctx, c.send(SENDER, RECIPIENT, key=key), "send_task reusing a deleted task's key")
    ctx.expect(c.inbox_ids(RECIPIENT) == before, "a deleted task's key created new work", kind="state_changed")
    c.advance(hours(ctx, "tombstone_hours") * HOUR_S + HOUR_S)  # mailboxes live longer than tombstones
    new = c.task_of(c.send(SENDER, RECIPIENT, key=key), "send_task with the key after its tombstone expired")
    ctx.expect(new["task_id"] != task["task_id"], "after the tombstone the key still names the deleted task")


def check_close_mailbox(ctx: CheckContext) -> None:
    """Closing a mailbox revokes its token, removes its profile and grants, and erases
    the shared content of its tasks for both sides."""
    c = WeverClient(ctx)
    task = c.new_task("completed")
    c.advertise(RECIPIENT, discoverable=True)
    expect_result(ctx, c.grant(RECIPIENT, SENDER), "allow_sender: alice allows bob")
    expect_result(ctx, c.call("close_mailbox", {}, RECIPIENT), "close_mailbox")
    with ctx.subcheck("the token"):
        expect_refused(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox with a closed mailbox's token")
    with ctx.subcheck("the profile"):
        peers = expect_result(ctx, c.open_call("find_peers", {}), "find_peers", ["peers"])["peers"]
        ctx.expect(all(p.get("mailbox_id") != c.mailbox(RECIPIENT) for p in peers if isinstance(p, dict)),
                   "find_peers still lists a closed mailbox")
    with ctx.subcheck("grants"):
        mine = expect_result(ctx, c.call("get_mailbox", {}, SENDER), "get_mailbox", ["allowed_senders"])
        ctx.expect(c.mailbox(RECIPIENT) not in mine["allowed_senders"], "a grant to a closed mailbox remains")
    with ctx.subcheck("shared content"):
        ctx.expect(gone(c, task["task_id"], SENDER), "the other participant still reads a closed mailbox's task content")


def check_conn_expiry(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    first = expect_result(ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER), "request_connection",
                          ["request"])["request"]
    c.advance(hours(ctx, "connection_request_hours") * HOUR_S + HOUR_S)
    listed = expect_result(ctx, c.call("list_connection_requests", {}, RECIPIENT), "list_connection_requests", ["requests"])["requests"]
    ctx.expect(all(r.get("request_id") != first.get("request_id") for r in listed if isinstance(r, dict)),
               "list_connection_requests still shows an expired request")
    again = expect_result(ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                          "request_connection after expiry", ["request"])["request"]
    ctx.expect(again.get("request_id") != first.get("request_id"), "an expired request was returned as if retained")


def check_conn_capped_by_mailbox(ctx: CheckContext) -> None:
    """A request lives no longer than either mailbox: made an hour before the sender's
    mailbox expires, it is gone from the (renewed) recipient's list after that."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    c.advance(hours(ctx, "mailbox_days") * DAY_S - HOUR_S)
    expect_result(ctx, c.call("renew_mailbox", {}, RECIPIENT), "renew_mailbox of the recipient")
    request = expect_result(ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                            "request_connection an hour before the sender's mailbox expires", ["request"])["request"]
    c.advance(2 * HOUR_S)
    listed = expect_result(ctx, c.call("list_connection_requests", {}, RECIPIENT), "list_connection_requests", ["requests"])["requests"]
    ctx.expect(all(r.get("request_id") != request.get("request_id") for r in listed if isinstance(r, dict)),
               "a connection request outlived its sender's mailbox")


def check_mailbox_senders(ctx: CheckContext) -> None:
    """get_mailbox lists exactly the senders the mailbox allows."""
    c = WeverClient(ctx)
    for step, (who, allowed) in enumerate(((SENDER, True), (STRANGER, True), (SENDER, False))):
        with ctx.subcheck(f"step {step + 1}: {'allow' if allowed else 'revoke'} {who}"):
            expect_result(ctx, c.grant(who, RECIPIENT, allowed=allowed), "allow_sender")
    listed = expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox", ["allowed_senders"])["allowed_senders"]
    ctx.expect(sorted(listed) == [c.mailbox(STRANGER)], f"get_mailbox lists allowed senders {listed}, expected only {c.mailbox(STRANGER)}")


def check_revoke_new_only(ctx: CheckContext) -> None:
    """Revoking affects new submissions, not delivered tasks."""
    c = WeverClient(ctx)
    task = c.new_task("offered")
    expect_result(ctx, c.grant(SENDER, RECIPIENT, allowed=False), "allow_sender allowed=false")
    expect_result(ctx, c.call("accept_task", {"task_id": task["task_id"]}, RECIPIENT), "accept_task of a task delivered before the revocation")
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after the revocation")


def check_grant_all_capabilities(ctx: CheckContext) -> None:
    """One grant covers every advertised capability."""
    c = WeverClient(ctx)
    other = f"{c.capability}.second"
    c.advertise(RECIPIENT, capabilities=[c.capability, other])
    expect_result(ctx, c.grant(SENDER, RECIPIENT), "allow_sender")
    for capability in (c.capability, other):
        with ctx.subcheck(capability):
            c.task_of(c.send(SENDER, RECIPIENT, capability=capability), f"send_task for {capability}")


def rows(req: Callable[..., Requirement], at: Callable[..., Any], lim: dict[str, int]) -> list[Requirement]:
    return [
        req("WEVER-TASK-EXPIRY", "MUST", f"A task expires {lim['task_hours']} hours after submission and never outlives either mailbox's expiry",
            at("/retention"), both(check_task_expiry, check_task_capped_by_mailbox), ("task_never_expires", "task_outlives_mailbox")),
        req("WEVER-MAILBOX-EXPIRY", "MUST", f"A mailbox expires {lim['mailbox_days']} days after registration unless renewed",
            at("/retention"), check_mailbox_expiry, ("mailbox_never_expires",)),
        req("WEVER-RENEW", "MUST", f"renew_mailbox gives an unexpired mailbox {lim['mailbox_days']} more days and no new credential",
            at("/actions/renew_mailbox/description"), check_renew, ("renew_ignored", "renew_returns_token")),
        req("WEVER-SEND-TOMBSTONE", "MUST", f"A deleted task's key creates no new work for {lim['tombstone_hours']} hours after submission; then it does",
            at("/retention"), check_tombstone, ("tombstone_forgotten", "tombstone_forever")),
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
