"""The Wever Connect profile: HTTP actions, the A2A adapter and MCP over one relay."""

from __future__ import annotations

from typing import Any

from conformance.model import Profile
from conformance.runner import CheckContext
from conformance.targets import ProtocolMismatch
from conformance.transport.binding import DEFAULT

ROUTE_ABSENT = (404, 405)  # RFC 9110: no such resource, or not with this method


def create_reference(profile: Profile, control: bool = True, **options: Any) -> Any:
    """The reference relay's ASGI app; ``app.state.reference`` is what faults patch."""
    from conformance.protocols.wever.reference import ReferenceConfig, create_app

    return create_app(profile, ReferenceConfig(control=control, **options))


def probe(ctx: CheckContext, caller: Any = DEFAULT) -> None:
    """The target must answer a harmless action over the run's binding: a result, or a
    refusal the binding flags with a JSON body at a route that exists (its shape is the
    relay's: the manifest names no error body)."""
    reply = ctx.binding.call("get_mailbox", {}, caller=caller)
    refused = reply.flagged and isinstance(reply.http.json(), dict) and reply.status not in ROUTE_ABSENT
    if not (reply.ok or reply.error_code or refused):
        raise ProtocolMismatch(
            f"{ctx.http.target} does not speak the Wever Connect {ctx.binding.name} binding: "
            f"HTTP {reply.status} {reply.http.text[:80]!r}"
        )


def complete(profile: Profile) -> None:
    from conformance.protocols.wever.faults import FAULTS
    from conformance.protocols.wever.reference import reference_credentials
    from conformance.protocols.wever.requirements import build
    from conformance.protocols.wever.variants import VARIANTS

    profile.faults = dict(FAULTS)
    profile.variants = dict(VARIANTS)
    profile.reference_credentials = reference_credentials()
    profile.requirements = build(profile)
