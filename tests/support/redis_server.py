"""A real Redis server for the tests, started in a temporary directory.

    def test_something(redis_server):  # the session fixture (registered in conftest.py)
        store = RedisStore(redis_server.url, prefix="t1:")

The fixture runs the installed `redis-server` (Debian's package) on 127.0.0.1 on a free
port, its files in a temporary directory, with every write in the append-only file and
fsynced before Redis answers (`appendonly yes`, `appendfsync always`, no snapshots): a
test may `restart()` it (or `stop()` and `start()` it) and expects what Redis
acknowledged to be there after. The server is stopped and its directory removed when the
session ends.

When no server is installed the tests that use it FAIL (they are never skipped):
`make system-deps` (run by `make test`) installs it.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from amfkit_bench import daemons

__all__ = ["RedisServer", "find_redis_server", "redis_server", "start_redis"]

HOST = "127.0.0.1"
#: Seconds to wait for the server to answer PING (it replays its append-only file first).
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


def find_redis_server() -> str | None:
    """The `redis-server` executable; None if absent."""
    return daemons.find_executable("redis-server")


def _free_port() -> int:
    return daemons.free_port()


def _ping(port: int) -> bool:
    """Whether a Redis server on `port` answers PING (not while it loads its data)."""
    try:
        with socket.create_connection((HOST, port), timeout=1.0) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process on a fixed port and data directory, started again on
    the same ones after a stop."""

    def __init__(self, executable: str, base: Path, port: int) -> None:
        self.executable = executable
        self.host = HOST
        self.port = port
        self.base = base
        self.datadir = base / "data"
        self.log = base / "server.log"
        self.datadir.mkdir(exist_ok=True)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server (a no-op if it runs) and wait until it answers PING."""
        if self.running:
            return
        argv = [
            self.executable,
            "--bind", self.host,
            "--port", str(self.port),
            "--protected-mode", "no",
            "--dir", str(self.datadir),
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.log),
        ]  # fmt: skip
        self._process = subprocess.Popen(argv, cwd=self.base, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            if _ping(self.port):
                return
            time.sleep(0.02)
        self.stop()
        pytest.fail(f"redis-server did not start on {self.host}:{self.port}:\n{self._log_tail()}", pytrace=False)

    def stop(self) -> None:
        """Stop the server gracefully (SIGTERM: it finishes its append-only file and
        exits), killing it if it does not exit in time. A no-op if it is not running."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def kill(self) -> None:
        """Kill the server (SIGKILL: no chance to finish anything) and reap it."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def restart(self) -> None:
        """Stop, then start again on the same port and data directory."""
        self.stop()
        self.start()

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def __repr__(self) -> str:
        return f"RedisServer({self.url!r}, running={self.running})"


@contextlib.contextmanager
def start_redis() -> Iterator[RedisServer]:
    """Start a throw-away Redis server; stop it and remove its files on exit."""
    executable = find_redis_server()
    if executable is None:
        pytest.fail(
            "redis-server not found: run `make system-deps` (apt-get install redis-server) "
            "— the Redis tests need a real server",
            pytrace=False,
        )
    base = Path(tempfile.mkdtemp(prefix="amfkit-redis-"))
    server: RedisServer | None = None
    try:
        last: BaseException | None = None
        for _attempt in range(5):
            # A free port can be taken by someone else before the server binds it: retry.
            server = RedisServer(executable, base, _free_port())
            try:
                server.start()
                break
            except pytest.fail.Exception as e:
                last = e
        else:
            raise last if last is not None else RuntimeError("redis-server did not start")
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A Redis server on 127.0.0.1 for the whole test session (a test that stops it
    starts it again)."""
    with start_redis() as server:
        yield server
