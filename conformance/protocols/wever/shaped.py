"""The profile's own answer shapes, asked for by SHOULD rows only.

The manifest names no result shape for the HTTP actions (only the token's field), so the
MUST rows read answers by content (answers.py). The shapes the references answer with are
the profile's choice: ``{"task": {"task_id", "state", ...}}`` and ``{"tasks": [...]}``,
``{"request": {"request_id", "status"}}`` and ``{"requests": [...]}``, a mailbox's
``allowed_senders`` and ``accepts_connection_requests``, ``{"peers": [...], "next"}``.
These rows ask for them (``source: profile``), are listed under ``shapes: rows:`` in
profiles/wever-connect.yaml, and so must fail on a shape variant: they are proven to look.
Their titles quote the shapes, braces and all: each is a function of the profile, which
no template fills.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from starlette.responses import JSONResponse, Response

from conformance.checks.expect import expect_list, expect_mapping, expect_result
from conformance.kit.check import CheckContext
from conformance.kit.declare import Chosen, chosen, requirement
from conformance.kit.faults import replaces
from conformance.protocols.wever.client import RECIPIENT, SENDER, STRANGER, WeverClient, dig, still_pending
from conformance.protocols.wever.reference import WeverReference

TASK_KEYS = ("task_id", "sender_id", "recipient_id", "capability", "state", "task", "result", "result_digest")
REQUEST_KEYS = ("request_id", "sender_id", "recipient_id", "status")
MAILBOX_KEYS = ("mailbox_id", "label", "capabilities", "discoverable", "accepts_connection_requests",
                "expires_at", "allowed_senders")
DENIED = "denied"  # the profile's status of a denied request (reference.DENIED)


def shape(why: str) -> Chosen:
    return chosen(f"profiles/wever-connect.yaml#/shapes: {why}")


def task_in(ctx: CheckContext, result: Any, what: str, task_id: str) -> dict[str, Any]:
    """``result`` is {"task": {...}} holding the profile's task members, for ``task_id``."""
    task = expect_mapping(ctx, dig(expect_mapping(ctx, result, f"{what} result", ("task",)), "task"),
                          f"{what} task", TASK_KEYS)
    ctx.expect(task["task_id"] == task_id,
               f"{what}: task.task_id is {task['task_id']!r}, the task is {task_id}", kind="schema_mismatch")
    return task


@requirement(id="WEVER-SHAPE-TASK", level="SHOULD",
             title=lambda profile: 'Task answers are {"task": {"task_id", "state", ...}}, the inbox '
             '{"tasks": [...]} '
                                   "(the profile's shape)",
             source=shape("task answers"), faults=["task_shape_other"])
