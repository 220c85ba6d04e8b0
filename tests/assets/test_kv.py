"""The key-value backends beyond the shared interface (test_store.py): memcached's chunks
and what eviction does to them, a server down, hung or restarted, and Redis's native
async methods, against the real servers of the session fixtures."""

from __future__ import annotations

import asyncio
import gc
import os
import secrets
import socket
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from pymemcache.client.base import Client

from amfkit.assets import Asset, AssetChanged, AssetNotFound, AssetStore, StoreUnavailable
from amfkit.assets.memcached import CHUNK_SIZE, MemcachedReader, MemcachedStore, _decode
from amfkit.assets.redis import RedisStore
from amfkit.assets.store import BytesReader, content_etag


def _tag() -> str:
    return f"t{secrets.token_hex(4)}:"


def _closed_port() -> int:
    """A local port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def mc(memcached_server) -> Iterator[MemcachedStore]:
    store = MemcachedStore(memcached_server.url, prefix=_tag(), timeout=0.5)
    yield store
    store.close()


@pytest.fixture
def raw(memcached_server) -> Iterator[Client]:
    """A plain client, to look at and break the store's keys behind its back."""
    client = Client((memcached_server.host, memcached_server.port), timeout=2, default_noreply=False)
    yield client
    client.close()


def _chunk_keys(store: MemcachedStore, raw: Client, name: str) -> list[str]:
    record = _decode(raw.get(store._meta_key(name)), name)
    assert record is not None
    return store._chunk_keys(record.version, range(record.chunks))


# --- memcached ---------------------------------------------------------------------


def test_memcached_keeps_values_over_one_megabyte_in_chunks(mc: MemcachedStore, raw: Client) -> None:
    data = os.urandom(2 * 1024 * 1024 + 100)
    asset = mc.put("big.bin", data)
    keys = _chunk_keys(mc, raw, "big.bin")
    assert len(keys) == 5 and all(raw.get(k) is not None for k in keys)
    assert mc.get("big.bin") == data and mc.stat("big.bin") == asset
    with mc.open_reader("big.bin") as reader:
        assert reader.read(CHUNK_SIZE - 3, 6) == data[CHUNK_SIZE - 3 : CHUNK_SIZE + 3]  # across two chunks
    # A small one is inline: its record is all there is.
    mc.put("small.txt", b"x" * 1000)
    assert _decode(raw.get(mc._meta_key("small.txt")), "small.txt").inline == b"x" * 1000  # type: ignore[union-attr]
    # A put replacing a large asset deletes the chunks it replaced.
    mc.put("big.bin", b"now small")
    assert mc.get("big.bin") == b"now small"
    assert all(raw.get(k) is None for k in keys)


def test_a_missing_chunk_makes_the_asset_absent(mc: MemcachedStore, raw: Client) -> None:
    data = os.urandom(CHUNK_SIZE * 2 + 1)
    mc.put("evicted.bin", data)
    mc.put("kept.bin", b"kept")
    reader = mc.open_reader("evicted.bin")
    assert reader.read(0, 4) == data[:4]
    raw.delete(_chunk_keys(mc, raw, "evicted.bin")[1])  # as an eviction would
    with pytest.raises(AssetChanged):
        reader.read(CHUNK_SIZE, 10)
    reader.close()
    with pytest.raises(AssetNotFound):
        mc.get("evicted.bin")
    # Its record was dropped: absent everywhere now, and listed no more.
    assert "evicted.bin" not in mc
    assert list(mc) == ["kept.bin"]
    mc.put("evicted.bin", b"again")
    assert mc.get("evicted.bin") == b"again"


def test_names_leave_out_evicted_records(mc: MemcachedStore, raw: Client) -> None:
    for name in ("a", "b", "c/d"):
        mc.put(name, name.encode())
    raw.delete(mc._meta_key("b"))
    assert list(mc) == ["a", "c/d"]
    assert list(mc.names("c/")) == ["c/d"]


