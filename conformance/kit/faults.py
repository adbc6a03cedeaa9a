"""The fault vocabulary: the few ways a reference is made to misbehave in exactly one
respect, each a patch ``patch(ref)`` of one reference instance, named, with the docstring
saying what goes wrong. Variants (behaviours the spec allows) are built with the same words.

- ``noop``: a method does nothing (answers None);
- ``returns``: a method answers a constant; ``returns_arg``: hands back one of its arguments;
- ``refuses``: a method raises an error before doing anything (when a condition holds);
- ``recodes``: what a method raised is raised as another error (when a condition holds);
- ``answer``: a method's answer with keys dropped, set or edited (when a condition holds);
- ``arguments``: a method called with keys of its mapping argument dropped, set or edited;
- ``setting``: an attribute of the reference set to another value;
- ``limit``: one of the reference's limits changed (``Reference.limit``);
- ``replaces``: inside a behavioural fault, wrap one method, named by the method itself
  (``@replaces(ref.handle_send)``: a bound method carries its owner and name; the original
  comes first).

Patches are applied with ``apply``; under ``watch()`` it notes what each installs, and each
installed method notes its calls (``SeamLog``): the selftest's proof that a variant's seam
is used by the run that says no MUST fails on it.

A fault the vocabulary cannot say stays a function: ``@check.fault`` under its check, or
``@fault`` for one several checks name (conformance/declare.py).

Seams are checked when the profile loads (``check_seams``), without building a reference:
what each fault patches is read from its code (``seams``) and looked up on the class of the
reference (``Protocol.reference``, or the fault's annotation of ``ref``); one that does not
exist refuses the profile, naming the fault and the seam. Applied, no fault creates an
attribute the reference lacks (``MissingSeam``); one that means to add a method says so with
``setattr(ref, "name", ...)``. ``conformance list PROFILE --seams`` prints them."""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import linecache
import re
import sys
import textwrap
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from conformance.kit.declare import Patch, caller_module

Predicate = Callable[..., bool]


def _named(name: str, doc: str, apply: Callable[[Any], None], module: str,
           binding_kind: str | None = None, seam: str | None = None) -> Patch:
    def patch(ref: Any) -> None:
        apply(ref)

    patch.__name__ = patch.__qualname__ = name
    patch.__doc__ = doc
    patch.__module__ = module
    if seam is not None:
        vars(patch)["seams"] = (seam,)  # what it patches on the reference, checked when the profile loads
    if binding_kind:
        vars(patch)["binding_kind"] = binding_kind  # the selftest runs it over bindings of that kind only
    return patch


class MissingSeam(AttributeError):
    """A fault patches an attribute the reference does not have (a misspelt or renamed seam)."""


def seam_of(owner: Any, attribute: str, fault: str) -> Any:
    """``owner.<attribute>``, which a fault is about to replace: a missing one is refused,
    never created (a dead attribute would only show as a fault not caught)."""
    try:
        return getattr(owner, attribute)
    except AttributeError:
        raise MissingSeam(f"fault {fault}: {type(owner).__name__} has no {attribute!r} to patch") from None


