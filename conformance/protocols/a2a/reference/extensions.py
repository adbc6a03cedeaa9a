"""The reference's extensions (sections 3.2.6, 4.6): a mixin of A2AReference. The card
declares one extension, required: the agent stamps every artifact it makes with it (the
artifact's ``extensions``, section 4.6.2), so a client that does not declare it in the
``A2A-Extensions`` service parameter is refused with ExtensionSupportRequiredError
(section 3.3.4), on every operation. Extensions the request names that the agent does not
support are ignored (section 4.6.3); there is no fallback from one version to another."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.kit.reference import Refusal
from conformance.protocols.a2a.names import EXTENSIONS_HEADER
from conformance.protocols.a2a.reference.host import Host

# the reference's own extension (RFC 2606's example domain: an identifier, never fetched)
REQUIRED_EXTENSION = "https://conformance.example/extensions/echo-receipt/v1"
MISSING = "ExtensionSupportRequiredError"


def requested(request: Any) -> list[str]:
    """The extension URIs of the request's A2A-Extensions service parameter: comma-separated
    (sections 9.2, 10.2, 11.2), repeated entries read as one list. ``request`` is an HTTP
    request (its headers), or the service parameters themselves (a mapping, or the key-value
    pairs of gRPC metadata); keys are case-insensitive (section 3.2.6)."""
    found = getattr(request, "headers", request)
    if hasattr(found, "getlist"):
        values = list(found.getlist(EXTENSIONS_HEADER))
    else:
        pairs = found.items() if isinstance(found, Mapping) else found or ()
        values = [str(v) for k, v in pairs if str(k).lower() == EXTENSIONS_HEADER.lower()]
    return [uri.strip() for value in values for uri in value.split(",") if uri.strip()]


class ExtensionParts(Host):
    def reset_part(self) -> None:
        """This part's share of the world as it starts (A2AReference.reset): the agent uses
        its extensions on each artifact it publishes."""
        self.listeners.append(self.use_extensions)

    def card_extensions(self) -> list[dict[str, Any]]:
        """AgentCard.capabilities.extensions (section 4.6.1)."""
        return [{"uri": REQUIRED_EXTENSION, "required": True,
                 "description": "Each artifact carries a receipt of the echo; clients must declare it."}]

    def declared_extensions(self) -> list[dict[str, Any]]:
        """The extensions the card as served declares (a card edited to declare none requires none)."""
        capabilities = self.public_card().get("capabilities")
        found = capabilities.get("extensions") if isinstance(capabilities, dict) else None
        return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []

    def supported_extensions(self) -> set[str]:
        return {str(e.get("uri")) for e in self.declared_extensions()}

    def required_extensions(self) -> set[str]:
        return {str(e.get("uri")) for e in self.declared_extensions() if e.get("required") is True}

    def used_extensions(self) -> set[str]:
        """The extensions the agent contributes to what it makes: all it supports."""
        return self.supported_extensions()

    def use_extensions(self, task: dict[str, Any], event: dict[str, Any]) -> None:
        """An artifact the agent made names the extensions that contributed to it (section 4.6.2)."""
        artifact = event.get("artifactUpdate", {}).get("artifact")
        used = sorted(self.used_extensions())
        if not isinstance(artifact, dict) or not used:
            return
        for made in (artifact, *[a for a in task.get("artifacts", [])
                                 if a.get("artifactId") == artifact.get("artifactId")]):
            made["extensions"] = sorted({*made.get("extensions", []), *used})

    def check_extensions(self, request: Any, method: str) -> None:
        """Before an operation: refuse it where a required extension was not declared
        (section 3.3.4); the request's other extensions are ignored (section 4.6.3)."""
        asked, declared = set(requested(request)), self.declared_extensions()
        self.activated = asked & {str(e.get("uri")) for e in declared}
        missing = sorted({str(e.get("uri")) for e in declared if e.get("required") is True} - asked)
        if missing:
            raise Refusal(MISSING, f"{method} needs the extension(s) {', '.join(missing)}: declare them in "
                                   f"{EXTENSIONS_HEADER}", data={"extensions": ",".join(missing)})

    def extension_headers(self, request: Any) -> dict[str, str]:
        """Headers every answer carries: the extensions the request activated (those it named
        that the agent supports)."""
        active = sorted(set(requested(request)) & self.supported_extensions())
        return {EXTENSIONS_HEADER: ",".join(active)} if active else {}