def test_memcached_on_several_servers(memcached_server) -> None:
    # The same server under two names: keys spread over the two "servers".
    other = f"localhost:{memcached_server.port}"
    store = AssetStore.open(f"{memcached_server.url},{other}", prefix=_tag())
    try:
        assert isinstance(store, MemcachedStore) and len(store._servers) == 2
        spread = {store._server(store._meta_key(f"n{i}")).name for i in range(20)}
        assert len(spread) == 2
        big = os.urandom(CHUNK_SIZE * 3)
        store.put("big", big)
        for i in range(20):
            store.put(f"n{i}", bytes([i]))
        assert store.get("big") == big
        assert list(store) == sorted(["big"] + [f"n{i}" for i in range(20)])
    finally:
        store.close()


def test_memcached_urls() -> None:
    with pytest.raises(ValueError, match="no user or password") as info:
        AssetStore.open("memcached://admin:hunter2@127.0.0.1:11211")
    assert "hunter2" not in str(info.value)
    with pytest.raises(ValueError, match="key prefix"):
        MemcachedStore("memcached://127.0.0.1", prefix="has space")
    with pytest.raises(ValueError, match="unknown memcached:// option"):
        AssetStore.open("memcached://127.0.0.1?colour=red")
    store = AssetStore.open("memcached://127.0.0.1?prefix=p:&timeout=0.5")
    assert isinstance(store, MemcachedStore) and store.prefix == "p:" and store.timeout == 0.5
    assert store._servers[0].name == "127.0.0.1:11211" and store.volatile
    store.close()


def test_memcached_down_or_hung_is_store_unavailable_soon(memcached_server) -> None:
    down = MemcachedStore(f"memcached://127.0.0.1:{_closed_port()}", timeout=0.5)
    started = time.monotonic()
    for call in (down.get, down.stat, down.delete, lambda n: down.put(n, b"1"), lambda n: list(down.names(n))):
        with pytest.raises(StoreUnavailable, match="memcached memcached://127.0.0.1:"):
            call("a")
    assert time.monotonic() - started < 2
    down.close()
    hung = MemcachedStore(memcached_server.url, prefix=_tag(), timeout=0.3)
    hung.put("a", b"1")
    memcached_server.pause()
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="failed"):
            hung.get("a")
        assert time.monotonic() - started < 1.5
    finally:
        memcached_server.resume()
    assert hung.get("a") == b"1"  # the broken connection was replaced
    hung.close()


# --- memcached's native async path (aiomcache) -------------------------------------


def _asset(name: str, data: bytes) -> Asset:
    """An asset with its bytes, as a cache is filled with (read from a durable store)."""
    return Asset(name, len(data), content_etag(data), datetime.now(timezone.utc), "application/octet-stream", data)


def test_memcached_async_and_sync_interoperate_on_any_loop(mc: MemcachedStore, raw: Client) -> None:
    big = os.urandom(CHUNK_SIZE * 2 + 100)
    mc.put("sync/small.txt", b"small")
    mc.put("sync/big.bin", big)

    async def main(i: int) -> None:
        # What the sync path put, read by the async one.
        assert await mc.aget("sync/small.txt") == b"small"
        assert await mc.aget("sync/big.bin") == big
        assert await mc.astat("sync/big.bin") == mc.stat("sync/big.bin")
        loaded = await mc.aload("sync/small.txt")
        assert loaded == mc.stat("sync/small.txt") and loaded.data == b"small" and loaded.store is mc
        reader = await mc.aopen_reader("sync/small.txt", preload=65536)
        assert isinstance(reader, BytesReader) and reader.asset.store is mc and await mc.aread(reader, 1, 3) == b"mal"
        with pytest.raises(AssetNotFound):
            await mc.aget("sync/absent")
        with pytest.raises(AssetNotFound):
            await mc.aopen_reader("sync/absent", preload=65536)
        # What the async path fills (the cache's records are the store's), read by the
        # sync one: small (inline) and large (in chunks).
        for name, data in ((f"async{i}/small.txt", b"filled"), (f"async{i}/big.bin", big[::-1])):
            asset = _asset(name, data)
            lease = await mc.acache_lease(name)
            assert lease is not None and await mc.acache_fill(asset, lease)
            assert mc.get(name) == data and mc.stat(name) == asset
            hit = mc.cache_get(name)
            assert hit is not None and hit.data == data
            hit = await mc.acache_get(name)
            assert hit is not None and hit.data == data and hit == asset and hit.store is mc
        keys = _chunk_keys(mc, raw, f"async{i}/big.bin")
        assert len(keys) == 3 and all(raw.get(k) is not None for k in keys)
        await mc.acache_forget(f"async{i}/big.bin")  # its record and its chunks
        assert mc.cache_get(f"async{i}/big.bin") is None and all(raw.get(k) is None for k in keys)
        assert len(mc._aloops) == 1

    # Two loops in a row: each asyncio.run closes its loop's connections as it ends.
    asyncio.run(main(0))
    assert mc._aloops == {}
    asyncio.run(main(1))
    assert mc._aloops == {}
    assert mc.get("async1/small.txt") == b"filled"
    assert mc._executor is None  # no thread pool was ever made
    gc.collect()  # an unclosed connection would warn (an error, here)


