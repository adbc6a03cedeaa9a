"""The Agent Plaza reference site (server.py): an ASGI app over in-memory state whose
behaviours are small methods faults patch. Its parts are mixins beside it: groups.py,
private.py (the private relay), continuation.py, each its commands with their scopes, its
state under its own keys, its ``reset_<part>``. Callers import what they need from here."""

from __future__ import annotations

from conformance.protocols.plaza.reference.server import PlazaReference, create_app

__all__ = ["PlazaReference", "create_app"]
