"""Wever Connect against a relay without control (conformance/kit/live.py): the run's own
mailboxes, who plays which part in a check, what each call spends of the manifest's
quotas, and what a check changed that is put back when it ends.

- **The run's own mailboxes** (``Pool``): every mailbox the run registers is adopted
  (``ctx.adopt``): it is the run's to use up, close or change. The manifest lets a
  source register ``registrations_per_source_per_utc_day`` a day, so the rows that
  register as their subject run first and their mailboxes serve the rest.
- **Parts, not names** (``choose_cast``): checks name a part (``sender``, ``recipient``,
  ``stranger``); with control they are the configured alice, bob and carol (the relay
  is reset before each check), without control the mailboxes with most room on the
  quotas the part spends, the run's own first, and pairs that never exchanged a
  connection request (a retained request lives 24 hours and cannot be undone).
- **Quotas** (``Books.call``): before each call that spends a quota the manifest names,
  ``ctx.spend`` for whom it spends (a task: the sender's sent, the recipient's received
  and the service's tasks); a call the relay refuses, or a retry under a key the run
  already used, spends nothing. A configured mailbox keeps half of each of its daily
  quotas: the run spends at most the other half.
- **Put back** (``ctx.put_back``): the first change a check makes to a grant or a
  mailbox profile registers its undo (the state read before, over the protocol:
  get_mailbox names the allowed sender ids and the profile's members), and a
  connection request it made is denied when the check ends, so every check starts
  from what the configured mailboxes hold and no request stays pending.
- **What the run cannot know** is not judged: its count of a quota is the relay's only
  for a mailbox it registered and within one UTC day (``day_guard``), and a connection
  request is certainly new only between a mailbox of its own and one it did not ask yet
  (``WeverClient.new_pair``); otherwise the check blocks or stays untested, never fails."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from conformance.documents.schemas import validator_for
from conformance.kit import locate
from conformance.kit.check import CheckContext, RunContext, Untested
from conformance.protocols.wever.answers import ids, named_values, vocabulary
from conformance.transport.binding import FRESH, RawToken, Reply

SENT = "sent_tasks_per_mailbox_per_day_count"
RECEIVED = "received_tasks_per_mailbox_per_day_count"
SERVICE_TASKS = "service_tasks_per_day_count"
REQUESTS_SENDER = "connection_requests_per_sender_per_day_count"
REQUESTS_RECIPIENT = "connection_requests_per_recipient_per_day_count"
SERVICE_REQUESTS = "service_connection_requests_per_day_count"
PENDING_SENDER = "pending_connection_requests_per_sender_count"
PENDING_RECIPIENT = "pending_connection_requests_per_recipient_count"
GRANTS = "new_sender_grants_per_recipient_per_day_count"
SERVICE_GRANTS = "service_new_sender_grants_per_day_count"
ALLOWED = "allowed_senders_per_mailbox_count"
REGISTRATIONS_SOURCE = "registrations_per_source_per_day_count"
REGISTRATIONS = "registrations_per_day_count"
ACTIVE = "active_mailboxes_count"
# the daily quotas of one mailbox: a configured one keeps half of each
DAILY_OWN = (SENT, RECEIVED, REQUESTS_SENDER, REQUESTS_RECIPIENT, GRANTS)
CONFIGURED_SHARE = 2  # a run spends at most 1/CONFIGURED_SHARE of a configured mailbox's daily quota
SOURCE, SERVICE = "source", "service"  # who spends per-source and service-wide quotas
DAY_MARGIN = timedelta(minutes=10)  # a count started this close to a UTC midnight is not trusted
# update_mailbox's input
PROFILE_FIELDS = ("label", "capabilities", "discoverable", "accepts_connection_requests")

Charges = list[tuple[str, str]]

# What a row does that lasts to the mailbox it acts as (conformance/kit/live.py): without control
# it acts as a mailbox of the run's own (or one the config marks disposable), never as a
# configured one. close_mailbox and renew_mailbox are the profile's `lasting:` operations.
CLOSES = "closes the mailbox it acts as (its token, profile and grants go; shared task content is erased)"
RENEWS = "renews the mailbox it acts as: its expiry moves, which cannot be put back"
USES_UP = "spends the quota it is about to its end for the UTC day, on a mailbox of the run's own"
FILLS_PENDING = ("fills the pending requests of a sender of the run's own to its cap, and half of its "
                 "requests of the UTC day (the requests are denied when the check ends)")
SPENDS_REGISTRATIONS = ("spends the source's registrations of the UTC day to their end (no configured "
                        "mailbox is touched)")
# The order of a run (a live relay keeps what each check did): the rows that use a mailbox's
# day up, then the rows that close one, then the registration quota's row, after all others.
LAST = (USES_UP, CLOSES, SPENDS_REGISTRATIONS)


class Client(Protocol):
    """What this module asks of a check's client (client.py's WeverClient, which passes
    itself: named here by what it does, so that the two modules do not import each other)."""

    ctx: CheckContext
    binding: Any

    def call(self, action: str, params: Any, who: Any = ..., key: str | None = ..., **kw: Any) -> Reply: ...

    def open_call(self, action: str, params: Any) -> Reply: ...


@dataclass
class Member:
    """A mailbox the run registered: its label in run.credentials, id and token, and the
    profile it was registered with (every check puts a change back to it)."""

    label: str
    id: str
    token: str
    profile: dict[str, Any]
    closed: bool = False


@dataclass
class Pool:
    """What a run without control keeps across checks."""

    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    members: dict[str, Member] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)  # labels closed by the run (its own, or disposable ones)
    # (sender id, recipient id) with a request this run
    pairs: set[tuple[str, str]] = field(default_factory=set)
    keys: set[tuple[str, str]] = field(default_factory=set)  # (sender id, request key) used this run
    lock: threading.RLock = field(default_factory=threading.RLock)

    def open(self) -> list[Member]:
        return [m for m in self.members.values() if not m.closed]


def pool_of(run: RunContext) -> Pool:
    """The run's pool (kept on the run: one per run, whatever the checks)."""
    pool: Pool = run.scratch.setdefault("wever_pool", Pool())
    return pool


