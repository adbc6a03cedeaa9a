"""The Canon state model (memberships, reactions, detached approvals) and the
hypothesis state machine that compares a target with it step by step."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, precondition, rule

from conformance.table import ProfileMachine

EMOJI = ("tada", "eyes", "+1")


@dataclass
class Approval:
    id: str
    timeout_s: int
    age_s: int = 0
    decision: str | None = None

    def status(self) -> str:
        if self.decision:
            return "resolved"
        return "expired" if self.age_s >= self.timeout_s else "pending"


@dataclass
class CanonModel:
    member_of: set[str] = field(default_factory=set)  # groups this run made that the agent is still in
    reactions: set[tuple[str, str]] = field(default_factory=set)  # (messageId, emoji) the agent has on
    approvals: dict[str, Approval] = field(default_factory=dict)


class CanonMachine(ProfileMachine):
    groups = Bundle("groups")
    messages = Bundle("messages")
    approvals = Bundle("approvals")

    def setup(self) -> None:
        from conformance.protocols.canon.client import CanonClient

        self.c = CanonClient(self.ctx)
        self.model = CanonModel()

    @rule(target=groups)
    def create_group(self) -> str:
        reply = self.c.call("create_group", {"name": "machine", "memberIds": [self.c.role("open_user")]})
        self.ctx.expect(reply.ok, f"create_group: {reply.describe()}")
        group = reply.result["conversationId"]
        self.model.member_of.add(group)
        return group

    @rule(target=messages, group=groups)
    def send(self, group: str) -> tuple[str, str]:
        reply = self.c.send("machine message", targetConversationId=group)
        if group in self.model.member_of:
            self.ctx.expect(reply.ok, f"send_to a group the agent is in: {reply.describe()}")
            return (group, reply.result["messageId"])
        self.ctx.expect(reply.error_code == "NOT_A_MEMBER", f"send_to a group the agent left: {reply.describe()}")
        return (group, "")

    @rule(group=groups)
    def leave(self, group: str) -> None:
        reply = self.c.call("leave_conversation", {"conversationId": group})
        if group in self.model.member_of:
            self.ctx.expect(reply.ok, f"leave_conversation: {reply.describe()}")
            self.model.member_of.discard(group)
        else:
            self.ctx.expect(reply.error_code == "NOT_A_MEMBER", f"leave_conversation twice: {reply.describe()}")

    @rule(message=messages, emoji=st.sampled_from(EMOJI))
    def react(self, message: tuple[str, str], emoji: str) -> None:
        group, mid = message
        if not mid or group not in self.model.member_of:
            return
        reply = self.c.call("react", {"conversationId": group, "messageId": mid, "emoji": emoji})
        self.ctx.expect(reply.ok, f"react: {reply.describe()}")
        key = (mid, emoji)
        expected = "removed" if key in self.model.reactions else "added"
        self.ctx.expect(reply.result.get("action") == expected, f"react {emoji}: target says {reply.result.get('action')!r}, model {expected!r}")
        self.model.reactions ^= {key}

    @rule(target=approvals, minutes=st.integers(2, 6))
    def request_detached(self, minutes: int) -> str:
        timeout = minutes * 60 + 30  # never on a clock step's boundary
        pending = self.c.detached_approval(timeoutMs=timeout * 1000)
        self.model.approvals[pending["approvalId"]] = Approval(pending["approvalId"], timeout)
        return pending["approvalId"]

    @rule(approval=approvals, decision=st.sampled_from(("allow", "deny")))
    def decide(self, approval: str, decision: str) -> None:
        model = self.model.approvals[approval]
        if model.status() != "pending":
            return
        self.ctx.control("decide_approval", approvalId=approval, decision=decision)
        model.decision = decision

    @precondition(lambda self: bool(self.model.approvals))
    @rule(minutes=st.integers(1, 4))
    def time_passes(self, minutes: int) -> None:
        self.ctx.control("advance_clock", seconds=minutes * 60)
        for approval in self.model.approvals.values():
            approval.age_s += minutes * 60

    @rule(approval=approvals)
    def check(self, approval: str) -> None:
        model = self.model.approvals[approval]
        reply = self.c.call("check_approval", {"approvalId": approval})
        self.ctx.expect(reply.ok, f"check_approval: {reply.describe()}")
        got = reply.result
        expected = model.status()
        self.ctx.expect(got.get("status") == expected, f"check_approval: target says {got.get('status')!r}, model says {expected!r} ({got})")
        if expected == "resolved":
            self.ctx.expect(got.get("decision") == model.decision, f"check_approval decision {got.get('decision')!r}, model {model.decision!r}")
