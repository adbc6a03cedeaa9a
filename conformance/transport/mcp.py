"""MCP over Streamable HTTP, as a client that follows each revision's documents
(``specs/mcp/<revision>/``): the kit's one MCP client, used by the ``mcp-tools``
binding and by the MCP-level requirements (conformance/protocols/mcp/).

Two eras, told apart by the revision's own schema (one without ``InitializeRequest``
has no handshake):

- handshake revisions (2025-06-18, 2025-11-25): ``initialize`` asking the newest
  handshake revision the kit has documents for, the server's answer taken as the
  negotiated revision when the kit knows it (a downgrade), ``notifications/initialized``,
  then ``MCP-Protocol-Version`` and the ``Mcp-Session-Id`` the server issued on every
  later request; a 404 to a request carrying the session id starts a new session;
- stateless revisions (2026-07-28): no handshake; every request carries ``_meta``
  (protocol version, client capabilities, client info) and the headers it mirrors
  (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*`` from a tool's
  ``x-mcp-header`` annotations, Base64-sentineled where a value is not header-safe).

Every answer is validated against the revision's ``schema.json``; what breaks it is
kept with the path it breaks, for the schema requirement to quote."""

from __future__ import annotations

import base64
import functools
import itertools
import json
import re
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import best_match

from conformance.documents.compiled import Judge
from conformance.paths import DATA_ROOT
from conformance.transport.http import HttpReply, HttpTransport, parse_json
from conformance.transport.sse import sse_events

CLIENT_INFO = {"name": "conformance", "version": "1"}
ACCEPT = "application/json, text/event-stream"
# header names compare case-insensitively (2025-11-25 spells it MCP-Session-Id)
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
META_PREFIX = "io.modelcontextprotocol/"


def specs_dir() -> Path:
    return DATA_ROOT / "specs" / "mcp"


@dataclass(frozen=True)
class Revision:
    """One MCP revision's documents: its schema and its pages."""

    name: str
    schema: dict[str, Any] = field(repr=False, compare=False)

    @property
    def defs(self) -> dict[str, Any]:
        return self.schema.get("$defs") or self.schema.get("definitions") or {}

    @property
    def defs_key(self) -> str:
        return "$defs" if "$defs" in self.schema else "definitions"

    @property
    def stateless(self) -> bool:
        """No handshake: the revision's schema defines no ``initialize`` request."""
        return "InitializeRequest" not in self.defs

    def page(self, stem: str) -> Path:
        return specs_dir() / self.name / f"{stem}.mdx"

    def page_relpath(self, stem: str) -> str:
        return f"specs/mcp/{self.name}/{stem}.mdx"

    def line(self, stem: str, needle: str) -> int:
        """The line of the revision's page ``stem`` that holds ``needle`` (a ValueError
        when it is not there: a citation must stand on the document's words)."""
        for number, text in enumerate(self.page(stem).read_text(encoding="utf-8").splitlines(), 1):
            if needle in text:
                return number
        raise ValueError(f"{self.page_relpath(stem)} has no line with {needle!r}")

    def request_def(self, method: str) -> str | None:
        """The schema's request definition for ``method`` (its ``method`` const)."""
        for name, schema in self.defs.items():
            if name.endswith(("Request", "Notification")) and \
                    ((schema.get("properties") or {}).get("method") or {}).get("const") == method:
                return name
        return None

    def response_def(self, method: str) -> tuple[str, str | None]:
        """(the definition an answer's envelope is validated against, the one its
        ``result`` is): the request's ``...ResultResponse`` where the schema has one,
        else the generic response and the request's ``...Result``."""
        request = self.request_def(method) or ""
        result = request.removesuffix("Request") + "Result" if request else ""
        if f"{result}Response" in self.defs:
            return f"{result}Response", None
        envelope = "JSONRPCResultResponse" if "JSONRPCResultResponse" in self.defs else "JSONRPCResponse"
        return envelope, result if result in self.defs else "Result" if "Result" in self.defs else None

    @property
    def error_def(self) -> str:
        return "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in self.defs else "JSONRPCError"

    def error_code(self, name: str) -> int | None:
        """The ``code`` const of one of the schema's error definitions (HeaderMismatchError, say)."""
        schema = self.defs.get(name) or {}
        error = (schema.get("properties") or {}).get("error") or {}
        for part in [error, *error.get("allOf", [])]:
            code = ((part.get("properties") or {}).get("code") or {}).get("const")
            if isinstance(code, int):
                return code
        return None

    def violations(self, definition: str, instance: Any, where: str = "") -> list[str]:
        """What in ``instance`` breaks the schema's ``definition``: the most telling error,
        with the path it stands at."""
        validator = _validator(self.name, definition)
        errors = list(validator.iter_errors(instance))
        if not errors:
            return []
        worst = best_match(errors)
        at = where + "".join(f"/{p}" for p in worst.absolute_path)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return [f"{at or '/'}: {worst.message[:240]} [schema {self.name} {self.defs_key}/{definition}]{more}"]

    def validate_answer(self, method: str, envelope: Any) -> list[str]:
        """An answer to ``method`` against the schema: the error response, or the result
        response and the method's result."""
        if isinstance(envelope, dict) and "error" in envelope and "result" not in envelope:
            return self.violations(self.error_def, envelope)
        outer, inner = self.response_def(method)
        found = self.violations(outer, envelope)
        result = envelope.get("result") if isinstance(envelope, dict) else None
        if inner is None and isinstance(result, dict) and result.get("resultType", "complete") == "complete":
            request = self.request_def(method) or ""
            inner = (request.removesuffix("Request") + "Result"
                     if request.removesuffix("Request") + "Result" in self.defs else None)
        if inner and not found and isinstance(envelope, dict):
            found = self.violations(inner, result, "/result")
        return found


