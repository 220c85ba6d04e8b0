"""The broker of many processes: `shm://NAME` (every worker of this host) and
`redis://HOST:PORT/DB` (every host), on a `LogStore` (docs/messaging.md, "Across workers
and hosts").

Nothing about a client lives in one process, so any worker answers any client:

- a published message is one record appended to its destination's log (`d:NAME`);
- a client is one key-value record (`c:ID`): per consumer its destination, its cursor
  in that log, its subscriptions, and what it lost; a consumer id maps to its client
  (`k:ID`). Whichever worker a poll reaches reads the logs from the client's cursors,
  filters by the subscriptions and moves the cursors on with a compare-and-set, so a
  message reaches each consumer once even when two workers serve one client;
- each process has one listener thread waiting on the store's bell: it matches new
  records against the clients waiting in this process and wakes them; a control log
  (`x:control`) carries wake-ups between processes (a displaced poll, a new
  subscription, a disconnect).

The bounds: a log keeps its newest records (the store's size), a client's drain its
newest `queue_size` messages; a reader that fell behind is told how many it lost
(`Batch.dropped`, counted against each of the client's consumers on that log).
"""

from __future__ import annotations

import asyncio
import contextlib
import atexit
import logging
import math
import os
import threading
import time
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Optional
from urllib.parse import parse_qsl, urlsplit

from .. import AMFError, amf3
from .._amfkit import ShmSegment, shm_publish as _shm_publish
from .._text import shown
from ..remoting.messages import new_id
from .broker import Batch, Broker, Delivery, DuplicateSubscription, Message, Subscription, SubscriptionLimit, make_message, now_ms
from .logstore import LogStore, StoreError
from .redis_feed import Uncertain
from .memory import _compiled, _resolve, _resolve_all
from .subscriber import Subscriber
from .subtopic import subtopic_matches

if TYPE_CHECKING:
    from .redis_feed import Feed

__all__ = ["LogSubscriber", "SharedBroker", "decode_message", "encode_message", "open_store", "release_store"]

log = logging.getLogger("amfkit.messaging")

LOG = "d:"  # a destination's log
CONTROL = "x:control"  # wake-ups between processes
CLIENT = "c:"
CONSUMER = "k:"
GREETED = "g:"  # a FlexClient that pinged some worker: b"1" when it reads small forms

#: Compare-and-set attempts on one client record before giving up (other workers
#: changing the same client at the same moment).
RETRIES = 32
#: Records read from a log at a time, and at most per consumer and drain.
READ_BATCH = 1024
MAX_READ = 8192
#: Seconds the listener waits on the bell at a time (its latency to notice closing).
LISTEN_TIMEOUT = 1.0
#: The tokens of its last writes a client record keeps: a write whose answer was lost
#: (Redis went away after applying it, or before) is found applied by its token.
TOKENS = 16
#: Seconds a drain whose write's answer was lost waits for Redis to say whether it was
#: applied, before it gives up (and reports the store unreachable).
SETTLE_TIMEOUT = 60.0


# --- the record of a message ----------------------------------------------------------


def encode_message(message: Message) -> bytes:
    """A message as one AMF3 value (what a log holds)."""
    return amf3.encode(
        [
            message.destination,
            message.body,
            dict(message.headers),
            list(message.subtopics),
            message.message_id,
            message.timestamp,
            message.time_to_live,
            message.correlation_id,
        ]
    )


def decode_message(record: bytes) -> Message:
    """The message of a log record; StoreError for one that is not a message record
    (another program's, or garbage)."""
    try:
        fields = amf3.decode(record)
        destination, body, headers, subtopics, message_id, timestamp, ttl, correlation_id = fields
        return Message(
            destination,
            body,
            headers if isinstance(headers, dict) else {},
            tuple(subtopics),
            message_id,
            int(timestamp),
            int(ttl),
            correlation_id,
        )
    except (AMFError, TypeError, ValueError) as e:
        raise StoreError(f"a log record is not a message: {e}") from None


# --- stores by URL, shared within a process ----------------------------------------------

_stores: dict[str, tuple[LogStore, int]] = {}
_stores_lock = threading.Lock()
_brokers: weakref.WeakSet[SharedBroker] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """At exit: stop every broker's listener, then let go of every store (the last
    process out of a shared-memory segment removes it; a killed one leaves that to the
    next process that opens or closes it)."""
    for broker in list(_brokers):
        broker.shutdown()
    with _stores_lock:
        held = [store for store, _ in _stores.values()]
        _stores.clear()
    for store in held:
        try:
            store.close()
        except Exception:  # at exit: nothing to tell anyone
            pass


def open_store(url: str, *, app: str = "") -> LogStore:
    """The store for a `shm://NAME[?option=value...]` or `redis://...` URL. One process
    opening the same URL twice (a broker and a session store) shares one store; each
    `open_store` is matched by a `release_store`."""
    with _stores_lock:
        held = _stores.get(url)
        if held is not None:
            _stores[url] = (held[0], held[1] + 1)
            return held[0]
        store = _open(url, app)
        _stores[url] = (store, 1)
        return store


def release_store(store: LogStore) -> None:
    """Let go of a store `open_store` gave; the last release closes it."""
    with _stores_lock:
        for url, (held, refs) in list(_stores.items()):
            if held is store:
                if refs > 1:
                    _stores[url] = (held, refs - 1)
                    return
                del _stores[url]
                break
    store.close()


#: `shm://` URL options and their types (the segment's layout, used by its creator).
SHM_OPTIONS = {"ring_bytes": int, "ring_records": int, "max_logs": int, "kv_slots": int, "kv_value_bytes": int, "directory": str, "app": str}


