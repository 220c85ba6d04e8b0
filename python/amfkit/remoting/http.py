"""The gateway's HTTP plumbing: media types, gzip both ways (`compress` decides for every
response), body limits and deadlines, and the ASGI and WSGI adapters around a plain core
`async (method, path, headers, body) -> (status, headers, body)`.

The compression defaults are measured: docs/gateway.md, "Compression"; every limit is in
docs/limits.md.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import zlib
from http import HTTPStatus
from typing import Any, Awaitable, Callable, Iterable, Mapping, TypeVar

from .. import compression
from .._text import MAX_SHOWN, clip, shown

__all__ = [
    "BodyTimer",
    "Coding",
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_GZIP_LEVEL",
    "DEFAULT_GZIP_THRESHOLD",
    "DEFAULT_MAX_BODY_SIZE",
    "HTTPError",
    "Response",
    "accepts_gzip",
    "asgi",
    "compress",
    "gzip",
    "inflate",
    "media_type",
    "text_response",
    "until_disconnect",
    "WSGIAdapter",
]

DEFAULT_GZIP_THRESHOLD = 1024
DEFAULT_GZIP_LEVEL = 1
DEFAULT_MAX_BODY_SIZE = 16 * 1024 * 1024
#: Most gzip members one request body may hold (clients send one).
MAX_GZIP_MEMBERS = 16
DEFAULT_BODY_TIMEOUT = 30.0

T = TypeVar("T")
logger = logging.getLogger("amfkit.gateway")

Headers = list[tuple[str, str]]
Response = tuple[int, Headers, bytes]
Core = Callable[[str, str, Mapping[str, str], bytes], Awaitable[Response]]
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Short = Callable[[str, Mapping[str, Any], bytes], "Response | Awaitable[Response] | None"]


class HTTPError(Exception):
    """A request refused at the HTTP level: a status and a short text for the body (cut
    to `amfkit._text.MAX_MESSAGE` characters: it may quote input)."""

    def __init__(self, status: int, message: str, headers: Headers | None = None) -> None:
        message = clip(message)
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []

    def response(self) -> Response:
        return text_response(self.status, self.message, self.headers)


def text_response(status: int, message: str, headers: Iterable[tuple[str, str]] = ()) -> Response:
    body = (message + "\n").encode("utf-8")
    return status, [("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(body))), *headers], body


_MEDIA_TYPES: dict[str, str] = {}


def media_type(content_type: str | None) -> str:
    """`application/x-amf; charset=x` -> `application/x-amf` (lowercase; "" when absent)."""
    if not content_type:
        return ""
    kind = _MEDIA_TYPES.get(content_type)
    if kind is None:
        kind = content_type.split(";", 1)[0].strip().lower()
        if len(_MEDIA_TYPES) < 64:  # clients send a handful of distinct values
            _MEDIA_TYPES[content_type] = kind
    return kind


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an `Accept-Encoding` value allows gzip (`gzip`, `x-gzip` or `*`, with a
    non-zero q-value)."""
    if not accept_encoding:
        return False
    value = accept_encoding.lower()
    if "gzip" not in value and "*" not in value:
        return False
    star = None
    for item in value.split(","):
        coding, _, params = item.partition(";")
        coding = coding.strip().lower()
        q = 1.0
        for p in params.split(";"):
            name, _, value = p.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if coding in ("gzip", "x-gzip"):
            return q > 0
        if coding == "*":
            star = q > 0
    return bool(star)


def gzip(data: bytes, level: int = DEFAULT_GZIP_LEVEL) -> bytes:
    """gzip-compress `data` (header without a file name or time, so equal inputs give
    equal outputs).

    The window is the smallest power of two holding `data` (at least 512 bytes) and the
    memory level follows it: the output is the same size as with zlib's defaults (a
    match cannot reach before the start anyway), but a small response no longer needs
    zlib's 256 KB of state, whose allocation and release cost 50-60 µs a response when
    the allocator hands the memory back to the system each time (a fresh server
    process), against 5-16 µs for 250 B-2 KB here."""
    n = min(15, max(9, (len(data) - 1).bit_length()))
    c = zlib.compressobj(level, zlib.DEFLATED, 16 + n, max(1, min(8, n - 6)))
    return c.compress(data) + c.flush()


class Coding:
    """The response headers one compression outcome adds, as text and as ASGI bytes."""

    __slots__ = ("text", "raw")

    def __init__(self, *headers: tuple[str, str]) -> None:
        self.text = headers
        self.raw = tuple((k.encode("latin-1"), v.encode("latin-1")) for k, v in headers)


