"""The Canon reference: every verb over both bindings against the spec's result
schemas, the behaviours the spec describes, and each named fault described in one line
(that each is caught, and the clean reference is not: tests/e2e/test_selftest.py)."""

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
# That each fault changes what the reference does, and that the clean reference does not show it,
# is tests/e2e/test_selftest.py's: test_fault_is_caught[canon-verbs:<fault>] fails every requirement
# naming the fault with a finding that quotes the answer and names the statement it breaks, and
# test_clean_reference_passes_everything_and_no_must_fails_on_a_variant[canon-verbs:*] passes those
# requirements on the clean reference over each binding (a hand-written probe per fault was a second
# edit for every new fault, proving less: its own reading, not the document's).


def test_every_fault_has_a_one_line_docstring() -> None:
    assert FAULTS
    for name, fn in FAULTS.items():
        doc = (fn.__doc__ or "").strip()
        assert doc and "\n" not in doc, name


def test_invalid_input_let_through_is_an_internal_error_not_a_crash() -> None:
    w = World(fault="accepts_invalid_input")
    assert w.http("react", {})[0] == 500
    assert w.tool("react", {})["isError"] is True
