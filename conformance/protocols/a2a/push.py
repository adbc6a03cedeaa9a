"""Push notifications (sections 3.1.7-3.1.10, 4.3, 13.1, 13.2): an agent whose card declares
``capabilities.pushNotifications`` creates, reads, lists and deletes the configs of a task
(each seen by the task's owner only), and POSTs each change of the task to every config's
URL as a StreamResponse with the config's authentication, retrying a failed delivery.

Deliveries go to the run's webhook receiver (``conformance/receiver.py``: 127.0.0.1, or the
URL the config's ``receiver:`` names, forwarded to it); a target on another machine without
that forward leaves the delivery rows untested. Every config a check creates is deleted
again when the check ends. Rows are not applicable where the card declares push off, by that
declaration (offers.py; A2A-CAP-PUSH-OFF judges that agent)."""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import json
import secrets
import urllib.parse
from collections.abc import Callable
from typing import Any

from conformance.documents.schemas import schema_errors
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement, variant
from conformance.kit.faults import answer, noop, refuses, replaces, setting
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import offers
from conformance.protocols.a2a.answers import carries, error_name
from conformance.protocols.a2a.client import A2AClient, state
from conformance.protocols.a2a.driving import any_task, open_task
from conformance.protocols.a2a.expectations import expect_carries
from conformance.protocols.a2a.names import INTERNAL, named
from conformance.protocols.a2a.offers import push, secured
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply
from conformance.transport.receiver import Box, Delivery, Receiver, receiver_of

PUSH, CREATE, GET, LIST, DELETE = ("pushNotifications", "CreateTaskPushNotificationConfig",
                                   "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
                                   "DeleteTaskPushNotificationConfig")
NOT_FOUND = "TaskNotFoundError"
PUSH_OFF = "PushNotificationNotSupportedError"
TASK_ID, ID, URL, CONFIGS, NEXT, PAGE_TOKEN, AUTHENTICATION, SCHEME, CREDENTIALS, TOKEN = named(
    "taskId", "id", "url", "configs", "nextPageToken", "pageToken", "authentication", "scheme", "credentials",
    "token")
CONFIG = "TaskPushNotificationConfig"
(CONFIG_IN_SEND,) = named("taskPushNotificationConfig")
MAX_PAGES = 20
PUBLIC_URL = "https://conformance.invalid/a2a-webhook"  # a public name that never resolves (RFC 6761)
# webhook URLs section 13.2 says to reject: one of each range it names, on the discard port
PRIVATE_URLS = {"127.0.0.0/8 (another loopback address than the receiver's)": "http://127.0.0.2:9/conformance",
                "10.0.0.0/8": "http://10.0.0.1:9/conformance",
                "172.16.0.0/12": "http://172.16.0.1:9/conformance",
                "192.168.0.0/16": "http://192.168.0.1:9/conformance",
                "localhost": "http://localhost:9/conformance",
                "link-local": "http://169.254.0.1:9/conformance"}


# -- set-up ----------------------------------------------------------------------------------
def receiver(ctx: CheckContext) -> Receiver:
    try:
        return receiver_of(ctx.run)
    except OSError as exc:
        raise Untested(f"the kit's webhook receiver could not listen: {exc.strerror or exc} (receiver.port "
                       "in --config)", "other") from None


def reaches_receiver(ctx: CheckContext, found: Receiver) -> None:
    """Untested where the target cannot call the receiver: a target on another machine, and
    no ``receiver: url`` forwarded to it."""
    host = urllib.parse.urlsplit(ctx.run.target).hostname or ""
    if not ctx.run.http.live or found.reachable_from_anywhere or host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise Untested(f"the target {ctx.run.target} is not on this machine and cannot reach the kit's webhook "
                   f"receiver at {found.local_url}: name the URL it should call, forwarded to a local port, "
                   "under receiver: in --config", "other")


def config_params(task_id: str, url: str, **fields: Any) -> dict[str, Any]:
    return {TASK_ID: task_id, URL: url, **{k: v for k, v in fields.items() if v is not None}}


def create(ctx: CheckContext, client: A2AClient, task_id: str, url: str, what: str = "a push config",
           **fields: Any) -> dict[str, Any]:
    """A config the check creates (a set-up step: a refusal blocks; a loopback webhook refused
    leaves the row untested, section 13.2 asking agents to refuse one), deleted when the check ends."""
    reply = client.call(CREATE, config_params(task_id, url, **fields))
    if not reply.ok and loopback(url):
        raise Untested(f"CreateTaskPushNotificationConfig with the kit's loopback webhook {url} was refused "
                       f"({reply.describe()}; section 13.2 lets an agent refuse it): name a URL forwarded to "
                       "the receiver under receiver: in --config", "other")
    with ctx.setup(f"CreateTaskPushNotificationConfig of {what}", by="A2A-PUSH-CREATE"):
        result = client.result(reply, f"CreateTaskPushNotificationConfig of {what}")
        config_id = result.get(ID)
        ctx.expect(isinstance(config_id, str) and config_id,
                   f"CreateTaskPushNotificationConfig answered a config without an id: {reply.describe()}; "
                   "section 3.1.7 answers the created configuration with its assigned ID",
                   kind="malformed_answer")
    made = str(config_id)
    ctx.put_back(f"the push config {made} of task {task_id}", lambda: removed(client, task_id, made))
    return result


