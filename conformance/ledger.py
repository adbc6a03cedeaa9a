"""Where a run's CPU goes: drawing inputs, sending them, judging answers, recording them.

Each phase is charged by a ``with LEDGER.charge(bucket):`` around the code that does it;
a phase inside another is charged to the inner one only (the outer pays the rest). The
time is the thread's own CPU time, so a thread waiting for an answer pays nothing, and the
reference answering in process is its own bucket (it is the target's cost, not the kit's).
``conformance fuzz`` writes the totals to fuzz.json; bench/bench_speed.py prints them per
exchange."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

BUCKETS = ("generation", "transport", "judging", "recording", "target in process")


class Ledger:
    def __init__(self) -> None:
        self.spent = dict.fromkeys(BUCKETS, 0.0)  # CPU seconds by bucket
        self._local = threading.local()
        self._lock = threading.Lock()

    @contextmanager
    def charge(self, bucket: str) -> Iterator[None]:
        stack: list[float] = self._local.__dict__.setdefault("stack", [])
        started = time.thread_time()
        stack.append(0.0)  # CPU time charged to phases inside this one
        try:
            yield
        finally:
            elapsed = time.thread_time() - started
            inner = stack.pop()
            with self._lock:
                self.spent[bucket] += elapsed - inner
            if stack:
                stack[-1] += elapsed

    def milliseconds(self) -> dict[str, float]:
        with self._lock:
            return {bucket: round(seconds * 1000, 1) for bucket, seconds in self.spent.items()}


LEDGER = Ledger()
