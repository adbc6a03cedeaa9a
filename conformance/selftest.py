"""The fault matrix: every requirement passes against the clean reference, and
every fault is caught by each requirement that names it (DESIGN.md, "Checks that
cannot fail are defects")."""

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


def run_clean(profile: Profile, budget: str = "quick", seed: int = 1) -> dict[str, Verdict]:
    run = open_run(profile, "reference", budget=budget, seed=seed)
    try:
        return {req.id: execute(req, run) for req in profile.requirements}
    finally:
        run.http.close()


def run_fault(profile: Profile, fault: str, budget: str = "quick", seed: int = 1) -> dict[str, Verdict]:
    """Run the requirements naming ``fault`` against a fresh reference carrying it."""
    run = open_run(profile, "reference", faults=(fault,), budget=budget, seed=seed)
    try:
        return {req.id: execute(req, run) for req in profile.requirements if fault in req.faults}
    finally:
        run.http.close()


def selftest(profile: Profile, budget: str = "quick", seed: int = 1, out: Callable[[str], None] = print) -> SelftestResult:
    result = SelftestResult(structural_problems(profile))
    out(f"selftest {profile.name}: {len(profile.requirements)} requirements, {len(profile.faults)} faults")
    for rid, verdict in run_clean(profile, budget, seed).items():
        if verdict.status != "passed":
            result.problems.append(f"clean reference: {rid} {verdict.status}: {verdict.message}")
    out(f"  clean reference: {'all pass' if not result.problems else 'PROBLEMS'}")
    for fault in sorted(profile.faults):
        missed = [rid for rid, v in run_fault(profile, fault, budget, seed).items() if v.status != "failed"]
        for rid in missed:
            result.problems.append(f"fault {fault}: not caught by {rid}")
        out(f"  fault {fault:36} {'caught' if not missed else 'MISSED by ' + ', '.join(missed)}")
    for problem in result.problems:
        out(f"  problem: {problem}")
    out(f"selftest {profile.name}: {'ok' if result.ok else f'{len(result.problems)} problem(s)'}")
    return result
