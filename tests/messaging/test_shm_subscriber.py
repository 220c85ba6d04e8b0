"""The shared-memory broker's native subscriber and publish (`shm://`, shm_subscriber.py,
crates/amfkit-py/src/shm_subscriber.rs and shm_record.rs): the records the native publish
writes are the broker's own, and a subscriber gets the same `Message`s in order, filtered
by subtopic and selector, is told what it lost, refuses hostile records without losing
the next, wakes on close and on signals, survives a killed subscriber process, and
serves many subscribers in many processes."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from amfkit import amf3
from amfkit._amfkit import ShmSegment, StoreError, shm_publish
from amfkit.messaging import Broker, Message
from amfkit.messaging.broker import now_ms
from amfkit.messaging.shared import LOG, SharedBroker, decode_message, encode_message
from amfkit.messaging.shm_subscriber import ShmSubscriber

_n = itertools.count()


@pytest.fixture
def url(tmp_path: Any) -> str:
    return f"shm://n{os.getpid()}-{next(_n)}?directory={tmp_path}"


@pytest.fixture
def broker(url: str) -> Iterator[SharedBroker]:
    b = Broker.open(url)
    assert isinstance(b, SharedBroker)
    yield b
    b.shutdown()


def _records(store: Any, log: str) -> list[bytes]:
    items, _, _ = store.read(log, 0, 100_000)
    return [raw for _, raw in items]


BODIES = ["1", "prices", ["prices", "prices", {"a": "prices"}], {"bid": 1.5, "tags": ["x"]}, None, True, 7, -(2**40), 2**70, 2.5, b"\x00\x01", "é" * 300, [{}, {}]]


def test_the_native_publish_writes_the_broker_s_own_records(broker: SharedBroker) -> None:
    for body in BODIES:
        broker.publish("prices", body)
    records = _records(broker.store, LOG + "prices")
    assert len(records) == len(BODIES)
    ids = set()
    for body, raw in zip(BODIES, records):
        message = decode_message(raw)
        assert encode_message(message) == raw  # byte for byte what the Python path writes
        assert (message.destination, message.body, message.headers, message.subtopics) == ("prices", body, {}, ())
        assert (message.time_to_live, message.correlation_id) == (0, None)
        assert abs(message.timestamp - time.time() * 1000) < 60_000
        assert len(message.message_id) == 36 and message.message_id.upper() == message.message_id and message.message_id[14] == "4"
        ids.add(message.message_id)
    assert len(ids) == len(BODIES)
    with pytest.raises(TypeError, match="non-empty"):
        broker.publish("", 1)
    with pytest.raises(TypeError):  # what the Python encoder refuses, refused the same way
        broker.publish("prices", object())
    assert len(_records(broker.store, LOG + "prices")) == len(BODIES)  # nothing half-written


def test_messages_come_in_order_as_the_same_message_type(broker: SharedBroker) -> None:
    sub = broker.subscribe("prices")
    assert isinstance(sub, ShmSubscriber) and sub.destination == "prices" and sub.subscription.subtopic is None
    assert sub.receive(0) is None and sub.receive(0.01) is None
    for i in range(500):
        if i % 5 == 0:  # the Python path (headers): the same log, in order
            broker.publish("prices", {"i": i}, headers={"n": i})
        else:
            broker.publish("prices", {"i": i})
    got = [sub.receive(1.0) for _ in range(500)]
    assert [m.body["i"] for m in got] == list(range(500))
    records = _records(broker.store, LOG + "prices")
    for message, raw in zip(got, records):
        assert type(message) is Message and message == decode_message(raw)
    assert got[5].headers == {"n": 5} and got[6].headers == {}
    with pytest.raises(Exception, match="cannot assign"):
        got[0].body = 1  # frozen, as every Message
    assert sub.receive(0) is None and sub.dropped == 0


def test_a_subscriber_that_falls_behind_is_told_how_many_it_lost(url: str) -> None:
    broker = Broker.open(url + "&ring_records=16")
    try:
        sub = broker.subscribe("prices")
        for i in range(40):
            broker.publish("prices", i)
        assert [sub.receive(0).body for _ in range(16)] == list(range(24, 40))
        assert sub.dropped == 24 and sub.receive(0) is None
        for i in range(20):  # again, while it reads
            broker.publish("prices", i)
        assert sub.receive(0).body == 4 and sub.dropped == 28
    finally:
        broker.shutdown()


def test_filtering_by_subtopic_selector_and_time_to_live(broker: SharedBroker) -> None:
    plain = broker.subscribe("prices")
    fx = broker.subscribe("prices", subtopic="fx.*")
    eur = broker.subscribe("prices", subtopic="fx.eur")
    abc = broker.subscribe("prices", subtopic="fx.*", selector="symbol = 'ABC' AND bid > 1")
    sends = [
        ("none", None, {}),
        ("fx.eur", "fx.eur", {"symbol": "ABC", "bid": 2}),
        ("fx.eur.spot", "fx.eur.spot", {"symbol": "ABC", "bid": 0.5}),
        ("fx", "fx", {"symbol": "ABC", "bid": 2}),
        ("fx.gbp", "fx.gbp", {"symbol": "XYZ", "bid": 2}),
        ("eq.eur", "eq.eur", {"symbol": "ABC", "bid": 2}),
    ]
    for body, subtopic, headers in sends:
        broker.publish("prices", body, subtopic=subtopic, headers=headers)
    broker.publish(Message("prices", "expired", timestamp=now_ms() - 10_000, time_to_live=1_000))
    broker.publish("prices", "alive", ttl=60)

    def drain(sub: Any) -> list[Any]:
        out = []
        while (m := sub.receive(0)) is not None:
            out.append(m.body)
        return out

    assert drain(plain) == ["none", "alive"]
    assert drain(fx) == ["fx.eur", "fx.eur.spot", "fx.gbp"]
    assert drain(eur) == ["fx.eur"]
    assert drain(abc) == ["fx.eur"]


def test_a_selector_is_called_per_candidate_and_no_selector_calls_nothing(broker: SharedBroker) -> None:
    calls: list[Any] = []

    def selector(headers: Any) -> bool:
        calls.append(dict(headers))
        return headers.get("k") == 2

    native = ShmSubscriber.__mro__[1]  # the Rust class under the Python one
    sub = native(broker.store, LOG + "q", "q", Message, None, selector)
    everything = native(broker.store, LOG + "q", "q", Message)
    for k in range(4):
        broker.publish("q", k, headers={"k": k})
    broker.publish("q", "with a subtopic", subtopic="a", headers={"k": 2})  # filtered before the selector
    assert sub.receive(0).body == 2 and sub.receive(0) is None
    assert calls == [{"k": k} for k in range(4)]
    assert [everything.receive(0).body for _ in range(4)] == [0, 1, 2, 3] and everything.receive(0) is None

    def boom(headers: Any) -> bool:
        raise ZeroDivisionError("selector failed")

    failing = native(broker.store, LOG + "q", "q", Message, None, boom)
    broker.publish("q", "a", headers={"k": 1})
    broker.publish("q", "b", headers={"k": 1})
    with pytest.raises(ZeroDivisionError):
        failing.receive(0)
    assert failing.cursor == broker.store.head(LOG + "q") - 1  # past the one that failed, not the next


HOSTILE = [
    b"garbage",
    amf3.encode(["prices", "short"]),  # not 8 fields
    amf3.encode({"not": "an array"}),
    b"\x09\x11\x01" + b"\x09\x03\x01" * 200,  # nested past the decoder's depth limit
    b"\x09\x11\x01\x06\xff\xff\xff\xff",  # a string longer than the record
    amf3.encode(["prices", 1, {}, "not subtopics", "id", 1, 0, None]),
    amf3.encode(["prices", 1, {}, [], "id", "not a number", 0, None]),
]


@pytest.mark.parametrize("record", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_record_is_refused_and_the_next_is_received(broker: SharedBroker, record: bytes) -> None:
    sub = broker.subscribe("prices")
    broker.store.append(LOG + "prices", record)
    broker.publish("prices", "after")
    t = time.monotonic()
    with pytest.raises(StoreError, match="a log record is not a message"):
        sub.receive(1.0)
    assert time.monotonic() - t < 1.0  # refused at once, not after the timeout
    assert sub.receive(1.0).body == "after"  # nothing else lost


def test_close_from_another_thread_ends_a_waiting_receive(broker: SharedBroker) -> None:
    sub = broker.subscribe("prices")
    result: list[Any] = []
    waiter = threading.Thread(target=lambda: result.append(sub.receive(None)))
    waiter.start()
    deadline = time.monotonic() + 20
    while broker.store.stats()["waiters"] < 1:  # asleep on the segment's bell
        assert time.monotonic() < deadline
        time.sleep(0.001)
    t = time.monotonic()
    sub.close()
    waiter.join(10)
    assert not waiter.is_alive() and result == [None] and time.monotonic() - t < 5
    assert sub.closed and sub.receive(0) is None
    broker.publish("prices", 1)
    assert sub.receive(0) is None  # closed for good


def test_receive_from_two_threads_at_once_is_refused(broker: SharedBroker) -> None:
    sub = broker.subscribe("prices")
    waiter = threading.Thread(target=lambda: sub.receive(30.0))
    waiter.start()
    deadline = time.monotonic() + 20
    while broker.store.stats()["waiters"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    with pytest.raises(RuntimeError, match="another thread"):
        sub.receive(0)
    broker.publish("prices", "x")
    waiter.join(10)
    assert not waiter.is_alive()


def test_a_signal_reaches_python_while_receive_waits(broker: SharedBroker) -> None:
    sub = broker.subscribe("prices")

    class Alarm(Exception):
        pass

    def ring(signum: int, frame: Any) -> None:
        raise Alarm

    old = signal.signal(signal.SIGALRM, ring)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        t = time.monotonic()
        with pytest.raises(Alarm):
            sub.receive(None)
        assert time.monotonic() - t < 0.9  # at the signal, not at the next slice of the wait
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_areceive(broker: SharedBroker) -> None:
    sub = broker.subscribe("prices", subtopic="fx.*")

    async def main() -> Any:
        assert await sub.areceive(0.05) is None
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, lambda: broker.publish("prices", "no subtopic"))
        loop.call_later(0.1, lambda: broker.publish("prices", "fx", subtopic="fx.eur"))
        return await sub.areceive(10.0)

    assert asyncio.run(main()).body == "fx"


WAITER = """
import sys
from amfkit.messaging import Broker
broker = Broker.open(sys.argv[1])
sub = broker.subscribe("prices")
print("subscribed", flush=True)
sub.receive(None)
"""


def test_a_subscriber_process_killed_while_waiting(url: str) -> None:
    broker = Broker.open(url)
    try:
        kid = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WAITER), url], stdout=subprocess.PIPE, text=True)
        assert kid.stdout is not None and kid.stdout.readline() == "subscribed\n"
        deadline = time.monotonic() + 20
        while broker.store.stats()["waiters"] < 1:  # the child asleep on the bell
            assert time.monotonic() < deadline, "the child never slept"
            time.sleep(0.001)
        kid.kill()
        kid.wait(10)
        kid.stdout.close()
        sub = broker.subscribe("prices")
        for i in range(100):
            broker.publish("prices", i)
        assert [sub.receive(1.0).body for _ in range(100)] == list(range(100))
        # The dead sleeper is forgotten when the next process opens the segment.
        assert broker.store.stats()["waiters"] == 1
        parts = urlsplit(url)
        ShmSegment(parts.netloc, directory=parse_qs(parts.query)["directory"][0]).close()
        assert broker.store.stats()["waiters"] == 0
    finally:
        broker.shutdown()


READER = """
import sys
from amfkit.messaging import Broker
broker = Broker.open(sys.argv[1])
subs = [broker.subscribe("prices", subtopic="t.*" if i % 2 else None) for i in range(int(sys.argv[2]))]
print("subscribed", flush=True)
n = int(sys.argv[3])
for i, sub in enumerate(subs):
    want = n // 2
    got = [sub.receive(30.0) for _ in range(want)]
    bodies = [m.body for m in got]
    kind = "t" if i % 2 else "plain"
    assert bodies == [[kind, j] for j in range(want)], (i, bodies[:5])
    assert sub.dropped == 0 and sub.receive(0) is None
print("ok", flush=True)
"""


def test_many_subscribers_in_many_processes(url: str) -> None:
    broker = Broker.open(url)
    try:
        kids = [
            subprocess.Popen([sys.executable, "-c", textwrap.dedent(READER), url, "10", "1000"], stdout=subprocess.PIPE, text=True)
            for _ in range(4)
        ]
        for kid in kids:
            assert kid.stdout is not None and kid.stdout.readline() == "subscribed\n"
        here = [broker.subscribe("prices") for _ in range(20)]
        for j in range(500):
            broker.publish("prices", ["plain", j])
            broker.publish("prices", ["t", j], subtopic="t.x")
        for sub in here:
            assert [sub.receive(10.0).body for _ in range(500)] == [["plain", j] for j in range(500)]
        for kid in kids:
            out, _ = kid.communicate(timeout=120)
            assert kid.returncode == 0 and out == "ok\n"
    finally:
        broker.shutdown()
