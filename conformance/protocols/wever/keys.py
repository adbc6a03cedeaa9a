"""Wever Connect's request keys of send_task (the Idempotency-Key): required, a replay
with the same key and body returns the same task once (serially and at once), another
body under the same key is refused. The keys' tombstones are lifetimes.py's."""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

from conformance.checks import idempotency
from conformance.checks.expect import refused_as
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, code, requirement
from conformance.kit.faults import replaces
from conformance.protocols.wever.client import RECIPIENT, SENDER, WeverClient, fresh_key
from conformance.protocols.wever.reference import Call, WeverReference
from conformance.protocols.wever.shared_faults import CODES

CONCURRENT_SENDS = 50  # identical send_task calls at once


@requirement(id="WEVER-SEND-KEY-REQUIRED", level="MUST",
             title="send_task without an Idempotency-Key is refused and delivers nothing",
             source=at("/actions/send_task/description"), code="IDEMPOTENCY_KEY_REQUIRED", code_faults=CODES,
             faults=["key_optional"])
def check_key_required(ctx: CheckContext, strict: bool = False) -> None:
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    reply = c.via(c.binding, "send_task", c.task_body(data=data), c.label(SENDER), None)
    refused_as(ctx, reply, "IDEMPOTENCY_KEY_REQUIRED", "send_task without an Idempotency-Key", strict)
    watch.nothing_delivered(marker, "send_task without a key")


@check_key_required.fault
def key_optional(ref: WeverReference) -> None:
    """send_task without an Idempotency-Key is served (under a key of its own)."""
    @replaces(ref.require_key)
    def require_key(original: Any, call: Call) -> str:
        return call.key or "generated-" + secrets.token_hex(16)


@requirement(id="WEVER-SEND-REPLAY", level="MUST",
             title="send_task with the same Idempotency-Key and body returns the same task, once",
             source=at("/flow/5"), faults=["replay_duplicates"])
def check_send_replay(ctx: CheckContext) -> None:
    """send_task with the same Idempotency-Key and body names the same task, and the
    inbox holds one task carrying its marker (the check counts only its own)."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    key = fresh_key()
    first = c.task_of(c.send(SENDER, RECIPIENT, data=data, key=key), "send_task")
    again = c.task_of(c.send(SENDER, RECIPIENT, data=data, key=key), "the identical send_task again")
    ctx.expect(again.id == first.id,
               f"an identical replay of send_task answered task {again.id}, the first answered {first.id}",
               kind="state_changed")
    carried = watch.carrying(marker)
    ctx.expect(carried == {first.id}, f"after an identical replay the inbox holds {len(carried)} tasks with "
               f"its data ({sorted(carried)}), expected exactly {first.id}", kind="state_changed")


@check_send_replay.fault
def replay_duplicates(ref: WeverReference) -> None:
    """A replay with the same request key and body creates another task."""
    @replaces(ref.replay_for_key)
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        original(sender_id, key, body)  # a conflict or a deleted task is still refused
        return None


@requirement(id="WEVER-SEND-REPLAY-CONCURRENT", level="MUST",
             title=f"{CONCURRENT_SENDS} identical send_task calls with one key at once make one task",
             source=at("/flow/5"), faults=["replay_duplicates", "replay_race"])
def check_send_replay_concurrent(ctx: CheckContext) -> None:
    """CONCURRENT_SENDS identical send_task calls with one key at once: one task."""
    copies = CONCURRENT_SENDS
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    key = fresh_key()
    replies = idempotency.at_once(copies, lambda: c.send(SENDER, RECIPIENT, data=data, key=key))
    what = f"send_task ({copies} copies at once)"
    served = [reply for reply in replies if reply.ok]
    if not served:
        c.task_of(replies[0], what)  # a finding, or blocked when refused for a quota
    # judged on the copies served (a relay making duplicates meets the sender's quota
    # before the last copy: those refusals are about the quota, the duplicates are not)
    named = {c.task_of(reply, what).id for reply in served}
    carried = watch.carrying(marker)
    ctx.expect(len(named) == 1, f"{copies} identical send_task at once answered tasks {sorted(named)}",
               kind="state_changed")
    ctx.expect(carried == named, f"{copies} identical send_task at once left {len(carried)} tasks with their "
               f"data ({sorted(carried)}), expected exactly one", kind="state_changed")
    for reply in replies:
        if not reply.ok:
            c.task_of(reply, what)  # every copy names the task


REPLICATION_LAG_S = 2.0


@check_send_replay_concurrent.fault
def replay_race(ref: WeverReference) -> None:
    """The replay lookup and the key record are not atomic across workers: a key recorded
    by one worker is seen by the others only after a replication lag, so identical
    concurrent submissions each make a task, while serial replays still return the first.

    (The in-process transport runs one request at a time, so a sleep between check and
    insert would never be overtaken: each calling thread stands for a server worker.)"""
    written: dict[str, tuple[int, float]] = {}  # key id -> (worker, when recorded)

    @replaces(ref.remember_key)
    def remember(original: Any, sender_id: str, key: str, body: str, task: dict[str, Any]) -> None:
        original(sender_id, key, body, task)
        written[ref.key_id(sender_id, key)] = (threading.get_ident(), time.monotonic())

    @replaces(ref.replay_for_key)
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        worker, when = written.get(ref.key_id(sender_id, key), (threading.get_ident(), 0.0))
        if worker != threading.get_ident() and time.monotonic() - when < REPLICATION_LAG_S:
            return None  # not yet replicated to this worker: the key looks fresh
        result: dict[str, Any] | None = original(sender_id, key, body)
        return result


def send_with_key(ctx: CheckContext) -> idempotency.Send:
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    bodies = {"a": c.marked()[0], "b": c.marked()[0]}
    return lambda key, body: c.send(SENDER, RECIPIENT, data=bodies[body], key=key)


@requirement(id="WEVER-SEND-KEY-CONFLICT", level="MUST",
             title="The same Idempotency-Key with another body is refused",
             source=at("/flow/5"), faults=["conflict_accepted"])
def check_key_conflict(ctx: CheckContext) -> None:
    """Another body under a key already used: refused (any refusal)."""
    idempotency.conflict_refused(ctx, sends={"send_task": send_with_key(ctx)}, error=None)


@check_key_conflict.fault
def conflict_accepted(ref: WeverReference) -> None:
    """A request key reused with another body returns the first task (no IDEMPOTENCY_CONFLICT)."""
    @replaces(ref.replay_for_key)
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        record = ref.s["keys"].get(ref.key_id(sender_id, key))
        result: dict[str, Any] | None = original(sender_id, key, record["fingerprint"] if record else body)
        return result


@requirement(id="WEVER-SEND-KEY-CONFLICT-CODE", level="SHOULD",
             title="A reused Idempotency-Key with another body gets IDEMPOTENCY_CONFLICT (409)",
             source=code("IDEMPOTENCY_CONFLICT"), faults=CODES)
def check_key_conflict_code(ctx: CheckContext) -> None:
    """Another body under a key already used: IDEMPOTENCY_CONFLICT."""
    idempotency.conflict_refused(ctx, sends={"send_task": send_with_key(ctx)}, error="IDEMPOTENCY_CONFLICT")
