"""Part 2's state machines (issue 14), in the style of part 1's PlazaMachine (machine.py): a
small model of groups, private channels and direct offers, rules with preconditions that
draw the model's objects in creation order, and every answer compared with what the model
predicts.

- GroupMachine: alice, bob and carol under their owners' live group authorization in a
  group of alice's: invitations and responses, applications and admission, leaving and
  removal, messages, retries with the same request_key, revocation and new grants. Only
  members read, a member reads exactly what was stored after it joined, a non-member's or
  an unauthorized sender's message is refused and stored nowhere, a revoked grant refuses
  the next write at once, a retry stores nothing and is rechecked, the loop guard stops the
  (max_autonomous_turns + 1)-th autonomous turn.
- ChannelMachine: alice and bob, friends, publish keys (PyNaCl), offer, accept and close
  channels and send sealed envelopes: a channel takes envelopes only while active (both
  signed, not closed), the offerer never accepts its own offer, each side receives exactly
  the envelopes sent to it in order with ciphertext and signature as sent (its X25519 key
  opens them), a replayed envelope is never stored twice, only the recipient acknowledges.
- OfferMachine: alice and bob offer, re-offer (the new offer supersedes the caller's open
  one), withdraw, decide with both ids, retry with the same request_key and read
  direct_status, per docs/agent-plaza.md "Continuation" and reference/continuation.py: a retry
  answers the same offer while it stands (other data under the key is refused), only the
  maker withdraws, a decision names the caller's own open offer and the peer's, both
  accepting the same pair exchanges it.

Against a site without control each machine starts from a clean slate over the protocol:
a new group and fresh grants, new keys and channels, a fresh friendship for the offers."""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.checks.expect import expect_refused
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.machine import ProfileMachine, pick
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, fresh_id
from conformance.protocols.plaza.continuation_client import endpoint, offer_fields, offer_id, walk
from conformance.protocols.plaza.groups_client import call, contents, group_id_of, ok, send
from conformance.protocols.plaza.parts import prop
from conformance.protocols.plaza.private_client import SIGNED, Channel, Relay, new_pair
from conformance.protocols.plaza.sealed import KeyPair, unseal
from conformance.transport.binding import Reply

AGENTS = (ALICE, BOB, CAROL)
PAIR = (ALICE, BOB)
STATE = "state_changed"


def other(who: str) -> str:
    return BOB if who == ALICE else ALICE


# ----------------------------------------------------------------------------------------------
# groups
# ----------------------------------------------------------------------------------------------
@dataclass
class GroupSent:
    who: str
    content: str
    request_key: str


