"""The fault matrix: every requirement passes against the clean reference, and
every fault is caught by each requirement that names it (DESIGN.md, "Checks that
cannot fail are defects"). A profile with several bindings is proven over each: a
requirement may be skipped where it does not apply, but must catch its faults over
every binding where it does, and over at least one.

Only a real finding catches a fault: a verdict that failed with at least one failure
whose kind is not ``crash``. A check that raised an exception it did not foresee
(kind ``crash``) proves nothing about the fault; it is reported as its own problem,
on a faulty reference as on the clean one.

A variant (behaviour the document allows) must meet the MUST rows that run against it:
its run is watched (``faults.watch``), and a variant none of whose seams that run used
(no method it installed called, no attribute it changed read) is reported dead."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.kit.faults import watch
from conformance.kit.shapes import SEEDS, describe, rules_of
from conformance.model import Profile
from conformance.run.launch import deviations, open_run
from conformance.run.parallel import runs_alone
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict, execute


@dataclass
class SelftestResult:
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def bindings_of(profile: Profile) -> list[str | None]:
    return list(profile.settings.get("bindings") or {}) or [None]


def not_carried(profile: Profile, binding: str | None) -> list[str]:
    """The faults a binding's entry says its wire cannot carry (``not_carried:``: a JSON
    answer's shape, say, over a binding whose messages are protobuf): not looked for there."""
    return list((profile.settings.get("bindings") or {}).get(binding or "", {}).get("not_carried") or [])


def fault_bindings(profile: Profile, fault: str) -> list[str | None]:
    """The bindings a fault is looked for over: those whose wire can carry it."""
    return [b for b in bindings_of(profile) if fault not in not_carried(profile, b)]


def one_binding_per_kind(profile: Profile) -> list[str | None]:
    """The first binding of each kind: shape variants rewrite the payloads, which the
    bindings of one kind (MCP in two revisions, say) carry alike."""
    seen: dict[Any, str | None] = {}
    for b in bindings_of(profile):
        seen.setdefault((profile.settings.get("bindings") or {}).get(b or "", {}).get("kind"), b)
    return list(seen.values())


def structural_problems(profile: Profile) -> list[str]:
    """Requirements without faults, faults no requirement names, names that do not
    exist (faults, ``alone:`` entries), variants without the spec text that allows them."""
    problems = []
    named = set()
    for req in profile.requirements:
        if not req.faults:
            problems.append(f"{req.id} names no fault: nothing proves it can fail")
        for fault in req.faults:
            named.add(fault)
            if fault not in profile.faults:
                problems.append(f"{req.id} names unknown fault {fault!r}")
    for fault in sorted(set(profile.faults) - named):
        problems.append(f"fault {fault!r} is named by no requirement")
    for binding in bindings_of(profile):
        problems += [f"binding {binding}: not_carried names unknown fault {f!r}"
                     for f in not_carried(profile, binding) if f not in profile.faults]
    for name, patch in sorted(profile.variants.items()):
        if "allowed by" not in (patch.__doc__ or ""):
            problems.append(f"variant {name!r} does not quote the spec text that allows it (\"allowed by: "
                            "...\" in its docstring)")
        if name in profile.faults:
            problems.append(f"{name!r} is both a fault and a variant")
    for pattern in profile.settings.get("alone") or []:
        if not any(runs_alone([str(pattern)], r.id) for r in profile.requirements):
            problems.append(f"alone: {pattern!r} names no requirement")
    return problems


@dataclass
class CleanRun:
    """The clean reference's verdicts, and for each requirement the names of the
    reference's attributes (methods and settings) it read there."""

    verdicts: dict[str, Verdict]
    reach: dict[str, frozenset[str]]


