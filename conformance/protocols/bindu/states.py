"""The task states the Bindu document names (TaskStatus.state and its "### State machine"
list): which are terminal, which the agent moves on by itself. Read by the client, the
rows and the state machine alike."""

from __future__ import annotations

import re
from typing import Any

from conformance.documents.schemas import resolve_pointer

STATE = "/components/schemas/TaskStatus/properties/state"


def task_states(spec: dict[str, Any]) -> list[str]:
    return list(resolve_pointer(spec, STATE)["enum"])


def terminal_states(spec: dict[str, Any]) -> frozenset[str]:
    """The states the spec calls terminal, read from TaskStatus.state's description."""
    text = resolve_pointer(spec, STATE)["description"]
    named = re.findall(r"`([a-z-]+)`", text.split("Terminal", 1)[1])
    return frozenset(s for s in named if s in task_states(spec))


def state_notes(spec: dict[str, Any]) -> dict[str, str]:
    """Each state of the catalog's "### State machine" list with its note, in the spec's order
    ("- `submitted` — queued, not yet picked up")."""
    text = resolve_pointer(spec, "/info/description").split("### State machine", 1)[-1]
    notes = dict(re.findall(r"^- `([a-z-]+)` — (.+)$", text, flags=re.M))
    return {s: notes[s] for s in task_states(spec) if s in notes}


def agent_moves(spec: dict[str, Any]) -> tuple[str, ...]:
    """The states in which the agent holds the task and moves it on by itself (queued,
    processing): the non-terminal ones whose note does not say it is paused for the user."""
    terminal = terminal_states(spec)
    return tuple(s for s, note in state_notes(spec).items()
                 if s not in terminal and not note.startswith("paused"))


def moves_by_itself(spec: dict[str, Any], before: str, after: str) -> bool:
    """Whether the document lets a task go from ``before`` to ``after`` without a request of
    the caller: only from a state the agent holds, forward (a task picked up is never queued
    again), and never to a state only the user reaches (``canceled``: "user terminated via
    `tasks/cancel`")."""
    moving = agent_moves(spec)
    if before not in moving or after == before:
        return False
    if after in moving:
        return moving.index(after) > moving.index(before)
    return after in state_notes(spec) and "tasks/cancel" not in state_notes(spec)[after]
