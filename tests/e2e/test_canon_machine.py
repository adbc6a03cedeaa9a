"""CANON-LIFECYCLE reaches every rule of the Canon state model at the quick budget, and
catches the faults aimed at its rare paths (toggling a reaction off, expiry)."""

from __future__ import annotations

import pytest

from conformance.kit.machine import rule_names
from conformance.protocols.canon.machine import ApprovalMachine, CanonMachine, ConversationMachine
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute

RARE_PATHS = ("react_always_adds", "expired_reported_deny", "approval_never_expires",
              "leave_keeps_membership")


def lifecycle(faults: tuple[str, ...] = (), binding: str = "http", seed: int = 1):
    profile = load_profile("canon-verbs")
    requirement = next(r for r in profile.requirements if r.id == "CANON-LIFECYCLE")
    run = open_run(profile, "reference", budget="quick", binding=binding, faults=faults, seed=seed)
    try:
        return execute(requirement, run)
    finally:
        run.http.close()


def test_canon_machine_is_the_union_of_its_parts():
    assert (set(rule_names(CanonMachine))
            == set(rule_names(ConversationMachine)) | set(rule_names(ApprovalMachine)))
    assert set(CanonMachine.PARTS) == {ConversationMachine, ApprovalMachine}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_rule_fires_at_the_quick_budget(seed):
    verdict = lifecycle(seed=seed)
    assert verdict.status == "passed", verdict.message
    missing = [name for name in rule_names(CanonMachine) if not verdict.machine.get(name)]
    assert missing == [], (f"rules that never fired at the quick budget (seed {seed}): {missing}; "
                           f"reached {verdict.machine}")


@pytest.mark.parametrize("fault", RARE_PATHS)
def test_rare_path_faults_are_caught_at_the_quick_budget(fault):
    profile = load_profile("canon-verbs")
    requirement = next(r for r in profile.requirements if r.id == "CANON-LIFECYCLE")
    assert fault in requirement.faults
    verdict = lifecycle((fault,))
    assert verdict.status == "failed", f"{fault} was not caught: {verdict.machine}"
