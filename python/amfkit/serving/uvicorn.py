"""What `amfkit serve` adds to uvicorn (`amfkit.serving:HttpToolsProtocol`): a deadline
and a size limit on a request's head (request line and headers), which uvicorn's
httptools protocol does not have, and two short cuts past the ASGI app for a `Gateway`.

`HttpToolsProtocol` is uvicorn's httptools protocol with `header_timeout` (default
`DEFAULT_HEADER_TIMEOUT`, 10 s) and `max_header_size` (`DEFAULT_MAX_HEADER_SIZE`, 64 KiB)
added. When the app is a `Gateway` (found through uvicorn's middleware), the protocol
answers some requests itself, as soon as they are parsed, with no ASGI task:

- a plain AMF POST (the gateway's short path, `Gateway.amf_fast_route`) whose head and
  body came in one read: the calls are made and the answer written from the protocol's
  callbacks; a body still coming, or a packet of anything but plain calls to
  synchronous methods, goes to the ASGI app as usual (a result to await, to a task);
- a GET or HEAD of a small asset of a file system store (amfkit.assets.fastpath).

The answers are the app's own, byte for byte but for the order of the headers (the
gateway's CORS headers included).
`amfkit serve` sets the two limits through the environment variables
`AMFKIT_HEADER_TIMEOUT` and `AMFKIT_MAX_HEADER_SIZE`. What happens past each, and every
other limit: docs/limits.md ("The server").
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Base

from ..remoting.http import send_response
from . import DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_HEADER_SIZE, HEADER_TIMEOUT_ENV, MAX_HEADER_SIZE_ENV

__all__ = ["HttpToolsProtocol"]


def _setting(name: str, default: float, kind: type) -> Any:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number") from None
    if not value > 0:
        raise ValueError(f"{name} must be positive")
    return value


def _answer(status: bytes, text: bytes) -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: " + str(len(text)).encode() + b"\r\nconnection: close\r\n\r\n" + text
    )


_HEAD_TOO_LARGE = _answer(b"431 Request Header Fields Too Large", b"request headers too large\n")
_HEAD_TIMED_OUT = _answer(b"408 Request Timeout", b"request headers not received in time\n")


class _Answered:
    """Stands for the request cycle of a request the protocol answered."""

    response_complete = True

    class message_event:  # noqa: N801  (what uvicorn calls on a cycle when the peer goes)
        @staticmethod
        def set() -> None:
            pass


_ANSWERED = _Answered()


class _Later:
    """An ASGI app sending the response an awaitable gives: (status, headers, body)."""

    __slots__ = ("answer",)

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send_response(send, await self.answer)


#: For each app this process serves: (the app, the object holding its `asset_fast_route`
#: or None). The app is kept so that its id cannot be reused by another.
_HOLDERS: dict[int, tuple[Any, Any]] = {}


def _route_holder(app: Any) -> Any:
    """The object (a Gateway, found through uvicorn's middleware) whose `asset_fast_route`
    and `amf_fast_route` the protocol reads for each request (a gateway may turn them
    off); None if none."""
    entry = _HOLDERS.get(id(app))
    if entry is None or entry[0] is not app:
        holder = None
        obj = app
        for _ in range(6):
            if obj is None:
                break
            if hasattr(obj, "asset_fast_route"):
                holder = obj
                break
            obj = getattr(obj, "app", None)
        if len(_HOLDERS) >= 64:  # a server has one app; tests make many
            _HOLDERS.clear()
        entry = _HOLDERS[id(app)] = (app, holder)
    return entry[1]


def _origin(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """A request's `Origin` header (None when absent)."""
    for k, v in headers:
        if k == b"origin":
            return v
    return None


_DEFAULTS: list[Any] = [None, b""]


def _defaults(headers: list[tuple[bytes, bytes]]) -> bytes:
    """uvicorn's default response headers (Date, Server) as header lines; uvicorn makes a
    new list when the date changes, once a second."""
    if _DEFAULTS[0] is not headers:
        _DEFAULTS[1] = b"".join(k + b": " + v + b"\r\n" for k, v in headers)
        _DEFAULTS[0] = headers
    return _DEFAULTS[1]


class HttpToolsProtocol(_Base):
    """uvicorn's httptools protocol with a deadline and a size limit on request heads, and
    the gateway's AMF route and asset fast path."""

    header_timeout: float = _setting(HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT, float)
    max_header_size: int = _setting(MAX_HEADER_SIZE_ENV, DEFAULT_MAX_HEADER_SIZE, int)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True  # waiting for, or reading, a request line and headers
        self._head_bytes = 0
        # Timers are lazy: one per connection, moved by setting a deadline (a timer made
        # and cancelled for each request costs more than the fast path's whole answer).
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_deadline = 0.0
        self._messages = 0  # requests begun on this connection
        self._idle_timer: asyncio.TimerHandle | None = None
        self._idle_mark = 0
        self._idle_deadline = 0.0
        self._route_holder: Any = None
        self._chunk = 0  # the size of the data being parsed
        self._head_too_large = False
        # A POST the gateway's AMF route took: its route, Accept-Encoding and body so far.
        self._post_route: Any = None
        self._post_accept = ""
        self._post: list[bytes] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # With an access log on, every request goes through uvicorn's cycle, which logs it.
        self._route_holder = None if self.config.access_log else _route_holder(self.app)
        self._head_deadline = self.loop.time() + self.header_timeout
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._chunk = len(data)
        super().data_received(data)
        if self._post is not None:
            # The body did not all come with the head: the ASGI app reads the rest (under
            # the gateway's body deadline), unless the parser refused the request.
            chunks, self._post = self._post, None
            if not self.transport.is_closing():
                self._to_app(self.app, chunks, complete=False)
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.max_header_size and not self.transport.is_closing():
                self._disarm()
                self.logger.warning("Request headers larger than %d bytes.", self.max_header_size)
                self.transport.write(_HEAD_TOO_LARGE)
                self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._messages += 1
        self._in_head = True
        self._head_bytes = 0
        self._head_deadline = self.loop.time() + self.header_timeout
        if self._head_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._in_head = False  # the head timer, when it fires, sees it and stops
        # A head that came whole in one read is measured here (only when the read was
        # big enough to hold one over the limit: nothing to add for usual requests).
        limit = self.max_header_size
        if self._head_bytes + self._chunk > limit and len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers) > limit:
            self._head_too_large = True
            # The parser stops; uvicorn answers through send_400_response below.
            raise ValueError("request headers too large")
        holder = self._route_holder
        if holder is not None and (self.cycle is None or self.cycle.response_complete) and not self.parser.should_upgrade():
            method = self.parser.get_method()
            if method == b"POST":
                route = getattr(holder, "amf_fast_route", None)
                if route is not None and not self.expect_100_continue and not self._crowded():
                    accept = route.accepts(self.url, self.headers)
                    if accept is not None:
                        # Answered in on_message_complete if the body comes in this read.
                        self._post_route = route
                        self._post_accept = accept
                        self._post = []
                        return
            else:
                route = holder.asset_fast_route
                if route is not None:
                    answer = route.answer(method, self.url, self.headers)
                    if answer is not None:
                        head, data = answer
                        cors = getattr(holder, "cors", None)
                        if cors is not None:  # the gateway's CORS headers, as its ASGI app adds them
                            head += cors.lines(_origin(self.headers))
                        self._send_answer(head, data)
                        return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        post = self._post
        if post is None:
            super().on_body(body)
        else:
            post.append(body)

    def on_message_complete(self) -> None:
        post = self._post
        if post is None:
            super().on_message_complete()
            return
        self._post = None
        body = post[0] if len(post) == 1 else b"".join(post)
        answer = self._post_route.answer(body, self._post_accept)
        if answer is None:  # not plain calls: the ASGI app answers (nothing was called)
            self._to_app(self.app, [body], complete=True)
        elif type(answer) is tuple:
            self._send_answer(*answer)
        else:  # a result to await: in a task, through uvicorn's request cycle
            self._to_app(_Later(answer), [body], complete=True)

    def _crowded(self) -> bool:
        """Past `--limit-concurrency`: uvicorn's cycle answers 503."""
        limit = self.limit_concurrency
        return limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit)

    def _to_app(self, app: Any, chunks: list[bytes], *, complete: bool) -> None:
        """Hand the request whose head was parsed (and `chunks` of its body) to uvicorn's
        request cycle, run by `app`, as if uvicorn had parsed it itself."""
        saved = self.app
        self.app = app
        try:
            _Base.on_headers_complete(self)
        finally:
            self.app = saved
        for chunk in chunks:
            if chunk:
                _Base.on_body(self, chunk)
        if complete:
            _Base.on_message_complete(self)

    def _send_answer(self, head: bytes, body: bytes) -> None:
        """Write a response the fast path made (with the server's own Date and Server
        headers), then do what uvicorn does when a response completes."""
        keep_alive = self.parser.get_http_version() != "1.0" and self.parser.should_keep_alive()
        self.transport.writelines((head + _defaults(self.server_state.default_headers) + (b"\r\n" if keep_alive else b"connection: close\r\n\r\n"), body))
        self.cycle = _ANSWERED  # type: ignore[assignment]  # the body, if any, is dropped
        self.server_state.total_requests += 1
        if not keep_alive:
            self.transport.close()
            return
        # uvicorn's keep-alive deadline, kept by the connection's lazy idle timer.
        self._idle_mark = self._messages
        self._idle_deadline = self.loop.time() + self.timeout_keep_alive
        if self._idle_timer is None:
            self._idle_timer = self.loop.call_at(self._idle_deadline, self._idle_timed_out)

    def _idle_timed_out(self) -> None:
        self._idle_timer = None
        if self._messages != self._idle_mark or self.transport.is_closing():
            return  # another request began since: its own answer keeps the deadline
        if self.loop.time() < self._idle_deadline:
            self._idle_timer = self.loop.call_at(self._idle_deadline, self._idle_timed_out)
            return
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        if not self._head_too_large:
            super().send_400_response(msg)
            return
        self.transport.write(_HEAD_TOO_LARGE)
        self.transport.close()

    def _arm(self) -> None:
        self._head_timer = self.loop.call_at(self._head_deadline, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        transport = self.transport
        if not self._in_head or transport.is_closing():
            return  # armed again when the next request begins
        if self.loop.time() < self._head_deadline:  # a later request moved the deadline
            self._arm()
            return
        cycle = self.cycle
        if self._head_bytes and (cycle is None or cycle.response_complete):
            transport.write(_HEAD_TIMED_OUT)
        transport.close()
