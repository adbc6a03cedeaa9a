"""A run always ends: `conformance run` against deliberately broken targets on
loopback (tests/hostile.py) ends within its limits, exits 1 or 3 with a one-line
reason, stays under 300 MB resident, writes its reports, prints no traceback and
leaks no secret.

The runs are started together (a few at a time) in a module fixture, then each
test judges one; each child writes its own peak memory (tests/peak_memory.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.run.profiles import load_profile
from conformance.transport.http import DEAD_AFTER
from tests import hostile, peak_memory

ROOT = Path(__file__).resolve().parents[2]
PEAK_MB = 300
SECRETS = {
    "full": "tok-full-7Qx91fZr",  # given as CONFORMANCE_TOKEN
    "read": "tok-read-Lk2m8PqW",
    "write": "tok-write-Zt5v0NaE",
    "other": "tok-other-Hh4c6YuB",
    "expired": "tok-expired-Rr9d3XsJ",
}
EXCHANGE_TIMEOUT = 1.0  # config `timeout` of the runs whose target hangs or drips


@dataclass
class Run:
    code: int
    seconds: float
    peak_mb: int
    out: str
    err: str
    report: Path
    server: hostile.HostileServer

    @property
    def summary(self) -> dict:
        return json.loads((self.report / "summary.json").read_text(encoding="utf-8"))


def run_conformance(tmp: Path, name: str, url: str, *, config: str, extra: tuple[str, ...] = (),
                    env: dict[str, str] | None = None,
                    kill_after: float = 300) -> tuple[int, float, int, str, str, Path]:
    """`conformance run bindu` as a user runs it; (exit code, seconds, peak MB, stdout, stderr,
    report dir)."""
    work = tmp / name
    work.mkdir()
    (work / "conformance.yaml").write_text(config, encoding="utf-8")
    out, err, peak = work / "stdout", work / "stderr", work / "peak"
    started = time.monotonic()
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(
            peak_memory.command(peak, "run", "bindu", "--target", url, "--budget", "quick",
                                "--config", "conformance.yaml", "--report", "r", *extra),
            cwd=work, stdout=o, stderr=e, env={**os.environ, **(env or {})},
        )
        timer = threading.Timer(kill_after, proc.kill)  # a hang fails the test instead of the suite
        timer.start()
        proc.wait()
        timer.cancel()
    return (proc.returncode, time.monotonic() - started, peak_memory.read_mb(peak),
            out.read_text(), err.read_text(), work / "r")


HANGING = f"timeout: {EXCHANGE_TIMEOUT}\n"
TOKENS = "credentials:\n" + "".join(f"  {k}: {v}\n" for k, v in SECRETS.items() if k != "full")

# behaviour -> (handler, config, the exit code it must end with)
BEHAVIOURS = {
    "body_drip": (hostile.body_drip, HANGING, 3),
    "header_drip": (hostile.header_drip, HANGING, 3),
    "first_then_hang": (hostile.first_then_hang, HANGING, 3),
    "huge_body": (hostile.huge_body, "", 3),
    "endless_body": (hostile.endless_body, "", 3),
    "gzip_bomb": (hostile.gzip_bomb, "", 3),
    "deep_json": (hostile.deep_json_after_first, "", 1),
    "echo_secrets": (hostile.echo_secrets, TOKENS, 1),
    "reset_first": (hostile.reset_first, "", 1),
    "invalid_utf8": (hostile.invalid_utf8, "", 3),
    "html_proxy": (hostile.html_proxy, "", 3),
    "not_http": (hostile.not_http, HANGING, 3),
    "redirect_off_host": (None, "", 3),
}


@pytest.fixture(scope="module")
def elsewhere():
    """A server on another loopback address that must never be contacted."""
    server = hostile.HostileServer(hostile.well_behaved, host="127.0.0.2")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def runs(tmp_path_factory, elsewhere) -> dict[str, Run]:
    tmp = tmp_path_factory.mktemp("hostile")
    hostile.gzip_bomb_body()  # computed before the server must answer with it
    servers = {name: hostile.HostileServer(handler or hostile.redirect_to(elsewhere.url))
               for name, (handler, _, _) in BEHAVIOURS.items()}

    def one(name: str) -> Run:
        env = {"CONFORMANCE_TOKEN": SECRETS["full"]}
        result = run_conformance(tmp, name, servers[name].url, config=BEHAVIOURS[name][1], env=env)
        return Run(*result, server=servers[name])

    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            done = dict(zip(BEHAVIOURS, pool.map(one, BEHAVIOURS), strict=True))
    finally:
        for server in servers.values():
            server.stop()
    return done


@pytest.mark.parametrize("name", list(BEHAVIOURS))
def test_a_broken_target_ends_the_run_cleanly(runs, name):
    run = runs[name]
    expected = BEHAVIOURS[name][2]
    transcript = (f"exit {run.code} after {run.seconds:.1f} s, {run.peak_mb} "
                  f"MB\n{run.out[-3000:]}\n{run.err[-3000:]}")
    assert run.code == expected, transcript
    # ends within its deadline plus a margin: the preflight's attempts, each cut at the
    # exchange deadline, plus start-up and reports (the same runs never ended before)
    assert run.seconds < 60 + DEAD_AFTER * EXCHANGE_TIMEOUT, transcript
    assert 0 < run.peak_mb < PEAK_MB, transcript
    assert "Traceback" not in run.out + run.err, transcript
    assert "internal error" not in run.out + run.err, transcript
    assert (run.report / "report.html").is_file() and (run.report / "badge.svg").is_file(), transcript
    summary = run.summary
    assert len(summary["requirements"]) == len(load_profile("bindu").requirements)
    if expected == 3:
        reason = summary["unreachable"]
        assert reason and "\n" not in reason, transcript
        assert f"error: {reason}" in run.out  # the one-line reason on the console
        untested = [r for r in summary["requirements"] if r["status"] == "untested"]
        assert untested, "the requirements the run could not reach stay in the denominator"
        assert summary["grade"] == "ungraded"
    else:
        assert summary["counts"]["failed"] > 0


def test_a_dripping_answer_is_cut_at_the_exchange_deadline(runs):
    summary = runs["body_drip"].summary
    assert "no complete answer within the exchange's deadline" in summary["unreachable"]
    assert f"{DEAD_AFTER} exchanges in a row" in summary["unreachable"]


def test_a_target_that_stops_answering_ends_the_run_early(runs):
    run = runs["first_then_hang"]
    statuses = [r["status"] for r in run.summary["requirements"]]
    assert statuses.count("untested") >= len(statuses) - DEAD_AFTER
    assert "stopped answering" in run.summary["unreachable"]
    assert run.summary["exchanges"] <= 1 + 2 * DEAD_AFTER
    assert "requirements not run: " in run.out  # one line for all of them, not one each


@pytest.mark.parametrize("name", ["huge_body", "endless_body", "gzip_bomb"])
def test_an_oversized_answer_is_cut_and_reported(runs, name):
    assert "answer larger than 8 MiB" in runs[name].summary["unreachable"]


def test_deeply_nested_json_is_a_finding(runs):
    summary = runs["deep_json"].summary
    messages = " ".join(r["message"] for r in summary["requirements"])
    assert "JSON nested deeper than" in messages or "not a JSON object" in messages


def test_one_reset_does_not_condemn_the_target(runs):
    run = runs["reset_first"]
    assert run.summary["unreachable"] is None
    assert run.server.connections > 1


def test_redirects_are_not_followed_off_the_target(runs, elsewhere):
    assert "HTTP 302" in runs["redirect_off_host"].summary["unreachable"]
    assert elsewhere.connections == 0


def test_secrets_echoed_by_the_target_are_redacted_everywhere(runs, tmp_path):
    run = runs["echo_secrets"]
    texts = {"stdout": run.out, "stderr": run.err}
    for path in run.report.rglob("*"):
        if path.is_file():
            texts[str(path.relative_to(run.report))] = path.read_text(encoding="utf-8", errors="replace")
    cases = sorted((run.report / "cases").glob("*.json"))
    assert cases, "the echoing target fails requirements, so there are case files"
    reproducer = subprocess.run([sys.executable, "-m", "conformance.cli", "replay",
                                 "--pytest", str(cases[0])],
                                cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert reproducer.returncode == 0, reproducer.stderr
    texts["replay --pytest"] = reproducer.stdout
    for where, text in texts.items():
        for label, secret in SECRETS.items():
            assert secret not in text, f"credential {label!r} leaked into {where}"
    everything = "".join(texts.values())
    assert "<redacted:full>" in everything  # the target did echo the token: the check was not vacuous
    assert "<redacted:full>" in run.summary["requirements"][0]["message"] + json.dumps(run.summary)


# -- interrupting and time limits ---------------------------------------------------------


def slow_answers(conn: hostile.Conn) -> None:
    """A JSON-RPC error for everything, each after a pause: a run that takes its time."""
    if hostile.serving(conn):
        hostile.sleep_while(conn, 0.05)
        conn.rpc_error("no such method")


@pytest.fixture
def slow_target():
    server = hostile.HostileServer(slow_answers)
    yield server
    server.stop()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_writes_the_reports_of_what_has_run(tmp_path, slow_target, sig):
    (tmp_path / "c.yaml").write_text("", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "run", "bindu", "--target", slow_target.url,
         "--config", "c.yaml", "--report", "r"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while slow_target.requests < 20 and time.monotonic() < deadline:  # well into the run
        time.sleep(0.1)
    proc.send_signal(sig)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 30, "the run stops after the exchange in flight"
    assert proc.returncode == 130, out + err
    assert "Traceback" not in out + err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["verdict"] == "interrupted"
    assert signal.Signals(sig).name in summary["stopped"]
    statuses = {r["status"] for r in summary["requirements"]}
    assert "untested" in statuses and statuses & {"failed", "passed"}  # what ran is kept
    assert (tmp_path / "r" / "report.html").is_file() and (tmp_path / "r" / "junit.xml").is_file()


def test_max_time_bounds_the_whole_run(tmp_path, slow_target):
    code, seconds, _, out, err, report = run_conformance(
        tmp_path, "max-time", slow_target.url, config="", extra=("--max-time", "4s"), kill_after=120)
    summary = json.loads((report / "summary.json").read_text())
    assert "time limit" in summary["stopped"], out + err
    assert summary["duration_s"] < 4 + 6, "the run stops at its limit plus the exchange in flight"
    assert code in (1, 3) and "Traceback" not in out + err
    assert any(r["status"] == "untested" and "time limit" in r["message"] for r in summary["requirements"])
