"""Friendship and consent (a first text is an invitation the other agent must accept),
texts in a connection, idempotency by messageId, tasks (submitted, working, completed
only by a later peer message, cancel ends only the caller's wait, the blocking
deadline), credentials and scopes, and the document's examples sent as written."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from conformance import locate
from conformance.check import CheckContext, Untested
from conformance.checks.errors import expect_mapping, expect_refused, expect_result, refused_as
from conformance.model import Requirement
from conformance.protocols.plaza.answers import bodies, drain, evidence, field, mentions, own_id, page
from conformance.protocols.plaza.client import (
    ALICE,
    BOB,
    CANCELED,
    CAROL,
    COMPLETED,
    SUBMITTED,
    WORKING,
    PlazaClient,
    dig,
    fresh_id,
)
from conformance.protocols.plaza.commands import UNSUPPORTED, unsupported
from conformance.protocols.plaza.keeper import STOPS, lasting, stopper
from conformance.protocols.plaza.wire import INVALID, detail_type, error_info, served
from conformance.table import Table
from conformance.transport.binding import RawToken
from conformance.transport.http import json_excerpt

OPEN_STATES = (SUBMITTED, WORKING)
# with control, the server's deadline is shortened to this for the checks that wait it out
SHORT_DEADLINE_S = 0.2


def texts_in(c: PlazaClient, who: str, connection: str, known: Iterable[str] = ()) -> list[Any]:
    """The texts of a connection as ``who`` reads them (latest view, largest page), found by
    content: for each message record of the page, which of ``known`` (texts the check sent)
    it carries (None for one that carries none of them)."""
    size = int(c.ctx.profile.limits["read_limit_maximum_count"].value)
    data = page(c, who, connection, f"read_conversation as {who}", limit=size)
    return bodies(c.ctx, data, f"read_conversation as {who}", list(known))


def expect_state(ctx: CheckContext, task: dict[str, Any], allowed: tuple[str, ...], what: str, statement: str = "") -> None:
    state = dig(task, "status", "state")
    ctx.expect(state in allowed, f"{what}: the task is {state!r}, {statement or 'the document allows ' + ' or '.join(allowed)}",
               kind="state_changed")


def receipt_fields(ctx: CheckContext) -> tuple[str, ...]:
    """The receipt's members the document names (intent_and_receipt.confirmed_storage)."""
    return ("message_sent", "original_message_sent")


def find_receipt(c: PlazaClient, task: Any) -> dict[str, Any] | None:
    """The send receipt of a text's task wherever the answer carries it (metadata, a data
    part of the status message, any depth): the object holding the document's
    message_sent or original_message_sent, or whose record_type is its receipt_record_type."""
    kind = evidence(c.ctx)["receipt_record_type"]
    names = receipt_fields(c.ctx)
    return next((f.value for f in locate.walk(task) if isinstance(f.value, dict)
                 and (any(n in f.value for n in names) or f.value.get("record_type") == kind)), None)


def receipt_message_id(c: PlazaClient, receipt: Any) -> Any:
    """The id of the message a receipt confirms (message.id; or the id of the message
    record, record_type message, it holds)."""
    found = dig(receipt, "message", "id")
    if found is None:
        kind = evidence(c.ctx)["message_record_type"]
        record = next((f.value for f in locate.walk(receipt) if f.value is not receipt and isinstance(f.value, dict)
                       and f.value.get("record_type") == kind), None)
        found = dig(record, "id")
    return found


def sent_message_id(c: PlazaClient, task: dict[str, Any]) -> Any:
    return receipt_message_id(c, find_receipt(c, task))


# ----------------------------------------------------------------------------------
# consent
# ----------------------------------------------------------------------------------
def check_invite(ctx: CheckContext) -> None:
    """A first text to a visitor's public UUID is an invitation: stored, awaiting a decision,
    not a completed chat; the invitee can read it."""
    c = PlazaClient(ctx)
    c.clear_pair(ALICE, BOB)  # a live site: no open connection left between the two
    text = f"an invitation {fresh_id()[:8]}"
    task = c.task_of(c.text(ALICE, text, to=c.agent_id(BOB)), "the first text to bob")
    expect_state(ctx, task, OPEN_STATES, "a first text", "an invitation is awaiting a decision, never completed")
    connection = c.connection_of(task)
    ctx.expect(isinstance(connection, str) and connection, f"the invitation's task names no connection: {json.dumps(task)[:300]}",
               kind="malformed_answer")
    ctx.expect(text in texts_in(c, BOB, str(connection), [text]),
               f"bob does not find a message record carrying the invitation's text {text!r} when reading the connection")


def check_invite_unknown(ctx: CheckContext) -> None:
    """recipientId must be an existing public visitor UUID: another is refused, storing nothing."""
    c = PlazaClient(ctx)
    c.clear_pair(ALICE, BOB)  # a live site: the control below is a first contact
    before = c.snapshot() if ctx.run.control_path else None
    expect_refused(ctx, c.text(ALICE, "hello nobody", to=fresh_id()), "a first text to a UUID that is no visitor")
    if before is not None:
        ctx.expect(c.snapshot() == before, "a first text to no visitor changed the site's state", kind="state_changed")
    served(ctx, c.text(ALICE, "hello somebody", to=c.agent_id(BOB)), "the same first text to bob's public UUID", by="PLAZA-FRIEND-INVITE")


