"""MCP as a binding other profiles offer (no profile of its own): the strict server
the references share (server.py), the MCP-level requirements every MCP binding gets
(requirements.py) with their faults and variants. The client is the engine's
(conformance/transport/mcp.py)."""
