"""The agent-plaza profile against its reference WITHOUT control, as against an operator's
site (issue 24): every configured agent holds afterwards what it held (holdings compared
before and after), what a check made is put back (conformance/protocols/plaza/keeper.py),
what cannot be undone (stop, plan, ending the operator's own connection) is untested with
reason harm and runs once the config marks the agents disposable, and at least 90% of the
requirements a client can test reach a verdict, none failed."""

import copy

import pytest

from conformance.proofs.liverun import compare_holdings, holdings_of, run_without_control
from conformance.protocols.plaza.keeper import Keeper
from conformance.protocols.plaza.site import ACTIVE, reference_credentials
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute

PROFILE = "agent-plaza"
STOPS = ["PLAZA-STOP", "PLAZA-STOP-CODE", "PLAZA-CMD-VALID-STOP", "PLAZA-CMD-INVALID-STOP"]
PLANS = ["PLAZA-PLAN", "PLAZA-PLAN-BUDGET", "PLAZA-CMD-VALID-PLAN", "PLAZA-CMD-INVALID-PLAN"]
# what only control gives: seeding many agents, moving the clock, a snapshot of the whole site
CONTROL = ["PLAZA-PARAM-ERROR-NO-EFFECT", "PLAZA-INBOX-LIMITS", "PLAZA-INBOX-CURSOR", "PLAZA-INBOX-NOTICES",
           "PLAZA-ATTN-BOUNDS",
           "PLAZA-ATTN-OVERFLOW", "PLAZA-GROUP-AUTH-EXPIRY", "PLAZA-GROUP-MAX-MEMBERS",
           "PLAZA-DIRECT-OFFER-EXPIRY",
           "PLAZA-PLAN-RENEW"]


def disposable(*labels):
    """Config credentials marking ``labels`` disposable (a label's mapping is replaced whole)."""
    creds = reference_credentials()
    return {"credentials": {label: {**creds[label], "disposable": True} for label in labels}}


# the site's deadline for a blocking send: shorter than the document's 20 s, so that the
# deadline rows do not wait 20 s each (they judge what ends the wait, not when)
SITE_DEADLINE_S = 3.0


@pytest.fixture(scope="module")
def live():
    return run_without_control(PROFILE, deadline_s=SITE_DEADLINE_S)


def test_a_whole_run_without_control_does_no_harm_and_reaches_nine_in_ten(live):
    assert live.before["alice"]["same"]["connections with bob"] == []  # holdings read the agents
    assert live.problems == [], live.problems
    assert live.run.not_put_back == [], live.run.not_put_back
    assert [(r.id, v.message[:200]) for r, v in live.verdicts if v.status in ("failed", "blocked")] == []
    assert live.reached >= 0.9 * live.testable, live.figures()
    untested = {r.id: v.reason for r, v in live.verdicts if v.status == "untested"}
    assert untested == {**{rid: "harm" for rid in STOPS + PLANS},
                        **{rid: "control" for rid in CONTROL}}, untested
    # every row that declares something lasting is kept from running (or needs control anyway)
    assert {r.id for r, _ in live.verdicts if r.lasting} == set(STOPS + PLANS + ["PLAZA-PLAN-RENEW"])
    assert live.count("passed") == live.reached == live.testable - len(STOPS + PLANS)


def test_what_cannot_be_undone_runs_on_disposable_agents():
    live = run_without_control(PROFILE, only=STOPS + PLANS, config=disposable("alice", "bob"))
    assert {r.id: v.status for r, v in live.verdicts} == {rid: "passed" for rid in STOPS + PLANS}, \
        [(r.id, v.message[:200]) for r, v in live.verdicts]
    # the stop rows stopped a different disposable agent each where they needed a peer that still sends
    assert (live.after["alice"]["same"]["visitor"][2] is True
            and live.after["bob"]["same"]["visitor"][2] is True)
    assert live.after["carol"]["same"]["visitor"][2] is False
    assert all(p.startswith(("alice:", "bob:")) for p in live.problems), live.problems
    assert live.run.not_put_back == []


