"""What a gate's exit code and grade mean: a gating requirement left untested exits 5
unless --allow-untested; what the spec makes optional can be declared away (and the
grade says so), nothing else can."""

from __future__ import annotations

import json

from conformance import cli
from conformance.report.summary import EXIT_OK, EXIT_UNTESTED, EXIT_USAGE


def run(tmp_path, capsys, *args: str) -> tuple[int, dict]:
    code = cli.main(["run", "bindu", "--budget", "quick", "--report", str(tmp_path / "r"), *args])
    capsys.readouterr()
    return code, json.loads((tmp_path / "r" / "summary.json").read_text())


def test_a_gate_never_passes_on_nothing(tmp_path, capsys, monkeypatch):
    """Without the credential it needs, BINDU-SCOPE-READ is untested: exit 5, not 0."""
    from conformance.protocols.bindu import reference

    real = reference.reference_credentials
    monkeypatch.setattr(reference, "reference_credentials",
                        lambda: {k: v for k, v in real().items() if k != "read"})
    from conformance.run.profiles import _CACHE

    monkeypatch.delitem(_CACHE, "bindu", raising=False)
    code, summary = run(tmp_path, capsys, "--only", "BINDU-SCOPE-READ", "--only", "BINDU-HEALTH")
    assert code == EXIT_UNTESTED and summary["verdict"] == "incomplete"
    assert {r["id"]: r["status"] for r in summary["requirements"]}["BINDU-SCOPE-READ"] == "untested"
    code, _ = run(tmp_path, capsys, "--only", "BINDU-SCOPE-READ", "--only", "BINDU-HEALTH",
                  "--allow-untested")
    assert code == EXIT_OK
    monkeypatch.delitem(_CACHE, "bindu", raising=False)


def test_an_optional_feature_can_be_declared_away(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("declared: [did_signing]\n")
    code, summary = run(tmp_path, capsys, "--config", str(config), "--only", "BINDU-DID-VALID",
                        "--only", "BINDU-HEALTH")
    assert code == EXIT_OK
    did = next(r for r in summary["requirements"] if r["id"] == "BINDU-DID-VALID")
    assert did["status"] == "skipped" and "not applicable (declared" in did["message"]
    assert summary["declared"] == ["did_signing"] and "did_signing" in summary["grade_note"]


def test_what_the_spec_makes_mandatory_cannot_be_declared_away(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("declared: [authentication]\n")
    assert cli.main(["run", "bindu", "--config", str(config), "--report", str(tmp_path / "r")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "not optional in the bindu spec" in err and "did_signing" in err
