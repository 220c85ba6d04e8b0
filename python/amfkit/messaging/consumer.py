"""Flex Consumers and Producers on a remoting client: subscribe to a gateway's
destination and receive what is published there, or publish to it, from Python.

    from amfkit.remoting import Client
    client = Client("http://127.0.0.1:8000/gateway")
    with client.consumer("prices", subtopic="fx.*", selector="symbol = 'ABC'") as consumer:
        client.producer("prices").send({"bid": 1.5}, headers={"symbol": "ABC"}, subtopic="fx.eur")
        consumer.poll(timeout=5)          # [Received(body={'bid': 1.5}, ...)]

`Client.consumer` returns a `Consumer`, `AsyncClient.consumer` an `AsyncConsumer`;
`Client.producer` a `Producer`, `AsyncClient.producer` an `AsyncProducer`. The channels
(polling, long-polling, HTTP streaming, WebSocket), the routing of pushed messages and
reconnection live in `amfkit.messaging.hub`; docs/client.md, "Messaging", has the whole
story. Nothing here needs httpx: this module only shapes messages and queues.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Union

from .._aio import wait_event
from .._text import shown
from ..remoting.messages import AsyncMessage, CommandMessage, ErrorMessage, Operation, new_id
from ..remoting.services import Fault

if TYPE_CHECKING:
    from .hub import AsyncHub, Hub

__all__ = [
    "CHANNELS",
    "POLL_INTERVAL",
    "QUEUE_SIZE",
    "AsyncConsumer",
    "AsyncProducer",
    "ConnectionLost",
    "Consumer",
    "MessagingFault",
    "Producer",
    "Received",
]

#: The ways a Consumer can get its messages: plain polling, long-polling (the default),
#: HTTP streaming and WebSocket.
CHANNELS = ("poll", "long-poll", "streaming", "websocket")
#: Messages one Consumer holds until its `poll()` or `stream()` takes them; when full,
#: the oldest is dropped and counted in `Consumer.dropped`.
QUEUE_SIZE = 1000
#: Seconds between two polls of the "poll" channel, unless the server asks for another
#: wait (`DSPollWait`).
POLL_INTERVAL = 1.0
#: The fault code of the notice a server pushes when its queue bound dropped messages
#: meant for a Consumer (amfkit.messaging.commands.MESSAGES_DROPPED).
MESSAGES_DROPPED = "Server.Processing.MessagesDropped"
#: The header of a copy pushed from a shared broker (`shm://`, `redis://`) holding its
#: position in its destination's log; a Consumer resubscribing after a lost channel sends
#: the last one it received (amfkit.messaging.commands.POSITION).
POSITION = "amfkitPosition"


@dataclasses.dataclass(frozen=True)
class Received:
    """A message a Consumer received.

    `headers` are the message's headers as sent (what selectors read); `subtopic` is the
    one it was sent to (its `DSSubtopic` header), or None; `timestamp` is the server's
    clock when it arrived there, in milliseconds since the epoch; `time_to_live` is in
    milliseconds (0: it never expires); `client_id` is the Consumer's id; `raw` is the
    Flex message itself; `position` is its number in its destination's log on a server
    with a shared broker (`shm://`, `redis://`: the `amfkitPosition` header, not among
    `headers`), else None.
    """

    body: Any
    headers: dict[str, Any]
    message_id: str | None
    client_id: str | None
    destination: str | None
    subtopic: str | None
    timestamp: int | None
    time_to_live: int
    correlation_id: str | None
    raw: AsyncMessage = dataclasses.field(repr=False, compare=False)
    position: int | None = None

    @classmethod
    def of(cls, message: AsyncMessage) -> Received:
        """The Received for a pushed Flex message; only text is taken for the ids."""
        headers = dict(message.headers) if isinstance(message.headers, Mapping) else {}
        position = _position(headers.pop(POSITION, None))
        subtopic = headers.get("DSSubtopic")
        ttl = message.timeToLive
        stamp = message.timestamp
        return cls(
            body=message.body,
            headers=headers,
            message_id=_text(message.messageId),
            client_id=_text(message.clientId),
            destination=_text(message.destination),
            subtopic=subtopic if isinstance(subtopic, str) and subtopic else None,
            timestamp=int(stamp) if _number(stamp) else None,
            time_to_live=int(ttl) if _number(ttl) and ttl > 0 else 0,
            correlation_id=_text(getattr(message, "correlationId", None)),
            raw=message,
            position=position,
        )


def _position(value: Any) -> int | None:
    """A log position from a header: a non-negative integer (AMF3 sends those past 2**28
    as doubles), else None."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class MessagingFault(Fault):
    """A fault the server pushed to a Consumer (an ErrorMessage carrying its id), raised
    by `poll()` and `stream()` at its place among the messages. `code`, `message`,
    `details` as for `Fault`; `raw` is the ErrorMessage. The server's notice that its
    queue dropped messages (`Server.Processing.MessagesDropped`) is not raised: it is
    counted in `Consumer.dropped`."""

    @classmethod
    def from_message(cls, error: ErrorMessage) -> MessagingFault:
        text = error.faultString
        code = error.faultCode
        fault = cls(text if isinstance(text, str) else shown(text), code=code if isinstance(code, str) else "Server.Processing", details=error.faultDetail)
        fault.raw = error
        return fault