def test_a_stop_row_without_a_disposable_agent_left_is_harm():
    live = run_without_control(PROFILE, only=["PLAZA-STOP", "PLAZA-STOP-CODE"], config=disposable("alice"))
    verdicts = {r.id: (v.status, v.reason) for r, v in live.verdicts}
    assert verdicts == {"PLAZA-STOP": ("passed", ""), "PLAZA-STOP-CODE": ("untested", "harm")}, verdicts
    assert [p for p in live.problems if not p.startswith("alice:")] == []


@pytest.mark.parametrize("rid, changed", [
    ("PLAZA-CONT-SELF-REPORTED", "alice: continuation was"),  # a setting: declared again as it was
    ("PLAZA-GROUP-CREATE", "alice: groups was"),  # a group made: closed
    ("PLAZA-GROUP-AUTHORIZE", "alice: group authorization was"),  # a grant made: revoked
    ("PLAZA-FRIEND-INVITE", "alice: connections with bob was"),  # a connection made: removed
    ("PLAZA-CMD-VALID-PRIVATE-KEY-PUBLISH", "alice: keys was"),  # keys published: revoked
])
def test_what_a_row_changes_is_put_back_and_holdings_would_see_it_left(rid, changed, monkeypatch):
    live = run_without_control(PROFILE, only=[rid])
    assert [v.status for _, v in live.verdicts] == ["passed"]
    assert live.problems == [] and live.run.not_put_back == []
    monkeypatch.setattr(Keeper, "put_back", lambda self: None)  # the same row, nothing put back
    left = run_without_control(PROFILE, only=[rid])
    assert [v.status for _, v in left.verdicts] == ["passed"]
    assert any(p.startswith(changed) for p in left.problems), left.problems


def operators_friendship(run):
    """alice and bob were friends before the run (the operator's connection, made on the site)."""
    ref, (alice, bob) = run.reference, (run.credentials["alice"]["id"], run.credentials["bob"]["id"])
    with ref.lock:
        conn = ref.open_connection(alice, bob)
        conn["state"] = ACTIVE
    return conn


@pytest.mark.parametrize("config, expected",
                         [({}, ("untested", "harm")), (disposable("alice", "bob"), ("passed", ""))])
def test_the_operators_own_connection_is_ended_only_when_its_agents_are_disposable(config, expected):
    profile = copy.copy(load_profile(PROFILE))
    run = open_run(profile, "reference", budget="quick", config=config, reference_options={"control": False},
                   shrink=False)
    conn = operators_friendship(run)
    before = holdings_of(profile, run)
    rows = {r.id: r for r in profile.requirements}
    # a fresh invitation needs the pair's connection ended
    verdict = execute(rows["PLAZA-FRIEND-INVITE"], run)
    assert (verdict.status, verdict.reason) == expected, verdict.message
    problems = compare_holdings(before, holdings_of(profile, run))
    assert run.not_put_back == []
    if expected[0] == "untested":  # nothing sent that ends it
        assert conn["state"] == ACTIVE and problems == [], problems
    else:  # the disposable pair's connection was ended for the fresh invitation, as holdings say
        assert conn["state"] != ACTIVE and any(p.startswith("alice: connections with bob")
                                               for p in problems), problems


def test_configuration_elsewhere_is_judged_without_control_and_catches_its_fault():
    """Without control the blocking send is judged by its peer's reply, not the 20 s deadline."""
    live = run_without_control(PROFILE, only=["PLAZA-WIRE-CONFIG-ELSEWHERE"],
                               faults=("configuration_in_metadata_honoured",))
    assert [v.status for _, v in live.verdicts] == ["failed"], live.verdicts[0][1].message
    assert "message.metadata" in live.verdicts[0][1].message
