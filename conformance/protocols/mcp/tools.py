"""The MCP rows of every revision, handshake or stateless: answers against the revision's
schema.json, the id echo, the tools capability, tools/list, the tools' input schemas,
structured results, tool execution errors and unknown tools. Each row is a family over
the profile's MCP bindings (surface.py); its faults patch the shared server (``ref.mcp``,
server.py)."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from conformance.documents.schemas import validator_for
from conformance.generation.invalid import example_breaks, invalid_strategy
from conformance.generation.strategies import strategy_for
from conformance.kit.check import Blocked, CheckContext
from conformance.kit.declare import Cite, fault, requirement
from conformance.kit.faults import replaces
from conformance.model import Profile
from conformance.protocols.mcp.server import McpHost, RpcFault
from conformance.protocols.mcp.surface import (
    SCHEMA_FAULTS,
    TITLE,
    McpBinding,
    ToolSchema,
    binding_entry,
    binding_of,
    bindings,
    fresh_client,
    listed,
    marker,
    page,
    quoted,
    schema_json,
    server,
    started,
)
from conformance.transport.http import json_excerpt

TOOLS_PAGE = "server-tools"
# what a loosened inputSchema loses (mcp_schema_loosened)
LOOSE = {"oneOf", "anyOf", "allOf", "not", "pattern", "additionalProperties", "maxLength", "minLength",
         "maximum", "minimum", "enum", "const", "required", "maxItems", "minItems", "uniqueItems", "if",
         "then", "else"}


@requirement(id="{mcp.prefix}-SCHEMA", level="MUST",
             title=TITLE + "every answer matches the revision's schema.json",
             document="mcp", each=bindings(schema_json))
def check_schema(ctx: CheckContext, mcp: McpBinding) -> None:
    """Every message of a tour (the handshake or discovery, every tools/list page, a
    harmless call, a refused one, an unknown tool, an unknown method) against the
    negotiated revision's schema.json."""
    client = fresh_client(ctx, mcp.name)
    rev = started(ctx, client)
    answers = [client.initialize_answer] if client.initialize_answer else [client.request("server/discover")]
    answers += client.list_tools()[1]
    tool, args = mcp.surface.harmless(ctx)
    answers.append(client.request("tools/call", {"name": tool, "arguments": args}))
    tool, args = mcp.surface.refused(ctx)
    answers.append(client.request("tools/call", {"name": tool, "arguments": args}))
    answers.append(client.request("tools/call", {"name": marker(), "arguments": {}}))
    answers.append(client.request("ping" if not rev.stateless else "conformance/no-such-method", {}))
    for i, answer in enumerate(a for a in answers if a is not None):
        with ctx.subcheck(f"{i + 1} {answer.method}"):
            ctx.expect(answer.envelope is not None, f"{answer.method}: no JSON-RPC answer: {quoted(answer)}",
                       kind="malformed_answer")
            ctx.expect(not answer.violations,
                       f"{answer.method} answer breaks the {answer.revision} schema at "
                       f"{'; '.join(answer.violations)}: {json_excerpt(answer.envelope, 300)}",
                       kind="schema_mismatch")


@check_schema.fault
def mcp_tool_result_without_content(ref: McpHost) -> None:
    """tools/call results leave out ``content``, which CallToolResult requires."""
    @replaces(server(ref).tool_result)
    def result(original: Any, out: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in original(out).items() if k != "content"}


@requirement(id="{mcp.prefix}-ID-ECHO", level="MUST",
             title=TITLE + "an answer carries the request's id, with its type",
             document="mcp",
             each=bindings(page("basic-index", "include the same ID as the request")))
def check_id_echo(ctx: CheckContext, mcp: McpBinding) -> None:
    """An answer carries the request's id with its type: an integer and a string id."""
    client = binding_of(ctx, mcp.name).client
    started(ctx, client)
    for rid in (7001, f"conformance-{uuid.uuid4().hex[:8]}"):
        with ctx.subcheck(f"id {rid!r}"):
            answer = client.request("tools/list", {}, request_id=rid)
            envelope = answer.envelope
            got = envelope.get("id", "<none>") if isinstance(envelope, dict) else "<no envelope>"
            ctx.expect(got == rid and type(got) is type(rid),
                       f"tools/list with id {rid!r} ({type(rid).__name__}) was answered with id {got!r}: "
                       f"{quoted(answer)}", kind="malformed_answer")


@check_id_echo.fault
def mcp_id_as_string(ref: McpHost) -> None:
    """A numeric request id is echoed back as a string."""
    @replaces(server(ref).answer_id)
    def answer_id(original: Any, request_id: Any) -> Any:
        return str(request_id) if isinstance(request_id, int) else original(request_id)


