"""One bug, one finding: where the agent refuses one operation (ListTasks answered -32004
UnsupportedOperationError, the reference's fault ``list_tasks_unsupported``), only that
operation's own rows fail; every row that only uses it to look (at camelCase names, enum
names, timestamps, the history, a task's listing, ...) is blocked naming the row about it
(A2A-LIST-RESPONSE), and nothing else changes."""

from __future__ import annotations

import json

from tests.conftest import conformance

LOOKING = {"A2A-JSON-CAMEL-CASE", "A2A-JSON-ENUM-NAMES", "A2A-JSON-TIMESTAMP-UTC", "A2A-JSON-TIMESTAMP-MS",
           "A2A-JSON-ARTIFACT-PARTS", "A2A-JSON-PART-CONTENT", "A2A-TASK-HISTORY-OMITTED", "A2A-TASK-MACHINE",
           "A2A-AGREE-TASK", "A2A-AGREE-AUTH", "A2A-AUTH-LIST-SCOPE", "A2A-IDEM-GET",
           "A2A-STREAM-AUTH-REQUIRED-OPEN"}


def test_rows_that_only_look_through_a_refused_operation_are_blocked_in_its_name(tmp_path):
    result = conformance("run", "a2a", "--fault", "list_tasks_unsupported", "--binding", "jsonrpc",
                         "--budget", "quick", "--report", str(tmp_path / "r"))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    rows = {r["id"]: r for r in json.loads((tmp_path / "r" / "summary.json").read_text())["requirements"]}
    failed = {i for i, r in rows.items() if r["status"] == "failed"}
    blocked = {i for i, r in rows.items() if r["status"] == "blocked"}
    assert failed and all(i.startswith("A2A-LIST-") for i in failed), failed
    assert "A2A-LIST-RESPONSE" in failed
    assert blocked == LOOKING, (blocked - LOOKING, LOOKING - blocked)
    for rid in blocked:
        assert "(the subject of A2A-LIST-RESPONSE)" in rows[rid]["message"], rows[rid]["message"]
        assert "-32004" in rows[rid]["message"] or "UNSUPPORTED_OPERATION" in rows[rid]["message"], rid
    others = {i: r["status"] for i, r in rows.items() if i not in failed | blocked}
    assert set(others.values()) <= {"passed", "skipped"}, {i: s for i, s in others.items()
                                                          if s not in ("passed", "skipped")}


def test_rows_about_an_errors_form_are_blocked_where_the_invalid_request_they_send_is_served():
    """A2A-ERR-CODE-MESSAGE, -DETAILS-TYPED and -VALIDATION-DETAILS judge the form of the error a
    broken SendMessage gets; a server that serves it (a lenient parser taking parts as given)
    shows them no error to look at: they are blocked naming A2A-PARAMS-INVALID-SEND-MESSAGE,
    which fails on it, instead of three more failures of one bug."""
    from conformance.kit.faults import replaces
    from conformance.run.launch import open_run
    from conformance.run.profiles import load_profile
    from conformance.run.runner import execute

    profile = load_profile("a2a")
    rows = {r.id: r for r in profile.requirements}
    run = open_run(profile, "reference", budget="quick", binding="jsonrpc")
    ref = run.reference

    @replaces(ref.validate)
    def validate(original, method, params):
        message = params.get("message") if isinstance(params, dict) else None
        parts = message.get("parts") if isinstance(message, dict) else []
        if method == "SendMessage" and not isinstance(parts, list):
            return None  # taken as given
        return original(method, params)

    for rid in ("A2A-ERR-CODE-MESSAGE", "A2A-ERR-DETAILS-TYPED", "A2A-ERR-VALIDATION-DETAILS"):
        verdict = execute(rows[rid], run)
        assert verdict.status == "blocked", (rid, verdict.status, verdict.message)
        assert "(the subject of A2A-PARAMS-INVALID-SEND-MESSAGE)" in verdict.message, verdict.message
    assert execute(rows["A2A-PARAMS-INVALID-SEND-MESSAGE"], run).status == "failed"
