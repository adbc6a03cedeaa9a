"""The kit against a real A2A server: the official Python SDK (a2a-sdk, its 1.x line speaks
A2A 1.0) with a small echo agent on loopback (tests/a2a_sdk_server.py), over the three bindings
its card declares, with the scenarios that drive its agent (texts it understands). The
verdicts must be the ones docs/a2a.md documents, each failure with the spec text it breaks:
every requirement not listed there passes or is skipped (a statement of the other binding)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("a2a.server.routes", reason="the official A2A SDK (a2a-sdk[http-server]) is not "
                                                 "installed")

from tests.a2a_sdk import expect_documented, sdk_server, verdicts  # noqa: E402


def test_the_sdk_server_gets_the_documented_verdicts(tmp_path: Path):
    with sdk_server() as url:
        got = verdicts(url, tmp_path / "r", least_passed=60)
    expect_documented(got, "## 4. The official Python SDK")
