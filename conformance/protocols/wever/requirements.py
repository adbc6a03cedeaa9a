"""The Wever Connect requirement table. Actions, input schemas, limits, the A2A
adapter's rules and the MCP versions come from specs/wever-connect/connect-manifest.json;
error codes, statuses and result shapes are the profile's (profiles/wever-connect.yaml):
a MUST asks what the manifest says (refused, delivered, visible), the SHOULD beside it
the profile's code."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from conformance import locate
from conformance.check import CheckContext, Untested
from conformance.checks import auth, idempotency
from conformance.checks.errors import (
    expect_mapping,
    expect_refused,
    expect_result,
    refused_as,
)
from conformance.checks.inputs import invalid_code_everywhere, invalid_inputs_rejected, valid_inputs_accepted
from conformance.declare import slug
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance
from conformance.locate import Search
from conformance.model import Profile, Requirement, Source
from conformance.protocols.mcp.surface import McpSurface
from conformance.protocols.wever import lifetimes, live, quotas, shaped, surfaces
from conformance.protocols.wever.client import (
    MAIN,
    MARKER_FIELD,
    RECIPIENT,
    SENDER,
    STRANGER,
    WeverClient,
    dig,
    fresh_key,
    fresh_marker,
    rpc_error,
    served_rpc,
)
from conformance.protocols.wever.machine import LIVE_MACHINES, WeverMachine
from conformance.protocols.wever.reads import contains, digests, marked, named_values
from conformance.table import Table
from conformance.transport.binding import RawToken, Reply
from conformance.transport.http import HttpReply, json_excerpt

REJECTION = "VALIDATION_ERROR"
HOUR_S = 3600
# ----------------------------------------------------------------------------------
# every action: valid and invalid inputs
# ----------------------------------------------------------------------------------
class InputWorld:
    """Real objects for generated inputs to name, set up once per check, so that an
    input is judged on its own merits: an invalid one must be refused for being
    invalid, not because the task it names does not exist. Per action: who calls it
    and the ids its properties take."""

    def __init__(self, c: WeverClient, action: str) -> None:
        self.c, self.action = c, action
        self.ids: dict[str, Any] = {}
        self.who: Any = c.caller_for(action)
        if action in ("accept_task", "decline_task", "complete_task", "cancel_task", "get_task", "delete_task_content"):
            state = {"complete_task": "accepted", "delete_task_content": "completed"}.get(action, "offered")
            self.ids["task_id"] = c.new_task(state).id
            self.who = RECIPIENT if action in ("accept_task", "decline_task", "complete_task") else SENDER
        elif action == "respond_connection_request":
            self.ids["request_id"] = open_requests(c, self.requester())
            self.who = RECIPIENT
        elif action == "request_connection":
            c.advertise(RECIPIENT, accepts_connection_requests=True)
            self.ids["recipient_id"] = c.mailbox(RECIPIENT)
        elif action == "send_task":
            c.allow(SENDER, RECIPIENT)
            self.ids.update(recipient_id=c.mailbox(RECIPIENT), capability=c.capability)
        elif action == "allow_sender":
            self.ids["sender_id"] = c.mailbox(SENDER)
            self.who = RECIPIENT

    def requester(self) -> Any:
        """Who asks for the connection a response answers: a response allows or denies (and a
        denial revokes that pair's grant), so a seeded mailbox of the check's own where
        control seeds one, else the check's sender (whose grant is put back: live.py)."""
        if self.c.ctx.run.control_path:
            from conformance.protocols.wever.quotas import seed

            return seed(self.c, 1)[0][1]
        return SENDER

    def caller(self) -> Any:
        """close_mailbox closes its caller, never one of the configured mailboxes: a fresh
        seeded mailbox each time (with control), else one of the run's own (``caller_for``:
        once closed, its calls are refused for their credential and set aside)."""
        if self.action == "close_mailbox" and self.c.ctx.run.control_path:
            from conformance.protocols.wever.quotas import seed

            return seed(self.c, 1)[0][1]
        return self.who

    def name(self, value: Any, keep: str = "\0") -> Any:
        """``value`` naming the world's objects where it names any (not under ``keep``,
        the pointer an invalid input breaks)."""
        if not isinstance(value, dict):
            return value
        return {k: (self.ids[k] if k in self.ids and not keep.startswith(f"/{k}") else v) for k, v in value.items()}

    def call(self, params: Any) -> Reply:
        if self.who is None or (self.action not in self.c.mcp_tools() and self.c.binding.kind == "mcp-tools"):
            return self.c.input_call(self.action, params)
        return self.c.call(self.action, params, self.caller())


# Actions whose valid inputs are sent naming the check's objects too (InputWorld). Not
# allow_sender: named, it would grant or revoke one run mailbox at another; its generated
# sender ids are served as they are.
NAMING = ("accept_task", "decline_task", "complete_task", "cancel_task", "get_task", "delete_task_content",
          "request_connection", "respond_connection_request", "send_task")
# Actions that use up the object they name (a declined, cancelled, completed task, or one
# whose content is gone, is not in that state again): a fresh one for each draw, up to this many.
CONSUMING = ("decline_task", "cancel_task", "complete_task", "delete_task_content")
FRESH_OBJECTS = 3
# Without control, tasks are spent from the day's quotas of the run's mailboxes: one world
# per consuming action, and the draws of send_task that name the world's recipient (each
# one a task delivered) are this many; the other draws are sent as generated.
LIVE_OBJECTS, LIVE_NAMED_SENDS = 1, 2


def valid_inputs(action: str) -> Callable[[CheckContext], None]:
    """Generated inputs valid under the action's inputSchema are never refused as
    invalid: sent as generated (ids of objects that need not exist: a missing object is
    a refusal of another kind, flagged by the binding) and naming the objects the check
    made (``InputWorld``), so that some input is served: the row passes only on inputs
    that were. An action that uses up what it names gets a fresh world per draw (then
    the last again: its refusal, say a task no longer offered, is the manifest's own)."""
    def check(ctx: CheckContext) -> None:
        c = WeverClient(ctx)
        op = ctx.profile.operations[action]
        if action == "register_mailbox" and c.live:  # each served draw is a registration of the source's day
            left = ctx.run.quotas.room(live.REGISTRATIONS_SOURCE, live.SOURCE)
            if left < 1:
                raise Untested(f"would exceed {live.REGISTRATIONS_SOURCE} for {live.SOURCE}: this run registered "
                               f"{ctx.run.quotas.spent[(live.REGISTRATIONS_SOURCE, live.SOURCE)]}", "quota")
            ctx.budget = replace(ctx.budget, examples=min(ctx.budget.examples, left))
        if action == "close_mailbox":  # it closes its caller: a mailbox of the check's own
            valid_inputs_accepted(ctx, op, InputWorld(c, action).call, (REJECTION,), catalogued=False)
            return
        if action not in NAMING:
            valid_inputs_accepted(ctx, op, lambda v: c.input_call(action, v), (REJECTION,), catalogued=False)
            return
        objects = (LIVE_OBJECTS if c.live else FRESH_OBJECTS) if action in CONSUMING else 1
        worlds = [InputWorld(c, action) for _ in range(objects)]
        drawn = itertools.count()

        def in_world(value: Any) -> Any:
            index = next(drawn)
            if c.live and action == "send_task" and index >= LIVE_NAMED_SENDS:
                return value
            return worlds[min(index, len(worlds) - 1)].name(value)

        valid_inputs_accepted(ctx, op, worlds[0].call, (REJECTION,), catalogued=False, in_world=in_world)
    return check


ID_PROPERTIES = ("task_id", "request_id", "recipient_id", "sender_id")


def valid_input_faults(schema: dict[str, Any]) -> tuple[str, ...]:
    """What a VALID row catches: ids of missing objects refused as invalid, where the
    action takes one; an input of only its required properties refused, where not."""
    return ("unknown_ids_invalid",) if set(schema.get("properties") or {}) & set(ID_PROPERTIES) else ("minimal_input_rejected",)


def invalid_inputs(action: str, strict: bool = False) -> Callable[[CheckContext], None]:
    """Inputs breaking one keyword of the inputSchema are refused and change nothing
    (``strict``: with the profile's VALIDATION_ERROR)."""
    def check(ctx: CheckContext) -> None:
        c = WeverClient(ctx)
        world = InputWorld(c, action)
        op = ctx.profile.operations[action]

        validator = validator_for(op.params_schema)

        def named(bad: InvalidInstance) -> Any:
            """The world's ids outside the break (the engine's unbroken control, a valid
            instance, gets them all); an input that naming would mend is sent as drawn."""
            if validator.is_valid(bad.instance):
                return world.name(bad.instance)
            instance = world.name(bad.instance, keep=bad.violation.pointer)
            return bad.instance if validator.is_valid(instance) else instance

        invalid_inputs_rejected(ctx, op, world.call, REJECTION if strict else None,
                                state=c.snapshot if ctx.run.control_path and action != "close_mailbox" else None, prepare=named)
    return check


# ----------------------------------------------------------------------------------
# auth and mailboxes
# ----------------------------------------------------------------------------------
def bearer_actions(ctx: CheckContext) -> dict[str, Callable[[Any], Reply]]:
    """Every action with requires_bearer, called with a minimal valid input."""
    c = WeverClient(ctx, reset=False)
    task_id = "task_" + "0" * 32
    inputs = {"accept_task": {"task_id": task_id}, "allow_sender": {"sender_id": c.mailbox(STRANGER), "allowed": True},
              "cancel_task": {"task_id": task_id}, "complete_task": {"task_id": task_id, "result": {}},
              "decline_task": {"task_id": task_id}, "delete_task_content": {"task_id": task_id}, "get_task": {"task_id": task_id},
              "request_connection": {"recipient_id": c.mailbox(RECIPIENT)},
              "respond_connection_request": {"request_id": "conn_" + "0" * 32, "allowed": False},
              "send_task": c.task_body(), "update_mailbox": {"label": "x", "capabilities": [], "discoverable": False}}
    def caller(name: str) -> Callable[[Any], Reply]:
        return lambda who: c.call(name, inputs.get(name, {}), who)

    # close_mailbox too: refused without a valid token, it closes nothing
    return {name: caller(name) for name, action in ctx.profile.spec["actions"].items() if action.get("requires_bearer")}


def check_open_actions(ctx: CheckContext) -> None:
    """Actions without requires_bearer serve a caller with no token."""
    c = WeverClient(ctx)
    for name, action in ctx.profile.spec["actions"].items():
        if action.get("requires_bearer"):
            continue
        with ctx.subcheck(name):
            params = {"label": "conformance open"} if name == "register_mailbox" else {}
            expect_result(ctx, c.open_call(name, params), f"{name} without a bearer token")


def check_register_token(ctx: CheckContext) -> None:
    """register_mailbox hands back the token in access_setup.token_response_field (the one
    answer field the manifest names: read wherever it sits); it works as a Bearer token;
    connection requests start disabled (a request to the new mailbox is refused); the
    mailbox is private (find_peers names neither its id nor its label)."""
    c = WeverClient(ctx)
    setup = ctx.profile.spec["protocols"]["a2a"]["access_setup"]
    field = c.vocab.token_field
    label = f"conformance {fresh_key()[:12]}"
    created = expect_result(ctx, c.open_call("register_mailbox", {"label": label, "capabilities": [c.capability]}),
                            "register_mailbox")
    tokens = [t for t in named_values(created, field) if isinstance(t, str) and t]
    if not tokens:
        ctx.fail("register_mailbox: " + Search(f"a nonempty string in member {field} (access_setup.token_response_field)")
                 .looked_for(created), kind="malformed_answer")
    reply = ctx.http.request("POST", ctx.profile.spec["routes"]["actions"].replace("{action}", "get_mailbox"),
                             headers={"Authorization": f"{setup['token_type']} {tokens[0]}", "Content-Type": "application/json"},
                             content="{}")
    mine = reply.json()
    ctx.expect(reply.status == 200 and isinstance(mine, dict), f"get_mailbox with the new token: HTTP {reply.status} {reply.text[:200]}",
               kind="rejected_valid")
    found = c.mailbox_ids(created) or c.mailbox_ids(mine)
    if not found:
        ctx.fail("register_mailbox and get_mailbox: " + Search(f"the new mailbox's id (pattern {c.vocab.mailbox_id.pattern})")
                 .looked_for(created), kind="malformed_answer")
    new_id = found[0]
    with ctx.subcheck("connection requests start disabled"):
        expect_refused(ctx, c.call("request_connection", {"recipient_id": new_id}, SENDER),
                       "request_connection to a new mailbox that never enabled connection requests")
    with ctx.subcheck("the profile is private"):
        peers = expect_result(ctx, c.open_call("find_peers", {}), "find_peers")
        ctx.expect(not marked(peers, label) and not locate.holds(peers, new_id),
                   f"find_peers lists a mailbox registered without discoverable=true ({new_id}): profiles are private until then")


# ----------------------------------------------------------------------------------
# permissions and the task flow
# ----------------------------------------------------------------------------------
def check_send_needs_grant(ctx: CheckContext, strict: bool = False) -> None:
    """Without the recipient's explicit grant nothing is delivered."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT)
    c.ungranted(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    refused_as(ctx, c.send(SENDER, RECIPIENT, data=data), "NOT_ALLOWED", "send_task without the recipient's grant", strict)
    watch.nothing_delivered(marker, "a send_task refused for want of a grant", kind="auth_not_enforced")
    with ctx.subcheck("a revoked grant"):
        c.grant(SENDER, RECIPIENT)
        expect_result(ctx, c.grant(SENDER, RECIPIENT, allowed=False), "allow_sender allowed=false")
        data, marker = c.marked()
        refused_as(ctx, c.send(SENDER, RECIPIENT, data=data), "NOT_ALLOWED", "send_task after the grant was revoked", strict)
        watch.nothing_delivered(marker, "a send_task after the revocation", kind="auth_not_enforced")


def check_send_needs_capability(ctx: CheckContext, strict: bool = False) -> None:
    """A capability the recipient does not advertise is not delivered, grant or not."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    refused_as(ctx, c.send(SENDER, RECIPIENT, data=data, capability="conformance.not.advertised"), "NOT_ALLOWED",
               "send_task for a capability the recipient does not advertise", strict)
    watch.nothing_delivered(marker, "a send_task for a capability the recipient does not advertise", kind="auth_not_enforced")


