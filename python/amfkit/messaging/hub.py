"""The client side of Flex messaging: one hub per remoting client, which subscribes its
Consumers, runs their channels and routes pushed messages to them by consumer id
(docs/client.md, "Messaging"; the wire is the server's, docs/messaging.md).

- All the Consumers of a client share its FlexClient (the `DSId` of its ping) and one
  channel per kind: "poll" and "long-poll" (the general poll, op 2, in a loop),
  "streaming" (one held-open HTTP response of frames) and "websocket" (one socket,
  which is a FlexClient of its own: the Consumers on it subscribe through it).
- A pushed message carries the consumer id the server gave at subscribe time as its
  `clientId`; the hub hands it to that Consumer. A message for an id not (yet) known
  waits among a few `ORPHANS` (a reply and a push may race).
- A loss (the server forgot the client: a poll's `Server.Processing.NotSubscribed`, a
  stream refused with 400, a WebSocket closed; or the server unreachable) is followed
  by a new handshake and every open Consumer subscribed again, with a doubling wait
  between attempts, at most `BACKOFF_MAX`. A Consumer that gives up (`reconnect=False`,
  `max_attempts`) ends with `ConnectionLost`.

`Hub` runs on threads (one daemon thread per channel) for `Client`; `AsyncHub` on
tasks of the event loop for `AsyncClient`. The WebSocket channel is in
`amfkit.messaging.websocket_client`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Awaitable
from urllib.parse import urlsplit, urlunsplit

import httpx

from .. import __version__, amf3
from .._aio import wait_event
from .._text import MAX_SHOWN, clip, shown
from ..remoting.client import TransportError, _transport_error
from ..remoting.messages import AcknowledgeMessage, AsyncMessage, CommandMessage, ErrorMessage, Operation
from ..remoting.services import Fault
from .consumer import AsyncConsumer, ConnectionLost, Consumer, _ConsumerBase

if TYPE_CHECKING:
    from ..remoting.client import AsyncClient, Client
    from .websocket_client import AsyncSocket, SyncSocket

__all__ = ["AsyncHub", "Frames", "Hub", "Routes", "backoff", "websocket_url"]

#: What a client's channels go through (losses, reconnections, resubscriptions), at DEBUG.
log = logging.getLogger("amfkit.messaging.client")

#: The wait before the first retry after a failed attempt (seconds); it doubles with
#: each failed attempt, up to BACKOFF_MAX, with up to half of it taken off at random.
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0
#: Seconds a long-poll's answer may take (the server holds it up to its `poll_wait`,
#: 25 s by default); past it the poll is simply made again.
LONG_POLL_READ = 90.0
#: Seconds a stream may stay silent (servers send a heartbeat every 15 s by default)
#: before it counts as lost.
STREAM_READ = 90.0
#: Seconds a new Consumer on the streaming channel waits for the stream to open.
OPEN_WAIT = 10.0
#: Pushed messages kept for consumer ids the hub does not know (yet).
ORPHANS = 256
#: The longest hex length line of a stream frame (more is not a stream).
MAX_LENGTH_LINE = 16
#: The server's fault for a poll from a client it does not know.
NOT_SUBSCRIBED = "Server.Processing.NotSubscribed"
#: The server's fault when its broker's store cannot be reached (Redis restarting):
#: nothing was done, and the same request may be made again.
UNAVAILABLE = "Server.Processing.Unavailable"

def backoff(attempt: int) -> float:
    """Seconds to wait before attempt `attempt` (1 for the first retry)."""
    wait = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** min(max(attempt - 1, 0), 16))
    return wait * random.uniform(0.5, 1.0)


def websocket_url(url: str) -> str:
    """The WebSocket address of a gateway: its URL with `ws`/`wss` for `http`/`https`."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme.lower(), parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path, parts.query, ""))


class _Forgotten(Exception):
    """The server no longer knows this client (NotSubscribed, a stream refused)."""


class _Refused(Exception):
    """The server refuses the channel for good (a stream answered 4xx other than 400)."""


