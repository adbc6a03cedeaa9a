"""Idempotency by messageId (`intent_and_receipt`): the same messageId and message replay
the original receipt and store nothing, another message under a used messageId is
refused and not sent, a new messageId is a new message whatever its text, a replay is
checked again and never hands another agent's receipt, and a stored text answers a
message_sent receipt. Each requirement is declared on its check, with the faults that
prove it can fail."""

from __future__ import annotations

import copy
from typing import Any

from conformance.checks.expect import expect_refused, expect_result, refused_as
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, fault, requirement
from conformance.kit.faults import answer, noop, recodes, replaces, returns_arg
from conformance.protocols.plaza.answers import (
    find_receipt,
    mentions,
    page,
    receipt_message_id,
    sent_message_id,
    served,
    texts_in,
)
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, fresh_id
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import NOT_PERMITTED, SiteError
from conformance.transport.http import json_excerpt

RECEIPT = "/durableReceive/private_chat/intent_and_receipt"


@requirement(id="PLAZA-IDEM-REPLAY", level="MUST",
             title="The same messageId and message replay the original receipt and store nothing",
             source=at(f"{RECEIPT}/confirmed_storage"),
             faults=[noop("replay_stores_again", "used_message_id",
                          "Nothing is deduplicated: the same send stores the "
                          "message again (and another message under a used id too)."), "replay_new_receipt"])
def check_replay(ctx: CheckContext) -> None:
    """The same messageId and message replay the original receipt; nothing more is stored."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    text = f"sent twice {fresh_id()[:6]}"
    params = c.params({"text": text}, context=connection)
    first = c.task_of(c.send(params), "the first send")
    again = c.task_of(c.send(copy.deepcopy(params)), "the same send again")
    ctx.expect(again["id"] == first["id"],
               f"the replay answered task {again['id']!r}, the original is {first['id']!r}",
               kind="state_changed")
    receipt = find_receipt(c, again) or {}
    ctx.expect(receipt.get("original_message_sent") is True,
               f"the replay's receipt is {json_excerpt(receipt)} (looked for the object holding message_sent "
               "or original_message_sent anywhere in the task): an identical replay says "
               "original_message_sent=true")
    original, replayed = sent_message_id(c, first), receipt_message_id(c, receipt)
    ctx.expect(replayed is not None and replayed == original,
               f"the replay's receipt names message {replayed!r}, the original receipt {original!r}: "
               "a replay returns the original message.id")
    count = texts_in(c, BOB, connection, [text]).count(text)
    ctx.expect(count == 1, f"after a replay bob reads the text {count} times", kind="state_changed")


@check_replay.fault
def replay_new_receipt(ref: PlazaReference) -> None:
    """A replay's receipt looks like a new send (message_sent true, no original flag)."""
    @replaces(ref.receipt)
    def receipt(original: Any, msg: dict[str, Any], replay: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = original(msg, False)
        return result


@requirement(id="PLAZA-IDEM-CONSUMED", level="MUST",
             title="Another message under a used messageId is refused and not sent",
             source=at(f"{RECEIPT}/consumed_different_body"), code="CONTEXT_CONSUMED",
             code_faults=["consumed_wrong_code"])
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
               f"after CONTEXT_CONSUMED bob no longer reads the first draft {draft!r} once: the old intent's "
               "message stays as stored", kind="state_changed")
    served(ctx, c.text(ALICE, other, context=connection), "the same draft under a new messageId",
           by="PLAZA-IDEM-NEW-ID")


@check_consumed.fault
def changed_body_stored(ref: PlazaReference) -> None:
    """Another message under a used messageId is stored as new."""
    @replaces(ref.used_message_id)
    def used(original: Any, visitor_id: str, message: dict[str, Any]) -> Any:
        try:
            return original(visitor_id, message)
        except SiteError:
            return None


@check_consumed.fault
def consumed_drops_original(ref: PlazaReference) -> None:
    """A different message under a used messageId is refused, and the stored original is dropped with it."""
    @replaces(ref.used_message_id)
    def used(original: Any, visitor_id: str, message: dict[str, Any]) -> Any:
        try:
            return original(visitor_id, message)
        except SiteError:
            for conn in ref.connections_of(visitor_id):
                for msg in conn["messages"]:
                    if msg["client_message_id"] == message["messageId"] and msg["sender"] == visitor_id:
                        msg["text"] = "[withdrawn]"
            raise


