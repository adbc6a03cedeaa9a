"""A run against the built-in reference without its control interface, as an operator's
live server is run: what it did to each configured identity, what share of the
requirements a client can test reached a verdict, and what each spent of each quota.

The project's tests use it to prove a live run does no harm (every profile's package
answers ``holdings(reference, credentials)``); ``python -m conformance.proofs.liverun PROFILE``
prints the figures and, with ``--write-quota-use``, measures each requirement's use of
each quota into the protocol folder's ``quota_use.yaml``, which plans live runs."""

from __future__ import annotations

import argparse
import copy
import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.kit.check import RunContext
from conformance.kit.live import BEYOND_A_CLIENT
from conformance.model import Profile, Requirement
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile, protocol_of
from conformance.run.runner import Verdict, execute

REACHED = ("passed", "failed", "expected_failure")


@dataclass
class LiveRun:
    run: RunContext
    verdicts: list[tuple[Requirement, Verdict]]
    before: dict[str, Any]
    after: dict[str, Any]
    problems: list[str] = field(default_factory=list)  # what the run did to an identity it must not have

    def count(self, *statuses: str, reason: str | None = None) -> int:
        return sum(v.status in statuses and (reason is None or v.reason == reason) for _, v in self.verdicts)

    @property
    def testable(self) -> int:
        """Requirements a client of the protocol can test at all: all but those that need
        control, those that need an outcome only the operator's scenarios reach, and those that
        do not apply."""
        beyond = ("control", "outcome")
        return sum(v.status != "skipped" and not (v.status == "untested" and v.reason in beyond)
                   for _, v in self.verdicts)

    @property
    def reached(self) -> int:
        return self.count(*REACHED)

    def figures(self) -> str:
        reasons = {r: self.count("untested", reason=r) for r in ("control", "harm", "quota", "outcome")}
        share = self.reached / self.testable if self.testable else 0.0
        return (f"{self.run.profile.name}: {self.reached} of {self.testable} client-testable "
                f"requirements reached a verdict ({share:.0%}); {self.count('passed')} passed, "
                f"{self.count('failed')} failed, {self.count('blocked')} blocked, "
                f"{self.count('untested')} untested ({reasons['control']} need control, "
                f"{reasons['harm']} would harm a configured identity, {reasons['quota']} would exceed a "
                f"quota, {reasons['outcome']} need the operator's scenarios); not put back: "
                f"{len(self.run.not_put_back)}")


def compare_holdings(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What changed for good: each identity's ``same`` facts must be equal, and each of
    its ``kept`` collections must still hold everything it held."""
    problems = []
    for label, was in before.items():
        now = after.get(label)
        if now is None:
            problems.append(f"{label}: gone")
            continue
        for key, value in (was.get("same") or {}).items():
            if now.get("same", {}).get(key) != value:
                problems.append(f"{label}: {key} was {value!r}, is {now.get('same', {}).get(key)!r}")
        for key, items in (was.get("kept") or {}).items():
            lost = set(items) - set(now.get("kept", {}).get(key) or ())
            if lost:
                problems.append(f"{label}: {key} lost {sorted(map(str, lost))[:5]}")
    return problems


def holdings_of(profile: Profile, run: RunContext) -> dict[str, Any]:
    configured = {label: value for label, value in run.credentials.items()
                  if label not in run.identities.created}
    return dict(protocol_of(profile.settings["package"]).holdings(run.reference, configured))


def run_without_control(name: str, *, budget: str = "quick", seed: int = 1, only: Iterable[str] | None = None,
                        faults: tuple[str, ...] = (), config: dict[str, Any] | None = None,
                        shapes: int | None = None,
                        **options: Any) -> LiveRun:
    """Every requirement (or those of ``only``) against the reference with control off, in
    the profile's order, one after another: as a live run against an operator's server,
    whose config names the seeded world (``world:``) as ``serve --write-config`` does."""
    profile = copy.copy(load_profile(name))
    config = {"world": dict(profile.reference_world), **(config or {})}
    run = open_run(profile, "reference", budget=budget, seed=seed, faults=faults, config=config,
                   reference_options={"control": False, **options}, shrink=False, shapes=shapes)
    chosen = set(only) if only is not None else None
    before = holdings_of(profile, run)
    verdicts = [(req, execute(req, run)) for req in profile.requirements
                if chosen is None or req.id in chosen]
    after = holdings_of(profile, run)
    return LiveRun(run, verdicts, before, after, compare_holdings(before, after))


def quota_use(live: LiveRun) -> dict[str, dict[str, dict[str, int]]]:
    """Each requirement's spending on configured identities (fresh ones start with room)."""
    configured = set(live.run.profile.reference_credentials) | {"source", "service"}
    out: dict[str, dict[str, dict[str, int]]] = {}
    for req, verdict in live.verdicts:
        use = {q: {w: n for w, n in per.items() if w in configured and n} for q, per in verdict.spent.items()}
        use = {q: per for q, per in use.items() if per}
        if use:
            out[req.id] = use
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.proofs.liverun", description=__doc__)
    parser.add_argument("profile")
    parser.add_argument("--budget", default="quick")
    parser.add_argument("--write-quota-use", action="store_true",
                        help="write the protocol folder's quota_use.yaml from this run's spending")
    args = parser.parse_args(argv)
    live = run_without_control(args.profile, budget=args.budget)
    print(live.figures())
    for problem in live.problems + live.run.not_put_back:
        print(f"  harm: {problem}")
    for req, verdict in live.verdicts:
        if verdict.status in ("failed", "blocked") or (verdict.status == "untested"
                                                       and verdict.reason not in BEYOND_A_CLIENT):
            print(f"  {verdict.status:8} {verdict.reason:10} {req.id}: {verdict.message[:200]}")
    if args.write_quota_use:
        package = importlib.import_module(live.run.profile.settings["package"])
        path = Path(str(package.__file__)).parent / "quota_use.yaml"
        header = ("# Each requirement's use of each quota, measured against the reference without control\n"
                  f"# (python -m conformance.proofs.liverun {args.profile} --write-quota-use): "
                  "plans live runs.\n")
        path.write_text(header + yaml.safe_dump(quota_use(live), sort_keys=True), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
