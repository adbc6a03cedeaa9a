"""Figures of the kit's structure (issues 26 and 47 measure its restructuring by them):
lines of protocol code per requirement for each profile, requirements whose check is an
engine family (conformance/checks/), import cycles among the kit's modules (imports inside
functions and TYPE_CHECKING blocks counted: a function-level import hides a cycle, it does
not remove it), imports between requirement modules per protocol, imports that climb from
a lower layer of the engine to a higher one (``LAYERS``), `type: ignore` comments, and,
where the `duplicates` tool is on PATH, its pair count for conformance/.
``python bench/structure.py`` (``--imports``: the import figures only, no profile loaded)."""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import re
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.run.profiles import available, load_profile  # noqa: E402


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass(frozen=True)
class Import:
    """One import of a kit module by another: where it stands, and whether it runs inside a
    function (a function-level import hides a cycle from a module-level count)."""

    source: str
    target: str
    line: int
    inner: bool


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / "conformance").rglob("*.py"))}


def import_sites() -> list[Import]:
    """Every import of a kit module by another, at module level (TYPE_CHECKING blocks
    included) or inside a function."""
    known = modules()
    out: list[Import] = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inner: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner |= {id(n) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for target in dict.fromkeys(t for t in targets if t in known and t != name):
                out.append(Import(name, target, node.lineno, id(node) in inner))
    return out


def imports(sites: list[Import] | None = None, *, inner: bool = True) -> dict[str, set[str]]:
    """Module -> the kit's modules it imports (``inner``: inside functions too)."""
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for site in import_sites() if sites is None else sites:
        if inner or not site.inner:
            graph[site.source].add(site.target)
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


# The engine's layers, lowest first: a module imports only from its own layer or those
# below it (at module level or inside a function). Each folder of the engine is one layer
# (docs/architecture.md, "Layers"), the root's modules are leaves (data) but for cli.py, and
# three modules of report/ sit lower than their folder. A module missing here is printed as unplaced.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("data", (  # plain data, paths, the documents read, inputs generated from them, text for a reader
        "conformance", "conformance.paths", "conformance.catalog", "conformance.exits", "conformance.model",
        "conformance.failures", "conformance.ledger", "conformance.budgets", "conformance.yamltext",
        "conformance.jsontext", "conformance.documents.*",
        "conformance.generation.*", "conformance.report.words", "conformance.report.shell")),
    ("transport", ("conformance.transport.*",)),
    ("kit", (  # the author's kit: what a protocol's requirements, faults and references are written with
        "conformance.kit.*", "conformance.checks.*")),
    ("protocols", ("conformance.protocols.*",)),
    ("run", (  # a run from its options to verdicts: the profile loaded, the context opened, checks run
        "conformance.run.*", "conformance.report.baseline")),
    ("reports", (  # what a run wrote, read from its verdicts
        "conformance.report", "conformance.report.*")),
    ("proofs", (  # the kit proving itself against its references: the fault matrix, the live-run proof
        "conformance.proofs.*",)),
    ("drivers", (  # what starts a run: the command, the pytest plugin, campaigns, replays
        "conformance.cli", "conformance.drivers.*")),
)


def layer_of(module: str) -> int | None:
    """The index of ``module``'s layer in LAYERS (an exact name before a glob)."""
    for exact in (True, False):
        for index, (_, names) in enumerate(LAYERS):
            for name in names:
                if (module == name) if exact else (name.endswith(".*") and (
                        module == name[:-2] or module.startswith(name[:-1]))):
                    return index
    return None


def violations(sites: list[Import]) -> list[Import]:
    """The imports that climb from a lower layer to a higher one."""
    out = []
    for site in sites:
        low, high = layer_of(site.source), layer_of(site.target)
        if low is not None and high is not None and high > low:
            out.append(site)
    return out


def requirement_modules() -> set[str]:
    """The modules that declare requirements (``@requirement(...)`` of conformance/kit/declare.py)."""
    out = set()
    for name, path in modules().items():
        if name == "conformance.kit.declare":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in node.decorator_list:
                    f = deco.func if isinstance(deco, ast.Call) else deco
                    if (f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute)
                            else "") == "requirement":
                        out.add(name)
    return out


def protocol_of_module(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "protocols" else "(engine)"


def where(site: Import) -> str:
    path = modules()[site.source].relative_to(ROOT)
    return f"{path}:{site.line}{' (in a function)' if site.inner else ''}"


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


def print_imports() -> None:
    """The import figures: cycles (function-level imports counted), imports between
    requirement modules per protocol, layer violations."""
    sites = import_sites()
    found = cycles(imports(sites))
    flat = cycles(imports(sites, inner=False))
    inner = [s for s in sites if s.inner]
    print(f"import cycles: {len(found)} ({sum(map(len, found))} modules in them), counting the "
          f"{len(inner)} imports inside functions ({len(flat)} at module level alone)")
    for comp in found:
        members = set(comp)
        hidden = [s for s in inner if s.source in members and s.target in members]
        print(f"  {', '.join(comp)}")
        for site in hidden:
            print(f"    hidden by {site.source} -> {site.target} ({where(site)})")
    rows = requirement_modules()
    between = [s for s in sites if s.source in rows and s.target in rows]
    per = Counter(protocol_of_module(s.source) for s in between)
    pairs = {(s.source, s.target) for s in between}
    print(f"imports between requirement modules: {len(between)}"
          + (f" ({', '.join(f'{p} {n}' for p, n in sorted(per.items()))}; {len(pairs)} pairs of modules)"
             if per else ""))
    for site in sorted(between, key=lambda s: (s.source, s.target)):
        print(f"  {site.source} -> {site.target} ({where(site)})")
    unplaced = sorted(m for m in modules() if layer_of(m) is None)
    if unplaced:
        print(f"modules in no layer of bench/structure.py LAYERS: {', '.join(unplaced)}")
    climbing = violations(sites)
    print(f"layer violations: {len(climbing)} (layers, lowest first: "
          f"{' < '.join(name for name, _ in LAYERS)})")
    for site in sorted(climbing, key=lambda s: (s.source, s.target)):
        low, high = LAYERS[layer_of(site.source) or 0][0], LAYERS[layer_of(site.target) or 0][0]
        print(f"  {site.source} ({low}) -> {site.target} ({high}) ({where(site)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--imports", action="store_true",
                        help="the import figures alone (no profile is loaded)")
    if parser.parse_args().imports:
        print_imports()
        return 0
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
    print_imports()
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
