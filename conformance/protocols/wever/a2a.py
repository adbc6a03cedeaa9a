"""Wever Connect's A2A adapter (protocols.a2a) as a way to send and read tasks: a
SendMessage makes a task that starts submitted, retries by messageId deduplicate in the
sender's Connect request-key namespace (a2a-<sha256>), GetTask maps each Connect state,
CancelTask and GetTask serve whom the manifest says, and the adapter neither creates
grants nor serves without a token. Its answers are A2A 1.0 objects: the members read are
A2A's names. What its strict profile refuses is a2a_strict.py's."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any

from conformance.checks import idempotency
from conformance.checks.expect import expect_mapping, expect_refused, expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, requirement
from conformance.kit.faults import replaces
from conformance.protocols.a2a import wire
from conformance.protocols.wever.answers import digest_spellings
from conformance.protocols.wever.client import (
    RECIPIENT,
    SENDER,
    STRANGER,
    WeverClient,
    a2a_sent_id,
    dig,
    fresh_key,
    refused_rpc,
    rpc_error,
    served_rpc,
)
from conformance.protocols.wever.reference import CANCELLED, TASK_NOT_CANCELABLE, RpcError, WeverReference
from conformance.transport.http import HttpReply

A2A = "/protocols/a2a"
HOUR_S = 3600


def a2a_task(ctx: CheckContext, reply: HttpReply, what: str, wrapped: bool = True) -> dict[str, Any]:
    """The A2A Task of an answer: result.task for SendMessage, the result itself for
    GetTask and CancelTask (protocols.a2a.*.result_shape)."""
    result = served_rpc(ctx, reply, what)
    task = dig(result, "task") if wrapped else result
    task = expect_mapping(ctx, task, f"{what} task", ("id", "status"))
    expect_mapping(ctx, task["status"], f"{what} task status")
    return task


# ----------------------------------------------------------------------------------
# sending and reading tasks
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-A2A-SEND", level="MUST",
             title="An example-shaped SendMessage creates a task that starts submitted, in result.task, in "
                   "the recipient's inbox",
             source=at(f"{A2A}/send_message/result_shape"), faults=["a2a_state_unmapped"])
def check_a2a_send(ctx: CheckContext) -> None:
    """An example-shaped SendMessage creates a task that starts submitted, in result.task."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    task = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message()), "SendMessage")
    mapping = c.a2a["state_mapping"]
    ctx.expect(wire.state(task) == mapping["offered"],
               f"a new A2A task is {wire.state(task)!r}, expected {mapping['offered']}")
    ctx.expect(task["id"] in c.inbox_ids(RECIPIENT), "the A2A task is not in the recipient's Connect inbox")


