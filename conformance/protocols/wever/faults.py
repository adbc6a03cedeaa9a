"""Named faults of the Wever reference relay: each patches one behaviour of a
``WeverReference`` instance, and the requirements that name it must catch it.

Each fault replaces the fewest methods that make the relay break the one rule its
name says, and nothing else: a check that catches it catches that rule."""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from conformance.faults import replaces
from conformance.protocols.wever.reference import (
    ACCEPTED,
    ALLOWED,
    CANCELLED,
    DECLINED,
    DENIED,
    INBOX_STATES,
    OFFERED,
    PENDING,
    TASK_NOT_CANCELABLE,
    Call,
    RelayError,
    RpcError,
    WeverReference,
)
from conformance.table import FaultRegistry

Fault = Callable[[WeverReference], None]
FAULTS = FaultRegistry()
fault = FAULTS


def _constant(ref: WeverReference, method: str, value: Any) -> None:
    """``ref.<method>`` answers ``value`` whatever it is asked."""
    setattr(ref, method, lambda *args, **kwargs: value)


# ------------------------------------------------------------------ authentication


@fault
def bearer_not_enforced(ref: WeverReference) -> None:
    """A call without a token, or with one the relay never issued, is served anonymously
    (no mailbox) instead of refused UNAUTHENTICATED."""
    @replaces(ref, "authenticate")
    def authenticate(original: Any, headers: Mapping[str, str]) -> str | None:
        return ref.mailbox_for_token(ref.bearer_token(headers))


@fault
def open_actions_need_bearer(ref: WeverReference) -> None:
    """find_peers and register_mailbox (no requires_bearer) demand a bearer token too."""
    _constant(ref, "requires_bearer", True)


# ------------------------------------------------------------------ refusal codes

SWAPPED_CODES = {
    "NOT_ALLOWED": "NOT_FOUND",
    "NOT_FOUND": "NOT_ALLOWED",
    "VALIDATION_ERROR": "NOT_FOUND",
    "UNAUTHENTICATED": "NOT_ALLOWED",
    "IDEMPOTENCY_CONFLICT": "INVALID_STATE",
    "INVALID_STATE": "IDEMPOTENCY_CONFLICT",
    "IDEMPOTENCY_KEY_REQUIRED": "VALIDATION_ERROR",
    "REQUESTS_DISABLED": "NOT_ALLOWED",
    "GONE": "NOT_FOUND",
    "TOO_LARGE": "VALIDATION_ERROR",
    "QUOTA_EXCEEDED": "TOO_LARGE",
}


@fault
def refusal_codes_swapped(ref: WeverReference) -> None:
    """Every refusal is answered with another code of the profile's catalogue (and that
    code's HTTP status): NOT_ALLOWED <-> NOT_FOUND, VALIDATION_ERROR -> NOT_FOUND,
    UNAUTHENTICATED -> NOT_ALLOWED, IDEMPOTENCY_CONFLICT <-> INVALID_STATE, ... The
    refusals themselves stay where they were."""
    def swapped(err: RelayError) -> RelayError:
        return RelayError(SWAPPED_CODES.get(err.code, err.code), err.message)

    @replaces(ref, "error_status")
    def status(original: Any, err: RelayError) -> int:
        result: int = original(swapped(err))
        return result

    @replaces(ref, "error_body")
    def body(original: Any, err: RelayError) -> dict[str, Any]:
        result: dict[str, Any] = original(swapped(err))
        return result


# ------------------------------------------------------------------ mailboxes


@fault
def requests_enabled_at_registration(ref: WeverReference) -> None:
    """A newly registered mailbox starts with connection requests enabled."""
    @replaces(ref, "act_register_mailbox")
    def register(original: Any, call: Call) -> dict[str, Any]:
        out: dict[str, Any] = original(call)
        ref.s["mailboxes"][out["mailbox_id"]]["accepts_connection_requests"] = True
        out["accepts_connection_requests"] = True
        return out


@fault
def private_profile_listed(ref: WeverReference) -> None:
    """find_peers lists every active mailbox, also those that never set discoverable=true."""
    @replaces(ref, "is_discoverable")
    def discoverable(original: Any, box: dict[str, Any]) -> bool:
        return ref.is_active(box)


# ------------------------------------------------------------------ grants and permissions


@fault
def delivered_without_grant(ref: WeverReference) -> None:
    """Every sender counts as allowed by every recipient (has_grant is always true)."""
    _constant(ref, "has_grant", True)


@fault
def revocation_ignored(ref: WeverReference) -> None:
    """Revoking a grant (allow_sender allowed=false, a denial) removes nothing."""
    _constant(ref, "remove_grant", False)


@fault
def capability_unchecked(ref: WeverReference) -> None:
    """A task is delivered for any capability, advertised by the recipient or not."""
    _constant(ref, "check_capability", True)


# ------------------------------------------------------------------ the task flow


@fault
def task_not_offered(ref: WeverReference) -> None:
    """A new task starts accepted (as if the recipient had accepted it), not offered."""
    @replaces(ref, "create_task")
    def create(original: Any, *args: Any) -> dict[str, Any]:
        task: dict[str, Any] = original(*args)
        task["state"] = ACCEPTED
        return task


@fault
def inbox_shows_others(ref: WeverReference) -> None:
    """inbox lists every offered or accepted task of the relay, whoever it is addressed to."""
    @replaces(ref, "inbox_tasks")
    def inbox(original: Any, recipient_id: str) -> list[dict[str, Any]]:
        tasks = [t for t in ref.s["tasks"].values() if t["state"] in INBOX_STATES]
        tasks.sort(key=lambda t: (t["created_at"], t["order"]))
        return tasks[: ref.limit("inbox_tasks_count")]


