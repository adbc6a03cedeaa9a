"""summary.json (the contract in DESIGN.md) and the run's exit code."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.failures import DEFAULT_KIND, KIT_ERROR, NOT_THE_TARGET, Failure
from conformance.live import BEYOND_A_CLIENT
from conformance.model import LEVELS, Profile, Requirement
from conformance.report.rootcause import group
from conformance.runner import Verdict
from conformance.statements import coverage, run_coverage

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_UNTESTED = 5  # a gating requirement was neither tested nor declared away (see --allow-untested)
EXIT_INTERRUPTED = 130  # SIGINT or SIGTERM: the reports hold what had run
EXIT_CODES = {
    EXIT_OK: "every requirement at the gating level held",
    EXIT_FAILED: "a requirement at the gating level failed (or a stale baseline entry)",
    EXIT_USAGE: "usage or configuration error",
    EXIT_UNREACHABLE: "the target could not be reached, stopped answering, does not speak the protocol, "
                      "or the run's time limit passed before it finished",
    EXIT_INTERNAL: "internal error of conformance (a bug: please report it)",
    EXIT_UNTESTED: "nothing failed, but a requirement at the gating level was untested or blocked "
                   "(give the credentials or control it needs, or pass --allow-untested), "
                   "or none ran to a verdict at all (a gate never passes on nothing)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C, SIGINT or SIGTERM); the reports hold what had run, "
                      "the rest is untested",
}


@dataclass
class Result:
    requirement: Requirement
    verdict: Verdict
    case: str | None = None  # path of the case file, relative to the report dir
    baseline: dict[str, Any] | None = None  # the baseline entry that covers this requirement
    stale: str = ""  # set when a baseline entry lists this requirement but it passed


def gates(level: str, gate: str) -> bool:
    """True when a failure at ``level`` fails a run gated at ``gate`` (must < should < may)."""
    return LEVELS.index(level) <= LEVELS.index(gate.upper())


REACHED = ("passed", "failed", "expected_failure")  # the statuses of a requirement that ran to a verdict


def gating_reached(results: list[Result], gate: str) -> int:
    """How many requirements at a gating level ran to a verdict."""
    return sum(r.verdict.status in REACHED and gates(r.requirement.level, gate) for r in results)


def beyond_a_client(r: Result) -> bool:
    """Untested for what no client could do without the operator (control, or harm to
    an identity the config does not mark disposable): what ``--gate live`` sets aside."""
    return r.verdict.status == "untested" and r.verdict.reason in BEYOND_A_CLIENT


def incomplete(results: list[Result], gate: str, live_gate: bool = False) -> list[Result]:
    """Gating requirements untested or blocked (``live_gate``: but for those beyond a client)."""
    return [r for r in results
            if r.verdict.status in ("untested", "blocked") and gates(r.requirement.level, gate)
            and not (live_gate and beyond_a_client(r))]


def live_statement(results: list[Result], gate: str) -> dict[str, Any]:
    """"MUST-compliant on N of M; K need the test-control interface": what a server without
    control can be gated on (``--gate live``), and what it cannot."""
    mine = [r for r in results if gates(r.requirement.level, gate) and r.verdict.status != "skipped"]
    held = sum(r.verdict.status == "passed" for r in mine)
    control = sum(r.verdict.status == "untested" and r.verdict.reason == "control" for r in mine)
    harm = sum(r.verdict.status == "untested" and r.verdict.reason == "harm" for r in mine)
    text = f"{gate.upper()}-compliant on {held} of {len(mine)}; {control} need the test-control interface"
    if harm:
        text += f"; {harm} would harm a configured identity (mark one disposable to run them)"
    return {"held": held, "of": len(mine), "need_control": control, "would_harm": harm, "statement": text}


def kit_errors(results: list[Result]) -> list[Result]:
    """Requirements the kit's own error ended (never a finding about the target)."""
    return [r for r in results if any(f.kind == KIT_ERROR for f in r.verdict.failures)]


def exit_code(results: list[Result], gate: str, unreachable: bool, stale: bool = False,
              stopped: str | None = None,
              allow_untested: bool = True, live_gate: bool = False) -> int:
    """130 interrupted; 3 unreachable; 4 the kit's own error ended a requirement (whatever
    its level: the run is not the whole truth, and the worse news); 1 an unlisted failure at
    a gating level, or a stale baseline entry; 3 the time limit cut the run short; 5 no gating requirement
    ran to a verdict (a gate never passes on nothing, whatever ``allow_untested``
    says), or one was untested or blocked (unless ``allow_untested``; with
    ``live_gate``, but for those no client could test: control, harm); else 0.
    ``stopped`` is None, "time" or "signal"."""
    if stopped == "signal":
        return EXIT_INTERRUPTED
    if unreachable:
        return EXIT_UNREACHABLE
    if kit_errors(results):
        return EXIT_INTERNAL
    failed = any(r.verdict.status == "failed" and gates(r.requirement.level, gate) for r in results)
    if failed or stale:
        return EXIT_FAILED
    if stopped == "time":
        return EXIT_UNREACHABLE
    if not gating_reached(results, gate):
        return EXIT_UNTESTED
    if not allow_untested and incomplete(results, gate, live_gate):
        return EXIT_UNTESTED
    return EXIT_OK


