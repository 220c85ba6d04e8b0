"""What the SQL backends (SQLite and PostgreSQL) promise beyond the interface that
test_store.py checks on every backend: a put is atomic even for a process killed in its
middle, processes sharing a store only ever read whole versions, a reader of a replaced
version says so, names match a prefix literally (no LIKE wildcards), and for PostgreSQL the
connection handling: an unreachable server fails fast without showing the password, the
pools' bounds, `pool=False`'s connection per operation, async methods without threads,
one async pool per event loop, and broken pooled connections replaced. All against the
real servers (tests/support/pg.py)."""

from __future__ import annotations

import asyncio
import secrets
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from amfkit.assets import AssetChanged, AssetError, AssetStore, StoreUnavailable
from amfkit.assets.postgresql import PostgresStore
from amfkit.assets.sqlite import SQLiteStore
from amfkit.assets.store import content_etag

SQL = ["sqlite", "postgresql"]


@pytest.fixture(params=SQL)
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """The URL and a fresh table name of a SQL store, for this process and children."""
    table = f"assets_{secrets.token_hex(4)}"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/assets.db", table
    pg = request.getfixturevalue("postgres")
    return f"postgresql://{pg.user}@{pg.host}:{pg.port}/{pg.dbname}", table


@pytest.fixture
def opened() -> Iterator[Any]:
    """`opened(url, **options)`: AssetStore.open, closed after the test."""
    stores: list[AssetStore] = []

    def open_(url: str, **options: Any) -> AssetStore:
        store = AssetStore.open(url, **options)
        stores.append(store)
        return store

    yield open_
    for store in stores:
        store.close()


def pg_url(postgres: Any) -> str:
    return f"postgresql://{postgres.user}@{postgres.host}:{postgres.port}/{postgres.dbname}"


def our_backends(postgres: Any, table: str) -> list[tuple[int, Any]]:
    """(pid, backend_start) of the server's connections from an asset store (their
    application name) whose last query used `table`, seen from a separate connection."""
    with psycopg.connect(postgres.conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE application_name = 'amfkit-assets' AND strpos(query, %s) > 0",
            (f'"{table}"',),
        ).fetchall()
    return [(row[0], row[1]) for row in rows]


