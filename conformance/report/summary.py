"""summary.json (the contract in DESIGN.md) and the run's exit code."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.model import LEVELS, Profile, Requirement
from conformance.runner import Verdict

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3


@dataclass
class Result:
    requirement: Requirement
    verdict: Verdict
    case: str | None = None  # path of the case file, relative to the report dir


def gates(level: str, gate: str) -> bool:
    """True when a failure at ``level`` fails a run gated at ``gate`` (must < should < may)."""
    return LEVELS.index(level) <= LEVELS.index(gate.upper())


def exit_code(results: list[Result], gate: str, unreachable: bool) -> int:
    if unreachable:
        return EXIT_UNREACHABLE
    failed = any(r.verdict.status == "failed" and gates(r.requirement.level, gate) for r in results)
    return EXIT_FAILED if failed else EXIT_OK


def verdict_word(results: list[Result], gate: str, unreachable: bool) -> str:
    code = exit_code(results, gate, unreachable)
    if code == EXIT_UNREACHABLE:
        return "unreachable"
    if code == EXIT_FAILED:
        return "fail"
    if any(r.verdict.status == "untested" and gates(r.requirement.level, gate) for r in results):
        return "incomplete"
    return "pass"


def build_summary(
    profile: Profile,
    results: list[Result],
    *,
    target: str,
    seed: int,
    budget: str,
    gate: str,
    started_at: datetime,
    duration_s: float,
    exchanges: int,
    unreachable: str | None = None,
    binding: str | None = None,
) -> dict[str, Any]:
    counts = {"passed": 0, "failed": 0, "untested": 0, "skipped": 0, "expected_failures": 0}
    for r in results:
        counts[r.verdict.status] = counts.get(r.verdict.status, 0) + 1
    return {
        "tool": {"name": "conformance", "version": __version__},
        "profile": profile.name,
        "spec": {"path": profile.spec_relpath, "sha256": profile.spec_sha256},
        "target": target,
        "binding": binding,
        "seed": seed,
        "budget": budget,
        "level": gate.lower(),
        "started_at": started_at.astimezone(UTC).isoformat(timespec="seconds"),
        "duration_s": round(duration_s, 3),
        "exchanges": exchanges,
        "exchanges_per_s": round(exchanges / duration_s, 1) if duration_s > 0 else 0.0,
        "verdict": verdict_word(results, gate, bool(unreachable)),
        "unreachable": unreachable,
        "counts": counts,
        "requirements": [
            {
                "id": r.requirement.id,
                "level": r.requirement.level,
                "title": r.requirement.title,
                "status": r.verdict.status,
                "source": r.requirement.source.to_json(),
                "faults": list(r.requirement.faults),
                "exchanges": r.verdict.exchange_count,
                "duration_s": round(r.verdict.duration_s, 3),
                "cases": 1 if r.case else 0,
                "message": r.verdict.message,
                "failures": [{"case": r.case, "message": r.verdict.message}] if r.verdict.status == "failed" else [],
            }
            for r in results
        ],
    }


def write_summary(report_dir: Path, summary: dict[str, Any]) -> Path:
    report_dir.mkdir(parents=True, exist_ok=True)
    path = report_dir / "summary.json"
    path.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