# --------------------------------------------------------------------------------------
# Routing and framing (no I/O)


class Routes:
    """Consumer id -> Consumer, thread-safe; pushed messages for unknown ids wait among
    the last `ORPHANS` until their Consumer is added (its subscribe reply may come after
    the first message for it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, _ConsumerBase] = {}
        self._orphans: deque[tuple[str, Any]] = deque(maxlen=ORPHANS)

    def add(self, consumer_id: str, consumer: _ConsumerBase) -> None:
        with self._lock:
            self._by_id[consumer_id] = consumer
            mine = [m for i, m in self._orphans if i == consumer_id]
            if mine:
                kept = [(i, m) for i, m in self._orphans if i != consumer_id]
                self._orphans.clear()
                self._orphans.extend(kept)
        for message in mine:
            consumer._deliver(message)

    def remove(self, consumer_id: str | None, consumer: _ConsumerBase) -> None:
        with self._lock:
            if consumer_id is not None and self._by_id.get(consumer_id) is consumer:
                del self._by_id[consumer_id]

    def route(self, message: Any) -> None:
        """Hand a pushed message to the Consumer whose id is its `clientId`."""
        consumer_id = message.clientId
        if not isinstance(consumer_id, str):
            return
        with self._lock:
            consumer = self._by_id.get(consumer_id)
            if consumer is None:
                self._orphans.append((consumer_id, message))
                return
        consumer._deliver(message)


def _pushed(value: Any) -> bool:
    """Whether a value from a poll, stream or socket is a message for a Consumer: an
    AsyncMessage, or an ErrorMessage addressed to one (a MessagesDropped notice); not
    an acknowledgement nor a command."""
    if isinstance(value, ErrorMessage):
        return True
    return isinstance(value, AsyncMessage) and not isinstance(value, (AcknowledgeMessage, CommandMessage))


def _disconnect(value: Any) -> bool:
    return isinstance(value, CommandMessage) and value.operation == Operation.DISCONNECT


class Frames:
    """Reads an HTTP stream's body: frames `<hex length>\\r\\n<one AMF3 value>\\r\\n`,
    with single 0x00 heartbeat bytes between them. `feed(data)` returns the values
    complete so far; a frame longer than `max_size` or malformed raises ValueError."""

    def __init__(self, max_size: int, decode_options: Mapping[str, Any] | None = None) -> None:
        self._buffer = bytearray()
        self._max_size = max_size
        self._options = dict(decode_options or {})

    def feed(self, data: bytes) -> list[Any]:
        buf = self._buffer
        buf += data
        out: list[Any] = []
        while True:
            start = 0
            while start < len(buf) and buf[start] == 0:  # heartbeats
                start += 1
            end = buf.find(b"\r\n", start)
            if end < 0:
                if len(buf) - start > MAX_LENGTH_LINE:
                    raise ValueError(f"a stream frame's length line is longer than {MAX_LENGTH_LINE} bytes")
                del buf[:start]
                return out
            line = bytes(buf[start:end])
            try:
                if not line or len(line) > MAX_LENGTH_LINE:
                    raise ValueError
                length = int(line, 16)
            except ValueError:
                raise ValueError(f"a stream frame's length is not hex: {shown(line)}") from None
            if length > self._max_size:
                raise ValueError(f"a stream frame of {length} bytes is larger than the {self._max_size} allowed")
            first = end + 2
            if len(buf) < first + length + 2:
                del buf[:start]
                return out
            if buf[first + length : first + length + 2] != b"\r\n":
                raise ValueError("a stream frame does not end with CRLF")
            out.append(amf3.decode(bytes(buf[first : first + length]), **self._options))
            del buf[: first + length + 2]


def _poll_answer(reply: Any) -> tuple[list[Any], float | None]:
    """The messages a poll's answer carries and the wait it asks for (seconds)."""
    headers = reply.headers if isinstance(getattr(reply, "headers", None), Mapping) else {}
    items: list[Any] = []
    if isinstance(reply, CommandMessage) and reply.operation == Operation.CLIENT_SYNC and not headers.get("DSNoOpPoll"):
        body = reply.body
        items = [m for m in body if _pushed(m)] if isinstance(body, list) else []
    wait = headers.get("DSPollWait")
    if isinstance(wait, (int, float)) and not isinstance(wait, bool) and 0 <= wait < 3_600_000:
        return items, wait / 1000
    return items, None


