"""YAML reading through libyaml when PyYAML has it: the Bindu spec and the statement
maps take about 0.6 s with the pure-Python parser and a tenth of that with libyaml,
which is most of `conformance list`'s start-up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlSyntax(yaml.YAMLError):
    """YAML that does not parse, said in one line that starts with where: ``line`` and
    ``column`` (from 1) of the problem, and the ``problem`` itself."""

    def __init__(self, line: int, column: int, problem: str) -> None:
        super().__init__(f"line {line}, column {column}: {problem}")
        self.line, self.column, self.problem = line, column, problem


def load_yaml(text: str) -> Any:
    """yaml.safe_load, with the C loader when present (the same YAML 1.1 semantics); text that
    does not parse raises ``YamlSyntax`` naming the line and column of the problem."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is None:
            raise
        problem = " ".join(str(exc.problem or exc.context or "does not parse").split())
        if exc.context and exc.problem and exc.context_mark is not None:
            problem += f" ({' '.join(exc.context.split())} at line {exc.context_mark.line + 1})"
        raise YamlSyntax(mark.line + 1, mark.column + 1, problem) from None


def read_user_text(path: Path, what: str) -> str:
    """A file the user named, as text; ValueError with a one-line reason naming ``what``
    and the file when it cannot be read or is not UTF-8 (a binary file, say)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} {path} is not a text file: byte 0x{exc.object[exc.start]:02x} at offset "
                         f"{exc.start} is not UTF-8") from None


def read_user_json(path: Path, what: str, kind: str) -> Any:
    """A JSON file the user named (``kind``: what it should be, for the message)."""
    text = read_user_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} {path} is not JSON: {exc}") from exc
    except RecursionError:
        raise ValueError(f"{what} {path} is not {kind}: JSON nested too deeply") from None
