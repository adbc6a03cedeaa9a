"""The Canon reference: every verb over both bindings against the spec's result
schemas, the behaviours the spec describes, and that each named fault changes
exactly the behaviour its docstring names."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from conformance.documents.schemas import inline_refs, schema_errors
from conformance.protocols.canon.reference import MEDIA_URL, ReferenceConfig, create_app, spec_verbs
from conformance.run.profiles import load_profile
from tests.mcp_session import RawMcp

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = yaml.safe_load((ROOT / "profiles" / "canon-verbs.yaml").read_text(encoding="utf-8"))
SPEC = json.loads((ROOT / SETTINGS["spec"]).read_text(encoding="utf-8"))
VERBS = spec_verbs(SPEC, SETTINGS)
NOW = 1_750_000_000.0
PROFILE = load_profile("canon-verbs")
# the Canon reference's own faults (the profile's, less the shared MCP server's)
FAULTS = {name: fault for name, fault in PROFILE.faults.items()
          if fault.__module__.startswith("conformance.protocols.canon.")}
LIMITS = PROFILE.limits  # read from the spec (profiles/canon-verbs.yaml, limits:)
INTERACTION_CEILING_MS = LIMITS["input_ceiling_ms"].value
APPROVAL_CEILING_MS = LIMITS["approval_ceiling_ms"].value
CARD_MAX_BYTES = LIMITS["card_envelope_bytes"].value


def status(code: str) -> int:
    return int(SETTINGS["errors"][code]["status"])


def result_schema(verb: str) -> dict[str, Any]:
    return inline_refs({"$ref": f"#/$defs/{verb}_result"}, SPEC)


def assert_result(verb: str, result: Any) -> None:
    assert schema_errors(result_schema(verb), result) == [], (verb, result)


CARD = {"schema": "canon.card.v1", "title": "Deploy", "fallbackText": "Deploy?",
        "blocks": [{"type": "text", "text": "ship it"}]}
ACTION_CARD = {**CARD, "blocks": [{"type": "actions", "actions": [{"id": "go", "label": "Go"}]}]}


class World:
    """A TestClient on a fresh seeded reference with helpers for both bindings."""

    def __init__(self, fault: str | None = None, **config: Any) -> None:
        config.setdefault("seed", 7)
        config.setdefault("clock", lambda: NOW)
        self.app = create_app(PROFILE, ReferenceConfig(**config))
        self.ref = self.app.state.reference
        if fault:
            FAULTS[fault](self.ref)
        self.client = TestClient(self.app)
        self.roles: dict[str, str] = self.control("world")["roles"]
        self.rpc_id = 0
        self.mcp = RawMcp(self.client)

    def __getitem__(self, role: str) -> str:
        return self.roles[role]

    def http(self, verb: str, args: Any) -> tuple[int, Any]:
        resp = self.client.post(f"/verbs/{verb}", json=args)
        return resp.status_code, resp.json()

    def ok(self, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        code, body = self.http(verb, args)
        assert code == 200, (verb, body)
        assert_result(verb, body)
        return body

    def err(self, verb: str, args: Any, code: str) -> dict[str, Any]:
        http_status, body = self.http(verb, args)
        assert (http_status, body["error"]["code"]) == (status(code), code), body
        return body

    def rpc(self, method: str, params: Any = None) -> dict[str, Any]:
        self.rpc_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.rpc_id, "method": method}
        if params is not None:
            msg["params"] = params
        if method == "initialize":
            resp = self.mcp.start({}, params.get("protocolVersion"))
        else:
            resp = self.mcp.post(msg, {})
        assert resp.status_code == 200
        return resp.json()

    def tool(self, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        return self.rpc("tools/call", {"name": verb, "arguments": args})["result"]

    def control(self, action: str, args: dict[str, Any] | None = None, expect: int = 200) -> Any:
        resp = self.client.post(f"/_control/{action}", json=args or {})
        assert resp.status_code == expect, resp.text
        return resp.json()

    def digest(self) -> str:
        return self.control("snapshot")["digest"]

    def messages(self, conv: str, viewer: str | None = None) -> list[dict[str, Any]]:
        return self.control("messages", {"conversationId": conv, "as": viewer or self["agent"]})["messages"]

    def script(self, verb: str, response: dict[str, Any]) -> None:
        self.control("script", {"verb": verb, "response": response})


def success_calls(w: World) -> dict[str, Callable[[], dict[str, Any]]]:
    """One successful input per verb (each a thunk run on its own fresh world)."""
    return {
        "send_to": lambda: {"targetConversationId": w["group"], "text": "hi"},
        "request_input": lambda: {"prompt": "Which one?"},
        "request_approval": lambda: {"toolName": "shell", "toolSummary": "rm -rf build", "mode": "detached"},
        "check_approval": lambda: {"approvalId": "unknown-id"},
        "send_card": lambda: {"card": CARD},
        "request_card": lambda: {"card": ACTION_CARD},
        "share_contact": lambda: {"conversationId": w["group"], "contactUserId": w["open_user"]},
        "react": lambda: {"conversationId": w["owner_chat"], "messageId": w["owner_message"], "emoji": "👍"},
        "forward": lambda: {"sourceConversationId": w["owner_chat"], "targetConversationId": w["group"],
                            "messageId": w["owner_message"]},
        "create_group": lambda: {"memberIds": [w["open_user"]], "name": "G"},
        "add_member": lambda: {"conversationId": w["agent_group"], "userId": w["open_user"]},
        "remove_member": lambda: {"conversationId": w["agent_group"], "userId": w["member"]},
        "leave_conversation": lambda: {"conversationId": w["group"]},
        "list_contacts": lambda: {},
        "list_conversations": lambda: {"limit": 2},
        "no_reply": lambda: {},
    }


def test_every_spec_verb_has_a_success_case() -> None:
    assert set(success_calls(World())) == set(VERBS)


@pytest.mark.parametrize("verb", VERBS)
def test_verb_result_valid_over_http_and_same_over_mcp(verb: str) -> None:
    a, b = World(), World()
    http_result = a.ok(verb, success_calls(a)[verb]())
    mcp = b.tool(verb, success_calls(b)[verb]())
    assert mcp["isError"] is False
    assert mcp["structuredContent"] == http_result
    assert json.loads(mcp["content"][0]["text"]) == http_result


def test_mcp_handshake_and_tools() -> None:
    w = World()
    init = w.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})["result"]
    assert init["protocolVersion"] == "2025-06-18" and init["capabilities"]["tools"] == {"listChanged": False}
    resp = w.client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                         headers=w.mcp.headers({}))
    assert resp.status_code == 202 and resp.content == b""
    tools = w.rpc("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == VERBS
    by_name = {t["name"]: t for t in tools}
    assert by_name["send_to"]["inputSchema"] == inline_refs({"$ref": "#/$defs/send_to_input"}, SPEC)
    assert by_name["list_contacts"]["description"] == "list_contacts"
    assert w.rpc("tools/call", {"name": "nope", "arguments": {}})["error"]["code"] == -32602
    assert w.rpc("bogus/method")["error"]["code"] == -32601
    err = w.tool("share_contact", {"conversationId": w["group"], "contactUserId": w["stranger"]})
    assert err["isError"] is True and err["structuredContent"]["error"]["code"] == "NOT_A_CONTACT"


def test_http_errors_use_profile_statuses() -> None:
    w = World()
    resp = w.client.post("/verbs/not_a_verb", json={})
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "UNKNOWN_VERB"
    resp = w.client.post("/verbs/list_contacts", content=b"{not json")
    assert resp.status_code == status("VALIDATION_ERROR")
    w.err("list_contacts", [1], "VALIDATION_ERROR")
    w.err("list_contacts", {"extra": 1}, "VALIDATION_ERROR")
    w.err("send_to", {"targetUserId": w["open_user"], "targetConversationId": w["group"], "text": "x"},
          "VALIDATION_ERROR")
    w.err("send_to", {"targetUserId": w["open_user"]}, "VALIDATION_ERROR")  # no text, no attachments
    w.err("send_to", {"targetConversationId": "nope", "text": "x"}, "CONVERSATION_NOT_FOUND")
    w.err("send_to", {"targetUserId": "nobody", "text": "x"}, "USER_NOT_FOUND")
    w.err("react", {"conversationId": w["group"], "messageId": "nope", "emoji": "x"}, "MESSAGE_NOT_FOUND")
    w.err("share_contact", {"conversationId": w["group"], "contactUserId": w["stranger"]}, "NOT_A_CONTACT")
    w.err("remove_member", {"conversationId": w["group"], "userId": w["member"]}, "NOT_GROUP_ADMIN")
    w.err("add_member", {"conversationId": w["agent_group"], "userId": w["closed_user"]}, "ADMISSION_DENIED")
    w.err("add_member", {"conversationId": w["agent_group"], "userId": "nobody"}, "USER_NOT_FOUND")
    w.err("create_group", {"memberIds": [w["closed_user"], "nobody"]}, "GROUP_EMPTY")
    w.err("send_to", {"targetConversationId": w["group"], "text": "x",
                      "messageOptions": {"mentions": [w["stranger"]]}}, "INVALID_MENTION")
    w.ok("leave_conversation", {"conversationId": w["group"]})
    w.err("leave_conversation", {"conversationId": w["group"]}, "NOT_A_MEMBER")
    w.err("send_to", {"targetConversationId": w["group"], "text": "x"}, "NOT_A_MEMBER")
    for bad in (".", "..", "__x__"):
        w.err("send_to", {"targetConversationId": w["agent_group"], "text": "x",
                          "messageOptions": {"messageId": bad}}, "VALIDATION_ERROR")


def test_rejected_calls_change_nothing() -> None:
    w = World()
    w.script("request_input", {"action": "answer", "value": "v"})
    before = w.digest()
    w.err("request_input", {"expiresAt": int(NOW * 1000) + INTERACTION_CEILING_MS + 1000}, "DEADLINE_TOO_FAR")
    w.err("send_to", {"targetConversationId": w["group"], "text": "x", "bogus": 1}, "VALIDATION_ERROR")
    w.err("create_group", {"memberIds": [w["closed_user"]]}, "GROUP_EMPTY")
    w.err("send_card", {"card": {**CARD, "apiToken": "x"}}, "CARD_REJECTED")
    w.err("request_card", {"card": CARD}, "CARD_REJECTED")
    w.err("send_to", {"targetConversationId": w["group"], "text": "x",
                      "messageOptions": {"mentions": ["nobody"]}}, "INVALID_MENTION")
    assert w.digest() == before
    w.ok("no_reply", {})
    assert w.digest() == before
    w.ok("send_to", {"targetConversationId": w["group"], "text": "x"})
    assert w.digest() != before


def test_send_to_idempotency() -> None:
    w = World()
    args = {"targetConversationId": w["group"], "text": "once", "messageOptions": {"messageId": "m-1"}}
    first = w.ok("send_to", args)
    assert w.ok("send_to", args) == first
    assert [m["messageId"] for m in w.messages(w["group"])].count("m-1") == 1
    w.err("send_to", {**args, "text": "different"}, "MESSAGE_ID_EXISTS")
    share = {"conversationId": w["group"], "contactUserId": w["member"], "messageId": "s-1"}
    assert w.ok("share_contact", share) == w.ok("share_contact", share)
    w.err("share_contact", {**share, "contactUserId": w["owner"]}, "MESSAGE_ID_EXISTS")


def test_send_to_admission_and_sessions() -> None:
    w = World()
    closed = w.ok("send_to", {"targetUserId": w["closed_user"], "text": "hi"})
    assert closed == {"status": "unavailable", "reason": "closed"}
    first = w.ok("send_to", {"targetUserId": w["approval_user"], "text": "hi"})
    assert first["status"] == "requested" and first["deferredIntentId"]
    again = w.ok("send_to", {"targetUserId": w["approval_user"], "text": "hi again"})
    assert again["status"] == "pending" and again["requestId"] == first["requestId"]
    assert w.ref.direct_conversations(w["approval_user"]) == []
    w.control("approve_request", {"requestId": first["requestId"]})
    delivered = w.ref.direct_conversations(w["approval_user"])
    assert delivered and w.messages(delivered[0]["id"])[0]["text"] == "hi"
    w.control("approve_request", {"requestId": first["requestId"]}, expect=409)
    w.control("approve_request", {"requestId": "nope"}, expect=404)

    # open target: continue_or_create reuses owner_chat, new creates, continue_latest with nobody ->
    # no_session
    reuse = w.ok("send_to", {"canonContactId": f"contact:{w['owner']}", "text": "x"})
    assert (reuse["conversationId"] == w["owner_chat"] and reuse["reused"] is True
            and reuse["created"] is False)
    new = w.ok("send_to", {"targetUserId": w["owner"], "text": "x", "sessionSelection": {"mode": "new"}})
    assert new["created"] is True and new["conversationId"] != w["owner_chat"]
    latest = w.ok("send_to", {"targetUserId": w["owner"], "text": "x",
                              "sessionSelection": {"mode": "continue_latest"}})
    assert latest["conversationId"] == new["conversationId"]
    none = w.ok("send_to", {"targetUserId": w["open_user"], "text": "x",
                            "sessionSelection": {"mode": "continue_latest"}})
    assert none["status"] == "no_session"
    specific = w.ok("send_to", {"targetUserId": w["owner"], "text": "x",
                                "sessionSelection": {"mode": "specific", "conversationId": w["owner_chat"]}})
    assert specific["conversationId"] == w["owner_chat"]
    w.err("send_to", {"targetUserId": w["owner"], "text": "x",
                      "sessionSelection": {"mode": "specific", "conversationId": w["group"]}},
          "CONVERSATION_NOT_FOUND")
    w.err("send_to", {"canonContactId": f"contact:{w['stranger']}", "text": "x"}, "USER_NOT_FOUND")
    w.ok("send_to", {"targetConversationId": w["group"], "messageOptions": {
        "attachments": [{"kind": "image", "url": MEDIA_URL}]}})


def test_self_context_visible_only_to_sender() -> None:
    w = World()
    args = {"targetConversationId": w["group"], "text": "fyi", "sourceConversationId": w["owner_chat"],
            "selfContext": {"type": "cross_session", "context": "owner asked me to tell the group"}}
    result = w.ok("send_to", args)
    assert result["selfContextId"]
    mine = [m for m in w.messages(w["group"]) if m["messageId"] == result["messageId"]][0]
    theirs = [m for m in w.messages(w["group"], w["member"]) if m["messageId"] == result["messageId"]][0]
    assert mine["selfContext"] == args["selfContext"] and "selfContext" not in theirs
    w.err("send_to", {k: v for k, v in args.items() if k != "sourceConversationId"}, "VALIDATION_ERROR")
    w.ok("leave_conversation", {"conversationId": w["agent_group"]})
    w.err("send_to", {**args, "sourceConversationId": w["agent_group"]}, "NOT_A_MEMBER")


def test_request_input() -> None:
    w = World()
    w.script("request_input", {"action": "answer", "value": "blue", "answers": {"q": {"answers": ["blue"]}}})
    got = w.ok("request_input", {"inputId": "in-1", "prompt": "colour?"})
    # value is '' when structured answers were used (request_input_result value description)
    assert got == {"status": "submitted", "inputId": "in-1", "value": "",
                   "answers": {"q": {"answers": ["blue"]}}}
    w.err("request_input", {"inputId": "in-1"}, "ID_ALREADY_USED")
    w.script("request_input", {"action": "cancel"})
    assert w.ok("request_input", {})["status"] == "cancelled"
    start = w.ref.now_ms()
    timeout = w.ok("request_input", {"inputId": "in-t", "timeoutMs": 5000})
    assert timeout["status"] == "timeout" and w.ref.now_ms() >= start + 5000
    info = w.control("interaction", {"id": "in-t"})
    assert (info["kind"] == "input" and info["conversationId"] == w["owner_chat"]
            and info["status"] == "timeout")
    # routing: a plain request honours responseUserId; secret kinds go to the owner
    w.ok("request_input", {"inputId": "in-m", "conversationId": w["group"], "responseUserId": w["member"]})
    assert w.control("interaction", {"id": "in-m"})["responseUserId"] == w["member"]
    for i, extra in enumerate(({"kind": "secret"}, {"kind": "sudo"}, {"sensitive": True},
                               {"questions": [{"id": "pw", "question": "pw?", "isSecret": True}]})):
        w.ok("request_input", {"inputId": f"in-s{i}", "conversationId": w["group"],
                               "responseUserId": w["member"], **extra})
        assert w.control("interaction", {"id": f"in-s{i}"})["responseUserId"] == w["owner"]
    w.err("request_input", {"conversationId": w["group"], "responseUserId": w["stranger"]}, "NOT_A_MEMBER")
    w.ok("request_input", {"expiresAt": w.ref.now_ms() + INTERACTION_CEILING_MS})
    w.err("request_input", {"expiresAt": w.ref.now_ms() + INTERACTION_CEILING_MS + 1000}, "DEADLINE_TOO_FAR")


def test_approvals_blocking() -> None:
    w = World()
    base = {"toolName": "shell", "toolSummary": "rm -rf build"}
    w.script("request_approval", {"action": "allow", "sessionRule": {"type": "approve-all"}})
    allowed = w.ok("request_approval", {**base, "approvalId": "a-1"})
    assert allowed == {"status": "allow", "approvalId": "a-1", "respondedBy": w["owner"],
                       "sessionRule": {"type": "approve-all"}}
    w.err("request_approval", {**base, "approvalId": "a-1"}, "ID_ALREADY_USED")
    w.script("request_approval",
             {"action": "deny", "as": w["member"], "sessionRule": {"type": "approve-all"}})
    denied = w.ok("request_approval", {**base, "conversationId": w["group"], "responseUserId": w["member"],
                                       "allowSessionRule": True})
    assert denied["status"] == "deny" and denied["respondedBy"] == w["member"] and "sessionRule" not in denied
    assert w.ok("request_approval", {**base, "approvalId": "a-t"}) == {"status": "timeout",
                                                                       "approvalId": "a-t"}
    assert w.ok("check_approval", {"approvalId": "a-t"})["status"] == "expired"
    now = w.ref.now_ms()
    w.ok("request_approval", {**base, "mode": "detached", "expiresAt": now + APPROVAL_CEILING_MS})
    w.err("request_approval", {**base, "expiresAt": now + APPROVAL_CEILING_MS + 1000}, "DEADLINE_TOO_FAR")


def test_approvals_detached_and_check() -> None:
    w = World()
    base = {"toolName": "shell", "toolSummary": "deploy", "mode": "detached"}
    pending = w.ok("request_approval", {**base, "approvalId": "d-1", "timeoutMs": 60_000})
    assert pending["status"] == "pending" and pending["conversationId"] == w["owner_chat"]
    assert pending["responseUserId"] == w["owner"]
    assert w.ok("check_approval", {"approvalId": "d-1"}) == {
        "status": "pending", "approvalId": "d-1", "expiresAt": pending["expiresAt"]}
    assert w.ok("check_approval", {"approvalId": "nope"}) == {"status": "unknown", "approvalId": "nope"}
    w.control("decide_approval", {"approvalId": "d-1", "decision": "allow"})
    w.control("decide_approval", {"approvalId": "d-1", "decision": "deny"}, expect=409)
    w.control("decide_approval", {"approvalId": "zzz", "decision": "deny"}, expect=404)
    resolved = w.ok("check_approval", {"approvalId": "d-1", "conversationId": w["owner_chat"]})
    assert resolved == {"status": "resolved", "approvalId": "d-1", "decision": "allow",
                        "respondedBy": w["owner"], "conversationId": w["owner_chat"]}
    assert w.ok("check_approval", {"approvalId": "d-1"}) == resolved
    assert w.ok("check_approval", {"approvalId": "d-1", "conversationId": w["group"]})["status"] == "unknown"
    w.control("advance_clock", {"seconds": 71 * 3600})
    assert w.ok("check_approval", {"approvalId": "d-1"})["status"] == "resolved"
    w.control("advance_clock", {"seconds": 2 * 3600})
    assert w.ok("check_approval", {"approvalId": "d-1"})["status"] == "unknown"
    w.ok("request_approval", {**base, "approvalId": "d-2", "timeoutMs": 1000})
    w.control("advance_clock", {"seconds": 2})
    assert w.ok("check_approval", {"approvalId": "d-2"}) == {"status": "expired", "approvalId": "d-2"}
    w.control("decide_approval", {"approvalId": "d-2", "decision": "allow"}, expect=409)
    # a member's sessionRule is dropped on a detached decision
    w.ok("request_approval", {**base, "approvalId": "d-3", "conversationId": w["group"],
                              "responseUserId": w["member"], "allowSessionRule": True})
    w.control("decide_approval", {"approvalId": "d-3", "decision": "allow", "as": w["member"],
                                  "sessionRule": {"type": "approve-all"}})
    assert "sessionRule" not in w.ref.w["interactions"]["approval"]["d-3"]
    info = w.control("interaction", {"id": "d-3"})
    assert info == {"kind": "approval", "responseUserId": w["member"], "status": "allow",
                    "conversationId": w["group"], "expiresAt": info["expiresAt"]}


def test_cards() -> None:
    w = World()
    assert w.ok("send_card", {"card": {**CARD, "cardId": "c-1"}})["cardId"] == "c-1"
    assert w.ok("send_card", {"card": CARD, "cardId": "c-2"})["cardId"] == "c-2"
    for key in ("clientSecret", "accessToken", "password", "apiKey", "private_key", "credentials"):
        w.err("send_card", {"card": {**CARD, key: "x"}}, "CARD_REJECTED")
    big = {**CARD, "blocks": [{"type": "text", "text": "x" * 4000}] * 9}
    assert len(json.dumps(big)) > CARD_MAX_BYTES
    w.err("send_card", {"card": big}, "CARD_REJECTED")
    w.err("request_card", {"card": CARD}, "CARD_REJECTED")
    w.script("request_card", {"action": "submit", "actionId": "go", "values": {"n": 1}})
    sub = w.ok("request_card", {"card": ACTION_CARD, "cardId": "rc-1"})
    assert sub == {"status": "submitted", "cardId": "rc-1", "actionId": "go", "values": {"n": 1},
                   "respondedBy": w["owner"]}
    w.script("request_card", {"action": "cancel"})
    assert w.ok("request_card", {"card": ACTION_CARD})["status"] == "cancelled"
    assert w.ok("request_card", {"card": ACTION_CARD})["status"] == "timeout"
    w.err("request_card", {"card": ACTION_CARD, "expiresAt": w.ref.now_ms() + INTERACTION_CEILING_MS + 1000},
          "DEADLINE_TOO_FAR")


def test_messages_react_forward_no_reply() -> None:
    w = World()
    react = {"conversationId": w["owner_chat"], "messageId": w["owner_message"], "emoji": "👍"}
    assert w.ok("react", react)["action"] == "added"
    second = w.ok("react", react)
    assert second["action"] == "removed" and second["reactions"] == {}
    fwd = w.ok("forward", {"sourceConversationId": w["owner_chat"], "targetConversationId": w["group"],
                           "messageId": w["owner_message"], "text": "look"})
    assert w.messages(w["group"])[-1]["messageId"] == fwd["messageId"]
    w.err("forward", {"sourceConversationId": w["group"], "targetConversationId": w["owner_chat"],
                      "messageId": w["owner_message"]}, "MESSAGE_NOT_FOUND")
    w.ok("leave_conversation", {"conversationId": w["agent_group"]})
    w.err("forward", {"sourceConversationId": w["agent_group"], "targetConversationId": w["group"],
                      "messageId": w["owner_message"]}, "NOT_A_MEMBER")
    count = len(w.messages(w["owner_chat"]))
    assert w.ok("no_reply", {"reason": "nothing to add"}) == {"status": "acknowledged",
                                                              "conversationId": w["owner_chat"]}
    assert len(w.messages(w["owner_chat"])) == count


def test_groups() -> None:
    w = World()
    made = w.ok("create_group",
                {"memberIds": [w["open_user"], w["approval_user"], w["closed_user"], "nobody"]})
    assert made["added"] == [w["open_user"]]
    assert [p["userId"] for p in made["pending"]] == [w["approval_user"]]
    assert made["skipped"] == [{"userId": w["closed_user"], "reason": "closed"},
                               {"userId": "nobody", "reason": "not_found"}]
    only_pending = w.ok("create_group", {"memberIds": [w["approval_user"]]})
    assert only_pending["added"] == [] and only_pending["pending"]
    w.control("approve_request", {"requestId": made["pending"][0]["requestId"]})
    assert w["approval_user"] in w.ref.w["conversations"][made["conversationId"]]["members"]
    pending = w.ok("add_member", {"conversationId": w["agent_group"], "userId": w["approval_user"]})
    assert pending["status"] == "pending"
    assert w["approval_user"] not in w.ref.w["conversations"][w["agent_group"]]["members"]
    assert (w.ok("remove_member", {"conversationId": w["agent_group"], "userId": w["member"]})
            == {"status": "removed"})
    assert w["member"] not in w.ref.w["conversations"][w["agent_group"]]["members"]
    assert w.ok("leave_conversation", {"conversationId": w["group"]}) == {"status": "left"}
    listed = [c["id"] for c in w.ok("list_conversations", {})["conversations"]]
    assert w["group"] not in listed and w["owner_chat"] in listed
    assert len(w.ok("list_conversations", {"limit": 1})["conversations"]) == 1
    contacts = {c["id"] for c in w.ok("list_contacts", {})["contacts"]}
    assert contacts == {w["owner"], w["member"], w["open_user"], w["approval_user"]}


def test_control() -> None:
    w = World()
    assert set(w.roles) >= set(SETTINGS["world_roles"]) | {"owner_message"}
    before = w.digest()
    w.ok("send_to", {"targetConversationId": w["group"], "text": "x"})
    w.control("advance_clock", {"seconds": 5})
    w.control("reset")
    assert w.digest() == before
    w.control("script", {"verb": "send_to", "response": {"action": "x"}}, expect=400)
    w.control("interaction", {"id": "nope"}, expect=404)
    w.control("nope", expect=404)
    off = TestClient(create_app(PROFILE, ReferenceConfig(control=False)))
    assert off.post("/_control/world", json={}).status_code == 404
    # seeded ids are deterministic
    a, b = World(seed=3), World(seed=3)
    args = {"targetConversationId": a["group"], "text": "x"}
    assert a.ok("send_to", args) == b.ok("send_to", args)


# ------------------------------------------------------------------ faults


def _card_actionless(w: World) -> bool:
    return w.http("request_card", {"card": CARD})[0] == 200


def _mention(w: World) -> bool:
    return w.http("send_to", {"targetConversationId": w["group"], "text": "x",
                              "messageOptions": {"mentions": [w["stranger"]]}})[0] == 200


def _reuse(verb: str, key: str, extra: dict[str, Any]) -> Callable[[World], bool]:
    def probe(w: World) -> bool:
        w.http(verb, {**extra, key: "dup"})
        return w.http(verb, {**extra, key: "dup"})[0] == 200
    return probe


def _replay_duplicates(w: World) -> bool:
    args = {"targetConversationId": w["group"], "text": "x", "messageOptions": {"messageId": "r-1"}}
    w.http("send_to", args)
    w.http("send_to", args)
    return len(w.messages(w["group"])) == 2


def _conflict(w: World) -> bool:
    args = {"targetConversationId": w["group"], "text": "x", "messageOptions": {"messageId": "r-1"}}
    w.http("send_to", args)
    return w.http("send_to", {**args, "text": "y"})[0] == 200


def _conflict_answer(w: World) -> tuple[int, Any]:
    args = {"targetConversationId": w["group"], "text": "x", "messageOptions": {"messageId": "r-2"}}
    w.http("send_to", args)
    return w.http("send_to", {**args, "text": "y"})


def _conflict_wrong_code(w: World) -> bool:
    return _conflict_answer(w)[0] != 409


def _conflict_code_beside(w: World) -> bool:
    status, body = _conflict_answer(w)
    return (status == 409 and body.get("error", {}).get("code") != "MESSAGE_ID_EXISTS"
            and "MESSAGE_ID_EXISTS" in json.dumps(body))


def _self_context(w: World, viewer_role: str) -> bool:
    r = w.http("send_to",
               {"targetConversationId": w["group"], "text": "x", "sourceConversationId": w["owner_chat"],
                "selfContext": {"type": "cross_session", "context": "c"}})[1]
    seen = [m for m in w.messages(w["group"], w[viewer_role]) if m["messageId"] == r["messageId"]]
    return "selfContext" in seen[0]


def _self_context_nonmember(w: World) -> bool:
    w.http("leave_conversation", {"conversationId": w["agent_group"]})
    return w.http("send_to", {"targetConversationId": w["group"], "text": "x",
                              "sourceConversationId": w["agent_group"],
                              "selfContext": {"type": "cross_session", "context": "c"}})[0] == 200


def _approval_messaged(w: World) -> bool:
    return w.http("send_to", {"targetUserId": w["approval_user"], "text": "x"})[1]["status"] == "messaged"


def _closed(w: World) -> bool:
    return w.http("send_to", {"targetUserId": w["closed_user"], "text": "x"})[1]["status"] != "unavailable"


def _deferred_lost(w: World) -> bool:
    r = w.http("send_to", {"targetUserId": w["approval_user"], "text": "x"})[1]
    w.control("approve_request", {"requestId": r["requestId"]})
    return not w.ref.direct_conversations(w["approval_user"])


def _session_new(w: World) -> bool:
    r = w.http("send_to", {"targetUserId": w["owner"], "text": "x", "sessionSelection": {"mode": "new"}})[1]
    return r["conversationId"] == w["owner_chat"]


def _deadline(w: World) -> bool:
    return w.http("request_input", {"expiresAt": w.ref.now_ms() + INTERACTION_CEILING_MS * 2})[0] == 200


def _timeout_allows(w: World) -> bool:
    return w.http("request_approval", {"toolName": "t", "toolSummary": "s"})[1]["status"] == "allow"


def _detached_blocks(w: World) -> bool:
    r = w.http("request_approval", {"toolName": "t", "toolSummary": "s", "mode": "detached"})[1]
    return r["status"] != "pending"


def _expired_deny(w: World) -> bool:
    w.http("request_approval", {"toolName": "t", "toolSummary": "s", "mode": "detached", "approvalId": "e",
                                "timeoutMs": 1000})
    w.control("advance_clock", {"seconds": 5})
    return w.http("check_approval", {"approvalId": "e"})[1].get("decision") == "deny"


def _unknown_deny(w: World) -> bool:
    return w.http("check_approval", {"approvalId": "never"})[1].get("decision") == "deny"


def _decided(w: World) -> None:
    w.http("request_approval", {"toolName": "t", "toolSummary": "s", "mode": "detached", "approvalId": "d"})
    w.control("decide_approval", {"approvalId": "d", "decision": "allow"})


def _replay_consumed(w: World) -> bool:
    _decided(w)
    w.http("check_approval", {"approvalId": "d"})
    return w.http("check_approval", {"approvalId": "d"})[1]["status"] == "unknown"


def _unbound(w: World) -> bool:
    _decided(w)
    return (w.http("check_approval", {"approvalId": "d", "conversationId": w["group"]})[1]["status"]
            == "resolved")


def _secret_routed(w: World) -> bool:
    w.http("request_input", {"inputId": "s", "kind": "secret", "conversationId": w["group"],
                             "responseUserId": w["member"]})
    return w.control("interaction", {"id": "s"})["responseUserId"] == w["member"]


def _session_rule_kept(w: World) -> bool:
    w.script("request_approval",
             {"action": "allow", "as": w["member"], "sessionRule": {"type": "approve-all"}})
    r = w.http("request_approval", {"toolName": "t", "toolSummary": "s", "conversationId": w["group"],
                                    "responseUserId": w["member"], "allowSessionRule": True})[1]
    return "sessionRule" in r


def _cancel_timeout(w: World) -> bool:
    w.script("request_input", {"action": "cancel"})
    return w.http("request_input", {})[1]["status"] == "timeout"


def _react_adds(w: World) -> bool:
    args = {"conversationId": w["owner_chat"], "messageId": w["owner_message"], "emoji": "x"}
    w.http("react", args)
    return w.http("react", args)[1]["action"] == "added"


def _forward_nonmember(w: World) -> bool:
    w.http("leave_conversation", {"conversationId": w["owner_chat"]})
    return w.http("forward", {"sourceConversationId": w["owner_chat"], "targetConversationId": w["group"],
                              "messageId": w["owner_message"]})[0] == 200


def _minimal(w: World) -> bool:
    return w.http("check_approval", {"approvalId": "x"})[0] != 200


def _invalid(w: World) -> bool:
    return w.http("check_approval", {"approvalId": "x", "bogus": True})[0] == 200


def _write_first(w: World) -> bool:
    before = w.digest()
    w.http("list_contacts", {"bogus": True})
    return w.digest() != before


def _renamed(w: World) -> bool:
    return w.http("no_reply", {})[1]["status"] == "ok"


def _check_approval_renamed(w: World) -> bool:
    return w.http("check_approval", {"approvalId": "none-such"})[1].get("status") == "ok"


def _reserved(w: World) -> bool:
    return w.http("send_to", {"targetConversationId": w["group"], "text": "x",
                              "messageOptions": {"messageId": "__x__"}})[0] == 200


def _group_policy(w: World) -> bool:
    return (w["approval_user"]
            in w.http("create_group", {"memberIds": [w["approval_user"]]})[1].get("added", []))


def _add_policy(w: World) -> bool:
    return (w.http("add_member",
                   {"conversationId": w["agent_group"], "userId": w["approval_user"]})[1]["status"]
            == "added")


def _remove_nonadmin(w: World) -> bool:
    return w.http("remove_member", {"conversationId": w["group"], "userId": w["member"]})[0] == 200


def _leave_keeps(w: World) -> bool:
    w.http("leave_conversation", {"conversationId": w["group"]})
    return w["agent"] in w.ref.w["conversations"][w["group"]]["members"]


def _contacts_strangers(w: World) -> bool:
    return w["stranger"] in {c["id"] for c in w.http("list_contacts", {})[1]["contacts"]}


def _limit(w: World) -> bool:
    return len(w.http("list_conversations", {"limit": 1})[1]["conversations"]) > 1


def _no_reply_posts(w: World) -> bool:
    w.http("no_reply", {})
    return len(w.messages(w["owner_chat"])) > 1


def _errors_200(w: World) -> bool:
    return (w.http("check_approval", {})[0] == 200
            and w.tool("check_approval", {})["isError"] is False)


def _no_auth(w: World) -> bool:
    w.ref.config.token = "a-token"  # the reference as served: a bearer token is required
    return w.http("list_contacts", {})[0] == 200


def _looser(w: World) -> bool:
    tools = w.rpc("tools/list")["result"]["tools"]
    return '"additionalProperties": false' not in json.dumps([t["inputSchema"] for t in tools])


def _share_non_contact(w: World) -> bool:
    return w.http("share_contact", {"conversationId": w["group"], "contactUserId": w["stranger"]})[0] == 200


def _contact_target(w: World) -> bool:
    return w.http("send_to", {"canonContactId": f"contact:{w['open_user']}", "text": "x"})[0] != 200


def _result_invalid(verb: str) -> Callable[[World], bool]:
    return lambda w: bool(schema_errors(result_schema(verb), w.http(verb, {})[1]))


PROBES: dict[str, Callable[[World], bool]] = {
    "contact_id_target_rejected": _contact_target,
    "contact_items_incomplete": _result_invalid("list_contacts"),
    "conversation_items_incomplete": _result_invalid("list_conversations"),
    "minimal_input_rejected": _minimal,
    "accepts_invalid_input": _invalid,
    "validation_after_write": _write_first,
    "result_status_renamed": _renamed,
    "check_approval_status_renamed": _check_approval_renamed,
    "message_id_replay_duplicates": _replay_duplicates,
    "message_id_conflict_accepted": _conflict,
    "message_id_conflict_wrong_code": _conflict_wrong_code,
    "conflict_code_beside_error": _conflict_code_beside,
    "reserved_ids_accepted": _reserved,
    "input_id_reuse_accepted": _reuse("request_input", "inputId", {}),
    "approval_id_reuse_accepted": _reuse("request_approval", "approvalId",
                                         {"toolName": "t", "toolSummary": "s"}),
    "self_context_leaks": lambda w: _self_context(w, "member"),
    "self_context_without_membership": _self_context_nonmember,
    "approval_required_messaged": _approval_messaged,
    "closed_target_reason_wrong": _closed,
    "deferred_send_lost": _deferred_lost,
    "session_new_reuses": _session_new,
    "mention_non_member_accepted": _mention,
    "deadline_ceiling_ignored": _deadline,
    "approval_timeout_allows": _timeout_allows,
    "detached_approval_blocks": _detached_blocks,
    "expired_reported_deny": _expired_deny,
    "unknown_reported_deny": _unknown_deny,
    "check_approval_replay_consumed": _replay_consumed,
    "approval_conversation_unbound": _unbound,
    "secret_input_routed_to_member": _secret_routed,
    "non_owner_session_rule_kept": _session_rule_kept,
    "input_cancel_reported_timeout": _cancel_timeout,
    "card_without_actions_accepted": _card_actionless,
    "card_secret_key_accepted": lambda w: w.http("send_card", {"card": {**CARD, "apiToken": "x"}})[0] == 200,
    "card_size_unchecked": lambda w: w.http("send_card", {"card": {
        **CARD, "blocks": [{"type": "text", "text": "x" * 4000}] * 9}})[0] == 200,
    "react_always_adds": _react_adds,
    "forward_from_nonmember_allowed": _forward_nonmember,
    "share_non_contact_allowed": _share_non_contact,
    "create_group_ignores_policy": _group_policy,
    "add_member_ignores_policy": _add_policy,
    "remove_member_by_non_admin": _remove_nonadmin,
    "leave_keeps_membership": _leave_keeps,
    "list_contacts_includes_strangers": _contacts_strangers,
    "list_conversations_ignores_limit": _limit,
    "no_reply_posts_message": _no_reply_posts,
    "errors_as_200": _errors_200,
    "auth_not_enforced": _no_auth,
    "mcp_tool_schema_looser": _looser,
}


# -------------------------------------------------------- probes of the faults added with the statement map
LIM = {k: int(v.value) for k, v in LIMITS.items()}


def _codes_swapped(w: World) -> bool:
    return w.http("check_approval", {})[1]["error"]["code"] != "VALIDATION_ERROR"


def _send_user(w: World, **fields: Any) -> dict[str, Any]:
    return w.http("send_to", {"targetUserId": w["approval_user"], **fields})[1]


def _intent_missing(w: World) -> bool:
    return "deferredIntentId" not in _send_user(w, text="hi")


def _note(w: World, **fields: Any) -> str:
    request = _send_user(w, **fields)["requestId"]
    return str(w.control("contact_request", {"requestId": request})["note"])


def _note_ignored(w: World) -> bool:
    return _note(w, text="hi", requestMessage="add me") == "hi"


def _note_untruncated(w: World) -> bool:
    return len(_note(w, text="x" * (LIM["request_message_chars"] + 1))) > LIM["request_message_chars"]


def _session_default(w: World) -> bool:
    first = w.http("send_to", {"targetUserId": w["open_user"], "text": "a"})[1]
    return (w.http("send_to", {"targetUserId": w["open_user"], "text": "b"})[1]["conversationId"]
            != first["conversationId"])


def _reply_to(w: World) -> bool:
    return w.http("send_to", {"targetConversationId": w["group"], "text": "x",
                              "messageOptions": {"replyTo": "nope"}})[0] != 200


def _content_type(w: World) -> bool:
    w.http("send_to", {"targetConversationId": w["group"],
                       "messageOptions": {"attachments": [{"kind": "image", "url": MEDIA_URL}]}})
    return w.messages(w["group"])[-1]["contentType"] != "image"


def _responder(w: World) -> bool:
    w.script("request_input", {"action": "cancel"})
    return w.http("request_input", {"conversationId": w["group"], "responseUserId": w["stranger"]})[0] == 200


def _deadline_of(w: World, **fields: Any) -> int:
    return int(w.http("request_approval",
                      {"toolName": "t", "toolSummary": "s", "mode": "detached", **fields})[1]["expiresAt"])


def _timeout_wins(w: World) -> bool:
    at = w.ref.now_ms() + 300_000
    return _deadline_of(w, expiresAt=at, timeoutMs=120_000) != at


def _timeout_ignored(w: World) -> bool:
    return _deadline_of(w, timeoutMs=120_000) != w.ref.now_ms() + 120_000


def _ceiling_loose(w: World) -> bool:
    return w.http("request_approval",
                  {"toolName": "t", "toolSummary": "s", "mode": "detached",
                   "expiresAt": w.ref.now_ms() + LIM["approval_ceiling_ms"] + 1000})[0] == 200


def _decided_now(w: World) -> str:
    approval = w.http("request_approval",
                      {"toolName": "t", "toolSummary": "s", "mode": "detached"})[1]["approvalId"]
    w.control("decide_approval", {"approvalId": approval, "decision": "deny"})
    return str(approval)


def _window_loose(w: World) -> bool:
    approval = _decided_now(w)
    w.http("check_approval", {"approvalId": approval})
    w.control("advance_clock", {"seconds": LIM["approval_replay_window_ms"] // 1000 + 60})
    return w.http("check_approval", {"approvalId": approval})[1]["status"] == "resolved"


def _share_duplicates(w: World) -> bool:
    args = {"conversationId": w["group"], "contactUserId": w["open_user"], "messageId": "share-1"}
    w.http("share_contact", args)
    w.http("share_contact", args)
    return len(w.messages(w["group"])) > 1


def _structured_value(w: World) -> bool:
    w.script("request_input", {"action": "answer", "answers": {"q": {"answers": ["a"]}}})
    return w.http("request_input", {"prompt": "?"})[1]["value"] != ""


def _responded_by(w: World) -> bool:
    approval = _decided_now(w)
    return w.http("check_approval", {"approvalId": approval})[1]["respondedBy"] == w["agent"]


def _card_responded_by(w: World) -> bool:
    w.script("request_card", {"action": "submit", "actionId": "go"})
    return w.http("request_card", {"card": ACTION_CARD})[1]["respondedBy"] == w["agent"]


def _creator_missing(w: World) -> bool:
    group = w.http("create_group", {"memberIds": [w["open_user"]]})[1]["conversationId"]
    return w["agent"] not in w.ref.w["conversations"][group]["members"]


def _never_expires(w: World) -> bool:
    approval = w.http("request_approval",
                      {"toolName": "t", "toolSummary": "s", "mode": "detached",
                       "timeoutMs": 60_000})[1]["approvalId"]
    w.control("advance_clock", {"seconds": 120})
    return w.http("check_approval", {"approvalId": approval})[1]["status"] == "pending"


def _active_ignored(w: World) -> bool:
    w.script("request_input", {"action": "cancel"})
    w.http("request_input", {"inputId": "in-active"})
    return w.control("interaction", {"id": "in-active"})["conversationId"] != w["active_chat"]


def _kind_default(w: World) -> bool:
    w.script("request_input", {"action": "cancel"})
    w.http("request_input",
           {"conversationId": w["group"], "inputId": "in-kind", "responseUserId": w["member"]})
    return w.control("interaction", {"id": "in-kind"})["responseUserId"] != w["member"]


def _text_bytes(w: World) -> bool:
    return w.http("send_to",
                  {"targetConversationId": w["group"], "text": "é" * (LIM["text_bytes"] // 2 + 1)})[0] == 200


def _metadata(w: World) -> bool:
    meta = {"note": "x" * LIM["metadata_utf16_units"]}
    return w.http("send_to", {"targetConversationId": w["group"], "text": "x",
                              "messageOptions": {"metadata": meta}})[0] == 200


def _allowlist(w: World) -> bool:
    return w.http("send_to", {"targetConversationId": w["group"], "messageOptions": {
        "attachments": [{"kind": "image", "url": "https://cdn.example/a.png"}]}})[0] == 200


def _card_values(w: World) -> bool:
    w.script("request_card",
             {"action": "submit", "actionId": "go", "values": {"v": "x" * LIM["card_values_bytes"]}})
    return w.http("request_card", {"card": ACTION_CARD})[1]["status"] == "submitted"


def _seen_diff(w: World, files: list[dict[str, Any]]) -> dict[str, Any]:
    approval = w.http("request_approval",
                      {"toolName": "t", "toolSummary": "s", "mode": "detached",
                       "diff": {"files": files}})[1]["approvalId"]
    return dict(w.control("interaction", {"id": approval})["diff"])


def _unclipped(w: World) -> bool:
    seen = _seen_diff(w, [{"path": "a.py", "status": "modified",
                           "diff": "x" * (LIM["diff_file_clip_bytes"] + 1)}])
    return len(seen["files"][0]["diff"]) > LIM["diff_file_clip_bytes"]


def _tokens_shown(w: World) -> bool:
    return "AKIAABCDEFGHIJKLMNOP" in json.dumps(_seen_diff(w, [{"path": "a.py", "status": "modified",
                                                                "diff": "+AKIAABCDEFGHIJKLMNOP"}]))


def _paths_shown(w: World) -> bool:
    return "hunter2" in json.dumps(_seen_diff(w, [{"path": ".env", "status": "modified",
                                                   "diff": "+PASSWORD=hunter2"}]))


def _card_schema(w: World) -> bool:
    tools = {t["name"]: t for t in w.rpc("tools/list")["result"]["tools"]}
    return "maxLength" not in json.dumps(
        tools["send_card"]["inputSchema"]["properties"]["card"]["properties"]["title"]) or \
        tools["send_card"]["inputSchema"]["properties"]["card"]["properties"]["title"].get("maxLength") \
        != LIM["card_title_authoring_chars"]


def _default_detached(w: World) -> bool:
    w.script("request_approval", {"action": "allow"})
    return w.http("request_approval", {"toolName": "t", "toolSummary": "s"})[1]["status"] == "pending"


def _content_unchecked(w: World) -> bool:
    return w.http("send_to", {"targetConversationId": w["group"]})[0] == 200


PROBES.update({
    "refusal_codes_swapped": _codes_swapped,
    "deferred_intent_missing": _intent_missing,
    "request_message_ignored": _note_ignored,
    "request_message_untruncated": _note_untruncated,
    "session_default_new": _session_default,
    "reply_to_validated": _reply_to,
    "content_type_always_text": _content_type,
    "responder_unchecked": _responder,
    "timeout_wins": _timeout_wins,
    "timeout_ms_ignored": _timeout_ignored,
    "deadline_ceiling_loose": _ceiling_loose,
    "replay_window_loose": _window_loose,
    "share_contact_replay_duplicates": _share_duplicates,
    "structured_value_not_empty": _structured_value,
    "responded_by_agent": _responded_by,
    "card_responded_by_agent": _card_responded_by,
    "creator_not_added": _creator_missing,
    "approval_never_expires": _never_expires,
    "active_conversation_ignored": _active_ignored,
    "kind_default_secret": _kind_default,
    "text_bytes_unchecked": _text_bytes,
    "metadata_size_unchecked": _metadata,
    "attachment_allowlist_open": _allowlist,
    "card_values_unchecked": _card_values,
    "diff_unclipped": _unclipped,
    "secret_tokens_shown": _tokens_shown,
    "sensitive_paths_shown": _paths_shown,
    "mcp_card_schema_envelope_only": _card_schema,
    "approval_default_detached": _default_detached,
    "content_unchecked": _content_unchecked,
})


# what each verb's success answers on the clean reference (the status of the branch its request
# selects), and the input that drives it there: a scripted human's answer, a detached approval
OTHER_BRANCH: dict[str, tuple[str, Callable[[World], tuple[str, dict[str, Any]]]]] = {
    "send_to": ("messaged", lambda w: ("send_to", {"targetConversationId": w["owner_chat"], "text": "hi"})),
    "request_input": ("submitted", lambda w: (w.script("request_input", {"action": "answer", "value": "y"}),
                                              ("request_input", {"prompt": "?"}))[1]),
    "request_approval": ("allow", lambda w: (w.script("request_approval", {"action": "allow"}),
                                             ("request_approval", {"toolName": "t", "toolSummary": "s"}))[1]),
    "check_approval": ("pending", lambda w: ("check_approval", {"approvalId": w.ok("request_approval", {
        "toolName": "t", "toolSummary": "s", "mode": "detached"})["approvalId"]})),
    "request_card": ("submitted", lambda w: (w.script("request_card", {"action": "submit", "actionId": "go"}),
                                             ("request_card", {"card": ACTION_CARD}))[1]),
    "add_member": ("added", lambda w: ("add_member", {"conversationId": w["agent_group"],
                                                      "userId": w["open_user"]})),
}


def _other_branch(verb: str) -> Callable[[World], bool]:
    """The verb's success is still schema-valid, but in another branch than its request's."""
    def probe(w: World) -> bool:
        status, drive = OTHER_BRANCH[verb]
        name, args = drive(w)
        return w.ok(name, args)["status"] != status
    return probe


def _unknown_conversation(w: World) -> tuple[int, Any]:
    return w.http("send_to", {"targetConversationId": "conv-nobody-made", "text": "x"})


def _one_of_flattened(w: World) -> bool:
    tools = {t["name"]: t for t in w.rpc("tools/list")["result"]["tools"]}
    two = {"targetConversationId": w["owner_chat"], "targetUserId": w["open_user"], "text": "x"}
    flattened = "oneOf" not in json.dumps(tools["send_to"]["inputSchema"])
    return flattened and not w.tool("send_to", two)["isError"]


PROBES.update({
    **{f"{verb}_result_other_branch": _other_branch(verb) for verb in OTHER_BRANCH},
    "unknown_conversation_made": lambda w: _unknown_conversation(w)[0] == 200,
    "unknown_conversation_not_a_member":
        lambda w: _unknown_conversation(w)[1]["error"]["code"] == "NOT_A_MEMBER",
    "mcp_tool_one_of_flattened": _one_of_flattened,
})


def test_every_fault_has_a_probe_and_a_docstring() -> None:
    assert set(FAULTS) == set(PROBES)
    for name, fn in FAULTS.items():
        doc = (fn.__doc__ or "").strip()
        assert doc and "\n" not in doc, name


@pytest.mark.parametrize("name", sorted(PROBES))
def test_fault_changes_its_behaviour(name: str) -> None:
    assert PROBES[name](World()) is False, f"the clean reference already shows {name}"
    assert PROBES[name](World(fault=name)) is True, f"fault {name} does not show"


def test_invalid_input_let_through_is_an_internal_error_not_a_crash() -> None:
    w = World(fault="accepts_invalid_input")
    assert w.http("react", {})[0] == 500
    assert w.tool("react", {})["isError"] is True
