"""Smoke test of the official A2A Python SDK server (a2a-sdk 1.3.0) that the ``a2a`` profile
will be pointed at: the harness in tests/a2a_sdk_server.py starts, serves its card, and answers
both bindings as the profile expects, so a later failure of the profile is about the profile.

Where the SDK differs from specs/a2a/specification.md (seen while writing this harness; the
SDK is left as it is, these are notes for the profile, line numbers of specification.md):

- Version negotiation compares the major version only: ``A2A-Version: 1.7`` is served as
  1.0, where l.737 (3.6.2) says "matching Major.Minor" and an unsupported version MUST get
  VersionNotSupportedError (-32009 / 400). (``1.0.3`` served as 1.0 is right: patch is
  ignored, l.708.) A missing header is read as 0.3 and refused with -32009 / 400
  FAILED_PRECONDITION, as l.739 (3.6.2) asks.
- The version given as a request parameter (``?A2A-Version=1.0``, allowed by l.724, 3.6.1)
  is ignored: the SDK reads headers only, so such a request is refused as version 0.3.
- HTTP+JSON error responses are sent as ``application/json``; successful ones as
  ``application/a2a+json``. l.2750 (11.1): application/a2a+json SHOULD be used for requests
  and responses (the 11.6 error example, l.2922, shows it too).
- Paths the REST routes do not know, and a wrong verb on a known path (``DELETE
  /rest/tasks/x``), get Starlette's plain-text ``404 Not Found``, not a google.rpc.Status body
  (l.2898, 11.6) and not 405: the SDK also mounts its REST routes under a catch-all
  ``/{tenant}`` prefix, which takes every unmatched path of two or more segments.
- With a ``path_prefix`` that tenant mount sits in front of the prefix (``/{tenant}/rest/tasks/x``),
  while the proto's HTTP rules (a2a.proto l.49: ``/{tenant}/tasks/{id=*}``) and 11.3 (l.2792)
  put ``{tenant}`` after the interface URL (``/rest/{tenant}/tasks/x``, which gives 404 here).
- JSON-RPC error messages are not the standard ones of the 9.5 table (l.2443-2446):
  -32700 carries Python's JSON decoder text instead of "Invalid JSON payload", -32602 says
  "Validation failed", -32600 "Invalid Request". Codes and ``data`` (``@type`` ErrorInfo /
  BadRequest objects) are as 5.4 and 9.5 ask; -32601 and -32700 come without ``data``
  (optional).
- A JSON-RPC notification (no ``id``) is executed and answered (``"id": null``), where
  JSON-RPC 2.0, which l.2270 (9.3) makes binding, says the server MUST NOT reply to one.
- ListTasks (both bindings) prints fields left at their default (``"filename": ""``,
  ``"mediaType": ""``, ``"extensions": []``, ``"referenceTaskIds": []``) where GetTask and
  SendMessage omit them; valid ProtoJSON, but the same task looks different per method.
- Not spec text, but visible on stderr: every SendMessage naming a task that is already
  terminal (answered -32004, as l.175 asks) leaks the SDK's queue dispatch tasks
  ("Task was destroyed but it is pending!").

Capabilities the card declares off are refused as 3.3.4 asks: SendStreamingMessage and
SubscribeToTask -32004 / 400 UNSUPPORTED_OPERATION, push config methods -32003 / 400,
GetExtendedAgentCard -32004 / 400. The 5.4 codes seen match the table (-32001 / 404,
-32002 / 400, -32004 / 400, -32009 / 400).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.a2a_sdk import sdk_server

pytest.importorskip("a2a.server.routes", reason="a2a-sdk[http-server] is not installed")

HEADERS = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with sdk_server() as url:
        yield url


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(headers=HEADERS, timeout=10) as c:
        yield c


def rpc(client: httpx.Client, base: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    reply = client.post(f"{base}/jsonrpc", json=request)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert body["id"] == 1 and body["jsonrpc"] == "2.0", body
    return body


def send(client: httpx.Client, base: str, text: str, message_id: str, **ids: str) -> dict[str, Any]:
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}], **ids}
    body = rpc(client, base, "SendMessage", {"message": message})
    assert "task" in body.get("result", {}), body
    task: dict[str, Any] = body["result"]["task"]
    return task


def test_card_names_the_three_bindings(base: str, client: httpx.Client) -> None:
    card = client.get(f"{base}/.well-known/agent-card.json").json()
    interfaces = {(i["protocolBinding"], i["protocolVersion"], i["url"]) for i in card["supportedInterfaces"]}
    [grpc] = [url for binding, _, url in interfaces if binding == "GRPC"]
    assert interfaces == {("JSONRPC", "1.0", f"{base}/jsonrpc"), ("HTTP+JSON", "1.0", f"{base}/rest"),
                          ("GRPC", "1.0", grpc)} and grpc.startswith("127.0.0.1:")
    declared = {"streaming": True, "pushNotifications": False, "extendedAgentCard": False}
    assert card["capabilities"] == declared


def test_send_message_completes_and_is_read_back_on_both_bindings(base: str, client: httpx.Client) -> None:
    task = send(client, base, "hello", "m1")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [a["parts"] for a in task["artifacts"]] == [[{"text": "hello"}]]
    assert [m["messageId"] for m in task["history"]] == ["m1"]
    got = rpc(client, base, "GetTask", {"id": task["id"]})["result"]
    assert got == task
    rest = client.get(f"{base}/rest/tasks/{task['id']}")
    assert rest.status_code == 200, rest.text
    assert rest.json() == task


def test_input_required_then_follow_up_completes(base: str, client: httpx.Client) -> None:
    task = send(client, base, "input-required please", "ir-1")
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["status"]["message"]["role"] == "ROLE_AGENT"
    done = send(client, base, "the rest", "ir-2", taskId=task["id"], contextId=task["contextId"])
    assert done["id"] == task["id"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [a["parts"] for a in done["artifacts"]] == [[{"text": "the rest"}]]
    assert [m["role"] for m in done["history"]] == ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]


def test_unknown_task_is_not_found_on_both_bindings(base: str, client: httpx.Client) -> None:
    error = rpc(client, base, "GetTask", {"id": "no-such-task"})["error"]
    assert error["code"] == -32001
    assert error["data"][0]["reason"] == "TASK_NOT_FOUND"
    rest = client.get(f"{base}/rest/tasks/no-such-task")
    assert rest.status_code == 404
    assert rest.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
