"""The Redis backend (`redis://[USER:PASSWORD@]HOST:PORT/DB`, `rediss://` for TLS): as
durable as the server is told to be (its append-only file), and a cache in front of a
durable store.

Under the store's prefix (`amfkit:asset:` unless told), an asset is two keys: `m:NAME`, a
hash of its metadata (size, ETag, modification time in microseconds, content type), and
`d:NAME`, its bytes; `names` is a sorted set of the names (all of score 0, so that
ZRANGEBYLEX lists those of a prefix, in byte order, which is code point order in
UTF-8). A put writes the three in one MULTI/EXEC transaction, a load reads the two in
another, a delete is one Lua script: each is atomic. A reader (`open_reader`) reads
ranges with a Lua script that checks the ETag before GETRANGE, so it reads the version
it opened or fails with AssetChanged.

The sync methods use redis-py's client and its connection pool; the async ones use
redis.asyncio, natively (no thread): one client per event loop (a connection belongs to
the loop that made it), closed when that loop shuts its async generators down (as
`asyncio.run`, `asyncio.Runner` and uvloop do; a loop closed without that leaves its
connections to the garbage collector, which warns), or by `aclose()`. A command whose
connection turns out closed (Redis restarted, say) is sent again at once on a new one,
once; any other failure, or a second one, is a StoreUnavailable naming the server (never
its password). Every command is safe to send twice, except that a delete could then say
AssetNotFound.

As a cache (amfkit.assets.cache), the metadata hash may instead hold a lease (`l`, a
token, with a short expiry); filling and releasing check the token in a Lua script. A
cache keeps what it is given: bound its memory with Redis's `maxmemory` and an eviction
policy (`allkeys-lru`); an entry whose bytes were evicted is dropped when read, and
filled again. redis-py is imported on first use: `pip install 'amfkit[redis]'`.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
from collections.abc import AsyncGenerator, Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._text import error_text, shown
from .cache import LEASE_TTL, from_us, now_us, to_us
from .names import check_name
from .store import (
    close_in_loops,
    DEFAULT_MAX_SIZE,
    Asset,
    AssetChanged,
    AssetReader,
    AssetStore,
    BytesReader,
    StoreUnavailable,
    content_etag,
    not_found,
)

__all__ = ["RedisReader", "RedisStore"]

#: Names per ZRANGEBYLEX request when listing.
PAGE = 1000

# KEYS: meta, data. ARGV: etag, first byte, last byte.
_READ = """
if redis.call('HGET', KEYS[1], 'e') ~= ARGV[1] then return false end
return redis.call('GETRANGE', KEYS[2], ARGV[2], ARGV[3])
"""

# KEYS: meta, data, index. ARGV: name.
_DELETE = """
if redis.call('HEXISTS', KEYS[1], 'e') == 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
"""

# KEYS: meta, data. A cached entry with its bytes; nothing for a lease or no entry. An
# entry whose bytes are gone (evicted) is dropped, so that it can be filled again.
_CACHE_GET = """
local m = redis.call('HMGET', KEYS[1], 's', 'e', 'm', 't')
if not m[2] then return false end
local d = redis.call('GET', KEYS[2])
if not d then
  redis.call('DEL', KEYS[1])
  return false
end
return {m[1], m[2], m[3], m[4], d}
"""

# KEYS: meta, data. ARGV: token, expiry in ms, take over ('1') or only if absent ('0').
_LEASE = """
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[1], KEYS[2])
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'l', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

# KEYS: meta, data. ARGV: token, size, etag, modified, content type, bytes.
_FILL = """
if redis.call('HGET', KEYS[1], 'l') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 's', ARGV[2], 'e', ARGV[3], 'm', ARGV[4], 't', ARGV[5])
redis.call('SET', KEYS[2], ARGV[6])
return 1
"""

