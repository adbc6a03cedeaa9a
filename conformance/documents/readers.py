"""Spec readers, found by the profile YAML key that configures them: each turns
its block and the spec document into operations or error catalog rows. A new kind
of spec document is a new entry here, not a new branch in the profile loader."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.documents.openapi import error_catalog, jsonrpc_operations
from conformance.documents.prose import error_table
from conformance.documents.protojson import proto_operations
from conformance.documents.verbs import (
    action_operations,
    method_operations,
    union_operations,
    verb_operations,
)
from conformance.model import ErrorCode, Operation, Source


@dataclass(frozen=True)
class SpecDocument:
    doc: dict[str, Any]
    text: str
    relpath: str  # as the profile names it, e.g. specs/bindu/openapi.yaml
    profile: str  # the profile's name, for sources the profile decides


def _profile_errors(spec: SpecDocument, block: dict[str, Any]) -> dict[Any, ErrorCode]:
    """A profile's own error codes (the spec is silent): name -> status, when, and the
    code on the wire where it is not the name itself (a JSON-RPC number)."""
    return {row.get("code", name): ErrorCode(row.get("code", name), name, int(row["status"]),
                                             row.get("when", ""),
                                             Source("profile",
                                                    f"profiles/{spec.profile}.yaml#/errors/{name}"))
            for name, row in block.items()}


# profile key -> reader of operations
OPERATION_READERS: dict[str, Callable[[SpecDocument, Any], dict[str, Operation]]] = {
    "jsonrpc": lambda spec, block: jsonrpc_operations(spec.doc, spec.relpath, block),
    "verbs": lambda spec, block: verb_operations(spec.doc, spec.relpath, block),
    "actions": lambda spec, block: action_operations(spec.doc, spec.relpath, block),
    "methods": lambda spec, block: method_operations(spec.doc, spec.relpath, block),
    "commands": lambda spec, block: union_operations(spec.doc, spec.relpath, block),
    "proto": lambda spec, block: proto_operations(spec.doc, spec.relpath, block),
}

# profile key -> reader of error catalog rows
ERROR_READERS: dict[str, Callable[[SpecDocument, Any], dict[Any, ErrorCode]]] = {
    "error_catalog": lambda spec, block: error_catalog(spec.doc, spec.text, spec.relpath, block["pointer"],
                                                       block["columns"]),
    "errors": _profile_errors,
    "error_table": lambda spec, block: error_table(block),
}


def _read(readers: dict[str, Callable[[SpecDocument, Any], dict[Any, Any]]], spec: SpecDocument,
          settings: dict[str, Any]) -> dict[Any, Any]:
    """What every reader whose key the profile sets yields, merged."""
    out: dict[Any, Any] = {}
    for key, reader in readers.items():
        if settings.get(key):
            out.update(reader(spec, settings[key]))
    return out


def read_operations(spec: SpecDocument, settings: dict[str, Any]) -> dict[str, Operation]:
    return _read(OPERATION_READERS, spec, settings)


def read_errors(spec: SpecDocument, settings: dict[str, Any]) -> dict[Any, ErrorCode]:
    return _read(ERROR_READERS, spec, settings)
