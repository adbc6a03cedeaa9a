"""Mailbox attention (inbox_summary's mailbox_attention: its groups and read requests, the
bounded scan, the overflow flags, the pending invitation count, read-only, the working
task's attention and focused_request, rechecked contact controls): each requirement
declared on its check, with the faults that prove it can fail."""

from __future__ import annotations

from typing import Any

from conformance.checks.expect import expect_list, expect_mapping, expect_result
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import answer, limit, replaces
from conformance.protocols.plaza.answers import (
    ATTN,
    PENDING_COUNT,
    attention,
    attention_member,
    bodies,
    field,
    follow,
    mentions,
    page,
    text_of,
    unchanged,
    walk,
)
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, COMPLETED, PlazaClient, dig, seed
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import ACTIVE, BLOCKED, INVITATION, Principal
from conformance.transport.http import json_excerpt

Data = dict[str, Any]


def groups(ctx: CheckContext) -> list[str]:
    return list(ctx.profile.spec["mailboxAttention"]["groups"])


def items(ctx: CheckContext, att: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in groups(ctx):
        rows = expect_list(ctx, attention_member(att, name),
                           f"mailbox_attention.{name} (looked for anywhere in it)")
        ctx.expect(all(isinstance(r, dict) for r in rows),
                   f"mailbox_attention.{name} holds non-objects: {json_excerpt(rows)}",
                   kind="malformed_answer")
        out += rows
    return out


def pending_count(c: PlazaClient, who: str, what: str) -> Any:
    """The attention's pending_received_invitation_count, wherever it sits in it (a finding
    that quotes the attention when it is nowhere, or not a count)."""
    att = attention(c, who, what)
    count = attention_member(att, PENDING_COUNT)
    c.ctx.expect(isinstance(count, int) and not isinstance(count, bool) and count >= 0,
                 f"{what}: looked for {PENDING_COUNT} anywhere in mailbox_attention and found {count!r}: "
                 f"{json_excerpt(att, 400)}", kind="malformed_answer")
    return count


@requirement(id="PLAZA-ATTN-SUMMARY", level="MUST", title="inbox_summary answers with mailbox_attention",
             source=at(f"{ATTN}/summaryOperation"),
             faults=[answer("summary_without_attention", "cmd_inbox_summary",
                            "inbox_summary answers its counts under another name than mailbox_attention.",
                            edit=lambda out, *_: {"attention": out["mailbox_attention"]})])
def check_attn_summary(ctx: CheckContext) -> None:
    """inbox_summary answers with mailbox_attention (with and without notices_after)."""
    c = PlazaClient(ctx)
    c.invite(ALICE, BOB)
    for fields in ({}, {"notices_after": "0"}):
        with ctx.subcheck("notices_after" if fields else "no fields"):
            data = c.data_of(c.command("inbox_summary", fields, BOB), "inbox_summary")
            name = ctx.profile.spec["mailboxAttention"]["responseField"]
            expect_mapping(ctx, field(data, name), f"inbox_summary: looked for {name} anywhere in the data "
                           f"part: {json_excerpt(data)};")


@requirement(id="PLAZA-ATTN-SHAPE", level="MUST",
             title="mailbox_attention holds the three item groups; each item carries read_request",
             source=at(f"{ATTN}/groups"),
             faults=[answer("attention_item_without_read_request", "attention_item",
                            "Attention items carry no read_request.", drop=["read_request"])])
def check_attn_shape(ctx: CheckContext) -> None:
    """mailbox_attention groups its items as the three groups; each item carries read_request."""
    c = PlazaClient(ctx)
    c.invite(ALICE, BOB)
    att = attention(c, BOB)
    got = items(ctx, att)
    ctx.expect(got, f"a pending invitation shows no attention item: {json_excerpt(att, 300)}")
    bare = [i for i in got if not isinstance(i.get("read_request"), dict)]
    ctx.expect(not bare, f"attention items without read_request: {json_excerpt(bare)}",
               kind="schema_mismatch")


@requirement(id="PLAZA-ATTN-BOUNDS", level="MUST",
             title="Attention lists at most {limits[attention_items_count]} items a group and counts within "
                   "the scan of {limits[attention_scan_count]}",
             source=at(f"{ATTN}/boundedObservation"),
             faults=[limit("attention_items_unbounded", "attention_items_count", 10_000,
                           "Attention lists every candidate item, past itemsLimit."),
                     limit("attention_scan_unbounded", "attention_scan_count", 10_000,
                           "Attention scans every relationship, past scanLimit (counts cover them all).")])
def check_attn_bounds(ctx: CheckContext) -> None:
    """With more invitations than the scan: at most 4 items a group, counts within the 32 scanned."""
    c = PlazaClient(ctx)
    scan, most = ctx.limit("attention_scan_count"), ctx.limit("attention_items_count")
    seed(c, scan + 6, ALICE)
    att = attention(c, ALICE)
    for name in groups(ctx):
        rows = expect_list(ctx, attention_member(att, name),
                           f"mailbox_attention.{name} (looked for anywhere in it)")
        ctx.expect(len(rows) <= most, f"mailbox_attention.{name} lists {len(rows)} items; at most {most}")
    count = attention_member(att, PENDING_COUNT)
    ctx.expect(isinstance(count, int) and count <= scan,
               f"{PENDING_COUNT} {count!r} (looked for anywhere in mailbox_attention) with {scan + 6} "
               f"invitations: counts cover the bounded scan of {scan}")


@requirement(id="PLAZA-ATTN-OVERFLOW", level="MUST",
             title="scan_truncated or more_attention_available is true exactly when the bounds left work out",
             source=at(f"{ATTN}/boundedObservation/moreFields"),
             faults=[answer("attention_overflow_unflagged", "mailbox_attention",
                            "scan_truncated and more_attention_available stay false whatever the bounds left "
                            "out.",
                            set={"scan_truncated": False, "more_attention_available": False})])
def check_attn_overflow(ctx: CheckContext) -> None:
    """scan_truncated or more_attention_available says what the bounds left out, and only then."""
    c = PlazaClient(ctx)
    _, conn = c.invite(CAROL, ALICE)
    flags = ctx.profile.spec["mailboxAttention"]["boundedObservation"]["moreFields"]
    with ctx.subcheck("within the bounds"):
        att = attention(c, ALICE, "inbox_summary with one invitation")
        said = {f: attention_member(att, f) for f in flags}
        ctx.expect(not any(v is True for v in said.values()),
                   f"one invitation, yet {said} (each looked for anywhere in mailbox_attention)")
        ctx.expect(any(mentions(i, conn) for i in items(ctx, att)),
                   f"within the bounds, no attention item names carol's invitation {conn}: nothing was left "
                   f"out, so it is listed ({json_excerpt(att, 300)})")
    with ctx.subcheck("beyond the bounds"):
        seed(c, ctx.limit("attention_scan_count") + 6, ALICE)
        att = attention(c, ALICE, "inbox_summary with more invitations than the scan")
        said = {f: attention_member(att, f) for f in flags}
        ctx.expect(any(v is True for v in said.values()),
                   f"{ctx.limit('attention_scan_count') + 7} invitations, yet {said} (each looked for "
                   "anywhere in mailbox_attention): the bounds left items out")


@requirement(id="PLAZA-ATTN-PENDING-COUNT", level="MUST",
             title="pending_received_invitation_count counts an invitation, opened or not",
             source=at(f"{ATTN}/pendingAndUnread"))
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
    ctx.expect(opened == sent, f"pending_received_invitation_count went from {sent} to {opened!r} when the "
               "invitee opened the invitation: an opened invitation stays pending")


@check_attn_pending_count.fault
def opened_invitation_not_pending(ref: PlazaReference) -> None:
    """pending_received_invitation_count counts only invitations the invitee has not opened."""
    @replaces(ref.mailbox_attention)
    def attention(original: Any, visitor_id: str) -> Data:
        out: Data = original(visitor_id)
        out["pending_received_invitation_count"] = sum(
            1 for c in ref.connections_of(visitor_id)
            if c["state"] == INVITATION and c["invitee"] == visitor_id and visitor_id not in c["read_marks"])
        return out


@requirement(id="PLAZA-ATTN-READ-ONLY", level="MUST",
             title="Reading attention accepts no invitation and sends no reply",
             source=at(f"{ATTN}/authority"))
def check_attn_read_only(ctx: CheckContext) -> None:
    """Reading attention accepts nothing, replies nothing, grants nothing."""
    c = PlazaClient(ctx)
    text = text_of("invitation")
    _, conn = c.invite(ALICE, BOB, text)
    unchanged(c, "inbox_summary", {}, BOB)
    with ctx.subcheck("no acceptance"):
        ctx.expect(not c.text(ALICE, text_of("second"), context=conn).ok,
                   "after inbox_summary the inviter's second text was accepted: attention accepted the "
                   "invitation", kind="state_changed")
    with ctx.subcheck("no reply"):
        got = bodies(ctx, page(c, ALICE, conn, "the inviter's read"), "the inviter's read", [text])
        ctx.expect(got == [text], f"after inbox_summary the conversation holds {got}; only the invitation "
                   f"{text!r} was written", kind="state_changed")


@check_attn_read_only.fault
def summary_accepts_invitation(ref: PlazaReference) -> None:
    """inbox_summary accepts the caller's pending invitations."""
    @replaces(ref.cmd_inbox_summary)
    def summary(original: Any, who: Principal, data: Data) -> Data:
        for conn in ref.connections_of(who.visitor_id):
            if conn["state"] == INVITATION and conn["invitee"] == who.visitor_id:
                ref.respond_accept(conn, who.visitor_id, {})
        return dict(original(who, data))


@requirement(id="PLAZA-ATTN-READ-REQUEST", level="MUST",
             title="An attention item's read_request, sent as a data command, reads the item",
             source=at(f"{ATTN}/requestWrapping"))
def check_attn_read_request(ctx: CheckContext) -> None:
    """An item's read_request, sent as a data command with the same identity, reads the item."""
    c = PlazaClient(ctx)
    text = text_of("invitation")
    _, conn = c.invite(ALICE, BOB, text)
    got = [i for i in items(ctx, attention(c, BOB)) if mentions(i, conn)]
    ctx.expect(got, f"no attention item names the pending invitation {conn}")
    reply = follow(c, got[0].get("read_request"), BOB, "the item's read_request")
    expect_result(ctx, reply, "the attention item's read_request")
    ctx.expect(mentions(reply.result, text),
               f"the item's read_request does not read the invitation {text!r}: {reply.describe()}")


@check_attn_read_request.fault
def attention_read_request_wrong_connection(ref: PlazaReference) -> None:
    """An attention item's read_request names a connection that does not exist."""
    @replaces(ref.attention_item)
    def item(original: Any, conn: Data, visitor_id: str) -> Data:
        out: Data = original(conn, visitor_id)
        out["read_request"] = {**out["read_request"], "connection_id": ref.new_uuid()}
        return out


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


@requirement(id="PLAZA-ATTN-LOCATIONS", level="MUST",
             title="A working task carries mailbox_attention (status message or metadata) and stays working; "
                   "control Messages carry it in a data part",
             source=at(f"{ATTN}/responseLocations"))
def check_attn_locations(ctx: CheckContext) -> None:
    """A working task carries mailbox_attention (in status.message data or in metadata) and
    stays working while the attention concerns another conversation; inbox_summary's
    control Message carries it in a data part."""
    c = PlazaClient(ctx)
    task = working_task(c)
    ctx.expect(c.state_of(task) != COMPLETED,
               f"another agent's invitation completed alice's task: {c.state_of(task)}", kind="state_changed")
    ctx.expect(task_attention(c, task),
               f"the working task carries no mailbox_attention: {json_excerpt(task, 400)}")
    message = c.message_of(c.command("inbox_summary", {}), "inbox_summary")
    parts = message.get("parts")
    ctx.expect(isinstance(parts, list)
               and any(isinstance(dig(p, "data", "mailbox_attention"), dict) for p in parts),
               f"the inbox_summary Message carries no data.mailbox_attention: {json_excerpt(message)}")


@check_attn_locations.fault
def working_task_without_attention(ref: PlazaReference) -> None:
    """A working task carries no mailbox_attention."""
    @replaces(ref.task_view)
    def view(original: Any, task: Data, *args: Any, **kwargs: Any) -> Data:
        out: Data = original(task, *args, **kwargs)
        out["metadata"][ref.ext].pop("mailbox_attention", None)
        return out


@requirement(id="PLAZA-ATTN-FOCUSED", level="MUST",
             title="focused_request keeps the original GetTask request of the working task",
             source=at(f"{ATTN}/workingTask"))
def check_attn_focused(ctx: CheckContext) -> None:
    """focused_request keeps the original GetTask request: sent, it answers the same task."""
    c = PlazaClient(ctx)
    task = working_task(c)
    found = [v.get("focused_request") for v in walk(task) if isinstance(v, dict) and "focused_request" in v]
    ctx.expect(found, f"the working task carries no focused_request: {json_excerpt(task, 400)}")
    request = found[0]
    ctx.expect(mentions(request, str(task["id"])),
               f"focused_request {json_excerpt(request)} does not name the task {task['id']}")
    again = c.task_of(follow(c, request, ALICE, "focused_request"), "the focused_request")
    ctx.expect(again.get("id") == task["id"],
               f"focused_request answered task {again.get('id')!r}, not {task['id']}")


@check_attn_focused.fault
def focused_request_other_task(ref: PlazaReference) -> None:
    """focused_request names another task id than the working task's."""
    @replaces(ref.task_view)
    def view(original: Any, task: Data, *args: Any, **kwargs: Any) -> Data:
        out: Data = original(task, *args, **kwargs)
        focused = out["metadata"][ref.ext].get("focused_request")
        if focused:
            focused["params"]["id"] = ref.new_uuid()
        return out


@requirement(id="PLAZA-ATTN-RECHECK", level="MUST",
             title="Attention rechecks contact controls: a blocked inviter's item is no longer listed",
             source=at(f"{ATTN}/authority/currentGrantAndContactRechecked"))
def check_attn_recheck(ctx: CheckContext) -> None:
    """Attention checks the contact controls again: a blocked inviter's item goes."""
    c = PlazaClient(ctx)
    _, conn = c.invite(CAROL, ALICE)
    ctx.expect(any(mentions(i, conn) for i in items(ctx, attention(c, ALICE))),
               f"no attention item names carol's invitation {conn}")
    with ctx.setup("alice blocks carol", by="PLAZA-FRIEND-CONTROL"):
        c.data_of(c.command("friend_control", {"connection_id": conn, "decision": "block"}, ALICE),
                  "friend_control block")
    after = attention(c, ALICE, "inbox_summary after the block")
    ctx.expect(not any(mentions(i, conn) for i in items(ctx, after)),
               f"after alice blocked carol, attention still lists carol's invitation: "
               f"{json_excerpt(after, 300)}")


@check_attn_recheck.fault
def attention_ignores_blocks(ref: PlazaReference) -> None:
    """Attention does not recheck contact controls: a blocked connection is listed as before the block."""
    @replaces(ref.mailbox_attention)
    def attention(original: Any, visitor_id: str) -> Data:
        blocked = [c for c in ref.connections_of(visitor_id) if c["state"] == BLOCKED]
        for conn in blocked:
            conn["state"] = conn["state_before_block"] or ACTIVE
        try:
            return dict(original(visitor_id))
        finally:
            for conn in blocked:
                conn["state"] = BLOCKED
