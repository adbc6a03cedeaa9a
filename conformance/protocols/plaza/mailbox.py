"""Agent Plaza's mailbox: reading a conversation (read_conversation: views, rounds, seq
cursors, limits, no side effects, not-found alike), message evidence and message_status,
the inbox and its two cursors, mailbox_attention (inbox_summary, the working-task
locations, bounds, read requests) and durable receive (receive_pull / receive_ack /
receive_status over A2A, redelivery, exact acks, waits, isolation, the friend work kinds).

The document names some answer fields (round_no, has_more, next_request, next_after_seq,
next_before_seq, has_older, mailbox_attention and its groups, counts and flags,
read_request, focused_request, ack_request, more_available, batch_id / view_id / receipt,
next_page_request with before_updated_at and before_id, next_notices_request) but no
container names: the MUST checks find messages, items and conversations wherever a
reasonable answer puts them, and the profile's own shapes (docs/agent-plaza.md) are
SHOULDs of ``source: profile``. Work groups (PLAZA-RECV-WORK-GROUP) are part 2."""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from conformance.checks.errors import (
    expect_list,
    expect_mapping,
    expect_refused,
    expect_result,
    refused_as,
)
from conformance.model import Requirement
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, COMPLETED, PlazaClient, dig, fresh_id
from conformance.runner import CheckContext, CheckFailed, Untested
from conformance.table import Table
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
# read_conversation
# ----------------------------------------------------------------------------------------------
def check_read(ctx: CheckContext) -> None:
    """read_conversation is served to both participants and returns the conversation's texts."""
    c = PlazaClient(ctx)
    conn, texts = conversation(c, 2)
    for who in (ALICE, BOB):
        with ctx.subcheck(f"read by {who}"):
            got = bodies(ctx, page(c, who, conn, f"read_conversation by {who}"), f"read_conversation by {who}")
            missing = [t for t in texts if t not in got]
            ctx.expect(not missing, f"read_conversation by {who} does not return the texts {missing} of the conversation (got {got})")


def check_read_shape(ctx: CheckContext) -> None:
    """The profile's page: connection_id, round_no, view, messages (records with text) and has_more."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 1)
    for view in ("latest", "history"):
        with ctx.subcheck(view):
            data = c.data_of(c.command("read_conversation", {"connection_id": conn, "view": view}),
                             f"read_conversation view {view}", ("connection_id", "round_no", "view", "messages", "has_more"))
            ctx.expect(data["connection_id"] == conn and data["view"] == view,
                       f"the page names connection {data['connection_id']!r} view {data['view']!r}; asked {conn} {view}",
                       kind="schema_mismatch")
            ctx.expect(all(isinstance(r, dict) and isinstance(r.get("text"), str) for r in expect_list(ctx, data["messages"], "messages")),
                       f"page messages carry no text: {json_excerpt(data['messages'])}", kind="schema_mismatch")


def check_read_round(ctx: CheckContext) -> None:
    """round_no defaults to the current round; a page asked with round_no stays in it
    after a new round opens; a read returns only the selected round."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    first = text_of("round one")
    c.say(ALICE, conn, first)
    before = page(c, ALICE, conn, "read_conversation (round one)")
    old = round_of(ctx, before, "read_conversation (round one)")
    with ctx.setup("respond complete ends the round", by="PLAZA-CONSENT-COMPLETE"):
        c.data_of(c.command("respond", {"connection_id": conn, "decision": "complete", "round_no": old}, ALICE), "respond complete")
    second = text_of("round two")
    c.say(BOB, conn, second)
    with ctx.subcheck("default round"):
        now = page(c, ALICE, conn, "read_conversation after a new round")
        got = bodies(ctx, now, "read_conversation after a new round")
        ctx.expect(round_of(ctx, now, "read_conversation after a new round") > old and second in got and first not in got,
                   f"without round_no the read must return the current round: round_no {now.get('round_no')!r}, texts {got} "
                   f"(the old round {old} held {first!r}, the new one {second!r})")
    with ctx.subcheck("pinned round"):
        pinned = page(c, ALICE, conn, f"read_conversation round_no {old}", round_no=old)
        got = bodies(ctx, pinned, f"read_conversation round_no {old}")
        ctx.expect(pinned.get("round_no") == old and first in got and second not in got,
                   f"read with round_no {old} after a new round opened: round_no {pinned.get('round_no')!r}, texts {got}; "
                   f"it must stay in round {old} ({first!r}) and return nothing of the new round ({second!r})")


def check_read_views(ctx: CheckContext) -> None:
    """Both views are served; without view the page is the latest view's."""
    c = PlazaClient(ctx)
    conn, texts = conversation(c, limit(ctx, "read_limit_default_count") + 3)
    latest = page(c, ALICE, conn, "read_conversation view latest", view="latest")
    default = page(c, ALICE, conn, "read_conversation without view")
    page(c, ALICE, conn, "read_conversation view history", view="history")
    got = bodies(ctx, latest, "view latest")
    ctx.expect(texts[-1] in got, f"the latest view does not hold the newest text {texts[-1]!r}: {got}")
    ctx.expect(ids(ctx, default, "without view") == ids(ctx, latest, "view latest"),
               f"without view the page holds {bodies(ctx, default, 'without view')}, the latest view {got}: the default view is latest")


def check_read_forward(ctx: CheckContext) -> None:
    """An explicit after_seq selects forward history: exactly the messages with seq above
    it (with view history, and without any view)."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 6)
    latest = records(ctx, page(c, ALICE, conn, "read_conversation view latest", view="latest"), "view latest")
    ctx.expect(len(latest) >= 4, f"the latest page holds {len(latest)} messages after 6 texts", kind="malformed_answer")
    after = seq_of(ctx, latest[-4], "view latest")
    want = [r.get("id") for r in latest[-3:]]
    for label, fields in (("view history", {"view": "history"}), ("no view", {})):
        with ctx.subcheck(label):
            what = f"read_conversation after_seq {after} ({label})"
            forward = page(c, ALICE, conn, what, after_seq=str(after), **fields)
            got = seqs(ctx, forward, what)
            ctx.expect(all(s > after for s in got), f"{what} returned seq {got}: only seq > after_seq belong to forward history")
            ctx.expect(ids(ctx, forward, what) == want,
                       f"{what} returned messages {ids(ctx, forward, what)}; the three after it are {want}")


def check_read_backward(ctx: CheckContext) -> None:
    """before_seq pages to the older messages of the latest view."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, limit(ctx, "read_limit_default_count") + 4)
    latest = page(c, ALICE, conn, "read_conversation view latest", view="latest")
    newest = seqs(ctx, latest, "view latest")
    ctx.expect(newest, "the latest page is empty", kind="malformed_answer")
    given = latest.get("next_before_seq")
    cursor = given if isinstance(given, str) and CANONICAL.match(given) else str(min(newest))
    what = f"read_conversation view latest before_seq {cursor}"
    older = seqs(ctx, page(c, ALICE, conn, what, view="latest", before_seq=cursor), what)
    ctx.expect(older, f"{what} is empty, though {len(newest)} newer messages leave older ones")
    ctx.expect(all(s < min(newest) and s < int(cursor) for s in older),
               f"{what} returned seq {older}: a before_seq page holds only messages older than the page before ({min(newest)})")


def check_read_order(ctx: CheckContext) -> None:
    """Every page is chronological: latest, history, forward and older pages."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, limit(ctx, "read_limit_default_count") + 2)
    latest = page(c, ALICE, conn, "latest", view="latest")
    pages = {"view latest": latest, "view history": page(c, ALICE, conn, "history", view="history"),
             "forward from 0": page(c, BOB, conn, "forward", view="history", after_seq="0", limit=7)}
    got = seqs(ctx, latest, "view latest")
    if got:
        pages["older"] = page(c, BOB, conn, "older", view="latest", before_seq=str(max(got)), limit=5)
    for label, answer in pages.items():
        with ctx.subcheck(label):
            ascending(ctx, answer, f"read_conversation {label}")


def check_read_limit(ctx: CheckContext) -> None:
    """A page holds the default count without limit, exactly limit with one, and the maximum at most."""
    c = PlazaClient(ctx)
    default, maximum = limit(ctx, "read_limit_default_count"), limit(ctx, "read_limit_maximum_count")
    conn, _ = conversation(c, maximum + 1)
    for label, fields, want in (("no limit", {}, default), ("limit 3", {"limit": 3}, 3), (f"limit {maximum}", {"limit": maximum}, maximum)):
        for view in ("latest", "history"):
            with ctx.subcheck(f"{label}, view {view}"):
                what = f"read_conversation view {view} {label}"
                got = records(ctx, page(c, ALICE, conn, what, view=view, **fields), what)
                ctx.expect(len(got) == want, f"{what} returned {len(got)} messages of more than {maximum}; the page must hold {want}")


def check_read_next(ctx: CheckContext) -> None:
    """While has_more a page carries next_request, which continues exactly where the page
    ended; forward pages carry next_after_seq, latest pages next_before_seq and has_older."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 12, fresh=True)  # the pages count: no older messages
    with ctx.subcheck("forward"):
        first = page(c, ALICE, conn, "forward page 1", view="history", after_seq="0", limit=5)
        walk_pages(c, first, "forward", lambda prev, nxt: min(nxt) > max(prev))
        ctx.expect(isinstance(first.get("next_after_seq"), str),
                   f"a forward page with more to come has next_after_seq {first.get('next_after_seq')!r}: forward history returns it")
    with ctx.subcheck("latest"):
        latest = page(c, ALICE, conn, "latest page 1", view="latest", limit=5)
        ctx.expect(latest.get("has_older") is True and isinstance(latest.get("next_before_seq"), str),
                   f"a latest page with older messages has has_older {latest.get('has_older')!r} and next_before_seq "
                   f"{latest.get('next_before_seq')!r}: latest pages return both")
        if latest.get("has_more") is True:
            walk_pages(c, latest, "latest", lambda prev, nxt: max(nxt) < min(prev))


