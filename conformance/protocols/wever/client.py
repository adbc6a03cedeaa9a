"""A Wever Connect caller for checks: actions as one of the run's mailboxes (alice,
bob, carol), the set-up steps the flow needs (a recipient advertising a capability,
a sender grant, a task in a given state), the A2A adapter and the control interface."""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.checks.expect import expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext, Untested
from conformance.kit.locate import Search
from conformance.protocols.a2a import wire
from conformance.protocols.a2a.names import VERSION_HEADER
from conformance.protocols.wever import uncontrolled
from conformance.protocols.wever.answers import Vocabulary, ids, marked, owners, state_in, vocabulary
from conformance.transport.binding import FRESH, RawToken, Reply, dig
from conformance.transport.http import HttpReply, json_excerpt

# The parts a check's mailboxes play. With control they are the configured alice, bob and
# carol (the relay is reset before each check); without control, mailboxes chosen per check
# (uncontrolled.py: the run's own first, by the room they have left on the quotas a part spends).
SENDER, RECIPIENT, STRANGER = "sender", "recipient", "stranger"
CONFIGURED = {SENDER: "alice", RECIPIENT: "bob", STRANGER: "carol"}
PARTS = (SENDER, RECIPIENT, STRANGER)
MAIN = CONFIGURED[SENDER]  # the credential a run must be given (the binding's bearer)
# the flow's ends (each a key of protocols.a2a.state_mapping)
TERMINAL = ("completed", "declined", "cancelled")
# the member of task data (and results) that carries a check's marker
MARKER_FIELD = "conformance_marker"
# a2a_call's default A2A-Version: protocols.a2a.required_headers
VERSION = "the manifest's"

__all__ = ["CONFIGURED", "MAIN", "RECIPIENT", "SENDER", "STRANGER", "TERMINAL", "Task", "Watch",
           "WeverClient", "dig", "fresh_key", "fresh_marker"]


def fresh_key() -> str:
    return uuid.uuid4().hex


def fresh_marker() -> str:
    """A unique text a check puts in what it sends, to find its own objects again (short
    and spaced, so it never looks like an id or a digest)."""
    return f"conformance marker {uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Task:
    """A task as a check knows it: the id the relay answered, the Connect state the last
    answer showed (None when it showed none), the marker its data carries, the data and
    the result the check gave it, and the answer it was last read from."""

    id: str
    state: str | None = None
    marker: str = ""
    data: Any = None
    result: Any = None
    answer: Any = field(default=None, compare=False, repr=False)


@dataclass
class Watch:
    """The task ids one inbox named before a step: afterwards, the tasks that carry a
    check's marker are the check's own (the inbox of a shared mailbox holds others')."""

    c: WeverClient
    who: str
    before: set[str]

    def carrying(self, marker: str) -> set[str]:
        """The tasks of the inbox whose content carries ``marker``: in the listing itself,
        or (for tasks new since the watch began, where the listing shows no content) as
        get_task shows them."""
        pattern = self.c.vocab.task_id
        answer = self.c.inbox(self.who)
        found = owners(answer, marker, pattern)
        if marked(answer, marker) and not found:
            found.add(f"(a task the inbox lists without an id of pattern {pattern.pattern})")
        for task_id in ids(answer, pattern):
            if task_id not in self.before and task_id not in found:
                reply = self.c.get(task_id, self.who)
                if reply.ok and marked(reply.result, marker):
                    found.add(task_id)
        return found

    def nothing_delivered(self, marker: str, what: str, kind: str = "state_changed") -> None:
        got = self.carrying(marker)
        self.c.ctx.expect(not got,
                          f"{what}: the inbox of {self.who} shows the task it carried ({sorted(got)})",
                          kind=kind)


def rpc_error(reply: HttpReply) -> Any:
    """The JSON-RPC error member of an answer, or None (protocols/a2a/wire.py reads it)."""
    return wire.error_in(reply.json())


def refused_rpc(ctx: CheckContext, reply: HttpReply, what: str) -> None:
    """A JSON-RPC error or an HTTP refusal: what the manifest's "rejected" asks for."""
    ctx.expect(rpc_error(reply) is not None or reply.status >= 400,
               f"{what}: served: HTTP {reply.status} {reply.text[:200]}",
               kind="accepted_invalid")


