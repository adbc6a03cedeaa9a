"""A hand-written MCP session for reference tests that post raw JSON-RPC through a
Starlette TestClient: the handshake once, then the headers every later request of a
handshake revision carries (the strict server refuses a request without them)."""

from __future__ import annotations

from typing import Any

INIT = {"capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}}


class RawMcp:
    def __init__(self, client: Any, path: str = "/mcp", version: str = "2025-06-18") -> None:
        self.client, self.path, self.version = client, path, version
        self.sessions: dict[str, tuple[str | None, str]] = {}  # auth header -> (session id, agreed version)
        self.ids = 0

    def start(self, auth: dict[str, str], version: str | None = None) -> Any:
        self.ids += 1
        reply = self.client.post(self.path, headers=auth,
                                 json={"jsonrpc": "2.0", "id": self.ids, "method": "initialize",
                                       "params": {"protocolVersion": version or self.version, **INIT}})
        agreed = reply.json()["result"]["protocolVersion"]
        self.sessions[auth.get("Authorization", "")] = (reply.headers.get("mcp-session-id"), agreed)
        note = self.client.post(self.path, headers={**auth, **self.headers(auth)},
                                json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert note.status_code == 202, note.text
        return reply

    def headers(self, auth: dict[str, str]) -> dict[str, str]:
        if auth.get("Authorization", "") not in self.sessions:
            self.start(auth)
        session, agreed = self.sessions[auth.get("Authorization", "")]
        return {"MCP-Protocol-Version": agreed, **({"Mcp-Session-Id": session} if session else {})}

    def post(self, message: dict[str, Any], auth: dict[str, str],
             headers: dict[str, str] | None = None) -> Any:
        return self.client.post(self.path, json=message,
                                headers={**auth, **self.headers(auth), **(headers or {})})
