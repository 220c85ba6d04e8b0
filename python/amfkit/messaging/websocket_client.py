"""The WebSocket channel of a client's Consumers (docs/client.md, "Messaging"): one
socket per client, which is a FlexClient of its own (its ping gives the DSId, the
Consumers on it subscribe through it, and the server forgets them when it closes).

Every binary frame holds one AMF3 Flex message. A reader (a daemon thread for `Client`,
a task for `AsyncClient`) matches each acknowledgement or ErrorMessage to the request
with that messageId (its correlationId) and routes every other message to its Consumer
by clientId. When the socket closes while Consumers remain, the reader opens a new one,
pings and subscribes them again (with the hub's backoff and their `max_attempts`).
The sync side uses `websockets.sync.client`, the async one `websockets.asyncio.client`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from .. import __version__, amf3
from .._aio import within
from .._text import clip
from ..remoting.client import TransportError, _fault_from_error_message
from ..remoting.messages import AcknowledgeMessage, CommandMessage, ErrorMessage, Operation
from ..remoting.services import Fault
from .hub import UNAVAILABLE, _consumer_id, _pushed, backoff, log, websocket_url

if TYPE_CHECKING:
    from .consumer import AsyncConsumer, Consumer
    from .hub import AsyncHub, Hub

__all__ = ["AsyncSocket", "SyncSocket"]


#: The header of a ping taking over a FlexClient on a new socket: its Consumers' last
#: positions (amfkit.messaging.websocket.POSITIONS).
POSITIONS = "amfkitPositions"
#: Headers of the HTTP client a WebSocket handshake does not take over (it sets its own).
_HANDSHAKE_OWN = frozenset(("host", "connection", "upgrade", "accept", "accept-encoding", "user-agent", "content-length", "content-type", "cookie"))


def _socket_headers(http: httpx.Client | httpx.AsyncClient, url: str) -> dict[str, str]:
    """The HTTP headers of a WebSocket handshake: those set on the client (an
    Authorization, say) and the client's cookies for the gateway's host."""
    headers = {k: v for k, v in http.headers.items() if k.lower() not in _HANDSHAKE_OWN and not k.lower().startswith("sec-websocket")}
    host = (urlsplit(url).hostname or "").lower()
    cookies = [
        f"{c.name}={c.value}"
        for c in http.cookies.jar
        if c.value is not None and (c.domain.lstrip(".").lower() == host or host.endswith("." + c.domain.lstrip(".").lower()))
    ]
    if cookies:
        headers["Cookie"] = "; ".join(cookies)
    return headers


def _read_timeout(http: httpx.Client | httpx.AsyncClient) -> float | None:
    """How long a request over the socket waits for its reply: the client's read timeout."""
    return http.timeout.read


