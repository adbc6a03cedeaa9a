"""The engine's rules for a live run (conformance/kit/live.py): lasting actions only on
identities the run may change, reversible changes put back, quotas planned, a quota
refusal of the run's own making blocks (never fails), and each untested verdict says
why, so that `--gate live` can gate a server without control on the rest."""

import copy
import json

import pytest

from conformance.kit.check import CheckFailed, Untested
from conformance.kit.live import PutBack, QuotaBook, quota_refusal
from conformance.model import Exchange, Limit, Requirement, Source
from conformance.report.summary import EXIT_OK, EXIT_UNTESTED, Result, exit_code, live_statement
from conformance.run.config import ConfigError, load_config
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict, execute

QUOTA = "sends_per_day_count"


def profile_with_quota(rows=("TEST-QUOTA-ROW",), lasting=None):
    """Bindu with a made-up quota of 3 and the refusal code -32099 for it."""
    profile = copy.copy(load_profile("bindu"))
    profile.settings = {**profile.settings, "quotas": {QUOTA: {"rows": list(rows)}},
                        "refusal_causes": {"quota": [-32099]}, "lasting": lasting or {}}
    profile.limits = {**profile.limits, QUOTA: Limit(QUOTA, 3, Source("profile", "test"))}
    return profile


def live_run(profile, **config):
    return open_run(profile, "reference", config=config, reference_options={"control": False}, budget="quick")


def req(check, rid="TEST-ROW", lasting=""):
    def weighing(ctx):  # a row weighs an answer, or it passes nothing (untested, reason unjudged)
        check(ctx)
        ctx.expect(True, "the row's own judgement")
    return Requirement(rid, "SHOULD", "a test row", Source("profile", "test"), weighing, (), lasting=lasting)


def refused(ctx, status=200, body=None):
    """Log an answer as if the target had sent it."""
    text = json.dumps(body if body is not None
                      else {"jsonrpc": "2.0", "id": 1, "error": {"code": -32099, "message": "quota"}})
    ctx.http.log.append(Exchange(request={"method": "POST", "url": "/"},
                                 response={"status": status, "body": text}))


# -- the pieces ------------------------------------------------------------------------

def test_untested_names_a_known_reason():
    assert Untested("x", "harm").reason == "harm"
    assert Untested("x").reason == "other"
    with pytest.raises(ValueError):
        Untested("x", "because")


def test_quota_book_counts_room_and_says_what_would_not_fit():
    book = QuotaBook(limits={QUOTA: 3})
    book.spend(QUOTA, "alice", 2)
    assert book.room(QUOTA, "alice") == 1 and book.room(QUOTA, "bob") == 3
    assert book.short({QUOTA: {"alice": 1, "bob": 3}}) is None
    assert "would exceed sends_per_day_count for alice" in book.short({QUOTA: {"alice": 2}})
    assert book.describe() == "sends_per_day_count 2 of 3 for alice"


def test_put_back_undoes_last_change_first_and_reports_what_it_could_not():
    done = []
    back = PutBack()
    back.add("first", lambda: done.append(1))
    back.add("second", lambda: False)
    back.add("third", lambda: 1 / 0)
    back.add("fourth", lambda: done.append(4))
    problems = back.run()
    assert done == [4, 1]
    assert problems[0].startswith("third: ZeroDivisionError") and problems[1] == "second: refused"


def test_a_quota_refusal_is_429_or_the_profiles_code_in_an_error_answer():
    profile = profile_with_quota()
    assert quota_refusal(profile, {"status": 429, "body": ""})
    assert quota_refusal(profile, {"status": 200, "body": json.dumps({"error": {"code": -32099}})})
    # a number only as error.code
    assert quota_refusal(profile, {"status": 403, "body": json.dumps({"problem": {"kind": -32099}})}) is False
    assert not quota_refusal(profile, {"status": 200, "body": json.dumps({"result": {"code": -32099}})})
    assert not quota_refusal(profile, {"status": 400, "body": json.dumps({"error": {"code": -32600}})})
    assert not quota_refusal(profile, None)


