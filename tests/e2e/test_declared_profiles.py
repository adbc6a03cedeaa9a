"""Each profile whose document lets a target declare a feature off, served with a variant
that does: the rows about that feature are not applicable by the declaration (skipped,
never untested, the message naming it), so the default gate passes (exit 0); a feature
declared and then not served still fails. (The engine's bookkeeping:
tests/e2e/test_declared_by_target.py.)"""

from __future__ import annotations

import json

from tests.conftest import conformance

# the rows the A2A card's security declaration decides: before, untested (issue 46)
A2A_SECURITY_ROWS = ["A2A-AUTH-REQUIRED", "A2A-AUTH-UNKNOWN-TOKEN", "A2A-AUTH-STATUS",
                     "A2A-AUTH-CHALLENGE", "A2A-AUTH-TASK-SCOPE", "A2A-AUTH-TASK-HIDDEN",
                     "A2A-AUTH-LIST-SCOPE", "A2A-AUTH-FORBIDDEN", "A2A-AUTH-FORBIDDEN-DETAIL",
                     "A2A-AGREE-AUTH", "A2A-SUB-SCOPED", "A2A-CARD-SECURITY-SCHEMES"]
A2A_PUSH_ROWS = ["A2A-PUSH-CREATE", "A2A-PUSH-CONFIG-SHAPE", "A2A-PUSH-GET", "A2A-PUSH-GET-MISSING",
                 "A2A-PUSH-LIST", "A2A-PUSH-DELETE", "A2A-PUSH-DELETE-IDEMPOTENT", "A2A-PUSH-SCOPED",
                 "A2A-PUSH-DELIVERY", "A2A-PUSH-DELIVERY-AUTH", "A2A-PUSH-RETRY", "A2A-PUSH-SSRF"]


def rows_of(summary_path, binding: str | None = None) -> dict[str, dict]:
    """The summary's rows by requirement (of ``binding`` alone, where the run spoke several)."""
    summary = json.loads(summary_path.read_text())
    return {r["id"]: r for r in summary["requirements"] if binding is None or r.get("binding") == binding}


def not_applicable_by(rows: dict[str, dict], ids: list[str], said: str) -> None:
    for rid in ids:
        row = rows[rid]
        assert row["status"] == "skipped", (rid, row["status"], row["message"])
        assert row["message"].startswith(f"not applicable by declaration: {said}"), (rid, row["message"])


