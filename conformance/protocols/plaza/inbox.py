"""The inbox (compact and full views, limits, the paired cursor, notices) and mailbox
attention (inbox_summary, the working-task locations, bounds, read requests, rechecks)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from conformance import locate
from conformance.check import CheckContext
from conformance.checks.errors import (
    expect_list,
    expect_mapping,
    expect_result,
)
from conformance.protocols.plaza.answers import (
    bodies,
    conversation,
    field,
    follow,
    limit,
    mentions,
    page,
    text_of,
    walk,
)
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, COMPLETED, PlazaClient, dig
from conformance.protocols.plaza.reads import (
    attention,
    pending_count,
    unchanged,
)
from conformance.transport.http import json_excerpt


# ----------------------------------------------------------------------------------------------
# inbox
# ----------------------------------------------------------------------------------------------
def inbox(c: PlazaClient, who: str, what: str, **fields: Any) -> dict[str, Any]:
    return c.data_of(c.command("inbox", fields, who), what)


def inbox_lists(answer: Any, owned: Iterable[str] = ()) -> tuple[list[Any] | None, list[Any] | None]:
    """The conversation and notice lists of an inbox page, by content (the document names
    the two cursors, not the lists): the list whose last entry carries next_page_request's
    before_id is the conversations' (the cursor names the page's last conversation), the
    one whose last entry carries next_notices_request's notices_after the notices'; a list
    a cursor does not name is the one, of the others, holding most of ``owned`` (the
    connection ids the check created)."""
    before_id = field(field(answer, "next_page_request"), "before_id")
    after = field(field(answer, "next_notices_request"), "notices_after")
    convs, notes = ending_with(answer, before_id, after), ending_with(answer, after, before_id)
    wanted = set(owned)

    def hits(items: list[Any]) -> int:
        return sum(1 for r in items if isinstance(r, dict) and any(locate.holds(r, w) for w in wanted))

    rest = sorted((items for items in locate.lists_of(answer) if items is not convs and items is not notes and hits(items)),
                  key=hits, reverse=True)
    if convs is None and rest:
        convs = rest.pop(0)
    if notes is None and rest:
        notes = rest.pop(0)
    return convs, notes


def conversations(ctx: CheckContext, answer: dict[str, Any], what: str, owned: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The conversation rows of an inbox page (inbox_lists)."""
    found = inbox_lists(answer, owned)[0]
    return [r for r in found or [] if isinstance(r, dict)]


ending_with = locate.ending_with


def seed(c: PlazaClient, count: int, invite: str) -> list[str]:
    """``count`` new visitors, each inviting ``invite`` (control seed_agents): the
    connection ids the check made (what it may count)."""
    made = (c.ctx.control("seed_agents", count=count, invite=invite).json() or {}).get("agents")
    return [str(a["connection_id"]) for a in made or [] if isinstance(a, dict) and a.get("connection_id")]


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
    """A compact page holds 20 conversations by default, a full page 60; limit asks for
    fewer (counted over the conversations the check made)."""
    c = PlazaClient(ctx)
    compact, full = limit(ctx, "inbox_compact_default_count"), limit(ctx, "inbox_full_default_count")
    owned = seed(c, full + 1, ALICE)
    for view, fields, want in (("compact", {}, compact), ("full", {}, full), ("compact", {"limit": 7}, 7), ("full", {"limit": 7}, 7)):
        label = f"view {view}" + (f" limit {fields['limit']}" if fields else "")
        with ctx.subcheck(label):
            got = [i for i in conversation_ids(ctx, inbox(c, ALICE, f"inbox {label}", view=view, **fields), f"inbox {label}", owned)
                   if i in owned]
            ctx.expect(len(got) == want, f"inbox {label} lists {len(got)} of the {full + 1} conversations the check made, expected {want}")


def conversation_ids(ctx: CheckContext, answer: dict[str, Any], what: str, owned: Iterable[str] = ()) -> list[Any]:
    """Which of ``owned`` (connection ids the check made) each conversation row carries
    (the row itself, quoted, where it carries none)."""
    wanted = list(owned)
    return [next((o for o in wanted if locate.holds(r, o)), json_excerpt(r, 1000)) for r in conversations(ctx, answer, what, wanted)]