def walk_pages(c: PlazaClient, first: dict[str, Any], label: str, continues: Callable[[list[int], list[int]], bool]) -> None:
    """Follow next_request while has_more: each page continues where the last ended, with no message twice."""
    ctx = c.ctx
    seen: list[int] = seqs(ctx, first, f"{label} page 1")
    current = first
    for n in range(2, 8):
        if current.get("has_more") is not True:
            return
        request = current.get("next_request")
        ctx.expect(isinstance(request, dict), f"{label} page {n - 1} has has_more true but next_request {json_excerpt(request)}",
                   kind="malformed_answer")
        nxt = c.data_of(follow(c, request, ALICE, f"next_request of {label} page {n - 1}"), f"{label} page {n} (next_request)")
        got = seqs(ctx, nxt, f"{label} page {n}")
        prev = seqs(ctx, current, f"{label} page {n - 1}")
        ctx.expect(got and prev and continues(prev, got) and not set(got) & set(seen),
                   f"following next_request of {label} page {n - 1} (seq {prev}) returned seq {got}: it must continue exactly where the page ended")
        seen += got
        current = nxt
    broken(f"{label}: has_more still true after 7 pages of a 13-message conversation", kind="expectation")


def check_seq_format(ctx: CheckContext) -> None:
    """Seq cursors: canonical strings kept exact, safe integers accepted and normalised,
    unsafe numbers refused, the string maximum 9223372036854775807 accepted; returned
    cursors are canonical decimal strings."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 4)
    latest = page(c, ALICE, conn, "read_conversation view latest", view="latest", limit=3)
    got = seqs(ctx, latest, "view latest")
    ctx.expect(len(got) == 3, f"a latest page of limit 3 holds seq {got}", kind="malformed_answer")
    with ctx.subcheck("returned cursors"):
        for name in ("next_before_seq", "next_after_seq"):
            value = latest.get(name)
            ctx.expect(value is None or (isinstance(value, str) and CANONICAL.match(value)),
                       f"{name} {value!r} is not a canonical decimal string (callers use the exact returned string)")
    for name, fields in (("after_seq", {"view": "history"}), ("before_seq", {"view": "latest"})):
        cursor = got[0] if name == "after_seq" else got[-1]
        with ctx.subcheck(f"{name} as a safe integer"):
            text = page(c, ALICE, conn, f"{name} {cursor!r} as a string", **{name: str(cursor)}, **fields)
            number = page(c, ALICE, conn, f"{name} {cursor} as a JSON number", **{name: cursor}, **fields)
            ctx.expect(ids(ctx, number, "number") == ids(ctx, text, "string"),
                       f"{name} {cursor} as a number returned {ids(ctx, number, 'number')}, as a string {ids(ctx, text, 'string')}: "
                       "safe integers are accepted and normalised")
        with ctx.subcheck(f"{name} as an unsafe number"):
            expect_refused(ctx, c.command("read_conversation", {"connection_id": conn, name: SAFE_MAX + 2, **fields}),
                           f"read_conversation {name} {SAFE_MAX + 2} (a JSON number above 2^53-1)")
    with ctx.subcheck("the string maximum"):
        top = page(c, ALICE, conn, f"after_seq {INT64_MAX}", view="history", after_seq=str(INT64_MAX))
        ctx.expect(records(ctx, top, "after_seq maximum") == [], f"after_seq {INT64_MAX} returned messages: {json_excerpt(top)}")


def check_seq_above_max(ctx: CheckContext) -> None:
    """The prose caps seq strings at 9223372036854775807 (the schema pattern alone would allow 19 digits above it)."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    for name in ("after_seq", "before_seq"):
        with ctx.subcheck(name):
            expect_refused(ctx, c.command("read_conversation", {"connection_id": conn, name: str(INT64_MAX + 1)}),
                           f"read_conversation {name} {INT64_MAX + 1} (above the stated maximum)")


def check_seq_exclusive(ctx: CheckContext, strict: bool = False) -> None:
    """before_seq and after_seq together are refused."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 3)
    for view in ("latest", "history"):
        with ctx.subcheck(view):
            refused_as(ctx, c.command("read_conversation", {"connection_id": conn, "view": view, "after_seq": "1", "before_seq": "3"}),
                       "A2A_INVALID_PARAMETERS", f"read_conversation view {view} with both after_seq and before_seq", strict)


def attention(c: PlazaClient, who: str, what: str = "inbox_summary") -> dict[str, Any]:
    data = c.data_of(c.command("inbox_summary", {}, who), what, ("mailbox_attention",))
    return expect_mapping(c.ctx, data["mailbox_attention"], f"{what}: mailbox_attention")


def pending_count(c: PlazaClient, who: str, what: str) -> Any:
    return attention(c, who, what).get("pending_received_invitation_count")


def unread_counts(att: dict[str, Any]) -> dict[str, Any]:
    """Every unread count of an attention answer, by path."""
    out: dict[str, Any] = {}

    def visit(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if "unread" in k and isinstance(v, int):
                    out[f"{path}.{k}"] = v
                visit(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                visit(v, f"{path}[{i}]")

    visit(att, "mailbox_attention")
    return out


def check_read_no_side_effects(ctx: CheckContext) -> None:
    """A read accepts nothing, marks nothing read, acknowledges no receive batch and
    completes no task: the invitee's read of a pending invitation leaves it pending."""
    c = PlazaClient(ctx)
    invitation, conn = c.invite(ALICE, BOB, text_of("invitation"))
    key = fresh_id()
    pulled = pull(c, BOB, key, "receive_pull before the read")
    att = attention(c, BOB, "inbox_summary before the read")
    page(c, BOB, conn, "read_conversation of a pending invitation by the invitee")
    after = attention(c, BOB, "inbox_summary after the read")
    with ctx.subcheck("the invitation stays pending"):
        ctx.expect(not c.text(ALICE, text_of("second"), context=conn).ok,
                   "after the invitee read the pending invitation the inviter's second text was accepted: the read accepted it",
                   kind="state_changed")
        ctx.expect(after.get("pending_received_invitation_count") == att.get("pending_received_invitation_count"),
                   f"pending_received_invitation_count went from {att.get('pending_received_invitation_count')!r} to "
                   f"{after.get('pending_received_invitation_count')!r} with a read", kind="state_changed")
    with ctx.subcheck("nothing marked read"):
        ctx.expect(unread_counts(after) == unread_counts(att),
                   f"unread counts went from {unread_counts(att)} to {unread_counts(after)} with a read (read_state_updated: false)",
                   kind="state_changed")
    with ctx.subcheck("no receive batch acknowledged"):
        again = pull(c, BOB, key, "receive_pull after the read")
        ctx.expect(item_keys(ctx, again) == item_keys(ctx, pulled) and item_keys(ctx, pulled),
                   f"the pending receive batch {item_keys(ctx, pulled)} came back as {item_keys(ctx, again)} after a read",
                   kind="state_changed")
    with ctx.subcheck("no task completed"):
        task = c.task_of(c.get_task(str(invitation["id"]), ALICE), "GetTask of the invitation")
        ctx.expect(c.state_of(task) != COMPLETED, f"the inviter's task became {c.state_of(task)} when the invitee only read",
                   kind="state_changed")


def check_read_not_found_alike(ctx: CheckContext, strict: bool = False) -> None:
    """A stranger's read of a foreign conversation and a read of a missing one are refused alike."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 1)
    foreign = c.command("read_conversation", {"connection_id": conn}, CAROL)
    missing = c.command("read_conversation", {"connection_id": fresh_id()}, CAROL)
    alike(ctx, foreign, missing, "read_conversation", strict)


def alike(ctx: CheckContext, foreign: Reply, missing: Reply, what: str, strict: bool) -> None:
    refused_as(ctx, foreign, "NOT_FOUND", f"{what} of other agents' conversation", strict)
    refused_as(ctx, missing, "NOT_FOUND", f"{what} of a conversation that does not exist", strict)
    ctx.expect(foreign.error_code == missing.error_code and reason_of(foreign) == reason_of(missing),
               f"{what}: a foreign conversation is refused with {foreign.error_code} {reason_of(foreign)!r}, a missing one with "
               f"{missing.error_code} {reason_of(missing)!r}: both must answer not found alike", kind="wrong_error_code")


def check_read_recheck(ctx: CheckContext) -> None:
    """Every read and replay checks the contact controls again: after the peer removes the
    connection, a read (and the replay of an earlier read) no longer serves the history."""
    c = PlazaClient(ctx)
    conn, texts = conversation(c, 1)
    message_id = fresh_id()
    first = c.command("read_conversation", {"connection_id": conn}, ALICE, message_id=message_id)
    c.data_of(first, "read_conversation before the removal")
    with ctx.setup("bob removes alice", by="PLAZA-FRIEND-CONTROL"):
        c.data_of(c.command("friend_control", {"connection_id": conn, "decision": "remove"}, BOB), "friend_control remove")
    reads = {"a new read": c.command("read_conversation", {"connection_id": conn}, ALICE),
             "the replayed read": c.command("read_conversation", {"connection_id": conn}, ALICE, message_id=message_id)}
    for label, reply in reads.items():
        with ctx.subcheck(label):
            ctx.expect(not reply.ok or not any(mentions(reply.result, t) for t in texts),
                       f"{label} after the peer removed the connection still serves its history: {reply.describe()}",
                       kind="auth_not_enforced")
    with ctx.subcheck("message_status"):
        status = c.command("message_status", {"connection_id": conn}, ALICE)
        ctx.expect(reads["a new read"].ok or not status.ok,
                   f"after the removal a read is refused but message_status is served: {status.describe()}; it applies the same "
                   "checks as reads", kind="auth_not_enforced")


# ----------------------------------------------------------------------------------------------
# message evidence and message_status
# ----------------------------------------------------------------------------------------------
def msg_status(c: PlazaClient, who: str, conn: str, what: str, message_id: str | None = None) -> dict[str, Any]:
    fields = {"connection_id": conn} | ({"message_id": message_id} if message_id else {})
    return c.data_of(c.command("message_status", fields, who), what)


def reports(data: dict[str, Any], name: str) -> bool:
    """The answer reports ``name``: as its status, a flag set true, or an entry of a list."""
    return data.get("status") == name or data.get(name) is True or any(isinstance(v, list) and name in v for v in data.values())


def named(data: dict[str, Any]) -> Any:
    """The message a message_status answer is about."""
    return data.get("message_id") or dig(data, "message", "id") or data.get("id")


def check_status_states(ctx: CheckContext) -> None:
    """stored after the send (not retrieved), peer_context_retrieval_observed after the
    peer reads, later_peer_message_observed after the peer writes."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    text = text_of("status")
    c.say(ALICE, conn, text)
    mid = own_id(c, ALICE, conn, text)
    steps: list[tuple[str, Callable[[], Any], str, tuple[str, ...]]] = [
        ("sent", lambda: None, STORED, (RETRIEVED, LATER_PEER)),
        ("read by the peer", lambda: page(c, BOB, conn, "read_conversation by bob"), RETRIEVED, (LATER_PEER,)),
        ("answered by the peer", lambda: c.say(BOB, conn, text_of("reply")), LATER_PEER, ()),
    ]
    for label, step, want, not_yet in steps:
        with ctx.subcheck(label):
            step()
            data = msg_status(c, ALICE, conn, f"message_status ({label})", mid)
            ctx.expect(reports(data, want), f"message_status of a message {label} does not report {want}: {json_excerpt(data)}")
            early = [n for n in not_yet if reports(data, n)]
            ctx.expect(not early, f"message_status of a message {label} reports {early} already: {json_excerpt(data)}")


