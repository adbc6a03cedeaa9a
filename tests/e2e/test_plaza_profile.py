"""The Agent Plaza profile end to end: the statement map covers the document's testable
statements; the invalid-command rows judge by the branch the operation names; the marker
never mends a break. (That it passes against the reference served over loopback with every
one of the document's 52 commands served and tested: tests/e2e/test_deployments.py's
test_control_elsewhere_and_a_proxy_in_front_give_the_verdicts_of_the_plain_run[agent-plaza];
in process, every fault caught and every variant passed: tests/e2e/test_selftest.py.)"""

from __future__ import annotations

import json
import re

from conformance.run.profiles import load_profile
from tests.conftest import conformance


def test_coverage_is_at_least_95_percent():
    result = conformance("list", "agent-plaza", "--coverage")
    assert result.returncode == 0, result.stderr
    covered, testable, percent, deferred = re.search(
        r"(\d+) of (\d+) testable statements covered \(([\d.]+)%\); \d+ untestable; (\d+) deferred",
        result.stdout).groups()
    assert float(percent) >= 95.0 and int(deferred) == 0
    assert "problem:" not in result.stdout


def test_a_break_is_judged_by_the_branch_its_operation_names_as_by_the_whole_union():
    """The invalid-command rows tolerate a break that is another command's valid input; they
    ask only the branch named by ``operation``, which must agree with the whole union."""
    from hypothesis import HealthCheck, given, settings

    from conformance.documents.schemas import validator_for
    from conformance.generation.invalid import invalid_strategy
    from conformance.protocols.plaza.commands import branch_validators, data_schema, is_some_command

    profile = load_profile("agent-plaza")
    branches = branch_validators(profile)
    union = validator_for(data_schema(profile))
    seen = {True: 0, False: 0}
    for name in ("receive_pull", "group_send", "private_send", "status"):
        @settings(max_examples=30, database=None, suppress_health_check=list(HealthCheck), deadline=None)
        @given(invalid_strategy(profile.operations[name].params_schema))
        def agrees(bad):
            by_branch = is_some_command(branches, bad.instance)
            assert by_branch == union.is_valid(bad.instance), bad.instance
            seen[by_branch] += 1

        agrees()
    assert seen[False] > 0 and len(branches) == 52


def test_the_marker_never_mends_a_break():
    """The error-shape rows put a marker into the broken text (no error may quote it); where
    the text itself is what breaks (empty: minLength), the marker would mend it."""
    from conformance.documents.schemas import validator_for
    from conformance.generation.invalid import example_breaks
    from conformance.protocols.plaza.parameters import MARKER, marked, text_operation

    schema = text_operation(load_profile("agent-plaza").operations["SendMessage"]).params_schema
    breaks = example_breaks(schema)
    text_breaks = [b for b in breaks if b.violation.pointer == "/message/parts/0/text"]
    assert {"minLength", "maxLength"} <= {b.violation.keyword for b in text_breaks}
    for bad in breaks:
        sent = marked(bad, schema)
        assert not validator_for(schema).is_valid(sent), (bad.violation, sent)
    assert any(MARKER in json.dumps(marked(b, schema)) for b in breaks)
