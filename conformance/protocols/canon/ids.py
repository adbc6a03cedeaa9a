"""Ids the caller chooses (specs/canon/canon.verbs.v1.json): a messageId replays its
first result and refuses another payload (409 MESSAGE_ID_EXISTS, the one error code the
document names), its reserved forms are refused, and an inputId or approvalId is
single-use."""

from __future__ import annotations

import copy
import functools
import uuid
from collections.abc import Callable
from typing import Any

from conformance.checks import idempotency
from conformance.checks.expect import expect_refused, expect_result
from conformance.checks.inputs import examples_refused
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, code, requirement
from conformance.kit.faults import noop, refuses, replaces, returns
from conformance.kit.locate import Search
from conformance.protocols.canon.answers import carries
from conformance.protocols.canon.client import CanonClient
from conformance.protocols.canon.reference import CanonReference, VerbError
from conformance.protocols.canon.shared import CODES, DEFS, MINUTE_MS, REJECTION

# the one error code the document names ("different payload -> 409 MESSAGE_ID_EXISTS")
DOCUMENT_CODE = "MESSAGE_ID_EXISTS"
CONFLICT_STATUS = 409
RESERVED_IDS = (".", "..")


# -- messageId ---------------------------------------------------------------------------
def send_with_message_id(ctx: CheckContext) -> idempotency.Send:
    c = CanonClient(ctx)
    return lambda key, body: c.send("once" if body == "a" else "different", messageOptions={"messageId": key})


def owner_chat_messages(ctx: CheckContext) -> Callable[[], int]:
    c = CanonClient(ctx)
    if not ctx.run.control_path:
        ctx.needs_control("counting the messages stored in the owner chat (control messages): no verb of the "
                          "document lists a conversation's messages, and a duplicate under the caller's "
                          "messageId looks the same in list_conversations' lastMessage")
    return lambda: len(c.messages(c.role("owner_chat"), c.role("owner")))


def share_with_message_id(ctx: CheckContext) -> idempotency.Send:
    c = CanonClient(ctx)

    def share(key: str, body: str) -> Any:
        extra = {} if body == "a" else {"text": "changed"}
        return c.call("share_contact", {"conversationId": c.role("owner_chat"),
                                        "contactUserId": c.role("member"), "messageId": key, **extra})

    return share


def message_id_conflicts(ctx: CheckContext) -> dict[str, idempotency.Send]:
    return {"send_to with a messageId": send_with_message_id(ctx),
            "share_contact with a messageId": share_with_message_id(ctx)}


# every verb that takes a messageId (send_to in messageOptions, share_contact at the top)
MESSAGE_ID_VERBS = {"send_to with a messageId": send_with_message_id,
                    "share_contact with a messageId": share_with_message_id}


def each_message_id_verb(ctx: CheckContext, family: Callable[..., None]) -> None:
    """One sub-check per verb that takes a messageId, each a run of the idempotency ``family``."""
    for what, send in MESSAGE_ID_VERBS.items():
        with ctx.subcheck(what):
            family(ctx, send=send(ctx), effects=owner_chat_messages(ctx), what=what)


@requirement(id="CANON-MESSAGE-ID-REPLAY", level="MUST",
             title="The same messageId with an identical payload replays the original result, once "
                   "(send_to and share_contact)",
             source=at(f"{DEFS}/messageId/description"),
             faults=[noop("message_id_replay_duplicates", "replay_result",
                          "An identical messageId replay stores a second message.")])
def check_message_id_replay(ctx: CheckContext) -> None:
    each_message_id_verb(ctx, idempotency.replay_once)


@check_message_id_replay.fault
def share_contact_replay_duplicates(ref: CanonReference) -> None:
    """share_contact ignores its messageId: an identical replay shares the card again."""
    @replaces(ref.message_id_record)
    def record(original: Any, sender: str, message_id: str | None,
               args: dict[str, Any]) -> dict[str, Any] | None:
        return None if "contactUserId" in args else original(sender, message_id, args)

    @replaces(ref.remember_send)
    def remember(original: Any, sender: str, message_id: str | None, args: dict[str, Any],
                 result: dict[str, Any]) -> None:
        if "contactUserId" not in args:
            original(sender, message_id, args, result)


