"""What only the Redis store has: a server that restarts (acknowledged records and
values survive, the store and its waiters carry on, what is tried meanwhile fails with
StoreError), a server that is not there, its URL options, its layout in Redis, its
bounds and expiries. On a real Redis server (tests/support/redis_server.py)."""

from __future__ import annotations

import itertools
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from amfkit.messaging.logstore import StoreError
from amfkit.messaging.redis_store import MAX_RECORD, RedisStore

_names = itertools.count()


def _prefix() -> str:
    return f"rs{os.getpid()}-{next(_names)}:"


@pytest.fixture
def server(redis_server: Any) -> Iterator[Any]:
    """The session's Redis server, running again after the test whatever it did."""
    redis_server.start()
    yield redis_server
    redis_server.start()


@pytest.fixture
def open_store(server: Any) -> Iterator[Any]:
    opened: list[RedisStore] = []

    def make(**options: Any) -> RedisStore:
        options.setdefault("prefix", _prefix())
        store = RedisStore(server.url, **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def raw(server: Any) -> Iterator[Any]:
    """A plain redis-py client on the same server, to look at and spoil what the store
    keeps."""
    import redis

    client = redis.Redis.from_url(server.url)
    yield client
    client.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- a server that restarts --------------------------------------------------------------


def test_a_restart_keeps_records_and_values(server, open_store):
    store = open_store()
    for i in range(1, 6):
        store.append("a", b"r%d" % i)
    store.put("k", b"value")
    store.put("t", b"expiring", ttl=60)
    bell = store.bell()
    server.restart()
    # The same store carries on: its pooled connections are replaced.
    assert store.head("a") == 5
    assert store.read("a", 0) == ([(i, b"r%d" % i) for i in range(1, 6)], 5, 0)
    assert store.get("k") == b"value"
    assert store.get("t") == b"expiring"
    assert store.bell() == bell
    assert store.append("a", b"r6") == 6
    assert store.cas("k", b"value", b"new") is True
    assert sorted(store.keys()) == ["k", "t"]
    assert store.logs() == ["a"]


def test_while_redis_is_down_operations_raise_store_error(server, open_store):
    store = open_store()
    store.append("a", b"1")
    store.put("k", b"v")
    bell = store.bell()
    server.stop()
    calls = [
        lambda: store.append("a", b"2"),
        lambda: store.head("a"),
        lambda: store.read("a", 0),
        store.logs,
        store.bell,
        lambda: store.get("k"),
        lambda: store.put("k", b"w"),
        lambda: store.cas("k", b"v", b"w"),
        lambda: store.delete("k"),
        store.keys,
    ]
    for call in calls:
        start = time.monotonic()
        with pytest.raises(StoreError) as info:
            call()
        assert time.monotonic() - start < 3.0
        assert f"127.0.0.1:{server.port}" in str(info.value)
    # A waiter is not told: it waits out its timeout.
    start = time.monotonic()
    assert store.wait(bell, 0.4) == bell
    assert 0.35 <= time.monotonic() - start < 3.0
    server.start()
    assert store.append("a", b"2") == 2
    assert store.get("k") == b"v"
    assert store.wait(bell, 1.0) != bell


def test_wait_carries_on_across_a_restart(server, open_store):
    store = open_store()
    bell = store.bell()
    result: list[tuple[int, float]] = []

    def waiter() -> None:
        start = time.monotonic()
        count = store.wait(bell, 30.0)
        result.append((count, time.monotonic() - start))

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.3)  # subscribed by now
    server.restart()
    time.sleep(0.5)  # the waiter is back on the channel (or about to look at the count)
    assert not result, "the waiter returned while nothing rang"
    other = open_store(prefix=store.prefix)
    other.append("a", b"after the restart")
    t.join(15)
    assert result, "the waiter did not wake after the restart"
    count, elapsed = result[0]
    assert count != bell
    assert elapsed < 10.0
    # And it waits again on a new subscription.
    bell = store.bell()
    timer = threading.Timer(0.2, other.append, args=("a", b"again"))
    timer.start()
    start = time.monotonic()
    assert store.wait(bell, 10.0) != bell
    assert time.monotonic() - start < 2.0
    timer.join()


def test_close_wakes_a_waiter(open_store):
    store = open_store()
    bell = store.bell()
    done: list[float] = []

    def waiter() -> None:
        start = time.monotonic()
        store.wait(bell, 20.0)
        done.append(time.monotonic() - start)

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.3)
    store.close()
    t.join(10)
    assert done and done[0] < 5.0
    with pytest.raises(StoreError, match="closed"):
        store.bell()
    with pytest.raises(StoreError, match="closed"):
        store.wait(bell, 1.0)  # not a return at once: a caller's loop would spin


# --- a server that is not there ----------------------------------------------------------


def test_nothing_listening_is_a_store_error_naming_the_url_without_password():
    # Opening connects lazily (a worker starts while Redis is away); each call then fails.
    port = _free_port()
    store = RedisStore(f"redis://someone:sekrit@127.0.0.1:{port}/0", socket_timeout=2.0)
    try:
        for call in (lambda: store.append("a", b"x"), lambda: store.get("k"), lambda: store.head("a")):
            start = time.monotonic()
            with pytest.raises(StoreError) as info:
                call()
            assert time.monotonic() - start < 3.0
            text = str(info.value)
            assert f"redis://127.0.0.1:{port}/0" in text
            assert "sekrit" not in text and "someone" not in text
    finally:
        store.close()