@functools.cache
def revision(name: str) -> Revision:
    path = specs_dir() / name / "schema.json"
    if not path.is_file():
        raise KeyError(name)
    return Revision(name, json.loads(path.read_text(encoding="utf-8")))


@functools.cache
def known_revisions() -> tuple[str, ...]:
    """The revisions the kit has documents for, oldest first."""
    return tuple(sorted(p.name for p in specs_dir().iterdir() if (p / "schema.json").is_file()))


def newest_handshake() -> str:
    return max(r for r in known_revisions() if not revision(r).stateless)


# the tool schemas a run listed, per transport (one run), endpoint, revision and caller
_LISTED: weakref.WeakKeyDictionary[Any, dict[tuple[str, str, str], Any]] = weakref.WeakKeyDictionary()


@functools.cache
def _validator(rev: str, definition: str) -> Judge:
    """The revision's ``definition``, in the schema's own dialect, formats unchecked (as
    python-jsonschema judges without a format checker), compiled: most messages are valid."""
    doc = revision(rev)
    root = {**doc.schema, "$ref": f"#/{doc.defs_key}/{definition}"}
    return Judge(root, dialect=validators.validator_for(doc.schema), formats=False)


# ----------------------------------------------------------------------------------
# header values (2026-07-28 streamable-http "Value Encoding")
# ----------------------------------------------------------------------------------
_SAFE = re.compile(r"^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$")


def header_value(value: Any) -> str:
    """A value as a header: strings as they are, integers in decimal, booleans
    lowercase; Base64 in the ``=?base64?...?=`` sentinel where it is not header-safe
    or looks like the sentinel itself."""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    if _SAFE.match(text) and not (text.startswith("=?base64?") and text.endswith("?=")):
        return text
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def decode_header_value(text: str) -> str | None:
    """A header value as sent: decoded from the sentinel form (None when that is broken)."""
    if text.startswith("=?base64?") and text.endswith("?="):
        try:
            return base64.b64decode(text[9:-2], validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
    return text


def header_params(schema: Any) -> dict[tuple[str, ...], str]:
    """The ``x-mcp-header`` annotations of a tool's inputSchema reachable through
    ``properties`` keys only: property path -> header name part."""
    out: dict[tuple[str, ...], str] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict):
            return
        for key, sub in props.items():
            if isinstance(sub, dict):
                name = sub.get("x-mcp-header")
                if isinstance(name, str) and name:
                    out[(*path, key)] = name
                walk(sub, (*path, key))

    walk(schema, ())
    return out


