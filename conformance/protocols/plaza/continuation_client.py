"""Continuation as a client drives it, for the rows of continuation.py and
continuation_direct.py and the part-2 state machines: an offer made, decided or
withdrawn, the endpoint a command's branch names, the fields and id of an offer read by
content, and the clock advanced where control allows."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator
from typing import Any

from conformance.kit import locate
from conformance.kit.check import CheckContext, CheckFailed
from conformance.kit.declare import chosen
from conformance.kit.faults import replaces
from conformance.protocols.plaza.client import PlazaClient, fresh_id
from conformance.protocols.plaza.parts import CONTINUATION, minted, require, sent_strings
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import Principal
from conformance.transport.binding import Reply

HOUR_S = 3600
COMMANDS = "/schemas/command/anyOf"
FC = "/friendContinuation"
GLOBAL_COMMANDS = ("continuation_capabilities", "continuation_status")
Data = dict[str, Any]
DOCS = chosen("docs/agent-plaza.md#continuation")


# ----------------------------------------------------------------------------------------------
# helpers: answers are untrusted, another shape is a finding that quotes it
# ----------------------------------------------------------------------------------------------
def branch(ctx: CheckContext, name: str) -> dict[str, Any]:
    """The schema branch of a command (read from the document, never typed again)."""
    return dict(next(b for b in ctx.profile.spec["schemas"]["command"]["anyOf"]
                     if b["properties"]["operation"]["const"] == name))


def walk(value: Any) -> Iterator[Any]:
    """Every value inside an answer (depth-bounded, breadth first)."""
    return (found.value for found in locate.walk(value))


def reported(answer: Any, key: str) -> list[Any]:
    """Every value the answer reports under ``key`` (a name the document gives), at any depth."""
    return [v[key] for v in walk(answer) if isinstance(v, dict) and key in v]


def leaves(answer: Any) -> dict[tuple[Any, ...], Any]:
    """The plain values of an answer by their place (two answers of one command share places)."""
    return {f.path: f.value for f in locate.walk(answer) if f.value is None
            or isinstance(f.value, str | int | float | bool)}


def flipped(a: Any, b: Any) -> list[tuple[Any, ...]]:
    """The places where one answer holds a boolean the other holds negated."""
    left, right = leaves(a), leaves(b)
    return [p for p, v in left.items() if isinstance(v, bool) and isinstance(right.get(p), bool)
            and right[p] is not v]


def endpoint(ctx: CheckContext) -> dict[str, Any]:
    """A direct endpoint the schema accepts: its protocol, first receive mode, an Ed25519 key."""
    require(ctx, CONTINUATION)  # the offer machine's first call: the part must be served
    props = branch(ctx, "direct_offer")["properties"]["endpoint"]["properties"]
    key = props["public_key"]["properties"]
    x = base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
    return {"protocol": props["protocol"]["const"], "receive_mode": props["receive_mode"]["enum"][0],
            "url": "https://agent.example/direct",
            "public_key": {"kty": key["kty"]["const"], "crv": key["crv"]["const"], "x": x}}


def offer_fields(ctx: CheckContext, connection: str, key: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"connection_id": connection, "request_key": key or fresh_id(), "endpoint": endpoint(ctx), **extra}


def offer_id(c: PlazaClient, reply: Reply, what: str) -> str:
    """The id of the offer an answer made (a decision and a withdrawal must name it): the
    UUID the target minted, not one its request carried (the connection, the request_key)
    nor an agent's."""
    data = c.data_of(reply, what)
    found = minted(c.ctx, data, sent_strings(reply))
    if not found:
        raise CheckFailed(f"{what}: " + locate.Search("an offer id the target minted (a UUID the request did "
                                                      "not carry and no agent's)").looked_for(data),
                          "malformed_answer")
    return found[0]


def make_offer(c: PlazaClient, who: str, connection: str, what: str, **extra: Any) -> str:
    with c.ctx.setup(what, by="PLAZA-DIRECT-OFFER"):
        return offer_id(c, c.command("direct_offer", offer_fields(c.ctx, connection, **extra), who), what)


def decide(c: PlazaClient, who: str, connection: str, own: str, peer: str, decision: str = "accept") -> Reply:
    return c.command("direct_decide",
                     {"connection_id": connection, "offer_id": own, "peer_offer_id": peer,
                      "decision": decision}, who)


def withdraw(c: PlazaClient, who: str, connection: str, offer: str) -> Reply:
    return c.command("direct_withdraw", {"connection_id": connection, "offer_id": offer}, who)


def needs_control(c: PlazaClient, why: str) -> None:
    if c.live():
        c.ctx.needs_control(why)


def advance(c: PlazaClient, seconds: int) -> None:
    c.ctx.control("advance_clock", seconds=seconds)


def as_participant(ref: PlazaReference, method: Callable[..., Any]) -> None:
    """For a fault: ``ref.<method>`` runs as a participant of the connection named, whoever calls."""
    @replaces(method)
    def run(original: Any, who: Principal, data: Data) -> Any:
        conn = ref.s["connections"].get(data.get("connection_id"))
        if conn is not None and who.visitor_id not in (conn["inviter"], conn["invitee"]):
            who = Principal(conn["inviter"], who.scopes, who.kind)
        return original(who, data)
