"""Finding things in an answer by what they are, not where a profile put them.

A MUST verdict may rest only on what the document names and on what the suite itself
controls (docs/architecture.md, "The judging rule"). Where the document gives no answer
shape, a check does not read ``result["task"]["id"]``: it asks for the object that
carries the id it knows, a string matching the document's id pattern, the marker it
sent, or a value of the document's enum, wherever it sits (within a depth bound).
Every search returns ``Found`` items with their path, so a message can say where the
thing was found, and ``Search.looked_for`` says what was looked for when nothing was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from conformance.transport.http import json_excerpt

DEPTH = 8  # answers are untrusted: never walk deeper than this many containers


@dataclass(frozen=True)
class Found:
    """One hit: the value, the container holding it, and the path from the answer's root."""

    value: Any
    parent: Any
    path: tuple[str | int, ...]

    @property
    def where(self) -> str:
        return "/" + "/".join(str(p) for p in self.path) if self.path else "the answer's root"


def walk(answer: Any, depth: int = DEPTH) -> Iterator[Found]:
    """Every value of ``answer`` (itself first), breadth first: shallower hits come first."""
    level: list[Found] = [Found(answer, None, ())]
    for _ in range(depth + 1):
        below: list[Found] = []
        for found in level:
            yield found
            node = found.value
            if isinstance(node, dict):
                below += [Found(v, node, (*found.path, str(k))) for k, v in node.items()]
            elif isinstance(node, list):
                below += [Found(v, node, (*found.path, i)) for i, v in enumerate(node)]
        if not below:
            return
        level = below


def matching(answer: Any, test: Callable[[Any], bool], depth: int = DEPTH) -> list[Found]:
    return [f for f in walk(answer, depth) if _safe(test, f.value)]


def _safe(test: Callable[[Any], bool], value: Any) -> bool:
    try:
        return bool(test(value))
    except (TypeError, ValueError, KeyError, AttributeError):
        return False


def objects_holding(answer: Any, value: Any, depth: int = DEPTH) -> list[dict[str, Any]]:
    """The objects that carry ``value`` as one of their own values (an id the suite got
    back, a marker it sent), nearest the root first."""
    return [f.parent for f in walk(answer, depth)
            if isinstance(f.parent, dict) and f.value == value and _plain(value)]


def object_holding(answer: Any, value: Any, depth: int = DEPTH) -> dict[str, Any] | None:
    hits = objects_holding(answer, value, depth)
    return hits[0] if hits else None


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def strings(answer: Any, pattern: str | re.Pattern[str], depth: int = DEPTH) -> list[Found]:
    """Strings that match ``pattern`` (the document's pattern for an id, say) in full."""
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    return [f for f in walk(answer, depth) if isinstance(f.value, str) and rx.fullmatch(f.value)]


def with_marker(answer: Any, marker: str, depth: int = DEPTH) -> list[Found]:
    """Strings that contain ``marker`` (a unique text the suite sent)."""
    return [f for f in walk(answer, depth) if isinstance(f.value, str) and marker in f.value]


def enum_values(answer: Any, values: Any, depth: int = DEPTH) -> list[Found]:
    """Strings that are one of ``values`` (a value of the document's enum)."""
    allowed = set(values)
    return [f for f in walk(answer, depth) if isinstance(f.value, str) and f.value in allowed]


def value_beside(answer: Any, anchor: Any, test: Callable[[Any], bool], depth: int = DEPTH) -> Any:
    """In the object nearest the root that holds ``anchor`` (an id the suite knows), the
    first value (searched within that object) that passes ``test``; None when there is none."""
    for obj in objects_holding(answer, anchor, depth):
        for found in walk(obj, depth):
            if found.value is not anchor and found.value != anchor and _safe(test, found.value):
                return found.value
    return None


def lists_of(answer: Any, depth: int = DEPTH) -> list[list[Any]]:
    """Every list in the answer, nearest the root first (a listing may sit at any key)."""
    return [f.value for f in walk(answer, depth) if isinstance(f.value, list)]


def listing(answer: Any, ids: Any, depth: int = DEPTH) -> list[Any] | None:
    """The list whose items carry the most of ``ids`` (ids the suite created), or the
    first list when none does, or None when the answer holds no list at all."""
    wanted = set(ids)
    best: list[Any] | None = None
    best_score = -1
    for items in lists_of(answer, depth):
        score = sum(1 for item in items if any(v in wanted for v in _values(item, 3)))
        if score > best_score:
            best, best_score = items, score
    return best


def _values(node: Any, depth: int) -> Iterator[Any]:
    for found in walk(node, depth):
        if _plain(found.value):
            yield found.value


def holds(answer: Any, value: Any, depth: int = DEPTH) -> bool:
    """Whether ``value`` appears anywhere in the answer (as a value, not a key)."""
    return any(f.value == value for f in walk(answer, depth) if _plain(f.value))