def run_clean(profile: Profile, budget: str = "quick", seed: int = 1, binding: str | None = None) -> CleanRun:
    run = open_run(profile, "reference", budget=budget, seed=seed, binding=binding)
    read: set[str] = set()
    trace_reads(run.reference, read)
    verdicts, reach = {}, {}
    try:
        for req in profile.requirements:
            read.clear()
            verdicts[req.id] = execute(req, run)
            reach[req.id] = frozenset(read)
        # a declaration is read once a run, by the first row that asks: the later ones reach
        # what it read too (a variant that declares the feature otherwise changes their path)
        for askers in run.declaration_askers.values():
            for rid in askers[1:]:
                reach[rid] = reach.get(rid, frozenset()) | reach.get(askers[0], frozenset())
        return CleanRun(verdicts, reach)
    finally:
        run.http.close()


def trace_reads(reference: Any, into: set[str]) -> None:
    """From now on every attribute read on ``reference`` (its own calls included) adds
    the attribute's name to ``into``."""
    base: Any = type(reference)

    def __getattribute__(self: Any, name: str) -> Any:
        into.add(name)
        return base.__getattribute__(self, name)

    reference.__class__ = type(base.__name__, (base,), {"__getattribute__": __getattribute__})


def changed_by(profile: Profile, deviation: str) -> frozenset[str] | None:
    """The attributes of the reference a variant (or fault) sets, replaces or changes in
    place (one level into a dict, list or set); None when it changes none of them (it
    patched something else, which any requirement may reach)."""
    reference = profile.create_reference(profile).state.reference
    before = dict(vars(reference))
    contents = {k: copy.copy(v) for k, v in before.items() if isinstance(v, (dict, list, set))}
    deviations(profile, (deviation,))[0](reference)
    after = vars(reference)
    changed = {k for k, v in after.items()
               if k not in before or v is not before[k] or (k in contents and v != contents[k])}
    return frozenset(changed) or None


def run_fault(profile: Profile, fault: str, budget: str = "quick", seed: int = 1,
              binding: str | None = None) -> dict[str, Verdict]:
    """Run the requirements naming ``fault`` against a fresh reference carrying it (no
    shrinking: the question is whether it is caught, not by which smallest example)."""
    run = open_run(profile, "reference", faults=(fault,), budget=budget, seed=seed, binding=binding,
                   shrink=False)
    try:
        return {req.id: execute(req, run) for req in profile.requirements
                if fault in req.faults and not profile.is_deferred(req.id)}
    finally:
        run.http.close()


def variant_groups(profile: Profile) -> list[tuple[str, ...]]:
    """The variants in groups that change disjoint attributes of the reference: one run
    of a group shows all its behaviours at once, as a real server shows many, and runs
    each requirement they reach once instead of once per variant. Variants that change
    the same attribute, or none that the trace can see, stay in separate groups."""
    groups: list[tuple[set[str], list[str]]] = []
    for name in sorted(profile.variants):
        changed = changed_by(profile, name)
        home = next((g for g in groups if changed is not None and g[0] and not g[0] & changed), None)
        if home is None:
            groups.append((set(changed or ()), [name]))
        else:
            home[0].update(changed or ())
            home[1].append(name)
    return [tuple(names) for _, names in groups]


def variant_applies(profile: Profile, name: str, binding: str | None) -> bool:
    """Whether variant ``name`` shows over ``binding``: one marked with a ``binding_kind``
    (an MCP server's behaviour, say) only over the profile's bindings of that kind."""
    kind = getattr(profile.variants.get(name) or profile.faults.get(name), "binding_kind", None)
    entry = (profile.settings.get("bindings") or {}).get(binding or "", {})
    return kind is None or entry.get("kind") == kind


@dataclass
class VariantRuns:
    """What one group of variants' runs showed: per variant (and under ``a+b+c`` a group's
    failure that only shows together), the verdicts of the MUST requirements it reached;
    and the variants of the group whose seams no run of it used."""

    verdicts: dict[str, dict[str, Verdict]] = field(default_factory=dict)
    unused: dict[str, list[str]] = field(default_factory=dict)


