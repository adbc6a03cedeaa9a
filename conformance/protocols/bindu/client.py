"""A Bindu caller for checks: requests built from the spec's own examples, with
fresh ids, sent as one of the run's credentials."""

from __future__ import annotations

import copy
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from conformance.documents.schemas import resolve_pointer
from conformance.kit.check import CheckContext
from conformance.kit.locate import walk
from conformance.protocols.bindu.answers import expect_task, state_of
from conformance.protocols.bindu.states import agent_moves
from conformance.transport.binding import DEFAULT, Reply, dig
from conformance.transport.http import HttpReply, RunAborted, TransportFailure, json_excerpt

EXAMPLES = "/paths/~1/post/requestBody/content/application~1json/examples"


UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def fresh_id() -> str:
    return str(uuid.uuid4())


@dataclass
class Made:
    """A context a message of the check made: the caller that sent it, whether the kit
    generated its id, and the tasks the check's messages made in it."""

    caller: Any
    named: bool
    tasks: set[str] = field(default_factory=set)


class BinduClient:
    def __init__(self, ctx: CheckContext) -> None:
        self.ctx = ctx
        self.examples = resolve_pointer(ctx.profile.spec, EXAMPLES)
        self._card: dict[str, Any] | None = None
        self.sent_contexts: dict[str, str] = {}  # task id -> the contextId the kit sent when it made the task
        self.made: dict[str, Made] = {}  # context id -> who made it and how, until cleared
        self.generated: set[str] = set()  # the contextIds this client generated (send_params)
        self._registered = False  # whether clear_made runs when the requirement ends

    # -- transport ----------------------------------------------------------------
    def auth(self, caller: Any = "full") -> dict[str, str]:
        """The Authorization header of a caller, as the binding sends it."""
        return dict(self.ctx.binding.auth(DEFAULT if caller == "full" else caller))

    def call(self, method: str, params: Any, caller: Any = "full", **kw: Any) -> Reply:
        """``caller``: a credential label, None (no token) or a RawToken; the main
        caller ("full") is optional, as the binding's own bearer."""
        reply = self.ctx.binding.call(method, params, caller=DEFAULT if caller == "full" else caller, **kw)
        self._remember_contexts(method, params, reply, caller)
        return reply

    # -- putting back what the run made ----------------------------------------------
    def _remember_contexts(self, method: str, params: Any, reply: Reply, caller: Any) -> None:
        """Each context a message/send or message/stream of this check made is cleared when
        the requirement ends (contexts/clear purges its finished tasks): a target keeps what
        it is sent, and tasks/list answers every task the caller has, so a campaign that left
        its tasks behind would read a list that grows with every round (past the size bound
        of an answer, in the end). A contexts/clear the check sends itself that succeeds
        takes it off. The tasks each message made are noted with their context, so that a
        context the kit did not name itself is cleared only while it holds no other task
        (``clear_made``)."""
        if method == "contexts/clear" and isinstance(params, dict):
            if reply.ok:  # (a refused one, a context still in use, stays to clear at the end)
                self.made.pop(str(params.get("contextId")), None)
            return
        # a stream's first event names its task's context as a send's result does (a Task
        # snapshot, or a status-update delta: both carry context_id)
        started = method in ("message/send", "message/stream") and reply.ok
        context = dig(reply.result, "context_id") if started else None
        if not isinstance(context, str):
            return
        task = dig(reply.result, "id") if method == "message/send" else (
            dig(reply.result, "task_id") or dig(reply.result, "id"))
        sent = dig(params, "message", "contextId")
        if context in self.made:
            self.made[context].tasks.add(str(task))
            return
        if sent not in (None, context):
            return  # not a context this message made (the agent put it in another one)
        if not self._registered:
            self._registered = True
            self.ctx.put_back("the contexts this requirement's messages made", self.clear_made)
        self.made[context] = Made(caller, named=sent in self.generated, tasks={str(task)})

    def clear_made(self) -> bool:
        """Clear the contexts this client's messages made, each as the caller that made it.
        A context whose id the kit generated is its own; one the target chose (a message sent
        without a contextId) is cleared only when contexts/list shows it holding none but the
        tasks the kit made: a target that put the message into a context the caller already
        had (the operator's) must not have that context purged by the kit. Best effort, never
        a finding: a context still in use may be refused (-32021)."""
        while self.made:
            context, made = self.made.popitem()
            try:
                if made.named or self.only_ours(context, made):
                    self.call("contexts/clear", {"contextId": context}, made.caller)
            except (TransportFailure, RunAborted):
                return True  # the target or the run stopped: nothing more to put back now
        return True

    def only_ours(self, context: str, made: Made) -> bool:
        """Whether the caller's contexts/list shows ``context`` holding no task id (a uuid,
        found by content) but those the kit's messages made."""
        reply = self.ctx.binding.call("contexts/list", {},
                                      caller=DEFAULT if made.caller == "full" else made.caller)
        entries = reply.result if reply.ok and isinstance(reply.result, list) else []
        entry = next((x for x in entries if isinstance(x, dict) and x.get("context_id") == context), None)
        if entry is None:
            return False
        held = {f.value.lower() for f in walk(entry) if isinstance(f.value, str) and UUID.fullmatch(f.value)}
        return held - {context.lower()} <= {t.lower() for t in made.tasks}

    def generating(self, params: Any) -> Any:
        """``params`` whose message names a contextId the kit generated (fresh ids of generated
        params): a context it names is its own to clear."""
        sent = dig(params, "message", "contextId")
        if isinstance(sent, str):
            self.generated.add(sent)
        return params

    def example_params(self, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.examples[name]["value"]["params"])

    # -- discovery ----------------------------------------------------------------
    def card(self) -> dict[str, Any]:
        if self._card is None:
            reply = self.ctx.http.request("GET", "/.well-known/agent.json")
            card = reply.json()
            self.ctx.expect(reply.status == 200 and isinstance(card, dict),
                            f"agent card: HTTP {reply.status}")
            self._card = card
        return self._card

    def agent_did(self) -> str:
        """The agent's DID: the card's ``did`` (the spec's AgentCard member), or, where the
        card holds it elsewhere (Bindu 2026.36.7 names it as the URI of a capabilities
        extension), the first ``did:`` string the card holds. A card with none blocks the
        row: the missing member is BINDU-REST-OPENAPI's finding (the card's schema)."""
        card = self.card()
        named = card.get("did")
        if isinstance(named, str) and named:
            return named
        with self.ctx.setup("find the agent's DID in its card", by="BINDU-REST-OPENAPI"):
            found = [f.value for f in walk(card) if isinstance(f.value, str) and f.value.startswith("did:")]
            self.ctx.expect(found, f"the agent card has no did, nor any did: string: {json_excerpt(card)}",
                            kind="malformed_answer")
        return str(found[0])

    def output_modes(self) -> list[str]:
        modes = self.card().get("defaultOutputModes")
        if isinstance(modes, list) and modes:
            return modes
        return self.example_params("messageSend")["configuration"]["acceptedOutputModes"]

    # -- operations ----------------------------------------------------------------
    def send_params(
        self,
        text: str = "conformance check",
        task_id: str | None = "new",
        context_id: str | None = "new",
        reference_task_ids: list[str] | None = None,
        history_length: int | None = None,
        output_modes: list[str] | None = None,
    ) -> dict[str, Any]:
        """message/send params from the spec's `messageSend` example, ids made fresh."""
        params = self.example_params("messageSend")
        msg = params["message"]
        msg["message_id"] = fresh_id()
        msg["parts"] = [{"kind": "text", "text": text}]
        for key, value in (("taskId", task_id), ("contextId", context_id)):
            if value == "new":
                msg[key] = fresh_id()
                if key == "contextId":
                    self.generated.add(msg[key])
            elif value is None:
                msg.pop(key, None)
            else:
                msg[key] = value
        if reference_task_ids is not None:
            msg["referenceTaskIds"] = reference_task_ids
        params["configuration"]["acceptedOutputModes"] = output_modes or self.output_modes()
        if history_length is not None:
            params["configuration"]["historyLength"] = history_length
        return params

    def send(self, caller: Any = "full", **kw: Any) -> Reply:
        return self.call("message/send", self.send_params(**kw), caller)

    def outcome(self, state: str) -> None:
        """Make the agent's next run end in ``state`` (control interface)."""
        if state != "completed":
            self.ctx.control("next_outcome", state=state)

    def new_task(self, state: str = "completed", caller: Any = "full", wait: bool = True,
                 **kw: Any) -> dict[str, Any]:
        """Create a task that ends its first run in ``state``; returns the task as the target
        last showed it. An agent may answer before it has run (``submitted``, "Poll that task
        by id until it terminates"): then the task is polled until it leaves the states the
        agent moves on from by itself. A target that refuses, or never shows the state, is a
        finding of BINDU-SEND-CREATES-TASK: here it blocks the check.

        Without a control interface the agent is not told where to take the task: a task in
        a state other than ``completed`` is one the agent leaves there by itself (an agent
        that works asynchronously answers ``working``); where it does not, the requirement
        needs control (untested, reason ``control``). ``completed`` asks nothing: the task
        is as the agent leaves it, once it settled (``wait=False``: as message/send answered,
        where a check wants a task the agent has not finished yet)."""
        article = "an" if state[:1] in "aeiou" else "a"
        controlled = bool(self.ctx.run.control_path)
        with self.ctx.setup(f"create {article} {state} task with message/send", by="BINDU-SEND-CREATES-TASK"):
            if controlled:
                self.outcome(state)
            params = self.send_params(**kw)
            reply = self.call("message/send", params, caller)
            self.ctx.expect(reply.ok, f"message/send (to set up a task): {reply.describe()}",
                            kind="rejected_valid")
            task = expect_task(self.ctx, reply.result, "message/send result")
            if isinstance(params["message"].get("contextId"), str):
                self.sent_contexts[str(task["id"])] = params["message"]["contextId"]
            if wait:
                task = self.settled(task, state, caller)
            if state != "completed" and not controlled and state_of(task) != state:
                self.ctx.needs_control(f"{article} {state} task: the agent left the task it was sent "
                                       f"{state_of(task)!r}, and only control next_outcome takes it to "
                                       f"{state!r}")
            if state != "completed":
                got = state_of(task)
                self.ctx.expect(got == state, f"control asked for a task in {state!r}; message/send "
                                              f"answered, and tasks/get then showed, {got!r}",
                                kind="state_changed")
        return task

    def context_of(self, task: dict[str, Any]) -> str:
        """The context of a task the kit made: its context_id (the spec's Task member), or,
        where the answer does not carry one, the contextId the kit sent for it (the check
        goes on with its own subject; BINDU-SEND-CREATES-TASK and BINDU-PARAMS-CASING judge
        the answer's members)."""
        got = task.get("context_id")
        if isinstance(got, str):
            return got
        sent = self.sent_contexts.get(str(task.get("id")))
        if sent is None:
            self.ctx.fail(f"looked for the task's context_id (a member of the spec's Task) and found none, "
                          f"and the kit sent no contextId for it: {json_excerpt(task)}",
                          kind="malformed_answer")
        return str(sent)

    POLLS = (0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6)  # seconds before each tasks/get of a task still on its way

    def settled(self, task: dict[str, Any], wanted: str, caller: Any = "full") -> dict[str, Any]:
        """The task once it reached ``wanted`` or a state the agent does not leave by itself
        (the last view after a few polls while it stays on its way)."""
        on_the_way = agent_moves(self.ctx.profile.spec)
        for pause in self.POLLS:
            if state_of(task) == wanted or state_of(task) not in on_the_way:
                break
            time.sleep(pause)
            reply = self.get(task["id"], caller)
            self.ctx.expect(reply.ok, f"tasks/get {task['id']} (polling the new task): {reply.describe()}")
            task = expect_task(self.ctx, reply.result, f"tasks/get {task['id']} result")
        return task

    def get(self, task_id: str, caller: Any = "full", history_length: int | None = None) -> Reply:
        params: dict[str, Any] = {"taskId": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return self.call("tasks/get", params, caller)

    def state_of(self, task_id: str, caller: Any = "full") -> str:
        reply = self.get(task_id, caller)
        self.ctx.expect(reply.ok, f"tasks/get {task_id}: {reply.describe()}")
        return str(state_of(expect_task(self.ctx, reply.result, f"tasks/get {task_id} result")))

    def cancel(self, task_id: str, caller: Any = "full") -> Reply:
        return self.call("tasks/cancel", {"taskId": task_id}, caller)

    def feedback(self, task_id: str, caller: Any = "full") -> Reply:
        return self.call("tasks/feedback", self.example_params("tasksFeedback") | {"taskId": task_id}, caller)

    def list_tasks(self, caller: Any = "full", history_length: int | None = None) -> Reply:
        params = {} if history_length is None else {"history_length": history_length}
        return self.call("tasks/list", params, caller)

    def list_contexts(self, caller: Any = "full", history_length: int | None = None) -> Reply:
        params = {} if history_length is None else {"history_length": history_length}
        return self.call("contexts/list", params, caller)

    def clear(self, context_id: str, caller: Any = "full") -> Reply:
        return self.call("contexts/clear", {"contextId": context_id}, caller)

    def rest(self, method: str, path: str, **kw: Any) -> HttpReply:
        return self.ctx.http.request(method, path, **kw)


def body_bytes(envelope: dict[str, Any]) -> bytes:
    return json.dumps(envelope).encode()
