"""Part 2 requirements (issue 14) of the groups part: the owner's group authorization
(preflight, requests that grant nothing, grants with their scopes and expiry, revocation at
once), groups (private by default, discover, list filters), membership (applications and
admission, invitations and responses, member actions, at most max_members, no history from
before joining), messages (pages, ack, content, retries rechecked), rate limits and the loop
guard, queue and flush, schedules, routing (group_id only inside data) and the group work
kinds of durable receive. See part_groups.py for what the reference serves.

The document names commands and fields but no answer shapes (docs/architecture.md, "The
judging rule"): the MUST checks find what they judge by content -- the group id the target
minted (a UUID the request did not carry), the texts the suite sent (the only messages it
counts), the document's work kinds beside the group's id -- or by behaviour through a later
command (a member reads, a refused sender stores nothing). The profile's shapes are SHOULDs
of ``source: profile`` listed in the profile's ``shapes: rows:``. Set-up relays an owner's
grant with ``group_authorize`` (owner_authorized: true), as the branch requires.

The first section holds what the three part-2 modules (groups, private.py, continuation.py)
share: an optional part asked once whether it is served (``part``), refusals judged by their
cause (``refused``), ids the target minted, and durable receive read by content."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterable
from typing import Any
from weakref import WeakKeyDictionary

from conformance import locate
from conformance.check import Blocked, CheckContext, CheckFailed, Untested
from conformance.checks.causes import cause_of
from conformance.checks.errors import catalog_entry, expect_result, refused_as
from conformance.model import Requirement
from conformance.protocols.plaza.answers import text_of
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.table import Table
from conformance.transport.binding import RawToken, Reply
from conformance.transport.http import json_excerpt

Who = Any  # a credential label or a RawToken (a seeded agent)
Data = dict[str, Any]
AUTHZ = "/durableReceive/authorization"
CHAT = "/groupChat"
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
UNSUPPORTED = "UNSUPPORTED_OPERATION"  # A2A 1.0's UnsupportedOperationError: the part is not served
INVALID = "A2A_INVALID_PARAMETERS"
DRAIN_BATCHES = 250

# The optional parts (profiles/agent-plaza.yaml ``optional:``) and the read-only command that
# asks the target whether it serves each.
GROUPS, PRIVATE_RELAY, CONTINUATION = "groups", "private_relay", "continuation"
PROBES = {GROUPS: "group_authorization", PRIVATE_RELAY: "private_capabilities", CONTINUATION: "continuation_status"}


# ----------------------------------------------------------------------------------------------
# part 2's shared helpers: served parts, refusals by cause, minted ids, durable receive
# ----------------------------------------------------------------------------------------------
def declined(ctx: CheckContext, reply: Reply) -> bool:
    """The answer is the not-served one (UNSUPPORTED_OPERATION, A2A's -32004)."""
    return not reply.ok and reply.error_code == catalog_entry(ctx.profile, UNSUPPORTED).code


def require(ctx: CheckContext, feature: str) -> None:
    """The optional part ``feature`` must be served: asked once per run (its read-only
    probe command); a target that answers it as not served leaves every row of the part
    untested with its answer, whatever order they run in."""
    def probe() -> str | None:
        reply = PlazaClient(ctx, reset=False).command(PROBES[feature], {})
        return f"{PROBES[feature]}: {reply.describe()}" if declined(ctx, reply) else None

    ctx.require_served(feature, probe)


def gated(feature: str, check: Callable[[CheckContext], None]) -> Callable[[CheckContext], None]:
    @functools.wraps(check)
    def served_first(ctx: CheckContext) -> None:
        require(ctx, feature)
        check(ctx)
    return served_first


def part(t: Table, feature: str, rows: list[Requirement]) -> list[Requirement]:
    """The rows of an optional part: each names the feature and asks first whether it is served."""
    if feature not in t.profile.optional:
        raise ValueError(f"{feature!r} is not in the profile's optional: block")
    return [dataclasses.replace(r, optional=feature, check=gated(feature, r.check)) for r in rows]


def refused(c: PlazaClient | CheckContext, reply: Reply, what: str, *, error: Any = None, strict: bool = False,
            invalid_ok: bool = False) -> None:
    """A refusal for the rule the check is about (the ambiguity rule: any refusal; ``strict``:
    ``error``, the profile's code). A refusal for another cause judges nothing: the command
    not served leaves the row untested, the credential or a quota blocks it, and invalid
    parameters for a schema-valid request (unless ``invalid_ok``: a semantically broken input
    another site may call invalid) is a failure."""
    ctx = c.ctx if isinstance(c, PlazaClient) else c
    if declined(ctx, reply):
        raise Untested(f"{what}: the target answers {UNSUPPORTED}, it does not serve this command: {reply.describe()}", "optional")
    cause = cause_of(ctx, reply)
    if cause is not None:
        raise Blocked(f"{what}: refused for the {cause}, not for what the check asks: {reply.describe()}", kind="refusal_cause")
    if (not invalid_ok and not reply.ok and error != INVALID
            and reply.error_code == catalog_entry(ctx.profile, INVALID).code):
        ctx.fail(f"{what}: a schema-valid request was refused as invalid parameters ({reply.describe()}); what the check "
                 "asks is refused for another reason", kind="rejected_valid")
    refused_as(ctx, reply, error, what, strict)


class Answer(dict[str, Any]):
    """A command's data, with the strings its request carried (what the target did not mint)."""

    sent: frozenset[str] = frozenset()


def sent_strings(reply: Reply) -> frozenset[str]:
    """Every string of the request ``reply`` answers (its body as recorded)."""
    body = (reply.http.exchange.request or {}).get("body")
    try:
        value = json.loads(body) if isinstance(body, str) else None
    except ValueError:
        return frozenset()
    return frozenset(f.value for f in locate.walk(value) if isinstance(f.value, str))


def agent_ids(ctx: CheckContext) -> set[str]:
    """The public ids of the run's agents (never an id a target minted for an object)."""
    return {str(v["id"]) for v in ctx.run.credentials.values() if isinstance(v, dict) and isinstance(v.get("id"), str)}


def minted(ctx: CheckContext, answer: Any, sent: Iterable[str] = ()) -> list[str]:
    """The UUIDs an answer carries that its request did not and that name no run agent,
    nearest the root first: the ids the target made (a new group, offer, request)."""
    return locate.new_strings(answer, UUID, set(sent) | agent_ids(ctx))


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


# ----------------------------------------------------------------------------------------------
# the document's values
# ----------------------------------------------------------------------------------------------
def branch_index(ctx_or_table: Any, name: str) -> int:
    branches = ctx_or_table.profile.spec["schemas"]["command"]["anyOf"]
    return next(i for i, b in enumerate(branches) if dig(b, "properties", "operation", "const") == name)


def prop(ctx: CheckContext, command: str, *path: str) -> Any:
    """A field's schema in a command's branch (``rules``' fields with ``"rules", name``)."""
    node: Any = ctx.profile.spec["schemas"]["command"]["anyOf"][branch_index(ctx, command)]["properties"]
    for i, key in enumerate(path):
        node = node[key] if i == 0 else node["properties"][key]
    return node


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
    schema = c.spec["schemas"]["command"]["anyOf"][branch_index(c.ctx, operation)]
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
        raise CheckFailed(f"{what}: " + locate.Search("a group id the target minted (a UUID the request did not carry and "
                                                      "no run agent's id)").looked_for(data), "malformed_answer")
    for name in sorted(s for s in sent if not UUID.match(s)):
        beside = locate.value_beside(data, name, lambda v: v in fresh)
        if isinstance(beside, str):
            return beside
    return fresh[0]


def names(answer: Any, needle: str) -> bool:
    """``needle`` (an id or text the suite knows) is in a string of the answer."""
    return bool(locate.with_marker(answer, needle))


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
        raise CheckFailed(f"{what}: " + locate.Search("a number at one place of every listed message that increases "
                                                      "with the messages (a seq to page after)").looked_for(items),
                          "malformed_answer")
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
        authorize(c, who, allow_create=True, allow_invite=True, allow_join=True, allow_send=True, **(grant or {}))
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
# authorization
# ----------------------------------------------------------------------------------------------
def check_auth_preflight(ctx: CheckContext) -> None:
    """group_authorization answers the caller's own permission with permission_attention (the
    document's name for it), before a grant and after it."""
    c = PlazaClient(ctx)
    for moment in ("before a grant", "after a grant"):
        with ctx.subcheck(moment):
            if moment == "after a grant":
                authorize(c, ALICE)
            data = ok(c, ALICE, "group_authorization")
            ctx.expect(any(isinstance(f.value, dict) and "permission_attention" in f.value for f in locate.walk(data)),
                       f"group_authorization {moment} carries no permission_attention: {json_excerpt(data, 300)}")


def state_of(data: dict[str, Any]) -> Any:
    return dig(data, "authorization", "state")


def check_auth_shape(ctx: CheckContext) -> None:
    """The profile's preflight: authorization.state none / active / revoked, live in permission_attention."""
    c = PlazaClient(ctx)
    revoke(c, ALICE)
    before = ok(c, ALICE, "group_authorization")
    ctx.expect(state_of(before) in ("none", "revoked") and dig(before, "permission_attention", "live") is False,
               f"before a grant the preflight says {json_excerpt(before, 300)}; the profile says state none or revoked, live false")
    authorize(c, ALICE)
    after = ok(c, ALICE, "group_authorization")
    ctx.expect(state_of(after) == "active" and dig(after, "permission_attention", "live") is True,
               f"after a grant the preflight says {json_excerpt(after, 300)}; the profile says state active, live true")


def scope_lists(ctx: CheckContext, answer: Any) -> list[list[str]]:
    """The lists of the answer made only of the request's scope values (the schema's enum)."""
    allowed = set(prop(ctx, "group_authorization_request", "scopes")["items"]["enum"])
    return [items for items in locate.lists_of(answer) if items and all(isinstance(i, str) and i in allowed for i in items)]


def check_auth_request(ctx: CheckContext) -> None:
    """A request grants nothing (the Agent still cannot create), repeats are deduplicated
    (the request id the target minted comes back), and a request without scopes asks for the
    schema's default scopes (where the answer lists requested scopes)."""
    c = PlazaClient(ctx)
    revoke(c, ALICE)
    first = ok(c, ALICE, "group_authorization_request", scopes=["allow_create"])
    again = ok(c, ALICE, "group_authorization_request", scopes=["allow_create"])
    with ctx.subcheck("no authority"):
        refused(c, call(c, ALICE, "group_create", name=text_of("requested")), "group_create after only a request for allow_create")
    with ctx.subcheck("deduplicated"):
        a, b = minted(ctx, first, first.sent), minted(ctx, again, again.sent)
        ctx.expect(not (a and b) or set(a) & set(b), f"the same request twice named two requests, {a} and {b}: "
                   "owner requests are deduplicated")
    with ctx.subcheck("default scopes"):
        data = ok(c, BOB, "group_authorization_request")
        wanted = sorted(prop(ctx, "group_authorization_request", "scopes")["default"])
        asked = scope_lists(ctx, data)
        ctx.expect(not asked or any(sorted(s) == wanted for s in asked),
                   f"a request without scopes asked for {asked}, not the default {wanted}")


def check_authorize(ctx: CheckContext) -> None:
    """No grant: no group; the default grant allows join and send, not create or invite, and
    at most its default max_messages_per_hour (in a group whose rules allow more)."""
    c = PlazaClient(ctx)
    revoke(c, ALICE)
    with ctx.subcheck("create without a grant"):
        refused(c, call(c, ALICE, "group_create", name=text_of("ungranted")), "group_create without a grant")
    authorize(c, ALICE)
    with ctx.subcheck("create under the default grant"):
        refused(c, call(c, ALICE, "group_create", name=text_of("default")), "group_create under a grant without allow_create")
    top = prop(ctx, "group_settings", "rules", "max_messages_per_hour")["maximum"]
    gid = create(c, BOB, grant={"max_messages_per_hour": top}, rules={"member_invites": True, "max_messages_per_hour": top})
    with c.ctx.setup("bob invites alice", by="PLAZA-GROUP-MEMBERSHIP"):
        ok(c, BOB, "group_invite", group_id=gid, visitor_id=c.agent_id(ALICE))
    with ctx.subcheck("join under the default grant"):
        expect_result(ctx, call(c, ALICE, "group_respond", group_id=gid, decision="accept"), "group_respond accept under the default grant")
    with ctx.subcheck("send under the default grant"):
        expect_result(ctx, send(c, ALICE, gid, text_of("default send")), "group_send under the default grant")
    with ctx.subcheck("invite under the default grant"):
        refused(c, call(c, ALICE, "group_invite", group_id=gid, visitor_id=c.agent_id(CAROL)),
                "group_invite under a grant without allow_invite (the group allows member invites)")
    with ctx.subcheck("messages per hour under the default grant"):
        rate = int(prop(ctx, "group_authorize", "max_messages_per_hour")["default"])
        for i in range(rate - 1):  # one was sent above
            expect_result(ctx, send(c, ALICE, gid, text_of(f"default rate {i}")), f"group_send {i + 2} of {rate} in the hour")
        refused(c, send(c, ALICE, gid, text_of("over the default rate")),
                f"group_send {rate + 1} within the hour under a grant of the default {rate} per hour (the group allows {top})")


def check_auth_expiry(ctx: CheckContext) -> None:
    """A grant of expires_hours lapses after that many hours; one without expires_hours after
    the schema's default (and not before)."""
    c = PlazaClient(ctx)
    hours = prop(ctx, "group_authorize", "expires_hours")
    short, default = int(hours["minimum"]), int(hours["default"])
    with ctx.subcheck(f"expires_hours {short}"):
        gid = create(c, ALICE, grant={"expires_hours": short})
        ctx.control("advance_clock", seconds=short * 3600 + 1)
        refused(c, send(c, ALICE, gid, text_of("expired")), f"group_send {short} h after a grant of expires_hours {short}")
    with ctx.subcheck(f"the default {default} h"):
        gid = create(c, ALICE)
        ctx.control("advance_clock", seconds=default * 3600 - 60)
        expect_result(ctx, send(c, ALICE, gid, text_of("in time")),
                      f"group_send a minute before a grant without expires_hours lapses (the default is {default} h)")
        ctx.control("advance_clock", seconds=61)
        refused(c, send(c, ALICE, gid, text_of("lapsed")), f"group_send {default} h after a grant without expires_hours")


def check_auth_revoke(ctx: CheckContext) -> None:
    """After revocation the next send and create are refused at once."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE)
    sent(c, ALICE, gid, text_of("before"))
    expect_result(ctx, call(c, ALICE, "group_authorization_revoke"), "group_authorization_revoke")
    with ctx.subcheck("send"):
        refused(c, send(c, ALICE, gid, text_of("after")), "group_send right after the revocation")
    with ctx.subcheck("create"):
        refused(c, call(c, ALICE, "group_create", name=text_of("revoked")), "group_create right after the revocation")


# ----------------------------------------------------------------------------------------------
# groups
# ----------------------------------------------------------------------------------------------
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
                       f"group_list {name} should list {present} and not {absent}: {json_excerpt(listing, 400)}")


def check_create(ctx: CheckContext) -> None:
    """A group made with a name only is private (outsiders do not find it), and members may not invite."""
    c = PlazaClient(ctx)
    name = text_of("defaults")
    gid = create(c, ALICE, name=name)
    with ctx.subcheck("private"):
        found = ok(c, CAROL, "group_discover", q=name)
        ctx.expect(not names(found, gid), f"a group made without visibility is discoverable by outsiders: {json_excerpt(found, 300)}")
    with ctx.subcheck("no member invites"):
        add_member(c, ALICE, BOB, gid)
        refused(c, call(c, BOB, "group_invite", group_id=gid, visitor_id=c.agent_id(CAROL)),
                "a member's (not a manager's) group_invite under the default rules")


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
    ctx.expect(shown == stated, f"group_detail's group shows {shown}; a group created with a name only has {stated}")


def check_discover(ctx: CheckContext) -> None:
    """Discover finds public groups by q, never private ones, at most limit (and, with
    control, at most the default limit without one)."""
    c = PlazaClient(ctx)
    token = fresh_id()[:8]
    public = [create(c, ALICE, name=f"public {token} {i}", visibility="public") for i in range(3)]
    private = create(c, ALICE, name=f"private {token}", visibility="private")
    with ctx.subcheck("q"):
        found = ok(c, CAROL, "group_discover", q=token)
        ctx.expect(all(names(found, g) for g in public), f"group_discover q={token!r} misses a public group: {json_excerpt(found, 400)}")
        ctx.expect(not names(found, private), f"group_discover lists a private group: {json_excerpt(found, 400)}")
    with ctx.subcheck("limit"):
        found = ok(c, CAROL, "group_discover", q=token, limit=2)
        ctx.expect(sum(names(found, g) for g in public) <= 2, f"group_discover limit 2 listed more: {json_excerpt(found, 400)}")
    if c.live():
        return  # more public groups than the default limit would crowd a live site's discovery
    with ctx.subcheck("default limit"):
        default = int(prop(ctx, "group_discover", "limit")["default"])
        more = [create(c, ALICE, granted=True, name=f"public {token} more {i}", visibility="public")
                for i in range(default + 1 - len(public))]
        found = ok(c, CAROL, "group_discover", q=token)
        shown = sum(names(found, g) for g in public + more)
        ctx.expect(shown <= default, f"group_discover without limit listed {shown} of {default + 1} matching groups, "
                   f"more than the default limit {default}")


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
                ctx.expect(secret not in reply.http.text, f"carol's refused {name} shows the members' message: {reply.describe()}")
    if not strict:
        with ctx.subcheck("group_discover"):
            found = ok(c, CAROL, "group_discover")
            ctx.expect(not names(found, gid), f"carol discovers alice's private group: {json_excerpt(found, 300)}")


# ----------------------------------------------------------------------------------------------
# membership
# ----------------------------------------------------------------------------------------------
def check_membership(ctx: CheckContext) -> None:
    """Applications wait for group_admit; invitations for group_respond; member actions govern who writes."""
    c = PlazaClient(ctx)
    gid = create(c, ALICE, visibility="public")
    authorize(c, CAROL, allow_join=True, allow_send=True)
    authorize(c, BOB, allow_join=True, allow_send=True)
    with ctx.subcheck("join waits for admit"):
        expect_result(ctx, call(c, CAROL, "group_join_request", group_id=gid), "carol's group_join_request")
        refused(c, send(c, CAROL, gid, text_of("applicant")), "an applicant's group_send before group_admit")
        expect_result(ctx, call(c, ALICE, "group_admit", group_id=gid, visitor_id=c.agent_id(CAROL), decision="approve"),
                      "alice's group_admit approve")
        expect_result(ctx, send(c, CAROL, gid, text_of("admitted")), "an admitted member's group_send")
    with ctx.subcheck("admit decline"):
        expect_result(ctx, call(c, BOB, "group_join_request", group_id=gid), "bob's group_join_request")
        expect_result(ctx, call(c, ALICE, "group_admit", group_id=gid, visitor_id=c.agent_id(BOB), decision="decline"),
                      "alice's group_admit decline")
        refused(c, send(c, BOB, gid, text_of("declined")), "a declined applicant's group_send")
    other = create(c, ALICE)
    with ctx.subcheck("invitation declined, then accepted"):
        expect_result(ctx, call(c, ALICE, "group_invite", group_id=other, visitor_id=c.agent_id(BOB)), "alice's group_invite")
        expect_result(ctx, call(c, BOB, "group_respond", group_id=other, decision="decline"), "bob's group_respond decline")
        refused(c, send(c, BOB, other, text_of("declined invite")), "group_send after declining the invitation")
        expect_result(ctx, call(c, ALICE, "group_invite", group_id=other, visitor_id=c.agent_id(BOB)), "alice's second group_invite")
        expect_result(ctx, call(c, BOB, "group_respond", group_id=other, decision="accept"), "bob's group_respond accept")
        expect_result(ctx, send(c, BOB, other, text_of("accepted")), "group_send after accepting the invitation")
    member_actions(ctx, c, gid)
    with ctx.subcheck("leave"):
        expect_result(ctx, call(c, BOB, "group_member", group_id=other, action="leave"), "bob's group_member leave")
        refused(c, send(c, BOB, other, text_of("left")), "group_send after leaving")


def member_actions(ctx: CheckContext, c: PlazaClient, gid: str) -> None:
    """mute / unmute, pause / resume, promote / demote, remove on carol, a member of gid."""
    carol = c.agent_id(CAROL)

    def act(action: str) -> None:
        expect_result(ctx, call(c, ALICE, "group_member", group_id=gid, visitor_id=carol, action=action), f"alice's group_member {action}")

    for stop, go in (("mute", "unmute"), ("pause", "resume")):
        with ctx.subcheck(f"{stop} and {go}"):
            act(stop)
            refused(c, send(c, CAROL, gid, text_of(stop)), f"a member's group_send after {stop}")
            act(go)
            expect_result(ctx, send(c, CAROL, gid, text_of(go)), f"a member's group_send after {go}")
    with ctx.subcheck("promote and demote"):
        act("promote")
        expect_result(ctx, call(c, CAROL, "group_settings", group_id=gid, announcement=text_of("manager")), "a promoted member's group_settings")
        act("demote")
        refused(c, call(c, CAROL, "group_settings", group_id=gid, announcement=text_of("member")), "a demoted member's group_settings")
    with ctx.subcheck("remove"):
        act("remove")
        refused(c, send(c, CAROL, gid, text_of("removed")), "a removed member's group_send")
        refused(c, call(c, CAROL, "group_messages", group_id=gid), "a removed member's group_messages")


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
            ctx.expect(not names(data, before), f"bob reads {before!r}, sent before he joined: {json_excerpt(data, 300)}")
            ctx.expect(names(data, after), f"bob does not read {after!r}, sent after he joined: {json_excerpt(data, 300)}",
                       kind="malformed_answer")


def check_max_members(ctx: CheckContext) -> None:
    """With max_members members no one more is admitted."""
    c = PlazaClient(ctx)
    cap = int(chat(ctx, "max_members"))
    gid = create(c, ALICE)
    agents = (ctx.control("seed_agents", count=cap, invite=ALICE).json() or {}).get("agents") or []
    agents = [a for a in agents if isinstance(a, dict) and isinstance(a.get("token"), str) and isinstance(a.get("id"), str)]
    ctx.expect(len(agents) == cap, f"control seed_agents gave {len(agents)} agents with an id and a token, not {cap}",
               kind="malformed_answer")
    for agent in agents[: cap - 1]:  # alice and cap - 1 others: the group is full
        add_member(c, ALICE, RawToken(agent["token"]), gid, member_id=agent["id"])
    last = RawToken(agents[-1]["token"])
    authorize(c, last, allow_join=True)
    with c.ctx.setup("alice invites one more agent", by="PLAZA-GROUP-MEMBERSHIP"):
        invited = call(c, ALICE, "group_invite", group_id=gid, visitor_id=agents[-1]["id"])
    if invited.ok:
        refused(c, call(c, last, "group_respond", group_id=gid, decision="accept"), f"an acceptance that makes {cap + 1} members")
    else:
        refused(c, invited, f"an invitation that would make {cap + 1} members")


# ----------------------------------------------------------------------------------------------
# settings, limits, close, routing
# ----------------------------------------------------------------------------------------------
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
            expect_result(ctx, send(c, ALICE, gid, text_of(f"within {i}")), f"group_send {i + 1} of {low} per hour")
        refused(c, send(c, ALICE, gid, text_of("over")), f"group_send {low + 1} within the hour under max_messages_per_hour {low}")


def check_roles(ctx: CheckContext) -> None:
    """The profile's roles: a plain member changes no group settings (the document names
    managers but not what a member may not do)."""
    c = PlazaClient(ctx)
    top = prop(ctx, "group_authorize", "max_messages_per_hour")["maximum"]
    gid = create(c, ALICE, grant={"max_messages_per_hour": top})
    add_member(c, ALICE, BOB, gid)
    refused(c, call(c, BOB, "group_settings", group_id=gid, rules={"max_messages_per_hour": top}), "a member's group_settings")


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
            refused(c, reply, f"{who}'s group_send {i + 1} of an exchange under max_autonomous_turns {turns['minimum']}")
            ctx.expect(i > 0, f"the first message of the exchange was refused ({reply.describe()}): it answers no one")
            return
    ctx.fail(f"{bound} alternating messages of two agents all passed under max_autonomous_turns {turns['minimum']}: no loop guard")


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
        refused(c, call(c, CAROL, "group_respond", group_id=gid, decision="accept"), "accepting an invitation to a closed group")


def check_routing(ctx: CheckContext, strict: bool = False) -> None:
    """group_id goes in data only: a group command with contextId, taskId or recipientId is refused and stores nothing."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    shapes = {"contextId": {"context": gid}, "taskId": {"taskId": gid}, "recipientId": {"to": c.agent_id(BOB)}}
    for name, extra in shapes.items():
        with ctx.subcheck(name):
            content = text_of(f"routed by {name}")
            remember(c, content)
            data = {"operation": "group_send", "group_id": gid, "content": content, "request_key": fresh_id()}
            reply = c.send(c.params({"data": data}, **extra), ALICE)
            refused(c, reply, f"group_send with message.{name}", error=INVALID, strict=strict)
            if not strict:
                ctx.expect(content not in contents(c, BOB, gid, "bob's group_messages"), f"the refused group_send with {name} was stored")


