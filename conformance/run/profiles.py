"""Finding and loading profiles: the YAML in profiles/, the spec it points at,
and the protocol package that supplies requirements, reference and faults."""

from __future__ import annotations

import fnmatch
import importlib
from collections import Counter
from pathlib import Path
from typing import Any

from conformance.catalog import (
    ProfileError,
    available,
    draft_of,
    is_profile_file,
    profile_path,
    read_settings,
)
from conformance.documents.limits import load_limits
from conformance.documents.readers import SpecDocument, read_errors, read_operations
from conformance.documents.schemas import SpecError, load_document, sha256_of
from conformance.documents.statements import load_statements
from conformance.kit.declare import collect
from conformance.kit.faults import check_seams
from conformance.kit.protocol import Protocol
from conformance.model import Profile, Requirement, Source
from conformance.paths import DATA_ROOT, PACKAGE_DIR, PROFILES_DIR, ROOT, RUN_INI
from conformance.yamltext import load_yaml

_CACHE: dict[str, Profile] = {}


def read_deferred(block: Any, name: str) -> tuple[tuple[str, ...], str]:
    """The profile's ``deferred:`` block: requirement ids or globs of a later part, and why."""
    if block is None:
        return (), ""
    globs = block.get("requirements") if isinstance(block, dict) else None
    until = block.get("until") if isinstance(block, dict) else None
    if (not isinstance(globs, list) or not all(isinstance(g, str) for g in globs)
        or not isinstance(until, str) or not until):
        raise ProfileError(f"profile {name}: `deferred:` needs requirements (ids or globs) and until (why)")
    return tuple(globs), until


def check_quotas(profile: Profile, name: str) -> None:
    """The profile's ``quotas:`` block: each a name of ``limits:`` (a count), with the
    requirements about it (``rows``, ids or globs that match); checked when it loads."""
    block = profile.settings.get("quotas") or {}
    if not isinstance(block, dict):
        raise ProfileError(f"profile {name}: `quotas:` must map limit names to {{rows: [...]}}")
    ids = [r.id for r in profile.requirements]
    for quota, row in block.items():
        if quota not in profile.limits:
            raise ProfileError(f"profile {name}: quota {quota!r} is not one of its limits:")
        rows = (row or {}).get("rows", []) if isinstance(row, dict) else None
        if not isinstance(rows, list) or not all(any(fnmatch.fnmatchcase(i, str(p)) for i in ids)
                                                 for p in rows):
            raise ProfileError(f"profile {name}: quota {quota}: rows must be requirement ids or globs "
                               "that match one")


def read_quota_use(path: Path, profile: Profile) -> dict[str, dict[str, dict[str, int]]]:
    """Each requirement's measured use of each quota (written by ``conformance.quotause``)."""
    if not path.is_file():
        return {}
    data = load_yaml(path.read_text(encoding="utf-8")) or {}
    known = {r.id for r in profile.requirements}
    quotas = set(profile.settings.get("quotas") or {})
    for rid, use in data.items():
        if rid not in known or not isinstance(use, dict) or not set(use) <= quotas:
            raise ProfileError(f"{path}: {rid}: not a requirement of {profile.name} with uses of its "
                               f"quotas: ({use!r})")
    return {str(rid): {q: {str(w): int(n) for w, n in per.items()} for q, per in use.items()}
            for rid, use in data.items()}


def assign_groups(requirements: list[Requirement], groups: dict[str, list[str]]) -> None:
    """The profile's ``groups:`` block: group name -> requirement ids or globs; the first
    group that names a requirement is its own (reports show requirements by group)."""
    for req in requirements:
        req.group = next((name for name, patterns in groups.items()
                          if any(fnmatch.fnmatchcase(req.id, str(p)) for p in patterns)), "")


def protocol_of(package: str) -> Protocol:
    """The ``PROTOCOL`` of a protocol package, in its module ``protocol`` (conformance/kit/protocol.py):
    the package's ``__init__`` holds only its docstring, so importing any module of it imports
    nothing else."""
    module = f"{package}.protocol"
    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise ProfileError(f"package {package} has no module protocol.py exporting PROTOCOL "
                           "(a conformance.kit.protocol.Protocol)") from None
    protocol = getattr(found, "PROTOCOL", None)
    if not isinstance(protocol, Protocol):
        raise ProfileError(f"{module} exports no PROTOCOL (a conformance.kit.protocol.Protocol)")
    return protocol


