"""A cache in front of a durable store (amfkit.assets.cache): hits come from the cache,
nothing stale is read after a put or a delete through the store (the races included),
and a cache that is down, hung or back again is never an error, with both memcached and
Redis as the cache and a folder as the durable store."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from amfkit.assets import AssetNotFound, AssetStore, StoreUnavailable
from amfkit.assets.cache import CachedStore
from amfkit.assets.filesystem import FileStore
from amfkit.assets.memcached import CHUNK_SIZE, MemcachedStore, _decode
from amfkit.assets.redis import RedisStore

CACHES = ["memcached", "redis"]


class HookedFileStore(FileStore):
    """A folder store that runs `hooks[step]` once, right after a load or put of its own:
    what another client does at that moment, for the races."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, fsync=False)
        self.hooks: dict[str, Callable[[], Any]] = {}

    def _run(self, step: str) -> None:
        hook = self.hooks.pop(step, None)
        if hook is not None:
            hook()

    def _load(self, name: str) -> Any:
        asset = super()._load(name)
        self._run("load")
        return asset

    def _put(self, name: str, data: bytes, content_type: str) -> Any:
        asset = super()._put(name, data, content_type)
        self._run("put")
        return asset


def open_cache(kind: str, request: pytest.FixtureRequest, prefix: str, timeout: float = 2.0) -> AssetStore:
    if kind == "memcached":
        return MemcachedStore(request.getfixturevalue("memcached_server").url, prefix=prefix, timeout=timeout)
    return RedisStore(request.getfixturevalue("redis_server").url, prefix=prefix, timeout=timeout)


@pytest.fixture
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., CachedStore]]:
    """`make(kind, **options)`: a CachedStore over a fresh folder with a fresh cache."""
    made: list[CachedStore] = []

    def build(kind: str, *, timeout: float = 2.0, **options: Any) -> CachedStore:
        root = tmp_path / f"assets{len(made)}"
        store = CachedStore(HookedFileStore(root), open_cache(kind, request, f"t{secrets.token_hex(4)}:", timeout), retry_after=0, **options)
        made.append(store)
        return store

    yield build
    for store in made:
        store.close()


def behind(store: CachedStore, name: str, data: bytes) -> None:
    """Change the durable store behind the cache's back."""
    store.durable.put(name, data)


@pytest.mark.parametrize("kind", CACHES)
def test_a_hit_comes_from_the_cache(make, kind: str) -> None:
    store = make(kind)
    first = store.put("a.txt", b"one")
    assert store.cache.cache_get("a.txt") == first  # a put fills the cache
    behind(store, "a.txt", b"behind")
    assert store.get("a.txt") == b"one"
    assert store.load("a.txt").store is store and store.stat("a.txt") == first
    with store.open_reader("a.txt") as reader:
        assert reader.read(0, 10) == b"one"
    second = store.put("a.txt", b"two")
    assert store.get("a.txt") == b"two" and store.stat("a.txt") == second
    # A miss fills the cache: the next read is a hit.
    behind(store, "b.txt", b"b1")
    assert store.get("b.txt") == b"b1"
    behind(store, "b.txt", b"b2")
    assert store.get("b.txt") == b"b1"
    # names() come from the durable store.
    assert list(store) == ["a.txt", "b.txt"] and len(store) == 2


@pytest.mark.parametrize("kind", CACHES)
def test_stat_and_readers_fill_the_cache_and_large_assets_are_not_cached(make, kind: str) -> None:
    store = make(kind, max_cached=1000)
    behind(store, "s.txt", b"stat")
    assert store.stat("s.txt").size == 4
    behind(store, "r.txt", b"read")
    with store.open_reader("r.txt") as reader:
        assert reader.read(1, 2) == b"ea"
    behind(store, "s.txt", b"STAT")
    behind(store, "r.txt", b"READ")
    assert store.get("s.txt") == b"stat" and store.get("r.txt") == b"read"
    big = os.urandom(1001)
    store.put("big.bin", big)
    assert store.cache.cache_get("big.bin") is None
    assert store.get("big.bin") == big
    other = os.urandom(1001)
    behind(store, "big.bin", other)
    assert store.get("big.bin") == other
    with store.open_reader("big.bin") as reader:
        assert reader.fileno() is not None  # the durable store's own reader


@pytest.mark.parametrize("kind", CACHES)
def test_no_stale_read_after_a_delete(make, kind: str) -> None:
    store = make(kind)
    store.put("d.txt", b"doomed")
    assert store.get("d.txt") == b"doomed"
    store.delete("d.txt")
    with pytest.raises(AssetNotFound):
        store.get("d.txt")
    assert "d.txt" not in store
    behind(store, "d.txt", b"back")
    assert store.get("d.txt") == b"back"
    # Deleting what the durable store no longer has still drops the cached entry.
    store.durable.delete("d.txt")
    with pytest.raises(AssetNotFound):
        store.delete("d.txt")
    with pytest.raises(AssetNotFound):
        store.get("d.txt")


