"""A2A streams from a hostile server on loopback: the reference, served by uvicorn, whose
event streams never end, drip a byte at a time, grow past the run's size cap, or carry
events that are not JSON. Each streaming row ends within the kit's limits (the exchange
deadline, the size cap) with a finding that quotes what arrived, never a traceback or a
crash; and the clean reference, served the same way, passes them (a real socket, where
a subscription runs beside other requests)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import uvicorn
from starlette.responses import StreamingResponse

from conformance.protocols.a2a import rest
from conformance.protocols.a2a.reference import A2AReference, A2AReferenceConfig
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute
from tests.conftest import free_port

ROWS = ("A2A-STREAM-SSE", "A2A-STREAM-EVENT-SHAPE", "A2A-STREAM-CLOSE-TERMINAL", "A2A-STREAM-ORDER")


async def endless(first: str) -> AsyncIterator[str]:
    """The first event, then the same status update forever."""
    yield first
    while True:
        await asyncio.sleep(0.02)
        yield ('data: {"statusUpdate": {"taskId": "t", "contextId": "c", '
               '"status": {"state": "TASK_STATE_WORKING"}}}\n\n')


async def drip(first: str) -> AsyncIterator[str]:
    """One byte of the first event at a time."""
    for char in first:
        yield char
        await asyncio.sleep(0.2)


async def huge(first: str) -> AsyncIterator[str]:
    """The first event, then events of 256 KiB each, fast."""
    yield first
    pad = "x" * (256 * 1024)
    while True:
        await asyncio.sleep(0)
        yield f'data: {{"statusUpdate": {{"taskId": "t", "pad": "{pad}"}}}}\n\n'


async def malformed(first: str) -> AsyncIterator[str]:
    """Events that are not JSON, one that is JSON but no answer, then the end."""
    yield "data: {not json\n\n"
    yield "data: [1, 2, 3]\n\n"
    yield first[:-4] + "\n\n"  # the first event, its JSON cut short


BEHAVIOURS = {"endless": endless, "drip": drip, "huge": huge, "malformed": malformed}


class Served:
    """The reference on a loopback port, in a thread (uvicorn), its streams ``behaviour``'s."""

    def __init__(self, behaviour: str | None) -> None:
        profile = load_profile("a2a")
        self.ref = A2AReference(profile, A2AReferenceConfig(security=False))
        if behaviour is not None:
            hostile = BEHAVIOURS[behaviour]

            def sse(stream: Any, wrap: Any) -> Any:
                first = f"data: {json.dumps(wrap(stream.queue[0]))}\n\n"
                return StreamingResponse(hostile(first), media_type="text/event-stream")
            self.ref.sse = sse  # type: ignore[method-assign]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.ref.app(), host="127.0.0.1", port=self.port,
                                                    log_level="error", timeout_graceful_shutdown=1))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def short_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream may take 1.5 s, not 10: in every module of the profile that reads the limit
    (each imports it by name, so patching the one that defines it alone changed nothing, and
    each hostile stream waited 10 s a row)."""
    load_profile("a2a")  # every module of the profile imported
    package = rest.__name__.rpartition(".")[0] + "."
    holders = [module for name, module in list(sys.modules.items())
               if name.startswith(package) and hasattr(module, "STREAM_TIMEOUT")]
    assert len(holders) > 1, holders
    for module in holders:
        monkeypatch.setattr(module, "STREAM_TIMEOUT", 1.5)


def verdicts(served: Served, binding: str, rows: tuple[str, ...] = ROWS,
             control: bool = False) -> Iterator[tuple[str, Any]]:
    profile = load_profile("a2a")
    config: dict[str, Any] = {"timeout": 3, "max_answer_mib": 1}
    if control:
        config["control"] = served.url + "/_control"
    run = open_run(profile, served.url, config=config, budget="quick", binding=binding)
    by_id = {r.id: r for r in profile.requirements}
    for rid in rows:
        yield rid, execute(by_id[rid], run)


@pytest.mark.parametrize("behaviour", list(BEHAVIOURS))
def test_a_hostile_stream_ends_each_row_within_the_limits_with_a_finding(behaviour, short_streams):
    served = Served(behaviour)
    try:
        got = dict(verdicts(served, "jsonrpc"))
    finally:
        served.stop()
    for rid, verdict in got.items():  # a row judges what arrived: it may hold, or be a finding
        assert verdict.status in ("passed", "failed"), (rid, verdict.status, verdict.message)
        assert "crash" not in {f.kind for f in verdict.failures}, (rid, verdict.message)
        assert "Traceback" not in verdict.message
    closing = got["A2A-STREAM-CLOSE-TERMINAL"]
    assert closing.status == "failed" and closing.failures, closing.message

def test_a_cut_stream_is_quoted_as_far_as_it_arrived(short_streams):
    served = Served("endless")
    try:
        [(rid, verdict)] = list(verdicts(served, "jsonrpc", rows=("A2A-STREAM-CLOSE-TERMINAL",)))
    finally:
        served.stop()
    assert verdict.status == "failed", verdict.message
    said = " ".join(f.message for f in verdict.failures)
    assert "did not close the stream" in said and "events (task" in said, said


@pytest.mark.parametrize("binding", ["jsonrpc", "http-json", "grpc"])
def test_the_served_reference_passes_the_streaming_rows_over_a_socket(binding):
    served = Served(None)
    served.ref.config = dataclasses.replace(served.ref.config, control=True)
    rows = (*ROWS, "A2A-STREAM-TASK-FIRST", "A2A-SUB-TASK-FIRST", "A2A-SUB-UPDATES", "A2A-SUB-CLOSE-TERMINAL",
            "A2A-SUB-TERMINAL-REFUSED", "A2A-SUB-BROADCAST", "A2A-STREAM-AUTH-REQUIRED-OPEN")
    try:
        got = {rid: v for rid, v in verdicts(served, binding, rows=rows, control=True)}
    finally:
        served.stop()
    sse = got.pop("A2A-STREAM-SSE")  # of SSE itself: over gRPC the proto's stream StreamResponse
    assert sse.status == ("skipped" if binding == "grpc" else "passed"), sse.message
    assert {rid: v.status for rid, v in got.items()} == dict.fromkeys(got, "passed"), \
        {rid: v.message for rid, v in got.items() if v.status != "passed"}
