"""Who a request for a human reaches and what comes back (request_input, request_card):
secret kinds go to the owner only, kind defaults to clarify, the active conversation by
default, a responder must be a human member, and the outcomes a human's answer gives."""

from __future__ import annotations

import json
from typing import Any

from conformance.checks.expect import expect_result, refused_as
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import answer, replaces, returns
from conformance.protocols.canon.client import CanonClient, fresh
from conformance.protocols.canon.reference import CanonReference
from conformance.protocols.canon.shared import CODES, DEFS, MINUTE_MS, needs_control


@requirement(id="CANON-SECRET-OWNER-ONLY", level="MUST",
             title="sudo/secret kinds, sensitive and isSecret questions route to the owner only",
             source=at(f"{DEFS}/request_input_input/description"),
             faults=[returns("secret_input_routed_to_member", "input_forces_owner", False,
                             "Secret/sudo/sensitive inputs honour responseUserId instead of going to the "
                             "owner.")])
@needs_control("how the target routed each input (control interaction: its responder), which only the human "
               "it reached sees")
def check_secret_owner_only(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    owner, member = c.role("owner"), c.role("member")
    variants: list[dict[str, Any]] = [{"kind": "secret", "secretName": "API"}, {"kind": "sudo"},
                                      {"sensitive": True},
                                      {"questions": [{"id": "q", "question": "Password?", "isSecret": True}]}]
    for extra in variants:
        iid = fresh("in")
        c.script("request_input", action="cancel")
        c.call("request_input", {"conversationId": c.role("group"), "inputId": iid, "prompt": "?",
                                 "responseUserId": member, "timeoutMs": MINUTE_MS, **extra})
        routed = c.interaction(iid).get("responseUserId")
        ctx.expect(routed == owner,
                   f"request_input {extra} was routed to {routed!r}; secret kinds go to the owner only")


@requirement(id="CANON-INPUT-KIND-DEFAULT", level="MUST",
             title="request_input without kind routes as kind clarify",
             source=at(f"{DEFS}/request_input_input/properties/kind/default"))
@needs_control("how the target routed each input (control interaction: its responder), which only the human "
               "it reached sees")
def check_input_kind_default(ctx: CheckContext) -> None:
    """No kind routes like kind clarify (not like the owner-only kinds)."""
    c = CanonClient(ctx)
    routed = {}
    for label, extra in (("kind clarify", {"kind": "clarify"}), ("no kind", {})):
        iid = fresh("kind")
        c.script("request_input", action="cancel")
        expect_result(ctx, c.call("request_input", {"conversationId": c.role("group"), "inputId": iid,
                                                    "prompt": "?", "responseUserId": c.role("member"),
                                                    "timeoutMs": MINUTE_MS, **extra}),
                      f"request_input with {label}")
        routed[label] = c.interaction(iid).get("responseUserId")
    ctx.expect(routed["no kind"] == routed["kind clarify"],
               f"kind defaults to clarify: without kind the input went to {routed['no kind']!r}, "
               f"with clarify to {routed['kind clarify']!r}")


@check_input_kind_default.fault
def kind_default_secret(ref: CanonReference) -> None:
    """A request_input without kind is owner-only, as if kind defaulted to secret rather than clarify."""
    @replaces(ref.input_forces_owner)
    def forces(original: Any, args: dict[str, Any]) -> bool:
        return "kind" not in args or original(args)


@requirement(id="CANON-DEFAULT-CONVERSATION", level="MUST",
             title="request_input without conversationId goes to the active conversation",
             source=at(f"{DEFS}/request_input_input/properties/conversationId/description"))
@needs_control("where the target posted the input (control interaction: its conversation), which no verb of "
               "the document shows")
def check_default_conversation(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    iid = fresh("active")
    c.script("request_input", action="cancel")
    expect_result(ctx, c.call("request_input", {"inputId": iid, "prompt": "?", "timeoutMs": MINUTE_MS}),
                  "request_input without conversationId")
    got = c.interaction(iid).get("conversationId")
    ctx.expect(got == c.role("active_chat"),
               f"request_input without conversationId must go to the active conversation, went to {got!r}")


@check_default_conversation.fault
def active_conversation_ignored(ref: CanonReference) -> None:
    """A verb without conversationId goes to the agent's own group, not the active conversation."""
    @replaces(ref.member_conversation)
    def pick(original: Any, conv_id: str | None) -> dict[str, Any]:
        return original(conv_id or ref.role("agent_group"))


@requirement(id="CANON-RESPONDER-HUMAN-MEMBER", level="MUST",
             title="request_input / request_card never go to a responseUserId that is not a human member "
                   "(refused or ignored)",
             source=at(f"{DEFS}/request_input_input/properties/responseUserId/description"),
             code="NOT_A_MEMBER", code_faults=CODES)
@needs_control("how the target routed each request (control interaction: its responder), which only the "
               "human it reached sees")
def check_responder_member(ctx: CheckContext, strict: bool = False) -> None:
    """responseUserId must be a human member: a stranger or the agent itself is refused, or
    (a trust-critical binding) ignored: the request never goes to them."""
    c = CanonClient(ctx)
    for verb in ("request_input", "request_card"):
        for label, who in (("a non-member", c.role("stranger")),
                           ("the agent (not a human)", c.role("agent"))):
            with ctx.subcheck(f"{verb} to {label}"):
                ident = fresh("resp")
                c.script(verb, action="cancel")
                payload: dict[str, Any] = {"conversationId": c.role("group"), "responseUserId": who,
                                           "timeoutMs": MINUTE_MS}
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
                ctx.expect(routed != who,
                           f"{what} was accepted and routed to them; refuse it or ignore the model-supplied "
                           "value")


@check_responder_member.fault
def responder_unchecked(ref: CanonReference) -> None:
    """responseUserId is taken as given, member or not."""
    @replaces(ref.responder)
    def responder(original: Any, conv: dict[str, Any], requested: str | None) -> str:
        return requested or ref.owner


@requirement(id="CANON-HUMAN-OUTCOMES", level="MUST",
             title="request_input / request_card report submitted (structured answers: value ''), cancelled "
                   "and timeout, with the verified responder",
             source=at(f"{DEFS}/request_input_result"),
             faults=[answer("input_cancel_reported_timeout", "input_outcome",
                            "A cancelled input is reported as timeout.",
                            edit=lambda out, *_: {**out, "status": "timeout"} if out["status"] == "cancelled"
                            else out)])
@needs_control("humans who answer, cancel and let time out (control script)")
def check_input_outcomes(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    base = {"conversationId": c.role("owner_chat"), "prompt": "Pick", "timeoutMs": MINUTE_MS}
    for script, expected in ((dict(action="answer", value="blue"), "submitted"),
                             (dict(action="cancel"), "cancelled"), (dict(action="timeout"), "timeout")):
        c.script("request_input", **script)
        got = expect_result(ctx, c.call("request_input", {**base, "inputId": fresh("in")}),
                            f"request_input answered with {script['action']}")
        ctx.expect(got.get("status") == expected,
                   f"a human's {script['action']} must give status {expected!r}: {got}")
    answers = {"color": {"answers": ["blue"]}}
    c.script("request_input", action="answer", answers=answers)
    got = expect_result(ctx, c.call("request_input", {**base, "inputId": fresh("in"),
                                                      "questions": [{"id": "color", "question": "Color?"}]}),
                        "request_input answered with structured answers")
    ctx.expect(got.get("status") == "submitted" and got.get("value") == "" and got.get("answers") == answers,
               f"structured answers come keyed by question id with value '': {got}")
    c.script("request_card", action="cancel")
    got = expect_result(ctx, c.call("request_card", {"card": c.card(actions=True), "timeoutMs": MINUTE_MS}),
                        "request_card cancelled")
    ctx.expect(got.get("status") == "cancelled", f"a cancelled card must say cancelled: {got}")
    c.script("request_card", action="submit", actionId="ok", values={"a": "b"})
    ident = fresh("card")
    got = expect_result(ctx, c.call("request_card", {"cardId": ident, "card": c.card(actions=True),
                                                     "timeoutMs": MINUTE_MS}), "request_card submitted")
    responder = c.interaction(ident).get("responseUserId")
    ctx.expect(got.get("status") == "submitted" and got.get("respondedBy") in (None, responder),
               f"a submitted card names its verified responder {responder!r}: {got}")


@check_input_outcomes.fault
def structured_value_not_empty(ref: CanonReference) -> None:
    """value repeats the structured answers instead of being ''."""
    @replaces(ref.free_text)
    def free(original: Any, response: dict[str, Any]) -> str:
        return json.dumps(response["answers"]) if "answers" in response else original(response)


@check_input_outcomes.fault
def card_responded_by_agent(ref: CanonReference) -> None:
    """request_card names the agent as respondedBy."""
    @replaces(ref.card_outcome)
    def outcome(original: Any, response: dict[str, Any], card_id: str, responder: str) -> dict[str, Any]:
        return original(response, card_id, ref.agent)
