"""Requirements declared on their checks, and the faults and variants beside them.

A protocol module declares each requirement with a decorator on the check that proves it::

    @requirement(id="BINDU-RPC-METHOD-NOT-FOUND", level="MUST", title="An unknown method gets -32601",
                 source=at("/info/description", "| `-32601` |"), faults=[returns(...), "shared_fault"])
    def check_method_not_found(ctx: CheckContext) -> None: ...

    @check_method_not_found.fault
    def unknown_method_internal_error(ref) -> None: ...   # a behavioural fault, under its check

Everything lands in one registry (``REGISTRY``), keyed by the module that declared it; a
protocol names its modules (conformance/kit/protocol.py) and ``collect`` turns them into the
profile's rows, faults and variants when the profile loads. A source is resolved then too:
``at(pointer, needle)`` cites the profile's spec (and the line the needle stands on),
``chosen(where)`` the profile's own choice (never MUST), ``code(error)`` an error code of the
profile's ``errors:``. A family (``each=``) declares one requirement per item a document
lists (each method, each command): its id and title are templates (``str.format``: a
literal brace is doubled) filled with the item's values, which the check gets as keyword
arguments. ``code=`` adds the ambiguity rule's
SHOULD twin ``<id>-CODE``: the check called with ``strict=True``, asking for the profile's
error code where the MUST asks only for a refusal."""

from __future__ import annotations

import fnmatch
import functools
import importlib
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.documents.openapi import line_of
from conformance.model import Profile, Requirement, Source

Patch = Callable[[Any], None]
# when a row applies: called with the CheckContext before the check, raising NotApplicable
# with its reason where the row does not apply (the protocol writes them; the engine knows none)
Guard = Callable[[Any], None]


def slug(name: str) -> str:
    """An operation name as part of a requirement ID: ``tasks/get`` -> ``TASKS-GET``."""
    return re.sub(r"[/_]", "-", name).upper()


# -- sources ---------------------------------------------------------------------------
@dataclass(frozen=True)
class At:
    """A place in the profile's spec: a JSON pointer, and with ``needle`` the line it stands on."""

    pointer: str
    needle: str | None = None


@dataclass(frozen=True)
class Chosen:
    """Where the spec is silent: the profile's own choice, said in words (never MUST)."""

    where: str


@dataclass(frozen=True)
class Code:
    """An error code the profile names (its ``errors:`` block) where the spec names none."""

    error: str


def at(pointer: str, needle: str | None = None) -> At:
    return At(pointer, needle)


def chosen(where: str) -> Chosen:
    return Chosen(where)


def code(error: str) -> Code:
    return Code(error)


Cite = At | Chosen | Code | Source


def cite(profile: Profile, where: Cite) -> Source:
    """The ``Source`` a declaration's ``source`` names, in ``profile``."""
    if isinstance(where, Source):
        return where
    if isinstance(where, Chosen):
        return Source("profile", where.where)
    if isinstance(where, Code):
        return Source("profile", f"profiles/{profile.name}.yaml#/errors/{where.error}")
    if where.needle is None:
        return Source(profile.spec_relpath, where.pointer)
    return Source(profile.spec_relpath, f"{where.pointer} (line {line_of(spec_text(profile), where.needle)})")


@functools.lru_cache(maxsize=16)
def _text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def spec_text(profile: Profile) -> str:
    return _text(str(profile.spec_path))


# -- families ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Each:
    """One member of a family: ``args`` fill the id and title templates and reach the
    check as keyword arguments, ``labels`` only fill the templates (``TASKS-GET`` for
    ``tasks/get``); ``source``, ``faults`` (names, or faults themselves, registered in the
    declaring module), ``title``, ``level`` and ``lasting`` replace the declaration's for
    this member (a member's own operation, its own faults, a statement the document makes
    for one profile and the profile alone for another, a member that lasts); ``applies``
    adds guards of this member to the declaration's (a member about one binding)."""

    args: Mapping[str, Any]
    source: Cite | None = None
    faults: Sequence[str | Patch] | None = None
    title: str | None = None
    labels: Mapping[str, Any] = field(default_factory=dict)
    level: str | None = None
    lasting: str | None = None
    applies: Guard | Sequence[Guard] = ()


