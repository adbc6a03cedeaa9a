"""Fast strategies for the common subset of JSON Schema.

hypothesis-jsonschema re-derives object strategies on every draw, which costs about
0.3 s per Bindu message/send example. Here a schema is compiled once into plain
hypothesis strategies (fixed_dictionaries, lists, sampled_from, ...). Anything
outside the subset is handed to hypothesis-jsonschema, and every drawn value is
checked against the schema, so what comes out is always valid."""

from __future__ import annotations

import functools
import json
import math
import re
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st


def one_of(branches: list[st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """``st.one_of`` by a drawn branch index. hypothesis's own builds a filtered
    ``sampled_from`` of its branches on every draw and looks up the filter's call
    site on the stack: a sixth of a Bindu run's time. The index shrinks to the first
    branch, as ``st.one_of`` does."""
    if len(branches) == 1:
        return branches[0]

    @st.composite
    def pick(draw: Any) -> Any:
        return draw(branches[draw(index_of(len(branches)))])

    return pick()


@functools.cache
def index_of(count: int) -> st.SearchStrategy[int]:
    """An index into ``count`` choices, one strategy per count (a strategy built during
    a draw costs hypothesis its property checks again)."""
    return st.integers(0, count - 1)


_SCALARS = (st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=12))
_KEY = st.text(max_size=8)
_KIND = st.integers(0, len(_SCALARS) + 1)  # a scalar, a list or an object
_SIZE = st.integers(0, 3)


def _free(draw: Any, leaves: list[int]) -> Any:
    """Any JSON value with at most ``leaves[0]`` scalars in all (what ``st.recursive``
    with max_leaves gives, without its nested ``one_of`` strategies on every draw).
    Called only while a leaf is left."""
    kind = draw(_KIND)
    if kind < len(_SCALARS):
        leaves[0] -= 1
        return draw(_SCALARS[kind])
    size = draw(_SIZE)
    if kind == len(_SCALARS):
        return [_free(draw, leaves) for _ in range(size) if leaves[0] > 0]
    return {draw(_KEY): _free(draw, leaves) for _ in range(size) if leaves[0] > 0}


FREE_JSON = st.composite(lambda draw: _free(draw, [6]))()

_HANDLED = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "format",
    "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "oneOf", "anyOf",
    "allOf", "pattern", "default", "$schema", "$id", "$comment", "nullable", "maxProperties", "uniqueItems",
    "propertyNames", "dependencies", "exclusiveMinimum", "exclusiveMaximum",
}

# standard formats drawn here (hypothesis-jsonschema builds them through regexes); every
# value is checked against the schema afterwards, jsonschema's format checkers included
_FORMATS: dict[str, st.SearchStrategy[str]] = {
    "date-time": st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1),
                              timezones=st.just(UTC)).map(lambda d: d.isoformat().replace("+00:00", "Z")),
    "uri": st.builds("https://example.com/{}".format,
                     st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-/", max_size=16)),
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
    q_low, q_high = ((1 if star == "+" else 0, None) if star
                     else (int(n), int(m) if m else (None if m == "" else int(n))))
    lo, hi = (max(low, q_low),
              min(x for x in (high, q_high) if x is not None) if (high, q_high) != (None, None) else None)
    if hi is not None and hi < lo:
        return None
    alphabet = _class_alphabet(cls)
    return st.text(alphabet=alphabet or st.from_regex(f"^{cls}$", fullmatch=True), min_size=lo, max_size=hi)


@functools.cache
def _class_alphabet(cls: str) -> str | None:
    """The characters of a small regex class, listed once (drawing each character of a
    64-character string through ``from_regex`` costs about half a millisecond); None for a
    large or negated class, drawn through the regex."""
    matcher = re.compile(cls)
    chars = [c for c in map(chr, range(0x10000)) if matcher.fullmatch(c)]
    return "".join(chars) if 0 < len(chars) <= 1024 else None


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
            branches = [_merged(rest, b) for b in schema[union]]
            if union == "oneOf":
                branches = [_without_others(b, schema[union]) for b in branches]
            return one_of([compile_schema(b, formats) for b in branches])
    kind = schema.get("type")
    if isinstance(kind, list):
        return one_of([compile_schema({**schema, "type": k}, formats) for k in kind])
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema, formats)
    if kind == "array":
        items = compile_schema(schema.get("items", True), formats)
        size = {"min_size": schema.get("minItems", 0),
                "max_size": min(schema.get("maxItems", 4), max(4, schema.get("minItems", 0)))}
        if schema.get("uniqueItems"):
            return st.lists(items, unique_by=lambda item: json.dumps(item, sort_keys=True), **size)
        return st.lists(items, **size)
    if kind == "string":
        if "format" in schema:
            known = (formats[schema["format"]] if schema["format"] in formats
                     else _FORMATS.get(schema["format"]))
            if known is None or set(schema) - {"type", "format", "minLength", "maxLength"}:
                raise Unsupported(f"format {schema['format']}")
            low, high = schema.get("minLength", 0), schema.get("maxLength")
            return known if (low, high) == (0, None) else known.filter(
                lambda t: low <= len(t) and (high is None or len(t) <= high))
        if "pattern" in schema:
            if set(schema) - {"type", "pattern", "minLength", "maxLength"}:
                raise Unsupported("pattern with other keywords")
            low, high = schema.get("minLength", 0), schema.get("maxLength")
            repeated = _repeated_class(schema["pattern"], low, high)
            if repeated is not None:
                return repeated
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda text: low <= len(text) and (high is None or len(text) <= high))
        return st.text(min_size=schema.get("minLength", 0),
                       max_size=schema.get("maxLength", max(20, schema.get("minLength", 0))))
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(schema.get("exclusiveMinimum"), (int, float)):
            low = max(x for x in (low, math.floor(schema["exclusiveMinimum"]) + 1) if x is not None)
        if isinstance(schema.get("exclusiveMaximum"), (int, float)):
            high = min(x for x in (high, math.ceil(schema["exclusiveMaximum"]) - 1) if x is not None)
        return st.integers(low, high)
    if kind == "number":
        if any(isinstance(schema.get(k), bool) for k in ("exclusiveMinimum", "exclusiveMaximum")):
            raise Unsupported("draft-4 boolean exclusive bounds")
        low, high = (schema.get("exclusiveMinimum", schema.get("minimum")),
                     schema.get("exclusiveMaximum", schema.get("maximum")))
        return st.floats(low, high, allow_nan=False, allow_infinity=False,
                         exclude_min="exclusiveMinimum" in schema, exclude_max="exclusiveMaximum" in schema)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind is None:
        return FREE_JSON
    raise Unsupported(f"type {kind}")


