"""The WebSocket channel on the gateway's own path (`ws://host/gateway`; docs/messaging.md,
"Streaming and WebSocket"). ASGI only.

Every binary frame holds one AMF3 value, a Flex message. The client sends what it would
send in an AMF request's bodies (ping, subscribe, unsubscribe, multi-subscribe, sends,
disconnect, RemoteObject calls); each is answered by one frame, in order, by the same
code that answers them over HTTP (`amfkit.remoting.amf.answer_message`). Between
replies, the messages of the connection's Consumers are pushed, each in a frame of its
own, as they arrive (the broker's per-client queue is the only buffer: a frame is drained
only when the previous one was handed to the socket).

The connection is the FlexClient: a message without a DSId is the connection's client,
and when the socket closes (either side) the client is disconnected (its subscriptions and
queue go). A text frame is closed with 1003, a frame over the gateway's `max_body_size`
with 1009; a frame that does not decode is answered with an ErrorMessage
(`Client.Message.Encoding`) and the socket stays open.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from .. import amf3
from .._text import error_text, shown
from ..remoting import amf
from ..remoting.flex import error_body, message_of
from ..remoting.messages import ErrorMessage
from ..remoting.request import ID
from ..remoting.sessions import new_session_id
from ..remoting.services import Fault
from .commands import UNAVAILABLE
from .logstore import StoreError
from .push import Pusher

if TYPE_CHECKING:
    from ..remoting.request import Settings
    from .service import Messaging

__all__ = ["ENCODING_FAULT", "POSITIONS", "SUBPROTOCOL", "serve"]

logger = logging.getLogger("amfkit.gateway")

#: The faultCode of the answer to a frame that is not an AMF3 Flex message (BlazeDS's
#: and Flex's code for a message that cannot be read).
ENCODING_FAULT = "Client.Message.Encoding"
#: The subprotocol selected when the client offers it (none is required).
SUBPROTOCOL = "amf3"
#: amfkit's own header on the first message of a socket that takes over a FlexClient (a
#: client back from a lost socket): its Consumers' ids and the positions of the last
#: messages they received (docs/messaging.md, "Across workers and hosts").
POSITIONS = "amfkitPositions"
#: The most Consumers one `amfkitPositions` may name (a broker's default max_consumers).
MAX_POSITIONS = 256
#: Close codes (RFC 6455).
UNSUPPORTED_DATA = 1003
POLICY_VIOLATION = 1008
TOO_BIG = 1009
GOING_AWAY = 1001

Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]


async def serve(settings: Settings, scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Serve one WebSocket connection (an ASGI `websocket` scope on the gateway's path).
    Without messaging (or once it is closed) the handshake is refused (HTTP 403)."""
    first = await receive()
    if first.get("type") != "websocket.connect":
        return
    messaging: Messaging | None = settings.messaging
    if messaging is None or messaging.closed:
        await send({"type": "websocket.close", "code": POLICY_VIOLATION})
        return
    accept: dict[str, Any] = {"type": "websocket.accept"}
    if SUBPROTOCOL in (scope.get("subprotocols") or ()):
        accept["subprotocol"] = SUBPROTOCOL
    await send(accept)
    connection = Connection(settings, messaging, send)
    try:
        await connection.serve(receive)
    finally:
        await connection.release()


