"""A reverse proxy on loopback, for the kit's tests: a target "behind a proxy", as operators
deploy them (the API under a path of the proxy's host, the control interface reached beside it).

    python tests/proxy.py --port N --upstream http://127.0.0.1:M [--prefix /agent]

Each request to ``http://127.0.0.1:N<prefix>/x`` goes to ``<upstream>/x`` as a proxy of the common
kind sends it: its Host the upstream's (nginx's default), ``X-Forwarded-*`` added, hop-by-hop headers
dropped; the answer comes back as it streams (an event stream included), its encoding untouched.
A path outside the prefix is the proxy's own 404. It prints ``listening on <url>`` once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te", b"trailer",
              b"transfer-encoding", b"upgrade", b"host"}


def proxy_app(upstream: str, prefix: str) -> Any:
    client = httpx.AsyncClient(base_url=upstream, timeout=httpx.Timeout(60.0), trust_env=False,
                               follow_redirects=False)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        raw_path = scope.get("raw_path") or scope["path"].encode()
        if not raw_path.startswith(prefix.encode()):
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"not behind this proxy"})
            return
        path = raw_path[len(prefix):] or b"/"
        if not path.startswith(b"/"):
            path = b"/" + path
        query = scope.get("query_string") or b""
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        client_host = (scope.get("client") or ("127.0.0.1", 0))[0]
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        headers += [(b"x-forwarded-for", client_host.encode()), (b"x-forwarded-proto", b"http"),
                    (b"x-forwarded-prefix", prefix.encode() or b"/")]
        url = httpx.URL(upstream).copy_with(raw_path=path + (b"?" + query if query else b""))
        request = client.build_request(scope["method"], url, headers=headers, content=body)
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            await send({"type": "http.response.start", "status": 502,
                        "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": f"bad gateway: {exc}".encode()})
            return
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    return app


@contextlib.contextmanager
def proxy(upstream: str, prefix: str = "", timeout: float = 20.0) -> Iterator[str]:
    """Yield the proxy's base URL (``http://127.0.0.1:<port><prefix>``) in front of ``upstream``."""
    from tests.conftest import child_server, free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with child_server([sys.executable, str(Path(__file__).resolve()), "--port", str(port), "--upstream",
                       upstream, "--prefix", prefix], base, timeout):
        yield base + prefix


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--prefix", default="")
    args = parser.parse_args()
    prefix = args.prefix.rstrip("/")
    config = uvicorn.Config(proxy_app(args.upstream.rstrip("/"), prefix), host="127.0.0.1", port=args.port,
                            log_level="warning")
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.ensure_future(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            print(f"listening on http://127.0.0.1:{args.port}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
