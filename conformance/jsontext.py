"""JSON text as the kit reads it from a stranger: parsed with a depth limit and never
an exception, and excerpted for messages without serializing all of it. Plain
functions with no imports of the kit, so reports and transports share them."""

from __future__ import annotations

import json
import re
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
    if isinstance(value, dict | list) and _too_deep(data):
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


_STRINGS: dict[type, Any] = {str: re.compile(r'"(?:[^"\\]|\\.)*"'), bytes: re.compile(rb'"(?:[^"\\]|\\.)*"')}
_NOT_BRACKETS: dict[type, Any] = {str: re.compile(r"[^\[\]{}]+"), bytes: re.compile(rb"[^\[\]{}]+")}
_EMPTY_PAIR: dict[type, Any] = {str: re.compile(r"\[\]|\{\}"), bytes: re.compile(rb"\[\]|\{\}")}


def _too_deep(data: bytes | str) -> bool:
    """Whether parsed JSON text nests deeper than the limit. Counted on the text, in C:
    strings and everything but brackets dropped, then one level of empty pairs
    removed per pass (a walk of the parsed value in Python costs more than the parse)."""
    kind = bytes if isinstance(data, bytes) else str
    opening = (b"[", b"{") if kind is bytes else ("[", "{")
    if data.count(opening[0]) + data.count(opening[1]) <= MAX_JSON_DEPTH:  # type: ignore[arg-type]
        return False
    nothing: Any = b"" if kind is bytes else ""
    brackets = _NOT_BRACKETS[kind].sub(nothing, _STRINGS[kind].sub(nothing, data))
    for _ in range(MAX_JSON_DEPTH):
        brackets, removed = _EMPTY_PAIR[kind].subn(nothing, brackets)
        if not brackets:
            return False
    return bool(brackets)
