"""Durable receive over A2A (receive_pull / receive_ack / receive_status: batches and their
shape, redelivery, exact and repeated acks, waits, more_available, the unavailable cancels,
isolation, reads that do not ack, a2a follow-ups, the friend work kinds): each requirement
declared on its check, with the faults that prove it can fail. Group work
(PLAZA-RECV-WORK-GROUP) is groups.py's."""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Callable
from typing import Any

from conformance.checks.expect import expect_list, expect_mapping, expect_result, refused_as
from conformance.documents.schemas import validator_for
from conformance.kit import locate
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, refuses, replaces, returns_arg
from conformance.protocols.plaza.answers import (
    ACK_FIELD,
    AT_ONCE_S,
    EVIDENCE,
    FRIEND_WORK,
    ITEM_FIELD,
    NATIVE,
    RECEIVE,
    ack,
    ack_triple,
    attention,
    batch_items,
    bodies,
    command_index,
    conversation,
    delivered,
    drain,
    field,
    follow,
    inbox,
    item_keys,
    items_of,
    mentions,
    page,
    pull,
    receiver,
    served,
    text_of,
    triple,
    walk,
)
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, fresh_id
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.shared_faults import CODES, unbounded
from conformance.protocols.plaza.site import (
    FRIEND_CHANNEL_CHANGE,
    NOT_FOUND,
    UNSUPPORTED_OPERATION,
    Call,
    Issue,
    Principal,
    SiteError,
    Wait,
)
from conformance.transport.http import json_excerpt

Data = dict[str, Any]
WORK_ITEMS = (f"objects carrying {ITEM_FIELD}, an a2a_read_request or a kind of "
              "/durableReceive/supported_work, or the entries of the batch its ack_request names")
CANCEL_NAMES = ("receive_cancel", "cancel_receive")


def kinds(item: dict[str, Any]) -> set[str]:
    """The document's work kinds (supported_work) an item carries, wherever."""
    return {f.value for f in locate.enum_values(item, FRIEND_WORK)}


@requirement(id="PLAZA-RECV-PULL", level="MUST",
             title="receive_pull over SendMessage returns the stored work at once; at most 20 items by "
                   "default",
             source=at("/durableReceive/a2a/receive"),
             faults=[answer("pull_returns_nothing", "pull",
                            "receive_pull answers no batch even with work pending.",
                            set={"batch": None, "ack_request": None, "a2a_ack_request": None})])
def check_recv_pull(ctx: CheckContext) -> None:
    """A receive_pull over SendMessage returns the stored work as a batch at once; without
    limit at most 20 items."""
    c = PlazaClient(ctx)
    c.invite(ALICE, BOB)
    native = ctx.profile.spec["durableReceive"]["native"]["start"]
    started = time.monotonic()
    data = pull(c, BOB, fresh_id(), "receive_pull as native.start", limit=native["limit"],
                wait_seconds=native["wait_seconds"])
    ctx.expect(batch_items(ctx, data),
               f"receive_pull with a pending invitation returned no work: {json_excerpt(data, 300)}")
    ctx.expect(time.monotonic() - started < AT_ONCE_S + 1,
               "receive_pull with pending work waited before answering")
    default = batch_items(ctx, pull(c, BOB, fresh_id(), "receive_pull without limit"))
    ctx.expect(0 < len(default) <= 20,
               f"receive_pull without limit returned {len(default)} items; the default limit is 20")


@requirement(id="PLAZA-RECV-BATCH-SHAPE", level="MUST",
             title="A batch has a UUID batch_id, a 64-hex view_id, a 43-character receipt, an ack_request, "
                   "work items, and a read_request an item carries works",
             source=at(f"{NATIVE}/consume"),
             faults=[answer("view_id_uppercase", "new_batch",
                            "A batch's view_id is upper-case hex (receive_ack's pattern is lowercase).",
                            edit=lambda batch, *_: batch.update(view_id=batch["view_id"].upper())),
                     answer("item_read_request_wrong_connection", "receive_item",
                            "A receive item's native read_request names a connection that does not exist.",
                            edit=lambda item, *_: item.update(read_request={
                                **item["read_request"], "connection_id": str(uuid.uuid4())}))])