def check_send_offered(ctx: CheckContext) -> None:
    """A granted send_task creates an offered task that the recipient sees in its inbox."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    task = c.task_of(c.send(SENDER, RECIPIENT), "send_task")
    state = c.state_after(task, "send_task")
    ctx.expect(state == c.vocab.state("offered"), f"a new task is {state!r}, the flow says offered")
    ctx.expect(task.id in c.inbox_ids(RECIPIENT), f"the offered task {task.id} is not in the recipient's inbox")
    ctx.expect(task.id not in c.inbox_ids(STRANGER), "another mailbox's inbox shows the task", kind="auth_not_enforced")


def check_accept_repeat(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    task = c.new_task("offered")
    accepted = c.vocab.state("accepted")
    states = []
    for attempt in ("accept_task", "accept_task again"):
        seen = c.task_of(c.call("accept_task", {"task_id": task.id}, RECIPIENT), attempt, known=task.id)
        states.append(c.state_after(seen, attempt, RECIPIENT))
    ctx.expect(states == [accepted, accepted],
               f"accept_task answered {states[0]!r} then {states[1]!r}; a repeated acceptance returns the accepted state")


def check_decline(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    task = c.new_task("offered")
    declined = c.task_of(c.call("decline_task", {"task_id": task.id}, RECIPIENT), "decline_task", known=task.id)
    state = c.state_after(declined, "decline_task", RECIPIENT)
    ctx.expect(state == c.vocab.state("declined"), f"decline_task answered state {state!r}")
    ctx.expect(task.id not in c.inbox_ids(RECIPIENT), "a declined task is still in the inbox (offered or accepted only)")
    expect_refused(ctx, c.call("accept_task", {"task_id": task.id}, RECIPIENT), "accept_task of a declined task")


def check_cancel_offered_only(ctx: CheckContext, strict: bool = False) -> None:
    """The sender cancels only while offered; accepted work cannot be cancelled; the
    recipient never cancels. A repeated cancel of a cancelled task answers it."""
    c = WeverClient(ctx)
    with ctx.subcheck("offered, by the sender"):
        task = c.new_task("offered")
        done = c.task_of(c.call("cancel_task", {"task_id": task.id}, SENDER), "cancel_task of an offered task", known=task.id)
        state = c.state_after(done, "cancel_task")
        ctx.expect(state == c.vocab.state("cancelled"), f"cancel_task answered state {state!r}")
    with ctx.subcheck("offered, by the recipient"):
        task = c.new_task("offered")
        refused_as(ctx, c.call("cancel_task", {"task_id": task.id}, RECIPIENT), "NOT_ALLOWED", "cancel_task by the recipient", strict)
    with ctx.subcheck("accepted, by the sender"):
        task = c.new_task("accepted")
        refused_as(ctx, c.call("cancel_task", {"task_id": task.id}, SENDER), "INVALID_STATE", "cancel_task of an accepted task", strict)
        state = c.state_of(task.id, SENDER)
        ctx.expect(state == c.vocab.state("accepted"), f"after a refused cancel the task is {state!r}", kind="state_changed")


def check_complete_result(ctx: CheckContext) -> None:
    """Both participants recover the completed result with an integrity digest (a string
    of 128 bits or more, hex or base64, that the accepted task did not show: the
    manifest names no algorithm, encoding or field)."""
    c = WeverClient(ctx)
    task = c.new_task("accepted")
    plain = (c.vocab.task_id, c.vocab.mailbox_id, c.vocab.request_id)
    before = set(digests(expect_result(ctx, c.get(task.id, SENDER), "get_task of the accepted task"), plain))
    result = {"answer": "conformance result", "n": 1, MARKER_FIELD: task.marker}
    done = c.task_of(c.call("complete_task", {"task_id": task.id, "result": result}, RECIPIENT), "complete_task", known=task.id)
    state = c.state_after(done, "complete_task", RECIPIENT)
    ctx.expect(state == c.vocab.state("completed"), f"complete_task answered state {state!r}")
    for who in (SENDER, RECIPIENT):
        with ctx.subcheck(f"get_task as {who}"):
            seen = expect_result(ctx, c.get(task.id, who), f"get_task as {who}")
            ctx.expect(contains(seen, result), f"get_task as {who} does not show the result {result!r}: {json_excerpt(seen)}")
            ctx.expect(set(digests(seen, plain)) - before, f"get_task as {who}: no integrity digest of the result "
                       f"(looked for a new hex or base64 string of 128 bits or more): {json_excerpt(seen)}", kind="schema_mismatch")
    with ctx.subcheck("complete before accept"):
        offered = c.new_task("offered")
        expect_refused(ctx, c.call("complete_task", {"task_id": offered.id, "result": result}, RECIPIENT),
                       "complete_task of an offered task")


def check_task_participants(ctx: CheckContext, strict: bool = False) -> None:
    """Only the sender and the recipient read a task: a task id alone grants no access."""
    c = WeverClient(ctx)
    task = c.new_task("offered")
    refused_as(ctx, c.get(task.id, STRANGER), "NOT_FOUND", "get_task by a mailbox that is no participant", strict)
    for who in (SENDER, RECIPIENT):
        c.task_of(c.get(task.id, who), f"get_task as {who}", known=task.id)


def check_delete_content(ctx: CheckContext) -> None:
    """Either participant erases a terminal task's content, for both; a task that is
    not terminal keeps it. Content is what carries the task's marker (its data, and a
    completed task's result)."""
    c = WeverClient(ctx)
    with ctx.subcheck("an offered task"):
        task = c.new_task("offered")
        expect_refused(ctx, c.call("delete_task_content", {"task_id": task.id}, SENDER), "delete_task_content of an offered task")
    for who, state in ((SENDER, "completed"), (RECIPIENT, "declined")):
        with ctx.subcheck(f"a {state} task, by the {'sender' if who == SENDER else 'recipient'}"):
            task = c.new_task(state)
            expect_result(ctx, c.call("delete_task_content", {"task_id": task.id}, who), "delete_task_content")
            other = RECIPIENT if who == SENDER else SENDER
            reply = c.get(task.id, other)
            ctx.expect(not reply.ok or not marked(reply.result, task.marker),
                       f"after delete_task_content the other participant still reads the content: {reply.describe()}")


