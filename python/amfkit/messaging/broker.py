"""The broker interface: where subscriptions live and messages wait for their clients.

A broker knows clients (Flex clients, by their `DSId`), their consumers (a Consumer's
`clientId`, one destination each) and each consumer's subscriptions (a subtopic and a
selector). `publish` copies a message into the bounded queue of every client with a
matching consumer; a channel then `wait`s for a client's queue and `receive`s (drains)
it. Everything a broker stores is plain data (texts, the message record), so a backend
in another process or on another host holds the same state: `Broker.open(url)` picks
the backend by URL scheme (docs/messaging.md, "Brokers").
"""

from __future__ import annotations

import abc
import asyncio
import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple

from .._text import shown
from ..remoting.messages import new_id

__all__ = ["Batch", "Broker", "Delivery", "DuplicateSubscription", "Message", "SCHEMES", "Subscription", "SubscriptionLimit"]

#: Broker backends by URL scheme: "module:class", imported when first opened.
SCHEMES = {"memory": "amfkit.messaging.memory:MemoryBroker"}


def now_ms() -> int:
    """The wall clock in milliseconds since 1970 (a Flex message's timestamp)."""
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Message:
    """A published message, as the broker keeps it: one record shared by every
    subscriber's queue (each subscriber's copy is made when it is delivered).

    `headers` are what selectors read and what the copies carry; `subtopics` are the
    message's subtopics (none, one, or several for a MultiTopicProducer); `timestamp` is
    in milliseconds since 1970 and `time_to_live` in milliseconds (0: never expires).
    """

    destination: str
    body: Any = None
    headers: Mapping[str, Any] = field(default_factory=dict)
    subtopics: tuple[str, ...] = ()
    message_id: str = field(default_factory=new_id)
    timestamp: int = field(default_factory=now_ms)
    time_to_live: int = 0
    correlation_id: str | None = None

    def expired(self, now: int) -> bool:
        """Whether the message's time to live has passed at `now` (milliseconds)."""
        return self.time_to_live > 0 and self.timestamp + self.time_to_live < now


class Subscription(NamedTuple):
    """One subscription of a consumer: a subtopic (None: messages without one; it may
    hold `*` tokens) and a selector's text ("" matches every message)."""

    subtopic: str | None = None
    selector: str = ""


class Delivery(NamedTuple):
    """A message queued for one consumer of a client."""

    consumer_id: str
    message: Message


class Batch(NamedTuple):
    """What `receive` drained: the deliveries, oldest first, and per consumer how many
    messages the queue bound dropped since the last drain."""

    deliveries: list[Delivery]
    dropped: dict[str, int]

    def __bool__(self) -> bool:
        return bool(self.deliveries or self.dropped)


class DuplicateSubscription(ValueError):
    """A consumer id already used by another client."""


class SubscriptionLimit(ValueError):
    """A client over its number of consumers, or a consumer over its subscriptions."""


class Broker(abc.ABC):
    """Subscriptions and per-client queues. Every method is safe to call from any
    thread and any event loop; `publish` and `wake` never block.

    A channel delivers to a client this way:

        while connected:
            if await broker.wait(client_id, timeout):     # something is queued
                batch = await broker.receive(client_id)   # None: the client is gone
                ...write batch.deliveries...
            # False: timeout, or woken by `wake`; check why and go on (or stop)
    """

    @classmethod
    def open(cls, url: str, **options: Any) -> Broker:
        """The broker for `url` ("memory://": this process); `options` go to the
        backend (`queue_size`, `client_timeout`, ...). ValueError for a scheme amfkit
        does not have."""
        scheme, sep, _ = url.partition("://") if isinstance(url, str) else ("", "", "")
        target = SCHEMES.get(scheme.lower()) if sep else None
        if target is None:
            offered = ", ".join(f"{s}://" for s in SCHEMES)
            raise ValueError(f"unsupported broker url {shown(url)} (amfkit has: {offered})")
        module, _, name = target.partition(":")
        backend = getattr(importlib.import_module(module), name)
        broker: Broker = backend.from_url(url, **options)
        return broker

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Broker:
        """The backend's own reading of its URL (`open` calls it)."""
        return cls(**options)

    # --- subscriptions ---------------------------------------------------------------

    @abc.abstractmethod
    async def subscribe(self, client_id: str, consumer_id: str, destination: str, subscription: Subscription = Subscription()) -> None:
        """Add a subscription for a consumer of a client (again: no change). A consumer
        id held by another client raises `DuplicateSubscription`; one held by the same
        client for another destination moves there (its old subscriptions go). Past the
        backend's limits: `SubscriptionLimit`; a selector that does not compile:
        `SelectorError`."""

    @abc.abstractmethod
    async def unsubscribe(self, client_id: str, consumer_id: str, subscription: Subscription | None = None) -> bool:
        """Remove one subscription of the client's consumer (None: all of them); False
        when there was no such subscription. A consumer left with none is forgotten with
        the messages queued for it, and a client left with no consumers too."""

    @abc.abstractmethod
    async def consumer(self, consumer_id: str) -> tuple[str, str] | None:
        """(client id, destination) of a subscribed consumer; None when unknown."""

    # --- delivery --------------------------------------------------------------------

    @abc.abstractmethod
    def publish(self, message: Message) -> int:
        """Queue `message` for every consumer with a matching subscription (one copy
        each, whatever the number of its matching subscriptions) and wake their
        clients' waiters. Never blocks; returns the number of consumers it reached here
        (a networked backend may return 0 and deliver later)."""

    @abc.abstractmethod
    async def receive(self, client_id: str, *, consumer_id: str | None = None, limit: int | None = None) -> Batch | None:
        """Drain the client's queue (only `consumer_id`'s deliveries when given; at most
        `limit`), dropping expired messages. None when the client (or that consumer of
        it) has neither subscriptions nor queued messages: it is unknown here."""

    @abc.abstractmethod
    async def wait(self, client_id: str, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the client's queue to hold something. True
        when it does; False on timeout, after `wake`, or at once for an unknown client.
        Cancelling the awaiting task is safe."""

    def watch(self, client_id: str, future: asyncio.Future[None]) -> bool | None:
        """`wait` without its timer, for a waiter that keeps its own (a push channel): True
        when the client's queue holds something now, False for an unknown client, None
        when `future` joined the client's waiters (completed, on its loop, by the next
        publish for the client, `wake`, or its forgetting; a waiter that stops waiting
        otherwise calls `unwatch`). NotImplementedError when the backend has only `wait`."""
        raise NotImplementedError

    def unwatch(self, client_id: str, future: asyncio.Future[None]) -> None:
        """Remove a `watch` waiter that stopped waiting (timed out, cancelled)."""

    @abc.abstractmethod
    def wake(self, client_id: str) -> None:
        """End every current `wait` for the client (they return False unless something
        is queued). Thread-safe, never blocks."""

    @abc.abstractmethod
    async def disconnect(self, client_id: str) -> None:
        """Forget the client: its consumers, subscriptions and queue; wake its waiters."""

    # --- upkeep ----------------------------------------------------------------------

    def touch(self, client_id: str) -> None:
        """Note activity of a client (it delays the client's idle expiry)."""

    def sweep(self) -> int:
        """Expire idle clients now; the number expired. Backends also expire as they go."""
        return 0

    def stats(self) -> dict[str, int]:
        """Sizes of the broker's tables (clients, consumers, queued messages...)."""
        return {}

    async def close(self) -> None:
        """Release the broker's resources and wake every waiter."""