# ----------------------------------------------------------------------------------
# answers
# ----------------------------------------------------------------------------------
def stream_messages(reply: HttpReply) -> list[Any]:
    """The JSON messages of a server-sent-events answer, in order (``data:`` lines of
    one event joined; empty priming events skipped)."""
    return [parse_json(data)[0] for data in sse_events(reply.text, unfinished=True) if data.strip()]


def answer_of(reply: HttpReply, request_id: Any) -> Any:
    """The JSON-RPC answer to ``request_id`` in a reply: the JSON body, or the stream's
    response carrying that id (notifications and requests before it are not answers)."""
    if not reply.headers.get("content-type", "").startswith("text/event-stream"):
        return reply.json()
    messages = stream_messages(reply)
    for message in messages:
        if (isinstance(message, dict) and ("result" in message or "error" in message)
            and message.get("id") == request_id):
            return message
    responses = [m for m in messages if isinstance(m, dict) and ("result" in m or "error" in m)]
    return responses[0] if responses else None


def is_jsonrpc_answer(envelope: Any) -> bool:
    """A JSON-RPC response of any kind: the target speaks JSON-RPC, whatever it said."""
    return (isinstance(envelope, dict) and envelope.get("jsonrpc") == "2.0"
            and ("result" in envelope or "error" in envelope))


@dataclass
class Answer:
    """One request to the MCP endpoint and what came back; ``violations`` (what breaks the
    revision's schema) is worked out when first asked for."""

    method: str
    request: dict[str, Any]
    sent_headers: dict[str, str]
    http: HttpReply
    envelope: Any
    revision: str
    _violations: list[str] | None = field(default=None, repr=False)

    @property
    def violations(self) -> list[str]:
        if self._violations is None:
            self._violations = ([] if self.envelope is None
                                else revision(self.revision).validate_answer(self.method, self.envelope))
        return self._violations

    @property
    def result(self) -> Any:
        return self.envelope.get("result") if isinstance(self.envelope, dict) else None

    def member(self, key: str) -> Any:
        """``key`` of the result (the version initialize agreed on, the capabilities), None
        where the result is no object or lacks it: a check reads what it needs without
        guarding against an answer of another shape each time."""
        return self.result.get(key) if isinstance(self.result, dict) else None

    @property
    def error(self) -> dict[str, Any] | None:
        err = self.envelope.get("error") if isinstance(self.envelope, dict) else None
        return err if isinstance(err, dict) else None

    @property
    def error_code(self) -> Any:
        return (self.error or {}).get("code")

    @property
    def spoke(self) -> bool:
        return is_jsonrpc_answer(self.envelope)

    def describe(self) -> str:
        body = self.http.text[:240]
        return f"{self.method}: HTTP {self.http.status} {body!r}"


class McpError(Exception):
    """The client could not reach the state it needed (no handshake it can speak)."""


