"""The docs a new user follows: docs/ci.md's shell recipe really gates the served
reference, the exit-code tables list exactly the codes the tool uses, the README names
every credential label and config key, and docs/architecture.md stands on its own."""
import os
import re
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from conformance.report.summary import EXIT_CODES
from conformance.run.config import KNOWN_KEYS
from tests.conftest import ROOT, free_port

README = ROOT / "README.md"
CI = ROOT / "docs" / "ci.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PROFILES = ("bindu", "canon-verbs", "wever-connect", "agent-plaza")


def section(text: str, heading: str) -> str:
    """The text under a markdown heading, up to the next heading of the same or a higher
    level (a `#` line inside a fenced block is no heading)."""
    lines, level, start, fence = text.splitlines(keepends=True), 0, None, False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fence = not fence
        match = None if fence else re.match(r"(#+) (.*?)\s*$", line)
        if match and start is None and match.group(2) == heading:
            level, start = len(match.group(1)), i + 1
        elif match and start is not None and len(match.group(1)) <= level:
            return "".join(lines[start:i])
    assert start is not None, f"no heading {heading!r}"
    return "".join(lines[start:])


def fenced(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, re.M | re.S)


def exit_code_tables(text: str) -> list[list[int]]:
    """The codes of every `| code | meaning |` table, in order."""
    tables = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(r"\|\s*code\s*\|\s*meaning\s*\|", line.strip()):
            codes = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                match = re.fullmatch(r"\|\s*`(\d+)`\s*\|(.*)\|", row.strip())
                assert match and match.group(2).strip(), f"exit-code row without a code or a meaning: {row!r}"
                codes.append(int(match.group(1)))
            tables.append(codes)
    return tables


@pytest.mark.parametrize("doc", [README, CI], ids=lambda p: p.name)
def test_exit_code_tables_list_exactly_the_codes_of_the_tool(doc: Path) -> None:
    tables = exit_code_tables(doc.read_text(encoding="utf-8"))
    assert tables, f"{doc.name} has no exit-code table"
    for codes in tables:
        assert sorted(codes) == sorted(EXIT_CODES), (f"{doc.name}: {codes} but the tool exits with "
                                                     f"{sorted(EXIT_CODES)}")
        assert len(codes) == len(set(codes))


def test_ci_doc_names_allow_untested() -> None:
    assert "--allow-untested" in CI.read_text(encoding="utf-8")


@pytest.mark.parametrize("profile", PROFILES)
def test_readme_names_every_credential_label(profile: str) -> None:
    readme = README.read_text(encoding="utf-8")
    declared = yaml.safe_load((ROOT / "profiles" / f"{profile}.yaml").read_text(encoding="utf-8"))
    labels = declared.get("credentials") or {}
    assert labels, f"profiles/{profile}.yaml declares no credentials"
    missing = [label for label in labels
               if not re.search(
                       rf"(^\s+{re.escape(label)}:|`{re.escape(label)}`|credentials\.{re.escape(label)}\b)",
                       readme, re.M)]
    assert not missing, f"README.md does not say what these credentials of {profile} are: {missing}"


def test_readme_explains_every_config_key() -> None:
    readme = README.read_text(encoding="utf-8")
    rows = set(re.findall(r"^\|\s*`([a-z_]+)`\s*\|\s*\S", readme, re.M))
    assert sorted(KNOWN_KEYS - rows) == [], "config keys without a row (| `key` | what it is |) in README.md"


@pytest.mark.parametrize("profile", [*PROFILES, "a2a"])
def test_readme_profile_table_counts_what_the_profile_has(profile: str) -> None:
    """The README's profile table gives the counts `conformance list` and the statement map
    give: requirements, testable statements, faults, allowed variants, MCP-level rows."""
    from conformance.documents.statements import coverage
    from conformance.run.profiles import load_profile

    prof = load_profile(profile)
    row = next(line for line in README.read_text(encoding="utf-8").splitlines()
               if line.startswith(f"| `{profile}` |"))
    cov = coverage(prof.statements, [r.id for r in prof.requirements])
    counted = r"(\d+) (requirements|testable statements|faults|allowed variants)"
    said = {what: int(n) for n, what in re.findall(counted, row)}
    for n in re.findall(r"(\d+) of \d+ testable statements", row):
        said["testable statements"] = int(n)
    assert said.get("requirements") == len(prof.requirements), row
    assert said.get("testable statements") == cov.covered == cov.testable, (row, cov.covered, cov.testable)
    assert said.get("allowed variants") == len(prof.variants), row
    if "faults" in said:
        assert said["faults"] == len(prof.faults), row
    mcp = re.search(r"(\d+) of them MCP-level rows", row)
    if mcp:
        assert int(mcp.group(1)) == sum(r.id.startswith("MCP-") for r in prof.requirements), row