def test_without_redis_py_the_import_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ImportError, match=r"pip install 'amfkit\[redis\]'"):
        RedisStore("redis://127.0.0.1:1/0")


# --- URL options ---------------------------------------------------------------------------


def test_from_url_reads_prefix_and_log_records(server):
    prefix = _prefix()
    store = RedisStore.from_url(f"{server.url}?prefix={prefix}&log_records=3")
    try:
        assert store.prefix == prefix
        assert store.log_records == 3
        for i in range(5):
            store.append("a", b"%d" % i)
        items, cursor, lost = store.read("a", 0)
        assert [seq for seq, _ in items] == [3, 4, 5]
        assert (cursor, lost) == (5, 2)
    finally:
        store.close()
    default = RedisStore.from_url(server.url)
    try:
        assert (default.prefix, default.log_records) == ("amfkit:", 8192)
    finally:
        default.close()


def test_from_url_refuses_bad_options(server):
    with pytest.raises(ValueError, match="log_records"):
        RedisStore.from_url(f"{server.url}?log_records=many")
    with pytest.raises(ValueError, match="log_records"):
        RedisStore.from_url(f"{server.url}?log_records=0")
    with pytest.raises(ValueError):
        RedisStore.from_url(f"{server.url}?no_such_option=1")


# --- the layout in Redis, and a spoiled one ------------------------------------------------


def test_layout_stream_ids_are_sequence_numbers(open_store, raw):
    store = open_store()
    store.append("a", b"one")
    store.append("a", b"two")
    store.put("k", b"v")
    p = store.prefix.encode()
    assert [entry_id for entry_id, _ in raw.xrange(p + b"log:a")] == [b"1-0", b"2-0"]
    assert raw.get(p + b"seq:a") == b"2"
    assert int(raw.get(p + b"bell")) == store.bell()
    assert raw.get(p + b"kv:k") == b"v"


def test_a_lost_counter_moves_past_the_stream(open_store, raw):
    store = open_store()
    for _ in range(3):
        store.append("a", b"x")
    raw.delete(store.prefix + "seq:a")
    assert store.append("a", b"y") == 4
    assert store.head("a") == 4


def test_a_lost_log_is_counted_as_lost(open_store, raw):
    store = open_store()
    for _ in range(3):
        store.append("a", b"x")
    raw.delete(store.prefix + "log:a")
    assert store.read("a", 1) == ([], 3, 2)
    assert store.append("a", b"y") == 4
    assert store.read("a", 3) == ([(4, b"y")], 4, 0)


def test_data_lost_by_redis_leaves_readers_at_the_head(open_store, raw):
    store = open_store()
    for _ in range(3):
        store.append("a", b"x")
    for key in raw.scan_iter(match=store.prefix + "*"):
        raw.delete(key)
    assert store.read("a", 3) == ([], 0, 0)
    assert store.append("a", b"y") == 1
    assert store.read("a", 0) == ([(1, b"y")], 1, 0)


def test_foreign_data_under_the_prefix_is_a_store_error(open_store, raw):
    store = open_store()
    raw.set(store.prefix + "log:a", b"not a stream")
    raw.set(store.prefix + "seq:b", b"not a number")
    raw.rpush(store.prefix + "kv:list", b"x")
    with pytest.raises(StoreError):
        store.append("a", b"x")
    with pytest.raises(StoreError):
        store.head("b")
    with pytest.raises(StoreError):
        store.get("list")
    with pytest.raises(StoreError):
        store.cas("list", None, b"x")
    assert store.head("a") == 0  # a refused append changed nothing


# --- bounds and expiry ---------------------------------------------------------------------


def test_a_record_too_large_is_refused(open_store):
    store = open_store()
    assert store.append("a", b"x" * MAX_RECORD) == 1
    with pytest.raises(StoreError, match="bytes"):
        store.append("a", b"x" * (MAX_RECORD + 1))
    assert store.head("a") == 1


def test_a_name_too_long_is_refused(open_store):
    store = open_store()
    with pytest.raises(ValueError):
        store.append("n" * 5000, b"x")
    with pytest.raises(ValueError):
        store.put("k" * 5000, b"x")
    assert store.logs() == [] and store.keys() == []


def test_a_read_of_no_records_moves_past_what_is_lost(open_store):
    store = open_store(log_records=2)
    for _ in range(5):
        store.append("a", b"x")
    assert store.read("a", 1, 0) == ([], 3, 2)
    assert store.read("a", 3, 0) == ([], 3, 0)
    assert store.read("a", 5, 0) == ([], 5, 0)
    with pytest.raises(ValueError):
        store.read("a", 0, -1)
    with pytest.raises(ValueError):
        store.read("a", -1)


def test_ttl_expires_values(open_store):
    store = open_store()
    store.put("p", b"v", ttl=0.15)
    assert store.cas("c", None, b"v", ttl=0.15) is True
    store.put("keep", b"v", ttl=60)
    assert store.get("p") == b"v" and store.get("c") == b"v"
    time.sleep(0.4)
    assert store.get("p") is None
    assert store.get("c") is None
    assert store.keys() == ["keep"]
    # A put without a ttl keeps the value for good.
    store.put("keep", b"w")
    assert store.get("keep") == b"w"
