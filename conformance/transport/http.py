"""How requests travel: an httpx client aimed at a live URL or, in-process, at an
ASGI app. Every request is recorded as a redacted Exchange.

A live target is a stranger: each exchange has a wall-clock deadline (connect,
headers and body together, so a drip cannot stretch it), an answer is read as a
stream up to a size limit (decompressed size included), redirects are never
followed, and a target that stops answering ends the run instead of stalling it."""

from __future__ import annotations

import json
import shlex
import threading
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from conformance.jsontext import MAX_JSON_DEPTH, json_excerpt, parse_json  # noqa: F401  (re-exported)
from conformance.ledger import LEDGER
from conformance.model import Exchange

# Bodies beyond this many characters are cut in recorded exchanges (a 10 MB probe
# must not produce a 10 MB case file).
RECORD_LIMIT = 16_384
REFERENCE_BASE = "http://reference.local"

DEFAULT_TIMEOUT = 5.0  # seconds for one whole exchange: connect, headers, body
DEFAULT_MAX_ANSWER = 8 * 2**20  # bytes of one answer, decompressed
DEAD_AFTER = 3  # consecutive exchanges without an answer before the target counts as gone


class RunAborted(BaseException):  # noqa: N818 - a signal to stop, not an error of one check
    """Stops the whole run, not one check. A BaseException, so that neither
    hypothesis (which would shrink on it) nor a check's ``except Exception``
    swallows it."""


class TargetUnreachable(RunAborted):
    """The target cannot be reached, or stopped answering: the run stops (exit 3)."""


class RunStopped(RunAborted):
    """The run's time limit passed, or the user interrupted it."""


def read_stop_file(path: Path) -> str | None:
    """Why the run stops, once another process of it wrote ``path``; else None."""
    try:
        return path.read_text(encoding="utf-8").strip() or "interrupted"
    except OSError:
        return None


def write_stop_file(path: Path, reason: str) -> None:
    """Tell every process of the run to stop (see ``HttpTransport.stop_file``)."""
    try:
        path.write_text(reason, encoding="utf-8")
    except OSError:
        pass  # the signalled process still stops; the others finish their item or get the signal too


class TransportFailure(Exception):
    """One request got no usable answer (timeout, reset, oversized answer)."""


@dataclass
class HttpReply:
    """What a check sees of one response."""

    status: int
    headers: httpx.Headers
    content: bytes
    exchange: Exchange
    _parsed: tuple[Any, str] | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The parsed body, or None when the body is not (usable) JSON."""
        return self._parse()[0]

    @property
    def json_error(self) -> str:
        """Why ``json()`` is None: "" when the body parsed."""
        return self._parse()[1]

    def _parse(self) -> tuple[Any, str]:
        if self._parsed is None:
            self._parsed = parse_json(self.content)
        return self._parsed


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


# -- the exchange deadline ----------------------------------------------------------
# httpx's timeouts bound each read, so a target that sends one byte a second never
# trips them. The deadline is enforced below httpx, on every socket operation.

_deadline = threading.local()


def _clip(timeout: float | None, exc: type[Exception]) -> float | None:
    until = getattr(_deadline, "at", None)
    if until is None:
        return timeout
    left = until - time.monotonic()
    if left <= 0:
        raise exc("the exchange's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clip(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clip(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                     _clip(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(host, port, _clip(timeout, httpcore.ConnectTimeout), local_address,
                                         socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(path, _clip(timeout, httpcore.ConnectTimeout),
                                                               socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _deadline_transport() -> httpx.HTTPTransport:
    transport = httpx.HTTPTransport(retries=0)
    pool = transport._pool  # httpx keeps its httpcore pool here (httpx < 1 is pinned)
    assert hasattr(pool, "_network_backend"), "httpcore changed: the exchange deadline cannot be installed"
    pool._network_backend = _DeadlineBackend(pool._network_backend)
    return transport


# -- bounded, decompressing reads -----------------------------------------------------


class AnswerTooLarge(Exception):
    pass


class _Inflater:
    """gzip / deflate with a bound on the output of each call (a 1 MB gzip body
    may inflate to 1 GiB)."""

    def __init__(self, encoding: str) -> None:
        self.gzip = encoding in ("gzip", "x-gzip")
        self._obj = zlib.decompressobj(16 + zlib.MAX_WBITS if self.gzip else zlib.MAX_WBITS)
        self._first = True
        self.over = False  # the last feed stopped at the limit

    def feed(self, data: bytes, limit: int) -> bytes:
        try:
            out = self._obj.decompress(data, limit + 1)
        except zlib.error:
            if self.gzip or not self._first:
                raise
            self._obj = zlib.decompressobj(-zlib.MAX_WBITS)  # deflate sent raw, as some servers do
            out = self._obj.decompress(data, limit + 1)
        self._first = False
        self.over = len(out) > limit or bool(self._obj.unconsumed_tail)
        return out


def read_bounded(chunks: Iterator[bytes], encodings: list[str], limit: int,
                 body: bytearray | None = None) -> tuple[bytes, list[str]]:
    """The body, decoded, or AnswerTooLarge once it passes ``limit`` bytes. Returns
    the encodings it could not decode (the body is then kept as sent). What arrived
    stays in ``body`` when reading is cut."""
    unknown = [e for e in encodings if e not in ("gzip", "x-gzip", "deflate", "identity", "")]
    stages = [] if unknown else [_Inflater(e) for e in reversed(encodings) if e not in ("identity", "")]
    body = bytearray() if body is None else body
    for chunk in chunks:
        for stage in stages:
            chunk = stage.feed(chunk, limit - len(body))
        body += chunk
        if len(body) > limit or any(stage.over for stage in stages):
            raise AnswerTooLarge
    return bytes(body), unknown


class _NoCookies(httpx.Cookies):
    def extract_cookies(self, response: httpx.Response) -> None:
        """Keep nothing an answer sets."""


class _Client(httpx.Client):
    """An httpx client without a cookie jar: each request carries what its check
    built, never a session cookie from an earlier answer (which would authenticate
    a request meant to go without a credential, and is not in the recorded exchange
    a case replays). It also spares a urllib request per answer, a tenth of a
    loopback run's time."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        raise TypeError("the suite's client keeps no cookies")


