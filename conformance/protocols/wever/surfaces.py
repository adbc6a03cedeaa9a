"""Wever Connect beyond its HTTP actions: MCP (one tool per action but registration,
each listed protocol version, the bearer token), one task seen the same over HTTP, MCP
and A2A, and the health and OpenAPI routes. The MCP-level rows every MCP binding gets
are conformance/protocols/mcp's (added through the package's transitional ``parts``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from conformance.checks.expect import expect_result
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, fault, requirement
from conformance.kit.faults import replaces
from conformance.protocols.a2a import wire
from conformance.protocols.wever.client import RECIPIENT, SENDER, WeverClient, a2a_sent_id, served_rpc
from conformance.protocols.wever.reference import OFFERED, Call, WeverReference


# ----------------------------------------------------------------------------------
# MCP
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-MCP-TOOLS", level="MUST",
             title="tools/list has one tool per action except register_mailbox, with the action's "
                   "inputSchema; register_mailbox is not callable",
             source=at("/setup"), faults=["mcp_register_tool", "mcp_register_callable"])
def check_mcp_tools(ctx: CheckContext) -> None:
    """tools/list: one tool per action except register_mailbox, with the action's
    inputSchema; and tools/call of register_mailbox is not served."""
    if ctx.binding.kind != "mcp-tools":
        from conformance.kit.check import NotApplicable

        raise NotApplicable("tools/list exists only in the mcp binding")
    c = WeverClient(ctx)
    registration = c.a2a["access_setup"]["path"].rsplit("/", 1)[-1]  # "Registration is not an MCP tool"
    tools = {t.get("name"): t for t in ctx.binding.list_tools()}
    ctx.keep_evidence()
    expected = {name: a["inputSchema"] for name, a in ctx.profile.spec["actions"].items()
                if name != registration}
    ctx.expect(set(tools) == set(expected),
               f"tools/list names {sorted(set(tools) ^ set(expected))} differently from the actions")
    for name in sorted(set(tools) & set(expected)):
        with ctx.subcheck(name):
            ctx.expect(tools[name].get("inputSchema") == expected[name],
                       f"tool {name}'s inputSchema differs from the action's",
                       kind="schema_mismatch")
    with ctx.subcheck(f"tools/call {registration}"):
        reply = ctx.binding.call(registration, {"label": "conformance over mcp"}, idempotency_key=None)
        ctx.expect(not reply.ok,
                   f"tools/call {registration} was served, though registration is not an MCP tool: "
                   f"{reply.describe()}",
                   kind="accepted_invalid")


@check_mcp_tools.fault
def mcp_register_tool(ref: WeverReference) -> None:
    """tools/list offers register_mailbox as an MCP tool (the manifest: "Registration is not an MCP tool")."""
    actions = list(ref.actions)

    @replaces(ref.mcp_tool_actions)
    def tool_actions(original: Any) -> list[str]:
        return actions


@check_mcp_tools.fault
def mcp_register_callable(ref: WeverReference) -> None:
    """tools/call register_mailbox is served (a mailbox and its token over MCP), though
    tools/list leaves the tool out ("Registration is not an MCP tool")."""
    @replaces(ref.mcp.call_tool)
    def call(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        if isinstance(params, dict) and params.get("name") == ref.registration_action:
            result = ref.run_action(Call(ref.registration_action, params.get("arguments") or {}, None, None,
                                         "mcp"))
            return {"content": [{"type": "text", "text": json.dumps(result)}], "structuredContent": result,
                    "isError": False}
        return dict(original(caller, params, headers))


@requirement(id="WEVER-MCP-VERSIONS", level="MUST",
             title="Every listed MCP protocol version is served with its handshake",
             source=at("/protocols/mcp/versions"), faults=["mcp_one_version"])
def check_mcp_versions(ctx: CheckContext) -> None:
    """Each listed protocol version is served in its own era, as the kit's MCP client
    speaks it (transport/mcp.py): initialize agreeing on a handshake revision, a
    stateless revision's server/discover listing it. A version the kit has no
    documents for is not judged."""
    from conformance.transport.mcp import McpClient, known_revisions, revision

    c = WeverClient(ctx)
    route = c.spec["protocols"]["mcp"]["endpoint"]
    bearer = {"Authorization": f"Bearer {c.token(SENDER)}"}
    for version in c.spec["protocols"]["mcp"]["versions"]:
        if version not in known_revisions():
            continue
        with ctx.subcheck(version):
            client = McpClient(ctx.http, route, version, lambda: dict(bearer))
            if revision(version).stateless:
                answer = client.request("server/discover", {})
                listed = answer.member("supportedVersions")
                ctx.expect(isinstance(listed, list) and version in listed,
                           f"MCP {version}: server/discover answered HTTP {answer.http.status} "
                           f"{answer.http.text[:200]!r}", kind="rejected_valid")
            else:
                answer = client.start(asked=version)
                ctx.expect(answer.member("protocolVersion") == version,
                           f"MCP {version}: initialize asking it answered HTTP {answer.http.status} "
                           f"{answer.http.text[:200]!r}", kind="rejected_valid")


@check_mcp_versions.fault
def mcp_one_version(ref: WeverReference) -> None:
    """MCP serves only the first protocol version the manifest lists."""
    ref.mcp_versions = ref.mcp_versions[:1]


@requirement(id="WEVER-MCP-BEARER", level="MUST", title="MCP needs the configured bearer token",
             source=at("/protocols/mcp/auth"), faults=["mcp_open"])
def check_mcp_bearer(ctx: CheckContext) -> None:
    from conformance.transport.mcp import McpClient, McpError, known_revisions

    c = WeverClient(ctx)
    for version in [v for v in c.spec["protocols"]["mcp"]["versions"] if v in known_revisions()]:
        with ctx.subcheck(version):
            # no Authorization
            client = McpClient(ctx.http, c.spec["protocols"]["mcp"]["endpoint"], version, dict)
            try:
                answer = client.request("tools/list", {})
            except McpError:
                continue  # initialize itself was refused
            served = isinstance(answer.result, dict) and isinstance(answer.result.get("tools"), list)
            ctx.expect(not served, f"MCP {version} tools/list with no token was served: HTTP "
                       f"{answer.http.status} {answer.http.text[:200]}", kind="auth_not_enforced")


@check_mcp_bearer.fault
def mcp_open(ref: WeverReference) -> None:
    """MCP lists tools without a bearer token."""
    @replaces(ref.serve_mcp)
    def serve(original: Any, raw: bytes, headers: Mapping[str, str], method: str = "POST") -> Response:
        if ref.bearer_token(headers) is None:
            token = next(iter(ref.s["tokens"]))
            headers = {**dict(headers), "authorization": f"Bearer {token}"}
        response: Response = original(raw, headers, method)
        return response


@fault
def mcp_errors_unflagged(ref: WeverReference) -> None:
    """A refused tool call answers isError false."""
    @replaces(ref.mcp_call_tool)
    def call(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        return {**original(caller, params, headers), "isError": False}


# ----------------------------------------------------------------------------------
# one task, three surfaces
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-SURFACES-AGREE", level="MUST",
             title="One task reads the same over HTTP, MCP and A2A (state_mapping), before and after "
             "acceptance",
             source=at("/protocols/a2a/access_setup/instructions"),
             faults=["mcp_stale_task", "a2a_state_unmapped"])
def check_surfaces_agree(ctx: CheckContext) -> None:
    """A task sent over A2A reads the same over HTTP, MCP and A2A, before and after the
    recipient accepts it."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    mapping = c.a2a["state_mapping"]
    task_id = a2a_sent_id(ctx, c.a2a_call("SendMessage", c.a2a_message()), "SendMessage")
    http = c.binding if c.binding.kind == "http-action" else ctx.binding_named("http")
    mcp = c.binding if c.binding.kind == "mcp-tools" else ctx.binding_named("mcp")
    for step in (c.vocab.state("offered"), c.vocab.state("accepted")):
        with ctx.subcheck(step):
            if step == "accepted":
                expect_result(ctx, c.via(http, "accept_task", {"task_id": task_id}, c.label(RECIPIENT), None),
                              "accept_task")
            states = {}
            for surface, binding in (("HTTP", http), ("MCP", mcp)):
                seen = c.task_of(c.via(binding, "get_task", {"task_id": task_id}, c.label(SENDER), None),
                                 f"get_task over {surface}", known=task_id)
                states[surface] = c.state_shown(seen, f"get_task over {surface}")
            ctx.expect(states["HTTP"] == states["MCP"],
                       f"HTTP and MCP disagree on the task's state: {states}", kind="state_changed")
            ctx.expect(states["HTTP"] == step, f"the task is {states['HTTP']!r}, expected {step}")
            state = wire.state(served_rpc(ctx, c.a2a_call("GetTask", {"id": task_id}), "GetTask"))
            ctx.expect(state == mapping[step],
                       f"A2A says {state!r} for a {step} task; state_mapping says {mapping[step]}")


