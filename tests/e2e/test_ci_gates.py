"""CI gates and reproducers: baselines (listed, unlisted, stale), grades, diff, and a
standalone pytest reproducer that fails against a faulty server and passes against a
clean one."""

import json
import os
import subprocess
import sys

import yaml

from tests.conftest import conformance, in_process

ONLY = ["--only", "BINDU-CANCEL-TERMINAL", "--only", "BINDU-HISTORY-LENGTH", "--budget", "quick"]


def run(tmp_path, name, *args):
    report = tmp_path / name
    result = conformance("run", "bindu", *ONLY, "--report", str(report), *args)
    return result, json.loads((report / "summary.json").read_text())


def test_baseline_listed_unlisted_and_stale(tmp_path, capsys):
    first, summary = run(tmp_path, "first", "--fault", "cancel_terminal_succeeds")
    assert first.returncode == 1
    baseline = tmp_path / "baseline.yaml"
    assert (conformance("baseline", "write", str(tmp_path / "first" / "summary.json"),
                        "-o", str(baseline)).returncode == 0)
    entries = yaml.safe_load(baseline.read_text())
    assert [e["id"] for e in entries] == ["BINDU-CANCEL-TERMINAL"] and entries[0]["reason"]

    listed, summary = run(tmp_path, "listed", "--fault", "cancel_terminal_succeeds",
                          "--baseline", str(baseline))
    assert listed.returncode == 0, listed.stdout
    assert summary["counts"]["expected_failures"] == 1 and summary["counts"]["failed"] == 0
    assert "XFAIL" in listed.stdout

    unlisted, summary = run(tmp_path, "unlisted", "--fault", "cancel_terminal_succeeds",
                            "--fault", "history_length_ignored",
                            "--baseline", str(baseline))
    assert unlisted.returncode == 1
    assert [r["id"] for r in summary["requirements"] if r["status"] == "failed"] == ["BINDU-HISTORY-LENGTH"]

    stale, summary = run(tmp_path, "stale", "--baseline", str(baseline))
    assert stale.returncode == 1
    assert summary["baseline"]["stale"] and "BINDU-CANCEL-TERMINAL" in summary["baseline"]["stale"][0]
    assert "delete it from" in stale.stdout and "BINDU-CANCEL-TERMINAL" in stale.stdout
    junit = (tmp_path / "stale" / "junit.xml").read_text()
    assert "is stale" in junit

    bad = tmp_path / "bad.yaml"
    bad.write_text("- id: NO-SUCH-REQUIREMENT\n  reason: x\n")
    result = in_process(capsys, "run", "bindu", "--baseline", str(bad))
    assert result.returncode == 2 and "unknown requirement" in result.stderr


def test_grade_and_levels(tmp_path):
    result = conformance("run", "bindu", "--budget", "quick", "--fault", "skill_docs_missing",
                         "--report", str(tmp_path / "r"))
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert result.returncode == 0  # only a SHOULD failed; the gate is MUST
    assert summary["levels"]["SHOULD"]["failed"] == 1 and summary["levels"]["MUST"]["failed"] == 0
    assert summary["grade"] == "MUST-compliant"
    gated = conformance("run", "bindu", "--budget", "quick", "--fault", "skill_docs_missing",
                        "--level", "should",
                        "--only", "BINDU-SKILLS-CONSISTENT", "--report", str(tmp_path / "g"))
    assert gated.returncode == 1
    assert json.loads((tmp_path / "g" / "summary.json").read_text())["grade"] == "ungraded"  # partial run


def test_diff_lists_exactly_the_changed_requirements(tmp_path):
    _, _ = run(tmp_path, "old", "--fault", "cancel_terminal_succeeds")
    _, _ = run(tmp_path, "new", "--fault", "history_length_ignored")
    result = conformance("diff", str(tmp_path / "old" / "summary.json"),
                         str(tmp_path / "new" / "summary.json"), "--json")
    assert result.returncode == 1, result.stderr  # BINDU-HISTORY-LENGTH started failing: a regression
    changes = json.loads(result.stdout)
    assert [c["id"] for c in changes["started_failing"]] == ["BINDU-HISTORY-LENGTH"]
    assert [c["id"] for c in changes["stopped_failing"]] == ["BINDU-CANCEL-TERMINAL"]
    assert [c["id"] for c in changes["regressions"]] == ["BINDU-HISTORY-LENGTH"]
    text = conformance("diff", str(tmp_path / "old" / "summary.json"),
                       str(tmp_path / "new" / "summary.json")).stdout
    assert "Started failing" in text and "BINDU-HISTORY-LENGTH" in text
    same = conformance("diff", str(tmp_path / "old" / "summary.json"), str(tmp_path / "old" / "summary.json"))
    assert same.returncode == 0 and "No requirement changed." in same.stdout


def test_pytest_reproducer_fails_on_faulty_and_passes_on_clean(tmp_path, serve):
    faulty = serve("bindu", "--control", "--fault", "cancel_terminal_succeeds")
    clean = serve("bindu", "--control")
    report = tmp_path / "r"
    result = conformance("run", "bindu", "--target", faulty.url, "--config", str(faulty.config), *ONLY,
                         "--report", str(report))
    assert result.returncode == 1
    case = report / "cases" / "BINDU-CANCEL-TERMINAL.json"
    script = conformance("replay", "--pytest", str(case)).stdout
    repro = tmp_path / "test_repro.py"
    repro.write_text(script)

    def pytest_against(server):
        env = {**os.environ, "CONFORMANCE_TARGET": server.url, "CONFORMANCE_CONFIG": str(server.config)}
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(repro)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    failing = pytest_against(faulty)
    assert failing.returncode == 1, failing.stdout
    assert "BINDU-CANCEL-TERMINAL" in failing.stdout
    passing = pytest_against(clean)
    assert passing.returncode == 0, passing.stdout