def check_pending(ctx: CheckContext, strict: bool = False) -> None:
    """Until the invitee accepts, neither side writes again; reading the invitation decides nothing."""
    c = PlazaClient(ctx)
    _, connection = c.invite()
    with ctx.subcheck("a second text from the inviter"):
        refused_as(ctx, c.text(ALICE, "a second text before acceptance", context=connection), "NOT_PERMITTED",
                   "a text in a pending invitation", strict)
    with ctx.subcheck("a text from the invitee before accepting"):
        page(c, BOB, connection, "bob reads the invitation")
        refused_as(ctx, c.text(BOB, "a reply without accepting", context=connection), "NOT_PERMITTED",
                   "a text by the invitee who has read but not accepted the invitation", strict)
    c.accept(connection, BOB)
    served(ctx, c.text(ALICE, "a second text after acceptance", context=connection),
           "the inviter's second text once the invitee accepted", by="PLAZA-CONSENT-RESPOND")


def check_respond(ctx: CheckContext) -> None:
    """Only the invitee decides; after its accept both sides write."""
    c = PlazaClient(ctx)
    _, connection = c.invite()
    with ctx.subcheck("the inviter accepts its own invitation"):
        expect_refused(ctx, c.command("respond", {"connection_id": connection, "decision": "accept"}, ALICE),
                       "respond accept by the inviter")
    c.accept(connection, BOB)
    for who in (BOB, ALICE):
        with ctx.subcheck(f"a text from {who} after acceptance"):
            c.task_of(c.text(who, f"after acceptance, {who}", context=connection), f"a text from {who} in an accepted connection")


def check_decline(ctx: CheckContext) -> None:
    c = PlazaClient(ctx)
    _, connection = c.invite()
    with ctx.subcheck("decline"):
        expect_result(ctx, c.command("respond", {"connection_id": connection, "decision": "decline"}, BOB), "respond decline")
        expect_refused(ctx, c.text(ALICE, "after a decline", context=connection), "a text in a declined invitation")
    with ctx.subcheck("close"):
        friends = c.befriend(ALICE, CAROL)
        served(ctx, c.text(CAROL, "before the close", context=friends), "carol's text before alice closes", by="PLAZA-FRIEND-MESSAGE")
        expect_result(ctx, c.command("respond", {"connection_id": friends, "decision": "close"}, ALICE), "respond close")
        expect_refused(ctx, c.text(CAROL, "after the close", context=friends), "a text in a connection its peer closed")


def check_consecutive(ctx: CheckContext) -> None:
    """Accepted friends send several texts in a row: no strict alternation."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    sent = [f"supplement {i} {fresh_id()[:6]}" for i in range(3)]
    for text in sent:
        c.task_of(c.text(ALICE, text, context=connection), f"text {text!r} in a row")
    got = [t for t in texts_in(c, BOB, connection, sent) if t in sent]
    ctx.expect(got == sent, f"bob reads {got} of the consecutive texts {sent}")


def check_message(ctx: CheckContext) -> None:
    """Texts by contextId reach the peer, in order, both ways."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    first, second = f"from alice {fresh_id()[:6]}", f"from bob {fresh_id()[:6]}"
    c.say(ALICE, connection, first)
    c.say(BOB, connection, second)
    for who in (ALICE, BOB):
        got = [t for t in texts_in(c, who, connection, (first, second)) if t in (first, second)]
        ctx.expect(got == [first, second], f"{who} reads {got}, the texts were sent as {[first, second]}")


def check_friend_control(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx)
    connection = c.befriend()
    control = partial(c.command, "friend_control")
    with ctx.subcheck("block"):
        expect_result(ctx, control({"connection_id": connection, "decision": "block"}, BOB), "friend_control block")
        refused_as(ctx, c.text(ALICE, "to a friend who blocked me", context=connection), "NOT_PERMITTED", "a text after the peer blocked", strict)
    with ctx.subcheck("unblock"):
        expect_result(ctx, control({"connection_id": connection, "decision": "unblock"}, BOB), "friend_control unblock")
        c.task_of(c.text(ALICE, "after unblock", context=connection), "a text after the peer unblocked")
    with ctx.subcheck("remove"):
        served(ctx, c.text(BOB, "before the removal", context=connection), "bob's text before the removal", by="PLAZA-FRIEND-MESSAGE")
        expect_result(ctx, control({"connection_id": connection, "decision": "remove"}, ALICE), "friend_control remove")
        refused_as(ctx, c.text(BOB, "to a friend who removed me", context=connection), "NOT_PERMITTED", "a text after removal", strict)


