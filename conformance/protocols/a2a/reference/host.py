"""What the reference's parts (streams, push notifications, extensions, signing: the mixins
of A2AReference) use of the reference they are mixed into, declared once so that a part is
type-checked against it: annotations and, for the type checker only, the methods' signatures.
Nothing here exists at run time but the class: A2AReference gives each of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.protocols.a2a.reference import A2AReferenceConfig

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
