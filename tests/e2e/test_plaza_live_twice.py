"""Two live Agent Plaza runs in a row against one site without control (issue 45): the same
verdicts both times, nothing left behind, nothing of the operator's touched.

The site is the reference served without control, showing the behaviours an independent
implementation showed (conformance/protocols/plaza/variants.py): inbox notices that name an
event id and the peer rather than the connection, receive items without read_request,
attention counts under ``counts``, half an inbox cursor refused, block without a send effect,
a declined invitation's task REJECTED. Before the first run the operator's own state is put
on the site: alice's active friendship with a visitor the run does not know (with its texts),
carol's pending invitation from that visitor, and an old, removed connection between alice and
bob whose notices (event ids, the peer's id) sit in bob's inbox. A notice taken for a
connection had made the kit send thousands of remove and unblock calls naming event ids, and a
second run mark most rows untested for harm."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from conformance.proofs.liverun import LiveRun, compare_holdings, run_without_control
from conformance.protocols.plaza.client import RECEIVER_NAMESPACE
from conformance.protocols.plaza.site import ACTIVE, REMOVED, reference_credentials
from conformance.run import launch
from conformance.run.profiles import load_profile

PROFILE = "agent-plaza"
VARIANTS = ("notices_name_events", "receive_items_without_read_requests", "attention_counts_nested",
            "inbox_cursor_refused_unless_paired", "block_without_send_effect", "declined_invitation_rejected")
SITE_DEADLINE_S = 3.0  # the blocking send's wait: shorter than the document's 20 s (no row judges its length)
STOPS = ["PLAZA-STOP", "PLAZA-STOP-CODE", "PLAZA-CMD-VALID-STOP", "PLAZA-CMD-INVALID-STOP"]
PLANS = ["PLAZA-PLAN", "PLAZA-PLAN-BUDGET", "PLAZA-CMD-VALID-PLAN", "PLAZA-CMD-INVALID-PLAN"]
SEED = 1


def operators_state(ref: Any) -> dict[str, Any]:
    """What the operator had on the site before the kit came: returns the ids to watch."""
    creds = reference_credentials()
    alice, bob, carol = (creds[label]["id"] for label in ("alice", "bob", "carol"))
    with ref.lock:
        friend, _ = ref.add_visitor("the operator's friend", ["gardening"])
        ours = ref.open_connection(alice, friend["id"])
        ref.store_message(ours, friend["id"], "an invitation the operator accepted", str(uuid.uuid4()))
        ref.set_state(ours, ACTIVE, alice, "accepted")
        ref.store_message(ours, alice, "a reply of the operator's", str(uuid.uuid4()))
        pending = ref.open_connection(friend["id"], carol)
        ref.store_message(pending, friend["id"], "an invitation carol has not decided", str(uuid.uuid4()))
        old = ref.open_connection(alice, bob)
        ref.store_message(old, alice, "long ago", str(uuid.uuid4()))
        ref.set_state(old, ACTIVE, bob, "accepted")
        ref.set_state(old, REMOVED, alice, "removed")  # bob's inbox holds its notices: event ids, alice's id
    return {"connections": {c["id"]: (c["state"], len(c["messages"])) for c in (ours, pending, old)},
            "notices": sum(len(n) for n in ref.s["notices"].values())}


def snapshot(ref: Any, ids: Any) -> dict[str, Any]:
    conns = ref.s["connections"]
    return {cid: (conns[cid]["state"], len(conns[cid]["messages"])) for cid in ids}


@pytest.fixture(scope="module")
def twice() -> tuple[LiveRun, LiveRun, dict[str, Any], Any, list[tuple[Any, Any, str]]]:
    profile = load_profile(PROFILE)
    app = launch.reference_app(profile, VARIANTS, control=False, deadline_s=SITE_DEADLINE_S)
    ref = app.state.reference
    before = operators_state(ref)
    controls: list[tuple[Any, Any, str]] = []  # every friend_control the site served: (id, decision, run)
    which = {"run": "first"}
    served = ref.cmd_friend_control

    def friend_control(who: Any, data: dict[str, Any]) -> Any:
        controls.append((data.get("connection_id"), data.get("decision"), which["run"]))
        return served(who, data)

    ref.cmd_friend_control = friend_control
    with pytest.MonkeyPatch.context() as patch:  # both runs are served by this one site
        patch.setattr(launch, "reference_app", lambda *args, **kwargs: app)
        first = run_without_control(PROFILE, faults=VARIANTS, seed=SEED, deadline_s=SITE_DEADLINE_S)
        which["run"] = "second"
        second = run_without_control(PROFILE, faults=VARIANTS, seed=SEED, deadline_s=SITE_DEADLINE_S)
    return first, second, before, ref, controls


def verdicts(live: LiveRun) -> dict[str, tuple[str, str]]:
    return {r.id: (v.status, v.reason) for r, v in live.verdicts}


def test_the_second_run_gives_the_first_runs_verdicts(twice):
    first, second, *_ = twice
    assert verdicts(second) == verdicts(first)
    for live in (first, second):
        bad = [(r.id, v.status, v.message[:200]) for r, v in live.verdicts
               if r.level == "MUST" and v.status in ("failed", "blocked")]
        assert bad == []
        harm = sorted(r.id for r, v in live.verdicts if v.status == "untested" and v.reason == "harm")
        assert harm == sorted(STOPS + PLANS), harm  # only what cannot be undone, as in the first run
        assert live.reached >= 0.9 * live.testable, live.figures()


def test_nothing_is_left_behind(twice):
    first, second, *_ = twice
    assert first.run.not_put_back == [] and second.run.not_put_back == []
    assert first.problems == []
    # the site as the operator had it before the first run, after the second
    assert compare_holdings(first.before, second.after) == []
    # the second run moved only its own receivers: the client_key it derives from its seed (the
    # document: generate once and reuse it), which the first run made
    creds = reference_credentials()
    own = {str(uuid.uuid5(RECEIVER_NAMESPACE, f"{SEED}/{creds[label]['id']}"))
           for label in ("alice", "bob", "carol")}
    assert [p for p in second.problems if not any(f"receiver {key} " in p for key in own)] == []


def test_nothing_of_the_operators_is_touched(twice):
    _, _, before, ref, controls = twice
    assert snapshot(ref, before["connections"]) == before["connections"]
    # every friend_control named a connection, and none of the operator's
    assert [c for c in controls if c[0] not in ref.s["connections"]] == []
    assert [c for c in controls if c[0] in before["connections"]] == []
    # the second run ended what it made, no more: about as many controls as the first
    counts = {run: sum(1 for c in controls if c[2] == run) for run in ("first", "second")}
    assert counts["second"] <= 1.2 * counts["first"], counts
