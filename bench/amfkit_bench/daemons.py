"""Real servers for the experiments, from the system's packages, each on a free port of
127.0.0.1 in a temporary folder, stopped and removed on exit: PostgreSQL (initdb and
pg_ctl; as root, run as the `postgres` user), Redis, memcached and nginx (serving a
folder, as a web server serving files directly). `make system-deps` installs them.
The test suite starts PostgreSQL through the same code (tests/support/pg.py)."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PgServer", "find_bindir", "find_executable", "free_port", "memcached", "nginx", "postgres", "redis", "wait_for_port"]

START_WAIT = 30.0
PG_USER = "amfkit"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes] | None = None, what: str = "server") -> None:
    """Return once 127.0.0.1:`port` accepts connections; RuntimeError if `proc` exits
    first or START_WAIT passes."""
    deadline = time.monotonic() + START_WAIT
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not listen on port {port} within {START_WAIT:g} s")
        time.sleep(0.02)


def find_executable(name: str) -> str | None:
    """`name` on PATH, else in the system folders Debian installs servers to; None if absent."""
    return shutil.which(name) or next((f"{d}/{name}" for d in ("/usr/bin", "/usr/sbin", "/usr/local/bin") if os.path.isfile(f"{d}/{name}")), None)


def _executable(name: str) -> str:
    found = find_executable(name)
    if found is None:
        raise RuntimeError(f"{name} not found: run `make system-deps` (apt-get install {name})")
    return found


@contextlib.contextmanager
def _process(argv: list[str], port: int, what: str, cwd: str | None = None) -> Iterator[int]:
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, cwd=cwd)
    try:
        try:
            wait_for_port(port, proc, what)
        except RuntimeError as e:
            log.seek(0)
            raise RuntimeError(f"{e}: {log.read().decode(errors='replace')[-1500:]}") from None
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextlib.contextmanager
def redis() -> Iterator[str]:
    """A Redis server without persistence; yields its URL."""
    exe = _executable("redis-server")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="amfkit-redis-") as base:
        argv = [exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", base]
        with _process(argv, port, "redis-server"):
            yield f"redis://127.0.0.1:{port}/0"


@contextlib.contextmanager
def memcached(memory_mb: int = 64) -> Iterator[str]:
    """A memcached server; yields its URL."""
    exe = _executable("memcached")
    port = free_port()
    argv = [exe, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", str(memory_mb)]
    if os.geteuid() == 0:
        argv += ["-u", "nobody"]  # memcached refuses to run as root without -u
    with _process(argv, port, "memcached"):
        yield f"memcached://127.0.0.1:{port}"


@contextlib.contextmanager
def nginx(root: str, prefix: str = "/assets/", workers: int = 2) -> Iterator[int]:
    """nginx serving the folder `root` under `prefix` (sendfile on, no access log, the
    system's MIME types, long keep-alive); yields its port."""
    exe = _executable("nginx")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="amfkit-nginx-") as base:
        os.chmod(base, 0o755)
        mime = "include /etc/nginx/mime.types;" if os.path.isfile("/etc/nginx/mime.types") else ""
        temp = " ".join(f"{kind}_temp_path {base}/tmp;" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        user = "user root;" if os.geteuid() == 0 else ""  # workers must read the caller's files
        conf = f"""
{user}
worker_processes {workers};
daemon off;
pid {base}/nginx.pid;
error_log {base}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  {mime}
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  {temp}
  server {{
    listen 127.0.0.1:{port};
    location {prefix} {{ alias {root.rstrip('/')}/; }}
  }}
}}
"""
        path = os.path.join(base, "nginx.conf")
        with open(path, "w") as f:
            f.write(conf)
        os.mkdir(os.path.join(base, "tmp"))
        with _process([exe, "-c", path, "-p", base], port, "nginx"):
            yield port


# --- PostgreSQL --------------------------------------------------------------------------


@dataclass(frozen=True)
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

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.dbname}"


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
def postgres(bindir: Path | None = None, max_connections: int = 40) -> Iterator[PgServer]:
    """A throw-away PostgreSQL server (trust authentication for the user `amfkit`,
    durability off: the data is thrown away); stopped and removed on exit."""
    bindir = bindir or find_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found: run `make system-deps` (apt-get install postgresql)")
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
            [str(bindir / "initdb"), "-D", str(datadir), "-U", PG_USER, "-A", "trust", "-E", "UTF8", "--locale=C", "-N"],
            cwd=base,
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}")
        last = ""
        for _attempt in range(5):
            port = free_port()
            options = " ".join(
                [
                    "-c listen_addresses=127.0.0.1",
                    f"-p {port}",
                    f"-c unix_socket_directories={shlex.quote(str(base))}",
                    "-c fsync=off",
                    "-c synchronous_commit=off",
                    "-c full_page_writes=off",
                    f"-c max_connections={max_connections}",
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
            raise RuntimeError(f"pg_ctl start failed:\n{last}")
        yield PgServer("127.0.0.1", port, PG_USER, "postgres", datadir, bindir)
    finally:
        if started:
            runner.run([str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "fast", "-w", "-t", "60", "stop"], cwd=base)
        shutil.rmtree(base, ignore_errors=True)
