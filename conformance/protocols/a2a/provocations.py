"""The requests that provoke each error of the table (section 5.4) and the validation errors
(section 3.3.2), kept only where the agent refused them, for the rows about an error's form."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from typing import Any

from conformance.kit.check import Blocked, CheckContext, NotApplicable, Untested
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import offers
from conformance.protocols.a2a.answers import (
    GRPC,
    JSONRPC,
    REST,
    describe,
    grpc_status,
    info_in,
    kind_of,
    table,
)
from conformance.protocols.a2a.client import LOOKS_KEY, A2AClient, a2a_error, grpc_validation_status
from conformance.protocols.a2a.driving import any_task, never_issued, own_task, push_config
from conformance.protocols.a2a.names import VERSION_HEADER
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply

Provocations = Iterator[tuple[str, Reply]]


def task_not_found(client: A2AClient) -> Provocations:
    unknown = never_issued()
    yield "GetTask of an id never issued", client.get(unknown)
    yield "CancelTask of an id never issued", client.call("CancelTask", {"id": unknown})
    yield "SendMessage continuing a task id never issued", client.send(client.message(taskId=unknown))


def task_not_cancelable(client: A2AClient) -> Provocations:
    task = own_task(client)
    yield "CancelTask of a completed task", client.call("CancelTask", {"id": task["id"]})


def unsupported_operation(client: A2AClient) -> Provocations:
    task = own_task(client)
    follow = client.message(taskId=task["id"], contextId=task.get("contextId"))
    yield "SendMessage to a completed task", client.send(follow)


# the guard of a row provoking PushNotificationNotSupportedError (``applies=``)
without_push = offers.offered(offers.PUSH, offered=False,
                              why="the error is for agents without it; part 2 tests push notifications")


def push_not_supported(client: A2AClient) -> Provocations:
    """Its row applies where the card declares push off (``without_push``)."""
    task = any_task(client)
    yield ("CreateTaskPushNotificationConfig while capabilities.pushNotifications is not true",
           client.call("CreateTaskPushNotificationConfig", push_config(task["id"])))


UNSUPPORTED_MEDIA = "application/x-conformance-unsupported"


def content_type_not_supported(client: A2AClient) -> Provocations:
    """A part whose mediaType the card's defaultInputModes do not name: untested when the
    agent takes it, or refuses it as invalid parameters (section 3.3.2 lists an unsupported
    content type among validation errors, -32602)."""
    modes = client.card.get("defaultInputModes")
    if not isinstance(modes, list) or UNSUPPORTED_MEDIA in modes or any("*" in str(m) for m in modes):
        raise Untested(f"the card's defaultInputModes {modes!r} may cover any media type", "other")
    part = {"text": "a part of a media type the agent does not name", "mediaType": UNSUPPORTED_MEDIA}
    reply = client.send(client.message(parts=[part]))
    if reply.ok:
        raise Untested(f"the agent accepted a part of media type {UNSUPPORTED_MEDIA}, which its "
                       f"defaultInputModes {modes} do not name ({reply.describe()}): nothing was refused",
                       "other")
    if invalid_params(client.ctx, reply):
        raise Untested(f"the agent refused a part of media type {UNSUPPORTED_MEDIA} as invalid parameters "
                       f"({reply.describe()}); section 3.3.2 lists an unsupported content type among "
                       "validation errors, so the ContentTypeNotSupportedError mapping is not exercised",
                       "other")
    yield f"SendMessage with a part of media type {UNSUPPORTED_MEDIA}", reply


def invalid_params(ctx: CheckContext, reply: Reply) -> bool:
    """A validation refusal: -32602, or over HTTP+JSON a 400 (over gRPC INVALID_ARGUMENT)
    naming no error of the table."""
    if kind_of(ctx) == JSONRPC:
        return bool(reply.error_code == docs.jsonrpc_errors()["InvalidParamsError"])
    reasons = {docs.reason_of(name) for name in table(ctx)}
    if kind_of(ctx) == GRPC:
        return (grpc_status(reply) == grpc_validation_status()
                and (info_in(reply) or {}).get("reason") not in reasons)
    return reply.status == 400 and (info_in(reply) or {}).get("reason") not in reasons


# the guard of a row provoking ExtendedAgentCardNotConfiguredError (``applies=``)
declares_extended_card = offers.offered(
    offers.XCARD, why="the error is for an agent that declares it and has no extended card")


def extended_card_not_configured(client: A2AClient) -> Provocations:
    """Its row applies where the card declares the extended card (``declares_extended_card``)."""
    reply = client.call("GetExtendedAgentCard", {})
    if reply.ok:
        raise NotApplicable(f"the agent serves its extended card ({reply.describe()}): it is configured")
    yield "GetExtendedAgentCard while the card declares extendedAgentCard", reply


UNSUPPORTED_VERSION = "9.9"


def version_not_supported(client: A2AClient) -> Provocations:
    yield (f"SendMessage with A2A-Version {UNSUPPORTED_VERSION}",
           client.send(client.message(), headers={VERSION_HEADER: UNSUPPORTED_VERSION}))


def push_declared_off(ref: A2AReference) -> None:
    """The reference declares (and serves) no push notifications: its faults of the push-off
    error start from there, the reference serving push by default."""
    ref.config = dataclasses.replace(ref.config, push_notifications=False)


# -- validation errors, and the errors every agent can be brought to ---------------------
def invalid_message() -> dict[str, Any]:
    """A SendMessage whose message breaks the proto: parts is a repeated Part, not a string."""
    return {"messageId": f"conformance-{uuid.uuid4()}", "role": docs.role_named("user"),
            "parts": "not a list of parts"}


def validation_errors(client: A2AClient) -> Iterator[tuple[str, Reply, str]]:
    """Requests that break a method's request message, with the field at fault: only those the
    agent refused as such (``refused``). The rows about an error's form judge what the error
    is; one the agent served, or refused as an error of the table about something else (a
    number read as a task id it does not know), shows no validation error to look at: that is
    A2A-PARAMS-INVALID-*'s finding, and the row is blocked in its name."""
    asked: list[tuple[str, str, dict[str, Any], str]]
    if client.binding.kind == GRPC:  # protobuf carries no string as a repeated Part: a REQUIRED list
        # left empty instead
        asked = [("SendMessage whose message has no parts", "SendMessage",
                  {"message": {**invalid_message(), "parts": []}}, "parts")]
    else:
        asked = [("SendMessage whose message.parts is not an array", "SendMessage",
                  {"message": invalid_message()}, "parts")]
        if client.binding.kind == JSONRPC:  # over HTTP+JSON the id is a path segment: always a string
            asked.append(("GetTask whose id is a number", "GetTask", {"id": 42}, "id"))
    for what, method, params, field_name in asked:
        reply = client.call(method, params)
        if refused(client, what, reply, f"A2A-PARAMS-INVALID-{docs.reason_of(method).replace('_', '-')}",
                   a2a=False):
            yield what, reply, field_name


