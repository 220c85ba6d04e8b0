"""What `amfkit serve` adds to uvicorn: a deadline and a size limit on a request's head
(request line and headers), which uvicorn's httptools protocol does not have, and the
asset store's file system fast path.

`HttpToolsProtocol` is uvicorn's httptools protocol with `header_timeout` (default
`DEFAULT_HEADER_TIMEOUT`, 10 s) and `max_header_size` (`DEFAULT_MAX_HEADER_SIZE`, 64 KiB)
added, and one short cut: when the app is a `Gateway` whose assets are a file system
store, a GET or HEAD of a small asset is answered as soon as its head is parsed
(amfkit.assets.fastpath; anything it does not serve goes to the app as usual).
`amfkit serve` sets the two limits through the environment variables
`AMFKIT_HEADER_TIMEOUT` and `AMFKIT_MAX_HEADER_SIZE`. What happens past each, and every
other limit: docs/limits.md ("The server").
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Base

__all__ = ["DEFAULT_HEADER_TIMEOUT", "DEFAULT_MAX_HEADER_SIZE", "HEADER_TIMEOUT_ENV", "MAX_HEADER_SIZE_ENV", "HttpToolsProtocol"]

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_HEADER_SIZE = 64 * 1024
# `amfkit serve` passes its options to the protocol through the environment, which
# every worker process (started afresh by uvicorn) inherits.
HEADER_TIMEOUT_ENV = "AMFKIT_HEADER_TIMEOUT"
MAX_HEADER_SIZE_ENV = "AMFKIT_MAX_HEADER_SIZE"


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
    """Stands for the request cycle of a request the fast path answered."""

    response_complete = True

    class message_event:  # noqa: N801  (what uvicorn calls on a cycle when the peer goes)
        @staticmethod
        def set() -> None:
            pass


_ANSWERED = _Answered()
#: For each app this process serves: (the app, the object holding its `asset_fast_route`
#: or None). The app is kept so that its id cannot be reused by another.
_HOLDERS: dict[int, tuple[Any, Any]] = {}


def _route_holder(app: Any) -> Any:
    """The object (a Gateway, found through uvicorn's middleware) whose `asset_fast_route`
    the protocol reads for each request (a gateway may turn it off); None if none."""
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
    the asset fast path."""

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
        route = None if holder is None else holder.asset_fast_route
        if route is not None and (self.cycle is None or self.cycle.response_complete) and not self.parser.should_upgrade():
            answer = route.answer(self.parser.get_method(), self.url, self.headers)
            if answer is not None:
                self._send_answer(*answer)
                return
        super().on_headers_complete()

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