def check_status_shape(ctx: CheckContext) -> None:
    """The profile's answer: message_id, seq, status and the three booleans."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    text = text_of("shape")
    c.say(ALICE, conn, text)
    data = c.data_of(c.command("message_status", {"connection_id": conn}), "message_status",
                     ("message_id", "seq", "status", STORED, RETRIEVED, LATER_PEER))
    ctx.expect(data["status"] in (STORED, RETRIEVED, LATER_PEER) and all(isinstance(data[k], bool) for k in (STORED, RETRIEVED, LATER_PEER)),
               f"message_status status {data['status']!r} and flags {[data[k] for k in (STORED, RETRIEVED, LATER_PEER)]}", kind="schema_mismatch")
    ctx.expect(data["status"] == STORED and data[STORED] is True, f"a message just sent has status {data['status']!r}", kind="schema_mismatch")


def check_status_latest(ctx: CheckContext) -> None:
    """Without message_id, the caller's latest own message (not the peer's later one); with it, that message."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    one, two = text_of("own one"), text_of("own two")
    c.say(ALICE, conn, one)
    c.say(ALICE, conn, two)
    c.say(BOB, conn, text_of("peer later"))
    first, second = own_id(c, ALICE, conn, one), own_id(c, ALICE, conn, two)
    with ctx.subcheck("without message_id"):
        data = msg_status(c, ALICE, conn, "message_status without message_id")
        ctx.expect(named(data) == second, f"message_status without message_id is about {named(data)!r}; the caller's latest own message is {second}")
    with ctx.subcheck("with message_id"):
        data = msg_status(c, ALICE, conn, "message_status of the first message", first)
        ctx.expect(named(data) == first, f"message_status with message_id {first} is about {named(data)!r}")


def check_status_own(ctx: CheckContext, strict: bool = False) -> None:
    """message_status never presents the peer's message as the caller's receipt, and
    serves only a participant."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    c.say(ALICE, conn, text_of("mine"))
    theirs = text_of("theirs")
    c.say(BOB, conn, theirs)
    peer = own_id(c, BOB, conn, theirs)
    with ctx.subcheck("the peer's message"):
        reply = c.command("message_status", {"connection_id": conn, "message_id": peer}, ALICE)
        if strict:
            refused_as(ctx, reply, "NOT_FOUND", "message_status of the peer's message", strict)
        data = reply.result if reply.ok else None
        ctx.expect(not reply.ok or not mentions(data, peer),
                   f"message_status of the peer's message {peer} is served as the caller's own: {reply.describe()}", kind="auth_not_enforced")
    with ctx.subcheck("a stranger"):
        refused_as(ctx, c.command("message_status", {"connection_id": conn}, CAROL), "NOT_FOUND",
                   "message_status by an agent who is no participant", strict)


def unchanged(c: PlazaClient, name: str, fields: dict[str, Any], who: str) -> None:
    """With control: the stored state is the same before and after the command's replay
    (the first call may record its messageId for replays; the same request again must
    change nothing more when the command is read-only)."""
    message_id = fresh_id()
    c.data_of(c.command(name, fields, who, message_id=message_id), name)
    if not c.ctx.run.control_path:
        return
    state = c.snapshot()
    c.data_of(c.command(name, fields, who, message_id=message_id), f"{name} replayed")
    c.ctx.expect(c.snapshot() == state, f"the stored state changed with a replayed {name} (a read-only command)", kind="state_changed")


def check_status_read_only(ctx: CheckContext) -> None:
    """message_status changes nothing: in particular it is no retrieval of the peer's messages."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    c.say(ALICE, conn, text_of("mine"))
    theirs = text_of("theirs")
    c.say(BOB, conn, theirs)
    peer = own_id(c, BOB, conn, theirs)
    unchanged(c, "message_status", {"connection_id": conn}, ALICE)
    data = msg_status(c, BOB, conn, "the peer's message_status", peer)
    ctx.expect(not reports(data, RETRIEVED), f"after alice asked message_status, bob's message shows {RETRIEVED}: {json_excerpt(data)}",
               kind="state_changed")


def check_status_retrieval(ctx: CheckContext) -> None:
    """Only the peer's authenticated read of the context is a retrieval: not the sender's
    own read, not a stranger's refused read, not the peer's receive ack."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    key = c.client_key(BOB)
    drain(c, BOB, key)
    text = text_of("retrieval")
    c.say(ALICE, conn, text)
    mid = own_id(c, ALICE, conn, text)

    def observed(label: str) -> bool:
        return reports(msg_status(c, ALICE, conn, f"message_status after {label}", mid), RETRIEVED)

    for label, step in (("the sender's own read", lambda: page(c, ALICE, conn, "read by the sender")),
                        ("a stranger's refused read", lambda: c.command("read_conversation", {"connection_id": conn}, CAROL))):
        with ctx.subcheck(label):
            step()
            ctx.expect(not observed(label), f"{label} marked the message {RETRIEVED}", kind="state_changed")
    with ctx.subcheck("the peer's receive ack"):
        data = pull(c, BOB, key, "bob's receive_pull")
        before = observed("the peer's pull")
        batch = batch_of(ctx, data)
        if batch is not None:
            expect_result(ctx, ack(c, BOB, key, batch), "bob's receive_ack")
        ctx.expect(observed("the peer's ack") == before, f"a receive ack marked the message {RETRIEVED} (an ack is no read)",
                   kind="state_changed")
    with ctx.subcheck("the peer's read"):
        page(c, BOB, conn, "read by the peer")
        ctx.expect(observed("the peer's read"), f"the peer's read of the conversation is not observed as {RETRIEVED}")


def deep_records(value: Any, kind: str) -> list[dict[str, Any]]:
    return [v for v in walk(value) if isinstance(v, dict) and v.get("record_type") == kind]


def check_evidence_fields(ctx: CheckContext) -> None:
    """Message records carry the common evidence fields and record_type message; a send
    answers with a send_receipt whose message has them too."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    task = c.say(ALICE, conn, text_of("evidence"))
    c.say(BOB, conn, text_of("evidence reply"))
    common = ctx.profile.spec["durableReceive"]["private_chat"]["message_evidence"]["common_fields"]
    with ctx.subcheck("read pages"):
        for record in records(ctx, page(c, ALICE, conn, "read_conversation"), "read_conversation"):
            missing = [f for f in common if record.get(f) in (None, "")]
            ctx.expect(not missing and record.get("record_type") == "message",
                       f"a message record lacks {missing} or has record_type {record.get('record_type')!r}: {json_excerpt(record)}",
                       kind="schema_mismatch")
    with ctx.subcheck("send receipt"):
        receipts = deep_records(task, "send_receipt")
        ctx.expect(receipts, f"the answer to a text holds no send_receipt record: {json_excerpt(task, 400)}", kind="schema_mismatch")
        message = receipts[0].get("message")
        missing = [f for f in common if not isinstance(message, dict) or message.get(f) in (None, "")]
        ctx.expect(receipts[0].get("message_sent") is True and not missing and dig(message, "record_type") == "message",
                   f"the send_receipt {json_excerpt(receipts[0], 300)} lacks message_sent true or message fields {missing}",
                   kind="schema_mismatch")


# ----------------------------------------------------------------------------------------------
# inbox
# ----------------------------------------------------------------------------------------------
def inbox(c: PlazaClient, who: str, what: str, **fields: Any) -> dict[str, Any]:
    return c.data_of(c.command("inbox", fields, who), what)


def conversations(ctx: CheckContext, answer: dict[str, Any], what: str) -> list[dict[str, Any]]:
    return listed(ctx, answer, "conversations", what, lambda x: isinstance(x, dict) and "connection_id" in x)


def seed(c: PlazaClient, count: int, invite: str) -> None:
    """``count`` new visitors, each inviting ``invite`` (control seed_agents)."""
    c.ctx.control("seed_agents", count=count, invite=invite)