@requirement(id="{mcp.prefix}-CAPABILITIES", level="MUST",
             title=TITLE + "a server with tools declares the tools capability",
             document="mcp",
             each=bindings(page(TOOLS_PAGE, "MUST** declare the `tools` capability")))
def check_capabilities(ctx: CheckContext, mcp: McpBinding) -> None:
    """A server serving tools declares the ``tools`` capability (initialize, or
    server/discover in a stateless revision)."""
    client = fresh_client(ctx, mcp.name)
    started(ctx, client)
    answer = client.initialize_answer or client.request("server/discover")
    caps = answer.member("capabilities")
    ctx.expect(isinstance(caps, dict) and isinstance(caps.get("tools"), dict),
               f"{answer.method} declares capabilities {json_excerpt(caps)}, without tools, though the "
               f"server serves tools/call: {quoted(answer)}", kind="schema_mismatch")


@check_capabilities.fault
def mcp_no_tools_capability(ref: McpHost) -> None:
    """initialize (and server/discover) declare no ``tools`` capability."""
    @replaces(server(ref).capabilities)
    def capabilities(original: Any) -> dict[str, Any]:
        return {k: v for k, v in original().items() if k != "tools"}


TOOLS_TITLE = TITLE + "tools/list (every page) names every tool the profile expects"


def tools_source(profile: Profile, b: McpBinding) -> Cite:
    return b.surface.tools_source


@requirement(id="{mcp.prefix}-TOOLS", level="MUST", title=TOOLS_TITLE, document="mcp",
             each=bindings(tools_source, level=lambda s: s.tools_level))
def check_tools_list(ctx: CheckContext, mcp: McpBinding) -> None:
    """tools/list (every page) names every tool the profile expects (and, where the
    profile says so, no other: ``mcp_tool_extra`` is then its protocol's ``more_faults``).
    A MUST where the document names the tool set, else the profile's SHOULD."""
    client = binding_of(ctx, mcp.name).client
    started(ctx, client)
    tools = listed(ctx, client)
    expected = set(mcp.surface.tools(ctx.profile))
    missing = sorted(expected - set(tools))
    ctx.expect(not missing, f"tools/list does not name {missing} (it names {sorted(tools)[:30]})")
    if mcp.surface.exact:
        extra = sorted(set(tools) - expected)
        ctx.expect(not extra, f"tools/list names {extra}, which are none of the expected tools")


@check_tools_list.fault
def mcp_tool_missing(ref: McpHost) -> None:
    """tools/list leaves out the last tool (tools/call still serves it)."""
    @replaces(server(ref).tools_page)
    def tools_page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        last = ref.mcp.host.mcp_tools()[-1]["name"]
        tools, nxt = original(cursor)
        return [t for t in tools if t.get("name") != last], nxt


@check_tools_list.fault
def mcp_cursor_repeats(ref: McpHost) -> None:
    """tools/list pages (two tools a page) and gives the same nextCursor on every page."""
    ref.mcp_page_size = 2

    @replaces(server(ref).tools_page)
    def tools_page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        tools, _ = original(None)
        return tools, original(None)[1]


@fault
def mcp_tool_extra(ref: McpHost) -> None:
    """tools/list names a tool beyond the expected ones (a host action as a tool)."""
    @replaces(server(ref).tools_page)
    def tools_page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        tools, nxt = original(cursor)
        extra = {"name": "typing_indicator", "inputSchema": {"type": "object"}}
        return (tools + [extra] if nxt is None else tools), nxt


@requirement(id="{mcp.prefix}-INPUT-SCHEMA", level="SHOULD",
             title=TITLE + "each tool's inputSchema rejects what its document's schema rejects",
             document="mcp", each=bindings(binding_entry))
