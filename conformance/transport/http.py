"""How requests travel: over wire.py's HTTP/1.1 client to a live URL or, in process,
straight into the reference's ASGI app; httpx gives the URL and header types. Every
request is recorded as a redacted Exchange.

A live target is a stranger: each exchange has a wall-clock deadline (connect,
headers and body together, so a drip cannot stretch it), an answer is read as a
stream up to a size limit (decompressed size included), redirects are never
followed, no cookie an answer sets is sent back, nothing goes anywhere but the
target and the URLs the config names (environment proxies are not used), and a target
that stops answering ends the run instead of stalling it.

What a request as an identity carries beyond its headers (an API key in the query, a
client certificate: credentials.py) is given for the requests made inside ``presenting``;
a client certificate has connections of its own."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import re
import ssl
import threading
import time
import urllib.parse
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from conformance.jsontext import MAX_JSON_DEPTH, json_excerpt, parse_json  # noqa: F401  (re-exported)
from conformance.ledger import LEDGER
from conformance.model import Exchange
from conformance.report.shell import grpc_note, request_words
from conformance.transport.credentials import (
    ClientCert,
    CredentialStore,
    CredentialUnavailable,
    OAuth2,
    Presented,
    TlsSettings,
    basic_value,
)
from conformance.transport.inprocess import InProcessTransport
from conformance.transport.wire import (  # noqa: F401  (validate_target_url re-exported)
    Answer,
    ConnectFailed,
    RequestUnsendable,
    Wire,
    validate_target_url,
)

# Bodies beyond this many characters are cut in recorded exchanges (a 10 MB probe
# must not produce a 10 MB case file).
RECORD_LIMIT = 16_384
REFERENCE_BASE = "http://reference.local"

DEFAULT_TIMEOUT = 5.0  # seconds for one whole exchange: connect, headers, body
DEFAULT_MAX_ANSWER = 8 * 2**20  # bytes of one answer, decompressed
DEAD_AFTER = 3  # consecutive exchanges without an answer before the target counts as gone
USER_AGENT = "conformance-kit"
# what http.client (the live wire) refuses to send in a header's name and value: refused in
# process too, so that a run sends the same requests either way
_TOKEN = re.compile(rb"[^:\s][^:\r\n]*")
_BREAKS_LINE = re.compile(rb"\n(?![ \t])|\r(?![ \t\n])")
_PORTS = {"http": 80, "https": 443}


def _nothing() -> None:
    pass


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


# whose doing a request's failure is: the target's (no usable answer), the kit's own (its
# request could not be sent as HTTP, or was addressed where the run sends nothing), or the
# control interface's the config names (a set-up step the target is not to blame for)
CAUSES = ("target", "kit", "control")


class TransportFailure(Exception):
    """One request got no usable answer (timeout, reset, oversized answer); ``cause`` says
    whose doing that is (``CAUSES``): only a ``target`` failure is a finding about the target."""

    def __init__(self, message: str, cause: str = "target") -> None:
        super().__init__(message)
        assert cause in CAUSES, cause
        self.cause = cause


class CredentialUnfit(TransportFailure):
    """A call the kit did not send: its caller's credential holds nothing the target asks for
    (over this binding). The kit's, never the target's doing; ``label`` names the credential."""

    def __init__(self, message: str, label: str = "") -> None:
        super().__init__(message, "kit")
        self.label = label


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


class Redactor:
    """Replaces every known secret by ``<redacted:label>``, wherever it appears."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self.secrets: dict[str, str] = {}
        self._longest_first: list[tuple[str, str]] = []  # (secret, marker): every text of every exchange
        for label, value in (secrets or {}).items():
            self.add(label, value)

    def add(self, label: str, value: str | None) -> None:
        if value and len(value) >= 4:
            self.secrets[value] = label
            self._longest_first = [(v, f"<redacted:{self.secrets[v]}>")
                                   for v in sorted(self.secrets, key=len, reverse=True)]

    def __call__(self, text: str) -> str:
        for value, marker in self._longest_first:
            if value in text:
                text = text.replace(value, marker)
        return text


