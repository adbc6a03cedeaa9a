"""Schema-aware invalid inputs: one labelled break per instance, verified invalid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.documents.openapi import jsonrpc_operations
from conformance.documents.schemas import (
    FORMAT_CHECKER,
    SpecError,
    inline_refs,
    load_document,
    resolve_pointer,
    validator_for,
)
from conformance.generation.invalid import InvalidInstance, Violation, invalid_strategy, mutations

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(
    deadline=None,
    max_examples=25,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def _by_keyword(schema, instance, keyword):
    found = [m for m in mutations(schema, instance) if m.violation.keyword == keyword]
    for m in found:
        assert not validator_for(schema).is_valid(m.instance), m
    return found


def _one(schema, instance, keyword, pointer):
    found = [m for m in _by_keyword(schema, instance, keyword) if m.violation.pointer == pointer]
    assert found, f"no {keyword} break at {pointer!r}: {[m.violation for m in mutations(schema, instance)]}"
    return found[0]


def _two_branches(schema, instance, pointer=""):
    found = [m for m in _by_keyword(schema, instance, "oneOf")
             if m.violation.pointer == pointer and "not exactly one" in m.violation.description]
    assert found, f"no oneOf break matching two branches at {pointer!r}"
    return found[0]


def _errors_name(schema, instance, keyword):
    """The keyword is among jsonschema's own errors (looking inside oneOf/anyOf)."""

    def walk(err):
        yield err.validator
        for sub in err.context or []:
            yield from walk(sub)

    return keyword in {k for e in validator_for(schema).iter_errors(instance) for k in walk(e)}


# ---------------------------------------------------------------- keyword families

OBJ = {
    "type": "object",
    "required": ["taskId", "rating"],
    "additionalProperties": False,
    "properties": {
        "taskId": {"type": "string", "format": "uuid"},
        "rating": {"type": "integer", "minimum": 1, "maximum": 5},
        "note": {"type": "string"},
    },
}
OBJ_OK = {"taskId": "00000000-0000-4000-8000-000000000000", "rating": 5, "note": "fine"}


def test_required_drops_each_present_required_property():
    found = _by_keyword(OBJ, OBJ_OK, "required")
    assert [m.violation.pointer for m in found] == ["/taskId", "/rating"]
    assert found[0].violation.description == "dropped required property 'taskId'"
    assert "taskId" not in found[0].instance


def test_additional_properties_false_gets_an_unexpected_property():
    m = _one(OBJ, OBJ_OK, "additionalProperties", "/unexpectedProperty")
    assert m.instance["unexpectedProperty"] == "unexpected"
    resolve_pointer(m.instance, m.violation.pointer)


def test_unevaluated_properties_false():
    schema = {"allOf": [{"properties": {"a": {"type": "integer"}}}], "unevaluatedProperties": False}
    m = _one(schema, {"a": 1}, "unevaluatedProperties", "/unexpectedProperty")
    assert m.instance == {"a": 1, "unexpectedProperty": "unexpected"}


def test_type_is_replaced_by_a_value_of_another_type():
    found = _by_keyword(OBJ, OBJ_OK, "type")
    rating = [m for m in found if m.violation.pointer == "/rating"]
    assert [m.instance["rating"] for m in rating] == ["5", None]
    union = {"type": ["string", "null"]}
    assert all(not isinstance(m.instance, str | type(None)) for m in _by_keyword(union, "x", "type"))
    integer = _by_keyword({"type": "integer"}, 3, "type")
    assert integer and all(_errors_name({"type": "integer"}, m.instance, "type") for m in integer)


def test_numeric_bounds():
    m = _one(OBJ, OBJ_OK, "maximum", "/rating")
    assert m.instance["rating"] == 6 and m.violation.description == "rating=6 above maximum 5"
    assert _one(OBJ, OBJ_OK, "minimum", "/rating").instance["rating"] == 0
    exclusive = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10}
    assert _one(exclusive, 5, "exclusiveMinimum", "").instance == 0
    assert _one(exclusive, 5, "exclusiveMaximum", "").instance == 10
    multiple = {"type": "integer", "multipleOf": 5, "minimum": 0}
    m = _one(multiple, 10, "multipleOf", "")
    assert isinstance(m.instance, int) and m.instance % 5
    stepped = {"type": "integer", "multipleOf": 5, "maximum": 20}
    assert _one(stepped, 10, "maximum", "").instance == 25  # stays a multiple: a clean break