class GroupMachine(ProfileMachine):
    """One group of alice's (public, so that outsiders may apply), bob a member from the start."""

    def setup(self) -> None:
        self.c = PlazaClient(self.ctx)
        self.rate = int(prop(self.ctx, "group_authorize", "max_messages_per_hour")["maximum"])
        self.cap = int(prop(self.ctx, "group_authorize", "max_autonomous_turns")["maximum"])
        self.live_grant = {a: False for a in AGENTS}
        self.joined: dict[str, int] = {}  # member -> how many messages were stored when it joined
        self.turns: dict[str, int] = {}  # member -> autonomous turns since it joined or was granted again
        self.invited: set[str] = set()
        self.applied: set[str] = set()
        self.messages: list[tuple[str, str]] = []  # (sender, content) in order
        self.sent: list[GroupSent] = []
        self.counter = itertools.count(1)
        with self.ctx.setup("alice, bob and carol are granted group authorization; alice creates a group; "
                            "bob joins",
                            by="PLAZA-GROUP-MEMBERSHIP"):
            for a in AGENTS:
                self.grant(a)
            data = ok(self.c, ALICE, "group_create", name=self.text(), visibility="public",
                      rules={"max_messages_per_hour": self.rate, "max_autonomous_turns": self.cap})
            self.gid = group_id_of(self.ctx, data, "group_create")
            self.joined[ALICE], self.turns[ALICE] = 0, 0
            opening = self.text()
            self.c.data_of(send(self.c, ALICE, self.gid, opening), "alice's first group_send")
            self.messages.append((ALICE, opening))
            ok(self.c, ALICE, "group_invite", group_id=self.gid, visitor_id=self.c.agent_id(BOB))
            ok(self.c, BOB, "group_respond", group_id=self.gid, decision="accept")
            self.joined[BOB], self.turns[BOB] = len(self.messages), 0
        self.check_read(BOB, "just after joining")

    def teardown(self) -> None:
        """A live site: the run's public group is closed (no longer discovered by later checks)."""
        if getattr(self, "gid", None) and self.c.live():
            self.grant(ALICE, judged=False)
            call(self.c, ALICE, "group_close", group_id=self.gid)

    # -- helpers ------------------------------------------------------------------------
    def text(self) -> str:
        return f"group step {next(self.counter)} {fresh_id()[:8]}"

    def grant(self, who: str, judged: bool = True) -> None:
        """The owner's grant relayed by the Agent: every scope its part needs, the largest limits."""
        scopes = {"allow_create": True, "allow_invite": True} if who == ALICE else {}
        fields = dict(owner_authorized=True, allow_join=True, allow_send=True,
                      max_messages_per_hour=self.rate,
                      max_autonomous_turns=self.cap, **scopes)
        if judged:
            ok(self.c, who, "group_authorize", **fields)
        else:
            call(self.c, who, "group_authorize", **fields)
        self.live_grant[who] = True
        if who in self.turns:
            self.turns[who] = 0  # the owner acted: the loop guard starts again

    def join(self, who: str) -> None:
        """``who`` became a member (unless it was one): it reads nothing from before, at once."""
        if who not in self.joined:
            self.joined[who], self.turns[who] = len(self.messages), 0
            self.check_read(who, "just after joining")

    def check_read(self, who: str, when: str = "") -> None:
        """Only members read; a member reads exactly the messages stored since it joined."""
        what = f"{who}'s group_messages{' ' + when if when else ''}"
        if who not in self.joined:
            expect_refused(self.ctx,
                           call(self.c, who, "group_messages", group_id=self.gid, after_seq=0, limit=100),
                           f"{what}: it is not a member")
            return
        got = contents(self.c, who, self.gid, what, after_seq=0, limit=100)
        want = [text for _, text in self.messages[self.joined[who]:]]
        before = [text for _, text in self.messages[:self.joined[who]]]
        self.ctx.expect(got == want,
                        f"{what} reads {got}; the model says the messages stored since it joined are {want}"
                        f"{f' (stored before it joined: {before})' if before else ''}", kind=STATE)

    def is_turn(self, who: str) -> bool:
        return bool(self.messages) and self.messages[-1][0] != who

    def judge(self, reply: Reply, allowed: bool, what: str, why: str) -> bool:
        """The answer agrees with the model: answered when allowed, else refused."""
        if allowed:
            self.c.data_of(reply, what)
        else:
            expect_refused(self.ctx, reply, f"{what} ({why})")
        return allowed

    def why_not(self, who: str, member: bool = True) -> str:
        if not self.live_grant[who]:
            return f"{who}'s group authorization was revoked"
        return f"{who} is {'not ' if member else ''}a member"

    # -- rules --------------------------------------------------------------------------
    @rule(who=st.sampled_from((BOB, CAROL)))
    def invite(self, who: str) -> None:
        reply = call(self.c, ALICE, "group_invite", group_id=self.gid, visitor_id=self.c.agent_id(who))
        allowed = self.live_grant[ALICE] and who not in self.joined
        why = self.why_not(ALICE) if not self.live_grant[ALICE] else f"{who} is already a member"
        if self.judge(reply, allowed, f"alice invites {who}", why):
            self.invited.add(who)

    @rule(who=st.sampled_from((BOB, CAROL)), accept=st.booleans())
    def respond(self, who: str, accept: bool) -> None:
        decision = "accept" if accept else "decline"
        reply = call(self.c, who, "group_respond", group_id=self.gid, decision=decision)
        allowed = self.live_grant[who] and who in self.invited
        why = self.why_not(who) if not self.live_grant[who] else f"{who} has no pending invitation"
        if self.judge(reply, allowed, f"{who}'s group_respond {decision}", why):
            self.invited.discard(who)
            if accept:
                self.join(who)

    @rule(who=st.sampled_from((BOB, CAROL)))
    def apply(self, who: str) -> None:
        reply = call(self.c, who, "group_join_request", group_id=self.gid)
        allowed = self.live_grant[who] and who not in self.joined
        why = self.why_not(who) if not self.live_grant[who] else f"{who} is already a member"
        if self.judge(reply, allowed, f"{who}'s group_join_request", why):
            self.applied.add(who)
            self.check_read(who, "right after applying (an application waits for group_admit)")

    @rule(who=st.sampled_from((BOB, CAROL)), approve=st.booleans())
    def admit(self, who: str, approve: bool) -> None:
        decision = "approve" if approve else "decline"
        reply = call(self.c, ALICE, "group_admit", group_id=self.gid, visitor_id=self.c.agent_id(who),
                     decision=decision)
        allowed = self.live_grant[ALICE] and who in self.applied
        why = self.why_not(ALICE) if not self.live_grant[ALICE] else f"{who} has no pending application"
        if self.judge(reply, allowed, f"alice's group_admit {decision} of {who}", why):
            self.applied.discard(who)
            if approve:
                self.join(who)

    @rule(who=st.sampled_from((BOB, CAROL)), removed=st.booleans())
    def leave(self, who: str, removed: bool) -> None:
        """``who`` leaves, or alice removes it."""
        if removed:
            reply = call(self.c, ALICE, "group_member", group_id=self.gid, visitor_id=self.c.agent_id(who),
                         action="remove")
            allowed, actor = self.live_grant[ALICE] and who in self.joined, ALICE
        else:
            reply = call(self.c, who, "group_member", group_id=self.gid, action="leave")
            allowed, actor = self.live_grant[who] and who in self.joined, who
        why = self.why_not(actor) if not self.live_grant[actor] else f"{who} is not a member"
        if self.judge(reply, allowed, f"{'alice removes ' + who if removed else who + ' leaves'}", why):
            del self.joined[who], self.turns[who]

    @rule(who=st.sampled_from(AGENTS))
    def say(self, who: str) -> None:
        content = self.text()
        key = fresh_id()
        reply = send(self.c, who, self.gid, content, request_key=key)
        member = who in self.joined
        guarded = member and self.is_turn(who) and self.turns[who] >= self.cap
        allowed = self.live_grant[who] and member and not guarded
        why = (f"the loop guard: {who} took {self.turns.get(who)} autonomous turns" if guarded
               else self.why_not(who))
        if self.judge(reply, allowed, f"{who}'s group_send", why):
            if self.is_turn(who):
                self.turns[who] += 1
            self.messages.append((who, content))
            self.sent.append(GroupSent(who, content, key))

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        """The same group_send again (same request_key): rechecked, then nothing stored."""
        sent = pick(data, self.sent)
        reply = send(self.c, sent.who, self.gid, sent.content, request_key=sent.request_key)
        allowed = self.live_grant[sent.who] and sent.who in self.joined
        self.judge(reply, allowed, f"{sent.who}'s retry of a group_send (same request_key)",
                   self.why_not(sent.who))

    @rule(who=st.sampled_from(AGENTS))
    def read(self, who: str) -> None:
        self.check_read(who)

    @rule(who=st.sampled_from(AGENTS), revoke=st.booleans())
    def authorization(self, who: str, revoke: bool) -> None:
        """The owner grants again (the loop guard starts again) or revokes: revocation applies at
        once, the very next write is refused (a member's send, another's application)."""
        if not revoke:
            self.grant(who)
            return
        self.c.data_of(call(self.c, who, "group_authorization_revoke"), f"{who}'s group_authorization_revoke")
        self.live_grant[who] = False
        if who in self.joined:
            expect_refused(self.ctx, send(self.c, who, self.gid, self.text()),
                           f"{who}'s group_send right after its revocation")
        else:
            expect_refused(self.ctx, call(self.c, who, "group_join_request", group_id=self.gid),
                           f"{who}'s group_join_request right after its revocation")


