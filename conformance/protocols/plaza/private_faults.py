"""Faults of the private part (issue 14): each patches one behaviour of part_private.py
(a method of the PrivateRelayPart mixin) and names, in its docstring, the rule it breaks."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from conformance.faults import replaces
from conformance.protocols.plaza.reference import INVALID_STATE, PlazaReference, Principal, SiteError
from conformance.table import FaultRegistry

FAULTS = FaultRegistry()
fault: Callable[[Callable[[Any], None]], Callable[[Any], None]] = FAULTS
Data = dict[str, Any]


def _skip_signature(ref: PlazaReference, kind: str) -> None:
    """Signatures of ``kind`` are not verified; the others are."""
    @replaces(ref, "check_signature")
    def check(original: Any, asked: str, signing_x: str, obj: Data) -> None:
        if asked != kind:
            original(asked, signing_x, obj)


# ------------------------------------------------------------------ codes


@fault
def private_refusal_wrong_code(ref: PlazaReference) -> None:
    """The relay's refusals carry INVALID_STATE instead of the profile's NOT_PERMITTED."""
    ref.private_refused = lambda message: SiteError(INVALID_STATE, message)  # type: ignore[method-assign]


# ------------------------------------------------------------------ capabilities and status


@fault
def capabilities_claim_plaintext_fallback(ref: PlazaReference) -> None:
    """private_capabilities says the relay falls back to plaintext (the document: plaintext_fallback false)."""
    @replaces(ref, "cmd_private_capabilities")
    def caps(original: Any, who: Principal, data: Data) -> Data:
        return {**original(who, data), "plaintext_fallback": True}


@fault
def capabilities_without_suite(ref: PlazaReference) -> None:
    """private_capabilities leaves out the suites it speaks (the profile's report lists them)."""
    @replaces(ref, "cmd_private_capabilities")
    def caps(original: Any, who: Principal, data: Data) -> Data:
        return {k: v for k, v in original(who, data).items() if k != "suites"}


@fault
def status_of_foreign_connection(ref: PlazaReference) -> None:
    """private_status answers about any connection, also to an agent that takes no part in it."""
    def status(who: Principal, data: Data) -> Data:
        conn = ref.s["connections"].get(data["connection_id"])
        if conn is None:
            raise SiteError("NOT_FOUND", "no such connection")
        return {"connection_id": conn["id"], "connection_state": conn["state"], "keys": {"own": [], "peer": []}, "channels": []}

    ref.cmd_private_status = status  # type: ignore[method-assign]


@fault
def status_omits_peer_keys(ref: PlazaReference) -> None:
    """private_status lists no key of the peer (a sender cannot learn what to seal to)."""
    @replaces(ref, "cmd_private_status")
    def status(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        out["keys"]["peer"] = []
        return out


# ------------------------------------------------------------------ keys


@fault
def bundle_proof_unchecked(ref: PlazaReference) -> None:
    """A key bundle is published whoever signed its proof (the proof is never verified)."""
    _skip_signature(ref, "bundle")


@fault
def origin_unchecked(ref: PlazaReference) -> None:
    """Bundles and envelopes are taken whatever origin they name."""
    ref.check_origin = lambda origin, what: None  # type: ignore[method-assign]


@fault
def bundle_owner_unchecked(ref: PlazaReference) -> None:
    """An agent publishes bundles naming another visitor's id."""
    ref.check_bundle_owner = lambda caller, bundle: None  # type: ignore[method-assign]


@fault
def key_expiry_ignored(ref: PlazaReference) -> None:
    """A key counts as valid whatever its created_at and expires_at."""
    ref.key_window_ok = lambda created_ms, expires_ms: True  # type: ignore[method-assign]


@fault
def revoked_key_usable(ref: PlazaReference) -> None:
    """private_key_revoke is recorded but a revoked key still signs and receives channels."""
    ref.key_revoked = lambda key: False  # type: ignore[method-assign]


# ------------------------------------------------------------------ channels


@fault
def offer_activates_channel(ref: PlazaReference) -> None:
    """A channel takes private sends once offered, before the peer signed its accept."""
    @replaces(ref, "channel_active")
    def active(original: Any, channel: Data) -> bool:
        return bool(original(channel) or ref.channel_state(channel) == "offered")


@fault
def offerer_accepts_own(ref: PlazaReference) -> None:
    """Whoever accepts an offer, with whichever of its own keys: the offerer signs both halves."""
    ref.check_accept_keys = lambda channel, caller, data: None  # type: ignore[method-assign]


@fault
def channel_close_ignored(ref: PlazaReference) -> None:
    """private_channel_close answers but the channel stays active."""
    def close(who: Principal, data: Data) -> Data:
        conn = ref.participant_connection(who.visitor_id, data["connection_id"])
        return {"channel": ref.channel_view(ref.channel_in(conn, data["channel_id"]))}

    ref.cmd_private_channel_close = close  # type: ignore[method-assign]


@fault
def channel_without_friendship(ref: PlazaReference) -> None:
    """Channels open and carry envelopes whatever the friendship's state (pending, blocked)."""
    ref.check_private_friendship = lambda conn, caller: None  # type: ignore[method-assign]


@fault
def peer_key_unchecked(ref: PlazaReference) -> None:
    """An offer's peer_key_id may be any published key, also one of a third agent."""
    @replaces(ref, "live_key")
    def live(original: Any, owner: str, key_id: str, whose: str) -> Data:
        key = ref.s["private_keys"].get(key_id)
        if whose == "the peer's" and key is not None:
            owner = key["visitor_id"]
        result: Data = original(owner, key_id, whose)
        return result


# ------------------------------------------------------------------ envelopes


@fault
def no_channel_falls_back(ref: PlazaReference) -> None:
    """A private_send without an active channel falls back to an ordinary message of the
    connection (the document: plaintext_fallback false)."""
    @replaces(ref, "cmd_private_send")
    def send(original: Any, who: Principal, data: Data) -> Data:
        conn = ref.participant_connection(who.visitor_id, data["connection_id"])
        channel = ref.s["private_channels"].get(data["channel_id"])
        if channel is None or not ref.channel_active(channel):
            msg = ref.store_message(conn, who.visitor_id, data["envelope"]["ciphertext"][:600], ref.new_uuid())
            return {"stored": True, "fallback": "ordinary_message", "message_id": msg["id"]}
        result: Data = original(who, data)
        return result


@fault
def ciphertext_altered(ref: PlazaReference) -> None:
    """The relay re-encodes what it stores (base64 padding added): the ciphertext comes back changed."""
    @replaces(ref, "stored_view")
    def view(original: Any, stored: Data) -> Data:
        out: Data = original(stored)
        out["envelope"]["ciphertext"] += "=" * (-len(out["envelope"]["ciphertext"]) % 4 or 4)
        return out


@fault
def receive_ignores_limit(ref: PlazaReference) -> None:
    """private_receive returns every envelope whatever limit asks."""
    ref.receive_limit = lambda data: 10**6  # type: ignore[method-assign]


@fault
def receive_default_limit_ignored(ref: PlazaReference) -> None:
    """private_receive without limit returns up to the schema's maximum (the default is 20)."""
    @replaces(ref, "receive_limit")
    def receive_limit(original: Any, data: Data) -> int:
        top = int(ref.branches["private_receive"]["properties"]["limit"]["maximum"])
        return int(original(data)) if "limit" in data else top


@fault
def ordinary_limit_applied(ref: PlazaReference) -> None:
    """The relay bounds ciphertexts by the ordinary text limit (600 characters)."""
    ref.ciphertext_limit = lambda: ref.limit("text_characters_count")  # type: ignore[method-assign]


@fault
def envelope_replay_accepted(ref: PlazaReference) -> None:
    """A message_id already stored is stored again (no replay protection)."""
    ref.seen_message_id = lambda message_id: False  # type: ignore[method-assign]


@fault
def expired_envelope_accepted(ref: PlazaReference) -> None:
    """An envelope past its expires_at is stored."""
    ref.check_envelope_times = lambda env: None  # type: ignore[method-assign]


@fault
def envelope_binding_unchecked(ref: PlazaReference) -> None:
    """An envelope naming another connection, channel, party or key than its channel's is stored."""
    ref.check_envelope_binding = lambda caller, conn, channel, data: None  # type: ignore[method-assign]


@fault
def offer_signature_unchecked(ref: PlazaReference) -> None:
    """A channel offer is taken whoever signed it."""
    _skip_signature(ref, "offer")


@fault
def accept_signature_unchecked(ref: PlazaReference) -> None:
    """A channel accept is taken whoever signed it."""
    _skip_signature(ref, "accept")


@fault
def envelope_signature_unchecked(ref: PlazaReference) -> None:
    """An envelope is stored whoever signed it."""
    _skip_signature(ref, "envelope")


@fault
def ack_signature_unchecked(ref: PlazaReference) -> None:
    """An ack is taken whoever signed it."""
    _skip_signature(ref, "ack")


# ------------------------------------------------------------------ the profile's signed bytes


@fault
def signed_bytes_normalize_origin(ref: PlazaReference) -> None:
    """Signatures are checked over the object with its origin normalized (a trailing slash
    dropped), not over the bytes as sent: an origin changed after signing still verifies."""
    @replaces(ref, "signed_view")
    def view(original: Any, kind: str, obj: Data) -> bytes:
        if isinstance(obj.get("origin"), str):
            obj = {**obj, "origin": obj["origin"].rstrip("/")}
        result: bytes = original(kind, obj)
        return result


@fault
def signed_bytes_other_encoding(ref: PlazaReference) -> None:
    """Signatures are checked over JSON with whitespace (not the profile's canonical form): valid ones fail."""
    def view(kind: str, obj: Data) -> bytes:
        field = "proof_signature" if kind == "bundle" else "signature"
        return json.dumps({k: v for k, v in obj.items() if k != field}, sort_keys=True).encode()

    ref.signed_view = view  # type: ignore[method-assign]
