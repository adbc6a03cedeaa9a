"""Every verb of the document (each ``<verb>_input`` with its ``<verb>_result``), one
requirement of each family per verb: generated valid inputs are accepted, inputs that
break one schema rule are refused and change nothing, and results match the verb's
result schema."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.check import CheckContext
from conformance.checks.inputs import (
    examples_refused,
    invalid_inputs_rejected,
    result_matches,
    valid_inputs_accepted,
)
from conformance.declare import Each, at, fault, requirement, slug
from conformance.documents.schemas import validator_for
from conformance.faults import answer, noop, replaces
from conformance.generation.invalid import InvalidInstance
from conformance.model import Operation, Profile
from conformance.protocols.canon.client import CanonClient
from conformance.protocols.canon.reference import CanonReference, VerbError
from conformance.protocols.canon.shared import DEFS, HUMAN_VERBS, MINUTE_MS, REJECTION

# request_approval properties whose out-of-enum strings the spec lets a server drop or
# store instead of refusing (riskLevel: "silently dropped, not rejected"; risk, category: "Advisory")
ADVISORY = ("/riskLevel", "/risk", "/category")


@dataclass(frozen=True)
class Verb:
    """A verb as a member of a family: ``{verb.name}`` in a title, ``{verb.slug}`` in an id."""

    name: str

    @property
    def slug(self) -> str:
        return slug(self.name)


def each_verb(faults: Mapping[str, Sequence[str]], result: bool = False) -> Callable[[Profile], list[Each]]:
    """``each=``: one member per verb, citing its input schema (its result schema where
    ``result``), with the faults ``faults`` gives it instead of the declaration's."""
    def members(profile: Profile) -> list[Each]:
        return [Each(args={"verb": Verb(name)}, source=at(f"{DEFS}/{name}_result") if result else op.source,
                     faults=faults.get(name)) for name, op in profile.operations.items()]
    return members


# ----------------------------------------------------------------------------------
# inputs in the target's world
# ----------------------------------------------------------------------------------
def clip_utf8(text: str, limit: int) -> str:
    return text.encode()[:limit].decode(errors="ignore")


def under(keep: str, *parts: str | int) -> bool:
    """Whether ``keep`` (the pointer an invalid input breaks) is the node at ``parts`` or
    below it: a preparation leaves that part as it was drawn."""
    at = "".join(f"/{p}" for p in parts)
    return keep == at or keep.startswith(at + "/")


def follow_descriptions(ctx: CheckContext, c: CanonClient, verb: str, value: Any, keep: str = "\0") -> Any:
    """A copy of a generated input made to follow the rules the descriptions add: text
    required unless attachments carry the content, text and captions within their byte
    limits (UTF-8), turnMetadata within its size, attachment URLs from the target's upload
    flow. Any JSON value is taken (an input breaking the schema has members of any type);
    what is not what a rule reads is left as it is, and so is the part under ``keep``."""
    if not isinstance(value, dict):
        return value
    value = copy.deepcopy(value)
    limits = ctx.profile.limits
    if verb in ("send_to", "forward") and isinstance(value.get("text"), str) and not under(keep, "text"):
        limit = limits["text_bytes" if verb == "send_to" else "caption_bytes"]
        value["text"] = clip_utf8(value["text"], int(limit.value))
    opts = value.get("messageOptions")
    options = opts if isinstance(opts, dict) else {}
    attachments = options.get("attachments")
    for index, att in enumerate(attachments if isinstance(attachments, list) else []):
        if (isinstance(att, dict) and isinstance(att.get("url"), str) and att["url"]
                and not under(keep, "messageOptions", "attachments", index)):
            att["url"] = c.role("media_url")
    meta = options.get("metadata")
    units = int(limits["metadata_utf16_units"].value)
    if (isinstance(meta, dict) and not under(keep, "messageOptions", "metadata")
            and len(json.dumps(meta, separators=(",", ":"), ensure_ascii=False).encode("utf-16-le")) // 2
            > units):
        options["metadata"] = {}
    carried = isinstance(opts, dict) and isinstance(opts.get("attachments"), list) and opts["attachments"]
    if verb == "send_to" and "text" not in value and not carried and not under(keep, "text"):
        value["text"] = "conformance check"
    if (verb == "send_to" and "selfContext" in value and "sourceConversationId" not in value
            and not under(keep, "sourceConversationId")):
        value["sourceConversationId"] = c.role("owner_chat")  # a selfContext needs a source the agent is in
    return value


