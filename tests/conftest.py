import gc
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (four profiles, their specs and tables) lives to the end:
    the garbage collector need not scan it again after every few thousand allocations."""
    gc.collect()
    gc.freeze()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than there are CPUs. Part of the suite waits on real
    time (deadlines, hung targets, child runs); the extra worker keeps the cores busy then
    (2 cores, side by side: 2:22 and 2:26 with three workers, 2:32 and 2:36 with two)."""
    return (os.cpu_count() or 1) + 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
