"""The Canon reference server (server.py): an ASGI app over in-memory state whose behaviours
are small methods faults patch. Callers import what they need from here."""

from __future__ import annotations

from conformance.protocols.canon.reference.server import (
    MEDIA_URL,
    CanonReference,
    ReferenceConfig,
    VerbError,
    create_app,
    spec_verbs,
    world_roles,
)

__all__ = ["CanonReference", "MEDIA_URL", "ReferenceConfig", "VerbError", "create_app", "spec_verbs",
           "world_roles"]
