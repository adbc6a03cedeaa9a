"""Seams by name: counts, per protocol, the faults that still name what they patch by a
string (``replaces(ref, "name")``) and the faults that take ``ref: Any``; ``--convert``
rewrites each ``replaces(<owner>, "<name>")`` as ``replaces(<owner>.<name>)`` (the line
alone changes: a fault names the method itself, conformance/faults.py).

    python bench/seams.py [--convert] [PATHS...]   (default: conformance/protocols, tests)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# replaces(ref, "name"), replaces(ref.mcp, "name"), replaces(server(ref), "name")
BY_STRING = re.compile(r'\breplaces\((?P<owner>[A-Za-z_]\w*(?:\([^()"]*\))?(?:\.[A-Za-z_]\w*)*),\s*'
                       r'"(?P<name>[A-Za-z_]\w*)"\)')
BY_VALUE = re.compile(r'\breplaces\([^()"]*(?:\([^()"]*\))?[^()"]*,\s*[^)]+\)')  # a computed name
REF_ANY = re.compile(r"\bdef \w+\(ref: Any\b")


def files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        p = ROOT / path
        found += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return found


def area(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return parts[2] if parts[:2] == ("conformance", "protocols") else parts[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--convert", action="store_true", help="rewrite string seams as the method itself")
    parser.add_argument("paths", nargs="*", default=["conformance/protocols", "tests"])
    args = parser.parse_args(argv)
    strings: Counter[str] = Counter()
    computed: Counter[str] = Counter()
    untyped: Counter[str] = Counter()
    changed = 0
    for path in files(args.paths):
        text = path.read_text(encoding="utf-8")
        where = area(path)
        strings[where] += len(BY_STRING.findall(text))
        computed[where] += len(BY_VALUE.findall(BY_STRING.sub("", text)))
        untyped[where] += len(REF_ANY.findall(text))
        if args.convert:
            new = BY_STRING.sub(lambda m: f"replaces({m['owner']}.{m['name']})", text)
            if new != text:
                path.write_text(new, encoding="utf-8")
                changed += 1
    print(f"{'area':12} {'by string':>9} {'computed':>9} {'ref: Any':>9}")
    for where in sorted(set(strings) | set(untyped)):
        print(f"{where:12} {strings[where]:>9} {computed[where]:>9} {untyped[where]:>9}")
    print(f"{'all':12} {sum(strings.values()):>9} {sum(computed.values()):>9} {sum(untyped.values()):>9}")
    if args.convert:
        print(f"rewrote {changed} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
