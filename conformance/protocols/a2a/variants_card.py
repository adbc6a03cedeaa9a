"""Variants of the extended card and of the public card's security schemes and bindings: behaviours
the documents allow that the reference does not choose. Each patches one reference instance
like a fault; its docstring quotes the text that allows it; no MUST may fail on one
(`conformance selftest`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.kit.declare import variant
from conformance.kit.faults import replaces
from conformance.protocols.a2a.reference import A2AReference

AUTH = "https://auth.example.com"


def serving_xcard(ref: A2AReference) -> None:
    ref.config = dataclasses.replace(ref.config, extended_agent_card=True)


@variant
def xcard_served(ref: A2AReference) -> None:
    """The card declares capabilities.extendedAgentCard, and GetExtendedAgentCard answers the
    extended card to an authenticated caller (the public card and one more skill).

    allowed by: specification.md section 13.3 "Agents declare extended card support via
    `AgentCard.capabilities.extendedAgentCard`" and section 3.1.11 "A complete Agent Card object,
    which may contain additional details or skills not present in the public card\""""
    serving_xcard(ref)


@variant
def xcard_by_caller(ref: A2AReference) -> None:
    """The extended card differs by caller: the main caller sees a skill with its rate limits
    and its own configuration; another sees the public card's skills only.

    allowed by: specification.md section 13.3 "Agents **MAY** return different extended card
    content based on the authenticated client's identity or authorization level", "Extended
    cards **MAY** expose more detailed capability information (e.g., rate limits, quotas)",
    "Extended cards **MAY** include organization-specific or user-specific configuration\""""
    serving_xcard(ref)

    @replaces(ref.extended_card)
    def card(original: Any, public: dict[str, Any], caller: str) -> dict[str, Any]:
        if caller != "full":
            return dict(public)
        limits = {"id": "echo-quota", "name": "Echo (quota)", "tags": ["echo", "quota"],
                  "description": "Echoes text; 100 requests a minute for this caller.",
                  "examples": [f"configured for caller {caller}"]}
        return {**original(public, caller), "skills": [*public.get("skills", []), limits]}


@variant
def card_many_security_schemes(ref: A2AReference) -> None:
    """The card declares, beside its bearer scheme, one security scheme of every other kind
    and an OAuth 2.0 scheme for every flow (each with the REQUIRED fields; the deprecated flows
    with empty scopes and no optional URL).

    allowed by: a2a.proto SecurityScheme "oneof scheme" (API key, HTTP auth, OAuth 2.0, OpenID
    Connect, mutual TLS), OAuthFlows "oneof flow", ImplicitOAuthFlow.scopes "The map MAY be
    empty\""""
    token = AUTH + "/token"
    flows = {"authorizationCode": {"authorizationUrl": AUTH + "/authorize", "tokenUrl": token,
                                   "refreshUrl": AUTH + "/refresh", "scopes": {"echo": "use the echo"},
                                   "pkceRequired": True},
             "clientCredentials": {"tokenUrl": token, "scopes": {"echo": "use the echo"}},
             "implicit": {"authorizationUrl": AUTH + "/authorize", "scopes": {}},
             "password": {"tokenUrl": token},
             "deviceCode": {"deviceAuthorizationUrl": AUTH + "/device", "tokenUrl": token, "scopes": {}}}
    more: dict[str, Any] = {
        "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
        "apiKeyQuery": {"apiKeySecurityScheme": {"location": "query", "name": "key",
                                                 "description": "a key in the query"}},
        "basic": {"httpAuthSecurityScheme": {"scheme": "basic"}},
        "oidc": {"openIdConnectSecurityScheme": {
            "openIdConnectUrl": AUTH + "/.well-known/openid-configuration"}},
        "mtls": {"mtlsSecurityScheme": {"description": "a client certificate"}},
        **{f"oauth2-{flow}": {"oauth2SecurityScheme": {"flows": {flow: body},
                                                       "oauth2MetadataUrl": AUTH + "/.well-known/oauth"}}
           for flow, body in flows.items()},
    }

    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = dict(original(request))
        out["securitySchemes"] = {**out.get("securitySchemes", {}), **more}
        return out


@variant
def custom_binding_uri(ref: A2AReference) -> None:
    """The card declares a custom binding too, named by a URI.

    allowed by: specification.md section 5.8 "Custom protocol bindings **SHOULD** be identified by a
    URI" (its example: "https://example.com/bindings/websocket/v1")"""
    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = dict(original(request))
        custom = {"url": "wss://agent.example.com/a2a/ws", "protocolVersion": ref.config.version,
                  "protocolBinding": "https://example.com/bindings/ws/v1"}
        out["supportedInterfaces"] = [*out["supportedInterfaces"], custom]
        return out
