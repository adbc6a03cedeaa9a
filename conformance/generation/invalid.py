"""Schema-aware invalid inputs: take a valid instance of an (inlined) schema and break
exactly one keyword of it, labelled with where the break is and which keyword it breaks.
Beside each keyword of a node, the composition: an instance matching none of a
``oneOf``'s or ``anyOf``'s branches and one matching two of a ``oneOf``'s, one that
matches what a ``not`` forbids, and a ``dependentRequired`` member left out (or its
trigger added without it), each still holding everything else about its node.

Every candidate is checked with the same validator the rest of the tool uses
(``validator_for``: Draft 2020-12 plus the installed format checkers) against the ROOT
schema before it is returned, so a break that another branch of a union absorbs is
dropped rather than reported as invalid."""

from __future__ import annotations

import json
import math
import re
import re._parser as re_parser
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from conformance.documents.compiled import FORMAT_CHECKER
from conformance.documents.schemas import validator_for
from conformance.generation.compiler import index_of
from conformance.generation.strategies import once_per_schema, strategy_for

__all__ = ["BreakSource", "InvalidInstance", "Violation", "at", "example_breaks", "fullest",
           "invalid_strategy", "made_breaks", "mutations", "path_exists", "schema_breaks", "schema_examples",
           "small_example"]


@dataclass(frozen=True)
class Violation:
    """``pointer`` is a JSON pointer into the instance ("" = root); for a dropped property
    it names the property that is gone, so its parent resolves. ``keyword`` is the
    schema keyword broken; ``description`` one line for a report."""

    pointer: str
    keyword: str
    description: str


@dataclass(frozen=True)
class InvalidInstance:
    instance: Any
    violation: Violation
    # the valid instance it breaks: the same request without the break (one per drawn
    # instance, shared by its breaks: not in the repr, which keys a batch's picks)
    base: Any = field(default=None, repr=False)


_MISSING: Any = object()
Path = tuple[Any, ...]

# ---------------------------------------------------------------- validators (cached)

@lru_cache(maxsize=2048)
def _validator_json(schema_json: str) -> Any:
    return validator_for(json.loads(schema_json))


def _small_validator(schema: dict[str, Any]) -> Any:
    """Validator of a small schema built here on the fly: cached by its JSON text."""
    return _validator_json(json.dumps(schema, sort_keys=True, default=str))


def _valid(schema: Any, instance: Any) -> bool:
    """``validator_for(schema).is_valid``, with ``True`` and ``False`` schemas answered here."""
    if schema is True or schema == {}:
        return True
    if schema is False:
        return False
    return bool(validator_for(schema).is_valid(instance))


# ---------------------------------------------------------------- small helpers


