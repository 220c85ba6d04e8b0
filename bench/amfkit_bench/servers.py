"""The servers the experiments measure: uvicorn or granian in a process of their own,
started on a free port of 127.0.0.1 and stopped after (shared by the gateway and
messaging experiments); `cpu_seconds` reads the CPU time a server's processes used."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from typing import Iterator, Sequence

from .daemons import free_port, wait_for_port

__all__ = ["Server", "cpu_seconds", "free_port", "granian", "uvicorn"]


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
def uvicorn(app: str, *, env: dict[str, str], args: Sequence[str] = (), workers: int = 1) -> Iterator[Server]:
    """uvicorn serving `app` (MODULE:ATTR) with `workers` worker processes, httptools
    (uvicorn's own protocol unless `args` name another with --http) and uvloop, and
    `args` on its command line; ready (accepting connections) when yielded."""
    port = free_port()
    http = [] if "--http" in args else ["--http", "httptools"]
    cmd = [
        sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
        "--workers", str(workers), "--log-level", "warning", "--no-access-log",
        *http, "--loop", "uvloop", *args,
    ]
    with _running(cmd, port, app, env) as server:
        yield server


@contextlib.contextmanager
def granian(app: str, *, interface: str, env: dict[str, str], workers: int = 1, args: Sequence[str] = ()) -> Iterator[Server]:
    """granian serving `app` (MODULE:ATTR) through `interface` ("asgi", "rsgi" or
    "wsgi") with `workers` worker processes, HTTP/1.1 and uvloop, and `args` on its
    command line; ready (accepting connections) when yielded."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "granian", "--interface", interface, "--host", "127.0.0.1", "--port", str(port),
        "--workers", str(workers), "--http", "1", "--loop", "uvloop", "--log-level", "warning", "--no-access-log",
        *args, app,
    ]
    with _running(cmd, port, app, env) as server:
        yield server


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds used so far by process `pid` and its descendants
    that are alive (Linux /proc; None elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0
    todo = [pid]
    seen = 0
    while todo and seen < 256:
        p = todo.pop()
        seen += 1
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError, IndexError):
            if p == pid:
                return None
    return total / tick


@contextlib.contextmanager
def _running(cmd: list[str], port: int, app: str, env: dict[str, str]) -> Iterator[Server]:
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
