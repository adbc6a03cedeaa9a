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
    from conformance.profiles import load_profile
    from conformance.protocols.a2a.reference import A2AReference, A2AReferenceConfig

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
