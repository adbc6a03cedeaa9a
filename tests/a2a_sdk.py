"""Start the official A2A SDK's echo server (tests/a2a_sdk_server.py) for a test.

A subprocess rather than an in-process app: the SDK keeps its own background asyncio tasks
per A2A task, and the kit must reach it over real HTTP as it reaches any other target.
"""

from __future__ import annotations

import contextlib
import importlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.conftest import free_port

SERVER = Path(__file__).resolve().parent / "a2a_sdk_server.py"
CARD_PATH = "/.well-known/agent-card.json"


def sdk_available() -> bool:
    """Whether the SDK (``a2a-sdk``, a dev extra) imports, so tests can skip without it."""
    try:
        importlib.import_module("a2a.server.routes")
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def sdk_server(timeout: float = 20.0) -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:<port>``) of a fresh SDK echo server.

    Ready means the child printed its ``listening on`` line (so the port is its own, not
    another test's server that took the same free port) and its card answers."""
    port, grpc_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, str(SERVER), "--port", str(port), "--grpc-port", str(grpc_port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    listening = threading.Event()

    def drain() -> None:  # also keeps the pipe from filling up with the SDK's log lines
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
                raise RuntimeError(f"a2a-sdk server exited {proc.returncode}: {''.join(output)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"a2a-sdk server not ready in {timeout} s: {''.join(output)}")
            if listening.wait(0.1):
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(base + CARD_PATH, timeout=2).status_code == 200:
                        break
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
