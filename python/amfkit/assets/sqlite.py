"""The SQLite backend (`sqlite:///assets.db`): each asset is one row of a table in a SQLite
file that any number of threads and processes of one host may share.

The row holds the name, the size, the ETag (`content_etag`), the modification time (POSIX
seconds), the content type and the bytes as a BLOB. A put is one upsert, so it is atomic:
a process killed mid-put leaves the old row, never a part of the new one. The file is in
WAL mode (readers never wait for the writer, writers wait for each other up to `timeout`
seconds) and each thread has its own connection (closed when the thread ends or the store
closes). A ranged reader reads each chunk in its own short read transaction that first
checks that the row still has the ETag the reader started with (`AssetChanged` if not),
then reads the chunk through SQLite's incremental BLOB I/O, which reads only the pages of
the range (Python 3.11 and later; before, `substr(data, ...)` in the same checked query,
which loads the whole BLOB per chunk). Names are compared as UTF-8 bytes (SQLite's BINARY
collation), which is code point order.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

from .._text import shown
from .store import DEFAULT_MAX_SIZE, Asset, AssetChanged, AssetError, AssetReader, AssetStore, BytesReader, StoreUnavailable, content_etag, not_found, utc

__all__ = ["SQLiteStore", "SQLiteReader"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_HAS_BLOBOPEN = hasattr(sqlite3.Connection, "blobopen")


def check_table(table: object) -> str:
    """`table` when it is a plain SQL identifier (letters, digits, '_'; at most 63)."""
    if not isinstance(table, str) or not _IDENTIFIER.fullmatch(table):
        raise ValueError(f"table {shown(table)} is not a plain identifier (letters, digits and '_', at most 63)")
    if table.lower().startswith("sqlite_"):
        raise ValueError(f"table {shown(table)} is in SQLite's reserved 'sqlite_' namespace")
    return table


class _Handle:
    """One thread's connection; closes it when the thread's local data goes away."""

    __slots__ = ("db", "__weakref__")

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def close(self) -> None:
        try:
            self.db.close()
        except sqlite3.Error:
            pass

    def __del__(self) -> None:
        self.close()


class SQLiteReader(AssetReader):
    """Ranged reads of one version: every chunk is read only if the row still holds the
    version opened (same ETag), in one read transaction; `AssetChanged` otherwise."""

    def __init__(self, asset: Asset, store: SQLiteStore) -> None:
        self.asset = asset
        self._store: SQLiteStore | None = store

    def read(self, offset: int, size: int) -> bytes:
        if self._store is None:
            raise ValueError("read from a closed reader")
        if offset < 0 or size < 0:
            raise ValueError("offset and size must be 0 or more")
        if size == 0 or offset >= self.asset.size:
            return b""
        return self._store._read_range(self.asset, offset, min(size, self.asset.size - offset))

    def close(self) -> None:
        self._store = None


class SQLiteStore(AssetStore):
    """Assets in the SQLite file at `path` (created when missing), in `table` (created
    when missing). `timeout` is how long a put waits for another writer, in seconds."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        table: str = "amfkit_assets",
        timeout: float = 30.0,
    ) -> None:
        path = os.fspath(path)
        if not path or path == ":memory:" or path.startswith("file:"):
            raise ValueError("a sqlite asset store needs a file path (each thread opens its own connection)")
        self.path = os.path.abspath(path)
        super().__init__("sqlite:///" + self.path, max_size=max_size)
        self.url = "sqlite:///" + self.path  # a path, never a password: shown as it is
        self.table = check_table(table)
        if not timeout > 0:
            raise ValueError("timeout must be positive")
        self.timeout = float(timeout)
        self._local = threading.local()
        self._handles: weakref.WeakSet[_Handle] = weakref.WeakSet()
        self._handles_lock = threading.Lock()
        self._closed = False
        q = f'"{self.table}"'
        self._sql_put = (
            f"INSERT INTO {q} (name, size, etag, modified, content_type, data) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET size = excluded.size, etag = excluded.etag, "
            "modified = excluded.modified, content_type = excluded.content_type, data = excluded.data"
        )
        self._sql_stat = f"SELECT size, etag, modified, content_type FROM {q} WHERE name = ?"
        self._sql_load = f"SELECT size, etag, modified, content_type, data FROM {q} WHERE name = ?"
        # The bytes too when there are at most so many (one query for a small asset).
        self._sql_small = f"SELECT size, etag, modified, content_type, CASE WHEN size <= ? THEN data END FROM {q} WHERE name = ?"
        self._sql_delete = f"DELETE FROM {q} WHERE name = ?"
        self._sql_names = f"SELECT name FROM {q} WHERE name >= ? AND substr(name, 1, length(?)) = ? ORDER BY name"
        self._sql_rowid = f"SELECT rowid FROM {q} WHERE name = ? AND etag = ?"
        self._sql_substr = f"SELECT substr(data, ?, ?) FROM {q} WHERE name = ? AND etag = ?"
        try:
            self._db().execute(
                f"CREATE TABLE IF NOT EXISTS {q} ("
                "name TEXT PRIMARY KEY, size INTEGER NOT NULL, etag TEXT NOT NULL, "
                "modified REAL NOT NULL, content_type TEXT NOT NULL, data BLOB NOT NULL)"
            )
        except BaseException:
            self.close()
            raise

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SQLiteStore:
        """`sqlite:///relative/path.db` or `sqlite:////absolute/path.db`."""
        prefix = "sqlite:///"
        if not url.startswith(prefix) or len(url) == len(prefix):
            raise ValueError(f"a sqlite asset store URL is sqlite:///PATH, not {shown(url)}")
        return cls(url[len(prefix) :], **options)

    # --- connections -----------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        handle: _Handle | None = getattr(self._local, "handle", None)
        if handle is not None:
            return handle.db
        if self._closed:
            raise AssetError("the asset store is closed")
        try:
            # check_same_thread=False only so that close() may close every thread's
            # connection: each one is used by its own thread alone.
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as e:
            raise StoreUnavailable(f"cannot open the sqlite asset store {shown(self.path)}: {e}") from None
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as e:
            db.close()
            raise StoreUnavailable(f"cannot open the sqlite asset store {shown(self.path)}: {e}") from None
        handle = _Handle(db)
        with self._handles_lock:
            if self._closed:
                handle.close()
                raise AssetError("the asset store is closed")
            self._handles.add(handle)
        self._local.handle = handle
        return db

    def close(self) -> None:
        with self._handles_lock:
            self._closed = True
            handles = list(self._handles)
            self._handles.clear()
        for handle in handles:
            handle.close()
        super().close()

    def _failed(self, e: sqlite3.Error) -> AssetError:
        if self._closed and isinstance(e, sqlite3.ProgrammingError):
            return AssetError("the asset store is closed")
        return StoreUnavailable(f"sqlite asset store {shown(self.path)} failed: {e}")

    # --- the primitives --------------------------------------------------------------

    def _put(self, name: str, data: bytes, content_type: str) -> Asset:
        etag = content_etag(data)
        modified = time.time()
        try:
            self._db().execute(self._sql_put, (name, len(data), etag, modified, content_type, data))
        except sqlite3.Error as e:
            raise self._failed(e) from None
        return Asset(name, len(data), etag, utc(modified), content_type)

    def _row(self, sql: str, name: str, *first: Any) -> Any:
        try:
            row = self._db().execute(sql, (*first, name)).fetchone()
        except sqlite3.Error as e:
            raise self._failed(e) from None
        if row is None:
            raise not_found(name)
        return row

    def _stat(self, name: str) -> Asset:
        size, etag, modified, content_type = self._row(self._sql_stat, name)
        return Asset(name, size, etag, utc(modified), content_type)

    def _load(self, name: str) -> Asset:
        size, etag, modified, content_type, data = self._row(self._sql_load, name)
        return Asset(name, size, etag, utc(modified), content_type, bytes(data))

    def _open(self, name: str) -> SQLiteReader:
        return SQLiteReader(self._stat(name), self)

    def _open_small(self, name: str, limit: int) -> AssetReader:
        size, etag, modified, content_type, data = self._row(self._sql_small, name, limit)
        asset = Asset(name, size, etag, utc(modified), content_type)
        return BytesReader(asset, bytes(data)) if data is not None else SQLiteReader(asset, self)

    def _delete(self, name: str) -> None:
        try:
            deleted = self._db().execute(self._sql_delete, (name,)).rowcount
        except sqlite3.Error as e:
            raise self._failed(e) from None
        if deleted == 0:
            raise not_found(name)

    def _names(self, prefix: str) -> Iterator[str]:
        try:
            rows = self._db().execute(self._sql_names, (prefix, prefix, prefix)).fetchall()
        except sqlite3.Error as e:
            raise self._failed(e) from None
        return iter([row[0] for row in rows])

    def _read_range(self, asset: Asset, offset: int, size: int) -> bytes:
        """`size` bytes from `offset` of the version `asset` names (the caller keeps the
        range inside it); AssetChanged when the row holds another version now."""
        try:
            db = self._db()
            if not _HAS_BLOBOPEN:
                row = db.execute(self._sql_substr, (offset + 1, size, asset.name, asset.etag)).fetchone()
                if row is None:
                    raise _changed(asset)
                return bytes(row[0])
            db.execute("BEGIN")  # one snapshot for the check and the read
            try:
                row = db.execute(self._sql_rowid, (asset.name, asset.etag)).fetchone()
                if row is None:
                    raise _changed(asset)
                with db.blobopen(self.table, "data", row[0], readonly=True) as blob:  # type: ignore[attr-defined,unused-ignore]
                    blob.seek(offset)
                    data: bytes = blob.read(size)
                    return data
            finally:
                db.execute("COMMIT")
        except sqlite3.Error as e:
            raise self._failed(e) from None


def _changed(asset: Asset) -> AssetChanged:
    return AssetChanged(f"asset {shown(asset.name)} was replaced or deleted while being read")
