"""Each Bindu variant (behaviour the spec allows but the reference does not choose)
really changes what the reference does, so selftest's "no MUST fails on it" proves
something; and each names the spec text that allows it."""

import json
from typing import Any

import pytest

from conformance.run.profiles import load_profile
from tests.unit.test_bindu_reference import LIST_BODY, Agent, _code, _signed_as, _stream, _worked

VARIANTS = load_profile("bindu").variants


def _variant_agent(name: str) -> Agent:
    agent = Agent()
    VARIANTS[name](agent.ref)
    return agent


def _clear_listing(agent: Agent) -> Any:
    task = agent.task()
    agent.rpc("contexts/clear", {"contextId": task["context_id"]})
    return [c["context_id"] for c in agent.rpc("contexts/list", {}).json()["result"]]


def _clear_paused(agent: Agent) -> Any:
    task = _worked(agent, "input-required")
    reply = agent.rpc("contexts/clear", {"contextId": task["context_id"]})
    return _code(reply), _code(agent.rpc("tasks/get", {"taskId": task["id"]}))


PROBES = {
    "feedback_refused_when_open": lambda a: _code(
        a.rpc("tasks/feedback", {"taskId": _worked(a, "working")["id"], "feedback": "ok"})),
    "batch_answered_per_element": lambda a: type(a.post(b'["x", 1]').json()).__name__,
    "anonymous_reads": lambda a: _code(a.rpc("tasks/list", {}, token=None)),
    "extended_card_not_configured": lambda a: _code(a.rpc("agent/getAuthenticatedExtendedCard", {})),
    "signing_keyed_on_x_did": lambda a: _signed_as(a, "did", drop="X-DID").status_code,
    "body_limit_decimal_mb": lambda a: a.post(b" " * (10_200_000)).status_code,
    "clear_refuses_paused": _clear_paused,
    "clear_keeps_paused": _clear_paused,
    "auth_plain_401": lambda a: a.rpc("tasks/list", {}, token=None).json(),
    "expired_as_inactive": lambda a: _code(a.rpc("tasks/list", {}, token="expired")),
    "clear_keeps_empty_context": _clear_listing,
    "stream_status_deltas": lambda a: [e["result"].get("kind") for e in _stream(a)],
    "send_answers_submitted": lambda a: a.send().json()["result"]["status"]["state"],
    "contexts_list_task_ids": lambda a: (a.task(), sorted(a.rpc("contexts/list", {}).json()["result"][0]))[1],
    "notifications_unanswered": lambda a: a.post(b'{"jsonrpc": "2.0", "method": "tasks/list", "params": {}}')
    .status_code,
    "streaming_off": lambda a: (setattr(a.ref.config, "streaming", True),  # the reference as run and served
                                a.http.get("/.well-known/agent.json").json()["capabilities"]["streaming"],
                                _code(a.rpc("message/stream", {"message": {}})))[1:],
}


def test_every_variant_has_a_probe_and_an_allowing_text() -> None:
    assert set(VARIANTS) == set(PROBES)
    for name, fn in VARIANTS.items():
        assert "allowed by: /" in (fn.__doc__ or ""), name


@pytest.mark.parametrize("name", sorted(PROBES))
def test_variant_changes_behaviour(name: str) -> None:
    clean = PROBES[name](Agent())
    varied = PROBES[name](_variant_agent(name))
    assert clean != varied, f"{name}: no observable difference ({clean!r})"


def test_batch_variant_answers_each_element_with_invalid_request() -> None:
    answers = _variant_agent("batch_answered_per_element").post(json.dumps(["x", LIST_BODY]).encode()).json()
    assert [a.get("error", {}).get("code") for a in answers] == [-32600, None]
    assert answers[0]["id"] is None and answers[1]["result"] == []


def test_anonymous_reads_still_check_a_token_that_is_sent() -> None:
    assert _code(_variant_agent("anonymous_reads").rpc("tasks/list", {}, token="bogus"))[1] == -32010


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
