"""The SQLite session store: the SessionStore contract, sharing between store objects
(as between worker processes), expiry by the wall clock, bounds, damaged rows, and its
connections: bounded, every one closed by close() (the gateway's at its shutdown)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import sqlite3
import threading

import pytest

from amfkit.remoting import Gateway
from amfkit.remoting.sessions import MemorySessionStore, PRINCIPAL_KEY, open_session_store
from amfkit.remoting.sqlite_sessions import MAX_IDLE_CONNECTIONS, MAX_SESSION_BYTES, SQLiteSessionStore


def run(coro):
    return asyncio.run(coro)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_is_kept_as_amf3_and_seen_by_another_store_on_the_file(tmp_path):
    path = tmp_path / "s.db"
    with SQLiteSessionStore(path) as a, SQLiteSessionStore(path) as b:
        check_shared(a, b)


def check_shared(a: SQLiteSessionStore, b: SQLiteSessionStore) -> None:
    sid, session = run(a.create())
    assert run(b.get(sid)) == {}
    session[PRINCIPAL_KEY] = ["ada", ["admin"]]
    session["cart"] = [1, 2.5, {"when": datetime.datetime(2026, 1, 2, 3, 4, 5)}]
    run(a.save(sid, session))
    seen = run(b.get(sid))
    assert seen == session and not seen.modified
    run(b.delete(sid))
    assert run(a.get(sid)) is None
    assert run(a.get(12)) is None  # no session has a non-text id
    run(a.delete(None))


def test_sessions_expire_by_the_wall_clock_and_use_renews_them(tmp_path):
    clock = Clock()
    with SQLiteSessionStore(tmp_path / "s.db", ttl=10, clock=clock) as store:
        sid, _ = run(store.create())
        clock.now += 9
        assert run(store.get(sid)) == {}  # renewed for 10 more seconds
        clock.now += 9
        assert run(store.get(sid)) == {}
        clock.now += 11
        assert run(store.get(sid)) is None
        assert len(store) == 0


def test_the_number_of_sessions_is_bounded(tmp_path):
    clock = Clock()
    with SQLiteSessionStore(tmp_path / "s.db", max_sessions=100, clock=clock) as store:
        for _ in range(400):
            clock.now += 1
            run(store.create())
        assert len(store) <= 100 + 64


def test_a_damaged_row_is_no_session_and_an_oversized_session_is_refused(tmp_path):
    path = tmp_path / "s.db"
    with SQLiteSessionStore(path) as store:
        sid, session = run(store.create())
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute("UPDATE amfkit_sessions SET data = ? WHERE id = ?", (b"\x0a\xff\xff", sid))
        assert run(store.get(sid)) is None
        session["big"] = "x" * MAX_SESSION_BYTES
        with pytest.raises(ValueError, match="at most"):
            run(store.save(sid, session))


def test_session_store_urls(tmp_path):
    assert isinstance(open_session_store(None), MemorySessionStore)
    assert isinstance(open_session_store("memory://"), MemorySessionStore)
    store = open_session_store(f"sqlite:///{tmp_path / 'u.db'}")
    assert isinstance(store, SQLiteSessionStore) and store.path == str(tmp_path / "u.db")
    store.close()
    mine = MemorySessionStore()
    assert open_session_store(mine) is mine
    for bad in ("sqlite:///", "postgres://x", "nope"):
        with pytest.raises(ValueError):
            open_session_store(bad)


# --- connections ---------------------------------------------------------------------


def open_files(path) -> int:
    """How many file descriptors of this process are open on `path`. SQLite keeps the
    descriptor of a closed connection open while another connection of the process
    holds the file (its POSIX locks are per process), so 0 means that every connection
    to the file is closed."""
    real = os.path.realpath(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") == real:
                count += 1
    return count


class Counted(sqlite3.Connection):
    """A connection that counts how many of its kind are open."""

    open = 0
    peak = 0

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        Counted.open += 1
        Counted.peak = max(Counted.peak, Counted.open)
        self._counted = True

    def close(self) -> None:
        if self._counted:
            self._counted = False
            Counted.open -= 1
        super().close()


@pytest.fixture
def counted(monkeypatch):
    """The store's connections made as `Counted`."""
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *args, **kwargs: connect(*args, factory=Counted, **kwargs))
    Counted.open = Counted.peak = 0
    return Counted


