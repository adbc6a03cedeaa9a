"""Credentials as users have them: a bearer token, an API key (a header, a query parameter or a
cookie, by name), HTTP Basic, any extra header, a client certificate and key (mutual TLS),
OAuth2 client credentials fetched from a token URL the config names, and the run's TLS
settings (a CA bundle, or no verification at all).

A credential is a labelled identity (``credentials.<label>`` in the config): a token, or a
mapping of any of the kinds above beside what a protocol keeps of the identity (its ``id``,
a signing ``seed``...). Any text in ``credentials:`` and ``tls:`` may name environment
variables (``${NAME}``), read when the config loads. What a request as an identity carries
(``present``) is the credential as configured, unless the binding says how the target asks
for credentials (its entry's ``auth:``, which a protocol may read off the target's own
declaration: an A2A agent card's security schemes): then each way the target accepts is
tried in turn, and the first the credential can meet is what is sent.

Every secret of a credential (``Credential.secrets``) is redacted wherever it appears."""

from __future__ import annotations

import atexit
import base64
import os
import re
import shutil
import ssl
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.transport.wire import validate_target_url

ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
PLACES = ("header", "query", "cookie")  # where an API key travels (the kit's own words, as config keys)
KINDS = ("token", "api_key", "basic", "headers", "cert", "oauth2")  # the keys of a credential mapping
CERT_KEYS = ("cert", "key", "key_password")
OAUTH2_KEYS = {"token_url", "client_id", "client_secret", "scope", "audience", "client_auth"}
UNKNOWN_USER = "conformance-unknown"  # the user name of a Basic credential the target never issued
PEM = "-----BEGIN"


class CredentialError(ValueError):
    """A credential or TLS setting the kit cannot use: one line naming its key."""


class CannotPresent(Exception):
    """The credential holds nothing the target asks for (the message says what each holds)."""


class CredentialUnavailable(Exception):
    """A credential that could not be made ready (an OAuth2 token the token URL did not give)."""


# -- reading the config --------------------------------------------------------------------
def expand_env(value: Any, where: str, environ: Mapping[str, str] | None = None) -> Any:
    """``value`` with every ``${NAME}`` in its texts replaced by that environment variable;
    CredentialError naming ``where`` (the key) and the variable when one is not set."""
    environ = os.environ if environ is None else environ
    if isinstance(value, str):
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in environ:
                raise CredentialError(f"{where}: environment variable {name} is not set")
            return environ[name]
        return ENV_REFERENCE.sub(one, value)
    if isinstance(value, dict):
        return {k: expand_env(v, f"{where}.{k}", environ) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, f"{where}[{i}]", environ) for i, v in enumerate(value)]
    return value


_PEM_DIR: list[Path] = []
_PEM_LOCK = threading.Lock()


def pem_file(value: str) -> str:
    """A path for PEM text given in place of a file (from an environment variable, say): written
    once to a private file that lives as long as the process (ssl loads only files)."""
    with _PEM_LOCK:
        if not _PEM_DIR:
            folder = Path(tempfile.mkdtemp(prefix="conformance-pem-"))
            _PEM_DIR.append(folder)
            atexit.register(shutil.rmtree, folder, True)
        import hashlib

        path = _PEM_DIR[0] / (hashlib.sha256(value.encode()).hexdigest()[:24] + ".pem")
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(value if value.endswith("\n") else value + "\n")
        return str(path)


def file_setting(value: Any, where: str, base: Path | None) -> str:
    """A certificate, key or CA bundle: a file (relative to the config's folder), or PEM text."""
    if not isinstance(value, str) or not value.strip():
        raise CredentialError(f"{where} must be a file (PEM) or PEM text, not {value!r}")
    if value.lstrip().startswith(PEM):
        return value
    path = Path(value).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    if not path.is_file():
        raise CredentialError(f"{where}: no file {path}")
    return str(path)


def loadable(value: str) -> str:
    """A file setting as ssl loads it: its path (PEM text written to a private file)."""
    return pem_file(value) if value.lstrip().startswith(PEM) else value


@dataclass(frozen=True)
class ApiKey:
    value: str
    place: str = ""  # header | query | cookie; "" where the target's declaration says
    name: str = ""


@dataclass(frozen=True)
class ClientCert:
    cert: str  # a file, or PEM text
    key: str | None = None
    password: str | None = None


