"""The Canon Agent Verbs profile: two bindings (HTTP, MCP), a reference world,
its faults, the requirement table and the state model."""

from __future__ import annotations

from typing import Any

from conformance.model import Profile
from conformance.runner import CheckContext
from conformance.targets import ProtocolMismatch
from conformance.transport.binding import DEFAULT

REFERENCE_TOKEN = "canon-reference-agent-token"  # the acting agent's bearer token at the reference


def create_reference(profile: Profile, control: bool = True, **options: Any) -> Any:
    """The reference ASGI app; ``app.state.reference`` is the instance faults and variants patch."""
    from conformance.protocols.canon.reference import ReferenceConfig, create_app

    options.setdefault("token", REFERENCE_TOKEN)
    return create_app(profile.settings, profile.spec, ReferenceConfig(control=control, **options), profile.limits)


def probe(ctx: CheckContext, caller: Any = DEFAULT) -> None:
    """The target must answer a harmless verb over the run's binding in its shape."""
    binding = ctx.binding
    reply = binding.call("list_contacts", {}, caller=caller)
    if not (reply.ok or reply.error_code):
        raise ProtocolMismatch(
            f"{ctx.http.target} does not speak the Canon verbs {binding.name} binding: "
            f"HTTP {reply.status} {reply.http.text[:80]!r}"
        )


def complete(profile: Profile) -> None:
    from conformance.protocols.canon.faults import FAULTS
    from conformance.protocols.canon.requirements import build
    from conformance.protocols.canon.variants import VARIANTS

    profile.faults = dict(FAULTS)
    profile.variants = dict(VARIANTS)
    profile.reference_credentials = {"full": REFERENCE_TOKEN}
    profile.requirements = build(profile)
