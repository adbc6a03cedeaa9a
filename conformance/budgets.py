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


BUDGETS = {
    "quick": Budget("quick", examples=8, machines=5, steps=12, max_time=15 * 60),
    "standard": Budget("standard", examples=40, machines=20, steps=25, max_time=60 * 60),
    "deep": Budget("deep", examples=200, machines=80, steps=40, max_time=6 * 3600),
}


