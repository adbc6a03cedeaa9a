"""Signed agent cards (section 8.4; the proto's AgentCardSignature). Signing is a MAY and
nothing in the specification promises a signature, so a card without ``signatures`` is not
applicable here, never failed. Where the card carries signatures, each is a JWS (RFC 7515)
whose protected header names ``alg`` and ``kid`` (``typ`` SHOULD be JOSE), over the card's
canonical form (canonical.py: RFC 8785 of the card without ``signatures`` and its default
values), and it verifies with the key its ``kid`` names in the JWKS its ``jku`` points to.

The key: section 8.4.3 says "Retrieve the public key using the `kid` and `jku` (or from a
trusted key store)". The kit fetches a ``jku`` on the target (it sends traffic nowhere else);
a signature whose key it cannot get is not judged, and the row is untested when none can be.

Canonicalization admits two readings for a card served with default values in it (section
8.4.1 removes them before signing; a signer may also have signed the card as served): the
MUST accepts a signature that verifies under either."""

from __future__ import annotations

import base64
import binascii
import json
import re
import urllib.parse
from typing import Any

from jwcrypto import jwk, jws
from jwcrypto.common import JWException, base64url_encode

from conformance.documents.prose import document_text
from conformance.documents.schemas import SpecError
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement, variant
from conformance.kit.faults import replaces
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.canonical import SIGNATURES, payload
from conformance.protocols.a2a.client import A2AClient, interfaces, relative
from conformance.protocols.a2a.names import named
from conformance.protocols.a2a.reference import A2AReference

(SIGNATURES_FIELD,) = named(SIGNATURES)
PROTECTED, SIGNATURE = (docs.proto().message("AgentCardSignature").field(n).json_name
                        for n in ("protected", "signature"))


def header_parameters() -> tuple[list[str], str]:
    """The protected header parameters section 8.4.2 lists (``alg``, ``typ``, ``kid``, then
    the optional ``jku``) and the value it gives ``typ``."""
    text = document_text(docs.SPEC)
    start = text.index("The protected header **MUST** include:")
    block = text[start:text.index("**Signature Generation Process:**", start)]
    names = re.findall(r"^- `(\w+)`:", block, flags=re.M)
    typ = re.search(r'`typ`: \*\*SHOULD\*\* be set to "(\w+)"', block)
    if len(names) != 4 or typ is None:
        raise SpecError(f"{docs.SPEC} section 8.4.2 no longer lists the protected header as the kit reads it")
    return names, typ.group(1)


(ALG, TYP, KID, JKU), JOSE = header_parameters()
WEB = ("http", "https")


def signatures_of(ctx: CheckContext, card: dict[str, Any], what: str) -> list[Any]:
    """The card's signatures; not applicable, by that declaration, where it carries none."""
    found = card.get(SIGNATURES_FIELD)
    signed = found not in (None, [])
    ctx.require_declared(f"signatures of {what}", lambda: (signed, f"{what} carries {'' if signed else 'no '}"
                                                                   "signatures"),
                         why="section 8.4 makes signing a MAY, and nothing in the specification promises one")
    if not isinstance(found, list):
        ctx.fail(f"{what}: `signatures` is not a list of AgentCardSignature: {json.dumps(found)[:200]}",
                 kind="malformed_answer")
    return list(found or [])


def b64url(text: str) -> bytes:
    """Base64url without padding (RFC 7515 section 2); ValueError when it is not."""
    if not isinstance(text, str) or not text or "=" in text or "+" in text or "/" in text:
        raise ValueError("not base64url without padding")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError(str(exc)) from None


def header_of(ctx: CheckContext, signature: Any, what: str) -> dict[str, Any]:
    """The protected header of an AgentCardSignature (proto: ``protected`` and ``signature``
    REQUIRED; "This is always a base64url-encoded JSON object")."""
    statement = str(docs.proto_at("Required. The protected JWS header for the signature."))
    ctx.expect(isinstance(signature, dict) and isinstance(signature.get(PROTECTED), str)
               and isinstance(signature.get(SIGNATURE), str),
               f"{what}: an AgentCardSignature needs `protected` and `signature` strings (the proto marks "
               f"both REQUIRED): {json.dumps(signature)[:300]}", kind="malformed_answer", statement=statement)
    try:
        header = json.loads(b64url(signature[PROTECTED]))
        b64url(signature[SIGNATURE])
    except ValueError as exc:
        ctx.fail(f"{what}: `protected` or `signature` is not base64url of a JSON object and a signature "
                 f"({exc}): {json.dumps(signature)[:300]}", kind="malformed_answer", statement=statement)
    if not isinstance(header, dict):
        ctx.fail(f"{what}: the protected header is not a JSON object: {header!r}", kind="malformed_answer",
                 statement=statement)
    return header


