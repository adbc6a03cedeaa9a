"""Fast strategies for the common subset of JSON Schema.

hypothesis-jsonschema re-derives object strategies on every draw, which costs about
0.3 s per Bindu message/send example. Here a schema is compiled once into plain
hypothesis strategies (fixed_dictionaries, lists, sampled_from, ...). Anything
outside the subset is handed to hypothesis-jsonschema, and every drawn value is
checked against the schema, so what comes out is always valid."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import strategies as st

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=12))
FREE_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)

_HANDLED = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "format",
    "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "oneOf", "anyOf",
    "allOf", "pattern", "default", "$schema", "$id", "$comment", "nullable", "maxProperties", "uniqueItems",
    "propertyNames",
}


class Unsupported(Exception):
    pass


_REPEATED = re.compile(r"\^(\[[^\]]+\])(?:([+*])|\{(\d+)(?:,(\d*))?\})\$")


def _repeated_class(pattern: str, low: int, high: int | None) -> st.SearchStrategy[str] | None:
    """``^[class]+$`` (or ``*``, ``{n,m}``) with length bounds, drawn at a length inside both
    (filtering regex draws by length rarely finds a 64-character one)."""
    match = _REPEATED.fullmatch(pattern)
    if match is None:
        return None
    cls, star, n, m = match.groups()
    q_low, q_high = (1 if star == "+" else 0, None) if star else (int(n), int(m) if m else (None if m == "" else int(n)))
    lo, hi = max(low, q_low), min(x for x in (high, q_high) if x is not None) if (high, q_high) != (None, None) else None
    if hi is not None and hi < lo:
        return None
    return st.text(alphabet=st.from_regex(f"^{cls}$", fullmatch=True), min_size=lo, max_size=hi)


def compile_schema(schema: Any, formats: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Compile ``schema`` (refs inlined, annotations stripped); a subschema outside the
    subset is handed to hypothesis-jsonschema on its own."""
    try:
        return _compile(schema, formats)
    except Unsupported:
        from hypothesis_jsonschema import from_schema

        return from_schema(schema, custom_formats=formats)


def _compile(schema: Any, formats: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    if schema is True or schema == {}:
        return FREE_JSON
    if schema is False or not isinstance(schema, dict):
        raise Unsupported("false schema")
    if set(schema) - _HANDLED:
        raise Unsupported(f"keywords {sorted(set(schema) - _HANDLED)}")
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "allOf" in schema:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            if not isinstance(part, dict) or set(part) & set(merged) - {"type"}:
                raise Unsupported("overlapping allOf")
            merged.update(part)
        return compile_schema(merged, formats)
    for union in ("oneOf", "anyOf"):
        if union in schema:
            rest = {k: v for k, v in schema.items() if k != union}
            return st.one_of([compile_schema({**rest, **b} if isinstance(b, dict) else b, formats) for b in schema[union]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([compile_schema({**schema, "type": k}, formats) for k in kind])
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema, formats)
    if kind == "array":
        items = compile_schema(schema.get("items", True), formats)
        size = {"min_size": schema.get("minItems", 0), "max_size": min(schema.get("maxItems", 4), max(4, schema.get("minItems", 0)))}
        if schema.get("uniqueItems"):
            return st.lists(items, unique_by=lambda item: json.dumps(item, sort_keys=True), **size)
        return st.lists(items, **size)
    if kind == "string":
        if "format" in schema:
            if schema["format"] not in formats or len(schema) > 2:
                raise Unsupported(f"format {schema['format']}")
            return formats[schema["format"]]
        if "pattern" in schema:
            if set(schema) - {"type", "pattern", "minLength", "maxLength"}:
                raise Unsupported("pattern with other keywords")
            low, high = schema.get("minLength", 0), schema.get("maxLength")
            repeated = _repeated_class(schema["pattern"], low, high)
            if repeated is not None:
                return repeated
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda text: low <= len(text) and (high is None or len(text) <= high))
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", max(20, schema.get("minLength", 0))))
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind is None:
        return FREE_JSON
    raise Unsupported(f"type {kind}")


def _object(schema: dict[str, Any], formats: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    fixed = {name: compile_schema(props.get(name, True), formats) for name in required}
    optional = {name: compile_schema(sub, formats) for name, sub in props.items() if name not in required}
    base = st.fixed_dictionaries(fixed, optional=optional)
    extra = schema.get("additionalProperties", True)
    if extra is False:
        return _at_most(base, schema.get("maxProperties"), required)
    extra_values = FREE_JSON if extra is True else compile_schema(extra, formats)
    named = compile_schema({"type": "string", **schema["propertyNames"]}, formats) if "propertyNames" in schema else st.text(min_size=1, max_size=10)
    names = named.filter(lambda n: n not in props)
    extras = st.dictionaries(names, extra_values, max_size=2 if props else 3)
    return _at_most(st.tuples(base, extras).map(lambda pair: {**pair[1], **pair[0]}), schema.get("maxProperties"), required)


def _at_most(strategy: st.SearchStrategy[dict[str, Any]], most: int | None, required: set[str]) -> st.SearchStrategy[Any]:
    """maxProperties: optional properties beyond the bound are dropped (required ones stay)."""
    if most is None:
        return strategy

    def trim(value: dict[str, Any]) -> dict[str, Any]:
        optional = [k for k in value if k not in required]
        drop = set(optional[: max(len(value) - most, 0)])
        return {k: v for k, v in value.items() if k not in drop}

    return strategy.map(trim)
