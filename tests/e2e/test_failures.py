"""Typed failures (kind, statement), sub-checks that report every failed part, baselines
that match kinds, and a selftest that counts only real catches (a crash is not one)."""

import dataclasses
import json

import pytest
from hypothesis import strategies as st

from conformance.drivers import plugin
from conformance.failures import KINDS, Failure, summarize
from conformance.kit.check import CheckFailed
from conformance.model import Case, Requirement, Source
from conformance.proofs.selftest import clean_problems, fault_problems, selftest
from conformance.report.baseline import Baseline, Entry, load_baseline
from conformance.report.cases import read_case, write_case
from conformance.run.config import ConfigError
from conformance.run.launch import open_run
from conformance.run.profiles import DATA_ROOT, PROFILES_DIR, RUN_INI, load_profile
from conformance.run.runner import execute

SOURCE = Source("specs/bindu/openapi.yaml", "/info")
METHODS = ["message/send", "tasks/get", "tasks/list", "tasks/cancel", "tasks/feedback", "contexts/list",
           "contexts/clear"]
BROKEN = {"tasks/get", "tasks/list", "contexts/clear"}  # the sub-checks the synthetic check fails


def requirement(rid, check, faults=("cancel_terminal_succeeds",)):
    return Requirement(rid, "SHOULD", f"synthetic {rid}", SOURCE, check, faults)


def post(ctx, method):
    return ctx.http.request("POST", "/",
                            json_body={"jsonrpc": "2.0", "id": 1, "method": method, "params": {}})


def seven_methods(ctx):
    """One sub-check per method; three of them fail, each with its own kind."""
    for method in METHODS:
        with ctx.subcheck(method):
            reply = post(ctx, method)
            if method in BROKEN:
                kind = "wrong_status" if method != "contexts/clear" else "auth_not_enforced"
                ctx.expect(reply.status == 599, f"{method} came with HTTP {reply.status}", kind=kind,
                           statement=f"specs/bindu/openapi.yaml#/{method}")


@pytest.fixture
def run():
    ctx = open_run(load_profile("bindu"), "reference", budget="quick")
    yield ctx
    ctx.http.close()


# -- kinds ----------------------------------------------------------------------------

def test_an_unknown_kind_raises_where_the_check_is_written(run):
    with pytest.raises(ValueError, match="unknown failure kind 'wrong'"):
        CheckFailed("m", kind="wrong")
    with pytest.raises(ValueError, match="unknown failure kind"):
        Failure("wrong", "m")
    assert CheckFailed("m").kind == "expectation" and CheckFailed("m", "no_answer").kind == "no_answer"

    def check(ctx):
        ctx.expect(True, "holds, but the kind is misspelt", kind="wrong_code")

    verdict = execute(requirement("SYN-BADKIND", check), run)
    assert verdict.status == "blocked" and verdict.cause == verdict.failures[0].kind == "crash"
    assert "unknown failure kind 'wrong_code'" in verdict.message


def test_kind_and_statement_reach_the_verdict_and_a_crash_stays_distinguishable(run):
    def typed(ctx):
        ctx.fail("error -32603 where -32001 is due", kind="wrong_error_code",
                 statement="specs/bindu/openapi.yaml#/x")

    def crashing(ctx):
        post(ctx, "tasks/get").json()["no such key"]

    verdict = execute(requirement("SYN-TYPED", typed), run)
    assert (verdict.message
            == f"error -32603 where -32001 is due [breaks: {SOURCE}; specs/bindu/openapi.yaml#/x]")
    assert verdict.failures == [Failure("wrong_error_code", "error -32603 where -32001 is due",
                                        "specs/bindu/openapi.yaml#/x", None)]
    crash = execute(requirement("SYN-CRASH", crashing), run)  # the kit's own error: never the target's
    assert crash.status == "blocked" and [f.kind for f in crash.failures] == ["crash"]
    assert crash.message.startswith("internal error of conformance, not a finding about the target: "
                                    "unexpected KeyError") and crash.exchanges


