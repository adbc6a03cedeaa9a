"""Memory and CPU of a fuzz campaign over time. Prints figures; asserts nothing.

    .venv/bin/python bench/bench_fuzz.py [--profile bindu] [--for 30m] [--workers 1] [--every 10]

Runs `conformance fuzz PROFILE` against the profile's reference served on loopback (so the
target's CPU is not the kit's), samples the resident memory of the campaign's processes
(the parent and its workers, /proc/<pid>/status VmRSS) and their CPU time every few
seconds, and prints each sample, then the growth of RSS from the end of the first minute
to the end (the target: under 10%) and the kit's CPU milliseconds per exchange.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_speed import cpu_seconds, free_port, serve  # noqa: E402


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def rss_mb(pid: int) -> float:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(r"^VmRSS:\s+(\d+)", text, re.M)
    return int(found.group(1)) / 1024 if found else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="bindu")
    parser.add_argument("--for", dest="duration", default="30m", help="campaign length (default 30m)")
    parser.add_argument("--workers", default="1")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "target.yaml"
        server = serve(args.profile, free_port(), config)
        try:
            campaign = subprocess.Popen(
                [sys.executable, "-m", "conformance.cli", "fuzz", args.profile, "--for", args.duration,
                 "--workers", args.workers, "--config", str(config), "--progress", "2",
                 "--report", str(Path(tmp) / "fuzz")],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            os.set_blocking(campaign.stdout.fileno(), False)  # type: ignore[union-attr]
            started, exchanges, samples = time.monotonic(), 0, []
            print(f"{'time':>6} {'RSS MB':>8} {'exchanges':>10} {'kit CPU ms/exchange':>20}", flush=True)
            while campaign.poll() is None:
                time.sleep(args.every)
                for line in (campaign.stdout.read() or "").splitlines():  # type: ignore[union-attr]
                    found = re.match(r"\[\d\d:\d\d\] (\d+) exchanges", line)
                    if found:
                        exchanges = int(found.group(1))
                pids = tree(campaign.pid)
                rss = sum(rss_mb(p) for p in pids)
                cpu = sum(c for p in pids if (c := cpu_seconds(p)) is not None)
                elapsed = time.monotonic() - started
                samples.append((elapsed, rss, exchanges, cpu))
                per = f"{1000 * cpu / exchanges:.2f}" if exchanges else "-"
                print(f"{elapsed:6.0f} {rss:8.1f} {exchanges:10} {per:>20}", flush=True)
        finally:
            server.terminate()
            server.wait(10)
    after_minute = next((s for s in samples if s[0] >= 60), samples[0] if samples else None)
    if after_minute and samples:
        last = samples[-2] if len(samples) > 1 else samples[-1]  # the last sample before the campaign ended
        growth = (last[1] - after_minute[1]) / after_minute[1] if after_minute[1] else 0.0
        print(f"RSS after the first minute {after_minute[1]:.1f} MB, at the end {last[1]:.1f} MB: "
              f"growth {growth:+.1%} (target under +10%)")
        if last[2]:
            print(f"kit CPU {1000 * last[3] / last[2]:.2f} ms per exchange over {last[2]} exchanges "
                  "(parent and workers; the target's CPU is not counted)")


if __name__ == "__main__":
    main()
