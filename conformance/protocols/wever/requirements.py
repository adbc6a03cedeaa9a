"""The Wever Connect requirement table. Actions, input schemas, limits, the A2A
adapter's rules and the MCP versions come from specs/wever-connect/connect-manifest.json;
error codes, statuses and result shapes are the profile's (profiles/wever-connect.yaml):
a MUST asks what the manifest says (refused, delivered, visible), the SHOULD beside it
the profile's code."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any

from conformance.checks import auth, idempotency
from conformance.checks.errors import (
    expect_mapping,
    expect_refused,
    expect_result,
    refused_as,
)
from conformance.checks.inputs import invalid_code_everywhere, invalid_inputs_rejected, valid_inputs_accepted
from conformance.model import Profile, Requirement, Source
from conformance.protocols.wever import lifetimes, quotas, surfaces
from conformance.protocols.wever.client import (
    RECIPIENT,
    SENDER,
    STRANGER,
    WeverClient,
    dig,
    fresh_key,
    rpc_error,
    served_rpc,
)
from conformance.protocols.wever.model import WeverMachine
from conformance.runner import CheckContext
from conformance.spec.invalid import InvalidInstance
from conformance.spec.schemas import validator_for
from conformance.table import Table, slug
from conformance.transport.binding import Reply
from conformance.transport.http import HttpReply

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
            self.ids["task_id"] = c.new_task(state)["task_id"]
            self.who = RECIPIENT if action in ("accept_task", "decline_task", "complete_task") else SENDER
        elif action == "respond_connection_request":
            self.ids["request_id"] = open_requests(c)["request_id"]
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

    def caller(self) -> Any:
        """close_mailbox closes its caller: a fresh seeded mailbox each time (with control)."""
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


def valid_inputs(action: str) -> Callable[[CheckContext], None]:
    """Generated inputs valid under the action's inputSchema, as generated (ids of
    objects that need not exist), are never refused as invalid: a missing object is a
    refusal of another kind, flagged by the binding."""
    def check(ctx: CheckContext) -> None:
        c = WeverClient(ctx)
        valid_inputs_accepted(ctx, ctx.profile.operations[action], lambda v: c.input_call(action, v), (REJECTION,),
                              catalogued=False)
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

        def named(bad: InvalidInstance) -> Any:
            instance = world.name(bad.instance, keep=bad.violation.pointer)
            return bad.instance if validator_for(op.params_schema).is_valid(instance) else instance

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
    """register_mailbox hands back the token under access_setup.token_response_field; it
    works as a Bearer token; connection requests start disabled; the mailbox is private."""
    c = WeverClient(ctx)
    setup = ctx.profile.spec["protocols"]["a2a"]["access_setup"]
    field = setup["token_response_field"]
    label = f"conformance-{fresh_key()[:8]}"
    created = expect_result(ctx, c.open_call("register_mailbox", {"label": label, "capabilities": [c.capability]}),
                            "register_mailbox", [field])
    token = created[field]
    ctx.expect(isinstance(token, str) and token, f"register_mailbox {field} is {token!r}", kind="schema_mismatch")
    reply = ctx.http.request("POST", ctx.profile.spec["routes"]["actions"].replace("{action}", "get_mailbox"),
                             headers={"Authorization": f"{setup['token_type']} {token}", "Content-Type": "application/json"},
                             content="{}")
    mine = reply.json()
    ctx.expect(reply.status == 200 and isinstance(mine, dict), f"get_mailbox with the new token: HTTP {reply.status} {reply.text[:200]}",
               kind="rejected_valid")
    ctx.expect(mine.get("accepts_connection_requests") is False,
               f"a new mailbox must start with connection requests disabled: {mine.get('accepts_connection_requests')!r}")
    peers = expect_result(ctx, c.open_call("find_peers", {}), "find_peers", ["peers"])["peers"]
    ctx.expect(all(p.get("label") != label for p in peers if isinstance(p, dict)),
               "a mailbox registered without discoverable=true is listed by find_peers (profiles are private until then)")


# ----------------------------------------------------------------------------------
# permissions and the task flow
# ----------------------------------------------------------------------------------
def check_send_needs_grant(ctx: CheckContext, strict: bool = False) -> None:
    """Without the recipient's explicit grant nothing is delivered."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT)
    before = c.inbox_ids(RECIPIENT)
    refused_as(ctx, c.send(SENDER, RECIPIENT), "NOT_ALLOWED", "send_task without the recipient's grant", strict)
    ctx.expect(c.inbox_ids(RECIPIENT) == before, "a refused send_task reached the recipient's inbox", kind="auth_not_enforced")
    with ctx.subcheck("a revoked grant"):
        c.grant(SENDER, RECIPIENT)
        expect_result(ctx, c.grant(SENDER, RECIPIENT, allowed=False), "allow_sender allowed=false")
        refused_as(ctx, c.send(SENDER, RECIPIENT), "NOT_ALLOWED", "send_task after the grant was revoked", strict)


