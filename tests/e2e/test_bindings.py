"""Bindings as data (conformance/transport/binding.py): one Reply for every kind,
the bearer token, header rules and error locations read from the profile's
`bindings:` entry; and a served Canon reference that requires a bearer token,
run over both of its bindings."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from conformance.protocols.canon.protocol import REFERENCE_TOKEN
from conformance.transport.binding import BINDING_KINDS, DEFAULT, RawToken, make_binding
from conformance.transport.http import HttpTransport
from tests.conftest import conformance


async def echo(request: Request) -> JSONResponse:
    """Answers what it got; a body asking for an error gets one at /problem/code."""
    body = json.loads(await request.body() or b"null")
    if isinstance(body, dict) and body.get("fail"):
        return JSONResponse({"problem": {"code": "NOPE", "text": "refused"}}, status_code=409)
    return JSONResponse({"path": request.url.path, "headers": dict(request.headers), "body": body})


def binding(entry: dict, tokens: dict | None = None):
    app = Starlette(routes=[Route("/{rest:path}", echo, methods=["POST"])])
    known = tokens if tokens is not None else {"full": "tok-full", "read": "tok-read"}

    def resolve(label: str, required: bool) -> str | None:
        if label not in known and required:
            raise LookupError(label)
        return known.get(label)

    return make_binding("b", entry, HttpTransport(app=app), resolve)


ACTION = {"kind": "http-action", "path": "/act/{name}", "bearer": "full",
          "headers": {"A2A-Version": "1.0"}, "idempotency": {"header": "Idempotency-Key"},
          "error": {"code": "/problem/code", "message": "/problem/text"}}


def test_an_action_binding_follows_its_entry():
    b = binding(ACTION)
    reply = b.call("do_it", {"x": 1})
    assert reply.ok and reply.status == 200 and reply.statuses
    assert reply.result["path"] == "/act/do_it" and reply.result["body"] == {"x": 1}
    headers = reply.result["headers"]
    assert headers["authorization"] == "Bearer tok-full" and headers["a2a-version"] == "1.0"
    first_key = headers["idempotency-key"]
    again = b.call("do_it", {"x": 1}).result["headers"]["idempotency-key"]
    assert first_key and again != first_key  # a fresh key per call
    # a replay
    assert b.call("do_it", {}, idempotency_key="k-1").result["headers"]["idempotency-key"] == "k-1"


def test_errors_are_read_where_the_entry_says():
    reply = binding(ACTION).call("do_it", {"fail": True})
    assert not reply.ok and reply.flagged and reply.status == 409
    assert (reply.error_code, reply.error_message) == ("NOPE", "refused")
    assert "NOPE" in reply.describe()


def test_callers_no_token_a_named_one_and_a_raw_one():
    b = binding(ACTION)
    assert "authorization" not in b.call("x", {}, caller=None).result["headers"]
    assert b.call("x", {}, caller="read").result["headers"]["authorization"] == "Bearer tok-read"
    assert b.call("x", {}, caller=RawToken("forged")).result["headers"]["authorization"] == "Bearer forged"
    with pytest.raises(LookupError):  # a named caller is required
        b.call("x", {}, caller="other")
    bare = binding(ACTION, tokens={})  # the binding's own bearer is optional
    assert "authorization" not in bare.call("x", {}, caller=DEFAULT).result["headers"]


def test_binding_kinds_are_a_registry():
    assert {"jsonrpc-http", "http-action", "mcp-tools"} <= set(BINDING_KINDS)
    with pytest.raises(ValueError, match="unknown kind 'smoke-signals'"):
        binding({"kind": "smoke-signals"})


def test_jsonrpc_replies_share_the_shape():
    b = binding({"kind": "jsonrpc-http", "path": "/rpc", "bearer": "full"})
    reply = b.call("tasks/get", {"id": 1}, request_id="r-1")
    assert not reply.ok  # the echo is no JSON-RPC answer
    assert reply.error is None and reply.error_code is None and "body" in reply.describe()
    sent = reply.http.json()["body"]
    assert sent == {"jsonrpc": "2.0", "method": "tasks/get", "id": "r-1", "params": {"id": 1}}


# -- a served Canon reference that requires its bearer token ------------------------------


@pytest.fixture(scope="module")
def canon_server(tmp_path_factory):
    from tests.conftest import Server

    server = Server("canon-verbs", "--control", tmp=tmp_path_factory.mktemp("canon"))
    yield server
    server.stop()


@pytest.mark.parametrize("binding_name", ["http", "mcp"])
def test_a_live_canon_target_that_requires_a_token_passes_with_it(canon_server, tmp_path, binding_name):
    config = tmp_path / "no-credentials.yaml"
    config.write_text(f"control: {canon_server.url}/_control\n")
    report = tmp_path / "r"
    result = conformance("run", "canon-verbs", "--target", canon_server.url, "--config", str(config),
                         "--token", REFERENCE_TOKEN, "--binding", binding_name, "--budget", "quick",
                         "--report", str(report))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    summary = json.loads((report / "summary.json").read_text())
    assert (summary["verdict"] == "pass" and summary["counts"]["untested"] == 0
            and summary["binding"] == binding_name)
    assert summary["counts"]["failed"] == 0 and summary["counts"]["passed"] >= 80
    assert REFERENCE_TOKEN not in result.stdout + (report / "summary.json").read_text()


def test_without_the_token_the_requirements_are_untested_not_failed(canon_server, tmp_path):
    config = tmp_path / "no-credentials.yaml"
    config.write_text(f"control: {canon_server.url}/_control\n")
    report = tmp_path / "r"
    result = conformance("run", "canon-verbs", "--target", canon_server.url, "--config", str(config),
                         "--budget", "quick", "--report", str(report), "--only", "CANON-MESSAGE-ID-REPLAY",
                         "--only", "CANON-RESULT-LIST-CONTACTS")
    assert result.returncode == 5, result.stdout[-3000:] + result.stderr  # a gate never passes on nothing
    summary = json.loads((report / "summary.json").read_text())
    selected = [r for r in summary["requirements"] if r["status"] != "skipped"]
    assert [r["status"] for r in selected] == ["untested", "untested"]
    assert all("requires a bearer token" in r["message"] for r in selected)


def test_ordinary_request_ids_take_the_shape_the_entry_declares():
    import uuid as uuid_module

    numbered = binding({"kind": "jsonrpc-http", "path": "/rpc"}).call("m", {}).http.json()["body"]["id"]
    assert isinstance(numbered, int)
    shaped = binding({"kind": "jsonrpc-http", "path": "/rpc",
                      "request_ids": "uuid"}).call("m", {}).http.json()["body"]["id"]
    assert str(uuid_module.UUID(shaped)) == shaped  # a UUID string, as the spec's examples write them
