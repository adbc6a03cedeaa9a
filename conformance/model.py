"""The plain data the whole tool passes around: profiles, operations, requirements,
exchanges and cases. Nothing here knows a protocol by name."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.failures import Failure

if TYPE_CHECKING:
    from conformance.runner import CheckContext

LEVELS = ("MUST", "SHOULD", "MAY")


@dataclass(frozen=True)
class Source:
    """Where a requirement comes from: a spec file and a JSON pointer (or line range),
    or ``profile`` when the spec is silent and the profile made the choice."""

    file: str
    pointer: str = ""

    @property
    def is_profile(self) -> bool:
        return self.file == "profile"

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "pointer": self.pointer}

    def __str__(self) -> str:
        return f"{self.file}#{self.pointer}" if self.pointer else self.file


@dataclass
class Requirement:
    """One testable statement. ``check`` drives the target and raises CheckFailed;
    ``faults`` names the reference faults it must catch; ``needs`` names the
    capabilities (credentials, control) without which it is ``untested``."""

    id: str
    level: str
    title: str
    source: Source
    check: Callable[[CheckContext], None]
    faults: tuple[str, ...]
    needs: tuple[str, ...] = ()
    optional: str = ""  # a feature the spec makes optional (the profile's `optional:` block) this checks
    group: str = ""  # the part of the protocol it is about (the profile's `groups:` block: a surface, say)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"{self.id}: level {self.level!r} is not one of {LEVELS}")
        if self.source.is_profile and self.level == "MUST":
            raise ValueError(f"{self.id}: a requirement the profile decides cannot be MUST")


@dataclass(frozen=True)
class ErrorCode:
    """One row of a spec's error catalog."""

    code: int | str  # JSON-RPC numbers, or a profile's code strings
    name: str
    http_status: int
    when: str
    source: Source


@dataclass(frozen=True)
class Limit:
    """One limit a spec states (or the profile decides where the spec is silent), in the
    unit its name says (``_bytes``, ``_s``, ``_ms``); read by ``conformance.spec.limits``."""

    name: str
    value: int | float
    source: Source


@dataclass(frozen=True)
class Operation:
    """One operation of the wire protocol (a JSON-RPC method, a verb, an action)."""

    name: str
    params_schema: dict[str, Any]
    result_schema: dict[str, Any] | None
    source: Source


@dataclass
class Exchange:
    """One HTTP request and its response, with secrets already redacted."""

    request: dict[str, Any]
    response: dict[str, Any] | None
    elapsed_ms: float = 0.0
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Exchange:
        return cls(**data)


@dataclass
class Case:
    """A saved failure: enough on its own to send again and judge again."""

    profile: str
    requirement: str
    level: str
    title: str
    source: dict[str, str]
    target: str
    seed: int
    budget: str
    message: str
    exchanges: list[Exchange]
    reproduce: dict[str, str] | None = None
    binding: str | None = None
    curl: list[str] = field(default_factory=list)
    format: int = 1
    failures: list[Failure] = field(default_factory=list)  # typed, one per (sub-)check that failed; absent in old files

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["exchanges"] = [e.to_json() for e in self.exchanges]
        data["failures"] = [f.to_json() for f in self.failures]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Case:
        data = dict(data)
        data["exchanges"] = [Exchange.from_json(e) for e in data.get("exchanges", [])]
        data["failures"] = [Failure.from_json(f) for f in data.get("failures") or [] if isinstance(f, dict)]
        return cls(**data)


@dataclass
class Profile:
    """Everything one protocol contributes: its spec, operations, error catalog,
    requirement table, reference factory and faults."""

    name: str
    title: str
    spec_path: Path
    spec_relpath: str
    spec: dict[str, Any]
    spec_sha256: str
    settings: dict[str, Any]
    operations: dict[str, Operation]
    errors: dict[Any, ErrorCode]
    requirements: list[Requirement]
    faults: dict[str, Callable[[Any], None]]
    create_reference: Callable[..., Any]
    probe: Callable[[CheckContext], None]
    reference_credentials: dict[str, Any] = field(default_factory=dict)
    # behaviours the spec allows but the reference does not choose: no MUST may fail on one
    variants: dict[str, Callable[[Any], None]] = field(default_factory=dict)
    statements: list[Any] = field(default_factory=list)  # the statement map (conformance/statements.py)
    # a profile being built (YAML `status: draft <what is left>`): listed and self-tested, its
    # statement map not yet held to the coverage bar; `list` and the summary say so
    draft: str = ""
    # features the spec makes optional, which a deployment may declare it does not offer: name -> source
    optional: dict[str, Source] = field(default_factory=dict)
    limits: dict[str, Limit] = field(default_factory=dict)  # the profile's `limits:` block
    # a profile built in parts (YAML `deferred: {requirements: [globs], until: why}`): requirements
    # of a later part; the reference does not serve them yet, so they must be untested against it
    deferred: tuple[str, ...] = ()
    deferred_until: str = ""

    def is_deferred(self, rid: str) -> bool:
        return any(fnmatch.fnmatchcase(rid, g) for g in self.deferred)

    def requirement(self, rid: str) -> Requirement:
        for req in self.requirements:
            if req.id == rid:
                return req
        raise KeyError(rid)
