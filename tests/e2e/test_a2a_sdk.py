"""The kit against a real A2A server: the official Python SDK (a2a-sdk, its 1.x line speaks
A2A 1.0) with a small echo agent on loopback (tests/a2a_sdk_server.py), over the three bindings
its card declares, with the scenarios that drive its agent (texts it understands). The
verdicts must be the ones docs/a2a.md documents, each with the spec text it breaks: every
requirement not listed there passes or is skipped (a statement of the other binding)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT, conformance

pytest.importorskip("a2a.server.routes", reason="the official A2A SDK (a2a-sdk[http-server]) is not "
                                                 "installed")

from tests.a2a_sdk import sdk_server  # noqa: E402

SCENARIOS = """scenarios:
  input_required: "input-required please"
  failed: "fail now"
  long_running: "slow task"
  message: "message me"
"""


def documented() -> dict[tuple[str, str], str]:
    """(binding, requirement) -> verdict, from the SDK table of docs/a2a.md."""
    text = (ROOT / "docs" / "a2a.md").read_text(encoding="utf-8")
    section = text.split("## 4. The official Python SDK", 1)[1]
    rows = re.findall(r"^\| (A2A-[A-Z0-9-]+) \| (MUST|SHOULD|MAY) \| ([a-z, -]+) \| "
                      r"(failed|blocked|untested) \|", section, re.M)
    out = {}
    for rid, _level, bindings, verdict in rows:
        for binding in (b.strip() for b in bindings.split(",")):
            out[(binding, rid)] = verdict
    return out


def test_the_sdk_server_gets_the_documented_verdicts(tmp_path: Path):
    expected = documented()
    assert expected, "docs/a2a.md lists no verdict of the SDK"
    config = tmp_path / "sdk.yaml"
    config.write_text(SCENARIOS)
    with sdk_server() as url:
        result = conformance("run", "a2a", "--target", url, "--budget", "quick", "--config", str(config),
                             "--report", str(tmp_path / "r"))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr  # the SDK fails MUST rows
    assert "3 runs, one per binding (jsonrpc, http-json, grpc)" in result.stdout
    got = {}
    for binding in ("jsonrpc", "http-json", "grpc"):
        summary = json.loads((tmp_path / "r" / binding / "summary.json").read_text())
        for row in summary["requirements"]:
            assert row["status"] != "crashed" and "crash" not in (row.get("kinds") or []), row
            if row["status"] in ("failed", "blocked", "untested"):
                got[(binding, row["id"])] = row["status"]
        assert summary["counts"]["passed"] >= 60, summary["counts"]
    assert got == expected
