"""What a protocol package gives the engine: its ``__init__.py`` exports ``PROTOCOL``, a
``Protocol``, and the engine (profiles.py) builds the profile from it; no package
changes a ``Profile`` itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.model import Profile, Requirement


@dataclass(frozen=True)
class Parts:
    """What a protocol adds to a loaded profile: its requirement rows, the faults and
    variants of its reference, the credentials and world that reference holds, and the
    headers each binding carries that the document gives (binding name -> headers)."""

    requirements: list[Requirement]
    faults: dict[str, Callable[[Any], None]]
    variants: dict[str, Callable[[Any], None]]
    reference_credentials: dict[str, Any]
    reference_world: dict[str, Any] | None = None
    binding_headers: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Protocol:
    """One protocol: ``create_reference(profile, control=True, **options)`` (an ASGI app
    whose ``state.reference`` faults patch), ``probe(ctx, caller=DEFAULT)`` (a harmless call;
    ProtocolMismatch when the target speaks something else), ``parts(profile)`` and
    ``holdings(reference, credentials)`` (what configured identities hold: conformance/liverun.py)."""

    create_reference: Callable[..., Any]
    probe: Callable[..., None]
    parts: Callable[[Profile], Parts]
    holdings: Callable[[Any, dict[str, Any]], dict[str, Any]]