class ConnectionLost(ConnectionError):
    """A Consumer lost its server and did not get it back: `reconnect=False`, or
    `max_attempts` reconnection attempts failed. The Consumer is closed; `attempts` is
    how many attempts were made, and the last error is the exception's `__cause__`."""

    def __init__(self, message: str, attempts: int = 0) -> None:
        super().__init__(message)
        self.attempts = attempts


_Item = Union[Received, MessagingFault]


class _Inbox:
    """A Consumer's local queue: bounded, the oldest message dropped (and counted) to
    make room. Pushed faults wait at their place among the messages."""

    __slots__ = ("items", "size", "dropped")

    def __init__(self, size: int) -> None:
        self.items: deque[_Item] = deque()
        self.size = size
        self.dropped = 0

    def put(self, item: _Item) -> None:
        if len(self.items) >= self.size:
            self.items.popleft()
            self.dropped += 1
        self.items.append(item)

    def take(self, limit: int | None) -> list[Received]:
        """The messages queued before the first fault (at most `limit`); a fault at the
        head is removed and raised."""
        out: list[Received] = []
        items = self.items
        while items and (limit is None or len(out) < limit):
            item = items[0]
            if isinstance(item, MessagingFault):
                if out:
                    break
                items.popleft()
                raise item
            out.append(item)
            items.popleft()
        return out


# --------------------------------------------------------------------------------------
# What both Consumers share: their subscription, their queue and their id


