"""Canon verdicts on answers of another shape (issue 23): no check crashes on a member it
expected, the one error code the document names is found wherever a refusal carries it,
and over MCP only a tool's own result is the shape variant's to rewrite."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

import conformance.kit.shapes as shapes
from conformance.proofs.selftest import bindings_of, crashes
from conformance.run.launch import open_run, reference_app
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict, execute
from tests.mcp_session import RawMcp

PROFILE = load_profile("canon-verbs")


def _verdicts(binding: str, shape_seed: int | None = None, faults: tuple[str, ...] = (),
              only: tuple[str, ...] = ()) -> dict[str, Verdict]:
    run = open_run(PROFILE, "reference", faults=faults, budget="quick", shrink=False, shapes=shape_seed,
                   binding=binding)
    try:
        return {req.id: execute(req, run) for req in PROFILE.requirements if not only or req.id in only}
    finally:
        run.http.close()


@pytest.mark.parametrize("keep", [(), ("conversationId", "status", "approvalId")])
def test_every_member_renamed_crashes_no_check(monkeypatch: Any, keep: tuple[str, ...]) -> None:
    """Every answer member renamed (but the envelopes and ``keep``), over each binding:
    checks fail or block with findings, and none raises."""
    named = frozenset(shapes.JSONRPC_ENVELOPE | set(keep))
    monkeypatch.setattr(shapes, "rules_of", lambda profile: shapes.ShapeRules(named))
    for binding in bindings_of(PROFILE):
        verdicts = _verdicts(str(binding), shape_seed=1)
        assert [f"{rid}: {c}" for rid, v in verdicts.items() for c in crashes(v)] == []


@pytest.mark.parametrize("binding", ["http", "mcp"])
def test_message_id_conflict_is_judged_by_the_documents_code(binding: str) -> None:
    rows = ("CANON-MESSAGE-ID-CONFLICT", "CANON-MESSAGE-ID-CONFLICT-CODE")
    # the error member renamed: only the SHOULD asks for it
    renamed = _verdicts(binding, shape_seed=1, only=rows)
    assert (renamed[rows[0]].status, renamed[rows[1]].status) == ("passed", "failed")
    beside = _verdicts(binding, faults=("conflict_code_beside_error",), only=rows)
    assert (beside[rows[0]].status, beside[rows[1]].status) == ("passed", "failed")
    wrong = _verdicts(binding, faults=("message_id_conflict_wrong_code",), only=rows)[rows[0]]
    assert wrong.status == "failed" and "MESSAGE_ID_EXISTS" in wrong.message


def _rpc(client: TestClient, method: str, params: Any, rid: int = 1) -> Any:
    token = PROFILE.reference_credentials.get("full")
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    session = SESSIONS.setdefault(id(client), RawMcp(client))
    message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    reply = (session.start(auth, params["protocolVersion"]) if method == "initialize"
             else session.post(message, auth))
    assert reply.status_code == 200, reply.text
    return reply.json()


SESSIONS: dict[int, RawMcp] = {}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mcp_keeps_its_own_shapes(seed: int) -> None:
    """initialize and tools/list are MCP's, answered as the clean reference answers them;
    of tools/call only the tool's result (structuredContent and its text copy) is rewritten."""
    clean, shaped = TestClient(reference_app(PROFILE)), TestClient(reference_app(PROFILE, shapes=seed))
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    assert _rpc(shaped, "initialize", init) == _rpc(clean, "initialize", init)
    assert _rpc(shaped, "tools/list", {}) == _rpc(clean, "tools/list", {})
    call = {"name": "list_contacts", "arguments": {}}
    was, now = _rpc(clean, "tools/call", call)["result"], _rpc(shaped, "tools/call", call)["result"]
    assert set(now) == set(was) and now.get("isError") == was.get("isError")
    assert now["structuredContent"] != was["structuredContent"]
    assert [b["type"] for b in now["content"]] == [b["type"] for b in was["content"]]
