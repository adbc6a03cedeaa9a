"""Checks of named operations (verbs, actions) over any binding: results, the
profile's error codes with their HTTP statuses, generated valid and invalid inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.checks.schema import expect_matches
from conformance.model import Operation
from conformance.runner import CheckContext
from conformance.spec.invalid import InvalidInstance, invalid_strategy
from conformance.spec.schemas import strategy_for
from conformance.transport.actions import BINDINGS, ActionReply


def expect_ok(ctx: CheckContext, reply: ActionReply, what: str) -> Any:
    ctx.expect(reply.ok, f"{what}: expected a result, got {reply.describe()}")
    return reply.result


def expect_error_shape(ctx: CheckContext, reply: ActionReply, what: str) -> None:
    """An error carries one of the profile's codes, flagged as an error by the binding,
    with the profile's HTTP status where the binding's statuses mean something."""
    ctx.expect(not reply.ok, f"{what}: expected an error, got {reply.describe()}")
    err = ctx.profile.errors.get(reply.error_code)
    if err is None:
        ctx.fail(f"{what}: error code {reply.error_code!r} is not one of the profile's codes ({reply.describe()})")
        return
    ctx.expect(reply.flagged, f"{what}: error {reply.error_code} is not flagged as an error by the {reply.binding} binding")
    if BINDINGS[reply.binding].statuses:
        ctx.expect(reply.status == err.http_status, f"{what}: error {reply.error_code} came with HTTP {reply.status}; the profile says {err.http_status}")


def expect_code(ctx: CheckContext, reply: ActionReply, code: str, what: str) -> None:
    ctx.expect(reply.error_code == code, f"{what}: expected error {code}, got {reply.describe()}")
    expect_error_shape(ctx, reply, what)


def expect_result_schema(ctx: CheckContext, op: Operation, reply: ActionReply, what: str) -> Any:
    result = expect_ok(ctx, reply, what)
    if op.result_schema is not None:
        expect_matches(ctx, op.result_schema, result, f"{op.name} result")
    return result


def valid_inputs_accepted(
    ctx: CheckContext,
    op: Operation,
    call: Callable[[Any], ActionReply],
    rejection: str,
    prepare: Callable[[Any], Any] = lambda x: x,
) -> None:
    """No generated schema-valid input is answered with the ``rejection`` code; any
    other error is one of the profile's, correctly flagged."""
    def body(value: Any) -> None:
        reply = call(prepare(value))
        what = f"{op.name} with a schema-valid input"
        if not reply.ok:
            ctx.expect(reply.error_code != rejection, f"{what} rejected: {reply.describe()}")
            expect_error_shape(ctx, reply, what)

    ctx.for_all(strategy_for(op.params_schema), body)


def invalid_inputs_rejected(
    ctx: CheckContext,
    op: Operation,
    call: Callable[[Any], ActionReply],
    rejection: str,
    state: Callable[[], Any] | None = None,
) -> None:
    """Each input breaking exactly one schema keyword gets the ``rejection`` code, and
    (when ``state`` can read the target's state) changes nothing."""
    def body(bad: InvalidInstance) -> None:
        v = bad.violation
        what = f"{op.name} with an input breaking '{v.keyword}' at {v.pointer or '(root)'} ({v.description})"
        before = state() if state else None
        reply = call(bad.instance)
        expect_code(ctx, reply, rejection, what)
        if state:
            ctx.expect(state() == before, f"{what}: the rejected call changed the target's state")

    ctx.for_all(invalid_strategy(op.params_schema), body)
