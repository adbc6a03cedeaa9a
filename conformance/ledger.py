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

BUCKETS = ("generation", "transport", "judging", "recording", "target in process")


class Ledger:
    def __init__(self) -> None:
        self.spent = dict.fromkeys(BUCKETS, 0.0)  # CPU seconds by bucket
        self._local = threading.local()
        self._lock = threading.Lock()

    def charge(self, bucket: str) -> _Charge:
        """``with LEDGER.charge(bucket):`` (a class, not a generator: a run enters some
        200,000 of them, and a generator's context manager cost twice as much)."""
        return _Charge(self, bucket)

    def milliseconds(self) -> dict[str, float]:
        with self._lock:
            return {bucket: round(seconds * 1000, 1) for bucket, seconds in self.spent.items()}


class _Charge:
    __slots__ = ("ledger", "bucket", "stack", "started")

    def __init__(self, ledger: Ledger, bucket: str) -> None:
        self.ledger, self.bucket = ledger, bucket

    def __enter__(self) -> None:
        self.stack: list[float] = self.ledger._local.__dict__.setdefault("stack", [])
        self.started = time.thread_time()
        self.stack.append(0.0)  # CPU time charged to phases inside this one

    def __exit__(self, *exc: object) -> None:
        elapsed = time.thread_time() - self.started
        inner = self.stack.pop()
        with self.ledger._lock:
            self.ledger.spent[self.bucket] += elapsed - inner
        if self.stack:
            self.stack[-1] += elapsed


LEDGER = Ledger()
