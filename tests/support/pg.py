"""A real PostgreSQL server for the tests, started in a temporary directory.

    from pg import postgres  # the session fixture (tests/support is on sys.path)

    def test_something(postgres):
        with psycopg.connect(postgres.conninfo) as conn: ...

The server is `amfkit_bench.daemons.postgres` (the benchmarks start theirs the same
way): `initdb` and `pg_ctl` from the installed server (Debian's /usr/lib/postgresql/N/bin,
`pg_config --bindir`, or PATH), listening on 127.0.0.1 on a free port with its socket in
the temporary directory, trust authentication for the user `amfkit`, and durability off
(fsync, synchronous_commit, full_page_writes) because the data is thrown away. As root,
the server runs as the `postgres` user (which Debian's package creates). The server is
stopped and its directory removed when the session ends.

When no server is installed the tests that use it FAIL (they are never skipped):
`make system-deps` (run by `make test`) installs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from amfkit_bench import daemons
from amfkit_bench.daemons import PgServer, find_bindir

__all__ = ["PgServer", "find_bindir", "postgres", "start_postgres"]


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
    try:
        server_cm = daemons.postgres(bindir, max_connections=60)
        server = server_cm.__enter__()
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield server
    finally:
        server_cm.__exit__(None, None, None)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgServer]:
    """A PostgreSQL server on 127.0.0.1 for the whole test session."""
    with start_postgres() as server:
        yield server
