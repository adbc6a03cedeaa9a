"""What starting the command costs beside importing pytest: `python -c "import pytest"`,
`conformance list` and `conformance --help`, each a fresh process, run in turns (one of
each per round, so that the machine's load falls on all of them alike), their CPU time
(user + system, from the child's rusage) and wall time, the median of each and the ratio
to `import pytest` (issue 47 asks at most 1.5x for `list`). Prints figures; asserts nothing.

    .venv/bin/python bench/bench_start.py [--rounds 15] [--profile bindu]

``--profile NAME`` adds `conformance list NAME` (which loads that profile) for comparison.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def command_line() -> list[str]:
    """The `conformance` script beside this interpreter (as a user runs it), else the module."""
    script = Path(sys.executable).parent / "conformance"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "conformance.cli"]


def once(argv: list[str]) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of one process running ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    error = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode not in (0, 2):  # --help without a command exits 0; a bare `conformance` 2
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {error[-500:]}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15, help="processes of each command (default 15)")
    parser.add_argument("--profile", default=None,
                        help="add `conformance list PROFILE` (it loads the profile)")
    args = parser.parse_args()
    tool = command_line()
    commands = {
        'python -c "import pytest"': [sys.executable, "-c", "import pytest"],
        "conformance list": [*tool, "list"],
        "conformance --help": [*tool, "--help"],
    }
    if args.profile:
        commands[f"conformance list {args.profile}"] = [*tool, "list", args.profile]
    for argv in commands.values():  # warm the file cache and the bytecode before measuring
        once(argv)
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    wall: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.rounds):
        for name, argv in commands.items():
            c, w = once(argv)
            cpu[name].append(c)
            wall[name].append(w)
    base_cpu = statistics.median(cpu['python -c "import pytest"'])
    base_wall = statistics.median(wall['python -c "import pytest"'])
    print(f"{args.rounds} rounds, medians ({' '.join(tool)}):")
    print(f"  {'command':32} {'CPU s':>7} {'x pytest':>8} {'wall s':>7} {'x pytest':>8}")
    for name in commands:
        c, w = statistics.median(cpu[name]), statistics.median(wall[name])
        print(f"  {name:32} {c:7.3f} {c / base_cpu:7.2f}x {w:7.3f} {w / base_wall:7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
