"""The asset store's interface, the same on every backend (tests/assets/conftest.py: file,
SQLite, PostgreSQL, memcached, Redis, and caches in front of SQL stores)."""

from __future__ import annotations

import asyncio
import os
import threading
from datetime import datetime, timedelta, timezone

import pytest

from amfkit.assets import (
    MAX_NAME_BYTES,
    Asset,
    AssetChanged,
    AssetNotFound,
    AssetStore,
    AssetTooLarge,
    InvalidAssetName,
)

PNG = bytes(range(256)) * 4


def test_put_returns_the_metadata_and_get_the_bytes(store: AssetStore) -> None:
    before = datetime.now(timezone.utc) - timedelta(seconds=5)
    asset = store.put("logos/amfkit.png", PNG, content_type="image/png")
    assert (asset.name, asset.size, asset.content_type) == ("logos/amfkit.png", len(PNG), "image/png")
    assert asset.etag.startswith('"') and asset.etag.endswith('"') and len(asset.etag) > 2
    assert asset.modified.tzinfo is not None and before <= asset.modified <= datetime.now(timezone.utc) + timedelta(seconds=5)
    assert store.get("logos/amfkit.png") == PNG
    assert store.stat("logos/amfkit.png") == asset
    assert store.stat("logos/amfkit.png").data is None


def test_the_content_type_defaults_to_the_extension(store: AssetStore) -> None:
    assert store.put("a.png", b"1").content_type == "image/png"
    assert store.put("b.mp3", b"1").content_type == "audio/mpeg"
    assert store.put("no-extension", b"1").content_type == "application/octet-stream"
    assert store.put("c.png", b"1", content_type="application/x-thing").content_type == "application/x-thing"
    assert store.stat("c.png").content_type == "application/x-thing"


@pytest.mark.parametrize("bad", ["image/png\r\nset-cookie: a=b", "", "png", "a/b c", "x" * 300 + "/y"])
def test_a_content_type_that_could_break_a_header_is_refused(store: AssetStore, bad: str) -> None:
    with pytest.raises(ValueError):
        store.put("a.png", b"1", content_type=bad)
    assert "a.png" not in store


def test_empty_and_every_byte_value(store: AssetStore) -> None:
    store.put("empty", b"")
    assert store.get("empty") == b""
    assert store.stat("empty").size == 0
    data = bytes(range(256)) * 3 + b"\x00\r\n\x00"
    store.put("bytes", bytearray(data))
    assert store.get("bytes") == data
    store.put("view", memoryview(data)[10:20])
    assert store.get("view") == data[10:20]


def test_a_large_asset_whole_and_by_range(store: AssetStore) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)  # larger than a memcached item
    asset = store.put("big.bin", data)
    assert asset.size == len(data)
    assert store.get("big.bin") == data
    with store.open_reader("big.bin") as reader:
        assert reader.asset == asset
        assert reader.read(0, 10) == data[:10]
        assert reader.read(len(data) - 5, 100) == data[-5:]
        assert reader.read(1_500_000, 1_000_000) == data[1_500_000:2_500_000]
        assert reader.read(len(data), 10) == b""


def test_a_put_replaces_with_a_new_etag(store: AssetStore) -> None:
    first = store.put("a.txt", b"one")
    second = store.put("a.txt", b"two!")
    assert store.get("a.txt") == b"two!"
    assert second.etag != first.etag and second.size == 4
    assert store.stat("a.txt") == second


def test_load_gives_data_and_read_reads_it(store: AssetStore) -> None:
    store.put("x/y.bin", b"payload")
    asset = store.load("x/y.bin")
    assert isinstance(asset, Asset) and asset.data == b"payload" and asset.size == 7
    assert store.stat("x/y.bin").read() == b"payload"
    assert asyncio.run(store.stat("x/y.bin").aread()) == b"payload"


def test_missing_names_raise_asset_not_found_a_key_error(store: AssetStore) -> None:
    for call in (store.get, store.stat, store.load, store.delete, store.open_reader):
        with pytest.raises(AssetNotFound) as info:
            call("nope.png")
        assert isinstance(info.value, KeyError)
        assert "nope.png" in str(info.value)
    assert "nope.png" not in store


def test_delete(store: AssetStore) -> None:
    store.put("d/e.txt", b"1")
    store.put("d/f.txt", b"2")
    store.delete("d/e.txt")
    assert "d/e.txt" not in store and store.get("d/f.txt") == b"2"
    with pytest.raises(AssetNotFound):
        store.get("d/e.txt")
    store.delete("d/f.txt")
    assert list(store) == []
    store.put("d/e.txt", b"again")
    assert store.get("d/e.txt") == b"again"


def test_names_are_sorted_and_filtered_by_prefix(store: AssetStore) -> None:
    names = ["b.png", "a/z.png", "a/b/c.png", "a.png", "été/1.png", "aa.png"]
    for n in names:
        store.put(n, n.encode())
    assert list(store) == sorted(names)
    assert list(store.names("a/")) == ["a/b/c.png", "a/z.png"]
    assert list(store.names("a")) == sorted(n for n in names if n.startswith("a"))
    assert list(store.names("zzz")) == []
    assert len(store) == len(names)
    assert all(n in store for n in names) and "a" not in store
    assert store.get("été/1.png") == "été/1.png".encode()