@fault
def repeat_accept_refused(ref: WeverReference) -> None:
    """A repeated accept_task of an accepted task is refused INVALID_STATE."""
    @replaces(ref, "act_accept_task")
    def accept(original: Any, call: Call) -> dict[str, Any]:
        task = ref.s["tasks"].get(call.args["task_id"])
        if task is not None and task["recipient_id"] == call.caller and task["state"] == ACCEPTED:
            raise RelayError("INVALID_STATE", "the task was already accepted")
        result: dict[str, Any] = original(call)
        return result


@fault
def decline_keeps_offered(ref: WeverReference) -> None:
    """decline_task answers but the task stays offered (in the inbox, still acceptable)."""
    @replaces(ref, "set_state")
    def set_state(original: Any, task: dict[str, Any], state: str) -> None:
        if state != DECLINED:
            original(task, state)


@fault
def accepted_cancellable(ref: WeverReference) -> None:
    """The sender can cancel an accepted task too (HTTP and A2A CancelTask)."""
    @replaces(ref, "can_cancel")
    def can_cancel(original: Any, task: dict[str, Any]) -> bool:
        return bool(task["state"] in (OFFERED, ACCEPTED))


@fault
def recipient_cancels(ref: WeverReference) -> None:
    """cancel_task by the task's recipient is served as if the sender had asked."""
    @replaces(ref, "act_cancel_task")
    def cancel(original: Any, call: Call) -> dict[str, Any]:
        task = ref.s["tasks"].get(call.args["task_id"])
        if task is not None and task["recipient_id"] == call.caller:
            call = Call(call.action, call.args, task["sender_id"], call.key, call.source)
        result: dict[str, Any] = original(call)
        return result


@fault
def complete_before_accept(ref: WeverReference) -> None:
    """complete_task records a result for an offered task (no acceptance needed)."""
    @replaces(ref, "can_complete")
    def can_complete(original: Any, task: dict[str, Any]) -> bool:
        return bool(task["state"] in (OFFERED, ACCEPTED))


@fault
def result_hidden_from_sender(ref: WeverReference) -> None:
    """get_task by the sender shows no result (nor its digest) of a completed task."""
    @replaces(ref, "act_get_task")
    def get_task(original: Any, call: Call) -> dict[str, Any]:
        out: dict[str, Any] = original(call)
        if out["task"]["sender_id"] == call.caller:
            out["task"]["result"] = None
            out["task"]["result_digest"] = None
        return out


@fault
def no_result_digest(ref: WeverReference) -> None:
    """A recorded result comes without its integrity digest."""
    _constant(ref, "result_digest", None)


@fault
def task_visible_to_anyone(ref: WeverReference) -> None:
    """get_task (and A2A GetTask) serves any mailbox that knows the task id."""
    @replaces(ref, "act_get_task")
    def get_task(original: Any, call: Call) -> dict[str, Any]:
        task = ref.s["tasks"].get(call.args["task_id"])
        if task is not None:
            return {"task": ref.task_view(task)}
        result: dict[str, Any] = original(call)
        return result


@fault
def delete_content_one_side(ref: WeverReference) -> None:
    """delete_task_content erases the task for the caller only: the other participant
    still reads its task data and result."""
    erased: set[tuple[str, str]] = set()

    @replaces(ref, "act_delete_task_content")
    def delete(original: Any, call: Call) -> dict[str, Any]:
        task = ref.participant_task(str(call.caller), call.args["task_id"])
        if (str(call.caller), task["task_id"]) in erased:
            raise RelayError("NOT_FOUND", f"no task {task['task_id']} of yours")
        if not ref.can_delete_content(task):
            raise RelayError("INVALID_STATE", f"a {task['state']} task is not terminal")
        erased.add((str(call.caller), task["task_id"]))
        return {"task_id": task["task_id"], "content_deleted": True}

    @replaces(ref, "act_get_task")
    def get_task(original: Any, call: Call) -> dict[str, Any]:
        if (str(call.caller), call.args["task_id"]) in erased:
            raise RelayError("NOT_FOUND", f"no task {call.args['task_id']} of yours")
        result: dict[str, Any] = original(call)
        return result


@fault
def delete_open_task(ref: WeverReference) -> None:
    """delete_task_content erases the content of a task that is not terminal."""
    _constant(ref, "can_delete_content", True)


# ------------------------------------------------------------------ request keys of send_task


@fault
def key_optional(ref: WeverReference) -> None:
    """send_task without an Idempotency-Key is served (under a key of its own)."""
    @replaces(ref, "require_key")
    def require_key(original: Any, call: Call) -> str:
        return call.key or "generated-" + secrets.token_hex(16)


@fault
def replay_duplicates(ref: WeverReference) -> None:
    """A replay with the same request key and body creates another task."""
    @replaces(ref, "replay_for_key")
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        original(sender_id, key, body)  # a conflict or a deleted task is still refused
        return None


REPLICATION_LAG_S = 2.0


@fault
def replay_race(ref: WeverReference) -> None:
    """The replay lookup and the key record are not atomic across workers: a key recorded
    by one worker is seen by the others only after a replication lag, so identical
    concurrent submissions each make a task, while serial replays still return the first.

    (The in-process transport runs one request at a time, so a sleep between check and
    insert would never be overtaken: each calling thread stands for a server worker.)"""
    written: dict[str, tuple[int, float]] = {}  # key id -> (worker, when recorded)

    @replaces(ref, "remember_key")
    def remember(original: Any, sender_id: str, key: str, body: str, task: dict[str, Any]) -> None:
        original(sender_id, key, body, task)
        written[ref.key_id(sender_id, key)] = (threading.get_ident(), time.monotonic())

    @replaces(ref, "replay_for_key")
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        worker, when = written.get(ref.key_id(sender_id, key), (threading.get_ident(), 0.0))
        if worker != threading.get_ident() and time.monotonic() - when < REPLICATION_LAG_S:
            return None  # not yet replicated to this worker: the key looks fresh
        result: dict[str, Any] | None = original(sender_id, key, body)
        return result


