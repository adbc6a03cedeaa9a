"""Union splitting, $ref inlining and the generation strategy."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from conformance.documents.schemas import inline_refs, load_document, validator_for
from conformance.generation.strategies import CUSTOM_FORMATS, split_unions, strategy_for

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(
    deadline=None,
    max_examples=30,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

THREE = {
    "type": "object",
    "required": ["kind"],
    "properties": {"meta": {"type": "string", "maxLength": 5}},
    "oneOf": [
        {"properties": {"kind": {"const": "text"}, "text": {"type": "string"}}, "required": ["text"]},
        {"properties": {"kind": {"const": "data"}, "data": {"type": "object"}}, "required": ["data"]},
        {"properties": {"kind": {"const": "file"}, "uri": {"type": "string"}}, "required": ["uri"]},
    ],
}


def _unions(schema, parent_is_not=False):
    if isinstance(schema, dict):
        for key in ("oneOf", "anyOf"):
            if key in schema:
                yield key, schema, parent_is_not
        for key, value in schema.items():
            yield from _unions(value, key == "not")
    elif isinstance(schema, list):
        for value in schema:
            yield from _unions(value, parent_is_not)


def _variant_instances_valid(original, variants):
    validator = validator_for(original)
    strategy = st.one_of([from_schema(v, custom_formats=CUSTOM_FORMATS) for v in variants])

    @SETTINGS
    @given(strategy)
    def check(instance):
        assert validator.is_valid(instance), instance

    check()


def test_one_of_three_branches_gives_three_variants():
    variants = split_unions(THREE)
    assert len(variants) == 3
    for variant in variants:
        assert all(parent_is_not for _, _, parent_is_not in _unions(variant))
    kinds = []
    for variant in variants:
        kinds.append(variant["allOf"][0]["properties"]["kind"]["const"])
        assert variant["properties"] == THREE["properties"]  # siblings kept
    assert kinds == ["text", "data", "file"]
    _variant_instances_valid(THREE, variants)


def test_nested_unions_multiply_up_to_the_limit():
    nested = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}]},
            "b": {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}, {"type": "null"}]},
        },
        "required": ["a", "b"],
    }
    variants = split_unions(nested)
    assert len(variants) == 9
    assert len({json.dumps(v, sort_keys=True) for v in variants}) == 9
    _variant_instances_valid(nested, variants)
    limited = split_unions(nested, limit=4)
    assert 1 <= len(limited) <= 4
    _variant_instances_valid(nested, limited)
    # the variants still cover the schema: every branch of `a` is reachable
    reached = set()
    for variant in limited:
        a = variant["properties"]["a"]
        reached.update(s["type"] for s in a.get("anyOf", a.get("allOf", [])))
    assert reached == {"integer", "string", "boolean"}


def test_unions_under_not_and_in_values_are_left_alone():
    schema = {
        "not": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "default": {"anyOf": [1, 2]},
        "properties": {"anyOf": {"type": "integer"}},
    }
    assert split_unions(schema) == [schema]


def test_split_limit_of_one_returns_the_schema():
    assert split_unions(THREE, limit=1) == [THREE]


def test_inline_refs_recursion_and_siblings():
    doc = {
        "$defs": {
            "node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}},
            "short": {"type": "string", "maxLength": 10},
        }
    }
    node = inline_refs({"$ref": "#/$defs/node"}, doc)
    assert node["properties"]["child"] == {}  # cut at its second appearance
    # a sibling annotation yields to the target; a differing sibling constraint also applies
    merged = inline_refs({"$ref": "#/$defs/short", "description": "d", "maxLength": 3}, doc)
    assert merged["maxLength"] == 10 and merged["allOf"] == [{"maxLength": 3}]
    assert not validator_for(merged).is_valid("abcd")
    assert inline_refs({"$ref": "#/$defs/short", "minLength": 1}, doc)["minLength"] == 1


def test_strategy_for_honours_2020_12_keywords():
    schema = {
        "type": "object",
        "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
        "required": ["card"],
        "dependentRequired": {"card": ["billing"]},
        "additionalProperties": False,
    }
    tuple_ = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False}

    @SETTINGS
    @given(strategy_for(schema), strategy_for(tuple_))
    def check(obj, arr):
        assert "billing" in obj
        assert validator_for(tuple_).is_valid(arr)

    check()


def test_strategy_for_on_canon_one_of_is_valid():
    doc = load_document(ROOT / "specs/canon/canon.verbs.v1.json")
    schema = inline_refs({"$ref": "#/$defs/sessionSelection"}, doc)
    assert len(split_unions(schema)) == 2
    validator = validator_for(schema)

    @SETTINGS
    @given(strategy_for(schema))
    def check(instance):
        assert validator.is_valid(instance)

    check()


def test_one_of_draws_every_branch_and_shrinks_to_the_first():
    from hypothesis import find

    from conformance.generation.compiler import one_of

    branches = [st.just("a"), st.integers(5, 9), st.text(min_size=1)]
    seen = set()

    @SETTINGS
    @given(one_of(branches))
    def check(value):
        seen.add(type(value).__name__ if value != "a" else "a")

    check()
    assert seen == {"a", "int", "str"}
    assert one_of([branches[1]]) is branches[1]  # one branch is that branch
    assert find(one_of(branches), lambda v: True) == "a"  # the index shrinks to the first branch
    assert find(one_of(branches), lambda v: isinstance(v, int)) == 5


def test_free_json_gives_every_kind_within_its_leaves():
    from conformance.generation.compiler import FREE_JSON

    kinds = set()

    def leaves(value):
        if isinstance(value, list):
            return sum(map(leaves, value))
        if isinstance(value, dict):
            return sum(map(leaves, value.values()))
        return 1

    @settings(SETTINGS, max_examples=200)
    @given(FREE_JSON)
    def check(value):
        json.dumps(value)  # plain JSON
        assert leaves(value) <= 6
        kinds.add(type(value).__name__)

    check()
    assert kinds == {"NoneType", "bool", "int", "str", "list", "dict"}
