"""The pytest plugin: a profile YAML collects as one test item per requirement and binding
the run speaks (test id = requirement ID, ``ID[binding]`` when it speaks several), run against
the target the options name; at the end one summary.json, one JUnit file, one report.html,
the case files and the exit code are written for all of them.

Used by `conformance run`, and directly: ``pytest profiles/bindu.yaml --target URL``."""

from __future__ import annotations

import fnmatch
import json
import signal
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conformance.kit.check import RunContext
from conformance.model import Case, Profile, Requirement
from conformance.report.badge import write_badge
from conformance.report.baseline import Baseline
from conformance.report.cases import write_case
from conformance.report.console import closing_lines
from conformance.report.html import write_html
from conformance.report.junit import junit_properties, split_by_binding, write_junit
from conformance.report.summary import Result, build_summary, exit_code, row_label, write_summary
from conformance.run.config import ConfigError
from conformance.run.launch import choose_binding, open_run
from conformance.run.options import RunOptions, add_run_options
from conformance.run.parallel import AloneLast, distributed, is_worker, runs_alone
from conformance.run.preflight import preflight
from conformance.run.profiles import ProfileError, is_profile_file, load_profile, profile_path
from conformance.run.runner import Verdict, execute, verdict_from_json, verdict_to_json
from conformance.run.targets import Declared, declared, run_bindings
from conformance.transport.http import (
    Redactor,
    write_stop_file,
)

STASH = pytest.StashKey["RunSession"]()
EXIT_KEY = pytest.StashKey[int]()  # the run's own exit code (pytest's codes mean other things)
OPTIONS = pytest.StashKey["RunOptions"]()  # the run's options, checked once
PLAN = pytest.StashKey["Plan"]()  # the bindings the run speaks, and what the target said of itself


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "conformance: run a protocol profile against a target")
    add_run_options(group.addoption, pytest=True)  # options.py RUN_OPTIONS, as `conformance run` takes them
    group.addoption("--conformance-console", action="store_true",
                    help="print one line per requirement and a summary")
    group.addoption("--conformance-profile", default=None, metavar="NAME",
                    help="run this built-in profile (e.g. bindu) without naming its file: "
                         "`pytest --conformance-profile bindu --target URL`")


def profile_run(config: pytest.Config) -> bool:
    """This pytest session runs a profile (not some other project's tests)."""
    return bool(config.getoption("conformance_profile", None)) or any(
        is_profile_file(Path(str(a).split("::")[0])) for a in config.args)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """``pytest PROFILE.yaml`` (or ``--conformance-profile NAME``) writes what `conformance
    run` writes: the report folder with its JUnit file and Allure results; its worker
    count comes from the command line only, never from a project's ini ``addopts``."""
    if is_worker(config) or not profile_run(config):
        return
    opt = config.option
    name = opt.conformance_profile
    if name:
        try:
            path = str(profile_path(name))
        except ProfileError as exc:
            raise pytest.UsageError(str(exc)) from None
        # the profile alone, unless files were named too (not the folder pytest would search)
        config.args[:] = ([*config.args, path] if config.args_source == pytest.Config.ArgsSource.ARGS
                          else [path])
    typed = config.invocation_params.args
    if not any(str(a).startswith(("-n", "--numprocesses", "--dist", "-d")) for a in typed):
        opt.numprocesses, opt.dist, opt.tx = None, "no", []  # e.g. the kit's own pyproject: -n auto
    if not opt.conformance_report:
        stem = name or next(Path(str(a).split("::")[0]).stem for a in config.args
                            if is_profile_file(Path(str(a).split("::")[0])))
        opt.conformance_report = f"reports/{stem}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    if not getattr(opt, "xmlpath", None):
        opt.xmlpath = str(Path(opt.conformance_report) / "junit.xml")
    if hasattr(opt, "allure_report_dir") and not opt.allure_report_dir:
        opt.allure_report_dir = str(Path(opt.conformance_report) / "allure-results")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if is_profile_file(file_path):
        return ProfileFile.from_parent(parent, path=file_path)
    return None


