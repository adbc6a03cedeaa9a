"""The budgets of a run: how many generated examples, state-machine runs and steps a
requirement gets, and the default wall-clock limit of the whole run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    name: str
    examples: int  # examples per generated property
    machines: int  # state-machine runs
    steps: int  # steps per state-machine run
    max_time: float  # default wall-clock limit of a whole run, seconds (--max-time)
    # inputs per generated example: drawing one schema-valid input costs more CPU than
    # sending and judging it (5-9 ms for a Canon request), so a campaign judges ``batch``
    # picks per example, drawn where the check offers it from one drawn instance and its
    # valid variants or breaks (CheckContext.for_all, generation/variants.py)
    batch: int = 1


BUDGETS = {
    "quick": Budget("quick", examples=8, machines=5, steps=12, max_time=15 * 60),
    "standard": Budget("standard", examples=40, machines=20, steps=25, max_time=60 * 60),
    "deep": Budget("deep", examples=200, machines=80, steps=40, max_time=6 * 3600),
    # `conformance fuzz`'s rounds (its cases name it, so a replay draws the same batches)
    "campaign": Budget("campaign", examples=200, machines=80, steps=40, max_time=6 * 3600, batch=16),
}


