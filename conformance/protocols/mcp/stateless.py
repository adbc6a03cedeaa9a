"""The MCP rows of the stateless revisions (no handshake: ``_meta`` and the headers it
mirrors on every request): server/discover, an unsupported version, mirrored headers,
the required ``_meta`` fields and an unknown method. Each row is a family over the
profile's MCP bindings of those revisions (surface.py); its faults patch the shared server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.kit.check import CheckContext
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.protocols.mcp.server import McpHost, RpcFault
from conformance.protocols.mcp.surface import (
    TITLE,
    UNKNOWN_VERSION,
    McpBinding,
    bindings,
    fresh_client,
    marker,
    page,
    quoted,
    server,
)
from conformance.transport.mcp import VERSION_HEADER, Answer

HTTP = "basic-transports-streamable-http"


def expect_error(ctx: CheckContext, answer: Answer, status: int, code: int | None, what: str) -> None:
    ctx.expect(answer.http.status == status, f"{what}: expected HTTP {status}, got {quoted(answer)}",
               kind="wrong_status")
    ctx.expect(answer.error_code == code, f"{what}: expected JSON-RPC error {code}, got {quoted(answer)}",
               kind="wrong_error_code")


@requirement(id="{mcp.prefix}-DISCOVER", level="MUST",
             title=TITLE + "server/discover is served and lists the revision",
             document="mcp",
             each=bindings(page("basic-versioning", "Servers **MUST** implement"), era="stateless"))
def check_discover(ctx: CheckContext, mcp: McpBinding) -> None:
    """server/discover is served and lists the revision the binding speaks."""
    client = fresh_client(ctx, mcp.name)
    answer = client.request("server/discover", {})
    versions = answer.member("supportedVersions")
    ctx.expect(isinstance(versions, list) and client.rev.name in versions,
               f"server/discover did not list {client.rev.name}: {quoted(answer)}", kind="rejected_valid")


@check_discover.fault
def mcp_discover_missing(ref: McpHost) -> None:
    """server/discover is not implemented."""
    @replaces(server(ref).dispatch)
    def dispatch(original: Callable[..., dict[str, Any]], caller: Any, method: str,
                 *args: Any) -> dict[str, Any]:
        if method == "server/discover":
            raise RpcFault(-32601, "Method not found", 404)
        return original(caller, method, *args)


@requirement(id="{mcp.prefix}-VERSION-UNSUPPORTED", level="MUST",
             title=TITLE + "a request in an unsupported version is 400 "
                   "UnsupportedProtocolVersionError",
             document="mcp",
             each=bindings(page(HTTP, "not to support), it **MUST** respond with `400 Bad Request` and an"),
                           era="stateless"))
def check_unsupported_version(ctx: CheckContext, mcp: McpBinding) -> None:
    """A request in a version the server does not speak: 400, UnsupportedProtocolVersionError
    listing the versions it supports."""
    client = fresh_client(ctx, mcp.name)
    rev = client.rev
    meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": UNKNOWN_VERSION,
                      "io.modelcontextprotocol/clientCapabilities": {}}}
    answer = client.request("tools/list", meta, headers={VERSION_HEADER: UNKNOWN_VERSION})
    expect_error(ctx, answer, 400, rev.error_code("UnsupportedProtocolVersionError"),
                 f"tools/list in version {UNKNOWN_VERSION}")
    data = (answer.error or {}).get("data")
    supported = (data or {}).get("supported") if isinstance(data, dict) else None
    ctx.expect(isinstance(supported, list) and supported,
               f"the error lists no supported versions: {quoted(answer)}", kind="schema_mismatch")


@check_unsupported_version.fault
def mcp_any_version(ref: McpHost) -> None:
    """A request in a version the server does not speak is served."""
    @replaces(server(ref).check_modern_version)
    def check(original: Any, version: str) -> None:
        return None


@requirement(id="{mcp.prefix}-HEADER-MISMATCH", level="MUST",
             title=TITLE + "mirrored headers missing or not matching the body are 400 "
                   "HeaderMismatch",
             document="mcp",
             each=bindings(page(HTTP, "When rejecting a request due to header validation failure"),
                           era="stateless"))
def check_header_mismatch(ctx: CheckContext, mcp: McpBinding) -> None:
    """Headers that do not match the body, or a required one missing: 400, HeaderMismatch."""
    client = fresh_client(ctx, mcp.name)
    code = client.rev.error_code("HeaderMismatchError")
    tool, args = mcp.surface.harmless(ctx)
    cases: list[tuple[str, str, dict[str, Any], dict[str, str | None]]] = [
        ("Mcp-Method another method", "tools/list", {}, {"Mcp-Method": "tools/call"}),
        ("Mcp-Method missing", "tools/list", {}, {"Mcp-Method": None}),
        (f"{VERSION_HEADER} another version", "tools/list", {}, {VERSION_HEADER: "2025-11-25"}),
        ("Mcp-Name another tool", "tools/call", {"name": tool, "arguments": args}, {"Mcp-Name": marker()}),
        ("Mcp-Name missing", "tools/call", {"name": tool, "arguments": args}, {"Mcp-Name": None}),
    ]
    for what, method, params, headers in cases:
        with ctx.subcheck(what):
            expect_error(ctx, client.request(method, params, headers=headers), 400, code,
                         f"{method} with {what}")


@check_header_mismatch.fault
def mcp_headers_unchecked(ref: McpHost) -> None:
    """The mirrored headers are not compared with the body."""
    @replaces(server(ref).check_headers)
    def check(original: Any, *args: Any) -> None:
        return None


@requirement(id="{mcp.prefix}-META-REQUIRED", level="MUST",
             title=TITLE + "a request without the required _meta fields is 400 -32602",
             document="mcp",
             each=bindings(page("basic-index", "A request missing any required field is malformed"),
                           era="stateless"))
def check_meta_required(ctx: CheckContext, mcp: McpBinding) -> None:
    """A request without the ``_meta`` fields the revision requires: 400, -32602."""
    client = fresh_client(ctx, mcp.name)
    meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": client.rev.name}}  # no clientCapabilities
    message = {"jsonrpc": "2.0", "id": 9003, "method": "tools/list", "params": meta}
    reply = client.post(message, client.headers_for(message))
    answer = Answer("tools/list", message, {}, reply, reply.json(), client.rev.name)
    expect_error(ctx, answer, 400, -32602, "tools/list without io.modelcontextprotocol/clientCapabilities")


@check_meta_required.fault
def mcp_meta_unchecked(ref: McpHost) -> None:
    """A request without the required _meta fields is served (nor is it checked against the schema)."""
    @replaces(server(ref).validate_request)
    def validate(original: Any, version: str, message: dict[str, Any]) -> None:
        return None

    @replaces(server(ref).check_meta)
    def check(original: Any, message: dict[str, Any]) -> str:
        meta = (message.get("params") or {}).get("_meta") or {}
        return str(meta.get("io.modelcontextprotocol/protocolVersion") or max(ref.mcp.stateless_versions()))


@requirement(id="{mcp.prefix}-METHOD-NOT-FOUND", level="MUST",
             title=TITLE + "an unknown RPC method is 404 -32601",
             document="mcp",
             each=bindings(page(HTTP, "If the server does not implement the requested RPC method"),
                           era="stateless"))
def check_method_not_found(ctx: CheckContext, mcp: McpBinding) -> None:
    """An RPC method the server does not implement: 404, -32601."""
    client = fresh_client(ctx, mcp.name)
    answer = client.request("conformance/no-such-method", {})
    expect_error(ctx, answer, 404, -32601, "the method conformance/no-such-method")


@check_method_not_found.fault
def mcp_unknown_method_ok(ref: McpHost) -> None:
    """An unknown RPC method answers an empty result."""
    @replaces(server(ref).unknown_method)
    def unknown(original: Any, method: str, modern: bool) -> dict[str, Any]:
        return {}
