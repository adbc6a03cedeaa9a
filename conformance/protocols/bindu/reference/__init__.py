"""The Bindu reference agent (server.py): an ASGI app over in-memory state whose behaviours
are small methods faults patch. Callers import what they need from here."""

from __future__ import annotations

from conformance.protocols.bindu.reference.server import (
    BUSY_STATES,
    MAIN_CLIENT,
    TERMINAL_STATES,
    BinduReference,
    Caller,
    Context,
    ReferenceConfig,
    RpcError,
    Task,
    TokenInfo,
    create_app,
    reference_credentials,
)

__all__ = ["BUSY_STATES", "BinduReference", "Caller", "Context", "MAIN_CLIENT", "ReferenceConfig",
           "RpcError", "TERMINAL_STATES", "Task", "TokenInfo", "create_app", "reference_credentials"]
