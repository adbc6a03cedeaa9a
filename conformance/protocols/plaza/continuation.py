"""Continuation and direct offers (friendContinuation) and plan: capability declarations
are self-reported and grant nothing, a bound Agent cannot grant itself its owner's
permission, routing (global commands take no contextId, no taskId or recipientId
metadata), direct offers (status, expiry, decisions naming both offers, withdrawal,
retries by request_key rechecked), the site mailbox fallback and plan.

The document names the commands' fields but no answer shapes (docs/architecture.md, "The
judging rule"): the MUST checks find what they judge by content or behaviour -- an offer id is
the UUID the target minted, a declared flag is the boolean that moves when the caller declares
it against its default, a negotiation's preference is a value of the schema's enum, the
fallback's read request is found under the names the document gives it
(site_mailbox_fallback.a2a.read_request) and judged by sending it -- and the profile's own
choices (part_continuation.py, docs/agent-plaza.md) are SHOULDs of ``source: profile``.
Expiries move the site's clock with control ``advance_clock``; without control they are
untested. Continuation is an optional part (groups.py ``part``)."""

from __future__ import annotations

import base64
import copy
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from conformance import locate
from conformance.check import CheckContext, CheckFailed, Untested
from conformance.checks.errors import expect_result
from conformance.model import Requirement
from conformance.protocols.plaza.answers import text_of
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.groups import (
    CONTINUATION,
    declined,
    minted,
    names,
    part,
    refused,
    require,
    sent_strings,
)
from conformance.protocols.plaza.keeper import PLANS
from conformance.protocols.plaza.wire import INVALID
from conformance.table import Table
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt

HOUR_S = 3600
COMMANDS = "/schemas/command/anyOf"
FC = "/friendContinuation"
GLOBAL_COMMANDS = ("continuation_capabilities", "continuation_status")


# ----------------------------------------------------------------------------------------------
# helpers: answers are untrusted, another shape is a finding that quotes it
# ----------------------------------------------------------------------------------------------
def branch(ctx: CheckContext, name: str) -> dict[str, Any]:
    """The schema branch of a command (read from the document, never typed again)."""
    return dict(next(b for b in ctx.profile.spec["schemas"]["command"]["anyOf"] if b["properties"]["operation"]["const"] == name))


def walk(value: Any) -> Iterator[Any]:
    """Every value inside an answer (depth-bounded, breadth first)."""
    return (found.value for found in locate.walk(value))


def reported(answer: Any, key: str) -> list[Any]:
    """Every value the answer reports under ``key`` (a name the document gives), at any depth."""
    return [v[key] for v in walk(answer) if isinstance(v, dict) and key in v]


def leaves(answer: Any) -> dict[tuple[Any, ...], Any]:
    """The plain values of an answer by their place (two answers of one command share places)."""
    return {f.path: f.value for f in locate.walk(answer) if f.value is None or isinstance(f.value, str | int | float | bool)}


def flipped(a: Any, b: Any) -> list[tuple[Any, ...]]:
    """The places where one answer holds a boolean the other holds negated."""
    left, right = leaves(a), leaves(b)
    return [p for p, v in left.items() if isinstance(v, bool) and isinstance(right.get(p), bool) and right[p] is not v]


def endpoint(ctx: CheckContext) -> dict[str, Any]:
    """A direct endpoint the schema accepts: its protocol, first receive mode, an Ed25519 key."""
    require(ctx, CONTINUATION)  # the offer machine's first call: the part must be served
    props = branch(ctx, "direct_offer")["properties"]["endpoint"]["properties"]
    key = props["public_key"]["properties"]
    x = base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
    return {"protocol": props["protocol"]["const"], "receive_mode": props["receive_mode"]["enum"][0],
            "url": "https://agent.example/direct", "public_key": {"kty": key["kty"]["const"], "crv": key["crv"]["const"], "x": x}}


def offer_fields(ctx: CheckContext, connection: str, key: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"connection_id": connection, "request_key": key or fresh_id(), "endpoint": endpoint(ctx), **extra}


