"""A Protocol Buffers document read with protobuf's own tools: ``grpc_tools.protoc``
compiles it (the google/protobuf imports come with grpc_tools, the google/api ones with
googleapis-common-protos) into a descriptor set, and this module reads what checks and the
reference need from it: each service method with its request and response messages, its
HTTP rules (``google.api.http``: verb, path template, body), whether it streams; each
message's fields with their JSON names, ``REQUIRED`` field behaviour, ``optional``
presence, oneof and type; each enum's values.

Nothing here is typed again from the document: a rename in the proto shows in every row."""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the messages a compiled descriptor set holds (protobuf's, and google.api's rule)
    from google.api import http_pb2
    from google.protobuf import descriptor_pb2


class ProtoError(Exception):
    """The proto does not compile, or lacks what the profile reads from it."""


@dataclass(frozen=True)
class HttpRule:
    """One HTTP mapping of a method: ``verb`` (lower case), ``path`` (a template such as
    ``/tasks/{id=*}:cancel``), ``body`` ("*" or "")."""

    verb: str
    path: str
    body: str = ""

    @property
    def variables(self) -> tuple[str, ...]:
        """The path's variables (``id``, ``task_id``, ``tenant``), proto field names."""
        return tuple(re.findall(r"\{([a-z_]+)(?:=[^}]*)?\}", self.path))

    def fill(self, values: dict[str, str]) -> str:
        """The path with each variable replaced by its value (already URL-escaped)."""
        return re.sub(r"\{([a-z_]+)(?:=[^}]*)?\}", lambda m: values[m.group(1)], self.path)


@dataclass(frozen=True)
class Method:
    name: str
    request: str  # message names, without the package
    response: str
    server_streaming: bool
    http: tuple[HttpRule, ...]  # the primary rule first, then additional_bindings


@dataclass(frozen=True)
class Field:
    name: str  # proto name (snake_case)
    json_name: str  # ProtoJSON name (lowerCamelCase)
    number: int
    kind: str  # scalar type name (string, int32, bool, bytes, ...), "message" or "enum"
    type_name: str  # full type name of a message or enum field (".google.protobuf.Struct"), else ""
    repeated: bool
    map: bool
    required: bool  # [(google.api.field_behavior) = REQUIRED]
    optional: bool  # the proto3 `optional` keyword (explicit presence)
    oneof: str  # the (real) oneof it belongs to, or ""

    @property
    def short_type(self) -> str:
        return self.type_name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Message:
    name: str
    full_name: str
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field:
        for f in self.fields:
            if name in (f.name, f.json_name):
                return f
        raise ProtoError(f"message {self.name} has no field {name!r}")

    @property
    def oneofs(self) -> dict[str, tuple[Field, ...]]:
        out: dict[str, list[Field]] = {}
        for f in self.fields:
            if f.oneof:
                out.setdefault(f.oneof, []).append(f)
        return {k: tuple(v) for k, v in out.items()}


@dataclass(frozen=True)
class ProtoDocument:
    package: str
    services: dict[str, tuple[Method, ...]]
    messages: dict[str, Message]  # by short name, nested messages as Outer.Inner
    enums: dict[str, tuple[str, ...]] = field(default_factory=dict)  # value names, in number order

    def service(self, name: str) -> tuple[Method, ...]:
        if name not in self.services:
            raise ProtoError(f"the proto has no service {name!r} (it has {', '.join(self.services)})")
        return self.services[name]

    def message(self, name: str) -> Message:
        if name not in self.messages:
            raise ProtoError(f"the proto has no message {name!r}")
        return self.messages[name]


_SCALARS = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32",
            8: "bool", 9: "string", 10: "group", 11: "message", 12: "bytes", 13: "uint32", 14: "enum",
            15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}