def removed(client: A2AClient, task_id: str, config_id: str) -> bool | str:
    """Delete a config the check created (gone already counts as done)."""
    reply = client.call(DELETE, {TASK_ID: task_id, ID: config_id})
    return True if reply.ok or carries(client.ctx, reply, NOT_FOUND) else reply.describe()


def loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def stored(ctx: CheckContext, client: A2AClient, task_id: str, what: str = "a push config",
           **fields: Any) -> tuple[dict[str, Any], str]:
    """A config for the rows that need no delivery, and its URL: a box of the receiver, or
    where the agent refuses that loopback webhook (or the receiver cannot listen), a public
    name that never resolves (the task is finished: nothing is delivered to it)."""
    try:
        found = receiver(ctx)
        url = found.url(found.open_box())
        return create(ctx, client, task_id, url, what, **fields), url
    except Untested:
        url = f"{PUBLIC_URL}/{secrets.token_urlsafe(12)}"
        return create(ctx, client, task_id, url, what, **fields), url


def listed(ctx: CheckContext, client: A2AClient, task_id: str, what: str) -> list[dict[str, Any]]:
    """Every config ListTaskPushNotificationConfigs shows, page after page (section 3.1.9
    lets it page: its nextPageToken is followed)."""
    out: list[dict[str, Any]] = []
    token = ""
    for _ in range(MAX_PAGES):
        params = {TASK_ID: task_id, **({PAGE_TOKEN: token} if token else {})}
        reply = client.call(LIST, params)
        result = client.result(reply, what)
        page = result.get(CONFIGS, [])
        if not isinstance(page, list):
            ctx.fail(f"{what}: configs is not a list: {reply.describe()}", kind="malformed_answer")
        out.extend(c for c in page if isinstance(c, dict))
        token = result.get(NEXT) or ""
        if not isinstance(token, str) or not token:
            return out
    ctx.fail(f"{what}: still a nextPageToken after {MAX_PAGES} pages", kind="expectation")
    return out


def shape(ctx: CheckContext, config: Any, what: str) -> None:
    """A TaskPushNotificationConfig by the proto (its REQUIRED url, an authentication's scheme)."""
    problems = schema_errors(docs.schema(ctx.profile, CONFIG), config, limit=5)
    ctx.expect(not problems, f"{what} is not a TaskPushNotificationConfig: " + "; ".join(problems)
               + f" (answer: {json.dumps(config)[:300]})", kind="schema_mismatch")


# -- CRUD ------------------------------------------------------------------------------------
@requirement(id="A2A-PUSH-CREATE", level="MUST", optional=offers.PUSH,
             title="CreateTaskPushNotificationConfig establishes the webhook: it answers the config with the "
                   "URL sent and an assigned id, which GetTaskPushNotificationConfig then finds",
             source=docs.spec("The operation MUST establish a webhook endpoint for task update notifications",
                              after="#### 3.1.7"),
             faults=["push_create_not_stored",
                     refuses("push_declared_not_served", "push_enabled",
                             lambda: Refusal(PUSH_OFF, "push notifications are not supported"),
                             "The card declares capabilities.pushNotifications true, yet every push config "
                             "method is refused with PushNotificationNotSupportedError (declared and not "
                             "served stays a finding: only a capability declared off is not applicable)."),
                     answer("push_create_other_url", "op_CreateTaskPushNotificationConfig",
                            "CreateTaskPushNotificationConfig answers the config under another URL.",
                            set={"url": "https://conformance.invalid/other"})],
             applies=push)
