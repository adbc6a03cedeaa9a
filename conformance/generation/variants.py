"""Valid inputs in batches: one instance drawn from the schema, then cheap variants of it
that are still valid (a member left out, an item dropped or repeated, a value taken from
elsewhere in the instance, a number moved, a flag turned).

Why: drawing a schema-valid instance with hypothesis-jsonschema cost 5 to 7 ms of CPU on
the Canon schemas (patterns, formats, nested objects), against under a millisecond for
the exchange that sends it. A campaign (budget ``campaign``) judges a batch of inputs per
generated example; drawn from ``valid_batches``, the batch is the drawn instance and its
variants, so the draw is paid once per batch. Every variant is judged valid by the same
compiled validator as everything else before it is offered, and all of it is a function
of hypothesis's draws, so a seed gives the same batch and a failing batch shrinks to the
one input that fails."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from conformance.documents.schemas import validator_for
from conformance.generation.compiler import index_of
from conformance.generation.strategies import once_per_schema, strategy_for

MAX_VARIANTS = 24  # per drawn instance: enough for a batch, bounded work per draw

Path = tuple[Any, ...]


def _leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every node of a JSON value with its path, parents first."""
    yield path, value
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _leaves(inner, (*path, index))


def _set(node: Any, path: Path, value: Any) -> Any:
    """``node`` with the value at ``path`` replaced (copies only along the path)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    out: Any = list(node) if isinstance(node, list) else dict(node)
    out[head] = _set(node[head], rest, value)
    return out


def _edits(instance: Any) -> Iterator[tuple[Path, Any]]:
    """Small changes of ``instance``, as (path, new value of the node there), in a fixed
    order: the walk's, each node's own changes first."""
    nodes = list(_leaves(instance))
    by_type: dict[type, list[Any]] = {}
    for _, value in nodes:
        if not isinstance(value, dict | list):
            by_type.setdefault(type(value), []).append(value)
    for path, value in nodes:
        if isinstance(value, dict):
            for key in value:
                yield path, {k: v for k, v in value.items() if k != key}  # a member left out
        elif isinstance(value, list) and value:
            yield path, value[1:]  # an item dropped
            yield path, [*value, value[-1]]  # an item repeated
        elif isinstance(value, bool):
            yield path, not value
        elif isinstance(value, int | float):
            yield path, value + 1
            yield path, -value
            yield path, 0
        for other in by_type.get(type(value), ()):  # a value found elsewhere in the instance
            if other != value:
                yield path, other
                break
        if isinstance(value, str) and value:
            yield path, value + value[:1]  # a string one character longer


def variants(schema: dict[str, Any], instance: Any, limit: int = MAX_VARIANTS) -> list[Any]:
    """``instance`` (valid against ``schema``) and up to ``limit`` valid variants of it,
    distinct, in a fixed order."""
    judge = validator_for(schema)
    out, seen = [instance], {repr(instance)}
    for path, value in _edits(instance):
        if len(out) > limit:
            break
        candidate = _set(instance, path, value)
        key = repr(candidate)
        if key in seen:
            continue
        seen.add(key)
        if judge.is_valid(candidate):
            out.append(candidate)
    return out


@once_per_schema
def valid_batches(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """One valid input, picked by a drawn index among an instance drawn with
    ``strategy_for(schema)`` and its variants; the instance and its variants are drawn once
    per generated example and shared by every pick of it (a batch of the campaign budget),
    which takes the first one from the index on that no earlier pick took, while there is
    one (distinct inputs: a repeated one is not judged again). Index 0 is the drawn
    instance itself, where shrinking leads.

    Built once per schema's text (``once_per_schema``), as ``strategy_for``."""
    root = validator_for(schema)

    def pool_of(drawn: Any) -> tuple[list[Any], set[int]]:
        return variants(schema, drawn), set()  # the inputs, the indexes picks took

    pool = st.shared(strategy_for(schema).filter(root.is_valid).map(pool_of),
                     key=f"variants of schema {id(schema)}")

    @st.composite
    def pick(draw: Any) -> Any:
        found, taken = draw(pool)
        start = draw(index_of(len(found)))
        index = next((i for i in (*range(start, len(found)), *range(start)) if i not in taken), start)
        taken.add(index)
        return found[index]

    return pick()
