"""Wever Connect's connection requests: refused until the recipient opts in, granting
nothing by themselves, listed to their recipient only, retained for an exact-pair retry
(a denial too), answered by the recipient only, where allowing grants and denying
revokes, and a repeated response changes neither a later grant nor a later revocation."""

from __future__ import annotations

from typing import Any

from conformance.checks.expect import expect_refused, expect_result, refused_as
from conformance.kit import locate
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, requirement
from conformance.kit.faults import replaces, returns
from conformance.protocols.wever.client import RECIPIENT, SENDER, STRANGER, WeverClient, open_requests
from conformance.protocols.wever.reference import ALLOWED, DENIED, PENDING, Call, WeverReference
from conformance.protocols.wever.shared_faults import CODES
from conformance.transport.http import json_excerpt


@requirement(id="WEVER-CONN-DISABLED-DEFAULT", level="MUST",
             title="Connection requests are refused until the recipient opts in",
             source=at("/permissions"), code="REQUESTS_DISABLED", code_faults=CODES,
             faults=[returns("requests_always_open", "accepts_requests", True,
                             "Connection requests reach every mailbox, opted in or not.")])
def check_conn_disabled(ctx: CheckContext, strict: bool = False) -> None:
    c = WeverClient(ctx)
    if not c.new_pair(SENDER, RECIPIENT):  # the relay returns a pair's retained request, opted in or not
        raise Untested("without control, a connection request of these mailboxes may be retained from an "
                       "earlier run (an exact-pair retry returns it): no pair with a mailbox of the run's "
                       "own is left unasked")
    c.advertise(RECIPIENT, accepts_connection_requests=False)
    refused_as(ctx, c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
               "REQUESTS_DISABLED",
               "request_connection to a mailbox that has not opted in", strict)


@requirement(id="WEVER-CONN-NO-GRANT", level="MUST",
             title="A connection request grants no permission by itself",
             source=at("/actions/request_connection/description"), faults=["request_grants"])
def check_conn_no_grant(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    c.ungranted(SENDER, RECIPIENT)
    open_requests(c)
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after a connection request nobody answered")


@check_conn_no_grant.fault
def request_grants(ref: WeverReference) -> None:
    """A new connection request grants the sender permission by itself."""
    @replaces(ref.act_request_connection)
    def request(original: Any, call: Call) -> dict[str, Any]:
        out: dict[str, Any] = original(call)
        if out["request"]["status"] == PENDING:
            ref.add_grant(out["request"]["recipient_id"], out["request"]["sender_id"])
        return out


@requirement(id="WEVER-CONN-LIST", level="MUST",
             title="list_connection_requests shows the caller's pending requests, and only the caller's",
             source=at("/actions/list_connection_requests/description"), faults=["requests_listed_to_all"])
def check_conn_list(ctx: CheckContext) -> None:
    c = WeverClient(ctx)
    request_id = open_requests(c)
    listed = expect_result(ctx, c.call("list_connection_requests", {}, RECIPIENT), "list_connection_requests")
    ctx.expect(locate.holds(listed, request_id),
               f"list_connection_requests does not show the pending request {request_id} addressed to the "
               f"caller: {json_excerpt(listed)}")
    other = expect_result(ctx, c.call("list_connection_requests", {}, STRANGER),
                          "list_connection_requests as another")
    ctx.expect(not locate.holds(other, request_id), "another mailbox's list shows the request",
               kind="auth_not_enforced")


@check_conn_list.fault
def requests_listed_to_all(ref: WeverReference) -> None:
    """list_connection_requests shows every pending request, whoever it is addressed to."""
    @replaces(ref.act_list_connection_requests)
    def listing(original: Any, call: Call) -> dict[str, Any]:
        pending = sorted((r for r in ref.s["requests"].values() if r["status"] == PENDING),
                         key=lambda r: (r["created_at"], r["request_id"]))
        return {"requests": [ref.request_view(r) for r in pending]}


@requirement(id="WEVER-CONN-RETRY-RETAINED", level="MUST",
             title="An exact-pair retry returns the retained request, a denial too",
             source=at("/actions/request_connection/description"),
             faults=["retry_new_request", "denial_forgotten"])
def check_conn_retry(ctx: CheckContext) -> None:
    """Exact-pair retries return the retained request (the same id), a denial too: it
    stays the same request, and it grants nothing."""
    c = WeverClient(ctx)
    request_id = open_requests(c)
    again = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                         "request_connection again")
    ctx.expect(again == request_id, f"an exact-pair retry made a new request {again} beside {request_id}")
    expect_result(ctx,
                  c.call("respond_connection_request", {"request_id": request_id, "allowed": False},
                         RECIPIENT),
                  "respond_connection_request allowed=false")
    denied = c.request_of(c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER),
                          "request_connection after a denial")
    ctx.expect(denied == request_id,
               f"a retry after a denial must return the retained denial {request_id}, not {denied}")
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after the retained denial")


@check_conn_retry.fault
def retry_new_request(ref: WeverReference) -> None:
    """An exact-pair retry of a pending request makes a new request."""
    @replaces(ref.retained_request)
    def retained(original: Any, sender_id: str, recipient_id: str) -> dict[str, Any] | None:
        req: dict[str, Any] | None = original(sender_id, recipient_id)
        return None if req is not None and req["status"] == PENDING else req