@dataclass(frozen=True)
class OAuth2:
    token_url: str
    client_id: str
    client_secret: str
    scope: str = ""
    audience: str = ""
    client_auth: str = "basic"  # basic (RFC 6749 section 2.3.1's HTTP Basic) or body


@dataclass(frozen=True)
class Credential:
    """One identity's ways to authenticate (any mix of them)."""

    label: str
    token: str | None = None
    api_key: ApiKey | None = None
    basic: tuple[str, str] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    cert: ClientCert | None = None
    oauth2: OAuth2 | None = None

    @property
    def given(self) -> bool:
        return bool(self.token or self.api_key or self.basic or self.headers or self.cert or self.oauth2)

    def kinds(self) -> list[str]:
        """What it holds, in words (for the messages that say why it does not fit)."""
        held = (("a bearer token", self.token or self.oauth2), ("an API key", self.api_key),
                ("HTTP Basic", self.basic), ("a client certificate", self.cert))
        return [what for what, has in held if has] or ["no credential"]

    def secrets(self) -> dict[str, str]:
        """Every secret text it holds, labelled for redaction (a header's value counts: any may be one)."""
        out: dict[str, str] = {}
        if self.token:
            out[f"{self.label}.token"] = self.token
        if self.api_key:
            out[f"{self.label}.api_key"] = self.api_key.value
        if self.basic:
            user, password = self.basic
            out[f"{self.label}.basic.password"] = password
            out[f"{self.label}.basic"] = basic_value(user, password)[len("Basic "):]
        for name, value in self.headers:
            out[f"{self.label}.headers.{name}"] = value
        if self.api_key and urllib.parse.quote(self.api_key.value, safe="") != self.api_key.value:
            out[f"{self.label}.api_key.quoted"] = urllib.parse.quote(self.api_key.value, safe="")
        if self.cert is not None:  # the certificate is public; a key given as text, and its password, are not
            if self.cert.key and self.cert.key.lstrip().startswith(PEM):
                out[f"{self.label}.key"] = self.cert.key
            if "PRIVATE KEY" in self.cert.cert:
                out[f"{self.label}.cert"] = self.cert.cert
            if self.cert.password:
                out[f"{self.label}.key_password"] = self.cert.password
        if self.oauth2 is not None:
            out[f"{self.label}.oauth2.client_secret"] = self.oauth2.client_secret
            out[f"{self.label}.oauth2"] = basic_value(_form(self.oauth2.client_id),
                                                      _form(self.oauth2.client_secret))[len("Basic "):]
        return out


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool) or str(value) == "":
        raise CredentialError(f"{where} must be text, not {value!r}")
    return str(value)


def client_cert(value: Mapping[str, Any], where: str, base: Path | None,
                check: bool = True) -> ClientCert | None:
    """``cert`` (with ``key`` and ``key_password``) of a mapping, or None without ``cert``;
    ``check``: the files exist and ssl loads them (the config's problem, said when it loads)."""
    if "cert" not in value:
        if "key" in value or "key_password" in value:
            raise CredentialError(f"{where}.key is given without {where}.cert (the client certificate)")
        return None
    if not check:
        return ClientCert(str(value["cert"]), str(value["key"]) if value.get("key") else None,
                          str(value["key_password"]) if value.get("key_password") else None)
    cert = file_setting(value["cert"], f"{where}.cert", base)
    key = file_setting(value["key"], f"{where}.key", base) if value.get("key") is not None else None
    password = _text(value["key_password"], f"{where}.key_password") if value.get("key_password") else None
    try:
        ssl.create_default_context().load_cert_chain(loadable(cert), loadable(key) if key else None, password)
    except (ssl.SSLError, OSError) as exc:
        raise CredentialError(f"{where}.cert: the certificate and key do not load ({exc})") from None
    return ClientCert(cert, key, password)


def parse_credential(label: str, value: Any, where: str = "credentials", base: Path | None = None,
                     strict: bool = True) -> Credential:
    """A config's ``credentials.<label>`` as a Credential; CredentialError names the key.
    Keys a protocol keeps of an identity (``id``, ``seed``, ``disposable``...) are not read here.
    ``strict`` off (an identity the run made itself), shapes the kit cannot use are left out."""
    at = f"{where}.{label}"
    if value is None:
        return Credential(label)
    if isinstance(value, str):
        return Credential(label, token=value or None)
    if not isinstance(value, dict):
        raise CredentialError(f"{at} must be a token (text) or a mapping, not {value!r}")
    try:
        return _parse_mapping(label, value, at, base, strict)
    except CredentialError:
        if strict:
            raise
        token = value.get("token")
        return Credential(label, token=token if isinstance(token, str) and token else None)


