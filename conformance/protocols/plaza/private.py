"""Agent Plaza's encrypted private relay (durableReceive.encrypted_private_chat and the ten
private_* branches of schemas.command, issue 14), part one: the suite's side of the relay
(keys, signed commands, sealed envelopes), the capability report and private_status, and the
keys (proofs, origin, expiry, revocation), each requirement declared on its check with the
faults that prove it can fail. Channels, envelopes and the signed bytes are
private_channels.py; what the reference serves reference_private.py; the bytes each
signature covers (the profile's choice) sealed.py.

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
(groups.py ``refused``); the relay is an optional part (groups.py ``served``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from conformance import locate
from conformance.check import CheckContext
from conformance.checks.expect import expect_result
from conformance.declare import at, chosen, fault, requirement
from conformance.faults import answer, noop, replaces, returns
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.groups import PRIVATE_RELAY, refused, require, served
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.sealed import (
    SIGNED_BYTES_RULE,
    KeyPair,
    b64u,
    origin_of,
    seal,
    suite_names,
)
from conformance.protocols.plaza.site import INVALID_STATE, Principal, SiteError
from conformance.transport.binding import Reply

SIGNED = "PLAZA-PRIV-SIGNED-BYTES"  # the row that reports a refused valid signature (a set-up step elsewhere)
ENVELOPE_DEPTH = 16  # an envelope sits a dozen levels deep in a SendMessage answer at most
PERMITTED, FOUND = "NOT_PERMITTED", "NOT_FOUND"
Data = dict[str, Any]
# Where the spec is silent: the profile's signed bytes and payloads
CHOSEN = chosen("conformance/protocols/plaza/sealed.py (signed bytes), reference_private.py (payloads)")
E2E = "/durableReceive/encrypted_private_chat"
COMMANDS = "/schemas/command/anyOf"


def stamp(seconds: float = 0) -> str:
    """An RFC 3339 UTC time ``seconds`` from now, with milliseconds."""
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
        body = {"protocol": self.protocol, "suite": self.suite, "origin": self.origin,
                "visitor_id": self.c.agent_id(who),
                "device_id": pair.device_id, "key_id": pair.key_id, "signing_public_key": pair.jwk("signing"),
                "encryption_public_key": pair.jwk("encryption"), "created_at": stamp(-60),
                "expires_at": stamp(86400)}
        body.update(changes)
        return pair.sign(body, "proof_signature")

    def publish_reply(self, who: str, bundle: Data) -> Reply:
        return self.c.command("private_key_publish", {"bundle": bundle}, who)

    def publish(self, who: str, **changes: Any) -> KeyPair:
        """A fresh key of ``who``, published (a set-up step reported by SIGNED-BYTES)."""
        pair = new_pair()
        with self.ctx.setup(f"{who} publishes a key bundle", by=SIGNED):
            self.c.data_of(self.publish_reply(who, self.bundle(who, pair, **changes)),
                           f"private_key_publish by {who}")
        self.keys[who] = pair
        return pair

    # -- channels ---------------------------------------------------------------------
    def offer(self, connection: str, mine: KeyPair, theirs: KeyPair, *, signer: KeyPair | None = None,
              **changes: Any) -> Data:
        data = {"operation": "private_channel_offer", "connection_id": connection, "channel_id": fresh_id(),
                "key_id": mine.key_id, "peer_key_id": theirs.key_id, "request_key": fresh_id(),
                "expires_at": stamp(3600)}
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
        body = {"protocol": self.protocol, "suite": self.suite, "origin": self.origin,
                "connection_id": ch.connection,
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
        return self.c.command("private_channel_close",
                              {"connection_id": ch.connection, "channel_id": ch.channel_id}, who)


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


@fault  # of every -CODE twin of the relay's rows (each names it)
def private_refusal_wrong_code(ref: Any) -> None:
    """The relay's refusals carry INVALID_STATE instead of the profile's NOT_PERMITTED."""
    ref.private_refused = lambda message: SiteError(INVALID_STATE, message)


def signed(kind: str) -> Callable[..., bool]:
    """Whether ``check_signature`` is asked about a signature of ``kind``."""
    return lambda asked, *_: asked == kind


# ----------------------------------------------------------------------------------
# capabilities and status
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-PRIV-CAPABILITIES", level="MUST", optional=PRIVATE_RELAY,
             title="private_capabilities reports the relay (agent-plaza-e2ee/1, no plaintext fallback, no "
                   "authority); private_status answers its participants only",
             source=at(f"{E2E}/capability_request"),
             faults=[answer("capabilities_claim_plaintext_fallback", "cmd_private_capabilities",
                            "private_capabilities says the relay falls back to plaintext (the document: "
                            "plaintext_fallback false).", set={"plaintext_fallback": True})])
@served(PRIVATE_RELAY)
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
        ctx.expect(all(v is False for v in said),
                   f"private_capabilities says {flag}={said}; the document says {flag}: false")
    connection = r.c.befriend()
    with ctx.subcheck("private_status of a participant"):
        r.c.data_of(r.c.command("private_status", {"connection_id": connection}),
                    "private_status of alice's connection")
    with ctx.subcheck("private_status of a stranger"):
        relay_refused(ctx, r.c.command("private_status", {"connection_id": connection}, CAROL), None,
                      "private_status by carol of alice and bob's connection", False)


@check_capabilities.fault
def status_of_foreign_connection(ref: Any) -> None:
    """private_status answers about any connection, also to an agent that takes no part in it."""
    def status(who: Principal, data: Data) -> Data:
        conn = ref.s["connections"].get(data["connection_id"])
        if conn is None:
            raise SiteError("NOT_FOUND", "no such connection")
        return {"connection_id": conn["id"], "connection_state": conn["state"],
                "keys": {"own": [], "peer": []}, "channels": []}

    ref.cmd_private_status = status


@requirement(id="PLAZA-PRIV-CAPABILITIES-PROFILE", level="SHOULD", optional=PRIVATE_RELAY,
             title="private_capabilities carries the profile's fields: protocol, suites, origin, "
                   "signed_bytes and the document's flags",
             source=CHOSEN,
             faults=[answer("capabilities_without_suite", "cmd_private_capabilities",
                            "private_capabilities leaves out the suites it speaks (the profile's report "
                            "lists them).", drop=["suites"])])
@served(PRIVATE_RELAY)
def check_capabilities_profile(ctx: CheckContext) -> None:
    """The profile's capability report: protocol, suites, origin, signed bytes, the flags."""
    r = Relay(ctx)
    doc = ctx.profile.spec["durableReceive"]["encrypted_private_chat"]
    data = r.c.data_of(r.c.command("private_capabilities", {}), "private_capabilities",
                       ("protocol", "suites", "origin"))
    ctx.expect(data["protocol"] == doc["protocol"],
               f"protocol is {data['protocol']!r}, expected {doc['protocol']!r}")
    ctx.expect(isinstance(data["suites"], list) and r.suite in data["suites"],
               f"suites {data['suites']!r} lacks {r.suite}")
    ctx.expect(data["origin"] == r.origin, f"origin is {data['origin']!r}, expected {r.origin}")
    ctx.expect(data.get("signed_bytes") == SIGNED_BYTES_RULE,
               f"signed_bytes is {data.get('signed_bytes')!r}, expected {SIGNED_BYTES_RULE}")
    for flag in ("plaintext_fallback", "grants_authority", "website_decrypts_body",
                 "public_receiver_required"):
        ctx.expect(data.get(flag) is False, f"{flag} is {data.get(flag)!r}, expected false")


