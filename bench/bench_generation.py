"""How long 50 examples of Agent Plaza's largest union-bearing params schema take with
``strategy_for`` (union split into variants) against ``hypothesis_jsonschema.from_schema``
on the whole schema. A measurement, not a test: run ``python bench/bench_generation.py``."""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis_jsonschema import from_schema

from conformance.documents.schemas import inline_refs, load_document, validator_for
from conformance.generation.invalid import mutations
from conformance.generation.strategies import CUSTOM_FORMATS, split_unions, strategy_for

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = 50


def _unions(schema) -> int:
    if isinstance(schema, dict):
        return sum(k in ("oneOf", "anyOf") for k in schema) + sum(_unions(v) for v in schema.values())
    if isinstance(schema, list):
        return sum(_unions(v) for v in schema)
    return 0


def _time(strategy, validator) -> tuple[float, int, int]:
    drawn: list = []

    @settings(
        max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(strategy)
    def run(instance):
        drawn.append(instance)

    start = time.perf_counter()
    run()
    return time.perf_counter() - start, len(drawn), sum(not validator.is_valid(i) for i in drawn)


def main() -> int:
    warnings.simplefilter("ignore")
    doc = load_document(ROOT / "specs/agent-plaza/a2a-personal.json")
    schemas = {name: inline_refs({"$ref": f"#/schemas/{name}"}, doc) for name in doc["schemas"]}
    name = max(
        (n for n in schemas if _unions(schemas[n])),
        key=lambda n: (len(split_unions(schemas[n])), len(json.dumps(schemas[n]))),
    )
    schema = schemas[name]
    validator = validator_for(schema)
    print(f"schema: #/schemas/{name} ({len(json.dumps(schema))} chars, {_unions(schema)} unions, "
          f"{len(split_unions(schema))} variants)")

    seconds, n, bad = _time(strategy_for(schema), validator)
    print(f"strategy_for (split unions):      {seconds:7.2f} s for {n} examples ({bad} invalid)")
    seconds, n, bad = _time(from_schema(schema, custom_formats=CUSTOM_FORMATS), validator)
    print(f"from_schema (whole schema):       {seconds:7.2f} s for {n} examples ({bad} invalid)")

    @settings(max_examples=20, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy_for(schema))
    def collect(instance):
        samples.append(instance)

    samples: list = []
    collect()
    start = time.perf_counter()
    total = sum(len(mutations(schema, s)) for s in samples)
    per = (time.perf_counter() - start) / len(samples) * 1000
    print(f"mutations():                      {per:7.2f} ms per instance ({total / len(samples):.0f} "
          "breaks each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