def test_memcached_async_reads_a_large_asset_in_chunks(mc: MemcachedStore, raw: Client, memcached_server) -> None:
    data = os.urandom(CHUNK_SIZE * 3 + 7)
    mc.put("big.bin", data)
    small_chunks = MemcachedStore(memcached_server.url, prefix=_tag(), chunk_size=1024)

    async def main() -> None:
        reader = await mc.aopen_reader("big.bin", preload=65536)  # larger: read as asked
        assert isinstance(reader, MemcachedReader) and reader.asset == mc.stat("big.bin") and reader.asset.store is mc
        assert await mc.aread(reader, CHUNK_SIZE - 3, 6) == data[CHUNK_SIZE - 3 : CHUNK_SIZE + 3]  # across two chunks
        assert await mc.aread(reader, 0, len(data) + 10) == data
        assert await mc.aread(reader, len(data), 5) == b""
        whole = await mc.aopen_reader("big.bin", preload=len(data))
        assert isinstance(whole, BytesReader) and whole.read(0, len(data)) == data
        # A chunk gone (evicted): the reader fails, and so does a preload...
        raw.delete(_chunk_keys(mc, raw, "big.bin")[2])
        with pytest.raises(AssetChanged):
            await mc.aread(reader, 2 * CHUNK_SIZE, 10)
        assert await mc.aread(reader, 0, 4) == data[:4]  # its other chunks are there
        with pytest.raises(AssetChanged):
            await mc.aopen_reader("big.bin", preload=len(data))
        # ...and a load drops the record: absent everywhere.
        with pytest.raises(AssetNotFound):
            await mc.aload("big.bin")
        with pytest.raises(AssetNotFound):
            await mc.astat("big.bin")
        # A preload of several chunks (chunks smaller than the preload).
        small_chunks.put("three.bin", data[:3000])
        reader = await small_chunks.aopen_reader("three.bin", preload=4096)
        assert isinstance(reader, BytesReader) and reader.read(0, 3000) == data[:3000]
        reader = await small_chunks.aopen_reader("three.bin")
        assert isinstance(reader, MemcachedReader) and await small_chunks.aread(reader, 1000, 100) == data[1000:1100]
        # A reader of the sync path's, read by the async one, and the other way round.
        reader = small_chunks.open_reader("three.bin")
        assert await small_chunks.aread(reader, 2040, 20) == data[2040:2060]
        areader = await small_chunks.aopen_reader("three.bin")
        assert areader.read(1020, 10) == data[1020:1030]

    try:
        asyncio.run(main())
    finally:
        small_chunks.close()
    assert "big.bin" not in mc and list(mc) == []
    assert mc._executor is None and small_chunks._executor is None


