"""The content readers of Agent Plaza's part 1 (answers.py, inbox.py) never crash on odd
answers. That every MUST passes on the shape variants, and the shape rows fail on one, is
test_selftest.py's test_no_must_rests_on_a_shape_the_profile_chose."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from conformance.model import Profile
from conformance.protocols.plaza import answers
from conformance.protocols.plaza.inbox import inbox_lists
from conformance.run.profiles import load_profile


@functools.cache
def profile() -> Profile:
    return load_profile("agent-plaza")


class Ctx:
    """Enough of a CheckContext for the readers: the profile."""

    def __init__(self) -> None:
        self.profile = profile()

    def expect(self, condition: Any, message: str, kind: str = "", statement: str | None = None) -> None:
        assert condition, message


ODD: list[Any] = [None, 7, "x", [], {}, [[[]]], {"a": {"b": [1, "2", None]}}, {"seq": True, "id": None},
                  {"read_request": None}, {"ack_request": {"batch_id": 1}},
                  {"next_page_request": "x", "next_notices_request": []}]


@pytest.mark.parametrize("answer", ODD)
def test_the_content_readers_never_crash_on_odd_answers(answer: Any) -> None:
    ctx: Any = Ctx()
    answers.records(ctx, answer, "odd")
    answers.bodies(ctx, answer, "odd", ["known"])
    answers.items_of(ctx, answer)
    answers.item_keys(ctx, answer)
    answers.batch_of(ctx, answer)
    answers.ack_triple(answer)
    answers.field(answer, "round_no")
    inbox_lists(answer, ["11111111-1111-4111-8111-111111111111"])


def test_a_page_of_another_shape_is_read_by_content() -> None:
    """Records found by the document's record_type, texts by the marker the check sent,
    the cursor members by their names wherever they sit."""
    ctx: Any = Ctx()
    page = {"pageEntry": {"roundNo": 2, "round_no": 2, "has_more": True,
                          "items_value": [{"id": "a", "seq": "1", "record_type": "message",
                                           "content": "hello m1"},
                                          {"id": "b", "seq": "2", "record_type": "message",
                                           "body": {"text": "hello m2"}}]}}
    assert [r["id"] for r in answers.records(ctx, page, "page")] == ["a", "b"]
    assert answers.bodies(ctx, page, "page", ["hello m2", "hello m1"]) == ["hello m1", "hello m2"]
    assert answers.round_of(ctx, page, "page") == 2 and answers.field(page, "has_more") is True


def test_a_batch_is_what_its_ack_request_acknowledges() -> None:
    data = {"batchRef": {"entries": [{"read_request": {"operation": "read_conversation"},
                                      "eventId": "e7b1c7c2-0000-4000-8000-000000000001"}]},
            "ack_request": {"operation": "receive_ack", "client_key": "k", "batch_id": "b", "view_id": "v",
                            "receipt": "r"}}
    assert answers.ack_triple(data) == {"batch_id": "b", "view_id": "v", "receipt": "r"}
    assert (len(answers.items_of(Ctx(), data)) == 1
            and answers.item_keys(Ctx(), data) == ["e7b1c7c2-0000-4000-8000-000000000001"])


EVENT = "e7b1c7c2-0000-4000-8000-000000000001"
TRIPLE = {"batch_id": "b7b1c7c2-0000-4000-8000-000000000002", "view_id": "a" * 64, "receipt": "r" * 43}


@pytest.mark.parametrize("item", [
    {"type": "friend_message", "eventId": EVENT},  # a work kind of the document, no read request
    {"event": {"kind": "friend_invitation", "ref": EVENT}},  # the kind one level down
    {"ref": EVENT, "what": "a message"},  # nothing the document names: the batch's entry
])
def test_receive_work_without_a_read_request_is_work(item: Any) -> None:
    """An item need not carry a read request ("Execute a returned a2a_read_request ... only when
    present"): work is what carries a document's work kind, else an entry of the batch that the
    ack_request names; a pull that delivers none has no batch."""
    ctx: Any = Ctx()
    data = {"delivery": {**TRIPLE, "entries": [item]}, "ack_request": {"operation": "receive_ack", **TRIPLE}}
    assert answers.items_of(ctx, data) == [item] and answers.item_keys(ctx, data) == [EVENT]
    assert answers.batch_of(ctx, data) == TRIPLE
    empty = {"delivery": None, "ack_request": None, "more": False}
    assert answers.items_of(ctx, empty) == [] and answers.batch_of(ctx, empty) is None


def test_the_readers_constants_are_the_documents() -> None:
    spec = profile().spec
    assert set(answers.FRIEND_WORK) <= set(spec["durableReceive"]["supported_work"])
    assert (set(answers.TRIPLE)
            <= set(spec["durableReceive"]["operation_requirements"]["receive_ack"]["required"]))
    assert spec["mailboxAttention"]["itemReadField"] == answers.ITEM_FIELD
    assert answers.ACK_FIELD in spec["durableReceive"]["native"]["consume"]
    assert all(name in spec["durableReceive"]["a2a"]["follow"] for name in answers.A2A_REQUESTS)
