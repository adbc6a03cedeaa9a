"""Readers of Agent Plaza answers shared by the mailbox checks: answers are untrusted, so a
field found in another shape is a finding that quotes it; and the conversations the
checks build (texts, own message ids, rounds)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from conformance.checks.errors import (
    expect_list,
    expect_mapping,
    expect_result,
)
from conformance.protocols.plaza.client import ALICE, BOB, PlazaClient, dig, fresh_id
from conformance.runner import CheckContext, CheckFailed
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt

CANONICAL = re.compile(r"^(0|[1-9]\d*)$")
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
VIEW_ID = re.compile(r"^[a-f0-9]{64}$")
RECEIPT = re.compile(r"^[A-Za-z0-9_-]{43}$")
INT64_MAX = 2**63 - 1
SAFE_MAX = 2**53 - 1
STORED, RETRIEVED, LATER_PEER = "stored", "peer_context_retrieval_observed", "later_peer_message_observed"
FRIEND_WORK = ("friend_invitation", "friend_message", "friend_channel_change")
EVIDENCE = "/durableReceive/private_chat/message_evidence"
RECEIVE = "/durableReceive/private_chat/receive"
NATIVE = "/durableReceive/native"
READ = "/conversationRead"
PAGING = "/conversationRead/pagination"
ATTN = "/mailboxAttention"
DRAIN_BATCHES = 250  # a drain's bound: 10,000 items, far more than a live site keeps between runs
AT_ONCE_S = 1.0  # an answer "at once": well under a second in process, with room for a network


# ----------------------------------------------------------------------------------------------
# small readers: answers are untrusted, another shape is a finding that quotes it
# ----------------------------------------------------------------------------------------------
def broken(message: str, kind: str = "malformed_answer", statement: str | None = None) -> NoReturn:
    raise CheckFailed(message, kind, statement)


def limit(ctx: CheckContext, name: str) -> int:
    return int(ctx.profile.limits[name].value)


def walk(value: Any) -> Iterator[Any]:
    """Every value inside an answer, depth first (itself included)."""
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from walk(child)


def mentions(value: Any, needle: str) -> bool:
    """``needle`` is a string somewhere inside ``value``."""
    return any(isinstance(v, str) and needle in v for v in walk(value))


def listed(ctx: CheckContext, answer: dict[str, Any], name: str, what: str, marker: Callable[[Any], bool]) -> list[dict[str, Any]]:
    """The list ``answer[name]`` (the profile's name), or else the one top-level list whose
    entries ``marker`` recognises: the document names the rows' fields, not their list."""
    found = answer.get(name)
    if not isinstance(found, list):
        found = next((v for v in answer.values() if isinstance(v, list) and v and all(marker(x) for x in v)), found)
    rows = expect_list(ctx, found, f"{what}: the {name} list")
    ctx.expect(all(isinstance(r, dict) for r in rows), f"{what}: {name} holds entries that are not objects: {json_excerpt(rows)}",
               kind="malformed_answer")
    return rows


def reason_of(reply: Reply) -> Any:
    """The ErrorInfo reason of a refusal (the document's error detail), or None."""
    data = reply.error_data if isinstance(reply.error_data, list) else [reply.error_data]
    return next((d.get("reason") for d in data if isinstance(d, dict) and "reason" in d), None)


def follow(c: PlazaClient, request: Any, who: str, what: str) -> Reply:
    """Send a request the target returned, as given: a data command (one data part, as
    the examples wrap it), SendMessage params, or a whole JSON-RPC request; a SendMessage
    gets a fresh messageId (the same one again would be a replay of an earlier call)."""
    if isinstance(request, dict) and isinstance(request.get("operation"), str):
        fields = {k: v for k, v in request.items() if k != "operation"}
        return c.command(request["operation"], fields, who)
    if isinstance(request, dict) and isinstance(request.get("method"), str) and "params" in request:
        method, params = request["method"], copy.deepcopy(request["params"])
    elif isinstance(request, dict) and isinstance(request.get("message"), dict):
        method, params = "SendMessage", copy.deepcopy(request)
    else:
        broken(f"{what}: {json_excerpt(request)} is neither a data command nor a JSON-RPC request to send")
    if method == "SendMessage" and isinstance(params, dict) and isinstance(params.get("message"), dict):
        params["message"]["messageId"] = fresh_id()
    return c.rpc(method, params, who)


# ----------------------------------------------------------------------------------------------
# conversations
# ----------------------------------------------------------------------------------------------
def is_record(value: Any) -> bool:
    return isinstance(value, dict) and ("seq" in value or value.get("record_type") == "message")


def page(c: PlazaClient, who: str, conn: str, what: str, **fields: Any) -> dict[str, Any]:
    """A served read_conversation page (its data)."""
    return c.data_of(c.command("read_conversation", {"connection_id": conn, **fields}, who), what)


def records(ctx: CheckContext, answer: dict[str, Any], what: str) -> list[dict[str, Any]]:
    return listed(ctx, answer, "messages", what, is_record)


def seq_of(ctx: CheckContext, record: Any, what: str) -> int:
    """A record's seq as a number (a canonical decimal string, or a JSON integer)."""
    value = record.get("seq") if isinstance(record, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and CANONICAL.match(value):
        return int(value)
    broken(f"{what}: seq {value!r} is not a decimal sequence number ({json_excerpt(record)})")


def seqs(ctx: CheckContext, answer: dict[str, Any], what: str) -> list[int]:
    return [seq_of(ctx, r, what) for r in records(ctx, answer, what)]


def body(record: dict[str, Any]) -> Any:
    """A record's text: ``text``, or its first part's text."""
    return record.get("text") if "text" in record else dig(record, "parts", 0, "text")


def bodies(ctx: CheckContext, answer: dict[str, Any], what: str) -> list[Any]:
    return [body(r) for r in records(ctx, answer, what)]


def ids(ctx: CheckContext, answer: dict[str, Any], what: str) -> list[Any]:
    return [r.get("id") for r in records(ctx, answer, what)]


def text_of(label: str) -> str:
    return f"{label} {fresh_id()[:8]}"


def conversation(c: PlazaClient, count: int, label: str = "m", fresh: bool = False) -> tuple[str, list[str]]:
    """An active alice-bob connection, then ``count`` texts, alice and bob in turn;
    ``fresh``: a new connection (holding only its invitation), never one a live site kept."""
    conn = c.befriend(ALICE, BOB, fresh=fresh)
    texts = [text_of(f"{label}{i:02d}") for i in range(count)]
    for i, text in enumerate(texts):
        c.say(ALICE if i % 2 == 0 else BOB, conn, text)
    return conn, texts


def own_id(c: PlazaClient, who: str, conn: str, text: str) -> str:
    """The id of the message with ``text`` in the newest page (set-up, read by ``who``)."""
    with c.ctx.setup(f"find the id of {text!r}", by="PLAZA-READ"):
        found = [r.get("id") for r in records(c.ctx, page(c, who, conn, "read_conversation", view="latest"), "read_conversation")
                 if body(r) == text]
        c.ctx.expect(found and isinstance(found[-1], str), f"the latest page does not hold {text!r} with an id", kind="malformed_answer")
    return str(found[-1])


def ascending(ctx: CheckContext, answer: dict[str, Any], what: str) -> list[int]:
    got = seqs(ctx, answer, what)
    ctx.expect(all(a < b for a, b in zip(got, got[1:], strict=False)),
               f"{what}: the page is not chronological (seq {got}); every page is, latest pages too")
    return got


def round_of(ctx: CheckContext, answer: dict[str, Any], what: str) -> int:
    value = answer.get("round_no")
    ctx.expect(isinstance(value, int) and not isinstance(value, bool),
               f"{what}: no round_no in the answer ({json_excerpt(answer)}); the document tells callers to carry the returned one",
               kind="malformed_answer")
    return value if isinstance(value, int) else 0


# ----------------------------------------------------------------------------------------------
# durable receive: the calls every receive check (and reads that judge acks) makes
# ----------------------------------------------------------------------------------------------
def pull(c: PlazaClient, who: str, key: str, what: str, **fields: Any) -> dict[str, Any]:
    return c.data_of(c.command("receive_pull", {"client_key": key, **fields}, who), what)


def batch_of(ctx: CheckContext, data: dict[str, Any]) -> dict[str, Any] | None:
    """The pulled batch (``batch``, or the answer itself where it holds batch_id), or None."""
    found = data.get("batch") if "batch" in data else (data if "batch_id" in data else None)
    return None if found is None else expect_mapping(ctx, found, "receive_pull: the batch")


def batch_items(ctx: CheckContext, data: dict[str, Any]) -> list[dict[str, Any]]:
    batch = batch_of(ctx, data)
    return [] if batch is None else listed(ctx, batch, "items", "receive_pull batch", lambda x: isinstance(x, dict))


def item_key(item: dict[str, Any]) -> Any:
    """What names a work item across deliveries: its id, else the whole item."""
    for name in ("id", "item_id", "event_id", "work_id", "seq"):
        if name in item:
            return item[name]
    return json_excerpt(item, 1000)


def item_keys(ctx: CheckContext, data: dict[str, Any]) -> list[Any]:
    return [item_key(i) for i in batch_items(ctx, data)]


def ack(c: PlazaClient, who: str, key: str, batch: dict[str, Any], **changes: Any) -> Reply:
    fields = {"client_key": key, "batch_id": batch.get("batch_id"), "view_id": batch.get("view_id"), "receipt": batch.get("receipt")}
    return c.command("receive_ack", {**fields, **changes}, who)


def drain(c: PlazaClient, who: str, key: str) -> None:
    """Acknowledge everything pending for ``key`` (set-up)."""
    with c.ctx.setup(f"{who} acknowledges the pending work", by="PLAZA-RECV-ACK"):
        for _ in range(DRAIN_BATCHES):
            data = pull(c, who, key, "receive_pull (drain)", limit=40)
            batch = batch_of(c.ctx, data)
            if batch is None or not batch_items(c.ctx, data):
                return
            expect_result(c.ctx, ack(c, who, key, batch), "receive_ack (drain)")


def receiver(c: PlazaClient, who: str, *pairs: tuple[str, str]) -> str:
    """``who``'s client_key of the run (c.client_key). On a live site, first the pairs the
    check will invite in are cleared (their clean-up is work too), then everything pending
    for the key is acknowledged: what the key delivers next is what the check does. Under
    control the site was just reset and the key has nothing pending."""
    key = c.client_key(who)
    if c.live():
        for a, b in pairs:
            c.clear_pair(a, b)
        drain(c, who, key)
    return key


def triple(ctx: CheckContext, batch: dict[str, Any]) -> tuple[Any, Any, Any]:
    return batch.get("batch_id"), batch.get("view_id"), batch.get("receipt")
