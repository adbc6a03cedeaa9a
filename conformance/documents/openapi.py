"""Reading an OpenAPI document: the error catalog written as markdown tables,
JSON-RPC methods and their params/result schemas, and the REST paths."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from conformance.documents.schemas import SpecError, inline_refs, pointer_to, resolve_pointer
from conformance.model import ErrorCode, Operation, Source

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@dataclass
class MarkdownTable:
    heading: str
    columns: list[str]
    rows: list[dict[str, str]]


def _cell(text: str) -> str:
    return text.strip().strip("`").strip()


def markdown_tables(text: str) -> list[MarkdownTable]:
    """Every pipe table in a markdown text, with the nearest heading above it."""
    tables: list[MarkdownTable] = []
    heading = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        is_header = line.startswith("|") and i + 1 < len(lines)
        if is_header and re.fullmatch(r"\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*\|?", lines[i + 1].strip()):
            columns = [_cell(c) for c in line.strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = [_cell(c) for c in lines[i].strip().strip("|").split("|")]
                rows.append(dict(zip(columns, cells, strict=False)))
                i += 1
            tables.append(MarkdownTable(heading, columns, rows))
            continue
        i += 1
    return tables


def line_of(spec_text: str, needle: str) -> int:
    """1-based line number of the first line containing ``needle`` (0 if absent)."""
    for number, line in enumerate(spec_text.splitlines(), start=1):
        if needle in line:
            return number
    return 0


def error_catalog(
    doc: dict[str, Any], spec_text: str, relpath: str, pointer: str, columns: dict[str, str]
) -> dict[int, ErrorCode]:
    """Parse every markdown table at ``pointer`` that has the code/name/http/when columns."""
    text = resolve_pointer(doc, pointer)
    if not isinstance(text, str):
        raise SpecError(f"{relpath}{pointer} is not a text holding the error catalog")
    catalog: dict[int, ErrorCode] = {}
    for table in markdown_tables(text):
        if not all(col in table.columns for col in columns.values()):
            continue
        for row in table.rows:
            try:
                code = int(row[columns["code"]])
                status = int(row[columns["http"]])
            except ValueError as exc:
                raise SpecError(f"error catalog row {row} in {relpath} is malformed") from exc
            line = line_of(spec_text, f"`{code}`")
            catalog[code] = ErrorCode(
                code=code,
                name=row[columns["name"]],
                http_status=status,
                when=row[columns["when"]],
                source=Source(relpath, f"{pointer} (table '{table.heading}', line {line})"),
            )
    if not catalog:
        raise SpecError(f"no error catalog table with columns {sorted(columns.values())} at "
                        f"{relpath}{pointer}")
    return catalog


def _camel(method: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[/_.\-]", method) if part)


def jsonrpc_operations(doc: dict[str, Any], relpath: str, settings: dict[str, Any]) -> dict[str, Operation]:
    """Methods from the enum at ``settings['methods']``; params schema by the naming rule
    ``settings['params']`` (``{Method}`` is the CamelCased method) unless overridden;
    result schemas from ``settings['results']``."""
    names = resolve_pointer(doc, settings["methods"])
    if not isinstance(names, list) or not names:
        raise SpecError(f"{relpath}{settings['methods']} is not a list of method names")
    overrides = settings.get("params_overrides", {})
    results = settings.get("results", {})
    ops: dict[str, Operation] = {}
    for name in names:
        params_ptr = overrides.get(name) or settings["params"].replace("{Method}", _camel(name))
        result_ptr = results.get(name)
        if result_ptr is None:
            raise SpecError(f"profile names no result schema for method {name!r}")
        params = inline_refs({"$ref": "#" + params_ptr}, doc)
        result = inline_refs({"$ref": "#" + result_ptr}, doc)
        ops[name] = Operation(name, params, result, Source(relpath, params_ptr))
    return ops


def schema_at(doc: dict[str, Any], pointer: str) -> dict[str, Any]:
    """The schema at ``pointer`` with every local $ref inlined."""
    return inline_refs({"$ref": "#" + pointer}, doc)


def rest_operations(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(METHOD, path, pointer) for every operation under ``paths``."""
    out = []
    for path, item in (doc.get("paths") or {}).items():
        for method in HTTP_METHODS:
            if method in item:
                out.append((method.upper(), path, pointer_to("paths", path, method)))
    return out
