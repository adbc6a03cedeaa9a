"""Groups as a client drives them, for the rows of groups.py, groups_membership.py,
groups_messages.py and the part-2 state machines: group commands (a fresh request_key
where the branch takes one, the texts each client sent remembered), the set-up (a grant
relayed by the owner, a group, a member), the readers of their answers by content (the
group id the target minted, the suite's texts in a page, the number that orders them) and
durable receive read by content (pulls, acknowledgements, work items)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from weakref import WeakKeyDictionary

from conformance.checks.expect import expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext, CheckFailed
from conformance.protocols.plaza.answers import text_of
from conformance.protocols.plaza.client import ALICE, BOB, PlazaClient, fresh_id
from conformance.protocols.plaza.parts import (
    GROUPS,
    UUID,
    Answer,
    branch_index,
    minted,
    require,
    sent_strings,
)
from conformance.transport.binding import RawToken, Reply

Who = Any  # a credential label or a RawToken (a seeded agent)
Data = dict[str, Any]
AUTHZ = "/durableReceive/authorization"
CHAT = "/groupChat"
DRAIN_BATCHES = 250


def receive_pattern(ctx: CheckContext, field: str) -> str:
    """The pattern receive_ack's branch gives ``field`` (view_id, receipt)."""
    return str(ctx.profile.operations["receive_ack"].params_schema["properties"][field]["pattern"])


def ack_fields(ctx: CheckContext, data: Any, key: str) -> dict[str, Any] | None:
    """receive_ack's batch_id, view_id and receipt found by content in a pull answer: the
    view_id and receipt by the patterns receive_ack's branch gives them, the batch_id the UUID
    beside them that is not the receiver's client_key. None: the answer holds no batch."""
    views = locate.strings(data, receive_pattern(ctx, "view_id"))
    if not views:
        return None
    view = views[0].value
    receipt_rx = re.compile(receive_pattern(ctx, "receipt"))
    receipt = locate.value_beside(data, view, lambda v: isinstance(v, str) and bool(receipt_rx.fullmatch(v)))
    batch = locate.value_beside(data, view, lambda v: isinstance(v, str) and bool(UUID.match(v)) and v != key)
    if receipt is None or batch is None:
        return None
    return {"batch_id": batch, "view_id": view, "receipt": receipt}


def pull(c: PlazaClient, who: Who, key: str, what: str) -> Data:
    limit = ctx_limit(c.ctx)
    return c.data_of(c.command("receive_pull", {"client_key": key, "limit": limit}, who), what)


def ctx_limit(ctx: CheckContext) -> int:
    """receive_pull's largest limit (its branch's maximum)."""
    return int(ctx.profile.operations["receive_pull"].params_schema["properties"]["limit"]["maximum"])


def acknowledge(c: PlazaClient, who: Who, key: str, data: Any, what: str) -> bool:
    """Acknowledge the batch a pull answered (found by content); False when it holds none."""
    fields = ack_fields(c.ctx, data, key)
    if fields is None:
        return False
    expect_result(c.ctx, c.command("receive_ack", {"client_key": key, **fields}, who), f"{what}: receive_ack")
    return True


def drain(c: PlazaClient, who: Who, key: str) -> None:
    """Acknowledge everything pending for ``key`` (set-up)."""
    with c.ctx.setup(f"{label(who)} acknowledges the pending work", by="PLAZA-RECV-ACK"):
        seen: set[str] = set()
        for _ in range(DRAIN_BATCHES):
            data = pull(c, who, key, "receive_pull (drain)")
            fields = ack_fields(c.ctx, data, key)
            if fields is None or fields["view_id"] in seen:
                return
            seen.add(fields["view_id"])
            acknowledge(c, who, key, data, "drain")


def receiver(c: PlazaClient, who: str) -> str:
    """``who``'s client_key of the run; on a live site, first everything pending for it is
    acknowledged, so what the key delivers next is what the check does."""
    key = c.client_key(who)
    if c.live():
        drain(c, who, key)
    return key


def work(c: PlazaClient, who: Who, key: str, kind: str, anchor: str, what: str) -> list[Any]:
    """The work items of ``kind`` (the document's supported_work value) about ``anchor`` (the
    group the check made) in ``who``'s next pull, found wherever the answer puts them; the
    batch is then acknowledged, so the next pull shows newer work."""
    data = pull(c, who, key, what)
    found = [obj for obj in locate.objects_holding(data, kind) if locate.holds(obj, anchor)]
    acknowledge(c, who, key, data, what)
    return found


def chat(ctx: CheckContext, key: str) -> Any:
    return ctx.profile.spec["groupChat"][key]


# ----------------------------------------------------------------------------------------------
# calls and readers
# ----------------------------------------------------------------------------------------------
TEXTS: WeakKeyDictionary[PlazaClient, set[str]] = WeakKeyDictionary()  # the group texts each client sent


def remember(c: PlazaClient, text: Any) -> None:
    if isinstance(text, str):
        TEXTS.setdefault(c, set()).add(text)


def call(c: PlazaClient, who: Who, operation: str, /, **fields: Any) -> Reply:
    """A group command; a fresh request_key where its branch takes one and none is given.
    The texts it carries are remembered: they are the only messages a check counts. The part
    must be served (the group machine's first call asks)."""
    require(c.ctx, GROUPS)
    schema = c.spec["schemas"]["command"]["anyOf"][branch_index(c.ctx.profile, operation)]
    if "request_key" in schema["properties"] and "request_key" not in fields:
        fields["request_key"] = fresh_id()
    remember(c, fields.get("content"))
    return c.command(operation, fields, who)


def ok(c: PlazaClient, who: Who, operation: str, /, **fields: Any) -> Answer:
    """A served group command's data, knowing what its request carried."""
    reply = call(c, who, operation, **fields)
    data = Answer(c.data_of(reply, f"{operation} by {label(who)}"))
    data.sent = sent_strings(reply)
    return data


