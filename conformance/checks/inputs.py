"""Generated inputs against an operation's schemas, over any binding: valid inputs
are accepted, inputs breaking one keyword are refused (and change nothing), and
results match their schema."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
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
from conformance.generation.invalid import (
    BreakSource,
    InvalidInstance,
    at,
    invalid_strategy,
    path_exists,
    schema_breaks,
)
from conformance.generation.strategies import strategy_for
from conformance.generation.variants import valid_batches
from conformance.jsontext import json_excerpt
from conformance.kit.check import CheckContext, CheckFailed, NotApplicable, Untested
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
    rejections: Iterable[Any] = (),
    prepare: Callable[[Any], Any] | None = None,
    extra_property: str | None = None,
    answer_check: AnswerCheck | None = None,
    in_world: Callable[[Any], Any] | None = None,
    *,
    refused: Callable[[Reply], str | None] | None = None,
    tolerated: Callable[[Any, Reply], str | None] | None = None,
    read: Callable[[Reply, bool], bool] | None = None,
    examples: Iterable[Any] = (),
    drawn: dict[str, Any] | None = None,
    batches: bool = True,
) -> None:
    """No generated schema-valid input gets one of the ``rejections`` (codes or
    names), or a server failure (HTTP 5xx). Any other refusal (a task the input names
    that the target does not hold, say) is the business of the rows about that error, its
    code and status: judging them here too made one bug many findings.
    With ``extra_property``, an input with one more unknown property must be
    accepted too where the schema does not forbid it. With ``in_world`` (the drawn
    input naming objects the target really holds; None: no such input), each draw is
    sent that way too.

    The hooks a protocol gives where its document says more: ``prepare`` makes a drawn
    input what a client may send; ``refused(reply)`` says how an answer refuses a valid
    input (None: it does not), in place of ``rejections``; ``tolerated(input, reply)``
    names an answer the document lets a server give (set aside, with the reason it
    returns); ``read(reply, in_world)`` whether an answer shows the input was read (by
    default: served). ``examples`` are sent first, whatever the budget; ``drawn`` is the
    schema inputs are drawn from (one quicker to draw that ``prepare`` completes); without
    ``batches`` a campaign draws them one at a time.

    The row passes only on inputs that were read (``causes.Served``): one whose every
    input was refused, or refused for the caller (a credential, a quota), is blocked."""
    rejected = {catalog_entry(ctx.profile, r).code for r in rejections}
    prepared = Prepared(op, prepare)
    served = Served(ctx)

    def body(drawn_input: Any) -> None:
        value = prepared(drawn_input, drawn_input, valid=True)
        variants = [] if value is Prepared.SPOILT else [(value, False)]
        if in_world is not None:
            named = in_world(drawn_input)
            if named is not None and named != value and prepared.schema.is_valid(named):
                variants.append((named, True))
        if (extra_property and isinstance(value, dict)
            and op.params_schema.get("additionalProperties", True) is not False):
            variants.append(({**value, extra_property: "allowed: the schema does not forbid it"}, False))
        for variant, in_the_world in variants:
            what = f"{op.name} with a schema-valid input"
            reply = call(variant)
            prepared.sent += 1
            if not served.judge(reply):
                continue
            reason = tolerated(variant, reply) if tolerated else None
            if reason:
                served.set_aside.append(reason)
                continue
            if answer_check:
                answer_check(ctx, reply, what)
            if refused is not None:
                problem = refused(reply)
                ctx.expect(problem is None, f"{what} {problem}", kind="rejected_valid")
            else:
                # judged, served or not: a valid input is never refused as one that breaks its
                # schema, and never makes the server fail
                ctx.expect(reply.ok or reply.error_code not in rejected,
                           f"{what} rejected: {reply.describe()}", kind="rejected_valid")
                ctx.expect(reply.status < 500, f"{what}: the server failed on a valid input: "
                           f"{reply.describe()}", kind="rejected_valid")
            served.count(reply.ok if read is None else read(reply, in_the_world))

    for example in examples:
        body(example)
    schema = op.params_schema if drawn is None else drawn
    ctx.for_all(strategy_for(schema), body, batched=valid_batches(schema) if batches else None)
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
        self.drawn = self.spoilt = self.sent = 0

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
        if self.drawn and self.spoilt == self.drawn and not self.sent:
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
    *,
    breaks: BreakSource | None = None,
    carried: Callable[[Any], bool] | None = None,
    judge: Callable[[Reply, str], None] | None = None,
) -> None:
    """Each input breaking exactly one schema keyword gets ``error`` (or one of
    ``also``; with ``error`` None, any refusal) and, when ``state`` can read the
    target's state, changes nothing. ``prepare`` turns the generated instance into
    what is sent (the target's real ids, say, keeping the broken keyword broken);
    ``tolerated`` names answers the spec itself lets a server give to a break;
    ``sweep`` (on unless asked off) first sends each break of the schema's small example
    once (every keyword reached, whatever the budget), then the generated ones.

    The hooks a protocol gives where its document says more: ``breaks`` (where the breaks
    come from: ``generation.invalid.made_breaks``, breaks of what a client may send, of the
    kind a row judges), ``carried(input)`` whether the run's binding carries a break intact
    (by default ``Binding.carries``, asked where an ``error`` is named), ``judge(reply,
    what)`` how an answer to a break is judged, in place of ``error``. A row none of whose
    breaks was sent is not applicable (over this binding, say).

    A refusal counts only for the cause it is about (``causes.py``): one that does not
    already carry ``error`` is checked once per kind by sending the same request without
    the break; when that gets the same refusal, the refusal is set aside, and a row
    whose every refusal was set aside is blocked, never passed. A finding a lossless
    coercion undoes is held back while a plainer one may show (``Weakest``)."""
    prepared = Prepared(op, prepare)
    control = BreakControl(ctx)
    weakest = Weakest(ctx)
    source = breaks or schema_breaks(op.params_schema, sweep)

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

    def travels(instance: Any) -> bool:
        if carried is not None:
            return carried(instance)
        # the binding cannot carry it: its own refusal is not the operation's code
        return error is None or not ctx.binding_name or ctx.binding.carries(instance)

    def expected(reply: Reply, what: str) -> None:
        if judge is not None:
            judge(reply, what)
        elif error is None:
            expect_refused(ctx, reply, what)
        else:
            expect_error(ctx, reply, error, what, also)

    def body(bad: InvalidInstance) -> None:
        v = bad.violation
        what = f"{op.name} with an input breaking '{v.keyword}' at {v.pointer or '(root)'} ({v.description})"
        instance = prepared(bad, bad.instance, valid=False)
        if instance is Prepared.SPOILT or not travels(instance):
            return
        prepared.sent += 1
        before = state() if state else None
        reply = call(instance)
        after = state() if state else None  # before any unbroken request changes it
        if tolerated and tolerated(bad, reply):
            return
        if not reply.ok and not carries(reply) and not control.about_the_break(reply, unbroken(bad)):
            return
        if answer_check:
            answer_check(ctx, reply, what)
        weakest.judge(bad, lambda: expected(reply, what))
        if state:
            ctx.expect(after == before, f"{what}: the refused call changed the target's state",
                       kind="state_changed")

    for bad in source.swept():
        body(bad)
    if source.drawn is not None:
        ctx.for_all(source.drawn, body, batched=source.batched)
    prepared.judged_some()
    weakest.done()
    if not prepared.sent:
        raise NotApplicable(f"no break of a {op.name} input was sent: none was made, or none travels over "
                            f"{ctx.binding_name or 'the binding'}")
    control.done(f"{op.name} with inputs breaking one keyword")


NUMBER_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def lossless(valid: Any, broken: Any) -> bool:
    """Whether ``broken`` (a value of another JSON type than ``valid``) turns into a value of
    ``valid``'s type without loss: a number or a boolean where a string is wanted (12345 read
    as "12345"), a numeric string where a number is, "true" where a boolean is. A lenient parser
    reads such a value as meant: a break, but the weakest evidence of one."""
    if isinstance(valid, str):
        return isinstance(broken, int | float) and (not isinstance(broken, float) or math.isfinite(broken))
    if isinstance(valid, bool):
        return broken in ("true", "false")
    if isinstance(valid, int | float):
        return isinstance(broken, str) and NUMBER_TEXT.fullmatch(broken) is not None
    return False


def strength(bad: InvalidInstance) -> int:
    """How plainly ``bad`` breaks its input: 0 for a type break a lossless coercion undoes
    (``lossless``), 1 for every other (a required member missing, an enum value the schema does
    not name, a bound, a value no reading turns into the type)."""
    v = bad.violation
    if v.keyword != "type" or bad.base is None:
        return 1
    path = v.pointer.split("/")[1:]
    if not (path_exists(bad.base, path) and path_exists(bad.instance, path)):
        return 1
    return 0 if lossless(at(bad.base, path), at(bad.instance, path)) else 1


@dataclass
class Weakest:
    """The findings a row holds back while it looks for a stronger one: a break only a lossless
    coercion shows (a finding quotes the strongest break the run sent), with the exchanges that
    showed it, raised only when the run shows no stronger one."""

    ctx: CheckContext
    held: list[tuple[CheckFailed, list[Any]]] = field(default_factory=list)

    def judge(self, bad: InvalidInstance, judge: Callable[[], None]) -> None:
        try:
            judge()
        except CheckFailed as exc:
            if strength(bad):
                raise
            self.held.append((exc, list(self.ctx.http.log)))

    def done(self) -> None:
        if not self.held:
            return
        exc, log = self.held[0]
        self.ctx.http.log[:] = log
        raise CheckFailed(f"{exc} (the only breaks this run saw taken are type breaks a lossless coercion "
                          f"undoes: {len(self.held)} of them)", exc.kind, exc.statement, **exc.typed)


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
