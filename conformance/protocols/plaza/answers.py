"""Readers of Agent Plaza answers shared by the mailbox checks (reads.py, message_evidence.py,
inbox.py, attention.py, receive.py), and the conversations the checks build (texts, own
message ids, rounds).

The document names few answer fields and no containers (docs/architecture.md, "The judging
rule"), so these readers find things by content, with conformance/kit/locate.py: a message
record is an object whose ``record_type`` is the document's message_record_type (or that
carries ``seq``), a text is found by the marker the check sent, a receive item is an
object carrying the document's ``read_request`` or ``a2a_read_request``, or one of its work
kinds (``/durableReceive/supported_work``: an item may carry no read request, "Execute a returned
a2a_read_request ... only when present"), else an entry of the batch its ``ack_request``
acknowledges, a member the document names (``round_no``, ``has_more``, ``next_request``,
``mailbox_attention``, ...) is found wherever the answer puts it. What a check looked for
and did not find is a finding that says so, never a crash."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn

from conformance.checks.expect import catalog_entry, expect_list, expect_mapping, expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext, CheckFailed
from conformance.model import Profile
from conformance.protocols.a2a import wire
from conformance.protocols.plaza.client import ALICE, BOB, SUBMITTED, WORKING, PlazaClient, dig, fresh_id
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt

INVALID = "A2A_INVALID_PARAMETERS"
UNSUPPORTED = "UNSUPPORTED_OPERATION"
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
ITEM_FIELD = "read_request"  # /mailboxAttention/itemReadField, and native.consume's item.read_request
ACK_FIELD = "ack_request"  # /durableReceive/native/consume ("Copy the original ack_request")
A2A_REQUESTS = ("a2a_read_request", "a2a_ack_request")  # /durableReceive/a2a/follow
TRIPLE = ("batch_id", "view_id", "receipt")  # the receive_ack command's fields (its schema)


# ----------------------------------------------------------------------------------------------
# small readers: answers are untrusted, another shape is a finding that quotes it
# ----------------------------------------------------------------------------------------------
def broken(message: str, kind: str = "malformed_answer", statement: str | None = None) -> NoReturn:
    raise CheckFailed(message, kind, statement)


def walk(value: Any) -> Iterator[Any]:
    """Every value inside an answer (itself included), depth-bounded (conformance/kit/locate.py)."""
    for found in locate.walk(value):
        yield found.value


def mentions(value: Any, needle: str) -> bool:
    """``needle`` is a string somewhere inside ``value``."""
    return bool(locate.with_marker(value, needle))


field = locate.member  # a member the document names, wherever the answer puts it
has_field = locate.has_member


def listed(ctx: CheckContext, answer: dict[str, Any], name: str, what: str,
           marker: Callable[[Any], bool]) -> list[dict[str, Any]]:
    """The list ``answer[name]`` (the profile's name), or else the one top-level list whose
    entries ``marker`` recognises: the document names the rows' fields, not their list."""
    found = answer.get(name)
    if not isinstance(found, list):
        found = next((v for v in answer.values() if isinstance(v, list) and v and all(marker(x) for x in v)),
                     found)
    rows = expect_list(ctx, found, f"{what}: the {name} list")
    ctx.expect(all(isinstance(r, dict) for r in rows),
               f"{what}: {name} holds entries that are not objects: {json_excerpt(rows)}",
               kind="malformed_answer")
    return rows


most = locate.most


def reason_of(reply: Reply) -> Any:
    """The ErrorInfo reason of a refusal (the document's error detail), or None."""
    data = reply.error_data if isinstance(reply.error_data, list) else [reply.error_data]
    return next((d.get("reason") for d in data if isinstance(d, dict) and "reason" in d), None)


def command_index(profile: Profile, name: str) -> int:
    """The position of a command's branch in /schemas/command/anyOf (a requirement's source)."""
    branches = profile.spec["schemas"]["command"]["anyOf"]
    return next(i for i, b in enumerate(branches) if dig(b, "properties", "operation", "const") == name)


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
def evidence(ctx: CheckContext) -> dict[str, Any]:
    """The document's message evidence: common_fields, message_record_type, receipt_record_type."""
    found: dict[str, Any] = ctx.profile.spec["durableReceive"]["private_chat"]["message_evidence"]
    return found


def is_record(value: Any, record_type: str | None = None) -> bool:
    """A message record: the document's record_type for messages (``record_type``, the
    spec's message_record_type), or its seq beside an id."""
    return isinstance(value, dict) and ((record_type is not None and value.get("record_type") == record_type)
                                        or ("seq" in value and "id" in value))


def page(c: PlazaClient, who: str, conn: str, what: str, **fields: Any) -> dict[str, Any]:
    """A served read_conversation page (its data)."""
    return c.data_of(c.command("read_conversation", {"connection_id": conn, **fields}, who), what)


def records(ctx: CheckContext, answer: Any, what: str) -> list[dict[str, Any]]:
    """The message records of a page, found by content: the list holding most records
    (an empty page holds none)."""
    kind = evidence(ctx)["message_record_type"]
    return most(answer, lambda v: is_record(v, kind))


def seq_of(ctx: CheckContext, record: Any, what: str) -> int:
    """A record's seq as a number (a canonical decimal string, or a JSON integer)."""
    value = record.get("seq") if isinstance(record, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and CANONICAL.match(value):
        return int(value)
    broken(f"{what}: seq {value!r} is not a decimal sequence number ({json_excerpt(record)})")


def seqs(ctx: CheckContext, answer: Any, what: str) -> list[int]:
    return [seq_of(ctx, r, what) for r in records(ctx, answer, what)]


def body(record: dict[str, Any]) -> Any:
    """A record's text under the profile's names (``text``, or its first part's text)."""
    return record.get("text") if "text" in record else dig(record, "parts", 0, "text")


def bodies(ctx: CheckContext, answer: Any, what: str, known: Iterable[str] | None = None) -> list[Any]:
    """The texts of a page's records: with ``known`` (the texts the check sent), the known
    text each record carries, wherever and under whatever name (None for a record that
    carries none of them); without, the profile's ``text``."""
    if known is None:
        return [body(r) for r in records(ctx, answer, what)]
    wanted = list(known)
    return [text_in(r, wanted) for r in records(ctx, answer, what)]


def text_in(record: Any, known: Iterable[str]) -> str | None:
    """Which of ``known`` (texts the check sent) the record carries as a value, if any."""
    return next((t for t in known if locate.holds(record, t)), None)


def ids(ctx: CheckContext, answer: Any, what: str) -> list[Any]:
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
        answer = page(c, who, conn, "read_conversation", view="latest")
        found = [r.get("id") for r in records(c.ctx, answer, "read_conversation") if locate.holds(r, text)]
        c.ctx.expect(found and isinstance(found[-1], str),
                     f"looked for the message record (record_type {evidence(c.ctx)['message_record_type']!r} "
                     f"or seq and id) carrying {text!r} and its id "
                     f"in the latest page and found none: {json_excerpt(answer)}", kind="malformed_answer")
    return str(found[-1])


def ascending(ctx: CheckContext, answer: Any, what: str) -> list[int]:
    got = seqs(ctx, answer, what)
    ctx.expect(all(a < b for a, b in zip(got, got[1:], strict=False)),
               f"{what}: the page is not chronological (seq {got}); every page is, latest pages too")
    return got


def round_of(ctx: CheckContext, answer: Any, what: str) -> int:
    """The page's round_no (the document tells callers to carry the returned one)."""
    value = field(answer, "round_no")
    ctx.expect(isinstance(value, int) and not isinstance(value, bool),
               f"{what}: looked for round_no anywhere in the answer and found {value!r} "
               f"({json_excerpt(answer)}); the document tells callers to carry the returned one",
               kind="malformed_answer")
    return value if isinstance(value, int) else 0


# ----------------------------------------------------------------------------------------------
# what several parts read: attention, and the state a read-only command leaves
# ----------------------------------------------------------------------------------------------
def attention(c: PlazaClient, who: str, what: str = "inbox_summary") -> dict[str, Any]:
    """inbox_summary's mailbox_attention (the document's responseField), wherever the data puts it."""
    data = c.data_of(c.command("inbox_summary", {}, who), what)
    name = c.ctx.profile.spec["mailboxAttention"]["responseField"]
    return expect_mapping(c.ctx, field(data, name),
                          f"{what}: looked for {name} anywhere in the data part: {json_excerpt(data)};")


# the count the document names (/mailboxAttention/pendingAndUnread), at no location it gives
PENDING_COUNT = "pending_received_invitation_count"


def attention_member(att: Any, name: str) -> Any:
    """A member of mailbox_attention the document names (a group, a count, a flag), wherever
    the attention puts it: the document names the members, not their place (a site may keep
    its counts under ``counts``)."""
    return field(att, name)


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
    c.ctx.expect(c.snapshot() == state, f"the stored state changed with a replayed {name} "
                 "(a read-only command)", kind="state_changed")


# ----------------------------------------------------------------------------------------------
# durable receive: the calls every receive check (and reads that judge acks) makes
# ----------------------------------------------------------------------------------------------
def pull(c: PlazaClient, who: str, key: str, what: str, **fields: Any) -> dict[str, Any]:
    return c.data_of(c.command("receive_pull", {"client_key": key, **fields}, who), what)


def work_kinds(ctx: CheckContext) -> frozenset[str]:
    """The document's kinds of receive work (/durableReceive/supported_work)."""
    return frozenset(ctx.profile.spec["durableReceive"]["supported_work"])


def is_item(value: Any, kinds: frozenset[str] = frozenset()) -> bool:
    """A receive work item, by what the document names: an object carrying item.read_request
    or an a2a_read_request, or one of the document's work kinds (``kinds``) as a value of
    its own or of an object it holds (an item need not carry a read request: "Execute a
    returned a2a_read_request ... only when present")."""
    if not isinstance(value, dict):
        return False
    if ITEM_FIELD in value or A2A_REQUESTS[0] in value:
        return True
    return bool(kinds) and any(isinstance(f.value, str) and f.value in kinds for f in locate.walk(value, 2))


def items_of(ctx: CheckContext, data: Any) -> list[dict[str, Any]]:
    """The work items of a pull, in order, by content: the list holding most objects that
    is_item recognises; else, where none carries anything the document names, the entries
    of the batch its acknowledging request names (the object holding that batch_id)."""
    kinds = work_kinds(ctx)
    found = most(data, lambda v: is_item(v, kinds))
    if found:
        return found
    triple_of = ack_triple(data)
    batch_id = triple_of.get("batch_id") if triple_of else None
    if not isinstance(batch_id, str):
        return []
    requests = [r for r in (field(data, ACK_FIELD), field(data, A2A_REQUESTS[1])) if r is not None]
    inside = {id(f.value) for r in requests for f in locate.walk(r)}
    holders = [o for o in locate.objects_holding(data, batch_id) if id(o) not in inside]
    return [i for i in most(holders[0], lambda v: isinstance(v, dict))] if holders else []


def ack_triple(data: Any, client_key: str | None = None) -> dict[str, Any] | None:
    """The batch a pull delivered, as what acknowledges it: batch_id, view_id and receipt
    of its ack_request (a receive_ack command, the document's "Copy the original
    ack_request"), or of its a2a_ack_request; else found by the schema's patterns (a
    64-hex view_id, a 43-character receipt, the UUID beside them that is not the
    client_key). None when the answer delivers no batch."""
    for request in (field(data, ACK_FIELD), field(data, A2A_REQUESTS[1])):
        command = next((f.value for f in locate.walk(request) if isinstance(f.value, dict)
                        and all(isinstance(f.value.get(k), str) for k in TRIPLE)), None)
        if command is not None:
            return {k: command[k] for k in TRIPLE}
    views = locate.strings(data, VIEW_ID)
    receipts = locate.strings(data, RECEIPT)
    if not views or not receipts:
        return None
    holder = locate.object_holding(data, views[0].value) or {}
    batch_id = next((f.value for f in locate.strings(holder, UUID)
                     if f.value != client_key and f.parent is holder), None)
    return {"batch_id": batch_id, "view_id": views[0].value, "receipt": receipts[0].value}


def batch_of(ctx: CheckContext, data: Any) -> dict[str, Any] | None:
    """The pulled batch, as its acknowledging triple (ack_triple), or None when the pull
    delivered no work."""
    triple_of = ack_triple(data)
    return triple_of if triple_of is not None and (items_of(ctx, data) or triple_of.get("batch_id")) else None


def batch_items(ctx: CheckContext, data: Any) -> list[dict[str, Any]]:
    return items_of(ctx, data)


def item_key(item: Any) -> Any:
    """What names a work item across deliveries, by content: the UUIDs it carries (its
    event, connection and message ids), not those of the A2A requests a server may mint
    afresh for each delivery; the item itself where it carries none."""
    requests = [field(item, name) for name in A2A_REQUESTS]
    minted = {f.value for r in requests for f in locate.strings(r, UUID)}
    uuids = sorted({f.value for f in locate.strings(item, UUID)} - minted)
    return " ".join(uuids) if uuids else json_excerpt(item, 1000)


def item_keys(ctx: CheckContext, data: Any) -> list[Any]:
    return [item_key(i) for i in items_of(ctx, data)]


def ack(c: PlazaClient, who: str, key: str, batch: dict[str, Any], **changes: Any) -> Reply:
    fields = {"client_key": key, **{k: batch.get(k) for k in TRIPLE}}
    return c.command("receive_ack", {**fields, **changes}, who)


def delivered(c: PlazaClient, data: Any, what: str, key: str | None = None) -> dict[str, Any]:
    """The batch of a pull that delivered work (a finding naming what was looked for when
    the answer has work items but nothing that acknowledges them)."""
    found = ack_triple(data, key)
    if found is None:
        broken(f"{what}: looked for the batch's ack_request (a receive_ack with batch_id, view_id and "
               f"receipt), an a2a_ack_request, or a 64-hex view_id beside a 43-character receipt anywhere in "
               f"the answer and found none: {json_excerpt(data)}")
    return found


def drain(c: PlazaClient, who: str, key: str) -> None:
    """Acknowledge everything pending for ``key`` (set-up): pull, acknowledge the batch,
    pull again, until a pull delivers no batch (the document's paging: "ACK a returned
    batch and pull again while more_available"). Work is recognised by content
    (items_of): an item without a read request is work too."""
    with c.ctx.setup(f"{who} acknowledges the pending work", by="PLAZA-RECV-ACK"):
        seen: set[Any] = set()
        for _ in range(DRAIN_BATCHES):
            data = pull(c, who, key, "receive_pull (drain)", limit=40)
            batch = batch_of(c.ctx, data)
            if batch is None:
                c.ctx.expect(not items_of(c.ctx, data), "receive_pull (drain): "
                             f"work items but nothing that acknowledges them: {json_excerpt(data)}",
                             kind="malformed_answer")
                return
            if triple(c.ctx, batch) in seen:  # acknowledged, yet delivered again: PLAZA-RECV-ACK's finding
                c.ctx.fail(f"receive_pull (drain): the batch {batch.get('batch_id')} came again after "
                           "its receive_ack was served", kind="state_changed")
            seen.add(triple(c.ctx, batch))
            expect_result(c.ctx, ack(c, who, key, batch), "receive_ack (drain)")
            if not items_of(c.ctx, data) and field(data, "more_available") is not True:
                return


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


# ----------------------------------------------------------------------------------
# refusals: the served control, the ErrorInfo detail, the part not served
# ----------------------------------------------------------------------------------
def walk_values(answer: Any) -> list[Any]:
    """Every value of an answer (conformance/kit/locate.py's bounded walk)."""
    return [f.value for f in locate.walk(answer)]


def detail_type(ctx: CheckContext) -> str:
    """The type of the error detail the document names (parameterValidation.detailType)."""
    return str(ctx.profile.spec["parameterValidation"]["detailType"])


def error_info(reply: Reply, detail_type: str) -> dict[str, Any] | None:
    """The google.rpc.ErrorInfo of an error, by content: the object in error.data (a list
    of details, a details list, the detail itself, at any depth) that carries the
    document's detailType (parameterValidation.detailType) as a value."""
    return locate.object_holding(reply.error_data, detail_type)


def served(ctx: CheckContext, reply: Reply, what: str, by: str = "PLAZA-EXAMPLE-STATUS") -> None:
    """The control of a refusal row: the same request without the break, same credential
    and binding, is served; a refusal counts only then (else the row is blocked, for the
    requirement ``by`` that is about that request)."""
    with ctx.setup(f"{what} (the same request without the break) is served", by=by):
        expect_result(ctx, reply, what)


def unsupported(ctx: CheckContext, reply: Reply) -> bool:
    """The answer is the profile's documented "not served" (UNSUPPORTED_OPERATION)."""
    return not reply.ok and reply.error_code == catalog_entry(ctx.profile, UNSUPPORTED).code



# ----------------------------------------------------------------------------------
# what the parts read the same way: texts, task states, receipts
# ----------------------------------------------------------------------------------
OPEN_STATES = (SUBMITTED, WORKING)


def texts_in(c: PlazaClient, who: str, connection: str, known: Iterable[str] = ()) -> list[Any]:
    """The texts of a connection as ``who`` reads them (latest view, largest page), found by
    content: for each message record of the page, which of ``known`` (texts the check sent)
    it carries (None for one that carries none of them)."""
    size = int(c.ctx.profile.limits["read_limit_maximum_count"].value)
    data = page(c, who, connection, f"read_conversation as {who}", limit=size)
    return bodies(c.ctx, data, f"read_conversation as {who}", list(known))


def expect_state(ctx: CheckContext, task: dict[str, Any], allowed: tuple[str, ...], what: str,
                 statement: str = "") -> None:
    state = wire.state(task)
    ctx.expect(state in allowed,
               f"{what}: the task is {state!r}, {statement or 'the document allows ' + ' or '.join(allowed)}",
               kind="state_changed")


def receipt_fields(ctx: CheckContext) -> tuple[str, ...]:
    """The receipt's members the document names (intent_and_receipt.confirmed_storage)."""
    return ("message_sent", "original_message_sent")


def find_receipt(c: PlazaClient, task: Any) -> dict[str, Any] | None:
    """The send receipt of a text's task wherever the answer carries it (metadata, a data
    part of the status message, any depth): the object holding the document's
    message_sent or original_message_sent, or whose record_type is its receipt_record_type."""
    kind = evidence(c.ctx)["receipt_record_type"]
    names = receipt_fields(c.ctx)
    return next((f.value for f in locate.walk(task) if isinstance(f.value, dict)
                 and (any(n in f.value for n in names) or f.value.get("record_type") == kind)), None)


def receipt_message_id(c: PlazaClient, receipt: Any) -> Any:
    """The id of the message a receipt confirms (message.id; or the id of the message
    record, record_type message, it holds)."""
    found = dig(receipt, "message", "id")
    if found is None:
        kind = evidence(c.ctx)["message_record_type"]
        record = next((f.value for f in locate.walk(receipt) if f.value is not receipt
                       and isinstance(f.value, dict) and f.value.get("record_type") == kind), None)
        found = dig(record, "id")
    return found


def sent_message_id(c: PlazaClient, task: dict[str, Any]) -> Any:
    return receipt_message_id(c, find_receipt(c, task))


def inbox(c: PlazaClient, who: str, what: str, **fields: Any) -> dict[str, Any]:
    return c.data_of(c.command("inbox", fields, who), what)
