"""The friendship state model and its hypothesis state machine: three agents invite,
decide, write, read, replay, cancel, pull and acknowledge in any order, and the site
must agree with the model after every step: who may write (consent), what each
participant reads (every stored text once, in order), what a stranger sees (nothing),
each task's state (open until a later peer message, cancelled only while open; a declined
invitation's task open or ended by the site: A2A 1.0's REJECTED, then not cancelable), and
durable receive (work waits until acknowledged, an unacknowledged batch comes again, an
acknowledged one never does, and every text a peer wrote is announced)."""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.checks.expect import expect_refused
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.machine import ProfileMachine, pick
from conformance.protocols.a2a import wire
from conformance.protocols.plaza import answers
from conformance.protocols.plaza.answers import ack, bodies, delivered, drain, item_key, items_of
from conformance.protocols.plaza.client import (
    ALICE,
    BOB,
    CANCELED,
    CAROL,
    COMPLETED,
    ENDED_BY_SITE,
    SUBMITTED,
    WORKING,
    PlazaClient,
    fresh_id,
)

AGENTS = (ALICE, BOB, CAROL)
OPEN = (SUBMITTED, WORKING)


@dataclass
class Connection:
    id: str
    inviter: str
    invitee: str
    state: str = "invitation"  # invitation | active | declined
    texts: list[tuple[str, str]] = field(default_factory=list)  # (sender, text) in order

    def has(self, who: str) -> bool:
        return who in (self.inviter, self.invitee)

    def may_write(self, who: str) -> bool:
        return self.state == "active" and self.has(who)


@dataclass
class Sent:
    who: str
    task_id: str
    connection: Connection
    index: int  # position of its text in connection.texts
    params: dict[str, Any]
    cancelled: bool = False
    completed: bool = False
    ended: str | None = None  # the terminal state the site gave it once its peer declined

    def declined(self) -> bool:
        """Its peer declined the invitation it carries: the site may end it (ENDED_BY_SITE)."""
        return self.connection.state == "declined" and not self.cancelled and not self.completed

    def expected(self) -> tuple[str, ...]:
        if self.cancelled:
            return CANCELED
        if self.ended is not None:
            return (self.ended,)  # terminal: it stays
        if self.completed:
            return (COMPLETED,)
        return OPEN + ENDED_BY_SITE if self.declined() else OPEN


