"""Reading protocol documents and their schemas: loading, JSON pointers, local $ref
inlining, annotations dropped, and the validator every check applies."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from conformance.documents.compiled import FORMAT_CHECKER as FORMAT_CHECKER  # the checker every check applies
from conformance.documents.compiled import Judge, judge_for
from conformance.yamltext import load_yaml


class SpecError(Exception):
    """A spec document is missing, does not parse, or lacks what the profile needs."""


def load_document(path: Path) -> dict[str, Any]:
    """Parse a YAML or JSON spec document; SpecError with a one-line reason if it cannot."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read spec {path}: {exc.strerror}") from exc
    try:
        doc = json.loads(text) if path.suffix == ".json" else load_yaml(text)
    except (ValueError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError(f"spec {path} does not parse: {first}") from exc
    if not isinstance(doc, dict):
        raise SpecError(f"spec {path} is not a JSON object / YAML mapping")
    return doc


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """Follow a JSON pointer (``/a/b`` or ``#/a/b``) into a document."""
    node = doc
    for raw in pointer.lstrip("#").strip("/").split("/") if pointer.strip("#/") else []:
        key = raw.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(key)] if isinstance(node, list) else node[key]
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise SpecError(f"pointer {pointer!r} does not resolve (stops at {key!r})") from exc
    return node


def pointer_to(*parts: str) -> str:
    """Build a JSON pointer from raw keys, escaping ``~`` and ``/``."""
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def inline_refs(schema: Any, doc: dict[str, Any], _stack: tuple[str, ...] = ()) -> Any:
    """Return a copy of ``schema`` with every local ``$ref`` replaced by its target.

    A recursive reference is cut at its second appearance and replaced by ``{}``,
    so generation stays finite."""
    if isinstance(schema, list):
        return [inline_refs(item, doc, _stack) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema and isinstance(schema["$ref"], str) and schema["$ref"].startswith("#"):
        ref = schema["$ref"]
        if ref in _stack:
            return {}
        target = inline_refs(resolve_pointer(doc, ref), doc, _stack + (ref,))
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if not siblings:
            return target
        if target is False:
            return False
        merged = dict(target) if isinstance(target, dict) else {}
        # Sibling annotations (description, example) do not constrain; keep the target's.
        # A sibling constraint that differs from the target's own applies as well (allOf).
        for key, value in siblings.items():
            value = inline_refs(value, doc, _stack)
            if key not in merged:
                merged[key] = value
            elif key not in (*_ANNOTATIONS, "default", "$comment") and merged[key] != value:
                merged["allOf"] = [*merged.get("allOf", []), {key: value}]
        return merged
    return {key: inline_refs(value, doc, _stack) for key, value in schema.items()}


# Formats the spec uses that hypothesis-jsonschema does not know by itself.
_ANNOTATIONS = ("example", "examples", "description", "title", "deprecated", "readOnly", "writeOnly",
                "externalDocs")


def strip_annotations(schema: Any) -> Any:
    """Drop OpenAPI-only annotation keywords that confuse generators (``example`` etc.)."""
    if isinstance(schema, list):
        return [strip_annotations(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
            out[key] = {name: strip_annotations(sub) for name, sub in value.items()}
        else:
            out[key] = strip_annotations(value)
    return out


def validator_for(schema: dict[str, Any]) -> Judge:
    """Draft 2020-12 with the installed format checkers, compiled once per schema."""
    return judge_for(schema)


def schema_errors(schema: dict[str, Any], instance: Any, limit: int = 3) -> list[str]:
    """Human-readable schema violations of ``instance`` (empty when valid)."""
    return violations(validator_for(schema), instance, limit)


def violations(judge: Judge, instance: Any, limit: int = 3, length: int = 200) -> list[str]:
    """The first ``limit`` violations of ``instance`` by a compiled schema, in the order of
    their paths, each ``/pointer: message`` (``(root)`` at the top, the message cut at
    ``length``): one wording for a check's finding and a reference's refusal alike."""
    errors = sorted(judge.iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [
        f"{'/' + '/'.join(map(str, e.absolute_path)) if e.absolute_path else '(root)'}: {e.message[:length]}"
        for e in errors[:limit]
    ]
