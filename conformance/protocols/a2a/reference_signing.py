"""The reference's signed agent cards (section 8.4): a mixin of A2AReference. Until part 2
builds it, the card is served unsigned."""

from __future__ import annotations

from typing import Any


class SigningParts:
    def reset_part(self) -> None:
        """This part's share of the world as it starts (A2AReference.reset)."""

    def sign_card(self, card: dict[str, Any]) -> dict[str, Any]:
        """The card as served: with its ``signatures`` where the reference signs it."""
        return card