@fault
def conflict_accepted(ref: WeverReference) -> None:
    """A request key reused with another body returns the first task (no IDEMPOTENCY_CONFLICT)."""
    @replaces(ref, "replay_for_key")
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        record = ref.s["keys"].get(ref.key_id(sender_id, key))
        result: dict[str, Any] | None = original(sender_id, key, record["fingerprint"] if record else body)
        return result


# ------------------------------------------------------------------ limits


@fault
def task_bytes_unchecked(ref: WeverReference) -> None:
    """Task data of any size is delivered (the result limit still holds)."""
    @replaces(ref, "check_size")
    def check_size(original: Any, data: Any, what: str) -> None:
        if what != "task data":
            original(data, what)


@fault
def task_bytes_off_by_one(ref: WeverReference) -> None:
    """Task data one byte over task_or_result_bytes is still delivered."""
    @replaces(ref, "check_size")
    def check_size(original: Any, data: Any, what: str) -> None:
        if what != "task data" or ref.task_bytes(data) > ref.limit("task_or_result_bytes") + 1:
            original(data, what)


@fault
def result_bytes_unchecked(ref: WeverReference) -> None:
    """A result of any size is recorded (the task data limit still holds)."""
    @replaces(ref, "check_size")
    def check_size(original: Any, data: Any, what: str) -> None:
        if what != "result":
            original(data, what)


@fault
def sent_quota_off_by_one(ref: WeverReference) -> None:
    """A mailbox may send one task more a UTC day than sent_tasks_per_mailbox_per_utc_day."""
    @replaces(ref, "limit")
    def limit(original: Any, name: str) -> int:
        value: int = original(name)
        return value + 1 if name == "sent_tasks_per_mailbox_per_day_count" else value


# ------------------------------------------------------------------ connection requests


@fault
def requests_always_open(ref: WeverReference) -> None:
    """Connection requests reach every mailbox, opted in or not."""
    _constant(ref, "accepts_requests", True)


@fault
def request_grants(ref: WeverReference) -> None:
    """A new connection request grants the sender permission by itself."""
    @replaces(ref, "act_request_connection")
    def request(original: Any, call: Call) -> dict[str, Any]:
        out: dict[str, Any] = original(call)
        if out["request"]["status"] == PENDING:
            ref.add_grant(out["request"]["recipient_id"], out["request"]["sender_id"])
        return out


@fault
def requests_listed_to_all(ref: WeverReference) -> None:
    """list_connection_requests shows every pending request, whoever it is addressed to."""
    @replaces(ref, "act_list_connection_requests")
    def listing(original: Any, call: Call) -> dict[str, Any]:
        pending = sorted((r for r in ref.s["requests"].values() if r["status"] == PENDING),
                         key=lambda r: (r["created_at"], r["request_id"]))
        return {"requests": [ref.request_view(r) for r in pending]}


@fault
def retry_new_request(ref: WeverReference) -> None:
    """An exact-pair retry of a pending request makes a new request."""
    @replaces(ref, "retained_request")
    def retained(original: Any, sender_id: str, recipient_id: str) -> dict[str, Any] | None:
        req: dict[str, Any] | None = original(sender_id, recipient_id)
        return None if req is not None and req["status"] == PENDING else req


@fault
def denial_forgotten(ref: WeverReference) -> None:
    """After a denial, an exact-pair retry makes a new pending request instead of
    returning the retained denial."""
    @replaces(ref, "retained_request")
    def retained(original: Any, sender_id: str, recipient_id: str) -> dict[str, Any] | None:
        for req in ref.s["requests"].values():
            if req["sender_id"] == sender_id and req["recipient_id"] == recipient_id and req["status"] != DENIED:
                return req
        return None


@fault
def repeat_response_regrants(ref: WeverReference) -> None:
    """A repeated allowing response grants again, undoing a later revocation."""
    @replaces(ref, "act_respond_connection_request")
    def respond(original: Any, call: Call) -> dict[str, Any]:
        out: dict[str, Any] = original(call)
        req = ref.s["requests"][call.args["request_id"]]
        if req["status"] == ALLOWED and call.args["allowed"]:
            ref.add_grant(req["recipient_id"], req["sender_id"])
            out["allowed"] = ref.has_grant(req["recipient_id"], req["sender_id"])
        return out


# ------------------------------------------------------------------ the A2A adapter


@fault
def a2a_version_optional(ref: WeverReference) -> None:
    """A2A requests with a missing or another A2A-Version are served."""
    _constant(ref, "a2a_check_version", None)


@fault
def a2a_blocking_served(ref: WeverReference) -> None:
    """A blocking SendMessage (returnImmediately false or absent) is served as a
    non-blocking one instead of refused UnsupportedOperation."""
    _constant(ref, "wants_blocking", False)

    @replaces(ref, "a2a_check_configuration")
    def configuration(original: Any, value: Any) -> None:
        if value is None:
            value = {}
        if isinstance(value, dict) and value.get("returnImmediately", False) is False:
            value = {**value, "returnImmediately": True}
        original(value)


@fault
def a2a_metadata_ignored(ref: WeverReference) -> None:
    """SendMessage request metadata (params.metadata, message.metadata) is dropped and
    the message served, instead of refused UnsupportedOperation."""
    @replaces(ref, "a2a_send_message")
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        if isinstance(params, dict):
            params = {k: v for k, v in params.items() if k != "metadata"}
            if isinstance(params.get("message"), dict):
                params["message"] = {k: v for k, v in params["message"].items() if k != "metadata"}
        result: dict[str, Any] = original(caller, params, headers)
        return result


