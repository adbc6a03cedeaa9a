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
    # inputs per generated example: hypothesis's own work for one example (its choice tree,
    # the database, the engine's bookkeeping) is most of the cost of a small input, so a
    # campaign draws a list of up to ``batch`` inputs per example and judges each one
    batch: int = 1


BUDGETS = {
    "quick": Budget("quick", examples=8, machines=5, steps=12, max_time=15 * 60),
    "standard": Budget("standard", examples=40, machines=20, steps=25, max_time=60 * 60),
    "deep": Budget("deep", examples=200, machines=80, steps=40, max_time=6 * 3600),
    # `conformance fuzz`'s rounds (its cases name it, so a replay draws the same batches)
    "campaign": Budget("campaign", examples=200, machines=80, steps=40, max_time=6 * 3600, batch=8),
}


