"""The signed bytes of an agent card (section 8.4.1): the card without ``signatures``, its
default values removed as the proto's field presence says (a field marked REQUIRED or
``optional`` stays; any other field at its default goes), canonicalized by RFC 8785.

RFC 8785 through the ``rfc8785`` package (Trail of Bits' implementation of the RFC, numbers
serialized as ECMAScript does, strings escaped as the RFC fixes): ``json.dumps(sort_keys=True)``
is not JCS (it sorts by code point rather than UTF-16 unit, writes floats Python's way and
escapes non-ASCII), so a card with such values would fail a faithful signer. Which fields are
REQUIRED or ``optional`` is read from the proto (conformance/documents/proto.py)."""

from __future__ import annotations

from typing import Any

import rfc8785

from conformance.protocols.a2a import documents as docs

CARD = "AgentCard"
SIGNATURES = "signatures"


def _message(type_name: str) -> Any:
    """The proto message a field's type names, or None for a well-known type (Struct: kept whole)."""
    short = type_name.removeprefix(f".{docs.proto().package}.")
    return docs.proto().messages.get(short)


def _is_default(field: Any, value: Any) -> bool:
    if value is None:  # ProtoJSON: null is the field unset
        return True
    if field.repeated or field.map:
        return value in ([], {})
    if field.kind == "message":
        return False  # a singular message field has presence in proto3
    if field.kind == "enum":
        first = docs.proto().enums.get(field.short_type, ("",))[0]
        return value in (0, first)
    if field.kind == "bool":
        return value is False
    if field.kind in ("string", "bytes"):
        return value == ""
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _inner(field: Any, value: Any, unknown: bool) -> Any:
    """``value`` of a message-typed field with its own defaults removed."""
    if field.kind != "message":
        return value
    message = _message(field.type_name)
    if message is None:
        return value
    if field.map:
        item = message.field("value")
        inner = _message(item.type_name) if item.kind == "message" else None
        return {k: without_defaults(v, inner.name, unknown) if inner and isinstance(v, dict) else v
                for k, v in value.items()} if isinstance(value, dict) else value
    if field.repeated:
        return [without_defaults(v, message.name, unknown) if isinstance(v, dict) else v
                for v in value] if isinstance(value, list) else value
    return without_defaults(value, message.name, unknown) if isinstance(value, dict) else value


def without_defaults(value: dict[str, Any], message: str = CARD, unknown: bool = True) -> dict[str, Any]:
    """``value`` (the JSON of proto message ``message``) with its default-valued fields
    removed, recursively; members the proto does not name are kept as they are (``unknown``)
    or left out (the card as the proto reconstructs it)."""
    fields = {f.json_name: f for f in docs.proto().message(message).fields}
    fields.update({f.name: f for f in docs.proto().message(message).fields})
    out: dict[str, Any] = {}
    for key, member in value.items():
        field = fields.get(key)
        if field is None:
            if unknown:
                out[key] = member
        elif field.required or field.optional or not _is_default(field, member):
            out[key] = _inner(field, member, unknown)
    return out


def payload(card: dict[str, Any], drop_defaults: bool = True, unknown: bool = True) -> bytes:
    """The JWS payload of ``card``: RFC 8785 of the card without ``signatures`` (and, as
    section 8.4.1's rules say, without its default values; without the members the proto
    does not name where ``unknown`` is false)."""
    unsigned = {k: v for k, v in card.items() if k != SIGNATURES}
    return bytes(rfc8785.dumps(without_defaults(unsigned, CARD, unknown) if drop_defaults else unsigned))
