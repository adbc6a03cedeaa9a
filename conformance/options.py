"""The options of one run, parsed and checked once: ``conformance run`` builds them from
its arguments and hands them to the pytest plugin as they are (``pytest.main(plugins=
[...])``); ``pytest <profile>.yaml`` and each xdist worker build them from pytest's own
options. Every bad value is a ``ConfigError`` naming its option or file, in one line,
before the first exchange."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.budgets import BUDGETS
from conformance.config import ConfigError, UsageFailure, load_config, parse_duration, writable_dir
from conformance.launch import choose_binding, declared_features, deviations
from conformance.model import Profile
from conformance.report.baseline import Baseline, load_baseline
from conformance.targets import ALL  # --binding all: every binding of the profile
from conformance.transport.http import validate_target_url

LEVELS = ("must", "should", "may")
GATES = ("full", "live")


def asked_bindings(given: Any) -> tuple[str, ...]:
    """``--binding`` as given (repeatable, or comma-separated): the names, in order, once each."""
    values = [given] if isinstance(given, str) else list(given or ())
    names = [part.strip() for value in values for part in str(value).split(",") if part.strip()]
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class RunOptions:
    """What one run is asked to do. ``checked(profile)`` validates every value against the
    profile and returns the options with the config file read, the baseline loaded and the
    time limit in seconds."""

    target: str | None = None
    token: str | None = None
    config_path: str | None = None
    budget: str = "standard"
    seed: int = 1
    level: str = "must"
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    report: Path | None = None
    junit: Path | None = None
    faults: tuple[str, ...] = ()
    # as asked (--binding, repeatable; "all"); (): those the target declares, or the profile's first
    bindings: tuple[str, ...] = ()
    baseline_path: str | None = None
    allow_untested: bool = False
    gate: str = "full"
    max_time: str | None = None  # as given (900, 90s, 15m, 2h)
    # filled in by checked()
    config: dict[str, Any] = field(default_factory=dict)
    baseline: Baseline | None = None
    seconds: float = 0.0  # the time limit of the whole run

    @classmethod
    def from_pytest(cls, option: Any) -> RunOptions:
        """The options as pytest parsed them (conformance/plugin.py's ``pytest_addoption``)."""
        report = getattr(option, "conformance_report", None)
        return cls(target=option.target, token=option.token, config_path=option.conformance_config,
                   budget=option.budget, seed=option.seed, level=option.level, only=tuple(option.only or ()),
                   skip=tuple(option.skip or ()), report=Path(report) if report else None,
                   faults=tuple(option.fault or ()), bindings=asked_bindings(option.binding),
                   baseline_path=option.baseline,
                   allow_untested=bool(option.allow_untested),
                   gate=getattr(option, "conformance_gate", "full"),
                   max_time=getattr(option, "conformance_max_time", None))

    def checked(self, profile: Profile) -> RunOptions:
        """These options, every value checked against ``profile`` (ConfigError names the first bad one)."""
        if self.budget not in BUDGETS:
            raise ConfigError(f"unknown budget {self.budget!r} (quick, standard, deep)")
        if self.level not in LEVELS:
            raise ConfigError(f"--level {self.level!r} is not one of {', '.join(LEVELS)}")
        if self.gate not in GATES:
            raise ConfigError(f"--gate {self.gate!r} is not one of {', '.join(GATES)}")
        unknown = sorted(p for p in set(self.only) | set(self.skip)
                         if not any(fnmatch.fnmatchcase(r.id, p) for r in profile.requirements))
        if unknown:
            raise UsageFailure(f"unknown requirement(s) {unknown}: no ID matches "
                               f"(see `conformance list {profile.name}`)")
        config = load_config(self.config_path)
        declared_features(profile, config.get("declared") or [])
        target = self.target or config.get("target")
        if target and target != "reference":
            try:
                validate_target_url(target)
            except ValueError as exc:
                raise ConfigError(str(exc)) from exc
        elif self.faults:
            deviations(profile, self.faults)
        if self.faults and target not in (None, "reference"):
            raise ConfigError("--fault applies to the built-in reference only")
        seconds = (parse_duration(self.max_time) if self.max_time is not None
                   else BUDGETS[self.budget].max_time)
        if self.report is not None:
            writable_dir(self.report, "--report")
        if self.junit is not None:
            writable_dir(self.junit.parent, "--junit folder")
            if self.junit.is_dir():
                raise UsageFailure(f"--junit {self.junit} is a folder (expected a file path, e.g. junit.xml)")
        for binding in self.bindings:
            if binding != ALL:
                choose_binding(profile, binding)
        baseline = None
        if self.baseline_path:
            baseline = Baseline(load_baseline(self.baseline_path, {r.id for r in profile.requirements},
                                              list(profile.settings.get("bindings") or {})),
                                self.baseline_path)
        return replace(self, config=config, baseline=baseline, seconds=seconds)

    def pytest_args(self) -> list[str]:
        """These options as the plugin's pytest options (xdist workers read them from there)."""
        args = ["--budget", self.budget, "--seed", str(self.seed), "--level", self.level]
        for flag, value in (("--target", self.target), ("--token", self.token),
                            ("--config", self.config_path), ("--baseline", self.baseline_path),
                            ("--max-time", self.max_time), ("--report", self.report)):
            if value is not None:
                args += [flag, str(value)]
        for flag, values in (("--only", self.only), ("--skip", self.skip), ("--fault", self.faults),
                             ("--binding", self.bindings)):
            for value in values:
                args += [flag, value]
        if self.allow_untested:
            args.append("--allow-untested")
        if self.gate != "full":
            args += ["--gate", self.gate]
        return args
