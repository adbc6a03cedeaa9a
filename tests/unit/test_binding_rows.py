"""A run over several bindings in the reports: summary.json keeps one flat list of rows, each
naming its binding (a run over one binding reads as before), baselines record and honour the
binding, `conformance diff` compares row by row and still reads a summary written before rows
named their binding."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import yaml

from conformance import cli
from conformance.failures import Failure
from conformance.report.baseline import Baseline, Entry, baseline_from_summary
from conformance.report.diff import diff_summaries
from conformance.report.summary import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Result, build_summary
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict

BINDINGS = ["jsonrpc", "http-json", "grpc"]


def summary_of(statuses: dict[tuple[str, str], str], bindings: list[str]) -> dict:
    profile = load_profile("a2a")
    reqs = {r.id: r for r in profile.requirements}
    def verdict(rid: str, status: str) -> Verdict:
        return Verdict(status, f"{rid} {status}",
                       failures=[Failure("expectation", "x")] if status == "failed" else [])

    results = [Result(reqs[rid], verdict(rid, status), binding=binding)
               for (rid, binding), status in statuses.items()]
    return build_summary(profile, results, target="reference", seed=1, budget="quick", gate="must",
                         started_at=datetime.now(UTC), duration_s=1.0, exchanges=1, bindings=bindings)


def test_one_list_of_rows_each_naming_its_binding_and_a_block_per_binding():
    rows = {("A2A-CARD-SERVED", b): "passed" for b in BINDINGS} | {("A2A-CANCEL-TASK", "grpc"): "failed",
                                                                   ("A2A-CANCEL-TASK", "jsonrpc"): "passed",
                                                                   ("A2A-CANCEL-TASK", "http-json"): "passed"}
    several = summary_of(rows, BINDINGS)
    assert several["binding"] is None and several["bindings"] == BINDINGS
    assert [(r["id"], r["binding"]) for r in several["requirements"]] == list(rows)
    assert several["by_binding"]["grpc"]["verdict"] == "fail"
    assert several["by_binding"]["jsonrpc"]["verdict"] == "pass"
    assert several["counts"]["failed"] == 1 and several["counts"]["passed"] == 5
    assert several["root_causes"][0]["requirements"] == ["A2A-CANCEL-TASK[grpc]"]
    assert "rows (requirement and binding)" not in several["verdict_reason"]  # a failure names its rows
    assert several["verdict_reason"].startswith("1 MUST row failed")
    one = summary_of({("A2A-CARD-SERVED", "jsonrpc"): "passed"}, ["jsonrpc"])
    # a run over one binding: the keys it always had, plus each row's binding
    assert one["binding"] == "jsonrpc" and one["by_binding"] == {} and one["bindings"] == ["jsonrpc"]
    assert set(one["requirements"][0]) - set(several["requirements"][0]) == set()
    assert one["verdict_reason"].startswith("every requirement at level MUST")


def test_baseline_entries_record_their_binding_and_cover_only_it():
    summary = summary_of({("A2A-CANCEL-TASK", "grpc"): "failed", ("A2A-CANCEL-TASK", "jsonrpc"): "passed"},
                         ["jsonrpc", "grpc"])
    [entry] = yaml.safe_load(baseline_from_summary(summary))
    assert entry["id"] == "A2A-CANCEL-TASK" and entry["binding"] == "grpc"
    baseline = Baseline([Entry("A2A-CANCEL-TASK", None, "known", binding="grpc")], "b.yaml")
    assert baseline.judge("A2A-CANCEL-TASK", "failed", "m", [], "grpc", True)[0] == "expected_failure"
    assert baseline.judge("A2A-CANCEL-TASK", "failed", "m", [], "jsonrpc", True)[0] == "failed"
    assert baseline.judge("A2A-CANCEL-TASK", "passed", "", [], "jsonrpc", True)[2] == ""  # not its binding
    assert "over grpc" in baseline.judge("A2A-CANCEL-TASK", "passed", "", [], "grpc", True)[2]
    # an old summary (one binding, rows without theirs) records the run's binding
    old = {"profile": "a2a", "binding": "http-json", "requirements": [
        {"id": "A2A-CANCEL-TASK", "level": "MUST", "status": "failed", "message": "m"}]}
    assert yaml.safe_load(baseline_from_summary(old))[0]["binding"] == "http-json"


def test_an_entry_for_every_binding_is_stale_only_when_each_binding_passes():
    def baseline() -> Baseline:
        return Baseline([Entry("R", None, "known")], "b.yaml")

    early = baseline()
    assert early.judge("R", "passed", "", [], "jsonrpc", True) == ("passed", None, "")  # not yet
    assert early.settle([("R", "jsonrpc", "passed"), ("R", "grpc", "expected_failure")]) == []
    done = baseline()
    [stale] = done.settle([("R", "jsonrpc", "passed"), ("R", "grpc", "passed")])
    assert "now passes over every binding" in stale and done.stale == [stale]
    single = baseline()  # one binding: stale on the row, as before
    assert "is stale" in single.judge("R", "passed", "", [], "jsonrpc", False)[2]


def write(tmp_path, name: str, data: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


OLD = {"profile": "a2a", "binding": "jsonrpc", "spec": {"sha256": "a"}, "requirements": [
    {"id": "A", "level": "MUST", "status": "passed"}, {"id": "B", "level": "MUST", "status": "failed"}]}
NEW = {"profile": "a2a", "binding": None, "bindings": BINDINGS, "spec": {"sha256": "a"}, "requirements": [
    {"id": "A", "binding": "jsonrpc", "level": "MUST", "status": "passed"},
    {"id": "A", "binding": "grpc", "level": "MUST", "status": "failed"},
    {"id": "B", "binding": "jsonrpc", "level": "MUST", "status": "passed"},
    {"id": "B", "binding": "http-json", "level": "MUST", "status": "failed"}]}


def test_diff_compares_row_by_row_and_reads_a_summary_from_before_rows_named_their_binding():
    changes = diff_summaries(OLD, NEW)
    assert changes["regressions"] == []  # A[grpc] and B[http-json] were not checked before
    assert [(c["id"], c["binding"]) for c in changes["stopped_failing"]] == [("B", "jsonrpc")]
    assert sorted((c["id"], c["binding"]) for c in changes["added"]) == [("A", "grpc"), ("B", "http-json")]
    later = json.loads(json.dumps(NEW))
    later["requirements"][0]["status"] = "failed"
    assert [(c["id"], c["binding"]) for c in diff_summaries(NEW, later)["regressions"]] == [("A", "jsonrpc")]
    assert diff_summaries(NEW, later, "grpc")["regressions"] == []  # narrowed to one binding


@pytest.mark.parametrize(("args", "code", "said"), [
    ((), EXIT_OK, "`A[grpc]` (failed)"),
    (("--binding", "jsonrpc"), EXIT_OK, "`B` (MUST)"),
    (("--binding", "mcp"), EXIT_USAGE, "neither run spoke it"),
])
def test_diff_takes_binding(tmp_path, capsys, args, code, said):
    result = cli.main(["diff", write(tmp_path, "old.json", OLD), write(tmp_path, "new.json", NEW), *args])
    out, err = capsys.readouterr()
    assert result == code and said in out + err, out + err
    if code == EXIT_OK:
        assert "the bindings differ" in err or args  # the runs spoke other bindings: a warning


def test_diff_flags_a_regression_of_one_binding(tmp_path, capsys):
    later = json.loads(json.dumps(NEW))
    later["requirements"][2]["status"] = "failed"
    assert cli.main(["diff", write(tmp_path, "a.json", NEW), write(tmp_path, "b.json", later)]) == EXIT_FAILED
    assert "1 regression(s): B[jsonrpc]" in capsys.readouterr().out
