"""The SQLite session store: the SessionStore contract, sharing between store objects
(as between worker processes), expiry by the wall clock, bounds, and damaged rows."""

from __future__ import annotations

import asyncio
import datetime
import sqlite3

import pytest

from amfkit.remoting.sessions import MemorySessionStore, PRINCIPAL_KEY, open_session_store
from amfkit.remoting.sqlite_sessions import MAX_SESSION_BYTES, SQLiteSessionStore


def run(coro):
    return asyncio.run(coro)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_is_kept_as_amf3_and_seen_by_another_store_on_the_file(tmp_path):
    path = tmp_path / "s.db"
    a, b = SQLiteSessionStore(path), SQLiteSessionStore(path)
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
    store = SQLiteSessionStore(tmp_path / "s.db", ttl=10, clock=clock)
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
    store = SQLiteSessionStore(tmp_path / "s.db", max_sessions=100, clock=clock)
    for _ in range(400):
        clock.now += 1
        run(store.create())
    assert len(store) <= 100 + 64


def test_a_damaged_row_is_no_session_and_an_oversized_session_is_refused(tmp_path):
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    sid, session = run(store.create())
    with sqlite3.connect(path) as db:
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
    mine = MemorySessionStore()
    assert open_session_store(mine) is mine
    for bad in ("sqlite:///", "postgres://x", "nope"):
        with pytest.raises(ValueError):
            open_session_store(bad)