def run_variants(profile: Profile, group: tuple[str, ...], budget: str = "quick", seed: int = 1,
                 binding: str | None = None,
                 reach: dict[str, frozenset[str]] | None = None) -> VariantRuns:
    """For each variant of ``group``, the verdicts of the MUST requirements it reaches,
    against a reference showing the allowed behaviour (no MUST may fail on one; a
    SHOULD may: it is the profile's preferred reading).

    A variant reaches the requirements that read an attribute it changes (with ``reach``,
    a clean run's); the others run as they did on the clean reference, and passed.
    The group's variants run together on one reference. A requirement that does not
    pass there runs again under each of its variants alone, so a failure names its
    variant (and one variant cannot hide another's failure by stopping the check): one
    run per variant, of all such requirements it reaches, as a server showing only it;
    where every one alone passes, the group's verdict is kept under the name ``a+b+c``
    of the whole group: a server may show them all at once. A variant of one binding
    kind's behaviour (its ``binding_kind``) runs only over bindings of that kind.

    Each run notes which variants' seams it used (``faults.watch``): a method a variant
    installed called, or an attribute it changed read. A variant whose seams the group's
    run did not use (another may have hidden it: a card declaring push off skips the rows
    that would call a push variant's method) runs alone on every requirement it reaches,
    and those verdicts are its own. One none of whose seams any run used is ``unused``:
    its MUST rows never met its behaviour, so their passing proves nothing about it."""
    group = tuple(name for name in group if variant_applies(profile, name, binding))
    if not group:
        return VariantRuns()
    reached: dict[str, list[str]] = {}
    for name in group:
        changed = changed_by(profile, name) if reach is not None else None
        reached[name] = [r.id for r in profile.requirements if r.level == "MUST"
                         and (reach is None or changed is None or bool(reach.get(r.id, changed) & changed))]
    together, unused = _run(profile, group, {rid for rids in reached.values() for rid in rids}, budget, seed,
                            binding)
    result = VariantRuns(verdicts={name: {} for name in group})
    again = {rid for rid, verdict in together.items()
             if verdict.status not in ("passed", "skipped") and len(group) > 1}
    hidden = set(unused) if len(group) > 1 else set()
    alone = {}
    for name in group:
        rids = set(reached[name]) if name in hidden else again & set(reached[name])
        if rids:
            alone[name] = _run(profile, (name,), rids, budget, seed, binding)
    for rid, verdict in together.items():
        names = [name for name in group if rid in reached[name]]
        for name in names:
            result.verdicts[name][rid] = alone[name][0][rid] if rid in alone.get(name, ({},))[0] else verdict
        if rid in again and all(alone[name][0][rid].status in ("passed", "skipped") for name in names):
            result.verdicts.setdefault("+".join(group), {})[rid] = verdict
    result.unused = {name: seams for name, seams in unused.items()
                     if name not in alone or name in alone[name][1]}
    return result


def _run(profile: Profile, deviation_names: tuple[str, ...], rids: set[str], budget: str, seed: int,
         binding: str | None) -> tuple[dict[str, Verdict], dict[str, list[str]]]:
    """The requirements ``rids`` in the profile's order, against one fresh reference
    carrying ``deviation_names``; and those of the deviations whose seams the run did
    not use, with what they installed."""
    with watch() as log:
        run = open_run(profile, "reference", faults=deviation_names, budget=budget, seed=seed,
                       binding=binding)
    read: set[str] = set()
    if run.reference is not None:
        trace_reads(run.reference, read)
    try:
        verdicts = {req.id: execute(req, run) for req in profile.requirements if req.id in rids}
    finally:
        run.http.close()
    return verdicts, {name: log.seams(name) for name in deviation_names if not log.used(name, read)}


def variant_problems(profile: Profile, variant: str, verdicts: dict[str, Verdict], where: str) -> list[str]:
    """No MUST requirement may fail on behaviour the spec allows (a SHOULD may: it is
    the profile's preferred reading); no requirement may crash."""
    levels = {r.id: r.level for r in profile.requirements}
    problems = []
    for rid, v in verdicts.items():
        problems += [f"{rid} crashed on variant {variant}{where}: {c}" for c in crashes(v)]
        if v.status == "failed" and levels[rid] == "MUST" and caught(v):
            problems.append(f"variant {variant}{where}: MUST requirement {rid} failed on behaviour the spec "
                            f"allows: {v.message}")
    return problems


