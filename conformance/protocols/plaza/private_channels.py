"""Agent Plaza's encrypted private relay (issue 14), part two: channels (both halves signed,
until closed) under the friendship's controls, no plaintext fallback, envelopes (stored and
returned unchanged, paged, bounded by their own limit, stored once, signed by their named
key, bound to their channel) and the profile's signed bytes, each requirement declared on
its check with the faults that prove it can fail. The suite's side of the relay and the
keys are private.py's; what the reference serves reference/private.py."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta
from typing import Any

from conformance.checks.expect import expect_error, expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext, CheckFailed
from conformance.kit.declare import at, requirement
from conformance.kit.faults import noop, replaces, returns
from conformance.protocols.plaza.answers import INVALID
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, fresh_id
from conformance.protocols.plaza.parts import PRIVATE_RELAY, names, served
from conformance.protocols.plaza.private_client import (
    CHOSEN,
    COMMANDS,
    E2E,
    FOUND,
    PERMITTED,
    SIGNED,
    Channel,
    Data,
    Relay,
    envelopes_in,
    new_pair,
    random_signature,
    relay_refused,
    signed,
    stamp,
    stranger,
)
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.sealed import b64u, unb64u, unseal
from conformance.protocols.plaza.site import Principal
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt

CURSORS = 8  # a page's candidate after_seq values the roundtrip check tries at most


# ----------------------------------------------------------------------------------
# channels and controls
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-PRIV-CHANNEL-MUTUAL", level="MUST", optional=PRIVATE_RELAY,
             title="A private channel is active only once both sides signed it, until closed",
             source=at(f"{E2E}/setup/instruction"),
             faults=["offer_activates_channel",
                     noop("offerer_accepts_own", "check_accept_keys",
                          "Whoever accepts an offer, with whichever of its own keys: the offerer signs both "
                          "halves.")],
             code=PERMITTED, code_faults=["private_refusal_wrong_code"])
@served(PRIVATE_RELAY)
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
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE)), PERMITTED,
                      "a private_send before the peer accepted", strict)
    with ctx.subcheck("the offerer accepts its own offer"):
        own_accept = r.accept(offer, ka, key_id=ka.key_id, peer_key_id=kb.key_id)
        relay_refused(ctx, r.run(own_accept, ALICE), PERMITTED,
                      "the offerer signing the accept of its own offer", strict)
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE)), PERMITTED,
                      "a private_send after the offerer's own accept", strict)
    with ctx.setup("bob accepts the channel", by=SIGNED):
        r.c.data_of(r.run(r.accept(offer, kb), BOB), "private_channel_accept")
    r.sent(ch, r.envelope(ch, ALICE))
    expect_result(ctx, r.close(ch, ALICE), "private_channel_close by alice")
    for who in (ALICE, BOB):
        with ctx.subcheck(f"a send by {who} on the closed channel"):
            relay_refused(ctx, r.send(ch, r.envelope(ch, who), who), PERMITTED,
                          f"a private_send by {who} after close", strict)


@check_channel_mutual.fault
def offer_activates_channel(ref: PlazaReference) -> None:
    """A channel takes private sends once offered, before the peer signed its accept."""
    @replaces(ref.channel_active)
    def active(original: Any, channel: Data) -> bool:
        return bool(original(channel) or ref.channel_state(channel) == "offered")


@check_channel_mutual.fault
def channel_close_ignored(ref: PlazaReference) -> None:
    """private_channel_close answers but the channel stays active."""
    @replaces(ref.cmd_private_channel_close)
    def close(original: Any, who: Principal, data: Data) -> Data:
        conn = ref.participant_connection(who.visitor_id, data["connection_id"])
        return {"channel": ref.channel_view(ref.channel_in(conn, data["channel_id"]))}


@requirement(id="PLAZA-PRIV-CONTROLS", level="MUST", optional=PRIVATE_RELAY,
             title="Encrypted chat needs the active friendship and grants no authority beyond its controls",
             source=at(f"{E2E}/grants_authority"),
             faults=[noop("channel_without_friendship", "check_private_friendship",
                          "Channels open and carry envelopes whatever the friendship's state (pending, "
                          "removed).")],
             code=PERMITTED, code_faults=["private_refusal_wrong_code"])
@served(PRIVATE_RELAY)
def check_controls(ctx: CheckContext, strict: bool = False) -> None:
    """Encrypted chat grants nothing beyond the friendship: no channel outside an active
    friendship or with another agent's key, nothing for a stranger, nothing once the peer
    removed the friendship (a block has no send meaning the document gives: PLAZA-FRIEND-BLOCK)."""
    r = Relay(ctx)
    ch = r.open_channel()
    carol = r.publish(CAROL)
    with ctx.subcheck("a stranger's commands on the connection"):
        relay_refused(ctx, r.run(r.offer(ch.connection, carol, ch.keys[ALICE]), CAROL), None,
                      "carol offering a channel in alice and bob's connection", False)
        relay_refused(ctx,
                      r.receive(Channel(ch.connection, ch.channel_id, ALICE, BOB, {**ch.keys, CAROL: carol}),
                                CAROL), None,
                      "carol receiving from alice and bob's channel", False)
    with ctx.subcheck("a peer key of another agent"):
        relay_refused(ctx, r.run(r.offer(ch.connection, ch.keys[ALICE], carol), ALICE), PERMITTED,
                   "an offer to bob naming carol's key as the peer's", strict)
    with ctx.subcheck("a channel in a pending invitation"):
        _, pending = r.c.invite(ALICE, CAROL)
        relay_refused(ctx, r.run(r.offer(pending, ch.keys[ALICE], carol), ALICE), PERMITTED,
                   "an offer in a connection whose invitation carol has not accepted", strict)
    with ctx.setup("bob removes the friendship", by="PLAZA-FRIEND-CONTROL"):
        expect_result(ctx,
                      r.c.command("friend_control", {"connection_id": ch.connection, "decision": "remove"},
                                  BOB), "remove")
    with ctx.subcheck("a send after the peer removed the friendship"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE)), PERMITTED,
                      "a private_send after bob removed the friendship", strict)
    with ctx.subcheck("an offer after the peer removed the friendship"):
        relay_refused(ctx, r.run(r.offer(ch.connection, ch.keys[ALICE], ch.keys[BOB]), ALICE), PERMITTED,
                   "an offer after bob removed the friendship", strict)


@check_controls.fault
def peer_key_unchecked(ref: PlazaReference) -> None:
    """An offer's peer_key_id may be any published key, also one of a third agent."""
    @replaces(ref.live_key)
    def live(original: Any, owner: str, key_id: str, whose: str) -> Data:
        key = ref.s["private_keys"].get(key_id)
        if whose == "the peer's" and key is not None:
            owner = key["visitor_id"]
        result: Data = original(owner, key_id, whose)
        return result


