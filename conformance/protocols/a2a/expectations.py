"""Expectations several rows hold an answer to: one binding's statement (not applicable over
another), an error of the table as the binding carries it (section 5.4), an ErrorInfo (section
11.6), an invalid input refused as invalid (section 3.3.2), a request rejected for its
credentials."""

from __future__ import annotations

from collections.abc import Callable

from conformance.kit.check import CheckContext, NotApplicable
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import (
    GRPC,
    JSONRPC,
    REST,
    VERSION,
    carries,
    describe,
    error_name,
    form,
    grpc_status,
    info_in,
    info_statement,
    kind_of,
    speaks_jsonrpc,
    table,
    typed,
    version_problem,
)
from conformance.protocols.a2a.client import a2a_error
from conformance.protocols.a2a.names import INTERNAL, METHOD_NOT_FOUND, a2a_names
from conformance.transport.binding import Reply


# -- rejected for its credentials ------------------------------------------------------------
def rejected(ctx: CheckContext, reply: Reply, what: str) -> None:
    """Section 3.3.2: a request with missing or invalid credentials is rejected: not served,
    not failed by the server, and not answered as a request that was read (an A2A error of
    the table: a task not found, say, tells the caller its request went through)."""
    ctx.expect(not reply.ok, f"{what}: served ({reply.describe()}); the spec wants it rejected",
               kind="auth_not_enforced")
    name = error_name(ctx, reply)
    ctx.expect(reply.status < 500 and name != INTERNAL,
               f"{what}: the server failed instead of rejecting the credentials: {reply.describe()}",
               kind="wrong_status")
    ctx.expect(name not in a2a_names(ctx.profile),
               f"{what}: answered {name}, as if the request had been let through: {reply.describe()}",
               kind="auth_not_enforced")


def binding_only(ctx: CheckContext, kind: str) -> None:
    """A statement of one binding: not applicable over the other."""
    if kind_of(ctx) != kind:
        which = {JSONRPC: "JSON-RPC (section 9)", REST: "HTTP+JSON (section 11)",
                 GRPC: "gRPC (section 10)"}[kind]
        raise NotApplicable(f"a statement of the {which} binding; this run speaks {ctx.run.binding}")


def over(kind: str) -> Callable[[CheckContext], None]:
    """The guard of a row about one binding's statement (``@requirement(applies=over(REST))``):
    not applicable over the others."""
    def guard(ctx: CheckContext) -> None:
        binding_only(ctx, kind)
    guard.__name__ = guard.__qualname__ = f"over_{kind.replace('-', '_')}"
    guard.__doc__ = f"applies over the {kind} binding only"
    return guard



def expect_carries(ctx: CheckContext, reply: Reply, name: str, what: str) -> None:
    """``what`` was refused with error ``name`` (however the binding lets it be told)."""
    err = table(ctx)[name]
    ctx.expect(not reply.ok, f"{what}: served ({describe(reply)}); expected {name} ({form(ctx, name)})",
               kind="accepted_invalid", **typed(ctx, reply, err))
    got = a2a_error(ctx, reply)
    ctx.expect(carries(ctx, reply, name),
               f"{what}: expected {name} ({form(ctx, name)}), got {got or 'no error of the table'}: "
               f"{describe(reply)}", kind="wrong_error_code", **typed(ctx, reply, err))


