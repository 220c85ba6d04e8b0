"""The servers the experiments measure: uvicorn in its own process, started on a free
port of 127.0.0.1 and stopped after (shared by the gateway and messaging experiments)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from typing import Iterator, Sequence

from .daemons import free_port, wait_for_port

__all__ = ["Server", "free_port", "uvicorn"]


class Server:
    """A running server: its port and process id; `log` is what it wrote to standard
    error, read when it stops."""

    def __init__(self, port: int, pid: int) -> None:
        self.port = port
        self.pid = pid
        self.log = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/gateway"


@contextlib.contextmanager
def uvicorn(app: str, *, env: dict[str, str], args: Sequence[str] = ()) -> Iterator[Server]:
    """uvicorn serving `app` (MODULE:ATTR) with one worker, httptools and uvloop, and
    `args` on its command line; ready (accepting connections) when yielded."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
        "--workers", "1", "--log-level", "warning", "--no-access-log",
        "--http", "httptools", "--loop", "uvloop", *args,
    ]
    # The server's messages go to a file: a pipe nobody reads could fill and block it.
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=log)
    server = Server(port, proc.pid)
    try:
        try:
            wait_for_port(port, proc, app)
        except RuntimeError as e:
            log.seek(0)
            raise RuntimeError(f"{app} did not start ({e}): {log.read().decode(errors='replace')[-2000:]}") from None
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.seek(0)
        server.log = log.read().decode(errors="replace").strip()
        log.close()