def ordinary_read(r: Relay, connection: str, what: str) -> Data:
    """Bob's read of the connection's ordinary messages (read_conversation, the latest page)."""
    return r.c.data_of(r.c.command("read_conversation", {"connection_id": connection}, BOB), what)


@requirement(id="PLAZA-PRIV-NO-PLAINTEXT", level="MUST", optional=PRIVATE_RELAY,
             title="No plaintext fallback: a send without an active channel or with plaintext is refused and "
                   "stored nowhere",
             source=at(f"{E2E}/plaintext_fallback"),
             code=PERMITTED, code_faults=["private_refusal_wrong_code"])
@served(PRIVATE_RELAY)
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
        ctx.expect(not stored and not names(page, secret),
                   f"refused private sends reached the connection's ordinary "
                   f"messages (envelopes {stored}, or the text): {json_excerpt(page, 300)}")
        ids = {e["message_id"] for e in refused_envelopes}
        got = [e for e in r.received(ch, BOB, "private_receive by bob") if e.get("message_id") in ids]
        ctx.expect(not got, f"bob's channel holds {len(got)} of the refused envelope(s)")
    answers.append(r.send(ch, r.envelope(ch, ALICE, secret.encode())))
    answers.append(r.receive(ch, BOB))
    leaked = [a.describe() for a in answers if secret in a.http.text]
    ctx.expect(not leaked, f"an answer of the relay holds the plaintext: {leaked[:1]}")


