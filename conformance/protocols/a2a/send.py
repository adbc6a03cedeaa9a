"""SendMessage (sections 3.1.1, 3.2.2, 3.2.4): its answer is a SendMessageResponse holding
exactly one of a Task or a Message; it blocks by default until the task is terminal or
interrupted, and then shows the task as it is; ``returnImmediately`` answers at once with a
task a later GetTask finds; ``historyLength`` caps the history the answer shows; a Message
the agent answers with is the agent's, in a context.

The helpers here are how every check of the task operations makes and reads its tasks:
the agent is not the kit's to choose, so a check that needs an outcome the agent did not
reach (or a Task where the agent answered with a Message) is untested, never passed."""

from __future__ import annotations

import json
from typing import Any

from conformance.check import CheckContext, Untested
from conformance.declare import requirement
from conformance.documents.schemas import schema_errors
from conformance.faults import answer, arguments, refuses, replaces
from conformance.live import REASONS
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.client import A2AClient, a2a_error, state
from conformance.protocols.a2a.documents import proto_at, schema, spec
from conformance.reference import Refusal
from conformance.transport.binding import Reply, dig
from conformance.transport.http import json_excerpt

# why a requirement is untested when the agent went elsewhere (the engine's reason, once it has one)
OUTCOME = "outcome" if "outcome" in REASONS else "other"
SEND_BY = "A2A-SEND-RESPONSE"  # the requirement about a SendMessage answer itself: set-ups are blocked by it


# -- making and reading tasks -------------------------------------------------------
def drivable(ctx: CheckContext, outcome: str) -> bool:
    """Whether something drives the agent to ``outcome``: control, the config's scenario,
    or (for ``completed``) an ordinary message."""
    return bool(ctx.run.control_path) or outcome == "completed" or ctx.run.scenarios.get(outcome) is not None


def driven(c: A2AClient, outcome: str, **fields: Any) -> dict[str, Any]:
    """A message meant to bring the agent to ``outcome`` (untested when nothing does)."""
    if not drivable(c.ctx, outcome):
        raise Untested(f"nothing drives this agent to {outcome}: name a message under scenarios.{outcome} "
                       "in --config", OUTCOME)
    return c.drive(outcome, **fields)


def result_of(ctx: CheckContext, reply: Reply, what: str) -> dict[str, Any]:
    """The JSON object an answer that must succeed holds (a finding otherwise)."""
    if not reply.ok:
        ctx.fail(f"{what}: expected a result, got {reply.describe()}", kind="rejected_valid")
    if not isinstance(reply.result, dict):
        ctx.fail(f"{what}: the result is not a JSON object: {reply.describe()}", kind="malformed_answer")
    assert isinstance(reply.result, dict)
    return reply.result


def is_message_answer(result: Any) -> bool:
    return isinstance(result, dict) and "message" in result and "task" not in result


def task_answer(ctx: CheckContext, reply: Reply, what: str) -> dict[str, Any]:
    """The Task of a SendMessage answer; a Message answer (which section 3.1.1 allows)
    leaves a requirement about tasks untested."""
    result = result_of(ctx, reply, what)
    if is_message_answer(result):
        raise Untested(f"{what}: the agent answered with a Message, not a Task (section 3.1.1 allows it)",
                       OUTCOME)
    return task_object(ctx, result.get("task"), what, reply)


def task_object(ctx: CheckContext, task: Any, what: str, reply: Reply) -> dict[str, Any]:
    """``task`` as a Task with an id and a status (a finding quoting the answer otherwise)."""
    if not (isinstance(task, dict) and isinstance(task.get("id"), str)
            and isinstance(task.get("status"), dict)):
        ctx.fail(f"{what}: the answer holds no Task with an id and a status: {reply.describe()}",
                 kind="malformed_answer")
    assert isinstance(task, dict)
    return task


def task_result(ctx: CheckContext, reply: Reply, what: str) -> dict[str, Any]:
    """The Task a GetTask or CancelTask answers (the result itself)."""
    return task_object(ctx, result_of(ctx, reply, what), what, reply)


def new_task(c: A2AClient, outcome: str = "completed", configuration: dict[str, Any] | None = None,
             what: str = "", **fields: Any) -> dict[str, Any]:
    """A new task, the message driving the agent to ``outcome`` (not judged: the state is
    whatever the agent made of it)."""
    label = what or f"SendMessage driving the agent to {outcome}"
    with c.ctx.setup(label, by=SEND_BY):
        return task_answer(c.ctx, c.send(driven(c, outcome, **fields), configuration), label)


def outcome_state(outcome: str) -> str:
    return docs.state_named(outcome.replace("long_running", "working"))


def in_outcome(task: dict[str, Any], outcome: str) -> dict[str, Any]:
    """``task``, untested unless the agent took it to ``outcome``'s state."""
    wanted = outcome_state(outcome)
    if state(task) != wanted:
        raise Untested(f"the agent took the task to {state(task)!r}, not {wanted}: the requirement needs "
                       f"{outcome} (scenarios.{outcome} in --config names a message that gets there)",
                       OUTCOME)
    return task


def reaching(c: A2AClient, outcome: str = "completed", configuration: dict[str, Any] | None = None,
             what: str = "") -> dict[str, Any]:
    """A new task in ``outcome``'s state once the agent stopped working on it by itself
    (polled: ``A2AClient.settled``); untested where the agent took it elsewhere."""
    return in_outcome(c.settled(new_task(c, outcome, configuration, what)), outcome)