@requirement(id="PLAZA-PRIV-STATUS", level="SHOULD", optional=PRIVATE_RELAY,
             title="private_status lists both sides' keys and the connection's channels with their states",
             source=CHOSEN)
@served(PRIVATE_RELAY)
def check_status(ctx: CheckContext) -> None:
    """private_status lists both sides' keys (the peer's encryption key to seal to) and the
    connection's channels with their states."""
    r = Relay(ctx)
    ch = r.open_channel()
    data = r.c.data_of(r.c.command("private_status", {"connection_id": ch.connection}), "private_status",
                       ("keys", "channels"))
    peer = [k for k in (dig(data, "keys", "peer") or []) if dig(k, "key_id") == ch.keys[BOB].key_id]
    ctx.expect(peer and dig(peer[0], "encryption_public_key", "x") == ch.keys[BOB].encryption_x,
               "keys.peer does not list bob's published key with its encryption key: "
               f"{json.dumps(data['keys'])[:300]}")
    own = [k for k in (dig(data, "keys", "own") or []) if dig(k, "key_id") == ch.keys[ALICE].key_id]
    ctx.expect(bool(own), f"keys.own does not list alice's key: {json.dumps(data['keys'])[:300]}")
    states = {dig(c, "channel_id"): dig(c, "state") for c in data["channels"] if isinstance(c, dict)} \
        if isinstance(data["channels"], list) else {}
    ctx.expect(states.get(ch.channel_id) == "active",
               f"the channel both signed is listed as {states.get(ch.channel_id)!r}")
    expect_result(ctx, r.close(ch, BOB), "private_channel_close by bob")
    data = r.c.data_of(r.c.command("private_status", {"connection_id": ch.connection}), "private_status",
                       ("channels",))
    states = {dig(c, "channel_id"): dig(c, "state") for c in data["channels"] if isinstance(c, dict)} \
        if isinstance(data["channels"], list) else {}
    ctx.expect(states.get(ch.channel_id) == "closed",
               f"a closed channel is listed as {states.get(ch.channel_id)!r}")


