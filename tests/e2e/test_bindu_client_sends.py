"""What a client may send (issue 45): every request the Bindu rows about generated valid
params send is one the spec lets a client send. Each rule is read from the spec: the
method's params schema (only its members and values; the role a client's message takes),
the members the spec reserves for the server ("server-injected, read-only ... Do not set
this yourself"), the casing rule ("pick one and stick with it per-call"), the ids a
client owns (taskId, contextId and message_id: never one id for two messages), and the
headers of POST / (JSON, the caller's bearer token)."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from conformance.documents.schemas import resolve_pointer, validator_for
from conformance.kit.declare import slug
from conformance.run.profiles import load_profile
from tests.conftest import requests_sent

PROFILE = load_profile("bindu")
METHOD = {f"BINDU-PARAMS-VALID-{slug(m)}": m for m in PROFILE.operations}  # row id -> its method
VALID_ROWS = [r for r in PROFILE.requirements if r.id in METHOD]
METADATA = "/components/schemas/UserMessage/properties/metadata/description"
CASING = "/paths/~1/post/description"


def server_keys() -> list[str]:
    """The metadata keys the spec reserves for the server."""
    text = resolve_pointer(PROFILE.spec, METADATA)
    keys = re.findall(r"`([^`]+)` — server-injected", text)
    assert keys == ["_payment_context"] and "Do not set this yourself" in text  # the spec's words
    return keys


def snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def objects(value: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            out += objects(v)
    elif isinstance(value, list):
        for v in value:
            out += objects(v)
    return out


@pytest.fixture(scope="module")
def sent() -> dict[str, list[tuple[dict[str, str], Any]]]:
    """Every POST / each valid-params row sent to the reference: (headers, JSON body)."""
    return {rid: [(h, body) for method, path, h, body in sent if method == "POST" and path == "/"]
            for rid, sent in requests_sent(PROFILE, VALID_ROWS).items()}


def drawn(sent: Any, row: Any) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """The row's requests of its own method (not the set-up's message/send)."""
    method = METHOD[row.id]
    return [(h, b) for h, b in sent[row.id] if isinstance(b, dict) and b.get("method") == method]


@pytest.mark.parametrize("row", VALID_ROWS, ids=lambda r: r.id)
def test_valid_params_are_what_a_client_may_send(sent, row):
    op = PROFILE.operations[METHOD[row.id]]
    schema = validator_for(op.params_schema)
    requests = drawn(sent, row)
    assert len(requests) >= 5, row.id
    reserved = server_keys()
    for headers, body in requests:
        assert headers.get("Content-Type") == "application/json"
        assert str(headers.get("Authorization", "")).startswith("Bearer "), headers
        assert body["jsonrpc"] == "2.0" and isinstance(body.get("id"), (str, int))
        params = body["params"]
        assert schema.is_valid(params), (row.id, params)  # only members and values the schema allows
        for obj in objects(params):
            both = [k for k in obj if snake(k) != k and snake(k) in obj]
            assert not both, f"{row.id}: one member in both casings in one call: {both}"
        message = params.get("message") if isinstance(params, dict) else None
        if isinstance(message, dict):
            roles = resolve_pointer(PROFILE.spec, "/components/schemas/UserMessage/properties/role/enum")
            assert message["role"] in roles
            metadata = message.get("metadata") or {}
            assert not set(reserved) & set(metadata), f"{row.id}: sets the server's own {reserved}"


@pytest.mark.parametrize("row", [r for r in VALID_ROWS if METHOD[r.id].startswith("message/")],
                         ids=lambda r: r.id)
def test_the_ids_a_client_owns_name_one_message_each(sent, row):
    """Caller-chosen ids are the client's: a taskId, a contextId or a message_id is never
    sent for two different messages (hypothesis draws the same uuid again and again)."""
    for key in ("message_id", "taskId", "contextId"):
        seen: dict[str, set[str]] = {}
        for _, body in drawn(sent, row):
            message = body["params"]["message"]
            if key in message:
                seen.setdefault(message[key], set()).add(json.dumps(message.get("parts"), sort_keys=True)
                                                         + json.dumps(body["params"].get("configuration")))
        twice = {k: len(v) for k, v in seen.items() if len(v) > 1}
        assert not twice, f"{row.id}: {key} sent for {twice} different messages"
    counts = Counter(b["params"]["message"]["message_id"] for _, b in drawn(sent, row))
    assert len(counts) > 1


def test_the_casing_rule_is_the_specs():
    assert "pick one and stick with it per-call" in " ".join(resolve_pointer(PROFILE.spec, CASING).split())
