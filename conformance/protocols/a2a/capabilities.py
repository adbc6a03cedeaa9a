"""Capability validation (sections 3.3.4, 13.3): an agent whose card does not declare a
capability true refuses the operations that need it with the error section 3.3.4 names
(push configuration: PushNotificationNotSupportedError; SendStreamingMessage and
SubscribeToTask: UnsupportedOperationError, an event stream being an answer too;
GetExtendedAgentCard: UnsupportedOperationError), and one that declares an extended card
it has not configured answers ExtendedAgentCardNotConfiguredError. A row whose capability
the card declares on is not applicable by that declaration (offers.py; part 2 tests streaming
and push themselves)."""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import offers
from conformance.protocols.a2a.answers import REST
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.driving import any_task, open_task, push_config
from conformance.protocols.a2a.expectations import expect_carries
from conformance.protocols.a2a.provocations import (
    declares_extended_card,
    extended_card_not_configured,
    push_declared_off,
)
from conformance.protocols.a2a.reference import A2AReference
from conformance.protocols.a2a.routes import STREAM_TIMEOUT, subscribe

PUSH_OFF = "PushNotificationNotSupportedError"
UNSUPPORTED = "UnsupportedOperationError"
NOT_CONFIGURED = "ExtendedAgentCardNotConfiguredError"


# why a row about an agent without a capability is not applicable where the card declares it on
WITHOUT = "the rows of the capability itself judge its operations; this one is about an agent without it"


@requirement(id="A2A-CAP-PUSH-OFF", level="MUST",
             title="Without capabilities.pushNotifications, each push configuration method (Create, Get, "
                   "List, Delete) gets PushNotificationNotSupportedError",
             source=docs.spec("operations related to push notification configuration (Create, Get, List",
                              after="### 3.3.4"),
             faults=["push_create_served", "push_list_unsupported_operation"],
             applies=offers.offered(offers.PUSH, offered=False, why=WITHOUT))
def check_push_off(ctx: CheckContext) -> None:
    """About a task the check made (so no TaskNotFoundError can stand in for the answer)."""
    client = A2AClient(ctx)
    task = any_task(client)
    config = {"taskId": task["id"], "id": "conformance-config"}
    for method, params in (("CreateTaskPushNotificationConfig", push_config(task["id"])),
                           ("GetTaskPushNotificationConfig", config),
                           ("ListTaskPushNotificationConfigs", {"taskId": task["id"]}),
                           ("DeleteTaskPushNotificationConfig", config)):
        with ctx.subcheck(method):
            expect_carries(ctx, client.call(method, params), PUSH_OFF, method)


@check_push_off.fault
def push_create_served(ref: A2AReference) -> None:
    """CreateTaskPushNotificationConfig stores the config although the card declares no push notifications."""
    push_declared_off(ref)
    @replaces(ref.op_CreateTaskPushNotificationConfig)
    def create(original: Any, params: Any, caller: str) -> Any:
        return {**params, "id": "config-1"}


@check_push_off.fault
def push_list_unsupported_operation(ref: A2AReference) -> None:
    """ListTaskPushNotificationConfigs answers UnsupportedOperationError, not
    PushNotificationNotSupportedError (the card declaring no push notifications)."""
    push_declared_off(ref)

    @replaces(ref.op_ListTaskPushNotificationConfigs)
    def refuse(original: Any, params: Any, caller: str) -> Any:
        raise Refusal(UNSUPPORTED, "push notifications are not supported")


@requirement(id="A2A-CAP-STREAMING-OFF", level="MUST",
             title="Without capabilities.streaming, SendStreamingMessage and SubscribeToTask get "
                   "UnsupportedOperationError (an event stream is an answer too)",
             source=docs.spec("attempts to use `SendStreamingMessage` or `SubscribeToTask` operations",
                              after="### 3.3.4"),
             faults=["streaming_send_served", "subscribe_push_error"],
             applies=offers.offered(offers.STREAMING, offered=False, why=WITHOUT))
