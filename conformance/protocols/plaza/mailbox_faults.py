"""Named faults of the Agent Plaza reference for the mailbox requirements (mailbox.py):
conversation reads, message evidence and message_status, the inbox, mailbox attention and
durable receive. Each patches one behaviour of a ``PlazaReference`` instance; the
requirements that name it must catch it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from conformance.documents.schemas import validator_for
from conformance.faults import replaces
from conformance.protocols.plaza.reference import (
    ACTIVE,
    BLOCKED,
    FRIEND_CHANNEL_CHANGE,
    INVITATION,
    NOT_FOUND,
    NOT_PERMITTED,
    UNSUPPORTED_OPERATION,
    Call,
    Issue,
    PlazaReference,
    Principal,
    SiteError,
    Wait,
)
from conformance.table import FaultRegistry

FAULTS = FaultRegistry()
fault: Callable[[Callable[[Any], None]], Callable[[Any], None]] = FAULTS
Data = dict[str, Any]

RETRIEVED, LATER_PEER = "peer_context_retrieval_observed", "later_peer_message_observed"


def _swap(ref: PlazaReference, method: str, replacement: Callable[..., Any]) -> None:
    """``ref.<method>`` becomes ``replacement`` (which ignores the original)."""
    setattr(ref, method, replacement)


def _patch_limit(ref: PlazaReference, name: str, value: int) -> None:
    """``ref.limit(name)`` answers ``value``; every other limit stays."""
    @replaces(ref, "limit")
    def limit(original: Any, asked: str) -> int:
        return value if asked == name else int(original(asked))


def _unbounded(ref: PlazaReference, command: str, field: str) -> None:
    """The command's schema without the ``maximum`` of ``field`` (and of its anyOf branches)."""
    schema = copy.deepcopy(ref.branches[command])
    prop = schema["properties"][field]
    for node in [prop, *prop.get("anyOf", [])]:
        node.pop("maximum", None)
    ref.validators.commands[command] = validator_for(schema)


# ------------------------------------------------------------------ refusal codes

SWAPPED = {NOT_FOUND: NOT_PERMITTED, "A2A_INVALID_PARAMETERS": UNSUPPORTED_OPERATION}


@fault
def mailbox_codes_swapped(ref: PlazaReference) -> None:
    """Refusals keep their place but carry another catalogued code: NOT_FOUND becomes
    NOT_PERMITTED and A2A_INVALID_PARAMETERS becomes UNSUPPORTED_OPERATION."""
    @replaces(ref, "rpc_error")
    def rpc_error(original: Any, err: SiteError) -> Any:
        return original(SiteError(SWAPPED.get(err.name, err.name), err.message, err.metadata, err.status))


# ------------------------------------------------------------------ read_conversation


@fault
def read_drops_peer_messages(ref: PlazaReference) -> None:
    """A page holds only the caller's own messages."""
    @replaces(ref, "cmd_read_conversation")
    def read(original: Any, who: Principal, data: Data) -> Data:
        page: Data = original(who, data)
        page["messages"] = [m for m in page["messages"] if m["sender"] == who.visitor_id]
        return page


@fault
def read_page_without_view(ref: PlazaReference) -> None:
    """A page does not say which view it is (the profile's page names it)."""
    @replaces(ref, "cmd_read_conversation")
    def read(original: Any, who: Principal, data: Data) -> Data:
        page: Data = original(who, data)
        page.pop("view", None)
        return page


@fault
def read_ignores_round(ref: PlazaReference) -> None:
    """round_no is ignored: a pinned page moves to the current round."""
    @replaces(ref, "cmd_read_conversation")
    def read(original: Any, who: Principal, data: Data) -> Data:
        return dict(original(who, {k: v for k, v in data.items() if k != "round_no"}))


@fault
def read_default_first_round(ref: PlazaReference) -> None:
    """Without round_no the read returns round 1, not the current round."""
    @replaces(ref, "cmd_read_conversation")
    def read(original: Any, who: Principal, data: Data) -> Data:
        return dict(original(who, {"round_no": 1, **data}))


