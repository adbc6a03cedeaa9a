"""summary.json (the contract in DESIGN.md) and the run's exit code."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.documents.statements import coverage, run_coverage
from conformance.exits import (  # noqa: F401  (named here too for the callers of old)
    EXIT_CODES,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_UNTESTED,
    EXIT_USAGE,
)
from conformance.failures import DEFAULT_KIND, KIT_ERROR, NOT_THE_TARGET, Failure
from conformance.kit.live import BEYOND_A_CLIENT
from conformance.model import LEVELS, Profile, Requirement
from conformance.report.rootcause import group
from conformance.run.runner import Verdict


@dataclass
class Result:
    """One row of a run: a requirement over one binding, and its verdict."""

    requirement: Requirement
    verdict: Verdict
    case: str | None = None  # path of the case file, relative to the report dir
    baseline: dict[str, Any] | None = None  # the baseline entry that covers this requirement
    stale: str = ""  # set when a baseline entry lists this requirement but it passed
    binding: str | None = None  # the binding the row was run over (None: a profile without bindings)


def row_label(requirement_id: str, binding: str | None, several: bool) -> str:
    """How a row is named where a run speaks ``several`` bindings (``ID[binding]``, as
    pytest names a parametrized test), else by its requirement's ID alone."""
    return f"{requirement_id}[{binding}]" if several and binding else requirement_id


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
    control can be gated on (``--gate live``), and what it cannot. The counts are those of
    ``untested_reasons`` over the gating rows: the same words and numbers as every report's
    breakdown, narrowed to the gate's levels."""
    mine = [r for r in results if gates(r.requirement.level, gate) and r.verdict.status != "skipped"]
    held = sum(r.verdict.status == "passed" for r in mine)
    reasons = untested_reasons(mine)
    control, harm, outcome = (reasons.get(k, 0) for k in ("control", "harm", "outcome"))
    text = (f"{gate.upper()}-compliant on {held} of {len(mine)}; {control} "
            f"{'needs' if control == 1 else 'need'} the test-control interface")
    if harm:
        text += f"; {harm} would harm a configured identity (mark one disposable to run them)"
    if outcome:
        text += (f"; {outcome} {'needs' if outcome == 1 else 'need'} a scenario that drives the agent there "
                 "(config scenarios:)")
    return {"held": held, "of": len(mine), "need_control": control, "would_harm": harm,
            "need_scenario": outcome, "statement": text}


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
                   live_gate: bool = False, rows: str = "requirements") -> str:
    """The verdict in one sentence: why the gate says what it says (the grade is beside it).
    ``rows`` names what is counted: requirements, or rows (requirement and binding) of a run
    over several bindings."""
    level = gate.upper()
    noun = "requirement" if rows == "requirements" else "row"
    def count(*statuses: str) -> int:
        return sum(r.verdict.status in statuses and gates(r.requirement.level, gate) for r in results)
    def plural(n: int, what: str) -> str:
        return f"{n} {what}{'s' * (n != 1)}"
    ran = sum(r.verdict.status in REACHED for r in results)
    known = count("expected_failure")
    if verdict == "interrupted":
        return (f"{stopped or 'interrupted'}: {ran} of {len(results)} {rows} ran to a verdict, "
                "the rest untested")
    if verdict == "unreachable":
        return f"the target could not be tested: {unreachable}"
    if verdict == "time limit":
        return f"{stopped}: {ran} of {len(results)} {rows} ran to a verdict"
    if verdict == "fail":
        parts = []
        if count("failed"):
            parts.append(f"{plural(count('failed'), f'{level} {noun}')} failed"
                         + (" outside the baseline" if baseline else ""))
        if stale:
            parts.append(f"{plural(stale, 'baseline entry')} stale (the requirement now passes: "
                         "delete the entry)")
        return "; ".join(parts)
    if verdict == "kit error":
        return (f"{plural(len(kit_errors(results)), noun)} ended on an internal error of "
                "conformance (a bug of the kit, not a finding about the target: set CONFORMANCE_DEBUG=1 for "
                "the traceback and please report it)")
    if not gating_reached(results, gate):
        return f"no {noun} at level {level} or above ran to a verdict: nothing was tested"
    held = (f"no {noun} at level {level} or above failed outside the baseline "
            f"({plural(known, 'known failure')})"
            if known else f"every {noun} at level {level} or above held")
    if live_gate:
        held = held.replace(f"every {noun} at level {level} or above held",
                            f"every {noun} at level {level} or above that a client can test without "
                            "control held")
    if verdict == "incomplete":
        left = incomplete(results, gate, live_gate)
        return f"{held}, but {plural(len(left), f'{level} {noun}')} untested or blocked"
    return held


