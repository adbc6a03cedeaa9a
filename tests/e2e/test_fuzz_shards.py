"""A campaign over many machines: shards that draw disjoint seeds, share a real Redis
server as their example database (each replays what the other stored, as its fuzz.json
counts, kept past hypothesis's 8-day default), and one merged report. The Redis server is Debian's
`redis-server` (`.ci/run` installs it), started here on loopback."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
import yaml

from tests.conftest import conformance, free_port, in_process

# a generated failure: hypothesis stores its example
FAULT = ("BINDU-PARAMS-VALID-MESSAGE-SEND", "rejects_unknown_params")


@pytest.fixture
def redis_url(tmp_path):
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (.ci/run installs it from Debian)")
    redis = pytest.importorskip("redis")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("redis-server did not answer on loopback")
    yield url
    proc.terminate()
    proc.wait(10)


def test_two_shards_share_a_real_redis_draw_disjoint_seeds_and_merge_into_one_report(tmp_path, serve,
                                                                                     redis_url):
    import redis

    server = serve("bindu", "--fault", FAULT[1])
    config = tmp_path / "campaign.yaml"
    base = yaml.safe_load(server.config.read_text())
    config.write_text(yaml.safe_dump({**base, "examples": {"at": redis_url, "keep": "30d"}}))
    client = redis.Redis.from_url(redis_url)

    def shard(index, report):
        result = conformance("fuzz", "bindu", "--for", "4s", "--shard", f"{index}/2", "--config", str(config),
                             "--only", FAULT[0], "--progress", "1", "--report", str(report), timeout=300)
        assert result.returncode == 1, result.stdout[-2000:] + result.stderr
        assert f"shard {index}/2" in result.stdout
        found = json.loads((report / "fuzz.json").read_text())
        assert FAULT[0] in [f["requirement"] for f in found["failures"]], found["failures"]
        assert (f"{found['replayed_from_shared']} example(s) that other processes stored were replayed "
                "from the shared database") in result.stdout, result.stdout[-600:]
        return found

    # shard 0 on an empty database stores its failure under the campaign's prefix, kept 30
    # days, and replays nothing another process stored; shard 1 then replays it
    shards = [shard(0, tmp_path / "shard0")]
    keys = client.keys(f"conformance:bindu:127.0.0.1:{server.port}:*".encode())
    assert keys, client.keys(b"*")[:5]
    assert all(client.ttl(k) > 8 * 86400 for k in keys)
    assert shards[0]["replayed_from_shared"] == 0, shards[0]
    shards.append(shard(1, tmp_path / "shard1"))
    assert shards[1]["replayed_from_shared"] > 0, shards[1]
    # and the other way round, on an empty database again
    client.flushdb()
    first = shard(1, tmp_path / "again1")
    assert first["replayed_from_shared"] == 0, first
    assert shard(0, tmp_path / "again0")["replayed_from_shared"] > 0
    drawn = [set(s["seeds"]["0"]) for s in shards]
    assert drawn[0] and drawn[1] and not drawn[0] & drawn[1], drawn
    assert [s["shard"] for s in shards] == ["0/2", "1/2"]

    merged_dir = tmp_path / "merged"
    result = conformance("fuzz", "merge", str(tmp_path / "shard0"), str(tmp_path / "shard1"),
                         "--report", str(merged_dir))
    assert result.returncode == 1, result.stdout + result.stderr  # a MUST failure was found
    merged = json.loads((merged_dir / "fuzz.json").read_text())
    assert merged["seeds_disjoint"] is True
    assert [s["replayed_from_shared"] for s in merged["shards"]] == [0, shards[1]["replayed_from_shared"]]
    assert merged["exchanges"] == sum(s["exchanges"] for s in shards)
    keys = [(f["requirement"], f["signature"]) for f in merged["failures"]]
    assert len(keys) == len(set(keys))
    both = next(f for f in merged["failures"] if f["requirement"] == FAULT[0])
    assert both["found_by"].startswith("shard 0/2") and both["also_found_by"][0].startswith("shard 1/2")
    assert (merged_dir / "cases" / both["case"]).is_file()
    assert FAULT[0] in (merged_dir / "report.md").read_text()

    # the first round is quick, the others draw their inputs in batches (budget "campaign");
    # the case names its round's budget and holds the one input that fails (shrunk from its
    # batch), and replays it
    case_path = merged_dir / "cases" / both["case"]
    case = json.loads(case_path.read_text())
    assert case["budget"] == ("quick" if both["round"] == 1 else "campaign"), (case["budget"], both)
    bodies = [e["request"]["body"] or "" for e in case["exchanges"]]
    sends = [body for body in bodies if '"message/send"' in body]
    assert len([body for body in sends if "x_conformance_extra" not in body]) == 1, sends  # (and its variant)
    again = conformance("replay", str(case_path), "--config", str(config), timeout=300)
    assert again.returncode == 1 and f"FAIL {FAULT[0]}" in again.stdout, again.stdout + again.stderr


def test_merge_says_when_shards_overlap_and_refuses_what_is_not_a_campaign(tmp_path, capsys):
    def shard(name, seeds, profile="bindu"):
        folder = tmp_path / name
        (folder / "cases").mkdir(parents=True)
        (folder / "fuzz.json").write_text(json.dumps({
            "profile": profile, "target": "reference", "shard": name, "workers": 1, "exchanges": 10,
            "seeds": {"0": seeds}, "failures": []}))
        return str(folder)

    out = str(tmp_path / "out")
    result = in_process(capsys, "fuzz", "merge", shard("0/2", [1, 3]), shard("1/2", [3, 5]), "--report", out)
    assert result.returncode == 0 and "drew 1 seed(s) twice" in result.stderr, result.stderr
    assert json.loads((tmp_path / "out" / "fuzz.json").read_text())["overlapping_seeds"] == [3]
    other_profile = [shard("a", [1]), shard("b", [2], profile="canon-verbs")]
    nothing = [str(tmp_path / "nothing")]
    for folders, says in ((nothing, "no fuzz.json"), (other_profile, "one campaign at a time")):
        result = in_process(capsys, "fuzz", "merge", *folders, "--report", out)
        assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr


def test_a_shard_is_i_of_n_or_n_with_the_job_index(monkeypatch, tmp_path, capsys):
    from conformance.cli import shard_of
    from conformance.drivers.fuzz import seed_of

    monkeypatch.setenv("JOB_COMPLETION_INDEX", "2")
    assert shard_of("1/4") == (1, 4) and shard_of("4") == (2, 4)
    for bad in ("4/4", "x/2", "-1/2"):
        result = in_process(capsys, "fuzz", "bindu", "--for", "1s", "--shard", bad, "--report", str(tmp_path))
        assert result.returncode == 2 and "--shard" in result.stderr
    drawn = {seed_of(1, r, w, 3, (i, 4)) for r in (1, 2, 3) for w in range(3) for i in range(4)}
    assert len(drawn) == 3 * 3 * 4  # every (round, worker, shard) its own seed
    assert [seed_of(1, r, w, 2) for r in (1, 2) for w in range(2)] == [1, 2, 3, 4]  # one shard: as before


def test_a_shared_database_setting_it_cannot_read_is_one_line(tmp_path, capsys):
    from conformance.run.config import shared_examples
    from conformance.run.examples import KEEP_FOREVER

    given = shared_examples({"at": "redis://127.0.0.1:1/0", "keep": "30d"}, "bindu:127.0.0.1:1")
    assert given.keep.days == 30 and given.namespace == "bindu:127.0.0.1:1" and given.is_redis
    assert shared_examples("folder", "ns").keep == KEEP_FOREVER  # kept for the campaign unless told
    config = tmp_path / "run.yaml"
    for bad in ({"at": "redis://127.0.0.1:1/0", "keep": "soon"}, {"keep": "30d"}, {"at": "x", "ttl": 3}):
        config.write_text(yaml.safe_dump({"examples": bad}))
        result = in_process(capsys, "run", "bindu", "--config", str(config), "--report", str(tmp_path / "r"))
        assert result.returncode == 2 and "examples" in result.stderr and "Traceback" not in result.stderr
