"""`conformance fuzz`: a campaign past the budgets, progress at least every 10 s,
each distinct failure written once as a case file the moment it is found."""

from __future__ import annotations

import json
import re

from conformance.ledger import BUCKETS
from tests.conftest import conformance, in_process


def test_a_campaign_reports_progress_and_writes_each_new_failure_once(tmp_path):
    report = tmp_path / "fuzz"
    result = conformance("fuzz", "bindu", "--for", "5s", "--progress", "1", "--workers", "2",
                         "--fault", "no_body_limit",
                         "--report", str(report), timeout=300)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr
    progress = [line for line in result.stdout.splitlines()
                if re.match(r"\[\d\d:\d\d\] \d+ exchanges \(", line)]
    assert len(progress) >= 3, result.stdout  # about one a second while the workers generate, one at the end
    found = [line for line in result.stdout.splitlines() if line.startswith("NEW FAILURE")]
    assert len(found) == 1 and "BINDU-RPC-BODY-LIMIT" in found[0]  # both workers find it: reported once
    cases = list((report / "cases").glob("*.json"))
    assert [c.name.startswith("BINDU-RPC-BODY-LIMIT") for c in cases] == [True]
    assert [s.stem for s in (report / "cases").glob("*.sh")] == [cases[0].stem]  # its requests, in one paste
    assert json.loads(cases[0].read_text())["requirement"] == "BINDU-RPC-BODY-LIMIT"
    summary = json.loads((report / "fuzz.json").read_text())
    assert (summary["exchanges"] > 0
            and [f["requirement"] for f in summary["failures"]] == ["BINDU-RPC-BODY-LIMIT"])
    # where both workers' CPU went, by phase (conformance/ledger.py; bench/bench_speed.py prints it)
    assert set(summary["cpu_ms"]) == set(BUCKETS)
    assert summary["cpu_ms"]["transport"] > 0 and summary["cpu_ms"]["judging"] > 0
    # no shared database configured: nothing to count, and nothing said of one
    assert summary["replayed_from_shared"] is None and "shared database" not in result.stdout


def test_a_campaign_needs_a_duration_it_can_read(tmp_path, capsys):
    result = in_process(capsys, "fuzz", "bindu", "--for", "a while", "--report", str(tmp_path / "f"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    for every in ("0.1", "60", "often"):
        result = in_process(capsys, "fuzz", "bindu", "--for", "5s", "--progress", every,
                            "--report", str(tmp_path / "f"))
        assert (result.returncode == 2 and "--progress" in result.stderr
                and "Traceback" not in result.stderr), result.stderr


def test_a_campaign_against_a_target_that_is_not_there_exits_3_with_one_line(tmp_path):
    from tests.conftest import free_port

    report = tmp_path / "f"
    result = conformance("fuzz", "bindu", "--for", "5s", "--target", f"http://127.0.0.1:{free_port()}",
                         "--report", str(report))
    assert result.returncode == 3, result.stdout + result.stderr
    assert ("NEW FAILURE" not in result.stdout and "did not answer" in result.stderr
            and "Traceback" not in result.stderr)
    assert json.loads((report / "fuzz.json").read_text())["unreachable"]


def test_the_first_round_is_quick_and_the_others_draw_at_the_campaign_budget(tmp_path, monkeypatch):
    """Every requirement is reached within the first minutes whatever the campaign's length:
    round 1 runs at the quick budget, the rounds after it at the campaign budget."""
    import conformance.runner
    from conformance import fuzz

    budgets: dict[int, set[str]] = {}
    rounds = [1]
    real = conformance.runner.execute

    def execute(req, run):
        budgets.setdefault(rounds[-1], set()).add(run.budget.name)
        return real(req, run)

    def emit(event):
        if event[0] == "round":
            rounds.append(event[2] + 1)

    monkeypatch.setattr(conformance.runner, "execute", execute)
    fuzz.work("bindu", "reference", {}, None, (), 6.0, str(tmp_path), 1, 0, 1, emit,
              only=("BINDU-PARAMS-VALID-TASKS-GET",))
    assert budgets[1] == {"quick"} and len(budgets) >= 2, budgets
    assert all(names == {"campaign"} for r, names in budgets.items() if r > 1), budgets
