"""Agent Plaza's groups (groupChat, issue 14), part one: what part 2 shares, the group calls
and set-up, and the owner's group authorization (preflight, requests that grant nothing,
grants with their scopes and expiry, revocation at once), each requirement declared on its
check with the faults that prove it can fail. Groups and membership are groups_membership.py;
messages, the queue, schedules and group work groups_messages.py; what the reference serves
reference_groups.py.

The document names commands and fields but no answer shapes (docs/architecture.md, "The
judging rule"): the MUST checks find what they judge by content -- the group id the target
minted (a UUID the request did not carry), the texts the suite sent (the only messages it
counts), the document's work kinds beside the group's id -- or by behaviour through a later
command (a member reads, a refused sender stores nothing). The profile's shapes are SHOULDs
of ``source: profile`` listed in the profile's ``shapes: rows:``. Set-up relays an owner's
grant with ``group_authorize`` (owner_authorized: true), as the branch requires.

The first section holds what the part-2 modules (groups, private.py, continuation.py) share:
an optional part asked once whether it is served (``served``), refusals judged by their
cause (``refused``), ids the target minted, and durable receive read by content."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from weakref import WeakKeyDictionary

from conformance import locate
from conformance.check import Blocked, CheckContext, CheckFailed, Untested
from conformance.checks.causes import cause_of
from conformance.checks.expect import catalog_entry, expect_result, refused_as
from conformance.declare import At, at, chosen, requirement
from conformance.faults import answer, replaces, returns
from conformance.model import Profile
from conformance.protocols.plaza.answers import text_of
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.site import Principal
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
PROBES = {GROUPS: "group_authorization", PRIVATE_RELAY: "private_capabilities",
          CONTINUATION: "continuation_status"}


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


def served(feature: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The check of a row of the optional part ``feature`` (declared ``optional=feature``):
    it asks first whether the target serves the part (once per run), so a target that
    declines it leaves the row untested with its answer, whatever order the rows run in."""
    def gate(check: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(check)
        def served_first(ctx: CheckContext, **kwargs: Any) -> None:
            require(ctx, feature)
            check(ctx, **kwargs)
        return served_first
    return gate


def refused(c: PlazaClient | CheckContext, reply: Reply, what: str, *, error: Any = None,
            strict: bool = False, invalid_ok: bool = False) -> None:
    """A refusal for the rule the check is about (the ambiguity rule: any refusal; ``strict``:
    ``error``, the profile's code). A refusal for another cause judges nothing: the command
    not served leaves the row untested, the credential or a quota blocks it, and invalid
    parameters for a schema-valid request (unless ``invalid_ok``: a semantically broken input
    another site may call invalid) is a failure."""
    ctx = c.ctx if isinstance(c, PlazaClient) else c
    if declined(ctx, reply):
        raise Untested(f"{what}: the target answers {UNSUPPORTED}, it does not serve this command: "
                       f"{reply.describe()}", "optional")
    cause = cause_of(ctx, reply)
    if cause is not None:
        raise Blocked(f"{what}: refused for the {cause}, not for what the check asks: {reply.describe()}",
                      kind="refusal_cause")
    if (not invalid_ok and not reply.ok and error != INVALID
            and reply.error_code == catalog_entry(ctx.profile, INVALID).code):
        ctx.fail(f"{what}: a schema-valid request was refused as invalid parameters ({reply.describe()}); "
                 "what the check asks is refused for another reason", kind="rejected_valid")
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
    return {str(v["id"]) for v in ctx.run.credentials.values() if isinstance(v, dict)
            and isinstance(v.get("id"), str)}


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
def branch_index(profile: Profile, name: str) -> int:
    branches = profile.spec["schemas"]["command"]["anyOf"]
    return next(i for i, b in enumerate(branches) if dig(b, "properties", "operation", "const") == name)


def command_at(name: str, tail: str = "") -> Callable[[Profile], At]:
    """The source of a rule a command's branch states (the branch found by its operation)."""
    return lambda profile: at(f"/schemas/command/anyOf/{branch_index(profile, name)}{tail}")


def prop(ctx: CheckContext, command: str, *path: str) -> Any:
    """A field's schema in a command's branch (``rules``' fields with ``"rules", name``)."""
    branch = ctx.profile.spec["schemas"]["command"]["anyOf"][branch_index(ctx.profile, command)]
    node: Any = branch["properties"]
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
def preflight_state_stale(ref: Any) -> None:
    """The preflight always describes the site before any grant."""
    @replaces(ref, "cmd_group_authorization")
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
def request_grants_authority(ref: Any) -> None:
    """An authorization request is taken as the grant itself (new authority automatically)."""
    @replaces(ref, "cmd_group_authorization_request")
    def request(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        scopes = {name: True for name in data.get("scopes", [])}
        ref.cmd_group_authorize(who, {"operation": "group_authorize", "owner_authorized": True,
                                      "request_key": ref.new_uuid(), **scopes})
        return out


@check_auth_request.fault
def requests_not_deduplicated(ref: Any) -> None:
    """Every authorization request is a new one, even while the same one is pending."""
    @replaces(ref, "cmd_group_authorization_request")
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
def grant_rate_ignored(ref: Any) -> None:
    """A grant's max_messages_per_hour is ignored: only the group's rule caps the rate."""
    @replaces(ref, "check_rate")
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
def grant_never_expires(ref: Any) -> None:
    """A limited grant never lapses (expires_hours ignored)."""
    @replaces(ref, "cmd_group_authorize")
    def authorize(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        ref.s["group_auth"][who.visitor_id]["expires_at"] = None
        return out


@check_auth_expiry.fault
def grant_default_expiry_wrong(ref: Any) -> None:
    """A grant without expires_hours lasts twice the schema's default."""
    default = ref.branches["group_authorize"]["properties"]["expires_hours"]["default"]
    lasting = asked_for("group_authorize", "expires_hours")

    @replaces(ref, "group_default")
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
def revoke_ignored(ref: Any) -> None:
    """group_authorization_revoke answers but the grant stays."""
    ref.cmd_group_authorization_revoke = lambda who, data: ref.permission_answer(who.visitor_id, revoked=True)