def check_stop(ctx: CheckContext, strict: bool = False) -> None:
    """After stop the agent's sends are refused (no command resumes it: the reference's
    reset does; without control only a disposable agent is stopped, keeper.stopper)."""
    who, peer = stopper(ctx)
    c = PlazaClient(ctx)
    connection = c.befriend(who, peer)
    served(ctx, c.text(who, "before stop", context=connection), f"{who}'s text before stop", by="PLAZA-FRIEND-MESSAGE")
    expect_result(ctx, c.command("stop", {}, who), "stop")
    refused_as(ctx, c.text(who, "after stop", context=connection), "NOT_PERMITTED", "a text after the agent stopped", strict)


def check_send_context(ctx: CheckContext) -> None:
    """A text to a connection the caller is no participant of is refused and stored nowhere."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    text = f"intruder {fresh_id()[:6]}"
    expect_refused(ctx, c.text(CAROL, text, context=connection), "carol's text in alice and bob's connection")
    ctx.expect(not mentions(page(c, BOB, connection, "read_conversation as bob"), text), "carol's refused text is in alice and bob's connection",
               kind="auth_not_enforced")
    served(ctx, c.text(ALICE, f"participant {fresh_id()[:6]}", context=connection), "a participant's text in the connection",
           by="PLAZA-FRIEND-MESSAGE")


def check_context_match(ctx: CheckContext, strict: bool = False) -> None:
    """A data command's connection_id and a supplied contextId must agree."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    served(ctx, c.command("read_conversation", {"connection_id": connection}, ALICE), "read_conversation whose contextId is its connection_id",
           by="PLAZA-READ")
    reply = c.command("read_conversation", {"connection_id": connection}, ALICE, context=fresh_id())
    refused_as(ctx, reply, INVALID, "read_conversation whose contextId differs from its connection_id", strict)


# ----------------------------------------------------------------------------------
# idempotency
# ----------------------------------------------------------------------------------
def check_replay(ctx: CheckContext) -> None:
    """The same messageId and message replay the original receipt; nothing more is stored."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    text = f"sent twice {fresh_id()[:6]}"
    params = c.params({"text": text}, context=connection)
    first = c.task_of(c.send(params), "the first send")
    again = c.task_of(c.send(copy.deepcopy(params)), "the same send again")
    ctx.expect(again["id"] == first["id"], f"the replay answered task {again['id']!r}, the original is {first['id']!r}", kind="state_changed")
    receipt = find_receipt(c, again) or {}
    ctx.expect(receipt.get("original_message_sent") is True,
               f"the replay's receipt is {json_excerpt(receipt)} (looked for the object holding message_sent or "
               f"original_message_sent anywhere in the task): an identical replay says original_message_sent=true")
    original, replayed = sent_message_id(c, first), receipt_message_id(c, receipt)
    ctx.expect(replayed is not None and replayed == original,
               f"the replay's receipt names message {replayed!r}, the original receipt {original!r}: a replay returns the original message.id")
    count = texts_in(c, BOB, connection, [text]).count(text)
    ctx.expect(count == 1, f"after a replay bob reads the text {count} times", kind="state_changed")


def check_consumed(ctx: CheckContext, strict: bool = False) -> None:
    """Another message under a used messageId is CONTEXT_CONSUMED and is not sent."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    message_id = fresh_id()
    draft = f"the first draft {fresh_id()[:6]}"
    c.task_of(c.text(ALICE, draft, context=connection, message_id=message_id), "the first send")
    other = f"another draft {fresh_id()[:6]}"
    refused_as(ctx, c.text(ALICE, other, context=connection, message_id=message_id), "CONTEXT_CONSUMED",
               "a different message under a used messageId", strict)
    ctx.expect(not mentions(page(c, BOB, connection, "read_conversation as bob"), other),
               "the draft refused under a consumed messageId was delivered", kind="state_changed")
    ctx.expect(texts_in(c, BOB, connection, [draft]).count(draft) == 1,
               f"after CONTEXT_CONSUMED bob no longer reads the first draft {draft!r} once: the old intent's message stays as stored",
               kind="state_changed")
    served(ctx, c.text(ALICE, other, context=connection), "the same draft under a new messageId", by="PLAZA-IDEM-NEW-ID")


def check_new_id(ctx: CheckContext) -> None:
    """A new intent with a new messageId is a new message, even with the same text."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    text = f"same words {fresh_id()[:6]}"
    for _ in range(2):
        c.task_of(c.text(ALICE, text, context=connection), "a text under a new messageId")
    count = texts_in(c, BOB, connection, [text]).count(text)
    ctx.expect(count == 2, f"two messageIds with the same text gave {count} messages", kind="state_changed")


def check_replay_recheck(ctx: CheckContext) -> None:
    """A replay is checked again: refused once the peer blocked the sender; another agent
    using the same messageId never gets the sender's receipt."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    params = c.params({"text": f"replayed later {fresh_id()[:6]}"}, context=connection)
    first = c.task_of(c.send(params), "the first send")
    with ctx.subcheck("another agent with the same messageId"):
        reply = c.send(copy.deepcopy(params), CAROL)
        ctx.expect(not reply.ok or not locate.holds(reply.result, first["id"]),
                   f"carol's request with alice's messageId answered alice's task {first['id']}", kind="auth_not_enforced")
    with ctx.subcheck("after the peer blocked the sender"):
        served(ctx, c.send(copy.deepcopy(params)), "the identical replay before the block", by="PLAZA-IDEM-REPLAY")
        expect_result(ctx, c.command("friend_control", {"connection_id": connection, "decision": "block"}, BOB), "friend_control block")
        expect_refused(ctx, c.send(copy.deepcopy(params)), "the replay of a text after the peer blocked the sender")