def test_memcached_async_lease_protocol_against_sync(mc: MemcachedStore, raw: Client) -> None:
    data = b"cached bytes"
    small = _asset("n", data)
    other = "0" * 16  # nobody's lease

    async def main() -> None:
        # A lease taken by the async path holds against both, and reads as a miss.
        lease = await mc.acache_lease("n")
        assert lease is not None
        assert mc.cache_lease("n") is None and await mc.acache_lease("n") is None
        assert mc.cache_get("n") is None and await mc.acache_get("n") is None
        # Another token neither fills nor releases it.
        assert not mc.cache_fill(small, other) and not await mc.acache_fill(small, other)
        mc.cache_release("n", other)
        await mc.acache_release("n", other)
        assert mc.cache_lease("n") is None
        # Released by the sync path: taken again by the async one.
        mc.cache_release("n", lease)
        lease = await mc.acache_lease("n")
        assert lease is not None
        # Taken over (a put's invalidation) by the sync path: the async fill fails.
        newer = mc.cache_lease("n", take_over=True)
        assert newer is not None and not await mc.acache_fill(small, lease)
        assert mc.cache_get("n") is None
        # Released by the async path (its expired cas: what memcached makes of the sync
        # path's -1): the entry is gone, and the sync path may lease it.
        await mc.acache_release("n", newer)
        assert raw.get(mc._meta_key("n")) is None
        lease = mc.cache_lease("n")
        assert lease is not None and await mc.acache_fill(small, lease)
        hit = mc.cache_get("n")
        assert hit is not None and hit.data == data
        assert not mc.cache_fill(small, lease) and not await mc.acache_fill(small, lease)  # spent

        # A large entry filled by the sync path with the async path's lease...
        big = _asset("b", os.urandom(CHUNK_SIZE + 1))
        lease = await mc.acache_lease("b")
        assert lease is not None and mc.cache_fill(big, lease)
        keys = _chunk_keys(mc, raw, "b")
        hit = await mc.acache_get("b")
        assert hit is not None and hit.data == big.data
        # ...taken over by the async path: its chunks are deleted; filled by the sync
        # path with that lease.
        taken = await mc.acache_lease("b", take_over=True)
        assert taken is not None and all(raw.get(k) is None for k in keys)
        assert await mc.acache_get("b") is None and mc.cache_lease("b") is None
        assert mc.cache_fill(big, taken)
        keys = _chunk_keys(mc, raw, "b")
        # Forgotten by the async path: gone, chunks and all; a fill in flight fails.
        await mc.acache_forget("b")
        assert raw.get(mc._meta_key("b")) is None and all(raw.get(k) is None for k in keys)
        lease = mc.cache_lease("b")
        assert lease is not None
        await mc.acache_forget("b")
        assert not await mc.acache_fill(big, lease) and mc.cache_get("b") is None
        # An entry evicted in part reads as a miss from the async path, and is dropped.
        lease = await mc.acache_lease("b")
        assert lease is not None and await mc.acache_fill(big, lease)
        raw.delete(_chunk_keys(mc, raw, "b")[1])
        assert await mc.acache_get("b") is None and raw.get(mc._meta_key("b")) is None
        assert mc.cache_lease("b") is not None

    asyncio.run(main())
    assert mc._executor is None


def test_memcached_async_on_several_servers(memcached_server) -> None:
    other = f"localhost:{memcached_server.port}"
    store = MemcachedStore(f"{memcached_server.url},{other}", prefix=_tag())
    big = os.urandom(CHUNK_SIZE * 3)
    names = [f"n{i}" for i in range(20)]
    for name in names:
        store.put(name, name.encode())
    store.put("big", big)

    async def main() -> None:
        assert [await store.aget(n) for n in names] == [n.encode() for n in names]
        assert await store.aget("big") == big
        for name in names:
            lease = await store.acache_lease(f"c/{name}")
            assert lease is not None and await store.acache_fill(_asset(f"c/{name}", big[:100] + name.encode()), lease)
        (entry,) = store._aloops.values()
        assert {s.name for s in entry.servers} == {s.name for s in store._servers}  # both used

    try:
        asyncio.run(main())
        assert [store.get(f"c/{n}") for n in names] == [big[:100] + n.encode() for n in names]
        assert store._executor is None
    finally:
        store.close()


