"""Agent Plaza's groups (groupChat, issue 14), part three: group messages (pages, ack,
content, retries rechecked), the queue that is not delivery and its flush, schedules, and
the group work kinds of durable receive, each requirement declared on its check with the
faults that prove it can fail. The calls, readers and set-up are groups.py's; what the
reference serves reference/groups.py."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from conformance.checks.expect import expect_result
from conformance.documents.schemas import validator_for
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, requirement
from conformance.kit.faults import arguments, replaces, returns
from conformance.protocols.plaza.answers import text_of
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, fresh_id
from conformance.protocols.plaza.groups_client import (
    CHAT,
    Data,
    authorize,
    call,
    chat,
    contents,
    create,
    drain,
    group_pair,
    listed_messages,
    messages,
    ok,
    receiver,
    revoke,
    send,
    sent,
    seqs_of,
    text_in,
    ungranted,
    work,
)
from conformance.protocols.plaza.parts import GROUPS, command_at, prop, refused, served
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.reference.groups import GROUP_MESSAGE
from conformance.protocols.plaza.site import Principal
from conformance.transport.http import json_excerpt


# ----------------------------------------------------------------------------------------------
# messages, retries
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-GROUP-MESSAGES", level="MUST", optional=GROUPS,
             title="group_messages pages by integer after_seq and limit (default 40); group_ack takes a "
                   "member's seq only",
             source=command_at("group_messages", "/properties"),
             faults=["group_after_seq_inclusive",
                     arguments("group_limit_ignored", "cmd_group_messages",
                               "group_messages ignores limit (the default page size).", drop=["limit"])])
@served(GROUPS)
def check_messages(ctx: CheckContext) -> None:
    """Pages are seq > after_seq (an integer), at most limit (the schema's default without
    one, with control); a member acknowledges a seq, an outsider none."""
    c = PlazaClient(ctx)
    top = prop(ctx, "group_authorize", "max_messages_per_hour")["maximum"]
    gid = group_pair(c, grant={"max_messages_per_hour": top}, rules={"max_messages_per_hour": top})
    texts = [text_of(f"page {i}") for i in range(3)]
    for text in texts:
        sent(c, ALICE, gid, text)
    ours = messages(c, BOB, gid, "bob's group_messages")
    got = [text_in(m, texts) for m in ours]
    ctx.expect(got == texts, f"bob's page holds {got} of the suite's texts, not {texts} in order")
    numbers = seqs_of(ctx, ours, "bob's group_messages")
    first, last = numbers[0], numbers[-1]
    with ctx.subcheck("after_seq"):
        later = contents(c, BOB, gid, "group_messages after_seq", after_seq=first)
        ctx.expect(later == texts[1:], f"after_seq {first} gave {later}, expected {texts[1:]}")
    with ctx.subcheck("limit"):
        one = listed_messages(c, BOB, gid, "group_messages limit 1", after_seq=first, limit=1)
        ctx.expect(len(one) == 1 and text_in(one[0], texts) == texts[1],
                   f"limit 1 after seq {first} listed {json_excerpt(one, 300)}, expected only {texts[1]!r}")
    with ctx.subcheck("group_ack"):
        expect_result(ctx, call(c, BOB, "group_ack", group_id=gid, seq=last),
                      f"bob's group_ack of seq {last}")
        refused(c, call(c, CAROL, "group_ack", group_id=gid, seq=last), "an outsider's group_ack")
    if c.live():
        return
    with ctx.subcheck("default limit"):
        default = int(prop(ctx, "group_messages", "limit")["default"])
        extra = [text_of(f"bulk {i}") for i in range(default + 1 - len(texts))]
        for text in extra:
            sent(c, ALICE, gid, text)
        page = contents(c, BOB, gid, "group_messages without limit", after_seq=first - 1 if first else 0)
        ctx.expect(len(page) <= default,
                   f"group_messages without limit listed {len(page)} of the {default + 1} messages "
                   f"after seq {first - 1 if first else 0}; the default limit is {default}")


@check_messages.fault
def group_after_seq_inclusive(ref: PlazaReference) -> None:
    """group_messages after_seq includes the message at after_seq."""
    @replaces(ref.cmd_group_messages)
    def read(original: Any, who: Principal, data: Data) -> Data:
        if data.get("after_seq", 0) > 0:
            data = {**data, "after_seq": data["after_seq"] - 1}
        out: Data = original(who, data)
        return out


@check_messages.fault
def group_default_limit_ignored(ref: PlazaReference) -> None:
    """group_messages without limit lists up to the schema's maximum (the default is 40)."""
    @replaces(ref.cmd_group_messages)
    def read(original: Any, who: Principal, data: Data) -> Data:
        top = ref.branches["group_messages"]["properties"]["limit"]["maximum"]
        out: Data = original(who, data if "limit" in data else {**data, "limit": top})
        return out


