"""Root causes: failures grouped by what the target did, so one bug reads as one
finding however many requirements it trips. The signature of a failed or blocked
requirement is its failure kind plus the answer that broke it: HTTP status, error
code, and the message or field the target blamed (ids and numbers blurred)."""

from __future__ import annotations

import re
from typing import Any

from conformance.transport.http import parse_json

_BLUR = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{16,}\b|\d+", re.I)


def _blur(text: str) -> str:
    return _BLUR.sub("#", " ".join(text.split()))[:80]


def blamed(response: dict[str, Any] | None) -> tuple[str, str]:
    """(status, what the answer blamed: error code and message) of a recorded response."""
    if not response:
        return "no answer", ""
    status = f"HTTP {response.get('status')}"
    body, _ = parse_json(response.get("body") or "")
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return status, f"error {err.get('code')} {_blur(str(err.get('message', '')))}".strip()
    if isinstance(err, str):
        return status, f"{body.get('code', '')} {_blur(err)}".strip()
    return status, ""


def signature(verdict: Any) -> str:
    """One line naming the cause of a failed or blocked verdict."""
    kind = verdict.failures[-1].kind if verdict.failures else verdict.cause or verdict.status
    last = next((e for e in reversed(verdict.exchanges) if e.response is not None or e.error), None)
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


def group(results: list[Any]) -> list[dict[str, Any]]:
    """Failed and blocked requirements by signature, largest group first."""
    groups: dict[str, list[str]] = {}
    for r in results:
        if r.verdict.status in ("failed", "blocked"):
            groups.setdefault(signature(r.verdict), []).append(r.requirement.id)
    return [{"signature": sig, "count": len(ids), "requirements": ids}
            for sig, ids in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))]