@check_surfaces_agree.fault
def mcp_stale_task(ref: WeverReference) -> None:
    """MCP's get_task reports the state the task was created in."""
    @replaces(ref.mcp_call_tool)
    def call(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        result = dict(original(caller, params, headers))
        task = (result.get("structuredContent") or {}).get("task")
        if isinstance(params, dict) and params.get("name") == "get_task" and isinstance(task, dict):
            task["state"] = OFFERED
        return result


# ----------------------------------------------------------------------------------
# the health and OpenAPI routes
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-HEALTH", level="MUST", title="The health route answers 200",
             source=at("/routes/health"),
             faults=["health_down"])
def check_health(ctx: CheckContext) -> None:
    reply = ctx.http.request("GET", ctx.profile.spec["routes"]["health"])
    ctx.expect(reply.status == 200,
               f"GET {ctx.profile.spec['routes']['health']}: HTTP {reply.status} {reply.text[:200]}")


@check_health.fault
def health_down(ref: WeverReference) -> None:
    """The health route answers 503."""
    @replaces(ref.health)
    async def health(original: Any, request: Request) -> Response:
        return JSONResponse({"status": "down"}, status_code=503)


@requirement(id="WEVER-OPENAPI", level="MUST", title="The openapi route describes every action",
             source=at("/routes/openapi"),
             faults=["openapi_incomplete"])