def offer_id(c: PlazaClient, reply: Reply, what: str) -> str:
    """The id of the offer an answer made (a decision and a withdrawal must name it): the
    UUID the target minted, not one its request carried (the connection, the request_key)
    nor an agent's."""
    data = c.data_of(reply, what)
    found = minted(c.ctx, data, sent_strings(reply))
    if not found:
        raise CheckFailed(f"{what}: " + locate.Search("an offer id the target minted (a UUID the request did not carry "
                                                      "and no agent's)").looked_for(data), "malformed_answer")
    return found[0]


def make_offer(c: PlazaClient, who: str, connection: str, what: str, **extra: Any) -> str:
    with c.ctx.setup(what, by="PLAZA-DIRECT-OFFER"):
        return offer_id(c, c.command("direct_offer", offer_fields(c.ctx, connection, **extra), who), what)


def decide(c: PlazaClient, who: str, connection: str, own: str, peer: str, decision: str = "accept") -> Reply:
    return c.command("direct_decide", {"connection_id": connection, "offer_id": own, "peer_offer_id": peer, "decision": decision}, who)


def withdraw(c: PlazaClient, who: str, connection: str, offer: str) -> Reply:
    return c.command("direct_withdraw", {"connection_id": connection, "offer_id": offer}, who)


def needs_control(c: PlazaClient, why: str) -> None:
    if c.live():
        c.ctx.needs_control(why)


def advance(c: PlazaClient, seconds: int) -> None:
    c.ctx.control("advance_clock", seconds=seconds)


# ----------------------------------------------------------------------------------------------
# capabilities, negotiation, authority
# ----------------------------------------------------------------------------------------------
def check_capabilities(ctx: CheckContext) -> None:
    """A declared document's omitted flags take the schema's defaults (site_mailbox true, the
    others false), judged by behaviour: declaring each flag against its default moves a
    boolean of the answer to the declared value (so an omitted flag was at its default), and
    declaring nothing again moves every boolean back (the omitted flag took its default, not
    the value declared before)."""
    c = PlazaClient(ctx)
    defaults = {name: s["default"] for name, s in branch(ctx, "continuation_capabilities")["properties"]["document"]["properties"].items()}

    def declare(document: dict[str, Any]) -> dict[str, Any]:
        return c.data_of(c.command("continuation_capabilities", {"document": document}), f"continuation_capabilities {document}")

    base = declare({})
    silent: list[str] = []
    for name, default in defaults.items():
        with ctx.subcheck(name):
            turned = declare({name: not default})
            values = leaves(turned)
            if not [p for p in flipped(base, turned) if values[p] is (not default)]:
                silent.append(name)
            again = declare({})
            ctx.expect(not flipped(base, again), f"declaring {{}} after {{{name}: {not default}}} answered {json_excerpt(again)}, "
                       f"the first {{}} {json_excerpt(base)}: the omitted {name} kept the value declared before; omitted flags "
                       f"take the schema's defaults {defaults}", kind="state_changed")
    if len(silent) == len(defaults):
        raise Untested(f"declaring each flag against its default changed no boolean of the answer: it reports no declared "
                       f"flag to judge ({json_excerpt(base)})")
    ctx.expect(not silent, f"declaring {silent} against the schema's default changed nothing in the answer, which does report "
               f"the other flags: with the document omitting them they already had the declared value, not the defaults "
               f"{defaults} ({json_excerpt(base)})", kind="state_changed")


