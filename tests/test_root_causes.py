"""One bug, one finding: against a served reference with one fault that refuses the
request shape the checks use for set-up (a caller-chosen taskId) and one unrelated
fault, the report shows one root-cause group for the first, the requirements it
kept from running as `blocked` (not failed), and the other fault still found."""

from __future__ import annotations

import json

from conformance.model import Exchange
from conformance.report.rootcause import accepted_features, in_common, request_features
from tests.conftest import conformance


def test_a_refused_setup_blocks_instead_of_failing_and_reads_as_one_cause(tmp_path, serve):
    server = serve("bindu", "--control", "--fault", "caller_task_id_refused", "--fault", "no_body_limit")
    report = tmp_path / "r"
    result = conformance("run", "bindu", "--target", server.url, "--config", str(server.config), "--budget", "quick",
                         "--report", str(report))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    summary = json.loads((report / "summary.json").read_text())
    status = {r["id"]: r for r in summary["requirements"]}

    assert status["BINDU-SEND-CREATES-TASK"]["status"] == "failed"  # the requirement about the shape
    blocked = [r for r in summary["requirements"] if r["status"] == "blocked"]
    assert len(blocked) >= 10
    assert all("BINDU-SEND-CREATES-TASK" in r["message"] for r in blocked)  # says what it waits for
    assert summary["counts"]["blocked"] == len(blocked)
    assert summary["grade"] == "non-compliant"

    causes = summary["root_causes"]
    first = causes[0]
    assert "taskId is assigned by the server" in first["signature"]
    assert "BINDU-SEND-CREATES-TASK" in first["requirements"]
    assert {r["id"] for r in blocked} <= set(first["requirements"])  # one group, not one per requirement
    assert sum("taskId is assigned" in c["signature"] for c in causes) == 1
    # the request feature the blocked set-ups share and passing requirements' requests lack
    assert first["request_in_common"] == ["message/send: params.message.taskId as UUID string"], first

    assert status["BINDU-RPC-BODY-LIMIT"]["status"] == "failed"  # the other fault is still found
    assert any(c["requirements"] == ["BINDU-RPC-BODY-LIMIT"] for c in causes)
    assert "root causes (" in result.stdout and "BLOCKED" in result.stdout

    for r in summary["requirements"]:  # every finding names the statement it breaks and quotes the answer
        if r["status"] == "failed":
            assert "[breaks: " in r["message"], r
            assert "HTTP " in r["message"] or "no answer" in r["message"], r


def _exchange(body: dict, status: int, answer: str = "{}", url: str = "/v1/actions/send") -> Exchange:
    return Exchange(request={"method": "POST", "url": url, "body": json.dumps(body)},
                    response={"status": status, "body": answer})


def test_the_request_feature_in_common_is_one_no_accepted_request_carried():
    refused = [_exchange({"to": "a", "id": 7, "n": 1}, 400), _exchange({"to": "b", "id": 9}, 400)]
    accepted = accepted_features([_exchange({"to": "c", "id": "x"}, 200),
                                  _exchange({"to": "d", "id": 3}, 200, '{"error": {"code": 1}}')])  # an error is no acceptance
    assert in_common([request_features(e) for e in refused], accepted) == ["POST /v1/actions/send: id as integer"]
    assert in_common([request_features(refused[0])], accepted) == []  # one request has nothing "in common"
