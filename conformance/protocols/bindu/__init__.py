"""The Bindu profile: requirement table, reference, faults and state model."""

from __future__ import annotations

from typing import Any

from conformance.model import Profile
from conformance.runner import CheckContext
from conformance.targets import ProtocolMismatch
from conformance.transport.binding import DEFAULT


def create_reference(profile: Profile, control: bool = True, **options: Any) -> Any:
    """The reference ASGI app; ``app.state.reference`` is the instance faults and variants patch."""
    from conformance.protocols.bindu.reference import ReferenceConfig, create_app

    options.setdefault("streaming", True)  # so message/stream results can be checked too
    return create_app(profile, ReferenceConfig(control=control, **options))


def probe(ctx: CheckContext, caller: Any = DEFAULT) -> None:
    """The target must answer a JSON-RPC request on its endpoint with a JSON-RPC envelope."""
    reply = ctx.binding.call("tasks/list", {}, caller=caller)
    env = reply.envelope
    if not (isinstance(env, dict) and env.get("jsonrpc") == "2.0" and ("result" in env or "error" in env)):
        ctype = reply.http.headers.get("content-type", "?")
        raise ProtocolMismatch(
            f"{ctx.http.target} does not speak JSON-RPC 2.0 at {ctx.binding.path}: HTTP {reply.status} ({ctype}) "
            f"{reply.http.text[:80]!r}"
        )


def complete(profile: Profile) -> None:
    """Fill in what the protocol package contributes to the loaded profile."""
    from conformance.protocols.bindu.faults import FAULTS
    from conformance.protocols.bindu.reference import reference_credentials
    from conformance.protocols.bindu.requirements import build
    from conformance.protocols.bindu.variants import VARIANTS

    profile.faults = dict(FAULTS)
    profile.variants = dict(VARIANTS)
    profile.reference_credentials = reference_credentials()
    profile.requirements = build(profile)
