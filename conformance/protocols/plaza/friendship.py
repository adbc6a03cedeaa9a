"""Friendship and consent: a first text is an invitation the other agent must accept,
only the invitee decides, a declined or closed connection takes no text, friends write
in order and in a row, friend_control blocks and removes, a stopped agent sends
nothing, a stranger writes in no connection, and a command's connection_id and
contextId agree. Each requirement is declared on its check, with the faults that prove
it can fail; the readers of texts, tasks and receipts the other parts share are
answers.py's."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from conformance.checks.expect import expect_refused, expect_result, refused_as
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, fault, requirement
from conformance.kit.faults import answer, noop, recodes, refuses, replaces
from conformance.protocols.plaza.answers import (
    INVALID,
    OPEN_STATES,
    expect_state,
    mentions,
    page,
    served,
    texts_in,
)
from conformance.protocols.plaza.client import (
    ALICE,
    BOB,
    CANCELED,
    CAROL,
    ENDED_BY_SITE,
    WORKING,
    PlazaClient,
    fresh_id,
)
from conformance.protocols.plaza.keeper import STOPS, stopper
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import (
    ACTIVE,
    COMPLETED,
    DECLINED,
    INVALID_STATE,
    INVITATION,
    NOT_FOUND,
    NOT_PERMITTED,
    TASK_NOT_CANCELABLE,
    Issue,
    SiteError,
)


# ----------------------------------------------------------------------------------
# invitations and consent
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-FRIEND-INVITE", level="MUST",
             title="A first text to a visitor's UUID is an invitation awaiting a decision",
             source=at("/textTarget/newConnection"))
def check_invite(ctx: CheckContext) -> None:
    """A first text to a visitor's public UUID is an invitation: stored, awaiting a decision,
    not a completed chat; the invitee can read it."""
    c = PlazaClient(ctx)
    c.clear_pair(ALICE, BOB)  # a live site: no open connection left between the two
    text = f"an invitation {fresh_id()[:8]}"
    task = c.task_of(c.text(ALICE, text, to=c.agent_id(BOB)), "the first text to bob")
    expect_state(ctx, task, OPEN_STATES, "a first text",
                 "an invitation is awaiting a decision, never completed")
    connection = c.connection_of(task)
    ctx.expect(isinstance(connection, str) and connection,
               f"the invitation's task names no connection: {json.dumps(task)[:300]}",
               kind="malformed_answer")
    ctx.expect(text in texts_in(c, BOB, str(connection), [text]),
               f"bob does not find a message record carrying the invitation's text {text!r} when reading the "
               "connection")


@check_invite.fault
def invitation_completes_task(ref: PlazaReference) -> None:
    """An invitation's task is completed at once, as if the invitation were a chat reply."""
    @replaces(ref.task_state)
    def task_state(original: Any, task: dict[str, Any]) -> str:
        state: str = original(task)
        conn = ref.s["connections"][task["connection_id"]]
        return COMPLETED if state == WORKING and conn["state"] == INVITATION else state


@check_invite.fault
def invitation_not_stored(ref: PlazaReference) -> None:
    """The invitation's text is lost: the invitee reads an empty text."""
    @replaces(ref.store_message)
    def store_message(original: Any, conn: dict[str, Any], sender: str, text: str,
                      client_message_id: str) -> dict[str, Any]:
        if conn["state"] == INVITATION and not conn["messages"]:
            text = ""
        result: dict[str, Any] = original(conn, sender, text, client_message_id)
        return result


@requirement(id="PLAZA-FRIEND-INVITE-UNKNOWN", level="MUST",
             title="A first text to a UUID that is no visitor is refused and stores nothing",
             source=at("/textTarget/newConnection/format"))
