"""The campaign budget draws its inputs in batches (conformance/budgets.py): each
generated example is a list of up to ``batch`` inputs, each judged on its own; a failing
batch shrinks to the one input that fails, and the same seed draws the same batches (a
case replays). The other budgets draw one input per example."""

from __future__ import annotations

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


def examples_of(ctx: CheckContext, body_fails_at: int | None = None,
                seen: list[list[int]] | None = None) -> list[list[int]]:
    """The inputs the body saw, grouped by generated example (into ``seen``)."""
    seen = [] if seen is None else seen
    begin = ctx.begin_example

    def begin_example() -> None:
        seen.append([])
        begin()

    ctx.begin_example = begin_example  # type: ignore[method-assign]

    def body(value: int) -> None:
        seen[-1].append(value)
        ctx.expect(body_fails_at is None or value < body_fails_at, f"{value} is too large")

    try:
        ctx.for_all(st.integers(0, 10_000), body, examples=50)
    finally:
        ctx.run.http.close()
    return seen


def test_a_campaign_judges_several_inputs_per_example_the_others_one():
    assert BUDGETS["campaign"].batch > 1 and all(
        b.batch == 1 for name, b in BUDGETS.items() if name != "campaign")
    batched = examples_of(context("campaign"))
    assert len(batched) <= 50 and max(len(e) for e in batched) > 1
    assert sum(len(e) for e in batched) > 1.5 * len(batched)
    assert all(len(e) == 1 for e in examples_of(context("deep")))


def test_a_failing_batch_shrinks_to_the_one_input_that_fails_and_the_seed_draws_it_again():
    blobs = []
    for _ in range(2):
        ctx, seen = context("campaign"), []
        with pytest.raises(CheckFailed, match="9900 is too large"):
            examples_of(ctx, body_fails_at=9900, seen=seen)
        assert seen[-1] == [9900]  # the failing example, run last: the one input, shrunk
        blobs.append(ctx.blob)
    assert blobs[0] is not None and blobs[0] == blobs[1]  # the same seed: the same failing example
