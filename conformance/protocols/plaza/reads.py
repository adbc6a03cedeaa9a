"""Reading a conversation (read_conversation: rounds, views, seq cursors, limits, paging, no
side effects, not-found alike, rechecks): each requirement declared on its check, with the
faults that prove it can fail.

The document names some answer fields (round_no, has_more, next_request, next_after_seq,
next_before_seq, has_older) but no container names: the MUST checks find messages wherever a
reasonable answer puts them (answers.py), and the profile's own page (docs/agent-plaza.md) is
a SHOULD of ``source: profile``. The mailbox's refusal-code fault, which the -CODE rows of
every mailbox part name (reads, evidence, receive), is here."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from conformance.checks.expect import expect_list, expect_refused, refused_as
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, fault, requirement
from conformance.kit.faults import answer, arguments, noop, replaces, setting
from conformance.protocols.plaza.answers import (
    CANONICAL,
    INT64_MAX,
    PAGING,
    PENDING_COUNT,
    READ,
    SAFE_MAX,
    ascending,
    attention,
    attention_member,
    bodies,
    broken,
    command_index,
    conversation,
    field,
    follow,
    ids,
    item_keys,
    mentions,
    page,
    pull,
    reason_of,
    records,
    round_of,
    seq_of,
    seqs,
    served,
    text_of,
)
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, COMPLETED, PlazaClient, fresh_id
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.shared_faults import CODES, unbounded
from conformance.protocols.plaza.site import (
    INVITATION,
    NOT_FOUND,
    NOT_PERMITTED,
    UNSUPPORTED_OPERATION,
    Call,
    Issue,
    Principal,
    SiteError,
)
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt

Data = dict[str, Any]
SEQ_FIELDS = ("after_seq", "before_seq")


# ----------------------------------------------------------------------------------------------
# refusal codes (the -CODE rows of reads, evidence and receive)
# ----------------------------------------------------------------------------------------------
SWAPPED = {NOT_FOUND: NOT_PERMITTED, "A2A_INVALID_PARAMETERS": UNSUPPORTED_OPERATION}


@fault
def mailbox_codes_swapped(ref: PlazaReference) -> None:
    """Refusals keep their place but carry another catalogued code: NOT_FOUND becomes
    NOT_PERMITTED and A2A_INVALID_PARAMETERS becomes UNSUPPORTED_OPERATION."""
    @replaces(ref.rpc_error)
    def rpc_error(original: Any, err: SiteError) -> Any:
        return original(SiteError(SWAPPED.get(err.name, err.name), err.message, err.metadata, err.status))


# ----------------------------------------------------------------------------------------------
# read_conversation
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-READ", level="MUST",
             title="read_conversation is served to each participant and returns the conversation's texts",
             source=at(f"{READ}/operation"),
             faults=[answer("read_drops_peer_messages", "cmd_read_conversation",
                            "A page holds only the caller's own messages.",
                            edit=lambda page, who, data: page.update(
                                messages=[m for m in page["messages"] if m["sender"] == who.visitor_id]))])
def check_read(ctx: CheckContext) -> None:
    """read_conversation is served to both participants and returns the conversation's texts."""
    c = PlazaClient(ctx)
    conn, texts = conversation(c, 2)
    for who in (ALICE, BOB):
        with ctx.subcheck(f"read by {who}"):
            got = bodies(ctx, page(c, who, conn, f"read_conversation by {who}"),
                         f"read_conversation by {who}", texts)
            missing = [t for t in texts if t not in got]
            ctx.expect(not missing, f"read_conversation by {who} returns no message record carrying the "
                       f"texts {missing} of the conversation (the records carry {got})")


@requirement(id="PLAZA-READ-SHAPE", level="SHOULD",
             title="A page is {{connection_id, round_no, view, messages [record + text], has_more, ...}}",
             source=chosen("docs/agent-plaza.md#results (read_conversation)"),
             faults=[answer("read_page_without_view", "cmd_read_conversation",
                            "A page does not say which view it is (the profile's page names it).",
                            drop=["view"])])
