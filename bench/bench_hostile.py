"""How `conformance run bindu --budget quick` ends against each broken target of
tests/hostile.py (on loopback): exit code, wall time and peak resident memory of
the run's process. Prints figures; asserts nothing (tests/e2e/test_hostile_targets.py
asserts the bounds).

    .venv/bin/python bench/bench_hostile.py [behaviour ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import hostile  # noqa: E402
from tests.e2e.test_hostile_targets import BEHAVIOURS, run_conformance  # noqa: E402


def main(names: list[str]) -> None:
    hostile.gzip_bomb_body()
    elsewhere = hostile.HostileServer(hostile.well_behaved, host="127.0.0.2")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or list(BEHAVIOURS):
            handler, config, _ = BEHAVIOURS[name]
            server = hostile.HostileServer(handler or hostile.redirect_to(elsewhere.url))
            try:
                code, seconds, peak, out, _, _ = run_conformance(Path(tmp), name, server.url, config=config)
            finally:
                server.stop()
            last = [line for line in out.splitlines()
                    if line.startswith(("PASS (", "FAIL (", "UNREACHABLE", "TIME"))]
            print(f"{name:18} exit {code}  {seconds:5.1f} s  {peak:4} MB  {(last or [''])[0][:90]}")
    elsewhere.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
