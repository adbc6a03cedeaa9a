"""The Agent Plaza reference site: header checks in order, -32602 details that echo
nothing, invitations and consent, texts both ways and conversation pages, task states,
replays and CONTEXT_CONSUMED, a blocking send past the deadline, durable receive,
message status, inbox paging, bounded mailbox attention, part-2 commands, scopes and the
owner's credential (docs/agent-plaza.md)."""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

import conformance.protocols.plaza.protocol as plaza
from conformance.documents.limits import load_limits
from conformance.documents.readers import SpecDocument, read_errors, read_operations
from conformance.documents.schemas import SpecError, load_document, resolve_pointer, sha256_of
from conformance.model import Profile
from conformance.protocols.plaza.reference import create_app
from conformance.protocols.plaza.site import ReferenceConfig, reference_credentials
from conformance.run import profiles
from conformance.transport.inprocess import InProcessTransport

# profiles/agent-plaza.yaml points wait_maximum_s at /durableReceive/receive/..., which the
# document holds at /durableReceive/private_chat/receive/...; read it there until the profile says so.
WAIT_POINTER = "/durableReceive/private_chat/receive/single_request_wait_seconds/1"


def plaza_limits(settings: dict[str, Any], spec: dict[str, Any]) -> Any:
    block = copy.deepcopy(settings["limits"])
    try:
        resolve_pointer(spec, block["wait_maximum_s"]["pointer"])
    except SpecError:
        block["wait_maximum_s"]["pointer"] = WAIT_POINTER
    return load_limits(block, spec, settings["spec"])


def plaza_profile() -> Profile:
    """The profile built like load_profile does, without the package's complete()."""
    settings = profiles.read_settings(profiles.profile_path("agent-plaza"))
    spec_path = profiles.DATA_ROOT / settings["spec"]
    spec = load_document(spec_path)
    document = SpecDocument(spec, spec_path.read_text(encoding="utf-8"), settings["spec"], "agent-plaza")
    return Profile(
        name=settings["name"], title=settings["title"], spec_path=spec_path, spec_relpath=settings["spec"],
        spec=spec,
        spec_sha256=sha256_of(spec_path), settings=settings, operations=read_operations(document, settings),
        errors=read_errors(document, settings), requirements=[], faults={},
        create_reference=plaza.create_reference,
        probe=plaza.probe, limits=plaza_limits(settings, spec),
    )


PROFILE = plaza_profile()
SPEC = PROFILE.spec
EXT = SPEC["requiredHeaders"]["A2A-Extensions"]
CREDS = reference_credentials()
ENDPOINT = "/a2a/personal"
CODES = {row.name: row.code for row in PROFILE.errors.values()}
STATUSES = {row.name: row.http_status for row in PROFILE.errors.values()}
NOW = 1773144000.0  # 2026-03-10T12:00:00Z
HEADERS = {"Content-Type": "application/json", "A2A-Version": SPEC["requiredHeaders"]["A2A-Version"],
           "A2A-Extensions": EXT}


def limit(name: str) -> int:
    return int(PROFILE.limits[name].value)


def fresh() -> str:
    return str(uuid.uuid4())


