"""Wever Connect over time: task, request and mailbox expiry, renewal, retry tombstones
and closing a mailbox. Time moves through the control interface (``advance_clock``);
without one these are untested (the shortest wait, a connection request's, is a day),
before they send anything. Closing a mailbox runs without control on a mailbox of the
run's own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from conformance.checks.expect import expect_refused, expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import replaces
from conformance.protocols.wever import uncontrolled
from conformance.protocols.wever.answers import marked, named_values
from conformance.protocols.wever.client import RECIPIENT, SENDER, STRANGER, Task, WeverClient, fresh_key
from conformance.protocols.wever.reference import Call, WeverReference
from conformance.protocols.wever.shared_faults import UNBOUNDED
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


def in_turn(ctx: CheckContext, *checks: Callable[[CheckContext], None]) -> None:
    """Each of ``checks``, a sub-check named by the first line of its docstring."""
    for one in checks:
        with ctx.subcheck((one.__doc__ or one.__name__).strip().splitlines()[0]):
            one(ctx)


# ----------------------------------------------------------------------------------
# tasks
# ----------------------------------------------------------------------------------
def check_task_expiry(ctx: CheckContext) -> None:
    """A task lives task_hours after submission, then is gone (purge timing aside)."""
    needs_clock(ctx, "task_hours")
    c = WeverClient(ctx)
    life = hours(ctx, "task_hours") * HOUR_S
    task = c.new_task("offered")
    c.advance(life - MINUTE_S)
    ctx.expect(not gone(c, task), f"the task is gone a minute before its {life // HOUR_S} hours are up")
    c.advance(2 * MINUTE_S + HOUR_S)  # past the expiry and one hourly purge
    ctx.expect(gone(c, task),
               f"the task is still readable {life // HOUR_S} hours and an hour after submission")
    ctx.expect(task.id not in c.inbox_ids(RECIPIENT), "an expired task is still in the inbox")


def check_task_capped_by_mailbox(ctx: CheckContext) -> None:
    """A task never outlives either mailbox's expiry at submission."""
    needs_clock(ctx, "mailbox_days")
    c = WeverClient(ctx)
    mailbox_s = hours(ctx, "mailbox_days") * DAY_S
    c.allow(SENDER, RECIPIENT)
    c.advance(mailbox_s - 2 * HOUR_S)  # both mailboxes have two hours left
    data, marker = c.marked()
    task = replace(c.task_of(c.send(SENDER, RECIPIENT, data=data),
                             "send_task two hours before the mailboxes expire"), marker=marker)
    expect_result(ctx, c.call("renew_mailbox", {}, SENDER), "renew_mailbox of the sender")
    c.advance(3 * HOUR_S + HOUR_S)  # past the recipient's expiry (and a purge)
    ctx.expect(gone(c, task, SENDER), "a task outlived its recipient's mailbox expiry at submission")


@requirement(id="WEVER-TASK-EXPIRY", level="MUST",
             title="A task expires {limits[task_hours]} hours after submission and never outlives either "
             "mailbox's expiry",
             source=at("/retention"), faults=["task_never_expires", "task_outlives_mailbox"],
             lasting=uncontrolled.RENEWS)
def check_task_lifetime(ctx: CheckContext) -> None:
    """Its expiry, and the cap either mailbox's expiry puts on it."""
    in_turn(ctx, check_task_expiry, check_task_capped_by_mailbox)


@check_task_lifetime.fault
def task_never_expires(ref: WeverReference) -> None:
    """Tasks live for ever."""
    @replaces(ref.task_expiry)
    def expiry(original: Any, sender: dict[str, Any], recipient: dict[str, Any], now: float) -> float:
        return now + UNBOUNDED


@check_task_lifetime.fault
def task_outlives_mailbox(ref: WeverReference) -> None:
    """A task lives task_hours whatever the mailboxes' expiry at submission."""
    @replaces(ref.task_expiry)
    def expiry(original: Any, sender: dict[str, Any], recipient: dict[str, Any], now: float) -> float:
        return now + ref.limit("task_hours") * HOUR_S


