"""A gate is only worth its exit code: a missing or refused credential never makes a
requirement fail, a selection that tests nothing never passes, a baseline run reads as
one verdict, one seed sends one run's exchanges, and the replay line works as copied."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from conformance.report.summary import EXIT_FAILED, EXIT_OK, EXIT_UNTESTED
from conformance.run.profiles import load_profile
from tests.conftest import conformance

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}", re.I)


def summary_of(report: Path) -> dict:
    return json.loads((report / "summary.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def bindu_server(tmp_path_factory):
    from tests.conftest import Server

    server = Server("bindu", tmp=tmp_path_factory.mktemp("serve"))
    yield server
    server.stop()


def test_no_token_makes_the_requirements_untested_not_failed(tmp_path, bindu_server):
    result = conformance("run", "bindu", "--target", bindu_server.url, "--budget", "quick", "--report", "r",
                         cwd=tmp_path)
    out = result.stdout + result.stderr
    summary = summary_of(tmp_path / "r")
    assert result.returncode == EXIT_UNTESTED, out[-3000:]
    assert summary["counts"]["failed"] == 0 and summary["counts"]["blocked"] == 0, out[-3000:]
    assert ("full" in summary["credentials_refused"]
            and "requires a bearer token" in summary["credentials_refused"]["full"])
    assert "credential 'full' not given" in out
    untested = [r for r in summary["requirements"] if r["status"] == "untested"]
    assert untested and "BINDU-RPC-BODY-LIMIT" in {r["id"] for r in untested}  # it failed on the 401 before


def test_a_refused_token_is_named_once_and_fails_nothing(tmp_path, bindu_server):
    wrong = "not-a-token-the-server-issued-7f3a"
    result = conformance("run", "bindu", "--target", bindu_server.url, "--budget", "quick", "--report", "r",
                         "--token", wrong, cwd=tmp_path)
    out = result.stdout + result.stderr
    summary = summary_of(tmp_path / "r")
    assert result.returncode == EXIT_UNTESTED, out[-3000:]
    assert summary["counts"]["failed"] == 0 and summary["counts"]["blocked"] == 0, out[-3000:]
    assert re.search(r"credential 'full' refused by the target on the probe: HTTP 401 .*-32010",
                     out), out[-3000:]
    assert wrong not in out and wrong not in (tmp_path / "r" / "summary.json").read_text()


def test_one_refused_credential_leaves_the_others_judged(tmp_path, bindu_server):
    """The served reference's own credentials, but `other` wrong: only what sends `other`
    is untested; the rest is judged as usual (and passes: nothing fails)."""
    config = yaml.safe_load(bindu_server.config.read_text())
    config["credentials"]["other"] = "a-stale-ci-secret"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    result = conformance("run", "bindu", "--config", "c.yaml", "--budget", "quick", "--report", "r",
                         "--allow-untested", cwd=tmp_path)
    out = result.stdout + result.stderr
    summary = summary_of(tmp_path / "r")
    assert list(summary["credentials_refused"]) == ["other"], out[-3000:]
    assert summary["counts"]["failed"] == 0
    ownership = next(r for r in summary["requirements"] if r["id"] == "BINDU-OWNERSHIP")
    assert ownership["status"] == "untested" and "credential 'other'" in ownership["message"]
    assert summary["counts"]["passed"] > 20
    assert result.returncode == EXIT_OK, out[-3000:]


@pytest.mark.parametrize("extra", [("--skip", "*"), ("--only", "BINDU-STREAM-TASK-SNAPSHOTS"),
                                   ("--skip", "*", "--allow-untested")],
                         ids=["skip-all", "only-should", "allow-untested"])
def test_a_selection_that_tests_no_gating_requirement_never_passes(tmp_path, extra):
    assert load_profile("bindu").requirement("BINDU-STREAM-TASK-SNAPSHOTS").level == "SHOULD"
    result = conformance("run", "bindu", "--budget", "quick", "--report", "r", *extra, cwd=tmp_path)
    summary = summary_of(tmp_path / "r")
    assert result.returncode == EXIT_UNTESTED, result.stdout[-2000:]
    assert summary["verdict"] == "incomplete" and "nothing was tested" in summary["verdict_reason"]
    assert "PASS" not in result.stdout.splitlines()[-3]


def verdict_line(out: str) -> str:
    return next(line for line in out.splitlines()
                if re.match(r"^(PASS|FAIL|INCOMPLETE|INTERRUPTED|UNREACHABLE): ", line))


def test_with_a_baseline_the_console_reads_as_one_verdict(tmp_path):
    only = ("--only", "BINDU-CANCEL-TERMINAL", "--only", "BINDU-TASK-NOT-FOUND")
    first = conformance("run", "bindu", "--budget", "quick", "--report", "first",
                        "--fault", "cancel_terminal_succeeds",
                        *only, cwd=tmp_path)
    assert first.returncode == EXIT_FAILED, first.stdout[-2000:]
    written = conformance("baseline", "write", "first/summary.json", "-o", "known.yaml", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    known = conformance("run", "bindu", "--budget", "quick", "--report", "known",
                        "--fault", "cancel_terminal_succeeds",
                        "--baseline", "known.yaml", *only, cwd=tmp_path)
    verdict = verdict_line(known.stdout)
    assert known.returncode == EXIT_OK, known.stdout[-2000:]
    assert verdict.startswith("PASS: no requirement at level MUST or above failed outside the baseline "
                              "(1 known failure)")
    # the grade beside the verdict (ungraded: --only), not a second verdict
    assert verdict.endswith("Grade: ungraded.")
    stale = conformance("run", "bindu", "--budget", "quick", "--report", "stale", "--baseline", "known.yaml",
                        *only,
                        cwd=tmp_path)
    verdict = verdict_line(stale.stdout)
    assert stale.returncode == EXIT_FAILED
    assert verdict.startswith("FAIL: 1 baseline entry stale"), verdict


def requests_of(report: Path) -> dict[str, list[str]]:
    """The requests every case file holds, with the ids a run makes fresh blurred."""
    return {p.name: [UUID.sub("#", json.dumps(e["request"], sort_keys=True))
                     for e in json.loads(p.read_text())["exchanges"]]
            for p in sorted((report / "cases").glob("*.json"))}


def test_one_seed_sends_the_same_exchanges_whatever_earlier_runs_saved(tmp_path):
    """Two runs with one seed in one folder (one example database beside their reports).
    The control: with a shared `examples:` database, replaying what the first run saved
    is asked for, and the second run does send other exchanges."""
    # failures hypothesis finds by drawing (the invalid rows' sweep finds theirs before any draw)
    args = ("run", "bindu", "--budget", "quick", "--seed", "7", "--fault", "rejects_unknown_params",
            "--only", "BINDU-PARAMS-VALID-*")
    runs = {}
    for name in ("a", "b", "shared-a", "shared-b"):
        extra = ("--config", "c.yaml") if name.startswith("shared") else ()
        (tmp_path / "c.yaml").write_text("examples: saved\n")
        result = conformance(*args, "--report", f"reports/{name}", *extra, cwd=tmp_path)
        assert result.returncode == EXIT_FAILED, result.stdout[-2000:]
        summary = summary_of(tmp_path / "reports" / name)
        runs[name] = ({r["id"]: r["exchanges"] for r in summary["requirements"]},
                      requests_of(tmp_path / "reports" / name))
    assert runs["a"] == runs["b"]
    # failures with their requests: the comparison is not empty
    assert runs["a"][1] and all(runs["a"][1].values())
    assert runs["shared-a"][0] != runs["shared-b"][0], "the saved failures are replayed only when asked for"


def test_the_console_replay_line_works_as_copied(tmp_path):
    """The replay line of a run with a config, run as printed from the run's folder."""
    from tests.conftest import Server

    server = Server("bindu", "--fault", "cancel_terminal_succeeds", tmp=tmp_path)
    try:
        config = tmp_path / "ci.yaml"
        config.write_text(server.config.read_text())
        run = conformance("run", "bindu", "--config", "ci.yaml", "--budget", "quick", "--report", "r",
                          "--only", "BINDU-CANCEL-TERMINAL", cwd=tmp_path)
        assert run.returncode == EXIT_FAILED, run.stdout[-2000:]
        line = next(x for x in run.stdout.splitlines() if x.startswith("replay BINDU-CANCEL-TERMINAL: "))
        words = shlex.split(line.split(": ", 1)[1])
        assert (words[:3] == ["conformance", "replay", "r/cases/BINDU-CANCEL-TERMINAL.json"]
                and "--config" in words)
        token = yaml.safe_load(config.read_text())["credentials"]["full"]
        assert token not in line
        again = conformance(*words[1:], cwd=tmp_path)
        assert (again.returncode == EXIT_FAILED
                and again.stdout.splitlines()[-1].startswith("FAIL BINDU-CANCEL-TERMINAL")), again.stdout
        # each request it sent, as it went: a curl line naming the token by its variable, and its answer
        sent = [x for x in again.stdout.splitlines() if x.startswith("curl ")]
        assert any('"tasks/cancel"' in x and '"${CONFORMANCE_TOKEN}"' in x for x in sent), again.stdout
        assert again.stdout.count("  # -> HTTP ") == len(sent) and token not in again.stdout
    finally:
        server.stop()
