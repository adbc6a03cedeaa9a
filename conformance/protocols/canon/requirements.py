"""The Canon Agent Verbs requirement table. Verbs, schemas and the limits that the
spec's descriptions state come from specs/canon/canon.verbs.v1.json; bindings and
error codes are the profile's (profiles/canon-verbs.yaml)."""

from __future__ import annotations

import copy
import functools
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from conformance.check import CheckContext, NotApplicable
from conformance.checks import auth, idempotency
from conformance.checks.errors import (
    expect_catalogued,
    expect_error,
    expect_refused,
    expect_result,
    refused_as,
)
from conformance.checks.inputs import (
    examples_refused,
    invalid_code_everywhere,
    invalid_inputs_rejected,
    result_matches,
    valid_inputs_accepted,
)
from conformance.declare import slug
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance
from conformance.locate import Search
from conformance.model import Operation, Profile, Requirement, Source
from conformance.protocols.canon.answers import carries, items, members_of, objects
from conformance.protocols.canon.client import CanonClient, fresh
from conformance.protocols.canon.machine import CanonMachine
from conformance.protocols.mcp.requirements import McpSurface, ToolSchema, all_rows
from conformance.table import Table
from conformance.transport.binding import Reply

REJECTION = "VALIDATION_ERROR"
MINUTE_MS = 60_000
SECOND_MS = 1000
# request_approval properties whose out-of-enum strings the spec lets a server drop or
# store instead of refusing (riskLevel: "silently dropped, not rejected"; risk, category: "Advisory")
ADVISORY = ("/riskLevel", "/risk", "/category")


