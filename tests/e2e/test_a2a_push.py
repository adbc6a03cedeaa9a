"""A2A push notifications: the run's webhook receiver (it takes only deliveries to a box it
opened, bounded, and is closed with the run), the config's ``receiver:`` key, the push rows
against the served reference with the receiver reached through the URL the config names,
and a remote target without that URL leaving the delivery rows untested. (Each push fault
caught and each variant passed: tests/e2e/test_selftest.py.)"""

from __future__ import annotations

import json
import socket
from types import SimpleNamespace

import httpx
import pytest
import yaml

from conformance.kit.check import Untested
from conformance.run.config import ConfigError, load_config
from conformance.transport import receiver as receiver_module
from conformance.transport.receiver import PREFIX, Receiver, receiver_of
from tests.conftest import conformance, free_port


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.close()


def test_the_receiver_records_only_posts_to_a_box_it_opened(receiver):
    box = receiver.open_box(answers=[503])
    with httpx.Client() as client:
        assert client.post(receiver.url(box), json={"n": 1}).status_code == 503  # the answer asked for
        assert client.post(receiver.url(box), json={"n": 2}).status_code == 200
        assert client.get(receiver.url(box)).status_code == 405
        assert client.post(f"{receiver.local_url}{PREFIX}/not-a-token", json={}).status_code == 404
        assert client.post(f"{receiver.local_url}/elsewhere", json={}).status_code == 404
        receiver.close_box(box)
        assert client.post(receiver.url(box), json={"n": 3}).status_code == 404
    assert [d.json() for d in box.deliveries] == [{"n": 1}, {"n": 2}]
    assert [d.status for d in box.deliveries] == [503, 200]
    assert receiver.refused == 4


def test_the_receiver_is_bounded(receiver, monkeypatch):
    monkeypatch.setattr(receiver_module, "MAX_BODY", 100)
    monkeypatch.setattr(receiver_module, "MAX_PER_BOX", 2)
    box = receiver.open_box()
    with httpx.Client() as client:
        assert client.post(receiver.url(box), content=b"x" * 101).status_code == 413
        for n in range(4):
            assert client.post(receiver.url(box), json={"n": n}).status_code == 200
    assert len(box.deliveries) == 2 and box.dropped == 2


def test_the_receiver_lives_as_long_as_the_run():
    from conformance.run.launch import open_run
    from conformance.run.profiles import load_profile

    run = open_run(load_profile("a2a"), "reference")
    found = receiver_of(run)
    assert receiver_of(run) is found  # one per run
    with socket.create_connection(("127.0.0.1", found.port), timeout=2):
        pass
    run.http.close()
    found.thread.join(timeout=5)
    assert not found.thread.is_alive() and found.server.socket.fileno() == -1  # stopped, its socket closed


@pytest.mark.parametrize("value, message", [
    (42, "receiver must be a URL, or a mapping of url and port"),
    ({"url": "ftp://hooks.example.com"}, "receiver.url"),
    ({"url": "https://hooks.example.com", "port": 70000}, "receiver.port must be a port number"),
    ({"url": "https://hooks.example.com", "path": "/x"}, "receiver must be a URL, or a mapping"),
])
def test_a_bad_receiver_setting_is_one_line(tmp_path, value, message):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"receiver": value}))
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_receiver_url_is_read_as_text_or_a_mapping(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"receiver": "https://hooks.example.com/"}))
    assert load_config(config)["receiver"] == {"url": "https://hooks.example.com/"}
    config.write_text(yaml.safe_dump({"receiver": {"url": "https://hooks.example.com", "port": 8765}}))
    assert load_config(config)["receiver"] == {"url": "https://hooks.example.com", "port": 8765}


def test_a_target_on_another_machine_needs_a_forwarded_receiver_url(receiver):
    from conformance.protocols.a2a.push import reaches_receiver

    def ctx(target: str) -> SimpleNamespace:
        return SimpleNamespace(run=SimpleNamespace(target=target, http=SimpleNamespace(live=True)))

    with pytest.raises(Untested, match="cannot reach the kit's webhook receiver"):
        reaches_receiver(ctx("https://agent.example.com"), receiver)
    reaches_receiver(ctx("http://127.0.0.1:3773"), receiver)  # the same machine
    forwarded = Receiver(public_url="https://hooks.example.com/tunnel")
    try:
        reaches_receiver(ctx("https://agent.example.com"), forwarded)
        assert forwarded.url(forwarded.open_box()).startswith("https://hooks.example.com/tunnel" + PREFIX)
    finally:
        forwarded.close()


def test_the_push_rows_pass_through_the_configured_receiver(tmp_path):
    """The reference delivers over real HTTP to the URL the config names, on the port the
    receiver was told to listen on (as a forward would give; 127.0.0.1 is the address the
    reference allows, section 13.2 asking it to refuse other loopback names)."""
    port = free_port()
    path = tmp_path / "push.yaml"
    path.write_text(yaml.safe_dump({"receiver": {"url": f"http://127.0.0.1:{port}", "port": port}}))
    result = conformance("run", "a2a", "--config", str(path), "--binding", "jsonrpc", "--only", "A2A-PUSH-*",
                         "--budget", "quick", "--report", str(tmp_path / "r"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    rows = {r["id"]: r["status"] for r in summary["requirements"] if r["id"].startswith("A2A-PUSH-")}
    assert len(rows) == 12 and set(rows.values()) == {"passed"}, rows


@pytest.mark.parametrize("fault, status", [((), "passed"), (("push_never_delivered",), "failed")])
def test_without_an_open_task_the_config_comes_with_the_message(fault, status):
    """No control and no scenarios: nothing opens a task to give a config by Create, so the
    delivery row sends the config with an ordinary message (section 6.6), and deletes it after."""
    from conformance.run.launch import open_run
    from conformance.run.profiles import load_profile
    from conformance.run.runner import execute

    profile = load_profile("a2a")
    run = open_run(profile, "reference", faults=fault, reference_options={"control": False})
    ref, calls = run.reference, []
    for name in ("push_from_send", "op_CreateTaskPushNotificationConfig"):
        original = getattr(ref, name)
        setattr(ref, name,
                lambda *args, _name=name, _original=original: calls.append(_name) or _original(*args))
    try:
        verdict = execute(profile.requirement("A2A-PUSH-DELIVERY"), run)
        assert verdict.status == status, verdict.failures
        assert "op_CreateTaskPushNotificationConfig" not in calls and "push_from_send" in calls
        assert not any(ref.push_configs.values()) and not run.not_put_back
    finally:
        run.http.close()
