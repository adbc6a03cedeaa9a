"""Counts that agree everywhere: one function (report/summary.breakdown) says why rows were
not run to a verdict, untested by reason and blocked by cause, and the console, report.html,
the badge, the JUnit properties and summary.json all say exactly that; the live statement
counts with the same function; no internal key reaches a root cause's words, and no line is
cut inside a word."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET

import yaml

from conformance.report.summary import breakdown
from conformance.report.words import clipped
from tests.conftest import conformance


def test_every_report_says_the_same_breakdown_of_what_was_not_run(tmp_path, serve):
    """The A2A reference served without control, with a fault that refuses a set-up step
    (CancelTask has no HTTP+JSON route), and a config without the second caller: rows untested
    for three reasons, rows blocked, rows failed."""
    server = serve("a2a", "--fault", "rest_cancel_unrouted")
    config = yaml.safe_load(server.config.read_text(encoding="utf-8"))
    del config["credentials"]["other"]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    report = tmp_path / "r"
    result = conformance("run", "a2a", "--config", str(path), "--binding", "http-json", "--budget", "quick",
                         "--report", str(report), "--gate", "live")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
    counts, untested, blocked = summary["counts"], summary["untested_reasons"], summary["blocked_causes"]
    assert {"outcome", "control", "credential"} <= set(untested) and blocked, (untested, blocked)
    assert sum(untested.values()) == counts["untested"] and sum(blocked.values()) == counts["blocked"]
    lines = summary["not_reached"]
    # the reference's card declares some capabilities off: rows not applicable, counted apart
    declared_off = summary["not_applicable"]
    assert sum(declared_off.values()) == counts["not_applicable"] > 0, (declared_off, counts)
    assert lines == breakdown(untested, blocked, declared_off) and len(lines) == 3
    assert lines[0].startswith(f"{counts['untested']} untested: ")
    assert lines[1].startswith(f"{counts['blocked']} blocked: ")
    assert lines[2].startswith(f"{counts['not_applicable']} not applicable: ")
    for reason, n in untested.items():  # each reason with its own count, in words
        said = rf"\b{n} (needs?|lacks?|would|is|are|could|came|weighed|for)\b"
        assert re.search(said, lines[0]), (reason, lines)
    # every report says exactly these lines
    page = (report / "report.html").read_text(encoding="utf-8")
    banner = page.split("<strong>Not run to a verdict:</strong>", 1)[1].split("</div>", 1)[0]
    junit = ET.parse(report / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")
             if p.get("name", "").startswith("conformance.")}
    badge = (report / "badge.svg").read_text(encoding="utf-8")
    for line in lines:
        assert line in result.stdout, line
        assert html.escape(line) in banner and html.escape(line) in page.split("<section id=failures>", 1)[1]
        assert line in props.values(), props
        assert html.escape(line, quote=True) in badge
    assert props["conformance.untested"] == lines[0] and props["conformance.blocked"] == lines[1]
    assert props["conformance.not_applicable"] == lines[2]
    # the live gate's numbers are the same function's, over the gating rows
    must = [r for r in summary["requirements"] if r["level"] == "MUST" and r["status"] == "untested"]
    live = summary["live"]
    assert live["need_control"] == sum(r.get("reason") == "control" for r in must)
    assert live["need_scenario"] == sum(r.get("reason") == "outcome" for r in must)
    assert live["statement"] in result.stdout and live["statement"] in page
    # root causes in words: no internal key, and a console line cut only after a whole word
    labels = [c["label"] for c in summary["root_causes"]]
    assert labels and not [x for x in labels if re.search(r"\b[a-z]+_[a-z_]+\b:", x) or "refusal_cause" in x]
    shown = [line for line in result.stdout.splitlines() if re.match(r"^\s+\d+ x ", line)]
    assert shown
    for line in shown:
        text = re.sub(r"^\s+\d+ x ", "", line).rsplit("  [", 1)[0]
        whole = next(x for x in labels if x.startswith(text.removesuffix(" …")))
        assert text == whole or (text.endswith(" …") and whole[len(text) - 2] == " "), (text, whole)


def test_a_clipped_text_ends_after_a_whole_word():
    text = "every refusal the requirement met was about something other than what it tests"
    for limit in range(12, len(text)):
        cut = clipped(text, limit)
        assert len(cut) <= limit and cut.endswith(" …")
        assert text.startswith(cut[:-2]) and text[len(cut) - 2] == " ", cut
    assert clipped(text, len(text)) == text
    url = "https://agent.example/a2a/rest/tasks/task-0123456789abcdef:cancel"
    assert clipped(url, 40) == "https://agent.example/a2a/rest/tasks/ …"  # a token: after a separator