_IDENTITY = Coding()
_VARY = Coding(("vary", "Accept-Encoding"))
_GZIPPED = Coding(("vary", "Accept-Encoding"), ("content-encoding", "gzip"))


def compress(body: bytes, accept_encoding: str | None, threshold: int | None, level: int) -> tuple[bytes, Coding]:
    """A response body, gzipped at `level` when it is at least `threshold` bytes and the
    client's `Accept-Encoding` allows gzip, and the headers that go with it (`Vary`
    whenever compression is on; `threshold` None turns it off)."""
    if threshold is None:
        return body, _IDENTITY
    if len(body) >= threshold and accepts_gzip(accept_encoding):
        return gzip(body, level), _GZIPPED
    return body, _VARY


def inflate(data: bytes, encoding: str, limit: int) -> bytes:
    """Decode a request body sent with `Content-Encoding: encoding` (gzip, x-gzip,
    deflate or identity), producing at most `limit` bytes (`amfkit.compression`).

    Raises HTTPError: 415 for another coding, 400 for a corrupt or truncated stream,
    413 when the output would pass `limit`."""
    coding = encoding.strip().lower()
    if coding in ("", "identity"):
        return data
    if coding in ("gzip", "x-gzip"):
        fmt = "gzip"
    elif coding == "deflate":
        fmt = "zlib"  # zlib-wrapped, as RFC 9110 defines it; raw deflate is tried below
    else:
        raise HTTPError(415, f"unsupported content encoding {shown(coding)} (gzip and deflate are)")
    try:
        try:
            return compression.inflate(data, fmt, limit, max_members=MAX_GZIP_MEMBERS)
        except compression.CompressionError as e:
            if fmt != "zlib" or e.kind != "corrupt":
                raise
            return compression.inflate(data, "deflate", limit)
    except compression.CompressionError as e:
        if e.kind == "too-large":
            raise HTTPError(413, f"request body inflates to more than {limit} bytes") from None
        if e.kind == "members":
            raise HTTPError(400, f"gzip request body of more than {MAX_GZIP_MEMBERS} members") from None
        if e.kind == "truncated":
            raise HTTPError(400, f"truncated {coding} request body") from None
        raise HTTPError(400, f"corrupt {coding} request body ({e.detail})") from None


_REASONS = {s.value: s.phrase for s in HTTPStatus}


def _reason(status: int) -> str:
    return _REASONS.get(status, "Unknown")


# --- ASGI ------------------------------------------------------------------------------


class BodyTimer:
    """Deadlines for request body reads: `start()` before reading (the task reading the
    body is noted with the time), `stop()` after. One timer callback per event loop
    looks at the pending reads every `timeout / 8` seconds (at least every 10 ms, at
    most every second) while there are any, and cancels the reads past their deadline;
    `expired()` then tells that cancellation from any other. A read is cancelled between
    `timeout` and `timeout` plus one check interval after it started.

    A task started twice keeps its first time, so a body read begun on one path and
    finished on another has one deadline."""

    __slots__ = ("timeout", "_tick", "_loop", "_pending", "_expired", "_handle")

    def __init__(self, timeout: float | None) -> None:
        if timeout is not None and not timeout > 0:
            raise ValueError("body_timeout must be positive (None: no deadline)")
        self.timeout = timeout
        self._tick = min(1.0, max(0.01, timeout / 8)) if timeout is not None else 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[asyncio.Task[Any], float] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> asyncio.Task[Any] | None:
        """Note the current task as reading a body; returns it (None: no deadline)."""
        if self.timeout is None:
            return None
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - ASGI apps always run in a task
            return None
        loop = task.get_loop()
        if loop is not self._loop:  # a new event loop (a test calling asyncio.run again)
            self._loop = loop
            self._pending = {}
            self._expired = set()
            self._handle = None
        if task not in self._pending:
            self._pending[task] = loop.time()
            if self._handle is None:
                self._handle = loop.call_later(self._tick, self._check)
        return task

    def stop(self, task: asyncio.Task[Any] | None) -> None:
        if task is not None:
            self._pending.pop(task, None)

    def expired(self, task: asyncio.Task[Any] | None) -> bool:
        """Whether `task` was cancelled by this timer (the mark is taken away; on
        Python 3.11+ the cancellation is withdrawn too, so the task can answer)."""
        if task is None or task not in self._expired:
            return False
        self._expired.discard(task)
        self._pending.pop(task, None)
        uncancel = getattr(task, "uncancel", None)
        if uncancel is not None:
            uncancel()
        return True

    def _check(self) -> None:
        loop = self._loop
        self._handle = None
        if loop is None or loop.is_closed():
            return
        if self._pending:
            limit = loop.time() - self.timeout  # type: ignore[operator]
            late = [t for t, started in self._pending.items() if started <= limit]
            for task in late:
                del self._pending[task]
                if not task.done():
                    self._expired.add(task)
                    task.cancel()
            if self._pending:
                self._handle = loop.call_later(self._tick, self._check)