# ----------------------------------------------------------------------------------------------
# private channels
# ----------------------------------------------------------------------------------------------
@dataclass
class ModelChannel:
    channel: Channel
    offer: dict[str, Any]
    state: str = "offered"  # offered | active | closed
    envelopes: list[ModelEnvelope] = field(default_factory=list)


@dataclass
class ModelEnvelope:
    channel: ModelChannel
    sender: str
    recipient: str
    envelope: dict[str, Any]
    plaintext: bytes


class ChannelMachine(ProfileMachine):
    """Alice and bob, friends, with keys published and one channel both signed."""

    def setup(self) -> None:
        self.r = Relay(self.ctx)
        self.c = self.r.c
        self.keys: dict[str, list[KeyPair]] = {ALICE: [], BOB: []}
        self.channels: list[ModelChannel] = []
        self.sent: list[ModelEnvelope] = []
        self.connection = self.c.befriend(ALICE, BOB)
        with self.ctx.setup("alice and bob publish keys and open a channel", by=SIGNED):
            for who in PAIR:
                self.publish(who)
            self.make_offer(ALICE)
            self.accept(self.channels[0], by_offerer=False)
            self.make_offer(BOB)  # and one offer alice has not accepted yet

    # -- rules --------------------------------------------------------------------------
    @precondition(lambda self: min(len(k) for k in self.keys.values()) < 2)
    @rule(who=st.sampled_from(PAIR))
    def publish(self, who: str) -> None:
        pair = new_pair()
        self.c.data_of(self.r.publish_reply(who, self.r.bundle(who, pair)), f"private_key_publish by {who}")
        self.keys[who].append(pair)

    def make_offer(self, who: str) -> ModelChannel:
        """A channel offered with the offerer's newest key and the peer's."""
        peer = other(who)
        mine, theirs = self.keys[who][-1], self.keys[peer][-1]
        offer = self.r.offer(self.connection, mine, theirs)
        self.c.data_of(self.r.run(offer, who), f"{who}'s private_channel_offer")
        ch = ModelChannel(Channel(self.connection, offer["channel_id"], who, peer, {who: mine, peer: theirs}),
                          offer)
        self.channels.append(ch)
        return ch

    def refuses(self, ch: ModelChannel, who: str, when: str) -> None:
        """A send the channel's state refuses, stored nowhere."""
        env = self.r.envelope(ch.channel, who)
        expect_refused(self.ctx, self.r.send(ch.channel, env, who),
                       f"{who}'s private_send on a channel that is {ch.state} {when}")

    @precondition(lambda self: len(self.channels) < 4)
    @rule(who=st.sampled_from(PAIR))
    def offer(self, who: str) -> None:
        """An offer alone is half a channel: it takes no envelope."""
        self.refuses(self.make_offer(who), who, "(offered, the peer has not signed)")

    def accept(self, ch: ModelChannel, by_offerer: bool) -> None:
        c = ch.channel
        if by_offerer:  # the offerer signs the second half too, with the offer's keys turned round
            own = self.r.accept(ch.offer, c.keys[c.offerer], key_id=c.keys[c.offerer].key_id,
                                peer_key_id=c.keys[c.accepter].key_id)
            expect_refused(self.ctx, self.r.run(own, c.offerer),
                           f"{c.offerer} accepts its own channel offer ({ch.state})")
            return
        reply = self.r.run(self.r.accept(ch.offer, c.keys[c.accepter]), c.accepter)
        if ch.state == "offered":
            self.c.data_of(reply, f"{c.accepter}'s private_channel_accept of an open offer")
            ch.state = "active"
        else:
            expect_refused(self.ctx, reply, f"{c.accepter} accepts a channel that is {ch.state}")

    @precondition(lambda self: any(ch.state != "active" for ch in self.channels))
    @rule(data=st.data(), by_offerer=st.booleans())
    def accept_channel(self, data: st.DataObject, by_offerer: bool) -> None:
        self.accept(pick(data, [ch for ch in self.channels if ch.state != "active"]),
                    by_offerer)

    @precondition(lambda self: bool(self.channels))
    @rule(data=st.data(), who=st.sampled_from(PAIR))
    def close(self, data: st.DataObject, who: str) -> None:
        ch = pick(data, self.channels)
        self.c.data_of(self.r.close(ch.channel, who), f"{who} closes a channel that is {ch.state}")
        ch.state = "closed"
        self.refuses(ch, other(who), f"right after {who} closed it")

    @precondition(lambda self: bool(self.channels))
    @rule(data=st.data(), who=st.sampled_from(PAIR), again=st.booleans())
    def send(self, data: st.DataObject, who: str, again: bool) -> None:
        """An envelope on a channel; ``again``: sent twice in a row (a retry after a lost answer)."""
        ch = pick(data, self.channels)
        plaintext = f"private {fresh_id()}".encode()
        env = self.r.envelope(ch.channel, who, plaintext)
        reply = self.r.send(ch.channel, env, who)
        if ch.state != "active":
            expect_refused(self.ctx, reply, f"{who}'s private_send on a channel that is {ch.state}")
            return
        self.c.data_of(reply, f"{who}'s private_send on an active channel")
        sent = ModelEnvelope(ch, who, other(who), env, plaintext)
        ch.envelopes.append(sent)
        self.sent.append(sent)
        if again:
            self.replayed(sent)

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        """A stored envelope sent again: refused, or answered without storing it twice."""
        self.replayed(pick(data, self.sent))

    def replayed(self, sent: ModelEnvelope) -> None:
        reply = self.r.send(sent.channel.channel, copy.deepcopy(sent.envelope), sent.sender)
        if reply.ok:
            self.check_received(sent.channel, sent.recipient, "after a replayed envelope was answered")

    @precondition(lambda self: bool(self.channels))
    @rule(data=st.data(), who=st.sampled_from(PAIR))
    def receive(self, data: st.DataObject, who: str) -> None:
        self.check_received(pick(data, self.channels), who, "")

    def check_received(self, ch: ModelChannel, who: str, when: str) -> None:
        got = self.r.received(ch.channel, who, f"{who}'s private_receive", limit=50)
        want = [e for e in ch.envelopes if e.recipient == who]
        got_ids = [e.get("message_id") for e in got]
        want_ids = [e.envelope["message_id"] for e in want]
        self.ctx.expect(got_ids == want_ids,
                        f"{who}'s private_receive {when} holds envelopes {got_ids}; the model says exactly "
                        f"those sent to it, once each, in order: {want_ids} (channel {ch.state})", kind=STATE)
        key = ch.channel.keys[who].encryption
        for back, sent in zip(got, want, strict=True):
            self.ctx.expect(back.get("ciphertext") == sent.envelope["ciphertext"]
                            and back.get("signature") == sent.envelope["signature"],
                            f"envelope {sent.envelope['message_id']} came back with another ciphertext or "
                            "signature: the relay stores it as sent", kind=STATE)
            try:
                plain: bytes | None = unseal(key, str(back.get("ciphertext")))
            except Exception:  # noqa: BLE001 - a box that does not open is the finding
                plain = None
            self.ctx.expect(plain == sent.plaintext,
                            f"{who}'s X25519 key does not open envelope {sent.envelope['message_id']} "
                            "to the sealed text", kind=STATE)

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data(), by_sender=st.booleans())
    def ack(self, data: st.DataObject, by_sender: bool) -> None:
        sent = pick(data, self.sent)
        who = sent.sender if by_sender else sent.recipient
        reply = self.r.run(self.r.ack(sent.channel.channel, who, sent.envelope["message_id"]), who)
        if by_sender:
            expect_refused(self.ctx, reply, f"{who} acknowledges the envelope it sent itself")
        else:
            self.c.data_of(reply, f"{who}'s private_ack of an envelope sent to it")