@fault
def a2a_replay_duplicates(ref: WeverReference) -> None:
    """The A2A adapter does not deduplicate: a SendMessage replayed with the same
    messageId and data creates another task (the key store, and HTTP send_task under
    any key, still deduplicate)."""
    in_adapter = [False]

    @replaces(ref, "a2a_send_message")
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        in_adapter[0] = True
        try:
            result: dict[str, Any] = original(caller, params, headers)
            return result
        finally:
            in_adapter[0] = False

    @replaces(ref, "replay_for_key")
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        result: dict[str, Any] | None = original(sender_id, key, body)  # a conflict is still refused
        return None if in_adapter[0] else result


@fault
def a2a_conflict_accepted(ref: WeverReference) -> None:
    """A SendMessage reusing a messageId with changed data answers the first task
    instead of a conflict (HTTP send_task conflicts are still refused)."""
    @replaces(ref, "a2a_send_message")
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        try:
            result: dict[str, Any] = original(caller, params, headers)
            return result
        except RpcError as err:
            if (err.data or {}).get("code") != "IDEMPOTENCY_CONFLICT":
                raise
            key = ref.a2a_request_key(params["message"]["messageId"])
            first = ref.s["tasks"][ref.s["keys"][ref.key_id(caller, key)]["task_id"]]
            return {"task": ref.a2a_task(ref.task_view(first))}


@fault
def a2a_private_namespace(ref: WeverReference) -> None:
    """An A2A messageId becomes a request key of a private namespace (another prefix),
    not a2a-<sha256> in the sender's Connect keys: HTTP send_task under a2a-<sha256>
    is new work. A2A replays among themselves still deduplicate."""
    @replaces(ref, "a2a_request_key")
    def request_key(original: Any, message_id: str) -> str:
        return "a2a-private-" + hashlib.sha256(message_id.encode("utf-8")).hexdigest()