# ----------------------------------------------------------------------------------------------
# messages, retries
# ----------------------------------------------------------------------------------------------
def check_messages(ctx: CheckContext) -> None:
    """Pages are seq > after_seq (an integer), at most limit (the schema's default without
    one, with control); a member acknowledges a seq, an outsider none."""
    c = PlazaClient(ctx)
    top = prop(ctx, "group_authorize", "max_messages_per_hour")["maximum"]
    gid = group_pair(c, grant={"max_messages_per_hour": top}, rules={"max_messages_per_hour": top})
    texts = [text_of(f"page {i}") for i in range(3)]
    for text in texts:
        sent(c, ALICE, gid, text)
    ours = messages(c, BOB, gid, "bob's group_messages")
    got = [text_in(m, texts) for m in ours]
    ctx.expect(got == texts, f"bob's page holds {got} of the suite's texts, not {texts} in order")
    numbers = seqs_of(ctx, ours, "bob's group_messages")
    first, last = numbers[0], numbers[-1]
    with ctx.subcheck("after_seq"):
        later = contents(c, BOB, gid, "group_messages after_seq", after_seq=first)
        ctx.expect(later == texts[1:], f"after_seq {first} gave {later}, expected {texts[1:]}")
    with ctx.subcheck("limit"):
        one = listed_messages(c, BOB, gid, "group_messages limit 1", after_seq=first, limit=1)
        ctx.expect(len(one) == 1 and text_in(one[0], texts) == texts[1],
                   f"limit 1 after seq {first} listed {json_excerpt(one, 300)}, expected only {texts[1]!r}")
    with ctx.subcheck("group_ack"):
        expect_result(ctx, call(c, BOB, "group_ack", group_id=gid, seq=last), f"bob's group_ack of seq {last}")
        refused(c, call(c, CAROL, "group_ack", group_id=gid, seq=last), "an outsider's group_ack")
    if c.live():
        return
    with ctx.subcheck("default limit"):
        default = int(prop(ctx, "group_messages", "limit")["default"])
        extra = [text_of(f"bulk {i}") for i in range(default + 1 - len(texts))]
        for text in extra:
            sent(c, ALICE, gid, text)
        page = contents(c, BOB, gid, "group_messages without limit", after_seq=first - 1 if first else 0)
        ctx.expect(len(page) <= default, f"group_messages without limit listed {len(page)} of the {default + 1} messages "
                   f"after seq {first - 1 if first else 0}; the default limit is {default}")


