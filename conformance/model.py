"""The plain data the whole tool passes around: profiles, operations, requirements,
exchanges and cases. Nothing here knows a protocol by name."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from conformance.failures import Failure

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
    check: Callable[..., None]  # check(ctx: runner.CheckContext): raises CheckFailed, Blocked, Untested
    faults: tuple[str, ...]
    needs: tuple[str, ...] = ()
    optional: str = ""  # a feature the spec makes optional (the profile's `optional:` block) this checks
    group: str = ""  # the part of the protocol it is about (the profile's `groups:` block: a surface, say)
    # what it does that lasts to an identity (closes, stops, revokes, blocks, erases, spends a
    # quota to its end, publishes): without control it runs only on identities the run made
    # or the config marks disposable (conformance/kit/live.py, CheckContext.lasting)
    lasting: str = ""
    # the shared documents it checks instead of the profile's spec (a binding's: "mcp"); its
    # source cites their line, so the profile's statement map need not name it
    document: str = ""
    # when it applies: guards the runner calls with the CheckContext before the check, each
    # raising NotApplicable with its reason where the row does not apply (another binding, a
    # feature the target declares off); the check's body then never runs
    applies: tuple[Callable[..., None], ...] = ()

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"{self.id}: level {self.level!r} is not one of {LEVELS}")
        if self.source.is_profile and self.level == "MUST":
            raise ValueError(f"{self.id}: a requirement the profile decides cannot be MUST")


@dataclass(frozen=True)
class Declared:
    """What a declaration says of an optional feature: the target's own (an agent card's
    capabilities or security schemes, an MCP server's initialize answer; ``by`` "target"),
    or the user's (the config's ``declared:``; ``by`` "config"). ``said`` is the declaration
    in words ("the agent card declares no securitySchemes"): a row about a feature declared
    off is not applicable, and its verdict carries this, so a report can say which
    declaration made it so."""

    feature: str
    offered: bool
    said: str
    by: str = "target"

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.feature, "offered": self.offered, "said": self.said, "by": self.by}

    @classmethod
    def from_json(cls, data: Any) -> Declared | None:
        if not isinstance(data, dict):
            return None
        return cls(str(data.get("feature", "")), bool(data.get("offered")), str(data.get("said", "")),
                   str(data.get("by", "target")))


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
    unit its name says (``_bytes``, ``_s``, ``_ms``); read by ``conformance.documents.limits``."""

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
    # typed, one per (sub-)check that failed; absent in old files
    failures: list[Failure] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["exchanges"] = [e.to_json() for e in self.exchanges]
        data["failures"] = [f.to_json() for f in self.failures]
        return data

    @classmethod
    def from_json(cls, data: Any) -> Case:
        """A case from its JSON form; ValueError with a one-line reason when ``data`` is
        not one: the keys missing and unknown, or the first value of the wrong type."""
        if not isinstance(data, dict):
            raise ValueError(f"a JSON object is expected, not {_json_type(data)}")
        problems = _key_problems(data, cls)
        if problems:
            raise ValueError(problems)
        for key, kinds, label in _CASE_TYPES:
            if key in data and not _is(data[key], kinds):
                raise ValueError(f"{key} must be {label}, not {_json_type(data[key])}")
        for index, exchange in enumerate(data["exchanges"]):
            if not isinstance(exchange, dict):
                raise ValueError(f"exchanges[{index}] must be an object, not {_json_type(exchange)}")
            problems = _key_problems(exchange, Exchange)
            if problems:
                raise ValueError(f"exchanges[{index}]: {problems}")
            for key, kinds, label in _EXCHANGE_TYPES:
                if key in exchange and not _is(exchange[key], kinds):
                    raise ValueError(f"exchanges[{index}].{key} must be {label}, "
                                     f"not {_json_type(exchange[key])}")
        data = dict(data)
        data["exchanges"] = [Exchange.from_json(e) for e in data["exchanges"]]
        data["failures"] = [Failure.from_json(f) for f in data.get("failures") or [] if isinstance(f, dict)]
        return cls(**data)