def check_receipt(ctx: CheckContext) -> None:
    """A stored text comes with a message_sent=true receipt naming the message id."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    task = c.task_of(c.text(ALICE, "with a receipt", context=connection), "a text")
    receipt = find_receipt(c, task)
    ctx.expect(receipt is not None and receipt.get("message_sent") is True and receipt_message_id(c, receipt),
               f"looked for a message_sent=true receipt with message.id anywhere in the text's task and found "
               f"{json_excerpt(receipt) if receipt is not None else 'none'}: {json_excerpt(task, 400)}", kind="schema_mismatch")


# ----------------------------------------------------------------------------------
# tasks
# ----------------------------------------------------------------------------------
def get(c: PlazaClient, task_id: str, who: str = ALICE, what: str = "GetTask", **fields: Any) -> dict[str, Any]:
    return c.task_of(c.get_task(task_id, who, **fields), what)


def check_task_states(ctx: CheckContext) -> None:
    """Submitted or working until a later peer message exists; accepting alone is no reply."""
    c = PlazaClient(ctx)
    task, connection = c.invite()
    expect_state(ctx, get(c, task["id"], what="GetTask of a pending invitation"), OPEN_STATES, "a pending invitation")
    c.accept(connection, BOB)
    expect_state(ctx, get(c, task["id"], what="GetTask after the peer accepted"), OPEN_STATES, "an accepted invitation without reply",
                 "accepting is not a chat reply: submitted or working")
    drain(c, BOB, c.client_key(BOB))  # bob acknowledges the invitation's receive batch: an ack is no reply
    expect_state(ctx, get(c, task["id"], what="GetTask after the peer acknowledged its receive batch"), OPEN_STATES,
                 "a task whose peer only acknowledged the receive batch", "a transport ack is no reply: submitted or working")
    c.say(BOB, connection, "a real later peer message")
    expect_state(ctx, get(c, task["id"], what="GetTask after the peer wrote"), (COMPLETED,), "a task with a later peer message",
                 "completed once a real later peer message is present")


def check_task_cancel(ctx: CheckContext) -> None:
    """CancelTask ends only the caller's wait: the message and the friendship remain."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    text = f"then cancelled {fresh_id()[:6]}"
    task = c.say(ALICE, connection, text)
    with ctx.setup("bob reads the delivered text before the cancel", by="PLAZA-FRIEND-MESSAGE"):
        ctx.expect(text in texts_in(c, BOB, connection, [text]),
                   f"looked for a message record carrying {text!r} in bob's read of the connection and found none")
    done = c.task_of(c.rpc("CancelTask", {"id": task["id"]}), "CancelTask")
    expect_state(ctx, done, CANCELED, "CancelTask of a working task")
    ctx.expect(text in texts_in(c, BOB, connection, [text]),
               f"bob read the delivered text {text!r} before CancelTask and no longer finds it after", kind="state_changed")
    c.task_of(c.text(ALICE, "the friendship remains", context=connection), "a text after CancelTask")


def check_task_terminal(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx)
    connection = c.befriend()
    task = c.say(ALICE, connection, "answered soon")
    c.say(BOB, connection, "the answer")
    refused_as(ctx, c.rpc("CancelTask", {"id": task["id"]}), "TASK_NOT_CANCELABLE", "CancelTask of a completed task", strict)
    expect_state(ctx, get(c, task["id"]), (COMPLETED,), "a completed task after a refused CancelTask")
    if not strict:  # multiTurn: a new intent goes "without a terminal taskId" (A2A: a terminal task takes no message)
        with ctx.subcheck("a text naming the completed task"):
            refused_as(ctx, c.text(ALICE, "to a finished task", context=connection, taskId=task["id"]), "UNSUPPORTED_OPERATION",
                       "a text naming a completed taskId", False)
            served(ctx, c.text(ALICE, "to a finished task", context=connection), "the same text without the taskId",
                   by="PLAZA-FRIEND-MESSAGE")
    waiting = c.say(ALICE, connection, "not answered yet")
    served(ctx, c.rpc("CancelTask", {"id": waiting["id"]}), "CancelTask of alice's task still waiting", by="PLAZA-TASK-CANCEL")


