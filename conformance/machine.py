"""The base of a protocol's state machine (a hypothesis ``RuleBasedStateMachine``):
bound to the check's context by ``CheckContext.run_machine``, each rule counted so a run
can show which rules it reached. Engine code: it names no protocol."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from hypothesis.stateful import RULE_MARKER, RuleBasedStateMachine

from conformance.check import CheckContext
from conformance.ledger import LEDGER


class ProfileMachine(RuleBasedStateMachine):
    """Base of a protocol's state machine: ``ctx`` is bound by
    ``CheckContext.run_machine``; each run starts a fresh example and calls
    ``setup`` (the protocol's client and model). Every rule counts its firings in
    ``ctx.machine_stats`` ("rule NAME"), so a run can show which rules it reached."""

    ctx: CheckContext

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for f in vars(cls).values():
            rule = getattr(f, RULE_MARKER, None)
            if rule is not None and not getattr(rule.function, "counted", False):
                rule.function = _counted(rule.function)
        if "teardown" in vars(cls):  # the final comparison with the target is judging too
            cls.teardown = _judging(vars(cls)["teardown"])  # type: ignore[method-assign]

    def __init__(self) -> None:
        super().__init__()
        self.ctx.begin_example()
        with LEDGER.charge("judging"):
            self.setup()

    def setup(self) -> None:
        raise NotImplementedError


def _counted(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def rule(machine: ProfileMachine, *args: Any, **kwargs: Any) -> Any:
        machine.ctx.machine_stats[f"rule {fn.__name__}"] += 1
        with LEDGER.charge("judging"):
            return fn(machine, *args, **kwargs)

    rule.counted = True  # type: ignore[attr-defined]
    return rule


def _judging(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def judged(*args: Any, **kwargs: Any) -> Any:
        with LEDGER.charge("judging"):
            return fn(*args, **kwargs)

    return judged


def rule_names(machine: type[RuleBasedStateMachine]) -> list[str]:
    """The names of a machine's rules, as ``machine_stats`` counts them."""
    return sorted(f"rule {getattr(f, RULE_MARKER).function.__name__}" for _, f in inspect.getmembers(machine)
                  if getattr(f, RULE_MARKER, None) is not None)