@fault
def default_view_history(ref: PlazaReference) -> None:
    """Without view (and cursors) the page is the oldest history page, not the latest."""
    @replaces(ref, "cmd_read_conversation")
    def read(original: Any, who: Principal, data: Data) -> Data:
        plain = not {"view", "after_seq", "before_seq"} & set(data)
        return dict(original(who, {**data, "view": "history"} if plain else data))


@fault
def after_seq_inclusive(ref: PlazaReference) -> None:
    """Forward history includes the message at after_seq itself."""
    @replaces(ref, "forward_page")
    def forward(original: Any, messages: list[Data], after: int, limit: int, base: Data) -> Data:
        return dict(original(messages, after - 1, limit, base))


@fault
def before_seq_ignored(ref: PlazaReference) -> None:
    """before_seq is ignored: the older page is the latest page again."""
    @replaces(ref, "latest_page")
    def latest(original: Any, messages: list[Data], before: int | None, limit: int, base: Data) -> Data:
        return dict(original(messages, None, limit, base))


@fault
def latest_newest_first(ref: PlazaReference) -> None:
    """Latest pages list the newest message first."""
    @replaces(ref, "latest_page")
    def latest(original: Any, messages: list[Data], before: int | None, limit: int, base: Data) -> Data:
        page: Data = original(messages, before, limit, base)
        page["messages"] = page["messages"][::-1]
        return page


@fault
def read_default_limit_wrong(ref: PlazaReference) -> None:
    """Without limit a page holds the maximum (50), not the default (20)."""
    @replaces(ref, "cmd_read_conversation")
    def read(original: Any, who: Principal, data: Data) -> Data:
        return dict(original(who, {"limit": ref.limit("read_limit_maximum_count"), **data}))


@fault
def read_limit_plus_one(ref: PlazaReference) -> None:
    """A page holds one message more than the limit asked for."""
    @replaces(ref, "cmd_read_conversation")
    def read(original: Any, who: Principal, data: Data) -> Data:
        return dict(original(who, {**data, "limit": data["limit"] + 1} if "limit" in data else data))


@fault
def next_request_repeats_page(ref: PlazaReference) -> None:
    """A forward page's next_request carries the page's own after_seq: it returns the same page."""
    @replaces(ref, "forward_page")
    def forward(original: Any, messages: list[Data], after: int, limit: int, base: Data) -> Data:
        page: Data = original(messages, after, limit, base)
        if page.get("next_request"):
            page["next_request"]["after_seq"] = str(after)
        return page


@fault
def latest_without_has_older(ref: PlazaReference) -> None:
    """Latest pages say has_older false although older messages exist."""
    @replaces(ref, "latest_page")
    def latest(original: Any, messages: list[Data], before: int | None, limit: int, base: Data) -> Data:
        page: Data = original(messages, before, limit, base)
        page["has_older"] = False
        return page


@fault
def seq_number_refused(ref: PlazaReference) -> None:
    """after_seq / before_seq as safe JSON integers are refused instead of normalised."""
    @replaces(ref, "command_semantic_issues")
    def issues(original: Any, data: Data, base: str) -> list[Issue]:
        found: list[Issue] = original(data, base)
        return found + [Issue(f"{base}.{k}", "type") for k in ("after_seq", "before_seq")
                        if isinstance(data.get(k), int) and data["operation"] == "read_conversation"]


@fault
def unsafe_seq_accepted(ref: PlazaReference) -> None:
    """after_seq / before_seq numbers above 2^53-1 are accepted (their schema maximum is dropped)."""
    for name in ("after_seq", "before_seq"):
        _unbounded(ref, "read_conversation", name)


@fault
def seq_max_refused(ref: PlazaReference) -> None:
    """The stated maximum 9223372036854775807 itself is refused (an off-by-one cap)."""
    ref.seq_maximum -= 1


@fault
def seq_above_max_accepted(ref: PlazaReference) -> None:
    """Seq strings above 9223372036854775807 are accepted (only the schema's 19-digit pattern is checked)."""
    ref.seq_maximum = 10**19 - 1


