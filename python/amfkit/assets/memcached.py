"""The memcached backend (`memcached://HOST:PORT`, or `memcached://H1:P1,H2:P2` for
several servers): a volatile store, and a cache in front of a durable one.

memcached may evict anything at any time, so this store is not durable (`volatile =
True`): what was put may be gone later. What it does guarantee is that a reader never
sees a mix of two versions, and that an asset partly evicted reads as absent.

Keys (all under the store's prefix; memcached keys are short ASCII, so names are hashed):

- `m:HASH` is an asset's record, HASH the BLAKE2b of its name: a header (the name, size,
  ETag, modification time, content type, and the version and chunk count of a large one)
  followed, for an asset up to `chunk_size` (512 KiB), by its bytes: one round trip reads
  it;
- `c:VERSION:I` is the I-th chunk of a larger asset (memcached items are 1 MB at most),
  VERSION random for each put. A put writes its chunks first and its record last, so a
  reader sees the old record or the new one, and the chunks of the version it names. A
  chunk that is gone (evicted, or deleted after a put replaced its version) makes a
  `get` look at the record again: replaced meanwhile, it reads the new version; the same
  version, the asset was evicted: its record is dropped and it reads as absent. A reader
  (`open_reader`) of a version whose chunk is gone raises AssetChanged. A put replaces
  the record with gets/cas, learning which chunks it replaced, and deletes them;
- `i:B` (B of 16 buckets, by the name's hash) lists the names, one a line, updated with
  gets/cas (bounded retries); `names()` drops the names whose record is gone (evicted),
  asking memcached with its meta commands (memcached 1.6 or newer). An index bucket is
  one item too: some tens of thousands of names in all.

Several servers: each key goes to one server by rendezvous hashing, with no failover (a
server down makes its share of the keys unavailable; moving keys to another server and
back when it returns would serve what it held before, stale). Each server has a pool of
`pool_size` connections (pymemcache's PooledClient) and every call has `timeout` seconds:
a server down or hung gives StoreUnavailable, soon.

The async reads (`aopen_reader`, `aread`, `aload`, `aget`, `astat`) and the async cache
protocol (`acache_get`, `_lease`, `_fill`, `_release`, `_forget`) are native, on
aiomcache (no thread): the same keys, records and commands as the sync path, so that
each reads what the other wrote and honours the other's leases. Each event loop has its
own connections (a connection belongs to the loop that made it), up to `pool_size` per
server, running aiomcache's commands; every command has `timeout` seconds (a watchdog
per loop cancels it within an eighth more), and a connection whose command failed or
was cancelled (its reply may still come) is closed, never reused. They are closed when
their loop shuts its async generators down (as `asyncio.run`, `asyncio.Runner` and
uvloop do; a loop closed without that leaves them to the garbage collector, which
warns), or by `aclose()` or `close()`. The conditional delete (an expired cas) is sent
with an exptime long past rather than -1 (aiomcache refuses a negative one): memcached
reads both the same. `aput`, `adelete`, `anames` and `acache_clear` (writes, listings)
stay on the store's thread pool; so does every async method without aiomcache.

As a cache (`AssetStore.open(url, cache="memcached://...")`, amfkit.assets.cache), the
record may also be a lease (a token): see cache.py for the protocol.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import struct
import threading
from collections.abc import AsyncGenerator, Iterator, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from .._text import error_text, shown
from .cache import LEASE_TTL, from_us, now_us, to_us
from .memcached_aio import Call, Connections, LoopConnections, aiomcache_commands, cancelled_by_others
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

__all__ = ["CHUNK_SIZE", "MemcachedReader", "MemcachedStore"]

#: Bytes per chunk of a large asset, and the largest asset kept inline in its record.
CHUNK_SIZE = 512 * 1024
#: The index of names is split in this many items.
INDEX_BUCKETS = 16
#: Attempts of a gets/cas update before giving up.
CAS_RETRIES = 32
#: Chunks per request (a get or set of several keys).
BATCH = 8
#: The largest chunk: a record holds up to a chunk inline after its header (a few KB at
#: most), and memcached's items are 1 MiB at most unless its `-I` says otherwise.
MAX_CHUNK_SIZE = 1024 * 1024 - 8192
#: The longest key prefix (memcached keys are 250 bytes at most).
MAX_PREFIX = 200
DEFAULT_PORT = 11211

_ASSET = b"A"
_LEASE = b"L"
_HEADER = struct.Struct(">I")
#: The exptime of the async path's conditional delete (an expired cas): more than 30 days,
#: so an absolute time, long past: the item expires at once. memcached turns the sync
#: path's -1 into this very value; aiomcache refuses a negative exptime.
_EXPIRED = 60 * 60 * 24 * 30 + 1



#: Record headers decoded, by their bytes (a header's fields are all its own: a record
#: read again, unchanged, is not parsed again); emptied when it holds MAX_HEADERS.
_HEADERS: dict[bytes, tuple[Any, int, str, datetime, str, str, int, int]] = {}
MAX_HEADERS = 4096


class _Record:
    """A decoded asset record."""

    __slots__ = ("asset", "version", "chunks", "chunk_size", "inline")

    def __init__(self, asset: Asset, version: str, chunks: int, chunk_size: int, inline: bytes | None) -> None:
        self.asset = asset
        self.version = version
        self.chunks = chunks
        self.chunk_size = chunk_size
        self.inline = inline


def _encode(asset: Asset, version: str, chunks: int, chunk_size: int, inline: bytes | None) -> bytes:
    header = {
        "n": asset.name,
        "s": asset.size,
        "e": asset.etag,
        "m": to_us(asset.modified),
        "t": asset.content_type,
        "v": version,
        "k": chunks,
        "c": chunk_size,
    }
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"".join((_ASSET, _HEADER.pack(len(head)), head, inline if inline is not None else b""))


def _decode(raw: bytes | None, name: str) -> _Record | None:
    """The asset record of `name` in `raw`; None for no record, a lease, or anything
    else (another name with the same hash, a value amfkit did not write)."""
    if not raw or raw[:1] != _ASSET:
        return None
    try:
        (length,) = _HEADER.unpack_from(raw, 1)
        end = 1 + _HEADER.size + length
        head = raw[1 + _HEADER.size : end]
        fields = _HEADERS.get(head)
        if fields is None:
            header = json.loads(head.decode("utf-8"))
            fields = (
                header["n"],
                int(header["s"]),
                str(header["e"]),
                from_us(int(header["m"])),
                str(header["t"]),
                str(header["v"]),
                int(header["k"]),
                int(header["c"]),
            )
            if len(_HEADERS) >= MAX_HEADERS:
                _HEADERS.clear()
            _HEADERS[head] = fields
        listed, size, etag, modified, content_type, version, chunks, chunk_size = fields
        if listed != name:
            return None
        asset = Asset(name, size, etag, modified, content_type)
        inline = None
        if chunks == 0:
            inline = raw[end:]
            if len(inline) != size:
                return None
        return _Record(asset, version, chunks, chunk_size, inline)
    except (ValueError, KeyError, TypeError, struct.error, OverflowError):
        return None


def _parse_servers(netloc: str) -> list[tuple[str, int]]:
    servers = []
    for part in netloc.split(","):
        part = part.strip()
        if not part:
            raise ValueError("a memcached URL names no server")
        try:
            parts = urlsplit("//" + part)
            host, port = parts.hostname, parts.port
        except ValueError:
            raise ValueError(f"bad memcached server {shown(part)}") from None
        if not host:
            raise ValueError(f"bad memcached server {shown(part)}")
        if parts.username is not None or parts.password is not None:
            raise ValueError("memcached:// takes no user or password (memcached's text protocol has none)")
        servers.append((host, port if port is not None else DEFAULT_PORT))
    return servers


class _Server:
    """One server's connection pool, at most `size` connections in use at once."""

    def __init__(self, client: Any, size: int, address: tuple[str, int]) -> None:
        self.client = client
        self.slots = threading.BoundedSemaphore(size)
        self.host, self.port = address
        self.name = f"{address[0]}:{address[1]}"
        self.weight_key = self.name.encode("utf-8")


