"""Agent Plaza's encrypted private relay (durableReceive.encrypted_private_chat and the ten
private_* branches of schemas.command, issue 14), part one: the suite's side of the relay
(keys, signed commands, sealed envelopes), the capability report and private_status, and the
keys (proofs, origin, expiry, revocation), each requirement declared on its check with the
faults that prove it can fail. Channels, envelopes and the signed bytes are
private_channels.py; what the reference serves reference/private.py; the bytes each
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
from typing import Any

from conformance.checks.expect import expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, fault, requirement
from conformance.kit.faults import answer, noop, replaces, returns
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, dig
from conformance.protocols.plaza.parts import PRIVATE_RELAY, served
from conformance.protocols.plaza.private_client import (
    CHOSEN,
    COMMANDS,
    E2E,
    PERMITTED,
    Data,
    Relay,
    new_pair,
    random_signature,
    relay_refused,
    signed,
    stamp,
    stranger,
)
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.sealed import SIGNED_BYTES_RULE
from conformance.protocols.plaza.site import INVALID_STATE, Principal, SiteError


@fault  # of every -CODE twin of the relay's rows (each names it)
def private_refusal_wrong_code(ref: PlazaReference) -> None:
    """The relay's refusals carry INVALID_STATE instead of the profile's NOT_PERMITTED."""
    @replaces(ref.private_refused)
    def refused(original: Any, message: str) -> SiteError:
        return SiteError(INVALID_STATE, message)


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
def status_of_foreign_connection(ref: PlazaReference) -> None:
    """private_status answers about any connection, also to an agent that takes no part in it."""
    @replaces(ref.cmd_private_status)
    def status(original: Any, who: Principal, data: Data) -> Data:
        conn = ref.s["connections"].get(data["connection_id"])
        if conn is None:
            raise SiteError("NOT_FOUND", "no such connection")
        return {"connection_id": conn["id"], "connection_state": conn["state"],
                "keys": {"own": [], "peer": []}, "channels": []}


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
    @replaces(ref.cmd_private_status)
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
