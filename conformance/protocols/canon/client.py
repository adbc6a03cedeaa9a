"""A Canon caller for checks: verbs over the run's binding, the seeded world's ids,
and the control interface that plays the humans."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.checks.errors import expect_result
from conformance.runner import CheckContext, Untested
from conformance.spec.schemas import resolve_pointer
from conformance.transport.binding import Reply


def fresh(prefix: str = "c") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


class CanonClient:
    def __init__(self, ctx: CheckContext, reset: bool = True) -> None:
        self.ctx = ctx
        self.binding = ctx.binding
        self._roles: dict[str, str] | None = None
        if reset and ctx.run.control_path:
            # Each check starts from the seeded world: an approved contact request, a left
            # group or a passed deadline must not change what the next check sees.
            ctx.control("reset")

    def call(self, verb: str, payload: Any) -> Reply:
        return self.binding.call(verb, payload)

    # -- the world ---------------------------------------------------------------
    def role(self, name: str) -> str:
        if self._roles is None:
            if self.ctx.run.world:
                self._roles = dict(self.ctx.run.world)
            else:
                roles = self.controlled("world").get("roles")
                self._roles = dict(roles) if isinstance(roles, dict) else {}
        if name not in self._roles:
            raise Untested(f"the target's world has no {name!r} (set world.{name} in --config)")
        return self._roles[name]

    # -- humans and time (control) -------------------------------------------------
    def script(self, verb: str, **response: Any) -> None:
        self.ctx.control("script", verb=verb, response=response)

    def controlled(self, action: str, **payload: Any) -> dict[str, Any]:
        """The control interface's answer as an object ({} when it is another shape)."""
        answer = self.ctx.control(action, **payload).json()
        return answer if isinstance(answer, dict) else {}

    def snapshot(self) -> str:
        return str(self.controlled("snapshot").get("digest", ""))

    def messages(self, conversation: str, as_user: str) -> list[dict[str, Any]]:
        listed = self.controlled("messages", conversationId=conversation, **{"as": as_user}).get("messages")
        return [m for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []

    def interaction(self, ident: str) -> dict[str, Any]:
        return self.controlled("interaction", id=ident)

    # -- building blocks ---------------------------------------------------------
    def card(self, actions: bool = False, **extra: Any) -> dict[str, Any]:
        """A card envelope; ``schema`` is the spec's own const."""
        schema = resolve_pointer(self.ctx.profile.spec, "/$defs/runtimeCard/properties/schema/const")
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "conformance check"}]
        if actions:
            blocks.append({"type": "actions", "actions": [{"id": "ok", "label": "OK"}]})
        return {"schema": schema, "title": "Conformance", "fallbackText": "Conformance check card", "blocks": blocks, **extra}

    def send(self, text: str | None = "conformance check", **fields: Any) -> Reply:
        """send_to (to the owner chat unless a target is given); text None sends none."""
        payload = {**({} if text is None else {"text": text}), **fields}
        if not any(k in payload for k in ("targetConversationId", "targetUserId", "canonContactId")):
            payload["targetConversationId"] = self.role("owner_chat")
        return self.call("send_to", payload)

    def group(self, *members: str) -> str:
        """A new group the agent owns."""
        with self.ctx.setup("create a group the agent owns", by="CANON-RESULT-CREATE-GROUP"):
            reply = self.call("create_group", {"name": "conformance", "memberIds": list(members) or [self.role("open_user")]})
            return str(expect_result(self.ctx, reply, "create_group (to set up a group)", ["conversationId"])["conversationId"])

    def detached_approval(self, **fields: Any) -> dict[str, Any]:
        payload = {"toolName": "deploy", "toolSummary": "Deploy the conformance build", "mode": "detached",
                   "conversationId": self.role("owner_chat"), **fields}
        with self.ctx.setup("open a detached approval", by="CANON-APPROVAL-DETACHED"):
            reply = self.call("request_approval", payload)
            result = expect_result(self.ctx, reply, "request_approval mode detached", ["status", "approvalId"])
            self.ctx.expect(result.get("status") == "pending",
                            f"request_approval mode detached must answer pending at once: {reply.describe()}")
        return result
