"""The pytest plugin: a profile YAML collects as one test item per requirement
(test id = requirement ID), run against the target the options name; at the end
summary.json, case files and the exit code are written.

Used by `conformance run`, and directly: ``pytest profiles/bindu.yaml --target URL``."""

from __future__ import annotations

import fnmatch
import json
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conformance.model import Case, Profile, Requirement, Source
from conformance.parallel import AloneLast, distributed, is_worker, runs_alone
from conformance.profiles import PROFILES_DIR, load_profile
from conformance.report.badge import write_badge
from conformance.report.baseline import Baseline, load_baseline
from conformance.report.cases import write_case
from conformance.report.html import write_html
from conformance.report.summary import Result, build_summary, exit_code, write_summary
from conformance.runner import (
    BUDGETS,
    CheckContext,
    RunContext,
    Untested,
    Verdict,
    execute,
    verdict_from_json,
    verdict_to_json,
)
from conformance.targets import (
    ConfigError,
    ProtocolMismatch,
    load_config,
    open_run,
    parse_duration,
    writable_dir,
)
from conformance.transport.http import DEAD_AFTER, Redactor, RunAborted, RunStopped, TransportFailure

STASH = pytest.StashKey["RunSession"]()
EXIT_KEY = pytest.StashKey[int]()  # the run's own exit code (pytest's codes mean other things)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "conformance: run a protocol profile against a target")
    group.addoption("--target", default=None, help="'reference' (built-in, in-process) or an http(s) URL")
    group.addoption("--token", default=None, help="bearer token of the main caller (credential 'full')")
    group.addoption("--config", dest="conformance_config", default=None, help="YAML run config: credentials, control, timeout")
    group.addoption("--budget", default="standard", choices=["quick", "standard", "deep"], help="how many examples to generate")
    group.addoption("--seed", type=int, default=1, help="hypothesis seed (runs are reproducible)")
    group.addoption("--level", default="must", choices=["must", "should", "may"], help="lowest level whose failure fails the run")
    group.addoption("--only", action="append", default=[], help="run only this requirement ID or glob (repeatable)")
    group.addoption("--skip", action="append", default=[], help="do not run this requirement ID or glob (repeatable)")
    group.addoption("--report", dest="conformance_report", default=None, help="report directory (default reports/<profile>-<time>)")
    group.addoption("--fault", action="append", default=[], help="inject a named fault into the built-in reference")
    group.addoption("--binding", default=None, help="which of the profile's bindings to speak (e.g. http, mcp)")
    group.addoption("--baseline", default=None, help="YAML list of known failures: listed failures pass, stale entries fail")
    group.addoption("--allow-untested", action="store_true",
                    help="exit 0 even when a gating requirement stayed untested or blocked (default: exit 5)")
    group.addoption("--max-time", dest="conformance_max_time", default=None,
                    help="wall-clock limit of the whole run: seconds, or 90s, 15m, 2h (default per budget)")
    group.addoption("--conformance-console", action="store_true", help="print one line per requirement and a summary")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".yaml" and file_path.parent.resolve() == PROFILES_DIR:
        return ProfileFile.from_parent(parent, path=file_path)
    return None


class ProfileFile(pytest.File):
    def collect(self):  # type: ignore[override]
        profile = load_profile(self.path.stem)
        for req in profile.requirements:
            yield RequirementItem.from_parent(self, name=req.id, requirement=req, profile=profile)


class RequirementFailed(Exception):
    pass


