"""The locator (conformance/kit/locate.py): a check finds what it needs by what it is (an id
it got back, a marker it sent, the document's pattern or enum), wherever the answer puts
it, within a depth bound, and never raises on an answer of another shape."""

import pytest

from conformance.kit import locate

ANSWER = {
    "x": {"task": {"task_id": "tsk_0123456789abcdef01234567", "state": "offered",
                   "note": "marker-42 inside"}},
    "peers": [{"peer": {"public_id": "mbx_aaaaaaaaaaaaaaaaaaaaaaaa"}},
              {"peer": {"public_id": "mbx_bbbbbbbbbbbbbbbbbbbbbbbb"}}],
    "other": [1, 2, 3],
}


def test_the_object_holding_an_id_is_found_wherever_it_sits():
    assert locate.object_holding(ANSWER, "tsk_0123456789abcdef01234567")["state"] == "offered"
    assert locate.object_holding({"a": [{"b": {"id": 7}}]}, 7) == {"id": 7}
    assert locate.object_holding(ANSWER, "nowhere") is None


def test_strings_by_the_documents_pattern_and_by_marker_and_by_enum():
    ids = [f.value for f in locate.strings(ANSWER, r"mbx_[a-f0-9]{24}")]
    assert ids == ["mbx_aaaaaaaaaaaaaaaaaaaaaaaa", "mbx_bbbbbbbbbbbbbbbbbbbbbbbb"]
    assert [f.where for f in locate.with_marker(ANSWER, "marker-42")] == ["/x/task/note"]
    assert [f.value for f in locate.enum_values(ANSWER, ["offered", "accepted"])] == ["offered"]
    assert locate.strings(ANSWER, r"mbx_") == []  # a pattern matches in full, not a prefix


def test_nearer_hits_come_first_and_the_depth_bound_holds():
    nested = {"deep": {"a": {"b": {"c": "x"}}}, "shallow": "x"}
    assert [f.where for f in locate.enum_values(nested, ["x"])] == ["/shallow", "/deep/a/b/c"]
    assert [f.where for f in locate.enum_values(nested, ["x"], depth=2)] == ["/shallow"]


def test_a_listing_is_the_list_whose_items_carry_the_ids_the_check_created():
    assert locate.listing(ANSWER, ["mbx_bbbbbbbbbbbbbbbbbbbbbbbb"]) is ANSWER["peers"]
    assert locate.listing({"n": 1}, ["a"]) is None


def test_value_beside_an_anchor_searches_only_the_object_holding_it():
    found = locate.value_beside(ANSWER, "tsk_0123456789abcdef01234567",
                                lambda v: v in ("offered", "accepted"))
    assert found == "offered"
    assert locate.value_beside(ANSWER, "mbx_aaaaaaaaaaaaaaaaaaaaaaaa", lambda v: v == "offered") is None


@pytest.mark.parametrize("odd", [None, 3, "text", [], {}, [[[[[[[[[[[[1]]]]]]]]]]]], {"a": None}, True])
def test_odd_answers_never_raise(odd):
    assert locate.object_holding(odd, "x") is None
    assert locate.strings(odd, "x") == []
    assert not locate.holds(odd, "x")
    assert "looked for a task id" in locate.Search("a task id").looked_for(odd)


def test_a_search_says_what_it_looked_for():
    line = locate.Search("an object holding tsk_1", "the get_task answer").looked_for({"a": 1})
    assert (line.startswith("looked for an object holding tsk_1 anywhere in the get_task answer")
            and '{"a": 1}' in line)


def test_distinct_and_new_strings_and_the_nearest_enum_value():
    answer = {"a": "mbx_1", "b": ["mbx_2", "mbx_1"],
              "c": {"state": "offered", "history": [{"state": "sent"}]}}
    assert locate.distinct(answer, r"mbx_\d") == ["mbx_1", "mbx_2"]
    assert locate.new_strings(answer, r"mbx_\d", known=["mbx_1"]) == ["mbx_2"]
    assert locate.nearest_enum(answer, ["offered", "sent"]) == "offered"  # the history sits deeper
    # two at one level disagree
    assert locate.nearest_enum({"x": "offered", "y": "sent"}, ["offered", "sent"]) is None
    assert locate.nearest_enum(answer, ["gone"]) is None


def test_members_by_a_name_the_document_gives_wherever_they_sit():
    answer = {"wrap": {"seq": 1, "inner": {"seq": 2}}}
    assert locate.member(answer, "seq") == 1 and locate.members(answer, "seq") == [1, 2]
    assert locate.has_member(answer, "inner") and not locate.has_member(answer, "nope")
    assert locate.contains(answer, {"seq": 2}) and not locate.contains(answer, {"seq": 3})


def test_the_list_holding_most_entries_of_a_kind_and_the_list_a_cursor_ends():
    answer = {"one": [{"t": "m"}], "two": [{"t": "m"}, {"t": "m"}, {"t": "n"}],
              "page": [{"id": "a"}, {"id": "cur"}]}
    # entries without "t" do not raise
    assert locate.most(answer, lambda e: e["t"] == "m") == [{"t": "m"}, {"t": "m"}]
    assert locate.ending_with(answer, "cur") == answer["page"]
    assert locate.ending_with(answer, "a") is None and locate.ending_with(answer, None) is None


def test_the_owner_of_a_marker_and_the_json_of_text_blocks():
    answer = {"tasks": [{"id": "tsk_1", "data": {"note": "m-7"}}, {"id": "tsk_2", "data": {"note": "other"}}]}
    assert locate.owners(answer, "m-7", r"tsk_\d") == {"tsk_1"}
    assert locate.at(answer, ("tasks", 1, "id")) == "tsk_2" and locate.at(answer, ("tasks", 9)) is None
    tool = {"content": [{"type": "text", "text": '{"code": "MESSAGE_ID_EXISTS"}'},
                        {"type": "text", "text": "not json"}]}
    assert [locate.holds(part, "MESSAGE_ID_EXISTS") for part in locate.expanded(tool)] == [False, True]