def on_target(ctx: CheckContext, url: str, card: dict[str, Any]) -> bool:
    """``url`` is on the target: its host, or the host the card names for the agent's own
    interfaces (which the run reaches at the target, client.py ``relative``)."""
    hosts = {urllib.parse.urlsplit(str(i.get("url"))).netloc for i in interfaces(card)}
    hosts.add(urllib.parse.urlsplit(ctx.http.target).netloc)
    where = urllib.parse.urlsplit(url)
    return where.scheme in WEB and where.netloc in hosts - {""}


def trusted(ctx: CheckContext) -> jwk.JWKSet:
    """The run's trusted key store (config ``keys:``: a JWK Set, or key id -> public JWK)."""
    given = ctx.run.keys
    listed = given.get("keys") if isinstance(given.get("keys"), list) else \
        [{**v, "kid": k} for k, v in given.items() if isinstance(v, dict)]
    try:
        return jwk.JWKSet.from_json(json.dumps({"keys": listed}))
    except (JWException, ValueError, TypeError) as exc:
        raise Untested(f"config keys: is not a set of public JWKs ({exc})", "other") from None


def key_of(ctx: CheckContext, header: dict[str, Any], card: dict[str, Any]) -> tuple[jwk.JWK | None, str]:
    """The public key the header's ``kid`` names: in the run's trusted key store (config
    ``keys:``), else in the JWKS at its ``jku`` (fetched once a requirement, from the target
    only); or None and why."""
    url, kid = header.get(JKU), header.get(KID)
    stored = trusted(ctx).get_key(kid) if ctx.run.keys and isinstance(kid, str) else None
    if stored is not None:
        return stored, ""
    if not isinstance(url, str):
        return None, (f"the protected header names no jku, and config keys: holds no key {kid!r} (a trusted "
                      "key store, section 8.4.3)")
    if not on_target(ctx, url, card):
        return None, (f"the jku {url} is not on the target {ctx.http.target} (the kit calls nothing "
                      f"else), and config keys: holds no key {kid!r}")
    cache = ctx.scratch.setdefault("a2a jwks", {})
    if url not in cache:
        reply = ctx.http.request("GET", relative(ctx, url), headers={"Accept": "application/json"})
        try:
            cache[url] = jwk.JWKSet.from_json(reply.text) if reply.status == 200 else None
        except (JWException, ValueError, TypeError):
            cache[url] = None
        if cache[url] is None:
            ctx.fail(f"the jku {url} the card's signature names serves no JWK Set (HTTP {reply.status} "
                     f"{reply.text[:120]!r})", kind="malformed_answer")
    keys = cache[url]
    found = keys.get_key(kid) if isinstance(kid, str) else None
    if found is None and kid is None and len(keys["keys"]) == 1:
        found = next(iter(keys["keys"]))
    if found is None:
        return None, f"the JWKS at {url} holds no key with kid {kid!r}"
    return found, ""


def verifies(signature: dict[str, Any], key: jwk.JWK, card: dict[str, Any]) -> bool:
    """The signature verifies over the card's canonical form: with its defaults removed (section
    8.4.1), as served (a signer that kept them), or as the proto reconstructs it (defaults and
    the members the proto does not name removed: "signature verification when Agent Cards are
    reconstructed", section 8.4.1)."""
    for drop, unknown in ((True, True), (False, True), (True, False)):
        signed = base64url_encode(payload(card, drop, unknown))
        compact = f"{signature[PROTECTED]}.{signed}.{signature[SIGNATURE]}"
        try:
            token = jws.JWS()
            token.deserialize(compact)
            token.verify(key)
            return True
        except (JWException, ValueError, TypeError):
            continue
    return False


def verify_card(ctx: CheckContext, card: dict[str, Any], what: str) -> tuple[int, list[str]]:
    """Each signature of ``card`` judged in its own sub-check: (how many verified, why the
    others could not be tried)."""
    verified, untried = 0, []
    for n, signature in enumerate(signatures_of(ctx, card, what), start=1):
        with ctx.subcheck(f"{what}, signature {n}"):
            header = header_of(ctx, signature, f"{what}, signature {n}")
            key, why = key_of(ctx, header, card)
            if key is None:
                untried.append(f"signature {n}: {why}")
                continue
            ctx.expect(verifies(signature, key, card),
                       f"{what}, signature {n} (kid {header.get(KID)!r}, alg {header.get(ALG)!r}) does not "
                       f"verify with the key its jku names over the card's canonical form (RFC 8785 of the "
                       f"card without `signatures`, default values removed or not)", kind="expectation")
            verified += 1
    return verified, untried