@fault
def seq_pair_accepted(ref: PlazaReference) -> None:
    """after_seq and before_seq together are served (as forward history) instead of refused."""
    @replaces(ref, "command_semantic_issues")
    def issues(original: Any, data: Data, base: str) -> list[Issue]:
        return [i for i in original(data, base) if i.code != "not"]


@fault
def read_accepts_invitation(ref: PlazaReference) -> None:
    """The invitee's read of a pending invitation accepts it."""
    @replaces(ref, "cmd_read_conversation")
    def read(original: Any, who: Principal, data: Data) -> Data:
        page: Data = original(who, data)
        conn = ref.s["connections"][data["connection_id"]]
        if conn["state"] == INVITATION and conn["invitee"] == who.visitor_id:
            ref.respond_accept(conn, who.visitor_id, {})
        return page


@fault
def read_acks_receive(ref: PlazaReference) -> None:
    """A read acknowledges the caller's outstanding receive batches."""
    @replaces(ref, "cmd_read_conversation")
    def read(original: Any, who: Principal, data: Data) -> Data:
        page: Data = original(who, data)
        for key, receiver in ref.s["receivers"].items():
            batch = receiver["outstanding"]
            if key.startswith(f"{who.visitor_id}|") and batch is not None:
                receiver["acked"] += len(batch["items"])
                receiver["last_acked"], receiver["outstanding"] = batch, None
        return page


@fault
def foreign_read_not_permitted(ref: PlazaReference) -> None:
    """A foreign conversation is refused NOT_PERMITTED, a missing one NOT_FOUND: the answer tells them apart."""
    @replaces(ref, "readable_connection")
    def readable(original: Any, caller: str, connection_id: str) -> Data:
        conn = ref.s["connections"].get(connection_id)
        if conn is not None and caller not in (conn["inviter"], conn["invitee"]):
            raise SiteError(NOT_PERMITTED, "this conversation is not yours")
        return dict(original(caller, connection_id))


@fault
def read_ignores_removal(ref: PlazaReference) -> None:
    """Reads skip the contact controls: a removed (or blocked) connection stays readable."""
    _swap(ref, "check_can_read", lambda conn, visitor_id: None)


@fault
def read_replay_cached(ref: PlazaReference) -> None:
    """A replayed read_conversation (same messageId) answers the stored page instead of rechecking."""
    cache: dict[str, Any] = {}

    @replaces(ref, "run_command")
    def run(original: Any, call: Call, message: Data, data: Data) -> Any:
        key = ref.message_id_key(call.principal.visitor_id, message["messageId"])
        if data.get("operation") != "read_conversation":
            return original(call, message, data)
        if key not in cache:
            cache[key] = original(call, message, data)
        return copy.deepcopy(cache[key])


# ------------------------------------------------------------------ evidence and message_status


@fault
def record_without_created_at(ref: PlazaReference) -> None:
    """Message records (pages and receipts) lack created_at."""
    @replaces(ref, "message_evidence")
    def evidence(original: Any, msg: Data, with_text: bool = False) -> Data:
        out: Data = original(msg, with_text)
        out.pop("created_at", None)
        return out


@fault
def receipt_record_type_wrong(ref: PlazaReference) -> None:
    """A send receipt says record_type message instead of send_receipt."""
    @replaces(ref, "receipt")
    def receipt(original: Any, msg: Data, replay: bool = False) -> Data:
        return {**original(msg, replay), "record_type": "message"}


@fault
def send_marks_retrieved(ref: PlazaReference) -> None:
    """Storing a message records it as retrieved by the peer."""
    @replaces(ref, "store_message")
    def store(original: Any, conn: Data, sender: str, text: str, client_message_id: str) -> Data:
        msg: Data = original(conn, sender, text, client_message_id)
        conn["read_marks"][ref.peer_of(conn, sender)] = conn["last_seq"]
        return msg


@fault
def retrieval_never_observed(ref: PlazaReference) -> None:
    """A successful read records no retrieval observation."""
    _swap(ref, "mark_retrieved", lambda conn, visitor_id: None)


