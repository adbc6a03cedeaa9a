"""The MCP-level requirements every MCP binding of a profile gets, one set per binding
(IDs prefixed with the binding's name: ``MCP-``, ``MCP-STATELESS-``), each citing the
page of that binding's revision (specs/mcp/<revision>/) and graded as the page grades
it. What the profile decides (which tools it expects, their schemas, a harmless call,
a refused one) comes from the profile's ``McpSurface``; the client is the engine's
(conformance/transport/mcp.py), the faults are in faults.py next to this file."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import SchemaError

from conformance.check import Blocked, CheckContext, NotApplicable, Untested
from conformance.declare import slug
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import invalid_strategy
from conformance.generation.strategies import strategy_for
from conformance.model import Profile, Requirement, Source
from conformance.table import Table
from conformance.transport.binding import DEFAULT
from conformance.transport.http import json_excerpt
from conformance.transport.mcp import (
    SESSION_HEADER,
    VERSION_HEADER,
    Answer,
    McpClient,
    McpError,
    Revision,
    revision,
)

UNKNOWN_VERSION = "1900-01-01"  # a version no revision has: the kit's marker


@dataclass(frozen=True)
class McpSurface:
    """What a profile says about its MCP tools: ``tools`` (profile -> tool name -> the
    document's input schema), ``results`` (tool -> the document's result schema, or
    None), ``harmless`` (ctx -> a call that succeeds and changes nothing), ``refused``
    (ctx -> a call the document refuses for a business reason), and where the tool set
    and the revisions are named (``tools_source``/``tools_level``, ``versions_source``/
    ``versions_level``: the document's, MUST; the profile's, SHOULD); ``exact`` when the
    profile expects no other tool."""

    tools: Callable[[Profile], dict[str, Any]]
    results: Callable[[Profile], dict[str, Any]]
    harmless: Callable[[CheckContext], tuple[str, dict[str, Any]]]
    refused: Callable[[CheckContext], tuple[str, dict[str, Any]]]
    tools_source: Source
    tools_level: str
    versions_source: Source
    versions_level: str
    exact: bool = False  # the profile expects no tool beyond its own (one tool per verb, say)


# ----------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------
def binding_of(ctx: CheckContext, name: str) -> Any:
    """The run's binding when it is ``name`` (the rows are about that surface)."""
    if ctx.binding_name != name:
        raise NotApplicable(f"about the {name} binding (run with --binding {name})")
    return ctx.binding


def fresh_client(ctx: CheckContext, name: str) -> McpClient:
    """A new client (a new session) of the binding, as the binding's own bearer."""
    b = binding_of(ctx, name)
    return McpClient(ctx.http, b.path, str(b.entry.get("protocol_version")), lambda: {**b.headers, **b.auth(DEFAULT)})


def started(ctx: CheckContext, client: McpClient) -> Revision:
    """The client's session, started (a handshake the kit cannot continue blocks the row)."""
    try:
        client.ensure_started()
    except McpError as exc:
        raise Blocked(f"set-up: no MCP session to judge this in (looked for an initialize answer agreeing on a revision the kit has documents for): {exc}") from None
    return client.rev


def quoted(answer: Answer) -> str:
    return f"HTTP {answer.http.status} {answer.http.text[:300]!r}"


def marker() -> str:
    return f"conformance_no_such_tool_{uuid.uuid4().hex[:12]}"


SCHEMA_FAULTS = (SchemaError, ValueError, TypeError, LookupError, AttributeError, RecursionError)


@dataclass
class ToolSchema:
    """The inputSchema tools/list gives for one tool: applying a schema the target wrote
    that is no JSON Schema is a finding (kind malformed_answer), never a crash."""

    ctx: CheckContext
    tool: str
    schema: Any

    def is_valid(self, instance: Any) -> bool:
        try:
            if not isinstance(self.schema, dict):
                raise TypeError("not an object")
            return bool(validator_for(self.schema).is_valid(instance))
        except SCHEMA_FAULTS as exc:
            self.ctx.fail(f"tools/list: tool {self.tool}'s inputSchema is not a JSON Schema this suite can apply "
                          f"({type(exc).__name__}: {str(exc)[:100]}): {self.schema!r:.200}", kind="malformed_answer")
            return False


