"""The Agent Plaza profile end to end: it passes against the reference in process and
served over loopback with every one of the document's 52 commands served and tested; the
statement map covers the document's testable statements."""

from __future__ import annotations

import json
import re

from conformance.profiles import load_profile
from tests.conftest import conformance


def summary_of(report) -> dict:
    return json.loads((report / "summary.json").read_text())


def test_plaza_passes_in_process_with_every_command_served(tmp_path):
    report = tmp_path / "r"
    result = conformance("run", "agent-plaza", "--budget", "quick", "--report", str(report))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    summary = summary_of(report)
    verdicts = {r["id"]: r["status"] for r in summary["requirements"]}
    assert set(verdicts.values()) == {"passed"}, {k: v for k, v in verdicts.items() if v != "passed"}
    # every command of schemas.command is served: its valid inputs are tested, none untested
    commands = [b["properties"]["operation"]["const"] for b in load_profile("agent-plaza").spec["schemas"]["command"]["anyOf"]]
    assert all(verdicts[f"PLAZA-CMD-VALID-{c.replace('_', '-').upper()}"] == "passed" for c in commands)


def test_plaza_passes_against_the_served_reference(tmp_path, serve):
    server = serve("agent-plaza", "--control")
    report = tmp_path / "served"
    result = conformance("run", "agent-plaza", "--config", str(server.config), "--budget", "quick",
                         "--report", str(report), "--allow-untested")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    summary = summary_of(report)
    counts = summary["counts"]
    assert counts["failed"] == counts["blocked"] == 0 and counts["passed"] >= 200, counts
    assert counts["untested"] == 0, counts


def test_coverage_is_at_least_95_percent():
    result = conformance("list", "agent-plaza", "--coverage")
    assert result.returncode == 0, result.stderr
    covered, testable, percent, deferred = re.search(
        r"(\d+) of (\d+) testable statements covered \(([\d.]+)%\); \d+ untestable; (\d+) deferred", result.stdout).groups()
    assert float(percent) >= 95.0 and int(deferred) == 0
    assert "problem:" not in result.stdout