def unused_problems(variant: str, unused: dict[str | None, list[str] | None]) -> list[str]:
    """A variant is dead where no run of it, over any binding it applies to, used its seams
    (called a method it installed, read an attribute it changed): no MUST row met the
    behaviour it allows, so "no MUST fails on it" proves nothing."""
    if not unused or any(seams is None for seams in unused.values()):
        return []
    seams = sorted({s for found in unused.values() for s in found or ()})
    return [f"variant {variant}: dead: no MUST row's run used what it patches "
            f"({', '.join(seams) or 'nothing it installed'}), so it proves nothing"]


def crashes(verdict: Verdict) -> list[str]:
    """The messages of the verdict's ``crash`` failures."""
    return [f.line for f in verdict.failures if f.kind == "crash"]


def caught(verdict: Verdict) -> bool:
    """Failed with at least one real finding (a failure whose kind is not ``crash``)."""
    return verdict.status == "failed" and any(f.kind != "crash" for f in verdict.failures)


def live_faults(profile: Profile) -> list[str]:
    """The faults some requirement that is not deferred names (a deferred requirement's
    feature is not in the reference yet: its faults wait for it)."""
    return sorted({f for r in profile.requirements if not profile.is_deferred(r.id)
                   for f in r.faults} & set(profile.faults))


def clean_problems(verdicts: dict[str, Verdict], where: str,
                   deferred: Callable[[str], bool] = lambda rid: False) -> list[str]:
    """Every requirement passes against the clean reference, except deferred ones, which
    must be untested there (the reference does not serve their feature yet)."""
    problems = []
    for rid, v in verdicts.items():
        if deferred(rid):
            if v.status != "untested":
                problems.append(f"clean reference{where}: {rid} is deferred but {v.status}: "
                                f"{v.message[:160]} (drop it from the profile's deferred: "
                                "block once the reference serves it)")
            continue
        if v.status in ("passed", "skipped"):
            continue
        crashed = crashes(v)
        if crashed:
            problems += [f"clean reference{where}: {rid} crashed: {c}" for c in crashed]
            if not caught(v):
                continue
        problems.append(f"clean reference{where}: {rid} {v.status}: {v.message}")
    return problems


def fault_problems(fault: str, per_binding: dict[str | None, dict[str, Verdict]]) -> list[str]:
    """Each naming requirement catches the fault (fails with a finding that is not a
    crash) wherever it applies, and applies somewhere; any crash is a problem too."""
    problems = []
    rids = {rid for verdicts in per_binding.values() for rid in verdicts}
    for rid in sorted(rids):
        verdicts = {b: v[rid] for b, v in per_binding.items() if rid in v}
        for b, v in verdicts.items():
            over = f" over {b}" if b else ""
            problems += [f"{rid} crashed on fault {fault}{over}: {c}" for c in crashes(v)]
            if v.status == "failed" and ("[breaks: " not in v.message
                                         or not any(e.response or e.error for e in v.exchanges)):
                problems.append(f"{rid} on fault {fault}{over}: a finding must name the statement "
                                f"it breaks and keep the answer it quotes: {v.message[:200]}")
        missed = [b for b, v in verdicts.items() if v.status != "skipped" and not caught(v)]
        if missed or all(v.status == "skipped" for v in verdicts.values()):
            over = "" if missed == [None] else f" over {', '.join(str(b) for b in missed) or 'any binding'}"
            problems.append(f"fault {fault}: not caught by {rid}{over}")
    return problems


Reach = dict[str | None, dict[str, frozenset[str]]]  # binding -> a clean run's reach


