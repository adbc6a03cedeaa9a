"""The Canon Agent Verbs profile: two bindings (HTTP, MCP), a reference world, the
requirements declared on their checks with their faults, by part of the document
(``MODULES``), the MCP-level rows its MCP binding shares (conformance/protocols/mcp/),
and the state model."""
