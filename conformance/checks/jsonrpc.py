"""The JSON-RPC 2.0 envelope, for bindings of kind jsonrpc-http."""

from __future__ import annotations

from typing import Any

from conformance.check import CheckContext
from conformance.transport.binding import Reply


def expect_envelope(ctx: CheckContext, reply: Reply, what: str, request_id: Any = None) -> dict[str, Any]:
    """The answer is a JSON-RPC 2.0 response object with exactly one of result/error
    (and, given ``request_id``, echoes it with its type)."""
    env = reply.envelope
    ctx.expect(isinstance(env, dict), f"{what}: answer is not a JSON object ({reply.describe()})",
               kind="malformed_answer")
    ctx.expect(env.get("jsonrpc") == "2.0", f"{what}: answer lacks jsonrpc '2.0' ({reply.describe()})",
               kind="malformed_answer")
    ctx.expect(("result" in env) != ("error" in env),
               f"{what}: answer must hold exactly one of result and error",
               kind="malformed_answer")
    if request_id is not None:
        got = env.get("id")
        ctx.expect(
            got == request_id and type(got) is type(request_id),
            f"{what}: response id {got!r} does not echo the request id {request_id!r}",
            kind="malformed_answer",
        )
    return env


def answer_check(ctx: CheckContext, reply: Reply, what: str) -> None:
    """For the input families: every answer is an envelope."""
    expect_envelope(ctx, reply, what)
