"""Replaying a saved case: the same requirement, the same generated example
(hypothesis's reproduce blob), sent again to a target and judged again; each request it
sends is shown as it goes (a curl line to paste, and the answer's status)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conformance.model import Case
from conformance.report.cases import read_case
from conformance.run.config import load_config
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute
from conformance.transport.http import curl_line


def replay(case_path: Path, target: str | None = None, config_path: str | None = None,
           token: str | None = None, binding: str | None = None,
           show: Callable[[str], None] | None = None) -> tuple[str, str]:
    """Return (status, one-line message): status is passed, failed or untested."""
    return replay_case(read_case(case_path), target, config_path, token, binding=binding, show=show)


def replay_case(case: Case, target: str | None = None, config_path: str | None = None,
                token: str | None = None, binding: str | None = None,
                show: Callable[[str], None] | None = None) -> tuple[str, str]:
    """Send a case again (over ``binding``, by default the case's own) and judge it with the
    same requirement; ``show`` is given each request as it is sent (a curl line) with the
    status it got."""
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
        binding=binding or case.binding,
    )
    if show is not None:
        def shown() -> None:
            exchange = run.http.log[-1]
            status = (exchange.response or {}).get("status")
            got = f"HTTP {status}" if status is not None else f"no answer: {exchange.error}"
            line = curl_line(exchange, run.http.target if run.http.live else "$TARGET")
            show(f"{line}\n  # -> {got} in {exchange.elapsed_ms:.0f} ms")
        run.http.on_exchange = shown
    try:
        verdict = execute(requirement, run, reproduce=case.reproduce)
    finally:
        run.http.close()
    where = run.http.target + (f" over {run.binding}" if run.binding else "")
    if verdict.status == "failed":
        return "failed", f"FAIL {requirement.id} against {where} again: {verdict.message}"
    if verdict.status == "passed":
        return ("passed",
                f"PASS {requirement.id} against {where}: the case no longer fails (was: {case.message})")
    return verdict.status, f"UNTESTED {requirement.id} against {where}: {verdict.message}"


PYTEST_TEMPLATE = """\"\"\"Reproducer of {requirement} ({title}), written by `conformance replay --pytest`.

Runs the same requirement with the same generated example against a target:
    CONFORMANCE_TARGET=http://127.0.0.1:3773 [CONFORMANCE_CONFIG=conformance.yaml] pytest {filename}
It fails while the target still breaks the requirement.\"\"\"

import json
import os

from conformance.model import Case
from conformance.drivers.replay import replay_case

CASE = json.loads({case_json!r})


def test_{func}():
    target = os.environ.get("CONFORMANCE_TARGET") or CASE["target"]
    status, message = replay_case(Case.from_json(CASE), target=target, \
config_path=os.environ.get("CONFORMANCE_CONFIG"))
    assert status == "passed", message
"""


def pytest_reproducer(case_path: Path) -> str:
    """A standalone pytest file that replays the case (target from CONFORMANCE_TARGET)."""
    import json
    import re

    case = read_case(case_path)
    return PYTEST_TEMPLATE.format(
        requirement=case.requirement,
        title=case.title,
        filename=f"test_{re.sub(r'[^a-z0-9]+', '_', case.requirement.lower())}.py",
        case_json=json.dumps(case.to_json()),
        func=re.sub(r"[^a-z0-9]+", "_", case.requirement.lower()),
    )
