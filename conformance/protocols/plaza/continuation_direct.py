"""Agent Plaza's continuation (friendContinuation, issue 14), part two: direct offers (status,
expiry, decisions naming both offers, withdrawal, retries by request_key rechecked) and the
site mailbox that stays beside them (the fallback's read request, no reply text), each
requirement declared on its check with the faults that prove it can fail. The calls and the
capability, routing and plan rows are continuation.py's; what the reference serves
reference/continuation.py."""

from __future__ import annotations

import copy
import json
from typing import Any

from conformance.checks.expect import expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, requirement
from conformance.kit.faults import answer, replaces
from conformance.protocols.plaza.answers import text_of
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.continuation_client import (
    COMMANDS,
    DOCS,
    FC,
    HOUR_S,
    Data,
    advance,
    as_participant,
    branch,
    decide,
    make_offer,
    needs_control,
    offer_fields,
    offer_id,
    reported,
    walk,
    withdraw,
)
from conformance.protocols.plaza.parts import CONTINUATION, names, refused, served
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.reference.continuation import EXCHANGED
from conformance.protocols.plaza.site import CLOSED, Principal
from conformance.transport.http import json_excerpt


# ----------------------------------------------------------------------------------------------
# direct offers
# ----------------------------------------------------------------------------------------------
def status_mentions(c: PlazaClient, who: str, connection: str, needle: str) -> bool:
    data = c.data_of(c.command("direct_status", {"connection_id": connection}, who),
                     f"direct_status as {who}")
    return any(isinstance(v, str) and v == needle for v in walk(data))


@requirement(id="PLAZA-DIRECT-OFFER", level="MUST", optional=CONTINUATION,
             title="A direct offer is answered and direct_status reports it to the connection's participants",
             source=at(f"{COMMANDS}/9/properties/endpoint"),
             faults=[answer("direct_status_hides_offers", "cmd_direct_status",
                            "direct_status leaves out the peer's offers (it reports the connection's "
                            "offers).", set={"peer_offers": []})])
@served(CONTINUATION)
def check_offer(ctx: CheckContext) -> None:
    """An offer naming the direct protocol, a receive mode and an Ed25519 key is answered;
    direct_status reports it to both participants and to nobody else."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    fields = offer_fields(ctx, connection)
    offer = offer_id(c, c.command("direct_offer", fields), "direct_offer")
    for who in (ALICE, BOB):
        ctx.expect(status_mentions(c, who, connection, offer),
                   f"direct_status as {who} does not report offer {offer}",
                   kind="state_changed")
    refused(ctx, c.command("direct_status", {"connection_id": connection}, CAROL),
            "carol's direct_status of alice and bob's connection")


@check_offer.fault
def direct_status_foreign_readable(ref: PlazaReference) -> None:
    """Anyone reads a connection's direct status (participants only)."""
    as_participant(ref, ref.cmd_direct_status)


@requirement(id="PLAZA-DIRECT-OFFER-EXPIRY", level="MUST", optional=CONTINUATION,
             title="A direct offer expires after expires_hours (default from the schema)",
             source=at(f"{COMMANDS}/9/properties/expires_hours"))
@served(CONTINUATION)
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
        refused(ctx, decide(c, BOB, connection, peer, mine),
                f"deciding with an offer {short} h past its expires_hours")
        refused(ctx, c.command("direct_offer", copy.deepcopy(fields)),
                f"retrying an offer {short} h past its expires_hours")
    with ctx.subcheck(f"the default ({default} h) not yet passed"):
        again = c.command("direct_offer", copy.deepcopy(peer_fields), BOB)
        ctx.expect(again.ok and offer_id(c, again, "bob's retry") == peer,
                   f"bob's offer without expires_hours is gone after {short} h ({again.describe()}); the "
                   f"default is {default} h",
                   kind="state_changed")
    advance(c, (default - short) * HOUR_S)
    with ctx.subcheck(f"after the default {default} h"):
        refused(ctx, c.command("direct_offer", copy.deepcopy(peer_fields), BOB),
                f"retrying an offer without expires_hours {default} h later")


@check_offer_expiry.fault
def offers_never_expire(ref: PlazaReference) -> None:
    """An offer stays open past its expires_hours."""
    @replaces(ref.offer_state)
    def state(original: Any, offer: Data) -> str:
        return str(offer["state"])


@check_offer_expiry.fault
def offer_expiry_default_wrong(ref: PlazaReference) -> None:
    """An offer without expires_hours expires after the minimum hour (the schema's default is 24)."""
    @replaces(ref.cmd_direct_offer)
    def offer(original: Any, who: Principal, data: Data) -> Any:
        minimum = ref.branches["direct_offer"]["properties"]["expires_hours"]["minimum"]
        return original(who, {"expires_hours": minimum, **data})


