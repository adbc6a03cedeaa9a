"""What the Bindu package gives the engine (conformance/kit/protocol.py): its ``PROTOCOL``, found by
the loader (conformance/run/profiles.py) here, in a module of its own, so that the package's
``__init__`` imports nothing and no module importing a sibling imports the reference."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext, ProtocolMismatch
from conformance.kit.protocol import Protocol
from conformance.model import Profile
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
            f"{ctx.http.target} does not speak JSON-RPC 2.0 at {ctx.binding.path}: HTTP {reply.status} "
            f"({ctype}) {reply.http.text[:80]!r}"
        )


def credentials(profile: Profile) -> dict[str, Any]:
    """The credentials the reference accepts (looked up when the profile loads)."""
    from conformance.protocols.bindu import reference

    return reference.reference_credentials()


def holdings(reference: Any, credentials: dict[str, Any]) -> dict[str, Any]:
    """What each configured credential holds at the in-process reference: ``same``, whether
    its token is still accepted (introspection finds it active and unexpired, with its
    scopes, client and registered key) and the state of each task its client owned; ``kept``,
    the tasks and contexts its client owns (a live run erases none of them)."""
    out: dict[str, Any] = {}
    for label, value in credentials.items():
        token = value.get("token") if isinstance(value, dict) else value
        info = reference.lookup_token(token) if isinstance(token, str) else None
        accepted = info is not None and info.active and not reference.is_expired(info)
        client = info.client_id if info is not None else None
        tasks = {t.id: t.state for t in reference.tasks.values() if client is not None and t.owner == client}
        same: dict[str, Any] = {"token accepted": accepted, "client_id": client,
                                "scopes": sorted(info.scopes) if info is not None else None,
                                "public_key": info.public_key if info is not None else None}
        same.update({f"state of task {task_id}": state for task_id, state in tasks.items()})
        contexts = sorted(c.id for c in reference.contexts.values()
                          if client is not None and c.owner == client)
        out[label] = {"same": same, "kept": {"tasks": sorted(tasks), "contexts": contexts}}
    return out


# the modules declaring requirements, faults and variants, in the order their rows run
MODULES = ("envelope", "tasks", "contexts", "send", "stream", "lifecycle", "auth", "did", "rest", "methods",
           "variants")
PROTOCOL = Protocol(create_reference=create_reference, probe=probe, holdings=holdings,
                    reference="conformance.protocols.bindu.reference:BinduReference",
                    credentials=credentials, modules=tuple(f"{__package__}.{module}" for module in MODULES))
