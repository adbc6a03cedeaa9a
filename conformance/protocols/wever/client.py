"""A Wever Connect caller for checks: actions as one of the run's mailboxes (alice,
bob, carol), the set-up steps the flow needs (a recipient advertising a capability,
a sender grant, a task in a given state), the A2A adapter and the control interface."""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from typing import Any

from conformance.checks.errors import expect_mapping, expect_result
from conformance.runner import CheckContext, Untested
from conformance.transport.binding import FRESH, RawToken, Reply, dig
from conformance.transport.http import HttpReply

SENDER, RECIPIENT, STRANGER = "alice", "bob", "carol"
TERMINAL = ("completed", "declined", "cancelled")


def fresh_key() -> str:
    return uuid.uuid4().hex


def rpc_error(reply: HttpReply) -> Any:
    """The JSON-RPC error member of an answer, or None."""
    err = dig(reply.json(), "error")
    return err if isinstance(err, dict) else None


def refused_rpc(ctx: CheckContext, reply: HttpReply, what: str) -> None:
    """A JSON-RPC error or an HTTP refusal: what the manifest's "rejected" asks for."""
    ctx.expect(rpc_error(reply) is not None or reply.status >= 400, f"{what}: served: HTTP {reply.status} {reply.text[:200]}",
               kind="accepted_invalid")


def served_rpc(ctx: CheckContext, reply: HttpReply, what: str) -> Any:
    body = reply.json()
    ctx.expect(reply.status == 200 and isinstance(body, dict) and "result" in body and "error" not in body,
               f"{what}: expected a JSON-RPC result, got HTTP {reply.status} {reply.text[:300]}", kind="rejected_valid")
    return body["result"]


