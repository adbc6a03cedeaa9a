"""The Canon state model and the hypothesis state machines that compare a target with
it step by step. The model has two independent parts, each a machine of its own so that
the quick budget (a few short runs) reaches every rule: conversations (groups,
messages, reactions, leaving) and detached approvals (decisions, time, expiry).
``CanonMachine`` is their union: its rules are every rule CANON-LIFECYCLE must reach.

Every rule has a precondition, so a step goes where it tests something: a reaction is
toggled off only where the model says one is on, a message is sent to a group the agent
left only once it left one, an approval's deadline is let pass only while one is pending.
Rules without arguments come first in hypothesis's order, so even the simplest run
walks the whole story (create, send, react, leave, unreact; request, check, expire,
decide); the generated runs then vary it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.checks.expect import expect_result
from conformance.kit.check import CheckContext
from conformance.kit.machine import ProfileMachine, first_step, pick

EMOJI = ("tada", "eyes", "+1")
MINUTE_S = 60


@dataclass
class Approval:
    id: str
    timeout_s: int
    age_s: int = 0
    decision: str | None = None
    checked: str | None = None  # the status the last check saw

    def status(self) -> str:
        if self.decision:
            return "resolved"
        return "expired" if self.age_s >= self.timeout_s else "pending"


@dataclass
class CanonModel:
    member_of: list[str] = field(default_factory=list)  # groups this run made that the agent is still in
    left: list[str] = field(default_factory=list)  # groups the agent left
    probed: set[str] = field(default_factory=set)  # left groups already probed (send and leave again)
    messages: list[tuple[str, str]] = field(default_factory=list)  # (group, messageId) the agent sent
    # (group, messageId, emoji) the agent has on, in the order they were added: every
    # choice among model objects goes by the order of the run's own steps, never by the
    # target's ids (random ids sorted would make a replayed example take another path)
    reactions: dict[tuple[str, str, str], None] = field(default_factory=dict)
    approvals: dict[str, Approval] = field(default_factory=dict)

    def live_messages(self) -> list[tuple[str, str]]:
        return [m for m in self.messages if m[0] in self.member_of]

    def bare_messages(self) -> list[tuple[str, str]]:
        """Live messages without a reaction of the agent."""
        on = {(g, m) for g, m, _ in self.reactions}
        return [m for m in self.live_messages() if m not in on]

    def live_reactions(self) -> list[tuple[str, str, str]]:
        return [r for r in self.reactions if r[0] in self.member_of]

    def pending(self) -> list[Approval]:
        return [a for a in self.approvals.values() if a.status() == "pending"]

    def unchecked(self) -> list[Approval]:
        return [a for a in self.approvals.values() if a.checked != a.status()]

    def count(self, status: str) -> int:
        return sum(1 for a in self.approvals.values() if a.status() == status)


class CanonParts(ProfileMachine):
    """What both parts share: the client, the model, and how they are started."""

    def setup(self) -> None:
        from conformance.protocols.canon.client import CanonClient

        self.c = CanonClient(self.ctx)
        self.model = CanonModel()


class ConversationMachine(CanonParts):
    """Groups, messages, reactions and leaving."""

    def _create(self) -> None:
        reply = self.c.call("create_group", {"name": "machine", "memberIds": [self.c.role("open_user")]})
        made = expect_result(self.ctx, reply, "create_group", ["conversationId"])
        self.model.member_of.append(made["conversationId"])

    @first_step()
    def start(self) -> None:
        self._create()

    @precondition(lambda self: len(self.model.member_of) < 2 and not set(self.model.left) - self.model.probed)
    @rule()
    def create_group(self) -> None:
        self._create()

    @precondition(lambda self: bool(self.model.member_of) and len(self.model.live_messages()) < 2)
    @rule()
    def send(self) -> None:
        group = self.model.member_of[len(self.model.messages) % len(self.model.member_of)]
        reply = self.c.send("machine message", targetConversationId=group)
        sent = expect_result(self.ctx, reply, "send_to a group the agent is in", ["messageId"])
        self.model.messages.append((group, sent["messageId"]))

    @precondition(lambda self: bool(self.model.bare_messages()))
    @rule()
    def react(self) -> None:
        """React to a message that carries no reaction of the agent: added."""
        group, mid = self.model.bare_messages()[0]
        self._react(group, mid, EMOJI[len(self.model.reactions) % len(EMOJI)])

    @precondition(lambda self: bool(self.model.live_reactions()))
    @rule()
    def unreact(self) -> None:
        """Toggle off a reaction the model says is on: removed."""
        self._react(*self.model.live_reactions()[0])

    @precondition(lambda self: bool(self.model.live_messages()))
    @rule(data=st.data(), emoji=st.sampled_from(EMOJI))
    def toggle(self, data: st.DataObject, emoji: str) -> None:
        """Any message, any emoji: added or removed as the model says."""
        group, mid = pick(data, self.model.live_messages())
        self._react(group, mid, emoji)

    def _react(self, group: str, mid: str, emoji: str) -> None:
        reply = self.c.call("react", {"conversationId": group, "messageId": mid, "emoji": emoji})
        self.ctx.expect(reply.ok, f"react: {reply.describe()}")
        key = (group, mid, emoji)
        expected = "removed" if key in self.model.reactions else "added"
        self.ctx.expect(reply.result.get("action") == expected,
                        f"react {emoji}: target says {reply.result.get('action')!r}, model {expected!r}")
        if key in self.model.reactions:
            del self.model.reactions[key]
        else:
            self.model.reactions[key] = None

    @precondition(lambda self: len(self.model.member_of) > 1 and len(self.model.messages) >= 2)
    @rule()
    def leave(self) -> None:
        group = self.model.member_of[-1]
        reply = self.c.call("leave_conversation", {"conversationId": group})
        self.ctx.expect(reply.ok, f"leave_conversation: {reply.describe()}")
        self.model.member_of.remove(group)
        self.model.left.append(group)

    @precondition(lambda self: bool(set(self.model.left) - self.model.probed))
    @rule()
    def leave_again(self) -> None:
        """A group the agent left: leaving again and sending to it are refused."""
        group = next(g for g in self.model.left if g not in self.model.probed)
        self.model.probed.add(group)
        reply = self.c.call("leave_conversation", {"conversationId": group})
        self.ctx.expect(not reply.ok,
                        f"leave_conversation of a group the agent left must be refused: {reply.describe()}")
        reply = self.c.send("machine message", targetConversationId=group)
        self.ctx.expect(not reply.ok, f"send_to a group the agent left must be refused: {reply.describe()}")


class ApprovalMachine(CanonParts):
    """Detached approvals: decided, checked, and let expire as time passes."""

    @precondition(lambda self: bool(self.model.unchecked()))
    @rule()
    def check(self) -> None:
        """Check an approval whose status changed since it was last checked."""
        self._check(self.model.unchecked()[0])

    @precondition(lambda self: bool(self.model.pending())
                  and self.model.count("expired") <= self.model.count("resolved"))
    @rule()
    def deadline_passes(self) -> None:
        """Let a pending approval's deadline pass, then check it: expired, not a denial."""
        approval = self.model.pending()[0]
        self._advance(approval.timeout_s - approval.age_s + 1)
        self._check(approval)

    @precondition(lambda self: bool(self.model.pending()))
    @rule(decision=st.sampled_from(("allow", "deny")))
    def decide(self, decision: str) -> None:
        approval = self.model.pending()[0]
        self.ctx.control("decide_approval", approvalId=approval.id, decision=decision)
        approval.decision = decision

    @precondition(lambda self: len(self.model.approvals) < 3 and len(self.model.pending()) < 2)
    @rule(minutes=st.integers(2, 6))
    def request_detached(self, minutes: int) -> None:
        timeout = minutes * MINUTE_S + 30  # never on a clock step's boundary
        pending = self.c.detached_approval(timeoutMs=timeout * 1000)
        self.model.approvals[pending["approvalId"]] = Approval(pending["approvalId"], timeout)

    @precondition(lambda self: bool(self.model.approvals))
    @rule(minutes=st.integers(1, 4))
    def time_passes(self, minutes: int) -> None:
        self._advance(minutes * MINUTE_S)

    @precondition(lambda self: bool(self.model.approvals))
    @rule(data=st.data())
    def check_any(self, data: st.DataObject) -> None:
        self._check(pick(data, list(self.model.approvals.values())))

    def _advance(self, seconds: int) -> None:
        self.ctx.control("advance_clock", seconds=seconds)
        for approval in self.model.approvals.values():
            approval.age_s += seconds

    def _check(self, model: Approval) -> None:
        reply = self.c.call("check_approval", {"approvalId": model.id})
        self.ctx.expect(reply.ok, f"check_approval: {reply.describe()}")
        got = reply.result
        expected = model.status()
        model.checked = expected
        self.ctx.expect(got.get("status") == expected,
                        f"check_approval: target says {got.get('status')!r}, model says {expected!r} ({got})")
        if expected == "resolved":
            self.ctx.expect(got.get("decision") == model.decision,
                            f"check_approval decision {got.get('decision')!r}, model {model.decision!r}")


class CanonMachine(ConversationMachine, ApprovalMachine):
    """The whole Canon model: every rule of both parts (``rule_names`` of this class is
    what CANON-LIFECYCLE must reach). ``run`` runs each part as its own machine."""

    PARTS: tuple[type[ProfileMachine], ...] = (ConversationMachine, ApprovalMachine)

    @classmethod
    def run(cls, ctx: CheckContext) -> None:
        for part in cls.PARTS:
            ctx.run_machine(part)


__all__: list[Any] = ["ApprovalMachine", "CanonMachine", "CanonModel", "ConversationMachine"]
