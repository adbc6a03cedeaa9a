"""Part 2 requirements (issue 14) of the encrypted private relay (durableReceive.
encrypted_private_chat and the ten private_* branches of schemas.command): see
part_private.py for what the reference serves and sealed.py for the bytes each signature
covers (the profile's choice).

Every check works with real keys (PyNaCl): the suite makes each agent's Ed25519 and X25519
keys, signs bundles, offers, accepts, envelopes and acks, and seals the text to the
recipient. What rests on the profile's signed bytes (that a valid signature is accepted, that
a change to any signed field is refused) is PLAZA-PRIV-SIGNED-BYTES, a SHOULD; the MUSTs ask
what holds whatever bytes a site signs (a signature by another key or of random bytes is
refused, a channel needs both halves, nothing falls back to plaintext, the ciphertext comes
back unchanged), and their set-up steps (publishing, opening a channel, a valid send) are
reported by PLAZA-PRIV-SIGNED-BYTES when the target refuses them.

The relay returns an envelope as it was sent (its signature covers it), so a check finds the
envelopes it sent by their own fields wherever an answer puts them; what it reads besides
(a page's cursor, an ordinary read) it finds by content. A refusal counts only for its cause
(groups.py ``refused``); the relay is an optional part (``part``)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from conformance import locate
from conformance.check import CheckContext, CheckFailed
from conformance.checks.errors import expect_error, expect_result
from conformance.model import Requirement
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.groups import PRIVATE_RELAY, names, part, refused, require
from conformance.protocols.plaza.sealed import (
    SIGNED_BYTES_RULE,
    KeyPair,
    b64u,
    origin_of,
    seal,
    suite_names,
    unb64u,
    unseal,
)
from conformance.protocols.plaza.wire import INVALID
from conformance.table import Table
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt

SIGNED = "PLAZA-PRIV-SIGNED-BYTES"
ENVELOPE_DEPTH = 16  # an envelope sits a dozen levels deep in a SendMessage answer at most
CURSORS = 8  # a page's candidate after_seq values the roundtrip check tries at most  # the row that reports a refused valid signature (a set-up step elsewhere)
PERMITTED, FOUND = "NOT_PERMITTED", "NOT_FOUND"
Data = dict[str, Any]


def stamp(seconds: float = 0) -> str:
    """An RFC 3339 UTC time ``seconds`` from now, with milliseconds."""
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def other_uuid(value: str) -> str:
    """The UUID with its last hex digit changed (still a UUID)."""
    return value[:-1] + ("0" if value[-1] != "0" else "1")


def later(value: str) -> str:
    """A date-time one second later."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00")) + timedelta(seconds=1)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def flipped_b64(value: str) -> str:
    """The same base64url bytes with the lowest bit of the first byte flipped."""
    raw = bytearray(unb64u(value))
    raw[0] ^= 1
    return b64u(bytes(raw))


def flip(name: str, value: Any) -> Any:
    """A schema-valid different value of a signed field (one bit, one digit, one second)."""
    if isinstance(value, bool) or not isinstance(value, str | int | dict):
        raise ValueError(f"no flip for {name}")
    if isinstance(value, int):
        return value + 1
    if isinstance(value, dict):
        return {**value, "x": flipped_b64(value["x"])}
    if name.endswith("_at"):
        return later(value)
    if name == "origin":
        return value.rstrip("/") + "/"
    if name == "ciphertext":
        return flipped_b64(value)
    return other_uuid(value)


def envelopes_in(value: Any) -> Iterator[Data]:
    """Every object carrying a ciphertext and a message_id (an envelope as sent) in an answer,
    wherever the answer puts it, in the answer's order."""
    for found in locate.walk(value, ENVELOPE_DEPTH):
        if isinstance(found.value, dict) and "ciphertext" in found.value and "message_id" in found.value:
            yield found.value


@dataclass
class Channel:
    connection: str
    channel_id: str
    offerer: str
    accepter: str
    keys: dict[str, KeyPair]  # who -> the key of this channel