async def burst(store: SQLiteSessionStore, n: int) -> list[str]:
    """`n` sessions created at once (asyncio.to_thread spreads them over its threads)."""
    made = await asyncio.gather(*(store.create() for _ in range(n)))
    await asyncio.gather(*(store.get(sid) for sid, _ in made))
    return [sid for sid, _ in made]


def test_connections_are_pooled_and_bounded(tmp_path, counted):
    path = tmp_path / "s.db"
    with SQLiteSessionStore(path) as store:
        assert counted.open == 0 and open_files(path) == 0  # a store not yet used holds none
        sids = run(burst(store, 40))
        assert len(store) == 40
        assert 1 <= counted.open <= MAX_IDLE_CONNECTIONS
        # Calls under way at once have a connection each; a few are kept for the next ones.
        n = MAX_IDLE_CONNECTIONS + 3
        together = threading.Barrier(n, timeout=30)

        def call() -> None:
            with store._db() as db:
                db.execute("SELECT COUNT(*) FROM amfkit_sessions").fetchone()
                together.wait()

        threads = [threading.Thread(target=call) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert counted.peak >= n
        assert counted.open == MAX_IDLE_CONNECTIONS
        assert run(store.get(sids[0])) == {}
    assert counted.open == 0 and open_files(path) == 0


def test_close_closes_every_connection_and_refuses_later_calls(tmp_path):
    path = tmp_path / "s.db"
    wal = tmp_path / "s.db-wal"
    a, b = SQLiteSessionStore(path), SQLiteSessionStore(path)
    run(burst(a, 20))
    run(burst(b, 20))
    assert wal.exists() and open_files(path) >= 2
    a.close()
    assert wal.exists()  # b still holds the file
    b.close()
    b.close()  # twice is harmless
    assert a.closed and b.closed
    # SQLite removes the WAL file when the last connection to the database closes.
    assert open_files(path) == 0 and not wal.exists()
    with pytest.raises(RuntimeError, match="closed"):
        run(a.create())
    with pytest.raises(RuntimeError, match="closed"):
        len(b)
    with SQLiteSessionStore(path) as c:  # the sessions are in the file
        assert len(c) == 40


def test_a_connection_in_use_at_close_is_closed_when_its_call_ends(tmp_path):
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    with store._db() as db:  # a call under way
        store.close()
        assert db.execute("SELECT COUNT(*) FROM amfkit_sessions").fetchone()[0] == 0
    assert open_files(path) == 0
    with pytest.raises(sqlite3.ProgrammingError):
        db.execute("SELECT 1")


def lifespan(gateway: Gateway) -> list[str]:
    sent: list[str] = []
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

    async def receive() -> dict[str, str]:
        return incoming.pop(0)

    async def send(message: dict[str, str]) -> None:
        sent.append(message["type"])

    run(gateway({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send))
    return sent


def test_the_gateway_closes_the_store_it_opened_at_shutdown(tmp_path):
    path = tmp_path / "s.db"
    gateway = Gateway({}, session_store=f"sqlite:///{path}")
    store = gateway.sessions
    assert isinstance(store, SQLiteSessionStore)
    run(burst(store, 10))
    assert open_files(path) >= 1
    assert lifespan(gateway) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert store.closed and open_files(path) == 0 and not (tmp_path / "s.db-wal").exists()
    gateway.close()  # again: harmless


def test_the_gateway_leaves_a_store_it_was_given_to_its_owner(tmp_path):
    path = tmp_path / "s.db"
    with SQLiteSessionStore(path) as store:
        gateway = Gateway({}, session_store=store)
        assert lifespan(gateway) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
        gateway.__rsgi_del__(None)  # granian's hook: the same close()
        assert not store.closed
        run(store.create())
    assert store.closed


def test_granians_hook_closes_the_store_the_gateway_opened(tmp_path):
    gateway = Gateway({}, session_store=f"sqlite:///{tmp_path / 's.db'}")
    store = gateway.sessions
    assert isinstance(store, SQLiteSessionStore)
    run(store.create())
    gateway.__rsgi_del__(None)
    assert store.closed and open_files(tmp_path / "s.db") == 0
