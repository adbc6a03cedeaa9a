"""What the documents recommend of the public agent card (sections 3.6, 5.8, 8.6.1): the protocol
versions its interfaces name are Major.Minor, a binding other than the core ones is named by a
URI, and its answer carries a stable ETag."""

from __future__ import annotations

import functools
import re
from typing import Any

from conformance.documents.prose import document_text
from conformance.documents.schemas import SpecError
from conformance.kit.check import CheckContext, NotApplicable, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import answer, replaces
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.cards import fetched_card
from conformance.protocols.a2a.client import A2AClient, interfaces
from conformance.protocols.a2a.documents import spec
from conformance.protocols.a2a.reference import A2AReference


@functools.lru_cache(maxsize=1)
def core_bindings() -> tuple[str, ...]:
    """The core protocol bindings AgentInterface.protocol_binding's comment names."""
    text = " ".join(line.strip().lstrip("/ ") for line in document_text(docs.PROTO).splitlines())
    found = re.search(r"The core ones officially supported are (.+?)\.", text)
    if not found:
        raise SpecError(f"{docs.PROTO} no longer names the core protocol bindings")
    return tuple(re.findall(r"`([^`]+)`", found.group(1)))


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
def card_without_etag(ref: A2AReference) -> None:
    """The agent card comes without an ETag header."""
    @replaces(ref.serve_card)
    def serve_card(original: Any, request: Any) -> Any:
        response = original(request)
        del response.headers["etag"]
        return response


@check_card_etag.fault
def card_etag_per_fetch(ref: A2AReference) -> None:
    """The agent card's ETag changes at every fetch (it is derived from nothing in the card)."""
    fetches = iter(range(1, 1 << 30))

    @replaces(ref.etag)
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
