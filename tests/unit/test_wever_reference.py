"""The Wever Connect reference relay: every HTTP action with its refusals, the quotas
at their limit and one past it (the profile's limits), expiry on the control clock,
request-key idempotency, mailbox closure, the A2A adapter and MCP in both versions."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

import conformance.protocols.wever.protocol as wever
from conformance.documents.limits import load_limits
from conformance.documents.readers import SpecDocument, read_errors, read_operations
from conformance.documents.schemas import load_document, sha256_of, validator_for
from conformance.model import Profile
from conformance.protocols.wever.reference import ReferenceConfig, create_app, reference_credentials
from conformance.run import profiles
from conformance.transport.inprocess import InProcessTransport
from conformance.transport.mcp import McpClient, known_revisions, revision
from tests.mcp_session import RawMcp

HOUR = 3600
DAY = 86400
NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC).timestamp()  # noon UTC: a day boundary is 12 hours away


def wever_profile() -> Profile:
    """The profile built like load_profile does, without the package's complete() (whose
    requirements, faults and variants modules are written separately) and without
    touching load_profile's cache."""
    settings = profiles.read_settings(profiles.profile_path("wever-connect"))
    spec_path = profiles.DATA_ROOT / settings["spec"]
    spec = load_document(spec_path)
    document = SpecDocument(spec, spec_path.read_text(encoding="utf-8"), settings["spec"], "wever-connect")
    return Profile(
        name=settings["name"], title=settings["title"], spec_path=spec_path, spec_relpath=settings["spec"],
        spec=spec,
        spec_sha256=sha256_of(spec_path), settings=settings, operations=read_operations(document, settings),
        errors=read_errors(document, settings), requirements=[], faults={},
        create_reference=wever.create_reference,
        probe=wever.probe, limits=load_limits(settings.get("limits"), spec, settings["spec"]),
    )


PROFILE = wever_profile()
SPEC = PROFILE.spec
A2A = SPEC["protocols"]["a2a"]
CREDS = reference_credentials()
EXAMPLE = A2A["send_message_example"]
CAPABILITY = EXAMPLE["params"]["message"]["parts"][0]["data"]["capability"]
MEDIA = A2A["send_message"]["part_media_type"]
VERSION_HEADER, VERSION = "A2A-Version", A2A["required_headers"]["A2A-Version"]
MAPPING = A2A["state_mapping"]
TASK = {"message": "Synthetic bounded handoff"}


def limit(name: str) -> int:
    return int(PROFILE.limits[name].value)


def status(code: str) -> int:
    return PROFILE.errors[code].http_status


def digest(result: Any) -> str:
    text = json.dumps(result, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


Caller = str | dict[str, str] | None


class Relay:
    """A fresh reference on a fixed clock, called in process, with helpers per surface."""

    def __init__(self, **config: Any) -> None:
        self.at = NOW
        self.app = create_app(PROFILE,
                              ReferenceConfig(clock=lambda: self.at, seed=config.pop("seed", 7), **config))
        self.ref = self.app.state.reference
        self.client = httpx.Client(transport=InProcessTransport(self.app), base_url="http://reference")
        self.keys = 0

    # -- identities ---------------------------------------------------------------
    @staticmethod
    def id(who: Caller) -> str:
        return CREDS[who]["id"] if isinstance(who, str) else str(who["id"])  # type: ignore[index]

    @staticmethod
    def auth(who: Caller) -> dict[str, str]:
        if who is None:
            return {}
        token = CREDS[who]["token"] if isinstance(who, str) else who["token"]
        return {"Authorization": f"Bearer {token}"}

    # -- HTTP actions -----------------------------------------------------------------
    def post(self, action: str, args: Any, who: Caller = "alice", key: str | None = None,
             headers: dict[str, str] | None = None) -> httpx.Response:
        hdrs = {**self.auth(who), **({"Idempotency-Key": key} if key else {}), **(headers or {})}
        return self.client.post(f"/v1/actions/{action}", json=args, headers=hdrs)

    def ok(self, action: str, args: Any, who: Caller = "alice", key: str | None = None) -> dict[str, Any]:
        resp = self.post(action, args, who, key)
        assert resp.status_code == 200, (action, resp.status_code, resp.text)
        body: dict[str, Any] = resp.json()
        return body

    def err(self, action: str, args: Any, code: str, who: Caller = "alice",
            key: str | None = None) -> dict[str, Any]:
        resp = self.post(action, args, who, key)
        body: dict[str, Any] = resp.json()
        assert (resp.status_code, body["error"]["code"]) == (status(code), code), (action, resp.text)
        assert isinstance(body["error"]["message"], str)
        return body

    def control(self, action: str, **args: Any) -> Any:
        resp = self.client.post(f"/_control/{action}", json=args)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def advance(self, seconds: float) -> None:
        self.control("advance_clock", seconds=seconds)

    def snapshot(self) -> str:
        return str(self.control("snapshot")["digest"])

    def seed(self, count: int, **options: Any) -> list[dict[str, str]]:
        return list(self.control("seed_mailboxes", count=count, **options)["mailboxes"])

    # -- building blocks --------------------------------------------------------------
    def fresh_key(self) -> str:
        self.keys += 1
        return f"key-{self.keys}"

    def grant(self, recipient: Caller, sender: Caller) -> None:
        assert (self.ok("allow_sender", {"sender_id": self.id(sender), "allowed": True}, recipient)["allowed"]
                is True)

    def send(self, sender: Caller = "alice", recipient: Caller = "bob", task: Any = None,
             key: str | None = None, capability: str = CAPABILITY) -> httpx.Response:
        body = {"recipient_id": self.id(recipient), "capability": capability,
                "task": TASK if task is None else task}
        return self.post("send_task", body, sender, key or self.fresh_key())

    def task(self, sender: Caller = "alice", recipient: Caller = "bob", **kwargs: Any) -> dict[str, Any]:
        """A granted, offered task from sender to recipient."""
        if not self.ref.has_grant(self.id(recipient), self.id(sender)):
            self.grant(recipient, sender)
        resp = self.send(sender, recipient, **kwargs)
        assert resp.status_code == 200, resp.text
        task: dict[str, Any] = resp.json()["task"]
        return task

    def inbox(self, who: Caller = "bob") -> list[dict[str, Any]]:
        return list(self.ok("inbox", {}, who)["tasks"])

    def opt_in(self, who: Caller, discoverable: bool = False, capabilities: list[str] | None = None) -> None:
        self.ok("update_mailbox",
                {"label": "opted in", "capabilities": capabilities or [], "discoverable": discoverable,
                 "accepts_connection_requests": True}, who)

    # -- A2A --------------------------------------------------------------------------
    def a2a_raw(self, body: bytes | str, who: Caller = "alice", headers: dict[str, str] | None = None,
                version: str | None = VERSION) -> httpx.Response:
        hdrs = {"Content-Type": "application/json", **self.auth(who),
                **({VERSION_HEADER: version} if version is not None else {}), **(headers or {})}
        return self.client.post(A2A["endpoint"], content=body, headers=hdrs)

    def a2a(self, method: str, params: Any, who: Caller = "alice", **kwargs: Any) -> httpx.Response:
        return self.a2a_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}), who,
                            **kwargs)

    def a2a_error(self, method: str, params: Any, code: int, who: Caller = "alice",
                  **kwargs: Any) -> dict[str, Any]:
        resp = self.a2a(method, params, who, **kwargs)
        body: dict[str, Any] = resp.json()
        assert "error" in body and body["error"]["code"] == code, (resp.status_code, body)
        return body

    # -- MCP --------------------------------------------------------------------------
    def mcp(self, method: str, params: Any = None, who: Caller = "alice",
            headers: dict[str, str] | None = None,
            notification: bool = False) -> httpx.Response:
        """One MCP message in the era its MCP-Protocol-Version names: a stateless revision's
        _meta and mirrored headers, or the session of a handshake (tests/mcp_session.py)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, **({} if notification else {"id": 1})}
        if params is not None:
            message["params"] = params
        said = (headers or {}).get("MCP-Protocol-Version")
        path = SPEC["protocols"]["mcp"]["endpoint"]
        if said in known_revisions() and revision(said).stateless:
            # only its headers and _meta: no request
            client = McpClient(None, path, said, dict)  # type: ignore[arg-type]
            client.tool_schemas = {}  # the manifest's actions carry no x-mcp-header
            message["params"] = client.with_meta(params or {})
            sent = {**client.headers_for(message), **self.auth(who), **(headers or {})}
            return self.client.post(path, json=message, headers=sent)
        if method == "initialize" or who is None:
            return self.client.post(path, json=message, headers={**self.auth(who), **(headers or {})})
        if not hasattr(self, "raw_mcp"):
            self.raw_mcp = RawMcp(self.client, path, "2025-11-25")
        return self.raw_mcp.post(message, self.auth(who), headers)

    def tool(self, name: str, arguments: Any, who: Caller = "alice",
             headers: dict[str, str] | None = None) -> dict[str, Any]:
        resp = self.mcp("tools/call", {"name": name, "arguments": arguments}, who, headers)
        assert resp.status_code == 200, resp.text
        result: dict[str, Any] = resp.json()["result"]
        return result


def message(data: dict[str, Any] | None = None, message_id: str = "msg-1", **extra: Any) -> dict[str, Any]:
    """SendMessage params shaped like the manifest's example, to bob unless told."""
    params = json.loads(json.dumps(EXAMPLE["params"]))
    params["message"]["messageId"] = message_id
    params["message"]["parts"][0]["data"] = data or {"recipient_id": CREDS["bob"]["id"],
                                                     "capability": CAPABILITY, "task": TASK}
    params["message"].update(extra)
    return dict(params)


