"""Agent Plaza's continuation (friendContinuation, issue 14), part one: capability
declarations are self-reported and grant nothing, a bound Agent cannot grant itself its
owner's permission, routing (global commands take no contextId, no taskId or recipientId
metadata) and plan, each requirement declared on its check with the faults that prove it can
fail; the calls every continuation check makes. Direct offers (status, expiry, decisions
naming both offers, withdrawal, retries by request_key rechecked) and the site mailbox
fallback are continuation_direct.py; what the reference serves reference/continuation.py.

The document names the commands' fields but no answer shapes (docs/architecture.md, "The
judging rule"): the MUST checks find what they judge by content or behaviour -- an offer id is
the UUID the target minted, a declared flag is the boolean that moves when the caller declares
it against its default, a negotiation's preference is a value of the schema's enum, the
fallback's read request is found under the names the document gives it
(site_mailbox_fallback.a2a.read_request) and judged by sending it -- and the profile's own
choices (reference/continuation.py, docs/agent-plaza.md) are SHOULDs of ``source: profile``.
Expiries move the site's clock with control ``advance_clock``; without control they are
untested. Continuation is an optional part (groups.py ``served``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from conformance.checks.expect import expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, fault, requirement
from conformance.kit.faults import answer, arguments, noop, refuses, replaces, returns
from conformance.protocols.plaza.answers import INVALID
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.continuation_client import (
    COMMANDS,
    DOCS,
    FC,
    GLOBAL_COMMANDS,
    HOUR_S,
    Data,
    advance,
    as_participant,
    branch,
    flipped,
    leaves,
    needs_control,
    offer_fields,
)
from conformance.protocols.plaza.keeper import PLANS
from conformance.protocols.plaza.parts import CONTINUATION, declined, refused, served
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import (
    INVALID_PARAMETERS,
    INVALID_STATE,
    NOT_FOUND,
    NOT_PERMITTED,
    VISITOR,
    Call,
    Issue,
    Principal,
    SiteError,
)
from conformance.transport.http import json_excerpt


# ----------------------------------------------------------------------------------------------
# capabilities, negotiation, authority
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-CONT-CAPABILITIES", level="MUST", optional=CONTINUATION,
             title="Omitted capability flags take the schema's defaults",
             source=at(f"{COMMANDS}/6/properties/document/properties"),
             faults=[answer("capability_defaults_wrong", "capability_defaults",
                            "Omitted capability flags are recorded as true (the schema's defaults are "
                            "site_mailbox true, the others false).",
                            edit=lambda defaults: {name: True for name in defaults})])
@served(CONTINUATION)
def check_capabilities(ctx: CheckContext) -> None:
    """A declared document's omitted flags take the schema's defaults (site_mailbox true, the
    others false), judged by behaviour: declaring each flag against its default moves a
    boolean of the answer to the declared value (so an omitted flag was at its default), and
    declaring nothing again moves every boolean back (the omitted flag took its default, not
    the value declared before)."""
    c = PlazaClient(ctx)
    flags = branch(ctx, "continuation_capabilities")["properties"]["document"]["properties"]
    defaults = {name: s["default"] for name, s in flags.items()}

    def declare(document: dict[str, Any]) -> dict[str, Any]:
        return c.data_of(c.command("continuation_capabilities", {"document": document}),
                         f"continuation_capabilities {document}")

    base = declare({})
    silent: list[str] = []
    for name, default in defaults.items():
        with ctx.subcheck(name):
            turned = declare({name: not default})
            values = leaves(turned)
            if not [p for p in flipped(base, turned) if values[p] is (not default)]:
                silent.append(name)
            again = declare({})
            ctx.expect(not flipped(base, again),
                       f"declaring {{}} after {{{name}: {not default}}} answered {json_excerpt(again)}, "
                       f"the first {{}} {json_excerpt(base)}: the omitted {name} kept the value declared "
                       f"before; omitted flags take the schema's defaults {defaults}", kind="state_changed")
    if len(silent) == len(defaults):
        raise Untested("declaring each flag against its default changed no boolean of the answer: it "
                       f"reports no declared flag to judge ({json_excerpt(base)})")
    ctx.expect(not silent,
               f"declaring {silent} against the schema's default changed nothing in the answer, which does "
               "report the other flags: with the document omitting them they already had the declared "
               f"value, not the defaults {defaults} ({json_excerpt(base)})", kind="state_changed")


@requirement(id="PLAZA-CONT-NEGOTIATE", level="MUST", optional=CONTINUATION,
             title="continuation_negotiate takes the schema's defaults; only participants negotiate",
             source=at(f"{COMMANDS}/7/properties"),
             faults=[arguments("negotiate_defaults_wrong", "cmd_continuation_negotiate",
                               "A negotiation without preference is taken as site_mailbox (the schema's "
                               "default is automatic).",
                               edit=lambda data: {"preference": "site_mailbox",
                                                  "request_owner_permission": False,
                                                  **data})])
@served(CONTINUATION)
def check_negotiate(ctx: CheckContext) -> None:
    """A negotiation naming only its connection is answered as with the schema's defaults
    (preference automatic, request_owner_permission true), where the answers show the
    difference (values of the preference enum, a boolean that follows
    request_owner_permission); a stranger does not negotiate in others' connection."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    props = branch(ctx, "continuation_negotiate")["properties"]

    def negotiate(what: str, **fields: Any) -> dict[str, Any]:
        return c.data_of(c.command("continuation_negotiate", {"connection_id": connection, **fields}), what)

    bare = negotiate("continuation_negotiate naming only its connection")
    with ctx.subcheck("preference"):
        enum, default = props["preference"]["enum"], props["preference"]["default"]
        shown = {v: Counter(f.value
                            for f in locate.enum_values(negotiate(f"preference {v}", preference=v), enum))
                 for v in enum}
        if len({tuple(sorted(counts.items()))
                for counts in shown.values()}) > 1:  # the answer shows the preference
            got = Counter(f.value for f in locate.enum_values(bare, enum))
            ctx.expect(got == shown[default],
                       f"without preference the negotiation reports the values {dict(got)}; with the "
                       f"schema's default {default!r} it reports {dict(shown[default])}",
                       kind="state_changed")
    with ctx.subcheck("request_owner_permission"):
        default = props["request_owner_permission"]["default"]
        chosen = {v: negotiate(f"request_owner_permission {v}", request_owner_permission=v)
                  for v in (True, False)}
        moved = flipped(chosen[True], chosen[False])
        wrong = [p for p in moved if leaves(bare).get(p) is not leaves(chosen[default]).get(p)]
        ctx.expect(not wrong,
                   f"without request_owner_permission the negotiation answers {json_excerpt(bare)}; with the "
                   f"schema's default {default} it answers {json_excerpt(chosen[default])}",
                   kind="state_changed")
    refused(ctx, c.command("continuation_negotiate", {"connection_id": connection}, CAROL),
            "carol's continuation_negotiate in alice and bob's connection")


