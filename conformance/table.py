"""TRANSITIONAL: the requirement tables and fault registries of protocols not yet
declaring their rows on their checks (conformance/declare.py). Goes when none uses it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.check import CheckContext
from conformance.documents.openapi import line_of
from conformance.model import Profile, Requirement, Source
from conformance.yamltext import load_yaml


class FaultRegistry(dict[str, Callable[[Any], None]]):
    """Named faults of one reference: ``@FAULTS`` registers a function that patches
    one behaviour of a reference instance, under the function's name."""

    def __call__(self, fn: Callable[[Any], None]) -> Callable[[Any], None]:
        self[fn.__name__] = fn
        return fn

    def constants(self, path: Path) -> None:
        """Faults declared as data (a YAML file): each makes one method of the
        reference answer a constant (``returns``) or hand back one of its arguments
        untouched (``returns_argument``): ``name: {method, returns | returns_argument, doc}``."""
        for name, row in (load_yaml(path.read_text(encoding="utf-8")) or {}).items():
            def patch(ref: Any, method: str = row["method"], row: dict[str, Any] = row) -> None:
                if "returns_argument" in row:
                    setattr(ref, method, lambda *args, i=row["returns_argument"]: args[i])
                else:
                    setattr(ref, method, lambda *args, **kwargs: row["returns"])

            patch.__name__, patch.__doc__ = name, row["doc"]
            self[name] = patch


class Table:
    """Builds one profile's requirement rows; ``at`` cites the spec."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.spec = profile.spec_relpath
        self._text: str | None = None

    def at(self, pointer: str, needle: str | None = None) -> Source:
        """The spec at ``pointer``; with ``needle``, also the line it stands on."""
        if needle is None:
            return Source(self.spec, pointer)
        if self._text is None:
            self._text = self.profile.spec_path.read_text(encoding="utf-8")
        return Source(self.spec, f"{pointer} (line {line_of(self._text, needle)})")

    def chosen(self, where: str) -> Source:
        """Where the spec is silent: the profile's own choice (never MUST)."""
        return Source("profile", where)

    def code(self, error: str) -> Source:
        """Where a requirement asks for one of the profile's own error codes (its ``errors:``)."""
        return Source("profile", f"profiles/{self.profile.name}.yaml#/errors/{error}")

    def pair(self, rid: str, title: str, source: Source, check: Callable[..., None], faults: tuple[str, ...],
             error: str, code_faults: tuple[str, ...]) -> list[Requirement]:
        """The ambiguity rule as two rows: the MUST asks what the spec says (refused), the
        SHOULD ``<rid>-CODE`` the profile's ``error`` (``check`` called with strict=True)."""
        return [self.req(rid, "MUST", title, source, check, faults),
                self.req(f"{rid}-CODE", "SHOULD", f"{title}: the refusal carries {error}", self.code(error),
                         functools.partial(check, strict=True), code_faults)]

    def req(self, rid: str, level: str, title: str, source: Source, check: Callable[[CheckContext], None],
            faults: tuple[str, ...], needs: tuple[str, ...] = (), optional: str = "", lasting: str = "") -> Requirement:
        """A row; ``optional`` names the feature of the profile's ``optional:`` block it
        depends on (a deployment may declare it does not offer it); ``lasting`` what it does
        that lasts to an identity (conformance/live.py)."""
        if optional and optional not in self.profile.optional:
            raise ValueError(f"{rid}: optional feature {optional!r} is not in the profile's optional: block")
        return Requirement(rid, level, title, source, check, faults, needs, optional, lasting=lasting)
