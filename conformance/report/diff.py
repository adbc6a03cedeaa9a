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

Runs over several bindings compare row by row: a requirement over one binding against the
same requirement over the same binding (each summary row names its binding; a summary
written before rows did gives its top-level ``binding``). Two runs over one binding each
compare by requirement, whatever the binding. ``binding`` narrows both to one binding.

The spec's sha256 or the bindings differing between the runs is worth a warning (the
same requirement may then mean something else) but the diff is still made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.report.words import clipped
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


def bindings_of(summary: dict[str, Any]) -> list[str]:
    """The bindings a summary's rows were run over, in order."""
    found = [str(r.get("binding", summary.get("binding"))) for r in summary["requirements"]
             if r.get("binding", summary.get("binding"))]
    return list(dict.fromkeys([*[str(b) for b in summary.get("bindings") or []], *found]))


def comparable(old: dict[str, Any], new: dict[str, Any], old_name: str = "OLD", new_name: str = "NEW",
               binding: str | None = None) -> str:
    """Check the two summaries can be compared: ValueError when they are of different
    profiles, or neither ran ``binding``; a one-line warning (or "") when the spec or the
    bindings differ."""
    if old["profile"] != new["profile"]:
        raise ValueError(f"{old_name} is a summary of profile {old['profile']!r} and {new_name} of profile "
                         f"{new['profile']!r}: diff compares two runs of the same profile")
    before, after = bindings_of(old), bindings_of(new)
    if binding is not None and binding not in before + after:
        raise ValueError(f"--binding {binding}: neither run spoke it ({old_name}: "
                         f"{', '.join(before) or 'none'}; {new_name}: {', '.join(after) or 'none'})")
    notes = []
    old_sha, new_sha = _spec_sha(old), _spec_sha(new)
    if old_sha != new_sha:
        notes.append(f"the spec differs (sha256 {(old_sha or 'unknown')[:12]} in {old_name}, "
                     f"{(new_sha or 'unknown')[:12]} in {new_name})")
    if binding is None and before != after:
        what = "binding" if len(before) <= 1 and len(after) <= 1 else "bindings"
        verb = "differs" if what == "binding" else "differ"
        notes.append(f"the {what} {verb} ({', '.join(before) or 'default'} in {old_name}, "
                     f"{', '.join(after) or 'default'} in {new_name})")
    return f"warning: {'; '.join(notes)}: a requirement may not mean the same in both runs" if notes else ""


def rows_by_key(summary: dict[str, Any], by_binding: bool,
                binding: str | None = None) -> dict[tuple[str, str | None], dict[str, Any]]:
    """The summary's rows by (id, binding), or by (id, None) where ``by_binding`` is off;
    only those over ``binding`` when one is given."""
    out = {}
    for row in summary["requirements"]:
        over = row.get("binding", summary.get("binding"))
        if binding is not None and over != binding:
            continue
        out[(row["id"], over if by_binding else None)] = row
    return out


def _spec_sha(summary: dict[str, Any]) -> str | None:
    spec = summary.get("spec")
    return spec.get("sha256") if isinstance(spec, dict) else None


def diff_summaries(old: dict[str, Any], new: dict[str, Any],
                   binding: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Rows whose failing-ness changed, plus ones that appeared or disappeared, and the
    regressions among them (``failed`` now, not before; see the module's docstring)."""
    by_binding = binding is None and (len(bindings_of(old)) > 1 or len(bindings_of(new)) > 1)
    before = rows_by_key(old, by_binding, binding)
    after = rows_by_key(new, by_binding, binding)
    started, stopped, regressions = [], [], []

    def named(key: tuple[str, str | None]) -> dict[str, Any]:
        return {"id": key[0], **({"binding": key[1]} if key[1] is not None else {})}

    for key, now in after.items():
        was = before.get(key)
        if was is None:
            continue
        item = {**named(key), "level": now["level"], "was": was["status"], "now": now["status"],
                "message": now.get("message") or ""}
        if now["status"] in FAILING and was["status"] not in FAILING:
            started.append(item)
        elif was["status"] in FAILING and now["status"] not in FAILING:
            stopped.append({**named(key), "level": now["level"], "now": now["status"]})
        if now["status"] == "failed" and was["status"] != "failed":
            regressions.append(item)
    return {
        "started_failing": started,
        "stopped_failing": stopped,
        "added": [{**named(key), "status": after[key]["status"]} for key in after if key not in before],
        "removed": [named(key) for key in before if key not in after],
        "regressions": regressions,
    }


def label(item: dict[str, Any]) -> str:
    """A row's name: ``ID`` or, compared binding by binding, ``ID[binding]``."""
    return f"{item['id']}[{item['binding']}]" if item.get("binding") else str(item["id"])


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
                lines.append(f"- `{label(item)}`{_detail(item, title)}{_note(item)}")
    if not any(items for _, items in sections):
        lines += ["", "No requirement changed."]
    regressions = changes.get("regressions", [])
    if regressions:
        lines += ["", f"{len(regressions)} regression(s): {', '.join(label(r) for r in regressions)}"]
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
    return f": {clipped(item['message'], 160)}" if item.get("message") else ""