# ----------------------------------------------------------------------------------
# idempotency of send_task
# ----------------------------------------------------------------------------------
def send_with_key(ctx: CheckContext) -> idempotency.Send:
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    bodies = {"a": c.marked()[0], "b": c.marked()[0]}
    return lambda key, body: c.send(SENDER, RECIPIENT, data=bodies[body], key=key)


def check_send_replay(ctx: CheckContext) -> None:
    """send_task with the same Idempotency-Key and body names the same task, and the
    inbox holds one task carrying its marker (the check counts only its own)."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    key = fresh_key()
    first = c.task_of(c.send(SENDER, RECIPIENT, data=data, key=key), "send_task")
    again = c.task_of(c.send(SENDER, RECIPIENT, data=data, key=key), "the identical send_task again")
    ctx.expect(again.id == first.id, f"an identical replay of send_task answered task {again.id}, the first answered {first.id}",
               kind="state_changed")
    carried = watch.carrying(marker)
    ctx.expect(carried == {first.id}, f"after an identical replay the inbox holds {len(carried)} tasks with its data "
               f"({sorted(carried)}), expected exactly {first.id}", kind="state_changed")


def concurrent_sends(copies: int) -> Callable[[CheckContext], None]:
    """``copies`` identical send_task calls with one key at once: one task."""
    def check(ctx: CheckContext) -> None:
        c = WeverClient(ctx)
        c.allow(SENDER, RECIPIENT)
        watch = c.watch(RECIPIENT)
        data, marker = c.marked()
        key = fresh_key()
        replies = idempotency.at_once(copies, lambda: c.send(SENDER, RECIPIENT, data=data, key=key))
        what = f"send_task ({copies} copies at once)"
        served = [reply for reply in replies if reply.ok]
        if not served:
            c.task_of(replies[0], what)  # a finding, or blocked when refused for a quota
        # judged on the copies served (a relay making duplicates meets the sender's quota
        # before the last copy: those refusals are about the quota, the duplicates are not)
        named = {c.task_of(reply, what).id for reply in served}
        carried = watch.carrying(marker)
        ctx.expect(len(named) == 1, f"{copies} identical send_task at once answered tasks {sorted(named)}", kind="state_changed")
        ctx.expect(carried == named, f"{copies} identical send_task at once left {len(carried)} tasks with their data "
                   f"({sorted(carried)}), expected exactly one", kind="state_changed")
        for reply in replies:
            if not reply.ok:
                c.task_of(reply, what)  # every copy names the task
    return check


def check_key_required(ctx: CheckContext, strict: bool = False) -> None:
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    reply = c.via(c.binding, "send_task", c.task_body(data=data), c.label(SENDER), None)
    refused_as(ctx, reply, "IDEMPOTENCY_KEY_REQUIRED", "send_task without an Idempotency-Key", strict)
    watch.nothing_delivered(marker, "send_task without a key")


# ----------------------------------------------------------------------------------
# limits
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


def check_task_bytes(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    limit = ctx.limit("task_or_result_bytes")
    c.allow(SENDER, RECIPIENT)
    fits, over = limit + FITS_EITHER_WAY, limit + OVER_EITHER_WAY
    with ctx.subcheck(f"task data of {fits} bytes (compact JSON; {fits + 1} written with spaces)"):
        c.task_of(c.send(SENDER, RECIPIENT, data=data_of_bytes(fits)), f"send_task with {fits} bytes of task data")
    with ctx.subcheck(f"task data of {over} bytes"):
        watch = c.watch(RECIPIENT)
        marker = fresh_marker()
        expect_refused(ctx, c.send(SENDER, RECIPIENT, data=data_of_bytes(over, marker)), f"send_task with {over} bytes of task data")
        watch.nothing_delivered(marker, "an oversized task")


def check_result_bytes(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    limit = ctx.limit("task_or_result_bytes")
    fits, over = limit + FITS_EITHER_WAY, limit + OVER_EITHER_WAY
    with ctx.subcheck(f"a result of {over} bytes"):
        task = c.new_task("accepted")
        expect_refused(ctx, c.call("complete_task", {"task_id": task.id, "result": data_of_bytes(over)}, RECIPIENT),
                       f"complete_task with a {over}-byte result")
    with ctx.subcheck(f"a result of {fits} bytes"):
        task = c.new_task("accepted")
        c.task_of(c.call("complete_task", {"task_id": task.id, "result": data_of_bytes(fits)}, RECIPIENT),
                  f"complete_task with a {fits}-byte result", known=task.id)


def a2a_concurrent(ctx: CheckContext) -> None:
    """The same SendMessage (messageId and data) sent 8 times at once makes one task."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    params = c.a2a_message(data=data)
    replies = idempotency.at_once(8, lambda: c.a2a_call("SendMessage", params))
    named = {dig(r.json(), "result", "task", "id") for r in replies}
    ctx.expect(len(named) == 1 and None not in named, f"8 identical SendMessage at once answered tasks {sorted(map(str, named))}",
               kind="state_changed")
    carried = watch.carrying(marker)
    ctx.expect(carried == named, f"8 identical SendMessage at once left {len(carried)} tasks with their data ({sorted(carried)})",
               kind="state_changed")