@check_status.fault
def status_omits_peer_keys(ref: PlazaReference) -> None:
    """private_status lists no key of the peer (a sender cannot learn what to seal to)."""
    @replaces(ref, "cmd_private_status")
    def status(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        out["keys"]["peer"] = []
        return out


# ----------------------------------------------------------------------------------
# keys
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-PRIV-KEY-PUBLISH", level="MUST", optional=PRIVATE_RELAY,
             title="A key bundle is taken only with the proof its own Ed25519 signing key made",
             source=at(f"{COMMANDS}/14/properties/bundle/properties/proof_signature"),
             faults=[returns("bundle_proof_unchecked", "check_signature", None,
                             "A key bundle is published whoever signed its proof (the proof is never "
                             "verified).",
                             when=signed("bundle"))],
             code=PERMITTED, code_faults=["private_refusal_wrong_code"])
@served(PRIVATE_RELAY)
def check_key_publish(ctx: CheckContext, strict: bool = False) -> None:
    """A bundle whose proof_signature its own signing key did not make is refused."""
    r = Relay(ctx)
    pair = new_pair()
    with ctx.subcheck("a proof by another key"):
        forged = stranger().sign({k: v for k, v in r.bundle(ALICE, pair).items() if k != "proof_signature"},
                                 "proof_signature")
        relay_refused(ctx, r.publish_reply(ALICE, forged), PERMITTED, "a bundle whose proof another key made",
                      strict)
    with ctx.subcheck("a random proof"):
        relay_refused(ctx,
                      r.publish_reply(ALICE,
                                      {**r.bundle(ALICE, new_pair()), "proof_signature": random_signature()}),
                   PERMITTED, "a bundle with random proof bytes", strict)


@requirement(id="PLAZA-PRIV-ORIGIN", level="MUST", optional=PRIVATE_RELAY,
             title="A bundle names this site's origin and its publisher; an envelope this origin",
             source=at(f"{COMMANDS}/14/properties/bundle/properties/origin"),
             faults=[noop("origin_unchecked", "check_origin",
                          "Bundles and envelopes are taken whatever origin they name."),
                     noop("bundle_owner_unchecked", "check_bundle_owner",
                          "An agent publishes bundles naming another visitor's id.")],
             code=PERMITTED, code_faults=["private_refusal_wrong_code"])
@served(PRIVATE_RELAY)
def check_origin(ctx: CheckContext, strict: bool = False) -> None:
    """A bundle names this site's origin and the publisher itself; an envelope this origin."""
    r = Relay(ctx)
    with ctx.subcheck("a bundle of another origin"):
        relay_refused(ctx,
                      r.publish_reply(ALICE, r.bundle(ALICE, new_pair(), origin="https://elsewhere.example")),
                      PERMITTED,
                   f"a bundle naming another origin than {r.origin}", strict)
    with ctx.subcheck("a bundle naming another visitor"):
        relay_refused(ctx, r.publish_reply(ALICE, r.bundle(ALICE, new_pair(), visitor_id=r.c.agent_id(BOB))),
                      PERMITTED,
                   "alice publishing a bundle that names bob's visitor_id", strict)
    ch = r.open_channel()
    with ctx.subcheck("an envelope of another origin"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE, origin="https://elsewhere.example")), PERMITTED,
                   "an envelope naming another origin", strict)


