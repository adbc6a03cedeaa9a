"""What changed between two runs: requirements that started or stopped failing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FAILING = ("failed", "expected_failure")


def read_summary(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read summary {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(data, dict) or "requirements" not in data:
        raise ValueError(f"{path} is not a conformance summary.json")
    return data


def diff_summaries(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Requirements whose failing-ness changed, plus ones that appeared or disappeared."""
    before = {r["id"]: r for r in old["requirements"]}
    after = {r["id"]: r for r in new["requirements"]}
    started, stopped = [], []
    for rid, now in after.items():
        was = before.get(rid)
        if was is None:
            continue
        if now["status"] in FAILING and was["status"] not in FAILING:
            started.append({"id": rid, "level": now["level"], "was": was["status"], "message": now.get("message", "")})
        elif was["status"] in FAILING and now["status"] not in FAILING:
            stopped.append({"id": rid, "level": now["level"], "now": now["status"]})
    return {
        "started_failing": started,
        "stopped_failing": stopped,
        "added": [{"id": rid, "status": after[rid]["status"]} for rid in after if rid not in before],
        "removed": [{"id": rid} for rid in before if rid not in after],
    }


def render(changes: dict[str, list[dict[str, Any]]], old: dict[str, Any], new: dict[str, Any]) -> str:
    """Markdown for release notes and CI comments."""
    lines = [f"### conformance {new.get('profile')}: {old.get('grade', old.get('verdict'))} -> {new.get('grade', new.get('verdict'))}"]
    sections = (("Started failing", "started_failing"), ("Stopped failing", "stopped_failing"),
                ("New requirements", "added"), ("Removed requirements", "removed"))
    for title, key in sections:
        if changes[key]:
            lines += ["", f"**{title}**", ""]
            for item in changes[key]:
                detail = f" ({item['level']})" if "level" in item else ""
                note = f": {item['message'][:160]}" if item.get("message") else ""
                lines.append(f"- `{item['id']}`{detail}{note}")
    if not any(changes.values()):
        lines += ["", "No requirement changed."]
    return "\n".join(lines)
