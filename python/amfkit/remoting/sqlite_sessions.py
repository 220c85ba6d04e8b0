"""Sessions in a SQLite file, shared by every worker process of one host
(`Gateway(services, session_store="sqlite:///var/lib/app/sessions.db")`).

Each session is one row: its id, its expiry (wall-clock seconds, so that every process
reads the same time) and its data as one AMF3 value (so a session holds what a service
may return: dicts, lists, dates, typed objects). The file is in WAL mode, so readers never
wait for a writer; each call runs in a worker thread on a connection of a small pool, so
a slow disk never stalls the event loop; `close()` closes every connection. docs/gateway.md,
"Sessions".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Callable

from .. import AMFError, amf3
from .._text import shown
from .sessions import Session, new_session_id

__all__ = ["SQLiteSessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS amfkit_sessions (
    id TEXT PRIMARY KEY,
    expires REAL NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS amfkit_sessions_expires ON amfkit_sessions (expires);
"""

#: A session's data is bounded like a request body: a larger one is refused at save.
MAX_SESSION_BYTES = 1 << 20
#: Connections kept open between calls (more may be open while more threads call at
#: once; each is closed when it comes back to a full pool).
MAX_IDLE_CONNECTIONS = 4


class SQLiteSessionStore:
    """Sessions in the SQLite file at `path` (created when missing). Each expires `ttl`
    seconds after its last use; past `max_sessions`, creating one drops the ones closest
    to expiry. Any number of processes and threads may share the file. `close()` (or
    `with store:`) closes its connections; a closed store refuses calls."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ttl: float = 1800.0,
        max_sessions: int = 100_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.path = os.fspath(path)
        self.ttl = float(ttl)
        self.max_sessions = int(max_sessions)
        self._clock = clock
        # Idle connections, used by one thread at a time (check_same_thread=False lets a
        # connection go from thread to thread, and close() close it from any).
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._creates = 0
        with contextlib.closing(self._open()) as db:  # a store not yet used holds no connection
            db.executescript(_SCHEMA)

    @classmethod
    def from_url(cls, url: str, **options: float) -> SQLiteSessionStore:
        """`sqlite:///relative/path.db` or `sqlite:////absolute/path.db`."""
        prefix = "sqlite:///"
        if not url.startswith(prefix) or len(url) == len(prefix):
            raise ValueError(f"a SQLite session store URL is sqlite:///PATH, not {shown(url)}")
        return cls(url[len(prefix) :], **options)  # type: ignore[arg-type]

    # --- connections -----------------------------------------------------------------

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """A connection for one call: an idle one, else a new one; back to the pool
        after the call, or closed when the pool is full or the store closed meanwhile."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"the session store {shown(self.path)} is closed")
            db = self._idle.pop() if self._idle else None
        if db is None:
            db = self._open()
        try:
            yield db
        finally:
            with self._lock:
                kept = not self._closed and len(self._idle) < MAX_IDLE_CONNECTIONS
                if kept:
                    self._idle.append(db)
            if not kept:
                db.close()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            db.close()
            raise
        return db

    def close(self) -> None:
        """Close the idle connections now, and those in use when their call ends; later
        calls raise RuntimeError. Closing twice is harmless."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for db in idle:
            db.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> SQLiteSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the SessionStore methods ------------------------------------------------------

    def __len__(self) -> int:
        with self._db() as db:
            return int(db.execute("SELECT COUNT(*) FROM amfkit_sessions").fetchone()[0])

    async def get(self, session_id: str) -> Session | None:
        if not isinstance(session_id, str):
            return None
        return await asyncio.to_thread(self._get, session_id)

    def _get(self, session_id: str) -> Session | None:
        now = self._clock()
        with self._db() as db:
            row = db.execute("SELECT expires, data FROM amfkit_sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                return None
            if row[0] <= now:
                db.execute("DELETE FROM amfkit_sessions WHERE id = ? AND expires <= ?", (session_id, now))
                return None
            db.execute("UPDATE amfkit_sessions SET expires = ? WHERE id = ?", (now + self.ttl, session_id))
        try:
            data = amf3.decode(row[1])
        except AMFError:  # a corrupted row: the session is gone, not the request
            return None
        session = Session(data if isinstance(data, dict) else {})
        session.modified = False
        return session

    async def create(self, session_id: str | None = None) -> tuple[str, Session]:
        sid = session_id or new_session_id()
        await asyncio.to_thread(self._write, sid, {}, True)
        return sid, Session()

    async def save(self, session_id: str, session: Session) -> None:
        await asyncio.to_thread(self._write, session_id, dict(session), False)
        session.modified = False

    def _write(self, session_id: str, data: dict[str, object], new: bool) -> None:
        blob = amf3.encode(data)
        if len(blob) > MAX_SESSION_BYTES:
            raise ValueError(f"a session holds at most {MAX_SESSION_BYTES} bytes of AMF3, this one {len(blob)}")
        now = self._clock()
        with self._db() as db:
            if new:
                self._creates += 1
                if self._creates % 64 == 1:
                    self._prune(db, now)
            db.execute(
                "INSERT INTO amfkit_sessions (id, expires, data) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET expires = excluded.expires, data = excluded.data",
                (session_id, now + self.ttl, blob),
            )

    def _prune(self, db: sqlite3.Connection, now: float) -> None:
        """Drop expired sessions, then the ones closest to expiry past `max_sessions`
        (checked every 64 creations of this process, so the bound may be passed by at
        most that many per process in between)."""
        db.execute("DELETE FROM amfkit_sessions WHERE expires <= ?", (now,))
        over = int(db.execute("SELECT COUNT(*) FROM amfkit_sessions").fetchone()[0]) - self.max_sessions + 64
        if over > 0:
            db.execute(
                "DELETE FROM amfkit_sessions WHERE id IN (SELECT id FROM amfkit_sessions ORDER BY expires LIMIT ?)",
                (over,),
            )

    async def delete(self, session_id: str) -> None:
        if not isinstance(session_id, str):
            return
        await asyncio.to_thread(self._delete, session_id)

    def _delete(self, session_id: str) -> None:
        with self._db() as db:
            db.execute("DELETE FROM amfkit_sessions WHERE id = ?", (session_id,))
