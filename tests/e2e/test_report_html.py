"""report.html and badge.svg, written from a real run of the bindu reference with two faults,
and the page opened in a real headless browser."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conformance.report.badge import COLOURS, write_badge
from conformance.report.html import breakable, write_html

ROOT = Path(__file__).resolve().parents[2]
FAILING = ("BINDU-CANCEL-TERMINAL", "BINDU-HISTORY-LENGTH")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    report_dir = tmp_path_factory.mktemp("html") / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "bindu", "--budget", "quick",
         "--fault", "cancel_terminal_succeeds", "--fault", "history_length_ignored",
         "--only", "BINDU-CANCEL-TERMINAL", "--only", "BINDU-HISTORY-LENGTH", "--only", "BINDU-RPC-ID-ECHO",
         "--report", str(report_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (report_dir / "summary.json").is_file()
    write_html(report_dir)  # the run may already have written one: overwriting is fine
    write_badge(report_dir, summary_of(report_dir))
    return report_dir


def summary_of(report_dir: Path) -> dict:
    return json.loads((report_dir / "summary.json").read_text(encoding="utf-8"))


def grade_of(report_dir: Path) -> str:
    return summary_of(report_dir).get("grade") or "ungraded"


def case_of(report_dir: Path, rid: str) -> dict:
    return json.loads((report_dir / "cases" / f"{rid}.json").read_text(encoding="utf-8"))


def pretty(body: str) -> str:
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        return body


def last_request_body(report_dir: Path, rid: str) -> str:
    bodies = [ex["request"]["body"] for ex in case_of(report_dir, rid)["exchanges"]
              if ex["request"].get("body")]
    return pretty(bodies[-1])


class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()
        self.classes: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "poster", "data", "formaction") and value:
                self.refs.append((tag, name, value))
            if name == "id" and value:
                self.ids.add(value)
            if name == "class" and value:
                self.classes.extend(value.split())


def parse(path: Path) -> tuple[str, Collector]:
    text = path.read_text(encoding="utf-8")
    collector = Collector()
    collector.feed(text)
    return text, collector


def test_html_is_self_contained(report: Path) -> None:
    text, page = parse(report / "report.html")
    assert page.refs, "expected anchor links"
    for tag, name, value in page.refs:
        assert value.startswith("#"), f"<{tag} {name}={value!r}> is not a local anchor"
        assert value[1:] in page.ids, f"link {value} has no target"
    assert not {"link", "img", "iframe", "object", "embed", "audio", "video", "source"} & set(page.tags)
    assert "@import" not in text and "url(" not in text
    assert (text.count("<script") <= 1
            and len(text.split("<script>")[1].split("</script>")[0].splitlines()) <= 5)


def test_html_shows_grade_levels_and_failures(report: Path) -> None:
    text, page = parse(report / "report.html")
    summary = summary_of(report)
    assert "grade" in page.ids
    grade_block = text.split('id=grade', 1)[1].split("</div>", 1)[0]
    assert html.escape(grade_of(report)) in grade_block
    for key in ("MUST", "SHOULD", "MAY", "expected failures", summary["spec"]["sha256"], summary["target"]):
        assert key in text
    assert page.classes.count("failure") == len(FAILING)
    assert page.classes.count("exchange") == sum(len(case_of(report, rid)["exchanges"]) for rid in FAILING)
    for rid in FAILING:
        case = case_of(report, rid)
        assert html.escape(case["message"]) in text
        assert (html.escape(f"conformance replay {report / 'cases' / (rid + '.json')} --target reference")
                in text)
        for line in case["curl"]:
            assert html.escape(line) in text
        for ex in case["exchanges"]:
            for body in (ex["request"].get("body"), (ex.get("response") or {}).get("body")):
                if body:
                    assert html.escape(pretty(body)) in text
    # the spec excerpt of a failing requirement is shown in place, not linked out
    assert "TaskNotCancelable" in text.split('id=spec', 1)[1]
    assert "historyLength" in text.split('id=spec', 1)[1]
    assert "&lt;redacted:" in text  # redacted secrets stay redacted


def test_html_handles_baseline_and_missing_fields(tmp_path: Path) -> None:
    summary = {
        "profile": "bindu", "spec": {"path": "specs/bindu/openapi.yaml", "sha256": "x"}, "target": "<t>",
        "requirements": [
            {"id": "A-1", "level": "MUST", "title": "t <b>", "status": "expected_failure",
             "source": {"file": "specs/bindu/openapi.yaml", "pointer": "/info/description (line 148)"},
             "baseline": {"reason": "known <bug>", "issue": "https://example.invalid/1"},
             "failures": [{"case": "cases/missing.json", "message": "m"}]},
            {"id": "A-2", "level": "SHOULD", "title": "p", "status": "passed",
             "source": {"file": "profile", "pointer": "the profile decides"}},
            {"id": "A-3", "level": "MAY", "title": "q", "status": "untested",
             "source": {"file": "specs/bindu/openapi.yaml", "pointer": "/no/such"}},
        ],
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    text, page = parse(write_html(tmp_path, spec_text=(ROOT / "specs/bindu/openapi.yaml").read_text()))
    assert ("ungraded" in text and "known &lt;bug&gt;" in text and "t &lt;b&gt;" in text
            and "&lt;t&gt;" in text)
    assert "the profile decides" in text and "does not resolve" in text
    assert "<mark>148 |" in text  # the annotated line, marked in place
    assert all(v.startswith("#") for _, _, v in page.refs)
    badge = ET.parse(write_badge(tmp_path, summary)).getroot()
    assert "ungraded" in "".join(badge.itertext())


@pytest.mark.parametrize("grade", sorted(COLOURS))
def test_badge_colour_and_text(tmp_path: Path, grade: str) -> None:
    path = write_badge(tmp_path,
                       {"profile": "bindu", "grade": grade, "started_at": "2026-01-02T03:04:05+00:00"})
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = "".join(root.itertext())
    assert "bindu conformance" in texts and f"{grade} · 2026-01-02" in texts
    assert any(el.get("fill") == COLOURS[grade] for el in root.iter())
    raw = path.read_text(encoding="utf-8")
    assert "href" not in raw and "<image" not in raw


def test_badge_of_the_run(report: Path) -> None:
    root = ET.parse(report / "badge.svg").getroot()
    summary = summary_of(report)
    assert f"{grade_of(report)} · {summary['started_at'][:10]}" in "".join(root.itertext())


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium not installed (Debian package chromium; .ci/run installs it)")
    return exe


def run_chromium(exe: str, profile_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile_dir}", *args],
        capture_output=True, text=True, timeout=60,
    )


def test_headless_browser_renders_report(report: Path, tmp_path: Path) -> None:
    exe = chromium()
    page = (report / "report.html").resolve().as_uri()
    dom = run_chromium(exe, tmp_path / "profile-dom", "--dump-dom", page)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert grade_of(report) in dom.stdout
    assert 'id="grade"' in dom.stdout
    body = last_request_body(report, "BINDU-CANCEL-TERMINAL")
    assert html.escape(body, quote=False) in dom.stdout
    assert 'class="failure"' in dom.stdout and 'class="exchange"' in dom.stdout

    shot = tmp_path / "shot.png"
    run = run_chromium(exe, tmp_path / "profile-shot",
                       f"--screenshot={shot}", "--window-size=1280,2000", page)
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.is_file() and shot.stat().st_size > 1000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_failures_and_root_causes_come_first_and_read_in_words(report: Path) -> None:
    text, page = parse(report / "report.html")
    summary = summary_of(report)
    order = [text.index(f"<section id={name}>")
             for name in ("failures", "causes", "requirements", "details", "spec")]
    assert order == sorted(order), "failures, root causes, requirements, failure details, spec sources"
    listing = text.split("<section id=failures>", 1)[1].split("</section>", 1)[0]
    for rid in FAILING:  # each failure: level, id linking to its detailed entry, title and message
        (req,) = [r for r in summary["requirements"] if r["id"] == rid]
        link = listing.split(f">{rid}</a>", 1)[0].rsplit('href="#', 1)[1].split('"', 1)[0]
        assert link in page.ids and link.startswith("fail-")
        item = (listing.split(f">{rid}</a>", 1)[0].rsplit("<li", 1)[1]
                + listing.split(f">{rid}</a>", 1)[1].split("</li>", 1)[0])
        assert f"<span class=lvl>{req['level']}</span>" in item and html.escape(req["title"]) in item
        assert breakable(req["message"][:80]) in item
    causes = text.split("<section id=causes>", 1)[1].split("</section>", 1)[0]
    for cause in summary["root_causes"]:
        assert cause["label"] and html.escape(cause["label"]) in causes
    # the spec source never breaks inside a word: break opportunities only after / and #
    assert "break-all" not in text and "source: <a class=mono" in text
    assert "specs/<wbr>bindu/<wbr>openapi.yaml#<wbr>/<wbr>" in text


def _case_report(root: Path, config: str | None, target: str = "reference") -> Path:
    report_dir = root / "runs" / "r"
    (report_dir / "cases").mkdir(parents=True)
    case = {"target": target, "seed": 7, "budget": "quick", "message": "m", "exchanges": [], "curl": []}
    (report_dir / "cases" / "A-1.json").write_text(json.dumps(case), encoding="utf-8")
    summary = {"profile": "bindu", "spec": {"path": "specs/bindu/openapi.yaml", "sha256": "x"},
               "target": target,
               "config": config, "requirements": [
                   {"id": "A-1", "level": "MUST", "title": "t", "status": "failed", "message": "m",
                    "source": {"file": "specs/bindu/openapi.yaml", "pointer": "/info"},
                    "failures": [{"case": "cases/A-1.json", "kind": "wrong_status", "message": "m"}]}]}
    (report_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return report_dir


def replay_of(report_dir: Path) -> str:
    text = write_html(report_dir).read_text(encoding="utf-8")
    return html.unescape(text.split("<pre class=replay>", 1)[1].split("</pre>", 1)[0])


def test_the_replay_line_works_as_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report_dir = _case_report(tmp_path, "my conf.yaml")
    monkeypatch.chdir(tmp_path)  # the folder the run was started in: the case path relative to it
    assert (replay_of(report_dir)
            == "conformance replay runs/r/cases/A-1.json --target reference --config 'my conf.yaml'")
    assert replay_of(Path("runs/r")) == replay_of(report_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # read from another folder: the path as given
    assert replay_of(report_dir) == (f"conformance replay {report_dir / 'cases' / 'A-1.json'} "
                                     "--target reference --config 'my conf.yaml'")


def test_the_replay_line_has_no_config_when_the_run_had_none_and_never_a_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    report_dir = _case_report(tmp_path, None,
                              target="https://vendor:s3cret-token@agent.example.invalid:8443/a2a")
    line = replay_of(report_dir)
    assert line == "conformance replay runs/r/cases/A-1.json --target https://agent.example.invalid:8443/a2a"
    assert ("s3cret"
            not in write_html(report_dir).read_text(encoding="utf-8").split("<pre class=replay>", 1)[1][:300])


def test_a_run_over_several_bindings_reads_as_one_page(tmp_path: Path) -> None:
    """One report.html for every binding: the agent's name, version and where it says so in
    the header, the spec by its title (no file path), each binding's verdict and a switch
    that shows one binding's rows; each row and failure names its binding."""
    from datetime import UTC, datetime

    from conformance.failures import Failure
    from conformance.report.summary import Result, build_summary, write_summary
    from conformance.run.profiles import load_profile
    from conformance.run.runner import Verdict

    profile = load_profile("a2a")
    card = next(r for r in profile.requirements if r.id == "A2A-CARD-SERVED")
    results = [Result(card, Verdict("passed"), binding="jsonrpc"),
               Result(card, Verdict("failed", "the card is not an AgentCard",
                                    failures=[Failure("schema_mismatch", "the card is not an AgentCard")]),
                      binding="grpc")]
    summary = build_summary(profile, results, target="http://127.0.0.1:9", seed=1, budget="quick",
                            gate="must", started_at=datetime.now(UTC), duration_s=1.0, exchanges=2,
                            bindings=["jsonrpc", "grpc"],
                            agent={"name": "Echo <agent>", "version": "2.1",
                                   "url": "http://127.0.0.1:9/.well-known/x"})
    write_summary(tmp_path, summary)
    text, page = parse(write_html(tmp_path))
    facts = text.split("<table class=facts>", 1)[1].split("</table>", 1)[0]
    assert "Echo &lt;agent&gt; version 2.1" in facts and "http://127.0.0.1:9/.well-known/x" in facts
    spec = facts.split("<th>Spec</th>", 1)[1].split("</tr>", 1)[0]
    assert html.escape(profile.title) in spec and "specs/" not in spec and ".json" not in spec
    assert "<th>Bindings</th><td>jsonrpc, grpc</td>" in facts
    bindings = text.split("<section id=bindings>", 1)[1].split("</section>", 1)[0]
    assert 'data-b="jsonrpc"' in bindings and 'data-b="grpc"' in bindings and "showBinding" in bindings
    rows = text.split("<section id=requirements>", 1)[1]
    assert 'data-binding="grpc"' in rows and ">A2A-CARD-SERVED[grpc]<" in rows
    assert "<span class=bnd>grpc</span>" in text.split("<section id=details>", 1)[1]
    assert all(v.startswith("#") and v[1:] in page.ids for _, _, v in page.refs)
