"""Canon's generated inputs as the checks send them: the preparation (the seeded world's
ids, the descriptions' rules) takes every instance the generators draw, valid or broken,
and keeps each what it was drawn to be."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.check import CheckContext
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance, Violation, mutations
from conformance.generation.strategies import strategy_for
from conformance.launch import open_run
from conformance.profiles import load_profile
from conformance.protocols.canon.client import CanonClient
from conformance.protocols.canon.verbs import follow_descriptions, in_world, under

PROFILE = load_profile("canon-verbs")
VERBS = sorted(PROFILE.operations)
SETTINGS = settings(deadline=None, max_examples=12, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def client() -> tuple[CheckContext, CanonClient]:
    run = open_run(PROFILE, "reference", budget="quick")
    requirement = next(r for r in PROFILE.requirements if r.id == "CANON-INPUT-INVALID-SEND-TO")
    ctx = CheckContext(run, requirement)
    return ctx, CanonClient(ctx)


def prepared_break(ctx: CheckContext, c: CanonClient, verb: str, bad: InvalidInstance) -> Any:
    keep = bad.violation.pointer
    return follow_descriptions(ctx, c, verb, in_world(c, verb, bad.instance, keep=keep), keep)


def prepared_valid(ctx: CheckContext, c: CanonClient, verb: str, value: Any) -> Any:
    return follow_descriptions(ctx, c, verb, in_world(c, verb, value))


def test_under_names_the_node_and_what_is_below_it():
    assert under("/messageOptions", "messageOptions")
    assert under("/messageOptions/attachments/0/url", "messageOptions", "attachments", 0)
    assert not under("/messageOptions/attachments", "messageOptions", "attachments", 0)
    assert not under("/messageOptionsX", "messageOptions")
    assert not under("", "text") and not under("\0", "text")


# messageOptions drawn as a list (a type break of the member) crashed the preparation
# ('list' object has no attribute 'get'), reported as the target's failure with no exchange
ODD_OPTIONS = [[{"messageId": "m"}], "text", 12345, None, {"attachments": {"items": []}},
               {"attachments": ["x", 3, None, {"kind": "image"}]}, {"metadata": [1]},
               {"attachments": [{"kind": "image", "url": 7}]}]


@pytest.mark.parametrize("options", ODD_OPTIONS, ids=[json.dumps(o)[:30] for o in ODD_OPTIONS])
def test_send_to_options_of_any_type_are_prepared(client, options):
    ctx, c = client
    value = {"targetConversationId": "abc", "messageOptions": options}
    for keep in ("/messageOptions", "/messageOptions/attachments/0", "\0", ""):
        out = prepared_break(ctx, c, "send_to", InvalidInstance(value, Violation(keep, "type", "odd")))
        assert out["messageOptions"] == options or isinstance(options, dict)
        assert value == {"targetConversationId": "abc", "messageOptions": options}  # the draw is untouched


def test_a_break_under_keep_is_not_mended(client):
    ctx, c = client
    long_text = "é" * 4097
    bad = InvalidInstance({"targetConversationId": "abc", "text": long_text},
                          Violation("/text", "maxLength", "too long"))
    assert prepared_break(ctx, c, "send_to", bad)["text"] == long_text
    no_source = InvalidInstance({"targetConversationId": "abc", "text": "x",
                                 "selfContext": {"type": "cross_session", "context": "c"}},
                                Violation("/sourceConversationId", "dependentRequired", "dropped"))
    assert "sourceConversationId" not in prepared_break(ctx, c, "send_to", no_source)
    # the same instance, valid but for the rule the descriptions add, is made to follow it
    assert prepared_valid(ctx, c, "send_to", {"targetConversationId": "abc", "text": long_text})["text"] \
        == "é" * 2048


@pytest.mark.parametrize("verb", VERBS)
def test_every_drawn_instance_and_each_of_its_breaks_is_prepared(client, verb):
    """For drawn valid inputs of each verb: the valid one prepared stays valid, and each of
    its single-keyword breaks prepared (what CANON-INPUT-INVALID-* sends) raises nothing and
    stays broken (the part it breaks is left as drawn)."""
    ctx, c = client
    schema = PROFILE.operations[verb].params_schema
    judge = validator_for(schema)
    counts = {"valid": 0, "breaks": 0}

    @SETTINGS
    @given(strategy_for(schema))
    def check(value: Any) -> None:
        drawn = json.dumps(value, sort_keys=True)
        valid = prepared_valid(ctx, c, verb, value)
        assert judge.is_valid(valid), (value, valid)
        counts["valid"] += 1
        for bad in mutations(schema, value):
            out = prepared_break(ctx, c, verb, bad)
            json.dumps(out)
            assert not judge.is_valid(out), (bad.violation, bad.instance, out)
            counts["breaks"] += 1
        assert json.dumps(value, sort_keys=True) == drawn  # the draw (shared by a batch) is untouched

    check()
    assert counts["valid"] and counts["breaks"]


@pytest.mark.parametrize("verb", ["send_to"])
def test_breaks_of_every_member_type_are_prepared(client, verb):
    """Each member replaced by a value of every JSON type (what type breaks draw)."""
    ctx, c = client
    base = {"targetConversationId": "abc", "text": "t", "sourceConversationId": "abc",
            "selfContext": {"type": "cross_session", "context": "c"}, "sessionSelection": {"mode": "new"},
            "messageOptions": {"attachments": [{"kind": "image", "url": "u"}], "metadata": {"turnId": None}}}

    @SETTINGS
    @given(st.sampled_from(sorted(base)), st.sampled_from([None, True, 0, 0.5, "s", [], [{}], {}, {"a": 1}]))
    def check(member: str, odd: Any) -> None:
        value = {**base, member: odd}
        out = prepared_break(ctx, c, verb, InvalidInstance(value, Violation(f"/{member}", "type", "odd")))
        assert out[member] == odd

    check()