def _halved(data: Data) -> None:
    data["content"] = data["content"][: max(2, len(data["content"]) // 2)]


@requirement(id="PLAZA-GROUP-SEND", level="MUST", optional=GROUPS,
             title="A group message of the maximum length is stored and read whole",
             source=command_at("group_send", "/properties/content"),
             faults=[arguments("group_content_truncated", "cmd_group_send",
                               "A long group message is stored cut to half its length.", edit=_halved)])
@served(GROUPS)
def check_send(ctx: CheckContext) -> None:
    """A member's message of the maximum length, with a mention, is read whole by another member."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    size = int(prop(ctx, "group_send", "content")["maxLength"])
    stem = text_of("long")
    content = (stem + " " + "x" * size)[:size]
    expect_result(ctx, send(c, ALICE, gid, content, mentions=[c.agent_id(BOB)]),
                  f"a group_send of {size} characters")
    seen = contents(c, BOB, gid, "bob's group_messages")
    ctx.expect(content in seen,
               f"bob does not read the {size}-character message whole: {[str(s)[:40] for s in seen]}")


@requirement(id="PLAZA-GROUP-RETRY-RECHECK", level="MUST", optional=GROUPS,
             title="A retry with the same request_key stores one message and is rechecked against the "
                   "current grant and membership",
             source=at(f"{CHAT}/continuation"),
             faults=[returns("group_retry_stores_again", "group_prior", None,
                             "A retry with the same request_key runs again (another message).")])
@served(GROUPS)
def check_retry(ctx: CheckContext) -> None:
    """A retry with the same request_key stores one message and is refused once the sender
    is removed or its grant revoked."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    key, content = fresh_id(), text_of("retried")
    with ctx.subcheck("one message"):
        expect_result(ctx, send(c, BOB, gid, content, request_key=key), "bob's group_send")
        expect_result(ctx, send(c, BOB, gid, content, request_key=key),
                      "bob's retry with the same request_key")
        seen = contents(c, ALICE, gid, "alice's group_messages")
        ctx.expect(seen.count(content) == 1,
                   f"a send and its retry stored {seen.count(content)} messages {content!r}")
    with ctx.subcheck("revoked"):
        other = fresh_id()
        expect_result(ctx, send(c, BOB, gid, text_of("before revoke"), request_key=other), "bob's group_send")
        revoke(c, BOB)
        refused(c, send(c, BOB, gid, text_of("before revoke"), request_key=other),
                "a retry after the grant was revoked")
        authorize(c, BOB, allow_join=True, allow_send=True)
    with ctx.subcheck("removed"):
        expect_result(ctx,
                      call(c, ALICE, "group_member", group_id=gid, visitor_id=c.agent_id(BOB),
                           action="remove"), "bob removed")
        refused(c, send(c, BOB, gid, content, request_key=key), "a retry after the sender was removed")


@check_retry.fault
def group_retry_skips_recheck(ref: PlazaReference) -> None:
    """A group_send retry answers the original without checking grant and membership again."""
    @replaces(ref.cmd_group_send)
    def group_send(original: Any, who: Principal, data: Data) -> Data:
        prior: Data | None = ref.group_prior(who.visitor_id, "group_send", data)
        if prior is not None:
            return prior
        out: Data = original(who, data)
        return out


# ----------------------------------------------------------------------------------------------
# queue, flush, schedule
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-GROUP-QUEUE-NOT-DELIVERY", level="MUST", optional=GROUPS,
             title="A queued group message is not delivered until group_flush",
             source=command_at("group_queue", "/properties/after_seconds"))
@served(GROUPS)
def check_queue_not_delivery(ctx: CheckContext) -> None:
    """A queued message reaches no member until group_flush sends it."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    key = receiver(c, BOB)
    drain(c, BOB, key)
    content = text_of("queued")
    delay = prop(ctx, "group_queue", "after_seconds")["minimum"]
    expect_result(ctx, call(c, ALICE, "group_queue", group_id=gid, content=content, after_seconds=delay),
                  "alice's group_queue")
    with ctx.subcheck("not delivered"):
        ctx.expect(content not in contents(c, BOB, gid, "bob's group_messages"),
                   f"a queued message {content!r} was delivered")
        got = work(c, BOB, key, "group_message", gid, "bob's receive_pull")
        ctx.expect(not got, f"a queued message reached bob's durable receive: {json_excerpt(got, 300)}")
    with ctx.subcheck("flushed"):
        expect_result(ctx, call(c, ALICE, "group_flush", group_id=gid), "alice's group_flush")
        ctx.expect(content in contents(c, BOB, gid, "bob's group_messages"),
                   f"after group_flush bob does not read {content!r}")


@check_queue_not_delivery.fault
def queue_delivers_at_once(ref: PlazaReference) -> None:
    """group_queue also sends the message at once."""
    @replaces(ref.cmd_group_queue)
    def queue(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        group = ref.s["groups"][data["group_id"]]
        ref.store_group_message(group, group["members"][who.visitor_id], who.visitor_id, data)
        return out


@requirement(id="PLAZA-GROUP-QUEUE-AUTH", level="MUST", optional=GROUPS,
             title="Queueing and flushing need the live group authorization",
             source=at(f"{CHAT}/queue_requires_live_authorization"))
@served(GROUPS)
def check_queue_auth(ctx: CheckContext) -> None:
    """Queueing and flushing need a live grant: after revocation both are refused and nothing is sent."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    content = text_of("queued before revoke")
    delay = prop(ctx, "group_queue", "after_seconds")["minimum"]
    with ctx.setup("alice queues a message", by="PLAZA-GROUP-QUEUE-NOT-DELIVERY"):
        ok(c, ALICE, "group_queue", group_id=gid, content=content, after_seconds=delay)
    revoke(c, ALICE)
    with ctx.subcheck("group_queue"):
        refused(c,
                call(c, ALICE, "group_queue", group_id=gid, content=text_of("revoked"), after_seconds=delay),
                "group_queue without a live grant")
    with ctx.subcheck("group_flush"):
        refused(c, call(c, ALICE, "group_flush", group_id=gid), "group_flush without a live grant")
        ctx.expect(content not in contents(c, BOB, gid, "bob's group_messages"),
                   "a flush refused for the revoked grant sent the queue")


@check_queue_auth.fault
def queue_without_authorization(ref: PlazaReference) -> None:
    """group_queue stores without a live grant."""
    @replaces(ref.cmd_group_queue)
    def queue(original: Any, who: Principal, data: Data) -> Data:
        with ungranted(ref):
            out: Data = original(who, data)
        return out


@check_queue_auth.fault
def flush_skips_authorization(ref: PlazaReference) -> None:
    """group_flush sends the queue without a live grant."""
    @replaces(ref.cmd_group_flush)
    def flush(original: Any, who: Principal, data: Data) -> Data:
        with ungranted(ref):
            out: Data = original(who, data)
        return out


@requirement(id="PLAZA-GROUP-SCHEDULE", level="MUST", optional=GROUPS,
             title="A group schedule is a bounded registration: at most max_scheduled_runs, nothing sent "
                   "by itself",
             source=at(f"{CHAT}/max_scheduled_runs"))
@served(GROUPS)
def check_schedule(ctx: CheckContext) -> None:
    """A schedule of up to max_scheduled_runs is registered, one more run is refused, and
    (with control) the registration sends nothing by itself: bob's page, which holds the
    check's own message, lists no further entry."""
    c = PlazaClient(ctx)
    gid = group_pair(c)
    runs = int(chat(ctx, "max_scheduled_runs"))
    delay = prop(ctx, "group_schedule", "after_seconds")["minimum"]
    sent(c, ALICE, gid, text_of("before the schedule"))
    before = listed_messages(c, BOB, gid, "bob's group_messages")
    with ctx.subcheck(f"{runs} runs"):
        expect_result(ctx,
                      call(c, ALICE, "group_schedule", group_id=gid, enabled=True, after_seconds=delay,
                           max_runs=runs),
                      f"group_schedule with max_runs {runs}")
    with ctx.subcheck(f"{runs + 1} runs"):
        refused(c, call(c, ALICE, "group_schedule", group_id=gid, enabled=True, max_runs=runs + 1),
                f"group_schedule with max_runs {runs + 1}", invalid_ok=True)
    with ctx.subcheck("registration only"):
        if ctx.run.control_path:
            ctx.control("advance_clock", seconds=delay * (runs + 1))
        after = listed_messages(c, BOB, gid, "bob's group_messages")
        ctx.expect(len(after) == len(before),
                   f"a schedule with nothing queued made messages: the page listed {len(before)} "
                   f"entries before, {len(after)} after: {json_excerpt(after[len(before):], 300)}")


@check_schedule.fault
def schedule_runs_unbounded(ref: PlazaReference) -> None:
    """group_schedule takes more runs than max_scheduled_runs."""
    schema = copy.deepcopy(ref.branches["group_schedule"])
    schema["properties"]["max_runs"].pop("maximum", None)
    ref.validators.commands["group_schedule"] = validator_for(schema)


@check_schedule.fault
def schedule_sends_message(ref: PlazaReference) -> None:
    """A schedule is a run: the site writes a message for the agent at once."""
    @replaces(ref.cmd_group_schedule)
    def schedule(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        group = ref.s["groups"][data["group_id"]]
        ref.store_group_message(group, group["members"][who.visitor_id], who.visitor_id,
                                {"content": "A scheduled run."})
        return out


# ----------------------------------------------------------------------------------------------
# durable receive
# ----------------------------------------------------------------------------------------------
@requirement(id="PLAZA-RECV-WORK-GROUP", level="MUST", optional=GROUPS,
             title="Group invitations, applications, messages and membership changes arrive as receive work",
             source=at("/durableReceive/supported_work"))
@served(GROUPS)
def check_recv_work_group(ctx: CheckContext) -> None:
    """Group invitations, applications, messages and membership changes arrive as receive
    work: after each, the affected agent's next pull holds an item of that kind (the
    document's supported_work value) about the check's group."""
    c = PlazaClient(ctx)
    keys = {who: receiver(c, who) for who in (ALICE, BOB, CAROL)}
    gid = create(c, ALICE, visibility="public")
    authorize(c, BOB, allow_join=True, allow_send=True)
    authorize(c, CAROL, allow_join=True, allow_send=True)
    for who in (ALICE, BOB, CAROL):
        drain(c, who, keys[who])
    kinds = [k for k in ctx.profile.spec["durableReceive"]["supported_work"] if k.startswith("group_")]
    steps: dict[str, tuple[str, Callable[[], Any]]] = {
        "group_invitation": (BOB, lambda: ok(c, ALICE, "group_invite", group_id=gid,
                                             visitor_id=c.agent_id(BOB))),
        "group_application": (ALICE, lambda: ok(c, CAROL, "group_join_request", group_id=gid)),
        "group_membership_change": (CAROL, lambda: ok(c, ALICE, "group_admit", group_id=gid,
                                                      visitor_id=c.agent_id(CAROL),
                                                      decision="approve")),
        "group_message": (CAROL, lambda: sent(c, ALICE, gid, text_of("work"))),
    }
    if not set(kinds) <= set(steps):
        raise Untested(f"supported_work names group kinds {kinds}; this check makes only {list(steps)}")
    for kind in [k for k in steps if k in kinds]:  # in an order that makes each
        with ctx.subcheck(kind):
            who, step = steps[kind]
            with ctx.setup(f"what makes {kind}", by="PLAZA-GROUP-MEMBERSHIP"):
                step()
            got = work(c, who, keys[who], kind, gid, f"{who}'s receive_pull")
            ctx.expect(got,
                       f"{who}'s receive_pull holds no {kind!r} item about the group {gid} after it happened")


@check_recv_work_group.fault
def group_messages_not_logged(ref: PlazaReference) -> None:
    """Group messages never reach the members' durable receive."""
    @replaces(ref.group_work)
    def group_work(original: Any, visitor_id: str, kind: str, group: Data, **extra: Any) -> None:
        if kind != GROUP_MESSAGE:
            original(visitor_id, kind, group, **extra)
