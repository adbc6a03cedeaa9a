"""The endpoint's methods (SendMessage, GetTask, ListTasks, CancelTask; any other is
method not found), the agent card, and the optional capabilities the card declares false
(streaming, push notifications, the extended card), each refused. Each requirement is
declared on its check, with the faults that prove it can fail."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from conformance.checks.expect import expect_error, expect_mapping, expect_result, refused_as
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, fault, requirement
from conformance.kit.faults import answer, recodes, refuses, replaces
from conformance.protocols.plaza.answers import served
from conformance.protocols.plaza.client import ALICE, BOB, PlazaClient, dig, extension_uri, fresh_id
from conformance.protocols.plaza.envelopes import status_request
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_OPERATION,
    Issue,
    SiteError,
)

CAPABILITIES = "/optionalCapabilities"


@requirement(id="PLAZA-METHODS", level="MUST",
             title="SendMessage, GetTask, ListTasks and CancelTask are served",
             source=at("/methods"),
             faults=[answer("list_tasks_missing", "rpc_handlers", "ListTasks is method not found.",
                            drop=["ListTasks"])])
def check_methods(ctx: CheckContext) -> None:
    """Each of the four methods is served."""
    c = PlazaClient(ctx)
    task, _ = c.invite()
    calls = {"SendMessage": lambda: c.command("status", {}), "GetTask": lambda: c.get_task(task["id"]),
             "ListTasks": lambda: c.rpc("ListTasks", {}),
             "CancelTask": lambda: c.rpc("CancelTask", {"id": task["id"]})}
    for method in ctx.profile.spec["methods"]:
        with ctx.subcheck(method):
            expect_result(ctx, calls[method](), method)


@requirement(id="PLAZA-METHODS-UNKNOWN", level="MUST",
             title="Another method is JSON-RPC's method not found (-32601)",
             source=at("/methods"),
             faults=[recodes("unknown_method_wrong_code", "check_method",
                             lambda err: SiteError(INVALID_REQUEST, err.message),
                             "An unknown method is INVALID_REQUEST instead of method not found.",
                             catch=SiteError,
                             when=lambda err: err.name == METHOD_NOT_FOUND)])
def check_unknown_method(ctx: CheckContext) -> None:
    """A method outside the list is JSON-RPC's method-not-found."""
    c = PlazaClient(ctx, reset=False)
    for method in ("message/send", "GetConversation"):
        with ctx.subcheck(method):
            expect_error(ctx, c.rpc(method, {}), "METHOD_NOT_FOUND", f"the method {method}")


def card_path(ctx: CheckContext) -> str:
    return urlparse(ctx.profile.spec["agentCard"]).path


def capability(name: str, value: Any) -> Callable[..., None]:
    """An edit of the card: its capabilities.<name> set to ``value``."""
    def edit(card: dict[str, Any], *args: Any) -> None:
        card["capabilities"][name] = value
    return edit


@requirement(id="PLAZA-CARD", level="MUST",
             title="The agent card says A2A 1.0, the friendship extension and the optional capabilities",
             source=at("/agentCard"),
             faults=[answer("card_streaming_true", "agent_card", "The card declares streaming: true.",
                            edit=capability("streaming", True)),
                     answer("card_without_extension", "agent_card",
                            "The card does not name the friendship extension.",
                            edit=capability("extensions", []))])
def check_card(ctx: CheckContext) -> None:
    """The card is published, says A2A 1.0, the friendship extension and the capabilities as the document."""
    spec = ctx.profile.spec
    reply = ctx.http.request("GET", card_path(ctx))
    card = expect_mapping(ctx, reply.json() if reply.status == 200 else None,
                          f"GET {card_path(ctx)} (HTTP {reply.status})")
    # A2A's names, wherever the card puts them (a card may carry a wrapper or members of its own)
    versions = {f.value.get("protocolVersion") for f in locate.walk(card) if isinstance(f.value, dict)}
    ctx.expect(spec["protocolVersion"] in versions,
               f"the card names protocol versions {sorted(map(str, versions - {None}))}, "
               f"the document says {spec['protocolVersion']}")
    found = next((f.value["capabilities"] for f in locate.walk(card)
                  if isinstance(f.value, dict) and "capabilities" in f.value), None)
    capabilities = expect_mapping(
        ctx, found, "the card's capabilities (looked for A2A's capabilities anywhere in the card)")
    for name, value in spec["optionalCapabilities"].items():
        ctx.expect(bool(capabilities.get(name, False)) == value,
                   f"the card declares capabilities.{name} = {capabilities.get(name)!r}, "
                   f"the document says {value}")
    uris = [dig(e, "uri") for e in capabilities.get("extensions") or [] if isinstance(e, dict)]
    ext = extension_uri(spec)
    ctx.expect(ext in uris, f"the card's extensions {uris} do not name the friendship extension {ext}")


def extra_methods(ref: PlazaReference, handlers: dict[str, str], validate_as: dict[str, str | None]) -> None:
    """Serve more methods (name -> handler attribute), validated as another method or not at all."""
    @replaces(ref.rpc_handlers)
    def rpc_handlers(original: Any) -> dict[str, Callable[..., Any]]:
        return {**original(), **{name: getattr(ref, attr) for name, attr in handlers.items()}}

    @replaces(ref.params_issues)
    def params_issues(original: Any, method: str, params: Any) -> list[Issue]:
        if method in validate_as:
            other = validate_as[method]
            return [] if other is None else list(original(other, params))
        result: list[Issue] = original(method, params)
        return result


