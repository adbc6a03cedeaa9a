"""Long campaigns: `conformance fuzz PROFILE --for 2h` keeps generating past the
budgets. The first round runs every requirement at the quick budget (every requirement
reached, and shallow failures reported, within the first minutes); then round after round
every requirement that generates inputs runs again at the campaign budget (the deep one,
its inputs drawn in batches) with a new seed (each worker its own seeds), all sharing
one example database, so a failure one worker finds is replayed by the others. A
campaign of many machines runs one shard on each (``--shard I/N``): the seeds of shard I
never meet another shard's, and `conformance fuzz merge` joins the shards' reports. Each
new failure (a requirement over a binding and a root-cause signature not seen before in the
campaign) is written as a case file at once; a progress line comes at least every 10 seconds.
A campaign speaks every binding a run would (those ``--binding`` names, else each the target
declares, else the profile's first), round after round over each; a failure a baseline lists
is a known failure, reported apart and never the campaign's exit 1. At the end fuzz.json,
report.html and a JUnit file say what it found."""

from __future__ import annotations

import fnmatch
import json
import multiprocessing
import queue
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conformance.budgets import BUDGETS
from conformance.failures import KIT_ERROR, Failure
from conformance.ledger import BUCKETS, LEDGER
from conformance.model import Case
from conformance.report.campaign import write_reports
from conformance.report.cases import write_case
from conformance.report.rootcause import signature
from conformance.report.words import clipped
from conformance.run.examples import SharedDatabase
from conformance.run.launch import open_run
from conformance.run.preflight import preflight
from conformance.run.profiles import load_profile
from conformance.run.runner import execute
from conformance.transport.http import write_stop_file

PROGRESS_EVERY_S = 10.0
FIRST_ROUND, ROUNDS = "quick", "campaign"  # the budgets of the first round and of the others
STOP_FILE = ".stop"  # in the report folder: written by the signalled parent, read by every worker


@dataclass
class Found:
    requirement: str
    level: str
    signature: str
    message: str
    case: str
    worker: int
    round: int
    kind: str = "failure"  # or "kit_error": the kit's own error, never a finding about the target
    binding: str | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)  # typed, as the verdict gave them
    baseline: dict[str, Any] | None = None  # the baseline entry that lists it: a known failure


@dataclass
class Campaign:
    """What the workers reported: exchanges per worker, rounds, new failures."""

    exchanges: dict[int, int] = field(default_factory=dict)
    rounds: dict[int, int] = field(default_factory=dict)
    seeds: dict[int, list[int]] = field(default_factory=dict)  # worker -> the seeds it drew, in order
    found: list[Found] = field(default_factory=list)
    unreachable: str = ""
    interrupted: str = ""  # the signal that stopped the campaign, if one did
    cpu_ms: dict[int, dict[str, float]] = field(default_factory=dict)  # worker -> CPU by phase (ledger.py)
    # worker -> distinct examples it read from the shared database that another process stored
    replayed: dict[int, int] = field(default_factory=dict)
    # (binding, requirement) -> the last verdict's status and message, in any worker
    verdicts: dict[tuple[str | None, str], tuple[str, str, str]] = field(default_factory=dict)

    @property
    def failures(self) -> list[Found]:
        """What the target got wrong."""
        return [f for f in self.found if f.kind != "kit_error"]

    @property
    def new_failures(self) -> list[Found]:
        """What the target got wrong that no baseline entry lists."""
        return [f for f in self.failures if f.baseline is None]

    @property
    def kit_errors(self) -> list[Found]:
        """Where the kit's own code failed (exit 4): never the target's."""
        return [f for f in self.found if f.kind == "kit_error"]


def seed_of(seed: int, round_no: int, worker: int, workers: int, shard: tuple[int, int] = (0, 1)) -> int:
    """The seed of ``worker`` (of ``workers`` per shard) in round ``round_no`` (from 1) of
    shard ``shard`` = (I, N): each round takes the next N blocks of ``workers`` seeds, block I
    for shard I, so no two workers of any shards ever draw the same seed (when every shard
    runs the same number of workers; fuzz.json records it, and `fuzz merge` checks)."""
    index, count = shard
    return seed + ((round_no - 1) * count + index) * workers + worker


