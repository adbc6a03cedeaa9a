"""Reproduction in one paste: a curl line copied from report.html, pasted into bash with
$CONFORMANCE_TOKEN set, gets the served reference's answer (and without it, the refusal
of a request without a token); a case's script sends the failing example's requests in
order to another server, each id that server gives back carried into the requests after
it, so the failure shows there again (and not on a clean server)."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from pathlib import Path

import yaml

from conformance.model import Exchange
from conformance.report.shell import secret_variable, sequence_script
from tests.conftest import conformance

RID = "A2A-CANCEL-TASK"
FAULT = "cancel_answers_working"  # CancelTask answers the task still working


def bash(command: list[str] | str, env: dict[str, str], cwd: Path | None = None
         ) -> subprocess.CompletedProcess:
    args = ["bash", "-c", command] if isinstance(command, str) else ["bash", *command]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE", "TARGET"))}
    return subprocess.run(args, env={**base, **env}, cwd=cwd, capture_output=True, text=True, timeout=60)


def failing_run(tmp_path: Path, server, binding: str) -> Path:
    report = tmp_path / "r"
    result = conformance("run", "a2a", "--config", str(server.config), "--binding", binding, "--only", RID,
                         "--budget", "quick", "--report", str(report))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    return report


def test_a_curl_line_from_the_report_pasted_into_bash_gets_the_answer(tmp_path, serve):
    server = serve("a2a", "--control", "--fault", FAULT)
    token = yaml.safe_load(server.config.read_text())["credentials"]["full"]
    report = failing_run(tmp_path, server, "http-json")
    page = (report / "report.html").read_text(encoding="utf-8")
    lines = html.unescape(page.split("<pre class=curl>", 1)[1].split("</pre>", 1)[0]).splitlines()
    assert token not in page and not any("<redacted:" in line for line in lines)
    [send] = [line for line in lines if "/message:send" in line]
    assert "'Authorization: Bearer '\"${CONFORMANCE_TOKEN}\"" in send and send.startswith("curl ")
    pasted = bash(send, {"CONFORMANCE_TOKEN": token})
    assert pasted.returncode == 0 and pasted.stdout.startswith("HTTP/1.1 200"), pasted.stderr
    answer = json.loads(pasted.stdout.split("\n\n", 1)[1])
    assert answer["task"]["id"].startswith("task-"), answer
    # the variable is what carries the token: without it, the agent refuses a request without one
    bare = bash(send, {})
    assert bare.stdout.startswith("HTTP/1.1 401"), bare.stdout


def test_a_cases_script_replays_its_sequence_on_another_server_with_its_own_ids(tmp_path, serve):
    first = serve("a2a", "--control", "--fault", FAULT)
    token = yaml.safe_load(first.config.read_text())["credentials"]["full"]
    report = failing_run(tmp_path, first, "http-json")
    case = json.loads((report / "cases" / f"{RID}.json").read_text())
    script = report / "cases" / f"{RID}.sh"
    [created] = {json.loads(e["response"]["body"])["task"]["id"] for e in case["exchanges"]
                 if e["request"]["url"].endswith("/message:send")}
    assert created in script.read_text()  # the recorded id, kept only as the fallback

    again = serve("a2a", "--control", "--fault", FAULT)  # a fresh server: it never saw that task
    out = bash([str(script)], {"CONFORMANCE_TOKEN": token, "TARGET": again.url})
    assert out.returncode == 0, out.stdout + out.stderr
    parts = [part.split("\n\n", 1) for part in out.stdout.split("HTTP/1.1 ")[1:]]
    answers = [json.loads(body) for head, body in (p for p in parts if len(p) == 2) if body.strip()]
    statuses = re.findall(r"^HTTP/1.1 (\d+)", out.stdout, re.M)
    assert statuses and set(statuses) == {"200"}, out.stdout  # no "task not found": every id was the new one
    ids = {a.get("id") or a.get("task", {}).get("id") for a in answers} - {None}
    assert len(ids) == 1 and created not in ids, ids  # the task this server made, all along
    canceled = [a for a in answers if "status" in a]
    assert canceled[-2]["status"]["state"] == "TASK_STATE_WORKING"  # the failure, on the new server too
    assert "keeps the recorded value" not in out.stderr

    clean = serve("a2a", "--control")
    fixed = bash([str(script)], {"CONFORMANCE_TOKEN": token, "TARGET": clean.url})
    assert '"TASK_STATE_CANCELED"' in fixed.stdout, fixed.stdout  # a correct server answers it canceled


def test_secrets_become_the_variables_that_hold_them_and_ids_of_answers_variables():
    assert secret_variable("full") == "CONFORMANCE_TOKEN"
    assert secret_variable("other") == "CONFORMANCE_CREDENTIAL_OTHER"
    assert secret_variable("did.token") == "CONFORMANCE_CREDENTIAL_DID_TOKEN"
    made = Exchange({"method": "POST", "url": "/tasks", "body": '{"name": "x"}',
                     "headers": {"Authorization": "Bearer <redacted:other>"}},
                    {"status": 201, "headers": {},
                     "body": '{"task": {"id": "t-123456", "state": "working"}}'})
    read = Exchange({"method": "GET", "url": "/tasks/t-123456", "headers": {}, "body": None},
                    {"status": 200, "headers": {}, "body": "{}"})
    text = sequence_script([made, read], title="t")
    assert "ID_1=$(pick \"$out/1.body\" task id)" in text
    assert '"$TARGET"/tasks/"${ID_1}"' in text and "Bearer '\"${CONFORMANCE_CREDENTIAL_OTHER}\"" in text
    assert ': "${TARGET:?' in text and "<redacted:" not in text.split("set -u", 1)[1]


def test_replay_honours_binding_and_prints_what_it_sends(tmp_path, serve):
    """A case found in process over JSON-RPC, replayed against a served faulty reference over
    gRPC (--binding): the same requirement judged over the other binding, each call it makes
    printed as it goes (a gRPC call as a comment naming its method: curl cannot send it)."""
    report = tmp_path / "r"
    found = conformance("run", "a2a", "--fault", FAULT, "--binding", "jsonrpc", "--only", RID,
                        "--budget", "quick", "--report", str(report))
    assert found.returncode == 1, found.stdout[-2000:]
    case = report / "cases" / f"{RID}.json"
    assert all('"$TARGET"' in line for line in json.loads(case.read_text())["curl"])  # an in-process run's
    server = serve("a2a", "--control", "--fault", FAULT)
    again = conformance("replay", str(case), "--binding", "grpc", "--config", str(server.config))
    lines = again.stdout.splitlines()
    assert again.returncode == 1 and lines[-1].startswith(f"FAIL {RID} against {server.url} over grpc again")
    grpc = [line for line in lines if re.match(r"# gRPC \S*A2AService/CancelTask at 127.0.0.1:", line)]
    assert grpc, again.stdout
    assert sum(line.startswith("  # -> ") for line in lines) >= 3
    quiet = conformance("replay", str(case), "--quiet", "--config", str(server.config))
    assert quiet.returncode == 1 and quiet.stdout.splitlines() == [quiet.stdout.strip()]
    assert "over jsonrpc again" in quiet.stdout
