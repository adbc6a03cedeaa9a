"""The campaign budget draws its inputs in batches (conformance/budgets.py): each
generated example is ``batch`` picks, each judged on its own (distinct while the pool
lasts; a pick equal to an earlier one of its example is not judged twice); a failing batch
shrinks to the input that fails, after at most the one the other picks shrank to, its case
holds that input's exchanges, and the same seed draws the same batches (a case replays).
The other budgets draw one input per example."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st

from conformance.budgets import BUDGETS
from conformance.kit.check import CheckContext, CheckFailed
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile


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


def test_the_picks_of_a_batch_are_distinct_until_its_pool_runs_out(monkeypatch):
    """A batch of 16 picks among one drawn instance's breaks (or its valid variants) takes
    each at most once while others are left: a batch of 16 random indexes repeated some
    (six distinct Bindu breaks per batch, of 16 picks), and a repeat is not judged again."""
    from hypothesis import given, settings

    from conformance.generation import variants as module
    from conformance.generation.invalid import Breaks, invalid_strategy

    pools: list[list[Any]] = []
    real = module.variants
    monkeypatch.setattr(module, "variants", lambda schema, instance: pools.append(real(schema, instance))
                        or pools[-1])
    schema = load_profile("bindu").operations["message/send"].params_schema
    batch = BUDGETS["campaign"].batch
    sizes = []

    @settings(max_examples=15, database=None, deadline=None)
    @given(st.lists(invalid_strategy(schema), min_size=batch, max_size=batch),
           st.lists(module.valid_batches(schema), min_size=batch, max_size=batch))
    def picks(bad: list[Any], good: list[Any]) -> None:
        fresh = Breaks(schema, bad[0].base)
        verified = sum(fresh.at(i) is not None for i in range(len(fresh)))
        assert len({id(b) for b in bad}) == min(batch, verified)
        assert all(g in pools[-1] for g in good)  # one pool per example, drawn last
        assert len({id(g) for g in good}) == min(batch, len(pools[-1]))
        sizes.append(len({id(b) for b in bad}))

    picks()
    assert max(sizes) == batch  # an instance with more breaks than a batch gives a full one


def test_a_case_of_a_batch_holds_the_exchanges_of_its_failing_pick_only():
    ctx = context("campaign")

    def judge(ctx: CheckContext, value: int) -> None:
        assert ctx.http.log == [], "an earlier pick's exchanges are still in the log"
        ctx.http.request("GET", "/health")
        ctx.expect(value < 9900, f"{value} is too large")

    with pytest.raises(CheckFailed, match="is too large"):
        grouped(ctx, NUMBERS, batched=NUMBERS, judge=judge)
    assert len(ctx.http.log) == 1  # the failing pick's one exchange


def test_a_later_round_adds_nothing_to_hypothesis_s_strategy_cache():
    """A campaign builds each check's strategies again every round. Built anew, each was a
    new entry in hypothesis's (bounded) strategy cache, and so was the batch of it, which
    churned the cache and grew a campaign's memory; built once per schema, a later round
    finds them all (and the same schema's text, in another object, the same strategy)."""
    import copy

    from hypothesis.strategies._internal.utils import _STRATEGY_CACHE

    from conformance.generation.invalid import invalid_strategy
    from conformance.generation.variants import valid_batches

    schema = load_profile("bindu").operations["message/send"].params_schema
    assert invalid_strategy(schema) is invalid_strategy(copy.deepcopy(schema))
    assert valid_batches(schema) is valid_batches(copy.deepcopy(schema))

    def a_round() -> None:
        for make in (invalid_strategy, valid_batches):
            drawn = make(copy.deepcopy(schema))
            grouped(context("campaign"), drawn, batched=drawn, examples=5)

    a_round()
    before = set(_STRATEGY_CACHE)  # keys, not the count: the cache may be full already
    a_round()
    assert set(_STRATEGY_CACHE) - before == set()
