"""Message evidence (the records' common fields, the send receipt) and message_status (its
three states, its target, its authority, read-only, what counts as a retrieval): each
requirement declared on its check, with the faults that prove it can fail. The profile's own
message_status answer (docs/agent-plaza.md) is a SHOULD of ``source: profile``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.checks.expect import expect_result, refused_as
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, noop, replaces
from conformance.protocols.plaza.answers import (
    EVIDENCE,
    LATER_PEER,
    RETRIEVED,
    STORED,
    ack,
    batch_of,
    drain,
    evidence,
    field,
    mentions,
    own_id,
    page,
    pull,
    records,
    served,
    text_in,
    text_of,
    unchanged,
    walk,
)
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.shared_faults import CODES
from conformance.protocols.plaza.site import Principal, SiteError
from conformance.transport.http import json_excerpt

Data = dict[str, Any]


# ----------------------------------------------------------------------------------------------
# message evidence
# ----------------------------------------------------------------------------------------------
def deep_records(value: Any, kind: str) -> list[dict[str, Any]]:
    return [v for v in walk(value) if isinstance(v, dict) and v.get("record_type") == kind]


@requirement(id="PLAZA-EVIDENCE-FIELDS", level="MUST",
             title="Message records carry id, seq, created_at, sender, sender_kind, record_type message; "
                   "a send has a send_receipt",
             source=at(f"{EVIDENCE}/common_fields"),
             faults=[answer("record_without_created_at", "message_evidence",
                            "Message records (pages and receipts) lack created_at.", drop=["created_at"]),
                     answer("receipt_record_type_wrong", "receipt",
                            "A send receipt says record_type message instead of send_receipt.",
                            set={"record_type": "message"})])
def check_evidence_fields(ctx: CheckContext) -> None:
    """Message records carry the common evidence fields and the message record_type; a send
    answers with a receipt of the receipt record_type whose message has them too."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    texts = [text_of("evidence"), text_of("evidence reply")]
    task = c.say(ALICE, conn, texts[0])
    c.say(BOB, conn, texts[1])
    spec = evidence(ctx)
    common, message_type, receipt_type = (spec["common_fields"], spec["message_record_type"],
                                          spec["receipt_record_type"])
    with ctx.subcheck("read pages"):
        answer = page(c, ALICE, conn, "read_conversation")
        found = [r for r in records(ctx, answer, "read_conversation") if text_in(r, texts)]
        ctx.expect(len(found) == len(texts), f"looked for the message records carrying {texts} (record_type "
                   f"{message_type!r}, or seq beside id) anywhere in the page and found {len(found)}: "
                   f"{json_excerpt(answer)}", kind="schema_mismatch")
        for record in found:
            missing = [f for f in common if record.get(f) in (None, "")]
            ctx.expect(not missing and record.get("record_type") == message_type,
                       f"a message record lacks {missing} or has record_type {record.get('record_type')!r}, "
                       f"not {message_type!r}: {json_excerpt(record)}", kind="schema_mismatch")
    with ctx.subcheck("send receipt"):
        receipts = deep_records(task, receipt_type)
        ctx.expect(receipts, f"looked for a record of record_type {receipt_type!r} anywhere in the answer to "
                   f"a text and found none: {json_excerpt(task, 400)}", kind="schema_mismatch")
        inner = receipts[0].get("message")
        message = inner if isinstance(inner, dict) else next(iter(deep_records(receipts[0], message_type)),
                                                             None)
        missing = [f for f in common if not isinstance(message, dict) or message.get(f) in (None, "")]
        ctx.expect(receipts[0].get("message_sent") is True and not missing
                   and dig(message, "record_type") == message_type,
                   f"the {receipt_type} {json_excerpt(receipts[0], 300)} lacks message_sent true or message "
                   f"fields {missing}", kind="schema_mismatch")


# ----------------------------------------------------------------------------------------------
# message_status
# ----------------------------------------------------------------------------------------------
def msg_status(c: PlazaClient, who: str, conn: str, what: str,
               message_id: str | None = None) -> dict[str, Any]:
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


def without_later_peer(status: Data, *_: Any) -> None:
    """A fault's edit: message_status as if the peer had never answered."""
    status[LATER_PEER] = False
    status["status"] = RETRIEVED if status[RETRIEVED] else "stored"


