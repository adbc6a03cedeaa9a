"""Bindu without the control interface (issue 24): a live run does no harm to the callers
it is given, reaches a verdict on every row a client can reach, and the rows that need
an agent which does not finish at once reach one on such an agent, catching their faults."""

import pytest

from conformance.proofs.liverun import compare_holdings, holdings_of, run_without_control
from conformance.protocols.bindu.protocol import holdings
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute

PROFILE = "bindu"
# what no client can bring about on the reference's echo agent, which finishes every task
# at once: each row says which control it needs
NEEDS_CONTROL = {
    "BINDU-CANCEL-RUNNING": "next_outcome", "BINDU-INPUT-REQUIRED-RESUME": "next_outcome",
    "BINDU-CONTEXT-CLEAR-RUNNING": "next_outcome", "BINDU-AUTH-REQUIRED-STATE": "next_outcome",
    "BINDU-STATUS-TIMESTAMP": "next_outcome", "BINDU-SEND-BLOCKING": "next_outcome",
    "BINDU-PARAMS-VALID-TASKS-CANCEL": "next_outcome", "BINDU-RESULT-TASKS-CANCEL": "next_outcome",
    "BINDU-INVALID-AGENT-RESPONSE": "next_agent_fault", "BINDU-HEALTH-DEGRADED": "set_health",
}


@pytest.fixture(scope="module")
def live():
    # the callers already hold tasks, as on an operator's server
    return run_without_control(PROFILE, held=True)


def test_a_live_run_leaves_every_caller_as_it_found_it_and_reaches_every_row_a_client_can(live):
    assert live.problems == [] and live.run.not_put_back == []
    assert [(r.id, v.message[:200]) for r, v in live.verdicts if v.status in ("failed", "blocked")] == []
    assert live.count("untested") == live.count("untested", reason="control") == len(NEEDS_CONTROL)
    assert live.testable == live.reached == len(live.verdicts) - len(NEEDS_CONTROL)  # 100% of 82
    assert live.reached >= 0.9 * live.testable, live.figures()
    assert "82 of 82 client-testable requirements reached a verdict (100%)" in live.figures()


def test_what_needs_control_says_which_control(live):
    untested = {r.id: v.message for r, v in live.verdicts if v.status == "untested"}
    assert set(untested) == set(NEEDS_CONTROL)
    for rid, action in NEEDS_CONTROL.items():
        assert f"control {action}" in untested[rid], (rid, untested[rid])


def test_nothing_a_row_does_lasts_and_the_spec_names_no_quota():
    profile = load_profile(PROFILE)
    assert [r.id for r in profile.requirements if r.lasting] == []
    assert (not profile.settings.get("quotas") and not profile.settings.get("lasting")
            and profile.quota_use == {})


def test_the_holdings_are_the_callers_tokens_and_what_they_own(live):
    full = live.before["full"]
    assert (full["same"]["token accepted"] is True
            and live.before["expired"]["same"]["token accepted"] is False)
    assert len(full["kept"]["tasks"]) == 2 and len(full["kept"]["contexts"]) == 2
    assert (sorted(v for k, v in full["same"].items() if k.startswith("state of task"))
            == ["completed", "working"])
    # the run cleared every context its messages and streams made: nothing of its own is left beside them
    assert live.after["full"]["kept"] == full["kept"]


def test_the_holdings_see_a_canceled_task_an_erased_context_and_a_revoked_token():
    """What the before/after comparison rests on: each lasting change shows."""
    profile = load_profile(PROFILE)
    run = open_run(profile, "reference", budget="quick", reference_options={"control": False, "held": True})
    ref = run.reference
    configured = dict(run.credentials)
    before = holdings(ref, configured)
    working = next(t for t in ref.tasks.values() if t.owner == "reference-client" and t.state == "working")
    ref.cancel_task(working)
    ref.delete_context(next(c for c in ref.contexts.values() if c.owner == "reference-other-client"))
    ref.tokens["ory_at_reference_read"].active = False
    problems = compare_holdings(before, holdings(ref, configured))
    assert any(p.startswith("full: state of task") and "canceled" in p for p in problems), problems
    assert (any(p.startswith("other: tasks lost") for p in problems)
            and any(p.startswith("other: contexts lost") for p in problems))
    assert "read: token accepted was True, is False" in problems
    assert holdings_of(profile, run).keys() == configured.keys()


def asynchronous(ref):
    """An agent that works in the background: message/send answers while the task is
    working (the spec's "Poll that task by id until it terminates"), a blocking send waits."""
    run_agent = ref.run_agent

    def work(task):
        if ref.agent_faults or ref.outcomes:
            return run_agent(task)
        ref.set_state(task, "working")

    ref.run_agent = work


# rows that, without control, take the task as the agent leaves it: on an agent that
# works asynchronously they reach a verdict, and catch the faults they name
OWN_STATES = {
    "BINDU-CANCEL-RUNNING": ("cancel_noop",),
    "BINDU-CONTEXT-CLEAR-RUNNING": ("clear_purges_running",),
    "BINDU-STATUS-TIMESTAMP": ("status_timestamp_frozen",),
    "BINDU-SEND-BLOCKING": ("blocking_ignored",),
    "BINDU-PARAMS-VALID-TASKS-CANCEL": ("rejects_unknown_params",),
    "BINDU-RESULT-TASKS-CANCEL": ("camel_case_responses",),
    "BINDU-LIFECYCLE": ("terminal_task_reopened", "cancel_terminal_succeeds", "feedback_changes_state"),
}


