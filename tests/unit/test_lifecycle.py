"""The generic lifecycle machine's table (conformance/checks/lifecycle.py): how a
profile's `lifecycle:` block reads, and which states each transition leaves from."""

from __future__ import annotations

from conformance.checks.lifecycle import Transition, read_transitions
from conformance.protocols.bindu.states import terminal_states
from conformance.run.profiles import load_profile

TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})


def test_sources_open_terminal_any_and_lists():
    assert Transition("x", "open", "same").allowed_from("working", TERMINAL)
    assert not Transition("x", "open", "same").allowed_from("completed", TERMINAL)
    assert Transition("x", "terminal", "same").allowed_from("failed", TERMINAL)
    assert Transition("x", "any", "same").allowed_from("completed", TERMINAL)
    listed = Transition("x", ("offered",), "accepted", "NotOffered")
    assert listed.allowed_from("offered", TERMINAL) and not listed.allowed_from("accepted", TERMINAL)


def test_the_bindu_table_reads_from_the_profile():
    profile = load_profile("bindu")
    table = read_transitions(profile.settings["lifecycle"])
    assert table["tasks/cancel"] == Transition("tasks/cancel", "open", "canceled", "TaskNotCancelable")
    # may succeed or be refused off a completed task: a Bindu rule checks it
    assert "tasks/feedback" not in table
    assert terminal_states(profile.spec) == TERMINAL  # read from the spec, as the machine uses it
    for t in table.values():  # every refusal names an error of the spec's catalog
        assert t.refused is None or any(e.name == t.refused for e in profile.errors.values())
    assert set(profile.settings["lifecycle"]["start"]) <= set(
        profile.spec["components"]["schemas"]["TaskStatus"]["properties"]["state"]["enum"])