_NO_COOKIES = _NoCookies()


class HttpTransport:
    """One client for one target. ``log`` collects the exchanges of the current
    example; ``total`` counts every exchange of the run."""

    def __init__(
        self,
        base_url: str | None = None,
        app: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
        redactor: Redactor | None = None,
        max_answer: int = DEFAULT_MAX_ANSWER,
    ) -> None:
        self.redact = redactor or Redactor()
        self.log: list[Exchange] = []
        self.total = 0
        self.timeout = timeout
        self.max_answer = max_answer
        self.dead: str | None = None  # why the target counts as gone, once it does
        self.stopped: str | None = None  # why the run stops (time limit, signal), once it does
        self.run_deadline: float | None = None  # time.monotonic() at which the run's time is up
        # a file whose appearance stops the run (its text says why): how the process that
        # was signalled tells the others of a parallel run (xdist workers, fuzz workers)
        self.stop_file: Path | None = None
        self._stop_checked = 0.0
        self.silent = 0  # consecutive exchanges that got no answer
        self.answered = 0  # exchanges that got an answer
        self.on_exchange: Any = None  # called after each exchange (progress display)
        self.closing: list[Any] = []  # what lives as long as the client (a webhook receiver): closed with it
        self._app: Any = None  # the in-process reference, called without the client's layers
        if app is not None:
            from conformance.transport.inprocess import InProcessTransport

            self.base_url = REFERENCE_BASE
            self.target = "reference"
            self.live = False
            self._app = InProcessTransport(app)
            self._client: httpx.Client = _Client(base_url=REFERENCE_BASE, transport=self._app,
                                                 follow_redirects=False)
            self._client.__enter__()
        else:
            assert base_url is not None
            self.base_url = validate_target_url(base_url)
            self.target = self.base_url
            self.live = True
            password = urlsplit(self.base_url).password
            if password:
                self.redact.add("target.password", password)
            self._client = _Client(
                base_url=self.base_url,
                timeout=httpx.Timeout(timeout),
                follow_redirects=False,  # a redirect is an answer to judge, and never leads off the target
                transport=_deadline_transport(),
                headers={"Accept-Encoding": "gzip, deflate"},  # the encodings read_bounded can bound
            )

    def close(self) -> None:
        while self.closing:
            self.closing.pop()()
        self._client.__exit__(None, None, None)

    def check_running(self) -> None:
        """Raise RunAborted when the run must not send anything more."""
        if not self.stopped and self.stop_file is not None:
            now = time.monotonic()
            if now - self._stop_checked > 0.1:
                self._stop_checked = now
                self.stopped = read_stop_file(self.stop_file)
        if self.stopped:
            raise RunStopped(self.stopped)
        if self.dead:
            raise TargetUnreachable(self.dead)
        if self.run_deadline is not None and time.monotonic() >= self.run_deadline:
            self.stopped = "the run's time limit (--max-time) was reached"
            raise RunStopped(self.stopped)

    def request(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | str | None = None,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> HttpReply:
        """One exchange, bounded by the run's timeout (or ``timeout``: an exchange the
        protocol lets the server hold, a long poll say)."""
        with LEDGER.charge("transport"):
            return self._request(method, path, headers=headers, content=content, json_body=json_body,
                                 params=params, timeout=timeout)

    def _request(self, method: str, path: str, *, headers: Mapping[str, str] | None,
                 content: bytes | str | None, json_body: Any, params: Mapping[str, Any] | None,
                 timeout: float | None) -> HttpReply:
        self.check_running()
        hdrs = dict(headers or {})
        if json_body is not None:
            content = json.dumps(json_body)
            hdrs.setdefault("Content-Type", "application/json")
        body = content.encode() if isinstance(content, str) else content
        started = time.perf_counter()
        req = self._client.build_request(method, path, headers=hdrs, content=body, params=params)
        if timeout:
            req.extensions["timeout"] = httpx.Timeout(timeout).as_dict()
        record = {
            "method": method,
            "url": self.redact(str(req.url).replace(REFERENCE_BASE, "")) or "/",
            "headers": {k: self.redact(v) for k, v in hdrs.items()},
            "body": self.redact(_body_text(body)) if body else None,
        }
        until = time.monotonic() + (timeout or self.timeout)
        if self.run_deadline is not None:
            until = min(until, self.run_deadline)
        _deadline.at = until if self.live else None
        resp: httpx.Response | None = None
        arrived = bytearray()
        try:
            if self._app is not None:  # in process: the same answer, without the client's layers
                with LEDGER.charge("target in process"):
                    status, raw_headers, whole = self._app.call(req)
                resp = httpx.Response(status, headers=raw_headers, request=req)
                chunks: Iterator[bytes] = iter((whole,))
            else:
                resp = self._client.send(req, stream=True)
                chunks = resp.iter_raw()
            encodings = [e.strip().lower() for e in resp.headers.get("content-encoding", "").split(",")]
            content_out, unknown = read_bounded(chunks, encodings, self.max_answer, arrived)
        except AnswerTooLarge:
            assert resp is not None
            self.silent = 0
            why = f"answer larger than {self.max_answer / 2**20:g} MiB (HTTP {resp.status_code}): cut"
            self._fail(record, started, why, resp, arrived)
            raise TransportFailure(f"{method} {path}: {why}") from None
        except (httpx.HTTPError, zlib.error, OSError) as exc:
            why = _describe_error(exc, time.monotonic() >= until)
            self._fail(record, started, why, resp, arrived)
            if isinstance(exc, zlib.error | httpx.LocalProtocolError | httpx.UnsupportedProtocol):
                raise TransportFailure(f"{method} {path}: {why}") from None  # an answer, or our own request
            self._no_answer(why)
            raise TransportFailure(f"{method} {path}: no answer ({why})") from None
        finally:
            _deadline.at = None
            if resp is not None:
                resp.close()
        self.silent = 0
        self.answered += 1
        response = {
            "status": resp.status_code,
            "headers": {k: self.redact(v) for k, v in resp.headers.items()},
            "body": self.redact(_body_text(content_out)) if content_out else None,
        }
        note = f"content-encoding {', '.join(unknown)} not decoded" if unknown else ""
        exchange = Exchange(record, response, (time.perf_counter() - started) * 1000, note)
        self._remember(exchange)
        return HttpReply(resp.status_code, resp.headers, content_out, exchange)

    def _fail(self, record: dict[str, Any], started: float, why: str, response: httpx.Response | None,
              arrived: bytearray) -> None:
        """Record an exchange that got no usable answer, with what did arrive."""
        got = None
        if response is not None:
            got = {"status": response.status_code,
                   "headers": {k: self.redact(v) for k, v in response.headers.items()},
                   "body": self.redact(_body_text(bytes(arrived))) if arrived else None}
        self._remember(Exchange(record, got, (time.perf_counter() - started) * 1000, self.redact(why)))

    def _no_answer(self, why: str) -> None:
        self.silent += 1
        if self.silent >= DEAD_AFTER:
            verb = "stopped answering" if self.answered else "did not answer"
            self.dead = self.redact(f"{self.base_url} {verb} ({self.silent} exchanges in a row "
                                    f"got no answer; the last: {why})")
            raise TargetUnreachable(self.dead)

    def _remember(self, exchange: Exchange) -> None:
        with LEDGER.charge("recording"):
            self._keep(exchange)

    def _keep(self, exchange: Exchange) -> None:
        self.log.append(exchange)
        self.total += 1
        if self.on_exchange:
            self.on_exchange()


def _describe_error(exc: BaseException, deadline_passed: bool) -> str:
    if isinstance(exc, httpx.TimeoutException) or deadline_passed:
        return "no complete answer within the exchange's deadline"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect ({exc})"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"not an HTTP answer or connection closed early ({exc})"
    if isinstance(exc, httpx.LocalProtocolError):
        return f"the request could not be sent as HTTP ({exc})"
    if isinstance(exc, zlib.error):
        return f"body does not decompress as its Content-Encoding says ({exc})"
    return f"{type(exc).__name__}: {exc}"


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