def check_negotiate(ctx: CheckContext) -> None:
    """A negotiation naming only its connection is answered as with the schema's defaults
    (preference automatic, request_owner_permission true), where the answers show the
    difference (values of the preference enum, a boolean that follows
    request_owner_permission); a stranger does not negotiate in others' connection."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    props = branch(ctx, "continuation_negotiate")["properties"]

    def negotiate(what: str, **fields: Any) -> dict[str, Any]:
        return c.data_of(c.command("continuation_negotiate", {"connection_id": connection, **fields}), what)

    bare = negotiate("continuation_negotiate naming only its connection")
    with ctx.subcheck("preference"):
        enum, default = props["preference"]["enum"], props["preference"]["default"]
        shown = {v: Counter(f.value for f in locate.enum_values(negotiate(f"preference {v}", preference=v), enum)) for v in enum}
        if len({tuple(sorted(counts.items())) for counts in shown.values()}) > 1:  # the answer shows the preference
            got = Counter(f.value for f in locate.enum_values(bare, enum))
            ctx.expect(got == shown[default], f"without preference the negotiation reports the values {dict(got)}; with the "
                       f"schema's default {default!r} it reports {dict(shown[default])}", kind="state_changed")
    with ctx.subcheck("request_owner_permission"):
        default = props["request_owner_permission"]["default"]
        chosen = {v: negotiate(f"request_owner_permission {v}", request_owner_permission=v) for v in (True, False)}
        moved = flipped(chosen[True], chosen[False])
        wrong = [p for p in moved if leaves(bare).get(p) is not leaves(chosen[default]).get(p)]
        ctx.expect(not wrong, f"without request_owner_permission the negotiation answers {json_excerpt(bare)}; with the "
                   f"schema's default {default} it answers {json_excerpt(chosen[default])}", kind="state_changed")
    refused(ctx, c.command("continuation_negotiate", {"connection_id": connection}, CAROL),
            "carol's continuation_negotiate in alice and bob's connection")


def declare_everything(c: PlazaClient, who: str) -> None:
    flags = branch(c.ctx, "continuation_capabilities")["properties"]["document"]["properties"]
    with c.ctx.setup(f"{who} declares every capability", by="PLAZA-CONT-CAPABILITIES"):
        expect_result(c.ctx, c.command("continuation_capabilities", {"document": {k: True for k in flags}}, who),
                      "continuation_capabilities declaring everything")


def check_self_reported(ctx: CheckContext) -> None:
    """Declaring every capability authorizes nothing: no offer on a pending invitation,
    none in a connection of others."""
    c = PlazaClient(ctx)
    declare_everything(c, ALICE)
    declare_everything(c, CAROL)
    _, pending = c.invite(ALICE, BOB)
    refused(ctx, c.command("direct_offer", offer_fields(ctx, pending), ALICE),
            "alice's direct_offer on a pending invitation after declaring every capability")
    refused(ctx, c.command("continuation_negotiate", {"connection_id": pending}, ALICE),
            "alice's continuation_negotiate on a pending invitation after declaring every capability")
    refused(ctx, c.command("direct_offer", offer_fields(ctx, pending), CAROL),
            "carol's direct_offer in alice and bob's connection after declaring every capability")


def check_no_self_grant(ctx: CheckContext) -> None:
    """alice's bound account Agent (the reader credential) claiming external owner
    delegation gets no direct offer through: the claim is no grant."""
    c = PlazaClient(ctx)
    if ctx.credential("reader") is None:
        raise Untested("needs credentials.reader: an account Agent credential of alice", "credential")
    connection = c.befriend()
    c.command("continuation_capabilities", {"document": {"external_owner_delegation": True}}, "reader")
    fields = offer_fields(ctx, connection, external_owner_delegation=True)
    refused(ctx, c.command("direct_offer", fields, "reader"), "the bound Agent's direct_offer claiming external_owner_delegation")


# ----------------------------------------------------------------------------------------------
# routing
# ----------------------------------------------------------------------------------------------
def check_global_no_context(ctx: CheckContext) -> None:
    """continuation_status without connection_id is the global status; a contextId on a
    global command is refused or ignored, never taken as the connection it names."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    c.data_of(c.command("continuation_status", {}), "continuation_status without connection_id (the global status)")
    for name in GLOBAL_COMMANDS:
        with ctx.subcheck(name):
            bare = c.data_of(c.command(name, {}), f"{name} without contextId")
            reply = c.command(name, {}, context=connection)
            if not reply.ok:
                continue  # refusing is one reading of "omit contextId"
            routed = c.data_of(reply, f"{name} with a contextId")
            ctx.expect(routed == bare, f"{name} with contextId {connection} answered {json_excerpt(routed)}, without it "
                       f"{json_excerpt(bare)}: a global command is not routed by contextId", kind="state_changed")