@pytest.mark.parametrize("kind", CACHES)
@pytest.mark.parametrize("write", ["put", "delete"])
def test_a_reader_that_read_the_old_version_before_a_write_does_not_fill_it_after(make, kind: str, write: str) -> None:
    store = make(kind)
    store.durable.put("race.txt", b"old")
    # The reader misses, reads "old" from the durable store; right then another client
    # writes through the store; then the reader fills the cache.
    store.durable.hooks["load"] = (lambda: store.put("race.txt", b"new")) if write == "put" else (lambda: store.delete("race.txt"))
    assert store.get("race.txt") == b"old"  # concurrent with the write: either is right
    for _ in range(2):
        if write == "put":
            assert store.get("race.txt") == b"new"
        else:
            with pytest.raises(AssetNotFound):
                store.get("race.txt")


@pytest.mark.parametrize("kind", CACHES)
def test_a_fill_fails_after_a_write_even_if_the_entry_was_evicted(make, kind: str) -> None:
    store = make(kind)
    cache = store.cache
    store.durable.put("e.txt", b"old")
    lease = cache.cache_lease("e.txt")
    assert lease is not None and cache.cache_lease("e.txt") is None  # one reader fills
    old = store.durable.load("e.txt")
    store.put("e.txt", b"new")
    cache.cache_forget("e.txt")  # as an eviction would
    assert cache.cache_fill(old, lease) is False
    assert store.get("e.txt") == b"new"


@pytest.mark.parametrize("kind", CACHES)
def test_two_racing_puts_leave_the_newer_cached(make, kind: str) -> None:
    store = make(kind)
    # The first put has written the durable store when a second one runs whole; the
    # first then updates the cache, last.
    store.durable.hooks["put"] = lambda: store.put("p.txt", b"second")
    store.put("p.txt", b"first")
    assert store.durable.get("p.txt") == b"second"
    assert store.get("p.txt") == b"second"
    behind(store, "p.txt", b"third")
    assert store.get("p.txt") in (b"second", b"third")  # cached or not, never "first"


@pytest.mark.parametrize("kind", CACHES)
def test_a_cache_down_is_not_an_error_and_nothing_stale_after(make, kind: str, request: pytest.FixtureRequest, caplog) -> None:
    server = request.getfixturevalue(f"{kind}_server")
    store = make(kind)
    store.put("x.txt", b"v1")
    store.put("y.txt", b"y1")
    assert store.get("x.txt") == b"v1"
    with caplog.at_level(logging.WARNING, logger="amfkit.assets"):
        server.stop()
        try:
            store.put("x.txt", b"v2")  # the cache keeps "v1" (Redis keeps it across the restart)
            assert store.get("x.txt") == b"v2" and store.stat("x.txt").size == 2
            store.delete("y.txt")
            store.put("z.txt", b"z")
            assert store.get("z.txt") == b"z" and list(store) == ["x.txt", "z.txt"]
            assert store.cache_pending == 3  # x, y and z: each written while the cache was down
        finally:
            server.start()
    warnings = [r for r in caplog.records if r.name == "amfkit.assets"]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert "unavailable" in warnings[0].getMessage() and store.cache.url in warnings[0].getMessage()
    if kind == "redis":
        assert store.cache.cache_get("x.txt").data == b"v1"  # stale, until the store drops it
    assert store.get("x.txt") == b"v2"
    assert store.cache_pending == 0 and store.cache.cache_get("y.txt") is None
    with pytest.raises(AssetNotFound):
        store.get("y.txt")
    behind(store, "x.txt", b"v3")
    assert store.get("x.txt") == b"v2"  # cached again


def test_a_hung_cache_is_bypassed_and_its_stale_entries_dropped_after(make, memcached_server, caplog) -> None:
    store = make("memcached", timeout=0.2)
    store.put("h.txt", b"h1")
    with caplog.at_level(logging.WARNING, logger="amfkit.assets"):
        memcached_server.pause()  # memcached keeps its data: the entry "h1" stays
        try:
            store.put("h.txt", b"h2")
            assert store.get("h.txt") == b"h2"
        finally:
            memcached_server.resume()
    assert len([r for r in caplog.records if r.name == "amfkit.assets"]) == 1
    assert store.cache.cache_get("h.txt").data == b"h1"
    assert store.get("h.txt") == b"h2"
    assert store.cache.cache_get("h.txt") is None or store.cache.cache_get("h.txt").data == b"h2"