def label(who: Who) -> str:
    return "a seeded agent" if isinstance(who, RawToken) else str(who)


def group_id_of(ctx: CheckContext, data: dict[str, Any], what: str) -> str:
    """The new group's id by content: a UUID the target minted (not in the request, no
    agent's), preferably the one beside the name the group was given."""
    sent: frozenset[str] = getattr(data, "sent", frozenset())
    fresh = minted(ctx, data, sent)
    if not fresh:
        raise CheckFailed(f"{what}: " + locate.Search("a group id the target minted (a UUID the request did "
                                                      "not carry and no run agent's id)").looked_for(data),
                          "malformed_answer")
    for name in sorted(s for s in sent if not UUID.match(s)):
        beside = locate.value_beside(data, name, lambda v: v in fresh)
        if isinstance(beside, str):
            return beside
    return fresh[0]


def text_in(item: Any, texts: Iterable[str]) -> str | None:
    """The text of the suite's that a listed message carries."""
    return next((t for t in texts if locate.holds(item, t)), None)


def listed_messages(c: PlazaClient, who: Who, gid: str, what: str, **fields: Any) -> list[Any]:
    """The entries of a served group_messages page: the list that carries the suite's texts
    (wherever the answer puts it); all of it, the site's own messages too."""
    data = c.data_of(call(c, who, "group_messages", group_id=gid, **fields), what)
    return locate.listing(data, TEXTS.get(c, set())) or []


def messages(c: PlazaClient, who: Who, gid: str, what: str, **fields: Any) -> list[Any]:
    """The listed messages that carry a text the suite sent, in the page's order."""
    mine = TEXTS.get(c, set())
    return [m for m in listed_messages(c, who, gid, what, **fields) if text_in(m, mine) is not None]


def contents(c: PlazaClient, who: Who, gid: str, what: str, **fields: Any) -> list[Any]:
    """The suite's texts a member reads, in the page's order (the only messages a check counts)."""
    mine = TEXTS.get(c, set())
    return [text_in(m, mine) for m in messages(c, who, gid, what, **fields)]


def number(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"0|[1-9][0-9]{0,18}", value):
        return int(value)
    return None


def seqs_of(ctx: CheckContext, items: list[Any], what: str) -> list[int]:
    """The number that orders the listed messages: of the integers at one place of every
    entry, the place whose values strictly increase (the smallest such: a count, not a time)."""
    places: list[dict[tuple[Any, ...], int]] = [
        {f.path: n for f in locate.walk(item) if (n := number(f.value)) is not None} for item in items]
    common = set.intersection(*(set(p) for p in places)) if places else set()
    rising = [p for p in common if all(a[p] < b[p] for a, b in zip(places, places[1:], strict=False))]
    if not rising:
        search = locate.Search("a number at one place of every listed message that increases with the "
                               "messages (a seq to page after)")
        raise CheckFailed(f"{what}: " + search.looked_for(items), "malformed_answer")
    place = min(rising, key=lambda p: (max(d[p] for d in places), len(p)))
    return [d[place] for d in places]


# ----------------------------------------------------------------------------------------------
# set-up: grants, groups, members
# ----------------------------------------------------------------------------------------------
def authorize(c: PlazaClient, who: Who, **fields: Any) -> Answer:
    """The owner's grant relayed by the Agent (the branch requires owner_authorized: true)."""
    with c.ctx.setup(f"{label(who)}'s owner grants group authorization", by="PLAZA-GROUP-AUTHORIZE"):
        return ok(c, who, "group_authorize", owner_authorized=True, **fields)


def revoke(c: PlazaClient, who: Who) -> None:
    with c.ctx.setup(f"{label(who)}'s group authorization is revoked", by="PLAZA-GROUP-AUTH-REVOKE"):
        ok(c, who, "group_authorization_revoke")


def create(c: PlazaClient, who: Who = ALICE, *, grant: dict[str, Any] | None = None, granted: bool = False,
           **fields: Any) -> str:
    """A new group of ``who`` (granted create, invite, join and send first, unless ``granted``)."""
    if not granted:
        authorize(c, who, allow_create=True, allow_invite=True, allow_join=True, allow_send=True,
                  **(grant or {}))
    fields.setdefault("name", text_of("group"))
    with c.ctx.setup(f"{label(who)} creates a group", by="PLAZA-GROUP-CREATE"):
        return group_id_of(c.ctx, ok(c, who, "group_create", **fields), "group_create")


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
# the example world (friendship.py fills the groupMessages example with it)
# ----------------------------------------------------------------------------------------------
def example_group(c: PlazaClient) -> str:
    """A group of alice's for the groupMessages example."""
    require(c.ctx, GROUPS)
    return create(c, ALICE)


# ----------------------------------------------------------------------------------------------
# faults' helpers: a schema default asked for, a command run as if its owner had granted everything
# ----------------------------------------------------------------------------------------------
def asked_for(command: str, field: str) -> Callable[[str, str], bool]:
    """Whether ``group_default`` is asked for ``field`` of ``command``."""
    return lambda asked, name: (asked, name) == (command, field)


PERMISSIVE_GRANT = {"allow_create": True, "allow_join": True, "allow_invite": True, "allow_send": True,
                    "max_messages_per_hour": 60, "max_autonomous_turns": 6}


@contextmanager
def ungranted(ref: Any) -> Iterator[None]:
    """While inside, every grant check passes (the command runs as if authorized)."""
    saved = ref.require_authorization
    ref.require_authorization = lambda *args, **kwargs: dict(PERMISSIVE_GRANT)
    try:
        yield
    finally:
        ref.require_authorization = saved
