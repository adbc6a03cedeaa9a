"""More of the public agent card (sections 3.6, 5.8, 8.6.1 and the proto's security
messages): each security scheme it declares is one kind with that kind's REQUIRED fields
and the values the proto's comments fix, the protocol versions it names are Major.Minor, its
answer carries a stable ETag, and a binding other than the core ones is named by a URI."""

from __future__ import annotations

import functools
import re
import urllib.parse
from typing import Any

from conformance.check import CheckContext, NotApplicable, Untested
from conformance.declare import requirement
from conformance.documents.prose import document_text
from conformance.documents.schemas import SpecError, schema_errors
from conformance.faults import answer, replaces
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import offers
from conformance.protocols.a2a.cards import fetched_card
from conformance.protocols.a2a.client import A2AClient, interfaces
from conformance.protocols.a2a.documents import proto_at, schema, spec
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


@functools.lru_cache(maxsize=1)
def core_bindings() -> tuple[str, ...]:
    """The core protocol bindings AgentInterface.protocol_binding's comment names."""
    text = " ".join(line.strip().lstrip("/ ") for line in document_text(docs.PROTO).splitlines())
    found = re.search(r"The core ones officially supported are (.+?)\.", text)
    if not found:
        raise SpecError(f"{docs.PROTO} no longer names the core protocol bindings")
    return tuple(re.findall(r"`([^`]+)`", found.group(1)))


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




# -- versions, caching, bindings -----------------------------------------------------------
MAJOR_MINOR = re.compile(r"\d+\.\d+")


@requirement(id="A2A-CARD-PROTOCOL-VERSION", level="SHOULD",
             title="The protocol versions the card's interfaces name are Major.Minor, without a patch number",
             source=spec("Patch version numbers SHOULD NOT be used in requests, responses and Agent Cards",
                         after="### 3.6"),
             faults=[answer("card_version_with_patch", "card", "The card's interfaces name protocolVersion "
                                                               "1.0.1.",
                            edit=lambda out, *a: {**out, "supportedInterfaces": [
                                {**i, "protocolVersion": i.get("protocolVersion", "1.0") + ".1"}
                                for i in out["supportedInterfaces"]]})])
def check_protocol_version(ctx: CheckContext) -> None:
    named = [(i.get("protocolBinding"), i.get("protocolVersion")) for i in interfaces(A2AClient(ctx).card)
             if i.get("protocolVersion") is not None]
    if not named:
        raise Untested("the card's interfaces name no protocolVersion", "other")
    for binding, version in named:
        with ctx.subcheck(f"{binding} interface"):
            ctx.expect(isinstance(version, str) and MAJOR_MINOR.fullmatch(version),
                       f"the {binding} interface names protocolVersion {version!r}: section 3.6 wants "
                       "Major.Minor (a patch number SHOULD NOT be used)", kind="expectation")


@requirement(id="A2A-CARD-ETAG", level="SHOULD",
             title="The agent card's answer carries an ETag, the same one while the card does not change",
             source=spec("include an `ETag` response header derived from the Agent Card's `version` field",
                         after="#### 8.6.1"),
             faults=["card_without_etag", "card_etag_per_fetch"])
def check_card_etag(ctx: CheckContext) -> None:
    """Derived from the card's version or a hash of its content: two fetches of the same card
    carry the same tag."""
    first, second = fetched_card(ctx), fetched_card(ctx)
    tags = [reply.headers.get("etag") for reply in (first, second)]
    ctx.expect(tags[0], f"the agent card's answer carries no ETag (headers: {sorted(first.headers)})",
               kind="expectation")
    if first.json() == second.json():
        ctx.expect(tags[0] == tags[1], f"the same agent card came with ETag {tags[0]!r}, then {tags[1]!r}: a "
                                       "tag derived from its version or content stays the same",
                   kind="expectation")


@check_card_etag.fault
def card_without_etag(ref: Any) -> None:
    """The agent card comes without an ETag header."""
    @replaces(ref, "serve_card")
    def serve_card(original: Any, request: Any) -> Any:
        response = original(request)
        del response.headers["etag"]
        return response


@check_card_etag.fault
def card_etag_per_fetch(ref: Any) -> None:
    """The agent card's ETag changes at every fetch (it is derived from nothing in the card)."""
    fetches = iter(range(1, 1 << 30))

    @replaces(ref, "etag")
    def etag(original: Any, card: Any) -> str:
        return f'"fetch-{next(fetches)}"'


def custom(card: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in interfaces(card) if i.get("protocolBinding") not in core_bindings()]


URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")  # RFC 3986: a scheme, a colon, the rest


@requirement(id="A2A-CARD-CUSTOM-BINDING-URI", level="SHOULD",
             title="An interface whose protocolBinding is none of the core ones (JSONRPC, GRPC, HTTP+JSON) "
                   "names it by a URI",
             source=spec("**SHOULD** be a URI:", after="The `protocolBinding` field in the Agent Card"),
             faults=[answer("custom_binding_bare_name", "card",
                            "The card declares a custom binding named WEBSOCKET, not by a URI.",
                            edit=lambda out, *a: {**out, "supportedInterfaces": [
                                *out["supportedInterfaces"],
                                {"url": "wss://agent.example.com/a2a/ws", "protocolBinding": "WEBSOCKET",
                                 "protocolVersion": "1.0"}]})])
def check_custom_binding_uri(ctx: CheckContext) -> None:
    declared = custom(A2AClient(ctx).card)
    if not declared:
        raise NotApplicable(f"the card declares only core bindings ({', '.join(core_bindings())})")
    for interface in declared:
        binding = interface.get("protocolBinding")
        with ctx.subcheck(f"interface at {interface.get('url')}"):
            ctx.expect(isinstance(binding, str) and URI.fullmatch(binding),
                       f"the interface at {interface.get('url')} names the custom binding {binding!r}: "
                       "section 5.8 wants a URI", kind="expectation")