class PlazaMachine(ProfileMachine):
    def setup(self) -> None:
        self.c = PlazaClient(self.ctx)
        for a, b in itertools.combinations(AGENTS, 2):  # a live site: start with no open connection
            self.c.clear_pair(a, b)
        self.connections: list[Connection] = []
        self.sent: list[Sent] = []
        self.counter = itertools.count(1)
        self.texts: list[str] = []  # every text the machine wrote (reads find them by content)
        # each agent's receiver of the run; a live site: acknowledged up to here, after the
        # clean-up above, so what it delivers is the machine's own work
        self.client_key = {a: self.c.client_key(a) for a in AGENTS}
        if self.c.live():
            for a in AGENTS:
                drain(self.c, a, self.client_key[a])
        # event ids acknowledged, per agent
        self.acked: dict[str, set[Any]] = {a: set() for a in AGENTS}
        # connections with texts not yet pulled
        self.unannounced: dict[str, set[str]] = {a: set() for a in AGENTS}
        # agent -> event ids of its batch pulled but not acknowledged
        self.outstanding: dict[str, list[Any]] = {}

    # -- helpers ------------------------------------------------------------------------
    def between(self, a: str, b: str) -> Connection | None:
        return next((k for k in self.connections if {k.inviter, k.invitee} == {a, b}), None)

    def text(self) -> str:
        text = f"step {next(self.counter)} {fresh_id()[:8]}"
        self.texts.append(text)
        return text

    def stored(self, who: str, connection: Connection, text: str, task: dict[str, Any],
               params: dict[str, Any]) -> None:
        connection.texts.append((who, text))
        peer = connection.invitee if who == connection.inviter else connection.inviter
        self.unannounced[peer].add(connection.id)
        for s in self.sent:  # a later peer message completes the open tasks of the other side
            if s.connection is connection and s.who != who and not s.cancelled:
                s.completed = True
        self.sent.append(Sent(who, str(task["id"]), connection, len(connection.texts) - 1, params))

    # -- rules --------------------------------------------------------------------------
    @precondition(lambda self: len(self.connections) < 3)
    @rule(a=st.sampled_from(AGENTS), b=st.sampled_from(AGENTS))
    def invite(self, a: str, b: str) -> None:
        if a == b or self.between(a, b):
            return
        text = self.text()
        params = self.c.params({"text": text}, to=self.c.agent_id(b))
        task = self.c.task_of(self.c.send(params, a), f"{a} invites {b}")
        connection = Connection(str(self.c.connection_of(task)), a, b)
        self.connections.append(connection)
        self.stored(a, connection, text, task, params)

    @precondition(lambda self: any(k.state == "invitation" for k in self.connections))
    @rule(data=st.data(), accept=st.booleans())
    def decide(self, data: st.DataObject, accept: bool) -> None:
        connection = pick(data, [k for k in self.connections if k.state == "invitation"])
        decision = "accept" if accept else "decline"
        reply = self.c.command("respond", {"connection_id": connection.id, "decision": decision},
                               connection.invitee)
        self.c.data_of(reply, f"{connection.invitee} answers {decision}")
        connection.state = "active" if accept else "declined"

    @precondition(lambda self: bool(self.connections))
    @rule(data=st.data(), who=st.sampled_from(AGENTS))
    def say(self, data: st.DataObject, who: str) -> None:
        connection = pick(data, self.connections)
        text = self.text()
        params = self.c.params({"text": text}, context=connection.id)
        reply = self.c.send(params, who)
        if connection.may_write(who):
            self.stored(who, connection, text, self.c.task_of(reply, f"a text from {who}"), params)
        else:
            expect_refused(self.ctx, reply,
                           f"a text from {who} in a connection it may not write to ({connection.state}, "
                                            f"{connection.inviter} and {connection.invitee})")

    @precondition(lambda self: bool(self.connections))
    @rule(data=st.data(), who=st.sampled_from(AGENTS))
    def read(self, data: st.DataObject, who: str) -> None:
        connection = pick(data, self.connections)
        reply = self.c.command("read_conversation", {"connection_id": connection.id, "limit": 50}, who)
        if not connection.has(who):
            expect_refused(self.ctx, reply, f"{who} reads a conversation it is no part of")
            return
        answer = self.c.data_of(reply, f"{who} reads the conversation")
        want = [text for _, text in connection.texts]
        got = bodies(self.ctx, answer, f"{who} reads the conversation", self.texts)
        self.ctx.expect(got == want, f"{who} reads {got}, the texts stored in the connection are {want}",
                        kind="state_changed")

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data(), same=st.booleans())
    def replay(self, data: st.DataObject, same: bool) -> None:
        """The same send again answers the same task; another text under its messageId is refused."""
        sent = pick(data, self.sent)
        state = sent.connection.state
        if state == "declined" or (state == "active" and not sent.connection.may_write(sent.who)):
            return  # a replay is checked again against current controls: judged elsewhere
        params = copy.deepcopy(sent.params)
        if same:
            task = self.c.task_of(self.c.send(params, sent.who), "an identical replay")
            self.ctx.expect(task["id"] == sent.task_id,
                            f"an identical replay answered task {task['id']}, the original is {sent.task_id}",
                            kind="state_changed")
        else:
            params["message"]["parts"] = [{"text": self.text() + " (changed)"}]
            expect_refused(self.ctx, self.c.send(params, sent.who), "another text under a used messageId")

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data())
    def get_task(self, data: st.DataObject) -> None:
        sent = pick(data, self.sent)
        task = self.c.task_of(self.c.get_task(sent.task_id, sent.who), "GetTask")
        state = wire.state(task)
        self.ctx.expect(state in sent.expected(),
                        f"the task of {sent.who}'s text #{sent.index + 1} is {state!r}, "
                        f"the model says {' or '.join(sent.expected())}", kind="state_changed")
        if state in ENDED_BY_SITE:
            sent.ended = str(state)

    @precondition(lambda self: any(not s.cancelled for s in self.sent))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        sent = pick(data, [s for s in self.sent if not s.cancelled])
        reply = self.c.rpc("CancelTask", {"id": sent.task_id}, sent.who)
        if sent.completed or sent.ended is not None:
            state = "completed" if sent.completed else sent.ended
            expect_refused(self.ctx, reply, f"CancelTask of a {state} task")
            return
        if sent.declined() and not reply.ok:
            # the site ended the declined invitation's task (a terminal state is not cancelable): it says so
            task = self.c.task_of(self.c.get_task(sent.task_id, sent.who), "GetTask after a refused cancel")
            state = wire.state(task)
            self.ctx.expect(state in ENDED_BY_SITE,
                            f"CancelTask of {sent.who}'s declined invitation was refused "
                            f"({reply.describe()}) while its task is {state!r}: only a task in a terminal "
                            "state is not cancelable",
                            kind="state_changed")
            sent.ended = str(state)
            return
        self.c.task_of(reply, "CancelTask of an open task")
        sent.cancelled = True

    @rule(who=st.sampled_from(AGENTS), acknowledge=st.booleans())
    def pull(self, who: str, acknowledge: bool) -> None:
        """One pull of everything pending (the largest batch), acknowledged or dropped."""
        limit = self.ctx.profile.operations["receive_pull"].params_schema["properties"]["limit"]["maximum"]
        reply = self.c.command("receive_pull",
                               {"client_key": self.client_key[who], "limit": limit, "wait_seconds": 0}, who)
        data = self.c.data_of(reply, f"receive_pull as {who}")
        items = items_of(self.ctx, data)
        ids = [item_key(i) for i in items]
        again = sorted(map(str, set(ids) & self.acked[who]))
        self.ctx.expect(not again, f"receive_pull as {who} delivers acknowledged work again: {again}",
                        kind="state_changed")
        missing = [e for e in self.outstanding.get(who, []) if e not in ids]
        self.ctx.expect(not missing,
                        f"receive_pull as {who} lost work it delivered and no one acknowledged: {missing}",
                        kind="state_changed")
        if answers.field(data, "more_available") is not True:
            announced = {k.id for k in self.connections for i in items if locate.holds(i, k.id)}
            silent = sorted(self.unannounced[who] - announced)
            self.ctx.expect(not silent, f"receive_pull as {who} announces no work for connections its peers "
                            f"wrote in: {silent}", kind="state_changed")
            self.unannounced[who] -= announced
        if not acknowledge or not items:
            self.outstanding[who] = ids
            return
        batch = delivered(self.c, data, f"receive_pull as {who}", self.client_key[who])
        self.c.data_of(ack(self.c, who, self.client_key[who], batch), f"receive_ack as {who}")
        self.acked[who] |= set(ids)
        self.outstanding[who] = []

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data())
    def stranger_get(self, data: st.DataObject) -> None:
        sent = pick(data, self.sent)
        other = next((a for a in AGENTS if a != sent.who and not sent.connection.has(a)), None)
        if other:
            expect_refused(self.ctx, self.c.get_task(sent.task_id, other), f"{other} reads {sent.who}'s task")


@requirement(id="PLAZA-MACHINE", level="MUST",
             title="Invitations, decisions, texts, reads, replays and cancels agree with the friendship "
                   "model",
             source=at("/consent"),
             faults=["pending_treated_as_accepted", "replay_stores_again", "foreign_task_readable"])
def check_machine(ctx: CheckContext) -> None:
    ctx.run_machine(PlazaMachine)


__all__ = ["PlazaMachine", "check_machine"]