def refused(client: A2AClient, what: str, reply: Reply, by: str, a2a: bool = True) -> bool:
    """Whether ``reply`` is an error to judge the form of: refused, and (unless ``a2a``) with no
    error of the table below a server failure, which would say the request was read as valid (a
    failure is judged: a validation error answered as one has the wrong code). Else the refusal
    the row looks at never came: kept as a set-up step ``by`` is about (``blocked_looks`` raises
    it once the other answers were judged)."""
    if not reply.ok and (a2a or reply.status >= 500 or a2a_error(client.ctx, reply) not in table(client.ctx)):
        return True
    client.ctx.scratch.setdefault(LOOKS_KEY, []).append(Blocked(
        f"set-up failed: {what} (the subject of {by}): no error to look at: {describe(reply)}",
        kind="accepted_invalid"))
    return False


def a2a_errors(client: A2AClient) -> Iterator[tuple[str, Reply, str]]:
    """Errors of the table every agent can be brought to, with their names (one the agent
    serves instead is its mapping row's finding: ``refused``)."""
    label = {JSONRPC: "JSONRPC", REST: "REST", GRPC: "GRPC"}[client.binding.kind]
    for provoke, name in ((task_not_found, "TaskNotFoundError"),
                          (task_not_cancelable, "TaskNotCancelableError"),
                          (unsupported_operation, "UnsupportedOperationError")):
        what, reply = next(provoke(client))
        by = f"A2A-ERR-{docs.reason_of(name).replace('_', '-')}-{label}"
        if refused(client, what, reply, by):
            yield what, reply, name
