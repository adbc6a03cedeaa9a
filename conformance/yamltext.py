"""YAML reading through libyaml when PyYAML has it: the Bindu spec and the statement
maps take about 0.6 s with the pure-Python parser and a tenth of that with libyaml,
which is most of `conformance list`'s start-up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """yaml.safe_load, with the C loader when present (the same YAML 1.1 semantics)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader


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