@check_conn_retry.fault
def denial_forgotten(ref: WeverReference) -> None:
    """After a denial, an exact-pair retry makes a new pending request instead of
    returning the retained denial."""
    @replaces(ref.retained_request)
    def retained(original: Any, sender_id: str, recipient_id: str) -> dict[str, Any] | None:
        for req in ref.s["requests"].values():
            pair = (req["sender_id"], req["recipient_id"])
            if pair == (sender_id, recipient_id) and req["status"] != DENIED:
                return req
        return None


@requirement(id="WEVER-CONN-RESPOND", level="MUST",
             title="Only the recipient answers; allowing grants, denying revokes the pair's permission; "
                   "a repeated matching response undoes neither a later revocation nor a later grant",
             source=at("/actions/respond_connection_request/description"),
             faults=["repeat_response_regrants", "deny_keeps_grant", "repeat_denial_revokes",
                     "sender_responds"])
def check_conn_respond(ctx: CheckContext) -> None:
    """Only the recipient answers; allowing grants; denying revokes the pair's current
    permission; a repeated matching response changes neither a later revocation nor a
    later grant (judged by what the sender can send)."""
    c = WeverClient(ctx)
    c.ungranted(SENDER, RECIPIENT)
    with ctx.subcheck("allowing grants; a repeat keeps a later revocation"):
        request_id = open_requests(c)
        answer = {"request_id": request_id, "allowed": True}
        with ctx.subcheck("the sender answering its own request"):
            reply = c.call("respond_connection_request", answer, SENDER)
            expect_refused(ctx, reply, "respond_connection_request by the sender of the request")
            expect_refused(ctx, c.send(SENDER, RECIPIENT),
                           "send_task after the sender answered its own request")
        expect_result(ctx, c.call("respond_connection_request", answer, RECIPIENT),
                      "respond_connection_request allowed=true")
        c.task_of(c.send(SENDER, RECIPIENT), "send_task after the request was allowed")
        expect_result(ctx, c.grant(SENDER, RECIPIENT, allowed=False),
                      "allow_sender allowed=false (a later revocation)")
        expect_result(ctx, c.call("respond_connection_request", answer, RECIPIENT), "the same response again")
        expect_refused(ctx, c.send(SENDER, RECIPIENT),
                       "send_task after the revocation and the repeated response")
    with ctx.subcheck("denying revokes; a repeat keeps a later grant"):
        request_id = open_requests(c, sender=STRANGER)
        denial = {"request_id": request_id, "allowed": False}
        expect_result(ctx, c.grant(STRANGER, RECIPIENT),
                      "allow_sender of the requesting sender (a direct grant)")
        c.task_of(c.send(STRANGER, RECIPIENT), "send_task with the direct grant")
        expect_result(ctx, c.call("respond_connection_request", denial, RECIPIENT),
                      "respond_connection_request allowed=false")
        expect_refused(ctx, c.send(STRANGER, RECIPIENT),
                       "send_task after the denial (denying revokes the pair's permission)")
        expect_result(ctx, c.grant(STRANGER, RECIPIENT), "allow_sender after the denial (a later grant)")
        expect_result(ctx, c.call("respond_connection_request", denial, RECIPIENT), "the same denial again")
        c.task_of(c.send(STRANGER, RECIPIENT), "send_task after the later grant and the repeated denial")


@check_conn_respond.fault
def repeat_response_regrants(ref: WeverReference) -> None:
    """A repeated allowing response grants again, undoing a later revocation."""
    @replaces(ref.act_respond_connection_request)
    def respond(original: Any, call: Call) -> dict[str, Any]:
        out: dict[str, Any] = original(call)
        req = ref.s["requests"][call.args["request_id"]]
        if req["status"] == ALLOWED and call.args["allowed"]:
            ref.add_grant(req["recipient_id"], req["sender_id"])
            out["allowed"] = ref.has_grant(req["recipient_id"], req["sender_id"])
        return out


@check_conn_respond.fault
def deny_keeps_grant(ref: WeverReference) -> None:
    """Denying a connection request records the denial but leaves the pair's existing grant
    ("denying revokes that pair's current permission")."""
    @replaces(ref.act_respond_connection_request)
    def respond(original: Any, call: Call) -> dict[str, Any]:
        req = ref.s["requests"].get(call.args["request_id"])
        kept = req is not None and ref.has_grant(req["recipient_id"], req["sender_id"])
        out: dict[str, Any] = original(call)
        if req is not None and kept and not call.args["allowed"]:
            ref.s["grants"].setdefault(req["recipient_id"], {})[req["sender_id"]] = ref.now()
            out["allowed"] = True
        return out


@check_conn_respond.fault
def repeat_denial_revokes(ref: WeverReference) -> None:
    """A repeated denying response revokes again, undoing a later grant."""
    @replaces(ref.act_respond_connection_request)
    def respond(original: Any, call: Call) -> dict[str, Any]:
        req = ref.s["requests"].get(call.args["request_id"])
        repeat = req is not None and req["status"] == DENIED and not call.args["allowed"]
        out: dict[str, Any] = original(call)
        if repeat and req is not None:
            ref.remove_grant(req["recipient_id"], req["sender_id"])
            out["allowed"] = False
        return out


@check_conn_respond.fault
def sender_responds(ref: WeverReference) -> None:
    """The sender of a connection request may answer it, as if it were the recipient."""
    @replaces(ref.act_respond_connection_request)
    def respond(original: Any, call: Call) -> dict[str, Any]:
        req = ref.s["requests"].get(call.args["request_id"])
        if req is not None and req["sender_id"] == call.caller:
            call = Call(call.action, call.args, req["recipient_id"], call.key, call.source)
        return dict(original(call))
