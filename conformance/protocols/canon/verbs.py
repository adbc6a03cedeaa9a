"""Every verb of the document (each ``<verb>_input`` with its ``<verb>_result``), one
requirement of each family per verb: generated valid inputs are accepted, inputs that
break one schema rule are refused and change nothing, and results match the verb's
result schema."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.checks.expect import refused_as
from conformance.checks.inputs import (
    examples_refused,
    invalid_inputs_rejected,
    result_matches,
    valid_inputs_accepted,
)
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance, small_example
from conformance.kit.check import CheckContext
from conformance.kit.declare import Each, at, code, fault, requirement, slug
from conformance.kit.faults import answer, noop, recodes, replaces
from conformance.model import Operation, Profile
from conformance.protocols.canon.client import CanonClient, fresh
from conformance.protocols.canon.reference import CanonReference, VerbError
from conformance.protocols.canon.shared import CODES, DEFS, HUMAN_VERBS, MINUTE_MS, REJECTION

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


def each_verb(faults: Mapping[str, Sequence[str]], source: Any = None) -> Callable[[Profile], list[Each]]:
    """``each=``: one member per verb, citing its input schema (or ``source``), with the
    faults ``faults`` gives it instead of the declaration's."""
    def members(profile: Profile) -> list[Each]:
        return [Each(args={"verb": Verb(name)}, source=source or op.source, faults=faults.get(name))
                for name, op in profile.operations.items()]
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
    """A copy of a generated input made what a client may send by the rules the descriptions
    add: text required unless attachments carry the content, text and captions within their
    byte limits (UTF-8), turnMetadata within its size and without the server's ``type``,
    attachment URLs from the target's upload flow, mentions of a member, no card key that
    could bear a secret, fresh ids where the client owns them (``owned_ids``). Any JSON value
    is taken (an input breaking the schema has members of any type); what is not what a rule
    reads is left as it is, and so is the part under ``keep``."""
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
    if isinstance(meta, dict) and "type" in meta and not under(keep, "messageOptions", "metadata", "type"):
        del meta["type"]  # "receipt metadata.type values are server-owned and rejected"
    mentions = options.get("mentions")
    if isinstance(mentions, list) and not under(keep, "messageOptions", "mentions"):
        member = mentioned(c, value)  # "every id must be a conversation member"
        options["mentions"] = [member if isinstance(m, str) else m for m in mentions]
    card = value.get("card")
    if isinstance(card, dict) and not under(keep, "card"):  # "no secret-bearing top-level keys"
        value["card"] = {k: v for k, v in card.items() if not SECRET_WORDS.search(k)}
    carried = isinstance(opts, dict) and isinstance(opts.get("attachments"), list) and opts["attachments"]
    if verb == "send_to" and "text" not in value and not carried and not under(keep, "text"):
        value["text"] = "conformance check"
    if (verb == "send_to" and "selfContext" in value and "sourceConversationId" not in value
            and not under(keep, "sourceConversationId")):
        value["sourceConversationId"] = c.role("owner_chat")  # a selfContext needs a source the agent is in
    return owned_ids(ctx.profile.operations[verb].params_schema, value, keep, ())


# what may name a secret in a card's top-level key (the document: "no secret-bearing top-level
# keys", naming none): the kit's valid cards carry no key that could be read as one
SECRET_WORDS = re.compile(r"secret|token|passw|api_?key|private|credential|auth|session|cookie", re.I)
# how the document marks an id the client owns: a messageId is a "Client idempotency key", an
# inputId or approvalId a "Durable single-use id" (reuse -> 409)
OWNED = re.compile(r"idempotency key|single-use id", re.I)


def owned_ids(schema: Any, value: Any, keep: str, path: tuple[Any, ...]) -> Any:
    """``value`` with each id the document says the client owns (an idempotency key, a
    single-use id) made fresh: a generated one may be what an earlier request already used
    (hypothesis draws "0" often), which the document lets a server refuse or replay. Still
    valid by the id's schema; the part under ``keep`` stays as drawn."""
    if not isinstance(schema, dict):
        return value
    description = schema.get("description")
    if isinstance(value, str) and isinstance(description, str) and OWNED.search(description) \
            and not under(keep, *path):
        return owned_id(schema, value)
    props = schema.get("properties")
    if isinstance(value, dict) and isinstance(props, dict):
        return {k: owned_ids(props[k], v, keep, (*path, k)) if k in props else v for k, v in value.items()}
    return value


