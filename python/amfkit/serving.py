"""What `amfkit serve` adds to uvicorn: a deadline and a size limit on a request's head
(request line and headers), which uvicorn's httptools protocol does not have.

`HttpToolsProtocol` is uvicorn's httptools protocol with `header_timeout` (default
`DEFAULT_HEADER_TIMEOUT`, 10 s) and `max_header_size` (`DEFAULT_MAX_HEADER_SIZE`, 64 KiB)
added, nothing else; `amfkit serve` sets both through the environment variables
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


class HttpToolsProtocol(_Base):
    """uvicorn's httptools protocol with a deadline and a size limit on request heads."""

    header_timeout: float = _setting(HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT, float)
    max_header_size: int = _setting(MAX_HEADER_SIZE_ENV, DEFAULT_MAX_HEADER_SIZE, int)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True  # waiting for, or reading, a request line and headers
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._chunk = 0  # the size of the data being parsed
        self._head_too_large = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
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
        self._in_head = True
        self._head_bytes = 0
        if self._head_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm()
        # A head that came whole in one read is measured here (only when the read was
        # big enough to hold one over the limit: nothing to add for usual requests).
        limit = self.max_header_size
        if self._head_bytes + self._chunk > limit and len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers) > limit:
            self._head_too_large = True
            # The parser stops; uvicorn answers through send_400_response below.
            raise ValueError("request headers too large")
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if not self._head_too_large:
            super().send_400_response(msg)
            return
        self.transport.write(_HEAD_TOO_LARGE)
        self.transport.close()

    def _arm(self) -> None:
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        transport = self.transport
        if not self._in_head or transport.is_closing():
            return
        cycle = self.cycle
        if self._head_bytes and (cycle is None or cycle.response_complete):
            transport.write(_HEAD_TIMED_OUT)
        transport.close()