def method_not_found(*args: Any) -> SiteError:
    return SiteError(METHOD_NOT_FOUND, "Method not found")


@requirement(id="PLAZA-CAPS-STREAMING", level="MUST",
             title="Streaming methods are refused (streaming: false)",
             source=at(f"{CAPABILITIES}/streaming"), code="UNSUPPORTED_OPERATION",
             code_faults=["streaming_wrong_code"])
def check_streaming(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx, reset=False)
    served(ctx, c.send(status_request(c)["params"]), "the status example's params by SendMessage")
    for method, params in (("SendStreamingMessage", status_request(c)["params"]),
                           ("SubscribeToTask", {"id": fresh_id()})):
        with ctx.subcheck(method):
            refused_as(ctx, c.rpc(method, params), "UNSUPPORTED_OPERATION",
                       f"{method} (capabilities.streaming is false)",
                       strict)


@check_streaming.fault
def streaming_served(ref: PlazaReference) -> None:
    """SendStreamingMessage and SubscribeToTask are served as SendMessage and GetTask."""
    extra_methods(ref, {"SendStreamingMessage": "rpc_send_message", "SubscribeToTask": "rpc_get_task"},
                  {"SendStreamingMessage": "SendMessage", "SubscribeToTask": "GetTask"})


fault(refuses("streaming_wrong_code", "check_method", method_not_found, "",
              when=lambda method: method in ("SendStreamingMessage", "SubscribeToTask")))


@requirement(id="PLAZA-CAPS-PUSH", level="MUST",
             title="Push notification configs are refused (pushNotifications: false)",
             source=at(f"{CAPABILITIES}/pushNotifications"), code="PUSH_NOTIFICATION_NOT_SUPPORTED",
             code_faults=["push_wrong_code"])
def check_push(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx)
    with ctx.subcheck("SendMessage with a push notification config"):
        c.clear_pair(ALICE, BOB)  # a first contact: refused for the push config, not for an open connection
        params = c.params({"text": "conformance"}, to=c.agent_id(BOB))
        params["configuration"]["taskPushNotificationConfig"] = {"url": "https://127.0.0.1:9/hook",
                                                                 "token": "x"}
        refused_as(ctx, c.send(params), "PUSH_NOTIFICATION_NOT_SUPPORTED",
                   "a push notification config (pushNotifications is false)", strict)
        plain = copy.deepcopy(params)
        del plain["configuration"]["taskPushNotificationConfig"]
        plain["message"]["messageId"] = fresh_id()
        served(ctx, c.send(plain), "the same first text without the push notification config",
               by="PLAZA-FRIEND-INVITE")
    with ctx.subcheck("CreateTaskPushNotificationConfig"):
        refused_as(ctx, c.rpc("CreateTaskPushNotificationConfig",
                              {"taskId": fresh_id(), "url": "https://127.0.0.1:9/hook"}),
                   "PUSH_NOTIFICATION_NOT_SUPPORTED", "CreateTaskPushNotificationConfig", strict)


@check_push.fault
def push_config_ignored(ref: PlazaReference) -> None:
    """A push notification config in SendMessage is ignored instead of refused."""
    @replaces(ref.rpc_send_message)
    def send(original: Any, call: Any) -> Any:
        (call.params.get("configuration") or {}).pop("taskPushNotificationConfig", None)
        return original(call)


@fault
def push_wrong_code(ref: PlazaReference) -> None:
    @replaces(ref.rpc_send_message)
    def send(original: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except SiteError as err:
            raise SiteError(UNSUPPORTED_OPERATION, err.message) from err

    @replaces(ref.check_method)
    def check_method(original: Any, method: str) -> None:
        if "PushNotificationConfig" in method:
            raise SiteError(UNSUPPORTED_OPERATION, f"{method} is not supported")
        original(method)


@requirement(id="PLAZA-CAPS-EXTENDED-CARD", level="MUST",
             title="GetExtendedAgentCard is refused (extendedAgentCard: false)",
             source=at(f"{CAPABILITIES}/extendedAgentCard"), code="EXTENDED_AGENT_CARD_NOT_CONFIGURED",
             code_faults=["extended_card_wrong_code"])
def check_extended_card(ctx: CheckContext, strict: bool = False) -> None:
    c = PlazaClient(ctx, reset=False)
    refused_as(ctx, c.rpc("GetExtendedAgentCard", {}), "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
               "GetExtendedAgentCard (extendedAgentCard is false)", strict)


@check_extended_card.fault
def extended_card_served(ref: PlazaReference) -> None:
    """GetExtendedAgentCard answers the public card."""
    def extended_card(call: Any) -> Any:
        return ref.agent_card("http://reference")

    setattr(ref, "rpc_get_extended_card", extended_card)  # noqa: B010 (a method the reference lacks)
    extra_methods(ref, {"GetExtendedAgentCard": "rpc_get_extended_card"}, {"GetExtendedAgentCard": None})


fault(refuses("extended_card_wrong_code", "check_method", method_not_found, "",
              when=lambda method: method == "GetExtendedAgentCard"))


__all__ = ["card_path"]
