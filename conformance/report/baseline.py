"""Baselines: the failures an implementation is known to have, so a CI gate fails only
on regressions. A listed failure is an expected failure; an unlisted one fails the
run; a listed requirement that now passes fails the run too, naming the entry to
delete, so the list cannot go stale.

File format (YAML), one entry per known failure::

    - id: BINDU-CANCEL-TERMINAL          # or "ID:pattern", pattern matched against the failure message
      reason: cancel of a finished task is accepted (#123)
      issue: https://example.org/issues/123   # optional
      kind: state_changed                # optional: covers only failures of this kind
      subcheck: tasks/cancel             # optional: covers only failures of this sub-check
      binding: jsonrpc                   # optional: covers only the requirement over this binding

A failed requirement is an expected failure when every one of its failures is
covered by an entry of its own; one uncovered failure (another kind, another
sub-check) fails the run. An entry without kind, sub-check and pattern covers them all;
one without binding covers the requirement over every binding, and is stale only when the
requirement passes over every binding the run spoke.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from conformance.failures import KINDS, Failure
from conformance.report.words import clipped
from conformance.run.config import ConfigError, read_yaml


@dataclass(frozen=True)
class Entry:
    id: str
    pattern: str | None
    reason: str
    issue: str | None = None
    kind: str | None = None
    subcheck: str | None = None
    binding: str | None = None

    @property
    def label(self) -> str:
        label = f"{self.id}:{self.pattern}" if self.pattern else self.id
        scope = ([f"kind {self.kind}"] * bool(self.kind)
                 + [f"sub-check {self.subcheck}"] * bool(self.subcheck)
                 + [f"binding {self.binding}"] * bool(self.binding))
        return f"{label} ({', '.join(scope)})" if scope else label

    def over(self, binding: str | None) -> bool:
        """Whether this entry is about the requirement over ``binding``."""
        return self.binding is None or binding is None or self.binding == binding

    def covers(self, message: str, failure: Failure | None = None) -> bool:
        """Whether this entry covers ``failure`` (or, without one, a failure with
        this message and no kind): kind and sub-check equal when given, and the
        pattern found in the failure's line ("sub-check: message")."""
        if failure is not None:
            if self.kind is not None and failure.kind != self.kind:
                return False
            if self.subcheck is not None and failure.subcheck != self.subcheck:
                return False
            message = failure.line
        elif self.kind is not None or self.subcheck is not None:
            return False
        return self.pattern is None or fnmatchcase(message, self.pattern) or self.pattern in message

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.label, "reason": self.reason, **({"issue": self.issue} if self.issue else {}),
                **({"kind": self.kind} if self.kind else {}),
                **({"subcheck": self.subcheck} if self.subcheck else {}),
                **({"binding": self.binding} if self.binding else {})}


def load_baseline(path: str | Path, known_ids: set[str], bindings: list[str] | None = None) -> list[Entry]:
    """The entries of a baseline file, each checked against the profile's requirement
    ``known_ids`` and ``bindings``; ConfigError names the first bad one."""
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
        kind, subcheck = item.get("kind"), item.get("subcheck")
        if kind is not None and kind not in KINDS:
            raise ConfigError(f"baseline {path} entry {index + 1} has unknown kind {kind!r} "
                              f"(one of {', '.join(KINDS)})")
        if subcheck is not None and (not isinstance(subcheck, str) or not subcheck):
            raise ConfigError(f"baseline {path} entry {index + 1}: subcheck must be a sub-check's name")
        binding = item.get("binding")
        if binding is not None and (not isinstance(binding, str) or (bindings and binding not in bindings)):
            raise ConfigError(f"baseline {path} entry {index + 1}: binding must be one of the profile's "
                              f"bindings ({', '.join(bindings or [])}), not {binding!r}")
        entries.append(Entry(rid, pattern or None, str(item["reason"]), item.get("issue"), kind, subcheck,
                             binding))
    return entries


class Baseline:
    """Judges each verdict against the entries; remembers stale ones."""

    def __init__(self, entries: list[Entry], source: str) -> None:
        self.entries = entries
        self.source = source
        self.stale: list[str] = []

    def judge(self, requirement_id: str, status: str, message: str,
              failures: list[Failure] | None = None, binding: str | None = None,
              several: bool = False) -> tuple[str, Entry | None, str]:
        """(new status, covering entry, stale message) for one row's verdict: the
        requirement over ``binding`` (of ``several`` the run speaks). A failed verdict is
        expected when each of its ``failures`` (or, without them, its message) is covered
        by one of the requirement's entries about that binding; the entry returned is the
        first that covers one. A passing row makes stale the entries about its binding
        alone; one about every binding waits for every binding (``settle``)."""
        mine = [e for e in self.entries if e.id == requirement_id and e.over(binding)]
        if not mine:
            return status, None, ""
        if status == "failed":
            if not failures:
                return next((("expected_failure", e, "") for e in mine if e.covers(message)),
                            (status, None, ""))
            covering = [next((e for e in mine if e.covers(message, f)), None) for f in failures]
            if all(covering):
                return "expected_failure", covering[0], ""
            return status, None, ""
        if status == "passed":
            now = [e for e in mine if e.binding is not None or not several]
            if not now:
                return status, None, ""
            over = f" over {binding}" if several and binding else ""
            stale = "; ".join(
                f"baseline entry {e.label!r} is stale: {requirement_id} now passes{over}; "
                f"delete it from {self.source}" for e in now
            )
            self.stale.append(stale)
            return status, None, stale
        return status, None, ""

    def settle(self, rows: list[tuple[str, str | None, str]]) -> list[str]:
        """At the end of a run over several bindings: each entry about every binding whose
        requirement passed over each binding it ran over (``rows``: id, binding, status) is
        stale; the stale messages, also kept in ``stale``."""
        found = []
        for e in self.entries:
            if e.binding is not None:
                continue
            statuses = [status for rid, _binding, status in rows if rid == e.id]
            if statuses and all(s == "passed" for s in statuses):
                found.append(f"baseline entry {e.label!r} is stale: {e.id} now passes over every binding; "
                             f"delete it from {self.source}")
        self.stale += found
        return found


def baseline_from_summary(summary: dict[str, Any]) -> str:
    """A starting baseline: every failure of a run, with its message as the reason.
    A requirement whose failures came from sub-checks gets one entry per failed
    sub-check (with its kind), so a sub-check that starts failing later is not hidden.
    Each entry names the binding its row was run over (a summary of a run over one
    binding, written before rows named theirs, gives its top-level ``binding``)."""
    entries: list[dict[str, Any]] = []
    for r in summary.get("requirements", []):
        if r.get("status") not in ("failed", "expected_failure"):
            continue
        binding = r.get("binding", summary.get("binding"))
        over = {"binding": binding} if isinstance(binding, str) and binding else {}
        failures = [f for f in r.get("failures") or [] if isinstance(f, dict)]
        if failures and all(f.get("subcheck") for f in failures):
            for f in failures:
                entries.append({"id": r["id"], "reason": clipped(f.get("message") or "known failure", 200),
                                "kind": f.get("kind") or "expectation", "subcheck": f["subcheck"], **over})
        else:
            entries.append({"id": r["id"], "reason": clipped(r.get("message") or "known failure", 200),
                            **over})
    header = (f"# Known failures of {summary.get('profile')} against {summary.get('target')} "
              f"({summary.get('started_at')}). Give each a real reason and an issue URL.\n")
    return header + (yaml.safe_dump(entries, sort_keys=False, allow_unicode=True) if entries else "[]\n")
