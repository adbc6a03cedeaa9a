"""Deliberately broken HTTP targets on loopback, one behaviour each: drips, hangs,
huge, endless and inflating bodies, deep JSON, echoed secrets, resets, redirects,
answers that are not HTTP. A small threaded socket server, no framework: the
point is to misbehave below the level where HTTP libraries would tidy it up."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable
from functools import cache

Handler = Callable[["Conn"], None]


class Conn:
    """One accepted connection, with the request read off it."""

    def __init__(self, sock: socket.socket, server: HostileServer) -> None:
        self.sock = sock
        self.server = server
        self.headers: dict[str, str] = {}
        self.body = b""

    def read_request(self) -> bool:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(65536)
            if not chunk:
                return False
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        length = int(self.headers.get("content-length", "0") or 0)
        got = len(rest)
        # read it all (keeping the first MiB): closing on unread data would reset the answer
        while got < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            got += len(chunk)
            if len(rest) < 1 << 20:
                rest += chunk
        self.body = rest[:length]
        return True

    def request_id(self) -> object:
        try:
            return json.loads(self.body).get("id", 1)
        except (ValueError, AttributeError):
            return 1

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answer(self, body: bytes, status: str = "200 OK", ctype: str = "application/json",
               extra: str = "") -> None:
        self.send(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n{extra}"
                  "Connection: close\r\n\r\n".encode() + body)

    def rpc_result(self) -> None:
        self.answer(json.dumps({"jsonrpc": "2.0", "id": self.request_id(), "result": []}).encode())

    def rpc_error(self, message: str, data: object = None) -> None:
        error = {"code": -32600, "message": message, "data": data}
        self.answer(json.dumps({"jsonrpc": "2.0", "id": self.request_id(), "error": error}).encode())

    def reset(self) -> None:
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


class HostileServer:
    """Serves ``handler`` on 127.0.0.1 until stopped; counts connections."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1") -> None:
        self.handler = handler
        self.listener = socket.create_server((host, 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self.connections = 0
        self.requests = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            threading.Thread(target=self._handle, args=(sock,), daemon=True).start()

    def _handle(self, sock: socket.socket) -> None:
        conn = Conn(sock, self)
        try:
            self.handler(conn)
        except OSError:
            pass  # the client gave up, as it should
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self.listener.close()
        self._thread.join(timeout=5)


def serving(conn: Conn) -> bool:
    """Read one request; False when the client went away."""
    if not conn.read_request():
        return False
    conn.server.requests += 1
    return True


def sleep_while(conn: Conn, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not conn.server.stopped():
        time.sleep(0.05)


# -- the behaviours -------------------------------------------------------------------


def body_drip(conn: Conn) -> None:
    """200 with a body sent one byte per second."""
    if serving(conn):
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 600\r\n\r\n")
        while not conn.server.stopped():
            conn.send(b" ")
            sleep_while(conn, 1)


def header_drip(conn: Conn) -> None:
    """The response headers, one byte per second."""
    if serving(conn):
        for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"a" * 600:
            if conn.server.stopped():
                return
            conn.send(bytes([byte]))
            sleep_while(conn, 1)


def first_then_hang(conn: Conn) -> None:
    """Answers the first request properly, then reads requests and never answers."""
    if serving(conn):
        if conn.server.requests == 1:
            conn.rpc_result()
        else:
            sleep_while(conn, 600)


def huge_body(conn: Conn) -> None:
    """A 1 GiB JSON body (as long as the client keeps reading)."""
    if serving(conn):
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n["
                  % (1 << 30))
        chunk = b"0," * 32768
        for _ in range((1 << 30) // len(chunk)):
            if conn.server.stopped():
                return
            conn.send(chunk)


def endless_body(conn: Conn) -> None:
    """A chunked body that never ends."""
    if serving(conn):
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"1" * 65536
        while not conn.server.stopped():
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))


@cache
def gzip_bomb_body() -> bytes:
    """About 1 MB of gzip that inflates to 1 GiB of zeros (run-length matching: as small as
    level 9's default search makes it, in well under half the time)."""
    zero = b"\0" * (1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, 31, 9, zlib.Z_RLE)
    return b"".join(comp.compress(zero) for _ in range(1024)) + comp.flush()


def gzip_bomb(conn: Conn) -> None:
    if serving(conn):
        conn.answer(gzip_bomb_body(), extra="Content-Encoding: gzip\r\n")


def deep_json_after_first(conn: Conn) -> None:
    """A proper first answer, then JSON nested 100,000 deep."""
    if serving(conn):
        if conn.server.requests == 1:
            conn.rpc_result()
        else:
            conn.answer(b"[" * 100_000 + b"]" * 100_000)


def echo_secrets(conn: Conn) -> None:
    """JSON-RPC errors that quote the request's headers back, Authorization first."""
    if serving(conn):
        conn.rpc_error(f"unauthorized: {conn.headers.get('authorization', '')}", {"headers": conn.headers})


def reset_first(conn: Conn) -> None:
    """The first connection is reset; afterwards every request gets a JSON-RPC error."""
    if conn.server.connections == 1:
        conn.reset()
        return
    if serving(conn):
        conn.rpc_error("no such method")


def invalid_utf8(conn: Conn) -> None:
    if serving(conn):
        conn.answer(b'\xff\xfe{"jsonrpc": "2.0", "id": 1, "result": "\xc3\x28"}')


def html_proxy(conn: Conn) -> None:
    if serving(conn):
        conn.answer(b"<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>", "502 Bad Gateway",
                    "text/html")


def not_http(conn: Conn) -> None:
    if serving(conn):
        conn.send(b"SSH-2.0-OpenSSH_9.6\r\n")


def redirect_to(url: str) -> Handler:
    def redirect(conn: Conn) -> None:
        if serving(conn):
            conn.answer(b"", "302 Found", "text/plain", extra=f"Location: {url}/\r\n")

    return redirect


def well_behaved(conn: Conn) -> None:
    if serving(conn):
        conn.rpc_result()
