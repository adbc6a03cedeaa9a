"""What the Wever package gives the engine (conformance/kit/protocol.py): its ``PROTOCOL``, found by
the loader (conformance/run/profiles.py) here, in a module of its own, so that the package's
``__init__`` imports nothing and no module importing a sibling imports the reference."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.kit.check import CheckContext, ProtocolMismatch
from conformance.kit.protocol import Protocol
from conformance.model import Profile, Source
from conformance.protocols import mcp
from conformance.protocols.wever import uncontrolled
from conformance.transport.binding import DEFAULT

if TYPE_CHECKING:
    from conformance.protocols.mcp.surface import McpSurface

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
    # a JSON-RPC answer that breaks the binding is a finding
    if not (reply.ok or reply.error_code or refused or reply.spoke):
        raise ProtocolMismatch(
            f"{ctx.http.target} does not speak the Wever Connect {ctx.binding.name} binding: "
            f"HTTP {reply.status} {reply.http.text[:80]!r}"
        )


def mcp_surface(profile: Profile) -> McpSurface:
    """What the MCP rows need of Wever: one tool per action but registration ("Registration
    is not an MCP tool"), the actions' inputSchemas (the manifest gives no result schemas),
    a harmless read and a call the relay refuses (a task nobody has)."""
    from conformance.protocols.mcp.surface import McpSurface

    registration = profile.spec["protocols"]["a2a"]["access_setup"]["path"].rsplit("/", 1)[-1]
    return McpSurface(
        tools=lambda p: {name: a["inputSchema"] for name, a in p.spec["actions"].items()
                         if name != registration},
        results=lambda p: {},
        harmless=lambda ctx: ("get_mailbox", {}),
        refused=lambda ctx: ("get_task", {"task_id": "task_" + "0" * 32}),
        tools_source=Source(profile.spec_relpath, "/setup"), tools_level="MUST",
        versions_source=Source(profile.spec_relpath, "/protocols/mcp/versions"), versions_level="MUST")


def credentials(profile: Profile) -> dict[str, Any]:
    """The reference's seeded mailboxes: label -> {id, token}."""
    from conformance.protocols.wever.reference import reference_credentials

    return reference_credentials()


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
                "profile": {k: box.get(k) for k in ("label", "capabilities", "discoverable",
                                                    "accepts_connection_requests")},
                "expires_at": box.get("expires_at"),
                "allows": sorted(s["grants"].get(mailbox_id, {})),
                "allowed by": sorted(r for r, senders in s["grants"].items() if mailbox_id in senders),
                "pending requests to it": sorted(r["request_id"] for r in pending
                                                 if r["recipient_id"] == mailbox_id),
                "pending requests from it": sorted(r["request_id"] for r in pending
                                                   if r["sender_id"] == mailbox_id),
            },
            "kept": {
                "tasks": sorted(t for t, task in s["tasks"].items()
                                if mailbox_id in (task["sender_id"], task["recipient_id"])),
                "task content": sorted(t for t, task in s["tasks"].items()
                                       if mailbox_id in (task["sender_id"], task["recipient_id"])
                                       and not task["content_erased"]),
            },
        }
    return out


# The modules that declare the rows, in the order they run. A live relay keeps what each
# check did, so a run starts with the rows that register a mailbox as their subject (a
# source registers only registrations_per_source_per_utc_day mailboxes a day; theirs are
# the run's own mailboxes that serve the rest), then the pending cap of a sender (it needs
# more pairs that never exchanged a request than any other row); what lasts to a mailbox
# runs after everything else, uncontrolled.LAST (using a mailbox's day up, closing one, the
# registration quota's row) at the very end.
MODULES = ("access", "tasks", "keys", "connections", "a2a", "surfaces", "quotas", "lifetimes", "a2a_strict",
           "mailboxes", "shaped", "inputs", "variants")
FIRST = ("WEVER-REGISTER-TOKEN", "WEVER-AUTH-OPEN-ACTIONS", "WEVER-SHAPE-MAILBOX",
         "WEVER-INPUT-INVALID-REGISTER-MAILBOX",
         "WEVER-INPUT-VALID-REGISTER-MAILBOX", "WEVER-LIMIT-PENDING-REQUESTS-SENDER")

PROTOCOL = Protocol(create_reference=create_reference, probe=probe, holdings=holdings,
                    reference="conformance.protocols.wever.reference:WeverReference",
                    credentials=credentials,
                    modules=(*(f"{__package__}.{module}" for module in MODULES), *mcp.MODULES), first=FIRST,
                    last=uncontrolled.LAST, provides={"mcp": mcp_surface},
                    # the relay's own fault that its MCP tool errors must show (surfaces.py)
                    more_faults={rid: ("mcp_errors_unflagged",)
                                 for rid in ("MCP-TOOL-ERROR", "MCP-STATELESS-TOOL-ERROR")})
