"""Generated invalid inputs (one labelled violation each) must be rejected."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.checks.jsonrpc import error_named, expect_envelope
from conformance.model import Operation
from conformance.runner import CheckContext
from conformance.spec.invalid import InvalidInstance, invalid_strategy
from conformance.transport.jsonrpc import RpcReply


def invalid_params_rejected(
    ctx: CheckContext,
    op: Operation,
    call: Callable[[Any], RpcReply],
    error: str = "Invalid params",
    also_allowed: tuple[str, ...] = (),
) -> None:
    """Each params object that breaks exactly one schema keyword is answered with the
    ``error`` of the catalog (and its HTTP status); the message names the rule broken."""
    expected = error_named(ctx.profile, error)
    allowed = {expected.code} | {error_named(ctx.profile, n).code for n in also_allowed}

    def body(bad: InvalidInstance) -> None:
        v = bad.violation
        what = f"{op.name} with params breaking '{v.keyword}' at {v.pointer or '(root)'} ({v.description})"
        reply = call(bad.instance)
        expect_envelope(ctx, reply, what)
        ctx.expect(reply.error_code in allowed, f"{what}: expected error {expected.code} {expected.name}, got {reply.describe()}")
        err = ctx.profile.errors[reply.error_code]
        ctx.expect(reply.status == err.http_status, f"{what}: error {err.code} came with HTTP {reply.status}; the catalog says {err.http_status}")

    ctx.for_all(invalid_strategy(op.params_schema), body)
