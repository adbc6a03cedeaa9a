"""Running requirements in parallel processes with pytest-xdist.

Each worker opens its own run (its own in-process reference, or its own client of a
live target) and runs the requirements xdist gives it; the verdict of each travels
back to the controller on its test report, and the controller alone writes
summary.json, the report and the exit code. Against a live target, the requirements
the profile lists under ``alone:`` (they change state other checks read: a control
script, a global reset, the caller's task count) run after every other requirement
has finished, one after another on one worker.
"""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest
from xdist.scheduler import LoadScheduling


def distributed(config: pytest.Config) -> bool:
    """This process is xdist's controller of a distributed run."""
    return bool(getattr(config.option, "numprocesses", None)) \
        and getattr(config.option, "dist", "no") != "no" \
        and not is_worker(config)


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def runs_alone(patterns: list[str], requirement_id: str) -> bool:
    """Whether the profile's ``alone:`` list (ids or glob patterns) names the requirement."""
    return any(fnmatch.fnmatchcase(requirement_id, p) for p in patterns)


class AloneLast(LoadScheduling):
    """xdist's load scheduling, holding back the items ``alone`` names until every
    other item has finished; then one worker runs them all and the others stop.

    A worker runs its last item only once it is sent another or told to shut down,
    so the held items go to one worker (``keeper``) that is kept without a shutdown
    until the others have finished (``remove_node``)."""

    collection: list[str] | None
    maxschedchunk: int | None

    def __init__(self, config: pytest.Config, log: Any = None, alone: Any = None) -> None:
        super().__init__(config, log)
        self.alone = alone or (lambda nodeid: False)
        self.held: list[int] = []
        self.keeper: Any = None

    @property
    def tests_finished(self) -> bool:
        return not self.held and bool(super().tests_finished)

    @property
    def has_pending(self) -> bool:
        return bool(self.held) or bool(super().has_pending)

    def schedule(self) -> None:
        if self.collection is not None:  # a node joined later: give it work like the others
            for node in self.nodes:
                self.check_schedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        collection: list[str] = next(iter(self.node2collection.values()))
        self.collection = collection
        self.held = [i for i, nodeid in enumerate(collection) if self.alone(nodeid)]
        self.pending[:] = [i for i, nodeid in enumerate(collection) if not self.alone(nodeid)]
        most: int = self.maxschedchunk or len(collection)
        self.maxschedchunk = most
        chunk = max(2, min(len(self.pending) // max(len(self.nodes), 1) // 4, most))
        for node in self.nodes:
            self._send_tests(node, chunk)
        for node in self.nodes:
            self.check_schedule(node)

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        if node.shutting_down:
            return
        if self.pending:
            super().check_schedule(node, duration)
            return
        if not self.held:
            node.shutdown()
            return
        if self.keeper is None:
            self.keeper = node
        if node is not self.keeper:
            node.shutdown()  # it runs its last item, then stops
        self._release_if_done()

    def remove_node(self, node: Any) -> str | None:
        crashed = super().remove_node(node)
        if node is self.keeper:
            self.keeper = None
        self._release_if_done()
        return crashed

    def _release_if_done(self) -> None:
        """Once only the keeper is left, send it every held item and let it stop."""
        if not self.held or self.pending:
            return
        if self.keeper is None or self.keeper not in self.node2pending:
            live = [n for n in self.node2pending if not n.shutting_down]
            if not live:
                return
            self.keeper = live[0]
        others = [n for n in self.node2pending if n is not self.keeper]
        if others:
            for other in others:
                if not other.shutting_down:
                    other.shutdown()
            return
        held, self.held = self.held, []
        self.pending[:] = held
        super()._send_tests(self.keeper, len(held))
        self.keeper.shutdown()
