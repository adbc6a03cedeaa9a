"""The transport's limits, one at a time, in-process against tests/hostile.py:
the exchange deadline, the bounded and decompressed answer, dead-target
detection, the run's own deadline, and JSON that cannot hurt the parser."""

from __future__ import annotations

import gzip
import json
import time
import zlib

import pytest

from conformance.transport.http import (
    DEAD_AFTER,
    MAX_JSON_DEPTH,
    AnswerTooLarge,
    HttpTransport,
    Redactor,
    RunStopped,
    TargetUnreachable,
    TransportFailure,
    parse_json,
    read_bounded,
)
from tests import hostile


@pytest.fixture
def server(request):
    srv = hostile.HostileServer(request.param)
    yield srv
    srv.stop()


@pytest.mark.parametrize("server", [hostile.body_drip, hostile.header_drip], indirect=True)
def test_a_drip_is_cut_at_the_exchange_deadline_and_recorded(server):
    http = HttpTransport(server.url, timeout=1.5)
    started = time.monotonic()
    with pytest.raises(TransportFailure, match="deadline"):
        http.request("POST", "/", json_body={"jsonrpc": "2.0"})
    assert time.monotonic() - started < 1.5 + 1.0  # not 600 reads of one second each
    [exchange] = http.log
    assert "deadline" in exchange.error
    if server.handler is hostile.body_drip:  # headers came: what arrived is kept
        assert exchange.response["status"] == 200 and exchange.response["body"].strip() == ""
    http.close()


@pytest.mark.parametrize("server", [hostile.first_then_hang], indirect=True)
def test_consecutive_silence_marks_the_target_gone(server):
    http = HttpTransport(server.url, timeout=0.5)
    assert http.request("POST", "/", json_body={"id": 1}).json()["result"] == []
    for _ in range(DEAD_AFTER - 1):
        with pytest.raises(TransportFailure):
            http.request("POST", "/", json_body={"id": 2})
    with pytest.raises(TargetUnreachable, match="stopped answering"):
        http.request("POST", "/", json_body={"id": 3})
    with pytest.raises(TargetUnreachable):  # every later request, at once
        http.request("GET", "/")
    assert http.total == DEAD_AFTER + 1
    http.close()


@pytest.mark.parametrize("server", [hostile.well_behaved], indirect=True)
def test_an_answer_resets_the_silence_count(server):
    http = HttpTransport(server.url, timeout=1)
    http.silent = DEAD_AFTER - 1
    http.request("POST", "/", json_body={"id": 1})
    assert http.silent == 0 and http.dead is None
    http.close()


@pytest.mark.parametrize("server", [hostile.huge_body, hostile.endless_body, hostile.gzip_bomb],
                         indirect=True)
def test_an_oversized_answer_is_cut_without_holding_it(server):
    hostile.gzip_bomb_body()
    http = HttpTransport(server.url, timeout=20, max_answer=2**20)
    with pytest.raises(TransportFailure, match="answer larger than 1 MiB"):
        http.request("POST", "/", json_body={})
    assert http.silent == 0, "an oversized answer is an answer, not silence"
    assert len(http.log[-1].response["body"]) < 20_000  # the record is cut too
    http.close()


@pytest.mark.parametrize("server", [hostile.well_behaved], indirect=True)
def test_the_run_deadline_stops_requests(server):
    http = HttpTransport(server.url, timeout=5)
    http.run_deadline = time.monotonic() - 1
    with pytest.raises(RunStopped, match="time limit"):
        http.request("POST", "/", json_body={})
    assert http.total == 0
    http.close()


def test_read_bounded_decodes_gzip_and_both_deflates():
    text = b'{"ok": true}' * 100
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    bodies = {
        "gzip": gzip.compress(text),
        "deflate": zlib.compress(text),
        "identity": text,
    }
    for encoding, body in bodies.items():
        assert read_bounded(iter([body[:7], body[7:]]), [encoding], 10_000) == (text, [])
    raw = raw_deflate.compress(text) + raw_deflate.flush()
    assert read_bounded(iter([raw]), ["deflate"], 10_000) == (text, [])
    assert read_bounded(iter([b"abc"]), ["br"], 10) == (b"abc", ["br"])  # kept as sent, and said so
    with pytest.raises(AnswerTooLarge):
        read_bounded(iter([gzip.compress(b"\0" * 100_000)]), ["gzip"], 1000)
    with pytest.raises(zlib.error):
        read_bounded(iter([b"not gzip at all"]), ["gzip"], 1000)


def test_parse_json_never_raises():
    assert parse_json(b'{"a": [1]}') == ({"a": [1]}, "")
    assert parse_json(b"\xff\xfe{}")[0] is None
    assert "nested deeper" in parse_json(b"[" * 100_000 + b"]" * 100_000)[1]
    just_too_deep = b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1)
    assert "nested deeper" in parse_json(just_too_deep)[1]
    deep_enough = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert parse_json(deep_enough)[1] == ""
    assert parse_json(b"<html>502</html>")[1].startswith("not JSON")
    # brackets counted on the parsed value: those inside strings (escaped or not) do not nest
    wide = json.dumps([{"text": "[[[{{\\\"[" * 50, "list": [[1]]} for _ in range(300)])
    assert parse_json(wide.encode())[1] == "" and parse_json(wide)[1] == ""
    assert parse_json(wide.encode("utf-16"))[1] == ""
    nested_in_wide = json.dumps([[1]] * 200 + [json.loads(just_too_deep)])
    assert "nested deeper" in parse_json(nested_in_wide)[1]


def test_redactor_covers_the_target_password():
    http = HttpTransport("http://user:s3cret-pass@127.0.0.1:9", timeout=1, redactor=Redactor())
    assert http.redact("GET http://user:s3cret-pass@x") == "GET http://user:<redacted:target.password>@x"
    http.close()


def test_reply_json_is_parsed_once(monkeypatch):
    from conformance.transport import http as module

    calls = []
    real = module.parse_json
    monkeypatch.setattr(module, "parse_json", lambda data: calls.append(1) or real(data))
    reply = module.HttpReply(200, None, json.dumps({"a": 1}).encode(), None)  # type: ignore[arg-type]
    assert reply.json() == {"a": 1} and reply.json() == {"a": 1} and reply.json_error == ""
    assert len(calls) == 1


def test_no_cookie_a_target_sets_is_sent_back():
    """A check's request carries what the check built: a session cookie from an
    earlier answer would authenticate a request meant to carry no credential, and
    would not be in the recorded exchange that a case replays."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def echo(request: Request) -> JSONResponse:
        answer = JSONResponse({"cookie": request.headers.get("cookie")})
        answer.set_cookie("session", "s3cret")
        return answer

    http = HttpTransport(app=Starlette(routes=[Route("/", echo)]))
    first = http.request("GET", "/")
    assert "session=s3cret" in first.headers.get("set-cookie", "")
    assert http.request("GET", "/").json() == {"cookie": None}
    http.close()