def work(profile_name: str, target: str | None, config: dict[str, Any], token: str | None,
         faults: tuple[str, ...],
         seconds: float, report_dir: str, seed: int, worker: int, workers: int,
         emit: Callable[[tuple[Any, ...]], None], shard: tuple[int, int] = (0, 1),
         only: tuple[str, ...] = (), bindings: tuple[str | None, ...] = (None,)) -> None:
    """One worker's campaign: rounds of every requirement (or those ``only`` names, as ID
    globs) over each of ``bindings`` until ``seconds`` have passed."""
    profile = load_profile(profile_name)
    folder = Path(report_dir)
    several = len(bindings) > 1
    runs = {binding: open_run(profile, target, config=config, token=token, faults=faults,
                              budget=FIRST_ROUND, seed=seed_of(seed, 1, worker, workers, shard),
                              db_dir=folder / ".hypothesis", max_time=seconds, reuse_examples=True,
                              binding=binding)
            for binding in bindings}
    last = [0.0]

    def total() -> int:
        return sum(run.http.total for run in runs.values())

    def tick() -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0:
            last[0] = now
            emit(("progress", worker, total()))

    before = LEDGER.milliseconds()  # this worker's share of the process's ledger
    for run in runs.values():
        run.http.on_exchange = tick
        run.http.stop_file = folder / STOP_FILE  # the campaign's parent writes it when signalled

    def going() -> list[tuple[str | None, Any]]:
        """The bindings still to fuzz: not stopped, their target reachable over them."""
        if any(run.http.stopped for run in runs.values()):
            return []
        return [(b, run) for b, run in runs.items() if not run.unreachable]

    seen: set[tuple[str | None, str, str]] = set()
    # after the first round, only requirements that generate inputs (per binding)
    generative: dict[str | None, set[str]] | None = None
    round_no = 0
    while going():
        round_no += 1
        for run in runs.values():
            run.seed = seed_of(seed, round_no, worker, workers, shard)
            run.budget = BUDGETS[FIRST_ROUND if round_no == 1 else ROUNDS]  # a case names its round's
        emit(("seed", worker, seed_of(seed, round_no, worker, workers, shard)))
        ran: dict[str | None, set[str]] = {}
        for binding, run in going():
            for req in profile.requirements:
                if only and not any(fnmatch.fnmatchcase(req.id, pattern) for pattern in only):
                    continue
                if generative is not None and req.id not in generative.get(binding, set()):
                    continue
                verdict = execute(req, run)
                if verdict.generated:
                    ran.setdefault(binding, set()).add(req.id)
                if run.http.stopped or run.unreachable:
                    break
                emit(("verdict", worker, binding, req.id, verdict.status, verdict.message, verdict.reason))
                kit_error = any(f.kind == KIT_ERROR for f in verdict.failures)
                if verdict.status != "failed" and not kit_error:
                    continue
                key = (binding, req.id, signature(verdict))
                if key in seen:
                    continue
                seen.add(key)
                case = Case(profile=profile.name, requirement=req.id, level=req.level, title=req.title,
                            source=req.source.to_json(), target=run.target, seed=run.seed,
                            budget=run.budget.name, message=verdict.message, exchanges=verdict.exchanges,
                            reproduce=verdict.reproduce, binding=run.binding, failures=verdict.failures)
                stem = f"{req.id}.{binding}" if several and binding else req.id
                with LEDGER.charge("recording"):
                    path = write_case(folder / "cases", case,
                                      stem=f"{stem}-s{shard[0]}w{worker}r{round_no}-{len(seen)}")
                what = "kit_error" if verdict.status != "failed" else "failure"
                typed = [f.to_json() for f in verdict.failures]
                emit(("found", asdict(Found(req.id, req.level, key[2], verdict.message, path.name, worker,
                                            round_no, what, binding, typed))))
            if run.http.stopped:
                break
        generative = ran if generative is None else generative
        emit(("round", worker, round_no))
        if not any(generative.values()):
            break  # nothing generates: one round says it all
    emit(("progress", worker, total()))
    replayed = [run.database.replayed for run in runs.values() if isinstance(run.database, SharedDatabase)]
    if replayed:
        emit(("replayed", worker, sum(replayed)))
    spent = LEDGER.milliseconds()
    emit(("cpu", worker, {bucket: round(ms - before[bucket], 1) for bucket, ms in spent.items()}))
    gone = [(b, run.unreachable) for b, run in runs.items() if run.unreachable]
    if gone and len(gone) == len(runs):
        emit(("unreachable", worker, gone[0][1]))
    for run in runs.values():
        run.http.close()