def check_inbox_views(ctx: CheckContext) -> None:
    """The compact and the full view are both served and list the caller's conversation."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 1)
    for view in ("compact", "full", None):
        label = f"view {view}" if view else "no view"
        with ctx.subcheck(label):
            data = inbox(c, ALICE, f"inbox {label}", **({"view": view} if view else {}))
            ctx.expect(mentions(data, conn), f"inbox {label} does not list the caller's conversation {conn}: {json_excerpt(data, 300)}")


def check_inbox_shape(ctx: CheckContext) -> None:
    """The profile's inbox: view, conversations, next_page_request, notices, next_notices_request."""
    c = PlazaClient(ctx)
    conversation(c, 1)
    for view in ("compact", "full"):
        with ctx.subcheck(view):
            data = c.data_of(c.command("inbox", {"view": view}), f"inbox {view}",
                             ("view", "conversations", "next_page_request", "notices", "next_notices_request"))
            ctx.expect(data["view"] == view and isinstance(data["conversations"], list) and isinstance(data["notices"], list),
                       f"inbox {view}: view {data['view']!r}, conversations and notices {json_excerpt(data)}", kind="schema_mismatch")


def check_inbox_limits(ctx: CheckContext) -> None:
    """A compact page holds 20 conversations by default, a full page 60; limit asks for fewer."""
    c = PlazaClient(ctx)
    compact, full = limit(ctx, "inbox_compact_default_count"), limit(ctx, "inbox_full_default_count")
    seed(c, full + 1, ALICE)
    for view, fields, want in (("compact", {}, compact), ("full", {}, full), ("compact", {"limit": 7}, 7), ("full", {"limit": 7}, 7)):
        label = f"view {view}" + (f" limit {fields['limit']}" if fields else "")
        with ctx.subcheck(label):
            got = conversations(ctx, inbox(c, ALICE, f"inbox {label}", view=view, **fields), f"inbox {label}")
            ctx.expect(len(got) == want, f"inbox {label} holds {len(got)} of {full + 1} conversations, expected {want}")


def conversation_ids(ctx: CheckContext, answer: dict[str, Any], what: str) -> list[Any]:
    return [r.get("connection_id") for r in conversations(ctx, answer, what)]


def check_inbox_cursor(ctx: CheckContext) -> None:
    """next_page_request carries before_updated_at and before_id together; following it
    pages through every conversation once."""
    c = PlazaClient(ctx)
    seed(c, 25, ALICE)
    current = inbox(c, ALICE, "inbox page 1", view="compact", limit=10)
    seen = conversation_ids(ctx, current, "inbox page 1")
    for n in range(2, 8):
        request = current.get("next_page_request")
        if not request:
            break
        params = request if "before_id" in request else next((v for v in walk(request) if isinstance(v, dict) and "before_id" in v), {})
        ctx.expect(isinstance(params.get("before_updated_at"), str) and isinstance(params.get("before_id"), str),
                   f"next_page_request of page {n - 1} does not carry before_updated_at and before_id together: {json_excerpt(request)}")
        current = c.data_of(follow(c, request, ALICE, f"next_page_request of page {n - 1}"), f"inbox page {n}")
        got = conversation_ids(ctx, current, f"inbox page {n}")
        twice = set(got) & set(seen)
        ctx.expect(got and not twice, f"inbox page {n} (next_page_request) lists {len(got)} conversations, {len(twice)} of them already seen")
        seen += got
    ctx.expect(len(set(seen)) >= 25, f"paging the inbox by next_page_request reached {len(set(seen))} conversations of at least 25")


def notice_keys(ctx: CheckContext, answer: dict[str, Any], what: str) -> list[Any]:
    rows = listed(ctx, answer, "notices", what, lambda x: isinstance(x, dict))
    return [r.get("notice_id", r.get("id", json_excerpt(r, 1000))) for r in rows]


def check_inbox_notices(ctx: CheckContext) -> None:
    """Notices page by notices_after and next_notices_request, independently of the
    conversations: each cursor moves its own list and leaves the other where it was."""
    c = PlazaClient(ctx)
    seed(c, 12, ALICE)
    first = inbox(c, ALICE, "inbox page 1", view="compact", limit=5)
    notices, convs = notice_keys(ctx, first, "inbox page 1"), conversation_ids(ctx, first, "inbox page 1")
    with ctx.subcheck("next_notices_request"):
        request = first.get("next_notices_request")
        ctx.expect(isinstance(request, dict), f"12 invitations in pages of 5, yet next_notices_request is {json_excerpt(request)}")
        more = c.data_of(follow(c, request, ALICE, "next_notices_request"), "inbox (next_notices_request)")
        got = notice_keys(ctx, more, "inbox (next_notices_request)")
        ctx.expect(got and not set(got) & set(notices), f"next_notices_request returned notices {got} after {notices}: "
                   "it must continue after the page's notices")
        ctx.expect(conversation_ids(ctx, more, "inbox (next_notices_request)") == convs,
                   "following next_notices_request moved the conversation list: the two cursors are independent")
    with ctx.subcheck("next_page_request"):
        request = first.get("next_page_request")
        ctx.expect(isinstance(request, dict), f"12 conversations in pages of 5, yet next_page_request is {json_excerpt(request)}")
        more = c.data_of(follow(c, request, ALICE, "next_page_request"), "inbox (next_page_request)")
        ctx.expect(notice_keys(ctx, more, "inbox (next_page_request)") == notices,
                   f"following next_page_request moved the notices from {notices} to "
                   f"{notice_keys(ctx, more, 'inbox (next_page_request)')}: the two cursors are independent")


# ----------------------------------------------------------------------------------------------
# mailbox attention
# ----------------------------------------------------------------------------------------------
def groups(ctx: CheckContext) -> list[str]:
    return list(ctx.profile.spec["mailboxAttention"]["groups"])


