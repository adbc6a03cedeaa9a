"""The reference's push notifications (sections 3.1.7-3.1.10, 4.3): a mixin of
A2AReference. Until part 2 builds it, every push configuration method is refused as the
card declares capabilities.pushNotifications off."""

from __future__ import annotations

from typing import Any

from conformance.reference import Refusal


class PushParts:
    def reset_part(self) -> None:
        """This part's share of the world as it starts (A2AReference.reset)."""

    def push_not_supported(self, params: dict[str, Any], caller: str) -> Any:
        raise Refusal("PushNotificationNotSupportedError",
                      "push notifications are not supported (capabilities.pushNotifications)")

    op_CreateTaskPushNotificationConfig = push_not_supported
    op_GetTaskPushNotificationConfig = push_not_supported
    op_ListTaskPushNotificationConfigs = push_not_supported
    op_DeleteTaskPushNotificationConfig = push_not_supported
