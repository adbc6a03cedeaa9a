"""One bug, one finding: against a served reference with one fault that refuses the
request shape the checks use for set-up (a caller-chosen taskId) and one unrelated
fault, the report shows one root-cause group for the first, the requirements it
kept from running as `blocked` (not failed), and the other fault still found."""

from __future__ import annotations

import json

from conformance.kit.evidence import accepted_features, request_features
from conformance.model import Exchange
from conformance.report.rootcause import in_common
from tests.conftest import conformance


def test_a_refused_setup_blocks_instead_of_failing_and_reads_as_one_cause(tmp_path, serve):
    server = serve("bindu", "--control", "--fault", "caller_task_id_refused", "--fault", "no_body_limit")
    report = tmp_path / "r"
    result = conformance("run", "bindu", "--target", server.url, "--config", str(server.config),
                         "--budget", "quick",
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
                                  # an error is no acceptance
                                  _exchange({"to": "d", "id": 3}, 200, '{"error": {"code": 1}}')])
    assert (in_common([request_features(e) for e in refused], accepted)
            == ["POST /v1/actions/send: id as integer"])
    assert in_common([request_features(refused[0])], accepted) == []  # one request has nothing "in common"


# -- labels: what broke, in words -----------------------------------------------------

def _result(rid: str, status: str, exchanges: list, kind: str | None = None, cause: str = "",
            message: str = "m"):
    from types import SimpleNamespace

    from conformance.failures import Failure
    from conformance.run.runner import Verdict

    verdict = Verdict(status, message, exchanges, failures=[Failure(kind, message)] if kind else [],
                      cause=cause)
    return SimpleNamespace(requirement=SimpleNamespace(id=rid), verdict=verdict.with_root())


def _rpc_error(code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message}})


def test_each_group_has_a_label_in_words_from_the_kinds_meaning():
    from conformance.failures import KINDS
    from conformance.report.rootcause import group, signature

    send = {"method": "message/send"}
    results = [
        _result("A", "failed", [_exchange(send, 200, '{"jsonrpc": "2.0", "id": 1, "result": {}}')],
                "accepted_invalid"),
        _result("B", "failed",
                [_exchange(send, 401, _rpc_error(-32009, "Authentication required for tasks/get"))],
                "wrong_error_code"),
        _result("C", "failed", [_exchange(send, 200, _rpc_error(-32001, "Task not found 4711"))],
                "wrong_status"),
        _result("D", "failed",
                [Exchange(request={"method": "POST", "url": "/"}, response=None, error="read timed out")],
                "no_answer"),
        _result("E", "passed", [_exchange(send, 200)]),
    ]
    by_id = {c["requirements"][0]: c for c in group(results)}
    assert set(by_id) == {"A", "B", "C", "D"}
    assert (by_id["A"]["label"] == "An invalid request was answered with success instead of an error "
                                   "(the target answered HTTP 200)")
    assert by_id["B"]["label"] == ("An error came with a code other than the one the spec or profile "
                                   "requires: the target answered HTTP 401 with error -32009 'Authentication "
                                   "required for tasks/get'")
    assert by_id["C"]["label"].startswith("An answer came with an HTTP status other than the one "
                                          "required: the target "
                                          "answered HTTP 200 with error -32001 'Task not found 4711'")
    assert (by_id["D"]["label"]
            == "The target sent no usable answer: timeout, reset, oversized (read timed out)")
    for c in by_id.values():  # the words are the kind's own (failures.KINDS), never "(set by the runner)"
        assert "set by the runner" not in c["label"]
        assert any(c["label"].lower().startswith(words.split(" (")[0].lower())
                   for words in KINDS.values()), c["label"]
    # the signature stays what it was (fuzz and the console dedup by it): blurred, terse
    assert (by_id["B"]["signature"] == signature(results[1].verdict)
            == "HTTP 401, error -32009 Authentication required for tasks/get")
    assert by_id["C"]["signature"] == "wrong_status: answers with HTTP 200"


def test_a_label_of_something_served_names_the_answer_that_served_it():
    """A later refusal (the next sub-check's expected 401) is not what broke an accepted_invalid check."""
    from conformance.report.rootcause import group

    served = _exchange({"method": "tasks/list"}, 200, '{"jsonrpc": "2.0", "id": 1, "result": []}')
    refused = _exchange({"method": "tasks/list"}, 401, _rpc_error(-32011, "Token has expired"))
    (cause,) = group([_result("F", "failed", [served, refused], "accepted_invalid")])
    assert "HTTP 401" in cause["signature"]  # the signature keeps its old reading
    assert (cause["label"] == "An invalid request was answered with success instead of an error "
                              "(the target answered HTTP 200)")


def test_a_group_of_blocked_requirements_reads_as_the_refusal_that_blocked_them():
    from conformance.report.rootcause import group

    refusal = _rpc_error(-32602, "Invalid params: taskId is assigned by the server " + "x" * 200)
    results = [_result(f"B{i}", "blocked", [_exchange({"method": "message/send"}, 400, refusal)],
                       cause="rejected_valid")
               for i in range(3)]
    results.append(_result("S", "failed", [_exchange({"method": "message/send"}, 400, refusal)],
                           "rejected_valid"))
    (cause,) = group(results)
    assert cause["count"] == 4
    label = cause["label"]
    assert label.startswith("A valid request was refused: the target answered HTTP 400 with error -32602 "
                            "'Invalid params: taskId is assigned by the server")
    assert label.endswith("…'") and len(label) < 220  # the target's own message, clipped