def reachable(profile_name: str, target: str | None, config: dict[str, Any], token: str | None,
              faults: tuple[str, ...], binding: str | None = None) -> str:
    """"" when the target answers the profile's probe (over ``binding``); else why not (a
    campaign against a target that is not there would only report that, once per requirement)."""
    run = open_run(load_profile(profile_name), target, config=config, token=token, faults=faults,
                   budget="quick", binding=binding)
    try:
        return preflight(run, credentials=False).unreachable
    finally:
        run.http.close()


def _child(args: tuple[Any, ...], events: Any) -> None:
    """A worker process: events go to the parent through ``events``."""
    job: Callable[..., None] = work
    for sig in (signal.SIGINT, signal.SIGTERM):  # the parent tells the workers to stop (STOP_FILE)
        signal.signal(sig, signal.SIG_IGN)
    try:
        job(*args[:-3], emit=events.put, shard=args[-3], only=args[-2], bindings=args[-1])
    finally:
        events.put(("done", args[8]))


def run_campaign(result: Campaign, profile_name: str, target: str | None, config: dict[str, Any],
                 token: str | None,
                 seconds: float, report_dir: Path, seed: int, workers: int, faults: tuple[str, ...],
                 handle: Callable[[tuple[Any, ...]], None], progress: Callable[[], None],
                 shard: tuple[int, int] = (0, 1), only: tuple[str, ...] = (),
                 bindings: tuple[str | None, ...] = (None,)) -> None:
    """The preflight, then one worker in this process or ``workers`` child processes
    (``handle`` takes their events; ``progress`` is called while none come)."""
    result.unreachable = reachable(profile_name, target, config, token, faults, bindings[0])
    args = (profile_name, target, config, token, faults, seconds, str(report_dir), seed)
    if result.unreachable:
        pass  # nothing to fuzz: the summary says why
    elif workers <= 1:
        work(profile_name, target, config, token, faults, seconds, str(report_dir), seed, 0, 1, emit=handle,
             shard=shard, only=only, bindings=bindings)
    else:
        ctx = multiprocessing.get_context("spawn")
        events = ctx.Queue()
        procs = [ctx.Process(target=_child, args=((*args, w, workers, shard, only, bindings), events),
                             daemon=True)
                 for w in range(workers)]
        for proc in procs:
            proc.start()
        running = workers
        while running:
            try:
                event = events.get(timeout=1.0)
            except queue.Empty:
                progress()
                if not any(p.is_alive() for p in procs):
                    break
                continue
            if event[0] == "done":
                running -= 1
            else:
                handle(event)
        for proc in procs:
            proc.join(10)


