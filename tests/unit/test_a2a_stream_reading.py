"""How the A2A streaming rows read a stream: SSE text by the standard's framing, each event as
a whole answer of the binding, and the artifacts a stream's updates build in order."""

from __future__ import annotations

import json

from conformance.protocols.a2a.event_streams import (
    Stream,
    read_events,
    rebuilt,
    sse_events,
    terminal_problems,
)


def test_sse_framing_comments_fields_multiline_data_and_line_ends():
    text = (": hello\r\nevent: message\r\nid: 1\r\ndata: {\"a\":\r\ndata:  1}\r\n\r\n"
            "data: 2\n\ndata: 3\r\rdata: cut")
    assert sse_events(text) == ['{"a":\n 1}', "2", "3"]  # the last event never ended: not dispatched


def test_an_event_over_json_rpc_is_the_response_to_the_request():
    good = {"jsonrpc": "2.0", "id": "r1", "result": {"task": {"id": "t"}}}
    other = {"jsonrpc": "2.0", "id": "r2", "result": {"task": {"id": "t"}}}
    bare = {"task": {"id": "t"}}
    text = "".join(f"data: {json.dumps(v)}\n\n" for v in (good, other, bare)) + "data: {oops\n\n"
    events = read_events(text, "jsonrpc-http", "r1")
    assert [bool(e.problem) for e in events] == [False, True, True, True]
    assert events[0].kind == "task" and events[2].payload is None
    assert [e.problem for e in read_events(text, "http-routes", "r1")][2] == ""  # HTTP+JSON: bare is right


def stream_of(*payloads: dict) -> Stream:
    text = "".join(f"data: {json.dumps(p)}\n\n" for p in payloads)
    return Stream("a stream", None, read_events(text, "http-routes", None))


def chunk(parts: list[str], append: bool = False, last: bool = False) -> dict:
    return {"artifactUpdate": {"taskId": "t", "contextId": "c", "append": append, "lastChunk": last,
                               "artifact": {"artifactId": "a", "parts": [{"text": p} for p in parts]}}}


def test_append_adds_to_the_artifact_and_a_plain_update_replaces_it():
    built, problems = rebuilt(stream_of(chunk(["x"]), chunk(["y"], append=True), chunk(["z"], append=True,
                                                                                      last=True)))
    assert built == {"a": [{"text": "x"}, {"text": "y"}, {"text": "z"}]} and problems == []
    built, _ = rebuilt(stream_of(chunk(["x"]), chunk(["y"])))
    assert built == {"a": [{"text": "y"}]}


def test_order_breaks_are_named():
    _, problems = rebuilt(stream_of(chunk(["y"], append=True), chunk(["x"], last=True), chunk(["z"])))
    assert any("before any chunk" in p for p in problems)
    assert any("follows its lastChunk" in p for p in problems)


def test_only_a_task_snapshot_may_follow_the_terminal_state():
    done = {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}
    snapshot = {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}
    assert terminal_problems(stream_of(chunk(["x"]), done, snapshot)) == []
    assert terminal_problems(stream_of(done, chunk(["x"])))
    assert terminal_problems(stream_of(chunk(["x"])))  # no terminal state at all


def test_a_grpc_stream_is_read_by_its_messages_whatever_its_body_says():
    """A gRPC server stream's messages are the events (each a whole answer: no envelope), and
    a stream is one that ended with status OK."""
    import httpx

    from conformance.protocols.a2a.event_streams import reply_events, streamed
    from conformance.transport.grpc import GrpcReply
    from conformance.transport.http import HttpReply

    messages = [{"task": {"id": "t"}}, {"statusUpdate": {"taskId": "t"}}]
    http = HttpReply(200, httpx.Headers({}), json.dumps(messages).encode(), None)
    reply = GrpcReply("grpc", http, True, messages, events=messages)
    events = reply_events(reply, "grpc", "r1")
    assert streamed(reply) and [e.kind for e in events] == ["task", "statusUpdate"]
    assert not any(e.problem for e in events)
    refused = GrpcReply("grpc", http, False, None, 9, "no", events=[])
    assert not streamed(refused) and reply_events(refused, "grpc", "r1") == []
