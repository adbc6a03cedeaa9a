"""The reference's streaming (sections 3.1.2, 3.1.6; SSE over JSON-RPC and HTTP+JSON): a
mixin of A2AReference. Until part 2 builds it, both methods are refused as the card
declares capabilities.streaming off."""

from __future__ import annotations

from typing import Any

from conformance.reference import Refusal


class StreamParts:
    def reset_part(self) -> None:
        """This part's share of the world as it starts (A2AReference.reset)."""

    def op_SendStreamingMessage(self, params: dict[str, Any], caller: str) -> Any:
        raise Refusal("UnsupportedOperationError", "streaming is not supported (capabilities.streaming)")

    def op_SubscribeToTask(self, params: dict[str, Any], caller: str) -> Any:
        raise Refusal("UnsupportedOperationError", "streaming is not supported (capabilities.streaming)")