@pytest.mark.parametrize(
    "bad",
    ["", "/abs.png", "../up.png", "a/../b.png", "a/./b.png", ".hidden", "a/.git/x", "a//b", "a/", "a\\b", "a\x00b", "tab\there", "del\x7f", "c1\x85", "x" * (MAX_NAME_BYTES + 1), "a/" + "y" * 256, "\udc80"],
)
def test_the_same_names_are_refused_everywhere(store: AssetStore, bad: str) -> None:
    with pytest.raises(InvalidAssetName):
        store.put(bad, b"1")
    for call in (store.get, store.stat, store.delete):
        with pytest.raises(ValueError):
            call(bad)
    assert bad not in store
    assert list(store) == []


def test_a_name_of_the_longest_length_is_kept(store: AssetStore) -> None:
    name = "/".join(["d" * 200] * 4) + "/" + "e" * (MAX_NAME_BYTES - 4 * 201)
    assert len(name.encode()) == MAX_NAME_BYTES
    store.put(name, b"long")
    assert store.get(name) == b"long" and list(store) == [name]


def test_max_size(make_store, store: AssetStore, request: pytest.FixtureRequest) -> None:
    small = make_store(request.node.callspec.params["store"], max_size=10)
    small.put("ok", b"x" * 10)
    with pytest.raises(AssetTooLarge):
        small.put("no", b"x" * 11)
    assert "no" not in small and small.get("ok") == b"x" * 10


def test_async_methods(store: AssetStore) -> None:
    async def main() -> None:
        asset = await store.aput("async/a.bin", b"abc", content_type="application/x-a")
        assert asset.size == 3
        assert await store.aget("async/a.bin") == b"abc"
        assert (await store.aload("async/a.bin")).data == b"abc"
        assert await store.astat("async/a.bin") == asset
        assert await store.anames("async/") == ["async/a.bin"]
        results = await asyncio.gather(*(store.aput(f"async/{i}", bytes([i]) * 100) for i in range(20)))
        assert [r.size for r in results] == [100] * 20
        assert await asyncio.gather(*(store.aget(f"async/{i}") for i in range(20))) == [bytes([i]) * 100 for i in range(20)]
        await store.adelete("async/a.bin")
        with pytest.raises(AssetNotFound):
            await store.aget("async/a.bin")
        reader = await store.aopen_reader("async/3")
        try:
            assert await store.aread(reader, 10, 5) == bytes([3]) * 5
        finally:
            reader.close()
        await store.aclose()

    asyncio.run(main())


def test_concurrent_puts_and_gets_of_one_name_give_whole_contents(store: AssetStore) -> None:
    versions = [bytes([i]) * (200_000 + i) for i in range(6)]
    store.put("hot.bin", versions[0])
    stop = threading.Event()
    seen: list[bytes] = []
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for j in range(8):
                store.put("hot.bin", versions[(k + j) % len(versions)])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def reader() -> None:
        try:
            while not stop.is_set():
                seen.append(store.get("hot.bin"))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    writers = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors
    assert seen and all(s in versions for s in seen)
    assert store.get("hot.bin") in versions


def test_a_reader_never_mixes_two_versions(store: AssetStore) -> None:
    old, new = b"o" * 1_000_000, b"n" * 1_000_000
    store.put("v.bin", old)
    reader = store.open_reader("v.bin")
    try:
        first = reader.read(0, 500_000)
        store.put("v.bin", new)
        try:
            rest = reader.read(500_000, 500_000)
        except AssetChanged:
            return  # the backend cannot give the old version any more: it says so
        assert first + rest == old
    finally:
        reader.close()


def test_unknown_scheme_and_repr_hide_passwords(tmp_path) -> None:
    with pytest.raises(ValueError, match="unsupported asset store"):
        AssetStore.open("ftp://user:secret@host/x")
    s = AssetStore.open(str(tmp_path / "plain"))
    assert repr(s).startswith("FileStore('file://")
    s.close()


def test_a_reader_may_preload_a_small_asset_in_the_same_trip(store: AssetStore) -> None:
    from amfkit.assets.store import BytesReader

    small, large = b"s" * 1000, os.urandom(200_000)
    store.put("small.bin", small)
    store.put("large.bin", large)

    async def main() -> None:
        for open_reader in (
            lambda name, n: asyncio.sleep(0, store.open_reader(name, preload=n)),
            lambda name, n: store.aopen_reader(name, preload=n),
        ):
            reader = await open_reader("small.bin", 1000)
            try:
                assert isinstance(reader, BytesReader) and reader.asset.size == 1000
                assert reader.read(10, 5) == b"sssss" and await store.aread(reader, 0, 2000) == small
            finally:
                reader.close()
            reader = await open_reader("large.bin", 1000)
            try:
                assert reader.asset.size == len(large)
                assert await store.aread(reader, 199_990, 100) == large[-10:]
            finally:
                reader.close()
            with pytest.raises(AssetNotFound):
                await open_reader("missing.bin", 1000)

    asyncio.run(main())
