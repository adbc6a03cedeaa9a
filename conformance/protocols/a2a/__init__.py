"""The A2A profile: any A2A 1.0 server, judged by specification 1.0.1 over the bindings
its agent card declares (JSON-RPC, HTTP+JSON, gRPC). Where each binding lives is read off
the card; the routes of HTTP+JSON and the gRPC messages off the proto; the agent is the target's, and
a requirement that needs an outcome asks the reference's control, or the config's
``scenarios:``, or is untested when the agent never went there."""
