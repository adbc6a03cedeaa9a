"""Faults and variants of the shared MCP server (server.py), for every reference that
serves MCP through it (``ref.mcp``). A profile registers the ones its MCP rows name
(``for_rows``)."""

from __future__ import annotations

import copy
from typing import Any

from conformance.faults import replaces
from conformance.model import Requirement
from conformance.protocols.mcp.server import McpReply, McpServer, RpcFault
from conformance.table import FaultRegistry
from conformance.transport.mcp import newest_handshake

FAULTS = FaultRegistry()
VARIANTS = FaultRegistry()
fault, variant = FAULTS, VARIANTS

LOOSE = {"oneOf", "anyOf", "allOf", "not", "pattern", "additionalProperties", "maxLength", "minLength", "maximum",
         "minimum", "enum", "const", "required", "maxItems", "minItems", "uniqueItems", "if", "then", "else"}


def server(ref: Any) -> McpServer:
    mcp: McpServer = ref.mcp
    return mcp


def loosened(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: loosened(v) for k, v in schema.items() if k not in LOOSE}
    if isinstance(schema, list):
        return [loosened(v) for v in schema]
    return schema


# -- both eras -------------------------------------------------------------------------
@fault
def mcp_tool_result_without_content(ref: Any) -> None:
    """tools/call results leave out ``content``, which CallToolResult requires."""
    @replaces(server(ref), "tool_result")
    def result(original: Any, out: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in original(out).items() if k != "content"}


@fault
def mcp_id_as_string(ref: Any) -> None:
    """A numeric request id is echoed back as a string."""
    @replaces(server(ref), "answer_id")
    def answer_id(original: Any, request_id: Any) -> Any:
        return str(request_id) if isinstance(request_id, int) else original(request_id)


@fault
def mcp_no_tools_capability(ref: Any) -> None:
    """initialize (and server/discover) declare no ``tools`` capability."""
    @replaces(server(ref), "capabilities")
    def capabilities(original: Any) -> dict[str, Any]:
        return {k: v for k, v in original().items() if k != "tools"}


@fault
def mcp_tool_missing(ref: Any) -> None:
    """tools/list leaves out the last tool (tools/call still serves it)."""
    @replaces(server(ref), "tools_page")
    def page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        last = ref.mcp.host.mcp_tools()[-1]["name"]
        tools, nxt = original(cursor)
        return [t for t in tools if t.get("name") != last], nxt


@fault
def mcp_tool_extra(ref: Any) -> None:
    """tools/list names a tool beyond the expected ones (a host action as a tool)."""
    @replaces(server(ref), "tools_page")
    def page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        tools, nxt = original(cursor)
        extra = {"name": "typing_indicator", "inputSchema": {"type": "object"}}
        return (tools + [extra] if nxt is None else tools), nxt


@fault
def mcp_cursor_repeats(ref: Any) -> None:
    """tools/list pages (two tools a page) and gives the same nextCursor on every page."""
    ref.mcp_page_size = 2

    @replaces(server(ref), "tools_page")
    def page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        tools, _ = original(None)
        return tools, original(None)[1]


@fault
def mcp_schema_loosened(ref: Any) -> None:
    """tools/list input schemas lose their constraints (composition, patterns, bounds,
    required and additionalProperties): a tool accepts what its document rejects."""
    @replaces(server(ref), "tools_page")
    def page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        tools, nxt = original(cursor)
        return [{**t, "inputSchema": {"type": "object", **loosened(t.get("inputSchema") or {})}} for t in tools], nxt


@fault
def mcp_text_only_results(ref: Any) -> None:
    """tools/call results carry their JSON only as text content, no structuredContent."""
    @replaces(server(ref), "tool_result")
    def result(original: Any, out: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in original(out).items() if k != "structuredContent"}


@fault
def mcp_output_schema_unmet(ref: Any) -> None:
    """Every tool declares an outputSchema its results do not meet."""
    @replaces(server(ref), "tools_page")
    def page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        tools, nxt = original(cursor)
        schema = {"type": "object", "required": ["conformance_never_there"]}
        return [{**t, "outputSchema": copy.deepcopy(schema)} for t in tools], nxt


@fault
def mcp_tool_errors_as_protocol_errors(ref: Any) -> None:
    """A tool execution error (a business refusal) is answered as a JSON-RPC error."""
    @replaces(server(ref), "tool_result")
    def result(original: Any, out: dict[str, Any]) -> dict[str, Any]:
        out = original(out)
        if out.get("isError"):
            raise RpcFault(-32603, "tool failed")
        return out


@fault
def mcp_unknown_tool_served(ref: Any) -> None:
    """tools/call of an unknown tool answers an ordinary result."""
    @replaces(server(ref), "unknown_tool")
    def unknown(original: Any, name: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "{}"}], "structuredContent": {}, "isError": False}


@fault
def mcp_unknown_tool_is_error(ref: Any) -> None:
    """tools/call of an unknown tool answers an isError result, not a protocol error."""
    @replaces(server(ref), "unknown_tool")
    def unknown(original: Any, name: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"unknown tool {name!r}"}], "isError": True}