@check_negotiate.fault
def negotiate_by_stranger(ref: PlazaReference) -> None:
    """Anyone negotiates in any connection (the same current authority: participants only)."""
    as_participant(ref, ref.cmd_continuation_negotiate)


def declare_everything(c: PlazaClient, who: str) -> None:
    flags = branch(c.ctx, "continuation_capabilities")["properties"]["document"]["properties"]
    with c.ctx.setup(f"{who} declares every capability", by="PLAZA-CONT-CAPABILITIES"):
        expect_result(c.ctx,
                      c.command("continuation_capabilities", {"document": {k: True for k in flags}}, who),
                      "continuation_capabilities declaring everything")


@requirement(id="PLAZA-CONT-SELF-REPORTED", level="MUST", optional=CONTINUATION,
             title="Declared capabilities are self-reported and authorize nothing",
             source=at(f"{FC}/authority"))
@served(CONTINUATION)
def check_self_reported(ctx: CheckContext) -> None:
    """Declaring every capability authorizes nothing: no offer on a pending invitation,
    none in a connection of others."""
    c = PlazaClient(ctx)
    declare_everything(c, ALICE)
    declare_everything(c, CAROL)
    _, pending = c.invite(ALICE, BOB)
    refused(ctx, c.command("direct_offer", offer_fields(ctx, pending), ALICE),
            "alice's direct_offer on a pending invitation after declaring every capability")
    refused(ctx, c.command("continuation_negotiate", {"connection_id": pending}, ALICE),
            "alice's continuation_negotiate on a pending invitation after declaring every capability")
    refused(ctx, c.command("direct_offer", offer_fields(ctx, pending), CAROL),
            "carol's direct_offer in alice and bob's connection after declaring every capability")


@check_self_reported.fault
def declared_capabilities_authorize(ref: PlazaReference) -> None:
    """A declared direct_send lets an offer or negotiation through without current consent
    (declarations are self-reported)."""
    @replaces(ref.active_connection)
    def active(original: Any, who: Principal, connection_id: str) -> Any:
        if ref.declared(who.visitor_id).get("direct_send"):
            return ref.participant_connection(who.visitor_id, connection_id)
        return original(who, connection_id)


