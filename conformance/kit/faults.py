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
- ``replaces``: inside a behavioural fault, wrap one method (the original comes first).

A fault the vocabulary cannot say stays a function: ``@check.fault`` under its check, or
``@fault`` for one several checks name (conformance/kit/declare.py)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from conformance.kit.declare import Patch, caller_module

Predicate = Callable[..., bool]


def _named(name: str, doc: str, apply: Callable[[Any], None], module: str,
           binding_kind: str | None = None) -> Patch:
    def patch(ref: Any) -> None:
        apply(ref)

    patch.__name__ = patch.__qualname__ = name
    patch.__doc__ = doc
    patch.__module__ = module
    if binding_kind:
        vars(patch)["binding_kind"] = binding_kind  # the selftest runs it over bindings of that kind only
    return patch


def replaces(ref: Any, attribute: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator for a fault: the function becomes ``ref.<attribute>``, called with
    the original as its first argument."""
    def install(fn: Callable[..., Any]) -> Callable[..., Any]:
        setattr(ref, attribute, functools.partial(fn, getattr(ref, attribute)))
        return fn
    return install


def _wrap(method: str, wrapper: Callable[..., Any]) -> Callable[[Any], None]:
    def apply(ref: Any) -> None:
        setattr(ref, method, functools.partial(wrapper, getattr(ref, method)))
    return apply


def noop(name: str, method: str, doc: str, *, binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` does nothing and answers None."""
    return _named(name, doc, lambda ref: setattr(ref, method, lambda *a, **k: None), caller_module(),
                  binding_kind)


def returns(name: str, method: str, value: Any, doc: str, *, when: Predicate | None = None,
            binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` answers ``value`` (a copy of it each call), or only ``when(*args)`` holds."""
    def wrapper(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if when is None or when(*args, **kwargs):
            return copy.deepcopy(value)
        return original(*args, **kwargs)
    return _named(name, doc, _wrap(method, wrapper), caller_module(), binding_kind)


def returns_arg(name: str, method: str, index: int, doc: str, *, binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` hands back its argument ``index`` untouched."""
    return _named(name, doc, lambda ref: setattr(ref, method, lambda *args, **kwargs: args[index]),
                  caller_module(),
                  binding_kind)


def refuses(name: str, method: str, error: Callable[..., BaseException], doc: str, *,
            when: Predicate | None = None, binding_kind: str | None = None) -> Patch:
    """``ref.<method>`` raises ``error(*args)`` instead of running (only ``when(*args)`` holds)."""
    def wrapper(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if when is None or when(*args, **kwargs):
            raise error(*args, **kwargs)
        return original(*args, **kwargs)
    return _named(name, doc, _wrap(method, wrapper), caller_module(), binding_kind)


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
    return _named(name, doc, _wrap(method, wrapper), caller_module(), binding_kind)


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
    return _named(name, doc, _wrap(method, wrapper), caller_module(), binding_kind)


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
    return _named(name, doc, _wrap(method, wrapper), caller_module(), binding_kind)


def setting(name: str, attribute: str, value: Any, doc: str, *, binding_kind: str | None = None) -> Patch:
    """The reference's ``attribute`` becomes ``value`` (a copy: no two instances share it)."""
    return _named(name, doc, lambda ref: setattr(ref, attribute, copy.deepcopy(value)), caller_module(),
                  binding_kind)


def limit(name: str, which: str, value: int | float | None, doc: str) -> Patch:
    """One of the reference's limits (``ref.limit(which)``) is ``value`` (None: no limit)."""
    def apply(ref: Any) -> None:
        ref.limit_values = {**ref.limit_values, which: value}
    return _named(name, doc, apply, caller_module())


def family(items: Iterable[Any], make: Callable[[Any], Patch]) -> list[Patch]:
    """One fault per item of a list the spec gives (each command, each state): ``make(item)``."""
    return [make(item) for item in items]