def test_config_disposable_must_be_true_or_false(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("credentials:\n  alice: {token: t, disposable: yes please}\n")
    with pytest.raises(ConfigError, match="credentials.alice.disposable must be true or false"):
        load_config(path)


# -- lasting actions ------------------------------------------------------------------

def test_a_lasting_action_on_a_configured_identity_is_untested_without_control():
    run = live_run(profile_with_quota())
    verdict = execute(req(lambda ctx: ctx.lasting("full", "closes the account"),
                          lasting="closes the account"), run)
    assert verdict.status == "untested" and verdict.reason == "harm"
    assert "closes the account of 'full'" in verdict.message and "disposable" in verdict.message


def test_a_lasting_action_runs_on_a_disposable_or_created_identity_or_with_control():
    profile = profile_with_quota()
    check = req(lambda ctx: ctx.lasting("full", "closes it"), lasting="closes it")
    assert (execute(check, live_run(profile, credentials={"full": {"token": "t", "disposable": True}})).status
            == "passed")
    assert execute(check, open_run(profile, "reference", budget="quick")).status == "passed"  # control resets

    def made(ctx):
        ctx.adopt("fresh", {"id": "x", "token": "secret-of-fresh"})
        ctx.lasting("fresh", "closes it")
        ctx.fail("echo secret-of-fresh")
    run = live_run(profile)
    verdict = execute(req(made, lasting="closes it"), run)
    # adopted secrets are redacted
    assert verdict.status == "failed" and "secret-of-fresh" not in verdict.message


def test_a_check_that_does_something_lasting_must_declare_it():
    verdict = execute(req(lambda ctx: ctx.lasting("full", "closes it")), live_run(profile_with_quota()))
    # the check's defect: the kit's own error, never the target's failure
    assert verdict.status == "blocked" and verdict.cause == "crash"
    assert "declares nothing lasting" in verdict.message


def test_the_profiles_lasting_operations_are_guarded_in_the_binding():
    profile = profile_with_quota(lasting={"tasks/cancel": "cancels for good"})
    calls = []

    def check(ctx):
        calls.append(1)
        ctx.binding.call("tasks/cancel", {"id": "x"})
    verdict = execute(req(check, lasting="cancels for good"), live_run(profile))
    assert verdict.status == "untested" and verdict.reason == "harm" and verdict.exchange_count == 0


def test_put_back_runs_when_the_requirement_ends_whatever_its_verdict():
    run = live_run(profile_with_quota())
    undone = []

    def check(ctx):
        ctx.put_back("the greeting", lambda: undone.append("greeting"))
        ctx.put_back("the grant", lambda: "the target answered 409")
        ctx.fail("found something")
    assert execute(req(check), run).status == "failed"
    assert undone == ["greeting"] and run.not_put_back == ["TEST-ROW: the grant: the target answered 409"]


# -- quotas -----------------------------------------------------------------------------

def test_spending_past_the_limit_is_untested_before_anything_is_sent_and_recorded():
    run = live_run(profile_with_quota())
    verdict = execute(req(lambda ctx: [ctx.spend(QUOTA, "full") for _ in range(2)]), run)
    assert verdict.status == "passed" and verdict.spent == {QUOTA: {"full": 2}}
    verdict = execute(req(lambda ctx: [ctx.spend(QUOTA, "full") for _ in range(2)]), run)
    assert verdict.status == "untested" and verdict.reason == "quota"
    assert "would exceed sends_per_day_count for full" in verdict.message
    # with control the reference starts each check afresh: nothing to plan
    controlled = open_run(profile_with_quota(), "reference", budget="quick")
    assert all(execute(req(lambda ctx: [ctx.spend(QUOTA, "full") for _ in range(3)]), controlled).status
               == "passed"
               for _ in range(2))


def test_a_requirement_whose_measured_use_does_not_fit_is_untested_before_it_runs():
    profile = profile_with_quota()
    profile.quota_use = {"TEST-ROW": {QUOTA: {"full": 4}}}
    ran = []
    verdict = execute(req(lambda ctx: ran.append(1)), live_run(profile))
    assert verdict.status == "untested" and verdict.reason == "quota" and ran == []


def test_a_quota_refusal_the_run_met_blocks_naming_it_and_never_fails():
    run = live_run(profile_with_quota())

    def check(ctx):
        ctx.spend(QUOTA, "full", 3)
        refused(ctx)
        ctx.fail("expected a result")
    verdict = execute(req(check), run)
    assert verdict.status == "blocked" and verdict.cause == "quota"
    assert ("blocked by a quota" in verdict.message
            and "sends_per_day_count 3 of 3 for full" in verdict.message)


def test_a_quota_refusal_in_one_sub_check_does_not_hide_another_sub_checks_failure():
    def check(ctx):
        with ctx.subcheck("one"):
            refused(ctx, 429, {})
            ctx.fail("expected a result")
        with ctx.subcheck("two"):
            refused(ctx, 200, {"result": {}})
            ctx.fail("the answer is wrong")
    verdict = execute(req(check), live_run(profile_with_quota()))
    assert verdict.status == "failed" and "the answer is wrong" in verdict.message
    assert "blocked by a quota" in verdict.message and len(verdict.failures) == 1


def test_the_quotas_own_rows_judge_its_refusals():
    def check(ctx):
        refused(ctx, 429, {})
        raise CheckFailed("refused before the limit")
    verdict = execute(req(check, rid="TEST-QUOTA-ROW"), live_run(profile_with_quota()))
    assert verdict.status == "failed"


# -- the live gate ------------------------------------------------------------------------

def results(*verdicts):
    return [Result(Requirement(f"R{i}", "MUST", "t", Source("specs/x.json", "/t"), lambda ctx: None, ()), v)
            for i, v in enumerate(verdicts)]


def test_the_live_gate_sets_aside_only_what_no_client_could_test():
    control = Verdict("untested", "needs control", reason="control")
    harm = Verdict("untested", "would harm", reason="harm")
    quota = Verdict("untested", "would exceed", reason="quota")
    passed = Verdict("passed")
    assert exit_code(results(passed, control, harm), "must", False, allow_untested=False) == EXIT_UNTESTED
    assert exit_code(results(passed, control, harm), "must", False, allow_untested=False,
                     live_gate=True) == EXIT_OK
    assert (exit_code(results(passed, quota), "must", False, allow_untested=False, live_gate=True)
            == EXIT_UNTESTED)
    assert (exit_code(results(passed, Verdict("blocked", "x")), "must", False, allow_untested=False,
                      live_gate=True) == EXIT_UNTESTED)
    # never on nothing
    assert (exit_code(results(control, harm), "must", False, allow_untested=False, live_gate=True)
            == EXIT_UNTESTED)
    statement = live_statement(results(passed, control, harm), "must")["statement"]
    assert statement.startswith("MUST-compliant on 1 of 3; 1 needs the test-control interface; 1 would harm")


def test_a_refund_gives_back_what_a_refused_call_did_not_spend():
    run = live_run(profile_with_quota())

    def check(ctx):
        ctx.spend(QUOTA, "full", 3)
        ctx.refund(QUOTA, "full", 2)  # two were refused: they spent nothing
        ctx.refund(QUOTA, "full", record=False)  # a cap's unit freed again: the measured use stays
    verdict = execute(req(check), run)
    assert verdict.spent == {QUOTA: {"full": 1}} and run.quotas.room(QUOTA, "full") == 3


def test_a_blocked_message_names_the_quota_the_refusal_names_first():
    book = QuotaBook(limits={"registrations_per_source_count": 5, "sent_tasks_per_day_count": 20})
    book.spend("registrations_per_source_count", "source", 5)
    book.spend("sent_tasks_per_day_count", "alice", 4)
    assert book.describe(top=1, said="429 sent tasks limit reached").startswith(
        "sent_tasks_per_day_count 4 of 20")
    assert book.describe(top=1).startswith("registrations_per_source_count 5 of 5")


def test_a_put_back_the_stopping_run_cannot_send_is_reported_not_raised():
    """The time limit (or a signal) that stops a run inside a row that changed something:
    its put-back is said not put back, and the verdict is still made (it once escaped as
    RunStopped and ended a fuzz campaign with a traceback)."""
    from conformance.kit.live import PutBack
    from conformance.transport.http import RunStopped

    def stopped() -> None:
        raise RunStopped("the run's time limit (--max-time) was reached")

    back = PutBack()
    back.add("the push config c1 of task t1", stopped)
    back.add("a setting", lambda: True)
    [problem] = back.run()
    assert problem.startswith("the push config c1 of task t1: not sent, the run had stopped (the run's time")