class LimitValues(dict[str, Any]):
    """The profile's limits by name, as title templates read them: ``{limits[text_bytes]}``."""

    def __init__(self, profile: Profile) -> None:
        super().__init__({name: _number(limit.value) for name, limit in profile.limits.items()})


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


Title = str | Callable[[Profile], str]


@dataclass
class Declaration:
    """One requirement as its module declared it (or one family of them)."""

    id: str
    level: str
    title: Title
    source: Cite | Callable[[Profile], Cite] | None
    check: Callable[..., None]
    faults: list[str] = field(default_factory=list)
    needs: tuple[str, ...] = ()
    optional: str = ""
    lasting: str = ""
    document: str = ""
    code: str = ""
    code_faults: tuple[str, ...] = ()
    each: Callable[[Profile], Iterable[Each]] | None = None
    module: str = ""
    applies: tuple[Guard, ...] = ()

    def rows(self, profile: Profile) -> list[Requirement]:
        """The requirements this declaration makes in ``profile`` (the -CODE twin after its MUST)."""
        members = list(self.each(profile)) if self.each else [Each({})]
        return [row for member in members for row in self._rows(profile, member)]

    def _rows(self, profile: Profile, member: Each) -> list[Requirement]:
        values = {**member.args, **member.labels, "limits": LimitValues(profile)}
        rid = self.id.format(**values)
        title = member.title or self.title
        title = title(profile) if callable(title) else title.format(**values)
        where = member.source if member.source is not None else self.source
        if where is None:
            raise ValueError(f"{rid}: no source (the declaration or each member of its family must give one)")
        source = cite(profile, where(profile) if callable(where) else where)
        own = member.faults if member.faults is not None else self.faults
        for patch in own:
            if not isinstance(patch, str):
                REGISTRY.add_fault(self.module, patch)
        faults = tuple(_name(f) for f in own)
        lasting = self.lasting if member.lasting is None else member.lasting
        if self.optional and self.optional not in profile.optional:
            raise ValueError(f"{rid}: optional feature {self.optional!r} is not in the profile's "
                             "optional: block")
        check = functools.partial(self.check, **member.args) if member.args else self.check
        applies = self.applies + guards(member.applies)
        rows = [Requirement(rid, member.level or self.level, title, source, check, faults, self.needs,
                            self.optional,
                            lasting=lasting, document=self.document, applies=applies)]
        if self.code:
            rows.append(Requirement(f"{rid}-CODE", "SHOULD", f"{title}: the refusal carries {self.code}",
                                    cite(profile, Code(self.code)), functools.partial(check, strict=True),
                                    self.code_faults, self.needs, self.optional, lasting=lasting,
                                    document=self.document, applies=applies))
        return rows


def _name(fault: str | Patch) -> str:
    return fault if isinstance(fault, str) else fault.__name__


def guards(applies: Guard | Sequence[Guard]) -> tuple[Guard, ...]:
    """One guard or several, as a tuple."""
    return (applies,) if callable(applies) else tuple(applies)


