"""One bug, one finding: against a served reference with one fault that refuses the
request shape the checks use for set-up (a caller-chosen taskId) and one unrelated
fault, the report shows one root-cause group for the first, the requirements it
kept from running as `blocked` (not failed), and the other fault still found."""

from __future__ import annotations

import json

from tests.conftest import conformance


def test_a_refused_setup_blocks_instead_of_failing_and_reads_as_one_cause(tmp_path, serve):
    server = serve("bindu", "--control", "--fault", "caller_task_id_refused", "--fault", "no_body_limit")
    report = tmp_path / "r"
    result = conformance("run", "bindu", "--target", server.url, "--config", str(server.config), "--budget", "quick",
                         "--report", str(report))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    summary = json.loads((report / "summary.json").read_text())
    status = {r["id"]: r for r in summary["requirements"]}

    assert status["BINDU-SEND-CREATES-TASK"]["status"] == "failed"  # the requirement about the shape
    blocked = [r for r in summary["requirements"] if r["status"] == "blocked"]
    assert len(blocked) >= 10
    assert all("BINDU-SEND-CREATES-TASK" in r["message"] for r in blocked)  # says what it waits for
    assert summary["counts"]["blocked"] == len(blocked)
    assert summary["grade"] == "non-compliant"

    causes = summary["root_causes"]
    first = causes[0]
    assert "taskId is assigned by the server" in first["signature"]
    assert "BINDU-SEND-CREATES-TASK" in first["requirements"]
    assert {r["id"] for r in blocked} <= set(first["requirements"])  # one group, not one per requirement
    assert sum("taskId is assigned" in c["signature"] for c in causes) == 1

    assert status["BINDU-RPC-BODY-LIMIT"]["status"] == "failed"  # the other fault is still found
    assert any(c["requirements"] == ["BINDU-RPC-BODY-LIMIT"] for c in causes)
    assert "root causes (" in result.stdout and "BLOCKED" in result.stdout

    for r in summary["requirements"]:  # every finding names the statement it breaks and quotes the answer
        if r["status"] == "failed":
            assert "[breaks: " in r["message"], r
            assert "HTTP " in r["message"] or "no answer" in r["message"], r