# ----------------------------------------------------------------------------------
# the client
# ----------------------------------------------------------------------------------
class McpClient:
    """One client of one MCP endpoint, in the era of ``preferred`` (a revision name).

    ``base_headers()`` gives what every POST carries besides MCP's own headers (the
    bearer, a profile's fixed headers). A handshake client starts its session on the
    first request."""

    def __init__(self, http: HttpTransport, path: str, preferred: str,
                 base_headers: Callable[[], dict[str, str]]) -> None:
        self.http = http
        self.path = path
        self.preferred = revision(preferred)
        self.base_headers = base_headers
        self.ids = itertools.count(1)
        self.negotiated: Revision | None = self.preferred if self.preferred.stateless else None
        self.session_id: str | None = None
        self.initialize_answer: Answer | None = None
        self.initialized_reply: HttpReply | None = None
        self.new_sessions = 0  # sessions started again after a 404
        self.tool_schemas: dict[str, Any] | None = None  # name -> inputSchema (stateless: for x-mcp-header)

    @property
    def stateless(self) -> bool:
        return self.preferred.stateless

    @property
    def rev(self) -> Revision:
        return self.negotiated or self.preferred

    # -- what a request carries --------------------------------------------------
    def post(self, body: Any, headers: Mapping[str, str | None], timeout: float | None = None) -> HttpReply:
        sent = {k: v for k, v in headers.items() if v is not None}
        raw = body if isinstance(body, (str, bytes)) else json.dumps(body)
        return self.http.request("POST", self.path, headers=sent, content=raw, timeout=timeout)

    def headers_for(self, message: dict[str, Any]) -> dict[str, str]:
        """Every header MCP asks of a client for this message in the current era."""
        out = {"Content-Type": "application/json", "Accept": ACCEPT, **self.base_headers()}
        if self.stateless:
            out[VERSION_HEADER] = self.rev.name
            out["Mcp-Method"] = str(message.get("method"))
            given = message.get("params")
            params: dict[str, Any] = given if isinstance(given, dict) else {}
            source = params.get("name") if "name" in params else params.get("uri")
            if (message.get("method") in ("tools/call", "resources/read", "prompts/get")
                and source is not None):
                out["Mcp-Name"] = header_value(source)
            if message.get("method") == "tools/call":
                out.update(self.param_headers(params.get("name"), params.get("arguments")))
        elif message.get("method") != "initialize":
            if self.negotiated is not None:
                out[VERSION_HEADER] = self.negotiated.name
            if self.session_id is not None:
                out[SESSION_HEADER] = self.session_id
        return out

    def param_headers(self, tool: Any, arguments: Any) -> dict[str, str]:
        """``Mcp-Param-{Name}`` for each ``x-mcp-header`` property the call's arguments give
        (the tools listed once per run and endpoint, again after a HeaderMismatch)."""
        if self.tool_schemas is None:
            endpoint = (self.path, self.rev.name, json.dumps(self.base_headers(), sort_keys=True))
            known = _LISTED.setdefault(self.http, {})
            if endpoint in known:
                self.tool_schemas = known[endpoint]
            else:
                self.list_tools()
                known[endpoint] = self.tool_schemas
        out = {}
        for path, name in header_params((self.tool_schemas or {}).get(tool)).items():
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if value is not None and not isinstance(value, (dict, list, float)):
                out[f"Mcp-Param-{name}"] = header_value(value)
        return out

    def with_meta(self, params: Any) -> Any:
        """Stateless: the request's params with the ``_meta`` the revision requires."""
        if not self.stateless:
            return params
        params = dict(params) if isinstance(params, dict) else {}
        meta = dict(params.get("_meta") or {})
        meta.setdefault(f"{META_PREFIX}protocolVersion", self.rev.name)
        meta.setdefault(f"{META_PREFIX}clientCapabilities", {})
        meta.setdefault(f"{META_PREFIX}clientInfo", dict(CLIENT_INFO))
        params["_meta"] = meta
        return params

    # -- the handshake -----------------------------------------------------------
    def start(self, asked: str | None = None) -> Answer:
        """``initialize`` (asking the newest handshake revision the kit knows, or
        ``asked``), then ``notifications/initialized``; the session id kept if issued."""
        if self.stateless:
            raise McpError("a stateless revision has no handshake")
        self.session_id, self.negotiated = None, None
        version = asked or newest_handshake()
        params = {"protocolVersion": version, "capabilities": {}, "clientInfo": dict(CLIENT_INFO)}
        answer = self._exchange("initialize", params, self.preferred, start=False)
        self.initialize_answer = answer
        agreed = answer.member("protocolVersion")
        if isinstance(agreed, str) and agreed in known_revisions() and not revision(agreed).stateless:
            self.negotiated = revision(agreed)
        answer.revision = (self.negotiated or self.preferred).name
        session = answer.http.headers.get(SESSION_HEADER)
        self.session_id = session if session else None
        if self.negotiated is not None:
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            self.initialized_reply = self.post(note, self.headers_for(note))
        return answer

    def ensure_started(self) -> None:
        if not self.stateless and self.negotiated is None:
            self.start()
            if self.negotiated is None:
                raise McpError("initialize did not agree on a revision the kit knows: "
                               f"{self.initialize_answer.describe() if self.initialize_answer else ''}")

    # -- requests ----------------------------------------------------------------
    def request(self, method: str, params: Any = None, *, headers: Mapping[str, str | None] | None = None,
                request_id: Any = "auto", timeout: float | None = None) -> Answer:
        """One request in the current era (a handshake client starts its session first);
        ``headers`` override or (None) leave out what the client would send."""
        if method != "initialize":
            self.ensure_started()
        return self._exchange(method, params, self.rev, headers=headers, request_id=request_id,
                              timeout=timeout)

    def _exchange(self, method: str, params: Any, rev: Revision, *, start: bool = True,
                  headers: Mapping[str, str | None] | None = None,
                  request_id: Any = "auto", timeout: float | None = None) -> Answer:
        rid = next(self.ids) if request_id == "auto" else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        message["params"] = self.with_meta({} if params is None else params)
        sent = {**self.headers_for(message), **(headers or {})}
        reply = self.post(message, sent, timeout)
        if (reply.status == 404 and start and not self.stateless and self.session_id
            and sent.get(SESSION_HEADER) == self.session_id):
            self.new_sessions += 1  # the session ended: a new one, without the old id, and the request again
            self.start(self.negotiated.name if self.negotiated else None)
            sent = {**self.headers_for(message), **(headers or {})}
            reply = self.post(message, sent, timeout)
        envelope = answer_of(reply, rid)
        answer = Answer(method, message, {k: v for k, v in sent.items() if v is not None}, reply, envelope,
                        rev.name)
        mirrored_by_caller = any(k.lower().startswith("mcp-") for k in headers or {})
        if self.stateless and method == "tools/call" and not mirrored_by_caller and start \
                and self.tool_schemas is not None \
                and answer.error_code == rev.error_code("HeaderMismatchError"):
            # the tool may have changed: list again, and send once more (streamable-http)
            self.tool_schemas = None
            return self._exchange(method, params, rev, start=False, request_id=request_id, timeout=timeout)
        return answer

    def notify(self, method: str, params: Any = None,
               headers: Mapping[str, str | None] | None = None) -> HttpReply:
        self.ensure_started()
        note: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            note["params"] = params
        return self.post(note, {**self.headers_for(note), **(headers or {})})

    # -- tools -------------------------------------------------------------------
    def list_tools(self, max_pages: int = 50) -> tuple[list[dict[str, Any]], list[Answer], str]:
        """Every page of ``tools/list`` (following ``nextCursor``): the tools, the answers,
        and what went wrong ("" when nothing did)."""
        tools: list[dict[str, Any]] = []
        answers: list[Answer] = []
        cursor: Any = None
        seen: set[str] = set()
        problem = ""
        for _ in range(max_pages):
            answer = self.request("tools/list", {} if cursor is None else {"cursor": cursor})
            answers.append(answer)
            result = answer.result if isinstance(answer.result, dict) else None
            page = result.get("tools") if result else None
            if not isinstance(page, list):
                problem = f"tools/list answered no tools list: {answer.describe()}"
                break
            tools += [t for t in page if isinstance(t, dict)]
            cursor = result.get("nextCursor") if result else None
            if cursor is None:
                break
            if not isinstance(cursor, str) or cursor in seen:
                problem = (f"tools/list gave nextCursor {cursor!r} again (or not a string): "
                           "the pages never end")
                break
            seen.add(cursor)
        else:
            problem = f"tools/list still had a nextCursor after {max_pages} pages"
        self.tool_schemas = {str(t.get("name")): t.get("inputSchema") for t in tools}
        return tools, answers, problem


def tool_payload(result: Any) -> tuple[Any, str]:
    """What a tools/call result says: its ``structuredContent``, else the JSON one of its
    text blocks holds (found by content: a result the revision lets be unstructured),
    with where it was found ("structuredContent", "text", or "" when neither)."""
    if not isinstance(result, dict):
        return None, ""
    if "structuredContent" in result:
        return result["structuredContent"], "structuredContent"
    content = result.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            value, error = parse_json(block["text"])
            if not error and isinstance(value, (dict, list)):
                return value, "text"
    return None, ""