def replaces(method: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator for a fault: the function replaces ``method`` (a bound method of the
    reference, ``@replaces(ref.handle_send)``, or of one of its parts) on its owner, called
    with the original as its first argument."""
    owner, attribute = getattr(method, "__self__", None), getattr(method, "__name__", None)
    if owner is None or isinstance(owner, type) or not isinstance(attribute, str):  # (a class: all instances)
        raise TypeError(f"replaces() takes a bound method of the reference (ref.<method>), not {method!r}")

    def install(fn: Callable[..., Any]) -> Callable[..., Any]:
        seam_of(owner, attribute, fn.__qualname__)
        _install(owner, attribute, functools.partial(fn, method))
        return fn
    return install


def _install(owner: Any, attribute: str, replacement: functools.partial[Any]) -> None:
    """``owner.<attribute>`` becomes ``replacement``, which still names its owner and
    attribute as a bound method does (so that a second fault may replace it in turn)."""
    replacement = _noted(owner, attribute, replacement)
    vars(replacement).update(__self__=owner, __name__=attribute)
    setattr(owner, attribute, replacement)


# -- which seams a run used: a patch whose seams the run never uses changes nothing it sees --
@dataclass
class SeamLog:
    """What the patches applied under ``watch()`` installed, and what of it was used since.
    ``methods``: per patch, the methods it replaced or set (``Class.method``), each noting
    its calls in ``called``; ``values``: per patch, the other attributes of the reference it
    changed (a setting, a limit, a method assigned by hand), used when the run reads them,
    which only a trace of the reference's reads can tell (the selftest's)."""

    methods: dict[str, set[str]] = field(default_factory=dict)
    values: dict[str, set[str]] = field(default_factory=dict)
    called: set[tuple[str, str]] = field(default_factory=set)
    applying: str | None = None

    def used(self, patch: str, read: set[str]) -> bool:
        """Whether a method ``patch`` installed was called, or an attribute it changed is in
        ``read``; True for a patch of which the log saw nothing (applied without it, or
        changing a part of the reference in place): nothing to say of it."""
        if not self.methods.get(patch) and not self.values.get(patch):
            return True
        return (any((patch, m) in self.called for m in self.methods.get(patch, ()))
                or bool(self.values.get(patch, set()) & read))

    def seams(self, patch: str) -> list[str]:
        """What ``patch`` installed, for a message."""
        return sorted(self.methods.get(patch, set()) | self.values.get(patch, set()))


_WATCH: ContextVar[SeamLog | None] = ContextVar("seam_log", default=None)


@contextmanager
def watch() -> Iterator[SeamLog]:
    """Within it, ``apply`` notes in the log it yields what each patch installs, and each
    method installed notes when it is called (from any thread, for the reference's life)."""
    log = SeamLog()
    token = _WATCH.set(log)
    try:
        yield log
    finally:
        _WATCH.reset(token)


def apply(patch: Patch, ref: Any) -> None:
    """Apply ``patch`` (a fault or variant) to the reference ``ref``, noting under ``watch()``
    the attributes it installs or changes."""
    log = _WATCH.get()
    if log is None:
        patch(ref)
        return
    name = patch.__name__
    before = dict(vars(ref))
    log.applying = name
    try:
        patch(ref)
    finally:
        log.applying = None
    methods = log.methods.setdefault(name, set())
    mine = {m.rsplit(".", 1)[1] for m in methods if m.startswith(f"{type(ref).__name__}.")}
    log.values.setdefault(name, set()).update(
        k for k, v in vars(ref).items() if (k not in before or v is not before[k]) and k not in mine)


def _noted(owner: Any, attribute: str, installed: Any) -> Any:
    """``installed`` as it goes on ``owner.<attribute>``: under ``watch()``, while a patch is
    applied, a method that notes its calls in the log."""
    log = _WATCH.get()
    if log is None or log.applying is None or not callable(installed):
        return installed
    key = (log.applying, f"{type(owner).__name__}.{attribute}")
    log.methods.setdefault(key[0], set()).add(key[1])

    def noting(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        log.called.add(key)
        return method(*args, **kwargs)
    return functools.partial(noting, installed)


def _wrap(method: str, wrapper: Callable[..., Any], fault: str) -> Callable[[Any], None]:
    def apply(ref: Any) -> None:
        _install(ref, method, functools.partial(wrapper, seam_of(ref, method, fault)))
    return apply


def _set(attribute: str, value: Callable[[], Any], fault: str) -> Callable[[Any], None]:
    def apply(ref: Any) -> None:
        seam_of(ref, attribute, fault)
        setattr(ref, attribute, _noted(ref, attribute, value()))
    return apply


def noop(name: str, method: str, doc: str, *, binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` does nothing and answers None."""
    return _named(name, doc, _set(method, lambda: lambda *a, **k: None, name), caller_module(), binding_kind,
                  method)


def returns(name: str, method: str, value: Any, doc: str, *, when: Predicate | None = None,
            binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` answers ``value`` (a copy of it each call), or only ``when(*args)`` holds."""
    def wrapper(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if when is None or when(*args, **kwargs):
            return copy.deepcopy(value)
        return original(*args, **kwargs)
    return _named(name, doc, _wrap(method, wrapper, name), caller_module(), binding_kind, method)


def returns_arg(name: str, method: str, index: int, doc: str, *, binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` hands back its argument ``index`` untouched."""
    return _named(name, doc, _set(method, lambda: lambda *args, **kwargs: args[index], name), caller_module(),
                  binding_kind, method)


def refuses(name: str, method: str, error: Callable[..., BaseException], doc: str, *,
            when: Predicate | None = None, binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` raises ``error(*args)`` instead of running (only ``when(*args)`` holds)."""
    def wrapper(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if when is None or when(*args, **kwargs):
            raise error(*args, **kwargs)
        return original(*args, **kwargs)
    return _named(name, doc, _wrap(method, wrapper, name), caller_module(), binding_kind, method)


def recodes(name: str, method: str, error: Callable[[Any], BaseException], doc: str, *,
            catch: type[BaseException] | tuple[type[BaseException], ...] = Exception,
            when: Callable[[Any], bool] | None = None, binding_kind: str | None = None) -> Patch:
    """What ``ref.<method>`` raises (of type ``catch``, and ``when(err)`` holds) is raised
    as ``error(err)`` instead: the refusal stays, its code or status changes."""
    def wrapper(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except catch as err:
            if when is not None and not when(err):
                raise
            raise error(err) from err
    return _named(name, doc, _wrap(method, wrapper, name), caller_module(), binding_kind, method)


def _edited(value: Any, drop: Iterable[str], set_: Mapping[str, Any] | None, edit: Callable[..., Any] | None,
            context: tuple[Any, ...]) -> Any:
    if edit is not None:
        changed = edit(value, *context)
        value = value if changed is None else changed
    if isinstance(value, dict):
        for key in drop:
            value.pop(key, None)
        for key, item in (set_ or {}).items():
            value[key] = copy.deepcopy(item)
    return value


def answer(name: str, method: str, doc: str, *, drop: Iterable[str] = (),
           set: Mapping[str, Any] | None = None,  # noqa: A002
           edit: Callable[..., Any] | None = None, when: Predicate | None = None,
           binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` answers as before, but its answer (a mapping) loses the keys ``drop``,
    gets ``set``, and goes through ``edit(answer, *args)`` (which changes it in place or
    returns the new one): only where ``when(*args)`` holds."""
    drop = tuple(drop)

    def wrapper(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if when is not None and not when(*args, **kwargs):
            return result
        return _edited(result, drop, set, edit, args)
    return _named(name, doc, _wrap(method, wrapper, name), caller_module(), binding_kind, method)


def arguments(name: str, method: str, doc: str, *, drop: Iterable[str] = (),
              set: Mapping[str, Any] | None = None,  # noqa: A002
              edit: Callable[..., Any] | None = None, index: int = -1, when: Predicate | None = None,
              binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` is called with its argument ``index`` (a mapping, the last by
    default) copied and changed: keys ``drop`` gone, ``set`` added, ``edit(arg)`` applied."""
    drop = tuple(drop)

    def wrapper(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if when is not None and not when(*args, **kwargs):
            return original(*args, **kwargs)
        values = list(args)
        arg = values[index]
        values[index] = _edited(dict(arg) if isinstance(arg, dict) else copy.copy(arg), drop, set, edit, ())
        return original(*values, **kwargs)
    return _named(name, doc, _wrap(method, wrapper, name), caller_module(), binding_kind, method)


def setting(name: str, attribute: str, value: Any, doc: str, *, binding_kind: str | None = None) -> Patch:
    """The reference's ``attribute`` becomes ``value`` (a copy: no two instances share it)."""
    return _named(name, doc, _set(attribute, lambda: copy.deepcopy(value), name), caller_module(),
                  binding_kind, attribute)


def limit(name: str, which: str, value: int | float | None, doc: str) -> Patch:
    """One of the reference's limits (``ref.limit(which)``) is ``value`` (None: no limit)."""
    def apply(ref: Any) -> None:
        ref.limit_values = {**ref.limit_values, which: value}
    return _named(name, doc, apply, caller_module())


def family(items: Iterable[Any], make: Callable[[Any], Patch]) -> list[Patch]:
    """One fault per item of a list the spec gives (each command, each state): ``make(item)``."""
    return [make(item) for item in items]


# -- the seams a profile's faults patch, read from their code when the profile loads --------
@dataclass(frozen=True)
class Seam:
    """One attribute a fault or variant patches: ``owner`` the class it belongs to (the
    reference, or a part of it such as its MCP server), None where the code does not say."""

    owner: type | None
    attribute: str
    fault: str

    @property
    def name(self) -> str:
        return f"{self.owner.__name__ if self.owner else '?'}.{self.attribute}"

    @property
    def exists(self) -> bool:
        if self.owner is None:
            return False  # most seams are methods: the class's own names need no reading of its code
        return self.attribute in _class_names(self.owner) or self.attribute in attributes_of(self.owner)


def seams(patch: Patch, reference: type | None) -> list[Seam]:
    """What ``patch`` patches: the vocabulary's faults say it (``seams``); a behavioural one
    is read from its code: each ``replaces(<owner>.<method>)`` and each ``<ref>.<attribute> =
    ...``, in the fault and in the functions it hands ``ref`` to, the owner's class taken from
    the fault's annotation of ``ref`` (``reference`` where it says Any or nothing), an
    attribute's annotation, or a function's return annotation. A fault that gives the
    reference what it lacks says so: ``setattr(ref, "name", ...)``."""
    if "seams" in vars(patch):
        return [Seam(reference, attribute, patch.__name__) for attribute in vars(patch)["seams"]]
    found: list[Seam] = []
    _read(inspect.unwrap(patch), 0, reference, patch.__name__, {}, found, set())
    return list(dict.fromkeys(found))


def _read(fn: Any, index: int, reference: type | None, fault: str, methods: Mapping[str, list[Seam]],
          found: list[Seam], seen: set[Any]) -> None:
    """The seams of ``fn``, whose parameter ``index`` is the reference (``methods``: its
    parameters that are methods of the reference, as the caller named them)."""
    top = _definition(fn)
    if top is None or len(top.args.args) <= index or fn in seen or len(seen) > 8:
        return
    seen.add(fn)
    param = top.args.args[index].arg
    hinted = _hints(fn).get(param)
    ref_type = hinted if isinstance(hinted, type) and hinted is not Any else reference
    loops = {node.target.id: list(node.iter.elts) for node in ast.walk(top)
             if isinstance(node, ast.For) and isinstance(node.target, ast.Name)
             and isinstance(node.iter, ast.Tuple | ast.List)}

    def seam(target: ast.expr) -> list[Seam]:
        if isinstance(target, ast.Attribute):
            return [Seam(_type_of(target.value, param, ref_type, fn), target.attr, fault)]
        if isinstance(target, ast.Name) and target.id in methods:
            return list(methods[target.id])
        if isinstance(target, ast.Name) and target.id in loops:
            return [s for element in loops[target.id] for s in seam(element)]
        return [Seam(None, ast.unparse(target), fault)]  # a name the code computes: checked when applied

    for node in ast.walk(top):
        if isinstance(node, ast.Call) and _called(node.func) == "replaces" and len(node.args) == 1:
            found.extend(seam(node.args[0]))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == param:
            found.append(Seam(ref_type, node.attr, fault))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            at = [i for i, arg in enumerate(node.args) if isinstance(arg, ast.Name) and arg.id == param]
            helper = _named_in(fn, node.func.id)
            if at and inspect.isfunction(helper) and helper.__module__ != __name__:
                given = _definition(helper)
                names = [a.arg for a in given.args.args] if given is not None else []
                passed = {names[i]: seam(arg) for i, arg in enumerate(node.args)
                          if i < len(names) and isinstance(arg, ast.Attribute)
                          and isinstance(arg.value, ast.Name) and arg.value.id == param}
                _read(helper, at[0], ref_type, fault, passed, found, seen)


def _named_in(fn: Any, name: str) -> Any:
    """What ``name`` is where ``fn`` runs: one of its closure's variables, or a global."""
    code = getattr(fn, "__code__", None)
    if code is not None and name in code.co_freevars and fn.__closure__:
        try:
            return fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:  # an empty cell
            return None
    return getattr(fn, "__globals__", {}).get(name)


def check_seams(profile_name: str, patches: Mapping[str, Patch], reference: type | None) -> list[Seam]:
    """Every seam of ``patches``; a ValueError naming the fault and the seam when one does not
    exist on its class."""
    found = [seam for patch in patches.values() for seam in seams(patch, reference)]
    missing = [seam for seam in found if seam.owner is not None and not seam.exists]
    if missing:
        raise ValueError(f"profile {profile_name}: " + "; ".join(
            f"fault {s.fault} patches {s.name}, which does not exist" for s in missing))
    return found


def _called(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _hints(obj: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj)
    except Exception:  # an annotation only a type checker resolves
        return {}


def _type_of(node: ast.expr, param: str, ref_type: type | None, fn: Any) -> type | None:
    """The class of what ``node`` names in the fault ``fn``: its ``ref`` parameter, an
    attribute of a known class, or what a function of the fault's module returns."""
    if isinstance(node, ast.Name) and node.id == param:
        return ref_type
    if isinstance(node, ast.Attribute):
        owner = _type_of(node.value, param, ref_type, fn)
        return _attribute_type(owner, node.attr) if owner is not None else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        made = getattr(fn, "__globals__", {}).get(node.func.id)
        returned = _hints(made).get("return") if callable(made) else None
        return returned if isinstance(returned, type) else None
    return None


@functools.cache
def _attribute_type(cls: type, attribute: str) -> type | None:
    """The class of ``cls().<attribute>``: its annotation, or the class its ``__init__`` (or
    another method) builds it from (``self.mcp = McpServer(self)``)."""
    hinted = _hints(cls).get(attribute)
    if isinstance(hinted, type):
        return hinted
    for klass in cls.__mro__:
        for node in ast.walk(_class_tree(klass)):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and isinstance(node.value.func, ast.Name) \
                    and any(_is_self_attribute(t, attribute) for t in node.targets):
                made = vars(sys.modules[klass.__module__]).get(node.value.func.id)
                if isinstance(made, type):
                    return made
    return None


def _is_self_attribute(node: ast.expr, attribute: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attribute and isinstance(node.value, ast.Name) \
        and node.value.id == "self"


def _definition(fn: Any) -> ast.FunctionDef | None:
    """The ``def`` of ``fn`` in its module's code. Its own lines are parsed alone (a profile
    loads some 300 faults: parsing and walking each one's whole file took a second of every
    run's start); where they do not parse alone, its file's definitions are read once."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    alone = _block(code.co_filename, code.co_firstlineno)
    if isinstance(alone, ast.FunctionDef) and alone.name == code.co_name:
        return alone
    return _file_definitions(code.co_filename).get((code.co_name, code.co_firstlineno))


def _block(path: str, first: int) -> ast.stmt | None:
    """The statement that starts at line ``first`` of ``path`` (its decorators, if any, then
    what they decorate), parsed on its own: its lines run to the first line as little indented
    (a comment or blank line aside). None where that cut does not parse (a string or a bracket
    that the cut splits): the caller reads the whole file then."""
    lines = linecache.getlines(path)
    if not 0 < first <= len(lines):
        return None
    head = lines[first - 1]
    indent = len(head) - len(head.lstrip())
    if head[:indent].strip():
        return None
    end, body = first, False
    for end in range(first, len(lines)):
        line = lines[end]
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if len(line) - len(line.lstrip()) > indent:
            body = True
        elif body or not text.startswith(("@", "def ", "async def ", "class ")):
            break
    else:
        end = len(lines)
    source = "".join(line[indent:] if len(line) > indent and not line[:indent].strip()
                     else line.lstrip() or "\n" for line in lines[first - 1:end])
    try:
        tree = ast.parse("\n" * (first - 1) + source)  # its lines numbered as in the file
    except SyntaxError:
        return None
    return tree.body[0] if len(tree.body) == 1 else None


@functools.cache
def _file_definitions(path: str) -> dict[tuple[str, int], ast.FunctionDef]:
    """Each ``def`` of ``path`` by its name and first line (its first decorator's, if any)."""
    return {(node.name, min([node.lineno, *(d.lineno for d in node.decorator_list)])): node
            for node in ast.walk(_file_tree(path)) if isinstance(node, ast.FunctionDef)}


@functools.cache
def _file_tree(path: str) -> ast.AST:
    try:
        with open(path, encoding="utf-8") as handle:
            return ast.parse(handle.read())
    except (OSError, SyntaxError):
        return ast.Module(body=[], type_ignores=[])


@functools.cache
def _class_tree(klass: type) -> ast.AST:
    """The ``class`` statement of ``klass`` (found as ``_definition`` finds a function)."""
    path, first = _source_line(klass)
    alone = _block(path, first) if path else None
    if isinstance(alone, ast.ClassDef) and alone.name == klass.__name__:
        return alone
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(klass)))
    except (OSError, TypeError, SyntaxError):
        return ast.Module(body=[], type_ignores=[])


def _source_line(klass: type) -> tuple[str, int]:
    """The file of ``klass`` and the line of its ``class`` statement, where its file holds
    one class of that name ("", 0 otherwise)."""
    try:
        path = inspect.getsourcefile(klass) or ""
    except TypeError:
        return "", 0
    pattern = re.compile(rf"\s*class\s+{re.escape(klass.__name__)}\b")
    found = [number for number, line in enumerate(linecache.getlines(path), 1) if pattern.match(line)]
    return (path, found[0]) if len(found) == 1 else ("", 0)


@functools.cache
def _class_names(cls: type) -> frozenset[str]:
    return frozenset(dir(cls))


@functools.cache
def attributes_of(cls: type) -> frozenset[str]:
    """What an instance of ``cls`` has: its class's attributes, annotated fields, and what its
    methods assign to ``self`` (read from their code: no instance is built)."""
    names = set(_class_names(cls))
    for klass in cls.__mro__:
        names |= set(vars(klass).get("__annotations__", {}))
        names |= _assigned_to_self(klass)
    return frozenset(names)


# what assigns: a statement's targets (a comprehension's target aside: no code assigns to self there)
_TARGETS = {ast.Assign: "targets", ast.AnnAssign: "target", ast.AugAssign: "target", ast.For: "target",
            ast.AsyncFor: "target", ast.withitem: "optional_vars"}


@functools.cache
def _assigned_to_self(klass: type) -> frozenset[str]:
    """The attributes ``klass``'s code assigns to ``self``: the targets of its statements are
    read, not every expression (a reference class holds some 100,000 nodes)."""
    names: set[str] = set()
    stack: list[ast.AST] = [_class_tree(klass)]
    while stack:
        node = stack.pop()
        field = _TARGETS.get(type(node))
        if field is not None:
            target = getattr(node, field)
            for part in ast.walk(ast.Tuple(elts=target if isinstance(target, list) else [target])):
                if isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Store) \
                        and isinstance(part.value, ast.Name) and part.value.id == "self":
                    names.add(part.attr)
        for value in vars(node).values():
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.stmt | ast.excepthandler | ast.withitem
                                                            | ast.match_case | ast.Module))
    return frozenset(names)
