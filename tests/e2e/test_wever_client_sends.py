"""What a client may send (issue 45): every request the Wever Connect rows about generated
valid inputs send is one the manifest lets a client send. Each rule is read from the
manifest: the action's inputSchema (only its members and values), ``requires_bearer`` (the
mailbox token, "only in Authorization: Bearer"), send_task's "Requires Idempotency-Key", a
key the client owns (one key, one body) outside the prefix the manifest reserves for the
A2A adapter's own keys, and JSON bodies."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from conformance.documents.schemas import validator_for
from conformance.kit.declare import slug
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute
from conformance.transport.http import HttpTransport
from tests.conftest import requests_sent

PROFILE = load_profile("wever-connect")
ACTIONS = PROFILE.spec["actions"]
ROW = {f"WEVER-INPUT-VALID-{slug(a)}": a for a in ACTIONS}  # row id -> its action
ROWS = [r for r in PROFILE.requirements if r.id in ROW]


def reserved_prefix() -> str:
    """The request-key prefix the manifest keeps for A2A submissions ("messageId becomes
    a2a- plus its UTF-8 SHA-256 digest ... Reserve this prefix for adapter submissions")."""
    retry = next(text for text in strings(PROFILE.spec["protocols"]) if "Reserve this prefix" in text)
    found = re.search(r"messageId becomes (\S+?) plus", retry)
    assert found and "Reserve this prefix for adapter submissions" in retry, retry[:200]
    return found.group(1)


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for v in items for s in strings(v)]


@pytest.fixture(scope="module")
def sent() -> dict[str, list[tuple[str, dict[str, str], Any]]]:
    """Every POST /v1/actions/{action} each valid-input row sent over HTTP: (action, headers, body)."""
    return {rid: [(path.rsplit("/", 1)[-1], h, body) for method, path, h, body in sent
                  if method == "POST" and path.startswith("/v1/actions/")]
            for rid, sent in requests_sent(PROFILE, ROWS, binding="http").items()}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_valid_inputs_are_what_a_client_may_send(sent, row):
    action = ROW[row.id]
    schema = validator_for(ACTIONS[action]["inputSchema"])
    own = [(h, b) for a, h, b in sent[row.id] if a == action]
    properties = ACTIONS[action]["inputSchema"].get("properties")
    assert len(own) >= (5 if properties else 1), row.id  # an action taking nothing has one input: {}
    for headers, body in own:
        assert headers.get("Content-Type", "application/json") == "application/json"
        assert schema.is_valid(body), (row.id, body)  # only members and values the inputSchema allows
        token = str(headers.get("Authorization", ""))
        if ACTIONS[action].get("requires_bearer"):
            assert token.startswith("Bearer "), (row.id, headers)
        secret = token.partition(" ")[2]
        assert not (secret and secret in json.dumps(body)), "credentials belong only in Authorization"


def test_send_task_carries_a_key_of_the_clients_own():
    """send_task "Requires Idempotency-Key": every send carries one, never in the adapter's
    reserved prefix, and one key is never sent with two different bodies."""
    prefix = reserved_prefix()
    assert "Requires Idempotency-Key" in ACTIONS["send_task"]["description"]
    run = open_run(PROFILE, "reference", budget="standard", binding="http", shrink=False)
    keys: dict[str, set[str]] = {}
    original = HttpTransport.request

    def record(self: HttpTransport, method: str, path: str, **kw: Any) -> Any:
        if path == "/v1/actions/send_task":
            key = (kw.get("headers") or {}).get("Idempotency-Key")
            assert key and not key.startswith(prefix), key
            body = kw.get("content") if kw.get("json_body") is None else json.dumps(kw["json_body"])
            keys.setdefault(key, set()).add(body.decode() if isinstance(body, bytes) else str(body))
        return original(self, method, path, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(HttpTransport, "request", record)
    try:
        assert execute(PROFILE.requirement("WEVER-INPUT-VALID-SEND-TASK"), run).status == "passed"
    finally:
        mp.undo()
        run.http.close()
    assert len(keys) >= 5
    reused = {k: len(v) for k, v in keys.items() if len(v) > 1}
    assert not reused, reused
