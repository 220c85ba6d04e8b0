"""A cache in front of a durable store: `CachedStore(durable, cache)`, what
`AssetStore.open(url, cache="memcached://..." or "redis://...")` makes.

Reads (`get`, `load`, `stat`, small `open_reader`s) try the cache first; a miss reads the
durable store and fills the cache with what it read, if the asset is at most
`max_cached` bytes (512 KiB unless told). Writes go to the durable store, then update
the cache. `names()` and the readers of larger assets come from the durable store.

Never stale after a put or a delete through the store. A fill is made under a *lease*:
before reading the durable store, a reader claims the empty entry (memcached `add`; in
Redis a Lua script that sets it only if absent), with a short expiry, and its fill
succeeds only if nothing was written to the entry since (memcached `gets`/`cas`, a Lua
script in Redis). A put writes the durable store, then takes the entry over with a lease
of its own (which kills any reader's lease: a reader that read the old version before
the put fails to fill it, even if memcached evicted the entry meanwhile), reads the
durable store's metadata again and fills the entry only if it still is the version it
wrote (so two puts racing cannot leave the older one cached; this costs a put one
`stat` of the durable store). A delete drops the entry, and any lease on it with it, so
no tombstone is needed: a fill racing a delete fails the same way. `AssetCache` is what
a cache implements (MemcachedStore and RedisStore do); CachedStore's own cache entries
never expire (the cache's eviction bounds them).

A cache that fails (down, hung, full) is never an error: the operation goes to the
durable store alone, the failure is logged on the `amfkit.assets` logger (a warning, at
most once every 30 s per store), and the cache is left alone for `retry_after` seconds.
A put or delete that could not update the cache leaves a stale entry there, so the store
remembers its name (in this process): reads of that name bypass the cache until the
entry was dropped, which the first use of the cache once it answers again does. At most
`max_forget` names (10 000) are remembered; past that the store stops using the cache
altogether until it has cleared it (every key under the cache's prefix:
`cache_clear()`), which it tries each time the cache may be back. Another process that
reads the same cache does not know these names: until this one drops them it may read
the stale entries (if the cache was down for it too, it used its durable store alone).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Protocol, runtime_checkable

from .._text import error_text, shown
from .names import check_name
from .store import Asset, AssetError, AssetReader, AssetStore, BytesReader, StoreUnavailable

__all__ = ["AssetCache", "CachedStore", "DEFAULT_MAX_CACHED", "LEASE_TTL", "WARN_EVERY"]

#: Assets larger than this (bytes) are not cached unless told.
DEFAULT_MAX_CACHED = 512 * 1024
#: Seconds a lease lasts: a reader slower than this between claiming the entry and
#: filling it just does not fill it.
LEASE_TTL = 10
#: Seconds between two warnings that the cache is unavailable.
WARN_EVERY = 30.0

log = logging.getLogger("amfkit.assets")

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def to_us(moment: datetime) -> int:
    """An aware datetime as whole microseconds since the epoch (exact both ways)."""
    return (moment - _EPOCH) // _MICROSECOND


def from_us(us: int) -> datetime:
    return _EPOCH + us * _MICROSECOND


def now_us() -> int:
    return time.time_ns() // 1000


@runtime_checkable
class AssetCache(Protocol):
    """What a store in front of another implements (the `a...` methods the same,
    awaited). An entry is the cached asset, a lease, or nothing."""

    url: str

    def cache_get(self, name: str) -> Asset | None:
        """The cached asset with its bytes, or None (nothing, or a lease)."""

    def cache_lease(self, name: str, *, take_over: bool = False) -> str | None:
        """Claim the entry: a token, or None if there is one (unless `take_over`, which
        replaces anything there)."""

    def cache_fill(self, asset: Asset, lease: str) -> bool:
        """Store a loaded asset if the lease still holds the entry."""

    def cache_release(self, name: str, lease: str) -> None:
        """Drop the lease if it still holds the entry."""

    def cache_forget(self, name: str) -> None:
        """Drop the entry, whatever it is."""

    def cache_clear(self) -> None:
        """Drop every entry."""

    async def acache_get(self, name: str) -> Asset | None: ...

    async def acache_lease(self, name: str, *, take_over: bool = False) -> str | None: ...

    async def acache_fill(self, asset: Asset, lease: str) -> bool: ...

    async def acache_release(self, name: str, lease: str) -> None: ...

    async def acache_forget(self, name: str) -> None: ...

    async def acache_clear(self) -> None: ...


def _meta(asset: Asset) -> Asset:
    """The asset without its bytes."""
    return Asset(asset.name, asset.size, asset.etag, asset.modified, asset.content_type, None, asset.store)


class CachedStore(AssetStore):
    """`durable` with `cache` in front (the module's docstring says how). `.durable` and
    `.cache` are the two stores; closing this one closes both."""

    durable: AssetStore

    def __init__(
        self,
        durable: AssetStore,
        cache: AssetStore,
        *,
        max_cached: int = DEFAULT_MAX_CACHED,
        retry_after: float = 1.0,
        max_forget: int = 10_000,
    ) -> None:
        if not isinstance(durable, AssetStore):
            raise TypeError(f"the store behind a cache is an AssetStore, not {type(durable).__name__}")
        if not isinstance(cache, AssetCache):
            raise TypeError(f"a cache is a memcached:// or redis:// store, not {type(cache).__name__}")
        if isinstance(max_cached, bool) or not isinstance(max_cached, int) or max_cached < 0:
            raise ValueError(f"max_cached must be 0 or more bytes, not {shown(max_cached)}")
        if not (isinstance(retry_after, (int, float)) and retry_after >= 0):
            raise ValueError(f"retry_after must be 0 or more seconds, not {shown(retry_after)}")
        if isinstance(max_forget, bool) or not isinstance(max_forget, int) or max_forget < 0:
            raise ValueError(f"max_forget must be 0 or more, not {shown(max_forget)}")
        super().__init__(durable.url, max_size=durable.max_size)
        self.url = f"{durable.url} (cache {cache.url})"
        self.durable = durable
        self.cache = cache
        self._cache: AssetCache = cache
        self.max_cached = max_cached
        self.retry_after = float(retry_after)
        self.max_forget = max_forget
        self._lock = threading.Lock()
        self._recovering = threading.Lock()
        self._down_until = 0.0
        self._warned_at = -WARN_EVERY
        self._seq = 0
        #: Names whose entry may be stale -> when that was noted (`_seq`).
        self._forget: dict[str, int] = {}
        #: Set (to the `_seq` of the overflow) while the whole cache must be cleared.
        self._clear_seq: int | None = None

    def close(self) -> None:
        try:
            self.durable.close()
        finally:
            self.cache.close()
            super().close()

    async def aclose(self) -> None:
        try:
            await self.durable.aclose()
        finally:
            await self.cache.aclose()
            super().close()

    def __repr__(self) -> str:
        return f"CachedStore({self.durable!r}, cache={self.cache!r})"

    # --- the cache's health ----------------------------------------------------------

    @property
    def cache_pending(self) -> int:
        """How many names' entries are to be dropped before they are read from the
        cache again (-1: the whole cache is to be cleared)."""
        with self._lock:
            return -1 if self._clear_seq is not None else len(self._forget)

    def _failed(self, error: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            self._down_until = now + self.retry_after
            warn = now - self._warned_at >= WARN_EVERY
            if warn:
                self._warned_at = now
        if warn:
            log.warning("asset cache %s unavailable, using %s alone: %s", self.cache.url, self.durable.url, error_text(error))

    def _remember(self, name: str) -> None:
        """The entry of `name` may be stale: bypass it until it is dropped."""
        with self._lock:
            self._seq += 1
            if self._clear_seq is not None:
                self._clear_seq = self._seq  # a clear already under way may predate this
                return
            self._forget[name] = self._seq
            if len(self._forget) > self.max_forget:
                self._clear_seq = self._seq
                self._forget.clear()

    def _state(self, name: str | None) -> tuple[bool, bool]:
        """(whether to use the cache for `name`, whether there is recovery to do)."""
        with self._lock:
            if time.monotonic() < self._down_until:
                return False, False
            pending = self._clear_seq is not None or bool(self._forget)
            usable = self._clear_seq is None and (name is None or name not in self._forget)
            return usable, pending

    def _pending(self) -> tuple[int | None, int, dict[str, int]]:
        with self._lock:
            return self._clear_seq, self._seq, dict(self._forget)

    def _cleared(self, seq: int) -> None:
        with self._lock:
            if self._clear_seq is not None and self._clear_seq <= seq:
                self._clear_seq = None
            self._forget = {n: s for n, s in self._forget.items() if s > seq}

    def _dropped(self, name: str, seq: int) -> None:
        with self._lock:
            if self._forget.get(name) == seq:
                del self._forget[name]

    def _usable(self, name: str | None) -> bool:
        usable, pending = self._state(name)
        if pending and self._recovering.acquire(blocking=False):
            try:
                clear, seq, forget = self._pending()
                if clear is not None:
                    self._cache.cache_clear()
                    self._cleared(seq)
                else:
                    for n, s in forget.items():
                        self._cache.cache_forget(n)
                        self._dropped(n, s)
            except StoreUnavailable as e:
                self._failed(e)
            finally:
                self._recovering.release()
            usable, _ = self._state(name)
        return usable

    async def _ausable(self, name: str | None) -> bool:
        usable, pending = self._state(name)
        if pending and self._recovering.acquire(blocking=False):
            try:
                clear, seq, forget = self._pending()
                if clear is not None:
                    await self._cache.acache_clear()
                    self._cleared(seq)
                else:
                    for n, s in forget.items():
                        await self._cache.acache_forget(n)
                        self._dropped(n, s)
            except StoreUnavailable as e:
                self._failed(e)
            finally:
                self._recovering.release()
            usable, _ = self._state(name)
        return usable

    # --- cache steps that never fail -------------------------------------------------

    def _lookup(self, name: str) -> tuple[Asset | None, str | None]:
        """(the cached asset, or else a lease to fill it with, or neither)."""
        if not self._usable(name):
            return None, None
        try:
            hit = self._cache.cache_get(name)
            if hit is not None:
                return hit, None
            return None, self._cache.cache_lease(name)
        except StoreUnavailable as e:
            self._failed(e)
            return None, None

    async def _alookup(self, name: str) -> tuple[Asset | None, str | None]:
        if not await self._ausable(name):
            return None, None
        try:
            hit = await self._cache.acache_get(name)
            if hit is not None:
                return hit, None
            return None, await self._cache.acache_lease(name)
        except StoreUnavailable as e:
            self._failed(e)
            return None, None

    def _fill(self, name: str, lease: str | None, asset: Asset | None) -> None:
        """Fill the entry with `asset` (read from the durable store after the lease was
        taken), or give the lease back (no asset, or too large)."""
        if lease is None:
            return
        try:
            if asset is not None and asset.data is not None and asset.size <= self.max_cached and len(asset.data) == asset.size:
                self._cache.cache_fill(asset, lease)
            else:
                self._cache.cache_release(name, lease)
        except StoreUnavailable as e:
            self._failed(e)

    async def _afill(self, name: str, lease: str | None, asset: Asset | None) -> None:
        if lease is None:
            return
        try:
            if asset is not None and asset.data is not None and asset.size <= self.max_cached and len(asset.data) == asset.size:
                await self._cache.acache_fill(asset, lease)
            else:
                await self._cache.acache_release(name, lease)
        except StoreUnavailable as e:
            self._failed(e)

    def _refresh(self, name: str, asset: Asset, data: bytes) -> None:
        """After a put: take the entry over, and fill it if the durable store still holds
        this version."""
        if not self._usable(name):
            self._remember(name)
            return
        try:
            lease = self._cache.cache_lease(name, take_over=True)
        except StoreUnavailable as e:
            self._failed(e)
            self._remember(name)
            return
        current: Asset | None = None
        if asset.size <= self.max_cached:
            try:
                current = self.durable.stat(name)
            except AssetError:
                pass  # the put is done; this was only to warm the cache
        self._fill(name, lease, asset.with_data(data) if current == asset else None)

    async def _arefresh(self, name: str, asset: Asset, data: bytes) -> None:
        if not await self._ausable(name):
            self._remember(name)
            return
        try:
            lease = await self._cache.acache_lease(name, take_over=True)
        except StoreUnavailable as e:
            self._failed(e)
            self._remember(name)
            return
        current: Asset | None = None
        if asset.size <= self.max_cached:
            try:
                current = await self.durable.astat(name)
            except AssetError:
                pass
        await self._afill(name, lease, asset.with_data(data) if current == asset else None)

    def _invalidate(self, name: str) -> None:
        if not self._usable(name):
            self._remember(name)
            return
        try:
            self._cache.cache_forget(name)
        except StoreUnavailable as e:
            self._failed(e)
            self._remember(name)

    async def _ainvalidate(self, name: str) -> None:
        if not await self._ausable(name):
            self._remember(name)
            return
        try:
            await self._cache.acache_forget(name)
        except StoreUnavailable as e:
            self._failed(e)
            self._remember(name)

    # --- the primitives --------------------------------------------------------------

    def _load(self, name: str) -> Asset:
        hit, lease = self._lookup(name)
        if hit is not None:
            return hit
        try:
            asset = self.durable.load(name)
        except BaseException:
            self._fill(name, lease, None)
            raise
        self._fill(name, lease, asset)
        return asset

    def _stat(self, name: str) -> Asset:
        hit, lease = self._lookup(name)
        if hit is not None:
            return _meta(hit)
        try:
            info = self.durable.stat(name)
            if lease is not None and info.size <= self.max_cached:
                asset = self.durable.load(name)
                self._fill(name, lease, asset)
                return _meta(asset)
        except BaseException:
            self._fill(name, lease, None)
            raise
        self._fill(name, lease, None)
        return info

    def _open(self, name: str) -> AssetReader:
        hit, lease = self._lookup(name)
        if hit is not None:
            assert hit.data is not None
            return BytesReader(_meta(hit), hit.data)
        try:
            reader = self.durable.open_reader(name)
        except BaseException:
            self._fill(name, lease, None)
            raise
        if lease is None:
            return reader
        if reader.asset.size > self.max_cached:
            self._fill(name, lease, None)
            return reader
        try:
            data = _read_whole(reader)
        except BaseException:
            self._fill(name, lease, None)
            raise
        finally:
            reader.close()
        self._fill(name, lease, reader.asset.with_data(data))
        return BytesReader(reader.asset, data)

    def _put(self, name: str, data: bytes, content_type: str) -> Asset:
        asset = self.durable.put(name, data, content_type=content_type)
        self._refresh(name, asset, data)
        return asset

    def _delete(self, name: str) -> None:
        try:
            self.durable.delete(name)
        finally:
            self._invalidate(name)  # absent there, it may still be cached: drop it too

    def _names(self, prefix: str) -> Iterator[str]:
        return self.durable.names(prefix)

    # --- async: the two stores' own async methods ------------------------------------

    async def aput(self, name: str, data: bytes | bytearray | memoryview, *, content_type: str | None = None) -> Asset:
        name, data, content_type = self._checked(name, data, content_type)
        asset = await self.durable.aput(name, data, content_type=content_type)
        await self._arefresh(name, asset, data)
        asset.store = self
        return asset

    async def aload(self, name: str) -> Asset:
        name = check_name(name)
        hit, lease = await self._alookup(name)
        if hit is not None:
            hit.store = self
            return hit
        try:
            asset = await self.durable.aload(name)
        except BaseException:
            await self._afill(name, lease, None)
            raise
        await self._afill(name, lease, asset)
        asset.store = self
        return asset

    async def astat(self, name: str) -> Asset:
        name = check_name(name)
        hit, lease = await self._alookup(name)
        if hit is not None:
            hit.store = self
            return _meta(hit)
        try:
            info = await self.durable.astat(name)
            if lease is not None and info.size <= self.max_cached:
                asset = await self.durable.aload(name)
                await self._afill(name, lease, asset)
                info = _meta(asset)
                lease = None
        except BaseException:
            await self._afill(name, lease, None)
            raise
        await self._afill(name, lease, None)
        info.store = self
        return info

    async def aopen_reader(self, name: str, *, preload: int = 0) -> AssetReader:
        name = check_name(name)
        hit, lease = await self._alookup(name)
        if hit is not None:
            assert hit.data is not None
            hit.store = self
            return BytesReader(_meta(hit), hit.data)
        try:
            # What it fills the cache with comes in the same trip, where the store can.
            reader = await self.durable.aopen_reader(name, preload=max(preload, self.max_cached if lease is not None else 0))
        except BaseException:
            await self._afill(name, lease, None)
            raise
        reader.asset.store = self
        if lease is None:
            return reader
        if reader.asset.size > self.max_cached:
            await self._afill(name, lease, None)
            return reader
        try:
            data = await _aread_whole(self.durable, reader)
        except BaseException:
            await self._afill(name, lease, None)
            raise
        finally:
            reader.close()
        await self._afill(name, lease, reader.asset.with_data(data))
        return BytesReader(reader.asset, data)

    async def aread(self, reader: AssetReader, offset: int, size: int) -> bytes:
        if isinstance(reader, BytesReader):
            return reader.read(offset, size)  # in memory already
        return await self.durable.aread(reader, offset, size)

    async def adelete(self, name: str) -> None:
        name = check_name(name)
        try:
            await self.durable.adelete(name)
        finally:
            await self._ainvalidate(name)

    async def anames(self, prefix: str = "") -> list[str]:
        if not isinstance(prefix, str):
            raise TypeError("prefix must be a str")
        return await self.durable.anames(prefix)


def _read_whole(reader: AssetReader) -> bytes:
    """All of a reader's version (AssetError if it reads short)."""
    size = reader.asset.size
    parts: list[bytes] = []
    got = 0
    while got < size:
        piece = reader.read(got, size - got)
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return _whole(reader, parts, got)


async def _aread_whole(store: AssetStore, reader: AssetReader) -> bytes:
    size = reader.asset.size
    parts: list[bytes] = []
    got = 0
    while got < size:
        piece = await store.aread(reader, got, size - got)
        if not piece:
            break
        parts.append(piece)
        got += len(piece)
    return _whole(reader, parts, got)


def _whole(reader: AssetReader, parts: list[bytes], got: int) -> bytes:
    if got != reader.asset.size:
        raise AssetError(f"asset {shown(reader.asset.name)} read {got} of its {reader.asset.size} bytes")
    return b"".join(parts)