def check_recv_batch_shape(ctx: CheckContext) -> None:
    """batch_id a UUID, view_id 64 lowercase hex, receipt 43 base64url characters, an
    ack_request; the batch holds the work (found by content), and a read_request an item
    carries works with the caller's credential (an item may carry none: "Execute a returned
    a2a_read_request ... only when present", /durableReceive/a2a/follow)."""
    c = PlazaClient(ctx)
    text = text_of("invitation")
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, text, clear=False)
    data = pull(c, BOB, key, "receive_pull")
    with ctx.subcheck("ack_request"):
        request = field(data, ACK_FIELD)
        ctx.expect(isinstance(request, dict), f"looked for the batch's {ACK_FIELD} anywhere in the answer "
                   f"and found {json_excerpt(request)}: {json_excerpt(data, 300)}", kind="schema_mismatch")
        assert isinstance(request, dict)
        branch = validator_for(ctx.profile.operations["receive_ack"].params_schema)
        command = {"operation": "receive_ack", **{k: v for k, v in request.items() if k != "operation"}}
        wrong = [e.message for e in branch.iter_errors(command)][:3]
        ctx.expect(request.get("operation") == "receive_ack" and not wrong,
                   f"the {ACK_FIELD} {json_excerpt(request)} is not a receive_ack command its schema allows: "
                   f"{wrong}; receive_ack takes a UUID batch_id, a 64 lowercase hex view_id and a "
                   "43-character base64url receipt", kind="schema_mismatch")
        ctx.expect(request.get("client_key") == key,
                   f"the {ACK_FIELD} names client_key {request.get('client_key')!r}, the pull's is {key}",
                   kind="schema_mismatch")
    with ctx.subcheck("item read_request"):
        got = batch_items(ctx, data)
        ctx.expect(got, f"looked for work items ({WORK_ITEMS}) anywhere in the answer and found none: "
                   f"{json_excerpt(data, 300)}", kind="schema_mismatch")
        carrying = [i for i in got if isinstance(i.get(ITEM_FIELD), dict)]
        if carrying:
            reply = follow(c, carrying[0][ITEM_FIELD], BOB, "the item's read_request")
            expect_result(ctx, reply, "the item's read_request")
            ctx.expect(mentions(reply.result, text),
                       f"the item's read_request does not read the invitation {text!r}: {reply.describe()}")


@requirement(id="PLAZA-RECV-SHAPE", level="SHOULD",
             title="receive_pull, receive_ack and receive_status answer the profile's fields; each item "
                   "carries its read_request",
             source=chosen("docs/agent-plaza.md#results (receive_pull, receive_ack, receive_status)"),
             faults=[answer("item_without_read_request", "receive_item",
                            "Receive items carry no native read_request.", drop=["read_request"])])