def campaign(profile_name: str, target: str | None, config: dict[str, Any], token: str | None, seconds: float,
             report_dir: Path, seed: int = 1, workers: int = 1, faults: tuple[str, ...] = (),
             out: Callable[[str], None] = print, every: float = PROGRESS_EVERY_S,
             shard: tuple[int, int] = (0, 1), only: tuple[str, ...] = (),
             bindings: tuple[str | None, ...] = (None,), baseline: Any = None,
             junit: Path | None = None, level: str = "must") -> Campaign:
    """Run the campaign over ``bindings``; print progress (every ``every`` seconds) and each
    new failure (one a ``baseline`` lists as a known failure); write fuzz.json, report.html
    and the JUnit file (``junit``, default <report>/junit.xml)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    result = Campaign()
    started = time.monotonic()
    shown = [started]
    several = len(bindings) > 1

    def progress(final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - shown[0] < every:
            return
        shown[0] = now
        total, elapsed = sum(result.exchanges.values()), now - started
        errors = f", {len(result.kit_errors)} kit errors" if result.kit_errors else ""
        known = len(result.failures) - len(result.new_failures)
        out(f"[{int(elapsed) // 60:02}:{int(elapsed) % 60:02}] {total} exchanges "
            f"({total / max(elapsed, 1e-9):.1f}/s), {len(result.new_failures)} failures"
            f"{f' (and {known} known)' if known else ''}{errors}, "
            f"round {max(result.rounds.values(), default=0) + 1}")

    def handle(event: tuple[Any, ...]) -> None:
        kind = event[0]
        if kind == "progress":
            result.exchanges[event[1]] = event[2]
        elif kind == "round":
            result.rounds[event[1]] = event[2]
        elif kind == "seed":
            result.seeds.setdefault(event[1], []).append(event[2])
        elif kind == "verdict":
            _, _worker, binding, rid, status, message, reason = event
            if result.verdicts.get((binding, rid), ("",))[0] != "failed":
                result.verdicts[(binding, rid)] = (status, message, reason)
        elif kind == "found":
            found = Found(**event[1])
            key = (found.binding, found.requirement, found.signature)
            if any((f.binding, f.requirement, f.signature) == key for f in result.found):
                # another worker found it first
                for same in (found.case, Path(found.case).with_suffix(".sh").name):
                    (report_dir / "cases" / same).unlink(missing_ok=True)
                return
            if baseline is not None and found.kind != "kit_error":
                status, entry, _ = baseline.judge(found.requirement, "failed", found.message,
                                                  [Failure.from_json(f) for f in found.failures],
                                                  found.binding, several)
                found.baseline = entry.to_json() if status == "expected_failure" and entry else None
            result.found.append(found)
            name = f"{found.requirement}[{found.binding}]" if several and found.binding else found.requirement
            if found.kind == "kit_error":
                out(f"KIT ERROR (a bug of conformance, not a finding about the target) {name}: "
                    f"{clipped(found.message, 160)} [case: cases/{found.case}]")
            elif found.baseline:
                why = clipped(found.baseline["reason"], 80)
                out(f"KNOWN FAILURE {found.level} {name} (baseline: {why}): "
                    f"{clipped(found.message, 120)} [case: cases/{found.case}]")
            else:
                out(f"NEW FAILURE {found.level} {name}: {clipped(found.message, 160)} [case: "
                    f"cases/{found.case}]")
        elif kind == "unreachable":
            result.unreachable = event[2]
        elif kind == "cpu":
            result.cpu_ms[event[1]] = event[2]
        elif kind == "replayed":
            result.replayed[event[1]] = event[2]
        progress()


    stop_file = report_dir / STOP_FILE
    stop_file.unlink(missing_ok=True)

    def on_signal(signum: int, frame: Any) -> None:
        """First signal: every worker stops after its exchange in flight; second: at once."""
        if result.interrupted:
            raise KeyboardInterrupt
        result.interrupted = f"interrupted by {signal.Signals(signum).name}"
        write_stop_file(stop_file, result.interrupted)
        out(f"{signal.Signals(signum).name}: stopping the workers and writing fuzz.json "
            "(send it again to stop at once)")

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for sig in previous:
            signal.signal(sig, on_signal)
    except ValueError:  # not the main thread: leave signals alone
        previous = {}
    try:
        run_campaign(result, profile_name, target, config, token, seconds, report_dir, seed, workers, faults,
                     handle, progress, shard, only, bindings)
    except KeyboardInterrupt:
        result.interrupted = result.interrupted or "interrupted (KeyboardInterrupt)"
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stop_file.unlink(missing_ok=True)
        progress(final=True)
        summary = {"profile": profile_name, "target": target or config.get("target") or "reference",
                   "bindings": [b for b in bindings if b is not None],
                   "seconds": round(time.monotonic() - started, 1), "workers": workers, "seed": seed,
                   "shard": f"{shard[0]}/{shard[1]}", "only": list(only),
                   "seeds": {str(w): drawn for w, drawn in sorted(result.seeds.items())},
                   "exchanges": sum(result.exchanges.values()), "rounds": result.rounds,
                   "cpu_ms": {b: round(sum(w.get(b, 0.0) for w in result.cpu_ms.values()), 1)
                              for b in BUCKETS},
                   "replayed_from_shared": sum(result.replayed.values()) if result.replayed else None,
                   "unreachable": result.unreachable or None, "interrupted": result.interrupted or None,
                   "baseline": getattr(baseline, "source", None),
                   "failures": [asdict(f) for f in result.failures],
                   "kit_errors": [asdict(f) for f in result.kit_errors]}
        (report_dir / "fuzz.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        write_reports(result, summary, report_dir, junit or report_dir / "junit.xml", bindings=bindings,
                      only=only, level=level, config=config, out=out)
    return result