def wait_for(condition: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# --- atomic puts across processes -------------------------------------------------------

PUTTER = r"""
import sys, time
from amfkit.assets import AssetStore
url, table, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = AssetStore.open(url, table=table)
versions = [b"\x01" * size, b"\x02" * size]
start = time.monotonic()
store.put("big.bin", versions[0])
print("put", time.monotonic() - start, flush=True)
i = 1
while True:
    print("putting", flush=True)
    store.put("big.bin", versions[i % 2])
    i += 1
"""


def test_a_process_killed_in_the_middle_of_a_large_put_leaves_a_whole_version(sql_url: tuple[str, str], opened: Any, request: pytest.FixtureRequest) -> None:
    url, table = sql_url
    size = 40 * 1024 * 1024
    with subprocess.Popen([sys.executable, "-c", PUTTER, url, table, str(size)], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None
            first = child.stdout.readline().split()
            assert first[0] == "put", first
            assert child.stdout.readline().strip() == "putting"
            time.sleep(float(first[1]) / 2)  # about halfway through the replacing put
        finally:
            child.kill()
    assert child.returncode == -9
    if url.startswith("postgresql"):
        # A statement the server had whole when its client died still runs to its end
        # (committed or not): wait for that backend to be gone, so what is read is final.
        postgres = request.getfixturevalue("postgres")
        assert wait_for(lambda: not our_backends(postgres, table), 10)
    store = opened(url, table=table)
    assert list(store) == ["big.bin"]
    asset = store.load("big.bin")
    data = asset.data
    assert data is not None and len(data) == size and data[0] in (1, 2) and data == bytes([data[0]]) * size
    assert asset.size == size and asset.etag == content_etag(data)
    assert store.stat("big.bin") == asset
    store.put("big.bin", b"after")  # nothing left locked
    assert store.get("big.bin") == b"after"
    if url.startswith("sqlite"):
        with sqlite3.connect(url[len("sqlite:///") :]) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.close()


HAMMER = r"""
import sys, time
from amfkit.assets import AssetChanged, AssetStore
url, table, mine, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
options = {"pool_size": 1} if url.startswith("postgres") else {}
store = AssetStore.open(url, table=table, **options)

def size(v):
    return 100_000 + 7919 * v

def whole(data):
    return len(data) > 0 and len(data) == size(data[0]) and data == bytes([data[0]]) * len(data)

reads = changed = 0
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    store.put("hot.bin", bytes([mine]) * size(mine))
    for _ in range(3):
        data = store.get("hot.bin")
        if not whole(data):
            print("mixed", len(data), flush=True)
            sys.exit(1)
        reads += 1
    with store.open_reader("hot.bin") as reader:
        try:
            half = reader.asset.size // 2
            data = reader.read(0, half) + reader.read(half, reader.asset.size)
        except AssetChanged:
            changed += 1
        else:
            if not whole(data) or len(data) != reader.asset.size:
                print("mixed range", len(data), flush=True)
                sys.exit(1)
            reads += 1
store.close()
print("ok", reads, changed, flush=True)
"""


def test_processes_putting_and_getting_one_name_read_only_whole_versions(sql_url: tuple[str, str], opened: Any) -> None:
    url, table = sql_url
    store = opened(url, table=table)
    store.put("hot.bin", bytes([9]) * (100_000 + 7919 * 9))
    children = [subprocess.Popen([sys.executable, "-c", HAMMER, url, table, str(k), "0.8"], stdout=subprocess.PIPE, text=True) for k in (1, 2, 3)]
    outputs = [child.communicate(timeout=60)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0, 0], outputs
    assert all(out.startswith("ok ") and int(out.split()[1]) > 0 for out in outputs), outputs
    data = store.get("hot.bin")
    assert data[0] in (1, 2, 3) and data == bytes([data[0]]) * (100_000 + 7919 * data[0])


# --- readers, names, tables -------------------------------------------------------------


def test_a_reader_of_a_replaced_or_deleted_version_raises_asset_changed(sql_url: tuple[str, str], opened: Any) -> None:
    url, table = sql_url
    store = opened(url, table=table)
    store.put("r.bin", b"a" * 1000)
    with store.open_reader("r.bin") as reader:
        assert reader.read(0, 10) == b"a" * 10
        store.put("r.bin", b"a" * 1000)  # the same bytes: the same version (content ETag)
        assert reader.read(990, 100) == b"a" * 10
        store.put("r.bin", b"b" * 1000)
        with pytest.raises(AssetChanged, match="r.bin"):
            reader.read(10, 10)
    with store.open_reader("r.bin") as reader:
        store.delete("r.bin")
        with pytest.raises(AssetChanged):
            reader.read(0, 10)
        assert reader.read(1000, 10) == b""  # past the end: nothing to check

    async def main() -> None:
        await store.aput("r.bin", b"c" * 100)
        reader = await store.aopen_reader("r.bin")
        assert await store.aread(reader, 95, 10) == b"c" * 5
        await store.aput("r.bin", b"d" * 100)
        with pytest.raises(AssetChanged):
            await store.aread(reader, 0, 10)
        reader.close()
        await store.aclose()

    asyncio.run(main())


def test_prefixes_are_literal_and_names_sort_by_code_point(sql_url: tuple[str, str], opened: Any) -> None:
    url, table = sql_url
    store = opened(url, table=table)
    names = ["a_b", "axb", "a%c", "abc", "B", "a", "é", "z", "中", "\U0001f600", "a_/x"]
    for n in names:
        store.put(n, n.encode())
    assert list(store) == sorted(names)
    assert list(store.names("a_")) == ["a_/x", "a_b"]
    assert list(store.names("a%")) == ["a%c"]
    assert list(store.names("b")) == []
    assert list(store.names("é")) == ["é"]
    assert asyncio.run(store.anames("a_")) == ["a_/x", "a_b"]


@pytest.mark.parametrize("bad", ["", "a b", 'x"; DROP TABLE t; --', "1abc", "a" * 64, "tab.le", "sqlite_master"])
def test_sqlite_and_postgresql_table_names_must_be_plain_identifiers(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="table"):
        AssetStore.open(f"sqlite:///{tmp_path}/a.db", table=bad)
    if bad != "sqlite_master":  # SQLite's reserved names are fine in PostgreSQL
        with pytest.raises(ValueError, match="table"):
            PostgresStore("postgresql://u@127.0.0.1:1/db", table=bad)


def test_two_tables_hold_separate_assets(sql_url: tuple[str, str], opened: Any) -> None:
    url, table = sql_url
    one, two = opened(url, table=table), opened(url, table=table + "_2")
    one.put("x", b"1")
    two.put("x", b"2")
    assert (one.get("x"), two.get("x"), list(one), list(two)) == (b"1", b"2", ["x"], ["x"])
    same = opened(url, table=table)  # opening an existing table keeps it
    assert same.get("x") == b"1"


def test_a_closed_store_refuses_to_work(sql_url: tuple[str, str], opened: Any) -> None:
    url, table = sql_url
    store = opened(url, table=table)
    store.put("x", b"1")
    store.close()
    with pytest.raises(AssetError, match="closed"):
        store.get("x")
    with pytest.raises(AssetError, match="closed"):
        asyncio.run(store.aget("x"))


# --- SQLite ------------------------------------------------------------------------------


def test_sqlite_file_is_in_wal_mode_and_urls_take_relative_and_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opened: Any) -> None:
    monkeypatch.chdir(tmp_path)
    rel = opened("sqlite:///rel.db")
    rel.put("a", b"1")
    assert (tmp_path / "rel.db").is_file() and rel.url == f"sqlite:///{tmp_path}/rel.db"
    absolute = opened(f"sqlite:///{tmp_path}/abs.db")
    absolute.put("b", b"2")
    with sqlite3.connect(tmp_path / "abs.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("SELECT name, size, etag, content_type, data FROM amfkit_assets").fetchall() == [("b", 1, content_etag(b"2"), "application/octet-stream", b"2")]
    db.close()
    for bad in ("sqlite://", "sqlite:///", "sqlite:///:memory:"):
        with pytest.raises(ValueError, match="sqlite"):
            AssetStore.open(bad)


def test_sqlite_gives_each_thread_its_connection_and_close_closes_them(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    store.put("x", b"1")
    barrier = threading.Barrier(4)
    seen: list[bytes] = []

    def use() -> None:
        seen.append(store.get("x"))
        barrier.wait()  # all four alive at once: four connections

    threads = [threading.Thread(target=use) for _ in range(3)]
    for t in threads:
        t.start()
    use()
    for t in threads:
        t.join()
    assert seen == [b"1"] * 4
    handles = list(store._handles)
    assert 1 <= len(handles) <= 4  # the ended threads' connections are closed as they go
    store.close()
    for handle in handles:
        with pytest.raises(sqlite3.ProgrammingError):
            handle.db.execute("SELECT 1")


# --- PostgreSQL: connections ------------------------------------------------------------

SECRET = "s3cret-Pa55word"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_postgresql_refused_is_store_unavailable_at_once_without_the_password() -> None:
    port = closed_port()
    url = f"postgresql://amfkit:{SECRET}@127.0.0.1:{port}/assets"
    start = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        AssetStore.open(url)
    assert time.monotonic() - start < 3
    text = str(info.value)
    assert f"postgresql://127.0.0.1:{port}/assets" in text
    assert SECRET not in text and SECRET not in repr(info.value) and "amfkit:" not in text


def test_postgresql_silent_server_is_store_unavailable_within_connect_timeout() -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(StoreUnavailable) as info:
            AssetStore.open(f"postgres://amfkit:{SECRET}@127.0.0.1:{port}/assets", connect_timeout=2)
        elapsed = time.monotonic() - start
    assert 1.5 < elapsed < 6, elapsed
    assert f"127.0.0.1:{port}" in str(info.value) and SECRET not in str(info.value)


def test_postgresql_async_pool_of_two_serves_ten_concurrent_gets(postgres: Any) -> None:
    table = f"assets_{secrets.token_hex(4)}"
    store = PostgresStore(pg_url(postgres), table=table, pool_size=2)
    try:
        seen: list[int] = []

        async def main() -> None:
            async def watch() -> None:
                while True:
                    seen.append(len(await asyncio.to_thread(our_backends, postgres, table)))

            watcher = asyncio.create_task(watch())
            await asyncio.gather(*(store.aput(f"n{i}", bytes([i]) * 500_000) for i in range(10)))
            for _ in range(3):
                got = await asyncio.gather(*(store.aget(f"n{i}") for i in range(10)))
                assert got == [bytes([i]) * 500_000 for i in range(10)]
            watcher.cancel()
            await asyncio.wait([watcher])
            await store.aclose()

        asyncio.run(main())
        assert seen and max(seen) <= 2
        assert store._pool is None  # only the async pool was used
    finally:
        store.close()


def test_postgresql_pool_false_opens_a_connection_per_operation(postgres: Any) -> None:
    table = f"assets_{secrets.token_hex(4)}"
    url = pg_url(postgres)
    who = "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"

    def backend(conn: psycopg.Connection[Any]) -> tuple[int, Any]:
        row = conn.execute(who).fetchone()
        assert row is not None
        return (row[0], row[1])

    async def abackend(conn: psycopg.AsyncConnection[Any]) -> tuple[int, Any]:
        row = await (await conn.execute(who)).fetchone()
        assert row is not None
        return (row[0], row[1])

    unpooled = PostgresStore(url, table=table, pool=False)
    pooled = PostgresStore(url, table=table, pool_size=1)
    try:
        for i in range(4):
            unpooled.put(f"u{i}", b"1")
            assert unpooled.get(f"u{i}") == b"1"
            # the connection of that get is gone (a pooled one stays: see below)
            assert wait_for(lambda: not our_backends(postgres, table)), our_backends(postgres, table)
        assert len({unpooled._run(backend) for _ in range(4)}) == 4

        async def main() -> set[tuple[int, Any]]:
            assert await unpooled.aget("u0") == b"1"
            return {await unpooled._arun(abackend) for _ in range(4)}

        assert len(asyncio.run(main())) == 4
        assert unpooled._pool is None and unpooled._apools == {}

        for i in range(4):
            assert pooled.get(f"u{i}") == b"1"
        assert len({pooled._run(backend) for _ in range(4)}) == 1
        pooled.get("u0")
        time.sleep(0.1)
        assert len(our_backends(postgres, table)) == 1  # the pool's connection stays open
    finally:
        unpooled.close()
        pooled.close()
    assert wait_for(lambda: not our_backends(postgres, table))


def test_postgresql_async_methods_use_no_thread(postgres: Any) -> None:
    store = PostgresStore(pg_url(postgres), table=f"assets_{secrets.token_hex(4)}")
    try:

        async def main() -> None:
            before = set(threading.enumerate())
            await store.aput("a.bin", b"abc")
            assert await store.aget("a.bin") == b"abc"
            assert (await store.aload("a.bin")).data == b"abc"
            assert (await store.astat("a.bin")).size == 3
            assert await store.anames() == ["a.bin"]
            reader = await store.aopen_reader("a.bin")
            assert await store.aread(reader, 1, 5) == b"bc"
            await store.adelete("a.bin")
            assert set(threading.enumerate()) == before
            await store.aclose()

        asyncio.run(main())
        assert store._executor is None and store._pool is None
    finally:
        store.close()


def test_postgresql_works_from_one_event_loop_after_another_and_closes_their_pools(postgres: Any) -> None:
    table = f"assets_{secrets.token_hex(4)}"
    store = PostgresStore(pg_url(postgres), table=table)
    try:
        asyncio.run(store.aput("x", b"1"))
        for _ in range(3):
            assert asyncio.run(store.aget("x")) == b"1"
            # the loop is gone and so are its pool's connections (no aclose was called)
            assert wait_for(lambda: not our_backends(postgres, table), 3), our_backends(postgres, table)
        assert store._apools == {}

        # a loop running in another thread at the same time as this one
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever)
        thread.start()
        try:
            assert asyncio.run_coroutine_threadsafe(store.aget("x"), loop).result(10) == b"1"
            assert asyncio.run(store.aget("x")) == b"1"
            assert asyncio.run_coroutine_threadsafe(store.aget("x"), loop).result(10) == b"1"
            assert len(store._apools) == 1
            store.close()  # closes the other loop's pool too
            assert wait_for(lambda: not our_backends(postgres, table), 3)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
    finally:
        store.close()


def test_postgresql_replaces_pooled_connections_the_server_ended(postgres: Any) -> None:
    table = f"assets_{secrets.token_hex(4)}"
    store = PostgresStore(pg_url(postgres), table=table, pool_size=2)

    def end_them() -> int:
        with psycopg.connect(postgres.conninfo, autocommit=True) as conn:
            ended = conn.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'amfkit-assets' AND strpos(query, %s) > 0",
                (f'"{table}"',),
            ).fetchone()
        assert ended is not None
        return int(ended[0])

    try:
        store.put("x", b"1")

        async def main() -> None:
            assert await store.aget("x") == b"1"
            assert end_them() >= 1
            assert await store.aget("x") == b"1"
            await store.aclose()

        asyncio.run(main())
        store = PostgresStore(pg_url(postgres), table=table, pool_size=2)
        store.get("x")
        assert end_them() >= 1
        assert store.get("x") == b"1"
    finally:
        store.close()


def test_postgresql_stores_opening_one_new_table_at_once_all_succeed(postgres: Any) -> None:
    table = f"assets_{secrets.token_hex(4)}"
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []
    stores: list[PostgresStore] = []

    def open_one() -> None:
        barrier.wait()
        try:
            stores.append(PostgresStore(pg_url(postgres), table=table, pool_size=1))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        stores[0].put("x", b"1")
        assert all(s.get("x") == b"1" for s in stores)
    finally:
        for s in stores:
            s.close()


class Proxy:
    """A TCP relay to the test server that can go down: `down()` closes every relayed
    connection and stops listening (so new ones are refused), as a server gone would."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                t = threading.Thread(target=self._pump, args=(a, b), daemon=True)
                self.threads.append(t)
                t.start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def down(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (close would not)
        except OSError:
            pass
        self.listener.close()
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self.threads:
            t.join(5)
        for s in self.sockets:
            s.close()


def test_postgresql_gone_is_store_unavailable_within_connect_timeout(postgres: Any) -> None:
    proxy = Proxy(postgres.port)
    url = f"postgresql://{postgres.user}:{SECRET}@127.0.0.1:{proxy.port}/{postgres.dbname}"
    store = PostgresStore(url, table=f"assets_{secrets.token_hex(4)}", connect_timeout=1)
    try:
        store.put("x", b"1")

        async def use() -> bytes:
            return await store.aget("x")

        async def main() -> None:
            assert await use() == b"1"
            proxy.down()
            start = time.monotonic()
            with pytest.raises(StoreUnavailable) as info:
                await use()
            assert time.monotonic() - start < 4
            assert f"127.0.0.1:{proxy.port}" in str(info.value) and SECRET not in str(info.value)

        asyncio.run(main())
        start = time.monotonic()
        with pytest.raises(StoreUnavailable) as info:
            store.get("x")
        assert time.monotonic() - start < 4
        assert SECRET not in str(info.value)
    finally:
        proxy.down()
        store.close()