async def asgi(
    core: Core,
    max_body_size: int,
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[Any]],
    send: Callable[[Any], Awaitable[None]],
    timer: BodyTimer | None = None,
) -> None:
    """Serve one ASGI connection with `core`: HTTP requests, lifespan (acknowledged, no
    work to do) and websockets (refused). `timer` bounds the time a body takes to come
    (408 past it)."""
    kind = scope["type"]
    if kind == "http":
        # ASGI servers give header names in lowercase; a name sent twice is rare, and
        # then its values are joined with ", " as HTTP allows.
        raw = scope["headers"]
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in raw}
        if len(headers) != len(raw):
            headers = {}
            for k, v in raw:
                name = k.decode("latin-1").lower()
                value = v.decode("latin-1")
                headers[name] = headers[name] + ", " + value if name in headers else value
        method = scope["method"]
        path = scope["path"]
        qs = scope.get("query_string")
        if qs:
            path = path + "?" + qs.decode("latin-1")
        try:
            body = await read_body(headers, receive, max_body_size, timer) if method == "POST" else b""
        except HTTPError as e:
            response = refused(e)
        else:
            try:
                response = await core(method, path, headers, body)
            except Exception:
                logger.exception("unexpected error answering %s %s", clip(method, MAX_SHOWN), clip(path, MAX_SHOWN))
                response = text_response(500, "internal server error")
        await send_response(send, response)
    elif kind == "lifespan":
        await serve_lifespan(receive, send)
    elif kind == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.close", "code": 1003})