def expect_mapped(ctx: CheckContext, reply: Reply, name: str, what: str) -> None:
    """``what`` was refused with ``name`` in the form section 5.4 maps it to: its JSON-RPC
    code, or its HTTP status and (section 11.6) an ErrorInfo with its reason."""
    err = table(ctx)[name]
    statement = str(err.source)
    ctx.expect(not reply.ok, f"{what}: served ({describe(reply)}); expected {name} ({form(ctx, name)})",
               kind="accepted_invalid", statement=statement, **typed(ctx, reply, err))
    if kind_of(ctx) == JSONRPC:
        ctx.expect(reply.flagged and reply.error_code == err.code,
                   f"{what}: expected the JSON-RPC error {err.code} ({name}), got {describe(reply)}",
                   kind="wrong_error_code", statement=statement, **typed(ctx, reply, err))
        return
    if kind_of(ctx) == GRPC:
        wanted = docs.grpc_statuses()[name]
        with ctx.subcheck("gRPC status"):
            ctx.expect(grpc_status(reply) == wanted,
                       f"{what}: {name} came with gRPC status {grpc_status(reply) or 'none'}, the table says "
                       f"{wanted}: {describe(reply)}", kind="wrong_error_code", statement=statement,
                       **typed(ctx, reply, err))
        with ctx.subcheck("ErrorInfo"):
            reason = (info_in(reply) or {}).get("reason")
            ctx.expect(reason == docs.reason_of(name),
                       f"{what}: the status's details hold no ErrorInfo with reason {docs.reason_of(name)} "
                       f"(reason: {reason!r}): {describe(reply)}", kind="wrong_error_code",
                       statement=str(info_statement(GRPC)))
        return
    with ctx.subcheck("HTTP status"):
        ctx.expect(reply.status == err.http_status,
                   f"{what}: {name} came with HTTP {reply.status}, the table says {err.http_status}: "
                   f"{describe(reply)}", kind="wrong_status", statement=statement, **typed(ctx, reply, err))
    with ctx.subcheck("ErrorInfo"):
        reason = (info_in(reply) or {}).get("reason")
        ctx.expect(reason == docs.reason_of(name) or (name == VERSION and version_problem(reply)),
                   f"{what}: the error's details hold no ErrorInfo with reason {docs.reason_of(name)} "
                   f"(reason: {reason!r}): {describe(reply)}", kind="wrong_error_code",
                   statement=str(info_statement()))


def expect_info(ctx: CheckContext, reply: Reply, name: str, what: str) -> None:
    """An ErrorInfo: the @type, reason and domain section 11.6 gives."""
    ctx.expect(not reply.ok, f"{what}: served: {describe(reply)}", kind="accepted_invalid")
    info = info_in(reply)
    ctx.expect(info is not None,
               f"{what}: no detail of @type {docs.error_info()['@type']}: {describe(reply)}",
               kind="malformed_answer")
    assert info is not None
    reason, domain = docs.reason_of(name), docs.error_info()["domain"]
    ctx.expect(info.get("reason") == reason and info.get("domain") == domain,
               f"{what}: the ErrorInfo says reason {info.get('reason')!r}, domain {info.get('domain')!r}; "
               f"{name} wants reason {reason!r}, domain {domain!r}", kind="wrong_error_code")


def refused_as_invalid(ctx: CheckContext, reply: Reply, what: str, allowed: tuple[str, ...] = ()) -> None:
    """Section 3.3.2: an invalid input is refused, as invalid: an error of the binding (an
    HTTP 4xx over HTTP+JSON), not a success, not a failure of the server, not an A2A error
    about something else (a task not found), not an authorization refusal; the errors
    ``allowed`` (a capability the card declares off) are answers the spec gives too."""
    ctx.expect(not reply.ok, f"{what}: accepted ({reply.describe()}); the spec wants it refused",
               kind="accepted_invalid")
    name = error_name(ctx, reply)
    if speaks_jsonrpc(ctx, reply):
        ctx.expect(reply.flagged, f"{what}: the answer is no JSON-RPC error: {reply.describe()}",
                   kind="malformed_answer")
    ctx.expect(reply.status < 500 and name != INTERNAL,
               f"{what}: the server failed instead of refusing the input: {reply.describe()}",
               kind="wrong_status")
    ctx.expect(speaks_jsonrpc(ctx, reply) or 400 <= reply.status < 500,
               f"{what}: refused with HTTP {reply.status}, not a 4xx: {reply.describe()}",
               kind="wrong_status")
    ctx.expect(reply.status != 403, f"{what}: refused as forbidden (HTTP 403), an authorization error, not a "
                                    f"validation error: {reply.describe()}", kind="wrong_status")
    ctx.expect(name in allowed or (name not in a2a_names(ctx.profile) and name != METHOD_NOT_FOUND),
               f"{what}: refused as {name}, which is about something else than the invalid input: "
               f"{reply.describe()}", kind="wrong_error_code")
