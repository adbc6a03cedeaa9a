"""The Wever Connect profile: HTTP actions, the A2A adapter and MCP over one relay."""

from __future__ import annotations

from typing import Any

from conformance.check import CheckContext, ProtocolMismatch
from conformance.model import Profile
from conformance.protocol import Parts, Protocol
from conformance.protocols import mcp
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
    if not (reply.ok or reply.error_code or refused or reply.spoke):  # a JSON-RPC answer that breaks the binding is a finding
        raise ProtocolMismatch(
            f"{ctx.http.target} does not speak the Wever Connect {ctx.binding.name} binding: "
            f"HTTP {reply.status} {reply.http.text[:80]!r}"
        )


def parts(profile: Profile) -> Parts:
    """The Wever rows (the MCP-level ones of both MCP bindings included), faults,
    variants and the reference's mailboxes."""
    from conformance.protocols.wever.faults import FAULTS
    from conformance.protocols.wever.reference import reference_credentials
    from conformance.protocols.wever.requirements import build
    from conformance.protocols.wever.variants import VARIANTS

    return Parts(build(profile), dict(FAULTS), dict(VARIANTS), reference_credentials())


def holdings(reference: Any, credentials: dict[str, Any]) -> dict[str, Any]:
    """What each configured mailbox holds in the in-process reference (``WeverReference``):
    ``same`` its token works (the mailbox is open and unexpired), its profile (label,
    capabilities, discoverable, accepts_connection_requests), its expiry, the senders it
    allows and the mailboxes that allow it, its pending connection requests (either way);
    ``kept`` the ids of its tasks (sent or received), none of which may be lost."""
    s = reference.s
    out: dict[str, Any] = {}
    for label, cred in credentials.items():
        if not isinstance(cred, dict) or not cred.get("id"):
            continue
        mailbox_id, token = str(cred["id"]), cred.get("token")
        box = s["mailboxes"].get(mailbox_id) or {}
        pending = [r for r in s["requests"].values() if r["status"] == "pending"]
        out[label] = {
            "same": {
                "token works": reference.mailbox_for_token(token) == mailbox_id,
                "open": bool(box) and not box.get("closed"),
                "profile": {k: box.get(k) for k in ("label", "capabilities", "discoverable", "accepts_connection_requests")},
                "expires_at": box.get("expires_at"),
                "allows": sorted(s["grants"].get(mailbox_id, {})),
                "allowed by": sorted(r for r, senders in s["grants"].items() if mailbox_id in senders),
                "pending requests to it": sorted(r["request_id"] for r in pending if r["recipient_id"] == mailbox_id),
                "pending requests from it": sorted(r["request_id"] for r in pending if r["sender_id"] == mailbox_id),
            },
            "kept": {
                "tasks": sorted(t for t, task in s["tasks"].items() if mailbox_id in (task["sender_id"], task["recipient_id"])),
                "task content": sorted(t for t, task in s["tasks"].items()
                                       if mailbox_id in (task["sender_id"], task["recipient_id"]) and not task["content_erased"]),
            },
        }
    return out


def mcp_surface(profile: Profile) -> Any:
    from conformance.protocols.wever.requirements import mcp_surface

    return mcp_surface(profile)


PROTOCOL = Protocol(create_reference=create_reference, probe=probe, parts=parts, holdings=holdings,
                    modules=mcp.MODULES, provides={"mcp": mcp_surface},
                    more_faults={rid: ("mcp_errors_unflagged",) for rid in ("MCP-TOOL-ERROR", "MCP-STATELESS-TOOL-ERROR")})
