"""The in-process broker (`memory://`): subscriptions indexed by destination and
subtopic, one bounded queue per client, time-to-live and idle expiry.

Bounds (docs/messaging.md, "Bounds"): a client's queue holds `queue_size` deliveries and
drops its oldest one to take a new one (counted per consumer, reported by the next
drain); a client idle for `client_timeout` seconds is forgotten, and past `max_clients`
the least recently active one is; a client holds at most `max_consumers` consumers, a
consumer `max_subscriptions` subscriptions, and the broker `max_total_subscriptions`.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections import OrderedDict, deque
from typing import Any, Callable, Optional

from .broker import Batch, Broker, Delivery, DuplicateSubscription, Message, Subscription, SubscriptionLimit, now_ms
from .selector import Selector, compile_selector
from .subtopic import SEPARATOR, WILDCARD, subtopic_matches

__all__ = ["MemoryBroker"]

# A consumer's selectors for one subtopic key, by selector text (None: matches all).
_Selectors = dict[str, Optional[Selector]]
# consumer id -> its selectors, for one subtopic key of one destination.
_Entries = dict[str, _Selectors]


@functools.lru_cache(maxsize=1024)
def _compiled(text: str) -> Selector | None:
    return compile_selector(text) if text else None


def _is_pattern(subtopic: str) -> bool:
    return WILDCARD in subtopic.split(SEPARATOR)


class _Client:
    __slots__ = ("id", "queue", "dropped", "waiters", "consumers", "last_use")

    def __init__(self, client_id: str, now: float) -> None:
        self.id = client_id
        self.queue: deque[Delivery] = deque()
        self.dropped: dict[str, int] = {}
        self.waiters: list[asyncio.Future[None]] = []
        self.consumers: set[str] = set()
        self.last_use = now


class _Consumer:
    __slots__ = ("id", "client", "destination", "subscriptions")

    def __init__(self, consumer_id: str, client: _Client, destination: str) -> None:
        self.id = consumer_id
        self.client = client
        self.destination = destination
        self.subscriptions: set[Subscription] = set()


class _Topic:
    """One destination's subscriptions: exact subtopics (None: no subtopic) and patterns."""

    __slots__ = ("exact", "patterns")

    def __init__(self) -> None:
        self.exact: dict[str | None, _Entries] = {}
        self.patterns: dict[str, _Entries] = {}

    def table(self, subtopic: str | None) -> dict[Any, _Entries]:
        return self.patterns if subtopic is not None and _is_pattern(subtopic) else self.exact