def listed(ctx: CheckContext, client: McpClient) -> dict[str, dict[str, Any]]:
    """Every tool the target lists (all pages); a listing that breaks off is a finding."""
    tools, answers, problem = client.list_tools()
    ctx.keep_evidence()
    ctx.expect(not problem, problem, kind="malformed_answer")
    return {str(t.get("name")): t for t in tools}


# ----------------------------------------------------------------------------------
# checks, both eras
# ----------------------------------------------------------------------------------
def check_schema(name: str, surface: McpSurface) -> Callable[[CheckContext], None]:
    """Every message of a tour (the handshake or discovery, every tools/list page, a
    harmless call, a refused one, an unknown tool, an unknown method) against the
    negotiated revision's schema.json."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        rev = started(ctx, client)
        answers = [client.initialize_answer] if client.initialize_answer else [client.request("server/discover")]
        answers += client.list_tools()[1]
        tool, args = surface.harmless(ctx)
        answers.append(client.request("tools/call", {"name": tool, "arguments": args}))
        tool, args = surface.refused(ctx)
        answers.append(client.request("tools/call", {"name": tool, "arguments": args}))
        answers.append(client.request("tools/call", {"name": marker(), "arguments": {}}))
        answers.append(client.request("ping" if not rev.stateless else "conformance/no-such-method", {}))
        for i, answer in enumerate(a for a in answers if a is not None):
            with ctx.subcheck(f"{i + 1} {answer.method}"):
                ctx.expect(answer.envelope is not None, f"{answer.method}: no JSON-RPC answer: {quoted(answer)}", kind="malformed_answer")
                ctx.expect(not answer.violations,
                           f"{answer.method} answer breaks the {answer.revision} schema at {'; '.join(answer.violations)}: "
                           f"{json_excerpt(answer.envelope, 300)}", kind="schema_mismatch")
    return check


def check_id_echo(name: str) -> Callable[[CheckContext], None]:
    """An answer carries the request's id with its type: an integer and a string id."""
    def check(ctx: CheckContext) -> None:
        client = binding_of(ctx, name).client
        started(ctx, client)
        for rid in (7001, f"conformance-{uuid.uuid4().hex[:8]}"):
            with ctx.subcheck(f"id {rid!r}"):
                answer = client.request("tools/list", {}, request_id=rid)
                got = answer.envelope.get("id", "<none>") if isinstance(answer.envelope, dict) else "<no envelope>"
                ctx.expect(got == rid and type(got) is type(rid),
                           f"tools/list with id {rid!r} ({type(rid).__name__}) was answered with id {got!r}: {quoted(answer)}",
                           kind="malformed_answer")
    return check


