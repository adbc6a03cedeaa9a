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
    from conformance.drivers import fuzz

    budgets: dict[int, set[str]] = {}
    rounds = [1]
    real = fuzz.execute

    def execute(req, run):
        budgets.setdefault(rounds[-1], set()).add(run.budget.name)
        return real(req, run)

    def emit(event):
        if event[0] == "round":
            rounds.append(event[2] + 1)

    monkeypatch.setattr(fuzz, "execute", execute)  # runner.execute, as the campaign's worker calls it
    fuzz.work("bindu", "reference", {}, None, (), 6.0, str(tmp_path), 1, 0, 1, emit,
              only=("BINDU-PARAMS-VALID-TASKS-GET",))
    assert budgets[1] == {"quick"} and len(budgets) >= 2, budgets
    assert all(names == {"campaign"} for r, names in budgets.items() if r > 1), budgets


def test_a_campaign_over_each_binding_keeps_what_a_baseline_lists_apart_and_reports_what_it_found(tmp_path):
    """--binding all: every round over both of Canon's bindings, a failure found over each; the
    baseline lists it over one binding, so that one is a KNOWN FAILURE (never exit 1) and the
    other a NEW FAILURE; report.html and the JUnit file (at the path asked, a suite per binding)
    say which is which."""
    import xml.etree.ElementTree as ET

    rid = "CANON-MESSAGE-ID-CONFLICT"
    baseline = tmp_path / "known.yaml"
    baseline.write_text(f"- id: {rid}\n  binding: http\n  reason: accepted again, issue 7\n")
    report, junit = tmp_path / "f", tmp_path / "ci" / "fuzz.xml"

    def campaign(*more: str):
        return conformance("fuzz", "canon-verbs", "--for", "5s", "--binding", "all", "--only", rid,
                           "--fault", "message_id_conflict_accepted", "--report", str(report),
                           "--junit", str(junit), *more, timeout=300)

    result = campaign("--baseline", str(baseline))
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr
    assert "over http, mcp" in result.stdout.splitlines()[0]
    known = [x for x in result.stdout.splitlines() if x.startswith("KNOWN FAILURE")]
    new = [x for x in result.stdout.splitlines() if x.startswith("NEW FAILURE")]
    assert len(known) == 1 and f"{rid}[http] (baseline: accepted again, issue 7)" in known[0]
    assert len(new) == 1 and f"{rid}[mcp]" in new[0]
    data = json.loads((report / "fuzz.json").read_text())
    assert data["bindings"] == ["http", "mcp"]
    found = sorted((f["binding"], bool(f["baseline"])) for f in data["failures"])
    assert found == [("http", True), ("mcp", False)]
    page = (report / "report.html").read_text()
    assert "fuzz campaign report" in page and "1 distinct failure(s) and 1 known from the baseline" in page
    suites = {s.get("name"): s for s in ET.parse(junit).getroot().findall("testsuite")}
    assert sorted(suites) == ["conformance canon-verbs over http", "conformance canon-verbs over mcp"]
    mcp = next(c for c in suites["conformance canon-verbs over mcp"] if c.get("name") == f"{rid}[mcp]")
    http = next(c for c in suites["conformance canon-verbs over http"] if c.get("name") == f"{rid}[http]")
    assert mcp.find("failure") is not None and http.find("skipped").get("type") == "pytest.xfail"

    baseline.write_text(f"- id: {rid}\n  reason: accepted again, over both\n")  # every binding
    again = campaign("--baseline", str(baseline))
    assert again.returncode == 0, again.stdout[-2000:]
    assert "NEW FAILURE" not in again.stdout and again.stdout.count("KNOWN FAILURE") == 2
