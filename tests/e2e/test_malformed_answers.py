"""An unexpected answer never crashes a check: every requirement of every profile
(over every binding) against targets that answer in shapes no check expects ends
as a finding that quotes the answer, never as an exception of the check (kind
`crash`)."""

from __future__ import annotations

import json

import pytest

from conformance.run.launch import open_run
from conformance.run.profiles import available, load_profile
from conformance.run.runner import execute
from tests import hostile


def rpc(result_or_error: dict, status: str = "200 OK"):
    def handler(conn: hostile.Conn) -> None:
        if hostile.serving(conn):
            conn.answer(json.dumps({"jsonrpc": "2.0", "id": conn.request_id(), **result_or_error}).encode(),
                        status)
    return handler


def raw(body: bytes):
    def handler(conn: hostile.Conn) -> None:
        if hostile.serving(conn):
            conn.answer(body)
    return handler


SHAPES = {
    "empty result": rpc({"result": {}}),
    "null result": rpc({"result": None}),
    "list result": rpc({"result": [1, "a", None]}),
    "odd error": rpc({"error": {"code": "x", "data": [1]}}, "400 Bad Request"),
    "bare array": raw(b"[]"),
    "odd object": raw(b'{"status": "ok", "error": "nope", "structuredContent": 5, "result": '
                      b'{"isError": false}}'),
}
CASES = [(name, b, shape) for name in available()
         for b in (list(load_profile(name).settings.get("bindings") or {}) or [None]) for shape in SHAPES]


@pytest.mark.parametrize(("name", "binding", "shape"), CASES, ids=[f"{n}:{b}:{s}" for n, b, s in CASES])
def test_no_check_crashes_on_an_unexpected_answer(name, binding, shape):
    profile = load_profile(name)
    world = {role: f"x-{role}" for role in profile.settings.get("world_roles") or {}}
    server = hostile.HostileServer(SHAPES[shape])
    try:
        # no shrinking: the question is whether a check crashes, not which example is smallest
        run = open_run(profile, server.url, config={"world": world, "timeout": 2}, token="tok-x",
                       budget="quick",
                       binding=binding, shrink=False)
        crashes = [(req.id, f.message) for req in profile.requirements
                   for f in execute(req, run).failures if f.kind == "crash"]
        run.http.close()
    finally:
        server.stop()
    assert crashes == []