def extended_card(ctx: CheckContext, client: A2AClient) -> dict[str, Any] | None:
    """The extended card where the public card declares one and the agent serves it."""
    if not client.capability("extendedAgentCard"):
        return None
    reply = client.call("GetExtendedAgentCard", {})
    return reply.result if reply.ok and isinstance(reply.result, dict) else None


@requirement(id="A2A-SIG-VALID", level="MUST",
             title="Each signature of the agent card (and of the extended card) verifies, with the key its "
                   "kid and jku name, over the card's RFC 8785 canonical form without `signatures`",
             source=docs.spec("Before signing, the Agent Card content **MUST** be canonicalized",
                              after="#### 8.4.1"),
             faults=["card_changed_after_signing", "card_signed_by_another_key", "card_signed_not_canonical",
                     "card_signature_member_missing"])
def check_signatures_valid(ctx: CheckContext) -> None:
    """Not applicable without signatures; untested where no signature's key can be fetched."""
    client = A2AClient(ctx)
    verified, untried = verify_card(ctx, client.card, "the public agent card")
    extended = extended_card(ctx, client)
    if extended is not None and extended.get(SIGNATURES_FIELD):
        more, still = verify_card(ctx, extended, "the extended agent card")
        verified, untried = verified + more, untried + still
    if not verified and not ctx.subcheck_failures:
        raise Untested("no signature's key could be fetched: " + "; ".join(untried), "other")


@check_signatures_valid.fault
def card_changed_after_signing(ref: A2AReference) -> None:
    """The served card's description differs from the card that was signed."""
    @replaces(ref.sign_card)
    def sign(original: Any, card: dict[str, Any]) -> dict[str, Any]:
        signed = original(card)
        return {**signed, "description": str(signed.get("description", "")) + " (changed after signing)"}


@check_signatures_valid.fault
def card_signed_by_another_key(ref: A2AReference) -> None:
    """The JWKS the jku names holds, under the signature's kid, a key other than the one that signed."""
    from conformance.protocols.a2a.reference.signing import key_for

    @replaces(ref.jwks)
    def jwks(original: Any) -> dict[str, Any]:
        served = original()
        other = key_for("conformance-another-key").export_public(as_dict=True)
        return {"keys": [{**other, "kid": k.get("kid")} for k in served["keys"]]}


@check_signatures_valid.fault
def card_signed_not_canonical(ref: A2AReference) -> None:
    """The signature is over the card as ``json.dumps`` writes it (spaces, insertion order), not RFC 8785."""
    @replaces(ref.sign_card)
    def sign(original: Any, card: dict[str, Any]) -> dict[str, Any]:
        out = dict(original(card))
        signed = jws.JWS(json.dumps({k: v for k, v in card.items() if k != SIGNATURES}).encode())
        key, alg = ref.signing_keys()[0]
        signed.add_signature(key, None, json.dumps(ref.protected_header(key, alg)))
        parts = json.loads(signed.serialize())
        out[SIGNATURES] = [{PROTECTED: parts["protected"], SIGNATURE: parts["signature"]}]
        return out


@check_signatures_valid.fault
def card_signature_member_missing(ref: A2AReference) -> None:
    """The AgentCardSignature carries `protected` but no `signature` (the proto marks both REQUIRED)."""
    @replaces(ref.sign_card)
    def sign(original: Any, card: dict[str, Any]) -> dict[str, Any]:
        signed = original(card)
        return {**signed, SIGNATURES: [{k: v for k, v in s.items() if k != SIGNATURE}
                                       for s in signed[SIGNATURES]]}


def each_header(ctx: CheckContext) -> list[tuple[str, dict[str, Any]]]:
    """(where, protected header) of each signature of the public card."""
    client = A2AClient(ctx)
    out = []
    for n, signature in enumerate(signatures_of(ctx, client.card, "the public agent card"), start=1):
        with ctx.subcheck(f"signature {n}"):
            out.append((f"signature {n}", header_of(ctx, signature, f"signature {n}")))
    return out


