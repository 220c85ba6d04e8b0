"""The `LogStore` contract (amfkit/messaging/logstore.py), the same tests on each store:
a shared-memory segment (`ShmSegment`, in a temporary directory) and a real Redis server
(`RedisStore`, tests/support/redis_server.py; a key prefix of its own per test).

Logs: sequence numbers from 1, the head, reads by cursor and limit, the count of what a
reader that fell behind lost, a cursor past the head. The bell: it rings on append, a
waiter wakes at once or at its timeout, and uses no CPU meanwhile. The key-value table:
get, put, compare-and-set, delete, and keys by prefix (glob characters included)."""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest

from amfkit.messaging.logstore import StoreError

_names = itertools.count()

#: A log of this many records, for the tests of a reader that falls behind.
SMALL = 4


@pytest.fixture(params=["shm", "redis"])
def make_store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Callable[..., Any]]:
    """Opens stores of one kind: `make_store()` a fresh one, `make_store(records=N)` one
    whose logs keep their newest N records. All closed after the test."""
    opened: list[Any] = []
    kind = request.param
    server = request.getfixturevalue("redis_server") if kind == "redis" else None

    def make(records: int | None = None) -> Any:
        name = f"ls{os.getpid()}-{next(_names)}"
        if kind == "shm":
            from amfkit._amfkit import ShmSegment

            options = {} if records is None else {"ring_records": records}
            store = ShmSegment(name, directory=str(tmp_path), **options)
        else:
            from amfkit.messaging.redis_store import RedisStore

            assert server is not None
            options = {} if records is None else {"log_records": records}
            store = RedisStore(server.url, prefix=name + ":", **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., Any]) -> Any:
    return make_store()


def seqs(items: list[tuple[int, bytes]]) -> list[int]:
    return [seq for seq, _ in items]


# --- logs ------------------------------------------------------------------------------


def test_sequence_numbers_start_at_one_per_log(store):
    assert store.head("a") == 0
    assert [store.append("a", b"x%d" % i) for i in range(3)] == [1, 2, 3]
    assert store.head("a") == 3
    assert store.head("b") == 0
    assert store.append("b", b"y") == 1
    assert store.head("a") == 3 and store.head("b") == 1


def test_read_from_zero_and_by_limit(store):
    for i in range(1, 6):
        store.append("a", b"r%d" % i)
    items, cursor, lost = store.read("a", 0)
    assert items == [(i, b"r%d" % i) for i in range(1, 6)]
    assert (cursor, lost) == (5, 0)
    assert store.read("a", 0, 2) == ([(1, b"r1"), (2, b"r2")], 2, 0)
    assert store.read("a", 2, 2) == ([(3, b"r3"), (4, b"r4")], 4, 0)
    assert store.read("a", 4, 100) == ([(5, b"r5")], 5, 0)
    assert store.read("a", 5) == ([], 5, 0)


def test_read_an_unknown_log(store):
    assert store.read("nothing", 0) == ([], 0, 0)


def test_records_are_bytes_as_given(store):
    records = [b"", bytes(range(256)), b"\x00" * 100, "é€".encode()]
    for record in records:
        store.append("bin", record)
    items, _, _ = store.read("bin", 0)
    assert [record for _, record in items] == records
    assert all(type(record) is bytes for _, record in items)


def test_a_reader_that_fell_behind_learns_how_many_it_lost(make_store):
    store = make_store(records=SMALL)
    for i in range(1, 11):
        store.append("a", b"r%d" % i)
    assert store.head("a") == 10
    # The log keeps its newest SMALL records: 7..10.
    items, cursor, lost = store.read("a", 0)
    assert items == [(i, b"r%d" % i) for i in range(7, 11)]
    assert (cursor, lost) == (10, 6)
    assert store.read("a", 5, 2) == ([(7, b"r7"), (8, b"r8")], 8, 1)
    assert store.read("a", 6) == ([(7, b"r7"), (8, b"r8"), (9, b"r9"), (10, b"r10")], 10, 0)
    assert store.read("a", 8) == ([(9, b"r9"), (10, b"r10")], 10, 0)
    # Caught up: nothing lost, nothing read.
    assert store.read("a", 10) == ([], 10, 0)


