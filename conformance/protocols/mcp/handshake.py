"""The MCP rows of the handshake revisions (an initialize before anything else, and
sessions): version negotiation, the version header, the initialized notification, a
session's end and a request before initialize. Each row is a family over the profile's
MCP bindings of those revisions (surface.py); its faults patch the shared server."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import Cite, requirement
from conformance.kit.faults import replaces
from conformance.model import Profile
from conformance.protocols.mcp.server import McpHost, McpReply
from conformance.protocols.mcp.surface import (
    TITLE,
    UNKNOWN_VERSION,
    McpBinding,
    bindings,
    fresh_client,
    page,
    quoted,
    server,
    started,
)
from conformance.transport.mcp import SESSION_HEADER, VERSION_HEADER

LIFECYCLE, TRANSPORTS = "basic-lifecycle", "basic-transports"


@requirement(id="{mcp.prefix}-VERSION-NEGOTIATION", level="MUST",
             title=TITLE + "initialize asking an unknown version is answered with another one",
             document="mcp",
             each=bindings(page(LIFECYCLE, "Otherwise, the server **MUST** respond with another"),
                           era="handshake"))
def check_negotiation(ctx: CheckContext, mcp: McpBinding) -> None:
    """initialize asking a version the server cannot speak is answered with another
    version (or refused), never with the asked one."""
    client = fresh_client(ctx, mcp.name)
    answer = client.start(asked=UNKNOWN_VERSION)
    agreed = answer.member("protocolVersion")
    ctx.expect(answer.error is not None or (isinstance(agreed, str) and agreed != UNKNOWN_VERSION),
               f"initialize asking protocolVersion {UNKNOWN_VERSION!r} (no revision) was answered with "
               f"{agreed!r}: {quoted(answer)}")


@check_negotiation.fault
def mcp_echo_version(ref: McpHost) -> None:
    """initialize answers whatever protocolVersion it is asked."""
    @replaces(server(ref).negotiate)
    def negotiate(original: Any, requested: Any) -> str:
        return str(requested)


SAME_TITLE = TITLE + "initialize asking {mcp.revision} is answered with {mcp.revision}"


def versions_source(profile: Profile, b: McpBinding) -> Cite:
    return b.surface.versions_source


@requirement(id="{mcp.prefix}-VERSION-SAME", level="MUST", title=SAME_TITLE,
             document="mcp",
             each=bindings(versions_source, era="handshake", level=lambda s: s.versions_level))
def check_same_version(ctx: CheckContext, mcp: McpBinding) -> None:
    """initialize asking the revision the binding names is answered with that revision. A
    MUST where the document names the revisions, else the profile's SHOULD."""
    client = fresh_client(ctx, mcp.name)
    asked = client.preferred.name
    answer = client.start(asked=asked)
    agreed = answer.member("protocolVersion")
    ctx.expect(agreed == asked, f"initialize asking protocolVersion {asked!r} was answered with {agreed!r}: "
               f"{quoted(answer)}", kind="rejected_valid")


@check_same_version.fault
def mcp_always_oldest(ref: McpHost) -> None:
    """initialize answers an older version than the one asked, even one it speaks."""
    @replaces(server(ref).negotiate)
    def negotiate(original: Any, requested: Any) -> str:
        return "2024-11-05"


@requirement(id="{mcp.prefix}-VERSION-HEADER", level="MUST",
             title=TITLE + "a request with an unsupported or invalid MCP-Protocol-Version "
                   "is 400",
             document="mcp",
             each=bindings(page(TRANSPORTS,
                                "If the server receives a request with an invalid or unsupported"),
                           era="handshake"))
def check_version_header(ctx: CheckContext, mcp: McpBinding) -> None:
    """After initialize, a request with an unsupported or invalid MCP-Protocol-Version is 400."""
    client = fresh_client(ctx, mcp.name)
    started(ctx, client)
    for said in (UNKNOWN_VERSION, "not-a-version"):
        with ctx.subcheck(said):
            answer = client.request("tools/list", {}, headers={VERSION_HEADER: said})
            ctx.expect(answer.http.status == 400, f"tools/list with {VERSION_HEADER}: {said} was answered "
                       f"{quoted(answer)}", kind="wrong_status")


@check_version_header.fault
def mcp_version_header_ignored(ref: McpHost) -> None:
    """Any MCP-Protocol-Version is accepted after initialize."""
    @replaces(server(ref).check_version_header)
    def check(original: Any, said: str | None, session: Any) -> str:
        return session.version if session is not None else max(ref.mcp.handshake_versions())