class _ConsumerBase:
    """A subscription and its queue. The hub reads `destination`, `subtopic`,
    `selector`, `channel`, `max_attempts` and the id, and calls `_deliver`, `_adopt` and
    `_end`."""

    def __init__(
        self,
        destination: str,
        *,
        subtopic: str | None,
        selector: str | None,
        channel: str,
        queue_size: int,
        reconnect: bool,
        max_attempts: int | None,
        poll_interval: float,
    ) -> None:
        if not isinstance(destination, str) or not destination:
            raise TypeError(f"a destination is a non-empty str, found {shown(destination)}")
        if subtopic is not None and not isinstance(subtopic, str):
            raise TypeError(f"subtopic must be a str or None, found {shown(subtopic)}")
        if selector is not None and not isinstance(selector, str):
            raise TypeError(f"selector must be a str or None, found {shown(selector)}")
        if channel not in CHANNELS:
            raise ValueError(f"unknown channel {shown(channel)} (amfkit has: {', '.join(CHANNELS)})")
        if isinstance(queue_size, bool) or not isinstance(queue_size, int) or queue_size < 1:
            raise ValueError("queue_size must be a positive int")
        if max_attempts is not None and (isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 0):
            raise ValueError("max_attempts must be None (no limit) or an int of 0 or more")
        if not (isinstance(poll_interval, (int, float)) and math.isfinite(poll_interval) and poll_interval >= 0):
            raise ValueError("poll_interval must be 0 or more seconds")
        self.destination = destination
        self.subtopic = subtopic or None
        self.selector = selector or None
        self.channel = channel
        self.queue_size = queue_size
        self.reconnect = bool(reconnect)
        #: Reconnection attempts before giving up (0: none; None: no limit).
        self.max_attempts: int | None = max_attempts if reconnect else 0
        self.poll_interval = float(poll_interval)
        self._id: str | None = None
        #: The position of the last message received (shared brokers): a resubscribe
        #: resumes after it, and a copy at or before it (on its way before the resume) is
        #: not taken twice.
        self._position: int | None = None
        #: How many times the Consumer was subscribed again after its channel was lost.
        self.resumes = 0
        self._inbox = _Inbox(queue_size)
        self._server_dropped = 0
        self._closed = False
        self._error: BaseException | None = None

    @property
    def id(self) -> str | None:
        """The consumer id the server gave at subscribe time (it may change when the
        Consumer resubscribes after a reconnection); None before subscribing."""
        return self._id

    @property
    def dropped(self) -> int:
        """Messages this Consumer lost: pushed out of its full local queue, plus those
        the server reported dropped from its own queue (`MessagesDropped` notices)."""
        return self._inbox.dropped + self._server_dropped

    @property
    def closed(self) -> bool:
        """Whether the Consumer has ended: unsubscribed, its client closed, or its
        connection lost for good (`poll()` and `stream()` then raise `ConnectionLost`)."""
        return self._closed

    def __repr__(self) -> str:
        parts = [type(self).__name__, repr(self.destination)]
        if self.subtopic:
            parts.append(f"subtopic={self.subtopic!r}")
        if self.selector:
            parts.append(f"selector={self.selector!r}")
        parts.append(self.channel)
        parts.append("closed" if self._closed else f"id={self._id}")
        return f"<{' '.join(parts)}>"

    # -- what the hub calls (the delivery side) ----------------------------------------

    def _deliver(self, message: Any) -> None:
        """A message pushed to this Consumer: queued; a MessagesDropped notice counted."""
        if isinstance(message, ErrorMessage):
            if message.faultCode == MESSAGES_DROPPED:
                extended = message.extendedData
                n = extended.get("dropped") if isinstance(extended, Mapping) else None
                self._count_dropped(n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1)
                return
            item: _Item = MessagingFault.from_message(message)
        elif isinstance(message, AsyncMessage):
            item = Received.of(message)
            position = item.position
            if position is not None:
                if self._position is not None and position <= self._position:
                    return  # delivered again after a resume: it came already
                self._position = position
        else:  # pragma: no cover - the hub routes AsyncMessages only
            return
        self._put(item)

    def _put(self, item: _Item) -> None:
        raise NotImplementedError

    def _count_dropped(self, n: int) -> None:
        self._server_dropped += n

    def _adopt(self, consumer_id: str, ack: Any = None, sent: int | None = None) -> None:
        """The id a subscribe's answer `ack` gave, and the position delivery goes on after
        (its `amfkitPosition`): taken on a first subscribe, and on a resubscribe that sent
        `sent` when it is before that (the server's log started over: Redis lost its
        data). Otherwise the Consumer keeps its own (it may have received more since)."""
        self._id = consumer_id
        headers = getattr(ack, "headers", None)
        position = _position(headers.get(POSITION)) if isinstance(headers, Mapping) else None
        if position is not None and (self._position is None or (sent is not None and position < sent)):
            self._position = position

    def _end(self, error: BaseException | None = None) -> None:
        """Closed by the hub: unsubscribed, the client closed, or `error` (a lost
        connection, a fault) ends it; the messages already queued can still be taken."""
        self._closed = True
        if error is not None and self._error is None:
            self._error = error
        self._wake()

    def _wake(self) -> None:
        raise NotImplementedError

    # -- messages -------------------------------------------------------------------

    def _subscribe_message(self) -> CommandMessage:
        """The subscribe command: op 0, no clientId (the server assigns the id, even when
        resubscribing), DSSubtopic and DSSelector when set."""
        return CommandMessage(operation=Operation.SUBSCRIBE, destination=self.destination, clientId=None, headers=self._subscription_headers())

    def _resubscribe_message(self) -> CommandMessage:
        """The subscribe command of a Consumer that lost its channel: its own id (as Flex
        resubscribes), and the position of the last message it received when the server
        gives positions, so that delivery goes on after it."""
        headers = self._subscription_headers()
        if self._position is not None:
            headers[POSITION] = self._position
        return CommandMessage(operation=Operation.SUBSCRIBE, destination=self.destination, clientId=self._id, headers=headers)

    def _unsubscribe_message(self) -> CommandMessage:
        return CommandMessage(operation=Operation.UNSUBSCRIBE, destination=self.destination, clientId=self._id, headers=self._subscription_headers())

    def _subscription_headers(self) -> dict[str, Any]:
        headers: dict[str, Any] = {}
        if self.subtopic:
            headers["DSSubtopic"] = self.subtopic
        if self.selector:
            headers["DSSelector"] = self.selector
        return headers


