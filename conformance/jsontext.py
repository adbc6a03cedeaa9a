"""JSON text as the kit reads it from a stranger: parsed with a depth limit and never
an exception, and excerpted for messages without serializing all of it. Plain
functions with no imports of the kit, so reports and transports share them."""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 100  # deeper answers are not parsed (no legitimate answer nests this deep)


def parse_json(data: bytes | str) -> tuple[Any, str]:
    """(value, "") or (None, why it is not usable JSON), never an exception."""
    try:
        value = json.loads(data)
    except RecursionError:
        return None, f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    except ValueError as exc:  # includes invalid UTF-8
        return None, f"not JSON ({exc})"
    if isinstance(value, dict | list) and _too_deep(data, value):
        return None, f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    return value, ""


class _Enough(Exception):
    pass


def json_excerpt(value: Any, limit: int = 160) -> str:
    """The first ``limit`` characters of ``value`` as JSON, built only that far: a
    message quoting a large answer must not serialize all of it (messages are built
    for every reply, passing or not)."""
    out: list[str] = []
    size = 0

    def emit(text: str) -> None:
        nonlocal size
        out.append(text)
        size += len(text)
        if size >= limit:
            raise _Enough

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            emit("{")
            for i, (key, inner) in enumerate(item.items()):
                emit(f"{', ' if i else ''}{json.dumps(str(key)[:limit])}: ")
                walk(inner)
            emit("}")
        elif isinstance(item, list | tuple):
            emit("[")
            for i, inner in enumerate(item):
                if i:
                    emit(", ")
                walk(inner)
            emit("]")
        else:
            emit(json.dumps(item[:limit] if isinstance(item, str) else item,
                            default=lambda o: str(o)[:limit]))

    try:
        walk(value)
    except _Enough:
        pass
    return "".join(out)[:limit]


def _too_deep(data: bytes | str, value: Any) -> bool:
    """Whether ``value``, parsed from ``data``, nests deeper than the limit: only text with
    more brackets than the limit can, and then the parsed value is walked level by level
    (in Python, half the cost of the parse on a 500 kB answer; counting brackets on the
    text in C, strings and escapes set aside, cost more)."""
    if data.count(b"[" if isinstance(data, bytes) else "[") + data.count(  # type: ignore[arg-type]
            b"{" if isinstance(data, bytes) else "{") <= MAX_JSON_DEPTH:  # type: ignore[arg-type]
        return False
    level, depth = [value], 1
    while level:
        if depth > MAX_JSON_DEPTH:
            return True
        inner: list[Any] = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, dict | list):
                    inner.append(child)
        level, depth = inner, depth + 1
    return False