def served_rpc(ctx: CheckContext, reply: HttpReply, what: str) -> Any:
    body = reply.json()
    ctx.expect(reply.status == 200 and isinstance(body, dict) and "result" in body and "error" not in body,
               f"{what}: expected a JSON-RPC result, got HTTP {reply.status} {reply.text[:300]}",
               kind="rejected_valid")
    return dig(body, "result")


class WeverClient:
    def __init__(self, ctx: CheckContext, reset: bool = True, victim: str | None = None,
                 own: bool = False) -> None:
        """``victim``: the part whose mailbox the check closes or uses up (without control,
        one of the run's own, or a configured one marked disposable); ``own``: every part a
        mailbox of the run's own where it has enough (the check publishes their profiles)."""
        self.ctx = ctx
        self.binding = ctx.binding
        self.spec = ctx.profile.spec
        self.a2a = self.spec["protocols"]["a2a"]
        self.victim_part, self.own = victim, own
        if reset and ctx.run.control_path:
            ctx.control("reset")  # each check starts from the seeded relay: quotas and clocks are shared

    # -- who --------------------------------------------------------------------------
    @property
    def live(self) -> bool:
        return self.ctx.run.live

    @property
    def books(self) -> uncontrolled.Books:
        return uncontrolled.books_of(self.ctx)

    @property
    def cast(self) -> dict[str, str]:
        """Which mailbox plays each part in this check (the same for every client of it)."""
        if not self.live:
            return CONFIGURED
        books = self.books
        if books.cast is None:
            doomed = self.victim() if self.victim_part == RECIPIENT else None
            books.cast = uncontrolled.choose_cast(self, PARTS, recipient=doomed, own_only=self.own)
        return books.cast

    def victim(self) -> str | None:
        """The label of a mailbox this check may close or use up (uncontrolled.victim), chosen once."""
        books = self.books
        if books.victim is None:
            books.victim = uncontrolled.victim(self)
        return books.victim

    def label(self, who: Any) -> Any:
        """The credential label playing the part ``who`` (a label or a token as it is)."""
        return self.cast.get(who, who) if isinstance(who, str) and who in PARTS else who

    def mailbox(self, who: str) -> str:
        """A mailbox id of the run (credentials.<label>.id) of a part or a label."""
        label = self.label(who)
        cred = self.ctx.credential(label)
        if not isinstance(cred, dict) or not cred.get("id"):
            raise Untested(f"credentials.{label} needs the mailbox id and token: {{id: mbx_..., token: ...}}",
                           "credential")
        return str(cred["id"])

    def token(self, who: str) -> str:
        return str(self.ctx.token(self.label(who)))

    # -- actions -------------------------------------------------------------------------
    def call(self, action: str, params: Any, who: str | RawToken | None = SENDER, key: str | None = None,
             **kw: Any) -> Reply:
        """``action`` as mailbox ``who`` (a part, a label, a token; None: no bearer); ``key``
        the Idempotency-Key (send_task gets a fresh one unless given; other actions send none)."""
        if key is None and action == "send_task":
            key = FRESH
        return self.via(self.binding, action, params, self.label(who), key, **kw)

    def via(self, binding: Any, action: str, params: Any, caller: Any, key: Any, **kw: Any) -> Reply:
        """One call over ``binding``; without control through the check's books (uncontrolled.py)."""
        if not self.live:
            reply: Reply = binding.call(action, params, caller=caller, idempotency_key=key, **kw)
            return reply
        return self.books.call(self, binding, action, params, caller, key, **kw)

    def open_call(self, action: str, params: Any) -> Reply:
        """An action without requires_bearer, with no token: over HTTP, whatever the run
        speaks (register_mailbox is no MCP tool, and MCP wants its bearer on every call)."""
        binding = self.binding if self.binding.kind == "http-action" else self.ctx.binding_named("http")
        return self.via(binding, action, params, None, None)

    def new_pair(self, sender: Any = SENDER, recipient: str = RECIPIENT) -> bool:
        """Whether a connection request of ``sender`` to ``recipient`` now is certainly a new
        one: with control (the relay was reset), or when one of them is a mailbox this run
        registered and the run made no request of that pair yet. Otherwise the relay may
        return a request the pair made earlier (retained, perhaps decided, for 24 hours)."""
        if not self.live:
            return True
        who, to = self.books.who(self.label(sender)), self.label(recipient)
        created = self.ctx.run.identities.created
        if who is None or (who not in created and to not in created):
            return False
        return (self.mailbox(who), self.mailbox(to)) not in uncontrolled.pool_of(self.ctx.run).pairs

    def ungranted(self, sender: str = SENDER, recipient: str = RECIPIENT) -> None:
        """Without control: ``recipient`` does not allow ``sender`` (a grant it held is
        revoked, and put back)."""
        if self.live:
            with self.ctx.setup(f"allow_sender allowed=false as {recipient}", by="WEVER-MAILBOX-SENDERS"):
                expect_result(self.ctx, self.grant(sender, recipient, allowed=False),
                              "allow_sender allowed=false")

    def caller_for(self, action: str) -> str | None:
        """Who calls ``action`` in checks about inputs: a mailbox where the action wants a
        bearer, or wherever the binding wants one on every call (MCP); no one otherwise.
        Without control, a mailbox of the run's own where the action changes its caller:
        the recipient's for a profile or a renewal, one that may be closed for closing."""
        needs = bool(self.spec["actions"][action].get("requires_bearer")) or self.binding.kind == "mcp-tools"
        if not needs:
            return None
        if self.live and action == "close_mailbox":
            return self.victim() or SENDER
        if self.live and action in ("update_mailbox", "renew_mailbox"):
            return RECIPIENT
        return SENDER

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

    def task_body(self, recipient: str = RECIPIENT, data: Any = None,
                  capability: str | None = None) -> dict[str, Any]:
        """send_task input shaped as the manifest's example: recipient, capability, task data."""
        return {"recipient_id": self.mailbox(recipient), "capability": capability or self.capability,
                "task": data if data is not None else self.example_data()["task"]}

    # -- content the check controls ------------------------------------------------------------
    @property
    def vocab(self) -> Vocabulary:
        return vocabulary(self.ctx.profile)

    def marked(self, data: Any = None) -> tuple[dict[str, Any], str]:
        """Task data (the manifest example's, or ``data``) carrying a fresh marker, and the
        marker: what the check finds its own tasks by, whatever the relay's shapes."""
        marker = fresh_marker()
        base = self.example_data()["task"] if data is None else data
        return {**(base if isinstance(base, dict) else {"data": base}), MARKER_FIELD: marker}, marker

    # -- set-up ------------------------------------------------------------------------------
    def advertise(self, who: str = RECIPIENT, capabilities: list[str] | None = None, **fields: Any) -> Any:
        """Make ``who`` advertise the example capability (update_mailbox); its answer."""
        body = {"label": f"conformance {who}", "capabilities": capabilities or [self.capability],
                "discoverable": False, **fields}
        with self.ctx.setup(f"update_mailbox as {who}", by="WEVER-INPUT-VALID-UPDATE-MAILBOX"):
            return expect_result(self.ctx, self.call("update_mailbox", body, who), "update_mailbox")

    def grant(self, sender: str = SENDER, recipient: str = RECIPIENT, allowed: bool = True) -> Reply:
        return self.call("allow_sender", {"sender_id": self.mailbox(sender), "allowed": allowed}, recipient)

    def allow(self, sender: str = SENDER, recipient: str = RECIPIENT) -> None:
        """``recipient`` advertises the capability and grants ``sender``."""
        self.advertise(recipient)
        with self.ctx.setup(f"allow_sender as {recipient}", by="WEVER-SEND-OFFERED"):
            expect_result(self.ctx, self.grant(sender, recipient), "allow_sender")

    def send(self, sender: str = SENDER, recipient: str = RECIPIENT, data: Any = None, key: str | None = None,
             capability: str | None = None) -> Reply:
        """send_task; without ``data``, the example's task with a fresh marker."""
        if data is None:
            data, _ = self.marked()
        return self.call("send_task", self.task_body(recipient, data, capability), sender,
                         key=key or fresh_key())

    def new_task(self, state: str = "offered", sender: str = SENDER, recipient: str = RECIPIENT) -> Task:
        """A task from ``sender`` to ``recipient`` brought to ``state`` through the flow
        (its data, and a completed task's result, carry the task's marker)."""
        steps = {"offered": [], "accepted": [("accept_task", recipient)],
                 "completed": [("accept_task", recipient), ("complete_task", recipient)],
                 "declined": [("decline_task", recipient)],
                 "cancelled": [("cancel_task", sender)]}[self.vocab.state(state)]
        self.allow(sender, recipient)
        data, marker = self.marked()
        with self.ctx.setup(f"send a task and bring it to {state}", by="WEVER-SEND-OFFERED"):
            task = replace(self.task_of(self.send(sender, recipient, data=data), "send_task"), marker=marker,
                           data=data)
            for action, who in steps:
                params: dict[str, Any] = {"task_id": task.id}
                if action == "complete_task":
                    params["result"] = {"answer": "conformance result", MARKER_FIELD: marker}
                seen = self.task_of(self.call(action, params, who), action, known=task.id)
                task = replace(task, state=seen.state, result=params.get("result", task.result))
        return task

    def task_of(self, reply: Reply, what: str, known: str | None = None) -> Task:
        """The task an answer is about: the id the check knows (which the answer must
        hold), or else the first string of the manifest's task id pattern; and the state
        it shows (a Connect state wherever it sits, None when it shows none)."""
        result = expect_result(self.ctx, reply, what)
        if known is not None:
            self.ctx.expect(locate.holds(result, known), f"{what}: the answer does not name the task "
                            f"{known}: {json_excerpt(result)}", kind="malformed_answer")
            task_id = known
        else:
            found = ids(result, self.vocab.task_id)
            if not found:
                looked = Search(f"a task id (pattern {self.vocab.task_id.pattern})").looked_for(result)
                self.ctx.fail(f"{what}: " + looked, kind="malformed_answer")
            task_id = found[0]
        return Task(task_id, state_in(result, self.vocab.states), answer=result)

    def state_shown(self, task: Task, what: str) -> str:
        """The Connect state an answer about ``task`` shows (a finding when it shows none)."""
        if task.state is None:
            states = ", ".join(self.vocab.states)
            looked = Search(f"the task's state (one of {states})").looked_for(task.answer)
            self.ctx.fail(f"{what}: " + looked, kind="malformed_answer")
        return str(task.state)

    def state_after(self, task: Task, what: str, who: str = SENDER) -> str:
        """The state ``task``'s answer shows, or (where it shows none) the state get_task
        shows ``who``: a relay may answer a transition with less than the whole task."""
        return task.state if task.state is not None else self.state_of(task.id, who)

    def state_of(self, task_id: str, who: str = SENDER) -> str:
        """The task's state as get_task shows it to ``who``."""
        seen = self.task_of(self.get(task_id, who), f"get_task as {who}", known=task_id)
        return self.state_shown(seen, f"get_task as {who}")

    def get(self, task_id: str, who: str = SENDER) -> Reply:
        return self.call("get_task", {"task_id": task_id}, who)

    def inbox(self, who: str = RECIPIENT) -> Any:
        return expect_result(self.ctx, self.call("inbox", {}, who), f"inbox of {who}")

    def inbox_ids(self, who: str = RECIPIENT) -> list[str]:
        """Every task id the inbox of ``who`` names (judge only those the check made)."""
        return ids(self.inbox(who), self.vocab.task_id)

    def watch(self, who: str = RECIPIENT) -> Watch:
        """The inbox of ``who`` now, to tell later which tasks carry a check's marker."""
        return Watch(self, who, set(self.inbox_ids(who)))

    def mailbox_ids(self, answer: Any) -> list[str]:
        return ids(answer, self.vocab.mailbox_id)

    def request_of(self, reply: Reply, what: str, known: str | None = None) -> str:
        """The connection request an answer is about: the id the check knows (which the
        answer must hold), else the first string of the manifest's request id pattern."""
        result = expect_result(self.ctx, reply, what)
        if known is not None:
            self.ctx.expect(locate.holds(result, known), f"{what}: the answer does not name the request "
                            f"{known}: {json_excerpt(result)}", kind="malformed_answer")
            return known
        found = ids(result, self.vocab.request_id)
        if not found:
            self.ctx.fail(f"{what}: " + Search("a connection request id (pattern "
                                               f"{self.vocab.request_id.pattern})").looked_for(result),
                          kind="malformed_answer")
        return found[0]

    def snapshot(self) -> str:
        answer = self.ctx.control("snapshot").json()
        return str(answer.get("digest", "")) if isinstance(answer, dict) else str(answer)

    def advance(self, seconds: float) -> None:
        self.ctx.control("advance_clock", seconds=seconds)

    # -- the A2A adapter --------------------------------------------------------------------
    def a2a_headers(self, who: str | None = SENDER, version: str | None = VERSION) -> dict[str, str]:
        """protocols.a2a.required_headers: the version (VERSION: the manifest's) and the token."""
        headers = {"Content-Type": "application/json"}
        if version == VERSION:
            version = str(self.a2a["required_headers"][VERSION_HEADER])
        if version is not None:
            headers[VERSION_HEADER] = version
        if who is not None:
            headers["Authorization"] = f"Bearer {self.token(who)}"
        return headers

    def a2a_message(self, message_id: str | None = None, data: Any = None,
                    recipient: str = RECIPIENT) -> dict[str, Any]:
        """SendMessage params from the manifest's send_message_example, recipient and
        messageId filled in."""
        params = copy.deepcopy(self.a2a["send_message_example"]["params"])
        part = params["message"]["parts"][0]
        part["data"]["recipient_id"] = self.mailbox(recipient)
        if data is not None:
            part["data"]["task"] = data
        params["message"]["messageId"] = message_id or f"conformance-{uuid.uuid4().hex}"
        return params

    def a2a_call(self, method: str, params: Any, who: str | None = SENDER, version: str | None = VERSION,
                 raw: str | bytes | None = None, headers: dict[str, str] | None = None) -> HttpReply:
        body = raw if raw is not None else json.dumps(wire.request(method, params))

        def send() -> HttpReply:
            return self.ctx.http.request("POST", self.a2a["endpoint"],
                                         headers={**self.a2a_headers(who, version), **(headers or {})},
                                         content=body)
        if self.live and raw is None and self.a2a["methods"].get(method) == "send_task":
            reply: HttpReply = self.books.a2a_send(self, self.label(who), params, send)
            return reply
        return send()

    @staticmethod
    def a2a_key(message_id: str) -> str:
        """The Connect request key of an A2A messageId (protocols.a2a.retry)."""
        return "a2a-" + hashlib.sha256(message_id.encode()).hexdigest()


