"""The key-value backends beyond the shared interface (test_store.py): memcached's chunks
and what eviction does to them, a server down, hung or restarted, and Redis's native
async methods, against the real servers of the session fixtures."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time
from collections.abc import Iterator

import pytest
from pymemcache.client.base import Client

from amfkit.assets import AssetChanged, AssetNotFound, AssetStore, StoreUnavailable
from amfkit.assets.memcached import CHUNK_SIZE, MemcachedStore, _decode
from amfkit.assets.redis import RedisStore


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
