"""What recorded exchanges show, read once when a verdict is made: the answer that broke
a requirement (its status, error code and message), the request features the target
accepted, and the root cause of a failed or blocked verdict. The runner calls this; the
reports read only what it wrote (``Verdict.root``), never a body.

The root cause's ``key`` is the failure kind plus the answer that broke it: HTTP status,
error code, and the message or field the target blamed (ids and numbers blurred), so one
bug reads as one finding however many requirements it trips. Its ``answer`` says the same
in words, unblurred, for a person; ``trigger`` lists what the breaking request carried
(each JSON field with the shape of its value), which the report compares with what the
target accepted elsewhere."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from conformance.jsontext import parse_json

_BLUR = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{16,}\b|\d+",
                   re.I)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
# kinds whose finding is that something was served: the answer to name is a success
SERVED = frozenset({"accepted_invalid", "auth_not_enforced", "state_changed", "not_found_expected"})
ANSWER_LIMIT = 120  # characters of the target's own error message in an answer told in words


@dataclass
class Root:
    """The root cause of a failed or blocked verdict: what report groups by (``key``), the
    kind it is of, the target's answer in words, and the breaking request's features."""

    key: str
    kind: str
    answer: str = ""  # "HTTP 401 with error -32009 'Authentication required'", or "" with no answer
    no_answer: str = ""  # the transport's reason when no answer came
    trigger: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Root | None:
        return cls(**data) if isinstance(data, dict) else None


def _blur(text: str) -> str:
    return _BLUR.sub("#", " ".join(text.split()))[:80]


def _clip(text: str, limit: int = ANSWER_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def error_of(response: dict[str, Any]) -> tuple[Any, Any, bool] | None:
    """(code, message, whether it is an error object) of the error member a recorded
    response carries (``{"error": {code, message}}``, or ``{"error": "text", "code": ...}``),
    or None when it carries none."""
    body, _ = parse_json(response.get("body") or "")
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return err.get("code"), err.get("message", ""), True
    if isinstance(err, str):
        return body.get("code", ""), err, False
    return None


def blamed(response: dict[str, Any] | None) -> tuple[str, str]:
    """(status, what the answer blamed: error code and message, blurred) of a recorded response."""
    if not response:
        return "no answer", ""
    status = f"HTTP {response.get('status')}"
    error = error_of(response)
    if error is None:
        return status, ""
    code, message, enveloped = error
    return status, f"{'error ' if enveloped else ''}{code} {_blur(str(message))}".strip()


def answered(response: dict[str, Any]) -> str:
    """"HTTP 401 with error -32009 'Authentication required'": a recorded answer in words."""
    status = f"HTTP {response.get('status')}"
    error = error_of(response)
    if error is None:
        return status
    code, message, _ = error
    said = " ".join(p for p in ("" if code in (None, "") else str(code),
                                f"'{_clip(str(message))}'" if message else "") if p)
    return f"{status} with error {said}" if said else f"{status} with an error"


def json_type(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), "null")


def _shape(value: Any) -> str:
    if isinstance(value, str):
        return "UUID string" if _UUID.match(value) else "string"
    return json_type(value)


def _leaves(value: Any, path: str, out: set[str]) -> None:
    if isinstance(value, dict):
        out.add(f"{path or '(body)'} as an object")
        for key, item in value.items():
            _leaves(item, f"{path}.{key}" if path else str(key), out)
    elif isinstance(value, list):
        out.add(f"{path or '(body)'} as an array")
        for item in value[:8]:
            _leaves(item, f"{path}[]", out)
    else:
        out.add(f"{path or '(body)'} as {_shape(value)}")


def request_features(exchange: Any) -> set[str]:
    """What one request carried: each JSON field with the shape of its value, scoped
    by the operation ("message/send: params.message.taskId as UUID string")."""
    req = exchange.request
    body, why = parse_json(req.get("body") or "")
    scope = f"{req.get('method')} {str(req.get('url', '')).split('?')[0]}"
    if isinstance(body, dict) and isinstance(body.get("method"), str):
        scope = body["method"]
    out: set[str] = set()
    if not why and isinstance(body, (dict, list)):
        _leaves(body, "", out)
    return {f"{scope}: {f}" for f in out} | {scope}


def succeeded(exchange: Any) -> bool:
    """Answered 2xx without an error member: nothing in its request was refused."""
    response = exchange.response
    if not response or not 200 <= int(response.get("status") or 0) < 300:
        return False
    body, _ = parse_json(response.get("body") or "")
    return not (isinstance(body, dict) and "error" in body)


def accepted_features(exchanges: list[Any]) -> set[str]:
    """Features of requests the target accepted: none of them alone is a cause."""
    out: set[str] = set()
    for exchange in exchanges:
        if succeeded(exchange):
            out |= request_features(exchange)
    return out


def answer_of(response: dict[str, Any] | None) -> tuple[int | None, Any]:
    """(HTTP status, error code or None) of a recorded response: a failure's actual answer."""
    if not response:
        return None, None
    error = error_of(response)
    status = response.get("status")
    return (status if isinstance(status, int) else None), (error[0] if error else None)


def breaking(exchanges: list[Any]) -> Any:
    """The last exchange that got an answer or a transport error: the one that broke it."""
    return next((e for e in reversed(exchanges) if e.response is not None or e.error), None)


def root_of(kind: str, message: str, exchanges: list[Any]) -> Root:
    """The root cause of a verdict whose last failure (or blocking cause) is ``kind``."""
    last = breaking(exchanges)
    if last is None:
        return Root(f"{kind}: {_blur(message)}", kind)
    trigger = sorted(request_features(last))
    if last.response is None:
        return Root(f"{kind}: no answer ({_blur(last.error)})", kind, no_answer=str(last.error or ""),
                    trigger=trigger)
    status, what = blamed(last.response)
    if kind == "wrong_status":  # the status is the cause, whatever the error was about
        key = f"{kind}: answers with {status}"
    elif what:  # the target said what it disliked: that answer is the cause, whichever check tripped on it
        key = f"{status}, {what}"
    else:
        key = f"{kind}: {status}"
    shown = last
    if kind in SERVED:  # the answer that shows it is the one that was served, not a later refusal
        shown = next((e for e in reversed(exchanges) if succeeded(e)), last)
    return Root(key, kind, answer=answered(shown.response or {}), trigger=trigger)
