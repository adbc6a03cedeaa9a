"""The server capabilities beside tools that a server may declare or leave out (lifecycle,
"Capability Negotiation": capabilities "establish which optional protocol features will be
available"): each one whose ``<capability>/list`` the revision's schema defines and that the
server declares by its presence alone (prompts, resources; tools has rows of its own, and
2025-11-25's tasks declares its list by a ``list`` sub-capability of its own, for
task-augmented requests the kit never sends). A server that declares one serves its list
method; one that does not declare it offers nothing to ask, so the row is not applicable by
that declaration (``CheckContext.require_declared``: read once a run from the initialize or
server/discover answer), never untested. SHOULD: the revisions the kit holds name the
capability and the method but tie them with no MUST (server-tools.mdx does so for tools; the
prompts and resources pages are not among specs/mcp)."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext
from conformance.kit.declare import Cite, Each, requirement
from conformance.kit.faults import replaces
from conformance.model import Profile, Source
from conformance.protocols.mcp.server import METHOD_NOT_FOUND, McpHost, RpcFault
from conformance.protocols.mcp.surface import (
    TITLE,
    McpBinding,
    fresh_client,
    mcp_bindings,
    quoted,
    server,
    started,
)
from conformance.transport.http import json_excerpt
from conformance.transport.mcp import Revision

LIFECYCLE = "basic-lifecycle"
OWN_ROWS = ("tools",)  # capabilities the MCP rows of tools.py are about


def listed_capabilities(rev: Revision) -> list[str]:
    """The server capabilities of the revision's schema declared by presence alone (no ``list``
    sub-capability) whose ``<capability>/list`` request it defines, but tools."""
    caps = (rev.defs.get("ServerCapabilities") or {}).get("properties") or {}
    return [name for name, schema in caps.items()
            if name not in OWN_ROWS and rev.request_def(f"{name}/list") is not None
            and "list" not in ((schema or {}).get("properties") or {})]


def source(b: McpBinding, capability: str) -> Cite:
    """The lifecycle page's capability table, where the revision has one; else the schema's
    ServerCapabilities member ("Present if the server offers any ...")."""
    try:
        return Source(b.rev.page_relpath(LIFECYCLE), f"line {b.rev.line(LIFECYCLE, f'| `{capability}`')}")
    except (OSError, ValueError):
        return Source(f"specs/mcp/{b.revision}/schema.json",
                      f"/{b.rev.defs_key}/ServerCapabilities/properties/{capability}")


def members(profile: Profile) -> list[Each]:
    return [Each(args={"mcp": b, "capability": cap}, labels={"cap": cap.upper()}, source=source(b, cap))
            for b in mcp_bindings(profile) for cap in listed_capabilities(b.rev)]


@requirement(id="{mcp.prefix}-DECLARED-{cap}", level="SHOULD",
             title=TITLE + "a server declaring the {capability} capability serves {capability}/list",
             document="mcp", each=members,
             faults=["mcp_declared_capability_not_served"])
def check_declared_served(ctx: CheckContext, mcp: McpBinding, capability: str) -> None:
    """Not applicable where the initialize (or server/discover) answer does not declare the
    capability; where it does, ``<capability>/list`` answers a result of the revision's
    schema, not an error."""
    client = fresh_client(ctx, mcp.name)
    started(ctx, client)
    answer = client.initialize_answer or client.request("server/discover")
    caps = answer.member("capabilities")

    def read() -> tuple[bool, str]:
        declared = isinstance(caps, dict) and capability in caps
        return declared, (f"the {answer.method} answer declares {'the' if declared else 'no'} `{capability}` "
                          f"capability (capabilities {json_excerpt(caps, 160)})")

    ctx.require_declared(f"{mcp.name}: the {capability} capability", read,
                         why="nothing to list: capabilities establish which optional features are available")
    method = f"{capability}/list"
    listed = client.request(method, {})
    ctx.expect(listed.error is None and isinstance(listed.result, dict),
               f"{method}: the server declares the `{capability}` capability ({answer.method}) but does not "
               f"serve its list: {quoted(listed)}", kind="rejected_valid")
    ctx.expect(not listed.violations,
               f"{method} answer breaks the {listed.revision} schema at {'; '.join(listed.violations)}: "
               f"{json_excerpt(listed.envelope, 300)}", kind="schema_mismatch")


@check_declared_served.fault
def mcp_declared_capability_not_served(ref: McpHost) -> None:
    """initialize (and server/discover) declare prompts and resources, yet prompts/list and
    resources/list answer Method not found (a capability declared and not served)."""
    @replaces(server(ref).offered_list)
    def offered_list(original: Any, capability: str) -> dict[str, Any]:
        raise RpcFault(METHOD_NOT_FOUND, f"Method not found: {capability}/list")