def check_capabilities(name: str) -> Callable[[CheckContext], None]:
    """A server serving tools declares the ``tools`` capability (initialize, or
    server/discover in a stateless revision)."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        started(ctx, client)
        answer = client.initialize_answer or client.request("server/discover")
        caps = answer.result.get("capabilities") if isinstance(answer.result, dict) else None
        ctx.expect(isinstance(caps, dict) and isinstance(caps.get("tools"), dict),
                   f"{answer.method} declares capabilities {json_excerpt(caps)}, without tools, though the server serves "
                   f"tools/call: {quoted(answer)}", kind="schema_mismatch")
    return check


def check_tools_list(name: str, surface: McpSurface) -> Callable[[CheckContext], None]:
    """tools/list (every page) names every tool the profile expects (and, where the
    profile says so, no other)."""
    def check(ctx: CheckContext) -> None:
        client = binding_of(ctx, name).client
        started(ctx, client)
        tools = listed(ctx, client)
        expected = set(surface.tools(ctx.profile))
        missing = sorted(expected - set(tools))
        ctx.expect(not missing, f"tools/list does not name {missing} (it names {sorted(tools)[:30]})")
        if surface.exact:
            extra = sorted(set(tools) - expected)
            ctx.expect(not extra, f"tools/list names {extra}, which are none of the expected tools")
    return check


def check_input_schemas(name: str, surface: McpSurface) -> Callable[[CheckContext], None]:
    """Each tool's inputSchema rejects what the document's schema rejects (invalid inputs
    drawn for the document's schema, applied to the tool's). A tool may be stricter (a
    profile may compose more of its document into it)."""
    def check(ctx: CheckContext) -> None:
        from hypothesis import strategies as st

        from conformance.generation.compiler import one_of

        client = binding_of(ctx, name).client
        started(ctx, client)
        tools = listed(ctx, client)
        expected = {k: v for k, v in surface.tools(ctx.profile).items() if k in tools}
        if not expected:
            raise Blocked(f"set-up: tools/list names none of the expected tools ({sorted(surface.tools(ctx.profile))[:5]}...)")

        for tool, schema in sorted(expected.items()):  # a valid input plus a property nobody declares
            def extra_refused(base: Any, tool: str = tool, schema: Any = schema) -> None:
                extra = {**base, "x_conformance_unknown": True} if isinstance(base, dict) else base
                if not validator_for(schema).is_valid(extra):
                    ctx.expect(not ToolSchema(ctx, tool, tools[tool].get("inputSchema")).is_valid(extra),
                               f"tool {tool}'s inputSchema accepts an unknown property its document forbids", kind="schema_mismatch")
            ctx.for_all(strategy_for(schema), extra_refused, examples=1)

        def invalid(pair: tuple[str, Any]) -> None:
            tool, bad = pair
            ctx.expect(not ToolSchema(ctx, tool, tools[tool].get("inputSchema")).is_valid(bad.instance),
                       f"tool {tool}'s inputSchema accepts an input its document rejects ({bad.violation.description}): "
                       f"{json_excerpt(bad.instance)}", kind="schema_mismatch")

        ctx.for_all(one_of([st.tuples(st.just(t), invalid_strategy(s)) for t, s in sorted(expected.items())]), invalid)
    return check


def check_structured(name: str, surface: McpSurface) -> Callable[[CheckContext], None]:
    """A successful tools/call carries structuredContent, matching the document's result
    schema where it gives one."""
    def check(ctx: CheckContext) -> None:
        client = binding_of(ctx, name).client
        started(ctx, client)
        tool, args = surface.harmless(ctx)
        answer = client.request("tools/call", {"name": tool, "arguments": args})
        result = answer.result
        ctx.expect(isinstance(result, dict) and not result.get("isError"), f"tools/call {tool} was not served: {quoted(answer)}",
                   kind="rejected_valid")
        ctx.expect("structuredContent" in result, f"tools/call {tool} answered without structuredContent "
                   f"(content only: {json_excerpt(result.get('content'))})", kind="schema_mismatch")
        schema = surface.results(ctx.profile).get(tool)
        if schema:
            ctx.expect(validator_for(schema).is_valid(result["structuredContent"]),
                       f"tools/call {tool}: structuredContent does not match the document's result schema: "
                       f"{json_excerpt(result['structuredContent'])}", kind="schema_mismatch")
    return check


def check_output_schema(name: str, surface: McpSurface) -> Callable[[CheckContext], None]:
    """Where a tool declares an outputSchema, its structured results conform to it."""
    def check(ctx: CheckContext) -> None:
        client = binding_of(ctx, name).client
        started(ctx, client)
        tools = listed(ctx, client)
        tool, args = surface.harmless(ctx)
        declared = (tools.get(tool) or {}).get("outputSchema")
        if declared is None:
            raise NotApplicable(f"tool {tool} declares no outputSchema")
        answer = client.request("tools/call", {"name": tool, "arguments": args})
        payload = answer.result.get("structuredContent") if isinstance(answer.result, dict) else None
        try:
            ok = isinstance(declared, dict) and validator_for(declared).is_valid(payload)
        except SCHEMA_FAULTS:
            ok = False
        ctx.expect(ok, f"tools/call {tool}: structuredContent {json_excerpt(payload)} does not conform to the outputSchema "
                   f"the tool declares {json_excerpt(declared)}", kind="schema_mismatch")
    return check


def check_tool_error(name: str, surface: McpSurface) -> Callable[[CheckContext], None]:
    """A call the document refuses for a business reason is a tool execution error: a
    result with ``isError: true``."""
    def check(ctx: CheckContext) -> None:
        client = binding_of(ctx, name).client
        started(ctx, client)
        tool, args = surface.refused(ctx)
        answer = client.request("tools/call", {"name": tool, "arguments": args})
        ctx.expect(isinstance(answer.result, dict) and answer.result.get("isError") is True,
                   f"tools/call {tool} {json_excerpt(args)}, which the document refuses, was not an isError result: {quoted(answer)}",
                   kind="malformed_answer")
    return check


def check_unknown_tool(name: str, strict: bool = False) -> Callable[[CheckContext], None]:
    """tools/call of a tool the server does not have is refused (strict: as a JSON-RPC error)."""
    def check(ctx: CheckContext) -> None:
        client = binding_of(ctx, name).client
        started(ctx, client)
        tool = marker()
        answer = client.request("tools/call", {"name": tool, "arguments": {}})
        refused = answer.error is not None or (isinstance(answer.result, dict) and answer.result.get("isError") is True)
        ctx.expect(refused, f"tools/call of unknown tool {tool} was served: {quoted(answer)}", kind="accepted_invalid")
        if strict:
            ctx.expect(answer.error is not None, f"tools/call of unknown tool {tool} was an isError result, not a JSON-RPC "
                       f"(protocol) error: {quoted(answer)}", kind="malformed_answer")
    return check


# ----------------------------------------------------------------------------------
# checks, handshake revisions
# ----------------------------------------------------------------------------------
def check_negotiation(name: str) -> Callable[[CheckContext], None]:
    """initialize asking a version the server cannot speak is answered with another
    version (or refused), never with the asked one."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        answer = client.start(asked=UNKNOWN_VERSION)
        agreed = answer.result.get("protocolVersion") if isinstance(answer.result, dict) else None
        ctx.expect(answer.error is not None or (isinstance(agreed, str) and agreed != UNKNOWN_VERSION),
                   f"initialize asking protocolVersion {UNKNOWN_VERSION!r} (no revision) was answered with {agreed!r}: {quoted(answer)}")
    return check