def _pointer(path: Path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _name(path: Path) -> str:
    if not path:
        return "value"
    if isinstance(path[-1], int):
        return f"{path[-2] if len(path) > 1 else ''}[{path[-1]}]"
    return str(path[-1])


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_allowed(value: Any, allowed: list[str]) -> bool:
    kind = _json_type(value)
    return kind in allowed or (kind == "integer" and "number" in allowed)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _replace(node: Any, path: Path, value: Any) -> Any:
    """``node`` with the value at ``path`` replaced; copies only along the path."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, list):
        out_list = list(node)
        out_list[head] = _replace(node[head], rest, value)
        return out_list
    out = dict(node)
    out[head] = _replace(node[head], rest, value)
    return out


def _tidy(number: Any, like: Any) -> Any:
    """Keep an integer instance an integer when the arithmetic produced ``n.0``."""
    if isinstance(number, float) and number.is_integer() and isinstance(like, int) and abs(number) < 2**53:
        return int(number)
    return number


_STRING_KEYS = ("type", "minLength", "maxLength", "pattern", "format")
_NUMBER_KEYS = ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_ARRAY_KEYS = ("type", "minItems", "maxItems", "uniqueItems")


def _siblings(schema: dict[str, Any], family: tuple[str, ...], broken: str) -> dict[str, Any]:
    return {k: schema[k] for k in family if k in schema and k != broken}


def _pick(candidates: list[Any], breaks: Any, keeps: dict[str, Any]) -> Any:
    """First candidate that breaks the keyword and keeps its siblings; else the first
    that breaks it; else ``_MISSING``."""
    keep = _small_validator(keeps) if keeps else None
    fallback = _MISSING
    for candidate in candidates:
        if not breaks(candidate):
            continue
        if keep is None or keep.is_valid(candidate):
            return candidate
        if fallback is _MISSING:
            fallback = candidate
    return fallback


# Strings each format checker rejects (verified against the checker before use).
_BAD_FORMATS: dict[str, list[str]] = {
    "uuid": ["not-a-uuid", "00000000-0000-0000-0000-00000000000g", "0" * 32],
    "date-time": ["not-a-date-time", "2024-13-45T25:61:61Z", "2024-01-01 00:00:00"],
    "date": ["2024-13-45", "not-a-date", "20240101"],
    "time": ["25:61:61", "not-a-time"],
    "email": ["no-at-sign", "no-at-sign.example.com"],
    "idn-email": ["no-at-sign"],
    "uri": ["not a uri", "//no-scheme", ":"],
    "uri-reference": ["\\\\not a uri reference"],
    "iri": ["not an iri"],
    "ipv4": ["999.1.1.1", "1.2.3", "not-an-ip"],
    "ipv6": ["::g", "not-an-ipv6"],
    "hostname": ["-bad-.example", "bad_host!"],
    "idn-hostname": ["-bad-", "bad host"],
    "regex": ["(", "[unclosed"],
    "json-pointer": ["no-leading-slash"],
    "duration": ["P1Y2X"],
}


# ---------------------------------------------------------------- deterministic examples

_GOOD_FORMATS = {
    "uuid": "00000000-0000-4000-8000-000000000000",
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "a@example.com",
    "uri": "https://example.com/",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "hostname": "example.com",
}


def _flatten(schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """Shallow merge of a schema and its ``allOf`` (properties merged, required joined)."""
    out: dict[str, Any] = {}
    parts = [schema, *[s for s in schema.get("allOf", []) if isinstance(s, dict)]]
    for part in parts:
        if part is not schema and depth < 4:
            part = _flatten(part, depth + 1)
        for key, value in part.items():
            if key == "allOf":
                continue
            if key == "properties" and key in out:
                merged = dict(out[key])
                for name, sub in value.items():
                    merged[name] = {"allOf": [merged[name], sub]} if name in merged else sub
                out[key] = merged
            elif key == "required" and key in out:
                out[key] = list(dict.fromkeys([*out[key], *value]))
            else:
                out.setdefault(key, value)
    return out


def _build(schema: Any, depth: int) -> Any:
    if schema is True:
        return "x"
    if not isinstance(schema, dict) or depth > 8:
        return _MISSING
    if not schema:
        return "x"
    if "allOf" in schema:
        schema = _flatten(schema)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for union in ("oneOf", "anyOf"):
        if isinstance(schema.get(union), list):
            rest = {k: v for k, v in schema.items() if k != union}
            for branch in schema[union]:
                value = _build({"allOf": [rest, branch]}, depth + 1)
                if value is not _MISSING and _small_validator({"allOf": [rest, branch]}).is_valid(value):
                    return value
            return _MISSING
    types = schema.get("type")
    if isinstance(types, str):
        types = [types]
    if not types:
        if "properties" in schema or "required" in schema:
            types = ["object"]
        elif "items" in schema or "prefixItems" in schema:
            types = ["array"]
        elif any(k in schema for k in ("minLength", "maxLength", "pattern", "format")):
            types = ["string"]
        elif any(k in schema for k in _NUMBER_KEYS[1:]):
            types = ["number"]
        else:
            return "x"
    kind = types[0]
    if kind == "object":
        props = schema.get("properties", {})
        out: dict[str, Any] = {}
        for name in schema.get("required", []):
            value = _build(props.get(name, True), depth + 1)
            if value is _MISSING:
                return _MISSING
            out[name] = value
        for name, sub in props.items():
            if len(out) >= schema.get("minProperties", 0):
                break
            if name not in out and (value := _build(sub, depth + 1)) is not _MISSING:
                out[name] = value
        return out
    if kind == "array":
        prefix = schema.get("prefixItems", [])
        items = [_build(sub, depth + 1) for sub in prefix]
        need = max(0, schema.get("minItems", 0) - len(items))
        if need:
            item = _build(schema.get("items", True), depth + 1)
            items.extend([item] * need)
        return _MISSING if any(i is _MISSING for i in items) else items
    if kind == "string":
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        if schema.get("format") in _GOOD_FORMATS:
            return _GOOD_FORMATS[schema["format"]]
        candidates = ["x" * max(low, 1), "a", "0", "A", "example", "a" * max(low, 1), "0" * max(low, 1)]
        fitting = [c for c in candidates if len(c) >= low and (high is None or len(c) <= high)] or [""]
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            matching = [c for c in fitting if _small_validator({"pattern": pattern}).is_valid(c)]
            return matching[0] if matching else _MISSING
        return fitting[0]
    if kind in ("integer", "number"):
        number: Any = 0
        if "minimum" in schema:
            number = max(number, schema["minimum"]) if "maximum" not in schema else schema["minimum"]
        if "exclusiveMinimum" in schema and _is_number(schema["exclusiveMinimum"]):
            number = math.floor(schema["exclusiveMinimum"]) + 1
        if "maximum" in schema and number > schema["maximum"]:
            number = schema["maximum"]
        if "exclusiveMaximum" in schema and _is_number(schema["exclusiveMaximum"]):
            if number >= schema["exclusiveMaximum"]:
                number = math.ceil(schema["exclusiveMaximum"]) - 1
        step = schema.get("multipleOf")
        if _is_number(step) and step > 0:
            number = math.ceil(number / step) * step
        return _tidy(number, 0) if kind == "integer" else number
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _MISSING


def _example(schema: Any) -> Any:
    """A small deterministic instance of ``schema``, or ``_MISSING`` if none is found."""
    value = _build(schema, 0)
    if value is _MISSING:
        return _MISSING
    ok = _valid(schema, value) if isinstance(schema, bool) else _small_validator(schema).is_valid(value)
    return value if ok else _MISSING


# ---------------------------------------------------------------- the walk


class _Walk:
    """Walks schema and instance together and collects (path, new value, violation)."""

    def __init__(self) -> None:
        self.found: list[tuple[Path, Any, Violation, tuple[Any, Path]]] = []
        self.anchor: tuple[Any, Path] = (True, ())

    def emit(self, path: Path, value: Any, keyword: str, description: str,
             pointer: str | None = None) -> None:
        if value is _MISSING:
            return
        violation = Violation(_pointer(path) if pointer is None else pointer, keyword, description)
        self.found.append((path, value, violation, self.anchor))

    def walk(self, schema: Any, inst: Any, path: Path, anchor: tuple[Any, Path] | None = None) -> None:
        """``anchor`` is the deepest node above that every instance of the root must satisfy
        at its path: None while the descent is conjunctive (properties, items, allOf), the
        node holding the first ``oneOf``/``anyOf``/``dependentSchemas`` passed through after.
        A candidate invalid at its anchor is invalid at the root."""
        if not isinstance(schema, dict) or not schema:
            return
        saved = self.anchor
        self.anchor = anchor or (schema, path)
        self._node(schema, inst, path, anchor)
        self.anchor = saved

    def _node(self, schema: dict[str, Any], inst: Any, path: Path, anchor: tuple[Any, Path] | None) -> None:
        self._type(schema, inst, path)
        self._enum_const(schema, inst, path)
        if isinstance(inst, str):
            self._string(schema, inst, path)
        elif _is_number(inst):
            self._number(schema, inst, path)
        elif isinstance(inst, list):
            self._array(schema, inst, path)
        elif isinstance(inst, dict):
            self._object(schema, inst, path)
        for sub in schema.get("allOf", []) if isinstance(schema.get("allOf"), list) else []:
            self.walk(sub, inst, path, anchor)
        for union in ("oneOf", "anyOf"):
            branches = schema.get(union)
            if not isinstance(branches, list):
                continue
            matching = [b for b in branches if _valid(b, inst)]
            if matching and (union == "anyOf" or len(matching) == 1):
                self._none_of(schema, union, branches, matching, inst, path)
            if union == "oneOf" and len(matching) == 1:
                self._one_of(schema, branches, matching[0], inst, path)
            for branch in matching:
                self.walk(branch, inst, path, anchor or (schema, path))
        if "not" in schema:
            self._not(schema, inst, path)
        if isinstance(inst, dict):
            for trigger, sub in (schema.get("dependentSchemas") or {}).items():
                if trigger in inst:
                    self.walk(sub, inst, path, anchor or (schema, path))
            self._children_of_object(schema, inst, path, anchor)
        elif isinstance(inst, list):
            self._children_of_array(schema, inst, path, anchor)

    # -- keywords any instance can break

    def _type(self, schema: dict[str, Any], inst: Any, path: Path) -> None:
        types = schema.get("type")
        if types is None:
            return
        allowed = [types] if isinstance(types, str) else list(types)
        naturals: dict[str, list[Any]] = {
            "string": [12345],
            "integer": [str(inst), 0.5],
            "number": [str(inst)],
            "boolean": ["true" if inst else "false"],
            "null": ["null"],
            "array": [{"items": inst} if inst else {}],
            "object": [[inst]],
        }
        natural = naturals[_json_type(inst)]
        pool = [*natural, "x", 12345, 0.5, True, None, [], {}]
        wrong = [v for v in pool if not _type_allowed(v, allowed)]
        picks = wrong[:1] + ([None] if None in wrong and wrong[:1] != [None] else [])
        for value in picks:
            self.emit(path, value, "type", f"{_name(path)}={_short(value)} ({_json_type(value)}) where type "
                                           f"{'/'.join(allowed)} is required")

    def _enum_const(self, schema: dict[str, Any], inst: Any, path: Path) -> None:
        if "const" in schema:
            const = schema["const"]
            other = _other_value(const)
            self.emit(path, other, "const", f"{_name(path)}={_short(other)} instead of const {_short(const)}")
        enum = schema.get("enum")
        if isinstance(enum, list):
            check = _small_validator({"enum": enum})
            candidates: list[Any] = []
            if isinstance(inst, str):
                candidates += [inst + "-invalid", "invalid-enum-value", inst.upper() + "X", ""]
            elif _is_number(inst):
                numbers = [e for e in enum if _is_number(e)]
                candidates += [max(numbers, default=inst) + 1, inst + 0.5]
            candidates += [_other_value(inst), "__not_in_enum__", None, 0, False]
            for candidate in candidates:
                if not check.is_valid(candidate):
                    self.emit(path, candidate, "enum",
                              f"{_name(path)}={_short(candidate)} not one of {_short(enum, 60)}")
                    break

    # -- strings

    def _string(self, schema: dict[str, Any], inst: str, path: Path) -> None:
        name = _name(path)
        high = schema.get("maxLength")
        if isinstance(high, int):
            fillers = [inst[-1:] or "a", "a", "0", "x", "-"]
            candidates = [inst + f * (high + 1 - len(inst)) for f in fillers]
            value = _pick(candidates, lambda s: len(s) > high, _siblings(schema, _STRING_KEYS, "maxLength"))
            self.emit(path, value, "maxLength", f"{name} of length {high + 1} above maxLength {high}")
        low = schema.get("minLength")
        if isinstance(low, int) and low > 0:
            value = inst[: low - 1]
            self.emit(path, value, "minLength", f"{name} of length {len(value)} below minLength {low}")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                matches = re.compile(pattern).search
            except re.error:
                matches = None
            if matches is not None:
                candidates = [inst + "!", "!" + inst, inst + " ", "", " ", "~!@#$%^&*()", "\n", "0", "a", "A",
                              "-", "é"]
                value = _pick(candidates, lambda s: not matches(s),
                              _siblings(schema, _STRING_KEYS, "pattern"))
                self.emit(path, value, "pattern",
                          f"{name}={_short(value)} does not match pattern {_short(pattern, 60)}")
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in FORMAT_CHECKER.checkers:
            candidates = [*_BAD_FORMATS.get(fmt, []), "not-a-" + fmt, ""]
            value = _pick(
                candidates, lambda s: not FORMAT_CHECKER.conforms(s, fmt),
                _siblings(schema, _STRING_KEYS, "format")
            )
            self.emit(path, value, "format", f"{name}={_short(value)} is not a valid {fmt}")

    # -- numbers

    def _number(self, schema: dict[str, Any], inst: float, path: Path) -> None:
        name = _name(path)
        step = schema.get("multipleOf")
        step = step if step is not None and _is_number(step) and step > 0 else 1
        checks: list[tuple[str, Any, list[Any], Any, str]] = []
        if _is_number(schema.get("minimum")):
            m = schema["minimum"]
            checks.append(("minimum", m, [m - step, m - 1, m - 0.5], lambda v, m=m: v < m, "below minimum"))
        if _is_number(schema.get("maximum")):
            m = schema["maximum"]
            checks.append(("maximum", m, [m + step, m + 1, m + 0.5], lambda v, m=m: v > m, "above maximum"))
        if _is_number(schema.get("exclusiveMinimum")):
            m = schema["exclusiveMinimum"]
            checks.append(("exclusiveMinimum", m, [m, m - step], lambda v, m=m: v <= m,
                           "not above exclusiveMinimum"))
        if _is_number(schema.get("exclusiveMaximum")):
            m = schema["exclusiveMaximum"]
            checks.append(("exclusiveMaximum", m, [m, m + step], lambda v, m=m: v >= m,
                           "not below exclusiveMaximum"))
        if _is_number(schema.get("multipleOf")) and schema["multipleOf"] > 0:
            k = schema["multipleOf"]
            check = _small_validator({"multipleOf": k})
            checks.append(
                ("multipleOf", k, [inst + k / 2, inst + 1, inst + 0.5, inst + k / 3],
                 lambda v: not check.is_valid(v), "not a multiple of")
            )
        for keyword, bound, candidates, breaks, words in checks:
            tidy = [_tidy(c, inst) for c in candidates]
            value = _pick(tidy, breaks, _siblings(schema, _NUMBER_KEYS, keyword))
            self.emit(path, value, keyword, f"{name}={_short(value)} {words} {bound}")

    # -- arrays

    def _array(self, schema: dict[str, Any], inst: list[Any], path: Path) -> None:
        name = _name(path)
        low = schema.get("minItems")
        if isinstance(low, int) and low > 0:
            self.emit(path, inst[: low - 1], "minItems", f"{name} with {low - 1} items, below minItems {low}")
        high = schema.get("maxItems")
        filler = _MISSING
        if inst:
            filler = inst
        elif isinstance(schema.get("items"), dict | bool):
            example = _example(schema["items"])
            filler = [] if example is _MISSING else [example]
        if isinstance(high, int) and filler:
            longer = [*inst, *[filler[i % len(filler)] for i in range(high + 1 - len(inst))]]
            self.emit(path, longer, "maxItems", f"{name} with {high + 1} items, above maxItems {high}")
        if schema.get("uniqueItems") is True and filler:
            first = filler[0]
            value = ([first, first, *inst[2:]] if len(inst) >= 2 else [*inst, first] if inst
                     else [first, first])
            self.emit(path, value, "uniqueItems", f"{name} repeats item {_short(first)} against uniqueItems")

    # -- objects

    def _object(self, schema: dict[str, Any], inst: dict[str, Any], path: Path) -> None:
        name = _name(path)
        required = schema.get("required")
        for prop in required if isinstance(required, list) else []:
            if prop in inst:
                smaller = {k: v for k, v in inst.items() if k != prop}
                self.emit(path, smaller, "required", f"dropped required property {prop!r}",
                          _pointer((*path, prop)))
        declared = schema.get("properties")
        props = declared if isinstance(declared, dict) else {}
        patterns = list(schema.get("patternProperties") or {})
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            if schema.get(keyword) is False:
                extra = _unknown_name(inst, props, patterns)
                if extra is not None:
                    value = {**inst, extra: "unexpected"}
                    self.emit(path, value, keyword, f"added unexpected property {extra!r}",
                              _pointer((*path, extra)))
        low = schema.get("minProperties")
        if isinstance(low, int) and low > 0:
            keep = [k for k in inst if k in (required or [])] + [k for k in inst if k not in (required or [])]
            fewer = {k: inst[k] for k in inst if k in keep[: low - 1]}
            self.emit(path, fewer, "minProperties",
                      f"{name} with {low - 1} properties, below minProperties {low}")
        high = schema.get("maxProperties")
        if isinstance(high, int):
            more = dict(inst)
            for prop, sub in props.items():
                if len(more) > high:
                    break
                if prop not in more and (example := _example(sub)) is not _MISSING:
                    more[prop] = example
            n = 0
            while len(more) <= high and schema.get("additionalProperties") is not False:
                n += 1
                if f"extraProperty{n}" not in more:
                    more[f"extraProperty{n}"] = "extra"
            if len(more) > high:
                self.emit(path, more, "maxProperties",
                          f"{name} with {len(more)} properties, above maxProperties {high}")
        for trigger, needed in (schema.get("dependentRequired") or {}).items():
            if trigger not in inst:
                self._dependent_added(schema, inst, path, trigger, needed)
                continue
            for prop in needed:
                if prop in inst:
                    smaller = {k: v for k, v in inst.items() if k != prop}
                    self.emit(
                        path,
                        smaller,
                        "dependentRequired",
                        f"dropped property {prop!r} that {trigger!r} requires",
                        _pointer((*path, prop)),
                    )

    def _dependent_added(self, schema: dict[str, Any], inst: dict[str, Any], path: Path, trigger: str,
                         needed: Any) -> None:
        """``trigger`` (absent) added with a value valid by its own schema, without the
        members it requires: the break of ``dependentRequired`` an instance without the
        trigger has (everything else about the object still holds)."""
        declared = schema.get("properties")
        props: dict[str, Any] = declared if isinstance(declared, dict) else {}
        value = _example(props.get(trigger, True))
        missing = [p for p in needed if isinstance(p, str)] if isinstance(needed, list) else []
        if value is _MISSING or not missing:
            return
        candidate = {**{k: v for k, v in inst.items() if k not in missing}, trigger: value}
        if _valid(_without(schema, "dependentRequired"), candidate):
            gone = _pointer((*path, missing[0]))
            self.emit(path, candidate, "dependentRequired",
                      f"added {trigger!r} without {missing[0]!r} that it requires", gone)

    def _none_of(self, schema: dict[str, Any], union: str, branches: list[Any], matching: list[Any],
                 inst: Any, path: Path) -> None:
        """An instance that matches no branch of a ``oneOf``/``anyOf`` and still everything
        beside it: a break of what a matching branch asks (a member it requires dropped, say),
        taken where no other branch then matches. One of the instance's own JSON type first."""
        rest = _without(schema, union)
        candidates: list[tuple[Any, str]] = []
        for branch in matching:
            walk = _Walk()
            walk.walk(branch, inst, ())
            candidates += [(_replace(inst, at, value), v.description) for at, value, v, _ in walk.found]
        kind = _json_type(inst)
        ordered = ([c for c in candidates if _json_type(c[0]) == kind]
                   + [c for c in candidates if _json_type(c[0]) != kind])
        for candidate, how in ordered:
            if _valid(rest, candidate) and not any(_valid(b, candidate) for b in branches):
                self.emit(path, candidate, union,
                          f"{_name(path)} matches none of the {len(branches)} {union} branches ({how})")
                return

    def _not(self, schema: dict[str, Any], inst: Any, path: Path) -> None:
        """An instance that matches the schema under ``not`` and everything beside it."""
        forbidden = schema["not"]
        rest = _without(schema, "not")
        kind = _json_type(inst)
        declared = schema.get("properties")
        candidates = _matching(forbidden, inst, declared if isinstance(declared, dict) else {})
        ordered = ([c for c in candidates if _json_type(c) == kind]
                   + [c for c in candidates if _json_type(c) != kind])
        for candidate in ordered:
            if _valid(forbidden, candidate) and _valid(rest, candidate):
                self.emit(path, candidate, "not",
                          f"{_name(path)}={_short(candidate)} matches what 'not' forbids")
                return

    def _one_of(self, schema: dict[str, Any], branches: list[Any], current: Any, inst: Any,
                path: Path) -> None:
        """An instance that matches two branches: add to it what another branch requires."""
        rest = {k: v for k, v in schema.items() if k != "oneOf"}
        rest_ok = _small_validator(rest) if rest else None
        for other in branches:
            if other is current:
                continue
            for candidate in _both(rest, other, inst):
                if candidate == inst or (rest_ok is not None and not rest_ok.is_valid(candidate)):
                    continue
                hits = [i for i, b in enumerate(branches) if _valid(b, candidate)]
                if len(hits) >= 2:
                    self.emit(path, candidate, "oneOf",
                              f"{_name(path)} matches oneOf branches {hits}, not exactly one")
                    return

    # -- descent

    def _children_of_object(
        self, schema: dict[str, Any], inst: dict[str, Any], path: Path, anchor: tuple[Any, Path] | None
    ) -> None:
        declared = schema.get("properties")
        props = declared if isinstance(declared, dict) else {}
        declared_patterns = schema.get("patternProperties")
        patterns = declared_patterns if isinstance(declared_patterns, dict) else {}
        extra = schema.get("additionalProperties")
        for key, value in inst.items():
            covered = False
            if key in props:
                covered = True
                self.walk(props[key], value, (*path, key), anchor)
            for pattern, sub in patterns.items():
                if _search(pattern, key):
                    covered = True
                    self.walk(sub, value, (*path, key), anchor)
            if not covered and isinstance(extra, dict):
                self.walk(extra, value, (*path, key), anchor)

    def _children_of_array(
        self, schema: dict[str, Any], inst: list[Any], path: Path, anchor: tuple[Any, Path] | None
    ) -> None:
        declared = schema.get("prefixItems")
        prefix = declared if isinstance(declared, list) else []
        items = schema.get("items")
        for index, value in enumerate(inst):
            if index < len(prefix):
                self.walk(prefix[index], value, (*path, index), anchor)
            elif isinstance(items, dict):
                self.walk(items, value, (*path, index), anchor)


def _search(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def _unknown_name(inst: dict[str, Any], props: dict[str, Any], patterns: list[str]) -> str | None:
    for extra in ("unexpectedProperty", "x-unexpected", "__unexpected__", "unexpected_property_9"):
        if extra not in inst and extra not in props and not any(_search(p, extra) for p in patterns):
            return extra
    return None


def _other_value(value: Any) -> Any:
    """A value different from ``value``, of the same JSON type where there is one."""
    if isinstance(value, bool):
        return not value
    if _is_number(value):
        return value + 1
    if isinstance(value, str):
        return value + "-other" if value else "other"
    if value is None:
        return False
    if isinstance(value, list):
        return [] if value else [None]
    return {} if value else {"other": True}


def _both(rest: dict[str, Any], other: Any, inst: Any) -> list[Any]:
    """Candidates that keep ``inst`` and also satisfy the branch ``other``."""
    out: list[Any] = []
    if isinstance(inst, dict) and isinstance(other, dict):
        merged = _flatten({"allOf": [rest, other]})
        props = merged.get("properties", {})
        adds: dict[str, Any] = {}
        for prop in merged.get("required", []):
            if prop not in inst:
                example = _example(props.get(prop, True))
                if example is _MISSING:
                    break
                adds[prop] = example
        else:
            out.append({**inst, **adds})
        example = _example({"allOf": [rest, other]})
        if isinstance(example, dict):
            out.append({**example, **inst})
            out.append({**inst, **example})
    else:
        example = _example({"allOf": [rest, other]} if rest else other)
        if example is not _MISSING:
            out.append(example)
    return out


_WITHOUT: dict[tuple[int, str], tuple[Any, Any]] = {}


def _without(schema: dict[str, Any], keyword: str) -> Any:
    """The node without one keyword (True when nothing is left): one object per node and
    keyword, so its validator is compiled once (validators are kept per schema object)."""
    key = (id(schema), keyword)
    kept = _WITHOUT.get(key)
    if kept is not None and kept[0] is schema:
        return kept[1]
    rest = {k: v for k, v in schema.items() if k != keyword} or True
    if len(_WITHOUT) >= 4096:
        _WITHOUT.clear()
    _WITHOUT[key] = (schema, rest)
    return rest


def _matching(schema: Any, like: Any, around: dict[str, Any]) -> list[Any]:
    """Values that may match ``schema`` (each is judged by the caller): its const, enum
    values, small example, strings matching its pattern, and ``like`` with the members of
    an object example added, or with the members ``schema`` requires (each an example of
    its schema there and in ``around``, the properties beside it)."""
    out: list[Any] = []
    if not isinstance(schema, dict):
        return out
    if "const" in schema:
        out.append(schema["const"])
    if isinstance(schema.get("enum"), list):
        out += schema["enum"]
    example = _example(schema)
    if example is not _MISSING:
        out.append(example)
        if isinstance(example, dict) and isinstance(like, dict):
            out += [{**like, **example}, {**example, **like}]
    if isinstance(schema.get("pattern"), str):
        out += _regex_examples(schema["pattern"])
    if isinstance(like, dict) and isinstance(schema.get("required"), list):
        declared = schema.get("properties")
        props: dict[str, Any] = declared if isinstance(declared, dict) else {}
        adds = {p: _example({"allOf": [props.get(p, True), around.get(p, True)]})
                for p in schema["required"] if p not in like}
        if all(v is not _MISSING for v in adds.values()):
            out.append({**like, **adds})
    return out


def _regex_examples(pattern: str) -> list[str]:
    return list(_regex_examples_of(pattern))


@lru_cache(maxsize=256)
def _regex_examples_of(pattern: str) -> tuple[str, ...]:
    """Short strings that match ``pattern`` (``re.search``), read off its parse: each
    repeat at its least count and at one more, the first branch of an alternation that
    gives one, the first character of a class. [] where the pattern is beyond this."""
    try:
        parsed = re_parser.parse(pattern)
        matches = re.compile(pattern).search
    except (re.error, RecursionError, OverflowError):
        return ()
    out: list[str] = []
    for extra in (0, 1):
        text = _from_parse(list(parsed), extra, 0)
        if text is not None and text not in out and matches(text):
            out.append(text)
    return tuple(out)


_CATEGORY_CHARS = {"CATEGORY_DIGIT": "0", "CATEGORY_NOT_DIGIT": "a", "CATEGORY_WORD": "a",
                   "CATEGORY_NOT_WORD": "-", "CATEGORY_SPACE": " ", "CATEGORY_NOT_SPACE": "a"}
_CHAR_POOL = "aA0_-.:x~!@#$%^&*() \t\né"


def _from_parse(items: list[Any], extra: int, depth: int) -> str | None:
    if depth > 20:
        return None
    out: list[str] = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append("a" if av != ord("a") else "b")
        elif name == "ANY":
            out.append("a")
        elif name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue
        elif name == "IN":
            char = _class_char(av)
            if char is None:
                return None
            out.append(char)
        elif name == "BRANCH":
            for alternative in av[1]:
                text = _from_parse(list(alternative), extra, depth + 1)
                if text is not None:
                    out.append(text)
                    break
            else:
                return None
        elif name == "SUBPATTERN":
            text = _from_parse(list(av[-1]), extra, depth + 1)
            if text is None:
                return None
            out.append(text)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = av
            count = low + extra if high is re_parser.MAXREPEAT or low + extra <= high else low
            text = _from_parse(list(sub), extra, depth + 1)
            if text is None:
                return None if count else ""
            out.append(text * count)
        else:
            return None
    return "".join(out)


def _class_char(items: list[Any]) -> str | None:
    """A character of a regex class (its first, or one outside it when negated)."""
    negated = bool(items) and str(items[0][0]) == "NEGATE"

    def inside(char: str) -> bool:
        code = ord(char)
        for op, av in items:
            name = str(op)
            if name == "LITERAL" and code == av:
                return True
            if name == "RANGE" and av[0] <= code <= av[1]:
                return True
            if name == "CATEGORY" and re.fullmatch(_CATEGORY_RE[str(av)], char):
                return True
        return False

    if not negated:
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                return chr(av)
            if name == "RANGE":
                return chr(av[0])
            if name == "CATEGORY" and str(av) in _CATEGORY_CHARS:
                return _CATEGORY_CHARS[str(av)]
        return None
    return next((c for c in _CHAR_POOL if not inside(c)), None)


_CATEGORY_RE = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_WORD": r"\w",
                "CATEGORY_NOT_WORD": r"\W", "CATEGORY_SPACE": r"\s", "CATEGORY_NOT_SPACE": r"\S"}


# ---------------------------------------------------------------- public API


class Breaks:
    """The single-keyword breaks of a VALID ``instance`` of an (inlined) ``schema``, each
    verified invalid against the whole schema only when asked for: a generator that picks
    one break pays for one verification (or a few), not for all of them.

    ``candidates`` follows the walk (node keywords first, then children in the instance's
    key order); ``at(i)`` is candidate ``i`` verified (None when the schema still accepts
    it), remembered; ``from_index(i)`` the first verified one from ``i`` on, round the end,
    that it has not given before while there is one (one object per drawn instance: the
    picks of a batch are distinct breaks until they run out)."""

    def __init__(self, schema: dict[str, Any], instance: Any) -> None:
        walk = _Walk()
        walk.walk(schema, instance, ())
        self.schema, self.instance = schema, instance
        self.candidates = walk.found
        self._verified: dict[int, InvalidInstance | None] = {}
        self._given: set[int] = set()
        self._base: Any = _MISSING

    def __len__(self) -> int:
        return len(self.candidates)

    def candidate(self, index: int) -> Any:
        path, value, _, _ = self.candidates[index]
        return _replace(self.instance, path, value)

    def at(self, index: int) -> InvalidInstance | None:
        if index not in self._verified:
            _, _, violation, (anchor, at) = self.candidates[index]
            candidate = self.candidate(index)
            # Invalid at the anchor implies invalid at the root (the path from the root to
            # the anchor is conjunctive); only when the anchor accepts it is the root asked.
            broken = not _valid(anchor, _get(candidate, at)) or not _valid(self.schema, candidate)
            if broken and self._base is _MISSING:
                self._base = _copy(self.instance)
            self._verified[index] = (InvalidInstance(_copy(candidate), violation, self._base) if broken
                                     else None)
        return self._verified[index]

    def from_index(self, start: int, accept: Callable[[InvalidInstance], bool] = lambda _: True) \
            -> InvalidInstance | None:
        count = len(self.candidates)
        again: InvalidInstance | None = None  # the first one given before, should all have been
        for step in range(count):
            index = (start + step) % count
            found = self.at(index)
            if found is None or not accept(found):
                continue
            if index not in self._given:
                self._given.add(index)
                return found
            again = again or found
        return again


def mutations(schema: dict[str, Any], instance: Any) -> list[InvalidInstance]:
    """Every single-keyword break of a VALID ``instance`` of an (inlined) ``schema``,
    each verified invalid against the whole schema with ``validator_for``.

    Deterministic: the order follows the walk (node keywords first, then children in the
    instance's key order); an instance reached by two breaks keeps the first label.
    Raises ValueError if ``instance`` is not valid to begin with."""
    if not _valid(schema, instance):
        raise ValueError("mutations() needs an instance that is valid against the schema")
    breaks = Breaks(schema, instance)
    seen = {json.dumps(instance, sort_keys=True, default=str)}
    out: list[InvalidInstance] = []
    for index in range(len(breaks)):
        key = json.dumps(breaks.candidate(index), sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        found = breaks.at(index)
        if found is not None:
            out.append(found)
    return out


def small_example(schema: Any) -> Any:
    """A small deterministic instance of ``schema`` (its required members, the first enum
    value, the least number): ValueError when none is found."""
    value = _example(schema)
    if value is _MISSING:
        raise ValueError("no small example of this schema")
    return value


def example_breaks(schema: dict[str, Any]) -> list[InvalidInstance]:
    """Every single-keyword break of the schema's small deterministic instance ([] when it
    has none): a sweep that reaches each keyword once, before random draws look further."""
    instance = _example(schema)
    return [] if instance is _MISSING else mutations(schema, instance)


def _get(value: Any, path: Path) -> Any:
    for key in path:
        value = value[key]
    return value


def _copy(value: Any) -> Any:
    """Deep copy of a JSON value (the candidates share structure with the input)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


@once_per_schema
def invalid_strategy(schema: dict[str, Any]) -> st.SearchStrategy[InvalidInstance]:
    """A valid instance drawn with ``strategy_for(schema)``, then one of its breaks: the
    candidate at a drawn index, or the first after it that the schema refuses (verified
    then, not all of them first); an instance without any is rejected.

    The valid instance and its breaks are drawn once per generated example and shared by
    every pick of it: where an example holds a batch of inputs (the campaign budget), its
    breaks are all of one instance, distinct until they run out, and drawing and walking
    that instance (most of the cost) is paid once per batch instead of once per input.
    Built once per schema's text (``once_per_schema``), as ``strategy_for``."""
    root = validator_for(schema)  # compiled once per schema object (documents/compiled.py)
    candidates = st.shared(strategy_for(schema).filter(root.is_valid).map(
        lambda instance: Breaks(schema, instance)).filter(len), key=f"breaks of schema {id(schema)}")

    @st.composite
    def pick(draw: Any) -> InvalidInstance:
        breaks = draw(candidates)
        found = breaks.from_index(draw(index_of(len(breaks))))
        if found is None:
            reject()
        return found

    return pick()


# ---------------------------------------------------------------- where a row's breaks come from

def at(value: Any, path: list[str]) -> Any:
    """The member of ``value`` at ``path`` (pointer segments), or None where there is none."""
    for key in path:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def path_exists(value: Any, path: list[str]) -> bool:
    """Whether ``path`` names a member of an object in ``value`` (null or not)."""
    parent = at(value, path[:-1]) if path else None
    return bool(path) and isinstance(parent, dict) and path[-1] in parent


def fullest(schema: dict[str, Any], smallest: dict[str, Any]) -> dict[str, Any]:
    """``smallest`` with each optional member the schema names added (an example value, its
    own members grown the same way), where the instance stays valid: every member sent once."""
    check = validator_for(schema)
    out = json.loads(json.dumps(smallest))
    for name, sub in (schema.get("properties") or {}).items():
        if name not in out:
            example = _example(sub)
            if example is _MISSING or not check.is_valid({**out, name: example}):
                continue
            out[name] = example
        if isinstance(out[name], dict) and isinstance(sub, dict) and sub.get("properties"):
            grown = fullest(sub, out[name])
            if check.is_valid({**out, name: grown}):
                out[name] = grown
    return out


def schema_examples(schema: dict[str, Any]) -> list[Any]:
    """The schema's smallest object instance and its fullest (``fullest``): the same inputs on
    every run, whatever the budget ([] where the smallest is no object)."""
    smallest = _example(schema)
    if not isinstance(smallest, dict):
        return []
    return [smallest, fullest(schema, smallest)]


@dataclass(frozen=True)
class BreakSource:
    """Where an invalid-input row's breaks come from: ``swept()``, every break of fixed
    instances (sent first, whatever the budget), and ``drawn``, generated ones (None: none),
    with ``batched`` what a campaign's batch draws from (None: one at a time)."""

    swept: Callable[[], list[InvalidInstance]]
    drawn: st.SearchStrategy[InvalidInstance] | None
    batched: st.SearchStrategy[InvalidInstance] | None = None


def schema_breaks(schema: dict[str, Any], sweep: bool = True) -> BreakSource:
    """The breaks of instances of ``schema`` as drawn: its small example's (``sweep``), then
    ``invalid_strategy``'s, a batch breaking one drawn instance."""
    drawn = invalid_strategy(schema)
    return BreakSource(lambda: example_breaks(schema) if sweep else [], drawn, drawn)


def made_breaks(schema: dict[str, Any], *, make: Callable[[Any], Any],
                keep: Callable[[InvalidInstance], bool] = lambda _: True,
                more: Callable[[Any], list[InvalidInstance]] = lambda _: [],
                drawn_from: dict[str, Any] | None = None, generated: bool = True) -> BreakSource:
    """The breaks of what a check makes of each instance before it breaks it (``make``: the
    request a client may send, say), with ``more(base)`` breaks of a base the schema's
    keywords do not make, those ``keep`` takes: the sweep breaks ``schema_examples``, the
    generated ones (with ``generated``) an instance drawn from ``drawn_from`` (the schema
    by default, or one quicker to draw that ``make`` completes). A made instance the schema
    refuses breaks nothing (the draw is rejected)."""
    valid = validator_for(schema)

    def breaks_of(base: Any) -> list[InvalidInstance]:
        if not valid.is_valid(base):
            return []
        return [b for b in (*mutations(schema, base), *more(base)) if keep(b)]

    def swept() -> list[InvalidInstance]:
        out: list[InvalidInstance] = []
        for example in schema_examples(schema):
            out += breaks_of(make(example))
        return out

    instances = strategy_for(schema if drawn_from is None else drawn_from)

    @st.composite
    def pick(draw: Any) -> InvalidInstance:
        """A kept break at a drawn index or the first after it (each candidate verified and
        kept only when reached, not all of them first)."""
        base = make(draw(instances))
        if not valid.is_valid(base):
            reject()
        lazy, extra = Breaks(schema, base), more(base)
        count = len(lazy) + len(extra)
        start = draw(index_of(count)) if count else 0
        for step in range(count):
            i = (start + step) % count
            bad = lazy.at(i) if i < len(lazy) else extra[i - len(lazy)]
            if bad is not None and keep(bad):
                return bad
        reject()

    return BreakSource(swept, pick() if generated else None)
