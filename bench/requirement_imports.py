"""Imports from one requirement module to another, per protocol (issue 47: a requirement
module never imports another; what two rows share lives in a helper module of the layer
below). A requirement module is one that declares a requirement (``@requirement(...)``,
conformance/kit/declare.py). Every import counts, at module level and inside functions,
found with ``ast``; an import statement counts once per requirement module it reaches.
Beside it, the imports that climb the other way: a module of the layer below (readers,
client, live-run keeping, a state machine, variants: any module of the protocol that
declares no requirement, its package ``__init__`` aside) that imports a requirement module
(the cycles issue 47 names: plaza/keeper.py from groups.py, wever/live.py, now uncontrolled.py, from a2a.py).
``python bench/requirement_imports.py`` prints each protocol's two counts (0 when none);
``-v`` lists the imports too."""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTOCOLS = ROOT / "conformance" / "protocols"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def declares(tree: ast.Module) -> bool:
    """Whether a module declares a requirement: a decorator that calls ``requirement``."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                func = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name == "requirement":
                    return True
    return False


def targets(node: ast.Import | ast.ImportFrom, name: str, package: bool) -> list[str]:
    """The dotted names an import statement may reach: the module and each name imported from it."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = name.split(".") if package else name.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return [module] + [f"{module}.{alias.name}" for alias in node.names]


def requirement_imports(upward: bool = False) -> dict[str, list[tuple[str, int, str]]]:
    """Protocol -> (importing module, line, imported requirement module) for every import of a
    requirement module by another requirement module (``upward``: by a module that declares none)."""
    trees = {}
    for path in sorted(PROTOCOLS.rglob("*.py")):
        trees[module_name(path)] = (path, ast.parse(path.read_text(encoding="utf-8")))
    requirement_modules = {name for name, (_, tree) in trees.items() if declares(tree)}
    out: dict[str, list[tuple[str, int, str]]] = {
        p.name: [] for p in sorted(PROTOCOLS.iterdir()) if (p / "__init__.py").exists()}
    def importing(name: str, path: Path) -> bool:
        if upward:
            return name not in requirement_modules and path.name != "__init__.py"
        return name in requirement_modules

    importers = sorted(name for name, (path, _) in trees.items() if importing(name, path))
    for name in importers:
        path, tree = trees[name]
        protocol = name.split(".")[2]
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            reached = {t for t in targets(node, name, path.name == "__init__.py")
                       if t in requirement_modules and t != name}
            out[protocol] += [(name, node.lineno, t) for t in sorted(reached)]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="list each import")
    args = parser.parse_args()
    found, up = requirement_imports(), requirement_imports(upward=True)
    print("protocol: requirement module -> requirement module, helper module -> requirement module")
    for protocol, rows in found.items():
        print(f"{protocol}: {len(rows)}, {len(up[protocol])}")
        if args.verbose:
            for module, line, target in rows + up[protocol]:
                print(f"  {module}:{line} -> {target}")
    print(f"total: {sum(len(rows) for rows in found.values())}, {sum(len(rows) for rows in up.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
