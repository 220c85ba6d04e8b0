"""The asset store's interface: `AssetStore` (what every backend implements), `Asset` (one
stored blob's metadata, and its bytes when loaded), `AssetReader` (a ranged read of one
version) and the errors. `AssetStore.open(url)` picks the backend by the URL's scheme:
this module names the backends (`AssetStore.BACKENDS`) and imports none of them (each is
loaded by name when first opened); they import it.

A backend implements five synchronous primitives (`_put`, `_load`, `_stat`, `_delete`,
`_names`) and `_open` for ranged reads; names are checked, sizes bounded and content types
defaulted here, once for all. The async methods (`aput`, `aget`, ...) run the synchronous
ones in a small thread pool of the store's own, so an event loop never waits on a disk or
a server; a backend with a native async client overrides them. docs/assets.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import os
import mimetypes
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Callable, ClassVar, TypeVar

from .._text import shown, shown_url
from .names import check_content_type, check_name

__all__ = [
    "Asset",
    "AssetChanged",
    "AssetError",
    "AssetNotFound",
    "AssetReader",
    "AssetStore",
    "AssetTooLarge",
    "BytesReader",
    "DEFAULT_CONTENT_TYPE",
    "DEFAULT_MAX_SIZE",
    "StoreUnavailable",
    "content_etag",
    "guess_type",
    "shown_url",
]

T = TypeVar("T")

#: The largest asset a store accepts unless told otherwise (`max_size=`).
DEFAULT_MAX_SIZE = 64 * 1024 * 1024
DEFAULT_CONTENT_TYPE = "application/octet-stream"
#: The key prefix of a cache opened from a URL (a store on the same server uses another).
CACHE_PREFIX = "amfkit:asset-cache:"
#: Threads per store for the async methods of backends without a native async client.
DEFAULT_THREADS = 8


class AssetError(Exception):
    """Anything the asset store refuses or cannot do."""


class AssetNotFound(AssetError, KeyError):
    """No asset of that name (a KeyError, as a mapping's missing key is)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "asset not found"


class AssetTooLarge(AssetError, ValueError):
    """A put larger than the store's `max_size`."""


class AssetChanged(AssetError):
    """The asset a reader was reading was replaced or deleted meanwhile (a ranged read
    never mixes two versions: it fails instead)."""


class StoreUnavailable(AssetError, OSError):
    """The backend could not be reached or failed (the text names it, never a password)."""


def content_etag(data: bytes | memoryview) -> str:
    """A strong ETag from the content: 128 bits of BLAKE2b, quoted as HTTP writes it."""
    return '"' + hashlib.blake2b(data, digest_size=16).hexdigest() + '"'


def guess_type(name: str) -> str:
    """The media type a name's extension suggests (`application/octet-stream` if none)."""
    kind, _ = mimetypes.guess_type(name, strict=False)
    return kind or DEFAULT_CONTENT_TYPE


class Asset:
    """One stored asset: `name`, `size` (bytes), `etag` (strong, quoted), `modified` (an
    aware UTC datetime), `content_type`, and `data` when it was loaded (`store.load`), else
    None. A service may return one: the gateway sends its bytes as a ByteArray (AMF3),
    bytes (AMF0) or base64 text (JSON-RPC, XML-RPC), reading them from the store if they
    are not loaded."""

    __slots__ = ("name", "size", "etag", "modified", "content_type", "data", "store")

    def __init__(
        self,
        name: str,
        size: int,
        etag: str,
        modified: datetime,
        content_type: str,
        data: bytes | None = None,
        store: AssetStore | None = None,
    ) -> None:
        self.name = name
        self.size = size
        self.etag = etag
        self.modified = modified
        self.content_type = content_type
        self.data = data
        self.store = store

    @property
    def mtime(self) -> float:
        """`modified` as POSIX seconds."""
        return self.modified.timestamp()

    def read(self) -> bytes:
        """The asset's bytes: `data` when loaded, else read from its store now."""
        if self.data is not None:
            return self.data
        if self.store is None:
            raise AssetError(f"asset {shown(self.name)} has no data and no store to read it from")
        return self.store.get(self.name)

    async def aread(self) -> bytes:
        if self.data is not None:
            return self.data
        if self.store is None:
            raise AssetError(f"asset {shown(self.name)} has no data and no store to read it from")
        return await self.store.aget(self.name)

    def with_data(self, data: bytes) -> Asset:
        return Asset(self.name, self.size, self.etag, self.modified, self.content_type, data, self.store)

    def _key(self) -> tuple[Any, ...]:
        return (self.name, self.size, self.etag, self.modified, self.content_type)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Asset) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        loaded = ", loaded" if self.data is not None else ""
        return f"Asset({self.name!r}, size={self.size}, etag={self.etag}, content_type={self.content_type!r}{loaded})"


