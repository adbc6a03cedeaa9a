"""An Agent Plaza caller for checks: SendMessage built the way the document's examples
are (ROLE_USER, one part, ``configuration.returnImmediately``), data commands, the set-up
steps consent needs (an invitation, its acceptance, texts), and readers that find the
payload in an answer under either reading A2A 1.0 allows (``result.task`` or a bare
Task, ``result.message`` or a bare Message)."""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

from conformance.checks.expect import expect_mapping, expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext, Untested
from conformance.protocols.a2a import names, wire
from conformance.protocols.a2a.names import CLIENT_ROLE, COMPLETED, REJECTED, SUBMITTED, WORKING
from conformance.transport.binding import Reply, dig

ALICE, BOB, CAROL = "alice", "bob", "carol"
DEFAULT: Any = object()  # the examples' configuration
RECEIVER_NAMESPACE = uuid.UUID("6f1d3a52-8c5e-4b1f-9a7e-2d4c8b0e5f13")  # the suite's client_keys (uuid5)

# A2A 1.0 task states (the proto's TaskState, protocols/a2a/names.py); CANCELED also in the
# spelling older drafts of the proto used (plaza/variants.py: a site may still write it).
CANCELED = (names.CANCELED, "TASK_STATE_CANCELLED")
# The terminal state A2A 1.0 gives a site for a task its peer declined (specs/a2a/a2a.proto TaskState:
# REJECTED, "the agent has decided to not perform the task ... later once an agent has determined it
# can't or won't proceed"); never COMPLETED (no peer message came: /tasks/completed), CANCELED (only
# CancelTask cancels: /tasks/cancel) or FAILED ("finished with an error": a decline is none).
ENDED_BY_SITE = (REJECTED,)
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# states a live site's inbox row may name that need no clean-up (the profile's words; set-up only)
CLOSED_WORDS = frozenset({"removed", "declined", "closed"})
# what names a connection in an inbox row: the schema's command field, and A2A's message.contextId
# (/textTarget/existingConnection: "persistent friendship connection ID")
CONNECTION_MEMBERS = ("connection_id", "contextId")
# with control, the server's deadline is shortened to this for the checks that wait it out
SHORT_DEADLINE_S = 0.2


# What keeps a live site as the check found it registers here (keeper.py's keeper_of, at its
# import): the keeping layer sits above the client, which reports each call to it and never
# imports it.
KEEPING: list[Callable[[CheckContext], Any]] = []


def keeper_for(ctx: CheckContext) -> Any:
    """The check's keeper on a live site (keeper.py), None with control. Without one
    registered a live run would leave behind what it made: that is the kit's bug, said so."""
    if KEEPING:
        return KEEPING[0](ctx)
    if ctx.run.live:
        raise RuntimeError("conformance.protocols.plaza.keeper is not loaded: a live run would not put back "
                           "what it made")
    return None


def fresh_id() -> str:
    return str(uuid.uuid4())


def extension_uri(spec: dict[str, Any]) -> str:
    return str(spec["requiredHeaders"][names.EXTENSIONS_HEADER])


def required_headers(spec: dict[str, Any]) -> dict[str, str]:
    """The document's requiredHeaders that every call carries (the bearer and the content
    type are the binding's own)."""
    return {k: str(v) for k, v in spec["requiredHeaders"].items()
            if k not in ("Authorization", "Content-Type")}


