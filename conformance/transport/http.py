"""How requests travel: an httpx client aimed at a live URL or, in-process, at an
ASGI app. Every request is recorded as a redacted Exchange."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from conformance.model import Exchange

# Bodies beyond this many characters are cut in recorded exchanges (a 10 MB probe
# must not produce a 10 MB case file).
RECORD_LIMIT = 16_384
REFERENCE_BASE = "http://reference.local"


class TargetUnreachable(Exception):
    """The target could not be connected to at all: the run stops with exit 3."""


class TransportFailure(Exception):
    """A request got no usable answer (timeout, broken connection)."""


@dataclass
class Reply:
    """What a check sees of one response."""

    status: int
    headers: httpx.Headers
    content: bytes
    exchange: Exchange

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The parsed body, or None when the body is not JSON."""
        try:
            return json.loads(self.content)
        except ValueError:
            return None


def validate_target_url(url: str) -> str:
    """Return the URL without a trailing slash, or raise ValueError with a one-line reason."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"target {url!r} is not an http(s) URL (expected e.g. http://127.0.0.1:3773)")
    return url.rstrip("/")


class Redactor:
    """Replaces every known secret by ``<redacted:label>``, wherever it appears."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self.secrets: dict[str, str] = {}
        for label, value in (secrets or {}).items():
            self.add(label, value)

    def add(self, label: str, value: str | None) -> None:
        if value and len(value) >= 4:
            self.secrets[value] = label

    def __call__(self, text: str) -> str:
        for value in sorted(self.secrets, key=len, reverse=True):
            if value in text:
                text = text.replace(value, f"<redacted:{self.secrets[value]}>")
        return text


def _body_text(content: bytes) -> str:
    text = content[:RECORD_LIMIT].decode("utf-8", errors="replace")
    if len(content) > RECORD_LIMIT:
        text += f"\n... [{len(content) - RECORD_LIMIT} more bytes not recorded]"
    return text


class HttpTransport:
    """One client for one target. ``log`` collects the exchanges of the current
    example; ``total`` counts every exchange of the run."""

    def __init__(
        self,
        base_url: str | None = None,
        app: Any = None,
        timeout: float = 10.0,
        redactor: Redactor | None = None,
    ) -> None:
        self.redact = redactor or Redactor()
        self.log: list[Exchange] = []
        self.total = 0
        self.dead: str | None = None  # why the target is unreachable, once it is
        self.on_exchange: Any = None  # called after each exchange (progress display)
        if app is not None:
            import warnings

            with warnings.catch_warnings():  # starlette suggests httpx2; httpx is the chosen client
                warnings.simplefilter("ignore")
                from starlette.testclient import TestClient

            self.base_url = REFERENCE_BASE
            self.target = "reference"
            self._client: httpx.Client = TestClient(
                app, base_url=REFERENCE_BASE, raise_server_exceptions=False, follow_redirects=False
            )
            self._client.__enter__()
        else:
            assert base_url is not None
            self.base_url = validate_target_url(base_url)
            self.target = self.base_url
            self._client = httpx.Client(
                base_url=self.base_url, timeout=httpx.Timeout(timeout), follow_redirects=False
            )

    def close(self) -> None:
        self._client.__exit__(None, None, None)

    def request(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | str | None = None,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Reply:
        if self.dead:
            raise TargetUnreachable(self.dead)
        hdrs = dict(headers or {})
        if json_body is not None:
            content = json.dumps(json_body)
            hdrs.setdefault("Content-Type", "application/json")
        body = content.encode() if isinstance(content, str) else content
        started = time.perf_counter()
        req = self._client.build_request(method, path, headers=hdrs, content=body, params=params)
        record = {
            "method": method,
            "url": self.redact(str(req.url).replace(REFERENCE_BASE, "")) or "/",
            "headers": {k: self.redact(v) for k, v in hdrs.items()},
            "body": self.redact(_body_text(body)) if body else None,
        }
        try:
            resp = self._client.send(req)
        except httpx.ConnectError as exc:
            self.dead = f"cannot connect to {self.base_url}: {exc}"
            raise TargetUnreachable(self.dead) from exc
        except httpx.HTTPError as exc:
            exchange = Exchange(record, None, (time.perf_counter() - started) * 1000, f"{type(exc).__name__}: {exc}")
            self._remember(exchange)
            raise TransportFailure(f"{method} {path}: no answer ({type(exc).__name__})") from exc
        exchange = Exchange(
            record,
            {
                "status": resp.status_code,
                "headers": {k: self.redact(v) for k, v in resp.headers.items()},
                "body": self.redact(_body_text(resp.content)) if resp.content else None,
            },
            (time.perf_counter() - started) * 1000,
        )
        self._remember(exchange)
        return Reply(resp.status_code, resp.headers, resp.content, exchange)

    def _remember(self, exchange: Exchange) -> None:
        self.log.append(exchange)
        self.total += 1
        if self.on_exchange:
            self.on_exchange()


def curl_line(exchange: Exchange, base_url: str = "$TARGET") -> str:
    """A curl command that sends the recorded request again (secrets stay redacted:
    replace the ``<redacted:...>`` markers with your own values)."""
    req = exchange.request
    url = req["url"]
    where = f'"{base_url}"{shlex.quote(url)}' if url.startswith("/") else shlex.quote(url)
    parts = ["curl", "-sS", "-i", "-X", req["method"], where]
    for name, value in req.get("headers", {}).items():
        parts += ["-H", shlex.quote(f"{name}: {value}")]
    if req.get("body") is not None:
        parts += ["--data-binary", shlex.quote(req["body"])]
    return " ".join(parts)