class Relay:
    """The suite's side of the relay: the agents' keys, and the commands built and signed
    the way the profile says (sealed.py)."""

    def __init__(self, ctx: CheckContext, reset: bool = True) -> None:
        require(ctx, PRIVATE_RELAY)  # the channel machine's first step: the part must be served
        self.ctx = ctx
        self.c = PlazaClient(ctx, reset=reset)
        self.protocol, self.suite = suite_names(ctx.profile.spec)
        self.origin = origin_of(ctx.profile.spec)
        self.keys: dict[str, KeyPair] = {}

    # -- keys -------------------------------------------------------------------------
    def bundle(self, who: str, pair: KeyPair, **changes: Any) -> Data:
        """A signed key bundle of ``who`` (``changes`` applied before signing)."""
        body = {"protocol": self.protocol, "suite": self.suite, "origin": self.origin, "visitor_id": self.c.agent_id(who),
                "device_id": pair.device_id, "key_id": pair.key_id, "signing_public_key": pair.jwk("signing"),
                "encryption_public_key": pair.jwk("encryption"), "created_at": stamp(-60), "expires_at": stamp(86400)}
        body.update(changes)
        return pair.sign(body, "proof_signature")

    def publish_reply(self, who: str, bundle: Data) -> Reply:
        return self.c.command("private_key_publish", {"bundle": bundle}, who)

    def publish(self, who: str, **changes: Any) -> KeyPair:
        """A fresh key of ``who``, published (a set-up step reported by SIGNED-BYTES)."""
        pair = new_pair()
        with self.ctx.setup(f"{who} publishes a key bundle", by=SIGNED):
            self.c.data_of(self.publish_reply(who, self.bundle(who, pair, **changes)), f"private_key_publish by {who}")
        self.keys[who] = pair
        return pair

    # -- channels ---------------------------------------------------------------------
    def offer(self, connection: str, mine: KeyPair, theirs: KeyPair, *, signer: KeyPair | None = None,
              **changes: Any) -> Data:
        data = {"operation": "private_channel_offer", "connection_id": connection, "channel_id": fresh_id(),
                "key_id": mine.key_id, "peer_key_id": theirs.key_id, "request_key": fresh_id(), "expires_at": stamp(3600)}
        data.update(changes)
        return (signer or mine).sign(data)

    def accept(self, offer: Data, mine: KeyPair, *, signer: KeyPair | None = None, **changes: Any) -> Data:
        data = {"operation": "private_channel_accept", "connection_id": offer["connection_id"],
                "channel_id": offer["channel_id"], "key_id": mine.key_id, "peer_key_id": offer["key_id"]}
        data.update(changes)
        return (signer or mine).sign(data)

    def run(self, data: Data, who: str) -> Reply:
        """A signed command as built (its operation included)."""
        return self.c.command(data["operation"], {k: v for k, v in data.items() if k != "operation"}, who)

    def open_channel(self, a: str = ALICE, b: str = BOB, connection: str | None = None) -> Channel:
        """Friends ``a`` and ``b`` with fresh keys and a channel both signed."""
        connection = connection or self.c.befriend(a, b)
        ka, kb = self.publish(a), self.publish(b)
        offer = self.offer(connection, ka, kb)
        with self.ctx.setup(f"{a} offers a channel and {b} accepts it", by=SIGNED):
            self.c.data_of(self.run(offer, a), "private_channel_offer")
            self.c.data_of(self.run(self.accept(offer, kb), b), "private_channel_accept")
        return Channel(connection, offer["channel_id"], a, b, {a: ka, b: kb})

    # -- envelopes --------------------------------------------------------------------
    def envelope(self, ch: Channel, sender: str, text: bytes = b"", *, signer: KeyPair | None = None,
                 **changes: Any) -> Data:
        """A signed envelope from ``sender`` to the other side, ``text`` sealed to its key."""
        recipient = ch.accepter if sender == ch.offerer else ch.offerer
        body = {"protocol": self.protocol, "suite": self.suite, "origin": self.origin, "connection_id": ch.connection,
                "channel_id": ch.channel_id, "message_id": fresh_id(), "sender_id": self.c.agent_id(sender),
                "recipient_id": self.c.agent_id(recipient), "sender_key_id": ch.keys[sender].key_id,
                "recipient_key_id": ch.keys[recipient].key_id, "round_no": 1, "sent_at": stamp(),
                "expires_at": stamp(3600),
                "ciphertext": seal(ch.keys[recipient].encryption_x, text or f"private {fresh_id()}".encode())}
        body.update(changes)
        return (signer or ch.keys[sender]).sign(body)

    def send(self, ch: Channel, env: Data, who: str | None = None, **fields: Any) -> Reply:
        return self.c.command("private_send", {"connection_id": ch.connection, "channel_id": ch.channel_id,
                                               "envelope": env, **fields}, who or ch.offerer)

    def sent(self, ch: Channel, env: Data, who: str | None = None) -> Data:
        """A valid envelope, stored (a set-up step reported by SIGNED-BYTES)."""
        with self.ctx.setup("a valid private_send", by=SIGNED):
            return self.c.data_of(self.send(ch, env, who), "private_send")

    def receive(self, ch: Channel, who: str, **fields: Any) -> Reply:
        return self.c.command("private_receive", {"connection_id": ch.connection, "channel_id": ch.channel_id,
                                                  "key_id": ch.keys[who].key_id, **fields}, who)

    def received(self, ch: Channel, who: str, what: str, **fields: Any) -> list[Data]:
        """The envelopes a private_receive answer holds, wherever it puts them."""
        return list(envelopes_in(self.c.data_of(self.receive(ch, who, **fields), what)))

    def ack(self, ch: Channel, who: str, message_id: str, *, signer: KeyPair | None = None) -> Data:
        data = {"operation": "private_ack", "connection_id": ch.connection, "channel_id": ch.channel_id,
                "key_id": ch.keys[who].key_id, "message_id": message_id}
        return (signer or ch.keys[who]).sign(data)

    def close(self, ch: Channel, who: str) -> Reply:
        return self.c.command("private_channel_close", {"connection_id": ch.connection, "channel_id": ch.channel_id}, who)


def new_pair() -> KeyPair:
    return KeyPair(key_id=fresh_id(), device_id=fresh_id())


def stranger() -> KeyPair:
    """A key no agent published: its signatures are another key's."""
    return new_pair()


def random_signature() -> str:
    return b64u(os.urandom(64))


def relay_refused(ctx: CheckContext, reply: Reply, error: Any, what: str, strict: bool) -> None:
    """A relay refusal judged by its cause (groups.refused); a semantically broken input (a
    forged signature, a stale key, a foreign origin) may be called invalid parameters too."""
    refused(ctx, reply, what, error=error, strict=strict, invalid_ok=True)


