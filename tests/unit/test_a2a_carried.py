"""Which breaks a binding carries intact (a2a's ``Inputs.carried`` over ``Binding.read_back``):
a JSON-RPC params object carries every break; over HTTP+JSON a path member travels as text
and a query parameter is read by its proto type (section 11.5), so a number given as a
string reads back as valid; over gRPC protobuf keeps only what the message can hold."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.kit.check import CheckContext
from conformance.protocols.a2a.inputs import Inputs
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile

PROFILE = load_profile("a2a")
ROW = next(r for r in PROFILE.requirements if r.id == "A2A-PARAMS-INVALID-GET-TASK")
TASK = "conformance-task-1"
BREAKS = {  # a break: is it carried over jsonrpc, http-json, grpc
    "GetTask's id a number (a path member)": ("GetTask", {"id": 5}, (True, False, False)),
    "GetTask's historyLength text": ("GetTask", {"id": TASK, "historyLength": "many"}, (True, True, False)),
    "ListTasks' contextId a number (a query parameter, read as text)":
        ("ListTasks", {"contextId": 5}, (True, False, False)),
}


@pytest.mark.parametrize("index,binding", list(enumerate(("jsonrpc", "http-json", "grpc"))))
def test_a_break_is_carried_where_the_server_reads_it_still_broken(index: int, binding: str) -> None:
    run = open_run(PROFILE, "reference", budget="quick", binding=binding)
    try:
        ctx = CheckContext(run, ROW)
        got: dict[str, Any] = {what: Inputs(ctx, method).carried(params)
                               for what, (method, params, _) in BREAKS.items()}
        assert got == {what: carried[index] for what, (_, _, carried) in BREAKS.items()}
    finally:
        run.http.close()
