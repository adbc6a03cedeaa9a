"""Imports from one requirement module to another, per protocol (issue 47: a requirement
module never imports another; what two rows share lives in a helper module of the layer
below). A requirement module is one that declares a requirement (``@requirement(...)``,
conformance/declare.py). Every import counts, at module level and inside functions,
found with ``ast``; an import statement counts once per requirement module it reaches.
``python bench/requirement_imports.py`` prints each protocol's count (0 when none);
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


def requirement_imports() -> dict[str, list[tuple[str, int, str]]]:
    """Protocol -> (importing module, line, imported requirement module) for every such import."""
    trees = {}
    for path in sorted(PROTOCOLS.rglob("*.py")):
        trees[module_name(path)] = (path, ast.parse(path.read_text(encoding="utf-8")))
    requirement_modules = {name for name, (_, tree) in trees.items() if declares(tree)}
    out: dict[str, list[tuple[str, int, str]]] = {
        p.name: [] for p in sorted(PROTOCOLS.iterdir()) if (p / "__init__.py").exists()}
    for name in sorted(requirement_modules):
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
    found = requirement_imports()
    for protocol, rows in found.items():
        print(f"{protocol}: {len(rows)}")
        if args.verbose:
            for module, line, target in rows:
                print(f"  {module}:{line} -> {target}")
    print(f"total: {sum(len(rows) for rows in found.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
