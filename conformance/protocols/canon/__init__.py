"""The Canon Agent Verbs profile: two bindings (HTTP, MCP), a reference world,
its faults, the requirement table and the state model."""

from __future__ import annotations

from typing import Any

from conformance.check import CheckContext, ProtocolMismatch
from conformance.model import Profile
from conformance.protocol import Parts, Protocol
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
    if not (reply.ok or reply.error_code or reply.spoke):  # a JSON-RPC answer that breaks the binding is a finding
        raise ProtocolMismatch(
            f"{ctx.http.target} does not speak the Canon verbs {binding.name} binding: "
            f"HTTP {reply.status} {reply.http.text[:80]!r}"
        )


def parts(profile: Profile) -> Parts:
    """The Canon rows (the MCP-level ones included), faults, variants, the reference's
    token and the world its control reports (a live run's config `world:`)."""
    from conformance.protocols.canon.faults import FAULTS
    from conformance.protocols.canon.reference import world_roles
    from conformance.protocols.canon.requirements import build
    from conformance.protocols.canon.variants import VARIANTS
    from conformance.protocols.mcp.faults import for_rows

    requirements = build(profile)
    mcp_faults, mcp_variants = for_rows(requirements, [str(profile.settings["bindings"]["mcp"]["protocol_version"])])
    return Parts(requirements, {**FAULTS, **mcp_faults}, {**VARIANTS, **mcp_variants}, {"full": REFERENCE_TOKEN},
                 reference_world=world_roles())


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
        same: dict[str, Any] = {"token accepted": reference.config.token is None or token == reference.config.token}
        kept: dict[str, list[str]] = {}
        if label == "full":
            for uid, contact in w["contacts"].items():
                same[f"contact {uid}"] = dict(contact)
            for cid, conv in w["conversations"].items():
                if agent not in conv["members"]:
                    continue
                same[f"in conversation {cid}"] = {"members": sorted(conv["members"]), "owner": conv["owner"],
                                                  "admins": sorted(conv["admins"]), "name": conv["name"], "topic": conv["topic"]}
                kept[f"messages of {cid}"] = [m["messageId"] for m in conv["messages"]]
        out[label] = {"same": same, "kept": kept}
    return out


PROTOCOL = Protocol(create_reference=create_reference, probe=probe, parts=parts, holdings=holdings)
