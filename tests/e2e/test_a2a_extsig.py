"""A2A extensions and signed agent cards (docs/a2a-extsig.md): the signed form of a card is
the one section 8.4.1's example gives; the reference's signature verifies with its JWKS and
a changed card does not, and the same card gets the same signature. (Every fault caught and
every variant passed: tests/e2e/test_selftest.py, which runs each of this part's faults.)"""

from __future__ import annotations

import json
import re

import pytest
from jwcrypto import jwk

from conformance.documents.prose import document_text


def fenced_after(text: str, marker: str) -> str:
    """The first fenced JSON block after ``marker``."""
    found = re.search(r"```json\n(.*?)```", text[text.index(marker):], flags=re.S)
    assert found, marker
    return found.group(1)


def test_the_signed_form_is_the_one_section_8_4_1_shows():
    from conformance.protocols.a2a.canonical import payload

    text = document_text("specs/a2a/specification.md")
    original = json.loads(fenced_after(text, "Original Agent Card fragment:"))
    expected = fenced_after(text, "After applying RFC 8785:").strip()
    assert payload(original).decode() == expected


@pytest.fixture(scope="module")
def reference():
    from conformance.protocols.a2a.reference import A2AReference, A2AReferenceConfig
    from conformance.run.profiles import load_profile

    return A2AReference(load_profile("a2a"), A2AReferenceConfig())


def test_the_reference_signature_verifies_with_its_jwks_and_a_changed_card_does_not(reference):
    from conformance.protocols.a2a.signing import verifies

    card = reference.sign_card(reference.public_card())
    keys = jwk.JWKSet.from_json(json.dumps(reference.jwks()))
    (signature,) = card["signatures"]
    header = json.loads(jwk.base64url_decode(signature["protected"]))
    assert {"alg", "kid", "typ"} <= set(header) and header["typ"] == "JOSE"
    key = keys.get_key(header["kid"])
    assert verifies(signature, key, card)
    assert verifies(signature, key, {**card, "x-unknown": 1})  # the card as the proto reconstructs it
    assert not verifies(signature, key, {**card, "name": "another agent"})
    assert reference.sign_card(reference.public_card()) == card  # one card, one signature: a stable ETag


def run_sig_valid(config, faults=()):
    from conformance.run.launch import open_run
    from conformance.run.profiles import load_profile
    from conformance.run.runner import execute

    profile = load_profile("a2a")
    row = next(r for r in profile.requirements if r.id == "A2A-SIG-VALID")
    return execute(row, open_run(profile, "reference", config=config, faults=faults, budget="quick"))


def test_config_keys_are_a_trusted_key_store_before_the_jku():
    """Section 8.4.3: "Retrieve the public key using the `kid` and `jku` (or from a trusted key
    store)": the config's keys: decide where they name the kid; a signature that does not verify
    with the trusted key is a finding."""
    from conformance.protocols.a2a.reference.signing import KEY_ID, key_for

    own = key_for(KEY_ID).export_public(as_dict=True)
    assert run_sig_valid({"keys": {"keys": [own]}}).status == "passed"
    other = key_for("conformance-another-key").export_public(as_dict=True)
    verdict = run_sig_valid({"keys": {KEY_ID: other}})
    assert verdict.status == "failed"
    assert "does not verify" in verdict.failures[0].message
    assert run_sig_valid({"keys": {"someone-else": other}}).status == "passed"  # not its kid: the jku decides
