"""The state model (machine.py): conversations, groups, reactions and approvals, with
their expiry, move as the model predicts."""

from __future__ import annotations

from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.protocols.canon.machine import CanonMachine
from conformance.protocols.canon.shared import DEFS


@requirement(id="CANON-LIFECYCLE", level="MUST",
             title="Conversations, groups, reactions and approvals (with their expiry) move as the model "
                   "predicts (stateful)",
             source=at(DEFS),
             faults=["leave_keeps_membership", "react_always_adds", "expired_reported_deny",
                     "approval_never_expires"])
def check_lifecycle(ctx: CheckContext) -> None:
    """Both parts of the model; the approvals' part decides approvals and lets their
    deadlines pass on the target's clock, so without control the row is untested as a
    whole (a pass on the conversations alone would claim the approvals too)."""
    if not ctx.run.control_path:
        ctx.needs_control("the approvals' part of the model decides approvals (control decide_approval) "
                          "and moves the target's clock past their deadlines, minutes apart (control "
                          "advance_clock)")
    CanonMachine.run(ctx)
