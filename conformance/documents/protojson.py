"""A proto service as a profile's operations, with JSON Schemas for their ProtoJSON form.

A JSON Schema bundle built from a proto (protoc-gen-jsonschema's, say) names each message
``<package>.<Name>.jsonschema.json`` in its ``$ref``s and keys its definitions by a spaced
title ("Send Message Request"): the two meet by the name without its spaces. Such a bundle
is silent where the proto speaks: it has no ``required`` (``google.api.field_behavior``),
and no oneof. So each message's schema is the bundle's, with what the proto adds:

- ``answer``: what an answer must be. Objects stay open (unknown members are the reader's to
  ignore); REQUIRED fields present, a REQUIRED list non-empty; at most one member of a oneof,
  exactly one where the profile says the document requires one (``one_of_required``).
- ``closed``: ``answer`` with the bundle's own closed objects (``additionalProperties: false``).
- ``request``: what the kit sends as a valid input: ``closed``, every oneof exactly one,
  and only the lowerCamelCase names (a parser takes the proto names too; the kit need not
  send them).

The profile's ``proto:`` block::

    proto:
      document: specs/a2a/a2a.proto     # the proto (conformance/documents/proto.py)
      service: A2AService               # its methods are the operations
      one_of_required: [SendMessageResponse.payload, StreamResponse.payload]
      empty_lists_allowed: [AgentCard.skills]   # REQUIRED lists the document shows empty
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from conformance.documents.proto import Method, ProtoDocument, load_proto
from conformance.documents.schemas import SpecError, inline_refs
from conformance.model import Operation, Source
from conformance.paths import DATA_ROOT

FLAVOURS = ("answer", "closed", "request")


def definition_names(bundle: dict[str, Any]) -> dict[str, str]:
    """Message name (``SendMessageRequest``, ``Struct``) -> the bundle's definition key."""
    return {key.replace(" ", ""): key for key in bundle.get("definitions", {})}


@functools.lru_cache(maxsize=8)
def _compiled(proto_path: str) -> ProtoDocument:
    from pathlib import Path

    return load_proto(Path(proto_path))


class MessageSchemas:
    """The schemas of one proto and its bundle, per message and flavour (cached)."""

    def __init__(self, proto: ProtoDocument, bundle: dict[str, Any], block: dict[str, Any]) -> None:
        self.proto = proto
        self.bundle = bundle
        self.names = definition_names(bundle)
        self.one_of_required = set(block.get("one_of_required") or ())
        self.empty_lists_allowed = set(block.get("empty_lists_allowed") or ())
        self._cache: dict[tuple[str, str], dict[str, Any]] = {}

    def _key(self, ref: str) -> str:
        """``lf.a2a.v1.Message.jsonschema.json`` -> the key of Message's definition."""
        name = ref.removesuffix(".jsonschema.json").rsplit(".", 1)[-1]
        if name not in self.names:
            raise SpecError(f"$ref {ref!r} names no definition of the schema bundle")
        return self.names[name]

    def _strengthen(self, name: str, schema: dict[str, Any], flavour: str) -> dict[str, Any]:
        out = copy.deepcopy(schema)
        message = self.proto.messages.get(name)
        if flavour != "closed" and flavour != "request":
            out.pop("additionalProperties", None)
        if flavour == "request":
            out.pop("patternProperties", None)
        if message is None or out.get("type") != "object":
            return out
        required = [f.json_name for f in message.fields if f.required]
        if required:
            out["required"] = required
        props = out.setdefault("properties", {})
        for f in message.fields:
            shown_empty = f"{name}.{f.json_name}" in self.empty_lists_allowed
            if f.required and f.repeated and not f.map and not shown_empty:
                props.setdefault(f.json_name, {})["minItems"] = 1
        rules: list[dict[str, Any]] = []
        for oneof, members in message.oneofs.items():
            names = [m.json_name for m in members]
            pairs = [{"required": [a, b]} for i, a in enumerate(names) for b in names[i + 1:]]
            if pairs:
                rules.append({"not": {"anyOf": pairs}})
            if flavour == "request" or f"{name}.{oneof}" in self.one_of_required:
                rules.append({"anyOf": [{"required": [n]} for n in names]})
        if rules:
            out["allOf"] = [*out.get("allOf", []), *rules]
        return out

    def schema(self, name: str, flavour: str = "answer") -> dict[str, Any]:
        """The JSON Schema of message ``name`` in ``flavour`` (self-contained: no $ref)."""
        if flavour not in FLAVOURS:
            raise ValueError(f"flavour {flavour!r} is not one of {FLAVOURS}")
        if (name, flavour) not in self._cache:
            defs = {key: self._strengthen(short, self._local(value), flavour)
                    for short, key in self.names.items()
                    for value in [self.bundle["definitions"][key]]}
            if name not in self.names:
                raise SpecError(f"the schema bundle has no definition for message {name!r}")
            doc = {"definitions": defs}
            self._cache[(name, flavour)] = inline_refs(defs[self.names[name]], doc)
        return self._cache[(name, flavour)]

    def _local(self, node: Any) -> Any:
        """``node`` with each bundle-file ``$ref`` pointed at its definition."""
        if isinstance(node, dict):
            out = {k: self._local(v) for k, v in node.items() if k != "$schema"}
            if isinstance(node.get("$ref"), str) and node["$ref"].endswith(".jsonschema.json"):
                out["$ref"] = "#/definitions/" + self._key(node["$ref"]).replace("~", "~0").replace("/", "~1")
            return out
        if isinstance(node, list):
            return [self._local(v) for v in node]
        return node


def _line(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    return 0


def proto_operations(bundle: dict[str, Any], relpath: str, block: dict[str, Any]) -> dict[str, Operation]:
    """Each method of the block's service: params the request message's ``request``
    schema, result the response message's ``answer`` schema (None for Empty)."""
    path = DATA_ROOT / block["document"]
    proto = _compiled(str(path))
    schemas = MessageSchemas(proto, bundle, block)
    text = path.read_text(encoding="utf-8")
    out: dict[str, Operation] = {}
    for method in proto.service(block["service"]):
        out[method.name] = Operation(
            name=method.name,
            params_schema=schemas.schema(method.request, "request"),
            result_schema=None if method.response.startswith(".google.protobuf.Empty")
            else schemas.schema(method.response, "answer"),
            source=Source(block["document"], f"service {block['service']}, rpc {method.name} "
                                             f"(line {_line(text, f'rpc {method.name}(')})"))
    return out


def methods_of(block: dict[str, Any]) -> tuple[Method, ...]:
    return _compiled(str(DATA_ROOT / block["document"])).service(block["service"])