def check_read_shape(ctx: CheckContext) -> None:
    """The profile's page: connection_id, round_no, view, messages (records with text) and has_more."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 1)
    for view in ("latest", "history"):
        with ctx.subcheck(view):
            data = c.data_of(c.command("read_conversation", {"connection_id": conn, "view": view}),
                             f"read_conversation view {view}",
                             ("connection_id", "round_no", "view", "messages", "has_more"))
            ctx.expect(data["connection_id"] == conn and data["view"] == view,
                       f"the page names connection {data['connection_id']!r} view {data['view']!r}; "
                       f"asked {conn} {view}", kind="schema_mismatch")
            ctx.expect(all(isinstance(r, dict) and isinstance(r.get("text"), str)
                           for r in expect_list(ctx, data["messages"], "messages")),
                       f"page messages carry no text: {json_excerpt(data['messages'])}",
                       kind="schema_mismatch")


@requirement(id="PLAZA-READ-ROUND", level="MUST",
             title="round_no defaults to the current round; a page read with round_no stays in that round",
             source=at(f"{READ}/round"),
             faults=[arguments("read_ignores_round", "cmd_read_conversation",
                               "round_no is ignored: a pinned page moves to the current round.",
                               drop=["round_no"]),
                     arguments("read_default_first_round", "cmd_read_conversation",
                               "Without round_no the read returns round 1, not the current round.",
                               edit=lambda data: {"round_no": 1, **data})])
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
        c.data_of(c.command("respond", {"connection_id": conn, "decision": "complete", "round_no": old},
                            ALICE), "respond complete")
    second = text_of("round two")
    c.say(BOB, conn, second)
    with ctx.subcheck("default round"):
        now = page(c, ALICE, conn, "read_conversation after a new round")
        got = bodies(ctx, now, "read_conversation after a new round", (first, second))
        ctx.expect(round_of(ctx, now, "read_conversation after a new round") > old and second in got
                   and first not in got,
                   f"without round_no the read must return the current round: round_no "
                   f"{field(now, 'round_no')!r}, texts {got} "
                   f"(the old round {old} held {first!r}, the new one {second!r})")
    with ctx.subcheck("pinned round"):
        pinned = page(c, ALICE, conn, f"read_conversation round_no {old}", round_no=old)
        got = bodies(ctx, pinned, f"read_conversation round_no {old}", (first, second))
        ctx.expect(field(pinned, "round_no") == old and first in got and second not in got,
                   f"read with round_no {old} after a new round opened: round_no "
                   f"{field(pinned, 'round_no')!r}, texts {got}; "
                   f"it must stay in round {old} ({first!r}) and return nothing of the new round "
                   f"({second!r})")


@requirement(id="PLAZA-READ-VIEWS", level="MUST",
             title="Views history and latest are served; the default view is latest",
             source=at(f"{PAGING}/defaultView"),
             faults=[arguments("default_view_history", "cmd_read_conversation",
                               "Without view (and cursors) the page is the oldest history page, not the "
                               "latest.",
                               set={"view": "history"},
                               when=lambda who, data: not {"view", *SEQ_FIELDS} & set(data))])
def check_read_views(ctx: CheckContext) -> None:
    """Both views are served; without view the page is the latest view's."""
    c = PlazaClient(ctx)
    conn, texts = conversation(c, ctx.limit("read_limit_default_count") + 3)
    latest = page(c, ALICE, conn, "read_conversation view latest", view="latest")
    default = page(c, ALICE, conn, "read_conversation without view")
    page(c, ALICE, conn, "read_conversation view history", view="history")
    got = bodies(ctx, latest, "view latest", texts)
    ctx.expect(texts[-1] in got,
               f"the latest view holds no message record carrying the newest text {texts[-1]!r}: {got}")
    ctx.expect(ids(ctx, default, "without view") == ids(ctx, latest, "view latest"),
               f"without view the page holds {bodies(ctx, default, 'without view', texts)}, the latest view "
               f"{got}: the default view is latest")


@requirement(id="PLAZA-READ-FORWARD", level="MUST",
             title="An explicit after_seq selects forward history: exactly the messages with seq > after_seq",
             source=at(f"{PAGING}/after_seq"),
             faults=[arguments("after_seq_inclusive", "forward_page",
                               "Forward history includes the message at after_seq itself.",
                               index=1, edit=lambda after: after - 1)])
