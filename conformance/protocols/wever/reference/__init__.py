"""The Wever Connect reference relay (server.py): an ASGI app over in-memory state whose
behaviours are small methods faults patch. Callers import what they need from here."""

from __future__ import annotations

from conformance.protocols.wever.reference.server import (
    ACCEPTED,
    ALLOWED,
    CANCELLED,
    DECLINED,
    DENIED,
    HOUR_S,
    INBOX_STATES,
    OFFERED,
    PENDING,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    Call,
    ReferenceConfig,
    RelayError,
    RpcError,
    WeverReference,
    compact_json,
    create_app,
    reference_credentials,
)

__all__ = ["ACCEPTED", "ALLOWED", "CANCELLED", "Call", "DECLINED", "DENIED", "HOUR_S", "INBOX_STATES",
           "OFFERED", "PENDING", "ReferenceConfig", "RelayError", "RpcError", "TASK_NOT_CANCELABLE",
           "TASK_NOT_FOUND", "WeverReference", "compact_json", "create_app", "reference_credentials"]