class MemoryBroker(Broker):
    """The broker of one process: thread-safe, no background task (expiry happens as
    the broker is used, a few clients at a time, and on `sweep()`)."""

    def __init__(
        self,
        *,
        queue_size: int = 1000,
        client_timeout: float = 300.0,
        max_clients: int = 100_000,
        max_consumers: int = 256,
        max_subscriptions: int = 256,
        max_total_subscriptions: int = 1_000_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        limits = {
            "queue_size": queue_size,
            "max_clients": max_clients,
            "max_consumers": max_consumers,
            "max_subscriptions": max_subscriptions,
            "max_total_subscriptions": max_total_subscriptions,
        }
        for name, value in limits.items():
            if value < 1:
                raise ValueError(f"{name} must be at least 1")
        if client_timeout <= 0:
            raise ValueError("client_timeout must be positive")
        self.queue_size = int(queue_size)
        self.client_timeout = float(client_timeout)
        self.max_clients = int(max_clients)
        self.max_consumers = int(max_consumers)
        self.max_subscriptions = int(max_subscriptions)
        self.max_total_subscriptions = int(max_total_subscriptions)
        self._subscriptions = 0  # in all
        self._clock = clock
        self._lock = threading.Lock()
        self._clients: OrderedDict[str, _Client] = OrderedDict()  # least recently used first
        self._consumers: dict[str, _Consumer] = {}
        self._topics: dict[str, _Topic] = {}

    # --- subscriptions ---------------------------------------------------------------

    async def add_subscription(
        self, client_id: str, consumer_id: str, destination: str, subscription: Subscription = Subscription(), *, after: int | None = None
    ) -> None:
        selector = _compiled(subscription.selector)  # outside the lock: SelectorError raises here
        wake: list[asyncio.Future[None]] = []
        try:
            with self._lock:
                self._subscribe(client_id, consumer_id, destination, subscription, selector, wake)
        finally:
            _resolve_all(wake)
        return None  # no log, no positions: `after` means nothing here

    def _subscribe(
        self, client_id: str, consumer_id: str, destination: str, subscription: Subscription, selector: Selector | None, wake: list[asyncio.Future[None]]
    ) -> None:
        """`subscribe` under the lock; `wake` collects the futures of forgotten clients."""
        now = self._clock()
        wake += self._expire(now)
        consumer = self._consumers.get(consumer_id)
        if consumer is not None and consumer.client.id != client_id:
            raise DuplicateSubscription(f"consumer id {consumer_id!r} is subscribed by another client")
        if self._subscriptions >= self.max_total_subscriptions:  # checked before anything is made
            if consumer is None or consumer.destination != destination or subscription not in consumer.subscriptions:
                raise SubscriptionLimit(f"this server holds its most subscriptions ({self.max_total_subscriptions})")
        client = self._clients.get(client_id)
        if client is None:
            while len(self._clients) >= self.max_clients:
                wake += self._forget(next(iter(self._clients.values())))
            client = self._clients[client_id] = _Client(client_id, now)
        else:
            self._use(client, now)
        if consumer is not None and consumer.destination != destination:
            self._drop_consumer(consumer)
            consumer = None
        if consumer is None:
            if len(client.consumers) >= self.max_consumers:
                raise SubscriptionLimit(f"a client may have at most {self.max_consumers} consumers")
            consumer = self._consumers[consumer_id] = _Consumer(consumer_id, client, destination)
            client.consumers.add(consumer_id)
        if subscription in consumer.subscriptions:
            return
        if len(consumer.subscriptions) >= self.max_subscriptions:
            raise SubscriptionLimit(f"a consumer may have at most {self.max_subscriptions} subscriptions")
        consumer.subscriptions.add(subscription)
        self._subscriptions += 1
        topic = self._topics.get(destination)
        if topic is None:
            topic = self._topics[destination] = _Topic()
        table = topic.table(subscription.subtopic)
        table.setdefault(subscription.subtopic, {}).setdefault(consumer_id, {})[subscription.selector] = selector

    async def remove_subscription(self, client_id: str, consumer_id: str, subscription: Subscription | None = None) -> bool:
        wake: list[asyncio.Future[None]] = []
        with self._lock:
            consumer = self._consumers.get(consumer_id)
            if consumer is None or consumer.client.id != client_id:
                return False
            client = consumer.client
            self._use(client, self._clock())
            if subscription is None:
                found = True
                self._drop_consumer(consumer)
            else:
                found = subscription in consumer.subscriptions
                if found:
                    self._unindex(consumer, subscription)
                    consumer.subscriptions.discard(subscription)
                    self._subscriptions -= 1
                    if not consumer.subscriptions:
                        self._drop_consumer(consumer)
            if not client.consumers and not client.queue and not client.dropped:
                wake += self._forget(client)  # nothing left: as unknown as before it subscribed
        _resolve_all(wake)
        return found

    async def consumer(self, consumer_id: str) -> tuple[str, str] | None:
        with self._lock:
            consumer = self._consumers.get(consumer_id)
            return None if consumer is None else (consumer.client.id, consumer.destination)

    # --- delivery --------------------------------------------------------------------

    def _publish(self, message: Message) -> int:
        wake: list[asyncio.Future[None]] = []
        with self._lock:
            wake += self._expire(self._clock())
            targets = self._targets(message)
            if targets:
                now = now_ms()
                limit = self.queue_size
                for consumer_id in targets:
                    client = self._consumers[consumer_id].client
                    queue = client.queue
                    if len(queue) >= limit:
                        old = queue.popleft()
                        if not old.message.expired(now):
                            dropped = client.dropped
                            dropped[old.consumer_id] = dropped.get(old.consumer_id, 0) + 1
                    queue.append(Delivery(consumer_id, message))
                    if client.waiters:
                        wake += client.waiters
                        client.waiters = []
        _resolve_all(wake)
        return len(targets)

    async def receive(self, client_id: str, *, consumer_id: str | None = None, limit: int | None = None, pushing: bool = False) -> Batch | None:
        with self._lock:
            client = self._clients.get(client_id)
            if client is None:
                return None
            self._use(client, self._clock())
            queue = client.queue
            if consumer_id is not None:
                if consumer_id not in client.consumers:
                    return None
                taken: list[Delivery] = []
                kept: deque[Delivery] = deque()
                for d in queue:
                    (taken if d.consumer_id == consumer_id and (limit is None or len(taken) < limit) else kept).append(d)
                client.queue = kept
                n = client.dropped.pop(consumer_id, 0)
                dropped = {consumer_id: n} if n else {}
            else:
                if not client.consumers and not queue and not client.dropped:
                    return None
                if limit is None or limit >= len(queue):
                    taken = list(queue)
                    queue.clear()
                else:
                    taken = [queue.popleft() for _ in range(max(limit, 0))]
                dropped, client.dropped = client.dropped, {}
        for d in taken:
            if d.message.time_to_live > 0:  # some may have expired: look (else no clock)
                now = now_ms()
                taken = [d for d in taken if not d.message.expired(now)]
                break
        return Batch(taken, dropped)

    async def wait(self, client_id: str, timeout: float) -> bool:
        if timeout <= 0:
            with self._lock:
                client = self._clients.get(client_id)
                return client is not None and bool(client.queue or client.dropped)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        ready = self.watch(client_id, future)
        if ready is not None:
            return ready
        client = self._clients.get(client_id)
        # A timer resolving the future itself: lighter than asyncio.wait_for (no second
        # future, no callbacks), which matters when every message wakes many waiters.
        timer = loop.call_later(timeout, _resolve, future)
        try:
            await future
        finally:
            timer.cancel()
            # Timed out or cancelled: still among the waiters (a wake swaps them out under
            # the lock; the look without it is one atomic list scan).
            if client is not None and future in client.waiters:
                self.unwatch(client_id, future)
        # Without the lock: a wake swapped the waiters out under it, and these reads are
        # atomic (a client forgotten meanwhile is not in the table any more).
        return client is not None and self._clients.get(client_id) is client and bool(client.queue or client.dropped)

    def watch(self, client_id: str, future: asyncio.Future[None]) -> bool | None:
        with self._lock:
            client = self._clients.get(client_id)
            if client is None:
                return False
            if client.queue or client.dropped:
                return True
            client.waiters.append(future)
        return None

    def unwatch(self, client_id: str, future: asyncio.Future[None]) -> None:
        with self._lock:
            client = self._clients.get(client_id)
            if client is not None and future in client.waiters:
                client.waiters.remove(future)

    def wake(self, client_id: str) -> None:
        with self._lock:
            client = self._clients.get(client_id)
            if client is None or not client.waiters:
                return
            wake, client.waiters = client.waiters, []
        _resolve_all(wake)

    async def disconnect(self, client_id: str) -> None:
        with self._lock:
            client = self._clients.get(client_id)
            wake = self._forget(client) if client is not None else []
        _resolve_all(wake)

    # --- upkeep ----------------------------------------------------------------------

    def touch(self, client_id: str) -> None:
        with self._lock:
            client = self._clients.get(client_id)
            if client is not None:
                self._use(client, self._clock())

    def sweep(self) -> int:
        with self._lock:
            before = len(self._clients)
            wake = self._expire(self._clock(), budget=None)
            expired = before - len(self._clients)
        _resolve_all(wake)
        return expired

    def stats(self) -> dict[str, int]:
        with self._lock:
            entries = sum(len(e) for t in self._topics.values() for table in (t.exact, t.patterns) for e in table.values())
            return {
                "clients": len(self._clients),
                "consumers": len(self._consumers),
                "subscriptions": self._subscriptions,
                "queued": sum(len(c.queue) for c in self._clients.values()),
                "waiters": sum(len(c.waiters) for c in self._clients.values()),
                "destinations": len(self._topics),
                "index_entries": entries,
            }

    async def close(self) -> None:
        with self._lock:
            wake = [f for c in self._clients.values() for f in c.waiters]
            for c in self._clients.values():
                c.waiters = []
        _resolve_all(wake)

    # --- internals (called under the lock) -------------------------------------------

    def _use(self, client: _Client, now: float) -> None:
        client.last_use = now
        self._clients.move_to_end(client.id)

    def _expire(self, now: float, budget: int | None = 16) -> list[asyncio.Future[None]]:
        """Forget clients idle for `client_timeout`, oldest first, at most `budget`."""
        wake: list[asyncio.Future[None]] = []
        deadline = now - self.client_timeout
        clients = self._clients
        while clients and (budget is None or budget > 0):
            client = next(iter(clients.values()))
            if client.last_use > deadline:
                break
            wake += self._forget(client)
            if budget is not None:
                budget -= 1
        return wake

    def _forget(self, client: _Client) -> list[asyncio.Future[None]]:
        client.queue.clear()
        client.dropped.clear()
        for consumer_id in list(client.consumers):
            self._drop_consumer(self._consumers[consumer_id])
        del self._clients[client.id]
        wake, client.waiters = client.waiters, []
        return wake

    def _drop_consumer(self, consumer: _Consumer) -> None:
        """Forget a consumer: its subscriptions, and what is queued for it (Flex drops a
        message for a Consumer it no longer has)."""
        for subscription in consumer.subscriptions:
            self._unindex(consumer, subscription)
        self._subscriptions -= len(consumer.subscriptions)
        consumer.subscriptions.clear()
        client = consumer.client
        client.consumers.discard(consumer.id)
        client.dropped.pop(consumer.id, None)
        if client.queue:
            client.queue = deque(d for d in client.queue if d.consumer_id != consumer.id)
        del self._consumers[consumer.id]

    def _unindex(self, consumer: _Consumer, subscription: Subscription) -> None:
        topic = self._topics.get(consumer.destination)
        if topic is None:
            return
        table = topic.table(subscription.subtopic)
        entries = table.get(subscription.subtopic)
        if entries is None:
            return
        selectors = entries.get(consumer.id)
        if selectors is not None:
            selectors.pop(subscription.selector, None)
            if not selectors:
                del entries[consumer.id]
        if not entries:
            del table[subscription.subtopic]
            if not topic.exact and not topic.patterns:
                del self._topics[consumer.destination]

    def _targets(self, message: Message) -> list[str]:
        """The consumers `message` goes to: one entry each, in subscription order."""
        topic = self._topics.get(message.destination)
        if topic is None:
            return []
        found: dict[str, None] = {}
        headers = message.headers
        if not message.subtopics:
            _collect(topic.exact.get(None), headers, found)
        else:
            for subtopic in message.subtopics:
                _collect(topic.exact.get(subtopic), headers, found)
                for pattern, entries in topic.patterns.items():
                    if subtopic_matches(pattern, subtopic):
                        _collect(entries, headers, found)
        return list(found)


def _collect(entries: _Entries | None, headers: Any, found: dict[str, None]) -> None:
    if not entries:
        return
    for consumer_id, selectors in entries.items():
        if consumer_id in found:
            continue
        for selector in selectors.values():
            if selector is None or selector.matches(headers):
                found[consumer_id] = None
                break


def _resolve_all(futures: list[asyncio.Future[None]]) -> None:
    """Complete waiters' futures, each on its own event loop (any thread may publish)."""
    if not futures:
        return
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    for future in futures:
        loop = future.get_loop()
        if loop is running:
            _resolve(future)
        else:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # that loop is closed: nobody waits any more
                pass


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