def check_invite_unknown(ctx: CheckContext) -> None:
    """recipientId must be an existing public visitor UUID: another is refused, storing nothing."""
    c = PlazaClient(ctx)
    c.clear_pair(ALICE, BOB)  # a live site: the control below is a first contact
    before = c.snapshot() if ctx.run.control_path else None
    expect_refused(ctx, c.text(ALICE, "hello nobody", to=fresh_id()),
                   "a first text to a UUID that is no visitor")
    if before is not None:
        ctx.expect(c.snapshot() == before, "a first text to no visitor changed the site's state",
                   kind="state_changed")
    served(ctx, c.text(ALICE, "hello somebody", to=c.agent_id(BOB)),
           "the same first text to bob's public UUID",
           by="PLAZA-FRIEND-INVITE")


@check_invite_unknown.fault
def unknown_recipient_accepted(ref: PlazaReference) -> None:
    """A first text to a UUID that is no visitor makes one up."""
    @replaces(ref.first_contact)
    def first_contact(original: Any, sender: str, recipient: str) -> dict[str, Any]:
        if recipient not in ref.s["visitors"]:
            ref.add_visitor("made up", [], visitor_id=recipient)
        result: dict[str, Any] = original(sender, recipient)
        return result


@requirement(id="PLAZA-CONSENT-PENDING", level="MUST",
             title="A pending invitation takes no further text from either side until accepted",
             source=at("/consent"),
             code="NOT_PERMITTED", code_faults=["pending_wrong_code"])
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


@check_pending.fault
def pending_treated_as_accepted(ref: PlazaReference) -> None:
    """A pending invitation takes texts from both sides, as if accepted."""
    @replaces(ref.check_can_text)
    def check_can_text(original: Any, conn: dict[str, Any], visitor_id: str) -> None:
        if conn["state"] != INVITATION:
            original(conn, visitor_id)


@check_pending.fault
def reading_accepts_invitation(ref: PlazaReference) -> None:
    """The invitee reading a pending invitation accepts it."""
    @replaces(ref.readable_connection)
    def readable(original: Any, caller: str, connection_id: str) -> dict[str, Any]:
        conn: dict[str, Any] = original(caller, connection_id)
        if conn["state"] == INVITATION and conn["invitee"] == caller:
            conn["state"] = ACTIVE
        return conn


fault(refuses("pending_wrong_code", "check_can_text",
              lambda conn, visitor_id: SiteError(INVALID_STATE, "pending"), "",
              when=lambda conn, visitor_id: conn["state"] == INVITATION))


@requirement(id="PLAZA-CONSENT-RESPOND", level="MUST",
             title="Only the invitee accepts; then both sides write",
             source=at("/consent"),
             faults=["inviter_can_accept", noop("accept_ignored", "respond_accept",
                                                "respond accept answers but leaves the invitation pending.")])
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
            c.task_of(c.text(who, f"after acceptance, {who}", context=connection),
                      f"a text from {who} in an accepted connection")


@check_respond.fault
def inviter_can_accept(ref: PlazaReference) -> None:
    """The inviter may accept its own invitation."""
    @replaces(ref.decide_invitation)
    def decide(original: Any, conn: dict[str, Any], caller: str, outcome: str, change: str) -> None:
        original(conn, conn["invitee"], outcome, change)


@requirement(id="PLAZA-FRIEND-DECLINE", level="MUST",
             title="A declined invitation takes no text (its task open or ended by the site, then not "
                   "cancelable), nor a connection its peer closed",
             source=at("/schemas/command/anyOf/48/properties/decision"),
             faults=["decline_ignored", noop("respond_close_ignored", "respond_close",
                                             "respond close answers as done and closes nothing.")])