def check_input_schemas(ctx: CheckContext, mcp: McpBinding) -> None:
    """Each tool's inputSchema rejects what the document's schema rejects (invalid inputs
    drawn for the document's schema, applied to the tool's). A tool may be stricter (a
    profile may compose more of its document into it)."""
    from hypothesis import strategies as st

    from conformance.generation.compiler import one_of

    client = binding_of(ctx, mcp.name).client
    started(ctx, client)
    tools = listed(ctx, client)
    expected = {k: v for k, v in mcp.surface.tools(ctx.profile).items() if k in tools}
    if not expected:
        raise Blocked("set-up: tools/list names none of the expected tools "
                      f"({sorted(mcp.surface.tools(ctx.profile))[:5]}...)")

    for tool, schema in sorted(expected.items()):  # a valid input plus a property nobody declares
        def extra_refused(base: Any, tool: str = tool, schema: Any = schema) -> None:
            extra = {**base, "x_conformance_unknown": True} if isinstance(base, dict) else base
            if not validator_for(schema).is_valid(extra):
                ctx.expect(not ToolSchema(ctx, tool, tools[tool].get("inputSchema")).is_valid(extra),
                           f"tool {tool}'s inputSchema accepts an unknown property its document forbids",
                           kind="schema_mismatch")
        ctx.for_all(strategy_for(schema), extra_refused, examples=1)

    def invalid(pair: tuple[str, Any]) -> None:
        tool, bad = pair
        ctx.expect(not ToolSchema(ctx, tool, tools[tool].get("inputSchema")).is_valid(bad.instance),
                   f"tool {tool}'s inputSchema accepts an input its document rejects "
                   f"({bad.violation.description}): {json_excerpt(bad.instance)}", kind="schema_mismatch")

    for tool, schema in sorted(expected.items()):  # every keyword once: the schemas alone, no exchange
        for bad in example_breaks(schema):
            invalid((tool, bad))
    ctx.for_all(one_of([st.tuples(st.just(t), invalid_strategy(s)) for t, s in sorted(expected.items())]),
                invalid)


def loosened(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: loosened(v) for k, v in schema.items() if k not in LOOSE}
    if isinstance(schema, list):
        return [loosened(v) for v in schema]
    return schema


@check_input_schemas.fault
def mcp_schema_loosened(ref: McpHost) -> None:
    """tools/list input schemas lose their constraints (composition, patterns, bounds,
    required and additionalProperties): a tool accepts what its document rejects."""
    @replaces(server(ref).tools_page)
    def tools_page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        tools, nxt = original(cursor)
        return [{**t, "inputSchema": {"type": "object", **loosened(t.get("inputSchema") or {})}}
                for t in tools], nxt


@requirement(id="{mcp.prefix}-STRUCTURED", level="SHOULD",
             title=TITLE + "a tool's result is its structuredContent, matching the document's "
                   "result schema",
             document="mcp", each=bindings(binding_entry))
def check_structured(ctx: CheckContext, mcp: McpBinding) -> None:
    """A successful tools/call carries structuredContent, matching the document's result
    schema where it gives one."""
    client = binding_of(ctx, mcp.name).client
    started(ctx, client)
    tool, args = mcp.surface.harmless(ctx)
    answer = client.request("tools/call", {"name": tool, "arguments": args})
    result = answer.result
    ctx.expect(isinstance(result, dict) and not result.get("isError"),
               f"tools/call {tool} was not served: {quoted(answer)}", kind="rejected_valid")
    ctx.expect("structuredContent" in result, f"tools/call {tool} answered without structuredContent "
               f"(content only: {json_excerpt(result.get('content'))})", kind="schema_mismatch")
    schema = mcp.surface.results(ctx.profile).get(tool)
    if schema:
        ctx.expect(validator_for(schema).is_valid(result["structuredContent"]),
                   f"tools/call {tool}: structuredContent does not match the document's result schema: "
                   f"{json_excerpt(result['structuredContent'])}", kind="schema_mismatch")


@check_structured.fault
def mcp_text_only_results(ref: McpHost) -> None:
    """tools/call results carry their JSON only as text content, no structuredContent."""
    @replaces(server(ref).tool_result)
    def result(original: Any, out: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in original(out).items() if k != "structuredContent"}


@requirement(id="{mcp.prefix}-OUTPUT-SCHEMA", level="MUST",
             title=TITLE + "structured results conform to the outputSchema a tool declares",
             document="mcp",
             each=bindings(page(TOOLS_PAGE, "provide structured results that conform")))
def check_output_schema(ctx: CheckContext, mcp: McpBinding) -> None:
    """Where a tool declares an outputSchema, its structured results conform to it."""
    client = binding_of(ctx, mcp.name).client
    started(ctx, client)
    tools = listed(ctx, client)
    tool, args = mcp.surface.harmless(ctx)
    declared = (tools.get(tool) or {}).get("outputSchema")
    some = "an" if declared is not None else "no"
    ctx.require_declared(f"{mcp.name}: the outputSchema of tool {tool}", lambda: (
        declared is not None, f"tools/list declares {some} outputSchema for tool {tool}"),
        why="server-tools.mdx: \"Tools may also provide an output schema\"")
    answer = client.request("tools/call", {"name": tool, "arguments": args})
    payload = answer.member("structuredContent")
    try:
        ok = isinstance(declared, dict) and validator_for(declared).is_valid(payload)
    except SCHEMA_FAULTS:
        ok = False
    ctx.expect(ok, f"tools/call {tool}: structuredContent {json_excerpt(payload)} does not conform to the "
               f"outputSchema the tool declares {json_excerpt(declared)}", kind="schema_mismatch")