def check_same_version(name: str) -> Callable[[CheckContext], None]:
    """initialize asking the revision the binding names is answered with that revision."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        asked = client.preferred.name
        answer = client.start(asked=asked)
        agreed = answer.result.get("protocolVersion") if isinstance(answer.result, dict) else None
        ctx.expect(agreed == asked, f"initialize asking protocolVersion {asked!r} was answered with {agreed!r}: {quoted(answer)}",
                   kind="rejected_valid")
    return check


def check_version_header(name: str) -> Callable[[CheckContext], None]:
    """After initialize, a request with an unsupported or invalid MCP-Protocol-Version is 400."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        started(ctx, client)
        for said in (UNKNOWN_VERSION, "not-a-version"):
            with ctx.subcheck(said):
                answer = client.request("tools/list", {}, headers={VERSION_HEADER: said})
                ctx.expect(answer.http.status == 400, f"tools/list with {VERSION_HEADER}: {said} was answered {quoted(answer)}",
                           kind="wrong_status")
    return check


def check_notification(name: str) -> Callable[[CheckContext], None]:
    """notifications/initialized is accepted with 202 and no body (or refused with an
    HTTP error status)."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        started(ctx, client)
        reply = client.initialized_reply
        assert reply is not None
        ctx.expect((reply.status == 202 and not reply.content) or reply.status >= 400,
                   f"notifications/initialized was answered HTTP {reply.status} {reply.text[:200]!r}", kind="wrong_status")
    return check


def check_session_end(name: str) -> Callable[[CheckContext], None]:
    """A session the client ended (DELETE with its id) answers 404 afterwards. The
    session is the run's own: ending it harms no identity."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        started(ctx, client)
        sid = client.session_id
        if sid is None:
            raise NotApplicable(f"the target issues no {SESSION_HEADER} (transports allow that)")
        headers = client.headers_for({"method": "tools/list"})
        ended = ctx.http.request("DELETE", client.path, headers={k: v for k, v in headers.items() if k != "Content-Type"})
        if not 200 <= ended.status < 300:  # 405 is the transports' way to decline; no status is required of a DELETE
            raise Untested(f"the target did not end the session on DELETE (HTTP {ended.status} {ended.text[:120]!r}); "
                           "transports let a server decline (405)", "optional")
        message = {"jsonrpc": "2.0", "id": 9001, "method": "tools/list", "params": {}}
        after = client.post(message, headers)
        ctx.expect(after.status == 404, f"tools/list in the session ended by DELETE was answered HTTP {after.status} "
                   f"{after.text[:200]!r}", kind="wrong_status")
    return check