@requirement(id="PLAZA-MSGSTATUS-STATES", level="MUST",
             title="message_status tells stored, peer_context_retrieval_observed and "
                   "later_peer_message_observed apart",
             source=at("/messageStatus/distinguishes"),
             faults=["send_marks_retrieved",
                     noop("retrieval_never_observed", "mark_retrieved",
                          "A successful read records no retrieval observation."),
                     answer("later_peer_not_observed", "cmd_message_status",
                            "message_status never reports a later peer message.", edit=without_later_peer)])
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
        ("read by the peer", lambda: page(c, BOB, conn, "read_conversation by bob"), RETRIEVED,
         (LATER_PEER,)),
        ("answered by the peer", lambda: c.say(BOB, conn, text_of("reply")), LATER_PEER, ()),
    ]
    for label, step, want, not_yet in steps:
        with ctx.subcheck(label):
            step()
            data = msg_status(c, ALICE, conn, f"message_status ({label})", mid)
            ctx.expect(reports(data, want),
                       f"message_status of a message {label} does not report {want}: {json_excerpt(data)}")
            early = [n for n in not_yet if reports(data, n)]
            ctx.expect(not early,
                       f"message_status of a message {label} reports {early} already: {json_excerpt(data)}")


@check_status_states.fault
def send_marks_retrieved(ref: PlazaReference) -> None:
    """Storing a message records it as retrieved by the peer."""
    @replaces(ref.store_message)
    def store(original: Any, conn: Data, sender: str, text: str, client_message_id: str) -> Data:
        msg: Data = original(conn, sender, text, client_message_id)
        conn["read_marks"][ref.peer_of(conn, sender)] = conn["last_seq"]
        return msg


@requirement(id="PLAZA-MSGSTATUS-SHAPE", level="SHOULD",
             title="message_status answers message_id, seq, status and the three booleans",
             source=chosen("docs/agent-plaza.md#results (message_status)"),
             faults=[answer("status_without_flags", "cmd_message_status",
                            "message_status answers only its status, without the three booleans.",
                            drop=["stored", RETRIEVED, LATER_PEER])])
def check_status_shape(ctx: CheckContext) -> None:
    """The profile's answer: message_id, seq, status and the three booleans."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    text = text_of("shape")
    c.say(ALICE, conn, text)
    data = c.data_of(c.command("message_status", {"connection_id": conn}), "message_status",
                     ("message_id", "seq", "status", STORED, RETRIEVED, LATER_PEER))
    ctx.expect(data["status"] in (STORED, RETRIEVED, LATER_PEER)
               and all(isinstance(data[k], bool) for k in (STORED, RETRIEVED, LATER_PEER)),
               f"message_status status {data['status']!r} and flags "
               f"{[data[k] for k in (STORED, RETRIEVED, LATER_PEER)]}", kind="schema_mismatch")
    ctx.expect(data["status"] == STORED and data[STORED] is True,
               f"a message just sent has status {data['status']!r}", kind="schema_mismatch")


@requirement(id="PLAZA-MSGSTATUS-LATEST", level="MUST",
             title="Without message_id message_status is about the caller's latest own message; with it, "
                   "that message",
             source=at("/messageStatus/target"))
def check_status_latest(ctx: CheckContext) -> None:
    """Without message_id, the caller's latest own message (not the peer's later one); with
    it, that message."""
    c = PlazaClient(ctx)
    conn = c.befriend(ALICE, BOB)
    one, two = text_of("own one"), text_of("own two")
    c.say(ALICE, conn, one)
    c.say(ALICE, conn, two)
    c.say(BOB, conn, text_of("peer later"))
    first, second = own_id(c, ALICE, conn, one), own_id(c, ALICE, conn, two)
    with ctx.subcheck("without message_id"):
        data = msg_status(c, ALICE, conn, "message_status without message_id")
        ctx.expect(about(data, second, first), f"message_status without message_id does not name the "
                   f"caller's latest own message {second} alone (its earlier one is {first}): "
                   f"{json_excerpt(data)}")
    with ctx.subcheck("with message_id"):
        data = msg_status(c, ALICE, conn, "message_status of the first message", first)
        ctx.expect(about(data, first, second),
                   f"message_status with message_id {first} does not name that message alone: "
                   f"{json_excerpt(data)}")


@check_status_latest.fault
def status_latest_any_sender(ref: PlazaReference) -> None:
    """Without message_id, message_status is about the latest message of either participant."""
    @replaces(ref.cmd_message_status)
    def status(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        if "message_id" not in data:
            last = ref.s["connections"][data["connection_id"]]["messages"][-1]
            out.update(message_id=last["id"], seq=str(last["seq"]))
        return out


def both_said(c: PlazaClient) -> tuple[str, str]:
    """A connection of ALICE and BOB in which each has said something: it and the id of
    BOB's message (the peer's, for ALICE)."""
    conn = c.befriend(ALICE, BOB)
    c.say(ALICE, conn, text_of("mine"))
    theirs = text_of("theirs")
    c.say(BOB, conn, theirs)
    return conn, own_id(c, BOB, conn, theirs)


@requirement(id="PLAZA-MSGSTATUS-OWN", level="MUST",
             title="message_status never presents the peer's message as the caller's and serves only "
                   "participants",
             source=at("/messageStatus/authority"), code="NOT_FOUND", code_faults=CODES)
def check_status_own(ctx: CheckContext, strict: bool = False) -> None:
    """message_status never presents the peer's message as the caller's receipt, and
    serves only a participant."""
    c = PlazaClient(ctx)
    conn, peer = both_said(c)
    with ctx.subcheck("the peer's message"):
        reply = c.command("message_status", {"connection_id": conn, "message_id": peer}, ALICE)
        if strict:
            refused_as(ctx, reply, "NOT_FOUND", "message_status of the peer's message", strict)
        data = reply.result if reply.ok else None
        ctx.expect(not reply.ok or not mentions(data, peer),
                   f"message_status of the peer's message {peer} is served as the caller's own: "
                   f"{reply.describe()}", kind="auth_not_enforced")
    with ctx.subcheck("a stranger"):
        served(ctx, c.command("message_status", {"connection_id": conn}, ALICE),
               "the participant's message_status", by="PLAZA-MSGSTATUS-LATEST")
        refused_as(ctx, c.command("message_status", {"connection_id": conn}, CAROL), "NOT_FOUND",
                   "message_status by an agent who is no participant", strict)


@check_status_own.fault
def status_any_sender(ref: PlazaReference) -> None:
    """message_status serves the peer's message as if it were the caller's sent message."""
    @replaces(ref.cmd_message_status)
    def status(original: Any, who: Principal, data: Data) -> Data:
        try:
            return dict(original(who, data))
        except SiteError:
            conn = ref.readable_connection(who.visitor_id, data["connection_id"])
            msg = ref.find_message(conn, str(data.get("message_id")))
            if msg is None:
                raise
            return {"connection_id": conn["id"], "message_id": msg["id"], "seq": str(msg["seq"]),
                    "status": "stored", "stored": True, RETRIEVED: False, LATER_PEER: False}


@requirement(id="PLAZA-MSGSTATUS-READ-ONLY", level="MUST",
             title="message_status changes nothing (it is no retrieval of the peer's messages)",
             source=at("/messageStatus/readOnly"))
def check_status_read_only(ctx: CheckContext) -> None:
    """message_status changes nothing: in particular it is no retrieval of the peer's messages."""
    c = PlazaClient(ctx)
    conn, peer = both_said(c)
    unchanged(c, "message_status", {"connection_id": conn}, ALICE)
    data = msg_status(c, BOB, conn, "the peer's message_status", peer)
    ctx.expect(not reports(data, RETRIEVED),
               f"after alice asked message_status, bob's message shows {RETRIEVED}: {json_excerpt(data)}",
               kind="state_changed")


