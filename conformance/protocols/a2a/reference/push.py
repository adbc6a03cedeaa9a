"""The reference's push notifications (sections 3.1.7-3.1.10, 4.3, 13.2): a mixin of
A2AReference. Configs live per task, seen only by the task's owner (section 13.1), made by
CreateTaskPushNotificationConfig or carried by a SendMessage (section 6.6); each
change a task publishes is POSTed as its StreamResponse to every config of the task over
real HTTP, with the config's authentication (``Authorization: <scheme> <credentials>``),
a 10 s timeout and a few retries with exponential backoff. Webhook URLs on private,
loopback or link-local addresses are refused (section 13.2's SSRF advice) except the hosts
of ``WEBHOOK_ALLOW`` (the allowlist 13.2 mentions: the loopback address the kit's receiver
listens on). Where the card it serves does not declare capabilities.pushNotifications
(``config.push_notifications`` off, say) every method is refused as section 3.3.4 says."""

from __future__ import annotations

import base64
import functools
import ipaddress
import json
import re
import ssl
import time
import urllib.parse
from typing import Any

import httpx

from conformance.kit.reference import Refusal
from conformance.protocols.a2a.reference.host import Host

PUSH_OFF = "PushNotificationNotSupportedError"
NOT_FOUND = "TaskNotFoundError"
INVALID = "InvalidParamsError"
TOKEN_HEADER = "X-A2A-Notification-Token"  # the SDKs' header for a config's token (the spec names none)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every delivery: a new client per delivery made its
    own, loading the CA bundle each time (60 ms of CPU; seven per A2A run in process)."""
    return httpx.create_ssl_context()


class PushParts(Host):
    WEBHOOK_ALLOW: tuple[str, ...] = ("127.0.0.1",)  # hosts a webhook may name although private
    DELIVERY_TIMEOUT = 10.0  # seconds (section 4.3.3: 10-30 recommended)
    DELIVERY_ATTEMPTS = 3  # the first and two retries
    BACKOFF = 0.02  # seconds before the first retry, doubled each time

    def reset_part(self) -> None:
        """This part's share of the world as it starts (A2AReference.reset): no configs, and
        a listener delivering each change of a task to its configs."""
        self.push_configs: dict[str, dict[str, dict[str, Any]]] = {}  # task id -> config id -> config
        # looked up at each change, so a fault that replaces deliver_change takes effect
        self.listeners.append(lambda task, event: self.deliver_change(task, event))

    # -- the four methods ------------------------------------------------------------------
    def push_enabled(self) -> None:
        """Section 3.3.4: served only where the card declares capabilities.pushNotifications."""
        declared = (self.public_card().get("capabilities") or {}).get("pushNotifications")
        if declared is not True:
            raise Refusal(PUSH_OFF, "push notifications are not supported (capabilities.pushNotifications)")

    def push_task(self, params: dict[str, Any], caller: str) -> dict[str, Any]:
        """The task a push request names, if the caller owns it (section 13.1)."""
        self.push_enabled()
        task: dict[str, Any] = self.owned_task(params.get("taskId"), caller)
        return task

    def op_CreateTaskPushNotificationConfig(self, params: dict[str, Any], caller: str) -> Any:
        task = self.push_task(params, caller)
        self.check_webhook(params.get("url"))
        return self.config_view(self.store_config(task, params))

    def op_GetTaskPushNotificationConfig(self, params: dict[str, Any], caller: str) -> Any:
        task = self.push_task(params, caller)
        config = self.push_configs.get(task["id"], {}).get(params.get("id", ""))
        if config is None:
            raise Refusal(NOT_FOUND, f"push notification config {params.get('id')!r} not found")
        return self.config_view(config)

    def op_ListTaskPushNotificationConfigs(self, params: dict[str, Any], caller: str) -> Any:
        task = self.push_task(params, caller)
        configs = list(self.push_configs.get(task["id"], {}).values())
        size = params.get("pageSize") or len(configs) or 1
        start = self.push_page_start(params.get("pageToken") or "", len(configs))
        page = configs[start:start + int(size)]
        more = start + int(size) < len(configs)
        token = base64.urlsafe_b64encode(f"push:{start + int(size)}".encode()).decode() if more else ""
        return {"configs": [self.config_view(c) for c in page], "nextPageToken": token}

    def push_from_send(self, task: dict[str, Any], configuration: dict[str, Any]) -> None:
        """SendMessage's ``configuration.taskPushNotificationConfig`` (section 6.6): a config of
        the task the message makes or continues; a webhook refused takes a new task back."""
        given = configuration.get("taskPushNotificationConfig")
        declared = (self.public_card().get("capabilities") or {}).get("pushNotifications")
        if not isinstance(given, dict) or declared is not True:
            return
        try:
            self.check_webhook(given.get("url"))
        except Refusal:
            if task.get("history") == []:  # made by this message: it never was
                self.tasks.pop(task["id"], None)
                self.owners.pop(task["id"], None)
            raise
        self.store_config(task, given)

    def store_config(self, task: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        config_id = params.get("id") or self.new_id("push")
        config = {k: json.loads(json.dumps(params[k])) for k in ("url", "token", "authentication")
                  if params.get(k) not in (None, "")}
        config.update({"id": config_id, "taskId": task["id"]})
        self.push_configs.setdefault(task["id"], {})[config_id] = config
        return config

    def push_page_start(self, token: str, total: int) -> int:
        if not token:
            return 0
        try:
            found = re.fullmatch(r"push:(\d+)", base64.urlsafe_b64decode(token.encode()).decode())
        except (ValueError, UnicodeDecodeError):
            found = None
        if not found or int(found.group(1)) > total:
            raise Refusal(INVALID, "pageToken is not one this agent issued")
        return int(found.group(1))

    def op_DeleteTaskPushNotificationConfig(self, params: dict[str, Any], caller: str) -> Any:
        """Idempotent (section 3.1.10): deleting a config that is gone again is served too."""
        task = self.push_task(params, caller)
        self.push_configs.get(task["id"], {}).pop(params.get("id", ""), None)
        return {}

    def config_view(self, config: dict[str, Any]) -> dict[str, Any]:
        """A config as an answer shows it (a TaskPushNotificationConfig)."""
        return json.loads(json.dumps(config))

    # -- webhook URLs ----------------------------------------------------------------------
    def check_webhook(self, url: Any) -> None:
        """Section 13.2: refuse a webhook on a private, loopback or link-local address
        (``localhost`` too), unless its host is on the allowlist."""
        parts = urllib.parse.urlsplit(url if isinstance(url, str) else "")
        host = (parts.hostname or "").lower()
        if parts.scheme not in ("http", "https") or not host:
            raise Refusal(INVALID, f"url {url!r} is not an http(s) URL", data={"field": "url"})
        if host in self.WEBHOOK_ALLOW or "*" in self.WEBHOOK_ALLOW:
            return
        if host == "localhost" or host.endswith(".localhost"):
            raise Refusal(INVALID, f"url {url!r}: a webhook may not name localhost", data={"field": "url"})
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return  # a name: the reference resolves none before delivering
        if address.is_private or address.is_loopback or address.is_link_local or address.is_unspecified:
            raise Refusal(INVALID, f"url {url!r}: a webhook may not name a private, loopback or link-local "
                                   "address", data={"field": "url"})

    # -- deliveries ------------------------------------------------------------------------
    def deliver_change(self, task: dict[str, Any], event: dict[str, Any]) -> None:
        """Each config of ``task`` gets ``event`` (a StreamResponse, section 4.3.3)."""
        for config in list(self.push_configs.get(task["id"], {}).values()):
            self.deliver(config, event)

    def delivery_headers(self, config: dict[str, Any]) -> dict[str, bytes]:
        """The delivery's headers, their values as UTF-8 bytes: a token or a credential is the
        client's text (the proto gives it no character set), which a str header would have to
        be ASCII for (a UnicodeEncodeError here failed the SendMessage that carried the config)."""
        headers = {"Content-Type": b"application/a2a+json"}
        auth = config.get("authentication")
        if isinstance(auth, dict) and auth.get("scheme"):
            headers["Authorization"] = f"{auth['scheme']} {auth.get('credentials', '')}".strip().encode()
        if config.get("token"):
            headers[TOKEN_HEADER] = str(config["token"]).encode()
        return headers

    def deliver(self, config: dict[str, Any], event: dict[str, Any]) -> None:
        """POST ``event`` to the config's URL: at least once, retried with backoff while the
        receiver fails or cannot be reached (a name under ``.invalid`` never resolves: skipped)."""
        url = str(config.get("url", ""))
        if (urllib.parse.urlsplit(url).hostname or "").endswith(".invalid"):
            return
        body = json.dumps(event).encode()
        for attempt in range(self.DELIVERY_ATTEMPTS):
            if attempt:
                time.sleep(self.BACKOFF * 2 ** (attempt - 1))
            try:
                with httpx.Client(timeout=self.DELIVERY_TIMEOUT, follow_redirects=False,
                                  verify=_tls_context()) as client:
                    headers = [(k.encode(), v) for k, v in self.delivery_headers(config).items()]
                    status = client.post(url, content=body, headers=headers).status_code
            except (httpx.HTTPError, ValueError):  # a header h11 will not write (a control character)
                continue
            if 200 <= status < 300:
                return
