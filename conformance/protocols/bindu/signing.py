"""Bindu's DID request-signing scheme (spec: info.description "Layer 2" and the
``didSignature`` security scheme), shared by the reference and by the checks so
both sides build the signed payload the same way."""

from __future__ import annotations

import json

import base58
from nacl.exceptions import BadSignatureError, CryptoError
from nacl.signing import SigningKey, VerifyKey

SIGNATURE_BYTES = 64
PUBLIC_KEY_BYTES = 32


def signing_payload(body: bytes, did: str, timestamp: int) -> bytes:
    """The bytes that are signed: Python's ``json.dumps`` with default separators
    (spaces after ``:`` and ``,``) and sorted keys, exactly as the spec says."""
    return json.dumps({"body": body.decode("utf-8"), "did": did, "timestamp": timestamp},
                      sort_keys=True).encode()


def _signing_key(seed: bytes) -> SigningKey:
    return SigningKey(seed)


def public_key_b58(seed: bytes) -> str:
    """The base58 Ed25519 public key of a 32-byte seed (what a DID document publishes)."""
    return base58.b58encode(bytes(_signing_key(seed).verify_key)).decode()


def sign_bytes(seed: bytes, message: bytes) -> str:
    """base58 of the 64-byte Ed25519 signature over ``message``."""
    return base58.b58encode(_signing_key(seed).sign(message).signature).decode()


def sign_request(seed: bytes, did: str, body: bytes, timestamp: int) -> dict[str, str]:
    """The three X-DID headers a DID caller adds to a request carrying ``body``."""
    return {
        "X-DID": did,
        "X-DID-Timestamp": str(timestamp),
        "X-DID-Signature": sign_bytes(seed, signing_payload(body, did, timestamp)),
    }


def sign_text(seed: bytes, text: str) -> str:
    """The agent's artifact signature: base58 Ed25519 over the UTF-8 text."""
    return sign_bytes(seed, text.encode("utf-8"))


def decode_signature(signature_b58: str) -> bytes | None:
    """The raw signature, or None when it is not base58 or not 64 bytes."""
    try:
        raw = base58.b58decode(signature_b58)
    except (ValueError, TypeError):
        return None
    return raw if len(raw) == SIGNATURE_BYTES else None


def verify_signature(public_key_b58: str, message: bytes, signature_b58: str) -> bool:
    """True only for a valid Ed25519 signature; False on any malformed input."""
    signature = decode_signature(signature_b58) if isinstance(signature_b58, str) else None
    if signature is None or not isinstance(public_key_b58, str):
        return False
    try:
        key = base58.b58decode(public_key_b58)
        if len(key) != PUBLIC_KEY_BYTES:
            return False
        VerifyKey(key).verify(message, signature)
    except (BadSignatureError, ValueError, TypeError, CryptoError):
        return False
    return True
