"""Wever Connect limits at their edge and one past it: daily quotas (per mailbox, per
source, service-wide, counted per UTC day), pending caps and the grant caps. With control
they seed the mailboxes they need (``seed_mailboxes``) and start at a UTC midnight.

Without control, a quota of one mailbox is judged on a mailbox of the run's own, whose
every use of the day the run made and counted (uncontrolled.py): the check spends what is left
of it by this run's count, then one more must be refused; it uses the quota up, which
lasts to the end of the UTC day (so these rows run last, on the run's own mailboxes).
Those that need more mailboxes than a source may register in a day (a pending cap of 20
senders, the service-wide quotas, 500 active mailboxes), or a new UTC day, need control."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from conformance.checks.expect import expect_refused, expect_result
from conformance.kit import faults, locate
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, requirement
from conformance.kit.faults import replaces
from conformance.protocols.wever import uncontrolled
from conformance.protocols.wever.answers import ids
from conformance.protocols.wever.client import RECIPIENT, SENDER, STRANGER, WeverClient, fresh_key, seed
from conformance.protocols.wever.reference import RelayError, WeverReference
from conformance.protocols.wever.shared_faults import UNBOUNDED
from conformance.transport.binding import RawToken


def beyond_a_client(ctx: CheckContext, why: str) -> None:
    """Without control: what the check needs, no client can bring about (control does)."""
    if ctx.run.live:
        ctx.needs_control(why)


def one_day(ctx: CheckContext) -> None:
    """Without control, the check's count is the run's since it started: untested across a UTC midnight."""
    if ctx.run.live:
        uncontrolled.day_guard(ctx)


def own_with_least(c: WeverClient, quota: str, fewest: int = 0, exclude: tuple[str, ...] = ()) -> str:
    """The run's own mailbox with least room left on ``quota`` (at least ``fewest``): the
    run made and counted every use of it today. Its use goes to its end: lasting."""
    ctx = c.ctx
    pool = uncontrolled.pool_of(ctx.run)
    own = [m.label for m in pool.open() if m.label not in exclude
           and ctx.run.quotas.room(quota, m.label) >= fewest]
    if not own:
        made = uncontrolled.register(c)
        own = [made.label] if made is not None else []
    if not own:
        raise Untested(f"no mailbox of the run's own has {quota} left to spend, and the source's "
                       f"registrations of the day are spent ({uncontrolled.REGISTRATIONS_SOURCE}): this "
                       "run's count of a configured mailbox would not be the relay's", "quota")
    label = min(own, key=lambda label: ctx.run.quotas.room(quota, label))
    ctx.lasting(label, f"using up {quota} for the UTC day")
    return label


def spread(c: WeverClient, quota: str, count: int, exclude: tuple[str, ...]) -> list[str]:
    """``count`` uses of ``quota`` spread over the run's mailboxes (its own first), each as
    often as it has room: one label per use."""
    ctx = c.ctx
    pool = uncontrolled.pool_of(ctx.run)
    order = [m.label for m in pool.open()] + uncontrolled.configured(ctx)
    out: list[str] = []
    for label in order:
        if label in exclude:
            continue
        out += [label] * min(uncontrolled.room(ctx, quota, label), count - len(out))
        if len(out) == count:
            return out
    raise Untested(f"would exceed {quota}: {count} uses are needed and the run's mailboxes have {len(out)} "
                   "left (a configured mailbox keeps half of each daily quota)", "quota")


def start_of_next_utc_day(c: WeverClient) -> None:
    """Move the relay's clock just past the next UTC midnight, so a quota is filled
    within one UTC day whatever the time."""
    answer = c.ctx.control("now").json()
    if not isinstance(answer, dict) or not isinstance(answer.get("now"), str):
        raise Untested(f"control now answered {str(answer)[:200]}, expected {{now: <ISO time>}}")
    now = datetime.fromisoformat(answer["now"].replace("Z", "+00:00"))
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=5, microsecond=0, tzinfo=UTC)
    c.advance((midnight - now).total_seconds())


# the row whose subject is a plain success of each action a quota row fills its quota with
FILLED_BY = {"send_task": "WEVER-SEND-OFFERED", "request_connection": "WEVER-CONN-LIST",
             "allow_sender": "WEVER-MAILBOX-SENDERS", "new grant": "WEVER-MAILBOX-SENDERS",
             "register_mailbox": "WEVER-REGISTER-TOKEN"}


def fill(ctx: CheckContext, what: str, count: int, call: Callable[[int], Any]) -> None:
    """``count`` calls that the quota allows, each a set-up step (a refused one blocks the
    row, naming the row about that action: ``what`` begins with the action)."""
    by = next((row for action, row in FILLED_BY.items() if what.startswith(action)), "")
    for i in range(count):
        with ctx.setup(f"{what} {i + 1} of {count}", by=by):
            expect_result(ctx, call(i), f"{what} {i + 1} of {count}")


def recipients(c: WeverClient, count: int, senders: list[Any]) -> list[tuple[str, RawToken]]:
    """``count`` seeded mailboxes that advertise the capability and allow every sender
    (a run mailbox by name, or a seeded one as (id, caller))."""
    boxes = seed(c, count, capabilities=[c.capability])
    for _, caller in boxes:
        for sender in senders:
            sender_id = c.mailbox(sender) if isinstance(sender, str) else sender[0]
            with c.ctx.setup("allow_sender as a seeded recipient", by="WEVER-SEND-OFFERED"):
                expect_result(c.ctx,
                              c.call("allow_sender", {"sender_id": sender_id, "allowed": True}, caller),
                              "allow_sender")
    return boxes


def send_to(c: WeverClient, sender: str | RawToken, recipient_id: str) -> Any:
    return c.call("send_task",
                  {"recipient_id": recipient_id, "capability": c.capability, "task": {"message": "quota"}},
                  sender,
                  key=fresh_key())


# ----------------------------------------------------------------------------------
# a mailbox's tasks a day, and the UTC day
# ----------------------------------------------------------------------------------
def live_sent_per_day(c: WeverClient) -> None:
    """Without control: the run's own sender with least room sends what is left of its
    day (by the run's count), spread over recipients with room; one more is refused."""
    ctx = c.ctx
    one_day(ctx)
    sender = own_with_least(c, uncontrolled.SENT)
    left = ctx.run.quotas.room(uncontrolled.SENT, sender)
    targets = spread(c, uncontrolled.RECEIVED, left + 1, exclude=(sender,))
    for recipient in dict.fromkeys(targets):
        c.allow(sender, recipient)
    fill(ctx, f"send_task of {sender}", left, lambda i: send_to(c, sender, c.mailbox(targets[i])))
    expect_refused(ctx, send_to(c, sender, c.mailbox(targets[-1])),
                   f"send_task {ctx.limit(uncontrolled.SENT) + 1} of one sender in one UTC day")
    one_day(ctx)


@requirement(id="WEVER-LIMIT-SENT-PER-DAY", level="MUST",
             title="A mailbox sends at most {limits[sent_tasks_per_mailbox_per_day_count]} tasks a UTC day",
             source=at("/limits/sent_tasks_per_mailbox_per_utc_day"), faults=["sent_quota_off_by_one"],
             lasting=uncontrolled.USES_UP)
def check_sent_per_day(ctx: CheckContext) -> None:
    """The sender's quota: the task past it goes to a recipient with room to spare."""
    c = WeverClient(ctx)
    if ctx.run.live:
        return live_sent_per_day(c)
    quota = ctx.limit("sent_tasks_per_mailbox_per_day_count")
    start_of_next_utc_day(c)
    boxes = recipients(c, 2, [SENDER])
    fill(ctx, "send_task", quota, lambda i: send_to(c, SENDER, boxes[0][0]))
    expect_refused(ctx, send_to(c, SENDER, boxes[1][0]),
                   f"send_task {quota + 1} of one sender in one UTC day")


@check_sent_per_day.fault
def sent_quota_off_by_one(ref: WeverReference) -> None:
    """A mailbox may send one task more a UTC day than sent_tasks_per_mailbox_per_utc_day."""
    ref.limit_values = {**ref.limit_values, uncontrolled.SENT: ref.limit(uncontrolled.SENT) + 1}


def live_received_per_day(c: WeverClient) -> None:
    """Without control: the run's own recipient with least room receives what is left of
    its day, from senders with room; one more (from a sender with room) is refused."""
    ctx = c.ctx
    one_day(ctx)
    recipient = own_with_least(c, uncontrolled.RECEIVED)
    left = ctx.run.quotas.room(uncontrolled.RECEIVED, recipient)
    senders = spread(c, uncontrolled.SENT, left + 1, exclude=(recipient,))
    for sender in dict.fromkeys(senders):
        c.allow(sender, recipient)
    box = c.mailbox(recipient)
    fill(ctx, f"send_task to {recipient}", left, lambda i: send_to(c, senders[i], box))
    expect_refused(ctx, send_to(c, senders[-1], box),
                   f"send_task {ctx.limit(uncontrolled.RECEIVED) + 1} to one recipient in one UTC day")
    one_day(ctx)


@requirement(id="WEVER-LIMIT-RECEIVED-PER-DAY", level="MUST",
             title="A mailbox receives at most {limits[received_tasks_per_mailbox_per_day_count]} tasks a "
             "UTC day",
             source=at("/limits/received_tasks_per_mailbox_per_utc_day"),
             faults=["received_quota_off_by_one"],
             lasting=uncontrolled.USES_UP)
def check_received_per_day(ctx: CheckContext) -> None:
    """The recipient's quota: the task past it comes from a sender with room to spare."""
    c = WeverClient(ctx)
    if ctx.run.live:
        return live_received_per_day(c)
    quota = ctx.limit("received_tasks_per_mailbox_per_day_count")
    start_of_next_utc_day(c)
    senders = seed(c, 3)  # two to fill the quota, a third with room to spare
    (box, _), = recipients(c, 1, senders)
    fill(ctx, "send_task to one recipient", quota, lambda i: send_to(c, senders[i % 2][1], box))
    expect_refused(ctx, send_to(c, senders[2][1], box),
                   f"send_task {quota + 1} to one recipient in one UTC day")


@check_received_per_day.fault
def received_quota_off_by_one(ref: WeverReference) -> None:
    """A mailbox receives one task more than received_tasks_per_mailbox_per_utc_day."""
    ref.limit_values = {**ref.limit_values, uncontrolled.RECEIVED: ref.limit(uncontrolled.RECEIVED) + 1}


@requirement(id="WEVER-LIMIT-UTC-DAY", level="MUST",
             title="Daily quotas count per UTC day: past midnight they start again",
             source=at("/retention"), faults=["quota_never_resets"])
def check_utc_day(ctx: CheckContext) -> None:
    """Quotas count per UTC day: past midnight the sender sends again."""
    beyond_a_client(ctx, "a new UTC day (control advance_clock)")
    c = WeverClient(ctx)
    quota = ctx.limit("sent_tasks_per_mailbox_per_day_count")
    start_of_next_utc_day(c)
    boxes = recipients(c, 2, [SENDER])
    fill(ctx, "send_task", quota, lambda i: send_to(c, SENDER, boxes[0][0]))
    expect_refused(ctx, send_to(c, SENDER, boxes[1][0]), "send_task past the day's quota")
    start_of_next_utc_day(c)
    expect_result(ctx, send_to(c, SENDER, boxes[1][0]), "send_task the next UTC day")


@check_utc_day.fault
def quota_never_resets(ref: WeverReference) -> None:
    """Daily counters are never keyed by the UTC day: a quota once full stays full."""
    @replaces(ref.counter_key)
    def key(original: Any, scope: str, subject: str) -> str:
        return f"every-day|{scope}|{subject}"


# ----------------------------------------------------------------------------------
# connection requests: pending caps and a day's requests
# ----------------------------------------------------------------------------------
def open_recipients(c: WeverClient, count: int) -> list[tuple[str, RawToken]]:
    return seed(c, count, accepts_connection_requests=True)


def request(c: WeverClient, who: str | RawToken, recipient_id: str) -> Any:
    return c.call("request_connection", {"recipient_id": recipient_id}, who)


def respond_all(c: WeverClient, box: tuple[str, RawToken]) -> None:
    """A seeded recipient denies every request its list names (by the request id pattern)."""
    with c.ctx.setup("list the pending requests", by="WEVER-CONN-LIST"):
        listed = expect_result(c.ctx, c.call("list_connection_requests", {}, box[1]),
                               "list_connection_requests")
    for request_id in ids(listed, c.vocab.request_id):
        with c.ctx.setup("answer a pending request", by="WEVER-CONN-RESPOND"):
            expect_result(c.ctx,
                          c.call("respond_connection_request", {"request_id": request_id, "allowed": False},
                                 box[1]),
                          "respond_connection_request")


def live_pending_sender(c: WeverClient) -> None:
    """Without control: a sender of the run's own, whose every request the run made and
    answered, asks opted-in mailboxes it never asked until its pending cap (by the run's
    count), each request pending in its recipient's list; one more is refused."""
    ctx = c.ctx
    cap = ctx.limit(uncontrolled.PENDING_SENDER)
    pool = uncontrolled.pool_of(ctx.run)
    known = uncontrolled.identities(ctx.run)

    def unasked(sender: str) -> list[str]:
        return [label for label in [m.label for m in pool.open()] + uncontrolled.configured(ctx)
                if label != sender and (known[sender][0], known[label][0]) not in pool.pairs
                and uncontrolled.room(ctx, uncontrolled.REQUESTS_RECIPIENT, label) >= 1
                and uncontrolled.room(ctx, uncontrolled.PENDING_RECIPIENT, label) >= 1]

    book = ctx.run.quotas
    own = [m.label for m in pool.open()
           if book.room(uncontrolled.REQUESTS_SENDER, m.label)
           > book.room(uncontrolled.PENDING_SENDER, m.label)]
    if not own:
        raise Untested(f"no mailbox of the run's own has {uncontrolled.REQUESTS_SENDER} left beyond its "
                       "pending cap", "quota")
    sender = max(own, key=lambda label: len(unasked(label)))
    ctx.lasting(sender, f"filling {uncontrolled.PENDING_SENDER}")
    left = ctx.run.quotas.room(uncontrolled.PENDING_SENDER, sender)
    targets = unasked(sender)
    if len(targets) < left + 1:
        raise Untested(f"needs {left + 1} mailboxes accepting connection requests that {sender} never asked; "
                       f"the run has {len(targets)} (a source registers {uncontrolled.REGISTRATIONS_SOURCE} "
                       "a day: control seeds them)", "quota")
    targets = targets[:left + 1]
    for label in targets:
        c.advertise(label, accepts_connection_requests=True)

    def ask(i: int) -> Any:
        reply = request(c, sender, c.mailbox(targets[i]))
        listed = expect_result(ctx, c.call("list_connection_requests", {}, targets[i]),
                               "list_connection_requests")
        made = ids(reply.result, c.vocab.request_id) if reply.ok else []
        if reply.ok and not (made and locate.holds(listed, made[0])):
            ctx.fail(f"request_connection {i + 1}: the request is not pending in {targets[i]}'s list",
                     kind="state_changed")
        return reply

    fill(ctx, f"request_connection of {sender}", left, ask)
    expect_refused(ctx, request(c, sender, c.mailbox(targets[left])),
                   f"request_connection {cap + 1} pending from one sender")


@requirement(id="WEVER-LIMIT-PENDING-REQUESTS-SENDER", level="MUST",
             title="A sender has at most {limits[pending_connection_requests_per_sender_count]} pending "
             "connection requests",
             source=at("/limits/pending_connection_requests_per_sender"),
             faults=[faults.limit("pending_sender_unchecked", uncontrolled.PENDING_SENDER, UNBOUNDED,
                           "A sender may hold any number of pending connection requests.")],
             lasting=uncontrolled.FILLS_PENDING)
def check_pending_sender(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    if ctx.run.live:
        return live_pending_sender(c)
    cap = ctx.limit("pending_connection_requests_per_sender_count")
    boxes = open_recipients(c, cap + 1)
    fill(ctx, "request_connection", cap, lambda i: request(c, SENDER, boxes[i][0]))
    expect_refused(ctx, request(c, SENDER, boxes[cap][0]),
                   f"request_connection {cap + 1} pending from one sender")


@requirement(id="WEVER-LIMIT-REQUESTS-PER-DAY-SENDER", level="MUST",
             title="A sender makes at most {limits[connection_requests_per_sender_per_day_count]} "
                   "connection requests a UTC day, answered or not",
             source=at("/limits/connection_requests_per_sender_per_utc_day"),
             faults=[faults.limit("sender_requests_unbounded", uncontrolled.REQUESTS_SENDER, UNBOUNDED,
                           "Answered requests are not counted against the sender's daily request quota.")])
def check_requests_per_day_sender(ctx: CheckContext) -> None:
    """Answered requests leave the pending cap but still count for the day."""
    beyond_a_client(ctx,
                    "a sender asking more mailboxes than a source may register in a day (control "
                    "seed_mailboxes)")
    c = WeverClient(ctx)
    quota = ctx.limit("connection_requests_per_sender_per_day_count")
    start_of_next_utc_day(c)
    boxes = open_recipients(c, quota + 1)
    for i in range(quota):
        with ctx.setup(f"request_connection {i + 1} of {quota}", by="WEVER-CONN-LIST"):
            expect_result(ctx, request(c, SENDER, boxes[i][0]), "request_connection")
        respond_all(c, boxes[i])  # answered: no longer pending
    expect_refused(ctx, request(c, SENDER, boxes[quota][0]),
                   f"request_connection {quota + 1} of one sender in one UTC day")


@requirement(id="WEVER-LIMIT-PENDING-REQUESTS-RECIPIENT", level="MUST",
             title="A recipient has at most {limits[pending_connection_requests_per_recipient_count]} "
                   "pending connection requests",
             source=at("/limits/pending_connection_requests_per_recipient"),
             faults=[faults.limit("pending_recipient_unchecked", uncontrolled.PENDING_RECIPIENT, UNBOUNDED,
                           "A recipient may hold any number of pending connection requests.")])
def check_pending_recipient(ctx: CheckContext) -> None:
    beyond_a_client(ctx, "more senders than a source may register in a day (control seed_mailboxes)")
    c = WeverClient(ctx)
    cap = ctx.limit("pending_connection_requests_per_recipient_count")
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    senders = seed(c, cap + 1)
    fill(ctx, "request_connection to one recipient", cap,
         lambda i: request(c, senders[i][1], c.mailbox(RECIPIENT)))
    expect_refused(ctx, request(c, senders[cap][1], c.mailbox(RECIPIENT)),
                   f"request_connection {cap + 1} pending to one recipient")


@requirement(id="WEVER-LIMIT-REQUESTS-PER-DAY-RECIPIENT", level="MUST",
             title="A recipient gets at most {limits[connection_requests_per_recipient_per_day_count]} "
                   "connection requests a UTC day, answered or not",
             source=at("/limits/connection_requests_per_recipient_per_utc_day"),
             faults=[faults.limit("recipient_requests_unbounded", uncontrolled.REQUESTS_RECIPIENT, UNBOUNDED,
                           "Answered requests are not counted against the recipient's daily request quota.")])
def check_requests_per_day_recipient(ctx: CheckContext) -> None:
    """Answered requests leave the recipient's pending cap but count for its day."""
    beyond_a_client(ctx, "more senders than a source may register in a day (control seed_mailboxes)")
    c = WeverClient(ctx)
    quota = ctx.limit("connection_requests_per_recipient_per_day_count")
    cap = ctx.limit("pending_connection_requests_per_recipient_count")
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
    expect_refused(ctx, request(c, senders[quota][1], bob[0]),
                   f"request_connection {quota + 1} to one recipient in one UTC day")


# ----------------------------------------------------------------------------------
# the service's day, and its active mailboxes
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-LIMIT-SERVICE-TASKS-PER-DAY", level="MUST",
             title="The relay takes at most {limits[service_tasks_per_day_count]} tasks a UTC day",
             source=at("/limits/service_tasks_per_utc_day"),
             faults=[faults.limit("service_tasks_unbounded", uncontrolled.SERVICE_TASKS, UNBOUNDED,
                                  "No service-wide daily task quota.")])
def check_service_tasks(ctx: CheckContext) -> None:
    """The relay delivers at most service_tasks_per_utc_day tasks a UTC day, whoever sends."""
    beyond_a_client(ctx, "the whole service's day, and more mailboxes than a source may register (control)")
    c = WeverClient(ctx)
    quota = ctx.limit("service_tasks_per_day_count")
    per = min(ctx.limit("sent_tasks_per_mailbox_per_day_count"),
              ctx.limit("received_tasks_per_mailbox_per_day_count"))
    start_of_next_utc_day(c)
    count = -(-quota // per) + 1  # senders (and recipients) enough to reach the service quota, and one spare
    senders = seed(c, count)
    boxes = recipients(c, count, senders)
    fill(ctx, "send_task", quota, lambda i: send_to(c, senders[i // per][1], boxes[i // per][0]))
    expect_refused(ctx, send_to(c, senders[-1][1], boxes[-1][0]),
                   f"task {quota + 1} of the service in one UTC day")


@requirement(id="WEVER-LIMIT-SERVICE-REQUESTS-PER-DAY", level="MUST",
             title="The relay takes at most {limits[service_connection_requests_per_day_count]} "
                   "connection requests a UTC day",
             source=at("/limits/service_connection_requests_per_utc_day"),
             faults=[faults.limit("service_requests_unbounded", uncontrolled.SERVICE_REQUESTS, UNBOUNDED,
                           "No service-wide daily cap on connection requests.")])
def check_service_requests(ctx: CheckContext) -> None:
    """The relay takes at most service_connection_requests_per_utc_day requests a UTC day:
    senders and recipients are spread so that no other cap is reached first (each round,
    every sender asks a recipient it has not asked, then the recipients answer)."""
    beyond_a_client(ctx, "the whole service's day, and more mailboxes than a source may register (control)")
    c = WeverClient(ctx)
    quota = ctx.limit("service_connection_requests_per_day_count")
    per_sender = ctx.limit("connection_requests_per_sender_per_day_count")
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
    expect_refused(ctx, request(c, senders[-1][1], boxes[-1][0]),
                   f"connection request {quota + 1} of the service in one UTC day")


@requirement(id="WEVER-LIMIT-SERVICE-GRANTS-PER-DAY", level="MUST",
             title="The relay creates at most {limits[service_new_sender_grants_per_day_count]} new "
                   "grants a UTC day, regrants included",
             source=at("/limits/service_new_sender_grants_per_utc_day"),
             faults=[faults.limit("service_grants_unbounded", uncontrolled.SERVICE_GRANTS, UNBOUNDED,
                           "No service-wide daily cap on new grants.")])
def check_service_grants(ctx: CheckContext) -> None:
    """The relay creates at most service_new_sender_grants_per_utc_day grants a UTC day,
    across recipients: each recipient allows distinct senders up to its own caps."""
    beyond_a_client(ctx, "the whole service's day, and more mailboxes than a source may register (control)")
    c = WeverClient(ctx)
    quota = ctx.limit("service_new_sender_grants_per_day_count")
    per = min(ctx.limit("new_sender_grants_per_recipient_per_day_count"),
              ctx.limit("allowed_senders_per_mailbox_count"))
    start_of_next_utc_day(c)
    senders = seed(c, per)
    boxes = seed(c, -(-quota // per) + 1)

    def grant(i: int) -> Any:
        return c.call("allow_sender", {"sender_id": senders[i % per][0], "allowed": True}, boxes[i // per][1])

    fill(ctx, "new grant", quota, grant)
    expect_refused(ctx, c.call("allow_sender", {"sender_id": senders[0][0], "allowed": True}, boxes[-1][1]),
                   f"new grant {quota + 1} of the service in one UTC day")


@requirement(id="WEVER-LIMIT-ACTIVE-MAILBOXES", level="MUST",
             title="At most {limits[active_mailboxes_count]} mailboxes are active at once",
             source=at("/limits/active_mailboxes"),
             faults=[faults.limit("active_mailboxes_unbounded", uncontrolled.ACTIVE, UNBOUNDED,
                                  "Any number of active mailboxes.")])
def check_active_mailboxes(ctx: CheckContext) -> None:
    """At most active_mailboxes mailboxes live at once: registration past it is refused."""
    beyond_a_client(ctx, "more mailboxes than a source may register in a day (control seed_mailboxes)")
    c = WeverClient(ctx)
    cap = ctx.limit("active_mailboxes_count")
    start_of_next_utc_day(c)
    seed(c, cap - 3 - 1)  # the three run mailboxes, and room for one registration
    expect_result(ctx, c.open_call("register_mailbox", {"label": "the last one"}),
                  "register_mailbox of the last active mailbox")
    expect_refused(ctx, c.open_call("register_mailbox", {"label": "one too many"}),
                   f"register_mailbox past {cap} active mailboxes")


# ----------------------------------------------------------------------------------
# grants
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-LIMIT-ALLOWED-SENDERS", level="MUST",
             title="A mailbox allows at most {limits[allowed_senders_per_mailbox_count]} senders",
             source=at("/limits/allowed_senders_per_mailbox"),
             faults=[faults.limit("allowed_senders_unbounded", uncontrolled.ALLOWED, UNBOUNDED,
                                  "A mailbox may allow any number of senders.")])
def check_allowed_senders(ctx: CheckContext) -> None:
    beyond_a_client(ctx, "more senders than a source may register in a day (control seed_mailboxes)")
    c = WeverClient(ctx)
    cap = ctx.limit("allowed_senders_per_mailbox_count")
    senders = seed(c, cap + 1)
    fill(ctx, "allow_sender", cap,
         lambda i: c.call("allow_sender", {"sender_id": senders[i][0], "allowed": True}, RECIPIENT))
    expect_refused(ctx, c.call("allow_sender", {"sender_id": senders[cap][0], "allowed": True}, RECIPIENT),
                   f"allow_sender of sender {cap + 1}")


@requirement(id="WEVER-LIMIT-NEW-GRANTS-PER-DAY", level="MUST",
             title="At most {limits[new_sender_grants_per_recipient_per_day_count]} new grants per "
                   "recipient a UTC day, regrants included; no-op retries free; revocation always available",
             source=at("/usage_measurement"), faults=["regrant_not_counted", "revoke_blocked_at_cap"],
             lasting=uncontrolled.USES_UP)
def check_new_grants_per_day(ctx: CheckContext) -> None:
    """New grants, revoke/regrant cycles included, are capped per recipient and UTC day;
    a no-op regrant costs nothing and revocation stays available at the cap. Without
    control: the run's own recipient with least room left (at least one) grants what is
    left of its day, by the run's count."""
    c = WeverClient(ctx)
    quota = ctx.limit("new_sender_grants_per_recipient_per_day_count")
    recipient: Any = RECIPIENT
    granted: Any = SENDER
    if ctx.run.live:
        one_day(ctx)
        recipient = own_with_least(c, uncontrolled.GRANTS, fewest=1)
        granted = next(label for label in (c.label(SENDER), c.label(STRANGER)) if label != recipient)
        c.ungranted(granted, recipient)
        quota = ctx.run.quotas.room(uncontrolled.GRANTS, recipient)
    else:
        start_of_next_utc_day(c)
    sender = {"sender_id": c.mailbox(granted)}
    for i in range(quota):
        with ctx.setup(f"grant {i + 1} of {quota} (a revoke/regrant cycle)", by="WEVER-SEND-OFFERED"):
            expect_result(ctx, c.call("allow_sender", {**sender, "allowed": True}, recipient), "allow_sender")
            if i < quota - 1:
                expect_result(ctx, c.call("allow_sender", {**sender, "allowed": False}, recipient), "revoke")
    with ctx.subcheck("a no-op regrant at the cap"):
        expect_result(ctx, c.call("allow_sender", {**sender, "allowed": True}, recipient),
                      "allow_sender of an allowed sender at the cap")
    with ctx.subcheck("revocation at the cap"):
        expect_result(ctx, c.call("allow_sender", {**sender, "allowed": False}, recipient),
                      "revoke at the cap")
    expect_refused(ctx, c.call("allow_sender", {**sender, "allowed": True}, recipient),
                   f"new grant {ctx.limit(uncontrolled.GRANTS) + 1} in one UTC day")
    one_day(ctx)


@check_new_grants_per_day.fault
def regrant_not_counted(ref: WeverReference) -> None:
    """A revoke/regrant cycle creates the grant again without charging the daily quota."""
    revoked: set[tuple[str, str]] = set()

    @replaces(ref.remove_grant)
    def remove_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        revoked.add((recipient_id, sender_id))
        return bool(original(recipient_id, sender_id))

    @replaces(ref.add_grant)
    def add_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        if (recipient_id, sender_id) in revoked and not ref.has_grant(recipient_id, sender_id):
            ref.s["grants"].setdefault(recipient_id, {})[sender_id] = ref.now()
            return True
        return bool(original(recipient_id, sender_id))


@check_new_grants_per_day.fault
def revoke_blocked_at_cap(ref: WeverReference) -> None:
    """At the daily new-grant cap, revocation is refused too."""
    @replaces(ref.remove_grant)
    def remove_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        if ref.counter("grants_recipient", recipient_id) >= ref.limit(uncontrolled.GRANTS):
            raise RelayError("QUOTA_EXCEEDED", "new_sender_grants_per_recipient reached")
        return bool(original(recipient_id, sender_id))


# ----------------------------------------------------------------------------------
# registrations
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-LIMIT-REGISTRATIONS-PER-SOURCE", level="MUST",
             title="At most {limits[registrations_per_source_per_day_count]} registrations from one source a "
             "UTC day",
             source=at("/limits/registrations_per_source_per_utc_day"),
             faults=[faults.limit("registrations_unbounded", uncontrolled.REGISTRATIONS_SOURCE, UNBOUNDED,
                           "One source may register any number of mailboxes a day.")],
             lasting=uncontrolled.SPENDS_REGISTRATIONS)
def check_registrations_per_source(ctx: CheckContext) -> None:
    """Without control the source registers what is left of its day by this run's count
    (a relay that counted earlier registrations of the source refuses sooner: blocked)."""
    c = WeverClient(ctx)
    quota = ctx.limit("registrations_per_source_per_day_count")
    left = quota
    if ctx.run.live:
        one_day(ctx)
        left = ctx.run.quotas.room(uncontrolled.REGISTRATIONS_SOURCE, uncontrolled.SOURCE)
    else:
        start_of_next_utc_day(c)  # registrations are counted per UTC day
    fill(ctx, "register_mailbox", left,
         lambda i: c.open_call("register_mailbox", {"label": f"conformance {i}"}))
    expect_refused(ctx, c.open_call("register_mailbox", {"label": "one too many"}),
                   f"register_mailbox {quota + 1} from one source")
    one_day(ctx)