# KEYS: meta. ARGV: token.
_RELEASE = """
if redis.call('HGET', KEYS[1], 'l') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""

_SCRIPTS = {"read": _READ, "delete": _DELETE, "cache_get": _CACHE_GET, "lease": _LEASE, "fill": _FILL, "release": _RELEASE}
_GLOB = frozenset(b"*?[]\\")


def _glob_escape(text: bytes) -> bytes:
    """`text` matched literally by a Redis glob (SCAN MATCH)."""
    return b"".join(b"\\" + bytes([c]) if c in _GLOB else bytes([c]) for c in text)


class _LoopClient:
    """The async client of one event loop, and the async generator that closes it when
    the loop shuts its async generators down."""

    __slots__ = ("loop", "client", "scripts", "closer")

    def __init__(self, loop: asyncio.AbstractEventLoop, client: Any) -> None:
        self.loop = loop
        self.client = client
        self.scripts: dict[str, Any] = {k: client.register_script(v) for k, v in _SCRIPTS.items()}
        self.closer: AsyncGenerator[None, None] | None = None


class RedisStore(AssetStore):
    """Assets in a Redis server (the module's docstring says how). `prefix` starts every
    key; `timeout` is the seconds to connect and to wait for each reply. Thread-safe;
    the async methods work on any event loop, one at a time or several."""

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        prefix: str = "amfkit:asset:",
        timeout: float = 5.0,
    ) -> None:
        try:
            import redis
            import redis.asyncio
            from redis.asyncio.retry import Retry as AsyncRetry
            from redis.backoff import NoBackoff
            from redis.exceptions import ConnectionError as RedisConnectionError
            from redis.retry import Retry
        except ImportError:
            raise ImportError("redis:// needs redis-py: pip install 'amfkit[redis]'") from None
        super().__init__(url, max_size=max_size)
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
        if not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, not {shown(timeout)}")
        self.prefix = prefix
        self.timeout = float(timeout)
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        options: dict[str, Any] = {"socket_timeout": self.timeout, "socket_connect_timeout": self.timeout, "decode_responses": False}
        try:
            once = (RedisConnectionError,)  # a closed connection; not a timeout
            self._pool: Any = redis.ConnectionPool.from_url(url, retry=Retry(NoBackoff(), 1, once), **options)
            # Options the URL's query gives redis-py go to each connection: an unknown
            # one would only fail at the first command, so try them now.
            self._pool.connection_class(**self._pool.connection_kwargs)
        except (ValueError, TypeError) as e:
            raise ValueError(f"bad redis URL {shown(self.url)}: {error_text(e)}") from None
        self._redis: Any = redis.Redis(connection_pool=self._pool)
        self._scripts: dict[str, Any] = {k: self._redis.register_script(v) for k, v in _SCRIPTS.items()}
        # The async clients are made when first used on a loop, from the same URL.
        self._new_async: Any = lambda: redis.asyncio.Redis.from_url(url, retry=AsyncRetry(NoBackoff(), 1, once), **options)
        self._aclients: dict[int, _LoopClient] = {}
        self._alock = threading.Lock()
        self._closing: set[Any] = set()
        self._closed = False
        base = prefix.encode("utf-8")
        self._meta_base = base + b"m:"
        self._data_base = base + b"d:"
        self._index = base + b"names"
        self._base = base

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStore:
        """`redis://[USER:PASSWORD@]HOST:PORT/DB[?prefix=P&timeout=S]` (`rediss://` for
        TLS); other query options go to redis-py, keyword options win over the query's."""
        parts = urlsplit(url)
        query: dict[str, Any] = {}
        rest: list[tuple[str, str]] = []
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key == "prefix":
                query["prefix"] = value
            elif key in ("timeout", "max_size"):
                try:
                    query[key] = float(value) if key == "timeout" else int(value)
                except ValueError:
                    raise ValueError(f"redis:// option {key} must be a number, not {shown(value)}") from None
            else:
                rest.append((key, value))
        query.update(options)
        return cls(urlunsplit(parts._replace(query=urlencode(rest))), **query)

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, prefix={self.prefix!r})"

    # --- plumbing --------------------------------------------------------------------

    @contextlib.contextmanager
    def _calling(self, what: str) -> Iterator[None]:
        """Redis's and the network's failures, as StoreUnavailable naming the server."""
        if self._closed:
            raise StoreUnavailable(f"redis {self.url}: {what}: the store is closed")
        try:
            yield
        except self._errors as e:
            raise StoreUnavailable(f"redis {self.url}: {what} failed: {error_text(e)}") from None

    def _keys(self, name: str) -> tuple[bytes, bytes]:
        raw = name.encode("utf-8")
        return self._meta_base + raw, self._data_base + raw

    async def _aredis(self) -> _LoopClient:
        """This event loop's client (made, and its closer started, on first use)."""
        loop = asyncio.get_running_loop()
        with self._alock:
            if self._closed:
                raise StoreUnavailable(f"redis {self.url}: the store is closed")
            entry = self._aclients.get(id(loop))
            if entry is not None and entry.loop is loop:
                return entry
            for key, old in list(self._aclients.items()):
                if old.loop.is_closed():
                    del self._aclients[key]  # shut down without closing its generators
            entry = _LoopClient(loop, self._new_async())
            self._aclients[id(loop)] = entry
        # An async generator started on the loop is closed by the loop's shutdown
        # (`shutdown_asyncgens`), still on the loop: it closes the client there.
        entry.closer = self._closer(entry)
        await entry.closer.__anext__()
        return entry

    async def _closer(self, entry: _LoopClient) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._alock:
                if self._aclients.get(id(entry.loop)) is entry:
                    del self._aclients[id(entry.loop)]
            with contextlib.suppress(Exception):
                await entry.client.aclose()

    def close(self) -> None:
        """Close the connections; the async clients of loops still open are closed on
        them (or when they shut down)."""
        with self._alock:
            self._closed = True
            entries = list(self._aclients.values())
            self._aclients.clear()
        with contextlib.suppress(Exception):
            self._pool.disconnect()
        close_in_loops([(entry.closer, entry.loop) for entry in entries], self._closing)
        super().close()

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        with self._alock:
            entry = self._aclients.pop(id(loop), None)
        if entry is not None and entry.closer is not None:
            await entry.closer.aclose()
        self.close()

    # --- decoding --------------------------------------------------------------------

    def _asset(self, name: str, fields: list[Any], data: bytes | None = None) -> Asset | None:
        """An asset from HMGET s e m t (None if absent or a lease)."""
        size, etag, modified, kind = fields
        if etag is None:
            return None
        try:
            return Asset(name, int(size), etag.decode("ascii"), from_us(int(modified)), kind.decode("ascii"), data)
        except (ValueError, TypeError, AttributeError, UnicodeDecodeError, OverflowError):
            raise StoreUnavailable(f"redis {self.url}: asset {shown(name)} has metadata amfkit did not write") from None

    @staticmethod
    def _mapping(asset: Asset) -> dict[str, Any]:
        return {"s": asset.size, "e": asset.etag, "m": to_us(asset.modified), "t": asset.content_type}

    def _new(self, name: str, data: bytes, content_type: str) -> Asset:
        return Asset(name, len(data), content_etag(data), from_us(now_us()), content_type)

    def _range_args(self, reader: RedisReader, offset: int, size: int) -> tuple[int, int] | None:
        if offset < 0 or size < 0:
            raise ValueError("offset and size are 0 or more")
        end = min(offset + size, reader.asset.size)
        return (offset, end - 1) if offset < end else None

    def _changed(self, name: str) -> AssetChanged:
        return AssetChanged(f"asset {shown(name)} was replaced or deleted while being read")

    # --- the primitives (sync) -------------------------------------------------------

    def _put(self, name: str, data: bytes, content_type: str) -> Asset:
        asset = self._new(name, data, content_type)
        meta, key = self._keys(name)
        with self._calling(f"put asset {shown(name)}"):
            with self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(meta)
                pipe.hset(meta, mapping=self._mapping(asset))
                pipe.set(key, data)
                pipe.zadd(self._index, {name.encode("utf-8"): 0})
                pipe.execute()
        return asset

    def _load(self, name: str) -> Asset:
        meta, key = self._keys(name)
        with self._calling(f"read asset {shown(name)}"):
            with self._redis.pipeline(transaction=True) as pipe:
                pipe.hmget(meta, "s", "e", "m", "t")
                pipe.get(key)
                fields, data = pipe.execute()
        asset = self._asset(name, fields, data)
        if asset is None or data is None:
            raise not_found(name)
        return asset

    def _stat(self, name: str) -> Asset:
        meta, _ = self._keys(name)
        with self._calling(f"stat asset {shown(name)}"):
            fields = self._redis.hmget(meta, "s", "e", "m", "t")
        asset = self._asset(name, fields)
        if asset is None:
            raise not_found(name)
        return asset

    def _open(self, name: str) -> AssetReader:
        return RedisReader(self, self._stat(name))

    def _range(self, reader: RedisReader, offset: int, size: int) -> bytes:
        span = self._range_args(reader, offset, size)
        if span is None:
            return b""
        meta, key = self._keys(reader.asset.name)
        with self._calling(f"read asset {shown(reader.asset.name)}"):
            data = self._scripts["read"](keys=[meta, key], args=[reader.asset.etag, *span])
        if data is None:
            raise self._changed(reader.asset.name)
        return bytes(data)

    def _delete(self, name: str) -> None:
        meta, key = self._keys(name)
        with self._calling(f"delete asset {shown(name)}"):
            done = self._scripts["delete"](keys=[meta, key, self._index], args=[name.encode("utf-8")])
        if not done:
            raise not_found(name)

    def _names(self, prefix: str) -> Iterator[str]:
        with self._calling("list the assets"):
            found = self._page_all(prefix, lambda lo, hi: self._redis.zrangebylex(self._index, lo, hi, start=0, num=PAGE))
        return iter(found)

    @staticmethod
    def _bounds(prefix: str) -> tuple[bytes, bytes]:
        raw = prefix.encode("utf-8")
        # No UTF-8 byte is 0xff: every name starting with `raw` sorts before raw + 0xff.
        return (b"[" + raw, b"(" + raw + b"\xff") if raw else (b"-", b"+")

    def _page_all(self, prefix: str, page: Any) -> list[str]:
        lo, hi = self._bounds(prefix)
        found: list[str] = []
        while True:
            batch = page(lo, hi)
            found.extend(n.decode("utf-8", "replace") for n in batch)
            if len(batch) < PAGE:
                return found
            lo = b"(" + batch[-1]

    # --- async, native ---------------------------------------------------------------

    async def aput(self, name: str, data: bytes | bytearray | memoryview, *, content_type: str | None = None) -> Asset:
        name, data, content_type = self._checked(name, data, content_type)
        asset = self._new(name, data, content_type)
        meta, key = self._keys(name)
        with self._calling(f"put asset {shown(name)}"):
            client = (await self._aredis()).client
            async with client.pipeline(transaction=True) as pipe:
                pipe.delete(meta)
                pipe.hset(meta, mapping=self._mapping(asset))
                pipe.set(key, data)
                pipe.zadd(self._index, {name.encode("utf-8"): 0})
                await pipe.execute()
        asset.store = self
        return asset

    async def aload(self, name: str) -> Asset:
        name = check_name(name)
        meta, key = self._keys(name)
        with self._calling(f"read asset {shown(name)}"):
            client = (await self._aredis()).client
            async with client.pipeline(transaction=True) as pipe:
                pipe.hmget(meta, "s", "e", "m", "t")
                pipe.get(key)
                fields, data = await pipe.execute()
        asset = self._asset(name, fields, data)
        if asset is None or data is None:
            raise not_found(name)
        asset.store = self
        return asset

    async def astat(self, name: str) -> Asset:
        name = check_name(name)
        meta, _ = self._keys(name)
        with self._calling(f"stat asset {shown(name)}"):
            fields = await (await self._aredis()).client.hmget(meta, "s", "e", "m", "t")
        asset = self._asset(name, fields)
        if asset is None:
            raise not_found(name)
        asset.store = self
        return asset

    async def aopen_reader(self, name: str, *, preload: int = 0) -> AssetReader:
        if preload <= 0:
            return RedisReader(self, await self.astat(name))
        # The metadata and the first `preload` bytes in one transaction: one round trip.
        name = check_name(name)
        meta, key = self._keys(name)
        with self._calling(f"open asset {shown(name)}"):
            async with (await self._aredis()).client.pipeline(transaction=True) as pipe:
                pipe.hmget(meta, "s", "e", "m", "t")
                pipe.getrange(key, 0, preload - 1)
                fields, head = await pipe.execute()
        asset = self._asset(name, fields)
        if asset is None:
            raise not_found(name)
        asset.store = self
        if asset.size <= preload and len(head) == asset.size:
            return BytesReader(asset, bytes(head))
        return RedisReader(self, asset)

    async def aread(self, reader: AssetReader, offset: int, size: int) -> bytes:
        if isinstance(reader, BytesReader):
            return reader.read(offset, size)
        if not isinstance(reader, RedisReader) or reader._store is not self:
            return await super().aread(reader, offset, size)
        span = self._range_args(reader, offset, size)
        if span is None:
            return b""
        meta, key = self._keys(reader.asset.name)
        with self._calling(f"read asset {shown(reader.asset.name)}"):
            data = await (await self._aredis()).scripts["read"](keys=[meta, key], args=[reader.asset.etag, *span])
        if data is None:
            raise self._changed(reader.asset.name)
        return bytes(data)

    async def adelete(self, name: str) -> None:
        name = check_name(name)
        meta, key = self._keys(name)
        with self._calling(f"delete asset {shown(name)}"):
            done = await (await self._aredis()).scripts["delete"](keys=[meta, key, self._index], args=[name.encode("utf-8")])
        if not done:
            raise not_found(name)

    async def anames(self, prefix: str = "") -> list[str]:
        if not isinstance(prefix, str):
            raise TypeError("prefix must be a str")
        lo, hi = self._bounds(prefix)
        found: list[str] = []
        with self._calling("list the assets"):
            client = (await self._aredis()).client
            while True:
                batch = await client.zrangebylex(self._index, lo, hi, start=0, num=PAGE)
                found.extend(n.decode("utf-8", "replace") for n in batch)
                if len(batch) < PAGE:
                    return found
                lo = b"(" + batch[-1]

    # --- the cache protocol (amfkit.assets.cache) ------------------------------------

    def _cached(self, name: str, reply: Any) -> Asset | None:
        if not reply:
            return None
        asset = self._asset(name, list(reply[:4]), bytes(reply[4]))
        if asset is not None:
            asset.store = self
        return asset

    def _fill_args(self, asset: Asset, lease: str) -> list[Any]:
        assert asset.data is not None
        return [lease, asset.size, asset.etag, to_us(asset.modified), asset.content_type, asset.data]

    def cache_get(self, name: str) -> Asset | None:
        with self._calling(f"read cached asset {shown(name)}"):
            reply = self._scripts["cache_get"](keys=list(self._keys(name)))
        return self._cached(name, reply)

    def cache_lease(self, name: str, *, take_over: bool = False) -> str | None:
        token = _token()
        with self._calling(f"lease cached asset {shown(name)}"):
            got = self._scripts["lease"](keys=list(self._keys(name)), args=[token, LEASE_TTL * 1000, "1" if take_over else "0"])
        return token if got else None

    def cache_fill(self, asset: Asset, lease: str) -> bool:
        with self._calling(f"fill cached asset {shown(asset.name)}"):
            return bool(self._scripts["fill"](keys=list(self._keys(asset.name)), args=self._fill_args(asset, lease)))

    def cache_release(self, name: str, lease: str) -> None:
        with self._calling(f"release cached asset {shown(name)}"):
            self._scripts["release"](keys=[self._keys(name)[0]], args=[lease])

    def cache_forget(self, name: str) -> None:
        with self._calling(f"forget cached asset {shown(name)}"):
            self._redis.delete(*self._keys(name))

    def cache_clear(self) -> None:
        """Drop every key under this store's prefix."""
        with self._calling("clear the cache"):
            batch: list[bytes] = []
            for key in self._redis.scan_iter(match=_glob_escape(self._base) + b"*", count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    self._redis.unlink(*batch)
                    batch = []
            if batch:
                self._redis.unlink(*batch)

    async def acache_get(self, name: str) -> Asset | None:
        with self._calling(f"read cached asset {shown(name)}"):
            reply = await (await self._aredis()).scripts["cache_get"](keys=list(self._keys(name)))
        return self._cached(name, reply)

    async def acache_lease(self, name: str, *, take_over: bool = False) -> str | None:
        token = _token()
        with self._calling(f"lease cached asset {shown(name)}"):
            got = await (await self._aredis()).scripts["lease"](keys=list(self._keys(name)), args=[token, LEASE_TTL * 1000, "1" if take_over else "0"])
        return token if got else None

    async def acache_fill(self, asset: Asset, lease: str) -> bool:
        with self._calling(f"fill cached asset {shown(asset.name)}"):
            return bool(await (await self._aredis()).scripts["fill"](keys=list(self._keys(asset.name)), args=self._fill_args(asset, lease)))

    async def acache_release(self, name: str, lease: str) -> None:
        with self._calling(f"release cached asset {shown(name)}"):
            await (await self._aredis()).scripts["release"](keys=[self._keys(name)[0]], args=[lease])

    async def acache_forget(self, name: str) -> None:
        with self._calling(f"forget cached asset {shown(name)}"):
            await (await self._aredis()).client.delete(*self._keys(name))

    async def acache_clear(self) -> None:
        with self._calling("clear the cache"):
            client = (await self._aredis()).client
            batch: list[bytes] = []
            async for key in client.scan_iter(match=_glob_escape(self._base) + b"*", count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    await client.unlink(*batch)
                    batch = []
            if batch:
                await client.unlink(*batch)


def _token() -> str:
    return secrets.token_hex(8)


class RedisReader(AssetReader):
    """Ranged reads of one version: each a Lua script that checks the ETag, then
    GETRANGE (AssetChanged once the asset was replaced or deleted)."""

    def __init__(self, store: RedisStore, asset: Asset) -> None:
        self.asset = asset
        self._store = store

    def read(self, offset: int, size: int) -> bytes:
        return self._store._range(self, offset, size)
