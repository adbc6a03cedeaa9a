"""Where the test suite's time goes: runs the README's test command once with a JUnit file
and prints the time per test file (largest first, with its share of the sum of test times),
the slowest tests, and the wall time. Prints figures; asserts nothing.

    .venv/bin/python bench/bench_tests.py [--top N] [PYTEST ARGS...]

The sum of test times exceeds the wall time under xdist (the workers run side by side);
a file's share of that sum is what it costs the machine."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parent.parent


def file_of(case: ElementTree.Element) -> str:
    """The test file of a JUnit test case (its classname is the dotted module path)."""
    classname = case.get("classname") or ""
    parts = [p for p in classname.split(".") if p]
    while parts and not parts[-1].startswith("test_"):
        parts.pop()  # a class inside the module
    return "/".join(parts) + ".py" if parts else classname


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="how many files and tests to list (default 15)")
    args, extra = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               f"--junitxml={junit}", *extra], cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if not junit.exists():
            print(proc.stdout[-2000:] + proc.stderr[-2000:])
            sys.exit(f"pytest wrote no JUnit file (exit {proc.returncode})")
        cases = list(ElementTree.parse(junit).getroot().iter("testcase"))
    by_file: dict[str, float] = defaultdict(float)
    tests = []
    failed = [f"{file_of(case)}::{case.get('name')}" for case in cases
              if case.find("failure") is not None or case.find("error") is not None]
    for case in cases:
        seconds = float(case.get("time") or 0)
        by_file[file_of(case)] += seconds
        tests.append((seconds, f"{file_of(case)}::{case.get('name')}"))
    total = sum(by_file.values()) or 1.0
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    print(f"wall {wall:.1f} s, exit {proc.returncode}, {len(cases)} tests, "
          f"sum of test times {total:.1f} s ({last})")
    for name in failed:  # a failed test's time says little: name it
        print(f"  FAILED {name}")
    print(f"\nfiles, largest first (top {args.top} of {len(by_file)}):")
    for name, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:8.1f} s  {100 * seconds / total:5.1f}%  {name}")
    print(f"\ntests, slowest first (top {args.top}):")
    for seconds, name in sorted(tests, reverse=True)[:args.top]:
        print(f"  {seconds:8.1f} s  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