def _body_text(content: bytes) -> str:
    text = content[:RECORD_LIMIT].decode("utf-8", errors="replace")
    if len(content) > RECORD_LIMIT:
        text += f"\n... [{len(content) - RECORD_LIMIT} more bytes not recorded]"
    return text


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
        tls: TlsSettings | None = None,
        credentials: CredentialStore | None = None,
    ) -> None:
        self.redact = redactor or Redactor()
        self.tls = tls or TlsSettings()
        # the run's identities (credentials.py): their OAuth2 tokens are fetched through this client
        self.credentials = credentials or CredentialStore(tls=self.tls)
        self.credentials.fetch = self._fetch_token
        self.credentials.on_secret = self.redact.add
        self._presenting = threading.local()  # what the requests of the current call carry (``presenting``)
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
        self._wire: Wire | None = None  # the live target's client (wire.py)
        # origins beyond the target that the user's config names (its control interface, say):
        # (scheme, host, port) -> (what it is, its client)
        self._others: dict[tuple[str, str, int | None], tuple[str, Wire]] = {}
        # (origin, a credential's client certificate) -> its own connections
        self._cert_wires: dict[tuple[tuple[str, str, int | None], ClientCert], Wire] = {}
        self._urls: dict[str, httpx.URL] = {}  # path -> its URL on the target (paths repeat)
        if app is not None:
            self.base_url = REFERENCE_BASE
            self.target = "reference"
            self.live = False
            self._app = InProcessTransport(app)
        else:
            assert base_url is not None
            self.base_url = validate_target_url(base_url)
            self.target = self.base_url
            self.live = True
            password = urlsplit(self.base_url).password
            if password:
                self.redact.add("target.password", password)
            base = httpx.URL(self.base_url)
            self._wire = self._new_wire(base.scheme, base.host, base.port or _PORTS[base.scheme])
        self._base = httpx.URL(self.base_url + "/")
        self._origin = (self._base.scheme, self._base.host, self._base.port)
        self._defaults = [(b"host", self._base.netloc), (b"accept", b"*/*"),
                          (b"accept-encoding", b"gzip, deflate"),  # the encodings read_bounded can bound
                          (b"connection", b"keep-alive"), (b"user-agent", USER_AGENT.encode())]
        if self._base.username or self._base.password:  # as httpx did: the URL's credentials as Basic auth
            userinfo = f"{self._base.username}:{self._base.password}".encode()
            self._defaults.append((b"authorization", b"Basic " + base64.b64encode(userinfo)))

    def allow(self, url: str, role: str) -> None:
        """Let the run send to ``url``'s origin too: a URL the user's config names (``role``:
        "control", say). Nothing else beyond the target is ever sent to. A failure to get an
        answer there is that origin's (``TransportFailure.cause``), never the target's, and
        does not count towards the target being gone."""
        parts = httpx.URL(validate_target_url(url) + "/")
        origin = (parts.scheme, parts.host, parts.port)
        if origin == self._origin or origin in self._others:
            return
        self._others[origin] = (role, self._new_wire(parts.scheme, parts.host,
                                                     parts.port or _PORTS[parts.scheme]))
        if parts.password:
            self.redact.add(f"{role}.password", parts.password)

    def _new_wire(self, scheme: str, host: str, port: int, cert: ClientCert | None = None) -> Wire:
        """Connections to one origin, with the run's TLS settings (and ``cert``, a credential's
        client certificate, presented instead of the run's)."""
        return Wire(scheme=scheme, host=host, port=port, context=lambda: self.tls.context(cert))

    @contextlib.contextmanager
    def presenting(self, presented: Presented | None) -> Iterator[None]:
        """The requests to the target made inside carry ``presented``'s query parameters and
        client certificate (its headers are the caller's to send): one identity's call."""
        before = getattr(self._presenting, "value", None)
        self._presenting.value = presented
        try:
            yield
        finally:
            self._presenting.value = before

    @property
    def presented(self) -> Presented | None:
        """What the current call's caller presents (``presenting``), None outside a call."""
        return getattr(self._presenting, "value", None)

    def _fetch_token(self, oauth: OAuth2, label: str) -> tuple[str, float | None]:
        """An OAuth2 access token by the client credentials grant (RFC 6749 section 4.4) from the
        token URL the config names: (token, seconds it lives, when the answer says). Not any
        requirement's evidence: the exchange is not logged. CredentialUnavailable says why not."""
        form = {"grant_type": "client_credentials"}
        if oauth.scope:
            form["scope"] = oauth.scope
        if oauth.audience:
            form["audience"] = oauth.audience
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if oauth.client_auth == "body":
            form.update(client_id=oauth.client_id, client_secret=oauth.client_secret)
        else:  # section 2.3.1: the id and secret form-encoded, then Basic
            quote = urllib.parse.quote
            headers["Authorization"] = basic_value(quote(oauth.client_id, safe=""),
                                                   quote(oauth.client_secret, safe=""))
        where = f"credentials.{label}.oauth2: the token URL {oauth.token_url}"
        try:
            reply = self.request("POST", oauth.token_url, headers=headers,
                                 content=urllib.parse.urlencode(form), keep=False)
        except TransportFailure as exc:
            raise CredentialUnavailable(self.redact(f"{where} gave no token ({exc})")) from None
        body = reply.json()
        token = body.get("access_token") if isinstance(body, dict) else None
        kind = body.get("token_type") if isinstance(body, dict) else None
        if reply.status != 200 or not isinstance(token, str) or not token:
            said = self.redact(reply.text[:200])
            raise CredentialUnavailable(f"{where} gave no access token: HTTP {reply.status} {said!r}")
        if not isinstance(kind, str) or kind.lower() != "bearer":  # section 5.1: token_type is REQUIRED
            raise CredentialUnavailable(f"{where} gave a token of type {kind!r}, not Bearer: the kit "
                                        "sends only bearer tokens")
        self.redact.add(f"{label}.oauth2.access_token", token)
        lifetime = body.get("expires_in")
        return token, float(lifetime) if isinstance(lifetime, int | float) and lifetime > 0 else None

    def close(self) -> None:
        while self.closing:
            self.closing.pop()()
        for _role, wire in self._others.values():
            wire.close()
        for wire in self._cert_wires.values():
            wire.close()
        if self._wire is not None:
            self._wire.close()
        if self._app is not None:
            self._app.close()

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
        keep: bool = True,
    ) -> HttpReply:
        """One exchange, bounded by the run's timeout (or ``timeout``: an exchange the
        protocol lets the server hold, a long poll say); ``keep`` off, it is not logged (the
        kit's own errand: a token fetched)."""
        with LEDGER.charge("transport"):
            return self._request(method, path, headers=headers, content=content, json_body=json_body,
                                 params=params, timeout=timeout, keep=keep)

    def _request(self, method: str, path: str, *, headers: Mapping[str, str] | None,
                 content: bytes | str | None, json_body: Any, params: Mapping[str, Any] | None,
                 timeout: float | None, keep: bool = True) -> HttpReply:
        self.check_running()
        hdrs = dict(headers or {})
        if json_body is not None:
            content = json.dumps(json_body)
            hdrs.setdefault("Content-Type", "application/json")
        body = content.encode() if isinstance(content, str) else content
        started = time.perf_counter()
        presented: Presented | None = getattr(self._presenting, "value", None)
        url = self._url(path, params)
        cert = None
        if presented is not None and (url.scheme, url.host, url.port) == self._origin:
            if presented.query:
                url = url.copy_merge_params(presented.query)
            cert = presented.cert
        record = {
            "method": method,
            "url": self.redact(str(url).replace(REFERENCE_BASE, "")) or "/",
            "headers": {k: self.redact(v) for k, v in hdrs.items()},
            "body": self.redact(_body_text(body)) if body else None,
        }
        until = time.monotonic() + (timeout or self.timeout)
        if self.run_deadline is not None:
            until = min(until, self.run_deadline)
        answer: Answer | None = None
        arrived = bytearray()
        role = self._role(url)
        cause = "target" if role == "target" else "control" if role == "control" else "kit"
        try:
            answer = self._send(method, url, hdrs, body, until, cert)
            encodings = [e.strip().lower() for e in answer.header("content-encoding").split(",")]
            content_out, unknown = read_bounded(answer.chunks, encodings, self.max_answer, arrived)
        except AnswerTooLarge:
            assert answer is not None
            answer.close()
            if role == "target":
                self.silent = 0
            why = f"answer larger than {self.max_answer / 2**20:g} MiB (HTTP {answer.status}): cut"
            self._fail(record, started, why, answer, arrived, keep)
            raise TransportFailure(f"{method} {path}: {why}", cause) from None
        except RequestUnsendable as exc:  # the kit's own request: never the target's doing
            why = _describe_error(exc, False)
            self._fail(record, started, why, None, arrived, keep)
            raise TransportFailure(f"{method} {path}: not sent: {why}", "kit") from None
        except (zlib.error, OSError, http.client.HTTPException) as exc:
            if answer is not None:
                answer.close()
            why = _describe_error(exc, time.monotonic() >= until)
            self._fail(record, started, why, answer, arrived, keep)
            if isinstance(exc, zlib.error):
                raise TransportFailure(f"{method} {path}: {why}", cause) from None  # an answer
            if role == "target":
                self._no_answer(why)
            raise TransportFailure(f"{method} {path}: no answer ({why})", cause) from None
        if role == "target":
            self.silent = 0
            self.answered += 1
        reply_headers = answer.headers_view()
        response = {
            "status": answer.status,
            "headers": {k: self.redact(v) for k, v in reply_headers.items()},
            "body": self.redact(_body_text(content_out)) if content_out else None,
        }
        note = f"content-encoding {', '.join(unknown)} not decoded" if unknown else ""
        exchange = Exchange(record, response, (time.perf_counter() - started) * 1000, note)
        if keep:
            self._remember(exchange)
        return HttpReply(answer.status, reply_headers, content_out, exchange)

    def _url(self, path: str, params: Mapping[str, Any] | None) -> httpx.URL:
        """``path`` on the target, as httpx would send it (percent-encoded, under the base
        URL's own path), with ``params`` as its query."""
        url = self._urls.get(path)
        if url is None:
            url = httpx.URL(path)
            if url.is_relative_url:  # under the base URL's own path, as httpx's client merges it
                url = self._base.copy_with(raw_path=self._base.raw_path + url.raw_path.lstrip(b"/"))
            if len(self._urls) >= 256:  # fuzzed paths need not repeat: a small cache, kept small
                self._urls.clear()
            self._urls[path] = url
        return url.copy_merge_params(params) if params else url

    def _role(self, url: httpx.URL) -> str:
        origin = (url.scheme, url.host, url.port)
        if origin == self._origin:
            return "target"
        return self._others[origin][0] if origin in self._others else "kit"

    def _headers(self, hdrs: Mapping[str, str], body: bytes | None, method: str,
                 url: httpx.URL) -> list[tuple[bytes, bytes]]:
        """The request's headers as sent: the check's own, then those every request carries
        that the check did not set (httpx's set, with the client's own name; the Host of
        the origin it goes to, and the target's Basic auth only to the target)."""
        own = [(k.encode("latin-1", "replace") if not k.isascii() else k.encode().lower(),
                v.encode("utf-8") if not v.isascii() else v.encode()) for k, v in hdrs.items()]
        named = {k for k, _ in own}
        defaults = self._defaults
        if (url.scheme, url.host, url.port) != self._origin:
            defaults = [(b"host", url.netloc), *[(k, v) for k, v in defaults[1:5]]]
            if url.username or url.password:
                userinfo = f"{url.username}:{url.password}".encode()
                defaults.append((b"authorization", b"Basic " + base64.b64encode(userinfo)))
        sent = [(k, v) for k, v in defaults if k not in named] + own
        if b"content-length" not in named and b"transfer-encoding" not in named and (
                body or method in ("POST", "PUT", "PATCH")):
            sent.append((b"content-length", str(len(body or b"")).encode()))
        return sent

    def _send(self, method: str, url: httpx.URL, hdrs: Mapping[str, str], body: bytes | None,
              until: float, cert: ClientCert | None = None) -> Answer:
        """One request out, the answer's head back (its body as chunks): in process to the
        reference, or over the lean client (wire.py) to the live target or another origin
        the config names (``allow``). Any other URL is never sent: the run talks only to
        the target it was given and the URLs the user's config names."""
        origin = (url.scheme, url.host, url.port)
        wire = self._wire if origin == self._origin else self._others.get(origin, (None, None))[1]
        if wire is not None and cert is not None and url.scheme == "https":  # a credential's own connections
            key = (origin, cert)
            if key not in self._cert_wires:
                port = url.port or _PORTS[url.scheme]
                self._cert_wires[key] = self._new_wire(url.scheme, url.host, port, cert)
            wire = self._cert_wires[key]
        if wire is None and not (self._app is not None and origin == self._origin):
            raise RequestUnsendable(f"{url} is neither on the target {self.base_url} nor a URL the config "
                                    "names: the kit sends only there")
        headers = self._headers(hdrs, body, method, url)
        for name, value in headers:  # what no HTTP/1.1 request can carry, in process as on the wire
            if not _TOKEN.fullmatch(name) or _BREAKS_LINE.search(value):
                raise RequestUnsendable(f"header {name!r}: {value[:60]!r} cannot be sent in HTTP/1.1")
        if wire is None:  # in process: the same answer, without any client's layers
            with LEDGER.charge("target in process"):
                status, raw_headers, whole = self._app.call(method=method, url=url, headers=headers,
                                                            body=body or b"")
            return Answer(status, raw_headers, iter((whole,)), _nothing)
        return wire.exchange(method=method, target=url.raw_path.decode("ascii"), headers=headers,
                             body=body, until=until)

    def _fail(self, record: dict[str, Any], started: float, why: str, answer: Answer | None,
              arrived: bytearray, keep: bool = True) -> None:
        """Record an exchange that got no usable answer, with what did arrive."""
        got = None
        if answer is not None:
            got = {"status": answer.status,
                   "headers": {k: self.redact(v) for k, v in answer.headers_view().items()},
                   "body": self.redact(_body_text(bytes(arrived))) if arrived else None}
        if keep:
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


