"""What a campaign found, as a user keeps it: report.html and a JUnit file beside fuzz.json.

A row per requirement and binding the campaign ran: ``failed`` with each distinct failure it
found (its case file each), ``expected_failure`` where a baseline lists every one of them,
``blocked`` where the kit's own error ended it, else the status of its last verdict, and
``untested`` where no round reached it. A campaign grades nothing: its verdict says what it
found in how long."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from conformance.failures import DEFAULT_KIND, KIT_ERROR, Failure
from conformance.report.html import write_html
from conformance.report.junit import junit_properties, write_junit
from conformance.report.summary import Result, build_summary, gates
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict


def write_reports(result: Any, data: dict[str, Any], report_dir: Path, junit: Path, *,
                  bindings: tuple[str | None, ...], only: tuple[str, ...], level: str,
                  config: dict[str, Any], out: Callable[[str], None]) -> dict[str, Any]:
    """Write report.html and ``junit`` for the campaign ``result`` (fuzz.json's ``data``);
    the summary they were made from. A report that cannot be written is a warning: fuzz.json
    holds what was found."""
    summary = campaign_summary(result, data, bindings=bindings, only=only, level=level)
    try:
        write_html(report_dir, summary=summary)
        write_junit(junit, summary, junit_properties(summary))
    except (OSError, ValueError) as exc:
        out(f"warning: could not write the campaign's report.html or JUnit file: {exc}")
    return summary


def campaign_summary(result: Any, data: dict[str, Any], *, bindings: tuple[str | None, ...],
                     only: tuple[str, ...], level: str) -> dict[str, Any]:
    """The campaign as a summary (the shape report.html and the JUnit writer read)."""
    from fnmatch import fnmatchcase

    profile = load_profile(data["profile"])
    several = len(bindings) > 1
    rows: list[Result] = []
    found_by: dict[tuple[str | None, str], list[Any]] = {}
    for found in result.found:
        found_by.setdefault((found.binding, found.requirement), []).append(found)
    for binding in bindings:
        for req in profile.requirements:
            if only and not any(fnmatchcase(req.id, p) for p in only):
                rows.append(Result(req, Verdict("skipped", "not selected by --only"), binding=binding))
                continue
            founds = found_by.get((binding, req.id), [])
            failing = [f for f in founds if f.kind != "kit_error"]
            if failing:
                failures = [Failure.from_json(x) for f in failing for x in f.failures] or [
                    Failure(DEFAULT_KIND, f.message) for f in failing]
                listed = all(f.baseline for f in failing)
                row = Verdict("expected_failure" if listed else "failed",
                              "; ".join(dict.fromkeys(f.message for f in failing)), failures=failures)
                rows.append(Result(req, row, f"cases/{failing[0].case}",
                                   failing[0].baseline if listed else None, binding=binding))
            elif founds:
                rows.append(Result(req, Verdict("blocked", founds[0].message, cause=KIT_ERROR,
                                                failures=[Failure(KIT_ERROR, founds[0].message)]),
                                   f"cases/{founds[0].case}", binding=binding))
            elif (binding, req.id) in result.verdicts:
                status, message, reason = result.verdicts[(binding, req.id)]
                rows.append(Result(req, Verdict(status, message, reason=reason), binding=binding))
            else:
                rows.append(Result(req, Verdict("untested", "no round of the campaign reached it",
                                                reason="stopped"), binding=binding))
    started = datetime.now(UTC) - timedelta(seconds=float(data.get("seconds") or 0))
    summary = build_summary(profile, rows, target=str(data["target"]), seed=int(data["seed"]),
                            budget="campaign", gate=level, started_at=started,
                            duration_s=float(data.get("seconds") or 0),
                            exchanges=int(data.get("exchanges") or 0), unreachable=data.get("unreachable"),
                            bindings=list(bindings), partial=True,
                            stopped=("signal", data["interrupted"]) if data.get("interrupted") else None)
    for row, r in zip(summary["requirements"], rows, strict=True):  # each distinct failure with its own case
        failing = [f for f in found_by.get((r.binding, r.requirement.id), []) if f.kind != "kit_error"]
        if failing:
            row["failures"] = [{"case": f"cases/{f.case}", **x} for f in failing
                               for x in (f.failures or [{"kind": DEFAULT_KIND, "message": f.message}])]
    new = [f for f in result.new_failures if gates(f.level, level)]
    known = len(result.failures) - len(result.new_failures)
    over = f" over {', '.join(str(b) for b in bindings)}" if several else ""
    words = (f"a {float(data.get('seconds') or 0):g} s campaign{over}, {data.get('exchanges', 0)} exchanges: "
             f"{len(result.new_failures)} distinct failure(s)"
             + (f" and {known} known from the baseline" if known else "")
             + (f", {len(result.kit_errors)} internal error(s) of conformance" if result.kit_errors else ""))
    word = ("interrupted" if data.get("interrupted") else "unreachable" if data.get("unreachable")
               else "kit error" if result.kit_errors else "fail" if new else "pass")
    summary.update(kind="fuzz campaign", verdict=word, grade="ungraded",
                   verdict_reason=(f"{data['interrupted']}: {words}" if data.get("interrupted")
                                   else f"the target could not be fuzzed: {data['unreachable']}"
                                   if data.get("unreachable") else words),
                   campaign={k: data.get(k) for k in ("seconds", "workers", "seed", "shard", "rounds",
                                                      "baseline")})
    return summary