def secrets_of(credentials: dict[str, Any]) -> dict[str, str]:
    """Every secret string inside the credentials, labelled for redaction: a protocol's own
    (a signing seed, a private key) and each credential kind's."""
    out: dict[str, str] = {}
    for label, value in credentials.items():
        out.update(parse_credential(str(label), value, strict=False).secrets())
        if isinstance(value, dict):  # after: a secret held twice is named as before
            for key, inner in value.items():
                if key in ("token", "seed", "private_key", "secret") and isinstance(inner, str):
                    out[f"{label}.{key}"] = inner
        elif isinstance(value, str):
            out[label] = value
    return out


def _parse_mapping(label: str, value: dict[str, Any], at: str, base: Path | None, check: bool) -> Credential:
    token = value.get("token")
    if token is not None and not isinstance(token, str):
        raise CredentialError(f"{at}.token must be text, not {token!r}")
    api_key = None
    if value.get("api_key") is not None:
        given = value["api_key"]
        if isinstance(given, str):
            api_key = ApiKey(_text(given, f"{at}.api_key"))
        elif isinstance(given, dict):
            places = [p for p in PLACES if p in given]
            if len(places) > 1 or set(given) - {*PLACES, "value"} or "value" not in given:
                raise CredentialError(f"{at}.api_key must be a mapping of one of header:, query: or cookie: "
                                      f"(the name it travels as) and value:, not {given!r}")
            place = places[0] if places else ""
            api_key = ApiKey(_text(given["value"], f"{at}.api_key.value"), place,
                             _text(given[place], f"{at}.api_key.{place}") if place else "")
        else:
            raise CredentialError(f"{at}.api_key must be the key (text) or a mapping of header:, query: or "
                                  f"cookie: and value:, not {given!r}")
    basic = None
    if value.get("basic") is not None:
        given = value["basic"]
        if not isinstance(given, dict) or set(given) != {"username", "password"}:
            raise CredentialError(f"{at}.basic must be a mapping of username: and password:, not {given!r}")
        user = _text(given["username"], f"{at}.basic.username")
        if ":" in user:
            raise CredentialError(f"{at}.basic.username may not hold a colon (RFC 7617)")
        basic = (user, _text(given["password"], f"{at}.basic.password"))
    headers: tuple[tuple[str, str], ...] = ()
    if value.get("headers") is not None:
        given = value["headers"]
        if not isinstance(given, dict) or not given:
            raise CredentialError(f"{at}.headers must be a mapping of header name to value, not {given!r}")
        for name, text in given.items():
            if not isinstance(name, str) or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
                raise CredentialError(f"{at}.headers: {name!r} is not a header name")
            if re.search(r"[\r\n]", _text(text, f"{at}.headers.{name}")):
                raise CredentialError(f"{at}.headers.{name} may not hold a line break")
        headers = tuple((str(k), str(v)) for k, v in given.items())
    oauth2 = None
    if value.get("oauth2") is not None:
        oauth2 = oauth2_setting(value["oauth2"], f"{at}.oauth2")
    if token and oauth2:
        raise CredentialError(f"{at}: give token: or oauth2: (which fetches one), not both")
    cert = client_cert(value, at, base, check)
    return Credential(label, token or None, api_key, basic, headers, cert, oauth2)


def oauth2_setting(given: Any, where: str) -> OAuth2:
    if not isinstance(given, dict) or set(given) - OAUTH2_KEYS or not {"token_url", "client_id",
                                                                        "client_secret"} <= set(given):
        raise CredentialError(f"{where} must be a mapping of token_url:, client_id:, client_secret: (and "
                              f"optionally scope:, audience:, client_auth: basic|body), not {given!r}")
    try:
        url = validate_target_url(given["token_url"])
    except ValueError:
        raise CredentialError(f"{where}.token_url must be an http(s) URL, not "
                              f"{given['token_url']!r}") from None
    how = str(given.get("client_auth", "basic"))
    if how not in ("basic", "body"):
        raise CredentialError(f"{where}.client_auth must be basic or body, not {how!r}")
    scope = given.get("scope", "")
    if isinstance(scope, list):
        scope = " ".join(map(str, scope))
    return OAuth2(url, _text(given["client_id"], f"{where}.client_id"),
                  _text(given["client_secret"], f"{where}.client_secret"), str(scope or ""),
                  str(given.get("audience") or ""), how)


