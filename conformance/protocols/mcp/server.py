"""A strict MCP server over Streamable HTTP, shared by the references that offer MCP
(Canon, Wever). It refuses what the revision's documents let a server refuse, so the
project's own tests see a client that forgets a header:

- handshake revisions: a request of a session without ``MCP-Protocol-Version`` or with
  another version than the session's (transports, "Protocol Version Header"); one
  without the session id it issued (400) or with an unknown or ended one (404);
- stateless revisions: a request without the ``_meta`` fields it requires (-32602),
  with a version it does not support (-32022), with ``MCP-Protocol-Version``,
  ``Mcp-Method``, ``Mcp-Name`` or an ``Mcp-Param-*`` header missing or not matching the
  body (-32020), an unknown method (404, -32601); every request validated against the
  revision's schema.

The host (a reference) gives the tools: ``mcp_versions`` (the revisions it speaks),
``mcp_tools()``, ``mcp_tool_names()``, ``mcp_input_schema(name)`` (None for no such
tool), ``mcp_call_tool(caller, params, headers)`` and
``mcp_server_info()``, and the settings a variant changes (``mcp_sessions``: initialize
issues a session id; ``mcp_page_size``: tools/list pages; ``mcp_streamed``: answers as
SSE streams; ``mcp_batches``: a JSON array is answered as JSON-RPC 2.0 batch, not refused;
``mcp_refuse_notifications``: a notification other than initialized is refused with 400;
``mcp_offers``: the capabilities declared beside tools, each with its empty ``<capability>/list``),
read from the host so that the selftest's trace sees who reads them.
Every step is a method, so a fault patches one behaviour (faults.py next to this file)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from conformance.transport.http import parse_json
from conformance.transport.mcp import (
    META_PREFIX,
    SESSION_HEADER,
    VERSION_HEADER,
    decode_header_value,
    header_params,
    header_value,
    known_revisions,
    revision,
)

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
NAMED_HEADERS = ("tools/call", "resources/read", "prompts/get")  # carry Mcp-Name
OFFERED = ("prompts", "resources")  # the capabilities it declares beside tools, by default (empty lists)


class RpcFault(Exception):
    """A JSON-RPC error answer (``status`` its HTTP status)."""

    def __init__(self, code: int, message: str, status: int = 200, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.status, self.data = code, message, status, data


@dataclass
class McpReply:
    """What the endpoint answers: a status, a JSON body (None: no body) and headers."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    stream: bool = False  # sent as a server-sent-events stream


@dataclass
class Session:
    version: str
    initialized: bool = False
    requests: int = 0


class McpHost:
    """The settings a host reads to the server, at their defaults: a variant that changes one
    changes an attribute the host has (conformance/faults.py refuses to create one)."""

    mcp_sessions: bool = True
    mcp_page_size: int | None = None
    mcp_streamed: bool = False
    mcp_batches: bool = False
    mcp_refuse_notifications: bool = False
    mcp_offers: tuple[str, ...] = OFFERED
    mcp: McpServer  # the server the host serves through (built by the host: what MCP faults patch)
    mcp_versions: list[str]  # the revisions it speaks (set by the host)


