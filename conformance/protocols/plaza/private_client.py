"""The private relay as a client drives it, for the rows of private.py and
private_channels.py and the part-2 state machines: the relay's commands (a key pair
published, a channel offered and accepted, envelopes sealed and sent), what their
answers carry read by content, and the signed bytes (docs/agent-plaza.md "Private
relay": the canonical JSON of the object without its signature field)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import chosen
from conformance.protocols.plaza.client import ALICE, BOB, PlazaClient, fresh_id
from conformance.protocols.plaza.parts import PRIVATE_RELAY, refused, require
from conformance.protocols.plaza.sealed import KeyPair, b64u, origin_of, seal, suite_names
from conformance.transport.binding import Reply

SIGNED = "PLAZA-PRIV-SIGNED-BYTES"  # the row that reports a refused valid signature (a set-up step elsewhere)
ENVELOPE_DEPTH = 16  # an envelope sits a dozen levels deep in a SendMessage answer at most
PERMITTED, FOUND = "NOT_PERMITTED", "NOT_FOUND"
Data = dict[str, Any]
# Where the spec is silent: the profile's signed bytes and payloads
CHOSEN = chosen("conformance/protocols/plaza/sealed.py (signed bytes), reference/private.py (payloads)")
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


def signed(kind: str) -> Callable[..., bool]:
    """Whether ``check_signature`` is asked about a signature of ``kind``."""
    return lambda asked, *_: asked == kind
