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
