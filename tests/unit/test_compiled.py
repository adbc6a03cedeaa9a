"""The compiled judge (jsonschema-rs) and python-jsonschema give the same answer: on every
operation schema of every profile, for generated valid instances and the invalid generator's
breaks of them, and on the dialect corners where the two libraries differ by themselves."""

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

from conformance.documents.compiled import FORMAT_CHECKER, Judge, judge_for
from conformance.generation.invalid import example_breaks, mutations
from conformance.generation.strategies import strategy_for
from conformance.run.profiles import available, load_profile


def python_judge(schema):
    return jsonschema.Draft202012Validator(schema, format_checker=FORMAT_CHECKER)


SCHEMAS = [(f"{name}:{op.name}:{part}", schema)
           for name in available() for op in load_profile(name).operations.values()
           for part, schema in (("params", op.params_schema), ("result", op.result_schema))
           if isinstance(schema, dict) and schema]
PARAMS = [(key, schema) for key, schema in SCHEMAS if key.endswith(":params")]


def test_there_are_schemas_to_compare():
    assert len(SCHEMAS) > 50
    assert {key.split(":")[0] for key, _ in SCHEMAS} == set(available())


def agree(judge, python, instance, what):
    assert judge.is_valid(instance) == python.is_valid(instance), what
    assert bool(list(judge.iter_errors(instance))) == (not python.is_valid(instance)), what


@pytest.mark.parametrize(("key", "schema"), SCHEMAS, ids=[k for k, _ in SCHEMAS])
def test_the_compiled_judge_agrees_on_each_keyword_break_of_each_schema(key, schema):
    """The schema's small deterministic instance and every single-keyword break of it
    (result schemas included: the checks judge answers with them)."""
    judge, python = Judge(schema), python_judge(schema)
    assert judge._fast is not None, f"{key} did not compile"
    for bad in example_breaks(schema):
        agree(judge, python, bad.base, "the example")
        agree(judge, python, bad.instance, bad.violation)


@pytest.mark.parametrize(("key", "schema"), PARAMS, ids=[k for k, _ in PARAMS])
def test_the_compiled_judge_agrees_on_generated_requests(key, schema):
    judge, python = Judge(schema), python_judge(schema)

    @settings(max_examples=3, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy_for(schema))
    def agrees(instance):
        agree(judge, python, instance, instance)
        for bad in mutations(schema, instance)[:8]:
            agree(judge, python, bad.instance, bad.violation)
    agrees()


CORNERS = [
    ({"type": "string", "pattern": "^a$"}, ["a", "a\n", "b", "\na"]),  # Python's $ before a final newline
    ({"type": "string", "pattern": "^\\d+$"}, ["12", "١٢", "x"]),  # \d: Unicode digits in Python
    ({"type": "string", "pattern": "^[\\w.*:-]{1,128}$"}, ["abc", "ü", "a b"]),
    ({"type": "string", "format": "uri-template"}, ["{x", "a{b}"]),  # a format Python does not check
    ({"type": "string", "format": "date-time"}, ["2026-12-03T10:00:00Z", "yesterday"]),
    ({"type": "string", "format": "uuid"}, ["8f9a0b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b", "nope"]),
    ({"type": "string", "format": "uri"}, ["https://example.com/", "not a uri"]),
    ({"properties": {"pattern": {"type": "string"}, "format": {"const": {"format": "uri"}}}},
     [{"pattern": "x"}, {"pattern": 1}, {"format": {"format": "uri"}}, {"format": 2}]),
    ({"type": "integer", "maximum": 5}, [10**30, -10**30, 5.0, True, 2**63]),
    ({"type": "object"}, [{1: 2}, {"a": b"x"}]),  # what jsonschema-rs cannot read: Python judges
    ({"const": {"pattern": "x"}}, [{"pattern": "x"}, {"x-python-pattern": "x"}]),
]


@pytest.mark.parametrize(("schema", "instances"), CORNERS)
def test_the_dialect_corners_are_judged_as_python_jsonschema_judges_them(schema, instances):
    judge, python = Judge(schema), python_judge(schema)
    for instance in instances:
        assert judge.is_valid(instance) == python.is_valid(instance), instance


def test_invalid_instances_are_explained_by_python_jsonschema():
    judge = judge_for({"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}})
    [error] = judge.iter_errors({"id": 3})
    assert error.validator == "type" and list(error.path) == ["id"] and "is not of type" in error.message
    assert list(judge.iter_errors({"id": "x"})) == []


def test_a_schema_object_is_compiled_once_and_a_new_one_again():
    schema = {"type": "string"}
    assert judge_for(schema) is judge_for(schema)
    assert judge_for(dict(schema)) is not judge_for(schema)


def test_a_schema_jsonschema_rs_does_not_compile_is_judged_in_python():
    schema = {"type": "object", "patternProperties": {"a\\Z": {"type": "string"}}}  # \\Z: Python only
    judge, python = Judge(schema), python_judge(schema)
    assert judge._fast is None
    for instance in ({"a": "x"}, {"a": 1}, {"ba": 1}, {"ab": 1}):
        assert judge.is_valid(instance) == python.is_valid(instance), instance
    assert not judge.is_valid({"ba": 1})


def test_a_remote_reference_is_never_fetched():
    judge = Judge({"$ref": "https://unreachable.invalid/schema.json"})
    assert judge._fast is None  # jsonschema-rs runs offline; python-jsonschema does not retrieve either


def test_threads_judging_at_once_while_the_cache_evicts(monkeypatch):
    """The references' server threads judge beside the checks: a lookup, an eviction and a
    compile at once must neither raise nor mix up two schemas."""
    import threading

    from conformance.documents import compiled

    monkeypatch.setattr(compiled, "CACHE_SIZE", 2)
    schemas = [{"type": "integer", "maximum": n} for n in range(6)]
    errors = []

    def work():
        try:
            for i in range(300):
                n = i % 6
                assert judge_for(schemas[n]).is_valid(n) and not judge_for(schemas[n]).is_valid(n + 1)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def mcp_definitions():
    from conformance.transport.mcp import known_revisions, revision

    return [(rev, name) for rev in known_revisions() for name in revision(rev).defs]


def test_the_mcp_messages_are_judged_in_their_schemas_own_dialect_formats_unchecked():
    """The MCP transport judges each message against its revision's definition, in the
    schema's own draft (2025-06-18 is Draft 7) without a format checker, as python-jsonschema
    did before it was compiled: the example of each definition and its breaks, both ways."""
    from jsonschema import validators

    from conformance.documents.schemas import inline_refs
    from conformance.transport.mcp import _validator, revision

    compared, drafts = 0, set()
    for rev, name in mcp_definitions():
        doc = revision(rev)
        judge = _validator(rev, name)
        python = validators.validator_for(doc.schema)({**doc.schema, "$ref": f"#/{doc.defs_key}/{name}"})
        assert judge._fast is not None, f"{rev} {name} did not compile"
        drafts.add(type(python).__name__)
        for bad in example_breaks(inline_refs(doc.defs[name], doc.schema))[:12]:
            agree(judge, python, bad.base, f"{rev} {name}: the example")
            agree(judge, python, bad.instance, f"{rev} {name}: {bad.violation}")
            compared += 1
    assert compared > 500 and drafts == {"Draft7Validator", "Draft202012Validator"}, (compared, drafts)