class Site:
    """A fresh reference called in process, with helpers for the calls the tests make."""

    def __init__(self, **config: Any) -> None:
        self.ticks = 0
        self.app = create_app(PROFILE, ReferenceConfig(seed=11, clock=self.clock, **config))
        self.ref = self.app.state.reference
        self.client = httpx.Client(transport=InProcessTransport(self.app), base_url="http://reference")

    def clock(self) -> float:
        """Two millisecond ticks per reading: every stored time differs, so orders are exact."""
        self.ticks += 2
        return NOW + self.ticks / 1000

    # -- raw ----------------------------------------------------------------------------
    def post(self, body: Any, who: str | None = "alice",
             headers: dict[str, str | None] | None = None) -> httpx.Response:
        hdrs: dict[str, str] = {}
        for key, value in {**HEADERS, **({"Authorization": f"Bearer {CREDS[who]['token']}"} if who else {}),
                           **(headers or {})}.items():
            if value is not None:
                hdrs[key] = value
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.client.post(ENDPOINT, content=content, headers=hdrs)

    def rpc(self, method: str, params: Any, who: str = "alice", rid: Any = "r-1") -> dict[str, Any]:
        resp = self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, who)
        body: dict[str, Any] = resp.json()
        assert body["id"] == rid, body
        return body

    def ok(self, method: str, params: Any, who: str = "alice") -> dict[str, Any]:
        body = self.rpc(method, params, who)
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    def error(self, method: str, params: Any, name: str, who: str = "alice") -> dict[str, Any]:
        body = self.rpc(method, params, who)
        assert "error" in body, body
        error: dict[str, Any] = body["error"]
        assert error["code"] == CODES[name] and error["data"][0]["reason"] == name, error
        assert all(isinstance(v, str) for v in error["data"][0]["metadata"].values())
        return error

    # -- building blocks -----------------------------------------------------------------
    @staticmethod
    def params(part: dict[str, Any], *, context: str | None = None, to: str | None = None,
               message_id: str | None = None, immediate: bool | None = True, **extra: Any) -> dict[str, Any]:
        message: dict[str, Any] = {"messageId": message_id or fresh(), "role": "ROLE_USER", "parts": [part]}
        if context is not None:
            message["contextId"] = context
        if to is not None:
            message["metadata"] = {EXT: {"recipientId": CREDS[to]["id"] if to in CREDS else to}}
        params: dict[str, Any] = {"message": message, **extra}
        if immediate is not None:
            params.setdefault("configuration", {})["returnImmediately"] = immediate
        return params

    def text(self, who: str, text: str, **kwargs: Any) -> dict[str, Any]:
        task: dict[str, Any] = self.ok("SendMessage", self.params({"text": text}, **kwargs), who)["task"]
        return task

    def command(self, who: str, operation: str, context: str | None = None, **data: Any) -> dict[str, Any]:
        result = self.ok("SendMessage",
                         self.params({"data": {"operation": operation, **data}}, context=context), who)
        part = result["message"]["parts"][0]
        assert part["data"]["operation"] == operation and part["mediaType"] == "application/json"
        payload: dict[str, Any] = part["data"]
        return payload

    def command_error(self, who: str, operation: str, name: str, **data: Any) -> dict[str, Any]:
        return self.error("SendMessage", self.params({"data": {"operation": operation, **data}}), name, who)

    def invite(self, sender: str = "alice", recipient: str = "bob",
               text: str = "Hello, shall we compare notes?") -> str:
        task = self.text(sender, text, to=recipient)
        connection_id: str = task["contextId"]
        return connection_id

    def friends(self, a: str = "alice", b: str = "bob") -> str:
        """An accepted connection from a to b."""
        connection_id = self.invite(a, b)
        payload = self.command(b, "respond", connection_id=connection_id, decision="accept")
        assert payload["connection"]["state"] == "active"
        return connection_id

    def control(self, action: str, **args: Any) -> Any:
        resp = self.client.post(f"/_control/{action}", json=args)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def snapshot(self) -> str:
        return str(self.control("snapshot")["digest"])


@pytest.fixture
def site() -> Site:
    return Site()


def issues_of(error: dict[str, Any]) -> list[dict[str, str]]:
    metadata = error["data"][0]["metadata"]
    issues: list[dict[str, str]] = json.loads(metadata["validationIssues"])
    assert metadata["version"] == SPEC["parameterValidation"]["version"]
    assert len(issues) <= limit("validation_issues_count")
    return issues


# --------------------------------------------------------------------------- wire


