"""Wever Connect limits at their edge and one past it: daily quotas (per mailbox, per
source, service-wide, counted per UTC day), pending caps and the grant caps. Most need
many mailboxes, which a live relay's registration quotas forbid: they seed them through
the control interface (``seed_mailboxes``), and are untested without one."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from conformance.checks.errors import expect_refused, expect_result
from conformance.model import Requirement
from conformance.protocols.wever.client import RECIPIENT, SENDER, WeverClient, fresh_key
from conformance.protocols.wever.reads import ids
from conformance.runner import CheckContext, Untested
from conformance.transport.binding import RawToken


def limit(ctx: CheckContext, name: str) -> int:
    return int(ctx.profile.limits[name].value)


def seed(c: WeverClient, count: int, **fields: Any) -> list[tuple[str, RawToken]]:
    """``count`` extra mailboxes (control seed_mailboxes): (id, caller)."""
    made = c.ctx.control("seed_mailboxes", count=count, **fields).json()
    boxes = made.get("mailboxes") if isinstance(made, dict) else None
    seeded = [(str(m["id"]), RawToken(str(m["token"]))) for m in boxes or [] if isinstance(m, dict) and m.get("id") and m.get("token")]
    if len(seeded) != count:
        raise Untested(f"control seed_mailboxes answered {str(made)[:200]}, expected {count} mailboxes {{id, token}}")
    return seeded


def start_of_next_utc_day(c: WeverClient) -> None:
    """Move the relay's clock just past the next UTC midnight, so a quota is filled
    within one UTC day whatever the time."""
    answer = c.ctx.control("now").json()
    if not isinstance(answer, dict) or not isinstance(answer.get("now"), str):
        raise Untested(f"control now answered {str(answer)[:200]}, expected {{now: <ISO time>}}")
    now = datetime.fromisoformat(answer["now"].replace("Z", "+00:00"))
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=5, microsecond=0, tzinfo=UTC)
    c.advance((midnight - now).total_seconds())


def fill(ctx: CheckContext, what: str, count: int, call: Callable[[int], Any]) -> None:
    """``count`` calls that the quota allows, each a set-up step."""
    for i in range(count):
        with ctx.setup(f"{what} {i + 1} of {count}", by="WEVER-SEND-OFFERED"):
            expect_result(ctx, call(i), f"{what} {i + 1} of {count}")


def recipients(c: WeverClient, count: int, senders: list[Any]) -> list[tuple[str, RawToken]]:
    """``count`` seeded mailboxes that advertise the capability and allow every sender
    (a run mailbox by name, or a seeded one as (id, caller))."""
    boxes = seed(c, count, capabilities=[c.capability])
    for _, caller in boxes:
        for sender in senders:
            sender_id = c.mailbox(sender) if isinstance(sender, str) else sender[0]
            with c.ctx.setup("allow_sender as a seeded recipient", by="WEVER-SEND-OFFERED"):
                expect_result(c.ctx, c.call("allow_sender", {"sender_id": sender_id, "allowed": True}, caller), "allow_sender")
    return boxes


def send_to(c: WeverClient, sender: str | RawToken, recipient_id: str) -> Any:
    return c.call("send_task", {"recipient_id": recipient_id, "capability": c.capability, "task": {"message": "quota"}}, sender,
                  key=fresh_key())


def check_sent_per_day(ctx: CheckContext) -> None:
    """The sender's quota: the task past it goes to a recipient with room to spare."""
    c = WeverClient(ctx)
    quota = limit(ctx, "sent_tasks_per_mailbox_per_day_count")
    start_of_next_utc_day(c)
    boxes = recipients(c, 2, [SENDER])
    fill(ctx, "send_task", quota, lambda i: send_to(c, SENDER, boxes[0][0]))
    expect_refused(ctx, send_to(c, SENDER, boxes[1][0]), f"send_task {quota + 1} of one sender in one UTC day")