def check_global_context_ignored(ctx: CheckContext) -> None:
    """The profile's choice: a contextId on a global command is ignored (the answer is the
    global one and names no context), as for status, discover and friends."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    for name in GLOBAL_COMMANDS:
        with ctx.subcheck(name):
            message = c.message_of(c.command(name, {}, context=connection), f"{name} with a contextId")
            ctx.expect("contextId" not in message, f"{name} answered in context {message.get('contextId')!r}; a global "
                       "command's answer names no context", kind="state_changed")


def check_no_task_recipient(ctx: CheckContext, strict: bool = False) -> None:
    """Continuation commands with message.taskId or recipientId metadata are refused."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    cases: dict[str, tuple[str, dict[str, Any]]] = {
        "continuation_status": ("continuation_status", {"connection_id": connection}),
        "direct_status": ("direct_status", {"connection_id": connection}),
        "continuation_capabilities": ("continuation_capabilities", {}),
    }
    for label, (name, fields) in cases.items():
        with ctx.subcheck(f"{label} with taskId"):
            refused(ctx, c.command(name, fields, taskId=fresh_id()), f"{name} with message.taskId", error=INVALID, strict=strict)
        with ctx.subcheck(f"{label} with recipientId"):
            reply = c.command(name, fields, metadata={c.ext: {"recipientId": c.agent_id(BOB)}})
            refused(ctx, reply, f"{name} with recipientId metadata", error=INVALID, strict=strict)


# ----------------------------------------------------------------------------------------------
# direct offers
# ----------------------------------------------------------------------------------------------
def status_mentions(c: PlazaClient, who: str, connection: str, needle: str) -> bool:
    data = c.data_of(c.command("direct_status", {"connection_id": connection}, who), f"direct_status as {who}")
    return any(isinstance(v, str) and v == needle for v in walk(data))