def verdict_word(results: list[Result], gate: str, unreachable: bool, stale: bool = False,
                 stopped: str | None = None,
                 live_gate: bool = False) -> str:
    code = exit_code(results, gate, unreachable, stale, stopped, live_gate=live_gate)
    if code == EXIT_INTERRUPTED:
        return "interrupted"
    if code == EXIT_UNREACHABLE:
        return "time limit" if stopped == "time" and not unreachable else "unreachable"
    if code == EXIT_INTERNAL:
        return "kit error"
    if code == EXIT_FAILED:
        return "fail"
    if code == EXIT_UNTESTED or incomplete(results, gate, live_gate):
        return "incomplete"
    return "pass"


def verdict_reason(results: list[Result], gate: str, verdict: str, *, stale: int = 0, baseline: bool = False,
                   stopped: str | None = None, unreachable: str | None = None,
                   live_gate: bool = False) -> str:
    """The verdict in one sentence: why the gate says what it says (the grade is beside it)."""
    level = gate.upper()
    def count(*statuses: str) -> int:
        return sum(r.verdict.status in statuses and gates(r.requirement.level, gate) for r in results)
    def plural(n: int, what: str) -> str:
        return f"{n} {what}{'s' * (n != 1)}"
    ran = sum(r.verdict.status in REACHED for r in results)
    known = count("expected_failure")
    if verdict == "interrupted":
        return (f"{stopped or 'interrupted'}: {ran} of {len(results)} requirements ran to a verdict, "
                "the rest untested")
    if verdict == "unreachable":
        return f"the target could not be tested: {unreachable}"
    if verdict == "time limit":
        return f"{stopped}: {ran} of {len(results)} requirements ran to a verdict"
    if verdict == "fail":
        parts = []
        if count("failed"):
            parts.append(f"{plural(count('failed'), level + ' requirement')} failed"
                         + (" outside the baseline" if baseline else ""))
        if stale:
            parts.append(f"{plural(stale, 'baseline entry')} stale (the requirement now passes: "
                         "delete the entry)")
        return "; ".join(parts)
    if verdict == "kit error":
        return (f"{plural(len(kit_errors(results)), 'requirement')} ended on an internal error of "
                "conformance (a bug of the kit, not a finding about the target: set CONFORMANCE_DEBUG=1 for "
                "the traceback and please report it)")
    if not gating_reached(results, gate):
        return f"no requirement at level {level} or above ran to a verdict: nothing was tested"
    held = (f"no requirement at level {level} or above failed outside the baseline "
            f"({plural(known, 'known failure')})"
            if known else f"every requirement at level {level} or above held")
    if live_gate:
        held = held.replace(f"every requirement at level {level} or above held",
                            f"every requirement at level {level} or above that a client can test without "
                            "control held")
    if verdict == "incomplete":
        left = incomplete(results, gate, live_gate)
        return f"{held}, but {plural(len(left), level + ' requirement')} untested or blocked"
    return held


STATUSES = ("passed", "failed", "blocked", "untested", "skipped", "expected_failure")
GRADES = ("non-compliant", "MUST-compliant", "SHOULD-compliant", "fully compliant")


def level_counts(results: list[Result]) -> dict[str, dict[str, int]]:
    counts = {level: {s: 0 for s in STATUSES} for level in LEVELS}
    for r in results:
        counts[r.requirement.level][r.verdict.status] += 1
    return counts


def grade(results: list[Result], unreachable: bool, partial: bool = False) -> str:
    """Compliance grade. A level holds when every requirement of it (and of the levels
    above) passed: a failure, an expected failure or an untested requirement all count
    against it; only skipped (not applicable) ones leave the denominator. A run that
    reached nothing, or ran only some requirements (--only), grades nothing."""
    if unreachable or partial or not any(r.verdict.status in ("passed", "failed", "expected_failure")
                                         for r in results):
        return "ungraded"
    held = 0
    for level in LEVELS:
        mine = [r for r in results if r.requirement.level == level and r.verdict.status != "skipped"]
        if any(r.verdict.status != "passed" for r in mine):
            break
        held += 1
    return GRADES[held]


