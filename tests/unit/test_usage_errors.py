"""Bad input to the tool itself is a one-line error and exit 2; a bug of the tool
is a one-line internal error and exit 4 (never 3, which means "unreachable").
In-process through cli.main: these fail before any run starts."""

from __future__ import annotations

import gzip
import json
import socket

import pytest
from hypothesis.internal import charmap

from conformance import cli
from conformance.report.summary import EXIT_INTERNAL, EXIT_USAGE
from conformance.run.examples import UTF8_INTERVALS, example_database


def one_line_error(capsys, argv: list[str]) -> str:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == EXIT_USAGE, (argv, out, err)
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, (argv, err)
    assert "Traceback" not in out + err
    return err


BAD_CONFIGS = {
    "timeout: abc\n": "timeout",
    "timeout: null\n": "timeout",
    "timeout: [1]\n": "timeout",
    "timeout: -1\n": "timeout",
    "timeout: 0\n": "timeout",
    "timeout: .nan\n": "timeout",
    "timeout: true\n": "timeout",
    "max_answer_mib: 0\n": "max_answer_mib",
    "world: [a, b]\n": "world",
    "target: 42\n": "42",
    "target: ftp://127.0.0.1\n": "http(s)",
    "target: http://127.0.0.1:99999\n": "port",
    "control: [x]\n": "control",
    "credentials: {full: [1, 2]}\n": "credentials.full",
    "credentials: [a]\n": "credentials",
    "- just\n- a list\n": "mapping",
    "nonsense_key: 1\n": "unknown keys",
}


@pytest.mark.parametrize("text", list(BAD_CONFIGS))
def test_a_bad_config_value_is_a_usage_error(tmp_path, capsys, text):
    config = tmp_path / "c.yaml"
    config.write_text(text, encoding="utf-8")
    err = one_line_error(capsys, ["run", "bindu", "--config", str(config), "--report", str(tmp_path / "r")])
    assert BAD_CONFIGS[text] in err


def test_unusable_output_paths_are_usage_errors(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert "--report" in one_line_error(capsys, ["run", "bindu", "--report", str(a_file)])
    assert "--report" in one_line_error(capsys, ["run", "bindu", "--report", str(a_file / "under")])
    assert "--junit" in one_line_error(capsys, ["run", "bindu", "--report", str(tmp_path / "r"),
                                                "--junit", str(a_file / "junit.xml")])
    assert "--junit" in one_line_error(capsys, ["run", "bindu", "--report", str(tmp_path / "r"),
                                                "--junit", str(tmp_path)])
    assert "--max-time" in one_line_error(capsys, ["run", "bindu", "--max-time", "soon"])
    assert "--max-time" in one_line_error(capsys, ["run", "bindu", "--max-time=-5m"])


def test_junit_into_a_missing_folder_is_created(tmp_path, capsys):
    junit = tmp_path / "new" / "deeper" / "junit.xml"
    code = cli.main(["run", "bindu", "--budget", "quick", "--only", "BINDU-RPC-PARSE-ERROR",
                     "--report", str(tmp_path / "r"), "--junit", str(junit)])
    assert code == 0, capsys.readouterr()
    assert "BINDU-RPC-PARSE-ERROR" in junit.read_text()


def test_serve_rejects_bad_ports_and_unwritable_config(tmp_path, capsys):
    for port in ("99999", "0", "http"):
        with pytest.raises(SystemExit) as exit_info:  # argparse: usage line + error, exit 2
            cli.main(["serve", "bindu", "--port", port])
        assert exit_info.value.code == EXIT_USAGE
        assert "port" in capsys.readouterr().err
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert "--write-config" in one_line_error(
        capsys, ["serve", "bindu", "--port", str(free), "--write-config", str(a_file / "ref.yaml")])
    with socket.create_server(("127.0.0.1", 0)) as busy:
        taken = busy.getsockname()[1]
        assert "cannot listen" in one_line_error(capsys, ["serve", "bindu", "--port", str(taken)])


def test_a_bug_of_the_tool_is_exit_4_not_3(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("something inside broke")

    monkeypatch.setitem(cli.COMMANDS, "list", broken)
    monkeypatch.delenv("CONFORMANCE_DEBUG", raising=False)
    assert cli.main(["list"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("internal error: RuntimeError: something inside broke")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_help_documents_limits_and_exit_codes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = capsys.readouterr().out
    for text in ("--max-time", "exit codes", "130", "timeout", "max_answer_mib",
                 "redirects are never followed"):
        assert text in out


def test_hypothesis_storage_lives_under_the_report_folder(tmp_path, monkeypatch):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    example_database(tmp_path / "reports" / ".hypothesis")
    seeded = tmp_path / "reports" / ".hypothesis" / "unicode_data"
    [codec_file] = seeded.rglob("codec-v2-utf-8.json.gz")
    assert json.loads(gzip.open(codec_file).read()) == UTF8_INTERVALS
    assert not (work / ".hypothesis").exists()


def test_the_seeded_utf8_table_is_what_hypothesis_computes(tmp_path):
    """The known answer written into hypothesis's cache must equal its own result."""
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(tmp_path)  # a cold cache: hypothesis computes the table itself
    try:
        encodable, non_roundtrip = charmap.intervals_from_codec.__wrapped__("utf-8")
    finally:
        set_hypothesis_home_dir(None)
    assert [list(map(list, encodable.intervals)), list(non_roundtrip.intervals)] == UTF8_INTERVALS


def test_skip_leaves_out_what_it_names_and_grades_nothing(tmp_path, capsys):
    assert "unknown requirement" in one_line_error(capsys, ["run", "bindu", "--skip", "NO-SUCH-*"])
    code = cli.main(["run", "bindu", "--budget", "quick", "--only", "BINDU-RPC-*",
                     "--skip", "BINDU-RPC-PARSE-*",
                     "--report", str(tmp_path / "r")])
    assert code == 0, capsys.readouterr()
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    status = {r["id"]: r["status"] for r in summary["requirements"]}
    assert status["BINDU-RPC-PARSE-ERROR"] == "skipped"
    assert [rid for rid, s in status.items() if rid.startswith("BINDU-RPC-") and s == "passed"]
    assert all(s == "skipped" for rid, s in status.items() if not rid.startswith("BINDU-RPC-"))
    assert summary["grade"] == "ungraded"