STATUSES = ("passed", "failed", "blocked", "untested", "skipped", "expected_failure")
GRADES = ("non-compliant", "MUST-compliant", "SHOULD-compliant", "fully compliant")


def by_declaration(r: Result) -> bool:
    """A row a declaration made not applicable (the target's own, or the config's
    ``declared:``): skipped, and counted apart from the other skipped rows."""
    return r.verdict.status == "skipped" and r.verdict.declared is not None


def count_key(r: Result) -> str:
    """The key a row counts under: its status, ``not_applicable`` for a row a declaration
    made so, ``expected_failures`` for the baseline's."""
    if by_declaration(r):
        return "not_applicable"
    return "expected_failures" if r.verdict.status == "expected_failure" else r.verdict.status


def level_counts(results: list[Result]) -> dict[str, dict[str, int]]:
    counts = {level: {**{s: 0 for s in STATUSES}, "not_applicable": 0} for level in LEVELS}
    for r in results:
        row = counts[r.requirement.level]
        key = "not_applicable" if by_declaration(r) else r.verdict.status
        row[key] = row.get(key, 0) + 1  # a status a newer runner adds
    return counts


def status_counts(results: list[Result]) -> dict[str, int]:
    """How many rows have each status; ``skipped`` are the rows skipped but for those a
    declaration made not applicable (``not_applicable``)."""
    counts = {"passed": 0, "failed": 0, "blocked": 0, "untested": 0, "not_applicable": 0, "skipped": 0,
              "expected_failures": 0}
    for r in results:
        key = count_key(r)
        counts[key] = counts.get(key, 0) + 1
    return counts


def not_applicable(results: list[Result]) -> dict[str, int]:
    """How many rows each declaration made not applicable, by the declaration in words
    ("the agent card declares no securitySchemes"), largest first."""
    counts: dict[str, int] = {}
    for r in results:
        if by_declaration(r) and r.verdict.declared is not None:
            key = r.verdict.declared.said
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


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
    bindings: list[str | None] | None = None,
    unreachable_by: dict[str, str] | None = None,
    agent: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``stopped`` is (kind, reason) when the run ended early: kind "time" or "signal";
    ``config`` the config file as the user named it; ``refused`` the credentials the
    target refused before the run, with why. ``bindings`` are the bindings the run spoke
    (one row per requirement and binding; ``binding`` alone: one); ``unreachable_by`` why
    each binding that could not be tested could not; ``agent`` what the target said of
    itself (name, version and the URL where it said so).

    One row per requirement and binding, each naming its binding, in one list: a summary of a
    run over one binding reads as it always did (the same keys, one row per requirement),
    and a reader of several keys its rows by (id, binding); ``by_binding`` gives each
    binding's own verdict and counts."""
    kind = stopped[0] if stopped else None
    stale = len(baseline.get("stale") or []) if baseline else 0
    spoken = list(bindings) if bindings is not None else [binding]
    several = len(spoken) > 1
    verdict = verdict_word(results, gate, bool(unreachable), bool(stale), kind, live_gate)
    untested, blocked = untested_reasons(results), blocked_causes(results)
    declared_off = not_applicable(results)
    rows = "rows (requirement and binding)" if several else "requirements"
    return {
        "tool": {"name": "conformance", "version": __version__},
        "profile": profile.name,
        **({"profile_draft": profile.draft} if profile.draft else {}),  # a profile still being built
        "spec": {"path": profile.spec_relpath, "sha256": profile.spec_sha256, "title": profile.title},
        "target": target,
        "agent": dict(agent or {}),
        "binding": spoken[0] if not several else None,
        "bindings": [b for b in spoken if b is not None],
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
                                         live_gate=live_gate, rows=rows)
                          + (f" ({live_statement(results, gate)['statement']})" if live_gate else ""),
        "gate": "live" if live_gate else "full",
        # what a server without control is gated on, and why the rest was not run
        "live": live_statement(results, gate),
        "untested_reasons": untested,
        "blocked_causes": blocked,
        "not_applicable": declared_off,  # rows a declaration made not applicable, by declaration
        # the three above in words, as every report says them
        "not_reached": breakdown(untested, blocked, declared_off),
        "not_put_back": list(not_put_back or []),  # changes to configured identities the run could not undo
        "interrupted": kind == "signal",
        "config": config,
        "credentials_refused": dict(refused or {}),
        "baseline": baseline,
        "unreachable": unreachable,
        **({"unreachable_by": dict(unreachable_by)} if unreachable_by else {}),
        "stopped": stopped[1] if stopped else None,
        "grade": grade(results, bool(unreachable) or kind == "signal", partial),
        "declared": sorted(declared),  # optional features the deployment declared it does not offer
        "grade_note": f"graded with declared options: {', '.join(sorted(declared))}" if declared else "",
        "counts": status_counts(results),
        "by_binding": {str(b): binding_block(profile, [r for r in results if r.binding == b], gate,
                                             (unreachable_by or {}).get(str(b)), bool(stale), kind,
                                             live_gate, partial)
                       for b in spoken if b is not None} if several else {},
        "root_causes": group(results, several),  # failed and blocked rows by what the target did
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
                **({"binding": r.binding} if r.binding is not None else {}),
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
                **({"declared": r.verdict.declared.to_json()} if by_declaration(r) and r.verdict.declared
                   else {}),
                "failures": failure_entries(r),
                **({"baseline": r.baseline} if r.baseline else {}),
            }
            for r in results
        ],
    }