def test_readme_says_how_long_the_tests_take() -> None:
    assert re.search(r"about \d+ minutes? on \d+ cores", README.read_text(encoding="utf-8"))


def test_architecture_names_no_path_outside_the_repository() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    for outside in ("../", "DESIGN.md", "in the shared folder", "/work/", "~/"):
        assert outside not in text, f"docs/architecture.md points outside the repository: {outside!r}"


def test_licence_files() -> None:
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    notes = (ROOT / "specs" / "LICENSES.md").read_text(encoding="utf-8")
    for folder in (p.name for p in (ROOT / "specs").iterdir() if p.is_dir()):
        assert f"`{folder}/`" in notes, f"specs/LICENSES.md says nothing of specs/{folder}/"


def conformance_command(tmp: Path) -> str:
    """The `conformance` of the Python running the tests, so the recipe installs nothing."""
    installed = Path(sys.executable).parent / "conformance"
    if installed.is_file():
        return str(installed)
    wrapper = tmp / "conformance"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m conformance.cli "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def assignments(line: str) -> dict[str, str]:
    """NAME=value and NAME="value with spaces" of a shell line, in order."""
    return {name: quoted or bare for name, quoted, bare in re.findall(r'(\w+)=(?:"([^"]*)"|(\S+))', line)}


def served(command: str, port: int) -> str:
    """A recipe's `conformance ...` command as this Python runs it, on ``port``."""
    return command.replace("3773", str(port)).replace("conformance serve",
                                                      f"{sys.executable} -m conformance.cli serve")