def items(ctx: CheckContext, att: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in groups(ctx):
        rows = expect_list(ctx, att.get(name), f"mailbox_attention.{name}")
        ctx.expect(all(isinstance(r, dict) for r in rows), f"mailbox_attention.{name} holds non-objects: {json_excerpt(rows)}",
                   kind="malformed_answer")
        out += rows
    return out


def check_attn_summary(ctx: CheckContext) -> None:
    """inbox_summary answers with mailbox_attention (with and without notices_after)."""
    c = PlazaClient(ctx)
    c.invite(ALICE, BOB)
    for fields in ({}, {"notices_after": "0"}):
        with ctx.subcheck("notices_after" if fields else "no fields"):
            data = c.data_of(c.command("inbox_summary", fields, BOB), "inbox_summary")
            expect_mapping(ctx, data.get("mailbox_attention"), "inbox_summary: mailbox_attention")


def check_attn_shape(ctx: CheckContext) -> None:
    """mailbox_attention groups its items as the three groups; each item carries read_request."""
    c = PlazaClient(ctx)
    c.invite(ALICE, BOB)
    att = attention(c, BOB)
    got = items(ctx, att)
    ctx.expect(got, f"a pending invitation shows no attention item: {json_excerpt(att, 300)}")
    bare = [i for i in got if not isinstance(i.get("read_request"), dict)]
    ctx.expect(not bare, f"attention items without read_request: {json_excerpt(bare)}", kind="schema_mismatch")


def check_attn_bounds(ctx: CheckContext) -> None:
    """With more invitations than the scan: at most 4 items a group, counts within the 32 scanned."""
    c = PlazaClient(ctx)
    scan, most = limit(ctx, "attention_scan_count"), limit(ctx, "attention_items_count")
    seed(c, scan + 6, ALICE)
    att = attention(c, ALICE)
    for name in groups(ctx):
        rows = expect_list(ctx, att.get(name), f"mailbox_attention.{name}")
        ctx.expect(len(rows) <= most, f"mailbox_attention.{name} lists {len(rows)} items; at most {most}")
    count = att.get("pending_received_invitation_count")
    ctx.expect(isinstance(count, int) and count <= scan,
               f"pending_received_invitation_count {count!r} with {scan + 6} invitations: counts cover the bounded scan of {scan}")


def check_attn_overflow(ctx: CheckContext) -> None:
    """scan_truncated or more_attention_available says what the bounds left out, and only then."""
    c = PlazaClient(ctx)
    c.invite(CAROL, ALICE)
    flags = ctx.profile.spec["mailboxAttention"]["boundedObservation"]["moreFields"]
    with ctx.subcheck("within the bounds"):
        att = attention(c, ALICE, "inbox_summary with one invitation")
        ctx.expect(not any(att.get(f) is True for f in flags), f"one invitation, yet {[(f, att.get(f)) for f in flags]}")
    with ctx.subcheck("beyond the bounds"):
        seed(c, limit(ctx, "attention_scan_count") + 6, ALICE)
        att = attention(c, ALICE, "inbox_summary with more invitations than the scan")
        ctx.expect(any(att.get(f) is True for f in flags), f"{limit(ctx, 'attention_scan_count') + 7} invitations, yet "
                   f"{[(f, att.get(f)) for f in flags]}: the bounds left items out")


def check_attn_pending_count(ctx: CheckContext) -> None:
    """An invitation counts as pending whether or not it was opened."""
    c = PlazaClient(ctx)
    c.clear_pair(ALICE, BOB)  # counted after the clean-up, which may end an older invitation
    before = pending_count(c, BOB, "inbox_summary before the invitation")
    _, conn = c.invite(ALICE, BOB, clear=False)
    sent = pending_count(c, BOB, "inbox_summary after the invitation")
    ctx.expect(isinstance(sent, int) and isinstance(before, int) and sent == before + 1,
               f"pending_received_invitation_count went from {before!r} to {sent!r} with one invitation")
    page(c, BOB, conn, "the invitee opens the invitation")
    opened = pending_count(c, BOB, "inbox_summary after opening it")
    ctx.expect(opened == sent, f"pending_received_invitation_count went from {sent} to {opened!r} when the invitee opened "
               "the invitation: an opened invitation stays pending")


def check_attn_read_only(ctx: CheckContext) -> None:
    """Reading attention accepts nothing, replies nothing, grants nothing."""
    c = PlazaClient(ctx)
    text = text_of("invitation")
    _, conn = c.invite(ALICE, BOB, text)
    unchanged(c, "inbox_summary", {}, BOB)
    with ctx.subcheck("no acceptance"):
        ctx.expect(not c.text(ALICE, text_of("second"), context=conn).ok,
                   "after inbox_summary the inviter's second text was accepted: attention accepted the invitation", kind="state_changed")
    with ctx.subcheck("no reply"):
        got = bodies(ctx, page(c, ALICE, conn, "the inviter's read"), "the inviter's read")
        ctx.expect(got == [text], f"after inbox_summary the conversation holds {got}; only the invitation {text!r} was written",
                   kind="state_changed")


def check_attn_read_request(ctx: CheckContext) -> None:
    """An item's read_request, sent as a data command with the same identity, reads the item."""
    c = PlazaClient(ctx)
    text = text_of("invitation")
    _, conn = c.invite(ALICE, BOB, text)
    got = [i for i in items(ctx, attention(c, BOB)) if mentions(i, conn)]
    ctx.expect(got, f"no attention item names the pending invitation {conn}")
    reply = follow(c, got[0].get("read_request"), BOB, "the item's read_request")
    expect_result(ctx, reply, "the attention item's read_request")
    ctx.expect(mentions(reply.result, text), f"the item's read_request does not read the invitation {text!r}: {reply.describe()}")


def working_task(c: PlazaClient) -> dict[str, Any]:
    """Alice's working task in her connection with bob, and an invitation from carol waiting for her."""
    conn = c.befriend(ALICE, BOB)
    task = c.say(ALICE, conn, text_of("waiting"))
    c.invite(CAROL, ALICE)
    return c.task_of(c.get_task(str(task["id"]), ALICE), "GetTask of the working task")


def task_attention(c: PlazaClient, task: dict[str, Any]) -> list[Any]:
    """mailbox_attention where a working task may carry it: status.message data parts, or metadata."""
    parts = dig(task, "status", "message", "parts")
    found = [dig(p, "data", "mailbox_attention") for p in parts] if isinstance(parts, list) else []
    found.append(c.site_metadata(task).get("mailbox_attention"))
    return [a for a in found if isinstance(a, dict)]


def check_attn_locations(ctx: CheckContext) -> None:
    """A working task carries mailbox_attention (in status.message data or in metadata) and
    stays working while the attention concerns another conversation; inbox_summary's
    control Message carries it in a data part."""
    c = PlazaClient(ctx)
    task = working_task(c)
    ctx.expect(c.state_of(task) != COMPLETED, f"another agent's invitation completed alice's task: {c.state_of(task)}", kind="state_changed")
    ctx.expect(task_attention(c, task), f"the working task carries no mailbox_attention: {json_excerpt(task, 400)}")
    message = c.message_of(c.command("inbox_summary", {}), "inbox_summary")
    parts = message.get("parts")
    ctx.expect(isinstance(parts, list) and any(isinstance(dig(p, "data", "mailbox_attention"), dict) for p in parts),
               f"the inbox_summary Message carries no data.mailbox_attention: {json_excerpt(message)}")


def check_attn_focused(ctx: CheckContext) -> None:
    """focused_request keeps the original GetTask request: sent, it answers the same task."""
    c = PlazaClient(ctx)
    task = working_task(c)
    found = [v.get("focused_request") for v in walk(task) if isinstance(v, dict) and "focused_request" in v]
    ctx.expect(found, f"the working task carries no focused_request: {json_excerpt(task, 400)}")
    request = found[0]
    ctx.expect(mentions(request, str(task["id"])), f"focused_request {json_excerpt(request)} does not name the task {task['id']}")
    again = c.task_of(follow(c, request, ALICE, "focused_request"), "the focused_request")
    ctx.expect(again.get("id") == task["id"], f"focused_request answered task {again.get('id')!r}, not {task['id']}")


def check_attn_recheck(ctx: CheckContext) -> None:
    """Attention checks the contact controls again: a blocked inviter's item goes."""
    c = PlazaClient(ctx)
    _, conn = c.invite(CAROL, ALICE)
    ctx.expect(any(mentions(i, conn) for i in items(ctx, attention(c, ALICE))), f"no attention item names carol's invitation {conn}")
    with ctx.setup("alice blocks carol", by="PLAZA-FRIEND-CONTROL"):
        c.data_of(c.command("friend_control", {"connection_id": conn, "decision": "block"}, ALICE), "friend_control block")
    after = attention(c, ALICE, "inbox_summary after the block")
    ctx.expect(not any(mentions(i, conn) for i in items(ctx, after)),
               f"after alice blocked carol, attention still lists carol's invitation: {json_excerpt(after, 300)}")


# ----------------------------------------------------------------------------------------------
# durable receive
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


def triple(ctx: CheckContext, batch: dict[str, Any]) -> tuple[Any, Any, Any]:
    return batch.get("batch_id"), batch.get("view_id"), batch.get("receipt")


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


def kinds(item: dict[str, Any]) -> set[str]:
    return {v for v in item.values() if isinstance(v, str) and v in FRIEND_WORK}


def check_recv_pull(ctx: CheckContext) -> None:
    """A receive_pull over SendMessage returns the stored work as a batch at once; without limit at most 20 items."""
    c = PlazaClient(ctx)
    c.invite(ALICE, BOB)
    native = ctx.profile.spec["durableReceive"]["native"]["start"]
    started = time.monotonic()
    data = pull(c, BOB, fresh_id(), "receive_pull as native.start", limit=native["limit"], wait_seconds=native["wait_seconds"])
    ctx.expect(batch_items(ctx, data), f"receive_pull with a pending invitation returned no work: {json_excerpt(data, 300)}")
    ctx.expect(time.monotonic() - started < AT_ONCE_S + 1, "receive_pull with pending work waited before answering")
    default = batch_items(ctx, pull(c, BOB, fresh_id(), "receive_pull without limit"))
    ctx.expect(0 < len(default) <= 20, f"receive_pull without limit returned {len(default)} items; the default limit is 20")


def check_recv_batch_shape(ctx: CheckContext) -> None:
    """batch_id a UUID, view_id 64 lowercase hex, receipt 43 base64url characters, an
    ack_request, and items each with a read_request that works with the caller's credential."""
    c = PlazaClient(ctx)
    text = text_of("invitation")
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, text, clear=False)
    data = pull(c, BOB, key, "receive_pull")
    batch = batch_of(ctx, data)
    ctx.expect(batch is not None, f"receive_pull with a pending invitation returned no batch: {json_excerpt(data)}")
    assert batch is not None
    batch_id, view_id, receipt = triple(ctx, batch)
    with ctx.subcheck("batch fields"):
        ctx.expect(isinstance(batch_id, str) and UUID.match(batch_id) and isinstance(view_id, str) and VIEW_ID.match(view_id)
                   and isinstance(receipt, str) and RECEIPT.match(receipt),
                   f"batch_id {batch_id!r}, view_id {view_id!r}, receipt {receipt!r}: receive_ack takes a UUID, 64 lowercase hex "
                   "and 43 base64url characters", kind="schema_mismatch")
        ctx.expect(isinstance(data.get("ack_request") or batch.get("ack_request"), dict),
                   f"the batch carries no ack_request: {json_excerpt(data, 300)}", kind="schema_mismatch")
    with ctx.subcheck("item read_request"):
        got = batch_items(ctx, data)
        bare = [i for i in got if not isinstance(i.get("read_request"), dict)]
        ctx.expect(got and not bare, f"batch items without read_request: {json_excerpt(bare or got)}", kind="schema_mismatch")
        reply = follow(c, got[0]["read_request"], BOB, "the item's read_request")
        expect_result(ctx, reply, "the item's read_request")
        ctx.expect(mentions(reply.result, text), f"the item's read_request does not read the invitation {text!r}: {reply.describe()}")


def check_recv_shape(ctx: CheckContext) -> None:
    """The profile's receive answers: pull {client_key, batch, more_available, long_poll_allowed, ack_request},
    ack {acknowledged, batch_id, acknowledged_count}, status {client_key, pending_count, outstanding_batch_id}."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, clear=False)
    data = c.data_of(c.command("receive_pull", {"client_key": key}, BOB), "receive_pull",
                     ("client_key", "batch", "more_available", "long_poll_allowed", "ack_request"))
    batch = expect_mapping(ctx, data["batch"], "receive_pull batch", ("batch_id", "view_id", "receipt", "items"))
    status = c.data_of(c.command("receive_status", {"client_key": key}, BOB), "receive_status",
                       ("client_key", "pending_count", "outstanding_batch_id"))
    ctx.expect(status["client_key"] == key and status["outstanding_batch_id"] == batch["batch_id"]
               and status["pending_count"] == len(batch["items"]),
               f"receive_status {json_excerpt(status)} after a pull of {len(batch['items'])} items in batch {batch['batch_id']}",
               kind="schema_mismatch")
    done = c.data_of(ack(c, BOB, key, batch), "receive_ack", ("acknowledged", "batch_id", "acknowledged_count"))
    ctx.expect(done["acknowledged"] is True and done["batch_id"] == batch["batch_id"] and done["acknowledged_count"] == len(batch["items"]),
               f"receive_ack answered {json_excerpt(done)}", kind="schema_mismatch")
    status = c.data_of(c.command("receive_status", {"client_key": key}, BOB), "receive_status after the ack")
    ctx.expect(status.get("pending_count") == 0 and status.get("outstanding_batch_id") is None,
               f"receive_status after acknowledging everything: {json_excerpt(status)}", kind="schema_mismatch")


def check_recv_redeliver(ctx: CheckContext) -> None:
    """Until acknowledged, a pull delivers the same work again; after the ack, new work only."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    _, conn = c.invite(ALICE, BOB, clear=False)
    first = pull(c, BOB, key, "receive_pull")
    again = pull(c, BOB, key, "receive_pull again, without an ack")
    ctx.expect(item_keys(ctx, first) and item_keys(ctx, again) == item_keys(ctx, first),
               f"unacknowledged work {item_keys(ctx, first)} came back as {item_keys(ctx, again)}: the site keeps it until acknowledged")
    batch = batch_of(ctx, again)
    assert batch is not None
    expect_result(ctx, ack(c, BOB, key, batch), "receive_ack")
    c.accept(conn, BOB)
    c.say(ALICE, conn, text_of("new work"))
    after = item_keys(ctx, pull(c, BOB, key, "receive_pull after the ack"))
    ctx.expect(after and not set(after) & set(item_keys(ctx, first)),
               f"after the ack the pull returned {after}: new work only, not the acknowledged {item_keys(ctx, first)}")