async def serve_lifespan(receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
    """Acknowledge an ASGI lifespan's startup and shutdown (nothing to set up or tear down)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def send_response(send: Callable[[Any], Awaitable[None]], response: Response) -> None:
    status, out_headers, out = response
    await send({"type": "http.response.start", "status": status, "headers": [_encoded(k, v) for k, v in out_headers]})
    await send({"type": "http.response.body", "body": out})


def refused(error: HTTPError) -> Response:
    """The answer to a request refused before its body was read: the connection is
    closed rather than the rest of the body read and dropped."""
    status, headers, body = error.response()
    return status, [*headers, ("connection", "close")], body


async def within_deadline(timer: BodyTimer | None, task: asyncio.Task[Any] | None, reading: Awaitable[T]) -> T:
    """Await `reading`, a body read noted by `timer.start()` (which gave `task`): an
    `HTTPError` 408 when the timer cancelled it, any other cancellation passed on."""
    try:
        return await reading
    except asyncio.CancelledError:
        if timer is not None and timer.expired(task):
            raise HTTPError(408, f"request body not received within {timer.timeout:g} seconds") from None
        raise


async def until_disconnect(receive: Callable[[], Awaitable[Any]]) -> None:
    """Return when the HTTP client has gone away (ASGI `http.disconnect`), for a request
    whose body was read already: a held response (a parked poll, a stream) watches it
    beside its own work."""
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return


_ENCODED: dict[tuple[str, str], tuple[bytes, bytes]] = {}


def _encoded(name: str, value: str) -> tuple[bytes, bytes]:
    """A response header as bytes; the few that repeat on every answer are cached."""
    pair = _ENCODED.get((name, value))
    if pair is None:
        pair = (name.encode("latin-1"), value.encode("latin-1"))
        if name != "content-length" and name != "server-timing" and len(_ENCODED) < 256:
            _ENCODED[(name, value)] = pair
    return pair


def too_large(limit: int) -> HTTPError:
    """The 413 for a request body past `limit` bytes."""
    return HTTPError(413, f"request body larger than {limit} bytes")


def declared_length(value: str, limit: int) -> int:
    """A `Content-Length` value: 400 when it is not a number, 413 past `limit`."""
    try:
        n = int(value)
    except ValueError:
        raise HTTPError(400, "invalid Content-Length") from None
    if n > limit:
        raise too_large(limit)
    return n


async def read_body(
    headers: Mapping[str, str], receive: Callable[[], Awaitable[Any]], limit: int, timer: BodyTimer | None = None
) -> bytes:
    """The request body from ASGI `receive`: 400 for a bad `Content-Length` or a client
    gone, 413 past `limit` bytes (declared or sent), 408 past `timer`'s deadline."""
    declared = headers.get("content-length")
    if declared is not None:
        declared_length(declared, limit)
    task = timer.start() if timer is not None else None
    try:
        return await within_deadline(timer, task, _receive_body(receive, limit))
    finally:
        if timer is not None:
            timer.stop(task)


async def _receive_body(receive: Callable[[], Awaitable[Any]], limit: int) -> bytes:
    message = await receive()
    body = message.get("body", b"")
    if not message.get("more_body"):
        if message["type"] == "http.disconnect":
            raise HTTPError(400, "client disconnected")
        if len(body) > limit:
            raise too_large(limit)
        return body
    chunks = [body]
    size = len(body)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise HTTPError(400, "client disconnected")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


# --- WSGI ------------------------------------------------------------------------------


class _ThreadLoop:
    """One event loop per WSGI worker thread, closed when the thread's storage goes."""

    __slots__ = ("loop",)

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        loop = getattr(self, "loop", None)
        if loop is not None and not loop.is_closed() and not loop.is_running():
            loop.close()


class WSGIAdapter:
    """A WSGI application around an async core. Each worker thread runs the core on an
    event loop of its own (created on its first request, kept for the next ones), so
    async services work under any WSGI host. `mount` (prefix, app) hands GET and HEAD
    requests under a path to another WSGI app (the gateway's assets: streamed bodies)."""

    def __init__(
        self, core: Core, max_body_size: int, *, mount: tuple[str, WSGIApp] | None = None, short: Short | None = None
    ) -> None:
        self.core = core
        self.max_body_size = max_body_size
        #: (prefix, app): GET and HEAD requests whose path starts with prefix go to app.
        self.mount = mount
        #: short(path, environ, body): a POST's answer without the core (a response, or
        #: an awaitable of one), or None to let the core answer it.
        self.short = short
        self._local = threading.local()

    def _run(self, awaitable: Awaitable[Response]) -> Response:
        holder = getattr(self._local, "holder", None)
        if holder is None:
            holder = self._local.holder = _ThreadLoop()
        return holder.loop.run_until_complete(_awaited(awaitable))

    def close(self) -> None:
        """Close the calling thread's event loop (others close when their thread ends)."""
        holder = getattr(self._local, "holder", None)
        if holder is not None:
            holder.loop.close()
            del self._local.holder

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        mount = self.mount
        if mount is not None and (method == "GET" or method == "HEAD") and path.startswith(mount[0]):
            return mount[1](environ, start_response)
        try:
            body = self._body(environ) if method == "POST" else b""
        except HTTPError as e:
            response = e.response()
        else:
            try:
                response = self._answer(method, path, environ, body)
            except Exception:
                logger.exception("unexpected error answering %s %s", clip(method, MAX_SHOWN), clip(path, MAX_SHOWN))
                response = text_response(500, "internal server error")
        status, out_headers, out = response
        start_response(f"{status} {_reason(status)}", list(out_headers))
        return [out]

    def _answer(self, method: str, path: str, environ: Mapping[str, Any], body: bytes) -> Response:
        short = self.short
        if short is not None and method == "POST":
            answer = short(path, environ, body)
            if answer is not None:
                return answer if isinstance(answer, tuple) else self._run(answer)
        qs = environ.get("QUERY_STRING")
        if qs:
            path = path + "?" + qs
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        if environ.get("CONTENT_LENGTH"):
            headers["content-length"] = environ["CONTENT_LENGTH"]
        return self._run(self.core(method, path, headers, body))

    def _body(self, environ: Mapping[str, Any]) -> bytes:
        limit = self.max_body_size
        stream = environ.get("wsgi.input")
        declared = environ.get("CONTENT_LENGTH")
        if declared:
            n = declared_length(declared, limit)
            if n <= 0 or stream is None:
                return b""
            data = _read(stream, n)
            if len(data) < n:
                raise HTTPError(400, f"request body ended after {len(data)} of {n} bytes")
            return data
        if stream is None or not environ.get("wsgi.input_terminated"):
            return b""  # no length and no terminated stream: PEP 3333 says there is no body
        data = _read(stream, limit + 1)
        if len(data) > limit:
            raise too_large(limit)
        return data


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _read(stream: Any, n: int) -> bytes:
    """Read up to n bytes (a WSGI stream may return less than asked before the end)."""
    chunks = []
    left = n
    try:
        while left > 0:
            chunk = stream.read(min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except (OSError, ValueError) as e:
        raise HTTPError(400, f"could not read the request body ({e})") from None
    return b"".join(chunks)
