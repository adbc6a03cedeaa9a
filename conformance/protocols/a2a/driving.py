"""How every check makes and reads its tasks: a message that drives the agent to an outcome,
the task the answer holds, followed up, fetched again, settled. The agent is not the kit's to
choose, so a check that needs an outcome the agent did not reach (or a Task where the agent
answered with a Message) is untested, never passed."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.kit.check import CheckContext, Untested
from conformance.kit.live import REASONS
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import describe
from conformance.protocols.a2a.client import A2AClient, a2a_error, reached, state
from conformance.transport.binding import Reply
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


def artifact_ids(task: dict[str, Any]) -> list[Any]:
    """The ids of a task's artifacts, in order (what is no artifact object, as it is)."""
    found = task.get("artifacts") or []
    if not isinstance(found, list):
        return [found]
    return [a.get("artifactId") if isinstance(a, dict) else a for a in found]


# -- a task of the check's own, and one no agent issued --------------------------------
def never_issued() -> str:
    return f"conformance-never-issued-{uuid.uuid4()}"


def task_from(client: A2AClient, reply: Reply, what: str) -> dict[str, Any]:
    """The Task of a SendMessage answer; a refusal is a finding (the valid request refused)."""
    client.ctx.expect(reply.ok, f"{what}: refused: {describe(reply)}", kind="rejected_valid")
    return client.task_of(reply, what)


def own_task(client: A2AClient, outcome: str = "completed") -> dict[str, Any]:
    """A task this check made, in the state ``outcome`` names (making it is a set-up step:
    a refusal blocks the requirement; another state leaves it untested), once the agent
    stopped working on it by itself (``A2AClient.settled``)."""
    with client.ctx.setup(f"a task the agent takes to {outcome}"):
        reply = client.send(client.drive(outcome))
        task = task_from(client, reply, f"SendMessage driving the agent to {outcome}")
    task = client.settled(task)
    reached(task, outcome)
    return task


def any_task(client: A2AClient) -> dict[str, Any]:
    """A task this check made, in whatever state the agent left it."""
    with client.ctx.setup("a task of the check's own"):
        return task_from(client, client.send(client.drive("completed")), "SendMessage")


def push_config(task_id: str) -> dict[str, Any]:
    """A TaskPushNotificationConfig for ``task_id`` (its REQUIRED url: a host that never resolves)."""
    return {"taskId": task_id, "url": "https://conformance.invalid/a2a-webhook"}


# -- a task the agent has not ended -----------------------------------------------------------
OPEN_OUTCOMES = ("input_required", "long_running")  # states a task can be subscribed to in


def open_task(client: A2AClient) -> dict[str, Any]:
    """A task of the check's own that is not in a terminal state (on a terminal task,
    UnsupportedOperationError has another cause: section 9.4.6); only outcomes something
    drives the agent to are tried (the reference's control, or the config's scenarios)."""
    run = client.ctx.run
    why = "nothing drives this agent to " + " or ".join(OPEN_OUTCOMES) + " (name a message under scenarios." \
        + " or scenarios.".join(OPEN_OUTCOMES) + " in --config)"
    for outcome in OPEN_OUTCOMES:
        if run.control_path or outcome in run.scenarios:
            try:
                return own_task(client, outcome)
            except Untested as exc:
                why = str(exc)
    raise Untested(f"SubscribeToTask needs a task in a state that is not terminal: {why}", "other")