class _Waiter:
    __slots__ = ("event", "value", "error")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class SyncSocket:
    """The WebSocket channel of a `Client`: one socket (a FlexClient of its own), a
    reader thread routing pushes and matching replies to requests by correlationId."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.client = hub.client
        self.url = websocket_url(hub.client.url)
        self.ws: Any = None
        self.dsid: str | None = None
        self.lock = threading.Lock()
        self.open_lock = threading.RLock()
        self.pending: dict[str, _Waiter] = {}
        self.reconnecting = False
        self.closed = False

    # -- requests -----------------------------------------------------------------------

    def request(self, message: Any) -> Any:
        """Send a Flex message over the socket; its acknowledgement (a Fault for an
        ErrorMessage, a TransportError when the socket fails or no reply comes)."""
        ws = self.ws
        if ws is None:
            raise TransportError("the WebSocket is not open", url=self.url)
        headers = dict(message.headers or {})
        if self.dsid is not None:
            headers["DSId"] = self.dsid
        message.headers = headers
        waiter = _Waiter()
        with self.lock:
            self.pending[message.messageId] = waiter
        try:
            data = amf3.encode(message, default=self.client._default)
            try:
                ws.send(data)
            except Exception as e:
                raise TransportError(clip(f"the WebSocket failed: {type(e).__name__}: {e}"), url=self.url) from e
            timeout = _read_timeout(self.client._http)
            if not waiter.event.wait(timeout):
                raise TransportError(f"no reply on the WebSocket in {timeout} s", url=self.url)
        finally:
            with self.lock:
                self.pending.pop(message.messageId, None)
        if waiter.error is not None:
            raise waiter.error
        if isinstance(waiter.value, ErrorMessage):
            raise _fault_from_error_message(waiter.value)
        return waiter.value

    def subscribe(self, consumer: Consumer) -> None:
        with self.open_lock:
            if self.ws is None:
                self._connect()
            ack = self.request(consumer._subscribe_message())
            self.hub._add(consumer, _consumer_id(ack), ack)

    def unsubscribe(self, consumer: Consumer) -> None:
        try:
            if self.ws is not None:
                self.request(consumer._unsubscribe_message())
        finally:
            if not self.hub._active("websocket"):
                self.close(final=False)

    def close(self, final: bool = True) -> None:
        with self.open_lock:
            self.closed = self.closed or final
            ws, self.ws = self.ws, None
        if ws is not None:
            try:
                ws.close()
            except Exception:
                pass

    # -- the socket ---------------------------------------------------------------------

    def _connect(self, positions: dict[str, int] | None = None) -> None:
        """Open a socket, start its reader, ping (and log in): under open_lock. A socket
        taking over the FlexClient of a lost one names in its ping (`positions`) the
        last message each Consumer received: the server goes on from there before it
        pushes anything."""
        from websockets.sync.client import connect

        if self.closed:
            raise TransportError("the client is closed", url=self.url)
        http = self.client._http
        try:
            ws = connect(
                self.url,
                additional_headers=_socket_headers(http, self.url),
                user_agent_header=f"amfkit/{__version__}",
                open_timeout=http.timeout.connect,
                max_size=self.client._max_response_size,
                compression=None,
            )
        except Exception as e:  # OSError (refused), InvalidHandshake, TimeoutError
            raise TransportError(clip(f"the WebSocket did not open: {type(e).__name__}: {e}"), url=self.url) from e
        self.ws = ws  # `dsid` stays: a new socket greets the server as the same FlexClient
        threading.Thread(target=self._read, args=(ws,), name="amfkit-websocket", daemon=True).start()
        try:
            ping = CommandMessage(operation=Operation.CLIENT_PING, headers={"DSMessagingVersion": 1.0, "DSId": self.dsid or "nil"})
            if positions and self.dsid is not None:
                ping.headers[POSITIONS] = positions
            ack = self.request(ping)
            dsid = ack.headers.get("DSId") if isinstance(ack.headers, Mapping) else None
            self.dsid = dsid if isinstance(dsid, str) and dsid else None
            credentials = self.client._credentials
            if credentials is not None:
                self.request(self.client._login_body().value[0])
        except BaseException:
            self.close(final=False)
            raise

    def _read(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            for data in ws:
                if isinstance(data, str):
                    continue
                try:
                    value = amf3.decode(data, **self.client._decode_options)
                except ValueError:
                    continue  # a frame we cannot read: skipped
                self._handle(value)
        except ConnectionClosed:
            pass
        except Exception:  # pragma: no cover - the connection broke some other way
            pass
        finally:
            self._ended(ws)

    def _handle(self, value: Any) -> None:
        if isinstance(value, AcknowledgeMessage):
            with self.lock:
                waiter = self.pending.get(value.correlationId) if isinstance(value.correlationId, str) else None
            if waiter is not None:
                waiter.value = value
                waiter.event.set()
                return
        if _pushed(value):
            self.hub.routes.route(value)

    def _ended(self, ws: Any) -> None:
        """The socket closed: fail what waits on it, and reconnect if Consumers remain."""
        with self.lock:
            waiting = list(self.pending.values())
        for waiter in waiting:
            waiter.error = TransportError("the WebSocket closed", url=self.url)
            waiter.event.set()
        with self.open_lock:
            if self.ws is ws:
                self.ws = None
            if self.reconnecting or self.closed or not self.hub._active("websocket"):
                return
            self.reconnecting = True
        try:
            self._reconnect()
        except BaseException as e:  # pragma: no cover - a bug: end the Consumers with it
            self.hub._fail(self.hub._of(["websocket"]), e)
        finally:
            self.reconnecting = False

    def _reconnect(self) -> None:
        attempts = 0
        error: BaseException = TransportError("the WebSocket closed", url=self.url)
        while self.hub._active("websocket") and not self.closed:
            attempts += 1
            if not self.hub._give_up("websocket", attempts, error):
                return
            if attempts > 1 and self.hub._closing.wait(backoff(attempts)):
                return
            try:
                with self.open_lock:
                    previous = self.dsid
                    if self.ws is None:
                        self._connect({c.id: c._position for c in self.hub._of(["websocket"]) if c.id and c._position is not None})
                    same = previous is not None and self.dsid == previous  # else the server knows none of the ids
                    for consumer in self.hub._of(["websocket"]):
                        sent = consumer._position if same else None
                        try:
                            ack = self.request(consumer._resubscribe_message() if same else consumer._subscribe_message())
                        except Fault as e:
                            if e.code == UNAVAILABLE:
                                raise
                            self.hub._fail([consumer], e)
                            continue
                        log.debug("websocket client %s: consumer %s resubscribed after position %s", self.dsid, ack.clientId, sent)
                        self.hub._move(consumer, _consumer_id(ack), ack, sent)
                return
            except (TransportError, Fault) as e:
                if isinstance(e, Fault) and e.code != UNAVAILABLE:
                    raise
                # Not reached, or its broker away (Redis restarting): again, on a new socket.
                log.debug("websocket client %s: reconnection failed: %s", self.dsid, e)
                error = e
                self.close(final=False)


class AsyncSocket:
    """`SyncSocket` on the event loop: a reader task instead of a thread."""

    def __init__(self, hub: AsyncHub) -> None:
        self.hub = hub
        self.client = hub.client
        self.url = websocket_url(hub.client.url)
        self.ws: Any = None
        self.dsid: str | None = None
        self.open_lock = asyncio.Lock()
        self.pending: dict[str, asyncio.Future[Any]] = {}
        self.readers: set[asyncio.Task[None]] = set()
        self.reconnecting = False
        self.closed = False

    async def request(self, message: Any) -> Any:
        ws = self.ws
        if ws is None:
            raise TransportError("the WebSocket is not open", url=self.url)
        headers = dict(message.headers or {})
        if self.dsid is not None:
            headers["DSId"] = self.dsid
        message.headers = headers
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[message.messageId] = future
        try:
            data = amf3.encode(message, default=self.client._default)
            try:
                await ws.send(data)
            except Exception as e:
                raise TransportError(clip(f"the WebSocket failed: {type(e).__name__}: {e}"), url=self.url) from e
            timeout = _read_timeout(self.client._http)
            if not await within(future, timeout):
                raise TransportError(f"no reply on the WebSocket in {timeout} s", url=self.url)
            value = future.result()
        finally:
            self.pending.pop(message.messageId, None)
        if isinstance(value, ErrorMessage):
            raise _fault_from_error_message(value)
        return value

    async def subscribe(self, consumer: AsyncConsumer) -> None:
        async with self.open_lock:
            if self.ws is None:
                await self._connect()
            ack = await self.request(consumer._subscribe_message())
            self.hub._add(consumer, _consumer_id(ack), ack)

    async def unsubscribe(self, consumer: AsyncConsumer) -> None:
        try:
            if self.ws is not None:
                await self.request(consumer._unsubscribe_message())
        finally:
            if not self.hub._active("websocket"):
                await self.close(final=False)

    async def close(self, final: bool = True) -> None:
        self.closed = self.closed or final
        ws, self.ws = self.ws, None
        if ws is not None:
            try:
                await ws.close()
            except Exception:
                pass
        if final:
            readers = [r for r in self.readers if r is not asyncio.current_task()]
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)

    async def _connect(self, positions: dict[str, int] | None = None) -> None:
        """`SyncSocket._connect`, awaited."""
        from websockets.asyncio.client import connect

        if self.closed:
            raise TransportError("the client is closed", url=self.url)
        http = self.client._http
        try:
            ws = await connect(
                self.url,
                additional_headers=_socket_headers(http, self.url),
                user_agent_header=f"amfkit/{__version__}",
                open_timeout=http.timeout.connect,
                max_size=self.client._max_response_size,
                compression=None,
            )
        except Exception as e:
            raise TransportError(clip(f"the WebSocket did not open: {type(e).__name__}: {e}"), url=self.url) from e
        self.ws = ws  # `dsid` stays: a new socket greets the server as the same FlexClient
        reader = asyncio.get_running_loop().create_task(self._read(ws), name="amfkit-websocket")
        self.readers.add(reader)
        reader.add_done_callback(self.readers.discard)
        try:
            ping = CommandMessage(operation=Operation.CLIENT_PING, headers={"DSMessagingVersion": 1.0, "DSId": self.dsid or "nil"})
            if positions and self.dsid is not None:
                ping.headers[POSITIONS] = positions
            ack = await self.request(ping)
            dsid = ack.headers.get("DSId") if isinstance(ack.headers, Mapping) else None
            self.dsid = dsid if isinstance(dsid, str) and dsid else None
            if self.client._credentials is not None:
                await self.request(self.client._login_body().value[0])
        except BaseException:
            await self.close(final=False)
            raise

    async def _read(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for data in ws:
                if isinstance(data, str):
                    continue
                try:
                    value = amf3.decode(data, **self.client._decode_options)
                except ValueError:
                    continue
                self._handle(value)
        except ConnectionClosed:
            pass
        finally:
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(TransportError("the WebSocket closed", url=self.url))
        if self.ws is ws:
            self.ws = None
        if self.reconnecting or self.closed or not self.hub._active("websocket"):
            return
        self.reconnecting = True
        try:
            await self._reconnect()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # pragma: no cover - a bug: end the Consumers with it
            self.hub._fail(self.hub._of(["websocket"]), e)
        finally:
            self.reconnecting = False

    def _handle(self, value: Any) -> None:
        if isinstance(value, AcknowledgeMessage) and isinstance(value.correlationId, str):
            future = self.pending.get(value.correlationId)
            if future is not None:
                if not future.done():
                    future.set_result(value)
                return
        if _pushed(value):
            self.hub.routes.route(value)

    async def _reconnect(self) -> None:
        attempts = 0
        error: BaseException = TransportError("the WebSocket closed", url=self.url)
        while self.hub._active("websocket") and not self.closed:
            attempts += 1
            if not self.hub._give_up("websocket", attempts, error):
                return
            if attempts > 1 and await self.hub._sleep(backoff(attempts)):
                return
            try:
                async with self.open_lock:
                    previous = self.dsid
                    if self.ws is None:
                        await self._connect({c.id: c._position for c in self.hub._of(["websocket"]) if c.id and c._position is not None})
                    same = previous is not None and self.dsid == previous  # else the server knows none of the ids
                    for consumer in self.hub._of(["websocket"]):
                        sent = consumer._position if same else None
                        try:
                            ack = await self.request(consumer._resubscribe_message() if same else consumer._subscribe_message())
                        except Fault as e:
                            if e.code == UNAVAILABLE:
                                raise
                            self.hub._fail([consumer], e)
                            continue
                        log.debug("websocket client %s: consumer %s resubscribed after position %s", self.dsid, ack.clientId, sent)
                        self.hub._move(consumer, _consumer_id(ack), ack, sent)
                return
            except (TransportError, Fault) as e:
                if isinstance(e, Fault) and e.code != UNAVAILABLE:
                    raise
                # Not reached, or its broker away (Redis restarting): again, on a new socket.
                log.debug("websocket client %s: reconnection failed: %s", self.dsid, e)
                error = e
                await self.close(final=False)