def check_openapi(ctx: CheckContext) -> None:
    """The OpenAPI route describes every action."""
    route = ctx.profile.spec["routes"]["openapi"]
    reply = ctx.http.request("GET", route)
    doc = reply.json()
    ctx.expect(reply.status == 200 and isinstance(doc, dict),
               f"GET {route}: HTTP {reply.status} {reply.text[:200]}")
    paths = doc.get("paths") if isinstance(doc.get("paths"), dict) else {}
    template = ctx.profile.spec["routes"]["actions"]

    def posts(path: str) -> Any:
        item = paths.get(path)
        return item.get("post") if isinstance(item, dict) else None

    def described(name: str) -> bool:
        """A POST at the action's own path, or at the templated route naming the action
        (the manifest does not say which way a relay writes it: either passes)."""
        return bool(posts(template.replace("{action}", name))) or (bool(posts(template))
                                                                   and name in json.dumps(posts(template)))

    missing = [name for name in ctx.profile.spec["actions"] if not described(name)]
    ctx.expect(not missing, f"{route} has no POST operation for the actions {missing} (at {template})",
               kind="schema_mismatch")


OMITTED_ACTION = "renew_mailbox"


@check_openapi.fault
def openapi_incomplete(ref: WeverReference) -> None:
    """/openapi.json omits one action (renew_mailbox)."""
    @replaces(ref.openapi_document)
    def document(original: Any) -> dict[str, Any]:
        doc: dict[str, Any] = original()
        doc["paths"].pop(ref.spec["routes"]["actions"].replace("{action}", OMITTED_ACTION))
        return doc
