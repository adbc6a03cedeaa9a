"""The inbox (compact and full views, default limits, the paired conversation cursor,
notices paged on their own cursor): each requirement declared on its check, with the faults
that prove it can fail. The document names the two cursors, not the lists they page, so the
lists are found by content (``inbox_lists``); the profile's own inbox answer
(docs/agent-plaza.md) is a SHOULD of ``source: profile``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, refuses, replaces
from conformance.protocols.plaza.answers import conversation, field, follow, inbox, mentions
from conformance.protocols.plaza.client import ALICE, PlazaClient, seed
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import UNSUPPORTED_OPERATION, Principal, SiteError
from conformance.transport.http import json_excerpt

Data = dict[str, Any]


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

    rest = sorted((items for items in locate.lists_of(answer)
                   if items is not convs and items is not notes and hits(items)), key=hits, reverse=True)
    if convs is None and rest:
        convs = rest.pop(0)
    if notes is None and rest:
        notes = rest.pop(0)
    return convs, notes


def conversations(ctx: CheckContext, answer: dict[str, Any], what: str,
                  owned: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The conversation rows of an inbox page (inbox_lists)."""
    found = inbox_lists(answer, owned)[0]
    return [r for r in found or [] if isinstance(r, dict)]


ending_with = locate.ending_with


@requirement(id="PLAZA-INBOX-VIEWS", level="MUST",
             title="inbox serves the compact and the full view, each listing the caller's conversations",
             source=at("/inboxPagination/view"),
             faults=[refuses("inbox_full_refused", "cmd_inbox", lambda who, data: SiteError(
                                 UNSUPPORTED_OPERATION, "the full view is not served"),
                             "The full inbox view is refused.",
                             when=lambda who, data: data.get("view") == "full")])
def check_inbox_views(ctx: CheckContext) -> None:
    """The compact and the full view are both served and list the caller's conversation."""
    c = PlazaClient(ctx)
    conn, _ = conversation(c, 1)
    for view in ("compact", "full", None):
        label = f"view {view}" if view else "no view"
        with ctx.subcheck(label):
            data = inbox(c, ALICE, f"inbox {label}", **({"view": view} if view else {}))
            ctx.expect(mentions(data, conn), f"inbox {label} does not list the caller's conversation {conn}: "
                       f"{json_excerpt(data, 300)}")


@requirement(id="PLAZA-INBOX-SHAPE", level="SHOULD",
             title="inbox answers view, conversations, next_page_request, notices, next_notices_request",
             source=chosen("docs/agent-plaza.md#results (inbox)"),
             faults=[answer("inbox_view_not_echoed", "cmd_inbox", "The inbox answer does not name its view.",
                            drop=["view"])])
def check_inbox_shape(ctx: CheckContext) -> None:
    """The profile's inbox: view, conversations, next_page_request, notices, next_notices_request."""
    c = PlazaClient(ctx)
    conversation(c, 1)
    for view in ("compact", "full"):
        with ctx.subcheck(view):
            data = c.data_of(c.command("inbox", {"view": view}), f"inbox {view}",
                             ("view", "conversations", "next_page_request", "notices",
                              "next_notices_request"))
            ctx.expect(data["view"] == view and isinstance(data["conversations"], list)
                       and isinstance(data["notices"], list),
                       f"inbox {view}: view {data['view']!r}, conversations and notices {json_excerpt(data)}",
                       kind="schema_mismatch")


@requirement(id="PLAZA-INBOX-LIMITS", level="MUST",
             title="An inbox page holds {limits[inbox_compact_default_count]} conversations compact and "
                   "{limits[inbox_full_default_count]} full by default, limit when given",
             source=at("/inboxPagination/defaultLimits"))
def check_inbox_limits(ctx: CheckContext) -> None:
    """A compact page holds 20 conversations by default, a full page 60; limit asks for
    fewer (counted over the conversations the check made)."""
    c = PlazaClient(ctx)
    compact, full = ctx.limit("inbox_compact_default_count"), ctx.limit("inbox_full_default_count")
    owned = seed(c, full + 1, ALICE)
    for view, fields, want in (("compact", {}, compact), ("full", {}, full), ("compact", {"limit": 7}, 7),
                               ("full", {"limit": 7}, 7)):
        label = f"view {view}" + (f" limit {fields['limit']}" if fields else "")
        with ctx.subcheck(label):
            got = [i for i in conversation_ids(ctx, inbox(c, ALICE, f"inbox {label}", view=view, **fields),
                                               f"inbox {label}", owned)
                   if i in owned]
            ctx.expect(len(got) == want, f"inbox {label} lists {len(got)} of the {full + 1} conversations "
                       f"the check made, expected {want}")


@check_inbox_limits.fault
def inbox_full_default_compact(ref: PlazaReference) -> None:
    """A full inbox page holds the compact default (20) instead of 60."""
    @replaces(ref.cmd_inbox)
    def inbox(original: Any, who: Principal, data: Data) -> Data:
        if data.get("view") == "full" and "limit" not in data:
            data = {**data, "limit": ref.limit("inbox_compact_default_count")}
        return dict(original(who, data))