def _next_poll(kind: str, hint: float | None, consumers: list[_ConsumerBase]) -> float:
    """Seconds until the next poll. "poll": the shortest `poll_interval` of the channel's
    Consumers, or the server's `DSPollWait` when longer. "long-poll": the server's
    `DSPollWait` (a long-polling server asks for the next poll at once), or the interval
    when it gives none (a server that does not hold polls is not polled in a loop)."""
    interval = min((c.poll_interval for c in consumers), default=0.0)
    if kind == "poll":
        return max(interval, hint or 0.0)
    return interval if hint is None else hint


def _consumer_id(ack: Any) -> str:
    consumer_id = getattr(ack, "clientId", None)
    if not isinstance(consumer_id, str) or not consumer_id:
        raise TransportError(f"the subscribe acknowledgement has no consumer id (clientId {shown(consumer_id)})")
    return consumer_id


def _lost_text(consumer: _ConsumerBase, attempts: int, error: BaseException | None) -> str:
    why = clip(str(error) or type(error).__name__, MAX_SHOWN * 4) if error is not None else "no detail"
    if consumer.max_attempts == 0:
        return f"the consumer of {shown(consumer.destination)} lost its server (reconnect is off): {why}"
    return f"the consumer of {shown(consumer.destination)} gave up after {attempts} reconnection attempts: {why}"


# --------------------------------------------------------------------------------------
# What both hubs share: the Consumers and their routes


class _HubBase:
    def __init__(self) -> None:
        self.routes = Routes()
        self._lock = threading.Lock()
        self._consumers: dict[_ConsumerBase, None] = {}  # ordered: resubscribed in order
        self.closed = False
        #: How many times the HTTP Consumers were resubscribed: a channel that lost its
        #: way resumes them unless another channel did since it last tried.
        self._resumes = 0

    def _add(self, consumer: _ConsumerBase, consumer_id: str, ack: Any = None) -> None:
        with self._lock:
            self._consumers[consumer] = None
        consumer._adopt(consumer_id, ack)
        self.routes.add(consumer_id, consumer)

    def _remove(self, consumer: _ConsumerBase) -> bool:
        with self._lock:
            known = consumer in self._consumers
            self._consumers.pop(consumer, None)
        self.routes.remove(consumer.id, consumer)
        return known

    def _move(self, consumer: _ConsumerBase, consumer_id: str, ack: Any = None, sent: int | None = None) -> None:
        """A resubscribed Consumer's id (its own, unless the server gave another) and
        position (`sent`: the one its resubscribe carried)."""
        self.routes.remove(consumer.id, consumer)
        consumer._adopt(consumer_id, ack, sent)
        consumer.resumes += 1
        self.routes.add(consumer_id, consumer)

    def _of(self, kinds: Iterable[str]) -> list[_ConsumerBase]:
        kinds = set(kinds)
        with self._lock:
            return [c for c in self._consumers if c.channel in kinds]

    def _active(self, kind: str) -> bool:
        return not self.closed and bool(self._of([kind]))

    def _fail(self, consumers: Iterable[_ConsumerBase], error: BaseException) -> None:
        for consumer in consumers:
            if self._remove(consumer):
                consumer._end(error)

    def _give_up(self, kind: str, attempts: int, error: BaseException | None) -> bool:
        """End the Consumers of `kind` that will not make attempt `attempts` (their
        `max_attempts` is smaller); whether any are left."""
        for consumer in self._of([kind]):
            limit = consumer.max_attempts
            if limit is not None and limit < attempts:
                lost = ConnectionLost(_lost_text(consumer, attempts - 1, error), attempts - 1)
                lost.__cause__ = error
                self._fail([consumer], lost)
        return self._active(kind)

    def _end_all(self) -> list[_ConsumerBase]:
        with self._lock:
            self.closed = True
            consumers = list(self._consumers)
            self._consumers.clear()
        for consumer in consumers:
            self.routes.remove(consumer.id, consumer)
            consumer._end()
        return consumers


