"""The brokers of many processes (`shm://`, `redis://`) against the in-process one: the
same routing, bounds and waits, whichever broker object serves the client; the
`Broker.open` / `publish` / `subscribe` / `receive` API of processes outside a gateway;
a publisher in another process; a reader that falls behind; sessions shared by stores.

Every test runs on a real shared-memory segment (in a temporary directory) and on a real
Redis server (tests/support/redis_server.py); the routing tests also on `memory://`."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from amfkit.messaging import Broker, DuplicateSubscription, MemoryBroker, Message, SelectorError, Subscription
from amfkit.messaging.broker import now_ms
from amfkit.messaging.shared import SharedBroker, open_store, release_store
from amfkit.remoting.shared_sessions import SharedSessionStore

from messaging_util import drained, msg  # tests/support

_names = itertools.count()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def store_url(kind: str, request: pytest.FixtureRequest, tmp_path: Any, log_records: int | None = None) -> str:
    """A fresh shared store's URL: shm in a temporary directory, or a Redis key prefix;
    `log_records` bounds its logs."""
    n = next(_names)
    if kind == "shm":
        url = f"shm://t{os.getpid()}-{n}?directory={tmp_path}"
        return url if log_records is None else f"{url}&ring_records={log_records}"
    url = f"{request.getfixturevalue('redis_server').url}?prefix=t{os.getpid()}-{n}:"
    return url if log_records is None else f"{url}&log_records={log_records}"


@pytest.fixture
def shared_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """A shared store's URL; "memory" stands for itself (the in-process broker)."""
    return "memory" if request.param == "memory" else store_url(request.param, request, tmp_path)


@pytest.fixture
def open_broker(shared_url: str) -> Iterator[Any]:
    """Opens brokers on one shared store (several: as several workers would), closed after."""
    opened: list[Broker] = []

    def make(**options: Any) -> Broker:
        broker = Broker.open(shared_url, **options)
        opened.append(broker)
        return broker

    yield make
    for broker in opened:
        run(broker.close())


SHARED = pytest.mark.parametrize("shared_url", ["shm", "redis"], indirect=True)
ALL = pytest.mark.parametrize("shared_url", ["memory", "shm", "redis"], indirect=True)


