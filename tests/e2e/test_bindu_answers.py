"""No Bindu check crashes on an answer of another shape (issue 23): a server that writes
``contextId`` instead of ``context_id`` made 13 of its 19 failures ``unexpected KeyError:
'context_id'`` inside the checks. Every read of an answer is now a finding (kind
``malformed_answer``) that says what was looked for, and rows whose subject is not the
answer's casing go on with what the kit itself sent."""

from __future__ import annotations

from typing import Any

import pytest

import conformance.kit.shapes as shapes
from conformance.proofs.selftest import crashes
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict, execute

PROFILE = load_profile("bindu")


def _verdicts(faults: tuple[str, ...] = (), shape_seed: int | None = None) -> dict[str, Verdict]:
    run = open_run(PROFILE, "reference", faults=faults, budget="quick", shrink=False, shapes=shape_seed)
    try:
        return {req.id: execute(req, run) for req in PROFILE.requirements}
    finally:
        run.http.close()


def _crashes(verdicts: dict[str, Verdict]) -> list[str]:
    return [f"{rid}: {c}" for rid, v in verdicts.items() for c in crashes(v)]


def test_camel_case_task_members_are_findings_not_crashes() -> None:
    verdicts = _verdicts(("camel_case_responses",))
    assert _crashes(verdicts) == []
    failed = {rid for rid, v in verdicts.items() if v.status == "failed"}
    # the rows about the answer's members say so; the others judge their own subject
    assert {"BINDU-PARAMS-CASING", "BINDU-SEND-CREATES-TASK", "BINDU-RESULT-TASKS-GET"} <= failed
    assert "context_id" in verdicts["BINDU-SEND-CREATES-TASK"].message
    assert verdicts["BINDU-CONTEXT-CLEAR"].status == "passed"
    assert not [rid for rid, v in verdicts.items() if v.status == "blocked"]


@pytest.mark.parametrize("keep", [(), ("id", "status", "state")])
def test_every_member_renamed_crashes_no_check(monkeypatch: Any, keep: tuple[str, ...]) -> None:
    """Every answer member renamed (but the JSON-RPC envelope and ``keep``): checks fail or
    block with findings, and none raises."""
    named = frozenset(shapes.JSONRPC_ENVELOPE | set(keep))
    monkeypatch.setattr(shapes, "rules_of", lambda profile: shapes.ShapeRules(named))
    verdicts = _verdicts(shape_seed=1)
    assert _crashes(verdicts) == []
    findings = [f for v in verdicts.values() if v.status in ("failed", "blocked") for f in v.failures]
    assert any(f.kind == "malformed_answer" for f in findings)
