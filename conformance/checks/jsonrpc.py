"""Protocol-agnostic checks of JSON-RPC answers against a profile's error catalog."""

from __future__ import annotations

from typing import Any

from conformance.model import ErrorCode, Profile
from conformance.runner import CheckContext
from conformance.transport.jsonrpc import RpcReply


def error_named(profile: Profile, name: str) -> ErrorCode:
    """The catalog row whose name is ``name`` (names are the spec's, e.g. 'TaskNotFound')."""
    for err in profile.errors.values():
        if err.name.lower() == name.lower():
            return err
    raise KeyError(f"the {profile.name} error catalog has no error named {name!r}")


def expect_envelope(ctx: CheckContext, reply: RpcReply, what: str, request_id: Any = None) -> dict[str, Any]:
    """The answer is a JSON-RPC 2.0 response object with exactly one of result/error."""
    env = reply.envelope
    ctx.expect(isinstance(env, dict), f"{what}: answer is not a JSON object ({reply.describe()})")
    ctx.expect(env.get("jsonrpc") == "2.0", f"{what}: answer lacks jsonrpc '2.0' ({reply.describe()})")
    ctx.expect(("result" in env) != ("error" in env), f"{what}: answer must hold exactly one of result and error")
    if request_id is not None:
        got = env.get("id")
        ctx.expect(
            got == request_id and type(got) is type(request_id),
            f"{what}: response id {got!r} does not echo the request id {request_id!r}",
        )
    return env


def expect_error(ctx: CheckContext, reply: RpcReply, name: str, what: str) -> dict[str, Any]:
    """The answer is the catalog error ``name`` with the catalog's HTTP status."""
    err = error_named(ctx.profile, name)
    ctx.expect(
        reply.error_code == err.code,
        f"{what}: expected error {err.code} {err.name}, got {reply.describe()}",
    )
    ctx.expect(
        reply.status == err.http_status,
        f"{what}: error {err.code} {err.name} came with HTTP {reply.status}; the catalog says {err.http_status}",
    )
    return reply.error or {}


def expect_result(ctx: CheckContext, reply: RpcReply, what: str) -> Any:
    """The answer is a success (HTTP 200 with a result)."""
    ctx.expect(reply.ok, f"{what}: expected a result, got {reply.describe()}")
    ctx.expect(reply.status == 200, f"{what}: a result came with HTTP {reply.status}, expected 200")
    return reply.result


def expect_catalogued(ctx: CheckContext, reply: RpcReply, what: str) -> None:
    """If the answer is an error, its code is in the catalog and its HTTP status is the catalog's."""
    if reply.error is None:
        return
    code = reply.error_code
    err = ctx.profile.errors.get(code) if isinstance(code, int) else None
    ctx.expect(err is not None, f"{what}: error code {code!r} is not in the spec's error catalog ({reply.describe()})")
    assert err is not None
    ctx.expect(
        reply.status == err.http_status,
        f"{what}: error {err.code} {err.name} came with HTTP {reply.status}; the catalog says {err.http_status}",
    )