# ----------------------------------------------------------------------------------
# capabilities and status
# ----------------------------------------------------------------------------------
def check_capabilities(ctx: CheckContext) -> None:
    """private_capabilities answers; where it names the relay's protocol or the document's
    flags (the document's own names, at any depth) it says what the document says;
    private_status answers a participant, not a stranger."""
    r = Relay(ctx)
    doc = ctx.profile.spec["durableReceive"]["encrypted_private_chat"]
    data = r.c.data_of(r.c.command("private_capabilities", {}), "private_capabilities")
    protocols = [v for v in (data.get("protocol"),) if isinstance(v, str)]
    ctx.expect(all(p == doc["protocol"] for p in protocols),
               f"private_capabilities names the protocol {protocols}; the relay speaks {doc['protocol']!r}")
    for flag in ("plaintext_fallback", "grants_authority", "website_decrypts_body"):
        said = [f.value[flag] for f in locate.walk(data) if isinstance(f.value, dict) and flag in f.value]
        ctx.expect(all(v is False for v in said), f"private_capabilities says {flag}={said}; the document says {flag}: false")
    connection = r.c.befriend()
    with ctx.subcheck("private_status of a participant"):
        r.c.data_of(r.c.command("private_status", {"connection_id": connection}), "private_status of alice's connection")
    with ctx.subcheck("private_status of a stranger"):
        relay_refused(ctx, r.c.command("private_status", {"connection_id": connection}, CAROL), None,
                      "private_status by carol of alice and bob's connection", False)


def check_capabilities_profile(ctx: CheckContext) -> None:
    """The profile's capability report: protocol, suites, origin, signed bytes, the flags."""
    r = Relay(ctx)
    doc = ctx.profile.spec["durableReceive"]["encrypted_private_chat"]
    data = r.c.data_of(r.c.command("private_capabilities", {}), "private_capabilities", ("protocol", "suites", "origin"))
    ctx.expect(data["protocol"] == doc["protocol"], f"protocol is {data['protocol']!r}, expected {doc['protocol']!r}")
    ctx.expect(isinstance(data["suites"], list) and r.suite in data["suites"], f"suites {data['suites']!r} lacks {r.suite}")
    ctx.expect(data["origin"] == r.origin, f"origin is {data['origin']!r}, expected {r.origin}")
    ctx.expect(data.get("signed_bytes") == SIGNED_BYTES_RULE, f"signed_bytes is {data.get('signed_bytes')!r}, expected {SIGNED_BYTES_RULE}")
    for flag in ("plaintext_fallback", "grants_authority", "website_decrypts_body", "public_receiver_required"):
        ctx.expect(data.get(flag) is False, f"{flag} is {data.get(flag)!r}, expected false")


def check_status(ctx: CheckContext) -> None:
    """private_status lists both sides' keys (the peer's encryption key to seal to) and the
    connection's channels with their states."""
    r = Relay(ctx)
    ch = r.open_channel()
    data = r.c.data_of(r.c.command("private_status", {"connection_id": ch.connection}), "private_status",
                       ("keys", "channels"))
    peer = [k for k in (dig(data, "keys", "peer") or []) if dig(k, "key_id") == ch.keys[BOB].key_id]
    ctx.expect(peer and dig(peer[0], "encryption_public_key", "x") == ch.keys[BOB].encryption_x,
               f"keys.peer does not list bob's published key with its encryption key: {json.dumps(data['keys'])[:300]}")
    own = [k for k in (dig(data, "keys", "own") or []) if dig(k, "key_id") == ch.keys[ALICE].key_id]
    ctx.expect(bool(own), f"keys.own does not list alice's key: {json.dumps(data['keys'])[:300]}")
    states = {dig(c, "channel_id"): dig(c, "state") for c in data["channels"] if isinstance(c, dict)} \
        if isinstance(data["channels"], list) else {}
    ctx.expect(states.get(ch.channel_id) == "active", f"the channel both signed is listed as {states.get(ch.channel_id)!r}")
    expect_result(ctx, r.close(ch, BOB), "private_channel_close by bob")
    data = r.c.data_of(r.c.command("private_status", {"connection_id": ch.connection}), "private_status", ("channels",))
    states = {dig(c, "channel_id"): dig(c, "state") for c in data["channels"] if isinstance(c, dict)} \
        if isinstance(data["channels"], list) else {}
    ctx.expect(states.get(ch.channel_id) == "closed", f"a closed channel is listed as {states.get(ch.channel_id)!r}")


# ----------------------------------------------------------------------------------
# keys
# ----------------------------------------------------------------------------------
def check_key_publish(ctx: CheckContext, strict: bool = False) -> None:
    """A bundle whose proof_signature its own signing key did not make is refused."""
    r = Relay(ctx)
    pair = new_pair()
    with ctx.subcheck("a proof by another key"):
        forged = stranger().sign({k: v for k, v in r.bundle(ALICE, pair).items() if k != "proof_signature"},
                                 "proof_signature")
        relay_refused(ctx, r.publish_reply(ALICE, forged), PERMITTED, "a bundle whose proof another key made", strict)
    with ctx.subcheck("a random proof"):
        relay_refused(ctx, r.publish_reply(ALICE, {**r.bundle(ALICE, new_pair()), "proof_signature": random_signature()}),
                   PERMITTED, "a bundle with random proof bytes", strict)


def check_origin(ctx: CheckContext, strict: bool = False) -> None:
    """A bundle names this site's origin and the publisher itself; an envelope this origin."""
    r = Relay(ctx)
    with ctx.subcheck("a bundle of another origin"):
        relay_refused(ctx, r.publish_reply(ALICE, r.bundle(ALICE, new_pair(), origin="https://elsewhere.example")), PERMITTED,
                   f"a bundle naming another origin than {r.origin}", strict)
    with ctx.subcheck("a bundle naming another visitor"):
        relay_refused(ctx, r.publish_reply(ALICE, r.bundle(ALICE, new_pair(), visitor_id=r.c.agent_id(BOB))), PERMITTED,
                   "alice publishing a bundle that names bob's visitor_id", strict)
    ch = r.open_channel()
    with ctx.subcheck("an envelope of another origin"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE, origin="https://elsewhere.example")), PERMITTED,
                   "an envelope naming another origin", strict)