def check_history_zero(ctx: CheckContext) -> None:
    c = PlazaClient(ctx)
    connection = c.befriend()
    params = c.params({"text": "history zero"}, context=connection)
    params["configuration"]["historyLength"] = 0
    with ctx.subcheck("configuration.historyLength 0"):
        task = c.task_of(c.send(params), "SendMessage with historyLength 0")
        ctx.expect(not task.get("history"), f"historyLength 0 answered history {json.dumps(task.get('history'))[:200]}")
    with ctx.subcheck("GetTask historyLength 0"):
        seen = get(c, task["id"], historyLength=0)
        ctx.expect(not seen.get("history"), f"GetTask historyLength 0 answered history {json.dumps(seen.get('history'))[:200]}")


def task_ids(c: PlazaClient, who: str) -> set[Any]:
    result = expect_result(c.ctx, c.rpc("ListTasks", {}, who), f"ListTasks as {who}", ["tasks"])
    return {dig(t, "id") for t in result["tasks"]} if isinstance(result["tasks"], list) else set()


def check_list_own(ctx: CheckContext) -> None:
    c = PlazaClient(ctx)
    mine, _ = c.invite(ALICE, BOB)
    theirs, _ = c.invite(CAROL, BOB)
    listed = task_ids(c, ALICE)
    ctx.expect(mine["id"] in listed, f"ListTasks as alice lacks alice's task {mine['id']}")
    ctx.expect(theirs["id"] not in listed, "ListTasks as alice lists carol's task", kind="auth_not_enforced")


def check_task_isolation(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx)
    task, _ = c.invite(ALICE, BOB)
    for method in ("GetTask", "CancelTask"):
        with ctx.subcheck(f"{method} by another agent"):
            refused_as(ctx, c.rpc(method, {"id": task["id"]}, CAROL), "TASK_NOT_FOUND", f"{method} of alice's task by carol", strict)
    expect_state(ctx, get(c, task["id"]), OPEN_STATES, "alice's task after carol's refused CancelTask")


