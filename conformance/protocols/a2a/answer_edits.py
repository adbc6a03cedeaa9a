"""What faults change in an answer: one member of it edited in place."""

from __future__ import annotations

from typing import Any


def drop_in(out: Any, member: str, key: str) -> None:
    """``out[member]`` loses ``key`` (in place; nothing where the answer has another shape)."""
    inner = out.get(member) if isinstance(out, dict) else None
    if isinstance(inner, dict):
        inner.pop(key, None)


def set_in(out: Any, member: str, **values: Any) -> None:
    inner = out.get(member) if isinstance(out, dict) else None
    if isinstance(inner, dict):
        inner.update(values)