@check_a2a_send.fault
def a2a_state_unmapped(ref: WeverReference) -> None:
    """A2A tasks carry the Connect state name (offered, accepted, ...) instead of the
    state_mapping's A2A state."""
    @replaces(ref.a2a_task)
    def a2a_task(original: Any, view: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = original(view)
        out["status"]["state"] = view["state"]
        return out


@requirement(id="WEVER-A2A-STATE-MAPPING", level="MUST",
             title="GetTask maps every Connect state as state_mapping says; a completed result is one "
                   "application/json artifact; no history",
             source=at(f"{A2A}/state_mapping"), faults=["a2a_state_unmapped", "a2a_history_returned"])
def check_a2a_state_mapping(ctx: CheckContext) -> None:
    """GetTask reports each Connect state as state_mapping says; a completed result is one
    application/json artifact; no history is returned."""
    c = WeverClient(ctx)
    mapping = c.a2a["state_mapping"]
    media = c.a2a["send_message"]["part_media_type"]
    for state, a2a_name in mapping.items():
        with ctx.subcheck(state):
            task = c.new_task(state)
            got = a2a_task(ctx, c.a2a_call("GetTask", {"id": task.id}), f"GetTask of a {state} task",
                           wrapped=False)
            ctx.expect(wire.state(got) == a2a_name,
                       f"GetTask of a {state} task: {wire.state(got)!r}, expected {a2a_name}")
            ctx.expect(not got.get("history"),
                       f"GetTask returned history {got.get('history')!r}; returned_history_messages is 0")
            if state == "completed":
                artifacts: list[Any] = got["artifacts"] if isinstance(got.get("artifacts"), list) else []
                parts = [p for a in artifacts for p in (dig(a, "parts") or []) if isinstance(p, dict)]
                ctx.expect(len(artifacts) == 1 and len(parts) == 1 and parts[0].get("mediaType") == media,
                           f"a completed result must be one {media} artifact: {got.get('artifacts')!r}")


@check_a2a_state_mapping.fault
def a2a_history_returned(ref: WeverReference) -> None:
    """A2A tasks come with a history holding the submitted message (returned_history_messages is 0)."""
    @replaces(ref.a2a_task)
    def a2a_task(original: Any, view: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = original(view)
        out["history"] = [{"messageId": f"{view['task_id']}-submitted", "role": ref.send_spec["role"],
                           "parts": [{"data": view["task"], "mediaType": ref.send_spec["part_media_type"]}]}]
        return out


@requirement(id="WEVER-A2A-CANCEL", level="MUST",
             title="CancelTask: the sender, only while offered; a repeated cancellation returns the canceled "
             "task",
             source=at(f"{A2A}/cancel_task/permission"),
             faults=["a2a_repeat_cancel_refused", "accepted_cancellable"])
def check_a2a_cancel(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    canceled = c.a2a["state_mapping"]["cancelled"]
    task = c.new_task("offered")
    for attempt in ("CancelTask", "CancelTask again"):
        with ctx.subcheck(attempt):
            got = a2a_task(ctx, c.a2a_call("CancelTask", {"id": task.id}), attempt, wrapped=False)
            ctx.expect(wire.state(got) == canceled, f"{attempt}: {wire.state(got)!r}, expected {canceled}")
    with ctx.subcheck("by the recipient"):
        other = c.new_task("offered")
        ctx.expect(rpc_error(c.a2a_call("CancelTask", {"id": other.id}, who=RECIPIENT)) is not None,
                   "CancelTask by the recipient was served", kind="auth_not_enforced")
    with ctx.subcheck("accepted"):
        accepted = c.new_task("accepted")
        ctx.expect(rpc_error(c.a2a_call("CancelTask", {"id": accepted.id})) is not None,
                   "CancelTask of an accepted task was served", kind="accepted_invalid")


@check_a2a_cancel.fault
def a2a_repeat_cancel_refused(ref: WeverReference) -> None:
    """A repeated CancelTask of a canceled task is refused TaskNotCancelable (the HTTP
    cancel_task still answers the cancelled task)."""
    @replaces(ref.a2a_cancel_task)
    def cancel(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        task_id = params.get("id") if isinstance(params, dict) else None
        task = ref.s["tasks"].get(task_id) if isinstance(task_id, str) else None
        if task is not None and task["sender_id"] == caller and task["state"] == CANCELLED:
            raise RpcError(TASK_NOT_CANCELABLE, "TaskNotCancelable: the task is already canceled")
        result: dict[str, Any] = original(caller, params, headers)
        return result


@requirement(id="WEVER-A2A-GET-VISIBILITY", level="MUST",
             title="GetTask serves the sender or the recipient only",
             source=at(f"{A2A}/get_task/visibility"), faults=["task_visible_to_anyone"])
def check_a2a_visibility(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    task = c.new_task("offered")
    ctx.expect(rpc_error(c.a2a_call("GetTask", {"id": task.id}, who=STRANGER)) is not None,
               "GetTask by a mailbox that is no participant was served", kind="auth_not_enforced")


# ----------------------------------------------------------------------------------
# retries by messageId
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-A2A-REPLAY", level="MUST",
             title="The same messageId and data return the same task; changed data conflicts",
             source=at(f"{A2A}/retry"), faults=["a2a_replay_duplicates", "a2a_conflict_accepted"])
def check_a2a_replay(ctx: CheckContext) -> None:
    """The same messageId and data return the same task; changed data conflicts; the
    inbox holds one task with the data (the check counts only its own)."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    message_id = f"conformance-{fresh_key()}"
    first = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id, data=data)), "SendMessage")
    again = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id, data=data)),
                     "SendMessage replayed")
    ctx.expect(again["id"] == first["id"],
               f"a replayed messageId created task {again['id']!r} beside {first['id']!r}")
    changed, _ = c.marked()
    reply = c.a2a_call("SendMessage", c.a2a_message(message_id, data=changed))
    ctx.expect(rpc_error(reply) is not None,
               f"a messageId reused with changed data was served: {reply.text[:200]}",
               kind="accepted_invalid")
    carried = watch.carrying(marker)
    ctx.expect(carried == {first["id"]},
               f"replays left {len(carried)} tasks with their data in the inbox ({sorted(carried)}), "
               f"expected exactly {first['id']}", kind="state_changed")


@check_a2a_replay.fault
def a2a_replay_duplicates(ref: WeverReference) -> None:
    """The A2A adapter does not deduplicate: a SendMessage replayed with the same
    messageId and data creates another task (the key store, and HTTP send_task under
    any key, still deduplicate)."""
    in_adapter = [False]

    @replaces(ref.a2a_send_message)
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        in_adapter[0] = True
        try:
            result: dict[str, Any] = original(caller, params, headers)
            return result
        finally:
            in_adapter[0] = False

    @replaces(ref.replay_for_key)
    def replay(original: Any, sender_id: str, key: str, body: str) -> dict[str, Any] | None:
        result: dict[str, Any] | None = original(sender_id, key, body)  # a conflict is still refused
        return None if in_adapter[0] else result


@check_a2a_replay.fault
def a2a_conflict_accepted(ref: WeverReference) -> None:
    """A SendMessage reusing a messageId with changed data answers the first task
    instead of a conflict (HTTP send_task conflicts are still refused)."""
    @replaces(ref.a2a_send_message)
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


@requirement(id="WEVER-A2A-REPLAY-CONCURRENT", level="MUST",
             title="Identical SendMessage requests arriving at once make one task",
             source=at(f"{A2A}/retry"), faults=["replay_race"])
def a2a_concurrent(ctx: CheckContext) -> None:
    """The same SendMessage (messageId and data) sent 8 times at once makes one task."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    params = c.a2a_message(data=data)
    replies = idempotency.at_once(8, lambda: c.a2a_call("SendMessage", params))
    named = {dig(r.json(), "result", "task", "id") for r in replies}
    ctx.expect(len(named) == 1 and None not in named,
               f"8 identical SendMessage at once answered tasks {sorted(map(str, named))}",
               kind="state_changed")
    carried = watch.carrying(marker)
    ctx.expect(carried == named,
               f"8 identical SendMessage at once left {len(carried)} tasks with their data "
               f"({sorted(carried)})",
               kind="state_changed")


@requirement(id="WEVER-A2A-KEY-NAMESPACE", level="MUST",
             title="An A2A messageId is the Connect request key a2a-<sha256> of the sender: HTTP send_task "
                   "under it returns the same task; another sender's same messageId is another task",
             source=at(f"{A2A}/retry"), faults=["a2a_private_namespace", "keys_shared_across_senders"])
def check_a2a_key_namespace(ctx: CheckContext) -> None:
    """messageId becomes a2a- plus its SHA-256 digest in the sender's Connect request-key
    namespace: an HTTP send_task of the sender under that key and the same body is the
    same task; the same messageId from another sender is another task."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    data, _ = c.marked()
    message_id = f"conformance-{fresh_key()}"
    task = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id, data=data)), "SendMessage")
    with ctx.subcheck("HTTP send_task under a2a-<sha256>"):
        seen = []
        for spelling in digest_spellings(message_id):
            reply = c.send(SENDER, RECIPIENT, data=data, key="a2a-" + spelling)
            if reply.ok and locate.holds(reply.result, task["id"]):
                break
            seen.append(reply.describe())
        else:
            ctx.fail(f"no spelling of a2a-<sha256(messageId)> reaches the A2A task {task['id']} over HTTP: "
                     f"{seen}", kind="state_changed")
    with ctx.subcheck("another sender, the same messageId"):
        c.allow(STRANGER, RECIPIENT)
        other = a2a_task(ctx, c.a2a_call("SendMessage", c.a2a_message(message_id, data=data), who=STRANGER),
                         "SendMessage of another sender with the same messageId")
        ctx.expect(other["id"] != task["id"],
                   f"another sender's SendMessage with the same messageId answered the first "
                   f"sender's task {task['id']}: the key namespace is the sender's", kind="auth_not_enforced")


@check_a2a_key_namespace.fault
def a2a_private_namespace(ref: WeverReference) -> None:
    """An A2A messageId becomes a request key of a private namespace (another prefix),
    not a2a-<sha256> in the sender's Connect keys: HTTP send_task under a2a-<sha256>
    is new work. A2A replays among themselves still deduplicate."""
    @replaces(ref.a2a_request_key)
    def request_key(original: Any, message_id: str) -> str:
        return "a2a-private-" + hashlib.sha256(message_id.encode("utf-8")).hexdigest()


@check_a2a_key_namespace.fault
def keys_shared_across_senders(ref: WeverReference) -> None:
    """Request keys (Idempotency-Key, and the A2A messageId's) are one namespace for every
    sender, not each sender's own: another sender's same key and body replays the first task."""
    @replaces(ref.key_id)
    def key_id(original: Any, sender_id: str, key: str) -> str:
        return f"*|{key}"


@requirement(id="WEVER-A2A-KEY-HEADER-IGNORED", level="MUST",
             title="An incoming Idempotency-Key header does not override the messageId's request key",
             source=at(f"{A2A}/retry"), faults=["a2a_header_key"])
def check_a2a_key_header(ctx: CheckContext) -> None:
    """An incoming Idempotency-Key header does not override the messageId's key: the
    same messageId under another header is the same task, and the header's value names
    no A2A task over HTTP."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    header = (c.binding.idempotency.get("header", "Idempotency-Key") if c.binding.idempotency
              else "Idempotency-Key")
    data, _ = c.marked()
    message_id, key = f"conformance-{fresh_key()}", fresh_key()
    params = c.a2a_message(message_id, data=data)
    task = a2a_task(ctx, c.a2a_call("SendMessage", params, headers={header: key}),
                    f"SendMessage with an {header} header")
    with ctx.subcheck("the same messageId under another header"):
        again = a2a_task(ctx, c.a2a_call("SendMessage", params, headers={header: fresh_key()}),
                         f"the same SendMessage under another {header}")
        ctx.expect(again["id"] == task["id"],
                   f"the same messageId under another {header} made task {again['id']} beside "
                   f"{task['id']}: the header overrode the messageId", kind="state_changed")
    with ctx.subcheck(f"HTTP send_task under the header's {header}"):
        other = c.task_of(c.send(SENDER, RECIPIENT, data=data, key=key),
                          f"send_task under the {header} the SendMessage carried")
        ctx.expect(other.id != task["id"],
                   f"send_task under the {header} of a SendMessage answered its task {task['id']}: "
                   "the header became the adapter's request key", kind="state_changed")


@check_a2a_key_header.fault
def a2a_header_key(ref: WeverReference) -> None:
    """An incoming Idempotency-Key header on SendMessage becomes the adapter's request key,
    instead of a2a-<sha256(messageId)> ("Incoming Idempotency-Key does not override this")."""
    header: list[str | None] = [None]

    @replaces(ref.a2a_send_message)
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        header[0] = headers.get(ref.key_header) or None
        try:
            return dict(original(caller, params, headers))
        finally:
            header[0] = None

    @replaces(ref.a2a_request_key)
    def key(original: Any, message_id: str) -> str:
        return header[0] or str(original(message_id))


@requirement(id="WEVER-A2A-RETRY-GONE", level="MUST",
             title="A deleted or expired task's messageId creates no new work while its tombstone lives",
             source=at(f"{A2A}/retry"), faults=["tombstone_forgotten", "expired_key_forgotten"])
def check_a2a_retry_gone(ctx: CheckContext) -> None:
    """A messageId whose task was deleted, or expired, names no new work while its
    tombstone lives ("expired/deleted retained work is unavailable")."""
    if ctx.run.live:
        ctx.needs_control(f"advance_clock past task_hours ({ctx.profile.limits['task_hours'].value}): an "
                          "expired task's messageId")
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    deleted, expired = (f"conformance-{uuid.uuid4().hex}" for _ in range(2))
    (data, marker), (late_data, late_marker) = c.marked(), c.marked()
    task_id = a2a_sent_id(ctx, c.a2a_call("SendMessage", c.a2a_message(deleted, data=data)), "SendMessage")
    a2a_sent_id(ctx, c.a2a_call("SendMessage", c.a2a_message(expired, data=late_data)),
                "SendMessage of a task left to expire")
    with ctx.subcheck("deleted"):
        expect_result(ctx, c.call("cancel_task", {"task_id": task_id}, SENDER), "cancel_task")
        expect_result(ctx, c.call("delete_task_content", {"task_id": task_id}, SENDER), "delete_task_content")
        watch = c.watch(RECIPIENT)
        refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message(deleted, data=data)),
                    "SendMessage retrying a deleted task's messageId")
        watch.nothing_delivered(marker, "a retry of a deleted task's messageId")
    with ctx.subcheck("expired"):
        c.advance(ctx.limit("task_hours") * HOUR_S + HOUR_S)  # within the tombstone's hours
        watch = c.watch(RECIPIENT)
        refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message(expired, data=late_data)),
                    "SendMessage retrying an expired task's messageId")
        watch.nothing_delivered(late_marker, "a retry of an expired task's messageId")


