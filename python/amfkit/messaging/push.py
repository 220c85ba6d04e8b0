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
from typing import TYPE_CHECKING, Any, Callable

from .. import amf3
from .._text import error_text
from ..remoting.messages import AsyncMessage, ErrorMessage
from .broker import Batch
from .commands import outgoing

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
        or None (timeout, a subscribe's poke, a wake, the end)."""
        broker = self.messaging.broker
        client_id = self.client_id
        if await broker.wait(client_id, timeout):
            if self.ending:
                return None
            return await broker.receive(client_id) or None
        if self.ending:
            return None
        self._poked = False  # before asking: a subscribe from now on sets it
        batch = await broker.receive(client_id)
        if batch is None:  # not subscribed (yet, or any more): nothing to wait for there
            if not self._poked and not self.ending:
                # A future and a timer, not asyncio.wait_for: on Python 3.11 wait_for
                # swallows a cancellation that comes as the awaited thing completes.
                waiter = self._waiter = self.loop.create_future()
                timer = self.loop.call_later(timeout, _resolve, waiter)
                try:
                    await waiter
                finally:
                    timer.cancel()
                    self._waiter = None
            return None
        return batch or None

    def touch(self) -> None:
        """Keep the client alive (broker and greeted table) while its channel is open."""
        self.messaging.broker.touch(self.client_id)
        self.messaging.clients.touch(self.client_id)

    async def encoded(self, batch: Batch) -> list[bytes]:
        """The batch's Flex messages (drop notices first, then each subscriber's copy),
        each encoded as one AMF3 value, in small forms when the client reads them. A copy
        that cannot be encoded becomes an ErrorMessage for its Consumer."""
        small = self.messaging.clients.small(self.client_id)
        encode = self._encode
        out = []
        for item in await outgoing(self.messaging.broker, batch, small=small):
            try:
                out.append(encode(item))
            except Exception as e:
                out.append(encode(_unencodable(item, e)))
        return out


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
