"""A real memcached server for the tests.

    def test_something(memcached_server):  # the session fixture (registered in conftest.py)
        store = MemcachedStore(memcached_server.url, prefix="t1:")

The fixture runs the installed `memcached` (Debian's package) on 127.0.0.1 on a free port
(TCP only, `-U 0`; 64 MB of memory, `-m 64`; the default 1 MB item limit). memcached
keeps nothing on disk: `stop()` and `start()` (or `restart()`) give an empty server on the
same port, as a crash would. `pause()` and `resume()` freeze and thaw the process
(SIGSTOP, SIGCONT): clients time out as with a server that hangs, and the data is still
there after. The server is stopped when the session ends.

When memcached is not installed the tests that use it FAIL (they are never skipped):
`make system-deps` (run by `make test`) installs it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
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

__all__ = ["MemcachedServer", "find_memcached", "memcached_server", "start_memcached"]

HOST = "127.0.0.1"
#: Seconds to wait for the server to answer `version`.
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


def find_memcached() -> str | None:
    """The `memcached` executable; None if absent."""
    return daemons.find_executable("memcached")


def _free_port() -> int:
    return daemons.free_port()


def _answers(port: int) -> bool:
    """Whether a memcached server on `port` answers `version`."""
    try:
        with socket.create_connection((HOST, port), timeout=1.0) as s:
            s.sendall(b"version\r\n")
            return s.recv(64).startswith(b"VERSION")
    except OSError:
        return False


class MemcachedServer:
    """One memcached process on a fixed port, started again on the same port after a
    stop (empty: memcached keeps nothing)."""

    def __init__(self, executable: str, base: Path, port: int) -> None:
        self.executable = executable
        self.host = HOST
        self.port = port
        self.base = base
        self.log = base / "server.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._paused = False

    @property
    def url(self) -> str:
        return f"memcached://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server (a no-op if it runs) and wait until it answers."""
        if self.running:
            return
        argv = [self.executable, "-l", self.host, "-p", str(self.port), "-U", "0", "-m", "64", "-c", "256"]
        if os.geteuid() == 0:
            # memcached refuses to run as root unless told which user to be.
            argv += ["-u", pwd.getpwuid(0).pw_name]
        with open(self.log, "ab") as log:
            self._process = subprocess.Popen(argv, cwd=self.base, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            if _answers(self.port):
                return
            time.sleep(0.02)
        self.stop()
        pytest.fail(f"memcached did not start on {self.host}:{self.port}:\n{self._log_tail()}", pytrace=False)

    def stop(self) -> None:
        """Stop the server (SIGTERM; killed if it does not exit in time). A no-op if it
        is not running."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            if self._paused:
                process.send_signal(signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._paused = False

    def restart(self) -> None:
        """Stop, then start again on the same port (empty)."""
        self.stop()
        self.start()

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): it accepts connections but answers nothing."""
        if self._process is not None and not self._paused:
            self._process.send_signal(signal.SIGSTOP)
            self._paused = True
            self._wait_state(self._process.pid, stopped=True)

    def _wait_state(self, pid: int, *, stopped: bool) -> None:
        """Wait until every thread of `pid` is stopped (or none is): a signal takes
        effect a moment after it is sent."""
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline:
            states = []
            for task in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(OSError):
                    # The state follows the command's closing parenthesis.
                    states.append(task.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0])
            if all((state in ("T", "t")) == stopped for state in states):
                return
            time.sleep(0.005)
        pytest.fail(f"memcached (pid {pid}) did not {'stop' if stopped else 'continue'}", pytrace=False)

    def resume(self) -> None:
        """Thaw a paused server (SIGCONT), its data intact."""
        if self._process is not None and self._paused:
            self._process.send_signal(signal.SIGCONT)
            self._paused = False
            self._wait_state(self._process.pid, stopped=False)

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) or "(empty server log)"
        except OSError:
            return "(no server log)"

    def __repr__(self) -> str:
        return f"MemcachedServer({self.url!r}, running={self.running})"


@contextlib.contextmanager
def start_memcached() -> Iterator[MemcachedServer]:
    """Start a throw-away memcached server; stop it on exit."""
    executable = find_memcached()
    if executable is None:
        pytest.fail(
            "memcached not found: run `make system-deps` (apt-get install memcached) — the memcached tests need a real server",
            pytrace=False,
        )
    base = Path(tempfile.mkdtemp(prefix="amfkit-memcached-"))
    server: MemcachedServer | None = None
    try:
        last: BaseException | None = None
        for _attempt in range(5):
            # A free port can be taken by someone else before the server binds it: retry.
            server = MemcachedServer(executable, base, _free_port())
            try:
                server.start()
                break
            except pytest.fail.Exception as e:
                last = e
        else:
            raise last if last is not None else RuntimeError("memcached did not start")
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def memcached_server() -> Iterator[MemcachedServer]:
    """A memcached server on 127.0.0.1 for the whole test session (a test that stops or
    pauses it starts or resumes it again)."""
    with start_memcached() as server:
        yield server