def owned_id(schema: dict[str, Any], drawn: str) -> str:
    """A fresh id of the client's own that its schema accepts: the drawn one with a unique
    tail (its shape kept), else the tail alone."""
    judge = validator_for(schema)
    tail = fresh("k")
    most = schema.get("maxLength")
    for candidate in (f"{drawn[: max(0, (most or 160) - len(tail) - 1)]}-{tail}", tail):
        if judge.is_valid(candidate):
            return candidate
    return drawn


def mentioned(c: CanonClient, value: dict[str, Any]) -> str:
    """A member of the conversation a send_to targets, as the seeded world knows it: the owner
    in the owner chat, the user a user-targeted send opens a chat with, else the agent."""
    target = value.get("targetConversationId")
    if target is not None and target == c.role("owner_chat"):
        return c.role("owner")
    if isinstance(value.get("targetUserId"), str):
        return str(value["targetUserId"])
    return c.role("agent")


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


# A SHOULD of the profile: a valid input may be refused for reasons of the target's world the
# document gives (a mention of a non-member, a deadline past its ceiling, an unknown id, a
# card key that bears a secret), and the document names no code that tells "invalid" apart
# (its one code is MESSAGE_ID_EXISTS; its 400s cover reserved ids and mentions alike): only the
# profile's VALIDATION_ERROR does.
@requirement(id="CANON-INPUT-VALID-{verb.slug}", level="SHOULD",
             title=f"Generated valid {{verb.name}} inputs are never refused with {REJECTION}",
             source=code(REJECTION), each=each_verb(VALID_FAULTS, source=code(REJECTION)))
def check_valid_inputs(ctx: CheckContext, verb: Verb) -> None:
    """Generated schema-valid inputs (following the descriptions' rules, naming the world's
    objects) are never refused as invalid (the profile's code); a refusal for another
    reason (an unknown id) is flagged by the binding. Whether its code is in the catalogue
    is CANON-BINDING-ERRORS'."""
    c = CanonClient(ctx)
    def prepare(value: Any) -> Any:
        return follow_descriptions(ctx, c, verb.name, in_world(c, verb.name, value))

    valid_inputs_accepted(ctx, ctx.profile.operations[verb.name], lambda v: c.call(verb.name, v),
                          (REJECTION,), prepare)


@check_valid_inputs.fault
def minimal_input_rejected(ref: CanonReference) -> None:
    """An input holding only its required properties gets VALIDATION_ERROR."""
    @replaces(ref.validate_input)
    def validate(original: Any, verb: str, args: Any) -> None:
        required = set(ref.input_schemas[verb].get("required", []))
        if isinstance(args, dict) and set(args) <= required:
            raise VerbError("VALIDATION_ERROR", "(root): more properties are needed")
        original(verb, args)


@fault
def contact_id_target_rejected(ref: CanonReference) -> None:
    """send_to naming its target by canonContactId gets VALIDATION_ERROR."""
    @replaces(ref.validate_input)
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


# send_to's input is a oneOf (one target): a tool schema without it, enforced over MCP, takes
# inputs with no target or two (the http binding has no tool schema: not_carried there)
INVALID_FAULTS = {"send_to": ("accepts_invalid_input", "mcp_tool_one_of_flattened")}


