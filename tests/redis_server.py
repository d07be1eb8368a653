"""A private redis-server for tests of the shared workspace lease store (SPEC §5).

``private_redis()`` starts ``redis-server`` on a free 127.0.0.1 port in a temporary
directory, with persistence off, and yields ``(url, stop)``; ``stop()`` shuts the server
down (idempotent), e.g. to test a store that goes away while a lease is held. The
session fixture ``redis_url`` prefers ``$RELCONSOLE_TEST_REDIS_URL`` (a server CI
started) and otherwise a private server; with neither it skips the test, unless
``RELCONSOLE_REQUIRE_REDIS=1``, when it fails.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

ENV_URL = "RELCONSOLE_TEST_REDIS_URL"
ENV_REQUIRE = "RELCONSOLE_REQUIRE_REDIS"
START_SECONDS = 10.0


def redis_server_binary() -> str | None:
    """The redis-server on PATH, or None."""
    return shutil.which("redis-server")


def no_redis(reason: str) -> None:
    """Skip the calling test, or fail it when ``RELCONSOLE_REQUIRE_REDIS=1``."""
    if os.environ.get(ENV_REQUIRE) == "1":
        pytest.fail(f"{reason} (and {ENV_REQUIRE}=1)")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _start(binary: str, workdir: Path, extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen, int]:
    """Start a server on a free port (``extra``: more server options, e.g. ``--maxmemory 2mb``);
    retried, since another process may take the port first."""
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                 "--appendonly", "no", "--dir", str(workdir), "--daemonize", "no", *extra],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_SECONDS
        while proc.poll() is None and time.monotonic() < deadline:
            if _pong(port):
                return proc, port
            time.sleep(0.05)
        _stop(proc)
    raise RuntimeError(f"{binary} did not start on 127.0.0.1")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def private_redis(*extra: str):
    """Yield ``(url, stop)``: ``redis://127.0.0.1:PORT/0`` of a fresh server started with the
    server options ``extra`` (e.g. ``"--maxmemory-policy", "allkeys-lru"``), and a function
    that stops it (safe to call twice). Skips (or fails, see module doc) without redis-server."""
    binary = redis_server_binary()
    if binary is None:
        no_redis("redis-server is not installed")
    workdir = Path(tempfile.mkdtemp(prefix="relconsole-redis-"))
    proc, port = _start(binary, workdir, extra)
    try:
        yield f"redis://127.0.0.1:{port}/0", lambda: _stop(proc)
    finally:
        _stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url():
    """A Redis URL for the session: ``$RELCONSOLE_TEST_REDIS_URL`` or a private server.

    Tests share it, so each uses its own random workspace names."""
    if os.environ.get(ENV_URL):
        yield os.environ[ENV_URL]
        return
    if redis_server_binary() is None:
        no_redis(f"redis-server is not installed and {ENV_URL} is unset")
    with private_redis() as (url, _stop_server):
        yield url