# -- sub-checks -------------------------------------------------------------------------

def test_every_failed_subcheck_is_reported(run):
    verdict = execute(requirement("SYN-SEVEN", seven_methods), run)
    assert verdict.status == "failed"
    assert [f.subcheck for f in verdict.failures] == [m for m in METHODS if m in BROKEN]
    assert [f.kind for f in verdict.failures] == ["wrong_status", "wrong_status", "auth_not_enforced"]
    assert all(f.statement == f"specs/bindu/openapi.yaml#/{f.subcheck}" for f in verdict.failures)
    assert verdict.message.startswith("3 of 7 sub-checks failed: tasks/get came with HTTP ")  # named once
    assert "; tasks/list came with" in verdict.message and "; contexts/clear came with" in verdict.message
    assert len(verdict.exchanges) == 7  # the check went on after each failed sub-check


def test_a_failure_outside_subchecks_still_ends_the_check(run):
    reached = []

    def check(ctx):
        with ctx.subcheck("first"):
            ctx.fail("first is wrong", kind="rejected_valid")
        with ctx.subcheck("second"):
            pass
        ctx.fail("the end", kind="state_changed")
        reached.append(True)

    verdict = execute(requirement("SYN-END", check), run)
    assert not reached
    assert [(f.subcheck, f.kind) for f in verdict.failures] == [("first", "rejected_valid"),
                                                                (None, "state_changed")]
    assert verdict.message.startswith("1 of 2 sub-checks failed: first is wrong; the end [breaks: ")


def test_untested_is_never_swallowed_by_a_subcheck(run):
    def untested(ctx):
        with ctx.subcheck("needs a credential"):
            ctx.credential("no-such-credential")
        raise AssertionError("not reached")

    assert execute(requirement("SYN-UNTESTED", untested), run).status == "untested"

    def found_then_untested(ctx):
        with ctx.subcheck("a"):
            ctx.fail("a is wrong")
        with ctx.subcheck("b"):
            ctx.credential("no-such-credential")

    verdict = execute(requirement("SYN-FOUND", found_then_untested), run)
    assert verdict.status == "failed"  # what a sub-check found stays found
    assert "failed: a is wrong" in verdict.message and "then untested: no credential" in verdict.message


def test_subcheck_inside_for_all_lets_hypothesis_shrink_and_reproduce(run):
    def check(ctx):
        def body(n):
            with ctx.subcheck("health"):
                ctx.http.request("GET", "/health")
                ctx.expect(n < 10, f"n={n} is too big", kind="accepted_invalid")

        ctx.for_all(st.integers(0, 1000), body, examples=50)

    req = requirement("SYN-HYPO", check)
    verdict = execute(req, run)
    assert verdict.status == "failed" and verdict.reproduce is not None
    # shrunk to 10
    assert verdict.failures == [Failure("accepted_invalid", "n=10 is too big", None, "health",
                                        actual_status=200)]
    assert len(verdict.exchanges) == 1  # the minimal example's only
    again = execute(req, run, reproduce=verdict.reproduce)
    assert again.status == "failed" and again.failures == verdict.failures


def test_subcheck_around_for_all_records_and_goes_on(run):
    def check(ctx):
        with ctx.subcheck("generated"):
            ctx.for_all(st.integers(0, 1000), lambda n: ctx.expect(n < 10, f"n={n}", kind="schema_mismatch"))
        with ctx.subcheck("plain"):
            ctx.fail("plain fails too")

    verdict = execute(requirement("SYN-AROUND", check), run)
    assert [(f.subcheck, f.message) for f in verdict.failures] == [("generated", "n=10"),
                                                                   ("plain", "plain fails too")]
    assert verdict.reproduce is not None


def test_summarize():
    assert summarize([]) == ""
    assert summarize([Failure("expectation", "m")]) == "m"
    two = [Failure("wrong_status", "x", subcheck="a"), Failure("no_answer", "y", subcheck="b")]
    assert summarize(two, 5) == "2 of 5 sub-checks failed: a: x; b: y"
    assert set(KINDS) >= {"expectation", "crash", "no_answer", "wrong_error_code", "auth_not_enforced"}


