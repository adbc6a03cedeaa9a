"""What every profile declares, as plain data: each requirement's id, level, title,
source, faults, needs, optional feature, group, lasting and document, and each fault's
and variant's name and docstring. ``python bench/declared.py OUT.json`` writes them;
``--compare BEFORE.json`` lists every difference (moving a declaration must change none)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.run.profiles import available, load_profile  # noqa: E402


def declared() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in available():
        profile = load_profile(name)
        out[name] = {
            "requirements": {r.id: {"level": r.level, "title": r.title, "source": str(r.source),
                                    "faults": list(r.faults), "needs": list(r.needs), "optional": r.optional,
                                    "group": r.group, "lasting": r.lasting, "document": r.document}
                             for r in profile.requirements},
            "order": [r.id for r in profile.requirements],
            "faults": {f: " ".join((fn.__doc__ or "").split()) for f, fn in sorted(profile.faults.items())},
            "variants": {v: " ".join((fn.__doc__ or "").split())
                         for v, fn in sorted(profile.variants.items())},
        }
    return out


def differences(before: Any, now: Any, path: str = "") -> list[str]:
    if isinstance(before, dict) and isinstance(now, dict):
        out = []
        for key in sorted(set(before) | set(now)):
            if key not in now:
                out.append(f"{path}/{key}: removed")
            elif key not in before:
                out.append(f"{path}/{key}: added")
            else:
                out += differences(before[key], now[key], f"{path}/{key}")
        return out
    return [] if before == now else [f"{path}: {json.dumps(before)[:200]} -> {json.dumps(now)[:200]}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path, default=None)
    parser.add_argument("--ignore-order", action="store_true",
                        help="do not compare the order of requirements")
    args = parser.parse_args()
    now = declared()
    args.out.write_text(json.dumps(now, indent=1, sort_keys=True), encoding="utf-8")
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    if args.ignore_order:
        for data in (before, now):
            for profile in data.values():
                profile.pop("order", None)
    diffs = differences(before, now)
    for line in diffs:
        print(line)
    print(f"{sum(len(p['requirements']) for p in now.values())} requirements, "
          f"{sum(len(p['faults']) for p in now.values())} faults, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