def test_an_a2a_agent_declaring_no_security_and_no_push_passes_the_default_gate(tmp_path, serve):
    """Over each binding its card declares: the security and push rows are not applicable by
    the card's own declaration, nothing at MUST is untested, and the run exits 0."""
    server = serve("a2a", "--control", "--fault", "no_security", "--fault", "push_declared_off")
    result = conformance("run", "a2a", "--target", server.url, "--config", str(server.config),
                         "--budget", "quick", "--report", str(tmp_path / "r"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    for binding in ("jsonrpc", "http-json", "grpc"):
        rows = rows_of(tmp_path / "r" / "summary.json", binding)
        not_applicable_by(rows, A2A_SECURITY_ROWS, "the agent card declares no securitySchemes")
        not_applicable_by(rows, A2A_PUSH_ROWS,
                          "the agent card declares capabilities.pushNotifications: false")
        # the rows about an agent without push run, and hold
        assert rows["A2A-CAP-PUSH-OFF"]["status"] == "passed", rows["A2A-CAP-PUSH-OFF"]
        left = {rid: r["status"] for rid, r in rows.items()
                if r["status"] in ("untested", "blocked", "failed")}
        assert not left, (binding, left)
    counted_apart(tmp_path / "r", result.stdout)


def counted_apart(report, console: str) -> None:
    """The rows a declaration made not applicable are counted apart from the other skipped
    rows, by declaration, with the same number in summary.json, the console, the JUnit
    properties and report.html, and each such row is labelled so in report.html."""
    summary = json.loads((report / "summary.json").read_text())
    declared = [r for r in summary["requirements"] if r.get("declared")]
    assert declared and all(r["status"] == "skipped" for r in declared)
    n = len(declared)
    assert summary["counts"]["not_applicable"] == n == sum(summary["not_applicable"].values())
    assert summary["counts"]["skipped"] == sum(r["status"] == "skipped" for r in summary["requirements"]) - n
    by_said: dict[str, int] = {}
    for r in declared:
        by_said[r["declared"]["said"]] = by_said.get(r["declared"]["said"], 0) + 1
    assert summary["not_applicable"] == by_said
    line = next(x for x in summary["not_reached"] if " not applicable: " in x)
    assert line.startswith(f"{n} not applicable: by a declaration, never gating (")
    assert line in console and f"{n} not applicable, " in console
    assert f'name="conformance.not_applicable" value="{line}"' in (report / "junit.xml").read_text()
    html = (report / "report.html").read_text()
    assert html.count(">NOT APPLICABLE</span>") == n


def test_an_a2a_capability_declared_and_not_served_still_fails(tmp_path, serve):
    """The card declares push notifications, the agent refuses every push config method: a
    finding (exit 1), never not applicable."""
    server = serve("a2a", "--control", "--fault", "push_declared_not_served")
    result = conformance("run", "a2a", "--target", server.url, "--config", str(server.config),
                         "--binding", "jsonrpc", "--budget", "quick", "--only", "A2A-PUSH-*",
                         "--only", "A2A-CAP-PUSH-OFF", "--report", str(tmp_path / "r"))
    assert result.returncode == 1, result.stdout[-3000:]
    rows = rows_of(tmp_path / "r" / "summary.json")
    assert rows["A2A-PUSH-CREATE"]["status"] == "failed", rows["A2A-PUSH-CREATE"]
    assert "push notifications are not supported" in rows["A2A-PUSH-CREATE"]["message"]
    assert rows["A2A-CAP-PUSH-OFF"]["status"] == "skipped"
    assert "capabilities.pushNotifications: true" in rows["A2A-CAP-PUSH-OFF"]["message"]
    assert not any("not applicable" in r["message"] for rid, r in rows.items() if rid.startswith("A2A-PUSH-"))


def test_a_bindu_agent_declaring_no_streaming_passes_the_default_gate(tmp_path, serve):
    """The card says capabilities.streaming false: the stream's rows are not applicable by it,
    BINDU-STREAM-CAPABILITY judges the refusal, and the run exits 0."""
    server = serve("bindu", "--control", "--fault", "streaming_off")
    result = conformance("run", "bindu", "--target", server.url, "--config", str(server.config),
                         "--budget", "quick", "--report", str(tmp_path / "r"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    rows = rows_of(tmp_path / "r" / "summary.json")
    not_applicable_by(rows, ["BINDU-STREAM-TASK-SNAPSHOTS", "BINDU-RESULT-MESSAGE-STREAM",
                             "BINDU-PARAMS-VALID-MESSAGE-STREAM"],
                      "the agent card says capabilities.streaming is false")
    assert rows["BINDU-STREAM-CAPABILITY"]["status"] == "passed"
    assert not [rid for rid, r in rows.items() if r["status"] in ("untested", "blocked", "failed")]


def test_a_bindu_agent_declaring_streaming_and_not_streaming_still_fails(tmp_path, serve):
    server = serve("bindu", "--control", "--fault", "stream_ignores_capability")
    result = conformance("run", "bindu", "--target", server.url, "--config", str(server.config),
                         "--budget", "quick", "--only", "BINDU-STREAM-*",
                         "--only", "BINDU-RESULT-MESSAGE-STREAM", "--report", str(tmp_path / "r"))
    assert result.returncode == 1, result.stdout[-3000:]
    rows = rows_of(tmp_path / "r" / "summary.json")
    assert rows["BINDU-STREAM-CAPABILITY"]["status"] == "failed"
    assert not any(r["message"].startswith("not applicable") for r in rows.values())


def test_an_mcp_server_declaring_only_tools_passes_the_default_gate(tmp_path, serve):
    """Canon's MCP binding (2025-06-18) and Wever's stateless one (2026-07-28): a server whose
    initialize (or server/discover) answer declares no prompts and no resources leaves the rows
    about them not applicable by that answer, and the run exits 0."""
    for profile, binding, prefix, answer in (("canon-verbs", "mcp", "MCP", "initialize"),
                                             ("wever-connect", "mcp-stateless", "MCP-STATELESS",
                                              "server/discover")):
        server = serve(profile, "--control", "--fault", "mcp_tools_only")
        report = tmp_path / binding
        result = conformance("run", profile, "--target", server.url, "--config", str(server.config),
                             "--binding", binding, "--budget", "quick", "--report", str(report))
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr
        rows = rows_of(report / "summary.json")
        for capability in ("prompts", "resources"):
            not_applicable_by(rows, [f"{prefix}-DECLARED-{capability.upper()}"],
                              f"the {answer} answer declares no `{capability}` capability")
        assert not [rid for rid, r in rows.items() if r["status"] in ("untested", "blocked", "failed")]


def test_an_mcp_capability_declared_and_not_served_still_fails(tmp_path, serve):
    server = serve("wever-connect", "--control", "--fault", "mcp_declared_capability_not_served")
    result = conformance("run", "wever-connect", "--target", server.url, "--config", str(server.config),
                         "--binding", "mcp", "--budget", "quick", "--only", "MCP-DECLARED-*",
                         "--level", "should", "--report", str(tmp_path / "r"))
    assert result.returncode == 1, result.stdout[-3000:]  # SHOULD rows, gated at should
    rows = rows_of(tmp_path / "r" / "summary.json")
    for capability in ("prompts", "resources"):
        row = rows[f"MCP-DECLARED-{capability.upper()}"]
        assert row["status"] == "failed", row
        assert f"Method not found: {capability}/list" in row["message"]


def test_an_mcp_server_issuing_no_session_leaves_the_session_rows_not_applicable(tmp_path, serve):
    server = serve("canon-verbs", "--control", "--fault", "mcp_no_sessions")
    result = conformance("run", "canon-verbs", "--target", server.url, "--config", str(server.config),
                         "--binding", "mcp", "--budget", "quick", "--only", "MCP-*",
                         "--report", str(tmp_path / "r"))
    assert result.returncode == 0, result.stdout[-3000:]
    rows = rows_of(tmp_path / "r" / "summary.json")
    not_applicable_by(rows, ["MCP-SESSION-END", "MCP-BEFORE-INITIALIZE"],
                      "the initialize answer carries no Mcp-Session-Id header")
