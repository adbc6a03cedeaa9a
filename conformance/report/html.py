"""report.html: one self-contained page a person reads after a run.

Everything comes from the report directory (summary.json and cases/*.json) and the
spec file the summary names; the page fetches nothing (inline CSS, a few lines of
inline JS, a Content-Security-Policy that forbids any other load)."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

from conformance.documents.schemas import SpecError, resolve_pointer
from conformance.jsontext import parse_json
from conformance.model import LEVELS
from conformance.paths import DATA_ROOT
from conformance.report.summary import breakdown
from conformance.yamltext import load_yaml

EXCERPT_LIMIT = 4000  # characters of a spec excerpt
BODY_LIMIT = 64_000  # characters of one exchange body (the case file has it all)
LINE_CONTEXT = 4  # lines either side of an annotated "(line N)"

STATUS_ORDER = ("failed", "expected_failure", "blocked", "untested", "skipped", "passed")
STATUS_LABEL = {
    "passed": "PASS",
    "failed": "FAIL",
    "untested": "UNTESTED",
    "blocked": "BLOCKED",
    "skipped": "SKIPPED",
    "not_applicable": "NOT APPLICABLE",
    "expected_failure": "EXPECTED FAIL",
}
GRADE_CLASS = {
    "fully compliant": "g-full",
    "SHOULD-compliant": "g-should",
    "MUST-compliant": "g-must",
    "non-compliant": "g-non",
    "ungraded": "g-none",
}
LEVEL_COLUMNS = (
    ("passed", "passed"),
    ("failed", "failed"),
    ("blocked", "blocked"),
    ("untested", "untested"),
    ("not_applicable", "not applicable"),
    ("skipped", "skipped"),
    ("expected_failures", "expected failures"),
)

CSS = """
:root{--fg:#1d2329;--muted:#5b6570;--line:#d8dde3;--bg:#fff;--soft:#f5f7f9;
--pass:#2e7d32;--fail:#c62828;--xfail:#8e44ad;--untested:#b26a00;--skip:#6b7280}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:var(--bg)}
main{max-width:1200px;margin:0 auto;padding:20px 24px 60px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 10px;border-bottom:1px solid var(--line);
padding-bottom:4px}h3{font-size:15px;margin:0 0 6px}
a{color:#0b5cad}\
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
font-size:12.5px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:8px 10px;margin:4px 0;
white-space:pre-wrap;word-break:break-word;overflow-wrap:anywhere}
.top{display:flex;gap:24px;align-items:stretch;flex-wrap:wrap;margin:12px 0}
#grade{font-size:30px;font-weight:700;padding:14px 22px;border-radius:8px;color:#fff;min-width:280px;
display:flex;flex-direction:column;justify-content:center}
#grade small{font-size:13px;font-weight:400;opacity:.9}
.g-full{background:#2e7d32}.g-should{background:#7a8f1a}.g-must{background:#b8860b}
.g-non{background:#c62828}.g-none{background:#6b7280}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
table.levels{width:auto}table.levels td.n{text-align:right;font-variant-numeric:tabular-nums}
table.meta{width:auto}table.meta th{background:none;color:var(--muted);font-weight:500;padding-left:0}
.v{display:inline-block;padding:1px 7px;border-radius:3px;color:#fff;font-size:12px;font-weight:600;
white-space:nowrap}
.v-passed{background:var(--pass)}.v-failed{background:var(--fail)}.v-expected_failure{background:var(--xfail)}
.v-untested,.v-blocked{background:var(--untested)}.v-skipped{background:var(--skip)}
tr.r-failed td{background:#fdecec}tr.r-expected_failure td{background:#f6eefa}
.note{color:var(--muted);font-size:12.5px}
section.failure{border:1px solid #e8b4b4;border-left:5px solid var(--fail);border-radius:4px;\
padding:10px 14px;
margin:14px 0}
section.failure.xfail{border-color:#d7bde2;border-left-color:var(--xfail)}
.kind{display:inline-block;padding:0 6px;border:1px solid var(--line);border-radius:3px;\
background:var(--soft);
font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11.5px;text-transform:none;letter-spacing:0}
ul.fails{margin:4px 0;padding-left:18px}ul.fails li{margin:3px 0}
details{margin:4px 0}summary{cursor:pointer}
details.exchange{border:1px solid var(--line);border-radius:4px;padding:4px 10px;margin:6px 0;background:#fff}
details.exchange>summary{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
.half{display:grid;grid-template-columns:1fr 1fr;gap:10px}
@media (max-width:900px){.half{grid-template-columns:1fr}}
.lbl{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em;margin-top:6px}
.src{border-left:3px solid var(--line);padding-left:10px;margin:8px 0}
.src:target,details:target{outline:2px solid #0b5cad;outline-offset:2px}
mark{background:#fff2a8}
td.id{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}
.srcline{font-size:12px;color:var(--muted);margin-top:2px}
.srcline a,.srcref{word-break:normal;overflow-wrap:normal;white-space:normal}
.note{overflow-wrap:break-word}
.banner{border:1px solid #e0b252;background:#fff6e0;border-left:5px solid var(--untested);border-radius:4px;
padding:8px 12px;margin:10px 0}
table.facts{width:auto;margin:6px 0}\
table.facts th{background:none;color:var(--muted);font-weight:500;padding-left:0;
white-space:nowrap}
details.run{margin:6px 0 0}details.run>summary{color:var(--muted);font-size:12.5px}
nav{margin:14px 0 0}
ol.faillist{margin:6px 0;padding-left:0;list-style:none}
ol.faillist li{padding:7px 10px;margin:0;border-bottom:1px solid var(--line)}
ol.faillist li.f-failed{border-left:4px solid var(--fail)}\
ol.faillist li.f-expected_failure{border-left:4px solid var(--xfail)}
ol.faillist .lvl{display:inline-block;min-width:58px;font-weight:600;font-size:12px}
ol.faillist .title{font-weight:600}
table.causes td.n{white-space:nowrap}table.causes .label{font-weight:600}
.affected a{white-space:nowrap}
#switch button{font:inherit;padding:2px 10px;margin:0 4px 0 0;border:1px solid var(--line);border-radius:3px;
background:#fff;cursor:pointer}#switch button.on{background:#0b5cad;color:#fff;border-color:#0b5cad}
.bnd{display:inline-block;padding:0 5px;border:1px solid var(--line);border-radius:3px;font-size:11.5px;
font-family:ui-monospace,Menlo,Consolas,monospace;color:var(--muted)}
@media (max-width:960px){td.id{white-space:normal}}
@media (max-width:700px){main{padding:14px 12px 40px}td,th{padding:4px 5px}}
"""

# Opens a <details> the address points into (a spec source link, a failure link).
JS = """function openTarget(){var e=location.hash&&\
document.getElementById(decodeURIComponent(location.hash.slice(1)));
for(;e;e=e.parentElement){if(e.tagName==="DETAILS")e.open=true;}}
window.addEventListener("hashchange",openTarget);window.addEventListener("DOMContentLoaded",openTarget);
function showBinding(b){document.body.dataset.binding=b;document.querySelectorAll("#switch button").forEach(\
function(x){x.className=x.dataset.b===b?"on":"";});}"""

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def e(value: Any) -> str:
    """HTML-escape anything (None becomes an empty string)."""
    return escape("" if value is None else str(value), quote=True)


def anchor(prefix: str, text: str) -> str:
    """A stable, HTML-id-safe anchor for ``text``."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:60]
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return f"{prefix}-{slug}-{digest}" if slug else f"{prefix}-{digest}"


def breakable(text: str) -> str:
    """``text`` escaped, with a line-break opportunity after each / and # (never inside a word)."""
    return "<wbr>".join(e(part) for part in re.split(r"(?<=[/#])", text))


def source_text(source: dict[str, Any]) -> str:
    """``file#pointer``, or the profile's reason when the profile decides (the spec is silent)."""
    if source.get("file") == "profile":
        return f"profile's choice: {source.get('pointer', '')}"
    return str(source.get("file", "")) + (f"#{source['pointer']}" if source.get("pointer") else "")


def source_key(source: dict[str, Any]) -> str:
    return f"{source.get('file', '')}#{source.get('pointer', '')}"


def split_pointer(pointer: str) -> tuple[str, str]:
    """``"/a/b (line 12)"`` -> ``("/a/b", "line 12")``; no annotation -> ``(pointer, "")``."""
    m = re.match(r"^(.*?)\s+\((.*)\)\s*$", pointer, re.S)
    return (m.group(1), m.group(2)) if m else (pointer, "")


def pretty_body(body: Any) -> str:
    """A body for reading: JSON pretty-printed, anything else as text, long ones cut."""
    if body is None:
        return ""
    if isinstance(body, str):
        parsed, error = parse_json(body)
        text = body if error else json.dumps(parsed, indent=2, ensure_ascii=False)
    else:
        text = json.dumps(body, indent=2, ensure_ascii=False)
    if len(text) > BODY_LIMIT:
        text = text[:BODY_LIMIT] + f"\n… ({len(text) - BODY_LIMIT} more characters; see the case file)"
    return text


def truncate(text: str, limit: int = EXCERPT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


class SpecExcerpts:
    """Spec files (the summary's, read once) and the excerpts their pointers name."""

    def __init__(self, spec_rel: str | None, spec_text: str | None) -> None:
        self.spec_rel = spec_rel
        self._texts: dict[str, str | None] = {}
        self._docs: dict[str, Any] = {}
        if spec_rel and spec_text is not None:
            self._texts[spec_rel] = spec_text

    def text(self, rel: str) -> str | None:
        if rel not in self._texts:
            path = (DATA_ROOT / rel).resolve()
            try:
                path.relative_to(DATA_ROOT)  # only files of the project (its profiles and specs)
                self._texts[rel] = path.read_text(encoding="utf-8")
            except (ValueError, OSError):
                self._texts[rel] = None
        return self._texts[rel]

    def doc(self, rel: str) -> Any:
        if rel not in self._docs:
            text = self.text(rel)
            parsed: Any = None
            if text is not None:
                try:
                    parsed = json.loads(text) if rel.endswith(".json") else load_yaml(text)
                except (ValueError, yaml.YAMLError):
                    parsed = None
            self._docs[rel] = parsed
        return self._docs[rel]

    def excerpt(self, rel: str, pointer: str) -> tuple[str, str]:
        """(excerpt, error): the dumped value at ``pointer`` or a reason it has none."""
        doc = self.doc(rel)
        if doc is None:
            return "", f"spec file {rel} could not be read"
        bare, _ = split_pointer(pointer)
        for candidate in dict.fromkeys((bare, pointer)):
            try:
                value = resolve_pointer(doc, candidate)
            except SpecError:
                continue
            if isinstance(value, str):
                dumped = value
            elif rel.endswith(".json"):
                dumped = json.dumps(value, indent=2, ensure_ascii=False)
            else:
                dumped = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100)
            return truncate(dumped.rstrip("\n")), ""
        return "", f"pointer {bare!r} does not resolve in {rel}"

    def lines(self, rel: str, annotation: str) -> tuple[int, str] | None:
        """For an annotation naming ``line N``: (N, the numbered lines around it, N marked)."""
        m = re.search(r"\blines?\s+(\d+)(?:\s*[-–]\s*(\d+))?", annotation)
        text = self.text(rel)
        if not m or text is None:
            return None
        first = int(m.group(1))
        last = int(m.group(2) or first)
        all_lines = text.splitlines()
        if not 1 <= first <= len(all_lines):
            return None
        lo, hi = max(1, first - LINE_CONTEXT), min(len(all_lines), last + LINE_CONTEXT)
        width = len(str(hi))
        out = []
        for n in range(lo, hi + 1):
            row = e(f"{n:>{width}} | {all_lines[n - 1]}")
            out.append(f"<mark>{row}</mark>" if first <= n <= last else row)
        return first, truncate("\n".join(out), EXCERPT_LIMIT * 2)


def level_counts(summary: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per-level counts: the summary's ``levels`` when present, else counted here."""
    given = summary.get("levels")
    out: dict[str, dict[str, int]] = {}
    for level in LEVELS:
        row = given.get(level) if isinstance(given, dict) else None
        if isinstance(row, dict):
            out[level] = {key: int(row.get(key, row.get(key.rstrip("s"), 0)) or 0)
                          for key, _ in LEVEL_COLUMNS}
            continue
        counts = dict.fromkeys((k for k, _ in LEVEL_COLUMNS), 0)
        for req in summary.get("requirements", []):
            if req.get("level") == level:
                status = req.get("status", "")
                key = ("expected_failures" if status == "expected_failure"
                       else "not_applicable" if req.get("declared") else status)
                if key in counts:
                    counts[key] += 1
        out[level] = counts
    return out


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def fmt_number(value: Any, unit: str = "") -> str:
    if value is None or value == "":
        return "—"
    return f"{value}{unit}"


def pct(value: Any) -> str:
    """100.0 -> "100%", 68.5 -> "68.5%"."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "—"
    return f"{number:.1f}".rstrip("0").rstrip(".") + "%"


def coverage_text(summary: dict[str, Any]) -> str:
    """"statement map: 143 of 143 (100%); exercised by this run: 98 of 143 (69%); 17 untestable"."""
    cov, run = summary.get("coverage"), summary.get("coverage_run")
    if not isinstance(cov, dict):
        return ""
    parts = [f"statement map: {cov.get('covered')} of {cov.get('testable')} testable statements "
             f"({pct(cov.get('percent'))})"]
    if isinstance(run, dict):
        parts.append(f"exercised by this run: {run.get('covered')} of {run.get('testable')} "
                     f"({pct(run.get('percent'))})")
    if cov.get("untestable"):
        parts.append(f"{cov['untestable']} untestable")
    if cov.get("deferred"):
        parts.append(f"{cov['deferred']} deferred to a later part")
    return "; ".join(parts)


def not_reached(summary: dict[str, Any]) -> list[str]:
    """Why rows were not run to a verdict, as summary.json says it (``breakdown``'s words; a
    summary written before it carried them is counted the same way here)."""
    given = summary.get("not_reached")
    if isinstance(given, list):
        return [str(line) for line in given]
    untested = summary.get("untested_reasons")
    if not isinstance(untested, dict):  # older still: by status alone
        untested = {"other": sum(r.get("status") == "untested" for r in summary.get("requirements", []))}
    blocked = summary.get("blocked_causes")
    if not isinstance(blocked, dict):
        blocked = {"set-up refused": sum(r.get("status") == "blocked"
                                         for r in summary.get("requirements", []))}
    declared_off = summary.get("not_applicable") if isinstance(summary.get("not_applicable"), dict) else {}
    return breakdown({k: int(v) for k, v in untested.items() if v},
                     {k: int(v) for k, v in blocked.items() if v},
                     {k: int(v) for k, v in (declared_off or {}).items() if v})


def several(summary: dict[str, Any]) -> bool:
    """The run spoke more than one binding: rows are named ``ID[binding]``."""
    return len([b for b in summary.get("bindings") or [] if b]) > 1


def row_name(req: dict[str, Any], summary: dict[str, Any]) -> str:
    rid = str(req.get("id", ""))
    return f"{rid}[{req['binding']}]" if several(summary) and req.get("binding") else rid


def binding_attr(req: dict[str, Any], summary: dict[str, Any]) -> str:
    return f' data-binding="{e(req["binding"])}"' if several(summary) and req.get("binding") else ""


def render_bindings(summary: dict[str, Any]) -> str:
    """A run over several bindings: each binding's verdict, grade and counts, and a switch
    that shows one binding's rows only (every row shows without script)."""
    if not several(summary):
        return ""
    blocks = summary.get("by_binding") or {}
    names = [str(b) for b in summary.get("bindings") or [] if b]
    rows = []
    for name in names:
        block = blocks.get(name) or {}
        counts = block.get("counts") or {}
        tally = ", ".join(f"{counts.get(k, 0)} {label}" for k, label in LEVEL_COLUMNS if counts.get(k))
        grade = str(block.get("grade") or "ungraded")
        why = "; ".join(block.get("not_reached") or [])
        rows.append(f"<tr data-binding=\"{e(name)}\"><th class=mono>{e(name)}</th>"
                    f"<td><strong>{e(block.get('verdict', ''))}</strong></td>"
                    f'<td><span class="v {GRADE_CLASS.get(grade, "g-none")}">{e(grade)}</span></td>'
                    f"<td>{e(tally)}" + (f"<div class=note>{e(why)}</div>" if why else "") + "</td></tr>")
    css = "".join(f'body[data-binding="{e(n)}"] [data-binding]:not([data-binding="{e(n)}"]){{display:none}}'
                  for n in names)
    buttons = "".join(f'<button type=button data-b="{e(n)}" onclick="showBinding(\'{e(n)}\')">{e(n)}</button>'
                      for n in names)
    return (f"<style>{css}</style><section id=bindings><h2>Bindings ({len(names)})</h2>"
            "<p class=note>one run over each binding: every requirement is a row per binding</p>"
            "<table class=bindings><tr><th>binding</th><th>verdict</th><th>grade</th><th>rows</th></tr>"
            + "".join(rows) + "</table>"
            f'<div id=switch class=note>show: <button type=button class=on data-b="" '
            f"onclick=\"showBinding('')\">every binding</button>{buttons}</div></section>")


def render_header(summary: dict[str, Any], grade: str, levels: dict[str, dict[str, int]]) -> str:
    """Title, verdict, grade and counts, the few facts a reader needs first; the rest of
    the run's particulars folded below them."""
    spec = summary.get("spec") or {}
    tool = summary.get("tool") or {}
    counts = summary.get("counts") or {}
    total = len(summary.get("requirements", []))
    counted = "rows (requirement and binding)" if several(summary) else "requirements"
    verdict = summary.get("verdict", "")
    agent = summary.get("agent") if isinstance(summary.get("agent"), dict) else {}
    facts = [("Target", f"<span class=mono>{e(summary.get('target'))}</span>")]
    if agent:
        said = " ".join(x for x in (str(agent.get("name") or ""),
                                    f"version {agent['version']}" if agent.get("version") else "") if x)
        where = (f" <span class=note>(its self-description: <span class=mono>{e(agent['url'])}</span>)</span>"
                 if agent.get("url") else "")
        facts.append(("Agent", f"<strong>{e(said or 'unnamed')}</strong>{where}"))
    facts += [
        ("Spec", e(spec.get("title") or summary.get("profile") or "")),
        ("Date", e(summary.get("started_at"))),
    ]
    bindings = [str(b) for b in summary.get("bindings") or [] if b]
    if bindings:
        facts.append(("Bindings" if len(bindings) > 1 else "Binding", e(", ".join(bindings))))
    cov = coverage_text(summary)
    if cov:
        facts.append(("Spec coverage", e(cov)))
    if summary.get("grade_note"):
        facts.append(("Grade", f"<strong>{e(summary['grade_note'])}</strong>"))
    details = [
        ("Profile", e(summary.get("profile"))),
        ("Binding", e(", ".join(bindings) or summary.get("binding") or "—")),
        ("Spec document", f"<span class=mono>{e(Path(str(spec.get('path') or '')).name)}</span> "
                          "<span class=note>(sha256 "
                          f"<span class=mono>{e(spec.get('sha256'))}</span>)</span>"),
        ("Seed", e(summary.get("seed"))),
        ("Budget", e(summary.get("budget"))),
        ("Gate level", e((summary.get("level") or "").upper() or "—")),
        ("Duration", e(fmt_number(summary.get("duration_s"), " s"))),
        ("Exchanges",
         e(f"{fmt_number(summary.get('exchanges'))} ({fmt_number(summary.get('exchanges_per_s'))}/s)")),
        ("Tool", e(f"{tool.get('name', 'conformance')} {tool.get('version', '')}".strip())),
    ]
    if summary.get("config"):
        details.insert(2, ("Config", f"<span class=mono>{e(summary['config'])}</span>"))
    banners = "".join(f"<div class=banner><strong>{label}:</strong> {e(summary[key])}</div>"
                      for key, label in (("stopped", "Stopped"), ("unreachable", "Unreachable"))
                      if summary.get(key))
    banners += "".join(f"<div class=banner><strong>Credential {e(label)}:</strong> {e(why)}; "
                       "the requirements that send it are untested</div>"
                       for label, why in (summary.get("credentials_refused") or {}).items())
    live = summary.get("live") or {}
    reasons = summary.get("untested_reasons") or {}
    if summary.get("gate") == "live" and live.get("statement"):
        banners += f"<div class=banner><strong>Live gate:</strong> {e(live['statement'])}</div>"
    if any(reasons.values()) or any((summary.get("blocked_causes") or {}).values()):
        banners += ("<div class=banner><strong>Not run to a verdict:</strong> "
                    + e("; ".join(not_reached(summary)))
                    + " (each row's entry says why)</div>")
    banners += "".join(f"<div class=banner><strong>Not put back:</strong> {e(problem)}</div>"
                       for problem in summary.get("not_put_back") or [])
    brief = " · ".join(e(x) for x in (f"seed {summary.get('seed')}", f"budget {summary.get('budget')}",
                                       f"gate {(summary.get('level') or '—').upper()}",
                                       fmt_number(summary.get("duration_s"), " s"),
                                       f"{fmt_number(summary.get('exchanges'))} exchanges"))
    level_rows = "".join(
        f"<tr><th>{e(level)}</th>"
        + "".join(f"<td class=n>{levels[level][key]}</td>" for key, _ in LEVEL_COLUMNS)
        + "</tr>"
        for level in LEVELS
    )
    level_head = "".join(f"<th>{e(label)}</th>" for _, label in LEVEL_COLUMNS)
    tally = ", ".join(f"{counts.get(k, 0)} {label}" for k, label in LEVEL_COLUMNS if counts.get(k))
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
    more = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in details)
    return f"""<header>
<h1>{e(summary.get('profile'))} {e(summary.get('kind') or 'conformance')} report</h1>
<div class=note>run verdict: <strong>{e(verdict)}</strong>\
{' — ' + e(summary['verdict_reason']) if summary.get('verdict_reason') else ''}
 ({e(tally or 'no results')} of {total} {counted})</div>
{banners}
<div class=top>
<div id=grade class="{GRADE_CLASS.get(grade, 'g-none')}"><small>grade</small>{e(grade)}</div>
<table class=levels aria-label="counts per level"><tr><th>level</th>{level_head}</tr>{level_rows}</table>
</div>
<table class=facts>{rows}</table>
<details class=run id=run><summary>run details: {brief}</summary><table class=meta>{more}</table></details>
</header>"""


LIST_MESSAGE_LIMIT = 320  # characters of a message in the failure list (the details have it whole)


def clip(text: str, limit: int = LIST_MESSAGE_LIMIT) -> str:
    """``text`` cut at a word boundary near ``limit``, marked when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return f"{cut} … (the whole message is in its details)"


def render_failure_list(summary: dict[str, Any], fail_ids: dict[str, str], has_causes: bool) -> str:
    """The failures first: each failed (then expected-failure) requirement, MUST before
    SHOULD before MAY, with its message, linking to its detailed entry further down."""
    requirements = summary.get("requirements", [])
    order = {"failed": 0, "expected_failure": 1}
    failed = sorted((r for r in requirements if r.get("status") in order),
                    key=lambda r: (order[str(r.get("status"))],
                                   LEVELS.index(r["level"]) if r.get("level") in LEVELS else len(LEVELS)))
    items = []
    for req in failed:
        rid, status = row_name(req, summary), str(req.get("status"))
        ref = (f'<a class=mono href="#{e(fail_ids[rid])}">{e(rid)}</a>' if rid in fail_ids
               else f"<span class=mono>{e(rid)}</span>")
        message = (f"<div class=note>{breakable(clip(str(req['message'])))}</div>" if req.get("message")
                   else "")
        items.append(f'<li class="f-{e(status)}"{binding_attr(req, summary)}>'
                     f'<span class="v v-{e(status)}">{e(STATUS_LABEL.get(status, status))}</span> '
                     f"<span class=lvl>{e(req.get('level'))}</span> {ref} — "
                     f"<span class=title>{e(req.get('title'))}</span>{message}</li>")
    notes = []
    for line in not_reached(summary):
        where = (' (see <a href="#causes">root causes</a>)' if has_causes and " blocked: " in line
                 else "; each row's reason is in the requirements table" if " untested: " in line else "")
        notes.append(f"{e(line)}{where}")
    tail = "".join(f'<p class=note>{n}.</p>' for n in notes)
    head = f"<h2>Failures ({len(failed)})</h2>"
    body = f"<ol class=faillist>{''.join(items)}</ol>" if items else "<p class=note>none</p>"
    return f"<section id=failures>{head}{body}{tail}</section>"


def render_requirements(summary: dict[str, Any], src_ids: dict[str, str], fail_ids: dict[str, str]) -> str:
    """One table of all requirements, or, where the profile groups them (by surface,
    say), one table per group, in the order the groups first appear."""
    requirements = summary.get("requirements", [])
    groups = list(dict.fromkeys(str(r.get("group") or "") for r in requirements))
    if groups == [""]:
        return ("<section id=requirements><h2>Requirements</h2>"
                + requirements_table(requirements, src_ids, fail_ids, summary) + "</section>")
    parts = []
    for name in groups:
        members = [r for r in requirements if str(r.get("group") or "") == name]
        passed = sum(r.get("status") == "passed" for r in members)
        parts.append(f"<h3>{e(name or 'other')} <span class=note>({passed} of {len(members)} "
                     "passed)</span></h3>"
                     + requirements_table(members, src_ids, fail_ids, summary))
    return "<section id=requirements><h2>Requirements by group</h2>" + "".join(parts) + "</section>"


def requirements_table(requirements: list[dict[str, Any]], src_ids: dict[str, str],
                       fail_ids: dict[str, str], summary: dict[str, Any] | None = None) -> str:
    rows = []
    summary = summary or {}
    for req in requirements:
        status = str(req.get("status", ""))
        source = req.get("source") or {}
        rid = row_name(req, summary)
        id_cell = f'<a href="#{e(fail_ids[rid])}">{e(rid)}</a>' if rid in fail_ids else e(rid)
        notes = []
        if status != "passed" and req.get("message"):
            notes.append(breakable(req["message"]))
        baseline = req.get("baseline")
        if isinstance(baseline, dict):
            notes.append("baseline: " + e(baseline.get("reason")) + (
                f" (issue: <span class=mono>{e(baseline.get('issue'))}</span>)" if baseline.get("issue")
                else ""))
        src_line = (f'<div class=srcline>source: <a class=mono href="#{e(src_ids[source_key(source)])}">'
                    f"{breakable(source_text(source))}</a></div>")
        label = (STATUS_LABEL["not_applicable"] if req.get("declared")
                 else STATUS_LABEL.get(status, status.upper()))
        rows.append(
            f'<tr class="r-{e(status)}" id="{e(anchor("req", rid))}"{binding_attr(req, summary)}>'
            f'<td class="mono id">{id_cell}</td>'
            f'<td>{e(req.get("level"))}</td>'
            f"<td>{e(req.get('title'))}" + (f"<div class=note>{'<br>'.join(notes)}</div>" if notes else "")
            + f"{src_line}</td>"
            f'<td><span class="v v-{e(status)}">{e(label)}</span></td>'
            f"<td class=n>{e(req.get('exchanges', ''))}</td></tr>"
        )
    return ("<table><tr><th>ID</th><th>level</th><th>title and spec source</th><th>verdict</th>"
            "<th>exchanges</th></tr>"
            + "".join(rows) + "</table>")


def render_headers(headers: Any) -> str:
    if not headers:
        return "(none)"
    if isinstance(headers, dict):
        return "\n".join(f"{k}: {v}" for k, v in headers.items())
    return json.dumps(headers, indent=2, ensure_ascii=False)


def render_exchange(index: int, exchange: dict[str, Any], is_open: bool) -> str:
    req = exchange.get("request") or {}
    resp = exchange.get("response")
    status = resp.get("status") if isinstance(resp, dict) else None
    outcome = (f"→ {status}" if status is not None
               else f"→ no response{': ' + str(exchange['error']) if exchange.get('error') else ''}")
    elapsed = exchange.get("elapsed_ms")
    took = f" ({elapsed:.1f} ms)" if isinstance(elapsed, int | float) else ""
    left = (
        "<div><div class=lbl>request</div>"
        f"<pre>{e(req.get('method'))} {e(req.get('url'))}\n{e(render_headers(req.get('headers')))}</pre>"
        + (f"<div class=lbl>request body</div><pre class=body>{e(pretty_body(req.get('body')))}</pre>"
           if req.get("body") is not None else "")
        + "</div>"
    )
    if isinstance(resp, dict):
        right = (
            "<div><div class=lbl>response</div>"
            f"<pre>HTTP {e(resp.get('status'))}\n{e(render_headers(resp.get('headers')))}</pre>"
            + (f"<div class=lbl>response body</div><pre class=body>{e(pretty_body(resp.get('body')))}</pre>"
               if resp.get("body") is not None else "")
            + "</div>"
        )
    else:
        right = "<div><div class=lbl>response</div><pre>(none)</pre></div>"
    error = f"<div class=lbl>error</div><pre>{e(exchange['error'])}</pre>" if exchange.get("error") else ""
    return (
        f'<details class=exchange{" open" if is_open else ""}><summary>#{index} {e(req.get("method"))} '
        f"{e(req.get('url'))} {e(outcome)}{e(took)}</summary>"
        f"<div class=half>{left}{right}</div>{error}</details>"
    )


def render_kinds(failures: list[dict[str, Any]]) -> str:
    """Each typed failure: its kind beside its message (and sub-check, statement)."""
    items = []
    for f in failures:
        where = f"<span class=mono>{e(f['subcheck'])}</span>: " if f.get("subcheck") else ""
        statement = (f" <span class=note>(breaks <span class=mono>{e(f['statement'])}</span>)</span>"
                     if f.get("statement") else "")
        items.append(f"<li><span class=kind>{e(f.get('kind') or 'expectation')}</span> "
                     f"{where}{e(f.get('message'))}{statement}</li>")
    return f"<div class=lbl>failures ({len(failures)})</div><ul class=fails>{''.join(items)}</ul>"


def shown_path(path: Path) -> str:
    """``path`` relative to the current folder when it lies under it, else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def without_userinfo(target: str) -> str:
    """A target URL without ``user:password@`` (a replay line never carries a secret)."""
    try:
        parts = urlsplit(target)
    except ValueError:
        return target
    if "@" not in parts.netloc:
        return target
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def replay_line(case_path: Path, target: str, config: str | None) -> str:
    """The command that replays a case, to copy as it stands: the case path relative to
    the current folder where it can be, the run's ``--config`` when it had one."""
    words = ["conformance", "replay", shown_path(case_path), "--target", without_userinfo(target)]
    if config:
        words += ["--config", str(config)]
    return " ".join(shlex.quote(w) for w in words)


def render_failure(req: dict[str, Any], failures: list[dict[str, Any]], case: dict[str, Any] | None,
                   case_path: Path | None, target: str, fid: str, src_id: str,
                   config: str | None = None, summary: dict[str, Any] | None = None) -> str:
    """One section per case file: the requirement's failures that share it."""
    summary = summary or {}
    status = str(req.get("status", "failed"))
    failure = failures[0]
    message = (case or {}).get("message") or failure.get("message") or req.get("message") or ""
    single = len(failures) == 1 and not failure.get("subcheck")
    kind = f" <span class=kind>{e(failure.get('kind'))}</span>" if single and failure.get("kind") else ""
    statement = (f"<div class=note>breaks <span class=mono>{e(failure['statement'])}</span></div>"
                 if single and failure.get("statement") else "")
    parts = [
        f'<section class="failure{" xfail" if status == "expected_failure" else ""}" id="{e(fid)}"'
        f"{binding_attr(req, summary)}>",
        f'<h3><span class="v v-{e(status)}">{e(STATUS_LABEL.get(status, status.upper()))}</span> '
        f'<span class=mono>{e(req.get("id"))}</span>'
        + (f' <span class=bnd>{e(req["binding"])}</span>' if binding_attr(req, summary) else "")
        + f' ({e(req.get("level"))}) — {e(req.get("title"))}</h3>',
        f"<div class=lbl>message{kind}</div><pre class=message>{e(message)}</pre>{statement}",
    ]
    if not single:
        parts.append(render_kinds(failures))
    baseline = req.get("baseline")
    if isinstance(baseline, dict):
        parts.append(f"<div class=lbl>baseline</div><pre>{e(baseline.get('reason'))}"
                     + (f"\nissue: {e(baseline.get('issue'))}" if baseline.get("issue") else "") + "</pre>")
    source = req.get("source") or {}
    parts.append(f'<div class=srcline>spec source: <a class=mono href="#{e(src_id)}">'
                 f"{breakable(source_text(source))}</a></div>")
    if case is None:
        parts.append(f"<p class=note>case file {e(failure.get('case') or '(none)')} is missing or "
                     "unreadable.</p>")
        parts.append("</section>")
        return "\n".join(parts)
    seed = case.get("seed", "")
    replay = replay_line(case_path or Path(str(failure.get("case"))), str(case.get("target") or target),
                         config)
    parts.append(f"<div class=lbl>seed</div><pre>{e(seed)} (budget {e(case.get('budget'))})</pre>")
    parts.append(f"<div class=lbl>replay</div><pre class=replay>{e(replay)}</pre>")
    curl = case.get("curl") or []
    if curl:
        parts.append(f"<div class=lbl>curl ({len(curl)})</div>"
                     f"<div class=note>{e(CURL_NOTE)}</div><pre class=curl>{e(chr(10).join(curl))}</pre>")
    script = case_path.with_suffix(".sh") if case_path is not None else None
    if script is not None and script.is_file():
        parts.append("<div class=lbl>the whole sequence, in one paste</div>"
                     f"<div class=note>{e(SCRIPT_NOTE)}</div><pre class=script>"
                     f"{e(shlex.join(['bash', shown_path(script)]))}</pre>")
    exchanges = case.get("exchanges") or []
    parts.append(f"<div class=lbl>exchanges ({len(exchanges)})</div>")
    for i, ex in enumerate(exchanges, 1):
        if isinstance(ex, dict):
            parts.append(render_exchange(i, ex, is_open=len(exchanges) <= 6 or i > len(exchanges) - 2))
    parts.append("</section>")
    return "\n".join(parts)


AFFECTED_SHOWN = 8  # requirements named in a root-cause row before the rest fold away
CURL_NOTE = ("each request as sent, to paste into a shell: secrets are named by environment variable "
             "($CONFORMANCE_TOKEN for the main token, $CONFORMANCE_CREDENTIAL_<LABEL> for the others), "
             "$TARGET is the target of an in-process run")
SCRIPT_NOTE = ("sends the failing example's requests in order, each id the target gives back carried "
               "into the requests after it in place of the original run's (set the same variables)")


def render_root_causes(summary: dict[str, Any], fail_ids: dict[str, str]) -> str:
    """Failed and blocked requirements grouped by what the target did, largest first:
    the cause in words (``label``), the requests in common, the requirements it touched."""
    causes = [c for c in summary.get("root_causes") or [] if isinstance(c, dict)]
    if not causes:
        return ""
    status = {row_name(r, summary): str(r.get("status")) for r in summary.get("requirements", [])}

    def common(c: dict[str, Any]) -> str:
        shared = c.get("request_in_common") or []
        return (f"<div class=note>requests in common: <span class=mono>{e('; '.join(shared))}</span></div>"
                if shared else "")

    def link(rid: str) -> str:
        target = fail_ids.get(rid) or anchor("req", rid)
        return f'<a class=mono href="#{e(target)}">{e(rid)}</a>'

    def affected(ids: list[str]) -> str:
        shown = ", ".join(link(r) for r in ids[:AFFECTED_SHOWN])
        if len(ids) <= AFFECTED_SHOWN:
            return shown
        rest = ", ".join(link(r) for r in ids[AFFECTED_SHOWN:])
        return (f"{shown} <details><summary class=note>and {len(ids) - AFFECTED_SHOWN} "
                f"more</summary>{rest}</details>")

    def tally(ids: list[str]) -> str:
        by = {s: sum(status.get(r) == s for r in ids) for s in ("failed", "blocked")}
        parts = [f"{n} {s}" for s, n in by.items() if n]
        return f"<div class=note>{e(', '.join(parts))}</div>" if len(parts) > 1 else ""

    rows = []
    for c in causes:
        ids = [str(r) for r in c.get("requirements") or []]
        words = c.get("label") or c.get("signature")
        rows.append(f"<tr><td class=n>{e(c.get('count', len(ids)))}{tally(ids)}</td>"
                    f"<td><span class=label>{e(words)}</span>{common(c)}</td>"
                    f"<td class=affected>{affected(ids)}</td></tr>")
    return ("<section id=causes><h2>Root causes</h2><p class=note>failed and blocked requirements grouped "
            "by the answer that broke them: fixing one cause may clear every requirement in its row</p>"
            "<table class=causes><tr><th>requirements</th><th>cause</th><th>affected</th>"
            f"</tr>{''.join(rows)}</table></section>")


def render_sources(summary: dict[str, Any], src_ids: dict[str, str], specs: SpecExcerpts) -> str:
    seen: dict[str, dict[str, Any]] = {}
    users: dict[str, list[str]] = {}
    for req in summary.get("requirements", []):
        source = req.get("source") or {}
        key = source_key(source)
        seen.setdefault(key, source)
        users.setdefault(key, []).append(str(req.get("id", "")))
    blocks = []
    for key, source in seen.items():
        file, pointer = str(source.get("file", "")), str(source.get("pointer", ""))
        used = ", ".join(users[key])
        head = (f'<summary><span class=mono>{breakable(source_text(source))}</span> '
                f'<span class=note>— {e(used)}</span></summary>')
        if file == "profile":
            body = f"<div class=note>decided by the profile (the spec is silent)</div><pre>{e(pointer)}</pre>"
        else:
            body_parts = []
            _, annotation = split_pointer(pointer)
            around = specs.lines(file, annotation) if annotation else None
            if around:
                body_parts.append(f"<div class=lbl>{e(file)} around line {around[0]}</div>"
                                  f"<pre>{around[1]}</pre>")
            excerpt, error = specs.excerpt(file, pointer)
            if error:
                body_parts.append(f"<div class=note>{e(error)}</div>")
            elif around:  # the marked lines are the point; the whole value stays folded
                body_parts.append("<details><summary class=note>whole value at "
                                  f"{e(split_pointer(pointer)[0] or '/')}</summary>"
                                  f"<pre>{e(excerpt)}</pre></details>")
            else:
                body_parts.append(f"<div class=lbl>value at {e(split_pointer(pointer)[0] or '/')}</div>"
                                  f"<pre>{e(excerpt)}</pre>")
            body = "".join(body_parts)
        blocks.append(f'<details class=src id="{e(src_ids[key])}">{head}{body}</details>')
    return "<section id=spec><h2>Spec sources</h2>" + "\n".join(blocks) + "</section>"


def write_html(report_dir: Path, spec_text: str | None = None, summary: dict[str, Any] | None = None) -> Path:
    """Write ``report_dir/report.html`` from its summary.json (or ``summary``: a fuzz campaign's)
    and cases/ (overwriting any); ``spec_text`` is the spec's text when the caller has it (else
    it is read from the project)."""
    report_dir = Path(report_dir)
    summary = summary if summary is not None else read_json(report_dir / "summary.json")
    if summary is None:
        raise ValueError(f"{report_dir / 'summary.json'} is missing or is not a JSON object")
    spec_rel = (summary.get("spec") or {}).get("path")
    specs = SpecExcerpts(spec_rel, spec_text)
    grade = str(summary.get("grade") or "ungraded")
    requirements = [r for r in summary.get("requirements", []) if isinstance(r, dict)]
    summary = {**summary, "requirements": requirements}
    src_ids = {source_key(r.get("source") or {}): anchor("src", source_key(r.get("source") or {}))
               for r in requirements}
    fail_ids: dict[str, str] = {}
    failure_html = []
    for req in sorted(requirements,
                      key=lambda r: (STATUS_ORDER.index(r["status"]) if r.get("status") in STATUS_ORDER
                                     else len(STATUS_ORDER))):
        failures = req.get("failures") or []
        if not failures and req.get("status") in ("failed", "expected_failure"):
            failures = [{"case": None, "message": req.get("message", "")}]
        by_case: dict[Any, list[dict[str, Any]]] = {}  # the typed failures of one case render together
        for failure in (f for f in failures if isinstance(f, dict)):
            by_case.setdefault(failure.get("case"), []).append(failure)
        for n, group in enumerate(by_case.values()):
            rid = row_name(req, summary)
            fid = anchor("fail", rid + (f"-{n}" if n else ""))
            fail_ids.setdefault(rid, fid)
            case_path = report_dir / group[0]["case"] if group[0].get("case") else None
            case = read_json(case_path) if case_path else None
            failure_html.append(render_failure(req, group, case, case_path, str(summary.get("target", "")),
                                               fid, src_ids[source_key(req.get("source") or {})],
                                               summary.get("config"), summary))
    details_section = (
        "<section id=details><h2>Failure details</h2>" + "\n".join(failure_html) + "</section>"
        if failure_html else ""
    )
    causes = render_root_causes(summary, fail_ids)
    title = f"{summary.get('profile', '')} {summary.get('kind') or 'conformance'} — {grade}"
    nav = ['<a href="#failures">failures</a>'] + (['<a href="#causes">root causes</a>'] if causes else []) + [
        '<a href="#requirements">requirements</a>'] + (
        [f'<a href="#details">failure details ({len(failure_html)})</a>'] if failure_html else []) + [
        '<a href="#spec">spec sources</a>', '<a href="#run">run details</a>']
    page = f"""<!DOCTYPE html>
<html lang=en>
<head>
<meta charset=utf-8>
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name=viewport content="width=device-width, initial-scale=1">
<title>{e(title)}</title>
<style>{CSS}</style>
<script>{JS}</script>
</head>
<body><main>
{render_header(summary, grade, level_counts(summary))}
<nav class=note>{" · ".join(nav)}</nav>
{render_bindings(summary)}
{render_failure_list(summary, fail_ids, bool(causes))}
{causes}
{render_requirements(summary, src_ids, fail_ids)}
{details_section}
{render_sources(summary, src_ids, specs)}
</main></body>
</html>
"""
    path = report_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