# ----------------------------------------------------------------------------------
# permission and the bearer token
# ----------------------------------------------------------------------------------
@requirement(id="WEVER-A2A-NO-GRANT-CREATED", level="MUST",
             title="The A2A bridge never creates sender grants",
             source=at(f"{A2A}/send_message/permission"), faults=["a2a_creates_grant"])
def check_a2a_no_grant(ctx: CheckContext) -> None:
    """The bridge never creates sender grants: without one, SendMessage is refused and
    afterwards there still is none."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT)
    c.ungranted(SENDER, RECIPIENT)
    sender = c.mailbox(SENDER)
    before = locate.holds(expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox"), sender)
    refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message()), "SendMessage without the recipient's grant")
    after = expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox")
    ctx.expect(before or not locate.holds(after, sender),
               f"after a refused SendMessage the recipient's get_mailbox names the sender "
               f"{sender} (an allowed sender?): {str(after)[:200]}", kind="auth_not_enforced")
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after a refused SendMessage")


@check_a2a_no_grant.fault
def a2a_creates_grant(ref: WeverReference) -> None:
    """SendMessage grants the sender before delivering."""
    @replaces(ref.a2a_send_message)
    def send(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        try:
            recipient = params["message"]["parts"][0]["data"]["recipient_id"]
            if recipient in ref.s["mailboxes"]:
                ref.s["grants"].setdefault(recipient, {})[caller] = ref.now()
        except (KeyError, IndexError, TypeError):
            pass
        return dict(original(caller, params, headers))


@requirement(id="WEVER-A2A-BEARER", level="MUST",
             title="The adapter refuses a request without a valid mailbox token and delivers nothing",
             source=at(f"{A2A}/required_headers/Authorization"), faults=["a2a_open"])
def check_a2a_bearer(ctx: CheckContext) -> None:
    """The adapter needs the mailbox token (required_headers Authorization)."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    with ctx.subcheck("no token"):
        refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message(data=data), who=None),
                    "SendMessage with no token")
    with ctx.subcheck("an unknown token"):
        headers = {**c.a2a_headers(None),
                   "Authorization": f"Bearer conformance-not-a-token-{uuid.uuid4().hex}"}
        reply = ctx.http.request("POST", c.a2a["endpoint"], headers=headers,
                                 content=json.dumps(wire.request("SendMessage", c.a2a_message(data=data))))
        refused_rpc(ctx, reply, "SendMessage with a token the relay never issued")
    watch.nothing_delivered(marker, "a SendMessage without a valid token", kind="auth_not_enforced")


@check_a2a_bearer.fault
def a2a_open(ref: WeverReference) -> None:
    """The adapter serves a request without a valid token as the first seeded mailbox."""
    @replaces(ref.a2a_authenticate)
    def authenticate(original: Any, headers: Mapping[str, str]) -> str:
        if ref.mailbox_for_token(ref.bearer_token(headers)) is None:
            return str(next(iter(ref.s["tokens"].values())))
        return str(original(headers))


@requirement(id="WEVER-A2A-NEEDS-CAPABILITY", level="MUST",
             title="SendMessage for a capability the recipient does not advertise delivers nothing",
             source=at(f"{A2A}/send_message/permission"), faults=["capability_unchecked"])
def check_a2a_capability(ctx: CheckContext) -> None:
    """SendMessage for a capability the recipient does not advertise delivers nothing."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    data, marker = c.marked()
    params = c.a2a_message(data=data)
    params["message"]["parts"][0]["data"]["capability"] = "conformance.not.advertised"
    watch = c.watch(RECIPIENT)
    refused_rpc(ctx, c.a2a_call("SendMessage", params),
                "SendMessage for a capability the recipient does not advertise")
    watch.nothing_delivered(marker, "a refused SendMessage", kind="auth_not_enforced")
