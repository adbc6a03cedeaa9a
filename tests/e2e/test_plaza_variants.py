"""Agent Plaza behaviours the documents allow that the kit once failed (issue 45), as variants of
the reference (conformance/protocols/plaza/variants.py): receive items without read_request,
attention counts nested under ``counts``, a site refusing half an inbox cursor, block and
unblock without a send effect, a declined invitation's task REJECTED and CancelTask of it
refused, and inbox notices that name an event rather than a connection.

Each variant shows its behaviour on the reference (so a pass on it is not a pass on nothing),
and a site showing all of them at once passes every MUST; the SHOULDs that ask for the
profile's own reading (an item's read_request, a block's send effect) fail there, as they must."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import httpx

from conformance.kit import locate
from conformance.protocols.plaza.site import reference_credentials
from conformance.run.launch import open_run, reference_app
from conformance.run.profiles import load_profile
from conformance.run.runner import execute
from conformance.transport.inprocess import InProcessTransport

BEHAVIOURS = ("receive_items_without_read_requests", "attention_counts_nested",
              "inbox_cursor_refused_unless_paired", "block_without_send_effect",
              "declined_invitation_rejected", "notices_name_events")
PROFILE = load_profile("agent-plaza")
SPEC = PROFILE.spec
EXT = SPEC["requiredHeaders"]["A2A-Extensions"]
CREDS = reference_credentials()
INVALID = next(e.code for e in PROFILE.errors.values() if e.name == "A2A_INVALID_PARAMETERS")


class Site:
    """The reference with some variants, called in process as a client would."""

    def __init__(self, *variants: str) -> None:
        app = reference_app(PROFILE, variants)
        self.client = httpx.Client(transport=InProcessTransport(app), base_url="http://reference")

    def rpc(self, method: str, params: Any, who: str = "alice") -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "A2A-Version": SPEC["requiredHeaders"]["A2A-Version"],
                   "A2A-Extensions": EXT, "Authorization": f"Bearer {CREDS[who]['token']}"}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        reply = self.client.post("/a2a/personal", content=json.dumps(body), headers=headers)
        answer: dict[str, Any] = reply.json()
        return answer

    def send(self, part: dict[str, Any], who: str = "alice", **message: Any) -> dict[str, Any]:
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [part], **message}
        params = {"message": message, "configuration": {"returnImmediately": True}}
        return self.rpc("SendMessage", params, who)

    def command(self, operation: str, who: str = "alice", **fields: Any) -> dict[str, Any]:
        return self.send({"data": {"operation": operation, **fields}}, who)

    def data(self, operation: str, who: str = "alice", **fields: Any) -> dict[str, Any]:
        answer = self.command(operation, who, **fields)
        found: dict[str, Any] = answer["result"]["message"]["parts"][0]["data"]
        return found

    def invite(self, frm: str = "alice", to: str = "bob") -> tuple[str, str]:
        answer = self.send({"text": "hello"}, frm, metadata={EXT: {"recipientId": CREDS[to]["id"]}})
        task = answer["result"]["task"]
        return str(task["id"]), str(task["contextId"])


def test_each_is_a_variant_quoting_what_allows_it():
    for name in BEHAVIOURS:
        assert name in PROFILE.variants, name
        assert "allowed by:" in (PROFILE.variants[name].__doc__ or ""), name


def test_each_variant_shows_its_behaviour():
    site = Site(*BEHAVIOURS)
    task, connection = site.invite("alice", "bob")
    # receive items carry no read request, only their kind and ids
    pulled = site.data("receive_pull", "bob", client_key=str(uuid.uuid4()))
    items = pulled["batch"]["items"]
    assert items and not any("read_request" in i or "a2a_read_request" in i for i in items), items
    # attention's counts and flags under counts
    attention = site.data("inbox_summary", "bob")["mailbox_attention"]
    assert "pending_received_invitation_count" not in attention
    assert attention["counts"]["pending_received_invitation_count"] == 1
    # half a conversation cursor is refused
    half = site.command("inbox", "bob", before_id=connection)
    assert half["error"]["code"] == INVALID, half
    # notices name an event and the peer, not the connection
    notices = site.data("inbox", "bob")["notices"]
    assert notices and all("event_id" in n and "connection_id" not in n for n in notices), notices
    assert not any(locate.holds(n, connection) for n in notices)
    # a block changes who may write nothing
    friends = site.invite("carol", "bob")[1]
    site.data("respond", "bob", connection_id=friends, decision="accept")
    site.data("friend_control", "bob", connection_id=friends, decision="block")
    assert "result" in site.send({"text": "still flows"}, "carol", contextId=friends)
    # a declined invitation's task is rejected, and not cancelable
    site.data("respond", "bob", connection_id=connection, decision="decline")
    assert site.rpc("GetTask", {"id": task})["result"]["status"]["state"] == "TASK_STATE_REJECTED"
    assert "error" in site.rpc("CancelTask", {"id": task})


def test_every_must_passes_on_a_site_showing_them_all():
    profile = copy.copy(PROFILE)
    run = open_run(profile, "reference", faults=BEHAVIOURS, budget="quick", shrink=False)
    verdicts = {req.id: (req.level, execute(req, run)) for req in profile.requirements}
    bad = {rid: (v.status, v.reason, v.message[:300]) for rid, (level, v) in verdicts.items()
           if level == "MUST" and v.status != "passed"}
    assert bad == {}
    # the profile's own readings are SHOULDs, and they see the difference
    for rid in ("PLAZA-RECV-SHAPE", "PLAZA-FRIEND-BLOCK"):
        assert verdicts[rid][1].status == "failed", (rid, verdicts[rid][1].message)