@requirement(id="A2A-SIG-HEADER", level="MUST",
             title="Each signature's protected header names `alg` and `kid` (a `jku`, where present, is a "
                   "URL)",
             source=docs.spec("The protected header **MUST** include:", after="#### 8.4.2"),
             faults=["card_signature_without_kid"])
def check_signature_header(ctx: CheckContext) -> None:
    for where, header in each_header(ctx):
        with ctx.subcheck(where):
            missing = [p for p in (ALG, KID) if not isinstance(header.get(p), str) or not header[p]]
            ctx.expect(not missing, f"{where}: the protected header lacks {', '.join(missing)} "
                                    f"(section 8.4.2 wants alg and kid): {json.dumps(header)}",
                       kind="malformed_answer")
            url = header.get(JKU)
            ctx.expect(url is None or isinstance(url, str) and urllib.parse.urlsplit(url).scheme in WEB,
                       f"{where}: the protected header's jku is not a URL: {url!r}", kind="malformed_answer",
                       statement=str(docs.spec("URL to JSON Web Key Set (JWKS) containing the public key",
                                               after="#### 8.4.2")))


@check_signature_header.fault
def card_signature_without_kid(ref: A2AReference) -> None:
    """The protected header names alg and typ but no kid."""
    @replaces(ref.protected_header)
    def header(original: Any, key: Any, alg: str) -> dict[str, Any]:
        return {k: v for k, v in original(key, alg).items() if k != KID}


@requirement(id="A2A-SIG-TYP", level="SHOULD",
             title="Each signature's protected header sets `typ` to JOSE",
             source=docs.spec("`typ`: **SHOULD** be set to \"JOSE\" for JWS", after="#### 8.4.2"),
             faults=["card_signature_typ_jwt"])
def check_signature_typ(ctx: CheckContext) -> None:
    for where, header in each_header(ctx):
        with ctx.subcheck(where):
            ctx.expect(header.get(TYP) == JOSE, f"{where}: the protected header's typ is "
                                                f"{header.get(TYP)!r}, not {JOSE!r}: {json.dumps(header)}",
                       kind="expectation")


@check_signature_typ.fault
def card_signature_typ_jwt(ref: A2AReference) -> None:
    """The protected header's typ is JWT."""
    @replaces(ref.protected_header)
    def header(original: Any, key: Any, alg: str) -> dict[str, Any]:
        return {**original(key, alg), TYP: "JWT"}


# -- variants: what the specification allows that the reference does not choose -----------------
@variant
def card_unsigned(ref: A2AReference) -> None:
    """The card carries no signatures.

    allowed by: §8.4 "Agent Cards **MAY** be digitally signed using JSON Web Signature (JWS)\""""
    @replaces(ref.sign_card)
    def sign_card(original: Any, card: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in card.items() if k != SIGNATURES}


@variant
def card_signed_rs256(ref: A2AReference) -> None:
    """The card is signed with an RSA key, RS256.

    allowed by: §8.4.2 "`alg`: Algorithm used for signing (e.g., "ES256", "RS256")\""""
    from conformance.protocols.a2a.reference.signing import key_for

    @replaces(ref.signing_keys)
    def signing_keys(original: Any) -> list[tuple[Any, str]]:
        return [(key_for("conformance-reference-rsa-1", "RSA"), "RS256")]


@variant
def card_signed_twice(ref: A2AReference) -> None:
    """The card carries two signatures, by two keys of its JWKS (a key being rotated).

    allowed by: §8.4.3 "Multiple signatures **MAY** be present to support key rotation\""""
    from conformance.protocols.a2a.reference.signing import KEY_ID, key_for

    @replaces(ref.signing_keys)
    def signing_keys(original: Any) -> list[tuple[Any, str]]:
        return [(key_for(KEY_ID), "ES256"), (key_for("conformance-reference-key-2"), "ES256")]


@variant
def card_defaults_served(ref: A2AReference) -> None:
    """The card is served with default-valued members (an empty skill examples list, an empty
    scheme description), signed without them.

    allowed by: §8.4.1 "Fields with default values **MUST** be omitted unless the field is marked
    as `REQUIRED` or has the `optional` keyword" (a rule of the signed form: what is served may
    carry them, and a verifier removes them, §8.4.3 "Remove properties with default values from
    the received Agent Card")"""
    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = json.loads(json.dumps(original(request)))
        for skill in out.get("skills", []):
            skill["examples"] = []
        for scheme in (out.get("securitySchemes") or {}).values():
            for inner in scheme.values():
                inner["description"] = ""
        return out
