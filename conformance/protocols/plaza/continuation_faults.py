"""Faults of the continuation part (issue 14): each patches one behaviour of part_continuation.py
(or, for routing, the one place of the reference that routes a continuation command) and
names the rule it breaks; the requirements of continuation.py that name it must catch it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.faults import replaces
from conformance.protocols.plaza.part_continuation import EXCHANGED
from conformance.protocols.plaza.reference import (
    CLOSED,
    INVALID_PARAMETERS,
    INVALID_STATE,
    NOT_FOUND,
    NOT_PERMITTED,
    VISITOR,
    Call,
    Issue,
    PlazaReference,
    Principal,
    SiteError,
)
from conformance.table import FaultRegistry

FAULTS = FaultRegistry()
fault: Callable[[Callable[[Any], None]], Callable[[Any], None]] = FAULTS
Data = dict[str, Any]
GLOBAL_COMMANDS = ("continuation_capabilities", "continuation_status")


def _as_participant(ref: PlazaReference, method: str) -> None:
    """``ref.<method>`` runs as a participant of the connection named, whoever calls."""
    @replaces(ref, method)
    def run(original: Any, who: Principal, data: Data) -> Any:
        conn = ref.s["connections"].get(data.get("connection_id"))
        if conn is not None and who.visitor_id not in (conn["inviter"], conn["invitee"]):
            who = Principal(conn["inviter"], who.scopes, who.kind)
        return original(who, data)


# ------------------------------------------------------------------ capabilities and authority

@fault
def capability_defaults_wrong(ref: PlazaReference) -> None:
    """Omitted capability flags are recorded as true (the schema's defaults are site_mailbox true, the others false)."""
    ref.capability_defaults = lambda: {name: True for name in PlazaReference.capability_defaults(ref)}  # type: ignore[method-assign]


@fault
def negotiate_defaults_wrong(ref: PlazaReference) -> None:
    """A negotiation without preference is taken as site_mailbox (the schema's default is automatic)."""
    @replaces(ref, "cmd_continuation_negotiate")
    def negotiate(original: Any, who: Principal, data: Data) -> Any:
        return original(who, {"preference": "site_mailbox", "request_owner_permission": False, **data})


@fault
def negotiate_by_stranger(ref: PlazaReference) -> None:
    """Anyone negotiates in any connection (the same current authority: participants only)."""
    _as_participant(ref, "cmd_continuation_negotiate")


@fault
def declared_capabilities_authorize(ref: PlazaReference) -> None:
    """A declared direct_send lets an offer or negotiation through without current consent (declarations are self-reported)."""
    @replaces(ref, "active_connection")
    def active(original: Any, who: Principal, connection_id: str) -> Any:
        if ref.declared(who.visitor_id).get("direct_send"):
            return ref.participant_connection(who.visitor_id, connection_id)
        return original(who, connection_id)


@fault
def delegation_claim_grants(ref: PlazaReference) -> None:
    """A command claiming external_owner_delegation runs with a visitor's full authority (a bound Agent cannot self-grant)."""
    @replaces(ref, "run_command")
    def run_command(original: Any, call: Call, message: Data, data: Data) -> Any:
        if data.get("external_owner_delegation") is True:
            call = Call(Principal(call.principal.visitor_id, frozenset(ref.supported_scopes), VISITOR), call.method, call.params,
                        call.request_id)
        return original(call, message, data)


# ------------------------------------------------------------------ routing

@fault
def global_status_needs_connection(ref: PlazaReference) -> None:
    """continuation_status without connection_id is refused (it is the global status)."""
    @replaces(ref, "cmd_continuation_status")
    def status(original: Any, who: Principal, data: Data) -> Any:
        if "connection_id" not in data:
            raise SiteError(NOT_FOUND, "no such connection")
        return original(who, data)


@fault
def global_routed_by_context(ref: PlazaReference) -> None:
    """A global continuation_status is routed to the connection its contextId names (global commands take no contextId)."""
    @replaces(ref, "run_command")
    def run_command(original: Any, call: Call, message: Data, data: Data) -> Any:
        if data["operation"] in GLOBAL_COMMANDS and "connection_id" not in data and "contextId" in message:
            if data["operation"] == "continuation_status":
                data = {**data, "connection_id": message["contextId"]}
        return original(call, message, data)


@fault
def global_context_refused(ref: PlazaReference) -> None:
    """A contextId on a global continuation command is refused (the profile ignores it)."""
    @replaces(ref, "send_semantic_issues")
    def issues(original: Any, message: Data) -> list[Issue]:
        data = message["parts"][0].get("data") or {}
        extra = [Issue("params.message.contextId", "not")] if (
            data.get("operation") in GLOBAL_COMMANDS and "connection_id" not in data and "contextId" in message) else []
        return [*original(message), *extra]


@fault
def continuation_task_recipient_accepted(ref: PlazaReference) -> None:
    """Continuation commands take taskId and recipientId metadata (they never do)."""
    ref.continuation_route_issues = lambda message, data: []  # type: ignore[method-assign]


@fault
def continuation_route_wrong_code(ref: PlazaReference) -> None:
    """A continuation command with taskId or recipientId metadata is NOT_PERMITTED, not A2A_INVALID_PARAMETERS."""
    @replaces(ref, "continuation_route_issues")
    def route(original: Any, message: Data, data: Data) -> list[Issue]:
        if original(message, data):
            raise SiteError(NOT_PERMITTED, "not here")
        return []


# ------------------------------------------------------------------ direct offers

@fault
def direct_status_hides_offers(ref: PlazaReference) -> None:
    """direct_status leaves out the peer's offers (it reports the connection's offers)."""
    @replaces(ref, "cmd_direct_status")
    def status(original: Any, who: Principal, data: Data) -> Any:
        return {**original(who, data), "peer_offers": []}


@fault
def direct_status_foreign_readable(ref: PlazaReference) -> None:
    """Anyone reads a connection's direct status (participants only)."""
    _as_participant(ref, "cmd_direct_status")


@fault
def offers_never_expire(ref: PlazaReference) -> None:
    """An offer stays open past its expires_hours."""
    ref.offer_state = lambda offer: str(offer["state"])  # type: ignore[method-assign]


@fault
def offer_expiry_default_wrong(ref: PlazaReference) -> None:
    """An offer without expires_hours expires after the minimum hour (the schema's default is 24)."""
    @replaces(ref, "cmd_direct_offer")
    def offer(original: Any, who: Principal, data: Data) -> Any:
        minimum = ref.branches["direct_offer"]["properties"]["expires_hours"]["minimum"]
        return original(who, {"expires_hours": minimum, **data})


@fault
def decide_without_peer_offer(ref: PlazaReference) -> None:
    """A decision naming a peer offer that does not exist is answered (both sides must have offered)."""
    @replaces(ref, "cmd_direct_decide")
    def decide(original: Any, who: Principal, data: Data) -> Any:
        if data["peer_offer_id"] not in ref.s["direct_offers"] and data["offer_id"] in ref.s["direct_offers"]:
            return {"offer": ref.offer_view(ref.s["direct_offers"][data["offer_id"]]), "direct": "offered"}
        return original(who, data)


@fault
def decide_ignores_sides(ref: PlazaReference) -> None:
    """A decision may name the peer's offer as the caller's own (offer_id is the caller's, peer_offer_id the peer's)."""
    @replaces(ref, "side_offer")
    def side(original: Any, conn: Data, offer_id: str, by: str, what: str) -> Any:
        offer = ref.s["direct_offers"].get(offer_id)
        return original(conn, offer_id, offer["by"] if offer is not None else by, what)


@fault
def withdraw_ignored(ref: PlazaReference) -> None:
    """direct_withdraw answers but the offer stays open."""
    @replaces(ref, "cmd_direct_withdraw")
    def withdraw(original: Any, who: Principal, data: Data) -> Any:
        offer = ref.s["direct_offers"].get(data["offer_id"])
        kept = dict(offer) if offer is not None else None
        out = original(who, data)
        if offer is not None and kept is not None:
            offer.update(kept)
        return out


@fault
def withdraw_peer_offer(ref: PlazaReference) -> None:
    """Either participant withdraws an offer (only its maker does)."""
    @replaces(ref, "cmd_direct_withdraw")
    def withdraw(original: Any, who: Principal, data: Data) -> Any:
        offer = ref.s["direct_offers"].get(data["offer_id"])
        if offer is not None and offer["connection_id"] == data["connection_id"]:
            who = Principal(offer["by"], who.scopes, who.kind)
        return original(who, data)


@fault
def retry_new_offer(ref: PlazaReference) -> None:
    """Every direct_offer is a new offer, whatever its request_key (a retry is the same offer)."""
    @replaces(ref, "cmd_direct_offer")
    def offer(original: Any, who: Principal, data: Data) -> Any:
        return original(who, {**data, "request_key": ref.new_uuid()})


@fault
def retry_after_withdraw_answered(ref: PlazaReference) -> None:
    """A retry answers its offer even after it was withdrawn (offers are rechecked)."""
    ref.retry_offer = lambda offer, data: {"offer": ref.offer_view(offer), "replayed": True}  # type: ignore[method-assign]


@fault
def retry_after_removal_answered(ref: PlazaReference) -> None:
    """A retry answers its offer without rechecking the connection (permissions are rechecked)."""
    @replaces(ref, "cmd_direct_offer")
    def offer(original: Any, who: Principal, data: Data) -> Any:
        earlier = ref.s["direct_keys"].get(f"{who.visitor_id}|{data['request_key']}")
        if earlier is not None:
            return ref.retry_offer(ref.s["direct_offers"][earlier], data)
        return original(who, data)


# ------------------------------------------------------------------ the site mailbox

@fault
def fallback_read_request_incomplete(ref: PlazaReference) -> None:
    """The fallback's a2a.read_request is only the params (a complete JSON-RPC SendMessage envelope)."""
    @replaces(ref, "mailbox_fallback")
    def fallback(original: Any, conn: Data) -> Data:
        out: Data = original(conn)
        if "a2a" in out:
            out["a2a"]["read_request"] = out["a2a"]["read_request"]["params"]
        return out


@fault
def fallback_supplies_text(ref: PlazaReference) -> None:
    """The fallback adapter supplies reply text (it supplies none)."""
    @replaces(ref, "mailbox_fallback")
    def fallback(original: Any, conn: Data) -> Data:
        out: Data = original(conn)
        if "a2a" in out:
            out["a2a"]["reply_text"] = "Sounds good, see you there!"
        return out


@fault
def fallback_request_with_text(ref: PlazaReference) -> None:
    """The fallback's a2a.read_request carries a text part besides its read (the adapter supplies no reply text)."""
    @replaces(ref, "mailbox_fallback")
    def fallback(original: Any, conn: Data) -> Data:
        out: Data = original(conn)
        if "a2a" in out:
            out["a2a"]["read_request"]["params"]["message"]["parts"].append({"text": "Sounds good, see you there!"})
        return out


@fault
def direct_exchange_closes_mailbox(ref: PlazaReference) -> None:
    """An endpoint exchange closes the connection's site mailbox (it remains available)."""
    @replaces(ref, "cmd_direct_decide")
    def decide(original: Any, who: Principal, data: Data) -> Any:
        out = original(who, data)
        if out.get("direct") == EXCHANGED:
            ref.s["connections"][data["connection_id"]]["state"] = CLOSED
        return out


# ------------------------------------------------------------------ plan

@fault
def plan_commission_refused(ref: PlazaReference) -> None:
    """A commission at the schema's max_turns maximum is refused (off by one)."""
    @replaces(ref, "cmd_plan")
    def plan(original: Any, who: Principal, data: Data) -> Any:
        maximum = ref.branches["plan"]["properties"]["commission"]["properties"]["max_turns"]["maximum"]
        if (data.get("commission") or {}).get("max_turns", 0) >= maximum:
            raise SiteError(INVALID_PARAMETERS, "max_turns too large")
        return original(who, data)


@fault
def renew_refused_with_plan(ref: PlazaReference) -> None:
    """renew_current is refused even with a current plan (it renews the current plan)."""
    @replaces(ref, "cmd_plan")
    def plan(original: Any, who: Principal, data: Data) -> Any:
        if data.get("renew_current") and "commission" not in data:
            raise SiteError(INVALID_STATE, "cannot renew")
        return original(who, data)


@fault
def renew_without_plan_answered(ref: PlazaReference) -> None:
    """renew_current without a current plan is answered (the profile: INVALID_STATE)."""
    @replaces(ref, "cmd_plan")
    def plan(original: Any, who: Principal, data: Data) -> Any:
        if data.get("renew_current") and "commission" not in data and ref.current_plan(who.visitor_id) is None:
            return {"plan": None, "renewed": False}
        return original(who, data)


@fault
def renew_keeps_expiry(ref: PlazaReference) -> None:
    """Renewing keeps the plan's old expiry (it counts again from now)."""
    @replaces(ref, "start_plan")
    def start(original: Any, plan: Data) -> None:
        kept = plan.get("expires_at")
        original(plan)
        if "renewed_at" in plan and kept is not None:
            plan["expires_at"] = kept


@fault
def plan_budget_ignored(ref: PlazaReference) -> None:
    """Texts go out past the current plan's max_turns (the explicit budget is a final send check)."""
    ref.plan_check_send = lambda visitor_id: None  # type: ignore[method-assign]


@fault
def renew_keeps_turns(ref: PlazaReference) -> None:
    """Renewing keeps the turns already used (a renewed plan's turns restart)."""
    @replaces(ref, "start_plan")
    def start(original: Any, plan: Data) -> None:
        used = plan.get("turns_used", 0)
        original(plan)
        plan["turns_used"] = used