def _include_paths() -> list[str]:
    import google.api  # googleapis-common-protos: google/api/*.proto
    import grpc_tools  # google/protobuf/*.proto

    api_root = Path(next(iter(google.api.__path__))).parent.parent
    return [str(Path(grpc_tools.__file__).parent / "_proto"), str(api_root)]


def compile_descriptor_set(path: Path) -> bytes:
    """The serialized FileDescriptorSet of ``path`` and its imports (protoc's own output)."""
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        args = ["protoc", f"-I{path.parent}", *(f"-I{p}" for p in _include_paths()),
                "--include_imports", f"--descriptor_set_out={out}", path.name]
        code = protoc.main(args)
        if code != 0 or not os.path.exists(out):
            raise ProtoError(f"{path} does not compile (protoc exit {code})")
        return Path(out).read_bytes()


def _rules(options: descriptor_pb2.MethodOptions) -> tuple[HttpRule, ...]:
    from google.api import annotations_pb2

    if not options.HasExtension(annotations_pb2.http):
        return ()
    rule = options.Extensions[annotations_pb2.http]

    def one(r: http_pb2.HttpRule) -> HttpRule | None:
        kind = r.WhichOneof("pattern")
        if kind is None:
            return None
        if kind == "custom":
            return HttpRule(r.custom.kind.lower(), r.custom.path, r.body)
        return HttpRule(kind, getattr(r, kind), r.body)

    found = [one(rule), *(one(extra) for extra in rule.additional_bindings)]
    return tuple(r for r in found if r is not None)


def _messages(package: str, prefix: str, descriptors: Iterator[descriptor_pb2.DescriptorProto]
              ) -> Iterator[Message]:
    from google.api import field_behavior_pb2

    for d in descriptors:
        name = f"{prefix}{d.name}"
        real_oneofs = [o.name for o in d.oneof_decl]
        maps = {n.name for n in d.nested_type if n.options.map_entry}
        fields = []
        for f in d.field:
            behaviour = list(f.options.Extensions[field_behavior_pb2.field_behavior])
            synthetic = f.proto3_optional
            oneof = real_oneofs[f.oneof_index] if f.HasField("oneof_index") and not synthetic else ""
            fields.append(Field(
                name=f.name, json_name=f.json_name, number=f.number, kind=_SCALARS.get(f.type, "?"),
                type_name=f.type_name if f.type in (11, 14) else "", repeated=f.label == 3,
                map=f.label == 3 and f.type_name.rsplit(".", 1)[-1] in maps,
                required=field_behavior_pb2.REQUIRED in behaviour, optional=bool(synthetic), oneof=oneof))
        yield Message(name=name, full_name=f"{package}.{name}", fields=tuple(fields))
        yield from _messages(package, f"{name}.", iter(d.nested_type))


@functools.lru_cache(maxsize=4)
def load_proto(path: Path) -> ProtoDocument:
    """The document at ``path`` (its own file only; imports serve to resolve types)."""
    from google.api import annotations_pb2, field_behavior_pb2  # noqa: F401  (their options parse)
    from google.protobuf import descriptor_pb2

    files = descriptor_pb2.FileDescriptorSet.FromString(compile_descriptor_set(path)).file
    own = [f for f in files if f.name == path.name]
    if not own:
        raise ProtoError(f"{path} compiled to no file descriptor of its own")
    fd = own[0]

    def short(type_name: str) -> str:
        return type_name.removeprefix(f".{fd.package}.")

    services = {
        s.name: tuple(Method(name=m.name, request=short(m.input_type), response=short(m.output_type),
                             server_streaming=m.server_streaming, http=_rules(m.options))
                      for m in s.method)
        for s in fd.service}
    messages = {m.name: m for m in _messages(fd.package, "", iter(fd.message_type))}
    enums = {e.name: tuple(v.name for v in sorted(e.value, key=lambda v: v.number)) for e in fd.enum_type}
    return ProtoDocument(package=fd.package, services=services, messages=messages, enums=enums)
