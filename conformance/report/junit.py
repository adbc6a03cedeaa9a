"""JUnit XML of a run: one suite per binding the run spoke, each test named so that no two
are alike in any reading (its name ``ID[binding]``, its class ``<profile>.<binding>``), the
run's verdict and breakdown as properties of every suite.

pytest writes the file of a `conformance run` or ``pytest PROFILE.yaml`` (one suite);
``split_by_binding`` gives a run over several bindings a suite each. ``write_junit`` writes
one from a summary alone (a run stopped before it opened, a fuzz campaign)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from conformance.report.summary import breakdown

BINDING_OF = re.compile(r"\[([^\[\]]+)\]$")


def junit_properties(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """What a JUnit file says of the whole run, as suite properties: the verdict and why,
    the grade, the live gate's statement and why rows were not run (the breakdown every
    report gives)."""
    props = [(f"conformance.{name}", str(summary[name]))
             for name in ("verdict", "verdict_reason", "grade", "stopped", "gate") if summary.get(name)]
    props.append(("conformance.live", summary["live"]["statement"]))
    if summary.get("bindings"):
        props.append(("conformance.bindings", ", ".join(summary["bindings"])))
    for line in summary.get("not_reached") or breakdown(summary.get("untested_reasons") or {},
                                                        summary.get("blocked_causes") or {},
                                                        summary.get("not_applicable") or {}):
        props.append((f"conformance.{line_key(line)}", line))
    return props


def split_by_binding(path: Path, summary: dict[str, Any]) -> None:
    """Rewrite pytest's JUnit file at ``path`` as one ``<testsuite>`` per binding of
    ``summary`` (a run over several): each holds its binding's test cases, its own counts
    and time, the run's properties and its own (``conformance.binding``, its verdict, its
    breakdown)."""
    tree = ElementTree.parse(path)
    root = tree.getroot()
    whole = root if root.tag == "testsuite" else root.find("testsuite")
    if whole is None:
        raise ValueError("no testsuite in it")
    profile = str(summary.get("profile") or "conformance")
    own_properties = whole.find("properties")
    shared = ([(p.get("name", ""), p.get("value", "")) for p in own_properties.findall("property")]
              if own_properties is not None else [])
    cases = whole.findall("testcase")
    suites = ElementTree.Element("testsuites", name=f"conformance {profile}")
    for binding in summary.get("bindings") or []:
        block = (summary.get("by_binding") or {}).get(binding) or {}
        mine = []
        for case in cases:
            found = BINDING_OF.search(case.get("name", ""))
            if found and found.group(1) == binding:
                case.set("classname", f"{profile}.{binding}")
                mine.append(case)
        own = [("conformance.binding", binding)]
        if block:
            own += [("conformance.binding.verdict", str(block.get("verdict"))),
                    ("conformance.binding.grade", str(block.get("grade")))]
            own += [(f"conformance.binding.{line.split(':', 1)[0].split()[-1]}", line)
                    for line in block.get("not_reached") or []]
        suite = _suite(suites, f"conformance {profile} over {binding}", whole.attrib, mine, shared + own)
        suite.set("timestamp", whole.get("timestamp", ""))
    ElementTree.indent(suites)
    ElementTree.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def _suite(parent: ElementTree.Element, name: str, attrib: dict[str, str], cases: list[ElementTree.Element],
           properties: list[tuple[str, str]]) -> ElementTree.Element:
    counts = {kind: sum(case.find(kind) is not None for case in cases)
              for kind in ("failure", "error", "skipped")}
    seconds = sum(float(case.get("time") or 0) for case in cases)
    suite = ElementTree.SubElement(parent, "testsuite", name=name, tests=str(len(cases)),
                                   failures=str(counts["failure"]), errors=str(counts["error"]),
                                   skipped=str(counts["skipped"]), time=f"{seconds:.3f}",
                                   hostname=attrib.get("hostname", ""))
    props = ElementTree.SubElement(suite, "properties")
    for key, value in properties:
        ElementTree.SubElement(props, "property", name=key, value=value)
    suite.extend(cases)
    return suite


def write_junit(path: Path, summary: dict[str, Any], properties: list[tuple[str, str]]) -> Path:
    """A JUnit file from ``summary`` alone: a suite per binding (one when the run spoke one),
    a test case per row: failed rows a failure, expected failures and rows not run to a
    verdict skipped with why, each with ``properties``."""
    profile = str(summary.get("profile") or "conformance")
    bindings = list(summary.get("bindings") or []) or [None]
    several = len(bindings) > 1
    suites = ElementTree.Element("testsuites", name=f"conformance {profile}")
    for binding in bindings:
        rows = [r for r in summary.get("requirements") or []
                if not several or r.get("binding") == binding]
        cases = []
        for row in rows:
            name = f"{row['id']}[{binding}]" if several else str(row["id"])
            case = ElementTree.Element("testcase", classname=f"{profile}.{binding}" if binding else profile,
                                       name=name, time=f"{float(row.get('duration_s') or 0):.3f}")
            status, message = str(row.get("status")), str(row.get("message") or "")
            if status == "failed":
                failure = ElementTree.SubElement(case, "failure", message=message[:1000])
                failure.text = message
            elif status == "expected_failure":
                reason = (row.get("baseline") or {}).get("reason", "")
                ElementTree.SubElement(case, "skipped", type="pytest.xfail",
                                       message=f"baseline: {reason}: {message}"[:1000])
            elif status in ("untested", "skipped", "blocked"):
                ElementTree.SubElement(case, "skipped", message=f"{status}: {message}"[:1000])
            cases.append(case)
        label = f"conformance {profile}" + (f" over {binding}" if several else "")
        _suite(suites, label, {}, cases,
               properties + ([("conformance.binding", binding)] if binding else []))
    ElementTree.indent(suites)
    path.parent.mkdir(parents=True, exist_ok=True)
    ElementTree.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
    return path


def line_key(line: str) -> str:
    """The property name of a breakdown line: "31 untested: ..." is ``untested``, "90 not
    applicable: ..." ``not_applicable``."""
    return line.split(":", 1)[0].split(" ", 1)[-1].replace(" ", "_")
