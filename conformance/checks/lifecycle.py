"""A lifecycle machine over a transition table the profile declares
(``lifecycle:`` in the profile YAML): hypothesis creates objects in the states the
table starts from, applies transitions in any order, and compares every answer
with the table's prediction; at the end the target's view of every object must
equal the model's. A protocol supplies four small hooks (create, perform,
state_of, terminal) and may add rules of its own.

    lifecycle:
      start: [completed, working]                 # states a new object can be made in
      transitions:
        tasks/cancel: {from: open, to: canceled, refused: TaskNotCancelable}
        tasks/feedback: {from: any, to: same}

``from``: a list of states, ``open`` (not terminal), ``terminal`` or ``any``;
``to``: a state, ``same`` (unchanged) or ``any`` (wherever the target takes it);
``refused``: the catalog error where the transition is not allowed, or ``any`` (a
refusal of any kind: where the spec names no error, the code is the profile's SHOULD);
``either``: states from which the spec allows both answers (served, leaving the object
as it is, or refused): the ambiguity rule for a repeated call the spec is silent on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.checks.expect import expect_error, expect_refused, expect_result
from conformance.kit.machine import ProfileMachine, pick
from conformance.transport.binding import Reply


@dataclass(frozen=True)
class Transition:
    operation: str
    sources: tuple[str, ...] | str  # states, or "open" / "terminal" / "any"
    to: str  # a state, "same" or "any"
    refused: str | None = None
    either: tuple[str, ...] = ()

    def allowed_from(self, state: str, terminal: frozenset[str]) -> bool:
        if self.sources == "any":
            return True
        if self.sources == "open":
            return state not in terminal
        if self.sources == "terminal":
            return state in terminal
        return state in self.sources


def read_transitions(block: dict[str, Any]) -> dict[str, Transition]:
    out = {}
    for op, row in (block.get("transitions") or {}).items():
        sources = row.get("from", "any")
        out[op] = Transition(op, sources if isinstance(sources, str) else tuple(sources),
                             row.get("to", "same"),
                             row.get("refused"), tuple(row.get("either") or ()))
    return out


class LifecycleMachine(ProfileMachine):
    """Hooks to supply: ``create_object(state, data) -> id``, ``perform(operation, id) ->
    Reply``, ``state_of(id) -> state`` and ``terminal`` (a set of states); optional:
    ``state_in(reply)`` (the state an answer reports), ``checked(operation, id,
    reply)`` (more checks of one transition), ``states_seen()`` (the target's view of
    all objects at once)."""

    noun = "object"
    terminal: frozenset[str] = frozenset()

    def setup(self) -> None:
        block = self.ctx.profile.settings["lifecycle"]
        self.starts: list[str] = list(block["start"])
        self.transitions = read_transitions(block)
        self.states: dict[str, str] = {}  # the model: object id -> state
        self.protocol_setup()

    # -- hooks -------------------------------------------------------------------------
    def protocol_setup(self) -> None:
        pass

    def create_object(self, state: str, data: st.DataObject) -> str:
        """Make a new object in ``state`` (``data`` draws anything else it needs)."""
        raise NotImplementedError

    def perform(self, operation: str, obj: str) -> Reply:
        raise NotImplementedError

    def state_of(self, obj: str) -> str:
        raise NotImplementedError

    def state_in(self, reply: Reply) -> str | None:
        return None

    def checked(self, operation: str, obj: str, reply: Reply) -> None:
        pass

    def states_seen(self) -> dict[str, str]:
        return {obj: self.state_of(obj) for obj in self.states}

    # -- rules -------------------------------------------------------------------------
    # Transitions draw from the model (objects a protocol rule removed are gone from it)
    # in two rules, one over open and one over terminal objects, so both sides of every
    # row are reached even when hypothesis switches a rule off for a whole run.
    max_objects = 6  # past it, steps go to the objects there are

    @precondition(lambda self: len(self.states) < self.max_objects)
    @rule(data=st.data())
    def create(self, data: st.DataObject) -> None:
        self.create_in(pick(data, self.starts, label="start"), data)

    @precondition(lambda self: any(s not in self.terminal for s in self.states.values()))
    @rule(data=st.data())
    def transition_open(self, data: st.DataObject) -> None:
        """A transition row applied to an open object."""
        self.judge(pick(data, [o for o, s in self.states.items() if s not in self.terminal],
                        label="object"), data)

    @precondition(lambda self: any(s in self.terminal for s in self.states.values()))
    @rule(data=st.data())
    def transition_terminal(self, data: st.DataObject) -> None:
        """A transition row applied to a terminal object."""
        self.judge(pick(data, [o for o, s in self.states.items() if s in self.terminal],
                        label="object"), data)

    def create_in(self, state: str, data: st.DataObject) -> str:
        obj = self.create_object(state, data)
        self.states[obj] = state
        return obj

    def judge(self, obj: str, data: st.DataObject) -> None:
        """Apply a transition row drawn from the table to ``obj`` and compare the answer
        (and the object's state after it) with the table's prediction."""
        op = pick(data, sorted(self.transitions), label="operation")
        t, before = self.transitions[op], self.states[obj]
        what = f"{op} on {'an' if before[:1] in 'aeiou' else 'a'} {before} {self.noun}"
        reply = self.perform(op, obj)
        allowed = t.allowed_from(before, self.terminal) or (before in t.either and reply.ok)
        self.ctx.machine_stats[f"transition {op} from {before}: {'allowed' if allowed else 'refused'}"] += 1
        if allowed:
            expect_result(self.ctx, reply, what)
            got = self.state_in(reply) or self.state_of(obj)
            if before in t.either and not t.allowed_from(before, self.terminal):
                self.ctx.expect(got == before,
                                f"{what}: served, but the {self.noun} moved from {before!r} to {got!r}",
                                kind="state_changed")
            elif t.to not in ("same", "any"):
                self.ctx.expect(got == t.to,
                                f"{what}: the {self.noun} is {got!r}; the lifecycle says {t.to!r}",
                                kind="state_changed")
            elif t.to == "same":
                self.ctx.expect(got == before, f"{what}: the {self.noun} moved from {before!r} to {got!r}",
                                kind="state_changed")
            self.states[obj] = got
        else:
            assert t.refused is not None, f"{op} from {before} is not allowed but names no error"
            if t.refused == "any":
                expect_refused(self.ctx, reply, what)
            else:
                expect_error(self.ctx, reply, t.refused, what)
            got = self.state_of(obj)
            self.ctx.expect(got == before,
                            f"{what}: the refused call moved the {self.noun} from {before!r} to {got!r}",
                            kind="state_changed")
        self.checked(op, obj, reply)

    def teardown(self) -> None:
        """At the end of each run the target's view of every object equals the model's."""
        if not self.states:
            return
        seen = self.states_seen()
        for obj, state in self.states.items():
            self.ctx.expect(obj in seen, f"the target no longer shows {self.noun} {obj} ({state})",
                            kind="state_changed")
            self.ctx.expect(seen[obj] == state,
                            f"{self.noun} {obj}: the model says {state!r}, the target says {seen[obj]!r}",
                            kind="state_changed")