def _unit(profile: Profile | str, kind: str, name: str | None, budget: str, seed: int,
          reach: Reach | None = None) -> tuple[str, list[str], Reach]:
    """The lines of the selftest, their problems, and (for the clean reference) its reach:
    the clean reference over one binding, one fault, or one group of variants (``name``
    their names, space-separated) against what the clean runs say they reach (a
    top-level function taking a profile's name, so a process pool can run it)."""
    if isinstance(profile, str):
        profile = load_profile(profile)
    bindings = bindings_of(profile)
    if kind == "clean":
        where = f" over {name}" if name else ""
        clean = run_clean(profile, budget, seed, name)
        problems = clean_problems(clean.verdicts, where, profile.is_deferred)
        return (f"  clean reference{where}: {'all pass' if not problems else 'PROBLEMS'}", problems,
                {name: clean.reach})
    if kind == "fault":
        assert name is not None
        problems = fault_problems(name, {b: run_fault(profile, name, budget, seed, b)
                                         for b in fault_bindings(profile, name)})
        word = ("MISSED" if any(": not caught by " in p for p in problems) else "CRASHED" if problems
                else "caught")
        return f"  fault {name:36} {word}", problems, {}
    assert name is not None
    if kind == "shapes":
        return shapes_unit(profile, int(name), budget, seed)
    group = tuple(name.split(" "))
    runs = {b: run_variants(profile, group, budget, seed, b, (reach or {}).get(b)) for b in bindings}
    lines, problems = [], []
    for variant in sorted({v for run in runs.values() for v in run.verdicts}):
        mine = [p for b, run in runs.items() for p in
                variant_problems(profile, variant, run.verdicts.get(variant, {}), f" over {b}" if b else "")]
        if variant in group and not any(run.verdicts.get(variant) for run in runs.values()):
            mine.append(f"variant {variant}: no MUST requirement reads what it changes, so it proves nothing")
        elif variant in group:
            mine += unused_problems(variant, {b: run.unused.get(variant) for b, run in runs.items()
                                              if variant in run.verdicts})
        problems += mine
        lines.append(f"  variant {variant:34} {'allowed' if not mine else 'FALSE ALARM'}")
    return "\n".join(lines), problems, {}


def run_shapes(profile: Profile, shape_seed: int, budget: str = "quick", seed: int = 1,
               binding: str | None = None) -> dict[str, Verdict]:
    """Every requirement against the clean reference whose answers come in the shape
    variant of ``shape_seed`` (shapes.py)."""
    run = open_run(profile, "reference", budget=budget, seed=seed, binding=binding, shapes=shape_seed)
    try:
        return {req.id: execute(req, run) for req in profile.requirements}
    finally:
        run.http.close()


SHAPE_MARK = "  shape rows failed: "


def shapes_unit(profile: Profile, shape_seed: int, budget: str, seed: int) -> tuple[str, list[str], Reach]:
    """One shape variant over one binding of each kind: every MUST passes (where the clean
    reference passes, it must pass here: no verdict may rest on a shape the profile
    chose); the line lists the SHOULD rows that failed, which the selftest joins
    over the seeds to check that each row of ``shapes: rows:`` fails on one."""
    rules = rules_of(profile)
    problems: list[str] = []
    failed_should: set[str] = set()
    for b in one_binding_per_kind(profile):
        over = f" over {b}" if b else ""
        for rid, v in run_shapes(profile, shape_seed, budget, seed, b).items():
            req = profile.requirement(rid)
            problems += [f"{rid} crashed on shape variant {shape_seed}{over}: {c}" for c in crashes(v)]
            if profile.is_deferred(rid) or v.status in ("passed", "skipped"):
                continue
            if req.level == "MUST":
                problems.append(f"shape variant {shape_seed}{over}: MUST requirement {rid} "
                                f"{v.status} on answers the document allows: {v.message[:300]}")
            elif v.status == "failed":
                failed_should.add(rid)
    shape_rows = sorted(r.id for r in profile.requirements if runs_alone(list(rules.rows), r.id))
    mine = sorted(failed_should & set(shape_rows))
    others = sorted(failed_should - set(shape_rows))
    line = (f"  shape variant {shape_seed} ({describe(shape_seed)}): "
            f"{'MUST rows pass' if not problems else 'FALSE ALARMS'}; {len(mine)} of {len(shape_rows)} "
            "shape rows failed" + (f", other SHOULD rows failed: {', '.join(others)}" if others else ""))
    return line + "\n" + SHAPE_MARK + ",".join(mine), problems, {}