def check_streaming_off(ctx: CheckContext) -> None:
    """SubscribeToTask of a task not in a terminal state (untested where the agent leaves
    none open); over HTTP+JSON by GET, the proto's verb, else POST, section 11.3.2's."""
    client = A2AClient(ctx)
    with ctx.subcheck("SendStreamingMessage"):
        reply = client.call("SendStreamingMessage", {"message": client.message()}, timeout=STREAM_TIMEOUT)
        expect_carries(ctx, reply, UNSUPPORTED, "SendStreamingMessage")
    try:
        task = open_task(client)
    except Untested as exc:
        if ctx.subcheck_failures:
            return
        raise Untested(f"SendStreamingMessage was refused as it must; {exc}", exc.reason) from None
    with ctx.subcheck("SubscribeToTask"):
        verb = "GET, then POST" if client.binding.kind == REST else "JSON-RPC"
        expect_carries(ctx, subscribe(client, task["id"]), UNSUPPORTED,
                       f"SubscribeToTask of a task in {task.get('status', {}).get('state')} ({verb})")


def streaming_off(ref: A2AReference) -> None:
    """The card declares capabilities.streaming off (the reference's default is on)."""
    ref.config = dataclasses.replace(ref.config, streaming=False)


@check_streaming_off.fault
def streaming_send_served(ref: A2AReference) -> None:
    """SendStreamingMessage is served (answered as SendMessage) although the card declares no streaming."""
    streaming_off(ref)
    @replaces(ref.op_SendStreamingMessage)
    def send(original: Any, params: Any, caller: str) -> Any:
        return ref.op_SendMessage(params, caller)


@check_streaming_off.fault
def subscribe_push_error(ref: A2AReference) -> None:
    """SubscribeToTask answers PushNotificationNotSupportedError, not UnsupportedOperationError,
    where the card declares no streaming."""
    streaming_off(ref)

    @replaces(ref.op_SubscribeToTask)
    def refuse(original: Any, params: Any, caller: str) -> Any:
        raise Refusal(PUSH_OFF, "no subscriptions")


@requirement(id="A2A-CAP-XCARD-OFF", level="MUST",
             title="Without capabilities.extendedAgentCard, GetExtendedAgentCard gets "
                   "UnsupportedOperationError",
             source=docs.spec("attempts to call the Get Extended Agent Card operation **MUST** return",
                              after="### 3.3.4"),
             faults=["xcard_served_when_off", "xcard_off_not_configured"],
             applies=offers.offered(offers.XCARD, offered=False, why=WITHOUT))
def check_xcard_off(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    expect_carries(ctx, client.call("GetExtendedAgentCard", {}), UNSUPPORTED, "GetExtendedAgentCard")


@check_xcard_off.fault
def xcard_served_when_off(ref: A2AReference) -> None:
    """GetExtendedAgentCard answers a card although the public card declares no extended card."""
    @replaces(ref.op_GetExtendedAgentCard)
    def extended(original: Any, params: Any, caller: str) -> Any:
        return {"name": "extended", "version": "1.0.0"}


@check_xcard_off.fault
def xcard_off_not_configured(ref: A2AReference) -> None:
    """GetExtendedAgentCard answers ExtendedAgentCardNotConfiguredError although the card declares no
    extended card (that error is for an agent that declares one)."""
    @replaces(ref.op_GetExtendedAgentCard)
    def refuse(original: Any, params: Any, caller: str) -> Any:
        raise Refusal(NOT_CONFIGURED, "no extended agent card")


@requirement(id="A2A-CAP-XCARD-NOT-CONFIGURED", level="MUST",
             title="An agent declaring capabilities.extendedAgentCard without an extended card configured "
                   "answers GetExtendedAgentCard with ExtendedAgentCardNotConfiguredError",
             source=docs.spec("If the agent declares support but has not configured an extended card",
                              after="### 3.3.4"),
             faults=["xcard_declared_unconfigured_unsupported"],
             applies=declares_extended_card)
def check_xcard_not_configured(ctx: CheckContext) -> None:
    """Not applicable where the agent serves its extended card (it is configured), or where the
    card does not declare one."""
    client = A2AClient(ctx)
    for what, reply in extended_card_not_configured(client):
        expect_carries(ctx, reply, NOT_CONFIGURED, what)
