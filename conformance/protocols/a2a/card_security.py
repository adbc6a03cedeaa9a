"""The security schemes the public agent card declares (section 5.8 and the proto's security
messages): each is one kind, with that kind's REQUIRED fields and the values the proto's
comments fix."""

from __future__ import annotations

import functools
import re
import urllib.parse
from typing import Any

from conformance.documents.prose import document_text
from conformance.documents.schemas import SpecError, schema_errors
from conformance.kit.check import CheckContext
from conformance.kit.declare import requirement
from conformance.kit.faults import answer
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import offers
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.documents import proto_at, schema
from conformance.transport.http import json_excerpt


# -- what the proto's comments say -------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def commented(phrase: str) -> tuple[tuple[str, str], ...]:
    """(message, field JSON name) of each field whose comment in the proto holds ``phrase``
    (a comment spans the ``//`` lines right above its field)."""
    out: list[tuple[str, str]] = []
    owner, comment = "", []
    for line in document_text(docs.PROTO).splitlines():
        text = line.strip()
        if text.startswith("//"):
            comment.append(text.lstrip("/ "))
            continue
        found = re.match(r"message (\w+)", text)
        if found:
            owner = found.group(1)
        field = re.match(r"(?:repeated |optional )?[\w.<>, ]+? (\w+) = \d+", text)
        if field and owner and phrase in " ".join(comment):
            out.append((owner, docs.proto().message(owner).field(field.group(1)).json_name))
        comment = []
    if not out:
        raise SpecError(f"{docs.PROTO}: no field's comment says {phrase!r} any more")
    return tuple(out)


@functools.lru_cache(maxsize=1)
def api_key_locations() -> tuple[str, ...]:
    """The values APIKeySecurityScheme.location may take, as its comment lists them."""
    text = document_text(docs.PROTO)
    found = re.search(r"The location of the API key\. Valid values are ([^.]+)\.", text)
    if not found:
        raise SpecError(f"{docs.PROTO} no longer lists the API key locations")
    return tuple(re.findall(r'"([^"]+)"', found.group(1)))


def present(value: dict[str, Any], message: str) -> list[str]:
    """The JSON names of the members of ``message``'s oneof that ``value`` holds (by JSON
    or proto name)."""
    (members,) = docs.proto().message(message).oneofs.values()
    return [f.json_name for f in members
            if value.get(f.json_name) is not None or value.get(f.name) is not None]


