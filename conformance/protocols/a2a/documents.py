"""What the A2A profile reads from its three documents beyond operations and the error
table (profiles/a2a.yaml): citations into the prose and the proto, the task states and
which are terminal or interrupted (the proto's comments say), the ErrorInfo rules of
sections 10.6 and 11.6, the standard JSON-RPC errors of section 9.5, and the schemas of
every message (conformance/documents/protojson.py). Nothing here is typed from the spec:
a value the code needs is read, and a citation that stops matching fails the load."""

from __future__ import annotations

import functools
import re
from typing import Any

from conformance.documents.openapi import markdown_tables
from conformance.documents.prose import document_text, statement
from conformance.documents.proto import ProtoDocument
from conformance.documents.protojson import MessageSchemas, _compiled
from conformance.documents.schemas import SpecError
from conformance.model import Profile, Source
from conformance.paths import DATA_ROOT

SPEC = "specs/a2a/specification.md"
PROTO = "specs/a2a/a2a.proto"


def spec(needle: str, after: str = "") -> Source:
    """The statement of specification.md holding ``needle`` (below ``after``)."""
    return statement(SPEC, needle, after)


def proto_at(needle: str, after: str = "") -> Source:
    """The line of a2a.proto holding ``needle`` (below ``after``): cited by message and line."""
    lines = document_text(PROTO).splitlines()
    start = next((i for i, line in enumerate(lines) if after in line), -1) if after else 0
    if start < 0:
        raise SpecError(f"{PROTO} has no line holding {after!r}")
    for i in range(start, len(lines)):
        if needle in lines[i]:
            below = i  # a comment speaks of the declaration it stands above
            while below < len(lines) - 1 and lines[below].strip().startswith("//"):
                below += 1
            owner = next((m.group(1) for line in reversed(lines[:below + 1])
                          if (m := re.match(r"(?:message|enum|service)\s+(\w+)", line))), "")
            return Source(PROTO, f"{owner} (line {i + 1})" if owner else f"line {i + 1}")
    raise SpecError(f"{PROTO} has no line holding {needle!r}")


@functools.lru_cache(maxsize=2)
def proto() -> ProtoDocument:
    return _compiled(str(DATA_ROOT / PROTO))


_SCHEMAS: dict[str, MessageSchemas] = {}


def schemas(profile: Profile) -> MessageSchemas:
    """The message schemas of ``profile`` (built once per profile)."""
    if profile.name not in _SCHEMAS:
        _SCHEMAS[profile.name] = MessageSchemas(proto(), profile.spec, profile.settings["proto"])
    return _SCHEMAS[profile.name]


def schema(profile: Profile, message: str, flavour: str = "answer") -> dict[str, Any]:
    """The JSON Schema of proto message ``message`` (``answer``, ``closed`` or ``request``)."""
    return schemas(profile).schema(message, flavour)


@functools.lru_cache(maxsize=1)
def state_kinds() -> dict[str, str]:
    """Each TaskState but UNSPECIFIED -> "terminal", "interrupted" or "active", as the comment
    above its value in the proto says ("This is a terminal state.")."""
    lines = document_text(PROTO).splitlines()
    out: dict[str, str] = {}
    for name in proto().enums["TaskState"]:
        if name.endswith("_UNSPECIFIED"):
            continue
        i = next(n for n, line in enumerate(lines) if re.match(rf"\s*{name}\s*=", line))
        comment = []
        while i > 0 and lines[i - 1].strip().startswith("//"):
            i -= 1
            comment.append(lines[i])
        said = " ".join(comment)
        out[name] = "terminal" if "terminal state" in said else "interrupted" if "interrupted state" in said \
            else "active"
    return out


def terminal_states() -> tuple[str, ...]:
    return tuple(s for s, kind in state_kinds().items() if kind == "terminal")


def interrupted_states() -> tuple[str, ...]:
    return tuple(s for s, kind in state_kinds().items() if kind == "interrupted")


def task_states() -> tuple[str, ...]:
    return tuple(state_kinds())


def state_named(word: str) -> str:
    """The TaskState whose name ends in ``word`` (``COMPLETED`` -> ``TASK_STATE_COMPLETED``)."""
    for name in state_kinds():
        if name.endswith("_" + word.upper()):
            return name
    raise SpecError(f"the proto's TaskState has no value ending in {word!r}")


def comment_above(pattern: str, after: str = "") -> str:
    """The ``//`` comment lines right above the first line of the proto matching ``pattern``
    (below the line holding ``after``), joined."""
    lines = document_text(PROTO).splitlines()
    start = next((n for n, line in enumerate(lines) if after in line), 0) if after else 0
    i = next((n for n in range(start, len(lines)) if re.search(pattern, lines[n])), None)
    if i is None:
        raise SpecError(f"{PROTO} has no line matching {pattern!r}" + (f" below {after!r}" if after else ""))
    said = []
    while i > 0 and lines[i - 1].strip().startswith("//"):
        i -= 1
        said.append(lines[i].strip().lstrip("/").strip())
    return " ".join(reversed(said))