def check_offer(ctx: CheckContext) -> None:
    """An offer naming the direct protocol, a receive mode and an Ed25519 key is answered;
    direct_status reports it to both participants and to nobody else."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    fields = offer_fields(ctx, connection)
    offer = offer_id(c, c.command("direct_offer", fields), "direct_offer")
    for who in (ALICE, BOB):
        ctx.expect(status_mentions(c, who, connection, offer), f"direct_status as {who} does not report offer {offer}",
                   kind="state_changed")
    refused(ctx, c.command("direct_status", {"connection_id": connection}, CAROL), "carol's direct_status of alice and bob's connection")


def check_offer_expiry(ctx: CheckContext) -> None:
    """An offer expires expires_hours after it is made (the schema's default when omitted):
    then it is no longer decided or retried."""
    c = PlazaClient(ctx)
    needs_control(c, "expiry needs the site's clock moved (advance_clock)")
    hours = branch(ctx, "direct_offer")["properties"]["expires_hours"]
    short, default = int(hours["minimum"]), int(hours["default"])
    connection = c.befriend()
    key = fresh_id()
    fields = offer_fields(ctx, connection, key, expires_hours=short)
    mine = offer_id(c, c.command("direct_offer", fields), f"direct_offer with expires_hours {short}")
    peer_fields = offer_fields(ctx, connection)
    peer = offer_id(c, c.command("direct_offer", peer_fields, BOB), "bob's direct_offer (default expiry)")
    advance(c, short * HOUR_S + 1)
    with ctx.subcheck(f"after {short} h"):
        refused(ctx, decide(c, BOB, connection, peer, mine), f"deciding with an offer {short} h past its expires_hours")
        refused(ctx, c.command("direct_offer", copy.deepcopy(fields)), f"retrying an offer {short} h past its expires_hours")
    with ctx.subcheck(f"the default ({default} h) not yet passed"):
        again = c.command("direct_offer", copy.deepcopy(peer_fields), BOB)
        ctx.expect(again.ok and offer_id(c, again, "bob's retry") == peer,
                   f"bob's offer without expires_hours is gone after {short} h ({again.describe()}); the default is {default} h",
                   kind="state_changed")
    advance(c, (default - short) * HOUR_S)
    with ctx.subcheck(f"after the default {default} h"):
        refused(ctx, c.command("direct_offer", copy.deepcopy(peer_fields), BOB), f"retrying an offer without expires_hours {default} h later")


def check_decide(ctx: CheckContext) -> None:
    """A decision names the caller's own offer and the peer's: a missing peer offer, the
    sides swapped or an offer of another connection are refused; both named, it is answered."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    mine = make_offer(c, ALICE, connection, "alice offers")
    with ctx.subcheck("no peer offer"):
        refused(ctx, decide(c, ALICE, connection, mine, fresh_id()), "a decision naming a peer offer that does not exist")
    peer = make_offer(c, BOB, connection, "bob offers")
    with ctx.subcheck("sides swapped"):
        refused(ctx, decide(c, ALICE, connection, peer, mine), "alice's decision naming bob's offer as her own")
    with ctx.subcheck("an offer of another connection"):
        other = c.befriend(ALICE, CAROL)
        foreign = make_offer(c, CAROL, other, "carol offers to alice")
        refused(ctx, decide(c, ALICE, connection, mine, foreign), "a decision naming an offer of another connection")
    with ctx.subcheck("both offers"):
        expect_result(ctx, decide(c, ALICE, connection, mine, peer), "alice's decision naming her offer and bob's")


def check_withdraw(ctx: CheckContext) -> None:
    """direct_withdraw ends the caller's own offer (no decision takes it after); the peer
    cannot withdraw it."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    mine = make_offer(c, ALICE, connection, "alice offers")
    peer = make_offer(c, BOB, connection, "bob offers")
    refused(ctx, withdraw(c, BOB, connection, mine), "bob withdrawing alice's offer")
    expect_result(ctx, withdraw(c, ALICE, connection, mine), "alice withdrawing her offer")
    refused(ctx, decide(c, BOB, connection, peer, mine), "a decision naming a withdrawn offer")


def check_retry(ctx: CheckContext) -> None:
    """The same request_key and data again answer the same offer while it stands, and are
    refused once it was withdrawn or the friendship ended (rechecked, not replayed)."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    fields = offer_fields(ctx, connection)
    first = offer_id(c, c.command("direct_offer", fields), "direct_offer")
    with ctx.subcheck("identical retry"):
        again = offer_id(c, c.command("direct_offer", copy.deepcopy(fields)), "the same direct_offer again")
        ctx.expect(again == first, f"the same request_key and data answered offer {again}, the original is {first}",
                   kind="state_changed")
    with ctx.subcheck("after withdraw"):
        with ctx.setup("alice withdraws her offer", by="PLAZA-DIRECT-WITHDRAW"):
            expect_result(ctx, withdraw(c, ALICE, connection, first), "direct_withdraw")
        refused(ctx, c.command("direct_offer", copy.deepcopy(fields)), "a retry of a withdrawn offer")
    with ctx.subcheck("after the friendship ended"):
        key_fields = offer_fields(ctx, connection)
        with ctx.setup("alice offers again", by="PLAZA-DIRECT-OFFER"):
            expect_result(ctx, c.command("direct_offer", key_fields), "a new direct_offer")
        with ctx.setup("alice removes the friendship", by="PLAZA-FRIEND-CONTROL"):
            expect_result(ctx, c.command("friend_control", {"connection_id": connection, "decision": "remove"}), "friend_control remove")
        refused(ctx, c.command("direct_offer", copy.deepcopy(key_fields)), "a retry of an offer after the friendship was removed")


# ----------------------------------------------------------------------------------------------
# the site mailbox
# ----------------------------------------------------------------------------------------------
def fallback_requests(data: dict[str, Any]) -> list[Any]:
    """The requests the answer offers at site_mailbox_fallback.a2a.read_request (the document's names)."""
    return [dig(f, "a2a", "read_request") for f in reported(data, "site_mailbox_fallback") if dig(f, "a2a", "read_request") is not None]


def text_parts(fallback: Any) -> list[Any]:
    """The text parts of the SendMessage requests a fallback offers (a request's vocabulary is
    the document's: params.message.parts[*].text)."""
    requests = [f.value for f in locate.walk(fallback) if isinstance(f.value, dict) and f.value.get("method") == "SendMessage"]
    parts = [p for r in requests for p in (dig(r, "params", "message", "parts") or []) if isinstance(p, dict)]
    return [p for p in parts if "text" in p]


def check_fallback(ctx: CheckContext) -> None:
    """An available fallback's a2a.read_request is a complete SendMessage (ROLE_USER, a
    read_conversation data part) that, sent as it is, reads the conversation (the text just
    written comes back); no request of the fallback carries a text part (the adapter
    supplies no reply text)."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    marker = text_of("before the fallback read")
    c.say(ALICE, connection, marker)
    data = c.data_of(c.command("continuation_negotiate", {"connection_id": connection}), "continuation_negotiate")
    found = fallback_requests(data)
    if not found:
        raise Untested("the negotiation offers no fallback: " + locate.Search("site_mailbox_fallback.a2a.read_request (the "
                                                                              "document's names)").looked_for(data))
    request = found[0]
    part = dig(request, "params", "message", "parts", 0, "data")
    ctx.expect(isinstance(request, dict) and request.get("jsonrpc") == "2.0" and request.get("method") == "SendMessage"
               and "id" in request and dig(request, "params", "message", "role") == ctx.profile.spec["wireFormat"]["requestRole"]
               and dig(part, "operation") == "read_conversation" and dig(part, "connection_id") == connection,
               f"site_mailbox_fallback.a2a.read_request is no complete SendMessage reading this conversation: {json_excerpt(request)}",
               kind="malformed_answer")
    for fallback in reported(data, "site_mailbox_fallback"):
        texts = text_parts(fallback)
        ctx.expect(not texts, f"the fallback's request carries reply text ({json_excerpt(texts)}): {json_excerpt(fallback)}",
                   kind="state_changed")
    reply = c.raw(json.dumps(request), ALICE)
    read = c.data_of(reply, "the fallback's read_request sent as it is")
    ctx.expect(names(read, marker), f"the fallback's read_request, sent as it is, does not read the conversation: alice's "
               f"text {marker!r} is not in its answer {json_excerpt(read)}", kind="state_changed")


REPLY_FIELDS = ("text", "reply", "reply_text")


def check_fallback_no_text(ctx: CheckContext) -> None:
    """The profile's reading of "no reply text is supplied": the fallback holds no member
    named for text (text, reply, reply_text) anywhere."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    data = c.data_of(c.command("continuation_negotiate", {"connection_id": connection}), "continuation_negotiate",
                     ("site_mailbox_fallback",))
    fallback = data["site_mailbox_fallback"]
    named = sorted({k for f in locate.walk(fallback) if isinstance(f.value, dict) for k in f.value if k in REPLY_FIELDS})
    ctx.expect(not named, f"the fallback supplies reply text ({named}): {json_excerpt(fallback)}", kind="state_changed")


