"""The Agent Plaza profile: an A2A 1.0 personal endpoint with the site's friendship
extension, its data commands and durable receive (specs/agent-plaza/a2a-personal.json)."""
