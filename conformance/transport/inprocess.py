"""The built-in reference, called in the caller's own thread.

starlette's TestClient runs the app on an event loop in another thread and crosses
over about eight times per request (a portal per ASGI message): on a quick run that
was a third of the suite's time, and made the reference look slower in process than
over loopback. Here one private event loop runs the app to completion for each
request, in this thread. Requests from several threads (concurrent replays) take
turns: each thread has its own loop, and one request runs at a time, so the app sees
them one after another as a single-threaded server would. One answer waits on others:
an event stream (``text/event-stream``) follows changes later requests make, so once its
headers are sent the others may run, as they would beside a server's open stream (a
reference's stream wakes across threads). An app that waits for another request (a blocking
send waiting for a peer's message) lets the others in the same way, through the scope's
``extensions["conformance.turn"]["let_others_in"]`` (``conformance.kit.reference.let_others_in``):
a real server serves a peer while one caller waits, so the reference does too. An exception
in the app is a 500 answer (as a real server would give), never an exception of the check."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx

TURN = "conformance.turn"  # the ASGI scope extension by which an app lets the others in (reference.py)


class InProcessTransport(httpx.BaseTransport):
    def __init__(self, app: object) -> None:
        self._app = self._streams_let_others_in(app)
        self._loops = threading.local()
        self._every: list[asyncio.AbstractEventLoop] = []
        self._turn = threading.Lock()
        self._holding = threading.local()  # whether this thread's request holds the turn

    def _streams_let_others_in(self, app: Any) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            async def sending(message: Any) -> None:
                if message.get("type") == "http.response.start" and any(
                        name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                        for name, value in message.get("headers") or []):
                    self._let_others_in()
                await send(message)
            await app(scope, receive, sending)
        return wrapped

    def _let_others_in(self) -> None:
        if getattr(self._holding, "turn", False):
            self._holding.turn = False
            self._turn.release()

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop = getattr(self._loops, "loop", None)
        if loop is None:
            loop = self._loops.loop = asyncio.new_event_loop()
            self._every.append(loop)
        return loop

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        status, headers, content = self.call(method=request.method, url=request.url,
                                             headers=list(request.headers.raw), body=request.read())
        return httpx.Response(status, headers=headers, stream=httpx.ByteStream(content), request=request)

    def call(self, *, method: str, url: httpx.URL, headers: list[tuple[bytes, bytes]],
             body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """(status, headers, body) of the app's answer to a request: the ASGI exchange
        driven here as httpx's ASGITransport drives it (the body, then a disconnect once the
        answer is complete), without a client's layers around it."""
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "headers": [(k.lower(), v) for k, v in headers],
                 "scheme": url.scheme, "path": url.path, "raw_path": url.raw_path.split(b"?")[0],
                 "query_string": url.query, "server": (url.host, url.port), "client": ("127.0.0.1", 123),
                 "root_path": "", "extensions": {TURN: {"let_others_in": self._let_others_in}}}

        async def exchange() -> tuple[int, list[tuple[bytes, bytes]], bytes]:
            answer: dict[str, Any] = {"status": None, "headers": None}
            parts: list[bytes] = []
            complete = asyncio.Event()
            read = False

            async def receive() -> dict[str, Any]:
                nonlocal read
                if read:
                    await complete.wait()
                    return {"type": "http.disconnect"}
                read = True
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: Any) -> None:
                if message["type"] == "http.response.start":
                    answer["status"], answer["headers"] = message["status"], message.get("headers") or []
                elif message["type"] == "http.response.body":
                    if message.get("body") and method != "HEAD":
                        parts.append(message["body"])
                    if not message.get("more_body", False):
                        complete.set()
            try:
                await self._app(scope, receive, send)
            except Exception:  # noqa: BLE001 - an exception in the app is a 500 answer, as a server gives
                complete.set()
            return answer["status"] or 500, list(answer["headers"] or []), b"".join(parts)

        loop = self._loop()
        self._turn.acquire()
        self._holding.turn = True
        try:
            return loop.run_until_complete(exchange())
        finally:
            self._let_others_in()

    def close(self) -> None:
        for loop in self._every:
            loop.close()