def check_recv_shape(ctx: CheckContext) -> None:
    """The profile's receive answers: pull {client_key, batch, more_available,
    long_poll_allowed, ack_request}, ack {acknowledged, batch_id, acknowledged_count},
    status {client_key, pending_count, outstanding_batch_id}; each item with its native
    read_request (native.consume: "Read each current item.read_request"; the A2A
    follow-ups are "only when present", so a MUST does not ask for it)."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, clear=False)
    data = c.data_of(c.command("receive_pull", {"client_key": key}, BOB), "receive_pull",
                     ("client_key", "batch", "more_available", "long_poll_allowed", "ack_request"))
    batch = expect_mapping(ctx, data["batch"], "receive_pull batch",
                           ("batch_id", "view_id", "receipt", "items"))
    items = expect_list(ctx, batch["items"], "receive_pull batch items")
    bare = [i for i in items if not (isinstance(i, dict) and isinstance(i.get(ITEM_FIELD), dict))]
    ctx.expect(items and not bare, f"receive items without a {ITEM_FIELD}: {json_excerpt(bare or items)}",
               kind="schema_mismatch")
    status = c.data_of(c.command("receive_status", {"client_key": key}, BOB), "receive_status",
                       ("client_key", "pending_count", "outstanding_batch_id"))
    ctx.expect(status["client_key"] == key and status["outstanding_batch_id"] == batch["batch_id"]
               and status["pending_count"] == len(batch["items"]),
               f"receive_status {json_excerpt(status)} after a pull of {len(batch['items'])} items in batch "
               f"{batch['batch_id']}", kind="schema_mismatch")
    done = c.data_of(ack(c, BOB, key, batch), "receive_ack",
                     ("acknowledged", "batch_id", "acknowledged_count"))
    ctx.expect(done["acknowledged"] is True and done["batch_id"] == batch["batch_id"]
               and done["acknowledged_count"] == len(batch["items"]),
               f"receive_ack answered {json_excerpt(done)}", kind="schema_mismatch")
    status = c.data_of(c.command("receive_status", {"client_key": key}, BOB), "receive_status after the ack")
    ctx.expect(status.get("pending_count") == 0 and status.get("outstanding_batch_id") is None,
               f"receive_status after acknowledging everything: {json_excerpt(status)}",
               kind="schema_mismatch")


@check_recv_shape.fault
def status_stale_count(ref: PlazaReference) -> None:
    """receive_status counts every item ever logged as pending, acknowledged or not."""
    @replaces(ref.cmd_receive_status)
    def status(original: Any, who: Principal, data: Data) -> Data:
        return {**original(who, data), "pending_count": len(ref.s["logs"].get(who.visitor_id, []))}


@requirement(id="PLAZA-RECV-REDELIVER", level="MUST",
             title="Until acknowledged a pull delivers the same work again; after the ack new work only",
             source=at(f"{EVIDENCE}/redelivery_scope"))
def check_recv_redeliver(ctx: CheckContext) -> None:
    """Until acknowledged, a pull delivers the same work again; after the ack, new work only."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    _, conn = c.invite(ALICE, BOB, clear=False)
    first = pull(c, BOB, key, "receive_pull")
    again = pull(c, BOB, key, "receive_pull again, without an ack")
    ctx.expect(item_keys(ctx, first) and item_keys(ctx, again) == item_keys(ctx, first),
               f"unacknowledged work {item_keys(ctx, first)} came back as {item_keys(ctx, again)}: the site "
               "keeps it until acknowledged")
    expect_result(ctx, ack(c, BOB, key, delivered(c, again, "receive_pull again", key)), "receive_ack")
    c.accept(conn, BOB)
    c.say(ALICE, conn, text_of("new work"))
    after = item_keys(ctx, pull(c, BOB, key, "receive_pull after the ack"))
    ctx.expect(after and not set(after) & set(item_keys(ctx, first)),
               f"after the ack the pull returned {after}: new work only, not the acknowledged "
               f"{item_keys(ctx, first)}")


@check_recv_redeliver.fault
def pull_consumes_without_ack(ref: PlazaReference) -> None:
    """A pull acknowledges its own batch: work not acknowledged by the client is gone."""
    @replaces(ref.pull)
    def pull(original: Any, caller: str, data: Data) -> Data:
        out: Data = original(caller, data)
        receiver = ref.receiver(caller, data["client_key"])
        batch = receiver["outstanding"]
        if batch is not None:
            receiver["acked"] += len(batch["items"])
            receiver["last_acked"], receiver["outstanding"] = batch, None
        return out


@requirement(id="PLAZA-RECV-REDELIVER-SAME", level="SHOULD",
             title="A redelivered batch is the same batch: batch_id, view_id, receipt and items",
             source=chosen("docs/agent-plaza.md#durable-receive"))