def utf8_text(n_bytes: int) -> str:
    """Text of exactly ``n_bytes`` bytes of UTF-8, mostly two-byte characters (so the char
    count stays well under a byte limit of the same number)."""
    return "é" * (n_bytes // 2) + "x" * (n_bytes % 2)


# ----------------------------------------------------------------------------------
# every verb: valid inputs, invalid inputs, results
# ----------------------------------------------------------------------------------
def clip_utf8(text: str, limit: int) -> str:
    return text.encode()[:limit].decode(errors="ignore")


def follow_descriptions(ctx: CheckContext, c: CanonClient, verb: str, value: Any) -> Any:
    """A schema-valid input made to follow the rules the descriptions add: text required
    unless attachments carry the content, text and captions within their byte limits (UTF-8),
    turnMetadata within its size, attachment URLs from the target's upload flow."""
    if not isinstance(value, dict):
        return value
    limits = ctx.profile.limits
    if verb in ("send_to", "forward") and isinstance(value.get("text"), str):
        value["text"] = clip_utf8(value["text"], int(limits["text_bytes" if verb == "send_to" else "caption_bytes"].value))
    opts = value.get("messageOptions")
    if isinstance(opts, dict):
        for att in opts.get("attachments") or []:
            att["url"] = c.role("media_url")
        meta = opts.get("metadata")
        units = int(limits["metadata_utf16_units"].value)
        if isinstance(meta, dict) and len(json.dumps(meta, separators=(",", ":"), ensure_ascii=False).encode("utf-16-le")) // 2 > units:
            opts["metadata"] = {}
    if verb == "send_to" and "text" not in value and not (opts or {}).get("attachments"):
        value["text"] = "conformance check"
    if verb == "send_to" and "selfContext" in value and "sourceConversationId" not in value:
        value["sourceConversationId"] = c.role("owner_chat")  # a selfContext needs a source the agent is in
    return value


# Where a generated input names an object, the seeded world's: (property, role, verbs) —
# so that an input is judged by its own merits, not refused for naming nothing. Where a
# verb changes what it names for good (a member removed, a conversation left, a reaction
# on someone's message), it names what the check made itself (CanonClient.made): the
# operator's configured world is never what such a verb acts on.
MADE = ("made_group", "sent_message")
WORLD_IDS: dict[str, dict[str, str]] = {
    "send_to": {"targetConversationId": "owner_chat", "targetUserId": "open_user", "sourceConversationId": "owner_chat"},
    "request_input": {"conversationId": "owner_chat", "responseUserId": "owner"},
    "request_approval": {"conversationId": "owner_chat", "responseUserId": "owner"},
    "check_approval": {"conversationId": "owner_chat"},
    "send_card": {"conversationId": "owner_chat"},
    "request_card": {"conversationId": "owner_chat", "responseUserId": "owner"},
    "share_contact": {"conversationId": "owner_chat", "contactUserId": "member"},
    "react": {"conversationId": "owner_chat", "messageId": "sent_message"},
    "forward": {"sourceConversationId": "owner_chat", "targetConversationId": "agent_group", "messageId": "sent_message"},
    "create_group": {"memberIds": "open_user"},
    "add_member": {"conversationId": "made_group", "userId": "open_user"},
    "remove_member": {"conversationId": "made_group", "userId": "member"},
    "leave_conversation": {"conversationId": "made_group"},
    "no_reply": {"conversationId": "owner_chat"},
}


def in_world(c: CanonClient, verb: str, value: Any, keep: str = "\0") -> Any:
    """``value`` naming the seeded world's objects where it names any (but not under the
    pointer ``keep``, the part an invalid input breaks), or the check's own where the verb
    changes what it names (``MADE``): a request_card card gains an actions block, the
    blocking verbs are answered at once (a scripted human), or, without control, ask for
    the shortest deadline the document allows (nobody answers: they time out)."""
    if not isinstance(value, dict):
        return value
    out = dict(value)
    for prop, role in WORLD_IDS.get(verb, {}).items():
        if prop in out and not (keep + "/").startswith(f"/{prop}/") and not keep.startswith(f"/{prop}"):
            named = c.made(role) if role in MADE else c.role(role)
            out[prop] = [named] if prop == "memberIds" else named
    card = out.get("card")
    if verb == "request_card" and isinstance(card, dict) and isinstance(card.get("blocks"), list) and not keep.startswith("/card"):
        out["card"] = {**card, "blocks": [*card["blocks"][:-1], {"type": "actions", "actions": [{"id": "ok", "label": "OK"}]}]}
    if verb in HUMAN_VERBS and not c.humans:
        return c.unattended(verb, out, keep)
    if verb in ("request_input", "request_card"):
        c.script(verb, action="cancel")
    elif verb == "request_approval":
        c.script(verb, action="deny")
    return out


def valid_inputs(verb: str) -> Callable[[CheckContext], None]:
    """Generated schema-valid inputs (following the descriptions' rules) are never refused
    as invalid; a refusal for another reason (an unknown id) is flagged by the binding.
    Whether its code is in the catalogue is CANON-BINDING-ERRORS' (the codes are the profile's)."""
    def check(ctx: CheckContext) -> None:
        c = CanonClient(ctx)
        valid_inputs_accepted(ctx, ctx.profile.operations[verb], lambda v: c.call(verb, v), (REJECTION,),
                              lambda v: follow_descriptions(ctx, c, verb, in_world(c, verb, v)), catalogued=False)
    return check


def tolerated(op: Operation, bad: InvalidInstance) -> bool:
    """A break the spec itself lets a server accept: an advisory request_approval string."""
    v = bad.violation
    return (op.name == "request_approval" and v.keyword == "enum" and v.pointer in ADVISORY
            and isinstance(bad.instance, dict) and isinstance(bad.instance.get(v.pointer[1:]), str))


def invalid_inputs(verb: str) -> Callable[[CheckContext], None]:
    """Inputs breaking one schema keyword are refused (any refusal: the spec names no code)
    and change nothing; so is an input that would succeed but for one unknown property."""
    def check(ctx: CheckContext) -> None:
        c = CanonClient(ctx)
        op = ctx.profile.operations[verb]

        def in_target_world(bad: InvalidInstance) -> Any:
            instance = follow_descriptions(ctx, c, verb, copy.deepcopy(in_world(c, verb, bad.instance, keep=bad.violation.pointer)))
            schema = validator_for(op.params_schema)
            if schema.is_valid(bad.instance):  # the same request without the break (the engine's control): served as it is meant
                return instance
            # naming the world's objects, or following the descriptions, may have mended it: then send it as generated
            return bad.instance if schema.is_valid(instance) else instance

        with ctx.subcheck("an input that would succeed, with one unknown property"):
            payload = {**success_payload(c, verb), "x_conformance_unknown": True}
            examples_refused(ctx, calls={f"{verb} with an unknown property (inputs are strict)":
                                         lambda: c.call(verb, payload)}, state=c.snapshot)
        invalid_inputs_rejected(ctx, op, lambda v: c.call(verb, v), None, state=c.snapshot, prepare=in_target_world,
                                tolerated=lambda bad, reply: reply.ok and tolerated(op, bad))
    return check


def success_payload(c: CanonClient, verb: str) -> dict[str, Any]:
    """A realistic input that drives ``verb`` to a success (humans scripted, objects set up)."""
    r = c.role
    if verb == "send_to":
        return {"targetConversationId": r("owner_chat"), "text": "conformance check"}
    if verb == "request_input":
        payload = {"conversationId": r("owner_chat"), "prompt": "Proceed?", "timeoutMs": MINUTE_MS}
        if not c.humans:  # nobody answers: the shortest deadline, then timeout (a result of its own)
            return c.unattended(verb, payload)
        c.script("request_input", action="answer", value="yes")
        return payload
    if verb == "request_approval":
        if not c.humans:  # detached: pending at once, nobody need answer
            return {"conversationId": r("owner_chat"), "toolName": "deploy", "toolSummary": "Deploy it", "mode": "detached"}
        c.script("request_approval", action="allow")
        return {"conversationId": r("owner_chat"), "toolName": "deploy", "toolSummary": "Deploy it"}
    if verb == "check_approval":
        pending = c.detached_approval()
        return {"approvalId": pending["approvalId"]}
    if verb == "send_card":
        return {"conversationId": r("owner_chat"), "card": c.card()}
    if verb == "request_card":
        payload = {"conversationId": r("owner_chat"), "card": c.card(actions=True), "timeoutMs": MINUTE_MS}
        if not c.humans:
            return c.unattended(verb, payload)
        c.script("request_card", action="submit", actionId="ok", values={})
        return payload
    if verb == "share_contact":
        return {"conversationId": r("owner_chat"), "contactUserId": r("member")}
    if verb == "react":
        return {"conversationId": r("owner_chat"), "messageId": c.made("sent_message"), "emoji": "+1"}
    if verb == "forward":
        return {"sourceConversationId": r("owner_chat"), "targetConversationId": r("agent_group"), "messageId": c.made("sent_message")}
    if verb == "create_group":
        return {"name": "conformance", "memberIds": [r("open_user")]}
    if verb == "add_member":
        return {"conversationId": c.group(r("member")), "userId": r("open_user")}
    if verb == "remove_member":
        return {"conversationId": c.group(r("open_user")), "userId": r("open_user")}
    if verb == "leave_conversation":
        return {"conversationId": c.group(r("open_user"))}
    if verb == "list_conversations":
        return {"limit": 5}
    if verb == "no_reply":
        return {"conversationId": r("owner_chat"), "reason": "nothing to add"}
    return {}


def success_call(c: CanonClient, verb: str) -> Any:
    """Drive ``verb`` to a success with a realistic input."""
    return c.call(verb, success_payload(c, verb))


def result_schema(verb: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        c = CanonClient(ctx)
        result_matches(ctx, ctx.profile.operations[verb], success_call(c, verb), f"{verb} driven to success")
    return check


# ----------------------------------------------------------------------------------
# idempotency and single-use ids
# ----------------------------------------------------------------------------------
def send_with_message_id(ctx: CheckContext) -> idempotency.Send:
    c = CanonClient(ctx)
    return lambda key, body: c.send("once" if body == "a" else "different", messageOptions={"messageId": key})


def owner_chat_messages(ctx: CheckContext) -> Callable[[], int]:
    c = CanonClient(ctx)
    if not ctx.run.control_path:
        ctx.needs_control("counting the messages stored in the owner chat (control messages): no verb of the document "
                          "lists a conversation's messages, and a duplicate under the caller's messageId looks the same "
                          "in list_conversations' lastMessage")
    return lambda: len(c.messages(c.role("owner_chat"), c.role("owner")))


def share_with_message_id(ctx: CheckContext) -> idempotency.Send:
    c = CanonClient(ctx)

    def share(key: str, body: str) -> Any:
        extra = {} if body == "a" else {"text": "changed"}
        return c.call("share_contact", {"conversationId": c.role("owner_chat"), "contactUserId": c.role("member"),
                                        "messageId": key, **extra})

    return share


def message_id_conflicts(ctx: CheckContext) -> dict[str, idempotency.Send]:
    return {"send_to with a messageId": send_with_message_id(ctx), "share_contact with a messageId": share_with_message_id(ctx)}


DOCUMENT_CODE = "MESSAGE_ID_EXISTS"  # the one error code the document names ("different payload -> 409 MESSAGE_ID_EXISTS")
CONFLICT_STATUS = 409


def check_message_id_conflict(ctx: CheckContext) -> None:
    """The same messageId with another payload is refused with what the document names: its
    code MESSAGE_ID_EXISTS wherever the refusal carries it (the document names no error
    member: where the code sits is the binding's, CANON-MESSAGE-ID-CONFLICT-CODE), and HTTP
    409 where the binding's statuses mean something."""
    for what, go in message_id_conflicts(ctx).items():
        with ctx.subcheck(what):
            key = uuid.uuid4().hex
            expect_result(ctx, go(key, "a"), what)
            again = f"{what} reusing its key with another body (the document: {CONFLICT_STATUS} {DOCUMENT_CODE})"
            reply = go(key, "b")
            expect_refused(ctx, reply, again)
            ctx.expect(carries(reply, DOCUMENT_CODE), f"{again}: the refusal carries {DOCUMENT_CODE} nowhere: "
                       f"{Search(repr(DOCUMENT_CODE), 'the refusal (and the JSON of its text blocks)').looked_for(reply.envelope)}",
                       kind="wrong_error_code")
            if reply.statuses:
                ctx.expect(reply.status == CONFLICT_STATUS, f"{again}: came with HTTP {reply.status}", kind="wrong_status")


# every verb that takes a messageId (send_to in messageOptions, share_contact at the top)
MESSAGE_ID_VERBS = {"send_to with a messageId": send_with_message_id, "share_contact with a messageId": share_with_message_id}


def each_message_id_verb(family: Callable[..., None]) -> Callable[[CheckContext], None]:
    """One sub-check per verb that takes a messageId, each a run of the idempotency ``family``."""
    def check(ctx: CheckContext) -> None:
        for what, send in MESSAGE_ID_VERBS.items():
            with ctx.subcheck(what):
                family(ctx, send=send(ctx), effects=owner_chat_messages(ctx), what=what)
    return check


def reserved_message_ids(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    """The forms messageId's `not` names: '.', '..' and __x__."""
    c = CanonClient(ctx)
    return {f"messageId {mid!r}": functools.partial(c.send, "reserved", messageOptions={"messageId": mid})
            for mid in (".", "..", "__x__", "__reserved__")}


def refused_examples(ctx: CheckContext, error: Any) -> None:
    """The reserved messageIds are refused (``error``: any refusal when None) and change nothing."""
    calls = reserved_message_ids(ctx)  # set-up first: it may reset or seed the target
    examples_refused(ctx, calls=calls, error=error, state=world_state(ctx))


def world_state(ctx: CheckContext) -> Callable[[], Any]:
    """Reads the digest of the target's world (without resetting it first)."""
    return CanonClient(ctx, reset=False).snapshot


def input_ids(ctx: CheckContext) -> dict[str, Callable[[str], Any]]:
    c = CanonClient(ctx)

    def ask(iid: str) -> Any:
        payload = {"conversationId": c.role("owner_chat"), "inputId": iid, "prompt": "Which?", "timeoutMs": MINUTE_MS}
        if not c.humans:  # nobody answers: it times out after the shortest deadline, the id used all the same
            return c.call("request_input", c.unattended("request_input", payload))
        c.script("request_input", action="answer", value="a")
        return c.call("request_input", payload)

    return {"request_input with an inputId": ask}


def approval_ids(ctx: CheckContext) -> dict[str, Callable[[str], Any]]:
    c = CanonClient(ctx)
    return {"request_approval (detached) with an approvalId": lambda aid: c.call("request_approval", {
        "approvalId": aid, "toolName": "deploy", "toolSummary": "Deploy it", "mode": "detached",
        "conversationId": c.role("owner_chat")})}


def needs_control(why: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A check that needs what only the control interface gives (``why``: a human who
    answers, a recipient's view, the target's clock): without it, untested (reason
    ``control``) before anything is sent."""
    def wrap(check: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(check)
        def run(ctx: CheckContext, *args: Any, **kwargs: Any) -> None:
            if not ctx.run.control_path:
                ctx.needs_control(why)
            check(ctx, *args, **kwargs)
        return run
    return wrap


# ----------------------------------------------------------------------------------
# send_to
# ----------------------------------------------------------------------------------
def _self_context() -> dict[str, str]:
    return {"type": "cross_session", "context": "private note: moved from the owner chat"}


@needs_control("the messages of the group as its members see them (control messages): a recipient's view, which no verb of the document gives the agent")
def check_self_context_private(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    note = _self_context()
    result = expect_result(ctx, c.send("hello", targetConversationId=c.role("group"), sourceConversationId=c.role("owner_chat"), selfContext=note),
                       "send_to with selfContext")
    ctx.expect(result.get("selfContextId"), f"send_to with selfContext must report selfContextId: {result}")
    for viewer in (c.role("member"), c.role("owner")):
        seen = json.dumps(c.messages(c.role("group"), viewer))
        ctx.expect(note["context"] not in seen, f"the selfContext reached recipient {viewer}")
    mine = json.dumps(c.messages(c.role("group"), c.role("agent")))
    ctx.expect(note["context"] in mine, "the sender's own view lacks its selfContext")


def check_self_context_source(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    left = c.group(c.role("open_user"))
    expect_result(ctx, c.call("leave_conversation", {"conversationId": left}), "leave_conversation")
    reply = c.send("hi", targetConversationId=c.role("owner_chat"), sourceConversationId=left, selfContext=_self_context())
    refused_as(ctx, reply, "NOT_A_MEMBER", "send_to with a selfContext whose sourceConversationId the agent is not in", strict)


def check_admission(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    opened = expect_result(ctx, c.send("hi", targetUserId=c.role("open_user")), "send_to an open user")
    ctx.expect(opened.get("status") == "messaged" and opened.get("conversationId"), f"an open target must be messaged: {opened}")
    asked = expect_result(ctx, c.send("hi", targetUserId=c.role("approval_user")), "send_to an approval-required user")
    ctx.expect(asked.get("status") in ("requested", "pending") and "requestId" in asked, f"an approval-required target gets a contact request: {asked}")
    closed = expect_result(ctx, c.send("hi", targetUserId=c.role("closed_user")), "send_to a closed user")
    ctx.expect(closed.get("status") == "unavailable" and closed.get("reason") == "closed",
               f"a closed target must be status unavailable, reason closed: {closed}")


@needs_control('the approval-required user approving the contact request (control approve_request), and the messages they then see (control messages)')
def check_deferred_send(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    text = "deferred " + fresh()
    asked = expect_result(ctx, c.send(text, targetUserId=c.role("approval_user"), sessionSelection={"mode": "new"}), "send_to an approval-required user")
    ctx.expect(asked.get("requestId"), f"no requestId to approve: {asked}")
    ctx.expect(isinstance(asked.get("deferredIntentId"), str) and asked["deferredIntentId"],
               f"a deferred send must carry deferredIntentId: {asked}")
    ctx.control("approve_request", requestId=asked["requestId"])
    convs = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    mine = [x for x in convs if c.role("approval_user") in members_of(x)]
    delivered = any(text in json.dumps(c.messages(str(x.get("id")), c.role("approval_user"))) for x in mine)
    ctx.expect(delivered, "after the contact request was approved the deferred message never arrived")


@needs_control('the contact-request note as its recipient sees it (control contact_request), each from a world without a pending request (control reset: a pending request takes no second note)')
def check_request_message(ctx: CheckContext) -> None:
    """The contact-request note: requestMessage when given, else the text, cut to the limit in chars."""
    c = CanonClient(ctx)
    chars = ctx.limit("request_message_chars")
    user = c.role("approval_user")
    cases = [("a requestMessage", {"text": "the message", "requestMessage": "please add me"}, "please add me"),
             ("no requestMessage", {"text": "the message itself"}, "the message itself"),
             ("a text at the limit", {"text": "a" * chars}, "a" * chars),
             ("a text one past the limit", {"text": "b" * chars + "c"}, "b" * chars)]
    for what, fields, note in cases:
        with ctx.subcheck(what):
            ctx.control("reset")
            asked = expect_result(ctx, c.call("send_to", {"targetUserId": user, **fields}), f"send_to an approval-required user with {what}")
            ctx.expect(asked.get("requestId"), f"no contact request: {asked}")
            got = c.controlled("contact_request", requestId=asked["requestId"]).get("note")
            ctx.expect(got == note, f"with {what} the contact-request note must be {note[:40]!r}... ({len(note)} chars), got {str(got)[:40]!r}... ({len(str(got))} chars)")


def check_session_selection(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    user = c.role("open_user")
    first = expect_result(ctx, c.send("a", targetUserId=user, sessionSelection={"mode": "new"}), "send_to mode new", ["conversationId"])
    second = expect_result(ctx, c.send("b", targetUserId=user, sessionSelection={"mode": "new"}), "send_to mode new again", ["conversationId"])
    ctx.expect(first["conversationId"] != second["conversationId"], "sessionSelection mode new reused a conversation")
    latest = expect_result(ctx, c.send("c", targetUserId=user, sessionSelection={"mode": "continue_latest"}), "send_to mode continue_latest")
    ctx.expect(latest.get("conversationId") == second["conversationId"], f"continue_latest did not continue the latest conversation: {latest}")
    specific = expect_result(ctx, c.send("d", targetUserId=user, sessionSelection={"mode": "specific", "conversationId": first["conversationId"]}),
                         "send_to mode specific")
    ctx.expect(specific.get("conversationId") == first["conversationId"], f"mode specific went elsewhere: {specific}")


def check_session_default(ctx: CheckContext) -> None:
    """Without sessionSelection a user-targeted send continues the latest conversation or creates one."""
    c = CanonClient(ctx)
    user = c.role("open_user")
    first = expect_result(ctx, c.send("a", targetUserId=user), "send_to an open user without sessionSelection")
    ctx.expect(first.get("status") == "messaged" and first.get("conversationId"), f"continue_or_create must message: {first}")
    again = expect_result(ctx, c.send("b", targetUserId=user), "the same send again")
    ctx.expect(again.get("conversationId") == first["conversationId"],
               f"without sessionSelection the send must continue {first['conversationId']}, went to {again.get('conversationId')}")
    newer = expect_result(ctx, c.send("c", targetUserId=user, sessionSelection={"mode": "new"}), "send_to mode new")
    latest = expect_result(ctx, c.send("d", targetUserId=user), "send_to without sessionSelection after a new one")
    ctx.expect(latest.get("conversationId") == newer.get("conversationId"),
               f"without sessionSelection the send must continue the latest conversation: {latest}")


def check_mentions(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    expect_result(ctx, c.send("hi", targetConversationId=c.role("group"), messageOptions={"mentions": [c.role("member")]}), "mention of a member")
    reply = c.send("hi", targetConversationId=c.role("group"), messageOptions={"mentions": [c.role("stranger")]})
    refused_as(ctx, reply, "INVALID_MENTION", "mention of a non-member", strict)


def check_text_bytes(ctx: CheckContext) -> None:
    """send_to text and forward captions: the limit counts bytes of UTF-8 (the schema counts chars)."""
    c = CanonClient(ctx)
    for verb, limit_name in (("send_to", "text_bytes"), ("forward", "caption_bytes")):
        limit = ctx.limit(limit_name)

        def call(text: str, verb: str = verb) -> Reply:
            if verb == "send_to":
                return c.send(text)
            return c.call("forward", {"sourceConversationId": c.role("owner_chat"), "targetConversationId": c.role("agent_group"),
                                      "messageId": c.made("sent_message"), "text": text})

        with ctx.subcheck(f"{verb} at the limit"):
            expect_result(ctx, call(utf8_text(limit)), f"{verb} with text of exactly {limit} bytes of UTF-8")
        with ctx.subcheck(f"{verb} one byte past"):
            before = c.snapshot()
            expect_refused(ctx, call(utf8_text(limit + 1)), f"{verb} with text of {limit + 1} bytes of UTF-8 (fewer chars)")
            ctx.expect(c.snapshot() == before, "a refused text changed the state", kind="state_changed")


def metadata_of(units: int, char: str = "x") -> dict[str, str]:
    """turnMetadata whose compact JSON is exactly ``units`` UTF-16 code units (``char`` in the BMP)."""
    overhead = len(json.dumps({"note": ""}, separators=(",", ":")))
    return {"note": char * (units - overhead)}


def check_metadata_size(ctx: CheckContext) -> None:
    """turnMetadata: JSON length in UTF-16 code units, not bytes."""
    c = CanonClient(ctx)
    units = ctx.limit("metadata_utf16_units")
    with ctx.subcheck("at the limit"):
        expect_result(ctx, c.send("meta", messageOptions={"metadata": metadata_of(units)}), f"metadata of exactly {units} code units")
    with ctx.subcheck("at the limit in two-byte characters"):
        expect_result(ctx, c.send("meta", messageOptions={"metadata": metadata_of(units, "é")}),
                      f"metadata of {units} code units (more bytes of UTF-8: the limit is not in bytes)")
    with ctx.subcheck("one past the limit"):
        expect_refused(ctx, c.send("meta", messageOptions={"metadata": metadata_of(units + 1)}), f"metadata of {units + 1} code units")


def check_attachment_allowlist(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    ok = expect_result(ctx, c.send(None, messageOptions={"attachments": [{"kind": "image", "url": c.role("media_url")}]}),
                       "send_to with an attachment from the target's upload flow")
    ctx.expect(ok.get("status") == "messaged", f"an allowlisted attachment must be messaged: {ok}")
    before = c.snapshot()
    for url in ("https://attacker.example/x.png", "http://127.0.0.1/x.png", "file:///etc/passwd"):
        with ctx.subcheck(url):
            expect_refused(ctx, c.send("look", messageOptions={"attachments": [{"kind": "image", "url": url}]}),
                           f"an attachment at {url} (not from a Canon upload: the allowlist fails closed)")
    ctx.expect(c.snapshot() == before, "a refused attachment changed the state", kind="state_changed")


def check_content_required(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    before = c.snapshot()
    cases: list[tuple[str, dict[str, Any]]] = [("no text and no attachments", {}),
                                               ("no text and an empty attachments list", {"messageOptions": {"attachments": []}})]
    for what, options in cases:
        with ctx.subcheck(what):
            expect_refused(ctx, c.call("send_to", {"targetConversationId": c.role("owner_chat"), **options}), f"send_to with {what}")
    ctx.expect(c.snapshot() == before, "a refused send changed the state", kind="state_changed")


def check_content_type(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    for kind in ("image", "file"):
        with ctx.subcheck(kind):
            sent = expect_result(ctx, c.send(None, messageOptions={"attachments": [{"kind": kind, "url": c.role("media_url")}]}),
                                 f"send_to with a {kind} attachment and no contentType")
            got = c.last_message(sent.get("conversationId") or c.role("owner_chat"))
            ctx.expect(got.get("contentType") == kind, f"contentType must be derived from the {kind} attachment, got {got.get('contentType')!r}")


def check_reply_to(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    expect_result(ctx, c.send("re", messageOptions={"replyTo": fresh("nomsg")}), "send_to replying to a message id that does not exist")


# ----------------------------------------------------------------------------------
# humans in the loop
# ----------------------------------------------------------------------------------
HUMAN_VERBS = ("request_input", "request_card", "request_approval")
CEILINGS = {"request_input": "input_ceiling_ms", "request_card": "card_ceiling_ms", "request_approval": "approval_ceiling_ms"}


def target_now(c: CanonClient) -> int:
    """The target's own clock, read off a detached approval's deadline."""
    pending = c.detached_approval(timeoutMs=MINUTE_MS)
    c.ctx.expect(isinstance(pending.get("expiresAt"), int), f"a detached approval must carry expiresAt (epoch ms): {pending}",
                 kind="malformed_answer")
    return int(pending["expiresAt"]) - MINUTE_MS


def human_call(c: CanonClient, verb: str, ident: str, **deadline: Any) -> Reply:
    """``verb`` with an id of its own and the given deadline fields; the human answers
    at once (cancel) so no time passes; request_approval goes detached."""
    r = c.role
    if verb == "request_input":
        c.script("request_input", action="cancel")
        return c.call(verb, {"conversationId": r("owner_chat"), "inputId": ident, "prompt": "?", **deadline})
    if verb == "request_card":
        c.script("request_card", action="cancel")
        return c.call(verb, {"conversationId": r("owner_chat"), "cardId": ident, "card": c.card(actions=True), **deadline})
    return c.call(verb, {"conversationId": r("owner_chat"), "approvalId": ident, "toolName": "t", "toolSummary": "s",
                         "mode": "detached", **deadline})


def recorded_deadline(c: CanonClient, reply: Reply, ident: str) -> Any:
    if isinstance(reply.result, dict) and "expiresAt" in reply.result:
        return reply.result["expiresAt"]
    return c.interaction(ident).get("expiresAt")


@needs_control('a human who answers at once (control script) and the deadline the target recorded (control interaction): unanswered, a request at the ceiling holds the call that long, minutes to hours')
def check_deadline_ceiling(ctx: CheckContext, strict: bool = False) -> None:
    """Each ceiling at its edge (accepted) and one second past it: refused, or (MUST only)
    accepted with the deadline clamped to the ceiling."""
    c = CanonClient(ctx)
    for verb in HUMAN_VERBS:
        ceiling = int(ctx.profile.limits[CEILINGS[verb]].value)
        with ctx.subcheck(f"{verb} at its ceiling"):
            expect_result(ctx, human_call(c, verb, fresh("edge"), expiresAt=target_now(c) + ceiling),
                          f"{verb} with a deadline exactly {ceiling // MINUTE_MS} minutes ahead (its ceiling)")
        with ctx.subcheck(f"{verb} one second past its ceiling"):
            ident = fresh("past")
            reply = human_call(c, verb, ident, expiresAt=target_now(c) + ceiling + SECOND_MS)
            what = f"{verb} with a deadline one second past its {ceiling // MINUTE_MS}-minute ceiling"
            if strict or not reply.ok:
                refused_as(ctx, reply, "DEADLINE_TOO_FAR", what, strict)
                continue
            latest = target_now(c) + ceiling
            got = recorded_deadline(c, reply, ident)
            ctx.expect(isinstance(got, int) and got <= latest,
                       f"{what} was accepted with deadline {got}, past the ceiling ({latest}): refuse it or clamp it")


@needs_control('a human who answers at once (control script) and the deadline the target recorded (control interaction): unanswered, each request holds the call five minutes')
def check_expires_at_wins(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    for verb in HUMAN_VERBS:
        with ctx.subcheck(verb):
            ident = fresh("both")
            at = target_now(c) + 5 * MINUTE_MS
            reply = human_call(c, verb, ident, expiresAt=at, timeoutMs=2 * MINUTE_MS)
            expect_result(ctx, reply, f"{verb} with both expiresAt and timeoutMs")
            got = recorded_deadline(c, reply, ident)
            ctx.expect(got == at, f"{verb}: expiresAt {at} must win over timeoutMs, the deadline is {got}")


@needs_control("a human who answers at once (control script) and the deadline the target recorded (control interaction): unanswered, a request without a deadline holds the call for the binding's default")
def check_deadline_default(ctx: CheckContext) -> None:
    """No deadline: the binding fills one (within the ceiling); timeoutMs becomes expiresAt."""
    c = CanonClient(ctx)
    slack = 5 * SECOND_MS
    for verb in HUMAN_VERBS:
        ceiling = int(ctx.profile.limits[CEILINGS[verb]].value)
        with ctx.subcheck(f"{verb} without a deadline"):
            ident = fresh("nodl")
            now = target_now(c)
            reply = human_call(c, verb, ident)
            expect_result(ctx, reply, f"{verb} without timeoutMs or expiresAt (the binding fills a default)")
            got = recorded_deadline(c, reply, ident)
            ctx.expect(isinstance(got, int) and now < got <= target_now(c) + ceiling, f"{verb}: the default deadline {got} is not within the ceiling")
        with ctx.subcheck(f"{verb} with timeoutMs"):
            ident = fresh("tmo")
            now = target_now(c)
            reply = human_call(c, verb, ident, timeoutMs=2 * MINUTE_MS)
            expect_result(ctx, reply, f"{verb} with timeoutMs")
            got = recorded_deadline(c, reply, ident)
            ctx.expect(isinstance(got, int) and abs(got - (now + 2 * MINUTE_MS)) <= slack,
                       f"{verb}: timeoutMs 2 minutes must become expiresAt about {now + 2 * MINUTE_MS}, got {got}")


def check_approval_fails_closed(ctx: CheckContext) -> None:
    """Nobody answers: a scripted human who lets it time out, or (without control) nobody
    at all, for the shortest deadline."""
    c = CanonClient(ctx)
    if c.humans:
        c.script("request_approval", action="timeout")
    result = expect_result(ctx, c.call("request_approval", {"toolName": "rm", "toolSummary": "delete", "timeoutMs": SECOND_MS}),
                           "request_approval (no mode: blocking) that nobody answers")
    ctx.expect(result.get("status") in ("timeout", "deny"),
               f"an unanswered blocking approval must wait and fail closed (timeout or deny), got {result}")


@needs_control("a human's decision on the approval (control decide_approval)")
def check_approval_detached(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    pending = c.detached_approval()
    ctx.expect(isinstance(pending.get("expiresAt"), int), f"a detached approval must carry expiresAt: {pending}")
    ctx.control("decide_approval", approvalId=pending["approvalId"], decision="allow")
    got = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "check_approval after allow")
    ctx.expect(got.get("status") == "resolved" and got.get("decision") == "allow", f"check_approval must answer resolved/allow: {got}")
    ctx.expect(got.get("respondedBy") in (None, c.role("owner")), f"respondedBy must be the human who decided (the owner): {got}")


# without control, an approval's deadline is waited out: this short (the document's
# timeoutMs minimum is a second; two leave room for the check of the pending approval)
WAITED_DEADLINE_MS = 2 * SECOND_MS


def check_approval_statuses(ctx: CheckContext) -> None:
    """The deadline passes on the target's clock (control advance_clock), or, without
    control, in real time: the approval asks for a deadline two seconds away and the check
    waits it out."""
    c = CanonClient(ctx)
    unknown = expect_result(ctx, c.call("check_approval", {"approvalId": fresh("none")}), "check_approval of an unknown id")
    ctx.expect(unknown.get("status") == "unknown", f"an unknown approval is 'unknown', not a decision: {unknown}")
    timeout = MINUTE_MS if ctx.run.control_path else WAITED_DEADLINE_MS
    pending = c.detached_approval(timeoutMs=timeout)
    got = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "check_approval of an undecided approval")
    ctx.expect(got.get("status") == "pending", f"an undecided approval is pending: {got}")
    if ctx.run.control_path:
        ctx.control("advance_clock", seconds=2 * MINUTE_MS // SECOND_MS)
    else:
        time.sleep(timeout / SECOND_MS + 0.5)
    got = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "check_approval after the deadline")
    ctx.expect(got.get("status") == "expired", f"an approval past its deadline is expired (not a denial): {got}")


@needs_control("a human's decision (control decide_approval) and the target's clock moved past the replay window, hours away (control advance_clock)")
def check_approval_replay(ctx: CheckContext) -> None:
    """A decision replays up to the window after the first consume (a minute before its end)
    and is unknown after it (a minute past)."""
    c = CanonClient(ctx)
    pending = c.detached_approval()
    ctx.control("decide_approval", approvalId=pending["approvalId"], decision="deny")
    first = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "first check_approval")
    again = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "second check_approval")
    ctx.expect(first.get("status") == again.get("status") == "resolved" and again.get("decision") == "deny",
               f"a resolved decision replays within the window: {first} then {again}")
    window_s = ctx.limit("approval_replay_window_ms") // SECOND_MS
    minute_s = MINUTE_MS // SECOND_MS
    ctx.control("advance_clock", seconds=window_s - minute_s)
    edge = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "check_approval a minute before the window ends")
    ctx.expect(edge.get("status") == "resolved" and edge.get("decision") == "deny",
               f"a minute before the replay window ends the decision still replays: {edge}")
    ctx.control("advance_clock", seconds=2 * minute_s)
    late = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}), "check_approval a minute after the window")
    ctx.expect(late.get("status") == "unknown", f"a minute after the replay window the id is unknown: {late}")


@needs_control("a human's decision on the approval (control decide_approval)")
def check_approval_bound(ctx: CheckContext) -> None:
    """From another conversation the decision is not seen: a refusal, or any status but resolved."""
    c = CanonClient(ctx)
    pending = c.detached_approval()
    ctx.control("decide_approval", approvalId=pending["approvalId"], decision="allow")
    reply = c.call("check_approval", {"approvalId": pending["approvalId"], "conversationId": c.role("group")})
    if reply.ok:
        ctx.expect(reply.result.get("status") != "resolved",
                   f"check_approval from another conversation must not see the decision: {reply.result}")
    else:
        expect_refused(ctx, reply, "check_approval from another conversation")


@needs_control('how the target routed each input (control interaction: its responder), which only the human it reached sees')
def check_secret_owner_only(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    owner, member = c.role("owner"), c.role("member")
    variants: list[dict[str, Any]] = [{"kind": "secret", "secretName": "API"}, {"kind": "sudo"}, {"sensitive": True},
                                      {"questions": [{"id": "q", "question": "Password?", "isSecret": True}]}]
    for extra in variants:
        iid = fresh("in")
        c.script("request_input", action="cancel")
        c.call("request_input", {"conversationId": c.role("group"), "inputId": iid, "prompt": "?", "responseUserId": member,
                                 "timeoutMs": MINUTE_MS, **extra})
        routed = c.interaction(iid).get("responseUserId")
        ctx.expect(routed == owner, f"request_input {extra} was routed to {routed!r}; secret kinds go to the owner only")


@needs_control('how the target routed each input (control interaction: its responder), which only the human it reached sees')
def check_input_kind_default(ctx: CheckContext) -> None:
    """No kind routes like kind clarify (not like the owner-only kinds)."""
    c = CanonClient(ctx)
    routed = {}
    for label, extra in (("kind clarify", {"kind": "clarify"}), ("no kind", {})):
        iid = fresh("kind")
        c.script("request_input", action="cancel")
        expect_result(ctx, c.call("request_input", {"conversationId": c.role("group"), "inputId": iid, "prompt": "?",
                                                    "responseUserId": c.role("member"), "timeoutMs": MINUTE_MS, **extra}), f"request_input with {label}")
        routed[label] = c.interaction(iid).get("responseUserId")
    ctx.expect(routed["no kind"] == routed["kind clarify"],
               f"kind defaults to clarify: without kind the input went to {routed['no kind']!r}, with clarify to {routed['kind clarify']!r}")


@needs_control('where the target posted the input (control interaction: its conversation), which no verb of the document shows')
def check_default_conversation(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    iid = fresh("active")
    c.script("request_input", action="cancel")
    expect_result(ctx, c.call("request_input", {"inputId": iid, "prompt": "?", "timeoutMs": MINUTE_MS}), "request_input without conversationId")
    got = c.interaction(iid).get("conversationId")
    ctx.expect(got == c.role("active_chat"), f"request_input without conversationId must go to the active conversation, went to {got!r}")


@needs_control('how the target routed each request (control interaction: its responder), which only the human it reached sees')
def check_responder_member(ctx: CheckContext, strict: bool = False) -> None:
    """responseUserId must be a human member: a stranger or the agent itself is refused, or
    (a trust-critical binding) ignored: the request never goes to them."""
    c = CanonClient(ctx)
    for verb in ("request_input", "request_card"):
        for label, who in (("a non-member", c.role("stranger")), ("the agent (not a human)", c.role("agent"))):
            with ctx.subcheck(f"{verb} to {label}"):
                ident = fresh("resp")
                c.script(verb, action="cancel")
                payload: dict[str, Any] = {"conversationId": c.role("group"), "responseUserId": who, "timeoutMs": MINUTE_MS}
                if verb == "request_input":
                    payload.update(inputId=ident, prompt="?")
                else:
                    payload.update(cardId=ident, card=c.card(actions=True))
                reply = c.call(verb, payload)
                what = f"{verb} with responseUserId {label}"
                if strict or not reply.ok:
                    refused_as(ctx, reply, "NOT_A_MEMBER", what, strict)
                    continue
                routed = c.interaction(ident).get("responseUserId")
                ctx.expect(routed != who, f"{what} was accepted and routed to them; refuse it or ignore the model-supplied value")


@needs_control('a member and the owner who each allow the approval with a session rule (control script)')
def check_session_rule_owner_only(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    rule = {"type": "approve-tool", "toolPattern": "deploy"}
    c.script("request_approval", action="allow", sessionRule=rule, **{"as": c.role("member")})
    reply = c.call("request_approval", {"conversationId": c.role("group"), "toolName": "deploy", "toolSummary": "x",
                                        "allowSessionRule": True, "responseUserId": c.role("member")})
    result = expect_result(ctx, reply, "request_approval answered by a non-owner")
    ctx.expect(result.get("status") == "allow", f"scripted allow did not arrive: {result}")
    ctx.expect("sessionRule" not in result, f"a non-owner's sessionRule must be dropped: {result}")
    c.script("request_approval", action="allow", sessionRule=rule)
    owner = expect_result(ctx, c.call("request_approval", {"toolName": "deploy", "toolSummary": "x", "allowSessionRule": True}),
                      "request_approval answered by the owner")
    ctx.expect(owner.get("sessionRule") == rule, f"the owner's sessionRule must be kept: {owner}")


@needs_control('humans who answer, cancel and let time out (control script)')
def check_input_outcomes(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    base = {"conversationId": c.role("owner_chat"), "prompt": "Pick", "timeoutMs": MINUTE_MS}
    for script, expected in ((dict(action="answer", value="blue"), "submitted"), (dict(action="cancel"), "cancelled"),
                             (dict(action="timeout"), "timeout")):
        c.script("request_input", **script)
        got = expect_result(ctx, c.call("request_input", {**base, "inputId": fresh("in")}), f"request_input answered with {script['action']}")
        ctx.expect(got.get("status") == expected, f"a human's {script['action']} must give status {expected!r}: {got}")
    answers = {"color": {"answers": ["blue"]}}
    c.script("request_input", action="answer", answers=answers)
    got = expect_result(ctx, c.call("request_input", {**base, "inputId": fresh("in"), "questions": [{"id": "color", "question": "Color?"}]}),
                        "request_input answered with structured answers")
    ctx.expect(got.get("status") == "submitted" and got.get("value") == "" and got.get("answers") == answers,
               f"structured answers come keyed by question id with value '': {got}")
    c.script("request_card", action="cancel")
    got = expect_result(ctx, c.call("request_card", {"card": c.card(actions=True), "timeoutMs": MINUTE_MS}), "request_card cancelled")
    ctx.expect(got.get("status") == "cancelled", f"a cancelled card must say cancelled: {got}")
    c.script("request_card", action="submit", actionId="ok", values={"a": "b"})
    ident = fresh("card")
    got = expect_result(ctx, c.call("request_card", {"cardId": ident, "card": c.card(actions=True), "timeoutMs": MINUTE_MS}), "request_card submitted")
    responder = c.interaction(ident).get("responseUserId")
    ctx.expect(got.get("status") == "submitted" and got.get("respondedBy") in (None, responder),
               f"a submitted card names its verified responder {responder!r}: {got}")


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"v": "x"}
    for _ in range(depth - 1):
        value = {"n": value}
    return value


@needs_control('a human who submits the card with the values under test (control script)')
def check_card_values(ctx: CheckContext) -> None:
    """A human's values: within the limits they come back; over them they never do."""
    c = CanonClient(ctx)
    size = ctx.limit("card_values_bytes")
    depth = ctx.limit("card_values_depth")
    pad = len(json.dumps({"v": ""}, separators=(",", ":")))
    cases = [(f"values of exactly {size} bytes", {"v": "x" * (size - pad)}, True),
             (f"values of {size + 1} bytes", {"v": "x" * (size + 1 - pad)}, False),
             (f"values {depth - 1} levels deep", nested(depth - 1), True),  # within the limit however depth is counted
             (f"values {depth + 2} levels deep", nested(depth + 2), False)]
    for what, values, kept in cases:
        with ctx.subcheck(what):
            c.script("request_card", action="submit", actionId="ok", values=values)
            got = expect_result(ctx, c.call("request_card", {"card": c.card(actions=True), "timeoutMs": MINUTE_MS}), f"request_card submitted with {what}")
            if kept:
                ctx.expect(got.get("status") == "submitted" and got.get("values") == values, f"{what} are within the limits and must come back: {str(got)[:200]}")
            else:
                ctx.expect(got.get("status") != "submitted" or got.get("values") != values, f"{what} are over the limits and came back: {str(got)[:200]}")


def diff_file(path: str, text: str) -> dict[str, Any]:
    return {"path": path, "status": "modified", "diff": text}


def approval_diff(c: CanonClient, files: list[dict[str, Any]]) -> dict[str, Any]:
    """The diff as the human sees it (control interaction) for a detached approval carrying ``files``."""
    pending = c.detached_approval(diff={"files": files})
    diff = c.interaction(pending["approvalId"]).get("diff")
    return diff if isinstance(diff, dict) else {}


@needs_control('the diff as the human sees it (control interaction), which no verb of the document shows')
def check_diff_clip(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    per_file = ctx.limit("diff_file_clip_bytes")
    total = ctx.limit("diff_total_clip_bytes")
    body = "+x\n"

    def text(n: int) -> str:
        return (body * (n // len(body) + 1))[:n]

    with ctx.subcheck("one file at the per-file clip"):
        seen = approval_diff(c, [diff_file("src/a.py", text(per_file))])
        ctx.expect([len(str(f.get("diff", "")).encode()) for f in objects(seen.get("files"))] == [per_file],
                   f"a file diff of exactly {per_file} bytes must reach the human whole: {[len(str(f.get('diff', ''))) for f in objects(seen.get('files'))]}")
    with ctx.subcheck("one file a byte past the per-file clip"):
        seen = approval_diff(c, [diff_file("src/a.py", text(per_file + 1))])
        sizes = [len(str(f.get("diff", "")).encode()) for f in objects(seen.get("files"))]
        ctx.expect(sizes and all(s <= per_file for s in sizes), f"a file diff of {per_file + 1} bytes must be clipped to {per_file}: {sizes}")
    with ctx.subcheck("files past the total clip"):
        count = total // per_file + 1
        seen = approval_diff(c, [diff_file(f"src/f{i}.py", text(per_file)) for i in range(count)])
        shown = sum(len(str(f.get("diff", "")).encode()) for f in objects(seen.get("files")))
        ctx.expect(0 < shown <= total, f"{count} file diffs of {per_file} bytes must be clipped to {total} in total, the human sees {shown}")


PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7conformance\n-----END PRIVATE KEY-----"


@needs_control('the diff as the human sees it (control interaction), which no verb of the document shows')
def check_diff_redaction(ctx: CheckContext) -> None:
    """The profile's reading of "sensitive paths" and "secret tokens": a .env file and a PEM private key."""
    c = CanonClient(ctx)
    seen = approval_diff(c, [diff_file("src/app.py", f"+key = '''{PEM}'''\n"), diff_file(".env", "+DB_PASSWORD=hunter2\n")])
    shown = json.dumps(seen)
    ctx.expect("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7conformance" not in shown, "a private key in a diff reached the human unredacted")
    ctx.expect("hunter2" not in shown, "the diff of .env (a sensitive path) reached the human")


# ----------------------------------------------------------------------------------
# cards
# ----------------------------------------------------------------------------------
def check_card_actions_required(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    refused_as(ctx, c.call("request_card", {"card": c.card(actions=False), "timeoutMs": MINUTE_MS}), "CARD_REJECTED",
            "request_card without an actions block", strict)
    expect_result(ctx, c.call("send_card", {"card": c.card(actions=False)}), "send_card without actions (display only)")


def check_card_envelope(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    before = c.snapshot()
    refused_as(ctx, c.call("send_card", {"card": c.card(apiToken="abc")}), "CARD_REJECTED", "a card with a secret-bearing top-level key", strict)
    limit = ctx.limit("card_envelope_bytes")
    base = c.card(blocks=[{"type": "text", "text": ""}])
    pad = len(json.dumps(base, separators=(",", ":"), ensure_ascii=False).encode())
    edge = c.card(blocks=[{"type": "text", "text": "x" * (limit - pad)}])
    big = c.card(blocks=[{"type": "text", "text": "x" * (limit - pad + 1)}])
    ctx.expect(validator_for(ctx.profile.operations["send_card"].params_schema).is_valid({"card": big}), "the oversized card must be schema-valid")
    refused_as(ctx, c.call("send_card", {"card": big}), "CARD_REJECTED", f"a card one byte over {limit} serialized bytes", strict)
    ctx.expect(c.snapshot() == before, "a rejected card changed the state", kind="state_changed")
    expect_result(ctx, c.call("send_card", {"card": edge}), f"a card of exactly {limit} serialized bytes")


def tool_schema(ctx: CheckContext, tools: dict[Any, dict[str, Any]], verb: str) -> ToolSchema:
    return ToolSchema(ctx, verb, tools.get(verb, {}).get("inputSchema") or {})


def check_mcp_card_schema(ctx: CheckContext) -> None:
    """Tool bindings compose the card document schema: the send_card / request_card tools
    refuse cards past the document's authoring caps (envelope-valid) and accept one at them."""
    if ctx.binding.kind != "mcp-tools":
        raise NotApplicable("tool input schemas exist only in the mcp binding")
    c = CanonClient(ctx)
    lim = {k: int(v.value) for k, v in ctx.profile.limits.items()}
    tools = {t["name"]: t for t in c.binding.list_tools() if isinstance(t.get("name"), str)}
    block = {"type": "text", "text": "x"}
    at_caps = c.card(title="t" * lim["card_title_authoring_chars"], fallbackText="f" * lim["card_fallback_authoring_chars"],
                     blocks=[block] * (lim["card_blocks_authoring_count"] - 1) + [{"type": "actions", "actions": [{"id": "ok", "label": "OK"}]}])
    past = {"title": c.card(title="t" * (lim["card_title_authoring_chars"] + 1)),
            "fallbackText": c.card(fallbackText="f" * (lim["card_fallback_authoring_chars"] + 1)),
            "blocks": c.card(blocks=[block] * (lim["card_blocks_authoring_count"] + 1)),
            "a block that is not an object": c.card(blocks=[42])}
    for verb in ("send_card", "request_card"):
        envelope = validator_for(ctx.profile.operations[verb].params_schema)
        tool = tool_schema(ctx, tools, verb)
        with ctx.subcheck(f"{verb} at the caps"):
            ctx.expect(tool.is_valid({"card": at_caps}), f"tool {verb}'s inputSchema refuses a card at the document's authoring caps")
        for what, card in past.items():
            with ctx.subcheck(f"{verb}: {what}"):
                ctx.expect(envelope.is_valid({"card": card}), f"the probe ({what}) must be envelope-valid")
                ctx.expect(not tool.is_valid({"card": card}),
                           f"tool {verb}'s inputSchema accepts a card past the document schema ({what}): it is not composed with the card schema")


# ----------------------------------------------------------------------------------
# messages, contacts, groups
# ----------------------------------------------------------------------------------
def check_react_toggle(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    sent = expect_result(ctx, c.send("react to me"), "send_to", ["conversationId", "messageId"])
    payload = {"conversationId": sent["conversationId"], "messageId": sent["messageId"], "emoji": "tada"}
    first = expect_result(ctx, c.call("react", payload), "react")
    second = expect_result(ctx, c.call("react", payload), "react again")
    ctx.expect((first.get("action"), second.get("action")) == ("added", "removed"), f"react must toggle added then removed: {first} {second}")
    refused_as(ctx, c.call("react", {**payload, "messageId": fresh("nomsg")}), "MESSAGE_NOT_FOUND", "react to an unknown message", strict)


def check_forward(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    sent = expect_result(ctx, c.send("forward me"), "send_to", ["conversationId", "messageId"])
    fwd = expect_result(ctx, c.call("forward", {"sourceConversationId": sent["conversationId"], "targetConversationId": c.role("agent_group"),
                                            "messageId": sent["messageId"]}), "forward")
    ctx.expect(fwd.get("targetConversationId") == c.role("agent_group"), f"forward went elsewhere: {fwd}")
    left = c.group(c.role("open_user"))
    inside = expect_result(ctx, c.send("secret", targetConversationId=left), "send_to the group", ["messageId"])
    expect_result(ctx, c.call("leave_conversation", {"conversationId": left}), "leave_conversation")
    reply = c.call("forward", {"sourceConversationId": left, "targetConversationId": c.role("agent_group"), "messageId": inside["messageId"]})
    refused_as(ctx, reply, "NOT_A_MEMBER", "forward out of a conversation the agent left", strict)


def check_share_contact(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    ok = expect_result(ctx, c.call("share_contact", {"conversationId": c.role("owner_chat"), "contactUserId": c.role("member")}), "share_contact of a contact")
    ctx.expect(ok.get("status") == "shared", f"share_contact must say shared: {ok}")
    reply = c.call("share_contact", {"conversationId": c.role("owner_chat"), "contactUserId": c.role("stranger")})
    refused_as(ctx, reply, "NOT_A_CONTACT", "share_contact of a user outside the agent's contacts", strict)


def check_group_admission(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    r = c.role
    made = expect_result(ctx, c.call("create_group", {"memberIds": [r("open_user"), r("approval_user"), r("closed_user")]}), "create_group")
    ctx.expect(made.get("added") == [r("open_user")], f"only the open user is added at creation: {made.get('added')}")
    ctx.expect([p.get("userId") for p in objects(made.get("pending"))] == [r("approval_user")], f"the approval-required user is pending: {made.get('pending')}")
    ctx.expect([s.get("userId") for s in objects(made.get("skipped"))] == [r("closed_user")], f"the closed user is skipped: {made.get('skipped')}")
    convs = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    mine = [x for x in convs if x.get("id") == made.get("conversationId")]
    ctx.expect(mine and r("agent") in members_of(mine[0]), f"the caller is added to its new group automatically: {mine}")
    invite_only = expect_result(ctx, c.call("create_group", {"memberIds": [r("approval_user")]}), "create_group with only a pending invite")
    ctx.expect(invite_only.get("added") == [] and invite_only.get("pending"), f"a creator-only group with a pending invite is valid: {invite_only}")
    refused_as(ctx, c.call("create_group", {"memberIds": [r("closed_user")]}), "GROUP_EMPTY", "create_group where everyone is skipped", strict)


def check_add_member(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    r = c.role
    group = c.group(r("member"))
    ctx.expect(expect_result(ctx, c.call("add_member", {"conversationId": group, "userId": r("open_user")}), "add_member open").get("status") == "added",
               "an open user is added")
    pending = expect_result(ctx, c.call("add_member", {"conversationId": group, "userId": r("approval_user")}), "add_member approval-required")
    ctx.expect(pending.get("status") == "pending" and pending.get("requestId"), f"an approval-required user yields a pending invite: {pending}")
    reply = c.call("add_member", {"conversationId": group, "userId": r("closed_user")})
    if strict:
        expect_error(ctx, reply, "ADMISSION_DENIED", "add_member of a closed user")
        return
    convs = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    members = next((members_of(x) for x in convs if x.get("id") == group), [])
    ctx.expect(r("closed_user") not in members and not (reply.ok and (reply.result or {}).get("status") == "added"),
               f"a closed user must not be added ({reply.describe()}; members {members})")


REMOVE_FROM_GROUP = ("asks to remove `member` from the configured group `group` (the owner's), where the agent is a "
                     "plain member: a target that wrongly lets it removes them for good (the agent cannot add them back)")


def check_remove_member(ctx: CheckContext, strict: bool = False) -> None:
    """A plain member's remove_member needs a group where the agent is no admin: only the
    configured ``group`` is one (a group the agent makes, it owns). A compliant target
    refuses; one that does not removes ``member`` for good, so the row is lasting."""
    c = CanonClient(ctx)
    group, member = c.role("group"), c.role("member")
    ctx.lasting("full", REMOVE_FROM_GROUP)
    reply = c.call("remove_member", {"conversationId": group, "userId": member})
    if reply.ok:  # the harm a wrong answer did: try to put it back (the agent may not be allowed to)
        ctx.put_back(f"{member} removed from {group}", lambda: c.call("add_member", {"conversationId": group, "userId": member}).ok)
    refused_as(ctx, reply, "NOT_GROUP_ADMIN", "remove_member by a plain member", strict)
    group = c.group(c.role("open_user"))
    expect_result(ctx, c.call("remove_member", {"conversationId": group, "userId": c.role("open_user")}), "remove_member by the owner")


def check_leave(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    group = c.group(c.role("open_user"))
    left = expect_result(ctx, c.call("leave_conversation", {"conversationId": group}), "leave_conversation")
    ctx.expect(left.get("status") == "left", f"leave_conversation must say left: {left}")
    convs = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    ctx.expect(all(x.get("id") != group for x in convs), "the agent still lists the conversation it left")
    refused_as(ctx, c.send("still here?", targetConversationId=group), "NOT_A_MEMBER", "send_to a conversation the agent left", strict)


def check_list_contacts(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    ids = {str(x["id"]) for x in items(ctx, c.call("list_contacts", {}), "list_contacts", "contacts") if isinstance(x.get("id"), str)}
    ctx.expect(c.role("member") in ids, "list_contacts lacks a contact")
    ctx.expect(c.role("stranger") not in ids and c.role("closed_user") not in ids, f"list_contacts lists non-contacts: {sorted(ids)}")


def check_list_conversations(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    c.group(c.role("open_user"))
    every = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    ctx.expect(len(every) >= 2, f"list_conversations shows {len(every)} conversations")
    capped = items(ctx, c.call("list_conversations", {"limit": 1}), "list_conversations limit 1", "conversations")
    ctx.expect(len(capped) == 1, f"limit 1 returned {len(capped)} conversations")


def check_no_reply(ctx: CheckContext) -> None:
    """Nothing is posted: the owner's view of the chat (control messages) is unchanged, or,
    without control, the chat's lastMessage as list_conversations shows it to the agent."""
    c = CanonClient(ctx)
    chat = c.role("owner_chat")

    def seen() -> Any:
        return c.messages(chat, c.role("owner")) if ctx.run.control_path else c.listed(chat).get("lastMessage")

    before = seen()
    got = expect_result(ctx, c.call("no_reply", {"conversationId": chat, "reason": "nothing to say"}), "no_reply")
    ctx.expect(got.get("status") == "acknowledged", f"no_reply must say acknowledged: {got}")
    ctx.expect(seen() == before, "no_reply posted something")


def check_lifecycle(ctx: CheckContext) -> None:
    """Both parts of the model; the approvals' part decides approvals and lets their
    deadlines pass on the target's clock, so without control the row is untested as a
    whole (a pass on the conversations alone would claim the approvals too)."""
    if not ctx.run.control_path:
        ctx.needs_control("the approvals' part of the model decides approvals (control decide_approval) and moves "
                          "the target's clock past their deadlines, minutes apart (control advance_clock)")
    CanonMachine.run(ctx)


# ----------------------------------------------------------------------------------
# bindings
# ----------------------------------------------------------------------------------
def verbs_as_callers(ctx: CheckContext) -> dict[str, Callable[[Any], Any]]:
    """The auth family's rows: harmless verbs with valid inputs, each taking a caller."""
    c = CanonClient(ctx)
    inputs = {"list_contacts": {}, "list_conversations": {"limit": 1},
              "send_to": {"targetConversationId": c.role("owner_chat"), "text": "conformance check"}}
    return {verb: functools.partial(lambda verb, payload, who: c.binding.call(verb, payload, caller=who), verb, payload)
            for verb, payload in inputs.items()}


def check_binding_errors(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    replies = [
        ("schema-invalid input", c.call("react", {"emoji": ""})),
        ("unknown conversation", c.send("x", targetConversationId=fresh("conv"))),
        ("not a contact", c.call("share_contact", {"conversationId": c.role("owner_chat"), "contactUserId": c.role("stranger")})),
    ]
    for what, reply in replies:
        expect_catalogued(ctx, reply, what, require_error=True)


def mcp_surface(profile: Profile) -> McpSurface:
    """What the MCP rows need of Canon: one tool per verb (the profile's binding), the
    verbs' schemas, a harmless read and a call the spec refuses (an unknown conversation)."""
    src = Source("profile", f"profiles/{profile.name}.yaml#/bindings/mcp")
    return McpSurface(
        tools=lambda p: {v: op.params_schema for v, op in p.operations.items()},
        results=lambda p: {v: op.result_schema for v, op in p.operations.items()},
        harmless=lambda ctx: ("list_contacts", {}),
        refused=lambda ctx: ("send_to", {"targetConversationId": fresh("conv"), "text": "x"}),
        tools_source=src, tools_level="SHOULD", versions_source=src, versions_level="SHOULD", exact=True)


# ----------------------------------------------------------------------------------
# the table
# ----------------------------------------------------------------------------------
# Verbs whose inputs have no required property of their own (send_to requires one
# target through its oneOf) or whose results carry no status need faults of their own.
VALID_FAULTS = {"send_to": ("contact_id_target_rejected",)}
# check_approval reads an approval that set-up opens: a fault renaming every status blocks
# the set-up (CANON-APPROVAL-DETACHED reports it), so its own fault renames only its result
RESULT_FAULTS = {"list_contacts": ("contact_items_incomplete",), "list_conversations": ("conversation_items_incomplete",),
                 "check_approval": ("check_approval_status_renamed",)}

def build(profile: Profile) -> list[Requirement]:
    yaml_src = f"profiles/{profile.name}.yaml"
    table = Table(profile)
    at, req = table.at, table.req
    lim = {name: int(limit.value) for name, limit in profile.limits.items()}
    hour_ms = 60 * MINUTE_MS

    code = table.code
    CODES = ("refusal_codes_swapped",)  # the fault every profile-code SHOULD catches

    def pair(rid: str, title: str, source: Source, check: Callable[..., None], faults: tuple[str, ...], error: str) -> list[Requirement]:
        return table.pair(rid, title, source, check, faults, error, CODES)

    d = "/$defs"
    reqs = [
        req("CANON-MESSAGE-ID-REPLAY", "MUST", "The same messageId with an identical payload replays the original result, once (send_to and share_contact)",
            at(f"{d}/messageId/description"), each_message_id_verb(idempotency.replay_once),
            ("message_id_replay_duplicates", "share_contact_replay_duplicates")),
        req("CANON-MESSAGE-ID-CONCURRENT", "MUST", "Identical calls with one messageId arriving at once store one message (send_to and share_contact)",
            at(f"{d}/messageId/description"), each_message_id_verb(idempotency.replay_concurrent),
            ("message_id_replay_duplicates", "share_contact_replay_duplicates")),
        req("CANON-MESSAGE-ID-CONFLICT", "MUST", "The same messageId with a different payload is refused: 409, carrying MESSAGE_ID_EXISTS (send_to and share_contact)",
            at(f"{d}/messageId/description"), check_message_id_conflict, ("message_id_conflict_accepted", "message_id_conflict_wrong_code")),
        req("CANON-MESSAGE-ID-CONFLICT-CODE", "SHOULD", "The messageId conflict carries MESSAGE_ID_EXISTS as the binding's error code (error.code)",
            table.chosen(f"{yaml_src}#/bindings: the document names the code, not where a refusal carries it"),
            lambda ctx: idempotency.conflict_refused(ctx, sends=message_id_conflicts(ctx), error=DOCUMENT_CODE), ("message_id_conflict_wrong_code", "conflict_code_beside_error")),
        *[req(rid, level, "The reserved messageIds '.', '..' and __x__ are refused and change nothing" + tail, src,
              functools.partial(refused_examples, error=REJECTION if level == "SHOULD" else None), faults)
          for rid, level, tail, src, faults in (
              ("CANON-MESSAGE-ID-RESERVED", "MUST", "", at(f"{d}/messageId/not/description"), ("reserved_ids_accepted",)),
              ("CANON-MESSAGE-ID-RESERVED-CODE", "SHOULD", f": the refusal carries {REJECTION}", code(REJECTION), CODES))],
        req("CANON-INPUT-ID-SINGLE-USE", "MUST", "An inputId is single-use: reuse is refused (409)",
            at(f"{d}/request_input_input/properties/inputId/description"), lambda ctx: idempotency.single_use(ctx, sends=input_ids(ctx)), ("input_id_reuse_accepted",)),
        req("CANON-INPUT-ID-SINGLE-USE-CODE", "SHOULD", "An inputId reuse gets ID_ALREADY_USED (409)", code("ID_ALREADY_USED"),
            lambda ctx: idempotency.single_use(ctx, sends=input_ids(ctx), error="ID_ALREADY_USED"), CODES),
        req("CANON-APPROVAL-ID-SINGLE-USE", "MUST", "An approvalId is durable and single-use: reuse is refused",
            at(f"{d}/request_approval_input/properties/approvalId/description"), lambda ctx: idempotency.single_use(ctx, sends=approval_ids(ctx)), ("approval_id_reuse_accepted",)),
        req("CANON-APPROVAL-ID-SINGLE-USE-CODE", "SHOULD", "An approvalId reuse gets ID_ALREADY_USED (409)", code("ID_ALREADY_USED"),
            lambda ctx: idempotency.single_use(ctx, sends=approval_ids(ctx), error="ID_ALREADY_USED"), CODES),
        req("CANON-SELF-CONTEXT-PRIVATE", "MUST", "A selfContext is visible only to the sending agent, never to recipients",
            at(f"{d}/selfContext/description"), check_self_context_private, ("self_context_leaks",)),
        *pair("CANON-SELF-CONTEXT-SOURCE", "A selfContext send needs a sourceConversationId the agent is a member of",
              at(f"{d}/send_to_input/properties/sourceConversationId/description"), check_self_context_source, ("self_context_without_membership",), "NOT_A_MEMBER"),
        req("CANON-SEND-ADMISSION", "MUST", "send_to a user: open gets messaged, approval-required requested/pending, closed unavailable/closed",
            at(f"{d}/send_to_input/description"), check_admission, ("approval_required_messaged", "closed_target_reason_wrong")),
        req("CANON-SEND-DEFERRED", "MUST", "A send to an approval-required user carries deferredIntentId and is delivered once the request is approved",
            at(f"{d}/send_to_input/description"), check_deferred_send, ("deferred_send_lost", "deferred_intent_missing")),
        req("CANON-REQUEST-MESSAGE", "MUST", f"The contact-request note is requestMessage, else the text, truncated to {lim['request_message_chars']} chars",
            at(f"{d}/send_to_input/properties/requestMessage/description"), check_request_message, ("request_message_ignored", "request_message_untruncated")),
        req("CANON-SEND-SESSION-SELECTION", "MUST", "sessionSelection new / continue_latest / specific pick the conversation they name",
            at(f"{d}/sessionSelection"), check_session_selection, ("session_new_reuses",)),
        req("CANON-SEND-SESSION-DEFAULT", "MUST", "A user-targeted send without sessionSelection continues the latest conversation or creates one",
            at(f"{d}/sessionSelection/description"), check_session_default, ("session_default_new",)),
        *pair("CANON-MENTIONS-MEMBERS", "Every mention must be a conversation member (refused otherwise)",
              at(f"{d}/messageOptions/properties/mentions/description"), check_mentions, ("mention_non_member_accepted",), "INVALID_MENTION"),
        req("CANON-TEXT-BYTES", "MUST", f"send_to text and forward captions: {lim['text_bytes']} bytes of UTF-8 accepted, one more refused",
            at(f"{d}/send_to_input/properties/text/description"), check_text_bytes, ("text_bytes_unchecked",)),
        req("CANON-METADATA-SIZE", "MUST", f"turnMetadata of {lim['metadata_utf16_units']} UTF-16 code units is accepted (bytes do not count), one more refused",
            at(f"{d}/turnMetadata/description"), check_metadata_size, ("metadata_size_unchecked",)),
        req("CANON-ATTACHMENT-ALLOWLIST", "MUST", "Attachment URLs from the target's upload flow are accepted, any other is refused (fail-closed)",
            at(f"{d}/mediaAttachment/properties/url/description"), check_attachment_allowlist, ("attachment_allowlist_open",)),
        req("CANON-SEND-CONTENT-REQUIRED", "MUST", "send_to without text and without attachments is refused",
            at(f"{d}/send_to_input/properties/text/description"), check_content_required, ("content_unchecked",)),
        req("CANON-CONTENT-TYPE-DERIVED", "MUST", "Without contentType a message's type is derived from its attachments",
            at(f"{d}/messageOptions/properties/contentType/description"), check_content_type, ("content_type_always_text",)),
        req("CANON-REPLY-TO-UNVALIDATED", "MUST", "replyTo is not existence-validated: an unknown message id is accepted",
            at(f"{d}/messageOptions/properties/replyTo/description"), check_reply_to, ("reply_to_validated",)),
        *pair("CANON-DEADLINE-CEILING", f"Deadlines at the ceiling are accepted and one second past it refused or clamped: input {lim['input_ceiling_ms'] / MINUTE_MS:g} minutes, "
              f"card {lim['card_ceiling_ms'] / MINUTE_MS:g} minutes, approval {lim['approval_ceiling_ms'] / hour_ms:g} hours",
              at(f"{d}/request_approval_input/description"), check_deadline_ceiling, ("deadline_ceiling_ignored", "deadline_ceiling_loose"), "DEADLINE_TOO_FAR"),
        req("CANON-EXPIRES-AT-WINS", "MUST", "expiresAt wins when both timeoutMs and expiresAt are given (request_input, request_card, request_approval)",
            at(f"{d}/request_input_input/properties/timeoutMs/description"), check_expires_at_wins, ("timeout_wins",)),
        req("CANON-DEADLINE-DEFAULT", "MUST", "Without a deadline the binding fills one within the ceiling; timeoutMs becomes expiresAt",
            at(f"{d}/request_input_input/properties/expiresAt/description"), check_deadline_default, ("timeout_ms_ignored",)),
        req("CANON-APPROVAL-FAILS-CLOSED", "MUST", "request_approval blocks by default; unanswered it times out closed (timeout or deny, never allow)",
            at(f"{d}/request_approval_input/description"), check_approval_fails_closed, ("approval_timeout_allows", "approval_default_detached")),
        req("CANON-APPROVAL-DETACHED", "MUST", "mode detached answers pending at once; the decision (and its responder) arrives through check_approval",
            at(f"{d}/request_approval_input/description"), check_approval_detached, ("detached_approval_blocks", "responded_by_agent")),
        req("CANON-CHECK-APPROVAL-STATUSES", "MUST", "check_approval: unknown is not a denial, pending while open, expired after the deadline",
            at(f"{d}/check_approval_result/description"), check_approval_statuses, ("expired_reported_deny", "unknown_reported_deny", "approval_never_expires")),
        req("CANON-CHECK-APPROVAL-REPLAY", "MUST", f"A resolved decision replays up to {lim['approval_replay_window_ms'] / hour_ms:g} h after the first consume, then is unknown",
            at(f"{d}/check_approval_input/description"), check_approval_replay, ("check_approval_replay_consumed", "replay_window_loose")),
        req("CANON-CHECK-APPROVAL-BOUND", "MUST", "check_approval is bound to the conversation that created the approval",
            at(f"{d}/check_approval_input/description"), check_approval_bound, ("approval_conversation_unbound",)),
        req("CANON-SECRET-OWNER-ONLY", "MUST", "sudo/secret kinds, sensitive and isSecret questions route to the owner only",
            at(f"{d}/request_input_input/description"), check_secret_owner_only, ("secret_input_routed_to_member",)),
        req("CANON-INPUT-KIND-DEFAULT", "MUST", "request_input without kind routes as kind clarify",
            at(f"{d}/request_input_input/properties/kind/default"), check_input_kind_default, ("kind_default_secret",)),
        req("CANON-DEFAULT-CONVERSATION", "MUST", "request_input without conversationId goes to the active conversation",
            at(f"{d}/request_input_input/properties/conversationId/description"), check_default_conversation, ("active_conversation_ignored",)),
        *pair("CANON-RESPONDER-HUMAN-MEMBER", "request_input / request_card never go to a responseUserId that is not a human member (refused or ignored)",
              at(f"{d}/request_input_input/properties/responseUserId/description"), check_responder_member, ("responder_unchecked",), "NOT_A_MEMBER"),
        req("CANON-SESSION-RULE-OWNER-ONLY", "MUST", "A non-owner responder's session rule is dropped; the owner's is kept",
            at(f"{d}/sessionRule/description"), check_session_rule_owner_only, ("non_owner_session_rule_kept",)),
        req("CANON-HUMAN-OUTCOMES", "MUST", "request_input / request_card report submitted (structured answers: value ''), cancelled and timeout, with the verified responder",
            at(f"{d}/request_input_result"), check_input_outcomes, ("input_cancel_reported_timeout", "structured_value_not_empty", "card_responded_by_agent")),
        req("CANON-CARD-VALUES-LIMITS", "MUST", f"A human's card values within {lim['card_values_bytes']} bytes / depth {lim['card_values_depth']} come back; past them they never do",
            at(f"{d}/request_card_result/oneOf/0/properties/values/description"), check_card_values, ("card_values_unchecked",)),
        req("CANON-DIFF-CLIP", "MUST", f"The human sees each file diff clipped to {lim['diff_file_clip_bytes']} bytes and all to {lim['diff_total_clip_bytes']}",
            at(f"{d}/unifiedDiff/description"), check_diff_clip, ("diff_unclipped",)),
        req("CANON-DIFF-REDACTION", "SHOULD", "A .env diff is suppressed and a private key redacted before the human sees them",
            Source("profile", "the spec names no sensitive path or secret-token form: a .env file and a PEM private key are the profile's unmistakable cases"),
            check_diff_redaction, ("secret_tokens_shown", "sensitive_paths_shown")),
        *pair("CANON-CARD-ACTIONS-REQUIRED", "request_card needs at least one actions block; send_card needs none",
              at(f"{d}/request_card_input/description"), check_card_actions_required, ("card_without_actions_accepted",), "CARD_REJECTED"),
        *pair("CANON-CARD-ENVELOPE", f"Cards of {lim['card_envelope_bytes']} serialized bytes are accepted; one byte more or secret-bearing top-level keys are refused",
              at(f"{d}/runtimeCard/description"), check_card_envelope, ("card_secret_key_accepted", "card_size_unchecked"), "CARD_REJECTED"),
        req("CANON-MCP-CARD-SCHEMA", "MUST", "The send_card / request_card tools compose the card document schema (authoring caps enforced)",
            at(f"{d}/runtimeCard/description"), check_mcp_card_schema, ("mcp_card_schema_envelope_only",)),
        *pair("CANON-REACT-TOGGLE", "react toggles: added, then removed; an unknown message is refused",
              at(f"{d}/react_input/description"), check_react_toggle, ("react_always_adds",), "MESSAGE_NOT_FOUND"),
        *pair("CANON-FORWARD", "forward copies a message the agent can see into another conversation",
              at(f"{d}/forward_input/description"), check_forward, ("forward_from_nonmember_allowed",), "NOT_A_MEMBER"),
        *pair("CANON-SHARE-CONTACT", "share_contact of someone outside the agent's contacts is refused (403)",
              at(f"{d}/share_contact_input/description"), check_share_contact, ("share_non_contact_allowed",), "NOT_A_CONTACT"),
        *pair("CANON-GROUP-STAGED-ADMISSION", "create_group adds (the caller too), invites (pending) and skips by policy; nobody to add is refused",
              at(f"{d}/create_group_input/description"), check_group_admission, ("create_group_ignores_policy", "creator_not_added"), "GROUP_EMPTY"),
        *pair("CANON-GROUP-ADD-MEMBER", "add_member of an approval-required user yields a pending invite; a closed user is not added",
              at(f"{d}/add_member_input/description"), check_add_member, ("add_member_ignores_policy",), "ADMISSION_DENIED"),
        *pair("CANON-GROUP-REMOVE-ADMIN-ONLY", "remove_member needs a group owner or admin",
              at(f"{d}/remove_member_input/description"), check_remove_member, ("remove_member_by_non_admin",), "NOT_GROUP_ADMIN"),
        *pair("CANON-GROUP-LEAVE", "leave_conversation ends the agent's membership",
              at(f"{d}/leave_conversation_result"), check_leave, ("leave_keeps_membership",), "NOT_A_MEMBER"),
        req("CANON-LIST-CONTACTS", "MUST", "list_contacts lists the agent's contacts and no one else",
            at(f"{d}/list_contacts_result"), check_list_contacts, ("list_contacts_includes_strangers",)),
        req("CANON-LIST-CONVERSATIONS-LIMIT", "MUST", "list_conversations limit caps the number of conversations",
            at(f"{d}/list_conversations_input/properties/limit/description"), check_list_conversations, ("list_conversations_ignores_limit",)),
        req("CANON-NO-REPLY-SILENT", "MUST", "no_reply posts nothing",
            at(f"{d}/no_reply_input/description"), check_no_reply, ("no_reply_posts_message",)),
        req("CANON-INPUT-INVALID-CODE", "SHOULD", f"An input breaking its schema gets {REJECTION} (every verb)",
            code(REJECTION), lambda ctx: invalid_code_everywhere(ctx, send=CanonClient(ctx).call, error=REJECTION), CODES),
        req("CANON-BINDING-ERRORS", "SHOULD", "Errors carry the profile's code, flagged by the binding, with the profile's HTTP status",
            Source("profile", f"{yaml_src}#/errors"), check_binding_errors, ("errors_as_200",)),
        req("CANON-AUTH-REQUIRED", "SHOULD", "With a bearer token configured, a call without one gets UNAUTHENTICATED (401)",
            Source("profile", f"{yaml_src}#/credentials/full"), lambda ctx: auth.token_required(ctx, operations=verbs_as_callers(ctx), error="UNAUTHENTICATED"),
            ("auth_not_enforced",), ("full",)),
        req("CANON-LIFECYCLE", "MUST", "Conversations, groups, reactions and approvals (with their expiry) move as the model predicts (stateful)",
            at(d), check_lifecycle,
            ("leave_keeps_membership", "react_always_adds", "expired_reported_deny", "approval_never_expires")),
    ]
    for row in reqs:  # both rows of the pair send the same request
        if row.id.startswith("CANON-GROUP-REMOVE-ADMIN-ONLY"):
            row.lasting = REMOVE_FROM_GROUP
    for verb, op in profile.operations.items():
        reqs.append(req(f"CANON-INPUT-VALID-{slug(verb)}", "MUST", f"Generated valid {verb} inputs are accepted",
                        op.source, valid_inputs(verb), VALID_FAULTS.get(verb, ("minimal_input_rejected",))))
        reqs.append(req(f"CANON-INPUT-INVALID-{slug(verb)}", "MUST", f"{verb} inputs breaking one schema rule are refused and change nothing",
                        op.source, invalid_inputs(verb), ("accepts_invalid_input", "validation_after_write")))
        reqs.append(req(f"CANON-RESULT-{slug(verb)}", "MUST", f"{verb} results match {verb}_result",
                        at(f"{d}/{verb}_result"), result_schema(verb), RESULT_FAULTS.get(verb, ("result_status_renamed",))))
    reqs += all_rows(profile, mcp_surface(profile), {"INPUT-SCHEMA": ("mcp_tool_schema_looser",)})
    return reqs
