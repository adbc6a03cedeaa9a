"""Behaviours the manifest allows that the reference does not show by default: each
docstring quotes the text that allows it. No MUST may fail on one (selftest)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from conformance.kit.declare import variant
from conformance.kit.faults import replaces
from conformance.protocols.wever.reference import (
    DECLINED,
    HOUR_S,
    TASK_NOT_FOUND,
    Call,
    RelayError,
    RpcError,
    WeverReference,
    compact_json,
)


@variant
def purge_hourly(ref: WeverReference) -> None:
    """Expired tasks, tombstones, connection requests and mailboxes linger until the next
    hourly purge, or until a registration or a submission purges them; other requests
    do not purge.

    allowed by: /retention "Expired content is purged hourly and on registration/submission.\""""
    purge_now = ref.purge_expired
    hour: list[int | None] = [None]  # the UTC hour of the last purge

    @replaces(ref.purge_expired)
    def purge(original: Any, now: float) -> None:
        if hour[0] != int(now // HOUR_S):
            hour[0] = int(now // HOUR_S)
            original(now)

    def purging(action: Callable[..., Any]) -> None:
        @replaces(action)
        def act(original: Any, call: Call) -> dict[str, Any]:
            purge_now(ref.now())
            result: dict[str, Any] = original(call)
            return result

    for action in (ref.act_register_mailbox, ref.act_send_task):
        purging(action)


@variant
def repeat_decline_refused(ref: WeverReference) -> None:
    """A repeated decline_task of a declined task is refused INVALID_STATE instead of
    answering the declined task.

    allowed by: /actions/decline_task/description "Recipient declines an offered task without
    executing it." (only acceptance is said to repeat: /actions/accept_task/description
    "Repeated acceptance returns its current accepted state")"""
    @replaces(ref.act_decline_task)
    def decline(original: Any, call: Call) -> dict[str, Any]:
        task = ref.s["tasks"].get(call.args["task_id"])
        if task is not None and task["recipient_id"] == call.caller and task["state"] == DECLINED:
            raise RelayError("INVALID_STATE", "the task was already declined")
        result: dict[str, Any] = original(call)
        return result


@variant
def digest_base64(ref: WeverReference) -> None:
    """The result digest is written sha-256=<base64> (RFC 9530 style) instead of sha256:<hex>.

    allowed by: /delivery "Results are recipient-reported with an integrity digest."
    (the manifest names no algorithm or encoding)"""
    @replaces(ref.result_digest)
    def digest(original: Any, result: Any) -> str | None:
        if result is None:
            return None
        raw = hashlib.sha256(compact_json(result, sort_keys=True).encode("utf-8")).digest()
        return "sha-256=" + base64.b64encode(raw).decode("ascii")


@variant
def a2a_recipient_cancel_not_found(ref: WeverReference) -> None:
    """CancelTask by the task's recipient answers TaskNotFound instead of TaskNotCancelable.

    allowed by: /protocols/a2a/cancel_task/permission "Sender only while offered; repeated
    successful cancellation returns the canceled task." (no error is named for anyone else)"""
    @replaces(ref.a2a_cancel_task)
    def cancel(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        task_id = params.get("id") if isinstance(params, dict) else None
        task = ref.s["tasks"].get(task_id) if isinstance(task_id, str) else None
        if task is not None and task["recipient_id"] == caller and task["sender_id"] != caller:
            raise RpcError(TASK_NOT_FOUND, "TaskNotFound")
        result: dict[str, Any] = original(caller, params, headers)
        return result


@variant
def inbox_newest_first(ref: WeverReference) -> None:
    """inbox lists the newest offered or accepted tasks first.

    allowed by: /actions/inbox/description "Read up to 50 offered or accepted tasks addressed
    to your mailbox." (no order is given)"""
    @replaces(ref.inbox_tasks)
    def inbox(original: Any, recipient_id: str) -> list[dict[str, Any]]:
        mine = [t for t in ref.s["tasks"].values() if t["recipient_id"] == recipient_id
                and t["state"] in ("offered", "accepted")]
        mine.sort(key=lambda t: (t["created_at"], t["order"]), reverse=True)
        return mine[: ref.limit("inbox_tasks_count")]


@variant
def size_with_spaces(ref: WeverReference) -> None:
    """Task and result data are measured as JSON written with a space after each
    separator, not compact; allowed by: "task_or_result_bytes": 8192 (/limits), which does
    not say how data is measured."""
    @replaces(ref.task_bytes)
    def size(original: Any, data: Any) -> int:
        return len(json.dumps(data).encode("utf-8"))
