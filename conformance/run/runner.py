"""Running one requirement against one target and judging it: the verdict that comes
out of a check (conformance/kit/check.py is what the check sees)."""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import hypothesis

from conformance.failures import KIT_ERROR, Failure, summarize
from conformance.kit.check import (
    Blocked,
    CheckContext,
    CheckFailed,
    NotApplicable,
    RunContext,
    Untested,
    _clean_message,
    by_declaration,
    declared_away,
    not_served,
    not_the_target,
    typed_failure,
)
from conformance.kit.evidence import Root, accepted_features, root_of
from conformance.ledger import LEDGER
from conformance.model import Declared, Exchange, Requirement
from conformance.transport.http import RunStopped, TargetUnreachable, TransportFailure


@dataclass
class Verdict:
    status: str  # passed | failed | untested
    message: str = ""
    exchanges: list[Exchange] = field(default_factory=list)
    reproduce: dict[str, Any] | None = None
    duration_s: float = 0.0
    exchange_count: int = 0
    failures: list[Failure] = field(default_factory=list)  # of a failed verdict; ``message`` sums them up
    # state-machine rules and transitions reached, by count
    machine: dict[str, int] = field(default_factory=dict)
    cause: str = ""  # of a blocked verdict: the kind of the finding that blocked it
    features: set[str] = field(default_factory=set)  # what its accepted requests carried (root causes)
    generated: int = 0  # hypothesis properties and machines the check ran (0: an example-based check)
    spent: dict[str, dict[str, int]] = field(default_factory=dict)  # quota -> who -> count (ctx.spend)
    reason: str = ""  # of an untested verdict: one of conformance.kit.live.REASONS
    root: Root | None = None  # of a failed or blocked verdict: its root cause (conformance/kit/evidence.py)
    # of a skipped verdict a declaration made not applicable: which, and whose (the target's
    # own, "by": "target"; the config's declared:, "by": "config"), for the reports to count
    # apart from other skips and name
    declared: Declared | None = None

    def with_root(self) -> Verdict:
        """This verdict with its root cause read from its exchanges (failed or blocked ones)."""
        if self.status in ("failed", "blocked"):
            kind = self.failures[-1].kind if self.failures else self.cause or self.status
            self.root = root_of(kind, self.message, self.exchanges)
            self.features = self.features | accepted_features(self.exchanges)
        return self


def verdict_to_json(v: Verdict) -> dict[str, Any]:
    """A verdict as plain data (it travels from an xdist worker to the controller)."""
    return {"status": v.status, "message": v.message, "exchanges": [e.to_json() for e in v.exchanges],
            "reproduce": v.reproduce, "duration_s": v.duration_s, "exchange_count": v.exchange_count,
            "failures": [f.to_json() for f in v.failures], "machine": v.machine, "cause": v.cause,
            "features": sorted(v.features), "generated": v.generated, "reason": v.reason, "spent": v.spent,
            "root": v.root.to_json() if v.root else None,
            "declared": v.declared.to_json() if v.declared else None}


def verdict_from_json(data: dict[str, Any]) -> Verdict:
    return Verdict(data["status"], data["message"], [Exchange.from_json(e) for e in data["exchanges"]],
                   data["reproduce"], data["duration_s"], data["exchange_count"],
                   [Failure.from_json(f) for f in data["failures"]], dict(data["machine"]), data["cause"],
                   set(data["features"]), int(data.get("generated", 0)),
                   dict(data.get("spent") or {}), str(data.get("reason", "")),
                   Root.from_json(data.get("root")), Declared.from_json(data.get("declared")))


def execute(requirement: Requirement, run: RunContext, reproduce: dict[str, Any] | None = None) -> Verdict:
    """Run one requirement against the run's target and judge it. Every message
    goes through the run's redactor: a target may echo a secret back."""
    with LEDGER.charge("judging"):  # what no inner phase (drawing, sending, recording) is charged
        return _execute(requirement, run, reproduce)