# The JSON types of a case file's values (``None`` in a tuple: the key may be null).
_CASE_TYPES: tuple[tuple[str, tuple[type | None, ...], str], ...] = (
    *((key, (str,), "text")
      for key in ("profile", "requirement", "level", "title", "target", "budget", "message")),
    ("source", (dict,), "an object"),
    ("seed", (int,), "an integer"),
    ("format", (int,), "an integer"),
    ("exchanges", (list,), "a list"),
    ("reproduce", (dict, None), "an object or null"),
    ("binding", (str, None), "text or null"),
    ("curl", (list,), "a list"),
    ("failures", (list, None), "a list or null"),
)
_EXCHANGE_TYPES: tuple[tuple[str, tuple[type | None, ...], str], ...] = (
    ("request", (dict,), "an object"),
    ("response", (dict, None), "an object or null"),
    ("elapsed_ms", (int, float), "a number"),
    ("error", (str,), "text"),
)


def _is(value: Any, kinds: tuple[type | None, ...]) -> bool:
    if value is None:
        return None in kinds
    if isinstance(value, bool):  # JSON true/false is no number
        return False
    return any(kind is not None and isinstance(value, kind) for kind in kinds)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true/false", int: "a number",
             float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _key_problems(data: dict[Any, Any], kind: type) -> str:
    """What is wrong with the keys of ``data`` as the dataclass ``kind`` (e.g. ``missing keys
    a, b; unknown key c``), or the empty string."""
    known = {f.name: f for f in fields(kind)}
    required = sorted(name for name, f in known.items()
                      if f.default is MISSING and f.default_factory is MISSING)
    missing = [name for name in required if name not in data]
    unknown = sorted(str(key) for key in data if key not in known)
    parts = [f"{word} key{'s' if len(names) > 1 else ''} {', '.join(names)}"
             for word, names in (("missing", missing), ("unknown", unknown)) if names]
    return "; ".join(parts)


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
    probe: Callable[..., None]  # probe(ctx, caller=DEFAULT): a harmless call; raises ProtocolMismatch
    reference_credentials: dict[str, Any] = field(default_factory=dict)
    # the reference's seeded world (config `world:`), which a live operator names in the config
    reference_world: dict[str, Any] = field(default_factory=dict)
    # behaviours the spec allows but the reference does not choose: no MUST may fail on one
    variants: dict[str, Callable[[Any], None]] = field(default_factory=dict)
    # the statement map (conformance/documents/statements.py)
    statements: list[Any] = field(default_factory=list)
    # a profile being built (YAML `status: draft <what is left>`): listed and self-tested, its
    # statement map not yet held to the coverage bar; `list` and the summary say so
    draft: str = ""
    # features the spec makes optional, which a deployment may declare it does not offer: name -> source
    optional: dict[str, Source] = field(default_factory=dict)
    limits: dict[str, Limit] = field(default_factory=dict)  # the profile's `limits:` block
    # each requirement's measured use of each quota (`quotas:`): id -> quota -> who -> count,
    # from the protocol folder's quota_use.yaml (conformance/kit/live.py plans a live run with it)
    quota_use: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    # a profile built in parts (YAML `deferred: {requirements: [globs], until: why}`): requirements
    # of a later part; the reference does not serve them yet, so they must be untested against it
    deferred: tuple[str, ...] = ()
    deferred_until: str = ""
    # what a shared module asks of the profile's protocol, by name (conformance/kit/protocol.py)
    provides: dict[str, Callable[[Profile], Any]] = field(default_factory=dict)

    def is_deferred(self, rid: str) -> bool:
        return any(fnmatch.fnmatchcase(rid, g) for g in self.deferred)

    def requirement(self, rid: str) -> Requirement:
        for req in self.requirements:
            if req.id == rid:
                return req
        raise KeyError(rid)