def check_recv_redeliver_same(ctx: CheckContext) -> None:
    """The profile redelivers the very batch: same batch_id, view_id, receipt and items."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, clear=False)
    first, again = pull(c, BOB, key, "receive_pull"), pull(c, BOB, key, "receive_pull again")
    one, two = batch_of(ctx, first), batch_of(ctx, again)
    ctx.expect(one is not None and two is not None and triple(ctx, one) == triple(ctx, two) and one.get("items") == two.get("items"),
               f"the redelivered batch {json_excerpt(two)} differs from {json_excerpt(one)}", kind="schema_mismatch")


def ack_request(ctx: CheckContext, data: dict[str, Any]) -> Any:
    batch = batch_of(ctx, data) or {}
    return data.get("ack_request") or batch.get("ack_request")


def check_recv_ack(ctx: CheckContext) -> None:
    """The returned ack_request, sent as given, acknowledges the batch: the next pull has
    new work only, and receive_status no longer counts it."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, clear=False)
    data = pull(c, BOB, key, "receive_pull")
    got = item_keys(ctx, data)
    ctx.expect(got, f"receive_pull with a pending invitation returned no work: {json_excerpt(data)}")
    expect_result(ctx, follow(c, ack_request(ctx, data), BOB, "ack_request"), "the ack_request as given")
    after = pull(c, BOB, key, "receive_pull after the ack")
    ctx.expect(not set(item_keys(ctx, after)) & set(got), f"after the ack the pull still returns {item_keys(ctx, after)}")


def check_recv_ack_exact(ctx: CheckContext, strict: bool = False) -> None:
    """An ack whose batch_id, view_id or receipt is not the batch's is refused and acknowledges nothing."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, clear=False)
    data = pull(c, BOB, key, "receive_pull")
    batch = batch_of(ctx, data)
    ctx.expect(batch is not None, f"receive_pull with a pending invitation returned no batch: {json_excerpt(data)}")
    assert batch is not None
    other_view = "0" * 64 if batch.get("view_id") != "0" * 64 else "1" * 64
    other_receipt = "A" * 43 if batch.get("receipt") != "A" * 43 else "B" * 43
    for label, change in (("batch_id", {"batch_id": fresh_id()}), ("view_id", {"view_id": other_view}),
                          ("receipt", {"receipt": other_receipt}), ("client_key", {"client_key": fresh_id()})):
        with ctx.subcheck(f"another {label}"):
            refused_as(ctx, ack(c, BOB, key, batch, **change), "NOT_FOUND", f"receive_ack with another {label}", strict)
    again = pull(c, BOB, key, "receive_pull after the refused acks")
    ctx.expect(item_keys(ctx, again) == item_keys(ctx, data),
               f"after refused acks the pull returned {item_keys(ctx, again)}, not the pending {item_keys(ctx, data)}", kind="state_changed")


def check_recv_ack_repeat(ctx: CheckContext) -> None:
    """The same ack again (after a lost answer) succeeds again and acknowledges nothing more."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    _, conn = c.invite(ALICE, BOB, clear=False)
    batch = batch_of(ctx, pull(c, BOB, key, "receive_pull"))
    ctx.expect(batch is not None, "receive_pull with a pending invitation returned no batch")
    assert batch is not None
    expect_result(ctx, ack(c, BOB, key, batch), "receive_ack")
    c.accept(conn, BOB)
    c.say(ALICE, conn, text_of("new work"))
    pending = pull(c, BOB, key, "receive_pull of the new work")
    expect_result(ctx, ack(c, BOB, key, batch), "the same receive_ack again")
    after = pull(c, BOB, key, "receive_pull after the repeated ack")
    ctx.expect(item_keys(ctx, pending) and item_keys(ctx, after) == item_keys(ctx, pending),
               f"the repeated ack of the earlier batch changed the pending work {item_keys(ctx, pending)} to {item_keys(ctx, after)}",
               kind="state_changed")


def check_recv_status(ctx: CheckContext) -> None:
    """receive_status is served for the caller's receiver, fresh or in use."""
    c = PlazaClient(ctx)
    c.invite(ALICE, BOB)
    key = fresh_id()
    c.data_of(c.command("receive_status", {"client_key": key}, BOB), "receive_status of a fresh client_key")
    pull(c, BOB, key, "receive_pull")
    c.data_of(c.command("receive_status", {"client_key": key}, BOB), "receive_status after a pull")


def check_recv_wait(ctx: CheckContext, strict: bool = False) -> None:
    """wait_seconds 0 (and none) answers at once, a short wait returns, 26 is refused."""
    c = PlazaClient(ctx)
    top = limit(ctx, "wait_maximum_s")
    key = c.client_key(CAROL)
    drain(c, CAROL, key)
    for label, fields, most in (("no wait_seconds", {}, AT_ONCE_S), ("wait_seconds 0", {"wait_seconds": 0}, AT_ONCE_S),
                                ("wait_seconds 1", {"wait_seconds": 1}, 1 + AT_ONCE_S)):
        with ctx.subcheck(label):
            started = time.monotonic()
            data = pull(c, CAROL, key, f"receive_pull {label}", **fields)
            took = time.monotonic() - started
            ctx.expect(took < most, f"receive_pull {label} with nothing pending took {took:.1f} s (at most {most:.0f} s)")
            ctx.expect(not batch_items(ctx, data), f"receive_pull {label} with nothing pending returned work: {json_excerpt(data)}")
    with ctx.subcheck(f"wait_seconds {top + 1}"):
        c.invite(ALICE, CAROL)  # pending work: an accepted long wait would not hold the check up
        refused_as(ctx, c.command("receive_pull", {"client_key": key, "wait_seconds": top + 1}, CAROL), "A2A_INVALID_PARAMETERS",
                   f"receive_pull wait_seconds {top + 1}", strict)


def check_recv_more(ctx: CheckContext) -> None:
    """more_available while more work waits beyond the batch; not once it is all delivered."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB), (CAROL, BOB))
    c.invite(ALICE, BOB, clear=False)
    c.invite(CAROL, BOB, clear=False)
    data = pull(c, BOB, key, "receive_pull limit 1", limit=1)
    ctx.expect(len(batch_items(ctx, data)) == 1 and data.get("more_available") is True,
               f"receive_pull limit 1 with two invitations pending: {len(batch_items(ctx, data))} items, more_available "
               f"{data.get('more_available')!r}")
    for n in range(10):
        batch = batch_of(ctx, data)
        if batch is None or not batch_items(ctx, data):
            break
        if data.get("more_available") is not True:
            return
        expect_result(ctx, ack(c, BOB, key, batch), f"receive_ack {n + 1}")
        data = pull(c, BOB, key, f"receive_pull {n + 2}", limit=40)
    ctx.expect(data.get("more_available") is not True, f"with everything delivered more_available is {data.get('more_available')!r}")


def unavailable(ctx: CheckContext) -> list[str]:
    return list(ctx.profile.spec["durableReceive"]["private_chat"]["receive"]["cancel"]["unsupported_operation_names"])


def check_recv_cancel_unavailable(ctx: CheckContext, strict: bool = False) -> None:
    """receive_cancel and cancel_receive are refused, and the pending batch stays."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, clear=False)
    first = item_keys(ctx, pull(c, BOB, key, "receive_pull"))
    for name in unavailable(ctx):
        with ctx.subcheck(name):
            refused_as(ctx, c.command(name, {"client_key": key}, BOB), "A2A_INVALID_PARAMETERS", f"a {name} command", strict)
    again = item_keys(ctx, pull(c, BOB, key, "receive_pull after the cancel attempts"))
    ctx.expect(first and again == first, f"the pending batch {first} became {again} after the cancel attempts", kind="state_changed")