def shape_problems(profile: Profile, lines: list[str]) -> list[str]:
    """Each row of ``shapes: rows:`` must fail on at least one shape variant: it asks for
    the profile's shape, so a variant that leaves that shape must show it looked."""
    rules = rules_of(profile)
    failed = {rid for line in lines for rid in line.split(SHAPE_MARK, 1)[-1].split(",")
              if SHAPE_MARK in line and rid}
    rows = [r.id for r in profile.requirements if runs_alone(list(rules.rows), r.id)]
    problems = [f"shapes: rows: {pattern!r} names no requirement" for pattern in rules.rows
                if not any(runs_alone([str(pattern)], r.id) for r in profile.requirements)]
    problems += [f"shape row {rid} passed on every shape variant: it does not look at the profile's "
                 "shape it asks for"
                 for rid in rows if rid not in failed and profile.requirement(rid).level != "MUST"]
    problems += [f"shape row {rid} is a MUST: a row that asks for the profile's shape is a SHOULD "
                 "(source: profile)"
                 for rid in rows if profile.requirement(rid).level == "MUST"]
    return problems


def selftest(profile: Profile, budget: str = "quick", seed: int = 1, out: Callable[[str], None] = print,
             workers: int = 1, shape_seeds: tuple[int, ...] | None = None) -> SelftestResult:
    """The clean reference, every fault and every variant; ``workers`` processes run
    them side by side (lines still come in order). The clean runs go first: each
    group of variants then runs the requirements that read what its variants change."""
    result = SelftestResult(structural_problems(profile))
    bindings = bindings_of(profile)
    out(f"selftest {profile.name}: {len(profile.requirements)} requirements, {len(profile.faults)} faults, "
        f"{len(profile.variants)} variants"
        + (f", bindings {', '.join(map(str, bindings))}" if bindings != [None] else ""))
    faults = live_faults(profile)
    if len(faults) < len(profile.faults):
        out(f"  {len(profile.faults) - len(faults)} faults wait for deferred requirements "
            f"({profile.deferred_until})")
    first: list[tuple[str, str | None]] = [("clean", b) for b in bindings] + [("fault", f) for f in faults]
    first += [("shapes", str(s)) for s in (SEEDS if shape_seeds is None else shape_seeds)]
    shape_lines: list[str] = []
    variants = [" ".join(group) for group in variant_groups(profile)]
    reach: Reach = {}

    def report(line: str, problems: list[str], found: Reach) -> None:
        result.problems.extend(problems)
        reach.update(found)
        if SHAPE_MARK in line:
            shape_lines.append(line)
            line = line.split("\n" + SHAPE_MARK, 1)[0]
        out(line)

    if workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_unit, profile.name, kind, name, budget, seed) for kind, name in first]
            for future in futures[:len(bindings)]:  # the clean runs: the variants need their reach
                report(*future.result())
            futures += [pool.submit(_unit, profile.name, "variant", v, budget, seed, reach) for v in variants]
            for future in futures[len(bindings):]:
                report(*future.result())
    else:
        for kind, name in first:
            report(*_unit(profile, kind, name, budget, seed))
        for name in variants:
            report(*_unit(profile, "variant", name, budget, seed, reach))
    if shape_lines:
        result.problems.extend(shape_problems(profile, shape_lines))
    for problem in result.problems:
        out(f"  problem: {problem}")
    out(f"selftest {profile.name}: {'ok' if result.ok else f'{len(result.problems)} problem(s)'}")
    return result
