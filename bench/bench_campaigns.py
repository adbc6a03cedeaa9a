"""Each profile's campaign against its own reference: the references hold at campaign depth.
Prints figures; asserts nothing.

    .venv/bin/python bench/bench_campaigns.py [--for 10m] [--profiles bindu,a2a] [--workers 1]

Runs `conformance fuzz PROFILE --for DURATION` with no target (the built-in reference, in
process: the campaign draws far deeper than a selftest's quick budget) for each profile in
turn and prints, per profile, the exchanges, the rounds, the distinct failures and the kit's
own errors the campaign reported, each failure's first line, and where fuzz.json is. A correct
reference and a correct kit give 0 failures and 0 kit errors on every profile (issue 45: a
90-second campaign had found a crash in the kit's Canon input preparation and an HTTP 500 of
the A2A reference to a valid request).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ("bindu", "canon-verbs", "wever-connect", "agent-plaza", "a2a")


def campaign(profile: str, duration: str, workers: str, folder: Path) -> dict:
    """One campaign's fuzz.json (with the command's exit code and wall time)."""
    report = folder / profile
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "fuzz", profile, "--for", duration,
                           "--workers", workers, "--report", str(report), "--progress", "10"],
                          cwd=ROOT, capture_output=True, text=True)
    written = report / "fuzz.json"
    summary = (json.loads(written.read_text(encoding="utf-8")) if written.exists()
               else {"failures": [], "kit_errors": [], "exchanges": 0, "rounds": {}})
    summary["exit"] = done.returncode
    summary["wall_s"] = round(time.monotonic() - started, 1)
    summary["report"] = str(report)
    summary["tail"] = (done.stdout + done.stderr).strip().splitlines()[-3:]
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--for", dest="duration", default="10m", help="each campaign's length (default 10m)")
    parser.add_argument("--profiles", default=",".join(PROFILES), help="comma-separated (default: all five)")
    parser.add_argument("--workers", default="1", help="workers per campaign (default 1)")
    parser.add_argument("--report", default=None,
                        help="folder for the campaigns' reports (default: a temp dir)")
    args = parser.parse_args()
    folder = Path(args.report or tempfile.mkdtemp(prefix="bench-campaigns-"))
    print(f"campaigns of {args.duration} each against the built-in references; reports under {folder}")
    print(f"{'profile':16} {'exchanges':>10} {'rounds':>6} {'failures':>8} {'kit errors':>10} "
          f"{'exit':>4}  wall")
    totals = [0, 0, 0]
    for profile in args.profiles.split(","):
        found = campaign(profile.strip(), args.duration, args.workers, folder)
        rounds = max((int(r) for r in (found.get("rounds") or {}).values()), default=0)
        failures, errors = found.get("failures") or [], found.get("kit_errors") or []
        totals = [totals[0] + int(found.get("exchanges") or 0), totals[1] + len(failures),
                  totals[2] + len(errors)]
        print(f"{profile:16} {found.get('exchanges', 0):>10} {rounds:>6} {len(failures):>8} "
              f"{len(errors):>10} "
              f"{found['exit']:>4}  {found['wall_s']} s", flush=True)
        for item in failures + errors:
            print(f"    {item.get('kind', 'failure')} {item['level']} {item['requirement']}: "
                  f"{str(item['message'])[:200]}")
        if found["exit"] not in (0, 1, 4):
            print("    " + " / ".join(found["tail"]))
    print(f"{'all':16} {totals[0]:>10} {'':>6} {totals[1]:>8} {totals[2]:>10}")


if __name__ == "__main__":
    main()
