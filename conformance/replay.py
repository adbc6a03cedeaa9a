"""Replaying a saved case: the same requirement, the same generated example
(hypothesis's reproduce blob), sent again to a target and judged again."""

from __future__ import annotations

from pathlib import Path

from conformance.profiles import load_profile
from conformance.report.cases import read_case
from conformance.runner import execute
from conformance.targets import load_config, open_run


def replay(case_path: Path, target: str | None = None, config_path: str | None = None, token: str | None = None) -> tuple[str, str]:
    """Return (status, one-line message): status is passed, failed or untested."""
    case = read_case(case_path)
    profile = load_profile(case.profile)
    requirement = profile.requirement(case.requirement)
    config = load_config(config_path)
    run = open_run(
        profile,
        target or config.get("target") or case.target,
        config=config,
        token=token,
        budget=case.budget,
        seed=case.seed,
        db_dir=None,
        binding=case.binding,
    )
    try:
        verdict = execute(requirement, run, reproduce=case.reproduce)
    finally:
        run.http.close()
    where = run.http.target
    if verdict.status == "failed":
        return "failed", f"FAIL {requirement.id} against {where} again: {verdict.message}"
    if verdict.status == "passed":
        return "passed", f"PASS {requirement.id} against {where}: the case no longer fails (was: {case.message})"
    return verdict.status, f"UNTESTED {requirement.id} against {where}: {verdict.message}"