def check_decline(ctx: CheckContext) -> None:
    """A declined invitation takes no text; its task is no peer reply (/tasks/completed): open,
    or ended by the site as A2A 1.0 allows (REJECTED, a terminal state, so CancelTask may be
    refused, and only then); a connection its peer closed takes no text either."""
    c = PlazaClient(ctx)
    task, connection = c.invite()
    with ctx.subcheck("decline"):
        expect_result(ctx, c.command("respond", {"connection_id": connection, "decision": "decline"}, BOB),
                      "respond decline")
        expect_refused(ctx, c.text(ALICE, "after a decline", context=connection),
                       "a text in a declined invitation")
    with ctx.subcheck("the declined invitation's task"):
        seen = c.task_of(c.get_task(str(task["id"]), ALICE), "GetTask of the declined invitation's task")
        expect_state(ctx, seen, OPEN_STATES + ENDED_BY_SITE, "a declined invitation's task",
                     "a decline is no peer reply: open, or ended by the site (A2A's REJECTED)")
        reply = c.rpc("CancelTask", {"id": task["id"]}, ALICE)
        if reply.ok:
            expect_state(ctx, c.task_of(reply, "CancelTask of the declined invitation's task"), CANCELED,
                         "CancelTask of a declined invitation's open task")
        else:
            after = c.task_of(c.get_task(str(task["id"]), ALICE), "GetTask after the refused cancel")
            state = c.state_of(after)
            ctx.expect(state in ENDED_BY_SITE,
                       f"CancelTask of the declined invitation's task was refused ({reply.describe()}) while "
                       f"the task is {state!r}: only a task in a terminal state is not cancelable",
                       kind="state_changed")
    with ctx.subcheck("close"):
        friends = c.befriend(ALICE, CAROL)
        served(ctx, c.text(CAROL, "before the close", context=friends), "carol's text before alice closes",
               by="PLAZA-FRIEND-MESSAGE")
        expect_result(ctx, c.command("respond", {"connection_id": friends, "decision": "close"}, ALICE),
                      "respond close")
        expect_refused(ctx, c.text(CAROL, "after the close", context=friends),
                       "a text in a connection its peer closed")


@check_decline.fault
def decline_ignored(ref: PlazaReference) -> None:
    """respond decline activates the connection instead of ending it."""
    setattr(ref, "respond_decline", ref.respond_accept)  # noqa: B010 (one method of the instance)


@check_decline.fault
def declined_task_not_cancelable_yet_open(ref: PlazaReference) -> None:
    """CancelTask of a declined invitation's task is refused while the task still says it is open."""
    @replaces(ref.rpc_cancel_task)
    def cancel(original: Any, call: Any) -> Any:
        task = ref.owned_task(call.principal.visitor_id, call.params["id"])
        if ref.s["connections"][task["connection_id"]]["state"] == DECLINED:
            raise SiteError(TASK_NOT_CANCELABLE, "the invitation was declined")
        return original(call)


# ----------------------------------------------------------------------------------
# texts between friends
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-FRIEND-CONSECUTIVE", level="MUST",
             title="Accepted friends send consecutive texts (no strict alternation)",
             source=at("/multiTurn"))
