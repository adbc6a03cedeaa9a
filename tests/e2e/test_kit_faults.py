"""The kit's own failures are never the target's (issue 45): each kind of trouble that is
the kit's doing, its configuration's or the control interface's is a usage error, a blocked
requirement or the kit's own error (exit 4), and never a failed one. And nothing passes on
nothing: a check that weighed no answer leaves its requirement untested."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from conformance.model import Requirement, Source
from conformance.report.summary import EXIT_INTERNAL, EXIT_UNTESTED, EXIT_USAGE
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute
from tests.conftest import ROOT, conformance, free_port
from tests.proxy import proxy

SOURCE = Source("specs/bindu/openapi.yaml", "/info")


def requirement(rid, check):
    return Requirement(rid, "MUST", f"synthetic {rid}", SOURCE, check, ("cancel_terminal_succeeds",))


def tasks_list(ctx, **headers):
    headers = {"Authorization": f"Bearer {ctx.token('full')}", **headers}
    return ctx.http.request("POST", "/", headers=headers,
                            json_body={"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}})


@pytest.fixture
def run():
    ctx = open_run(load_profile("bindu"), "reference", budget="quick")
    yield ctx
    ctx.http.close()


def summary_of(report: Path) -> dict:
    return json.loads((report / "summary.json").read_text(encoding="utf-8"))


# -- the kit could not send its own request ----------------------------------------------

@pytest.mark.parametrize("send", [
    lambda ctx: tasks_list(ctx, **{"X-Broken": "a\nb"}),  # no HTTP request can carry it
    lambda ctx: ctx.http.request("GET", "http://127.0.0.1:9/elsewhere"),  # nowhere the run may send
], ids=["unsendable header", "off the target"])
def test_a_request_the_kit_could_not_send_blocks_and_never_fails(run, send):
    def check(ctx):
        ctx.expect(tasks_list(ctx).status == 200, "tasks/list answered")
        send(ctx)

    verdict = execute(requirement("SYN-UNSENDABLE", check), run)
    assert verdict.status == "blocked" and verdict.cause == "kit", verdict.message
    assert verdict.failures == [] and "the kit could not send its own request" in verdict.message
    assert "not a finding about the target" in verdict.message

    def in_subcheck(ctx):
        with ctx.subcheck("first"):
            send(ctx)

    verdict = execute(requirement("SYN-UNSENDABLE-SUB", in_subcheck), run)
    assert verdict.status == "blocked" and verdict.cause == "kit" and verdict.failures == [], verdict.message

    def in_setup(ctx):
        with ctx.setup("a task to look at"):
            send(ctx)

    verdict = execute(requirement("SYN-UNSENDABLE-SETUP", in_setup), run)
    assert verdict.status == "blocked" and verdict.cause == "kit", verdict.message
    assert verdict.message.startswith("set-up failed: a task to look at: the kit could not send")


def test_the_target_that_does_not_answer_is_still_a_finding(run):
    """The control: no usable answer from the target itself stays its finding."""
    def check(ctx):
        from conformance.transport.http import TransportFailure

        raise TransportFailure("POST /: no answer (cannot connect)")

    verdict = execute(requirement("SYN-NO-ANSWER", check), run)
    assert verdict.status == "failed" and [f.kind for f in verdict.failures] == ["no_answer"]


# -- nothing passes on nothing ---------------------------------------------------------

def test_a_check_that_weighed_no_answer_is_untested_not_passed(run):
    def sends_but_weighs_nothing(ctx):
        tasks_list(ctx)

    def weighs_only_its_setup(ctx):
        with ctx.setup("a listing"):
            ctx.expect(tasks_list(ctx).status == 200, "tasks/list answered")

    def weighs(ctx):
        with ctx.setup("a listing"):
            reply = tasks_list(ctx)
        ctx.expect(reply.status == 200, "tasks/list answered")

    for check in (sends_but_weighs_nothing, weighs_only_its_setup):
        verdict = execute(requirement("SYN-NOTHING", check), run)
        assert verdict.status == "untested" and verdict.reason == "unjudged", verdict.message
        assert verdict.message.startswith("nothing judged")
    assert execute(requirement("SYN-WEIGHS", weighs), run).status == "passed"


# -- the control interface the config names ------------------------------------------------

def test_a_control_url_that_does_not_answer_is_one_line_and_exit_2(serve, tmp_path):
    server = serve("bindu")
    config = yaml.safe_load(server.config.read_text(encoding="utf-8"))
    config["control"] = f"http://127.0.0.1:{free_port()}/_control"  # nothing listens there
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = conformance("run", "bindu", "--config", str(path), "--budget", "quick", "--report",
                         str(tmp_path / "r"))
    assert result.returncode == EXIT_USAGE, result.stdout[-2000:] + result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and f"control {config['control']} does not answer" in lines[0], result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("bad", ["ftp://127.0.0.1/_control", "control.example", 7])
def test_a_control_that_is_no_url_is_a_usage_error_naming_the_file(bad, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"control": bad}), encoding="utf-8")
    result = conformance("run", "bindu", "--config", str(path), "--budget", "quick")
    assert result.returncode == EXIT_USAGE
    assert f"config {path}: control must be an http(s) URL" in result.stderr, result.stderr


def test_a_control_interface_that_fails_blocks_what_needs_it_and_fails_nothing(serve, tmp_path):
    """The control answers the start's check but fails every action (a gateway in front of a
    control adapter that is down: HTTP 502): the rows that drive the target through it are
    blocked by the control interface, never failed."""
    server = serve("bindu")
    config = yaml.safe_load(server.config.read_text(encoding="utf-8"))
    with proxy(f"http://127.0.0.1:{free_port()}") as gateway:  # its upstream is not there
        config["control"] = gateway + "/_control"
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        result = conformance("run", "bindu", "--config", str(path), "--budget", "quick", "--report",
                             str(tmp_path / "r"))
    summary = summary_of(tmp_path / "r")
    assert result.returncode == EXIT_UNTESTED, result.stdout[-3000:]
    assert summary["counts"]["failed"] == 0, [r["id"] for r in summary["requirements"]
                                              if r["status"] == "failed"]
    blocked = [r for r in summary["requirements"] if r["status"] == "blocked"]
    assert blocked and all("the control interface" in r["message"] and "HTTP 502" in r["message"]
                           for r in blocked), [r["message"] for r in blocked]
    assert {"BINDU-CANCEL-RUNNING", "BINDU-INPUT-REQUIRED-RESUME"} <= {r["id"] for r in blocked}
    assert {r["cause"] for r in blocked} == {"control"}
    assert summary["blocked_causes"] == {"control": len(blocked)}
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert (f"{len(blocked)} blocked: kept from running to a verdict, never failed ({len(blocked)} by the "
            "control interface the config names)") in page


# -- the kit's own error ------------------------------------------------------------------

BREAK_ONE = """
import sys
from conformance import cli
from conformance.run.profiles import load_profile