# -- reports: summary.json, the case file, report.html ------------------------------------

def run_plugin(tmp_path, monkeypatch, extra, *args, name="r"):
    """`conformance run bindu` in-process, with synthetic requirements added to the profile."""
    def patched(profile_name, path=None):
        profile = load_profile(profile_name, path)
        return dataclasses.replace(profile, requirements=[*profile.requirements, *extra])

    monkeypatch.setattr(plugin, "load_profile", patched)
    report = tmp_path / name
    outcome = plugin.RunOutcome()
    only = [a for r in extra for a in ("--only", r.id)]
    pytest.main([str(PROFILES_DIR / "bindu.yaml"), "-c", str(RUN_INI), "--rootdir", str(DATA_ROOT),
                 "-p", "no:terminal", "-p", "no:cacheprovider", "-s", "--target", "reference",
                 "--budget", "quick", "--level", "should",
                 "--report", str(report), *only, *args], plugins=[outcome])
    return outcome.code, report, json.loads((report / "summary.json").read_text())


def test_kinds_reach_summary_case_file_and_html(tmp_path, monkeypatch):
    code, report, summary = run_plugin(tmp_path, monkeypatch, [requirement("SYN-SEVEN", seven_methods)])
    assert code == 1
    (entry,) = [r for r in summary["requirements"] if r["id"] == "SYN-SEVEN"]
    assert entry["status"] == "failed" and entry["message"].startswith("3 of 7 sub-checks failed")
    assert [(f["subcheck"], f["kind"]) for f in entry["failures"]] == [
        ("tasks/get", "wrong_status"), ("tasks/list", "wrong_status"),
        ("contexts/clear", "auth_not_enforced")]
    assert all(f["case"] == "cases/SYN-SEVEN.json" and f["statement"] and f["message"]
               for f in entry["failures"])
    case = read_case(report / entry["failures"][0]["case"])
    assert [f.to_json() for f in case.failures] == [{k: v for k, v in f.items() if k != "case"}
                                                    for f in entry["failures"]]
    # typed fields: the actual answer of each finding, read when it was recorded (reports never parse bodies)
    assert [(f["actual_status"], f["actual_code"]) for f in entry["failures"]][0] == (401, -32009)
    raw = json.loads((report / "cases" / "SYN-SEVEN.json").read_text())
    assert raw["failures"][2]["kind"] == "auth_not_enforced" and raw["message"] == entry["message"]
    page = (report / "report.html").read_text()
    assert page.count('id="fail-') == 1  # one section for the one case
    assert "<span class=kind>auth_not_enforced</span> <span class=mono>contexts/clear</span>" in page


def test_case_files_without_failures_still_load(tmp_path):
    case = Case("bindu", "R", "MUST", "t", SOURCE.to_json(), "reference", 1, "quick", "m", [],
                failures=[Failure("wrong_status", "m", "s", "sub")])
    path = write_case(tmp_path, case)
    assert read_case(path).failures == case.failures
    old = json.loads(path.read_text())
    del old["failures"]
    path.write_text(json.dumps(old))
    assert read_case(path).failures == []
    old["failures"] = [{"kind": "no-such-kind", "message": "m"}]
    path.write_text(json.dumps(old))
    with pytest.raises(ValueError, match="not a conformance case file: unknown failure kind"):
        read_case(path)


# -- baselines -----------------------------------------------------------------------

