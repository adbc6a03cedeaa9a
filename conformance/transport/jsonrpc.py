"""JSON-RPC 2.0 over HTTP POST, on top of HttpTransport."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.transport.http import HttpTransport, Reply, parse_json


@dataclass
class RpcReply:
    """One JSON-RPC answer: the HTTP reply plus the parsed envelope (None if not JSON)."""

    http: Reply
    envelope: Any

    @property
    def status(self) -> int:
        return self.http.status

    @property
    def result(self) -> Any:
        return self.envelope.get("result") if isinstance(self.envelope, dict) else None

    @property
    def error(self) -> dict[str, Any] | None:
        err = self.envelope.get("error") if isinstance(self.envelope, dict) else None
        return err if isinstance(err, dict) else None

    @property
    def error_code(self) -> int | None:
        err = self.error
        return err.get("code") if err else None

    @property
    def ok(self) -> bool:
        return isinstance(self.envelope, dict) and "result" in self.envelope and "error" not in self.envelope

    def describe(self) -> str:
        """A short one-line account for failure messages."""
        if self.error is not None:
            return f"HTTP {self.status}, error {self.error.get('code')} {self.error.get('message')!r}"
        if self.ok:
            return f"HTTP {self.status}, result"
        return f"HTTP {self.status}, body {self.http.text[:120]!r}"


class JsonRpcClient:
    def __init__(self, http: HttpTransport, path: str = "/") -> None:
        self.http = http
        self.path = path
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        return next(self._ids)

    def call(
        self,
        method: str,
        params: Any = {},  # noqa: B006 - never mutated; None is sent as an explicit null
        *,
        headers: Mapping[str, str] | None = None,
        request_id: Any = "auto",
        omit_params: bool = False,
    ) -> RpcReply:
        envelope: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        envelope["id"] = self.next_id() if request_id == "auto" else request_id
        if not omit_params:
            envelope["params"] = params
        return self.send_raw(json.dumps(envelope), headers=headers)

    def send_raw(self, body: bytes | str, *, headers: Mapping[str, str] | None = None) -> RpcReply:
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        reply = self.http.request("POST", self.path, headers=hdrs, content=body)
        return RpcReply(reply, first_event(reply) if is_event_stream(reply) else reply.json())


def is_event_stream(reply: Reply) -> bool:
    return reply.headers.get("content-type", "").startswith("text/event-stream")


def stream_events(reply: Reply) -> list[Any]:
    """The JSON payloads of a server-sent-events answer (``data:`` lines)."""
    events = []
    for line in reply.text.splitlines():
        if line.startswith("data:"):
            events.append(parse_json(line[5:].strip())[0])
    return events


def first_event(reply: Reply) -> Any:
    """A streamed answer is judged by its first event's envelope."""
    events = stream_events(reply)
    return events[0] if events else None
