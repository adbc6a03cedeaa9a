"""Running one requirement against one target: the context a check sees, the
hypothesis settings of a budget, and the verdict that comes out."""

from __future__ import annotations

import ast
import gzip
import json
import re
import tempfile
import time
import traceback
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, given, reproduce_failure, seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from conformance.model import Exchange, Profile, Requirement
from conformance.transport.http import HttpTransport, Reply, RunStopped, TargetUnreachable, TransportFailure
from conformance.transport.jsonrpc import JsonRpcClient


class CheckFailed(AssertionError):
    """The target broke the requirement."""


class Untested(Exception):
    """The requirement cannot be tested against this target with what was given."""


class NotApplicable(Exception):
    """The requirement does not apply to this target or binding (reported skipped)."""


@dataclass(frozen=True)
class Budget:
    name: str
    examples: int  # examples per generated property
    machines: int  # state-machine runs
    steps: int  # steps per state-machine run
    max_time: float  # default wall-clock limit of a whole run, seconds (--max-time)


BUDGETS = {
    "quick": Budget("quick", examples=8, machines=5, steps=12, max_time=15 * 60),
    "standard": Budget("standard", examples=40, machines=20, steps=25, max_time=60 * 60),
    "deep": Budget("deep", examples=200, machines=80, steps=40, max_time=6 * 3600),
}


@dataclass
class RunContext:
    """Everything shared by the requirements of one run."""

    profile: Profile
    http: HttpTransport
    budget: Budget
    seed: int
    credentials: dict[str, Any] = field(default_factory=dict)
    control_path: str | None = None  # path prefix (or URL) of the control interface
    database: ExampleDatabase | None = None
    unreachable: str | None = None
    binding: str | None = None  # which of the profile's bindings the run speaks
    world: dict[str, Any] = field(default_factory=dict)  # ids of a live target's seeded world (config `world:`)

    @property
    def target(self) -> str:
        return self.http.target


def example_database(directory: Path | None) -> ExampleDatabase:
    """Hypothesis's storage under ``directory`` (the example database in
    ``examples/``, its caches beside it), never in whatever folder the command
    runs in; in memory when ``directory`` is None (replays)."""
    from hypothesis.configuration import set_hypothesis_home_dir

    home = directory or Path(tempfile.gettempdir()) / "conformance-hypothesis"
    set_hypothesis_home_dir(home)
    seed_unicode_cache(home)
    if directory is None:
        return InMemoryExampleDatabase()
    (directory / "examples").mkdir(parents=True, exist_ok=True)
    return DirectoryBasedExampleDatabase(str(directory / "examples"))


# The characters that UTF-8 can encode: all but the surrogates. hypothesis-jsonschema
# asks hypothesis for text "encodable as utf-8"; on a cold cache hypothesis works
# that out by building a list of 1.1 million pairs (about 180 MB at peak).
UTF8_INTERVALS = [[[0, 0xD7FF], [0xE000, 0x10FFFF]], []]


def seed_unicode_cache(home: Path) -> None:
    """Write hypothesis's cache entry for the UTF-8 codec (a known answer; the
    project's tests compare it with what hypothesis computes)."""
    path = home / "unicode_data" / unicodedata.unidata_version / "codec-v2-utf-8.json.gz"
    if path.exists():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(path, "wb", mtime=1) as out:
            out.write(json.dumps(UTF8_INTERVALS).encode())
    except OSError:
        pass  # hypothesis computes it itself


@dataclass
class Verdict:
    status: str  # passed | failed | untested
    message: str = ""
    exchanges: list[Exchange] = field(default_factory=list)
    reproduce: dict[str, Any] | None = None
    duration_s: float = 0.0
    exchange_count: int = 0


_BLOB = re.compile(r"@reproduce_failure\('([^']+)', (b'[^']*')\)")


