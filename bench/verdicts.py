"""The verdict of every requirement of every profile over each binding against the
built-in reference (quick budget, seed 1): ``python bench/verdicts.py OUT.json`` writes
them; ``python bench/verdicts.py OUT.json --compare BEFORE.json`` also prints every
requirement whose verdict changed (a restructuring must change none)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's code, whichever the interpreter was installed from

from conformance.proofs.selftest import bindings_of  # noqa: E402
from conformance.run.launch import open_run  # noqa: E402
from conformance.run.profiles import available, load_profile  # noqa: E402
from conformance.run.runner import execute  # noqa: E402


def verdicts() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for name in available():
        profile = load_profile(name)
        for binding in bindings_of(profile):
            run = open_run(profile, "reference", budget="quick", seed=1, binding=binding)
            try:
                out[f"{name}:{binding}"] = {r.id: execute(r, run).status for r in profile.requirements}
            finally:
                run.http.close()
            print(f"{name}:{binding}: {len(out[f'{name}:{binding}'])} requirements", file=sys.stderr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path, default=None)
    args = parser.parse_args()
    now = verdicts()
    args.out.write_text(json.dumps(now, indent=1, sort_keys=True), encoding="utf-8")
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    changed = [(run, rid, before.get(run, {}).get(rid), now.get(run, {}).get(rid))
               for run in sorted(set(before) | set(now))
               for rid in sorted(set(before.get(run, {})) | set(now.get(run, {})))
               if before.get(run, {}).get(rid) != now.get(run, {}).get(rid)]
    for run, rid, was, is_ in changed:
        print(f"{run} {rid}: {was} -> {is_}")
    print(f"{sum(len(v) for v in now.values())} verdicts, {len(changed)} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