# -- the registry ------------------------------------------------------------------------
@dataclass
class Registry:
    """Every declaration, fault and variant, by the module that declared it."""

    requirements: dict[str, list[Declaration]] = field(default_factory=dict)
    faults: dict[str, dict[str, Patch]] = field(default_factory=dict)
    variants: dict[str, dict[str, Patch]] = field(default_factory=dict)
    # when a variant of a shared module applies to a profile (a variant -> predicate)
    applies: dict[str, Callable[[Profile], bool]] = field(default_factory=dict)
    _ids: dict[str, tuple[str, str]] = field(default_factory=dict)  # static id -> (module, check name)

    def declare(self, declaration: Declaration) -> None:
        where = (declaration.module, getattr(declaration.check, "__qualname__", ""))
        if "{" not in declaration.id:
            owner = self._ids.setdefault(declaration.id, where)
            if owner != where:
                raise ValueError(f"requirement {declaration.id} is declared twice: in {owner[0]} "
                                 f"({owner[1]}) and in {where[0]} ({where[1]})")
        self.requirements.setdefault(declaration.module, []).append(declaration)

    def add_fault(self, module: str, patch: Patch, into: dict[str, dict[str, Patch]] | None = None) -> None:
        table = (self.faults if into is None else into).setdefault(module, {})
        name = patch.__name__
        known = table.get(name)
        if known is not None and getattr(known, "__qualname__", "") != getattr(patch, "__qualname__", "") \
                and known.__doc__ != patch.__doc__:
            raise ValueError(f"{module}: two faults or variants named {name!r}")
        table[name] = patch

    def rows(self, profile: Profile, modules: Sequence[str]) -> list[Requirement]:
        """The rows ``modules`` (imported already) declare for ``profile``, in their order."""
        return [row for module in modules for d in self.requirements.get(module, [])
                for row in d.rows(profile)]

    def faults_of(self, modules: Sequence[str]) -> dict[str, Patch]:
        """The faults ``modules`` declare, by name (what a part's own tests prove)."""
        return {name: patch for module in modules for name, patch in self.faults.get(module, {}).items()}


REGISTRY = Registry()