class CheckContext:
    """What a check function gets: transports, credentials, control, and helpers
    that run hypothesis with the run's budget and seed."""

    def __init__(self, run: RunContext, requirement: Requirement, reproduce: dict[str, Any] | None = None):
        self.run = run
        self.requirement = requirement
        self.profile = run.profile
        self.budget = run.budget
        self.http = run.http
        self.rpc = JsonRpcClient(run.http, run.profile.settings.get("endpoint", "/"))
        self._reproduce = reproduce
        self._calls = 0
        self.failed_call: int | None = None
        self.blob: tuple[str, str] | None = None

    @property
    def binding(self) -> str | None:
        return self.run.binding

    def actions(self) -> Any:
        """A client of the run's binding (profiles that declare ``bindings``)."""
        from conformance.transport.actions import BINDINGS

        binding = self.run.binding
        if binding is None:
            raise NotApplicable(f"profile {self.profile.name} declares no bindings")
        return BINDINGS[binding](self.http, self.profile.settings["bindings"][binding]["path"])

    # -- what the target offers --------------------------------------------------
    def credential(self, label: str) -> Any:
        value = self.run.credentials.get(label)
        if not value:
            raise Untested(f"no credential {label!r} given (set credentials.{label} in --config)")
        return value

    def has_credential(self, label: str) -> bool:
        return bool(self.run.credentials.get(label))

    def control(self, action: str, **payload: Any) -> Reply:
        """Drive what the wire cannot (see DESIGN.md, control interface)."""
        if not self.run.control_path:
            raise Untested("needs the target's control interface (set control: in --config)")
        reply = self.http.request("POST", f"{self.run.control_path}/{action}", json_body=payload)
        if reply.status >= 400:
            raise Untested(f"control action {action!r} refused: HTTP {reply.status} {reply.text[:100]}")
        return reply

    # -- verdict helpers ----------------------------------------------------------
    def fail(self, message: str) -> None:
        raise CheckFailed(message)

    def expect(self, condition: Any, message: str) -> None:
        if not condition:
            raise CheckFailed(message)

    def begin_example(self) -> None:
        """Forget the exchanges of the previous example: a case holds only the last one."""
        self.http.log.clear()

    # -- hypothesis ---------------------------------------------------------------
    def settings(self, examples: int | None = None, **extra: Any) -> settings:
        return settings(
            max_examples=examples or self.budget.examples,
            deadline=None,
            database=self.run.database,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            print_blob=True,
            # the explain phase re-sends a failing example ~100 times to a live target
            phases=[p for p in Phase if p is not Phase.explain],
            **extra,
        )

    def _decorate(self, test: Any, call: int) -> Any:
        test._hypothesis_internal_add_digest = f"{self.requirement.id}:{call}".encode()
        rep = self._reproduce
        if rep and rep.get("call") == call:
            test = reproduce_failure(rep["version"], ast.literal_eval(rep["blob"]))(test)
        return seed(self.run.seed)(test)

    def _capture(self, exc: BaseException, call: int) -> None:
        for note in getattr(exc, "__notes__", []) or []:
            match = _BLOB.search(note)
            if match:
                self.blob = (match.group(1), match.group(2))
        self.failed_call = call

    def for_all(self, strategy: st.SearchStrategy[Any], body: Callable[[Any], None], examples: int | None = None) -> None:
        """Run ``body`` on generated examples; on failure the minimal example's
        exchanges stay in the log."""
        self._calls += 1
        call = self._calls

        @given(strategy)
        def prop(example: Any) -> None:
            self.begin_example()
            body(example)

        test = self._decorate(self.settings(examples)(prop), call)
        try:
            test()
        except Exception as exc:
            self._capture(exc, call)
            raise

    def run_machine(self, machine: type[RuleBasedStateMachine]) -> None:
        """Run a stateful test; the machine's __init__ must call ``begin_example``."""
        self._calls += 1
        call = self._calls
        bound = type(machine.__name__, (machine,), {"ctx": self})
        bound = self._decorate(bound, call)
        try:
            run_state_machine_as_test(
                bound, settings=self.settings(self.budget.machines, stateful_step_count=self.budget.steps)
            )
        except Exception as exc:
            self._capture(exc, call)
            raise


def _clean_message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.split("\nFalsifying")[0].strip()


def execute(requirement: Requirement, run: RunContext, reproduce: dict[str, Any] | None = None) -> Verdict:
    """Run one requirement against the run's target and judge it. Every message
    goes through the run's redactor: a target may echo a secret back."""
    started = time.perf_counter()
    count_before = run.http.total
    ctx = CheckContext(run, requirement, reproduce)
    ctx.begin_example()

    def verdict(status: str, message: str = "") -> Verdict:
        rep = None
        if status == "failed" and ctx.blob and ctx.failed_call:
            rep = {"call": ctx.failed_call, "version": ctx.blob[0], "blob": ctx.blob[1]}
        return Verdict(
            status,
            run.http.redact(message),
            list(run.http.log) if status == "failed" else [],
            rep,
            time.perf_counter() - started,
            run.http.total - count_before,
        )

    if run.unreachable:
        return verdict("untested", f"target unreachable: {run.unreachable}")
    try:
        run.http.check_running()
        requirement.check(ctx)
    except Untested as exc:
        return verdict("untested", str(exc))
    except NotApplicable as exc:
        return verdict("skipped", str(exc))
    except TargetUnreachable as exc:
        run.unreachable = str(exc)
        return verdict("untested", f"target unreachable: {exc}")
    except RunStopped as exc:
        return verdict("untested", f"{'not run' if run.http.total == count_before else 'not finished'}: {exc}")
    except (CheckFailed, TransportFailure) as exc:
        return verdict("failed", _clean_message(exc))
    except hypothesis.errors.HypothesisException as exc:
        return verdict("failed", f"{type(exc).__name__}: {_clean_message(exc)}")
    except Exception as exc:  # a target answer the check did not expect
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return verdict("failed", f"unexpected {type(exc).__name__}: {_one_line(exc)} (at {Path(tb.filename).name}:{tb.lineno})")
    return verdict("passed")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + (" ..." if len(text) > 300 else "")
