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
reference's stream wakes across threads). An exception in the app is a 500 answer (as a
real server would give), never an exception of the check."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx


class InProcessTransport(httpx.BaseTransport):
    def __init__(self, app: object) -> None:
        self._asgi = httpx.ASGITransport(app=self._streams_let_others_in(app),  # type: ignore[arg-type]
                                         raise_app_exceptions=False)
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
        body = request.read()

        async def call() -> tuple[int, httpx.Headers, bytes]:
            inner = httpx.Request(request.method, request.url, headers=request.headers, content=body)
            response = await self._asgi.handle_async_request(inner)
            content = b"".join([chunk async for chunk in response.stream])  # type: ignore[union-attr]
            return response.status_code, response.headers, content

        loop = self._loop()
        self._turn.acquire()
        self._holding.turn = True
        try:
            status, headers, content = loop.run_until_complete(call())
        finally:
            self._let_others_in()
        return httpx.Response(status, headers=headers, stream=httpx.ByteStream(content), request=request)

    def close(self) -> None:
        for loop in self._every:
            loop.close()