def check_task_shape(ctx: CheckContext) -> None:
    """send_task, accept_task and get_task answer {"task": {task_id, state, ...}}; the
    inbox answers {"tasks": [...]} of the same objects."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    sent = c.task_of(c.send(SENDER, RECIPIENT), "send_task")
    task = task_in(ctx, sent.answer, "send_task", sent.id)
    ctx.expect(task["state"] == c.vocab.state("offered"), f"send_task: task.state is {task['state']!r}",
               kind="schema_mismatch")
    accepted = expect_result(ctx, c.call("accept_task", {"task_id": sent.id}, RECIPIENT), "accept_task")
    ctx.expect(task_in(ctx, accepted, "accept_task", sent.id)["state"] == c.vocab.state("accepted"),
               "accept_task: task.state is not accepted", kind="schema_mismatch")
    task_in(ctx, expect_result(ctx, c.get(sent.id, SENDER), "get_task"), "get_task", sent.id)
    inbox = expect_mapping(ctx, c.inbox(RECIPIENT), "inbox result", ("tasks",))
    listed = expect_list(ctx, inbox["tasks"], "inbox tasks")
    ctx.expect(any(isinstance(t, dict) and t.get("task_id") == sent.id and set(TASK_KEYS) <= set(t)
                   for t in listed),
               f"inbox: no item of tasks is the task {sent.id} with the members {TASK_KEYS}",
               kind="schema_mismatch")


@requirement(id="WEVER-SHAPE-REQUEST", level="SHOULD",
             title=lambda profile: 'Connection requests are {"request": {"request_id", "status"}}, '
                                   'listed as {"requests": [...]}; a response says "allowed"; a retained '
                                   'denial has status "denied" (the profile\'s shape)',
             source=shape("connection request answers"), faults=["request_shape_other"])
def check_request_shape(ctx: CheckContext) -> None:
    """request_connection answers {"request": {request_id, status, ...}}; the list
    {"requests": [...]}; a response adds the current permission as "allowed"; a retained
    denial has status "denied"."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    new = c.new_pair(SENDER, RECIPIENT)
    made = expect_result(ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                         "request_connection")
    request = expect_mapping(ctx,
                             dig(expect_mapping(ctx, made, "request_connection result", ("request",)),
                                 "request"),
                             "request_connection request", REQUEST_KEYS)
    if not new:
        still_pending(c, str(request["request_id"]))
    listed = expect_mapping(ctx,
                            expect_result(ctx, c.call("list_connection_requests", {}, RECIPIENT),
                                          "list_connection_requests"),
                            "list_connection_requests result", ("requests",))
    ctx.expect(any(isinstance(r, dict) and r.get("request_id") == request["request_id"]
                   for r in expect_list(ctx, listed["requests"], "requests")),
               "list_connection_requests: no item of requests has the request's request_id",
               kind="schema_mismatch")
    denial = {"request_id": request["request_id"], "allowed": False}
    answered = expect_mapping(ctx, expect_result(ctx, c.call("respond_connection_request", denial, RECIPIENT),
                                                 "respond_connection_request"),
                              "respond_connection_request result", ("request", "allowed"))
    ctx.expect(answered["allowed"] is False,
               f"respond_connection_request allowed=false: allowed is {answered['allowed']!r}",
               kind="schema_mismatch")
    retained = expect_result(ctx,
                             c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                             "request_connection again")
    ctx.expect(dig(retained, "request", "status") == DENIED, f"the retained denial's request.status is "
               f"{dig(retained, 'request', 'status')!r}, expected {DENIED}", kind="schema_mismatch")


@requirement(id="WEVER-SHAPE-MAILBOX", level="SHOULD",
             title="Mailbox answers carry mailbox_id, accepts_connection_requests and allowed_senders (the "
             "profile's shape)",
             source=shape("mailbox answers"), faults=["mailbox_shape_other"])
def check_mailbox_shape(ctx: CheckContext) -> None:
    """register_mailbox, update_mailbox and get_mailbox answer the mailbox's members:
    mailbox_id, accepts_connection_requests, allowed_senders (a list of sender ids), ..."""
    c = WeverClient(ctx)
    registered = expect_mapping(ctx,
                                expect_result(ctx,
                                              c.open_call("register_mailbox", {"label": "conformance shape"}),
                                              "register_mailbox"),
                                "register_mailbox result",
                                ("mailbox_id", "accepts_connection_requests", c.vocab.token_field))
    ctx.expect(registered["accepts_connection_requests"] is False,
               "register_mailbox: accepts_connection_requests is not false",
               kind="schema_mismatch")
    updated = expect_mapping(ctx, c.advertise(RECIPIENT, accepts_connection_requests=True),
                             "update_mailbox result", MAILBOX_KEYS)
    ctx.expect(updated["accepts_connection_requests"] is True,
               "update_mailbox: accepts_connection_requests is not true", kind="schema_mismatch")
    expect_result(ctx, c.grant(STRANGER, RECIPIENT), "allow_sender")
    mine = expect_mapping(ctx, expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox"),
                          "get_mailbox result", MAILBOX_KEYS)
    senders = mine["allowed_senders"]
    ctx.expect(isinstance(senders, list) and c.mailbox(STRANGER) in senders,
               f"get_mailbox: allowed_senders is {senders!r}, "
               f"expected a list of sender ids holding {c.mailbox(STRANGER)}", kind="schema_mismatch")


