"""SendMessage (sections 3.1.1, 3.2.2, 3.2.4): its answer is a SendMessageResponse holding
exactly one of a Task or a Message; it blocks by default until the task is terminal or
interrupted, and then shows the task as it is; ``returnImmediately`` answers at once with a
task a later GetTask finds; ``historyLength`` caps the history the answer shows; a Message
the agent answers with is the agent's, in a context. How every check makes and reads its
tasks is driving.py's."""

from __future__ import annotations

import json
from typing import Any

from conformance.documents.schemas import schema_errors
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import answer, arguments, refuses, replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answer_edits import drop_in, set_in
from conformance.protocols.a2a.client import A2AClient, state
from conformance.protocols.a2a.documents import proto_at, schema, spec
from conformance.protocols.a2a.driving import (
    OUTCOME,
    artifact_ids,
    drivable,
    driven,
    fetched,
    follow_up,
    history_of,
    is_message_answer,
    new_task,
    reaching,
    result_of,
    task_answer,
)
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import dig
from conformance.transport.http import json_excerpt


# -- the answer --------------------------------------------------------------------------
@requirement(id="A2A-SEND-RESPONSE", level="MUST",
             title="SendMessage answers a SendMessageResponse: exactly one of task or message, each with the "
                   "proto's REQUIRED fields",
             source=spec("receive either a task that tracks the processing or a direct response message",
                         after="#### 3.1.1"),
             faults=[answer("send_answers_task_and_message", "op_SendMessage",
                            "SendMessage answers a Message beside its Task.",
                            edit=lambda out, *a: {**out, "message": {
                                "messageId": "extra", "role": docs.role_named("agent"),
                                "parts": [{"text": "both"}], "contextId": dig(out, "task", "contextId")}}),
                     answer("send_task_without_status", "op_SendMessage",
                            "SendMessage answers a Task without its REQUIRED status.",
                            edit=lambda out, *a: drop_in(out, "task", "status"))])
