"""A markdown specification as a source: its sections, the line a statement stands on,
and its tables (an error table, say), read where the document is written in prose.

The profile's ``error_table:`` block::

    error_table:
      document: specs/a2a/specification.md
      heading: "5.4. Error Code Mappings"      # the section whose table maps each error
      columns: {name: A2A Error Type, code: JSON-RPC Code, http: HTTP Status}
      when: {heading: "3.3.2. Error Handling", columns: {name: Error Name, when: Description}}
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from conformance.documents.openapi import markdown_tables
from conformance.documents.schemas import SpecError
from conformance.model import ErrorCode, Source
from conformance.paths import DATA_ROOT


@functools.lru_cache(maxsize=8)
def document_text(relpath: str) -> str:
    path = Path(DATA_ROOT / relpath)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read {relpath}: {exc.strerror}") from None


def section_of(text: str, line: int) -> str:
    """The number of the markdown section ``line`` (1-based) stands in (``3.1.4``), or ""."""
    lines = text.splitlines()
    for number in range(min(line, len(lines)), 0, -1):
        found = re.match(r"#+\s+(?:Appendix\s+)?([0-9A-Z]+(?:\.[0-9]+)*)\.?\s", lines[number - 1])
        if found:
            return found.group(1)
    return ""


def statement(relpath: str, needle: str, after: str = "") -> Source:
    """The source of the statement holding ``needle``: the document, its section and line.
    ``after``: a text that stands somewhere above it (a heading), where the needle is not
    unique. A needle the document does not hold fails the load (a citation is checked)."""
    text = document_text(relpath)
    lines = text.splitlines()
    start = 0
    if after:
        start = next((i for i, line in enumerate(lines) if after in line), -1)
        if start < 0:
            raise SpecError(f"{relpath} has no line holding {after!r}")
    for i in range(start, len(lines)):
        if needle in lines[i]:
            section = section_of(text, i + 1)
            return Source(relpath, f"§{section} (line {i + 1})" if section else f"line {i + 1}")
    raise SpecError(f"{relpath} has no line holding {needle!r}" + (f" after {after!r}" if after else ""))


def _table(text: str, relpath: str, heading: str,
           columns: dict[str, str]) -> tuple[list[dict[str, str]], int]:
    for table in markdown_tables(text):
        if heading in table.heading and all(c in table.columns for c in columns.values()):
            first = table.rows[0][columns["name"]] if table.rows else ""
            line = next((n for n, line in enumerate(text.splitlines(), start=1) if f"`{first}`" in line
                         or f"| {first} " in line), 0)
            return table.rows, line
    raise SpecError(f"{relpath}: no table with columns {sorted(columns.values())} under a heading "
                    f"holding {heading!r}")


def error_table(block: dict[str, Any]) -> dict[Any, ErrorCode]:
    """Each row of the block's table: the code (a number where the cell is one), name,
    HTTP status (the cell's leading number) and, from the ``when`` table, what it means."""
    relpath = block["document"]
    text = document_text(relpath)
    rows, _ = _table(text, relpath, block["heading"], block["columns"])
    meaning: dict[str, str] = {}
    if block.get("when"):
        when_rows, _ = _table(text, relpath, block["when"]["heading"], block["when"]["columns"])
        said = block["when"]["columns"]
        meaning = {r[said["name"]]: r[said["when"]] for r in when_rows}
    out: dict[Any, ErrorCode] = {}
    cols = block["columns"]
    for row in rows:
        name, raw_code = row[cols["name"]], row[cols["code"]]
        status = re.match(r"\d+", row[cols["http"]])
        if not status:
            raise SpecError(f"{relpath}: error {name!r} has no HTTP status in {row[cols['http']]!r}")
        code: int | str = int(raw_code) if re.fullmatch(r"-?\d+", raw_code) else raw_code
        out[code] = ErrorCode(code=code, name=name, http_status=int(status.group()),
                              when=meaning.get(name, ""),
                              source=statement(relpath, f"`{name}`", after=block["heading"]))
    return out