def check_consecutive(ctx: CheckContext) -> None:
    """Accepted friends send several texts in a row: no strict alternation."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    sent = [f"supplement {i} {fresh_id()[:6]}" for i in range(3)]
    for text in sent:
        c.task_of(c.text(ALICE, text, context=connection), f"text {text!r} in a row")
    got = [t for t in texts_in(c, BOB, connection, sent) if t in sent]
    ctx.expect(got == sent, f"bob reads {got} of the consecutive texts {sent}")


@check_consecutive.fault
def strict_alternation(ref: PlazaReference) -> None:
    """A friend may not write twice in a row."""
    @replaces(ref.check_can_text)
    def check_can_text(original: Any, conn: dict[str, Any], visitor_id: str) -> None:
        original(conn, visitor_id)
        if conn["messages"] and conn["messages"][-1]["sender"] == visitor_id:
            raise SiteError(NOT_PERMITTED, "wait for the peer's reply")


@requirement(id="PLAZA-FRIEND-MESSAGE", level="MUST",
             title="Texts by contextId reach the peer in order, both ways",
             source=at("/textTarget/existingConnection"))
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


@check_message.fault
def texts_out_of_order(ref: PlazaReference) -> None:
    """A new text is stored before the ones already there (reads come out of order)."""
    @replaces(ref.store_message)
    def store_message(original: Any, conn: dict[str, Any], sender: str, text: str,
                      client_message_id: str) -> dict[str, Any]:
        msg: dict[str, Any] = original(conn, sender, text, client_message_id)
        if len(conn["messages"]) > 2:
            conn["messages"][-1]["text"], conn["messages"][-2]["text"] = (conn["messages"][-2]["text"],
                                                                          conn["messages"][-1]["text"])
        return msg


# ----------------------------------------------------------------------------------
# controls: block, unblock, remove, stop
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-FRIEND-CONTROL", level="MUST",
             title="friend_control block, unblock and remove are served on the caller's own connection; "
                   "after a remove the peer writes no more",
             source=at("/schemas/command/anyOf/49"),
             faults=[refuses("block_refused", "friend_block",
                             lambda conn, caller: SiteError(NOT_PERMITTED, "blocking is not possible"),
                             "friend_control block is refused on the caller's own active connection."),
                     noop("remove_ignored", "friend_remove", "")],
             code="NOT_PERMITTED", code_faults=["control_refusal_wrong_code"])
def check_friend_control(ctx: CheckContext, strict: bool = False) -> None:
    """The command's three decisions (its schema's enum) are served on the caller's own
    connection; a removed friend writes no more in it (texts go between accepted friends,
    /multiTurn, and the final send checks "friend_and_contact_controls",
    /durableReceive/private_chat/accepted_friendship/final_send_checks). The document gives
    block and unblock no meaning for sends: what the profile makes of them is
    PLAZA-FRIEND-BLOCK's (a SHOULD)."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    control = partial(c.command, "friend_control")
    for decision in ("block", "unblock"):
        with ctx.subcheck(decision):
            expect_result(ctx, control({"connection_id": connection, "decision": decision}, BOB),
                          f"friend_control {decision} by a participant of an active connection")
    with ctx.subcheck("remove"):
        served(ctx, c.text(BOB, "before the removal", context=connection), "bob's text before the removal",
               by="PLAZA-FRIEND-MESSAGE")
        expect_result(ctx, control({"connection_id": connection, "decision": "remove"}, ALICE),
                      "friend_control remove")
        refused_as(ctx, c.text(BOB, "to a friend who removed me", context=connection), "NOT_PERMITTED",
                   "a text after removal", strict)


@requirement(id="PLAZA-FRIEND-BLOCK", level="SHOULD",
             title="A block stops the peer's texts until the blocker unblocks; then they flow again",
             source=chosen("docs/agent-plaza.md#consent-and-controls"),
             faults=[noop("block_ignored", "friend_block",
                          "friend_control block answers but the peer still writes."),
                     noop("unblock_ignored", "friend_unblock",
                          "friend_control unblock answers but the peer's texts stay refused.")])