def _deadline(timeout: float | None, limit: int | None = None) -> float | None:
    """The monotonic time a poll waits until; also checks its `limit`."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError("limit must be None or a positive int")
    if timeout is None:
        return None
    if not (isinstance(timeout, (int, float)) and timeout >= 0):
        raise ValueError("timeout must be None or 0 or more seconds")
    return time.monotonic() + timeout


# --------------------------------------------------------------------------------------
# The sync Consumer and Producer


class Consumer(_ConsumerBase):
    """A subscription to a destination, made by `Client.consumer(...)` (subscribed when
    returned); its messages arrive in the background and wait in a local queue of
    `queue_size` messages (when full, the oldest is dropped and counted in `dropped`).

    Thread-safety: any thread may call `poll()`, `stream()` and `unsubscribe()`; when
    several threads take from one Consumer, each message goes to one of them. The
    messages are fetched by one background thread per channel of the client, shared by
    all its Consumers on that channel.
    """

    def __init__(self, hub: Hub, destination: str, **options: Any) -> None:
        super().__init__(destination, **options)
        self._hub = hub
        self._cond = threading.Condition()
        hub.subscribe(self)

    def _put(self, item: _Item) -> None:
        with self._cond:
            self._inbox.put(item)
            self._cond.notify_all()

    def _count_dropped(self, n: int) -> None:
        with self._cond:
            self._server_dropped += n

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def poll(self, timeout: float | None = None, *, limit: int | None = None) -> list[Received]:
        """The queued messages (at most `limit`), waiting up to `timeout` seconds for at
        least one (None: as long as it takes; 0: not at all); [] when none came.

        Raises a `MessagingFault` the server pushed, at its place among the messages;
        `ConnectionLost` when the Consumer lost its server for good. A closed Consumer
        returns what it still holds, then [] at once.
        """
        deadline = _deadline(timeout, limit)
        with self._cond:
            while True:
                items = self._inbox.take(limit)
                if items:
                    return items
                if self._error is not None:
                    raise self._error
                if self._closed:
                    return []
                if deadline is None:
                    self._cond.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return []
                    self._cond.wait(remaining)

    def stream(self) -> Iterator[Received]:
        """Every message as it arrives, without end: until the Consumer is
        unsubscribed or its client closed (the iteration then stops), a pushed
        `MessagingFault` or `ConnectionLost` (raised)."""
        while True:
            with self._cond:
                while True:
                    items = self._inbox.take(1)
                    if items:
                        break
                    if self._error is not None:
                        raise self._error
                    if self._closed:
                        return
                    self._cond.wait()
            yield items[0]

    def unsubscribe(self) -> None:
        """Unsubscribe and close (no error if already closed). The messages already
        queued can still be taken with `poll()`. Raises the `Fault` or `TransportError`
        of the unsubscribe request, the Consumer being closed anyway."""
        if not self._closed:
            self._hub.unsubscribe(self)

    close = unsubscribe

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        try:
            self.unsubscribe()
        except Exception:
            if exc_type is None:
                raise  # else the block's own exception says more


class Producer:
    """Sends messages to a destination: `Client.producer(destination, subtopic=None)`.
    `id` is the producer id the server gave at the first send."""

    def __init__(self, hub: Hub, destination: str, *, subtopic: str | None = None) -> None:
        self._hub = hub
        self.destination, self.subtopic = _producer_target(destination, subtopic)
        self.id: str | None = None

    def send(
        self,
        body: Any,
        *,
        headers: Mapping[str, Any] | None = None,
        subtopic: str | None = None,
        ttl: float | None = None,
        correlation_id: str | None = None,
    ) -> str:
        """Send `body` and wait for the server's acknowledgement; returns the message id.
        `headers` are what Consumers' selectors read; `subtopic` (else the Producer's)
        names no wildcard; `ttl` is seconds the message lives (None: forever). A refusal
        raises its `Fault`, a failed exchange a `TransportError` (a send is not retried)."""
        message = _send_message(self, body, headers, subtopic, ttl, correlation_id)
        ack = self._hub.send(message)
        self.id = _text(getattr(ack, "clientId", None)) or self.id
        return str(message.messageId)

    def __repr__(self) -> str:
        return f"<Producer {self.destination!r}{f' subtopic={self.subtopic!r}' if self.subtopic else ''}>"


# --------------------------------------------------------------------------------------
# The async ones


class AsyncConsumer(_ConsumerBase):
    """`AsyncClient.consumer(...)`: subscribed when awaited (`consumer = await
    client.consumer(...)`) or entered (`async with client.consumer(...) as consumer`);
    then `await consumer.poll(...)`, `async for m in consumer.stream()`, `await
    consumer.unsubscribe()`. Same queue and rules as `Consumer`; use it on one event
    loop, the one its client's channels run in.
    """

    def __init__(self, hub: AsyncHub, destination: str, **options: Any) -> None:
        super().__init__(destination, **options)
        self._hub = hub
        self._event: asyncio.Event | None = None
        self._subscribed = False
        self._subscribing: asyncio.Lock | None = None

    def _signal(self) -> asyncio.Event:
        if self._event is None:
            self._event = asyncio.Event()
        return self._event

    def _put(self, item: _Item) -> None:
        self._inbox.put(item)
        self._signal().set()

    def _wake(self) -> None:
        self._signal().set()

    async def subscribe(self) -> AsyncConsumer:
        """Subscribe (once; awaiting the Consumer or entering it does this)."""
        if self._subscribing is None:
            self._subscribing = asyncio.Lock()
        async with self._subscribing:
            if not self._subscribed:
                if self._closed:
                    raise RuntimeError("this consumer is closed")
                await self._hub.subscribe(self)
                self._subscribed = True
        return self

    def __await__(self) -> Generator[Any, None, AsyncConsumer]:
        return self.subscribe().__await__()

    async def poll(self, timeout: float | None = None, *, limit: int | None = None) -> list[Received]:
        """`Consumer.poll`, awaited."""
        deadline = _deadline(timeout, limit)
        await self.subscribe()
        event = self._signal()
        while True:
            items = self._inbox.take(limit)
            if items:
                return items
            if self._error is not None:
                raise self._error
            if self._closed:
                return []
            event.clear()
            if deadline is None:
                await event.wait()
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            await wait_event(event, remaining)

    async def stream(self) -> AsyncGenerator[Received, None]:
        """`Consumer.stream`: `async for message in consumer.stream()`."""
        await self.subscribe()
        event = self._signal()
        while True:
            items = self._inbox.take(1)
            if items:
                yield items[0]
                continue
            if self._error is not None:
                raise self._error
            if self._closed:
                return
            event.clear()
            await event.wait()

    async def unsubscribe(self) -> None:
        """`Consumer.unsubscribe`, awaited."""
        if self._closed:
            return
        if not self._subscribed:
            self._end()
            return
        await self._hub.unsubscribe(self)

    close = unsubscribe

    async def __aenter__(self) -> AsyncConsumer:
        return await self.subscribe()

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        try:
            await self.unsubscribe()
        except Exception:
            if exc_type is None:
                raise


class AsyncProducer:
    """`AsyncClient.producer(...)`: `await producer.send(...)`, as `Producer.send`."""

    def __init__(self, hub: AsyncHub, destination: str, *, subtopic: str | None = None) -> None:
        self._hub = hub
        self.destination, self.subtopic = _producer_target(destination, subtopic)
        self.id: str | None = None

    async def send(
        self,
        body: Any,
        *,
        headers: Mapping[str, Any] | None = None,
        subtopic: str | None = None,
        ttl: float | None = None,
        correlation_id: str | None = None,
    ) -> str:
        """`Producer.send`, awaited."""
        message = _send_message(self, body, headers, subtopic, ttl, correlation_id)
        ack = await self._hub.send(message)
        self.id = _text(getattr(ack, "clientId", None)) or self.id
        return str(message.messageId)

    def __repr__(self) -> str:
        return f"<AsyncProducer {self.destination!r}{f' subtopic={self.subtopic!r}' if self.subtopic else ''}>"


def _producer_target(destination: Any, subtopic: Any) -> tuple[str, str | None]:
    if not isinstance(destination, str) or not destination:
        raise TypeError(f"a destination is a non-empty str, found {shown(destination)}")
    if subtopic is not None and not isinstance(subtopic, str):
        raise TypeError(f"subtopic must be a str or None, found {shown(subtopic)}")
    return destination, subtopic or None


def _send_message(
    producer: Producer | AsyncProducer,
    body: Any,
    headers: Mapping[str, Any] | None,
    subtopic: str | None,
    ttl: float | None,
    correlation_id: str | None,
) -> AsyncMessage:
    """A Producer's AsyncMessage: its headers plus DSSubtopic, a new message id."""
    if headers is not None and not isinstance(headers, Mapping):
        raise TypeError("headers must be a mapping of names to values")
    fields = dict(headers or {})
    topic = subtopic if subtopic is not None else producer.subtopic
    if topic is not None and not isinstance(topic, str):
        raise TypeError(f"subtopic must be a str or None, found {shown(topic)}")
    if topic:
        fields["DSSubtopic"] = topic
    if ttl is not None and not (isinstance(ttl, (int, float)) and math.isfinite(ttl) and ttl >= 0):
        raise ValueError("ttl must be None or 0 or more seconds")
    return AsyncMessage(
        destination=producer.destination,
        body=body,
        headers=fields,
        clientId=producer.id,
        messageId=new_id(),
        timeToLive=0 if ttl is None else round(ttl * 1000),
        correlationId=correlation_id,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