class Check:
    """A check function with its declarations: still called as the function is, and
    ``@check.fault`` registers a behavioural fault under it that its rows must catch."""

    def __init__(self, fn: Callable[..., None], declarations: list[Declaration]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.declarations = declarations

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.fn(*args, **kwargs)

    def fault(self, patch: Patch) -> Patch:
        """Register ``patch`` as a fault of the module, named by this check's rows."""
        module = self.declarations[0].module
        REGISTRY.add_fault(module, patch)
        for declaration in self.declarations:
            if patch.__name__ not in declaration.faults:
                declaration.faults.append(patch.__name__)
        return patch


def requirement(*, id: str, level: str, title: Title,  # noqa: A002
                source: Cite | Callable[[Profile], Cite] | None = None, faults: Sequence[str | Patch] = (),
                needs: Sequence[str] = (), optional: str = "",
                lasting: str = "", document: str = "", code: str = "", code_faults: Sequence[str] = (),
                each: Callable[[Profile], Iterable[Each]] | None = None,
                applies: Guard | Sequence[Guard] = ()) -> Callable[[Callable[..., None]], Check]:
    """Declare the requirement the decorated check proves (see the module's docstring).
    ``faults`` are names of faults, or faults themselves (conformance/kit/faults.py), which
    are registered in this module; ``needs`` the credentials or control it cannot go
    without; ``optional`` the feature of the profile's ``optional:`` block it is about;
    ``lasting`` what it does that lasts to an identity (conformance/kit/live.py); ``document``
    the shared documents it cites instead of the profile's spec (``"mcp"``); ``applies``
    one guard or several saying when the row applies: each is called with the CheckContext
    before the check and raises NotApplicable with its reason where the row does not (a
    statement of another binding, a feature the target declares off), and the check's body
    then never runs. A family's members may each give their own ``source`` instead of the
    declaration, and guards of their own (``Each.applies``)."""
    def declare(fn: Callable[..., None]) -> Check:
        module = fn.__module__
        for fault in faults:
            if not isinstance(fault, str):
                REGISTRY.add_fault(module, fault)
        declaration = Declaration(id, level, title, source, fn, [_name(f) for f in faults], tuple(needs),
                                  optional,
                                  lasting, document, code, tuple(code_faults), each, module,
                                  guards(applies))
        REGISTRY.declare(declaration)
        if isinstance(fn, Check):  # a second declaration on one check (a pair of rows, say)
            fn.declarations.append(declaration)
            declaration.check = fn.fn
            return fn
        return Check(fn, [declaration])
    return declare


def fault(patch: Patch) -> Patch:
    """Register a fault on its own (one several requirements name, or a family's member)
    in the module that defines it."""
    REGISTRY.add_fault(patch.__module__, patch)
    return patch


def variant(patch: Patch | None = None, *, applies: Callable[[Profile], bool] | None = None,
            binding_kind: str | None = None) -> Any:
    """Register a variant: a behaviour the spec allows that the reference does not choose
    (its docstring quotes the spec text, "allowed by: ..."). ``applies(profile)`` says
    whether it concerns a profile (a shared module's variant, say); ``binding_kind`` that
    it shows only over bindings of that kind (the selftest runs it there)."""
    def register(p: Patch) -> Patch:
        if binding_kind:
            vars(p)["binding_kind"] = binding_kind
        REGISTRY.add_fault(p.__module__, p, into=REGISTRY.variants)
        if applies is not None:
            REGISTRY.applies[p.__name__] = applies
        return p
    return register(patch) if patch is not None else register


def caller_module(depth: int = 2) -> str:
    """The module that called the function calling this (a fault built by the vocabulary
    belongs to the module that built it)."""
    return str(sys._getframe(depth).f_globals.get("__name__", "?"))


# -- collecting a profile's parts --------------------------------------------------------
@dataclass(frozen=True)
class Collected:
    requirements: list[Requirement]
    faults: dict[str, Patch]
    variants: dict[str, Patch]


def collect(profile: Profile, modules: Sequence[str], own: str, last: Sequence[str] = (),
            first: Sequence[str] = (), more_faults: Mapping[str, Sequence[str]] | None = None) -> Collected:
    """The rows, faults and variants the ``modules`` declare, for ``profile``. Modules
    outside the protocol's own package ``own`` are shared (MCP, say): their faults join
    only where a row names them. ``more_faults`` (requirement id -> fault names) adds the
    protocol's own faults to rows a shared module declares, or names there a shared fault
    only this protocol's reference shows. Requirements keep the modules' order and their own, but
    what lasts to an identity comes after everything else, the kinds in ``last`` at the
    very end in that order (a live run changes a disposable identity for good only once
    every other row has used it); the IDs in ``first`` come before all, in that order
    (rows that make the identities the rest use, or need ones nothing has used yet)."""
    for module in modules:
        importlib.import_module(module)
    rows = REGISTRY.rows(profile, modules)
    for row in rows:
        row.faults += tuple(f for f in (more_faults or {}).get(row.id, ()) if f not in row.faults)
    named = {f for r in rows for f in r.faults}
    faults: dict[str, Patch] = {}
    variants: dict[str, Patch] = {}
    for module in modules:
        shared = not module.startswith(own + ".") and module != own
        for name, patch in REGISTRY.faults.get(module, {}).items():
            if shared and name not in named:
                continue
            if name in faults and faults[name] is not patch:
                raise ValueError(f"fault {name!r} is declared in two modules of {profile.name}")
            faults[name] = patch
        for name, patch in REGISTRY.variants.get(module, {}).items():
            if REGISTRY.applies.get(name, lambda _p: True)(profile):
                variants[name] = patch
    order = {kind: i for i, kind in enumerate(last)}
    rows = [r for r in rows if not r.lasting] + sorted((r for r in rows if r.lasting),
                                                      key=lambda r: order.get(r.lasting, -1))
    rank = {rid: i for i, rid in enumerate(first)}
    rows = (sorted((r for r in rows if r.id in rank), key=lambda r: rank[r.id])
            + [r for r in rows if r.id not in rank])
    return Collected(rows, faults, variants)


def matching(requirements: Iterable[Requirement], patterns: Iterable[str]) -> list[Requirement]:
    """The requirements whose id matches one of the glob ``patterns``."""
    pats = list(patterns)
    return [r for r in requirements if any(fnmatch.fnmatchcase(r.id, p) for p in pats)]
