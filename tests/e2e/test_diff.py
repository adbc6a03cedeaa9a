"""`conformance diff OLD NEW`: exit 1 on a regression (a requirement of both runs that is
`failed` now and was not), 0 otherwise (a newly `expected_failure` is covered by a
baseline, a new requirement was not checked before); exit 2 for summaries of two
profiles; a warning, and still a diff, when the spec or the binding differs."""

from __future__ import annotations

import json

import pytest

from conformance import cli
from conformance.report.summary import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tests.conftest import conformance

SHA = "a" * 64


def summary(statuses: dict[str, str], profile: str = "bindu", sha: str = SHA,
            binding: str | None = None) -> dict:
    return {"profile": profile, "spec": {"path": "specs/x", "sha256": sha}, "binding": binding, "grade": "g",
            "requirements": [{"id": rid, "level": "MUST", "status": status, "message": f"{rid} {status}"}
                             for rid, status in statuses.items()]}


def diff(tmp_path, capsys, old: dict, new: dict, *flags: str) -> tuple[int, str, str]:
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    code = cli.main(["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), *flags])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("was", ["passed", "untested", "blocked", "skipped", "expected_failure"])
def test_newly_failed_is_a_regression_exit_1(tmp_path, capsys, was):
    code, out, err = diff(tmp_path, capsys, summary({"A": was, "B": "passed"}),
                          summary({"A": "failed", "B": "passed"}),
                          "--json")
    assert code == EXIT_FAILED and err == ""
    changes = json.loads(out)
    assert [r["id"] for r in changes["regressions"]] == ["A"] and changes["regressions"][0]["was"] == was


@pytest.mark.parametrize(("old", "new"), [
    ({"A": "passed"}, {"A": "expected_failure"}),  # accepted by a baseline entry
    ({"A": "failed"}, {"A": "failed"}),  # failing all along: not new
    ({"A": "failed"}, {"A": "passed"}),
    ({"A": "passed"}, {"A": "passed", "NEW": "failed"}),  # not checked before
    ({"A": "passed", "GONE": "passed"}, {"A": "passed"}),
    ({"A": "passed"}, {"A": "untested"}),
])
def test_no_regression_exit_0(tmp_path, capsys, old, new):
    code, out, _ = diff(tmp_path, capsys, summary(old), summary(new), "--json")
    assert code == EXIT_OK, out
    assert json.loads(out)["regressions"] == []


def test_markdown_names_regressions_and_baseline_cover(tmp_path, capsys):
    old = summary({"A": "passed", "B": "passed", "C": "expected_failure", "D": "failed"})
    new = summary({"A": "failed", "B": "expected_failure", "C": "failed", "D": "untested", "E": "failed"})
    code, out, _ = diff(tmp_path, capsys, old, new)
    assert code == EXIT_FAILED
    assert "- `B` (MUST, expected failure, covered by the baseline)" in out
    assert "**No longer covered by the baseline**" in out and "- `C` (MUST)" in out
    assert "- `D` (MUST, now untested)" in out and "- `E` (failed)" in out
    assert out.strip().endswith("2 regression(s): A, C")
    code, out, _ = diff(tmp_path, capsys, new, new)
    assert code == EXIT_OK and "No requirement changed." in out


def test_two_profiles_are_refused_exit_2(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps(summary({"A": "passed"})))
    (tmp_path / "new.json").write_text(json.dumps(summary({"A": "failed"}, profile="canon-verbs")))
    result = conformance("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert result.returncode == EXIT_USAGE and result.stdout == ""
    err = result.stderr
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "'bindu'" in err and "'canon-verbs'" in err and "old.json" in err and "new.json" in err


@pytest.mark.parametrize(("new", "word"), [
    (summary({"A": "failed"}, sha="b" * 64), "spec"),
    (summary({"A": "failed"}, binding="mcp"), "binding"),
])
def test_a_different_spec_or_binding_warns_and_still_diffs(tmp_path, capsys, new, word):
    code, out, err = diff(tmp_path, capsys, summary({"A": "passed"}), new)
    assert code == EXIT_FAILED and "Started failing" in out
    assert err.startswith("warning: ") and f"the {word} differs" in err and len(err.strip().splitlines()) == 1


def test_a_real_run_against_itself_is_exit_0(tmp_path):
    report = tmp_path / "r"
    run = conformance("run", "bindu", "--budget", "quick", "--only", "BINDU-RPC-ID-ECHO",
                      "--report", str(report))
    assert run.returncode == 0, run.stdout + run.stderr
    result = conformance("diff", str(report / "summary.json"), str(report / "summary.json"))
    assert result.returncode == EXIT_OK and result.stderr == "" and "No requirement changed." in result.stdout
