"""Hypothesis strategies of instances valid against a document's schema: 2020-12
keywords rewritten for the generators, each oneOf/anyOf branch its own variant
(``split_unions``), custom formats, and the validator's verdict as the last filter."""

from __future__ import annotations

import base64
import copy
import json
from collections import deque
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any, TypeVar

from hypothesis import strategies as st

from conformance.documents.schemas import strip_annotations, validator_for
from conformance.generation.compiler import compile_schema

CUSTOM_FORMATS = {
    "uuid": st.uuids().map(str),
    "byte": st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode()),
    "binary": st.text(max_size=32),
    "int32": st.integers(-(2**31), 2**31 - 1).map(str),
}


# Keywords whose value is one subschema, a list of subschemas, or a name -> subschema map.
_SUB_ONE = ("items", "additionalItems", "additionalProperties", "unevaluatedProperties",
            "unevaluatedItems", "propertyNames", "contains", "not", "if", "then", "else")
_SUB_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUB_MAP = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
# Subschemas a union split must not reach into: splitting there changes the meaning.
_NO_SPLIT = ("not", "if", "then", "else", "contains", "propertyNames", "$defs", "definitions")


def _subschemas(schema: dict[str, Any]) -> list[tuple[tuple[Any, ...], Any]]:
    """(relative path, subschema) for every direct subschema of ``schema``, in key order.
    Only schema positions are visited, never ``enum``/``const``/``default`` values."""
    out: list[tuple[tuple[Any, ...], Any]] = []
    for key, value in schema.items():
        if key in _SUB_ONE and isinstance(value, dict | bool):
            out.append(((key,), value))
        elif key in ("items", *_SUB_LIST) and isinstance(value, list):
            out.extend(((key, i), sub) for i, sub in enumerate(value))
        elif key in _SUB_MAP and isinstance(value, dict):
            out.extend(((key, name), sub) for name, sub in value.items())
    return out


def _first_union(schema: Any, path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], str] | None:
    """Path to the first ``oneOf``/``anyOf`` in depth-first order, and its keyword.
    Unions under ``not``/``if``/``then``/``else``/``contains`` are left alone."""
    if not isinstance(schema, dict):
        return None
    for keyword in ("oneOf", "anyOf"):
        if isinstance(schema.get(keyword), list) and len(schema[keyword]) > 1:
            return path, keyword
    for rel, sub in _subschemas(schema):
        if rel[0] in _NO_SPLIT:
            continue
        found = _first_union(sub, path + rel)
        if found:
            return found
    return None


def split_unions(schema: dict[str, Any], limit: int = 64) -> list[dict[str, Any]]:
    """Split a schema into union-free variants, one per branch choice, up to ``limit``.

    Each ``oneOf``/``anyOf`` is replaced, one at a time and breadth first over the
    variants, by each of its branches merged with the keywords beside it. Generating
    from each variant is much faster than generating from the whole union. A ``oneOf``
    variant keeps a ``not`` of its sibling branches so that it still matches exactly one.
    When a further split would pass ``limit`` the variant is kept with its remaining
    unions. Every instance of a variant is an instance of ``schema``; the variants
    cover ``schema`` except that a union under ``items``/``additionalProperties``
    takes one branch for all the array's items (or all the extra properties)."""
    done: list[dict[str, Any]] = []
    todo = deque([schema])
    while todo:
        current = todo.popleft()
        found = _first_union(current)
        if found is None:
            done.append(current)
            continue
        path, keyword = found
        branches = _node(current, path)[keyword]
        if len(done) + len(todo) + len(branches) > max(limit, 1):
            done.append(current)
            continue
        for index, branch in enumerate(branches):
            variant = copy.deepcopy(current)
            node = _node(variant, path)
            others = [b for i, b in enumerate(node.pop(keyword)) if i != index]
            node.setdefault("allOf", []).append(copy.deepcopy(branch))
            if keyword == "oneOf" and others:
                node["allOf"].append({"not": {"anyOf": others}})
            todo.append(variant)
    return done


def _node(schema: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        schema = schema[key]
    return schema


def _for_generation(schema: Any) -> Any:
    """Rewrite 2019-09/2020-12 keywords hypothesis-jsonschema does not know into their
    draft-7 forms: ``dependentRequired``/``dependentSchemas`` -> ``dependencies``,
    ``prefixItems`` + ``items`` -> ``items`` (list) + ``additionalItems``."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SUB_ONE and isinstance(value, dict):
            out[key] = _for_generation(value)
        elif key in ("items", *_SUB_LIST) and isinstance(value, list):
            out[key] = [_for_generation(sub) for sub in value]
        elif key in _SUB_MAP and isinstance(value, dict):
            out[key] = {name: _for_generation(sub) for name, sub in value.items()}
        else:
            out[key] = value
    deps: dict[str, Any] = {}
    deps.update(out.pop("dependentSchemas", None) or {})
    deps.update(out.pop("dependentRequired", None) or {})
    if deps:
        deps.update(out.get("dependencies") or {})
        out["dependencies"] = deps
    if isinstance(out.get("prefixItems"), list):
        prefix = out.pop("prefixItems")
        if "items" in out:
            out["additionalItems"] = out.pop("items")
        out["items"] = prefix
    return out


S = TypeVar("S")


def once_per_schema(build: Callable[[dict[str, Any]], S]) -> Callable[[dict[str, Any]], S]:
    """``build(schema)`` once per schema's text for the process (the last 256 texts), on
    its own copy of the schema. A strategy built again for an equal schema (every round of
    a campaign) is new to hypothesis's bounded strategy cache, and so is every strategy
    built on it: that churned the cache and the allocator's arenas."""
    cached = lru_cache(maxsize=256)(lambda text: build(json.loads(text)))

    @wraps(build)
    def by_text(schema: dict[str, Any]) -> S:
        return cached(json.dumps(schema, sort_keys=True))

    return by_text


@once_per_schema
def _strategy(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    # compile_schema gives each oneOf/anyOf branch its own strategy (the per-branch
    # split) and falls back to hypothesis-jsonschema only for what it does not cover.
    strategy = compile_schema(_for_generation(schema), CUSTOM_FORMATS)
    # hypothesis-jsonschema reads schemas as draft 7 and its formats and regexes differ
    # in corners from jsonschema's; keep only what the 2020-12 validator accepts.
    return strategy.filter(validator_for(schema).is_valid)


def strategy_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A hypothesis strategy of instances valid (by ``validator_for``) against an
    already-inlined schema."""
    return _strategy(strip_annotations(schema))