@requirement(id="PLAZA-CONT-NO-SELF-GRANT", level="MUST", optional=CONTINUATION,
             title="A bound Agent cannot grant itself its owner's permission",
             source=at(f"{FC}/authority"))
@served(CONTINUATION)
def check_no_self_grant(ctx: CheckContext) -> None:
    """alice's bound account Agent (the reader credential) claiming external owner
    delegation gets no direct offer through: the claim is no grant."""
    c = PlazaClient(ctx)
    if ctx.credential("reader") is None:
        raise Untested("needs credentials.reader: an account Agent credential of alice", "credential")
    connection = c.befriend()
    c.command("continuation_capabilities", {"document": {"external_owner_delegation": True}}, "reader")
    fields = offer_fields(ctx, connection, external_owner_delegation=True)
    refused(ctx, c.command("direct_offer", fields, "reader"),
            "the bound Agent's direct_offer claiming external_owner_delegation")


@check_no_self_grant.fault
def delegation_claim_grants(ref: PlazaReference) -> None:
    """A command claiming external_owner_delegation runs with a visitor's full authority (a
    bound Agent cannot self-grant)."""
    @replaces(ref.run_command)
    def run_command(original: Any, call: Call, message: Data, data: Data) -> Any:
        if data.get("external_owner_delegation") is True:
            call = Call(Principal(call.principal.visitor_id, frozenset(ref.supported_scopes), VISITOR),
                        call.method, call.params, call.request_id)
        return original(call, message, data)


# ----------------------------------------------------------------------------------------------
# routing
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-ROUTE-GLOBAL-NO-CONTEXT", level="MUST", optional=CONTINUATION,
             title="Global continuation commands take no contextId; continuation_status without "
                   "connection_id is global",
             source=at(f"{FC}/routing"),
             faults=[refuses("global_status_needs_connection", "cmd_continuation_status",
                             lambda who, data: SiteError(NOT_FOUND, "no such connection"),
                             "continuation_status without connection_id is refused (it is the global "
                             "status).",
                             when=lambda who, data: "connection_id" not in data)])
@served(CONTINUATION)
def check_global_no_context(ctx: CheckContext) -> None:
    """continuation_status without connection_id is the global status; a contextId on a
    global command is refused or ignored, never taken as the connection it names."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    c.data_of(c.command("continuation_status", {}),
              "continuation_status without connection_id (the global status)")
    for name in GLOBAL_COMMANDS:
        with ctx.subcheck(name):
            bare = c.data_of(c.command(name, {}), f"{name} without contextId")
            reply = c.command(name, {}, context=connection)
            if not reply.ok:
                continue  # refusing is one reading of "omit contextId"
            routed = c.data_of(reply, f"{name} with a contextId")
            ctx.expect(routed == bare,
                       f"{name} with contextId {connection} answered {json_excerpt(routed)}, without it "
                       f"{json_excerpt(bare)}: a global command is not routed by contextId",
                       kind="state_changed")


@check_global_no_context.fault
def global_routed_by_context(ref: PlazaReference) -> None:
    """A global continuation_status is routed to the connection its contextId names (global
    commands take no contextId)."""
    @replaces(ref.run_command)
    def run_command(original: Any, call: Call, message: Data, data: Data) -> Any:
        if data["operation"] in GLOBAL_COMMANDS and "connection_id" not in data and "contextId" in message:
            if data["operation"] == "continuation_status":
                data = {**data, "connection_id": message["contextId"]}
        return original(call, message, data)


@requirement(id="PLAZA-ROUTE-GLOBAL-NO-CONTEXT-IGNORED", level="SHOULD", optional=CONTINUATION,
             title="A contextId on a global command is ignored; the answer names no context",
             source=DOCS)
@served(CONTINUATION)
def check_global_context_ignored(ctx: CheckContext) -> None:
    """The profile's choice: a contextId on a global command is ignored (the answer is the
    global one and names no context), as for status, discover and friends."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    for name in GLOBAL_COMMANDS:
        with ctx.subcheck(name):
            message = c.message_of(c.command(name, {}, context=connection), f"{name} with a contextId")
            ctx.expect("contextId" not in message,
                       f"{name} answered in context {message.get('contextId')!r}; a global "
                       "command's answer names no context", kind="state_changed")


