"""Part 2's state machines (machine_parts.py) against the Agent Plaza reference: each passes
clean at the quick budget, and catches a fault its row names."""

from __future__ import annotations

import functools

import pytest

from conformance.kit.declare import REGISTRY
from conformance.model import Profile, Requirement
from conformance.protocols.plaza import machine_parts
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict, execute

CAUGHT = {"PLAZA-GROUP-MACHINE": "history_before_join_visible", "PLAZA-PRIV-MACHINE": "channel_close_ignored",
          "PLAZA-DIRECT-MACHINE": "withdraw_ignored"}


@functools.cache
def profile() -> Profile:
    return load_profile("agent-plaza")


def requirement(rid: str) -> Requirement:
    rows = REGISTRY.rows(profile(), [machine_parts.__name__])
    return next(r for r in rows if r.id == rid)


def verdict(rid: str, faults: tuple[str, ...] = ()) -> Verdict:
    run = open_run(profile(), "reference", faults=faults, budget="quick")
    try:
        return execute(requirement(rid), run)
    finally:
        run.http.close()


@pytest.mark.parametrize("rid", sorted(CAUGHT))
def test_clean_reference_passes(rid: str) -> None:
    result = verdict(rid)
    assert result.status == "passed", result.message
    assert any(result.machine.values()), "no rule of the machine fired"


@pytest.mark.parametrize(("rid", "fault"), sorted(CAUGHT.items()))
def test_named_fault_is_caught(rid: str, fault: str) -> None:
    assert fault in requirement(rid).faults
    result = verdict(rid, (fault,))
    assert result.status == "failed", f"{fault} was not caught: {result.machine}"
    assert not [f for f in result.failures if f.kind == "crash"], result.message