def test_header_checks_in_order(site: Site) -> None:
    body = {"jsonrpc": "2.0", "id": "h", "method": "SendMessage",
            "params": site.params({"data": {"operation": "status"}})}
    resp = site.post(body, headers={"Content-Type": "text/plain", "A2A-Version": None})
    assert resp.status_code == 415 and resp.json()["error"]["code"] == CODES["INVALID_REQUEST"]
    resp = site.post(body, who=None, headers={"A2A-Version": None})
    assert resp.status_code == 401 and resp.json()["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
    resp = site.post(body, headers={"A2A-Version": "0.3", "A2A-Extensions": None})
    assert resp.status_code == 200 and resp.json()["error"]["code"] == CODES["VERSION_NOT_SUPPORTED"]
    resp = site.post(body, headers={"A2A-Extensions": "https://example.com/other"})
    assert resp.json()["error"]["code"] == CODES["EXTENSION_SUPPORT_REQUIRED"]
    resp = site.post(body, headers={"A2A-Extensions": f"https://example.com/other, {EXT}"})
    assert "result" in resp.json() and resp.json()["id"] == "h"


def test_envelope_and_method_errors(site: Site) -> None:
    assert site.post(b"{nope").json()["error"]["code"] == CODES["PARSE_ERROR"]
    no_id = site.post({"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "x"}}).json()
    assert no_id["error"]["code"] == CODES["INVALID_REQUEST"] and no_id["id"] is None
    assert (site.post({"jsonrpc": "1.0", "id": 1, "method": "GetTask"}).json()["error"]["code"]
            == CODES["INVALID_REQUEST"])
    for method, name in [("SendStreamingMessage", "UNSUPPORTED_OPERATION"),
                         ("SubscribeToTask", "UNSUPPORTED_OPERATION"),
                         ("CreateTaskPushNotificationConfig", "PUSH_NOTIFICATION_NOT_SUPPORTED"),
                         ("GetExtendedAgentCard", "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
                         ("Nope", "METHOD_NOT_FOUND")]:
        site.error(method, {}, name)
    assert site.rpc("GetTask", {"id": "missing"}, rid=7)["id"] == 7


def test_agent_card(site: Site) -> None:
    for path in ("/a2a/personal/agent-card.json", "/.well-known/agent-card.json"):
        card = site.client.get(path).json()
        assert card["supportedInterfaces"] == [{"url": "http://reference/a2a/personal",
                                                "protocolBinding": "JSONRPC",
                                                "protocolVersion": "1.0"}]
        assert ({k: v for k, v in card["capabilities"].items() if k != "extensions"}
                == SPEC["optionalCapabilities"])
        assert card["capabilities"]["extensions"] == [{"uri": EXT, "required": True}]
        assert card["security"] == [{"bearer": []}] and "bearer" in card["securitySchemes"]


SECRET = "s3cret-value-never-echoed"


@pytest.mark.parametrize("case, expected", [
    ("unknown key", {"path": "params.message", "code": "additional_property"}),
    ("lowercase role", {"path": "params.message.role", "code": "const"}),
    ("part kind", {"path": "params.message.parts[0]", "code": "additional_property"}),
    ("configuration in message", {"path": "params.message", "code": "additional_property"}),
    ("text too long", {"path": "params.message.parts[0].text", "code": "maxLength"}),
    ("both targets", {"path": "params.message", "code": "oneOf"}),
    ("no target", {"path": "params.message.contextId", "code": "required"}),
    ("unknown command", {"path": "params.message.parts[0].data.operation", "code": "enum"}),
    ("bad limit", {"path": "params.message.parts[0].data.limit", "code": "maximum"}),
    ("unknown data key", {"path": "params.message.parts[0].data", "code": "additional_property"}),
    ("after and before", {"path": "params.message.parts[0].data.before_seq", "code": "not"}),
    ("seq too big", {"path": "params.message.parts[0].data.after_seq", "code": "maximum"}),
    ("seq pattern", {"path": "params.message.parts[0].data.after_seq", "code": "pattern"}),
    ("context mismatch", {"path": "params.message.contextId", "code": "const"}),
    ("receive_cancel", {"path": "params.message.parts[0].data.operation", "code": "enum"}),
])
def test_invalid_params_detail(site: Site, case: str, expected: dict[str, str]) -> None:
    conn = str(uuid.uuid4())
    read = {"operation": "read_conversation", "connection_id": conn}
    params = {
        "unknown key": site.params({"text": "hi"}, to="bob"),
        "lowercase role": site.params({"text": SECRET}, to="bob"),
        "part kind": site.params({"kind": "text", "text": SECRET}, to="bob"),
        "configuration in message": site.params({"text": "hi"}, to="bob"),
        "text too long": site.params({"text": SECRET * 40}, to="bob"),
        "both targets": site.params({"text": SECRET}, to="bob", context=conn),
        "no target": site.params({"text": SECRET}),
        "unknown command": site.params({"data": {"operation": SECRET}}),
        "bad limit": site.params({"data": {**read, "limit": 51}}),
        "unknown data key": site.params({"data": {**read, SECRET: 1}}),
        "after and before": site.params({"data": {**read, "after_seq": "1", "before_seq": "9"}}),
        "seq too big": site.params({"data": {**read, "after_seq": "9223372036854775808"}}),
        "seq pattern": site.params({"data": {**read, "after_seq": "01"}}),
        "context mismatch": site.params({"data": read}, context=str(uuid.uuid4())),
        "receive_cancel": site.params({"data": {"operation": "receive_cancel", "client_key": conn}}),
    }[case]
    message = params["message"]
    if case == "unknown key":
        message[SECRET] = "x"
    if case == "lowercase role":
        message["role"] = "user"
    if case == "configuration in message":
        message["configuration"] = {"returnImmediately": True}
    before = site.snapshot()
    error = site.error("SendMessage", params, "A2A_INVALID_PARAMETERS")
    assert expected in issues_of(error), issues_of(error)
    metadata = error["data"][0]["metadata"]
    assert metadata["messageSent"] == "false" and metadata["sendHandleConsumedByThisRequest"] == "false"
    assert SECRET not in json.dumps(error) and SECRET[:6] not in json.dumps(error)
    assert site.snapshot() == before


def test_seq_maximum_accepted_and_integer_normalised(site: Site) -> None:
    conn = site.friends()
    page = site.command("alice", "read_conversation", connection_id=conn, after_seq="9223372036854775807")
    assert page["messages"] == [] and page["next_after_seq"] == "9223372036854775807"
    page = site.command("alice", "read_conversation", connection_id=conn, after_seq=0)
    assert page["next_after_seq"] == "1" and page["messages"][0]["seq"] == "1"


def test_other_methods_params(site: Site) -> None:
    error = site.error("GetTask", {"id": "x", "extra": SECRET}, "A2A_INVALID_PARAMETERS")
    assert issues_of(error) == [{"path": "params", "code": "additional_property"}]
    assert "messageSent" not in error["data"][0]["metadata"]
    site.error("CancelTask", {}, "A2A_INVALID_PARAMETERS")
    site.error("ListTasks", {"pageSize": 101}, "A2A_INVALID_PARAMETERS")
    site.error("SendMessage", site.params({"data": {"operation": "status"}},
                                         configuration={"taskPushNotificationConfig": {}}),
               "PUSH_NOTIFICATION_NOT_SUPPORTED")


def test_issue_list_is_bounded(site: Site) -> None:
    data = {"operation": "discover", **{f"k{i}": i for i in range(20)}}
    params = site.params({"data": data})
    params["message"].pop("role")
    params["message"].pop("messageId")
    params["other"] = 1
    error = site.error("SendMessage", params, "A2A_INVALID_PARAMETERS")
    assert 0 < len(issues_of(error)) <= limit("validation_issues_count")


# --------------------------------------------------------------------------- friendship


def test_invitation_accept_texts_and_pages(site: Site) -> None:
    task = site.text("alice", "Hello bob", to="bob")
    conn = task["contextId"]
    ext = task["metadata"][EXT]
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED" and ext["connection_state"] == "invitation"
    assert ext["receipt"]["message_sent"] is True and ext["receipt"]["record_type"] == "send_receipt"
    assert set(ext["receipt"]["message"]) == {"id", "seq", "created_at", "sender", "sender_kind",
                                              "record_type"}
    # the invitation takes no further texts from either side until accepted
    site.error("SendMessage", site.params({"text": "again"}, context=conn), "NOT_PERMITTED")
    site.error("SendMessage", site.params({"text": "hi"}, context=conn), "NOT_PERMITTED", who="bob")
    # the invitee reads it without accepting; the inviter cannot accept
    page = site.command("bob", "read_conversation", connection_id=conn)
    assert [m["text"] for m in page["messages"]] == ["Hello bob"]
    assert site.command("bob", "friends")["friends"][0]["state"] == "invitation"
    site.command_error("alice", "respond", "NOT_PERMITTED", connection_id=conn, decision="accept")
    site.command_error("carol", "respond", "NOT_FOUND", connection_id=conn, decision="accept")
    assert (site.command("bob", "respond", connection_id=conn, decision="accept")["connection"]["state"]
            == "active")
    # texts both ways, several in a row
    for i in range(30):
        site.text("bob" if i % 3 else "alice", f"message {i + 2}", context=conn)
    # latest view: the newest 20 in chronological order, then older pages by next_request
    page = site.command("alice", "read_conversation", connection_id=conn)
    assert page["view"] == "latest" and page["round_no"] == 1 and page["has_older"] is True
    seqs = [int(m["seq"]) for m in page["messages"]]
    assert seqs == list(range(12, 32))
    older = page["next_request"]
    assert older == {"operation": "read_conversation", "connection_id": conn, "round_no": 1, "view": "latest",
                     "before_seq": "12", "limit": 20}
    page = site.command("alice", "read_conversation", **{k: v for k, v in older.items() if k != "operation"})
    assert [int(m["seq"]) for m in page["messages"]] == list(range(1, 12)) and page["next_request"] is None
    # forward history followed to the end
    seen: list[int] = []
    request: dict[str, Any] | None = {"operation": "read_conversation", "connection_id": conn,
                                      "after_seq": "0", "limit": 7}
    while request is not None:
        page = site.command("alice", "read_conversation",
                            **{k: v for k, v in request.items() if k != "operation"})
        seen += [int(m["seq"]) for m in page["messages"]]
        assert page["has_more"] == (page["next_request"] is not None)
        request = page["next_request"]
    assert seen == list(range(1, 32))
    # missing and foreign look the same
    missing = site.command_error("alice", "read_conversation", "NOT_FOUND", connection_id=fresh())
    foreign = site.command_error("carol", "read_conversation", "NOT_FOUND", connection_id=conn)
    assert missing["message"] == foreign["message"]


def test_consent_controls(site: Site) -> None:
    conn = site.invite("alice", "bob")
    site.command_error("alice", "respond", "NOT_PERMITTED", connection_id=conn, decision="decline")
    assert (site.command("bob", "respond", connection_id=conn, decision="decline")["connection"]["state"]
            == "declined")
    site.command_error("bob", "respond", "INVALID_STATE", connection_id=conn, decision="accept")
    # a new invitation after a decline opens a new connection; the inviter may withdraw it
    conn2 = site.invite("alice", "bob")
    assert conn2 != conn
    assert (site.command("alice", "respond", connection_id=conn2, decision="close")["connection"]["state"]
            == "closed")
    conn3 = site.friends("alice", "bob")
    # rounds: complete with the current round_no; the next text opens round 2
    site.command_error("alice", "respond", "INVALID_STATE", connection_id=conn3, decision="complete",
                       round_no=2)
    assert (site.command("alice", "respond", connection_id=conn3, decision="complete",
                         round_no=1)["connection"]["round_no"] == 1)
    assert site.text("bob", "new round", context=conn3)["metadata"][EXT]["round_no"] == 2
    assert (site.command("bob", "respond", connection_id=conn3, decision="complete")["connection"]["round_no"]
            == 2)
    assert site.text("alice", "round three", context=conn3)["metadata"][EXT]["round_no"] == 3
    # block stops the peer's texts and invitations until unblock
    assert (site.command("bob", "friend_control", connection_id=conn3,
                         decision="block")["connection"]["state"] == "blocked")
    site.error("SendMessage", site.params({"text": "hi"}, context=conn3), "NOT_PERMITTED")
    site.error("SendMessage", site.params({"text": "hi"}, to="bob"), "NOT_PERMITTED")
    site.command_error("alice", "friend_control", "NOT_PERMITTED", connection_id=conn3, decision="unblock")
    assert (site.command("bob", "friend_control", connection_id=conn3,
                         decision="unblock")["connection"]["state"] == "active")
    site.text("alice", "thanks", context=conn3)
    assert (site.command("alice", "friend_control", connection_id=conn3,
                         decision="remove")["connection"]["state"] == "removed")
    site.command_error("bob", "read_conversation", "NOT_PERMITTED", connection_id=conn3)
    # stop: no more sends, status says so
    assert site.command("carol", "stop") == {"operation": "stop", "stopped": True}
    assert site.command("carol", "status")["stopped"] is True
    site.error("SendMessage", site.params({"text": "hi"}, to="alice"), "NOT_PERMITTED", who="carol")


def test_status_discover_friends(site: Site) -> None:
    status = site.command("alice", "status")
    assert status["visitor"] == {"id": CREDS["alice"]["id"], "alias": "Alice"} and status["stopped"] is False
    found = site.command("alice", "discover", q="reading")
    ids = [a["id"] for a in found["agents"]]
    assert ids and CREDS["alice"]["id"] not in ids and found["next_after"] is None
    first = site.command("alice", "discover", limit=1)
    second = site.command("alice", "discover", limit=1, after=first["next_after"])
    assert first["agents"][0]["id"] < second["agents"][0]["id"]
    conn = site.friends()
    friends = site.command("bob", "friends")["friends"]
    assert friends == [{"connection_id": conn, "state": "active", "round_no": 1,
                        "peer": {"id": CREDS["alice"]["id"], "alias": "Alice"}}]


# --------------------------------------------------------------------------- tasks


def test_task_states(site: Site) -> None:
    conn = site.friends()
    task = site.text("alice", "question", context=conn)
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    working = site.ok("GetTask", {"id": task["id"]})
    assert working["status"]["state"] == "TASK_STATE_WORKING"
    assert working["metadata"][EXT]["focused_request"] == {"method": "GetTask", "params": {"id": task["id"]}}
    assert working["metadata"][EXT]["mailbox_attention"]["version"] == SPEC["mailboxAttention"]["version"]
    site.error("GetTask", {"id": task["id"]}, "TASK_NOT_FOUND", who="bob")
    site.text("bob", "answer", context=conn)
    done = site.ok("GetTask", {"id": task["id"]})
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [m["role"] for m in done["history"]] == ["ROLE_USER", "ROLE_AGENT"]
    assert "history" not in site.ok("GetTask", {"id": task["id"], "historyLength": 0})
    site.error("CancelTask", {"id": task["id"]}, "TASK_NOT_CANCELABLE")
    other = site.text("alice", "another", context=conn)
    site.error("CancelTask", {"id": other["id"]}, "TASK_NOT_FOUND", who="bob")
    assert site.ok("CancelTask", {"id": other["id"]})["status"]["state"] == "TASK_STATE_CANCELED"
    site.error("CancelTask", {"id": other["id"]}, "TASK_NOT_CANCELABLE")
    site.text("bob", "late", context=conn)
    assert site.ok("GetTask", {"id": other["id"]})["status"]["state"] == "TASK_STATE_CANCELED"


def test_list_tasks(site: Site) -> None:
    conn = site.friends()
    site.text("bob", "bob's own", context=conn)
    mine = [site.text("alice", f"t{i}", context=conn)["id"] for i in range(4)]
    page = site.ok("ListTasks", {"pageSize": 3, "historyLength": 0})
    assert page["totalSize"] == 5 and page["pageSize"] == 3 and page["nextPageToken"]
    assert ([t["id"] for t in page["tasks"]] == mine[::-1][:3]
            and all("history" not in t for t in page["tasks"]))
    rest = site.ok("ListTasks", {"pageSize": 3, "pageToken": page["nextPageToken"]})
    assert len(rest["tasks"]) == 2 and rest["nextPageToken"] == ""
    assert site.ok("ListTasks", {"contextId": fresh()})["totalSize"] == 0


def test_replay_and_context_consumed(site: Site) -> None:
    conn = site.friends()
    params = site.params({"text": "only once"}, context=conn)
    first = site.ok("SendMessage", params)["task"]
    before = site.snapshot()
    again = site.ok("SendMessage", params)["task"]
    receipt = again["metadata"][EXT]["receipt"]
    assert (again["id"] == first["id"] and receipt["message_sent"] is False
            and receipt["original_message_sent"] is True)
    assert receipt["message"] == first["metadata"][EXT]["receipt"]["message"]
    assert site.snapshot() == before
    other = copy.deepcopy(params)
    other["message"]["parts"][0]["text"] = "a different draft"
    site.error("SendMessage", other, "CONTEXT_CONSUMED")
    assert site.snapshot() == before
    # a refused request consumes nothing: the same messageId works once the refusal is gone
    refused = site.params({"text": "to carol"}, to="carol", message_id="intent-1")
    site.command("carol", "friend_control", connection_id=site.invite("carol", "alice"), decision="block")
    site.error("SendMessage", refused, "NOT_PERMITTED")
    site.ok("SendMessage", site.params({"data": {"operation": "status"}}, message_id="intent-2"))
    site.ok("SendMessage", site.params({"data": {"operation": "status"}}, message_id="intent-2"))
    # a replay rechecks the controls: after the peer blocks, the same intent is refused
    site.command("bob", "friend_control", connection_id=conn, decision="block")
    site.error("SendMessage", params, "NOT_PERMITTED")


def test_blocking_send_deadline(site: Site) -> None:
    conn = site.friends()
    site.control("set_deadline", seconds=0.2)
    params = site.params({"text": "waiting"}, context=conn, immediate=None)
    error = site.error("SendMessage", params, "DEADLINE_EXCEEDED")
    metadata = error["data"][0]["metadata"]
    assert metadata["retryable"] == "true"
    task = site.ok("GetTask", {"id": metadata["taskId"]})
    assert task["status"]["state"] == "TASK_STATE_WORKING"
    site.text("bob", "reply", context=conn)
    again = site.ok("SendMessage", params)["task"]  # the replay finds the peer's message at once
    assert again["id"] == metadata["taskId"] and again["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_site_configured_with_a_shorter_deadline_keeps_it_across_resets() -> None:
    """The tests' sites without control serve a shorter deadline than the document's 20 s."""
    site = Site(deadline_s=0.2)
    assert site.ref.deadline_s == 0.2 and PROFILE.limits["deadline_s"].value == 20
    site.ref.reset()
    conn = site.friends()
    waiting = site.params({"text": "waiting"}, context=conn, immediate=None)
    site.error("SendMessage", waiting, "DEADLINE_EXCEEDED")


def test_blocking_send_completes_when_the_peer_writes(site: Site) -> None:
    """The wait holds no lock: a peer's text during it completes the task (concurrent requests)."""
    conn = site.friends()
    site.control("set_deadline", seconds=5)

    def body(who: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"headers": {**HEADERS, "Authorization": f"Bearer {CREDS[who]['token']}"},
                "json": {"jsonrpc": "2.0", "id": who, "method": "SendMessage", "params": params}}

    async def both() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=site.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://reference") as client:
            async def peer() -> httpx.Response:
                await asyncio.sleep(0.1)
                return await client.post(ENDPOINT,
                                         **body("bob", site.params({"text": "here I am"}, context=conn)))
            blocking = client.post(ENDPOINT, **body(
                "alice", site.params({"text": "are you there?"}, context=conn, immediate=None)))
            return list(await asyncio.gather(blocking, peer()))

    started = time.monotonic()
    waited, _ = asyncio.run(both())
    task = waited.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and time.monotonic() - started < 2
    assert [m["role"] for m in task["history"]] == ["ROLE_USER", "ROLE_AGENT"]


def test_in_process_a_blocking_send_lets_the_peer_in(site: Site) -> None:
    """The kit's in-process transport serves one request at a time; a blocking send lets
    others run while it waits (conformance.kit.reference.let_others_in), so the peer's text,
    sent from another thread meanwhile, completes it instead of queueing behind it until
    the deadline."""
    conn = site.friends()
    site.control("set_deadline", seconds=30)

    def tasks() -> dict[str, str]:
        return {t["id"]: t["status"]["state"] for t in site.ok("ListTasks", {"contextId": conn})["tasks"]}

    before = tasks()
    with ThreadPoolExecutor(max_workers=1) as pool:
        params = site.params({"text": "are you there?"}, context=conn, immediate=None)
        waiting = pool.submit(site.post, {"jsonrpc": "2.0", "id": "w", "method": "SendMessage",
                                          "params": params})
        while "TASK_STATE_WORKING" not in [state for task, state in tasks().items() if task not in before]:
            time.sleep(0.01)  # alice's send is stored and waiting
        site.text("bob", "here I am", context=conn)
        task = waiting.result(timeout=60).json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


# --------------------------------------------------------------------------- durable receive


def test_receive_pull_redelivery_ack(site: Site) -> None:
    key = fresh()
    empty = site.command("bob", "receive_pull", client_key=key)
    assert empty["batch"] is None and empty["more_available"] is False and empty["ack_request"] is None
    conn = site.invite("alice", "bob")
    site.command("bob", "respond", connection_id=conn, decision="accept")
    site.text("alice", "one", context=conn)
    site.text("alice", "two", context=conn)
    first = site.command("bob", "receive_pull", client_key=key, limit=2)
    batch = first["batch"]
    assert ([i["kind"] for i in batch["items"]] == ["friend_invitation", "friend_message"]
            and first["more_available"] is True)
    assert len(batch["view_id"]) == 64 and len(batch["receipt"]) == 43 and uuid.UUID(batch["batch_id"])
    item = batch["items"][1]
    assert item["read_request"] == {"operation": "read_conversation", "connection_id": conn, "round_no": 1}
    envelope = item["a2a_read_request"]
    assert envelope["method"] == "SendMessage" and envelope["params"]["message"]["role"] == "ROLE_USER"
    assert envelope["params"]["message"]["parts"][0]["data"] == item["read_request"]
    assert "result" in site.rpc("SendMessage", envelope["params"], who="bob")
    # redelivered unchanged
    assert site.command("bob", "receive_pull", client_key=key, limit=5)["batch"] == batch
    status = site.command("bob", "receive_status", client_key=key)
    assert status == {"operation": "receive_status", "client_key": key, "pending_count": 3,
                      "outstanding_batch_id": batch["batch_id"]}
    ack = {k: v for k, v in first["ack_request"].items() if k != "operation"}
    done = site.command("bob", "receive_ack", **ack)
    assert done == {"operation": "receive_ack", "acknowledged": True, "batch_id": batch["batch_id"],
                    "acknowledged_count": 2}
    assert site.command("bob", "receive_ack", **ack) == done  # after a lost answer
    site.command_error("bob", "receive_ack", "NOT_FOUND", **{**ack, "receipt": "A" * 43})
    site.command_error("alice", "receive_ack", "NOT_FOUND", **ack)
    nxt = site.command("bob", "receive_pull", client_key=key)
    assert nxt["batch"]["batch_id"] != batch["batch_id"] and nxt["more_available"] is False
    assert [i["kind"] for i in nxt["batch"]["items"]] == ["friend_message"]
    # another key starts at the oldest
    assert site.command("bob", "receive_status", client_key=fresh())["pending_count"] == 3


def test_receive_wait_is_bounded_by_the_deadline(site: Site) -> None:
    site.control("set_deadline", seconds=0.1)
    answer = site.command("bob", "receive_pull", client_key=fresh(), wait_seconds=25)
    assert answer["batch"] is None and answer["long_poll_allowed"] is True


# --------------------------------------------------------------------------- message status and inbox


def test_message_status(site: Site) -> None:
    conn = site.friends()
    own = site.text("alice", "did you see this?", context=conn)["metadata"][EXT]["receipt"]["message"]
    status = site.command("alice", "message_status", connection_id=conn)
    assert status["message_id"] == own["id"] and status["status"] == "stored"
    assert status["stored"] is True and status["peer_context_retrieval_observed"] is False
    site.command("bob", "read_conversation", connection_id=conn)
    assert site.command("alice", "message_status", connection_id=conn, message_id=own["id"])["status"] == (
        "peer_context_retrieval_observed")
    reply = site.text("bob", "yes", context=conn)["metadata"][EXT]["receipt"]["message"]
    final = site.command("alice", "message_status", connection_id=conn, message_id=own["id"])
    assert final["status"] == "later_peer_message_observed" and final["later_peer_message_observed"] is True
    site.command_error("alice", "message_status", "NOT_FOUND", connection_id=conn, message_id=reply["id"])
    site.command_error("carol", "message_status", "NOT_FOUND", connection_id=conn)


def test_inbox_paging_and_notices(site: Site) -> None:
    agents = site.control("seed_agents", count=5, invite="alice")["agents"]
    conn = site.friends("bob", "alice")
    seen: list[str] = []
    request: dict[str, Any] | None = {"operation": "inbox", "limit": 2}
    while request is not None:
        page = site.command("alice", **request)
        seen += [c["connection_id"] for c in page["conversations"]]
        request = page["next_page_request"]
        if request is not None:
            assert set(request) >= {"before_updated_at", "before_id"}
    assert len(seen) == len(set(seen)) == 6 and seen[0] == conn  # the accepted one was updated last
    newest = site.command("alice", "inbox", limit=1)["conversations"][0]
    by_time = site.command("alice", "inbox", before_updated_at=newest["updated_at"])["conversations"]
    # a lone before_updated_at bounds by time
    assert newest["connection_id"] not in [c["connection_id"] for c in by_time]
    assert {a["connection_id"] for a in agents} <= set(seen)
    notices = site.command("alice", "inbox", limit=4)
    ids = [int(n["notice_id"]) for n in notices["notices"]]
    assert ids == sorted(ids) and len(ids) == 4
    rest = site.command("alice", **notices["next_notices_request"])
    assert [int(n["notice_id"]) for n in rest["notices"]][0] > ids[-1]
    full = site.params({"data": {"operation": "inbox", "view": "full"}})
    assert (site.ok("SendMessage", full)["message"]["parts"][0]["data"]["conversations"][0]
            ["last_message"]["text"])
    before = site.snapshot()
    site.ok("SendMessage", full)  # a replay re-runs the read and changes nothing
    assert site.snapshot() == before


def test_inbox_summary_bounds(site: Site) -> None:
    site.control("seed_agents", count=40, invite="bob")
    attention = site.command("bob", "inbox_summary")["mailbox_attention"]
    assert attention["version"] == SPEC["mailboxAttention"]["version"]
    assert attention["scan_truncated"] is True and attention["more_attention_available"] is True
    assert attention["pending_received_invitation_count"] == limit("attention_scan_count")
    items = attention["external_agent_items"]
    assert len(items) == limit("attention_items_count")
    assert (items[0]["decision_options"] == ["accept", "decline"]
            and items[0]["read_request"]["operation"] == "read_conversation")
    assert attention["authority"] == SPEC["mailboxAttention"]["authority"]
    assert all(group in attention for group in SPEC["mailboxAttention"]["groups"])
    quiet = site.command("carol", "inbox_summary")["mailbox_attention"]
    assert quiet["scan_truncated"] is False and quiet["external_agent_items"] == []


def test_every_command_of_the_document_is_served(site: Site) -> None:
    """All 52 branches have a handler (none is answered UNSUPPORTED_OPERATION), and an
    invalid one never echoes what was sent."""
    served = set(site.app.state.reference.command_scopes)
    assert served == {b["properties"]["operation"]["const"] for b in SPEC["schemas"]["command"]["anyOf"]}
    site.command("alice", "group_list", filter="all")
    error = site.command_error("alice", "group_list", "A2A_INVALID_PARAMETERS", filter=SECRET)
    assert SECRET not in json.dumps(error)


# --------------------------------------------------------------------------- credentials


def test_scopes_and_owner_credential(site: Site) -> None:
    conn = site.friends()
    site.error("SendMessage", site.params({"text": "from reader"}, context=conn), "FORBIDDEN", who="reader")
    page = site.command("reader", "read_conversation", connection_id=conn)
    assert page["messages"][0]["sender"] == CREDS["alice"]["id"]
    assert sorted(site.command("reader", "status")["scopes"]) == sorted(CREDS["reader"]["scopes"])
    site.command_error("reader", "stop", "FORBIDDEN")
    resp = site.post({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                      "params": site.params({"data": {"operation": "status"}})},
                     who="owner")
    assert resp.status_code == STATUSES["FORBIDDEN"] == 403
    assert resp.json()["error"]["data"][0]["reason"] == "FORBIDDEN"


def test_control_reset_and_snapshot(site: Site) -> None:
    start = site.snapshot()
    site.friends()
    assert site.snapshot() != start
    site.control("reset")
    assert site.snapshot() == start
    assert site.client.post("/_control/seed_agents", json={"count": 81, "invite": "alice"}).status_code == 400
    closed = create_app(PROFILE, ReferenceConfig(control=False))
    client = httpx.Client(transport=InProcessTransport(closed), base_url="http://reference")
    assert client.post("/_control/reset").status_code == 404


def test_validators_are_compiled_once_per_document_and_patched_per_instance() -> None:
    """Every run makes a reference (a selftest hundreds): the compiled validators are shared,
    but a fault that replaces a command's validator changes its own instance only."""
    first, second = Site().ref, Site().ref
    assert first.validators.send_shell is second.validators.send_shell
    assert first.validators.commands == second.validators.commands
    first.validators.commands["status"] = None
    assert second.validators.commands["status"] is not None
    assert Site().ref.validators.commands["status"] is not None