def day_guard(ctx: CheckContext) -> None:
    """A quota row that relies on the run's own count: untested when a UTC midnight lies
    between the run's start and now (or too near either), as the relay's daily counts
    restart there and this run's count would no longer be the relay's."""
    now = datetime.now(UTC)
    started = pool_of(ctx.run).started
    start_day = started.replace(hour=0, minute=0, second=0, microsecond=0)
    if started - start_day < DAY_MARGIN or start_day + timedelta(days=1) - now < DAY_MARGIN:
        raise Untested(f"a UTC midnight lies between the run's start ({started:%H:%M:%S}) and now "
                       f"({now:%H:%M:%S}) or within {DAY_MARGIN.seconds // 60} minutes of them: the relay's "
                       "daily counts restart there, so this run's count is not the relay's (run it again "
                       "within one UTC day)")


# ----------------------------------------------------------------------------------
# identities
# ----------------------------------------------------------------------------------
def identities(run: RunContext) -> dict[str, tuple[str, str]]:
    """Every mailbox the run can act as: label -> (id, token)."""
    out = {}
    for label, cred in run.credentials.items():
        if isinstance(cred, dict) and cred.get("id") and cred.get("token"):
            out[label] = (str(cred["id"]), str(cred["token"]))
    return out


def configured(ctx: CheckContext) -> list[str]:
    """The configured mailboxes (the profile's credentials, in its order) the run was given."""
    known = identities(ctx.run)
    pool = pool_of(ctx.run)
    return [label for label in ctx.profile.settings.get("credentials") or {}
            if label in known and label not in ctx.run.identities.created and label not in pool.closed]


def is_configured(ctx: CheckContext, label: str) -> bool:
    """A configured mailbox the run may not use up (neither its own nor marked disposable)."""
    return label not in ctx.run.identities.created and not ctx.run.identities.may_change(label)


