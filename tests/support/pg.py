"""A real PostgreSQL server for the tests, started in a temporary directory.

    from pg import postgres  # the session fixture (tests/support is on sys.path)

    def test_something(postgres):
        with psycopg.connect(postgres.conninfo) as conn: ...

The fixture runs `initdb` and `pg_ctl` from the installed server (Debian's
/usr/lib/postgresql/N/bin, `pg_config --bindir`, or PATH), listening on 127.0.0.1 on a
free port with its socket in the temporary directory, trust authentication for the user
`amfkit`, and durability off (fsync, synchronous_commit, full_page_writes) because the
data is thrown away. PostgreSQL refuses to run as root: as root, the server runs as
the `postgres` user (which Debian's package creates) through `runuser` (or `su`).
The server is stopped and its directory removed when the session ends.

When no server is installed the tests that use it FAIL (they are never skipped):
`make system-deps` (run by `make test`) installs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["PgServer", "find_bindir", "postgres", "start_postgres"]

USER = "amfkit"


@dataclasses.dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    user: str
    dbname: str
    datadir: Path
    bindir: Path

    @property
    def conninfo(self) -> str:
        return f"host={self.host} port={self.port} user={self.user} dbname={self.dbname}"


def find_bindir() -> Path | None:
    """The directory holding `initdb` and `pg_ctl`, newest version first; None if absent."""
    candidates: list[Path] = []

    def version(path: str) -> tuple[int, ...]:
        part = Path(path).parent.parent.name
        return tuple(int(p) for p in part.split(".") if p.isdigit())

    for pg_ctl in sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=version, reverse=True):
        candidates.append(Path(pg_ctl).parent)
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10).stdout.strip()
            if out:
                candidates.append(Path(out))
    for tool in ("pg_ctl", "initdb"):
        found = shutil.which(tool)
        if found:
            candidates.append(Path(found).resolve().parent)
    for bindir in candidates:
        if (bindir / "pg_ctl").is_file() and (bindir / "initdb").is_file():
            return bindir
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Runner:
    """Runs the server's commands as a user PostgreSQL accepts (not root)."""

    def __init__(self) -> None:
        self.as_user: str | None = None
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    pwd.getpwnam(name)
                except KeyError:
                    continue
                self.as_user = name
                break
            else:
                raise RuntimeError("running as root and there is no 'postgres' (or 'nobody') user to run PostgreSQL as")

    def own(self, path: Path) -> None:
        if self.as_user is not None:
            entry = pwd.getpwnam(self.as_user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def run(self, argv: list[str], *, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        if self.as_user is not None:
            runuser = shutil.which("runuser")
            if runuser:
                argv = [runuser, "-u", self.as_user, "--", *argv]
            else:
                argv = ["su", "-s", "/bin/sh", self.as_user, "-c", shlex.join(argv)]
        env = dict(os.environ, LC_ALL="C", LANG="C")
        env.pop("PGDATA", None)
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def start_postgres() -> Iterator[PgServer]:
    """Start a throw-away PostgreSQL server; stop it and remove its files on exit."""
    bindir = find_bindir()
    if bindir is None:
        pytest.fail(
            "PostgreSQL server binaries (initdb, pg_ctl) not found: run `make system-deps` "
            "(apt-get install postgresql) — the PostgreSQL tests need a real server",
            pytrace=False,
        )
    runner = _Runner()
    # /tmp rather than a possibly private TMPDIR: the server's user must reach the directory.
    parent = "/tmp" if runner.as_user is not None and os.path.isdir("/tmp") else None
    base = Path(tempfile.mkdtemp(prefix="amfkit-pg-", dir=parent))
    runner.own(base)
    datadir = base / "data"
    log = base / "server.log"
    started = False
    try:
        init = runner.run(
            [str(bindir / "initdb"), "-D", str(datadir), "-U", USER, "-A", "trust", "-E", "UTF8", "--locale=C", "-N"],
            cwd=base,
        )
        if init.returncode != 0:
            pytest.fail(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}", pytrace=False)
        last = ""
        for _attempt in range(5):
            port = _free_port()
            options = " ".join(
                [
                    "-c listen_addresses=127.0.0.1",
                    f"-p {port}",
                    f"-c unix_socket_directories={shlex.quote(str(base))}",
                    "-c fsync=off",
                    "-c synchronous_commit=off",
                    "-c full_page_writes=off",
                    "-c max_connections=20",
                ]
            )
            start = runner.run(
                [str(bindir / "pg_ctl"), "-D", str(datadir), "-l", str(log), "-o", options, "-w", "-t", "60", "start"],
                cwd=base,
            )
            if start.returncode == 0:
                started = True
                break
            last = start.stdout + start.stderr + (log.read_text(errors="replace") if log.exists() else "")
        if not started:
            pytest.fail(f"pg_ctl start failed:\n{last}", pytrace=False)
        yield PgServer("127.0.0.1", port, USER, "postgres", datadir, bindir)
    finally:
        if started:
            runner.run([str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "fast", "-w", "-t", "60", "stop"], cwd=base)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgServer]:
    """A PostgreSQL server on 127.0.0.1 for the whole test session."""
    with start_postgres() as server:
        yield server