def check_received_per_day(ctx: CheckContext) -> None:
    """The recipient's quota: the task past it comes from a sender with room to spare."""
    c = WeverClient(ctx)
    quota = limit(ctx, "received_tasks_per_mailbox_per_day_count")
    start_of_next_utc_day(c)
    senders = seed(c, 3)  # two to fill the quota, a third with room to spare
    (box, _), = recipients(c, 1, senders)
    fill(ctx, "send_task to one recipient", quota, lambda i: send_to(c, senders[i % 2][1], box))
    expect_refused(ctx, send_to(c, senders[2][1], box), f"send_task {quota + 1} to one recipient in one UTC day")


def check_utc_day(ctx: CheckContext) -> None:
    """Quotas count per UTC day: past midnight the sender sends again."""
    c = WeverClient(ctx)
    quota = limit(ctx, "sent_tasks_per_mailbox_per_day_count")
    start_of_next_utc_day(c)
    boxes = recipients(c, 2, [SENDER])
    fill(ctx, "send_task", quota, lambda i: send_to(c, SENDER, boxes[0][0]))
    expect_refused(ctx, send_to(c, SENDER, boxes[1][0]), "send_task past the day's quota")
    start_of_next_utc_day(c)
    expect_result(ctx, send_to(c, SENDER, boxes[1][0]), "send_task the next UTC day")


def open_recipients(c: WeverClient, count: int) -> list[tuple[str, RawToken]]:
    return seed(c, count, accepts_connection_requests=True)


def request(c: WeverClient, who: str | RawToken, recipient_id: str) -> Any:
    return c.call("request_connection", {"recipient_id": recipient_id}, who)


def respond_all(c: WeverClient, box: tuple[str, RawToken]) -> None:
    """A seeded recipient denies every request its list names (by the request id pattern)."""
    with c.ctx.setup("list the pending requests", by="WEVER-CONN-LIST"):
        listed = expect_result(c.ctx, c.call("list_connection_requests", {}, box[1]), "list_connection_requests")
    for request_id in ids(listed, c.vocab.request_id):
        with c.ctx.setup("answer a pending request", by="WEVER-CONN-RESPOND"):
            expect_result(c.ctx, c.call("respond_connection_request", {"request_id": request_id, "allowed": False}, box[1]),
                          "respond_connection_request")