def _open(url: str, app: str) -> LogStore:
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme == "redis":
        from .redis_store import RedisStore

        return RedisStore.from_url(url)
    if scheme != "shm":
        raise ValueError(f"unsupported shared store {shown(url)} (amfkit has: shm://NAME, redis://HOST:PORT/DB)")
    parts = urlsplit(url)
    name = parts.netloc or parts.path.lstrip("/")
    options: dict[str, Any] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        kind = SHM_OPTIONS.get(key)
        if kind is None:
            raise ValueError(f"unknown shm:// option {shown(key)} (amfkit has: {', '.join(SHM_OPTIONS)})")
        try:
            options[key] = kind(value)
        except ValueError:
            raise ValueError(f"shm:// option {key} is a number, not {shown(value)}") from None
    if app and "app" not in options:
        options["app"] = app
    from .._amfkit import ShmSegment

    return ShmSegment(name, **options)


# --- matching ---------------------------------------------------------------------------


def _matches(subscriptions: list[Any], message: Message) -> bool:
    """Whether any (subtopic, selector) pair lets `message` through (as the in-process
    broker routes: no subtopic takes messages without one; a pattern, its matches)."""
    for subtopic, selector in subscriptions:
        if subtopic is None:
            if message.subtopics:
                continue
        elif not any(subtopic_matches(subtopic, s) for s in message.subtopics):
            continue
        compiled = _compiled(selector)
        if compiled is None or compiled.matches(message.headers):
            return True
    return False


# --- the client record ----------------------------------------------------------------
# {"t": last use (seconds since 1970), "n": {consumer id: [destination, cursor,
#  [[subtopic, selector], ...], messages lost not yet reported]}, "w": [the tokens of
#  the last TOKENS writes, newest first]}

_Record = dict[str, Any]


def _decode_client(raw: bytes) -> _Record:
    try:
        record = amf3.decode(raw)
    except AMFError:
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("n"), dict):
        raise StoreError("a client record in the shared store is damaged")
    return record


def _ms(seconds: float) -> int:
    """Seconds as whole milliseconds, at least 1 (a key's expiry in Redis)."""
    return max(1, math.ceil(seconds * 1000))


def _token() -> str:
    """A write's token: 8 hex digits, unique enough among one client's last writes."""
    return os.urandom(4).hex()


def _stamped(record: _Record, token: str) -> _Record:
    """`record` carrying `token` first among its writes' tokens (in place)."""
    tokens = record.get("w")
    record["w"] = [token, *(tokens[: TOKENS - 1] if isinstance(tokens, list) else ())]
    return record


def _applied(raw: bytes | None, token: str) -> bool | None:
    """Whether the record a client has now says a write of `token` was applied; None
    when the client has no record any more."""
    if raw is None:
        return None
    try:
        tokens = _decode_client(raw).get("w")
    except StoreError:
        return False
    return isinstance(tokens, list) and token in tokens


class _Waiting:
    """The waiters of one client in this process and what they wait for."""

    __slots__ = ("futures", "consumers", "since")

    def __init__(self) -> None:
        self.futures: list[asyncio.Future[None]] = []
        # The control log's head when the client started waiting here: a wake-up sent
        # before it is not for these waiters (they read the client's record after it).
        self.since = -1
        # consumer id -> (destination, subscriptions), as last read from the store
        self.consumers: dict[str, tuple[str, list[Any]]] = {}