@check_status_read_only.fault
def status_records_retrieval(ref: PlazaReference) -> None:
    """message_status counts as a read: it records the caller's retrieval of the context."""
    @replaces(ref.cmd_message_status)
    def status(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        ref.mark_retrieved(ref.s["connections"][data["connection_id"]], who.visitor_id)
        return out


@requirement(id="PLAZA-MSGSTATUS-RETRIEVAL", level="MUST",
             title="Only the peer's authenticated read is a retrieval: not the sender's read, a refused read "
                   "or a receive ack",
             source=at(f"{EVIDENCE}/retrieval_scope"))
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
                        ("a stranger's refused read",
                         lambda: c.command("read_conversation", {"connection_id": conn}, CAROL))):
        with ctx.subcheck(label):
            step()
            ctx.expect(not observed(label), f"{label} marked the message {RETRIEVED}", kind="state_changed")
    with ctx.subcheck("the peer's receive ack"):
        data = pull(c, BOB, key, "bob's receive_pull")
        before = observed("the peer's pull")
        batch = batch_of(ctx, data)
        if batch is not None:
            expect_result(ctx, ack(c, BOB, key, batch), "bob's receive_ack")
        ctx.expect(observed("the peer's ack") == before,
                   f"a receive ack marked the message {RETRIEVED} (an ack is no read)", kind="state_changed")
    with ctx.subcheck("the peer's read"):
        page(c, BOB, conn, "read by the peer")
        ctx.expect(observed("the peer's read"),
                   f"the peer's read of the conversation is not observed as {RETRIEVED}")


@check_status_retrieval.fault
def own_read_marks_retrieved(ref: PlazaReference) -> None:
    """Any read of the conversation, the sender's own too, records the peer's retrieval."""
    @replaces(ref.mark_retrieved)
    def mark(original: Any, conn: Data, visitor_id: str) -> None:
        original(conn, visitor_id)
        original(conn, ref.peer_of(conn, visitor_id))


@check_status_retrieval.fault
def ack_marks_retrieved(ref: PlazaReference) -> None:
    """Acknowledging a receive batch records a retrieval of its conversations."""
    @replaces(ref.cmd_receive_ack)
    def ack(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        batch = ref.s["receivers"][ref.receiver_key(who.visitor_id, data["client_key"])]["last_acked"]
        for item in batch["items"] if batch else []:
            ref.mark_retrieved(ref.s["connections"][item["connection_id"]], who.visitor_id)
        return out
