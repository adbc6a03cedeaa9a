"""The Wever Connect state model: the task lifecycle of the profile's ``lifecycle:``
table (the generic machine of conformance/checks/lifecycle.py) over three mailboxes,
with the permission rules beside it: a sender's task is delivered only while the
recipient allows it, a revocation stops new tasks and leaves delivered ones alone."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import rule

from conformance.checks.expect import expect_refused, expect_result
from conformance.checks.lifecycle import LifecycleMachine
from conformance.kit.check import CheckContext
from conformance.kit.locate import Search
from conformance.kit.machine import pick
from conformance.protocols.wever.answers import state_in
from conformance.protocols.wever.client import RECIPIENT, SENDER, STRANGER, TERMINAL, WeverClient
from conformance.transport.binding import Reply

# who performs each transition: the recipient decides, the sender cancels and reads
PERFORMER = {"accept_task": RECIPIENT, "decline_task": RECIPIENT, "complete_task": RECIPIENT,
             "cancel_task": SENDER, "get_task": SENDER}
RESULT = {"answer": "machine result"}
# Without control every task is spent from the day's quotas of the run's mailboxes: fewer
# tasks per run of the machine, and fewer runs (WEVER-LIFECYCLE)
LIVE_OBJECTS, LIVE_MACHINES = 2, 3


class WeverMachine(LifecycleMachine):
    noun = "task"
    terminal = frozenset(TERMINAL)
    max_objects = 5

    def protocol_setup(self) -> None:
        self.c = WeverClient(self.ctx)
        self.senders = (SENDER, STRANGER)
        self.granted: dict[str, bool] = {who: False for who in self.senders}
        self.c.advertise(RECIPIENT)
        if self.c.live:  # no reset between runs of the machine: its senders start without a grant
            self.max_objects = LIVE_OBJECTS
            for who in self.senders:
                self.c.ungranted(who, RECIPIENT)

    def grant(self, who: str, allowed: bool) -> None:
        reply = self.c.grant(who, RECIPIENT, allowed=allowed)
        self.ctx.expect(reply.ok, f"allow_sender {who} allowed={allowed}: {reply.describe()}",
                        kind="rejected_valid")
        self.granted[who] = allowed

    # -- the generic machine's hooks ------------------------------------------------
    def create_object(self, state: str, data: st.DataObject) -> str:
        sender = pick(data, self.senders, label="sender")
        if not self.granted[sender]:
            self.grant(sender, True)
        task = self.c.new_task(state, sender=sender, recipient=RECIPIENT)
        self.sender_of[task.id] = sender
        return task.id

    def perform(self, operation: str, obj: str) -> Reply:
        who = PERFORMER[operation] if PERFORMER[operation] != SENDER else self.sender_of[obj]
        params: dict[str, Any] = {"task_id": obj}
        if operation == "complete_task":
            params["result"] = RESULT
        return self.c.call(operation, params, who)

    def state_in(self, reply: Reply) -> str | None:
        """The Connect state the answer shows, wherever it sits (None: read it with get_task)."""
        return state_in(reply.result, self.c.vocab.states) if reply.ok else None

    def state_of(self, obj: str) -> str:
        reply = self.c.get(obj, self.sender_of[obj])
        self.ctx.expect(reply.ok, f"get_task {obj}: {reply.describe()}", kind="state_changed")
        state = self.state_in(reply)
        if state is None:
            self.ctx.fail(f"get_task {obj}: " + Search("the task's state (one of "
                                                       f"{', '.join(self.c.vocab.states)})")
                          .looked_for(expect_result(self.ctx, reply, "get_task")), kind="malformed_answer")
        return str(state)

    # -- permissions ---------------------------------------------------------------
    @rule(who=st.sampled_from((SENDER, STRANGER)), allowed=st.booleans())
    def set_grant(self, who: str, allowed: bool) -> None:
        """Grant or revoke a sender: delivered tasks stay as they are (teardown checks)."""
        self.grant(who, allowed)

    @rule(who=st.sampled_from((SENDER, STRANGER)))
    def send_ungranted_or_granted(self, who: str) -> None:
        """A send is delivered exactly when the recipient allows the sender."""
        if len(self.states) >= self.max_objects:
            return
        reply = self.c.send(who, RECIPIENT)
        if self.granted[who]:
            task = self.c.task_of(reply, f"send_task by {who}, allowed")
            self.sender_of[task.id] = who
            self.states[task.id] = self.c.vocab.state("offered")
        else:
            expect_refused(self.ctx, reply, f"send_task by {who}, not allowed")

    def __init__(self, *, ctx: CheckContext) -> None:
        self.sender_of: dict[str, str] = {}
        super().__init__(ctx=ctx)
