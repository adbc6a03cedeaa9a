"""A result judged against the branch its request selects (checks/inputs.expect_branch):
valid under the union is not enough when the result is another branch's."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.checks.inputs import expect_branch
from conformance.kit.check import CheckFailed

SCHEMA = {"oneOf": [
    {"type": "object", "required": ["status", "id"], "properties": {"status": {"const": "done"}}},
    {"type": "object", "required": ["status", "requestId"],
     "properties": {"status": {"enum": ["requested", "pending"]}}},
]}


class Judge:
    """What expect_branch asks of a check's context: ctx.expect."""

    def __init__(self) -> None:
        self.judged = 0

    def expect(self, condition: Any, message: str, kind: str = "", **_: Any) -> None:
        self.judged += 1
        if not condition:
            raise CheckFailed(message, kind)


def status_is(*statuses: str) -> Any:
    def selected(branch: dict[str, Any]) -> bool:
        status = branch["properties"]["status"]
        return bool({status.get("const"), *status.get("enum", [])} & set(statuses))
    return selected


def test_a_result_of_the_selected_branch_passes_and_counts_as_judged():
    ctx = Judge()
    expect_branch(ctx, SCHEMA, {"status": "done", "id": "x"}, status_is("done"), "result", "a done request")
    expect_branch(ctx, SCHEMA, {"status": "pending", "requestId": "r"}, status_is("requested", "pending"),
                  "result", "an approval-required target")
    assert ctx.judged == 2


def test_a_result_of_another_branch_fails_naming_both():
    with pytest.raises(CheckFailed) as failed:
        expect_branch(Judge(), SCHEMA, {"status": "requested", "requestId": None, "id": "x"},
                      status_is("done"), "send result", "a send to a known conversation")
    message = str(failed.value)
    assert "matches the branch /oneOf/1" in message and "not the branch /oneOf/0" in message
    assert "a send to a known conversation" in message and '"requested"' in message


def test_what_no_branch_can_be_is_the_checks_own_mistake():
    with pytest.raises(ValueError, match="no oneOf or anyOf"):
        expect_branch(Judge(), {"type": "object"}, {}, status_is("done"), "result", "it")
    with pytest.raises(ValueError, match="no branch"):
        expect_branch(Judge(), SCHEMA, {"status": "done", "id": "x"}, status_is("other"), "result", "it")
