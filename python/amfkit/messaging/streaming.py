"""HTTP streaming (Flex's `StreamingAMFChannel`) on the gateway's URL (docs/messaging.md,
"Streaming and WebSocket"). ASGI only: a stream is a response held open.

    POST /gateway?command=open&version=1      body DSId=<FlexClient id>  (form-encoded)
    -> 200 application/x-amf, held open:  <hex length>\\r\\n<one AMF3 value>\\r\\n ...
    POST /gateway?command=close&streamId=<id>&version=1   body DSId=<id>
    -> 200, empty; the stream ends with a DISCONNECT CommandMessage frame

The first frame is an AcknowledgeMessage whose body is the stream id and whose
correlationId is "open"; then each pushed message is a frame (drop notices first, then
the copies of one drained batch, written in one piece); a single 0x00 byte is a
heartbeat, sent when the stream has been idle `stream_heartbeat` seconds. Refusals are
plain text: 400 (an unknown command, a bad version, a missing or unknown DSId, a second
stream for the client, HTTP/1.0) and 503 (past `max_streams`, or messaging closed).

The client going away (ASGI `http.disconnect`) ends the stream at once: its tasks and its
slot go, and the FlexClient's subscriptions then expire after `client_timeout` like any
idle client's (a live stream keeps its client alive).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol
from urllib.parse import parse_qsl

from .._text import clip, shown
from ..remoting import http as _http
from ..remoting.messages import AcknowledgeMessage, CommandMessage, Operation, new_id
from ..remoting.request import ID
from .push import Pusher

if TYPE_CHECKING:
    from .service import Messaging

__all__ = ["CLOSE", "OPEN", "VERSION", "command_of", "frame", "serve"]

logger = logging.getLogger("amfkit.gateway")

OPEN = "open"
CLOSE = "close"
#: The streaming protocol version Flex sends (`version=1`), the only one served.
VERSION = "1"
#: The largest form body of an open or close request.
MAX_FORM = 4096
#: The heartbeat: a single NUL byte between frames.
HEARTBEAT = b"\x00"

Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]


class Settings(Protocol):
    """What a stream reads from the gateway (a `Gateway` is one)."""

    messaging: Any
    max_body_size: int
    body_timer: _http.BodyTimer
    default: Callable[[Any], Any] | None


def command_of(query: str) -> str | None:
    """The streaming command of a request's query string (`command=...`), or None when it
    names none (an AMF request)."""
    if "command=" not in query:
        return None
    for k, v in parse_qsl(query, keep_blank_values=True):
        if k == "command":
            return v
    return None


def frame(data: bytes) -> bytes:
    """One frame of the stream: the AMF3 bytes' length in hex, CRLF, the bytes, CRLF."""
    return b"%x\r\n%b\r\n" % (len(data), data)


