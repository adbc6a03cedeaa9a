"""The live target's HTTP/1.1 client: the standard library's http.client over kept-alive
sockets whose every read, write and connect is clipped to the exchange's deadline.

Why not httpx here: on loopback an httpx exchange cost 0.9 ms of the kit's CPU and an
http.client exchange 0.2 ms (`bench/bench_speed.py`), and a fuzz campaign is mostly
exchanges. What httpx gave that a campaign needs is kept: one wall-clock deadline for
connect, headers and body together (so a target that drips a byte a second cannot stretch
it), connections kept alive and checked before reuse, TLS verified with httpx's own
context (certifi, ``SSL_CERT_FILE``) unless the run's TLS settings give another (a CA
bundle, no verification, a client certificate: credentials.py), and no redirect followed."""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

import httpx


def validate_target_url(url: Any) -> str:
    """Return the URL without a trailing slash, or raise ValueError with a one-line reason."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"target {url!r} is not an http(s) URL (expected e.g. http://127.0.0.1:3773)")
    try:
        parts.port  # noqa: B018 - raises on a port out of range or not a number
    except ValueError as exc:
        raise ValueError(f"target {url!r} has a bad port: {exc}") from None
    return url.rstrip("/")


class DeadlinePassed(TimeoutError):
    """The exchange's deadline passed before the answer was complete."""


class ConnectFailed(OSError):
    """No connection to the target (refused, unresolvable, TLS handshake refused)."""


class RequestUnsendable(ValueError):
    """Our own request is not valid HTTP (a header value with a line break, say)."""


class _Clipped(socket.socket):
    """Each blocking socket call waits at most until ``until`` (time.monotonic()); mixed
    before ``socket.socket`` or ``ssl.SSLSocket``, whose calls it clips."""

    until: float | None = None

    def _clip(self) -> None:
        if self.until is None:
            return
        left = self.until - time.monotonic()
        if left <= 0:
            raise DeadlinePassed("the exchange's deadline passed")
        self.settimeout(left)

    def recv_into(self, *args: Any, **kw: Any) -> int:
        self._clip()
        return super().recv_into(*args, **kw)

    def recv(self, *args: Any, **kw: Any) -> bytes:
        self._clip()
        return super().recv(*args, **kw)

    def sendall(self, *args: Any, **kw: Any) -> None:
        self._clip()
        super().sendall(*args, **kw)


class DeadlineSocket(_Clipped):
    pass


class DeadlineSSLSocket(_Clipped, ssl.SSLSocket):
    pass


def clipped(conn: http.client.HTTPConnection) -> _Clipped:
    """The socket of a connection this module made: a DeadlineSocket or DeadlineSSLSocket."""
    return cast(_Clipped, conn.sock)


def _readable(sock: socket.socket) -> bool:
    """Whether an idle socket has something to read now (the peer closed it, or sent what
    was not asked for): poll, which has no limit on descriptor numbers as select has."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


@dataclass
class Answer:
    """The status line and headers of an answer; ``chunks`` yields the body as it arrives
    (raw: content-encoding is the caller's) and gives the connection back at its end."""

    status: int
    headers: list[tuple[bytes, bytes]]
    chunks: Iterator[bytes]
    close: Any  # call when the body is not read to its end: the connection is not reused
    _view: httpx.Headers | None = None

    def headers_view(self) -> httpx.Headers:
        """The headers as a case-insensitive multi-dict (made once)."""
        if self._view is None:
            self._view = httpx.Headers(self.headers)
        return self._view

    def header(self, name: str) -> str:
        return self.headers_view().get(name, "")


class Wire:
    """Kept-alive connections to one origin; safe to share between threads (each
    exchange has a connection to itself)."""

    def __init__(self, *, scheme: str, host: str, port: int,
                 context: Callable[[], ssl.SSLContext] | None = None) -> None:
        self.scheme, self.host, self.port = scheme, host, port
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None
        self._make_context = context or httpx.create_ssl_context  # the verification httpx gave

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            context = self._make_context()
            context.set_alpn_protocols(["http/1.1"])
            context.sslsocket_class = DeadlineSSLSocket
            self._tls = context
        return self._tls

    def _connect(self, until: float) -> http.client.HTTPConnection:
        left = until - time.monotonic()
        if left <= 0:
            raise DeadlinePassed("the exchange's deadline passed")
        try:
            raw = socket.create_connection((self.host, self.port), timeout=left)
        except TimeoutError:
            raise DeadlinePassed("the exchange's deadline passed while connecting") from None
        except OSError as exc:
            raise ConnectFailed(str(exc)) from None
        sock = DeadlineSocket(fileno=raw.detach())
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = http.client.HTTPConnection(self.host, self.port)
        conn.sock = sock
        if self.scheme == "https":
            sock.until = until
            sock.settimeout(max(until - time.monotonic(), 0.001))
            try:  # a DeadlineSSLSocket (the context's sslsocket_class)
                conn.sock = self._context().wrap_socket(sock, server_hostname=self.host)
            except ssl.SSLError as exc:
                sock.close()
                raise ConnectFailed(f"TLS: {exc}") from None
        return conn

    def _take(self, until: float) -> http.client.HTTPConnection:
        """An idle connection the target has not closed meanwhile, or a new one (a closed
        one would fail the request it carries: httpx checks the same way)."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(until)
            try:
                readable = conn.sock is None or _readable(conn.sock)
            except (OSError, ValueError):
                readable = True
            if not readable:
                return conn
            conn.close()  # closed by the target (or it sent something unasked): not reused

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        if conn.sock is not None:
            clipped(conn).until = None
            with self._lock:
                self._idle.append(conn)

    def exchange(self, *, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes | None,
                 until: float) -> Answer:
        """Send one request and read the answer's head; every wait ends by ``until``."""
        conn = self._take(until)
        clipped(conn).until = until
        try:
            try:
                conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    conn.putheader(name, value)
            except (ValueError, UnicodeError, http.client.CannotSendRequest) as exc:
                raise RequestUnsendable(str(exc)) from None
            try:
                conn.endheaders(body or None)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the target may answer before it reads the whole body (a 413), and close
            response = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in response.getheaders()]
        finished = [False]

        def close() -> None:
            if not finished[0]:
                finished[0] = True
                conn.close()

        def chunks() -> Iterator[bytes]:
            try:
                while data := response.read1(65536):
                    yield data
            except BaseException:
                close()
                raise
            if not finished[0]:
                finished[0] = True
                response.close()  # read to its end: the connection may carry the next request
                if response.will_close:
                    conn.close()
                else:
                    self._give_back(conn)

        return Answer(response.status, raw, chunks(), close)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
