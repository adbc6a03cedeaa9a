"""Baselines: the failures an implementation is known to have, so a CI gate fails only
on regressions. A listed failure is an expected failure; an unlisted one fails the
run; a listed requirement that now passes fails the run too, naming the entry to
delete, so the list cannot go stale.

File format (YAML), one entry per known failure::

    - id: BINDU-CANCEL-TERMINAL          # or "ID:pattern", pattern matched against the failure message
      reason: cancel of a finished task is accepted (#123)
      issue: https://example.org/issues/123   # optional
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from conformance.targets import ConfigError, read_yaml


@dataclass(frozen=True)
class Entry:
    id: str
    pattern: str | None
    reason: str
    issue: str | None = None

    @property
    def label(self) -> str:
        return f"{self.id}:{self.pattern}" if self.pattern else self.id

    def covers(self, message: str) -> bool:
        return self.pattern is None or fnmatchcase(message, self.pattern) or self.pattern in message

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.label, "reason": self.reason, **({"issue": self.issue} if self.issue else {})}


def load_baseline(path: str | Path, known_ids: set[str]) -> list[Entry]:
    path = Path(path)
    data = read_yaml(path, "baseline")
    if data is None:
        return []
    if not isinstance(data, list):
        raise ConfigError(f"baseline {path} must be a list of entries with id and reason")
    entries = []
    for index, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item.get("reason"):
            raise ConfigError(f"baseline {path} entry {index + 1} needs an id and a reason")
        rid, _, pattern = item["id"].partition(":")
        if rid not in known_ids:
            raise ConfigError(f"baseline {path} entry {index + 1} names unknown requirement {rid!r}")
        entries.append(Entry(rid, pattern or None, str(item["reason"]), item.get("issue")))
    return entries


class Baseline:
    """Judges each verdict against the entries; remembers stale ones."""

    def __init__(self, entries: list[Entry], source: str) -> None:
        self.entries = entries
        self.source = source
        self.stale: list[str] = []

    def judge(self, requirement_id: str, status: str, message: str) -> tuple[str, Entry | None, str]:
        """(new status, covering entry, stale message) for one requirement's verdict."""
        mine = [e for e in self.entries if e.id == requirement_id]
        if not mine:
            return status, None, ""
        if status == "failed":
            for entry in mine:
                if entry.covers(message):
                    return "expected_failure", entry, ""
            return status, None, ""
        if status == "passed":
            stale = "; ".join(
                f"baseline entry {e.label!r} is stale: {requirement_id} now passes; delete it from {self.source}" for e in mine
            )
            self.stale.append(stale)
            return status, None, stale
        return status, None, ""


def baseline_from_summary(summary: dict[str, Any]) -> str:
    """A starting baseline: every failure of a run, with its message as the reason."""
    entries = [
        {"id": r["id"], "reason": (r.get("message") or "known failure")[:200]}
        for r in summary.get("requirements", [])
        if r.get("status") in ("failed", "expected_failure")
    ]
    header = (f"# Known failures of {summary.get('profile')} against {summary.get('target')} "
              f"({summary.get('started_at')}). Give each a real reason and an issue URL.\n")
    return header + (yaml.safe_dump(entries, sort_keys=False, allow_unicode=True) if entries else "[]\n")