def reference_class(protocol: Protocol) -> type | None:
    """The class of the protocol's reference (``Protocol.reference``), imported, not built."""
    if not protocol.reference:
        return None
    module, _, name = protocol.reference.partition(":")
    found = getattr(importlib.import_module(module), name, None)
    if not isinstance(found, type):
        raise ProfileError(f"Protocol.reference {protocol.reference!r} names no class")
    return found


def load_profile(name: str, path: Path | None = None) -> Profile:
    """Load (once per process) the named profile with its spec and protocol package:
    the kit's own ``profiles/<name>.yaml``, or the profile file at ``path`` (a copy
    a user keeps elsewhere; its spec and statement map are the kit's)."""
    key = name if path is None or path.resolve() == profile_path(name).resolve() else str(path.resolve())
    if key in _CACHE:
        return _CACHE[key]
    settings = read_settings(path or profile_path(name))
    spec_path = DATA_ROOT / settings["spec"]
    spec = load_document(spec_path)
    document = SpecDocument(spec, spec_path.read_text(encoding="utf-8"), settings["spec"], name)
    operations = read_operations(document, settings)
    errors = read_errors(document, settings)
    protocol = protocol_of(settings["package"])
    profile = Profile(
        name=settings.get("name", name),
        title=settings.get("title", name),
        spec_path=spec_path,
        spec_relpath=settings["spec"],
        spec=spec,
        spec_sha256=sha256_of(spec_path),
        settings=settings,
        operations=operations,
        errors=errors,
        requirements=[],
        faults={},
        create_reference=protocol.create_reference,
        probe=protocol.probe,
        reference_credentials={},
        limits=load_limits(settings.get("limits"), spec, settings["spec"]),
    )
    profile.optional = {name: Source(settings["spec"], row["pointer"])
                        for name, row in (settings.get("optional") or {}).items()}
    check_refusal_causes(settings.get("refusal_causes"), errors, name)
    profile.deferred, profile.deferred_until = read_deferred(settings.get("deferred"), name)
    profile.statements = load_statements(PROFILES_DIR / "statements" / f"{name}.yaml", profile.deferred)
    profile.draft = draft_of(settings)
    profile.provides = dict(protocol.provides)
    collected = collect(profile, protocol.modules, settings["package"], protocol.last, protocol.first,
                        protocol.more_faults)
    profile.requirements, profile.faults, profile.variants = (collected.requirements, collected.faults,
                                                              collected.variants)
    try:
        check_seams(name, {**profile.faults, **profile.variants}, reference_class(protocol))
    except ValueError as exc:
        raise ProfileError(str(exc)) from None
    profile.reference_credentials = protocol.credentials(profile)
    if protocol.world is not None:
        profile.reference_world = protocol.world(profile)
    for binding, added in protocol.binding_entries(profile).items():
        entry = profile.settings["bindings"][binding]
        for part, value in added.items():  # not `key`: the cache key below
            entry[part] = {**(entry.get(part) or {}), **value} if part == "headers" else value
    twice = sorted(rid for rid, n in Counter(r.id for r in profile.requirements).items() if n > 1)
    if twice:
        raise ProfileError(f"profile {name}: requirement IDs used twice: {', '.join(twice)}")
    assign_groups(profile.requirements, settings.get("groups") or {})
    check_quotas(profile, name)
    profile.quota_use = read_quota_use(Path(str(importlib.import_module(settings["package"]).__file__)).parent
                                       / "quota_use.yaml", profile)
    _CACHE[key] = profile
    return profile


def check_refusal_causes(block: Any, errors: dict[Any, Any], name: str) -> None:
    """``refusal_causes:`` (cause -> error names, conformance/checks/causes.py) names errors
    the profile has, and only the causes a check sets aside."""
    if block is None:
        return
    known = {e.name for e in errors.values()}
    if not isinstance(block, dict) or not all(isinstance(v, list) for v in block.values()):
        raise ProfileError(f"profile {name}: refusal_causes: must map a cause to a list of error names")
    for cause, names in block.items():
        if cause not in ("credential", "quota"):
            raise ProfileError(f"profile {name}: refusal_causes: {cause!r} is not a cause "
                               "(credential, quota)")
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ProfileError(f"profile {name}: refusal_causes.{cause} names errors that are not the "
                               f"profile's: {unknown}")


# where the files are (conformance/paths.py) and which profiles there are (conformance/catalog.py),
# named here too for the callers of old
__all__ = ["DATA_ROOT", "PACKAGE_DIR", "PROFILES_DIR", "ROOT", "RUN_INI", "ProfileError", "SpecError",
           "available", "is_profile_file", "load_profile", "profile_path", "read_settings"]