@requirement(id="CANON-INPUT-INVALID-{verb.slug}", level="MUST",
             title="{verb.name} inputs breaking one schema rule are refused and change nothing",
             source=at(DEFS), each=each_verb(INVALID_FAULTS),
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
    @replaces(ref.validate_input)
    def validate(original: Any, verb: str, args: Any) -> None:
        ref.w["seq"] += 1
        original(verb, args)


# ----------------------------------------------------------------------------------
# a conversation that does not exist
# ----------------------------------------------------------------------------------
# Conversations a verb names without acting in them: check_approval answers an approval checked
# from another conversation "unknown" (CANON-APPROVAL-*), no_reply posts nothing, and send_to's
# sourceConversationId is a selfContext's provenance, read only with one (CANON-SELF-CONTEXT-SOURCE).
NOT_ACTED_IN = {("check_approval", "conversationId"), ("no_reply", "conversationId"),
                ("send_to", "sourceConversationId")}


def conversation_members(profile: Profile) -> list[tuple[str, str]]:
    """(verb, property) for each top-level input property naming a conversation
    (``conversationId``, ``targetConversationId``, ...) that the verb acts in."""
    out = []
    for verb, op in profile.operations.items():
        props = op.params_schema.get("properties") or {}
        out += [(verb, name) for name in props
                if name.lower().endswith("conversationid") and (verb, name) not in NOT_ACTED_IN]
    return out


fault(recodes("unknown_conversation_not_a_member", "conversation",
              lambda err: VerbError("NOT_A_MEMBER", "the agent is not a member"),
              "A conversation that does not exist is refused as NOT_A_MEMBER (403), not "
              "CONVERSATION_NOT_FOUND.",
              catch=VerbError, when=lambda err: err.code == "CONVERSATION_NOT_FOUND"))


@requirement(id="CANON-CONVERSATION-UNKNOWN", level="MUST",
             title="A verb acting in a conversation that does not exist is refused and changes nothing",
             source=at(DEFS), code="CONVERSATION_NOT_FOUND",
             code_faults=(*CODES, "unknown_conversation_not_a_member"))
def check_unknown_conversation(ctx: CheckContext, strict: bool = False) -> None:
    """Each verb's realistic input with one conversation it names replaced by an id nobody
    made: the message, card, reaction or membership change it asks for has nowhere to go."""
    c = CanonClient(ctx)
    for verb, prop in conversation_members(ctx.profile):
        with ctx.subcheck(f"{verb} {prop}"):
            payload = {**success_payload(c, verb), prop: fresh("conv")}
            before = c.snapshot()
            refused_as(ctx, c.call(verb, payload), "CONVERSATION_NOT_FOUND",
                       f"{verb} naming {prop} {payload[prop]}, which does not exist", strict)
            ctx.expect(c.snapshot() == before,
                       f"{verb} naming a conversation that does not exist changed the target's state",
                       kind="state_changed")


@check_unknown_conversation.fault
def unknown_conversation_made(ref: CanonReference) -> None:
    """A conversation id nobody made is taken as a new direct conversation of the agent's."""
    @replaces(ref.conversation)
    def conversation(original: Any, conv_id: str) -> dict[str, Any]:
        if conv_id not in ref.w["conversations"]:
            return ref.add_conversation("direct", [ref.agent], owner=None, conv_id=conv_id)
        return original(conv_id)


# ----------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------
# Verbs whose results carry no status need faults of their own. check_approval reads an
# approval that set-up opens: a fault renaming every status blocks the set-up
# (CANON-APPROVAL-DETACHED reports it), so its own fault renames only its result.
RESULT_FAULTS = {"list_contacts": ("contact_items_incomplete",),
                 "list_conversations": ("conversation_items_incomplete",),
                 "check_approval": ("check_approval_status_renamed",)}


def other_branch(schema: dict[str, Any], result: Any) -> Any:
    """``result`` turned into an instance of the next branch of ``schema``'s oneOf that the
    whole schema accepts (the result's own values kept where that branch takes them): a
    result valid under the verb's result schema, answering another request."""
    branches = schema.get("oneOf") or []
    whole = validator_for(schema)
    own = next((i for i, b in enumerate(branches) if validator_for(b).is_valid(result)), None)
    if own is None or not isinstance(result, dict):
        return result
    for step in range(1, len(branches)):
        branch = branches[(own + step) % len(branches)]
        other = small_example(branch)
        judge = validator_for(branch)
        kept = {k: v for k, v in result.items() if k in other and judge.is_valid({**other, k: v})}
        candidate = {**other, **kept}
        if whole.is_valid(candidate) and not validator_for(branches[own]).is_valid(candidate):
            return candidate
    return result


def other_branch_fault(verb: str, schema: dict[str, Any]) -> Any:
    """The fault of ``verb``'s result row: its results answer another branch of the union."""
    return answer(f"{verb}_result_other_branch", "finish_result",
                  f"{verb} results answer the next branch of {verb}_result's oneOf (valid under the schema, "
                  "but not the branch the request selected).",
                  edit=lambda result, name, *_: other_branch(schema, result) if name == verb else result)


def result_members(profile: Profile) -> list[Each]:
    """``each=`` of the result rows: one member per verb citing its result schema, with its
    faults (those of ``RESULT_FAULTS``, else the declaration's), and where the result is a
    union, the fault answering another branch of it."""
    out = []
    for name, op in profile.operations.items():
        faults: list[Any] = list(RESULT_FAULTS.get(name, ("result_status_renamed",)))
        if isinstance((op.result_schema or {}).get("oneOf"), list):
            faults.append(other_branch_fault(name, op.result_schema or {}))
        out.append(Each(args={"verb": Verb(name)}, source=at(f"{DEFS}/{name}_result"), faults=faults))
    return out


def selected_statuses(c: CanonClient, verb: str) -> tuple[tuple[str, ...], str] | None:
    """The statuses of the branch of ``verb``'s result that ``success_payload`` selects,
    with why (None where the request selects none: a human the kit does not script may
    answer any way). By the document: a send to a conversation the agent is in is sent
    (send_to_input: known-conversation sends -> POST /messages/send); mode detached
    "returns pending immediately" (request_approval_input); a target that needs no policy
    approval is added (add_member_result: only "targets needing policy approval yield an
    exact pending group invite"); a detached approval nobody decided is pending; a scripted
    human's answer is the answer (control)."""
    if verb == "send_to":
        return ("messaged",), "a send to a conversation the agent is in (send_to_input)"
    if verb == "add_member":
        return ("added",), "adding a user whose admission policy is open (add_member_result)"
    if verb == "request_approval":
        if c.humans:
            return ("allow",), "a blocking approval the scripted human allows"
        return ("pending",), "mode detached (request_approval_input: returns pending immediately)"
    if not c.humans:
        return None
    scripted = {"request_input": (("submitted",), "a question the scripted human answers"),
                "request_card": (("submitted",), "a card the scripted human submits"),
                "check_approval": (("pending",), "a detached approval nobody has decided")}
    return scripted.get(verb)


def status_of(branch: Any) -> list[Any]:
    """The statuses a branch of a result schema names (its status const or enum)."""
    status = (branch.get("properties") or {}).get("status") if isinstance(branch, dict) else None
    if not isinstance(status, dict):
        return []
    return [status["const"]] if "const" in status else list(status.get("enum") or [])


@requirement(id="CANON-RESULT-{verb.slug}", level="MUST",
             title="{verb.name} results match {verb.name}_result (the branch the request selects)",
             source=at(DEFS), each=result_members,
             faults=[answer("result_status_renamed", "finish_result",
                            'Every success result says status "ok".',
                            edit=lambda result, *_: {**result, "status": "ok"} if "status" in result
                            else result)])
def check_result(ctx: CheckContext, verb: Verb) -> None:
    """A result drove to success matches <verb>_result; where that is a union, the branch
    the request selects by the document (``selected_statuses``)."""
    c = CanonClient(ctx)
    op = ctx.profile.operations[verb.name]
    reply = success_call(c, verb.name)
    union = isinstance((op.result_schema or {}).get("oneOf"), list)
    chosen = selected_statuses(c, verb.name) if union else None
    if chosen is None:
        result_matches(ctx, op, reply, f"{verb.name} driven to success")
        return
    statuses, why = chosen
    result_matches(ctx, op, reply, f"{verb.name} driven to success",
                   selected=lambda branch: bool(set(status_of(branch)) & set(statuses)), selection=why)


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
