"""What the MCP-level rows share: the surface a profile gives them, one member of their
families per MCP binding of the profile, and the client steps every check takes.

A profile that offers MCP lists the MCP modules (tools.py, handshake.py, stateless.py,
variants.py) among its ``Protocol.modules`` and gives ``Protocol.provides={"mcp":
surface}``, a callable ``surface(profile) -> McpSurface`` (the engine copies it to
``profile.provides``). Each MCP row is then a family over the profile's MCP bindings
(``each=bindings(...)``): its id is prefixed with the binding's name (``MCP-``,
``MCP-STATELESS-``), its title names the binding's revision, and it cites that
revision's page (specs/mcp/<revision>/), graded as the page grades it. The client is
the engine's (conformance/transport/mcp.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import SchemaError

from conformance.documents.schemas import validator_for
from conformance.kit.check import Blocked, CheckContext, NotApplicable
from conformance.kit.declare import Cite, Each, chosen, slug
from conformance.model import Profile, Source
from conformance.protocols.mcp.server import McpHost, McpServer
from conformance.transport.binding import DEFAULT
from conformance.transport.mcp import Answer, McpClient, McpError, Revision, revision

UNKNOWN_VERSION = "1900-01-01"  # a version no revision has: the kit's marker
TITLE = "MCP {mcp.revision} ({mcp.name}): "  # how an MCP row's title begins (a template of its family)


@dataclass(frozen=True)
class McpSurface:
    """What a profile says about its MCP tools: ``tools`` (profile -> tool name -> the
    document's input schema), ``results`` (tool -> the document's result schema, or
    None), ``harmless`` (ctx -> a call that succeeds and changes nothing), ``refused``
    (ctx -> a call the document refuses for a business reason), and where the tool set
    and the revisions are named (``tools_source``/``tools_level``, ``versions_source``/
    ``versions_level``: the document's, MUST; the profile's, SHOULD); ``exact`` when the
    profile expects no other tool. A profile's own faults that an MCP row must catch too
    are its ``Protocol.more_faults``."""

    tools: Callable[[Profile], dict[str, Any]]
    results: Callable[[Profile], dict[str, Any]]
    harmless: Callable[[CheckContext], tuple[str, dict[str, Any]]]
    refused: Callable[[CheckContext], tuple[str, dict[str, Any]]]
    tools_source: Source
    tools_level: str
    versions_source: Source
    versions_level: str
    exact: bool = False  # the profile expects no tool beyond its own (one tool per verb, say)


@dataclass(frozen=True)
class McpBinding:
    """One MCP binding of a profile, as an MCP row's templates and its check read it:
    ``{mcp.prefix}`` in the id, ``{mcp.revision}`` and ``{mcp.name}`` in the title."""

    name: str  # the binding's name in the profile's bindings: (mcp, mcp-stateless)
    prefix: str  # the name as an id part (MCP, MCP-STATELESS)
    revision: str  # the revision of specs/mcp/ the binding speaks
    surface: McpSurface

    @property
    def rev(self) -> Revision:
        return revision(self.revision)


def surface_of(profile: Profile) -> McpSurface:
    """The profile's MCP surface (``Protocol.provides["mcp"]``)."""
    provide = profile.provides.get("mcp")
    if provide is None:
        raise ValueError(f"profile {profile.name} lists the MCP modules but provides no MCP surface "
                         "(provides={'mcp': ...})")
    surface: McpSurface = provide(profile)
    return surface


def mcp_bindings(profile: Profile) -> list[McpBinding]:
    """Every binding of kind mcp-tools the profile declares, in its order."""
    entries = [(name, entry) for name, entry in (profile.settings.get("bindings") or {}).items()
               if entry.get("kind") == "mcp-tools"]
    if not entries:
        return []
    surface = surface_of(profile)
    return [McpBinding(name, slug(name), str(entry["protocol_version"]), surface) for name, entry in entries]


# -- where a row cites: a member's source, from its binding ---------------------------------
Where = Callable[[Profile, McpBinding], Cite]


def page(stem: str, needle: str) -> Where:
    """The line of the binding's revision page ``stem`` (specs/mcp/<revision>/<stem>.mdx)
    that ``needle`` stands on."""
    def where(profile: Profile, b: McpBinding) -> Cite:
        return Source(b.rev.page_relpath(stem), f"line {b.rev.line(stem, needle)}")
    return where


def schema_json(profile: Profile, b: McpBinding) -> Cite:
    """The definitions of the binding's revision's schema.json."""
    return Source(f"specs/mcp/{b.revision}/schema.json", f"/{b.rev.defs_key}")


def binding_entry(profile: Profile, b: McpBinding) -> Cite:
    """The profile's own choice, in its entry for the binding."""
    return chosen(f"profiles/{profile.name}.yaml#/bindings/{b.name}")


def bindings(where: Where, *, era: str = "both",
             level: Callable[[McpSurface], str] | None = None) -> Callable[[Profile], list[Each]]:
    """``each=`` of an MCP row: one member per MCP binding of the profile (of the row's
    ``era``: handshake revisions, stateless ones, or both), citing ``where`` the binding's
    revision says it; ``level(surface)`` grades a member where the profile's surface says
    who names what the row checks (the document: MUST; the profile alone: SHOULD)."""
    def members(profile: Profile) -> list[Each]:
        return [Each(args={"mcp": b}, source=where(profile, b), level=level(b.surface) if level else None)
                for b in mcp_bindings(profile)
                if era == "both" or b.rev.stateless == (era == "stateless")]
    return members


# -- the client steps ------------------------------------------------------------------
def binding_of(ctx: CheckContext, name: str) -> Any:
    """The run's binding when it is ``name`` (the rows are about that surface)."""
    if ctx.binding_name != name:
        raise NotApplicable(f"about the {name} binding (run with --binding {name})")
    return ctx.binding


def fresh_client(ctx: CheckContext, name: str) -> McpClient:
    """A new client (a new session) of the binding, as the binding's own bearer."""
    b = binding_of(ctx, name)
    return McpClient(ctx.http, b.path, str(b.entry.get("protocol_version")),
                     lambda: {**b.headers, **b.auth(DEFAULT)})


def started(ctx: CheckContext, client: McpClient) -> Revision:
    """The client's session, started (a handshake the kit cannot continue blocks the row)."""
    try:
        client.ensure_started()
    except McpError as exc:
        raise Blocked("set-up: no MCP session to judge this in (looked for an initialize answer agreeing "
                      f"on a revision the kit has documents for): {exc}") from None
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
            self.ctx.fail(f"tools/list: tool {self.tool}'s inputSchema is not a JSON Schema this suite can "
                          f"apply ({type(exc).__name__}: {str(exc)[:100]}): {self.schema!r:.200}",
                          kind="malformed_answer")
            return False


def listed(ctx: CheckContext, client: McpClient) -> dict[str, dict[str, Any]]:
    """Every tool the target lists (all pages); a listing that breaks off is a finding."""
    tools, answers, problem = client.list_tools()
    ctx.keep_evidence()
    ctx.expect(not problem, problem, kind="malformed_answer")
    return {str(t.get("name")): t for t in tools}


def server(ref: McpHost) -> McpServer:
    """The MCP server of a reference (what the MCP faults patch)."""
    mcp: McpServer = ref.mcp
    return mcp