class RequirementItem(pytest.Item):
    def __init__(self, *, requirement: Requirement, profile: Profile, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.requirement = requirement
        self.profile = profile
        self.user_properties += [
            ("level", requirement.level),
            ("title", requirement.title),
            ("source", str(requirement.source)),
        ]

    def runtest(self) -> None:
        session = run_session(self.config, self.profile)
        result = self.result = session.run(self.requirement)
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
        return self.path, None, self.requirement.id


def attach_to_allure(req: Requirement, result: Result) -> None:
    try:
        import allure
    except ImportError:  # pragma: no cover - allure-pytest is a dependency
        return
    allure.dynamic.label("level", req.level)
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


MARK = {"passed": "PASS ", "failed": "FAIL ", "blocked": "BLOCKED", "untested": "UNTESTED", "skipped": "SKIP ",
        "expected_failure": "XFAIL"}


class RunSession:
    """The state of one run: target, results, report directory."""

    def __init__(self, config: pytest.Config, profile: Profile) -> None:
        opt = config.option
        # serial: runs and reports; worker (xdist): runs, its verdicts travel on the test
        # reports; controller (xdist): receives them and reports
        self.role = "worker" if is_worker(config) else "controller" if distributed(config) else "serial"
        self.profile = profile
        self.gate = opt.level
        self.only = set(opt.only or [])
        self.skip = set(opt.skip or [])
        self.allow_untested = bool(opt.allow_untested)
        self.budget = opt.budget
        self.started_at = datetime.now(UTC)
        self.t0 = time.perf_counter()
        stamp = self.started_at.strftime("%Y%m%d-%H%M%S")
        chosen = config.workerinput["conformance_report"] if self.role == "worker" else opt.conformance_report  # type: ignore[attr-defined]
        self.report_dir = writable_dir(Path(chosen or f"reports/{profile.name}-{stamp}"), "--report")
        self.console = Console(bool(opt.conformance_console) and self.role != "worker")
        self.from_workers: dict[str, Any] = {"exchanges": 0, "unreachable": None, "stopped": None}
        self.outbox: dict[str, Any] | None = None  # a worker's payload of the requirement it just ran
        self.results: list[Result] = []
        self.not_run = 0  # requirements reached after the run was stopped (one line for all)
        self.signalled = False
        cfg = load_config(opt.conformance_config)
        max_time = parse_duration(opt.conformance_max_time) if opt.conformance_max_time else BUDGETS[opt.budget].max_time
        self.run_ctx: RunContext = open_run(
            profile,
            opt.target,
            config=cfg,
            token=opt.token,
            faults=tuple(opt.fault or ()),
            budget=opt.budget,
            seed=opt.seed,
            db_dir=self.report_dir.parent / ".hypothesis",
            binding=opt.binding,
            max_time=max_time,
        )
        self.console.redact = self.run_ctx.http.redact
        self.baseline: Baseline | None = None
        if opt.baseline:
            entries = load_baseline(opt.baseline, {r.id for r in profile.requirements})
            self.baseline = Baseline(entries, opt.baseline)
        self.run_ctx.http.on_exchange = self._tick
        self.current = ""
        self.console.line(
            f"conformance: profile {profile.name} ({profile.spec_relpath}) against {self.run_ctx.target}"
            f"{' over ' + self.run_ctx.binding if self.run_ctx.binding else ''}, "
            f"budget {self.budget}, seed {opt.seed}, time limit {max_time:g} s"
        )
        self._previous_handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        if self.role != "serial":  # xdist stops its workers itself
            self._previous_handlers = {}
        try:
            for sig in self._previous_handlers:
                signal.signal(sig, self._on_signal)
        except ValueError:  # not the main thread: leave signals alone
            self._previous_handlers = {}
        self.preflight()

    def _on_signal(self, signum: int, frame: Any) -> None:
        """First signal: stop after the current exchange and write the reports.
        Second: stop at once (the reports are still written)."""
        name = signal.Signals(signum).name
        if self.signalled:
            raise KeyboardInterrupt
        self.signalled = True
        self.run_ctx.http.stopped = f"interrupted by {name}"
        self.console.line(f"{name}: stopping after the current exchange and writing the reports "
                          "(send it again to stop at once)")

    def _tick(self) -> None:
        self.console.progress(f"  ... {self.current}: {self.run_ctx.http.total} exchanges")

    def preflight(self) -> None:
        """Stop early, with one line, when the target is unreachable or does not speak the protocol."""
        probe = Requirement("PREFLIGHT", "MAY", "the target speaks the protocol", Source("profile", "preflight"), self.profile.probe, ())
        ctx = CheckContext(self.run_ctx, probe)
        for attempt in range(1, DEAD_AFTER + 1):  # one reset must not condemn the target
            try:
                self.profile.probe(ctx)
                break
            except RunStopped:
                break
            except Untested as exc:  # it answered in its protocol, but wants what the run lacks
                self.console.line(f"note: {self.run_ctx.http.redact(str(exc))}")
                break
            except TransportFailure as exc:
                if attempt == DEAD_AFTER:
                    self._unreachable(exc)
                else:
                    time.sleep(0.25 * attempt)
            except (RunAborted, ProtocolMismatch) as exc:
                self._unreachable(exc)
                break
        self.run_ctx.http.log.clear()

    def _unreachable(self, exc: BaseException) -> None:
        self.run_ctx.unreachable = self.run_ctx.http.redact(str(exc))
        self.console.line(f"error: {self.run_ctx.unreachable}")

    def run(self, req: Requirement) -> Result:
        self.current = req.id
        stopped_before = bool(self.run_ctx.unreachable or self.run_ctx.http.stopped)
        result = self.execute(req)
        self.record(result, stopped_before)
        if self.role == "worker":
            self.outbox = self.payload(result, stopped_before)
        return result

    def payload(self, result: Result, stopped_before: bool) -> dict[str, Any]:
        """What a worker sends the controller about one requirement."""
        return {"id": result.requirement.id, "verdict": verdict_to_json(result.verdict), "case": result.case,
                "baseline": result.baseline, "stale": result.stale, "stopped_before": stopped_before,
                "unreachable": self.run_ctx.unreachable, "stopped": self.run_ctx.http.stopped or None,
                "signalled": self.signalled}

    def receive(self, data: dict[str, Any]) -> None:
        """The controller's side of ``payload``."""
        req = next(r for r in self.profile.requirements if r.id == data["id"])
        result = Result(req, verdict_from_json(data["verdict"]), data["case"], data["baseline"], data["stale"])
        if result.stale and self.baseline:
            self.baseline.stale.append(result.stale)
        self.from_workers["exchanges"] += result.verdict.exchange_count
        for key in ("unreachable", "stopped"):
            self.from_workers[key] = self.from_workers[key] or data[key]
        self.record(result, data["stopped_before"])

    def selected(self, rid: str) -> bool:
        """Chosen by --only (ids or globs), or no --only given, and not named by --skip."""
        def named(patterns: set[str]) -> bool:
            return any(fnmatch.fnmatchcase(rid, pattern) for pattern in patterns)
        return (not self.only or named(self.only)) and not named(self.skip)

    def execute(self, req: Requirement) -> Result:
        if not self.selected(req.id):
            result = Result(req, Verdict("skipped", "not selected by --only / --skip"))
        else:
            verdict = execute(req, self.run_ctx)
            result = Result(req, verdict)
            if verdict.status == "failed":
                case = Case(
                    profile=self.profile.name,
                    requirement=req.id,
                    level=req.level,
                    title=req.title,
                    source=req.source.to_json(),
                    target=self.run_ctx.target,
                    seed=self.run_ctx.seed,
                    budget=self.budget,
                    message=verdict.message,
                    exchanges=verdict.exchanges,
                    reproduce=verdict.reproduce,
                    binding=self.run_ctx.binding,
                    failures=verdict.failures,
                )
                path = write_case(self.report_dir / "cases", case)
                result.case = str(path.relative_to(self.report_dir))
            if self.baseline:
                status, entry, result.stale = self.baseline.judge(req.id, verdict.status, verdict.message, verdict.failures)
                verdict.status = status
                result.baseline = entry.to_json() if entry else None
        return result

    def record(self, result: Result, stopped_before: bool) -> None:
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
        extra = f"  {v.message}" if v.status != "passed" and v.message else ""
        extra = f"  {result.stale}" if result.stale else extra
        self.console.line(f"{MARK[v.status]:8} {req.level:6} {req.id:40} {v.exchange_count:5} ex{extra[:160]}")
        if self.run_ctx.unreachable:
            self.console.line(f"error: {self.run_ctx.unreachable}")

    def finish(self) -> int:
        """Write every report of what has run (whatever stopped the run) and
        return the exit code."""
        for sig, handler in self._previous_handlers.items():
            signal.signal(sig, handler)
        duration = time.perf_counter() - self.t0
        http = self.run_ctx.http
        if self.role == "worker":  # the controller reports
            http.close()
            return 0
        unreachable = self.run_ctx.unreachable or self.from_workers["unreachable"]
        stopped = None
        if self.signalled:
            stopped = ("signal", http.stopped or "interrupted")
        elif http.stopped or self.from_workers["stopped"]:
            stopped = ("time", http.stopped or self.from_workers["stopped"])
        order = {r.id: i for i, r in enumerate(self.profile.requirements)}
        self.results.sort(key=lambda r: order[r.requirement.id])  # workers finish in any order
        summary = build_summary(
            self.profile,
            self.results,
            target=self.run_ctx.target,
            seed=self.run_ctx.seed,
            budget=self.budget,
            gate=self.gate,
            started_at=self.started_at,
            duration_s=duration,
            exchanges=http.total + self.from_workers["exchanges"],
            unreachable=unreachable,
            binding=self.run_ctx.binding,
            baseline={"file": str(self.baseline.source), "stale": self.baseline.stale} if self.baseline else None,
            partial=bool(self.only or self.skip),
            declared=self.run_ctx.declared,
            stopped=stopped,
        )
        path = write_summary(self.report_dir, summary)
        for what, write in (("report.html", lambda: write_html(self.report_dir)),
                            ("badge.svg", lambda: write_badge(self.report_dir, summary))):
            try:
                write()
            except Exception as exc:  # summary.json is written; one broken extra must not lose it
                self.console.line(f"warning: could not write {what}: {type(exc).__name__}: {exc}")
        c = summary["counts"]
        self.console.line()
        if self.not_run:
            why = unreachable or (stopped[1] if stopped else "")
            self.console.line(f"{self.not_run} requirements not run: {why}")
        self.console.line(
            f"{summary['verdict'].upper()} ({summary['grade']}{'; ' + summary['grade_note'] if summary['grade_note'] else ''}): {c['passed']} passed, {c['failed']} failed, "
            f"{c['expected_failures']} expected failures, {c['blocked']} blocked, {c['untested']} untested, {c['skipped']} skipped "
            f"of {len(self.results)} requirements; {summary['exchanges']} exchanges in "
            f"{summary['duration_s']:.1f} s ({summary['exchanges_per_s']}/s)"
        )
        causes = summary["root_causes"]
        if causes:
            self.console.line(f"root causes ({len(causes)}, largest first):")
            for cause in causes[:10]:
                names = ", ".join(cause["requirements"][:4]) + (" ..." if cause["count"] > 4 else "")
                self.console.line(f"  {cause['count']:3} x {cause['signature'][:110]}  [{names}]")
                if cause.get("request_in_common"):
                    self.console.line(f"        requests in common: {'; '.join(cause['request_in_common'])}")
        for stale in summary["baseline"]["stale"] if summary["baseline"] else []:
            self.console.line(f"stale: {stale}")
        self.console.line(f"report: {path.parent / 'report.html'} (summary.json, junit.xml, badge.svg, cases/)")
        http.close()
        return exit_code(self.results, self.gate, bool(unreachable), bool(self.baseline and self.baseline.stale),
                         stopped[0] if stopped else None, allow_untested=self.allow_untested)


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
    names = [Path(a.split("::")[0]).stem for a in config.args if Path(a.split("::")[0]).suffix == ".yaml"]
    if len(set(names)) != 1:
        return
    try:
        run_session(config, load_profile(names[0]))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Every worker writes cases and examples into the controller's report folder."""
    run = node.config.stash.get(STASH, None)
    if run is not None:
        node.workerinput["conformance_report"] = str(run.report_dir)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Against a live target, the profile's ``alone:`` requirements run last, alone."""
    run = config.stash.get(STASH, None)
    if run is None or config.getvalue("dist") != "load":
        return None
    patterns = [str(p) for p in run.profile.settings.get("alone") or []]
    live = run.run_ctx.target != "reference"
    return AloneLast(config, log, alone=lambda nodeid: live and runs_alone(patterns, nodeid.split("::")[-1]))


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
            self.run.receive(payload)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = session.config.stash.get(STASH, None)
    if run is not None:
        code = run.finish()
        session.exitstatus = code
        session.config.stash[EXIT_KEY] = code


class RunOutcome:
    """Passed to ``pytest.main`` by `conformance run`: the run's own exit code,
    or None when pytest stopped before the run finished."""

    code: int | None = None

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.code = config.stash.get(EXIT_KEY, None)
