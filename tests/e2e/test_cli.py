"""The command as users meet it: exit codes, reports on disk, serve + run over
real HTTP, replay of a saved case, and one-line errors for bad input."""

import json
import re
import subprocess
import sys

import pytest
import yaml

from conformance.run.profiles import load_profile
from tests.conftest import ROOT, conformance, free_port, in_process


def test_bad_input_is_a_one_line_error_and_exit_2(tmp_path, capsys):
    cases = [
        ("run", "no-such-profile"),
        ("run", "bindu", "--target", "ftp://127.0.0.1:1"),
        ("run", "bindu", "--target", "127.0.0.1:3773"),
    ]
    bad_config = tmp_path / "bad.yaml"
    bad_config.write_text("credentials: [unclosed\n")
    cases.append(("run", "bindu", "--config", str(bad_config)))
    for args in cases:
        result = in_process(capsys, *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert result.stderr.startswith("error: "), result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr + result.stdout
    # YAML that does not parse: the file, and the line of the problem
    bad_config.write_text("target: http://127.0.0.1:3773\ncredentials:\n  full: abc\n   other: [x\n")
    result = in_process(capsys, "run", "bindu", "--config", str(bad_config))
    assert result.returncode == 2 and str(bad_config) in result.stderr
    assert "line 4, column" in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_help_names_every_config_key_and_the_fuzz_merge_verb(capsys):
    from conformance.run.config import KNOWN_KEYS

    for command in ("run", "fuzz", "replay"):
        text = " ".join(in_process(capsys, command, "--help").stdout.split())
        config = text.rsplit("--config FILE", 1)[1].split(" --", 1)[0]  # its help, not the usage line
        assert [k for k in sorted(KNOWN_KEYS) if k not in config] == [], (command, config)
    usage = in_process(capsys, "fuzz", "--help").stdout.split("\n\n", 1)[0]
    assert "conformance fuzz PROFILE" in usage and "conformance fuzz merge DIR..." in usage
    merge = in_process(capsys, "fuzz", "merge", "--help").stdout
    assert merge.startswith("usage: conformance fuzz merge DIR...")


def test_unreachable_target_exits_3_and_never_scores_pass(tmp_path):
    report = tmp_path / "r"
    result = conformance("run", "bindu", "--target", f"http://127.0.0.1:{free_port()}", "--budget", "quick",
                         "--report", str(report))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "cannot connect" in result.stdout
    summary = json.loads((report / "summary.json").read_text())
    assert summary["verdict"] == "unreachable"
    assert summary["counts"]["passed"] == 0
    assert summary["counts"]["untested"] == len(summary["requirements"])


def test_run_reference_writes_reports_and_exits_0(tmp_path):
    report = tmp_path / "r"
    result = conformance("run", "bindu", "--budget", "quick", "--report", str(report))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    summary = json.loads((report / "summary.json").read_text())
    assert summary["verdict"] == "pass"
    assert summary["profile"] == "bindu" and summary["target"] == "reference"
    assert summary["spec"]["path"] == "specs/bindu/openapi.yaml" and len(summary["spec"]["sha256"]) == 64
    assert summary["counts"]["failed"] == 0 and summary["counts"]["passed"] == len(summary["requirements"])
    assert summary["exchanges"] > 100 and summary["exchanges_per_s"] > 0
    for req in summary["requirements"]:
        assert req["level"] in ("MUST", "SHOULD", "MAY") and req["source"]["file"]
        assert req["id"] in result.stdout
    junit = (report / "junit.xml").read_text()
    assert 'name="BINDU-LIFECYCLE"' in junit and 'name="level"' in junit
    assert any((report / "allure-results").iterdir())


def test_serve_run_fault_and_replay_over_real_http(tmp_path, serve):
    # (the whole profile against a clean served reference: test_parallel, with --workers)
    clean = serve("bindu", "--control")
    ok = conformance("run", "bindu", "--target", clean.url, "--config", str(clean.config),
                     "--only", "BINDU-CANCEL-TERMINAL",
                     "--budget", "quick", "--report", str(tmp_path / "clean"))
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr
    assert json.loads((tmp_path / "clean" / "summary.json").read_text())["counts"]["passed"] == 1

    faulty = serve("bindu", "--control", "--fault", "cancel_terminal_succeeds")
    report = tmp_path / "faulty"
    full_token = yaml.safe_load(faulty.config.read_text())["credentials"]["full"]
    # the requirements that send every credential of the config (bearer tokens, the DID's)
    credentialed = [arg for glob in ("BINDU-CANCEL-TERMINAL", "BINDU-AUTH-*", "BINDU-SCOPE-*", "BINDU-DID-*",
                                     "BINDU-OWNERSHIP")
                    for arg in ("--only", glob)]
    bad = conformance("run", "bindu", "--target", faulty.url, "--config", str(faulty.config),
                      "--token", full_token,
                      "--budget", "quick", "--report", str(report), *credentialed)
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr
    summary = json.loads((report / "summary.json").read_text())
    failed = {r["id"]: r for r in summary["requirements"] if r["status"] == "failed"}
    assert "BINDU-CANCEL-TERMINAL" in failed
    case_path = report / failed["BINDU-CANCEL-TERMINAL"]["failures"][0]["case"]
    case = json.loads(case_path.read_text())
    assert case["exchanges"] and case["curl"] and case["requirement"] == "BINDU-CANCEL-TERMINAL"

    again = conformance("replay", str(case_path), "--config", str(faulty.config))
    assert again.returncode == 1, again.stdout + again.stderr
    assert "FAIL BINDU-CANCEL-TERMINAL" in again.stdout
    fixed = conformance("replay", str(case_path), "--target", clean.url, "--config", str(clean.config))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr

    # no secret of the config reaches any report file
    secrets = yaml.safe_load(faulty.config.read_text())["credentials"]
    values = [v for v in secrets.values() if isinstance(v, str)] + [secrets["did"]["token"],
                                                                    secrets["did"]["seed"]]
    for path in report.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for value in values:
                assert value not in text, f"secret leaked into {path}"


def test_target_that_does_not_speak_jsonrpc_exits_3(tmp_path, serve):
    # a base URL under the reference's plain-text /metrics path: HTTP answers, JSON-RPC does not
    server = serve("bindu")
    result = conformance("run", "bindu", "--target", server.url + "/metrics", "--budget", "quick",
                         "--report", str(tmp_path / "r"))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "does not speak JSON-RPC" in result.stdout


def test_list_shows_requirements_and_faults():
    result = conformance("list", "bindu")
    assert result.returncode == 0
    assert "BINDU-CANCEL-TERMINAL" in result.stdout and "cancel_terminal_succeeds" in result.stdout
    count = len(load_profile("bindu").requirements)
    assert result.stdout.splitlines()[-1].startswith(f"bindu: {count} requirements, "), result.stdout[-300:]
    assert re.search(r"^bindu\s+specs/bindu/openapi.yaml\s+Bindu", conformance("list").stdout, re.M)


def test_an_unknown_binding_is_a_usage_error(capsys):
    """(Canon passes over each of its bindings against a served reference: test_bindings.)"""
    bad = in_process(capsys, "run", "canon-verbs", "--binding", "grpc")
    assert bad.returncode == 2 and "unknown binding" in bad.stderr


def test_canon_fault_fails_the_same_way_over_both_bindings(tmp_path):
    for binding in ("http", "mcp"):
        report = tmp_path / binding
        result = conformance("run", "canon-verbs", "--fault", "message_id_conflict_accepted",
                             "--binding", binding,
                             "--only", "CANON-MESSAGE-ID-CONFLICT", "--budget", "quick",
                             "--report", str(report))
        assert result.returncode == 1, result.stdout[-2000:]
        failed = [r for r in json.loads((report / "summary.json").read_text())["requirements"]
                  if r["status"] == "failed"]
        assert [r["id"] for r in failed] == ["CANON-MESSAGE-ID-CONFLICT"]
        assert "MESSAGE_ID_EXISTS" in failed[0]["message"]


def test_a_reader_that_stops_early_is_no_error():
    """`conformance list agent-plaza | head -1` (140 kB, more than a pipe holds): the closed
    pipe ends the listing quietly."""
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "list", "agent-plaza"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().startswith(b"MUST")
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"internal error" not in err and b"Traceback" not in err, err


@pytest.mark.parametrize("argv", [["list"], ["--help"]], ids=["list", "help"])
def test_list_and_help_load_no_profile(argv: list[str]) -> None:
    """`conformance list` and `--help` print what the profiles' YAML says: no protocol's module
    is imported, no document read or compiled (profiles, declare, statement maps, protos), and
    none of the libraries a run needs (bench/bench_start.py measures what that saves)."""
    heavy = ("conformance.protocols", "conformance.run.profiles", "conformance.kit.declare",
             "conformance.documents.statements", "conformance.documents", "conformance.kit.check",
             "hypothesis", "httpx", "jsonschema", "pytest", "google.protobuf", "grpc")
    script = "\n".join(["import sys", "from conformance.cli import main", "try:", "    main(sys.argv[1:])",
                        "except SystemExit:", "    pass",
                        f"print('LOADED', sorted(m for m in sys.modules if m.startswith({heavy!r})))"])
    result = subprocess.run([sys.executable, "-c", script, *argv], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    [loaded] = [line for line in result.stdout.splitlines() if line.startswith("LOADED ")]
    assert loaded == "LOADED []", loaded
    printed = "specs/bindu/openapi.yaml" if argv == ["list"] else "run a profile's requirements against"
    assert printed in result.stdout, result.stdout
