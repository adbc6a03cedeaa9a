"""Deadlines of the verbs a human answers (request_input, request_card, request_approval):
each verb's ceiling, expiresAt winning over timeoutMs, and the binding's default."""

from __future__ import annotations

from typing import Any

from conformance.checks.expect import expect_result, refused_as
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import arguments, noop, replaces
from conformance.model import Profile
from conformance.protocols.canon.client import CanonClient, fresh
from conformance.protocols.canon.reference import CanonReference
from conformance.protocols.canon.shared import (
    CODES,
    DEFS,
    HOUR_MS,
    HUMAN_VERBS,
    MINUTE_MS,
    SECOND_MS,
    needs_control,
)
from conformance.transport.binding import Reply

CEILINGS = {"request_input": "input_ceiling_ms", "request_card": "card_ceiling_ms",
            "request_approval": "approval_ceiling_ms"}


def target_now(c: CanonClient) -> int:
    """The target's own clock, read off a detached approval's deadline."""
    pending = c.detached_approval(timeoutMs=MINUTE_MS)
    c.ctx.expect(isinstance(pending.get("expiresAt"), int),
                 f"a detached approval must carry expiresAt (epoch ms): {pending}", kind="malformed_answer")
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
        return c.call(verb, {"conversationId": r("owner_chat"), "cardId": ident, "card": c.card(actions=True),
                             **deadline})
    return c.call(verb, {"conversationId": r("owner_chat"), "approvalId": ident, "toolName": "t",
                         "toolSummary": "s", "mode": "detached", **deadline})


def recorded_deadline(c: CanonClient, reply: Reply, ident: str) -> Any:
    if isinstance(reply.result, dict) and "expiresAt" in reply.result:
        return reply.result["expiresAt"]
    return c.interaction(ident).get("expiresAt")


def ceilings_title(profile: Profile) -> str:
    lim = {name: int(limit.value) for name, limit in profile.limits.items()}
    return ("Deadlines at the ceiling are accepted and one second past it refused or clamped: input "
            f"{lim['input_ceiling_ms'] / MINUTE_MS:g} minutes, card {lim['card_ceiling_ms'] / MINUTE_MS:g} "
            f"minutes, approval {lim['approval_ceiling_ms'] / HOUR_MS:g} hours")


@requirement(id="CANON-DEADLINE-CEILING", level="MUST", title=ceilings_title,
             source=at(f"{DEFS}/request_approval_input/description"),
             faults=[noop("deadline_ceiling_ignored", "check_deadline",
                          "Deadlines beyond the ceiling are accepted (no DEADLINE_TOO_FAR).")],
             code="DEADLINE_TOO_FAR", code_faults=CODES)
@needs_control("a human who answers at once (control script) and the deadline the target recorded (control "
               "interaction): unanswered, a request at the ceiling holds the call that long, minutes to "
               "hours")
def check_deadline_ceiling(ctx: CheckContext, strict: bool = False) -> None:
    """Each ceiling at its edge (accepted) and one second past it: refused, or (MUST only)
    accepted with the deadline clamped to the ceiling."""
    c = CanonClient(ctx)
    for verb in HUMAN_VERBS:
        ceiling = int(ctx.profile.limits[CEILINGS[verb]].value)
        with ctx.subcheck(f"{verb} at its ceiling"):
            expect_result(ctx, human_call(c, verb, fresh("edge"), expiresAt=target_now(c) + ceiling),
                          f"{verb} with a deadline exactly {ceiling // MINUTE_MS} minutes ahead "
                          "(its ceiling)")
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
                       f"{what} was accepted with deadline {got}, past the ceiling ({latest}): refuse it "
                       "or clamp it")


@check_deadline_ceiling.fault
def deadline_ceiling_loose(ref: CanonReference) -> None:
    """Each deadline ceiling is enforced one minute late."""
    @replaces(ref.check_deadline)
    def check(original: Any, expires_at: int, now: int, ceiling_ms: int) -> None:
        original(expires_at, now, ceiling_ms + 60_000)


@requirement(id="CANON-EXPIRES-AT-WINS", level="MUST",
             title="expiresAt wins when both timeoutMs and expiresAt are given (request_input, request_card, "
                   "request_approval)",
             source=at(f"{DEFS}/request_input_input/properties/timeoutMs/description"),
             faults=[arguments("timeout_wins", "requested_deadline",
                               "timeoutMs wins over expiresAt when both are given.",
                               index=0, drop=["expiresAt"], when=lambda args, now: "timeoutMs" in args)])
@needs_control("a human who answers at once (control script) and the deadline the target recorded (control "
               "interaction): unanswered, each request holds the call five minutes")
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


@requirement(id="CANON-DEADLINE-DEFAULT", level="MUST",
             title="Without a deadline the binding fills one within the ceiling; timeoutMs becomes expiresAt",
             source=at(f"{DEFS}/request_input_input/properties/expiresAt/description"),
             faults=[arguments("timeout_ms_ignored", "requested_deadline",
                               "timeoutMs is ignored: the default deadline applies.", index=0,
                               drop=["timeoutMs"])])
@needs_control("a human who answers at once (control script) and the deadline the target recorded (control "
               "interaction): unanswered, a request without a deadline holds the call for the binding's "
               "default")
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
            ctx.expect(isinstance(got, int) and now < got <= target_now(c) + ceiling,
                       f"{verb}: the default deadline {got} is not within the ceiling")
        with ctx.subcheck(f"{verb} with timeoutMs"):
            ident = fresh("tmo")
            now = target_now(c)
            reply = human_call(c, verb, ident, timeoutMs=2 * MINUTE_MS)
            expect_result(ctx, reply, f"{verb} with timeoutMs")
            got = recorded_deadline(c, reply, ident)
            ctx.expect(isinstance(got, int) and abs(got - (now + 2 * MINUTE_MS)) <= slack,
                       f"{verb}: timeoutMs 2 minutes must become expiresAt about {now + 2 * MINUTE_MS}, "
                       f"got {got}")