@requirement(id="WEVER-SEND-TOMBSTONE", level="MUST",
             title="A deleted or expired task's key creates no new work for {limits[tombstone_hours]} "
                   "hours after submission; then it does",
             source=at("/retention"),
             faults=["tombstone_forgotten", "tombstone_forever", "expired_key_forgotten"])
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
        expect_refused(ctx, c.send(SENDER, RECIPIENT, data=data, key=key),
                       "send_task reusing a deleted task's key")
        watch.nothing_delivered(marker, "a retry under a deleted task's key")
    with ctx.subcheck("an expired task's key"):
        c.advance(hours(ctx, "task_hours") * HOUR_S + HOUR_S)  # the task expired; its tombstone lives on
        watch = c.watch(RECIPIENT)
        expect_refused(ctx, c.send(SENDER, RECIPIENT, data=late_data, key=late_key),
                       "send_task reusing an expired task's key")
        watch.nothing_delivered(late_marker, "a retry under an expired task's key")
    # past the tombstone; mailboxes live longer
    c.advance((hours(ctx, "tombstone_hours") - hours(ctx, "task_hours")) * HOUR_S)
    new = c.task_of(c.send(SENDER, RECIPIENT, data=data, key=key),
                    "send_task with the key after its tombstone expired")
    ctx.expect(new.id != task.id, "after the tombstone the key still names the deleted task")


@check_tombstone.fault
def tombstone_forgotten(ref: WeverReference) -> None:
    """Deleting a task's content drops its key: a retry creates new work at once."""
    @replaces(ref.erase_content)
    def erase(original: Any, task: dict[str, Any]) -> None:
        original(task)
        for key in [k for k, record in ref.s["keys"].items() if record["task_id"] == task["task_id"]]:
            del ref.s["keys"][key]


@check_tombstone.fault
def tombstone_forever(ref: WeverReference) -> None:
    """Retry tombstones never expire: a deleted task's key is unusable for ever."""
    @replaces(ref.tombstone_expiry)
    def expiry(original: Any, created_at: float) -> float:
        return created_at + UNBOUNDED


@check_tombstone.fault
def expired_key_forgotten(ref: WeverReference) -> None:
    """A retry under the key of a task that expired (its tombstone still alive) creates new
    work, instead of finding the expired work unavailable (deleted tasks still are)."""
    @replaces(ref.replay_for_key)
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        record = ref.s["keys"].get(ref.key_id(sender_id, key))
        if record is not None and record["task_id"] not in ref.s["tasks"]:
            return None
        result: dict[str, Any] | None = original(sender_id, key, body)
        return result


# ----------------------------------------------------------------------------------
# mailboxes
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-MAILBOX-EXPIRY", level="MUST",
             title="A mailbox expires {limits[mailbox_days]} days after registration unless renewed",
             source=at("/retention"), faults=["mailbox_never_expires"])
def check_mailbox_expiry(ctx: CheckContext) -> None:
    needs_clock(ctx, "mailbox_days")
    c = WeverClient(ctx)
    life = hours(ctx, "mailbox_days") * DAY_S
    c.advance(life - HOUR_S)
    expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox an hour before expiry")
    c.advance(2 * HOUR_S)
    expect_refused(ctx, c.call("get_mailbox", {}, RECIPIENT),
                   f"get_mailbox {life // DAY_S} days and an hour after registration")


@check_mailbox_expiry.fault
def mailbox_never_expires(ref: WeverReference) -> None:
    """Mailboxes live for ever."""
    @replaces(ref.mailbox_expiry)
    def expiry(original: Any, now: float) -> float:
        return now + UNBOUNDED


@requirement(id="WEVER-RENEW", level="MUST",
             title="renew_mailbox gives an unexpired mailbox {limits[mailbox_days]} more days and no new "
             "credential",
             source=at("/actions/renew_mailbox/description"), faults=["renew_ignored", "renew_returns_token"],
             lasting=uncontrolled.RENEWS)
def check_renew(ctx: CheckContext) -> None:
    """renew_mailbox gives an unexpired mailbox mailbox_days more, and no new credential."""
    needs_clock(ctx, "mailbox_days")
    c = WeverClient(ctx)
    life = hours(ctx, "mailbox_days") * DAY_S
    field = c.vocab.token_field
    c.advance(life - DAY_S)
    renewed = expect_result(ctx, c.call("renew_mailbox", {}, RECIPIENT), "renew_mailbox a day before expiry")
    ctx.expect(not named_values(renewed, field), f"renew_mailbox returned a credential ({field}); it returns "
               f"none: {json_excerpt(renewed)}", kind="schema_mismatch")
    c.advance(2 * DAY_S)
    expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT),
                  "get_mailbox a day after the original expiry, renewed")
    with ctx.subcheck("an expired mailbox"):
        c.advance(life)
        expect_refused(ctx, c.call("renew_mailbox", {}, STRANGER), "renew_mailbox of an expired mailbox")


@check_renew.fault
def renew_ignored(ref: WeverReference) -> None:
    """renew_mailbox answers the new expiry but leaves the old one in force."""
    @replaces(ref.act_renew_mailbox)
    def renew(original: Any, call: Call) -> dict[str, Any]:
        box = ref.active_mailbox(str(call.caller))
        kept = box["expires_at"]
        answer = dict(original(call))
        box["expires_at"] = kept
        return answer


