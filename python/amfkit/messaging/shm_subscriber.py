"""The shared-memory broker's `Subscriber` (`shm://`): `broker.subscribe(...)` on a
`shm://` broker gives one. Its cursor, its wait and each message's reading, filtering and
decoding are in Rust (`amfkit._amfkit.ShmSubscriber`: no Python runs per message but a
selector, when the subscription has one); this class adds the rest of the `Subscriber`
interface (`areceive`, iteration, `with`). docs/messaging.md, "Across workers and hosts".
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .._amfkit import ShmSegment, ShmSubscriber as _NativeSubscriber
from .broker import Message, Subscription
from .memory import _compiled
from .subscriber import Subscriber

if TYPE_CHECKING:
    from .shared import SharedBroker

__all__ = ["ShmSubscriber"]

#: Seconds an `areceive` waits in a thread at a time (its latency to notice `close`).
WAIT_SLICE = 1.0


# destination, dropped and closed are the native object's, read-only (the Subscriber
# interface's attributes are read by its users, not set).
class ShmSubscriber(_NativeSubscriber, Subscriber):  # type: ignore[override]
    """A cursor of this process in a destination's log (`log` of `segment`, the broker's
    store), starting at the newest message; it loses the oldest it has not read when the
    log wraps (`dropped` counts them)."""

    broker: SharedBroker
    subscription: Subscription

    def __new__(cls, segment: ShmSegment, broker: SharedBroker, destination: str, subscription: Subscription, log: str) -> ShmSubscriber:
        selector = _compiled(subscription.selector)
        matches = None if selector is None else selector.matches
        return super().__new__(cls, segment, log, destination, Message, subscription.subtopic, matches)

    def __init__(self, segment: ShmSegment, broker: SharedBroker, destination: str, subscription: Subscription, log: str) -> None:
        # Subscriber.__init__ is not called: destination, dropped and closed are the
        # native object's.
        self.broker = broker
        self.subscription = subscription

    async def areceive(self, timeout: float | None = None) -> Message | None:
        message = self.receive(0)
        if message is not None or self.closed:
            return message
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not self.closed:
            remaining = WAIT_SLICE if deadline is None else min(deadline - loop.time(), WAIT_SLICE)
            if remaining <= 0:
                return None
            await asyncio.to_thread(self.wait, remaining)
            message = self.receive(0)
            if message is not None:
                return message
        return None