@check_no_plaintext.fault
def no_channel_falls_back(ref: PlazaReference) -> None:
    """A private_send without an active channel falls back to an ordinary message of the
    connection (the document: plaintext_fallback false)."""
    @replaces(ref.cmd_private_send)
    def send(original: Any, who: Principal, data: Data) -> Data:
        conn = ref.participant_connection(who.visitor_id, data["connection_id"])
        channel = ref.s["private_channels"].get(data["channel_id"])
        if channel is None or not ref.channel_active(channel):
            msg = ref.store_message(conn, who.visitor_id, data["envelope"]["ciphertext"][:600],
                                    ref.new_uuid())
            return {"stored": True, "fallback": "ordinary_message", "message_id": msg["id"]}
        result: Data = original(who, data)
        return result


# ----------------------------------------------------------------------------------
# envelopes
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-PRIV-ROUNDTRIP", level="MUST", optional=PRIVATE_RELAY,
             title="The relay stores the sealed envelope and returns its ciphertext unchanged; "
                   "private_receive pages by after_seq within limit (default 20)",
             source=at(f"{E2E}/website_decrypts_body"),
             faults=["ciphertext_altered",
                     returns("receive_ignores_limit", "receive_limit", 10**6,
                             "private_receive returns every envelope whatever limit asks.")])
@served(PRIVATE_RELAY)
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
            ctx.expect(back.get("ciphertext") == env["ciphertext"],
                       "the ciphertext came back changed: the relay stores it as sent")
            ctx.expect(back.get("signature") == env["signature"],
                       "the envelope's signature came back changed or missing")
            try:
                plain = unseal(ch.keys[BOB].encryption, str(back.get("ciphertext")))
            except Exception:  # noqa: BLE001 - a box that does not open is the finding
                plain = None
            ctx.expect(plain == texts[i],
                       "bob's X25519 key does not open the stored ciphertext to the sealed text")
    with ctx.subcheck("limit"):
        page = r.c.data_of(r.receive(ch, BOB, limit=2), "private_receive limit 2")
        first = list(envelopes_in(page))
        ctx.expect(0 < len(first) <= 2,
                   f"private_receive with limit 2 returned {len(first)} of the three envelopes")
        if first:
            page_after(ctx, r, ch, page, {e.get("message_id") for e in first},
                       {e["message_id"] for e in sent})
    if r.c.live():
        return
    with ctx.subcheck("default limit"):
        limit = ctx.profile.operations["private_receive"].params_schema["properties"]["limit"]
        default = int(limit["default"])
        more = [r.envelope(ch, ALICE) for _ in range(default + 1 - len(sent))]
        for env in more:
            r.sent(ch, env)
        ours = {e["message_id"] for e in sent + more}
        shown = [e for e in r.received(ch, BOB, "private_receive without limit")
                 if e.get("message_id") in ours]
        ctx.expect(len(shown) <= default,
                   f"private_receive without limit returned {len(shown)} of the {default + 1} envelopes "
                   f"sent; the default limit is {default}")


@check_roundtrip.fault
def ciphertext_altered(ref: PlazaReference) -> None:
    """The relay re-encodes what it stores (base64 padding added): the ciphertext comes back changed."""
    @replaces(ref.stored_view)
    def view(original: Any, stored: Data) -> Data:
        out: Data = original(stored)
        out["envelope"]["ciphertext"] += "=" * (-len(out["envelope"]["ciphertext"]) % 4 or 4)
        return out


