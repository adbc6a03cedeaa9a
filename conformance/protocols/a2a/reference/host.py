"""The reference's settings, and what its parts (streams, push notifications, extensions,
signing: the mixins of A2AReference) use of the reference they are mixed into, declared once
so that a part is type-checked against it: annotations and, for the type checker only, the
methods' signatures. ``Host`` holds nothing at run time: A2AReference gives each of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.kit.reference import ReferenceConfig


@dataclass
class A2AReferenceConfig(ReferenceConfig):
    streaming: bool = True  # SendStreamingMessage and SubscribeToTask as SSE (reference/stream.py)
    push_notifications: bool = True  # part 2: push notifications (reference/push.py)
    extended_agent_card: bool = False  # on: an extended card for authenticated callers (section 3.1.11)
    security: bool = True  # the card declares a bearer scheme, and calls need a token
    version: str = "1.0"  # the A2A-Version the interfaces serve (Major.Minor)


# who hears of each change of a task: called with the task and the change as a StreamResponse
Listener = Callable[[dict[str, Any], dict[str, Any]], None]


class Host:
    config: A2AReferenceConfig
    tasks: dict[str, dict[str, Any]]
    owners: dict[str, str]  # task id -> caller label
    listeners: list[Listener]

    if TYPE_CHECKING:
        def public_card(self) -> dict[str, Any]: ...

        def owned_task(self, task_id: Any, caller: str) -> dict[str, Any]: ...

        def new_id(self, kind: str) -> str: ...

        def endpoint(self, name: str) -> Callable[..., Any]: ...
