"""Named operations over HTTP or MCP: one call shape, ``call(name, input)``, whatever
the binding. Errors carry a code string, as ``{"error": {"code", "message"}}``."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from conformance.transport.http import HttpTransport, Reply


@dataclass
class ActionReply:
    """One answer: a result, or an error code, as the binding delivered it."""

    binding: str
    http: Reply
    ok: bool
    result: Any = None
    error_code: str | None = None
    error_message: str = ""
    flagged: bool = True  # the binding marked the error as one (HTTP status >= 400; MCP isError)

    @property
    def status(self) -> int:
        return self.http.status

    def describe(self) -> str:
        if self.ok:
            return f"{self.binding}: HTTP {self.status}, result {json.dumps(self.result)[:160]}"
        if self.error_code:
            return f"{self.binding}: HTTP {self.status}, error {self.error_code} {self.error_message[:100]!r}"
        return f"{self.binding}: HTTP {self.status}, body {self.http.text[:160]!r}"


def _error_of(body: Any) -> tuple[str | None, str]:
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and isinstance(err.get("code"), str):
        return err["code"], str(err.get("message", ""))
    return None, ""


class HttpActions:
    """``POST {path}`` with ``{verb}`` filled in; 200 means a result."""

    name = "http"
    statuses = True  # HTTP statuses carry meaning in this binding

    def __init__(self, http: HttpTransport, path: str, headers: dict[str, str] | None = None) -> None:
        self.http = http
        self.path = path
        self.headers = headers or {}

    def call(self, verb: str, payload: Any, raw: str | None = None) -> ActionReply:
        body = raw if raw is not None else json.dumps(payload)
        reply = self.http.request("POST", self.path.replace("{verb}", verb), headers={"Content-Type": "application/json", **self.headers}, content=body)
        data = reply.json()
        if reply.status == 200 and not (isinstance(data, dict) and _error_of(data)[0] and set(data) == {"error"}):
            return ActionReply(self.name, reply, True, data)
        code, message = _error_of(data)
        return ActionReply(self.name, reply, False, None, code, message, flagged=reply.status >= 400)


class McpTools:
    """MCP over JSON-RPC at ``path``: tools/list and tools/call; a verb error is an
    ``isError`` result whose structuredContent is ``{"error": {"code", "message"}}``."""

    name = "mcp"
    statuses = False

    def __init__(self, http: HttpTransport, path: str, headers: dict[str, str] | None = None) -> None:
        self.http = http
        self.path = path
        self.headers = headers or {}
        self._ids = itertools.count(1)
        self._initialized = False

    def rpc(self, method: str, params: Any) -> tuple[Reply, Any]:
        envelope = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **self.headers}
        reply = self.http.request("POST", self.path, headers=headers, content=json.dumps(envelope))
        return reply, reply.json()

    def initialize(self) -> Any:
        reply, body = self.rpc("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "conformance", "version": "1"},
        })
        self._initialized = True
        headers = {"Content-Type": "application/json", **self.headers}
        self.http.request("POST", self.path, headers=headers,
                          content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return body

    def list_tools(self) -> list[dict[str, Any]]:
        if not self._initialized:
            self.initialize()
        _, body = self.rpc("tools/list", {})
        result = body.get("result") if isinstance(body, dict) else None
        return list((result or {}).get("tools") or [])

    def call(self, verb: str, payload: Any, raw: str | None = None) -> ActionReply:
        if not self._initialized:
            self.initialize()
        arguments = json.loads(raw) if raw is not None else payload
        reply, body = self.rpc("tools/call", {"name": verb, "arguments": arguments})
        result = body.get("result") if isinstance(body, dict) else None
        if not isinstance(result, dict):
            err = body.get("error") if isinstance(body, dict) else None
            return ActionReply(self.name, reply, False, None, None, json.dumps(err)[:200] if err else "")
        content = result.get("structuredContent")
        if result.get("isError"):
            code, message = _error_of(content)
            return ActionReply(self.name, reply, False, None, code, message)
        code, message = _error_of(content)
        if code and isinstance(content, dict) and set(content) == {"error"}:
            return ActionReply(self.name, reply, False, None, code, message, flagged=False)
        return ActionReply(self.name, reply, True, content)


BINDINGS: dict[str, type[HttpActions] | type[McpTools]] = {"http": HttpActions, "mcp": McpTools}