def test_baseline_entries_may_name_a_kind_and_a_subcheck():
    failures = [Failure("wrong_status", "HTTP 200", subcheck="tasks/get"),
                Failure("auth_not_enforced", "served", subcheck="tasks/list")]

    def judge(*entries):
        return Baseline(list(entries), "b.yaml").judge("R", "failed", summarize(failures, 7), failures)[0]

    assert judge(Entry("R", None, "known")) == "expected_failure"  # no kind: covers every failure, as before
    assert judge(Entry("R", None, "known", kind="wrong_status")) == "failed"  # auth_not_enforced is unlisted
    assert judge(Entry("R", None, "a", kind="wrong_status"),
                 Entry("R", None, "b", kind="auth_not_enforced")) \
        == "expected_failure"
    assert judge(Entry("R", None, "a", kind="wrong_status"), Entry("R", None, "b", subcheck="tasks/list")) \
        == "expected_failure"
    assert judge(Entry("R", None, "a", subcheck="tasks/get"),
                 Entry("R", None, "b", subcheck="tasks/cancel")) == "failed"
    assert judge(Entry("R", "tasks/*", "pattern on the sub-check's line")) == "expected_failure"
    # without typed failures (an old caller), a kind-scoped entry covers nothing
    assert (Baseline([Entry("R", None, "k", kind="wrong_status")], "b").judge("R", "failed", "m")[0]
            == "failed")
    assert Baseline([Entry("R", None, "k")], "b").judge("R", "failed", "m")[0] == "expected_failure"


