"""Bindings: how a profile's named operations travel, declared as data in the
profile's ``bindings:`` block and found through a registry of kinds.

Every kind answers with one ``Reply`` (ok, result, error code and message, HTTP
status, whether the binding flagged an error), so checks are written once for
all of them. A binding entry declares:

    kind: jsonrpc-http | http-action | http-routes | mcp-tools     (see BINDING_KINDS)
    path: /  or  /verbs/{name}                       (endpoint; {name} is the operation)
    bearer: full                                     (the credential every call sends unless told whose)
    auth: [[{kind: api_key, in: header, name: X-Key}], [{kind: bearer}]]
                                                     (how the target asks for credentials: alternatives,
                                                      each what to send together: bearer, basic, cert,
                                                      api_key in header|query|cookie; a protocol may read
                                                      them off the target's declaration. Without it a
                                                      credential is sent as configured: credentials.py)
    headers: {A2A-Version: "1.0"}                    (sent with every call)
    idempotency: {header: Idempotency-Key}           (a fresh key per call unless one is given)
    error: {code: /error/code, message: /error/message}  (where an error lives in an answer)
    protocol_version: "2025-06-18"                   (mcp-tools: the MCP revision it speaks, from specs/mcp/)
    results: object                                  (every result is a JSON object: another shape is
                                                      a malformed answer, not a result)
    statuses: false                                  (HTTP statuses carry no meaning: a JSON-RPC error
                                                      at HTTP 200 is a refusal; default per kind)
    request_ids: uuid | integer                      (jsonrpc-http: the shape of ordinary request ids,
                                                      as the spec's examples write them; default integer)
"""

from __future__ import annotations

import itertools
import json
import re
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from conformance.ledger import LEDGER
from conformance.transport.credentials import CannotPresent, Credential, Presented, present
from conformance.transport.http import CredentialUnfit, HttpReply, HttpTransport, json_excerpt, parse_json
from conformance.transport.mcp import McpClient, McpError, tool_payload
from conformance.transport.sse import sse_events

# A token resolver: (credential label, required) -> token or None. The check layer
# supplies it; it raises its own "untested" when a required credential is missing.
Tokens = Callable[[str, bool], str | None]
# How a parameter that travels as text is read: (its name, its texts) -> the value the server reads.
QueryReader = Callable[[str, list[str]], Any]

DEFAULT = "<the binding's bearer>"  # caller: the credential the binding names


@dataclass(frozen=True)
class RawToken:
    """A caller holding this exact token (one the target never issued, say)."""

    value: str
FRESH = "<fresh>"  # idempotency key: a new one for this call


@dataclass
class Reply:
    """One answer of any binding."""

    binding: str
    http: HttpReply
    ok: bool
    result: Any = None
    error_code: Any = None
    error_message: str = ""
    flagged: bool = True  # the binding marked the error as one (JSON-RPC error, HTTP >= 400, MCP isError)
    envelope: Any = None  # what the binding read the answer from (JSON-RPC envelope, body, MCP result)
    statuses: bool = True  # HTTP statuses carry meaning in this binding
    error_data: Any = None
    spoke: bool = False  # the answer is the binding's protocol (a JSON-RPC response), whatever it says

    @property
    def status(self) -> int:
        return self.http.status

    @property
    def error(self) -> dict[str, Any] | None:
        """The error as a mapping (JSON-RPC's error member, or code and message)."""
        if self.ok:
            return None
        if isinstance(self.envelope, dict) and isinstance(self.envelope.get("error"), dict):
            return self.envelope["error"]
        if self.error_code is None and not self.error_message:
            return None
        return {"code": self.error_code, "message": self.error_message}

    def describe(self) -> str:
        """A short one-line account for failure messages, quoting the target."""
        if self.ok:
            return f"HTTP {self.status}, result {json_excerpt(self.result)}"
        if self.error_code is not None:
            data = f" data {json_excerpt(self.error_data)}" if self.error_data not in (None, {}, "") else ""
            return f"HTTP {self.status}, error {self.error_code} {self.error_message[:100]!r}{data}"
        why = f" ({self.http.json_error})" if self.http.json_error and self.http.content else ""
        return f"HTTP {self.status}, body {self.http.text[:120]!r}{why}"