@check_output_schema.fault
def mcp_output_schema_unmet(ref: McpHost) -> None:
    """Every tool declares an outputSchema its results do not meet."""
    @replaces(server(ref).tools_page)
    def tools_page(original: Any, cursor: Any) -> tuple[list[dict[str, Any]], str | None]:
        tools, nxt = original(cursor)
        schema = {"type": "object", "required": ["conformance_never_there"]}
        return [{**t, "outputSchema": copy.deepcopy(schema)} for t in tools], nxt


@requirement(id="{mcp.prefix}-TOOL-ERROR", level="SHOULD",
             title=TITLE + "a business refusal is a tool execution error (isError: true)",
             document="mcp", each=bindings(page(TOOLS_PAGE, "Tool Execution Errors")))
def check_tool_error(ctx: CheckContext, mcp: McpBinding) -> None:
    """A call the document refuses for a business reason is a tool execution error: a
    result with ``isError: true``."""
    client = binding_of(ctx, mcp.name).client
    started(ctx, client)
    tool, args = mcp.surface.refused(ctx)
    answer = client.request("tools/call", {"name": tool, "arguments": args})
    ctx.expect(isinstance(answer.result, dict) and answer.result.get("isError") is True,
               f"tools/call {tool} {json_excerpt(args)}, which the document refuses, was not an isError "
               f"result: {quoted(answer)}", kind="malformed_answer")


@check_tool_error.fault
def mcp_tool_errors_as_protocol_errors(ref: McpHost) -> None:
    """A tool execution error (a business refusal) is answered as a JSON-RPC error."""
    @replaces(server(ref).tool_result)
    def result(original: Any, out: dict[str, Any]) -> dict[str, Any]:
        out = original(out)
        if out.get("isError"):
            raise RpcFault(-32603, "tool failed")
        return out


@requirement(id="{mcp.prefix}-UNKNOWN-TOOL", level="MUST",
             title=TITLE + "tools/call of an unknown tool is refused",
             document="mcp", each=bindings(page(TOOLS_PAGE, "Unknown tool")))
def check_unknown_tool(ctx: CheckContext, mcp: McpBinding) -> None:
    """tools/call of a tool the server does not have is refused."""
    unknown_tool_refused(ctx, mcp)


def unknown_tool_refused(ctx: CheckContext, mcp: McpBinding, strict: bool = False) -> None:
    """tools/call of a tool the server does not have is refused (strict: as a JSON-RPC error)."""
    client = binding_of(ctx, mcp.name).client
    started(ctx, client)
    tool = marker()
    answer = client.request("tools/call", {"name": tool, "arguments": {}})
    is_error = isinstance(answer.result, dict) and answer.result.get("isError") is True
    refused = answer.error is not None or is_error
    ctx.expect(refused, f"tools/call of unknown tool {tool} was served: {quoted(answer)}",
               kind="accepted_invalid")
    if strict:
        ctx.expect(answer.error is not None, f"tools/call of unknown tool {tool} was an isError result, "
                   f"not a JSON-RPC (protocol) error: {quoted(answer)}", kind="malformed_answer")


@check_unknown_tool.fault
def mcp_unknown_tool_served(ref: McpHost) -> None:
    """tools/call of an unknown tool answers an ordinary result."""
    @replaces(server(ref).unknown_tool)
    def unknown(original: Any, name: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "{}"}], "structuredContent": {}, "isError": False}


@requirement(id="{mcp.prefix}-UNKNOWN-TOOL-PROTOCOL-ERROR", level="SHOULD",
             title=TITLE + "an unknown tool is a protocol (JSON-RPC) error",
             document="mcp", each=bindings(page(TOOLS_PAGE, "Protocol Errors")))
def check_unknown_tool_protocol_error(ctx: CheckContext, mcp: McpBinding) -> None:
    """tools/call of a tool the server does not have is a JSON-RPC error."""
    unknown_tool_refused(ctx, mcp, strict=True)


@check_unknown_tool_protocol_error.fault
def mcp_unknown_tool_is_error(ref: McpHost) -> None:
    """tools/call of an unknown tool answers an isError result, not a protocol error."""
    @replaces(server(ref).unknown_tool)
    def unknown(original: Any, name: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"unknown tool {name!r}"}], "isError": True}
