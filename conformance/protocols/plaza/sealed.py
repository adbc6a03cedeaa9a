"""The cryptography of the encrypted private relay (durableReceive.encrypted_private_chat,
suite ``libsodium-sealedbox-x25519-xsalsa20poly1305-ed25519-v1``), shared by the reference
(which verifies) and the suite (which signs and seals), with PyNaCl.

What the document states: keys are JWK-style OKP objects whose ``x`` is 43 base64url
characters (32 bytes, no padding), signatures are 86 base64url characters (an Ed25519
signature, 64 bytes), the ciphertext is base64url (a libsodium sealed box to the
recipient's X25519 key), the relay stores it and never decrypts it.

What the profile chooses (``source: profile``; the document does not say which bytes a
signature covers): **a signature covers the canonical JSON of the signed object without
its signature field**: ``json.dumps(obj, sort_keys=True, separators=(",", ":"),
ensure_ascii=False).encode("utf-8")`` (keys sorted, no whitespace, UTF-8, non-ASCII
characters as themselves). The signed objects and their signing keys:

- key bundle (``private_key_publish.bundle``): the bundle without ``proof_signature``,
  signed by the bundle's own ``signing_public_key`` (proof of possession);
- channel offer and accept, private ack: the command's data object as sent (with its
  ``operation``, which keeps an offer's signature from serving as an accept's) without
  ``signature``, signed by the caller's key ``key_id``;
- envelope (``private_send.envelope``): the envelope without ``signature``, signed by
  its ``sender_key_id``.

The origin a bundle and an envelope must name is the site's own: the scheme and host of
the document's ``endpoint`` (``https://agentfairgo.com``), for the reference as for a live
site."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from nacl.exceptions import BadSignatureError, CryptoError
from nacl.public import PrivateKey, PublicKey, SealedBox
from nacl.signing import SigningKey, VerifyKey

SIGNATURE_FIELDS = {"bundle": "proof_signature", "offer": "signature", "accept": "signature",
                    "envelope": "signature", "ack": "signature"}
SIGNED_BYTES_RULE = "canonical-json-without-signature-field-v1"  # the profile's name for the rule above


def b64u(raw: bytes) -> str:
    """base64url without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def unb64u(text: str) -> bytes:
    """The bytes of an unpadded base64url string (ValueError when it is not one)."""
    if not isinstance(text, str) or any(c in text for c in "=+/"):
        raise ValueError("not unpadded base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not base64url") from exc


def canonical(obj: Any) -> bytes:
    """The profile's canonical JSON: sorted keys, no whitespace, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def signed_bytes(obj: dict[str, Any], signature_field: str) -> bytes:
    """What a signature covers: the object without its signature field, canonically."""
    return canonical({k: v for k, v in obj.items() if k != signature_field})


def sign(key: SigningKey, obj: dict[str, Any], signature_field: str) -> str:
    """An 86-character base64url Ed25519 signature of ``obj`` (profile bytes)."""
    return b64u(key.sign(signed_bytes(obj, signature_field)).signature)


def verify_detached(x: str, message: bytes, signature: str) -> bool:
    """Whether ``signature`` is the Ed25519 signature by the key whose JWK ``x`` is given."""
    try:
        raw_key, raw_sig = unb64u(x), unb64u(signature)
        if len(raw_key) != 32 or len(raw_sig) != 64:
            return False
        VerifyKey(raw_key).verify(message, raw_sig)
    except (ValueError, BadSignatureError, CryptoError, TypeError):
        return False
    return True


def seal(recipient_x: str, plaintext: bytes) -> str:
    """A sealed box (X25519, XSalsa20-Poly1305) to the recipient's key, base64url."""
    return b64u(SealedBox(PublicKey(unb64u(recipient_x))).encrypt(plaintext))


def unseal(key: PrivateKey, ciphertext: str) -> bytes:
    """The plaintext of a sealed box (CryptoError or ValueError when it is not one for ``key``)."""
    return bytes(SealedBox(key).decrypt(unb64u(ciphertext)))


def origin_of(spec: dict[str, Any]) -> str:
    """The site's origin: scheme and host of the document's endpoint."""
    url = urlparse(str(spec["endpoint"]))
    return f"{url.scheme}://{url.netloc}"


def suite_names(spec: dict[str, Any]) -> tuple[str, str]:
    """(protocol, suite) as the key bundle's schema states them."""
    branch = next(b for b in spec["schemas"]["command"]["anyOf"]
                  if b["properties"]["operation"].get("const") == "private_key_publish")
    props = branch["properties"]["bundle"]["properties"]
    return str(props["protocol"]["const"]), str(props["suite"]["const"])


@dataclass
class KeyPair:
    """One device key of an agent: an Ed25519 signing key and an X25519 encryption key."""

    key_id: str
    device_id: str
    signing: SigningKey = field(default_factory=SigningKey.generate)
    encryption: PrivateKey = field(default_factory=PrivateKey.generate)

    @property
    def signing_x(self) -> str:
        return b64u(bytes(self.signing.verify_key))

    @property
    def encryption_x(self) -> str:
        return b64u(bytes(self.encryption.public_key))

    def jwk(self, kind: str) -> dict[str, str]:
        """The JWK-style public key: ``signing`` (Ed25519) or ``encryption`` (X25519)."""
        if kind == "signing":
            return {"kty": "OKP", "crv": "Ed25519", "x": self.signing_x}
        return {"kty": "OKP", "crv": "X25519", "x": self.encryption_x}

    def sign(self, obj: dict[str, Any], signature_field: str = "signature") -> dict[str, Any]:
        """``obj`` with its signature field set (profile bytes)."""
        return {**obj, signature_field: sign(self.signing, obj, signature_field)}


__all__ = ["SIGNATURE_FIELDS", "SIGNED_BYTES_RULE", "KeyPair", "b64u", "canonical", "origin_of", "seal",
           "sign", "signed_bytes", "suite_names", "unb64u", "unseal", "verify_detached"]
