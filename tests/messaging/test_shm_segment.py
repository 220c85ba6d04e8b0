"""`amfkit._amfkit.ShmSegment`, the shared-memory store behind `shm://NAME`, from Python:
the LogStore protocol method for method, errors (ValueError for arguments, StoreError
for the shared state), garbage in the memory, cleanup, stale segments, killed processes,
the bell across processes, and a ping-pong round trip against multiprocessing.Queue.

Every segment lives in its own temporary directory. The Rust side has the thorough
tests (crates/amfkit-core/tests/shm.rs)."""

from __future__ import annotations

import inspect
import itertools
import mmap
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from amfkit._amfkit import ShmSegment, StoreError
from amfkit.messaging.logstore import LogStore

_names = itertools.count()
fork = multiprocessing.get_context("fork")


def name() -> str:
    return f"py{os.getpid()}-{next(_names)}"


@pytest.fixture
def seg(tmp_path: Path) -> Any:
    s = ShmSegment(name(), directory=str(tmp_path), ring_bytes=1 << 16, ring_records=64, kv_slots=32, kv_value_bytes=64)
    yield s
    s.close()


def scribble(path: str, find: bytes, replace: bytes) -> None:
    """Overwrite the first occurrence of `find` in the segment's file."""
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        at = m.find(find)
        assert at >= 0
        m[at : at + len(replace)] = replace


def test_it_has_every_logstore_method() -> None:
    for method, proto in inspect.getmembers(LogStore, inspect.isfunction):
        if method.startswith("_"):
            continue
        ours = getattr(ShmSegment, method)
        want = [p for p in inspect.signature(proto).parameters if p != "self"]
        have = list(inspect.signature(ours).parameters)
        assert have[1 : len(want) + 1] == want, method


def test_records(seg: Any) -> None:
    assert seg.head("a") == 0 and seg.read("a", 0) == ([], 0, 0)
    assert [seg.append("a", r) for r in (b"", b"x", b"y" * (1 << 14))] == [1, 2, 3]
    assert seg.read("a", 0) == ([(1, b""), (2, b"x"), (3, b"y" * (1 << 14))], 3, 0)
    assert seg.read("a", 1, 1) == ([(2, b"x")], 2, 0)
    assert seg.read("a", 3) == ([], 3, 0)
    assert seg.read("a", 50) == ([], 3, 0), "a cursor from the future reads as the head"
    with pytest.raises(StoreError, match="larger than a log may hold"):
        seg.append("a", b"z" * ((1 << 14) + 1))
    for i in range(100):
        seg.append("b", b"%d" % i)
    items, cursor, lost = seg.read("b", 10, 5)
    assert (cursor, lost) == (41, 26) and [s for s, _ in items] == [37, 38, 39, 40, 41]
    assert items[0][1] == b"36"
    assert sorted(seg.logs()) == ["a", "b"]
    stats = seg.stats()
    assert stats["logs"] == 2 and stats["records"] == 3 + 64 and stats["processes"] == 1
    assert stats["bell"] == seg.bell() >= 103
    with pytest.raises(ValueError):
        seg.append("", b"x")
    with pytest.raises(ValueError):
        seg.read("a", -1)
    with pytest.raises(TypeError):
        seg.append("a", "not bytes")


def test_key_value(seg: Any) -> None:
    assert seg.get("k") is None
    seg.put("k", b"v", ttl=5.0)
    assert seg.get("k") == b"v"
    assert seg.cas("k", b"v", b"w") and not seg.cas("k", b"v", b"x")
    assert seg.cas("n", None, b"1") and not seg.cas("n", None, b"2")
    assert seg.cas("n", b"1", None) and seg.get("n") is None
    assert sorted(seg.keys()) == ["k"] and seg.keys("x") == []
    assert seg.delete("k") and not seg.delete("k")
    with pytest.raises(StoreError, match="larger than kv_value_bytes"):
        seg.put("k", b"x" * 65)
    with pytest.raises(ValueError):
        seg.put("k" * 201, b"")
    for i in range(32):
        seg.put(f"key{i}", b"%d" % i)
    with pytest.raises(StoreError, match=r"the key-value table is full \(32 slots\)"):
        seg.put("more", b"")
    assert seg.stats()["kv_used"] == 32


def test_arguments(tmp_path: Path) -> None:
    for bad in ["", "a/b", "../etc", "n" * 65]:
        with pytest.raises(ValueError):
            ShmSegment(bad, directory=str(tmp_path))
    with pytest.raises(ValueError):
        ShmSegment(name(), directory=str(tmp_path), ring_bytes=-1)
    with pytest.raises(ValueError):
        ShmSegment(name(), directory=str(tmp_path), ring_records=0)
    with ShmSegment(name(), directory=str(tmp_path)) as s:
        with pytest.raises(ValueError):
            s.wait(s.bell(), float("nan"))
        assert s.path == str(tmp_path / f"amfkit.{s.name}")
        assert oct(os.stat(s.path).st_mode & 0o777) == "0o600"
    assert os.listdir(tmp_path) == []


def test_close_and_cleanup(tmp_path: Path) -> None:
    n = name()
    a = ShmSegment(n, directory=str(tmp_path))
    b = ShmSegment(n, directory=str(tmp_path), ring_records=16)
    assert b.stats()["ring_records"] == 8192, "joiners adopt the creator's layout"
    a.append("x", b"1")
    assert b.read("x", 0) == ([(1, b"1")], 1, 0)
    a.close()
    a.close()
    with pytest.raises(StoreError, match="closed"):
        a.append("x", b"2")
    assert os.path.exists(b.path)
    b.close()
    assert not os.path.exists(b.path)