def check_send_response(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    reply = c.send(driven(c, "completed"))
    result = result_of(ctx, reply, "SendMessage of an ordinary message")
    held = [member for member in ("task", "message") if member in result]
    holds = " and ".join(held) or "neither task nor message"
    ctx.expect(len(held) == 1, f"the SendMessage answer holds {holds}: exactly one of them (the oneof "
                               f"payload) is its answer: {reply.describe()}",
               kind="schema_mismatch")
    problems = schema_errors(schema(ctx.profile, "SendMessageResponse"), result, limit=5)
    ctx.expect(not problems, "the SendMessage answer is not a SendMessageResponse: " + "; ".join(problems) +
               f" (answer: {reply.describe()})", kind="schema_mismatch")


@requirement(id="A2A-SEND-BLOCKING", level="MUST",
             title="A blocking SendMessage (returnImmediately unset) answers only once the task is terminal "
                   "or interrupted",
             source=spec("The operation MUST wait until the task reaches a terminal state",
                         after="#### 3.2.2"),
             faults=[arguments("blocking_send_returns_early", "op_SendMessage",
                               "A SendMessage without returnImmediately answers at once, the task still "
                               "working.",
                               index=0, edit=lambda p: {**p, "configuration": {
                                   **(p.get("configuration") or {}), "returnImmediately": True}})])
def check_send_blocking(ctx: CheckContext) -> None:
    """Over each outcome the agent can be driven to: a long-running task most of all (the
    answer must wait for it), and an ordinary one."""
    c = A2AClient(ctx)
    done = docs.terminal_states() + docs.interrupted_states()
    for outcome in ("completed", "long_running", "input_required", "failed"):
        if not drivable(ctx, outcome):
            continue
        with ctx.subcheck(outcome):
            task = new_task(c, outcome)
            ctx.expect(state(task) in done,
                       f"a blocking SendMessage ({outcome}) answered the task in {state(task)!r}: it must "
                       f"wait for one of {', '.join(done)} (task {json_excerpt(task)})", kind="expectation")


@requirement(id="A2A-SEND-LATEST", level="MUST",
             title="A blocking SendMessage's task is the latest: a GetTask of the terminal task shows the "
                   "same state and artifacts",
             source=spec("The response MUST include the latest task state with all artifacts",
                         after="#### 3.2.2"),
             faults=[answer("blocking_answer_without_artifacts", "op_SendMessage",
                            "A blocking SendMessage answers the completed task without its artifacts.",
                            edit=lambda out, *a: drop_in(out, "task", "artifacts"),
                            when=lambda params, *a: not dig(params, "configuration", "returnImmediately"))])
def check_send_latest(ctx: CheckContext) -> None:
    """A terminal task no longer changes, so what GetTask shows of it is what the blocking
    answer had to show (artifacts by their ids, in order)."""
    c = A2AClient(ctx)
    task = new_task(c)
    if state(task) not in docs.terminal_states():
        raise Untested(f"the agent left the task {state(task)!r}, not terminal: nothing to compare", OUTCOME)
    later = fetched(c, task["id"])
    ctx.expect(state(later) == state(task), f"the blocking answer showed {state(task)!r}, GetTask of the "
                                            f"terminal task shows {state(later)!r}", kind="expectation")
    ctx.expect(artifact_ids(task) == artifact_ids(later),
               f"the blocking answer showed artifacts {artifact_ids(task)}, GetTask of the terminal task "
               f"shows {artifact_ids(later)}: the answer must carry all of them", kind="expectation")


@requirement(id="A2A-SEND-RETURN-IMMEDIATELY", level="MUST",
             title="returnImmediately true: SendMessage answers with the task it created (in any state), "
                   "which a later GetTask finds",
             source=spec("The operation MUST return immediately after creating the task", after="#### 3.2.2"),
             faults=[refuses("return_immediately_refused", "op_SendMessage",
                             lambda *a: Refusal("UnsupportedOperationError", "no returnImmediately here"),
                             "SendMessage refuses returnImmediately.",
                             when=lambda params, *a: dig(params, "configuration", "returnImmediately")
                             is True),
                     "return_immediately_task_lost"])
def check_send_return_immediately(ctx: CheckContext) -> None:
    """A long-running task when the agent can be driven to one (its answer cannot wait for
    the end), else an ordinary one. The state is not judged: "e.g." names examples only."""
    c = A2AClient(ctx)
    outcome = "long_running" if drivable(ctx, "long_running") else "completed"
    reply = c.send(driven(c, outcome), {"returnImmediately": True})
    task = task_answer(ctx, reply, f"SendMessage ({outcome}) with returnImmediately")
    got = c.get(task["id"])
    ctx.expect(got.ok and isinstance(got.result, dict) and got.result.get("id") == task["id"],
               f"GetTask of the task SendMessage with returnImmediately answered ({task['id']}): "
               f"{got.describe()}", kind="not_found_expected" if not got.ok else "expectation")


@check_send_return_immediately.fault
def return_immediately_task_lost(ref: A2AReference) -> None:
    """A task answered under returnImmediately is never stored: GetTask does not find it."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        out: dict[str, Any] = original(params, caller)
        if dig(params, "configuration", "returnImmediately") is True and dig(out, "task", "id"):
            ref.tasks.pop(out["task"]["id"], None)
        return out


# -- history ---------------------------------------------------------------------------
HISTORY_CAP = proto_at("The server MUST NOT", after="message SendMessageConfiguration")


@requirement(id="A2A-SEND-HISTORY-ZERO", level="MUST",
             title="SendMessage with configuration.historyLength 0 answers a task showing no history message",
             source=HISTORY_CAP, faults=["send_history_zero_ignored"])
def check_send_history_zero(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    task = new_task(c, configuration={"historyLength": 0}, what="SendMessage with historyLength 0")
    shown = history_of(ctx, task, "SendMessage with historyLength 0")
    ctx.expect(not shown, f"SendMessage with historyLength 0 answered {len(shown)} history message(s): "
                          f"{json_excerpt(shown)}", kind="expectation")


@check_send_history_zero.fault
def send_history_zero_ignored(ref: A2AReference) -> None:
    """SendMessage with historyLength 0 answers the task's whole history."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        out: dict[str, Any] = original(params, caller)
        task = ref.tasks.get(dig(out, "task", "id"))
        if dig(params, "configuration", "historyLength") == 0 and task is not None:
            out["task"]["history"] = json.loads(json.dumps(task.get("history", [])))
        return out


@requirement(id="A2A-SEND-HISTORY-LENGTH", level="MUST",
             title="SendMessage with configuration.historyLength 1 on a task with a longer history answers "
                   "at most one history message",
             source=HISTORY_CAP, faults=["send_history_not_trimmed"])
def check_send_history_length(ctx: CheckContext) -> None:
    """A task the agent asked for input on, continued with historyLength 1: the continued
    task holds both messages (untested where the agent shows fewer of them)."""
    c = A2AClient(ctx)
    task = reaching(c, "input_required")
    reply = follow_up(c, task, configuration={"historyLength": 1})
    shown = history_of(ctx, task_answer(ctx, reply, "SendMessage continuing a task, historyLength 1"),
                       "SendMessage with historyLength 1")
    whole = history_of(ctx, fetched(c, task["id"]), "GetTask")
    if len(whole) < 2:
        raise Untested(f"the agent shows {len(whole)} message(s) in the history of a task that got two: the "
                       "cap needs a longer history (section 3.7: the agent chooses what it keeps)", OUTCOME)
    ctx.expect(len(shown) <= 1, f"SendMessage with historyLength 1 answered {len(shown)} history messages: "
                                f"{json_excerpt(shown)}", kind="expectation")


@check_send_history_length.fault
def send_history_not_trimmed(ref: A2AReference) -> None:
    """SendMessage with a positive historyLength answers the task's whole history."""
    @replaces(ref.op_SendMessage)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        out: dict[str, Any] = original(params, caller)
        task = ref.tasks.get(dig(out, "task", "id"))
        length = dig(params, "configuration", "historyLength")
        if isinstance(length, int) and length > 0 and task is not None:
            out["task"]["history"] = json.loads(json.dumps(task.get("history", [])))
        return out


# -- a Message answer --------------------------------------------------------------------------
@requirement(id="A2A-SEND-MESSAGE", level="MUST",
             title="A Message the agent answers SendMessage with is a Message from the agent (ROLE_AGENT) "
                   "carrying a contextId",
             source=proto_at("For server messages, `context_id` must"),
             faults=[answer("message_answer_without_context", "op_SendMessage",
                            "A direct Message answer carries no contextId.",
                            edit=lambda out, *a: drop_in(out, "message", "contextId")),
                     answer("message_answer_as_user", "op_SendMessage",
                            "A direct Message answer is marked as the user's.",
                            edit=lambda out, *a: set_in(out, "message", role=docs.role_named("user")))])
def check_send_message(ctx: CheckContext) -> None:
    """The agent driven to answer with a Message (untested where it answers with a Task)."""
    c = A2AClient(ctx)
    reply = c.send(driven(c, "message"))
    result = result_of(ctx, reply, "SendMessage driving the agent to answer with a Message")
    if not is_message_answer(result):
        raise Untested("the agent answered with a Task, not a Message: the requirement needs a direct "
                       "Message (scenarios.message in --config names a message that gets one)", OUTCOME)
    message = result["message"]
    problems = schema_errors(schema(ctx.profile, "Message"), message, limit=5)
    ctx.expect(not problems, "the Message answer is not a Message: " + "; ".join(problems),
               kind="schema_mismatch")
    with ctx.subcheck("contextId"):
        ctx.expect(isinstance(message.get("contextId"), str) and message["contextId"],
                   f"the agent's Message carries no contextId: {json_excerpt(message)}", kind="expectation")
    with ctx.subcheck("role"):
        agent = docs.role_named("agent")
        ctx.expect(message.get("role") == agent,
                   f"the agent's Message has role {message.get('role')!r}, not {agent} (the proto: "
                   f"\"The message is from the server to the client\")", kind="expectation",
                   statement=str(proto_at("The message is from the server to the client")))
