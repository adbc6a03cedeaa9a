"""The generated-inputs family's hooks (checks/inputs.py, generation/invalid.py): what a
protocol gives where its document says more than the schema, as the a2a rows use them."""

from __future__ import annotations

from typing import Any, cast

import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from conformance.checks.inputs import Weakest, invalid_inputs_rejected, strength, valid_inputs_accepted
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance, Violation, made_breaks, schema_examples
from conformance.kit.check import Blocked, CheckContext, CheckFailed, NotApplicable
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.transport.binding import Reply
from conformance.transport.http import HttpReply

SCHEMA = {"type": "object", "required": ["id"], "additionalProperties": False,
          "properties": {"id": {"type": "string"}, "n": {"type": "integer", "minimum": 0},
                         "x": {"type": "integer"}}}


def made(value: Any) -> Any:
    return {**value, "id": "made"} if isinstance(value, dict) else value


def extra(base: Any) -> list[InvalidInstance]:
    broken = {**base, "x": "two"}
    return [InvalidInstance(broken, Violation("/x", "extra", "one the keywords do not make"), base)]


def kept(bad: InvalidInstance) -> bool:
    return bad.violation.keyword != "required"


def test_made_breaks_break_what_the_check_makes_of_each_instance():
    """The sweep and the draws break made instances (``make``), with ``more``'s breaks, and
    only the ones ``keep`` takes; without ``generated`` nothing is drawn."""
    source = made_breaks(SCHEMA, make=made, keep=kept, more=extra)
    swept = source.swept()
    assert swept and all(b.base["id"] == "made" and kept(b) for b in swept)
    assert any(b.violation.keyword == "extra" for b in swept)
    own = [b for b in swept if b.violation.keyword != "extra"]
    assert own and all(not validator_for(SCHEMA).is_valid(b.instance) for b in own)
    assert made_breaks(SCHEMA, make=made, generated=False).drawn is None
    assert len(schema_examples(SCHEMA)) == 2 and schema_examples({"type": "string"}) == []

    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(source.drawn)
    def drawn(bad: InvalidInstance) -> None:
        assert bad.base["id"] == "made" and kept(bad)

    drawn()


@pytest.fixture()
def ctx():
    profile = load_profile("bindu")
    run = open_run(profile, "reference", budget="quick", seed=1)
    yield CheckContext(run, next(r for r in profile.requirements if r.id == "BINDU-PARAMS-VALID-TASKS-GET"))
    run.http.close()


def answer(ok: bool, code: Any = None, status: int = 200) -> Reply:
    http = HttpReply(status, httpx.Headers({}), b"{}", cast(Any, None))  # no exchange: nothing was sent
    return Reply("jsonrpc", http, ok=ok, error_code=code, error_message="" if ok else "refused")


def schema_judged(value: Any) -> Reply:
    """A server that serves what the schema takes and refuses the rest with -32602."""
    return answer(True) if validator_for(SCHEMA).is_valid(value) else answer(False, -32602, 400)


def operation(ctx: CheckContext) -> Any:
    op = ctx.profile.operations["tasks/get"]
    return type(op)(**{**op.__dict__, "params_schema": SCHEMA})


def test_valid_hooks_refused_tolerated_read_examples_and_the_world(ctx):
    op, sent, seen = operation(ctx), [], []

    def call(value: Any) -> Reply:
        sent.append(value)
        return schema_judged(value)

    def read(reply: Reply, in_world: bool) -> bool:
        seen.append(in_world)
        return True

    valid_inputs_accepted(ctx, op, call, examples=[{"id": "first"}], read=read,
                          in_world=lambda drawn: {**drawn, "id": "held"})
    assert sent[0] == {"id": "first"} and sent[1]["id"] == "held"  # the example first, then its world form
    assert True in seen and False in seen  # read is told which input named the world
    with pytest.raises(CheckFailed, match="not what the document allows"):
        valid_inputs_accepted(ctx, op, call, refused=lambda reply: "not what the document allows")
    with pytest.raises(Blocked, match="tolerated here"):  # every answer set aside: nothing was read
        valid_inputs_accepted(ctx, op, call, tolerated=lambda value, reply: "tolerated here")
    with pytest.raises(Blocked, match="not shown read"):
        valid_inputs_accepted(ctx, op, call, read=lambda reply, in_world: False)


def test_invalid_hooks_carried_and_judge(ctx):
    op, sent, judged = operation(ctx), [], []

    def call(value: Any) -> Reply:
        sent.append(value)
        return schema_judged(value)

    source = made_breaks(SCHEMA, make=made, keep=kept, more=extra, generated=False)
    with pytest.raises(NotApplicable, match="none travels"):  # the binding carries none of them
        invalid_inputs_rejected(ctx, op, call, None, breaks=source, carried=lambda value: False)
    assert sent == []
    invalid_inputs_rejected(ctx, op, call, None, breaks=source, carried=lambda value: True,
                            judge=lambda reply, what: judged.append((reply.ok, what)))
    assert len(judged) == len(source.swept()) and all(b.instance in sent for b in source.swept())
    with pytest.raises(CheckFailed, match="judged wrong"):
        invalid_inputs_rejected(ctx, op, call, None, breaks=source,
                                judge=lambda reply, what: ctx.expect(False, "judged wrong"))


def test_a_finding_a_lossless_coercion_undoes_is_held_back(ctx):
    """A type break a lenient parser reads as meant (12345 for "12345") is the weakest evidence:
    its finding waits for a plainer one and is raised at the end only when none shows."""
    weak = InvalidInstance({"id": 5}, Violation("/id", "type", "a number"), {"id": "x"})
    plain = InvalidInstance({"id": "x", "n": -1}, Violation("/n", "minimum", "below"), {"id": "x", "n": 0})
    assert (strength(weak), strength(plain)) == (0, 1)

    def fails() -> None:
        ctx.expect(False, "accepted")

    held = Weakest(ctx)
    held.judge(weak, fails)  # held, not raised
    with pytest.raises(CheckFailed, match="accepted"):
        held.judge(plain, fails)
    with pytest.raises(CheckFailed, match="lossless coercion"):
        held.done()