@fault
def a2a_state_unmapped(ref: WeverReference) -> None:
    """A2A tasks carry the Connect state name (offered, accepted, ...) instead of the
    state_mapping's A2A state."""
    @replaces(ref, "a2a_task")
    def a2a_task(original: Any, view: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = original(view)
        out["status"]["state"] = view["state"]
        return out


@fault
def a2a_history_returned(ref: WeverReference) -> None:
    """A2A tasks come with a history holding the submitted message (returned_history_messages is 0)."""
    @replaces(ref, "a2a_task")
    def a2a_task(original: Any, view: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = original(view)
        out["history"] = [{"messageId": f"{view['task_id']}-submitted", "role": ref.send_spec["role"],
                           "parts": [{"data": view["task"], "mediaType": ref.send_spec["part_media_type"]}]}]
        return out


@fault
def a2a_repeat_cancel_refused(ref: WeverReference) -> None:
    """A repeated CancelTask of a canceled task is refused TaskNotCancelable (the HTTP
    cancel_task still answers the cancelled task)."""
    @replaces(ref, "a2a_cancel_task")
    def cancel(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        task_id = params.get("id") if isinstance(params, dict) else None
        task = ref.s["tasks"].get(task_id) if isinstance(task_id, str) else None
        if task is not None and task["sender_id"] == caller and task["state"] == CANCELLED:
            raise RpcError(TASK_NOT_CANCELABLE, "TaskNotCancelable: the task is already canceled")
        result: dict[str, Any] = original(caller, params, headers)
        return result


# ------------------------------------------------------------------ MCP, health, OpenAPI


@fault
def mcp_register_tool(ref: WeverReference) -> None:
    """tools/list offers register_mailbox as an MCP tool (the manifest: "Registration is not an MCP tool")."""
    _constant(ref, "mcp_tool_actions", list(ref.actions))


@fault
def health_down(ref: WeverReference) -> None:
    """The health route answers 503."""
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "down"}, status_code=503)

    ref.health = health  # type: ignore[method-assign]


OMITTED_ACTION = "renew_mailbox"


@fault
def openapi_incomplete(ref: WeverReference) -> None:
    """/openapi.json omits one action (renew_mailbox)."""
    @replaces(ref, "openapi_document")
    def document(original: Any) -> dict[str, Any]:
        doc: dict[str, Any] = original()
        doc["paths"].pop(ref.spec["routes"]["actions"].replace("{action}", OMITTED_ACTION))
        return doc


# ------------------------------------------------------------------ input validation


@fault
def minimal_input_rejected(ref: WeverReference) -> None:
    """An input holding only its required properties (an empty object where nothing is
    required) is refused VALIDATION_ERROR."""
    @replaces(ref, "validate_input")
    def validate(original: Any, action: str, args: Any) -> None:
        required = set(ref.actions[action]["inputSchema"].get("required", []))
        if isinstance(args, dict) and set(args) <= required:
            raise RelayError("VALIDATION_ERROR", "(root): more properties are needed")
        original(action, args)


@fault
def unknown_ids_invalid(ref: WeverReference) -> None:
    """A well-formed id of a task, request or mailbox that does not exist is refused
    VALIDATION_ERROR (the input is valid; the object is missing)."""
    where = {"task_id": "tasks", "request_id": "requests", "recipient_id": "mailboxes", "sender_id": "mailboxes"}

    @replaces(ref, "validate_input")
    def validate(original: Any, action: str, args: Any) -> None:
        original(action, args)
        for prop, table in where.items():
            if isinstance(args, dict) and isinstance(args.get(prop), str) and args[prop] not in ref.s[table]:
                raise RelayError("VALIDATION_ERROR", f"/{prop}: no such object")


@fault
def accepts_invalid_input(ref: WeverReference) -> None:
    """Action inputs are never validated against their inputSchema."""
    _constant(ref, "validate_input", None)


# ------------------------------------------------------------------ limits and quotas (quotas.py)

UNBOUNDED = 10**9


def _loosen(ref: WeverReference, name: str, by: int) -> None:
    """``limit(name)`` answers ``by`` more than the profile says."""
    @replaces(ref, "limit")
    def limit(original: Any, limit_name: str) -> int:
        value = int(original(limit_name))
        return value + by if limit_name == name else value


@fault
def received_quota_off_by_one(ref: WeverReference) -> None:
    """A mailbox receives one task more than received_tasks_per_mailbox_per_utc_day."""
    _loosen(ref, "received_tasks_per_mailbox_per_day_count", 1)


@fault
def pending_sender_unchecked(ref: WeverReference) -> None:
    """A sender may hold any number of pending connection requests."""
    _loosen(ref, "pending_connection_requests_per_sender_count", UNBOUNDED)


@fault
def sender_requests_unbounded(ref: WeverReference) -> None:
    """Answered requests are not counted against the sender's daily request quota."""
    _loosen(ref, "connection_requests_per_sender_per_day_count", UNBOUNDED)


@fault
def pending_recipient_unchecked(ref: WeverReference) -> None:
    """A recipient may hold any number of pending connection requests."""
    _loosen(ref, "pending_connection_requests_per_recipient_count", UNBOUNDED)


@fault
def allowed_senders_unbounded(ref: WeverReference) -> None:
    """A mailbox may allow any number of senders."""
    _loosen(ref, "allowed_senders_per_mailbox_count", UNBOUNDED)


@fault
def registrations_unbounded(ref: WeverReference) -> None:
    """One source may register any number of mailboxes a day."""
    _loosen(ref, "registrations_per_source_per_day_count", UNBOUNDED)


@fault
def quota_never_resets(ref: WeverReference) -> None:
    """Daily counters are never keyed by the UTC day: a quota once full stays full."""
    ref.counter_key = lambda scope, subject: f"every-day|{scope}|{subject}"  # type: ignore[method-assign]


@fault
def regrant_not_counted(ref: WeverReference) -> None:
    """A revoke/regrant cycle creates the grant again without charging the daily quota."""
    revoked: set[tuple[str, str]] = set()

    @replaces(ref, "remove_grant")
    def remove_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        revoked.add((recipient_id, sender_id))
        return bool(original(recipient_id, sender_id))

    @replaces(ref, "add_grant")
    def add_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        if (recipient_id, sender_id) in revoked and not ref.has_grant(recipient_id, sender_id):
            ref.s["grants"].setdefault(recipient_id, {})[sender_id] = ref.now()
            return True
        return bool(original(recipient_id, sender_id))


@fault
def revoke_blocked_at_cap(ref: WeverReference) -> None:
    """At the daily new-grant cap, revocation is refused too."""
    @replaces(ref, "remove_grant")
    def remove_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        if ref.counter("grants_recipient", recipient_id) >= ref.limit("new_sender_grants_per_recipient_per_day_count"):
            raise RelayError("QUOTA_EXCEEDED", "new_sender_grants_per_recipient reached")
        return bool(original(recipient_id, sender_id))


# ------------------------------------------------------------------ lifetimes (lifetimes.py)


@fault
def task_never_expires(ref: WeverReference) -> None:
    """Tasks live for ever."""
    ref.task_expiry = lambda sender, recipient, now: now + UNBOUNDED  # type: ignore[method-assign]


@fault
def task_outlives_mailbox(ref: WeverReference) -> None:
    """A task lives task_hours whatever the mailboxes' expiry at submission."""
    ref.task_expiry = lambda sender, recipient, now: now + ref.limit("task_hours") * 3600  # type: ignore[method-assign]


@fault
def mailbox_never_expires(ref: WeverReference) -> None:
    """Mailboxes live for ever."""
    ref.mailbox_expiry = lambda now: now + UNBOUNDED  # type: ignore[method-assign]


@fault
def renew_ignored(ref: WeverReference) -> None:
    """renew_mailbox answers the new expiry but leaves the old one in force."""
    @replaces(ref, "act_renew_mailbox")
    def renew(original: Any, call: Call) -> dict[str, Any]:
        box = ref.active_mailbox(str(call.caller))
        kept = box["expires_at"]
        answer = dict(original(call))
        box["expires_at"] = kept
        return answer


@fault
def renew_returns_token(ref: WeverReference) -> None:
    """renew_mailbox hands out a new credential."""
    @replaces(ref, "act_renew_mailbox")
    def renew(original: Any, call: Call) -> dict[str, Any]:
        field = ref.a2a["access_setup"]["token_response_field"]
        return {**original(call), field: ref.new_token()}


@fault
def tombstone_forgotten(ref: WeverReference) -> None:
    """Deleting a task's content drops its key: a retry creates new work at once."""
    @replaces(ref, "erase_content")
    def erase(original: Any, task: dict[str, Any]) -> None:
        original(task)
        for key in [k for k, record in ref.s["keys"].items() if record["task_id"] == task["task_id"]]:
            del ref.s["keys"][key]


@fault
def tombstone_forever(ref: WeverReference) -> None:
    """Retry tombstones never expire: a deleted task's key is unusable for ever."""
    ref.tombstone_expiry = lambda created_at: created_at + UNBOUNDED  # type: ignore[method-assign]


@fault
def close_keeps_content(ref: WeverReference) -> None:
    """close_mailbox leaves the shared content of its tasks readable."""
    @replaces(ref, "act_close_mailbox")
    def close(original: Any, call: Call) -> dict[str, Any]:
        erase = ref.erase_content
        ref.erase_content = lambda task: None  # type: ignore[method-assign]
        try:
            return dict(original(call))
        finally:
            ref.erase_content = erase  # type: ignore[method-assign]


@fault
def close_keeps_grants(ref: WeverReference) -> None:
    """close_mailbox keeps the grants others gave the closed mailbox."""
    @replaces(ref, "retire_mailbox")
    def retire(original: Any, mailbox_id: str) -> None:
        given = {r: dict(senders) for r, senders in ref.s["grants"].items() if mailbox_id in senders}
        original(mailbox_id)
        for recipient, senders in given.items():
            ref.s["grants"].setdefault(recipient, {})[mailbox_id] = senders[mailbox_id]


@fault
def requests_never_expire(ref: WeverReference) -> None:
    """Connection requests live as long as the mailboxes."""
    ref.request_expiry = lambda sender, recipient, now: min(sender["expires_at"], recipient["expires_at"])  # type: ignore[method-assign]


@fault
def revoke_cancels_delivered(ref: WeverReference) -> None:
    """Revoking a sender also cancels the tasks it already delivered."""
    @replaces(ref, "remove_grant")
    def remove_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        for task in ref.s["tasks"].values():
            if task["recipient_id"] == recipient_id and task["sender_id"] == sender_id and task["state"] == OFFERED:
                ref.set_state(task, CANCELLED)
        return bool(original(recipient_id, sender_id))


@fault
def grant_per_capability(ref: WeverReference) -> None:
    """A grant covers only the first capability the recipient advertises."""
    ref.check_capability = lambda recipient, capability: capability in recipient["capabilities"][:1]  # type: ignore[method-assign]


# ------------------------------------------------------------------ surfaces (surfaces.py)


@fault
def agent_card_missing(ref: WeverReference) -> None:
    """No agent card at protocols.a2a.agent_card."""
    async def missing(request: Request) -> Response:
        return JSONResponse({"error": "not found"}, status_code=404)

    ref.agent_card_endpoint = missing  # type: ignore[method-assign]


@fault
def a2a_data_unchecked(ref: WeverReference) -> None:
    """The adapter trusts the data part: neither data_schema nor send_task's inputSchema
    is checked on SendMessage (HTTP send_task still validates)."""
    class Anything:
        def iter_errors(self, instance: Any) -> list[Any]:
            return []

    ref.data_validator = Anything()  # type: ignore[assignment]

    @replaces(ref, "a2a_send_message")
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        validate = ref.validate_input
        ref.validate_input = lambda action, args: None  # type: ignore[method-assign]
        try:
            return dict(original(caller, params, headers))
        finally:
            ref.validate_input = validate  # type: ignore[method-assign]


@fault
def a2a_role_unchecked(ref: WeverReference) -> None:
    """Any message role is taken for ROLE_USER."""
    @replaces(ref, "a2a_check_message")
    def check(original: Any, message: dict[str, Any]) -> dict[str, Any]:
        return dict(original({**message, "role": ref.send_spec["role"]}))


@fault
def a2a_output_modes_unchecked(ref: WeverReference) -> None:
    """acceptedOutputModes without application/json is accepted."""
    ref.a2a_check_output_modes = lambda configuration: None  # type: ignore[method-assign]


@fault
def a2a_message_id_unbounded(ref: WeverReference) -> None:
    """messageIds of any length are accepted."""
    _loosen(ref, "a2a_message_id_bytes", UNBOUNDED)


@fault
def a2a_depth_unbounded(ref: WeverReference) -> None:
    """Requests nested deeper than json_container_depth are accepted."""
    _loosen(ref, "a2a_json_depth_count", 1000)


@fault
def a2a_creates_grant(ref: WeverReference) -> None:
    """SendMessage grants the sender before delivering."""
    @replaces(ref, "a2a_send_message")
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        try:
            recipient = params["message"]["parts"][0]["data"]["recipient_id"]
            if recipient in ref.s["mailboxes"]:
                ref.s["grants"].setdefault(recipient, {})[caller] = ref.now()
        except (KeyError, IndexError, TypeError):
            pass
        return dict(original(caller, params, headers))


@fault
def mcp_one_version(ref: WeverReference) -> None:
    """MCP serves only the first protocol version the manifest lists."""
    ref.mcp_versions = ref.mcp_versions[:1]  # type: ignore[misc]


@fault
def mcp_open(ref: WeverReference) -> None:
    """MCP lists tools without a bearer token."""
    @replaces(ref, "serve_mcp")
    def serve(original: Any, raw: bytes, headers: Mapping[str, str], method: str = "POST") -> Response:
        if ref.bearer_token(headers) is None:
            token = next(iter(ref.s["tokens"]))
            headers = {**dict(headers), "authorization": f"Bearer {token}"}
        return original(raw, headers, method)  # type: ignore[no-any-return]


@fault
def mcp_errors_unflagged(ref: WeverReference) -> None:
    """A refused tool call answers isError false."""
    @replaces(ref, "mcp_call_tool")
    def call(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        return {**original(caller, params, headers), "isError": False}


@fault
def mcp_stale_task(ref: WeverReference) -> None:
    """MCP's get_task reports the state the task was created in."""
    @replaces(ref, "mcp_call_tool")
    def call(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        result = dict(original(caller, params, headers))
        task = (result.get("structuredContent") or {}).get("task")
        if isinstance(params, dict) and params.get("name") == "get_task" and isinstance(task, dict):
            task["state"] = OFFERED
        return result


@fault
def omitted_flag_reset(ref: WeverReference) -> None:
    """update_mailbox without accepts_connection_requests turns it off."""
    @replaces(ref, "act_update_mailbox")
    def update(original: Any, call: Call) -> dict[str, Any]:
        args = {"accepts_connection_requests": False, **call.args}
        return dict(original(Call(call.action, args, call.caller, call.key)))


@fault
def opt_out_revokes(ref: WeverReference) -> None:
    """Opting out of connection requests revokes every grant."""
    @replaces(ref, "act_update_mailbox")
    def update(original: Any, call: Call) -> dict[str, Any]:
        if call.args.get("accepts_connection_requests") is False:
            ref.s["grants"].pop(str(call.caller), None)
        return dict(original(call))


@fault
def capability_filter_ignored(ref: WeverReference) -> None:
    """find_peers ignores its capability filter."""
    @replaces(ref, "act_find_peers")
    def find(original: Any, call: Call) -> dict[str, Any]:
        args = {k: v for k, v in call.args.items() if k != "capability"}
        return dict(original(Call(call.action, args, call.caller, call.key)))


@fault
def inbox_shows_terminal(ref: WeverReference) -> None:
    """The inbox lists declined, cancelled and completed tasks too."""
    @replaces(ref, "inbox_tasks")
    def inbox(original: Any, recipient_id: str) -> list[dict[str, Any]]:
        mine = [t for t in ref.s["tasks"].values() if t["recipient_id"] == recipient_id]
        return sorted(mine, key=lambda t: (t["created_at"], t["order"]))


@fault
def recipient_requests_unbounded(ref: WeverReference) -> None:
    """Answered requests are not counted against the recipient's daily request quota."""
    _loosen(ref, "connection_requests_per_recipient_per_day_count", UNBOUNDED)


@fault
def service_tasks_unbounded(ref: WeverReference) -> None:
    """No service-wide daily task quota."""
    _loosen(ref, "service_tasks_per_day_count", UNBOUNDED)


@fault
def active_mailboxes_unbounded(ref: WeverReference) -> None:
    """Any number of active mailboxes."""
    _loosen(ref, "active_mailboxes_count", UNBOUNDED)


@fault
def a2a_open(ref: WeverReference) -> None:
    """The adapter serves a request without a valid token as the first seeded mailbox."""
    @replaces(ref, "a2a_authenticate")
    def authenticate(original: Any, headers: Mapping[str, str]) -> str:
        if ref.mailbox_for_token(ref.bearer_token(headers)) is None:
            return str(next(iter(ref.s["tokens"].values())))
        return str(original(headers))


@fault
def a2a_continuation_served(ref: WeverReference) -> None:
    """A supplied taskId is ignored: the message becomes new work."""
    @replaces(ref, "a2a_send_message")
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        if isinstance(params, dict) and isinstance(params.get("message"), dict):
            params = {**params, "message": {k: v for k, v in params["message"].items() if k != "taskId"}}
        return dict(original(caller, params, headers))


@fault
def request_outlives_mailbox(ref: WeverReference) -> None:
    """A connection request lives its hours whatever the mailboxes' expiry, and stays
    when its sender's mailbox expires."""
    ref.request_expiry = lambda sender, recipient, now: now + ref.limit("connection_request_hours") * 3600  # type: ignore[method-assign]

    @replaces(ref, "retire_mailbox")
    def retire(original: Any, mailbox_id: str) -> None:
        kept = dict(ref.s["requests"])
        original(mailbox_id)
        ref.s["requests"] = kept


@fault
def allowed_senders_stale(ref: WeverReference) -> None:
    """get_mailbox lists every sender ever allowed, revoked ones too."""
    ever: dict[str, set[str]] = {}

    @replaces(ref, "add_grant")
    def add_grant(original: Any, recipient_id: str, sender_id: str) -> bool:
        ever.setdefault(recipient_id, set()).add(sender_id)
        return bool(original(recipient_id, sender_id))

    ref.allowed_senders = lambda recipient_id: sorted(ever.get(recipient_id, set()))  # type: ignore[method-assign]


@fault
def service_grants_unbounded(ref: WeverReference) -> None:
    """No service-wide daily cap on new grants."""
    _loosen(ref, "service_new_sender_grants_per_day_count", UNBOUNDED)


@fault
def service_requests_unbounded(ref: WeverReference) -> None:
    """No service-wide daily cap on connection requests."""
    _loosen(ref, "service_connection_requests_per_day_count", UNBOUNDED)


# ------------------------------------------------------------------ rules no check sent a request for before


@fault
def a2a_header_key(ref: WeverReference) -> None:
    """An incoming Idempotency-Key header on SendMessage becomes the adapter's request key,
    instead of a2a-<sha256(messageId)> ("Incoming Idempotency-Key does not override this")."""
    header: list[str | None] = [None]

    @replaces(ref, "a2a_send_message")
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        header[0] = headers.get(ref.key_header) or None
        try:
            return dict(original(caller, params, headers))
        finally:
            header[0] = None

    @replaces(ref, "a2a_request_key")
    def key(original: Any, message_id: str) -> str:
        return header[0] or str(original(message_id))


@fault
def keys_shared_across_senders(ref: WeverReference) -> None:
    """Request keys (Idempotency-Key, and the A2A messageId's) are one namespace for every
    sender, not each sender's own: another sender's same key and body replays the first task."""
    ref.key_id = lambda sender_id, key: f"*|{key}"  # type: ignore[method-assign]


@fault
def deny_keeps_grant(ref: WeverReference) -> None:
    """Denying a connection request records the denial but leaves the pair's existing grant
    ("denying revokes that pair's current permission")."""
    @replaces(ref, "act_respond_connection_request")
    def respond(original: Any, call: Call) -> dict[str, Any]:
        req = ref.s["requests"].get(call.args["request_id"])
        kept = req is not None and ref.has_grant(req["recipient_id"], req["sender_id"])
        out: dict[str, Any] = original(call)
        if req is not None and kept and not call.args["allowed"]:
            ref.s["grants"].setdefault(req["recipient_id"], {})[req["sender_id"]] = ref.now()
            out["allowed"] = True
        return out


@fault
def repeat_denial_revokes(ref: WeverReference) -> None:
    """A repeated denying response revokes again, undoing a later grant."""
    @replaces(ref, "act_respond_connection_request")
    def respond(original: Any, call: Call) -> dict[str, Any]:
        req = ref.s["requests"].get(call.args["request_id"])
        repeat = req is not None and req["status"] == DENIED and not call.args["allowed"]
        out: dict[str, Any] = original(call)
        if repeat and req is not None:
            ref.remove_grant(req["recipient_id"], req["sender_id"])
            out["allowed"] = False
        return out


@fault
def sender_responds(ref: WeverReference) -> None:
    """The sender of a connection request may answer it, as if it were the recipient."""
    @replaces(ref, "act_respond_connection_request")
    def respond(original: Any, call: Call) -> dict[str, Any]:
        req = ref.s["requests"].get(call.args["request_id"])
        if req is not None and req["sender_id"] == call.caller:
            call = Call(call.action, call.args, req["recipient_id"], call.key, call.source)
        return dict(original(call))


@fault
def expired_key_forgotten(ref: WeverReference) -> None:
    """A retry under the key of a task that expired (its tombstone still alive) creates new
    work, instead of finding the expired work unavailable (deleted tasks still are)."""
    @replaces(ref, "replay_for_key")
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        record = ref.s["keys"].get(ref.key_id(sender_id, key))
        if record is not None and record["task_id"] not in ref.s["tasks"]:
            return None
        result: dict[str, Any] | None = original(sender_id, key, body)
        return result


# ------------------------------------------------------------------ other answer shapes (the SHOULD shape rows catch them)


def _reshaped(ref: WeverReference, actions: tuple[str, ...], rewrite: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
    """The HTTP and MCP answers of ``actions`` rewritten by ``rewrite(action, result)``;
    what the relay does, and the A2A adapter's answers, stay as they are."""
    @replaces(ref, "serve_action")
    def serve(original: Any, action: str, raw: bytes, headers: Mapping[str, str], source: str) -> Response:
        response: Response = original(action, raw, headers, source)
        if action not in actions or response.status_code != 200:
            return response
        return JSONResponse(rewrite(action, json.loads(bytes(response.body))))

    @replaces(ref, "mcp_call_tool")
    def call(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        result: dict[str, Any] = original(caller, params, headers)
        name = params.get("name") if isinstance(params, dict) else None
        if name not in actions or result.get("isError"):
            return result
        body = rewrite(str(name), result["structuredContent"])
        return {**result, "structuredContent": body, "content": [{"type": "text", "text": json.dumps(body)}]}


def _renamed(obj: Any, names: Mapping[str, str]) -> Any:
    return {names.get(k, k): v for k, v in obj.items()} if isinstance(obj, dict) else obj


TASK_ACTIONS = ("send_task", "get_task", "accept_task", "decline_task", "cancel_task", "complete_task", "inbox")


@fault
def task_shape_other(ref: WeverReference) -> None:
    """Task answers come as {"item": {"id", ...}} and the inbox as {"items": [...]}
    instead of the profile's {"task": {"task_id", ...}} and {"tasks": [...]}."""
    names = {"task_id": "id"}

    def rewrite(action: str, body: dict[str, Any]) -> dict[str, Any]:
        if action == "inbox":
            return {"items": [_renamed(t, names) for t in body.get("tasks") or []]}
        return {"item": _renamed(body.get("task"), names)}

    _reshaped(ref, TASK_ACTIONS, rewrite)


@fault
def request_shape_other(ref: WeverReference) -> None:
    """Connection requests come as {"id", "decision", ...} at the root (a listing as
    {"items": [...]}, a response with "permission") instead of the profile's
    {"request": {"request_id", "status"}}, {"requests": [...]} and "allowed"."""
    names = {"request_id": "id", "status": "decision"}

    def rewrite(action: str, body: dict[str, Any]) -> dict[str, Any]:
        if action == "list_connection_requests":
            return {"items": [_renamed(r, names) for r in body.get("requests") or []]}
        out = dict(_renamed(body.get("request"), names))
        if "allowed" in body:
            out["permission"] = body["allowed"]
        return out

    _reshaped(ref, ("request_connection", "list_connection_requests", "respond_connection_request"), rewrite)


@fault
def mailbox_shape_other(ref: WeverReference) -> None:
    """Mailbox answers name allowed_sender_ids and requests_enabled instead of the
    profile's allowed_senders and accepts_connection_requests."""
    names = {"allowed_senders": "allowed_sender_ids", "accepts_connection_requests": "requests_enabled"}
    _reshaped(ref, ("get_mailbox", "update_mailbox", "register_mailbox"), lambda action, body: dict(_renamed(body, names)))


@fault
def peers_shape_other(ref: WeverReference) -> None:
    """find_peers answers {"profiles": [{"id", ...}]} instead of the profile's
    {"peers": [{"mailbox_id", ...}], "next"}."""
    def rewrite(action: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"profiles": [_renamed(p, {"mailbox_id": "id"}) for p in body.get("peers") or []], "cursor": body.get("next")}

    _reshaped(ref, ("find_peers",), rewrite)


@fault
def mcp_register_callable(ref: WeverReference) -> None:
    """tools/call register_mailbox is served (a mailbox and its token over MCP), though
    tools/list leaves the tool out ("Registration is not an MCP tool")."""
    @replaces(ref.mcp, "call_tool")
    def call(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        if isinstance(params, dict) and params.get("name") == ref.registration_action:
            result = ref.run_action(Call(ref.registration_action, params.get("arguments") or {}, None, None, "mcp"))
            return {"content": [{"type": "text", "text": json.dumps(result)}], "structuredContent": result, "isError": False}
        return dict(original(caller, params, headers))