def test_memcached_async_down_or_hung_is_store_unavailable_soon(memcached_server) -> None:
    down = MemcachedStore(f"memcached://127.0.0.1:{_closed_port()}", timeout=0.5)

    async def on_down() -> None:
        started = time.monotonic()
        for call in (
            down.aget,
            down.astat,
            down.aload,
            lambda n: down.aopen_reader(n, preload=65536),
            down.acache_get,
            down.acache_lease,
            lambda n: down.acache_release(n, "0" * 16),
            down.acache_forget,
        ):
            with pytest.raises(StoreUnavailable, match="memcached memcached://127.0.0.1:"):
                await call("a")
        assert time.monotonic() - started < 2

    asyncio.run(on_down())
    assert down._executor is None
    down.close()

    hung = MemcachedStore(memcached_server.url, prefix=_tag(), timeout=0.3)
    hung.put("a", b"1")
    hung.put("b", b"2")

    async def around_a_pause() -> None:
        assert await hung.aget("a") == b"1"  # a connection, that the pause leaves hanging
        memcached_server.pause()
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="no answer from"):
                await hung.aget("a")
            with pytest.raises(StoreUnavailable, match="no answer from"):
                await hung.acache_get("b")
            assert time.monotonic() - started < 1.5
            if sys.version_info >= (3, 11):
                task = asyncio.current_task()
                assert task is not None and task.cancelling() == 0  # the timeouts' own cancellations
            # Cancelled from outside, a command stays cancelled (not a StoreUnavailable).
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(hung.aget("a"), 0.05)
        finally:
            memcached_server.resume()
        # The replies to the commands cut short come now, on connections that were
        # closed: never read as another command's.
        assert await hung.aget("b") == b"2"
        assert await hung.aget("a") == b"1"
        assert (await hung.astat("b")).size == 1

    try:
        asyncio.run(around_a_pause())
        assert hung.get("a") == b"1" and hung._executor is None
    finally:
        hung.close()


def test_memcached_async_connections_and_closing(memcached_server) -> None:
    store = MemcachedStore(memcached_server.url, prefix=_tag(), pool_size=2)
    for i in range(5):
        store.put(f"n{i}", bytes([i]) * 1000)

    async def main() -> None:
        got = await asyncio.gather(*(store.aget(f"n{i % 5}") for i in range(40)))
        assert got == [bytes([i % 5]) * 1000 for i in range(40)]
        entry = store._aloops[id(asyncio.get_running_loop())]
        (connections,) = entry.servers.values()
        assert 1 <= len(connections.open) <= 2  # pool_size at most
        await store.aclose()
        assert store._aloops == {} and connections.open == set()
        with pytest.raises(StoreUnavailable, match="closed"):
            await store.aget("n0")
        with pytest.raises(StoreUnavailable, match="closed"):
            await store.acache_get("n0")

    asyncio.run(main())

    # close() (sync) on the loop's thread, while the loop runs: its connections are
    # closed on it.
    other = MemcachedStore(memcached_server.url, prefix=_tag())
    other.put("x", b"x")

    async def close_inside() -> None:
        assert await other.aget("x") == b"x"
        other.close()
        with pytest.raises(StoreUnavailable, match="closed"):
            await other.aget("x")

    asyncio.run(close_inside())
    assert other._aloops == {}
    gc.collect()


def test_memcached_async_without_aiomcache_uses_threads(memcached_server) -> None:
    store = MemcachedStore(memcached_server.url, prefix=_tag())
    store._aio = None  # as when aiomcache is not installed
    store.put("x", b"xyz")

    async def main() -> None:
        assert await store.aget("x") == b"xyz"
        reader = await store.aopen_reader("x", preload=10)
        assert reader.read(0, 3) == b"xyz"
        lease = await store.acache_lease("y")
        assert lease is not None and await store.acache_fill(_asset("y", b"why"), lease)
        hit = await store.acache_get("y")
        assert hit is not None and hit.data == b"why"

    try:
        asyncio.run(main())
        assert store._executor is not None and store._aloops == {}
    finally:
        store.close()