@pytest.fixture
def relay() -> Relay:
    return Relay()


# =========================================================================== basics


def test_reference_credentials_are_fixed_and_seeded(relay: Relay) -> None:
    assert reference_credentials() == CREDS and set(CREDS) == {"alice", "bob", "carol"}
    for cred in CREDS.values():
        assert validator_for(
            SPEC["actions"]["allow_sender"]["inputSchema"]["properties"]["sender_id"]).is_valid(cred["id"])
        assert cred["token"]
    assert relay.ok("get_mailbox", {}, "alice")["mailbox_id"] == CREDS["alice"]["id"]
    bob = relay.ok("get_mailbox", {}, "bob")
    assert (bob["capabilities"] == [CAPABILITY]
            and relay.ok("get_mailbox", {}, "carol")["capabilities"] == [CAPABILITY])
    assert not bob["discoverable"] and not bob["accepts_connection_requests"] and bob["allowed_senders"] == []


def test_unknown_action_invalid_body_and_authentication(relay: Relay) -> None:
    resp = relay.post("no_such_action", {})
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "NOT_FOUND"
    relay.err("get_mailbox", {"extra": 1}, "VALIDATION_ERROR")
    relay.err("allow_sender", {"sender_id": "mbx_nothex", "allowed": True}, "VALIDATION_ERROR")
    bad = relay.client.post("/v1/actions/get_mailbox", content=b"{not json", headers=relay.auth("alice"))
    assert bad.status_code == status("VALIDATION_ERROR")
    relay.err("get_mailbox", {}, "UNAUTHENTICATED", who=None)
    relay.err("get_mailbox", {}, "UNAUTHENTICATED", who={"id": "x", "token": "never-issued"})
    relay.err("get_mailbox", {"extra": 1}, "UNAUTHENTICATED", who=None)  # authentication comes first


def test_health_openapi_and_agent_card(relay: Relay) -> None:
    assert relay.client.get(SPEC["routes"]["health"]).json() == {"status": "ok"}
    doc = relay.client.get(SPEC["routes"]["openapi"]).json()
    assert doc["openapi"].startswith("3.1")
    assert set(doc["paths"]) == {f"/v1/actions/{name}" for name in SPEC["actions"]}
    for name, action in SPEC["actions"].items():
        post = doc["paths"][f"/v1/actions/{name}"]["post"]
        assert post["requestBody"]["content"]["application/json"]["schema"] == action["inputSchema"]
    card = relay.client.get(SPEC["routes"]["agent_card"]).json()
    interface = card["supportedInterfaces"][0]
    assert interface["url"].endswith(A2A["endpoint"])
    assert ((interface["protocolBinding"], interface["protocolVersion"])
            == (A2A["protocol_binding"], A2A["protocol_version"]))
    assert card["capabilities"]["streaming"] is False and card["capabilities"]["pushNotifications"] is False


# =========================================================================== mailboxes


def test_register_mailbox_result_and_token(relay: Relay) -> None:
    made = relay.ok("register_mailbox",
                    {"label": "new agent", "capabilities": ["csv.clean"], "discoverable": True}, None)
    assert set(made) == {"mailbox_id", "access_token", "expires_at", "label", "capabilities", "discoverable",
                         "accepts_connection_requests"}
    assert made["accepts_connection_requests"] is False and made["discoverable"] is True
    assert made["expires_at"] == datetime.fromtimestamp(NOW + limit("mailbox_days") * DAY, UTC).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")
    me = relay.ok("get_mailbox", {}, {"id": made["mailbox_id"], "token": made["access_token"]})
    assert me["label"] == "new agent" and me["capabilities"] == ["csv.clean"]
    relay.err("register_mailbox", {}, "VALIDATION_ERROR", None)


def test_registrations_per_source_per_day(relay: Relay) -> None:
    for i in range(limit("registrations_per_source_per_day_count")):
        relay.ok("register_mailbox", {"label": f"m{i}"}, None)
    before = relay.snapshot()
    relay.err("register_mailbox", {"label": "one too many"}, "QUOTA_EXCEEDED", None)
    assert relay.snapshot() == before
    relay.advance(DAY)
    relay.ok("register_mailbox", {"label": "next day"}, None)


def test_registrations_service_wide_per_day(relay: Relay) -> None:
    raw = json.dumps({"label": "from afar"}).encode()
    per_source = limit("registrations_per_source_per_day_count")
    for i in range(limit("registrations_per_day_count")):
        resp = relay.ref.serve_action("register_mailbox", raw, {}, f"10.0.{i // per_source}.{i % per_source}")
        assert resp.status_code == 200
    refused = relay.ref.serve_action("register_mailbox", raw, {}, "192.0.2.1")  # a fresh source
    assert (refused.status_code == status("QUOTA_EXCEEDED")
            and json.loads(refused.body)["error"]["code"] == "QUOTA_EXCEEDED")


