"""A fuzz campaign's cost per exchange at two (or more) git revisions, side by side.
Prints figures; asserts nothing.

    .venv/bin/python bench/bench_revisions.py 5256d40 HEAD [--profiles bindu canon-verbs]
        [--seconds 60] [--rounds 4]

Why: a campaign's CPU per exchange moves with the machine (and with whatever else it runs
at the time) more than with most changes, so a figure from another day or host says little.
Here each revision is checked out in a temporary worktree and runs `conformance fuzz
PROFILE --for SECONDS` against its own reference served on loopback, the revisions taking
turns (the order reversed every other round, so a machine slowing down over the run does
not favour one), and each revision's median is given as a multiple of the first's.

The kit's CPU is the whole campaign process's (rusage of the process and what it waited
for: start-up included, the same for every revision), its exchanges the count in its
fuzz.json; the target's CPU (its /proc stat) is printed beside it, since a kit that sends
requests the target finds cheaper also changes what the target does. Revisions older than
the phase ledger (fuzz.json `cpu_ms`) are measured all the same: nothing here reads it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_speed import cpu_seconds, free_port, serve  # noqa: E402


@dataclass
class Measure:
    exchanges: int
    per_s: float
    kit_ms: float  # the campaign's CPU per exchange, start-up included
    target_ms: float | None  # the served reference's CPU per exchange


def checkout(revision: str, into: Path) -> Path:
    """A detached worktree of ``revision`` (removed by ``drop``)."""
    folder = into / revision.replace("/", "_")
    done = subprocess.run(["git", "worktree", "add", "--detach", str(folder), revision], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{revision}: no worktree ({done.stderr.strip().splitlines()[-1]})")
    return folder


def drop(folder: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=ROOT, capture_output=True)


def campaign(tree: Path, profile: str, seconds: float) -> Measure:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "target.yaml"
        server = serve(profile, free_port(), config, cwd=tree)
        try:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            target_before, started = cpu_seconds(server.pid), time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "conformance.cli", "fuzz", profile, "--config",
                                   str(config), "--for", f"{seconds:g}s", "--report", f"{tmp}/report"],
                                  cwd=tree, capture_output=True, text=True,
                                  env={**os.environ, "PYTHONHASHSEED": "0"})
            wall = time.perf_counter() - started
            target_after = cpu_seconds(server.pid)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            found = Path(tmp) / "report" / "fuzz.json"
            if not found.exists():
                sys.exit(f"{tree.name}: the campaign wrote no fuzz.json (exit {done.returncode}): "
                         f"{done.stderr[-400:]}")
            exchanges = max(int(json.loads(found.read_text())["exchanges"]), 1)
        finally:
            server.terminate()
            server.wait(10)
    kit = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    target = None if target_before is None or target_after is None else target_after - target_before
    return Measure(exchanges, exchanges / wall, kit * 1000 / exchanges,
                   None if target is None else target * 1000 / exchanges)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revisions", nargs="+", help="git revisions to compare (the first is the baseline)")
    parser.add_argument("--profiles", nargs="*", default=["bindu", "canon-verbs"],
                        help="profiles to measure (default bindu canon-verbs)")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each campaign (default 60)")
    parser.add_argument("--rounds", type=int, default=4,
                        help="campaigns per revision and profile (default 4)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = [(revision, checkout(revision, Path(tmp))) for revision in args.revisions]
        try:
            for profile in args.profiles:
                kit: dict[str, list[float]] = {revision: [] for revision, _ in trees}
                for round_no in range(args.rounds):
                    for revision, tree in trees if round_no % 2 == 0 else trees[::-1]:
                        m = campaign(tree, profile, args.seconds)
                        kit[revision].append(m.kit_ms)
                        target = "" if m.target_ms is None else f", target {m.target_ms:.2f} ms per exchange"
                        print(f"{profile:12} round {round_no} {revision:>12}: {m.exchanges:7} exchanges "
                              f"({m.per_s:5.0f}/s), kit CPU {m.kit_ms:.2f} ms per exchange{target}",
                              flush=True)
                base = statistics.median(kit[trees[0][0]])
                for revision, values in kit.items():
                    middle = statistics.median(values)
                    print(f"{profile:12} {revision:>12}: kit CPU {min(values):.2f}-{max(values):.2f} ms per "
                          f"exchange, median {middle:.2f} ({middle / base:.2f} of {trees[0][0]}'s)",
                          flush=True)
        finally:
            for _, tree in trees:
                drop(tree)


if __name__ == "__main__":
    main()