# ----------------------------------------------------------------------------------
# connection requests
# ----------------------------------------------------------------------------------
def check_conn_disabled(ctx: CheckContext, strict: bool = False) -> None:
    c = WeverClient(ctx)
    if not c.new_pair(SENDER, RECIPIENT):  # the relay returns a pair's retained request, opted in or not
        raise Untested("without control, a connection request of these mailboxes may be retained from an earlier run "
                       "(an exact-pair retry returns it): no pair with a mailbox of the run's own is left unasked")
    c.advertise(RECIPIENT, accepts_connection_requests=False)
    refused_as(ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER), "REQUESTS_DISABLED",
               "request_connection to a mailbox that has not opted in", strict)


def open_requests(c: WeverClient, sender: str | RawToken = SENDER) -> str:
    """The recipient opts into connection requests; ``sender`` asks; the request's id.
    Without control the pair may hold a request an earlier run made (retained, maybe
    decided, for 24 hours): the request must be pending, as the recipient's list shows."""
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    new = c.new_pair(sender, RECIPIENT)
    with c.ctx.setup("request_connection to an opted-in mailbox", by="WEVER-CONN-LIST"):
        request_id = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, sender), "request_connection")
    if not new:
        still_pending(c, request_id)
    return request_id


def still_pending(c: WeverClient, request_id: str, recipient: str = RECIPIENT) -> None:
    """Without control, a request of a pair that may have asked before (``new_pair``) must
    be pending to be the check's own: the relay returns the pair's retained request
    (perhaps decided) for connection_request_hours. A set-up step that blocks (the pair's
    history is not the relay's fault): the recipient's pending requests name it."""
    if not c.live:
        return
    with c.ctx.setup("the request is a pending one (the recipient's list names it)"):
        listed = expect_result(c.ctx, c.call("list_connection_requests", {}, recipient), "list_connection_requests")
        if not locate.holds(listed, request_id):
            c.ctx.fail(f"request_connection answered {request_id}, which the recipient's pending requests do not name: "
                       "the pair holds a retained request that is no longer pending (a request lives "
                       f"{c.ctx.profile.limits['connection_request_hours'].value} hours)", kind="state_changed")


def check_conn_no_grant(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    c.ungranted(SENDER, RECIPIENT)
    open_requests(c)
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after a connection request nobody answered")


def check_conn_list(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    request_id = open_requests(c)
    listed = expect_result(ctx, c.call("list_connection_requests", {}, RECIPIENT), "list_connection_requests")
    ctx.expect(locate.holds(listed, request_id),
               f"list_connection_requests does not show the pending request {request_id} addressed to the caller: {json_excerpt(listed)}")
    other = expect_result(ctx, c.call("list_connection_requests", {}, STRANGER), "list_connection_requests as another")
    ctx.expect(not locate.holds(other, request_id), "another mailbox's list shows the request", kind="auth_not_enforced")


def check_conn_retry(ctx: CheckContext) -> None:
    """Exact-pair retries return the retained request (the same id), a denial too: it
    stays the same request, and it grants nothing."""
    c = WeverClient(ctx)
    request_id = open_requests(c)
    again = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER), "request_connection again")
    ctx.expect(again == request_id, f"an exact-pair retry made a new request {again} beside {request_id}")
    expect_result(ctx, c.call("respond_connection_request", {"request_id": request_id, "allowed": False}, RECIPIENT),
                  "respond_connection_request allowed=false")
    denied = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER), "request_connection after a denial")
    ctx.expect(denied == request_id, f"a retry after a denial must return the retained denial {request_id}, not {denied}")
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after the retained denial")


def check_conn_respond(ctx: CheckContext) -> None:
    """Only the recipient answers; allowing grants; denying revokes the pair's current
    permission; a repeated matching response changes neither a later revocation nor a
    later grant (judged by what the sender can send)."""
    c = WeverClient(ctx)
    c.ungranted(SENDER, RECIPIENT)
    with ctx.subcheck("allowing grants; a repeat keeps a later revocation"):
        request_id = open_requests(c)
        answer = {"request_id": request_id, "allowed": True}
        with ctx.subcheck("the sender answering its own request"):
            reply = c.call("respond_connection_request", answer, SENDER)
            expect_refused(ctx, reply, "respond_connection_request by the sender of the request")
            expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after the sender answered its own request")
        expect_result(ctx, c.call("respond_connection_request", answer, RECIPIENT), "respond_connection_request allowed=true")
        c.task_of(c.send(SENDER, RECIPIENT), "send_task after the request was allowed")
        expect_result(ctx, c.grant(SENDER, RECIPIENT, allowed=False), "allow_sender allowed=false (a later revocation)")
        expect_result(ctx, c.call("respond_connection_request", answer, RECIPIENT), "the same response again")
        expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after the revocation and the repeated response")
    with ctx.subcheck("denying revokes; a repeat keeps a later grant"):
        request_id = open_requests(c, sender=STRANGER)
        denial = {"request_id": request_id, "allowed": False}
        expect_result(ctx, c.grant(STRANGER, RECIPIENT), "allow_sender of the requesting sender (a direct grant)")
        c.task_of(c.send(STRANGER, RECIPIENT), "send_task with the direct grant")
        expect_result(ctx, c.call("respond_connection_request", denial, RECIPIENT), "respond_connection_request allowed=false")
        expect_refused(ctx, c.send(STRANGER, RECIPIENT), "send_task after the denial (denying revokes the pair's permission)")
        expect_result(ctx, c.grant(STRANGER, RECIPIENT), "allow_sender after the denial (a later grant)")
        expect_result(ctx, c.call("respond_connection_request", denial, RECIPIENT), "the same denial again")
        c.task_of(c.send(STRANGER, RECIPIENT), "send_task after the later grant and the repeated denial")


