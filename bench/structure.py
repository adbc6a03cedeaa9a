"""Figures of the kit's structure (issue 26 measures its restructuring by them):
lines of protocol code per requirement for each profile, import cycles among the
kit's modules (TYPE_CHECKING imports included), requirements whose check is an engine
family (conformance/checks/), `type: ignore` comments, and, where the `duplicates`
tool is on PATH, its pair count for conformance/. ``python bench/structure.py``."""

from __future__ import annotations

import ast
import functools
import inspect
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.profiles import available, load_profile  # noqa: E402


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Module -> the kit's modules it imports at module level (TYPE_CHECKING blocks included)."""
    modules = {module_name(p): p for p in (ROOT / "conformance").rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        body = list(tree.body)
        for node in list(body):
            if isinstance(node, ast.If):  # if TYPE_CHECKING:
                body += node.body
        for node in body:
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# the engine's check families (conformance/checks/): a requirement uses one when its check
# is one (the old rows' closures) or calls one (a check declared in its protocol)
FAMILIES = frozenset({
    "token_required", "token_refused", "scopes", "isolation",  # auth.py
    # idempotency.py
    "replay_once", "replay_concurrent", "conflict_refused", "never_deduplicated", "single_use",
    "not_found",  # errors.py
    # inputs.py
    "valid_inputs_accepted", "invalid_inputs_rejected", "examples_refused", "invalid_code_everywhere",
    "check_rest_operations",  # openapi_rest.py
})


def _called(fn: object) -> set[str]:
    """The names a function calls (``auth.isolation(...)`` and ``isolation(...)`` alike)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))  # type: ignore[arg-type]
    except (OSError, TypeError, SyntaxError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
    return names


def uses_family(check: object) -> bool:
    while isinstance(check, functools.partial):
        check = check.func
    check = getattr(check, "fn", check)  # a declared Check
    if str(getattr(check, "__module__", "")).startswith("conformance.checks"):
        return True
    return bool(_called(check) & FAMILIES)


def main() -> int:
    for name in available():
        profile = load_profile(name)
        package = ROOT / Path(*profile.settings["package"].split("."))
        # the code: Python and the YAML fault tables some packages kept (not measured quota uses)
        files = [p for p in package.rglob("*") if p.suffix == ".py" or p.name == "faults.yaml"]
        texts = [p.read_text(encoding="utf-8") for p in files]
        lines = sum(len(t.splitlines()) for t in texts)
        chars = sum(len(re.sub(r"\s", "", t)) for t in texts)  # what wrapping lines does not change
        count = len(profile.requirements)
        family = sum(uses_family(r.check) for r in profile.requirements)
        print(f"{name}: {count} requirements, {lines} lines in {package.relative_to(ROOT)} "
              f"({lines / count:.1f} a requirement; {chars / count:.0f} non-blank characters a requirement), "
              f"{family} checks from an engine family")
    found = cycles(imports())
    print(f"import cycles: {len(found)}" + "".join(f"\n  {' -> '.join(c)}" for c in found))
    ignores = sum(len(re.findall(r"type: ignore", p.read_text(encoding="utf-8")))
                  for p in (ROOT / "conformance").rglob("*.py"))
    print(f"type: ignore comments in conformance/: {ignores}")
    if shutil.which("duplicates"):
        first = subprocess.run(["duplicates", "--repo", str(ROOT / "conformance"), "--seconds", "120"],
                               capture_output=True, text=True).stdout.splitlines()
        print(f"duplicates in conformance/: {first[0] if first else '?'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
