"""Wever Connect verdicts on answers of other shapes (issue 23). The manifest names one
answer field of the HTTP actions (the token's), so the MUST rows read answers by content
(conformance/protocols/wever/answers.py): ids by the input schemas' patterns, states by the
keys of protocols.a2a.state_mapping, a check's own tasks by the marker it sent. These
tests hold the readers to that, and the MUST rows to it where the profile's ``shapes:``
block cannot show it: A2A's names are global there, so the action answers' ``task``,
``state`` and ``tasks`` keys are never renamed by the generated variants."""

from __future__ import annotations

from typing import Any

import pytest

import conformance.kit.shapes as shapes
from conformance.proofs.selftest import crashes
from conformance.protocols.wever import answers
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict, execute

PROFILE = load_profile("wever-connect")
VOCAB = answers.vocabulary(PROFILE)
TASK_ID, OTHER_ID = "task_" + "a" * 32, "task_" + "b" * 32
MAILBOX_ID = "mbx_" + "c" * 24


def test_the_vocabulary_is_the_manifests() -> None:
    actions = PROFILE.spec["actions"]
    a2a = PROFILE.spec["protocols"]["a2a"]
    assert VOCAB.task_id.pattern == actions["accept_task"]["inputSchema"]["properties"]["task_id"]["pattern"]
    assert (VOCAB.mailbox_id.pattern
            == actions["request_connection"]["inputSchema"]["properties"]["recipient_id"]["pattern"])
    assert (VOCAB.request_id.pattern
            == actions["respond_connection_request"]["inputSchema"]["properties"]["request_id"]["pattern"])
    assert VOCAB.states == tuple(a2a["state_mapping"])
    assert VOCAB.token_field == a2a["access_setup"]["token_response_field"]
    with pytest.raises(ValueError):
        VOCAB.state("submitted")  # an A2A state, not a Connect one


@pytest.mark.parametrize("answer", [
    {"task": {"task_id": TASK_ID, "state": "offered"}},
    {"item": {"id": TASK_ID}, "status": "offered"},  # the state lifted beside its object
    {"entry": {"record": {"taskId": TASK_ID, "lifecycle": {"now": "offered"}}}},
])
def test_a_task_is_found_by_its_id_and_state_wherever_they_sit(answer: Any) -> None:
    assert answers.ids(answer, VOCAB.task_id) == [TASK_ID]
    assert answers.state_in(answer, VOCAB.states) == "offered"


def test_a_state_is_the_nearest_one_and_none_when_the_nearest_disagree() -> None:
    assert (answers.state_in({"state": "accepted", "history": [{"state": "offered"}]}, VOCAB.states)
            == "accepted")
    assert answers.state_in({"state": "accepted", "was": "offered"}, VOCAB.states) is None
    assert answers.state_in({"task_id": TASK_ID}, VOCAB.states) is None
    assert answers.state_in("not an object", VOCAB.states) is None


def test_the_tasks_carrying_a_marker_are_the_checks_own() -> None:
    marker = "conformance marker 0123456789ab"
    inbox = {"items": [{"id": TASK_ID, "data": {"m": marker}},
                       {"id": OTHER_ID, "data": {"m": "someone else's"}}]}
    assert answers.owners(inbox, marker, VOCAB.task_id) == {TASK_ID}
    assert answers.owners({"tasks": [{"id": OTHER_ID}]}, marker, VOCAB.task_id) == set()
    flat = {"tasks": [TASK_ID, OTHER_ID], "contents": {"m": marker}}  # no item holds the marker and one id
    assert answers.owners(flat, marker, VOCAB.task_id) == set()


def test_a_digest_is_a_long_hex_or_base64_string_that_is_no_id() -> None:
    hexed, based = "sha256:" + "0f" * 32, "sha-256=" + "A" * 43 + "="
    assert answers.digests({"d": hexed, "id": TASK_ID, "m": MAILBOX_ID},
                         (VOCAB.task_id, VOCAB.mailbox_id)) == [hexed]
    assert answers.digests({"integrity": {"value": based}}, (VOCAB.task_id,)) == [based]
    assert answers.digests({"note": "conformance marker 0123456789ab", "at": "2026-03-10T12:00:00Z"},
                           ()) == []


def test_a_listing_is_the_list_whose_items_carry_the_known_ids() -> None:
    answer = {"x": {"capabilities": ["a.b"]}, "profiles": [{"id": MAILBOX_ID, "capabilities": ["a.b"]}]}
    assert answers.listing_ids(answer, [MAILBOX_ID], VOCAB.mailbox_id) == [[MAILBOX_ID]]
    assert answers.named_values({"wrap": {VOCAB.token_field: "t"}}, VOCAB.token_field) == ["t"]


def _verdicts(binding: str, shape_seed: int) -> dict[str, Verdict]:
    run = open_run(PROFILE, "reference", budget="quick", shrink=False, shapes=shape_seed, binding=binding)
    try:
        return {req.id: execute(req, run) for req in PROFILE.requirements}
    finally:
        run.http.close()


def test_the_action_answers_do_not_speak_a2as_vocabulary() -> None:
    """A2A's names (``task``, ``state``, ``tasks``, ``status``) are named on the A2A adapter
    and the agent card only (``shapes: paths:``): the shape variants rewrite them in the
    action answers, where the manifest names no shape (the selftest's shape runs then
    prove every MUST holds)."""
    rules = shapes.rules_of(PROFILE)
    actions = rules.at_path("/v1/actions/get_task")
    assert not {"task", "state", "tasks", "status"} & actions.named
    assert VOCAB.token_field in actions.named
    assert {"task", "status", "history"} <= rules.at_path("/a2a").named
    assert "capabilities" in rules.at_path("/.well-known/agent-card.json").named
    assert rules.at_path("/a2a").codes == rules.codes

def test_every_member_renamed_crashes_no_check(monkeypatch: Any) -> None:
    """Every answer member renamed, A2A's too (nothing named): checks fail or block with
    findings, and none raises."""
    monkeypatch.setattr(shapes, "rules_of",
                        lambda profile: shapes.ShapeRules(frozenset(), keep_paths=("/openapi.json",)))
    verdicts = _verdicts("mcp", 1)
    assert [f"{rid}: {c}" for rid, v in verdicts.items() for c in crashes(v)] == []
    findings = [f for v in verdicts.values() if v.status in ("failed", "blocked") for f in v.failures]
    assert any(f.kind == "malformed_answer" for f in findings)
