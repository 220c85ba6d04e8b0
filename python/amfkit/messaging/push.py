"""What the channels that push (an HTTP stream, a WebSocket) share: waiting on the
broker for one FlexClient's messages, event-driven, and turning a drained batch into
encoded Flex messages (docs/messaging.md, "Streaming and WebSocket").

A `Pusher` is attached to its client (`Messaging.clients`) while its connection is
open. It waits with `broker.wait`; a client the broker does not know (it has not
subscribed yet, or no longer has subscriptions) has nothing to wait for there, so the
pusher waits for a subscribe's `poke` instead. `end()` and `poke()` may come from any
thread.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional

from .. import amf3
from .._text import error_text
from ..remoting.messages import AsyncMessage, ErrorMessage, new_id
from .broker import Batch, Broker, Delivery, Message
from .logstore import StoreError
from .commands import copy_for, outgoing

if TYPE_CHECKING:
    from .service import Messaging

__all__ = ["Pusher"]

logger = logging.getLogger("amfkit.gateway")


class Pusher:
    """One open push channel of a FlexClient. Subclasses write (`write`) and say what
    their channel does when the client disconnects (`disconnected`)."""

    kind = "push"

    def __init__(self, messaging: Messaging, client_id: str, *, default: Callable[[Any], Any] | None = None) -> None:
        self.messaging = messaging
        self.client_id = client_id
        self.loop = asyncio.get_running_loop()
        self.ending = False
        self._poked = False  # a subscribe came since the last look
        self._waiter: asyncio.Future[None] | None = None  # waiting for a poke
        self._default = default
        self._ids: dict[str, bytes] = {}  # consumer id -> its bytes in a template (`_id_bytes`)
        # The wait on the broker (`next_batch`, `broker.watch`): the one timer, its
        # deadline, the future it completes on timeout.
        self._watch = True  # the broker has `watch` (until it says otherwise)
        self._watching: asyncio.Future[None] | None = None
        self._expired = False  # the timer completed `_watching`
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._encode: Callable[[Any], bytes] = amf3.Encoder(default=default).encode if default is not None else amf3.encode

    # --- called from any thread --------------------------------------------------------

    def poke(self) -> None:
        self._soon(self._poke)

    def end(self) -> None:
        self._soon(self._end)

    def disconnected(self) -> None:
        """The client disconnected: by default the channel stays open (it may subscribe
        again)."""

    def _poke(self) -> None:
        self._poked = True
        _resolve(self._waiter)

    def _end(self) -> None:
        self.ending = True
        _resolve(self._waiter)
        self.messaging.broker.wake(self.client_id)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _soon(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the channel's event loop: now when called there, else soon."""
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            fn()
        else:
            try:
                self.loop.call_soon_threadsafe(fn)
            except RuntimeError:  # the loop is closed: the channel is gone with it
                pass

    # --- on the channel's loop ---------------------------------------------------------

    async def next_batch(self, timeout: float) -> Batch | None:
        """Wait up to `timeout` seconds for the client's messages: a batch holding some,
        or None (timeout, a subscribe's poke, a wake, the end). While the broker's store
        cannot be reached (Redis away), None after a pause: the channel stays open (its
        heartbeats go on) and delivers from where its client was once the store is back."""
        try:
            batch = await self._next_batch(timeout)
        except StoreError as e:
            _unreachable(self.messaging, e)
            await self._pause(min(timeout, UNREACHABLE_PAUSE) if timeout > 0 else UNREACHABLE_PAUSE)
            return None
        _reachable(self.messaging)
        return batch

    async def _pause(self, seconds: float) -> None:
        """Wait `seconds`, or less when the channel ends or its client subscribes."""
        if self.ending:
            return
        waiter = self._waiter = self.loop.create_future()
        timer = self.loop.call_later(seconds, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    async def _next_batch(self, timeout: float) -> Batch | None:
        broker = self.messaging.broker
        client_id = self.client_id
        if self._watch and timeout > 0:  # the common case inline: no further coroutine
            future = self.loop.create_future()
            try:
                state = await broker.awatch(client_id, future)
            except NotImplementedError:
                self._watch = False
                state = await broker.wait(client_id, timeout)
            if state is None:
                self._watched(future, timeout)
                try:
                    await future
                finally:
                    self._watching = None
                    if future.cancelled() or self._expired:  # still among the client's waiters
                        self._unwatch(broker, client_id, future)
                state = True  # woken: receive tells (an empty batch after a mere wake)
        else:
            state = await broker.wait(client_id, timeout)
        if state:
            if self.ending:
                return None
            return await broker.receive(client_id, pushing=True) or None
        if self.ending:
            return None
        self._poked = False  # before asking: a subscribe from now on sets it
        batch = await broker.receive(client_id, pushing=True)
        if batch is None:  # not subscribed (yet, or any more): nothing to wait for there
            if not self._poked and not self.ending:
                # A future and a timer, not asyncio.wait_for: on Python 3.11 wait_for
                # swallows a cancellation that comes as the awaited thing completes.
                await self._pause(timeout)
            return None
        return batch or None

    def _watched(self, future: asyncio.Future[None], timeout: float) -> None:
        """`future`, a `broker.watch` waiter, is awaited up to `timeout` seconds: with the
        channel's one timer instead of one per wait (a deadline moved later keeps it:
        when it fires early it is set again)."""
        loop = self.loop
        deadline = self._deadline = loop.time() + timeout
        if self._timer is None or self._timer_at > deadline:
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = deadline
            self._timer = loop.call_at(deadline, self._timed_out)
        self._watching = future

    def _unwatch(self, broker: Broker, client_id: str, future: asyncio.Future[None]) -> None:
        """A waiter timed out or cancelled: off the client's waiters (a cancelled one
        ends the channel's wait: its timer goes too)."""
        self._expired = False
        broker.unwatch(client_id, future)
        if future.cancelled() and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        now = self.loop.time()
        if now < self._deadline - 0.001:  # the deadline moved on since
            self._timer_at = self._deadline
            self._timer = self.loop.call_at(self._deadline, self._timed_out)
            return
        future = self._watching
        if future is not None and not future.done():
            self._expired = True
            future.set_result(None)

    def touch(self) -> None:
        """Keep the client alive (broker and greeted table) while its channel is open."""
        self.messaging.clients.touch(self.client_id)
        try:
            self.messaging.broker.touch(self.client_id)
        except StoreError as e:  # the store away: the next touch tries again
            _unreachable(self.messaging, e)

    async def encoded(self, batch: Batch) -> list[bytes]:
        """The batch's Flex messages (drop notices first, then each subscriber's copy),
        each encoded as one AMF3 value, in small forms when the client reads them. A copy
        that cannot be encoded becomes an ErrorMessage for its Consumer.

        A published message is encoded once per form (and encoder) for all its
        subscribers: the copies differ only in their clientId, spliced into a template
        (`_template`)."""
        if not batch.dropped:
            return self.copies(batch)
        small = self.messaging.clients.small(self.client_id)
        encode = self._encode
        out = [_encode_or_error(encode, item) for item in await outgoing(self.messaging.broker, Batch([], batch.dropped), small=small)]
        return out + self.copies(batch)

    def copies(self, batch: Batch) -> list[bytes]:
        """`encoded` without the drop notices: each delivery's copy (no await: what a
        channel calls for a batch without drops)."""
        small = self.messaging.clients.small(self.client_id)
        encode = self._encode
        out = []
        templates = _templates_for(small, self._default)
        ids = self._ids
        for delivery in batch.deliveries:
            consumer_id = delivery.consumer_id
            raw = ids.get(consumer_id)
            if raw is None:
                raw = _id_bytes(consumer_id)
                if len(ids) >= 1024:
                    ids.clear()
                ids[consumer_id] = raw
            if raw:
                message = delivery.message
                entry = templates.get(id(message))
                template = entry[1] if entry is not None and entry[0] is message else _template(templates, message, small, encode)
                if template is not None:
                    out.append(b"".join((template[0], raw, template[1])))
                    continue
            out.append(_encode_or_error(encode, copy_for(delivery, small)))
        return out


#: Seconds a push channel waits before it asks the broker again when its store could
#: not be reached (a heartbeat may come between).
UNREACHABLE_PAUSE = 0.5


#: Whether the last try found the store away (said once per process and outage).
_away = {"now": False}


def _unreachable(messaging: Messaging, error: Exception) -> None:
    """Say once (per process and outage) that the store cannot be reached."""
    if not _away["now"]:
        _away["now"] = True
        logger.warning("the message broker's store cannot be reached (%s): push channels stay open and deliver once it is back", error)


def _reachable(messaging: Messaging) -> None:
    if _away["now"]:
        _away["now"] = False
        logger.warning("the message broker's store is reachable again")


def _encode_or_error(encode: Callable[[Any], bytes], item: AsyncMessage) -> bytes:
    try:
        return encode(item)
    except Exception as e:
        return encode(_unencodable(item, e))


# --- one encoding per published message ------------------------------------------------

#: A consumer id a template takes: the placeholder's shape (36 ASCII characters, an
#: uppercase or lowercase UUID), so its AMF3 string has the placeholder's length prefix.
_SPLICEABLE = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}").fullmatch
#: How many messages' templates are kept (per form and encoder), oldest dropped first.
TEMPLATES = 256


