"""What the Canon package gives the engine (conformance/kit/protocol.py): its ``PROTOCOL``, found by
the loader (conformance/run/profiles.py) here, in a module of its own, so that the package's
``__init__`` imports nothing and no module importing a sibling imports the reference."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext, ProtocolMismatch
from conformance.kit.protocol import Protocol
from conformance.model import Profile
from conformance.protocols import mcp
from conformance.transport.binding import DEFAULT

REFERENCE_TOKEN = "canon-reference-agent-token"  # the acting agent's bearer token at the reference


def create_reference(profile: Profile, control: bool = True, **options: Any) -> Any:
    """The reference ASGI app; ``app.state.reference`` is the instance faults and variants patch."""
    from conformance.protocols.canon.reference import ReferenceConfig, create_app

    options.setdefault("token", REFERENCE_TOKEN)
    return create_app(profile, ReferenceConfig(control=control, **options))


def probe(ctx: CheckContext, caller: Any = DEFAULT) -> None:
    """The target must answer a harmless verb over the run's binding in its shape."""
    binding = ctx.binding
    reply = binding.call("list_contacts", {}, caller=caller)
    # a JSON-RPC answer that breaks the binding is a finding
    if not (reply.ok or reply.error_code or reply.spoke):
        raise ProtocolMismatch(
            f"{ctx.http.target} does not speak the Canon verbs {binding.name} binding: "
            f"HTTP {reply.status} {reply.http.text[:80]!r}"
        )


def credentials(profile: Profile) -> dict[str, Any]:
    """The acting agent's token at the reference."""
    return {"full": REFERENCE_TOKEN}


def world(profile: Profile) -> dict[str, Any]:
    """The seeded world the reference's control reports (a live run's config ``world:``)."""
    from conformance.protocols.canon.reference import world_roles

    return world_roles()


def mcp_surface(profile: Profile) -> Any:
    """What the shared MCP rows need of Canon (bindings.py)."""
    from conformance.protocols.canon.bindings import mcp_surface

    return mcp_surface(profile)


def holdings(reference: Any, credentials: dict[str, Any]) -> dict[str, Any]:
    """What the acting agent (``full``) holds in the in-process reference's world: ``same``,
    whether its token is still accepted, each of its contacts, and each conversation it is
    in with that conversation's members, owner and admins (a conversation it left, a member
    removed, a contact lost or changed shows); ``kept``, the messages of its conversations
    (a live run erases none). Conversations the run made itself add keys, never change one."""
    out: dict[str, Any] = {}
    w = reference.w
    agent = w["roles"]["agent"]
    for label, value in credentials.items():
        token = value.get("token") if isinstance(value, dict) else value
        accepted = reference.config.token is None or token == reference.config.token
        same: dict[str, Any] = {"token accepted": accepted}
        kept: dict[str, list[str]] = {}
        if label == "full":
            for uid, contact in w["contacts"].items():
                same[f"contact {uid}"] = dict(contact)
            for cid, conv in w["conversations"].items():
                if agent not in conv["members"]:
                    continue
                same[f"in conversation {cid}"] = {"members": sorted(conv["members"]), "owner": conv["owner"],
                                                  "admins": sorted(conv["admins"]), "name": conv["name"],
                                                  "topic": conv["topic"]}
                kept[f"messages of {cid}"] = [m["messageId"] for m in conv["messages"]]
        out[label] = {"same": same, "kept": kept}
    return out


# the modules declaring Canon's rows, faults and variants, by part of the document, in the order rows run
MODULES = tuple(f"conformance.protocols.canon.{part}" for part in (
    "ids", "send", "deadlines", "approvals", "humans", "cards", "conversations", "bindings", "lifecycle",
    "verbs", "variants"))

PROTOCOL = Protocol(create_reference=create_reference, probe=probe, holdings=holdings,
                    reference="conformance.protocols.canon.reference:CanonReference",
                    credentials=credentials, world=world, modules=(*MODULES, *mcp.MODULES),
                    provides={"mcp": mcp_surface},
                    # one tool per verb and no other; a tool schema looser than its verb's
                    more_faults={"MCP-TOOLS": ("mcp_tool_extra",),
                                 "MCP-INPUT-SCHEMA": ("mcp_tool_schema_looser", "mcp_tool_one_of_flattened")})
