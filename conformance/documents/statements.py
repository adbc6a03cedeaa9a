"""The statement map of a profile (profiles/statements/<profile>.yaml): every
normative statement of the spec, where it stands, what it says in a few words
(a locator, not a copy), its level, and the requirements that check it, or why
none can. The coverage figure is covered / testable statements; a run's own figure
(``run_coverage``) counts only statements a requirement of that run reached a verdict on.

    statements:
      - id: catalog-32001                         # stable, unique within the map
        at: /info/description (line 210)          # JSON pointer, or a line range
        says: an unknown task id gets -32001 TaskNotFound, HTTP 404
        level: MUST                               # MUST | SHOULD | MAY (as the spec words it)
        category: error-catalog                   # free words; figures are given per category
        checked_by: [BINDU-TASK-NOT-FOUND]        # or:
        untestable: needs a payment network       # why no requirement can check it

A profile built in parts defers requirements to a later part (the profile YAML's
``deferred:`` block, ids or globs and why): a statement checked only by deferred
requirements that do not exist yet is counted as deferred (neither testable nor
covered) until one of them is written.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.yamltext import load_yaml

LEVELS = ("MUST", "SHOULD", "MAY")


class StatementMapError(Exception):
    """The statement map does not parse or breaks its format."""


@dataclass(frozen=True)
class Statement:
    id: str
    at: str
    says: str
    level: str
    category: str
    checked_by: tuple[str, ...] = ()
    untestable: str = ""
    later: tuple[str, ...] = ()  # the requirements it names that the profile defers to a later part


@dataclass
class Coverage:
    statements: int
    testable: int
    covered: int
    untestable: int
    by_category: dict[str, dict[str, int]] = field(default_factory=dict)
    deferred: int = 0

    @property
    def percent(self) -> float:
        return round(100.0 * self.covered / self.testable, 1) if self.testable else 100.0

    def to_json(self) -> dict[str, Any]:
        return {"statements": self.statements, "testable": self.testable, "covered": self.covered,
                "untestable": self.untestable, "deferred": self.deferred, "percent": self.percent,
                "by_category": self.by_category}


def load_statements(path: Path, deferred: tuple[str, ...] = ()) -> list[Statement]:
    """The map at ``path`` ([] when the profile has none yet); one-line errors.
    ``deferred``: the profile's requirement globs of a later part."""
    if not path.is_file():
        return []
    try:
        data = load_yaml(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise StatementMapError(f"{path} does not parse: {str(exc).splitlines()[0]}") from None
    rows = data.get("statements") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise StatementMapError(f"{path}: expected a mapping with a `statements:` list")
    out, seen = [], set()
    for i, row in enumerate(rows):
        where = f"{path}: statement {i + 1}"
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) and row[k]
                                                for k in ("id", "at", "says", "level", "category")):
            raise StatementMapError(f"{where}: needs id, at, says, level and category (text)")
        if row["id"] in seen:
            raise StatementMapError(f"{where}: id {row['id']!r} is used twice")
        seen.add(row["id"])
        if row["level"] not in LEVELS:
            raise StatementMapError(f"{where} ({row['id']}): level {row['level']!r} is not one of "
                                    f"{', '.join(LEVELS)}")
        checked = row.get("checked_by") or []
        if not isinstance(checked, list) or not all(isinstance(r, str) for r in checked):
            raise StatementMapError(f"{where} ({row['id']}): checked_by must be a list of requirement IDs")
        unknown_keys = set(row) - {"id", "at", "says", "level", "category", "checked_by", "untestable"}
        if unknown_keys:
            raise StatementMapError(f"{where} ({row['id']}): unknown keys {sorted(unknown_keys)}")
        later = tuple(r for r in checked if any(fnmatch.fnmatchcase(r, g) for g in deferred))
        out.append(Statement(row["id"], row["at"], row["says"], row["level"], row["category"], tuple(checked),
                             str(row.get("untestable") or ""), later))
    return out


