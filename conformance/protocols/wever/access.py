"""Wever Connect's access rules: registering a mailbox (its token, how it starts) and the
bearer token every action with requires_bearer asks for. The fault every profile-code
SHOULD row names (``refusal_codes_swapped``) is here, beside the first of them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from conformance.checks import auth
from conformance.checks.expect import expect_refused, expect_result
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, code, fault, requirement
from conformance.kit.faults import replaces, returns
from conformance.kit.locate import Search
from conformance.protocols.wever.answers import marked, named_values
from conformance.protocols.wever.client import MAIN, RECIPIENT, SENDER, STRANGER, WeverClient, fresh_key
from conformance.protocols.wever.reference import Call, RelayError, WeverReference
from conformance.protocols.wever.shared_faults import CODES
from conformance.transport.binding import Reply


@requirement(id="WEVER-REGISTER-TOKEN", level="MUST",
             title="register_mailbox returns access_token, usable as a Bearer; connection requests start "
                   "disabled; the profile is private",
             source=at("/actions/register_mailbox/description"),
             faults=["requests_enabled_at_registration", "private_profile_listed"])
def check_register_token(ctx: CheckContext) -> None:
    """register_mailbox hands back the token in access_setup.token_response_field (the one
    answer field the manifest names: read wherever it sits); it works as a Bearer token;
    connection requests start disabled (a request to the new mailbox is refused); the
    mailbox is private (find_peers names neither its id nor its label)."""
    c = WeverClient(ctx)
    setup = ctx.profile.spec["protocols"]["a2a"]["access_setup"]
    field = c.vocab.token_field
    label = f"conformance {fresh_key()[:12]}"
    created = expect_result(ctx,
                            c.open_call("register_mailbox", {"label": label, "capabilities": [c.capability]}),
                            "register_mailbox")
    tokens = [t for t in named_values(created, field) if isinstance(t, str) and t]
    if not tokens:
        ctx.fail("register_mailbox: " + Search(f"a nonempty string in member {field} "
                                               "(access_setup.token_response_field)")
                 .looked_for(created), kind="malformed_answer")
    reply = ctx.http.request("POST", ctx.profile.spec["routes"]["actions"].replace("{action}", "get_mailbox"),
                             headers={"Authorization": f"{setup['token_type']} {tokens[0]}",
                                      "Content-Type": "application/json"},
                             content="{}")
    mine = reply.json()
    ctx.expect(reply.status == 200 and isinstance(mine, dict),
               f"get_mailbox with the new token: HTTP {reply.status} {reply.text[:200]}",
               kind="rejected_valid")
    found = c.mailbox_ids(created) or c.mailbox_ids(mine)
    if not found:
        looked = Search(f"the new mailbox's id (pattern {c.vocab.mailbox_id.pattern})").looked_for(created)
        ctx.fail("register_mailbox and get_mailbox: " + looked, kind="malformed_answer")
    new_id = found[0]
    with ctx.subcheck("connection requests start disabled"):
        expect_refused(ctx, c.call("request_connection", {"recipient_id": new_id}, SENDER),
                       "request_connection to a new mailbox that never enabled connection requests")
    with ctx.subcheck("the profile is private"):
        peers = expect_result(ctx, c.open_call("find_peers", {}), "find_peers")
        ctx.expect(not marked(peers, label) and not locate.holds(peers, new_id),
                   f"find_peers lists a mailbox registered without discoverable=true ({new_id}): profiles "
                   "are private until then")


@check_register_token.fault
def requests_enabled_at_registration(ref: WeverReference) -> None:
    """A newly registered mailbox starts with connection requests enabled."""
    @replaces(ref.act_register_mailbox)
    def register(original: Any, call: Call) -> dict[str, Any]:
        out: dict[str, Any] = original(call)
        ref.s["mailboxes"][out["mailbox_id"]]["accepts_connection_requests"] = True
        out["accepts_connection_requests"] = True
        return out


@check_register_token.fault
def private_profile_listed(ref: WeverReference) -> None:
    """find_peers lists every active mailbox, also those that never set discoverable=true."""
    @replaces(ref.is_discoverable)
    def discoverable(original: Any, box: dict[str, Any]) -> bool:
        return ref.is_active(box)


@requirement(id="WEVER-AUTH-OPEN-ACTIONS", level="MUST",
             title="find_peers and register_mailbox serve a caller with no token",
             source=at("/actions/find_peers/requires_bearer"),
             faults=[returns("open_actions_need_bearer", "requires_bearer", True,
                             "find_peers and register_mailbox (no requires_bearer) demand a bearer token "
                             "too.")])
def check_open_actions(ctx: CheckContext) -> None:
    """Actions without requires_bearer serve a caller with no token."""
    c = WeverClient(ctx)
    for name, action in ctx.profile.spec["actions"].items():
        if action.get("requires_bearer"):
            continue
        with ctx.subcheck(name):
            params = {"label": "conformance open"} if name == "register_mailbox" else {}
            expect_result(ctx, c.open_call(name, params), f"{name} without a bearer token")


def bearer_actions(ctx: CheckContext) -> dict[str, Callable[[Any], Reply]]:
    """Every action with requires_bearer, called with a minimal valid input."""
    c = WeverClient(ctx, reset=False)
    task_id = "task_" + "0" * 32
    inputs = {"accept_task": {"task_id": task_id},
              "allow_sender": {"sender_id": c.mailbox(STRANGER), "allowed": True},
              "cancel_task": {"task_id": task_id}, "complete_task": {"task_id": task_id, "result": {}},
              "decline_task": {"task_id": task_id}, "delete_task_content": {"task_id": task_id},
              "get_task": {"task_id": task_id},
              "request_connection": {"recipient_id": c.mailbox(RECIPIENT)},
              "respond_connection_request": {"request_id": "conn_" + "0" * 32, "allowed": False},
              "send_task": c.task_body(),
              "update_mailbox": {"label": "x", "capabilities": [], "discoverable": False}}
    def caller(name: str) -> Callable[[Any], Reply]:
        return lambda who: c.call(name, inputs.get(name, {}), who)

    # close_mailbox too: refused without a valid token, it closes nothing
    return {name: caller(name) for name, action in ctx.profile.spec["actions"].items()
            if action.get("requires_bearer")}


@requirement(id="WEVER-AUTH-BEARER-REQUIRED", level="MUST",
             title="Every action with requires_bearer refuses a call without a token or with one the relay "
             "never issued",
             source=at("/actions/send_task/requires_bearer"), faults=["bearer_not_enforced"])
def auth_refused(ctx: CheckContext) -> None:
    """No token, and a token the relay never issued: refused (any refusal)."""
    for who, make in (("no token", auth.token_required), ("an unknown token", auth.token_refused)):
        with ctx.subcheck(who):
            make(ctx, operations=bearer_actions(ctx), error=None, credential=MAIN)


@auth_refused.fault
def bearer_not_enforced(ref: WeverReference) -> None:
    """A call without a token, or with one the relay never issued, is served anonymously
    (no mailbox) instead of refused UNAUTHENTICATED."""
    @replaces(ref.authenticate)
    def authenticate(original: Any, headers: Mapping[str, str]) -> str | None:
        return ref.mailbox_for_token(ref.bearer_token(headers))


@requirement(id="WEVER-AUTH-BEARER-CODE", level="SHOULD",
             title="A call without a valid bearer gets UNAUTHENTICATED (401)",
             source=code("UNAUTHENTICATED"), faults=CODES)
def check_bearer_code(ctx: CheckContext) -> None:
    """No token, and a token the relay never issued: UNAUTHENTICATED."""
    auth.token_refused(ctx, operations=bearer_actions(ctx), error="UNAUTHENTICATED", credential=MAIN)


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

    @replaces(ref.error_status)
    def status(original: Any, err: RelayError) -> int:
        result: int = original(swapped(err))
        return result

    @replaces(ref.error_body)
    def body(original: Any, err: RelayError) -> dict[str, Any]:
        result: dict[str, Any] = original(swapped(err))
        return result
