"""Canon's generated inputs as the checks send them: the preparation (the seeded world's
ids, the descriptions' rules) takes every instance the generators draw, valid or broken,
and keeps each what it was drawn to be."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance, Violation, mutations
from conformance.generation.strategies import strategy_for
from conformance.kit.check import CheckContext
from conformance.protocols.canon.client import CanonClient
from conformance.protocols.canon.verbs import follow_descriptions, in_world, under
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile

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


# ---------------------------------------------------------------- what a client may send
def owned_pointers(schema: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Where the document says an id is the client's own: an idempotency key, a single-use id."""
    if not isinstance(schema, dict):
        return []
    text = schema.get("description")
    here = [path] if isinstance(text, str) and ("idempotency key" in text or "single-use id" in text) else []
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    return here + [p for name, sub in props.items() for p in owned_pointers(sub, (*path, name))]


def at_path(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def client_rule_breaks(ref: Any, c: CanonClient, verb: str, sent: dict[str, Any]) -> list[str]:
    """What the document's client-side rules say of one prepared valid input, judged against
    the reference's world (who is a member of what, which URLs its upload flow issued)."""
    out = []
    convs = ref.w["conversations"]
    agent = ref.agent
    opts = sent.get("messageOptions") if isinstance(sent.get("messageOptions"), dict) else {}
    meta = opts.get("metadata")
    if isinstance(meta, dict) and "type" in meta:
        out.append("metadata.type is the server's (receipt types are server-owned)")
    for att in opts.get("attachments") or []:
        if not ref.attachment_allowed(att["url"]):
            out.append(f"attachment url {att['url']!r} is not from the target's upload flow")
    if "text" in sent and verb in ("send_to", "forward"):
        limit = "text_bytes" if verb == "send_to" else "caption_bytes"
        if not ref.text_fits(sent["text"], limit):
            out.append(f"text over {limit}")
    if "metadata" in opts and not ref.metadata_fits(opts["metadata"]):
        out.append("metadata over its UTF-16 size")
    if verb == "send_to" and "text" not in sent and not opts.get("attachments"):
        out.append("send_to with neither text nor attachments")
    card = sent.get("card")
    if isinstance(card, dict) and ref.card_secret_keys(card):
        out.append(f"card keys {ref.card_secret_keys(card)} bear secrets")
    named = sent.get("conversationId") or sent.get("targetConversationId")
    members = convs[named]["members"] if named in convs else [agent, sent.get("targetUserId")]
    for mention in opts.get("mentions") or []:
        if mention not in members:
            out.append(f"mention {mention!r} is not a member of the conversation")
    asked = convs.get(sent.get("conversationId") or ref.w["active_conversation"])  # bindings default to it
    if "responseUserId" in sent and not (asked and ref.is_human_member(asked, sent["responseUserId"])):
        out.append(f"responseUserId {sent['responseUserId']!r} is not a human member")
    if "selfContext" in sent:
        source = convs.get(sent.get("sourceConversationId"))
        if source is None or agent not in source["members"]:
            out.append("a selfContext without a source conversation the agent is in")
    for prop in ("conversationId", "targetConversationId", "sourceConversationId"):
        if prop in sent and sent[prop] not in convs:
            out.append(f"{prop} {sent[prop]!r} names no conversation of the world")
    for prop in ("targetUserId", "responseUserId", "contactUserId", "userId"):
        if prop in sent and sent[prop] not in ref.w["users"]:
            out.append(f"{prop} {sent[prop]!r} names no user of the world")
    return out


@pytest.mark.parametrize("verb", VERBS)
def test_generated_valid_inputs_are_what_a_client_may_send(client, verb):
    """Each valid input CANON-INPUT-VALID-* sends, as prepared (the world's objects named, the
    descriptions' rules followed): only fields and values a client may send (no server-owned
    metadata type, no secret-bearing card key, mentions of members, a human responder,
    attachments from the upload flow), and the ids the client owns (each idempotency key and
    single-use id the document names) fresh: used by no other input and by no one in the world."""
    ctx, c = client
    ref = ctx.run.reference
    schema = PROFILE.operations[verb].params_schema
    judge = validator_for(schema)
    owned = owned_pointers(schema)
    used: dict[str, Any] = {}
    world_ids = set(ref.w["roles"].values())
    sent_count = [0]

    @settings(SETTINGS, max_examples=40)
    @given(strategy_for(schema))
    def check(value: Any) -> None:
        sent = prepared_valid(ctx, c, verb, value)
        assert judge.is_valid(sent), sent
        assert client_rule_breaks(ref, c, verb, sent) == [], (value, sent)
        for path in owned:
            mine = at_path(sent, path)
            if mine is not None:
                assert mine not in used and mine not in world_ids, (path, mine, used.get(mine))
                used[mine] = sent
        sent_count[0] += 1

    check()
    assert sent_count[0] >= (20 if schema.get("properties") else 1)
    if verb in ("send_to", "share_contact", "request_input", "request_approval"):
        assert owned and used, f"{verb}: no owned id was drawn to be judged"


def test_the_owned_ids_are_those_the_document_names():
    found = {verb: owned_pointers(PROFILE.operations[verb].params_schema) for verb in VERBS}
    assert {v: p for v, p in found.items() if p} == {
        "send_to": [("messageOptions", "messageId")], "request_input": [("inputId",)],
        "request_approval": [("approvalId",)], "share_contact": [("messageId",)]}
