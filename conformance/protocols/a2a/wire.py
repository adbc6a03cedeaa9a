"""A2A's JSON-RPC wire (section 9), built and read in one place for everyone who speaks it:
the a2a profile, Plaza's personal endpoint and Wever's A2A adapter, their clients, checks
and references. A request, a response and an error object as JSON-RPC 2.0 frames them
(section 9.1: "JSON-RPC 2.0 payloads"); what an answer carries read back (its ``result``,
its ``error``) and a Task's state (the proto's ``Task.status.state``). It imports nothing
of the kit, so a reference and a requirement module use the same lines."""

from __future__ import annotations

import uuid
from typing import Any

VERSION = "2.0"  # the JSON-RPC version every envelope names (section 9.1)
AUTO: Any = object()  # a request's default id: a fresh UUID


def request(method: str, params: Any, request_id: Any = AUTO) -> dict[str, Any]:
    """A JSON-RPC request for ``method``: ``request_id`` as given, a fresh UUID by default, or
    none at all with ``None`` (a notification, which A2A's methods never are)."""
    body: dict[str, Any] = {"jsonrpc": VERSION, "method": method, "params": params}
    if request_id is not None:
        body["id"] = str(uuid.uuid4()) if request_id is AUTO else request_id
    return body


def error_object(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error object (section 9.5): its code and message, ``data`` where there is some."""
    out: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        out["data"] = data
    return out


def response(request_id: Any, result: Any = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC response echoing the request's id: ``error`` where one is given, else ``result``."""
    if error is not None:
        return {"jsonrpc": VERSION, "id": request_id, "error": error}
    return {"jsonrpc": VERSION, "id": request_id, "result": result}


def error_in(body: Any) -> dict[str, Any] | None:
    """The ``error`` member of an answer's body, or None (no body, or a result)."""
    found = body.get("error") if isinstance(body, dict) else None
    return found if isinstance(found, dict) else None


def state(task: Any) -> Any:
    """A Task's state (``status.state``), or None where the task names none."""
    status = task.get("status") if isinstance(task, dict) else None
    return status.get("state") if isinstance(status, dict) else None
