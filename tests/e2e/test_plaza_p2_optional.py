"""Part 2 of Agent Plaza (groups, the private relay, continuation) is optional
(profiles/agent-plaza.yaml ``optional:``): a site that answers every part-2 command with
A2A's UnsupportedOperationError, the document's "not served", leaves every row of the part
untested with its answer -- never failed or blocked, whatever order the rows run in -- while
its commands' schemas are still enforced."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from conformance.checks.expect import catalog_entry
from conformance.kit.check import RunContext
from conformance.kit.declare import slug
from conformance.model import Profile, Requirement
from conformance.protocols.plaza.reference.continuation import ContinuationPart
from conformance.protocols.plaza.reference.groups import GroupsPart
from conformance.protocols.plaza.reference.private import PrivateRelayPart
from conformance.protocols.plaza.site import UNSUPPORTED_OPERATION, SiteError
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict, execute

PART_TWO = {**GroupsPart.PART_COMMANDS, **PrivateRelayPart.PART_COMMANDS, **ContinuationPart.PART_COMMANDS}
FEATURES = ("groups", "private_relay", "continuation")
MACHINES = ("PLAZA-GROUP-MACHINE", "PLAZA-PRIV-MACHINE", "PLAZA-DIRECT-MACHINE")


@functools.cache
def profile() -> Profile:
    return load_profile("agent-plaza")


def declining() -> RunContext:
    """The reference answering every part-2 command (after its schema check) as not served."""
    run = open_run(profile(), "reference", budget="quick")
    ref = run.reference
    original = ref.run_command

    def run_command(call: Any, message: dict[str, Any], data: dict[str, Any]) -> Any:
        if data.get("operation") in PART_TWO:
            raise SiteError(UNSUPPORTED_OPERATION, f"{data['operation']} is not served by this endpoint")
        return original(call, message, data)

    ref.run_command = run_command
    return run


def part_two_rows() -> list[Requirement]:
    """The rows of the optional part (and its state machines)."""
    return [r for r in profile().requirements if r.optional in FEATURES or r.id in MACHINES]


def verdicts(order: list[Requirement]) -> dict[str, Verdict]:
    run = declining()
    try:
        return {r.id: execute(r, run) for r in order}
    finally:
        run.http.close()


def test_part_two_rows_name_their_feature() -> None:
    rows = part_two_rows()
    assert {r.optional for r in rows} >= set(FEATURES)
    assert all(r.id.startswith(("PLAZA-GROUP-", "PLAZA-PRIV-", "PLAZA-CONT-", "PLAZA-DIRECT-", "PLAZA-PLAN",
                                "PLAZA-ROUTE-",
                                "PLAZA-RECV-WORK-GROUP")) for r in rows)
    assert set(profile().optional) >= set(FEATURES)


@pytest.mark.parametrize("order", ["profile", "reversed"])
def test_a_declined_part_two_is_untested_in_every_row(order: str) -> None:
    rows = part_two_rows()
    got = verdicts(rows if order == "profile" else rows[::-1])
    wrong = {rid: f"{v.status}: {v.message[:200]}" for rid, v in got.items() if v.status != "untested"}
    assert not wrong, wrong
    code = catalog_entry(profile(), UNSUPPORTED_OPERATION).code
    unsaid = [v.message for v in got.values()
              if "does not serve" not in v.message or str(code) not in v.message]
    assert not unsaid, unsaid[:3]  # each says the target's own answer


def test_declined_commands_leave_their_valid_rows_untested_and_schemas_enforced() -> None:
    names = sorted(PART_TWO)[:6]
    rows = [profile().requirement(f"PLAZA-CMD-{kind}-{slug(name)}") for name in names
            for kind in ("VALID", "INVALID")]
    got = verdicts(rows)
    for name in names:
        valid, invalid = got[f"PLAZA-CMD-VALID-{slug(name)}"], got[f"PLAZA-CMD-INVALID-{slug(name)}"]
        assert valid.status == "untested", (name, valid.status, valid.message[:200])
        assert invalid.status == "passed", (name, invalid.status, invalid.message[:200])


def test_a_served_part_two_runs_as_usual() -> None:
    run = open_run(profile(), "reference", budget="quick")
    try:
        verdict = execute(profile().requirement("PLAZA-GROUP-AUTH-PREFLIGHT"), run)
    finally:
        run.http.close()
    assert verdict.status == "passed", verdict.message
    assert run.served == {"groups": None}