def check_key_expiry(ctx: CheckContext, strict: bool = False) -> None:
    """A key is usable only from created_at until expires_at: an expired bundle, or one
    expiring before it is created, is refused; a key past expires_at opens no channel."""
    r = Relay(ctx)
    with ctx.subcheck("an expired bundle"):
        relay_refused(ctx, r.publish_reply(ALICE, r.bundle(ALICE, new_pair(), created_at=stamp(-7200), expires_at=stamp(-3600))),
                   PERMITTED, "a bundle whose expires_at has passed", strict)
    with ctx.subcheck("a bundle expiring before it is created"):
        relay_refused(ctx, r.publish_reply(ALICE, r.bundle(ALICE, new_pair(), created_at=stamp(7200), expires_at=stamp(3600))),
                   PERMITTED, "a bundle whose expires_at precedes its created_at", strict)
    if not ctx.run.control_path:
        return  # the clock moves only under control
    connection = r.c.befriend()
    mine, theirs = r.publish(ALICE, expires_at=stamp(600)), r.publish(BOB)
    ctx.control("advance_clock", seconds=1200)
    with ctx.subcheck("a channel offered with a key past expires_at"):
        relay_refused(ctx, r.run(r.offer(connection, mine, theirs, expires_at=stamp(86400 * 2)), ALICE), PERMITTED,
                   "an offer signed with a key whose expires_at has passed", strict)


def check_key_revoke(ctx: CheckContext, strict: bool = False) -> None:
    """A revoked key is refused for new channels, sends and acks."""
    r = Relay(ctx)
    ch = r.open_channel()
    env = r.envelope(ch, ALICE)
    r.sent(ch, env)
    expect_result(ctx, r.c.command("private_key_revoke", {"key_id": ch.keys[ALICE].key_id}), "private_key_revoke by alice")
    with ctx.subcheck("a send with the revoked key"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE)), PERMITTED, "a private_send signed by a revoked key", strict)
    with ctx.subcheck("a new channel with the revoked key"):
        relay_refused(ctx, r.run(r.offer(ch.connection, ch.keys[ALICE], ch.keys[BOB]), ALICE), PERMITTED,
                   "an offer naming the offerer's revoked key", strict)
    expect_result(ctx, r.c.command("private_key_revoke", {"key_id": ch.keys[BOB].key_id}, BOB), "private_key_revoke by bob")
    with ctx.subcheck("an ack with the revoked key"):
        relay_refused(ctx, r.run(r.ack(ch, BOB, env["message_id"]), BOB), PERMITTED, "a private_ack signed by a revoked key", strict)
    with ctx.subcheck("a new channel to the peer's revoked key"):
        fresh = r.publish(ALICE)
        relay_refused(ctx, r.run(r.offer(ch.connection, fresh, ch.keys[BOB]), ALICE), PERMITTED,
                   "an offer naming the peer's revoked key", strict)


# ----------------------------------------------------------------------------------
# channels and controls
# ----------------------------------------------------------------------------------
def check_channel_mutual(ctx: CheckContext, strict: bool = False) -> None:
    """A channel is active only once both sides signed it (offer + the peer's accept), until closed."""
    r = Relay(ctx)
    connection = r.c.befriend()
    ka, kb = r.publish(ALICE), r.publish(BOB)
    offer = r.offer(connection, ka, kb)
    with ctx.setup("alice offers a channel", by=SIGNED):
        r.c.data_of(r.run(offer, ALICE), "private_channel_offer")
    ch = Channel(connection, offer["channel_id"], ALICE, BOB, {ALICE: ka, BOB: kb})
    with ctx.subcheck("a send on an offer the peer has not accepted"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE)), PERMITTED, "a private_send before the peer accepted", strict)
    with ctx.subcheck("the offerer accepts its own offer"):
        own_accept = r.accept(offer, ka, key_id=ka.key_id, peer_key_id=kb.key_id)
        relay_refused(ctx, r.run(own_accept, ALICE), PERMITTED, "the offerer signing the accept of its own offer", strict)
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE)), PERMITTED, "a private_send after the offerer's own accept", strict)
    with ctx.setup("bob accepts the channel", by=SIGNED):
        r.c.data_of(r.run(r.accept(offer, kb), BOB), "private_channel_accept")
    r.sent(ch, r.envelope(ch, ALICE))
    expect_result(ctx, r.close(ch, ALICE), "private_channel_close by alice")
    for who in (ALICE, BOB):
        with ctx.subcheck(f"a send by {who} on the closed channel"):
            relay_refused(ctx, r.send(ch, r.envelope(ch, who), who), PERMITTED, f"a private_send by {who} after close", strict)


