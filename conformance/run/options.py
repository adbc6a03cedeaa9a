"""The options of one run, spelled once (``RUN_OPTIONS``: each option's flag, field, default
and help, which give `conformance run`'s arguments, the pytest plugin's options and
``RunOptions``) and checked once: ``conformance run`` builds them from its arguments and
hands them to the pytest plugin as they are (``pytest.main(plugins=[...])``); ``pytest
<profile>.yaml`` and each xdist worker build them from pytest's own options. Every bad
value is a ``ConfigError`` naming its option or file, in one line, before the first
exchange."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.budgets import BUDGETS
from conformance.model import Profile
from conformance.report.baseline import Baseline, load_baseline
from conformance.run.config import ConfigError, UsageFailure, load_config, parse_duration, writable_dir
from conformance.run.launch import choose_binding, declared_features, deviations
from conformance.run.targets import ALL  # --binding all: every binding of the profile
from conformance.transport.http import validate_target_url

LEVELS = ("must", "should", "may")
GATES = ("full", "live")


@dataclass(frozen=True)
class Option:
    """One option of a run: its flag, the ``RunOptions`` field it fills, and how it is given
    (``kind``: "value", "many" for a repeatable one, held as a tuple, or "switch")."""

    flag: str
    field: str
    help: str
    default: Any = None
    kind: str = "value"
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    pytest: bool = True  # also a pytest option (`--junit` is pytest's own --junitxml there)
    env: str | None = None  # the command's default comes from this environment variable

    def add(self, add: Callable[..., Any], *, dest: str, help: str | None = None,
            environ: bool = False) -> None:
        """Add it with ``add`` (argparse's ``add_argument`` or pytest's ``addoption``)."""
        options: dict[str, Any] = {"dest": dest, "help": help or self.help}
        if self.kind == "switch":
            options.update(action="store_true")
        elif self.kind == "many":
            options.update(action="append", default=[])
        elif environ and self.env:
            options["default"] = os.environ.get(self.env, self.default)
        else:
            options["default"] = self.default
        if self.type is not None:
            options["type"] = self.type
        if self.choices is not None:
            options["choices"] = list(self.choices)
        if self.metavar is not None:
            options["metavar"] = self.metavar
        add(self.flag, **options)


RUN_OPTIONS: tuple[Option, ...] = (
    Option("--target", "target", metavar="URL",
           help="'reference' (the built-in reference, in-process; default) or an http(s) URL"),
    Option("--token", "token", env="CONFORMANCE_TOKEN", metavar="TOKEN",
           help="bearer token of the main caller (credential 'full'; default $CONFORMANCE_TOKEN); never "
                "written to reports"),
    Option("--config", "config_path", metavar="FILE",
           help="YAML run config: credentials, control, timeout and more (README)"),
    Option("--budget", "budget", default="standard", choices=("quick", "standard", "deep"),
           help="examples per generated property and state-machine runs (default standard)"),
    Option("--seed", "seed", default=1, type=int,
           help="hypothesis seed; the same seed replays the same run (default 1)"),
    Option("--level", "level", default="must", choices=("must", "should", "may"),
           help="lowest level whose failure fails the run (default must)"),
    Option("--only", "only", kind="many", metavar="ID",
           help="run only this requirement, an ID or a glob such as 'PLAZA-RECV-*' (repeatable); others are "
                "reported skipped"),
    Option("--skip", "skip", kind="many", metavar="ID",
           help="do not run this requirement, an ID or a glob (repeatable); it is reported skipped and, as "
                "with --only, the run is left ungraded"),
    Option("--report", "report", metavar="DIR", type=Path,
           help="report directory (default reports/<profile>-<timestamp>)"),
    Option("--junit", "junit", metavar="FILE", type=Path, pytest=False,
           help="JUnit XML path (default <report>/junit.xml)"),
    Option("--fault", "faults", kind="many", metavar="NAME",
           help="inject a named fault (or variant) into the built-in reference (repeatable; see "
                "`conformance list PROFILE`)"),
    Option("--binding", "bindings", kind="many", metavar="NAME",
           help="a binding of the profile to speak (repeatable or comma-separated; 'all' for each of them; "
                "canon-verbs: http, mcp). Default: each one the target declares (a2a: the agent card's "
                "interfaces), else the profile's first. A run over several is one run: one stop signal, one "
                "summary.json (a row per requirement and binding), one JUnit file (a suite per binding), one "
                "report.html"),
    Option("--baseline", "baseline_path", metavar="FILE",
           help="YAML list of known failures (id, reason, issue): listed failures do not fail the run, "
                "unlisted ones and stale entries do"),
    Option("--allow-untested", "allow_untested", default=False, kind="switch",
           help="exit 0 even when a gating requirement stayed untested or blocked (missing credentials or "
                "control); by default that exits 5, so a gate never passes on nothing"),
    Option("--gate", "gate", default="full", choices=("full", "live"),
           help="full (default): every gating requirement must run and hold. live: for a server without a "
                "control interface: exit 0 when every gating requirement a client can test without control "
                "ran and held (never on nothing); those that need control, or would harm a configured "
                "identity not marked disposable, are counted in every report (\"MUST-compliant on N of M; K "
                "need the test-control interface\") instead of exiting 5"),
    Option("--max-time", "max_time", metavar="DURATION",
           help="wall-clock limit of the whole run: seconds, or 90s, 15m, 2h (default per budget); then the "
                "rest is untested, exit 3"),
)
PYTEST_DEST = "conformance_"  # pytest's dest of an option: its field with this prefix (no plugin clash)


# what `conformance fuzz` shares with a run: the same flags, fields and checks (cli.py adds its own)
FUZZ_OPTIONS = ("--target", "--token", "--config", "--seed", "--level", "--report", "--fault", "--only",
                "--binding", "--baseline", "--junit")


def add_run_options(add: Callable[..., Any], *, pytest: bool = False,
                    helps: dict[str, str] | None = None, flags: tuple[str, ...] | None = None) -> None:
    """Every option of a run (or those ``flags`` name), added with ``add``: a command's
    arguments (dest: the field; the token's default from the environment), or with ``pytest``
    the plugin's options (dest: the field prefixed), ``helps`` replacing a flag's help."""
    for option in RUN_OPTIONS:
        if (pytest and not option.pytest) or (flags is not None and option.flag not in flags):
            continue
        option.add(add, dest=(PYTEST_DEST if pytest else "") + option.field,
                   help=(helps or {}).get(option.flag), environ=not pytest)


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
    def given(cls, parsed: Any, prefix: str = "", **chosen: Any) -> RunOptions:
        """The options as argparse (``prefix`` "") or pytest (``PYTEST_DEST``) parsed them,
        ``chosen`` replacing what the caller decided itself (the report folder, say)."""
        values: dict[str, Any] = {}
        for option in RUN_OPTIONS:
            value = getattr(parsed, prefix + option.field, option.default)
            if option.kind == "many":
                value = asked_bindings(value) if option.field == "bindings" else tuple(value or ())
            elif option.kind == "switch":
                value = bool(value)
            elif option.type is Path and value is not None:
                value = Path(value)
            values[option.field] = value
        return cls(**{**values, **chosen})

    @classmethod
    def from_pytest(cls, option: Any) -> RunOptions:
        """The options as pytest parsed them (conformance/drivers/plugin.py's ``pytest_addoption``)."""
        return cls.given(option, PYTEST_DEST)

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
        args: list[str] = []
        for option in RUN_OPTIONS:
            value = getattr(self, option.field)
            if not option.pytest or value is None:
                continue
            if option.kind == "switch":
                args += [option.flag] if value else []
            elif option.kind == "many":
                args += [word for one in value for word in (option.flag, str(one))]
            else:
                args += [option.flag, str(value)]
        return args