# --- Redis -------------------------------------------------------------------------


@pytest.fixture
def rd(redis_server) -> Iterator[RedisStore]:
    store = RedisStore(redis_server.url, prefix=_tag(), timeout=2.0)
    yield store
    store.close()


def test_redis_down_is_store_unavailable_soon_without_the_password() -> None:
    store = AssetStore.open(f"redis://amfkit:s3cret-pw@127.0.0.1:{_closed_port()}/0")
    assert "s3cret" not in repr(store) and "amfkit@" not in store.url
    started = time.monotonic()
    for call in (store.get, store.stat, store.delete, lambda n: store.put(n, b"1"), lambda n: list(store.names(n))):
        with pytest.raises(StoreUnavailable, match="redis redis://127.0.0.1:") as info:
            call("a")
        assert "s3cret" not in str(info.value)

    async def main() -> None:
        with pytest.raises(StoreUnavailable) as info:
            await store.aget("a")
        assert "s3cret" not in str(info.value)

    asyncio.run(main())
    assert time.monotonic() - started < 2
    store.close()


def test_redis_restart_then_recovery(rd: RedisStore, redis_server) -> None:
    rd.put("kept.bin", b"kept")

    async def around_a_restart() -> None:
        assert await rd.aget("kept.bin") == b"kept"
        redis_server.restart()  # the loop's pooled connections are now dead
        assert await rd.aget("kept.bin") == b"kept"
        await rd.aput("async.bin", b"after")

    rd.get("kept.bin")  # a pooled connection, which the restart kills
    asyncio.run(around_a_restart())
    assert rd.get("kept.bin") == b"kept" and rd.get("async.bin") == b"after"
    redis_server.restart()
    assert list(rd) == ["async.bin", "kept.bin"]


def test_redis_async_methods_are_native_on_any_loop(rd: RedisStore) -> None:
    async def main(i: int) -> None:
        await rd.aput(f"a{i}", b"x" * 10)
        assert await rd.aget(f"a{i}") == b"x" * 10
        assert (await rd.astat(f"a{i}")).size == 10
        reader = await rd.aopen_reader(f"a{i}")
        assert await rd.aread(reader, 2, 3) == b"xxx"
        assert await rd.anames("a") == [f"a{j}" for j in range(i + 1)]
        assert len(rd._aclients) == 1

    # Two loops in a row (each asyncio.run closes its loop's client as it ends), then
    # the sync methods: no thread pool was ever made.
    asyncio.run(main(0))
    assert rd._aclients == {}
    asyncio.run(main(1))
    assert rd.get("a1") == b"x" * 10
    assert rd._executor is None


def test_redis_reader_fails_once_the_version_changed(rd: RedisStore) -> None:
    rd.put("v", b"1234567890")
    reader = rd.open_reader("v")
    assert reader.read(0, 4) == b"1234"
    rd.put("v", b"1234567890")  # the same bytes: the same ETag, so the reader reads on
    assert reader.read(4, 4) == b"5678"
    rd.put("v", b"abcdefghij")
    with pytest.raises(AssetChanged):
        reader.read(8, 2)
    reader2 = rd.open_reader("v")
    rd.delete("v")
    with pytest.raises(AssetChanged):
        reader2.read(0, 1)


def test_redis_keys_and_a_closed_store(rd: RedisStore, redis_server) -> None:
    import redis

    rd.put("dir/x.txt", b"x")
    client = redis.Redis.from_url(redis_server.url)
    try:
        keys = sorted(client.scan_iter(match=rd.prefix + "*"))
        prefix = rd.prefix.encode()
        assert keys == [prefix + b"d:dir/x.txt", prefix + b"m:dir/x.txt", prefix + b"names"]
    finally:
        client.close()
    rd.close()
    with pytest.raises(StoreUnavailable, match="closed"):
        rd.get("dir/x.txt")