class WeverClient:
    def __init__(self, ctx: CheckContext, reset: bool = True) -> None:
        self.ctx = ctx
        self.binding = ctx.binding
        self.spec = ctx.profile.spec
        self.a2a = self.spec["protocols"]["a2a"]
        if reset and ctx.run.control_path:
            ctx.control("reset")  # each check starts from the seeded relay: quotas and clocks are shared

    # -- who --------------------------------------------------------------------------
    def mailbox(self, who: str) -> str:
        """A mailbox id of the run (credentials.<who>.id)."""
        cred = self.ctx.credential(who)
        if not isinstance(cred, dict) or not cred.get("id"):
            raise Untested(f"credentials.{who} needs the mailbox id and token: {{id: mbx_..., token: ...}}")
        return str(cred["id"])

    def token(self, who: str) -> str:
        return str(self.ctx.token(who))

    # -- actions -------------------------------------------------------------------------
    def call(self, action: str, params: Any, who: str | RawToken | None = SENDER, key: str | None = None, **kw: Any) -> Reply:
        """``action`` as mailbox ``who`` (None: no bearer); ``key`` the Idempotency-Key
        (send_task gets a fresh one unless given; other actions send none)."""
        if key is None and action == "send_task":
            key = FRESH
        return self.binding.call(action, params, caller=who, idempotency_key=key, **kw)

    def open_call(self, action: str, params: Any) -> Reply:
        """An action without requires_bearer, with no token: over HTTP, whatever the run
        speaks (register_mailbox is no MCP tool, and MCP wants its bearer on every call)."""
        binding = self.binding if self.binding.kind == "http-action" else self.ctx.binding_named("http")
        return binding.call(action, params, caller=None, idempotency_key=None)

    def caller_for(self, action: str) -> str | None:
        """Who calls ``action`` in checks about inputs: a mailbox where the action wants a
        bearer, or wherever the binding wants one on every call (MCP); no one otherwise."""
        needs = bool(self.spec["actions"][action].get("requires_bearer")) or self.binding.kind == "mcp-tools"
        return SENDER if needs else None

    def input_call(self, action: str, params: Any) -> Reply:
        """``action`` with ``params`` as checks of inputs send it: register_mailbox over HTTP."""
        if not self.spec["actions"][action].get("requires_bearer") and self.binding.kind == "mcp-tools" \
                and action not in self.mcp_tools():
            return self.open_call(action, params)
        return self.call(action, params, self.caller_for(action))

    def mcp_tools(self) -> set[str]:
        """The actions that are MCP tools: all but registration ("Registration is not an MCP tool")."""
        registration = self.a2a["access_setup"]["path"].rsplit("/", 1)[-1]
        return {name for name in self.spec["actions"] if name != registration}

    @property
    def capability(self) -> str:
        """The capability of the manifest's own example (send_message_example data)."""
        return str(self.example_data()["capability"])

    def example_data(self) -> dict[str, Any]:
        return copy.deepcopy(self.a2a["send_message_example"]["params"]["message"]["parts"][0]["data"])

    def task_body(self, recipient: str = RECIPIENT, data: Any = None, capability: str | None = None) -> dict[str, Any]:
        """send_task input shaped as the manifest's example: recipient, capability, task data."""
        return {"recipient_id": self.mailbox(recipient), "capability": capability or self.capability,
                "task": data if data is not None else self.example_data()["task"]}

    # -- set-up ------------------------------------------------------------------------------
    def advertise(self, who: str = RECIPIENT, capabilities: list[str] | None = None, **fields: Any) -> dict[str, Any]:
        """Make ``who`` advertise the example capability (update_mailbox)."""
        body = {"label": f"conformance {who}", "capabilities": capabilities or [self.capability], "discoverable": False, **fields}
        with self.ctx.setup(f"update_mailbox as {who}", by="WEVER-INPUT-VALID-UPDATE-MAILBOX"):
            return dict(expect_result(self.ctx, self.call("update_mailbox", body, who), "update_mailbox"))

    def grant(self, sender: str = SENDER, recipient: str = RECIPIENT, allowed: bool = True) -> Reply:
        return self.call("allow_sender", {"sender_id": self.mailbox(sender), "allowed": allowed}, recipient)

    def allow(self, sender: str = SENDER, recipient: str = RECIPIENT) -> None:
        """``recipient`` advertises the capability and grants ``sender``."""
        self.advertise(recipient)
        with self.ctx.setup(f"allow_sender as {recipient}", by="WEVER-SEND-OFFERED"):
            expect_result(self.ctx, self.grant(sender, recipient), "allow_sender")

    def send(self, sender: str = SENDER, recipient: str = RECIPIENT, data: Any = None, key: str | None = None,
             capability: str | None = None) -> Reply:
        return self.call("send_task", self.task_body(recipient, data, capability), sender, key=key or fresh_key())

    def new_task(self, state: str = "offered", sender: str = SENDER, recipient: str = RECIPIENT) -> dict[str, Any]:
        """A task from ``sender`` to ``recipient`` brought to ``state`` through the flow."""
        self.allow(sender, recipient)
        with self.ctx.setup(f"send a task and bring it to {state}", by="WEVER-SEND-OFFERED"):
            task = self.task_of(self.send(sender, recipient), "send_task")
            steps = {"accepted": [("accept_task", recipient)], "completed": [("accept_task", recipient), ("complete_task", recipient)],
                     "declined": [("decline_task", recipient)], "cancelled": [("cancel_task", sender)]}[state] if state != "offered" else []
            for action, who in steps:
                params: dict[str, Any] = {"task_id": task["task_id"]}
                if action == "complete_task":
                    params["result"] = {"answer": "conformance result"}
                task = self.task_of(self.call(action, params, who), action)
        return task

    def task_of(self, reply: Reply, what: str) -> dict[str, Any]:
        result = expect_result(self.ctx, reply, what, ["task"])
        return expect_mapping(self.ctx, result["task"], f"{what} task", ("task_id", "state"))

    def get(self, task_id: str, who: str = SENDER) -> Reply:
        return self.call("get_task", {"task_id": task_id}, who)

    def inbox_ids(self, who: str = RECIPIENT) -> list[str]:
        result = expect_result(self.ctx, self.call("inbox", {}, who), f"inbox of {who}", ["tasks"])
        return [str(t.get("task_id")) for t in result["tasks"] if isinstance(t, dict)]

    def snapshot(self) -> str:
        return str((self.ctx.control("snapshot").json() or {}).get("digest", ""))

    def advance(self, seconds: float) -> None:
        self.ctx.control("advance_clock", seconds=seconds)

    # -- the A2A adapter --------------------------------------------------------------------
    def a2a_headers(self, who: str | None = SENDER, version: str | None = "1.0") -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if version is not None:
            headers["A2A-Version"] = version
        if who is not None:
            headers["Authorization"] = f"Bearer {self.token(who)}"
        return headers

    def a2a_message(self, message_id: str | None = None, data: Any = None, recipient: str = RECIPIENT) -> dict[str, Any]:
        """SendMessage params from the manifest's send_message_example, recipient and
        messageId filled in."""
        params = copy.deepcopy(self.a2a["send_message_example"]["params"])
        part = params["message"]["parts"][0]
        part["data"]["recipient_id"] = self.mailbox(recipient)
        if data is not None:
            part["data"]["task"] = data
        params["message"]["messageId"] = message_id or f"conformance-{uuid.uuid4().hex}"
        return params

    def a2a_call(self, method: str, params: Any, who: str | None = SENDER, version: str | None = "1.0",
                 raw: str | bytes | None = None) -> HttpReply:
        envelope = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
        body = raw if raw is not None else json.dumps(envelope)
        return self.ctx.http.request("POST", self.a2a["endpoint"], headers=self.a2a_headers(who, version), content=body)

    @staticmethod
    def a2a_key(message_id: str) -> str:
        """The Connect request key of an A2A messageId (protocols.a2a.retry)."""
        return "a2a-" + hashlib.sha256(message_id.encode()).hexdigest()