fault(recodes("consumed_wrong_code", "used_message_id", lambda err: SiteError(NOT_PERMITTED, err.message), "",
              catch=SiteError))


@requirement(id="PLAZA-IDEM-NEW-ID", level="MUST",
             title="A new messageId is a new message, whatever its text",
             source=at("/multiTurn"))
def check_new_id(ctx: CheckContext) -> None:
    """A new intent with a new messageId is a new message, even with the same text."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    text = f"same words {fresh_id()[:6]}"
    for _ in range(2):
        c.task_of(c.text(ALICE, text, context=connection), "a text under a new messageId")
    count = texts_in(c, BOB, connection, [text]).count(text)
    ctx.expect(count == 2, f"two messageIds with the same text gave {count} messages", kind="state_changed")


@check_new_id.fault
def dedupe_by_text(ref: PlazaReference) -> None:
    """A text equal to one the caller already sent in the connection is taken as its replay."""
    @replaces(ref.send_text)
    def send_text(original: Any, call: Any, message: dict[str, Any], text: str) -> Any:
        conn = ref.s["connections"].get(message.get("contextId"))
        caller = call.principal.visitor_id
        if conn is not None:
            for task in ref.s["tasks"].values():
                if task["owner"] == caller and task["connection_id"] == conn["id"] \
                        and ref.task_message(task)["text"] == text:
                    return {"task": ref.task_view(task, submitted=True, replay=True)}
        return original(call, message, text)


@requirement(id="PLAZA-IDEM-REPLAY-RECHECK", level="MUST",
             title="A replay is checked again and never hands another agent's receipt",
             source=at("/authorization"),
             faults=[noop("replay_skips_controls", "check_can_replay",
                          "A replay answers the stored receipt even after the peer removed the connection."),
                     returns_arg("message_ids_global", "message_id_key", 1,
                                 "messageIds are one namespace for every "
                                 "agent: another agent's replay gets the first sender's task.")])
def check_replay_recheck(ctx: CheckContext) -> None:
    """A replay is checked again ("Every request, retry, ... checks the current ... participant/contact
    controls"): refused once the peer removed the connection (the document gives a block no
    meaning for sends: PLAZA-FRIEND-BLOCK); another agent using the same messageId never
    gets the sender's receipt."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    params = c.params({"text": f"replayed later {fresh_id()[:6]}"}, context=connection)
    first = c.task_of(c.send(params), "the first send")
    with ctx.subcheck("another agent with the same messageId"):
        reply = c.send(copy.deepcopy(params), CAROL)
        ctx.expect(not reply.ok or not locate.holds(reply.result, first["id"]),
                   f"carol's request with alice's messageId answered alice's task {first['id']}",
                   kind="auth_not_enforced")
    with ctx.subcheck("after the peer removed the connection"):
        served(ctx, c.send(copy.deepcopy(params)), "the identical replay before the removal",
               by="PLAZA-IDEM-REPLAY")
        with ctx.setup("bob removes the connection", by="PLAZA-FRIEND-CONTROL"):
            removal = {"connection_id": connection, "decision": "remove"}
            expect_result(ctx, c.command("friend_control", removal, BOB), "friend_control remove")
        expect_refused(ctx, c.send(copy.deepcopy(params)),
                       "the replay of a text after the peer removed the connection")


def without_message_id(receipt: dict[str, Any], *args: Any) -> None:
    receipt["message"] = {k: v for k, v in receipt["message"].items() if k != "id"}


@requirement(id="PLAZA-SEND-RECEIPT", level="MUST",
             title="A stored text answers a message_sent=true receipt with the message id",
             source=at(f"{RECEIPT}/confirmed_storage"),
             faults=[answer("receipt_without_message_id", "receipt", "", edit=without_message_id)])
def check_receipt(ctx: CheckContext) -> None:
    """A stored text comes with a message_sent=true receipt naming the message id."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    task = c.task_of(c.text(ALICE, "with a receipt", context=connection), "a text")
    receipt = find_receipt(c, task)
    ctx.expect(receipt is not None and receipt.get("message_sent") is True and receipt_message_id(c, receipt),
               "looked for a message_sent=true receipt with message.id anywhere in the text's task and "
               f"found {json_excerpt(receipt) if receipt is not None else 'none'}: {json_excerpt(task, 400)}",
               kind="schema_mismatch")


__all__: list[str] = []
