"""The Agent Plaza requirement table, part 1 (issue 13): the A2A 1.0 wire and its
parameter errors (wire.py), the 52 data commands (commands.py), friendship, consent,
idempotency, tasks and credentials (friendship.py), conversation reads, inbox, mailbox
attention and durable receive (mailbox.py: the table; reads.py, inbox.py, receive.py: the checks;
answers.py: their shared readers), groups, the private relay and continuation
(groups.py, private.py, continuation.py), and the state machines (machine.py, machine_parts.py). What the
document states is MUST; the profile's shapes and codes (docs/agent-plaza.md) are SHOULD."""

from __future__ import annotations

from conformance.check import CheckContext
from conformance.model import Profile, Requirement
from conformance.protocols.plaza import (
    commands,
    friendship,
    wire,
)
from conformance.protocols.plaza.keeper import STOPS
from conformance.protocols.plaza.machine import PlazaMachine
from conformance.table import Table


def check_machine(ctx: CheckContext) -> None:
    ctx.run_machine(PlazaMachine)


def build(profile: Profile) -> list[Requirement]:
    t = Table(profile)
    machine = t.req("PLAZA-MACHINE", "MUST", "Invitations, decisions, texts, reads, replays and cancels agree with the friendship model",
                    t.at("/consent"), check_machine, ("pending_treated_as_accepted", "replay_stores_again", "foreign_task_readable"))
    rows = [*wire.rows(t), *friendship.rows(t), machine, *commands.rows(t)]
    # what lasts comes last, stops after plans: a run that may change a disposable agent for
    # good (keeper.py) does so once every other row has used it
    return [r for r in rows if not r.lasting] + sorted((r for r in rows if r.lasting), key=lambda r: r.lasting == STOPS)