def test_active_mailboxes_cap(relay: Relay) -> None:
    relay.seed(limit("active_mailboxes_count") - 4)  # the three seeded are active too
    relay.ok("register_mailbox", {"label": "the last one"}, None)
    relay.err("register_mailbox", {"label": "one past"}, "QUOTA_EXCEEDED", None)
    relay.ok("close_mailbox", {}, "carol")
    relay.ok("register_mailbox", {"label": "a slot freed"}, None)


def test_update_mailbox_preserves_request_flag_and_grants(relay: Relay) -> None:
    relay.grant("bob", "alice")
    view = relay.ok("update_mailbox", {"label": "Bob", "capabilities": [CAPABILITY], "discoverable": True,
                                       "accepts_connection_requests": True}, "bob")
    assert view["accepts_connection_requests"] is True and view["discoverable"] is True
    view = relay.ok("update_mailbox", {"label": "Bob 2", "capabilities": [CAPABILITY], "discoverable": False},
                    "bob")
    assert view["accepts_connection_requests"] is True and view["label"] == "Bob 2"
    view = relay.ok("update_mailbox", {"label": "Bob", "capabilities": [CAPABILITY], "discoverable": False,
                                       "accepts_connection_requests": False}, "bob")
    assert view["accepts_connection_requests"] is False and view["allowed_senders"] == [CREDS["alice"]["id"]]
    relay.err("update_mailbox", {"label": "Bob"}, "VALIDATION_ERROR", "bob")


def test_renew_and_expire_mailbox(relay: Relay) -> None:
    relay.advance(6 * DAY)
    renewed = relay.ok("renew_mailbox", {}, "alice")
    assert set(renewed) == {"mailbox_id", "expires_at"}
    assert relay.ok("get_mailbox", {}, "alice")["expires_at"] == renewed["expires_at"]
    relay.advance(limit("mailbox_days") * DAY - 6 * DAY)  # bob was not renewed: expired now
    relay.err("get_mailbox", {}, "UNAUTHENTICATED", "bob")
    relay.err("renew_mailbox", {}, "UNAUTHENTICATED", "bob")
    relay.ok("get_mailbox", {}, "alice")


def test_close_mailbox_erases_shared_content(relay: Relay) -> None:
    relay.opt_in("bob", discoverable=True, capabilities=[CAPABILITY])
    relay.grant("alice", "bob")
    first = relay.task("alice", "bob")
    relay.ok("accept_task", {"task_id": first["task_id"]}, "bob")
    relay.ok("complete_task", {"task_id": first["task_id"], "result": {"ok": 1}}, "bob")
    second = relay.task("carol", "bob", key="carol-key")
    closed = relay.ok("close_mailbox", {}, "bob")
    assert closed == {"mailbox_id": CREDS["bob"]["id"], "closed": True}
    relay.err("get_mailbox", {}, "UNAUTHENTICATED", "bob")
    assert relay.ok("find_peers", {}, None)["peers"] == []
    assert relay.ok("get_mailbox", {}, "alice")["allowed_senders"] == []  # bob's grant to send to alice
    for who, task in (("alice", first), ("carol", second)):
        seen = relay.ok("get_task", {"task_id": task["task_id"]}, who)["task"]
        assert seen["task"] is None and seen["result"] is None and seen["result_digest"] is None
    assert relay.ok("get_task", {"task_id": first["task_id"]}, "alice")["task"]["state"] == "completed"
    resp = relay.send("alice", "bob")
    assert resp.json()["error"]["code"] == "NOT_FOUND"
    retry = relay.send("carol", "bob", key="carol-key")  # its content was erased: the key is gone
    assert (retry.status_code, retry.json()["error"]["code"]) == (status("GONE"), "GONE")


def test_find_peers_lists_only_opted_in_with_cursor(relay: Relay) -> None:
    peers = relay.seed(5, discoverable=True, capabilities=["csv.clean"])
    relay.seed(2)  # not discoverable
    relay.opt_in("carol", discoverable=True, capabilities=[CAPABILITY])
    listed = relay.ok("find_peers", {}, None)
    ids = sorted([p["id"] for p in peers] + [CREDS["carol"]["id"]])
    assert [p["mailbox_id"] for p in listed["peers"]] == ids and listed["next"] is None
    assert set(listed["peers"][0]) == {"mailbox_id", "label", "capabilities", "accepts_connection_requests"}
    page = relay.ok("find_peers", {"limit": 2}, None)
    assert [p["mailbox_id"] for p in page["peers"]] == ids[:2] and page["next"] == ids[1]
    rest = relay.ok("find_peers", {"after": page["next"], "limit": 20}, None)
    assert [p["mailbox_id"] for p in rest["peers"]] == ids[2:]
    only = relay.ok("find_peers", {"capability": CAPABILITY}, None)
    assert [p["mailbox_id"] for p in only["peers"]] == [CREDS["carol"]["id"]]
    relay.err("find_peers", {"limit": limit("find_peers_limit_count") + 1}, "VALIDATION_ERROR", None)
    relay.advance(limit("mailbox_days") * DAY)
    assert relay.ok("find_peers", {}, None)["peers"] == []


def test_find_peers_default_page_is_the_limit(relay: Relay) -> None:
    relay.seed(limit("find_peers_limit_count") + 1, discoverable=True)
    page = relay.ok("find_peers", {}, None)
    assert (len(page["peers"]) == limit("find_peers_limit_count")
            and page["next"] == page["peers"][-1]["mailbox_id"])


# =========================================================================== grants


def test_allow_sender_grant_and_revoke(relay: Relay) -> None:
    assert relay.ok("allow_sender", {"sender_id": CREDS["alice"]["id"], "allowed": True}, "bob") == {
        "sender_id": CREDS["alice"]["id"], "allowed": True}
    assert relay.ok("get_mailbox", {}, "bob")["allowed_senders"] == [CREDS["alice"]["id"]]
    assert (relay.ok("allow_sender", {"sender_id": CREDS["alice"]["id"], "allowed": False}, "bob")["allowed"]
            is False)
    relay.err("allow_sender", {"sender_id": "mbx_" + "f" * 24, "allowed": True}, "NOT_FOUND", "bob")


def test_new_sender_grants_per_recipient_per_day(relay: Relay) -> None:
    """Revoke/regrant cycles count; an existing grant is free; revocation works at the limit."""
    body = {"sender_id": CREDS["alice"]["id"]}
    for _ in range(limit("new_sender_grants_per_recipient_per_day_count")):
        relay.ok("allow_sender", {**body, "allowed": True}, "bob")
        relay.ok("allow_sender", {**body, "allowed": True}, "bob")  # a no-op retry consumes nothing
        relay.ok("allow_sender", {**body, "allowed": False}, "bob")
    relay.err("allow_sender", {**body, "allowed": True}, "QUOTA_EXCEEDED", "bob")
    relay.ok("allow_sender", {**body, "allowed": False}, "bob")
    relay.advance(DAY)
    relay.ok("allow_sender", {**body, "allowed": True}, "bob")


def test_allowed_senders_per_mailbox_cap(relay: Relay) -> None:
    senders = relay.seed(limit("allowed_senders_per_mailbox_count") + 1)
    for sender in senders[:-1]:
        relay.grant("bob", sender)
    relay.err("allow_sender", {"sender_id": senders[-1]["id"], "allowed": True}, "QUOTA_EXCEEDED", "bob")
    relay.ok("allow_sender", {"sender_id": senders[0]["id"], "allowed": True}, "bob")  # existing: fine
    relay.ok("allow_sender", {"sender_id": senders[0]["id"], "allowed": False}, "bob")
    relay.grant("bob", senders[-1])