def check_before_initialize(name: str) -> Callable[[CheckContext], None]:
    """A request without the session id the server issues (no initialize before it) is refused."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        started(ctx, client)
        if client.session_id is None:
            raise NotApplicable(f"the target issues no {SESSION_HEADER}: it cannot tell a request before initialize")
        headers = {k: v for k, v in client.headers_for({"method": "tools/list"}).items() if k != SESSION_HEADER}
        reply = client.post({"jsonrpc": "2.0", "id": 9002, "method": "tools/list", "params": {}}, headers)
        body = reply.json()
        served = isinstance(body, dict) and isinstance(body.get("result"), dict)
        ctx.expect(reply.status >= 400 and not served, f"tools/list with no session (no initialize) was answered HTTP {reply.status} "
                   f"{reply.text[:200]!r}", kind="accepted_invalid")
    return check


# ----------------------------------------------------------------------------------
# checks, stateless revisions
# ----------------------------------------------------------------------------------
def expect_error(ctx: CheckContext, answer: Answer, status: int, code: int | None, what: str) -> None:
    ctx.expect(answer.http.status == status, f"{what}: expected HTTP {status}, got {quoted(answer)}", kind="wrong_status")
    ctx.expect(answer.error_code == code, f"{what}: expected JSON-RPC error {code}, got {quoted(answer)}", kind="wrong_error_code")


def check_unsupported_version(name: str) -> Callable[[CheckContext], None]:
    """A request in a version the server does not speak: 400, UnsupportedProtocolVersionError
    listing the versions it supports."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        rev = client.rev
        meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": UNKNOWN_VERSION,
                          "io.modelcontextprotocol/clientCapabilities": {}}}
        answer = client.request("tools/list", meta, headers={VERSION_HEADER: UNKNOWN_VERSION})
        expect_error(ctx, answer, 400, rev.error_code("UnsupportedProtocolVersionError"), f"tools/list in version {UNKNOWN_VERSION}")
        supported = ((answer.error or {}).get("data") or {}).get("supported") if isinstance((answer.error or {}).get("data"), dict) else None
        ctx.expect(isinstance(supported, list) and supported, f"the error lists no supported versions: {quoted(answer)}",
                   kind="schema_mismatch")
    return check


def check_header_mismatch(name: str, surface: McpSurface) -> Callable[[CheckContext], None]:
    """Headers that do not match the body, or a required one missing: 400, HeaderMismatch."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        code = client.rev.error_code("HeaderMismatchError")
        tool, args = surface.harmless(ctx)
        cases: list[tuple[str, str, dict[str, Any], dict[str, str | None]]] = [
            ("Mcp-Method another method", "tools/list", {}, {"Mcp-Method": "tools/call"}),
            ("Mcp-Method missing", "tools/list", {}, {"Mcp-Method": None}),
            (f"{VERSION_HEADER} another version", "tools/list", {}, {VERSION_HEADER: "2025-11-25"}),
            ("Mcp-Name another tool", "tools/call", {"name": tool, "arguments": args}, {"Mcp-Name": marker()}),
            ("Mcp-Name missing", "tools/call", {"name": tool, "arguments": args}, {"Mcp-Name": None}),
        ]
        for what, method, params, headers in cases:
            with ctx.subcheck(what):
                expect_error(ctx, client.request(method, params, headers=headers), 400, code, f"{method} with {what}")
    return check


def check_meta_required(name: str) -> Callable[[CheckContext], None]:
    """A request without the ``_meta`` fields the revision requires: 400, -32602."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": client.rev.name}}  # no clientCapabilities
        message = {"jsonrpc": "2.0", "id": 9003, "method": "tools/list", "params": meta}
        reply = client.post(message, client.headers_for(message))
        answer = Answer("tools/list", message, {}, reply, reply.json(), client.rev.name)
        expect_error(ctx, answer, 400, -32602, "tools/list without io.modelcontextprotocol/clientCapabilities")
    return check


