"""Bindu's variants (behaviours the spec allows but the reference does not choose):
each names the spec text that allows it, and the ones whose behaviour is more than
"it differs" do what their docstring says. That each changes what its MUST rows meet
is the selftest's (a variant whose seam no run of it uses is dead: proofs/selftest.py,
tests/e2e/test_selftest.py)."""

import json

from conformance.run.profiles import load_profile
from tests.unit.test_bindu_reference import LIST_BODY, Agent, error_of

VARIANTS = load_profile("bindu").variants


def _variant_agent(name: str) -> Agent:
    agent = Agent()
    VARIANTS[name](agent.ref)
    return agent


def test_every_variant_names_the_spec_text_that_allows_it() -> None:
    """By a pointer into the document (the selftest asks only for "allowed by")."""
    assert VARIANTS
    for name, fn in VARIANTS.items():
        assert "allowed by: /" in (fn.__doc__ or ""), name


def test_batch_variant_answers_each_element_with_invalid_request() -> None:
    answers = _variant_agent("batch_answered_per_element").post(json.dumps(["x", LIST_BODY]).encode()).json()
    assert [a.get("error", {}).get("code") for a in answers] == [-32600, None]
    assert answers[0]["id"] is None and answers[1]["result"] == []


def test_anonymous_reads_still_check_a_token_that_is_sent() -> None:
    assert error_of(_variant_agent("anonymous_reads").rpc("tasks/list", {}, token="bogus"))[1] == -32010


def test_submitted_variant_has_run_the_agent_by_the_next_request() -> None:
    """The task message/send answered as submitted is where the agent took it by tasks/get."""
    agent = _variant_agent("send_answers_submitted")
    task = agent.send().json()["result"]
    assert task["status"]["state"] == "submitted"
    got = agent.rpc("tasks/get", {"taskId": task["id"]}).json()["result"]
    assert got["status"]["state"] == "completed" and len(got["history"]) == 2


def test_submitted_variant_still_waits_when_asked_to_block() -> None:
    answer = _variant_agent("send_answers_submitted").send(
        configuration={"acceptedOutputModes": ["text/plain"], "blocking": True}).json()["result"]
    assert answer["status"]["state"] == "completed"