def check_controls(ctx: CheckContext, strict: bool = False) -> None:
    """Encrypted chat grants nothing beyond the friendship: no channel outside an active
    friendship or with another agent's key, nothing for a stranger, nothing after a block."""
    r = Relay(ctx)
    ch = r.open_channel()
    carol = r.publish(CAROL)
    with ctx.subcheck("a stranger's commands on the connection"):
        relay_refused(ctx, r.run(r.offer(ch.connection, carol, ch.keys[ALICE]), CAROL), None,
                      "carol offering a channel in alice and bob's connection", False)
        relay_refused(ctx, r.receive(Channel(ch.connection, ch.channel_id, ALICE, BOB, {**ch.keys, CAROL: carol}), CAROL), None,
                      "carol receiving from alice and bob's channel", False)
    with ctx.subcheck("a peer key of another agent"):
        relay_refused(ctx, r.run(r.offer(ch.connection, ch.keys[ALICE], carol), ALICE), PERMITTED,
                   "an offer to bob naming carol's key as the peer's", strict)
    with ctx.subcheck("a channel in a pending invitation"):
        _, pending = r.c.invite(ALICE, CAROL)
        relay_refused(ctx, r.run(r.offer(pending, ch.keys[ALICE], carol), ALICE), PERMITTED,
                   "an offer in a connection whose invitation carol has not accepted", strict)
    with ctx.setup("bob blocks alice", by="PLAZA-FRIEND-CONTROL"):
        expect_result(ctx, r.c.command("friend_control", {"connection_id": ch.connection, "decision": "block"}, BOB), "block")
    with ctx.subcheck("a send after the peer blocked"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE)), PERMITTED, "a private_send after bob blocked alice", strict)
    with ctx.subcheck("an offer after the peer blocked"):
        relay_refused(ctx, r.run(r.offer(ch.connection, ch.keys[ALICE], ch.keys[BOB]), ALICE), PERMITTED,
                   "an offer after bob blocked alice", strict)


def ordinary_read(r: Relay, connection: str, what: str) -> Data:
    """Bob's read of the connection's ordinary messages (read_conversation, the latest page)."""
    return r.c.data_of(r.c.command("read_conversation", {"connection_id": connection}, BOB), what)


def check_no_plaintext(ctx: CheckContext, strict: bool = False) -> None:
    """No plaintext fallback: a send without an active channel, or carrying plaintext, is
    refused and stores nothing anywhere: neither an ordinary message of the connection (no
    read holds the refused envelopes' ciphertext, message_id or the text) nor an envelope
    bob receives; no answer holds the text."""
    r = Relay(ctx)
    ch = r.open_channel()
    secret = f"secret text {fresh_id()}"
    missing = Channel(ch.connection, fresh_id(), ALICE, BOB, ch.keys)
    answers: list[Reply] = []
    refused_envelopes: list[Data] = []
    with ctx.subcheck("a send on a channel that does not exist"):
        refused_envelopes.append(r.envelope(missing, ALICE, secret.encode()))
        answers.append(r.send(missing, refused_envelopes[-1]))
        relay_refused(ctx, answers[-1], None, "a private_send naming no channel", False)
    with ctx.subcheck("a send on a closed channel"):
        closed = r.open_channel(connection=ch.connection)
        expect_result(ctx, r.close(closed, BOB), "private_channel_close")
        refused_envelopes.append(r.envelope(closed, ALICE, secret.encode()))
        answers.append(r.send(closed, refused_envelopes[-1]))
        relay_refused(ctx, answers[-1], PERMITTED, "a private_send on a closed channel", strict)
    with ctx.subcheck("plaintext beside the envelope"):
        refused_envelopes.append(r.envelope(ch, ALICE))
        answers.append(r.send(ch, refused_envelopes[-1], text=secret))
        expect_error(ctx, answers[-1], INVALID, "a private_send carrying a plaintext field")
    with ctx.subcheck("nothing stored"):
        page = ordinary_read(r, ch.connection, "read_conversation after the refused sends")
        stored = [e["message_id"] for e in refused_envelopes
                  if names(page, e["ciphertext"][:64]) or names(page, e["message_id"])]
        ctx.expect(not stored and not names(page, secret), f"refused private sends reached the connection's ordinary "
                   f"messages (envelopes {stored}, or the text): {json_excerpt(page, 300)}")
        ids = {e["message_id"] for e in refused_envelopes}
        got = [e for e in r.received(ch, BOB, "private_receive by bob") if e.get("message_id") in ids]
        ctx.expect(not got, f"bob's channel holds {len(got)} of the refused envelope(s)")
    answers.append(r.send(ch, r.envelope(ch, ALICE, secret.encode())))
    answers.append(r.receive(ch, BOB))
    leaked = [a.describe() for a in answers if secret in a.http.text]
    ctx.expect(not leaked, f"an answer of the relay holds the plaintext: {leaked[:1]}")