def distinct(answer: Any, pattern: str | re.Pattern[str], depth: int = DEPTH) -> list[str]:
    """The distinct strings matching ``pattern`` in full, nearest the root first."""
    seen: list[str] = []
    for found in strings(answer, pattern, depth):
        if found.value not in seen:
            seen.append(found.value)
    return seen


def new_strings(answer: Any, pattern: str | re.Pattern[str], known: Any = (),
                depth: int = DEPTH) -> list[str]:
    """The strings of ``pattern`` the answer carries that are not ``known`` (what the
    request carried, ids the run holds): the ids the target made, nearest the root first."""
    known = set(known)
    return [value for value in distinct(answer, pattern, depth) if value not in known]


def nearest_enum(answer: Any, values: Any, depth: int = DEPTH) -> str | None:
    """The one value of ``values`` nearest the root (a history of earlier values sits
    deeper); None when there is none, or when the nearest ones disagree."""
    hits = enum_values(answer, values, depth)
    if not hits:
        return None
    nearest = {str(h.value) for h in hits if len(h.path) == len(hits[0].path)}
    return nearest.pop() if len(nearest) == 1 else None


def contains(answer: Any, value: Any, depth: int = DEPTH) -> bool:
    """Whether ``value`` (any JSON value: an object the check sent, say) is in the answer."""
    return any(found.value == value for found in walk(answer, depth))


def member(answer: Any, name: str, depth: int = DEPTH) -> Any:
    """The value of a member the document names, wherever the answer puts it: that of the
    shallowest object holding ``name``; None when none does."""
    for found in walk(answer, depth):
        if isinstance(found.value, dict) and name in found.value:
            return found.value[name]
    return None


def has_member(answer: Any, name: str, depth: int = DEPTH) -> bool:
    return any(isinstance(f.value, dict) and name in f.value for f in walk(answer, depth))


def members(answer: Any, name: str, depth: int = DEPTH) -> list[Any]:
    """The values of member ``name`` in every object of the answer, nearest first."""
    return [f.value for f in walk(answer, depth)
            if f.path and f.path[-1] == name and isinstance(f.parent, dict)]


def most(answer: Any, test: Callable[[Any], bool], depth: int = DEPTH) -> list[Any]:
    """The entries passing ``test`` of the list that holds most of them, in order (a
    listing may sit at any key and depth); [] when no list holds one."""
    best: list[Any] = []
    for items in lists_of(answer, depth):
        found = [i for i in items if _safe(test, i)]
        if len(found) > len(best):
            best = found
    return best


def ending_with(answer: Any, value: Any, other: Any = None, depth: int = DEPTH) -> list[Any] | None:
    """The list whose last entry carries ``value`` (a page's cursor names its last entry),
    one whose last entry does not carry ``other`` first; None for no value or no such list."""
    if not isinstance(value, str) or not value:
        return None
    found = [items for items in lists_of(answer, depth)
             if items and isinstance(items[-1], dict) and holds(items[-1], value)]
    found.sort(key=lambda items: isinstance(other, str) and bool(other) and holds(items[-1], other))
    return found[0] if found else None


def at(answer: Any, path: tuple[str | int, ...]) -> Any:
    """The value at ``path`` (as ``Found.path`` gives it), or None."""
    node = answer
    for step in path:
        if isinstance(node, dict):
            node = node.get(str(step))
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return None
    return node


def owners(answer: Any, marker: str, pattern: str | re.Pattern[str], depth: int = DEPTH) -> set[str]:
    """The ids (of ``pattern``) of the objects that carry ``marker``: from each string
    holding the marker up, the nearest enclosing container that holds exactly one such
    id (a listing holding several is above the item)."""
    out: set[str] = set()
    for found in with_marker(answer, marker, depth):
        for cut in range(len(found.path), -1, -1):
            held = distinct(at(answer, found.path[:cut]), pattern, depth)
            if len(held) == 1:
                out.add(held[0])
                break
            if len(held) > 1:
                break
    return out


def expanded(answer: Any) -> list[Any]:
    """The answer, and the JSON of each text block it carries (an MCP tool result may give
    its content only as text): search each of them."""
    out = [answer]
    content = answer.get("content") if isinstance(answer, dict) else None
    for block in content if isinstance(content, list) else []:
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str):
            try:
                out.append(json.loads(text))
            except ValueError:
                continue
    return out


@dataclass(frozen=True)
class Search:
    """What a check looked for, said in words for its message when nothing was found."""

    what: str
    where: str = "the answer"

    def looked_for(self, answer: Any = None) -> str:
        seen = f": {json_excerpt(answer)}" if answer is not None else ""
        return f"looked for {self.what} anywhere in {self.where} (depth {DEPTH}) and found none{seen}"
