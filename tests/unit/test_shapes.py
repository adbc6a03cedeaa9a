"""Shape variants (conformance/kit/shapes.py): the reference's answers rewritten as another
faithful server might write them, wherever the document leaves the shape open, and
nothing else: what the document names, what the client sent, and every value survive."""

import asyncio
import copy
import json
from collections import Counter

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from conformance.kit.shapes import Rewriter, ShapedApp, ShapeRules, rules_of
from conformance.run.profiles import load_profile

RULES = ShapeRules(named=frozenset({"id", "state", "items"}), maps=frozenset({"labels"}),
                   codes=frozenset({"NOT_FOUND", -32042}))
ANSWER = {"task": {"id": "t1", "state": "offered", "sender_id": "m1"},
          "items": [{"peer": {"public_id": "p1"}}]}


def leaves(value, extras=()):
    """The scalar values of an answer, as a multiset (added unknown members left out)."""
    out = Counter()
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in extras and not (k.startswith("x_") and k.endswith("_note")):
                out += leaves(v)
    elif isinstance(value, list):
        for v in value:
            out += leaves(v)
    else:
        out[json.dumps(value)] += 1
    return out


def keys(value):
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()


def test_seed_one_renames_every_key_the_document_does_not_name_and_keeps_the_named():
    shaped = Rewriter(RULES, 1).answer(copy.deepcopy(ANSWER), 200)
    assert {"id", "state", "items"} <= keys(shaped)
    assert not keys(shaped) & {"task", "sender_id", "peer", "public_id"}
    assert leaves(shaped) == leaves(ANSWER)


def test_a_variant_is_consistent_across_answers_and_the_same_for_the_same_seed():
    one, two = Rewriter(RULES, 3), Rewriter(RULES, 3)
    first = one.answer({"task": {"id": "a", "sender_id": "x"}}, 200)
    again = one.answer({"task": {"id": "b", "sender_id": "y"}}, 200)
    assert keys(first) == keys(again)
    assert two.answer({"task": {"id": "a", "sender_id": "x"}}, 200) == first


def test_the_jsonrpc_envelope_and_the_documents_codes_stay_and_the_profiles_codes_change():
    rw = Rewriter(RULES, 1)
    env = rw.answer({"jsonrpc": "2.0", "id": 4,
                     "error": {"code": -32042, "message": "not found", "data": {"why": "gone"}}}, 200)
    assert set(env) == {"jsonrpc", "id", "error"} and env["id"] == 4
    assert env["error"]["code"] != -32042 and isinstance(env["error"]["code"], int)
    assert env["error"]["message"] != "not found"
    kept = rw.answer({"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": "bad"}}, 200)
    assert kept["error"]["code"] == -32602
    body = rw.answer({"error": {"code": "NOT_FOUND", "message": "no such task"}}, 404)
    assert "NOT_FOUND" not in json.dumps(body) and "no such task" not in json.dumps(body)


def test_what_the_client_sent_comes_back_as_it_was_sent():
    rw = Rewriter(RULES, 1)
    rw.remember(json.dumps({"recipient_id": "m2", "task": {"my_field": {"deep_key": 1}}}).encode())
    shaped = rw.answer({"offer": {"id": "t1", "payload": {"my_field": {"deep_key": 1}}}}, 200)
    assert {"my_field": {"deep_key": 1}} in [v for v in _objects(shaped)]


def _objects(value):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from _objects(v)


def test_a_maps_keys_are_data_and_an_inner_member_has_its_own_vocabulary():
    rules = ShapeRules(named=frozenset({"data", "labels"}), maps=frozenset({"labels"}),
                       inner=(("data", ShapeRules(named=frozenset({"message_sent"}))),))
    shaped = Rewriter(rules, 1).answer({"labels": {"some_label": "v"},
                                        "data": {"message_sent": True, "seq": 1}}, 200)
    assert shaped["labels"] == {"some_label": "v"}
    assert "message_sent" in shaped["data"] and "seq" not in shaped["data"]


def test_seed_two_moves_levels_somewhere_and_loses_no_value():
    answer = {f"outer_{i}": {"inner_a": i, "inner_b": {"leaf": f"v{i}"}, "id": f"id{i}"} for i in range(12)}
    shaped = Rewriter(RULES, 2).answer(copy.deepcopy(answer), 200)
    assert leaves(shaped) == leaves(answer)
    depth = {json.dumps(v) for v in _objects(shaped)}
    assert depth != {json.dumps(v) for v in _objects(answer)}


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["id", "state", "a_b", "cD", "task", "x"]), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(answer=JSON, seed=st.integers(1, 6))
def test_no_value_is_ever_lost_or_changed(answer, seed):
    """Whatever the answer and the seed, the rewrite keeps every value (codes and error
    messages apart, which these answers do not hold)."""
    shaped = Rewriter(ShapeRules(named=frozenset({"id", "state"})), seed).answer(copy.deepcopy(answer), 200)
    assert leaves(shaped) == leaves(answer)


def test_the_wrapper_rewrites_json_and_event_streams_and_leaves_mcp_and_control_alone():
    async def rpc(request):
        body = await request.json()
        if body.get("method") == "tools/list":
            return JSONResponse({"jsonrpc": "2.0", "id": body["id"],
                                 "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}})
        content = {"task_ref": {"id": "t1"}}
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": {
            "structuredContent": content, "content": [{"type": "text", "text": json.dumps(content)}]}})

    async def stream(request):
        return Response('data: {"jsonrpc": "2.0", "id": 1, "result": {"some_key": 1}}\n\n',
                        media_type="text/event-stream")

    async def control(request):
        return JSONResponse({"some_key": 1})

    app = Starlette(routes=[Route("/mcp", rpc, methods=["POST"]), Route("/sse", stream, methods=["POST"]),
                            Route("/_control/x", control, methods=["POST"])])
    shaped = ShapedApp(app, Rewriter(ShapeRules(named=frozenset({"id"})), 1))

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=shaped),
                                     base_url="http://t") as client:
            listed = (await client.post("/mcp",
                                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).json()
            called = await client.post("/mcp",
                                       json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}})
            sse = (await client.post("/sse", json={})).text
            ctl = (await client.post("/_control/x", json={})).json()
            return listed, called, sse, ctl

    listed, called, sse, ctl = asyncio.run(go())
    assert listed["result"]["tools"][0]["inputSchema"] == {"type": "object"}
    result = called.json()["result"]
    assert ("task_ref" not in result["structuredContent"]
            and json.loads(result["content"][0]["text"]) == result["structuredContent"])
    assert int(called.headers["content-length"]) == len(called.content)
    assert "some_key" not in sse and '"result"' in sse
    assert ctl == {"some_key": 1}


def test_a_shapes_block_citing_what_the_document_does_not_say_does_not_load():
    profile = copy.copy(load_profile("wever-connect"))  # the loaded profile is shared: change a copy
    profile.settings = {**profile.settings,
                        "shapes": {"named": [{"key": "no_such_answer_field", "at": "/flow"}]}}
    with pytest.raises(ValueError, match="does not occur at /flow"):
        rules_of(profile)
    profile.settings = {**profile.settings, "shapes": {"named_from": ["/no/such/pointer"]}}
    with pytest.raises(ValueError, match="is not in"):
        rules_of(profile)
