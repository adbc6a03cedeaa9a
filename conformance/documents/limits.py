"""Limits as data: the numbers a spec states in prose (a body size, a time window, a
deadline ceiling), read through the ``limits:`` block of a profile.

Each entry names the limit in the unit its name says (``_bytes``, ``_s``, ``_ms``) and
either points into the spec::

    body_bytes: {pointer: /paths/~1/post/description, pattern: 'over (\\d+) MB', scale: 1048576}

(``pattern``'s first group captures the number in the pointed text; without a pattern the
pointed value must itself be a number; ``scale`` multiplies it into the name's unit,
default 1), or is the profile's own choice where the spec is silent::

    session_ttl_s: {value: 300, source: profile, why: the spec is silent; ...}

The spec is the source of truth: an entry whose pointer no longer resolves or whose
sentence no longer matches fails the load with a one-line SpecError.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from conformance.documents.schemas import SpecError, resolve_pointer
from conformance.model import Limit, Source

SPEC_KEYS = frozenset({"pointer", "pattern", "scale"})
PROFILE_KEYS = frozenset({"value", "source", "why"})


def _number(raw: Any, where: str) -> int | float:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise SpecError(f"{where} is not a number: {type(raw).__name__}")
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw)  # exact: a 19-digit limit does not survive a float
    try:
        value = float(raw)
    except ValueError:
        raise SpecError(f"{where} is not a number: {str(raw)[:40]!r}") from None
    return int(value) if value.is_integer() else value


def _scaled(number: int | float, scale: int | float) -> int | float:
    value = number * scale
    return int(value) if float(value).is_integer() else value


def load_limit(name: str, entry: Any, spec: Any, spec_file: str) -> Limit:
    """One entry of a ``limits:`` block, resolved against the spec."""
    where = f"limit {name!r}"
    if not isinstance(entry, Mapping):
        raise SpecError(f"{where}: an entry is a mapping with pointer/pattern/scale or value/source/why")
    keys = set(entry)
    if "value" in entry:
        if keys != PROFILE_KEYS or entry["source"] != "profile" or not str(entry["why"] or "").strip():
            raise SpecError(f"{where}: a profile's own value needs exactly value, source: profile and why")
        return Limit(name, _number(entry["value"], f"{where} value"),
                     Source("profile", str(entry["why"]).strip()))
    if "pointer" not in keys or not keys <= SPEC_KEYS:
        extra = sorted(keys - SPEC_KEYS)
        raise SpecError(f"{where}: needs a pointer (and only pattern, scale beside it)"
                        + (f", not {extra}" if extra else ""))
    pointer = str(entry["pointer"])
    scale = _number(entry.get("scale", 1), f"{where} scale")
    try:
        pointed = resolve_pointer(spec, pointer)
    except SpecError as exc:
        raise SpecError(f"{where}: {spec_file} {exc}") from None
    pattern = entry.get("pattern")
    if pattern is None:
        number = _number(pointed, f"{where}: {spec_file}#{pointer}")
    else:
        if not isinstance(pointed, str):
            raise SpecError(f"{where}: {spec_file}#{pointer} is a {type(pointed).__name__}, "
                            "not a text to match")
        try:
            match = re.search(str(pattern), pointed)
        except re.error as exc:
            raise SpecError(f"{where}: pattern {pattern!r} does not compile: {exc}") from None
        if match is None or not match.groups() or match.group(1) is None:
            raise SpecError(f"{where}: {spec_file}#{pointer} no longer states it "
                            f"(pattern {pattern!r} does not match)")
        number = _number(match.group(1), f"{where}: the captured {match.group(1)!r}")
    return Limit(name, _scaled(number, scale), Source(spec_file, pointer))


def load_limits(block: Any, spec: Any, spec_file: str) -> dict[str, Limit]:
    """Every limit of a profile's ``limits:`` block (none when the block is absent)."""
    if block is None:
        return {}
    if not isinstance(block, Mapping):
        raise SpecError("limits: must be a mapping of limit name to entry")
    return {str(name): load_limit(str(name), entry, spec, spec_file) for name, entry in block.items()}


__all__ = ["Limit", "load_limit", "load_limits"]