@functools.lru_cache(maxsize=1)
def client_role() -> str:
    """The Role of a message a client sends: the value the proto says is "from the client
    to the server" (a client sending the other is the agent speaking)."""
    for name in proto().enums["Role"]:
        if "from the client" in comment_above(rf"^\s*{name}\s*=", after="enum Role"):
            return name
    raise SpecError(f"{PROTO}: no Role value is said to be from the client")


@functools.lru_cache(maxsize=1)
def example_schemes() -> tuple[str, ...]:
    """The HTTP authentication schemes the proto gives as examples for a push notification's
    AuthenticationInfo.scheme ("from the IANA registry ... Examples: `Bearer`, ..."): what a
    client sends there (a scheme outside the registry is no scheme a client may send)."""
    said = comment_above(r"string scheme = ", after="message AuthenticationInfo")
    found = re.search(r"Examples: (.*?)\.", said)
    names = tuple(re.findall(r"`([^`]+)`", found.group(1))) if found else ()
    if not names or "IANA registry" not in said:
        raise SpecError(f"{PROTO}: AuthenticationInfo.scheme no longer names its registry and examples")
    return names


def role_named(word: str) -> str:
    for name in proto().enums["Role"]:
        if name.endswith("_" + word.upper()):
            return name
    raise SpecError(f"the proto's Role has no value ending in {word!r}")


@functools.lru_cache(maxsize=1)
def error_info() -> dict[str, str]:
    """The ErrorInfo rules of section 11.6: its ``@type`` and ``domain`` values."""
    text = document_text(SPEC)
    section = text[text.index("### 11.6. Error Handling"):]
    found = {key: re.search(rf"`{re.escape(key)}`: Set to `\"([^\"]+)\"`", section)
             for key in ("@type", "domain")}
    missing = [k for k, m in found.items() if m is None]
    if missing:
        raise SpecError(f"{SPEC} section 11.6 no longer says what ErrorInfo's {missing} is")
    return {k: m.group(1) for k, m in found.items() if m is not None}


def reason_of(error_name: str) -> str:
    """Section 11.6: "The A2A error type in UPPER_SNAKE_CASE without the "Error" suffix"
    (``TaskNotFoundError`` -> ``TASK_NOT_FOUND``)."""
    stem = error_name.removesuffix("Error")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).upper()


@functools.lru_cache(maxsize=1)
def jsonrpc_errors() -> dict[str, int]:
    """The standard JSON-RPC errors of section 9.5: error name -> code."""
    for table in markdown_tables(document_text(SPEC)):
        if "JSON-RPC Error Code" in table.columns and "Error Name" in table.columns:
            return {row["Error Name"]: int(row["JSON-RPC Error Code"]) for row in table.rows}
    raise SpecError(f"{SPEC} has no table of the standard JSON-RPC errors (section 9.5)")


@functools.lru_cache(maxsize=1)
def jsonrpc_codes() -> dict[str, int]:
    """The JSON-RPC code of every error the specification names: section 9.5's standard
    errors and the A2A errors of section 5.4 (what a server that is no a2a profile's, such
    as Wever's adapter, answers with)."""
    for table in markdown_tables(document_text(SPEC)):
        if "A2A Error Type" in table.columns and "JSON-RPC Code" in table.columns:
            own = {row["A2A Error Type"]: int(row["JSON-RPC Code"]) for row in table.rows}
            return {**jsonrpc_errors(), **own}
    raise SpecError(f"{SPEC} has no error table with a JSON-RPC column (section 5.4)")


@functools.lru_cache(maxsize=1)
def grpc_statuses() -> dict[str, str]:
    """The gRPC status of each A2A error (section 5.4): what a google.rpc.Status names."""
    for table in markdown_tables(document_text(SPEC)):
        if "A2A Error Type" in table.columns and "gRPC Status" in table.columns:
            return {row["A2A Error Type"]: row["gRPC Status"] for row in table.rows}
    raise SpecError(f"{SPEC} has no error table with a gRPC column (section 5.4)")


def rest_routes(profile: Profile) -> dict[str, list[dict[str, str]]]:
    """The HTTP+JSON routes of each method (its google.api.http rules), with path variables
    named by their JSON names (``{task_id=*}`` -> ``{taskId}``)."""
    doc = proto()
    out: dict[str, list[dict[str, str]]] = {}
    for method in doc.service(profile.settings["proto"]["service"]):
        fields = doc.message(method.request)

        def json_name(m: re.Match[str], of: Any = fields) -> str:
            return "{" + of.field(m.group(1)).json_name + "}"
        routes = []
        for rule in method.http:
            path = re.sub(r"\{([a-z_]+)(?:=[^}]*)?\}", json_name, rule.path)
            routes.append({"verb": rule.verb, "path": path, "body": rule.body})
        out[method.name] = routes
    return out