def conversation_ids(ctx: CheckContext, answer: dict[str, Any], what: str,
                     owned: Iterable[str] = ()) -> list[Any]:
    """Which of ``owned`` (connection ids the check made) each conversation row carries
    (the row itself, quoted, where it carries none)."""
    wanted = list(owned)
    return [next((o for o in wanted if locate.holds(r, o)), json_excerpt(r, 1000))
            for r in conversations(ctx, answer, what, wanted)]


def without_before_id(out: Data, *_: Any) -> None:
    """A fault's edit: the inbox's next_page_request without before_id."""
    if out.get("next_page_request"):
        out["next_page_request"].pop("before_id", None)


@requirement(id="PLAZA-INBOX-CURSOR", level="MUST",
             title="next_page_request carries before_updated_at and before_id together and pages through "
                   "every conversation once",
             source=at("/inboxPagination/conversationCursor"),
             faults=[answer("inbox_cursor_without_id", "cmd_inbox",
                            "next_page_request carries before_updated_at without before_id.",
                            edit=without_before_id)])
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
        ctx.expect(isinstance(field(request, "before_updated_at"), str)
                   and isinstance(field(request, "before_id"), str),
                   f"next_page_request of page {n - 1} does not carry before_updated_at and before_id "
                   f"together: {json_excerpt(request)}")
        current = c.data_of(follow(c, request, ALICE, f"next_page_request of page {n - 1}"),
                            f"inbox page {n}")
        got = conversation_ids(ctx, current, f"inbox page {n}", owned)
        twice = set(got) & set(seen)
        ctx.expect(got and not twice, f"inbox page {n} (next_page_request) lists {len(got)} conversations, "
                   f"{len(twice)} of them already seen")
        seen += got
    reached = set(seen) & set(owned)
    ctx.expect(len(reached) == len(owned), f"paging the inbox by next_page_request reached {len(reached)} of "
               f"the {len(owned)} conversations the check made")


def notice_keys(ctx: CheckContext, answer: dict[str, Any], what: str, owned: Iterable[str] = ()) -> list[Any]:
    """The notices of a page (inbox_lists), each as its canonical JSON."""
    rows = inbox_lists(answer, owned)[1]
    return [json.dumps(r, sort_keys=True) for r in rows or []]


@requirement(id="PLAZA-INBOX-NOTICES", level="MUST",
             title="Notices page by notices_after and next_notices_request, independently of the "
                   "conversations",
             source=at("/inboxPagination/noticesCursor"))
def check_inbox_notices(ctx: CheckContext) -> None:
    """Notices page by notices_after and next_notices_request, independently of the
    conversations: each cursor moves its own list and leaves the other where it was."""
    c = PlazaClient(ctx)
    owned = seed(c, 12, ALICE)
    first = inbox(c, ALICE, "inbox page 1", view="compact", limit=5)
    notes, convs = (notice_keys(ctx, first, "inbox page 1", owned),
                    conversation_ids(ctx, first, "inbox page 1", owned))
    with ctx.subcheck("next_notices_request"):
        request = field(first, "next_notices_request")
        ctx.expect(isinstance(request, dict),
                   f"12 invitations in pages of 5, yet next_notices_request is {json_excerpt(request)}")
        more = c.data_of(follow(c, request, ALICE, "next_notices_request"), "inbox (next_notices_request)")
        got = notice_keys(ctx, more, "inbox (next_notices_request)", owned)
        ctx.expect(got and not set(got) & set(notes),
                   f"next_notices_request returned notices {got} after {notes}: "
                   "it must continue after the page's notices")
        ctx.expect(conversation_ids(ctx, more, "inbox (next_notices_request)", owned) == convs,
                   "following next_notices_request moved the conversation list: the two cursors are "
                   "independent")
    with ctx.subcheck("next_page_request"):
        request = field(first, "next_page_request")
        ctx.expect(isinstance(request, dict),
                   f"12 conversations in pages of 5, yet next_page_request is {json_excerpt(request)}")
        more = c.data_of(follow(c, request, ALICE, "next_page_request"), "inbox (next_page_request)")
        ctx.expect(notice_keys(ctx, more, "inbox (next_page_request)", owned) == notes,
                   f"following next_page_request moved the notices from {notes} to "
                   f"{notice_keys(ctx, more, 'inbox (next_page_request)', owned)}: the two cursors are "
                   "independent")


@check_inbox_notices.fault
def notices_after_ignored(ref: PlazaReference) -> None:
    """notices_after is ignored: next_notices_request returns the first notices again."""
    @replaces(ref.notice_page)
    def notices(original: Any, caller: str, after: str | None, limit: int, view: str) -> Any:
        return original(caller, None, limit, view)