# ----------------------------------------------------------------------------------
# the A2A adapter (its answers are A2A 1.0 objects: the members are A2A's names)
# ----------------------------------------------------------------------------------
def a2a_task(ctx: CheckContext, reply: HttpReply, what: str, wrapped: bool = True) -> dict[str, Any]:
    """The A2A Task of an answer: result.task for SendMessage, the result itself for
    GetTask and CancelTask (protocols.a2a.*.result_shape)."""
    result = served_rpc(ctx, reply, what)
    task = dig(result, "task") if wrapped else result
    task = expect_mapping(ctx, task, f"{what} task", ("id", "status"))
    expect_mapping(ctx, task["status"], f"{what} task status")
    return task


def a2a_state(task: dict[str, Any]) -> Any:
    return dig(task, "status", "state")


def check_a2a_send(ctx: CheckContext) -> None:
    """An example-shaped SendMessage creates a task that starts submitted, in result.task."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    task = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message()), "SendMessage")
    mapping = c.a2a["state_mapping"]
    ctx.expect(a2a_state(task) == mapping["offered"], f"a new A2A task is {a2a_state(task)!r}, expected {mapping['offered']}")
    ctx.expect(task["id"] in c.inbox_ids(RECIPIENT), "the A2A task is not in the recipient's Connect inbox")


def check_a2a_version(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    for version in (None, "0.3", "2.0"):
        with ctx.subcheck(f"A2A-Version {version or 'missing'}"):
            data, marker = c.marked()
            reply = c.a2a_call("SendMessage", c.a2a_message(data=data), version=version)
            ctx.expect(rpc_error(reply) is not None or reply.status >= 400,
                       f"SendMessage with A2A-Version {version or 'missing'} was served: HTTP {reply.status} {reply.text[:200]}",
                       kind="accepted_invalid")
            watch.nothing_delivered(marker, "a refused SendMessage")


def unsupported_requests(c: WeverClient, data: Any = None) -> dict[str, Callable[[], HttpReply]]:
    """One request per item of protocols.a2a.unsupported (and the strict profile's rules),
    each SendMessage carrying ``data``."""
    def msg() -> dict[str, Any]:
        return c.a2a_message(data=data)

    def with_(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        params = msg()
        change(params)
        return params

    def text_part(p: dict[str, Any]) -> None:
        p["message"]["parts"] = [{"text": "hello", "mediaType": "text/plain"}]

    envelope = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": msg()}
    return {
        "blocking SendMessage": lambda: c.a2a_call("SendMessage", with_(lambda p: p["configuration"].update(returnImmediately=False))),
        "ListTasks": lambda: c.a2a_call("ListTasks", {}),
        "streaming": lambda: c.a2a_call("SendStreamingMessage", msg()),
        "subscriptions": lambda: c.a2a_call("SubscribeToTask", {"id": "task_" + "0" * 32}),
        "push notifications": lambda: c.a2a_call("SendMessage", with_(lambda p: p["configuration"].update(
            pushNotificationConfig={"url": "https://example.invalid/hook"}))),
        "extended agent card": lambda: c.a2a_call("GetExtendedAgentCard", {}),
        "task continuation": lambda: c.a2a_call("SendMessage", with_(lambda p: p["message"].update(taskId="task_" + "0" * 32))),
        "conversation context": lambda: c.a2a_call("SendMessage", with_(lambda p: p["message"].update(contextId="ctx-conformance"))),
        "tenant routing": lambda: c.a2a_call("SendMessage", with_(lambda p: p.update(tenant="conformance"))),
        "request metadata": lambda: c.a2a_call("SendMessage", with_(lambda p: p.update(metadata={"k": "v"}))),
        "protocol extensions": lambda: c.a2a_call("SendMessage", with_(lambda p: p["message"].update(extensions=["urn:x"]))),
        "text or file parts": lambda: c.a2a_call("SendMessage", with_(text_part)),
        "batch requests": lambda: c.a2a_call("SendMessage", {}, raw=json.dumps([envelope])),
        "notifications": lambda: c.a2a_call("SendMessage", {}, raw=json.dumps({k: v for k, v in envelope.items() if k != "id"})),
    }


def check_a2a_strict(ctx: CheckContext) -> None:
    """Every item of protocols.a2a.unsupported is refused before any delivery."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    data, marker = c.marked()
    requests = unsupported_requests(c, data)
    listed = c.a2a["unsupported"]
    ctx.expect(set(listed) <= set(requests), f"the manifest lists unsupported items the check does not know: {sorted(set(listed) - set(requests))}",
               kind="crash")
    watch = c.watch(RECIPIENT)
    for item in listed:
        with ctx.subcheck(item):
            reply = requests[item]()
            served = reply.status < 400 and rpc_error(reply) is None
            body = reply.json()
            batch_all_errors = isinstance(body, list) and all(isinstance(x, dict) and "error" in x for x in body)
            ctx.expect(not served or batch_all_errors or (item == "notifications" and not reply.content),
                       f"{item}: served: HTTP {reply.status} {reply.text[:200]}", kind="accepted_invalid")
    watch.nothing_delivered(marker, "an unsupported request")


def check_a2a_replay(ctx: CheckContext) -> None:
    """The same messageId and data return the same task; changed data conflicts; the
    inbox holds one task with the data (the check counts only its own)."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    message_id = f"conformance-{fresh_key()}"
    first = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id, data=data)), "SendMessage")
    again = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id, data=data)), "SendMessage replayed")
    ctx.expect(again["id"] == first["id"], f"a replayed messageId created task {again['id']!r} beside {first['id']!r}")
    changed, _ = c.marked()
    reply = c.a2a_call("SendMessage", c.a2a_message(message_id, data=changed))
    ctx.expect(rpc_error(reply) is not None, f"a messageId reused with changed data was served: {reply.text[:200]}",
               kind="accepted_invalid")
    carried = watch.carrying(marker)
    ctx.expect(carried == {first["id"]}, f"replays left {len(carried)} tasks with their data in the inbox ({sorted(carried)}), "
               f"expected exactly {first['id']}", kind="state_changed")


def digest_spellings(message_id: str) -> tuple[str, ...]:
    """The ways a2a-<sha256(messageId)> may be written: the manifest does not say (hex,
    base64url, base64: each accepted)."""
    digest = hashlib.sha256(message_id.encode()).digest()
    return digest.hex(), base64.urlsafe_b64encode(digest).decode().rstrip("="), base64.b64encode(digest).decode()


def check_a2a_key_namespace(ctx: CheckContext) -> None:
    """messageId becomes a2a- plus its SHA-256 digest in the sender's Connect request-key
    namespace: an HTTP send_task of the sender under that key and the same body is the
    same task; the same messageId from another sender is another task."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    data, _ = c.marked()
    message_id = f"conformance-{fresh_key()}"
    task = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id, data=data)), "SendMessage")
    with ctx.subcheck("HTTP send_task under a2a-<sha256>"):
        seen = []
        for spelling in digest_spellings(message_id):
            reply = c.send(SENDER, RECIPIENT, data=data, key="a2a-" + spelling)
            if reply.ok and locate.holds(reply.result, task["id"]):
                break
            seen.append(reply.describe())
        else:
            ctx.fail(f"no spelling of a2a-<sha256(messageId)> reaches the A2A task {task['id']} over HTTP: {seen}", kind="state_changed")
    with ctx.subcheck("another sender, the same messageId"):
        c.allow(STRANGER, RECIPIENT)
        other = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id, data=data), who=STRANGER),
                         "SendMessage of another sender with the same messageId")
        ctx.expect(other["id"] != task["id"], f"another sender's SendMessage with the same messageId answered the first "
                   f"sender's task {task['id']}: the key namespace is the sender's", kind="auth_not_enforced")