def async_run(faults=(), control=False):
    run = open_run(load_profile(PROFILE), "reference", budget="quick", faults=faults,
                   reference_options={"control": control}, shrink=False)
    asynchronous(run.reference)
    return run


@pytest.mark.parametrize("rid", sorted(OWN_STATES))
def test_on_an_agent_that_works_asynchronously_the_row_runs_without_control_and_catches_its_faults(rid):
    profile = load_profile(PROFILE)
    req = profile.requirement(rid)
    assert set(OWN_STATES[rid]) <= set(req.faults)
    clean = execute(req, async_run())
    assert clean.status == "passed", clean.message
    for fault in OWN_STATES[rid]:
        verdict = execute(req, async_run((fault,)))
        assert verdict.status == "failed", (fault, verdict.status, verdict.message)


@pytest.mark.parametrize("rid", sorted(set(OWN_STATES) - {"BINDU-LIFECYCLE"}))
def test_with_control_the_row_still_catches_every_fault_it_names(rid):
    """(BINDU-LIFECYCLE's draws reach each of its faults on some seeds only: the selftest
    proves them caught, by it or by the row that names them too.)"""
    profile = load_profile(PROFILE)
    req = profile.requirement(rid)
    assert execute(req, open_run(profile, "reference", budget="quick")).status == "passed"
    for fault in req.faults:
        verdict = execute(req, open_run(profile, "reference", budget="quick", faults=(fault,), shrink=False))
        assert verdict.status == "failed", (fault, verdict.status, verdict.message)


def test_the_lifecycle_runs_without_control_on_the_agents_own_states_and_catches_a_reopened_task():
    """The echo agent finishes at once: the machine walks terminal tasks (messages refused,
    cancels refused, feedback, history caps, clears) and still finds a task reopened."""
    assert execute(load_profile(PROFILE).requirement("BINDU-LIFECYCLE"), open_run(
        load_profile(PROFILE), "reference", budget="quick",
        reference_options={"control": False})).status == "passed"
    live = run_without_control(PROFILE, only=["BINDU-LIFECYCLE"], faults=("terminal_task_reopened",))
    assert live.verdicts[0][1].status == "failed", live.verdicts[0][1].message


def test_a_cancel_row_with_nothing_to_cancel_needs_control_rather_than_blocking():
    live = run_without_control(PROFILE, only=["BINDU-PARAMS-VALID-TASKS-CANCEL"])
    verdict = live.verdicts[0][1]
    assert (verdict.status, verdict.reason) == ("untested", "control"), verdict.message
    assert "finished the task it was sent at once" in verdict.message


def _summary(report) -> dict:
    import json

    return json.loads((report / "summary.json").read_text(encoding="utf-8"))


def _rpc(url: str, token: str, method: str, params: dict) -> dict:
    import uuid

    import httpx

    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    answer = httpx.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=10).json()
    assert "result" in answer, answer
    return answer["result"]


def test_a_second_live_run_against_one_server_sees_the_same_and_leaves_the_operators_tasks(serve, tmp_path):
    """Two runs without control against one served reference: the same verdict for every
    requirement, nothing put back left undone, and the tasks the operator's caller held
    before (made here over the protocol) still there as they were, the only ones it holds
    after (a run clears the contexts its messages and streams made, and nothing else)."""
    import yaml

    from tests.conftest import conformance

    server = serve("bindu")
    token = yaml.safe_load(server.config.read_text())["credentials"]["full"]
    message = {"role": "user", "kind": "message", "parts": [{"kind": "text", "text": "the operator's own"}]}
    import uuid

    held = [_rpc(server.url, token, "message/send", {"message": {**message, "message_id": str(uuid.uuid4())}})
            for _ in range(2)]
    runs = []
    for name in ("first", "second"):
        report = tmp_path / name
        result = conformance("run", "bindu", "--config", str(server.config), "--gate", "live",
                             "--report", str(report))
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        runs.append(_summary(report))
    first, second = ({r["id"]: r["status"] for r in s["requirements"]} for s in runs)
    assert first == second
    assert all(s["not_put_back"] == [] for s in runs)
    tasks = _rpc(server.url, token, "tasks/list", {})
    assert sorted((t["id"], t["status"]["state"]) for t in tasks) == \
        sorted((t["id"], t["status"]["state"]) for t in held)
    contexts = _rpc(server.url, token, "contexts/list", {})
    assert sorted(c["context_id"] for c in contexts) == sorted(t["context_id"] for t in held)


def test_a_context_the_target_chose_is_cleared_only_while_it_holds_only_the_runs_tasks():
    """A target that puts a message sent without a contextId into the caller's oldest
    context (the operator's, holding its tasks) has BINDU-SEND-CREATES-TASK fail, and the
    run does not purge that context when it puts back what it made: it clears a context
    it did not name only while contexts/list shows none but its own tasks there."""
    rows = ["BINDU-SEND-CREATES-TASK", "BINDU-PARAMS-VALID-MESSAGE-SEND", "BINDU-PARAMS-VALID-MESSAGE-STREAM"]
    live = run_without_control(PROFILE, only=rows, faults=("send_joins_oldest_context",), held=True)
    assert live.problems == [], live.problems
    verdicts = {r.id: v.status for r, v in live.verdicts}
    assert verdicts["BINDU-SEND-CREATES-TASK"] == "failed"
    clean = run_without_control(PROFILE, only=rows, held=True)
    assert clean.problems == [] and clean.after["full"]["kept"] == clean.before["full"]["kept"]