def check_recv_redeliver_same(ctx: CheckContext) -> None:
    """The profile redelivers the very batch: same batch_id, view_id, receipt and items."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, clear=False)
    first, again = pull(c, BOB, key, "receive_pull"), pull(c, BOB, key, "receive_pull again")
    one, two = ack_triple(first, key), ack_triple(again, key)
    ctx.expect(one is not None and two is not None and triple(ctx, one) == triple(ctx, two)
               and items_of(ctx, first) == items_of(ctx, again),
               f"the redelivered batch {json_excerpt(again)} differs from {json_excerpt(first)}",
               kind="schema_mismatch")


@check_recv_redeliver_same.fault
def redelivery_new_batch_id(ref: PlazaReference) -> None:
    """An unacknowledged batch comes again as a new batch (new batch_id, view_id, receipt) of the same items."""  # noqa: E501
    @replaces(ref.pull)
    def pull(original: Any, caller: str, data: Data) -> Data:
        receiver = ref.receiver(caller, data["client_key"])
        if receiver["outstanding"] is not None:
            size = len(receiver["outstanding"]["items"])
            receiver["outstanding"] = ref.new_batch(ref.pending_items(caller, receiver)[:size])
        return dict(original(caller, data))


def ack_request(ctx: CheckContext, data: dict[str, Any]) -> Any:
    """The batch's ack_request (the document's name), wherever the answer puts it."""
    return field(data, ACK_FIELD)


@requirement(id="PLAZA-RECV-ACK", level="MUST",
             title="The returned ack_request, sent as given, acknowledges the batch",
             source=at(f"{NATIVE}/consume"))
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
    ctx.expect(not set(item_keys(ctx, after)) & set(got),
               f"after the ack the pull still returns {item_keys(ctx, after)}")


@check_recv_ack.fault
def ack_does_not_advance(ref: PlazaReference) -> None:
    """receive_ack answers success but leaves the receiver where it was."""
    @replaces(ref.cmd_receive_ack)
    def ack(original: Any, who: Principal, data: Data) -> Data:
        key = ref.receiver_key(who.visitor_id, data["client_key"])
        before = copy.deepcopy(ref.s["receivers"].get(key))
        out: Data = original(who, data)
        ref.s["receivers"][key] = before
        return out


@requirement(id="PLAZA-RECV-ACK-EXACT", level="MUST",
             title="An ack with another batch_id, view_id, receipt or client_key is refused and acknowledges "
                   "nothing",
             source=at(f"{NATIVE}/consume"), code="NOT_FOUND", code_faults=CODES)
def check_recv_ack_exact(ctx: CheckContext, strict: bool = False) -> None:
    """An ack whose batch_id, view_id or receipt is not the batch's is refused and acknowledges nothing."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, clear=False)
    data = pull(c, BOB, key, "receive_pull")
    with ctx.setup("bob pulls the invitation", by="PLAZA-RECV-PULL"):
        ctx.expect(item_keys(ctx, data), f"looked for work items ({WORK_ITEMS}) in bob's "
                   f"pull and found none: {json_excerpt(data)}", kind="malformed_answer")
        batch = delivered(c, data, "receive_pull", key)
    other_view = "0" * 64 if batch.get("view_id") != "0" * 64 else "1" * 64
    other_receipt = "A" * 43 if batch.get("receipt") != "A" * 43 else "B" * 43
    for label, change in (("batch_id", {"batch_id": fresh_id()}), ("view_id", {"view_id": other_view}),
                          ("receipt", {"receipt": other_receipt}),
                          ("client_key", {"client_key": fresh_id()})):
        with ctx.subcheck(f"another {label}"):
            refused_as(ctx, ack(c, BOB, key, batch, **change), "NOT_FOUND",
                       f"receive_ack with another {label}", strict)
    again = pull(c, BOB, key, "receive_pull after the refused acks")
    ctx.expect(item_keys(ctx, again) == item_keys(ctx, data),
               f"after refused acks the pull returned {item_keys(ctx, again)}, not the pending "
               f"{item_keys(ctx, data)}", kind="state_changed")
    served(ctx, ack(c, BOB, key, batch),
           "receive_ack with the batch's own batch_id, view_id, receipt and client_key", by="PLAZA-RECV-ACK")