def member(value: dict[str, Any], json_name: str) -> Any:
    """A member by its JSON name or its proto name (section 5.5 lets a reader take either)."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", json_name).lower()
    return value.get(json_name, value.get(snake))


def is_url(value: Any) -> bool:
    parts = urllib.parse.urlsplit(value) if isinstance(value, str) else None
    return bool(parts and parts.scheme and parts.netloc)


def kind_type(kind: str, owner: str) -> str:
    """The message a oneof member of ``owner`` holds (``oauth2SecurityScheme`` -> OAuth2SecurityScheme)."""
    return docs.proto().message(owner).field(kind).short_type


# -- security schemes ------------------------------------------------------------------------
def judge_scheme(ctx: CheckContext, name: str, scheme: Any) -> None:
    ctx.expect(isinstance(scheme, dict), f"security scheme {name!r} is not an object: {json_excerpt(scheme)}",
               kind="malformed_answer")
    problems = schema_errors(schema(ctx.profile, "SecurityScheme"), scheme, limit=5)
    ctx.expect(not problems, f"security scheme {name!r} is not a SecurityScheme: " + "; ".join(problems),
               kind="schema_mismatch")
    kinds = present(scheme, "SecurityScheme")
    ctx.expect(len(kinds) == 1, f"security scheme {name!r} holds {len(kinds)} kinds ({kinds}): the proto's "
                                f"SecurityScheme is one of them ({json_excerpt(scheme)})",
               kind="schema_mismatch")
    (kind,) = kinds
    body = member(scheme, kind)
    urls = {field for message, field in commented("MUST be in the")
            if message == kind_type(kind, "SecurityScheme")}
    judge_urls(ctx, name, kind, body, urls)
    if kind_type(kind, "SecurityScheme") == "APIKeySecurityScheme":
        ctx.expect(member(body, "location") in api_key_locations(),
                   f"security scheme {name!r}: API key location {member(body, 'location')!r} is none of "
                   f"{list(api_key_locations())}", kind="schema_mismatch")
    if kind_type(kind, "SecurityScheme") == "OAuth2SecurityScheme":
        judge_oauth2(ctx, name, body)


def judge_urls(ctx: CheckContext, name: str, where: str, body: dict[str, Any], fields: set[str]) -> None:
    """The fields the proto says are in the form of a URL, where given, are absolute URLs."""
    for field in sorted(fields):
        value = member(body, field)
        if value not in (None, ""):
            ctx.expect(is_url(value), f"security scheme {name!r}: {where}.{field} {value!r} is not in the "
                                      "form of a URL", kind="schema_mismatch")


def judge_oauth2(ctx: CheckContext, name: str, body: dict[str, Any]) -> None:
    flows = member(body, "flows")
    chosen = present(flows, "OAuthFlows") if isinstance(flows, dict) else []
    ctx.expect(len(chosen) == 1, f"security scheme {name!r}: flows holds {len(chosen)} flows ({chosen}): the "
                                 f"proto's OAuthFlows is one of them ({json_excerpt(flows)})",
               kind="schema_mismatch")
    flow = member(flows, chosen[0])
    urls = {field for message, field in commented("MUST be in the")
            if message == kind_type(chosen[0], "OAuthFlows")}
    judge_urls(ctx, name, chosen[0], flow if isinstance(flow, dict) else {}, urls)
    for message, field in commented("TLS is required"):
        if message == "OAuth2SecurityScheme" and member(body, field) not in (None, ""):
            value = member(body, field)
            ctx.expect(is_url(value) and urllib.parse.urlsplit(value).scheme.lower() == "https",
                       f"security scheme {name!r}: {field} {value!r} is not an https URL (the proto: \"TLS "
                       "is required\")", kind="schema_mismatch")


def with_scheme(name: str, doc: str, scheme: dict[str, Any]) -> Any:
    """A fault: the card declares one more security scheme, ``scheme`` (broken in one way)."""
    return answer(name, "card", doc, edit=lambda out, *a: {**out, "securitySchemes": {
        **out.get("securitySchemes", {}), "conformance-" + name: scheme}})


OAUTH_URL = "https://auth.example.com"


SCHEME_FAULTS = [
        with_scheme("scheme_two_kinds", "A security scheme holds both an API key and an HTTP auth scheme.",
                    {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"},
                     "httpAuthSecurityScheme": {"scheme": "Basic"}}),
        with_scheme("api_key_location_body", "An API key scheme's location is \"body\".",
                    {"apiKeySecurityScheme": {"location": "body", "name": "key"}}),
        with_scheme("api_key_without_name", "An API key scheme leaves out its REQUIRED name.",
                    {"apiKeySecurityScheme": {"location": "header"}}),
        with_scheme("oauth2_two_flows", "An OAuth 2.0 scheme's flows hold two flows.",
                    {"oauth2SecurityScheme": {"flows": {
                        "clientCredentials": {"tokenUrl": OAUTH_URL + "/token", "scopes": {}},
                        "deviceCode": {"deviceAuthorizationUrl": OAUTH_URL + "/device",
                                       "tokenUrl": OAUTH_URL + "/token", "scopes": {}}}}}),
        with_scheme("password_token_url_not_url", "A password flow's tokenUrl is not in the form of a URL.",
                    {"oauth2SecurityScheme": {"flows": {"password": {"tokenUrl": "the token endpoint"}}}}),
        with_scheme("oauth2_metadata_http", "An OAuth 2.0 scheme's metadata URL is http, not https.",
                    {"oauth2SecurityScheme": {
                        "oauth2MetadataUrl": "http://auth.example.com/.well-known/oauth",
                        "flows": {"clientCredentials": {"tokenUrl": OAUTH_URL + "/token", "scopes": {}}}}}),
]


@requirement(id="A2A-CARD-SECURITY-SCHEMES", level="MUST",
             title="Each security scheme the card declares is exactly one kind with its REQUIRED fields: an "
                   "API key location the proto lists, OAuth 2.0 with one flow, URLs where the proto says so, "
                   "an https metadata URL",
             source=proto_at("oneof scheme", after="message SecurityScheme"),
             faults=SCHEME_FAULTS)
def check_security_schemes(ctx: CheckContext) -> None:
    """The SHOULDs beside them (an IANA-registered HTTP scheme name) are not judged here."""
    client = A2AClient(ctx)
    schemes = client.card.get("securitySchemes")
    if not isinstance(schemes, dict) or not schemes:  # (a scheme no requirement names is judged too)
        offers.require(client, offers.SECURITY)  # off without a scheme: not applicable
        return
    for name, scheme in schemes.items():
        with ctx.subcheck(f"security scheme {name}"):
            judge_scheme(ctx, name, scheme)