@dataclass(frozen=True)
class TlsSettings:
    """The run's TLS: the CA bundle that verifies the target (default: the system's and
    certifi's, as httpx gives), or no verification; and a client certificate every connection
    presents (a gateway's mutual TLS). A credential's own certificate is presented instead on
    its requests."""

    ca: str | None = None
    verify: bool = True
    cert: ClientCert | None = None

    def context(self, cert: ClientCert | None = None) -> ssl.SSLContext:
        import httpx

        if not self.verify:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif self.ca:
            context = ssl.create_default_context(cafile=loadable(self.ca))
        else:
            context = httpx.create_ssl_context()  # certifi, SSL_CERT_FILE: the verification httpx gave
        chosen = cert or self.cert
        if chosen is not None:
            context.load_cert_chain(loadable(chosen.cert), loadable(chosen.key) if chosen.key else None,
                                    chosen.password)
        return context

    def secrets(self) -> dict[str, str]:
        return Credential("tls", cert=self.cert).secrets()


def tls_setting(value: Any, where: str, base: Path | None = None) -> TlsSettings:
    """Config ``tls:``: ``ca`` (a CA bundle), ``verify`` (false: no verification), ``cert``,
    ``key`` and ``key_password`` (a client certificate every connection presents)."""
    if value is None:
        return TlsSettings()
    if not isinstance(value, dict) or set(value) - {"ca", "verify", *CERT_KEYS}:
        raise CredentialError(f"{where} must be a mapping of ca:, verify:, cert:, key:, key_password:, "
                              f"not {value!r}")
    verify = value.get("verify", True)
    if not isinstance(verify, bool):
        raise CredentialError(f"{where}.verify must be true or false, not {verify!r}")
    ca = file_setting(value["ca"], f"{where}.ca", base) if value.get("ca") is not None else None
    if ca is not None and not verify:
        raise CredentialError(f"{where}: give ca: (verify with it) or verify: false, not both")
    if ca is not None:
        try:
            ssl.create_default_context(cafile=loadable(ca))
        except (ssl.SSLError, OSError) as exc:
            raise CredentialError(f"{where}.ca does not load as a CA bundle ({exc})") from None
    return TlsSettings(ca, verify, client_cert(value, where, base))


# -- what a request carries -------------------------------------------------------------------
@dataclass
class Presented:
    """What one request as an identity carries: headers, query parameters, a client certificate."""

    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    cert: ClientCert | None = None

    def place(self, where: str, name: str, value: str) -> None:
        if where == "query":
            self.query[name] = value
        elif where == "cookie":
            earlier = self.headers.get("Cookie")
            self.headers["Cookie"] = f"{earlier}; {name}={value}" if earlier else f"{name}={value}"
        else:
            self.headers[name] = value


