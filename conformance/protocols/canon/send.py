"""send_to (specs/canon/canon.verbs.v1.json, send_to_input and what it names): a
selfContext and its source, admission by the target's policy, deferred sends and the
contact-request note, session selection, mentions, the byte and size limits of the
descriptions, the attachment allowlist, the content rule, the derived content type and
an unvalidated replyTo."""

from __future__ import annotations

import json
from typing import Any

from conformance.checks.expect import expect_refused, expect_result, refused_as
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import answer, arguments, noop, replaces, returns
from conformance.protocols.canon.answers import items, members_of
from conformance.protocols.canon.client import CanonClient, fresh
from conformance.protocols.canon.reference import CanonReference, VerbError
from conformance.protocols.canon.shared import CODES, DEFS, needs_control
from conformance.transport.binding import Reply


def utf8_text(n_bytes: int) -> str:
    """Text of exactly ``n_bytes`` bytes of UTF-8, mostly two-byte characters (so the char
    count stays well under a byte limit of the same number)."""
    return "é" * (n_bytes // 2) + "x" * (n_bytes % 2)


def _self_context() -> dict[str, str]:
    return {"type": "cross_session", "context": "private note: moved from the owner chat"}


@requirement(id="CANON-SELF-CONTEXT-PRIVATE", level="MUST",
             title="A selfContext is visible only to the sending agent, never to recipients",
             source=at(f"{DEFS}/selfContext/description"))
@needs_control("the messages of the group as its members see them (control messages): a recipient's view, "
               "which no verb of the document gives the agent")
def check_self_context_private(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    note = _self_context()
    result = expect_result(ctx, c.send("hello", targetConversationId=c.role("group"),
                                       sourceConversationId=c.role("owner_chat"), selfContext=note),
                           "send_to with selfContext")
    ctx.expect(result.get("selfContextId"), f"send_to with selfContext must report selfContextId: {result}")
    for viewer in (c.role("member"), c.role("owner")):
        seen = json.dumps(c.messages(c.role("group"), viewer))
        ctx.expect(note["context"] not in seen, f"the selfContext reached recipient {viewer}")
    mine = json.dumps(c.messages(c.role("group"), c.role("agent")))
    ctx.expect(note["context"] in mine, "the sender's own view lacks its selfContext")


@check_self_context_private.fault
def self_context_leaks(ref: CanonReference) -> None:
    """Recipients see the sender's selfContext."""
    @replaces(ref.message_view)
    def view(original: Any, msg: dict[str, Any], viewer: str) -> dict[str, Any]:
        return original(msg, msg["senderId"])


@requirement(id="CANON-SELF-CONTEXT-SOURCE", level="MUST",
             title="A selfContext send needs a sourceConversationId the agent is a member of",
             source=at(f"{DEFS}/send_to_input/properties/sourceConversationId/description"),
             faults=[noop("self_context_without_membership", "check_self_context_source",
                          "A selfContext send is accepted from a sourceConversationId the agent is not in.")],
             code="NOT_A_MEMBER", code_faults=CODES)
def check_self_context_source(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    left = c.group(c.role("open_user"))
    expect_result(ctx, c.call("leave_conversation", {"conversationId": left}), "leave_conversation")
    reply = c.send("hi", targetConversationId=c.role("owner_chat"), sourceConversationId=left,
                   selfContext=_self_context())
    refused_as(ctx, reply, "NOT_A_MEMBER",
               "send_to with a selfContext whose sourceConversationId the agent is not in", strict)


@requirement(id="CANON-SEND-ADMISSION", level="MUST",
             title="send_to a user: open gets messaged, approval-required requested/pending, closed "
                   "unavailable/closed",
             source=at(f"{DEFS}/send_to_input/description"),
             faults=["approval_required_messaged",
                     returns("closed_target_reason_wrong", "closed_result",
                             {"status": "blocked", "reason": "closed"},
                             'A closed target is answered status "blocked" instead of "unavailable".')])
def check_admission(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    opened = expect_result(ctx, c.send("hi", targetUserId=c.role("open_user")), "send_to an open user")
    ctx.expect(opened.get("status") == "messaged" and opened.get("conversationId"),
               f"an open target must be messaged: {opened}")
    asked = expect_result(ctx, c.send("hi", targetUserId=c.role("approval_user")),
                          "send_to an approval-required user")
    ctx.expect(asked.get("status") in ("requested", "pending") and "requestId" in asked,
               f"an approval-required target gets a contact request: {asked}")
    closed = expect_result(ctx, c.send("hi", targetUserId=c.role("closed_user")), "send_to a closed user")
    ctx.expect(closed.get("status") == "unavailable" and closed.get("reason") == "closed",
               f"a closed target must be status unavailable, reason closed: {closed}")


@check_admission.fault
def approval_required_messaged(ref: CanonReference) -> None:
    """An approval-required target is messaged directly (no contact request)."""
    @replaces(ref.send_admission)
    def admission(original: Any, user_id: str) -> str:
        policy = original(user_id)
        return "open" if policy == "approval" else policy


@requirement(id="CANON-SEND-DEFERRED", level="MUST",
             title="A send to an approval-required user carries deferredIntentId and is delivered once the "
                   "request is approved",
             source=at(f"{DEFS}/send_to_input/description"),
             faults=[noop("deferred_send_lost", "deliver_deferred",
                          "Approving a contact request does not deliver the deferred send."),
                     answer("deferred_intent_missing", "defer_send",
                            "A deferred send answers without deferredIntentId.", drop=["deferredIntentId"])])
@needs_control("the approval-required user approving the contact request (control approve_request), and the "
               "messages they then see (control messages)")
def check_deferred_send(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    text = "deferred " + fresh()
    asked = expect_result(ctx, c.send(text, targetUserId=c.role("approval_user"),
                                      sessionSelection={"mode": "new"}), "send_to an approval-required user")
    ctx.expect(asked.get("requestId"), f"no requestId to approve: {asked}")
    ctx.expect(isinstance(asked.get("deferredIntentId"), str) and asked["deferredIntentId"],
               f"a deferred send must carry deferredIntentId: {asked}")
    ctx.control("approve_request", requestId=asked["requestId"])
    convs = items(ctx, c.call("list_conversations", {}), "list_conversations", "conversations")
    mine = [x for x in convs if c.role("approval_user") in members_of(x)]
    delivered = any(text in json.dumps(c.messages(str(x.get("id")), c.role("approval_user"))) for x in mine)
    ctx.expect(delivered, "after the contact request was approved the deferred message never arrived")


@requirement(id="CANON-REQUEST-MESSAGE", level="MUST",
             title="The contact-request note is requestMessage, else the text, truncated to "
                   "{limits[request_message_chars]} chars",
             source=at(f"{DEFS}/send_to_input/properties/requestMessage/description"),
             faults=[arguments("request_message_ignored", "request_note",
                               "The contact-request note is always the text, even when requestMessage is "
                               "given.", drop=["requestMessage"])])
@needs_control("the contact-request note as its recipient sees it (control contact_request), each from a "
               "world without a pending request (control reset: a pending request takes no second note)")
def check_request_message(ctx: CheckContext) -> None:
    """The contact-request note: requestMessage when given, else the text, cut to the limit in chars."""
    c = CanonClient(ctx)
    chars = ctx.limit("request_message_chars")
    user = c.role("approval_user")
    cases = [("a requestMessage", {"text": "the message", "requestMessage": "please add me"},
              "please add me"),
             ("no requestMessage", {"text": "the message itself"}, "the message itself"),
             ("a text at the limit", {"text": "a" * chars}, "a" * chars),
             ("a text one past the limit", {"text": "b" * chars + "c"}, "b" * chars)]
    for what, fields, note in cases:
        with ctx.subcheck(what):
            ctx.control("reset")
            asked = expect_result(ctx, c.call("send_to", {"targetUserId": user, **fields}),
                                  f"send_to an approval-required user with {what}")
            ctx.expect(asked.get("requestId"), f"no contact request: {asked}")
            got = c.controlled("contact_request", requestId=asked["requestId"]).get("note")
            ctx.expect(got == note, f"with {what} the contact-request note must be {note[:40]!r}... "
                       f"({len(note)} chars), got {str(got)[:40]!r}... ({len(str(got))} chars)")


@check_request_message.fault
def request_message_untruncated(ref: CanonReference) -> None:
    """The contact-request note defaulted from a long text is not truncated."""
    @replaces(ref.request_note)
    def note(original: Any, args: dict[str, Any]) -> str:
        return str(args.get("requestMessage", args.get("text", "")))


@requirement(id="CANON-SEND-SESSION-SELECTION", level="MUST",
             title="sessionSelection new / continue_latest / specific pick the conversation they name",
             source=at(f"{DEFS}/sessionSelection"))
def check_session_selection(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    user = c.role("open_user")
    first = expect_result(ctx, c.send("a", targetUserId=user, sessionSelection={"mode": "new"}),
                          "send_to mode new", ["conversationId"])
    second = expect_result(ctx, c.send("b", targetUserId=user, sessionSelection={"mode": "new"}),
                           "send_to mode new again", ["conversationId"])
    ctx.expect(first["conversationId"] != second["conversationId"],
               "sessionSelection mode new reused a conversation")
    latest = expect_result(ctx, c.send("c", targetUserId=user, sessionSelection={"mode": "continue_latest"}),
                           "send_to mode continue_latest")
    ctx.expect(latest.get("conversationId") == second["conversationId"],
               f"continue_latest did not continue the latest conversation: {latest}")
    specific = expect_result(ctx, c.send("d", targetUserId=user, sessionSelection={
        "mode": "specific", "conversationId": first["conversationId"]}), "send_to mode specific")
    ctx.expect(specific.get("conversationId") == first["conversationId"],
               f"mode specific went elsewhere: {specific}")


@check_session_selection.fault
def session_new_reuses(ref: CanonReference) -> None:
    """sessionSelection mode "new" reuses the latest direct conversation."""
    @replaces(ref.pick_session)
    def pick(original: Any, user_id: str, selection: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        if selection.get("mode") == "new":
            return original(user_id, {"mode": "continue_or_create"})
        return original(user_id, selection)


@requirement(id="CANON-SEND-SESSION-DEFAULT", level="MUST",
             title="A user-targeted send without sessionSelection continues the latest conversation or "
                   "creates one",
             source=at(f"{DEFS}/sessionSelection/description"),
             faults=[arguments("session_default_new", "pick_session",
                               "A user-targeted send without sessionSelection always opens a new "
                               "conversation.",
                               edit=lambda selection: selection or {"mode": "new"})])
def check_session_default(ctx: CheckContext) -> None:
    """Without sessionSelection a user-targeted send continues the latest conversation or creates one."""
    c = CanonClient(ctx)
    user = c.role("open_user")
    first = expect_result(ctx, c.send("a", targetUserId=user),
                          "send_to an open user without sessionSelection")
    ctx.expect(first.get("status") == "messaged" and first.get("conversationId"),
               f"continue_or_create must message: {first}")
    again = expect_result(ctx, c.send("b", targetUserId=user), "the same send again")
    ctx.expect(again.get("conversationId") == first["conversationId"],
               f"without sessionSelection the send must continue {first['conversationId']}, "
               f"went to {again.get('conversationId')}")
    newer = expect_result(ctx, c.send("c", targetUserId=user, sessionSelection={"mode": "new"}),
                          "send_to mode new")
    latest = expect_result(ctx, c.send("d", targetUserId=user),
                           "send_to without sessionSelection after a new one")
    ctx.expect(latest.get("conversationId") == newer.get("conversationId"),
               f"without sessionSelection the send must continue the latest conversation: {latest}")


@requirement(id="CANON-MENTIONS-MEMBERS", level="MUST",
             title="Every mention must be a conversation member (refused otherwise)",
             source=at(f"{DEFS}/messageOptions/properties/mentions/description"),
             faults=[noop("mention_non_member_accepted", "check_mentions",
                          "A mention of a non-member is accepted (no INVALID_MENTION).")],
             code="INVALID_MENTION", code_faults=CODES)
def check_mentions(ctx: CheckContext, strict: bool = False) -> None:
    c = CanonClient(ctx)
    expect_result(ctx, c.send("hi", targetConversationId=c.role("group"),
                              messageOptions={"mentions": [c.role("member")]}), "mention of a member")
    reply = c.send("hi", targetConversationId=c.role("group"),
                   messageOptions={"mentions": [c.role("stranger")]})
    refused_as(ctx, reply, "INVALID_MENTION", "mention of a non-member", strict)


@requirement(id="CANON-TEXT-BYTES", level="MUST",
             title="send_to text and forward captions: {limits[text_bytes]} bytes of UTF-8 accepted, one "
                   "more refused",
             source=at(f"{DEFS}/send_to_input/properties/text/description"),
             faults=[returns("text_bytes_unchecked", "text_fits", True,
                             "send_to text and forward captions are measured in chars, so multi-byte "
                             # apart: tests/unit/test_limits.py reads a limit in the two
                             "text over the UTF-8 "
                             "byte limit is accepted.")])
def check_text_bytes(ctx: CheckContext) -> None:
    """send_to text and forward captions: the limit counts bytes of UTF-8 (the schema counts chars)."""
    c = CanonClient(ctx)
    for verb, limit_name in (("send_to", "text_bytes"), ("forward", "caption_bytes")):
        limit = ctx.limit(limit_name)

        def call(text: str, verb: str = verb) -> Reply:
            if verb == "send_to":
                return c.send(text)
            return c.call("forward", {"sourceConversationId": c.role("owner_chat"),
                                      "targetConversationId": c.role("agent_group"),
                                      "messageId": c.made("sent_message"), "text": text})

        with ctx.subcheck(f"{verb} at the limit"):
            expect_result(ctx, call(utf8_text(limit)), f"{verb} with text of exactly {limit} bytes of UTF-8")
        with ctx.subcheck(f"{verb} one byte past"):
            before = c.snapshot()
            expect_refused(ctx, call(utf8_text(limit + 1)),
                           f"{verb} with text of {limit + 1} bytes of UTF-8 (fewer chars)")
            ctx.expect(c.snapshot() == before, "a refused text changed the state", kind="state_changed")


def metadata_of(units: int, char: str = "x") -> dict[str, str]:
    """turnMetadata whose compact JSON is exactly ``units`` UTF-16 code units (``char`` in the BMP)."""
    overhead = len(json.dumps({"note": ""}, separators=(",", ":")))
    return {"note": char * (units - overhead)}


@requirement(id="CANON-METADATA-SIZE", level="MUST",
             title="turnMetadata of {limits[metadata_utf16_units]} UTF-16 code units is accepted (bytes do "
                   "not count), one more refused",
             source=at(f"{DEFS}/turnMetadata/description"),
             faults=[returns("metadata_size_unchecked", "metadata_fits", True,
                             "turnMetadata of any serialized size is accepted.")])
def check_metadata_size(ctx: CheckContext) -> None:
    """turnMetadata: JSON length in UTF-16 code units, not bytes."""
    c = CanonClient(ctx)
    units = ctx.limit("metadata_utf16_units")
    with ctx.subcheck("at the limit"):
        expect_result(ctx, c.send("meta", messageOptions={"metadata": metadata_of(units)}),
                      f"metadata of exactly {units} code units")
    with ctx.subcheck("at the limit in two-byte characters"):
        expect_result(ctx, c.send("meta", messageOptions={"metadata": metadata_of(units, "é")}),
                      f"metadata of {units} code units (more bytes of UTF-8: the limit is not in bytes)")
    with ctx.subcheck("one past the limit"):
        expect_refused(ctx, c.send("meta", messageOptions={"metadata": metadata_of(units + 1)}),
                       f"metadata of {units + 1} code units")


@requirement(id="CANON-ATTACHMENT-ALLOWLIST", level="MUST",
             title="Attachment URLs from the target's upload flow are accepted, any other is refused "
                   "(fail-closed)",
             source=at(f"{DEFS}/mediaAttachment/properties/url/description"),
             faults=[returns("attachment_allowlist_open", "attachment_allowed", True,
                             "An attachment URL from anywhere is accepted (the allowlist is not enforced).")])
def check_attachment_allowlist(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    attachment = {"kind": "image", "url": c.role("media_url")}
    ok = expect_result(ctx, c.send(None, messageOptions={"attachments": [attachment]}),
                       "send_to with an attachment from the target's upload flow")
    ctx.expect(ok.get("status") == "messaged", f"an allowlisted attachment must be messaged: {ok}")
    before = c.snapshot()
    for url in ("https://attacker.example/x.png", "http://127.0.0.1/x.png", "file:///etc/passwd"):
        with ctx.subcheck(url):
            foreign = {"kind": "image", "url": url}
            expect_refused(ctx, c.send("look", messageOptions={"attachments": [foreign]}),
                           f"an attachment at {url} (not from a Canon upload: the allowlist fails closed)")
    ctx.expect(c.snapshot() == before, "a refused attachment changed the state", kind="state_changed")


@requirement(id="CANON-SEND-CONTENT-REQUIRED", level="MUST",
             title="send_to without text and without attachments is refused",
             source=at(f"{DEFS}/send_to_input/properties/text/description"),
             faults=[noop("content_unchecked", "check_content",
                          "send_to without text and without attachments is accepted.")])
def check_content_required(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    before = c.snapshot()
    cases: list[tuple[str, dict[str, Any]]] = [("no text and no attachments", {}),
                                               ("no text and an empty attachments list",
                                                {"messageOptions": {"attachments": []}})]
    for what, options in cases:
        with ctx.subcheck(what):
            expect_refused(ctx, c.call("send_to", {"targetConversationId": c.role("owner_chat"), **options}),
                           f"send_to with {what}")
    ctx.expect(c.snapshot() == before, "a refused send changed the state", kind="state_changed")


@requirement(id="CANON-CONTENT-TYPE-DERIVED", level="MUST",
             title="Without contentType a message's type is derived from its attachments",
             source=at(f"{DEFS}/messageOptions/properties/contentType/description"))
def check_content_type(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    for kind in ("image", "file"):
        with ctx.subcheck(kind):
            attachment = {"kind": kind, "url": c.role("media_url")}
            sent = expect_result(ctx, c.send(None, messageOptions={"attachments": [attachment]}),
                                 f"send_to with a {kind} attachment and no contentType")
            got = c.last_message(sent.get("conversationId") or c.role("owner_chat"))
            ctx.expect(got.get("contentType") == kind, f"contentType must be derived from the {kind} "
                       f"attachment, got {got.get('contentType')!r}")


@check_content_type.fault
def content_type_always_text(ref: CanonReference) -> None:
    """A message with attachments and no contentType is stored as text."""
    @replaces(ref.compose)
    def compose(original: Any, args: dict[str, Any]) -> dict[str, Any]:
        out = original(args)
        if "contentType" not in (args.get("messageOptions") or {}):
            out["contentType"] = "text"
        return out


@requirement(id="CANON-REPLY-TO-UNVALIDATED", level="MUST",
             title="replyTo is not existence-validated: an unknown message id is accepted",
             source=at(f"{DEFS}/messageOptions/properties/replyTo/description"))
def check_reply_to(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    expect_result(ctx, c.send("re", messageOptions={"replyTo": fresh("nomsg")}),
                  "send_to replying to a message id that does not exist")


@check_reply_to.fault
def reply_to_validated(ref: CanonReference) -> None:
    """messageOptions.replyTo naming an unknown message is refused."""
    @replaces(ref.check_prose)
    def prose(original: Any, verb: str, args: dict[str, Any]) -> None:
        reply_to = (args.get("messageOptions") or {}).get("replyTo")
        known = {m["messageId"] for c in ref.w["conversations"].values() for m in c["messages"]}
        if reply_to is not None and reply_to not in known:
            raise VerbError("MESSAGE_NOT_FOUND", f"replyTo {reply_to!r} not found")
        original(verb, args)