# ----------------------------------------------------------------------------------
# envelopes
# ----------------------------------------------------------------------------------
def check_roundtrip(ctx: CheckContext) -> None:
    """A sealed envelope reaches the peer with its ciphertext unchanged (stored, never
    decrypted), with bearer calls alone (no receiver, no owner server); private_receive
    pages by after_seq and honours limit."""
    r = Relay(ctx)
    ch = r.open_channel()
    texts = [f"private {i} {fresh_id()}".encode() for i in range(3)]
    sent = [r.envelope(ch, ALICE, t) for t in texts]
    for env in sent:
        r.sent(ch, env)
    got = {e.get("message_id"): e for e in r.received(ch, BOB, "private_receive by bob")}
    for i, env in enumerate(sent):
        with ctx.subcheck(f"envelope {i + 1}"):
            back = got.get(env["message_id"])
            ctx.expect(back is not None, f"bob's private_receive lacks envelope {env['message_id']}")
            assert back is not None
            ctx.expect(back.get("ciphertext") == env["ciphertext"], "the ciphertext came back changed: the relay stores it as sent")
            ctx.expect(back.get("signature") == env["signature"], "the envelope's signature came back changed or missing")
            try:
                plain = unseal(ch.keys[BOB].encryption, str(back.get("ciphertext")))
            except Exception:  # noqa: BLE001 - a box that does not open is the finding
                plain = None
            ctx.expect(plain == texts[i], "bob's X25519 key does not open the stored ciphertext to the sealed text")
    with ctx.subcheck("limit"):
        page = r.c.data_of(r.receive(ch, BOB, limit=2), "private_receive limit 2")
        first = list(envelopes_in(page))
        ctx.expect(0 < len(first) <= 2, f"private_receive with limit 2 returned {len(first)} of the three envelopes")
        if first:
            page_after(ctx, r, ch, page, {e.get("message_id") for e in first}, {e["message_id"] for e in sent})
    if r.c.live():
        return
    with ctx.subcheck("default limit"):
        default = int(ctx.profile.operations["private_receive"].params_schema["properties"]["limit"]["default"])
        more = [r.envelope(ch, ALICE) for _ in range(default + 1 - len(sent))]
        for env in more:
            r.sent(ch, env)
        ours = {e["message_id"] for e in sent + more}
        shown = [e for e in r.received(ch, BOB, "private_receive without limit") if e.get("message_id") in ours]
        ctx.expect(len(shown) <= default, f"private_receive without limit returned {len(shown)} of the {default + 1} envelopes "
                   f"sent; the default limit is {default}")


def cursors(ctx: CheckContext, page: Any) -> list[str]:
    """The values of a page that could be its after_seq (the branch's pattern), outside the
    envelopes it holds, nearest the root first."""
    rx = re.compile(str(ctx.profile.operations["private_receive"].params_schema["properties"]["after_seq"]["pattern"]))
    inside = {id(e) for e in envelopes_in(page)}
    out: list[str] = []
    for found in locate.walk(page):
        if id(found.parent) in inside or isinstance(found.value, bool):
            continue
        text = str(found.value) if isinstance(found.value, int | str) else None
        if text is not None and rx.fullmatch(text) and text not in out:
            out.append(text)
    return out[:CURSORS]


def page_after(ctx: CheckContext, r: Relay, ch: Channel, page: Any, shown: set[Any], every: set[str]) -> None:
    """The rest of the envelopes follow by after_seq: one decimal value of the first page
    (found by content, the place the profile gives it unknown) pages to exactly the rest."""
    rest = every - shown
    tried: list[str] = []
    for cursor in cursors(ctx, page):
        reply = r.receive(ch, BOB, after_seq=cursor)
        got = {e.get("message_id") for e in envelopes_in(reply.result)} if reply.ok else set()
        if got & every == rest:
            return
        tried.append(f"{cursor} gave {sorted(map(str, got & every))}")
    raise CheckFailed(f"after a page of {len(shown)} envelopes no after_seq taken from it pages to the other "
                      f"{len(rest)} ({'; '.join(tried) or 'the page holds no decimal value'}): "
                      f"{json_excerpt(page, 300)}", "malformed_answer" if not tried else "expectation")


def check_limits(ctx: CheckContext) -> None:
    """The ordinary text limit does not bound the relay: a ciphertext longer than it, up to
    the schema's maximum, is stored and returned whole; beyond the maximum is -32602."""
    r = Relay(ctx)
    ch = r.open_channel()
    r.sent(ch, r.envelope(ch, ALICE))
    schema = ctx.profile.spec["schemas"]["command"]["anyOf"]
    branch = next(b for b in schema if b["properties"]["operation"]["const"] == "private_send")
    maximum = int(branch["properties"]["envelope"]["properties"]["ciphertext"]["maxLength"])
    ordinary = ctx.limit("text_characters_count")
    plain = os.urandom(maximum * 3 // 4 - 48)  # a sealed box adds 48 bytes: exactly ``maximum`` characters
    env = r.envelope(ch, ALICE, plain)
    ctx.expect(len(env["ciphertext"]) == maximum and maximum > ordinary, "the suite's long ciphertext has the wrong length")
    with ctx.subcheck(f"a {maximum}-character ciphertext"):
        expect_result(ctx, r.send(ch, env), f"a private_send of {maximum} ciphertext characters (ordinary texts: {ordinary})")
        back = [e for e in r.received(ch, BOB, "private_receive", limit=50) if e.get("message_id") == env["message_id"]]
        ctx.expect(back and back[0].get("ciphertext") == env["ciphertext"], "the long ciphertext did not come back whole")
    with ctx.subcheck(f"a {maximum + 1}-character ciphertext"):
        long = r.envelope(ch, ALICE, plain, ciphertext=env["ciphertext"] + "A")
        expect_error(ctx, r.send(ch, long), INVALID, f"a ciphertext of {maximum + 1} characters")


def check_replay(ctx: CheckContext, strict: bool = False) -> None:
    """An envelope is stored once: the same message_id again (the same envelope or another)
    is refused (the MUST also accepts a replay answered without storing it again); an
    expired envelope is refused."""
    r = Relay(ctx)
    ch = r.open_channel()
    env = r.envelope(ch, ALICE)
    r.sent(ch, env)
    with ctx.subcheck("the same envelope again"):
        reply = r.send(ch, env)
        if strict or not reply.ok:
            relay_refused(ctx, reply, PERMITTED, "the same envelope sent again", strict)
        copies = [e for e in r.received(ch, BOB, "private_receive") if e.get("message_id") == env["message_id"]]
        ctx.expect(len(copies) == 1, f"bob receives message_id {env['message_id']} {len(copies)} times")
    with ctx.subcheck("another envelope under a stored message_id"):
        other = r.envelope(ch, ALICE, message_id=env["message_id"])
        relay_refused(ctx, r.send(ch, other), PERMITTED, "another envelope under a message_id already stored", strict)
    with ctx.subcheck("an expired envelope"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE, sent_at=stamp(-7200), expires_at=stamp(-3600))), PERMITTED,
                   "an envelope whose expires_at has passed", strict)


