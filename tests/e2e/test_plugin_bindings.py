"""The pytest plugin speaks every binding a run would: each one the target declares (the A2A
reference's card: three), or those --binding names (repeatable, all), one test per requirement
and binding, one summary and one JUnit file; never the first binding alone, silently."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import ROOT


def plugin_run(tmp_path: Path, profile: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / f"{profile}.yaml").write_bytes((ROOT / "profiles" / f"{profile}.yaml").read_bytes())
    return subprocess.run([sys.executable, "-m", "pytest", f"{profile}.yaml", "-v", "-p", "no:cacheprovider",
                           "--budget", "quick", "--report", "r", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)


def test_the_plugin_speaks_each_binding_the_card_declares(tmp_path):
    result = plugin_run(tmp_path, "a2a", "--only", "A2A-CARD-SERVED")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    for binding in ("jsonrpc", "http-json", "grpc"):
        assert f"::A2A-CARD-SERVED[{binding}] PASSED" in result.stdout, result.stdout[-3000:]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["bindings"] == ["jsonrpc", "http-json", "grpc"]
    assert [r["binding"] for r in summary["requirements"] if r["status"] == "passed"] == summary["bindings"]


def test_the_plugin_takes_binding_all_and_honours_it(tmp_path):
    rid = "CANON-MESSAGE-ID-CONFLICT"
    result = plugin_run(tmp_path, "canon-verbs", "--binding", "all", "--only", rid,
                        "--fault", "message_id_conflict_accepted")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    assert f"::{rid}[http] FAILED" in result.stdout and f"::{rid}[mcp] FAILED" in result.stdout
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["bindings"] == ["http", "mcp"] and summary["counts"]["failed"] == 2
    assert sorted(p.name for p in (tmp_path / "r" / "cases").glob("*.json")) == [f"{rid}.http.json",
                                                                                 f"{rid}.mcp.json"]
    suites = ET.parse(tmp_path / "r" / "junit.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["conformance canon-verbs over http",
                                               "conformance canon-verbs over mcp"]
    assert [s.get("failures") for s in suites] == ["1", "1"]
    # without --binding, Canon's target says nothing of its bindings: the profile's first
    first = plugin_run(tmp_path, "canon-verbs", "--only", rid, "--report", "r1")
    assert f"::{rid} PASSED" in first.stdout and "[mcp]" not in first.stdout, first.stdout[-3000:]
    assert json.loads((tmp_path / "r1" / "summary.json").read_text())["bindings"] == ["http"]
