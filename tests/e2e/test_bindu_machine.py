"""BINDU-LIFECYCLE reaches its rules: at the standard budget every rule of the task
machine fires and every transition row is tried where it is allowed and where it
is refused (Verdict.machine counts them). At the quick budget (5 runs of 12 steps)
whether hypothesis's swarm switches a rule off in every run varied with what else the
process had imported, so the claim is made at the budget runs use by default."""

import pytest

from conformance.kit.machine import rule_names
from conformance.protocols.bindu.machine import TaskLifecycle
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute

BUDGET = "standard"


@pytest.fixture(scope="module")
def verdict():
    profile = load_profile("bindu")
    requirement = next(r for r in profile.requirements if r.id == "BINDU-LIFECYCLE")
    run = open_run(profile, "reference", budget=BUDGET)
    try:
        result = execute(requirement, run)
        listed = run.http.request("POST", "/", headers={"Authorization": f"Bearer {run.credentials['full']}"},
                                  json_body={"jsonrpc": "2.0", "id": "left", "method": "tasks/list",
                                             "params": {"history_length": 0}}).json()
        result.left = [(t["context_id"], t["status"]["state"])  # type: ignore[attr-defined]
                       for t in listed["result"]]
        return result
    finally:
        run.http.close()


def test_lifecycle_passes_on_the_reference(verdict):
    assert verdict.status == "passed", verdict.message


def test_each_run_clears_the_contexts_it_made(verdict):
    """What the machine made it puts back (contexts/clear purges finished tasks): a long
    campaign must not leave a tasks/list that grows with every run. A finished task stays
    only beside one still in use (the agent may refuse to clear that context)."""
    from conformance.protocols.bindu.states import terminal_states

    terminal = terminal_states(load_profile("bindu").spec)
    busy = {context for context, state in verdict.left if state not in terminal}
    assert [(c, s) for c, s in verdict.left if s in terminal and c not in busy] == []
    assert len([s for _, s in verdict.left if s in terminal]) < len(verdict.left)


def test_every_rule_fires_at_the_standard_budget(verdict):
    fired = {name for name, count in verdict.machine.items() if name.startswith("rule ") and count}
    assert set(rule_names(TaskLifecycle)) - fired == set()


def test_every_transition_row_is_tried_from_an_allowed_and_a_refused_state(verdict):
    profile = load_profile("bindu")
    for op in profile.settings["lifecycle"]["transitions"]:
        outcomes = {name.rsplit(": ", 1)[1] for name in verdict.machine
                    if name.startswith(f"transition {op} from ")}
        assert outcomes >= {"allowed", "refused"}, f"{op}: {outcomes}"


def test_feedback_is_tried_on_completed_and_open_tasks(verdict):
    tried = {name.split(" from ")[1].split(":")[0] for name in verdict.machine
             if name.startswith("transition tasks/feedback from ")}
    assert "completed" in tried
    assert tried - {"completed", "failed", "canceled", "rejected"}


def test_the_generic_transition_rule_is_replaced_by_steered_ones():
    names = rule_names(TaskLifecycle)
    assert "rule transition" not in names
    assert {"rule transition_open", "rule transition_terminal", "rule resume_paused",
            "rule feedback"} <= set(names)


def test_a_requirement_clears_the_contexts_its_messages_made():
    """Every context a message/send of a requirement made is cleared when it ends
    (BinduClient.made): a campaign that left them behind grew every tasks/list it read."""
    from conformance.protocols.bindu.states import terminal_states

    profile = load_profile("bindu")
    requirement = next(r for r in profile.requirements if r.id == "BINDU-PARAMS-VALID-MESSAGE-SEND")
    run = open_run(profile, "reference", budget="quick")
    made: set[str] = set()
    store = run.reference.tasks
    original = type(store).__setitem__

    class Counting(dict):  # the reference's task table, counting every task it is given
        def __setitem__(self, key, value):
            made.add(key)
            original(self, key, value)

    run.reference.tasks = Counting(store)
    try:
        result = execute(requirement, run)
        listed = run.http.request("POST", "/", headers={"Authorization": f"Bearer {run.credentials['full']}"},
                                  json_body={"jsonrpc": "2.0", "id": "left", "method": "tasks/list",
                                             "params": {"history_length": 0}}).json()["result"]
    finally:
        run.http.close()
    assert result.status == "passed", result.message
    assert len(made) >= 5 and run.not_put_back == []
    terminal = terminal_states(profile.spec)
    assert [t for t in listed if t["status"]["state"] in terminal] == []


def test_more_runs_of_the_machine_keep_no_more_hypothesis_state():
    """A campaign runs the machine again and again on ids the target makes anew each
    time. Hypothesis keeps a coverage tag per draw label and its rules per machine class
    for the life of the process: drawing from those ids with ``sampled_from`` (labelled by
    their hashes) or binding the context into a new class per run grew a 30-minute
    campaign's memory without bound. Its strategy cache is bounded, but ``@initialize``
    put a new strategy in it for every example (see ``first_step``), which churned it and
    the allocator's arenas. Later runs, with other seeds, add none of these."""
    from hypothesis.internal.conjecture.data import STRUCTURAL_COVERAGE_CACHE
    from hypothesis.stateful import RuleBasedStateMachine
    from hypothesis.strategies._internal.utils import _STRATEGY_CACHE

    profile = load_profile("bindu")
    requirement = next(r for r in profile.requirements if r.id == "BINDU-LIFECYCLE")

    def run_once(seed: int) -> None:
        run = open_run(profile, "reference", budget="quick", seed=seed)
        try:
            assert execute(requirement, run).status == "passed"
        finally:
            run.http.close()

    run_once(1)
    tags, classes = len(STRUCTURAL_COVERAGE_CACHE), len(RuleBasedStateMachine._setup_state_per_class)
    strategies = set(_STRATEGY_CACHE)  # keys, not the count: the cache may be full already
    for seed in (2, 3):
        run_once(seed)
    assert set(_STRATEGY_CACHE) - strategies == set()
    assert len(STRUCTURAL_COVERAGE_CACHE) == tags
    assert len(RuleBasedStateMachine._setup_state_per_class) == classes
