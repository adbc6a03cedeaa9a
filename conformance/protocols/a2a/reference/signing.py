"""The reference's signed agent cards (section 8.4): a mixin of A2AReference. The public
card and the extended card are signed with an ES256 key (JWS over the card's canonical form,
canonical.py); the protected header names ``alg``, ``typ`` JOSE, the ``kid`` and the ``jku``
where the agent serves its public keys (a JWKS at JWKS_PATH)."""

from __future__ import annotations

import json
from typing import Any

from jwcrypto import jwk, jws
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from conformance.protocols.a2a.canonical import SIGNATURES, payload
from conformance.protocols.a2a.reference.host import Host

JWKS_PATH = "/.well-known/jwks.json"  # the reference's choice: section 8.4.2 lets jku name any URL
KEY_ID = "conformance-reference-key-1"
_KEYS: dict[tuple[str, str], jwk.JWK] = {}  # generated once a process (a new key per reset costs time)


def key_for(kid: str, kty: str = "EC") -> jwk.JWK:
    """A private key by its ``kid`` (EC P-256 for ES256, RSA 2048 for RS256)."""
    if (kid, kty) not in _KEYS:
        params = {"crv": "P-256"} if kty == "EC" else {"size": 2048}
        _KEYS[(kid, kty)] = jwk.JWK.generate(kty=kty, kid=kid, **params)
    return _KEYS[(kid, kty)]


_SIGNED: dict[tuple[bytes, str, str], dict[str, str]] = {}


def jws_signature(card: dict[str, Any], key: jwk.JWK, header: dict[str, Any]) -> dict[str, Any]:
    """An AgentCardSignature (section 8.4.2) of ``card`` by ``key`` with protected ``header``;
    the same card gets the same signature (ECDSA's are randomized: a card that changed at
    each fetch would change its ETag, section 8.6.1)."""
    signed_bytes, protected = payload(card), json.dumps(header)
    memo = (signed_bytes, key.thumbprint(), protected)
    if memo not in _SIGNED:
        signed = jws.JWS(signed_bytes)
        signed.add_signature(key, None, protected)
        out = json.loads(signed.serialize())
        if len(_SIGNED) > 256:
            _SIGNED.clear()
        _SIGNED[memo] = {"protected": out["protected"], "signature": out["signature"]}
    return dict(_SIGNED[memo])


class SigningParts(Host):
    def reset_part(self) -> None:
        """This part's share of the world as it starts (A2AReference.reset): nothing (its keys
        last the process)."""

    def signing_keys(self) -> list[tuple[jwk.JWK, str]]:
        """The keys the card is signed with, each with its JWS algorithm."""
        return [(key_for(KEY_ID), "ES256")]

    def jku(self) -> str:
        return str(getattr(self, "base_url", "http://localhost/")).rstrip("/") + JWKS_PATH

    def protected_header(self, key: jwk.JWK, alg: str) -> dict[str, Any]:
        """Section 8.4.2: alg, typ JOSE, kid; and the jku of the agent's JWKS."""
        return {"alg": alg, "typ": "JOSE", "kid": key.key_id, "jku": self.jku()}

    def sign_card(self, card: dict[str, Any]) -> dict[str, Any]:
        """The card as served: with its ``signatures``, one by each key."""
        unsigned = {k: v for k, v in card.items() if k != SIGNATURES}
        return {**unsigned, SIGNATURES: [jws_signature(unsigned, key, self.protected_header(key, alg))
                                         for key, alg in self.signing_keys()]}

    def jwks(self) -> dict[str, Any]:
        """The public keys of the signatures (RFC 7517's JWK Set)."""
        return {"keys": [key.export_public(as_dict=True) for key, _ in self.signing_keys()]}

    def serve_jwks(self, request: Request) -> Response:
        return JSONResponse(self.jwks(), headers={"Cache-Control": "max-age=60"})

    def signing_routes(self) -> list[BaseRoute]:
        return [Route(JWKS_PATH, self.endpoint("serve_jwks"), methods=["GET"])]