_HTTP_KINDS = ("poll", "long-poll", "streaming")


# --------------------------------------------------------------------------------------
# The sync hub: one daemon thread per channel


class Hub(_HubBase):
    """`Client`'s messaging: see the module's docstring."""

    def __init__(self, client: Client) -> None:
        super().__init__()
        self.client = client
        self._wire = threading.RLock()  # subscribes, unsubscribes and recoveries over HTTP
        self._closing = threading.Event()
        self._threads: dict[str, threading.Thread] = {}
        self._streams: dict[str, tuple[str, str]] = {}  # "streaming" -> (stream id, DSId)
        self._opened = threading.Event()
        self._socket: SyncSocket | None = None

    # -- what Consumers and Producers call ----------------------------------------------

    def subscribe(self, consumer: Consumer) -> None:
        if self.closed:
            raise RuntimeError("the client is closed")
        if consumer.channel == "websocket":
            with self._lock:
                if self._socket is None:
                    from .websocket_client import SyncSocket

                    self._socket = SyncSocket(self)
                socket = self._socket
            socket.subscribe(consumer)
            return
        with self._wire:
            self.client._handshake(None, messaging=True)
            ack = self.client._command(self.client._flex_body(consumer._subscribe_message()))
            self._add(consumer, _consumer_id(ack), ack)
        self._start(consumer.channel)
        if consumer.channel == "streaming":
            self._opened.wait(OPEN_WAIT)
            if consumer._error is not None:
                raise consumer._error

    def unsubscribe(self, consumer: Consumer) -> None:
        if not self._remove(consumer):
            consumer._end()
            return
        consumer._end()
        if consumer.channel == "websocket":
            assert self._socket is not None
            self._socket.unsubscribe(consumer)
            return
        try:
            with self._wire:
                self.client._command(self.client._flex_body(consumer._unsubscribe_message()))
        finally:
            if consumer.channel == "streaming" and not self._active("streaming"):
                self._close_stream()

    def send(self, message: AsyncMessage) -> Any:
        self.client._handshake(None, messaging=True)
        return self.client._command(self.client._flex_body(message))

    def close(self) -> None:
        """The client closes: every Consumer ends; the server is told (best effort)."""
        if self.closed:
            return
        consumers = self._end_all()
        self._closing.set()
        if any(c.channel in _HTTP_KINDS for c in consumers) and self.client._dsid is not None:
            self._close_stream()
            try:  # forget the subscriptions now, and answer a held poll
                self.client._command(self.client._command_body(Operation.DISCONNECT), httpx.Timeout(2.0))
            except Exception:
                pass
        if self._socket is not None:
            self._socket.close()

    # -- HTTP channels ------------------------------------------------------------------

    def _start(self, kind: str) -> None:
        with self._lock:
            thread = self._threads.get(kind)
            if thread is not None and thread.is_alive():
                return
            if kind == "streaming":
                self._opened.clear()
            thread = threading.Thread(target=self._run, args=(kind,), name=f"amfkit-{kind}", daemon=True)
            self._threads[kind] = thread
        thread.start()

    def _run(self, kind: str) -> None:
        once = self._stream_once if kind == "streaming" else lambda: self._poll_once(kind)
        try:
            self._pump(kind, once)
        except BaseException as e:  # a bug, or the client closed under it
            if not self.closed:
                self._fail(self._of([kind]), e)
        finally:
            if kind == "streaming":
                self._opened.set()
            with self._lock:
                if self._threads.get(kind) is threading.current_thread():
                    del self._threads[kind]
            # A Consumer added while this thread was ending gets a new one.
            if self._active(kind):
                self._start(kind)

    def _pump(self, kind: str, once: Callable[[], None]) -> None:
        """Run `once` (one poll; one stream from open to end) while the client has
        Consumers on `kind`, recovering from losses: after a lost channel (an answer or
        a stream cut short may have carried messages the client never got) its Consumers
        are resubscribed from the last message each received before it is opened again;
        a client the server forgot pings again first, under the same DSId."""
        attempts, forgotten, lost, recovered = 0, False, False, False
        error: BaseException | None = None
        seen = self._resumes  # the resubscriptions this channel knows of
        while self._active(kind):
            if attempts:
                if not self._give_up(kind, attempts, error):
                    return
                if attempts > 1 or not forgotten:
                    if self._closing.wait(backoff(attempts)):
                        return
            try:
                if forgotten or lost:
                    self.recover(seen, greet=forgotten)
                    recovered = forgotten
                    forgotten = lost = False
                seen = self._resumes
                once()
                attempts, recovered = 0, False
            except _Forgotten as e:
                log.debug("%s channel of client %s: forgotten: %s", kind, self.client._dsid, e)
                if recovered:  # refused again right after a new handshake: a refusal
                    self._fail(self._of([kind]), ConnectionLost(f"{e} (after a new handshake)"))
                    return
                attempts, error, forgotten = attempts + 1, e, True
            except TransportError as e:
                log.debug("%s channel of client %s: lost: %s", kind, self.client._dsid, e)
                attempts, error, lost, recovered = attempts + 1, e, True, False
            except Fault as e:
                if e.code == UNAVAILABLE:  # the server's broker away for a while: again later
                    log.debug("%s channel of client %s: unavailable: %s", kind, self.client._dsid, e)
                    attempts, error = attempts + 1, e
                    continue
                self._fail(self._of([kind]), e)
                return
            except _Refused as e:
                self._fail(self._of([kind]), ConnectionLost(str(e)))
                return

    def recover(self, seen: int, *, greet: bool = False) -> None:
        """Every HTTP Consumer subscribed again under its own id, from the last message it
        received (`greet`: after a ping under the same DSId, the server having forgotten
        the client); without `greet`, not when another channel did so since this one saw
        `seen` resumes."""
        with self._wire:
            if self._resumes != seen and not greet:
                return  # another channel resubscribed them since this one last tried
            client = self.client
            dsid = client._dsid
            if greet:
                client._handshake(messaging=True, keep=True)
            same = dsid is not None and client._dsid == dsid  # else the server knows none of the ids
            for consumer in self._of(_HTTP_KINDS):
                sent = consumer._position if same else None
                message = consumer._resubscribe_message() if same else consumer._subscribe_message()
                try:
                    ack = client._command(client._flex_body(message))
                except Fault as e:
                    if e.code == UNAVAILABLE:  # nothing refused: the whole recovery again later
                        raise
                    self._fail([consumer], e)
                    continue
                log.debug("client %s: consumer %s resubscribed after position %s", client._dsid, ack.clientId, sent)
                self._move(consumer, _consumer_id(ack), ack, sent)
            self._resumes += 1

    def _poll_once(self, kind: str) -> None:
        client = self.client
        timeout = None
        if kind == "long-poll":
            timeout = httpx.Timeout(client._http.timeout.connect, read=LONG_POLL_READ, write=None, pool=None)
        try:
            reply = client._command(client._flex_body(CommandMessage(operation=Operation.POLL)), timeout)
        except Fault as e:
            if e.code == NOT_SUBSCRIBED:
                raise _Forgotten(f"the server does not know this client ({NOT_SUBSCRIBED})") from e
            raise
        except TransportError as e:
            if kind == "long-poll" and isinstance(e.__cause__, httpx.ReadTimeout):
                return  # held longer than we wait: poll again
            raise
        items, hint = _poll_answer(reply)
        for message in items:
            self.routes.route(message)
        wait = _next_poll(kind, hint, self._of([kind]))
        if wait:
            self._closing.wait(wait)

    def _stream_once(self) -> None:
        client = self.client
        dsid = client._dsid or "nil"
        url = client.url
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept-Encoding": "identity", "User-Agent": f"amfkit/{__version__}"}
        timeout = httpx.Timeout(client._http.timeout.connect, read=STREAM_READ, write=None, pool=None)
        frames = Frames(client._max_response_size, client._decode_options)
        opened = False
        try:
            with client._http.stream(
                "POST", url, params={"command": "open", "version": "1"}, content=f"DSId={dsid}".encode(), headers=headers, timeout=timeout
            ) as response:
                _check_open(response.status_code, response.read() if response.status_code != 200 else b"", url)
                for chunk in response.iter_bytes():
                    for value in frames.feed(chunk):
                        if not opened:
                            self._streams["streaming"] = (_stream_id(value, url), dsid)
                            self._opened.set()
                            opened = True
                            log.debug("client %s: stream open", dsid)
                        elif _disconnect(value):
                            return
                        elif _pushed(value):
                            self.routes.route(value)
        except httpx.HTTPError as e:
            raise _transport_error(e, url) from e
        except ValueError as e:
            raise TransportError(clip(f"the stream is not valid: {e}"), url=url) from e
        finally:
            self._streams.pop("streaming", None)
        if not opened:
            raise TransportError("the stream ended before it opened", url=url)

    def _close_stream(self) -> None:
        stream = self._streams.get("streaming")
        if stream is None:
            return
        stream_id, dsid = stream
        try:
            self.client._http.post(
                self.client.url,
                params={"command": "close", "streamId": stream_id, "version": "1"},
                content=f"DSId={dsid}".encode(),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                timeout=2.0,
            )
        except Exception:
            pass  # the stream ends with its connection anyway


