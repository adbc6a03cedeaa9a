"""What a protocol package gives the engine: its module ``protocol.py`` exports ``PROTOCOL``,
a ``Protocol`` (the package's ``__init__.py`` holds only its docstring), and the engine
(profiles.py) builds the profile from it: the requirements, faults and variants its
``modules`` declare (conformance/kit/declare.py), the credentials and world of its
reference. No package changes a ``Profile`` itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.model import Profile


def _none(profile: Profile) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Protocol:
    """One protocol.

    - ``create_reference(profile, control=True, **options)``: an ASGI app whose
      ``state.reference`` faults patch;
    - ``probe(ctx, caller=DEFAULT)``: a harmless call; ProtocolMismatch when the target
      speaks something else;
    - ``modules``: the modules that declare its requirements, faults and variants, in the
      order its rows run (a shared module, MCP's say, among them);
    - ``holdings(reference, credentials)``: what configured identities hold
      (conformance/proofs/liverun.py);
    - ``credentials(profile)``: the credentials its reference accepts; ``world(profile)``
      the seeded world its control reports (a live run names it in the config's ``world:``);
    - ``binding_entries(profile)``: what the document adds to each binding's entry, by
      binding (headers it puts on every call, routes read from the document);
    - ``provides``: what a shared module asks of this protocol, by name (the MCP surface);
    - ``last``: kinds of ``lasting`` whose rows run at the very end, in that order;
    - ``more_faults``: faults of its own (or of a shared module) that rows a shared module
      declares must catch in this profile, by requirement id;
    - ``first``: requirement IDs that run before every other, in that order, lasting or
      not (a live run's rows that need identities nothing has used yet);
    - ``target_bindings(profile, http)``: the profile's bindings the target says it serves, in
      its order of preference (an agent card's interfaces): a run without ``--binding``
      speaks each of them, one report each;
    - ``reference``: where its reference's class is (``package.module:Class``), against which
      the seams its faults and variants patch are checked when the profile loads
      (conformance/faults.py ``check_seams``): a seam that does not exist refuses the profile."""

    create_reference: Callable[..., Any]
    probe: Callable[..., None]
    holdings: Callable[[Any, dict[str, Any]], dict[str, Any]]
    modules: tuple[str, ...] = ()
    credentials: Callable[[Profile], dict[str, Any]] = _none
    world: Callable[[Profile], dict[str, Any]] | None = None
    binding_entries: Callable[[Profile], dict[str, dict[str, Any]]] = _none
    provides: Mapping[str, Callable[[Profile], Any]] = field(default_factory=dict)
    last: tuple[str, ...] = ()
    more_faults: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    first: tuple[str, ...] = ()
    target_bindings: Callable[[Profile, Any], list[str]] | None = None
    reference: str = ""