@requirement(id="PLAZA-PRIV-KEY-EXPIRY", level="MUST", optional=PRIVATE_RELAY,
             title="A key is usable only between created_at and expires_at",
             source=at(f"{COMMANDS}/14/properties/bundle/properties/expires_at"),
             faults=[returns("key_expiry_ignored", "key_window_ok", True,
                             "A key counts as valid whatever its created_at and expires_at.")],
             code=PERMITTED, code_faults=["private_refusal_wrong_code"])
@served(PRIVATE_RELAY)
def check_key_expiry(ctx: CheckContext, strict: bool = False) -> None:
    """A key is usable only from created_at until expires_at: an expired bundle, or one
    expiring before it is created, is refused; a key past expires_at opens no channel."""
    r = Relay(ctx)
    with ctx.subcheck("an expired bundle"):
        relay_refused(ctx,
                      r.publish_reply(ALICE,
                                      r.bundle(ALICE, new_pair(), created_at=stamp(-7200),
                                               expires_at=stamp(-3600))),
                   PERMITTED, "a bundle whose expires_at has passed", strict)
    with ctx.subcheck("a bundle expiring before it is created"):
        relay_refused(ctx,
                      r.publish_reply(ALICE,
                                      r.bundle(ALICE, new_pair(), created_at=stamp(7200),
                                               expires_at=stamp(3600))),
                   PERMITTED, "a bundle whose expires_at precedes its created_at", strict)
    if not ctx.run.control_path:
        return  # the clock moves only under control
    connection = r.c.befriend()
    mine, theirs = r.publish(ALICE, expires_at=stamp(600)), r.publish(BOB)
    ctx.control("advance_clock", seconds=1200)
    with ctx.subcheck("a channel offered with a key past expires_at"):
        relay_refused(ctx, r.run(r.offer(connection, mine, theirs, expires_at=stamp(86400 * 2)), ALICE),
                      PERMITTED,
                   "an offer signed with a key whose expires_at has passed", strict)


@requirement(id="PLAZA-PRIV-KEY-REVOKE", level="MUST", optional=PRIVATE_RELAY,
             title="A revoked key is refused for new channels, sends and acks",
             source=at(f"{COMMANDS}/15"),
             faults=[returns("revoked_key_usable", "key_revoked", False,
                             "private_key_revoke is recorded but a revoked key still signs and receives "
                             "channels.")],
             code=PERMITTED, code_faults=["private_refusal_wrong_code"])
@served(PRIVATE_RELAY)
def check_key_revoke(ctx: CheckContext, strict: bool = False) -> None:
    """A revoked key is refused for new channels, sends and acks."""
    r = Relay(ctx)
    ch = r.open_channel()
    env = r.envelope(ch, ALICE)
    r.sent(ch, env)
    expect_result(ctx, r.c.command("private_key_revoke", {"key_id": ch.keys[ALICE].key_id}),
                  "private_key_revoke by alice")
    with ctx.subcheck("a send with the revoked key"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE)), PERMITTED,
                      "a private_send signed by a revoked key", strict)
    with ctx.subcheck("a new channel with the revoked key"):
        relay_refused(ctx, r.run(r.offer(ch.connection, ch.keys[ALICE], ch.keys[BOB]), ALICE), PERMITTED,
                   "an offer naming the offerer's revoked key", strict)
    expect_result(ctx, r.c.command("private_key_revoke", {"key_id": ch.keys[BOB].key_id}, BOB),
                  "private_key_revoke by bob")
    with ctx.subcheck("an ack with the revoked key"):
        relay_refused(ctx, r.run(r.ack(ch, BOB, env["message_id"]), BOB), PERMITTED,
                      "a private_ack signed by a revoked key", strict)
    with ctx.subcheck("a new channel to the peer's revoked key"):
        fresh = r.publish(ALICE)
        relay_refused(ctx, r.run(r.offer(ch.connection, fresh, ch.keys[BOB]), ALICE), PERMITTED,
                   "an offer naming the peer's revoked key", strict)