profile = load_profile("bindu")
target = next(r for r in profile.requirements if r.id == "BINDU-RPC-METHOD-NOT-FOUND")

def broken(ctx):
    ctx.expect(True, "weighed")
    {}["a key the kit's own code forgot"]

object.__setattr__(target, "check", broken)
sys.exit(cli.main(sys.argv[1:]))
"""


def kit_with_a_bug(*args: str, debug: bool = False) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", **({"CONFORMANCE_DEBUG": "1"} if debug else {})}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(BREAK_ONE), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_an_exception_in_the_kit_is_its_own_error_exit_4_never_the_targets_failure(tmp_path):
    result = kit_with_a_bug("run", "bindu", "--budget", "quick", "--report", str(tmp_path / "r"))
    out = result.stdout + result.stderr
    assert result.returncode == EXIT_INTERNAL, out[-3000:]
    summary = summary_of(tmp_path / "r")
    row = next(r for r in summary["requirements"] if r["id"] == "BINDU-RPC-METHOD-NOT-FOUND")
    assert row["status"] == "blocked" and summary["counts"]["failed"] == 0
    assert row["cause"] == "crash" and summary["blocked_causes"] == {"crash": 1}
    assert row["message"].startswith("internal error of conformance, not a finding about the target: "
                                     "unexpected KeyError")
    assert summary["verdict"] == "kit error"
    assert "1 requirement ended on an internal error of conformance" in summary["verdict_reason"]
    assert "Traceback" not in out
    debug = kit_with_a_bug("run", "bindu", "--budget", "quick", "--only", "BINDU-RPC-METHOD-NOT-FOUND",
                           "--report", str(tmp_path / "d"), debug=True)
    assert debug.returncode == EXIT_INTERNAL
    assert "Traceback" in debug.stderr and "a key the kit's own code forgot" in debug.stderr


def test_a_campaign_reports_the_kits_own_error_apart_and_exits_4(tmp_path):
    result = kit_with_a_bug("fuzz", "bindu", "--for", "3s", "--only", "BINDU-RPC-METHOD-NOT-FOUND",
                            "--report", str(tmp_path / "f"))
    out = result.stdout + result.stderr
    assert result.returncode == EXIT_INTERNAL, out[-3000:]
    assert ("KIT ERROR (a bug of conformance, not a finding about the target) "
            "BINDU-RPC-METHOD-NOT-FOUND") in out
    assert "NEW FAILURE" not in out
    fuzz = json.loads((tmp_path / "f" / "fuzz.json").read_text(encoding="utf-8"))
    assert fuzz["failures"] == [] and [k["requirement"] for k in fuzz["kit_errors"]] == [
        "BINDU-RPC-METHOD-NOT-FOUND"]


# -- a verdict decided inside hypothesis ------------------------------------------------------

def test_an_untested_or_blocked_verdict_inside_generated_examples_ends_them_without_a_replay(run):
    """A body that finds it cannot go on (a quota the run spent, a set-up refused) decides
    the verdict: hypothesis neither replays nor shrinks it (against a target the first try
    changed, a replay drew otherwise and crashed the kit), and nothing more is sent."""
    from hypothesis import strategies as st

    from conformance.kit.check import Blocked, Untested

    for ending, status in ((Untested("the day's quota is spent", "quota"), "untested"),
                           (Blocked("set-up failed: no task"), "blocked")):
        calls = []

        def check(ctx, ending=ending, calls=calls):
            def body(n):
                calls.append(n)
                ctx.expect(tasks_list(ctx).status == 200, "tasks/list answered")
                if len(calls) == 3:
                    raise ending
            ctx.for_all(st.integers(), body)

        verdict = execute(requirement("SYN-DECIDED", check), run)
        assert verdict.status == status and verdict.message == str(ending), verdict.message
        assert len(calls) == 3 and verdict.failures == []


def test_a_machine_step_that_decides_the_verdict_ends_the_machine(run):
    from hypothesis.stateful import rule

    from conformance.kit.check import Untested
    from conformance.kit.machine import ProfileMachine

    steps = []

    class Spends(ProfileMachine):
        def setup(self) -> None:
            pass

        @rule()
        def spend(self) -> None:
            steps.append(1)
            self.ctx.expect(tasks_list(self.ctx).status == 200, "tasks/list answered")
            if len(steps) == 2:
                raise Untested("would exceed the day's quota", "quota")

    verdict = execute(requirement("SYN-MACHINE", lambda ctx: ctx.run_machine(Spends)), run)
    assert verdict.status == "untested" and verdict.reason == "quota" and len(steps) == 2, verdict.message
