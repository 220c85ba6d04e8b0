"""The in-process broker on its own: fan-out, subtopics, selectors, time to live, the
queue bound and its overflow policy, idle expiry, waiting and waking (from other tasks
and other threads), and tables that stay flat over many subscribe/unsubscribe cycles."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import tracemalloc
from typing import Any

import pytest

from amfkit.messaging import Broker, DuplicateSubscription, MemoryBroker, Message, SelectorError, Subscription, SubscriptionLimit
from amfkit.messaging.broker import now_ms

from blazeds_qa import BLAZEDS_QA  # tests/support
from messaging_util import drained, msg


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- opening ----------------------------------------------------------------------------


def test_open_memory_url_with_options() -> None:
    broker = Broker.open("memory://", queue_size=7, client_timeout=9)
    assert isinstance(broker, MemoryBroker)
    assert broker.queue_size == 7 and broker.client_timeout == 9.0


@pytest.mark.parametrize("url", ["mqtt://127.0.0.1:1883", "memory", "", "MEMORY:/x"])
def test_open_unsupported_url_names_the_supported_ones(url: str) -> None:
    with pytest.raises(ValueError) as e:
        Broker.open(url)
    assert "memory://" in str(e.value)


def test_memory_broker_checks_its_options() -> None:
    with pytest.raises(ValueError):
        MemoryBroker(queue_size=0)
    with pytest.raises(ValueError):
        MemoryBroker(client_timeout=0)


# --- fan-out ----------------------------------------------------------------------------


def test_fan_out_one_copy_per_consumer() -> None:
    broker = MemoryBroker()
    for i in range(3):
        run(broker.add_subscription(f"client-{i}", f"consumer-{i}", "prices"))
    run(broker.add_subscription("client-0", "consumer-0b", "prices"))  # a second Consumer of one client
    run(broker.add_subscription("client-9", "consumer-9", "chat"))
    assert broker.publish(msg(body="tick")) == 4
    assert drained(broker, "client-0") == [("consumer-0", "tick"), ("consumer-0b", "tick")]
    assert drained(broker, "client-1") == [("consumer-1", "tick")]
    assert drained(broker, "client-9") == []
    assert drained(broker, "client-1") == []  # drained means gone


def test_a_consumer_gets_one_copy_whatever_the_number_of_its_matching_subscriptions() -> None:
    broker = MemoryBroker()
    run(broker.add_subscription("c", "k", "chat", Subscription("fx.*")))
    run(broker.add_subscription("c", "k", "chat", Subscription("fx.eur")))
    run(broker.add_subscription("c", "k", "chat", Subscription("fx.eur", "a = 1")))
    assert broker.publish(msg("chat", "x", ("fx.eur",), a=1)) == 1
    # a message sent to several subtopics (a MultiTopicProducer) also reaches it once
    assert broker.publish(msg("chat", "y", ("fx.eur", "fx.usd"))) == 1
    assert drained(broker, "c") == [("k", "x"), ("k", "y")]


def test_subscribing_again_changes_nothing() -> None:
    broker = MemoryBroker()
    for _ in range(3):
        run(broker.add_subscription("c", "k", "prices"))
    assert broker.stats()["subscriptions"] == 1
    assert broker.publish(msg()) == 1


# --- subtopics --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, subtopic, delivered",
    [
        ("chat.fx", "chat.fx", True),
        ("chat.fx", "chat.fx.eur", False),
        ("chat.*", "chat.fx", True),
        ("chat.*", "chat.fx.eur", True),  # a trailing * takes one token or more (BlazeDS)
        ("chat.*", "chat", False),
        ("chat.*.eur", "chat.fx.eur", True),
        ("chat.*.eur", "chat.fx.usd", False),
        ("*", "news", True),
    ],
)
def test_subtopic_patterns(pattern: str, subtopic: str, delivered: bool) -> None:
    broker = MemoryBroker()
    run(broker.add_subscription("c", "k", "chat", Subscription(pattern)))
    assert broker.publish(msg("chat", 1, (subtopic,))) == int(delivered)


def test_subtopic_and_plain_subscriptions_do_not_mix() -> None:
    broker = MemoryBroker()
    run(broker.add_subscription("plain", "p", "chat"))
    run(broker.add_subscription("topical", "t", "chat", Subscription("news")))
    broker.publish(msg("chat", "no subtopic"))
    broker.publish(msg("chat", "news", ("news",)))
    assert drained(broker, "plain") == [("p", "no subtopic")]
    assert drained(broker, "topical") == [("t", "news")]


# --- selectors --------------------------------------------------------------------------

QA = BLAZEDS_QA  # BlazeDS's own QA cases (tests/support/blazeds_qa.py)


@pytest.mark.parametrize("selector, headers, delivered", QA)
def test_selectors_filter_on_headers(selector: str, headers: dict[str, Any], delivered: bool) -> None:
    broker = MemoryBroker()
    run(broker.add_subscription("c", "k", "prices", Subscription(None, selector)))
    assert broker.publish(msg(**headers)) == int(delivered)


def test_a_bad_selector_is_refused_at_subscribe_time() -> None:
    broker = MemoryBroker()
    with pytest.raises(SelectorError):
        run(broker.add_subscription("c", "k", "prices", Subscription(None, "prop1 = ")))
    assert broker.stats()["subscriptions"] == 0


# --- time to live -----------------------------------------------------------------------


def test_expired_messages_are_not_delivered() -> None:
    broker = MemoryBroker()
    run(broker.add_subscription("c", "k", "prices"))
    old = now_ms() - 10_000
    broker.publish(Message("prices", "stale", {}, (), timestamp=old, time_to_live=5_000))
    broker.publish(Message("prices", "fresh", {}, (), timestamp=old, time_to_live=60_000))
    broker.publish(Message("prices", "forever", {}, (), timestamp=old, time_to_live=0))
    assert drained(broker, "c") == [("k", "fresh"), ("k", "forever")]


# --- the queue bound --------------------------------------------------------------------


def test_a_full_queue_drops_its_oldest_and_says_how_many() -> None:
    broker = MemoryBroker(queue_size=3)
    run(broker.add_subscription("slow", "k", "prices"))
    run(broker.add_subscription("fast", "f", "prices"))
    for i in range(5):
        assert broker.publish(msg(body=i)) == 2  # never blocks, never refuses
        assert drained(broker, "fast") == [("f", i)]
    batch = run(broker.receive("slow"))
    assert [d.message.body for d in batch.deliveries] == [2, 3, 4]
    assert batch.dropped == {"k": 2}
    assert run(broker.receive("slow")) == ([], {})  # the count is reported once


def test_overflow_counts_per_consumer_and_skips_expired_messages() -> None:
    broker = MemoryBroker(queue_size=2)
    run(broker.add_subscription("c", "a", "prices"))
    run(broker.add_subscription("c", "b", "chat"))
    broker.publish(Message("prices", "expired", {}, (), timestamp=now_ms() - 10_000, time_to_live=1))
    broker.publish(msg("chat", "b1"))
    broker.publish(msg("prices", "a1"))  # pushes out the expired one: not a loss
    broker.publish(msg("prices", "a2"))  # pushes out b1
    batch = run(broker.receive("c"))
    assert [(d.consumer_id, d.message.body) for d in batch.deliveries] == [("a", "a1"), ("a", "a2")]
    assert batch.dropped == {"b": 1}


def test_receive_for_one_consumer_keeps_the_others_in_order() -> None:
    broker = MemoryBroker()
    run(broker.add_subscription("c", "a", "prices"))
    run(broker.add_subscription("c", "b", "chat"))
    for i in range(3):
        broker.publish(msg("prices", f"a{i}"))
        broker.publish(msg("chat", f"b{i}"))
    assert drained(broker, "c", consumer_id="b") == [("b", "b0"), ("b", "b1"), ("b", "b2")]
    assert drained(broker, "c", limit=2) == [("a", "a0"), ("a", "a1")]
    assert drained(broker, "c") == [("a", "a2")]
    assert run(broker.receive("c", consumer_id="nobody")) is None


def test_unknown_and_emptied_clients_receive_none() -> None:
    broker = MemoryBroker()
    assert run(broker.receive("nobody")) is None
    run(broker.add_subscription("c", "k", "prices"))
    run(broker.add_subscription("c", "k2", "chat"))
    broker.publish(msg())
    broker.publish(msg("chat", 2))
    assert run(broker.remove_subscription("c", "k")) is True
    # k's queued message went with it; k2's stays
    assert drained(broker, "c") == [("k2", 2)]
    assert run(broker.remove_subscription("c", "k2", Subscription("other"))) is False
    assert run(broker.remove_subscription("c", "k2", Subscription())) is True
    assert run(broker.receive("c")) is None
    assert broker.stats()["clients"] == 0


# --- identities and limits --------------------------------------------------------------


def test_a_consumer_id_belongs_to_one_client() -> None:
    broker = MemoryBroker()
    run(broker.add_subscription("alice", "k", "prices"))
    with pytest.raises(DuplicateSubscription):
        run(broker.add_subscription("mallory", "k", "prices"))
    assert run(broker.remove_subscription("mallory", "k")) is False  # nor can another client remove it
    assert run(broker.consumer("k")) == ("alice", "prices")


def test_a_consumer_moving_to_another_destination_leaves_the_first() -> None:
    broker = MemoryBroker()
    run(broker.add_subscription("c", "k", "prices", Subscription("fx")))
    run(broker.add_subscription("c", "k", "chat"))
    assert run(broker.consumer("k")) == ("c", "chat")
    assert broker.publish(msg("prices", 1, ("fx",))) == 0
    assert broker.publish(msg("chat")) == 1


def test_consumer_and_subscription_limits() -> None:
    broker = MemoryBroker(max_consumers=2, max_subscriptions=2)
    run(broker.add_subscription("c", "k1", "prices", Subscription("a")))
    run(broker.add_subscription("c", "k1", "prices", Subscription("b")))
    with pytest.raises(SubscriptionLimit):
        run(broker.add_subscription("c", "k1", "prices", Subscription("c")))
    run(broker.add_subscription("c", "k2", "prices"))
    with pytest.raises(SubscriptionLimit):
        run(broker.add_subscription("c", "k3", "prices"))
    assert broker.stats()["consumers"] == 2
    total = MemoryBroker(max_total_subscriptions=3)
    for i in range(3):
        run(total.add_subscription(f"c{i}", f"k{i}", "prices"))
    with pytest.raises(SubscriptionLimit):
        run(total.add_subscription("c9", "k9", "prices"))
    assert total.stats()["clients"] == 3 and total.stats()["consumers"] == 3  # nothing half made
    run(total.add_subscription("c1", "k1", "prices"))  # again: no change, no refusal
    run(total.remove_subscription("c0", "k0"))
    run(total.add_subscription("c9", "k9", "prices"))
    assert total.stats()["subscriptions"] == 3


def test_past_max_clients_the_least_recently_active_goes() -> None:
    clock = Clock()
    broker = MemoryBroker(max_clients=2, clock=clock)
    run(broker.add_subscription("a", "ka", "prices"))
    clock.now += 1
    run(broker.add_subscription("b", "kb", "prices"))
    clock.now += 1
    run(broker.receive("a"))  # a is active again: b is now the oldest
    run(broker.add_subscription("c", "kc", "prices"))
    assert run(broker.receive("b")) is None
    assert run(broker.consumer("ka")) is not None and run(broker.consumer("kc")) is not None


# --- idle expiry ------------------------------------------------------------------------


def test_idle_clients_and_their_subscriptions_expire() -> None:
    clock = Clock()
    broker = MemoryBroker(client_timeout=60, clock=clock)
    run(broker.add_subscription("idle", "k1", "prices"))
    run(broker.add_subscription("busy", "k2", "prices"))
    for _ in range(3):
        clock.now += 30
        run(broker.receive("busy"))
    broker.touch("busy")
    assert broker.sweep() == 1
    assert run(broker.receive("idle")) is None
    assert run(broker.consumer("k1")) is None
    assert broker.publish(msg()) == 1


def test_expiry_also_happens_as_the_broker_is_used() -> None:
    clock = Clock()
    broker = MemoryBroker(client_timeout=60, clock=clock)
    for i in range(10):
        run(broker.add_subscription(f"c{i}", f"k{i}", "prices"))
    clock.now += 61
    assert broker.publish(msg()) == 0  # a publish expires them (a few at a time) first
    assert broker.stats()["clients"] == 0


# --- waiting and waking -----------------------------------------------------------------


def test_wait_returns_at_once_when_something_is_queued_or_the_client_is_unknown() -> None:
    broker = MemoryBroker()

    async def main() -> None:
        assert await broker.wait("nobody", 10) is False
        await broker.add_subscription("c", "k", "prices")
        broker.publish(msg())
        assert await broker.wait("c", 10) is True

    run(main())


def test_wait_times_out() -> None:
    broker = MemoryBroker()

    async def main() -> float:
        await broker.add_subscription("c", "k", "prices")
        t = time.monotonic()
        assert await broker.wait("c", 0.05) is False
        return time.monotonic() - t

    assert 0.04 < run(main()) < 1
    assert broker.stats()["waiters"] == 0


def test_a_publish_from_another_task_wakes_the_waiter() -> None:
    broker = MemoryBroker()

    async def main() -> None:
        await broker.add_subscription("c", "k", "prices")
        waiter = asyncio.ensure_future(broker.wait("c", 10))
        await asyncio.sleep(0.01)
        assert not waiter.done()
        broker.publish(msg(body="now"))
        assert await asyncio.wait_for(waiter, 1) is True
        batch = await broker.receive("c")
        assert [d.message.body for d in batch.deliveries] == ["now"]

    run(main())


def test_a_publish_from_another_thread_wakes_the_waiter() -> None:
    """A waiter on one event loop, a publisher on another thread (the WSGI adapter runs a
    loop per worker thread)."""
    broker = MemoryBroker()
    run(broker.add_subscription("c", "k", "prices"))
    publisher = threading.Timer(0.05, broker.publish, [msg(body="from a thread")])

    async def main() -> float:
        t = time.monotonic()
        publisher.start()
        assert await broker.wait("c", 5) is True
        return time.monotonic() - t

    try:
        assert run(main()) < 2
    finally:
        publisher.join()
    assert drained(broker, "c") == [("k", "from a thread")]


def test_wake_disconnect_and_cancel_end_a_wait() -> None:
    broker = MemoryBroker()

    async def main() -> None:
        await broker.add_subscription("c", "k", "prices")
        waiter = asyncio.ensure_future(broker.wait("c", 10))
        await asyncio.sleep(0)
        broker.wake("c")
        assert await asyncio.wait_for(waiter, 1) is False  # woken, nothing queued
        waiter = asyncio.ensure_future(broker.wait("c", 10))
        await asyncio.sleep(0)
        assert broker.stats()["waiters"] == 1
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert broker.stats()["waiters"] == 0
        waiter = asyncio.ensure_future(broker.wait("c", 10))
        await asyncio.sleep(0)
        await broker.disconnect("c")
        assert await asyncio.wait_for(waiter, 1) is False
        assert await broker.receive("c") is None

    run(main())


def test_a_waiter_on_a_closed_loop_does_not_break_the_publisher() -> None:
    broker = MemoryBroker()
    run(broker.add_subscription("c", "k", "prices"))
    loop = asyncio.new_event_loop()
    task = loop.create_task(broker.wait("c", 10))
    loop.run_until_complete(asyncio.sleep(0.01))  # the task now waits
    loop.close()  # an ended WSGI worker thread, say (the task never finishes)
    assert broker.publish(msg()) == 1
    assert not task.done()


# --- flat tables ------------------------------------------------------------------------


def test_many_subscribe_unsubscribe_cycles_leave_the_tables_flat() -> None:
    broker = MemoryBroker()
    empty = broker.stats()

    async def cycle(i: int) -> None:
        client = f"client-{i % 50}"
        await broker.add_subscription(client, f"k-{i}", "chat", Subscription(f"room.{i % 7}", f"n > {i % 3}"))
        await broker.add_subscription(client, f"k-{i}", "chat", Subscription("room.*"))
        broker.publish(msg("chat", i, (f"room.{i % 7}",), n=i))
        await broker.receive(client)
        await broker.remove_subscription(client, f"k-{i}")

    async def cycles(n: int, start: int) -> None:
        for i in range(start, start + n):
            await cycle(i)

    run(cycles(2000, 0))  # warm up (caches, interned texts)
    assert broker.stats() == empty
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        run(cycles(5000, 2000))
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename") if "amfkit" in s.traceback[0].filename)
    assert broker.stats() == empty
    assert grown < 64 * 1024, grown