def _object(schema: dict[str, Any], formats: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    props = schema.get("properties", {})
    # in the document's order, never a set's: the draw order (and so what a seed sends)
    # must not depend on the process's string hash seed
    required = list(dict.fromkeys(schema.get("required", [])))
    fixed = {name: compile_schema(props.get(name, True), formats) for name in required}
    optional = {name: compile_schema(sub, formats) for name, sub in props.items() if name not in required}
    base = st.fixed_dictionaries(fixed, optional=optional)
    dependents = schema.get("dependencies") or {}
    if dependents:
        if not all(isinstance(names, list) for names in dependents.values()) or "maxProperties" in schema:
            raise Unsupported("dependencies with schemas, or with maxProperties")
        base = _with_dependents(base, dependents, {**optional, **fixed}, formats, props)
    extra = schema.get("additionalProperties", True)
    if extra is False:
        return _at_most(base, schema.get("maxProperties"), required)
    extra_values = FREE_JSON if extra is True else compile_schema(extra, formats)
    named = (compile_schema({"type": "string", **schema["propertyNames"]}, formats)
             if "propertyNames" in schema else st.text(min_size=1, max_size=10))
    names = named.filter(lambda n: n not in props)
    extras = st.dictionaries(names, extra_values, max_size=2 if props else 3)
    return _at_most(st.tuples(base, extras).map(lambda pair: {**pair[1], **pair[0]}),
                    schema.get("maxProperties"), required)


def _with_dependents(base: st.SearchStrategy[dict[str, Any]], dependents: dict[str, list[str]],
                     drawn: dict[str, st.SearchStrategy[Any]], formats: dict[str, st.SearchStrategy[Any]],
                     props: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """dependentRequired: a property present brings the ones it names, each drawn from its
    own schema (filtering whole objects for it would reject most of them)."""
    @st.composite
    def draw(draw_value: Any) -> dict[str, Any]:
        value = dict(draw_value(base))
        pending = [key for key in dependents if key in value]
        while pending:
            for name in dependents[pending.pop()]:
                if name not in value:
                    value[name] = draw_value(drawn[name] if name in drawn
                                             else compile_schema(props.get(name, True), formats))
                    pending += [name] if name in dependents else []
        return value
    return draw()


def _merged(around: dict[str, Any], branch: Any) -> Any:
    """A union's branch together with the schema around it (both apply): properties joined
    by name, required lists joined; any other clash becomes an allOf."""
    if not isinstance(branch, dict):
        return branch
    out, clash = dict(around), {}
    for key, value in branch.items():
        if key not in out or out[key] == value:
            out[key] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {**out[key],
                        **{name: _both(out[key].get(name, True), sub) for name, sub in value.items()}}
        elif key == "required":
            out[key] = list(dict.fromkeys([*out[key], *value]))
        else:
            clash[key] = value
    return {"allOf": [out, clash]} if clash else out


def _both(a: Any, b: Any) -> Any:
    if a is True or a == {} or a == b:
        return b
    if b is True or b == {}:
        return a
    return {"allOf": [a, b]}


def _without_others(branch: Any, branches: list[Any]) -> Any:
    """oneOf: a branch does not draw the properties that only the other branches require
    (with them an instance would match two branches: "exactly one of" schemas)."""
    if not isinstance(branch, dict) or not isinstance(branch.get("properties"), dict):
        return branch
    own = set(branch.get("required", []))
    others = {name for b in branches if isinstance(b, dict) for name in b.get("required", [])} - own
    return {**branch, "properties": {k: v for k, v in branch["properties"].items() if k not in others}}


def _at_most(strategy: st.SearchStrategy[dict[str, Any]], most: int | None,
             required: list[str]) -> st.SearchStrategy[Any]:
    """maxProperties: optional properties beyond the bound are dropped (required ones stay)."""
    if most is None:
        return strategy

    def trim(value: dict[str, Any]) -> dict[str, Any]:
        optional = [k for k in value if k not in required]
        drop = set(optional[: max(len(value) - most, 0)])
        return {k: v for k, v in value.items() if k not in drop}

    return strategy.map(trim)