def utc(timestamp: float) -> datetime:
    """POSIX seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(timestamp, timezone.utc)


class AssetReader:
    """Ranged reads of one version of an asset (`store.open(name)`): `asset` is what is
    being read; `read(offset, size)` gives up to `size` bytes from `offset`, always of
    that version (`AssetChanged` if it was replaced or deleted since and the backend can
    no longer give it). `fileno()` is a file descriptor to `sendfile` from, when the
    backend has one. Close it (or use `with`)."""

    asset: Asset

    def read(self, offset: int, size: int) -> bytes:
        raise NotImplementedError

    def fileno(self) -> int | None:
        return None

    def close(self) -> None:
        pass

    def __enter__(self) -> AssetReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BytesReader(AssetReader):
    """A reader over bytes already in memory."""

    def __init__(self, asset: Asset, data: bytes) -> None:
        self.asset = asset
        self._data = memoryview(data)

    def read(self, offset: int, size: int) -> bytes:
        return bytes(self._data[offset : offset + size])


class AssetStore:
    """Named binary assets on one backend. Open one with `AssetStore.open(url)`:

        file:///var/lib/app/assets            (the default: a folder; a bare path too)
        sqlite:///assets.db                   (a BLOB table in a SQLite file)
        postgresql://user@127.0.0.1/db        (bytea, through a connection pool)
        memcached://127.0.0.1:11211           (volatile: memcached may evict)
        redis://127.0.0.1:6379/0

    and `cache="memcached://..."` or `cache="redis://..."` for a cache in front of a
    durable store. The same methods on every backend; the sync ones block, the `a...`
    ones never block the event loop."""

    #: URL schemes -> (module, class); `open` imports the module only when used (a
    #: folder's path, with no scheme, is a "file" store).
    BACKENDS: ClassVar[dict[str, tuple[str, str]]] = {
        "file": ("filesystem", "FileStore"),
        "sqlite": ("sqlite", "SQLiteStore"),
        "postgresql": ("postgresql", "PostgresStore"),
        "postgres": ("postgresql", "PostgresStore"),
        "memcached": ("memcached", "MemcachedStore"),
        "redis": ("redis", "RedisStore"),
        "rediss": ("redis", "RedisStore"),
    }

    #: Whether the backend may lose what it was given (memcached evicts).
    volatile: ClassVar[bool] = False

    def __init__(self, url: str, *, max_size: int = DEFAULT_MAX_SIZE) -> None:
        if not isinstance(max_size, int) or max_size < 0:
            raise ValueError("max_size must be 0 or more bytes")
        self.url = shown_url(url)
        self.max_size = max_size
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()

    # --- opening ---------------------------------------------------------------------

    @classmethod
    def open(
        cls, url: str | os.PathLike[str], *, cache: str | AssetStore | None = None, cache_options: dict[str, Any] | None = None, **options: Any
    ) -> AssetStore:
        """The store a URL (or a folder's path) names (see the class docstring); `options` go to the backend
        (every one takes `max_size`). `cache` puts a memcached or Redis store in front of
        it: reads try the cache first, puts and deletes go to both (docs/assets.md).
        `cache_options` go to a cache given as a URL (its keys are under the prefix
        `amfkit:asset-cache:` unless they say otherwise, apart from a store's own)."""
        store = cls._open_one(url, **options)
        if cache is None:
            return store
        if isinstance(cache, str):
            front = cls._open_one(cache, **{"prefix": CACHE_PREFIX, "max_size": store.max_size, **(cache_options or {})})
        else:
            front = cache
        cached: AssetStore = _backend(_CACHED)(store, front)
        return cached

    @classmethod
    def _open_one(cls, url: str | os.PathLike[str], **options: Any) -> AssetStore:
        if isinstance(url, os.PathLike):
            folder: AssetStore = _backend(cls.BACKENDS["file"])(url, **options)
            return folder
        if not isinstance(url, str):
            raise TypeError(f"an asset store URL is a str, not {type(url).__name__}")
        scheme, sep, _ = url.partition("://")
        if not sep:
            folder = _backend(cls.BACKENDS["file"])(url, **options)
            return folder
        backend = cls.BACKENDS.get(scheme.lower())
        if backend is None:
            known = ", ".join(f"{s}://" for s in cls.BACKENDS)
            raise ValueError(f"unsupported asset store {shown(shown_url(url))} (amfkit has: {known})")
        store: AssetStore = _backend(backend).from_url(url, **options)
        return store

    # --- what a backend implements -----------------------------------------------------

    def _put(self, name: str, data: bytes, content_type: str) -> Asset:
        raise NotImplementedError

    def _load(self, name: str) -> Asset:
        """The asset with `data` set; AssetNotFound if absent."""
        raise NotImplementedError

    def _stat(self, name: str) -> Asset:
        raise NotImplementedError

    def _delete(self, name: str) -> None:
        """Remove it; AssetNotFound if absent."""
        raise NotImplementedError

    def _names(self, prefix: str) -> Iterator[str]:
        """Every name starting with `prefix`, in sorted order (by code point)."""
        raise NotImplementedError

    def _open(self, name: str) -> AssetReader:
        asset = self._load(name)
        assert asset.data is not None
        return BytesReader(asset, asset.data)

    def _open_small(self, name: str, limit: int) -> AssetReader:
        """A reader whose asset's bytes are in memory already (a `BytesReader`) when it has
        at most `limit` bytes; a backend that can read both in one go overrides this."""
        reader = self._open(name)
        size = reader.asset.size
        if size > limit or isinstance(reader, BytesReader):
            return reader
        try:
            data = reader.read(0, size)
        finally:
            reader.close()
        if len(data) != size:
            raise AssetChanged(f"asset {shown(name)} changed while being read")
        return BytesReader(reader.asset, data)

    def close(self) -> None:
        """Release connections and threads (the store cannot be used afterwards)."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)

    async def aclose(self) -> None:
        self.close()

    # --- the interface ---------------------------------------------------------------

    def put(self, name: str, data: bytes | bytearray | memoryview, *, content_type: str | None = None) -> Asset:
        """Store `data` under `name` (replacing what was there, atomically: a reader sees
        the old or the new content, never a mix). `content_type` defaults to what the
        name's extension suggests. Returns the new asset's metadata."""
        name, data, content_type = self._checked(name, data, content_type)
        asset = self._put(name, data, content_type)
        asset.store = self
        return asset

    def get(self, name: str) -> bytes:
        """The asset's bytes; AssetNotFound (a KeyError) if there is none."""
        data = self.load(name).data
        assert data is not None
        return data

    def load(self, name: str) -> Asset:
        """The asset with its bytes in `data`: what a service returns to send one."""
        asset = self._load(check_name(name))
        asset.store = self
        return asset

    def stat(self, name: str) -> Asset:
        """The asset's metadata (`data` is None); AssetNotFound if there is none."""
        asset = self._stat(check_name(name))
        asset.store = self
        return asset

    def open_reader(self, name: str, *, preload: int = 0) -> AssetReader:
        """A reader of the asset's current version, for ranged and streamed reads. When
        the asset has at most `preload` bytes they are read at once, in the same trip to
        the backend where it can (the reader is then a `BytesReader`: reads cost
        nothing more)."""
        reader = self._open_small(check_name(name), preload) if preload > 0 else self._open(check_name(name))
        reader.asset.store = self
        return reader

    def delete(self, name: str) -> None:
        """Remove the asset; AssetNotFound if there is none."""
        self._delete(check_name(name))

    def names(self, prefix: str = "") -> Iterator[str]:
        """The names starting with `prefix`, sorted."""
        if not isinstance(prefix, str):
            raise TypeError("prefix must be a str")
        return self._names(prefix)

    def __iter__(self) -> Iterator[str]:
        return self.names()

    def __len__(self) -> int:
        return sum(1 for _ in self.names())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            check_name(name)
            self._stat(name)
        except (AssetNotFound, ValueError):
            return False
        return True

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    # --- async -----------------------------------------------------------------------

    async def aput(self, name: str, data: bytes | bytearray | memoryview, *, content_type: str | None = None) -> Asset:
        return await self._in_thread(lambda: self.put(name, data, content_type=content_type))

    async def aget(self, name: str) -> bytes:
        data = (await self.aload(name)).data
        assert data is not None
        return data

    async def aload(self, name: str) -> Asset:
        return await self._in_thread(lambda: self.load(name))

    async def astat(self, name: str) -> Asset:
        return await self._in_thread(lambda: self.stat(name))

    async def aopen_reader(self, name: str, *, preload: int = 0) -> AssetReader:
        return await self._in_thread(lambda: self.open_reader(name, preload=preload))

    async def aread(self, reader: AssetReader, offset: int, size: int) -> bytes:
        """`reader.read(offset, size)` off the event loop (at once for a `BytesReader`)."""
        if isinstance(reader, BytesReader):
            return reader.read(offset, size)
        return await self._in_thread(lambda: reader.read(offset, size))

    async def adelete(self, name: str) -> None:
        await self._in_thread(lambda: self.delete(name))

    async def anames(self, prefix: str = "") -> list[str]:
        return await self._in_thread(lambda: list(self.names(prefix)))

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        executor = self._executor
        if executor is None:
            with self._executor_lock:
                executor = self._executor
                if executor is None:
                    executor = self._executor = ThreadPoolExecutor(DEFAULT_THREADS, thread_name_prefix="amfkit-assets")
        return await asyncio.get_running_loop().run_in_executor(executor, fn)

    # --- shared checks ---------------------------------------------------------------

    def _checked(self, name: str, data: bytes | bytearray | memoryview, content_type: str | None) -> tuple[str, bytes, str]:
        name = check_name(name)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"asset data is bytes, bytearray or memoryview, not {type(data).__name__}")
        if not isinstance(data, bytes):
            data = bytes(data)
        if len(data) > self.max_size:
            raise AssetTooLarge(f"asset {shown(name)} of {len(data)} bytes is larger than this store's max_size ({self.max_size})")
        content_type = guess_type(name) if content_type is None else check_content_type(content_type)
        return name, data, content_type


#: The store `cache=` puts in front of another (module, class), loaded as the backends are.
_CACHED = ("cache", "CachedStore")


def _backend(where: tuple[str, str]) -> Any:
    """The class `where` names (a module of this package, a class in it), its module
    imported now if it was not yet."""
    return getattr(importlib.import_module(f"{__package__}.{where[0]}"), where[1])


def close_in_loops(closers: list[tuple[Any, asyncio.AbstractEventLoop]], pending: set[Any]) -> None:
    """From `close()`: run each async generator's `aclose()` in its own event loop (the
    one its connections belong to): as a task when that loop is the running one (kept in
    `pending` until done), thread-safely when it runs in another thread, to the end when
    it is stopped; a closer None or a closed loop is skipped."""
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    for closer, loop in closers:
        if closer is None or loop.is_closed():
            continue
        coro = closer.aclose()
        if loop is running:
            task = loop.create_task(coro)
            pending.add(task)
            task.add_done_callback(pending.discard)
        elif loop.is_running():
            asyncio.run_coroutine_threadsafe(coro, loop)
        else:
            try:
                loop.run_until_complete(coro)
            except Exception:  # noqa: BLE001  (closing connections: nothing to report)
                pass


def not_found(name: str) -> AssetNotFound:
    return AssetNotFound(f"no asset {shown(name)}")