def test_service_new_sender_grants_per_day(relay: Relay) -> None:
    per_recipient = limit("allowed_senders_per_mailbox_count")
    total = limit("service_new_sender_grants_per_day_count")
    recipients = relay.seed(total // per_recipient + 1)
    senders = relay.seed(per_recipient)
    for n in range(total):
        relay.grant(recipients[n // per_recipient], senders[n % per_recipient])
    relay.err("allow_sender", {"sender_id": senders[0]["id"], "allowed": True}, "QUOTA_EXCEEDED",
              recipients[-1])


# =========================================================================== connection requests


def test_request_connection_requires_opt_in_and_grants_nothing(relay: Relay) -> None:
    relay.err("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "REQUESTS_DISABLED", "alice")
    relay.err("request_connection", {"recipient_id": "mbx_" + "a" * 24}, "NOT_FOUND", "alice")
    relay.opt_in("bob", capabilities=[CAPABILITY])
    req = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]
    assert set(req) == {"request_id", "sender_id", "recipient_id", "status", "created_at", "expires_at"}
    assert (req["sender_id"], req["recipient_id"], req["status"]) == (CREDS["alice"]["id"],
                                                                      CREDS["bob"]["id"], "pending")
    assert relay.ok("get_mailbox", {}, "bob")["allowed_senders"] == []
    assert relay.send("alice", "bob").json()["error"]["code"] == "NOT_ALLOWED"
    again = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]
    assert again == req
    listed = relay.ok("list_connection_requests", {}, "bob")["requests"]
    assert listed == [req] and relay.ok("list_connection_requests", {}, "alice")["requests"] == []


def test_connection_request_expires(relay: Relay) -> None:
    relay.opt_in("bob")
    req = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]
    relay.advance(limit("connection_request_hours") * HOUR)
    assert relay.ok("list_connection_requests", {}, "bob")["requests"] == []
    relay.err("respond_connection_request", {"request_id": req["request_id"], "allowed": True}, "NOT_FOUND",
              "bob")
    fresh = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]
    assert fresh["request_id"] != req["request_id"]


def test_denial_is_retained_until_the_original_expiry(relay: Relay) -> None:
    relay.opt_in("bob")
    req = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]
    relay.advance(HOUR)
    relay.ok("respond_connection_request", {"request_id": req["request_id"], "allowed": False}, "bob")
    retry = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]
    assert retry["request_id"] == req["request_id"] and retry["status"] == "denied"
    relay.advance(limit("connection_request_hours") * HOUR - HOUR)
    assert (relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]["status"]
            == "pending")


def test_respond_connection_request_rules(relay: Relay) -> None:
    relay.opt_in("bob")
    req = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]
    rid = req["request_id"]
    relay.err("respond_connection_request", {"request_id": rid, "allowed": True}, "NOT_ALLOWED", "alice")
    relay.err("respond_connection_request", {"request_id": rid, "allowed": True}, "NOT_FOUND", "carol")
    answer = relay.ok("respond_connection_request", {"request_id": rid, "allowed": True}, "bob")
    assert answer["allowed"] is True and answer["request"]["status"] == "allowed"
    assert relay.ok("get_mailbox", {}, "bob")["allowed_senders"] == [CREDS["alice"]["id"]]
    # a later revocation
    relay.ok("allow_sender", {"sender_id": CREDS["alice"]["id"], "allowed": False}, "bob")
    repeat = relay.ok("respond_connection_request", {"request_id": rid, "allowed": True}, "bob")
    assert repeat["request"]["status"] == "allowed" and repeat["allowed"] is False
    relay.err("respond_connection_request", {"request_id": rid, "allowed": False}, "INVALID_STATE", "bob")
    assert relay.ok("list_connection_requests", {}, "bob")["requests"] == []


def test_deny_revokes_the_current_grant(relay: Relay) -> None:
    relay.opt_in("bob")
    relay.grant("bob", "alice")
    req = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]
    answer = relay.ok("respond_connection_request", {"request_id": req["request_id"], "allowed": False},
                      "bob")
    assert answer == {"request": {**req, "status": "denied"}, "allowed": False}
    relay.grant("bob", "alice")  # a later grant survives a repeated denial
    again = relay.ok("respond_connection_request", {"request_id": req["request_id"], "allowed": False}, "bob")
    assert again["allowed"] is True and again["request"]["status"] == "denied"


def test_allow_is_atomic_with_the_grant_cap(relay: Relay) -> None:
    relay.opt_in("bob")
    for sender in relay.seed(limit("allowed_senders_per_mailbox_count")):
        relay.grant("bob", sender)
    req = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "alice")["request"]
    before = relay.snapshot()
    relay.err("respond_connection_request", {"request_id": req["request_id"], "allowed": True},
              "QUOTA_EXCEEDED", "bob")
    assert relay.snapshot() == before
    assert relay.ok("list_connection_requests", {}, "bob")["requests"][0]["status"] == "pending"


def test_pending_requests_per_sender(relay: Relay) -> None:
    recipients = relay.seed(limit("pending_connection_requests_per_sender_count") + 1,
                            accepts_connection_requests=True)
    for recipient in recipients[:-1]:
        relay.ok("request_connection", {"recipient_id": recipient["id"]}, "alice")
    relay.err("request_connection", {"recipient_id": recipients[-1]["id"]}, "QUOTA_EXCEEDED", "alice")


