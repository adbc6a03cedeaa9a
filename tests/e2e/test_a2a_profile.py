"""The A2A profile end to end: a target that is not an A2A server, or not there, is exit 3 with
one line saying why; the limited caller is judged by what the config denies it. (That it passes
on the reference served over each of the three bindings its card declares, in one run:
tests/e2e/test_docs.py's test_ci_shell_recipe_gates_the_served_reference_over_its_three_bindings,
docs/ci.md's recipe run as written; in process over each binding, every fault caught and every
variant passed: tests/e2e/test_selftest.py, which runs every profile.)"""

from __future__ import annotations

import json

from tests.conftest import conformance, free_port


def verdicts(report) -> dict[str, str]:
    summary = json.loads((report / "summary.json").read_text())
    return {r["id"]: r["status"] for r in summary["requirements"]}


def test_a_dead_target_is_exit_3_and_nothing_passes(tmp_path):
    result = conformance("run", "a2a", "--target", f"http://127.0.0.1:{free_port()}", "--budget", "quick",
                         "--report", str(tmp_path / "r"))
    assert result.returncode == 3, result.stdout[-2000:]
    assert "did not answer" in result.stdout
    assert "passed" not in set(verdicts(tmp_path / "r").values())


def test_a_server_without_an_agent_card_is_not_an_a2a_server(tmp_path, serve):
    server = serve("bindu")  # JSON-RPC, but no /.well-known/agent-card.json
    result = conformance("run", "a2a", "--target", server.url, "--budget", "quick",
                         "--report", str(tmp_path / "r"))
    assert result.returncode == 3, result.stdout[-2000:]
    assert "serves no agent card at /.well-known/agent-card.json" in result.stdout


def test_the_limited_caller_is_judged_only_for_the_operations_the_config_denies_it(tmp_path, serve):
    """The permission model is the agent's (section 7.5): the config says what the limited
    caller may not call. A list of operations is enough; a bare token names none, and the
    permission rows are untested saying so; an operation the agent in fact serves it is a
    finding that quotes the answer."""
    import yaml

    server = serve("a2a")  # denies the limited caller CancelTask and ListTasks
    base = yaml.safe_load(server.config.read_text())
    token = base["credentials"]["limited"]["token"]

    def run(limited, name):
        config = tmp_path / f"{name}.yaml"
        credentials = {**base["credentials"], "limited": limited}
        config.write_text(yaml.safe_dump({**base, "credentials": credentials}))
        result = conformance("run", "a2a", "--config", str(config), "--binding", "jsonrpc",
                             "--only", "A2A-AUTH-FORBIDDEN*", "--report", str(tmp_path / name))
        summary = json.loads((tmp_path / name / "summary.json").read_text())
        return result, {r["id"]: r for r in summary["requirements"] if r["id"].startswith("A2A-AUTH-FORB")}

    _, rows = run({"token": token, "denied": ["ListTasks"]}, "list")
    assert {k: r["status"] for k, r in rows.items()} == {"A2A-AUTH-FORBIDDEN": "passed",
                                                         "A2A-AUTH-FORBIDDEN-DETAIL": "passed"}
    _, rows = run(token, "bare")
    assert {r["status"] for r in rows.values()} == {"untested"}, rows
    assert all("names no operation it is denied" in json.dumps(r) for r in rows.values())
    _, rows = run({"token": token, "denied": ["SendMessage"]}, "refused")  # yet ListTasks is refused
    assert {r["status"] for r in rows.values()} == {"untested"}, rows
    assert "the limited caller was refused what credentials.limited does not deny it (ListTasks: HTTP 403" \
        in json.dumps(rows)
    _, rows = run({"token": token, "denied": {"SendMessage": "messages:send", "ListTasks": ""}}, "wrong")
    assert rows["A2A-AUTH-FORBIDDEN"]["status"] == "failed", rows
    assert "SendMessage as a caller the agent does not permit it: served" in json.dumps(rows)