@requirement(id="CANON-MESSAGE-ID-CONCURRENT", level="MUST",
             title="Identical calls with one messageId arriving at once store one message "
                   "(send_to and share_contact)",
             source=at(f"{DEFS}/messageId/description"),
             faults=["message_id_replay_duplicates", "share_contact_replay_duplicates"])
def check_message_id_concurrent(ctx: CheckContext) -> None:
    each_message_id_verb(ctx, idempotency.replay_concurrent)


@requirement(id="CANON-MESSAGE-ID-CONFLICT", level="MUST",
             title="The same messageId with a different payload is refused: 409, carrying MESSAGE_ID_EXISTS "
                   "(send_to and share_contact)",
             source=at(f"{DEFS}/messageId/description"),
             faults=[noop("message_id_conflict_accepted", "message_id_conflict",
                          "A messageId reused with a different payload is accepted (no MESSAGE_ID_EXISTS)."),
                     refuses("message_id_conflict_wrong_code", "message_id_conflict",
                             lambda record: VerbError("VALIDATION_ERROR",
                                                      "messageId already used with a different payload"),
                             "A messageId reused with a different payload is refused as VALIDATION_ERROR "
                             "(400), not 409 MESSAGE_ID_EXISTS.")])
def check_message_id_conflict(ctx: CheckContext) -> None:
    """The same messageId with another payload is refused with what the document names: its
    code MESSAGE_ID_EXISTS wherever the refusal carries it (the document names no error
    member: where the code sits is the binding's, CANON-MESSAGE-ID-CONFLICT-CODE), and HTTP
    409 where the binding's statuses mean something."""
    for what, go in message_id_conflicts(ctx).items():
        with ctx.subcheck(what):
            key = uuid.uuid4().hex
            expect_result(ctx, go(key, "a"), what)
            again = (f"{what} reusing its key with another body "
                     f"(the document: {CONFLICT_STATUS} {DOCUMENT_CODE})")
            reply = go(key, "b")
            expect_refused(ctx, reply, again)
            search = Search(repr(DOCUMENT_CODE), "the refusal (and the JSON of its text blocks)")
            ctx.expect(carries(reply, DOCUMENT_CODE),
                       f"{again}: the refusal carries {DOCUMENT_CODE} nowhere: "
                       f"{search.looked_for(reply.envelope)}",
                       kind="wrong_error_code")
            if reply.statuses:
                ctx.expect(reply.status == CONFLICT_STATUS, f"{again}: came with HTTP {reply.status}",
                           kind="wrong_status")


@requirement(id="CANON-MESSAGE-ID-CONFLICT-CODE", level="SHOULD",
             title="The messageId conflict carries MESSAGE_ID_EXISTS as the binding's error code "
                   "(error.code)",
             source=lambda profile: chosen(f"profiles/{profile.name}.yaml#/bindings: the document names the "
                                           "code, not where a refusal carries it"),
             faults=["message_id_conflict_wrong_code"])
def check_message_id_conflict_code(ctx: CheckContext) -> None:
    idempotency.conflict_refused(ctx, sends=message_id_conflicts(ctx), error=DOCUMENT_CODE)


@check_message_id_conflict_code.fault
def conflict_code_beside_error(ref: CanonReference) -> None:
    """The messageId conflict (409) carries MESSAGE_ID_EXISTS beside the error member, not as its code."""
    @replaces(ref.error_body)
    def body(original: Any, err: VerbError) -> dict[str, Any]:
        out = original(err)
        if err.code == "MESSAGE_ID_EXISTS":
            return {"reason": err.code, "error": {"code": "CONFLICT", "message": err.message}}
        return out


