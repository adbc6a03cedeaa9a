"""Where the A2A document admits two readings, no row fails a server that follows either
(docs/a2a.md section 2): the version as a request parameter (section 3.6.1 lets clients send
it; sections 9.2 and 11.2 say service parameters travel as headers, so a server may take the
request for 0.3), and where a validation error names its field (section 3.3.2 asks that it be
named; 9.5 gives google.rpc.BadRequest as an example of a form). Each row still fails a server
that follows neither reading."""

from __future__ import annotations

import json

import pytest

from tests.conftest import conformance


def row(tmp_path, rid: str, *fault: str) -> dict:
    report = tmp_path / ("-".join(fault) or "clean")
    args = ["run", "a2a", "--binding", "jsonrpc", "--only", rid, "--report", str(report)]
    for name in fault:
        args += ["--fault", name]
    conformance(*args)
    [found] = [r for r in json.loads((report / "summary.json").read_text())["requirements"] if r["id"] == rid]
    return found


@pytest.mark.parametrize("rid, other_reading, neither, cited", [
    ("A2A-VERSION-QUERY-PARAM", "version_query_ignored", "version_query_invalid",
     ["§3.6.1 (line 724)", "§9.2 (line 2242)", "§11.2 (line 2757)", "§3.6.2 (line 739)"]),
    ("A2A-ERR-VALIDATION-DETAILS", "validation_field_in_message", "validation_field_unnamed", []),
])
def test_each_reading_is_accepted_and_neither_fails(tmp_path, rid, other_reading, neither, cited):
    assert row(tmp_path, rid)["status"] == "passed"
    other = row(tmp_path, rid, other_reading)
    assert other["status"] in ("passed", "untested"), other
    for where in cited:
        assert where in other["message"], other["message"]
    assert row(tmp_path, rid, neither)["status"] == "failed"


def test_a_server_that_takes_no_batches_may_refuse_one_as_a_whole():
    """The A2A document says nothing of batches (A2A-RPC-BATCH is the profile's SHOULD): one
    Invalid Request for the whole array passes it as the batch's responses do."""
    from conformance.kit.faults import replaces
    from conformance.kit.reference import Refusal
    from conformance.run.launch import open_run
    from conformance.run.profiles import load_profile
    from conformance.run.runner import execute

    profile = load_profile("a2a")
    [batch] = [r for r in profile.requirements if r.id == "A2A-RPC-BATCH"]
    run = open_run(profile, "reference", budget="quick", binding="jsonrpc")
    assert execute(batch, run).status == "passed"
    ref = run.reference

    @replaces(ref.rpc_batch)
    def refused(original, request, items):
        return ref.rpc_error(None, Refusal("InvalidRequestError", "batches are not supported"))
    assert execute(batch, run).status == "passed"