def check_mailbox_remains(ctx: CheckContext) -> None:
    """After negotiating and exchanging direct endpoints, texts still travel by the site mailbox."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    with ctx.setup("both sides negotiate and exchange offers", by="PLAZA-DIRECT-DECIDE"):
        for who in (ALICE, BOB):
            expect_result(ctx, c.command("continuation_negotiate", {"connection_id": connection}, who), f"{who} negotiates")
        mine, peer = make_offer(c, ALICE, connection, "alice offers"), make_offer(c, BOB, connection, "bob offers")
        expect_result(ctx, decide(c, ALICE, connection, mine, peer), "alice accepts")
        expect_result(ctx, decide(c, BOB, connection, peer, mine), "bob accepts")
    text = f"still by mailbox {fresh_id()[:8]}"
    reply = c.text(ALICE, text, context=connection)
    ctx.expect(reply.ok, f"a text after the direct exchange was refused ({reply.describe()}); site mailbox chat remains available",
               kind="rejected_valid")
    data = c.data_of(c.command("read_conversation", {"connection_id": connection}, BOB), "bob reads the conversation")
    ctx.expect(names(data, text), f"bob does not find alice's text sent after the exchange: {json_excerpt(data)}", kind="state_changed")


# ----------------------------------------------------------------------------------------------
# plan
# ----------------------------------------------------------------------------------------------
def commission(**extra: Any) -> dict[str, Any]:
    return {"commission": {"goal": "Plan a reading group", **extra}}


def check_plan(ctx: CheckContext) -> None:
    """A commission within the schema's bounds is answered, and so is renewing the current plan."""
    ctx.lasting(ALICE, PLANS)
    c = PlazaClient(ctx)
    props = branch(ctx, "plan")["properties"]["commission"]["properties"]
    full = commission(max_turns=props["max_turns"]["maximum"], expires_hours=props["expires_hours"]["maximum"],
                      questions=[{"question": "Which book?"}] * props["questions"]["maxItems"])
    reply = c.command("plan", full)
    if declined(ctx, reply):
        raise Untested(f"the target answers plan as not served: {reply.describe()}", "optional")
    expect_result(ctx, reply, "plan with a commission at the schema's bounds")
    expect_result(ctx, c.command("plan", {"renew_current": True}), "plan renew_current with a current plan")


