"""`conformance run --workers N`: the same verdicts and cases as a serial run, one
merged report, the profile's `alone:` requirements last and alone against a live
target, and a shared example database named in the config."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from conformance.kit.check import CheckContext
from conformance.run.launch import open_run
from conformance.run.parallel import AloneLast, runs_alone
from conformance.run.profiles import load_profile
from conformance.run.runner import execute
from tests.conftest import conformance, in_process

FAULTS = ("--fault", "caller_task_id_refused", "--fault", "no_body_limit")


def _verdicts(report: Path) -> dict[str, str]:
    summary = json.loads((report / "summary.json").read_text())
    return {r["id"]: r["status"] for r in summary["requirements"]}


def test_workers_give_the_verdicts_and_cases_of_a_serial_run(tmp_path):
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    one = conformance("run", "bindu", "--budget", "quick", *FAULTS, "--report", str(serial))
    two = conformance("run", "bindu", "--budget", "quick", *FAULTS, "--report", str(parallel),
                      "--workers", "2")
    assert one.returncode == two.returncode == 1, two.stdout[-2000:] + two.stderr
    assert _verdicts(parallel) == _verdicts(serial)
    # the profile's order
    assert list(_verdicts(parallel)) == [r.id for r in load_profile("bindu").requirements]
    cases = sorted(p.name for p in (serial / "cases").glob("*.json"))
    assert cases and sorted(p.name for p in (parallel / "cases").glob("*.json")) == cases
    for name in cases:  # the same minimal example: the same requests, bar the fresh ids
        a, b = (json.loads((d / "cases" / name).read_text()) for d in (serial, parallel))
        assert [e["request"]["url"] for e in a["exchanges"]] == [e["request"]["url"] for e in b["exchanges"]]
    junit = (parallel / "junit.xml").read_text()
    assert junit.count("<testcase") == len(cases) + sum(s != "failed" for s in _verdicts(serial).values())
    summary = json.loads((parallel / "summary.json").read_text())
    # + the preflight: the probe, then each configured credential tried once
    assert summary["preflight_exchanges"] == 1 + sum(
        1 for label in load_profile("bindu").settings["credentials"] if label not in ("expired",))
    assert (summary["exchanges"]
            == sum(r["exchanges"] for r in summary["requirements"]) + summary["preflight_exchanges"])


def test_alone_requirements_run_last_one_at_a_time_against_a_live_target(tmp_path, serve):
    server = serve("bindu", "--control")
    result = conformance("run", "bindu", "--config", str(server.config), "--budget", "quick",
                         "--workers", "2",
                         "--report", str(tmp_path / "r"), timeout=180)  # a stalled schedule fails, not hangs
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    alone = load_profile("bindu").settings["alone"]
    order = [line.split()[2] for line in result.stdout.splitlines()
             if line.split()[1:2] in (["MUST"], ["SHOULD"], ["MAY"])]
    assert len(order) == len(load_profile("bindu").requirements)
    assert set(order[-len(alone):]) == set(alone), order


def test_every_requirement_that_scripts_the_target_is_listed_alone(monkeypatch):
    """A requirement that uses the control interface changes what other checks see."""
    profile = load_profile("bindu")
    used: set[str] = set()
    control = CheckContext.control

    def spy(self, *args, **kwargs):
        used.add(self.requirement.id)
        return control(self, *args, **kwargs)

    monkeypatch.setattr(CheckContext, "control", spy)
    run = open_run(profile, "reference", budget="quick")
    for req in profile.requirements:
        execute(req, run)
    assert used, "no requirement used control: the spy saw nothing"
    assert [rid for rid in sorted(used) if not runs_alone(profile.settings["alone"], rid)] == []


class Node:
    def __init__(self, name: str) -> None:
        self.name, self.shutting_down, self.got = name, False, []
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indices):
        self.got += list(indices)

    def shutdown(self):
        self.shutting_down = True


def test_the_scheduler_holds_alone_items_until_the_other_workers_have_stopped():
    config = SimpleNamespace(getvalue=lambda name: ["2*popen"], getoption=lambda name: None)
    collection = [f"bindu.yaml::R{i}" for i in range(8)] + ["bindu.yaml::ALONE-1", "bindu.yaml::ALONE-2"]
    sched = AloneLast(config, log=SimpleNamespace(loadsched=lambda *a: None),
                      alone=lambda nodeid: nodeid.split("::")[-1].startswith("ALONE"))
    a, b = Node("a"), Node("b")
    for node in (a, b):
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    alone = {8, 9}
    while sched.pending or any(len(p) > 1 for p in sched.node2pending.values()):  # run to the last item each
        for node in (a, b):
            if len(sched.node2pending[node]) > 1:
                sched.mark_test_complete(node, sched.node2pending[node][0])
    assert not alone & set(a.got + b.got), "an alone item went out while others were running"
    assert not sched.tests_finished
    keeper = sched.keeper
    other = b if keeper is a else a
    assert other.shutting_down and not keeper.shutting_down
    for node in (a, b):  # each runs its last item once told to stop (the keeper is not told yet)
        for index in list(sched.node2pending[node]):
            if node is other:
                sched.mark_test_complete(node, index)
    assert not alone & set(keeper.got)
    sched.remove_node(other)
    assert alone <= set(keeper.got) and keeper.shutting_down  # now the keeper runs them, alone, and stops
    assert sorted(a.got + b.got) == list(range(10))


def test_a_shared_example_database_is_a_folder_or_redis_named_in_the_config(tmp_path, capsys):
    shared = tmp_path / "examples"
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"examples": str(shared)}))
    result = conformance("run", "bindu", "--config", str(config), "--budget", "quick",
                         "--only", "BINDU-RPC-BODY-LIMIT",
                         "--only", "BINDU-PARAMS-VALID-MESSAGE-SEND", "--fault", "rejects_unknown_params",
                         "--report", str(tmp_path / "r"), "--workers", "2")
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr
    assert any(shared.rglob("*")), "the failing example was not saved where the config says"
    config.write_text(yaml.safe_dump({"examples": 42}))
    bad = in_process(capsys, "run", "bindu", "--config", str(config), "--report", str(tmp_path / "r2"))
    assert bad.returncode == 2 and "examples" in bad.stderr and "Traceback" not in bad.stderr


def test_a_redis_url_gives_hypothesis_its_redis_database(tmp_path, monkeypatch):
    """The wiring of `examples: redis://...` (a Redis server is not at hand: fakeredis
    stands in for one); examples saved by one worker are found by another."""
    fakeredis = pytest.importorskip("fakeredis")
    import redis

    from conformance.run.examples import example_database

    server = fakeredis.FakeServer()
    monkeypatch.setattr(redis.Redis, "from_url",
                        staticmethod(lambda url, **kw: fakeredis.FakeRedis(server=server)))
    one = example_database(tmp_path / "a", "redis://127.0.0.1:6379/0")
    two = example_database(tmp_path / "b", "redis://127.0.0.1:6379/0")
    assert type(one.inner).__name__ == "RedisExampleDatabase"
    one.save(b"requirement-key", b"a failing example")
    assert list(one.fetch(b"requirement-key")) == [b"a failing example"]
    assert one.replayed == 0  # its own example: nothing came from elsewhere
    assert list(two.fetch(b"requirement-key")) == [b"a failing example"]
    assert list(two.fetch(b"requirement-key")) == [b"a failing example"]
    assert two.replayed == 1  # the other's example, counted once however often it is read
    two.save(b"requirement-key", b"another")
    one.move(b"requirement-key", b"requirement-key.secondary", b"a failing example")
    assert sorted(one.fetch(b"requirement-key")) == [b"another"] and one.replayed == 1
    assert list(one.fetch(b"requirement-key.secondary")) == [b"a failing example"] and one.replayed == 1
