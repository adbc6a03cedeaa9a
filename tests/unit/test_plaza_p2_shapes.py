"""The content readers of Agent Plaza's part 2 (groups.py) never crash on odd answers. That
every MUST passes on the shape variants, and the shape rows fail on one, is
test_selftest.py's test_no_must_rests_on_a_shape_the_profile_chose."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from conformance.kit.check import CheckContext, CheckFailed
from conformance.model import Profile
from conformance.protocols.plaza.groups_client import ack_fields, seqs_of
from conformance.protocols.plaza.parts import minted
from conformance.run.profiles import load_profile


@functools.cache
def profile() -> Profile:
    return load_profile("agent-plaza")


class Ctx:
    """Enough of a CheckContext for the readers: the profile and the run's credentials."""

    def __init__(self) -> None:
        self.profile = profile()
        self.run = type("Run", (),
                        {"credentials": {"alice": {"id": "11111111-1111-4111-8111-111111111111"}}})()


def ctx() -> Any:
    return Ctx()


ODD: list[Any] = [None, 7, "x", [], {}, [[[]]], {"a": {"b": [1, "2", None]}}, {"seq": True}]


@pytest.mark.parametrize("answer", ODD)
def test_the_readers_never_crash_on_odd_answers(answer: Any) -> None:
    c: CheckContext = ctx()
    assert minted(c, answer) == []
    assert ack_fields(c, answer, "k") is None
    with pytest.raises(CheckFailed):
        seqs_of(c, [answer, answer], "a page")


def test_minted_ids_are_the_ones_the_request_did_not_carry() -> None:
    c: CheckContext = ctx()
    sent, made = "22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333"
    answer = {"x": {"owner": "11111111-1111-4111-8111-111111111111", "connection": sent,
                    "deep": [{"id": made}]}}
    assert minted(c, answer, {sent}) == [made]


def test_a_batch_is_found_wherever_it_sits() -> None:
    c: CheckContext = ctx()
    key, batch = "44444444-4444-4444-8444-444444444444", "55555555-5555-4555-8555-555555555555"
    view, receipt = "a" * 64, "B" * 43
    for answer in ({"batch": {"batch_id": batch, "view_id": view, "receipt": receipt,
                              "items": [{"id": key}]}},
                   {"client_key": key,
                    "wrapped": {"entry": {"batchId": batch, "viewId": view, "receiptInfo": receipt}}}):
        assert ack_fields(c, answer, key) == {"batch_id": batch, "view_id": view, "receipt": receipt}


def test_the_seq_is_the_number_that_rises_with_the_messages() -> None:
    c: CheckContext = ctx()
    items = [{"n": {"seq_value": s}, "created": 1_700_000_000_000 + s, "flag": 1} for s in (4, 5, 9)]
    assert seqs_of(c, items, "a page") == [4, 5, 9]
