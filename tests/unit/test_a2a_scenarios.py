"""The config's ``scenarios:`` drive the target's agent with the message the user wrote: the
kit fills in only what it leaves out, and keeps a configured messageId as the start of a
unique one (the proto makes a messageId the creator's and unique per message; section 3.3.1
lets an agent take a repeated one for a duplicate), so an agent routing on its message ids
is driven and never sees the same id twice."""

from __future__ import annotations

from types import SimpleNamespace

from conformance.protocols.a2a.client import A2AClient


def client(scenarios: dict) -> A2AClient:
    c = A2AClient.__new__(A2AClient)
    c.ctx = SimpleNamespace(run=SimpleNamespace(control_path=None, scenarios=scenarios))  # type: ignore[assignment]
    return c


def test_a_configured_message_is_sent_as_written_with_its_message_id_kept_as_a_unique_ones_start():
    scenario = {"messageId": "tck-input-required", "parts": [{"text": "book a table"}],
                "metadata": {"example.com/case": "ir"}}
    c = client({"input_required": scenario})
    sent = [c.drive("input_required") for _ in range(3)]
    ids = [m["messageId"] for m in sent]
    assert all(i.startswith("tck-input-required-") for i in ids) and len(set(ids)) == 3, ids
    for m in sent:
        assert m["parts"] == [{"text": "book a table"}] and m["metadata"] == {"example.com/case": "ir"}
        assert m["role"] == "ROLE_USER"  # filled in: the scenario leaves it out
    follow = c.drive("input_required", taskId="task-1", contextId="ctx-1")
    assert (follow["taskId"], follow["contextId"]) == ("task-1", "ctx-1")
    assert follow["messageId"].startswith("tck-input-required-")


def test_what_a_scenario_leaves_out_is_the_kits_and_a_completed_scenario_is_used_when_given():
    c = client({"failed": {"parts": [{"text": "fail"}]}, "completed": "What is 2 + 2?"})
    failed = c.drive("failed")
    assert failed["messageId"].startswith("conformance-") and failed["parts"] == [{"text": "fail"}]
    assert c.drive("completed")["parts"] == [{"text": "What is 2 + 2?"}]
    assert client({}).drive("completed")["parts"] == [{"text": "hello from the conformance kit"}]
