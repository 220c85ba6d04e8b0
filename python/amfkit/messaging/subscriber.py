"""Subscriptions of processes outside a gateway: `broker.subscribe("prices")` gives a
`Subscriber`, and `sub.receive(timeout)` (or `await sub.areceive(timeout)`) the next
message (docs/messaging.md, "Across workers and hosts").

    sub = broker.subscribe("prices", subtopic="fx.*", selector="symbol = 'ABC'")
    message = sub.receive(timeout=1.0)   # a Message, or None after the timeout

`QueueSubscriber` works on any broker: it is a client of the broker's own, with one
consumer, drained as a channel drains. Shared brokers have a faster one of their own.
"""

from __future__ import annotations

import abc
import asyncio
from collections import deque
from collections.abc import Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ..remoting.messages import new_id
from .broker import Message, Subscription

if TYPE_CHECKING:
    from .broker import Broker

__all__ = ["QueueSubscriber", "Subscriber"]

T = TypeVar("T")

#: A timeout of None waits this long at a time (and then again).
FOREVER = 3600.0


class Subscriber(abc.ABC):
    """One destination's messages for this process, oldest first. `dropped` counts the
    messages it lost by falling behind (the broker's bound on what waits for a reader).
    Use from one thread (or one event loop) at a time; `close()` (or `with`) ends it."""

    def __init__(self, destination: str, subscription: Subscription) -> None:
        self.destination = destination
        self.subscription = subscription
        self.dropped = 0
        self.closed = False

    @abc.abstractmethod
    def receive(self, timeout: float | None = None) -> Message | None:
        """The next message, waiting up to `timeout` seconds (None: until one comes);
        None when none came. Blocks the calling thread: in async code use `areceive`."""

    @abc.abstractmethod
    async def areceive(self, timeout: float | None = None) -> Message | None:
        """`receive` for an event loop."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop receiving (idempotent)."""

    def __iter__(self) -> Iterator[Message]:
        """Every message, as it comes (until closed)."""
        while not self.closed:
            message = self.receive()
            if message is not None:
                yield message

    def __enter__(self) -> Subscriber:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (a broker method that does its work
    in place), without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a broker method suspended where it should not")


class QueueSubscriber(Subscriber):
    """A `Subscriber` made of the broker's client interface: a client of its own with
    one consumer; its queue is bounded like any client's (`queue_size`, then the
    oldest go), and an idle one expires like any (it subscribes again, losing what
    came meanwhile)."""

    def __init__(self, broker: Broker, destination: str, subscription: Subscription) -> None:
        super().__init__(destination, subscription)
        self.broker = broker
        self._client_id = "subscriber-" + new_id()
        self._consumer_id = new_id()
        self._pending: deque[Message] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscribe()

    def _subscribe(self) -> None:
        run_now(self.broker.add_subscription(self._client_id, self._consumer_id, self.destination, self.subscription))

    def _fill(self) -> None:
        batch = run_now(self.broker.receive(self._client_id))
        if batch is None:  # forgotten (idle past the broker's client_timeout): again
            self._subscribe()
            return
        self.dropped += sum(batch.dropped.values())
        self._pending.extend(d.message for d in batch.deliveries)

    def receive(self, timeout: float | None = None) -> Message | None:
        if self._pending:
            return self._pending.popleft()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("Subscriber.receive blocks: on an event loop, await areceive()")
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(self.areceive(timeout))

    async def areceive(self, timeout: float | None = None) -> Message | None:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not self.closed:
            if not self._pending:
                self._fill()
            if self._pending:
                return self._pending.popleft()
            remaining = FOREVER if deadline is None else deadline - loop.time()
            if remaining <= 0:
                return None
            await self.broker.wait(self._client_id, remaining)
        return None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        run_now(self.broker.remove_subscription(self._client_id, self._consumer_id))
        self.broker.wake(self._client_id)
        if self._loop is not None:
            self._loop.close()
            self._loop = None