def test_too_many_names_to_forget_clear_the_whole_cache(make, redis_server) -> None:
    store = make("redis", max_forget=2)
    bystander = RedisStore(redis_server.url, prefix=store.cache.prefix[:-1] + "-other:")
    try:
        bystander.put("keep", b"k")
        for name in "abc":
            store.put(name, b"1")
        redis_server.stop()
        try:
            for name in "abc":
                store.put(name, b"2")
            assert store.cache_pending == -1  # past max_forget: the cache must be cleared
            assert store.get("a") == b"2"
        finally:
            redis_server.start()
        assert store.cache.cache_get("b").data == b"1"  # stale
        assert [store.get(n) for n in "abc"] == [b"2"] * 3
        assert store.cache_pending == 0 and store.cache.cache_get("b").data == b"2"
        assert bystander.get("keep") == b"k"
    finally:
        bystander.close()


def test_memcached_cache_clear_drops_its_prefix_only(make, memcached_server) -> None:
    store = make("memcached")
    bystander = MemcachedStore(memcached_server.url, prefix=f"t{secrets.token_hex(4)}:")
    try:
        bystander.put("keep", b"k")
        for name in ("a", "b/c"):
            store.put(name, b"x" * 10)
        store.put("big", os.urandom(700_000), content_type="application/x-big")
        assert store.cache.cache_get("a") is not None
        store.cache.cache_clear()
        assert store.cache.cache_get("a") is None and store.cache.cache_get("b/c") is None
        assert bystander.get("keep") == b"k" and store.get("a") == b"x" * 10
    finally:
        bystander.close()


def test_memcached_caches_large_assets_in_chunks_and_refills_an_evicted_one(make, memcached_server) -> None:
    from pymemcache.client.base import Client

    store = make("memcached", max_cached=4 * CHUNK_SIZE)
    cache = store.cache
    data = os.urandom(2 * CHUNK_SIZE + 5)
    store.put("big.bin", data)
    behind(store, "big.bin", b"behind")
    assert store.get("big.bin") == data  # cached, in three chunks
    raw = Client((memcached_server.host, memcached_server.port), default_noreply=False)
    try:
        record = _decode(raw.get(cache._meta_key("big.bin")), "big.bin")
        assert record is not None and record.chunks == 3
        raw.delete(cache._chunk_keys(record.version, range(3))[2])  # evicted
    finally:
        raw.close()
    assert store.get("big.bin") == b"behind"  # a miss: read from the folder, filled again
    behind(store, "big.bin", b"later")
    assert store.get("big.bin") == b"behind"


@pytest.mark.parametrize("kind", CACHES)
def test_async_methods_use_both_stores(make, kind: str) -> None:
    store = make(kind)

    async def main(run: str) -> None:
        a, b = f"{run}/a.bin", f"{run}/b.bin"
        asset = await store.aput(a, b"abc")
        behind(store, a, b"behind")
        assert await store.aget(a) == b"abc"
        assert await store.astat(a) == asset
        assert (await store.aload(a)).store is store
        reader = await store.aopen_reader(a)
        assert await store.aread(reader, 1, 5) == b"bc"
        await store.aput(a, b"new")
        assert await store.aget(a) == b"new"
        behind(store, b, b"b")
        assert await store.astat(b) == store.durable.stat(b)
        behind(store, b, b"B")
        assert await store.aget(b) == b"b"  # astat filled it
        await store.adelete(a)
        with pytest.raises(AssetNotFound):
            await store.aget(a)
        assert await store.anames(run) == [b]
        with pytest.raises(ValueError):
            await store.aget("../x")

    asyncio.run(main("1"))
    asyncio.run(main("2"))  # a second loop
    if kind == "redis":
        assert store.cache._executor is None


def test_open_with_a_cache_url(tmp_path: Path, memcached_server, redis_server) -> None:
    for url in (memcached_server.url, redis_server.url):
        store = AssetStore.open(str(tmp_path / kind_dir(url)), cache=url)
        assert isinstance(store, CachedStore)
        assert isinstance(store.durable, FileStore) and store.cache.url == url
        assert "cache" in repr(store)
        store.put("o", b"1")
        assert store.get("o") == b"1"
        store.close()
        with pytest.raises(StoreUnavailable, match="closed"):
            store.cache.cache_get("o")
    with pytest.raises(TypeError, match="a cache is"):
        CachedStore(FileStore(tmp_path / "x"), FileStore(tmp_path / "y"))


def kind_dir(url: str) -> str:
    return url.split(":", 1)[0]
