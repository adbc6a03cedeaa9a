"""Behaviours the Agent Plaza document allows but the reference does not choose: no MUST
may fail on one (selftest). Each docstring quotes the text that allows it."""

from __future__ import annotations

import json
from typing import Any

from conformance.kit.declare import variant
from conformance.kit.faults import answer, arguments, replaces
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.shared_faults import unwrapped, wrapped
from conformance.protocols.plaza.site import (
    ACTIVE,
    BLOCKED,
    CANCELED,
    DECLINED,
    TASK_NOT_CANCELABLE,
    TERMINAL_TASK_STATES,
    Issue,
    SiteError,
)

REJECTED = "TASK_STATE_REJECTED"  # A2A 1.0's (specs/a2a/a2a.proto TaskState)

variant(arguments("results_unwrapped", "result_response",
                  "SendMessage answers the bare Task or Message instead of {task} / {message}.\n"
                  "allowed by: /wireFormat/standardReferences (A2A 1.0 names the result, not a wrapper the\n"
                  "document spells out); the wrapper is the profile's SHOULD.", edit=unwrapped, when=wrapped))


def british(view: dict[str, Any], *args: Any) -> None:
    """A cancelled task's state as proto's older spelling."""
    if view["status"]["state"] == CANCELED:
        view["status"]["state"] = "TASK_STATE_CANCELLED"


variant(answer("receive_items_without_read_requests", "receive_item",
               "Receive items carry neither a native read_request nor an a2a_read_request (their kind,\n"
               "event, connection and message ids only).\n"
               "allowed by: /durableReceive/a2a/follow (\"Execute a returned a2a_read_request or\n"
               "a2a_ack_request only when present\"); /durableReceive/read_routing/native\n"
               "(\"read_transport=native or absent on existing social notices\").",
               drop=["read_request", "a2a_read_request"]))


variant(answer("cancelled_spelled_british", "task_view",
               "A cancelled task says TASK_STATE_CANCELLED (proto's older spelling).\n"
               "allowed by: /tasks/cancel (\"Only cancels this caller's task wait\": the state's name is "
               "A2A's, not the document's).", edit=british))


@variant
def submitted_reported_working(ref: PlazaReference) -> None:
    """The answer to a returnImmediately send already says working.
    allowed by: /tasks/working ("Waiting for this peer") beside /tasks/submitted ("Accepted for delivery"):
    both describe a stored text without a peer reply."""
    @replaces(ref.task_view)
    def task_view(original: Any, task: dict[str, Any], history_length: int | None = None,
                  **kwargs: Any) -> dict[str, Any]:
        kwargs["submitted"] = False
        result: dict[str, Any] = original(task, history_length, **kwargs)
        return result