class MemcachedStore(AssetStore):
    """Assets in memcached (volatile: memcached may evict them; the module's docstring
    says what still holds). `prefix` starts every key (ASCII, no spaces); `pool_size`
    connections per server; `timeout` seconds for connecting and for each reply;
    `chunk_size` bytes per item of a large asset, and the most kept inline (at most
    `MAX_CHUNK_SIZE`; less if memcached's `-I` makes its items smaller than 1 MiB)."""

    volatile = True

    def __init__(
        self,
        url: str,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        prefix: str = "amfkit:asset:",
        pool_size: int = 8,
        timeout: float = 2.0,
        chunk_size: int = CHUNK_SIZE,
    ) -> None:
        try:
            from pymemcache.client.base import PooledClient  # type: ignore[import-untyped]
            from pymemcache.exceptions import MemcacheError  # type: ignore[import-untyped]
        except ImportError:
            raise ImportError("memcached:// needs pymemcache: pip install 'amfkit[memcached]'") from None
        super().__init__(url, max_size=max_size)
        if not isinstance(prefix, str) or len(prefix) > MAX_PREFIX or not all("\x21" <= c <= "\x7e" for c in prefix):
            raise ValueError(f"a memcached key prefix is at most {MAX_PREFIX} printable ASCII characters without spaces, not {shown(prefix)}")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise ValueError(f"pool_size must be a positive int, not {shown(pool_size)}")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds, not {shown(timeout)}")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or not 1024 <= chunk_size <= MAX_CHUNK_SIZE:
            raise ValueError(f"chunk_size must be 1024 to {MAX_CHUNK_SIZE} bytes, not {shown(chunk_size)}")
        if url.partition("://")[0].lower() != "memcached":
            raise ValueError(f"not a memcached URL: {shown(self.url)}")
        servers = _parse_servers(urlsplit(url).netloc)
        self.prefix = prefix
        self.timeout = float(timeout)
        self.chunk_size = chunk_size
        self._errors: tuple[type[BaseException], ...] = (MemcacheError, OSError)
        self.pool_size = pool_size
        self._servers = [
            _Server(
                PooledClient(
                    server,
                    connect_timeout=self.timeout,
                    timeout=self.timeout,
                    no_delay=True,
                    max_pool_size=pool_size,
                    default_noreply=False,
                ),
                pool_size,
                server,
            )
            for server in servers
        ]
        self._closed = False
        # The async path (None without aiomcache: then the store's thread pool).
        self._aio = aiomcache_commands()
        self._aloops: dict[int, LoopConnections] = {}
        self._alock = threading.Lock()
        self._closing: set[Any] = set()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> MemcachedStore:
        """`memcached://HOST[:PORT][,HOST[:PORT]...][?prefix=P&timeout=S&pool_size=N]`;
        keyword options win over the query's."""
        parts = urlsplit(url)
        query: dict[str, Any] = {}
        kinds: dict[str, Any] = {"prefix": str, "timeout": float, "pool_size": int, "chunk_size": int, "max_size": int}
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            kind = kinds.get(key)
            if kind is None:
                raise ValueError(f"unknown memcached:// option {shown(key)} (amfkit has: {', '.join(kinds)})")
            try:
                query[key] = kind(value)
            except ValueError:
                raise ValueError(f"memcached:// option {key} must be a number, not {shown(value)}") from None
        query.update(options)
        return cls(url.split("?", 1)[0], **query)

    def close(self) -> None:
        """Close the connections; the async ones of loops still open are closed on them
        (or when they shut down)."""
        with self._alock:
            self._closed = True
            loops = list(self._aloops.values())
            self._aloops.clear()
        for server in self._servers:
            try:
                server.client.close()
            except Exception:  # noqa: BLE001  (closing sockets: nothing to report)
                pass
        close_in_loops([(entry.closer, entry.loop) for entry in loops], self._closing)
        super().close()

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        with self._alock:
            entry = self._aloops.get(id(loop))
            if entry is not None and entry.loop is loop:
                del self._aloops[id(loop)]
            else:
                entry = None
        if entry is not None and entry.closer is not None:
            await entry.closer.aclose()
        self.close()

    # --- plumbing --------------------------------------------------------------------

    def _server(self, key: str) -> _Server:
        if len(self._servers) == 1:
            return self._servers[0]
        data = key.encode("ascii")
        return max(self._servers, key=lambda s: hashlib.blake2b(data, digest_size=8, key=s.weight_key[:64]).digest())

    def _call(self, server: _Server, what: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """One command on one server's pool, its failures as StoreUnavailable."""
        if self._closed:
            raise StoreUnavailable(f"memcached {self.url}: {what}: the store is closed")
        if not server.slots.acquire(timeout=self.timeout):
            raise StoreUnavailable(f"memcached {self.url}: {what}: every connection to {server.name} stayed busy")
        try:
            return getattr(server.client, method)(*args, **kwargs)
        except self._errors as e:
            raise StoreUnavailable(f"memcached {self.url}: {what} failed: {error_text(e)}") from None
        finally:
            server.slots.release()

    def _on(self, key: str, what: str, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._call(self._server(key), what, method, key, *args, **kwargs)

    def _by_server(self, keys: Sequence[str]) -> dict[int, list[str]]:
        groups: dict[int, list[str]] = {}
        for key in keys:
            groups.setdefault(id(self._server(key)), []).append(key)
        return groups

    def _server_of(self, ident: int) -> _Server:
        return next(s for s in self._servers if id(s) == ident)

    def _get_many(self, keys: Sequence[str], what: str) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for ident, group in self._by_server(keys).items():
            server = self._server_of(ident)
            for start in range(0, len(group), BATCH):
                got = self._call(server, what, "get_many", group[start : start + BATCH])
                for key, value in got.items():
                    found[key.decode("ascii") if isinstance(key, bytes) else key] = value
        return found

    def _set_many(self, values: dict[str, bytes], what: str) -> None:
        for ident, group in self._by_server(list(values)).items():
            server = self._server_of(ident)
            for start in range(0, len(group), BATCH):
                batch = {key: values[key] for key in group[start : start + BATCH]}
                failed = self._call(server, what, "set_many", batch)
                if failed:
                    raise StoreUnavailable(f"memcached {self.url}: {what} failed: {len(failed)} items not stored")

    def _forget_keys(self, keys: Sequence[str]) -> None:
        """Delete keys, best-effort (chunks no record names any more)."""
        for ident, group in self._by_server(keys).items():
            try:
                self._call(self._server_of(ident), "delete replaced chunks", "delete_many", group, noreply=True)
            except StoreUnavailable:
                pass  # left to memcached's LRU

    def _meta_key(self, name: str) -> str:
        return self.prefix + "m:" + hashlib.blake2b(name.encode("utf-8"), digest_size=16).hexdigest()

    def _index_key(self, name: str) -> str:
        return f"{self.prefix}i:{hashlib.blake2b(name.encode('utf-8'), digest_size=4).digest()[0] % INDEX_BUCKETS}"

    def _chunk_keys(self, version: str, indices: range) -> list[str]:
        return [f"{self.prefix}c:{version}:{i}" for i in indices]

    # --- records and chunks ----------------------------------------------------------

    def _write_chunks(self, data: bytes, what: str) -> tuple[str, int]:
        """Store a large asset's chunks under a new version: (version, chunk count)."""
        size = self.chunk_size
        count = -(-len(data) // size)
        version = secrets.token_hex(8)
        keys = self._chunk_keys(version, range(count))
        view = memoryview(data)
        try:
            for start in range(0, count, BATCH):
                self._set_many({keys[i]: bytes(view[i * size : (i + 1) * size]) for i in range(start, min(count, start + BATCH))}, what)
        except BaseException:
            self._forget_keys(keys)
            raise
        return version, count

    def _record_for(self, asset: Asset, data: bytes, what: str) -> tuple[bytes, list[str]]:
        """The record of `asset` (its chunks written first when large) and its chunk keys."""
        if len(data) <= self.chunk_size:
            return _encode(asset, "", 0, self.chunk_size, data), []
        version, count = self._write_chunks(data, what)
        return _encode(asset, version, count, self.chunk_size, None), self._chunk_keys(version, range(count))

    def _old_chunks(self, raw: bytes | None, name: str) -> list[str]:
        record = _decode(raw, name)
        if record is None or record.chunks == 0:
            return []
        return self._chunk_keys(record.version, range(record.chunks))

    def _read_chunks(self, record: _Record, first: int, last: int, what: str) -> list[bytes] | None:
        """Chunks first..last (inclusive) of the record's version; None if one is gone."""
        keys = self._chunk_keys(record.version, range(first, last + 1))
        found = self._get_many(keys, what)
        if len(found) != len(keys):
            return None
        return [found[k] for k in keys]

    def _read(self, name: str, what: str) -> Asset | None:
        """The asset with its bytes; None if absent or partly evicted (then its record is
        dropped, so that it reads as absent everywhere and a cache can fill it again)."""
        key = self._meta_key(name)
        for _attempt in range(8):
            raw = self._on(key, what, "get")
            record = _decode(raw, name)
            if record is None:
                return None
            if record.inline is not None:
                return record.asset.with_data(record.inline)
            chunks = self._read_chunks(record, 0, record.chunks - 1, what)
            if chunks is not None:
                data = b"".join(chunks)
                if len(data) == record.asset.size:
                    return record.asset.with_data(data)
            again, token = self._on(key, what, "gets")
            if again != raw:
                continue  # replaced while being read: read the new version
            # The same version with a chunk gone: evicted. Drop the record (if it is still
            # that one: an expired cas is a conditional delete).
            if token is not None:
                self._on(key, what, "cas", b"", token, expire=-1)
            self._forget_keys(self._old_chunks(raw, name))
            return None
        raise AssetChanged(f"asset {shown(name)} kept changing while being read")

    # --- the primitives --------------------------------------------------------------

    def _load(self, name: str) -> Asset:
        asset = self._read(name, f"read asset {shown(name)}")
        if asset is None:
            raise not_found(name)
        return asset

    def _stat(self, name: str) -> Asset:
        record = _decode(self._on(self._meta_key(name), f"stat asset {shown(name)}", "get"), name)
        if record is None:
            raise not_found(name)
        return record.asset

    def _open(self, name: str) -> AssetReader:
        record = _decode(self._on(self._meta_key(name), f"open asset {shown(name)}", "get"), name)
        if record is None:
            raise not_found(name)
        if record.inline is not None:
            return BytesReader(record.asset, record.inline)
        return MemcachedReader(self, record)

    def _put(self, name: str, data: bytes, content_type: str) -> Asset:
        what = f"put asset {shown(name)}"
        asset = Asset(name, len(data), content_etag(data), from_us(now_us()), content_type)
        # Listed first: a name listed whose record is missing is left out of names().
        self._index_update(name, add=True)
        record, chunks = self._record_for(asset, data, what)
        key = self._meta_key(name)
        replaced: bytes | None = None
        try:
            for _attempt in range(CAS_RETRIES):
                old, token = self._on(key, what, "gets")
                if old is None:
                    stored = self._on(key, what, "add", record)
                else:
                    stored = self._on(key, what, "cas", record, token)
                if stored:
                    replaced = old
                    break
            else:
                # Other puts kept winning: this one wins last, leaving the chunks it
                # replaced (if any) to memcached's LRU.
                if not self._on(key, what, "set", record):
                    raise StoreUnavailable(f"memcached {self.url}: {what} failed: not stored")
        except BaseException:
            self._forget_keys(chunks)
            raise
        self._forget_keys(self._old_chunks(replaced, name))
        return asset

    def _delete(self, name: str) -> None:
        what = f"delete asset {shown(name)}"
        key = self._meta_key(name)
        for _attempt in range(CAS_RETRIES):
            old, token = self._on(key, what, "gets")
            if _decode(old, name) is None:
                raise not_found(name)
            if self._on(key, what, "cas", b"", token, expire=-1):
                break
        else:
            self._on(key, what, "delete", noreply=False)
        self._forget_keys(self._old_chunks(old, name))
        try:
            self._index_update(name, add=False)
        except StoreUnavailable:
            pass  # deleted all the same: names() leaves out a name without a record

    def _names(self, prefix: str) -> Iterator[str]:
        what = "list the assets"
        buckets = [f"{self.prefix}i:{b}" for b in range(INDEX_BUCKETS)]
        listed: set[str] = set()
        for raw in self._get_many(buckets, what).values():
            listed.update(n for n in raw.decode("utf-8", "replace").split("\n") if n.startswith(prefix) and n)
        names = sorted(listed)
        if not names:
            return iter(())
        keys = {self._meta_key(n): n for n in names}
        present = self._existing(list(keys), what)
        return iter([n for k, n in keys.items() if k in present])

    def _existing(self, keys: Sequence[str], what: str) -> set[str]:
        """Which of `keys` memcached holds, without reading them: quiet meta gets
        (`mg KEY k q` answers only for a hit), many in one request."""
        present: set[str] = set()
        for ident, group in self._by_server(keys).items():
            server = self._server_of(ident)
            for start in range(0, len(group), 1000):
                command = "".join(f"mg {k} k q\r\n" for k in group[start : start + 1000]) + "mn"
                reply = self._call(server, what, "raw_command", command.encode("ascii"), end_tokens=b"MN\r\n")
                for line in reply.split(b"\r\n"):
                    if line.startswith(b"HD"):
                        for flag in line.split()[1:]:
                            if flag.startswith(b"k"):
                                present.add(flag[1:].decode("ascii"))
        return present

    def _index_update(self, name: str, *, add: bool) -> None:
        """Add `name` to its index bucket or remove it, with gets/cas."""
        key = self._index_key(name)
        what = "update the index of names"
        for _attempt in range(CAS_RETRIES):
            raw, token = self._on(key, what, "gets")
            names = set(raw.decode("utf-8", "replace").split("\n")) - {""} if raw is not None else set()
            if (name in names) == add:
                return
            if add:
                names.add(name)
            else:
                names.discard(name)
            value = "\n".join(sorted(names)).encode("utf-8")
            if raw is None:
                stored = self._on(key, what, "add", value)
            else:
                stored = self._on(key, what, "cas", value, token)
            if stored:
                return
        raise StoreUnavailable(f"memcached {self.url}: {what} failed: it kept changing ({CAS_RETRIES} attempts)")

    # --- the cache protocol (amfkit.assets.cache) ------------------------------------

    def cache_get(self, name: str) -> Asset | None:
        """The cached asset with its bytes; None for a miss (or a lease)."""
        asset = self._read(name, f"read cached asset {shown(name)}")
        if asset is not None:
            asset.store = self
        return asset

    def cache_lease(self, name: str, *, take_over: bool = False) -> str | None:
        """A lease on `name`'s entry: the right to fill it, lost to anything written
        there meanwhile. Only when there is no entry, unless `take_over` (which replaces
        whatever is there: the invalidation of a put)."""
        key = self._meta_key(name)
        what = f"lease cached asset {shown(name)}"
        token = secrets.token_hex(8)
        value = _LEASE + token.encode("ascii")
        ttl = int(LEASE_TTL)
        if not take_over:
            return token if self._on(key, what, "add", value, expire=ttl) else None
        old = self._on(key, what, "get")
        self._on(key, what, "set", value, expire=ttl)
        self._forget_keys(self._old_chunks(old, name))
        return token

    def cache_fill(self, asset: Asset, lease: str) -> bool:
        """Put a loaded asset in its entry if the lease still holds it; whether it did."""
        assert asset.data is not None
        key = self._meta_key(asset.name)
        what = f"fill cached asset {shown(asset.name)}"
        current, token = self._on(key, what, "gets")
        if current != _LEASE + lease.encode("ascii"):
            return False
        record, chunks = self._record_for(asset, asset.data, what)
        try:
            stored = bool(self._on(key, what, "cas", record, token))
        except BaseException:
            self._forget_keys(chunks)
            raise
        if not stored:
            self._forget_keys(chunks)
        return stored

    def cache_release(self, name: str, lease: str) -> None:
        """Give a lease back unused (so that another reader may fill the entry)."""
        key = self._meta_key(name)
        what = f"release cached asset {shown(name)}"
        current, token = self._on(key, what, "gets")
        if current == _LEASE + lease.encode("ascii"):
            self._on(key, what, "cas", b"", token, expire=-1)

    def cache_forget(self, name: str) -> None:
        """Drop the entry (and any lease on it: a fill in flight then fails)."""
        key = self._meta_key(name)
        what = f"forget cached asset {shown(name)}"
        old = self._on(key, what, "get")
        self._on(key, what, "delete", noreply=False)
        self._forget_keys(self._old_chunks(old, name))

    def cache_clear(self) -> None:
        """Drop every key under this store's prefix (memcached's LRU crawler lists the
        keys: memcached 1.4.31 or newer)."""
        what = "clear the cache"
        for server in self._servers:
            reply = self._call(server, what, "raw_command", b"lru_crawler metadump all", end_tokens=b"END\r\n")
            keys = []
            for line in reply.split(b"\n"):
                if line.startswith(b"key="):
                    key = unquote(line[4:].split(b" ", 1)[0].decode("ascii", "replace"))
                    if key.startswith(self.prefix):
                        keys.append(key)
            for start in range(0, len(keys), 1000):
                self._call(server, what, "delete_many", keys[start : start + 1000], noreply=False)

    # --- async, native (aiomcache): what the sync methods above do, command for command

    async def _aconnections(self, server: _Server) -> tuple[LoopConnections, Connections]:
        """This event loop's connections (to `server`): made, and the loop's closer
        started, on first use."""
        loop = asyncio.get_running_loop()
        entry = self._aloops.get(id(loop))
        if entry is None or entry.loop is not loop:
            entry = await self._aloop(loop)
        connections = entry.servers.get(server)
        if connections is None:
            assert self._aio is not None
            limit = max(2**16, self.chunk_size + 4096)  # a chunk's reply, buffered whole
            connections = entry.servers[server] = Connections(server.host, server.port, self.pool_size, limit, self._aio)
        return entry, connections

    async def _aloop(self, loop: asyncio.AbstractEventLoop) -> LoopConnections:
        with self._alock:
            if self._closed:
                raise StoreUnavailable(f"memcached {self.url}: the store is closed")
            entry = self._aloops.get(id(loop))
            if entry is not None and entry.loop is loop:
                return entry
            for key, old in list(self._aloops.items()):
                if old.loop.is_closed():
                    del self._aloops[key]  # shut down without closing its generators
            entry = LoopConnections(loop, self.timeout)
            self._aloops[id(loop)] = entry
        # An async generator started on the loop is closed by the loop's shutdown
        # (`shutdown_asyncgens`), still on the loop: it closes the connections there.
        entry.closer = self._acloser(entry)
        await entry.closer.__anext__()
        return entry

    async def _acloser(self, entry: LoopConnections) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._alock:
                if self._aloops.get(id(entry.loop)) is entry:
                    del self._aloops[id(entry.loop)]
            await entry.aclose()

    async def _acall(self, server: _Server, what: str, command: str, *args: Any) -> Any:
        """One aiomcache command on one server, within `timeout` seconds (connecting,
        waiting for a free connection, and the reply), its failures as StoreUnavailable."""
        if self._closed:
            raise StoreUnavailable(f"memcached {self.url}: {what}: the store is closed")
        aio = self._aio
        assert aio is not None
        entry, connections = await self._aconnections(server)
        task = asyncio.current_task()
        assert task is not None
        call = Call(entry.loop.time() + self.timeout, task)
        entry.watch(call)
        try:
            return await connections.run(aio.commands[command], args)
        except asyncio.CancelledError:
            if not call.expired or cancelled_by_others(call):
                raise  # cancelled by someone else (too)
            raise StoreUnavailable(f"memcached {self.url}: {what} failed: no answer from {server.name} in {self.timeout:g} s") from None
        except aio.errors as e:
            raise StoreUnavailable(f"memcached {self.url}: {what} failed: {error_text(e)}") from None
        finally:
            entry.calls.discard(call)

    async def _aon(self, key: str, what: str, command: str, *args: Any) -> Any:
        return await self._acall(self._server(key), what, command, key.encode("ascii"), *args)

    async def _aget_many(self, keys: Sequence[str], what: str) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for ident, group in self._by_server(keys).items():
            server = self._server_of(ident)
            for start in range(0, len(group), BATCH):
                batch = group[start : start + BATCH]
                values = await self._acall(server, what, "multi_get", *(k.encode("ascii") for k in batch))
                for key, value in zip(batch, values):
                    if value is not None:
                        found[key] = value
        return found

    async def _aforget_keys(self, keys: Sequence[str]) -> None:
        """Delete keys, best-effort (a server that fails is left alone: its LRU)."""
        for ident, group in self._by_server(keys).items():
            server = self._server_of(ident)
            try:
                for key in group:
                    await self._acall(server, "delete replaced chunks", "delete", key.encode("ascii"))
            except StoreUnavailable:
                pass  # left to memcached's LRU

    async def _awrite_chunks(self, data: bytes, what: str) -> tuple[str, int]:
        size = self.chunk_size
        count = -(-len(data) // size)
        version = secrets.token_hex(8)
        keys = self._chunk_keys(version, range(count))
        view = memoryview(data)
        try:
            for i, key in enumerate(keys):
                if not await self._aon(key, what, "set", bytes(view[i * size : (i + 1) * size])):
                    raise StoreUnavailable(f"memcached {self.url}: {what} failed: a chunk was not stored")
        except BaseException:
            await self._aforget_keys(keys)
            raise
        return version, count

    async def _arecord_for(self, asset: Asset, data: bytes, what: str) -> tuple[bytes, list[str]]:
        if len(data) <= self.chunk_size:
            return _encode(asset, "", 0, self.chunk_size, data), []
        version, count = await self._awrite_chunks(data, what)
        return _encode(asset, version, count, self.chunk_size, None), self._chunk_keys(version, range(count))

    async def _aread_chunks(self, record: _Record, first: int, last: int, what: str) -> list[bytes] | None:
        keys = self._chunk_keys(record.version, range(first, last + 1))
        found = await self._aget_many(keys, what)
        if len(found) != len(keys):
            return None
        return [found[k] for k in keys]

    async def _aread(self, name: str, what: str) -> Asset | None:
        key = self._meta_key(name)
        for _attempt in range(8):
            raw = await self._aon(key, what, "get")
            record = _decode(raw, name)
            if record is None:
                return None
            if record.inline is not None:
                return record.asset.with_data(record.inline)
            chunks = await self._aread_chunks(record, 0, record.chunks - 1, what)
            if chunks is not None:
                data = b"".join(chunks)
                if len(data) == record.asset.size:
                    return record.asset.with_data(data)
            again, token = await self._aon(key, what, "gets")
            if again != raw:
                continue  # replaced while being read: read the new version
            if token is not None:
                await self._aon(key, what, "cas", b"", token, _EXPIRED)
            await self._aforget_keys(self._old_chunks(raw, name))
            return None
        raise AssetChanged(f"asset {shown(name)} kept changing while being read")

    async def aload(self, name: str) -> Asset:
        if self._aio is None:
            return await super().aload(name)
        name = check_name(name)
        asset = await self._aread(name, f"read asset {shown(name)}")
        if asset is None:
            raise not_found(name)
        asset.store = self
        return asset

    async def aget(self, name: str) -> bytes:
        data = (await self.aload(name)).data
        assert data is not None
        return data

    async def astat(self, name: str) -> Asset:
        if self._aio is None:
            return await super().astat(name)
        name = check_name(name)
        record = _decode(await self._aon(self._meta_key(name), f"stat asset {shown(name)}", "get"), name)
        if record is None:
            raise not_found(name)
        record.asset.store = self
        return record.asset

    async def aopen_reader(self, name: str, *, preload: int = 0) -> AssetReader:
        if self._aio is None:
            return await super().aopen_reader(name, preload=preload)
        name = check_name(name)
        what = f"open asset {shown(name)}"
        record = _decode(await self._aon(self._meta_key(name), what, "get"), name)
        if record is None:
            raise not_found(name)
        record.asset.store = self
        if record.inline is not None:
            return BytesReader(record.asset, record.inline)  # read with its record
        if record.asset.size > preload:
            return MemcachedReader(self, record)
        chunks = await self._aread_chunks(record, 0, record.chunks - 1, what)
        data = b"".join(chunks) if chunks is not None else b""
        if len(data) != record.asset.size:
            raise AssetChanged(f"asset {shown(name)} was replaced, deleted or evicted while being read")
        return BytesReader(record.asset, data)

    async def aread(self, reader: AssetReader, offset: int, size: int) -> bytes:
        if isinstance(reader, BytesReader):
            return reader.read(offset, size)
        if self._aio is None or not isinstance(reader, MemcachedReader) or reader._store is not self:
            return await super().aread(reader, offset, size)
        span = reader._span(offset, size)
        if span is None:
            return b""
        first, last, end = span
        chunks = await self._aread_chunks(reader._record, first, last, f"read asset {shown(reader.asset.name)}")
        return reader._cut(chunks, first, offset, end)

    async def acache_get(self, name: str) -> Asset | None:
        if self._aio is None:
            return await self._in_thread(lambda: self.cache_get(name))
        asset = await self._aread(name, f"read cached asset {shown(name)}")
        if asset is not None:
            asset.store = self
        return asset

    async def acache_lease(self, name: str, *, take_over: bool = False) -> str | None:
        if self._aio is None:
            return await self._in_thread(lambda: self.cache_lease(name, take_over=take_over))
        key = self._meta_key(name)
        what = f"lease cached asset {shown(name)}"
        token = secrets.token_hex(8)
        value = _LEASE + token.encode("ascii")
        ttl = int(LEASE_TTL)
        if not take_over:
            return token if await self._aon(key, what, "add", value, ttl) else None
        old = await self._aon(key, what, "get")
        await self._aon(key, what, "set", value, ttl)
        await self._aforget_keys(self._old_chunks(old, name))
        return token

    async def acache_fill(self, asset: Asset, lease: str) -> bool:
        if self._aio is None:
            return await self._in_thread(lambda: self.cache_fill(asset, lease))
        assert asset.data is not None
        key = self._meta_key(asset.name)
        what = f"fill cached asset {shown(asset.name)}"
        current, token = await self._aon(key, what, "gets")
        if current != _LEASE + lease.encode("ascii"):
            return False
        record, chunks = await self._arecord_for(asset, asset.data, what)
        try:
            stored = bool(await self._aon(key, what, "cas", record, token))
        except BaseException:
            await self._aforget_keys(chunks)
            raise
        if not stored:
            await self._aforget_keys(chunks)
        return stored

    async def acache_release(self, name: str, lease: str) -> None:
        if self._aio is None:
            return await self._in_thread(lambda: self.cache_release(name, lease))
        key = self._meta_key(name)
        what = f"release cached asset {shown(name)}"
        current, token = await self._aon(key, what, "gets")
        if current == _LEASE + lease.encode("ascii"):
            await self._aon(key, what, "cas", b"", token, _EXPIRED)

    async def acache_forget(self, name: str) -> None:
        if self._aio is None:
            return await self._in_thread(lambda: self.cache_forget(name))
        key = self._meta_key(name)
        what = f"forget cached asset {shown(name)}"
        old = await self._aon(key, what, "get")
        await self._aon(key, what, "delete")
        await self._aforget_keys(self._old_chunks(old, name))

    async def acache_clear(self) -> None:
        # Deliberately in a thread: the LRU crawler's dump (aiomcache has no raw command).
        await self._in_thread(self.cache_clear)

    def __repr__(self) -> str:
        return f"MemcachedStore({self.url!r}, prefix={self.prefix!r})"


class MemcachedReader(AssetReader):
    """Ranged reads of one version of a large asset: the chunks a read needs, fetched
    then; AssetChanged once one is gone (replaced, deleted or evicted)."""

    def __init__(self, store: MemcachedStore, record: _Record) -> None:
        self.asset = record.asset
        self._store = store
        self._record = record

    def read(self, offset: int, size: int) -> bytes:
        span = self._span(offset, size)
        if span is None:
            return b""
        first, last, end = span
        chunks = self._store._read_chunks(self._record, first, last, f"read asset {shown(self.asset.name)}")
        return self._cut(chunks, first, offset, end)

    def _span(self, offset: int, size: int) -> tuple[int, int, int] | None:
        """(the first chunk, the last chunk, the end) of a read; None if it reads nothing."""
        if offset < 0 or size < 0:
            raise ValueError("offset and size are 0 or more")
        end = min(offset + size, self.asset.size)
        if offset >= end:
            return None
        step = self._record.chunk_size
        return offset // step, (end - 1) // step, end

    def _cut(self, chunks: list[bytes] | None, first: int, offset: int, end: int) -> bytes:
        if chunks is None:
            raise AssetChanged(f"asset {shown(self.asset.name)} was replaced, deleted or evicted while being read")
        data = b"".join(chunks)
        base = first * self._record.chunk_size
        return data[offset - base : end - base]
