"""Start-up, throughput and memory of the suite, per profile, side by side with the
target's own rate measured in the same run. Prints figures; asserts nothing.

    .venv/bin/python bench/bench_speed.py [--budget standard] [--profiles bindu canon-verbs] [--seconds 3]

For each profile:
- start-up: wall time of `conformance --help`, `conformance list`, and a run of one
  requirement against the in-process reference (start-up, one check, reports);
- bare rate: the profile's preflight request (its probe) re-sent as fast as one client can,
  through the same transport the suite uses (TestClient in process, httpx on loopback);
- suite rate: exchanges per second of `conformance run PROFILE --budget B`, and its ratio
  to the bare rate; peak RSS of the suite's process (its own: tests/peak_memory.py);
- the floor: examples per second hypothesis draws with no exchange at all;
- a fuzz campaign's CPU milliseconds per exchange against the served reference, split by
  phase (conformance/ledger.py: generation, transport, judging, recording), from the
  campaign's fuzz.json (--fuzz-seconds 0 leaves it out), beside the bare loop's own CPU per
  exchange (the floor of any exchange's transport on this machine: on loopback mostly the
  kernel's socket calls) and their ratio, which compares machines: a campaign's figures
  move with the machine it runs on, the ratio much less;
- on loopback, how busy the served target was (its CPU time over the wall time) in the
  bare loop and in the suite's run: a suite far below the bare rate with an idle target
  is bound by its own work (generation, judging), not by the target.
Loopback targets are the profile's reference served by `conformance serve` on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str) -> tuple[float, int, subprocess.CompletedProcess[str]]:
    """(wall seconds, peak RSS in MB, the process) of one `conformance` command; the
    peak is the child's own (tests/peak_memory.py: rusage would include this process's)."""
    from tests import peak_memory

    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        started = time.perf_counter()
        proc = subprocess.run(peak_memory.command(peak, *args), cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - started
        return wall, peak_memory.read_mb(peak), proc


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy(pid: int, work: Any, *args: Any) -> tuple[Any, float | None]:
    """``work(*args)``'s result and the share of its wall time that process ``pid`` spent
    on a CPU: how close the target came to being the bottleneck."""
    before, started = cpu_seconds(pid), time.perf_counter()
    result = work(*args)
    after, wall = cpu_seconds(pid), time.perf_counter() - started
    return result, None if before is None or after is None else (after - before) / wall


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bare_rate(profile_name: str, seconds: float, target: str = "reference",
              config: dict[str, Any] | None = None) -> tuple[float, float]:
    """(requests per second, this process's CPU milliseconds per request) of the profile's
    probe request, re-sent raw through the transport's own client (no recording, no
    judging): the target's speed, and the floor of an exchange's transport CPU here (on
    loopback mostly the kernel's socket calls, which differ from machine to machine)."""
    from conformance.kit.check import CheckContext
    from conformance.run.launch import open_run
    from conformance.run.profiles import load_profile

    profile = load_profile(profile_name)
    run = open_run(profile, target, config=config or {}, budget="quick")
    http = run.http
    sent: list[tuple[Any, ...]] = []
    send = http._send  # noqa: SLF001 - the bare client under the recorder

    def capture(*args: Any) -> Any:
        sent.append(args)
        return send(*args)

    http._send = capture  # type: ignore[method-assign]  # noqa: SLF001
    profile.probe(CheckContext(run, next(r for r in profile.requirements)))
    http._send = send  # type: ignore[method-assign]  # noqa: SLF001
    method, url, headers, body, _until = sent[-1]
    count, started, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - started < seconds:
        for _chunk in send(method, url, headers, body, time.monotonic() + 5.0).chunks:
            pass
        count += 1
    rate = count / (time.perf_counter() - started)
    cpu_ms = (time.process_time() - cpu) * 1000 / max(count, 1)
    http.close()
    return rate, cpu_ms


def hypothesis_floor(examples: int = 500) -> tuple[float, float]:
    """Examples per second that hypothesis itself draws, with no exchange and no check:
    of ``integers()`` and of a small JSON object (``dictionaries(text(), integers())``),
    generation alone (no database, no shrinking). Every generated exchange pays at least this, so it bounds
    the suite's rate whatever the target (the ratio goal asks for half the bare rate)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    def rate(strategy: st.SearchStrategy[Any]) -> float:
        drawn = [0]

        @settings(max_examples=examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck),
                  phases=[Phase.generate])
        @given(strategy)
        def draw(value: Any) -> None:
            drawn[0] += 1

        started = time.perf_counter()
        draw()
        return drawn[0] / (time.perf_counter() - started)

    return rate(st.integers()), rate(st.dictionaries(st.text(), st.integers()))


def suite_run(profile: str, budget: str, workers: str, *target: str) -> tuple[dict[str, Any], int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        wall, rss, proc = cli("run", profile, "--budget", budget, "--report", tmp, "--workers", workers,
                              *target)
        path = Path(tmp) / "summary.json"
        if not path.exists():
            sys.exit(f"{profile}: the run wrote no summary (exit {proc.returncode}): {proc.stderr[-400:]}")
        return json.loads(path.read_text()), rss, wall


def fuzz_split(profile: str, seconds: float, config: Path) -> tuple[int, dict[str, float]]:
    """(exchanges, CPU ms per exchange by phase) of a fuzz campaign of ``seconds`` against
    the target ``config`` names (one worker: the phases are its own process's)."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "conformance.cli", "fuzz", profile, "--config", str(config),
                   "--for", f"{seconds:g}s", "--report", tmp, "--progress", "10"]
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        path = Path(tmp) / "fuzz.json"
        if not path.exists():
            sys.exit(f"{profile}: the campaign wrote no fuzz.json (exit {proc.returncode}): "
                     f"{proc.stderr[-400:]}")
        found = json.loads(path.read_text())
    exchanges = max(int(found["exchanges"]), 1)
    return found["exchanges"], {phase: ms / exchanges for phase, ms in found["cpu_ms"].items()}


def serve(profile: str, port: int, config: Path, cwd: Path = ROOT) -> subprocess.Popen[str]:
    """The profile's reference served on loopback (the code in ``cwd``), its config written."""
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "serve", profile, "--port", str(port),
                             "--control", "--write-config", str(config)], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                if config.exists():
                    return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit(f"{profile}: the served reference did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="standard", help="the suite's budget (default standard)")
    parser.add_argument("--profiles", nargs="*", help="profiles to measure (default all)")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each bare-rate loop")
    parser.add_argument("--where", nargs="*", default=["in-process", "loopback"],
                        help="in-process and/or loopback")
    parser.add_argument("--workers", default="1", help="the suite's --workers (default 1)")
    parser.add_argument("--fuzz-seconds", type=float, default=60.0,
                        help="length of the fuzz campaign split by phase, on loopback (default 60; 0: none)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from conformance.run.profiles import available, load_profile

    names = args.profiles or available()
    help_s = cli("--help")[0]
    list_s = cli("list")[0]
    print(f"start-up: conformance --help {help_s:.2f} s, conformance list {list_s:.2f} s")
    ints, objects = hypothesis_floor()
    print(f"hypothesis alone (no exchange): {ints:.0f} examples/s of integers(), "
          f"{objects:.0f}/s of a small JSON object")
    for name in names:
        first = load_profile(name).requirements[0].id
        with tempfile.TemporaryDirectory() as tmp:
            one_s = cli("run", name, "--only", first, "--report", tmp)[0]
        print(f"{name}: start-up: run --only {first} (start, one check, reports) {one_s:.2f} s")
        for where in args.where:
            target_busy = ""
            if where == "in-process":
                bare, _ = bare_rate(name, args.seconds)
                summary, rss, wall = suite_run(name, args.budget, args.workers)
            else:
                with tempfile.TemporaryDirectory() as tmp:
                    config = Path(tmp) / "target.yaml"
                    server = serve(name, free_port(), config)
                    try:
                        import yaml

                        cfg = yaml.safe_load(config.read_text())
                        (bare, bare_ms), bare_busy = busy(server.pid, bare_rate, name, args.seconds,
                                                          cfg["target"], cfg)
                        (summary, rss, wall), suite_busy = busy(
                            server.pid, suite_run, name, args.budget, args.workers, "--config", str(config))
                        if bare_busy is not None and suite_busy is not None:
                            target_busy = (f"  target busy {bare_busy:.0%} of the bare loop, "
                                           f"{suite_busy:.0%} of the suite run")
                        if args.fuzz_seconds > 0:
                            exchanges, split = fuzz_split(name, args.fuzz_seconds, config)
                            kit = sum(ms for phase, ms in split.items() if phase != "target in process")
                            phases = " + ".join(f"{phase} {ms:.2f}" for phase, ms in split.items()
                                                if phase != "target in process")
                            print(f"{name:12} fuzz {args.fuzz_seconds:g} s on loopback: {exchanges} "
                                  f"exchanges, kit CPU {kit:.2f} ms per exchange = {phases}; the bare "
                                  f"client {bare_ms:.2f} ms per exchange (the same request resent)"
                                  + (f": {kit / bare_ms:.1f} bare exchanges' CPU" if bare_ms else ""),
                                  flush=True)
                    finally:
                        server.terminate()
                        server.wait(10)
            rate = summary["exchanges_per_s"]
            print(f"{name:12} {where:10} {args.budget:8} workers {args.workers:>4} bare {bare:7.1f}/s  suite "
                  f"{rate:7.1f}/s  ratio {rate / bare:5.2f}  {summary['exchanges']:6} exchanges in "
                  f"{summary['duration_s']:6.1f} s (wall {wall:5.1f} s)  peak RSS {rss} MB "
                  f"(controller)  verdict {summary['verdict']}{target_busy}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
