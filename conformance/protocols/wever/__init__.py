"""The Wever Connect profile: HTTP actions, the A2A adapter and MCP over one relay."""
