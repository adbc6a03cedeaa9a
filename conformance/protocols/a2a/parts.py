"""The parts of a message: every Part an answer holds (wherever it sits), the kit's own message
in a task's history, a message with one more part, and whether a media type covers another."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.driving import driven


def parts_in(value: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every Part of an answer (a member of a ``parts`` list, anywhere), with where it is."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "parts" and isinstance(item, list):
                yield from ((f"{where}/parts/{i}", p) for i, p in enumerate(item) if isinstance(p, dict))
            else:
                yield from parts_in(item, f"{where}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from parts_in(item, f"{where}/{i}")


def own_message(task: dict[str, Any], message_id: str) -> dict[str, Any] | None:
    """The message of the kit's (by its messageId) in a task's history, where the agent keeps it."""
    history = task.get("history")
    return next((m for m in history if isinstance(m, dict) and m.get("messageId") == message_id), None) \
        if isinstance(history, list) else None


def with_part(c: A2AClient, part: dict[str, Any], outcome: str = "completed") -> dict[str, Any]:
    """The message driving the agent to ``outcome``, with ``part`` added after its own."""
    message = driven(c, outcome)
    return {**message, "parts": [*message.get("parts", []), part]}


def plain_with(c: A2AClient, part: dict[str, Any]) -> dict[str, Any]:
    """An ordinary message with ``part`` added (for a request the agent may refuse)."""
    message = c.message()
    return {**message, "parts": [*message["parts"], part]}


# -- media types ---------------------------------------------------------------------------------
def covers(mode: str, media: str) -> bool:
    """Whether accepted mode ``mode`` (``type/subtype``, ``type/*`` or ``*/*``) takes ``media``."""
    want, got = mode.split(";")[0].strip().lower(), media.split(";")[0].strip().lower()
    return want in ("*/*", got) or (want.endswith("/*") and got.startswith(want[:-1]))