@requirement(id="PLAZA-DIRECT-DECIDE", level="MUST", optional=CONTINUATION,
             title="A direct decision names the caller's own offer and the peer's",
             source=at(f"{COMMANDS}/10/required"))
@served(CONTINUATION)
def check_decide(ctx: CheckContext) -> None:
    """A decision names the caller's own offer and the peer's: a missing peer offer, the
    sides swapped or an offer of another connection are refused; both named, it is answered."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    mine = make_offer(c, ALICE, connection, "alice offers")
    with ctx.subcheck("no peer offer"):
        refused(ctx, decide(c, ALICE, connection, mine, fresh_id()),
                "a decision naming a peer offer that does not exist")
    peer = make_offer(c, BOB, connection, "bob offers")
    with ctx.subcheck("sides swapped"):
        refused(ctx, decide(c, ALICE, connection, peer, mine),
                "alice's decision naming bob's offer as her own")
    with ctx.subcheck("an offer of another connection"):
        other = c.befriend(ALICE, CAROL)
        foreign = make_offer(c, CAROL, other, "carol offers to alice")
        refused(ctx, decide(c, ALICE, connection, mine, foreign),
                "a decision naming an offer of another connection")
    with ctx.subcheck("both offers"):
        expect_result(ctx, decide(c, ALICE, connection, mine, peer),
                      "alice's decision naming her offer and bob's")


@check_decide.fault
def decide_without_peer_offer(ref: PlazaReference) -> None:
    """A decision naming a peer offer that does not exist is answered (both sides must have offered)."""
    @replaces(ref.cmd_direct_decide)
    def decide(original: Any, who: Principal, data: Data) -> Any:
        if data["peer_offer_id"] not in ref.s["direct_offers"] and data["offer_id"] in ref.s["direct_offers"]:
            return {"offer": ref.offer_view(ref.s["direct_offers"][data["offer_id"]]), "direct": "offered"}
        return original(who, data)


@check_decide.fault
def decide_ignores_sides(ref: PlazaReference) -> None:
    """A decision may name the peer's offer as the caller's own (offer_id is the caller's,
    peer_offer_id the peer's)."""
    @replaces(ref.side_offer)
    def side(original: Any, conn: Data, offer_id: str, by: str, what: str) -> Any:
        offer = ref.s["direct_offers"].get(offer_id)
        return original(conn, offer_id, offer["by"] if offer is not None else by, what)


@requirement(id="PLAZA-DIRECT-WITHDRAW", level="MUST", optional=CONTINUATION,
             title="direct_withdraw ends the caller's own offer",
             source=at(f"{COMMANDS}/12"))
@served(CONTINUATION)
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


@check_withdraw.fault
def withdraw_ignored(ref: PlazaReference) -> None:
    """direct_withdraw answers but the offer stays open."""
    @replaces(ref.cmd_direct_withdraw)
    def withdraw(original: Any, who: Principal, data: Data) -> Any:
        offer = ref.s["direct_offers"].get(data["offer_id"])
        kept = dict(offer) if offer is not None else None
        out = original(who, data)
        if offer is not None and kept is not None:
            offer.update(kept)
        return out


@check_withdraw.fault
def withdraw_peer_offer(ref: PlazaReference) -> None:
    """Either participant withdraws an offer (only its maker does)."""
    @replaces(ref.cmd_direct_withdraw)
    def withdraw(original: Any, who: Principal, data: Data) -> Any:
        offer = ref.s["direct_offers"].get(data["offer_id"])
        if offer is not None and offer["connection_id"] == data["connection_id"]:
            who = Principal(offer["by"], who.scopes, who.kind)
        return original(who, data)


@requirement(id="PLAZA-CONT-RETRY-RECHECK", level="MUST", optional=CONTINUATION,
             title="A retried offer (same request_key) is the same offer, rechecked against current offers "
                   "and permissions",
             source=at(f"{FC}/retries"))
@served(CONTINUATION)
def check_retry(ctx: CheckContext) -> None:
    """The same request_key and data again answer the same offer while it stands, and are
    refused once it was withdrawn or the friendship ended (rechecked, not replayed)."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    fields = offer_fields(ctx, connection)
    first = offer_id(c, c.command("direct_offer", fields), "direct_offer")
    with ctx.subcheck("identical retry"):
        again = offer_id(c, c.command("direct_offer", copy.deepcopy(fields)), "the same direct_offer again")
        ctx.expect(again == first,
                   f"the same request_key and data answered offer {again}, the original is {first}",
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
            expect_result(ctx,
                          c.command("friend_control", {"connection_id": connection, "decision": "remove"}),
                          "friend_control remove")
        refused(ctx, c.command("direct_offer", copy.deepcopy(key_fields)),
                "a retry of an offer after the friendship was removed")


@check_retry.fault
def retry_new_offer(ref: PlazaReference) -> None:
    """Every direct_offer is a new offer, whatever its request_key (a retry is the same offer)."""
    @replaces(ref.cmd_direct_offer)
    def offer(original: Any, who: Principal, data: Data) -> Any:
        return original(who, {**data, "request_key": ref.new_uuid()})


@check_retry.fault
def retry_after_withdraw_answered(ref: PlazaReference) -> None:
    """A retry answers its offer even after it was withdrawn (offers are rechecked)."""
    @replaces(ref.retry_offer)
    def retry(original: Any, offer: Data, data: Data) -> Data:
        return {"offer": ref.offer_view(offer), "replayed": True}


@check_retry.fault
def retry_after_removal_answered(ref: PlazaReference) -> None:
    """A retry answers its offer without rechecking the connection (permissions are rechecked)."""
    @replaces(ref.cmd_direct_offer)
    def offer(original: Any, who: Principal, data: Data) -> Any:
        earlier = ref.s["direct_keys"].get(f"{who.visitor_id}|{data['request_key']}")
        if earlier is not None:
            return ref.retry_offer(ref.s["direct_offers"][earlier], data)
        return original(who, data)


# ----------------------------------------------------------------------------------------------
# the site mailbox
# ----------------------------------------------------------------------------------------------
def fallback_requests(data: dict[str, Any]) -> list[Any]:
    """The requests the answer offers at site_mailbox_fallback.a2a.read_request (the document's names)."""
    return [dig(f, "a2a", "read_request") for f in reported(data, "site_mailbox_fallback")
            if dig(f, "a2a", "read_request") is not None]


def text_parts(fallback: Any) -> list[Any]:
    """The text parts of the SendMessage requests a fallback offers (a request's vocabulary is
    the document's: params.message.parts[*].text)."""
    requests = [f.value for f in locate.walk(fallback) if isinstance(f.value, dict)
                and f.value.get("method") == "SendMessage"]
    parts = [p for r in requests for p in (dig(r, "params", "message", "parts") or []) if isinstance(p, dict)]
    return [p for p in parts if "text" in p]


@requirement(id="PLAZA-CONT-FALLBACK-READ-REQUEST", level="MUST", optional=CONTINUATION,
             title="The fallback's a2a.read_request is a complete SendMessage reading the conversation; no "
                   "request of the fallback carries reply text",
             source=at(f"{FC}/siteMailboxMapping"))
@served(CONTINUATION)
def check_fallback(ctx: CheckContext) -> None:
    """An available fallback's a2a.read_request is a complete SendMessage (ROLE_USER, a
    read_conversation data part) that, sent as it is, reads the conversation (the text just
    written comes back); no request of the fallback carries a text part (the adapter
    supplies no reply text)."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    marker = text_of("before the fallback read")
    c.say(ALICE, connection, marker)
    data = c.data_of(c.command("continuation_negotiate", {"connection_id": connection}),
                     "continuation_negotiate")
    found = fallback_requests(data)
    if not found:
        search = locate.Search("site_mailbox_fallback.a2a.read_request (the document's names)")
        raise Untested("the negotiation offers no fallback: " + search.looked_for(data))
    request = found[0]
    part = dig(request, "params", "message", "parts", 0, "data")
    ctx.expect(isinstance(request, dict) and request.get("jsonrpc") == "2.0"
               and request.get("method") == "SendMessage"
               and "id" in request
               and dig(request, "params", "message", "role") == ctx.profile.spec["wireFormat"]["requestRole"]
               and dig(part, "operation") == "read_conversation" and dig(part, "connection_id") == connection,
               "site_mailbox_fallback.a2a.read_request is no complete SendMessage reading this "
               f"conversation: {json_excerpt(request)}",
               kind="malformed_answer")
    for fallback in reported(data, "site_mailbox_fallback"):
        texts = text_parts(fallback)
        ctx.expect(not texts,
                   f"the fallback's request carries reply text ({json_excerpt(texts)}): "
                   f"{json_excerpt(fallback)}",
                   kind="state_changed")
    reply = c.raw(json.dumps(request), ALICE)
    read = c.data_of(reply, "the fallback's read_request sent as it is")
    ctx.expect(names(read, marker),
               f"the fallback's read_request, sent as it is, does not read the conversation: alice's "
               f"text {marker!r} is not in its answer {json_excerpt(read)}", kind="state_changed")


@check_fallback.fault
def fallback_read_request_incomplete(ref: PlazaReference) -> None:
    """The fallback's a2a.read_request is only the params (a complete JSON-RPC SendMessage envelope)."""
    @replaces(ref.mailbox_fallback)
    def fallback(original: Any, conn: Data) -> Data:
        out: Data = original(conn)
        if "a2a" in out:
            out["a2a"]["read_request"] = out["a2a"]["read_request"]["params"]
        return out


@check_fallback.fault
def fallback_request_with_text(ref: PlazaReference) -> None:
    """The fallback's a2a.read_request carries a text part besides its read (the adapter
    supplies no reply text)."""
    @replaces(ref.mailbox_fallback)
    def fallback(original: Any, conn: Data) -> Data:
        out: Data = original(conn)
        if "a2a" in out:
            parts = out["a2a"]["read_request"]["params"]["message"]["parts"]
            parts.append({"text": "Sounds good, see you there!"})
        return out


REPLY_FIELDS = ("text", "reply", "reply_text")


@requirement(id="PLAZA-CONT-FALLBACK-NO-TEXT", level="SHOULD", optional=CONTINUATION,
             title="The fallback holds no member named for reply text (text, reply, reply_text: the "
                   "profile's reading of \"no reply text is supplied\")",
             source=DOCS)
@served(CONTINUATION)
def check_fallback_no_text(ctx: CheckContext) -> None:
    """The profile's reading of "no reply text is supplied": the fallback holds no member
    named for text (text, reply, reply_text) anywhere."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    data = c.data_of(c.command("continuation_negotiate", {"connection_id": connection}),
                     "continuation_negotiate",
                     ("site_mailbox_fallback",))
    fallback = data["site_mailbox_fallback"]
    named = sorted({k for f in locate.walk(fallback) if isinstance(f.value, dict) for k in f.value
                    if k in REPLY_FIELDS})
    ctx.expect(not named, f"the fallback supplies reply text ({named}): {json_excerpt(fallback)}",
               kind="state_changed")


@check_fallback_no_text.fault
def fallback_supplies_text(ref: PlazaReference) -> None:
    """The fallback adapter supplies reply text (it supplies none)."""
    @replaces(ref.mailbox_fallback)
    def fallback(original: Any, conn: Data) -> Data:
        out: Data = original(conn)
        if "a2a" in out:
            out["a2a"]["reply_text"] = "Sounds good, see you there!"
        return out


@requirement(id="PLAZA-CONT-MAILBOX-REMAINS", level="MUST", optional=CONTINUATION,
             title="Site mailbox chat stays available after negotiation and an endpoint exchange",
             source=at(f"{FC}/proof"))
@served(CONTINUATION)
def check_mailbox_remains(ctx: CheckContext) -> None:
    """After negotiating and exchanging direct endpoints, texts still travel by the site mailbox."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    with ctx.setup("both sides negotiate and exchange offers", by="PLAZA-DIRECT-DECIDE"):
        for who in (ALICE, BOB):
            expect_result(ctx, c.command("continuation_negotiate", {"connection_id": connection}, who),
                          f"{who} negotiates")
        mine = make_offer(c, ALICE, connection, "alice offers")
        peer = make_offer(c, BOB, connection, "bob offers")
        expect_result(ctx, decide(c, ALICE, connection, mine, peer), "alice accepts")
        expect_result(ctx, decide(c, BOB, connection, peer, mine), "bob accepts")
    text = f"still by mailbox {fresh_id()[:8]}"
    reply = c.text(ALICE, text, context=connection)
    ctx.expect(reply.ok,
               f"a text after the direct exchange was refused ({reply.describe()}); site mailbox chat "
               "remains available",
               kind="rejected_valid")
    data = c.data_of(c.command("read_conversation", {"connection_id": connection}, BOB),
                     "bob reads the conversation")
    ctx.expect(names(data, text),
               f"bob does not find alice's text sent after the exchange: {json_excerpt(data)}",
               kind="state_changed")


@check_mailbox_remains.fault
def direct_exchange_closes_mailbox(ref: PlazaReference) -> None:
    """An endpoint exchange closes the connection's site mailbox (it remains available)."""
    @replaces(ref.cmd_direct_decide)
    def decide(original: Any, who: Principal, data: Data) -> Any:
        out = original(who, data)
        if out.get("direct") == EXCHANGED:
            ref.s["connections"][data["connection_id"]]["state"] = CLOSED
        return out