@pytest.fixture
def any_broker(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """Makes brokers of one kind: memory (one object for all), shm or redis (a new
    object each time, on one store: as the workers of one server)."""
    kind = request.param
    opened: list[Broker] = []
    if kind == "memory":
        memory = MemoryBroker()

        def make(**options: Any) -> Broker:
            return memory if not options else MemoryBroker(**options)

        yield make
        return
    url = store_url(kind, request, tmp_path, log_records=64)

    def make_shared(**options: Any) -> Broker:
        broker = Broker.open(url, **options)
        opened.append(broker)
        return broker

    yield make_shared
    for broker in opened:
        run(broker.close())


KINDS = pytest.mark.parametrize("any_broker", ["memory", "shm", "redis"], indirect=True)


# --- routing: the same answers from every broker -------------------------------------------


@KINDS
def test_fan_out_one_copy_per_consumer_whichever_worker_drains(any_broker: Any) -> None:
    a, b = any_broker(), any_broker()
    for i in range(3):
        run(a.add_subscription(f"client-{i}", f"consumer-{i}", "prices"))
    run(b.add_subscription("client-0", "consumer-0b", "prices"))  # a second Consumer, through B
    run(a.add_subscription("client-9", "consumer-9", "chat"))
    a.publish(msg(body="tick"))
    assert drained(b, "client-0") == [("consumer-0", "tick"), ("consumer-0b", "tick")]
    assert drained(a, "client-1") == [("consumer-1", "tick")]
    assert drained(b, "client-9") == []
    assert drained(a, "client-1") == [] and drained(b, "client-0") == []  # drained means gone


@KINDS
@pytest.mark.parametrize(
    "pattern, subtopic, delivered",
    [("chat.fx", "chat.fx", True), ("chat.fx", "chat.fx.eur", False), ("chat.*", "chat.fx.eur", True), ("chat.*", "chat", False), ("*", "news", True)],
)
def test_subtopic_patterns(any_broker: Any, pattern: str, subtopic: str, delivered: bool) -> None:
    broker = any_broker()
    run(broker.add_subscription("c", "k", "chat", Subscription(pattern)))
    broker.publish(msg("chat", 1, (subtopic,)))
    broker.publish(msg("chat", 2))  # no subtopic: never for a subtopic subscription
    assert drained(broker, "c") == ([("k", 1)] if delivered else [])


@KINDS
@pytest.mark.parametrize("selector, headers, delivered", [("a = 1", {"a": 1}, True), ("a = 1", {"a": 2}, False), ("s LIKE 'A%'", {"s": "ABC"}, True)])
def test_selectors_filter_on_headers(any_broker: Any, selector: str, headers: dict[str, Any], delivered: bool) -> None:
    broker = any_broker()
    run(broker.add_subscription("c", "k", "prices", Subscription(None, selector)))
    broker.publish(msg(body="m", **headers))
    assert drained(broker, "c") == ([("k", "m")] if delivered else [])


@KINDS
def test_a_bad_selector_is_refused_and_a_consumer_id_belongs_to_one_client(any_broker: Any) -> None:
    a, b = any_broker(), any_broker()
    with pytest.raises(SelectorError):
        run(a.add_subscription("c", "k", "prices", Subscription(None, "prop1 = ")))
    run(a.add_subscription("c", "k", "prices"))
    with pytest.raises(DuplicateSubscription):
        run(b.add_subscription("other", "k", "prices"))
    assert run(b.consumer("k")) == ("c", "prices")


@KINDS
def test_expired_messages_are_not_delivered(any_broker: Any) -> None:
    broker = any_broker()
    run(broker.add_subscription("c", "k", "prices"))
    broker.publish(Message("prices", "old", {}, (), timestamp=now_ms() - 10_000, time_to_live=1000))
    broker.publish(Message("prices", "new", {}, (), time_to_live=60_000))
    assert drained(broker, "c") == [("k", "new")]


@KINDS
def test_a_full_queue_drops_its_oldest_and_says_how_many(any_broker: Any) -> None:
    broker = any_broker(queue_size=3)
    run(broker.add_subscription("c", "k", "prices"))
    for i in range(5):
        broker.publish(msg(body=i))
    batch = run(broker.receive("c"))
    assert [d.message.body for d in batch.deliveries] == [2, 3, 4]
    assert batch.dropped == {"k": 2}


@KINDS
def test_receive_for_one_consumer_and_with_a_limit_keeps_the_rest_in_order(any_broker: Any) -> None:
    a, b = any_broker(), any_broker()
    run(a.add_subscription("c", "x", "prices"))
    run(a.add_subscription("c", "y", "chat"))
    for i in range(3):
        a.publish(msg("prices", f"p{i}"))
        a.publish(msg("chat", f"c{i}"))
    assert drained(b, "c", consumer_id="y") == [("y", "c0"), ("y", "c1"), ("y", "c2")]
    assert drained(a, "c", limit=2) == [("x", "p0"), ("x", "p1")]
    assert drained(b, "c") == [("x", "p2")]


@KINDS
def test_unknown_unsubscribed_and_disconnected_clients_receive_none(any_broker: Any) -> None:
    a, b = any_broker(), any_broker()
    assert run(a.receive("nobody")) is None
    run(a.add_subscription("c", "k", "prices"))
    run(a.add_subscription("c", "k", "prices", Subscription("fx")))
    assert run(b.remove_subscription("c", "k", Subscription("fx"))) is True
    assert run(b.remove_subscription("c", "k", Subscription("fx"))) is False
    assert drained(a, "c") == []
    assert run(b.remove_subscription("c", "k")) is True
    assert run(a.receive("c")) is None and run(a.consumer("k")) is None
    run(a.add_subscription("d", "k2", "prices"))
    run(b.disconnect("d"))
    assert run(a.receive("d")) is None


@KINDS
def test_a_consumer_moving_to_another_destination_leaves_the_first(any_broker: Any) -> None:
    broker = any_broker()
    run(broker.add_subscription("c", "k", "prices"))
    run(broker.add_subscription("c", "k", "chat"))
    broker.publish(msg("prices", "p"))
    broker.publish(msg("chat", "c"))
    assert drained(broker, "c") == [("k", "c")]
    assert run(broker.consumer("k")) == ("c", "chat")


# --- waiting ------------------------------------------------------------------------------


@KINDS
def test_a_publish_through_another_broker_object_wakes_a_waiter(any_broker: Any) -> None:
    a, b = any_broker(), any_broker()
    run(a.add_subscription("c", "k", "prices"))

    async def main() -> tuple[bool, float]:
        threading.Timer(0.2, lambda: b.publish(msg(body="late"))).start()
        t0 = time.monotonic()
        woken = await a.wait("c", 5.0)
        return woken, time.monotonic() - t0

    woken, took = run(main())
    assert woken and took < 2.0
    assert drained(a, "c") == [("k", "late")]


@KINDS
def test_wait_times_out_and_answers_at_once_for_unknown_or_ready_clients(any_broker: Any) -> None:
    broker = any_broker()
    assert run(broker.wait("nobody", 1.0)) is False
    run(broker.add_subscription("c", "k", "prices"))
    t0 = time.monotonic()
    assert run(broker.wait("c", 0.3)) is False
    assert 0.25 < time.monotonic() - t0 < 2.0
    broker.publish(msg())
    assert run(broker.wait("c", 5.0)) is True


@SHARED
def test_a_wake_through_another_worker_ends_a_wait(open_broker: Any) -> None:
    a, b = open_broker(), open_broker()
    run(a.add_subscription("c", "k", "prices"))

    async def main() -> float:
        threading.Timer(0.2, lambda: b.wake("c")).start()
        t0 = time.monotonic()
        assert await a.wait("c", 5.0) is False
        return time.monotonic() - t0

    assert run(main()) < 2.0


@SHARED
def test_two_workers_draining_one_client_deliver_each_message_once(open_broker: Any) -> None:
    a, b = open_broker(), open_broker()
    run(a.add_subscription("c", "k", "prices"))
    got: list[Any] = []
    stop = threading.Event()

    def drain(broker: Any) -> None:
        while not stop.is_set():
            batch = broker.drain("c")
            got.extend(d.message.body for d in batch.deliveries)

    threads = [threading.Thread(target=drain, args=(x,)) for x in (a, b)]
    for t in threads:
        t.start()
    for i in range(300):
        a.publish(msg(body=i))
    deadline = time.monotonic() + 10
    while len(got) < 300 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(300))