@requirement(id="{mcp.prefix}-NOTIFICATION", level="MUST",
             title=TITLE + "notifications/initialized is accepted with 202 and no body",
             document="mcp",
             each=bindings(page(TRANSPORTS, "If the server accepts the input, the server **MUST"),
                           era="handshake"))
def check_notification(ctx: CheckContext, mcp: McpBinding) -> None:
    """notifications/initialized is accepted with 202 and no body (or refused with an
    HTTP error status)."""
    client = fresh_client(ctx, mcp.name)
    started(ctx, client)
    reply = client.initialized_reply
    assert reply is not None
    ctx.expect((reply.status == 202 and not reply.content) or reply.status >= 400,
               f"notifications/initialized was answered HTTP {reply.status} {reply.text[:200]!r}",
               kind="wrong_status")


@check_notification.fault
def mcp_notification_answered(ref: McpHost) -> None:
    """An accepted notification is answered 200 with a JSON body."""
    @replaces(server(ref).notification_reply)
    def reply(original: Any, method: str = "") -> McpReply:
        return McpReply(200, {"jsonrpc": "2.0", "result": {}})


def sessions_issued(ctx: CheckContext, mcp: McpBinding, client: Any, why: str) -> None:
    """Not applicable, by the initialize answer's own declaration, where it issued no session
    id (transports: a server "MAY assign a session ID")."""
    issued = client.session_id is not None
    ctx.require_declared(f"{mcp.name}: sessions", lambda: (
        issued, f"the initialize answer carries {'a' if issued else 'no'} {SESSION_HEADER} header"), why=why)


@requirement(id="{mcp.prefix}-SESSION-END", level="MUST",
             title=TITLE + "a session ended by DELETE answers 404",
             document="mcp",
             each=bindings(page(TRANSPORTS,
                                "terminate the session at any time, after which it **MUST** respond"),
                           era="handshake"))
def check_session_end(ctx: CheckContext, mcp: McpBinding) -> None:
    """A session the client ended (DELETE with its id) answers 404 afterwards. The
    session is the run's own: ending it harms no identity."""
    client = fresh_client(ctx, mcp.name)
    started(ctx, client)
    sessions_issued(ctx, mcp, client, why="a server need not issue one")
    headers = client.headers_for({"method": "tools/list"})
    ended = ctx.http.request("DELETE", client.path,
                             headers={k: v for k, v in headers.items() if k != "Content-Type"})
    # 405 is the transports' way to decline; no status is required of a DELETE
    if not 200 <= ended.status < 300:
        raise Untested(f"the target did not end the session on DELETE (HTTP {ended.status} "
                       f"{ended.text[:120]!r}); transports let a server decline (405)", "optional")
    message = {"jsonrpc": "2.0", "id": 9001, "method": "tools/list", "params": {}}
    after = client.post(message, headers)
    ctx.expect(after.status == 404, f"tools/list in the session ended by DELETE was answered HTTP "
               f"{after.status} {after.text[:200]!r}", kind="wrong_status")


@check_session_end.fault
def mcp_session_outlives_delete(ref: McpHost) -> None:
    """DELETE of a session answers 200 and the session goes on."""
    @replaces(server(ref).end_session)
    def end(original: Any, sid: str) -> McpReply:
        return McpReply(200, None)


@requirement(id="{mcp.prefix}-BEFORE-INITIALIZE", level="SHOULD",
             title=TITLE + "a request without the session initialize opened is refused",
             document="mcp",
             each=bindings(page(LIFECYCLE, "The initialization phase **MUST** be the first interaction"),
                           era="handshake"))
def check_before_initialize(ctx: CheckContext, mcp: McpBinding) -> None:
    """A request without the session id the server issues (no initialize before it) is refused."""
    client = fresh_client(ctx, mcp.name)
    started(ctx, client)
    sessions_issued(ctx, mcp, client, why="it cannot tell a request before initialize")
    headers = {k: v for k, v in client.headers_for({"method": "tools/list"}).items() if k != SESSION_HEADER}
    reply = client.post({"jsonrpc": "2.0", "id": 9002, "method": "tools/list", "params": {}}, headers)
    body = reply.json()
    served = isinstance(body, dict) and isinstance(body.get("result"), dict)
    ctx.expect(reply.status >= 400 and not served, "tools/list with no session (no initialize) was answered "
               f"HTTP {reply.status} {reply.text[:200]!r}", kind="accepted_invalid")


@check_before_initialize.fault
def mcp_sessions_unchecked(ref: McpHost) -> None:
    """Requests without the session id initialize issued are served."""
    @replaces(server(ref).session_of)
    def session_of(original: Any, headers: Any) -> Any:
        return original(headers) if headers.get("Mcp-Session-Id") else None