def check_pending_sender(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    cap = limit(ctx, "pending_connection_requests_per_sender_count")
    boxes = open_recipients(c, cap + 1)
    fill(ctx, "request_connection", cap, lambda i: request(c, SENDER, boxes[i][0]))
    expect_refused(ctx, request(c, SENDER, boxes[cap][0]), f"request_connection {cap + 1} pending from one sender")


def check_requests_per_day_sender(ctx: CheckContext) -> None:
    """Answered requests leave the pending cap but still count for the day."""
    c = WeverClient(ctx)
    quota = limit(ctx, "connection_requests_per_sender_per_day_count")
    start_of_next_utc_day(c)
    boxes = open_recipients(c, quota + 1)
    for i in range(quota):
        with ctx.setup(f"request_connection {i + 1} of {quota}", by="WEVER-CONN-LIST"):
            expect_result(ctx, request(c, SENDER, boxes[i][0]), "request_connection")
        respond_all(c, boxes[i])  # answered: no longer pending
    expect_refused(ctx, request(c, SENDER, boxes[quota][0]), f"request_connection {quota + 1} of one sender in one UTC day")


def check_pending_recipient(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    cap = limit(ctx, "pending_connection_requests_per_recipient_count")
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    senders = seed(c, cap + 1)
    fill(ctx, "request_connection to one recipient", cap, lambda i: request(c, senders[i][1], c.mailbox(RECIPIENT)))
    expect_refused(ctx, request(c, senders[cap][1], c.mailbox(RECIPIENT)), f"request_connection {cap + 1} pending to one recipient")


def check_requests_per_day_recipient(ctx: CheckContext) -> None:
    """Answered requests leave the recipient's pending cap but count for its day."""
    c = WeverClient(ctx)
    quota, cap = limit(ctx, "connection_requests_per_recipient_per_day_count"), limit(ctx, "pending_connection_requests_per_recipient_count")
    start_of_next_utc_day(c)
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    bob = (c.mailbox(RECIPIENT), RawToken(c.token(RECIPIENT)))
    senders = seed(c, quota + 1)
    for i in range(quota):
        with ctx.setup(f"request_connection {i + 1} of {quota} to one recipient", by="WEVER-CONN-LIST"):
            expect_result(ctx, request(c, senders[i][1], bob[0]), "request_connection")
        if (i + 1) % cap == 0:
            respond_all(c, bob)
    respond_all(c, bob)
    expect_refused(ctx, request(c, senders[quota][1], bob[0]), f"request_connection {quota + 1} to one recipient in one UTC day")


def check_service_tasks(ctx: CheckContext) -> None:
    """The relay delivers at most service_tasks_per_utc_day tasks a UTC day, whoever sends."""
    c = WeverClient(ctx)
    quota = limit(ctx, "service_tasks_per_day_count")
    per = min(limit(ctx, "sent_tasks_per_mailbox_per_day_count"), limit(ctx, "received_tasks_per_mailbox_per_day_count"))
    start_of_next_utc_day(c)
    count = -(-quota // per) + 1  # senders (and recipients) enough to reach the service quota, and one spare
    senders = seed(c, count)
    boxes = recipients(c, count, senders)
    fill(ctx, "send_task", quota, lambda i: send_to(c, senders[i // per][1], boxes[i // per][0]))
    expect_refused(ctx, send_to(c, senders[-1][1], boxes[-1][0]), f"task {quota + 1} of the service in one UTC day")


def check_service_requests(ctx: CheckContext) -> None:
    """The relay takes at most service_connection_requests_per_utc_day requests a UTC day:
    senders and recipients are spread so that no other cap is reached first (each round,
    every sender asks a recipient it has not asked, then the recipients answer)."""
    c = WeverClient(ctx)
    quota = limit(ctx, "service_connection_requests_per_day_count")
    per_sender = limit(ctx, "connection_requests_per_sender_per_day_count")
    senders_count = -(-quota // per_sender)
    recipients_count = per_sender
    start_of_next_utc_day(c)
    senders = seed(c, senders_count + 1)
    boxes = open_recipients(c, recipients_count + 1)
    made = 0
    for round_no in range(per_sender):
        for s in range(senders_count):
            if made == quota:
                break
            target = boxes[(s + round_no) % recipients_count]
            with ctx.setup(f"connection request {made + 1} of the service's {quota}", by="WEVER-CONN-LIST"):
                expect_result(ctx, request(c, senders[s][1], target[0]), "request_connection")
            made += 1
        for box in boxes[:recipients_count]:
            respond_all(c, box)
    expect_refused(ctx, request(c, senders[-1][1], boxes[-1][0]), f"connection request {quota + 1} of the service in one UTC day")


def check_service_grants(ctx: CheckContext) -> None:
    """The relay creates at most service_new_sender_grants_per_utc_day grants a UTC day,
    across recipients: each recipient allows distinct senders up to its own caps."""
    c = WeverClient(ctx)
    quota = limit(ctx, "service_new_sender_grants_per_day_count")
    per = min(limit(ctx, "new_sender_grants_per_recipient_per_day_count"), limit(ctx, "allowed_senders_per_mailbox_count"))
    start_of_next_utc_day(c)
    senders = seed(c, per)
    boxes = seed(c, -(-quota // per) + 1)

    def grant(i: int) -> Any:
        return c.call("allow_sender", {"sender_id": senders[i % per][0], "allowed": True}, boxes[i // per][1])

    fill(ctx, "new grant", quota, grant)
    expect_refused(ctx, c.call("allow_sender", {"sender_id": senders[0][0], "allowed": True}, boxes[-1][1]),
                   f"new grant {quota + 1} of the service in one UTC day")


def check_active_mailboxes(ctx: CheckContext) -> None:
    """At most active_mailboxes mailboxes live at once: registration past it is refused."""
    c = WeverClient(ctx)
    cap = limit(ctx, "active_mailboxes_count")
    start_of_next_utc_day(c)
    seed(c, cap - 3 - 1)  # the three run mailboxes, and room for one registration
    expect_result(ctx, c.open_call("register_mailbox", {"label": "the last one"}), "register_mailbox of the last active mailbox")
    expect_refused(ctx, c.open_call("register_mailbox", {"label": "one too many"}), f"register_mailbox past {cap} active mailboxes")


def check_allowed_senders(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    cap = limit(ctx, "allowed_senders_per_mailbox_count")
    senders = seed(c, cap + 1)
    fill(ctx, "allow_sender", cap, lambda i: c.call("allow_sender", {"sender_id": senders[i][0], "allowed": True}, RECIPIENT))
    expect_refused(ctx, c.call("allow_sender", {"sender_id": senders[cap][0], "allowed": True}, RECIPIENT),
                   f"allow_sender of sender {cap + 1}")


def check_new_grants_per_day(ctx: CheckContext) -> None:
    """New grants, revoke/regrant cycles included, are capped per recipient and UTC day;
    a no-op regrant costs nothing and revocation stays available at the cap."""
    c = WeverClient(ctx)
    quota = limit(ctx, "new_sender_grants_per_recipient_per_day_count")
    start_of_next_utc_day(c)
    sender = {"sender_id": c.mailbox(SENDER)}
    for i in range(quota):
        with ctx.setup(f"grant {i + 1} of {quota} (a revoke/regrant cycle)", by="WEVER-SEND-OFFERED"):
            expect_result(ctx, c.call("allow_sender", {**sender, "allowed": True}, RECIPIENT), "allow_sender")
            if i < quota - 1:
                expect_result(ctx, c.call("allow_sender", {**sender, "allowed": False}, RECIPIENT), "revoke")
    with ctx.subcheck("a no-op regrant at the cap"):
        expect_result(ctx, c.call("allow_sender", {**sender, "allowed": True}, RECIPIENT), "allow_sender of an allowed sender at the cap")
    with ctx.subcheck("revocation at the cap"):
        expect_result(ctx, c.call("allow_sender", {**sender, "allowed": False}, RECIPIENT), "revoke at the cap")
    expect_refused(ctx, c.call("allow_sender", {**sender, "allowed": True}, RECIPIENT), f"new grant {quota + 1} in one UTC day")


def check_registrations_per_source(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    quota = limit(ctx, "registrations_per_source_per_day_count")
    start_of_next_utc_day(c)  # registrations are counted per UTC day
    fill(ctx, "register_mailbox", quota, lambda i: c.open_call("register_mailbox", {"label": f"conformance {i}"}))
    expect_refused(ctx, c.open_call("register_mailbox", {"label": "one too many"}), f"register_mailbox {quota + 1} from one source")


def rows(req: Callable[..., Requirement], at: Callable[..., Any], lim: dict[str, int]) -> list[Requirement]:
    return [
        req("WEVER-LIMIT-SENT-PER-DAY", "MUST", f"A mailbox sends at most {lim['sent_tasks_per_mailbox_per_day_count']} tasks a UTC day",
            at("/limits/sent_tasks_per_mailbox_per_utc_day"), check_sent_per_day, ("sent_quota_off_by_one",)),
        req("WEVER-LIMIT-RECEIVED-PER-DAY", "MUST", f"A mailbox receives at most {lim['received_tasks_per_mailbox_per_day_count']} tasks a UTC day",
            at("/limits/received_tasks_per_mailbox_per_utc_day"), check_received_per_day, ("received_quota_off_by_one",)),
        req("WEVER-LIMIT-UTC-DAY", "MUST", "Daily quotas count per UTC day: past midnight they start again",
            at("/retention"), check_utc_day, ("quota_never_resets",)),
        req("WEVER-LIMIT-PENDING-REQUESTS-SENDER", "MUST", f"A sender has at most {lim['pending_connection_requests_per_sender_count']} pending connection requests",
            at("/limits/pending_connection_requests_per_sender"), check_pending_sender, ("pending_sender_unchecked",)),
        req("WEVER-LIMIT-REQUESTS-PER-DAY-SENDER", "MUST", f"A sender makes at most {lim['connection_requests_per_sender_per_day_count']} connection requests a UTC day, answered or not",
            at("/limits/connection_requests_per_sender_per_utc_day"), check_requests_per_day_sender, ("sender_requests_unbounded",)),
        req("WEVER-LIMIT-PENDING-REQUESTS-RECIPIENT", "MUST", f"A recipient has at most {lim['pending_connection_requests_per_recipient_count']} pending connection requests",
            at("/limits/pending_connection_requests_per_recipient"), check_pending_recipient, ("pending_recipient_unchecked",)),
        req("WEVER-LIMIT-REQUESTS-PER-DAY-RECIPIENT", "MUST", f"A recipient gets at most {lim['connection_requests_per_recipient_per_day_count']} connection requests a UTC day, answered or not",
            at("/limits/connection_requests_per_recipient_per_utc_day"), check_requests_per_day_recipient, ("recipient_requests_unbounded",)),
        req("WEVER-LIMIT-SERVICE-TASKS-PER-DAY", "MUST", f"The relay takes at most {lim['service_tasks_per_day_count']} tasks a UTC day",
            at("/limits/service_tasks_per_utc_day"), check_service_tasks, ("service_tasks_unbounded",)),
        req("WEVER-LIMIT-SERVICE-REQUESTS-PER-DAY", "MUST", f"The relay takes at most {lim['service_connection_requests_per_day_count']} connection requests a UTC day",
            at("/limits/service_connection_requests_per_utc_day"), check_service_requests, ("service_requests_unbounded",)),
        req("WEVER-LIMIT-SERVICE-GRANTS-PER-DAY", "MUST", f"The relay creates at most {lim['service_new_sender_grants_per_day_count']} new grants a UTC day, regrants included",
            at("/limits/service_new_sender_grants_per_utc_day"), check_service_grants, ("service_grants_unbounded",)),
        req("WEVER-LIMIT-ACTIVE-MAILBOXES", "MUST", f"At most {lim['active_mailboxes_count']} mailboxes are active at once",
            at("/limits/active_mailboxes"), check_active_mailboxes, ("active_mailboxes_unbounded",)),
        req("WEVER-LIMIT-ALLOWED-SENDERS", "MUST", f"A mailbox allows at most {lim['allowed_senders_per_mailbox_count']} senders",
            at("/limits/allowed_senders_per_mailbox"), check_allowed_senders, ("allowed_senders_unbounded",)),
        req("WEVER-LIMIT-NEW-GRANTS-PER-DAY", "MUST", f"At most {lim['new_sender_grants_per_recipient_per_day_count']} new grants per recipient a UTC day, regrants included; no-op retries free; revocation always available",
            at("/usage_measurement"), check_new_grants_per_day, ("regrant_not_counted", "revoke_blocked_at_cap")),
        req("WEVER-LIMIT-REGISTRATIONS-PER-SOURCE", "MUST", f"At most {lim['registrations_per_source_per_day_count']} registrations from one source a UTC day",
            at("/limits/registrations_per_source_per_utc_day"), check_registrations_per_source, ("registrations_unbounded",)),
    ]

