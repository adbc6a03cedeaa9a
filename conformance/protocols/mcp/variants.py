"""Variants of the shared MCP server: behaviours the MCP documents allow that the server
does not choose. Each sets an attribute of the reference the server reads (so that the
selftest's trace sees who reads it), runs over the profile's MCP bindings only
(``binding_kind``), and concerns a profile where ``applies`` says so."""

from __future__ import annotations

from conformance.kit.declare import variant
from conformance.kit.faults import setting
from conformance.model import Profile
from conformance.protocols.mcp.server import McpHost
from conformance.protocols.mcp.surface import mcp_bindings
from conformance.transport.mcp import newest_handshake

MCP_TOOLS = "mcp-tools"  # the binding kind these variants run over (selftest)


def has_sessions(profile: Profile) -> bool:
    """Whether the profile has a binding of a handshake revision (its -SESSION-END row)."""
    return any(not b.rev.stateless for b in mcp_bindings(profile))


def lacks_newest_handshake(profile: Profile) -> bool:
    """Whether no MCP binding of the profile speaks the newest handshake revision already."""
    return newest_handshake() not in {b.revision for b in mcp_bindings(profile)}


variant(setting("mcp_no_sessions", "mcp_sessions", False, """initialize issues no session id.

    allowed by: basic-transports.mdx "A server using the Streamable HTTP transport **MAY** assign a
    session ID" (a server need not)""", binding_kind=MCP_TOOLS), applies=has_sessions)

variant(setting("mcp_tools_only", "mcp_offers", (), """initialize (and server/discover) declare the tools
    capability alone: no prompts, no resources, and no prompts/list or resources/list.

    allowed by: basic-lifecycle.mdx "Client and server capabilities establish which optional protocol
    features will be available during the session" (a server offers what it declares) """,
                binding_kind=MCP_TOOLS))

variant(setting("mcp_paged_tools", "mcp_page_size", 3, """tools/list answers in pages of three tools.

    allowed by: server-tools.mdx "This operation supports [pagination]" """, binding_kind=MCP_TOOLS))

variant(setting("mcp_streamed_answers", "mcp_streamed", True, """Every request is answered with an SSE
    stream (a comment line, then the response).

    allowed by: basic-transports.mdx "the server **MUST** either return `Content-Type: text/event-stream`
    ... or `Content-Type: application/json` ... The client **MUST** support both these cases." """,
                binding_kind=MCP_TOOLS))


@variant(applies=lacks_newest_handshake, binding_kind=MCP_TOOLS)
def mcp_newest_handshake_too(ref: McpHost) -> None:
    """The server also speaks the newest handshake revision the kit has documents for,
    so initialize agrees on that one rather than the profile's.

    allowed by: basic-lifecycle.mdx "If the server supports the requested protocol version, it **MUST**
    respond with the same version" (a server may speak more revisions than the profile names)"""
    ref.mcp_versions = [*ref.mcp_versions, newest_handshake()]

variant(setting("mcp_notifications_refused", "mcp_refuse_notifications", True, """A notification the server
    does not handle (any but notifications/initialized) is refused: HTTP 400 with a JSON-RPC error that has
    no id.

    allowed by: basic-transports.mdx "If the server cannot accept the input, it **MUST** return an HTTP error
    status code (e.g., 400 Bad Request). The HTTP response body **MAY** comprise a JSON-RPC _error
    response_ that has no `id`." """, binding_kind=MCP_TOOLS))