@SHARED
def test_a_reader_that_falls_behind_is_told_how_many_it_lost(shared_url: str) -> None:
    broker = Broker.open(shared_url + ("&ring_records=16" if shared_url.startswith("shm") else "&log_records=16"))
    try:
        run(broker.add_subscription("c", "k", "prices"))
        for i in range(40):
            broker.publish(msg(body=i))
        batch = run(broker.receive("c"))
        assert [d.message.body for d in batch.deliveries] == list(range(24, 40))
        assert batch.dropped == {"k": 24}
        sub = broker.subscribe("prices")
        for i in range(20):
            broker.publish(msg(body=i))
        assert sub.receive(1.0).body == 4 and sub.dropped == 4
    finally:
        run(broker.close())


@ALL
def test_a_consumer_back_from_a_lost_channel_goes_on_after_the_position_it_names(shared_url: str) -> None:
    # A drain moves the cursor before its batch reaches the client: a batch lost on its
    # way comes again when the consumer says the last position it received.
    log_option = "&ring_records=16" if shared_url.startswith("shm") else "&log_records=16"
    broker = MemoryBroker() if shared_url == "memory" else Broker.open(shared_url + log_option)
    try:
        start = run(broker.add_subscription("c", "k", "prices"))
        for i in range(5):
            broker.publish(msg(body=i))
        batch = run(broker.receive("c"))
        assert [d.message.body for d in batch.deliveries] == [0, 1, 2, 3, 4]
        if shared_url == "memory":  # no log, no positions: `after` changes nothing
            assert start is None and {d.message.position for d in batch.deliveries} == {0}
            assert run(broker.add_subscription("c", "k", "prices", after=1)) is None
            run(broker.resume("c", {"k": 1}))
            assert drained(broker, "c") == []
            return
        positions = [d.message.position for d in batch.deliveries]
        assert positions == list(range(start + 1, start + 6))
        assert run(broker.add_subscription("c", "k", "prices", after=positions[0])) == positions[0]
        assert drained(broker, "c") == [("k", 1), ("k", 2), ("k", 3), ("k", 4)]
        run(broker.resume("c", {"k": positions[2], "unknown": 0}))  # a socket's ping does the same
        assert drained(broker, "c") == [("k", 3), ("k", 4)]
        # Past what the log holds: the rest, and how many are gone; past its head: the head.
        for i in range(5, 30):
            broker.publish(msg(body=i))
        run(broker.add_subscription("c", "k", "prices", after=positions[4]))
        batch = run(broker.receive("c"))
        assert [d.message.body for d in batch.deliveries] == list(range(14, 30)) and batch.dropped == {"k": 9}
        assert run(broker.add_subscription("c", "k", "prices", after=10**9)) == start + 30
        # A consumer the broker forgot is made again at the position it names.
        run(broker.disconnect("c"))
        broker.publish(msg(body=30))
        assert run(broker.add_subscription("c", "k", "prices", after=start + 29)) == start + 29
        assert drained(broker, "c") == [("k", 29), ("k", 30)]
        with pytest.raises(ValueError):
            run(broker.add_subscription("c", "k", "prices", after=-1))
    finally:
        run(broker.close())