def check_read_forward(ctx: CheckContext) -> None:
    """An explicit after_seq selects forward history: exactly the messages with seq above
    it (with view history, and without any view)."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 6)
    latest = records(ctx, page(c, ALICE, conn, "read_conversation view latest", view="latest"), "view latest")
    ctx.expect(len(latest) >= 4, f"the latest page holds {len(latest)} messages after 6 texts",
               kind="malformed_answer")
    after = seq_of(ctx, latest[-4], "view latest")
    want = [r.get("id") for r in latest[-3:]]
    for label, fields in (("view history", {"view": "history"}), ("no view", {})):
        with ctx.subcheck(label):
            what = f"read_conversation after_seq {after} ({label})"
            forward = page(c, ALICE, conn, what, after_seq=str(after), **fields)
            got = seqs(ctx, forward, what)
            ctx.expect(all(s > after for s in got),
                       f"{what} returned seq {got}: only seq > after_seq belong to forward history")
            ctx.expect(ids(ctx, forward, what) == want,
                       f"{what} returned messages {ids(ctx, forward, what)}; the three after it are {want}")


@requirement(id="PLAZA-READ-BACKWARD", level="MUST",
             title="before_seq pages to the older messages of the latest view",
             source=at(f"{PAGING}/before_seq"))
def check_read_backward(ctx: CheckContext) -> None:
    """before_seq pages to the older messages of the latest view."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, ctx.limit("read_limit_default_count") + 4)
    latest = page(c, ALICE, conn, "read_conversation view latest", view="latest")
    newest = seqs(ctx, latest, "view latest")
    ctx.expect(newest, "the latest page is empty", kind="malformed_answer")
    given = field(latest, "next_before_seq")
    cursor = given if isinstance(given, str) and CANONICAL.match(given) else str(min(newest))
    what = f"read_conversation view latest before_seq {cursor}"
    older = seqs(ctx, page(c, ALICE, conn, what, view="latest", before_seq=cursor), what)
    ctx.expect(older, f"{what} is empty, though {len(newest)} newer messages leave older ones")
    ctx.expect(all(s < min(newest) and s < int(cursor) for s in older),
               f"{what} returned seq {older}: a before_seq page holds only messages older than the page "
               f"before ({min(newest)})")


@check_read_backward.fault
def before_seq_ignored(ref: PlazaReference) -> None:
    """before_seq is ignored: the older page is the latest page again."""
    @replaces(ref.latest_page)
    def latest(original: Any, messages: list[Data], before: int | None, limit: int, base: Data) -> Data:
        return dict(original(messages, None, limit, base))


@requirement(id="PLAZA-READ-ORDER", level="MUST", title="Every page is chronological, latest pages included",
             source=at(f"{PAGING}/order"),
             faults=[answer("latest_newest_first", "latest_page",
                            "Latest pages list the newest message first.",
                            edit=lambda page, *_: page.update(messages=page["messages"][::-1]))])
