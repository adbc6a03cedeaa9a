"""Reading a conversation (read_conversation: views, rounds, seq cursors, limits, no side
effects, not-found alike, rechecks), message evidence and message_status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance import locate
from conformance.check import CheckContext
from conformance.checks.errors import (
    expect_list,
    expect_mapping,
    expect_refused,
    expect_result,
    refused_as,
)
from conformance.protocols.plaza.answers import (
    CANONICAL,
    INT64_MAX,
    LATER_PEER,
    RETRIEVED,
    SAFE_MAX,
    STORED,
    ack,
    ascending,
    batch_of,
    bodies,
    broken,
    conversation,
    drain,
    evidence,
    field,
    follow,
    ids,
    item_keys,
    limit,
    mentions,
    own_id,
    page,
    pull,
    reason_of,
    records,
    round_of,
    seq_of,
    seqs,
    text_in,
    text_of,
    walk,
)
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, COMPLETED, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.wire import served
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt


# ----------------------------------------------------------------------------------------------
# read_conversation
# ----------------------------------------------------------------------------------------------
def check_read(ctx: CheckContext) -> None:
    """read_conversation is served to both participants and returns the conversation's texts."""
    c = PlazaClient(ctx)
    conn, texts = conversation(c, 2)
    for who in (ALICE, BOB):
        with ctx.subcheck(f"read by {who}"):
            got = bodies(ctx, page(c, who, conn, f"read_conversation by {who}"), f"read_conversation by {who}", texts)
            missing = [t for t in texts if t not in got]
            ctx.expect(not missing, f"read_conversation by {who} returns no message record carrying the texts {missing} of the "
                       f"conversation (the records carry {got})")


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
        got = bodies(ctx, now, "read_conversation after a new round", (first, second))
        ctx.expect(round_of(ctx, now, "read_conversation after a new round") > old and second in got and first not in got,
                   f"without round_no the read must return the current round: round_no {field(now, 'round_no')!r}, texts {got} "
                   f"(the old round {old} held {first!r}, the new one {second!r})")
    with ctx.subcheck("pinned round"):
        pinned = page(c, ALICE, conn, f"read_conversation round_no {old}", round_no=old)
        got = bodies(ctx, pinned, f"read_conversation round_no {old}", (first, second))
        ctx.expect(field(pinned, "round_no") == old and first in got and second not in got,
                   f"read with round_no {old} after a new round opened: round_no {field(pinned, 'round_no')!r}, texts {got}; "
                   f"it must stay in round {old} ({first!r}) and return nothing of the new round ({second!r})")


def check_read_views(ctx: CheckContext) -> None:
    """Both views are served; without view the page is the latest view's."""
    c = PlazaClient(ctx)
    conn, texts = conversation(c, limit(ctx, "read_limit_default_count") + 3)
    latest = page(c, ALICE, conn, "read_conversation view latest", view="latest")
    default = page(c, ALICE, conn, "read_conversation without view")
    page(c, ALICE, conn, "read_conversation view history", view="history")
    got = bodies(ctx, latest, "view latest", texts)
    ctx.expect(texts[-1] in got, f"the latest view holds no message record carrying the newest text {texts[-1]!r}: {got}")
    ctx.expect(ids(ctx, default, "without view") == ids(ctx, latest, "view latest"),
               f"without view the page holds {bodies(ctx, default, 'without view', texts)}, the latest view {got}: the default view is latest")


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
    given = field(latest, "next_before_seq")
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
        ctx.expect(isinstance(field(first, "next_after_seq"), str),
                   f"a forward page with more to come has next_after_seq {field(first, 'next_after_seq')!r}: forward history returns it")
    with ctx.subcheck("latest"):
        latest = page(c, ALICE, conn, "latest page 1", view="latest", limit=5)
        ctx.expect(field(latest, "has_older") is True and isinstance(field(latest, "next_before_seq"), str),
                   f"a latest page with older messages has has_older {field(latest, 'has_older')!r} and next_before_seq "
                   f"{field(latest, 'next_before_seq')!r}: latest pages return both")
        if field(latest, "has_more") is True:
            walk_pages(c, latest, "latest", lambda prev, nxt: max(nxt) < min(prev))