def plan_expiry(c: PlazaClient, what: str) -> Any:
    data = c.data_of(c.command("plan", {}), what)
    return dig(data, "plan", "expires_at")


def check_plan_renew(ctx: CheckContext) -> None:
    """The profile's choice: renew_current without a current plan (none, or expired) is
    INVALID_STATE; with one, its expiry counts again from now."""
    c = PlazaClient(ctx)
    needs_control(c, "expiry needs the site's clock moved (advance_clock)")
    refused(ctx, c.command("plan", {"renew_current": True}), "plan renew_current without any plan", error=INVALID_STATE_NAME, strict=True)
    expect_result(ctx, c.command("plan", commission(expires_hours=1)), "plan with expires_hours 1")
    before = plan_expiry(c, "the plan")
    advance(c, HOUR_S // 2)
    expect_result(ctx, c.command("plan", {"renew_current": True}), "plan renew_current")
    after = plan_expiry(c, "the renewed plan")
    ctx.expect(isinstance(before, str) and isinstance(after, str) and after > before,
               f"renewing moved the plan's expiry from {before!r} to {after!r}; it counts again from now", kind="state_changed")
    advance(c, HOUR_S + 1)
    refused(ctx, c.command("plan", {"renew_current": True}), "plan renew_current after the plan expired", error=INVALID_STATE_NAME,
            strict=True)


def check_plan_budget(ctx: CheckContext) -> None:
    """The profile's choice (final_send_checks explicit_budget): a current plan's max_turns
    bounds the agent's texts; renewing it restores the turns."""
    ctx.lasting(ALICE, PLANS)
    c = PlazaClient(ctx)
    connection = c.befriend()
    turns = int(branch(ctx, "plan")["properties"]["commission"]["properties"]["max_turns"]["minimum"]) + 1
    expect_result(ctx, c.command("plan", commission(max_turns=turns)), f"plan with max_turns {turns}")
    for n in range(turns):
        expect_result(ctx, c.text(ALICE, f"turn {n + 1}", context=connection), f"text {n + 1} of {turns} under the plan")
    refused(ctx, c.text(ALICE, "one turn too many", context=connection), f"text {turns + 1} under a plan of {turns} turns",
            error="NOT_PERMITTED", strict=True)
    expect_result(ctx, c.command("plan", {"renew_current": True}), "plan renew_current")
    expect_result(ctx, c.text(ALICE, "after renewing", context=connection), "a text after renewing the plan")


INVALID_STATE_NAME = "INVALID_STATE"


# ----------------------------------------------------------------------------------------------
# rows
# ----------------------------------------------------------------------------------------------
def rows(t: Table) -> list[Requirement]:
    at = t.at
    pair: Callable[..., list[Requirement]] = t.pair
    return part(t, CONTINUATION, [
        t.req("PLAZA-CONT-CAPABILITIES", "MUST", "Omitted capability flags take the schema's defaults",
              at(f"{COMMANDS}/6/properties/document/properties"), check_capabilities, ("capability_defaults_wrong",)),
        t.req("PLAZA-CONT-NEGOTIATE", "MUST", "continuation_negotiate takes the schema's defaults; only participants negotiate",
              at(f"{COMMANDS}/7/properties"), check_negotiate, ("negotiate_defaults_wrong", "negotiate_by_stranger")),
        t.req("PLAZA-CONT-SELF-REPORTED", "MUST", "Declared capabilities are self-reported and authorize nothing",
              at(f"{FC}/authority"), check_self_reported, ("declared_capabilities_authorize",)),
        t.req("PLAZA-CONT-NO-SELF-GRANT", "MUST", "A bound Agent cannot grant itself its owner's permission",
              at(f"{FC}/authority"), check_no_self_grant, ("delegation_claim_grants",)),
        t.req("PLAZA-ROUTE-GLOBAL-NO-CONTEXT", "MUST", "Global continuation commands take no contextId; continuation_status without "
              "connection_id is global", at(f"{FC}/routing"), check_global_no_context,
              ("global_status_needs_connection", "global_routed_by_context")),
        t.req("PLAZA-ROUTE-GLOBAL-NO-CONTEXT-IGNORED", "SHOULD", "A contextId on a global command is ignored; the answer names no context",
              t.chosen("docs/agent-plaza.md#continuation"), check_global_context_ignored, ("global_context_refused",)),
        *pair("PLAZA-ROUTE-NO-TASK-RECIPIENT", "Continuation commands take no taskId or recipientId metadata", at(f"{FC}/routing"),
              check_no_task_recipient, ("continuation_task_recipient_accepted",), INVALID, ("continuation_route_wrong_code",)),
        t.req("PLAZA-DIRECT-OFFER", "MUST", "A direct offer is answered and direct_status reports it to the connection's participants",
              at(f"{COMMANDS}/9/properties/endpoint"), check_offer, ("direct_status_hides_offers", "direct_status_foreign_readable")),
        t.req("PLAZA-DIRECT-OFFER-EXPIRY", "MUST", "A direct offer expires after expires_hours (default from the schema)",
              at(f"{COMMANDS}/9/properties/expires_hours"), check_offer_expiry, ("offers_never_expire", "offer_expiry_default_wrong")),
        t.req("PLAZA-DIRECT-DECIDE", "MUST", "A direct decision names the caller's own offer and the peer's",
              at(f"{COMMANDS}/10/required"), check_decide, ("decide_without_peer_offer", "decide_ignores_sides")),
        t.req("PLAZA-DIRECT-WITHDRAW", "MUST", "direct_withdraw ends the caller's own offer", at(f"{COMMANDS}/12"), check_withdraw,
              ("withdraw_ignored", "withdraw_peer_offer")),
        t.req("PLAZA-CONT-RETRY-RECHECK", "MUST", "A retried offer (same request_key) is the same offer, rechecked against current offers "
              "and permissions", at(f"{FC}/retries"), check_retry,
              ("retry_new_offer", "retry_after_withdraw_answered", "retry_after_removal_answered")),
        t.req("PLAZA-CONT-FALLBACK-READ-REQUEST", "MUST", "The fallback's a2a.read_request is a complete SendMessage reading the "
              "conversation; no request of the fallback carries reply text", at(f"{FC}/siteMailboxMapping"), check_fallback,
              ("fallback_read_request_incomplete", "fallback_request_with_text")),
        t.req("PLAZA-CONT-FALLBACK-NO-TEXT", "SHOULD", "The fallback holds no member named for reply text (text, reply, "
              "reply_text: the profile's reading of \"no reply text is supplied\")", t.chosen("docs/agent-plaza.md#continuation"),
              check_fallback_no_text, ("fallback_supplies_text",)),
        t.req("PLAZA-CONT-MAILBOX-REMAINS", "MUST", "Site mailbox chat stays available after negotiation and an endpoint exchange",
              at(f"{FC}/proof"), check_mailbox_remains, ("direct_exchange_closes_mailbox",)),
        t.req("PLAZA-PLAN", "MUST", "A plan commission within the schema's bounds is answered; renew_current renews the current plan",
              at(f"{COMMANDS}/51"), check_plan, ("plan_commission_refused", "renew_refused_with_plan"), lasting=PLANS),
        t.req("PLAZA-PLAN-RENEW", "SHOULD", "renew_current without a current plan is INVALID_STATE; renewing restarts the expiry",
              t.chosen("docs/agent-plaza.md#continuation"), check_plan_renew, ("renew_without_plan_answered", "renew_keeps_expiry"),
              lasting=PLANS),
        t.req("PLAZA-PLAN-BUDGET", "SHOULD", "A current plan's max_turns bounds the agent's texts; renewing restores them",
              t.chosen("docs/agent-plaza.md#continuation"), check_plan_budget, ("plan_budget_ignored", "renew_keeps_turns"),
              lasting=PLANS),
    ])
