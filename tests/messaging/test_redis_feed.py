"""The worker's one asynchronous way to Redis (amfkit.messaging.redis_feed), on every
Python from 3.9: its task ends with its event loop even when redis-py turns the
cancellation into an error of its own. Against a real Redis (tests/support/redis_server.py)."""

from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any

import pytest

from amfkit.messaging import Broker

_names = itertools.count()


@pytest.fixture
def store(redis_server: Any) -> str:
    return f"{redis_server.url}?prefix=feed{os.getpid()}-{next(_names)}:"


def test_a_feed_ends_with_its_event_loop_even_if_redis_py_turns_the_cancellation_into_a_timeout(store: str) -> None:
    # redis-py may answer a cancellation that comes as a read times out with its own
    # TimeoutError, which the feed takes for Redis being away (and goes on). The feed's
    # task must still end when its loop does (asyncio.run cancels it), on every Python:
    # its Redis calls run in tasks of their own, the cancellation is the feed's.
    import threading

    import redis

    broker = Broker.open(store)

    async def main() -> None:
        await broker.add_subscription("c", "k", "prices")
        feed = broker._feed_here()
        assert feed is not None
        real = feed.client.xread

        async def xread(*args: Any, **kwargs: Any) -> Any:
            try:
                return await real(*args, **kwargs)
            except asyncio.CancelledError:
                raise redis.TimeoutError("Timeout reading from socket") from None

        feed.client.xread = xread
        await broker.awatch("c", asyncio.get_running_loop().create_future())  # it reads the log now
        await asyncio.sleep(0.3)  # its XREAD blocks; main returns: asyncio.run cancels it

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    thread.join(10)
    try:
        assert not thread.is_alive(), "the event loop did not end: the feed swallowed its cancellation"
        assert broker._feed is not None and broker._feed.closed
    finally:
        asyncio.run(broker.close())


def test_a_burst_appended_in_one_pipeline_is_read_at_once(store: str, redis_server: Any) -> None:
    # Redis answers a blocked XREAD at the first append, with that record alone: the
    # rest of a burst sent in one pipeline must come with it (else a parked poll answers
    # the first record, and the others wait for the clients' next round).
    import redis.asyncio

    broker = Broker.open(store)
    admin = redis.asyncio.Redis(host=redis_server.host, port=redis_server.port)

    async def blocked_on() -> bool:
        """Whether an XREAD waits at Redis now (CLIENT LIST: cmd xread, flag b)."""
        clients = await admin.client_list()
        return any(c.get("cmd") == "xread" and "b" in c.get("flags", "") for c in clients)

    async def main() -> list[int]:
        await broker.add_subscription("c", "k", "prices")
        feed = broker._feed_here()
        assert feed is not None
        calls: list[int] = []
        real = feed._on_records

        def on_records(name: str, items: list[Any], lost: int) -> None:
            if name.endswith("prices"):
                calls.append(len(items))
            real(name, items, lost)

        feed._on_records = on_records
        await broker.awatch("c", asyncio.get_running_loop().create_future())  # it reads the log now
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not (feed._reading and any(name.endswith("prices") for name in feed.cursors) and await blocked_on()):
            assert loop.time() < deadline, "the feed never blocked on the log"
            await asyncio.sleep(0.01)
        for i in range(10):  # one loop step: one pipeline
            broker.publish("prices", i)
        while sum(calls) < 10:
            assert loop.time() < deadline, f"the burst was not read: {calls}"
            await asyncio.sleep(0.01)
        await admin.aclose()
        return calls

    try:
        assert asyncio.run(main()) == [10]
    finally:
        asyncio.run(broker.close())
