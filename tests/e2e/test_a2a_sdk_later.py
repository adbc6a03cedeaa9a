"""The kit against an agent on the official Python SDK that completes its tasks later
(tests/a2a_sdk_later_server.py: a new task is answered TASK_STATE_SUBMITTED and a worker ends it a
moment later, the way a deployment hands work to a queue). The kit polls such a task (GetTask,
within the run's timeout) to where it ends before it judges what needs a finished task, so no
row is untested for want of a scenario, and none fails on the moment it read the task: the
verdicts are exactly the ones docs/a2a.md section 5 lists, each failure with the statement it
breaks (a blocking SendMessage answered before the task ended is the agent's own)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("a2a.server.routes", reason="the official A2A SDK (a2a-sdk[http-server]) is not "
                                                 "installed")

from tests.a2a_sdk import LATER_SERVER, expect_documented, sdk_server, verdicts  # noqa: E402


def test_an_agent_that_completes_later_gets_the_documented_verdicts(tmp_path: Path):
    with sdk_server(script=LATER_SERVER) as url:
        got = verdicts(url, tmp_path / "r", least_passed=60)
    expect_documented(got, "## 5. An agent that completes later")
    for binding, suffix in (("jsonrpc", "JSONRPC"), ("http-json", "REST"), ("grpc", "GRPC")):
        for rid in ("A2A-TASK-TERMINAL", "A2A-SUB-TERMINAL-REFUSED", f"A2A-ERR-TASK-NOT-CANCELABLE-{suffix}"):
            assert (binding, rid) not in got  # what a finished task needs was reached by polling
