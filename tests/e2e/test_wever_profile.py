"""The Wever Connect profile end to end: every binding passes against the reference
served over loopback (http: test_deployments.py; in process: test_selftest), and the report
groups requirements by surface."""

from __future__ import annotations

import json

import pytest

from tests.conftest import conformance


# stateless MCP served too: no session to lean on. Over http (the run's default binding) the
# served reference's plain run is test_deployments.py's[wever-connect], held to the same counts
@pytest.mark.parametrize("binding", ["mcp", "mcp-stateless"])
def test_wever_passes_served_over_each_binding_and_its_report_groups_by_surface(tmp_path, serve, binding):
    server = serve("wever-connect", "--control")
    report = tmp_path / binding
    result = conformance("run", "wever-connect", "--config", str(server.config), "--binding", binding,
                         "--budget", "quick",
                         "--report", str(report))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    summary = json.loads((report / "summary.json").read_text())
    counts = summary["counts"]
    assert counts["failed"] == counts["untested"] == counts["blocked"] == 0, counts
    assert counts["passed"] >= 100
    # the report groups the requirements by surface (a run of its own before: the same work)
    groups = {r["id"]: r.get("group") for r in summary["requirements"]}
    assert groups["WEVER-SURFACES-AGREE"] == "across surfaces"
    assert groups["WEVER-A2A-STRICT"] == "A2A adapter" and groups["WEVER-MCP-TOOLS"] == "MCP"
    assert groups["WEVER-SEND-OFFERED"].startswith("HTTP actions")
    html = (report / "report.html").read_text()
    assert html.count("<h3>") == 4 and "Requirements by group" in html
