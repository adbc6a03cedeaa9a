"""How long a Bindu run takes against the in-process reference, per budget, and
how many exchanges per second it sends. Prints figures; asserts nothing.

    .venv/bin/python bench/bench_run.py [quick standard deep]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(budgets: list[str]) -> None:
    for budget in budgets or ["quick"]:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "conformance.cli", "run", "bindu", "--budget", budget,
                 "--report", tmp],
                cwd=ROOT, capture_output=True, text=True,
            )
            wall = time.perf_counter() - t0
            summary = json.loads((Path(tmp) / "summary.json").read_text())
        print(
            f"bindu {budget:8} exit {proc.returncode}  wall {wall:6.1f} s  run "
            f"{summary['duration_s']:6.1f} s  {summary['exchanges']:6} exchanges  "
            f"{summary['exchanges_per_s']:7.1f}/s  verdict {summary['verdict']}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