def _id_bytes(consumer_id: str) -> bytes:
    """A consumer id's bytes in a template (b"": it does not take one)."""
    return consumer_id.encode("ascii") if _SPLICEABLE(consumer_id) else b""


_Templates = dict[int, tuple[Message, Optional[tuple[bytes, bytes]]]]

# (small, id of the encoder's default) -> (the default, its templates: id of a Message
# -> (the Message, its template, or None when there is none: encode each copy)). The
# objects are held so that their ids stay theirs while cached. Shared by every channel
# of the process (any thread).
_tables: dict[tuple[bool, int], tuple[Any, _Templates]] = {}
_templates_lock = threading.Lock()


def _templates_for(small: bool, default: Any) -> _Templates:
    """The templates of one form and encoder."""
    key = (small, id(default))
    entry = _tables.get(key)
    if entry is not None and entry[0] is default:
        return entry[1]
    table: _Templates = {}
    with _templates_lock:
        if len(_tables) >= 16:  # encoders come and go (a default per gateway): start over
            _tables.clear()
        _tables[key] = (default, table)
    return table


def _template(templates: _Templates, message: Message, small: bool, encode: Callable[[Any], bytes]) -> tuple[bytes, bytes] | None:
    """The encoded copy of `message` cut where its clientId goes: (bytes before, bytes
    after), made and kept in `templates`. None when the copy cannot be encoded that way
    (the placeholder id is not found exactly once, or the copy does not encode: each
    copy is then encoded)."""
    placeholder = new_id()
    template: tuple[bytes, bytes] | None = None
    try:
        data = encode(copy_for(Delivery(placeholder, message), small))
    except Exception:
        pass
    else:
        mark = placeholder.encode("ascii")
        if data.count(mark) == 1:
            head, _, tail = data.partition(mark)
            template = (head, tail)
    with _templates_lock:
        templates[id(message)] = (message, template)
        while len(templates) > TEMPLATES:
            del templates[next(iter(templates))]
    return template


def _resolve(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)


def _unencodable(message: AsyncMessage, error: Exception) -> ErrorMessage:
    """What a Consumer gets instead of a copy that cannot be encoded (a published body
    the encoder cannot write)."""
    text = error_text(error)
    logger.error("cannot encode a message for consumer %s: %s", message.clientId, text)
    err = ErrorMessage()
    err.clientId = message.clientId if isinstance(message.clientId, str) else None
    err.destination = message.destination if isinstance(message.destination, str) else None
    err.correlationId = message.messageId if isinstance(message.messageId, str) else None
    err.headers = {}
    err.timeToLive = 0
    err.faultCode = "Server.Processing"
    err.faultString = f"a message cannot be encoded: {text}"
    err.faultDetail = ""
    err.rootCause = None
    err.extendedData = None
    return err