class Connection:
    """One WebSocket connection: its FlexClient, the requests it sends and the pushes."""

    def __init__(self, settings: Settings, messaging: Messaging, send: Send) -> None:
        self.settings = settings
        self.messaging = messaging
        self.send = send
        self.client_id: str | None = None
        self.socket: Socket | None = None
        self.closed = False
        self._closing: asyncio.Task[None] | None = None
        #: Set between requests: pushes wait for it, so that a subscribe's ack goes out
        #: before the first message for that Consumer.
        self.idle = asyncio.Event()
        self.idle.set()

    async def serve(self, receive: Receive) -> None:
        max_size = self.settings.max_body_size
        while not self.closed:
            message = await receive()
            kind = message.get("type")
            if kind == "websocket.disconnect":
                self.closed = True
                return
            if kind != "websocket.receive":
                continue
            data = message.get("bytes")
            if data is None:
                await self.close(UNSUPPORTED_DATA, "binary frames of AMF3 only")
                return
            if len(data) > max_size:
                await self.close(TOO_BIG, f"a frame of more than {max_size} bytes")
                return
            self.idle.clear()
            try:
                reply = await self.answer(data)
                await self.write(reply)
            finally:
                self.idle.set()

    async def answer(self, data: bytes) -> bytes:
        """The reply frame to one request frame."""
        settings = self.settings
        try:
            value = amf3.decode(data, max_depth=settings.max_depth, max_objects=settings.max_objects, max_size=settings.max_body_size)
        except Exception as e:  # a DecodeError, or an externalizable reader that refused
            return amf3.encode(_encoding_error(f"malformed AMF3 message: {error_text(e)}"))
        message = message_of(value)
        if message is None:
            return amf3.encode(_encoding_error(f"a Flex message was expected, found {shown(value)}"))
        headers = message.headers
        if headers is None:
            headers = message.headers = {}
        if isinstance(headers, dict):  # else a fault for its own message, as over HTTP
            if self.client_id is None:
                refusal = await self.resume(headers.get("DSId"), headers.get(POSITIONS))
                if refusal is not None:
                    return amf3.encode(error_body("", message, None, refusal, settings.debug).value)
                self.adopt(headers.get("DSId"))
            headers["DSId"] = self.client_id
        return await amf.answer_message(message, settings, push=True)

    async def resume(self, dsid: Any, positions: Any) -> Fault | None:
        """A client back on a new socket: before anything is pushed to it, each of its
        Consumers named in its first message's `amfkitPositions` goes on after the last
        message it received (the cursor may be past messages that were on their way on
        the socket it lost). The refusal to answer with (and not adopt the client), or
        None."""
        if positions is None or not (isinstance(dsid, str) and ID.fullmatch(dsid)):
            return None
        checked = _positions(positions)
        if isinstance(checked, Fault):
            return checked
        try:
            await self.messaging.broker.resume(dsid, checked)
        except StoreError as e:
            logger.warning("messaging: %s (answered %s)", e, UNAVAILABLE)
            return Fault("the message broker cannot be reached now: not resumed; try again", code=UNAVAILABLE)
        return None

    def adopt(self, dsid: Any) -> None:
        """The connection's FlexClient: the DSId of its first message (a client that
        reconnects), or a new one; its pushes start."""
        client_id = dsid if isinstance(dsid, str) and ID.fullmatch(dsid) else new_session_id()
        self.client_id = client_id
        socket = Socket(self, client_id)
        _, displaced = self.messaging.clients.attach(client_id, socket, displace=True)
        if displaced is not None:  # an older connection of the client: this one takes over
            displaced.end()
        self.socket = socket
        socket.start()

    async def write(self, data: bytes) -> bool:
        """Send one frame; False when the socket is closed."""
        if self.closed:
            return False
        try:
            await self.send({"type": "websocket.send", "bytes": data})
        except (OSError, RuntimeError):  # the client went away, or the socket closed meanwhile
            self.closed = True
            return False
        return True

    async def close(self, code: int, reason: str = "") -> None:
        """Close the socket from the server's side (pushes stop first)."""
        if self.closed:
            return
        self.closed = True
        if self.socket is not None:
            await self.socket.stop()
        try:
            await self.send({"type": "websocket.close", "code": code, "reason": reason})
        except (OSError, RuntimeError):
            pass

    async def release(self) -> None:
        """The connection is over: stop pushing and disconnect its FlexClient (unless a
        newer connection of the client took over)."""
        self.closed = True
        if self._closing is not None:  # the server's own close, under way
            await asyncio.gather(self._closing, return_exceptions=True)
        socket = self.socket
        if socket is None:
            return
        await socket.stop()
        if self.messaging.clients.detach(socket.client_id, socket):
            try:
                await self.messaging.broker.disconnect(socket.client_id)
            except StoreError as e:  # the store away: the client's record expires by itself
                logger.warning("could not disconnect FlexClient %s (its WebSocket closed): %s", socket.client_id, e)


class Socket(Pusher):
    """The pushing side of a WebSocket connection: a task draining the client's queue."""

    kind = "websocket"

    def __init__(self, connection: Connection, client_id: str) -> None:
        super().__init__(connection.messaging, client_id, default=connection.settings.default)
        self.connection = connection
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = self.loop.create_task(self._push(), name=f"amfkit-websocket-{self.client_id}")

    async def stop(self) -> None:
        task = self.task
        if task is None:
            return
        self.task = None
        if task is not asyncio.current_task():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _end(self) -> None:
        """The server ends the channel (shutdown, or a newer connection of the client)."""
        super()._end()
        connection = self.connection
        if not connection.closed and connection._closing is None:
            connection._closing = self.loop.create_task(connection.close(GOING_AWAY, "the server ended this channel"))

    async def _push(self) -> None:
        connection, loop = self.connection, self.loop
        send = connection.send
        keepalive = self.messaging.keepalive
        idle = connection.idle
        last_touch = loop.time()
        try:
            while not self.ending:
                now = loop.time()
                if now - last_touch >= keepalive:
                    self.touch()
                    last_touch = now
                batch = await self.next_batch(last_touch + keepalive - now)
                if not batch:
                    continue
                for data in self.copies(batch) if not batch.dropped else await self.encoded(batch):
                    if not idle.is_set():
                        await idle.wait()
                    # connection.write, inline (one coroutine less per copy)
                    if connection.closed:
                        return
                    try:
                        await send({"type": "websocket.send", "bytes": data})
                    except (OSError, RuntimeError):  # the client went away, or the socket closed meanwhile
                        connection.closed = True
                        return
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("the WebSocket channel of client %s failed", self.client_id)


def _positions(value: Any) -> dict[str, int] | Fault:
    """`amfkitPositions` checked: consumer id -> log position, at most MAX_POSITIONS."""
    bad = Fault(f"invalid header {POSITIONS}: an object of consumer ids and log positions was expected, found {shown(value)}", code="Server.Processing")
    if not isinstance(value, dict) or len(value) > MAX_POSITIONS:
        return bad
    out: dict[str, int] = {}
    for key, position in value.items():
        if isinstance(position, float) and position.is_integer():
            position = int(position)  # AMF3 sends integers past 2**28 as doubles
        if not (isinstance(key, str) and ID.fullmatch(key)) or isinstance(position, bool) or not isinstance(position, int) or position < 0:
            return bad
        out[key] = position
    return out


def _encoding_error(text: str) -> ErrorMessage:
    err = ErrorMessage()
    err.headers = {}
    err.timeToLive = 0
    err.faultCode = ENCODING_FAULT
    err.faultString = text
    err.faultDetail = ""
    err.rootCause = None
    err.extendedData = None
    return err
