"""Start a real A2A server for a test: the official Python SDK's echo agent
(tests/a2a_sdk_server.py), its agent that completes later (tests/a2a_sdk_later_server.py), or the
official JavaScript SDK's echo agent (tests/a2a_js/server.mjs); and read the verdicts docs/a2a.md
documents for each.

A subprocess rather than an in-process app: the SDKs keep their own background tasks per A2A
task, and the kit must reach them over real HTTP as it reaches any other target.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT, child_server, free_port

TESTS = Path(__file__).resolve().parent
SERVER = TESTS / "a2a_sdk_server.py"
LATER_SERVER = TESTS / "a2a_sdk_later_server.py"
JS_FOLDER = TESTS / "a2a_js"  # its package.json and package-lock.json pin @a2a-js/sdk and its peers
CARD_PATH = "/.well-known/agent-card.json"
# the texts each test agent understands, as a run config names them
SCENARIOS = """scenarios:
  input_required: "input-required please"
  failed: "fail now"
  long_running: "slow task"
  message: "message me"
"""


def sdk_available() -> bool:
    """Whether the SDK (``a2a-sdk``, a dev extra) imports, so tests can skip without it."""
    try:
        importlib.import_module("a2a.server.routes")
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def sdk_server(timeout: float = 20.0, script: Path = SERVER) -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:<port>``) of a fresh Python SDK server
    (``script``: the echo agent, or ``LATER_SERVER``)."""
    port, grpc_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    with child_server([sys.executable, str(script), "--port", str(port), "--grpc-port", str(grpc_port)],
                      base, timeout, ready=base + CARD_PATH):
        yield base


def js_installed() -> str | None:
    """Install the JavaScript server's packages into its own folder (``npm ci`` from the
    committed lockfile) where they are not there yet; None when ready, else why not (no Node
    or npm on the machine, or the registry out of reach)."""
    if (JS_FOLDER / "node_modules" / "@a2a-js" / "sdk" / "package.json").exists():
        return None if shutil.which("node") else "node is not on PATH"
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return "Node.js and npm are not on PATH (the JavaScript SDK server needs them)"
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=JS_FOLDER,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return f"npm ci in {JS_FOLDER} failed: {(done.stderr or done.stdout)[-500:]}"
    return None


@contextlib.contextmanager
def js_server(timeout: float = 30.0) -> Iterator[str]:
    """Yield the base URL of a fresh JavaScript SDK server (``js_installed`` first)."""
    port, grpc_port = free_port(), free_port()
    node = shutil.which("node") or "node"
    command = [node, str(JS_FOLDER / "server.mjs"), "--port", str(port), "--grpc-port", str(grpc_port)]
    base = f"http://127.0.0.1:{port}"
    with child_server(command, base, timeout, ready=base + CARD_PATH):
        yield base


TABLE_ROW = re.compile(r"^\| (A2A-[A-Z0-9-]+) \| (MUST|SHOULD|MAY) \| ([a-z, -]+) \| "
                       r"(failed|blocked|untested|not applicable) \| (.*) \|$", re.M)
# the rows the card's security declaration makes not applicable, which the tables list too:
# untested before issue 46, each of them now names the declaration
NO_SECURITY = "not applicable by declaration: the agent card declares no securitySchemes"


def documented(heading: str) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(binding, requirement) -> (verdict, level, why) from the table under ``heading`` of
    docs/a2a.md (the section up to the next ``## ``)."""
    text = (ROOT / "docs" / "a2a.md").read_text(encoding="utf-8")
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    out = {}
    for rid, level, bindings, verdict, why in TABLE_ROW.findall(section):
        for binding in (b.strip() for b in bindings.split(",")):
            out[(binding, rid)] = (verdict, level, why)
    return out


def verdicts(url: str, report: Path, least_passed: int) -> dict[tuple[str, str], str]:
    """Run the kit against ``url`` over every binding its card declares (quick budget, the
    test agents' scenarios): (binding, requirement) -> verdict of each row that did not pass
    or was not skipped, and "not applicable" for each the card's declaring no security scheme
    made so. No row crashed, and each binding passed at least ``least_passed``."""
    import json

    from tests.conftest import conformance

    config = report.parent / f"{report.name}.yaml"
    config.write_text(SCENARIOS)
    result = conformance("run", "a2a", "--target", url, "--budget", "quick", "--config", str(config),
                         "--report", str(report))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr  # they fail MUST rows
    assert "over jsonrpc, http-json, grpc (each one the target declares)" in result.stdout
    summary = json.loads((report / "summary.json").read_text())
    assert summary["bindings"] == ["jsonrpc", "http-json", "grpc"]
    got = {}
    for row in summary["requirements"]:
        assert row["status"] != "crashed" and "crash" not in (row.get("kinds") or []), row
        if row["status"] in ("failed", "blocked", "untested"):
            got[(row["binding"], row["id"])] = row["status"]
        elif row["status"] == "skipped" and row["message"].startswith(NO_SECURITY):
            got[(row["binding"], row["id"])] = "not applicable"
    for binding in ("jsonrpc", "http-json", "grpc"):
        counts = summary["by_binding"][binding]["counts"]
        assert counts["passed"] >= least_passed, (binding, counts)
    return got


def expect_documented(got: dict[tuple[str, str], str], heading: str) -> None:
    """The verdicts are exactly the ones docs/a2a.md lists under ``heading``, and every failure
    it lists names the statement it breaks (a section and line of the specification, or the
    proto's): the table is the closing note of what the server is known for."""
    expected = documented(heading)
    assert expected, f"docs/a2a.md lists no verdict under {heading!r}"
    for key, (verdict, _level, why) in expected.items():
        if verdict == "failed":
            assert re.search(r"§\d|a2a\.proto", why), (key, "a failure the table lists without its statement")
    assert got == {key: verdict for key, (verdict, _level, _why) in expected.items()}