def walk_pages(c: PlazaClient, first: dict[str, Any], label: str, continues: Callable[[list[int], list[int]], bool]) -> None:
    """Follow next_request while has_more: each page continues where the last ended, with no message twice."""
    ctx = c.ctx
    seen: list[int] = seqs(ctx, first, f"{label} page 1")
    current = first
    for n in range(2, 8):
        if field(current, "has_more") is not True:
            return
        request = field(current, "next_request")
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
            value = field(latest, name)
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
    served(ctx, c.command("read_conversation", {"connection_id": conn, "view": "history", "after_seq": "1"}),
           "read_conversation with after_seq alone", by="PLAZA-READ-FORWARD")
    for view in ("latest", "history"):
        with ctx.subcheck(view):
            refused_as(ctx, c.command("read_conversation", {"connection_id": conn, "view": view, "after_seq": "1", "before_seq": "3"}),
                       "A2A_INVALID_PARAMETERS", f"read_conversation view {view} with both after_seq and before_seq", strict)


def attention(c: PlazaClient, who: str, what: str = "inbox_summary") -> dict[str, Any]:
    """inbox_summary's mailbox_attention (the document's responseField), wherever the data puts it."""
    data = c.data_of(c.command("inbox_summary", {}, who), what)
    name = c.ctx.profile.spec["mailboxAttention"]["responseField"]
    return expect_mapping(c.ctx, field(data, name), f"{what}: looked for {name} anywhere in the data part: {json_excerpt(data)};")


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
    served(ctx, c.command("read_conversation", {"connection_id": conn}, ALICE), "a participant's read_conversation", by="PLAZA-READ")
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


def reports(data: Any, name: str) -> bool:
    """The answer reports ``name`` (one of the document's messageStatus.distinguishes), by
    content: as a value anywhere (a status, an entry of a list), or a member of that
    name set true."""
    return bool(locate.enum_values(data, [name])) or field(data, name) is True


def about(data: Any, message_id: str, other: str | None = None) -> bool:
    """A message_status answer is about ``message_id`` (it carries it, and not ``other``)."""
    return locate.holds(data, message_id) and not (other is not None and locate.holds(data, other))


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
        ctx.expect(about(data, second, first), f"message_status without message_id does not name the caller's latest own message "
                   f"{second} alone (its earlier one is {first}): {json_excerpt(data)}")
    with ctx.subcheck("with message_id"):
        data = msg_status(c, ALICE, conn, "message_status of the first message", first)
        ctx.expect(about(data, first, second), f"message_status with message_id {first} does not name that message alone: {json_excerpt(data)}")


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
        served(ctx, c.command("message_status", {"connection_id": conn}, ALICE), "the participant's message_status",
               by="PLAZA-MSGSTATUS-LATEST")
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
    """Message records carry the common evidence fields and the message record_type; a send
    answers with a receipt of the receipt record_type whose message has them too."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    texts = [text_of("evidence"), text_of("evidence reply")]
    task = c.say(ALICE, conn, texts[0])
    c.say(BOB, conn, texts[1])
    spec = evidence(ctx)
    common, message_type, receipt_type = spec["common_fields"], spec["message_record_type"], spec["receipt_record_type"]
    with ctx.subcheck("read pages"):
        answer = page(c, ALICE, conn, "read_conversation")
        found = [r for r in records(ctx, answer, "read_conversation") if text_in(r, texts)]
        ctx.expect(len(found) == len(texts), f"looked for the message records carrying {texts} (record_type {message_type!r}, or seq "
                   f"beside id) anywhere in the page and found {len(found)}: {json_excerpt(answer)}", kind="schema_mismatch")
        for record in found:
            missing = [f for f in common if record.get(f) in (None, "")]
            ctx.expect(not missing and record.get("record_type") == message_type,
                       f"a message record lacks {missing} or has record_type {record.get('record_type')!r}, not {message_type!r}: "
                       f"{json_excerpt(record)}", kind="schema_mismatch")
    with ctx.subcheck("send receipt"):
        receipts = deep_records(task, receipt_type)
        ctx.expect(receipts, f"looked for a record of record_type {receipt_type!r} anywhere in the answer to a text and found none: "
                   f"{json_excerpt(task, 400)}", kind="schema_mismatch")
        inner = receipts[0].get("message")
        message = inner if isinstance(inner, dict) else next(iter(deep_records(receipts[0], message_type)), None)
        missing = [f for f in common if not isinstance(message, dict) or message.get(f) in (None, "")]
        ctx.expect(receipts[0].get("message_sent") is True and not missing and dig(message, "record_type") == message_type,
                   f"the {receipt_type} {json_excerpt(receipts[0], 300)} lacks message_sent true or message fields {missing}",
                   kind="schema_mismatch")
