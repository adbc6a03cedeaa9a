"""Every message names what it is about: the option (`fuzz --for`, not `--max-time`) and
the file (a config, baseline, case file or summary that is binary, invalid UTF-8, not
JSON, or of the wrong shape), in one line with exit 2 and no traceback."""

from __future__ import annotations

import json

import pytest

from conformance.model import Case
from conformance.report.cases import write_case
from tests.conftest import in_process
from tests.unit.test_usage_errors import one_line_error

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
LATIN1 = "timeout: 3 # caf\xe9\n".encode("latin-1")  # text, but not UTF-8


@pytest.mark.parametrize("value", ["soon", "0", "-5m", "nan"])
def test_fuzz_for_names_for_not_max_time(capsys, value):
    err = one_line_error(capsys, ["fuzz", "bindu", f"--for={value}"])
    assert "--for" in err and "--max-time" not in err


def argv_reading(kind: str, path: str, tmp) -> list[str]:
    report = str(tmp / "r")
    return {
        "config": ["run", "bindu", "--config", path, "--report", report],
        "baseline": ["run", "bindu", "--baseline", path, "--report", report],
        "case": ["replay", path],
        "case-pytest": ["replay", "--pytest", path],
        "summary": ["diff", path, path],
        "summary-baseline": ["baseline", "write", path],
    }[kind]


WORD = {"config": "config", "baseline": "baseline", "case": "case", "case-pytest": "case",
        "summary": "summary", "summary-baseline": "summary"}


@pytest.mark.parametrize("kind", list(WORD))
def test_a_binary_file_is_named_with_exit_2_and_no_traceback(tmp_path, capsys, kind):
    binary = tmp_path / "picture.png"
    binary.write_bytes(PNG)
    result = in_process(capsys, *argv_reading(kind, str(binary), tmp_path))
    assert result.returncode == 2, (result.stdout, result.stderr)
    err = result.stderr
    assert err.startswith(f"error: {WORD[kind]} {binary}") and len(err.strip().splitlines()) == 1, err
    assert "not a text file" in err and "codec" not in err and "Traceback" not in result.stdout + err


@pytest.mark.parametrize("kind", list(WORD))
def test_invalid_utf8_and_deep_nesting_are_named(tmp_path, capsys, kind):
    latin = tmp_path / "latin1.txt"
    latin.write_bytes(LATIN1)
    err = one_line_error(capsys, argv_reading(kind, str(latin), tmp_path))
    assert f"{WORD[kind]} {latin} is not a text file" in err and "0xe9" in err
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    err = one_line_error(capsys, argv_reading(kind, str(deep), tmp_path))
    assert str(deep) in err and WORD[kind] in err


def a_case(tmp_path) -> tuple:
    case = Case("bindu", "BINDU-RPC-ID-ECHO", "MUST", "t",
                {"file": "specs/bindu/openapi.yaml", "pointer": ""},
                "reference", 1, "quick", "m", [])
    path = write_case(tmp_path, case)
    return path, json.loads(path.read_text())


def test_a_case_file_of_the_wrong_shape_names_the_keys(tmp_path, capsys):
    path, data = a_case(tmp_path)
    del data["exchanges"], data["seed"]
    data["foo"] = 1
    path.write_text(json.dumps(data))
    err = one_line_error(capsys, ["replay", str(path)])
    assert f"case {path} is not a conformance case file: missing keys exchanges, seed; unknown key foo" in err
    assert "__init__" not in err and "keyword argument" not in err


@pytest.mark.parametrize(("change", "expected"), [
    ({"seed": "1"}, "seed must be an integer, not text"),
    ({"seed": True}, "seed must be an integer, not true/false"),
    ({"exchanges": {}}, "exchanges must be a list, not an object"),
    ({"source": None}, "source must be an object, not null"),
    ({"exchanges": [{"request": {}}]}, "exchanges[0]: missing key response"),
    ({"exchanges": [{"request": {}, "response": None, "extra": 1}]}, "exchanges[0]: unknown key extra"),
    ({"exchanges": [{"request": [], "response": None}]},
     "exchanges[0].request must be an object, not a list"),
    ({"exchanges": [3]}, "exchanges[0] must be an object, not a number"),
])
def test_a_case_value_of_the_wrong_type_is_named(tmp_path, capsys, change, expected):
    path, data = a_case(tmp_path)
    path.write_text(json.dumps({**data, **change}))
    err = one_line_error(capsys, ["replay", "--pytest", str(path)])
    assert f"case {path} is not a conformance case file: {expected}" in err


def test_a_case_file_that_is_not_an_object_or_not_json(tmp_path, capsys):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    assert ("not a conformance case file: a JSON object is expected, not a list"
            in one_line_error(capsys, ["replay", str(path)]))
    path.write_text("{oops")
    assert f"case {path} is not JSON" in one_line_error(capsys, ["replay", str(path)])


def test_a_good_case_still_round_trips(tmp_path):
    path, data = a_case(tmp_path)
    assert Case.from_json(data).to_json() == data


@pytest.mark.parametrize(("text", "expected"), [
    ("[1]", "a JSON object is expected"),
    ('{"profile": "bindu"}', "missing key requirements"),
    ('{"requirements": []}', "missing key profile"),
    ('{"profile": "bindu", "requirements": {}}', "requirements must be a list"),
    ('{"profile": "bindu", "requirements": [{"id": "X", "level": "MUST"}]}',
     "requirements[0].status must be text"),
])
def test_a_summary_of_the_wrong_shape_is_named(tmp_path, capsys, text, expected):
    path = tmp_path / "summary.json"
    path.write_text(text)
    for argv in (["diff", str(path), str(path)], ["baseline", "write", str(path)]):
        assert f"summary {path} is not a conformance summary.json: {expected}" in one_line_error(capsys, argv)


def test_a_config_that_does_not_parse_is_named(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("timeout: [1\n")
    assert f"config {config} does not parse" in one_line_error(
        capsys, ["run", "bindu", "--config", str(config)])
    config.write_text("[" * 100_000)
    assert f"config {config} does not parse" in one_line_error(
        capsys, ["run", "bindu", "--config", str(config)])
