"""Generated valid inputs must be accepted, and results must match their schema."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.checks.jsonrpc import error_named, expect_catalogued, expect_envelope
from conformance.model import Operation
from conformance.runner import CheckContext
from conformance.spec.schemas import schema_errors, strategy_for
from conformance.transport.jsonrpc import RpcReply

# Errors that mean "your request is malformed": a schema-valid request must never get them.
REJECTIONS = ("Parse error", "Invalid Request", "Invalid params")


def expect_matches(ctx: CheckContext, schema: dict[str, Any], instance: Any, what: str) -> None:
    errors = schema_errors(schema, instance)
    ctx.expect(not errors, f"{what} does not match its schema: {'; '.join(errors)}")


def valid_params_accepted(
    ctx: CheckContext,
    op: Operation,
    call: Callable[[Any], RpcReply],
    prepare: Callable[[Any], Any] = lambda p: p,
    extra_property: str | None = "x_conformance_extra",
) -> None:
    """Every generated schema-valid params object is answered without a rejection error;
    any error that does come back is catalogued with its HTTP status. Where the schema
    allows additional properties, one more unknown property must be accepted too."""
    rejected = {error_named(ctx.profile, name).code for name in REJECTIONS}

    def body(params: Any) -> None:
        params = prepare(params)
        variants = [params]
        if extra_property and isinstance(params, dict) and op.params_schema.get("additionalProperties", True) is not False:
            variants.append({**params, extra_property: "allowed: the schema does not forbid it"})
        for variant in variants:
            reply = call(variant)
            what = f"{op.name} with schema-valid params"
            expect_envelope(ctx, reply, what)
            ctx.expect(reply.error_code not in rejected, f"{what} rejected: {reply.describe()}")
            expect_catalogued(ctx, reply, what)

    ctx.for_all(strategy_for(op.params_schema), body)


def result_matches(ctx: CheckContext, op: Operation, reply: RpcReply) -> Any:
    """A successful answer's result matches the operation's result schema."""
    ctx.expect(reply.ok, f"{op.name}: expected a result, got {reply.describe()}")
    if op.result_schema is not None:
        expect_matches(ctx, op.result_schema, reply.result, f"{op.name} result")
    return reply.result
