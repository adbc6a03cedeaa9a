"""The fault matrix: every requirement passes against the clean reference, and
every fault is caught by each requirement that names it (DESIGN.md, "Checks that
cannot fail are defects"). A profile with several bindings is proven over each: a
requirement may be skipped where it does not apply, but must catch its faults over
every binding where it does, and over at least one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from conformance.model import Profile
from conformance.runner import Verdict, execute
from conformance.targets import open_run


@dataclass
class SelftestResult:
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def bindings_of(profile: Profile) -> list[str | None]:
    return list(profile.settings.get("bindings") or {}) or [None]


def structural_problems(profile: Profile) -> list[str]:
    """Requirements without faults, faults no requirement names, names that do not exist."""
    problems = []
    named = set()
    for req in profile.requirements:
        if not req.faults:
            problems.append(f"{req.id} names no fault: nothing proves it can fail")
        for fault in req.faults:
            named.add(fault)
            if fault not in profile.faults:
                problems.append(f"{req.id} names unknown fault {fault!r}")
    for fault in sorted(set(profile.faults) - named):
        problems.append(f"fault {fault!r} is named by no requirement")
    return problems


def run_clean(profile: Profile, budget: str = "quick", seed: int = 1, binding: str | None = None) -> dict[str, Verdict]:
    run = open_run(profile, "reference", budget=budget, seed=seed, binding=binding)
    try:
        return {req.id: execute(req, run) for req in profile.requirements}
    finally:
        run.http.close()


def run_fault(profile: Profile, fault: str, budget: str = "quick", seed: int = 1, binding: str | None = None) -> dict[str, Verdict]:
    """Run the requirements naming ``fault`` against a fresh reference carrying it."""
    run = open_run(profile, "reference", faults=(fault,), budget=budget, seed=seed, binding=binding)
    try:
        return {req.id: execute(req, run) for req in profile.requirements if fault in req.faults}
    finally:
        run.http.close()


def clean_problems(verdicts: dict[str, Verdict], where: str) -> list[str]:
    return [f"clean reference{where}: {rid} {v.status}: {v.message}"
            for rid, v in verdicts.items() if v.status not in ("passed", "skipped")]


def fault_problems(fault: str, per_binding: dict[str | None, dict[str, Verdict]]) -> list[str]:
    """Each naming requirement fails wherever it applies, and applies somewhere."""
    problems = []
    rids = {rid for verdicts in per_binding.values() for rid in verdicts}
    for rid in sorted(rids):
        statuses = {b: v[rid].status for b, v in per_binding.items()}
        missed = [b for b, s in statuses.items() if s not in ("failed", "skipped")]
        if missed or all(s == "skipped" for s in statuses.values()):
            over = "" if missed == [None] else f" over {', '.join(str(b) for b in missed) or 'any binding'}"
            problems.append(f"fault {fault}: not caught by {rid}{over}")
    return problems


def selftest(profile: Profile, budget: str = "quick", seed: int = 1, out: Callable[[str], None] = print) -> SelftestResult:
    result = SelftestResult(structural_problems(profile))
    bindings = bindings_of(profile)
    out(f"selftest {profile.name}: {len(profile.requirements)} requirements, {len(profile.faults)} faults"
        + (f", bindings {', '.join(map(str, bindings))}" if bindings != [None] else ""))
    for binding in bindings:
        where = f" over {binding}" if binding else ""
        problems = clean_problems(run_clean(profile, budget, seed, binding), where)
        result.problems += problems
        out(f"  clean reference{where}: {'all pass' if not problems else 'PROBLEMS'}")
    for fault in sorted(profile.faults):
        problems = fault_problems(fault, {b: run_fault(profile, fault, budget, seed, b) for b in bindings})
        result.problems += problems
        out(f"  fault {fault:36} {'caught' if not problems else 'MISSED'}")
    for problem in result.problems:
        out(f"  problem: {problem}")
    out(f"selftest {profile.name}: {'ok' if result.ok else f'{len(result.problems)} problem(s)'}")
    return result