def test_string_lengths_and_pattern():
    schema = {"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"}
    long_ = _one(schema, "abc", "maxLength", "")
    assert len(long_.instance) == 5 and long_.instance.isalpha()  # padded so the pattern still holds
    assert _one(schema, "abc", "minLength", "").instance == "a"
    bad = _one(schema, "abc", "pattern", "").instance
    assert validator_for({"pattern": "^[a-z]+$"}).is_valid(bad) is False


def test_enum_and_const():
    schema = {"properties": {"role": {"enum": ["user", "agent"]}, "kind": {"const": "message"}}}
    inst = {"role": "user", "kind": "message"}
    role = _one(schema, inst, "enum", "/role").instance["role"]
    assert role not in ("user", "agent")
    kind = _one(schema, inst, "const", "/kind").instance["kind"]
    assert kind != "message" and isinstance(kind, str)
    assert _one({"const": 3}, 3, "const", "").instance == 4
    assert _one({"enum": [1, 2, 3]}, 2, "enum", "").instance not in (1, 2, 3)


def test_array_keywords():
    schema = {
        "type": "array",
        "minItems": 2,
        "maxItems": 3,
        "uniqueItems": True,
        "items": {"type": "integer"},
    }
    inst = [1, 2, 3]
    assert _one(schema, inst, "minItems", "").instance == [1]
    assert _one(schema, inst, "maxItems", "").instance == [1, 2, 3, 1]
    assert _one(schema, inst, "uniqueItems", "").instance == [1, 1, 3]
    empty = {"type": "array", "maxItems": 0, "items": {"type": "string", "minLength": 2}}
    assert _one(empty, [], "maxItems", "").instance == ["xx"]  # an item valid by itself


def test_object_size_keywords():
    schema = {"type": "object", "minProperties": 2, "maxProperties": 2}
    assert len(_one(schema, {"a": 1, "b": 2}, "minProperties", "").instance) == 1
    assert len(_one(schema, {"a": 1, "b": 2}, "maxProperties", "").instance) == 3
    closed = {
        "type": "object",
        "maxProperties": 1,
        "additionalProperties": False,
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
    }
    assert _one(closed, {"a": 1}, "maxProperties", "").instance == {"a": 1, "b": "x"}


def test_dependent_required_drops_the_dependent_property():
    schema = {
        "type": "object",
        "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
        "dependentRequired": {"card": ["billing"]},
    }
    m = _one(schema, {"card": "4111", "billing": "here"}, "dependentRequired", "/billing")
    assert m.instance == {"card": "4111"}
    # without the trigger: the trigger added, what it requires left out
    m = _one(schema, {"billing": "here"}, "dependentRequired", "/billing")
    assert m.instance == {"card": "x"}
    assert m.violation.description == "added 'card' without 'billing' that it requires"
    # a trigger whose own schema has no example, or that would break another keyword, is not added
    closed = {**schema, "maxProperties": 0}
    assert not _by_keyword(closed, {}, "dependentRequired")


def test_one_of_instance_matching_two_branches():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
    }
    m = _two_branches(schema, {"a": "x"})
    assert m.instance == {"a": "x", "b": "x"}
    numbers = {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}
    assert _two_branches(numbers, 0.5).instance == 0
    # branches told apart by a const cannot both match: no such oneOf break, no crash
    tagged = {"oneOf": [{"properties": {"k": {"const": "a"}}, "required": ["k"]},
                        {"properties": {"k": {"const": "b"}}, "required": ["k"]}]}
    found = _by_keyword(tagged, {"k": "a"}, "oneOf")
    assert not [m for m in found if "not exactly one" in m.violation.description]


def test_one_of_instance_matching_no_branch():
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "integer"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
    }
    m = _one(schema, {"a": "x", "c": 1}, "oneOf", "")
    assert m.instance == {"c": 1}
    assert m.violation.description == ("value matches none of the 2 oneOf branches "
                                       "(dropped required property 'a')")
    # nested: the pointer names the node, the rest of the instance is untouched
    outer = {"type": "object", "properties": {"target": schema}}
    m = _one(outer, {"target": {"b": "y"}, "d": 2}, "oneOf", "/target")
    assert m.instance == {"target": {}, "d": 2}
    # an instance of the node's own type first: a wrong type is the type break's business
    scalar = {"oneOf": [{"type": "integer", "maximum": 5}, {"type": "string"}]}
    assert _one(scalar, 3, "oneOf", "").instance == 6