def binding_block(profile: Profile, results: list[Result], gate: str, unreachable: str | None, stale: bool,
                  kind: str | None, live_gate: bool, partial: bool) -> dict[str, Any]:
    """One binding's part of a run over several: its own verdict, grade and counts (a
    stale baseline entry or a stop is the run's, and counts in each)."""
    verdict = verdict_word(results, gate, bool(unreachable), stale, kind, live_gate)
    untested, blocked = untested_reasons(results), blocked_causes(results)
    declared_off = not_applicable(results)
    return {"verdict": verdict,
            "grade": grade(results, bool(unreachable) or kind == "signal", partial),
            "counts": status_counts(results), "levels": level_counts(results),
            "exchanges": sum(r.verdict.exchange_count for r in results),
            "unreachable": unreachable, "untested_reasons": untested, "blocked_causes": blocked,
            "not_applicable": declared_off, "not_reached": breakdown(untested, blocked, declared_off),
            "live": live_statement(results, gate)}


# why rows were not run to a verdict, in words: untested by reason (conformance/kit/live.py
# REASONS), as (one, several); blocked by cause
UNTESTED_WORDS = {
    "control": ("needs the test-control interface", "need the test-control interface"),
    "harm": ("would harm a configured identity", "would harm a configured identity"),
    "quota": ("would exceed a quota", "would exceed a quota"),
    "credential": ("lacks a credential (none given, or the target refused it)",
                   "lack a credential (none given, or the target refused it)"),
    "optional": ("is about an optional part the target does not serve",
                 "are about an optional part the target does not serve"),
    "outcome": ("needs a scenario that drives the agent there (config scenarios:)",
                "need a scenario that drives the agent there (config scenarios:)"),
    "unreachable": ("could not reach the target", "could not reach the target"),
    "stopped": ("came after the run stopped", "came after the run stopped"),
    "unjudged": ("weighed no answer of the target", "weighed no answer of the target"),
    "other": ("for another reason (its message says)", "for other reasons (their messages say)"),
}
BLOCKED_WORDS = {**NOT_THE_TARGET, "set-up refused": "a set-up step the target refused"}


def breakdown(untested: dict[str, int], blocked: dict[str, int],
              declared_off: dict[str, int] | None = None) -> list[str]:
    """Why rows were not run to a verdict, in one sentence each: untested by reason, blocked
    by cause, largest first ("31 untested: not run to a verdict (18 need a scenario ..., 11
    lack a credential ..., 1 needs the test-control interface, 1 for another reason ...)"),
    and the rows a declaration made not applicable, by declaration (never gating).
    The one source of these words and numbers: the console, report.html, the badge, the
    JUnit properties and summary.json (``not_reached``) all say what this says."""
    lines = []
    total = sum(untested.values())
    if total:
        parts = []
        for reason, n in untested.items():
            one, several = UNTESTED_WORDS.get(reason, (f"untested ({reason})", f"untested ({reason})"))
            parts.append(f"{n} {one if n == 1 else several}")
        lines.append(f"{total} untested: not run to a verdict ({', '.join(parts)})")
    total = sum(blocked.values())
    if total:
        parts = [f"{n} by {BLOCKED_WORDS.get(cause, cause)}" for cause, n in blocked.items()]
        lines.append(f"{total} blocked: kept from running to a verdict, never failed ({', '.join(parts)})")
    total = sum((declared_off or {}).values())
    if total:
        parts = [f"{n} where {said}" for said, n in (declared_off or {}).items()]
        lines.append(f"{total} not applicable: by a declaration, never gating ({'; '.join(parts)})")
    return lines


def untested_reasons(results: list[Result]) -> dict[str, int]:
    """How many requirements are untested for each reason (conformance/kit/live.py REASONS)."""
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