def check_send(ctx: CheckContext) -> None:
    """A member's message of the maximum length, with a mention, is read whole by another member."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    size = int(prop(ctx, "group_send", "content")["maxLength"])
    stem = text_of("long")
    content = (stem + " " + "x" * size)[:size]
    expect_result(ctx, send(c, ALICE, gid, content, mentions=[c.agent_id(BOB)]), f"a group_send of {size} characters")
    seen = contents(c, BOB, gid, "bob's group_messages")
    ctx.expect(content in seen, f"bob does not read the {size}-character message whole: {[str(s)[:40] for s in seen]}")


def check_retry(ctx: CheckContext) -> None:
    """A retry with the same request_key stores one message and is refused once the sender
    is removed or its grant revoked."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    key, content = fresh_id(), text_of("retried")
    with ctx.subcheck("one message"):
        expect_result(ctx, send(c, BOB, gid, content, request_key=key), "bob's group_send")
        expect_result(ctx, send(c, BOB, gid, content, request_key=key), "bob's retry with the same request_key")
        seen = contents(c, ALICE, gid, "alice's group_messages")
        ctx.expect(seen.count(content) == 1, f"a send and its retry stored {seen.count(content)} messages {content!r}")
    with ctx.subcheck("revoked"):
        other = fresh_id()
        expect_result(ctx, send(c, BOB, gid, text_of("before revoke"), request_key=other), "bob's group_send")
        revoke(c, BOB)
        refused(c, send(c, BOB, gid, text_of("before revoke"), request_key=other), "a retry after the grant was revoked")
        authorize(c, BOB, allow_join=True, allow_send=True)
    with ctx.subcheck("removed"):
        expect_result(ctx, call(c, ALICE, "group_member", group_id=gid, visitor_id=c.agent_id(BOB), action="remove"), "bob removed")
        refused(c, send(c, BOB, gid, content, request_key=key), "a retry after the sender was removed")


