"""The reference's extensions (sections 3.2.6, 4.6): a mixin of A2AReference. Until part 2
builds it, the agent declares none and the A2A-Extensions header is not read."""

from __future__ import annotations

from typing import Any


class ExtensionParts:
    def reset_part(self) -> None:
        """This part's share of the world as it starts (A2AReference.reset)."""

    def check_extensions(self, request: Any, method: str) -> None:
        """Before an operation: refuse it where a required extension was not declared."""

    def extension_headers(self, request: Any) -> dict[str, str]:
        """Headers every answer carries (the extensions the request activated)."""
        return {}