def rest_reply(reply: HttpReply, error_at: Mapping[str, str], name: str = "rest") -> Reply:
    """A plain REST answer read as a Reply: 2xx is a result, anything else an error
    found at ``error_at`` (code, message), flagged by its status."""
    body = reply.json()
    if 200 <= reply.status < 300:
        return Reply(name, reply, True, body, envelope=body)
    code, message = at_pointer(body, error_at.get("code", "")), at_pointer(body, error_at.get("message", ""))
    return Reply(name, reply, False, None, code, "" if message is None else str(message), reply.status >= 400,
                 body)


def dig(value: Any, *keys: Any) -> Any:
    """``value[k1][k2]...`` of an answer (keys, or list indices), or None where it has another
    shape: the same walk as ``at_pointer``, for checks that name the keys in code."""
    for key in keys:
        if isinstance(key, int):
            value = value[key] if isinstance(value, list) and -len(value) <= key < len(value) else None
        else:
            value = value.get(key) if isinstance(value, dict) else None
    return value


def at_pointer(document: Any, pointer: str) -> Any:
    """The value at a JSON pointer of an answer, or None (answers are untrusted)."""
    node = document
    for token in pointer.lstrip("/").split("/") if pointer else []:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


class Binding:
    """One way of calling operations. Subclasses implement ``_send``."""

    kind: ClassVar[str]
    kind_statuses: ClassVar[bool] = True  # whether HTTP statuses carry meaning, unless the entry says
    key_places: ClassVar[tuple[str, ...]] = ("header", "query", "cookie")  # where it can carry an API key
    default_error: ClassVar[dict[str, str]] = {"code": "/error/code", "message": "/error/message",
                                               "data": "/error/data"}

    def __init__(self, name: str, entry: Mapping[str, Any], http: HttpTransport, tokens: Tokens) -> None:
        self.name = name
        self.entry = dict(entry)
        self.http = http
        self.tokens = tokens
        self.path: str = entry.get("path", "/")
        self.bearer: str | None = entry.get("bearer")
        self.headers: dict[str, str] = {str(k): str(v) for k, v in (entry.get("headers") or {}).items()}
        self.idempotency: dict[str, Any] | None = entry.get("idempotency")
        self.error_at = {**self.default_error, **(entry.get("error") or {})}
        self.on_unauthenticated: Callable[[str], None] | None = None
        # called before each call with (operation, the caller's label or None): a live run's
        # guard against lasting actions on configured identities (CheckContext.lasting)
        self.before_call: Callable[[str, str | None], None] | None = None
        self.results_are_objects = entry.get("results") == "object"
        self.statuses = bool(entry.get("statuses", self.kind_statuses))

    def result_reply(self, http: HttpReply, result: Any, envelope: Any) -> Reply:
        """A success, unless the entry says results are objects and this one is not:
        then a malformed answer (not flagged as an error, not a result)."""
        if self.results_are_objects and not isinstance(result, dict):
            return Reply(self.name, http, False, None, None, "", False, envelope, statuses=self.statuses)
        return Reply(self.name, http, True, result, envelope=envelope, statuses=self.statuses)

    # -- what every call carries -----------------------------------------------------
    @property
    def ways(self) -> list[list[dict[str, Any]]] | None:
        """How the target asks for credentials (the entry's ``auth:``), None: as configured."""
        found = self.entry.get("auth")
        return found if isinstance(found, list) and found else None

    def secure(self) -> bool:
        """Whether the binding's connection is TLS (can carry a client certificate)."""
        return str(getattr(self.http, "base_url", "")).startswith("https://")

    def presented(self, caller: str | RawToken | None = DEFAULT) -> Presented:
        """What a call as ``caller`` (a credential label) carries: its credential as the target
        asks for it (credentials.py ``present``); None sends none. The binding's own bearer is
        optional (a target may run without auth); a caller named explicitly is required. A
        credential that holds nothing the target asks for (over this binding) is not sent:
        CredentialUnfit, the kit's (the preflight marks the run's own credentials so, and
        the rows that would send them are untested)."""
        if caller is None:
            return Presented()
        store = getattr(self.http, "credentials", None)
        run_cert = getattr(getattr(self.http, "tls", None), "cert", None) is not None
        if isinstance(caller, RawToken):
            try:
                return present(None, raw=caller.value, ways=self.ways, run_cert=run_cert,
                               places=self.key_places, tls=self.secure())
            except CannotPresent as exc:
                raise CredentialUnfit(f"a credential the target never issued cannot be sent over "
                                      f"{self.name}: {exc}") from None
        label = self.bearer if caller == DEFAULT else caller
        if label is None:
            return Presented()
        token = self.tokens(label, caller != DEFAULT)
        credential = store.get(label) if store is not None else None
        if credential is None or not credential.given:
            if not token:
                return Presented()
            credential = Credential(label, token=token)
        try:
            return present(credential, bearer=token, ways=self.ways, run_cert=run_cert,
                           places=self.key_places, tls=self.secure())
        except CannotPresent as exc:
            raise CredentialUnfit(f"credentials.{label} cannot be sent over {self.name}: {exc}",
                                  label) from None

    def auth(self, caller: str | RawToken | None = DEFAULT) -> dict[str, str]:
        """The headers a call as ``caller`` carries for its credential (``presented``)."""
        return self.presented(caller).headers

    def call_headers(self, presented: Presented, idempotency_key: str | None,
                     extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self.headers, **presented.headers}
        if self.idempotency and idempotency_key is not None:
            key = uuid.uuid4().hex if idempotency_key == FRESH else idempotency_key
            headers[self.idempotency.get("header", "Idempotency-Key")] = key
        headers.update(extra or {})
        return headers

    def read_error(self, body: Any) -> tuple[Any, str, Any]:
        """(code, message, data) where the binding declares an error lives."""
        code = at_pointer(body, self.error_at["code"])
        message = at_pointer(body, self.error_at["message"])
        return code, "" if message is None else str(message), at_pointer(body, self.error_at.get("data", ""))

    # -- calling -----------------------------------------------------------------------
    def call(self, operation: str, params: Any, *, caller: str | RawToken | None = DEFAULT,
             headers: Mapping[str, str] | None = None,
             idempotency_key: str | None = FRESH, raw: str | None = None, **options: Any) -> Reply:
        """Call ``operation`` with ``params`` (or the ``raw`` body text) as ``caller``."""
        if self.before_call is not None:
            self.before_call(operation, self.bearer if caller == DEFAULT
                             else caller if isinstance(caller, str) else None)
        presented = self.presented(caller)
        # the binding's framing and parsing, and the exchange, with the caller's query and certificate
        with LEDGER.charge("transport"), self.http.presenting(presented):
            reply = self._send(operation, params, self.call_headers(presented, idempotency_key, headers), raw,
                               credential_headers=tuple(presented.headers), **options)
        if (reply.status == 401 and caller == DEFAULT and self.bearer and presented == Presented()
            and self.on_unauthenticated):
            self.on_unauthenticated(self.bearer)  # the target wants the token the run was not given
        return reply

    def _send(self, operation: str, params: Any, headers: dict[str, str], raw: str | None,
              **options: Any) -> Reply:
        raise NotImplementedError

    def carries(self, params: Any) -> bool:
        """Whether this binding can carry ``params`` as an operation's input at all (MCP
        tool arguments are an object by the revision's schema: another value is a
        malformed request, refused by MCP before the operation sees it)."""
        return True

    def read_back(self, operation: str, params: Any, query: QueryReader | None = None) -> Any:
        """``params`` as the server reads them once this binding carries them as
        ``operation``'s input (a JSON body: as they are), ValueError where it cannot carry
        them. ``query(name, texts)`` reads a parameter that travels as text (a query
        parameter: by the protocol's type of it; by default its last value)."""
        if not self.carries(params):
            raise ValueError(f"binding {self.name} cannot carry {type(params).__name__} as an input")
        return params