def check_send_needs_capability(ctx: CheckContext, strict: bool = False) -> None:
    """A capability the recipient does not advertise is not delivered, grant or not."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    before = c.inbox_ids(RECIPIENT)
    refused_as(ctx, c.send(SENDER, RECIPIENT, capability="conformance.not.advertised"), "NOT_ALLOWED",
            "send_task for a capability the recipient does not advertise", strict)
    ctx.expect(c.inbox_ids(RECIPIENT) == before, "a refused send_task reached the recipient's inbox", kind="auth_not_enforced")


def check_send_offered(ctx: CheckContext) -> None:
    """A granted send_task creates an offered task that the recipient sees in its inbox."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    task = c.task_of(c.send(SENDER, RECIPIENT), "send_task")
    ctx.expect(task["state"] == "offered", f"a new task is {task['state']!r}, the flow says offered")
    ctx.expect(task["task_id"] in c.inbox_ids(RECIPIENT), "the offered task is not in the recipient's inbox")
    ctx.expect(task["task_id"] not in c.inbox_ids(STRANGER), "another mailbox's inbox shows the task", kind="auth_not_enforced")


def check_accept_repeat(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    task = c.new_task("offered")
    first = c.task_of(c.call("accept_task", {"task_id": task["task_id"]}, RECIPIENT), "accept_task")
    again = c.task_of(c.call("accept_task", {"task_id": task["task_id"]}, RECIPIENT), "accept_task again")
    ctx.expect(first["state"] == again["state"] == "accepted",
               f"accept_task answered {first['state']!r} then {again['state']!r}; a repeated acceptance returns the accepted state")


def check_decline(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    task = c.new_task("offered")
    declined = c.task_of(c.call("decline_task", {"task_id": task["task_id"]}, RECIPIENT), "decline_task")
    ctx.expect(declined["state"] == "declined", f"decline_task answered state {declined['state']!r}")
    ctx.expect(task["task_id"] not in c.inbox_ids(RECIPIENT), "a declined task is still in the inbox (offered or accepted only)")
    expect_refused(ctx, c.call("accept_task", {"task_id": task["task_id"]}, RECIPIENT), "accept_task of a declined task")


def check_cancel_offered_only(ctx: CheckContext, strict: bool = False) -> None:
    """The sender cancels only while offered; accepted work cannot be cancelled; the
    recipient never cancels. A repeated cancel of a cancelled task answers it."""
    c = WeverClient(ctx)
    with ctx.subcheck("offered, by the sender"):
        task = c.new_task("offered")
        done = c.task_of(c.call("cancel_task", {"task_id": task["task_id"]}, SENDER), "cancel_task of an offered task")
        ctx.expect(done["state"] == "cancelled", f"cancel_task answered state {done['state']!r}")
    with ctx.subcheck("offered, by the recipient"):
        task = c.new_task("offered")
        refused_as(ctx, c.call("cancel_task", {"task_id": task["task_id"]}, RECIPIENT), "NOT_ALLOWED", "cancel_task by the recipient", strict)
    with ctx.subcheck("accepted, by the sender"):
        task = c.new_task("accepted")
        refused_as(ctx, c.call("cancel_task", {"task_id": task["task_id"]}, SENDER), "INVALID_STATE", "cancel_task of an accepted task", strict)
        state = c.task_of(c.get(task["task_id"], SENDER), "get_task")["state"]
        ctx.expect(state == "accepted", f"after a refused cancel the task is {state!r}", kind="state_changed")


def check_complete_result(ctx: CheckContext) -> None:
    """Both participants recover the completed result with an integrity digest."""
    c = WeverClient(ctx)
    task = c.new_task("accepted")
    result = {"answer": "conformance result", "n": 1}
    done = c.task_of(c.call("complete_task", {"task_id": task["task_id"], "result": result}, RECIPIENT), "complete_task")
    ctx.expect(done["state"] == "completed", f"complete_task answered state {done['state']!r}")
    for who in (SENDER, RECIPIENT):
        with ctx.subcheck(f"get_task as {who}"):
            seen = c.task_of(c.get(task["task_id"], who), f"get_task as {who}")
            ctx.expect(seen.get("result") == result, f"get_task as {who}: result {seen.get('result')!r}, completed with {result!r}")
            ctx.expect(seen.get("result_digest"), f"get_task as {who}: no integrity digest of the result", kind="schema_mismatch")
    with ctx.subcheck("complete before accept"):
        offered = c.new_task("offered")
        expect_refused(ctx, c.call("complete_task", {"task_id": offered["task_id"], "result": result}, RECIPIENT),
                       "complete_task of an offered task")


def check_task_participants(ctx: CheckContext, strict: bool = False) -> None:
    """Only the sender and the recipient read a task: a task id alone grants no access."""
    c = WeverClient(ctx)
    task = c.new_task("offered")
    refused_as(ctx, c.get(task["task_id"], STRANGER), "NOT_FOUND", "get_task by a mailbox that is no participant", strict)
    for who in (SENDER, RECIPIENT):
        c.task_of(c.get(task["task_id"], who), f"get_task as {who}")


def check_delete_content(ctx: CheckContext) -> None:
    """Either participant erases a terminal task's content, for both; a task that is
    not terminal keeps it."""
    c = WeverClient(ctx)
    with ctx.subcheck("an offered task"):
        task = c.new_task("offered")
        expect_refused(ctx, c.call("delete_task_content", {"task_id": task["task_id"]}, SENDER), "delete_task_content of an offered task")
    for who, state in ((SENDER, "completed"), (RECIPIENT, "declined")):
        with ctx.subcheck(f"a {state} task, by the {'sender' if who == SENDER else 'recipient'}"):
            task = c.new_task(state)
            expect_result(ctx, c.call("delete_task_content", {"task_id": task["task_id"]}, who), "delete_task_content")
            other = RECIPIENT if who == SENDER else SENDER
            reply = c.get(task["task_id"], other)
            if reply.ok:
                seen = expect_mapping(ctx, dig(reply.result, "task"), "get_task task")
                ctx.expect(seen.get("task") in (None, {}) and seen.get("result") in (None, {}),
                           f"after delete_task_content the other participant still reads the content: {reply.describe()}")


# ----------------------------------------------------------------------------------
# idempotency of send_task
# ----------------------------------------------------------------------------------
def send_with_key(ctx: CheckContext) -> idempotency.Send:
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    bodies = {"a": {"message": "conformance a"}, "b": {"message": "conformance b"}}
    return lambda key, body: c.send(SENDER, RECIPIENT, data=bodies[body], key=key)


def inbox_size(ctx: CheckContext) -> Callable[[], int]:
    c = WeverClient(ctx, reset=False)
    return lambda: len(c.inbox_ids(RECIPIENT))


def check_key_required(ctx: CheckContext, strict: bool = False) -> None:
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    before = c.inbox_ids(RECIPIENT)
    reply = c.binding.call("send_task", c.task_body(), caller=SENDER, idempotency_key=None)
    refused_as(ctx, reply, "IDEMPOTENCY_KEY_REQUIRED", "send_task without an Idempotency-Key", strict)
    ctx.expect(c.inbox_ids(RECIPIENT) == before, "send_task without a key delivered a task", kind="state_changed")


# ----------------------------------------------------------------------------------
# limits
# ----------------------------------------------------------------------------------
def data_of_bytes(n: int) -> dict[str, Any]:
    """Task data whose compact JSON is exactly ``n`` bytes of UTF-8 (one ASCII string)."""
    shell = len(json.dumps({"m": ""}, separators=(",", ":")))
    return {"m": "x" * (n - shell)}


# The manifest says "task_or_result_bytes" without saying how data is measured: as compact
# JSON, or as written with a space after each separator (one more byte for this data). The
# MUST accepts both: data that fits under either reading is served, data over the limit
# under either reading is refused; the exact edge between them is the reading's (variant
# size_with_spaces shows the other).
FITS_EITHER_WAY, OVER_EITHER_WAY = -1, 1


def check_task_bytes(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    limit = int(ctx.profile.limits["task_or_result_bytes"].value)
    c.allow(SENDER, RECIPIENT)
    fits, over = limit + FITS_EITHER_WAY, limit + OVER_EITHER_WAY
    with ctx.subcheck(f"task data of {fits} bytes (compact JSON; {fits + 1} written with spaces)"):
        c.task_of(c.send(SENDER, RECIPIENT, data=data_of_bytes(fits)), f"send_task with {fits} bytes of task data")
    with ctx.subcheck(f"task data of {over} bytes"):
        before = c.inbox_ids(RECIPIENT)
        expect_refused(ctx, c.send(SENDER, RECIPIENT, data=data_of_bytes(over)), f"send_task with {over} bytes of task data")
        ctx.expect(c.inbox_ids(RECIPIENT) == before, "an oversized task reached the inbox", kind="state_changed")


def check_result_bytes(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    limit = int(ctx.profile.limits["task_or_result_bytes"].value)
    fits, over = limit + FITS_EITHER_WAY, limit + OVER_EITHER_WAY
    with ctx.subcheck(f"a result of {over} bytes"):
        task = c.new_task("accepted")
        expect_refused(ctx, c.call("complete_task", {"task_id": task["task_id"], "result": data_of_bytes(over)}, RECIPIENT),
                       f"complete_task with a {over}-byte result")
    with ctx.subcheck(f"a result of {fits} bytes"):
        task = c.new_task("accepted")
        c.task_of(c.call("complete_task", {"task_id": task["task_id"], "result": data_of_bytes(fits)}, RECIPIENT),
                  f"complete_task with a {fits}-byte result")


def a2a_concurrent(ctx: CheckContext) -> None:
    """The same SendMessage (messageId and data) sent 8 times at once makes one task."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    params = c.a2a_message()
    replies = idempotency.at_once(8, lambda: c.a2a_call("SendMessage", params))
    ids = {dig(r.json(), "result", "task", "id") for r in replies}
    ctx.expect(len(ids) == 1 and None not in ids, f"8 identical SendMessage at once answered tasks {sorted(map(str, ids))}",
               kind="state_changed")
    ctx.expect(len(c.inbox_ids(RECIPIENT)) == 1, f"8 identical SendMessage at once left {len(c.inbox_ids(RECIPIENT))} tasks",
               kind="state_changed")


# ----------------------------------------------------------------------------------
# connection requests
# ----------------------------------------------------------------------------------
def check_conn_disabled(ctx: CheckContext, strict: bool = False) -> None:
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, accepts_connection_requests=False)
    refused_as(ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER), "REQUESTS_DISABLED",
            "request_connection to a mailbox that has not opted in", strict)


def open_requests(c: WeverClient) -> dict[str, Any]:
    """bob opts into connection requests; alice asks; the request."""
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    with c.ctx.setup("request_connection to an opted-in mailbox", by="WEVER-CONN-LIST"):
        result = expect_result(c.ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                               "request_connection", ["request"])
        return expect_mapping(c.ctx, result["request"], "request_connection request", ("request_id",))


def check_conn_no_grant(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    open_requests(c)
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after a connection request nobody answered")


def check_conn_list(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    request = open_requests(c)
    listed = expect_result(ctx, c.call("list_connection_requests", {}, RECIPIENT), "list_connection_requests", ["requests"])["requests"]
    ctx.expect(any(isinstance(r, dict) and r.get("request_id") == request["request_id"] for r in listed),
               "list_connection_requests does not show a pending request addressed to the caller")
    other = expect_result(ctx, c.call("list_connection_requests", {}, STRANGER), "list_connection_requests as another", ["requests"])
    ctx.expect(all(r.get("request_id") != request["request_id"] for r in other["requests"] if isinstance(r, dict)),
               "another mailbox's list shows the request", kind="auth_not_enforced")


def check_conn_retry(ctx: CheckContext) -> None:
    """Exact-pair retries return the retained request, a denial too."""
    c = WeverClient(ctx)
    request = open_requests(c)
    again = expect_result(ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                          "request_connection again", ["request"])["request"]
    ctx.expect(again.get("request_id") == request["request_id"], f"an exact-pair retry made a new request: {again!r}")
    expect_result(ctx, c.call("respond_connection_request", {"request_id": request["request_id"], "allowed": False}, RECIPIENT),
                  "respond_connection_request allowed=false")
    denied = expect_result(ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                           "request_connection after a denial", ["request"])["request"]
    ctx.expect(denied.get("request_id") == request["request_id"] and denied.get("status") == "denied",
               f"a retry after a denial must return the retained denial: {denied!r}")


def check_conn_respond(ctx: CheckContext) -> None:
    """Allowing grants; a repeated matching response replays the decision without
    undoing a later revocation."""
    c = WeverClient(ctx)
    request = open_requests(c)
    answer = {"request_id": request["request_id"], "allowed": True}
    first = expect_result(ctx, c.call("respond_connection_request", answer, RECIPIENT), "respond_connection_request allowed=true")
    ctx.expect(first.get("allowed") is True, f"allowing a request must grant permission: {first!r}")
    c.task_of(c.send(SENDER, RECIPIENT), "send_task after the request was allowed")
    expect_result(ctx, c.grant(SENDER, RECIPIENT, allowed=False), "allow_sender allowed=false (a later revocation)")
    again = expect_result(ctx, c.call("respond_connection_request", answer, RECIPIENT), "the same response again")
    ctx.expect(again.get("allowed") is False, f"a repeated response must not undo the later revocation: {again!r}")
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after the revocation")


# ----------------------------------------------------------------------------------
# the A2A adapter
# ----------------------------------------------------------------------------------
def a2a_task(ctx: CheckContext, reply: HttpReply, what: str, wrapped: bool = True) -> dict[str, Any]:
    result = served_rpc(ctx, reply, what)
    task = result.get("task") if wrapped and isinstance(result, dict) else result
    return expect_mapping(ctx, task, f"{what} task", ("id", "status"))


def check_a2a_send(ctx: CheckContext) -> None:
    """An example-shaped SendMessage creates a task that starts submitted, in result.task."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    task = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message()), "SendMessage")
    mapping = c.a2a["state_mapping"]
    ctx.expect(task["status"].get("state") == mapping["offered"], f"a new A2A task is {task['status'].get('state')!r}, expected {mapping['offered']}")
    ctx.expect(task["id"] in c.inbox_ids(RECIPIENT), "the A2A task is not in the recipient's Connect inbox")


def check_a2a_version(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    for version in (None, "0.3", "2.0"):
        with ctx.subcheck(f"A2A-Version {version or 'missing'}"):
            before = c.inbox_ids(RECIPIENT)
            reply = c.a2a_call("SendMessage", c.a2a_message(), version=version)
            ctx.expect(rpc_error(reply) is not None or reply.status >= 400,
                       f"SendMessage with A2A-Version {version or 'missing'} was served: HTTP {reply.status} {reply.text[:200]}",
                       kind="accepted_invalid")
            ctx.expect(c.inbox_ids(RECIPIENT) == before, "a refused SendMessage delivered a task", kind="state_changed")


def unsupported_requests(c: WeverClient) -> dict[str, Callable[[], HttpReply]]:
    """One request per item of protocols.a2a.unsupported (and the strict profile's rules)."""
    msg = c.a2a_message

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
    requests = unsupported_requests(c)
    listed = c.a2a["unsupported"]
    ctx.expect(set(listed) <= set(requests), f"the manifest lists unsupported items the check does not know: {sorted(set(listed) - set(requests))}",
               kind="crash")
    before = c.inbox_ids(RECIPIENT)
    for item in listed:
        with ctx.subcheck(item):
            reply = requests[item]()
            served = reply.status < 400 and rpc_error(reply) is None
            batch_all_errors = isinstance(reply.json(), list) and all(isinstance(x, dict) and "error" in x for x in reply.json())
            ctx.expect(not served or batch_all_errors or (item == "notifications" and not reply.content),
                       f"{item}: served: HTTP {reply.status} {reply.text[:200]}", kind="accepted_invalid")
    ctx.expect(c.inbox_ids(RECIPIENT) == before, "an unsupported request delivered a task", kind="state_changed")


def check_a2a_replay(ctx: CheckContext) -> None:
    """The same messageId and data return the same task; changed data conflicts."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    message_id = f"conformance-{fresh_key()}"
    first = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id)), "SendMessage")
    again = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id)), "SendMessage replayed")
    ctx.expect(again["id"] == first["id"], f"a replayed messageId created task {again['id']!r} beside {first['id']!r}")
    changed = c.a2a_call("SendMessage", c.a2a_message(message_id, data={"message": "changed"}))
    ctx.expect(rpc_error(changed) is not None, f"a messageId reused with changed data was served: {changed.text[:200]}",
               kind="accepted_invalid")
    ctx.expect(c.inbox_ids(RECIPIENT).count(first["id"]) == 1 and len(c.inbox_ids(RECIPIENT)) == 1,
               f"replays left {len(c.inbox_ids(RECIPIENT))} tasks in the inbox, expected 1", kind="state_changed")


def check_a2a_key_namespace(ctx: CheckContext) -> None:
    """messageId becomes a2a- plus its SHA-256 digest in the sender's Connect request-key
    namespace: an HTTP send_task under that key and the same body is the same task. The
    manifest does not say how the digest is written: hex, base64url and base64 are each
    accepted."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    message_id = f"conformance-{fresh_key()}"
    task = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id)), "SendMessage")
    digest = hashlib.sha256(message_id.encode()).digest()
    spellings = (digest.hex(), base64.urlsafe_b64encode(digest).decode().rstrip("="), base64.b64encode(digest).decode())
    seen = []
    for spelling in spellings:
        reply = c.send(SENDER, RECIPIENT, data=c.example_data()["task"], key="a2a-" + spelling)
        same = reply.ok and dig(reply.result, "task", "task_id") == task["id"]
        if same:
            return
        seen.append(reply.describe())
    ctx.fail(f"no spelling of a2a-<sha256(messageId)> reaches the A2A task {task['id']} over HTTP: {seen}", kind="state_changed")


def check_a2a_state_mapping(ctx: CheckContext) -> None:
    """GetTask reports each Connect state as state_mapping says; a completed result is one
    application/json artifact; no history is returned."""
    c = WeverClient(ctx)
    mapping = c.a2a["state_mapping"]
    for state, a2a_state in mapping.items():
        with ctx.subcheck(state):
            task = c.new_task(state)
            got = a2a_task(ctx, c.a2a_call("GetTask", {"id": task["task_id"]}), f"GetTask of a {state} task", wrapped=False)
            ctx.expect(got["status"].get("state") == a2a_state, f"GetTask of a {state} task: {got['status'].get('state')!r}, expected {a2a_state}")
            ctx.expect(not got.get("history"), f"GetTask returned history {got.get('history')!r}; returned_history_messages is 0")
            if state == "completed":
                parts = [p for a in got.get("artifacts") or [] for p in (a.get("parts") or [])]
                ctx.expect(len(got.get("artifacts") or []) == 1 and len(parts) == 1 and parts[0].get("mediaType") == "application/json",
                           f"a completed result must be one application/json artifact: {got.get('artifacts')!r}")


def check_a2a_cancel(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    canceled = c.a2a["state_mapping"]["cancelled"]
    task = c.new_task("offered")
    for attempt in ("CancelTask", "CancelTask again"):
        with ctx.subcheck(attempt):
            got = a2a_task(ctx, c.a2a_call("CancelTask", {"id": task["task_id"]}), attempt, wrapped=False)
            ctx.expect(got["status"].get("state") == canceled, f"{attempt}: {got['status'].get('state')!r}, expected {canceled}")
    with ctx.subcheck("by the recipient"):
        other = c.new_task("offered")
        ctx.expect(rpc_error(c.a2a_call("CancelTask", {"id": other["task_id"]}, who=RECIPIENT)) is not None,
                   "CancelTask by the recipient was served", kind="auth_not_enforced")
    with ctx.subcheck("accepted"):
        accepted = c.new_task("accepted")
        ctx.expect(rpc_error(c.a2a_call("CancelTask", {"id": accepted["task_id"]})) is not None,
                   "CancelTask of an accepted task was served", kind="accepted_invalid")


def check_a2a_visibility(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    task = c.new_task("offered")
    ctx.expect(rpc_error(c.a2a_call("GetTask", {"id": task["task_id"]}, who=STRANGER)) is not None,
               "GetTask by a mailbox that is no participant was served", kind="auth_not_enforced")


# ----------------------------------------------------------------------------------
# MCP
# ----------------------------------------------------------------------------------
def check_mcp_tools(ctx: CheckContext) -> None:
    """tools/list: one tool per action except register_mailbox, with the action's inputSchema."""
    if ctx.binding.kind != "mcp-tools":
        from conformance.runner import NotApplicable

        raise NotApplicable("tools/list exists only in the mcp binding")
    WeverClient(ctx)
    tools = {t.get("name"): t for t in ctx.binding.list_tools()}
    ctx.keep_evidence()
    expected = {name: a["inputSchema"] for name, a in ctx.profile.spec["actions"].items() if name != "register_mailbox"}
    ctx.expect(set(tools) == set(expected), f"tools/list names {sorted(set(tools) ^ set(expected))} differently from the actions")
    for name in sorted(set(tools) & set(expected)):
        with ctx.subcheck(name):
            ctx.expect(tools[name].get("inputSchema") == expected[name], f"tool {name}'s inputSchema differs from the action's",
                       kind="schema_mismatch")


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


def concurrent_sends(copies: int) -> Callable[[CheckContext], None]:
    """``copies`` identical send_task calls with one key at once: one task."""
    return idempotency.replay_concurrent(send_with_key, inbox_size, "send_task with one Idempotency-Key", copies=copies)


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
            auth.token_refused(bearer_actions, "UNAUTHENTICATED", credential=SENDER), CODES),
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
            at("/flow/5"), idempotency.replay_once(send_with_key, inbox_size, "send_task with one Idempotency-Key"), ("replay_duplicates",)),
        req("WEVER-SEND-REPLAY-CONCURRENT", "MUST", "50 identical send_task calls with one key at once make one task",
            at("/flow/5"), concurrent_sends(50), ("replay_duplicates", "replay_race")),
        req("WEVER-SEND-KEY-CONFLICT", "MUST", "The same Idempotency-Key with another body is refused",
            at("/flow/5"), idempotency.conflict_refused(lambda ctx: {"send_task": send_with_key(ctx)}, None), ("conflict_accepted",)),
        req("WEVER-SEND-KEY-CONFLICT-CODE", "SHOULD", "A reused Idempotency-Key with another body gets IDEMPOTENCY_CONFLICT (409)",
            code("IDEMPOTENCY_CONFLICT"), idempotency.conflict_refused(lambda ctx: {"send_task": send_with_key(ctx)}, "IDEMPOTENCY_CONFLICT"), CODES),
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
        req("WEVER-CONN-RESPOND", "MUST", "Allowing a request grants; a repeated matching response does not undo a later revocation",
            at("/actions/respond_connection_request/description"), check_conn_respond, ("repeat_response_regrants",)),
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
        req("WEVER-A2A-KEY-NAMESPACE", "MUST", "An A2A messageId is the Connect request key a2a-<sha256> of the sender: HTTP send_task under it returns the same task",
            at(f"{a2a}/retry"), check_a2a_key_namespace, ("a2a_private_namespace",)),
        req("WEVER-A2A-STATE-MAPPING", "MUST", "GetTask maps every Connect state as state_mapping says; a completed result is one application/json artifact; no history",
            at(f"{a2a}/state_mapping"), check_a2a_state_mapping, ("a2a_state_unmapped", "a2a_history_returned")),
        req("WEVER-A2A-CANCEL", "MUST", "CancelTask: the sender, only while offered; a repeated cancellation returns the canceled task",
            at(f"{a2a}/cancel_task/permission"), check_a2a_cancel, ("a2a_repeat_cancel_refused", "accepted_cancellable")),
        req("WEVER-A2A-GET-VISIBILITY", "MUST", "GetTask serves the sender or the recipient only",
            at(f"{a2a}/get_task/visibility"), check_a2a_visibility, ("task_visible_to_anyone",)),
        req("WEVER-MCP-TOOLS", "MUST", "tools/list has one tool per action except register_mailbox, with the action's inputSchema",
            at("/setup"), check_mcp_tools, ("mcp_register_tool",)),
        req("WEVER-LIFECYCLE", "MUST", "Tasks move through offered, accepted, completed, declined and cancelled as the flow says, "
            "delivered only while the recipient allows the sender (stateful, three mailboxes)",
            at("/flow"), lambda ctx: ctx.run_machine(WeverMachine),
            ("complete_before_accept", "delivered_without_grant", "revoke_cancels_delivered")),
        req("WEVER-HEALTH", "MUST", "The health route answers 200", at("/routes/health"), check_health, ("health_down",)),
        req("WEVER-OPENAPI", "MUST", "The openapi route describes every action", at("/routes/openapi"), check_openapi, ("openapi_incomplete",)),
    ]
    for module in (quotas, lifetimes, surfaces):
        reqs += module.rows(req, at, lim)
    for action, op in profile.operations.items():
        reqs.append(req(f"WEVER-INPUT-VALID-{slug(action)}", "MUST", f"Generated valid {action} inputs are not refused as invalid",
                        op.source, valid_inputs(action), valid_input_faults(op.params_schema)))
        reqs.append(req(f"WEVER-INPUT-INVALID-{slug(action)}", "MUST", f"{action} inputs breaking one inputSchema rule are refused and change nothing",
                        op.source, invalid_inputs(action), ("accepts_invalid_input",)))
    reqs.append(req("WEVER-INPUT-INVALID-CODE", "SHOULD", f"An input breaking its inputSchema gets {REJECTION} (400)", code(REJECTION),
                    invalid_code_everywhere(lambda ctx: WeverClient(ctx).input_call, REJECTION), CODES))
    return reqs


def auth_refused(ctx: CheckContext) -> None:
    """No token, and a token the relay never issued: refused (any refusal)."""
    for who, make in (("no token", auth.token_required), ("an unknown token", auth.token_refused)):
        with ctx.subcheck(who):
            make(bearer_actions, None, credential=SENDER)(ctx)
