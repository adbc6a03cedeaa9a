"""A Canon caller for checks: verbs over the run's binding, the seeded world's ids,
and the control interface that plays the humans.

Without a control interface (an operator's live server) nothing resets the world between
checks, no human answers at once, and the world's state is what the agent itself sees
through the verbs the document gives it (``list_conversations``: each conversation with
its members and last message; ``list_contacts``). What only control shows (the messages a
recipient sees, how an interaction was routed) makes the requirement untested, reason
``control``, saying what it needs."""

from __future__ import annotations

import json
import uuid
from typing import Any

from conformance.checks.expect import expect_result
from conformance.documents.schemas import resolve_pointer
from conformance.kit.check import CheckContext, Untested
from conformance.transport.binding import Reply


def fresh(prefix: str = "c") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


class CanonClient:
    def __init__(self, ctx: CheckContext, reset: bool = True) -> None:
        self.ctx = ctx
        self.binding = ctx.binding
        self._roles: dict[str, str] | None = None
        self._made: dict[str, str] = {}  # objects this check made to name (made_group, sent_message)
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

    def made(self, name: str) -> str:
        """An object this check made itself, to name where a verb would otherwise act on the
        configured world: ``made_group``, a group the agent owns with ``member`` in it (what
        add_member, remove_member and leave_conversation change), ``sent_message``, a message
        the agent sent to ``owner_chat`` (what react and forward name). Made once per check."""
        if name not in self._made:
            if name == "made_group":
                self._made[name] = self.group(self.role("member"))
            elif name == "sent_message":
                with self.ctx.setup("send a message to the owner chat", by="CANON-RESULT-SEND-TO"):
                    sent = expect_result(self.ctx, self.send("conformance check"),
                                         "send_to (a message to name)", ["messageId"])
                    self._made[name] = str(sent["messageId"])
            else:
                raise ValueError(f"no made object {name!r}")
        return self._made[name]

    # -- humans and time (control) -------------------------------------------------
    @property
    def humans(self) -> bool:
        """Whether a human can be scripted to answer at once (the control interface)."""
        return bool(self.ctx.run.control_path)

    def script(self, verb: str, **response: Any) -> None:
        if not self.humans:
            self.ctx.needs_control(f"a human who answers {verb} with {response.get('action')!r} "
                                   "(control script)")
        self.ctx.control("script", verb=verb, response=response)

    def controlled(self, action: str, **payload: Any) -> dict[str, Any]:
        """The control interface's answer as an object ({} when it is another shape)."""
        answer = self.ctx.control(action, **payload).json()
        return answer if isinstance(answer, dict) else {}

    def snapshot(self) -> str:
        """The world's state: with control, the digest of all of it; without, the agent's own
        view of it (``observed``)."""
        if self.ctx.run.control_path:
            return str(self.controlled("snapshot").get("digest", ""))
        return self.observed()

    def observed(self) -> str:
        """The world as the agent sees it through the document's verbs: list_conversations
        (every conversation it is in, with its members and last message) and list_contacts,
        as the target answered them (a refusal is part of what is seen)."""
        seen = []
        for verb in ("list_conversations", "list_contacts"):
            reply = self.call(verb, {})
            seen.append(reply.result if reply.ok else reply.describe())
        return json.dumps(seen, sort_keys=True, default=str)

    def messages(self, conversation: str, as_user: str) -> list[dict[str, Any]]:
        if not self.ctx.run.control_path:
            self.ctx.needs_control(f"the messages of a conversation as {as_user} sees them "
                                   "(control messages): no verb of the document lists them")
        listed = self.controlled("messages", conversationId=conversation, **{"as": as_user}).get("messages")
        return [m for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []

    def listed(self, conversation: str) -> dict[str, Any]:
        """The conversation as list_conversations shows it to the agent ({} when it is not
        listed): its members and its lastMessage, named by the document's
        list_conversations_result."""
        reply = self.call("list_conversations", {})
        expect_result(self.ctx, reply, "list_conversations", ["conversations"])
        convs = reply.result.get("conversations")
        for conv in convs if isinstance(convs, list) else []:
            if isinstance(conv, dict) and conv.get("id") == conversation:
                return conv
        return {}

    def last_message(self, conversation: str) -> dict[str, Any]:
        """The conversation's last message as the agent sees it: with control, the last of
        its messages; without, the lastMessage list_conversations gives ({} when none)."""
        if self.ctx.run.control_path:
            seen = self.messages(conversation, self.role("agent"))
            return seen[-1] if seen else {}
        last = self.listed(conversation).get("lastMessage")
        return last if isinstance(last, dict) else {}

    def interaction(self, ident: str) -> dict[str, Any]:
        if not self.ctx.run.control_path:
            self.ctx.needs_control("how the target recorded an interaction (control interaction): its "
                                   "responder, deadline or what the human sees, which no verb of the "
                                   "document shows")
        return self.controlled("interaction", id=ident)

    def least_timeout(self, verb: str) -> int:
        """The shortest relative deadline the document lets ``verb`` ask for (its timeoutMs
        minimum): without a human to answer, what a blocking verb waits."""
        properties = self.ctx.profile.operations[verb].params_schema.get("properties") or {}
        prop = properties.get("timeoutMs") or {}
        return int(prop.get("minimum", 1000))

    def unattended(self, verb: str, payload: dict[str, Any], keep: str = "\0") -> dict[str, Any]:
        """``payload`` for a blocking ``verb`` that no human answers (no control): its
        deadline the shortest the document allows, so the target answers timeout soon (the
        parts under ``keep``, what an invalid input breaks, stay as they are)."""
        if keep.startswith(("/timeoutMs", "/expiresAt")):
            return payload
        out = {k: v for k, v in payload.items() if k != "expiresAt"}
        out["timeoutMs"] = self.least_timeout(verb)
        return out

    # -- building blocks ---------------------------------------------------------
    def card(self, actions: bool = False, **extra: Any) -> dict[str, Any]:
        """A card envelope; ``schema`` is the spec's own const."""
        schema = resolve_pointer(self.ctx.profile.spec, "/$defs/runtimeCard/properties/schema/const")
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "conformance check"}]
        if actions:
            blocks.append({"type": "actions", "actions": [{"id": "ok", "label": "OK"}]})
        return {"schema": schema, "title": "Conformance", "fallbackText": "Conformance check card",
                "blocks": blocks, **extra}

    def send(self, text: str | None = "conformance check", **fields: Any) -> Reply:
        """send_to (to the owner chat unless a target is given); text None sends none."""
        payload = {**({} if text is None else {"text": text}), **fields}
        if not any(k in payload for k in ("targetConversationId", "targetUserId", "canonContactId")):
            payload["targetConversationId"] = self.role("owner_chat")
        return self.call("send_to", payload)

    def group(self, *members: str) -> str:
        """A new group the agent owns."""
        with self.ctx.setup("create a group the agent owns", by="CANON-RESULT-CREATE-GROUP"):
            reply = self.call("create_group", {"name": "conformance",
                                               "memberIds": list(members) or [self.role("open_user")]})
            made = expect_result(self.ctx, reply, "create_group (to set up a group)", ["conversationId"])
            return str(made["conversationId"])

    def detached_approval(self, **fields: Any) -> dict[str, Any]:
        payload = {"toolName": "deploy", "toolSummary": "Deploy the conformance build", "mode": "detached",
                   "conversationId": self.role("owner_chat"), **fields}
        with self.ctx.setup("open a detached approval", by="CANON-APPROVAL-DETACHED"):
            reply = self.call("request_approval", payload)
            result = expect_result(self.ctx, reply, "request_approval mode detached",
                                   ["status", "approvalId"])
            self.ctx.expect(result.get("status") == "pending",
                            f"request_approval mode detached must answer pending at once: {reply.describe()}")
        return result