BINDING_KINDS: dict[str, type[Binding]] = {}


def binding_kind(cls: type[Binding]) -> type[Binding]:
    BINDING_KINDS[cls.kind] = cls
    return cls


# kinds whose module (and its dependencies) is imported when a profile first names one
LAZY_KINDS = {"grpc": "conformance.transport.grpc"}


def make_binding(name: str, entry: Mapping[str, Any], http: HttpTransport, tokens: Tokens) -> Binding:
    kind = entry.get("kind")
    if kind not in BINDING_KINDS and kind in LAZY_KINDS:
        import importlib

        importlib.import_module(LAZY_KINDS[str(kind)])
    if kind not in BINDING_KINDS:
        raise ValueError(f"binding {name!r}: unknown kind {kind!r} (known: "
                         f"{', '.join(sorted(BINDING_KINDS))})")
    return BINDING_KINDS[kind](name, entry, http, tokens)


@binding_kind
class JsonRpcBinding(Binding):
    """JSON-RPC 2.0 over HTTP POST at ``path``; the operation is the method. Errors
    are the envelope's error member; their HTTP status is whatever the spec's
    catalog says. A streamed (SSE) answer is judged by its first event."""

    kind = "jsonrpc-http"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ids = itertools.count(1)

    def next_id(self) -> Any:
        """An ordinary request id in the shape the spec's examples use (other shapes
        are the subject of their own requirement)."""
        if self.entry.get("request_ids") == "uuid":
            return str(uuid.uuid4())
        return next(self._ids)

    def _send(self, operation: str, params: Any, headers: dict[str, str], raw: str | None,
              **options: Any) -> Reply:
        request_id, omit_params = options.get("request_id", "auto"), options.get("omit_params", False)
        if raw is None:
            envelope: dict[str, Any] = {"jsonrpc": "2.0", "method": operation}
            envelope["id"] = self.next_id() if request_id == "auto" else request_id
            if not omit_params:
                envelope["params"] = params
            raw = json.dumps(envelope)
        return self._post(raw, headers, options.get("timeout"))

    def send_raw(self, body: bytes | str, *, headers: Mapping[str, str | None] | None = None,
                 caller: str | RawToken | None = DEFAULT, timeout: float | None = None) -> Reply:
        """Send any body as it is (a JSON-RPC request or not) and read the answer as one;
        a header given as None is left out (the subject of a header requirement)."""
        presented = self.presented(caller)
        sent = {"Content-Type": "application/json", **self.headers, **presented.headers, **(headers or {})}
        with self.http.presenting(presented):
            return self._post(body, {k: v for k, v in sent.items() if v is not None}, timeout)

    def _post(self, body: bytes | str, headers: dict[str, str], timeout: float | None = None) -> Reply:
        reply = self.http.request("POST", self.path, headers=headers, content=body, timeout=timeout)
        envelope = first_event(reply) if is_event_stream(reply) else reply.json()
        if isinstance(envelope, dict) and "result" in envelope and "error" not in envelope:
            return Reply(self.name, reply, True, envelope["result"], envelope=envelope,
                         statuses=self.statuses)
        code, message, data = self.read_error(envelope)
        flagged = isinstance(envelope, dict) and isinstance(envelope.get("error"), dict)
        return Reply(self.name, reply, False, None, code, message, flagged, envelope, error_data=data,
                     statuses=self.statuses,
                     spoke=flagged)