@check_recv_ack_exact.fault
def ack_checks_batch_id_only(ref: PlazaReference) -> None:
    """receive_ack matches the batch_id alone: another view_id or receipt is accepted."""
    @replaces(ref.cmd_receive_ack)
    def ack(original: Any, who: Principal, data: Data) -> Data:
        stored = ref.s["receivers"].get(ref.receiver_key(who.visitor_id, data["client_key"]))
        batch = stored["outstanding"] if stored else None
        if batch is not None and batch["batch_id"] == data["batch_id"]:
            data = {**data, "view_id": batch["view_id"], "receipt": batch["receipt"]}
        return dict(original(who, data))


@requirement(id="PLAZA-RECV-ACK-REPEAT", level="MUST",
             title="Repeating an ack succeeds again and acknowledges nothing more",
             source=at(f"{NATIVE}/consume"))
def check_recv_ack_repeat(ctx: CheckContext) -> None:
    """The same ack again (after a lost answer) succeeds again and acknowledges nothing more."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    _, conn = c.invite(ALICE, BOB, clear=False)
    with ctx.setup("bob pulls the invitation", by="PLAZA-RECV-PULL"):
        batch = delivered(c, pull(c, BOB, key, "receive_pull"), "receive_pull", key)
    expect_result(ctx, ack(c, BOB, key, batch), "receive_ack")
    c.accept(conn, BOB)
    c.say(ALICE, conn, text_of("new work"))
    pending = pull(c, BOB, key, "receive_pull of the new work")
    expect_result(ctx, ack(c, BOB, key, batch), "the same receive_ack again")
    after = pull(c, BOB, key, "receive_pull after the repeated ack")
    ctx.expect(item_keys(ctx, pending) and item_keys(ctx, after) == item_keys(ctx, pending),
               f"the repeated ack of the earlier batch changed the pending work {item_keys(ctx, pending)} to "
               f"{item_keys(ctx, after)}", kind="state_changed")


@check_recv_ack_repeat.fault
def repeat_ack_refused(ref: PlazaReference) -> None:
    """The ack of the last acknowledged batch, repeated after a lost answer, is refused."""
    @replaces(ref.cmd_receive_ack)
    def ack(original: Any, who: Principal, data: Data) -> Data:
        stored = ref.s["receivers"].get(ref.receiver_key(who.visitor_id, data["client_key"]))
        done = stored["last_acked"] if stored else None
        if done is not None and (done["batch_id"], done["view_id"], done["receipt"]) == (
                data["batch_id"], data["view_id"], data["receipt"]):
            raise SiteError(NOT_FOUND, "no such batch")
        return dict(original(who, data))


@requirement(id="PLAZA-RECV-STATUS", level="MUST", title="receive_status is served for the caller's receiver",
             source=lambda profile: at(f"/schemas/command/anyOf/{command_index(profile, 'receive_status')}"),
             faults=[refuses("receive_status_unserved", "cmd_receive_status", lambda who, data: SiteError(
                                 UNSUPPORTED_OPERATION, "receive_status is not served"),
                             "receive_status is answered UNSUPPORTED_OPERATION.")])
def check_recv_status(ctx: CheckContext) -> None:
    """receive_status is served for the caller's receiver, fresh or in use."""
    c = PlazaClient(ctx)
    c.invite(ALICE, BOB)
    key = fresh_id()
    c.data_of(c.command("receive_status", {"client_key": key}, BOB), "receive_status of a fresh client_key")
    pull(c, BOB, key, "receive_pull")
    c.data_of(c.command("receive_status", {"client_key": key}, BOB), "receive_status after a pull")


@requirement(id="PLAZA-RECV-WAIT", level="MUST",
             title="wait_seconds: none or 0 answers at once, a short wait returns, above "
                   "{limits[wait_maximum_s]} is refused",
             source=at(f"{RECEIVE}/single_request_wait_seconds"), code="A2A_INVALID_PARAMETERS",
             code_faults=CODES)