def test_baseline_file_kind_is_checked(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("- id: R\n  reason: r\n  kind: wrong_status\n  subcheck: tasks/get\n- id: "
                    "R\n  reason: old style\n")
    assert load_baseline(path, {"R"}) == [Entry("R", None, "r", None, "wrong_status", "tasks/get"),
                                          Entry("R", None, "old style")]
    path.write_text("- id: R\n  reason: r\n  kind: wrong-status\n")
    with pytest.raises(ConfigError, match="entry 1 has unknown kind 'wrong-status'"):
        load_baseline(path, {"R"})
    path.write_text("- id: R\n  reason: r\n  subcheck: [a]\n")
    with pytest.raises(ConfigError, match="entry 1: subcheck must be"):
        load_baseline(path, {"R"})


def test_baseline_kind_through_a_run(tmp_path, monkeypatch):
    extra = [requirement("SYN-SEVEN", seven_methods)]
    partial = tmp_path / "partial.yaml"
    partial.write_text("- id: SYN-SEVEN\n  reason: known\n  kind: wrong_status\n")
    code, _, summary = run_plugin(tmp_path, monkeypatch, extra, "--baseline", str(partial), name="partial")
    assert code == 1 and summary["counts"]["failed"] == 1  # the auth_not_enforced failure is not listed
    full = tmp_path / "full.yaml"
    full.write_text(partial.read_text() + "- id: SYN-SEVEN\n  reason: known\n  kind: auth_not_enforced\n")
    code, _, summary = run_plugin(tmp_path, monkeypatch, extra, "--baseline", str(full), name="full")
    assert code == 0 and summary["counts"]["expected_failures"] == 1
    (entry,) = [r for r in summary["requirements"] if r["id"] == "SYN-SEVEN"]
    assert entry["baseline"]["kind"] == "wrong_status" and len(entry["failures"]) == 3


# -- selftest: a crash is not a catch --------------------------------------------------

def crash_profile():
    """bindu with two synthetic requirements naming one fault: one catches it for real,
    one only crashes (KeyError) on the faulty reference."""
    profile = load_profile("bindu")
    faulty = {"on": False}
    real_create = profile.create_reference
    real_fault = profile.faults["cancel_terminal_succeeds"]

    def create(prof, **options):
        faulty["on"] = False
        return real_create(prof, **options)

    def fault(ref):
        faulty["on"] = True
        real_fault(ref)

    def catches(ctx):
        reply = post(ctx, "tasks/get")
        ctx.expect(not faulty["on"], f"faulty reference answered HTTP {reply.status}", kind="state_changed")

    def crashes(ctx):
        answer = post(ctx, "tasks/get").json()
        if faulty["on"]:
            answer["no such key"]

    return dataclasses.replace(
        profile, create_reference=create,
        requirements=[requirement("SYN-CATCHES", catches), requirement("SYN-CRASHES", crashes)],
        faults={"cancel_terminal_succeeds": fault})


def test_selftest_counts_a_crash_as_no_catch():
    lines = []
    result = selftest(crash_profile(), out=lines.append)
    assert not result.ok
    crashed = [p for p in result.problems if "crashed" in p]
    assert len(crashed) == 1 and crashed[0].startswith("SYN-CRASHES crashed on fault "
                                                       "cancel_terminal_succeeds")
    assert ": unexpected KeyError: 'no such key'" in crashed[0]
    assert any(p.startswith("fault cancel_terminal_succeeds: not caught by SYN-CRASHES")
               for p in result.problems)
    assert not any("SYN-CATCHES" in p for p in result.problems)
    assert any("MISSED" in line for line in lines) and lines[-1].endswith("problem(s)")


def test_a_crash_beside_a_real_finding_is_still_a_problem():
    from conformance.model import Exchange
    from conformance.run.runner import Verdict

    answered = [Exchange(request={"method": "GET", "url": "/"}, response={"status": 500, "body": ""})]
    both = Verdict("failed", "m [breaks: spec#/x]", answered,
                   failures=[Failure("wrong_status", "x", subcheck="a"),
                             Failure("crash", "unexpected KeyError: 'k'")])
    assert fault_problems("f", {None: {"R": both}}) == ["R crashed on fault f: unexpected KeyError: 'k'"]
    unsourced = Verdict("failed", "m", answered, failures=[Failure("wrong_status", "x")])
    assert "must name the statement it breaks" in " ".join(fault_problems("f", {None: {"R": unsourced}}))
    unanswered = Verdict("failed", "m [breaks: spec#/x]", failures=[Failure("wrong_status", "x")])
    assert "keep the answer it quotes" in " ".join(fault_problems("f", {None: {"R": unanswered}}))
    only_crash = Verdict("failed", "unexpected KeyError: 'k'",
                         failures=[Failure("crash", "unexpected KeyError: 'k'")])
    assert clean_problems({"R": only_crash}, "") == ["clean reference: R crashed: unexpected KeyError: 'k'"]


def _stopping_mid_check(raise_what):
    """A check that is stopped (a signal sets the run's flag) after its first exchange, then
    ends with ``raise_what``: what the stop caused hypothesis or the check to raise."""
    def check(ctx):
        post(ctx, "tasks/list")
        ctx.http.stopped = "interrupted by SIGINT"
        raise_what(ctx)
    return check


def _flaky_strategy(ctx):
    import hypothesis.errors

    raise hypothesis.errors.FlakyStrategyDefinition("Inconsistent data generation!")


def _sub_check_after_the_stop(ctx):
    with ctx.subcheck("tasks/get"):
        ctx.fail("no answer: the exchange was cut", kind="no_answer")


@pytest.mark.parametrize(("raise_what", "going_on"), [(_flaky_strategy, "blocked"),
                                                     (_sub_check_after_the_stop, "failed"),
                                                     (lambda ctx: ctx.fail("expected a result"), "failed"),
                                                     (lambda ctx: {}["context_id"], "blocked")],
                         ids=["FlakyStrategyDefinition", "sub-check", "CheckFailed", "KeyError"])
def test_an_exception_raised_because_the_run_is_stopping_is_no_finding(raise_what, going_on):
    run = open_run(load_profile("bindu"), "reference", budget="quick")
    verdict = execute(requirement("SYN-STOPPING", _stopping_mid_check(raise_what)), run)
    assert (verdict.status == "untested"
            and verdict.message == "not finished: interrupted by SIGINT"), verdict.message
    assert verdict.failures == []
    # the control: the same ending while the run goes on is a finding, or the kit's own error
    # (a KeyError in a check, a strategy hypothesis refuses): blocked by it, never passed
    still = execute(requirement("SYN-GOING-ON", lambda ctx: (post(ctx, "tasks/list"), raise_what(ctx))),
                    open_run(load_profile("bindu"), "reference", budget="quick"))
    assert still.status == going_on, still.message
