"""Generated inputs against an operation's schemas, over any binding: valid inputs
are accepted, inputs breaking one keyword are refused (and change nothing), and
results match their schema."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from conformance.checks.causes import BreakControl, Served
from conformance.checks.expect import (
    catalog_entry,
    expect_error,
    expect_refusal,
    expect_refused,
    expect_result,
)
from conformance.documents.schemas import schema_errors, validator_for
from conformance.generation.compiler import one_of
from conformance.generation.invalid import InvalidInstance, example_breaks, invalid_strategy
from conformance.generation.strategies import strategy_for
from conformance.generation.variants import valid_batches
from conformance.jsontext import json_excerpt
from conformance.kit.check import CheckContext, Untested
from conformance.model import Operation
from conformance.transport.binding import Reply

Call = Callable[[Any], Reply]
AnswerCheck = Callable[[CheckContext, Reply, str], Any]


def expect_matches(ctx: CheckContext, schema: dict[str, Any], instance: Any, what: str) -> None:
    errors = schema_errors(schema, instance)
    ctx.expect(not errors, f"{what} does not match its schema: {'; '.join(errors)}", kind="schema_mismatch")


def valid_inputs_accepted(
    ctx: CheckContext,
    op: Operation,
    call: Call,
    rejections: Iterable[Any],
    prepare: Callable[[Any], Any] | None = None,
    extra_property: str | None = None,
    answer_check: AnswerCheck | None = None,
    in_world: Callable[[Any], Any] | None = None,
) -> None:
    """No generated schema-valid input gets one of the ``rejections`` (codes or
    names), or a server failure (HTTP 5xx). Any other refusal (a task the input names
    that the target does not hold, say) is the business of the rows about that error, its
    code and status: judging them here too made one bug many findings.
    With ``extra_property``, an input with one more unknown property must be
    accepted too where the schema does not forbid it. With ``in_world`` (the drawn
    input naming objects the target really holds), each draw is sent that way too.

    The row passes only on inputs that were served (``causes.Served``): one whose every
    input was refused, or refused for the caller (a credential, a quota), is blocked."""
    rejected = {catalog_entry(ctx.profile, r).code for r in rejections}
    prepared = Prepared(op, prepare)
    served = Served(ctx)

    def body(value: Any) -> None:
        value = prepared(value, value, valid=True)
        if value is Prepared.SPOILT:
            return
        variants = [value]
        if in_world is not None:
            named = in_world(value)
            if named != value and prepared.schema.is_valid(named):
                variants.append(named)
        if (extra_property and isinstance(value, dict)
            and op.params_schema.get("additionalProperties", True) is not False):
            variants.append({**value, extra_property: "allowed: the schema does not forbid it"})
        for variant in variants:
            what = f"{op.name} with a schema-valid input"
            reply = call(variant)
            if not served.judge(reply):
                continue
            if answer_check:
                answer_check(ctx, reply, what)
            # judged, served or not: a valid input is never refused as one that breaks its schema,
            # and never makes the server fail
            ctx.expect(reply.ok or reply.error_code not in rejected, f"{what} rejected: {reply.describe()}",
                       kind="rejected_valid")
            ctx.expect(reply.status < 500, f"{what}: the server failed on a valid input: {reply.describe()}",
                       kind="rejected_valid")

    ctx.for_all(strategy_for(op.params_schema), body, batched=valid_batches(op.params_schema))
    prepared.judged_some()
    served.done(f"{op.name} with schema-valid inputs")


class Prepared:
    """A check's ``prepare`` (real ids, a marker, ...) applied to a drawn input, which is
    judged only while it is still what was drawn: a valid input stays valid, a break stays
    broken. A check whose preparation spoilt every input judged nothing: untested."""

    SPOILT = object()

    def __init__(self, op: Operation, prepare: Callable[[Any], Any] | None) -> None:
        self.op, self.prepare = op, prepare
        self.schema = validator_for(op.params_schema)
        self.drawn = self.spoilt = 0

    def __call__(self, drawn: Any, plain: Any, valid: bool) -> Any:
        """What to send for ``drawn`` (``plain`` without a preparation), or SPOILT."""
        self.drawn += 1
        if self.prepare is None:
            return plain
        instance = self.prepare(drawn)
        if self.schema.is_valid(instance) != valid:
            self.spoilt += 1
            return Prepared.SPOILT
        return instance

    def judged_some(self) -> None:
        if self.drawn and self.spoilt == self.drawn:
            raise Untested(f"{self.op.name}: the check's preparation changed every generated input into "
                           "what it was not drawn to be (a bug of the check: nothing was judged)")


def invalid_inputs_rejected(
    ctx: CheckContext,
    op: Operation,
    call: Call,
    error: Any,
    also: Iterable[Any] = (),
    state: Callable[[], Any] | None = None,
    answer_check: AnswerCheck | None = None,
    prepare: Callable[[InvalidInstance], Any] | None = None,
    tolerated: Callable[[InvalidInstance, Reply], bool] | None = None,
    sweep: bool = True,
) -> None:
    """Each input breaking exactly one schema keyword gets ``error`` (or one of
    ``also``; with ``error`` None, any refusal) and, when ``state`` can read the
    target's state, changes nothing. ``prepare`` turns the generated instance into
    what is sent (the target's real ids, say, keeping the broken keyword broken);
    ``tolerated`` names answers the spec itself lets a server give to a break;
    ``sweep`` (on unless asked off) first sends each break of the schema's small example
    once (every keyword reached, whatever the budget), then the generated ones.

    A refusal counts only for the cause it is about (``causes.py``): one that does not
    already carry ``error`` is checked once per kind by sending the same request without
    the break; when that gets the same refusal, the refusal is set aside, and a row
    whose every refusal was set aside is blocked, never passed."""
    prepared = Prepared(op, prepare)
    control = BreakControl(ctx)

    def unbroken(bad: InvalidInstance) -> Callable[[], Reply | None]:
        def send() -> Reply | None:
            if bad.base is None:
                return None
            instance = prepare(InvalidInstance(bad.base, bad.violation, bad.base)) if prepare else bad.base
            if not prepared.schema.is_valid(instance):
                return None
            return call(instance)
        return send

    def carries(reply: Reply) -> bool:
        if error is None or reply.ok:
            return False
        codes = {catalog_entry(ctx.profile, e).code for e in (error, *also)}
        return reply.error_code in codes

    def body(bad: InvalidInstance) -> None:
        v = bad.violation
        what = f"{op.name} with an input breaking '{v.keyword}' at {v.pointer or '(root)'} ({v.description})"
        instance = prepared(bad, bad.instance, valid=False)
        if instance is Prepared.SPOILT:
            return
        if error is not None and ctx.binding_name and not ctx.binding.carries(instance):
            return  # the binding cannot carry it: its own refusal is not the operation's code
        before = state() if state else None
        reply = call(instance)
        after = state() if state else None  # before any unbroken request changes it
        if tolerated and tolerated(bad, reply):
            return
        if not reply.ok and not carries(reply) and not control.about_the_break(reply, unbroken(bad)):
            return
        if answer_check:
            answer_check(ctx, reply, what)
        if error is None:
            expect_refused(ctx, reply, what)
        else:
            expect_error(ctx, reply, error, what, also)
        if state:
            ctx.expect(after == before, f"{what}: the refused call changed the target's state",
                       kind="state_changed")

    for bad in example_breaks(op.params_schema) if sweep else []:
        body(bad)
    breaks = invalid_strategy(op.params_schema)
    ctx.for_all(breaks, body, batched=breaks)  # a batch: breaks of one drawn instance
    prepared.judged_some()
    control.done(f"{op.name} with inputs breaking one keyword")


def examples_refused(ctx: CheckContext, *, calls: Mapping[str, Callable[[], Reply]], error: Any = None,
                     state: Callable[[], Any] | None = None) -> None:
    """Family: hand-picked inputs that a rule forbids (named, each a call) all get
    ``error`` (None: any refusal) and, when ``state()`` reads the target's state,
    change nothing. The caller sets up first (a reset, a seed) and then calls this."""
    before = state() if state else None
    for what, call in calls.items():
        with ctx.subcheck(what):
            expect_refusal(ctx, call(), error, what)
    if state:
        ctx.expect(state() == before, "a refused input changed the target's state", kind="state_changed")


def result_matches(ctx: CheckContext, op: Operation, reply: Reply, what: str | None = None,
                   selected: Callable[[Any], bool] | None = None, selection: str = "") -> Any:
    """A successful answer whose result matches the operation's result schema. Where the
    result schema is a union and the request selects its branch (``selected``, true of the
    branches the request selects; ``selection`` says how it selects them), the result
    must match one of those: a result valid under another branch answers another request."""
    result = expect_result(ctx, reply, what or op.name)
    if op.result_schema is not None:
        expect_matches(ctx, op.result_schema, result, f"{op.name} result")
        if selected is not None:
            expect_branch(ctx, op.result_schema, result, selected, f"{op.name} result",
                          selection or "the request")
    return result


def expect_branch(ctx: CheckContext, schema: dict[str, Any], instance: Any, selected: Callable[[Any], bool],
                  what: str, selection: str) -> None:
    """``instance`` matches one of the branches of the schema's ``oneOf`` (or ``anyOf``)
    that ``selected`` names, not only another. A schema with no union, or no branch
    ``selected`` names, is the check's own mistake (ValueError)."""
    union = next((u for u in ("oneOf", "anyOf") if isinstance(schema.get(u), list)), None)
    if union is None:
        raise ValueError(f"{what}: its schema has no oneOf or anyOf to select a branch of")
    branches = schema[union]
    chosen = [i for i, branch in enumerate(branches) if selected(branch)]
    if not chosen:
        raise ValueError(f"{what}: no branch of its schema's {union} is what {selection} selects")
    matched = [i for i, branch in enumerate(branches) if validator_for(branch).is_valid(instance)]

    def names(indexes: list[int]) -> str:
        return ", ".join(f"/{union}/{i}" for i in indexes) or "none"

    ctx.expect(set(matched) & set(chosen),
               f"{what} {json_excerpt(instance)} matches the branch {names(matched)} of its schema, not "
               f"the branch {names(chosen)} that {selection} selects", kind="schema_mismatch")


def invalid_code_everywhere(ctx: CheckContext, *, send: Callable[[str, Any], Reply], error: Any) -> None:
    """Family: an input breaking one keyword of any operation's schema gets ``error``
    (the profile's code for a schema break, asked for by a SHOULD); ``send(operation,
    input)`` gives the answer."""
    from hypothesis import strategies as st

    ops = ctx.profile.operations

    def body(pair: tuple[str, InvalidInstance]) -> None:
        name, bad = pair
        v = bad.violation
        if ctx.binding_name and not ctx.binding.carries(bad.instance):
            return  # the binding cannot carry it: its own refusal is not the operation's
        expect_error(ctx, send(name, bad.instance), error,
                     f"{name} with an input breaking '{v.keyword}' at {v.pointer or '(root)'}")

    per_op = {n: st.tuples(st.just(n), invalid_strategy(op.params_schema)) for n, op in sorted(ops.items())}
    # a batch (campaign budget) breaks one operation's drawn input: its draw is paid once
    one_operation = st.shared(st.sampled_from(sorted(per_op)), key="invalid_code_everywhere operation")
    ctx.for_all(one_of(list(per_op.values())), body, batched=one_operation.flatmap(per_op.__getitem__))