@binding_kind
class HttpActionBinding(Binding):
    """``POST {path}`` with the operation filled in for ``{name}`` and the input as
    the JSON body; 200 with the result, an error at the declared place otherwise."""

    kind = "http-action"

    def _send(self, operation: str, params: Any, headers: dict[str, str], raw: str | None,
              **options: Any) -> Reply:
        body = raw if raw is not None else json.dumps(params)
        reply = self.http.request("POST", self.path.replace("{name}", operation), headers=headers,
                                  content=body)
        data = reply.json()
        code, message, details = self.read_error(data)
        only_error = (isinstance(data, dict) and code is not None
                      and set(data) == {self.error_at["code"].strip("/").split("/")[0]})
        if reply.status == 200 and not only_error:
            return self.result_reply(reply, data, data)
        return Reply(self.name, reply, False, None, code, message, reply.status >= 400, data,
                     error_data=details)


def _path_names(path: str) -> list[str]:
    return re.findall(r"\{([A-Za-z0-9_]+)\}", path)


def _query_value(value: Any) -> list[str]:
    """One query parameter's values: booleans in lower case, numbers in decimal, a list
    as the parameter repeated; anything else as its JSON text."""
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, list):
        return [v for item in value for v in _query_value(item)]
    if isinstance(value, str):
        return [value]
    return [json.dumps(value)] if isinstance(value, dict) else [str(value)]


