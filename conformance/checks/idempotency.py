"""Replays: families a check calls saying how to send with a key (an Idempotency-Key
header, a messageId, ...) and how to count the effects; the family checks that a replay returns the original
answer once, that a key reused for another request is refused, or that a protocol without deduplication really
creates a new object each time."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from conformance.checks.expect import expect_refusal, expect_result
from conformance.kit.check import CheckContext
from conformance.transport.binding import Reply

Send = Callable[[str, str], Reply]  # (key, which body: "a" or "b") -> answer
T = TypeVar("T")


def replay_once(ctx: CheckContext, *, send: Send, effects: Callable[[], int], what: str) -> None:
    """The same key with the same body answers the original result and has one effect."""
    key = uuid.uuid4().hex
    before = effects()
    first = expect_result(ctx, send(key, "a"), what)
    again = expect_result(ctx, send(key, "a"), f"the identical {what} again")
    ctx.expect(again == first,
               f"an identical replay of {what} must return the original result: {first} vs {again}",
               kind="state_changed")
    after = effects()
    ctx.expect(after == before + 1,
               f"an identical replay of {what} had {after - before} effects, expected exactly 1",
               kind="state_changed")


def at_once(copies: int, call: Callable[[], T]) -> list[T]:
    """``call`` made ``copies`` times at once: each in its own thread, all released
    together (a pool could otherwise hand the next call to a thread whose first call
    had already finished, and the calls would not overlap at all)."""
    start = threading.Barrier(copies)

    def one(_: int) -> T:
        start.wait()
        return call()

    with ThreadPoolExecutor(max_workers=copies) as pool:
        return list(pool.map(one, range(copies)))


def replay_concurrent(ctx: CheckContext, *, send: Send, effects: Callable[[], int], what: str,
                      copies: int = 4) -> None:
    """The same key and body sent ``copies`` times at once: every answer is the
    same result, and there is one effect."""
    key = uuid.uuid4().hex
    before = effects()
    replies = at_once(copies, lambda: send(key, "a"))
    results = [expect_result(ctx, reply, f"{what} ({copies} copies at once)") for reply in replies]
    ctx.expect(all(r == results[0] for r in results),
               f"{copies} identical {what} at once got different answers: {results}", kind="state_changed")
    after = effects()
    ctx.expect(after == before + 1,
               f"{copies} identical {what} at once had {after - before} effects, expected exactly 1",
               kind="state_changed")


def conflict_refused(ctx: CheckContext, *, sends: Mapping[str, Send], error: Any) -> None:
    """The same key with another body gets ``error`` (any refusal when None), for
    each operation named."""
    for what, send in sends.items():
        with ctx.subcheck(what):
            key = uuid.uuid4().hex
            expect_result(ctx, send(key, "a"), what)
            expect_refusal(ctx, send(key, "b"), error, f"{what} reusing its key with another body")


def never_deduplicated(ctx: CheckContext, *, send: Callable[[], Reply], identity: Callable[[Any], Any],
                       what: str) -> None:
    """Where the spec says a repeated request is a new one: two identical requests
    create two objects."""
    first = identity(expect_result(ctx, send(), what))
    second = identity(expect_result(ctx, send(), f"the same {what} again"))
    ctx.expect(first != second,
               f"a repeated {what} returned the same object {first!r}; the spec says it creates a new one",
               kind="state_changed")


def single_use(ctx: CheckContext, *, sends: Mapping[str, Callable[[str], Reply]], error: Any = None) -> None:
    """A single-use id: the first use succeeds, any reuse gets ``error`` (None: any refusal)."""
    for what, send in sends.items():
        with ctx.subcheck(what):
            ident = uuid.uuid4().hex
            expect_result(ctx, send(ident), what)
            expect_refusal(ctx, send(ident), error, f"{what} reusing its id")