async def serve(settings: Settings, scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Answer one streaming request (`POST path?command=...`): open a stream and hold it,
    close one, or refuse."""
    query = scope.get("query_string", b"").decode("latin-1")
    params = dict(parse_qsl(query, keep_blank_values=True))
    command = params.get("command")
    messaging: Messaging | None = settings.messaging
    if command not in (OPEN, CLOSE) or messaging is None:
        # BlazeDS answers an unknown command 400; a gateway without messaging knows none.
        why = "" if messaging is not None else " (this gateway has no messaging)"
        await _refuse(send, 400, f"unknown streaming command {shown(command)}{why}")
        return
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    try:
        body = await _http.read_body(headers, receive, min(MAX_FORM, settings.max_body_size), settings.body_timer)
    except _http.HTTPError as e:
        await _http.send_response(send, _http.refused(e))
        return
    form = dict(parse_qsl(body.decode("latin-1"), keep_blank_values=True)) if body else {}
    version = params.get("version")
    if version != VERSION:
        await _refuse(send, 400, f"unsupported streaming version {shown(version)} (amfkit serves version {VERSION})")
        return
    client_id = form.get("DSId", params.get("DSId"))
    if client_id is None or not ID.fullmatch(client_id):
        await _refuse(send, 400, "a streaming request needs the FlexClient id: DSId=<id> in the form body")
        return
    if command == CLOSE:
        channel = messaging.clients.channel(client_id)
        if isinstance(channel, Stream) and channel.stream_id == params.get("streamId"):
            channel.end()
        # No such stream (gone already): nothing to close, as BlazeDS.
        await _http.send_response(send, (200, [("content-length", "0")], b""))
        return
    if scope.get("http_version") == "1.0":
        await _refuse(send, 400, "streaming needs HTTP/1.1 (chunked responses)")
        return
    if messaging.closed:
        await _refuse(send, 503, "the server is shutting down")
        return
    known = await messaging.knows(client_id)
    if known is None:
        # Not a 400: Flex (and amfkit's client) would take the client for forgotten and
        # subscribe anew, from the newest message on; a 503 is tried again.
        await _refuse(send, 503, "the server's shared store cannot be reached now; try again")
        return
    if not known:
        await _refuse(send, 400, f"unknown FlexClient id {shown(client_id)}: ping first (a CLIENT_PING CommandMessage)")
        return
    stream = Stream(messaging, client_id, send, default=settings.default)
    attached, _ = messaging.clients.attach(client_id, stream, max_streams=messaging.max_streams)
    if not attached:
        if messaging.clients.channel(client_id) is not None:
            await _refuse(send, 400, f"FlexClient {shown(client_id)} has a stream open already")
        else:
            await _refuse(send, 503, f"this server holds its most streams ({messaging.max_streams})")
        return
    try:
        await stream.run(receive)
    finally:
        messaging.clients.detach(client_id, stream)


async def _refuse(send: Send, status: int, text: str) -> None:
    await _http.send_response(send, _http.text_response(status, clip(text)))


#: The stream's response headers: AMF, never cached, never buffered by a proxy (nginx
#: reads X-Accel-Buffering). No Content-Length: the server frames the body (chunked).
_HEADERS = ((b"content-type", b"application/x-amf"), (b"cache-control", b"no-cache, no-store"), (b"x-accel-buffering", b"no"))


class Stream(Pusher):
    """One open HTTP stream of a FlexClient."""

    kind = "stream"

    def __init__(self, messaging: Messaging, client_id: str, send: Send, *, default: Callable[[Any], Any] | None = None) -> None:
        super().__init__(messaging, client_id, default=default)
        self.stream_id = new_id()
        self.send = send

    def disconnected(self) -> None:
        """The FlexClient disconnected: the stream ends (a DISCONNECT frame)."""
        self.end()

    async def run(self, receive: Receive) -> None:
        """Stream until the client goes away (at once: nothing stays behind), the stream
        is closed, or the server ends it."""
        loop = self.loop
        pump = loop.create_task(self._pump(), name=f"amfkit-stream-{self.stream_id}")
        watch = loop.create_task(_http.until_disconnect(receive), name=f"amfkit-stream-watch-{self.stream_id}")
        try:
            await asyncio.wait((pump, watch), return_when=asyncio.FIRST_COMPLETED)
        finally:
            pump.cancel()
            watch.cancel()
            await asyncio.gather(pump, watch, return_exceptions=True)
            if pump.done() and not pump.cancelled() and pump.exception() is not None:
                logger.error("stream %s of client %s failed", self.stream_id, self.client_id, exc_info=pump.exception())

    async def _pump(self) -> None:
        messaging, send, loop = self.messaging, self.send, self.loop
        await send({"type": "http.response.start", "status": 200, "headers": list(_HEADERS)})
        ack = AcknowledgeMessage(body=self.stream_id, correlationId=OPEN)
        await send({"type": "http.response.body", "body": frame(self._encode(ack)), "more_body": True})
        heartbeat = messaging.stream_heartbeat
        keepalive = messaging.keepalive
        last_write = last_touch = loop.time()
        while not self.ending:
            now = loop.time()
            if now - last_touch >= keepalive:
                self.touch()
                last_touch = now
            if now - last_write >= heartbeat:
                await send({"type": "http.response.body", "body": HEARTBEAT, "more_body": True})
                last_write = now
                continue
            batch = await self.next_batch(min(last_write + heartbeat, last_touch + keepalive) - now)
            if batch:
                parts: list[bytes] = []
                for data in self.copies(batch) if not batch.dropped else await self.encoded(batch):
                    parts += (b"%x\r\n" % len(data), data, b"\r\n")
                await send({"type": "http.response.body", "body": b"".join(parts), "more_body": True})
                last_write = loop.time()
        bye = CommandMessage(operation=Operation.DISCONNECT, clientId=self.client_id)
        await send({"type": "http.response.body", "body": frame(self._encode(bye)), "more_body": False})