@fault
def later_peer_not_observed(ref: PlazaReference) -> None:
    """message_status never reports a later peer message."""
    @replaces(ref, "cmd_message_status")
    def status(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        out[LATER_PEER] = False
        out["status"] = RETRIEVED if out[RETRIEVED] else "stored"
        return out


@fault
def status_without_flags(ref: PlazaReference) -> None:
    """message_status answers only its status, without the three booleans."""
    @replaces(ref, "cmd_message_status")
    def status(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        for name in ("stored", RETRIEVED, LATER_PEER):
            out.pop(name, None)
        return out


@fault
def status_latest_any_sender(ref: PlazaReference) -> None:
    """Without message_id, message_status is about the latest message of either participant."""
    @replaces(ref, "cmd_message_status")
    def status(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        if "message_id" not in data:
            last = ref.s["connections"][data["connection_id"]]["messages"][-1]
            out.update(message_id=last["id"], seq=str(last["seq"]))
        return out


@fault
def status_any_sender(ref: PlazaReference) -> None:
    """message_status serves the peer's message as if it were the caller's sent message."""
    @replaces(ref, "cmd_message_status")
    def status(original: Any, who: Principal, data: Data) -> Data:
        try:
            return dict(original(who, data))
        except SiteError:
            conn = ref.readable_connection(who.visitor_id, data["connection_id"])
            msg = ref.find_message(conn, str(data.get("message_id")))
            if msg is None:
                raise
            return {"connection_id": conn["id"], "message_id": msg["id"], "seq": str(msg["seq"]), "status": "stored",
                    "stored": True, RETRIEVED: False, LATER_PEER: False}


@fault
def status_records_retrieval(ref: PlazaReference) -> None:
    """message_status counts as a read: it records the caller's retrieval of the context."""
    @replaces(ref, "cmd_message_status")
    def status(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        ref.mark_retrieved(ref.s["connections"][data["connection_id"]], who.visitor_id)
        return out


@fault
def own_read_marks_retrieved(ref: PlazaReference) -> None:
    """Any read of the conversation, the sender's own too, records the peer's retrieval."""
    @replaces(ref, "mark_retrieved")
    def mark(original: Any, conn: Data, visitor_id: str) -> None:
        original(conn, visitor_id)
        original(conn, ref.peer_of(conn, visitor_id))


@fault
def ack_marks_retrieved(ref: PlazaReference) -> None:
    """Acknowledging a receive batch records a retrieval of its conversations."""
    @replaces(ref, "cmd_receive_ack")
    def ack(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        batch = ref.s["receivers"][ref.receiver_key(who.visitor_id, data["client_key"])]["last_acked"]
        for item in batch["items"] if batch else []:
            ref.mark_retrieved(ref.s["connections"][item["connection_id"]], who.visitor_id)
        return out


# ------------------------------------------------------------------ inbox


@fault
def inbox_full_refused(ref: PlazaReference) -> None:
    """The full inbox view is refused."""
    @replaces(ref, "cmd_inbox")
    def inbox(original: Any, who: Principal, data: Data) -> Data:
        if data.get("view") == "full":
            raise SiteError(UNSUPPORTED_OPERATION, "the full view is not served")
        return dict(original(who, data))


@fault
def inbox_view_not_echoed(ref: PlazaReference) -> None:
    """The inbox answer does not name its view."""
    @replaces(ref, "cmd_inbox")
    def inbox(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        out.pop("view", None)
        return out


@fault
def inbox_full_default_compact(ref: PlazaReference) -> None:
    """A full inbox page holds the compact default (20) instead of 60."""
    @replaces(ref, "cmd_inbox")
    def inbox(original: Any, who: Principal, data: Data) -> Data:
        if data.get("view") == "full" and "limit" not in data:
            data = {**data, "limit": ref.limit("inbox_compact_default_count")}
        return dict(original(who, data))


@fault
def inbox_cursor_without_id(ref: PlazaReference) -> None:
    """next_page_request carries before_updated_at without before_id."""
    @replaces(ref, "cmd_inbox")
    def inbox(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        if out.get("next_page_request"):
            out["next_page_request"].pop("before_id", None)
        return out


@fault
def notices_after_ignored(ref: PlazaReference) -> None:
    """notices_after is ignored: next_notices_request returns the first notices again."""
    @replaces(ref, "notice_page")
    def notices(original: Any, caller: str, after: str | None, limit: int, view: str) -> Any:
        return original(caller, None, limit, view)


# ------------------------------------------------------------------ mailbox attention


@fault
def summary_without_attention(ref: PlazaReference) -> None:
    """inbox_summary answers its counts under another name than mailbox_attention."""
    @replaces(ref, "cmd_inbox_summary")
    def summary(original: Any, who: Principal, data: Data) -> Data:
        return {"attention": original(who, data)["mailbox_attention"]}


@fault
def attention_item_without_read_request(ref: PlazaReference) -> None:
    """Attention items carry no read_request."""
    @replaces(ref, "attention_item")
    def item(original: Any, conn: Data, visitor_id: str) -> Data:
        out: Data = original(conn, visitor_id)
        out.pop("read_request", None)
        return out


@fault
def attention_items_unbounded(ref: PlazaReference) -> None:
    """Attention lists every candidate item, past itemsLimit."""
    _patch_limit(ref, "attention_items_count", 10_000)


@fault
def attention_scan_unbounded(ref: PlazaReference) -> None:
    """Attention scans every relationship, past scanLimit (counts cover them all)."""
    _patch_limit(ref, "attention_scan_count", 10_000)


@fault
def attention_overflow_unflagged(ref: PlazaReference) -> None:
    """scan_truncated and more_attention_available stay false whatever the bounds left out."""
    @replaces(ref, "mailbox_attention")
    def attention(original: Any, visitor_id: str) -> Data:
        return {**original(visitor_id), "scan_truncated": False, "more_attention_available": False}


@fault
def opened_invitation_not_pending(ref: PlazaReference) -> None:
    """pending_received_invitation_count counts only invitations the invitee has not opened."""
    @replaces(ref, "mailbox_attention")
    def attention(original: Any, visitor_id: str) -> Data:
        out: Data = original(visitor_id)
        out["pending_received_invitation_count"] = sum(
            1 for c in ref.connections_of(visitor_id)
            if c["state"] == INVITATION and c["invitee"] == visitor_id and visitor_id not in c["read_marks"])
        return out


@fault
def summary_accepts_invitation(ref: PlazaReference) -> None:
    """inbox_summary accepts the caller's pending invitations."""
    @replaces(ref, "cmd_inbox_summary")
    def summary(original: Any, who: Principal, data: Data) -> Data:
        for conn in ref.connections_of(who.visitor_id):
            if conn["state"] == INVITATION and conn["invitee"] == who.visitor_id:
                ref.respond_accept(conn, who.visitor_id, {})
        return dict(original(who, data))


@fault
def attention_read_request_wrong_connection(ref: PlazaReference) -> None:
    """An attention item's read_request names a connection that does not exist."""
    @replaces(ref, "attention_item")
    def item(original: Any, conn: Data, visitor_id: str) -> Data:
        out: Data = original(conn, visitor_id)
        out["read_request"] = {**out["read_request"], "connection_id": ref.new_uuid()}
        return out


@fault
def working_task_without_attention(ref: PlazaReference) -> None:
    """A working task carries no mailbox_attention."""
    @replaces(ref, "task_view")
    def view(original: Any, task: Data, *args: Any, **kwargs: Any) -> Data:
        out: Data = original(task, *args, **kwargs)
        out["metadata"][ref.ext].pop("mailbox_attention", None)
        return out


@fault
def focused_request_other_task(ref: PlazaReference) -> None:
    """focused_request names another task id than the working task's."""
    @replaces(ref, "task_view")
    def view(original: Any, task: Data, *args: Any, **kwargs: Any) -> Data:
        out: Data = original(task, *args, **kwargs)
        focused = out["metadata"][ref.ext].get("focused_request")
        if focused:
            focused["params"]["id"] = ref.new_uuid()
        return out


@fault
def attention_ignores_blocks(ref: PlazaReference) -> None:
    """Attention does not recheck contact controls: a blocked connection is listed as before the block."""
    @replaces(ref, "mailbox_attention")
    def attention(original: Any, visitor_id: str) -> Data:
        blocked = [c for c in ref.connections_of(visitor_id) if c["state"] == BLOCKED]
        for conn in blocked:
            conn["state"] = conn["state_before_block"] or ACTIVE
        try:
            return dict(original(visitor_id))
        finally:
            for conn in blocked:
                conn["state"] = BLOCKED


# ------------------------------------------------------------------ durable receive


@fault
def pull_returns_nothing(ref: PlazaReference) -> None:
    """receive_pull answers no batch even with work pending."""
    @replaces(ref, "pull")
    def pull(original: Any, caller: str, data: Data) -> Data:
        return {**original(caller, data), "batch": None, "ack_request": None, "a2a_ack_request": None}


@fault
def view_id_uppercase(ref: PlazaReference) -> None:
    """A batch's view_id is upper-case hex (receive_ack's pattern is lowercase)."""
    @replaces(ref, "new_batch")
    def batch(original: Any, items: list[Data]) -> Data:
        out: Data = original(items)
        out["view_id"] = out["view_id"].upper()
        return out


@fault
def item_without_read_request(ref: PlazaReference) -> None:
    """Receive items carry no native read_request."""
    @replaces(ref, "receive_item")
    def item(original: Any, raw: Data) -> Data:
        out: Data = original(raw)
        out.pop("read_request", None)
        return out


@fault
def status_stale_count(ref: PlazaReference) -> None:
    """receive_status counts every item ever logged as pending, acknowledged or not."""
    @replaces(ref, "cmd_receive_status")
    def status(original: Any, who: Principal, data: Data) -> Data:
        return {**original(who, data), "pending_count": len(ref.s["logs"].get(who.visitor_id, []))}


@fault
def pull_consumes_without_ack(ref: PlazaReference) -> None:
    """A pull acknowledges its own batch: work not acknowledged by the client is gone."""
    @replaces(ref, "pull")
    def pull(original: Any, caller: str, data: Data) -> Data:
        out: Data = original(caller, data)
        receiver = ref.receiver(caller, data["client_key"])
        batch = receiver["outstanding"]
        if batch is not None:
            receiver["acked"] += len(batch["items"])
            receiver["last_acked"], receiver["outstanding"] = batch, None
        return out


@fault
def redelivery_new_batch_id(ref: PlazaReference) -> None:
    """An unacknowledged batch comes again as a new batch (new batch_id, view_id, receipt) of the same items."""
    @replaces(ref, "pull")
    def pull(original: Any, caller: str, data: Data) -> Data:
        receiver = ref.receiver(caller, data["client_key"])
        if receiver["outstanding"] is not None:
            size = len(receiver["outstanding"]["items"])
            receiver["outstanding"] = ref.new_batch(ref.pending_items(caller, receiver)[:size])
        return dict(original(caller, data))


@fault
def ack_does_not_advance(ref: PlazaReference) -> None:
    """receive_ack answers success but leaves the receiver where it was."""
    @replaces(ref, "cmd_receive_ack")
    def ack(original: Any, who: Principal, data: Data) -> Data:
        key = ref.receiver_key(who.visitor_id, data["client_key"])
        before = copy.deepcopy(ref.s["receivers"].get(key))
        out: Data = original(who, data)
        ref.s["receivers"][key] = before
        return out


@fault
def ack_checks_batch_id_only(ref: PlazaReference) -> None:
    """receive_ack matches the batch_id alone: another view_id or receipt is accepted."""
    @replaces(ref, "cmd_receive_ack")
    def ack(original: Any, who: Principal, data: Data) -> Data:
        stored = ref.s["receivers"].get(ref.receiver_key(who.visitor_id, data["client_key"]))
        batch = stored["outstanding"] if stored else None
        if batch is not None and batch["batch_id"] == data["batch_id"]:
            data = {**data, "view_id": batch["view_id"], "receipt": batch["receipt"]}
        return dict(original(who, data))


@fault
def repeat_ack_refused(ref: PlazaReference) -> None:
    """The ack of the last acknowledged batch, repeated after a lost answer, is refused."""
    @replaces(ref, "cmd_receive_ack")
    def ack(original: Any, who: Principal, data: Data) -> Data:
        stored = ref.s["receivers"].get(ref.receiver_key(who.visitor_id, data["client_key"]))
        done = stored["last_acked"] if stored else None
        if done is not None and (done["batch_id"], done["view_id"], done["receipt"]) == (data["batch_id"], data["view_id"], data["receipt"]):
            raise SiteError(NOT_FOUND, "no such batch")
        return dict(original(who, data))


@fault
def receive_status_unserved(ref: PlazaReference) -> None:
    """receive_status is answered UNSUPPORTED_OPERATION."""
    @replaces(ref, "cmd_receive_status")
    def status(original: Any, who: Principal, data: Data) -> Data:
        raise SiteError(UNSUPPORTED_OPERATION, "receive_status is not served")


@fault
def no_wait_waits(ref: PlazaReference) -> None:
    """A pull without wait_seconds (or with 0) and nothing pending waits 1.2 s instead of answering at once."""
    @replaces(ref, "cmd_receive_pull")
    def pull(original: Any, who: Principal, data: Data) -> Any:
        idle = not ref.pending_items(who.visitor_id, ref.receiver(who.visitor_id, data["client_key"]))
        if data.get("wait_seconds", 0) == 0 and idle:
            return Wait(ready=lambda: False, finish=lambda: ref.pull(who.visitor_id, data), seconds=1.2)
        return original(who, data)


@fault
def wait_above_maximum_accepted(ref: PlazaReference) -> None:
    """wait_seconds above 25 is accepted (the schema maximum is dropped)."""
    _unbounded(ref, "receive_pull", "wait_seconds")


@fault
def more_available_never(ref: PlazaReference) -> None:
    """more_available is always false, even with work left beyond the batch."""
    @replaces(ref, "pull")
    def pull(original: Any, caller: str, data: Data) -> Data:
        return {**original(caller, data), "more_available": False}


CANCEL_NAMES = ("receive_cancel", "cancel_receive")


@fault
def receive_cancel_served(ref: PlazaReference) -> None:
    """receive_cancel / cancel_receive are served and drop the outstanding batch."""
    @replaces(ref, "command_issues")
    def issues(original: Any, data: Any, base: str) -> list[Issue]:
        if isinstance(data, dict) and data.get("operation") in CANCEL_NAMES:
            return []
        return list(original(data, base))

    @replaces(ref, "run_command")
    def run(original: Any, call: Call, message: Data, data: Data) -> Any:
        if data["operation"] not in CANCEL_NAMES:
            return original(call, message, data)
        receiver = ref.receiver(call.principal.visitor_id, str(data.get("client_key")))
        receiver["outstanding"] = None
        return {"message": ref.command_message(data["operation"], {"canceled": True}, None)}


@fault
def receivers_shared_by_key(ref: PlazaReference) -> None:
    """A client_key names one receiver for every agent: another agent's key reaches its work."""
    _swap(ref, "receiver_key", lambda caller, client_key: client_key)


@fault
def a2a_read_request_wrong_connection(ref: PlazaReference) -> None:
    """A receive item's a2a_read_request names a connection that does not exist."""
    @replaces(ref, "receive_item")
    def item(original: Any, raw: Data) -> Data:
        out: Data = original(raw)
        other = ref.new_uuid()
        request = out["a2a_read_request"]
        request["params"]["message"]["contextId"] = other
        request["params"]["message"]["parts"][0]["data"]["connection_id"] = other
        return out


@fault
def channel_changes_not_delivered(ref: PlazaReference) -> None:
    """Connection events (accepted, declined, removed, ...) become notices but no receive work."""
    @replaces(ref, "connection_event")
    def event(original: Any, conn: Data, actor: str, change: str) -> None:
        ref.add_notice(ref.peer_of(conn, actor), FRIEND_CHANNEL_CHANGE, conn, change)