def _stream_id(value: Any, url: str) -> str:
    """The id of a stream, from its first frame: the open acknowledgement."""
    if not (isinstance(value, AcknowledgeMessage) and value.correlationId == "open"):
        raise TransportError(f"the stream did not start with its open acknowledgement: {shown(value)}", url=url)
    return clip(str(value.body), MAX_SHOWN)


def _check_open(status: int, body: bytes, url: str) -> None:
    """A stream's opening answer: 200, or the refusal (400: the server does not know
    the client, or refuses the request; 503: too many streams)."""
    if status == 200:
        return
    text = clip(body[:400].decode("utf-8", "replace").strip(), 200)
    message = f"the server refused the stream: HTTP {status}" + (f" {text}" if text else "")
    if status == 400:
        raise _Forgotten(message)
    if 400 < status < 500:
        raise _Refused(message)
    raise TransportError(message, url=url, status=status, body=body[:4096])


# --------------------------------------------------------------------------------------
# The async hub: tasks on the event loop


class AsyncHub(_HubBase):
    """`AsyncClient`'s messaging: `Hub` on tasks of one event loop."""

    def __init__(self, client: AsyncClient) -> None:
        super().__init__()
        self.client = client
        self._wire_lock: asyncio.Lock | None = None
        self._closing_event: asyncio.Event | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._streams: dict[str, tuple[str, str]] = {}
        self._opened_event: asyncio.Event | None = None
        self._socket: AsyncSocket | None = None

    # asyncio objects are made in the running loop, on first use
    @property
    def _wire(self) -> asyncio.Lock:
        if self._wire_lock is None:
            self._wire_lock = asyncio.Lock()
        return self._wire_lock

    @property
    def _closing(self) -> asyncio.Event:
        if self._closing_event is None:
            self._closing_event = asyncio.Event()
        return self._closing_event

    @property
    def _opened(self) -> asyncio.Event:
        if self._opened_event is None:
            self._opened_event = asyncio.Event()
        return self._opened_event

    async def _sleep(self, seconds: float) -> bool:
        """Wait `seconds`; True when the client closed meanwhile."""
        return await wait_event(self._closing, seconds)

    # -- what Consumers and Producers call ----------------------------------------------

    async def subscribe(self, consumer: AsyncConsumer) -> None:
        if self.closed:
            raise RuntimeError("the client is closed")
        if consumer.channel == "websocket":
            if self._socket is None:
                from .websocket_client import AsyncSocket

                self._socket = AsyncSocket(self)
            await self._socket.subscribe(consumer)
            return
        async with self._wire:
            await self.client._handshake(None, messaging=True)
            ack = await self.client._command(self.client._flex_body(consumer._subscribe_message()))
            self._add(consumer, _consumer_id(ack), ack)
        self._start(consumer.channel)
        if consumer.channel == "streaming":
            await wait_event(self._opened, OPEN_WAIT)
            if consumer._error is not None:
                raise consumer._error

    async def unsubscribe(self, consumer: AsyncConsumer) -> None:
        if not self._remove(consumer):
            consumer._end()
            return
        consumer._end()
        if consumer.channel == "websocket":
            assert self._socket is not None
            await self._socket.unsubscribe(consumer)
            return
        try:
            async with self._wire:
                await self.client._command(self.client._flex_body(consumer._unsubscribe_message()))
        finally:
            if consumer.channel == "streaming" and not self._active("streaming"):
                await self._close_stream()

    async def send(self, message: AsyncMessage) -> Any:
        await self.client._handshake(None, messaging=True)
        return await self.client._command(self.client._flex_body(message))

    async def close(self) -> None:
        if self.closed:
            return
        consumers = self._end_all()
        self._closing.set()
        if any(c.channel in _HTTP_KINDS for c in consumers) and self.client._dsid is not None:
            await self._close_stream()
            try:
                await self.client._command(self.client._command_body(Operation.DISCONNECT), httpx.Timeout(2.0))
            except Exception:
                pass
        if self._socket is not None:
            await self._socket.close()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- HTTP channels ------------------------------------------------------------------

    def _start(self, kind: str) -> None:
        task = self._tasks.get(kind)
        if task is not None and not task.done():
            return
        if kind == "streaming":
            self._opened.clear()
        self._tasks[kind] = asyncio.get_running_loop().create_task(self._run(kind), name=f"amfkit-{kind}")

    async def _run(self, kind: str) -> None:
        async def once() -> None:
            if kind == "streaming":
                await self._stream_once()
            else:
                await self._poll_once(kind)

        try:
            await self._pump(kind, once)
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            if not self.closed:
                self._fail(self._of([kind]), e)
        finally:
            if kind == "streaming":
                self._opened.set()
            if self._tasks.get(kind) is asyncio.current_task():
                del self._tasks[kind]
            if self._active(kind):  # a Consumer added while this task was ending
                self._start(kind)

    async def _pump(self, kind: str, once: Callable[[], Awaitable[None]]) -> None:
        """`Hub._pump`, awaited."""
        attempts, forgotten, lost, recovered = 0, False, False, False
        error: BaseException | None = None
        seen = self._resumes  # the resubscriptions this channel knows of
        while self._active(kind):
            if attempts:
                if not self._give_up(kind, attempts, error):
                    return
                if attempts > 1 or not forgotten:
                    if await self._sleep(backoff(attempts)):
                        return
            try:
                if forgotten or lost:
                    await self.recover(seen, greet=forgotten)
                    recovered = forgotten
                    forgotten = lost = False
                seen = self._resumes
                await once()
                attempts, recovered = 0, False
            except _Forgotten as e:
                log.debug("%s channel of client %s: forgotten: %s", kind, self.client._dsid, e)
                if recovered:  # refused again right after a new handshake: a refusal
                    self._fail(self._of([kind]), ConnectionLost(f"{e} (after a new handshake)"))
                    return
                attempts, error, forgotten = attempts + 1, e, True
            except TransportError as e:
                log.debug("%s channel of client %s: lost: %s", kind, self.client._dsid, e)
                attempts, error, lost, recovered = attempts + 1, e, True, False
            except Fault as e:
                if e.code == UNAVAILABLE:  # the server's broker away for a while: again later
                    log.debug("%s channel of client %s: unavailable: %s", kind, self.client._dsid, e)
                    attempts, error = attempts + 1, e
                    continue
                self._fail(self._of([kind]), e)
                return
            except _Refused as e:
                self._fail(self._of([kind]), ConnectionLost(str(e)))
                return

    async def recover(self, seen: int, *, greet: bool = False) -> None:
        """`Hub.recover`, awaited."""
        async with self._wire:
            if self._resumes != seen and not greet:
                return  # another channel resubscribed them since this one last tried
            client = self.client
            dsid = client._dsid
            if greet:
                await client._handshake(messaging=True, keep=True)
            same = dsid is not None and client._dsid == dsid  # else the server knows none of the ids
            for consumer in self._of(_HTTP_KINDS):
                sent = consumer._position if same else None
                message = consumer._resubscribe_message() if same else consumer._subscribe_message()
                try:
                    ack = await client._command(client._flex_body(message))
                except Fault as e:
                    if e.code == UNAVAILABLE:  # nothing refused: the whole recovery again later
                        raise
                    self._fail([consumer], e)
                    continue
                log.debug("client %s: consumer %s resubscribed after position %s", client._dsid, ack.clientId, sent)
                self._move(consumer, _consumer_id(ack), ack, sent)
            self._resumes += 1

    async def _poll_once(self, kind: str) -> None:
        client = self.client
        timeout = None
        if kind == "long-poll":
            timeout = httpx.Timeout(client._http.timeout.connect, read=LONG_POLL_READ, write=None, pool=None)
        try:
            reply = await client._command(client._flex_body(CommandMessage(operation=Operation.POLL)), timeout)
        except Fault as e:
            if e.code == NOT_SUBSCRIBED:
                raise _Forgotten(f"the server does not know this client ({NOT_SUBSCRIBED})") from e
            raise
        except TransportError as e:
            if kind == "long-poll" and isinstance(e.__cause__, httpx.ReadTimeout):
                return
            raise
        items, hint = _poll_answer(reply)
        for message in items:
            self.routes.route(message)
        wait = _next_poll(kind, hint, self._of([kind]))
        if wait:
            await self._sleep(wait)

    async def _stream_once(self) -> None:
        client = self.client
        dsid = client._dsid or "nil"
        url = client.url
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept-Encoding": "identity", "User-Agent": f"amfkit/{__version__}"}
        timeout = httpx.Timeout(client._http.timeout.connect, read=STREAM_READ, write=None, pool=None)
        frames = Frames(client._max_response_size, client._decode_options)
        opened = False
        try:
            async with client._http.stream(
                "POST", url, params={"command": "open", "version": "1"}, content=f"DSId={dsid}".encode(), headers=headers, timeout=timeout
            ) as response:
                _check_open(response.status_code, await response.aread() if response.status_code != 200 else b"", url)
                async for chunk in response.aiter_bytes():
                    for value in frames.feed(chunk):
                        if not opened:
                            self._streams["streaming"] = (_stream_id(value, url), dsid)
                            self._opened.set()
                            opened = True
                            log.debug("client %s: stream open", dsid)
                        elif _disconnect(value):
                            return
                        elif _pushed(value):
                            self.routes.route(value)
        except httpx.HTTPError as e:
            raise _transport_error(e, url) from e
        except ValueError as e:
            raise TransportError(clip(f"the stream is not valid: {e}"), url=url) from e
        finally:
            self._streams.pop("streaming", None)
        if not opened:
            raise TransportError("the stream ended before it opened", url=url)

    async def _close_stream(self) -> None:
        stream = self._streams.get("streaming")
        if stream is None:
            return
        stream_id, dsid = stream
        try:
            await self.client._http.post(
                self.client.url,
                params={"command": "close", "streamId": stream_id, "version": "1"},
                content=f"DSId={dsid}".encode(),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                timeout=2.0,
            )
        except Exception:
            pass