def coverage(statements: list[Statement], requirement_ids: list[str] | None = None) -> Coverage:
    """The figures; with ``requirement_ids``, a statement counts as covered only by
    requirements that exist (a map may name requirements still to be written)."""
    known = set(requirement_ids) if requirement_ids is not None else None

    def checked(s: Statement) -> bool:
        return any(known is None or r in known for r in s.checked_by)

    def later(s: Statement) -> bool:
        return bool(s.checked_by) and set(s.checked_by) <= set(s.later) and not checked(s)

    by: dict[str, Counter[str]] = {}
    for s in statements:
        c = by.setdefault(s.category, Counter())
        c["statements"] += 1
        c["untestable"] += bool(s.untestable and not s.checked_by)
        c["covered"] += checked(s)
        c["deferred"] += later(s)
    deferred = sum(1 for s in statements if later(s))
    testable = sum(1 for s in statements if (s.checked_by or not s.untestable) and not later(s))
    covered = sum(1 for s in statements if checked(s))
    return Coverage(len(statements), testable, covered, len(statements) - testable - deferred,
                    {k: {**{"statements": 0, "covered": 0, "untestable": 0, "deferred": 0}, **dict(v)}
                     for k, v in sorted(by.items())},
                    deferred)


@dataclass
class RunCoverage:
    """What one run exercised: testable statements at least one of whose requirements
    reached a verdict (untested, blocked and skipped ones did not)."""

    testable: int
    covered: int
    not_exercised: list[str] = field(default_factory=list)

    @property
    def percent(self) -> float:
        return round(100.0 * self.covered / self.testable, 1) if self.testable else 100.0

    def to_json(self) -> dict[str, Any]:
        return {"testable": self.testable, "covered": self.covered, "percent": self.percent,
                "not_exercised": self.not_exercised}


def run_coverage(statements: list[Statement], reached: set[str] | frozenset[str],
                 requirement_ids: list[str] | None = None) -> RunCoverage:
    """The figure of a run beside the map's: a statement counts as exercised when one of
    its ``checked_by`` requirements is in ``reached`` (the ids that ran to a verdict:
    passed, failed or expected failure). The denominator is ``coverage``'s testable
    statements (untestable and deferred ones stay out), so the two figures compare."""
    known = set(requirement_ids) if requirement_ids is not None else None

    def deferred(s: Statement) -> bool:  # as in ``coverage``
        return (bool(s.checked_by) and set(s.checked_by) <= set(s.later)
                and not any(known is None or r in known for r in s.checked_by))

    testable = [s for s in statements if (s.checked_by or not s.untestable) and not deferred(s)]
    missed = [s.id for s in testable if not any(r in reached for r in s.checked_by)]
    return RunCoverage(len(testable), len(testable) - len(missed), missed)


def mapped_rows(requirements: list[Any]) -> list[str]:
    """The IDs the profile's statement map must account for: every row but those that
    check a shared binding's own documents (``Requirement.document``: they cite those)."""
    return [r.id for r in requirements if not getattr(r, "document", "")]


def map_problems(statements: list[Statement], requirement_ids: list[str],
                 named: list[str] | None = None) -> list[str]:
    """A requirement that maps to no statement, a statement with neither requirement
    nor reason, or a requirement ID that does not exist (``named``: IDs a statement may
    name that need no statement of their own)."""
    if not statements:
        return ["the profile has no statement map (profiles/statements/<profile>.yaml)"]
    problems = []
    known = set(requirement_ids) | set(named or ())
    mapped = {r for s in statements for r in s.checked_by}
    for s in statements:
        if not s.checked_by and not s.untestable:
            problems.append(f"statement {s.id} ({s.at}) is checked by no requirement and gives no reason")
        problems += [f"statement {s.id} names unknown requirement {r}" for r in s.checked_by
                     if r not in known and r not in s.later]
    problems += [f"requirement {r} maps to no statement" for r in requirement_ids if r not in mapped]
    return problems
