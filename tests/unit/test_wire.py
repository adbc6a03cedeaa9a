"""The live target's lean HTTP client (conformance/transport/wire.py) under HttpTransport:
connections kept alive and not reused once the target closed them, chunked and HEAD
answers, the target URL's credentials, the request's own headers winning, and nothing
sent off the target. (Deadlines, size bounds and
broken answers: test_transport_limits.py and tests/e2e/test_hostile_targets.py.)"""

from __future__ import annotations

import base64
import http.server
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from conformance.transport.http import HttpTransport


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    connections: list[int] = []
    seen: list[dict[str, str]] = []

    def setup(self) -> None:
        super().setup()
        type(self).connections.append(1)

    def log_message(self, *args: object) -> None:
        pass

    def answer(self, status: int, body: bytes, *, chunked: bool = False, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (body[:3], body[3:]):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()} | {"path": self.path})
        if self.path.startswith("/chunked"):
            self.answer(200, b'{"chunked": true}', chunked=True)
        elif self.path.startswith("/close"):
            self.answer(200, b'{"closing": true}', close=True)
        else:
            self.answer(200, json.dumps({"path": self.path}).encode())

    do_HEAD = do_GET  # noqa: N815

    def do_POST(self) -> None:  # noqa: N802
        if self.path == "/early":  # refuses before reading the body, then closes
            self.answer(413, b'{"error": "too large"}', close=True)
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()} | {"path": self.path})
        self.answer(200, body)


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    Handler.connections, Handler.seen = [], []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def url(srv: http.server.ThreadingHTTPServer, userinfo: str = "") -> str:
    return f"http://{userinfo}127.0.0.1:{srv.server_address[1]}"


def test_one_connection_carries_many_exchanges_and_a_closed_one_is_not_reused(server):
    http = HttpTransport(url(server), timeout=5)
    for n in range(5):
        assert http.request("POST", "/", json_body={"n": n}).json() == {"n": n}
    assert len(Handler.connections) == 1
    assert http.request("GET", "/close").json() == {"closing": True}  # the target closes after it
    assert http.request("GET", "/after").json() == {"path": "/after"}  # a new connection, no failure
    assert len(Handler.connections) == 2
    assert http.silent == 0 and http.total == 7
    http.close()


def test_chunked_and_head_answers_and_the_query(server):
    http = HttpTransport(url(server), timeout=5)
    assert http.request("GET", "/chunked").json() == {"chunked": True}
    head = http.request("HEAD", "/x")
    assert head.status == 200 and head.content == b"" and head.headers["content-length"] != "0"
    reply = http.request("GET", "/q", params={"a": "1 2", "b": ["x", "y"]})
    assert reply.json() == {"path": "/q?a=1+2&b=x&b=y"}
    assert reply.exchange.request["url"].endswith("/q?a=1+2&b=x&b=y")
    http.close()


def test_the_request_s_own_headers_win_and_the_url_s_credentials_are_basic_auth(server):
    http = HttpTransport(url(server, "user:s3cret-pw@"), timeout=5)
    http.request("GET", "/a")
    assert Handler.seen[-1]["authorization"] == "Basic " + base64.b64encode(b"user:s3cret-pw").decode()
    assert Handler.seen[-1]["accept-encoding"] == "gzip, deflate"
    http.request("GET", "/b", headers={"Authorization": "Bearer mine", "Accept": "text/event-stream"})
    assert Handler.seen[-1]["authorization"] == "Bearer mine"
    assert Handler.seen[-1]["accept"] == "text/event-stream"
    assert "s3cret-pw" not in json.dumps([e.request for e in http.log])
    http.close()


def test_a_header_that_is_not_http_is_our_failure_not_the_target_s(server):
    from conformance.transport.http import TransportFailure

    http = HttpTransport(url(server), timeout=5)
    with pytest.raises(TransportFailure, match="could not be sent as HTTP"):
        http.request("GET", "/", headers={"X-Bad": "a\r\nInjected: 1"})
    assert http.silent == 0 and Handler.seen == []
    assert http.request("GET", "/ok").status == 200  # the connection it spoilt is not reused
    http.close()


def test_a_url_off_the_target_is_never_sent(server, monkeypatch):
    """The run talks only to the target it was given: not to another origin a check was
    handed (a card's URL, say), and not through an environment proxy."""
    from conformance.transport.http import TransportFailure

    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    http = HttpTransport(url(server), timeout=5)
    with pytest.raises(TransportFailure, match="neither on the target .* nor a URL the config names") as why:
        http.request("GET", "http://127.0.0.1:9/elsewhere")
    assert why.value.cause == "kit"  # the kit's own refusal: never the target's failure
    assert http.silent == 0 and Handler.seen == []
    same = f"{url(server)}/same-origin"
    assert http.request("GET", same).json() == {"path": "/same-origin"}  # direct, not via the proxy
    http.close()


def test_an_answer_sent_before_the_body_was_read_is_still_the_answer(server):
    """A server may refuse a large body (413) before reading it and close: the request's
    write then breaks, and the answer that did arrive is what the exchange got (as httpcore
    reads it too)."""
    http = HttpTransport(url(server), timeout=10)
    reply = http.request("POST", "/early", content=b"x" * (8 * 2**20))
    assert reply.status == 413 and reply.json() == {"error": "too large"}
    assert http.silent == 0
    http.close()


def test_an_origin_the_config_names_is_sent_to_with_its_own_host_and_its_failures_are_its_own(server):
    """The control interface on an admin port (HttpTransport.allow): reached with its own Host
    and none of the target URL's credentials; no answer there is the control's doing and never
    counts towards the target being gone."""
    from conformance.transport.http import DEAD_AFTER, TransportFailure

    target = url(server).replace("http://", "http://user:pw@")
    admin = url(server).replace("127.0.0.1", "localhost")  # the same server, another origin
    http = HttpTransport(target, timeout=5)
    http.allow(admin + "/_control", "control")
    Handler.seen.clear()
    assert http.request("GET", admin + "/_control/snapshot").json() == {"path": "/_control/snapshot"}
    seen = Handler.seen[-1]
    assert seen["host"] == admin.removeprefix("http://") and "authorization" not in seen
    http.request("GET", "/on-target")
    assert Handler.seen[-1]["host"] == url(server).removeprefix("http://")
    assert Handler.seen[-1]["authorization"].startswith("Basic ")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{s.getsockname()[1]}"
    http.allow(gone, "control")
    for _ in range(DEAD_AFTER + 1):
        with pytest.raises(TransportFailure) as why:
            http.request("POST", gone + "/_control/reset", json_body={})
        assert why.value.cause == "control"
    assert http.dead is None and http.silent == 0  # the target is not gone for it
    http.close()
