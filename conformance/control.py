"""The control interface every reference serves (POST /_control/<action>, DESIGN.md):
what the wire cannot do (reset the world, move a clock, seed actors, take a snapshot).
A reference names each action as a method ``control_<action>(args) -> Response``; this
module parses the request and dispatches, the same way for every protocol."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response


async def serve_control(reference: Any, request: Request, enabled: bool, lock: Any = None) -> Response:
    """Run ``reference.control_<action>`` with the JSON object of the body (under ``lock``);
    404 when control is off or the action unknown, 400 for a body that is no JSON object."""
    if not enabled:
        return JSONResponse({"error": "Not Found"}, status_code=404)
    handler = getattr(reference, f"control_{request.path_params['action']}", None)
    if handler is None:
        return JSONResponse({"error": "unknown control action"}, status_code=404)
    raw = await request.body()
    try:
        args = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):
        return JSONResponse({"error": "body is not JSON"}, status_code=400)
    if not isinstance(args, dict):
        return JSONResponse({"error": "body must be a JSON object"}, status_code=400)
    with lock if lock is not None else contextlib.nullcontext():
        response: Response = handler(args)
        return response
