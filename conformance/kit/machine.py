"""The base of a protocol's state machine (a hypothesis ``RuleBasedStateMachine``):
bound to the check's context by ``CheckContext.run_machine``, each rule counted so a run
can show which rules it reached. Engine code: it names no protocol."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.stateful import RULE_MARKER, RuleBasedStateMachine

from conformance.generation.compiler import index_of
from conformance.kit.check import CheckContext
from conformance.ledger import LEDGER

FIRST_STEP = "conformance_first_step"
F = TypeVar("F", bound=Callable[..., Any])


def first_step(**arguments: st.SearchStrategy[Any]) -> Callable[[F], F]:
    """Mark a method to run once at the start of every example, after ``setup`` and
    before any rule, its arguments drawn like a rule's (hypothesis's ``@initialize``).

    Not ``@initialize`` itself: hypothesis builds new strategies for each such rule in
    every example (``st.tuples(st.just(rule), ...)``), each a new entry in its strategy
    cache; in a campaign that was most of the cache's churn. These arguments are one
    strategy, built when the class is. A first step takes none of the budget's steps
    (hypothesis counted an ``@initialize`` rule as one; counted, Bindu's lifecycle missed a
    fault at more seeds)."""
    def mark(fn: F) -> F:
        setattr(fn, FIRST_STEP, st.fixed_dictionaries(arguments))
        return fn

    return mark


class ProfileMachine(RuleBasedStateMachine):
    """Base of a protocol's state machine: ``CheckContext.run_machine`` makes each
    example with its ``ctx``; each run starts a fresh example and calls
    ``setup`` (the protocol's client and model), then its ``first_step`` methods. Every
    rule counts its firings in ``ctx.machine_stats`` ("rule NAME"), so a run can show
    which rules it reached."""

    ctx: CheckContext
    first_steps: tuple[tuple[Callable[..., Any], st.SearchStrategy[dict[str, Any]]], ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.first_steps = tuple((f, getattr(f, FIRST_STEP)) for _, f in inspect.getmembers(cls)
                                if hasattr(f, FIRST_STEP))
        for f in vars(cls).values():
            rule = getattr(f, RULE_MARKER, None)
            if rule is not None and not getattr(rule.function, "counted", False):
                rule.function = _counted(rule.function)
        if "teardown" in vars(cls):  # the final comparison with the target is judging too
            cls.teardown = _judging(vars(cls)["teardown"])  # type: ignore[method-assign]

    def __init__(self, *, ctx: CheckContext) -> None:
        self.ctx = ctx
        super().__init__()
        self.ctx.begin_example()
        with LEDGER.charge("judging"), ctx.verdict_ends_example():
            self.setup()
        for step, arguments in self.first_steps:
            drawn = current_build_context().data.draw(arguments)
            with LEDGER.charge("judging"), ctx.verdict_ends_example():
                step(self, **drawn)

    def setup(self) -> None:
        raise NotImplementedError


def _counted(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def rule(machine: ProfileMachine, *args: Any, **kwargs: Any) -> Any:
        machine.ctx.machine_stats[f"rule {fn.__name__}"] += 1
        with LEDGER.charge("judging"), machine.ctx.verdict_ends_example():
            return fn(machine, *args, **kwargs)

    rule.counted = True  # type: ignore[attr-defined]
    return rule


def _judging(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def judged(machine: ProfileMachine, *args: Any, **kwargs: Any) -> Any:
        with LEDGER.charge("judging"), machine.ctx.verdict_ends_example():
            return fn(machine, *args, **kwargs)

    return judged


T = TypeVar("T")


def pick(data: st.DataObject, items: Sequence[T], *, label: str | None = None) -> T:
    """One of ``items``, drawn by its index (an empty sequence rejects the example, as
    ``sampled_from`` does). Draws from what the target gave back (ids, objects) go
    through here: ``sampled_from`` labels its draw by the hash of its elements, and
    hypothesis keeps a coverage tag per label for the life of the process, so ids new in
    every example grew a campaign's memory without bound. The choices are the same."""
    if not items:
        return data.draw(st.nothing(), label=label)
    return items[data.draw(index_of(len(items)), label=label)]


def rule_names(machine: type[RuleBasedStateMachine]) -> list[str]:
    """The names of a machine's rules, as ``machine_stats`` counts them."""
    return sorted(f"rule {getattr(f, RULE_MARKER).function.__name__}" for _, f in inspect.getmembers(machine)
                  if getattr(f, RULE_MARKER, None) is not None)