def test_a_reader_far_behind_reads_on_from_what_is_left(make_store):
    store = make_store(records=SMALL)
    cursor = 0
    for i in range(1, 101):
        store.append("a", b"r%d" % i)
    got: list[int] = []
    total_lost = 0
    while True:
        items, cursor, lost = store.read("a", cursor, 3)
        total_lost += lost
        got += seqs(items)
        if not items:
            break
    assert got == list(range(97, 101))
    assert total_lost == 96
    assert cursor == 100


def test_a_cursor_past_the_head_reads_on_from_the_head(store):
    for i in range(3):
        store.append("a", b"%d" % i)
    assert store.read("a", 10) == ([], 3, 0)
    assert store.append("a", b"new") == 4
    assert store.read("a", 3) == ([(4, b"new")], 4, 0)
    assert store.read("empty", 7) == ([], 0, 0)


def test_logs_lists_the_logs_appended_to(store):
    assert store.logs() == []
    store.append("a", b"1")
    store.append("b:c", b"2")
    store.append("a", b"3")
    store.append("d*[x]?", b"4")
    assert sorted(store.logs()) == ["a", "b:c", "d*[x]?"]


def test_appends_from_threads_get_distinct_consecutive_numbers(store):
    per_thread, threads = 50, 4
    numbers: list[int] = []
    lock = threading.Lock()

    def work(t: int) -> None:
        mine = [store.append("shared", b"%d-%d" % (t, i)) for i in range(per_thread)]
        with lock:
            numbers.extend(mine)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(numbers) == list(range(1, per_thread * threads + 1))
    assert store.head("shared") == per_thread * threads


# --- the bell --------------------------------------------------------------------------


def test_the_bell_rings_on_append(store):
    before = store.bell()
    store.append("a", b"1")
    after = store.bell()
    assert after != before
    store.append("b", b"2")
    assert store.bell() not in (before, after)


def test_wait_returns_at_once_when_the_count_differs(store):
    bell = store.bell()
    store.append("a", b"1")
    start = time.monotonic()
    assert store.wait(bell, 5.0) == store.bell()
    assert time.monotonic() - start < 1.0


def test_wait_wakes_when_another_thread_appends(store):
    bell = store.bell()
    timer = threading.Timer(0.2, store.append, args=("a", b"wake"))
    timer.start()
    try:
        start = time.monotonic()
        count = store.wait(bell, 10.0)
        elapsed = time.monotonic() - start
    finally:
        timer.join()
    assert count != bell
    assert count == store.bell()
    assert 0.1 < elapsed < 2.0


def test_wait_returns_at_its_timeout_when_nothing_rings(store):
    bell = store.bell()
    start = time.monotonic()
    assert store.wait(bell, 0.3) == bell
    elapsed = time.monotonic() - start
    assert 0.25 <= elapsed < 2.0
    assert store.wait(bell, 0) == bell


