"""Coverage in a run's report is what that run exercised, beside the statement map's
figure: a statement counts only when one of its requirements ran to a verdict."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from conformance.documents.statements import Statement, coverage, run_coverage
from conformance.report.html import pct, write_html
from conformance.report.summary import Result, build_summary
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict


def _statement(sid: str, checked_by: tuple[str, ...] = (), untestable: str = "",
               later: tuple[str, ...] = ()) -> Statement:
    return Statement(sid, "/x", "says", "MUST", "c", checked_by, untestable, later)


def test_a_statement_is_exercised_when_one_of_its_requirements_reached_a_verdict():
    statements = [
        _statement("s1", ("R1",)),
        _statement("s2", ("R2", "R3")),  # R3 ran: exercised though R2 did not
        _statement("s3", ("R4",)),  # R4 untested: not exercised
        _statement("s4", untestable="needs a payment network"),  # out of both denominators
        _statement("s5", ("LATER-1",), later=("LATER-1",)),  # deferred: out of both
    ]
    ids = ["R1", "R2", "R3", "R4"]
    run = run_coverage(statements, {"R1", "R3"}, ids)
    assert coverage(statements, ids).testable == run.testable == 3
    assert (run.covered, run.not_exercised, run.percent) == (2, ["s3"], 66.7)
    assert run.to_json() == {"testable": 3, "covered": 2, "percent": 66.7, "not_exercised": ["s3"]}
    assert run_coverage(statements, set(), ids).covered == 0
    assert run_coverage([], set()).percent == 100.0


def _summary(statuses: dict[str, str]) -> dict:
    profile = load_profile("bindu")
    results = [Result(r, Verdict(statuses.get(r.id, "passed"))) for r in profile.requirements]
    return build_summary(profile, results, target="reference", seed=1, budget="quick", gate="must",
                         started_at=datetime(2026, 1, 2, tzinfo=UTC), duration_s=1.0, exchanges=10)


def test_a_run_with_untested_and_blocked_requirements_shows_a_lower_exercised_figure(tmp_path: Path):
    whole = _summary({})
    assert whole["coverage_run"]["covered"] == whole["coverage"]["covered"] == whole["coverage"]["testable"]
    assert whole["coverage_run"]["not_exercised"] == []

    profile = load_profile("bindu")
    not_run = {r.id: ("untested" if i % 3 == 0 else "blocked") for i, r in enumerate(profile.requirements)
               if i % 2 == 0}
    not_run[profile.requirements[1].id] = "skipped"
    summary = _summary(not_run)
    cov, run = summary["coverage"], summary["coverage_run"]
    assert cov == whole["coverage"]  # the map's static figure does not move
    assert run["testable"] == cov["testable"] and run["covered"] < cov["covered"]
    reached = {r["id"] for r in summary["requirements"]
               if r["status"] in ("passed", "failed", "expected_failure")}
    by_id = {s.id: s for s in profile.statements}
    assert run["not_exercised"] and all(not set(by_id[s].checked_by) & reached for s in run["not_exercised"])
    assert run["covered"] + len(run["not_exercised"]) == run["testable"]

    (tmp_path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    page = write_html(tmp_path).read_text(encoding="utf-8")
    assert (f"statement map: {cov['covered']} of {cov['testable']} testable statements (100%); "
            f"exercised by this run: {run['covered']} of {run['testable']} ({pct(run['percent'])})") in page
    assert (pct(100.0), pct(68.5), pct(None)) == ("100%", "68.5%", "—")


def test_an_older_summary_without_the_run_figure_shows_the_map_alone(tmp_path: Path):
    summary = _summary({})
    del summary["coverage_run"]
    (tmp_path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    page = write_html(tmp_path).read_text(encoding="utf-8")
    assert "statement map: " in page and "exercised by this run" not in page
