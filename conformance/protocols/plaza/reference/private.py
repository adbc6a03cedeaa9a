"""Part 2 of the reference site (issue 14): the encrypted private relay: key bundles, mutually
signed channels, sealed envelopes the site stores and never decrypts
(durableReceive.encrypted_private_chat). A mixin of PlazaReference: its commands are
``cmd_<name>`` methods, its state lives under its own keys of ``self.s`` (set by
``reset_private``), and ``PART_COMMANDS`` names the scope each command needs.

What the reference serves (the profile's choices where the document is silent; the
signed bytes and the origin are in sealed.py's docstring):

- scopes: ``messages:read`` for private_capabilities, private_status, private_receive and
  private_ack; ``messages:write`` for publishing and revoking keys, offering, accepting and
  closing channels and private_send;
- a key is the caller's own (``visitor_id``), names the site's origin, carries a valid
  proof, and is usable from ``created_at`` until ``expires_at`` unless revoked; a revoked
  key_id is never published again; the same bundle again is answered unchanged;
- a channel lives in an **active** friendship connection of the two agents: the offerer
  names its own key and the peer's, the peer accepts with exactly those two keys; it is
  active only once both signed (offer + accept), until either side closes it or the offer
  expires unaccepted; a stopped agent offers, accepts and sends nothing;
- private_send needs the active channel, an envelope naming the command's connection and
  channel, the site's origin, the caller and its peer with their channel keys (both live),
  an unexpired ``expires_at``, a message_id never stored before, and the sender key's
  signature. There is no plaintext fallback: anything else is refused and nothing is
  stored; the relay stores the envelope as sent and never decrypts it;
- private_receive returns the envelopes addressed to the caller's channel key after
  ``after_seq`` (a decimal string), at most ``limit``; private_ack needs the recipient key's
  signature;
- refusals: NOT_FOUND for a connection, channel, key or message the caller cannot see,
  NOT_PERMITTED for everything a key, a signature, a channel state or a friendship control
  refuses; schema breaks are A2A_INVALID_PARAMETERS (-32602) before any of this.

Payloads (``data`` of the answer, besides ``operation``):

- private_capabilities: ``protocol, suites [..], origin, signed_bytes, plaintext_fallback: false,
  grants_authority: false, website_decrypts_body: false, public_receiver_required: false,
  owner_server_required: false, ciphertext_characters {minimum, maximum}``;
- private_key_publish: ``key K, published`` (false when the same bundle was already published);
- private_key_revoke: ``key K`` (state ``revoked``);
- private_channel_offer, _accept, _close: ``channel C``;
- private_send: ``stored: true, connection_id, channel_id, message_id, seq, stored_at``;
- private_receive: ``connection_id, channel_id, key_id, envelopes [{seq, stored_at, acknowledged,
  envelope}], has_more, next_after_seq``;
- private_ack: ``acknowledged: true, channel_id, message_id, seq``;
- private_status: ``connection_id, connection_state, keys {own [K], peer [K]}, channels [C]``.

``K = {key_id, device_id, visitor_id, state (active|revoked|expired), created_at, expires_at,
signing_public_key, encryption_public_key}``; ``C = {channel_id, connection_id, state
(offered|active|closed|expired), offerer_id, accepter_id, offer_key_id, accept_key_id,
expires_at}``."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, ClassVar

from conformance.protocols.plaza.sealed import (
    SIGNATURE_FIELDS,
    SIGNED_BYTES_RULE,
    origin_of,
    signed_bytes,
    verify_detached,
)
from conformance.protocols.plaza.site import (
    ACTIVE,
    MESSAGES_READ,
    MESSAGES_WRITE,
    NOT_FOUND,
    NOT_PERMITTED,
    Principal,
    SiteError,
    iso,
    parse_ms,
)

OFFERED, OPEN, CLOSED_CHANNEL, EXPIRED = "offered", "active", "closed", "expired"
REVOKED = "revoked"
Data = dict[str, Any]


class PrivateRelayPart:
    PART_COMMANDS: ClassVar[dict[str, str]] = {
        "private_capabilities": MESSAGES_READ, "private_key_publish": MESSAGES_WRITE,
        "private_key_revoke": MESSAGES_WRITE,
        "private_channel_offer": MESSAGES_WRITE, "private_channel_accept": MESSAGES_WRITE,
        "private_channel_close": MESSAGES_WRITE, "private_send": MESSAGES_WRITE,
        "private_receive": MESSAGES_READ,
        "private_ack": MESSAGES_READ, "private_status": MESSAGES_READ,
    }
    s: dict[str, Any]
    spec: dict[str, Any]
    branches: dict[str, dict[str, Any]]

    if TYPE_CHECKING:
        def now_ms(self) -> int: ...
        def participant_connection(self, visitor_id: str, connection_id: Any) -> dict[str, Any]: ...
        def peer_of(self, conn: dict[str, Any], visitor_id: str) -> str: ...
        def check_can_read(self, conn: dict[str, Any], visitor_id: str) -> None: ...
        def require_not_stopped(self, visitor_id: str) -> None: ...

    def reset_private(self) -> None:
        """This part's state on a fresh site: keys by key_id, channels by channel_id (each
        with its stored envelopes), and every stored envelope's message_id."""
        self.s["private_keys"] = {}
        self.s["private_channels"] = {}
        self.s["private_message_ids"] = {}

    # ------------------------------------------------------------------ the document's names

    @property
    def private_origin(self) -> str:
        return origin_of(self.spec)

    def private_refused(self, message: str) -> SiteError:
        """The refusal of a key, signature, channel or control rule (the profile's code)."""
        return SiteError(NOT_PERMITTED, message)

    def ciphertext_limit(self) -> int:
        """The longest ciphertext: the envelope schema's, not the ordinary text limit."""
        envelope = self.branches["private_send"]["properties"]["envelope"]
        return int(envelope["properties"]["ciphertext"]["maxLength"])

    # ------------------------------------------------------------------ signatures

    def signed_view(self, kind: str, obj: Data) -> bytes:
        """The bytes a signature of ``kind`` covers (sealed.py: the profile's choice)."""
        return signed_bytes(obj, SIGNATURE_FIELDS[kind])

    def check_signature(self, kind: str, signing_x: str, obj: Data) -> None:
        """The object's signature is the Ed25519 signature of ``signing_x`` over its bytes."""
        if not verify_detached(signing_x, self.signed_view(kind, obj),
                               str(obj.get(SIGNATURE_FIELDS[kind], ""))):
            raise self.private_refused(f"the {kind} signature does not verify with the signing key")

    # ------------------------------------------------------------------ keys

    def key_window_ok(self, created_ms: int, expires_ms: int) -> bool:
        """A key is usable from created_at until (not at) expires_at."""
        return created_ms <= self.now_ms() < expires_ms

    def key_revoked(self, key: Data) -> bool:
        return bool(key["state"] == REVOKED)

    def key_view(self, key: Data) -> Data:
        state = key["state"]
        if state != REVOKED and not self.key_window_ok(key["created_at"], key["expires_at"]):
            state = EXPIRED
        return {"key_id": key["key_id"], "device_id": key["device_id"], "visitor_id": key["visitor_id"],
                "state": state,
                "created_at": key["bundle"]["created_at"], "expires_at": key["bundle"]["expires_at"],
                "signing_public_key": {"kty": "OKP", "crv": "Ed25519", "x": key["signing_x"]},
                "encryption_public_key": {"kty": "OKP", "crv": "X25519", "x": key["encryption_x"]}}

    def check_bundle_owner(self, caller: str, bundle: Data) -> None:
        if bundle["visitor_id"] != caller:
            raise self.private_refused("a bundle names its publisher's own visitor_id")

    def check_origin(self, origin: str, what: str) -> None:
        if origin.rstrip("/") != self.private_origin:
            raise self.private_refused(f"{what} names the origin {origin!r}, this site is "
                                       f"{self.private_origin}")

    def check_bundle_times(self, bundle: Data) -> tuple[int, int]:
        created, expires = parse_ms(bundle["created_at"]), parse_ms(bundle["expires_at"])
        if expires <= created or not self.key_window_ok(min(created, self.now_ms()), expires):
            raise self.private_refused("the key has expired (or expires before it is created)")
        return created, expires

    def cmd_private_key_publish(self, who: Principal, data: Data) -> Data:
        """A key bundle of the caller's own, at this origin, live, with its proof."""
        caller, bundle = who.visitor_id, data["bundle"]
        self.check_bundle_owner(caller, bundle)
        self.check_origin(bundle["origin"], "the bundle")
        created, expires = self.check_bundle_times(bundle)
        self.check_signature("bundle", bundle["signing_public_key"]["x"], bundle)
        known = self.s["private_keys"].get(bundle["key_id"])
        if known is not None:
            if known["visitor_id"] == caller and known["bundle"] == bundle and not self.key_revoked(known):
                return {"key": self.key_view(known), "published": False}
            raise self.private_refused("this key_id is already used (or revoked)")
        key = {"key_id": bundle["key_id"], "device_id": bundle["device_id"], "visitor_id": caller,
               "state": OPEN,
               "created_at": created, "expires_at": expires, "signing_x": bundle["signing_public_key"]["x"],
               "encryption_x": bundle["encryption_public_key"]["x"], "bundle": copy.deepcopy(bundle)}
        self.s["private_keys"][key["key_id"]] = key
        return {"key": self.key_view(key), "published": True}

    def cmd_private_key_revoke(self, who: Principal, data: Data) -> Data:
        """The caller's key is revoked for good (again: the same answer)."""
        key = self.own_key(who.visitor_id, data["key_id"])
        key["state"] = REVOKED
        return {"key": self.key_view(key)}

    def own_key(self, caller: str, key_id: str) -> Data:
        key = self.s["private_keys"].get(key_id)
        if key is None or key["visitor_id"] != caller:
            raise SiteError(NOT_FOUND, "no such key of yours")
        found: Data = key
        return found

    def live_key(self, owner: str, key_id: str, whose: str) -> Data:
        """A published key of ``owner``, neither revoked nor outside its validity."""
        key = self.s["private_keys"].get(key_id)
        if key is None or key["visitor_id"] != owner:
            raise self.private_refused(f"{whose} key {key_id} is not a published key of that agent")
        if self.key_revoked(key):
            raise self.private_refused(f"{whose} key {key_id} is revoked")
        if not self.key_window_ok(key["created_at"], key["expires_at"]):
            raise self.private_refused(f"{whose} key {key_id} is outside its validity "
                                       "(created_at..expires_at)")
        found: Data = key
        return found

    # ------------------------------------------------------------------ channels

    def check_private_friendship(self, conn: Data, caller: str) -> None:
        """Encrypted chat uses an existing, active friendship, under its current controls."""
        if conn["state"] != ACTIVE:
            raise self.private_refused(f"the connection is {conn['state']}: private chat needs an active "
                                       "friendship")
        self.require_not_stopped(caller)

    def channel_in(self, conn: Data, channel_id: str) -> Data:
        channel = self.s["private_channels"].get(channel_id)
        if channel is None or channel["connection_id"] != conn["id"]:
            raise SiteError(NOT_FOUND, "no such channel in this connection")
        found: Data = channel
        return found

    def channel_state(self, channel: Data) -> str:
        if channel["state"] == OFFERED and self.now_ms() >= channel["expires_at"]:
            return EXPIRED
        return str(channel["state"])

    def channel_active(self, channel: Data) -> bool:
        """Active only once both sides signed (offer and accept), until closed."""
        return self.channel_state(channel) == OPEN

    def channel_view(self, channel: Data) -> Data:
        return {"channel_id": channel["channel_id"], "connection_id": channel["connection_id"],
                "state": self.channel_state(channel), "offerer_id": channel["offerer"],
                "accepter_id": channel["accepter"],
                "offer_key_id": channel["offer_key_id"], "accept_key_id": channel["accept_key_id"],
                "expires_at": channel["offer"]["expires_at"]}

    def cmd_private_channel_offer(self, who: Principal, data: Data) -> Data:
        """The offerer's signed half of a channel: its live key and the peer's."""
        caller = who.visitor_id
        conn = self.participant_connection(caller, data["connection_id"])
        self.check_private_friendship(conn, caller)
        peer = self.peer_of(conn, caller)
        own = self.live_key(caller, data["key_id"], "your")
        self.live_key(peer, data["peer_key_id"], "the peer's")
        expires = parse_ms(data["expires_at"])
        if expires <= self.now_ms():
            raise self.private_refused("the offer's expires_at has passed")
        self.check_signature("offer", own["signing_x"], data)
        known = self.s["private_channels"].get(data["channel_id"])
        if known is not None:
            if known["offer"] == data:
                return {"channel": self.channel_view(known)}
            raise self.private_refused("this channel_id is already used")
        if any(c["offerer"] == caller and c["offer"]["request_key"] == data["request_key"]
               for c in self.s["private_channels"].values()):
            raise self.private_refused("this request_key was already used for another offer")
        channel = {"channel_id": data["channel_id"], "connection_id": conn["id"], "state": OFFERED,
                   "offerer": caller,
                   "accepter": peer, "offer_key_id": data["key_id"], "accept_key_id": data["peer_key_id"],
                   "expires_at": expires, "offer": copy.deepcopy(data), "accept": None, "last_seq": 0,
                   "envelopes": []}
        self.s["private_channels"][channel["channel_id"]] = channel
        return {"channel": self.channel_view(channel)}

    def check_accept_keys(self, channel: Data, caller: str, data: Data) -> None:
        """Only the peer the offer names signs the second half, with exactly the offer's two
        keys (key_id: its own, peer_key_id: the offerer's): one side never signs both."""
        if channel["accepter"] != caller:
            raise self.private_refused("only the offered peer accepts a channel (the offerer cannot sign "
                                       "both halves)")
        if (data["key_id"], data["peer_key_id"]) != (channel["accept_key_id"], channel["offer_key_id"]):
            raise self.private_refused("an accept names the keys of the offer (key_id: yours, peer_key_id: "
                                       "the offerer's)")

    def cmd_private_channel_accept(self, who: Principal, data: Data) -> Data:
        """The peer's signed half, with exactly the two keys of the offer: the channel is active."""
        caller = who.visitor_id
        conn = self.participant_connection(caller, data["connection_id"])
        self.check_private_friendship(conn, caller)
        channel = self.channel_in(conn, data["channel_id"])
        if channel["accept"] == data and self.channel_state(channel) == OPEN:
            return {"channel": self.channel_view(channel)}
        if self.channel_state(channel) != OFFERED:
            raise self.private_refused(f"the channel is {self.channel_state(channel)}, not an open offer")
        self.check_accept_keys(channel, caller, data)
        own = self.live_key(caller, data["key_id"], "your")
        self.live_key(self.peer_of(conn, caller), data["peer_key_id"], "the offerer's")
        self.check_signature("accept", own["signing_x"], data)
        channel["state"], channel["accept"] = OPEN, copy.deepcopy(data)
        return {"channel": self.channel_view(channel)}

    def cmd_private_channel_close(self, who: Principal, data: Data) -> Data:
        """Either side closes; a closed channel takes nothing more (closing again: the same)."""
        conn = self.participant_connection(who.visitor_id, data["connection_id"])
        channel = self.channel_in(conn, data["channel_id"])
        channel["state"] = CLOSED_CHANNEL
        return {"channel": self.channel_view(channel)}

    # ------------------------------------------------------------------ envelopes

    def check_envelope_binding(self, caller: str, conn: Data, channel: Data, data: Data) -> None:
        """The envelope names the command's connection and channel, the caller and its peer
        with their keys of this channel."""
        env = data["envelope"]
        mine_offered = channel["offerer"] == caller
        sender_key = channel["offer_key_id"] if mine_offered else channel["accept_key_id"]
        recipient_key = channel["accept_key_id"] if mine_offered else channel["offer_key_id"]
        expected = {"connection_id": conn["id"], "channel_id": channel["channel_id"], "sender_id": caller,
                    "recipient_id": self.peer_of(conn, caller), "sender_key_id": sender_key,
                    "recipient_key_id": recipient_key}
        wrong = sorted(k for k, v in expected.items() if env[k] != v)
        if wrong:
            raise self.private_refused(f"the envelope does not match its channel: {', '.join(wrong)}")

    def check_envelope_times(self, env: Data) -> None:
        """An envelope past its expires_at (or expiring before it was sent) is refused."""
        sent, expires = parse_ms(env["sent_at"]), parse_ms(env["expires_at"])
        if expires <= self.now_ms() or expires <= sent:
            raise self.private_refused("the envelope has expired")

    def seen_message_id(self, message_id: str) -> bool:
        return message_id in self.s["private_message_ids"]

    def cmd_private_send(self, who: Principal, data: Data) -> Data:
        """A sealed envelope on an active channel: checked, then stored as sent (never decrypted)."""
        caller, env = who.visitor_id, data["envelope"]
        conn = self.participant_connection(caller, data["connection_id"])
        self.check_private_friendship(conn, caller)
        channel = self.channel_in(conn, data["channel_id"])
        if not self.channel_active(channel):
            raise self.private_refused(f"the channel is {self.channel_state(channel)}: no plaintext "
                                       "fallback, nothing stored")
        self.check_envelope_binding(caller, conn, channel, data)
        self.check_origin(env["origin"], "the envelope")
        if len(env["ciphertext"]) > self.ciphertext_limit():
            raise self.private_refused("the ciphertext is longer than the relay takes")
        sender = self.live_key(caller, env["sender_key_id"], "your")
        self.live_key(self.peer_of(conn, caller), env["recipient_key_id"], "the recipient's")
        self.check_envelope_times(env)
        self.check_signature("envelope", sender["signing_x"], env)
        if self.seen_message_id(env["message_id"]):
            raise self.private_refused("this envelope's message_id was already stored (a replay)")
        return self.store_envelope(conn, channel, env)

    def store_envelope(self, conn: Data, channel: Data, env: Data) -> Data:
        channel["last_seq"] += 1
        stored = {"seq": channel["last_seq"], "stored_at": self.now_ms(), "acknowledged": False,
                  "envelope": copy.deepcopy(env)}
        channel["envelopes"].append(stored)
        self.s["private_message_ids"][env["message_id"]] = channel["channel_id"]
        return {"stored": True, "connection_id": conn["id"], "channel_id": channel["channel_id"],
                "message_id": env["message_id"], "seq": str(stored["seq"]),
                "stored_at": iso(stored["stored_at"])}

    def stored_view(self, stored: Data) -> Data:
        return {"seq": str(stored["seq"]), "stored_at": iso(stored["stored_at"]),
                "acknowledged": stored["acknowledged"],
                "envelope": copy.deepcopy(stored["envelope"])}

    def receive_limit(self, data: Data) -> int:
        return int(data.get("limit", self.branches["private_receive"]["properties"]["limit"]["default"]))

    def cmd_private_receive(self, who: Principal, data: Data) -> Data:
        """The envelopes to the caller's channel key after after_seq, oldest first, at most limit."""
        caller = who.visitor_id
        conn = self.participant_connection(caller, data["connection_id"])
        self.check_can_read(conn, caller)
        channel = self.channel_in(conn, data["channel_id"])
        self.own_key(caller, data["key_id"])
        after, limit = int(data.get("after_seq", "0")), self.receive_limit(data)
        mine = [e for e in channel["envelopes"] if e["envelope"]["recipient_key_id"] == data["key_id"]
                and e["seq"] > after]
        page = mine[:limit]
        return {"connection_id": conn["id"], "channel_id": channel["channel_id"], "key_id": data["key_id"],
                "envelopes": [self.stored_view(e) for e in page], "has_more": len(mine) > limit,
                "next_after_seq": str(page[-1]["seq"]) if page else str(after)}

    def cmd_private_ack(self, who: Principal, data: Data) -> Data:
        """The recipient key acknowledges a stored envelope with its signature."""
        caller = who.visitor_id
        conn = self.participant_connection(caller, data["connection_id"])
        channel = self.channel_in(conn, data["channel_id"])
        stored = next((e for e in channel["envelopes"] if e["envelope"]["message_id"] == data["message_id"]),
                      None)
        if stored is None or stored["envelope"]["recipient_id"] != caller:
            raise SiteError(NOT_FOUND, "no such envelope to you in this channel")
        key = self.live_key(caller, data["key_id"], "your")
        if stored["envelope"]["recipient_key_id"] != key["key_id"]:
            raise self.private_refused("an ack is signed by the key the envelope was sealed to")
        self.check_signature("ack", key["signing_x"], data)
        stored["acknowledged"] = True
        return {"acknowledged": True, "channel_id": channel["channel_id"], "message_id": data["message_id"],
                "seq": str(stored["seq"])}

    # ------------------------------------------------------------------ reports

    def cmd_private_capabilities(self, who: Principal, data: Data) -> Data:
        """What the relay speaks, read from the document."""
        doc = self.spec["durableReceive"]["encrypted_private_chat"]
        bundle = self.branches["private_key_publish"]["properties"]["bundle"]["properties"]
        ciphertext = self.branches["private_send"]["properties"]["envelope"]["properties"]["ciphertext"]
        return {"protocol": doc["protocol"], "suites": [bundle["suite"]["const"]],
                "origin": self.private_origin,
                "signed_bytes": SIGNED_BYTES_RULE, "plaintext_fallback": doc["plaintext_fallback"],
                "grants_authority": doc["grants_authority"],
                "website_decrypts_body": doc["website_decrypts_body"],
                "public_receiver_required": doc["public_receiver_required"],
                "owner_server_required": doc["setup"]["owner_server_required"],
                "ciphertext_characters": {"minimum": ciphertext["minLength"],
                                          "maximum": self.ciphertext_limit()}}

    def cmd_private_status(self, who: Principal, data: Data) -> Data:
        """The keys of both participants (what a sender seals to) and the connection's channels."""
        caller = who.visitor_id
        conn = self.participant_connection(caller, data["connection_id"])
        peer = self.peer_of(conn, caller)
        keys = sorted(self.s["private_keys"].values(), key=lambda k: (k["created_at"], k["key_id"]))
        channels = [c for c in self.s["private_channels"].values() if c["connection_id"] == conn["id"]]
        return {"connection_id": conn["id"], "connection_state": conn["state"],
                "keys": {"own": [self.key_view(k) for k in keys if k["visitor_id"] == caller],
                         "peer": [self.key_view(k) for k in keys if k["visitor_id"] == peer]},
                "channels": [self.channel_view(c) for c in channels]}
