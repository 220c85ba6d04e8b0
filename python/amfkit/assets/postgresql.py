"""The PostgreSQL backend (`postgresql://user@host:5432/db`): each asset is one row of a
table, its bytes in a `bytea` column, through psycopg 3 and psycopg's own pools.

The table (`amfkit_assets` unless `table=` says otherwise) is created when the store
opens, under an advisory lock so that two processes opening at once do not race; its
`data` column is stored uncompressed out of line (`STORAGE EXTERNAL`: assets are mostly
compressed already, and a range of an uncompressed value is read without the rest) and
its `name` column is in the "C" collation, so names sort by code point. A put is one
upsert (`INSERT ... ON CONFLICT DO UPDATE`), so it is atomic: a client killed mid-put
leaves the old row (or the new one, when the server had the whole statement already).
The ETag is `content_etag` of the bytes; a ranged reader reads each chunk with
`substring(data from .. for ..)` in a query that also checks the ETag, and raises
`AssetChanged` when the row holds another version.

Connections: the synchronous methods take them from a `psycopg_pool.ConnectionPool` and
the async methods from an `AsyncConnectionPool` (so the event loop never waits and no
thread is used), each of at most `pool_size` connections and made when first needed
(opening the store itself connects once, synchronously, to create the table). An async
pool belongs to one event loop: each loop that uses the store gets its own, closed
by `aclose()`, by `close()`, or when the loop shuts down (`asyncio.run` cancels a small
keeper task that then closes it); so two `asyncio.run` calls in a row both work. With
`pool=False` every operation opens a connection and closes it afterwards (the benchmarks'
"a new database connection per request"). Every connection is in autocommit mode: each
operation is one statement, one round trip. A server that cannot be reached, or a pool
with no free connection within `connect_timeout` seconds, is `StoreUnavailable`, whose
text names the store by `shown_url` (never a password). An operation that finds its pooled
connection broken (the server restarted, or ended it) is retried on another connection.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import threading
import weakref
from collections.abc import Awaitable, Iterator
from datetime import datetime, timezone
from typing import Any, Callable, TypeVar
from urllib.parse import parse_qs, urlsplit

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolClosed, PoolTimeout

from .._text import clip, shown
from .names import check_name
from .store import DEFAULT_MAX_SIZE, Asset, AssetChanged, AssetError, AssetReader, AssetStore, BytesReader, StoreUnavailable, content_etag, not_found

__all__ = ["PostgresStore", "PostgresReader"]

T = TypeVar("T")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
#: Seconds `close()` waits for a pool of another thread's event loop to close.
_CLOSE_WAIT = 5.0


def check_table(table: object) -> str:
    """`table` when it is a plain SQL identifier (letters, digits, '_'; at most 63)."""
    if not isinstance(table, str) or not _IDENTIFIER.fullmatch(table):
        raise ValueError(f"table {shown(table)} is not a plain identifier (letters, digits and '_', at most 63)")
    return table


class PostgresReader(AssetReader):
    """Ranged reads of one version: each chunk comes from a query that also checks the
    row's ETag (`AssetChanged` when it holds another version now). `store.aread(reader,
    offset, size)` reads through the async pool."""

    def __init__(self, asset: Asset, store: PostgresStore) -> None:
        self.asset = asset
        self._store: PostgresStore | None = store

    def _range(self, offset: int, size: int) -> tuple[PostgresStore, int] | None:
        """The store and the byte count to read, or None when there is nothing to."""
        if self._store is None:
            raise ValueError("read from a closed reader")
        if offset < 0 or size < 0:
            raise ValueError("offset and size must be 0 or more")
        if size == 0 or offset >= self.asset.size:
            return None
        return self._store, min(size, self.asset.size - offset)

    def read(self, offset: int, size: int) -> bytes:
        todo = self._range(offset, size)
        if todo is None:
            return b""
        store, count = todo
        return store._run(lambda conn: store._read_range(conn, self.asset, offset, count))

    async def aread(self, offset: int, size: int) -> bytes:
        todo = self._range(offset, size)
        if todo is None:
            return b""
        store, count = todo
        return await store._arun(lambda conn: store._aread_range(conn, self.asset, offset, count))

    def close(self) -> None:
        self._store = None


class _LoopPool:
    """The async pool of one event loop (its locks and tasks belong to that loop), the
    future its opening sets (other tasks of the loop wait for it rather than open a pool
    each), and the task that closes it when the loop shuts down."""

    __slots__ = ("pool", "ready", "error", "keeper", "connections")

    pool: AsyncConnectionPool[Any]  # set once made: it is made with `track` as `configure`

    def __init__(self, ready: asyncio.Future[None]) -> None:
        self.ready = ready
        self.error: BaseException | None = None
        self.keeper: asyncio.Task[None] | None = None
        #: Every connection the pool made, to close those a shutting-down loop leaves.
        self.connections: weakref.WeakSet[psycopg.AsyncConnection[Any]] = weakref.WeakSet()

    async def track(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.connections.add(conn)


class PostgresStore(AssetStore):
    """Assets in the PostgreSQL database `url` names, in `table`; see the module
    docstring for `pool_size`, `pool` and `connect_timeout` (seconds). Opening it connects
    once (to create the table), so a server that cannot be reached fails here."""

    def __init__(
        self,
        url: str,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        table: str = "amfkit_assets",
        pool_size: int = 4,
        pool: bool = True,
        connect_timeout: float = 5.0,
    ) -> None:
        super().__init__(url, max_size=max_size)
        scheme, sep, _ = url.partition("://")
        if not sep or scheme.lower() not in ("postgresql", "postgres"):
            raise ValueError(f"a postgresql asset store URL is postgresql://[user[:password]@]host[:port]/db, not {shown(self.url)}")
        self.table = check_table(table)
        if not isinstance(pool_size, int) or pool_size < 1:
            raise ValueError("pool_size must be 1 or more")
        if not isinstance(connect_timeout, (int, float)) or not connect_timeout > 0:
            raise ValueError("connect_timeout must be a positive number of seconds")
        self.pool_size = pool_size
        self.pooled = bool(pool)
        self.connect_timeout = float(connect_timeout)
        self._attempts = pool_size + 1 if self.pooled else 1
        self._conninfo = url
        try:
            parts = urlsplit(url)
            self._password = parts.password or ""
            in_url = parse_qs(parts.query)
        except ValueError:
            raise ValueError(f"malformed postgresql asset store URL {shown(self.url)}") from None
        # libpq counts whole seconds, at least 2; the pools wait `connect_timeout` as given.
        self._kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": max(2, math.ceil(self.connect_timeout))}
        if "application_name" not in in_url:
            self._kwargs["application_name"] = "amfkit-assets"
        self._lock = threading.Lock()
        self._closed = False
        self._pool: ConnectionPool[Any] | None = None
        self._apools: dict[asyncio.AbstractEventLoop, _LoopPool] = {}
        self._queries()
        self._create_table()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> PostgresStore:
        """`postgresql://user[:password]@host[:port]/db` (or `postgres://`); libpq's
        query parameters (`?sslmode=require`) pass through."""
        return cls(url, **options)

    def _queries(self) -> None:
        t = sql.Identifier(self.table)
        self._sql_put = sql.SQL(
            "INSERT INTO {t} (name, size, etag, modified, content_type, data) VALUES (%s, %s, %s, now(), %s, %b) "
            "ON CONFLICT (name) DO UPDATE SET size = excluded.size, etag = excluded.etag, "
            "modified = excluded.modified, content_type = excluded.content_type, data = excluded.data "
            "RETURNING modified"
        ).format(t=t)
        self._sql_stat = sql.SQL("SELECT size, etag, modified, content_type FROM {t} WHERE name = %s").format(t=t)
        self._sql_load = sql.SQL("SELECT size, etag, modified, content_type, data FROM {t} WHERE name = %s").format(t=t)
        # The bytes too when there are at most so many (one round trip for a small asset).
        self._sql_small = sql.SQL(
            "SELECT size, etag, modified, content_type, CASE WHEN size <= %s THEN data END FROM {t} WHERE name = %s"
        ).format(t=t)
        self._sql_delete = sql.SQL("DELETE FROM {t} WHERE name = %s").format(t=t)
        self._sql_names = sql.SQL('SELECT name FROM {t} WHERE starts_with(name, %s) ORDER BY name COLLATE "C"').format(t=t)
        self._sql_range = sql.SQL(
            "SELECT substring(data from %s::integer for %s::integer) FROM {t} WHERE name = %s AND etag = %s"
        ).format(t=t)

    def _create_table(self) -> None:
        t = sql.Identifier(self.table)
        key = int.from_bytes(hashlib.blake2b(b"amfkit-assets:" + self.table.encode(), digest_size=8).digest(), "big", signed=True)
        try:
            with psycopg.connect(self._conninfo, **self._kwargs) as conn:
                with conn.transaction():
                    # Two processes creating the table at once would race in the catalog
                    # (CREATE TABLE IF NOT EXISTS is not safe against that): one at a time.
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
                    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (t.as_string(conn),)).fetchone()
                    if row is None or not row[0]:
                        conn.execute(
                            sql.SQL(
                                'CREATE TABLE {t} (name text COLLATE "C" PRIMARY KEY, size bigint NOT NULL, '
                                "etag text NOT NULL, modified timestamptz NOT NULL, content_type text NOT NULL, "
                                "data bytea NOT NULL)"
                            ).format(t=t)
                        )
                        conn.execute(sql.SQL("ALTER TABLE {t} ALTER COLUMN data SET STORAGE EXTERNAL").format(t=t))
        except psycopg.Error as e:
            raise self._failed(e) from None

    # --- connections -----------------------------------------------------------------

    def _failed(self, e: BaseException) -> AssetError:
        if isinstance(e, PoolClosed) or (self._closed and isinstance(e, psycopg.Error)):
            return AssetError("the asset store is closed")
        text = " ".join(str(e).split()) or type(e).__name__
        if self._password:
            text = text.replace(self._password, "***")
        if isinstance(e, PoolTimeout):
            return StoreUnavailable(clip(f"no connection to the postgresql asset store {self.url} within {self.connect_timeout:g} s ({text})"))
        if isinstance(e, psycopg.OperationalError):
            return StoreUnavailable(clip(f"cannot reach the postgresql asset store {self.url}: {text}"))
        return StoreUnavailable(clip(f"the postgresql asset store {self.url} failed: {text}"))

    def _sync_pool(self) -> ConnectionPool[Any]:
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._closed:
                    raise AssetError("the asset store is closed")
                pool = self._pool
                if pool is None:
                    pool = ConnectionPool(
                        self._conninfo,
                        kwargs=self._kwargs,
                        min_size=1,
                        max_size=self.pool_size,
                        open=False,
                        timeout=self.connect_timeout,
                        name=f"amfkit-assets-{self.table}",
                    )
                    pool.open(wait=True, timeout=self.connect_timeout)  # closes it on a timeout
                    self._pool = pool
        return pool

    def _run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work(connection)`, on a pooled connection (or a new one with `pool=False`);
        retried on another connection when the pooled one turns out broken (every
        operation is one idempotent statement), at most once per connection the pool
        may hold."""
        for attempt in range(self._attempts):
            conn: psycopg.Connection[Any] | None = None
            try:
                if self.pooled:
                    with self._sync_pool().connection() as conn:
                        return work(conn)
                if self._closed:
                    raise AssetError("the asset store is closed")
                with psycopg.connect(self._conninfo, **self._kwargs) as conn:
                    return work(conn)
            except psycopg.Error as e:
                if attempt + 1 < self._attempts and conn is not None and conn.broken and not self._closed:
                    continue
                raise self._failed(e) from None
        raise AssertionError("unreachable")

    async def _apool(self) -> AsyncConnectionPool[Any]:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                raise AssetError("the asset store is closed")
            for other in [other for other in self._apools if other.is_closed()]:
                del self._apools[other]  # a finished loop whose keeper never ran
            held = self._apools.get(loop)
            opener = held is None
            if held is None:
                held = _LoopPool(loop.create_future())
                held.pool = self._new_apool(held.track)
                self._apools[loop] = held
        if not opener:
            await asyncio.shield(held.ready)
            if isinstance(held.error, psycopg.Error):
                raise self._failed(held.error)
            if held.error is not None:  # the opening task was cancelled: open it here
                return await self._apool()
            return held.pool
        try:
            await held.pool.open(wait=True, timeout=self.connect_timeout)  # closes it on a timeout
        except BaseException as e:
            with self._lock:
                if self._apools.get(loop) is held:
                    del self._apools[loop]
            held.error = e
            held.ready.set_result(None)
            await held.pool.close()
            raise
        held.keeper = loop.create_task(self._keep(loop, held))
        held.ready.set_result(None)
        return held.pool

    def _new_apool(self, configure: Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]]) -> AsyncConnectionPool[Any]:
        return AsyncConnectionPool(
            self._conninfo,
            kwargs=self._kwargs,
            min_size=1,
            max_size=self.pool_size,
            open=False,
            configure=configure,
            timeout=self.connect_timeout,
            name=f"amfkit-assets-{self.table}-async",
        )

    async def _keep(self, loop: asyncio.AbstractEventLoop, held: _LoopPool) -> None:
        """Wait until cancelled (by `aclose`/`close`, or by the loop shutting down), then
        close the loop's pool."""
        try:
            await loop.create_future()
        except asyncio.CancelledError:
            pass
        with self._lock:
            if self._apools.get(loop) is held:
                del self._apools[loop]
        try:
            await held.pool.close(timeout=_CLOSE_WAIT)
        except asyncio.CancelledError:
            pass  # the loop is shutting down and cancelled the pool's own tasks first
        # What the pool could not close (its tasks cancelled first, connections in use):
        for conn in list(held.connections):
            if not conn.closed:
                try:
                    await conn.close()
                except (psycopg.Error, asyncio.CancelledError):
                    pass

    async def _arun(self, work: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T:
        """`_run` for the async methods."""
        for attempt in range(self._attempts):
            conn: psycopg.AsyncConnection[Any] | None = None
            try:
                if self.pooled:
                    async with (await self._apool()).connection() as conn:
                        return await work(conn)
                if self._closed:
                    raise AssetError("the asset store is closed")
                async with await psycopg.AsyncConnection.connect(self._conninfo, **self._kwargs) as conn:
                    return await work(conn)
            except psycopg.Error as e:
                if attempt + 1 < self._attempts and conn is not None and conn.broken and not self._closed:
                    continue
                raise self._failed(e) from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
            apools, self._apools = self._apools, {}
        if pool is not None:
            pool.close()
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for loop, held in apools.items():
            if loop.is_closed():
                continue
            keeper = held.keeper
            if keeper is None:
                continue
            if loop is running:  # close() called in a coroutine: the keeper closes it soon
                keeper.cancel()
            elif loop.is_running():
                loop.call_soon_threadsafe(keeper.cancel)
                try:
                    asyncio.run_coroutine_threadsafe(asyncio.wait([keeper]), loop).result(_CLOSE_WAIT)
                except Exception:  # noqa: BLE001 - a loop stopping meanwhile: nothing left to close
                    pass
            elif running is None:
                keeper.cancel()
                loop.run_until_complete(asyncio.wait([keeper]))
        super().close()

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            held = self._apools.get(loop)
        if held is not None and held.keeper is not None:
            held.keeper.cancel()
            await asyncio.wait([held.keeper])
        self.close()

    # --- the primitives --------------------------------------------------------------

    def _asset(self, name: str, row: Any, data: bytes | None = None) -> Asset:
        size, etag, modified, content_type = row[:4]
        return Asset(name, size, etag, _utc(modified), content_type, data)

    def _put(self, name: str, data: bytes, content_type: str) -> Asset:
        etag = content_etag(data)

        def work(conn: psycopg.Connection[Any]) -> Asset:
            row = conn.execute(self._sql_put, (name, len(data), etag, content_type, data)).fetchone()
            assert row is not None
            return Asset(name, len(data), etag, _utc(row[0]), content_type)

        return self._run(work)

    def _stat(self, name: str) -> Asset:
        row = self._run(lambda conn: conn.execute(self._sql_stat, (name,)).fetchone())
        if row is None:
            raise not_found(name)
        return self._asset(name, row)

    def _load(self, name: str) -> Asset:
        row = self._run(lambda conn: conn.execute(self._sql_load, (name,), binary=True).fetchone())
        if row is None:
            raise not_found(name)
        return self._asset(name, row, bytes(row[4]))

    def _open(self, name: str) -> PostgresReader:
        return PostgresReader(self._stat(name), self)

    def _small_reader(self, name: str, row: Any) -> AssetReader:
        if row is None:
            raise not_found(name)
        if row[4] is not None:
            return BytesReader(self._asset(name, row), bytes(row[4]))
        return PostgresReader(self._asset(name, row), self)

    def _open_small(self, name: str, limit: int) -> AssetReader:
        return self._small_reader(name, self._run(lambda conn: conn.execute(self._sql_small, (limit, name), binary=True).fetchone()))

    def _delete(self, name: str) -> None:
        if self._run(lambda conn: conn.execute(self._sql_delete, (name,)).rowcount) == 0:
            raise not_found(name)

    def _names(self, prefix: str) -> Iterator[str]:
        rows = self._run(lambda conn: conn.execute(self._sql_names, (prefix,)).fetchall())
        return iter([row[0] for row in rows])

    def _read_range(self, conn: psycopg.Connection[Any], asset: Asset, offset: int, size: int) -> bytes:
        row = conn.execute(self._sql_range, (offset + 1, size, asset.name, asset.etag), binary=True).fetchone()
        if row is None:
            raise _changed(asset)
        return bytes(row[0])

    async def _aread_range(self, conn: psycopg.AsyncConnection[Any], asset: Asset, offset: int, size: int) -> bytes:
        cur = await conn.execute(self._sql_range, (offset + 1, size, asset.name, asset.etag), binary=True)
        row = await cur.fetchone()
        if row is None:
            raise _changed(asset)
        return bytes(row[0])

    # --- async, on the async pool (no thread) ----------------------------------------

    async def _afetch(self, query: sql.Composed, params: tuple[Any, ...], binary: bool = False) -> Any:
        async def work(conn: psycopg.AsyncConnection[Any]) -> Any:
            cur = await conn.execute(query, params, binary=binary)
            return await cur.fetchone()

        return await self._arun(work)

    async def aput(self, name: str, data: bytes | bytearray | memoryview, *, content_type: str | None = None) -> Asset:
        name, blob, content_type = self._checked(name, data, content_type)
        etag = content_etag(blob)
        row = await self._afetch(self._sql_put, (name, len(blob), etag, content_type, blob))
        return Asset(name, len(blob), etag, _utc(row[0]), content_type, store=self)

    async def astat(self, name: str) -> Asset:
        row = await self._afetch(self._sql_stat, (check_name(name),))
        if row is None:
            raise not_found(name)
        asset = self._asset(name, row)
        asset.store = self
        return asset

    async def aload(self, name: str) -> Asset:
        row = await self._afetch(self._sql_load, (check_name(name),), binary=True)
        if row is None:
            raise not_found(name)
        asset = self._asset(name, row, bytes(row[4]))
        asset.store = self
        return asset

    async def aopen_reader(self, name: str, *, preload: int = 0) -> AssetReader:
        if preload <= 0:
            return PostgresReader(await self.astat(name), self)
        name = check_name(name)
        reader = self._small_reader(name, await self._afetch(self._sql_small, (preload, name), binary=True))
        reader.asset.store = self
        return reader

    async def aread(self, reader: AssetReader, offset: int, size: int) -> bytes:
        if isinstance(reader, PostgresReader):
            return await reader.aread(offset, size)
        return await super().aread(reader, offset, size)

    async def adelete(self, name: str) -> None:
        name = check_name(name)

        async def work(conn: psycopg.AsyncConnection[Any]) -> int:
            return (await conn.execute(self._sql_delete, (name,))).rowcount

        if await self._arun(work) == 0:
            raise not_found(name)

    async def anames(self, prefix: str = "") -> list[str]:
        if not isinstance(prefix, str):
            raise TypeError("prefix must be a str")

        async def work(conn: psycopg.AsyncConnection[Any]) -> list[str]:
            cur = await conn.execute(self._sql_names, (prefix,))
            return [row[0] for row in await cur.fetchall()]

        return await self._arun(work)


def _utc(value: datetime) -> datetime:
    return value.astimezone(timezone.utc)


def _changed(asset: Asset) -> AssetChanged:
    return AssetChanged(f"asset {shown(asset.name)} was replaced or deleted while being read")