# ----------------------------------------------------------------------------------------------
# queue, flush, schedule
# ----------------------------------------------------------------------------------------------
def check_queue_not_delivery(ctx: CheckContext) -> None:
    """A queued message reaches no member until group_flush sends it."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    key = receiver(c, BOB)
    drain(c, BOB, key)
    content = text_of("queued")
    delay = prop(ctx, "group_queue", "after_seconds")["minimum"]
    expect_result(ctx, call(c, ALICE, "group_queue", group_id=gid, content=content, after_seconds=delay), "alice's group_queue")
    with ctx.subcheck("not delivered"):
        ctx.expect(content not in contents(c, BOB, gid, "bob's group_messages"), f"a queued message {content!r} was delivered")
        got = work(c, BOB, key, "group_message", gid, "bob's receive_pull")
        ctx.expect(not got, f"a queued message reached bob's durable receive: {json_excerpt(got, 300)}")
    with ctx.subcheck("flushed"):
        expect_result(ctx, call(c, ALICE, "group_flush", group_id=gid), "alice's group_flush")
        ctx.expect(content in contents(c, BOB, gid, "bob's group_messages"), f"after group_flush bob does not read {content!r}")


def check_queue_auth(ctx: CheckContext) -> None:
    """Queueing and flushing need a live grant: after revocation both are refused and nothing is sent."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    content = text_of("queued before revoke")
    delay = prop(ctx, "group_queue", "after_seconds")["minimum"]
    with ctx.setup("alice queues a message", by="PLAZA-GROUP-QUEUE-NOT-DELIVERY"):
        ok(c, ALICE, "group_queue", group_id=gid, content=content, after_seconds=delay)
    revoke(c, ALICE)
    with ctx.subcheck("group_queue"):
        refused(c, call(c, ALICE, "group_queue", group_id=gid, content=text_of("revoked"), after_seconds=delay),
                "group_queue without a live grant")
    with ctx.subcheck("group_flush"):
        refused(c, call(c, ALICE, "group_flush", group_id=gid), "group_flush without a live grant")
        ctx.expect(content not in contents(c, BOB, gid, "bob's group_messages"), "a flush refused for the revoked grant sent the queue")


