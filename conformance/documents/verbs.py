"""Reading operations out of JSON documents: a JSON Schema document of verbs (each
``<verb>_input`` with a matching ``<verb>_result`` under the profile's ``defs``
pointer), a manifest's mapping of actions (each entry one operation, its input
schema under the key the profile names; such manifests give no result schema), a
list of method names with the params schemas the document gives, or the branches of
a union schema (each branch one operation, named by a constant inside it)."""

from __future__ import annotations

from typing import Any

from conformance.documents.schemas import SpecError, inline_refs, resolve_pointer
from conformance.model import Operation, Source


def verb_operations(doc: dict[str, Any], relpath: str, settings: dict[str, Any]) -> dict[str, Operation]:
    defs = resolve_pointer(doc, settings["defs"])
    if not isinstance(defs, dict):
        raise SpecError(f"{relpath}{settings['defs']} is not a mapping of schemas")
    input_ptr, result_ptr = settings["input"], settings["result"]
    ops: dict[str, Operation] = {}
    for name in defs:
        if not name.endswith("_input"):
            continue
        verb = name[: -len("_input")]
        result = result_ptr.replace("{verb}", verb)
        try:
            resolve_pointer(doc, result)
        except SpecError:
            continue
        params = input_ptr.replace("{verb}", verb)
        ops[verb] = Operation(
            verb,
            inline_refs({"$ref": "#" + params}, doc),
            inline_refs({"$ref": "#" + result}, doc),
            Source(relpath, params),
        )
    if not ops:
        raise SpecError(f"no <verb>_input/<verb>_result pairs under {relpath}{settings['defs']}")
    return ops


def action_operations(doc: dict[str, Any], relpath: str, settings: dict[str, Any]) -> dict[str, Operation]:
    actions = resolve_pointer(doc, settings["pointer"])
    if not isinstance(actions, dict) or not actions:
        raise SpecError(f"{relpath}{settings['pointer']} is not a mapping of actions")
    key = settings.get("input", "inputSchema")
    ops: dict[str, Operation] = {}
    for name, action in actions.items():
        if not isinstance(action, dict) or not isinstance(action.get(key), dict):
            raise SpecError(f"{relpath}{settings['pointer']}/{name} has no {key} schema")
        params = f"{settings['pointer']}/{name}/{key}"
        ops[name] = Operation(name, inline_refs({"$ref": "#" + params}, doc), None, Source(relpath, params))
    return ops


def method_operations(doc: dict[str, Any], relpath: str, settings: dict[str, Any]) -> dict[str, Operation]:
    """Methods listed at ``settings['list']``; ``settings['params']`` maps a method to its
    params schema (a method the document gives none takes any object)."""
    names = resolve_pointer(doc, settings["list"])
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise SpecError(f"{relpath}{settings['list']} is not a list of method names")
    params = settings.get("params") or {}
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise SpecError(f"the profile gives params for methods {relpath}{settings['list']} does not "
                        f"list: {unknown}")
    ops: dict[str, Operation] = {}
    for name in names:
        pointer = params.get(name)
        schema = inline_refs({"$ref": "#" + pointer}, doc) if pointer else {"type": "object"}
        ops[name] = Operation(name, schema, None, Source(relpath, pointer or settings["list"]))
    return ops


def union_operations(doc: dict[str, Any], relpath: str, settings: dict[str, Any]) -> dict[str, Operation]:
    """Each branch of the list at ``settings['pointer']`` (an anyOf or oneOf), named by the
    value at ``settings['name']`` inside the branch (a ``const``)."""
    branches = resolve_pointer(doc, settings["pointer"])
    if not isinstance(branches, list) or not branches:
        raise SpecError(f"{relpath}{settings['pointer']} is not a list of schemas")
    ops: dict[str, Operation] = {}
    for index, _ in enumerate(branches):
        pointer = f"{settings['pointer']}/{index}"
        name = resolve_pointer(doc, pointer + settings["name"])
        if not isinstance(name, str) or name in ops:
            raise SpecError(f"{relpath}{pointer}{settings['name']} is not a distinct name: {name!r}")
        ops[name] = Operation(name, inline_refs({"$ref": "#" + pointer}, doc), None, Source(relpath, pointer))
    return ops