def check_read_order(ctx: CheckContext) -> None:
    """Every page is chronological: latest, history, forward and older pages."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, ctx.limit("read_limit_default_count") + 2)
    latest = page(c, ALICE, conn, "latest", view="latest")
    pages = {"view latest": latest, "view history": page(c, ALICE, conn, "history", view="history"),
             "forward from 0": page(c, BOB, conn, "forward", view="history", after_seq="0", limit=7)}
    got = seqs(ctx, latest, "view latest")
    if got:
        pages["older"] = page(c, BOB, conn, "older", view="latest", before_seq=str(max(got)), limit=5)
    for label, served_page in pages.items():
        with ctx.subcheck(label):
            ascending(ctx, served_page, f"read_conversation {label}")


@requirement(id="PLAZA-READ-LIMIT", level="MUST",
             title="A page holds {limits[read_limit_default_count]} messages by default, limit when given, "
                   "at most {limits[read_limit_maximum_count]}",
             source=at(f"{PAGING}/limitDefault"),
             faults=["read_default_limit_wrong",
                     arguments("read_limit_plus_one", "cmd_read_conversation",
                               "A page holds one message more than the limit asked for.",
                               edit=lambda data: data.update(limit=data["limit"] + 1),
                               when=lambda who, data: "limit" in data)])
def check_read_limit(ctx: CheckContext) -> None:
    """A page holds the default count without limit, exactly limit with one, and the maximum at most."""
    c = PlazaClient(ctx)
    default, maximum = ctx.limit("read_limit_default_count"), ctx.limit("read_limit_maximum_count")
    conn, _ = conversation(c, maximum + 1)
    for label, fields, want in (("no limit", {}, default), ("limit 3", {"limit": 3}, 3),
                                (f"limit {maximum}", {"limit": maximum}, maximum)):
        for view in ("latest", "history"):
            with ctx.subcheck(f"{label}, view {view}"):
                what = f"read_conversation view {view} {label}"
                got = records(ctx, page(c, ALICE, conn, what, view=view, **fields), what)
                ctx.expect(len(got) == want, f"{what} returned {len(got)} messages of more than {maximum}; "
                           f"the page must hold {want}")


@check_read_limit.fault
def read_default_limit_wrong(ref: PlazaReference) -> None:
    """Without limit a page holds the maximum (50), not the default (20)."""
    @replaces(ref.cmd_read_conversation)
    def read(original: Any, who: Principal, data: Data) -> Data:
        return dict(original(who, {"limit": ref.limit("read_limit_maximum_count"), **data}))


def repeat_after_seq(page: Data, messages: list[Data], after: int, *_: Any) -> None:
    """A fault's edit: a forward page whose next_request asks for the page's own after_seq."""
    if page.get("next_request"):
        page["next_request"]["after_seq"] = str(after)


@requirement(id="PLAZA-READ-NEXT", level="MUST",
             title="While has_more a page carries next_request that continues exactly; forward pages "
                   "next_after_seq, latest pages next_before_seq and has_older",
             source=at(f"{PAGING}/next"),
             faults=[answer("next_request_repeats_page", "forward_page",
                            "A forward page's next_request carries the page's own after_seq: it returns the "
                            "same page.", edit=repeat_after_seq),
                     answer("latest_without_has_older", "latest_page",
                            "Latest pages say has_older false although older messages exist.",
                            set={"has_older": False})])
def check_read_next(ctx: CheckContext) -> None:
    """While has_more a page carries next_request, which continues exactly where the page
    ended; forward pages carry next_after_seq, latest pages next_before_seq and has_older."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 12, fresh=True)  # the pages count: no older messages
    with ctx.subcheck("forward"):
        first = page(c, ALICE, conn, "forward page 1", view="history", after_seq="0", limit=5)
        walk_pages(c, first, "forward", lambda prev, nxt: min(nxt) > max(prev))
        ctx.expect(isinstance(field(first, "next_after_seq"), str),
                   f"a forward page with more to come has next_after_seq {field(first, 'next_after_seq')!r}: "
                   "forward history returns it")
    with ctx.subcheck("latest"):
        latest = page(c, ALICE, conn, "latest page 1", view="latest", limit=5)
        ctx.expect(field(latest, "has_older") is True and isinstance(field(latest, "next_before_seq"), str),
                   f"a latest page with older messages has has_older {field(latest, 'has_older')!r} and "
                   f"next_before_seq {field(latest, 'next_before_seq')!r}: latest pages return both")
        if field(latest, "has_more") is True:
            walk_pages(c, latest, "latest", lambda prev, nxt: max(nxt) < min(prev))


def walk_pages(c: PlazaClient, first: dict[str, Any], label: str,
               continues: Callable[[list[int], list[int]], bool]) -> None:
    """Follow next_request while has_more: each page continues where the last ended, with no message twice."""
    ctx = c.ctx
    seen: list[int] = seqs(ctx, first, f"{label} page 1")
    current = first
    for n in range(2, 8):
        if field(current, "has_more") is not True:
            return
        request = field(current, "next_request")
        ctx.expect(isinstance(request, dict),
                   f"{label} page {n - 1} has has_more true but next_request {json_excerpt(request)}",
                   kind="malformed_answer")
        nxt = c.data_of(follow(c, request, ALICE, f"next_request of {label} page {n - 1}"),
                        f"{label} page {n} (next_request)")
        got = seqs(ctx, nxt, f"{label} page {n}")
        prev = seqs(ctx, current, f"{label} page {n - 1}")
        ctx.expect(got and prev and continues(prev, got) and not set(got) & set(seen),
                   f"following next_request of {label} page {n - 1} (seq {prev}) returned seq {got}: it must "
                   "continue exactly where the page ended")
        seen += got
        current = nxt
    broken(f"{label}: has_more still true after 7 pages of a 13-message conversation", kind="expectation")


