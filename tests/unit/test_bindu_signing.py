"""The DID request-signing scheme: known answer, round trips, malformed input."""

from __future__ import annotations

import json

import base58

from conformance.protocols.bindu.signing import (
    public_key_b58,
    sign_request,
    sign_text,
    signing_payload,
    verify_signature,
)

ZERO_SEED = bytes(32)
KNOWN_SIGNATURE = "3SfU4VPTHLbzZzCn17ZqU6y2tnzHQbdo2nnXQr6XZXk34XgyzwSKRrCYEWRmmGXrV39mdkyhTsy5oasfTpNuqyM2"


def test_known_answer() -> None:
    headers = sign_request(ZERO_SEED, "did:bindu:test", b'{"test": "value"}', 1000)
    assert headers == {"X-DID": "did:bindu:test", "X-DID-Timestamp": "1000",
                       "X-DID-Signature": KNOWN_SIGNATURE}


def test_payload_uses_default_separators_and_sorted_keys() -> None:
    payload = signing_payload(b'{"a":1}', "did:bindu:x", 5)
    assert payload == json.dumps({"body": '{"a":1}', "did": "did:bindu:x", "timestamp": 5},
                                 sort_keys=True).encode()
    assert payload.startswith(b'{"body": ')


def test_request_signature_verifies_and_rejects_tampering() -> None:
    seed = bytes(range(32))
    body = b'{"jsonrpc": "2.0"}'
    headers = sign_request(seed, "did:bindu:me", body, 42)
    key = public_key_b58(seed)
    assert verify_signature(key, signing_payload(body, "did:bindu:me", 42), headers["X-DID-Signature"])
    assert not verify_signature(key, signing_payload(body + b" ", "did:bindu:me", 42),
                                headers["X-DID-Signature"])
    assert not verify_signature(key, signing_payload(body, "did:bindu:me", 43), headers["X-DID-Signature"])
    assert not verify_signature(public_key_b58(ZERO_SEED), signing_payload(body, "did:bindu:me", 42),
                                headers["X-DID-Signature"])


def test_text_signature() -> None:
    seed = bytes(range(32))
    signature = sign_text(seed, "Echo: hi")
    assert len(base58.b58decode(signature)) == 64
    assert verify_signature(public_key_b58(seed), b"Echo: hi", signature)
    assert not verify_signature(public_key_b58(seed), b"Echo: hi ", signature)


def test_malformed_input_is_false_not_an_exception() -> None:
    key = public_key_b58(ZERO_SEED)
    good = sign_text(ZERO_SEED, "x")
    assert len(base58.b58decode(key)) == 32
    for bad_key, sig in [
        (key, "0OIl"),  # not base58
        (key, base58.b58encode(b"short").decode()),  # not 64 bytes
        (key, ""),
        ("0OIl", good),
        (base58.b58encode(b"\x01" * 31).decode(), good),  # key of the wrong length
        (key, None),
        (None, good),
    ]:
        assert verify_signature(bad_key, b"x", sig) is False  # type: ignore[arg-type]