@check_global_context_ignored.fault
def global_context_refused(ref: PlazaReference) -> None:
    """A contextId on a global continuation command is refused (the profile ignores it)."""
    @replaces(ref.send_semantic_issues)
    def issues(original: Any, message: Data) -> list[Issue]:
        data = message["parts"][0].get("data") or {}
        extra = [Issue("params.message.contextId", "not")] if (
            data.get("operation") in GLOBAL_COMMANDS and "connection_id" not in data
            and "contextId" in message) else []
        return [*original(message), *extra]


@fault  # of PLAZA-ROUTE-NO-TASK-RECIPIENT-CODE (its code twin names it)
def continuation_route_wrong_code(ref: PlazaReference) -> None:
    """A continuation command with taskId or recipientId metadata is NOT_PERMITTED, not
    A2A_INVALID_PARAMETERS."""
    @replaces(ref.continuation_route_issues)
    def route(original: Any, message: Data, data: Data) -> list[Issue]:
        if original(message, data):
            raise SiteError(NOT_PERMITTED, "not here")
        return []


@requirement(id="PLAZA-ROUTE-NO-TASK-RECIPIENT", level="MUST", optional=CONTINUATION,
             title="Continuation commands take no taskId or recipientId metadata",
             source=at(f"{FC}/routing"),
             faults=[returns("continuation_task_recipient_accepted", "continuation_route_issues", [],
                             "Continuation commands take taskId and recipientId metadata (they never do).")],
             code=INVALID, code_faults=["continuation_route_wrong_code"])
@served(CONTINUATION)
def check_no_task_recipient(ctx: CheckContext, strict: bool = False) -> None:
    """Continuation commands with message.taskId or recipientId metadata are refused."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    cases: dict[str, tuple[str, dict[str, Any]]] = {
        "continuation_status": ("continuation_status", {"connection_id": connection}),
        "direct_status": ("direct_status", {"connection_id": connection}),
        "continuation_capabilities": ("continuation_capabilities", {}),
    }
    for label, (name, fields) in cases.items():
        with ctx.subcheck(f"{label} with taskId"):
            refused(ctx, c.command(name, fields, taskId=fresh_id()), f"{name} with message.taskId",
                    error=INVALID, strict=strict)
        with ctx.subcheck(f"{label} with recipientId"):
            reply = c.command(name, fields, metadata={c.ext: {"recipientId": c.agent_id(BOB)}})
            refused(ctx, reply, f"{name} with recipientId metadata", error=INVALID, strict=strict)


# ----------------------------------------------------------------------------------------------
# plan
# ----------------------------------------------------------------------------------------------
def commission(**extra: Any) -> dict[str, Any]:
    return {"commission": {"goal": "Plan a reading group", **extra}}


@requirement(id="PLAZA-PLAN", level="MUST", optional=CONTINUATION, lasting=PLANS,
             title="A plan commission within the schema's bounds is answered; renew_current renews the "
                   "current plan",
             source=at(f"{COMMANDS}/51"),
             faults=["plan_commission_refused",
                     refuses("renew_refused_with_plan", "cmd_plan",
                             lambda who, data: SiteError(INVALID_STATE, "cannot renew"),
                             "renew_current is refused even with a current plan (it renews the current "
                             "plan).",
                             when=lambda who, data: data.get("renew_current") and "commission" not in data)])
@served(CONTINUATION)
def check_plan(ctx: CheckContext) -> None:
    """A commission within the schema's bounds is answered, and so is renewing the current plan."""
    ctx.lasting(ALICE, PLANS)
    c = PlazaClient(ctx)
    props = branch(ctx, "plan")["properties"]["commission"]["properties"]
    full = commission(max_turns=props["max_turns"]["maximum"],
                      expires_hours=props["expires_hours"]["maximum"],
                      questions=[{"question": "Which book?"}] * props["questions"]["maxItems"])
    reply = c.command("plan", full)
    if declined(ctx, reply):
        raise Untested(f"the target answers plan as not served: {reply.describe()}", "optional")
    expect_result(ctx, reply, "plan with a commission at the schema's bounds")
    expect_result(ctx, c.command("plan", {"renew_current": True}), "plan renew_current with a current plan")


@check_plan.fault
def plan_commission_refused(ref: PlazaReference) -> None:
    """A commission at the schema's max_turns maximum is refused (off by one)."""
    @replaces(ref.cmd_plan)
    def plan(original: Any, who: Principal, data: Data) -> Any:
        maximum = ref.branches["plan"]["properties"]["commission"]["properties"]["max_turns"]["maximum"]
        if (data.get("commission") or {}).get("max_turns", 0) >= maximum:
            raise SiteError(INVALID_PARAMETERS, "max_turns too large")
        return original(who, data)