def test_ci_shell_recipe_gates_the_served_reference_over_its_three_bindings(tmp_path: Path) -> None:
    """The recipe's example line, as written (the A2A reference, which declares three
    bindings): one run over each binding the card declares, every row passed or skipped on
    each, one set of kept reports, no secret in them, the implementation stopped."""
    text = CI.read_text(encoding="utf-8")
    [recipe, line] = fenced(section(text, "A plain shell script"), "sh")[:2]
    script = tmp_path / "conformance-gate.sh"
    script.write_text(recipe, encoding="utf-8")
    given = assignments(line)
    assert given["PROFILE"] == "a2a" and "bash conformance-gate.sh" in line
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE", "PYTEST"))}
    env.update(given, START_AGENT=served(given["START_AGENT"], port), AGENT_URL=f"http://127.0.0.1:{port}",
               CONFORMANCE=conformance_command(tmp_path),
               CONFORMANCE_ARGS=given["CONFORMANCE_ARGS"] + " --max-time 120s", WAIT_SECONDS="30",
               PYTHONPATH=str(ROOT))
    result = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=240)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    report = tmp_path / "reports" / "ci"
    for name in ("summary.json", "junit.xml", "report.html", "badge.svg"):
        assert (report / name).is_file(), f"no {name} in the kept reports:\n{out}"
    summary = (report / "summary.json").read_text(encoding="utf-8")
    import json

    # the served A2A reference passes over each interface its card declares, in one run (one
    # summary, a row per requirement and binding): the run test_a2a_profile.py held on its own
    assert "over jsonrpc, http-json, grpc (each one the target declares)" in result.stdout
    ran = json.loads(summary)
    assert ran["bindings"] == ["jsonrpc", "http-json", "grpc"] and ran["verdict"] == "pass"
    for binding in ran["bindings"]:
        got = {r["id"]: r["status"] for r in ran["requirements"] if r["binding"] == binding}
        assert set(got.values()) <= {"passed", "skipped"}, (binding, {k: v for k, v in got.items()
                                                                    if v not in ("passed", "skipped")})
        assert sum(status == "passed" for status in got.values()) >= 95, ran["by_binding"][binding]
    secrets = yaml.safe_load((tmp_path / given["CONFIG"]).read_text(encoding="utf-8"))["credentials"]
    for value in (secrets["full"], secrets["other"], secrets["limited"]["token"]):
        for path in report.rglob("*"):
            assert not path.is_file() or value not in path.read_text(errors="replace"), path
    # the implementation is stopped: its process group is gone and nothing listens any more
    pid = int(re.search(r"started the implementation \(pid (\d+)\)", out).group(1))
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def test_ci_shell_recipe_fails_clearly_when_nothing_listens(tmp_path: Path) -> None:
    [recipe] = fenced(section(CI.read_text(encoding="utf-8"), "A plain shell script"), "sh")[:1]
    script = tmp_path / "conformance-gate.sh"
    script.write_text(recipe, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE", "PYTEST"))}
    env.update(START_AGENT="sleep 60", AGENT_URL=f"http://127.0.0.1:{free_port()}", WAIT_SECONDS="1",
               CONFORMANCE=conformance_command(tmp_path), PYTHONPATH=str(ROOT))
    result = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "nothing listened on" in result.stderr
    pid = int(re.search(r"started the implementation \(pid (\d+)\)", result.stdout).group(1))
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert not (tmp_path / "reports").exists()


def test_ci_github_actions_job_installs_starts_waits_gates_and_keeps_reports() -> None:
    [workflow] = fenced(section(CI.read_text(encoding="utf-8"), "GitHub Actions"), "yaml")[:1]
    [job] = yaml.safe_load(workflow)["jobs"].values()
    steps = job["steps"]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    # the implementation and the kit
    assert uses.count("actions/checkout") == 2 and "actions/setup-python" in uses
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "pip install" in runs and "&" in runs and "curl" in runs and "conformance run" in runs
    kept = [s for s in steps
            if s.get("uses", "").startswith(("actions/upload-artifact", "mikepenz/action-junit-report"))]
    assert len(kept) == 2 and all(s.get("if") == "always()" for s in kept)
    gate = next(s for s in steps if "conformance run" in s.get("run", ""))
    assert "--config" in gate["run"] and "CONFORMANCE_TOKEN" in gate.get("env", {})


def run_step(step: dict, tmp: Path, port: int, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A GitHub Actions step's ``run:`` as the runner would (bash, the step's env), on ``port``."""
    return subprocess.run(["bash", "-e", "-c", step["run"].replace("3773", str(port))], cwd=tmp,
                          env={**env, **{k: str(v) for k, v in (step.get("env") or {}).items()}},
                          capture_output=True, text=True, timeout=300)


def test_ci_baseline_and_actions_recipe_run_as_written_over_three_bindings(tmp_path: Path) -> None:
    """docs/ci.md's baseline recipe, then its GitHub Actions job's steps (wait, write the run
    config, gate), as written, against the served A2A reference with a fault every binding
    shows: the first run fails, `baseline write` records each failure with its binding, and
    the job's gate passes with them known, its one JUnit file at the path the report action
    reads, a suite per binding, its reports where the artifact step keeps them."""
    import json

    text = CI.read_text(encoding="utf-8")
    port = free_port()
    work = tmp_path / "work"
    work.mkdir()
    served_config = tmp_path / "served.yaml"
    server = subprocess.Popen([sys.executable, "-m", "conformance.cli", "serve", "a2a", "--control",
                               "--port", str(port), "--fault", "card_without_version",
                               "--write-config", str(served_config)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "conformance").symlink_to(conformance_command(tmp_path))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE", "PYTEST"))}
        env.update(PATH=f"{bin_dir}:{env['PATH']}", PYTHONPATH=str(ROOT),
                   RUNNER_TEMP=str(tmp_path / "runner"))
        (tmp_path / "runner").mkdir()
        [workflow] = fenced(section(text, "GitHub Actions"), "yaml")[:1]
        [job] = yaml.safe_load(workflow)["jobs"].values()
        steps = {step.get("name"): step for step in job["steps"]}
        waited = run_step(steps["Wait until it listens"], work, port, env)
        assert waited.returncode == 0, waited.stdout + waited.stderr
        secrets = yaml.safe_load(served_config.read_text(encoding="utf-8"))["credentials"]
        (work / "conformance.yaml").write_text(served_config.read_text(encoding="utf-8"), encoding="utf-8")

        [baseline_recipe] = [b for b in fenced(section(text, "Only regressions fail: a baseline"), "sh")
                             if "baseline write" in b]
        first, write = baseline_recipe.strip().splitlines()
        ran = subprocess.run(["bash", "-c", first.replace("3773", str(port))], cwd=work, env=env,
                             capture_output=True, text=True, timeout=300)
        assert ran.returncode == 1, ran.stdout[-3000:] + ran.stderr  # a failure over each binding
        assert subprocess.run(["bash", "-c", write], cwd=work, env=env, timeout=60).returncode == 0
        entries = yaml.safe_load((work / "conformance-baseline.yaml").read_text(encoding="utf-8"))
        assert sorted((e["id"], e["binding"]) for e in entries) == [
            ("A2A-CARD-SERVED", b) for b in sorted(("jsonrpc", "http-json", "grpc"))]

        config_env = {"OTHER_TOKEN": secrets["other"], "LIMITED_TOKEN": secrets["limited"]["token"]}
        step = steps["Write the run config"]
        wrote = run_step({**step, "env": config_env}, work, port, env)
        assert wrote.returncode == 0, wrote.stderr
        gate = steps["Gate"]
        assert set(gate["env"]) == {"CONFORMANCE_TOKEN"}
        gated = run_step({**gate, "env": {"CONFORMANCE_TOKEN": secrets["full"]}}, work, port, env)
        assert gated.returncode == 0, gated.stdout[-3000:] + gated.stderr  # the three failures are known
        kept = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
        report = work / kept["with"]["path"].split()[0]
        summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
        assert summary["counts"]["expected_failures"] == 3 and summary["counts"]["failed"] == 0
        assert summary["bindings"] == ["jsonrpc", "http-json", "grpc"]
        assert summary["agent"]["name"] and "version" not in summary["agent"]  # the fault leaves it out
        junit_step = next(s for s in job["steps"]
                          if s.get("uses", "").startswith("mikepenz/action-junit-report"))
        junit = work / junit_step["with"]["report_paths"]
        suites = ET.parse(junit).getroot().findall("testsuite")
        assert len(suites) == 3 and len({s.get("name") for s in suites}) == 3
        names = [(c.get("classname"), c.get("name")) for s in suites for c in s.findall("testcase")]
        assert len(names) == len(set(names)) == len(summary["requirements"])
        assert not list(junit.parent.glob("junit.*.xml")) and (report / "report.html").is_file()
        for value in (secrets["full"], secrets["other"], secrets["limited"]["token"]):
            for path in report.rglob("*"):
                assert not path.is_file() or value not in path.read_text(errors="replace"), path
    finally:
        server.terminate()
        server.wait(timeout=10)


def live_gate_recipe(tmp_path: Path, fault: str | None) -> tuple[subprocess.CompletedProcess, Path]:
    """docs/ci.md's `--gate live` line, as written, against the reference served without control."""
    [recipe] = fenced(section(CI.read_text(encoding="utf-8"), "A plain shell script"), "sh")[:1]
    [line] = fenced(section(CI.read_text(encoding="utf-8"),
                            "A server without a control interface: `--gate live`"), "sh")
    script = tmp_path / "conformance-gate.sh"
    script.write_text(recipe, encoding="utf-8")
    assigned = {name: quoted or bare for name, quoted, bare in re.findall(r'(\w+)=(?:"([^"]*)"|(\S+))', line)}
    port = free_port()
    serve = assigned["START_AGENT"].replace("3773", str(port)).replace(
        "conformance serve", f"{sys.executable} -m conformance.cli serve")
    assert "--control" not in serve
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE", "PYTEST"))}
    env.update(START_AGENT=serve + (f" --fault {fault}" if fault else ""),
               AGENT_URL=f"http://127.0.0.1:{port}",
               CONFIG=str(tmp_path / assigned["CONFIG"]), CONFORMANCE=conformance_command(tmp_path),
               CONFORMANCE_ARGS=assigned["CONFORMANCE_ARGS"] + " --max-time 180s", WAIT_SECONDS="30",
               PYTHONPATH=str(ROOT))
    env["START_AGENT"] = env["START_AGENT"].replace(f"--write-config {assigned['CONFIG']}",
                                                    f"--write-config {env['CONFIG']}")
    result = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    return result, tmp_path / "reports" / "ci"


def test_ci_live_gate_recipe_passes_the_reference_without_control(tmp_path: Path) -> None:
    import json

    result, report = live_gate_recipe(tmp_path, None)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
    live = summary["live"]
    assert summary["gate"] == "live" and summary["verdict"] == "pass"
    assert (live["need_control"] > 0
            and live["held"] == live["of"] - live["need_control"] - live["would_harm"]), live
    assert live["statement"] in out and live["statement"] in summary["verdict_reason"]
    assert live["statement"] in (report / "junit.xml").read_text(encoding="utf-8")
    assert "Live gate:" in (report / "report.html").read_text(encoding="utf-8")


def test_ci_live_gate_recipe_fails_a_faulty_server_without_control(tmp_path: Path) -> None:
    result, report = live_gate_recipe(tmp_path, "id_not_echoed")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BINDU-RPC-ID-ECHO" in result.stdout


@pytest.mark.parametrize("profile", PROFILES)
def test_readme_names_every_row_that_does_something_lasting(profile: str) -> None:
    from conformance.run.profiles import load_profile

    readme = README.read_text(encoding="utf-8")
    table = readme[readme.index("Which rows do something lasting"):]
    row = next(line for line in table.splitlines() if line.startswith(f"| `{profile}` |"))
    lasting = [r.id for r in load_profile(profile).requirements if r.lasting]
    assert [rid for rid in lasting if f"`{rid}`" not in row] == [], ("README's lasting rows of "
                                                                     f"{profile} miss some")
    named = re.findall(r"`([A-Z]+(?:-[A-Z0-9]+)+)`", row)
    assert sorted(set(named) - set(lasting)) == [], ("README names rows as lasting that declare "
                                                     "nothing lasting")


FUZZ = ROOT / "docs" / "fuzz.md"


def test_fuzz_recipe_manifests_are_an_indexed_job_sharing_a_redis_service() -> None:
    """docs/fuzz.md's Kubernetes manifests, for shape: an Indexed Job whose pods each run one
    shard (I from JOB_COMPLETION_INDEX, N its completions), a Redis Service the config's
    examples URL names, and a merge of the shards' reports."""
    text = FUZZ.read_text(encoding="utf-8")
    [manifests] = fenced(section(text, "Kubernetes: an Indexed Job and a Redis service"), "yaml")[:1]
    docs = {d["kind"]: d for d in yaml.safe_load_all(manifests)}
    assert {"Service", "Deployment", "ConfigMap", "Job"} <= set(docs)
    job = docs["Job"]["spec"]
    assert job["completionMode"] == "Indexed" and job["completions"] == job["parallelism"]
    [pod] = job["template"]["spec"]["containers"]
    command = " ".join(pod["args"])
    assert f"--shard {job['completions']}" in command and "conformance fuzz" in command
    assert "$JOB_COMPLETION_INDEX" in command and "CONFORMANCE_TOKEN" in {e["name"] for e in pod["env"]}
    config = yaml.safe_load(docs["ConfigMap"]["data"]["campaign.yaml"])
    service = docs["Service"]
    assert config["examples"]["at"].startswith(f"redis://{service['metadata']['name']}:"
                                               f"{service['spec']['ports'][0]['port']}/")
    assert service["spec"]["selector"] == docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
    from conformance.run.config import shared_examples

    assert shared_examples(config["examples"], "x").is_redis  # the kit reads the config as written
    assert "conformance fuzz merge" in text


def test_fuzz_shell_recipe_gives_each_host_its_own_shard() -> None:
    text = FUZZ.read_text(encoding="utf-8")
    [script] = fenced(section(text, "Plain shell on several hosts"), "sh")
    assert "--shard $I/$N" in script and "conformance fuzz merge" in script and "--seed 1" in script
    assert re.search(r"N=(\d+)", script).group(1) == str(len(re.search(r'HOSTS="([^"]+)"', script)
                                                              .group(1).split()))


def test_fuzz_campaign_recipe_runs_as_written_over_three_bindings(tmp_path: Path, serve) -> None:
    """docs/fuzz.md's campaign line, as written but for its length and scope, against the served A2A
    reference with a fault every binding shows, which the baseline lists: three KNOWN
    FAILUREs, exit 0, report.html and the JUnit file where the line asks."""
    import json

    [line] = fenced(section(FUZZ.read_text(encoding="utf-8"), "A campaign you keep"), "sh")
    server = serve("a2a", "--control", "--fault", "card_without_version")
    (tmp_path / "campaign.yaml").write_text(server.config.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "conformance-baseline.yaml").write_text("- id: A2A-CARD-SERVED\n  reason: no version yet\n")
    # as written but for its length and one requirement (--only): every round reaches every
    # binding however loaded the machine is
    command = line.replace("\\\n", " ").replace("--for 2h", "--for 8s --only A2A-CARD-SERVED").replace(
        "http://127.0.0.1:3773", server.url).replace("conformance fuzz",
                                                     f"{sys.executable} -m conformance.cli fuzz")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONFORMANCE")}
    result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, env={**env, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    known = [x for x in result.stdout.splitlines() if x.startswith("KNOWN FAILURE")]
    assert sorted(x.split()[3] for x in known) == [f"A2A-CARD-SERVED[{b}]" for b in ("grpc", "http-json",
                                                                                      "jsonrpc")]
    assert "NEW FAILURE" not in result.stdout
    report = tmp_path / "reports" / "fuzz"
    assert json.loads((report / "fuzz.json").read_text())["bindings"] == ["jsonrpc", "http-json", "grpc"]
    assert (report / "report.html").is_file()
    assert len(ET.parse(report / "junit.xml").getroot().findall("testsuite")) == 3