def basic_value(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _form(text: str) -> str:
    return urllib.parse.quote(text, safe="")


WAY_WORDS = {"bearer": "a bearer token", "basic": "HTTP Basic", "cert": "a client certificate"}


def describe_way(way: Mapping[str, Any]) -> str:
    if way.get("kind") == "api_key":
        return f"an API key in {way.get('in')} {way.get('name')!r}"
    return WAY_WORDS.get(str(way.get("kind")), str(way.get("kind")))


def present(credential: Credential | None, *, bearer: str | None = None, raw: str | None = None,
            ways: list[list[dict[str, Any]]] | None = None, run_cert: bool = False,
            places: tuple[str, ...] = PLACES, tls: bool = True) -> Presented:
    """What a request carries as ``credential`` (its bearer token ``bearer``, an OAuth2 one
    fetched), or as the holder of ``raw``, a value the target never issued; ``ways`` are the
    alternatives the target accepts (each a list of what to send together: ``{kind: bearer}``,
    ``{kind: basic}``, ``{kind: api_key, in: header|query|cookie, name}``, ``{kind: cert}``),
    None to send the credential as configured; ``places`` where the binding can carry an API
    key (gRPC has no query), ``tls`` whether its connection can carry a client certificate.
    CannotPresent when none is met."""
    if ways:
        bearer = bearer or (credential.token if credential is not None else None)
        tried = []
        for alternative in ways:
            out = _meet(alternative, credential, bearer, raw, run_cert, places, tls)
            if out is not None:
                if raw is None and credential is not None:
                    out.headers.update(credential.headers)
                return out
            tried.append(" and ".join(describe_way(w) for w in alternative))
        holds = "a value it never issued" if raw is not None else \
            " and ".join(credential.kinds() if credential else ["no credential"])
        asked = [way for alternative in ways for way in alternative]
        over = ""
        if any(w.get("kind") == "api_key" and str(w.get("in") or "").lower() not in places for w in asked):
            over += f" (this binding carries an API key in {' or '.join(places)} only)"
        if not tls and any(w.get("kind") == "cert" for w in asked):
            over += " (a client certificate needs TLS, and this binding's connection has none)"
        raise CannotPresent(f"the target asks for {' or '.join(tried)}{over}; the run holds {holds} for it")
    out = Presented()
    if raw is not None:
        out.headers["Authorization"] = f"Bearer {raw}"
        return out
    if credential is None:
        return out
    bearer = bearer or credential.token
    if bearer:
        out.headers["Authorization"] = f"Bearer {bearer}"
    elif credential.basic:
        out.headers["Authorization"] = basic_value(*credential.basic)
    if credential.api_key is not None and credential.api_key.place:
        out.place(credential.api_key.place, credential.api_key.name, credential.api_key.value)
    out.headers.update(credential.headers)
    out.cert = credential.cert if tls else None
    return out


def _meet(alternative: list[dict[str, Any]], credential: Credential | None, bearer: str | None,
          raw: str | None, run_cert: bool, places: tuple[str, ...] = PLACES,
          tls: bool = True) -> Presented | None:
    """The alternative's every part met (a Presented), or None."""
    out = Presented()
    for way in alternative:
        kind = way.get("kind")
        if kind == "bearer":
            value = raw or bearer
            if not value:
                return None
            out.headers["Authorization"] = f"Bearer {value}"
        elif kind == "basic":
            pair = (UNKNOWN_USER, raw) if raw else credential.basic if credential else None
            if not pair:
                return None
            out.headers["Authorization"] = basic_value(*pair)
        elif kind == "api_key":
            key = credential.api_key if credential else None
            value = raw or (key.value if key else None) or bearer
            where, name = str(way.get("in") or "").lower(), str(way.get("name") or "")
            if not value or where not in places or not name:
                return None
            out.place(where, name, value)
        elif kind == "cert":
            if raw is not None or not tls:
                return None  # no certificate the target never issued (the kit makes none), none without TLS
            if credential is not None and credential.cert is not None:
                out.cert = credential.cert
            elif not run_cert:
                return None
        else:
            return None
    return out


# -- the run's credentials ---------------------------------------------------------------------
class CredentialStore:
    """The run's identities (``raw``: label -> the config's value, the same mapping the run
    keeps, so an identity adopted later is here too) as Credentials, with the OAuth2 tokens
    they fetch (each kept until shortly before it expires, then fetched again)."""

    def __init__(self, raw: dict[str, Any] | None = None, tls: TlsSettings | None = None) -> None:
        self.raw = raw if raw is not None else {}
        self.tls = tls or TlsSettings()
        self._parsed: dict[str, tuple[Any, Credential]] = {}
        self._tokens: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self.fetch: Callable[[OAuth2, str], tuple[str, float | None]] | None = None  # the transport's
        self.on_secret: Callable[[str, str], None] | None = None  # a new secret to redact

    def get(self, label: str) -> Credential | None:
        value = self.raw.get(label)
        if not value:
            return None
        known = self._parsed.get(label)
        if known is None or known[0] is not value:
            known = (value, parse_credential(label, value, strict=False))
            self._parsed[label] = known
        return known[1]

    def bearer(self, label: str) -> str | None:
        """The credential's bearer token: its own, or one its OAuth2 client credentials fetch;
        CredentialUnavailable when that fails."""
        credential = self.get(label)
        if credential is None:
            return None
        if credential.oauth2 is None:
            return credential.token
        with self._lock:
            held = self._tokens.get(label)
            if held is not None and time.monotonic() < held[1]:
                return held[0]
            if self.fetch is None:
                raise CredentialUnavailable(f"credentials.{label}.oauth2: no transport to fetch a token with")
            token, lifetime = self.fetch(credential.oauth2, label)
            if self.on_secret is not None:
                self.on_secret(f"{label}.oauth2.access_token", token)
            margin = min(30.0, lifetime / 10) if lifetime else 0.0
            self._tokens[label] = (token, time.monotonic() + (lifetime - margin if lifetime else 3600.0))
            return token

    def labels(self) -> Iterator[str]:
        return iter(list(self.raw))