# -- handshake revisions -----------------------------------------------------------------
@fault
def mcp_echo_version(ref: Any) -> None:
    """initialize answers whatever protocolVersion it is asked."""
    @replaces(server(ref), "negotiate")
    def negotiate(original: Any, requested: Any) -> str:
        return str(requested)


@fault
def mcp_always_oldest(ref: Any) -> None:
    """initialize answers an older version than the one asked, even one it speaks."""
    @replaces(server(ref), "negotiate")
    def negotiate(original: Any, requested: Any) -> str:
        return "2024-11-05"


@fault
def mcp_version_header_ignored(ref: Any) -> None:
    """Any MCP-Protocol-Version is accepted after initialize."""
    @replaces(server(ref), "check_version_header")
    def check(original: Any, said: str | None, session: Any) -> str:
        return session.version if session is not None else max(ref.mcp.handshake_versions())


@fault
def mcp_notification_answered(ref: Any) -> None:
    """An accepted notification is answered 200 with a JSON body."""
    @replaces(server(ref), "notification_reply")
    def reply(original: Any) -> McpReply:
        return McpReply(200, {"jsonrpc": "2.0", "result": {}})


@fault
def mcp_session_outlives_delete(ref: Any) -> None:
    """DELETE of a session answers 200 and the session goes on."""
    @replaces(server(ref), "end_session")
    def end(original: Any, sid: str) -> McpReply:
        return McpReply(200, None)


@fault
def mcp_sessions_unchecked(ref: Any) -> None:
    """Requests without the session id initialize issued are served."""
    @replaces(server(ref), "session_of")
    def session_of(original: Any, headers: Any) -> Any:
        return original(headers) if headers.get("Mcp-Session-Id") else None


# -- stateless revisions -----------------------------------------------------------------
@fault
def mcp_discover_missing(ref: Any) -> None:
    """server/discover is not implemented."""
    @replaces(server(ref), "dispatch")
    def dispatch(original: Any, caller: Any, method: str, *args: Any) -> dict[str, Any]:
        if method == "server/discover":
            raise RpcFault(-32601, "Method not found", 404)
        return original(caller, method, *args)  # type: ignore[no-any-return]


@fault
def mcp_any_version(ref: Any) -> None:
    """A request in a version the server does not speak is served."""
    @replaces(server(ref), "check_modern_version")
    def check(original: Any, version: str) -> None:
        return None


@fault
def mcp_headers_unchecked(ref: Any) -> None:
    """The mirrored headers are not compared with the body."""
    @replaces(server(ref), "check_headers")
    def check(original: Any, *args: Any) -> None:
        return None


@fault
def mcp_meta_unchecked(ref: Any) -> None:
    """A request without the required _meta fields is served (nor is it checked against the schema)."""
    server(ref).validate_request = lambda version, message: None  # type: ignore[method-assign]

    @replaces(server(ref), "check_meta")
    def check(original: Any, message: dict[str, Any]) -> str:
        meta = (message.get("params") or {}).get("_meta") or {}
        return str(meta.get("io.modelcontextprotocol/protocolVersion") or max(ref.mcp.stateless_versions()))


@fault
def mcp_unknown_method_ok(ref: Any) -> None:
    """An unknown RPC method answers an empty result."""
    @replaces(server(ref), "unknown_method")
    def unknown(original: Any, method: str, modern: bool) -> dict[str, Any]:
        return {}


# -- variants ----------------------------------------------------------------------------
@variant
def mcp_no_sessions(ref: Any) -> None:
    """initialize issues no session id.

    allowed by: basic-transports.mdx "A server using the Streamable HTTP transport **MAY** assign a session ID"
    (a server need not)"""
    ref.mcp_sessions = False


@variant
def mcp_paged_tools(ref: Any) -> None:
    """tools/list answers in pages of three tools.

    allowed by: server-tools.mdx "This operation supports [pagination]" """
    ref.mcp_page_size = 3


@variant
def mcp_streamed_answers(ref: Any) -> None:
    """Every request is answered with an SSE stream (a comment line, then the response).

    allowed by: basic-transports.mdx "the server **MUST** either return `Content-Type: text/event-stream`
    ... or `Content-Type: application/json` ... The client **MUST** support both these cases." """
    ref.mcp_streamed = True


@variant
def mcp_newest_handshake_too(ref: Any) -> None:
    """The server also speaks the newest handshake revision the kit has documents for,
    so initialize agrees on that one rather than the profile's.

    allowed by: basic-lifecycle.mdx "If the server supports the requested protocol version, it **MUST** respond
    with the same version" (a server may speak more revisions than the profile names)"""
    ref.mcp_versions = [*ref.mcp_versions, newest_handshake()]


for _variant in VARIANTS.values():
    _variant.binding_kind = "mcp-tools"  # type: ignore[attr-defined]  # run over the MCP bindings only (selftest)


def for_rows(requirements: list[Requirement], versions: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The faults the rows name, and the variants that change something for a reference
    speaking ``versions``."""
    named = {f for r in requirements for f in r.faults}
    faults = {k: v for k, v in FAULTS.items() if k in named}
    variants = dict(VARIANTS)
    if newest_handshake() in versions:
        variants.pop("mcp_newest_handshake_too")
    if not any(r.id.endswith("-SESSION-END") for r in requirements):
        variants.pop("mcp_no_sessions")
    return faults, variants