def check_deadline(ctx: CheckContext, strict: bool = False) -> None:
    """A blocking send (returnImmediately defaults to false) with no peer reply ends at the
    server's deadline in a recoverable error, never a fake input-required task."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    deadline = float(ctx.profile.limits["deadline_s"].value)
    if ctx.run.control_path:
        deadline = SHORT_DEADLINE_S
        ctx.control("set_deadline", seconds=deadline)
    served(ctx, c.text(ALICE, "not waiting for a reply", context=connection), "a text with returnImmediately in the connection",
           by="PLAZA-FRIEND-MESSAGE")
    started = time.monotonic()
    reply = c.send(c.params({"text": "waiting for a reply"}, context=connection, configuration=None), timeout=deadline + 10)
    took = time.monotonic() - started
    ctx.expect(not reply.ok, f"a blocking send without a peer reply answered {reply.describe()} after {took:.1f} s: "
               f"the document says a wait past the deadline yields a deadline error, not a status", kind="state_changed")
    refused_as(ctx, reply, "DEADLINE_EXCEEDED", "a blocking send past the deadline", strict)
    if strict:
        retry = dig(error_info(reply, detail_type(ctx)), "metadata", "retryable")
        ctx.expect(retry == "true", f"the deadline error's metadata says retryable {retry!r}, the profile says \"true\"", kind="schema_mismatch")


# ----------------------------------------------------------------------------------
# credentials
# ----------------------------------------------------------------------------------
def check_scopes(ctx: CheckContext) -> None:
    """A read-only credential reads but does not write (the profile's scope mapping)."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    with ctx.subcheck("a text with read scopes only"):
        refused_as(ctx, c.text("reader", "no write scope", context=connection), "FORBIDDEN", "a text with only read scopes", True)
    with ctx.subcheck("a read with read scopes"):
        page(c, "reader", connection, "read_conversation with read scopes only")


def check_owner_refused(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    token = ctx.token("owner")
    served(ctx, c.command("status", {}), "the status command with alice's visitor credential")
    expect_refused(ctx, c.command("status", {}, RawToken(str(token))), "the status command with an owner account's credential")


def check_replay_auth(ctx: CheckContext) -> None:
    """A retry is authenticated again: the same request without a valid token is refused."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    params = c.params({"text": "authenticated once"}, context=connection)
    task = c.task_of(c.send(params), "the first send")
    served(ctx, c.command("read_conversation", {"connection_id": connection}, ALICE), "alice's history read with her token",
           by="PLAZA-READ")
    for what, who in (("without a token", None), ("with a token the site never issued", RawToken("plaza-" + fresh_id()))):
        with ctx.subcheck(what):
            expect_refused(ctx, c.send(copy.deepcopy(params), who), f"the replay {what}")
            expect_refused(ctx, c.command("read_conversation", {"connection_id": connection}, who), f"a history read {what}")
            expect_refused(ctx, c.rpc("CancelTask", {"id": task["id"]}, who), f"a cancellation {what}")
    served(ctx, c.rpc("CancelTask", {"id": task["id"]}), "alice's cancellation with her token", by="PLAZA-TASK-CANCEL")


def check_account_agent(ctx: CheckContext) -> None:
    """An account Agent's credential (the config's reader) is accepted."""
    c = PlazaClient(ctx, reset=False)
    ctx.token("reader")
    c.data_of(c.command("status", {}, "reader"), "the status command with an account Agent's credential")


def check_resource_metadata(ctx: CheckContext) -> None:
    """The protected-resource metadata is served and names the endpoint as its resource;
    any list of the document's scopes it gives stays within them (found by content: the
    URL whose path is the endpoint's, the lists holding a scope of the document)."""
    from urllib.parse import urlparse

    account = ctx.profile.spec["identity"]["profiles"]["accountAgent"]
    path = urlparse(account["resourceMetadata"]).path
    reply = ctx.http.request("GET", path)
    meta = expect_mapping(ctx, reply.json() if reply.status == 200 else None, f"GET {path} (HTTP {reply.status})")
    endpoint = urlparse(account["resource"]).path

    def names_endpoint(value: Any) -> bool:
        return isinstance(value, str) and value.startswith(("http://", "https://")) and urlparse(value).path == endpoint

    ctx.expect(locate.matching(meta, names_endpoint),
               f"looked for the endpoint's URL (path {endpoint}) anywhere in the protected-resource metadata and found none: "
               f"{json_excerpt(meta)}; the document says its resource is {account['resource']}")
    supported = set(account["supportedScopes"])
    for scopes in locate.lists_of(meta):
        if all(isinstance(s, str) for s in scopes) and supported & set(scopes):
            ctx.expect(set(scopes) <= supported, f"the metadata lists scopes {scopes}, beyond the document's {sorted(supported)}")


def check_no_secret_in_args(ctx: CheckContext) -> None:
    """A credential put in the message instead of the Authorization header is no credential."""
    c = PlazaClient(ctx, reset=False)
    token = str(ctx.token(ALICE))
    params = c.params({"data": {"operation": "status"}}, metadata={"token": token, "Authorization": f"Bearer {token}"})
    expect_refused(ctx, c.send(params, None), "the status command with the token in message.metadata and no bearer")


def check_identity_stable(ctx: CheckContext) -> None:
    """Tasks create no new identity: where the status command names the caller's public
    id, it still does after a task; the text is sent under that id (its receipt's sender)."""
    c = PlazaClient(ctx)
    mine = c.agent_id(ALICE)
    before = locate.holds(c.data_of(c.command("status", {}), "status"), mine)
    task, _ = c.invite()
    sender = field(find_receipt(c, task), "sender")
    after = c.data_of(c.command("status", {}), "status")
    ctx.expect(sender in (None, mine), f"alice's text was sent as {sender!r}, not as her identity {mine}", kind="state_changed")
    ctx.expect(not before or locate.holds(after, mine),
               f"the status command named alice's public id {mine} before a task and no longer after: {json_excerpt(after)}",
               kind="state_changed")


# ----------------------------------------------------------------------------------
# the document's examples, sent as written
# ----------------------------------------------------------------------------------
class ExampleWorld:
    """Real values for the examples' placeholders, found where the examples put them."""

    def __init__(self, c: PlazaClient) -> None:
        self.c = c
        ex = c.spec["examples"]
        self.placeholders = {
            "recipient": ex["firstInvitation"]["params"]["message"]["metadata"][c.ext]["recipientId"],
            "connection": ex["readConversation"]["params"]["message"]["contextId"],
            "task": ex["getTask"]["params"]["id"],
            "client_key": ex["receivePending"]["params"]["message"]["parts"][0]["data"]["client_key"],
            "group": ex["groupMessages"]["params"]["message"]["parts"][0]["data"]["group_id"],
            "own_message": ex["messageStatus"]["params"]["message"]["parts"][0]["data"]["message_id"],
        }
        self.values: dict[str, str] = {}

    def fill(self, name: str) -> dict[str, Any]:
        """The example with a fresh messageId and every placeholder replaced by its real value."""
        body = self.c.example(name)
        mapping = {self.placeholders[k]: v for k, v in self.values.items()}

        def walk(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return mapping.get(value, value) if isinstance(value, str) else value

        body = walk(body)
        if isinstance(dig(body, "params", "message"), dict):
            body["params"]["message"]["messageId"] = fresh_id()
        return body


def example_world(c: PlazaClient, name: str) -> ExampleWorld:
    """What an example needs before it is sent: a friend, a pending invitation, a task."""
    world = ExampleWorld(c)
    world.values.update(recipient=c.agent_id(BOB), client_key=fresh_id(), group=fresh_id())
    if name == "firstInvitation":
        c.clear_pair(ALICE, BOB)  # a live site: no open connection left between the two
    elif name == "acceptInvitation":
        _, world.values["connection"] = c.invite(ALICE, BOB)
    elif name == "groupMessages":
        from conformance.protocols.plaza import groups

        world.values["group"] = groups.example_group(c)
    elif name in ("existingConversationText", "continuationNegotiate", "directStatus"):
        world.values["connection"] = c.befriend()
    elif name in ("readConversation", "messageStatus", "completeRound", "getTask"):
        connection = c.befriend()
        text = f"an example's own message {fresh_id()[:8]}"
        task = c.say(ALICE, connection, text)
        own = sent_message_id(c, task)
        own = own if isinstance(own, str) else own_id(c, ALICE, connection, text)  # no receipt id: read it by its text
        world.values.update(connection=connection, task=str(task["id"]), own_message=own)
    return world


EXAMPLE_CALLER = {"acceptInvitation": BOB}
TEXT_EXAMPLES = ("firstInvitation", "existingConversationText")


def check_example(name: str, ctx: CheckContext) -> None:
    """The example, placeholders filled, is served as its section says: a text answers a
    task awaiting its peer, a data command a ROLE_AGENT message, GetTask the task."""
    c = PlazaClient(ctx)
    body = example_world(c, name).fill(name)
    deadline = float(ctx.profile.limits["deadline_s"].value)
    if ctx.run.control_path:  # receivePending waits for work up to the server's deadline
        deadline = SHORT_DEADLINE_S
        ctx.control("set_deadline", seconds=deadline)
    reply = c.raw(json.dumps(body), EXAMPLE_CALLER.get(name, ALICE), timeout=deadline + 10)
    if unsupported(ctx, reply):
        raise Untested(f"the target answers the {name} example {UNSUPPORTED} (not served)", "optional")
    if name in TEXT_EXAMPLES:
        expect_state(ctx, c.task_of(reply, f"the {name} example"), OPEN_STATES, f"the {name} example")
    elif body["method"] == "GetTask":
        task = c.task_of(reply, f"the {name} example")
        ctx.expect(task.get("id") == body["params"]["id"], f"GetTask answered task {task.get('id')!r} for {body['params']['id']!r}")
    else:
        message = c.message_of(reply, f"the {name} example")
        ctx.expect(message.get("role") == "ROLE_AGENT", f"the {name} example answered role {message.get('role')!r}")
        c.data_of(reply, f"the {name} example")


def example_rows(t: Table) -> list[Requirement]:
    out = []
    for name in t.profile.spec["examples"]:
        rid = "PLAZA-EXAMPLE-" + "".join("-" + ch if ch.isupper() else ch.upper() for ch in name)
        out.append(t.req(rid, "MUST", f"The {name} example, placeholders filled, is served as its section says",
                         t.at(f"/examples/{name}"), partial(check_example, name), (f"example_{name}_refused",)))
    return out


# ----------------------------------------------------------------------------------
# rows
# ----------------------------------------------------------------------------------
def rows(t: Table) -> list[Requirement]:
    at = t.at
    pair: Callable[..., list[Requirement]] = t.pair
    return [
        t.req("PLAZA-FRIEND-INVITE", "MUST", "A first text to a visitor's UUID is an invitation awaiting a decision",
              at("/textTarget/newConnection"), check_invite, ("invitation_completes_task", "invitation_not_stored")),
        t.req("PLAZA-FRIEND-INVITE-UNKNOWN", "MUST", "A first text to a UUID that is no visitor is refused and stores nothing",
              at("/textTarget/newConnection/format"), check_invite_unknown, ("unknown_recipient_accepted",)),
        *pair("PLAZA-CONSENT-PENDING", "A pending invitation takes no further text from either side until accepted", at("/consent"),
              check_pending, ("pending_treated_as_accepted", "reading_accepts_invitation"), "NOT_PERMITTED", ("pending_wrong_code",)),
        t.req("PLAZA-CONSENT-RESPOND", "MUST", "Only the invitee accepts; then both sides write", at("/consent"), check_respond,
              ("inviter_can_accept", "accept_ignored")),
        t.req("PLAZA-FRIEND-DECLINE", "MUST", "A declined invitation takes no text, nor a connection its peer closed",
              at("/schemas/command/anyOf/48/properties/decision"), check_decline, ("decline_ignored", "respond_close_ignored")),
        t.req("PLAZA-FRIEND-CONSECUTIVE", "MUST", "Accepted friends send consecutive texts (no strict alternation)", at("/multiTurn"),
              check_consecutive, ("strict_alternation",)),
        t.req("PLAZA-FRIEND-MESSAGE", "MUST", "Texts by contextId reach the peer in order, both ways", at("/textTarget/existingConnection"),
              check_message, ("texts_out_of_order",)),
        *pair("PLAZA-FRIEND-CONTROL", "friend_control block, unblock and remove govern who may write", at("/schemas/command/anyOf/49"),
              check_friend_control, ("block_ignored", "remove_ignored"), "NOT_PERMITTED", ("control_refusal_wrong_code",)),
        *lasting(pair("PLAZA-STOP", "After stop the agent's sends are refused", at("/authorization"), check_stop, ("stop_ignored",),
                      "NOT_PERMITTED", ("stop_refusal_wrong_code",)), STOPS),
        t.req("PLAZA-SEND-CONTEXT", "MUST", "A text to a connection of others is refused and stored nowhere", at("/authorization"),
              check_send_context, ("foreign_context_send",)),
        *pair("PLAZA-ROUTE-CONTEXT-MATCH", "A command's connection_id and a supplied contextId must match",
              at("/conversationRead/target"), check_context_match, ("context_mismatch_accepted",), INVALID, ("context_mismatch_wrong_code",)),
        t.req("PLAZA-IDEM-REPLAY", "MUST", "The same messageId and message replay the original receipt and store nothing",
              at("/durableReceive/private_chat/intent_and_receipt/confirmed_storage"), check_replay, ("replay_stores_again", "replay_new_receipt")),
        *pair("PLAZA-IDEM-CONSUMED", "Another message under a used messageId is refused and not sent",
              at("/durableReceive/private_chat/intent_and_receipt/consumed_different_body"), check_consumed, ("changed_body_stored", "consumed_drops_original"),
              "CONTEXT_CONSUMED", ("consumed_wrong_code",)),
        t.req("PLAZA-IDEM-NEW-ID", "MUST", "A new messageId is a new message, whatever its text", at("/multiTurn"), check_new_id,
              ("dedupe_by_text",)),
        t.req("PLAZA-IDEM-REPLAY-RECHECK", "MUST", "A replay is checked again and never hands another agent's receipt",
              at("/authorization"), check_replay_recheck, ("replay_skips_controls", "message_ids_global")),
        t.req("PLAZA-SEND-RECEIPT", "MUST", "A stored text answers a message_sent=true receipt with the message id",
              at("/durableReceive/private_chat/intent_and_receipt/confirmed_storage"), check_receipt, ("receipt_without_message_id",)),
        t.req("PLAZA-TASK-STATES", "MUST", "A text's task is submitted or working until a later peer message completes it",
              at("/tasks/completed"), check_task_states, ("accept_completes_task", "peer_message_not_completing", "ack_completes_task")),
        t.req("PLAZA-TASK-CANCEL", "MUST", "CancelTask ends only the caller's wait; messages and friendship remain", at("/tasks/cancel"),
              check_task_cancel, ("cancel_deletes_message", "cancel_ends_friendship")),
        *pair("PLAZA-TASK-TERMINAL", "A completed task is not cancelled and takes no further text", at("/tasks/cancel"), check_task_terminal,
              ("cancel_completed_allowed", "terminal_task_text_accepted"), "TASK_NOT_CANCELABLE", ("not_cancelable_wrong_code",)),
        t.req("PLAZA-TASK-HISTORY-ZERO", "MUST", "historyLength 0 omits the history", at("/tasks/historyLengthZero"), check_history_zero,
              ("history_zero_ignored",)),
        t.req("PLAZA-TASK-LIST-OWN", "MUST", "ListTasks lists the caller's tasks only", at("/tasks/resume"), check_list_own,
              ("list_tasks_of_everyone",)),
        *pair("PLAZA-TASK-ISOLATION", "Another agent's task is neither read nor cancelled", at("/authorization"), check_task_isolation,
              ("foreign_task_readable", "foreign_task_cancelable"), "TASK_NOT_FOUND", ("foreign_task_wrong_code",)),
        *pair("PLAZA-TASK-DEADLINE", "A blocking send past the server's deadline ends in a recoverable error", at("/tasks/blocking"),
              check_deadline, ("deadline_fake_input_required",), "DEADLINE_EXCEEDED", ("deadline_not_retryable",)),
        t.req("PLAZA-AUTH-SCOPES", "SHOULD", "A credential without the write scopes reads but does not write",
              t.chosen("docs/agent-plaza.md#scopes"), check_scopes, ("scopes_ignored",)),
        t.req("PLAZA-AUTH-OWNER-CREDENTIAL-REFUSED", "MUST", "An owner account's credential is not accepted",
              at("/identity/ownerAccountCredentialAccepted"), check_owner_refused, ("owner_credential_accepted",)),
        t.req("PLAZA-AUTH-RECHECK", "MUST", "Every retry, history read and cancellation checks the current credential", at("/authorization"), check_replay_auth,
              ("replay_skips_auth", "history_and_cancel_skip_auth")),
        t.req("PLAZA-AUTH-ACCOUNT-AGENT", "MUST", "An account Agent's credential is accepted",
              at("/identity/accountAgentCredentialAccepted"), check_account_agent, ("account_agent_refused",)),
        t.req("PLAZA-AUTH-RESOURCE-METADATA", "MUST", "The protected-resource metadata names the endpoint",
              at("/identity/profiles/accountAgent/resourceMetadata"), check_resource_metadata, ("resource_metadata_wrong",)),
        t.req("PLAZA-AUTH-NO-SECRET-IN-ARGS", "MUST", "A credential inside the A2A arguments is not accepted",
              at("/identity/privateSecretInA2AArgumentsAllowed"), check_no_secret_in_args, ("token_in_metadata_accepted",)),
        t.req("PLAZA-IDENTITY-STABLE", "MUST", "No new identity per task", at("/identity/newIdentityPerTask"), check_identity_stable,
              ("identity_per_task",)),
        *example_rows(t),
    ]


__all__ = ["find_receipt", "rows", "texts_in"]