def task_in_progress(c: A2AClient) -> dict[str, Any]:
    """A task the agent is still working on (returnImmediately on a long-running one);
    untested when the agent finished it before the check could cancel it."""
    task = new_task(c, "long_running", {"returnImmediately": True})
    now = state(fetched(c, task["id"])) if state(task) not in docs.terminal_states() else state(task)
    if now in docs.terminal_states():
        raise Untested(f"the agent ended the long-running task ({now}) before the check could cancel it",
                       OUTCOME)
    return task


def canceled_task(c: A2AClient) -> dict[str, Any]:
    """A task the check canceled: CancelTask answered it canceled (untested where the agent
    refused with TaskNotCancelableError, which "success is not guaranteed" allows)."""
    task = task_in_progress(c)
    reply = c.call("CancelTask", {"id": task["id"]})
    if a2a_error(c.ctx, reply) == "TaskNotCancelableError":
        raise Untested(f"the agent did not cancel its task in progress: {reply.describe()} (section 3.1.5: "
                       "success is not guaranteed)", OUTCOME)
    return task_result(c.ctx, reply, f"CancelTask of the task in progress {task['id']}")


def finished(c: A2AClient, outcome: str) -> dict[str, Any]:
    """A task of the check's in the terminal state ``outcome`` names (untested otherwise)."""
    if outcome == "canceled":
        if not drivable(c.ctx, "long_running"):
            raise Untested("nothing drives the agent to a long-running task to cancel "
                           "(scenarios.long_running)", OUTCOME)
        task = canceled_task(c)
        if state(task) != docs.state_named("canceled"):
            raise Untested(f"CancelTask answered the task {state(task)!r}: A2A-CANCEL-TASK is about it",
                           OUTCOME)
        return task
    if not drivable(c.ctx, outcome):
        raise Untested(f"nothing drives this agent to {outcome} (scenarios.{outcome})", OUTCOME)
    return reaching(c, outcome)


def history_of(ctx: CheckContext, task: dict[str, Any], what: str) -> list[Any]:
    """A task's history as shown (absent: none)."""
    history = task.get("history", [])
    if not isinstance(history, list):
        ctx.fail(f"{what}: history is not an array: {json_excerpt(history)}", kind="malformed_answer")
    return list(history)


def fetched(c: A2AClient, task_id: str, what: str = "", **params: Any) -> dict[str, Any]:
    """GetTask of a task the check made (set-up: a refusal blocks, A2A-GET-TASK is about it)."""
    label = what or f"GetTask {task_id}"
    with c.ctx.setup(label, by="A2A-GET-TASK"):
        return task_result(c.ctx, c.get(task_id, **params), label)


def follow_up(c: A2AClient, task: dict[str, Any], outcome: str = "completed",
              configuration: dict[str, Any] | None = None, context: bool = True) -> Reply:
    """A message continuing ``task`` (its taskId, and its contextId unless ``context`` is off)."""
    fields: dict[str, Any] = {"taskId": task["id"]}
    if context and isinstance(task.get("contextId"), str):
        fields["contextId"] = task["contextId"]
    return c.send(driven(c, outcome, **fields), configuration)


def task_with_history(c: A2AClient, least: int = 2) -> dict[str, Any]:
    """A task of the check's whose full history (GetTask without historyLength) holds at
    least ``least`` messages: an ordinary one where the agent keeps that many, else one the
    agent asked for input on, continued once. Untested when the agent shows fewer."""
    task = new_task(c)
    if len(history_of(c.ctx, fetched(c, task["id"]), "GetTask")) >= least:
        return task
    task = reaching(c, "input_required")
    with c.ctx.setup("SendMessage continuing a task the agent asked for input on", by="A2A-MULTI-RESUME"):
        task_answer(c.ctx, follow_up(c, task), "SendMessage continuing a task the agent asked for input on")
    shown = history_of(c.ctx, fetched(c, task["id"]), "GetTask")
    if len(shown) < least:
        raise Untested(f"the agent shows {len(shown)} message(s) in the history of a task that got two: a "
                       f"cap needs at least {least} (section 3.7: the agent chooses what it keeps)", OUTCOME)
    return task


# -- what faults change in an answer ------------------------------------------------------
def drop_in(out: Any, member: str, key: str) -> None:
    """``out[member]`` loses ``key`` (in place; nothing where the answer has another shape)."""
    inner = out.get(member) if isinstance(out, dict) else None
    if isinstance(inner, dict):
        inner.pop(key, None)


def set_in(out: Any, member: str, **values: Any) -> None:
    inner = out.get(member) if isinstance(out, dict) else None
    if isinstance(inner, dict):
        inner.update(values)


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


def artifact_ids(task: dict[str, Any]) -> list[Any]:
    """The ids of a task's artifacts, in order (what is no artifact object, as it is)."""
    found = task.get("artifacts") or []
    if not isinstance(found, list):
        return [found]
    return [a.get("artifactId") if isinstance(a, dict) else a for a in found]


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
def return_immediately_task_lost(ref: Any) -> None:
    """A task answered under returnImmediately is never stored: GetTask does not find it."""
    @replaces(ref, "op_SendMessage")
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
def send_history_zero_ignored(ref: Any) -> None:
    """SendMessage with historyLength 0 answers the task's whole history."""
    @replaces(ref, "op_SendMessage")
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
def send_history_not_trimmed(ref: Any) -> None:
    """SendMessage with a positive historyLength answers the task's whole history."""
    @replaces(ref, "op_SendMessage")
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
