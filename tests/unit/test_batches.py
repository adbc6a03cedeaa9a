"""The campaign budget draws its inputs in batches (conformance/budgets.py): each
generated example is ``batch`` picks, each judged on its own (a pick equal to an earlier
one of its example is not judged twice); a failing batch shrinks to the input that fails,
after at most the one the other picks shrank to, and the same seed draws the same batches
(a case replays). The other budgets draw one input per example."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st

from conformance.budgets import BUDGETS
from conformance.check import CheckContext, CheckFailed
from conformance.launch import open_run
from conformance.profiles import load_profile


def context(budget: str, seed: int = 7) -> CheckContext:
    profile = load_profile("bindu")
    run = open_run(profile, "reference", budget=budget, seed=seed)
    return CheckContext(run, profile.requirements[0])


def grouped(ctx: CheckContext, strategy: Any, *, batched: Any = None, examples: int = 50,
            judge: Any = None, seen: list[list[Any]] | None = None) -> list[list[Any]]:
    """The inputs ``for_all`` gave its body, grouped by generated example (into ``seen``);
    ``judge(ctx, value)`` may fail one."""
    seen = [] if seen is None else seen
    begin = ctx.begin_example

    def begin_example() -> None:
        seen.append([])
        begin()

    ctx.begin_example = begin_example  # type: ignore[method-assign]

    def body(value: Any) -> None:
        seen[-1].append(value)
        if judge is not None:
            judge(ctx, value)

    try:
        ctx.for_all(strategy, body, examples=examples, batched=batched)
    finally:
        ctx.run.http.close()
    return seen


NUMBERS = st.integers(0, 10_000)


def examples_of(ctx: CheckContext, body_fails_at: int | None = None,
                seen: list[list[int]] | None = None, batched: bool = True) -> list[list[int]]:
    def judge(ctx: CheckContext, value: int) -> None:
        ctx.expect(body_fails_at is None or value < body_fails_at, f"{value} is too large")

    return grouped(ctx, NUMBERS, batched=NUMBERS if batched else None, judge=judge, seen=seen)


def test_a_campaign_judges_several_inputs_per_example_the_others_one():
    assert BUDGETS["campaign"].batch > 1 and all(
        b.batch == 1 for name, b in BUDGETS.items() if name != "campaign")
    batched = examples_of(context("campaign"))
    assert len(batched) <= 50 and max(len(e) for e in batched) > 1
    assert sum(len(e) for e in batched) > 4 * len(batched)
    assert all(len(e) == 1 for e in examples_of(context("deep")))
    # a check that draws its inputs one by one has nothing to share: no batch
    assert all(len(e) == 1 for e in examples_of(context("campaign"), batched=False))


def test_a_failing_batch_shrinks_to_the_one_input_that_fails_and_the_seed_draws_it_again():
    blobs = []
    for _ in range(2):
        ctx, seen = context("campaign"), []
        with pytest.raises(CheckFailed, match="9900 is too large"):
            examples_of(ctx, body_fails_at=9900, seen=seen)
        assert seen[-1] in ([9900], [0, 9900])  # the failing example, run last: the input, shrunk
        blobs.append(ctx.blob)
    assert blobs[0] is not None and blobs[0] == blobs[1]  # the same seed: the same failing example


def test_a_batch_of_breaks_shares_one_drawn_instance():
    """Drawing a valid instance and finding its breaks is most of an invalid input's cost:
    within one example every break is of the same instance (generation/invalid.py)."""
    from conformance.generation.invalid import InvalidInstance, invalid_strategy

    ctx = context("campaign")
    breaks = invalid_strategy(ctx.profile.operations["message/send"].params_schema)
    examples: list[list[InvalidInstance]] = grouped(ctx, breaks, batched=breaks, examples=20)
    assert any(len(e) > 1 for e in examples)
    for example in examples:
        assert len({repr(bad.base) for bad in example}) == 1
    assert len({repr(bad.instance) for e in examples for bad in e}) > len(examples)


def test_valid_variants_are_valid_distinct_and_the_same_for_the_same_instance():
    from conformance.documents.schemas import validator_for
    from conformance.generation.invalid import _example
    from conformance.generation.variants import variants

    for name in ("canon-verbs", "bindu"):
        varied = 0
        for op in load_profile(name).operations.values():
            instance = _example(op.params_schema)
            if not isinstance(instance, dict) or not instance:
                continue
            found = variants(op.params_schema, instance)
            assert found[0] == instance, op.name
            assert all(validator_for(op.params_schema).is_valid(v) for v in found), op.name
            assert len({repr(v) for v in found}) == len(found)
            assert found == variants(op.params_schema, instance)
            varied += len(found) > 1
        assert varied >= 3, name  # (a lone required id has no valid variant: its batch is the draw)


def test_a_batch_of_valid_inputs_is_one_drawn_instance_and_its_variants(monkeypatch):
    from conformance.documents.schemas import validator_for
    from conformance.generation import variants as module
    from conformance.generation.strategies import strategy_for

    drawn: list[list[str]] = []  # per draw of an instance: its variants
    real = module.variants
    monkeypatch.setattr(module, "variants",
                        lambda schema, instance: drawn.append([repr(v) for v in real(schema, instance)])
                        or real(schema, instance))
    ctx = context("campaign")
    op = ctx.profile.operations["message/send"]
    examples = grouped(ctx, strategy_for(op.params_schema), batched=module.valid_batches(op.params_schema),
                       examples=20)
    judge = validator_for(op.params_schema)
    assert all(judge.is_valid(v) for e in examples for v in e)
    assert any(len({repr(v) for v in e}) > 1 for e in examples)
    assert len(drawn) <= len(examples) < sum(len(e) for e in examples)  # one instance drawn per example
    pools = [set(pool) for pool in drawn]
    assert all(any({repr(v) for v in e} <= pool for pool in pools) for e in examples)