def check_recv_abort_retains(ctx: CheckContext) -> None:
    """A pull whose answer the client drops (no ack) leaves the batch pending and recalls no message."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 0)
    key = c.client_key(BOB)
    drain(c, BOB, key)
    text = text_of("kept")
    c.say(ALICE, conn, text)
    first = pull(c, BOB, key, "receive_pull (its answer dropped)")
    ctx.expect(item_keys(ctx, first), f"receive_pull after a text returned no work: {json_excerpt(first)}")
    with ctx.subcheck("batch kept"):
        again = pull(c, BOB, key, "receive_pull after the dropped answer")
        ctx.expect(item_keys(ctx, again) == item_keys(ctx, first),
                   f"after a dropped pull the work is {item_keys(ctx, again)}, not the pending {item_keys(ctx, first)}", kind="state_changed")
    with ctx.subcheck("message kept"):
        ctx.expect(text in bodies(ctx, page(c, BOB, conn, "read_conversation"), "read_conversation"),
                   f"the text {text!r} is gone after a dropped pull", kind="state_changed")


def check_recv_isolation(ctx: CheckContext, strict: bool = False) -> None:
    """A client_key selects the caller's own receiver: bob never sees alice's work through
    alice's key, and alice cannot acknowledge bob's batch."""
    c = PlazaClient(ctx)
    c.invite(CAROL, ALICE)
    c.invite(CAROL, BOB, text_of("for bob"))
    key = fresh_id()
    mine = pull(c, ALICE, key, "alice's receive_pull")
    theirs = pull(c, BOB, key, "bob's receive_pull with alice's client_key")
    with ctx.subcheck("pull"):
        shared = set(item_keys(ctx, mine)) & set(item_keys(ctx, theirs))
        one, two = batch_of(ctx, mine), batch_of(ctx, theirs)
        ctx.expect(not shared and not (one and two and one.get("batch_id") == two.get("batch_id")),
                   f"bob pulling with alice's client_key got alice's work {sorted(map(str, shared))}", kind="auth_not_enforced")
    with ctx.subcheck("ack"):
        batch = batch_of(ctx, theirs)
        ctx.expect(batch is not None, f"bob's pull returned no batch: {json_excerpt(theirs)}")
        assert batch is not None
        refused_as(ctx, ack(c, ALICE, key, batch), "NOT_FOUND", "alice acknowledging bob's batch", strict)
        again = pull(c, BOB, key, "bob's receive_pull after alice's ack")
        ctx.expect(item_keys(ctx, again) == item_keys(ctx, theirs), "alice's ack acknowledged bob's batch", kind="auth_not_enforced")


def check_recv_read_not_ack(ctx: CheckContext) -> None:
    """Reading history, the inbox, attention or a task acknowledges no receive batch."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    task, conn = c.invite(ALICE, BOB, clear=False)
    first = item_keys(ctx, pull(c, BOB, key, "receive_pull"))
    ctx.expect(first, "receive_pull with a pending invitation returned no work")
    page(c, BOB, conn, "bob reads the conversation")
    inbox(c, BOB, "bob's inbox")
    attention(c, BOB)
    c.get_task(str(task["id"]), ALICE)
    again = item_keys(ctx, pull(c, BOB, key, "receive_pull after the reads"))
    ctx.expect(again == first, f"after reading history the pending batch {first} became {again}: reading does not acknowledge",
               kind="state_changed")


def check_recv_a2a_follow(ctx: CheckContext) -> None:
    """A returned a2a_read_request or a2a_ack_request works when sent as given."""
    c = PlazaClient(ctx)
    text = text_of("invitation")
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, text, clear=False)
    data = pull(c, BOB, key, "receive_pull")
    reads = [v["a2a_read_request"] for v in walk(data) if isinstance(v, dict) and isinstance(v.get("a2a_read_request"), dict)]
    acks = [v["a2a_ack_request"] for v in walk(data) if isinstance(v, dict) and isinstance(v.get("a2a_ack_request"), dict)]
    if not reads and not acks:
        raise Untested("the target returned no a2a_read_request or a2a_ack_request to follow")
    if reads:
        with ctx.subcheck("a2a_read_request"):
            reply = follow(c, reads[0], BOB, "a2a_read_request")
            expect_result(ctx, reply, "the a2a_read_request as given")
            ctx.expect(mentions(reply.result, text), f"the a2a_read_request does not read the invitation {text!r}: {reply.describe()}")
    if acks:
        with ctx.subcheck("a2a_ack_request"):
            expect_result(ctx, follow(c, acks[0], BOB, "a2a_ack_request"), "the a2a_ack_request as given")
            after = item_keys(ctx, pull(c, BOB, key, "receive_pull after the a2a_ack_request"))
            ctx.expect(not set(after) & set(item_keys(ctx, data)), f"after the a2a_ack_request the work {after} is still pending")


def check_recv_work_friend(ctx: CheckContext) -> None:
    """Friend invitations, friend messages and friend channel changes arrive as work."""
    c = PlazaClient(ctx)
    c.clear_pair(ALICE, BOB)
    keys = {who: receiver(c, who) for who in (ALICE, BOB)}
    _, conn = c.invite(ALICE, BOB, clear=False)
    steps: list[tuple[str, str, Callable[[], Any]]] = [
        ("friend_invitation", BOB, lambda: None),
        ("friend_channel_change", ALICE, lambda: c.accept(conn, BOB)),
        ("friend_message", BOB, lambda: c.say(ALICE, conn, text_of("work"))),
    ]
    for kind, who, step in steps:
        with ctx.subcheck(kind):
            step()
            got = [i for i in batch_items(ctx, pull(c, who, keys[who], f"{who}'s receive_pull", limit=40)) if kind in kinds(i)]
            ctx.expect(got, f"{who}'s receive_pull holds no {kind} item after it happened")
            drain(c, who, keys[who])


# ----------------------------------------------------------------------------------------------
# the rows
# ----------------------------------------------------------------------------------------------
CODES = ("mailbox_codes_swapped",)


