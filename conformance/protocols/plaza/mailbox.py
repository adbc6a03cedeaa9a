"""The table of Agent Plaza's mailbox requirements (the checks are in reads.py, inbox.py and
receive.py, their shared readers in answers.py): reading a conversation (read_conversation: views, rounds, seq
cursors, limits, no side effects, not-found alike), message evidence and message_status,
the inbox and its two cursors, mailbox_attention (inbox_summary, the working-task
locations, bounds, read requests) and durable receive (receive_pull / receive_ack /
receive_status over A2A, redelivery, exact acks, waits, isolation, the friend work kinds).

The document names some answer fields (round_no, has_more, next_request, next_after_seq,
next_before_seq, has_older, mailbox_attention and its groups, counts and flags,
read_request, focused_request, ack_request, more_available, batch_id / view_id / receipt,
next_page_request with before_updated_at and before_id, next_notices_request) but no
container names: the MUST checks find messages, items and conversations wherever a
reasonable answer puts them, and the profile's own shapes (docs/agent-plaza.md) are
SHOULDs of ``source: profile``. Group work (PLAZA-RECV-WORK-GROUP) is groups.py's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.model import Requirement
from conformance.protocols.plaza.answers import (
    ATTN,
    EVIDENCE,
    NATIVE,
    PAGING,
    READ,
    RECEIVE,
)
from conformance.protocols.plaza.client import dig
from conformance.protocols.plaza.inbox import (
    check_attn_bounds,
    check_attn_focused,
    check_attn_locations,
    check_attn_overflow,
    check_attn_pending_count,
    check_attn_read_only,
    check_attn_read_request,
    check_attn_recheck,
    check_attn_shape,
    check_attn_summary,
    check_inbox_cursor,
    check_inbox_limits,
    check_inbox_notices,
    check_inbox_shape,
    check_inbox_views,
)
from conformance.protocols.plaza.reads import (
    check_evidence_fields,
    check_read,
    check_read_backward,
    check_read_forward,
    check_read_limit,
    check_read_next,
    check_read_no_side_effects,
    check_read_not_found_alike,
    check_read_order,
    check_read_recheck,
    check_read_round,
    check_read_shape,
    check_read_views,
    check_seq_above_max,
    check_seq_exclusive,
    check_seq_format,
    check_status_latest,
    check_status_own,
    check_status_read_only,
    check_status_retrieval,
    check_status_shape,
    check_status_states,
)
from conformance.protocols.plaza.receive import (
    check_recv_a2a_follow,
    check_recv_abort_retains,
    check_recv_ack,
    check_recv_ack_exact,
    check_recv_ack_repeat,
    check_recv_batch_shape,
    check_recv_cancel_unavailable,
    check_recv_isolation,
    check_recv_more,
    check_recv_pull,
    check_recv_read_not_ack,
    check_recv_redeliver,
    check_recv_redeliver_same,
    check_recv_shape,
    check_recv_status,
    check_recv_wait,
    check_recv_work_friend,
)
from conformance.table import Table

# ----------------------------------------------------------------------------------------------
# the rows
# ----------------------------------------------------------------------------------------------
CODES = ("mailbox_codes_swapped",)


def rows(t: Table) -> list[Requirement]:
    """The mailbox requirements (read, message status, inbox, attention, durable receive)."""
    at, req, chosen = t.at, t.req, t.chosen

    def pair(rid: str, title: str, source: Any, check: Callable[..., None], faults: tuple[str, ...], error: str) -> list[Requirement]:
        return t.pair(rid, title, source, check, faults, error, CODES)

    return [
        # read_conversation
        req("PLAZA-READ", "MUST", "read_conversation is served to each participant and returns the conversation's texts",
            at(f"{READ}/operation"), check_read, ("read_drops_peer_messages",)),
        req("PLAZA-READ-SHAPE", "SHOULD", "A page is {connection_id, round_no, view, messages [record + text], has_more, ...}",
            chosen("docs/agent-plaza.md#results (read_conversation)"), check_read_shape, ("read_page_without_view",)),
        req("PLAZA-READ-ROUND", "MUST", "round_no defaults to the current round; a page read with round_no stays in that round",
            at(f"{READ}/round"), check_read_round, ("read_ignores_round", "read_default_first_round")),
        req("PLAZA-READ-VIEWS", "MUST", "Views history and latest are served; the default view is latest",
            at(f"{PAGING}/defaultView"), check_read_views, ("default_view_history",)),
        req("PLAZA-READ-FORWARD", "MUST", "An explicit after_seq selects forward history: exactly the messages with seq > after_seq",
            at(f"{PAGING}/after_seq"), check_read_forward, ("after_seq_inclusive",)),
        req("PLAZA-READ-BACKWARD", "MUST", "before_seq pages to the older messages of the latest view",
            at(f"{PAGING}/before_seq"), check_read_backward, ("before_seq_ignored",)),
        req("PLAZA-READ-ORDER", "MUST", "Every page is chronological, latest pages included",
            at(f"{PAGING}/order"), check_read_order, ("latest_newest_first",)),
        req("PLAZA-READ-LIMIT", "MUST", "A page holds 20 messages by default, limit when given, at most 50",
            at(f"{PAGING}/limitDefault"), check_read_limit, ("read_default_limit_wrong", "read_limit_plus_one")),
        req("PLAZA-READ-NEXT", "MUST", "While has_more a page carries next_request that continues exactly; forward pages next_after_seq, "
            "latest pages next_before_seq and has_older", at(f"{PAGING}/next"), check_read_next, ("next_request_repeats_page", "latest_without_has_older")),
        req("PLAZA-READ-SEQ-FORMAT", "MUST", "Seq cursors: canonical strings, safe integers normalised, unsafe numbers refused, "
            "9223372036854775807 accepted; returned cursors are canonical strings",
            at(f"/schemas/command/anyOf/{command_index(t, 'read_conversation')}/properties/after_seq"), check_seq_format,
            ("seq_number_refused", "unsafe_seq_accepted", "seq_max_refused")),
        req("PLAZA-READ-SEQ-ABOVE-MAX", "SHOULD", "A seq string above 9223372036854775807 is refused (the schema's pattern alone allows it)",
            at(f"{PAGING}/after_seq"), check_seq_above_max, ("seq_above_max_accepted",)),
        *pair("PLAZA-READ-SEQ-EXCLUSIVE", "before_seq combined with after_seq is refused", at(f"{PAGING}/before_seq"),
              check_seq_exclusive, ("seq_pair_accepted",), "A2A_INVALID_PARAMETERS"),
        req("PLAZA-READ-NO-SIDE-EFFECTS", "MUST", "A read accepts no invitation, marks nothing read, acknowledges no receive batch, completes no task",
            at(f"{READ}/semantics"), check_read_no_side_effects, ("read_accepts_invitation", "read_acks_receive")),
        *pair("PLAZA-READ-NOT-FOUND-ALIKE", "Missing and foreign conversations are refused alike (same code and reason)",
              at(f"{READ}/authorization"), check_read_not_found_alike, ("foreign_read_not_permitted",), "NOT_FOUND"),
        req("PLAZA-READ-RECHECK", "MUST", "Every read, replay and message_status rechecks contact controls: after a removal nothing is served",
            at(f"{READ}/authorization"), check_read_recheck, ("read_ignores_removal", "read_replay_cached")),
        # evidence and message_status
        req("PLAZA-EVIDENCE-FIELDS", "MUST", "Message records carry id, seq, created_at, sender, sender_kind, record_type message; a send has a send_receipt",
            at(f"{EVIDENCE}/common_fields"), check_evidence_fields, ("record_without_created_at", "receipt_record_type_wrong")),
        req("PLAZA-MSGSTATUS-STATES", "MUST", "message_status tells stored, peer_context_retrieval_observed and later_peer_message_observed apart",
            at("/messageStatus/distinguishes"), check_status_states, ("send_marks_retrieved", "retrieval_never_observed", "later_peer_not_observed")),
        req("PLAZA-MSGSTATUS-SHAPE", "SHOULD", "message_status answers message_id, seq, status and the three booleans",
            chosen("docs/agent-plaza.md#results (message_status)"), check_status_shape, ("status_without_flags",)),
        req("PLAZA-MSGSTATUS-LATEST", "MUST", "Without message_id message_status is about the caller's latest own message; with it, that message",
            at("/messageStatus/target"), check_status_latest, ("status_latest_any_sender",)),
        *pair("PLAZA-MSGSTATUS-OWN", "message_status never presents the peer's message as the caller's and serves only participants",
              at("/messageStatus/authority"), check_status_own, ("status_any_sender",), "NOT_FOUND"),
        req("PLAZA-MSGSTATUS-READ-ONLY", "MUST", "message_status changes nothing (it is no retrieval of the peer's messages)",
            at("/messageStatus/readOnly"), check_status_read_only, ("status_records_retrieval",)),
        req("PLAZA-MSGSTATUS-RETRIEVAL", "MUST", "Only the peer's authenticated read is a retrieval: not the sender's read, a refused read or a receive ack",
            at(f"{EVIDENCE}/retrieval_scope"), check_status_retrieval, ("own_read_marks_retrieved", "ack_marks_retrieved")),
        # inbox
        req("PLAZA-INBOX-VIEWS", "MUST", "inbox serves the compact and the full view, each listing the caller's conversations",
            at("/inboxPagination/view"), check_inbox_views, ("inbox_full_refused",)),
        req("PLAZA-INBOX-SHAPE", "SHOULD", "inbox answers view, conversations, next_page_request, notices, next_notices_request",
            chosen("docs/agent-plaza.md#results (inbox)"), check_inbox_shape, ("inbox_view_not_echoed",)),
        req("PLAZA-INBOX-LIMITS", "MUST", "An inbox page holds 20 conversations compact and 60 full by default, limit when given",
            at("/inboxPagination/defaultLimits"), check_inbox_limits, ("inbox_full_default_compact",)),
        req("PLAZA-INBOX-CURSOR", "MUST", "next_page_request carries before_updated_at and before_id together and pages through every conversation once",
            at("/inboxPagination/conversationCursor"), check_inbox_cursor, ("inbox_cursor_without_id",)),
        req("PLAZA-INBOX-NOTICES", "MUST", "Notices page by notices_after and next_notices_request, independently of the conversations",
            at("/inboxPagination/noticesCursor"), check_inbox_notices, ("notices_after_ignored",)),
        # attention
        req("PLAZA-ATTN-SUMMARY", "MUST", "inbox_summary answers with mailbox_attention",
            at(f"{ATTN}/summaryOperation"), check_attn_summary, ("summary_without_attention",)),
        req("PLAZA-ATTN-SHAPE", "MUST", "mailbox_attention holds the three item groups; each item carries read_request",
            at(f"{ATTN}/groups"), check_attn_shape, ("attention_item_without_read_request",)),
        req("PLAZA-ATTN-BOUNDS", "MUST", "Attention lists at most 4 items a group and counts within the scan of 32",
            at(f"{ATTN}/boundedObservation"), check_attn_bounds, ("attention_items_unbounded", "attention_scan_unbounded")),
        req("PLAZA-ATTN-OVERFLOW", "MUST", "scan_truncated or more_attention_available is true exactly when the bounds left work out",
            at(f"{ATTN}/boundedObservation/moreFields"), check_attn_overflow, ("attention_overflow_unflagged",)),
        req("PLAZA-ATTN-PENDING-COUNT", "MUST", "pending_received_invitation_count counts an invitation, opened or not",
            at(f"{ATTN}/pendingAndUnread"), check_attn_pending_count, ("opened_invitation_not_pending",)),
        req("PLAZA-ATTN-READ-ONLY", "MUST", "Reading attention accepts no invitation and sends no reply",
            at(f"{ATTN}/authority"), check_attn_read_only, ("summary_accepts_invitation",)),
        req("PLAZA-ATTN-READ-REQUEST", "MUST", "An attention item's read_request, sent as a data command, reads the item",
            at(f"{ATTN}/requestWrapping"), check_attn_read_request, ("attention_read_request_wrong_connection",)),
        req("PLAZA-ATTN-LOCATIONS", "MUST", "A working task carries mailbox_attention (status message or metadata) and stays working; "
            "control Messages carry it in a data part", at(f"{ATTN}/responseLocations"), check_attn_locations, ("working_task_without_attention",)),
        req("PLAZA-ATTN-FOCUSED", "MUST", "focused_request keeps the original GetTask request of the working task",
            at(f"{ATTN}/workingTask"), check_attn_focused, ("focused_request_other_task",)),
        req("PLAZA-ATTN-RECHECK", "MUST", "Attention rechecks contact controls: a blocked inviter's item is no longer listed",
            at(f"{ATTN}/authority/currentGrantAndContactRechecked"), check_attn_recheck, ("attention_ignores_blocks",)),
        # durable receive
        req("PLAZA-RECV-PULL", "MUST", "receive_pull over SendMessage returns the stored work at once; at most 20 items by default",
            at("/durableReceive/a2a/receive"), check_recv_pull, ("pull_returns_nothing",)),
        req("PLAZA-RECV-BATCH-SHAPE", "MUST", "A batch has a UUID batch_id, a 64-hex view_id, a 43-character receipt, an ack_request, "
            "items with working read_requests", at(f"{NATIVE}/consume"), check_recv_batch_shape, ("view_id_uppercase", "item_without_read_request")),
        req("PLAZA-RECV-SHAPE", "SHOULD", "receive_pull, receive_ack and receive_status answer the profile's fields",
            chosen("docs/agent-plaza.md#results (receive_pull, receive_ack, receive_status)"), check_recv_shape, ("status_stale_count",)),
        req("PLAZA-RECV-REDELIVER", "MUST", "Until acknowledged a pull delivers the same work again; after the ack new work only",
            at(f"{EVIDENCE}/redelivery_scope"), check_recv_redeliver, ("pull_consumes_without_ack",)),
        req("PLAZA-RECV-REDELIVER-SAME", "SHOULD", "A redelivered batch is the same batch: batch_id, view_id, receipt and items",
            chosen("docs/agent-plaza.md#durable-receive"), check_recv_redeliver_same, ("redelivery_new_batch_id",)),
        req("PLAZA-RECV-ACK", "MUST", "The returned ack_request, sent as given, acknowledges the batch",
            at(f"{NATIVE}/consume"), check_recv_ack, ("ack_does_not_advance",)),
        *pair("PLAZA-RECV-ACK-EXACT", "An ack with another batch_id, view_id, receipt or client_key is refused and acknowledges nothing",
              at(f"{NATIVE}/consume"), check_recv_ack_exact, ("ack_checks_batch_id_only",), "NOT_FOUND"),
        req("PLAZA-RECV-ACK-REPEAT", "MUST", "Repeating an ack succeeds again and acknowledges nothing more",
            at(f"{NATIVE}/consume"), check_recv_ack_repeat, ("repeat_ack_refused",)),
        req("PLAZA-RECV-STATUS", "MUST", "receive_status is served for the caller's receiver",
            at(f"/schemas/command/anyOf/{command_index(t, 'receive_status')}"), check_recv_status, ("receive_status_unserved",)),
        *pair("PLAZA-RECV-WAIT", "wait_seconds: none or 0 answers at once, a short wait returns, above 25 is refused",
              at(f"{RECEIVE}/single_request_wait_seconds"), check_recv_wait, ("no_wait_waits", "wait_above_maximum_accepted"),
              "A2A_INVALID_PARAMETERS"),
        req("PLAZA-RECV-MORE", "MUST", "more_available while more work waits beyond the batch, not once all is delivered",
            at(f"{NATIVE}/paging"), check_recv_more, ("more_available_never",)),
        *pair("PLAZA-RECV-CANCEL-UNAVAILABLE", "receive_cancel and cancel_receive are refused; the pending batch stays",
              at(f"{RECEIVE}/cancel"), check_recv_cancel_unavailable, ("receive_cancel_served",), "A2A_INVALID_PARAMETERS"),
        req("PLAZA-RECV-ABORT-RETAINS", "MUST", "A pull whose answer is dropped leaves the batch pending and recalls no message",
            at(f"{RECEIVE}/cancel/pending_batch_retained"), check_recv_abort_retains, ("pull_consumes_without_ack",)),
        *pair("PLAZA-RECV-ISOLATION", "A client_key selects the caller's own receiver: no other agent's work, no acking another's batch",
              at("/durableReceive/identity"), check_recv_isolation, ("receivers_shared_by_key",), "NOT_FOUND"),
        req("PLAZA-RECV-READ-NOT-ACK", "MUST", "Reading history, the inbox, attention or a task acknowledges no receive batch",
            at("/inboxPagination/globalAttention"), check_recv_read_not_ack, ("read_acks_receive",)),
        req("PLAZA-RECV-A2A-FOLLOW", "MUST", "A returned a2a_read_request or a2a_ack_request works when sent as given",
            at("/durableReceive/a2a/follow"), check_recv_a2a_follow, ("a2a_read_request_wrong_connection",)),
        req("PLAZA-RECV-WORK-FRIEND", "MUST", "Friend invitations, channel changes and messages arrive as receive work",
            at("/durableReceive/supported_work"), check_recv_work_friend, ("channel_changes_not_delivered",)),
    ]


def command_index(t: Table, name: str) -> int:
    """The position of a command's branch in /schemas/command/anyOf."""
    branches = t.profile.spec["schemas"]["command"]["anyOf"]
    return next(i for i, b in enumerate(branches) if dig(b, "properties", "operation", "const") == name)
