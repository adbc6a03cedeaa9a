"""The Agent Plaza continuation part: its rows (conformance/protocols/plaza/continuation.py,
continuation_direct.py) are sound and in the table, and the reference's mixin
(reference/continuation.py) behaves as
docs/agent-plaza.md says: declarations grant nothing, offers expire and are rechecked on
retry, a decision names both offers, plan renews and bounds texts. That the rows pass
against the clean reference and catch each fault is tests/e2e/test_selftest.py's."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.kit.declare import REGISTRY
from conformance.model import Profile, Requirement
from conformance.protocols.plaza import continuation, continuation_direct
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.reference.continuation import HOUR_MS, ContinuationPart
from conformance.protocols.plaza.site import (
    ACCOUNT_AGENT,
    ACTIVE,
    CONTEXT_CONSUMED,
    INVALID_STATE,
    NOT_FOUND,
    NOT_PERMITTED,
    Principal,
    SiteError,
    seeded_visitor,
)
from conformance.run.profiles import load_profile

MODULES = (continuation.__name__, continuation_direct.__name__)
FAULTS = REGISTRY.faults_of(MODULES)


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile("agent-plaza")


@pytest.fixture(scope="module")
def rows(profile: Profile) -> list[Requirement]:
    """The rows the continuation modules declare."""
    assert all(REGISTRY.requirements.get(module) for module in MODULES), MODULES  # each declares rows
    return REGISTRY.rows(profile, MODULES)


@pytest.fixture
def ref(profile: Profile) -> PlazaReference:
    return PlazaReference(profile)


def who(ref: PlazaReference, label: str, kind: str = "visitor") -> Principal:
    return Principal(seeded_visitor(label)[0], frozenset(ref.supported_scopes), kind)


def friends(ref: PlazaReference, a: str = "alice", b: str = "bob") -> str:
    conn = ref.open_connection(seeded_visitor(a)[0], seeded_visitor(b)[0])
    conn["state"] = ACTIVE
    return str(conn["id"])


def endpoint() -> dict[str, Any]:
    return {"protocol": "agent-plaza-direct/1", "public_key": {"kty": "OKP", "crv": "Ed25519", "x": "A" * 43}}


def offer(ref: PlazaReference, label: str, conn: str, key: str = "", **extra: Any) -> dict[str, Any]:
    data = {"operation": "direct_offer", "connection_id": conn, "request_key": key or ref.new_uuid(),
            "endpoint": endpoint(), **extra}
    return ref.cmd_direct_offer(who(ref, label), data)


def refused(name: str, call: Any, *args: Any) -> None:
    with pytest.raises(SiteError) as err:
        call(*args)
    assert err.value.name == name, err.value.message


def test_the_rows_are_sound(rows: list[Requirement]) -> None:
    named = {f for r in rows for f in r.faults}
    assert all(r.faults for r in rows)
    assert named == set(FAULTS), (named ^ set(FAULTS))


def test_the_rows_are_in_the_table(profile: Profile, rows: list[Requirement]) -> None:
    assert {r.id for r in rows} <= {r.id for r in profile.requirements}


def test_every_continuation_command_is_served(ref: PlazaReference) -> None:
    ops = ref.spec["friendContinuation"]["operations"]
    assert set(ops) | {"plan"} == set(ContinuationPart.PART_COMMANDS)
    assert all(callable(getattr(ref, f"cmd_{name}")) for name in ContinuationPart.PART_COMMANDS)


def test_declarations_take_the_schema_defaults_and_grant_nothing(ref: PlazaReference) -> None:
    alice = who(ref, "alice")
    out = ref.cmd_continuation_capabilities(alice, {"operation": "continuation_capabilities",
                                                    "document": {"direct_send": True}})
    assert out["declared"]["site_mailbox"] is True and out["declared"]["direct_send"] is True
    assert not any(v for k, v in out["declared"].items() if k not in ("site_mailbox", "direct_send"))
    pending = ref.open_connection(alice.visitor_id, seeded_visitor("bob")[0])["id"]
    refused(NOT_PERMITTED, offer, ref, "alice", pending)
    bound = Principal(alice.visitor_id, alice.scopes, ACCOUNT_AGENT)
    data = {"operation": "direct_offer", "connection_id": friends(ref), "request_key": ref.new_uuid(),
            "endpoint": endpoint(),
            "external_owner_delegation": True}
    refused(NOT_PERMITTED, ref.cmd_direct_offer, bound, data)


def test_global_status_needs_no_connection(ref: PlazaReference) -> None:
    conn = friends(ref)
    out = ref.cmd_continuation_status(who(ref, "alice"), {"operation": "continuation_status"})
    assert out["scope"] == "global" and [c["connection_id"] for c in out["connections"]] == [conn]
    refused(NOT_FOUND, ref.cmd_continuation_status, who(ref, "carol"),
            {"operation": "continuation_status", "connection_id": conn})


def test_routing_refuses_task_and_recipient_on_continuation_commands(ref: PlazaReference) -> None:
    data = {"operation": "direct_status", "connection_id": "x"}
    assert ref.continuation_route_issues({"taskId": "t", "parts": [{"data": data}]}, data)
    assert ref.continuation_route_issues({"metadata": {ref.ext: {"recipientId": "r"}}}, data)
    assert not ref.continuation_route_issues({"taskId": "t"}, {"operation": "read_conversation"})


def test_retries_answer_the_same_offer_and_are_rechecked(ref: PlazaReference) -> None:
    conn = friends(ref)
    key = ref.new_uuid()
    data = {"operation": "direct_offer", "connection_id": conn, "request_key": key, "endpoint": endpoint()}
    first = ref.cmd_direct_offer(who(ref, "alice"), data)
    again = ref.cmd_direct_offer(who(ref, "alice"), dict(data))
    assert again["offer"]["offer_id"] == first["offer"]["offer_id"] and again["replayed"] is True
    refused(CONTEXT_CONSUMED, ref.cmd_direct_offer, who(ref, "alice"), {**data, "expires_hours": 2})
    ref.cmd_direct_withdraw(who(ref, "alice"), {"operation": "direct_withdraw", "connection_id": conn,
                                                "offer_id": first["offer"]["offer_id"]})
    refused(INVALID_STATE, ref.cmd_direct_offer, who(ref, "alice"), dict(data))
    later = offer(ref, "alice", conn, key2 := ref.new_uuid())
    ref.s["connections"][conn]["state"] = "removed"
    refused(NOT_PERMITTED, offer, ref, "alice", conn, key2)
    assert later["replayed"] is False


def test_a_decision_names_both_offers_and_an_exchange_proves_nothing(ref: PlazaReference) -> None:
    conn = friends(ref)
    mine = offer(ref, "alice", conn)["offer"]["offer_id"]

    def decide(label: str, own: str, peer: str) -> dict[str, Any]:
        return ref.cmd_direct_decide(who(ref, label),
                                     {"operation": "direct_decide", "connection_id": conn, "offer_id": own,
                                      "peer_offer_id": peer, "decision": "accept"})

    refused(NOT_FOUND, decide, "alice", mine, ref.new_uuid())
    peer = offer(ref, "bob", conn)["offer"]["offer_id"]
    refused(NOT_FOUND, decide, "alice", peer, mine)
    assert decide("alice", mine, peer)["direct"] == "offered"
    done = decide("bob", peer, mine)
    assert done["direct"] == "exchanged" and done["direct_transport_proven"] is False
    status = ref.cmd_continuation_status(who(ref, "alice"),
                                         {"operation": "continuation_status", "connection_id": conn})
    assert status["site_mailbox_fallback"]["available"] is True


def test_offers_expire_after_their_hours(ref: PlazaReference) -> None:
    conn = friends(ref)
    short = offer(ref, "alice", conn, expires_hours=1)["offer"]
    default = offer(ref, "bob", conn)["offer"]
    assert default["expires_hours"] == ref.branches["direct_offer"]["properties"]["expires_hours"]["default"]
    ref.control_advance_clock({"seconds": HOUR_MS // 1000 + 1})  # past the hour, whatever keeps the clock
    states = {o["offer_id"]: o["state"] for o in ref.cmd_direct_status(who(ref, "alice"), {
        "operation": "direct_status", "connection_id": conn})["own_offers"]}
    assert states[short["offer_id"]] == "expired"
    peer_states = [o["state"] for o in ref.cmd_direct_status(who(ref, "bob"), {
        "operation": "direct_status", "connection_id": conn})["own_offers"]]
    assert peer_states == ["pending"]


def test_plan_renews_and_bounds_texts(ref: PlazaReference) -> None:
    alice = who(ref, "alice")
    refused(INVALID_STATE, ref.cmd_plan, alice, {"operation": "plan", "renew_current": True})
    out = ref.cmd_plan(alice, {"operation": "plan",
                               "commission": {"goal": "Plan", "max_turns": 1, "expires_hours": 1}})
    assert out["plan"]["turns_left"] == 1
    ref.plan_check_send(alice.visitor_id)
    ref.plan_count_send(alice.visitor_id)
    refused(NOT_PERMITTED, ref.plan_check_send, alice.visitor_id)
    assert ref.cmd_plan(alice, {"operation": "plan", "renew_current": True})["plan"]["turns_left"] == 1
    ref.control_advance_clock({"seconds": HOUR_MS // 1000})
    assert ref.cmd_plan(alice, {"operation": "plan"})["plan"] is None
    refused(INVALID_STATE, ref.cmd_plan, alice, {"operation": "plan", "renew_current": True})
