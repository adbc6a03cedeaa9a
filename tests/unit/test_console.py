"""The closing console text is a function of summary.json alone (report/console.py): what
the run did not reach and why, the verdict with its grade, the counts per binding, root
causes, replay commands for the first failed cases and where the reports are."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance.failures import Failure
from conformance.report.console import REPLAYS, closing_lines
from conformance.report.summary import Result, build_summary
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict


def summary_of(rows: list[tuple[str, str | None, str]], bindings: list[str | None], **given: Any) -> dict:
    """A summary of ``rows`` (requirement index, binding, status) of the a2a profile; a failed
    row has its case file."""
    profile = load_profile("a2a")
    results = []
    for index, binding, status in rows:
        req = profile.requirements[int(index)]
        verdict = Verdict(status, f"{req.id} {status}", failures=[Failure("expectation", "x")]
                          if status == "failed" else [], reason="credential" if status == "untested" else "")
        stem = f"{req.id}.{binding}" if len(bindings) > 1 else req.id
        results.append(Result(req, verdict, binding=binding,
                              case=f"cases/{stem}.json" if status == "failed" else None))
    return build_summary(profile, results, target="http://127.0.0.1:9", seed=1, budget="quick", gate="must",
                         started_at=datetime.now(UTC), duration_s=2.0, exchanges=40, bindings=bindings,
                         **given)


def test_one_binding_says_the_verdict_the_counts_the_replays_and_the_reports(tmp_path: Path) -> None:
    rows = [("0", "jsonrpc", "passed"), ("1", "jsonrpc", "failed"), ("2", "jsonrpc", "untested")]
    summary = summary_of(rows, ["jsonrpc"], config="run.yaml", refused={"other": "was refused (HTTP 401)"},
                         not_put_back=["the name of mailbox m1"],
                         stopped=("time", "the run's time limit passed"))
    lines = closing_lines(summary, report_dir=tmp_path, not_run=1, junit="out/junit.xml")
    assert lines == closing_lines(summary, report_dir=tmp_path, not_run=1, junit="out/junit.xml")  # pure
    failed = summary["requirements"][1]["id"]
    assert lines[0] == "1 requirements not run: the run's time limit passed"
    assert "credential 'other' was refused (HTTP 401): the requirements that send it are untested" in lines
    assert "warning: not put back: the name of mailbox m1" in lines
    assert summary["not_reached"] and all(line in lines for line in summary["not_reached"])
    verdict = next(line for line in lines if line.startswith(summary["verdict"].upper() + ": "))
    assert verdict.endswith(f"Grade: {summary['grade']}.")
    assert any(line.startswith("  1 passed, 1 failed, 0 expected failures, 0 blocked, 1 untested") and
               "of 3 requirements; 40 exchanges in 2.0 s (20.0/s)" in line for line in lines)
    [replay] = [line for line in lines if line.startswith("replay ")]
    assert replay.startswith(f"replay {failed}: conformance replay {tmp_path / 'cases' / failed}.json")
    assert replay.endswith("--target http://127.0.0.1:9 --config run.yaml")
    assert lines[-1] == (f"report: {tmp_path / 'report.html'} (summary.json, badge.svg, cases/, "
                         "JUnit out/junit.xml)")


def test_several_bindings_name_their_rows_and_count_the_cases_past_the_replays(tmp_path: Path) -> None:
    bindings = ["jsonrpc", "grpc"]
    rows = [(str(i), b, "failed") for i in range(4) for b in bindings]
    summary = summary_of(rows, bindings)
    lines = closing_lines(summary, report_dir=tmp_path)
    assert not any("not run" in line for line in lines)  # nothing said when every row ran
    per = [line.split(":")[0] for line in lines if line.startswith(("  jsonrpc:", "  grpc:"))]
    assert per == ["  jsonrpc", "  grpc"]
    assert any(line.endswith("of 8 rows (requirement and binding); 40 exchanges in 2.0 s (20.0/s)")
               for line in lines)
    replays = [line for line in lines if line.startswith("replay ")]
    first = summary["requirements"][0]
    assert len(replays) == REPLAYS
    assert replays[0].startswith(f"replay {first['id']}[{first['binding']}]: ")
    assert f"  ... and {len(rows) - REPLAYS} more cases in {tmp_path / 'cases'}" in lines
    assert lines[-1].endswith("(summary.json, badge.svg, cases/)")
    causes = summary["root_causes"]
    head = lines.index(f"root causes ({len(causes)}, largest first):")
    assert lines[head + 1].startswith(f"  {causes[0]['count']:3} x ")
