"""The lines that end a run's console output (and pytest's terminal summary), read from its
summary.json alone as the other reports are: what was not run and why, the verdict in one
sentence with the grade, the counts (per binding too), the root causes, stale baseline
entries, a replay command for the first failed cases, and where the reports are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.report.html import replay_line
from conformance.report.summary import row_label
from conformance.report.words import clipped

REPLAYS = 5  # failed cases given a replay line; the rest are counted


def closing_lines(summary: dict[str, Any], *, report_dir: Path, not_run: int = 0,
                  junit: str | None = None) -> list[str]:
    """The closing text of the run ``summary`` (its report folder ``report_dir``).
    ``not_run``: rows the run never reached (stopped, or the target could not be tested),
    said in one line; ``junit``: the JUnit file pytest writes, named beside the others."""
    c = summary["counts"]
    rows_of = summary["requirements"]
    several = len(summary.get("bindings") or []) > 1
    rows = "rows (requirement and binding)" if several else "requirements"
    unreachable, stopped = summary.get("unreachable"), summary.get("stopped")
    closing: list[str] = []
    if not_run:  # one line for all of them (why, once: the error above, or the stop)
        why = "the target could not be tested (the error above)" if unreachable else stopped or ""
        closing.append(f"{not_run} {rows} not run: {why}")
    for label, why in (summary.get("credentials_refused") or {}).items():
        closing.append(f"credential {label!r} {why}: the requirements that send it are untested")
    for problem in summary.get("not_put_back") or []:
        closing.append(f"warning: not put back: {problem}")
    closing += summary["not_reached"]
    grade = f"{summary['grade']}{'; ' + summary['grade_note'] if summary['grade_note'] else ''}"
    reason = ("the target could not be tested (the error above)" if summary["verdict"] == "unreachable"
              else summary["verdict_reason"])
    closing.append(f"{summary['verdict'].upper()}: {reason}. Grade: {grade}.")
    closing.append(
        f"  {c['passed']} passed, {c['failed']} failed, "
        f"{c['expected_failures']} expected failures, {c['blocked']} blocked, {c['untested']} untested, "
        f"{c['not_applicable']} not applicable, {c['skipped']} skipped of {len(rows_of)} {rows}; "
        f"{summary['exchanges']} "
        f"exchanges in {summary['duration_s']:.1f} s ({summary['exchanges_per_s']}/s)"
    )
    for binding, block in summary["by_binding"].items():
        b = block["counts"]
        closing.append(f"  {binding}: {block['verdict'].upper()}, {block['grade']}; "
                       f"{b['passed']} passed, "
                       f"{b['failed']} failed, {b['expected_failures']} expected failures, "
                       f"{b['blocked']} blocked, {b['untested']} untested, "
                       f"{b['not_applicable']} not applicable, {b['skipped']} skipped")
    causes = summary["root_causes"]
    if causes:
        closing.append(f"root causes ({len(causes)}, largest first):")
        for cause in causes[:10]:
            names = ", ".join(cause["requirements"][:4]) + (" ..." if cause["count"] > 4 else "")
            closing.append(f"  {cause['count']:3} x "
                           f"{clipped(str(cause.get('label') or cause['signature']), 140)}  [{names}]")
            if cause.get("request_in_common"):
                closing.append(f"        requests in common: {'; '.join(cause['request_in_common'])}")
    for stale in summary["baseline"]["stale"] if summary["baseline"] else []:
        closing.append(f"stale: {stale}")
    cased = [(row_label(row["id"], row.get("binding"), several), row["failures"][0]["case"])
             for row in rows_of
             if row["status"] == "failed" and row.get("failures") and row["failures"][0].get("case")]
    # to copy as it stands (a token comes from $CONFORMANCE_TOKEN, never from here)
    for label, case in cased[:REPLAYS]:
        line = replay_line(report_dir / case, summary["target"], summary.get("config"))
        closing.append(f"replay {label}: {line}")
    if len(cased) > REPLAYS:
        closing.append(f"  ... and {len(cased) - REPLAYS} more cases in {report_dir / 'cases'}")
    closing.append(f"report: {report_dir / 'report.html'} (summary.json, badge.svg, cases/"
                   f"{', JUnit ' + str(junit) if junit else ''})")
    return closing