# -- reserved messageIds -------------------------------------------------------------------
def reserved_message_ids(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    """The forms messageId's `not` names: '.', '..' and __x__."""
    c = CanonClient(ctx)
    return {f"messageId {mid!r}": functools.partial(c.send, "reserved", messageOptions={"messageId": mid})
            for mid in (".", "..", "__x__", "__reserved__")}


def world_state(ctx: CheckContext) -> Callable[[], Any]:
    """Reads the digest of the target's world (without resetting it first)."""
    return CanonClient(ctx, reset=False).snapshot


@requirement(id="CANON-MESSAGE-ID-RESERVED", level="MUST",
             title="The reserved messageIds '.', '..' and __x__ are refused and change nothing",
             source=at(f"{DEFS}/messageId/not/description"), code=REJECTION, code_faults=CODES)
def check_reserved_message_ids(ctx: CheckContext, strict: bool = False) -> None:
    """The reserved messageIds are refused (strict: with the profile's code) and change nothing."""
    calls = reserved_message_ids(ctx)  # set-up first: it may reset or seed the target
    examples_refused(ctx, calls=calls, error=REJECTION if strict else None, state=world_state(ctx))


def _is_reserved(message_id: Any) -> bool:
    return isinstance(message_id, str) and (
        message_id in RESERVED_IDS
        or (len(message_id) >= 4 and message_id.startswith("__") and message_id.endswith("__"))
    )


@check_reserved_message_ids.fault
def reserved_ids_accepted(ref: CanonReference) -> None:
    """Reserved messageIds ('.', '..', '__x__') are accepted."""
    @replaces(ref.validate_input)
    def validate(original: Any, verb: str, args: Any) -> None:
        if isinstance(args, dict):
            probe = copy.deepcopy(args)
            options = probe.get("messageOptions")
            holder: dict[str, Any] = options if isinstance(options, dict) else probe
            if _is_reserved(holder.get("messageId")):
                holder["messageId"] = "x"
                original(verb, probe)
                return
        original(verb, args)


# -- single-use inputId and approvalId -----------------------------------------------------
def input_ids(ctx: CheckContext) -> dict[str, Callable[[str], Any]]:
    c = CanonClient(ctx)

    def ask(iid: str) -> Any:
        payload = {"conversationId": c.role("owner_chat"), "inputId": iid, "prompt": "Which?",
                   "timeoutMs": MINUTE_MS}
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


@requirement(id="CANON-INPUT-ID-SINGLE-USE", level="MUST",
             title="An inputId is single-use: reuse is refused (409)",
             source=at(f"{DEFS}/request_input_input/properties/inputId/description"),
             faults=[returns("input_id_reuse_accepted", "check_fresh_id", None,
                             "A reused inputId is accepted (no ID_ALREADY_USED).",
                             when=lambda kind, interaction_id: kind == "input")])
def check_input_id_single_use(ctx: CheckContext) -> None:
    idempotency.single_use(ctx, sends=input_ids(ctx))


@requirement(id="CANON-INPUT-ID-SINGLE-USE-CODE", level="SHOULD",
             title="An inputId reuse gets ID_ALREADY_USED (409)", source=code("ID_ALREADY_USED"),
             faults=CODES)
def check_input_id_single_use_code(ctx: CheckContext) -> None:
    idempotency.single_use(ctx, sends=input_ids(ctx), error="ID_ALREADY_USED")


@requirement(id="CANON-APPROVAL-ID-SINGLE-USE", level="MUST",
             title="An approvalId is durable and single-use: reuse is refused",
             source=at(f"{DEFS}/request_approval_input/properties/approvalId/description"),
             faults=[returns("approval_id_reuse_accepted", "check_fresh_id", None,
                             "A reused approvalId is accepted (no ID_ALREADY_USED).",
                             when=lambda kind, interaction_id: kind == "approval")])
def check_approval_id_single_use(ctx: CheckContext) -> None:
    idempotency.single_use(ctx, sends=approval_ids(ctx))


@requirement(id="CANON-APPROVAL-ID-SINGLE-USE-CODE", level="SHOULD",
             title="An approvalId reuse gets ID_ALREADY_USED (409)", source=code("ID_ALREADY_USED"),
             faults=CODES)
def check_approval_id_single_use_code(ctx: CheckContext) -> None:
    idempotency.single_use(ctx, sends=approval_ids(ctx), error="ID_ALREADY_USED")