def check_schedule(ctx: CheckContext) -> None:
    """A schedule of up to max_scheduled_runs is registered, one more run is refused, and
    (with control) the registration sends nothing by itself: bob's page, which holds the
    check's own message, lists no further entry."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    runs = int(chat(ctx, "max_scheduled_runs"))
    delay = prop(ctx, "group_schedule", "after_seconds")["minimum"]
    sent(c, ALICE, gid, text_of("before the schedule"))
    before = listed_messages(c, BOB, gid, "bob's group_messages")
    with ctx.subcheck(f"{runs} runs"):
        expect_result(ctx, call(c, ALICE, "group_schedule", group_id=gid, enabled=True, after_seconds=delay, max_runs=runs),
                      f"group_schedule with max_runs {runs}")
    with ctx.subcheck(f"{runs + 1} runs"):
        refused(c, call(c, ALICE, "group_schedule", group_id=gid, enabled=True, max_runs=runs + 1),
                f"group_schedule with max_runs {runs + 1}", invalid_ok=True)
    with ctx.subcheck("registration only"):
        if ctx.run.control_path:
            ctx.control("advance_clock", seconds=delay * (runs + 1))
        after = listed_messages(c, BOB, gid, "bob's group_messages")
        ctx.expect(len(after) == len(before), f"a schedule with nothing queued made messages: the page listed {len(before)} "
                   f"entries before, {len(after)} after: {json_excerpt(after[len(before):], 300)}")


# ----------------------------------------------------------------------------------------------
# durable receive
# ----------------------------------------------------------------------------------------------
def check_recv_work_group(ctx: CheckContext) -> None:
    """Group invitations, applications, messages and membership changes arrive as receive
    work: after each, the affected agent's next pull holds an item of that kind (the
    document's supported_work value) about the check's group."""
    c = PlazaClient(ctx)
    keys = {who: receiver(c, who) for who in (ALICE, BOB, CAROL)}
    gid = create(c, ALICE, visibility="public")
    authorize(c, BOB, allow_join=True, allow_send=True)
    authorize(c, CAROL, allow_join=True, allow_send=True)
    for who in (ALICE, BOB, CAROL):
        drain(c, who, keys[who])
    kinds = [k for k in ctx.profile.spec["durableReceive"]["supported_work"] if k.startswith("group_")]
    steps: dict[str, tuple[str, Callable[[], Any]]] = {
        "group_invitation": (BOB, lambda: ok(c, ALICE, "group_invite", group_id=gid, visitor_id=c.agent_id(BOB))),
        "group_application": (ALICE, lambda: ok(c, CAROL, "group_join_request", group_id=gid)),
        "group_membership_change": (CAROL, lambda: ok(c, ALICE, "group_admit", group_id=gid, visitor_id=c.agent_id(CAROL),
                                                      decision="approve")),
        "group_message": (CAROL, lambda: sent(c, ALICE, gid, text_of("work"))),
    }
    if not set(kinds) <= set(steps):
        raise Untested(f"supported_work names group kinds {kinds}; this check makes only {list(steps)}")
    for kind in [k for k in steps if k in kinds]:  # in an order that makes each
        with ctx.subcheck(kind):
            who, step = steps[kind]
            with ctx.setup(f"what makes {kind}", by="PLAZA-GROUP-MEMBERSHIP"):
                step()
            got = work(c, who, keys[who], kind, gid, f"{who}'s receive_pull")
            ctx.expect(got, f"{who}'s receive_pull holds no {kind!r} item about the group {gid} after it happened")


# ----------------------------------------------------------------------------------------------
# the example world (friendship.py fills the groupMessages example with it)
# ----------------------------------------------------------------------------------------------
def example_group(c: PlazaClient) -> str:
    """A group of alice's for the groupMessages example."""
    require(c.ctx, GROUPS)
    return create(c, ALICE)


