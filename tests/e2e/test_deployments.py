"""Every way the README lets a user deploy a target gives the same verdicts: the kit's own
configuration never becomes the target's failure (issue 45).

Each profile's served reference is run three ways, as operators deploy servers:

- the control interface on the target's origin (``control: http://host:port/_control``);
- the control interface on an admin port of its own (``conformance serve --control-port``);
- the target behind a reverse proxy, under a path of the proxy's host, with control reached
  beside it, directly (tests/proxy.py: Host rewritten, X-Forwarded-* added).

The verdicts of the three runs must be equal, requirement by requirement, and none failed
or blocked (the reference is correct); Agent Plaza's pass every row, each of its 52 commands
served and tested, and Wever Connect's (over http) leave none untested. Before the transport
honoured the config's control URL, the second and third ways failed 106 to 209 MUSTs on Wever
and Plaza."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import conformance, free_port
from tests.proxy import proxy

# one binding each where a profile has several: the A2A gRPC binding lives on a port of its own
# that the card names (no HTTP proxy carries it), the other bindings are the same wire
PROFILES = {"bindu": [], "canon-verbs": [], "wever-connect": [], "agent-plaza": [],
            "a2a": ["--binding", "http-json"]}


def verdicts(report: Path) -> dict[str, str]:
    summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
    return {r["id"]: r["status"] for r in summary["requirements"]}


def run(profile: str, config: dict, tmp: Path, name: str) -> dict[str, str]:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = conformance("run", profile, "--config", str(path), "--budget", "quick", "--seed", "3",
                         "--report", str(tmp / name), *PROFILES[profile])
    assert result.returncode in (0, 5), result.stdout[-3000:] + result.stderr[-2000:]
    return verdicts(tmp / name)


def served_and_tested(verdicts: dict[str, str]) -> None:
    """Agent Plaza's served reference passes every row, each of the document's 52 commands
    served and its valid inputs tested (none untested)."""
    from conformance.run.profiles import load_profile

    assert set(verdicts.values()) == {"passed"}, {k: v for k, v in verdicts.items() if v != "passed"}
    commands = [b["properties"]["operation"]["const"]
                for b in load_profile("agent-plaza").spec["schemas"]["command"]["anyOf"]]
    assert len(commands) == 52 and all(verdicts[f"PLAZA-CMD-VALID-{c.replace('_', '-').upper()}"] == "passed"
                                       for c in commands)


def every_row_passes_over_http(verdicts: dict[str, str]) -> None:
    """Wever Connect's served reference over its first binding (http, the run's default):
    nothing failed, untested or blocked, at least 100 rows passed."""
    assert set(verdicts.values()) <= {"passed", "skipped"}, {k: v for k, v in verdicts.items()
                                                           if v not in ("passed", "skipped")}
    assert sum(status == "passed" for status in verdicts.values()) >= 100, verdicts


# what a profile's plain run must show beyond no failure: the runs test_plaza_profile.py and
# test_wever_profile.py[http] made on their own before (the same served reference, budget and binding)
HELD = {"agent-plaza": served_and_tested, "wever-connect": every_row_passes_over_http}


@pytest.mark.parametrize("profile", list(PROFILES))
def test_control_elsewhere_and_a_proxy_in_front_give_the_verdicts_of_the_plain_run(profile, serve, tmp_path):
    plain = serve(profile, "--control")
    config = yaml.safe_load(plain.config.read_text(encoding="utf-8"))
    assert config["control"] == plain.url + "/_control"
    at_home = run(profile, config, tmp_path, "same-origin")

    admin = serve(profile, "--control-port", str(free_port()))
    config = yaml.safe_load(admin.config.read_text(encoding="utf-8"))
    assert not config["control"].startswith(admin.url)  # an admin port of its own
    elsewhere = run(profile, config, tmp_path, "control-port")

    behind = serve(profile, "--control")
    config = yaml.safe_load(behind.config.read_text(encoding="utf-8"))
    with proxy(behind.url, prefix="/agent") as front:
        config["target"] = front  # control stays the server's own URL, beside the proxy
        proxied = run(profile, config, tmp_path, "behind-proxy")

    wrong = {rid: status for rid, status in at_home.items() if status in ("failed", "blocked")}
    assert wrong == {}, f"the clean reference {profile} failed or blocked: {wrong}"
    assert {rid for rid, s in at_home.items() if s == "passed"}, "nothing passed"
    if profile in HELD:  # a profile's own test of its served reference, the same run
        HELD[profile](at_home)
    assert elsewhere == at_home, {r: (at_home.get(r), elsewhere.get(r)) for r in at_home
                                  if elsewhere.get(r) != at_home[r]}
    assert proxied == at_home, {r: (at_home.get(r), proxied.get(r)) for r in at_home
                                if proxied.get(r) != at_home[r]}


def test_control_as_a_path_on_the_target_is_the_same_run(serve, tmp_path):
    """The README's third shape of control: a path on the target (``control: /_control``),
    here with the target under a proxy's path, where the path is the proxy's to carry."""
    plain = serve("bindu", "--control")
    config = yaml.safe_load(plain.config.read_text(encoding="utf-8"))
    at_home = run("bindu", config, tmp_path, "url")
    with proxy(plain.url, prefix="/agent") as front:
        config.update(target=front, control="/_control")
        as_path = run("bindu", config, tmp_path, "path")
    assert as_path == at_home and set(at_home.values()) <= {"passed", "skipped"}, (
        {r: (at_home[r], as_path.get(r)) for r in at_home if as_path.get(r) != at_home[r]})