def check_create(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    task = any_task(client)
    config, url = stored(ctx, client, task["id"])
    ctx.expect(config.get(URL) == url, f"CreateTaskPushNotificationConfig answered url {config.get(URL)!r}, "
                                       f"not the {url!r} it was sent", kind="expectation")
    ctx.expect(config.get(TASK_ID) in (None, "", task["id"]),
               f"CreateTaskPushNotificationConfig for task {task['id']} answered taskId "
               f"{config.get(TASK_ID)!r}",
               kind="expectation")
    reply = client.call(GET, {TASK_ID: task["id"], ID: config[ID]})
    ctx.expect(reply.ok and isinstance(reply.result, dict) and reply.result.get(ID) == config[ID],
               f"GetTaskPushNotificationConfig of the config just created ({config[ID]}) answered "
               f"{reply.describe()}: the webhook was not established", kind="expectation")


@check_create.fault
def push_create_not_stored(ref: A2AReference) -> None:
    """CreateTaskPushNotificationConfig answers the config but stores nothing."""
    @replaces(ref.op_CreateTaskPushNotificationConfig)
    def created(original: Any, params: Any, caller: str) -> Any:
        out = original(params, caller)
        ref.push_configs.get(out["taskId"], {}).pop(out["id"], None)
        return out


@requirement(id="A2A-PUSH-CONFIG-SHAPE", level="MUST", optional=offers.PUSH,
             title="Every push config answered (Create, Get, List) is a TaskPushNotificationConfig: its "
                   "REQUIRED url, an authentication with its REQUIRED scheme",
             source=docs.proto_at("string url = 4 [(google.api.field_behavior) = REQUIRED];",
                                  after="message TaskPushNotificationConfig"),
             faults=["push_answer_scheme_dropped",
                     answer("push_list_url_dropped", "op_ListTaskPushNotificationConfigs",
                            "ListTaskPushNotificationConfigs answers configs without their url.",
                            edit=lambda out, *a: {**out, "configs": [
                                {k: v for k, v in c.items() if k != "url"} for c in out["configs"]]})],
             applies=push)
def check_shape(ctx: CheckContext) -> None:
    """A config with authentication (scheme Bearer, as section 4.3.3's example) read back by
    each method (``AuthenticationInfo.scheme`` is REQUIRED too: a2a.proto line 329)."""
    client = A2AClient(ctx)
    task = any_task(client)
    auth = {SCHEME: "Bearer", CREDENTIALS: secrets.token_urlsafe(16)}
    ctx.http.redact.add("push.credentials", auth[CREDENTIALS])
    config, _url = stored(ctx, client, task["id"], authentication=auth)
    with ctx.subcheck(CREATE):
        shape(ctx, config, "the CreateTaskPushNotificationConfig answer")
    with ctx.subcheck(GET):
        reply = client.call(GET, {TASK_ID: task["id"], ID: config[ID]})
        shape(ctx, client.result(reply, "GetTaskPushNotificationConfig"),
              "the GetTaskPushNotificationConfig answer")
    with ctx.subcheck(LIST):
        for item in listed(ctx, client, task["id"], "ListTaskPushNotificationConfigs"):
            shape(ctx, item, "a config of the ListTaskPushNotificationConfigs answer")


@check_shape.fault
def push_answer_scheme_dropped(ref: A2AReference) -> None:
    """Configs are answered with their authentication's credentials but without its scheme."""
    @replaces(ref.config_view)
    def view(original: Any, config: Any) -> Any:
        out = original(config)
        if isinstance(out.get("authentication"), dict):
            out["authentication"].pop("scheme", None)
        return out


@requirement(id="A2A-PUSH-GET", level="MUST", optional=offers.PUSH,
             title="GetTaskPushNotificationConfig answers the config asked for (its id) with its webhook "
                   "URL, and the scheme of its authentication where it shows one",
             source=docs.spec("The operation MUST return configuration details including webhook URL",
                              after="#### 3.1.8"),
             faults=[answer("push_get_other_url", "op_GetTaskPushNotificationConfig",
                            "GetTaskPushNotificationConfig answers the config with another webhook URL.",
                            set={"url": "https://conformance.invalid/other"}),
                     answer("push_get_other_id", "op_GetTaskPushNotificationConfig",
                            "GetTaskPushNotificationConfig answers the config under another id.",
                            set={"id": "conformance-reference-other-config"})],
             applies=push)
def check_get(ctx: CheckContext) -> None:
    """Of two configs of one task, each read back; credentials may be withheld (section 13.2
    treats them as secrets), the scheme is compared case-insensitively (RFC 9110, as the
    proto says)."""
    client = A2AClient(ctx)
    task = any_task(client)
    for n in (1, 2):
        credentials = secrets.token_urlsafe(16)
        ctx.http.redact.add("push.credentials", credentials)
        config, url = stored(ctx, client, task["id"], what=f"config {n}",
                             authentication={SCHEME: "Bearer", CREDENTIALS: credentials})
        with ctx.subcheck(f"config {n}"):
            reply = client.call(GET, {TASK_ID: task["id"], ID: config[ID]})
            got = client.result(reply, f"GetTaskPushNotificationConfig of config {config[ID]}")
            ctx.expect(got.get(ID) == config[ID],
                       f"GetTaskPushNotificationConfig of {config[ID]} answered id {got.get(ID)!r}",
                       kind="expectation")
            ctx.expect(got.get(URL) == url, f"GetTaskPushNotificationConfig of {config[ID]} answered url "
                                            f"{got.get(URL)!r}, not {url!r}", kind="expectation")
            shown = got.get(AUTHENTICATION)
            ctx.expect(not isinstance(shown, dict) or str(shown.get(SCHEME, "")).lower() == "bearer",
                       f"GetTaskPushNotificationConfig of {config[ID]} answered the authentication scheme "
                       f"{shown.get(SCHEME) if isinstance(shown, dict) else None!r}, not Bearer",
                       kind="expectation")


@requirement(id="A2A-PUSH-GET-MISSING", level="MUST", optional=offers.PUSH,
             title="GetTaskPushNotificationConfig of a config that does not exist (on the caller's own task) "
                   "gets TaskNotFoundError",
             source=docs.spec("The push notification configuration does not exist.", after="#### 3.1.8"),
             faults=["push_get_missing_served", "push_get_missing_invalid"],
             applies=push)
def check_get_missing(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    task = any_task(client)
    unknown = f"conformance-no-such-config-{secrets.token_hex(6)}"
    expect_carries(ctx, client.call(GET, {TASK_ID: task["id"], ID: unknown}), NOT_FOUND,
                   f"GetTaskPushNotificationConfig of a config id never issued ({unknown})")


@check_get_missing.fault
def push_get_missing_invalid(ref: A2AReference) -> None:
    """GetTaskPushNotificationConfig of an unknown config is refused as invalid params."""
    @replaces(ref.op_GetTaskPushNotificationConfig)
    def get(original: Any, params: Any, caller: str) -> Any:
        try:
            return original(params, caller)
        except Refusal as refusal:
            if refusal.name != NOT_FOUND:
                raise
            raise Refusal("InvalidParamsError", "no such config") from None


@check_get_missing.fault
def push_get_missing_served(ref: A2AReference) -> None:
    """GetTaskPushNotificationConfig of an unknown config answers a config without a URL."""
    @replaces(ref.op_GetTaskPushNotificationConfig)
    def get(original: Any, params: Any, caller: str) -> Any:
        try:
            return original(params, caller)
        except Refusal:
            return {"id": params.get("id"), "taskId": params.get("taskId"), "url": ""}


@requirement(id="A2A-PUSH-LIST", level="MUST", optional=offers.PUSH,
             title="ListTaskPushNotificationConfigs shows every config of the task (following its pages)",
             source=docs.spec("The operation MUST return all active push notification configurations",
                              after="#### 3.1.9"),
             faults=[answer("push_list_first_only", "op_ListTaskPushNotificationConfigs",
                            "ListTaskPushNotificationConfigs shows the first config only, and no next page.",
                            edit=lambda out, *a: {**out, "configs": out["configs"][:1],
                                                  "nextPageToken": ""})],
             applies=push)
def check_list(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    task = any_task(client)
    made = []
    for n in (1, 2):
        made.append(stored(ctx, client, task["id"], what=f"config {n}")[0][ID])
    shown = {c.get(ID) for c in listed(ctx, client, task["id"], "ListTaskPushNotificationConfigs")}
    missing = [m for m in made if m not in shown]
    ctx.expect(not missing, f"ListTaskPushNotificationConfigs of task {task['id']} does not show the configs "
                            f"{missing} the check created (it shows {sorted(map(str, shown))})",
               kind="expectation")


@requirement(id="A2A-PUSH-DELETE", level="MUST", optional=offers.PUSH,
             title="DeleteTaskPushNotificationConfig removes the config: Get then fails and List no longer "
                   "shows it",
             source=docs.spec("The operation MUST permanently remove the specified push notification",
                              after="#### 3.1.10"),
             faults=["push_delete_noop"],
             applies=push)
def check_delete(ctx: CheckContext) -> None:
    client = A2AClient(ctx)
    task = any_task(client)
    config, _url = stored(ctx, client, task["id"])
    reply = client.call(DELETE, {TASK_ID: task["id"], ID: config[ID]})
    ctx.expect(reply.ok, f"DeleteTaskPushNotificationConfig of config {config[ID]}: {reply.describe()}",
               kind="rejected_valid")
    with ctx.subcheck(GET):
        after = client.call(GET, {TASK_ID: task["id"], ID: config[ID]})
        ctx.expect(not after.ok, f"GetTaskPushNotificationConfig of the deleted config {config[ID]} still "
                                 f"answers it: {after.describe()} (section 3.1.8: it MUST fail)",
                   kind="expectation")
    with ctx.subcheck(LIST):
        shown = {c.get(ID) for c in listed(ctx, client, task["id"], "ListTaskPushNotificationConfigs")}
        ctx.expect(config[ID] not in shown, f"ListTaskPushNotificationConfigs still shows the deleted config "
                                            f"{config[ID]}", kind="expectation")


@check_delete.fault
def push_delete_noop(ref: A2AReference) -> None:
    """DeleteTaskPushNotificationConfig answers success and removes nothing."""
    @replaces(ref.op_DeleteTaskPushNotificationConfig)
    def delete(original: Any, params: Any, caller: str) -> Any:
        ref.push_task(params, caller)
        return {}


def served_or_gone(ctx: CheckContext, reply: Reply) -> bool:
    """A repeated delete's answer: served, or TaskNotFoundError (the config is gone: the
    effect is the same)."""
    return reply.ok or carries(ctx, reply, NOT_FOUND)


@requirement(id="A2A-PUSH-DELETE-IDEMPOTENT", level="MUST", optional=offers.PUSH,
             title="Deleting the same config again has the same effect: served (or TaskNotFoundError), the "
                   "config still gone, the task's other configs untouched",
             source=docs.spec("This operation MUST be idempotent", after="#### 3.1.10"),
             faults=["push_delete_again_fails", "push_delete_again_clears"],
             applies=push)
def check_delete_idempotent(ctx: CheckContext) -> None:
    """Either answer to the second delete is read as the same effect: section 3.1.10 gives the
    answer as "implementation-specific" and lists TaskNotFoundError among the errors."""
    client = A2AClient(ctx)
    task = any_task(client)
    made = []
    for n in (1, 2):
        made.append(stored(ctx, client, task["id"], what=f"config {n}")[0][ID])
    gone, kept = made
    for n in (1, 2):
        reply = client.call(DELETE, {TASK_ID: task["id"], ID: gone})
        with ctx.subcheck(f"delete {n}"):
            ok = reply.ok if n == 1 else served_or_gone(ctx, reply)
            ctx.expect(ok and error_name(ctx, reply) != INTERNAL,
                       f"DeleteTaskPushNotificationConfig of config {gone}, time {n}: {reply.describe()}"
                       + (" (a repeated delete must have the same effect)" if n == 2 else ""),
                       kind="expectation")
    with ctx.subcheck("the other config"):
        reply = client.call(GET, {TASK_ID: task["id"], ID: kept})
        ctx.expect(reply.ok, f"after deleting config {gone} twice, the task's other config {kept} is gone: "
                             f"{reply.describe()}", kind="expectation")


@check_delete_idempotent.fault
def push_delete_again_fails(ref: A2AReference) -> None:
    """Deleting a config already deleted fails with an internal error."""
    @replaces(ref.op_DeleteTaskPushNotificationConfig)
    def delete(original: Any, params: Any, caller: str) -> Any:
        task = ref.push_task(params, caller)
        if params.get("id") not in ref.push_configs.get(task["id"], {}):
            raise Refusal("InternalError", "config already deleted", status=500)
        return original(params, caller)


@check_delete_idempotent.fault
def push_delete_again_clears(ref: A2AReference) -> None:
    """Deleting a config already deleted removes every config of the task."""
    @replaces(ref.op_DeleteTaskPushNotificationConfig)
    def delete(original: Any, params: Any, caller: str) -> Any:
        task = ref.push_task(params, caller)
        if params.get("id") not in ref.push_configs.get(task["id"], {}):
            ref.push_configs.pop(task["id"], None)
        return original(params, caller)


@requirement(id="A2A-PUSH-SCOPED", level="MUST", optional=offers.PUSH,
             title="Another caller can neither create, read, list nor delete the push configs of the main "
                   "caller's task",
             source=docs.spec("Task-related operations (Cancel, Subscribe, Push Notification Config)",
                              after="### 13.1"),
             faults=["push_configs_unscoped"], needs=["other"],
             applies=(push, secured))  # without security every caller is one: no other caller's config
def check_scoped(ctx: CheckContext) -> None:
    """Refused (whatever the error), or for List shown without the config and for Delete
    without effect (the main caller still finds it)."""
    client = A2AClient(ctx)
    ctx.token("other")
    task = any_task(client)
    config, url = stored(ctx, client, task["id"])
    ref = {TASK_ID: task["id"], ID: config[ID]}
    with ctx.subcheck(GET):
        reply = client.call(GET, ref, caller="other")
        ctx.expect(not reply.ok, f"GetTaskPushNotificationConfig of another caller's config was served to "
                                 f"the other caller: {reply.describe()}", kind="auth_not_enforced")
    with ctx.subcheck(LIST):
        reply = client.call(LIST, {TASK_ID: task["id"]}, caller="other")
        shown = json.dumps(reply.result) if reply.ok else ""
        ctx.expect(config[ID] not in shown,
                   f"ListTaskPushNotificationConfigs of another caller's task shows its config {config[ID]}: "
                   f"{reply.describe()}", kind="auth_not_enforced")
    with ctx.subcheck(CREATE):
        reply = client.call(CREATE, config_params(task["id"], url), caller="other")
        if reply.ok and isinstance(reply.result, dict) and isinstance(reply.result.get(ID), str):
            made = reply.result[ID]
            ctx.put_back(f"the push config {made} the other caller made",
                         lambda: client.call(DELETE, {TASK_ID: task["id"], ID: made}).ok or
                         client.call(DELETE, {TASK_ID: task["id"], ID: made}, caller="other").ok)
        ctx.expect(not reply.ok, f"CreateTaskPushNotificationConfig on another caller's task was served: "
                                 f"{reply.describe()}", kind="auth_not_enforced")
    with ctx.subcheck(DELETE):
        client.call(DELETE, ref, caller="other")
        still = client.call(GET, ref)
        ctx.expect(still.ok, f"after the other caller's DeleteTaskPushNotificationConfig, the owner's config "
                             f"{config[ID]} is gone: {still.describe()}", kind="auth_not_enforced")


@check_scoped.fault
def push_configs_unscoped(ref: A2AReference) -> None:
    """The push config methods find a task whoever owns it."""
    @replaces(ref.push_task)
    def task(original: Any, params: Any, caller: str) -> Any:
        ref.push_enabled()
        found = ref.tasks.get(params.get("taskId"))
        if found is None:
            raise Refusal(NOT_FOUND, "task not found")
        return found


# -- deliveries ------------------------------------------------------------------------------
def mentions(value: Any, text: str) -> bool:
    """Whether ``text`` is a string somewhere inside ``value`` (bounded depth)."""
    stack, seen = [(value, 0)], 0
    while stack and seen < 10000:
        item, depth = stack.pop()
        seen += 1
        if item == text:
            return True
        if depth < 12 and isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif depth < 12 and isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def about(task_id: str) -> Callable[[list[Delivery]], bool]:
    return lambda got: any(mentions(d.json(), task_id) for d in got if 200 <= d.status < 300)


def change(client: A2AClient, task: dict[str, Any]) -> str:
    """Make ``task`` change (it is open): answer an input-required task, cancel a working one."""
    if state(task) == docs.state_named("working"):
        client.call("CancelTask", {"id": task["id"]})
        return "CancelTask"
    client.send(client.message("conformance follow-up", taskId=task["id"], contextId=task.get("contextId")))
    return "a follow-up message"


@dataclasses.dataclass
class Delivered:
    task: dict[str, Any]
    box: Box
    deliveries: list[Delivery]
    how: str  # what made the task change
    deleted: Box | None = None


def delivered(ctx: CheckContext, *, answers: list[int] | None = None, delete_one: bool = False,
              done: Callable[[str], Callable[[list[Delivery]], bool]] = about, **fields: Any) -> Delivered:
    """A config (with ``fields``) delivering to a box of the receiver (its first answers
    ``answers``), a change of its task, and what the box got by the time ``done`` holds or
    the run's timeout passed. The task is one the check opened (input-required or working),
    given the config by Create, then answered or canceled; where nothing opens one, an
    ordinary message carrying the config (SendMessage's ``taskPushNotificationConfig``,
    section 6.6). ``delete_one``: a second config, deleted before the change, to another box
    (on an opened task only)."""
    client = A2AClient(ctx)
    found = receiver(ctx)
    reaches_receiver(ctx, found)
    box = found.open_box(answers)
    try:
        task = open_task(client)
    except Untested as why:
        task, how = sent_with_config(ctx, client, found.url(box), str(why), **fields)
        return Delivered(task, box, found.wait(box, done(task["id"]), ctx.run.http.timeout), how)
    create(ctx, client, task["id"], found.url(box), **fields)
    deleted = None
    if delete_one:
        deleted = found.open_box()
        other = create(ctx, client, task["id"], found.url(deleted), what="a config deleted before the change")
        with ctx.setup("DeleteTaskPushNotificationConfig of a config the check made", by="A2A-PUSH-DELETE"):
            reply = client.call(DELETE, {TASK_ID: task["id"], ID: other[ID]})
            ctx.expect(reply.ok, f"DeleteTaskPushNotificationConfig: {reply.describe()}",
                       kind="rejected_valid")
    how = change(client, task)
    got = found.wait(box, done(task["id"]), ctx.run.http.timeout)
    return Delivered(task, box, got, how, deleted)


def sent_with_config(ctx: CheckContext, client: A2AClient, url: str, why: str,
                     **fields: Any) -> tuple[dict[str, Any], str]:
    """An ordinary message whose configuration carries a push config to ``url``: its task
    (untested where the agent answers a Message, or refuses the loopback webhook); the
    task's configs to ``url`` are deleted when the check ends."""
    config = {CONFIG_IN_SEND: {URL: url, **{k: v for k, v in fields.items() if v is not None}}}
    reply = client.send(client.drive("completed"), configuration=config)
    if not reply.ok and loopback(url):
        raise Untested(f"SendMessage with a push config to the kit's loopback webhook {url} was refused "
                       f"({reply.describe()}; section 13.2 lets an agent refuse it), and no task could be "
                       f"opened to give it one by Create ({why})", "other")
    with ctx.setup("SendMessage carrying a push config (configuration.taskPushNotificationConfig)"):
        task = client.task_of(reply, "SendMessage carrying a push config")
    ctx.put_back(f"the push configs of task {task['id']} to the kit's webhook",
                 functools.partial(removed_to, client, task["id"], url))
    return task, "SendMessage carrying the config (no open task: " + why[:120] + ")"


def removed_to(client: A2AClient, task_id: str, url: str) -> bool | str:
    """Delete the task's configs that call ``url`` (their ids are the agent's)."""
    reply = client.call(LIST, {TASK_ID: task_id})
    if not reply.ok or not isinstance(reply.result, dict):
        return carries(client.ctx, reply, NOT_FOUND) or reply.describe()
    configs = reply.result.get(CONFIGS)
    for config in configs if isinstance(configs, list) else []:
        if isinstance(config, dict) and config.get(URL) == url and isinstance(config.get(ID), str):
            outcome = removed(client, task_id, config[ID])
            if outcome is not True:
                return outcome
    return True


def none_arrived(ctx: CheckContext, run: Delivered) -> None:
    ctx.fail(f"no delivery reached the webhook within {ctx.run.http.timeout:g} s after the task "
             f"{run.task['id']} changed ({run.how}); section 4.3.3: agents MUST attempt delivery at least "
             "once",
             kind="expectation")


@requirement(id="A2A-PUSH-DELIVERY", level="MUST", optional=offers.PUSH,
             title="A change of a task reaches each of its configs' webhooks as an HTTP POST of a "
                   "StreamResponse about the task; a config deleted before gets nothing",
             source=docs.spec("Agents MUST attempt delivery at least once for each configured webhook",
                              after="#### 4.3.3"),
             faults=[noop("push_never_delivered", "deliver_change", "No change of a task is delivered."),
                     "push_payload_wrapped", "push_delivered_after_delete"],
             applies=push)
def check_delivery(ctx: CheckContext) -> None:
    """The payload is judged by the StreamResponse schema (exactly one of task, message,
    statusUpdate, artifactUpdate: section 4.3.3) and must name the task (its id, found by
    content). The deleted config's box is read once the kept one got its deliveries."""
    run = delivered(ctx, delete_one=True)
    if not run.deliveries:
        none_arrived(ctx, run)
    schema = docs.schema(ctx.profile, "StreamResponse")
    for n, delivery in enumerate(run.deliveries[:8], 1):
        with ctx.subcheck(f"delivery {n}"):
            payload = delivery.json()
            problems = schema_errors(schema, payload, limit=3)
            ctx.expect(not problems, f"delivery {n} is not a StreamResponse: {'; '.join(problems)} (body "
                                     f"{delivery.body[:300]!r}); section 4.3.3", kind="schema_mismatch")
    ctx.expect(about(run.task["id"])(run.deliveries),
               f"no delivery names the task {run.task['id']} that changed (got {len(run.deliveries)})",
               kind="expectation")
    if run.deleted is None:
        return  # the config came with the message: no open task to delete one on
    with ctx.subcheck("the deleted config"):
        ctx.expect(not run.deleted.deliveries,
                   f"the config deleted before the change got {len(run.deleted.deliveries)} deliveries; "
                   "section 3.1.10: no further notifications after deletion", kind="expectation",
                   statement=str(docs.spec("No further notifications will be sent", after="#### 3.1.10")))


@check_delivery.fault
def push_payload_wrapped(ref: A2AReference) -> None:
    """Each delivery wraps its StreamResponse in a JSON-RPC envelope ({"jsonrpc", "result"})."""
    @replaces(ref.deliver)
    def deliver(original: Any, config: Any, event: Any) -> None:
        original(config, {"jsonrpc": "2.0", "id": 1, "result": event})


@check_delivery.fault
def push_delivered_after_delete(ref: A2AReference) -> None:
    """A deleted config is no longer listed but still gets every delivery."""
    kept: dict[str, list[dict[str, Any]]] = {}

    @replaces(ref.op_DeleteTaskPushNotificationConfig)
    def delete(original: Any, params: Any, caller: str) -> Any:
        config = ref.push_configs.get(params.get("taskId"), {}).get(params.get("id"))
        if config is not None:
            kept.setdefault(config["taskId"], []).append(config)
        return original(params, caller)

    @replaces(ref.deliver_change)
    def deliver_change(original: Any, task: Any, event: Any) -> None:
        original(task, event)
        for config in kept.get(task["id"], []):
            ref.deliver(config, event)


def scheme_and_credentials(delivery: Delivery) -> tuple[str, str]:
    value = delivery.headers.get("authorization", "")
    scheme, _, credentials = value.partition(" ")
    return scheme.lower(), credentials.strip()


@requirement(id="A2A-PUSH-DELIVERY-AUTH", level="MUST", optional=offers.PUSH,
             title="Each delivery carries the config's authentication: Authorization with its scheme "
                   "(case-insensitive) and credentials",
             source=docs.spec("The agent MUST include authentication credentials in the request headers",
                              after="#### 4.3.3"),
             faults=["push_delivery_auth_missing",
                     "push_delivery_credentials_wrong"],
             applies=push)
def check_delivery_auth(ctx: CheckContext) -> None:
    """Section 4.3.3's example: ``Authorization: {authentication_scheme} {credentials}``; the
    credentials are the kit's own random token (redacted from every record)."""
    credentials = secrets.token_urlsafe(18)
    ctx.http.redact.add("push.credentials", credentials)
    run = delivered(ctx, authentication={SCHEME: "Bearer", CREDENTIALS: credentials})
    if not run.deliveries:
        none_arrived(ctx, run)
    for n, delivery in enumerate(run.deliveries[:8], 1):
        with ctx.subcheck(f"delivery {n}"):
            scheme, given = scheme_and_credentials(delivery)
            which = "the config's credentials" if given == credentials else "other credentials"
            shown = f"{scheme} <{which}>" if scheme else "none"
            ctx.expect(scheme == "bearer" and given == credentials,
                       f"delivery {n} carries Authorization {shown}, not Bearer with the config's "
                       "credentials",
                       kind="auth_not_enforced")


@check_delivery_auth.fault
def push_delivery_auth_missing(ref: A2AReference) -> None:
    """Deliveries carry no Authorization header."""
    @replaces(ref.delivery_headers)
    def headers(original: Any, config: Any) -> dict[str, bytes]:
        return {k: v for k, v in original(config).items() if k != "Authorization"}


@check_delivery_auth.fault
def push_delivery_credentials_wrong(ref: A2AReference) -> None:
    """Deliveries carry the scheme with the config's token instead of its credentials."""
    @replaces(ref.delivery_headers)
    def headers(original: Any, config: Any) -> dict[str, bytes]:
        out = dict(original(config))
        if "Authorization" in out:
            token = str(config.get("token", "x")).encode()
            out["Authorization"] = out["Authorization"].split(b" ")[0] + b" " + token
        return out


@requirement(id="A2A-PUSH-RETRY", level="SHOULD", optional=offers.PUSH,
             title="A delivery the webhook refuses (HTTP 503) is attempted again",
             source=docs.spec("Agents **SHOULD** implement retry logic with exponential backoff",
                              after="### 13.2"),
             faults=[setting("push_no_retry", "DELIVERY_ATTEMPTS", 1, "A failed delivery is never retried.")],
             applies=push)
def check_retry(ctx: CheckContext) -> None:
    """The receiver answers the first delivery 503; the same body must come again before the
    run's timeout (the backoff itself is not timed)."""
    def retried(task_id: str) -> Callable[[list[Delivery]], bool]:
        return lambda got: bool(got) and any(d.body == got[0].body for d in got[1:])
    run = delivered(ctx, answers=[503], done=retried)
    if not run.deliveries:
        none_arrived(ctx, run)
    first = run.deliveries[0]
    ctx.expect(any(d.body == first.body for d in run.deliveries[1:]),
               "the delivery the webhook answered 503 was not attempted again within "
               f"{ctx.run.http.timeout:g} s "
               f"({len(run.deliveries)} deliveries arrived)", kind="expectation")


@requirement(id="A2A-PUSH-SSRF", level="SHOULD", optional=offers.PUSH,
             title="CreateTaskPushNotificationConfig refuses webhook URLs on private, loopback (other than "
                   "the run's receiver) and link-local addresses",
             source=docs.spec("Agents **SHOULD** validate webhook URLs to prevent SSRF", after="### 13.2"),
             faults=[setting("push_ssrf_unchecked", "WEBHOOK_ALLOW", ("*",),
                             "Webhook URLs are not checked: any address is taken.")],
             applies=push)
def check_ssrf(ctx: CheckContext) -> None:
    """One URL of each range section 13.2 names, on the discard port (an agent that takes one
    and calls it reaches nothing). The kit's own receiver is the allowlisted address the run
    asked for and is never judged here; a refusal counts where the same request with the
    receiver's URL (or, where the agent refuses that, a public name) is served, and not as a
    server failure."""
    client = A2AClient(ctx)
    task = any_task(client)
    stored(ctx, client, task["id"], what="the kit's own webhook")
    for label, url in PRIVATE_URLS.items():
        with ctx.subcheck(label):
            reply = client.call(CREATE, config_params(task["id"], url))
            if reply.ok and isinstance(reply.result, dict) and isinstance(reply.result.get(ID), str):
                undo: Callable[[], bool | str] = functools.partial(removed, client, task["id"],
                                                                   reply.result[ID])
                ctx.put_back(f"the push config {reply.result[ID]} to {url}", undo)
            ctx.expect(not reply.ok and error_name(ctx, reply) != INTERNAL,
                       f"CreateTaskPushNotificationConfig with the webhook {url} ({label}): "
                       f"{reply.describe()}; section 13.2 asks agents to reject it", kind="expectation")


# -- variants ------------------------------------------------------------------------------
@variant
def push_declared_off(ref: A2AReference) -> None:
    """The card declares no push notifications, and every push config method is refused.

    allowed by: §3.3.4 "If `AgentCard.capabilities.pushNotifications` is not `true`" (the
    capability is the agent's choice; A2A-CAP-PUSH-OFF judges the refusals)"""
    ref.config = dataclasses.replace(ref.config, push_notifications=False)


@variant
def push_credentials_withheld(ref: A2AReference) -> None:
    """Configs are answered without their authentication credentials and token.

    allowed by: §13.2 "Authentication tokens in [`PushNotificationConfig`](#431-pushnotificationconfig)
    **SHOULD** be treated as secrets" (3.1.8 asks for the webhook URL and settings)"""
    @replaces(ref.config_view)
    def view(original: Any, config: Any) -> Any:
        out = original(config)
        out.pop("token", None)
        if isinstance(out.get("authentication"), dict):
            out["authentication"].pop("credentials", None)
        return out


@variant
def push_delete_again_not_found(ref: A2AReference) -> None:
    """Deleting a config that is gone gets TaskNotFoundError.

    allowed by: §3.1.10 "Confirmation of deletion (implementation-specific)" and its errors,
    "`TaskNotFoundError`" """
    @replaces(ref.op_DeleteTaskPushNotificationConfig)
    def delete(original: Any, params: Any, caller: str) -> Any:
        task = ref.push_task(params, caller)
        if params.get("id") not in ref.push_configs.get(task["id"], {}):
            raise Refusal(NOT_FOUND, f"push notification config {params.get('id')!r} not found")
        return original(params, caller)


@variant
def push_list_one_per_page(ref: A2AReference) -> None:
    """ListTaskPushNotificationConfigs answers one config a page.

    allowed by: §3.1.9 "MAY support pagination for tasks with many configurations\""""
    @replaces(ref.op_ListTaskPushNotificationConfigs)
    def listing(original: Any, params: Any, caller: str) -> Any:
        return original({**params, "pageSize": 1}, caller)


@variant
def push_task_snapshots(ref: A2AReference) -> None:
    """Each delivery is the whole task (StreamResponse ``task``), with a lower-case scheme.

    allowed by: §4.3.3 "**task**: A [`Task`](#411-task) object with the current task state" and
    a2a.proto AuthenticationInfo "Scheme names are case-insensitive per [RFC 9110 Section 11.1]"
    """
    @replaces(ref.deliver_change)
    def deliver_change(original: Any, task: Any, event: Any) -> None:
        original(task, {"task": json.loads(json.dumps(task))})

    @replaces(ref.delivery_headers)
    def headers(original: Any, config: Any) -> dict[str, bytes]:
        out = dict(original(config))
        if "Authorization" in out:
            scheme, _, rest = out["Authorization"].partition(b" ")
            out["Authorization"] = scheme.lower() + b" " + rest
        return out


@variant
def push_loopback_refused(ref: A2AReference) -> None:
    """Every loopback webhook is refused, the kit's receiver on 127.0.0.1 included.

    allowed by: §13.2 "Reject private IP ranges (127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12,
    192.168.0.0/16)" (the rows needing the receiver are then untested, with the reason)"""
    ref.WEBHOOK_ALLOW = ()



@variant
def push_answers_without_task_id(ref: A2AReference) -> None:
    """Configs are answered without their taskId (the request named the task).

    allowed by: a2a.proto TaskPushNotificationConfig "string task_id = 3;" (not REQUIRED)"""
    @replaces(ref.config_view)
    def view(original: Any, config: Any) -> Any:
        out = original(config)
        out.pop("taskId", None)
        return out


@variant
def push_foreign_task_forbidden(ref: A2AReference) -> None:
    """A push config request about another caller's task gets HTTP 403 (a permission refusal),
    not TaskNotFoundError.

    allowed by: §13.1 "Authorization boundaries are defined by each agent's authorization
    model, not prescribed by the protocol\""""
    @replaces(ref.push_task)
    def task(original: Any, params: Any, caller: str) -> Any:
        task_id = params.get("taskId")
        if task_id in ref.tasks and ref.owners.get(task_id) != caller:
            raise Refusal("PermissionDenied", "the task is another caller's", status=403)
        return original(params, caller)