def failure_entries(r: Result) -> list[dict[str, Any]]:
    """One entry per typed failure of a failed (or expected-failure) verdict: the
    case file they share, and each one's kind, message, statement and sub-check."""
    if r.verdict.status not in ("failed", "expected_failure"):
        return []
    failures = r.verdict.failures or [Failure(DEFAULT_KIND, r.verdict.message)]
    return [{"case": r.case, **f.to_json()} for f in failures]


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
    baseline: dict[str, Any] | None = None,
    partial: bool = False,
    stopped: tuple[str, str] | None = None,
    declared: frozenset[str] = frozenset(),
    config: str | None = None,
    refused: dict[str, str] | None = None,
    preflight_exchanges: int = 0,
    live_gate: bool = False,
    not_put_back: list[str] | None = None,
) -> dict[str, Any]:
    """``stopped`` is (kind, reason) when the run ended early: kind "time" or "signal";
    ``config`` the config file as the user named it; ``refused`` the credentials the
    target refused before the run, with why."""
    kind = stopped[0] if stopped else None
    stale = len(baseline.get("stale") or []) if baseline else 0
    verdict = verdict_word(results, gate, bool(unreachable), bool(stale), kind, live_gate)
    counts = {"passed": 0, "failed": 0, "blocked": 0, "untested": 0, "skipped": 0, "expected_failures": 0}
    for r in results:
        key = "expected_failures" if r.verdict.status == "expected_failure" else r.verdict.status
        counts[key] += 1
    return {
        "tool": {"name": "conformance", "version": __version__},
        "profile": profile.name,
        **({"profile_draft": profile.draft} if profile.draft else {}),  # a profile still being built
        "spec": {"path": profile.spec_relpath, "sha256": profile.spec_sha256},
        "target": target,
        "binding": binding,
        "seed": seed,
        "budget": budget,
        "level": gate.lower(),
        "started_at": started_at.astimezone(UTC).isoformat(timespec="seconds"),
        "duration_s": round(duration_s, 3),
        "exchanges": exchanges,
        "preflight_exchanges": preflight_exchanges,  # of ``exchanges``: the probe and the credential checks
        "exchanges_per_s": round(exchanges / duration_s, 1) if duration_s > 0 else 0.0,
        "verdict": verdict,
        "verdict_reason": verdict_reason(results, gate, verdict, stale=stale, baseline=baseline is not None,
                                         stopped=stopped[1] if stopped else None, unreachable=unreachable,
                                         live_gate=live_gate)
                          + (f" ({live_statement(results, gate)['statement']})" if live_gate else ""),
        "gate": "live" if live_gate else "full",
        # what a server without control is gated on, and why the rest was not run
        "live": live_statement(results, gate),
        "untested_reasons": untested_reasons(results),
        "blocked_causes": blocked_causes(results),
        "not_put_back": list(not_put_back or []),  # changes to configured identities the run could not undo
        "interrupted": kind == "signal",
        "config": config,
        "credentials_refused": dict(refused or {}),
        "baseline": baseline,
        "unreachable": unreachable,
        "stopped": stopped[1] if stopped else None,
        "grade": grade(results, bool(unreachable) or kind == "signal", partial),
        "declared": sorted(declared),  # optional features the deployment declared it does not offer
        "grade_note": f"graded with declared options: {', '.join(sorted(declared))}" if declared else "",
        "counts": counts,
        "root_causes": group(results),  # failed and blocked requirements by what the target did
        "levels": level_counts(results),
        # the spec's normative statements the profile's requirements check (statement map)
        "coverage": (coverage(profile.statements, [r.id for r in profile.requirements]).to_json()
                     if profile.statements else None),
        # what this run exercised
        "coverage_run": (run_coverage(profile.statements,
                                      {r.requirement.id for r in results if r.verdict.status in REACHED},
                                      [r.id for r in profile.requirements]).to_json()
                         if profile.statements else None),
        "requirements": [
            {
                "id": r.requirement.id,
                "level": r.requirement.level,
                "title": r.requirement.title,
                **({"group": r.requirement.group} if r.requirement.group else {}),
                "status": r.verdict.status,
                "source": r.requirement.source.to_json(),
                "faults": list(r.requirement.faults),
                "exchanges": r.verdict.exchange_count,
                "duration_s": round(r.verdict.duration_s, 3),
                **({"machine": r.verdict.machine} if r.verdict.machine else {}),
                "cases": 1 if r.case else 0,
                "message": r.verdict.message,
                **({"reason": r.verdict.reason} if r.verdict.status == "untested" and r.verdict.reason
                   else {}),
                **({"cause": r.verdict.cause} if r.verdict.status == "blocked" and r.verdict.cause else {}),
                "failures": failure_entries(r),
                **({"baseline": r.baseline} if r.baseline else {}),
            }
            for r in results
        ],
    }


def untested_reasons(results: list[Result]) -> dict[str, int]:
    """How many requirements are untested for each reason (conformance/live.py REASONS)."""
    counts: dict[str, int] = {}
    for r in results:
        if r.verdict.status == "untested":
            key = r.verdict.reason or "other"
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def blocked_causes(results: list[Result]) -> dict[str, int]:
    """How many requirements are blocked by each cause: the ``NOT_THE_TARGET`` ones by name,
    the rest as ``set-up refused`` (a set-up step the target refused)."""
    counts: dict[str, int] = {}
    for r in results:
        if r.verdict.status == "blocked":
            key = r.verdict.cause if r.verdict.cause in NOT_THE_TARGET else "set-up refused"
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def write_summary(report_dir: Path, summary: dict[str, Any]) -> Path:
    report_dir.mkdir(parents=True, exist_ok=True)
    path = report_dir / "summary.json"
    path.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