def test_any_of_instance_matching_no_branch():
    schema = {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}]}
    m = _one(schema, "ab", "anyOf", "")
    assert isinstance(m.instance, str) and len(m.instance) == 4
    assert m.violation.description.startswith("value matches none of the 2 anyOf branches (value of length 4")
    both = {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert _one(both, {"a": 1}, "anyOf", "").instance == {}
    # held by two branches, each through its own member: no one change breaks both, so no anyOf break
    assert not _by_keyword(both, {"a": 1, "b": 2}, "anyOf")


def test_not_gets_an_instance_it_forbids():
    reserved = {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,160}$",
                "not": {"pattern": "^(\\.{1,2}|__.*__)$"}}
    m = _one(reserved, "abc", "not", "")
    assert m.instance in (".", "..") and validator_for({"pattern": reserved["pattern"]}).is_valid(m.instance)
    assert m.violation.description == 'value="." matches what \'not\' forbids'
    obj = {"type": "object", "properties": {"x": {"type": "integer"}}, "not": {"required": ["x"]}}
    assert _one(obj, {"y": 1}, "not", "").instance == {"y": 1, "x": 0}
    assert _one({"not": {"type": "string"}}, 3, "not", "").instance == "x"
    # nothing found that the rest allows: no break, no crash
    assert not _by_keyword({"type": "integer", "not": {"type": "string"}}, 3, "not")


@pytest.mark.parametrize(("pattern", "expected"), [
    ("^(\\.{1,2}|__.*__)$", [".", ".."]), ("^[A-Za-z0-9_.:-]{1,160}$", ["A", "AA"]),
    ("^[^a-z]+$", ["A", "AA"]), ("^\\d{3}-\\w*$", ["000-", "000-a"]), ("^(?:a|b)c?$", ["a", "ac"]),
    ("(", []), ("^(a)\\1$", [])])
def test_regex_examples(pattern, expected):
    from conformance.generation.invalid import _regex_examples

    assert _regex_examples(pattern) == expected


@pytest.mark.parametrize(
    ("fmt", "good"),
    [
        ("uuid", "00000000-0000-4000-8000-000000000000"),
        ("date", "2024-01-31"),
        ("email", "a@example.com"),
        ("ipv4", "10.0.0.1"),
        ("date-time", "2024-01-31T00:00:00Z"),
        ("uri", "https://example.com/x"),
    ],
)
def test_format_breaks_only_where_the_checker_checks(fmt, good):
    schema = {"type": "string", "format": fmt}
    found = _by_keyword(schema, good, "format")
    if fmt in FORMAT_CHECKER.checkers:
        assert found and not FORMAT_CHECKER.conforms(found[0].instance, fmt)
    else:  # jsonschema without the extra for this format does not check it: no false break
        assert not found


def test_nested_pointer_and_items():
    schema = {
        "type": "object",
        "properties": {
            "message": {
                "type": "object",
                "properties": {"parts": {"type": "array", "items": {"type": "object", "required": ["kind"]}}},
            }
        },
    }
    inst = {"message": {"parts": [{"kind": "text"}, {"kind": "data"}]}}
    m = _one(schema, inst, "required", "/message/parts/1/kind")
    assert m.instance == {"message": {"parts": [{"kind": "text"}, {}]}}
    assert inst == {"message": {"parts": [{"kind": "text"}, {"kind": "data"}]}}  # input untouched


def test_a_break_masked_by_any_of_is_dropped():
    schema = {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "string"}]}
    assert not _by_keyword(schema, "ab", "maxLength")
    assert _by_keyword(schema, "ab", "type")


def test_pointer_escaping():
    schema = {"type": "object", "properties": {"a/b": {"type": "integer", "maximum": 1}}}
    m = _one(schema, {"a/b": 0}, "maximum", "/a~1b")
    assert resolve_pointer(m.instance, m.violation.pointer) == 2