@check_renew.fault
def renew_returns_token(ref: WeverReference) -> None:
    """renew_mailbox hands out a new credential."""
    @replaces(ref.act_renew_mailbox)
    def renew(original: Any, call: Call) -> dict[str, Any]:
        field = ref.a2a["access_setup"]["token_response_field"]
        return {**original(call), field: ref.new_token()}


@requirement(id="WEVER-CLOSE-MAILBOX", level="MUST",
             title="close_mailbox revokes the token, removes profile and grants, and erases shared task "
                   "content for both sides",
             source=at("/actions/close_mailbox/description"),
             faults=["close_keeps_content", "close_keeps_grants"],
             lasting=uncontrolled.CLOSES)
def check_close_mailbox(ctx: CheckContext) -> None:
    """Closing a mailbox revokes its token, removes its profile and grants, and erases
    the shared content of its tasks for both sides."""
    # the recipient closes: without control, a mailbox of the run's own
    c = WeverClient(ctx, victim=RECIPIENT)
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
        ctx.expect(not locate.holds(mine, c.mailbox(RECIPIENT)), "a grant to a closed mailbox remains: "
                   f"get_mailbox of the mailbox that allowed it still names {c.mailbox(RECIPIENT)}: "
                   f"{json_excerpt(mine)}")
    with ctx.subcheck("shared content"):
        ctx.expect(gone(c, task, SENDER), "the other participant still reads a closed mailbox's task content")


@check_close_mailbox.fault
def close_keeps_content(ref: WeverReference) -> None:
    """close_mailbox leaves the shared content of its tasks readable."""
    closing = [False]

    @replaces(ref.act_close_mailbox)
    def close(original: Any, call: Call) -> dict[str, Any]:
        closing[0] = True
        try:
            return dict(original(call))
        finally:
            closing[0] = False

    @replaces(ref.erase_content)
    def erase(original: Any, task: dict[str, Any]) -> None:
        if not closing[0]:
            original(task)


@check_close_mailbox.fault
def close_keeps_grants(ref: WeverReference) -> None:
    """close_mailbox keeps the grants others gave the closed mailbox."""
    @replaces(ref.retire_mailbox)
    def retire(original: Any, mailbox_id: str) -> None:
        given = {r: dict(senders) for r, senders in ref.s["grants"].items() if mailbox_id in senders}
        original(mailbox_id)
        for recipient, senders in given.items():
            ref.s["grants"].setdefault(recipient, {})[mailbox_id] = senders[mailbox_id]


# ----------------------------------------------------------------------------------
# connection requests
# ----------------------------------------------------------------------------------
def check_conn_expiry(ctx: CheckContext) -> None:
    needs_clock(ctx, "connection_request_hours")
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    first = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                         "request_connection")
    c.advance(hours(ctx, "connection_request_hours") * HOUR_S + HOUR_S)
    listed = expect_result(ctx, c.call("list_connection_requests", {}, RECIPIENT), "list_connection_requests")
    ctx.expect(not locate.holds(listed, first),
               f"list_connection_requests still shows the expired request {first}")
    again = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                         "request_connection after expiry")
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
    ctx.expect(not locate.holds(listed, request),
               f"the connection request {request} outlived its sender's mailbox")


@requirement(id="WEVER-CONN-EXPIRY", level="MUST",
             title="A connection request expires after {limits[connection_request_hours]} hours",
             source=at("/limits/connection_request_hours"),
             faults=["requests_never_expire", "request_outlives_mailbox"],
             lasting=uncontrolled.RENEWS)
def check_request_lifetime(ctx: CheckContext) -> None:
    """Its expiry, and the cap its mailboxes' expiry puts on it."""
    in_turn(ctx, check_conn_expiry, check_conn_capped_by_mailbox)


@check_request_lifetime.fault
def requests_never_expire(ref: WeverReference) -> None:
    """Connection requests live as long as the mailboxes."""
    @replaces(ref.request_expiry)
    def expiry(original: Any, sender: dict[str, Any], recipient: dict[str, Any], now: float) -> float:
        return min(sender["expires_at"], recipient["expires_at"])


@check_request_lifetime.fault
def request_outlives_mailbox(ref: WeverReference) -> None:
    """A connection request lives its hours whatever the mailboxes' expiry, and stays
    when its sender's mailbox expires."""
    @replaces(ref.request_expiry)
    def expiry(original: Any, sender: dict[str, Any], recipient: dict[str, Any], now: float) -> float:
        return now + ref.limit("connection_request_hours") * HOUR_S


    @replaces(ref.retire_mailbox)
    def retire(original: Any, mailbox_id: str) -> None:
        kept = dict(ref.s["requests"])
        original(mailbox_id)
        ref.s["requests"] = kept