def check_inbox_cursor(ctx: CheckContext) -> None:
    """next_page_request carries before_updated_at and before_id together; following it
    pages through every conversation once (the 25 the check made)."""
    c = PlazaClient(ctx)
    owned = seed(c, 25, ALICE)
    current = inbox(c, ALICE, "inbox page 1", view="compact", limit=10)
    seen = conversation_ids(ctx, current, "inbox page 1", owned)
    for n in range(2, 8):
        request = field(current, "next_page_request")
        if not request:
            break
        ctx.expect(isinstance(field(request, "before_updated_at"), str) and isinstance(field(request, "before_id"), str),
                   f"next_page_request of page {n - 1} does not carry before_updated_at and before_id together: {json_excerpt(request)}")
        current = c.data_of(follow(c, request, ALICE, f"next_page_request of page {n - 1}"), f"inbox page {n}")
        got = conversation_ids(ctx, current, f"inbox page {n}", owned)
        twice = set(got) & set(seen)
        ctx.expect(got and not twice, f"inbox page {n} (next_page_request) lists {len(got)} conversations, {len(twice)} of them already seen")
        seen += got
    reached = set(seen) & set(owned)
    ctx.expect(len(reached) == len(owned), f"paging the inbox by next_page_request reached {len(reached)} of the {len(owned)} conversations "
               "the check made")


def notice_keys(ctx: CheckContext, answer: dict[str, Any], what: str, owned: Iterable[str] = ()) -> list[Any]:
    """The notices of a page (inbox_lists), each as its canonical JSON."""
    rows = inbox_lists(answer, owned)[1]
    return [json.dumps(r, sort_keys=True) for r in rows or []]


def check_inbox_notices(ctx: CheckContext) -> None:
    """Notices page by notices_after and next_notices_request, independently of the
    conversations: each cursor moves its own list and leaves the other where it was."""
    c = PlazaClient(ctx)
    owned = seed(c, 12, ALICE)
    first = inbox(c, ALICE, "inbox page 1", view="compact", limit=5)
    notes, convs = notice_keys(ctx, first, "inbox page 1", owned), conversation_ids(ctx, first, "inbox page 1", owned)
    with ctx.subcheck("next_notices_request"):
        request = field(first, "next_notices_request")
        ctx.expect(isinstance(request, dict), f"12 invitations in pages of 5, yet next_notices_request is {json_excerpt(request)}")
        more = c.data_of(follow(c, request, ALICE, "next_notices_request"), "inbox (next_notices_request)")
        got = notice_keys(ctx, more, "inbox (next_notices_request)", owned)
        ctx.expect(got and not set(got) & set(notes), f"next_notices_request returned notices {got} after {notes}: "
                   "it must continue after the page's notices")
        ctx.expect(conversation_ids(ctx, more, "inbox (next_notices_request)", owned) == convs,
                   "following next_notices_request moved the conversation list: the two cursors are independent")
    with ctx.subcheck("next_page_request"):
        request = field(first, "next_page_request")
        ctx.expect(isinstance(request, dict), f"12 conversations in pages of 5, yet next_page_request is {json_excerpt(request)}")
        more = c.data_of(follow(c, request, ALICE, "next_page_request"), "inbox (next_page_request)")
        ctx.expect(notice_keys(ctx, more, "inbox (next_page_request)", owned) == notes,
                   f"following next_page_request moved the notices from {notes} to "
                   f"{notice_keys(ctx, more, 'inbox (next_page_request)', owned)}: the two cursors are independent")


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
            name = ctx.profile.spec["mailboxAttention"]["responseField"]
            expect_mapping(ctx, field(data, name), f"inbox_summary: looked for {name} anywhere in the data part: {json_excerpt(data)};")


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
        got = bodies(ctx, page(c, ALICE, conn, "the inviter's read"), "the inviter's read", [text])
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
