"""Root causes: failures grouped by what the target did, so one bug reads as one
finding however many requirements it trips. The signature of a failed or blocked
requirement is its failure kind plus the answer that broke it: HTTP status, error
code, and the message or field the target blamed (ids and numbers blurred). A group
also names the request features its breaking requests have in common that no
request the target accepted carried (a UUID-string taskId, say): the likely trigger.
Its ``label`` says the same in words, from the kind's meaning (``failures.KINDS``) and
the answer itself, unblurred: what a person reads; ``signature`` is what dedups."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from conformance.failures import KINDS
from conformance.jsontext import parse_json

_BLUR = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{16,}\b|\d+", re.I)


def _blur(text: str) -> str:
    return _BLUR.sub("#", " ".join(text.split()))[:80]


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


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


def _shape(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json_type(value)
    if isinstance(value, str):
        return "UUID string" if _UUID.match(value) else "string"
    return json_type(value)


def json_type(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "null")


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


def in_common(failing: list[set[str]], accepted: set[str], most: int = 3) -> list[str]:
    """Features every failing request carries that no accepted request did, most
    specific (deepest) first."""
    if len(failing) < 2:
        return []
    found = set.intersection(*failing) - accepted
    return sorted(found, key=lambda f: (-f.count(".") - f.count("[]"), f))[:most]


def _breaking(verdict: Any) -> Any:
    return next((e for e in reversed(verdict.exchanges) if e.response is not None or e.error), None)


def signature(verdict: Any) -> str:
    """One line naming the cause of a failed or blocked verdict."""
    kind = verdict.failures[-1].kind if verdict.failures else verdict.cause or verdict.status
    last = _breaking(verdict)
    if last is None:
        return f"{kind}: {_blur(verdict.message)}"
    if last.response is None:
        return f"{kind}: no answer ({_blur(last.error)})"
    status, what = blamed(last.response)
    if kind == "wrong_status":  # the status is the cause, whatever the error was about
        return f"{kind}: answers with {status}"
    if what:  # the target said what it disliked: that answer is the cause, whichever check tripped on it
        return f"{status}, {what}"
    return f"{kind}: {status}"


# kinds whose finding is that something was served: the answer to name is a success
_SERVED = frozenset({"accepted_invalid", "auth_not_enforced", "state_changed", "not_found_expected"})
_RUNNER_NOTE = re.compile(r"\s*\((?:set by the runner|the default[^)]*)\)$")
ANSWER_LIMIT = 120  # characters of the target's own error message in a label


def kind_of(verdict: Any) -> str:
    """The failure kind a verdict's signature is built from (a blocked verdict's: its cause)."""
    return str(verdict.failures[-1].kind if verdict.failures else verdict.cause or verdict.status)


def meaning(kind: str) -> str:
    """The kind's one-line meaning from ``KINDS``, as the start of a sentence."""
    words = _RUNNER_NOTE.sub("", KINDS[kind]) if kind in KINDS else {
        "blocked": "a set-up step the requirement needs was refused"}.get(kind, f"the requirement {kind}")
    return words[:1].upper() + words[1:]


def _clip(text: str, limit: int = ANSWER_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def answered(response: dict[str, Any]) -> str:
    """"HTTP 401 with error -32009 'Authentication required'": a recorded answer in words."""
    status = f"HTTP {response.get('status')}"
    error = error_of(response)
    if error is None:
        return status
    code, message, _ = error
    said = " ".join(p for p in ("" if code in (None, "") else str(code), f"'{_clip(str(message))}'" if message else "") if p)
    return f"{status} with error {said}" if said else f"{status} with an error"


def label(verdict: Any) -> str:
    """A sentence naming what broke: the kind's meaning, then what the target answered."""
    kind = kind_of(verdict)
    head = meaning(kind)
    last = _breaking(verdict)
    if kind in _SERVED:  # the answer that shows it is the one that was served, not a later refusal
        last = next((e for e in reversed(verdict.exchanges) if succeeded(e)), last)
    if last is None:
        return f"{head}: {_clip(verdict.message)}" if verdict.message else head
    if last.response is None:
        why = f" ({_clip(str(last.error))})" if last.error else ""
        return f"{head}{why}" if kind == "no_answer" else f"{head}: the target sent no answer{why}"
    answer = answered(last.response)
    if " with " in answer:
        return f"{head}: the target answered {answer}"
    return f"{head} (the target answered {answer})"


def group_label(members: list[Any]) -> str:
    """The label of a group: its most common kind (failed members first, then blocked),
    told with the answer of the first member of that kind."""
    failed = [r for r in members if r.verdict.status == "failed"] or members
    kinds = Counter(kind_of(r.verdict) for r in failed)
    top = kinds.most_common(1)[0][0]
    return label(next(r.verdict for r in failed if kind_of(r.verdict) == top))


def group(results: list[Any]) -> list[dict[str, Any]]:
    """Failed and blocked requirements by signature, largest group first, each with
    the request features its members have in common (see ``in_common``)."""
    groups: dict[str, list[Any]] = {}
    for r in results:
        if r.verdict.status in ("failed", "blocked"):
            groups.setdefault(signature(r.verdict), []).append(r)
    accepted: set[str] = set()
    for r in results:
        accepted |= r.verdict.features or accepted_features(r.verdict.exchanges)
    out = []
    for sig, members in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        breaking = [_breaking(r.verdict) for r in members]
        failing = [request_features(e) for e in breaking if e is not None]
        out.append({"signature": sig, "label": group_label(members), "count": len(members),
                    "requirements": [r.requirement.id for r in members],
                    "request_in_common": in_common(failing, accepted)})
    return out