@check_roundtrip.fault
def receive_default_limit_ignored(ref: PlazaReference) -> None:
    """private_receive without limit returns up to the schema's maximum (the default is 20)."""
    @replaces(ref.receive_limit)
    def receive_limit(original: Any, data: Data) -> int:
        top = int(ref.branches["private_receive"]["properties"]["limit"]["maximum"])
        return int(original(data)) if "limit" in data else top


def cursors(ctx: CheckContext, page: Any) -> list[str]:
    """The values of a page that could be its after_seq (the branch's pattern), outside the
    envelopes it holds, nearest the root first."""
    after_seq = ctx.profile.operations["private_receive"].params_schema["properties"]["after_seq"]
    rx = re.compile(str(after_seq["pattern"]))
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


@requirement(id="PLAZA-PRIV-LIMITS", level="MUST", optional=PRIVATE_RELAY,
             title="The ordinary text limit does not bound private messages; the ciphertext's own "
                   "maximum does",
             source=at(f"{E2E}/setup/ordinary_send_limit_is_not_private_relay_limit"))
@served(PRIVATE_RELAY)
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
    ctx.expect(len(env["ciphertext"]) == maximum and maximum > ordinary,
               "the suite's long ciphertext has the wrong length")
    with ctx.subcheck(f"a {maximum}-character ciphertext"):
        expect_result(ctx, r.send(ch, env),
                      f"a private_send of {maximum} ciphertext characters (ordinary texts: {ordinary})")
        back = [e for e in r.received(ch, BOB, "private_receive", limit=50)
                if e.get("message_id") == env["message_id"]]
        ctx.expect(back and back[0].get("ciphertext") == env["ciphertext"],
                   "the long ciphertext did not come back whole")
    with ctx.subcheck(f"a {maximum + 1}-character ciphertext"):
        long = r.envelope(ch, ALICE, plain, ciphertext=env["ciphertext"] + "A")
        expect_error(ctx, r.send(ch, long), INVALID, f"a ciphertext of {maximum + 1} characters")


@check_limits.fault
def ordinary_limit_applied(ref: PlazaReference) -> None:
    """The relay bounds ciphertexts by the ordinary text limit (600 characters)."""
    @replaces(ref.ciphertext_limit)
    def ciphertext_limit(original: Any) -> Any:
        return ref.limit("text_characters_count")


@requirement(id="PLAZA-PRIV-REPLAY", level="MUST", optional=PRIVATE_RELAY,
             title="An envelope is stored once and never after its expires_at",
             source=at(f"{COMMANDS}/19/properties/envelope/properties/expires_at"),
             faults=[returns("envelope_replay_accepted", "seen_message_id", False,
                             "A message_id already stored is stored again (no replay protection)."),
                     noop("expired_envelope_accepted", "check_envelope_times",
                          "An envelope past its expires_at is stored.")],
             code=PERMITTED, code_faults=["private_refusal_wrong_code"])
@served(PRIVATE_RELAY)
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
        copies = [e for e in r.received(ch, BOB, "private_receive")
                  if e.get("message_id") == env["message_id"]]
        ctx.expect(len(copies) == 1, f"bob receives message_id {env['message_id']} {len(copies)} times")
    with ctx.subcheck("another envelope under a stored message_id"):
        other = r.envelope(ch, ALICE, message_id=env["message_id"])
        relay_refused(ctx, r.send(ch, other), PERMITTED, "another envelope under a message_id already stored",
                      strict)
    with ctx.subcheck("an expired envelope"):
        relay_refused(ctx, r.send(ch, r.envelope(ch, ALICE, sent_at=stamp(-7200), expires_at=stamp(-3600))),
                      PERMITTED,
                   "an envelope whose expires_at has passed", strict)