# ----------------------------------------------------------------------------------------------
# direct offers
# ----------------------------------------------------------------------------------------------
OPEN_OFFER = ("pending", "accepted")  # can still be decided
LIVE_OFFER = ("pending", "accepted", "exchanged")  # a retry answers it again


@dataclass
class Offer:
    by: str
    id: str
    fields: dict[str, Any]
    state: str = "pending"  # pending | accepted | exchanged | withdrawn | superseded | declined | ended
    pair: Offer | None = None


class OfferMachine(ProfileMachine):
    """Alice and bob, friends in a fresh connection, each with one open offer."""

    def setup(self) -> None:
        self.c = PlazaClient(self.ctx)
        self.offers: list[Offer] = []
        self.connection = self.c.befriend(ALICE, BOB, fresh=True)
        with self.ctx.setup("alice and bob make direct offers", by="PLAZA-DIRECT-OFFER"):
            for who in PAIR:
                self.offer(who)

    # -- rules --------------------------------------------------------------------------
    @precondition(lambda self: len(self.offers) < 8)
    @rule(who=st.sampled_from(PAIR))
    def offer(self, who: str) -> None:
        """A new offer (new request_key): it supersedes the caller's open offer."""
        fields = offer_fields(self.ctx, self.connection)
        made = offer_id(self.c, self.c.command("direct_offer", copy.deepcopy(fields), who),
                        f"{who}'s direct_offer")
        known = [o.id for o in self.offers]
        self.ctx.expect(made not in known,
                        f"{who}'s new direct_offer (new request_key) answered offer {made}, made before",
                        kind=STATE)
        for o in self.offers:
            if o.by == who and o.state in OPEN_OFFER:
                o.state = "superseded"
        self.offers.append(Offer(who, made, fields))

    @precondition(lambda self: bool(self.offers))
    @rule(data=st.data(), changed=st.booleans())
    def retry(self, data: st.DataObject, changed: bool) -> None:
        """The same request_key again: with the same data, the same offer while it stands; with
        other data, refused."""
        o = pick(data, self.offers)
        fields = copy.deepcopy(o.fields)
        if changed:
            fields["endpoint"] = endpoint(self.ctx)
        reply = self.c.command("direct_offer", fields, o.by)
        if changed or o.state not in LIVE_OFFER:
            why = "other data under a used request_key" if changed else f"the offer is {o.state}"
            expect_refused(self.ctx, reply, f"{o.by}'s retry of a direct_offer ({why})")
            return
        again = offer_id(self.c, reply, f"{o.by}'s retry of a {o.state} direct_offer")
        self.ctx.expect(again == o.id,
                        f"{o.by}'s retry (same request_key and data) answered offer {again}; the original "
                        f"({o.state}) is {o.id}", kind=STATE)

    @precondition(lambda self: bool(self.offers))
    @rule(data=st.data(), by_maker=st.booleans())
    def withdraw(self, data: st.DataObject, by_maker: bool) -> None:
        o = pick(data, self.offers)
        who = o.by if by_maker else other(o.by)
        reply = self.c.command("direct_withdraw", {"connection_id": self.connection, "offer_id": o.id}, who)
        if not by_maker or o.state not in (*LIVE_OFFER, "withdrawn"):
            why = "only its maker withdraws an offer" if not by_maker else f"the offer is {o.state}"
            expect_refused(self.ctx, reply, f"{who} withdraws {o.by}'s offer ({why})")
            return
        self.c.data_of(reply, f"{who} withdraws its {o.state} offer")
        if o.state == "exchanged" and o.pair is not None:
            o.pair.state = "ended"
        o.state = "withdrawn"
        expect_refused(self.ctx, self.c.command("direct_offer", copy.deepcopy(o.fields), who),
                       f"{who}'s retry (same request_key and data) of the offer it has just withdrawn")

    @precondition(lambda self: {o.by for o in self.offers} == set(PAIR))
    @rule(data=st.data(), who=st.sampled_from(PAIR), accept=st.booleans(), swapped=st.booleans())
    def decide(self, data: st.DataObject, who: str, accept: bool, swapped: bool) -> None:
        own = pick(data, [o for o in self.offers if o.by == who])
        peer = pick(data, [o for o in self.offers if o.by != who])
        decision = "accept" if accept else "decline"
        first, second = (peer, own) if swapped else (own, peer)
        reply = self.c.command("direct_decide", {"connection_id": self.connection, "offer_id": first.id,
                                                 "peer_offer_id": second.id, "decision": decision}, who)
        what = f"{who}'s direct_decide {decision} of its {own.state} offer and the peer's {peer.state} one"
        if swapped:
            expect_refused(self.ctx, reply, f"{what}, the two ids swapped (offer_id is the caller's own)")
            return
        if accept and own.pair is peer and own.state in ("accepted", "exchanged"):
            self.c.data_of(reply, f"{what} again")
            return
        stale = [o for o in (own, peer) if o.state not in OPEN_OFFER
                 or (o.state == "accepted" and o.pair not in (own, peer))]
        if stale:
            expect_refused(self.ctx, reply, f"{what} (no longer open for this pair)")
            return
        self.c.data_of(reply, what)
        if not accept:
            own.state = peer.state = "declined"
            return
        own.state, own.pair = "accepted", peer
        if peer.pair is own and peer.state == "accepted":
            own.state = peer.state = "exchanged"

    @rule(who=st.sampled_from(AGENTS))
    def status(self, who: str) -> None:
        reply = self.c.command("direct_status", {"connection_id": self.connection}, who)
        if who == CAROL:
            expect_refused(self.ctx, reply, "carol's direct_status of alice and bob's connection")
            return
        answer = self.c.data_of(reply, f"{who}'s direct_status")
        named = {v for v in walk(answer) if isinstance(v, str)}
        missing = [f"{o.by}'s {o.state} {o.id}" for o in self.offers if o.state in LIVE_OFFER
                   and o.id not in named]
        self.ctx.expect(not missing, f"{who}'s direct_status does not report the standing offers {missing}",
                        kind=STATE)


