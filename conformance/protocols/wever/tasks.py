"""Wever Connect's permissions and task flow over the HTTP actions (and MCP): a task is
delivered only with the recipient's grant and for a capability it advertises, starts
offered, is accepted, declined, cancelled or completed as the actions say, is read by
its participants only, and its content is erased by either of them once terminal; task
data and results within task_or_result_bytes; the lifecycle as a state machine."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from conformance.checks.expect import expect_refused, expect_result, refused_as
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import replaces, returns
from conformance.protocols.wever.answers import contains, digests, marked
from conformance.protocols.wever.client import (
    MARKER_FIELD,
    RECIPIENT,
    SENDER,
    STRANGER,
    WeverClient,
    fresh_marker,
)
from conformance.protocols.wever.machine import LIVE_MACHINES, WeverMachine
from conformance.protocols.wever.reference import (
    ACCEPTED,
    CANCELLED,
    DECLINED,
    INBOX_STATES,
    OFFERED,
    Call,
    RelayError,
    WeverReference,
)
from conformance.protocols.wever.shared_faults import CODES
from conformance.transport.http import json_excerpt


# ----------------------------------------------------------------------------------
# permission to deliver
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-SEND-NEEDS-GRANT", level="MUST",
             title="Without the recipient's explicit sender grant (or after its revocation) nothing is "
             "delivered",
             source=at("/permissions"), code="NOT_ALLOWED", code_faults=CODES,
             faults=[returns("delivered_without_grant", "has_grant", True,
                             "Every sender counts as allowed by every recipient (has_grant is always true)."),
                     returns("revocation_ignored", "remove_grant", False,
                             "Revoking a grant (allow_sender allowed=false, a denial) removes nothing.")])
def check_send_needs_grant(ctx: CheckContext, strict: bool = False) -> None:
    """Without the recipient's explicit grant nothing is delivered."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT)
    c.ungranted(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    refused_as(ctx, c.send(SENDER, RECIPIENT, data=data), "NOT_ALLOWED",
               "send_task without the recipient's grant", strict)
    watch.nothing_delivered(marker, "a send_task refused for want of a grant", kind="auth_not_enforced")
    with ctx.subcheck("a revoked grant"):
        c.grant(SENDER, RECIPIENT)
        expect_result(ctx, c.grant(SENDER, RECIPIENT, allowed=False), "allow_sender allowed=false")
        data, marker = c.marked()
        refused_as(ctx, c.send(SENDER, RECIPIENT, data=data), "NOT_ALLOWED",
                   "send_task after the grant was revoked", strict)
        watch.nothing_delivered(marker, "a send_task after the revocation", kind="auth_not_enforced")


@requirement(id="WEVER-SEND-NEEDS-CAPABILITY", level="MUST",
             title="A capability the recipient does not advertise is not delivered",
             source=at("/permissions"), code="NOT_ALLOWED", code_faults=CODES,
             faults=[returns("capability_unchecked", "check_capability", True,
                             "A task is delivered for any capability, advertised by the recipient or not.")])
def check_send_needs_capability(ctx: CheckContext, strict: bool = False) -> None:
    """A capability the recipient does not advertise is not delivered, grant or not."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    refused_as(ctx, c.send(SENDER, RECIPIENT, data=data, capability="conformance.not.advertised"),
               "NOT_ALLOWED",
               "send_task for a capability the recipient does not advertise", strict)
    watch.nothing_delivered(marker, "a send_task for a capability the recipient does not advertise",
                            kind="auth_not_enforced")


# ----------------------------------------------------------------------------------
# the task flow
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-SEND-OFFERED", level="MUST",
             title="A granted send_task creates an offered task in the recipient's inbox, nobody else's",
             source=at("/flow/5"), faults=["task_not_offered", "inbox_shows_others"])
def check_send_offered(ctx: CheckContext) -> None:
    """A granted send_task creates an offered task that the recipient sees in its inbox."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    task = c.task_of(c.send(SENDER, RECIPIENT), "send_task")
    state = c.state_after(task, "send_task")
    ctx.expect(state == c.vocab.state("offered"), f"a new task is {state!r}, the flow says offered")
    ctx.expect(task.id in c.inbox_ids(RECIPIENT),
               f"the offered task {task.id} is not in the recipient's inbox")
    ctx.expect(task.id not in c.inbox_ids(STRANGER), "another mailbox's inbox shows the task",
               kind="auth_not_enforced")


@check_send_offered.fault
def task_not_offered(ref: WeverReference) -> None:
    """A new task starts accepted (as if the recipient had accepted it), not offered."""
    @replaces(ref.create_task)
    def create(original: Any, *args: Any) -> dict[str, Any]:
        task: dict[str, Any] = original(*args)
        task["state"] = ACCEPTED
        return task


@check_send_offered.fault
def inbox_shows_others(ref: WeverReference) -> None:
    """inbox lists every offered or accepted task of the relay, whoever it is addressed to."""
    @replaces(ref.inbox_tasks)
    def inbox(original: Any, recipient_id: str) -> list[dict[str, Any]]:
        tasks = [t for t in ref.s["tasks"].values() if t["state"] in INBOX_STATES]
        tasks.sort(key=lambda t: (t["created_at"], t["order"]))
        return tasks[: ref.limit("inbox_tasks_count")]


@requirement(id="WEVER-ACCEPT-REPEAT", level="MUST",
             title="A repeated accept_task returns the task's accepted state",
             source=at("/actions/accept_task/description"), faults=["repeat_accept_refused"])
def check_accept_repeat(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    task = c.new_task("offered")
    accepted = c.vocab.state("accepted")
    states = []
    for attempt in ("accept_task", "accept_task again"):
        seen = c.task_of(c.call("accept_task", {"task_id": task.id}, RECIPIENT), attempt, known=task.id)
        states.append(c.state_after(seen, attempt, RECIPIENT))
    ctx.expect(states == [accepted, accepted],
               f"accept_task answered {states[0]!r} then {states[1]!r}; a repeated acceptance returns the "
               "accepted state")


@check_accept_repeat.fault
def repeat_accept_refused(ref: WeverReference) -> None:
    """A repeated accept_task of an accepted task is refused INVALID_STATE."""
    @replaces(ref.act_accept_task)
    def accept(original: Any, call: Call) -> dict[str, Any]:
        task = ref.s["tasks"].get(call.args["task_id"])
        if task is not None and task["recipient_id"] == call.caller and task["state"] == ACCEPTED:
            raise RelayError("INVALID_STATE", "the task was already accepted")
        result: dict[str, Any] = original(call)
        return result


@requirement(id="WEVER-DECLINE", level="MUST",
             title="decline_task ends an offered task; it leaves the inbox and cannot be accepted",
             source=at("/actions/decline_task/description"), faults=["decline_keeps_offered"])
def check_decline(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    task = c.new_task("offered")
    declined = c.task_of(c.call("decline_task", {"task_id": task.id}, RECIPIENT), "decline_task",
                         known=task.id)
    state = c.state_after(declined, "decline_task", RECIPIENT)
    ctx.expect(state == c.vocab.state("declined"), f"decline_task answered state {state!r}")
    ctx.expect(task.id not in c.inbox_ids(RECIPIENT),
               "a declined task is still in the inbox (offered or accepted only)")
    expect_refused(ctx, c.call("accept_task", {"task_id": task.id}, RECIPIENT),
                   "accept_task of a declined task")


@check_decline.fault
def decline_keeps_offered(ref: WeverReference) -> None:
    """decline_task answers but the task stays offered (in the inbox, still acceptable)."""
    @replaces(ref.set_state)
    def set_state(original: Any, task: dict[str, Any], state: str) -> None:
        if state != DECLINED:
            original(task, state)


@requirement(id="WEVER-CANCEL-OFFERED-ONLY", level="MUST",
             title="The sender cancels a task only while offered; accepted work cannot be cancelled; "
                   "the recipient cannot cancel",
             source=at("/actions/cancel_task/description"), code="INVALID_STATE", code_faults=CODES,
             faults=["accepted_cancellable", "recipient_cancels"])
def check_cancel_offered_only(ctx: CheckContext, strict: bool = False) -> None:
    """The sender cancels only while offered; accepted work cannot be cancelled; the
    recipient never cancels. A repeated cancel of a cancelled task answers it."""
    c = WeverClient(ctx)
    with ctx.subcheck("offered, by the sender"):
        task = c.new_task("offered")
        done = c.task_of(c.call("cancel_task", {"task_id": task.id}, SENDER),
                         "cancel_task of an offered task", known=task.id)
        state = c.state_after(done, "cancel_task")
        ctx.expect(state == c.vocab.state("cancelled"), f"cancel_task answered state {state!r}")
    with ctx.subcheck("offered, by the recipient"):
        task = c.new_task("offered")
        refused_as(ctx, c.call("cancel_task", {"task_id": task.id}, RECIPIENT), "NOT_ALLOWED",
                   "cancel_task by the recipient", strict)
    with ctx.subcheck("accepted, by the sender"):
        task = c.new_task("accepted")
        refused_as(ctx, c.call("cancel_task", {"task_id": task.id}, SENDER), "INVALID_STATE",
                   "cancel_task of an accepted task", strict)
        state = c.state_of(task.id, SENDER)
        ctx.expect(state == c.vocab.state("accepted"), f"after a refused cancel the task is {state!r}",
                   kind="state_changed")


@check_cancel_offered_only.fault
def accepted_cancellable(ref: WeverReference) -> None:
    """The sender can cancel an accepted task too (HTTP and A2A CancelTask)."""
    @replaces(ref.can_cancel)
    def can_cancel(original: Any, task: dict[str, Any]) -> bool:
        return bool(task["state"] in (OFFERED, ACCEPTED))


@check_cancel_offered_only.fault
def recipient_cancels(ref: WeverReference) -> None:
    """cancel_task by the task's recipient is served as if the sender had asked."""
    @replaces(ref.act_cancel_task)
    def cancel(original: Any, call: Call) -> dict[str, Any]:
        task = ref.s["tasks"].get(call.args["task_id"])
        if task is not None and task["recipient_id"] == call.caller:
            call = Call(call.action, call.args, task["sender_id"], call.key, call.source)
        result: dict[str, Any] = original(call)
        return result


@requirement(id="WEVER-COMPLETE-RESULT", level="MUST",
             title="complete_task records a result for an accepted task; both participants recover it with "
                   "its integrity digest",
             source=at("/delivery"),
             faults=["result_hidden_from_sender", "complete_before_accept",
                     returns("no_result_digest", "result_digest", None,
                             "A recorded result comes without its integrity digest.")])
def check_complete_result(ctx: CheckContext) -> None:
    """Both participants recover the completed result with an integrity digest (a string
    of 128 bits or more, hex or base64, that the accepted task did not show: the
    manifest names no algorithm, encoding or field)."""
    c = WeverClient(ctx)
    task = c.new_task("accepted")
    plain = (c.vocab.task_id, c.vocab.mailbox_id, c.vocab.request_id)
    before = set(digests(expect_result(ctx, c.get(task.id, SENDER), "get_task of the accepted task"), plain))
    result = {"answer": "conformance result", "n": 1, MARKER_FIELD: task.marker}
    done = c.task_of(c.call("complete_task", {"task_id": task.id, "result": result}, RECIPIENT),
                     "complete_task", known=task.id)
    state = c.state_after(done, "complete_task", RECIPIENT)
    ctx.expect(state == c.vocab.state("completed"), f"complete_task answered state {state!r}")
    for who in (SENDER, RECIPIENT):
        with ctx.subcheck(f"get_task as {who}"):
            seen = expect_result(ctx, c.get(task.id, who), f"get_task as {who}")
            ctx.expect(contains(seen, result),
                       f"get_task as {who} does not show the result {result!r}: {json_excerpt(seen)}")
            ctx.expect(set(digests(seen, plain)) - before, f"get_task as {who}: no integrity digest of the "
                       "result (looked for a new hex or base64 string of 128 bits or more): "
                       f"{json_excerpt(seen)}", kind="schema_mismatch")
    with ctx.subcheck("complete before accept"):
        offered = c.new_task("offered")
        expect_refused(ctx, c.call("complete_task", {"task_id": offered.id, "result": result}, RECIPIENT),
                       "complete_task of an offered task")


@check_complete_result.fault
def result_hidden_from_sender(ref: WeverReference) -> None:
    """get_task by the sender shows no result (nor its digest) of a completed task."""
    @replaces(ref.act_get_task)
    def get_task(original: Any, call: Call) -> dict[str, Any]:
        out: dict[str, Any] = original(call)
        if out["task"]["sender_id"] == call.caller:
            out["task"]["result"] = None
            out["task"]["result_digest"] = None
        return out


@check_complete_result.fault
def complete_before_accept(ref: WeverReference) -> None:
    """complete_task records a result for an offered task (no acceptance needed)."""
    @replaces(ref.can_complete)
    def can_complete(original: Any, task: dict[str, Any]) -> bool:
        return bool(task["state"] in (OFFERED, ACCEPTED))


@requirement(id="WEVER-TASK-PARTICIPANTS", level="MUST",
             title="Only the sender and the recipient read a task: a task id alone grants no access",
             source=at("/actions/get_task/description"), code="NOT_FOUND", code_faults=CODES,
             faults=["task_visible_to_anyone"])
def check_task_participants(ctx: CheckContext, strict: bool = False) -> None:
    """Only the sender and the recipient read a task: a task id alone grants no access."""
    c = WeverClient(ctx)
    task = c.new_task("offered")
    refused_as(ctx, c.get(task.id, STRANGER), "NOT_FOUND", "get_task by a mailbox that is no participant",
               strict)
    for who in (SENDER, RECIPIENT):
        c.task_of(c.get(task.id, who), f"get_task as {who}", known=task.id)


@check_task_participants.fault
def task_visible_to_anyone(ref: WeverReference) -> None:
    """get_task (and A2A GetTask) serves any mailbox that knows the task id."""
    @replaces(ref.act_get_task)
    def get_task(original: Any, call: Call) -> dict[str, Any]:
        task = ref.s["tasks"].get(call.args["task_id"])
        if task is not None:
            return {"task": ref.task_view(task)}
        result: dict[str, Any] = original(call)
        return result


@requirement(id="WEVER-DELETE-CONTENT", level="MUST",
             title="Either participant erases a terminal task's shared content, for both; a task that is "
                   "not terminal keeps it",
             source=at("/actions/delete_task_content/description"),
             faults=["delete_content_one_side",
                     returns("delete_open_task", "can_delete_content", True,
                             "delete_task_content erases the content of a task that is not terminal.")])
def check_delete_content(ctx: CheckContext) -> None:
    """Either participant erases a terminal task's content, for both; a task that is
    not terminal keeps it. Content is what carries the task's marker (its data, and a
    completed task's result)."""
    c = WeverClient(ctx)
    with ctx.subcheck("an offered task"):
        task = c.new_task("offered")
        expect_refused(ctx, c.call("delete_task_content", {"task_id": task.id}, SENDER),
                       "delete_task_content of an offered task")
    for who, state in ((SENDER, "completed"), (RECIPIENT, "declined")):
        with ctx.subcheck(f"a {state} task, by the {'sender' if who == SENDER else 'recipient'}"):
            task = c.new_task(state)
            expect_result(ctx, c.call("delete_task_content", {"task_id": task.id}, who),
                          "delete_task_content")
            other = RECIPIENT if who == SENDER else SENDER
            reply = c.get(task.id, other)
            ctx.expect(not reply.ok or not marked(reply.result, task.marker),
                       "after delete_task_content the other participant still reads the content: "
                       f"{reply.describe()}")


@check_delete_content.fault
def delete_content_one_side(ref: WeverReference) -> None:
    """delete_task_content erases the task for the caller only: the other participant
    still reads its task data and result."""
    erased: set[tuple[str, str]] = set()

    @replaces(ref.act_delete_task_content)
    def delete(original: Any, call: Call) -> dict[str, Any]:
        task = ref.participant_task(str(call.caller), call.args["task_id"])
        if (str(call.caller), task["task_id"]) in erased:
            raise RelayError("NOT_FOUND", f"no task {task['task_id']} of yours")
        if not ref.can_delete_content(task):
            raise RelayError("INVALID_STATE", f"a {task['state']} task is not terminal")
        erased.add((str(call.caller), task["task_id"]))
        return {"task_id": task["task_id"], "content_deleted": True}

    @replaces(ref.act_get_task)
    def get_task(original: Any, call: Call) -> dict[str, Any]:
        if (str(call.caller), call.args["task_id"]) in erased:
            raise RelayError("NOT_FOUND", f"no task {call.args['task_id']} of yours")
        result: dict[str, Any] = original(call)
        return result


# ----------------------------------------------------------------------------------
# task data and results within task_or_result_bytes
# ----------------------------------------------------------------------------------
def data_of_bytes(n: int, marker: str = "") -> dict[str, Any]:
    """Task data whose compact JSON is exactly ``n`` bytes of UTF-8 (one ASCII string,
    starting with ``marker``)."""
    shell = len(json.dumps({"m": ""}, separators=(",", ":")))
    return {"m": marker + "x" * (n - shell - len(marker))}


# The manifest says "task_or_result_bytes" without saying how data is measured: as compact
# JSON, or as written with a space after each separator (one more byte for this data). The
# MUST accepts both: data that fits under either reading is served, data over the limit
# under either reading is refused; the exact edge between them is the reading's (variant
# size_with_spaces shows the other).
FITS_EITHER_WAY, OVER_EITHER_WAY = -1, 1


@requirement(id="WEVER-LIMIT-TASK-BYTES", level="MUST",
             title="Task data within {limits[task_or_result_bytes]} bytes is delivered, over it refused "
                   "(either way of counting)",
             source=at("/limits/task_or_result_bytes"),
             faults=["task_bytes_unchecked", "task_bytes_off_by_one"])
def check_task_bytes(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    limit = ctx.limit("task_or_result_bytes")
    c.allow(SENDER, RECIPIENT)
    fits, over = limit + FITS_EITHER_WAY, limit + OVER_EITHER_WAY
    with ctx.subcheck(f"task data of {fits} bytes (compact JSON; {fits + 1} written with spaces)"):
        c.task_of(c.send(SENDER, RECIPIENT, data=data_of_bytes(fits)),
                  f"send_task with {fits} bytes of task data")
    with ctx.subcheck(f"task data of {over} bytes"):
        watch = c.watch(RECIPIENT)
        marker = fresh_marker()
        expect_refused(ctx, c.send(SENDER, RECIPIENT, data=data_of_bytes(over, marker)),
                       f"send_task with {over} bytes of task data")
        watch.nothing_delivered(marker, "an oversized task")


@check_task_bytes.fault
def task_bytes_unchecked(ref: WeverReference) -> None:
    """Task data of any size is delivered (the result limit still holds)."""
    @replaces(ref.check_size)
    def check_size(original: Any, data: Any, what: str) -> None:
        if what != "task data":
            original(data, what)


@check_task_bytes.fault
def task_bytes_off_by_one(ref: WeverReference) -> None:
    """Task data one byte over task_or_result_bytes is still delivered."""
    @replaces(ref.check_size)
    def check_size(original: Any, data: Any, what: str) -> None:
        if what != "task data" or ref.task_bytes(data) > ref.limit("task_or_result_bytes") + 1:
            original(data, what)


@requirement(id="WEVER-LIMIT-RESULT-BYTES", level="MUST",
             title="A result within {limits[task_or_result_bytes]} bytes is recorded, over it refused "
                   "(either way of counting)",
             source=at("/limits/task_or_result_bytes"), faults=["result_bytes_unchecked"])
def check_result_bytes(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    limit = ctx.limit("task_or_result_bytes")
    fits, over = limit + FITS_EITHER_WAY, limit + OVER_EITHER_WAY
    with ctx.subcheck(f"a result of {over} bytes"):
        task = c.new_task("accepted")
        expect_refused(ctx,
                       c.call("complete_task", {"task_id": task.id, "result": data_of_bytes(over)},
                              RECIPIENT),
                       f"complete_task with a {over}-byte result")
    with ctx.subcheck(f"a result of {fits} bytes"):
        task = c.new_task("accepted")
        c.task_of(c.call("complete_task", {"task_id": task.id, "result": data_of_bytes(fits)}, RECIPIENT),
                  f"complete_task with a {fits}-byte result", known=task.id)


@check_result_bytes.fault
def result_bytes_unchecked(ref: WeverReference) -> None:
    """A result of any size is recorded (the task data limit still holds)."""
    @replaces(ref.check_size)
    def check_size(original: Any, data: Any, what: str) -> None:
        if what != "result":
            original(data, what)


# ----------------------------------------------------------------------------------
# the lifecycle as a state machine (machine.py)
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-LIFECYCLE", level="MUST",
             title="Tasks move through offered, accepted, completed, declined and cancelled as the flow "
                   "says, delivered only while the recipient allows the sender (stateful, three mailboxes)",
             source=at("/flow"),
             faults=["complete_before_accept", "delivered_without_grant", "revoke_cancels_delivered"])
def check_lifecycle(ctx: CheckContext) -> None:
    """The stateful machine (machine.py); without control, fewer runs of it (each task is
    spent from the day's quotas of the run's mailboxes)."""
    if ctx.run.live:
        ctx.budget = replace(ctx.budget, machines=min(ctx.budget.machines, LIVE_MACHINES))
    ctx.run_machine(WeverMachine)  # a call the run cannot afford ends it untested (verdict_ends_example)


@check_lifecycle.fault
def revoke_cancels_delivered(ref: WeverReference) -> None:
    """Revoking a sender also cancels the tasks it already delivered."""
    @replaces(ref.remove_grant)
    def remove_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        for task in ref.s["tasks"].values():
            pair = (task["recipient_id"], task["sender_id"])
            if pair == (recipient_id, sender_id) and task["state"] == OFFERED:
                ref.set_state(task, CANCELLED)
        return bool(original(recipient_id, sender_id))