def check_friend_block(ctx: CheckContext) -> None:
    """The profile's meaning of block and unblock (the document lists the decisions and
    gives them none for sends: a site may record them without a send effect)."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    control = partial(c.command, "friend_control")
    expect_result(ctx, control({"connection_id": connection, "decision": "block"}, BOB),
                  "friend_control block")
    refused_as(ctx, c.text(ALICE, "to a friend who blocked me", context=connection), "NOT_PERMITTED",
               "a text after the peer blocked", False)
    expect_result(ctx, control({"connection_id": connection, "decision": "unblock"}, BOB),
                  "friend_control unblock")
    c.task_of(c.text(ALICE, "after unblock", context=connection), "a text after the peer unblocked")


fault(refuses("control_refusal_wrong_code", "check_can_text",
              lambda conn, visitor_id: SiteError(INVALID_STATE, f"the connection is {conn['state']}"), "",
              when=lambda conn, visitor_id: conn["state"] not in (ACTIVE, INVITATION)))


@requirement(id="PLAZA-STOP", level="MUST", title="After stop the agent's sends are refused",
             source=at("/authorization"),
             faults=[noop("stop_ignored", "require_not_stopped",
                          "stop answers stopped: true but the agent goes on sending.")],
             lasting=STOPS, code="NOT_PERMITTED", code_faults=["stop_refusal_wrong_code"])
def check_stop(ctx: CheckContext, strict: bool = False) -> None:
    """After stop the agent's sends are refused (no command resumes it: the reference's
    reset does; without control only a disposable agent is stopped, keeper.stopper)."""
    who, peer = stopper(ctx)
    c = PlazaClient(ctx)
    connection = c.befriend(who, peer)
    served(ctx, c.text(who, "before stop", context=connection), f"{who}'s text before stop",
           by="PLAZA-FRIEND-MESSAGE")
    expect_result(ctx, c.command("stop", {}, who), "stop")
    refused_as(ctx, c.text(who, "after stop", context=connection), "NOT_PERMITTED",
               "a text after the agent stopped", strict)


fault(recodes("stop_refusal_wrong_code", "require_not_stopped",
              lambda err: SiteError("FORBIDDEN", err.message), "", catch=SiteError))


# ----------------------------------------------------------------------------------
# who writes where
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-SEND-CONTEXT", level="MUST",
             title="A text to a connection of others is refused and stored nowhere",
             source=at("/authorization"))
def check_send_context(ctx: CheckContext) -> None:
    """A text to a connection the caller is no participant of is refused and stored nowhere."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    text = f"intruder {fresh_id()[:6]}"
    expect_refused(ctx, c.text(CAROL, text, context=connection), "carol's text in alice and bob's connection")
    ctx.expect(not mentions(page(c, BOB, connection, "read_conversation as bob"), text),
               "carol's refused text is in alice and bob's connection", kind="auth_not_enforced")
    served(ctx, c.text(ALICE, f"participant {fresh_id()[:6]}", context=connection),
           "a participant's text in the connection",
           by="PLAZA-FRIEND-MESSAGE")


@check_send_context.fault
def foreign_context_send(ref: PlazaReference) -> None:
    """Any agent writes in any connection whose id it knows."""
    @replaces(ref.send_text)
    def send_text(original: Any, call: Any, message: dict[str, Any], text: str) -> Any:
        conn = ref.s["connections"].get(message.get("contextId"))
        caller = call.principal.visitor_id
        if conn is not None and caller not in (conn["inviter"], conn["invitee"]) and conn["state"] == ACTIVE:
            msg = ref.store_message(conn, caller, text, message["messageId"])
            return {"task": ref.task_view(ref.create_task(caller, conn, msg), submitted=True)}
        return original(call, message, text)


def context_mismatch(issue: Issue) -> bool:
    """The issue of a contextId that is not the command's connection_id."""
    return issue.path == "params.message.contextId" and issue.code == "const"


@requirement(id="PLAZA-ROUTE-CONTEXT-MATCH", level="MUST",
             title="A command's connection_id and a supplied contextId must match",
             source=at("/conversationRead/target"),
             faults=[answer("context_mismatch_accepted", "send_semantic_issues",
                            "A command's connection_id wins over a different contextId without complaint.",
                            edit=lambda issues, message: [i for i in issues if not context_mismatch(i)])],
             code=INVALID, code_faults=["context_mismatch_wrong_code"])
def check_context_match(ctx: CheckContext, strict: bool = False) -> None:
    """A data command's connection_id and a supplied contextId must agree."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    served(ctx, c.command("read_conversation", {"connection_id": connection}, ALICE),
           "read_conversation whose contextId is its connection_id", by="PLAZA-READ")
    reply = c.command("read_conversation", {"connection_id": connection}, ALICE, context=fresh_id())
    refused_as(ctx, reply, INVALID, "read_conversation whose contextId differs from its connection_id",
               strict)


@fault
def context_mismatch_wrong_code(ref: PlazaReference) -> None:
    @replaces(ref.send_semantic_issues)
    def issues(original: Any, message: dict[str, Any]) -> list[Issue]:
        found: list[Issue] = original(message)
        if any(context_mismatch(i) for i in found):
            raise SiteError(NOT_FOUND, "no such connection")
        return found


