"""A live run leaves each configured agent as it found it (conformance/kit/live.py).

Against a site without control nothing resets between checks, and the agents are the
operator's. Each requirement gets a ``Keeper`` (made by its first ``PlazaClient``) that
watches every request the client sends (``before`` / ``after``) and, when the requirement
ends, puts back what it made (``ctx.put_back``), found by content in the answers:

- a connection a first-contact text opened (its task's contextId) is ended: removed by
  either side, a block lifted first by whoever set it. Private channels, negotiations and
  direct offers live in such connections and end with them;
- a group a configured agent created (the id its group_create answer minted) is closed,
  under a grant made for the purpose when the check revoked its own;
- a group authorization a check granted, requested or revoked is put back: revoked when
  there was no live one before, granted again with the same scopes and caps when there was;
- a key bundle a check published is revoked (its key_id is the check's own);
- a continuation document a check declared is declared again as it was read before.

What cannot be undone over the wire is guarded instead (``harmful``): ``stop`` (no command
resumes a stopped agent), ``plan`` (a plan cannot be withdrawn, and its turns bound later
texts), and ending or deciding a connection the run did not open (the operator's own: the
open connections the configured agents had when the run began, ``Baseline``). Those run
only on agents the config marks ``disposable`` (or with control)."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.kit import locate
from conformance.kit.check import CheckContext, Untested
from conformance.protocols.plaza.client import KEEPING
from conformance.transport.binding import Reply, dig

if TYPE_CHECKING:
    from conformance.protocols.plaza.client import PlazaClient

UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
AGENTS = ("alice", "bob", "carol")  # the visitor credentials (profiles/agent-plaza.yaml credentials:)
GRANT_COMMANDS = ("group_authorize", "group_authorization_request", "group_authorization_revoke")
# commands that end or decide a connection for good
# (and a block, which a check would not lift), by decision: never on a connection the run did not open
ENDING = {"friend_control": ("remove", "block"), "respond": ("decline", "close", "complete")}
# the decisions after which a connection is over for good (removed, declined, closed): nothing to put back
ENDED = {"friend_control": ("remove",), "respond": ("decline", "close")}
STOPS = "stopping the agent (no command resumes it; its owner must)"
PLANS = "setting a plan (none is withdrawn over the wire, and its turns bound later texts)"
NEVER_UNDONE = {"stop": STOPS, "plan": PLANS}
# the profile's state words for an authorization that is not live (set-up only, as the inbox's CLOSED_WORDS)
NOT_LIVE = frozenset({"none", "revoked", "expired"})
MISSING: Any = object()


def harmful(ctx: CheckContext, who: str, what: str) -> None:
    """Before something that cannot be undone to ``who``: the requirement's own
    ``ctx.lasting`` where it declares it; else (a check that meets the operator's own
    connection, say, where the reference's world has none) the same rule: without control
    only a disposable or run-made agent."""
    ctx.lasting(who, what, met=not ctx.requirement.lasting)


def stopper(ctx: CheckContext) -> tuple[str, str]:
    """The agent a stop check stops and its peer: alice and bob where control resets the
    site; without control the first configured agent the run may change for good (disposable
    or made by the run) that no earlier check stopped, and a peer not stopped (untested,
    reason harm, when there is none: alice is refused as ``ctx.lasting`` says)."""
    if not ctx.run.live:
        return AGENTS[0], AGENTS[1]
    stopped: set[str] = ctx.run.scratch.setdefault("plaza_stopped", set())
    given = [label for label in AGENTS if label in ctx.run.credentials]
    free = [label for label in given if label not in stopped]
    who = next((label for label in free if ctx.run.identities.may_change(label)), None)
    if who is None:
        ctx.lasting(next(iter(free), AGENTS[0]), STOPS)  # untested: harm
        raise Untested(f"every agent the run may stop for good is stopped already ({sorted(stopped)}): "
                       "a stop check needs one more disposable agent", "harm")
    peer = next((label for label in free if label != who), None)
    if peer is None:
        raise Untested(f"a stop check needs a second agent that is not stopped (stopped: {sorted(stopped)})",
                       "credential")
    ctx.lasting(who, STOPS)
    stopped.add(who)
    return who, peer


def keeper_of(ctx: CheckContext) -> Keeper | None:
    """The requirement's keeper on a live site (None with control: the site resets)."""
    if not ctx.run.live:
        return None
    keeper: Keeper | None = ctx.scratch.get("plaza_keeper")
    if keeper is None:
        keeper = Keeper(ctx)
        ctx.scratch["plaza_keeper"] = keeper
        keeper.baseline()  # the first check of the run reads it before anything changes
        ctx.put_back("what the requirement made on the live site (connections, groups, grants, keys, "
                     "documents)", keeper.put_back)
    return keeper


def command_of(method: str, params: Any) -> dict[str, Any] | None:
    """The data command a SendMessage carries (its first data part), if any."""
    if method != "SendMessage":
        return None
    parts = dig(params, "message", "parts")
    data = parts[0].get("data") if isinstance(parts, list) and parts and isinstance(parts[0], dict) else None
    return data if isinstance(data, dict) and isinstance(data.get("operation"), str) else None


@dataclass
class Baseline:
    """The open connections the configured agents had when the run began (the operator's):
    no check ends or decides one, unless its agents are disposable."""

    connections: set[str] = field(default_factory=set)


class Keeper:
    def __init__(self, ctx: CheckContext) -> None:
        self.ctx = ctx
        self.sweeping = False
        self.connections: dict[str, tuple[str, str | None]] = {}  # made here: id -> (inviter, invitee label)
        self.groups: list[tuple[str, str]] = []  # (creator, group id)
        self.keys: list[tuple[str, str]] = []  # (publisher, key id)
        # agent -> what it held before (MISSING: unreadable): its group_authorization answer, its
        # continuation document
        self.grants: dict[str, Any] = {}
        self.documents: dict[str, Any] = {}
        # pairs a refused first contact may have connected -> the texts it sent (what makes one ours)
        self.unsure: dict[tuple[str, str], list[str]] = {}
        self.ended: set[str] = set()  # connections made here that a served decision ended for good
        self._client: PlazaClient | None = None

    # -- who ---------------------------------------------------------------------------
    def client(self) -> PlazaClient:
        from conformance.protocols.plaza.client import PlazaClient

        if self._client is None:
            self._client = PlazaClient(self.ctx, reset=False)
        return self._client

    def ids(self) -> dict[str, str]:
        """Configured agent label -> public id."""
        out = {}
        for label in AGENTS:
            value = self.ctx.run.credentials.get(label)
            if isinstance(value, dict) and isinstance(value.get("id"), str):
                out[label] = value["id"]
        return out

    def baseline(self) -> Baseline:
        """Read once per run, before the first check changes anything: every open
        connection in the configured agents' inboxes."""
        run = self.ctx.run
        found: Baseline | None = run.scratch.get("plaza_baseline")
        if found is None:
            found = Baseline()
            run.scratch["plaza_baseline"] = found
            self.sweeping = True
            try:
                c = self.client()
                labels = list(self.ids())
                for i, a in enumerate(labels):
                    for b in labels[i + 1:]:
                        with contextlib.suppress(Exception):
                            found.connections |= {r["connection_id"] for r in c.connections_between(a, b)
                                                  if r.get("open")}
            finally:
                self.sweeping = False
        return found

    def made(self, connection: str) -> bool:
        return connection in self.connections

    def open_between(self, a: str, b: str) -> list[str]:
        """The connections this requirement opened between ``a`` and ``b`` and has not ended."""
        return [k for k, (inviter, invitee) in self.connections.items()
                if {inviter, invitee} == {a, b} and k not in self.ended]

    def operators(self, connection: str) -> bool:
        """A connection the configured agents had before the run (not the run's)."""
        return connection in self.baseline().connections and connection not in self.connections

    # -- watching ----------------------------------------------------------------------
    def before(self, method: str, params: Any, who: Any) -> None:
        """Before a request: refuse what cannot be undone, remember what a put-back needs."""
        if self.sweeping or not isinstance(who, str):
            return
        data = command_of(method, params)
        if data is None:
            return
        operation = data["operation"]
        if operation in NEVER_UNDONE:
            harmful(self.ctx, who, NEVER_UNDONE[operation])
        connection = data.get("connection_id")
        if operation in ENDING and data.get("decision") in ENDING[operation] and isinstance(connection, str) \
                and self.operators(connection):
            harmful(self.ctx, who, f"{operation} {data.get('decision')} on a connection the run did not open")
        if operation in GRANT_COMMANDS:
            self.remember_grant(who)
        if operation == "continuation_capabilities" and "document" in data and who not in self.documents:
            self.documents[who] = self.read_document(who)

    def after(self, method: str, params: Any, who: Any, reply: Reply) -> None:
        """After a request: note what it made. A first contact refused (or cut short: a
        blocking one past the deadline still stores its text) may have opened a connection
        whose id the answer does not give: the pair's inbox is looked through at the end."""
        if self.sweeping or not isinstance(who, str):
            return
        if not reply.ok:
            first_contact = method == "SendMessage" and command_of(method, params) is None
            peer = self.recipient_label(params) if first_contact else None
            parts = dig(params, "message", "parts")
            text = dig(parts[0], "text") if isinstance(parts, list) and parts else None
            if peer is not None and isinstance(text, str) and text:
                self.unsure.setdefault((who, peer), []).append(text)
            return
        with contextlib.suppress(Exception):  # noting never ends a check
            self.note(method, params, who, reply)

    def recipient_label(self, params: Any) -> str | None:
        """The configured agent a first contact names (its recipientId metadata)."""
        metadata = dig(params, "message", "metadata")
        if not isinstance(metadata, dict):
            return None
        recipient = next((v["recipientId"] for v in metadata.values()
                          if isinstance(v, dict) and "recipientId" in v), None)
        return next((label for label, vid in self.ids().items() if vid == recipient), None)

    def after_raw(self, body: Any, who: Any, reply: Reply) -> None:
        """The same, for a request a check sent as raw JSON."""
        try:
            request = json.loads(body) if isinstance(body, str | bytes) else body
        except ValueError:
            return
        if isinstance(request, dict):
            self.after(str(request.get("method")), request.get("params"), who, reply)

    def note(self, method: str, params: Any, who: str, reply: Reply) -> None:
        data = command_of(method, params)
        if method == "SendMessage" and data is None:
            recipient = dig(params, "message", "metadata")
            if isinstance(recipient, dict) and any(isinstance(v, dict) and "recipientId" in v
                                                   for v in recipient.values()):
                self.note_connection(who, recipient, reply)
            return
        if data is None:
            return
        operation = data["operation"]
        connection = data.get("connection_id")
        if data.get("decision") in ENDED.get(operation, ()) and isinstance(connection, str):
            self.ended.add(connection)
        if operation == "group_create":
            gid = self.minted_group(data, reply)
            if gid:
                self.groups.append((who, gid))
                self.remember_grant(who)
        elif operation == "private_key_publish" and isinstance(dig(data, "bundle", "key_id"), str):
            self.keys.append((who, data["bundle"]["key_id"]))

    def note_connection(self, who: str, metadata: dict[str, Any], reply: Reply) -> None:
        """A first contact answered: its connection is the task's contextId."""
        result = reply.result
        task = result.get("task", result) if isinstance(result, dict) else None
        connection = task.get("contextId") if isinstance(task, dict) else None
        if not isinstance(connection, str):
            found = locate.member(result, "contextId")
            connection = found if isinstance(found, str) else None
        if connection is None:
            return
        recipient = next((v["recipientId"] for v in metadata.values()
                          if isinstance(v, dict) and "recipientId" in v), None)
        peer = next((label for label, vid in self.ids().items() if vid == recipient), None)
        self.connections.setdefault(connection, (who, peer))

    def minted_group(self, data: dict[str, Any], reply: Reply) -> str | None:
        """The new group's id (conformance/protocols/plaza/groups.py group_id_of): a UUID the
        answer carries that the request did not, preferably beside the group's name."""
        from conformance.protocols.plaza.parts import minted, sent_strings

        sent = sent_strings(reply)
        fresh = minted(self.ctx, reply.result, sent)
        name = data.get("name")
        beside = locate.value_beside(reply.result, name, lambda v: v in fresh) \
            if isinstance(name, str) else None
        return beside if isinstance(beside, str) else (fresh[0] if fresh else None)

    # -- reading what was -----------------------------------------------------------------
    def quiet(self, operation: str, fields: dict[str, Any], who: str) -> Reply | None:
        """A command sent by the keeper itself (not watched); None when it could not be sent."""
        was, self.sweeping = self.sweeping, True
        try:
            return self.client().command(operation, fields, who)
        except Untested:
            return None
        finally:
            self.sweeping = was

    def remember_grant(self, who: str) -> None:
        if who in self.grants:
            return
        reply = self.quiet("group_authorization", {}, who)
        self.grants[who] = reply.result if reply is not None and reply.ok else MISSING

    def read_document(self, who: str) -> Any:
        """The continuation document ``who`` declared: the object of the answer carrying every
        flag of the command's document schema (the document's names)."""
        reply = self.quiet("continuation_capabilities", {}, who)
        if reply is None or not reply.ok:
            return MISSING
        flags = set(self.document_flags())
        found = [f.value for f in locate.walk(reply.result)
                 if isinstance(f.value, dict) and flags and flags <= set(f.value)]
        return {k: found[0][k] for k in flags} if found else MISSING

    def document_flags(self) -> list[str]:
        branch = self.branch("continuation_capabilities")
        return list(dig(branch, "properties", "document", "properties") or {})

    def branch(self, operation: str) -> dict[str, Any]:
        for branch in self.ctx.profile.spec["schemas"]["command"]["anyOf"]:
            if dig(branch, "properties", "operation", "const") == operation:
                return dict(branch)
        return {}

    # -- putting back ---------------------------------------------------------------------
    def put_back(self) -> str | None:
        """Undo what the requirement made, last made first; what could not be undone, with why."""
        self.sweeping = True
        problems: list[str] = []
        try:
            self.close_groups(problems)
            self.restore_grants(problems)
            for who, key_id in reversed(self.keys):
                self.expect(problems, f"{who}'s key {key_id} revoked",
                            self.send("private_key_revoke", {"key_id": key_id}, who))
            self.restore_documents(problems)
            for (a, b), texts in sorted(self.unsure.items()):
                with contextlib.suppress(Exception):
                    self.adopt_unsure(a, b, texts)
            for connection, (inviter, invitee) in reversed(list(self.connections.items())):
                if connection in self.ended:
                    continue
                if not self.end_connection(connection, inviter, invitee):
                    problems.append(f"connection {connection} of {inviter} with {invitee or 'a visitor'} "
                                    "not ended")
        finally:
            self.sweeping = False
        return "; ".join(problems) or None

    def adopt_unsure(self, a: str, b: str, texts: list[str]) -> None:
        """A refused (or cut) first contact of ``a`` to ``b`` whose connection the answer did
        not name: an open connection of the pair that was not there before the run is the
        requirement's own only when ``a`` reads one of the texts it sent in it (nothing
        another made, and no notice, is taken for the run's)."""
        for row in self.client().connections_between(a, b):
            connection = str(row["connection_id"])
            known = connection in self.baseline().connections or connection in self.connections
            if not row.get("open") or known:
                continue
            reply = self.send("read_conversation", {"connection_id": connection}, a)
            if reply is not None and reply.ok and any(locate.with_marker(reply.result, t) for t in texts):
                self.connections[connection] = (a, b)

    def send(self, operation: str, fields: dict[str, Any], who: str) -> Reply | None:
        """A command of the put-back (a fresh request_key where its branch takes one)."""
        from conformance.protocols.plaza.client import fresh_id

        if "request_key" in (dig(self.branch(operation), "properties") or {}) and "request_key" not in fields:
            fields = {**fields, "request_key": fresh_id()}
        try:
            return self.client().command(operation, fields, who)
        except Untested:
            return None

    @staticmethod
    def expect(problems: list[str], what: str, reply: Reply | None) -> bool:
        if reply is None or not reply.ok:
            problems.append(f"{what}: {reply.describe() if reply is not None else 'no credential'}")
            return False
        return True

    def grant_fields(self) -> dict[str, Any]:
        """A grant that lets the owner close its groups (the branch's scopes all true)."""
        props = dig(self.branch("group_authorize"), "properties") or {}
        return {"owner_authorized": True, **{name: True for name in props if name.startswith("allow_")}}

    def close_groups(self, problems: list[str]) -> None:
        for who, gid in reversed(self.groups):
            reply = self.send("group_close", {"group_id": gid}, who)
            if reply is not None and not reply.ok:  # the check revoked the grant: one for the purpose
                self.send("group_authorize", self.grant_fields(), who)
                reply = self.send("group_close", {"group_id": gid}, who)
            self.expect(problems, f"{who}'s group {gid} closed", reply)

    def restore_grants(self, problems: list[str]) -> None:
        """No live grant before: revoke; a live one: grant the same scopes and caps again."""
        for who, before in self.grants.items():
            now = self.send("group_authorization", {}, who)
            if before is MISSING or (now is not None and now.ok and now.result == before):
                continue  # unreadable before, or unchanged
            old = self.live_grant(before)
            if old is None:
                self.expect(problems, f"{who}'s group authorization revoked",
                            self.send("group_authorization_revoke", {}, who))
            else:
                self.expect(problems, f"{who}'s group authorization granted again",
                            self.send("group_authorize", old, who))

    def live_grant(self, answer: Any) -> dict[str, Any] | None:
        """The grant an authorization answer shows, as group_authorize fields, or None when
        it shows none live: the object carrying the branch's allow_* members (the document's
        names), unless its state is one of the profile's words for no live grant."""
        props = dig(self.branch("group_authorize"), "properties") or {}
        scopes = [name for name in props if name.startswith("allow_")]
        holder = next((f.value for f in locate.walk(answer) if isinstance(f.value, dict) and scopes
                       and all(s in f.value for s in scopes)), None)
        if holder is None or holder.get("live") is False or holder.get("state") in NOT_LIVE:
            return None
        request_only = ("operation", "request_key", "expected_version", "request_id")
        fields = {name: holder[name] for name in props if name in holder and name not in request_only}
        if fields.get("lifetime") == "until_revoked":
            fields["confirm_until_revoked"] = True
        return {"owner_authorized": True, **fields}

    def restore_documents(self, problems: list[str]) -> None:
        for who, document in self.documents.items():
            if document is not MISSING and self.read_document(who) == document:
                continue  # unchanged (a declaration the target refused, or the same again)
            if document is MISSING:
                problems.append(f"{who}'s continuation document: not read before it was declared, "
                                "so not put back")
                continue
            self.expect(problems, f"{who}'s continuation document declared again",
                        self.send("continuation_capabilities", {"document": document}, who))

    def end_connection(self, connection: str, inviter: str, invitee: str | None) -> bool:
        """Removed by either side; a block lifted first by whoever set it."""
        sides = [inviter] + ([invitee] if invitee else [])

        def removed_by(who: str) -> bool:
            reply = self.send("friend_control", {"connection_id": connection, "decision": "remove"}, who)
            return reply is not None and reply.ok

        def remove() -> bool:
            return any(removed_by(who) for who in sides)
        if remove():
            return True
        for who in sides:
            self.send("friend_control", {"connection_id": connection, "decision": "unblock"}, who)
        return remove()



KEEPING.append(keeper_of)  # every PlazaClient reports its calls to the check's keeper


__all__ = ["PLANS", "STOPS", "Keeper", "harmful", "keeper_of", "stopper"]
