"""The encrypted private relay (conformance/protocols/plaza/private.py, private_channels.py,
reference/private.py, sealed.py): the suite's cryptography is the profile's (real Ed25519 and sealed boxes,
the canonical signed bytes), the rows are sound and in the table, and each of the part's
faults is caught while the clean reference passes every row of the part."""

from __future__ import annotations

import json

import pytest

from conformance.kit.declare import REGISTRY
from conformance.model import Profile, Requirement
from conformance.protocols.plaza import private, private_channels
from conformance.protocols.plaza.sealed import (
    KeyPair,
    canonical,
    origin_of,
    seal,
    signed_bytes,
    suite_names,
    unb64u,
    unseal,
    verify_detached,
)
from conformance.run.profiles import load_profile

MODULES = (private.__name__, private_channels.__name__)
FAULTS = REGISTRY.faults_of(MODULES)


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile("agent-plaza")


@pytest.fixture(scope="module")
def rows(profile: Profile) -> list[Requirement]:
    """The rows the relay's modules declare."""
    assert all(REGISTRY.requirements.get(module) for module in MODULES), MODULES  # each declares rows
    return REGISTRY.rows(profile, MODULES)


def test_signed_bytes_are_canonical_json_without_the_signature() -> None:
    obj = {"b": "é", "a": 1, "signature": "x" * 86}
    assert signed_bytes(obj, "signature") == b'{"a":1,"b":"\xc3\xa9"}'
    assert canonical({"z": [1, {"y": None}]}) == json.dumps({"z": [1, {"y": None}]},
                                                            separators=(",", ":")).encode()


def test_keys_and_signatures_have_the_documents_shapes() -> None:
    pair = KeyPair("k", "d")
    assert len(pair.signing_x) == 43 and len(pair.encryption_x) == 43
    signed = pair.sign({"operation": "private_ack", "message_id": "m"})
    assert len(signed["signature"]) == 86 and len(unb64u(signed["signature"])) == 64
    assert verify_detached(pair.signing_x, signed_bytes(signed, "signature"), signed["signature"])
    flipped = {**signed, "message_id": "n"}
    assert not verify_detached(pair.signing_x, signed_bytes(flipped, "signature"), signed["signature"])
    assert not verify_detached(KeyPair("o", "d").signing_x, signed_bytes(signed, "signature"),
                               signed["signature"])
    assert not verify_detached(pair.signing_x, signed_bytes(signed, "signature"), "A" * 86)


def test_sealed_boxes_open_only_for_the_recipient() -> None:
    bob, carol = KeyPair("b", "d"), KeyPair("c", "d")
    box = seal(bob.encryption_x, b"hello")
    assert unseal(bob.encryption, box) == b"hello"
    with pytest.raises(Exception):  # noqa: B017 - PyNaCl's CryptoError
        unseal(carol.encryption, box)


def test_the_suite_and_origin_are_read_from_the_document(profile: Profile) -> None:
    assert suite_names(profile.spec) == ("agent-plaza-e2ee/1",
                                         "libsodium-sealedbox-x25519-xsalsa20poly1305-ed25519-v1")
    assert origin_of(profile.spec) == "https://agentfairgo.com"


def test_the_rows_are_sound(rows: list[Requirement]) -> None:
    assert all(r.id.startswith("PLAZA-PRIV-") and r.faults for r in rows)
    assert {f for r in rows for f in r.faults} == set(FAULTS)
    assert all(r.source.is_profile for r in rows if r.level == "SHOULD")


def test_the_rows_are_in_the_table(profile: Profile, rows: list[Requirement]) -> None:
    assert {r.id for r in rows} <= {r.id for r in profile.requirements}
    assert set(FAULTS) <= set(profile.faults)

# The clean reference and each fault of the part: tests/e2e/test_selftest.py, as for every row.