def check_method_not_found(name: str) -> Callable[[CheckContext], None]:
    """An RPC method the server does not implement: 404, -32601."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        answer = client.request("conformance/no-such-method", {})
        expect_error(ctx, answer, 404, -32601, "the method conformance/no-such-method")
    return check


def check_discover(name: str) -> Callable[[CheckContext], None]:
    """server/discover is served and lists the revision the binding speaks."""
    def check(ctx: CheckContext) -> None:
        client = fresh_client(ctx, name)
        answer = client.request("server/discover", {})
        versions = answer.result.get("supportedVersions") if isinstance(answer.result, dict) else None
        ctx.expect(isinstance(versions, list) and client.rev.name in versions,
                   f"server/discover did not list {client.rev.name}: {quoted(answer)}", kind="rejected_valid")
    return check


# ----------------------------------------------------------------------------------
# the rows
# ----------------------------------------------------------------------------------
def rows(profile: Profile, binding: str, surface: McpSurface, extra_faults: dict[str, tuple[str, ...]] | None = None) -> list[Requirement]:
    """The MCP-level rows of one MCP binding of ``profile``; ``extra_faults`` adds a
    profile's own faults to a row (by the ID's part after the prefix: ``TOOL-ERROR``)."""
    entry = profile.settings["bindings"][binding]
    rev = revision(str(entry["protocol_version"]))
    table = Table(profile)
    prefix = slug(binding)

    def page(stem: str, needle: str) -> Source:
        return Source(rev.page_relpath(stem), f"line {rev.line(stem, needle)}")

    def row(rid: str, level: str, title: str, source: Source, check: Callable[[CheckContext], None], faults: tuple[str, ...]) -> Requirement:
        return table.req(f"{prefix}-{rid}", level, f"MCP {rev.name} ({binding}): {title}", source, check, faults)

    tools_page = "server-tools"
    out = [
        row("SCHEMA", "MUST", "every answer matches the revision's schema.json",
            Source(f"specs/mcp/{rev.name}/schema.json", f"/{rev.defs_key}"), check_schema(binding, surface),
            ("mcp_tool_result_without_content",)),
        row("ID-ECHO", "MUST", "an answer carries the request's id, with its type",
            page("basic-index", "include the same ID as the request"), check_id_echo(binding), ("mcp_id_as_string",)),
        row("CAPABILITIES", "MUST", "a server with tools declares the tools capability",
            page(tools_page, "MUST** declare the `tools` capability"), check_capabilities(binding), ("mcp_no_tools_capability",)),
        table.req(f"{prefix}-TOOLS", surface.tools_level, f"MCP {rev.name} ({binding}): tools/list (every page) names every tool "
                  "the profile expects", surface.tools_source, check_tools_list(binding, surface),
                  ("mcp_tool_missing", "mcp_cursor_repeats", *(("mcp_tool_extra",) if surface.exact else ()))),
        table.req(f"{prefix}-INPUT-SCHEMA", "SHOULD", f"MCP {rev.name} ({binding}): each tool's inputSchema rejects what its "
                  "document's schema rejects", table.chosen(f"profiles/{profile.name}.yaml#/bindings/{binding}"),
                  check_input_schemas(binding, surface), ("mcp_schema_loosened",)),
        table.req(f"{prefix}-STRUCTURED", "SHOULD", f"MCP {rev.name} ({binding}): a tool's result is its structuredContent, "
                  "matching the document's result schema", table.chosen(f"profiles/{profile.name}.yaml#/bindings/{binding}"),
                  check_structured(binding, surface), ("mcp_text_only_results",)),
        row("OUTPUT-SCHEMA", "MUST", "structured results conform to the outputSchema a tool declares",
            page(tools_page, "provide structured results that conform"), check_output_schema(binding, surface), ("mcp_output_schema_unmet",)),
        row("TOOL-ERROR", "SHOULD", "a business refusal is a tool execution error (isError: true)",
            page(tools_page, "Tool Execution Errors"), check_tool_error(binding, surface), ("mcp_tool_errors_as_protocol_errors",)),
        row("UNKNOWN-TOOL", "MUST", "tools/call of an unknown tool is refused",
            page(tools_page, "Unknown tool"), check_unknown_tool(binding), ("mcp_unknown_tool_served",)),
        row("UNKNOWN-TOOL-PROTOCOL-ERROR", "SHOULD", "an unknown tool is a protocol (JSON-RPC) error",
            page(tools_page, "Protocol Errors"), check_unknown_tool(binding, strict=True), ("mcp_unknown_tool_is_error",)),
    ]
    if not rev.stateless:
        lifecycle, transports = "basic-lifecycle", "basic-transports"
        out += [
            row("VERSION-NEGOTIATION", "MUST", "initialize asking an unknown version is answered with another one",
                page(lifecycle, "Otherwise, the server **MUST** respond with another"), check_negotiation(binding), ("mcp_echo_version",)),
            table.req(f"{prefix}-VERSION-SAME", surface.versions_level, f"MCP {rev.name} ({binding}): initialize asking "
                      f"{rev.name} is answered with {rev.name}", surface.versions_source, check_same_version(binding), ("mcp_always_oldest",)),
            row("VERSION-HEADER", "MUST", "a request with an unsupported or invalid MCP-Protocol-Version is 400",
                page(transports, "If the server receives a request with an invalid or unsupported"), check_version_header(binding),
                ("mcp_version_header_ignored",)),
            row("NOTIFICATION", "MUST", "notifications/initialized is accepted with 202 and no body",
                page(transports, "If the server accepts the input, the server **MUST"), check_notification(binding),
                ("mcp_notification_answered",)),
            row("SESSION-END", "MUST", "a session ended by DELETE answers 404",
                page(transports, "terminate the session at any time, after which it **MUST** respond"), check_session_end(binding),
                ("mcp_session_outlives_delete",)),
            row("BEFORE-INITIALIZE", "SHOULD", "a request without the session initialize opened is refused",
                page(lifecycle, "The initialization phase **MUST** be the first interaction"), check_before_initialize(binding),
                ("mcp_sessions_unchecked",)),
        ]
    else:
        http = "basic-transports-streamable-http"
        out += [
            row("DISCOVER", "MUST", "server/discover is served and lists the revision",
                page("basic-versioning", "Servers **MUST** implement"), check_discover(binding), ("mcp_discover_missing",)),
            row("VERSION-UNSUPPORTED", "MUST", "a request in an unsupported version is 400 UnsupportedProtocolVersionError",
                page(http, "not to support), it **MUST** respond with `400 Bad Request` and an"), check_unsupported_version(binding),
                ("mcp_any_version",)),
            row("HEADER-MISMATCH", "MUST", "mirrored headers missing or not matching the body are 400 HeaderMismatch",
                page(http, "When rejecting a request due to header validation failure"), check_header_mismatch(binding, surface),
                ("mcp_headers_unchecked",)),
            row("META-REQUIRED", "MUST", "a request without the required _meta fields is 400 -32602",
                page("basic-index", "A request missing any required field is malformed"), check_meta_required(binding),
                ("mcp_meta_unchecked",)),
            row("METHOD-NOT-FOUND", "MUST", "an unknown RPC method is 404 -32601",
                page(http, "If the server does not implement the requested RPC method"), check_method_not_found(binding),
                ("mcp_unknown_method_ok",)),
        ]
    for r in out:
        r.faults = tuple(r.faults) + (extra_faults or {}).get(r.id[len(prefix) + 1:], ())
        r.document = "mcp"
    return out


def mcp_bindings(profile: Profile) -> list[str]:
    return [name for name, entry in (profile.settings.get("bindings") or {}).items() if entry.get("kind") == "mcp-tools"]


def all_rows(profile: Profile, surface: McpSurface, extra_faults: dict[str, tuple[str, ...]] | None = None) -> list[Requirement]:
    """The MCP-level rows of every MCP binding the profile declares."""
    return [r for b in mcp_bindings(profile) for r in rows(profile, b, surface, extra_faults)]