@binding_kind
class HttpRoutesBinding(Binding):
    """REST routes: each operation has routes ``{verb, path, body}`` (the entry's ``routes``,
    a protocol fills them from its document: a proto's google.api.http rules, say). A path
    names params in braces (``/tasks/{id}:cancel``); the route taken is the one whose every
    brace the params fill (non-empty), the one filling the most first. What the path does not
    take travels as the JSON body (``body: "*"``) or, for a route without one, as query
    parameters (a list repeats its parameter). 2xx is a result (an empty body an empty
    object); anything else an error at the declared place. ``content_type`` is sent."""

    kind = "http-routes"

    def chosen(self, operation: str, params: Any) -> dict[str, Any]:
        """The route ``params`` take: the one whose every brace they fill, the most first."""
        routes = (self.entry.get("routes") or {}).get(operation)
        if not routes:
            raise ValueError(f"binding {self.name}: no route for operation {operation!r}")
        given = params if isinstance(params, dict) else {}
        usable = [r for r in routes if all(isinstance(given.get(n), str | int) and given.get(n) != ""
                                           for n in _path_names(r["path"]))]
        return dict(max(usable, key=lambda r: len(_path_names(r["path"])), default=routes[0]))

    def route(self, operation: str, params: Any) -> tuple[str, str, str, dict[str, Any]]:
        """(verb, path, body rule, the params left) for ``params``."""
        given = params if isinstance(params, dict) else {}
        chosen = self.chosen(operation, params)
        taken = _path_names(chosen["path"])
        path = re.sub(r"\{([A-Za-z0-9_]+)\}",
                      lambda m: urllib.parse.quote(str(given.get(m.group(1), "")), safe=""), chosen["path"])
        rest = {k: v for k, v in given.items() if k not in taken} if isinstance(params, dict) else params
        return chosen["verb"].upper(), self.path.rstrip("/") + path, chosen.get("body", ""), rest

    def read_back(self, operation: str, params: Any, query: QueryReader | None = None) -> Any:
        """A path member as text (one a route cannot take, or takes empty, makes another
        request: not carried), the body as it is, a query parameter as ``query`` reads its
        texts."""
        given = params if isinstance(params, dict) else {}
        _, _, body, rest = self.route(operation, params)
        template = self.chosen(operation, params)["path"]
        taken = {n: given.get(n) for n in _path_names(template)}
        if any(not isinstance(v, str) or v == "" for v in taken.values()):
            raise ValueError(f"binding {self.name}: a path member of {operation} is no text")
        if body:
            return rest if not isinstance(rest, dict) else {**rest, **taken}
        if not isinstance(rest, dict):
            raise ValueError(f"binding {self.name}: {operation}'s query carries members only")
        read = query or (lambda name, texts: texts[-1] if texts else "")
        return {**{k: read(k, _query_value(v)) for k, v in rest.items() if v is not None}, **taken}

    def call_headers(self, presented: Presented, idempotency_key: str | None,
                     extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = super().call_headers(presented, idempotency_key, extra)
        if self.entry.get("content_type") and not any(k.lower() == "content-type" for k in extra or {}):
            headers["Content-Type"] = str(self.entry["content_type"])
        return headers

    def _send(self, operation: str, params: Any, headers: dict[str, str], raw: str | None,
              **options: Any) -> Reply:
        verb, path, body_rule, rest = self.route(operation, params)
        query: list[tuple[str, str]] = []
        content: str | None = raw
        if raw is None and body_rule:
            content = json.dumps(rest if rest is not None else {})
        elif raw is None and isinstance(rest, dict):
            query = [(str(k), v) for k, value in rest.items() if value is not None
                     for v in _query_value(value)]
        if content is None:
            headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        reply = self.http.request(verb, path + ("?" + urllib.parse.urlencode(query) if query else ""),
                                  headers=headers, content=content, timeout=options.get("timeout"))
        data = reply.json() if reply.content else {}
        if 200 <= reply.status < 300:
            return self.result_reply(reply, data, data)
        code, message, details = self.read_error(data)
        return Reply(self.name, reply, False, None, code, message, reply.status >= 400, data,
                     error_data=details, statuses=self.statuses,
                     spoke=isinstance(data, dict) and "error" in data)


@binding_kind
class McpToolsBinding(Binding):
    """MCP tools at ``path``, in the revision ``protocol_version`` names (its era: a
    handshake or stateless requests), through the kit's one MCP client
    (transport/mcp.py): each operation is a tool, called with ``tools/call``. A tool's
    answer is its ``structuredContent``, else the JSON its text content holds; an error
    is an ``isError`` result (the error at the declared place of that payload) or a
    JSON-RPC error. Statuses carry no meaning."""

    kind = "mcp-tools"
    kind_statuses = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # one client (one session) per caller: the credential headers it sends
        self.clients: dict[tuple[tuple[str, str], ...], Any] = {}

    def client_for(self, credential: str | Mapping[str, str] | None) -> Any:
        """The MCP client of one caller (its credential's headers, or its Authorization value):
        its session is that caller's (a server may bind a session to the identity that opened it)."""
        auth = dict(credential or {}) if not isinstance(credential, str) else {"Authorization": credential}
        key = tuple(sorted(auth.items()))
        if key not in self.clients:
            self.clients[key] = McpClient(self.http, self.path,
                                          str(self.entry.get("protocol_version", "2025-06-18")),
                                          lambda: {**self.headers, **auth})
        return self.clients[key]

    @property
    def client(self) -> Any:
        """The client of the binding's own bearer."""
        return self.client_for(self.auth(DEFAULT))

    def carries(self, params: Any) -> bool:
        return isinstance(params, dict)

    def list_tools(self) -> list[dict[str, Any]]:
        try:
            return self.client.list_tools()[0]
        except McpError:
            return []

    def _send(self, operation: str, params: Any, headers: dict[str, str], raw: str | None,
              **options: Any) -> Reply:
        arguments = json.loads(raw) if raw is not None else params
        names = {"Authorization", *options.get("credential_headers", ())}
        credential = {k: v for k, v in headers.items() if k in names}
        client = self.client_for(credential)
        extra = {k: v for k, v in headers.items() if k.lower() != "content-type" and k not in credential}
        try:
            answer = client.request("tools/call", {"name": operation, "arguments": arguments}, headers=extra)
        except McpError:
            start = client.initialize_answer
            assert start is not None
            return Reply(self.name, start.http, False, None, start.error_code,
                         str((start.error or {}).get("message", "")),
                         True, start.envelope, statuses=False, spoke=start.spoke)
        reply, body, result = answer.http, answer.envelope, answer.result
        if not isinstance(result, dict):
            if reply.status >= 400 and not answer.error:  # refused at the HTTP level (authentication, say)
                code, message, data = self.read_error(reply.json())
                return Reply(self.name, reply, False, None, code, message, True, body, statuses=False,
                             error_data=data, spoke=answer.spoke)
            err = answer.error or {}
            return Reply(self.name, reply, False, None, err.get("code"), str(err.get("message", ""))[:200],
                         True, body,
                         statuses=False, error_data=err.get("data"), spoke=answer.spoke)
        content, _ = tool_payload(result)
        code, message, data = self.read_error(content)
        if result.get("isError"):
            return Reply(self.name, reply, False, None, code, message, True, result, statuses=False,
                         error_data=data, spoke=True)
        if code is not None and isinstance(content, dict) and set(content) == {"error"}:
            return Reply(self.name, reply, False, None, code, message, False, result, statuses=False,
                         error_data=data, spoke=True)
        out = self.result_reply(reply, content, result)
        out.spoke = True
        return out


def is_event_stream(reply: HttpReply) -> bool:
    return reply.headers.get("content-type", "").startswith("text/event-stream")


def stream_events(reply: HttpReply) -> list[Any]:
    """The JSON payloads of a server-sent-events answer: each event's data, its ``data`` lines
    joined (an event the body ends inside too: the body was read whole)."""
    return [parse_json(data)[0] for data in sse_events(reply.text, unfinished=True)]


def first_event(reply: HttpReply) -> Any:
    """A streamed answer is judged by its first event's envelope."""
    events = stream_events(reply)
    return events[0] if events else None


@dataclass
class BindingSet:
    """The bindings a run speaks, built on first use."""

    entries: dict[str, dict[str, Any]]
    http: HttpTransport
    tokens: Tokens
    built: dict[str, Binding] = field(default_factory=dict)

    def get(self, name: str) -> Binding:
        if name not in self.built:
            self.built[name] = make_binding(name, self.entries[name], self.http, self.tokens)
        return self.built[name]