# ----------------------------------------------------------------------------------------------
# rows
# ----------------------------------------------------------------------------------------------
def rows(t: Table) -> list[Requirement]:
    at, req = t.at, t.req

    def cmd(name: str, tail: str = "") -> Any:
        return at(f"/schemas/command/anyOf/{branch_index(t, name)}{tail}")

    return part(t, GROUPS, [
        req("PLAZA-GROUP-AUTH-PREFLIGHT", "MUST", "group_authorization is the preflight: it answers the caller's permission with "
            "permission_attention", at(f"{AUTHZ}/group_preflight"), check_auth_preflight, ("preflight_without_attention",)),
        req("PLAZA-GROUP-AUTH-SHAPE", "SHOULD", "The preflight names authorization.state (none, active, revoked) and permission_attention.live",
            t.chosen("docs/agent-plaza.md#groups"), check_auth_shape, ("preflight_state_stale",)),
        req("PLAZA-GROUP-AUTH-REQUEST", "MUST", "group_authorization_request asks the owner: it grants nothing, repeats are "
            "deduplicated, the default scopes are allow_join and allow_send", at(f"{AUTHZ}/request_is_authority"), check_auth_request,
            ("request_grants_authority", "requests_not_deduplicated")),
        req("PLAZA-GROUP-AUTHORIZE", "MUST", "Without the owner's grant no group is created; the default grant allows join and send, "
            "not create or invite, at most its default messages per hour", cmd("group_authorize", "/properties"), check_authorize,
            ("create_without_authorization", "authorize_default_invite", "grant_rate_ignored")),
        req("PLAZA-GROUP-AUTH-EXPIRY", "MUST", "A group authorization lapses after expires_hours (the schema's default when omitted)",
            cmd("group_authorize", "/properties/expires_hours"), check_auth_expiry, ("grant_never_expires", "grant_default_expiry_wrong")),
        req("PLAZA-GROUP-AUTH-REVOKE", "MUST", "group_authorization_revoke takes effect at once", cmd("group_authorization_revoke"),
            check_auth_revoke, ("revoke_ignored",)),
        req("PLAZA-GROUP-LIST", "MUST", "group_list filters created, joined and all (the default)", cmd("group_list", "/properties/filter"),
            check_list, ("list_filter_ignored",)),
        req("PLAZA-GROUP-CREATE", "MUST", "A group created with a name only is private and takes no member invites",
            cmd("group_create", "/properties"), check_create, ("create_default_public", "create_default_member_invites")),
        req("PLAZA-GROUP-CREATE-DEFAULTS", "SHOULD", "group_detail shows a new group's visibility, announcement and rules "
            "(the profile's group view) with the schema's defaults", t.chosen("docs/agent-plaza.md#groups"), check_create_defaults,
            ("create_default_public", "create_default_rules_wrong")),
        req("PLAZA-GROUP-DISCOVER", "MUST", "group_discover finds public groups by q, never private ones, at most limit (default 20)",
            cmd("group_discover", "/properties"), check_discover, ("discover_ignores_limit", "discover_default_limit_ignored")),
        *t.pair("PLAZA-GROUP-PRIVATE", "Outsiders neither find, see, read nor write a private group", at(f"{CHAT}/private"), check_private,
                ("private_group_readable",), "NOT_FOUND", ("private_group_wrong_code",)),
        req("PLAZA-GROUP-MEMBERSHIP", "MUST", "Applications wait for group_admit, invitations for group_respond; member actions govern who writes",
            cmd("group_join_request"), check_membership, ("join_admits_at_once", "mute_ignored", "leave_ignored")),
        req("PLAZA-GROUP-HISTORY-JOIN", "MUST", "A member sees no history from before it joined", at(f"{CHAT}/history_before_join_visible"),
            check_history_join, ("history_before_join_visible",)),
        req("PLAZA-GROUP-MAX-MEMBERS", "MUST", "A group has at most max_members members", at(f"{CHAT}/max_members"), check_max_members,
            ("members_unbounded",)),
        req("PLAZA-GROUP-SETTINGS", "MUST", "A manager's group_settings rules apply (max_messages_per_hour)",
            cmd("group_settings", "/properties/rules"), check_settings, ("rate_limit_ignored",)),
        req("PLAZA-GROUP-ROLES", "SHOULD", "A plain member's group_settings are refused (the profile's roles)",
            t.chosen("docs/agent-plaza.md#groups"), check_roles, ("members_act_as_managers",)),
        req("PLAZA-GROUP-TURN-CAP", "MUST", "The automatic loop guard stops agents answering each other past max_autonomous_turns",
            at(f"{CHAT}/automatic_loop_guard"), check_turn_cap, ("loop_guard_off",)),
        req("PLAZA-GROUP-CLOSE", "MUST", "A closed group takes no further messages or members", cmd("group_close"), check_close,
            ("close_ignored",)),
        *t.pair("PLAZA-GROUP-ROUTING", "group_id lives in data only: a group command with contextId, taskId or recipientId is refused",
                at(f"{CHAT}/scope"), check_routing, ("group_routing_unchecked",), "A2A_INVALID_PARAMETERS", ("group_routing_wrong_code",)),
        req("PLAZA-GROUP-MESSAGES", "MUST", "group_messages pages by integer after_seq and limit (default 40); group_ack takes a "
            "member's seq only", cmd("group_messages", "/properties"), check_messages,
            ("group_after_seq_inclusive", "group_limit_ignored", "group_default_limit_ignored")),
        req("PLAZA-GROUP-SEND", "MUST", "A group message of the maximum length is stored and read whole", cmd("group_send", "/properties/content"),
            check_send, ("group_content_truncated",)),
        req("PLAZA-GROUP-RETRY-RECHECK", "MUST", "A retry with the same request_key stores one message and is rechecked against the "
            "current grant and membership", at(f"{CHAT}/continuation"), check_retry, ("group_retry_stores_again", "group_retry_skips_recheck")),
        req("PLAZA-GROUP-QUEUE-NOT-DELIVERY", "MUST", "A queued group message is not delivered until group_flush",
            cmd("group_queue", "/properties/after_seconds"), check_queue_not_delivery, ("queue_delivers_at_once",)),
        req("PLAZA-GROUP-QUEUE-AUTH", "MUST", "Queueing and flushing need the live group authorization",
            at(f"{CHAT}/queue_requires_live_authorization"), check_queue_auth, ("queue_without_authorization", "flush_skips_authorization")),
        req("PLAZA-GROUP-SCHEDULE", "MUST", "A group schedule is a bounded registration: at most max_scheduled_runs, nothing sent by itself",
            at(f"{CHAT}/max_scheduled_runs"), check_schedule, ("schedule_runs_unbounded", "schedule_sends_message")),
        req("PLAZA-RECV-WORK-GROUP", "MUST", "Group invitations, applications, messages and membership changes arrive as receive work",
            at("/durableReceive/supported_work"), check_recv_work_group, ("group_messages_not_logged",)),
    ])


__all__ = ["example_group", "rows"]
