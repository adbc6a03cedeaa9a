"""The A2A gRPC binding: the kit's protocol-free grpc binding against the reference's grpcio
server (in process, over loopback), the gRPC rows passing, and what the binding refuses to
call. (Every fault caught over each binding, every variant passed: tests/e2e/test_selftest.py.)"""

from __future__ import annotations

import json

import pytest

from conformance.protocols.a2a.client import EXTENSIONS_HEADER
from conformance.protocols.a2a.reference.extensions import REQUIRED_EXTENSION
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.transport.grpc import GrpcBinding, to_json
from tests.conftest import in_process


@pytest.fixture(scope="module")
def run():
    run = open_run(load_profile("a2a"), "reference", binding="grpc")
    yield run
    run.http.close()


def grpc_binding(run, url: str | None = None) -> GrpcBinding:
    address = url or run.reference.grpc_address()
    entry = {**run.profile.settings["bindings"]["grpc"], "url": address}
    return GrpcBinding("grpc", entry, run.http, lambda label, required: run.credentials.get(label))


def test_a_call_answers_protojson_and_an_error_its_status_and_error_info(run):
    binding = grpc_binding(run)
    needed = {EXTENSIONS_HEADER: REQUIRED_EXTENSION}  # the reference's card requires it (section 3.3.4)
    sent = binding.call("SendMessage", {"message": {"messageId": "m-1", "role": "ROLE_USER",
                                                    "parts": [{"text": "hi"}]}}, headers=needed)
    assert sent.ok and sent.result["task"]["status"]["state"] == "TASK_STATE_COMPLETED", sent.describe()
    missing = binding.call("GetTask", {"id": "no-such-task"}, headers=needed)
    assert not missing.ok and missing.spoke and missing.grpc_status == "NOT_FOUND"
    info = [d for d in missing.error_data if d["@type"].endswith("google.rpc.ErrorInfo")]
    assert info and info[0]["reason"] == "TASK_NOT_FOUND" and info[0]["domain"] == "a2a-protocol.org"
    exchange = run.http.log[-1]
    assert exchange.request["method"] == "gRPC"
    assert run.credentials["full"] not in json.dumps(exchange.request)


def test_a_server_stream_answers_its_messages_or_its_status(run):
    binding = grpc_binding(run)
    reply = binding.call("SendStreamingMessage", {"message": {"messageId": "m-2", "role": "ROLE_USER",
                                                             "parts": [{"text": "hi"}]}})
    assert reply.spoke  # the reference refuses streaming while its card declares it off
    assert reply.ok and isinstance(reply.result, list) or reply.grpc_status == "FAILED_PRECONDITION"


def test_what_protobuf_cannot_carry_is_not_sent(run):
    reply = grpc_binding(run).call("SendMessage", {"message": {"messageId": "m", "role": "ROLE_USER",
                                                               "parts": "not a list"}})
    assert not reply.ok and not reply.spoke and "not sent" in reply.error_message


def test_only_loopback_or_the_target_host_is_called(run):
    for url in ("203.0.113.7:443", "http://example.com:50051"):
        reply = grpc_binding(run, url).call("GetTask", {"id": "x"})
        assert not reply.ok and not reply.spoke and "not sent" in reply.error_message, url


def test_defaults_without_presence_travel_as_protojson_leaves_them_out(run):
    """An empty list, an empty string: not on the wire, so not in the answer; a REQUIRED one is."""
    service = grpc_binding(run).service
    request_cls, response_cls, _ = service.methods["ListTasks"]
    answer = to_json(response_cls(page_size=0), service.required)
    assert answer["tasks"] == [] and answer["nextPageToken"] == ""  # REQUIRED in the proto
    part = to_json(service.methods["SendMessage"][0](), service.required)
    assert part == {}


def test_the_grpc_rows_pass_on_the_reference(capsys, tmp_path):
    result = in_process(capsys, "run", "a2a", "--binding", "grpc", "--budget", "quick",
                        "--only", "A2A-GRPC-*", "--only", "A2A-ERR-*-GRPC", "--only", "A2A-AGREE-*",
                        "--report", str(tmp_path / "r"))
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    got = {r["id"]: r["status"] for r in summary["requirements"] if r["status"] != "skipped"
           or r["id"].startswith("A2A-GRPC")}
    assert result.returncode in (0, 5) and "failed" not in got.values(), result.stdout[-3000:]
    for rid in ("A2A-GRPC-SERVICE", "A2A-GRPC-METADATA", "A2A-GRPC-VERSION", "A2A-GRPC-ERRORINFO",
                "A2A-ERR-TASK-NOT-FOUND-GRPC", "A2A-AGREE-TASK"):
        assert got[rid] == "passed", (rid, got)


def test_a_grpc_stream_of_the_reference_is_judged_by_the_stream_rows():
    """The reference's EventStream read by grpcio's thread pool: the stream rows judge its
    messages as they judge SSE events (A2A-STREAM-SSE, of SSE itself, is not applicable), and
    an empty StreamResponse among them is caught over gRPC too."""
    from conformance.run.runner import execute

    profile = load_profile("a2a")
    by_id = {r.id: r for r in profile.requirements}
    rows = ("A2A-STREAM-SSE", "A2A-STREAM-EVENT-SHAPE", "A2A-STREAM-TASK-FIRST", "A2A-STREAM-ORDER",
            "A2A-SUB-UPDATES", "A2A-SUB-CLOSE-TERMINAL")
    clean = open_run(profile, "reference", binding="grpc")
    try:
        got = {rid: execute(by_id[rid], clean) for rid in rows}
        streamed = [e for e in clean.http.log if e.request["url"].endswith("/SubscribeToTask")]
    finally:
        clean.http.close()
    assert got.pop("A2A-STREAM-SSE").status == "skipped"
    assert {rid: v.status for rid, v in got.items()} == dict.fromkeys(got, "passed"), \
        {rid: v.message for rid, v in got.items() if v.status != "passed"}
    assert streamed and json.loads(streamed[-1].response["body"])[0]["task"]["id"]
    faulty = open_run(profile, "reference", faults=("stream_event_empty",), binding="grpc", shrink=False)
    try:
        shape = execute(by_id["A2A-STREAM-EVENT-SHAPE"], faulty)
    finally:
        faulty.http.close()
    assert shape.status == "failed" and "event 2 is no StreamResponse" in shape.message, shape.message
