"""The profiles there are: their files and what each YAML says of itself, read without
loading a profile (no protocol imported, no document read or compiled), as `conformance list`
prints them. ``profiles.load_profile`` loads one when a command uses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from conformance.paths import PROFILES_DIR
from conformance.yamltext import load_yaml


class ProfileError(Exception):
    """A profile is unknown or its YAML is malformed."""


def available() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def profile_path(name: str) -> Path:
    path = PROFILES_DIR / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(available()) or "none"
        raise ProfileError(f"unknown profile {name!r} (available: {known})")
    return path


def read_settings(path: Path) -> dict[str, Any]:
    try:
        settings = load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ProfileError(f"profile {path} does not parse: {str(exc).splitlines()[0]}") from exc
    if not isinstance(settings, dict) or "spec" not in settings or "package" not in settings:
        raise ProfileError(f"profile {path} must be a mapping with at least 'spec' and 'package'")
    return settings


def draft_of(settings: dict[str, Any]) -> str:
    """What a draft profile still lacks (its ``status: draft <what is left>``), "" when it is
    not a draft."""
    status = str(settings.get("status") or "")
    return (status.removeprefix("draft").strip(" :") or "in progress") if status.startswith("draft") else ""


def is_profile_file(path: Path) -> bool:
    """A YAML file that is a profile (its ``package:`` names one of the kit's protocols),
    wherever it lies: a copy outside the checkout runs as the original does."""
    if path.suffix != ".yaml" or not path.is_file():
        return False
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:20000]
    except OSError:
        return False
    return any(line.startswith("package: conformance.protocols.") for line in head.splitlines())