def rows(t: Table) -> list[Requirement]:
    """The mailbox requirements (read, message status, inbox, attention, durable receive)."""
    at, req, chosen = t.at, t.req, t.chosen

    def pair(rid: str, title: str, source: Any, check: Callable[..., None], faults: tuple[str, ...], error: str) -> list[Requirement]:
        return t.pair(rid, title, source, check, faults, error, CODES)

    return [
        # read_conversation
        req("PLAZA-READ", "MUST", "read_conversation is served to each participant and returns the conversation's texts",
            at(f"{READ}/operation"), check_read, ("read_drops_peer_messages",)),
        req("PLAZA-READ-SHAPE", "SHOULD", "A page is {connection_id, round_no, view, messages [record + text], has_more, ...}",
            chosen("docs/agent-plaza.md#results (read_conversation)"), check_read_shape, ("read_page_without_view",)),
        req("PLAZA-READ-ROUND", "MUST", "round_no defaults to the current round; a page read with round_no stays in that round",
            at(f"{READ}/round"), check_read_round, ("read_ignores_round", "read_default_first_round")),
        req("PLAZA-READ-VIEWS", "MUST", "Views history and latest are served; the default view is latest",
            at(f"{PAGING}/defaultView"), check_read_views, ("default_view_history",)),
        req("PLAZA-READ-FORWARD", "MUST", "An explicit after_seq selects forward history: exactly the messages with seq > after_seq",
            at(f"{PAGING}/after_seq"), check_read_forward, ("after_seq_inclusive",)),
        req("PLAZA-READ-BACKWARD", "MUST", "before_seq pages to the older messages of the latest view",
            at(f"{PAGING}/before_seq"), check_read_backward, ("before_seq_ignored",)),
        req("PLAZA-READ-ORDER", "MUST", "Every page is chronological, latest pages included",
            at(f"{PAGING}/order"), check_read_order, ("latest_newest_first",)),
        req("PLAZA-READ-LIMIT", "MUST", "A page holds 20 messages by default, limit when given, at most 50",
            at(f"{PAGING}/limitDefault"), check_read_limit, ("read_default_limit_wrong", "read_limit_plus_one")),
        req("PLAZA-READ-NEXT", "MUST", "While has_more a page carries next_request that continues exactly; forward pages next_after_seq, "
            "latest pages next_before_seq and has_older", at(f"{PAGING}/next"), check_read_next, ("next_request_repeats_page", "latest_without_has_older")),
        req("PLAZA-READ-SEQ-FORMAT", "MUST", "Seq cursors: canonical strings, safe integers normalised, unsafe numbers refused, "
            "9223372036854775807 accepted; returned cursors are canonical strings",
            at(f"/schemas/command/anyOf/{command_index(t, 'read_conversation')}/properties/after_seq"), check_seq_format,
            ("seq_number_refused", "unsafe_seq_accepted", "seq_max_refused")),
        req("PLAZA-READ-SEQ-ABOVE-MAX", "SHOULD", "A seq string above 9223372036854775807 is refused (the schema's pattern alone allows it)",
            at(f"{PAGING}/after_seq"), check_seq_above_max, ("seq_above_max_accepted",)),
        *pair("PLAZA-READ-SEQ-EXCLUSIVE", "before_seq combined with after_seq is refused", at(f"{PAGING}/before_seq"),
              check_seq_exclusive, ("seq_pair_accepted",), "A2A_INVALID_PARAMETERS"),
        req("PLAZA-READ-NO-SIDE-EFFECTS", "MUST", "A read accepts no invitation, marks nothing read, acknowledges no receive batch, completes no task",
            at(f"{READ}/semantics"), check_read_no_side_effects, ("read_accepts_invitation", "read_acks_receive")),
        *pair("PLAZA-READ-NOT-FOUND-ALIKE", "Missing and foreign conversations are refused alike (same code and reason)",
              at(f"{READ}/authorization"), check_read_not_found_alike, ("foreign_read_not_permitted",), "NOT_FOUND"),
        req("PLAZA-READ-RECHECK", "MUST", "Every read, replay and message_status rechecks contact controls: after a removal nothing is served",
            at(f"{READ}/authorization"), check_read_recheck, ("read_ignores_removal", "read_replay_cached")),
        # evidence and message_status
        req("PLAZA-EVIDENCE-FIELDS", "MUST", "Message records carry id, seq, created_at, sender, sender_kind, record_type message; a send has a send_receipt",
            at(f"{EVIDENCE}/common_fields"), check_evidence_fields, ("record_without_created_at", "receipt_record_type_wrong")),
        req("PLAZA-MSGSTATUS-STATES", "MUST", "message_status tells stored, peer_context_retrieval_observed and later_peer_message_observed apart",
            at("/messageStatus/distinguishes"), check_status_states, ("send_marks_retrieved", "retrieval_never_observed", "later_peer_not_observed")),
        req("PLAZA-MSGSTATUS-SHAPE", "SHOULD", "message_status answers message_id, seq, status and the three booleans",
            chosen("docs/agent-plaza.md#results (message_status)"), check_status_shape, ("status_without_flags",)),
        req("PLAZA-MSGSTATUS-LATEST", "MUST", "Without message_id message_status is about the caller's latest own message; with it, that message",
            at("/messageStatus/target"), check_status_latest, ("status_latest_any_sender",)),
        *pair("PLAZA-MSGSTATUS-OWN", "message_status never presents the peer's message as the caller's and serves only participants",
              at("/messageStatus/authority"), check_status_own, ("status_any_sender",), "NOT_FOUND"),
        req("PLAZA-MSGSTATUS-READ-ONLY", "MUST", "message_status changes nothing (it is no retrieval of the peer's messages)",
            at("/messageStatus/readOnly"), check_status_read_only, ("status_records_retrieval",)),
        req("PLAZA-MSGSTATUS-RETRIEVAL", "MUST", "Only the peer's authenticated read is a retrieval: not the sender's read, a refused read or a receive ack",
            at(f"{EVIDENCE}/retrieval_scope"), check_status_retrieval, ("own_read_marks_retrieved", "ack_marks_retrieved")),
        # inbox
        req("PLAZA-INBOX-VIEWS", "MUST", "inbox serves the compact and the full view, each listing the caller's conversations",
            at("/inboxPagination/view"), check_inbox_views, ("inbox_full_refused",)),
        req("PLAZA-INBOX-SHAPE", "SHOULD", "inbox answers view, conversations, next_page_request, notices, next_notices_request",
            chosen("docs/agent-plaza.md#results (inbox)"), check_inbox_shape, ("inbox_view_not_echoed",)),
        req("PLAZA-INBOX-LIMITS", "MUST", "An inbox page holds 20 conversations compact and 60 full by default, limit when given",
            at("/inboxPagination/defaultLimits"), check_inbox_limits, ("inbox_full_default_compact",)),
        req("PLAZA-INBOX-CURSOR", "MUST", "next_page_request carries before_updated_at and before_id together and pages through every conversation once",
            at("/inboxPagination/conversationCursor"), check_inbox_cursor, ("inbox_cursor_without_id",)),
        req("PLAZA-INBOX-NOTICES", "MUST", "Notices page by notices_after and next_notices_request, independently of the conversations",
            at("/inboxPagination/noticesCursor"), check_inbox_notices, ("notices_after_ignored",)),
        # attention
        req("PLAZA-ATTN-SUMMARY", "MUST", "inbox_summary answers with mailbox_attention",
            at(f"{ATTN}/summaryOperation"), check_attn_summary, ("summary_without_attention",)),
        req("PLAZA-ATTN-SHAPE", "MUST", "mailbox_attention holds the three item groups; each item carries read_request",
            at(f"{ATTN}/groups"), check_attn_shape, ("attention_item_without_read_request",)),
        req("PLAZA-ATTN-BOUNDS", "MUST", "Attention lists at most 4 items a group and counts within the scan of 32",
            at(f"{ATTN}/boundedObservation"), check_attn_bounds, ("attention_items_unbounded", "attention_scan_unbounded")),
        req("PLAZA-ATTN-OVERFLOW", "MUST", "scan_truncated or more_attention_available is true exactly when the bounds left work out",
            at(f"{ATTN}/boundedObservation/moreFields"), check_attn_overflow, ("attention_overflow_unflagged",)),
        req("PLAZA-ATTN-PENDING-COUNT", "MUST", "pending_received_invitation_count counts an invitation, opened or not",
            at(f"{ATTN}/pendingAndUnread"), check_attn_pending_count, ("opened_invitation_not_pending",)),
        req("PLAZA-ATTN-READ-ONLY", "MUST", "Reading attention accepts no invitation and sends no reply",
            at(f"{ATTN}/authority"), check_attn_read_only, ("summary_accepts_invitation",)),
        req("PLAZA-ATTN-READ-REQUEST", "MUST", "An attention item's read_request, sent as a data command, reads the item",
            at(f"{ATTN}/requestWrapping"), check_attn_read_request, ("attention_read_request_wrong_connection",)),
        req("PLAZA-ATTN-LOCATIONS", "MUST", "A working task carries mailbox_attention (status message or metadata) and stays working; "
            "control Messages carry it in a data part", at(f"{ATTN}/responseLocations"), check_attn_locations, ("working_task_without_attention",)),
        req("PLAZA-ATTN-FOCUSED", "MUST", "focused_request keeps the original GetTask request of the working task",
            at(f"{ATTN}/workingTask"), check_attn_focused, ("focused_request_other_task",)),
        req("PLAZA-ATTN-RECHECK", "MUST", "Attention rechecks contact controls: a blocked inviter's item is no longer listed",
            at(f"{ATTN}/authority/currentGrantAndContactRechecked"), check_attn_recheck, ("attention_ignores_blocks",)),
        # durable receive
        req("PLAZA-RECV-PULL", "MUST", "receive_pull over SendMessage returns the stored work at once; at most 20 items by default",
            at("/durableReceive/a2a/receive"), check_recv_pull, ("pull_returns_nothing",)),
        req("PLAZA-RECV-BATCH-SHAPE", "MUST", "A batch has a UUID batch_id, a 64-hex view_id, a 43-character receipt, an ack_request, "
            "items with working read_requests", at(f"{NATIVE}/consume"), check_recv_batch_shape, ("view_id_uppercase", "item_without_read_request")),
        req("PLAZA-RECV-SHAPE", "SHOULD", "receive_pull, receive_ack and receive_status answer the profile's fields",
            chosen("docs/agent-plaza.md#results (receive_pull, receive_ack, receive_status)"), check_recv_shape, ("status_stale_count",)),
        req("PLAZA-RECV-REDELIVER", "MUST", "Until acknowledged a pull delivers the same work again; after the ack new work only",
            at(f"{EVIDENCE}/redelivery_scope"), check_recv_redeliver, ("pull_consumes_without_ack",)),
        req("PLAZA-RECV-REDELIVER-SAME", "SHOULD", "A redelivered batch is the same batch: batch_id, view_id, receipt and items",
            chosen("docs/agent-plaza.md#durable-receive"), check_recv_redeliver_same, ("redelivery_new_batch_id",)),
        req("PLAZA-RECV-ACK", "MUST", "The returned ack_request, sent as given, acknowledges the batch",
            at(f"{NATIVE}/consume"), check_recv_ack, ("ack_does_not_advance",)),
        *pair("PLAZA-RECV-ACK-EXACT", "An ack with another batch_id, view_id, receipt or client_key is refused and acknowledges nothing",
              at(f"{NATIVE}/consume"), check_recv_ack_exact, ("ack_checks_batch_id_only",), "NOT_FOUND"),
        req("PLAZA-RECV-ACK-REPEAT", "MUST", "Repeating an ack succeeds again and acknowledges nothing more",
            at(f"{NATIVE}/consume"), check_recv_ack_repeat, ("repeat_ack_refused",)),
        req("PLAZA-RECV-STATUS", "MUST", "receive_status is served for the caller's receiver",
            at(f"/schemas/command/anyOf/{command_index(t, 'receive_status')}"), check_recv_status, ("receive_status_unserved",)),
        *pair("PLAZA-RECV-WAIT", "wait_seconds: none or 0 answers at once, a short wait returns, above 25 is refused",
              at(f"{RECEIVE}/single_request_wait_seconds"), check_recv_wait, ("no_wait_waits", "wait_above_maximum_accepted"),
              "A2A_INVALID_PARAMETERS"),
        req("PLAZA-RECV-MORE", "MUST", "more_available while more work waits beyond the batch, not once all is delivered",
            at(f"{NATIVE}/paging"), check_recv_more, ("more_available_never",)),
        *pair("PLAZA-RECV-CANCEL-UNAVAILABLE", "receive_cancel and cancel_receive are refused; the pending batch stays",
              at(f"{RECEIVE}/cancel"), check_recv_cancel_unavailable, ("receive_cancel_served",), "A2A_INVALID_PARAMETERS"),
        req("PLAZA-RECV-ABORT-RETAINS", "MUST", "A pull whose answer is dropped leaves the batch pending and recalls no message",
            at(f"{RECEIVE}/cancel/pending_batch_retained"), check_recv_abort_retains, ("pull_consumes_without_ack",)),
        *pair("PLAZA-RECV-ISOLATION", "A client_key selects the caller's own receiver: no other agent's work, no acking another's batch",
              at("/durableReceive/identity"), check_recv_isolation, ("receivers_shared_by_key",), "NOT_FOUND"),
        req("PLAZA-RECV-READ-NOT-ACK", "MUST", "Reading history, the inbox, attention or a task acknowledges no receive batch",
            at("/inboxPagination/globalAttention"), check_recv_read_not_ack, ("read_acks_receive",)),
        req("PLAZA-RECV-A2A-FOLLOW", "MUST", "A returned a2a_read_request or a2a_ack_request works when sent as given",
            at("/durableReceive/a2a/follow"), check_recv_a2a_follow, ("a2a_read_request_wrong_connection",)),
        req("PLAZA-RECV-WORK-FRIEND", "MUST", "Friend invitations, channel changes and messages arrive as receive work",
            at("/durableReceive/supported_work"), check_recv_work_friend, ("channel_changes_not_delivered",)),
    ]


def command_index(t: Table, name: str) -> int:
    """The position of a command's branch in /schemas/command/anyOf."""
    branches = t.profile.spec["schemas"]["command"]["anyOf"]
    return next(i for i, b in enumerate(branches) if dig(b, "properties", "operation", "const") == name)