def a2a_sent_id(ctx: CheckContext, reply: Any, what: str) -> str:
    """The id of the A2A Task a SendMessage answered (result.task.id: the manifest's and A2A's names)."""
    task_id = dig(served_rpc(ctx, reply, what), "task", "id")
    if not isinstance(task_id, str):
        looked = Search("result.task.id (protocols.a2a.send_message.result_shape)").looked_for(reply.json())
        ctx.fail(f"{what}: " + looked, kind="malformed_answer")
    return str(task_id)


def open_requests(c: WeverClient, sender: str | RawToken = SENDER) -> str:
    """The recipient opts into connection requests; ``sender`` asks; the request's id.
    Without control the pair may hold a request an earlier run made (retained, maybe
    decided, for 24 hours): the request must be pending, as the recipient's list shows."""
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    new = c.new_pair(sender, RECIPIENT)
    with c.ctx.setup("request_connection to an opted-in mailbox", by="WEVER-CONN-LIST"):
        request_id = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)},
                                         sender), "request_connection")
    if not new:
        still_pending(c, request_id)
    return request_id


def still_pending(c: WeverClient, request_id: str, recipient: str = RECIPIENT) -> None:
    """Without control, a request of a pair that may have asked before (``new_pair``) must
    be pending to be the check's own: the relay returns the pair's retained request
    (perhaps decided: an earlier run's, denied when it ended) for connection_request_hours.
    One the recipient's pending requests do not name is not the check's to answer, and no
    fault of the relay: the row is untested (a second run of the day, from the same
    mailboxes, meets the first run's requests), never blocked or failed."""
    if not c.live:
        return
    with c.ctx.setup("the recipient's pending requests (list_connection_requests)"):
        listed = expect_result(c.ctx, c.call("list_connection_requests", {}, recipient),
                               "list_connection_requests")
    if not locate.holds(listed, request_id):
        hours = c.ctx.profile.limits["connection_request_hours"].value
        raise Untested(f"request_connection answered {request_id}, which the recipient's pending requests "
                       "do not name: the pair holds a retained request an earlier run made, no longer "
                       f"pending (a request lives {hours} hours); no pair with a mailbox of the run's own "
                       "was left to ask", "other")


def seed(c: WeverClient, count: int, **fields: Any) -> list[tuple[str, RawToken]]:
    """``count`` extra mailboxes (control seed_mailboxes): (id, caller)."""
    made = c.ctx.control("seed_mailboxes", count=count, **fields).json()
    boxes = made.get("mailboxes") if isinstance(made, dict) else None
    seeded = [(str(m["id"]),
               RawToken(str(m["token"]))) for m in boxes or [] if isinstance(m, dict) and m.get("id")
              and m.get("token")]
    if len(seeded) != count:
        raise Untested(f"control seed_mailboxes answered {str(made)[:200]}, expected {count} mailboxes {{id, "
                       "token}")
    return seeded