def _execute(requirement: Requirement, run: RunContext, reproduce: dict[str, Any] | None) -> Verdict:
    started = time.perf_counter()
    count_before = run.http.total
    ctx = CheckContext(run, requirement, reproduce)
    ctx.begin_example()

    def verdict(status: str, message: str = "", final: Failure | None = None, reason: str = "",
                cause: str = "", declared: Declared | None = None) -> Verdict:
        """The verdict, failed whenever a sub-check recorded a failure: what a
        sub-check found stays found, whatever ended the check after it; blocked when
        a quota the run spent itself refused what it needed, and nothing else failed."""
        failures = list(ctx.subcheck_failures) + ([final] if final else [])
        if status == "passed" and not failures and not ctx.quota_refusals and not ctx.judged:
            status, reason = "untested", "unjudged"
            message = ("nothing judged: the check reached its end without weighing any answer of the target "
                       "(a requirement never passes on nothing)")
        if failures and all(f.kind == KIT_ERROR for f in failures):
            # the kit's own error ended the check and nothing about the target was found first
            status, cause = "blocked", KIT_ERROR
            message = f"internal error of conformance, not a finding about the target: {summarize(failures)}"
        if ctx.quota_refusals and not failures and status == "passed":
            status, cause = "blocked", "quota"
            message = ctx.quota_refusals[0] + (f" (and {len(ctx.quota_refusals) - 1} more sub-checks)"
                                               if len(ctx.quota_refusals) > 1 else "")
        elif ctx.quota_refusals and failures:
            message = (f"{message} ({len(ctx.quota_refusals)} sub-check(s) blocked by a quota "
                       "the run spent)").strip()
        if any(f.kind != KIT_ERROR for f in failures) and status != "failed":
            note = f" (then {status}: {message})" if message else ""
            status, message = "failed", summarize(failures, ctx.subchecks_entered) + note
        elif failures and status == "failed":
            message = summarize(failures, ctx.subchecks_entered)
        if status == "failed":  # every finding names the statement it breaks, with its place in the spec
            own = str(requirement.source)
            more = sorted({f.statement for f in failures
                           if f.statement and f.statement != own and not f.statement.startswith("profile")})
            message = f"{message} [breaks: {'; '.join([own, *more])}]"
        rep = None
        if status == "failed" and ctx.blob and ctx.failed_call:
            rep = {"call": ctx.failed_call, "version": ctx.blob[0], "blob": ctx.blob[1]}
        exchanges: list[Exchange] = []
        if status in ("failed", "blocked"):  # the evidence, and what root causes are grouped by
            exchanges = list(ctx.subcheck_exchanges)
            exchanges += [e for e in run.http.log if all(e is not k for k in exchanges)]
        return Verdict(
            status,
            run.http.redact(message),
            exchanges,
            rep,
            time.perf_counter() - started,
            run.http.total - count_before,
            [replace(f, message=run.http.redact(f.message),
                     statement=f.statement and run.http.redact(f.statement))
             for f in failures],
            dict(sorted(ctx.machine_stats.items())),
            cause=cause,
            reason=reason if status == "untested" else "",
            features=accepted_features(run.http.log) if status == "passed" else set(),
            generated=ctx.generated,
            spent={quota: dict(per) for quota, per in ctx.spent.items()},
            declared=declared if status == "skipped" else None,
        ).with_root()

    if run.unreachable:
        return verdict("untested", f"target unreachable: {run.unreachable}", reason="unreachable")
    if run.served.get(requirement.optional) is not None:
        return verdict("untested", not_served(requirement.optional, str(run.served[requirement.optional])),
                       reason="optional")
    if requirement.optional and requirement.optional in run.declared:
        away = declared_away(run.profile, requirement.optional)
        return verdict("skipped", by_declaration(away), declared=away)
    said = run.declarations.get(requirement.optional)
    if said is not None and not said.offered:  # the target declared it off (CheckContext.require_declared)
        run.declaration_askers.setdefault(said.feature, []).append(requirement.id)
        return verdict("skipped", by_declaration(said), declared=said)
    short = (run.quotas.short(getattr(run.profile, "quota_use", {}).get(requirement.id, {})) if run.live
             else None)
    if short:
        return verdict("untested", short, reason="quota")
    try:
        run.http.check_running()
        for guard in requirement.applies:  # when it applies, as declared: NotApplicable with the reason
            guard(ctx)
        requirement.check(ctx)
    except Untested as exc:
        return verdict("untested", str(exc), reason=exc.reason)
    except Blocked as exc:
        return verdict("blocked", str(exc), cause=exc.kind)
    except NotApplicable as exc:
        return verdict("skipped", str(exc), declared=exc.declared)
    except TargetUnreachable as exc:
        run.unreachable = str(exc)
        return verdict("untested", f"target unreachable: {exc}", reason="unreachable")
    except RunStopped as exc:
        return verdict("untested",
                       f"{'not run' if run.http.total == count_before else 'not finished'}: {exc}",
                       reason="stopped")
    except Exception as exc:
        if not (run.http.stopped or run.http.dead):
            spent = (ctx.spent_quota() if isinstance(exc, CheckFailed | TransportFailure
                                                     | hypothesis.errors.HypothesisException)
                     else None)
            if spent:
                ctx.quota_refusals.append(spent)
                return verdict("passed")  # blocked by the quota, unless a sub-check found something
            return judged(exc, verdict, run.http.log)
        # raised because the run is stopping (a signal or the time limit cut an exchange,
        # hypothesis saw a stop mid-example): never a finding of the target
        why = run.http.stopped or f"target unreachable: {run.http.dead}"
        return verdict("untested", f"not finished: {why}", reason="stopped")
    finally:
        problems = ctx._put_back.run()
        run.not_put_back += [f"{requirement.id}: {p}" for p in problems]
    return verdict("passed")


def judged(exc: Exception, verdict: Callable[..., Verdict], log: list[Exchange]) -> Verdict:
    """The verdict of an exception that ended a check while the run went on: a finding
    only when the target is to blame (a check's CheckFailed, no usable answer from the
    target, an answer that did not recur on the same input); a request the kit or the
    control interface could not make blocks; anything else is the kit's own error."""
    if isinstance(exc, CheckFailed):
        return verdict("failed", final=exc.failure(log))
    if isinstance(exc, TransportFailure):
        if exc.cause != "target":
            return verdict("blocked", not_the_target(exc), cause=exc.cause)
        return verdict("failed", final=typed_failure(Failure("no_answer", _clean_message(exc)), log))
    if isinstance(exc, hypothesis.errors.FlakyFailure):
        # a failure that did not recur on the same input: the target answered inconsistently
        return verdict("failed", final=Failure("flaky", f"{type(exc).__name__}: {_clean_message(exc)}"))
    # the kit's own error: a defect of the check (an answer it did not foresee is one too:
    # a check turns every answer into a finding or a verdict), or hypothesis refusing the
    # check's strategy (Unsatisfiable, InvalidArgument)
    tb = traceback.extract_tb(exc.__traceback__)[-1]
    where = f"{Path(tb.filename).name}:{tb.lineno}"
    if os.environ.get("CONFORMANCE_DEBUG"):
        traceback.print_exception(exc, file=sys.stderr)
    what = f"unexpected {type(exc).__name__}: {_one_line(exc)} (at {where})"
    return verdict("failed", final=Failure(KIT_ERROR, what))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + (" ..." if len(text) > 300 else "")
