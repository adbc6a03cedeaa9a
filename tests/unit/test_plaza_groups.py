"""The groups part of the Agent Plaza reference (reference/groups.py): the owner's grant and its
expiry, requests that grant nothing, privacy, no history from before joining, retries
rechecked, the queue that is not delivery, the loop guard and the group work kinds."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.unit.test_plaza_reference import CREDS, SPEC, Site


@pytest.fixture
def site() -> Site:
    return Site()


def key() -> str:
    return str(uuid.uuid4())


def grant(site: Site, who: str, **fields: Any) -> dict[str, Any]:
    return site.command(who, "group_authorize", owner_authorized=True, request_key=key(), **fields)


def new_group(site: Site, who: str = "alice", **fields: Any) -> str:
    grant(site, who, allow_create=True, allow_invite=True)
    fields.setdefault("name", "Readers")
    payload = site.command(who, "group_create", request_key=key(), **fields)
    group_id: str = payload["group"]["group_id"]
    return group_id


def join(site: Site, gid: str, who: str = "bob", owner: str = "alice") -> None:
    grant(site, who)
    site.command(owner, "group_invite", group_id=gid, visitor_id=CREDS[who]["id"], request_key=key())
    site.command(who, "group_respond", group_id=gid, decision="accept", request_key=key())


def create_refused(site: Site, who: str, name: str) -> None:
    data = {"operation": "group_create", "name": name, "request_key": key()}
    site.error("SendMessage", site.params({"data": data}), "NOT_PERMITTED", who)


def contents(site: Site, who: str, gid: str, **fields: Any) -> list[str]:
    return [m["content"] for m in site.command(who, "group_messages", group_id=gid, **fields)["messages"]]


def test_request_is_not_authority_and_grant_expires(site: Site) -> None:
    first = site.command("alice", "group_authorization_request", scopes=["allow_create"], request_key=key())
    again = site.command("alice", "group_authorization_request", scopes=["allow_create"], request_key=key())
    assert first["request"]["request_id"] == again["request"]["request_id"] and again["deduplicated"]
    assert first["permission_attention"]["live"] is False
    create_refused(site, "alice", "Too soon")
    hours = SPEC["schemas"]["command"]["anyOf"][24]["properties"]["expires_hours"]["minimum"]
    grant(site, "alice", allow_create=True, expires_hours=hours, request_id=first["request"]["request_id"])
    assert site.command("alice", "group_authorization")["authorization"]["state"] == "active"
    site.command("alice", "group_create", name="In time", request_key=key())
    site.control("advance_clock", seconds=hours * 3600 + 1)
    create_refused(site, "alice", "Too late")
    assert site.command("alice", "group_authorization")["authorization"]["state"] == "expired"


def test_private_group_and_history_before_joining(site: Site) -> None:
    gid = new_group(site)
    site.command("alice", "group_send", group_id=gid, content="before bob", request_key=key())
    site.command_error("carol", "group_detail", "NOT_FOUND", group_id=gid)
    site.command_error("carol", "group_messages", "NOT_FOUND", group_id=gid)
    join(site, gid)
    site.command("alice", "group_send", group_id=gid, content="after bob", request_key=key())
    assert contents(site, "bob", gid) == ["after bob"] == contents(site, "bob", gid, after_seq=0)
    assert contents(site, "alice", gid) == ["before bob", "after bob"]


def test_retry_is_rechecked_and_stores_once(site: Site) -> None:
    gid = new_group(site)
    join(site, gid)
    request_key = key()
    one = site.command("bob", "group_send", group_id=gid, content="once", request_key=request_key)
    two = site.command("bob", "group_send", group_id=gid, content="once", request_key=request_key)
    assert (one["message"]["id"] == two["message"]["id"] and two["replayed"]
            and contents(site, "alice", gid) == ["once"])
    site.command("bob", "group_authorization_revoke", request_key=key())
    site.command_error("bob", "group_send", "NOT_PERMITTED", group_id=gid, content="once",
                       request_key=request_key)


def test_queue_is_not_delivery_and_loop_guard(site: Site) -> None:
    gid = new_group(site, rules={"max_autonomous_turns": 1})
    join(site, gid)
    site.command("alice", "group_queue", group_id=gid, content="later", after_seconds=15, request_key=key())
    assert contents(site, "bob", gid) == []
    site.command("alice", "group_flush", group_id=gid, request_key=key())
    assert contents(site, "bob", gid) == ["later"]
    site.command("bob", "group_send", group_id=gid, content="answer 1", request_key=key())
    site.command("alice", "group_send", group_id=gid, content="answer 2", request_key=key())
    site.command_error("bob", "group_send", "NOT_PERMITTED", group_id=gid, content="answer 3",
                       request_key=key())


def test_group_command_routing_and_work_items(site: Site) -> None:
    gid = new_group(site)
    join(site, gid)
    data = {"operation": "group_send", "group_id": gid, "content": "routed", "request_key": key()}
    message = site.params({"data": data}, context=gid, to="bob")["message"]
    message["taskId"] = gid
    paths = [issue.path for issue in site.ref.group_routing_issues(message, data)]
    assert paths == ["params.message.contextId", "params.message.taskId", "params.message.metadata"]
    assert site.ref.group_routing_issues(message, {"operation": "status"}) == []
    site.command("alice", "group_send", group_id=gid, content="hello group", request_key=key())
    batch = site.command("bob", "receive_pull", client_key=key(), limit=40)["batch"]
    kinds = [item["kind"] for item in batch["items"]]
    assert kinds == ["group_invitation", "group_message"]
    assert all(item["group_id"] == gid for item in batch["items"])