# Where a generated input names an object, the seeded world's: (property, role, verbs) —
# so that an input is judged by its own merits, not refused for naming nothing. Where a
# verb changes what it names for good (a member removed, a conversation left, a reaction
# on someone's message), it names what the check made itself (CanonClient.made): the
# operator's configured world is never what such a verb acts on.
MADE = ("made_group", "sent_message")
WORLD_IDS: dict[str, dict[str, str]] = {
    "send_to": {"targetConversationId": "owner_chat", "targetUserId": "open_user",
                "sourceConversationId": "owner_chat"},
    "request_input": {"conversationId": "owner_chat", "responseUserId": "owner"},
    "request_approval": {"conversationId": "owner_chat", "responseUserId": "owner"},
    "check_approval": {"conversationId": "owner_chat"},
    "send_card": {"conversationId": "owner_chat"},
    "request_card": {"conversationId": "owner_chat", "responseUserId": "owner"},
    "share_contact": {"conversationId": "owner_chat", "contactUserId": "member"},
    "react": {"conversationId": "owner_chat", "messageId": "sent_message"},
    "forward": {"sourceConversationId": "owner_chat", "targetConversationId": "agent_group",
                "messageId": "sent_message"},
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
        if prop in out and not under(keep, prop):
            named = c.made(role) if role in MADE else c.role(role)
            out[prop] = [named] if prop == "memberIds" else named
    card = out.get("card")
    if (verb == "request_card" and isinstance(card, dict) and isinstance(card.get("blocks"), list)
            and not under(keep, "card")):
        actions = {"type": "actions", "actions": [{"id": "ok", "label": "OK"}]}
        out["card"] = {**card, "blocks": [*card["blocks"][:-1], actions]}
    if verb in HUMAN_VERBS and not c.humans:
        return c.unattended(verb, out, keep)
    if verb in ("request_input", "request_card"):
        c.script(verb, action="cancel")
    elif verb == "request_approval":
        c.script(verb, action="deny")
    return out


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
            return {"conversationId": r("owner_chat"), "toolName": "deploy", "toolSummary": "Deploy it",
                    "mode": "detached"}
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
        return {"sourceConversationId": r("owner_chat"), "targetConversationId": r("agent_group"),
                "messageId": c.made("sent_message")}
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


# ----------------------------------------------------------------------------------
# valid inputs
# ----------------------------------------------------------------------------------
# Verbs whose inputs have no required property of their own (send_to requires one target
# through its oneOf) need faults of their own.
VALID_FAULTS = {"send_to": ("contact_id_target_rejected",)}


@requirement(id="CANON-INPUT-VALID-{verb.slug}", level="MUST",
             title="Generated valid {verb.name} inputs are accepted",
             source=at(DEFS), each=each_verb(VALID_FAULTS))
def check_valid_inputs(ctx: CheckContext, verb: Verb) -> None:
    """Generated schema-valid inputs (following the descriptions' rules) are never refused
    as invalid; a refusal for another reason (an unknown id) is flagged by the binding.
    Whether its code is in the catalogue is CANON-BINDING-ERRORS' (the codes are the profile's)."""
    c = CanonClient(ctx)
    def prepare(value: Any) -> Any:
        return follow_descriptions(ctx, c, verb.name, in_world(c, verb.name, value))

    valid_inputs_accepted(ctx, ctx.profile.operations[verb.name], lambda v: c.call(verb.name, v),
                          (REJECTION,), prepare, catalogued=False)


@check_valid_inputs.fault
def minimal_input_rejected(ref: CanonReference) -> None:
    """An input holding only its required properties gets VALIDATION_ERROR."""
    @replaces(ref, "validate_input")
    def validate(original: Any, verb: str, args: Any) -> None:
        required = set(ref.input_schemas[verb].get("required", []))
        if isinstance(args, dict) and set(args) <= required:
            raise VerbError("VALIDATION_ERROR", "(root): more properties are needed")
        original(verb, args)


@fault
def contact_id_target_rejected(ref: CanonReference) -> None:
    """send_to naming its target by canonContactId gets VALIDATION_ERROR."""
    @replaces(ref, "validate_input")
    def validate(original: Any, verb: str, args: Any) -> None:
        if verb == "send_to" and isinstance(args, dict) and "canonContactId" in args:
            raise VerbError("VALIDATION_ERROR", "(root): canonContactId is not supported")
        original(verb, args)


# ----------------------------------------------------------------------------------
# invalid inputs
# ----------------------------------------------------------------------------------
def tolerated(op: Operation, bad: InvalidInstance) -> bool:
    """A break the spec itself lets a server accept: an advisory request_approval string."""
    v = bad.violation
    return (op.name == "request_approval" and v.keyword == "enum" and v.pointer in ADVISORY
            and isinstance(bad.instance, dict) and isinstance(bad.instance.get(v.pointer[1:]), str))


@requirement(id="CANON-INPUT-INVALID-{verb.slug}", level="MUST",
             title="{verb.name} inputs breaking one schema rule are refused and change nothing",
             source=at(DEFS), each=each_verb({}),
             faults=[noop("accepts_invalid_input", "validate_input",
                          "Inputs are never validated against <verb>_input.")])
def check_invalid_inputs(ctx: CheckContext, verb: Verb) -> None:
    """Inputs breaking one schema keyword are refused (any refusal: the spec names no code)
    and change nothing; so is an input that would succeed but for one unknown property."""
    c = CanonClient(ctx)
    op = ctx.profile.operations[verb.name]

    def in_target_world(bad: InvalidInstance) -> Any:
        schema = validator_for(op.params_schema)
        if schema.is_valid(bad.instance):
            # the same request without the break (the engine's control): served as it is meant
            return follow_descriptions(ctx, c, verb.name, in_world(c, verb.name, bad.instance))
        keep = bad.violation.pointer
        named = in_world(c, verb.name, bad.instance, keep=keep)
        instance = follow_descriptions(ctx, c, verb.name, named, keep)
        # naming the world's objects, or following the descriptions, may have mended it: then send it as
        # generated
        return bad.instance if schema.is_valid(instance) else instance

    with ctx.subcheck("an input that would succeed, with one unknown property"):
        payload = {**success_payload(c, verb.name), "x_conformance_unknown": True}
        examples_refused(ctx, calls={f"{verb.name} with an unknown property (inputs are strict)":
                                     lambda: c.call(verb.name, payload)}, state=c.snapshot)
    invalid_inputs_rejected(ctx, op, lambda v: c.call(verb.name, v), None, state=c.snapshot,
                            prepare=in_target_world,
                            tolerated=lambda bad, reply: reply.ok and tolerated(op, bad))


@check_invalid_inputs.fault
def validation_after_write(ref: CanonReference) -> None:
    """World state (the id counter) changes before the input is validated."""
    @replaces(ref, "validate_input")
    def validate(original: Any, verb: str, args: Any) -> None:
        ref.w["seq"] += 1
        original(verb, args)


# ----------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------
# Verbs whose results carry no status need faults of their own. check_approval reads an
# approval that set-up opens: a fault renaming every status blocks the set-up
# (CANON-APPROVAL-DETACHED reports it), so its own fault renames only its result.
RESULT_FAULTS = {"list_contacts": ("contact_items_incomplete",),
                 "list_conversations": ("conversation_items_incomplete",),
                 "check_approval": ("check_approval_status_renamed",)}


@requirement(id="CANON-RESULT-{verb.slug}", level="MUST",
             title="{verb.name} results match {verb.name}_result",
             source=at(DEFS), each=each_verb(RESULT_FAULTS, result=True),
             faults=[answer("result_status_renamed", "finish_result",
                            'Every success result says status "ok".',
                            edit=lambda result, *_: {**result, "status": "ok"} if "status" in result
                            else result)])
def check_result(ctx: CheckContext, verb: Verb) -> None:
    c = CanonClient(ctx)
    result_matches(ctx, ctx.profile.operations[verb.name], success_call(c, verb.name),
                   f"{verb.name} driven to success")


fault(answer("check_approval_status_renamed", "finish_result",
             'check_approval results say status "ok" (the approval it reads is set up as usual).',
             edit=lambda result, verb, *_: {**result, "status": "ok"}
             if verb == "check_approval" and "status" in result else result))
fault(answer("contact_items_incomplete", "contact_list",
             "list_contacts items lack displayNameOverride (a required item property).",
             edit=lambda contacts: [{k: v for k, v in c.items() if k != "displayNameOverride"}
                                    for c in contacts]))
fault(answer("conversation_items_incomplete", "conversation_view",
             "list_conversations items lack isAgentChat (a required item property).", drop=["isAgentChat"]))
