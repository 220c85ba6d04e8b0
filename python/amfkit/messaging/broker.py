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
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from .._text import shown
from ..remoting.messages import new_id
from .selector import compile_selector
from .subtopic import SubtopicError, check_subtopic

if TYPE_CHECKING:
    from .subscriber import Subscriber

__all__ = ["Batch", "Broker", "Delivery", "DuplicateSubscription", "Message", "SCHEMES", "Subscription", "SubscriptionLimit", "make_message", "message_fields"]

#: Broker backends by URL scheme: "module:class", imported when first opened.
SCHEMES = {
    "memory": "amfkit.messaging.memory:MemoryBroker",
    "shm": "amfkit.messaging.shared:SharedBroker",
    "redis": "amfkit.messaging.shared:SharedBroker",
}


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
    `position` is its number in its destination's log on a shared broker (from 1; 0 on
    `memory://`, which keeps no log): a copy carries it, and a Consumer resubscribing
    after a lost channel says the last one it received (`add_subscription(after=...)`).
    """

    destination: str
    body: Any = None
    headers: Mapping[str, Any] = field(default_factory=dict)
    subtopics: tuple[str, ...] = ()
    message_id: str = field(default_factory=new_id)
    timestamp: int = field(default_factory=now_ms)
    time_to_live: int = 0
    correlation_id: str | None = None
    position: int = 0

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


def message_fields(headers: Mapping[str, Any] | None, subtopic: str | None, ttl: float | None) -> tuple[dict[str, Any], tuple[str, ...], int | None]:
    """The checked parts of a message server code publishes: its headers (with the
    subtopic as `DSSubtopic` too, as a Producer sends it), its subtopics, and its time
    to live in milliseconds (None: none given)."""
    if headers is not None and not isinstance(headers, Mapping):
        raise TypeError("headers must be a mapping of names to values")
    if ttl is not None and (not math.isfinite(ttl) or ttl < 0):
        raise ValueError("ttl must be 0 or more seconds")
    fields = dict(headers or {})
    subtopics: tuple[str, ...] = ()
    if subtopic is not None:
        try:
            subtopics = (check_subtopic(subtopic, pattern=False),)
        except SubtopicError as e:
            raise ValueError(str(e)) from None
        fields["DSSubtopic"] = subtopic
    return fields, subtopics, None if ttl is None else round(ttl * 1000)


def make_message(destination: str, body: Any, headers: Mapping[str, Any] | None, subtopic: str | None, ttl: float | None) -> Message:
    """The record of a message published by a process outside a gateway."""
    if not isinstance(destination, str) or not destination:
        raise TypeError("a destination is a non-empty string")
    fields, subtopics, ttl_ms = message_fields(headers, subtopic, ttl)
    return Message(destination, body, fields, subtopics, time_to_live=ttl_ms or 0)


def _subscription(subtopic: str | None, selector: str) -> Subscription:
    """A checked subscription for `Broker.subscribe`."""
    if subtopic is not None:
        try:
            check_subtopic(subtopic, pattern=True)
        except SubtopicError as e:
            raise ValueError(str(e)) from None
    if not isinstance(selector, str):
        raise TypeError("a selector is a string")
    if selector:
        compile_selector(selector)  # SelectorError now, not at the first message
    return Subscription(subtopic, selector)


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
        """The broker for `url`: "memory://" (this process), "shm://NAME" (every process
        of this host opening that name), "redis://HOST:PORT/DB" (every host using that
        Redis); `options` go to the backend (`queue_size`, `client_timeout`, ...).
        ValueError for a scheme amfkit does not have."""
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
    async def add_subscription(
        self, client_id: str, consumer_id: str, destination: str, subscription: Subscription = Subscription(), *, after: int | None = None
    ) -> int | None:
        """Add a subscription for a consumer of a client (again: no change). A consumer
        id held by another client raises `DuplicateSubscription`; one held by the same
        client for another destination moves there (its old subscriptions go). Past the
        backend's limits: `SubscriptionLimit`; a selector that does not compile:
        `SelectorError`.

        `after` (a consumer resubscribing after it lost its channel) is the position of
        the last message it received: delivery goes on after it, whatever the consumer's
        cursor said (what it missed comes again, or is counted lost when the log no
        longer holds it). Returns the position delivery goes on after (a consumer's first
        subscribe: the log's newest), or None on a broker without positions (`memory://`,
        which ignores `after`)."""

    @abc.abstractmethod
    async def remove_subscription(self, client_id: str, consumer_id: str, subscription: Subscription | None = None) -> bool:
        """Remove one subscription of the client's consumer (None: all of them); False
        when there was no such subscription. A consumer left with none is forgotten with
        the messages queued for it, and a client left with no consumers too."""

    @abc.abstractmethod
    async def consumer(self, consumer_id: str) -> tuple[str, str] | None:
        """(client id, destination) of a subscribed consumer; None when unknown."""

    # --- delivery --------------------------------------------------------------------

    def publish(
        self,
        message: Message | str,
        body: Any = None,
        *,
        headers: Mapping[str, Any] | None = None,
        subtopic: str | None = None,
        ttl: float | None = None,
    ) -> int:
        """Queue a message for every consumer with a matching subscription (one copy
        each, whatever the number of its matching subscriptions) and wake their
        clients' waiters; the number of consumers it reached here (a shared broker
        returns 0: other processes deliver it).

        `message` is a `Message` (the gateway's record), or a destination's name: then
        `body`, `headers` (what selectors read), `subtopic` (a dotted name) and `ttl`
        (seconds; None: forever) make the message, as a process outside the gateway
        (a price feed) publishes: `broker.publish("prices", body, subtopic="fx.eur")`.
        Never waits for a subscriber; on `redis://` it waits for Redis's answer (use
        `apublish` on an event loop)."""
        if not isinstance(message, Message):
            message = make_message(message, body, headers, subtopic, ttl)
        return self._publish(message)

    async def apublish(
        self,
        message: Message | str,
        body: Any = None,
        *,
        headers: Mapping[str, Any] | None = None,
        subtopic: str | None = None,
        ttl: float | None = None,
    ) -> int:
        """`publish` for an event loop: a backend that talks to a server does so without
        blocking the loop."""
        return self.publish(message, body, headers=headers, subtopic=subtopic, ttl=ttl)

    @abc.abstractmethod
    def _publish(self, message: Message) -> int:
        """`publish` of a made message."""

    def subscribe(self, destination: str, *, subtopic: str | None = None, selector: str = "") -> Subscriber:
        """A subscription of this process to `destination` (messages with `subtopic`,
        which may hold `*` tokens; None: messages without one), filtered by `selector`:
        `sub.receive(timeout)` (or `await sub.areceive(timeout)`) gives the next message.
        Messages published from now on are received; `SelectorError` or ValueError for
        a bad selector or subtopic."""
        from .subscriber import QueueSubscriber

        return QueueSubscriber(self, destination, _subscription(subtopic, selector))

    @abc.abstractmethod
    async def receive(self, client_id: str, *, consumer_id: str | None = None, limit: int | None = None, pushing: bool = False) -> Batch | None:
        """Drain the client's queue (only `consumer_id`'s deliveries when given; at most
        `limit`), dropping expired messages. None when the client (or that consumer of
        it) has neither subscriptions nor queued messages: it is unknown here.

        `pushing`: the caller is a channel of the client held in this process (a stream,
        a WebSocket, a parked long-poll), which writes the batch at once; a shared broker
        may then hand it out before the client's cursors reach its store (`redis://`
        writes them behind, and repairs a write that fails)."""

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

    async def awatch(self, client_id: str, future: asyncio.Future[None]) -> bool | None:
        """`watch` from the event loop: a backend whose store is a server (Redis) looks
        there without holding the loop."""
        return self.watch(client_id, future)

    def unwatch(self, client_id: str, future: asyncio.Future[None]) -> None:
        """Remove a `watch` waiter that stopped waiting (timed out, cancelled)."""

    @abc.abstractmethod
    def wake(self, client_id: str) -> None:
        """End every current `wait` for the client (they return False unless something
        is queued). Thread-safe, never blocks."""

    @abc.abstractmethod
    async def disconnect(self, client_id: str) -> None:
        """Forget the client: its consumers, subscriptions and queue; wake its waiters."""

    async def resume(self, client_id: str, positions: Mapping[str, int]) -> None:
        """A client back on a new channel: each of its consumers named in `positions`
        goes on after the position given, the last message it received (what it missed
        comes again, or is counted lost when the log no longer holds it). A consumer the
        client no longer has is left alone (its resubscribe makes it again, with
        `add_subscription(after=...)`). Nothing on a broker without positions."""

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