def check_signatures(ctx: CheckContext, strict: bool = False) -> None:
    """Offers, accepts, envelopes and acks are taken only with the signature of the key they
    name: one by another key, or random bytes, is refused."""
    r = Relay(ctx)
    ch = r.open_channel()
    ka, kb = ch.keys[ALICE], ch.keys[BOB]
    with ctx.subcheck("an offer signed by another key"):
        relay_refused(ctx, r.run(r.offer(ch.connection, ka, kb, signer=stranger()), ALICE), PERMITTED,
                   "an offer whose signature another key made", strict)
    with ctx.subcheck("an accept signed by another key"):
        offer = r.offer(ch.connection, ka, kb)
        with ctx.setup("alice offers a second channel", by=SIGNED):
            r.c.data_of(r.run(offer, ALICE), "private_channel_offer")
        relay_refused(ctx, r.run(r.accept(offer, kb, signer=stranger()), BOB), PERMITTED,
                   "an accept whose signature another key made", strict)
    with ctx.subcheck("an envelope signed by another key"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE, signer=stranger())), PERMITTED,
                   "an envelope whose signature another key made", strict)
    with ctx.subcheck("an envelope with a random signature"):
        relay_refused(ctx, r.send(ch, {**r.envelope(ch, ALICE), "signature": random_signature()}), PERMITTED,
                   "an envelope with random signature bytes", strict)
    env = r.envelope(ch, ALICE)
    r.sent(ch, env)
    with ctx.subcheck("an ack signed by another key"):
        relay_refused(ctx, r.run(r.ack(ch, BOB, env["message_id"], signer=stranger()), BOB), PERMITTED,
                   "an ack whose signature another key made", strict)


def check_envelope_binding(ctx: CheckContext) -> None:
    """An envelope names the command's connection and channel, its sender and recipient and
    their keys of this channel (validly signed, each other value is refused)."""
    r = Relay(ctx)
    ch = r.open_channel()
    carol = r.c.agent_id(CAROL)
    wrong: dict[str, Any] = {"connection_id": fresh_id(), "channel_id": fresh_id(), "sender_id": r.c.agent_id(BOB),
             "recipient_id": carol, "sender_key_id": ch.keys[BOB].key_id, "recipient_key_id": ch.keys[ALICE].key_id}
    for name, value in wrong.items():
        with ctx.subcheck(name):
            expect_error(ctx, r.send(ch, r.envelope(ch, ALICE, **{name: value})), PERMITTED,
                         f"an envelope whose {name} is not its channel's")


# ----------------------------------------------------------------------------------
# the profile's signed bytes
# ----------------------------------------------------------------------------------
CONSTANT_FIELDS = ("protocol", "suite", "operation")


def signed_fields(obj: Data, signature_field: str) -> list[str]:
    return [k for k in obj if k not in (signature_field, *CONSTANT_FIELDS)]


def check_signed_bytes(ctx: CheckContext) -> None:
    """Signatures over the profile's canonical JSON are accepted at every step (bundle, offer,
    accept, envelope, ack); a change to any one signed field, the signature kept, is refused."""
    r = Relay(ctx)
    ch = r.open_channel()
    env = r.envelope(ch, ALICE)
    r.sent(ch, env)
    expect_result(ctx, r.run(r.ack(ch, BOB, env["message_id"]), BOB), "a valid private_ack by bob")
    tamper_bundles(ctx, r)
    tamper_channel(ctx, r, ch)
    for name in signed_fields(env, "signature"):
        with ctx.subcheck(f"envelope {name} changed"):
            fresh = r.envelope(ch, ALICE)
            expect_error(ctx, r.send(ch, {**fresh, name: flip(name, fresh[name])}), PERMITTED,
                         f"an envelope whose {name} changed after signing")
    ack = r.ack(ch, BOB, env["message_id"])
    for name in signed_fields(ack, "signature"):
        with ctx.subcheck(f"ack {name} changed"):
            expect_error(ctx, r.run({**ack, name: flip(name, ack[name])}, BOB), (FOUND if "_id" in name else PERMITTED),
                         f"an ack whose {name} changed after signing", also=(PERMITTED, FOUND))


def tamper_bundles(ctx: CheckContext, r: Relay) -> None:
    for name in signed_fields(r.bundle(ALICE, new_pair()), "proof_signature"):
        with ctx.subcheck(f"bundle {name} changed"):
            bundle = r.bundle(ALICE, new_pair())
            expect_error(ctx, r.publish_reply(ALICE, {**bundle, name: flip(name, bundle[name])}), PERMITTED,
                         f"a bundle whose {name} changed after signing")


def tamper_channel(ctx: CheckContext, r: Relay, ch: Channel) -> None:
    ka, kb = ch.keys[ALICE], ch.keys[BOB]
    for name in signed_fields(r.offer(ch.connection, ka, kb), "signature"):
        with ctx.subcheck(f"offer {name} changed"):
            offer = r.offer(ch.connection, ka, kb)
            expect_error(ctx, r.run({**offer, name: flip(name, offer[name])}, ALICE), PERMITTED,
                         f"an offer whose {name} changed after signing", also=(FOUND,))
    offer = r.offer(ch.connection, ka, kb)
    with ctx.setup("alice offers another channel", by=SIGNED):
        r.c.data_of(r.run(offer, ALICE), "private_channel_offer")
    accept = r.accept(offer, kb)
    for name in signed_fields(accept, "signature"):
        with ctx.subcheck(f"accept {name} changed"):
            expect_error(ctx, r.run({**accept, name: flip(name, accept[name])}, BOB), PERMITTED,
                         f"an accept whose {name} changed after signing", also=(FOUND,))