@variant
def attention_in_status_message(ref: PlazaReference) -> None:
    """A working task carries mailbox_attention in a data part of its status message, not in metadata.
    allowed by: /mailboxAttention/responseLocations
    ("working Task.status.message.parts[*].data.mailbox_attention")."""
    @replaces(ref.task_view)
    def task_view(original: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        view: dict[str, Any] = original(*args, **kwargs)
        ext = view["metadata"][ref.ext]
        if "mailbox_attention" in ext:
            data = {"mailbox_attention": ext.pop("mailbox_attention"),
                    "focused_request": ext.pop("focused_request", None)}
            view["status"]["message"] = {"messageId": ref.new_uuid(), "role": "ROLE_AGENT",
                                         "parts": [{"data": data}],
                                         "contextId": view["contextId"], "taskId": view["id"]}
        return view


@variant
def seq_strings_to_nineteen_digits(ref: PlazaReference) -> None:
    """after_seq/before_seq strings of 19 digits above the int64 maximum are accepted (read as "after
    everything").
    allowed by: /schemas/command/anyOf/44/properties/after_seq/anyOf/0/pattern (^(0|[1-9]\\d{0,18})$ admits
    them)."""
    @replaces(ref.command_semantic_issues)
    def issues(original: Any, data: dict[str, Any], base: str) -> list[Issue]:
        return [i for i in original(data, base) if i.code != "maximum"]

    setattr(ref, "seq_maximum", 10**19 - 1)  # noqa: B010 (the reference's exact bound, an attribute)


@variant
def errors_with_http_statuses(ref: PlazaReference) -> None:
    """JSON-RPC errors come with HTTP 4xx statuses (400 for parameters, 404 for not found, 409 for state).
    allowed by: /wireFormat/jsonrpc (the document gives no HTTP status for a JSON-RPC error)."""
    statuses = {"A2A_INVALID_PARAMETERS": 400, "INVALID_REQUEST": 400, "NOT_FOUND": 404,
                "TASK_NOT_FOUND": 404, "NOT_PERMITTED": 409, "INVALID_STATE": 409, "CONTEXT_CONSUMED": 409,
                "TASK_NOT_CANCELABLE": 409}

    @replaces(ref.rpc_error)
    def rpc_error(original: Any, err: SiteError) -> Any:
        out = original(err)
        out.status = statuses.get(err.name, out.status)
        return out


@variant
def validation_issue_fields(ref: PlazaReference) -> None:
    """Validation issues name the field as "field" and carry a short human message.
    allowed by: /parameterValidation/metadataFormat ("safe field paths/codes", no key names given)."""
    @replaces(ref.invalid_params)
    def invalid_params(original: Any, method: str, issues: list[Issue]) -> SiteError:
        err: SiteError = original(method, issues)
        listed = json.loads(err.metadata["validationIssues"])
        err.metadata["validationIssues"] = json.dumps([{"field": i["path"], "code": i["code"],
                                                        "message": "invalid"}
                                                       for i in listed])
        return err


@variant
def text_counted_in_utf16(ref: PlazaReference) -> None:
    """The 600-character limit counts UTF-16 code units (a character outside the BMP counts twice).
    allowed by: /wireFormat/textMaximumCharacters (600 "characters", without saying which unit)."""
    limit = ref.limit("text_characters_count")

    @replaces(ref.part_issues)
    def part_issues(original: Any, part: Any, base: str) -> list[Issue]:
        found: list[Issue] = original(part, base)
        text = part.get("text") if isinstance(part, dict) else None
        if isinstance(text, str) and not found and len(text.encode("utf-16-le")) // 2 > limit:
            found.append(Issue(f"{base}.text", "maxLength"))
        return found


@variant
def envelope_replay_answered(ref: PlazaReference) -> None:
    """A replayed envelope (the same one again) is answered as stored, without a second copy.
    allowed by: /durableReceive/private_chat/message_evidence/redelivery_scope ("Repeating the same message
    ID is not a newly created message"): refusing the replay or answering it without storing it again both
    keep that."""
    @replaces(ref.cmd_private_send)
    def send(original: Any, who: Any, data: dict[str, Any]) -> dict[str, Any]:
        env = data.get("envelope") or {}
        stored = [e["envelope"] for c in ref.s["private_channels"].values() for e in c["envelopes"]] \
            if ref.seen_message_id(env.get("message_id", "")) else []
        if env in stored:  # the very same envelope again; another one under its id is still refused
            channel = ref.s["private_message_ids"][env["message_id"]]
            return {"stored": False, "connection_id": data.get("connection_id"), "channel_id": channel,
                    "message_id": env["message_id"]}
        result: dict[str, Any] = original(who, data)
        return result


@variant
def notices_name_events(ref: PlazaReference) -> None:
    """Inbox notices carry an event id of their own and the peer (id and alias), not the connection's id.
    allowed by: /inboxPagination/noticesCursor ("notices_after and next_notices_request paginate
    independently of the conversation history": the document gives a notice no fields)."""
    @replaces(ref.add_notice)
    def add_notice(original: Any, visitor_id: str, kind: str, conn: dict[str, Any], change: str) -> None:
        original(visitor_id, kind, conn, change)
        notice = ref.s["notices"][visitor_id][-1]
        notice["event_id"] = ref.new_uuid()
        notice["peer"] = ref.person(ref.peer_of(conn, visitor_id))

    @replaces(ref.notice_view)
    def notice_view(original: Any, notice: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = original(notice)
        event = out.pop("event_id", None)
        return {"event_id": event, **{k: v for k, v in out.items() if k != "connection_id"}}


@variant
def inbox_cursor_refused_unless_paired(ref: PlazaReference) -> None:
    """inbox refuses half of its conversation cursor, and a before_id that names no conversation, as an
    invalid parameter.
    allowed by: /inboxPagination/conversationCursor ("Copy before_updated_at and before_id together from
    next_page_request; do not synthesize or round the timestamp")."""
    pair = ("before_updated_at", "before_id")

    @replaces(ref.command_semantic_issues)
    def issues(original: Any, data: dict[str, Any], base: str) -> list[Issue]:
        found: list[Issue] = original(data, base)
        if data.get("operation") != "inbox":
            return found
        given = [f for f in pair if f in data]
        if len(given) == 1:
            found.append(Issue(f"{base}.{pair[1] if given[0] == pair[0] else pair[0]}", "dependentRequired"))
        elif given and data["before_id"] not in ref.s["connections"]:
            found.append(Issue(f"{base}.before_id", "const"))
        return found


COUNTED = ("pending_received_invitation_count", "unread_count", "scan_truncated", "more_attention_available")


def counts_nested(out: dict[str, Any], *args: Any) -> None:
    """A variant's edit: mailbox_attention's counts and flags under its ``counts``."""
    counts = out.setdefault("counts", {})
    for name in COUNTED:
        if name in out:
            counts[name] = out.pop(name)


variant(answer("attention_counts_nested", "mailbox_attention",
               "mailbox_attention keeps pending_received_invitation_count, unread_count and the overflow\n"
               "flags under its counts object, not at its top.\n"
               "allowed by: /mailboxAttention/pendingAndUnread and\n"
               "/mailboxAttention/boundedObservation/moreFields (the document names the count and the\n"
               "flags, and no place for them).", edit=counts_nested))


@variant
def block_without_send_effect(ref: PlazaReference) -> None:
    """friend_control block and unblock are served and recorded, but change who may write nothing: texts,
    replays and private sends flow in a blocked connection as before the block.
    allowed by: /schemas/command/anyOf/49/properties/decision (the document lists block and unblock and
    gives them no meaning for sends)."""
    def unblocked(conn: dict[str, Any]) -> dict[str, Any]:
        return {**conn, "state": conn["state_before_block"] or ACTIVE} if conn["state"] == BLOCKED else conn

    for method in (ref.check_can_text, ref.check_can_replay, ref.check_private_friendship):
        def check(original: Any, conn: dict[str, Any], caller: str) -> None:
            original(unblocked(conn), caller)
        replaces(method)(check)


@variant
def declined_invitation_rejected(ref: PlazaReference) -> None:
    """A declined invitation's task becomes TASK_STATE_REJECTED, and CancelTask of it is refused
    (TASK_NOT_CANCELABLE).
    allowed by: /wireFormat/standardReferences (A2A 1.0, specs/a2a/a2a.proto TaskState: TASK_STATE_REJECTED
    "Indicates that the agent has decided to not perform the task. This may be done during initial task
    creation or later ... This is a terminal state."; a task in a terminal state is not cancelable)."""
    @replaces(ref.task_state)
    def task_state(original: Any, task: dict[str, Any]) -> str:
        state: str = original(task)
        declined = ref.s["connections"][task["connection_id"]]["state"] == DECLINED
        return REJECTED if declined and state not in TERMINAL_TASK_STATES else state

    @replaces(ref.rpc_cancel_task)
    def cancel(original: Any, call: Any) -> Any:
        if ref.task_state(ref.owned_task(call.principal.visitor_id, call.params["id"])) == REJECTED:
            raise SiteError(TASK_NOT_CANCELABLE, "the invitation was declined: its task is rejected")
        return original(call)