# --- the API of processes outside a gateway -------------------------------------------------


@ALL
def test_publish_and_subscribe_outside_a_gateway(shared_url: str) -> None:
    broker = MemoryBroker() if shared_url == "memory" else Broker.open(shared_url)
    try:
        fx = broker.subscribe("prices", subtopic="fx.*", selector="symbol = 'ABC'")
        everything = broker.subscribe("prices", subtopic="fx.eur")
        assert fx.receive(timeout=0.05) is None
        broker.publish("prices", {"bid": 1.5}, headers={"symbol": "XYZ"}, subtopic="fx.eur")
        broker.publish("prices", {"bid": 2.5}, headers={"symbol": "ABC"}, subtopic="fx.eur")
        message = fx.receive(timeout=1.0)
        assert message is not None and message.body == {"bid": 2.5} and message.subtopics == ("fx.eur",)
        assert message.headers["symbol"] == "ABC" and message.headers["DSSubtopic"] == "fx.eur"
        assert [everything.receive(1.0).body["bid"] for _ in range(2)] == [1.5, 2.5]

        async def later() -> Any:
            asyncio.get_running_loop().call_later(0.1, lambda: broker.publish("prices", "async", headers={"symbol": "ABC"}, subtopic="fx.gbp"))
            return await fx.areceive(timeout=5.0)

        assert run(later()).body == "async"
        fx.close()
        everything.close()
        with pytest.raises(ValueError):
            broker.subscribe("prices", subtopic="fx..x")
        with pytest.raises(SelectorError):
            broker.subscribe("prices", selector="a = ")
    finally:
        run(broker.close())


PUBLISHER = """
import sys
from amfkit.messaging import Broker
broker = Broker.open(sys.argv[1])
for i in range(int(sys.argv[2])):
    broker.publish("prices", {"i": i}, headers={"i": i}, subtopic="fx.eur")
"""


@SHARED
def test_a_publisher_process_reaches_a_gateway_client_and_a_subscriber(open_broker: Any, shared_url: str) -> None:
    broker = open_broker()
    run(broker.add_subscription("c", "k", "prices", Subscription("fx.*", "i >= 10")))
    sub = broker.subscribe("prices", subtopic="fx.*")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(PUBLISHER), shared_url, "50"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert [d.message.body["i"] for d in run(broker.receive("c")).deliveries] == list(range(10, 50))
    assert [sub.receive(1.0).body["i"] for _ in range(50)] == list(range(50))


# --- sessions -----------------------------------------------------------------------------


@SHARED
def test_sessions_are_shared_by_every_store_on_the_url(shared_url: str) -> None:
    one, two = SharedSessionStore.from_url(shared_url), SharedSessionStore.from_url(shared_url)
    try:
        sid, session = run(one.create())
        session["amfkit.principal"] = ["alice", ["member"]]
        session["cart"] = [1, 2, {"x": "y"}]
        run(one.save(sid, session))
        seen = run(two.get(sid))
        assert seen == {"amfkit.principal": ["alice", ["member"]], "cart": [1, 2, {"x": "y"}]}
        assert not seen.modified
        run(two.delete(sid))
        assert run(one.get(sid)) is None
        assert run(one.get("no such session")) is None
        with pytest.raises(ValueError):
            run(one.save(sid, type(session)({"big": "x" * (2 << 20)})))
    finally:
        one.close()
        two.close()


@SHARED
def test_sessions_expire(shared_url: str) -> None:
    now = [1000.0]
    store = open_store(shared_url)
    try:
        sessions = SharedSessionStore(store, ttl=10, clock=lambda: now[0])
        sid, session = run(sessions.create())
        now[0] += 5
        assert run(sessions.get(sid)) == {}
        now[0] += 9  # 14 s after creation, 9 after the last use: alive (the expiry slides)
        assert run(sessions.get(sid)) == {}
        now[0] += 20
        assert run(sessions.get(sid)) is None
    finally:
        release_store(store)


def test_unsupported_urls_are_refused() -> None:
    with pytest.raises(ValueError, match="shm://NAME"):
        open_store("mqtt://x")
    with pytest.raises(ValueError, match="unknown shm:// option"):
        open_store("shm://x?size=1")
    assert isinstance(SharedBroker, type)