def check_recv_wait(ctx: CheckContext, strict: bool = False) -> None:
    """wait_seconds 0 (and none) answers at once, a short wait returns, 26 is refused
    (``strict``, the -CODE row: only the refusal's code, the rest is the MUST row's)."""
    c = PlazaClient(ctx)
    top = ctx.limit("wait_maximum_s")
    key = c.client_key(CAROL)
    drain(c, CAROL, key)
    waits: list[tuple[str, dict[str, int], float]] = [
        ("no wait_seconds", {}, AT_ONCE_S), ("wait_seconds 0", {"wait_seconds": 0}, AT_ONCE_S),
        ("wait_seconds 1", {"wait_seconds": 1}, 1 + AT_ONCE_S)]
    for label, fields, most in [] if strict else waits:
        with ctx.subcheck(label):
            started = time.monotonic()
            data = pull(c, CAROL, key, f"receive_pull {label}", **fields)
            took = time.monotonic() - started
            ctx.expect(took < most,
                       f"receive_pull {label} with nothing pending took {took:.1f} s (at most {most:.0f} s)")
            ctx.expect(not batch_items(ctx, data),
                       f"receive_pull {label} with nothing pending returned work: {json_excerpt(data)}")
    with ctx.subcheck(f"wait_seconds {top + 1}"):
        c.invite(ALICE, CAROL)  # pending work: an accepted long wait would not hold the check up
        refused_as(ctx, c.command("receive_pull", {"client_key": key, "wait_seconds": top + 1}, CAROL),
                   "A2A_INVALID_PARAMETERS", f"receive_pull wait_seconds {top + 1}", strict)


@check_recv_wait.fault
def no_wait_waits(ref: PlazaReference) -> None:
    """A pull without wait_seconds (or with 0) and nothing pending waits 1.2 s instead of answering at once."""  # noqa: E501
    @replaces(ref.cmd_receive_pull)
    def pull(original: Any, who: Principal, data: Data) -> Any:
        idle = not ref.pending_items(who.visitor_id, ref.receiver(who.visitor_id, data["client_key"]))
        if data.get("wait_seconds", 0) == 0 and idle:
            return Wait(ready=lambda: False, finish=lambda: ref.pull(who.visitor_id, data), seconds=1.2)
        return original(who, data)


@check_recv_wait.fault
def wait_above_maximum_accepted(ref: PlazaReference) -> None:
    """wait_seconds above 25 is accepted (the schema maximum is dropped)."""
    unbounded(ref, "receive_pull", "wait_seconds")


@requirement(id="PLAZA-RECV-MORE", level="MUST",
             title="more_available while more work waits beyond the batch, not once all is delivered",
             source=at(f"{NATIVE}/paging"),
             faults=[answer("more_available_never", "pull",
                            "more_available is always false, even with work left beyond the batch.",
                            set={"more_available": False})])