def integers_refused(found: list[Issue], data: Data, base: str) -> list[Issue]:
    """A fault's edit: the semantic issues of a command, with a seq cursor that is a JSON
    integer as one more (a type issue)."""
    return found + [Issue(f"{base}.{k}", "type") for k in SEQ_FIELDS
                    if isinstance(data.get(k), int) and data["operation"] == "read_conversation"]


@requirement(id="PLAZA-READ-SEQ-FORMAT", level="MUST",
             title="Seq cursors: canonical strings, safe integers normalised, unsafe numbers refused, "
                   "{limits[seq_maximum_count]} accepted; returned cursors are canonical strings",
             source=lambda profile: at(f"/schemas/command/anyOf/{command_index(profile, 'read_conversation')}"
                                       "/properties/after_seq"),
             faults=[answer("seq_number_refused", "command_semantic_issues",
                            "after_seq / before_seq as safe JSON integers are refused instead of normalised.",
                            edit=integers_refused)])
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
                       f"{name} {value!r} is not a canonical decimal string (callers use the exact returned "
                       "string)")
    for name, fields in (("after_seq", {"view": "history"}), ("before_seq", {"view": "latest"})):
        cursor = got[0] if name == "after_seq" else got[-1]
        with ctx.subcheck(f"{name} as a safe integer"):
            text = page(c, ALICE, conn, f"{name} {cursor!r} as a string", **{name: str(cursor)}, **fields)
            number = page(c, ALICE, conn, f"{name} {cursor} as a JSON number", **{name: cursor}, **fields)
            ctx.expect(ids(ctx, number, "number") == ids(ctx, text, "string"),
                       f"{name} {cursor} as a number returned {ids(ctx, number, 'number')}, as a string "
                       f"{ids(ctx, text, 'string')}: safe integers are accepted and normalised")
        with ctx.subcheck(f"{name} as an unsafe number"):
            expect_refused(ctx, c.command("read_conversation",
                                          {"connection_id": conn, name: SAFE_MAX + 2, **fields}),
                           f"read_conversation {name} {SAFE_MAX + 2} (a JSON number above 2^53-1)")
    with ctx.subcheck("the string maximum"):
        top = page(c, ALICE, conn, f"after_seq {INT64_MAX}", view="history", after_seq=str(INT64_MAX))
        ctx.expect(records(ctx, top, "after_seq maximum") == [],
                   f"after_seq {INT64_MAX} returned messages: {json_excerpt(top)}")


@check_seq_format.fault
def unsafe_seq_accepted(ref: PlazaReference) -> None:
    """after_seq / before_seq numbers above 2^53-1 are accepted (their schema maximum is dropped)."""
    for name in SEQ_FIELDS:
        unbounded(ref, "read_conversation", name)


@check_seq_format.fault
def seq_max_refused(ref: PlazaReference) -> None:
    """The stated maximum 9223372036854775807 itself is refused (an off-by-one cap)."""
    ref.seq_maximum -= 1


@requirement(id="PLAZA-READ-SEQ-ABOVE-MAX", level="SHOULD",
             title="A seq string above {limits[seq_maximum_count]} is refused (the schema's pattern alone "
                   "allows it)",
             source=at(f"{PAGING}/after_seq"),
             faults=[setting("seq_above_max_accepted", "seq_maximum", 10**19 - 1,
                             "Seq strings above 9223372036854775807 are accepted (only the schema's 19-digit "
                             "pattern is checked).")])
