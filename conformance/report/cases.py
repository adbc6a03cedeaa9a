"""Case files: one saved failure with its exchanges, enough to replay it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conformance.model import Case
from conformance.report.shell import sequence_script
from conformance.run.targets import without_userinfo
from conformance.transport.http import curl_line
from conformance.yamltext import read_user_json


def case_filename(requirement_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", requirement_id) + ".json"


def write_case(directory: Path, case: Case, stem: str | None = None) -> Path:
    """Write ``case`` under ``directory`` as ``<stem>.json`` (the requirement's ID by default;
    curl lines filled in) and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    case.curl = [curl_line(e) for e in case.exchanges]
    path = directory / case_filename(stem or case.requirement)
    path.write_text(json.dumps(case.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if case.exchanges:  # the failing example's requests in one paste, ids carried (report/shell.py)
        over = f" over {case.binding}" if case.binding else ""
        script = path.with_suffix(".sh")
        title = (f"{case.requirement} ({case.title}){over}: {case.profile} against "
                 f"{without_userinfo(case.target)}")
        text = sequence_script(case.exchanges, title=title, target=without_userinfo(case.target))
        script.write_text(text + "\n", encoding="utf-8")
        script.chmod(0o755)
    return path


def read_case(path: Path) -> Case:
    """Load a case file; ValueError with a one-line reason naming the file when it cannot
    be read, is not UTF-8 text (a binary file), not JSON, or not of a case's shape."""
    data = read_user_json(path, "case", "a conformance case file")
    try:
        return Case.from_json(data)
    # ValueError: a key or value of the wrong shape, a failure of an unknown kind
    except (TypeError, ValueError) as exc:
        raise ValueError(f"case {path} is not a conformance case file: {exc}") from exc