# ----------------------------------------------------------------------------------------------
# the machines' requirements
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-GROUP-MACHINE", level="MUST",
             title="Invitations, applications, admission, leaving, messages, retries and grants in any order "
                   "agree with the group model: only members read, nothing from before joining, non-members' "
                   "and unauthorized sends refused, revocation at once",
             source=at("/groupChat"),
             faults=["history_before_join_visible", "revoke_ignored", "join_admits_at_once"])
def check_groups(ctx: CheckContext) -> None:
    ctx.run_machine(GroupMachine)


@requirement(id="PLAZA-PRIV-MACHINE", level="MUST",
             title="Keys, channel offers, accepts, closes, sealed sends, replays, receives and acks in any "
                   "order agree with the channel model: sends only on active channels, each recipient "
                   "receives exactly what was sent (ciphertext unchanged), never twice",
             source=at("/durableReceive/encrypted_private_chat"),
             faults=["offer_activates_channel", "channel_close_ignored", "envelope_replay_accepted"])
def check_channels(ctx: CheckContext) -> None:
    ctx.run_machine(ChannelMachine)


# the model's rules (a new offer supersedes, which offer a decision may name) are the
# profile's reading of the document's offer fields (docs/agent-plaza.md#continuation)
@requirement(id="PLAZA-DIRECT-MACHINE", level="SHOULD",
             title="Offers, re-offers, withdrawals, decisions, retries and status in any order agree with "
                   "the profile's direct-offer model: a new offer supersedes, a retry answers the standing "
                   "offer only, only the maker withdraws, decisions name both open offers",
             source=chosen("docs/agent-plaza.md#continuation"),
             faults=["withdraw_ignored", "retry_new_offer", "withdraw_peer_offer"])
def check_offers(ctx: CheckContext) -> None:
    ctx.run_machine(OfferMachine)


__all__ = ["ChannelMachine", "GroupMachine", "OfferMachine"]