class ProfileFile(pytest.File):
    def collect(self):
        profile = load_profile(self.path.stem, self.path)
        bindings = plan_of(self.config, profile).bindings
        several = len(bindings) > 1
        for binding in bindings:
            for req in profile.requirements:
                yield RequirementItem.from_parent(self, name=row_label(req.id, binding, several),
                                                  requirement=req, profile=profile, binding=binding)


class Plan:
    """What a run speaks: its ``bindings`` in order, and ``about``, what the target said of
    itself (name, version, where); ``said`` whether the bindings are the target's choice."""

    def __init__(self, bindings: list[str | None], about: dict[str, str], said: bool) -> None:
        self.bindings, self.about, self.said = bindings, about, said


def session_options(config: pytest.Config, profile: Profile) -> RunOptions:
    """The run's options, checked once (ConfigError names the first bad value): as `conformance
    run` passed them, or from pytest's own options (a worker: in its controller's folder)."""
    options = config.stash.get(OPTIONS, None)
    if options is not None:
        return options
    worker = is_worker(config)
    options = given_options(config) if not worker else None
    if options is None:
        opt = config.option
        options = RunOptions.from_pytest(opt)
        chosen = (config.workerinput["conformance_report"]  # type: ignore[attr-defined]
                  if worker else opt.conformance_report)
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        options = replace(options, report=Path(chosen or f"reports/{profile.name}-{stamp}")).checked(profile)
    config.stash[OPTIONS] = options
    return options


def plan_of(config: pytest.Config, profile: Profile) -> Plan:
    """The bindings the run speaks (a worker takes its controller's, so that every process
    collects the same items) and what the target said of itself, asked once."""
    plan = config.stash.get(PLAN, None)
    if plan is not None:
        return plan
    if is_worker(config) and "conformance_bindings" in config.workerinput:  # type: ignore[attr-defined]
        given = json.loads(config.workerinput["conformance_bindings"])  # type: ignore[attr-defined]
        plan = Plan(given["bindings"], given["about"], given["said"])
    else:
        try:
            options = session_options(config, profile)
        except ConfigError:  # said in one line when the run opens (pytest_collection_finish)
            plan = Plan(run_bindings(profile, (), Declared()), {}, False)
        else:
            said = declared(profile, options.target, options.config, options.faults)
            plan = Plan(run_bindings(profile, options.bindings, said), said.about,
                        not options.bindings and len(said.bindings) > 0)
    config.stash[PLAN] = plan
    return plan


class RequirementFailed(Exception):
    pass