def test_pending_requests_per_recipient(relay: Relay) -> None:
    relay.opt_in("bob")
    senders = relay.seed(limit("pending_connection_requests_per_recipient_count") + 1)
    for sender in senders[:-1]:
        relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, sender)
    relay.err("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "QUOTA_EXCEEDED", senders[-1])


def test_connection_requests_per_sender_per_day(relay: Relay) -> None:
    recipients = relay.seed(limit("connection_requests_per_sender_per_day_count") + 1,
                            accepts_connection_requests=True)
    for recipient in recipients[:-1]:
        req = relay.ok("request_connection", {"recipient_id": recipient["id"]}, "alice")["request"]
        relay.ok("respond_connection_request", {"request_id": req["request_id"], "allowed": False}, recipient)
    relay.err("request_connection", {"recipient_id": recipients[-1]["id"]}, "QUOTA_EXCEEDED", "alice")


def test_connection_requests_per_recipient_per_day(relay: Relay) -> None:
    relay.opt_in("bob")
    senders = relay.seed(limit("connection_requests_per_recipient_per_day_count") + 1)
    for sender in senders[:-1]:
        req = relay.ok("request_connection", {"recipient_id": CREDS["bob"]["id"]}, sender)["request"]
        relay.ok("respond_connection_request", {"request_id": req["request_id"], "allowed": False}, "bob")
    relay.err("request_connection", {"recipient_id": CREDS["bob"]["id"]}, "QUOTA_EXCEEDED", senders[-1])


def test_service_connection_requests_per_day(relay: Relay) -> None:
    per_sender = limit("connection_requests_per_sender_per_day_count")
    total = limit("service_connection_requests_per_day_count")
    recipients = relay.seed(per_sender, accepts_connection_requests=True)
    senders = relay.seed(total // per_sender + 1)
    for n in range(total):
        recipient = recipients[n % per_sender]
        req = relay.ok("request_connection", {"recipient_id": recipient["id"]},
                       senders[n // per_sender])["request"]
        relay.ok("respond_connection_request", {"request_id": req["request_id"], "allowed": False}, recipient)
    relay.err("request_connection", {"recipient_id": recipients[0]["id"]}, "QUOTA_EXCEEDED", senders[-1])


# =========================================================================== tasks


def test_send_task_result_shape(relay: Relay) -> None:
    task = relay.task()
    assert set(task) == {"task_id", "sender_id", "recipient_id", "capability", "state", "task", "result",
                         "result_digest", "created_at", "updated_at", "expires_at"}
    assert (task["sender_id"], task["recipient_id"], task["state"]) == (CREDS["alice"]["id"],
                                                                        CREDS["bob"]["id"], "offered")
    assert task["task"] == TASK and task["result"] is None and task["result_digest"] is None
    assert task["task_id"].startswith("task_") and task["created_at"].endswith("Z")
    assert relay.inbox("bob") == [task]


def test_send_task_refusals(relay: Relay) -> None:
    body = {"recipient_id": CREDS["bob"]["id"], "capability": CAPABILITY, "task": TASK}
    relay.err("send_task", body, "IDEMPOTENCY_KEY_REQUIRED")
    relay.err("send_task", body, "NOT_ALLOWED", key="k1")  # no grant
    relay.grant("bob", "alice")
    relay.err("send_task", {**body, "capability": "other.capability"}, "NOT_ALLOWED", key="k2")
    relay.err("send_task", {**body, "extra": 1}, "VALIDATION_ERROR", key="k3")
    relay.err("send_task", body, "UNAUTHENTICATED", who=None, key="k4")
    before = relay.snapshot()
    relay.err("send_task", body, "NOT_ALLOWED", who="carol", key="k5")
    assert relay.snapshot() == before
    relay.ok("send_task", body, key="k1")  # the refused key was not consumed
    relay.ok("allow_sender", {"sender_id": CREDS["alice"]["id"], "allowed": False}, "bob")
    relay.err("send_task", body, "NOT_ALLOWED", key="k6")


def test_task_data_size_at_the_limit(relay: Relay) -> None:
    relay.grant("bob", "alice")
    wrapper = len(json.dumps({"x": ""}, separators=(",", ":")))
    exact = {"x": "é" * ((limit("task_or_result_bytes") - wrapper) // 2)}  # two UTF-8 bytes each
    exact["x"] += "a" * (limit("task_or_result_bytes")
                         - len(json.dumps(exact, separators=(",", ":"), ensure_ascii=False).encode()))
    assert (len(json.dumps(exact, separators=(",", ":"), ensure_ascii=False).encode())
            == limit("task_or_result_bytes"))
    assert relay.send(task=exact).status_code == 200
    over = {"x": exact["x"] + "a"}
    resp = relay.send(task=over)
    assert (resp.status_code, resp.json()["error"]["code"]) == (status("TOO_LARGE"), "TOO_LARGE")


def test_sent_tasks_per_mailbox_per_day(relay: Relay) -> None:
    relay.grant("bob", "alice")
    relay.grant("carol", "alice")
    for n in range(limit("sent_tasks_per_mailbox_per_day_count")):
        assert relay.send("alice", "bob" if n % 2 else "carol").status_code == 200
    resp = relay.send("alice", "bob")
    assert resp.json()["error"]["code"] == "QUOTA_EXCEEDED" and resp.status_code == status("QUOTA_EXCEEDED")
    relay.advance(DAY)
    assert relay.send("alice", "bob").status_code == 200


def test_received_tasks_per_mailbox_per_day(relay: Relay) -> None:
    relay.grant("bob", "alice")
    relay.grant("bob", "carol")
    for n in range(limit("received_tasks_per_mailbox_per_day_count")):
        assert relay.send("alice" if n % 2 else "carol", "bob").status_code == 200
    assert relay.send("carol", "bob").json()["error"]["code"] == "QUOTA_EXCEEDED"


def test_service_tasks_per_day(relay: Relay) -> None:
    per_box = limit("sent_tasks_per_mailbox_per_day_count")
    total = limit("service_tasks_per_day_count")
    count = total // per_box
    senders, recipients = relay.seed(count + 1), relay.seed(count, capabilities=[CAPABILITY])
    for recipient in recipients:
        for sender in senders:
            relay.grant(recipient, sender)
    for n in range(total):
        sender, recipient = senders[n // per_box], recipients[n % count]
        assert relay.send(sender, recipient).status_code == 200
    assert relay.send(senders[-1], recipients[0]).json()["error"]["code"] == "QUOTA_EXCEEDED"


def test_idempotent_replay_and_conflict(relay: Relay) -> None:
    relay.grant("bob", "alice")
    first = relay.send(key="same").json()["task"]
    again = relay.send(key="same").json()["task"]
    assert again == first and len(relay.inbox("bob")) == 1
    resp = relay.send(key="same", task={"message": "changed"})
    assert (resp.status_code, resp.json()["error"]["code"]) == (status("IDEMPOTENCY_CONFLICT"),
                                                                "IDEMPOTENCY_CONFLICT")
    relay.grant("bob", "carol")
    # per-sender keys
    assert relay.send("carol", "bob", key="same").json()["task"]["task_id"] != first["task_id"]
    relay.ok("allow_sender", {"sender_id": CREDS["alice"]["id"], "allowed": False}, "bob")
    assert relay.send(key="same").json()["task"]["task_id"] == first["task_id"]  # a replay needs no new grant


def test_fifty_concurrent_duplicates_make_one_task(relay: Relay) -> None:
    relay.grant("bob", "alice")
    with ThreadPoolExecutor(max_workers=50) as pool:
        answers = list(pool.map(lambda _: relay.send(key="burst"), range(50)))
    assert {r.status_code for r in answers} == {200}
    assert len({r.json()["task"]["task_id"] for r in answers}) == 1
    assert len(relay.inbox("bob")) == 1
    assert relay.ref.counter("sent", CREDS["alice"]["id"]) == 1


def test_key_of_deleted_task_is_gone_until_the_tombstone_expires(relay: Relay) -> None:
    task = relay.task(key="kept")
    relay.ok("decline_task", {"task_id": task["task_id"]}, "bob")
    assert relay.ok("delete_task_content", {"task_id": task["task_id"]}, "alice") == {
        "task_id": task["task_id"], "content_deleted": True}
    relay.err("get_task", {"task_id": task["task_id"]}, "NOT_FOUND", "alice")
    relay.err("get_task", {"task_id": task["task_id"]}, "NOT_FOUND", "bob")
    resp = relay.send(key="kept")
    assert (resp.status_code, resp.json()["error"]["code"]) == (status("GONE"), "GONE")
    relay.advance(limit("tombstone_hours") * HOUR - 1)
    relay.ok("renew_mailbox", {}, "bob")
    relay.ok("renew_mailbox", {}, "alice")
    assert relay.send(key="kept").json()["error"]["code"] == "GONE"
    relay.advance(1)
    fresh = relay.send(key="kept").json()["task"]
    assert fresh["task_id"] != task["task_id"]


def test_task_expiry_purges_and_key_is_gone(relay: Relay) -> None:
    task = relay.task(key="short")
    expected = datetime.fromtimestamp(NOW + limit("task_hours") * HOUR, UTC)
    assert task["expires_at"] == expected.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    relay.advance(limit("task_hours") * HOUR - 1)
    assert relay.inbox("bob") != []
    relay.advance(1)
    assert relay.inbox("bob") == []
    relay.err("get_task", {"task_id": task["task_id"]}, "NOT_FOUND", "alice")
    assert relay.send(key="short").json()["error"]["code"] == "GONE"


def test_task_expiry_never_after_a_mailbox_expiry(relay: Relay) -> None:
    relay.grant("bob", "alice")
    relay.advance(limit("mailbox_days") * DAY - HOUR)  # bob (and alice) have an hour left
    task = relay.send().json()["task"]
    bob_expiry = relay.ok("get_mailbox", {}, "bob")["expires_at"]
    assert task["expires_at"] == bob_expiry
    relay.ok("renew_mailbox", {}, "alice")
    relay.ok("renew_mailbox", {}, "bob")
    relay.advance(HOUR)
    relay.err("get_task", {"task_id": task["task_id"]}, "NOT_FOUND", "alice")


def test_task_lifecycle_and_digest(relay: Relay) -> None:
    task = relay.task()
    tid = {"task_id": task["task_id"]}
    relay.err("complete_task", {**tid, "result": {"a": 1}}, "INVALID_STATE", "bob")
    relay.err("accept_task", tid, "NOT_ALLOWED", "alice")
    relay.err("accept_task", tid, "NOT_FOUND", "carol")
    accepted = relay.ok("accept_task", tid, "bob")["task"]
    assert (accepted["state"] == "accepted"
            and relay.ok("accept_task", tid, "bob")["task"]["state"] == "accepted")
    assert [t["state"] for t in relay.inbox("bob")] == ["accepted"]
    relay.err("cancel_task", tid, "INVALID_STATE", "alice")
    relay.err("decline_task", tid, "INVALID_STATE", "bob")
    relay.err("delete_task_content", tid, "INVALID_STATE", "alice")
    result = {"rows": 3, "note": "naïve"}
    relay.err("complete_task", {**tid, "result": result}, "NOT_ALLOWED", "alice")
    done = relay.ok("complete_task", {**tid, "result": result}, "bob")["task"]
    assert (done["state"] == "completed" and done["result"] == result
            and done["result_digest"] == digest(result))
    assert relay.ok("get_task", tid, "alice")["task"] == done
    relay.err("get_task", tid, "NOT_FOUND", "carol")
    relay.err("get_task", {"task_id": "task_" + "0" * 32}, "NOT_FOUND", "alice")
    assert relay.inbox("bob") == []
    relay.err("complete_task", {**tid, "result": {"other": 1}}, "INVALID_STATE", "bob")


def test_result_size_at_the_limit(relay: Relay) -> None:
    task = relay.task()
    relay.ok("accept_task", {"task_id": task["task_id"]}, "bob")
    over = {"x": "a" * limit("task_or_result_bytes")}
    relay.err("complete_task", {"task_id": task["task_id"], "result": over}, "TOO_LARGE", "bob")
    exact = {"x": "a" * (limit("task_or_result_bytes") - len('{"x":""}'))}
    relay.ok("complete_task", {"task_id": task["task_id"], "result": exact}, "bob")


def test_decline_cancel_and_delete(relay: Relay) -> None:
    declined, cancelled = relay.task(), relay.task()
    relay.err("decline_task", {"task_id": declined["task_id"]}, "NOT_ALLOWED", "alice")
    assert relay.ok("decline_task", {"task_id": declined["task_id"]}, "bob")["task"]["state"] == "declined"
    relay.err("accept_task", {"task_id": declined["task_id"]}, "INVALID_STATE", "bob")
    relay.err("cancel_task", {"task_id": cancelled["task_id"]}, "NOT_ALLOWED", "bob")
    relay.err("cancel_task", {"task_id": cancelled["task_id"]}, "NOT_FOUND", "carol")
    assert relay.ok("cancel_task", {"task_id": cancelled["task_id"]}, "alice")["task"]["state"] == "cancelled"
    assert relay.ok("cancel_task", {"task_id": cancelled["task_id"]}, "alice")["task"]["state"] == "cancelled"
    relay.err("delete_task_content", {"task_id": cancelled["task_id"]}, "NOT_FOUND", "carol")
    relay.ok("delete_task_content", {"task_id": cancelled["task_id"]}, "bob")
    relay.err("get_task", {"task_id": cancelled["task_id"]}, "NOT_FOUND", "alice")
    assert relay.inbox("bob") == []


def test_inbox_oldest_first_and_capped(relay: Relay) -> None:
    relay.grant("bob", "alice")
    relay.grant("bob", "carol")
    ids = []
    for n in range(4):
        relay.advance(60)
        ids.append(relay.send("alice" if n % 2 else "carol", "bob").json()["task"]["task_id"])
    relay.ok("accept_task", {"task_id": ids[1]}, "bob")
    relay.ok("decline_task", {"task_id": ids[2]}, "bob")
    assert [t["task_id"] for t in relay.inbox("bob")] == [ids[0], ids[1], ids[3]]
    assert relay.inbox("alice") == []
    relay.ref.limit_values["inbox_tasks_count"] = 2
    assert [t["task_id"] for t in relay.inbox("bob")] == [ids[0], ids[1]]


# =========================================================================== A2A


def test_a2a_send_get_and_state_mapping(relay: Relay) -> None:
    relay.grant("bob", "alice")
    resp = relay.a2a("SendMessage", message())
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["id"] == 1 and body["jsonrpc"] == "2.0"
    a2a_task = body["result"]["task"]
    assert (a2a_task["status"]["state"] == MAPPING["offered"] and a2a_task["history"] == []
            and "artifacts" not in a2a_task)
    tid = a2a_task["id"]
    assert [t["task_id"] for t in relay.inbox("bob")] == [tid]
    relay.ok("accept_task", {"task_id": tid}, "bob")
    got = relay.a2a("GetTask", {"id": tid, "historyLength": 5}).json()["result"]
    assert got["status"]["state"] == MAPPING["accepted"]
    relay.ok("complete_task", {"task_id": tid, "result": {"rows": 2}}, "bob")
    done = relay.a2a("GetTask", {"id": tid}, "bob").json()["result"]
    assert done["status"]["state"] == MAPPING["completed"]
    assert done["artifacts"][0]["parts"] == [{"data": {"rows": 2}, "mediaType": MEDIA}]
    declined = relay.a2a("SendMessage", message(message_id="msg-2")).json()["result"]["task"]["id"]
    relay.ok("decline_task", {"task_id": declined}, "bob")
    assert relay.a2a("GetTask", {"id": declined}).json()["result"]["status"]["state"] == MAPPING["declined"]
    relay.a2a_error("GetTask", {"id": tid}, -32001, "carol")
    relay.a2a_error("GetTask", {"id": "task_" + "1" * 32}, -32001)
    relay.a2a_error("GetTask", {"id": tid, "historyLength": -1}, -32602)


def test_a2a_cancel_rules(relay: Relay) -> None:
    relay.grant("bob", "alice")
    tid = relay.a2a("SendMessage", message()).json()["result"]["task"]["id"]
    relay.a2a_error("CancelTask", {"id": tid}, -32002, "bob")
    relay.a2a_error("CancelTask", {"id": tid}, -32001, "carol")
    canceled = relay.a2a("CancelTask", {"id": tid}).json()["result"]
    assert canceled["id"] == tid and canceled["status"]["state"] == MAPPING["cancelled"]
    assert relay.a2a("CancelTask", {"id": tid}).json()["result"]["status"]["state"] == MAPPING["cancelled"]
    accepted = relay.a2a("SendMessage", message(message_id="msg-2")).json()["result"]["task"]["id"]
    relay.ok("accept_task", {"task_id": accepted}, "bob")
    relay.a2a_error("CancelTask", {"id": accepted}, -32002)


def test_a2a_key_namespace_is_shared_with_http(relay: Relay) -> None:
    relay.grant("bob", "alice")
    sent = relay.a2a("SendMessage", message(message_id="stable-ü"),
                     headers={"Idempotency-Key": "ignored"}).json()
    tid = sent["result"]["task"]["id"]
    key = "a2a-" + hashlib.sha256("stable-ü".encode()).hexdigest()
    assert relay.send(key=key).json()["task"]["task_id"] == tid
    assert relay.send(key="ignored").json()["task"]["task_id"] != tid  # the header was not used
    assert relay.a2a("SendMessage", message(message_id="stable-ü")).json()["result"]["task"]["id"] == tid
    changed = message({"recipient_id": CREDS["bob"]["id"], "capability": CAPABILITY, "task": {"other": 1}},
                      "stable-ü")
    assert (relay.a2a_error("SendMessage", changed, -32050)["error"]["data"]
            == {"code": "IDEMPOTENCY_CONFLICT"})
    relay.ok("cancel_task", {"task_id": tid})
    relay.ok("delete_task_content", {"task_id": tid})
    assert (relay.a2a_error("SendMessage", message(message_id="stable-ü"), -32050)["error"]["data"]
            == {"code": "GONE"})


UNSUPPORTED: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("blocking", lambda p: p["configuration"].update(returnImmediately=False)),
    ("blocking by default", lambda p: p["configuration"].pop("returnImmediately")),
    ("no configuration", lambda p: p.pop("configuration")),
    ("context", lambda p: p["message"].update(contextId="ctx-1")),
    ("message metadata", lambda p: p["message"].update(metadata={"a": 1})),
    ("params metadata", lambda p: p.update(metadata={})),
    ("extensions", lambda p: p["message"].update(extensions=["https://example.org/ext"])),
    ("tenant", lambda p: p.update(tenant="t1")),
    ("push", lambda p: p["configuration"].update(pushNotificationConfig={"url": "https://example.org/hook"})),
    ("text part",
     lambda p: p["message"]["parts"].__setitem__(0, {"text": "hello", "mediaType": "text/plain"})),
    ("file part",
     lambda p: p["message"]["parts"].__setitem__(0, {"url": "https://example.org/f", "mediaType": MEDIA})),
    ("continuation", lambda p: p["message"].update(referenceTaskIds=["task_" + "0" * 32])),
]


@pytest.mark.parametrize("case", [name for name, _ in UNSUPPORTED])
def test_a2a_unsupported_items_are_refused_before_delivery(relay: Relay, case: str) -> None:
    relay.grant("bob", "alice")
    params = message()
    dict(UNSUPPORTED)[case](params)
    before = relay.snapshot()
    relay.a2a_error("SendMessage", params, -32004)
    assert relay.snapshot() == before and relay.inbox("bob") == []


def test_a2a_extension_header_is_unsupported(relay: Relay) -> None:
    relay.grant("bob", "alice")
    relay.a2a_error("SendMessage", message(), -32004, headers={"A2A-Extensions": "https://example.org/ext"})
    assert relay.inbox("bob") == []


def test_a2a_task_id_is_read_then_continuation_refused(relay: Relay) -> None:
    task = relay.task()
    relay.a2a_error("SendMessage", message(taskId=task["task_id"]), -32001, "carol")
    relay.a2a_error("SendMessage", message(taskId="task_" + "2" * 32), -32001)
    relay.a2a_error("SendMessage", message(taskId=task["task_id"]), -32004)
    assert len(relay.inbox("bob")) == 1


INVALID: list[tuple[str, Callable[[dict[str, Any]], None], int]] = [
    ("agent role", lambda p: p["message"].update(role="ROLE_AGENT"), -32602),
    ("two parts", lambda p: p["message"]["parts"].append(p["message"]["parts"][0]), -32602),
    ("no parts", lambda p: p["message"].update(parts=[]), -32602),
    ("no data", lambda p: p["message"]["parts"][0].pop("data"), -32602),
    ("other media type", lambda p: p["message"]["parts"][0].update(mediaType="text/plain"), -32602),
    ("data breaks schema", lambda p: p["message"]["parts"][0]["data"].pop("capability"), -32602),
    ("unknown data field", lambda p: p["message"]["parts"][0]["data"].update(extra=1), -32602),
    ("no message id", lambda p: p["message"].pop("messageId"), -32602),
    ("history length", lambda p: p["configuration"].update(historyLength=2**31), -32602),
    ("history length bool", lambda p: p["configuration"].update(historyLength=True), -32602),
    ("output modes not a list", lambda p: p["configuration"].update(acceptedOutputModes="application/json"),
     -32602),
    ("output modes not strings", lambda p: p["configuration"].update(acceptedOutputModes=[1]), -32602),
    ("output modes without json", lambda p: p["configuration"].update(acceptedOutputModes=["text/plain"]),
     -32005),
]


@pytest.mark.parametrize("case", [name for name, _, _ in INVALID])
def test_a2a_invalid_params(relay: Relay, case: str) -> None:
    relay.grant("bob", "alice")
    params = message()
    _, change, code = next(row for row in INVALID if row[0] == case)
    change(params)
    relay.a2a_error("SendMessage", params, code)
    assert relay.inbox("bob") == []


def test_a2a_output_modes_absent_or_empty_are_fine(relay: Relay) -> None:
    relay.grant("bob", "alice")
    params = message()
    params["configuration"].pop("acceptedOutputModes")
    assert relay.a2a("SendMessage", params).json()["result"]["task"]
    params = message(message_id="msg-2")
    params["configuration"]["acceptedOutputModes"] = []
    assert relay.a2a("SendMessage", params).json()["result"]["task"]


def test_a2a_message_id_bytes_at_the_limit(relay: Relay) -> None:
    relay.grant("bob", "alice")
    size = limit("a2a_message_id_bytes")
    assert relay.a2a("SendMessage", message(message_id="é" * (size // 2))).json()["result"]["task"]
    relay.a2a_error("SendMessage", message(message_id="é" * (size // 2) + "x"), -32602)


def test_a2a_envelope_errors(relay: Relay) -> None:
    assert relay.a2a_raw("{nope").json()["error"]["code"] == -32700
    batch = relay.a2a_raw(json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                       "params": {"id": "x"}}]))
    assert batch.json()["error"]["code"] == -32600
    note = relay.a2a_raw(json.dumps({"jsonrpc": "2.0", "method": "SendMessage", "params": message()}))
    assert note.json()["error"]["code"] == -32600
    for method in ("ListTasks", "SendStreamingMessage", "SubscribeToTask", "CreateTaskPushNotificationConfig",
                   "GetExtendedAgentCard", "message/send"):
        relay.a2a_error(method, {}, -32601)


def test_a2a_version_and_bearer(relay: Relay) -> None:
    relay.grant("bob", "alice")
    assert relay.a2a("SendMessage", message(), version=None).json()["error"]["code"] == -32009
    assert relay.a2a("SendMessage", message(), version="0.3").json()["error"]["code"] == -32009
    for who in (None, {"id": "x", "token": "forged"}):
        resp = relay.a2a("SendMessage", message(), who)
        assert resp.status_code == 401
        assert (resp.json()["error"]["code"] == -32050
                and resp.json()["error"]["data"] == {"code": "UNAUTHENTICATED"})
    assert relay.inbox("bob") == []


def test_a2a_limits(relay: Relay) -> None:
    relay.grant("bob", "alice")
    big = message({"recipient_id": CREDS["bob"]["id"], "capability": CAPABILITY,
                   "task": {"x": "a" * limit("a2a_request_bytes")}})
    resp = relay.a2a("SendMessage", big)
    assert resp.status_code == 200 and resp.json()["error"]["code"] == -32600
    deep: Any = {}
    for _ in range(limit("a2a_json_depth_count")):
        deep = {"d": deep}
    resp = relay.a2a("SendMessage",
                     message({"recipient_id": CREDS["bob"]["id"], "capability": CAPABILITY, "task": deep}))
    assert resp.json()["error"]["code"] == -32600
    too_large = message({"recipient_id": CREDS["bob"]["id"], "capability": CAPABILITY,
                         "task": {"x": "a" * limit("a2a_task_or_result_bytes")}})
    assert relay.a2a_error("SendMessage", too_large, -32050)["error"]["data"] == {"code": "TOO_LARGE"}
    assert relay.inbox("bob") == []


def test_a2a_relay_refusals(relay: Relay) -> None:
    assert relay.a2a_error("SendMessage", message(), -32050)["error"]["data"] == {"code": "NOT_ALLOWED"}
    relay.grant("bob", "alice")
    other = message({"recipient_id": CREDS["bob"]["id"], "capability": "not.advertised", "task": TASK})
    assert relay.a2a_error("SendMessage", other, -32050)["error"]["data"] == {"code": "NOT_ALLOWED"}
    assert relay.inbox("bob") == []


# =========================================================================== MCP


def test_mcp_requires_bearer(relay: Relay) -> None:
    resp = relay.mcp("tools/list", {}, None)
    assert resp.status_code == status("UNAUTHENTICATED") and resp.json()["error"]["code"] == "UNAUTHENTICATED"


def test_mcp_handshake_version(relay: Relay) -> None:
    init = relay.mcp("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}}).json()["result"]
    assert (init["protocolVersion"] == "2025-11-25"
            and init["capabilities"] == {"tools": {"listChanged": False}, "prompts": {}, "resources": {}}
            and init["serverInfo"])
    # it declares prompts and resources, offering none of either (the MCP-DECLARED-* rows)
    assert relay.mcp("prompts/list", {}).json()["result"] == {"prompts": []}
    assert relay.mcp("resources/list", {}).json()["result"] == {"resources": []}
    note = relay.mcp("notifications/initialized", notification=True)
    assert note.status_code == 202 and note.content == b""
    tools = relay.mcp("tools/list", {}).json()["result"]["tools"]
    expected = [name for name in SPEC["actions"] if name != "register_mailbox"]
    assert [t["name"] for t in tools] == expected
    for tool in tools:
        assert tool["inputSchema"] == SPEC["actions"][tool["name"]]["inputSchema"]
        assert tool["description"] == SPEC["actions"][tool["name"]]["description"]
    assert relay.mcp("bogus/method", {}).json()["error"]["code"] == -32601
    assert (relay.mcp("tools/call",
                      {"name": "register_mailbox", "arguments": {"label": "x"}}).json()["error"]["code"]
            == -32602)


def test_mcp_stateless_version(relay: Relay) -> None:
    headers = {"MCP-Protocol-Version": "2026-07-28"}
    assert "2026-07-28" in SPEC["protocols"]["mcp"]["versions"]
    result = relay.tool("get_mailbox", {}, "bob", headers)
    assert result["isError"] is False and result["structuredContent"]["mailbox_id"] == CREDS["bob"]["id"]
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    bad = relay.mcp("tools/list", {}, headers={"MCP-Protocol-Version": "1999-01-01"})
    assert bad.status_code == 400


def test_mcp_tool_calls_share_the_relay(relay: Relay) -> None:
    granted = relay.tool("allow_sender", {"sender_id": CREDS["alice"]["id"], "allowed": True}, "bob")
    assert granted["structuredContent"] == {"sender_id": CREDS["alice"]["id"], "allowed": True}
    body = {"recipient_id": CREDS["bob"]["id"], "capability": CAPABILITY, "task": TASK}
    refused = relay.tool("send_task", body)
    assert (refused["isError"] is True
            and refused["structuredContent"]["error"]["code"] == "IDEMPOTENCY_KEY_REQUIRED")
    sent = relay.tool("send_task", body, headers={"Idempotency-Key": "mcp-1"})
    assert sent["isError"] is False
    assert relay.send(key="mcp-1").json()["task"] == sent["structuredContent"]["task"]
    invalid = relay.tool("get_task", {"task_id": "nope"})
    assert invalid["isError"] is True and invalid["structuredContent"]["error"]["code"] == "VALIDATION_ERROR"
    hidden = relay.tool("get_task", {"task_id": sent["structuredContent"]["task"]["task_id"]}, "carol")
    assert hidden["structuredContent"]["error"]["code"] == "NOT_FOUND"


# =========================================================================== control


def test_control_reset_now_and_snapshot(relay: Relay) -> None:
    before = relay.snapshot()
    relay.grant("bob", "alice")
    relay.advance(HOUR)
    assert relay.control("now")["now"] == datetime.fromtimestamp(NOW + HOUR, UTC).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")
    assert relay.snapshot() != before
    relay.control("reset")
    assert relay.snapshot() == before
    assert relay.ok("get_mailbox", {}, "bob")["allowed_senders"] == []


def test_control_seed_mailboxes(relay: Relay) -> None:
    made = relay.seed(3, capabilities=["csv.clean"])
    assert len(made) == 3 and len({m["id"] for m in made}) == 3
    assert relay.ok("get_mailbox", {}, made[0])["capabilities"] == ["csv.clean"]
    assert relay.client.post("/_control/seed_mailboxes", json={"count": 0}).status_code == 400


def test_control_can_be_disabled() -> None:
    relay = Relay(control=False)
    assert relay.client.post("/_control/reset", json={}).status_code == 404
    assert relay.ok("get_mailbox", {}, "alice")["mailbox_id"] == CREDS["alice"]["id"]


def test_calls_at_once_each_get_their_own_thread():
    """The concurrent-replay checks mean "at once": even calls that end at once run in as
    many threads as there are calls (a pool would reuse a finished thread, and the
    replication-lag fault, which tells workers apart by thread, would go unseen)."""
    import threading

    from conformance.checks.idempotency import at_once

    for _ in range(20):
        idents = at_once(8, threading.get_ident)
        assert len(set(idents)) == 8