def check_a2a_key_header(ctx: CheckContext) -> None:
    """An incoming Idempotency-Key header does not override the messageId's key: the
    same messageId under another header is the same task, and the header's value names
    no A2A task over HTTP."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    header = c.binding.idempotency.get("header", "Idempotency-Key") if c.binding.idempotency else "Idempotency-Key"
    data, _ = c.marked()
    message_id, key = f"conformance-{fresh_key()}", fresh_key()
    params = c.a2a_message(message_id, data=data)
    task = a2a_task(ctx, c.a2a_call("SendMessage", params, headers={header: key}), f"SendMessage with an {header} header")
    with ctx.subcheck("the same messageId under another header"):
        again = a2a_task(ctx, c.a2a_call("SendMessage", params, headers={header: fresh_key()}),
                         f"the same SendMessage under another {header}")
        ctx.expect(again["id"] == task["id"], f"the same messageId under another {header} made task {again['id']} beside "
                   f"{task['id']}: the header overrode the messageId", kind="state_changed")
    with ctx.subcheck(f"HTTP send_task under the header's {header}"):
        other = c.task_of(c.send(SENDER, RECIPIENT, data=data, key=key), f"send_task under the {header} the SendMessage carried")
        ctx.expect(other.id != task["id"], f"send_task under the {header} of a SendMessage answered its task {task['id']}: "
                   "the header became the adapter's request key", kind="state_changed")


def check_a2a_state_mapping(ctx: CheckContext) -> None:
    """GetTask reports each Connect state as state_mapping says; a completed result is one
    application/json artifact; no history is returned."""
    c = WeverClient(ctx)
    mapping = c.a2a["state_mapping"]
    media = c.a2a["send_message"]["part_media_type"]
    for state, a2a_name in mapping.items():
        with ctx.subcheck(state):
            task = c.new_task(state)
            got = a2a_task(ctx, c.a2a_call("GetTask", {"id": task.id}), f"GetTask of a {state} task", wrapped=False)
            ctx.expect(a2a_state(got) == a2a_name, f"GetTask of a {state} task: {a2a_state(got)!r}, expected {a2a_name}")
            ctx.expect(not got.get("history"), f"GetTask returned history {got.get('history')!r}; returned_history_messages is 0")
            if state == "completed":
                artifacts: list[Any] = got["artifacts"] if isinstance(got.get("artifacts"), list) else []
                parts = [p for a in artifacts for p in (dig(a, "parts") or []) if isinstance(p, dict)]
                ctx.expect(len(artifacts) == 1 and len(parts) == 1 and parts[0].get("mediaType") == media,
                           f"a completed result must be one {media} artifact: {got.get('artifacts')!r}")


def check_a2a_cancel(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    canceled = c.a2a["state_mapping"]["cancelled"]
    task = c.new_task("offered")
    for attempt in ("CancelTask", "CancelTask again"):
        with ctx.subcheck(attempt):
            got = a2a_task(ctx, c.a2a_call("CancelTask", {"id": task.id}), attempt, wrapped=False)
            ctx.expect(a2a_state(got) == canceled, f"{attempt}: {a2a_state(got)!r}, expected {canceled}")
    with ctx.subcheck("by the recipient"):
        other = c.new_task("offered")
        ctx.expect(rpc_error(c.a2a_call("CancelTask", {"id": other.id}, who=RECIPIENT)) is not None,
                   "CancelTask by the recipient was served", kind="auth_not_enforced")
    with ctx.subcheck("accepted"):
        accepted = c.new_task("accepted")
        ctx.expect(rpc_error(c.a2a_call("CancelTask", {"id": accepted.id})) is not None,
                   "CancelTask of an accepted task was served", kind="accepted_invalid")


def check_a2a_visibility(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    task = c.new_task("offered")
    ctx.expect(rpc_error(c.a2a_call("GetTask", {"id": task.id}, who=STRANGER)) is not None,
               "GetTask by a mailbox that is no participant was served", kind="auth_not_enforced")


# ----------------------------------------------------------------------------------
# MCP
# ----------------------------------------------------------------------------------
def check_mcp_tools(ctx: CheckContext) -> None:
    """tools/list: one tool per action except register_mailbox, with the action's
    inputSchema; and tools/call of register_mailbox is not served."""
    if ctx.binding.kind != "mcp-tools":
        from conformance.check import NotApplicable

        raise NotApplicable("tools/list exists only in the mcp binding")
    c = WeverClient(ctx)
    registration = c.a2a["access_setup"]["path"].rsplit("/", 1)[-1]  # "Registration is not an MCP tool"
    tools = {t.get("name"): t for t in ctx.binding.list_tools()}
    ctx.keep_evidence()
    expected = {name: a["inputSchema"] for name, a in ctx.profile.spec["actions"].items() if name != registration}
    ctx.expect(set(tools) == set(expected), f"tools/list names {sorted(set(tools) ^ set(expected))} differently from the actions")
    for name in sorted(set(tools) & set(expected)):
        with ctx.subcheck(name):
            ctx.expect(tools[name].get("inputSchema") == expected[name], f"tool {name}'s inputSchema differs from the action's",
                       kind="schema_mismatch")
    with ctx.subcheck(f"tools/call {registration}"):
        reply = ctx.binding.call(registration, {"label": "conformance over mcp"}, idempotency_key=None)
        ctx.expect(not reply.ok, f"tools/call {registration} was served, though registration is not an MCP tool: {reply.describe()}",
                   kind="accepted_invalid")


def mcp_surface(profile: Profile) -> McpSurface:
    """What the MCP rows need of Wever: one tool per action but registration ("Registration
    is not an MCP tool"), the actions' inputSchemas (the manifest gives no result schemas),
    a harmless read and a call the relay refuses (a task nobody has)."""
    registration = profile.spec["protocols"]["a2a"]["access_setup"]["path"].rsplit("/", 1)[-1]
    return McpSurface(
        tools=lambda p: {name: a["inputSchema"] for name, a in p.spec["actions"].items() if name != registration},
        results=lambda p: {},
        harmless=lambda ctx: ("get_mailbox", {}),
        refused=lambda ctx: ("get_task", {"task_id": "task_" + "0" * 32}),
        tools_source=Source(profile.spec_relpath, "/setup"), tools_level="MUST",
        versions_source=Source(profile.spec_relpath, "/protocols/mcp/versions"), versions_level="MUST")


def check_health(ctx: CheckContext) -> None:
    reply = ctx.http.request("GET", ctx.profile.spec["routes"]["health"])
    ctx.expect(reply.status == 200, f"GET {ctx.profile.spec['routes']['health']}: HTTP {reply.status} {reply.text[:200]}")


def check_openapi(ctx: CheckContext) -> None:
    """The OpenAPI route describes every action."""
    route = ctx.profile.spec["routes"]["openapi"]
    reply = ctx.http.request("GET", route)
    doc = reply.json()
    ctx.expect(reply.status == 200 and isinstance(doc, dict), f"GET {route}: HTTP {reply.status} {reply.text[:200]}")
    paths = doc.get("paths") if isinstance(doc.get("paths"), dict) else {}
    template = ctx.profile.spec["routes"]["actions"]

    def posts(path: str) -> Any:
        item = paths.get(path)
        return item.get("post") if isinstance(item, dict) else None

    def described(name: str) -> bool:
        """A POST at the action's own path, or at the templated route naming the action
        (the manifest does not say which way a relay writes it: either passes)."""
        return bool(posts(template.replace("{action}", name))) or (bool(posts(template)) and name in json.dumps(posts(template)))

    missing = [name for name in ctx.profile.spec["actions"] if not described(name)]
    ctx.expect(not missing, f"{route} has no POST operation for the actions {missing} (at {template})", kind="schema_mismatch")


# ----------------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------------
def build(profile: Profile) -> list[Requirement]:
    table = Table(profile)
    at, req = table.at, table.req
    lim = {name: int(limit.value) for name, limit in profile.limits.items()}

    code = table.code
    CODES = ("refusal_codes_swapped",)  # the fault every profile-code SHOULD catches

    def pair(rid: str, title: str, source: Source, check: Callable[..., None], faults: tuple[str, ...], error: str) -> list[Requirement]:
        return table.pair(rid, title, source, check, faults, error, CODES)

    a2a = "/protocols/a2a"
    reqs = [
        req("WEVER-AUTH-BEARER-REQUIRED", "MUST", "Every action with requires_bearer refuses a call without a token or with one the relay never issued",
            at("/actions/send_task/requires_bearer"), auth_refused, ("bearer_not_enforced",)),
        req("WEVER-AUTH-BEARER-CODE", "SHOULD", "A call without a valid bearer gets UNAUTHENTICATED (401)", code("UNAUTHENTICATED"),
            lambda ctx: auth.token_refused(ctx, operations=bearer_actions(ctx), error="UNAUTHENTICATED", credential=MAIN), CODES),
        req("WEVER-AUTH-OPEN-ACTIONS", "MUST", "find_peers and register_mailbox serve a caller with no token",
            at("/actions/find_peers/requires_bearer"), check_open_actions, ("open_actions_need_bearer",)),
        req("WEVER-REGISTER-TOKEN", "MUST", "register_mailbox returns access_token, usable as a Bearer; connection requests start disabled; the profile is private",
            at("/actions/register_mailbox/description"), check_register_token, ("requests_enabled_at_registration", "private_profile_listed")),
        *pair("WEVER-SEND-NEEDS-GRANT", "Without the recipient's explicit sender grant (or after its revocation) nothing is delivered",
              at("/permissions"), check_send_needs_grant, ("delivered_without_grant", "revocation_ignored"), "NOT_ALLOWED"),
        *pair("WEVER-SEND-NEEDS-CAPABILITY", "A capability the recipient does not advertise is not delivered",
              at("/permissions"), check_send_needs_capability, ("capability_unchecked",), "NOT_ALLOWED"),
        req("WEVER-SEND-OFFERED", "MUST", "A granted send_task creates an offered task in the recipient's inbox, nobody else's",
            at("/flow/5"), check_send_offered, ("task_not_offered", "inbox_shows_others")),
        req("WEVER-ACCEPT-REPEAT", "MUST", "A repeated accept_task returns the task's accepted state",
            at("/actions/accept_task/description"), check_accept_repeat, ("repeat_accept_refused",)),
        req("WEVER-DECLINE", "MUST", "decline_task ends an offered task; it leaves the inbox and cannot be accepted",
            at("/actions/decline_task/description"), check_decline, ("decline_keeps_offered",)),
        *pair("WEVER-CANCEL-OFFERED-ONLY", "The sender cancels a task only while offered; accepted work cannot be cancelled; the recipient cannot cancel",
              at("/actions/cancel_task/description"), check_cancel_offered_only, ("accepted_cancellable", "recipient_cancels"), "INVALID_STATE"),
        req("WEVER-COMPLETE-RESULT", "MUST", "complete_task records a result for an accepted task; both participants recover it with its integrity digest",
            at("/delivery"), check_complete_result, ("result_hidden_from_sender", "complete_before_accept", "no_result_digest")),
        *pair("WEVER-TASK-PARTICIPANTS", "Only the sender and the recipient read a task: a task id alone grants no access",
              at("/actions/get_task/description"), check_task_participants, ("task_visible_to_anyone",), "NOT_FOUND"),
        req("WEVER-DELETE-CONTENT", "MUST", "Either participant erases a terminal task's shared content, for both; a task that is not terminal keeps it",
            at("/actions/delete_task_content/description"), check_delete_content, ("delete_content_one_side", "delete_open_task")),
        *pair("WEVER-SEND-KEY-REQUIRED", "send_task without an Idempotency-Key is refused and delivers nothing",
              at("/actions/send_task/description"), check_key_required, ("key_optional",), "IDEMPOTENCY_KEY_REQUIRED"),
        req("WEVER-SEND-REPLAY", "MUST", "send_task with the same Idempotency-Key and body returns the same task, once",
            at("/flow/5"), check_send_replay, ("replay_duplicates",)),
        req("WEVER-SEND-REPLAY-CONCURRENT", "MUST", "50 identical send_task calls with one key at once make one task",
            at("/flow/5"), concurrent_sends(50), ("replay_duplicates", "replay_race")),
        req("WEVER-SEND-KEY-CONFLICT", "MUST", "The same Idempotency-Key with another body is refused",
            at("/flow/5"), lambda ctx: idempotency.conflict_refused(ctx, sends={"send_task": send_with_key(ctx)}, error=None), ("conflict_accepted",)),
        req("WEVER-SEND-KEY-CONFLICT-CODE", "SHOULD", "A reused Idempotency-Key with another body gets IDEMPOTENCY_CONFLICT (409)",
            code("IDEMPOTENCY_CONFLICT"), lambda ctx: idempotency.conflict_refused(ctx, sends={"send_task": send_with_key(ctx)}, error="IDEMPOTENCY_CONFLICT"), CODES),
        req("WEVER-LIMIT-TASK-BYTES", "MUST", f"Task data within {lim['task_or_result_bytes']} bytes is delivered, over it refused (either way of counting)",
            at("/limits/task_or_result_bytes"), check_task_bytes, ("task_bytes_unchecked", "task_bytes_off_by_one")),
        req("WEVER-LIMIT-RESULT-BYTES", "MUST", f"A result within {lim['task_or_result_bytes']} bytes is recorded, over it refused (either way of counting)",
            at("/limits/task_or_result_bytes"), check_result_bytes, ("result_bytes_unchecked",)),
        *pair("WEVER-CONN-DISABLED-DEFAULT", "Connection requests are refused until the recipient opts in",
              at("/permissions"), check_conn_disabled, ("requests_always_open",), "REQUESTS_DISABLED"),
        req("WEVER-CONN-NO-GRANT", "MUST", "A connection request grants no permission by itself",
            at("/actions/request_connection/description"), check_conn_no_grant, ("request_grants",)),
        req("WEVER-CONN-LIST", "MUST", "list_connection_requests shows the caller's pending requests, and only the caller's",
            at("/actions/list_connection_requests/description"), check_conn_list, ("requests_listed_to_all",)),
        req("WEVER-CONN-RETRY-RETAINED", "MUST", "An exact-pair retry returns the retained request, a denial too",
            at("/actions/request_connection/description"), check_conn_retry, ("retry_new_request", "denial_forgotten")),
        req("WEVER-CONN-RESPOND", "MUST", "Only the recipient answers; allowing grants, denying revokes the pair's permission; "
            "a repeated matching response undoes neither a later revocation nor a later grant",
            at("/actions/respond_connection_request/description"), check_conn_respond,
            ("repeat_response_regrants", "deny_keeps_grant", "repeat_denial_revokes", "sender_responds")),
        req("WEVER-A2A-SEND", "MUST", "An example-shaped SendMessage creates a task that starts submitted, in result.task, in the recipient's inbox",
            at(f"{a2a}/send_message/result_shape"), check_a2a_send, ("a2a_state_unmapped",)),
        req("WEVER-A2A-VERSION-REQUIRED", "MUST", "A SendMessage with a missing or other A2A-Version is rejected and delivers nothing",
            at(f"{a2a}/strict_profile"), check_a2a_version, ("a2a_version_optional",)),
        req("WEVER-A2A-STRICT", "MUST", "Every unsupported A2A feature is rejected before any delivery",
            at(f"{a2a}/unsupported"), check_a2a_strict, ("a2a_blocking_served", "a2a_metadata_ignored")),
        req("WEVER-A2A-REPLAY", "MUST", "The same messageId and data return the same task; changed data conflicts",
            at(f"{a2a}/retry"), check_a2a_replay, ("a2a_replay_duplicates", "a2a_conflict_accepted")),
        req("WEVER-A2A-REPLAY-CONCURRENT", "MUST", "Identical SendMessage requests arriving at once make one task",
            at(f"{a2a}/retry"), a2a_concurrent, ("replay_race",)),
        req("WEVER-A2A-KEY-NAMESPACE", "MUST", "An A2A messageId is the Connect request key a2a-<sha256> of the sender: HTTP send_task "
            "under it returns the same task; another sender's same messageId is another task",
            at(f"{a2a}/retry"), check_a2a_key_namespace, ("a2a_private_namespace", "keys_shared_across_senders")),
        req("WEVER-A2A-KEY-HEADER-IGNORED", "MUST", "An incoming Idempotency-Key header does not override the messageId's request key",
            at(f"{a2a}/retry"), check_a2a_key_header, ("a2a_header_key",)),
        req("WEVER-A2A-STATE-MAPPING", "MUST", "GetTask maps every Connect state as state_mapping says; a completed result is one application/json artifact; no history",
            at(f"{a2a}/state_mapping"), check_a2a_state_mapping, ("a2a_state_unmapped", "a2a_history_returned")),
        req("WEVER-A2A-CANCEL", "MUST", "CancelTask: the sender, only while offered; a repeated cancellation returns the canceled task",
            at(f"{a2a}/cancel_task/permission"), check_a2a_cancel, ("a2a_repeat_cancel_refused", "accepted_cancellable")),
        req("WEVER-A2A-GET-VISIBILITY", "MUST", "GetTask serves the sender or the recipient only",
            at(f"{a2a}/get_task/visibility"), check_a2a_visibility, ("task_visible_to_anyone",)),
        req("WEVER-MCP-TOOLS", "MUST", "tools/list has one tool per action except register_mailbox, with the action's inputSchema; register_mailbox is not callable",
            at("/setup"), check_mcp_tools, ("mcp_register_tool", "mcp_register_callable")),
        req("WEVER-LIFECYCLE", "MUST", "Tasks move through offered, accepted, completed, declined and cancelled as the flow says, "
            "delivered only while the recipient allows the sender (stateful, three mailboxes)",
            at("/flow"), check_lifecycle,
            ("complete_before_accept", "delivered_without_grant", "revoke_cancels_delivered")),
        req("WEVER-HEALTH", "MUST", "The health route answers 200", at("/routes/health"), check_health, ("health_down",)),
        req("WEVER-OPENAPI", "MUST", "The openapi route describes every action", at("/routes/openapi"), check_openapi, ("openapi_incomplete",)),
    ]
    for module in (quotas, lifetimes, surfaces, shaped):
        reqs += module.rows(req, at, lim)
    for action, op in profile.operations.items():
        reqs.append(req(f"WEVER-INPUT-VALID-{slug(action)}", "MUST", f"Generated valid {action} inputs are not refused as invalid",
                        op.source, valid_inputs(action), valid_input_faults(op.params_schema)))
        reqs.append(req(f"WEVER-INPUT-INVALID-{slug(action)}", "MUST", f"{action} inputs breaking one inputSchema rule are refused and change nothing",
                        op.source, invalid_inputs(action), ("accepts_invalid_input",)))
    reqs.append(req("WEVER-INPUT-INVALID-CODE", "SHOULD", f"An input breaking its inputSchema gets {REJECTION} (400)", code(REJECTION),
                    lambda ctx: invalid_code_everywhere(ctx, send=WeverClient(ctx).input_call, error=REJECTION), CODES))
    for r in reqs:
        r.lasting = LASTING.get(r.id, r.lasting)
    return live_order(reqs)


# What rows do that lasts to the mailbox they act as (conformance/live.py): without control
# they act as a mailbox of the run's own (or one the config marks disposable), never as a
# configured one. close_mailbox and renew_mailbox are the profile's `lasting:` operations.
CLOSES = "closes the mailbox it acts as (its token, profile and grants go; shared task content is erased)"
RENEWS = "renews the mailbox it acts as: its expiry moves, which cannot be put back"
LASTING = {
    "WEVER-CLOSE-MAILBOX": CLOSES, "WEVER-INPUT-VALID-CLOSE-MAILBOX": CLOSES, "WEVER-INPUT-INVALID-CLOSE-MAILBOX": CLOSES,
    "WEVER-INPUT-VALID-RENEW-MAILBOX": RENEWS, "WEVER-INPUT-INVALID-RENEW-MAILBOX": RENEWS,
    "WEVER-INPUT-INVALID-CODE": "a relay that served an invalid close_mailbox or renew_mailbox input would close or renew "
                                "its caller: a mailbox of the run's own",
    "WEVER-TASK-EXPIRY": RENEWS, "WEVER-RENEW": RENEWS, "WEVER-CONN-EXPIRY": RENEWS,
    **{rid: what for rid, what in quotas.LASTING.items()},
}

# The order of a run (a live relay keeps what each check did): the rows that register a
# mailbox as their subject first (their mailboxes serve the rest: a source registers only
# registrations_per_source_per_utc_day a day), then the pending cap of a sender (it needs
# more pairs that never exchanged a request than any other row); the quota rows that use a
# mailbox's day up and the rows that close one last, and the registration quota's row after all.
FIRST = ("WEVER-REGISTER-TOKEN", "WEVER-AUTH-OPEN-ACTIONS", "WEVER-SHAPE-MAILBOX", "WEVER-INPUT-INVALID-REGISTER-MAILBOX",
         "WEVER-INPUT-VALID-REGISTER-MAILBOX", "WEVER-LIMIT-PENDING-REQUESTS-SENDER")
LAST = ("WEVER-LIMIT-SENT-PER-DAY", "WEVER-LIMIT-RECEIVED-PER-DAY", "WEVER-LIMIT-NEW-GRANTS-PER-DAY",
        "WEVER-INPUT-INVALID-CLOSE-MAILBOX", "WEVER-INPUT-VALID-CLOSE-MAILBOX", "WEVER-CLOSE-MAILBOX",
        "WEVER-LIMIT-REGISTRATIONS-PER-SOURCE")


def live_order(reqs: list[Requirement]) -> list[Requirement]:
    def rank(r: Requirement) -> tuple[int, int]:
        if r.id in FIRST:
            return 0, FIRST.index(r.id)
        if r.id in LAST:
            return 2, LAST.index(r.id)
        return 1, 0
    return sorted(reqs, key=rank)


def check_lifecycle(ctx: CheckContext) -> None:
    """The stateful machine (machine.py); without control, fewer runs of it (each task is
    spent from the day's quotas of the run's mailboxes)."""
    if ctx.run.live:
        ctx.budget = replace(ctx.budget, machines=min(ctx.budget.machines, LIVE_MACHINES))
    ctx.run_machine(WeverMachine)


def auth_refused(ctx: CheckContext) -> None:
    """No token, and a token the relay never issued: refused (any refusal)."""
    for who, make in (("no token", auth.token_required), ("an unknown token", auth.token_refused)):
        with ctx.subcheck(who):
            make(ctx, operations=bearer_actions(ctx), error=None, credential=MAIN)