# what a TLS server says when it wants a client certificate it was not given, or refuses the one it got
_CERT_REFUSED = ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN")


def _describe_error(exc: BaseException, deadline_passed: bool) -> str:
    said = str(exc).upper()
    if isinstance(exc, ssl.SSLError | ConnectFailed) and any(r in said for r in _CERT_REFUSED):
        return (f"the target refused the TLS connection for its client certificate ({exc}): give the one it "
                "accepts (config tls.cert and tls.key, or credentials.<label>.cert and .key)")
    if isinstance(exc, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in said:
        return (f"the target's TLS certificate is not trusted ({exc}): name its CA in config tls.ca "
                "(or tls.verify: false)")
    if isinstance(exc, TimeoutError) or deadline_passed:
        return "no complete answer within the exchange's deadline"
    if isinstance(exc, ConnectFailed):
        return f"cannot connect ({exc})"
    if isinstance(exc, http.client.BadStatusLine) and not isinstance(exc, ConnectionError):
        return f"not an HTTP answer (its first line: {str(exc.args[0] if exc.args else exc).strip()[:120]!r})"
    if isinstance(exc, http.client.HTTPException | ConnectionError):
        said = " ".join(str(exc).split())[:200] or type(exc).__name__
        return f"not an HTTP answer or connection closed early ({said})"
    if isinstance(exc, RequestUnsendable):
        return f"the request could not be sent as HTTP ({exc})"
    if isinstance(exc, zlib.error):
        return f"body does not decompress as its Content-Encoding says ({exc})"
    return f"{type(exc).__name__}: {exc}"


def curl_line(exchange: Exchange, base_url: str = "$TARGET") -> str:
    """A curl command that sends the recorded request again, to paste into a shell: each
    secret named by the environment variable that holds it (``$CONFORMANCE_TOKEN`` for the
    main caller's token, ``$CONFORMANCE_CREDENTIAL_<LABEL>`` for another: report/shell.py),
    a URL recorded without its origin (an in-process run's) sent to ``base_url``. A gRPC call,
    which curl cannot make, is a comment saying so."""
    words = request_words(exchange, base_url)
    return grpc_note(exchange) if words is None else " ".join([*words[:2], "-i", *words[2:]])
