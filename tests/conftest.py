import contextlib
import gc
import itertools
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def cache_bytecode_outside_the_checkout() -> None:
    """With PYTHONDONTWRITEBYTECODE set, every process of the suite (the workers, and each
    `conformance` and `pytest` child) compiled again the modules it imports, and each pytest
    process rewrote the asserts of some 550 modules again (10 s of CPU each). Their bytecode
    goes to a cache in the temporary folder instead: still nothing written into the checkout."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        prefix = str(Path(tempfile.gettempdir()) / "conformance-tests-pycache")
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        os.environ["PYTHONPYCACHEPREFIX"] = prefix  # the workers and children inherit it
        sys.dont_write_bytecode, sys.pycache_prefix = False, prefix


cache_bytecode_outside_the_checkout()

# tests/unit/: a module of the kit on its own (a reference, a reader, a declaration, no run of a
# profile); tests/e2e/: runs of profiles and of the `conformance` command.

# Rough seconds of the longest tests, by node id pattern under tests/e2e/ (the first that
# matches), from `bench/bench_tests.py --top 40` (the whole suite, a loaded machine: the figures
# are about three times a quiet machine's, and any test under 18 s there is not listed by it);
# the rest count 2 s (e2e) or 0.2 s (unit). Only their order matters: keep it when a test grows
# or a profile is added.
LONG = {
    "test_bindu_live.py::test_a_second_live_run_*": 120,
    "test_a2a_sdk_later.py::*": 113,
    "test_wever_live.py::test_a_second_live_run_*": 87,
    "test_docs.py::test_ci_baseline_and_actions_*": 79,
    "test_declared_profiles.py::test_an_a2a_agent_declaring_no_security_*": 78,
    "test_deployments.py::test_control_elsewhere_*[[]agent-plaza]": 63,
    "test_a2a_sdk.py::*": 51,
    "test_a2a_js_sdk.py::*": 50,
    "test_cli.py::test_run_reference_writes_*": 49,
    "test_reproduce.py::test_replay_honours_binding_*": 46,
    "test_plaza_live_twice.py::*": 15,  # a module's run: 44 s in its first test, the others read it
    "test_ci_gates.py::test_baseline_listed_*": 41,
    "test_a2a_readings.py::*[[]A2A-ERR-VALIDATION-DETAILS-*": 40,
    "test_a2a_readings.py::*": 9,
    "test_fuzz_shards.py::test_two_shards_*": 35,
    "test_deployments.py::test_control_elsewhere_*[[]wever-connect]": 34,
    "test_plaza_variants.py::test_every_must_passes_*": 33,
    "test_a2a_profile.py::test_the_limited_caller_*": 33,
    "test_a2a_terminal.py::test_a_row_that_never_sees_*": 32,
    "test_selftest.py::test_fault_is_caught[[]a2a:streamed_task_left_working]": 31,
    "test_deployments.py::test_control_elsewhere_*[[]a2a]": 28,
    "test_a2a_profile.py::test_a_server_without_an_agent_card_*": 26,
    "test_kit_faults.py::test_a_control_url_that_does_not_answer_*": 26,
    "test_plaza_machine_parts.py::test_named_fault_is_caught[[]PLAZA-PRIV-MACHINE-channel_close_ignored]": 26,
    "test_plugin_bindings.py::test_the_plugin_takes_binding_all_*": 25,
    "test_plaza_live_harm.py::test_a_whole_run_*": 25,
    "test_selftest.py::test_clean_*[[]a2a:http-json]": 24,
    "test_plaza_live.py::*": 24,
    "test_deployments.py::test_control_elsewhere_*": 23,
    "test_selftest.py::test_no_must_rests_*[[]agent-plaza]": 23,
    "test_gate_honesty.py::test_the_console_replay_*": 23,
    "test_plugin_bindings.py::test_the_plugin_speaks_each_*": 23,
    "test_selftest.py::test_clean_*[[]a2a:*": 22,
    "test_parallel.py::test_a_shared_example_database_*": 22,
    "test_selftest.py::test_clean_*[[]agent-plaza:*": 21,
    "test_fuzz.py::test_a_campaign_reports_progress_*": 20,
    "test_hostile_targets.py::test_a_broken_target_*": 8,  # each; their runs are one module fixture
    "test_canon_answers.py::test_every_member_renamed_*": 19,
    "test_selftest.py::test_no_must_rests_*[[]a2a]": 19,
    "test_selftest.py::test_no_must_rests_*[[]wever-connect]": 18,
    # not in the bench's top 40 (under 18 s there): the earlier estimates, in their order
    "test_docs.py::test_ci_shell_recipe_gates_*": 17,
    "test_selftest.py::test_no_must_rests_*[[]canon-verbs]": 16,
    "test_wever_profile.py::test_wever_passes_*": 15,  # mcp and mcp-stateless (http: test_deployments)
    "test_selftest.py::test_clean_*[[]wever-connect:*": 14,
    "test_parallel.py::test_workers_give_*": 14,
    "test_docs.py::test_ci_*_recipe_*": 12,
    "test_cli.py::test_serve_run_*": 12,
    "test_parallel.py::test_alone_*": 10,
    "test_gate_honesty.py::test_one_seed_*": 10,
    "test_a2a_terminal.py::*": 8,
    "test_ci_gates.py::*": 8,
    "test_bindings.py::test_a_live_canon_*": 10,
    "test_selftest.py::test_clean_*[[]bindu:*": 10,
    "test_docs.py::test_fuzz_campaign_recipe_*": 8,
    "test_selftest.py::test_clean_*[[]canon-verbs:*": 8,
    "test_root_causes.py::test_a_refused_*": 9,
    "test_selftest.py::test_no_must_rests_*[[]bindu]": 7,
    "test_malformed_answers.py::*[[]canon-verbs:*": 6,
    "test_wever_answers.py::*": 5,
    "test_interrupts.py::test_an_interrupted_run_over_three_*": 6,
    "test_reproduce.py::test_a_*": 6,
    "test_interrupts.py::*": 4,
    "test_selftest.py::test_fault_is_caught*": 0.3,
}


def expected_seconds(item: pytest.Item) -> float:
    nodeid = item.nodeid.replace("\\", "/")
    under = nodeid.split("tests/e2e/", 1)[-1]
    return next((s for pattern, s in LONG.items() if fnmatchcase(under, pattern)),
                0.2 if "/unit/" in nodeid else 2.0)


def shared_fixture_module(item: pytest.Item) -> str | None:
    """The module of a test that uses a module-scoped fixture (a whole run shared by its tests)."""
    defs = item._fixtureinfo.name2fixturedefs.values()
    return item.nodeid.split("::")[0] if any(d[-1].scope in ("module", "class") for d in defs) else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each worker's share starts with its longest tests, the shares about equal in time.

    `--dist worksteal` hands worker k the k-th contiguous slice of the collection, and an
    idle worker takes the end of another's queue: the slices are dealt here longest first
    (each to the share with the least time so far), so the long runs start at once, the
    short tests are what is left to steal at the end, and no worker is left alone with a
    two-minute run. The tests of a module that share a module-scoped fixture stay together
    in one share (by their summed time): another worker would make the fixture's run again."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(shared_fixture_module(item) or item.nodeid, []).append(item)
    ordered = sorted(units.values(), key=lambda unit: -sum(map(expected_seconds, unit)))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    room, left = [], len(items)
    for k in range(workers):  # worksteal's slices: each worker in turn, what is left // workers left
        room.append(left // (workers - k))
        left -= room[-1]
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    seconds = [0.0] * workers
    for unit in ordered:
        fits = [k for k in range(workers) if room[k] >= len(unit)] or [room.index(max(room))]
        k = min(fits, key=seconds.__getitem__)
        shares[k] += unit
        seconds[k] += sum(map(expected_seconds, unit))
        room[k] -= len(unit)
    items[:] = [item for share in shares for item in share]


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (four profiles, their specs and tables) lives to the end:
    the garbage collector need not scan it again after every few thousand allocations."""
    gc.collect()
    gc.freeze()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers more than there are CPUs. Part of the suite waits on real
    time (deadlines, hung targets, child runs, a polled agent); the extra workers keep the
    cores busy then (2 cores: 8 min 32 s with four workers, the CPU 170% busy; about 10 min
    50 s with three)."""
    return (os.cpu_count() or 1) + 2


_PORTS_PER_WORKER = 500
_next_port = itertools.count()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port for a child server, free now and out of other hands until it binds.

    Not ``bind(0)``: the kernel hands the same ephemeral range to every client connection
    and every other worker's ``bind(0)``, so a port freed here was sometimes taken before
    the child bound it (CI: "address already in use"). Each xdist worker instead takes its
    own block of ports below the ephemeral range, and skips any port in use now."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    # several checkouts testing side by side on one machine each take other blocks; the blocks
    # go round the room below the ephemeral range (63 workers' worth from 32768): past it, every
    # block above 7 used to start at port 1024, all of them the same ports
    worker += 8 * int(os.environ.get("CONFORMANCE_TEST_PORT_BLOCK", "0") or 0)
    low = _ephemeral_low()
    worker %= max(1, (low - 1024) // _PORTS_PER_WORKER)
    first = max(1024, low - _PORTS_PER_WORKER * (worker + 1))
    for _ in range(_PORTS_PER_WORKER):
        port = first + next(_next_port) % _PORTS_PER_WORKER
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {first}-{first + _PORTS_PER_WORKER - 1}")


def conformance(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the `conformance` command as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", *args],
        cwd=cwd or ROOT, capture_output=True, text=True, timeout=timeout,
    )


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess:
    """Run the `conformance` command in this process (``cli.main``), as ``conformance()``
    reports it: for usage errors, which end before any run starts."""
    from conformance import cli

    try:
        code = cli.main(list(args))
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


class Server:
    def __init__(self, *args: str, tmp: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = tmp / f"serve-{self.port}.yaml"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "conformance.cli", "serve", *args, "--port", str(self.port),
             "--write-config", str(self.config)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                # the config first: it is written before this server listens, so a port that
                # answers before it exists is another test's server that took the free port
                if not self.config.exists():
                    raise OSError("not started yet")
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError as exc:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"serve exited: {self.proc.stdout.read()}") from exc
                time.sleep(0.1)
        raise RuntimeError("serve did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(*args: str) -> Server:
        server = Server(*args, tmp=tmp_path)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def requests_sent(profile: Any, rows: list[Any], *, binding: str | None = None,
                  budget: str = "standard") -> dict[str, list[tuple[str, str, dict[str, str], Any]]]:
    """Every request each of ``rows`` sent to the profile's reference, each row in a run of its
    own (each must pass there): row id -> [(method, path, headers, JSON body or None)], for the
    tests that hold generated valid requests to what a client may send."""
    import json

    from conformance.run.launch import open_run
    from conformance.run.runner import execute
    from conformance.transport.http import HttpTransport

    by_row: dict[str, list[tuple[str, str, dict[str, str], Any]]] = {}
    original = HttpTransport.request
    current: list[str] = []

    def record(self: HttpTransport, method: str, path: str, **kw: Any) -> Any:
        if current:
            body = kw.get("content") if kw.get("json_body") is None else json.dumps(kw["json_body"])
            text = body.decode() if isinstance(body, bytes) else body
            by_row.setdefault(current[0], []).append(
                (method, path, dict(kw.get("headers") or {}), json.loads(text) if text else None))
        return original(self, method, path, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(HttpTransport, "request", record)
    try:
        for row in rows:
            run = open_run(profile, "reference", budget=budget, binding=binding, shrink=False)
            current[:] = [row.id]
            try:
                assert execute(row, run).status == "passed", row.id
            finally:
                current.clear()
                run.http.close()
    finally:
        mp.undo()
    return by_row


@contextlib.contextmanager
def child_server(command: list[str], base: str, timeout: float, ready: str | None = None) -> Iterator[str]:
    """Run ``command`` (a server that prints ``listening on <base>`` once bound) and yield
    ``base`` once it is ready; stopped at the end. Ready means the child printed its line (so
    the port is its own, not another test's server that took the same free port) and, given
    ``ready``, that URL answers 200."""
    import threading

    import httpx

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    listening = threading.Event()

    def drain() -> None:  # also keeps the pipe from filling up with the child's log lines
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)
            if line.startswith(f"listening on {base}"):
                listening.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{command[1]} exited {proc.returncode}: {''.join(output)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[1]} not ready in {timeout} s: {''.join(output)}")
            if listening.wait(0.1):
                if ready is None:
                    break
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(ready, timeout=2).status_code == 200:
                        break
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
