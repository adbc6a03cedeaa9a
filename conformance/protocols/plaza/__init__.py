"""The Agent Plaza profile: an A2A 1.0 personal endpoint with the site's friendship
extension, its data commands and durable receive (specs/agent-plaza/a2a-personal.json)."""

from __future__ import annotations

from typing import Any

from conformance.model import Profile
from conformance.runner import CheckContext
from conformance.targets import ProtocolMismatch
from conformance.transport.binding import DEFAULT


def create_reference(profile: Profile, control: bool = True, **options: Any) -> Any:
    """The reference site's ASGI app; ``app.state.reference`` is what faults patch."""
    from conformance.protocols.plaza.reference import ReferenceConfig, create_app

    return create_app(profile, ReferenceConfig(control=control, **options))


def probe(ctx: CheckContext, caller: Any = DEFAULT) -> None:
    """The target must answer the document's status example as a JSON-RPC endpoint."""
    from conformance.protocols.plaza.client import PlazaClient

    client = PlazaClient(ctx, reset=False)
    reply = client.command("status", {}) if caller == DEFAULT else client.command("status", {}, who=caller)
    if not (reply.ok or reply.error_code is not None):
        raise ProtocolMismatch(
            f"{ctx.http.target} does not answer A2A JSON-RPC at {ctx.binding.path}: HTTP {reply.status} {reply.http.text[:80]!r}"
        )


def complete(profile: Profile) -> None:
    from conformance.protocols.plaza.client import required_headers
    from conformance.protocols.plaza.faults import FAULTS
    from conformance.protocols.plaza.reference import reference_credentials
    from conformance.protocols.plaza.requirements import build
    from conformance.protocols.plaza.variants import VARIANTS

    # every call carries the document's requiredHeaders (values read from the spec)
    profile.settings["bindings"]["jsonrpc"]["headers"] = required_headers(profile.spec)
    profile.faults = dict(FAULTS)
    profile.variants = dict(VARIANTS)
    profile.reference_credentials = reference_credentials()
    profile.requirements = build(profile)