def check_seq_above_max(ctx: CheckContext) -> None:
    """The prose caps seq strings at 9223372036854775807 (the schema pattern alone would
    allow 19 digits above it)."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    for name in ("after_seq", "before_seq"):
        with ctx.subcheck(name):
            expect_refused(ctx, c.command("read_conversation",
                                          {"connection_id": conn, name: str(INT64_MAX + 1)}),
                           f"read_conversation {name} {INT64_MAX + 1} (above the stated maximum)")


@requirement(id="PLAZA-READ-SEQ-EXCLUSIVE", level="MUST",
             title="before_seq combined with after_seq is refused",
             source=at(f"{PAGING}/before_seq"), code="A2A_INVALID_PARAMETERS", code_faults=CODES,
             faults=[answer("seq_pair_accepted", "command_semantic_issues",
                            "after_seq and before_seq together are served (as forward history) instead of "
                            "refused.",
                            edit=lambda found, *_: [i for i in found if i.code != "not"])])
def check_seq_exclusive(ctx: CheckContext, strict: bool = False) -> None:
    """before_seq and after_seq together are refused."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 3)
    served(ctx, c.command("read_conversation", {"connection_id": conn, "view": "history", "after_seq": "1"}),
           "read_conversation with after_seq alone", by="PLAZA-READ-FORWARD")
    for view in ("latest", "history"):
        with ctx.subcheck(view):
            refused_as(ctx, c.command("read_conversation", {"connection_id": conn, "view": view,
                                                            "after_seq": "1", "before_seq": "3"}),
                       "A2A_INVALID_PARAMETERS",
                       f"read_conversation view {view} with both after_seq and before_seq", strict)


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


@requirement(id="PLAZA-READ-NO-SIDE-EFFECTS", level="MUST",
             title="A read accepts no invitation, marks nothing read, acknowledges no receive batch, "
                   "completes no task",
             source=at(f"{READ}/semantics"))
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
                   "after the invitee read the pending invitation the inviter's second text was accepted: "
                   "the read accepted it", kind="state_changed")
        counts = [attention_member(a, PENDING_COUNT) for a in (att, after)]  # wherever the attention has it
        ctx.expect(counts[0] == counts[1],
                   f"{PENDING_COUNT} went from {counts[0]!r} to {counts[1]!r} with a read (each looked for "
                   "anywhere in mailbox_attention)", kind="state_changed")
    with ctx.subcheck("nothing marked read"):
        ctx.expect(unread_counts(after) == unread_counts(att),
                   f"unread counts went from {unread_counts(att)} to {unread_counts(after)} with a read "
                   "(read_state_updated: false)", kind="state_changed")
    with ctx.subcheck("no receive batch acknowledged"):
        again = pull(c, BOB, key, "receive_pull after the read")
        ctx.expect(item_keys(ctx, again) == item_keys(ctx, pulled) and item_keys(ctx, pulled),
                   f"the pending receive batch {item_keys(ctx, pulled)} came back as {item_keys(ctx, again)} "
                   "after a read", kind="state_changed")
    with ctx.subcheck("no task completed"):
        task = c.task_of(c.get_task(str(invitation["id"]), ALICE), "GetTask of the invitation")
        ctx.expect(c.state_of(task) != COMPLETED,
                   f"the inviter's task became {c.state_of(task)} when the invitee only read",
                   kind="state_changed")


@check_read_no_side_effects.fault
def read_accepts_invitation(ref: PlazaReference) -> None:
    """The invitee's read of a pending invitation accepts it."""
    @replaces(ref.cmd_read_conversation)
    def read(original: Any, who: Principal, data: Data) -> Data:
        page: Data = original(who, data)
        conn = ref.s["connections"][data["connection_id"]]
        if conn["state"] == INVITATION and conn["invitee"] == who.visitor_id:
            ref.respond_accept(conn, who.visitor_id, {})
        return page


@check_read_no_side_effects.fault
def read_acks_receive(ref: PlazaReference) -> None:
    """A read acknowledges the caller's outstanding receive batches."""
    @replaces(ref.cmd_read_conversation)
    def read(original: Any, who: Principal, data: Data) -> Data:
        page: Data = original(who, data)
        for key, receiver in ref.s["receivers"].items():
            batch = receiver["outstanding"]
            if key.startswith(f"{who.visitor_id}|") and batch is not None:
                receiver["acked"] += len(batch["items"])
                receiver["last_acked"], receiver["outstanding"] = batch, None
        return page


@requirement(id="PLAZA-READ-NOT-FOUND-ALIKE", level="MUST",
             title="Missing and foreign conversations are refused alike (same code and reason)",
             source=at(f"{READ}/authorization"), code="NOT_FOUND", code_faults=CODES)