class SharedBroker(Broker):
    """A broker whose state lives in a `LogStore` shared by processes (or hosts)."""

    def __init__(
        self,
        store: LogStore,
        *,
        queue_size: int = 1000,
        client_timeout: float = 300.0,
        max_consumers: int = 256,
        max_subscriptions: int = 256,
        remote: bool = False,
        clock: Callable[[], float] = time.time,
        owned: bool = False,
    ) -> None:
        for name, value in (("queue_size", queue_size), ("max_consumers", max_consumers), ("max_subscriptions", max_subscriptions)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1")
        if client_timeout <= 0:
            raise ValueError("client_timeout must be positive")
        self.store = store
        # A shared-memory store: a feed's publish and a process's subscriber are native.
        self._segment: ShmSegment | None = store if isinstance(store, ShmSegment) else None
        self.queue_size = int(queue_size)
        self.client_timeout = float(client_timeout)
        self.max_consumers = int(max_consumers)
        self.max_subscriptions = int(max_subscriptions)
        self.remote = remote
        self._clock = clock
        self._owned = owned
        self._lock = threading.Lock()
        self._waiting: dict[str, _Waiting] = {}
        # Waiters woken by a message (weak: a push channel's never asks).
        self._hits: weakref.WeakSet[asyncio.Future[None]] = weakref.WeakSet()
        self._by_destination: dict[str, set[str]] = {}  # destination -> waiting client ids
        self._tracked: dict[str, int] = {}  # log -> the listener's cursor
        self._listener: threading.Thread | None = None
        self._closing = False
        self._messages: OrderedDict[tuple[str, int], tuple[bytes, Message]] = OrderedDict()
        self._touched: OrderedDict[str, float] = OrderedDict()
        self._last_sweep = clock()
        # On redis://, the event loop's reader and writer (`_feed_here`), and the client
        # records this process wrote last (the expected value of its next compare-and-set,
        # so that a drain needs no read first; a stale one only costs a failed write).
        self._feed: Feed | None = None
        self._records: OrderedDict[str, tuple[bytes, _Record]] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()
        _brokers.add(self)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SharedBroker:
        app = options.pop("app", "")
        store = open_store(url, app=app)
        try:
            return cls(store, remote=url.lower().startswith("redis"), owned=True, **options)
        except BaseException:
            release_store(store)
            raise

    # --- messages ------------------------------------------------------------------------

    def _message(self, log_name: str, seq: int, raw: bytes) -> Message:
        """The message of a record, decoded once per process: every client served here
        shares one object (so a push channel's encoding of it is shared too)."""
        key = (log_name, seq)
        with self._lock:
            held = self._messages.get(key)
        if held is not None and held[0] == raw:
            return held[1]
        message = decode_message(raw)
        self._remember(key, raw, message)
        return message

    def _remember(self, key: tuple[str, int], raw: bytes, message: Message) -> None:
        with self._lock:
            self._messages[key] = (raw, message)
            if len(self._messages) > 4 * READ_BATCH:
                self._messages.popitem(last=False)

    def publish(
        self,
        message: Message | str,
        body: Any = None,
        *,
        headers: Any = None,
        subtopic: str | None = None,
        ttl: float | None = None,
    ) -> int:
        if type(message) is str and self._segment is not None and subtopic is None and ttl is None and not headers:
            # shm:// and a feed's message (a destination and a body): made and appended
            # in Rust (shm_record.rs), the same record as below.
            _shm_publish(self._segment, LOG, message, body)
            return 0
        if isinstance(message, Message) or subtopic is not None or ttl is not None or headers:
            return super().publish(message, body, headers=headers, subtopic=subtopic, ttl=ttl)
        # The common case of a feed (a destination and a body): the record at once,
        # without a Message nobody here reads.
        if not isinstance(message, str) or not message:
            raise TypeError("a destination is a non-empty string")
        raw = amf3.encode([message, body, {}, [], new_id(), now_ms(), 0, None])
        feed = self._feed_here()
        if feed is not None:
            feed.append_nowait(LOG + message, raw, f"publishing to {message!r}")
            return 0
        self.store.append(LOG + message, raw)
        return 0

    def _publish(self, message: Message) -> int:
        name = LOG + message.destination
        raw = encode_message(message)
        feed = self._feed_here()
        if feed is not None:
            # On the event loop's thread, which a Redis round trip must not hold: queued
            # (pipelined in order with this worker's other publishes); `apublish` waits.
            feed.append_nowait(name, raw, f"publishing to {message.destination!r}")
            return 0
        seq = self.store.append(name, raw)
        self._remember((name, seq), raw, message)
        return 0

    async def apublish(
        self,
        message: Message | str,
        body: Any = None,
        *,
        headers: Any = None,
        subtopic: str | None = None,
        ttl: float | None = None,
    ) -> int:
        if not self.remote:
            return self.publish(message, body, headers=headers, subtopic=subtopic, ttl=ttl)
        feed = self._feed_here()
        if feed is None:
            return await asyncio.to_thread(self.publish, message, body, headers=headers, subtopic=subtopic, ttl=ttl)
        if not isinstance(message, Message):
            message = make_message(message, body, headers, subtopic, ttl)
        name = LOG + message.destination
        raw = encode_message(message)
        seq = await feed.append(name, raw)  # Redis's answer: the message is in the log
        self._remember((name, seq), raw, message)
        return 0

    def _read(self, log_name: str, cursor: int, limit: int) -> tuple[list[tuple[int, Message]], int, int]:
        """Up to `limit` messages of a log after `cursor`, the next cursor, and the lost."""
        found: list[tuple[int, Message]] = []
        lost = 0
        while len(found) < limit:
            items, cursor, gone = self.store.read(log_name, cursor, min(READ_BATCH, limit - len(found)))
            lost += gone
            found += [(seq, self._message(log_name, seq, raw)) for seq, raw in items]
            if not items:
                break
        return found, cursor, lost

    # --- subscriptions -------------------------------------------------------------------

    def note_greeting(self, client_id: str, small: bool) -> None:
        """A FlexClient pinged this process: every process may now open a stream for it
        (the note lasts `client_timeout`)."""
        value = b"1" if small else b"0"
        feed = self._feed_here()
        if feed is not None:  # on the event loop: not waited for
            feed.put_nowait(GREETED + client_id, value, _ms(self.client_timeout))
            return
        self.store.put(GREETED + client_id, value, self.client_timeout)

    def greeting(self, client_id: str) -> bool | None:
        """Whether a client pinged some process (None: not known), and whether it reads
        small forms."""
        raw = self.store.get(GREETED + client_id)
        return None if raw is None else raw == b"1"

    def _client(self, client_id: str) -> tuple[bytes | None, _Record | None]:
        """The client's record as stored (for a compare-and-set) and decoded; a record
        idle past `client_timeout` counts as absent (and goes)."""
        raw = self.store.get(CLIENT + client_id)
        if raw is None:
            return None, None
        record = _decode_client(raw)
        if float(record.get("t", 0)) + self.client_timeout < self._clock():
            self._forget(client_id, raw, record)
            return None, None
        return raw, record

    def _write(self, client_id: str, raw: bytes | None, record: _Record | None) -> bool:
        """Compare-and-set the client's record (None: delete it); whether it was written.
        On Redis, a write whose answer was lost is settled: this waits until Redis says,
        by the token the record carries, whether it was applied."""
        with self._lock:
            self._records.pop(client_id, None)
        if record is None:
            return self.store.cas(CLIENT + client_id, raw, None, self.client_timeout)
        token = _token()
        value = amf3.encode(_stamped(record, token))
        try:
            return self.store.cas(CLIENT + client_id, raw, value, self.client_timeout)
        except StoreError as e:
            if not self.remote:
                raise
            return self._settle(client_id, token, e)

    def _settle(self, client_id: str, token: str, error: StoreError) -> bool:
        """Whether a write of `token` whose answer was lost was applied: read the record
        until Redis answers (`SETTLE_TIMEOUT` at most: then `error`)."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        backoff = 0.05
        while True:
            try:
                return bool(_applied(self.store.get(CLIENT + client_id), token))
            except StoreError:
                if self._closing or time.monotonic() > deadline:
                    raise error from None
                time.sleep(backoff)
                backoff = min(backoff * 2, 1.0)

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A store operation from the event loop: in place on shared memory (microseconds),
        in a thread on Redis (a network round trip)."""
        if self.remote:
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    async def add_subscription(self, client_id: str, consumer_id: str, destination: str, subscription: Subscription = Subscription()) -> None:
        await self._run(self.subscribe_now, client_id, consumer_id, destination, subscription)

    def subscribe_now(self, client_id: str, consumer_id: str, destination: str, subscription: Subscription = Subscription()) -> None:
        """`add_subscription`, synchronously."""
        _compiled(subscription.selector)  # SelectorError before anything changes
        pair = [subscription.subtopic, subscription.selector]
        for _ in range(RETRIES):
            owner = self.store.get(CONSUMER + consumer_id)
            if owner is not None and _owner(owner)[0] != client_id:
                raise DuplicateSubscription(f"consumer id {consumer_id!r} is subscribed by another client")
            raw, record = self._client(client_id)
            if record is None:
                record = {"t": self._clock(), "n": {}}
            consumers: dict[str, Any] = record["n"]
            entry = consumers.get(consumer_id)
            if entry is not None and entry[0] != destination:
                entry = None  # moves: its old subscriptions go
            if entry is None:
                if consumer_id not in consumers and len(consumers) >= self.max_consumers:
                    raise SubscriptionLimit(f"a client may have at most {self.max_consumers} consumers")
                entry = [destination, self.store.head(LOG + destination), [], 0]
            if pair not in entry[2]:
                if len(entry[2]) >= self.max_subscriptions:
                    raise SubscriptionLimit(f"a consumer may have at most {self.max_subscriptions} subscriptions")
                entry[2].append(pair)
            consumers[consumer_id] = entry
            record["t"] = self._clock()
            try:
                if not self._write(client_id, raw, record):
                    continue
                self.store.put(CONSUMER + consumer_id, amf3.encode([client_id, destination]), self.client_timeout)
            except StoreError as e:
                raise SubscriptionLimit(f"the shared store refused the subscription: {e}") from None
            self._signal(client_id)
            return
        raise StoreError(f"client {client_id!r} changed too often to subscribe")

    async def remove_subscription(self, client_id: str, consumer_id: str, subscription: Subscription | None = None) -> bool:
        found: bool = await self._run(self.unsubscribe_now, client_id, consumer_id, subscription)
        return found

    def unsubscribe_now(self, client_id: str, consumer_id: str, subscription: Subscription | None = None) -> bool:
        """`remove_subscription`, synchronously."""
        for _ in range(RETRIES):
            raw, record = self._client(client_id)
            if record is None or raw is None:
                return False
            consumers: dict[str, Any] = record["n"]
            entry = consumers.get(consumer_id)
            if entry is None:
                return False
            if subscription is None:
                found = True
                del consumers[consumer_id]
            else:
                pair = [subscription.subtopic, subscription.selector]
                found = pair in entry[2]
                if found:
                    entry[2].remove(pair)
                    if not entry[2]:
                        del consumers[consumer_id]
            record["t"] = self._clock()
            if not self._write(client_id, raw, record if consumers else None):
                continue
            if consumer_id not in consumers:
                self._drop_owner(consumer_id, client_id)
            self._signal(client_id)
            return found
        raise StoreError(f"client {client_id!r} changed too often to unsubscribe")

    async def consumer(self, consumer_id: str) -> tuple[str, str] | None:
        feed = self._feed_here()
        owner = await feed.get(CONSUMER + consumer_id) if feed is not None else await self._run(self.store.get, CONSUMER + consumer_id)
        if owner is None:
            return None
        client_id, destination = _owner(owner)
        return (client_id, destination) if client_id else None

    def _drop_owner(self, consumer_id: str, client_id: str) -> None:
        owner = self.store.get(CONSUMER + consumer_id)
        if owner is not None and _owner(owner)[0] == client_id:
            self.store.cas(CONSUMER + consumer_id, owner, None)

    def _forget(self, client_id: str, raw: bytes, record: _Record) -> bool:
        """Remove a client's record and its consumer ids; whether this call removed it."""
        with self._lock:
            self._records.pop(client_id, None)
        if not self.store.cas(CLIENT + client_id, raw, None):
            return False
        for consumer_id in record["n"]:
            self._drop_owner(consumer_id, client_id)
        return True

    # --- delivery --------------------------------------------------------------------

    async def receive(self, client_id: str, *, consumer_id: str | None = None, limit: int | None = None) -> Batch | None:
        feed = self._feed_here()
        if feed is not None:
            return await self._adrain(feed, client_id, consumer_id, limit)
        batch: Batch | None = await self._run(self.drain, client_id, consumer_id=consumer_id, limit=limit)
        return batch

    def drain(self, client_id: str, *, consumer_id: str | None = None, limit: int | None = None) -> Batch | None:
        """`receive`, synchronously (what a thread of its own calls)."""
        for _ in range(RETRIES):
            raw, record = self._client(client_id)
            if record is None:
                return None
            consumers: dict[str, Any] = record["n"]
            if not consumers or (consumer_id is not None and consumer_id not in consumers):
                return None
            now = now_ms()
            found: list[tuple[int, int, str, Message]] = []
            dropped: dict[str, int] = {}
            cursors: dict[str, int] = {}
            for cid, (destination, cursor, subscriptions, lost_before) in consumers.items():
                if consumer_id is not None and cid != consumer_id:
                    continue
                items, cursors[cid], lost = self._read(LOG + destination, int(cursor), MAX_READ)
                if lost or lost_before:
                    dropped[cid] = int(lost_before) + lost
                for seq, message in items:
                    if not message.expired(now) and _matches(subscriptions, message):
                        found.append((message.timestamp, seq, cid, message))
            if len(found) > 1 and len(cursors) > 1:
                found.sort(key=lambda f: (f[0], f[1]))  # several logs: publication order
            if len(found) > self.queue_size:  # the client's bound: its newest only
                for _, _, cid, _ in found[: -self.queue_size]:
                    dropped[cid] = dropped.get(cid, 0) + 1
                found = found[-self.queue_size :]
            if limit is not None and len(found) > limit:
                for _, seq, cid, _ in reversed(found[max(limit, 0) :]):
                    cursors[cid] = seq - 1  # the first one left: read again next time
                found = found[: max(limit, 0)]
            changed = bool(found or dropped) or any(int(consumers[c][1]) != n for c, n in cursors.items())
            stale = float(record.get("t", 0)) + self.client_timeout / 10 < self._clock()
            if changed or stale:
                for cid, cursor in cursors.items():
                    consumers[cid][1] = cursor
                    consumers[cid][3] = 0
                record["t"] = self._clock()
                if not self._write(client_id, raw, record):
                    continue
            return Batch([Delivery(cid, message) for _, _, cid, message in found], dropped)
        raise StoreError(f"client {client_id!r} changed too often to drain")

    def _pending(self, record: _Record) -> bool:
        """Whether a client has something to drain (without draining it)."""
        now = now_ms()
        for destination, cursor, subscriptions, lost_before in record["n"].values():
            if lost_before:
                return True
            items, _, lost = self._read(LOG + destination, int(cursor), MAX_READ)
            if lost:
                return True
            if any(not m.expired(now) and _matches(subscriptions, m) for _, m in items):
                return True
        return False

    async def wait(self, client_id: str, timeout: float) -> bool:
        feed = self._feed_here()
        if timeout <= 0:
            if feed is not None:
                _, record = await self._arecord(feed, client_id)
                return record is not None and await self._apending(feed, record)
            _, record = await self._run(self._client, client_id)
            return record is not None and bool(await self._run(self._pending, record))
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        ready = await self.awatch(client_id, future)
        if ready is not None:
            return ready
        timer = loop.call_later(timeout, _resolve, future)
        try:
            await future
        finally:
            timer.cancel()
            self.unwatch(client_id, future)
            with self._lock:
                matched = future in self._hits
                self._hits.discard(future)
        # True when woken by a message for it (another worker may drain it first).
        return matched

    def watch(self, client_id: str, future: asyncio.Future[None]) -> bool | None:
        # Join the waiters first, then look: a message appended after the look is seen
        # by the listener (it reads from where it was when this client joined).
        with self._lock:
            waiting = self._waiting.get(client_id)
            if waiting is None:
                waiting = self._waiting[client_id] = _Waiting()
            waiting.futures.append(future)
        self._start_listener()
        try:
            since = self.store.head(CONTROL)
            with self._lock:
                if waiting.since < 0:
                    waiting.since = since
            _, record = self._client(client_id)
            if record is not None:
                self._follow(client_id, record)
                if self._pending(record):
                    self.unwatch(client_id, future)
                    return True
        except BaseException:
            self.unwatch(client_id, future)
            raise
        if record is None:
            self.unwatch(client_id, future)
            return False
        return None

    def _follow(self, client_id: str, record: _Record) -> None:
        """Note what a waiting client waits for, and have the listener read those logs."""
        consumers = {cid: (entry[0], entry[2]) for cid, entry in record["n"].items()}
        heads = {}
        for destination, _ in consumers.values():
            name = LOG + destination
            if name not in self._tracked:
                heads[name] = self.store.head(name)
        with self._lock:
            waiting = self._waiting.get(client_id)
            if waiting is None:
                return
            for destination, _ in waiting.consumers.values():
                self._by_destination.get(destination, set()).discard(client_id)
            waiting.consumers = consumers
            for destination, _ in consumers.values():
                self._by_destination.setdefault(destination, set()).add(client_id)
            for name, head in heads.items():
                self._tracked.setdefault(name, head)

    def unwatch(self, client_id: str, future: asyncio.Future[None]) -> None:
        with self._lock:
            waiting = self._waiting.get(client_id)
            if waiting is None:
                return
            if future in waiting.futures:
                waiting.futures.remove(future)
            if not waiting.futures:
                self._unwait(client_id, waiting)

    def _unwait(self, client_id: str, waiting: _Waiting) -> None:
        """Forget a client with no waiter left (under the lock)."""
        del self._waiting[client_id]
        for destination, _ in waiting.consumers.values():
            clients = self._by_destination.get(destination)
            if clients is not None:
                clients.discard(client_id)
                if not clients:
                    del self._by_destination[destination]

    def _take(self, client_id: str, matched: bool) -> list[asyncio.Future[None]]:
        """The futures of a client's waiters, which stop waiting (under the lock)."""
        waiting = self._waiting.get(client_id)
        if waiting is None:
            return []
        futures = waiting.futures
        waiting.futures = []
        self._unwait(client_id, waiting)
        if matched:
            self._hits.update(f for f in futures if not f.done())
        return futures

    def wake(self, client_id: str) -> None:
        with self._lock:
            futures = self._take(client_id, False)
        _resolve_all(futures)
        self._signal(client_id)

    def _signal(self, client_id: str) -> None:
        """Wake the client's waiters in every other process too (they look again)."""
        feed = self._feed
        if feed is not None and not feed.closed:
            # On Redis from the event loop: queued, not waited for (any thread).
            record = client_id.encode()
            if _on_loop(feed.loop):
                feed.append_nowait(CONTROL, record, "signalling the other workers")
            else:
                with contextlib.suppress(RuntimeError):  # the loop is closed
                    feed.loop.call_soon_threadsafe(feed.append_nowait, CONTROL, record, "signalling the other workers")
            return
        try:
            self.store.append(CONTROL, client_id.encode())
        except StoreError as e:
            log.warning("could not signal the other workers: %s", e)

    async def disconnect(self, client_id: str) -> None:
        await self._run(self.disconnect_now, client_id)

    def disconnect_now(self, client_id: str) -> None:
        """`disconnect`, synchronously."""
        for _ in range(RETRIES):
            raw, record = self._client(client_id)
            if raw is None or record is None or self._forget(client_id, raw, record):
                break
        self.wake(client_id)

    # --- the listener ----------------------------------------------------------------

    def _start_listener(self) -> None:
        if self._listener is not None or self._closing:
            return
        with self._lock:
            if self._listener is not None:
                return
            self._tracked.setdefault(CONTROL, self.store.head(CONTROL))
            self._listener = threading.Thread(target=self._listen, name="amfkit-broker-listener", daemon=True)
            self._listener.start()

    def _listen(self) -> None:
        store = self.store
        bell = store.bell()
        while not self._closing:
            try:
                bell = store.wait(bell, LISTEN_TIMEOUT)
                if self._closing:
                    break
                self._scan()
                if self._clock() - self._last_sweep > max(1.0, self.client_timeout / 10):
                    self.sweep()
            except StoreError as e:  # Redis away, a damaged record: say so, go on
                log.warning("broker listener: %s", e)
                time.sleep(0.2)
            except Exception:  # never let the thread die silently
                log.exception("broker listener")
                time.sleep(0.2)

    def _scan(self) -> None:
        """Read what the logs followed here got since the last look; wake the waiting
        clients it is for."""
        with self._lock:
            tracked = list(self._tracked.items())
        wake: list[asyncio.Future[None]] = []
        for name, cursor in tracked:
            while True:
                items, cursor, lost = self.store.read(name, cursor, READ_BATCH)
                if name == CONTROL:
                    with self._lock:
                        for seq, raw in items:
                            client_id = raw.decode("utf-8", "replace")
                            waiting = self._waiting.get(client_id)
                            if waiting is not None and 0 <= waiting.since < seq:
                                wake += self._take(client_id, False)
                elif items or lost:
                    wake += self._matching(name[len(LOG) :], [self._message(name, s, r) for s, r in items], lost)
                if len(items) < READ_BATCH:
                    break
            with self._lock:
                self._tracked[name] = cursor
        _resolve_all(wake)

    def _matching(self, destination: str, messages: list[Message], lost: int) -> list[asyncio.Future[None]]:
        wake: list[asyncio.Future[None]] = []
        now = now_ms()
        with self._lock:
            for client_id in list(self._by_destination.get(destination, ())):
                waiting = self._waiting.get(client_id)
                if waiting is None:
                    continue
                hit = lost > 0
                for dest, subscriptions in waiting.consumers.values():
                    if hit:
                        break
                    if dest == destination:
                        hit = any(not m.expired(now) and _matches(subscriptions, m) for m in messages)
                if hit:
                    wake += self._take(client_id, True)
        return wake

    # --- on the event loop, on redis:// -------------------------------------------------
    # One Feed per process (the first event loop to ask): one XREAD on the logs the
    # clients waiting here read, their records cached here, their drains' writes
    # pipelined. No Redis call holds the loop.

    def _feed_here(self) -> Feed | None:
        """The feed of the running event loop; None off it (a thread, another loop) or
        on shared memory."""
        if not self.remote or self._closing:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        feed = self._feed
        if feed is None or feed.closed:  # none yet, or its loop ended: one for this loop
            make = getattr(self.store, "feed", None)
            if make is None:
                return None
            with self._lock:
                if self._feed is None or self._feed.closed:
                    self._feed = make(self._on_records, self._on_state)
                feed = self._feed
        return feed if feed.loop is loop else None

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _closing_feed(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def _on_records(self, name: str, items: list[tuple[int, bytes]], lost: int) -> None:
        """The feed read new records of a log: wake the clients waiting here they are for."""
        wake: list[asyncio.Future[None]] = []
        if name == CONTROL:
            with self._lock:
                for seq, raw in items:
                    client_id = raw.decode("utf-8", "replace")
                    self._records.pop(client_id, None)  # changed by another process
                    waiting = self._waiting.get(client_id)
                    if waiting is not None and 0 <= waiting.since < seq:
                        wake += self._take(client_id, False)
            _resolve_all(wake)
            return
        feed = self._feed
        cache = feed.caches.get(name) if feed is not None else None
        messages: list[Message] = []
        for seq, raw in items:
            try:
                message: Message | None = self._message(name, seq, raw)
            except StoreError as e:
                log.warning("log %s, record %d: %s (skipped)", name, seq, e)
                message = None
            if cache is not None:
                cache.add(seq, message)
            if message is not None:
                messages.append(message)
        _resolve_all(self._matching(name[len(LOG) :], messages, lost))

    def _on_state(self, up: bool) -> None:
        """Redis came back: every waiter here looks again (what failed while it was away
        is done now)."""
        if not up:
            return
        with self._lock:
            futures = [f for client_id in list(self._waiting) for f in self._take(client_id, False)]
        _resolve_all(futures)

    async def awatch(self, client_id: str, future: asyncio.Future[None]) -> bool | None:
        """`watch` for an event loop: on redis://, with no Redis call that holds it."""
        feed = self._feed_here()
        if feed is None:
            if self.remote:
                ready: bool | None = await asyncio.to_thread(self.watch, client_id, future)
                return ready
            return self.watch(client_id, future)
        with self._lock:
            waiting = self._waiting.get(client_id)
            if waiting is None:
                waiting = self._waiting[client_id] = _Waiting()
            waiting.futures.append(future)
        try:
            if not feed.follows(CONTROL):
                feed.follow(CONTROL, await feed.head(CONTROL))
            with self._lock:
                if waiting.since < 0:
                    waiting.since = feed.cursors.get(CONTROL, 0)
            _, record = await self._arecord(feed, client_id)
            if record is not None:
                await self._afollow(feed, client_id, record)
                if await self._apending(feed, record):
                    self.unwatch(client_id, future)
                    return True
        except BaseException:
            self.unwatch(client_id, future)
            raise
        if record is None:
            self.unwatch(client_id, future)
            return False
        return None

    async def _arecord(self, feed: Feed, client_id: str) -> tuple[bytes | None, _Record | None]:
        """`_client` on the feed: the record this process wrote last, else Redis's."""
        held = self._records.get(client_id)
        if held is not None:
            raw, record = held
        else:
            got = await feed.get(CLIENT + client_id)
            if got is None:
                return None, None
            raw, record = got, _decode_client(got)
            self._keep(client_id, raw, record)
        if float(record.get("t", 0)) + self.client_timeout < self._clock():
            with self._lock:
                self._records.pop(client_id, None)
            await asyncio.to_thread(self._forget, client_id, raw, record)
            return None, None
        return raw, record

    def _keep(self, client_id: str, raw: bytes, record: _Record) -> None:
        with self._lock:
            self._records[client_id] = (raw, record)
            self._records.move_to_end(client_id)
            if len(self._records) > 100_000:
                self._records.popitem(last=False)

    async def _afollow(self, feed: Feed, client_id: str, record: _Record) -> None:
        """`_follow` on the feed: the logs the client reads are read by it."""
        for entry in record["n"].values():
            name = LOG + entry[0]
            if not feed.follows(name):
                feed.follow(name, await feed.head(name))
        consumers = {cid: (entry[0], entry[2]) for cid, entry in record["n"].items()}
        with self._lock:
            waiting = self._waiting.get(client_id)
            if waiting is None:
                return
            for destination, _ in waiting.consumers.values():
                self._by_destination.get(destination, set()).discard(client_id)
            waiting.consumers = consumers
            for destination, _ in consumers.values():
                self._by_destination.setdefault(destination, set()).add(client_id)

    async def _aread(self, feed: Feed, name: str, cursor: int, limit: int) -> tuple[list[tuple[int, Message]], int, int]:
        """`_read` on the feed: from the records it holds, else from Redis."""
        cache = feed.caches.get(name)
        if cache is not None:
            got = cache.after(cursor, limit)
            if got is not None:
                return [(seq, m) for seq, m in got if m is not None], got[-1][0] if got else cursor, 0
        found: list[tuple[int, Message]] = []
        lost = 0
        while len(found) < limit:
            items, cursor, gone = await feed.read(name, cursor, min(READ_BATCH, limit - len(found)))
            lost += gone
            for seq, raw in items:
                try:
                    found.append((seq, self._message(name, seq, raw)))
                except StoreError as e:
                    log.warning("log %s, record %d: %s (skipped)", name, seq, e)
            if not items:
                break
            got = cache.after(cursor, limit - len(found)) if cache is not None else None
            if got is not None:  # the rest is held here
                found += [(seq, m) for seq, m in got if m is not None]
                cursor = got[-1][0] if got else cursor
                break
        if not feed.follows(name):
            feed.follow(name, cursor)
        return found, cursor, lost

    async def _apending(self, feed: Feed, record: _Record) -> bool:
        now = now_ms()
        for destination, cursor, subscriptions, lost_before in record["n"].values():
            if lost_before:
                return True
            items, _, lost = await self._aread(feed, LOG + destination, int(cursor), MAX_READ)
            if lost:
                return True
            if any(not m.expired(now) and _matches(subscriptions, m) for _, m in items):
                return True
        return False

    async def _adrain(self, feed: Feed, client_id: str, consumer_id: str | None, limit: int | None) -> Batch | None:
        """`drain` on the feed: the client's record as this process wrote it last (read
        from Redis when another changed it), the logs from the feed's records, and one
        compare-and-set, pipelined with the other clients' drained at the same moment.
        The deliveries are returned only once Redis said the cursors moved: a write
        whose answer was lost is settled first (`_asettle`), never dropped."""
        for _ in range(RETRIES):
            cached = client_id in self._records
            raw, record = await self._arecord(feed, client_id)
            if raw is None or record is None:
                return None
            consumers: dict[str, Any] = record["n"]
            if cached and (not consumers or (consumer_id is not None and consumer_id not in consumers)):
                with self._lock:
                    self._records.pop(client_id, None)
                continue  # an answer of None on what Redis holds, not on this copy
            if not consumers or (consumer_id is not None and consumer_id not in consumers):
                return None
            now = now_ms()
            found: list[tuple[int, int, str, Message]] = []
            dropped: dict[str, int] = {}
            cursors: dict[str, int] = {}
            for cid, (destination, cursor, subscriptions, lost_before) in consumers.items():
                if consumer_id is not None and cid != consumer_id:
                    continue
                items, cursors[cid], lost = await self._aread(feed, LOG + destination, int(cursor), MAX_READ)
                if lost or lost_before:
                    dropped[cid] = int(lost_before) + lost
                for seq, message in items:
                    if not message.expired(now) and _matches(subscriptions, message):
                        found.append((message.timestamp, seq, cid, message))
            if self._records.get(client_id, (None,))[0] is not raw:
                continue  # changed while the logs were read: again
            if len(found) > 1 and len(cursors) > 1:
                found.sort(key=lambda f: (f[0], f[1]))
            if len(found) > self.queue_size:
                for _, _, cid, _ in found[: -self.queue_size]:
                    dropped[cid] = dropped.get(cid, 0) + 1
                found = found[-self.queue_size :]
            if limit is not None and len(found) > limit:
                for _, seq, cid, _ in reversed(found[max(limit, 0) :]):
                    cursors[cid] = seq - 1
                found = found[: max(limit, 0)]
            changed = bool(found or dropped) or any(int(consumers[c][1]) != n for c, n in cursors.items())
            stale = float(record.get("t", 0)) + self.client_timeout / 10 < self._clock()
            if changed or stale:
                entries = {c: [e[0], cursors[c], e[2], 0] if c in cursors else list(e) for c, e in consumers.items()}
                token = _token()
                new = _stamped({"t": self._clock(), "n": entries, "w": record.get("w")}, token)
                value = amf3.encode(new)
                try:
                    written = await feed.cas(CLIENT + client_id, raw, value, _ms(self.client_timeout))
                except Uncertain as e:
                    settled = await self._asettle(feed, client_id, token, e)
                    if settled is None:
                        return None
                    written = settled
                if not written:
                    with self._lock:
                        self._records.pop(client_id, None)
                    continue
                self._keep(client_id, value, new)
            elif cached:
                # Nothing to write, so nothing checked the record this process wrote last
                # against Redis's (another process may have changed the client): look.
                current = await feed.get(CLIENT + client_id)
                if current != raw:
                    with self._lock:
                        self._records.pop(client_id, None)
                    continue
            return Batch([Delivery(cid, message) for _, _, cid, message in found], dropped)
        raise StoreError(f"client {client_id!r} changed too often to drain")

    async def _asettle(self, feed: Feed, client_id: str, token: str, error: StoreError) -> bool | None:
        """`_settle` on the feed: whether the write of `token` was applied (None: the
        client has no record any more)."""
        with self._lock:
            self._records.pop(client_id, None)
        deadline = time.monotonic() + SETTLE_TIMEOUT
        backoff = 0.05
        while True:
            try:
                return _applied(await feed.get(CLIENT + client_id), token)
            except StoreError:
                if self._closing or feed.closed or time.monotonic() > deadline:
                    raise error from None
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)

    async def _atouch(self, feed: Feed, client_id: str, now: float) -> None:
        """`touch` on the feed (a task of its own: nobody waits for it)."""
        for _ in range(RETRIES):
            try:
                raw, record = await self._arecord(feed, client_id)
                if raw is None or record is None:
                    return
                new = _stamped({**record, "t": now}, _token())
                value = amf3.encode(new)
                if await feed.cas(CLIENT + client_id, raw, value, _ms(self.client_timeout)):
                    self._keep(client_id, value, new)
                    return
                with self._lock:
                    self._records.pop(client_id, None)
            except StoreError:  # Redis away (Uncertain too): the next touch tries again
                with self._lock:
                    self._records.pop(client_id, None)
                    self._touched.pop(client_id, None)
                return

    # --- upkeep ----------------------------------------------------------------------

    def touch(self, client_id: str) -> None:
        now = self._clock()
        with self._lock:
            last = self._touched.get(client_id)
            if last is not None and now - last < self.client_timeout / 10:
                return
            self._touched[client_id] = now
            self._touched.move_to_end(client_id)
            if len(self._touched) > 100_000:
                self._touched.popitem(last=False)
        feed = self._feed_here()
        if feed is not None:  # on the event loop: in a task of its own
            self._spawn(self._atouch(feed, client_id, now))
            return
        for _ in range(RETRIES):
            raw, record = self._client(client_id)
            if record is None:
                return
            record["t"] = now
            if self._write(client_id, raw, record):
                return

    def sweep(self) -> int:
        """Forget the clients idle past `client_timeout` (every process's listener does
        it now and then)."""
        self._last_sweep = self._clock()
        expired = 0
        for key in self.store.keys(CLIENT):
            raw = self.store.get(key)
            if raw is None:
                continue
            try:
                record = _decode_client(raw)
            except StoreError:  # damaged: it goes
                self.store.cas(key, raw, None)
                continue
            if float(record.get("t", 0)) + self.client_timeout < self._clock():
                client_id = key[len(CLIENT) :]
                if self._forget(client_id, raw, record):
                    expired += 1
                    self.wake(client_id)
        return expired

    def stats(self) -> dict[str, int]:
        clients = self.store.keys(CLIENT)
        with self._lock:
            waiting = sum(len(w.futures) for w in self._waiting.values())
            followed = len(self._tracked)
        return {
            "clients": len(clients),
            "consumers": len(self.store.keys(CONSUMER)),
            "waiters": waiting,
            "logs_followed": followed,
            "destinations": sum(1 for name in self.store.logs() if name.startswith(LOG)),
        }

    def subscribe(self, destination: str, *, subtopic: str | None = None, selector: str = "") -> Subscriber:
        from .broker import _subscription

        subscription = _subscription(subtopic, selector)
        if self._segment is not None:
            from .shm_subscriber import ShmSubscriber

            return ShmSubscriber(self._segment, self, destination, subscription, LOG + destination)
        return LogSubscriber(self, destination, subscription)

    async def close(self) -> None:
        feed = self._feed
        if feed is not None and _on_loop(feed.loop):
            self._closing_feed()
            await feed.close()
        await asyncio.to_thread(self.shutdown)  # joins the listener thread

    def shutdown(self) -> None:
        """`close`, synchronously: wake every waiter here, stop the listener, let go of
        the store (the last process out of a shared-memory segment removes it)."""
        if self._closing:
            return
        self._closing = True
        with self._lock:
            futures = [f for w in self._waiting.values() for f in w.futures]
            self._waiting.clear()
            self._by_destination.clear()
        _resolve_all(futures)
        listener = self._listener
        if listener is not None:
            try:
                self.store.append(CONTROL, b"")  # rings the bell: the listener looks up
            except StoreError:
                pass
            listener.join(LISTEN_TIMEOUT * 3)
        if self._owned and (listener is None or not listener.is_alive()):
            release_store(self.store)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether `loop` runs on this thread now."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _owner(raw: bytes) -> tuple[str, str]:
    try:
        value = amf3.decode(raw)
        client_id, destination = value
        return str(client_id), str(destination)
    except (AMFError, TypeError, ValueError):
        return "", ""


class LogSubscriber(Subscriber):
    """A shared broker's `Subscriber`: a cursor of this process in the destination's
    log (no client record, nothing for other processes to keep), starting at the
    newest message; it loses the oldest it has not read when the log wraps."""

    def __init__(self, broker: SharedBroker, destination: str, subscription: Subscription) -> None:
        super().__init__(destination, subscription)
        self.broker = broker
        self._store = broker.store
        self._log = LOG + destination
        self._subscriptions: list[Any] = [[subscription.subtopic, subscription.selector]]
        self._cursor = self._store.head(self._log)
        self._pending: list[Message] = []

    def _fill(self) -> None:
        items, self._cursor, lost = self._store.read(self._log, self._cursor, READ_BATCH)
        self.dropped += lost
        if not items:
            return
        now = now_ms()
        subscriptions = self._subscriptions
        for _, raw in items:
            message = decode_message(raw)
            if not message.expired(now) and _matches(subscriptions, message):
                self._pending.append(message)
        self._pending.reverse()  # popped from the end: oldest last

    def _next(self) -> Optional[Message]:
        if not self._pending:
            self._fill()
        return self._pending.pop() if self._pending else None

    def receive(self, timeout: float | None = None) -> Message | None:
        message = self._next()
        if message is not None or self.closed:
            return message
        store = self._store
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.closed:
            bell = store.bell()
            message = self._next()
            if message is not None:
                return message
            remaining = LISTEN_TIMEOUT if deadline is None else min(deadline - time.monotonic(), LISTEN_TIMEOUT)
            if remaining <= 0:
                return None
            store.wait(bell, remaining)
        return None

    async def areceive(self, timeout: float | None = None) -> Message | None:
        message = self._next()
        if message is not None or self.closed:
            return message
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        store = self._store
        while not self.closed:
            bell = store.bell()
            message = self._next()
            if message is not None:
                return message
            remaining = LISTEN_TIMEOUT if deadline is None else min(deadline - loop.time(), LISTEN_TIMEOUT)
            if remaining <= 0:
                return None
            await asyncio.to_thread(store.wait, bell, remaining)
        return None

    def close(self) -> None:
        self.closed = True