class RequirementItem(pytest.Item):
    def __init__(self, *, requirement: Requirement, profile: Profile, binding: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.requirement = requirement
        self.profile = profile
        self.binding = binding
        self.user_properties += [
            ("level", requirement.level),
            ("title", requirement.title),
            ("source", str(requirement.source)),
            *([("binding", binding)] if binding else []),
        ]

    def runtest(self) -> None:
        session = run_session(self.config, self.profile)
        session.nodeids[(self.requirement.id, self.binding)] = self.nodeid
        result = self.result = session.run(self.requirement, self.binding)
        attach_to_allure(self.requirement, result)
        if result.verdict.status == "failed":
            where = f" [case: {result.case}]" if result.case else ""
            raise RequirementFailed(f"{self.requirement.level}: {result.verdict.message}{where}")
        if result.stale:
            raise RequirementFailed(result.stale)
        if result.verdict.status == "expected_failure":
            pytest.xfail(f"baseline: {(result.baseline or {}).get('reason', '')}: {result.verdict.message}")
        if result.verdict.status in ("untested", "skipped", "blocked"):
            pytest.skip(f"{result.verdict.status}: {result.verdict.message}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, RequirementFailed):
            return f"{self.requirement.id} ({self.requirement.title}): {excinfo.value}"
        return super().repr_failure(excinfo)  # type: ignore[return-value]

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, self.name


def attach_to_allure(req: Requirement, result: Result) -> None:
    try:
        import allure
    except ImportError:  # pragma: no cover - allure-pytest is a dependency
        return
    allure.dynamic.label("level", req.level)
    if result.binding:
        allure.dynamic.label("binding", result.binding)
    allure.dynamic.severity({"MUST": "critical", "SHOULD": "normal", "MAY": "minor"}[req.level])
    allure.dynamic.description(f"{req.title}\n\nSource: {req.source}")
    if result.verdict.exchanges:
        body = json.dumps([e.to_json() for e in result.verdict.exchanges], indent=2)
        allure.attach(body, name="exchanges", attachment_type=allure.attachment_type.JSON)


class Console:
    """One line per requirement and a live progress line on long runs."""

    def __init__(self, enabled: bool, redact: Redactor | None = None) -> None:
        self.enabled = enabled
        self.tty = enabled and sys.stdout.isatty()
        self.redact = redact or Redactor()
        self._last = 0.0

    def line(self, text: str = "") -> None:
        if self.enabled:
            if self.tty:
                sys.stdout.write("\r\033[K")
            print(self.redact(text), flush=True)

    def progress(self, text: str) -> None:
        now = time.monotonic()
        if self.tty and now - self._last > 0.2:
            self._last = now
            sys.stdout.write("\r\033[K" + self.redact(text)[:100])
            sys.stdout.flush()


def one_line(message: str, width: int = 240) -> str:
    """A verdict message for one console line: the quoted answer is cut, never the
    statement it breaks (``[breaks: ...]`` at the end) nor the case's path."""
    message = " ".join(message.split())
    if len(message) <= width:
        return message
    head, sep, tail = message.rpartition(" [breaks: ")
    if not sep:
        head, tail = message, ""
    tail = sep + tail
    room = max(width - len(tail), 80)
    return head[:room].rstrip() + " ..." + tail


MARK = {"passed": "PASS ", "failed": "FAIL ", "blocked": "BLOCKED", "untested": "UNTESTED",
        "skipped": "SKIP ", "not_applicable": "N/A ",
        "expected_failure": "XFAIL"}


class RunSession:
    """The state of one run: target, the bindings it speaks (a run context each), results,
    report directory. One stop signal stops every binding; one set of reports holds them all."""

    def __init__(self, config: pytest.Config, profile: Profile) -> None:
        opt = config.option
        # serial: runs and reports; worker (xdist): runs, its verdicts travel on the test
        # reports; controller (xdist): receives them and reports
        self.role = "worker" if is_worker(config) else "controller" if distributed(config) else "serial"
        self.config = config
        self.profile = profile
        options = self.options = session_options(config, profile)
        plan = plan_of(config, profile)
        self.bindings: list[str | None] = list(plan.bindings)
        self.several = len(self.bindings) > 1
        self.about = dict(plan.about)
        self.gate = options.level
        self.only = set(options.only)
        self.skip = set(options.skip)
        self.allow_untested = options.allow_untested
        self.live_gate = options.gate == "live"
        self.budget = options.budget
        self.started_at = datetime.now(UTC)
        self.t0 = time.perf_counter()
        assert options.report is not None  # checked() made it a writable folder
        self.report_dir = options.report
        self.console = Console(bool(opt.conformance_console) and self.role != "worker")
        self.from_workers: dict[str, Any] = {"exchanges": 0, "unreachable": {}, "stopped": None}
        # (requirement id, binding) -> pytest node id, of the items that reported
        self.nodeids: dict[tuple[str, str | None], str] = {}
        self.outbox: dict[str, Any] | None = None  # a worker's payload of the requirement it just ran
        self.results: list[Result] = []
        self.not_run = 0  # requirements reached after the run was stopped (one line for all)
        self.closing: list[str] = []  # the verdict lines at the end (pytest's own terminal shows them too)
        self.signalled = False
        self.stop_reason: str | None = None  # why every binding stops (a signal), once it does
        self.config_path: str | None = options.config_path
        self.said_unreachable: set[str | None] = set()  # bindings whose "target unreachable" was printed
        max_time = options.seconds
        self.runs: dict[str | None, RunContext] = {}
        for binding in self.bindings:
            self.runs[binding] = open_run(
                profile,
                options.target,
                config=options.config,
                token=options.token,
                faults=options.faults,
                budget=options.budget,
                seed=options.seed,
                db_dir=self.report_dir.parent / ".hypothesis",
                binding=binding,
                max_time=max_time,
            )
        self.run_ctx: RunContext = self.runs[self.bindings[0]]  # the target, the redactor: one for all
        self.console.redact = self.run_ctx.http.redact
        # the controller tells its workers to stop through this file (a signal may reach the
        # controller alone); a serial run or the controller starts without one
        self.stop_file = self.report_dir / ".stop"
        for run in self.runs.values():
            if self.role == "worker":
                run.http.stop_file = self.stop_file
            run.http.on_exchange = self._tick
        if self.role != "worker":
            self.stop_file.unlink(missing_ok=True)
        self.baseline: Baseline | None = options.baseline
        self.current = ""
        spoken = ", ".join(str(b) for b in self.bindings if b)
        mine = list(profile.settings.get("bindings") or {})
        why = (" (each one the target declares)" if plan.said and self.several
               else f" (the profile's first: --binding all speaks each of {', '.join(mine)})"
               if len(mine) > 1 and not options.bindings and not plan.said else "")
        self.console.line(
            f"conformance: profile {profile.name} ({profile.spec_relpath}) against {self.run_ctx.target}"
            f"{' over ' + spoken + why if spoken else ''}, "
            f"budget {self.budget}, seed {options.seed}, time limit {max_time:g} s"
        )
        # every process of the run stops the same way: after the exchange in flight, the
        # rest untested, the reports written (a worker's verdicts still reach the controller)
        self._previous_handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for sig in self._previous_handlers:
                signal.signal(sig, self._on_signal)
        except ValueError:  # not the main thread: leave signals alone
            self._previous_handlers = {}
        self.preflight()

    def over(self, binding: str | None) -> str:
        """" over <binding>" where the run speaks several, else nothing."""
        return f" over {binding}" if self.several and binding else ""

    def _on_signal(self, signum: int, frame: Any) -> None:
        """First signal: stop after the current exchange and write the reports.
        Second: stop at once (the reports are still written)."""
        name = signal.Signals(signum).name
        if self.signalled:
            raise KeyboardInterrupt
        self.stop(f"interrupted by {name}")
        self.console.line(f"{name}: stopping after the current exchange and writing the reports "
                          "(send it again to stop at once)")

    def stop(self, reason: str) -> None:
        """Stop the run: every binding of this process after its exchange in flight, and every worker."""
        self.signalled = True
        self.stop_reason = self.stop_reason or reason
        for run in self.runs.values():
            run.http.stopped = run.http.stopped or reason
        if self.role == "controller":
            write_stop_file(self.stop_file, reason)

    @property
    def exchanges(self) -> int:
        return sum(run.http.total for run in self.runs.values())

    def _tick(self) -> None:
        self.console.progress(f"  ... {self.current}: {self.exchanges} exchanges")

    def preflight(self) -> None:
        """Stop early, with one line, when the target is unreachable or does not speak the
        protocol (over a binding: the others are still tried, unless the target gave no
        answer at all)."""
        said: dict[str, list[str]] = {}  # line -> the bindings it is about
        refused: dict[str, str] = {}
        self.preflight_exchanges = 0
        gone = ""
        for binding, run in self.runs.items():
            if run.http.stopped:
                continue
            if gone:  # the target answered nothing over the first: no other binding is tried
                run.unreachable = gone
                said.setdefault(f"error: {gone}", []).append(str(binding))
                continue
            found = preflight(run)
            if found.unreachable:
                said.setdefault(f"error: {found.unreachable}", []).append(str(binding))
                gone = found.unreachable if run.http.dead else ""
            elif found.note:
                said.setdefault(f"note: {found.note}", []).append(str(binding))
            for label, why in found.refused.items():
                refused.setdefault(label, why)
            self.preflight_exchanges += run.http.total  # the probe and the credential checks
        for line, bindings in said.items():
            some = self.several and len(bindings) < len(self.bindings)
            where = f" (over {', '.join(bindings)})" if some else ""
            self.console.line(line + where)
            if line.startswith("error: "):
                self.said_unreachable |= {b for b in self.bindings if str(b) in bindings}
        for label, why in refused.items():
            self.console.line(f"credential {label!r} {why}: the requirements that send it are untested")

    def run(self, req: Requirement, binding: str | None = None) -> Result:
        self.current = row_label(req.id, binding, self.several)
        run = self.runs[binding]
        if self.stop_reason:
            run.http.stopped = run.http.stopped or self.stop_reason
        stopped_before = bool(run.unreachable or run.http.stopped)
        result = self.execute(req, binding)
        self.record(result, stopped_before)
        if self.role == "worker":
            self.outbox = self.payload(result, stopped_before)
        return result

    def payload(self, result: Result, stopped_before: bool) -> dict[str, Any]:
        """What a worker sends the controller about one row."""
        run = self.runs[result.binding]
        return {"id": result.requirement.id, "binding": result.binding,
                "verdict": verdict_to_json(result.verdict), "case": result.case,
                "baseline": result.baseline, "stale": result.stale, "stopped_before": stopped_before,
                "unreachable": run.unreachable, "stopped": run.http.stopped or None,
                "signalled": self.signalled, "refused": dict(run.refused),
                "not_put_back": list(run.not_put_back)}

    def receive(self, data: dict[str, Any]) -> None:
        """The controller's side of ``payload``."""
        req = next(r for r in self.profile.requirements if r.id == data["id"])
        binding = data.get("binding")
        result = Result(req, verdict_from_json(data["verdict"]), data["case"], data["baseline"],
                        data["stale"], binding)
        if result.stale and self.baseline:
            self.baseline.stale.append(result.stale)
        self.from_workers["exchanges"] += result.verdict.exchange_count
        if data["unreachable"]:
            self.from_workers["unreachable"].setdefault(str(binding), data["unreachable"])
        self.from_workers["stopped"] = self.from_workers["stopped"] or data["stopped"]
        if data["signalled"] and not self.signalled:  # a worker was signalled alone: all stop
            self.stop(data["stopped"] or "interrupted")
        run = self.runs.get(binding, self.run_ctx)
        for label, why in data.get("refused", {}).items():
            run.refused.setdefault(label, why)
        for problem in data.get("not_put_back", []):
            if problem not in run.not_put_back:
                run.not_put_back.append(problem)
        self.record(result, data["stopped_before"], data["unreachable"])

    def selected(self, rid: str) -> bool:
        """Chosen by --only (ids or globs), or no --only given, and not named by --skip."""
        def named(patterns: set[str]) -> bool:
            return any(fnmatch.fnmatchcase(rid, pattern) for pattern in patterns)
        return (not self.only or named(self.only)) and not named(self.skip)

    def execute(self, req: Requirement, binding: str | None) -> Result:
        run = self.runs[binding]
        if not self.selected(req.id):
            return Result(req, Verdict("skipped", "not selected by --only / --skip"), binding=binding)
        verdict = execute(req, run)
        result = Result(req, verdict, binding=binding)
        if verdict.status == "failed":
            case = Case(
                profile=self.profile.name,
                requirement=req.id,
                level=req.level,
                title=req.title,
                source=req.source.to_json(),
                target=run.target,
                seed=run.seed,
                budget=self.budget,
                message=verdict.message,
                exchanges=verdict.exchanges,
                reproduce=verdict.reproduce,
                binding=run.binding,
                failures=verdict.failures,
            )
            stem = f"{req.id}.{binding}" if self.several and binding else req.id
            path = write_case(self.report_dir / "cases", case, stem=stem)
            result.case = str(path.relative_to(self.report_dir))
        if self.baseline:
            status, entry, result.stale = self.baseline.judge(req.id, verdict.status, verdict.message,
                                                              verdict.failures, binding, self.several)
            verdict.status = status
            result.baseline = entry.to_json() if entry else None
        return result

    def record(self, result: Result, stopped_before: bool, unreachable: str | None = None) -> None:
        """Keep a result and print its line."""
        req = result.requirement
        self.results.append(result)
        if self.role == "worker":
            return
        if not self.selected(req.id):
            return  # counted in the summary, not worth a line each
        if stopped_before:
            self.not_run += 1  # one line for all of them, at the end
            return
        v = result.verdict
        extra = v.message if v.status != "passed" else ""
        extra = result.stale or extra
        label = row_label(req.id, result.binding, self.several)
        mark = MARK["not_applicable"] if v.status == "skipped" and v.declared is not None else MARK[v.status]
        self.console.line(f"{mark:8} {req.level:6} {label:40} {v.exchange_count:5} ex"
                          + (f"  {one_line(extra)}" if extra else ""))
        run = self.runs.get(result.binding)
        gone = unreachable or (run.unreachable if run is not None and self.role == "serial" else None)
        if gone and result.binding not in self.said_unreachable:
            self.said_unreachable.add(result.binding)
            self.console.line(f"error{self.over(result.binding)}: {gone}")

    def unreachable(self) -> dict[str | None, str]:
        """Why each binding that could not be tested could not (this process's and its workers')."""
        out = {b: run.unreachable for b, run in self.runs.items() if run.unreachable}
        for binding, why in self.from_workers["unreachable"].items():
            key = next((b for b in self.bindings if str(b) == binding), None)
            out.setdefault(key, why)
        return out

    def finish(self, pytest_status: int = 0) -> int:
        """Write every report of what has run (whatever stopped the run) and
        return the exit code. ``pytest_status`` is pytest's own: INTERRUPTED when
        a KeyboardInterrupt ended the loop before every item had run."""
        for sig, handler in self._previous_handlers.items():
            signal.signal(sig, handler)
        duration = time.perf_counter() - self.t0
        if self.role == "worker":  # the controller reports
            for run in self.runs.values():
                run.http.close()
            return 0
        if pytest_status == pytest.ExitCode.INTERRUPTED and not self.signalled:
            self.signalled = True  # a KeyboardInterrupt no handler of ours saw
            self.stop_reason = self.stop_reason or "interrupted (KeyboardInterrupt)"
        by_binding = self.unreachable()
        reasons = list(dict.fromkeys(by_binding.values()))
        unreachable = (None if not reasons else reasons[0] if len(reasons) == 1
                       else "; ".join(f"over {b}: {why}" for b, why in by_binding.items()))
        if unreachable and self.several and len(by_binding) < len(self.bindings):
            unreachable += f" (over {', '.join(str(b) for b in by_binding)})"
        halted = next((run.http.stopped for run in self.runs.values() if run.http.stopped), None)
        stopped = None
        if self.signalled:
            stopped = ("signal", self.stop_reason or halted or self.from_workers["stopped"] or "interrupted")
        elif halted or self.from_workers["stopped"]:
            stopped = ("time", halted or self.from_workers["stopped"])
        never_ran = self.fill_in(unreachable
                                 or (stopped[1] if stopped else "the run ended before it was reached"))
        order = {r.id: i for i, r in enumerate(self.profile.requirements)}
        place = {b: i for i, b in enumerate(self.bindings)}
        # workers finish in any order: by binding, then as the profile lists them
        self.results.sort(key=lambda r: (place.get(r.binding, 0), order[r.requirement.id]))
        if self.baseline and self.several:
            self.baseline.settle([(r.requirement.id, r.binding, r.verdict.status) for r in self.results])
        refused: dict[str, str] = {}
        not_put_back: list[str] = []
        for run in self.runs.values():
            for label, why in run.refused.items():
                refused.setdefault(label, why)
            not_put_back += [p for p in run.not_put_back if p not in not_put_back]
        summary = build_summary(
            self.profile,
            self.results,
            target=self.run_ctx.target,
            seed=self.run_ctx.seed,
            budget=self.budget,
            gate=self.gate,
            started_at=self.started_at,
            duration_s=duration,
            exchanges=self.exchanges + self.from_workers["exchanges"],
            preflight_exchanges=self.preflight_exchanges,
            unreachable=unreachable,
            bindings=self.bindings,
            unreachable_by={str(b): why for b, why in by_binding.items()} if self.several else None,
            baseline=({"file": str(self.baseline.source), "stale": self.baseline.stale} if self.baseline
                      else None),
            partial=bool(self.only or self.skip),
            declared=self.run_ctx.declared,
            stopped=stopped,
            config=self.config_path,
            refused=refused,
            live_gate=self.live_gate,
            not_put_back=not_put_back,
            agent=self.about,
        )
        path = write_summary(self.report_dir, summary)
        for what, write in (("report.html", lambda: write_html(self.report_dir)),
                            ("badge.svg", lambda: write_badge(self.report_dir, summary)),
                            ("the JUnit and Allure notes",
                             lambda: self.note_in_other_reports(summary, never_ran))):
            try:
                write()
            except Exception as exc:  # summary.json is written; one broken extra must not lose it
                self.console.line(f"warning: could not write {what}: {type(exc).__name__}: {exc}")
        self.summary = summary
        self.stop_file.unlink(missing_ok=True)
        self.console.line()
        self.closing = closing_lines(summary, report_dir=path.parent, not_run=self.not_run,
                                     junit=getattr(self.config.option, "xmlpath", None))
        for line in self.closing:
            self.console.line(line)
        for run in self.runs.values():
            run.http.close()
        return exit_code(self.results, self.gate, bool(unreachable),
                         bool(self.baseline and self.baseline.stale),
                         stopped[0] if stopped else None, allow_untested=self.allow_untested,
                         live_gate=self.live_gate)

    def fill_in(self, why: str) -> list[Result]:
        """Every row that has no result (the run was stopped before its item ran, or a
        worker never reported it) is untested, or skipped where not selected: a stopped
        run never reads as fewer requirements, over any binding."""
        have = {(r.requirement.id, r.binding) for r in self.results}
        missing = []
        for binding in self.bindings:
            for req in self.profile.requirements:
                if (req.id, binding) in have:
                    continue
                if self.selected(req.id):
                    result = Result(req, Verdict("untested", f"not run: {why}"), binding=binding)
                    self.not_run += 1
                else:
                    result = Result(req, Verdict("skipped", "not selected by --only / --skip"),
                                    binding=binding)
                missing.append(result)
        self.results += missing
        return missing

    def note_in_other_reports(self, summary: dict[str, Any], never_ran: list[Result]) -> None:
        """JUnit and Allure say what summary.json says: the verdict and why as properties
        of the suite, and a skipped test case for each row that never ran."""
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is not None:
            for name, value in junit_properties(summary):
                xml.add_global_property(name, value)
        prefix = next(iter(self.nodeids.values()), "").rpartition("::")[0] or self.profile_nodeid()
        for result in never_ran:
            name = row_label(result.requirement.id, result.binding, self.several)
            nodeid = f"{prefix}::{name}"
            reason = f"{result.verdict.status}: {result.verdict.message}"
            location = (prefix, None, name)
            for report in (pytest.TestReport(nodeid, location, {}, "skipped", (prefix, 0, reason), "call"),
                           pytest.TestReport(nodeid, location, {}, "passed", None, "teardown")):
                self.config.hook.pytest_runtest_logreport(report=report)
        allure_dir = getattr(self.config.option, "allure_report_dir", None)
        if allure_dir:
            lines = [f"conformance.{k}={summary[k]}"
                     for k in ("profile", "target", "seed", "verdict", "grade", "stopped")
                     if summary.get(k) is not None]
            lines += [f"conformance.bindings={','.join(summary['bindings'])}"] * bool(summary["bindings"])
            Path(allure_dir).mkdir(parents=True, exist_ok=True)
            (Path(allure_dir) / "environment.properties").write_text("\n".join(lines) + "\n",
                                                                     encoding="utf-8")

    def profile_nodeid(self) -> str:
        """The node id part of the profile file named on the command line, as pytest writes it."""
        named = [a.split("::")[0] for a in self.config.args if a.split("::")[0].endswith(".yaml")]
        if not named:
            return f"{self.profile.name}.yaml"
        try:
            return Path(named[0]).resolve().relative_to(self.config.rootpath).as_posix()
        except ValueError:
            return Path(named[0]).name


def reports_of_a_run_never_started(profile: Profile, report_dir: Path, why: str, *, target: str, seed: int,
                                   budget: str, gate: str, junit: Path,
                                   bindings: list[str | None] | None = None) -> None:
    """The reports of a run stopped before its session opened (a signal during start-up):
    every row untested, the verdict interrupted, nothing graded."""
    spoken = bindings or [choose_binding(profile, None)]
    results = [Result(req, Verdict("untested", f"not run: {why}"), binding=binding)
               for binding in spoken for req in profile.requirements]
    summary = build_summary(profile, results, target=target, seed=seed, budget=budget, gate=gate,
                            started_at=datetime.now(UTC), duration_s=0.0, exchanges=0,
                            stopped=("signal", why), bindings=spoken)
    write_summary(report_dir, summary)
    write_html(report_dir)
    write_badge(report_dir, summary)
    write_junit(junit, summary, junit_properties(summary))


def run_session(config: pytest.Config, profile: Profile) -> RunSession:
    session = config.stash.get(STASH, None)
    if session is None:
        session = RunSession(config, profile)
        config.stash[STASH] = session
        if session.role == "controller":
            config.pluginmanager.register(Inbox(session), "conformance-inbox")
    elif session.profile.name != profile.name:
        raise pytest.UsageError("one run covers one profile")
    return session


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Open the target before the first item, so a usage error stops the run at once."""
    items = [i for i in session.items if isinstance(i, RequirementItem)]
    if not items:
        return
    try:
        run_session(session.config, items[0].profile)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)  # `conformance run` maps it to 2


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """xdist's controller collects nothing: it opens the run (preflight, report folder)
    from the profile named on the command line, before the workers start."""
    config = session.config
    if not distributed(config):
        return
    paths = {Path(a.split("::")[0]).resolve() for a in config.args if is_profile_file(Path(a.split("::")[0]))}
    if len(paths) != 1:
        return
    path = paths.pop()
    try:
        run_session(config, load_profile(path.stem, path))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Every worker writes cases and examples into the controller's report folder, and
    speaks the bindings the controller chose (so every process collects the same items)."""
    run = node.config.stash.get(STASH, None)
    if run is not None:
        node.workerinput["conformance_report"] = str(run.report_dir)
        node.workerinput["conformance_bindings"] = json.dumps({"bindings": run.bindings, "about": run.about,
                                                               "said": False})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Against a live target, the profile's ``alone:`` requirements run last, alone."""
    run = config.stash.get(STASH, None)
    if run is None or config.getvalue("dist") != "load":
        return None
    patterns = [str(p) for p in run.profile.settings.get("alone") or []]
    live = run.run_ctx.target != "reference"
    return AloneLast(config, log, alone=lambda nodeid: live and runs_alone(
        patterns, nodeid.split("::")[-1].split("[", 1)[0]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A worker's verdict travels to the controller on the item's report."""
    report = yield
    if call.when == "call" and isinstance(item, RequirementItem) and is_worker(item.config):
        run = item.config.stash.get(STASH, None)
        if run is not None and run.outbox is not None:
            report.conformance = run.outbox
            run.outbox = None
    return report


class Inbox:
    """Registered on xdist's controller: each worker's report carries one verdict."""

    def __init__(self, run: RunSession) -> None:
        self.run = run

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "conformance", None)
        if payload is not None:
            self.run.nodeids[(payload["id"], payload.get("binding"))] = report.nodeid
            self.run.receive(payload)


@pytest.hookimpl(tryfirst=True)  # before junitxml writes its file
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = session.config.stash.get(STASH, None)
    if run is not None:
        code = run.finish(exitstatus)
        session.exitstatus = code
        session.config.stash[EXIT_KEY] = code


def pytest_unconfigure(config: pytest.Config) -> None:
    """A run over several bindings: the JUnit file pytest wrote holds one suite per binding."""
    run = config.stash.get(STASH, None)
    junit = getattr(config.option, "xmlpath", None)
    summary = getattr(run, "summary", None)
    if run is None or run.role == "worker" or not run.several or not junit or summary is None:
        return
    try:
        split_by_binding(Path(junit), summary)
    except (OSError, ValueError) as exc:  # the file pytest wrote is kept as it is
        print(f"warning: could not give each binding its own suite in {junit}: {exc}", file=sys.stderr)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """``pytest PROFILE.yaml``: pytest's own output ends with the verdict, grade and report."""
    run = terminalreporter.config.stash.get(STASH, None)
    if run is not None and run.closing and not run.console.enabled:
        terminalreporter.section("conformance")
        for line in run.closing:
            terminalreporter.write_line(run.console.redact(line))


class GivenOptions:
    """Passed to ``pytest.main`` by `conformance run`: the options it parsed and checked,
    so the plugin uses them as they are instead of reading pytest's again."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options


def given_options(config: pytest.Config) -> RunOptions | None:
    for plugin in config.pluginmanager.get_plugins():
        if isinstance(plugin, GivenOptions):
            return plugin.options
    return None


class RunOutcome:
    """Passed to ``pytest.main`` by `conformance run`: the run's own exit code,
    or None when pytest stopped before the run finished."""

    code: int | None = None

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.code = config.stash.get(EXIT_KEY, None)