def test_many_waiters_all_wake_on_one_append(store):
    bell = store.bell()
    results: list[tuple[int, float]] = []
    lock = threading.Lock()

    def waiter() -> None:
        start = time.monotonic()
        count = store.wait(bell, 10.0)
        with lock:
            results.append((count, time.monotonic() - start))

    threads = [threading.Thread(target=waiter) for _ in range(5)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    store.append("a", b"wake")
    for t in threads:
        t.join(15)
    assert len(results) == 5
    for count, elapsed in results:
        assert count != bell
        assert elapsed < 3.0


def test_wait_uses_no_cpu_while_it_waits(store):
    bell = store.bell()
    measured: list[float] = []

    def waiter() -> None:
        start = time.thread_time()
        store.wait(bell, 0.5)
        measured.append(time.thread_time() - start)

    t = threading.Thread(target=waiter)
    t.start()
    t.join(10)
    assert len(measured) == 1
    assert measured[0] < 0.05, f"a 0.5 s wait took {measured[0]:.3f} s of CPU"


# --- key-value -------------------------------------------------------------------------


def test_get_and_put(store):
    assert store.get("k") is None
    store.put("k", b"v1")
    assert store.get("k") == b"v1"
    store.put("k", b"v2")
    assert store.get("k") == b"v2"
    store.put("empty", b"")
    assert store.get("empty") == b""
    store.put("t", b"with ttl", ttl=60)
    assert store.get("t") == b"with ttl"


def test_compare_and_set(store):
    # absent -> value
    assert store.cas("k", None, b"one") is True
    assert store.get("k") == b"one"
    # absent expected, but present: refused
    assert store.cas("k", None, b"other") is False
    assert store.get("k") == b"one"
    # value -> value
    assert store.cas("k", b"one", b"two", ttl=60) is True
    assert store.get("k") == b"two"
    # a wrong expected value: refused, unchanged
    assert store.cas("k", b"one", b"three") is False
    assert store.cas("k", b"tw", b"three") is False
    assert store.cas("k", b"two\x00", b"three") is False
    assert store.get("k") == b"two"
    # value -> None (delete)
    assert store.cas("k", b"two", None) is True
    assert store.get("k") is None
    # a value expected, none there: refused
    assert store.cas("k", b"two", b"again") is False
    assert store.get("k") is None


def test_compare_and_set_from_threads_lets_one_win_each_round(store):
    store.put("counter", b"0")
    wins = [0] * 4

    def work(t: int) -> None:
        done = 0
        while done < 25:
            raw = store.get("counter")
            assert raw is not None
            if store.cas("counter", raw, b"%d" % (int(raw) + 1)):
                done += 1
        wins[t] = done

    workers = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert store.get("counter") == b"100"


def test_delete(store):
    assert store.delete("k") is False
    store.put("k", b"v")
    assert store.delete("k") is True
    assert store.get("k") is None
    assert store.delete("k") is False


def test_keys_by_prefix_with_glob_characters(store):
    names = ["a*1", "a?2", "a[3]", "ab", "b*", "c\\d", "a]", "a^"]
    for name in names:
        store.put(name, b"x")
    assert sorted(store.keys()) == sorted(names)
    assert sorted(store.keys("")) == sorted(names)
    assert sorted(store.keys("a")) == sorted(["a*1", "a?2", "a[3]", "ab", "a]", "a^"])
    assert store.keys("a*") == ["a*1"]
    assert store.keys("a?") == ["a?2"]
    assert store.keys("a[") == ["a[3]"]
    assert store.keys("a[3") == ["a[3]"]
    assert store.keys("a]") == ["a]"]
    assert store.keys("a^") == ["a^"]
    assert store.keys("b*") == ["b*"]
    assert store.keys("c\\") == ["c\\d"]
    assert store.keys("*") == []
    assert store.keys("?") == []
    assert store.keys("[ab]") == []
    store.delete("ab")
    assert sorted(store.keys("a")) == sorted(["a*1", "a?2", "a[3]", "a]", "a^"])


def test_keys_and_logs_are_apart(store):
    store.put("k", b"v")
    store.append("log", b"r")
    assert store.keys() == ["k"]
    assert store.logs() == ["log"]


def test_a_value_too_large_is_refused(store):
    with pytest.raises(StoreError):
        store.put("big", b"x" * (2 << 20))
    with pytest.raises(StoreError):
        store.cas("big", None, b"x" * (2 << 20))
    assert store.get("big") is None


def test_close_is_idempotent(make_store):
    store = make_store()
    store.append("a", b"1")
    store.close()
    store.close()