@requirement(id="WEVER-SHAPE-PEERS", level="SHOULD",
             title=lambda profile: 'find_peers answers {"peers": [{"mailbox_id", ...}], "next"} (the '
             'profile\'s shape)',
             source=shape("find_peers answers"), faults=["peers_shape_other"])
def check_peers_shape(ctx: CheckContext) -> None:
    """find_peers answers {"peers": [{mailbox_id, label, capabilities, ...}], "next"}."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, discoverable=True)
    found = expect_mapping(ctx, expect_result(ctx, c.open_call("find_peers", {}), "find_peers"),
                           "find_peers result", ("peers", "next"))
    peers = expect_list(ctx, found["peers"], "find_peers peers")
    ctx.expect(any(isinstance(p, dict) and p.get("mailbox_id") == c.mailbox(RECIPIENT)
                   and "capabilities" in p for p in peers),
               f"find_peers: no item of peers has mailbox_id {c.mailbox(RECIPIENT)} and capabilities",
               kind="schema_mismatch")


# ----------------------------------------------------------------------------------
# other answer shapes (the faults these rows catch)
# ----------------------------------------------------------------------------------
def _reshaped(ref: WeverReference, actions: tuple[str, ...],
              rewrite: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
    """The HTTP and MCP answers of ``actions`` rewritten by ``rewrite(action, result)``;
    what the relay does, and the A2A adapter's answers, stay as they are."""
    @replaces(ref.serve_action)
    def serve(original: Any, action: str, raw: bytes, headers: Mapping[str, str], source: str) -> Response:
        response: Response = original(action, raw, headers, source)
        if action not in actions or response.status_code != 200:
            return response
        return JSONResponse(rewrite(action, json.loads(bytes(response.body))))

    @replaces(ref.mcp_call_tool)
    def call(original: Any, caller: str, params: Any, headers: Mapping[str, str]) -> dict[str, Any]:
        result: dict[str, Any] = original(caller, params, headers)
        name = params.get("name") if isinstance(params, dict) else None
        if name not in actions or result.get("isError"):
            return result
        body = rewrite(str(name), result["structuredContent"])
        return {**result, "structuredContent": body, "content": [{"type": "text", "text": json.dumps(body)}]}


def _renamed(obj: Any, names: Mapping[str, str]) -> Any:
    return {names.get(k, k): v for k, v in obj.items()} if isinstance(obj, dict) else obj


TASK_ACTIONS = ("send_task", "get_task", "accept_task", "decline_task", "cancel_task", "complete_task",
                "inbox")


@check_task_shape.fault
def task_shape_other(ref: WeverReference) -> None:
    """Task answers come as {"item": {"id", ...}} and the inbox as {"items": [...]}
    instead of the profile's {"task": {"task_id", ...}} and {"tasks": [...]}."""
    names = {"task_id": "id"}

    def rewrite(action: str, body: dict[str, Any]) -> dict[str, Any]:
        if action == "inbox":
            return {"items": [_renamed(t, names) for t in body.get("tasks") or []]}
        return {"item": _renamed(body.get("task"), names)}

    _reshaped(ref, TASK_ACTIONS, rewrite)


@check_request_shape.fault
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


@check_mailbox_shape.fault
def mailbox_shape_other(ref: WeverReference) -> None:
    """Mailbox answers name allowed_sender_ids and requests_enabled instead of the
    profile's allowed_senders and accepts_connection_requests."""
    names = {"allowed_senders": "allowed_sender_ids", "accepts_connection_requests": "requests_enabled"}
    _reshaped(ref, ("get_mailbox", "update_mailbox", "register_mailbox"), lambda action,
              body: dict(_renamed(body, names)))


@check_peers_shape.fault
def peers_shape_other(ref: WeverReference) -> None:
    """find_peers answers {"profiles": [{"id", ...}]} instead of the profile's
    {"peers": [{"mailbox_id", ...}], "next"}."""
    def rewrite(action: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"profiles": [_renamed(p, {"mailbox_id": "id"}) for p in body.get("peers") or []],
                "cursor": body.get("next")}

    _reshaped(ref, ("find_peers",), rewrite)