def room(ctx: CheckContext, quota: str, who: str) -> int:
    """What the run may still spend of ``quota`` for ``who``: a configured mailbox keeps
    its share of each daily quota."""
    book = ctx.run.quotas
    left = book.room(quota, who)
    if quota in DAILY_OWN and is_configured(ctx, who):
        left = min(left, max(0, book.limits[quota] // CONFIGURED_SHARE - book.spent[(quota, who)]))
    return left


def register(c: Client, body: dict[str, Any] | None = None) -> Member | None:
    """A new mailbox of the run's own, or None when the source's registrations of the
    day are spent (by this run's count) or the relay refuses."""
    ctx = c.ctx
    if ctx.run.quotas.room(REGISTRATIONS_SOURCE, SOURCE) < 1:
        return None
    pool = pool_of(ctx.run)
    before = set(pool.members)
    with ctx.setup("register a mailbox of the run's own", by="WEVER-REGISTER-TOKEN"):
        reply = c.open_call("register_mailbox", body or {"label": f"conformance run {len(pool.members) + 1}"})
    made = set(pool.members) - before
    return pool.members[made.pop()] if reply.ok and made else None


def adopt(ctx: CheckContext, body: Any, result: Any) -> Member | None:
    """A registration's answer as a mailbox of the run's own (its id and token read by
    the manifest's names: the mailbox id pattern, access_setup.token_response_field)."""
    vocab = vocabulary(ctx.profile)
    tokens = [t for t in named_values(result, vocab.token_field) if isinstance(t, str) and t]
    found = ids(result, vocab.mailbox_id)
    if not tokens or not found:
        return None
    pool = pool_of(ctx.run)
    with pool.lock:
        label = f"wever-run-{len(pool.members) + 1}"
        body = body if isinstance(body, dict) else {}
        profile = {"label": body.get("label"), "capabilities": list(body.get("capabilities") or []),
                   "discoverable": bool(body.get("discoverable", False)),
                   "accepts_connection_requests": False}
        member = Member(label, found[0], tokens[0], profile)
        pool.members[label] = member
    ctx.adopt(label, {"id": member.id, "token": member.token})
    return member


def closed(ctx: CheckContext, label: str) -> bool:
    return label in pool_of(ctx.run).closed


# ----------------------------------------------------------------------------------
# who plays which part
# ----------------------------------------------------------------------------------
def choose_cast(c: Client, parts: tuple[str, str, str], recipient: str | None = None,
                own_only: bool = False) -> dict[str, str]:
    """The labels playing ``parts`` (sender, recipient, stranger) in one check without
    control: the recipient (given, or the run's own mailbox with most room to receive
    and grant), then the sender and the stranger (most room to send and request, pairs
    without a connection request of this run first)."""
    ctx = c.ctx
    pool = pool_of(ctx.run)
    if not pool.open() and recipient is None:
        register(c)
    own = [m.label for m in pool.open()]
    everyone = own if own_only and len(own) >= len(parts) else own + configured(ctx)
    sender_part, recipient_part, stranger_part = parts
    known = identities(ctx.run)

    def receives(label: str) -> tuple[Any, ...]:
        roomy = room(ctx, RECEIVED, label) >= 3 and room(ctx, GRANTS, label) >= 5
        return roomy, room(ctx, RECEIVED, label), room(ctx, REQUESTS_RECIPIENT, label)

    if recipient is None:
        recipient = max(own or everyone, key=receives) if (own or everyone) else "bob"
    to = known.get(recipient, ("", ""))[0]

    def sends(label: str) -> tuple[Any, ...]:
        paired = (known[label][0], to) in pool.pairs
        return room(ctx, SENT, label) >= 3 and room(ctx, REQUESTS_SENDER, label) >= 2, not paired, \
            room(ctx, SENT, label) + room(ctx, REQUESTS_SENDER, label), label in own

    others = sorted((label for label in everyone if label != recipient), key=sends, reverse=True)
    cast = {recipient_part: recipient}
    for part, default in ((sender_part, "alice"), (stranger_part, "carol")):
        cast[part] = others.pop(0) if others else default
    return cast


def victim(c: Client) -> str | None:
    """A mailbox the check may close or use up: the run's own with least room left (a new
    one when it has none and may register), else a configured one marked disposable."""
    ctx = c.ctx
    pool = pool_of(ctx.run)
    own = pool.open() or [m for m in [register(c)] if m is not None]
    # the one with least left, among those that may still receive a task (a check may send it one first)
    if own:
        return min(own, key=lambda m: (room(ctx, RECEIVED, m.label) < 1 or room(ctx, GRANTS, m.label) < 1,
                                       sum(room(ctx, q, m.label) for q in (SENT, RECEIVED, GRANTS)))).label
    spare = [label for label in configured(ctx) if ctx.run.identities.may_change(label)]
    return spare[-1] if spare else None


# ----------------------------------------------------------------------------------
# the books of one check
# ----------------------------------------------------------------------------------
@dataclass
class Request:
    sender: str
    recipient: str
    decided: bool = False


_BOOKS: weakref.WeakKeyDictionary[CheckContext, Books] = weakref.WeakKeyDictionary()


def books_of(ctx: CheckContext) -> Books:
    books = _BOOKS.get(ctx)
    if books is None:
        books = _BOOKS[ctx] = Books(ctx)
    return books


class Books:
    """One check's spending and changes without control (see the module's docstring)."""

    def __init__(self, ctx: CheckContext) -> None:
        self.ctx = ctx
        self.pool = pool_of(ctx.run)
        self.grants: dict[tuple[str, str], bool] = {}  # (recipient, sender) -> allowed now
        self.profiles: set[str] = set()  # labels whose profile is put back
        self.requests: dict[str, Request] = {}  # request id -> who asked whom (made by this check)
        self.cast: dict[str, str] | None = None
        self.victim: str | None = None
        self.register_schema = validator_for(ctx.profile.operations["register_mailbox"].params_schema)

    # -- who ------------------------------------------------------------------------------
    def who(self, caller: Any) -> str | None:
        """The label a caller acts as (a label, or the token of a known mailbox)."""
        if isinstance(caller, str):
            return caller
        if isinstance(caller, RawToken):
            return next((label for label, (_, token) in identities(self.ctx.run).items()
                         if token == caller.value), None)
        return None

    def label_of(self, mailbox_id: Any) -> str | None:
        return next((label for label, (mid, _) in identities(self.ctx.run).items() if mid == mailbox_id),
                    None)

    def id_of(self, label: str) -> str:
        return identities(self.ctx.run)[label][0]

    # -- spending --------------------------------------------------------------------------
    def spend(self, charges: Charges) -> None:
        """``ctx.spend`` each charge, all or none: untested (reason quota) when one does
        not fit, before anything is sent."""
        ctx = self.ctx
        with self.pool.lock:
            for quota, who in charges:
                if not ctx.about_quota(quota) and room(ctx, quota, who) < 1:
                    book = ctx.run.quotas
                    share = (f" (a run spends at most 1/{CONFIGURED_SHARE} of a configured mailbox's daily "
                             "quota)"
                             if quota in DAILY_OWN and is_configured(ctx, who) else "")
                    raise Untested(f"would exceed {quota} for {who}: {book.spent[(quota, who)]} of "
                                   f"{book.limits[quota]} spent by this run{share}", "quota")
            for quota, who in charges:
                ctx.spend(quota, who)

    def refund(self, charges: Charges) -> None:
        """What a refused call did not spend after all."""
        with self.pool.lock:
            for quota, who in charges:
                self.ctx.refund(quota, who)

    def release(self, quota: str, who: str) -> None:
        """A cap's unit given back (a request answered, a grant revoked): the check's own use
        stays recorded."""
        with self.pool.lock:
            self.ctx.refund(quota, who, record=False)

    # -- the calls -----------------------------------------------------------------------
    def call(self, c: Client, binding: Any, action: str, params: Any, caller: Any, key: Any,
             **kw: Any) -> Reply:
        """``action`` over ``binding`` as ``caller``, spending and putting back as the module says."""
        who = self.who(caller)
        args = params if isinstance(params, dict) else {}
        charges: Charges = []
        after: Any = None
        if action == "send_task" and who is not None:
            charges, done = self.task_charges(who, args.get("recipient_id"), key)
            after = (lambda reply: done(reply.ok)) if done is not None else None
        elif action == "register_mailbox" and self.register_schema.is_valid(params):
            charges = [(REGISTRATIONS_SOURCE, SOURCE), (REGISTRATIONS, SERVICE), (ACTIVE, SERVICE)]
        elif action == "allow_sender" and who is not None:
            charges, after = self.grant_charges(c, who, args)
        elif action == "request_connection" and who is not None:
            charges, after = self.request_charges(c, who, args)
        elif action == "respond_connection_request" and who is not None:
            charges, after = self.response_charges(c, who, args)
        elif action == "update_mailbox" and who is not None:
            self.keep_profile(c, who, args)
        self.spend(charges)
        try:
            reply: Reply = binding.call(action, params, caller=caller, idempotency_key=key, **kw)
        except BaseException:
            self.refund(charges)
            raise
        if not reply.ok:
            self.refund(charges)
        if after is not None:
            after(reply)
        if reply.ok and action == "register_mailbox":
            adopt(self.ctx, params, reply.result)
        if reply.ok and action == "close_mailbox" and who is not None:
            self.closed(who)
        return reply

    def closed(self, who: str) -> None:
        self.pool.closed.add(who)
        member = self.pool.members.get(who)
        if member is not None:
            member.closed = True

    # -- tasks -------------------------------------------------------------------------------
    def task_charges(self, sender: str, recipient_id: Any, key: Any,
                     known_keys: tuple[str, ...] = ()) -> tuple[Charges, Any]:
        """A task spends the sender's sent, the recipient's received and the service's
        tasks, unless its key is one the sender already used in this run (a retry)."""
        sender_id = identities(self.ctx.run).get(sender, ("", ""))[0]
        keys = [(sender_id, k) for k in ((key,) if key not in (None, FRESH) else ()) + known_keys]
        with self.pool.lock:
            if any(k in self.pool.keys for k in keys):
                return [], None
            self.pool.keys.update(keys)
        recipient = self.label_of(recipient_id)
        charges = [(SENT, sender)] + ([(RECEIVED, recipient)] if recipient
                                      else []) + [(SERVICE_TASKS, SERVICE)]

        def after(served: bool) -> None:
            if not served:
                with self.pool.lock:
                    # no work made: a retry under the key would make it
                    self.pool.keys.difference_update(keys)
        return charges, after

    def a2a_send(self, c: Client, who: Any, params: Any, send: Any) -> Any:
        """SendMessage: a task, its request key a2a-<sha256 of the messageId> (each way it
        may be written is the same key: protocols.a2a.retry)."""
        from conformance.protocols.wever.answers import digest_spellings

        sender = self.who(who)
        message = params.get("message") if isinstance(params, dict) else None
        parts = message.get("parts") if isinstance(message, dict) else None
        first = parts[0] if isinstance(parts, list) and parts else None
        data = first.get("data") if isinstance(first, dict) else None
        message_id = message.get("messageId") if isinstance(message, dict) else None
        if sender is None or not isinstance(data, dict) or not isinstance(message_id, str):
            return send()
        spellings = tuple("a2a-" + s for s in digest_spellings(message_id))
        charges, after = self.task_charges(sender, data.get("recipient_id"), None, spellings)
        self.spend(charges)
        try:
            reply = send()
        except BaseException:
            self.refund(charges)
            raise
        body = reply.json()
        served = reply.status < 400 and isinstance(body, dict) and "result" in body and "error" not in body
        if not served:
            self.refund(charges)
        if after is not None:
            after(served)
        return reply

    # -- grants ------------------------------------------------------------------------------
    def keep_grant(self, c: Client, recipient: str, sender: str) -> None:
        """Before the first change of ``recipient``'s grant to ``sender``: what it is now
        (get_mailbox names the allowed sender ids), and its undo."""
        pair = (recipient, sender)
        if pair in self.grants:
            return
        sender_id = self.id_of(sender)
        prior = False
        if not closed(self.ctx, recipient):
            reply = c.binding.call("get_mailbox", {}, caller=recipient, idempotency_key=None)
            if reply.ok:
                prior = locate.holds(reply.result, sender_id)
            elif is_configured(self.ctx, recipient):
                raise Untested(f"get_mailbox of {recipient} does not answer ({reply.describe()}): which "
                               "senders it allows is unknown, so a change of its grants could not be put "
                               "back", "harm")
        self.grants[pair] = prior

        def undo() -> str | None:
            if closed(self.ctx, recipient) or (prior and closed(self.ctx, sender)) \
                    or self.grants[pair] == prior:
                return None  # a closed mailbox's grants are gone with it
            reply = c.call("allow_sender", {"sender_id": sender_id, "allowed": prior}, recipient)
            # a grant to a closed mailbox: the relay may not know the sender any more
            if reply.ok or closed(self.ctx, sender):
                return None
            return f"allow_sender allowed={prior} answered {reply.describe()}"
        self.ctx.put_back(f"{recipient}'s grant to {sender} ({'allowed' if prior else 'not allowed'})", undo)

    def set_grant(self, recipient: str, sender: str, allowed: bool) -> None:
        was = self.grants.get((recipient, sender), False)
        self.grants[(recipient, sender)] = allowed
        if was and not allowed:
            self.release(ALLOWED, recipient)

    def new_grant(self, recipient: str, sender: str) -> Charges:
        """A grant that did not exist: capped per recipient and the service per UTC day, and by
        the allowed-sender cap."""
        if self.grants.get((recipient, sender)):
            return []  # an existing grant consumes nothing
        return [(GRANTS, recipient), (SERVICE_GRANTS, SERVICE), (ALLOWED, recipient)]

    def grant_charges(self, c: Client, recipient: str, args: dict[str, Any]) -> tuple[Charges, Any]:
        sender = self.label_of(args.get("sender_id"))
        allowed = args.get("allowed")
        if sender is None or sender == recipient or not isinstance(allowed, bool):
            return [], None
        self.keep_grant(c, recipient, sender)
        charges = self.new_grant(recipient, sender) if allowed else []

        def after(reply: Reply) -> None:
            if reply.ok:
                self.set_grant(recipient, sender, allowed)
        return charges, after

    # -- connection requests ---------------------------------------------------------------------
    def request_charges(self, c: Client, sender: str, args: dict[str, Any]) -> tuple[Charges, Any]:
        """A new request spends both parties' daily requests and the service's, and holds a
        place under both pending caps until it is answered; a retry of a pair asked in this
        run returns the retained request and spends nothing."""
        recipient = self.label_of(args.get("recipient_id"))
        if recipient is None or recipient == sender:
            return [], None
        pair = (self.id_of(sender), self.id_of(recipient))
        if pair in self.pool.pairs:
            return [], None
        # first: a denial revokes the pair's grant, so its undo runs after
        self.keep_grant(c, recipient, sender)
        self.pool.pairs.add(pair)
        charges = [(REQUESTS_SENDER, sender), (REQUESTS_RECIPIENT, recipient), (SERVICE_REQUESTS, SERVICE),
                   (PENDING_SENDER, sender), (PENDING_RECIPIENT, recipient)]

        def after(reply: Reply) -> None:
            made = ids(reply.result, vocabulary(self.ctx.profile).request_id) if reply.ok else []
            if not made:
                self.pool.pairs.discard(pair)  # nothing retained: the pair may ask again
                if reply.ok:  # served without a request id: its pending places are not known to be held
                    self.release(PENDING_SENDER, sender)
                    self.release(PENDING_RECIPIENT, recipient)
                return
            self.requests[made[0]] = Request(sender, recipient)
            self.ctx.put_back(f"the connection request {made[0]} of {sender} to {recipient} (denied when "
                              "left pending)",
                              lambda: self.deny_pending(c, made[0]))
        return charges, after

    def decided(self, request_id: str) -> None:
        request = self.requests[request_id]
        if not request.decided:
            request.decided = True
            self.release(PENDING_SENDER, request.sender)
            self.release(PENDING_RECIPIENT, request.recipient)

    def deny_pending(self, c: Client, request_id: str) -> str | None:
        """The recipient denies the check's request when it is still pending (its list names it)."""
        request = self.requests[request_id]
        if request.decided or closed(self.ctx, request.recipient) or closed(self.ctx, request.sender):
            self.decided(request_id)
            return None
        listed = c.binding.call("list_connection_requests", {}, caller=request.recipient,
                                                                  idempotency_key=None)
        if not listed.ok:
            return f"list_connection_requests of {request.recipient} answered {listed.describe()}"
        if not locate.holds(listed.result, request_id):
            self.decided(request_id)
            return None
        reply = c.call("respond_connection_request", {"request_id": request_id, "allowed": False},
                       request.recipient)
        return None if reply.ok else f"respond_connection_request allowed=false answered {reply.describe()}"

    def response_charges(self, c: Client, who: str, args: dict[str, Any]) -> tuple[Charges, Any]:
        """The recipient's first answer to a request of this check: allowing makes a grant."""
        request_id, allowed = args.get("request_id"), args.get("allowed")
        request = self.requests.get(request_id) if isinstance(request_id, str) else None
        if request is None or who != request.recipient or request.decided or not isinstance(allowed, bool):
            return [], None
        self.keep_grant(c, request.recipient, request.sender)
        charges = self.new_grant(request.recipient, request.sender) if allowed else []

        def after(reply: Reply) -> None:
            if reply.ok:
                self.set_grant(request.recipient, request.sender, allowed)
                self.decided(str(request_id))
        return charges, after

    # -- profiles -----------------------------------------------------------------------------
    def keep_profile(self, c: Client, who: str, args: dict[str, Any]) -> None:
        """Before the first update_mailbox of ``who``: its profile now (as registered, for
        the run's own; for a configured one as get_mailbox names update_mailbox's members),
        and its undo. Publishing a configured mailbox on the directory is lasting."""
        if who in self.profiles:
            return
        member = self.pool.members.get(who)
        if member is not None:
            prior = dict(member.profile)
        else:
            prior = self.read_profile(c, who)
            publishes = args.get("discoverable") is True and prior.get("discoverable") is not True
            if is_configured(self.ctx, who) and publishes:
                raise Untested(f"would publish the profile of {who} on the directory (find_peers lists it, "
                               "to anyone) "
                               f"(mark credentials.{who}.disposable: true, or give control)", "harm")
        self.profiles.add(who)
        body = {k: v for k, v in prior.items() if v is not None}

        def undo() -> str | None:
            if closed(self.ctx, who):
                return None
            reply = c.call("update_mailbox", body, who)
            return None if reply.ok else f"update_mailbox answered {reply.describe()}"
        self.ctx.put_back(f"the profile of {who}", undo)

    def read_profile(self, c: Client, who: str) -> dict[str, Any]:
        reply = c.binding.call("get_mailbox", {}, caller=who, idempotency_key=None)
        values = {name: named_values(reply.result, name) if reply.ok else [] for name in PROFILE_FIELDS}
        prior = {name: found[0] for name, found in values.items() if found}
        typed = (isinstance(prior.get("label"), str) and isinstance(prior.get("capabilities"), list)
                 and isinstance(prior.get("discoverable"), bool)
                 and isinstance(prior.get("accepts_connection_requests"), bool))
        if not typed:
            raise Untested(f"get_mailbox of {who} does not name its profile by update_mailbox's members "
                           f"({', '.join(PROFILE_FIELDS)}): "
                           f"{reply.describe() if not reply.ok else str(reply.result)[:200]}; a change of "
                           "its profile could not be put back", "harm")
        return prior

