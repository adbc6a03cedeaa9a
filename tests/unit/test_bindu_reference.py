"""The Bindu reference: its main behaviours against the spec, and that each named
fault changes exactly the behaviour it names."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from conformance.documents.openapi import error_catalog, jsonrpc_operations, schema_at
from conformance.documents.schemas import load_document, schema_errors
from conformance.model import Profile
from conformance.protocols.bindu import signing
from conformance.protocols.bindu.reference import (
    BinduReference,
    ReferenceConfig,
    TokenInfo,
    create_app,
    reference_credentials,
)
from conformance.run.profiles import DATA_ROOT as ROOT
from conformance.run.profiles import load_profile, read_settings

NOW = 1_750_000_000.0
CREDS = reference_credentials()


def build_profile() -> Profile:
    """The parts of the bindu profile the reference needs, read the way profiles.py reads them."""
    settings = read_settings(ROOT / "profiles" / "bindu.yaml")
    path = ROOT / settings["spec"]
    spec = load_document(path)
    cat = settings["error_catalog"]
    return Profile(
        name="bindu",
        title=settings["title"],
        spec_path=path,
        spec_relpath=settings["spec"],
        spec=spec,
        spec_sha256="",
        settings=settings,
        operations=jsonrpc_operations(spec, settings["spec"], settings["jsonrpc"]),
        errors=error_catalog(spec, path.read_text(), settings["spec"], cat["pointer"], cat["columns"]),
        requirements=[],
        faults={},
        create_reference=create_app,
        probe=lambda ctx: None,
    )


PROFILE = build_profile()
FAULTS = load_profile("bindu").faults  # every fault the bindu rows are proven against
BY_NAME = {e.name: e for e in PROFILE.errors.values()}


def code(name: str) -> int:
    return BY_NAME[name].code


def status(name: str) -> int:
    return BY_NAME[name].http_status


def schema(name: str) -> dict[str, Any]:
    return schema_at(PROFILE.spec, f"/components/schemas/{name}")


def assert_valid(schema_name: str, instance: Any) -> None:
    assert schema_errors(schema(schema_name), instance) == [], instance


class Agent:
    """A TestClient on a fresh reference, with helpers to speak JSON-RPC to it."""

    def __init__(self, fault: str | None = None, **config: Any) -> None:
        config.setdefault("clock", lambda: NOW)
        config.setdefault("seed", 7)
        config.setdefault("control", True)
        self.app = create_app(PROFILE, ReferenceConfig(**config))
        self.ref: BinduReference = self.app.state.reference
        if fault:
            FAULTS[fault](self.ref)
        self.http = TestClient(self.app, base_url="http://reference.local")

    def rpc(
        self,
        method: str,
        params: Any = None,
        token: str | None = "full",
        rid: Any = 1,
        headers: dict[str, str] | None = None,
    ) -> Any:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            body["params"] = params
        return self.post(json.dumps(body).encode(), token, headers)

    def post(self, raw: bytes, token: str | None = "full", headers: dict[str, str] | None = None) -> Any:
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if token:
            all_headers["Authorization"] = f"Bearer {CREDS.get(token, token)}"
        return self.http.post("/", content=raw, headers=all_headers)

    def send(self, text: str = "hi", token: str = "full", configuration: Any = None, **fields: Any) -> Any:
        message = {"role": "user", "parts": [{"kind": "text", "text": text}], "kind": "message",
                   "message_id": str(uuid.uuid4()), **fields}
        params: dict[str, Any] = {"message": message}
        if configuration is not None:
            params["configuration"] = configuration
        return self.rpc("message/send", params, token)

    def task(self, text: str = "hi", **fields: Any) -> dict[str, Any]:
        reply = self.send(text, **fields)
        assert reply.status_code == 200, reply.text
        return reply.json()["result"]

    def control(self, action: str, **args: Any) -> Any:
        return self.http.post(f"/_control/{action}", json=args)

    def signed(self, body: dict[str, Any], did: str | None = None, seed: bytes | None = None,
               timestamp: float | None = None, token: str = "did") -> Any:
        raw = json.dumps(body).encode()
        creds = CREDS["did"]
        did = did or creds["id"]
        headers = signing.sign_request(seed or bytes.fromhex(creds["seed"]), did, raw,
                                       int(NOW if timestamp is None else timestamp))
        return self.post(raw, creds["token"] if token == "did" else token, headers)


def error_of(reply: Any) -> tuple[int, int | None]:
    body = reply.json()
    return reply.status_code, (body.get("error") or {}).get("code")


def expect_error(reply: Any, name: str) -> dict[str, Any]:
    assert error_of(reply) == (status(name), code(name)), reply.text
    return reply.json()["error"]


LIST_BODY = {"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}}


# ---------------------------------------------------------------------- lifecycle


def test_lifecycle_and_task_shape() -> None:
    agent = Agent()
    task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
    task = agent.task("hello", taskId=task_id, contextId=context_id)
    assert (task["id"], task["context_id"], task["status"]["state"]) == (task_id, context_id, "completed")
    assert task["status"]["timestamp"].endswith("+00:00")
    assert [m["role"] for m in task["history"]] == ["user", "assistant"]
    part = task["artifacts"][0]["parts"][0]
    assert part["text"] == "Echo: hello"
    key = agent.ref.agent_public_key
    assert signing.verify_signature(key, part["text"].encode(), part["metadata"]["did.message.signature"])
    assert_valid("Task", task)

    for cap in (1, 2, 3):  # a cap above the history's length returns all of it
        got = agent.rpc("tasks/get", {"taskId": task_id, "historyLength": cap}).json()["result"]
        assert got["history"] == task["history"][-cap:]
    assert agent.rpc("tasks/get", {"task_id": task_id, "history_length": 0}).json()["result"]["history"] == []
    capped = agent.send("again", configuration={"acceptedOutputModes": ["text/plain"], "historyLength": 0})
    assert capped.json()["result"]["history"] == []

    # not idempotent: the same message_id twice makes two tasks
    msg_id = str(uuid.uuid4())
    assert agent.task(message_id=msg_id)["id"] != agent.task(message_id=msg_id)["id"]

    listed = agent.rpc("tasks/list", {"history_length": 1}, token="read").json()["result"]
    assert [t["id"] for t in listed][0] == task_id and len(listed) == 4
    assert all(len(t["history"]) <= 1 for t in listed)
    assert_valid("JsonRpcResponse", {"jsonrpc": "2.0", "id": 1, "result": listed})

    # continuation of a paused task, then immutability once terminal
    agent.control("next_outcome", state="input-required")
    paused = agent.task("question", contextId=context_id)
    assert paused["status"]["state"] == "input-required" and paused["status"]["message"]["role"] == "agent"
    assert_valid("Task", paused)
    resumed = agent.task("answer", taskId=paused["id"])
    assert resumed["status"]["state"] == "completed" and len(resumed["history"]) == 3
    expect_error(agent.send("more", taskId=paused["id"]), "TaskImmutable")

    # references
    chained = agent.task("next", referenceTaskIds=[task_id])
    assert chained["metadata"]["reference_task_ids"] == [task_id]
    expect_error(agent.send(referenceTaskIds=[str(uuid.uuid4())]), "TaskNotFound")

    # cancel
    agent.control("next_outcome", state="working")
    working = agent.task()
    canceled = agent.rpc("tasks/cancel", {"taskId": working["id"]}).json()["result"]
    assert canceled["status"]["state"] == "canceled"
    err = expect_error(agent.rpc("tasks/cancel", {"taskId": task_id}), "TaskNotCancelable")
    assert err["message"] == "Task is already in terminal state 'completed' and cannot be canceled"

    # feedback is stored but changes nothing visible
    before = agent.rpc("tasks/get", {"taskId": task_id}).json()["result"]
    fb = agent.rpc("tasks/feedback", {"taskId": task_id, "feedback": "good", "rating": 5})
    assert fb.json()["result"] == {"success": True}
    assert agent.rpc("tasks/get", {"taskId": task_id}).json()["result"] == before
    assert agent.ref.tasks[task_id].feedback == [{"feedback": "good", "rating": 5}]


def test_contexts() -> None:
    agent = Agent()
    ctx = str(uuid.uuid4())
    first = agent.task(contextId=ctx)
    second = agent.task(context_id=ctx)  # snake_case is normalised
    assert second["context_id"] == ctx
    contexts = agent.rpc("contexts/list", {"history_length": 1}).json()["result"]
    mine = next(c for c in contexts if c["context_id"] == ctx)
    assert mine["tasks"] == [second["id"]]
    for c in contexts:
        assert_valid("Context", c)

    agent.control("next_outcome", state="working")
    busy = agent.task(contextId=ctx)
    expect_error(agent.rpc("contexts/clear", {"contextId": ctx}), "ContextNotCancelable")
    agent.control("set_state", task_id=busy["id"], state="completed")
    cleared = agent.rpc("contexts/clear", {"contextId": ctx})
    assert cleared.json() == {"jsonrpc": "2.0", "id": 1, "result": {"success": True}}
    expect_error(agent.rpc("tasks/get", {"taskId": first["id"]}), "TaskNotFound")
    expect_error(agent.rpc("contexts/clear", {"contextId": ctx}), "ContextNotFound")


def test_streaming() -> None:
    agent = Agent(streaming=True)
    msg = {"role": "user", "parts": [{"kind": "text", "text": "s"}], "kind": "message",
           "message_id": str(uuid.uuid4())}
    reply = agent.rpc("message/stream", {"message": msg})
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[len("data: "):]) for line in reply.text.splitlines()
              if line.startswith("data: ")]
    assert [e["result"]["status"]["state"] for e in events] == ["submitted", "completed"]
    assert all(e["id"] == 1 and e["jsonrpc"] == "2.0" for e in events)
    for event in events:
        assert_valid("Task", event["result"])
    expect_error(Agent().rpc("message/stream", {"message": msg}), "UnsupportedOperation")
    expect_error(Agent().rpc("message/stream", {"message": {}}), "Invalid params")


def test_concurrent_duplicates_are_serialised() -> None:
    agent = Agent()
    task_id = str(uuid.uuid4())
    message = {"role": "user", "parts": [{"kind": "text", "text": "x"}], "kind": "message",
               "message_id": str(uuid.uuid4()), "taskId": task_id}
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}

    async def burst() -> list[int]:
        transport = httpx.ASGITransport(app=agent.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://reference.local") as client:
            headers = {"Authorization": f"Bearer {CREDS['full']}"}
            replies = await asyncio.gather(*(client.post("/", json=body, headers=headers) for _ in range(20)))
        return sorted(r.status_code for r in replies)

    statuses = asyncio.run(burst())
    assert statuses == [200] + [status("TaskImmutable")] * 19
    assert list(agent.ref.tasks) == [task_id] and len(agent.ref.tasks[task_id].history) == 2


# ---------------------------------------------------------------------- errors


def test_protocol_errors_use_catalog_status() -> None:
    agent = Agent()
    parse = agent.post(b"{not json")
    expect_error(parse, "Parse error")
    assert parse.json()["id"] is None
    expect_error(agent.post(b"\xff\xfe"), "Parse error")
    for body, echoed in [
        ([], None),
        ({"jsonrpc": "1.0", "id": 3, "method": "tasks/list"}, 3),
        ({"jsonrpc": "2.0", "id": "a", "method": 5}, "a"),
        ({"jsonrpc": "2.0", "method": "tasks/list"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "tasks/list"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "tasks/list"}, None),
    ]:
        reply = agent.post(json.dumps(body).encode())
        expect_error(reply, "Invalid Request")
        assert reply.json()["id"] == echoed
    expect_error(agent.rpc("tasks/nope", {}), "Method not found")
    err = expect_error(agent.rpc("message/send", {"message": {"role": "user"}}), "Invalid params")
    assert err["message"].startswith("Invalid params: ")
    expect_error(agent.rpc("tasks/get", {"taskId": "not-a-uuid"}), "Invalid params")
    expect_error(agent.rpc("tasks/list", []), "Invalid params")
    null_params = {"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": None}
    expect_error(agent.post(json.dumps(null_params).encode()), "Invalid params")
    missing = str(uuid.uuid4())
    assert (expect_error(agent.rpc("tasks/get", {"taskId": missing}), "TaskNotFound")["data"]
            == {"taskId": missing})
    expect_error(agent.send(configuration={"acceptedOutputModes": ["image/png"]}), "ContentTypeNotSupported")
    assert agent.send(configuration={"acceptedOutputModes": ["*/*"]}).status_code == 200
    push = {"acceptedOutputModes": ["text/plain"], "pushNotificationConfig": {"url": "http://x"}}
    expect_error(agent.send(configuration=push), "PushNotificationNotSupported")
    listed = agent.rpc("tasks/list", rid="abc").json()
    assert listed["id"] == "abc" and len(listed["result"]) == 1


def test_body_limit() -> None:
    agent = Agent()
    reply = agent.post(b" " * (10 * 1024 * 1024 + 1))
    assert reply.status_code == 413
    assert not reply.headers["content-type"].startswith("application/json")
    # an unexpected exception inside a handler is Internal error
    agent.ref.tasks_list = lambda params, caller: 1 / 0  # type: ignore[method-assign]
    expect_error(agent.rpc("tasks/list", {}), "Internal error")


# ---------------------------------------------------------------------- auth


def test_auth_scopes_and_ownership() -> None:
    agent = Agent()
    assert expect_error(agent.rpc("tasks/list", {}, token=None), "AuthenticationRequired")
    expect_error(agent.rpc("tasks/list", {}, token="bogus"), "InvalidToken")
    expect_error(agent.rpc("tasks/list", {}, token="expired"), "TokenExpired")
    err = expect_error(agent.send(token="read"), "InsufficientPermissions")
    assert (err["message"]
            == "Scope 'agent:read' does not permit method 'message/send'; requires 'agent:write'")
    expect_error(agent.rpc("tasks/list", {}, token="write"), "InsufficientPermissions")
    task = agent.task(token="write")
    assert agent.rpc("tasks/get", {"taskId": task["id"]}, token="read").status_code == 200
    assert agent.rpc("tasks/get", {"taskId": task["id"]}, token="legacy").status_code == 200
    assert agent.send(token="legacy").status_code == 200
    expect_error(agent.rpc("tasks/get", {"taskId": task["id"]}, token="other"), "TaskNotFound")
    expect_error(agent.rpc("tasks/cancel", {"taskId": task["id"]}, token="other"), "TaskNotFound")
    assert agent.rpc("tasks/list", {}, token="other").json()["result"] == []
    assert agent.rpc("contexts/list", {}, token="other").json()["result"] == []
    expect_error(agent.send(token="other", taskId=task["id"]), "TaskNotFound")
    expect_error(agent.send(token="other", contextId=task["context_id"]), "ContextNotFound")
    expect_error(agent.rpc("contexts/clear", {"contextId": task["context_id"]}, token="other"),
                 "ContextNotFound")
    # the token of an inactive client is invalid
    inactive = Agent(tokens={"t": TokenInfo("c", ("agent:read",), active=False)})
    expect_error(inactive.rpc("tasks/list", {}, token="t"), "InvalidToken")
    # auth off: no token needed
    assert Agent(auth=False).rpc("tasks/list", {}, token=None).status_code == 200


def test_advance_clock_expires_tokens() -> None:
    agent = Agent(tokens={"t": TokenInfo("c", ("agent:read",), exp=NOW + 60)})
    assert agent.rpc("tasks/list", {}, token="t").status_code == 200
    assert agent.control("advance_clock", seconds=120).json()["ok"] is True
    expect_error(agent.rpc("tasks/list", {}, token="t"), "TokenExpired")


# ---------------------------------------------------------------------- DID signing


def did_reason(reply: Any) -> str:
    err = expect_error(reply, "InvalidTokenSignature")
    assert err["message"] == "Invalid DID signature" and err["data"]["did_verified"] is False
    return err["data"]["reason"]


def test_did_signing_gates() -> None:
    agent = Agent()
    did = CREDS["did"]
    assert agent.signed(LIST_BODY).status_code == 200
    raw = json.dumps(LIST_BODY).encode()
    assert did_reason(agent.post(raw, did["token"], {"X-DID": did["id"]})) == "missing_signature_headers"
    assert (did_reason(agent.post(raw, did["token"], {"X-DID-Signature": "abc"}))
            == "missing_signature_headers")
    assert did_reason(agent.signed(LIST_BODY, token="full")) == "did_mismatch"  # gate 1
    assert did_reason(agent.signed(LIST_BODY, did="did:bindu:someone-else")) == "did_mismatch"  # gate 2
    assert did_reason(agent.signed(LIST_BODY, timestamp=NOW - 301)) == "timestamp_out_of_window"
    assert agent.signed(LIST_BODY, timestamp=NOW - 300).status_code == 200
    assert did_reason(agent.signed(LIST_BODY, seed=bytes(32))) == "crypto_mismatch"
    headers = signing.sign_request(bytes.fromhex(did["seed"]), did["id"], raw, int(NOW))
    assert did_reason(agent.post(raw + b" ", did["token"], headers)) == "crypto_mismatch"
    for bad in ({"X-DID-Timestamp": "soon"}, {"X-DID-Signature": "0OIl"}, {"X-DID-Signature": "3yZe7d"}):
        assert did_reason(agent.post(raw, did["token"], {**headers, **bad})) == "malformed_input"
    nokey = Agent(tokens={"t": TokenInfo(did["id"], ("agent:read",))})
    assert did_reason(nokey.signed(LIST_BODY, token="t")) == "public_key_unavailable"
    # auth off: the key is found by DID; an unknown DID has none
    open_agent = Agent(auth=False)
    assert open_agent.signed(LIST_BODY, token="").status_code == 200
    assert (did_reason(open_agent.signed(LIST_BODY, did="did:bindu:nobody", token=""))
            == "public_key_unavailable")


# ---------------------------------------------------------------------- REST


def test_discovery_endpoints() -> None:
    agent = Agent()
    root = agent.http.get("/", follow_redirects=False)
    assert root.status_code == 302 and root.headers["location"] == "/.well-known/agent.json"
    card = agent.http.get("/.well-known/agent.json").json()
    assert_valid("AgentCard", card)
    assert card["did"] == agent.ref.agent_did and card["url"] == "http://reference.local/"
    assert card["capabilities"]["streaming"] is False
    assert (Agent(streaming=True).http.get("/.well-known/agent.json").json()["capabilities"]["streaming"]
            is True)
    assert agent.http.head("/.well-known/agent.json").status_code == 200
    options = agent.http.options("/.well-known/agent.json")
    assert options.status_code == 204 and options.headers["access-control-allow-origin"] == "*"
    assert options.headers["access-control-allow-methods"] == "GET, HEAD, OPTIONS"

    document = agent.http.get("/did/resolve", params={"did": card["did"]})
    assert document.status_code == 200
    assert_valid("DidDocument", document.json())
    assert document.json()["verificationMethod"][0]["publicKeyBase58"] == agent.ref.agent_public_key
    assert agent.http.post("/did/resolve", json={"did": card["did"]}).json() == document.json()
    assert agent.http.get("/did/resolve", params={"did": "did:bindu:unknown"}).status_code == 404
    assert agent.http.get("/did/resolve", params={"did": "did:web:x"}).status_code == 400
    assert agent.http.get("/did/resolve").status_code == 400
    assert agent.http.post("/did/resolve", json={}).status_code == 400
    assert agent.http.post("/did/resolve", content=b"{").status_code == 400

    skills = agent.http.get("/agent/skills").json()
    for skill in skills:
        assert_valid("SkillSummary", skill)
    assert_valid("SkillSummary", card["skills"][0])
    detail = agent.http.get(f"/agent/skills/{skills[0]['id']}")
    assert_valid("SkillDetail", detail.json())
    docs = agent.http.get(f"/agent/skills/{skills[0]['id']}/documentation")
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/markdown")
    for path in ("/agent/skills/nope", "/agent/skills/nope/documentation"):
        missing = agent.http.get(path)
        assert missing.status_code == status("SkillNotFound")
        assert missing.json() == {"error": "Skill 'nope' not found", "code": code("SkillNotFound")}


def test_negotiation() -> None:
    agent = Agent()
    weights = {"skill_match": 0.55, "io_compatibility": 0.2, "performance": 0.15, "load": 0.05, "cost": 0.05}
    good = agent.http.post("/agent/negotiation", json={"task_summary": "echo some text", "weights": weights})
    assert_valid("NegotiationResponse", good.json())
    assert good.json()["can_handle"] is True and 0.5 <= good.json()["score"] <= 1
    request = {"task_summary": "render a video", "output_mime_types": ["video/mp4"], "weights": weights,
               "min_score": 0.9}
    poor = agent.http.post("/agent/negotiation", json=request).json()
    assert_valid("NegotiationResponse", poor)
    assert poor["can_handle"] is False and poor["score"] < good.json()["score"]
    heavy = agent.http.post("/agent/negotiation",
                            json={"task_summary": "echo", "weights": {"skill_match": 5}})
    assert heavy.status_code == 400  # weights out of [0, 1]
    assert agent.http.post("/agent/negotiation", json={"weights": weights}).status_code == 400


def test_payments() -> None:
    assert Agent().http.post("/api/start-payment-session").status_code == 404
    assert "error" in Agent().http.get("/api/payment-status/ps_x").json()
    paid = Agent(paid=True)
    session = paid.http.post("/api/start-payment-session")
    assert session.status_code == 200
    assert_valid("PaymentSession", session.json())
    polled = paid.http.get(f"/api/payment-status/{session.json()['session_id']}").json()
    assert_valid("PaymentStatus", polled)
    assert polled["status"] == "pending"
    paid.control("advance_clock", seconds=301)
    assert paid.http.get(f"/api/payment-status/{polled['session_id']}").json()["status"] == "expired"
    capture = paid.http.get("/payment-capture", params={"session_id": polled["session_id"]})
    assert capture.status_code == 200 and capture.headers["content-type"].startswith("text/html")
    assert paid.http.get("/api/payment-status/nope").status_code == 404


def test_health_and_metrics() -> None:
    agent = Agent()
    health = agent.http.get("/health")
    assert health.status_code == 200 and health.json()["status"] == "healthy"
    assert_valid("HealthResponse", health.json())
    agent.control("set_health", component="storage", status="error: connection refused")
    degraded = agent.http.get("/health")
    assert degraded.status_code == 503 and degraded.json()["status"] == "degraded"
    assert_valid("HealthResponse", degraded.json())
    agent.task()
    metrics = agent.http.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert 'http_requests_total{method="POST",path="/",status="200"} 1' in metrics.text
    assert 'agent_tasks_completed_total{state="completed"} 1' in metrics.text
    assert 'agent_tasks_active{state="working"} 0' in metrics.text


def test_control_interface() -> None:
    assert Agent(control=False).control("reset").status_code == 404
    agent = Agent()
    assert agent.control("next_outcome", state="bogus").status_code == 400
    assert agent.control("nope").status_code == 404
    for state in ("failed", "rejected", "auth-required", "submitted"):
        agent.control("next_outcome", state=state)
        task = agent.task()
        assert task["status"]["state"] == state
        assert_valid("Task", task)
    agent.control("next_outcome", state="working")
    task = agent.task()
    moved = agent.control("set_state", task_id=task["id"], state="completed")
    assert moved.status_code == 200 and moved.json()["task"]["artifacts"]
    assert agent.control("set_state", task_id=task["id"], state="working").status_code == 409
    assert agent.control("set_state", task_id=str(uuid.uuid4()), state="working").status_code == 404
    assert agent.control("reset").json() == {"ok": True}
    assert agent.rpc("tasks/list", {}).json()["result"] == []


# ---------------------------------------------------------------------- faults

Probe = Callable[[Agent], Any]
TASK_ID = "11111111-2222-4333-8444-555555555555"
CTX_ID = "99999999-2222-4333-8444-555555555555"
WEIGHTS = {"skill_match": 0.5, "io_compatibility": 0.5}


def _code(reply: Any) -> Any:
    return error_of(reply)


def _worked(agent: Agent, outcome: str) -> dict[str, Any]:
    agent.control("next_outcome", state=outcome)
    return agent.task(contextId=CTX_ID)


def _history_after_feedback(agent: Agent) -> int:
    task = agent.task()
    agent.rpc("tasks/feedback", {"taskId": task["id"], "feedback": "meh"})
    return len(agent.rpc("tasks/get", {"taskId": task["id"]}).json()["result"]["history"])


def _signature_ok(agent: Agent) -> bool:
    part = agent.task()["artifacts"][0]["parts"][0]
    return signing.verify_signature(agent.ref.agent_public_key, part["text"].encode(),
                                    part["metadata"]["did.message.signature"])


def _dedupe(agent: Agent) -> bool:
    mid = str(uuid.uuid4())
    return agent.task(message_id=mid)["id"] == agent.task(message_id=mid)["id"]


def _list_caps(agent: Agent) -> Any:
    agent.task()
    agent.task()
    tasks = agent.rpc("tasks/list", {"history_length": 1}).json()["result"]
    return len(tasks), [len(t["history"]) for t in tasks]


def _contexts_cap(agent: Agent) -> int:
    agent.task(contextId=CTX_ID)
    agent.task(contextId=CTX_ID)
    return len(agent.rpc("contexts/list", {"history_length": 1}).json()["result"][0]["tasks"])


def _clear_then_get(agent: Agent) -> Any:
    task = agent.task(contextId=CTX_ID)
    agent.rpc("contexts/clear", {"contextId": CTX_ID})
    return _code(agent.rpc("tasks/get", {"taskId": task["id"]}))


def _listed_history(agent: Agent) -> Any:
    agent.task()
    return [t.get("history") is not None for t in agent.rpc("tasks/list", {}).json()["result"]]


def _foreign_send(agent: Agent) -> Any:
    owner = agent.task()
    return _code(agent.send(token="other", taskId=owner["id"], contextId=owner["context_id"]))


def _foreign_context(agent: Agent) -> Any:
    owner = agent.task(contextId=CTX_ID)
    agent.send(token="other", contextId=CTX_ID)
    listed = agent.rpc("contexts/list", {}).json()["result"]
    return [len(c["tasks"]) for c in listed if c["context_id"] == owner["context_id"]]


def _send_after_clear(agent: Agent) -> Any:
    agent.task(contextId=CTX_ID)
    agent.rpc("contexts/clear", {"contextId": CTX_ID})
    return _code(agent.send(contextId=CTX_ID))


def _signed_as(agent: Agent, label: str, drop: str = "") -> Any:
    creds = CREDS[label]
    raw = json.dumps(LIST_BODY).encode()
    headers = signing.sign_request(bytes.fromhex(creds["seed"]), creds["id"], raw, int(NOW))
    headers.pop(drop, None)
    return agent.post(raw, creds["token"], headers)


def _timestamp_moves(agent: Agent) -> bool:
    task = _worked(agent, "working")
    agent.control("advance_clock", seconds=5)
    canceled = agent.rpc("tasks/cancel", {"taskId": task["id"]}).json()["result"]
    return bool(canceled["status"]["timestamp"] != task["status"]["timestamp"])


def _count(agent: Agent, method: str, params: dict[str, Any]) -> int:
    agent.task()
    agent.task()
    return len(agent.rpc(method, params).json()["result"])


def _stream(agent: Agent) -> list[Any]:
    message = {"role": "user", "parts": [{"kind": "text", "text": "x"}], "kind": "message",
               "message_id": TASK_ID, "taskId": CTX_ID}
    agent.ref.config.streaming = True
    reply = agent.rpc("message/stream", {"message": message}, rid=5)
    return [json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")]


ANY_MODE = {"acceptedOutputModes": ["*/*"]}


PROBES: dict[str, Probe] = {
    "parse_error_http_200": lambda a: a.post(b"{").status_code,
    "parse_error_id_not_null": lambda a: a.post(b"{").json()["id"],
    "invalid_request_as_parse_error": lambda a: _code(a.post(b"[]")),
    "unknown_method_internal_error": lambda a: _code(a.rpc("tasks/nope", {})),
    "id_not_echoed": lambda a: a.rpc("tasks/list", {}, rid=7).json()["id"],
    "no_body_limit": lambda a: a.post(b" " * (10 * 1024 * 1024 + 1)).status_code,
    "rejects_unknown_params": lambda a: _code(a.rpc("tasks/list", {"extra": 1})),
    "skip_params_validation": lambda a: _code(a.rpc("tasks/get", {})),
    "invalid_params_as_parse_error": lambda a: _code(a.rpc("tasks/get", {})),
    "errors_with_http_200": lambda a: _code(a.rpc("tasks/get", {"taskId": TASK_ID})),
    "uncatalogued_error_code": lambda a: _code(a.rpc("contexts/clear", {"contextId": CTX_ID})),
    "unknown_task_internal_error": lambda a: _code(a.rpc("tasks/get", {"taskId": TASK_ID})),
    "ignores_caller_task_id": lambda a: a.task(taskId=TASK_ID)["id"],
    "caller_task_id_refused": lambda a: _code(a.send(taskId=TASK_ID)),
    "dedupes_message_id": _dedupe,
    "ignores_output_modes": lambda a: _code(a.send(configuration={"acceptedOutputModes": ["image/png"]})),
    "history_length_ignored": lambda a: len(a.task(configuration={"acceptedOutputModes": ["*/*"],
                                                                  "historyLength": 0})["history"]),
    "list_history_caps_tasks": _list_caps,
    "contexts_history_ignored": _contexts_cap,
    "cancel_terminal_succeeds": lambda a: _code(a.rpc("tasks/cancel", {"taskId": a.task()["id"]})),
    "cancel_noop": lambda a: a.rpc("tasks/cancel", {"taskId": _worked(a, "working")["id"]})
                             .json()["result"]["status"]["state"],
    "terminal_task_reopened": lambda a: _code(a.send(taskId=a.task()["id"])),
    "feedback_changes_state": _history_after_feedback,
    "clear_keeps_tasks": _clear_then_get,
    "list_omits_history": _listed_history,
    "send_continues_foreign_task": _foreign_send,
    "send_joins_foreign_context": _foreign_context,
    "cleared_context_refused": _send_after_clear,
    "clear_purges_running": lambda a: (_worked(a, "working"),
                                       _code(a.rpc("contexts/clear", {"contextId": CTX_ID})))[1],
    "clear_unknown_context_succeeds": lambda a: _code(a.rpc("contexts/clear", {"contextId": CTX_ID})),
    "reference_task_rejected": lambda a: _code(a.send(referenceTaskIds=[a.task()["id"]])),
    "input_required_not_resumable": lambda a: _code(a.send(taskId=_worked(a, "input-required")["id"])),
    "stream_ignores_capability": lambda a: _code(a.rpc("message/stream", {"message": {
        "role": "user", "parts": [{"kind": "text", "text": "x"}], "kind": "message",
        "message_id": TASK_ID}})),
    "snake_case_params_rejected": lambda a: _code(a.rpc("tasks/get", {"task_id": a.task()["id"]})),
    "camel_case_responses": lambda a: sorted(a.task()),
    "context_missing_created_at": lambda a: (a.task(),
                                             sorted(a.rpc("contexts/list", {}).json()["result"][0]))[1],
    "success_as_string": lambda a: a.rpc("tasks/feedback",
                                         {"taskId": a.task()["id"], "feedback": "ok"}).json()["result"],
    "auth_not_enforced": lambda a: _code(a.rpc("tasks/list", {}, token=None)),
    "invalid_token_accepted": lambda a: _code(a.rpc("tasks/list", {}, token="bogus")),
    "expired_token_accepted": lambda a: _code(a.rpc("tasks/list", {}, token="expired")),
    "scope_check_skipped": lambda a: _code(a.send(token="read")),
    "write_implies_read": lambda a: _code(a.rpc("tasks/list", {}, token="write")),
    "legacy_execute_rejected": lambda a: _code(a.rpc("tasks/list", {}, token="legacy")),
    "ownership_not_enforced": lambda a: _code(a.rpc("tasks/get", {"taskId": a.task()["id"]}, token="other")),
    "rejects_valid_signature": lambda a: a.signed(LIST_BODY).status_code,
    "signature_not_verified": lambda a: a.signed(LIST_BODY, seed=bytes(32)).status_code,
    "stale_timestamp_accepted": lambda a: a.signed(LIST_BODY, timestamp=NOW - 1000).status_code,
    "did_mismatch_accepted": lambda a: a.signed(LIST_BODY, did="did:bindu:someone-else").status_code,
    "malformed_signature_crashes": lambda a: a.post(json.dumps(LIST_BODY).encode(), CREDS["did"]["token"], {
        "X-DID": CREDS["did"]["id"], "X-DID-Timestamp": str(int(NOW)),
        "X-DID-Signature": "0OIl"}).status_code,
    "partial_headers_ignored": lambda a: a.post(json.dumps(LIST_BODY).encode(), CREDS["did"]["token"],
                                                {"X-DID": CREDS["did"]["id"]}).status_code,
    "artifact_signature_wrong": _signature_ok,
    "did_resolve_post_missing": lambda a: a.http.post("/did/resolve",
                                                      json={"did": a.ref.agent_did}).status_code,
    "card_missing_did": lambda a: "did" in a.http.get("/.well-known/agent.json").json(),
    "health_wrong_content_type": lambda a: a.http.get("/health").headers["content-type"],
    "root_not_redirect": lambda a: a.http.get("/", follow_redirects=False).status_code,
    "card_options_405": lambda a: a.http.options("/.well-known/agent.json").status_code,
    "skill_not_found_500": lambda a: a.http.get("/agent/skills/nope").status_code,
    "skill_docs_missing": lambda a: a.http.get("/agent/skills/echo-v1/documentation").status_code,
    "negotiation_score_percent": lambda a: a.http.post("/agent/negotiation",
                                                       json={"task_summary": "echo", "weights": WEIGHTS})
                                           .json()["score"],
    "metrics_json": lambda a: a.http.get("/metrics").headers["content-type"],
    "payment_session_on_unpaid": lambda a: a.http.post("/api/start-payment-session").status_code,
    "push_config_ignored": lambda a: _code(
        a.send(configuration={**ANY_MODE, "pushNotificationConfig": {"url": "https://x.invalid"}})),
    "agent_fault_internal_error": lambda a: (a.control("next_agent_fault", kind="malformed_result"),
                                             _code(a.send()))[1],
    "extended_card_internal_error": lambda a: _code(a.rpc("agent/getAuthenticatedExtendedCard", {})),
    "auth_required_treated_terminal": lambda a: _code(a.send(taskId=_worked(a, "auth-required")["id"])),
    "completed_without_artifacts": lambda a: len(a.task()["artifacts"]),
    "status_timestamp_frozen": _timestamp_moves,
    "list_honours_limit": lambda a: _count(a, "tasks/list", {"limit": 1}),
    "contexts_honour_length": lambda a: _count(a, "contexts/list", {"length": 1}),
    "contexts_history_caps_contexts": lambda a: _count(a, "contexts/list", {"history_length": 1}),
    "gate1_skipped": lambda a: _signed_as(a, "plain_signer").status_code,
    "no_key_accepted": lambda a: _signed_as(a, "did_nokey").status_code,
    "missing_timestamp_ignored": lambda a: _signed_as(a, "did", drop="X-DID-Timestamp").status_code,
    "future_timestamp_accepted": lambda a: a.signed(LIST_BODY, timestamp=NOW + 1000).status_code,
    "window_too_narrow": lambda a: a.signed(LIST_BODY, timestamp=NOW - 200).status_code,
    "body_limit_too_small": lambda a: a.post(b" " * (9 * 1024 * 1024)).status_code,
    "negotiation_creates_task": lambda a: (a.http.post("/agent/negotiation",
                                                       json={"task_summary": "echo", "weights": WEIGHTS}),
                                           len(a.rpc("tasks/list", {}).json()["result"]))[1],
    "health_always_200": lambda a: (a.control("set_health", component="storage", status="error: down"),
                                    a.http.get("/health").status_code)[1],
    "metrics_missing_series": lambda a: "agent_llm_tokens_total" in a.http.get("/metrics").text,
    "stream_events_without_id": lambda a: _stream(a)[0]["id"],
    "stream_events_of_another_task": lambda a: _stream(a)[0]["result"]["id"],
    "send_without_ids_refused": lambda a: _code(a.send()),
    "send_joins_oldest_context": lambda a: len({a.task()["context_id"] for _ in range(2)}),
    "card_did_in_extension": lambda a: "did" in a.http.get("/.well-known/agent.json").json(),
    "skill_not_found_enveloped": lambda a: sorted(a.http.get("/agent/skills/nope").json()),
    "success_as_message": lambda a: a.rpc("tasks/feedback",
                                          {"taskId": a.task()["id"], "feedback": "ok"}).json()["result"],
    "feedback_refused_as_failure": lambda a: a.rpc(
        "tasks/feedback", {"taskId": a.task()["id"], "feedback": "ok"}).json()["result"],
    "notification_answered": lambda a: sorted(a.post(b'{"jsonrpc": "2.0", "method": "tasks/list"}').json()),
    "blocking_ignored": lambda a: (a.control("next_outcome", state="working"),
                                   a.send(configuration={**ANY_MODE, "blocking": True})
                                   .json()["result"]["status"]["state"])[1],
}


def test_every_fault_has_a_probe_and_a_docstring() -> None:
    assert set(FAULTS) == set(PROBES)
    for name, fn in FAULTS.items():
        assert fn.__doc__ and "\n" not in fn.__doc__.strip(), name


@pytest.mark.parametrize("name", sorted(PROBES))
def test_fault_changes_behaviour(name: str) -> None:
    clean = PROBES[name](Agent())
    faulty = PROBES[name](Agent(fault=name))
    assert clean != faulty, f"{name}: no observable difference ({clean!r})"


def test_faults_patch_one_instance_only() -> None:
    faulty = Agent(fault="auth_not_enforced")
    clean = Agent()
    assert faulty.rpc("tasks/list", {}, token=None).status_code == 200
    expect_error(clean.rpc("tasks/list", {}, token=None), "AuthenticationRequired")
