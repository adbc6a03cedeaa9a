"""What changed between two runs: requirements that started or stopped failing.

``conformance diff OLD NEW`` compares two ``summary.json`` files of the same profile
(two summaries of different profiles are refused: exit 2). A requirement in both runs
*started failing* when it fails now (``failed`` or ``expected_failure``) and did not
before; it *stopped failing* the other way round.

A regression, which makes the command exit 1, is a requirement of both runs whose status
is ``failed`` now and was anything else before: passed, untested, blocked, skipped, or
``expected_failure`` (a failure the baseline covered then and no longer covers, say a new
kind of failure of the same requirement). This is the failure a run's own gate would
count. A requirement newly ``expected_failure`` is not a regression: a baseline entry
accepted it, as the gate does. A requirement only the new run has is listed as new with
its status, and not counted: it was not checked before, so nothing about it changed.

The spec's sha256 or the binding differing between the runs is worth a warning (the
same requirement may then mean something else) but the diff is still made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.yamltext import read_user_json

FAILING = ("failed", "expected_failure")


def read_summary(path: Path) -> dict[str, Any]:
    """A run's summary.json; ValueError with a one-line reason naming the file when it
    cannot be read, is not UTF-8 text (a binary file), not JSON, or not of a summary's shape."""
    data = read_user_json(path, "summary", "a conformance summary.json")
    problem = _shape_problem(data)
    if problem:
        raise ValueError(f"summary {path} is not a conformance summary.json: {problem}")
    return data


def _shape_problem(data: Any) -> str:
    """What keeps ``data`` from being a summary the diff and the baseline can read, or ""."""
    if not isinstance(data, dict):
        return "a JSON object is expected"
    missing = [key for key in ("profile", "requirements") if key not in data]
    if missing:
        return f"missing key{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    if not isinstance(data["profile"], str):
        return "profile must be text"
    if not isinstance(data["requirements"], list):
        return "requirements must be a list"
    for index, entry in enumerate(data["requirements"]):
        if not isinstance(entry, dict):
            return f"requirements[{index}] must be an object"
        for key in ("id", "level", "status"):
            if not isinstance(entry.get(key), str):
                return f"requirements[{index}].{key} must be text"
    return ""


def comparable(old: dict[str, Any], new: dict[str, Any], old_name: str = "OLD", new_name: str = "NEW") -> str:
    """Check the two summaries can be compared: ValueError when they are of different
    profiles; a one-line warning (or "") when the spec or the binding differs."""
    if old["profile"] != new["profile"]:
        raise ValueError(f"{old_name} is a summary of profile {old['profile']!r} and {new_name} of profile "
                         f"{new['profile']!r}: diff compares two runs of the same profile")
    notes = []
    old_sha, new_sha = _spec_sha(old), _spec_sha(new)
    if old_sha != new_sha:
        notes.append(f"the spec differs (sha256 {(old_sha or 'unknown')[:12]} in {old_name}, "
                     f"{(new_sha or 'unknown')[:12]} in {new_name})")
    if old.get("binding") != new.get("binding"):
        notes.append(f"the binding differs ({old.get('binding') or 'default'} in {old_name}, "
                     f"{new.get('binding') or 'default'} in {new_name})")
    return f"warning: {'; '.join(notes)}: a requirement may not mean the same in both runs" if notes else ""


def _spec_sha(summary: dict[str, Any]) -> str | None:
    spec = summary.get("spec")
    return spec.get("sha256") if isinstance(spec, dict) else None


def diff_summaries(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Requirements whose failing-ness changed, plus ones that appeared or disappeared, and
    the regressions among them (``failed`` now, not before; see the module's docstring)."""
    before = {r["id"]: r for r in old["requirements"]}
    after = {r["id"]: r for r in new["requirements"]}
    started, stopped, regressions = [], [], []
    for rid, now in after.items():
        was = before.get(rid)
        if was is None:
            continue
        item = {"id": rid, "level": now["level"], "was": was["status"], "now": now["status"],
                "message": now.get("message") or ""}
        if now["status"] in FAILING and was["status"] not in FAILING:
            started.append(item)
        elif was["status"] in FAILING and now["status"] not in FAILING:
            stopped.append({"id": rid, "level": now["level"], "now": now["status"]})
        if now["status"] == "failed" and was["status"] != "failed":
            regressions.append(item)
    return {
        "started_failing": started,
        "stopped_failing": stopped,
        "added": [{"id": rid, "status": after[rid]["status"]} for rid in after if rid not in before],
        "removed": [{"id": rid} for rid in before if rid not in after],
        "regressions": regressions,
    }


def render(changes: dict[str, list[dict[str, Any]]], old: dict[str, Any], new: dict[str, Any]) -> str:
    """Markdown for release notes and CI comments."""
    lines = [f"### conformance {new.get('profile')}: {old.get('grade', old.get('verdict'))} -> "
             f"{new.get('grade', new.get('verdict'))}"]
    uncovered = [r for r in changes.get("regressions", []) if r["was"] == "expected_failure"]
    sections = (("Started failing", changes["started_failing"]),
                ("No longer covered by the baseline", uncovered),
                ("Stopped failing", changes["stopped_failing"]), ("New requirements", changes["added"]),
                ("Removed requirements", changes["removed"]))
    for title, items in sections:
        if items:
            lines += ["", f"**{title}**", ""]
            for item in items:
                lines.append(f"- `{item['id']}`{_detail(item, title)}{_note(item)}")
    if not any(items for _, items in sections):
        lines += ["", "No requirement changed."]
    regressions = changes.get("regressions", [])
    if regressions:
        lines += ["", f"{len(regressions)} regression(s): {', '.join(r['id'] for r in regressions)}"]
    return "\n".join(lines)


def _detail(item: dict[str, Any], title: str) -> str:
    words = [item["level"]] if "level" in item else []
    if title == "Started failing" and item.get("now") == "expected_failure":
        words.append("expected failure, covered by the baseline")
    elif title == "Stopped failing" and item.get("now") != "passed":
        words.append(f"now {item['now']}")
    elif "status" in item:
        words.append(item["status"])
    return f" ({', '.join(words)})" if words else ""


def _note(item: dict[str, Any]) -> str:
    return f": {item['message'][:160]}" if item.get("message") else ""