def check_recv_more(ctx: CheckContext) -> None:
    """more_available while more work waits beyond the batch; not once it is all delivered."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB), (CAROL, BOB))
    c.invite(ALICE, BOB, clear=False)
    c.invite(CAROL, BOB, clear=False)
    data = pull(c, BOB, key, "receive_pull limit 1", limit=1)
    ctx.expect(len(batch_items(ctx, data)) == 1 and field(data, "more_available") is True,
               f"receive_pull limit 1 with two invitations pending: {len(batch_items(ctx, data))} items, "
               f"more_available {field(data, 'more_available')!r}")
    for n in range(10):
        if not batch_items(ctx, data):
            break
        if field(data, "more_available") is not True:
            return
        expect_result(ctx, ack(c, BOB, key, delivered(c, data, f"receive_pull {n + 1}", key)),
                      f"receive_ack {n + 1}")
        data = pull(c, BOB, key, f"receive_pull {n + 2}", limit=40)
    ctx.expect(field(data, "more_available") is not True,
               f"with everything delivered more_available is {field(data, 'more_available')!r}")


def unavailable(ctx: CheckContext) -> list[str]:
    return list(ctx.profile.spec["durableReceive"]["private_chat"]["receive"]["cancel"]
                ["unsupported_operation_names"])


@requirement(id="PLAZA-RECV-CANCEL-UNAVAILABLE", level="MUST",
             title="receive_cancel and cancel_receive are refused; the pending batch stays",
             source=at(f"{RECEIVE}/cancel"), code="A2A_INVALID_PARAMETERS", code_faults=CODES)
def check_recv_cancel_unavailable(ctx: CheckContext, strict: bool = False) -> None:
    """receive_cancel and cancel_receive are refused, and the pending batch stays."""
    c = PlazaClient(ctx)
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, clear=False)
    first = item_keys(ctx, pull(c, BOB, key, "receive_pull"))
    for name in unavailable(ctx):
        with ctx.subcheck(name):
            refused_as(ctx, c.command(name, {"client_key": key}, BOB), "A2A_INVALID_PARAMETERS",
                       f"a {name} command", strict)
    again = item_keys(ctx, pull(c, BOB, key, "receive_pull after the cancel attempts"))
    ctx.expect(first and again == first,
               f"the pending batch {first} became {again} after the cancel attempts", kind="state_changed")


@check_recv_cancel_unavailable.fault
def receive_cancel_served(ref: PlazaReference) -> None:
    """receive_cancel / cancel_receive are served and drop the outstanding batch."""
    @replaces(ref.command_issues)
    def issues(original: Any, data: Any, base: str) -> list[Issue]:
        if isinstance(data, dict) and data.get("operation") in CANCEL_NAMES:
            return []
        return list(original(data, base))

    @replaces(ref.run_command)
    def run(original: Any, call: Call, message: Data, data: Data) -> Any:
        if data["operation"] not in CANCEL_NAMES:
            return original(call, message, data)
        receiver = ref.receiver(call.principal.visitor_id, str(data.get("client_key")))
        receiver["outstanding"] = None
        return {"message": ref.command_message(data["operation"], {"canceled": True}, None)}


@requirement(id="PLAZA-RECV-ABORT-RETAINS", level="MUST",
             title="A pull whose answer is dropped leaves the batch pending and recalls no message",
             source=at(f"{RECEIVE}/cancel/pending_batch_retained"), faults=["pull_consumes_without_ack"])
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
                   f"after a dropped pull the work is {item_keys(ctx, again)}, not the pending "
                   f"{item_keys(ctx, first)}", kind="state_changed")
    with ctx.subcheck("message kept"):
        ctx.expect(text in bodies(ctx, page(c, BOB, conn, "read_conversation"), "read_conversation", [text]),
                   f"the text {text!r} is gone after a dropped pull", kind="state_changed")


@requirement(id="PLAZA-RECV-ISOLATION", level="MUST",
             title="A client_key selects the caller's own receiver: no other agent's work, no acking "
                   "another's batch",
             source=at("/durableReceive/identity"), code="NOT_FOUND", code_faults=CODES,
             faults=[returns_arg("receivers_shared_by_key", "receiver_key", 1,
                                 "A client_key names one receiver for every agent: another agent's key "
                                 "reaches its work.")])
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
        one, two = ack_triple(mine, key), ack_triple(theirs, key)
        ctx.expect(not shared and not (one and two and one.get("batch_id") == two.get("batch_id")),
                   f"bob pulling with alice's client_key got alice's work {sorted(map(str, shared))}",
                   kind="auth_not_enforced")
    with ctx.subcheck("ack"):
        with ctx.setup("bob pulls carol's invitation", by="PLAZA-RECV-PULL"):
            batch = delivered(c, theirs, "bob's receive_pull", key)
        refused_as(ctx, ack(c, ALICE, key, batch), "NOT_FOUND", "alice acknowledging bob's batch", strict)
        again = pull(c, BOB, key, "bob's receive_pull after alice's ack")
        ctx.expect(item_keys(ctx, again) == item_keys(ctx, theirs), "alice's ack acknowledged bob's batch",
                   kind="auth_not_enforced")
        served(ctx, ack(c, BOB, key, batch), "bob acknowledging his own batch", by="PLAZA-RECV-ACK")


@requirement(id="PLAZA-RECV-READ-NOT-ACK", level="MUST",
             title="Reading history, the inbox, attention or a task acknowledges no receive batch",
             source=at("/inboxPagination/globalAttention"), faults=["read_acks_receive"])
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
    ctx.expect(again == first, f"after reading history the pending batch {first} became {again}: reading "
               "does not acknowledge", kind="state_changed")


@requirement(id="PLAZA-RECV-A2A-FOLLOW", level="MUST",
             title="A returned a2a_read_request or a2a_ack_request works when sent as given",
             source=at("/durableReceive/a2a/follow"))
def check_recv_a2a_follow(ctx: CheckContext) -> None:
    """A returned a2a_read_request or a2a_ack_request works when sent as given."""
    c = PlazaClient(ctx)
    text = text_of("invitation")
    key = receiver(c, BOB, (ALICE, BOB))
    c.invite(ALICE, BOB, text, clear=False)
    data = pull(c, BOB, key, "receive_pull")
    reads = [v["a2a_read_request"] for v in walk(data)
             if isinstance(v, dict) and isinstance(v.get("a2a_read_request"), dict)]
    acks = [v["a2a_ack_request"] for v in walk(data)
            if isinstance(v, dict) and isinstance(v.get("a2a_ack_request"), dict)]
    if not reads and not acks:
        raise Untested("the target returned no a2a_read_request or a2a_ack_request to follow")
    if reads:
        with ctx.subcheck("a2a_read_request"):
            reply = follow(c, reads[0], BOB, "a2a_read_request")
            expect_result(ctx, reply, "the a2a_read_request as given")
            ctx.expect(mentions(reply.result, text),
                       f"the a2a_read_request does not read the invitation {text!r}: {reply.describe()}")
    if acks:
        with ctx.subcheck("a2a_ack_request"):
            expect_result(ctx, follow(c, acks[0], BOB, "a2a_ack_request"), "the a2a_ack_request as given")
            after = item_keys(ctx, pull(c, BOB, key, "receive_pull after the a2a_ack_request"))
            ctx.expect(not set(after) & set(item_keys(ctx, data)),
                       f"after the a2a_ack_request the work {after} is still pending")


@check_recv_a2a_follow.fault
def a2a_read_request_wrong_connection(ref: PlazaReference) -> None:
    """A receive item's a2a_read_request names a connection that does not exist."""
    @replaces(ref.receive_item)
    def item(original: Any, raw: Data) -> Data:
        out: Data = original(raw)
        other = ref.new_uuid()
        request = out["a2a_read_request"]
        request["params"]["message"]["contextId"] = other
        request["params"]["message"]["parts"][0]["data"]["connection_id"] = other
        return out


@requirement(id="PLAZA-RECV-WORK-FRIEND", level="MUST",
             title="Friend invitations, channel changes and messages arrive as receive work",
             source=at("/durableReceive/supported_work"))
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
            got = [i for i in batch_items(ctx, pull(c, who, keys[who], f"{who}'s receive_pull", limit=40))
                   if kind in kinds(i)]
            ctx.expect(got, f"{who}'s receive_pull holds no {kind} item after it happened")
            drain(c, who, keys[who])


@check_recv_work_friend.fault
def channel_changes_not_delivered(ref: PlazaReference) -> None:
    """Connection events (accepted, declined, removed, ...) become notices but no receive work."""
    @replaces(ref.connection_event)
    def event(original: Any, conn: Data, actor: str, change: str) -> None:
        ref.add_notice(ref.peer_of(conn, actor), FRIEND_CHANNEL_CHANGE, conn, change)