# ----------------------------------------------------------------------------------
def rows(t: Table) -> list[Requirement]:
    at, pair = t.at, t.pair
    chosen = t.chosen("conformance/protocols/plaza/sealed.py (signed bytes), part_private.py (payloads)")
    e2e = "/durableReceive/encrypted_private_chat"
    cmd = "/schemas/command/anyOf"
    code = ("private_refusal_wrong_code",)
    return part(t, PRIVATE_RELAY, [
        t.req("PLAZA-PRIV-CAPABILITIES", "MUST", "private_capabilities reports the relay (agent-plaza-e2ee/1, no plaintext "
              "fallback, no authority); private_status answers its participants only", at(f"{e2e}/capability_request"),
              check_capabilities, ("capabilities_claim_plaintext_fallback", "status_of_foreign_connection")),
        t.req("PLAZA-PRIV-CAPABILITIES-PROFILE", "SHOULD", "private_capabilities carries the profile's fields: protocol, "
              "suites, origin, signed_bytes and the document's flags", chosen, check_capabilities_profile,
              ("capabilities_without_suite",)),
        t.req("PLAZA-PRIV-STATUS", "SHOULD", "private_status lists both sides' keys and the connection's channels with their states",
              chosen, check_status, ("status_omits_peer_keys",)),
        *pair("PLAZA-PRIV-KEY-PUBLISH", "A key bundle is taken only with the proof its own Ed25519 signing key made",
              at(f"{cmd}/14/properties/bundle/properties/proof_signature"), check_key_publish, ("bundle_proof_unchecked",),
              PERMITTED, code),
        *pair("PLAZA-PRIV-ORIGIN", "A bundle names this site's origin and its publisher; an envelope this origin",
              at(f"{cmd}/14/properties/bundle/properties/origin"), check_origin, ("origin_unchecked", "bundle_owner_unchecked"),
              PERMITTED, code),
        *pair("PLAZA-PRIV-KEY-EXPIRY", "A key is usable only between created_at and expires_at",
              at(f"{cmd}/14/properties/bundle/properties/expires_at"), check_key_expiry, ("key_expiry_ignored",), PERMITTED, code),
        *pair("PLAZA-PRIV-KEY-REVOKE", "A revoked key is refused for new channels, sends and acks", at(f"{cmd}/15"),
              check_key_revoke, ("revoked_key_usable",), PERMITTED, code),
        *pair("PLAZA-PRIV-CHANNEL-MUTUAL", "A private channel is active only once both sides signed it, until closed",
              at(f"{e2e}/setup/instruction"), check_channel_mutual,
              ("offer_activates_channel", "offerer_accepts_own", "channel_close_ignored"), PERMITTED, code),
        *pair("PLAZA-PRIV-CONTROLS", "Encrypted chat needs the active friendship and grants no authority beyond its controls",
              at(f"{e2e}/grants_authority"), check_controls, ("channel_without_friendship", "peer_key_unchecked"),
              PERMITTED, code),
        *pair("PLAZA-PRIV-NO-PLAINTEXT", "No plaintext fallback: a send without an active channel or with plaintext is "
              "refused and stored nowhere", at(f"{e2e}/plaintext_fallback"), check_no_plaintext, ("no_channel_falls_back",),
              PERMITTED, code),
        t.req("PLAZA-PRIV-ROUNDTRIP", "MUST", "The relay stores the sealed envelope and returns its ciphertext unchanged; "
              "private_receive pages by after_seq within limit (default 20)", at(f"{e2e}/website_decrypts_body"), check_roundtrip,
              ("ciphertext_altered", "receive_ignores_limit", "receive_default_limit_ignored")),
        t.req("PLAZA-PRIV-LIMITS", "MUST", "The ordinary text limit does not bound private messages; the ciphertext's own maximum does",
              at(f"{e2e}/setup/ordinary_send_limit_is_not_private_relay_limit"), check_limits, ("ordinary_limit_applied",)),
        *pair("PLAZA-PRIV-REPLAY", "An envelope is stored once and never after its expires_at",
              at(f"{cmd}/19/properties/envelope/properties/expires_at"), check_replay,
              ("envelope_replay_accepted", "expired_envelope_accepted"), PERMITTED, code),
        *pair("PLAZA-PRIV-SIGNATURES", "Offers, accepts, envelopes and acks are taken only with their named key's Ed25519 signature",
              at(f"{cmd}/19/properties/envelope/properties/signature"), check_signatures,
              ("offer_signature_unchecked", "accept_signature_unchecked", "envelope_signature_unchecked",
               "ack_signature_unchecked"), PERMITTED, code),
        t.req("PLAZA-PRIV-ENVELOPE-BINDING", "SHOULD", "An envelope names the command's connection and channel, its parties "
              "and their channel keys", chosen, check_envelope_binding, ("envelope_binding_unchecked",)),
        t.req(SIGNED, "SHOULD", "Signatures cover the canonical JSON of the signed object without its signature: valid ones "
              "are accepted, a change to any signed field is refused", chosen, check_signed_bytes,
              ("signed_bytes_normalize_origin", "signed_bytes_other_encoding")),
    ])


__all__ = ["Relay", "rows"]
