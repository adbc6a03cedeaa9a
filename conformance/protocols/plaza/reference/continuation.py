"""Part 2 of the reference site (issue 14): continuation and direct offers (friendContinuation) and plan.
A mixin of PlazaReference: its commands are ``cmd_<name>`` methods, its state lives under
its own keys of ``self.s`` (set by ``reset_continuation``), and ``PART_COMMANDS`` names the scope each
command needs.

What the reference serves where the document is silent (the profile's choices):

- ``continuation_capabilities`` records the caller's self-reported document (omitted flags
  take the schema's defaults) and answers it; without ``document`` it answers the current
  declaration. A declaration authorizes nothing: no check below ever reads it, except the
  informational ``mode`` a negotiation suggests.
- ``continuation_negotiate`` records the caller's preference for an active connection and
  answers the site mailbox fallback (``site_mailbox_fallback``: the native ``next_request``
  marked native_http_only and ``a2a.read_request``, a complete SendMessage reading the
  conversation; no reply text). A bound Agent's ``request_owner_permission`` is recorded as
  requested: its owner decides outside A2A, nothing here grants it.
- ``continuation_status`` with ``connection_id`` reports that connection; without it, the
  global status (declaration, plan, open connections). A contextId on a global command is
  ignored (part 1 does the same for status, discover and friends): the answer is the global
  one and carries no contextId.
- Direct offers: only a participant of an active connection offers (NOT_FOUND / NOT_PERMITTED),
  only under its own authority (a bound Agent: NOT_PERMITTED, whatever it claims); a new
  offer supersedes the caller's earlier open one; an offer expires ``expires_hours`` after it
  was made (the schema's default). ``request_key`` names one intent: the identical data again
  answers the same offer after rechecking the connection and the offer (withdrawn, expired,
  superseded or declined: INVALID_STATE; ended connection: NOT_PERMITTED); other data under
  the key is CONTEXT_CONSUMED. ``direct_decide`` names the caller's open offer and the peer's
  (missing or not that side's: NOT_FOUND; no longer open: INVALID_STATE); both accepting the
  same pair exchanges the endpoint packages, which proves no direct transport. The site
  mailbox stays available throughout.
- ``plan``: a ``commission`` sets the caller's current plan (replacing any); ``renew_current``
  alone renews the current plan (its expiry counts again from now, its turns restart) and is
  INVALID_STATE without one; neither answers the current plan. A plan is current until
  ``expires_hours`` pass (none: no expiry). While it is current and has ``max_turns``, each
  stored text of the caller is a turn and a text past the budget is NOT_PERMITTED
  (final_send_checks ``explicit_budget``) -- the reference calls ``plan_check_send`` and
  ``plan_count_send`` from its text path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from conformance.protocols.plaza.site import (
    ACCOUNT_AGENT,
    ACTIVE,
    CONNECTIONS_READ,
    CONNECTIONS_WRITE,
    CONTEXT_CONSUMED,
    INVALID_STATE,
    MESSAGES_WRITE,
    NOT_FOUND,
    NOT_PERMITTED,
    OPEN_STATES,
    RECIPIENT_FIELD,
    Issue,
    Principal,
    SiteError,
    fingerprint,
    iso,
)

HOUR_MS = 3_600_000
PENDING, ACCEPTED, EXCHANGED = "pending", "accepted", "exchanged"
WITHDRAWN, SUPERSEDED, DECLINED_OFFER = "withdrawn", "superseded", "declined"
EXPIRED, ENDED = "expired", "ended"
OPEN_OFFER = (PENDING, ACCEPTED)  # an offer that can still be decided
LIVE_OFFER = (PENDING, ACCEPTED, EXCHANGED)  # an offer a retry answers again
SITE_MAILBOX = "site_mailbox"
DIRECT_SEND, DIRECT_RECEIVE, DIRECT_POLL = "direct_send", "direct_receive", "direct_poll"
NATIVE_ONLY = "native_http_only"
CONTINUATION_COMMANDS = ("continuation_capabilities", "continuation_status", "continuation_negotiate",
                         "direct_offer",
                         "direct_decide", "direct_status", "direct_withdraw")


class ContinuationPart:
    PART_COMMANDS: ClassVar[dict[str, str]] = {
        "continuation_capabilities": CONNECTIONS_READ, "continuation_status": CONNECTIONS_READ,
        "continuation_negotiate": CONNECTIONS_WRITE, "direct_offer": CONNECTIONS_WRITE,
        "direct_decide": CONNECTIONS_WRITE,
        "direct_status": CONNECTIONS_READ, "direct_withdraw": CONNECTIONS_WRITE, "plan": MESSAGES_WRITE,
    }
    s: dict[str, Any]

    if TYPE_CHECKING:  # PlazaReference's, which this mixin is part of
        spec: dict[str, Any]
        ext: str
        branches: dict[str, dict[str, Any]]

        def now_ms(self) -> int: ...
        def new_uuid(self) -> str: ...
        def participant_connection(self, visitor_id: str, connection_id: Any) -> dict[str, Any]: ...
        def connections_of(self, visitor_id: str) -> list[dict[str, Any]]: ...
        def peer_of(self, conn: dict[str, Any], visitor_id: str) -> str: ...
        def require_not_stopped(self, visitor_id: str) -> None: ...
        def read_request(self, connection_id: str, round_no: int) -> dict[str, Any]: ...
        def a2a_request(self, data: dict[str, Any], context_id: str | None = None) -> dict[str, Any]: ...

    def reset_continuation(self) -> None:
        """This part's state on a fresh site."""
        self.s.update(cont_declared={}, cont_negotiations={}, direct_offers={}, direct_keys={}, plans={})

    # ------------------------------------------------------------------ routing (called by the params check)

    def continuation_route_issues(self, message: dict[str, Any], data: dict[str, Any]) -> list[Issue]:
        """friendContinuation/routing: these commands never take taskId or recipientId metadata."""
        if data.get("operation") not in CONTINUATION_COMMANDS:
            return []
        issues = []
        if "taskId" in message:
            issues.append(Issue("params.message.taskId", "not"))
        ext = (message.get("metadata") or {}).get(self.ext)
        if isinstance(ext, dict) and RECIPIENT_FIELD in ext:
            issues.append(Issue("params.message.metadata", "not"))
        return issues

    # ------------------------------------------------------------------ capabilities and negotiation

    def capability_defaults(self) -> dict[str, Any]:
        flags = self.branches["continuation_capabilities"]["properties"]["document"]["properties"]
        return {name: schema["default"] for name, schema in flags.items()}

    def declared(self, visitor_id: str) -> dict[str, Any]:
        return dict(self.s["cont_declared"].get(visitor_id) or self.capability_defaults())

    def site_capabilities(self) -> dict[str, Any]:
        """What the site itself supports: the mailbox, never streaming or push (friendContinuation/proof)."""
        caps = self.spec["optionalCapabilities"]
        return {SITE_MAILBOX: True, "streaming": bool(caps["streaming"]),
                "push_notifications": bool(caps["pushNotifications"])}

    def cmd_continuation_capabilities(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        """Record the self-reported document (defaults filled in); it grants nothing."""
        if "document" in data:
            self.s["cont_declared"][who.visitor_id] = {**self.capability_defaults(), **data["document"]}
        return {"declared": self.declared(who.visitor_id), "self_reported": True, "grants_permission": False,
                "site": self.site_capabilities()}

    def active_connection(self, who: Principal, connection_id: str) -> dict[str, Any]:
        """A connection of the caller under current consent (NOT_FOUND, else NOT_PERMITTED)."""
        conn = self.participant_connection(who.visitor_id, connection_id)
        if conn["state"] != ACTIVE:
            raise SiteError(NOT_PERMITTED, f"the connection is {conn['state']}")
        return conn

    def mailbox_fallback(self, conn: dict[str, Any]) -> dict[str, Any]:
        """The site mailbox fallback: native next_request (native HTTP only) and a complete A2A
        read request."""
        if conn["state"] != ACTIVE:
            return {"available": False}
        return {"available": True,
                "next_request": {"operation": "open", "connection_id": conn["id"], "transport": NATIVE_ONLY},
                "a2a": {"read_request": self.a2a_request(self.read_request(conn["id"], conn["round_no"]),
                                                         conn["id"])}}

    def negotiation_key(self, conn_id: str, visitor_id: str) -> str:
        return f"{conn_id}|{visitor_id}"

    def suggested_mode(self, conn: dict[str, Any], visitor_id: str, preference: str) -> str:
        """Informational only: direct is a candidate when both sides declare they can send and receive."""
        def direct_capable(who: str) -> bool:
            flags = self.declared(who)
            return bool(flags.get(DIRECT_SEND) and (flags.get(DIRECT_RECEIVE) or flags.get(DIRECT_POLL)))
        both = direct_capable(visitor_id) and direct_capable(self.peer_of(conn, visitor_id))
        return "direct_candidate" if preference != SITE_MAILBOX and both else SITE_MAILBOX

    def owner_permission(self, who: Principal, requested: bool) -> str:
        """A visitor acts under its own authority; a bound Agent only asks its owner (no grant here)."""
        if who.kind != ACCOUNT_AGENT:
            return "not_needed"
        return "requested" if requested else "not_requested"

    def cmd_continuation_negotiate(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        conn = self.active_connection(who, data["connection_id"])
        props = self.branches["continuation_negotiate"]["properties"]
        preference = data.get("preference", props["preference"]["default"])
        ask = data.get("request_owner_permission", props["request_owner_permission"]["default"])
        record = {"preference": preference, "request_owner_permission": ask,
                  "owner_permission": self.owner_permission(who, ask),
                  "mode": self.suggested_mode(conn, who.visitor_id, preference)}
        self.s["cont_negotiations"][self.negotiation_key(conn["id"], who.visitor_id)] = record
        return {"connection_id": conn["id"], **record, "site_mailbox_fallback": self.mailbox_fallback(conn),
                "direct_transport_proven": False}

    def cmd_continuation_status(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        if "connection_id" not in data:
            return self.global_status(who)
        conn = self.participant_connection(who.visitor_id, data["connection_id"])
        peer = self.peer_of(conn, who.visitor_id)
        return {"scope": "connection", "connection_id": conn["id"], "connection_state": conn["state"],
                "negotiation": self.s["cont_negotiations"].get(self.negotiation_key(conn["id"],
                                                                                    who.visitor_id)),
                "peer_negotiated": self.negotiation_key(conn["id"], peer) in self.s["cont_negotiations"],
                "direct": self.direct_state(conn), "site_mailbox_fallback": self.mailbox_fallback(conn),
                "direct_transport_proven": False, "site": self.site_capabilities()}

    def global_status(self, who: Principal) -> dict[str, Any]:
        """The caller's declaration and plan and its open connections, in no connection's context."""
        conns = sorted((c for c in self.connections_of(who.visitor_id) if c["state"] in OPEN_STATES),
                       key=lambda c: c["id"])
        return {"scope": "global", "declared": self.declared(who.visitor_id),
                "plan": self.plan_view(who.visitor_id),
                "connections": [{"connection_id": c["id"], "connection_state": c["state"],
                                 "direct": self.direct_state(c)}
                                for c in conns],
                "site": self.site_capabilities()}

    # ------------------------------------------------------------------ direct offers

    def offer_state(self, offer: dict[str, Any]) -> str:
        """The stored state, or expired once an open offer's time has passed."""
        if offer["state"] in OPEN_OFFER and self.now_ms() >= offer["expires_at"]:
            return EXPIRED
        return str(offer["state"])

    def offers_of(self, conn_id: str) -> list[dict[str, Any]]:
        return sorted((o for o in self.s["direct_offers"].values() if o["connection_id"] == conn_id),
                      key=lambda o: o["order"])

    def direct_state(self, conn: dict[str, Any]) -> str:
        states = {self.offer_state(o) for o in self.offers_of(conn["id"])}
        return EXCHANGED if EXCHANGED in states else "offered" if states & set(OPEN_OFFER) else "none"

    def offer_view(self, offer: dict[str, Any]) -> dict[str, Any]:
        return {"offer_id": offer["id"], "connection_id": offer["connection_id"], "offered_by": offer["by"],
                "state": self.offer_state(offer), "endpoint": offer["endpoint"],
                "expires_hours": offer["expires_hours"],
                "created_at": iso(offer["created_at"]), "expires_at": iso(offer["expires_at"]),
                "accepted_peer_offer_id": offer["pair"]}

    def check_own_authority(self, who: Principal) -> None:
        """A bound Agent cannot self-grant its owner's permission (a delegation claim is no grant)."""
        if who.kind == ACCOUNT_AGENT:
            raise SiteError(NOT_PERMITTED,
                            "a bound Agent needs its owner's permission; ask the owner "
                            "(continuation_negotiate)")

    def cmd_direct_offer(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        conn = self.participant_connection(who.visitor_id, data["connection_id"])
        self.check_own_authority(who)
        conn = self.active_connection(who, conn["id"])
        self.require_not_stopped(who.visitor_id)
        key = f"{who.visitor_id}|{data['request_key']}"
        earlier = self.s["direct_keys"].get(key)
        if earlier is not None:
            return self.retry_offer(self.s["direct_offers"][earlier], data)
        offer = self.new_offer(who.visitor_id, conn, data)
        self.s["direct_keys"][key] = offer["id"]
        return {"offer": self.offer_view(offer), "replayed": False}

    def retry_offer(self, offer: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        """The same intent again: the same offer, after rechecking it (the connection was
        rechecked already)."""
        if offer["fingerprint"] != fingerprint(data):
            raise SiteError(CONTEXT_CONSUMED, "this request_key was already used with other data")
        state = self.offer_state(offer)
        if state not in LIVE_OFFER:
            raise SiteError(INVALID_STATE, f"the offer is {state}; make a new offer with a new request_key")
        return {"offer": self.offer_view(offer), "replayed": True}

    def new_offer(self, by: str, conn: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        """A pending offer; the caller's earlier open offers in the connection are superseded."""
        for old in self.offers_of(conn["id"]):
            if old["by"] == by and self.offer_state(old) in OPEN_OFFER:
                old["state"] = SUPERSEDED
        hours = data.get("expires_hours",
                         self.branches["direct_offer"]["properties"]["expires_hours"]["default"])
        now = self.now_ms()
        offer = {"id": self.new_uuid(), "connection_id": conn["id"], "by": by,
                 "request_key": data["request_key"],
                 "endpoint": data["endpoint"], "expires_hours": hours, "created_at": now,
                 "expires_at": now + hours * HOUR_MS,
                 "state": PENDING, "pair": None, "fingerprint": fingerprint(data),
                 "order": len(self.s["direct_offers"]) + 1}
        self.s["direct_offers"][offer["id"]] = offer
        return offer

    def side_offer(self, conn: dict[str, Any], offer_id: str, by: str, what: str) -> dict[str, Any]:
        """An offer of this connection made by ``by``; NOT_FOUND for missing, foreign and the
        other side's alike."""
        offer = self.s["direct_offers"].get(offer_id)
        if offer is None or offer["connection_id"] != conn["id"] or offer["by"] != by:
            raise SiteError(NOT_FOUND, f"no such {what} in this connection")
        found: dict[str, Any] = offer
        return found

    def cmd_direct_decide(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        """The caller decides the pair (its own open offer, the peer's open offer); both
        accepting exchanges them."""
        conn = self.active_connection(who, data["connection_id"])
        own = self.side_offer(conn, data["offer_id"], who.visitor_id, "offer of yours")
        peer = self.side_offer(conn, data["peer_offer_id"], self.peer_of(conn, who.visitor_id),
                               "offer of the peer")
        if (data["decision"] == "accept" and own["pair"] == peer["id"]
                and own["state"] in (ACCEPTED, EXCHANGED)):
            return self.decision_view(own, peer)  # the same decision again
        for offer in (own, peer):
            state = self.offer_state(offer)
            if state not in OPEN_OFFER or (state == ACCEPTED
                                           and offer["pair"] not in (own["id"], peer["id"])):
                raise SiteError(INVALID_STATE, f"offer {offer['id']} is {state}")
        if data["decision"] == "decline":
            own["state"] = peer["state"] = DECLINED_OFFER
            return self.decision_view(own, peer)
        own["state"], own["pair"] = ACCEPTED, peer["id"]
        if peer["pair"] == own["id"] and peer["state"] == ACCEPTED:
            own["state"] = peer["state"] = EXCHANGED
        return self.decision_view(own, peer)

    def decision_view(self, own: dict[str, Any], peer: dict[str, Any]) -> dict[str, Any]:
        out = {"offer": self.offer_view(own), "peer_offer": self.offer_view(peer),
               "direct": self.direct_state(self.s["connections"][own["connection_id"]]),
               "direct_transport_proven": False}
        if own["state"] == EXCHANGED:
            out["peer_endpoint"] = peer["endpoint"]
        return out

    def cmd_direct_status(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        conn = self.participant_connection(who.visitor_id, data["connection_id"])
        offers = self.offers_of(conn["id"])
        return {"connection_id": conn["id"], "connection_state": conn["state"],
                "direct": self.direct_state(conn),
                "own_offers": [self.offer_view(o) for o in offers if o["by"] == who.visitor_id],
                "peer_offers": [self.offer_view(o) for o in offers if o["by"] != who.visitor_id],
                "direct_transport_proven": False, "site_mailbox_available": conn["state"] == ACTIVE}

    def cmd_direct_withdraw(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        """Ends the caller's own offer (again: no change); an exchange it was part of ends too."""
        conn = self.participant_connection(who.visitor_id, data["connection_id"])
        offer = self.side_offer(conn, data["offer_id"], who.visitor_id, "offer of yours")
        state = self.offer_state(offer)
        if state not in (*LIVE_OFFER, WITHDRAWN):
            raise SiteError(INVALID_STATE, f"the offer is {state}")
        if state == EXCHANGED and offer["pair"] in self.s["direct_offers"]:
            self.s["direct_offers"][offer["pair"]]["state"] = ENDED
        offer["state"] = WITHDRAWN
        return {"offer": self.offer_view(offer), "direct": self.direct_state(conn)}

    # ------------------------------------------------------------------ plan

    def current_plan(self, visitor_id: str) -> dict[str, Any] | None:
        plan: dict[str, Any] | None = self.s["plans"].get(visitor_id)
        if plan is None or (plan["expires_at"] is not None and self.now_ms() >= plan["expires_at"]):
            return None
        return plan

    def plan_view(self, visitor_id: str) -> dict[str, Any] | None:
        plan = self.current_plan(visitor_id)
        if plan is None:
            return None
        left = None if plan["max_turns"] is None else max(0, plan["max_turns"] - plan["turns_used"])
        return {"plan_id": plan["id"], **plan["commission"], "turns_used": plan["turns_used"],
                "turns_left": left,
                "renewed_at": iso(plan["renewed_at"]),
                "expires_at": iso(plan["expires_at"]) if plan["expires_at"] is not None else None}

    def start_plan(self, plan: dict[str, Any]) -> None:
        """The plan's turns and expiry count from now."""
        now = self.now_ms()
        hours = plan["commission"].get("expires_hours")
        plan.update(renewed_at=now, turns_used=0,
                    expires_at=now + hours * HOUR_MS if hours is not None else None)

    def cmd_plan(self, who: Principal, data: dict[str, Any]) -> dict[str, Any]:
        caller = who.visitor_id
        renewed = False
        if "commission" in data:
            plan = {"id": self.new_uuid(), "commission": dict(data["commission"]),
                    "max_turns": data["commission"].get("max_turns")}
            self.start_plan(plan)
            self.s["plans"][caller] = plan
        elif data.get("renew_current"):
            current = self.current_plan(caller)
            if current is None:
                raise SiteError(INVALID_STATE, "there is no current plan to renew")
            self.start_plan(current)
            renewed = True
        return {"plan": self.plan_view(caller), "renewed": renewed}

    def plan_check_send(self, visitor_id: str) -> None:
        """final_send_checks explicit_budget: a current plan's turns bound the caller's texts."""
        plan = self.current_plan(visitor_id)
        if plan is not None and plan["max_turns"] is not None and plan["turns_used"] >= plan["max_turns"]:
            raise SiteError(NOT_PERMITTED,
                            "the current plan's turns are used up; renew it (plan renew_current) or set a "
                            "new one")

    def plan_count_send(self, visitor_id: str) -> None:
        """A stored text is one turn of the current plan."""
        plan = self.current_plan(visitor_id)
        if plan is not None:
            plan["turns_used"] += 1