def check_read_not_found_alike(ctx: CheckContext, strict: bool = False) -> None:
    """A stranger's read of a foreign conversation and a read of a missing one are refused alike."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 1)
    served(ctx, c.command("read_conversation", {"connection_id": conn}, ALICE),
           "a participant's read_conversation", by="PLAZA-READ")
    foreign = c.command("read_conversation", {"connection_id": conn}, CAROL)
    missing = c.command("read_conversation", {"connection_id": fresh_id()}, CAROL)
    alike(ctx, foreign, missing, "read_conversation", strict)


@check_read_not_found_alike.fault
def foreign_read_not_permitted(ref: PlazaReference) -> None:
    """A foreign conversation is refused NOT_PERMITTED, a missing one NOT_FOUND: the answer tells them apart."""  # noqa: E501
    @replaces(ref.readable_connection)
    def readable(original: Any, caller: str, connection_id: str) -> Data:
        conn = ref.s["connections"].get(connection_id)
        if conn is not None and caller not in (conn["inviter"], conn["invitee"]):
            raise SiteError(NOT_PERMITTED, "this conversation is not yours")
        return dict(original(caller, connection_id))


def alike(ctx: CheckContext, foreign: Reply, missing: Reply, what: str, strict: bool) -> None:
    refused_as(ctx, foreign, "NOT_FOUND", f"{what} of other agents' conversation", strict)
    refused_as(ctx, missing, "NOT_FOUND", f"{what} of a conversation that does not exist", strict)
    ctx.expect(foreign.error_code == missing.error_code and reason_of(foreign) == reason_of(missing),
               f"{what}: a foreign conversation is refused with {foreign.error_code} {reason_of(foreign)!r}, "
               f"a missing one with {missing.error_code} {reason_of(missing)!r}: both must answer not found "
               "alike", kind="wrong_error_code")


@requirement(id="PLAZA-READ-RECHECK", level="MUST",
             title="Every read, replay and message_status rechecks contact controls: after a removal nothing "
                   "is served",
             source=at(f"{READ}/authorization"),
             faults=[noop("read_ignores_removal", "check_can_read",
                          "Reads skip the contact controls: a removed (or blocked) connection stays "
                          "readable.")])
def check_read_recheck(ctx: CheckContext) -> None:
    """Every read and replay checks the contact controls again: after the peer removes the
    connection, a read (and the replay of an earlier read) no longer serves the history."""
    c = PlazaClient(ctx)
    conn, texts = conversation(c, 1)
    message_id = fresh_id()
    first = c.command("read_conversation", {"connection_id": conn}, ALICE, message_id=message_id)
    c.data_of(first, "read_conversation before the removal")
    with ctx.setup("bob removes alice", by="PLAZA-FRIEND-CONTROL"):
        c.data_of(c.command("friend_control", {"connection_id": conn, "decision": "remove"}, BOB),
                  "friend_control remove")
    reads = {"a new read": c.command("read_conversation", {"connection_id": conn}, ALICE),
             "the replayed read": c.command("read_conversation", {"connection_id": conn}, ALICE,
                                            message_id=message_id)}
    for label, reply in reads.items():
        with ctx.subcheck(label):
            ctx.expect(not reply.ok or not any(mentions(reply.result, t) for t in texts),
                       f"{label} after the peer removed the connection still serves its history: "
                       f"{reply.describe()}", kind="auth_not_enforced")
    with ctx.subcheck("message_status"):
        status = c.command("message_status", {"connection_id": conn}, ALICE)
        ctx.expect(reads["a new read"].ok or not status.ok,
                   f"after the removal a read is refused but message_status is served: {status.describe()}; "
                   "it applies the same checks as reads", kind="auth_not_enforced")


@check_read_recheck.fault
def read_replay_cached(ref: PlazaReference) -> None:
    """A replayed read_conversation (same messageId) answers the stored page instead of rechecking."""
    cache: dict[str, Any] = {}

    @replaces(ref.run_command)
    def run(original: Any, call: Call, message: Data, data: Data) -> Any:
        key = ref.message_id_key(call.principal.visitor_id, message["messageId"])
        if data.get("operation") != "read_conversation":
            return original(call, message, data)
        if key not in cache:
            cache[key] = original(call, message, data)
        return copy.deepcopy(cache[key])