class PlazaClient:
    def __init__(self, ctx: CheckContext, reset: bool = True) -> None:
        self.ctx = ctx
        self.binding = ctx.binding
        self.spec = ctx.profile.spec
        self.ext = extension_uri(self.spec)
        if reset and ctx.run.control_path:
            ctx.control("reset")  # each check starts from the seeded site
        self.keeper = keeper_for(ctx)  # a live site: what the check makes is put back when it ends

    # -- who ------------------------------------------------------------------------------
    def agent_id(self, who: str) -> str:
        """The public visitor UUID of a run credential (credentials.<who>.id)."""
        cred = self.ctx.credential(who)
        if not isinstance(cred, dict) or not cred.get("id"):
            raise Untested(f"credentials.{who} needs the visitor's public UUID and token: "
                           "{id: ..., token: ...}", "credential")
        return str(cred["id"])

    # -- requests -------------------------------------------------------------------------
    def rpc(self, method: str, params: Any, who: Any = ALICE, **options: Any) -> Reply:
        if self.keeper is not None:
            self.keeper.before(method, params, who)
        reply = self.binding.call(method, params, caller=who, **options)
        if self.keeper is not None:
            self.keeper.after(method, params, who, reply)
        return reply

    def raw(self, body: str, who: Any = ALICE, **options: Any) -> Reply:
        """A request sent as its JSON text (watched like ``rpc`` on a live site)."""
        if self.keeper is not None:
            try:
                request = json.loads(body)
            except ValueError:
                request = None
            if isinstance(request, dict):
                self.keeper.before(str(request.get("method")), request.get("params"), who)
        reply = self.binding.send_raw(body, caller=who, **options)
        if self.keeper is not None:
            self.keeper.after_raw(body, who, reply)
        return reply

    def example(self, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.spec["examples"][name])

    def configuration(self) -> dict[str, Any]:
        """The configuration every example sends (returnImmediately: true)."""
        return copy.deepcopy(self.spec["examples"]["status"]["params"]["configuration"])

    def params(self, part: dict[str, Any], *, context: str | None = None, to: str | None = None,
               message_id: str | None = None, configuration: Any = DEFAULT, **message: Any) -> dict[str, Any]:
        """SendMessage params shaped as the examples: a fresh messageId, ROLE_USER, one part."""
        msg: dict[str, Any] = {"messageId": message_id or fresh_id(), "role": CLIENT_ROLE, "parts": [part]}
        if context is not None:
            msg["contextId"] = context
        if to is not None:
            msg["metadata"] = {self.ext: {"recipientId": to}}
        msg.update(message)
        out: dict[str, Any] = {"message": msg}
        if configuration is DEFAULT:
            out["configuration"] = self.configuration()
        elif configuration is not None:
            out["configuration"] = configuration
        return out

    def send(self, params: dict[str, Any], who: Any = ALICE, **options: Any) -> Reply:
        return self.rpc("SendMessage", params, who, **options)

    def text(self, who: Any, text: str, *, context: str | None = None, to: str | None = None,
             **kw: Any) -> Reply:
        """A text: to a connection (``context``) or, as a first contact, to a visitor UUID (``to``)."""
        return self.send(self.params({"text": text}, context=context, to=to, **kw), who)

    def command(self, name: str, fields: dict[str, Any], who: Any = ALICE, *, context: str | None = None,
                **kw: Any) -> Reply:
        """A data command; a command naming a connection carries it as contextId too, as the examples do."""
        data = {"operation": name, **fields}
        if context is None and "connection_id" in fields and kw.pop("with_context", True):
            context = fields["connection_id"]
        return self.send(self.params({"data": data}, context=context, **kw), who)

    # -- answers --------------------------------------------------------------------------
    def task_of(self, reply: Reply, what: str) -> dict[str, Any]:
        """The Task of a SendMessage (``result.task``) or GetTask/CancelTask answer (the Task)."""
        result = expect_result(self.ctx, reply, what)
        task = result.get("task", result) if isinstance(result, dict) else result
        return expect_mapping(self.ctx, task, f"{what}: the task", ("id", "status"))

    def message_of(self, reply: Reply, what: str) -> dict[str, Any]:
        result = expect_result(self.ctx, reply, what)
        message = result.get("message", result) if isinstance(result, dict) else result
        return expect_mapping(self.ctx, message, f"{what}: the answer message", ("parts",))

    def data_of(self, reply: Reply, what: str, keys: tuple[str, ...] = ()) -> dict[str, Any]:
        """The structured data of a command's answer: the first data part of its Message."""
        message = self.message_of(reply, what)
        parts = message.get("parts")
        data = next((p["data"] for p in parts if isinstance(p, dict) and isinstance(p.get("data"), dict)),
                    None) if isinstance(parts, list) else None
        return expect_mapping(self.ctx, data, f"{what}: the data part of the answer", keys)

    def state_of(self, task: dict[str, Any]) -> Any:
        return wire.state(task)

    def site_metadata(self, task: dict[str, Any]) -> dict[str, Any]:
        meta = dig(task, "metadata", self.ext)
        return meta if isinstance(meta, dict) else {}

    def connection_of(self, task: dict[str, Any]) -> Any:
        """The connection a text's task belongs to: its contextId."""
        return task.get("contextId") or self.site_metadata(task).get("connection_id")

    # -- set-up ---------------------------------------------------------------------------
    # Against the reference every check starts from a reset site. A live site keeps what
    # earlier checks did, so set-up steps first bring the pair to the state they need over
    # the protocol itself: a fresh invitation needs no open connection between the two
    # (remove, or unblock then remove), a friendship reuses an active connection unless
    # the check counts what the conversation holds (``fresh``).

    def live(self) -> bool:
        """A site without control: it keeps what earlier checks did."""
        return not self.ctx.run.control_path

    def connections_between(self, a: str, b: str) -> list[dict[str, Any]]:
        """The connections of ``a`` with ``b`` as either side's inbox lists them, found by
        content: a row is an entry of a list that carries the peer's public id, and its
        connection is what the document calls one: the ``connection_id`` of its
        read_request (a read_conversation command, the schema's names), else its own
        ``connection_id`` or ``contextId`` member. A row that names no connection (a notice
        about an event, say) is none: its own ids (an event's, a message's) are never
        taken for a connection. Returns {connection_id, open, active, blocked}: ``open``
        unless a row of it names a closed state (the profile's words: a live site's set-up
        only; those states are final, so an older notice cannot reopen it), ``active``
        where a row names active and none names blocked."""
        ids = {a: self.agent_id(a), b: self.agent_id(b)}
        words: dict[str, set[str]] = {}
        for who, peer in ((a, b), (b, a)):
            reply = self.command("inbox", {"view": "full"}, who)
            for row in self.rows_with(reply.result if reply.ok else None, ids[peer]):
                connection = self.row_connection(row, set(ids.values()))
                if connection is not None:
                    words.setdefault(connection, set()).update(
                        f.value for f in locate.walk(row, 2) if isinstance(f.value, str))
        return [{"connection_id": connection, "open": not said & CLOSED_WORDS,
                 "active": "active" in said and "blocked" not in said, "blocked": "blocked" in said}
                for connection, said in words.items()]

    @staticmethod
    def rows_with(answer: Any, value: str) -> list[dict[str, Any]]:
        """The list entries of an answer that carry ``value`` somewhere inside."""
        return [item for items in locate.lists_of(answer) for item in items
                if isinstance(item, dict) and locate.holds(item, value)]

    @staticmethod
    def row_connection(row: dict[str, Any], agents: set[str]) -> str | None:
        """The connection an inbox row names (connections_between), or None."""
        request = row.get("read_request")
        named = request.get("connection_id") if isinstance(request, dict) else None
        if not isinstance(named, str):
            named = next((value for name in CONNECTION_MEMBERS
                          if isinstance(value := locate.member(row, name, 2), str)), None)
        return named if isinstance(named, str) and UUID.match(named) and named not in agents else None

    def clear_pair(self, a: str, b: str, rows: list[dict[str, Any]] | None = None) -> None:
        """End every open connection between ``a`` and ``b`` (a live site only): those
        either inbox lists, and those the check itself opened that it has not ended yet."""
        if not self.live():
            return
        found = self.connections_between(a, b) if rows is None else rows
        own = self.keeper.open_between(a, b) if self.keeper is not None else []
        listed = {str(r["connection_id"]) for r in found}
        for row in found + [{"connection_id": k, "open": True} for k in own if k not in listed]:
            connection = str(row["connection_id"])
            if not row.get("open", True):
                continue
            if self.remove(connection, a, b):
                continue
            for who in (a, b):  # a block the remove did not end: its author lifts it first
                self.command("friend_control", {"connection_id": connection, "decision": "unblock"}, who)
            self.remove(connection, a, b)

    def remove(self, connection: str, a: str, b: str) -> bool:
        """friend_control remove by ``a`` or, refused, by ``b``."""
        return any(self.command("friend_control", {"connection_id": connection, "decision": "remove"}, who).ok
                   for who in (a, b))

    def invite(self, frm: str = ALICE, to: str = BOB, text: str = "Hello from the conformance suite.",
               *, clear: bool = True) -> tuple[dict[str, Any], str]:
        """A first text from ``frm`` to ``to``: the invitation's task and the connection id.
        ``clear=False``: the caller has just cleared the pair itself."""
        if clear:
            self.clear_pair(frm, to)
        with self.ctx.setup(f"{frm} invites {to}", by="PLAZA-FRIEND-INVITE"):
            task = self.task_of(self.text(frm, text, to=self.agent_id(to)),
                                f"the first text from {frm} to {to}")
            connection = self.connection_of(task)
            self.ctx.expect(isinstance(connection, str) and connection,
                            f"the invitation's task names no connection (contextId): {task}",
                            kind="malformed_answer")
        return task, str(connection)

    def accept(self, connection: str, who: str = BOB) -> dict[str, Any]:
        with self.ctx.setup(f"{who} accepts the invitation", by="PLAZA-CONSENT-RESPOND"):
            accepted = self.command("respond", {"connection_id": connection, "decision": "accept"}, who)
            return self.data_of(accepted, "respond accept")

    def befriend(self, a: str = ALICE, b: str = BOB, *, fresh: bool = False) -> str:
        """An active connection between ``a`` and ``b`` (a invites, b accepts), or on a live
        site the one this check already made; ``fresh``: always a new one, holding only the
        invitation. A live site's other open connection between the two is ended first (the
        operator's own only where the agents are disposable: keeper.py)."""
        rows = self.connections_between(a, b) if self.live() else []
        own = [r for r in rows if self.keeper is not None and self.keeper.made(str(r["connection_id"]))]
        existing = None if fresh else next((str(r["connection_id"]) for r in own
                                            if r.get("active") and not r.get("blocked")), None)
        if existing:
            return existing
        self.clear_pair(a, b, rows)
        _, connection = self.invite(a, b, clear=False)
        self.accept(connection, b)
        return connection

    # -- durable receive ------------------------------------------------------------------
    def client_key(self, who: str) -> str:
        """``who``'s receiver for the run: generated once (from the run's seed and the agent's
        public id) and reused, as the document tells clients (native.client_key_rule)."""
        return str(uuid.uuid5(RECEIVER_NAMESPACE, f"{self.ctx.run.seed}/{self.agent_id(who)}"))

    def say(self, who: str, connection: str, text: str, **kw: Any) -> dict[str, Any]:
        """A text in an active connection; its task."""
        with self.ctx.setup(f"{who} writes in the connection", by="PLAZA-FRIEND-MESSAGE"):
            return self.task_of(self.text(who, text, context=connection, **kw), f"a text from {who}")

    def read(self, who: str, connection: str, what: str = "read_conversation",
             **fields: Any) -> dict[str, Any]:
        return self.data_of(self.command("read_conversation", {"connection_id": connection, **fields}, who),
                            what, ("messages",))

    def get_task(self, task_id: str, who: str = ALICE, **fields: Any) -> Reply:
        return self.rpc("GetTask", {"id": task_id, **fields}, who)

    def snapshot(self) -> str:
        return str((self.ctx.control("snapshot").json() or {}).get("digest", ""))


def seed(c: PlazaClient, count: int, invite: str) -> list[str]:
    """``count`` new visitors, each inviting ``invite`` (control seed_agents): the
    connection ids the check made (what it may count)."""
    made = (c.ctx.control("seed_agents", count=count, invite=invite).json() or {}).get("agents")
    return [str(a["connection_id"]) for a in made or [] if isinstance(a, dict) and a.get("connection_id")]


__all__ = ["ALICE", "BOB", "CAROL", "CANCELED", "COMPLETED", "ENDED_BY_SITE", "SUBMITTED", "WORKING",
           "PlazaClient", "dig", "fresh_id"]

