"""``first_step``: hypothesis's ``@initialize`` without a new strategy per example."""

from __future__ import annotations

import contextlib
from collections import Counter
from types import SimpleNamespace

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test

from conformance.kit.machine import ProfileMachine, first_step


def test_first_steps_run_once_per_example_after_setup_and_before_any_rule():
    seen: list[tuple[str, object]] = []

    class Machine(ProfileMachine):
        def setup(self) -> None:
            seen.append(("setup", None))
            self.started: int | None = None

        @first_step(start=st.integers(0, 5))
        def begin(self, start: int) -> None:
            assert self.started is None, "a first step ran twice in one example"
            self.started = start
            seen.append(("first", start))

        @rule()
        def step(self) -> None:
            assert self.started is not None, "a rule ran before the first step"
            seen.append(("rule", self.started))

    ctx = SimpleNamespace(machine_stats=Counter(), begin_example=lambda: None,
                          verdict_ends_example=contextlib.nullcontext)
    run_state_machine_as_test(lambda: Machine(ctx=ctx),  # type: ignore[call-arg,arg-type]
                              settings=settings(max_examples=20, stateful_step_count=3, database=None))
    examples = [i for i, (what, _) in enumerate(seen) if what == "setup"]
    assert len(examples) >= 10
    for at in examples:
        assert seen[at + 1][0] == "first", seen[at:at + 3]
    starts = {start for what, start in seen if what == "first"}
    assert starts <= set(range(6))
    assert len(starts) > 1, "the first step's argument is not drawn"
    assert ctx.machine_stats["rule step"] > 0


def test_a_machine_example_runs_the_budget_s_steps_after_its_first_steps():
    """The first steps take none of the budget's steps (hypothesis counted an
    ``@initialize`` rule as one). Counted, the rules of Bindu's lifecycle caught the fault
    ``feedback_changes_state`` at the quick budget at 37 of 40 seeds against 40 of 40."""
    from conformance.kit.check import CheckContext
    from conformance.run.launch import open_run
    from conformance.run.profiles import load_profile

    per_example: list[int] = []

    class Machine(ProfileMachine):
        def setup(self) -> None:
            per_example.append(0)

        @first_step()
        def begin(self) -> None:
            pass

        @rule()
        def step(self) -> None:
            per_example[-1] += 1

    profile = load_profile("bindu")
    run = open_run(profile, "reference", budget="quick", seed=1)
    try:
        CheckContext(run, profile.requirements[0]).run_machine(Machine)
    finally:
        run.http.close()
    assert per_example and max(per_example) == run.budget.steps, per_example