class McpServer:
    """The MCP endpoint of one reference."""

    def __init__(self, host: Any, *, session_requests: int | None = None) -> None:
        self.host = host
        self.session_requests = session_requests  # a session ends after this many requests (None: never)
        self.sessions: dict[str, Session] = {}
        self.received: list[dict[str, Any]] = []  # what clients sent (method, headers), newest last

    @property
    def sessions_issued(self) -> bool:
        return bool(getattr(self.host, "mcp_sessions", True))

    @property
    def page_size(self) -> int | None:
        return getattr(self.host, "mcp_page_size", None)

    # -- which revisions ---------------------------------------------------------------
    def versions(self) -> list[str]:
        return [v for v in self.host.mcp_versions if v in known_revisions()]

    def handshake_versions(self) -> list[str]:
        return [v for v in self.versions() if not revision(v).stateless]

    def stateless_versions(self) -> list[str]:
        return [v for v in self.versions() if revision(v).stateless]

    # -- the endpoint ------------------------------------------------------------------
    def handle(self, http_method: str, caller: Any, raw: bytes, headers: Mapping[str, str]) -> McpReply:
        headers = httpx.Headers(list(headers.items()))  # header names compare case-insensitively
        reply = self.answer(http_method, caller, raw, headers)
        if getattr(self.host, "mcp_streamed", False) and reply.status == 200 and isinstance(reply.body, dict):
            reply.stream = True
        return reply

    def answer(self, http_method: str, caller: Any, raw: bytes, headers: Mapping[str, str]) -> McpReply:
        if http_method == "DELETE" and self.handshake_versions() and headers.get(SESSION_HEADER):
            return self.end_session(headers[SESSION_HEADER])
        if http_method != "POST":
            return McpReply(405, None, {"Allow": "POST"})
        value, error = parse_json(raw)
        if not error and isinstance(value, list) and value and getattr(self.host, "mcp_batches", False):
            return self.batch(http_method, caller, value, headers)
        try:
            message = self.parse(raw)
            self.received.append({"method": message.get("method"),
                                  "headers": {k.lower(): v for k, v in headers.items()}, "message": message})
            del self.received[:-500]
            if self.is_modern(message, headers):
                return self.serve_modern(caller, message, headers)
            return self.serve_legacy(caller, message, headers)
        except RpcFault as fault:
            return self.error_reply(None, fault)

    def batch(self, http_method: str, caller: Any, messages: list[Any],
              headers: Mapping[str, str]) -> McpReply:
        """JSON-RPC 2.0's batch (the revisions removed it; a server may still answer one):
        each element answered in turn, the answers with a body in one array."""
        bodies = [self.answer(http_method, caller, json.dumps(m).encode(), headers).body for m in messages]
        answered = [b for b in bodies if b is not None]
        return McpReply(200, answered) if answered else McpReply(202)

    def parse(self, raw: bytes) -> dict[str, Any]:
        value, error = parse_json(raw)
        if error:
            raise RpcFault(PARSE_ERROR, "Parse error", 400)
        if (not isinstance(value, dict) or value.get("jsonrpc") != "2.0"
                or not isinstance(value.get("method"), str)):
            raise RpcFault(INVALID_REQUEST, "not a JSON-RPC 2.0 request or notification", 400)
        return value

    def is_modern(self, message: dict[str, Any], headers: Mapping[str, str]) -> bool:
        """A request carrying modern per-request ``_meta`` (or a stateless version header)
        and no session is served statelessly (versioning, "dual-era server")."""
        if not self.stateless_versions() or headers.get(SESSION_HEADER) and self.handshake_versions():
            return False
        if message.get("method") == "initialize" and self.handshake_versions():
            return False
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        said = headers.get(VERSION_HEADER)
        return (isinstance(meta, dict) and f"{META_PREFIX}protocolVersion" in meta) or \
            (said in known_revisions() and revision(said).stateless) or not self.handshake_versions()

    # -- answers -----------------------------------------------------------------------
    def answer_id(self, request_id: Any) -> Any:
        """The id an answer carries: the request's, with its type."""
        return request_id

    def result_reply(self, request_id: Any, result: Any, extra: dict[str, str] | None = None) -> McpReply:
        return McpReply(200, {"jsonrpc": "2.0", "id": self.answer_id(request_id), "result": result},
                        extra or {})

    def error_reply(self, request_id: Any, fault: RpcFault) -> McpReply:
        error: dict[str, Any] = {"code": fault.code, "message": fault.message}
        if fault.data is not None:
            error["data"] = fault.data
        body: dict[str, Any] = {"jsonrpc": "2.0", "error": error}
        if request_id is not None:
            body["id"] = self.answer_id(request_id)
        return McpReply(fault.status, body)

    def notification_reply(self, method: str = "") -> McpReply:
        """An accepted notification: 202 with no body (transports); with the host's
        ``mcp_refuse_notifications``, one it does not handle is refused: 400 and a JSON-RPC
        error without an id, as the transports let a server that cannot accept it."""
        if getattr(self.host, "mcp_refuse_notifications", False) and method != "notifications/initialized":
            return McpReply(400, {"jsonrpc": "2.0",
                                  "error": {"code": -32601, "message": f"notification {method} not handled"}})
        return McpReply(202)

    @property
    def offered(self) -> tuple[str, ...]:
        """The capabilities it declares beside tools, each served by its ``<capability>/list``
        (nothing listed): the host's ``mcp_offers``."""
        return tuple(getattr(self.host, "mcp_offers", OFFERED))

    def capabilities(self) -> dict[str, Any]:
        return {"tools": {"listChanged": False}, **{name: {} for name in self.offered}}

    def offered_list(self, capability: str) -> dict[str, Any]:
        """``<capability>/list`` of a capability it declares: it offers none of the things."""
        return {capability: []}

    def revision_of(self, version: str) -> Any:
        """The revision a request is served in (the newest stateless one for a version the
        kit has no documents for)."""
        if version in known_revisions():
            return revision(version)
        return revision(max(self.stateless_versions() or self.versions()))

    def validate_request(self, version: str, message: dict[str, Any]) -> None:
        """A request or notification against the revision's schema, where it defines the
        method. Tool arguments that are no object are left to the tool, whose input
        validation refuses them as a tool execution error (tools, "Error Handling": a
        server may answer either way)."""
        rev = self.revision_of(version)
        name = rev.request_def(str(message.get("method")))
        if name is None:
            return
        params = message.get("params")
        if (message.get("method") == "tools/call" and isinstance(params, dict)
                and not isinstance(params.get("arguments", {}), dict)):
            message = {**message, "params": {**params, "arguments": {}}}
        found = rev.violations(name, message)
        if found:
            raise RpcFault(INVALID_PARAMS, f"Invalid params: {found[0]}", 400 if rev.stateless else 200)

    # -- handshake revisions -----------------------------------------------------------
    def serve_legacy(self, caller: Any, message: dict[str, Any], headers: Mapping[str, str]) -> McpReply:
        if not self.handshake_versions():
            raise RpcFault(INVALID_REQUEST,
                           f"this server speaks {', '.join(self.versions())} only, with no initialize", 400,
                           {"supported": self.versions()})
        rid, method = message.get("id"), message["method"]
        if method == "initialize" and "id" in message:
            return self.initialize(rid, message)
        session = self.session_of(headers)
        version = self.check_version_header(headers.get(VERSION_HEADER), session)
        try:
            self.validate_request(version, message)
        except RpcFault as fault:
            return self.error_reply(rid, fault)
        if "id" not in message:
            if method == "notifications/initialized" and session is not None:
                session.initialized = True
            return self.notification_reply(method)
        if session is not None:
            session.requests += 1
        try:
            result = self.dispatch(caller, method, message.get("params") or {}, headers, version)
        except RpcFault as fault:
            return self.error_reply(rid, fault)
        return self.result_reply(rid, result)

    def negotiate(self, requested: Any) -> str:
        """The requested revision if the server speaks it, else the newest handshake
        revision it speaks (lifecycle, "Version Negotiation")."""
        handshake = self.handshake_versions()
        return requested if requested in handshake else max(handshake)

    def initialize(self, request_id: Any, message: dict[str, Any]) -> McpReply:
        params = message.get("params")
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        version = self.negotiate(requested)
        try:
            self.validate_request(version, message)
        except RpcFault as fault:
            return self.error_reply(request_id, fault)
        result = {"protocolVersion": version, "capabilities": self.capabilities(),
                  "serverInfo": self.host.mcp_server_info()}
        extra = {}
        if self.sessions_issued:
            sid = uuid.uuid4().hex
            self.sessions[sid] = Session(version)
            extra[SESSION_HEADER] = sid
        return self.result_reply(request_id, result, extra)

    def session_of(self, headers: Mapping[str, str]) -> Session | None:
        """The request's session: 400 without the id the server issued, 404 for one it
        does not know or ended (transports, "Session Management")."""
        if not self.sessions_issued:
            return None
        sid = headers.get(SESSION_HEADER)
        if not sid:
            raise RpcFault(INVALID_REQUEST, f"missing {SESSION_HEADER}: send initialize first", 400)
        session = self.sessions.get(sid)
        if (session is not None and self.session_requests is not None
                and session.requests >= self.session_requests):
            del self.sessions[sid]  # its time is up
            session = None
        if session is None:
            raise RpcFault(INVALID_REQUEST, "session not found", 404)
        return session

    def check_version_header(self, said: str | None, session: Session | None) -> str:
        """After initialize every request carries the negotiated version; an absent one
        means 2025-03-26, which this server does not speak, and an unsupported or
        other one is 400 Bad Request (transports, "Protocol Version Header")."""
        expected = session.version if session is not None else None
        if said is None:
            raise RpcFault(INVALID_REQUEST, f"missing {VERSION_HEADER} (taken as 2025-03-26, not supported)",
                           400)
        if said not in self.handshake_versions() or (expected is not None and said != expected):
            raise RpcFault(INVALID_REQUEST, f"unsupported {VERSION_HEADER} {said!r}", 400)
        return said

    def end_session(self, sid: str) -> McpReply:
        """DELETE with a session id ends that session."""
        if self.sessions.pop(sid, None) is None:
            return McpReply(404, None)
        return McpReply(200, None)

    # -- stateless revisions -----------------------------------------------------------
    def serve_modern(self, caller: Any, message: dict[str, Any], headers: Mapping[str, str]) -> McpReply:
        rid, method = message.get("id"), message["method"]
        try:
            version = self.check_meta(message)
            self.check_modern_version(version)
            self.check_headers(message, headers, version)
            self.validate_request(version, message)
            if "id" not in message:
                return self.notification_reply(method)
            result = self.dispatch(caller, method, message.get("params") or {}, headers, version)
        except RpcFault as fault:
            return self.error_reply(rid, fault)
        return self.result_reply(rid, result)

    def check_meta(self, message: dict[str, Any]) -> str:
        """The ``_meta`` fields every request requires (basic, "_meta"): -32602, 400."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        missing = [k for k in ("protocolVersion", "clientCapabilities")
                   if not isinstance(meta, dict) or f"{META_PREFIX}{k}" not in meta]
        if "id" in message and missing:
            raise RpcFault(INVALID_PARAMS,
                           f"Invalid params: _meta lacks {', '.join(META_PREFIX + k for k in missing)}", 400)
        version = meta.get(f"{META_PREFIX}protocolVersion") if isinstance(meta, dict) else None
        return str(version)

    def check_modern_version(self, version: str) -> None:
        """A version the server does not speak: 400 with UnsupportedProtocolVersionError."""
        if version not in self.stateless_versions():
            code = revision(max(self.stateless_versions())).error_code("UnsupportedProtocolVersionError")
            raise RpcFault(code or -32022, "Unsupported protocol version", 400,
                           {"supported": self.versions(), "requested": version})

    def check_headers(self, message: dict[str, Any], headers: Mapping[str, str], version: str) -> None:
        """The mirrored headers match the body (streamable-http, "Server Validation")."""
        mismatch = self.revision_of(version).error_code("HeaderMismatchError") or -32020
        given = message.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}

        def expect(header: str, value: Any) -> None:
            said = headers.get(header)
            if said is None:
                raise RpcFault(mismatch, f"Header mismatch: {header} is missing", 400)
            if decode_header_value(said) != (value if isinstance(value, str) else header_value(value)):
                raise RpcFault(mismatch, f"Header mismatch: {header} value {said!r} does not match the body",
                               400)

        expect(VERSION_HEADER, version)
        expect("Mcp-Method", message.get("method"))
        if message.get("method") in NAMED_HEADERS:
            expect("Mcp-Name", params.get("name", params.get("uri")))
        if message.get("method") == "tools/call":
            for path, name in header_params(self.host.mcp_input_schema(params.get("name"))).items():
                value: Any = params.get("arguments")
                for key in path:
                    value = value.get(key) if isinstance(value, dict) else None
                if value is not None:
                    expect(f"Mcp-Param-{name}", value)

    # -- methods -----------------------------------------------------------------------
    def dispatch(self, caller: Any, method: str, params: Any, headers: Mapping[str, str],
                 version: str) -> dict[str, Any]:
        modern = self.revision_of(version).stateless
        if method == "tools/list":
            tools, cursor = self.tools_page(params.get("cursor") if isinstance(params, dict) else None)
            result: dict[str, Any] = {"tools": tools}
            if cursor is not None:
                result["nextCursor"] = cursor
            if modern:
                result.update(ttlMs=0, cacheScope="private")
        elif method == "tools/call":
            result = self.call_tool(caller, params, headers)
        elif method.endswith("/list") and method.removesuffix("/list") in self.offered:
            result = self.offered_list(method.removesuffix("/list"))
            if modern:
                result.update(ttlMs=0, cacheScope="private")
        elif method == "ping" and not modern:
            result = {}
        elif method == "server/discover" and modern:
            result = {"supportedVersions": self.versions(), "capabilities": self.capabilities(), "ttlMs": 0,
                      "cacheScope": "private"}
        else:
            return self.unknown_method(method, modern)
        if modern:
            result["resultType"] = "complete"
            result["_meta"] = {**(result.get("_meta") or {}),
                               f"{META_PREFIX}serverInfo": self.host.mcp_server_info()}
        return result

    def call_tool(self, caller: Any, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        names = set(self.host.mcp_tool_names())
        if not isinstance(params, dict) or params.get("name") not in names:
            return self.unknown_tool(params.get("name") if isinstance(params, dict) else None)
        return self.tool_result(self.host.mcp_call_tool(caller, params, headers))

    def unknown_method(self, method: str, modern: bool) -> dict[str, Any]:
        raise RpcFault(METHOD_NOT_FOUND, f"Method not found: {method}", 404 if modern else 200)

    def unknown_tool(self, name: Any) -> dict[str, Any]:
        """An unknown tool is a protocol error (tools, "Error Handling")."""
        raise RpcFault(INVALID_PARAMS, f"Unknown tool: {name!r}", 200)

    def tool_result(self, result: dict[str, Any]) -> dict[str, Any]:
        return result

    def tools_page(self, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        tools = self.host.mcp_tools()
        if self.page_size is None:
            if cursor is not None:
                raise RpcFault(INVALID_PARAMS, f"Invalid params: unknown cursor {cursor!r}")
            return tools, None
        start = 0
        if cursor is not None:
            try:
                start = int(base64.urlsafe_b64decode(str(cursor).encode()).decode().removeprefix("page:"))
            except ValueError:
                raise RpcFault(INVALID_PARAMS, f"Invalid params: unknown cursor {cursor!r}") from None
        end = start + self.page_size
        nxt = base64.urlsafe_b64encode(f"page:{end}".encode()).decode() if end < len(tools) else None
        return tools[start:end], nxt


def to_response(reply: McpReply) -> Any:
    """The reply as a Starlette response."""
    from starlette.responses import JSONResponse, Response

    if reply.body is None:
        return Response(status_code=reply.status, headers=reply.headers)
    if reply.stream:
        text = ": the answer follows\n\n" + "data: " + json.dumps(reply.body) + "\n\n"
        return Response(text, status_code=reply.status, headers=reply.headers, media_type="text/event-stream")
    return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)
