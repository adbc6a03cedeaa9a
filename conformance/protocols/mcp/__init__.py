"""MCP as a binding other profiles offer (no profile of its own): the strict server the
references share (server.py) and the MCP-level requirements every MCP binding gets, each
declared once on its check as a family over the profile's MCP bindings, with its faults
beside it (tools.py: every revision; handshake.py; stateless.py; capabilities.py: the ones
beside tools a server declares or leaves out), the server's variants
(variants.py) and what they share (surface.py: the ``McpSurface`` a profile provides as
``Protocol.provides={"mcp": surface}``). The client is the engine's
(conformance/transport/mcp.py)."""

MODULES = ("conformance.protocols.mcp.tools", "conformance.protocols.mcp.handshake",
           "conformance.protocols.mcp.stateless", "conformance.protocols.mcp.messages",
           "conformance.protocols.mcp.capabilities", "conformance.protocols.mcp.variants")
