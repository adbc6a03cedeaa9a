"""A webhook receiver for the run: a small HTTP server on 127.0.0.1 (a free port, or the
config's ``receiver: port``), in a thread, that records what a target POSTs to it. It is
started the first time a check asks for it and closed with the run's transport.

Each check opens a box of its own (``open_box``): a path holding an unguessable token. The
receiver answers only POSTs to an open box's path; anything else (another path, a token it
never issued, another verb) gets a 404 or 405 and is not recorded. What it keeps is bounded:
each body at most ``MAX_BODY`` bytes (413 beyond), each box at most ``MAX_PER_BOX``
deliveries, at most ``MAX_BOXES`` boxes (the oldest closed first).

A target on another machine cannot reach 127.0.0.1: the config's ``receiver: url`` names the
URL the target should call, forwarded (an SSH tunnel, say) to the local port. Protocol-free:
a box records HTTP requests; what they must hold is the protocol's to judge."""

from __future__ import annotations

import ipaddress
import secrets
import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY = 256 * 1024
MAX_PER_BOX = 64
MAX_BOXES = 256
PREFIX = "/conformance-receiver"
KEY = "conformance receiver"  # its place in a run's scratch


@dataclass
class Delivery:
    """One request a box accepted: its headers (lower-case names) and raw body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int  # what the receiver answered

    def json(self) -> Any:
        import json

        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass
class Box:
    """Where one check's deliveries arrive. ``answers``: the statuses to give the first
    deliveries, in order (then 200): a receiver that fails on purpose."""

    token: str
    answers: list[int] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    dropped: int = 0  # deliveries beyond MAX_PER_BOX


class Receiver:
    """The run's receiver (module doc)."""

    def __init__(self, port: int = 0, public_url: str | None = None) -> None:
        self.boxes: OrderedDict[str, Box] = OrderedDict()
        self.refused = 0  # requests that were not a delivery to an open box
        self.changed = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self.handler())
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.local_url = f"http://127.0.0.1:{self.port}"
        self.public_url = (public_url or self.local_url).rstrip("/")
        self.thread = threading.Thread(target=self.server.serve_forever, name="conformance-receiver",
                                       kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    # -- boxes ---------------------------------------------------------------------------
    def open_box(self, answers: list[int] | None = None) -> Box:
        with self.changed:
            while len(self.boxes) >= MAX_BOXES:
                self.boxes.popitem(last=False)
            box = Box(secrets.token_urlsafe(18), list(answers or []))
            self.boxes[box.token] = box
            return box

    def close_box(self, box: Box) -> None:
        with self.changed:
            self.boxes.pop(box.token, None)

    def url(self, box: Box) -> str:
        """The URL the target is asked to call for ``box``."""
        return f"{self.public_url}{PREFIX}/{box.token}"

    @property
    def reachable_from_anywhere(self) -> bool:
        """Whether the URL given to targets is not a loopback one (the config named a forward)."""
        host = urllib.parse.urlsplit(self.public_url).hostname or ""
        try:
            return not ipaddress.ip_address(host).is_loopback
        except ValueError:
            return host != "localhost"

    def wait(self, box: Box, done: Callable[[list[Delivery]], bool], timeout: float) -> list[Delivery]:
        """The box's deliveries once ``done`` says so, or when ``timeout`` seconds have passed."""
        end = time.monotonic() + timeout
        with self.changed:
            while not done(list(box.deliveries)):
                left = end - time.monotonic()
                if left <= 0:
                    break
                self.changed.wait(left)
            return list(box.deliveries)

    # -- the server ----------------------------------------------------------------------
    def accept(self, method: str, path: str, headers: dict[str, str], read: Callable[[int], bytes]) -> int:
        """The status for one request; a delivery to an open box is recorded."""
        parts = urllib.parse.urlsplit(path).path.rstrip("/")
        token = parts[len(PREFIX) + 1:] if parts.startswith(PREFIX + "/") else ""
        with self.changed:
            box = self.boxes.get(token) if token and "/" not in token else None
        if box is None:
            self.refused += 1
            return 404
        if method != "POST":
            self.refused += 1
            return 405
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            return 411
        if length < 0 or length > MAX_BODY:
            return 413
        body = read(length) if length else b""
        with self.changed:
            status = box.answers.pop(0) if box.answers else 200
            if len(box.deliveries) < MAX_PER_BOX:
                box.deliveries.append(Delivery(method, path, headers, body, status))
            else:
                box.dropped += 1
            self.changed.notify_all()
        return status

    def handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_any(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                status = receiver.accept(self.command, self.path, headers, self.rfile.read)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                if status >= 400:
                    self.send_header("Connection", "close")
                self.end_headers()

            do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                """Silent: what arrives is in the boxes, and a header may hold a secret."""

        return Handler

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        with self.changed:
            self.boxes.clear()
            self.changed.notify_all()


def receiver_of(run: Any) -> Receiver:
    """The run's receiver, started on first use and closed with the run's transport. The
    run's ``receiver`` settings (config ``receiver:``) give its port and the URL targets call.
    OSError when the port cannot be bound."""
    found = run.scratch.get(KEY)
    if isinstance(found, Receiver):
        return found
    settings = getattr(run, "receiver", None) or {}
    receiver = Receiver(port=int(settings.get("port") or 0), public_url=settings.get("url"))
    run.scratch[KEY] = receiver
    run.http.closing.append(receiver.close)
    return receiver
