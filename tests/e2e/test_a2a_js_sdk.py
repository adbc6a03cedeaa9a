"""The kit against the official JavaScript SDK (@a2a-js/sdk 1.3.0, A2A 1.0) with a small echo
agent on loopback (tests/a2a_js/server.mjs: the SDK's DefaultRequestHandler, InMemoryTaskStore,
Express JSON-RPC and REST handlers and gRPC service), over the three bindings its card
declares. The verdicts must be exactly the ones docs/a2a.md section 6 lists, each failure with
the statement it breaks. Its packages are installed into tests/a2a_js/ from the committed
lockfile (``npm ci``) on first use; without Node.js, npm or the registry the test is skipped,
saying why (CI installs them: .ci/run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.a2a_sdk import expect_documented, js_installed, js_server, verdicts


def test_the_javascript_sdk_server_gets_the_documented_verdicts(tmp_path: Path):
    missing = js_installed()
    if missing:
        pytest.skip(missing)
    with js_server() as url:
        got = verdicts(url, tmp_path / "r", least_passed=60)
    expect_documented(got, "## 6. The official JavaScript SDK")