def test_two_apps(tmp_path: Path) -> None:
    n = name()
    with ShmSegment(n, directory=str(tmp_path), app="alpha"):
        with pytest.raises(StoreError, match="in use by another application"):
            ShmSegment(n, directory=str(tmp_path), app="beta")


def test_garbage_is_a_store_error(tmp_path: Path) -> None:
    n = name()
    with ShmSegment(n, directory=str(tmp_path)) as s:
        s.append("a", b"RECORD-PAYLOAD")
        s.put("k", b"VALUE-BYTES")
        scribble(s.path, b"RECORD-PAYLOAD", b"XX")
        with pytest.raises(StoreError, match="log 'a' record 1 is corrupted"):
            s.read("a", 0)
        scribble(s.path, b"VALUE-BYTES", b"YY")
        with pytest.raises(StoreError, match="corrupted"):
            s.get("k")
        scribble(s.path, b"AMFKSHM1", b"GARBAGE!")
        with pytest.raises(StoreError, match="not an amfkit shared-memory segment") as e:
            ShmSegment(n, directory=str(tmp_path))
        assert s.path in str(e.value)


def _leave(path: str, n: str) -> None:
    s = ShmSegment(n, directory=path)
    s.append("left", b"behind")
    os._exit(0)  # no close: as if killed


def test_stale_segments(tmp_path: Path) -> None:
    n = name()
    p = fork.Process(target=_leave, args=(str(tmp_path), n))
    p.start()
    p.join()
    path = tmp_path / f"amfkit.{n}"
    assert path.exists()
    assert ShmSegment.remove_stale(n, directory=str(tmp_path))
    assert not path.exists() and not ShmSegment.remove_stale(n, directory=str(tmp_path))
    p = fork.Process(target=_leave, args=(str(tmp_path), n))
    p.start()
    p.join()
    with ShmSegment(n, directory=str(tmp_path)) as s:
        assert s.logs() == [], "re-initialised: its processes are dead"
        assert not ShmSegment.remove_stale(n, directory=str(tmp_path))


def _append_forever(path: str, n: str) -> None:
    s = ShmSegment(n, directory=path)
    while True:
        s.append("busy", b"x" * 100)
        s.put("k", b"v" * 50)


def test_killed_writers(tmp_path: Path) -> None:
    n = name()
    with ShmSegment(n, directory=str(tmp_path)) as s:
        for _ in range(5):
            p = fork.Process(target=_append_forever, args=(str(tmp_path), n))
            p.start()
            start = s.head("busy")
            while s.head("busy") < start + 1000:
                time.sleep(0.001)
            os.kill(p.pid, signal.SIGKILL)
            p.join()
            t = time.monotonic()
            s.append("busy", b"after")
            assert s.get("k") in (b"v" * 50, None)  # None: killed half-way through a put
            s.put("k", b"mine")
            assert s.get("k") == b"mine"
            assert time.monotonic() - t < 1.0
            items, cursor, lost = s.read("busy", s.head("busy") - 1)
            assert items == [(cursor, b"after")]
            s.delete("k")
        assert s.stats()["processes"] == 1


def _ping_later(path: str, n: str) -> None:
    s = ShmSegment(n, directory=path)
    time.sleep(0.2)
    s.append("ping", b"hi")
    s.close()


def test_wait(tmp_path: Path) -> None:
    n = name()
    with ShmSegment(n, directory=str(tmp_path)) as s:
        b = s.bell()
        assert s.wait(b + 1, 10.0) == b, "a changed bell returns at once"
        # an idle waiter sleeps, and lets other threads run
        ticks = 0
        stop = threading.Event()

        def tick() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1

        other = threading.Thread(target=tick)
        other.start()
        cpu, t = time.thread_time(), time.monotonic()
        assert s.wait(b, 0.5) == b
        cpu, elapsed = time.thread_time() - cpu, time.monotonic() - t
        stop.set()
        other.join()
        assert 0.5 <= elapsed < 1.0
        assert cpu < 0.05, f"the waiter used {cpu:.3f} s of CPU"
        assert ticks > 1000, "wait holds the GIL"
        # another process's append wakes it
        p = fork.Process(target=_ping_later, args=(str(tmp_path), n))
        p.start()
        t = time.monotonic()
        while s.head("ping") == 0 and time.monotonic() - t < 10:
            b = s.wait(b, 10.0)
        assert s.head("ping") == 1 and 0.15 < time.monotonic() - t < 5
        p.join()


def _pong(path: str, n: str, rounds: int) -> None:
    s = ShmSegment(n, directory=path)
    cursor = 0
    for _ in range(rounds):
        while True:
            b = s.bell()
            items, c, _ = s.read("ping", cursor, 1)
            if items:
                cursor = c
                break
            s.wait(b, 5.0)
        s.append("pong", b"x")
    s.close()


def test_ping_pong_round_trip(tmp_path: Path) -> None:
    n, rounds = name(), 5000
    with ShmSegment(n, directory=str(tmp_path)) as s:
        p = fork.Process(target=_pong, args=(str(tmp_path), n, rounds))
        p.start()
        cursor = 0
        t = time.perf_counter()
        for _ in range(rounds):
            s.append("ping", b"x")
            while True:
                b = s.bell()
                items, c, _ = s.read("pong", cursor, 1)
                if items:
                    cursor = c
                    break
                s.wait(b, 5.0)
        per = (time.perf_counter() - t) / rounds
        p.join()
        assert p.exitcode == 0
        print(f"shm ping-pong: {per * 1e6:.1f} us per round trip")
        assert per < 1e-3  # typically 2-5 us; multiprocessing.Queue is ~50 us
