"""The Bindu reference: its main behaviours against the spec, and each named fault
described in one line (that each is caught, and the clean reference is not:
tests/e2e/test_selftest.py)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
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
# That each fault changes what the reference does, and that the clean reference does not show it,
# is tests/e2e/test_selftest.py's: test_fault_is_caught[bindu:<fault>] fails every requirement naming
# the fault with a finding that quotes the answer and names the statement it breaks, and
# test_clean_reference_passes_everything_and_no_must_fails_on_a_variant[bindu:*] passes those
# requirements on the clean reference (a hand-written probe per fault was a second edit for every new
# fault, proving less: its own reading, not the document's).


def test_every_fault_has_a_one_line_docstring() -> None:
    assert FAULTS
    for name, fn in FAULTS.items():
        assert fn.__doc__ and "\n" not in fn.__doc__.strip(), name


def test_faults_patch_one_instance_only() -> None:
    faulty = Agent(fault="auth_not_enforced")
    clean = Agent()
    assert faulty.rpc("tasks/list", {}, token=None).status_code == 200
    expect_error(clean.rpc("tasks/list", {}, token=None), "AuthenticationRequired")
