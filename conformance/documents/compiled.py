"""A schema's validator, compiled: jsonschema-rs answers "is it valid?", python-jsonschema
explains why not.

Most instances the kit judges are valid (every request the references serve, every answer
the checks read, every draw the generators filter), and python-jsonschema walks each one
in Python, building a validator object per subschema (a third of a run's CPU). jsonschema-rs
compiles the schema once and answers in native code; the error messages, paths and
keywords the kit quotes still come from python-jsonschema, asked only about an instance
already known to be invalid.

The two must give the same answer. Where their semantics differ, the compiled schema is
rewritten to defer to Python: ``pattern`` is matched with ``re.search`` as python-jsonschema
does (ECMA-262's ``$`` does not match before a final newline, Python's does), and each
``format`` is checked by python-jsonschema's own format checker (the formats it does not
check are not checked). An instance jsonschema-rs cannot read (a non-string key, bytes)
is judged by python-jsonschema alone. The dialect is Draft 2020-12 unless the caller names
another (the MCP schemas' own ``$schema``). tests/unit/test_compiled.py
holds the two to agreement on every schema of every spec, valid and broken instances alike."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import jsonschema
import jsonschema_rs

FORMAT_CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER
PATTERN = "x-python-pattern"  # the custom keyword that stands for ``pattern``
# python-jsonschema's dialects and jsonschema-rs's, by the draft each implements
COMPILED = {jsonschema.Draft202012Validator: jsonschema_rs.Draft202012Validator,
            jsonschema.Draft201909Validator: jsonschema_rs.Draft201909Validator,
            jsonschema.Draft7Validator: jsonschema_rs.Draft7Validator,
            jsonschema.Draft6Validator: jsonschema_rs.Draft6Validator,
            jsonschema.Draft4Validator: jsonschema_rs.Draft4Validator}


def formats_of(checker: jsonschema.FormatChecker) -> dict[str, Any]:
    """Each format python-jsonschema's ``checker`` checks, as a custom format of the compiled schema."""
    return {f"x-python-{name}": (lambda value, name=name: checker.conforms(value, name))
            for name in checker.checkers}


FORMATS = formats_of(FORMAT_CHECKER)
# keywords whose values are data, not schemas: their members are never rewritten
DATA = frozenset({"const", "enum", "default", "examples", "example", "x-example"})


class PythonPattern:
    """``pattern`` as python-jsonschema reads it: ``re.search``, Python's dialect."""

    def __init__(self, parent_schema: dict[str, Any], value: str, schema_path: list[Any]) -> None:
        self.regex = re.compile(value)

    def validate(self, instance: Any) -> None:
        if isinstance(instance, str) and not self.regex.search(instance):
            raise ValueError(f"{instance!r} does not match {self.regex.pattern!r}")


def deferring(schema: Any, formats: dict[str, Any] = FORMATS) -> Any:
    """``schema`` with ``pattern`` and ``format`` rewritten to the Python checks above
    (a format the Python side does not check is left out)."""
    if isinstance(schema, list):
        return [deferring(item, formats) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in DATA:
            out[key] = value
        elif key == "pattern" and isinstance(value, str):
            out[PATTERN] = value
        elif key == "format" and isinstance(value, str):
            if f"x-python-{value}" in formats:
                out["format"] = f"x-python-{value}"
        elif key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas") \
                and isinstance(value, dict):
            out[key] = {name: deferring(sub, formats) for name, sub in value.items()}
        else:
            out[key] = deferring(value, formats)
    return out


class Judge:
    """The validator every check applies: ``is_valid`` and ``iter_errors`` as in
    python-jsonschema, with the compiled answer first."""

    def __init__(self, schema: Any, *, dialect: Any = jsonschema.Draft202012Validator,
                 formats: bool = True) -> None:
        """``dialect``: python-jsonschema's validator class of the draft; ``formats``: check
        ``format`` as its format checker does (False: as python-jsonschema does without a
        checker, not at all)."""
        self.schema = schema
        self._dialect = dialect
        self._checker = self._dialect.FORMAT_CHECKER if formats else None
        self._explain: jsonschema.protocols.Validator | None = None
        checks = (FORMATS if self._checker is FORMAT_CHECKER else formats_of(self._checker)) \
            if self._checker is not None else {}
        try:
            self._fast: Any = COMPILED[self._dialect](
                deferring(schema, checks), validate_formats=bool(checks), formats=checks,
                keywords={PATTERN: PythonPattern}, offline=True)
        except Exception:  # noqa: BLE001 - a schema it cannot compile (a remote $ref, say) is judged in Python
            self._fast = None

    @property
    def explain(self) -> jsonschema.protocols.Validator:
        if self._explain is None:
            self._explain = self._dialect(self.schema, format_checker=self._checker)
        return self._explain

    def is_valid(self, instance: Any) -> bool:
        if self._fast is not None:
            try:
                return bool(self._fast.is_valid(instance))
            except (ValueError, TypeError, OverflowError):  # not JSON it can read: Python judges
                pass
        return bool(self.explain.is_valid(instance))

    def iter_errors(self, instance: Any) -> Iterator[jsonschema.ValidationError]:
        if self.is_valid(instance):
            return iter(())
        return self.explain.iter_errors(instance)


_CACHE: OrderedDict[int, Judge] = OrderedDict()
CACHE_SIZE = 4096  # the spec schemas and the subschemas the invalid generator judges
_LOCK = threading.Lock()


def judge_for(schema: Any) -> Judge:
    """The judge of ``schema``, compiled once per schema object (kept while cached, so its id
    is not reused); the spec schemas the kit loads are never changed in place."""
    key = id(schema)
    with _LOCK:  # the references' server threads and concurrent replays judge at once
        judge = _CACHE.get(key)
        if judge is not None and judge.schema is schema:
            _CACHE.move_to_end(key)
            return judge
    judge = Judge(schema)
    with _LOCK:
        _CACHE[key] = judge
        if len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return judge