@requirement(id="PLAZA-PRIV-SIGNATURES", level="MUST", optional=PRIVATE_RELAY,
             title="Offers, accepts, envelopes and acks are taken only with their named key's "
                   "Ed25519 signature",
             source=at(f"{COMMANDS}/19/properties/envelope/properties/signature"),
             faults=[returns("offer_signature_unchecked", "check_signature", None,
                             "A channel offer is taken whoever signed it.", when=signed("offer")),
                     returns("accept_signature_unchecked", "check_signature", None,
                             "A channel accept is taken whoever signed it.", when=signed("accept")),
                     returns("envelope_signature_unchecked", "check_signature", None,
                             "An envelope is stored whoever signed it.", when=signed("envelope")),
                     returns("ack_signature_unchecked", "check_signature", None,
                             "An ack is taken whoever signed it.", when=signed("ack"))],
             code=PERMITTED, code_faults=["private_refusal_wrong_code"])
@served(PRIVATE_RELAY)
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


@requirement(id="PLAZA-PRIV-ENVELOPE-BINDING", level="SHOULD", optional=PRIVATE_RELAY,
             title="An envelope names the command's connection and channel, its parties and their "
                   "channel keys",
             source=CHOSEN,
             faults=[noop("envelope_binding_unchecked", "check_envelope_binding",
                          "An envelope naming another connection, channel, party or key than its channel's "
                          "is stored.")])
@served(PRIVATE_RELAY)
def check_envelope_binding(ctx: CheckContext) -> None:
    """An envelope names the command's connection and channel, its sender and recipient and
    their keys of this channel (validly signed, each other value is refused)."""
    r = Relay(ctx)
    ch = r.open_channel()
    carol = r.c.agent_id(CAROL)
    wrong: dict[str, Any] = {"connection_id": fresh_id(), "channel_id": fresh_id(),
                             "sender_id": r.c.agent_id(BOB), "recipient_id": carol,
                             "sender_key_id": ch.keys[BOB].key_id, "recipient_key_id": ch.keys[ALICE].key_id}
    for name, value in wrong.items():
        with ctx.subcheck(name):
            expect_error(ctx, r.send(ch, r.envelope(ch, ALICE, **{name: value})), PERMITTED,
                         f"an envelope whose {name} is not its channel's")


# ----------------------------------------------------------------------------------
# the profile's signed bytes
# ----------------------------------------------------------------------------------
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


CONSTANT_FIELDS = ("protocol", "suite", "operation")


def signed_fields(obj: Data, signature_field: str) -> list[str]:
    return [k for k in obj if k not in (signature_field, *CONSTANT_FIELDS)]


@requirement(id=SIGNED, level="SHOULD", optional=PRIVATE_RELAY,
             title="Signatures cover the canonical JSON of the signed object without its signature: valid "
                   "ones are accepted, a change to any signed field is refused",
             source=CHOSEN)
@served(PRIVATE_RELAY)
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
            expect_error(ctx, r.run({**ack, name: flip(name, ack[name])}, BOB),
                         (FOUND if "_id" in name else PERMITTED),
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


@check_signed_bytes.fault
def signed_bytes_normalize_origin(ref: PlazaReference) -> None:
    """Signatures are checked over the object with its origin normalized (a trailing slash
    dropped), not over the bytes as sent: an origin changed after signing still verifies."""
    @replaces(ref.signed_view)
    def view(original: Any, kind: str, obj: Data) -> bytes:
        if isinstance(obj.get("origin"), str):
            obj = {**obj, "origin": obj["origin"].rstrip("/")}
        result: bytes = original(kind, obj)
        return result


@check_signed_bytes.fault
def signed_bytes_other_encoding(ref: PlazaReference) -> None:
    """Signatures are checked over JSON with whitespace (not the profile's canonical form):
    valid ones fail."""
    @replaces(ref.signed_view)
    def view(original: Any, kind: str, obj: Data) -> bytes:
        field = "proof_signature" if kind == "bundle" else "signature"
        return json.dumps({k: v for k, v in obj.items() if k != field}, sort_keys=True).encode()