def test_deduplicated_deterministic_and_all_invalid():
    first = mutations(OBJ, OBJ_OK)
    assert first == mutations(OBJ, OBJ_OK)
    keys = [json.dumps(m.instance, sort_keys=True) for m in first]
    assert len(keys) == len(set(keys))
    assert all(isinstance(m, InvalidInstance) and isinstance(m.violation, Violation) for m in first)
    assert all(not validator_for(OBJ).is_valid(m.instance) for m in first)


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        (True, {"a": 1}),
        ({}, [1, 2]),
        ({"not": {"type": "string"}}, 3),
        ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, 4),
        ({"type": "object", "properties": {"child": {}}}, {"child": {"child": {}}}),  # recursion cut to {}
    ],
)
def test_odd_schemas_do_not_crash(schema, instance):
    for m in mutations(schema, instance):
        assert not validator_for(schema).is_valid(m.instance)


def test_false_schema_and_invalid_input():
    with pytest.raises(ValueError):
        mutations(False, 1)
    with pytest.raises(ValueError):
        mutations({"type": "string"}, 1)


# ---------------------------------------------------------------- property tests on the specs


def _bindu_params():
    doc = load_document(ROOT / "specs/bindu/openapi.yaml")
    profile = yaml.safe_load((ROOT / "profiles/bindu.yaml").read_text())
    ops = jsonrpc_operations(doc, "specs/bindu/openapi.yaml", profile["jsonrpc"])
    seen, out = set(), []
    for name, op in ops.items():
        key = json.dumps(op.params_schema, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(pytest.param(op.params_schema, id=name))
    return out


def _check(schema, drawn):
    assert not validator_for(schema).is_valid(drawn.instance), drawn.violation
    pointer = drawn.violation.pointer
    try:
        resolve_pointer(drawn.instance, pointer)
    except SpecError:
        assert drawn.violation.keyword in ("required", "dependentRequired"), drawn.violation
        resolve_pointer(drawn.instance, pointer.rsplit("/", 1)[0])
    assert _errors_name(schema, drawn.instance, drawn.violation.keyword), drawn.violation


@pytest.mark.parametrize("schema", _bindu_params())
def test_bindu_params_invalid_instances(schema):
    # hypothesis-jsonschema draws MessageSendParams slowly (~0.5 s each): keep this small
    @settings(SETTINGS, max_examples=10)
    @given(invalid_strategy(schema))
    def check(drawn):
        _check(schema, drawn)

    check()


CANON = ["sessionSelection", "selfContext", "mediaAttachment", "check_approval_input", "react_input",
         "messageId", "send_to_input", "share_contact_input"]


@pytest.mark.parametrize("name", CANON)
def test_canon_schemas_invalid_instances(name):
    doc = load_document(ROOT / "specs/canon/canon.verbs.v1.json")
    schema = inline_refs({"$ref": f"#/$defs/{name}"}, doc)

    @settings(SETTINGS, max_examples=15)
    @given(invalid_strategy(schema))
    def check(drawn):
        _check(schema, drawn)

    check()


def test_canon_send_to_input_gets_one_of_and_dependent_required_breaks():
    doc = load_document(ROOT / "specs/canon/canon.verbs.v1.json")
    schema = inline_refs({"$ref": "#/$defs/send_to_input"}, doc)
    inst = {
        "targetUserId": "u1",
        "text": "hello",
        "selfContext": {"type": "cross_session", "context": "c"},
        "sourceConversationId": "abc",
    }
    keywords = {m.violation.keyword for m in mutations(schema, inst)}
    assert {"oneOf", "dependentRequired", "additionalProperties", "pattern", "maxLength", "const"} <= keywords
    # no target and two targets (the oneOf at the root), a reserved messageId (not), a selfContext
    # without its source (dependentRequired), each verified invalid and labelled
    inst = {"targetConversationId": "c1", "text": "hello", "messageOptions": {"messageId": "m1"},
            "sessionSelection": {"mode": "new"}}
    found = {(m.violation.keyword, m.violation.pointer): m for m in mutations(schema, inst)}
    targets = {"targetConversationId", "targetUserId", "canonContactId"}
    root = [m for m in mutations(schema, inst) if (m.violation.keyword, m.violation.pointer) == ("oneOf", "")]
    assert [len(targets & set(m.instance)) for m in root] == [0, 2]
    assert found["not", "/messageOptions/messageId"].instance["messageOptions"]["messageId"] in (".", "..")
    assert found["oneOf", "/sessionSelection"].instance["sessionSelection"] == {}
    added = found["dependentRequired", "/sourceConversationId"].instance
    assert "selfContext" in added and "sourceConversationId" not in added
    for m in found.values():
        _check(schema, m)


def _every_profile_operation():
    from conformance.run.profiles import load_profile

    out = []
    for name in ("bindu", "canon-verbs", "wever-connect", "agent-plaza", "a2a"):
        profile = load_profile(name)
        seen = set()
        for op_name, op in sorted(profile.operations.items()):
            key = json.dumps(op.params_schema, sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append(pytest.param(op.params_schema, id=f"{name}:{op_name}"))
    return out


@pytest.mark.parametrize("schema", _every_profile_operation())
def test_example_breaks_of_every_profile_are_invalid_and_labelled(schema):
    """The sweep every invalid-input row starts with: each break of each operation's small
    example, in every profile, is invalid, names where it is, and the keyword it breaks is
    one jsonschema names."""
    from conformance.generation.invalid import example_breaks

    for m in example_breaks(schema):
        _check(schema, m)


def test_invalid_strategy_draws_violations():
    @SETTINGS
    @given(st.data())
    def check(data):
        drawn = data.draw(invalid_strategy(OBJ))
        assert isinstance(drawn, InvalidInstance)
        _check(OBJ, drawn)

    check()


def test_a_preparation_that_spoils_every_input_leaves_the_check_untested():
    """A check's preparation (real ids, a marker) that turned every valid input invalid,
    or mended every break, would judge nothing: the check says so (untested) instead of
    passing, and sends none of them."""
    from conformance.checks.inputs import invalid_inputs_rejected, valid_inputs_accepted
    from conformance.generation.invalid import _example
    from conformance.kit.check import CheckContext, Untested
    from conformance.run.launch import open_run
    from conformance.run.profiles import load_profile

    profile = load_profile("bindu")
    run = open_run(profile, "reference", budget="quick")
    ctx = CheckContext(run, next(r for r in profile.requirements if r.id == "BINDU-PARAMS-VALID-TASKS-GET"))
    op, sent = profile.operations["tasks/get"], []
    with pytest.raises(Untested, match="preparation"):
        valid_inputs_accepted(ctx, op, sent.append, (), prepare=lambda value: 42)
    valid = _example(op.params_schema)
    with pytest.raises(Untested, match="preparation"):
        invalid_inputs_rejected(ctx, op, sent.append, None, prepare=lambda bad: valid)
    assert sent == []


def test_breaks_are_verified_only_when_picked(monkeypatch):
    """A generator picks one break: it verifies the candidate at its index (and the next
    ones while the schema still accepts them), not the whole list; what it gets is what
    the full list (mutations) holds at that place."""
    import conformance.generation.invalid as invalid

    schema = {"type": "object", "required": ["a", "b"], "additionalProperties": False,
              "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                             "b": {"type": "string", "minLength": 1, "maxLength": 3, "enum": ["x", "yy"]},
                             "c": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}}}
    instance = {"a": 3, "b": "x", "c": [True]}
    everything = mutations(schema, instance)
    breaks = invalid.Breaks(schema, instance)
    assert len(breaks) >= len(everything) > 10  # more than 10 candidates
    calls = []
    real = invalid._valid
    monkeypatch.setattr(invalid, "_valid", lambda s, i: calls.append(1) or real(s, i))
    first = breaks.from_index(5)
    assert first is not None and not validator_for(schema).is_valid(first.instance)
    assert 1 <= len(calls) <= 4 and len(calls) < len(breaks)  # one candidate (two judges), or a few
    assert (breaks.at(5) is first or breaks.at(5) is None) and len(calls) <= 4  # remembered
    # every verified candidate is in the full list, under the same label
    verified = [b for b in (breaks.at(i) for i in range(len(breaks))) if b is not None]
    # from one index, picks give every verified break once (a batch: distinct inputs), then repeats
    picks = [first] + [breaks.from_index(5) for _ in range(len(verified) - 1)]
    assert sorted(map(id, picks)) == sorted(map(id, verified))
    assert breaks.from_index(5) is first
    listed = {json.dumps(b.instance, sort_keys=True): b.violation for b in everything}
    assert all(json.dumps(b.instance, sort_keys=True) in listed for b in verified)
    assert {json.dumps(b.instance, sort_keys=True) for b in verified} == set(listed)
    # the accept filter skips what it refuses
    assert breaks.from_index(0, accept=lambda b: b.violation.keyword == "enum").violation.keyword == "enum"
    assert breaks.from_index(0, accept=lambda b: False) is None