def plan_expiry(c: PlazaClient, what: str) -> Any:
    data = c.data_of(c.command("plan", {}), what)
    return dig(data, "plan", "expires_at")


INVALID_STATE_NAME = "INVALID_STATE"


@requirement(id="PLAZA-PLAN-RENEW", level="SHOULD", optional=CONTINUATION, lasting=PLANS,
             title="renew_current without a current plan is INVALID_STATE; renewing restarts the expiry",
             source=DOCS)
@served(CONTINUATION)
def check_plan_renew(ctx: CheckContext) -> None:
    """The profile's choice: renew_current without a current plan (none, or expired) is
    INVALID_STATE; with one, its expiry counts again from now."""
    c = PlazaClient(ctx)
    needs_control(c, "expiry needs the site's clock moved (advance_clock)")
    refused(ctx, c.command("plan", {"renew_current": True}), "plan renew_current without any plan",
            error=INVALID_STATE_NAME, strict=True)
    expect_result(ctx, c.command("plan", commission(expires_hours=1)), "plan with expires_hours 1")
    before = plan_expiry(c, "the plan")
    advance(c, HOUR_S // 2)
    expect_result(ctx, c.command("plan", {"renew_current": True}), "plan renew_current")
    after = plan_expiry(c, "the renewed plan")
    ctx.expect(isinstance(before, str) and isinstance(after, str) and after > before,
               f"renewing moved the plan's expiry from {before!r} to {after!r}; it counts again from now",
               kind="state_changed")
    advance(c, HOUR_S + 1)
    refused(ctx, c.command("plan", {"renew_current": True}), "plan renew_current after the plan expired",
            error=INVALID_STATE_NAME,
            strict=True)


@check_plan_renew.fault
def renew_without_plan_answered(ref: PlazaReference) -> None:
    """renew_current without a current plan is answered (the profile: INVALID_STATE)."""
    @replaces(ref.cmd_plan)
    def plan(original: Any, who: Principal, data: Data) -> Any:
        if (data.get("renew_current") and "commission" not in data
                and ref.current_plan(who.visitor_id) is None):
            return {"plan": None, "renewed": False}
        return original(who, data)


@check_plan_renew.fault
def renew_keeps_expiry(ref: PlazaReference) -> None:
    """Renewing keeps the plan's old expiry (it counts again from now)."""
    @replaces(ref.start_plan)
    def start(original: Any, plan: Data) -> None:
        kept = plan.get("expires_at")
        original(plan)
        if "renewed_at" in plan and kept is not None:
            plan["expires_at"] = kept


@requirement(id="PLAZA-PLAN-BUDGET", level="SHOULD", optional=CONTINUATION, lasting=PLANS,
             title="A current plan's max_turns bounds the agent's texts; renewing restores them",
             source=DOCS,
             faults=[noop("plan_budget_ignored", "plan_check_send",
                          "Texts go out past the current plan's max_turns (the explicit budget is a final "
                          "send check).")])
@served(CONTINUATION)
def check_plan_budget(ctx: CheckContext) -> None:
    """The profile's choice (final_send_checks explicit_budget): a current plan's max_turns
    bounds the agent's texts; renewing it restores the turns."""
    ctx.lasting(ALICE, PLANS)
    c = PlazaClient(ctx)
    connection = c.befriend()
    turns = int(branch(ctx, "plan")["properties"]["commission"]["properties"]["max_turns"]["minimum"]) + 1
    expect_result(ctx, c.command("plan", commission(max_turns=turns)), f"plan with max_turns {turns}")
    for n in range(turns):
        expect_result(ctx, c.text(ALICE, f"turn {n + 1}", context=connection),
                      f"text {n + 1} of {turns} under the plan")
    refused(ctx, c.text(ALICE, "one turn too many", context=connection),
            f"text {turns + 1} under a plan of {turns} turns",
            error="NOT_PERMITTED", strict=True)
    expect_result(ctx, c.command("plan", {"renew_current": True}), "plan renew_current")
    expect_result(ctx, c.text(ALICE, "after renewing", context=connection), "a text after renewing the plan")


@check_plan_budget.fault
def renew_keeps_turns(ref: PlazaReference) -> None:
    """Renewing keeps the turns already used (a renewed plan's turns restart)."""
    @replaces(ref.start_plan)
    def start(original: Any, plan: Data) -> None:
        used = plan.get("turns_used", 0)
        original(plan)
        plan["turns_used"] = used
