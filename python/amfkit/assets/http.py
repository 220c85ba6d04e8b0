"""Assets over HTTP: what a GET or HEAD of `/assets/<name>` answers (docs/assets.md).

The decisions are pure functions, apart from any server, so every route answers alike:
`name_from_path` turns the request path after the prefix into a checked asset name,
`plan` the request's headers and an asset's metadata into the status, the response
headers and the byte range to send (conditional requests and ranges per RFC 9110).
`AssetServer` puts them to work under ASGI (large bodies streamed in chunks read off the
event loop) and WSGI; a `Gateway(services, assets=...)` mounts one.

Ranges: one range (`bytes=a-b`, `bytes=a-`, `bytes=-n`) is answered 206; a request for
several ranges is answered 200 with the whole body (no multipart responses), and a
malformed `Range` or another unit is ignored (200), as RFC 9110 allows. `Range` applies
to GET only; `If-Range` (an entity tag, compared strongly, or a date, matched exactly)
keeps the range only while the asset is unchanged. Bodies are never compressed.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from http import HTTPStatus
from typing import Any, NamedTuple, Union
from urllib.parse import unquote_to_bytes

from .._text import shown
from .names import InvalidAssetName, check_name
from .store import Asset, AssetChanged, AssetError, AssetNotFound, AssetReader, AssetStore, StoreUnavailable

__all__ = [
    "ALLOW",
    "CHUNK_SIZE",
    "CONDITIONAL_HEADERS",
    "DEFAULT_CACHE_CONTROL",
    "DEFAULT_PATH",
    "SMALL_BODY",
    "AssetRequestError",
    "AssetServer",
    "Plan",
    "byte_range",
    "http_date",
    "name_from_path",
    "plan",
]

logger = logging.getLogger("amfkit.assets")

DEFAULT_PATH = "/assets"
#: Clients may reuse an asset for an hour without asking; then they revalidate (304).
DEFAULT_CACHE_CONTROL = "public, max-age=3600"
#: Bodies up to this size are read in one piece; larger ones are streamed in chunks.
SMALL_BODY = 64 * 1024
CHUNK_SIZE = 256 * 1024
#: The methods an asset path answers (the `Allow` header of a 405).
ALLOW = "GET, HEAD"
#: The request headers `plan` reads (lowercase): a route that passes only some of a
#: request's headers to `plan` must pass these.
CONDITIONAL_HEADERS = frozenset({"if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "if-range", "range"})

#: `byte_range`'s answer for a range that is well formed but outside the asset (416).
UNSATISFIABLE = (-1, -1)

#: Bounds of the small caches (entries); a full cache is emptied and starts again.
_CACHE_ENTRIES = 1024

Headers = list[tuple[str, str]]
Response = tuple[int, Headers, bytes]


class AssetRequestError(Exception):
    """A request path that names no asset: `status` is 400 (not percent-encoded UTF-8)
    or 404 (a name the store refuses), `message` a short text for the body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Plan(NamedTuple):
    """What to answer: `status`, `headers` (lowercase names), and the bytes of the asset
    to send, `length` of them from `offset` (0 for HEAD, 304, 412 and 416)."""

    status: int
    headers: Headers
    offset: int
    length: int


_new = tuple.__new__  # a Plan without NamedTuple's slower constructor


# --- names -----------------------------------------------------------------------------

_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_NAMES: dict[tuple[str, bool], str] = {}


def name_from_path(path: str, *, percent: bool = True) -> str:
    """The asset name in `path`, the request path after the prefix and its '/', given as
    its bytes read as Latin-1 (what servers hand out: WSGI's `PATH_INFO`, or a raw path
    `.decode("latin-1")`). `percent`: decode `%XX` escapes first (a raw path); False when
    the server did already (WSGI). The bytes must then be UTF-8, else
    `AssetRequestError` 400; a name the store refuses (`check_name`: `..`, a leading
    '/', a backslash, NUL...) is `AssetRequestError` 404. Decoded once only: `%252e`
    is the name `%2e`."""
    key = (path, percent)
    name = _NAMES.get(key)
    if name is not None:
        return name
    try:
        data = path.encode("latin-1")
    except UnicodeEncodeError:
        raise AssetRequestError(400, "request path is not bytes read as latin-1") from None
    if percent and b"%" in data:
        if _BAD_ESCAPE.search(data):
            raise AssetRequestError(400, "malformed percent-escape in the request path")
        data = unquote_to_bytes(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise AssetRequestError(400, "request path is not UTF-8") from None
    try:
        name = check_name(text)
    except InvalidAssetName:
        raise AssetRequestError(404, f"no asset {shown(text)}") from None
    if len(_NAMES) >= _CACHE_ENTRIES:
        _NAMES.clear()
    _NAMES[key] = name
    return name


# --- dates and validators --------------------------------------------------------------

_DATES: dict[str, Union[int, None]] = {}


def http_date(value: str) -> int | None:
    """An HTTP-date (IMF-fixdate, RFC 850 or asctime form) as POSIX seconds; None when it
    is not one."""
    if value in _DATES:
        return _DATES[value]
    seconds: int | None = None
    if len(value) <= 64:
        try:
            parts = email.utils.parsedate_tz(value)
        except (TypeError, ValueError, IndexError):
            parts = None
        if parts is not None:
            try:
                seconds = int(email.utils.mktime_tz(parts))
            except (OverflowError, ValueError):
                seconds = None
    if len(_DATES) >= _CACHE_ENTRIES:
        _DATES.clear()
    _DATES[value] = seconds
    return seconds


_ETAGS = re.compile(r'(W/)?("[^"]*")')


class _Meta:
    """What the answers about one asset share: validators and ready header lists."""

    __slots__ = ("etag", "opaque", "weak", "seconds", "last_modified", "size", "content_type", "tail", "not_modified", "whole")

    def __init__(self, asset: Asset, cache_control: str | None) -> None:
        self.etag = etag = asset.etag
        self.weak = etag.startswith("W/")
        self.opaque = etag[2:] if self.weak else etag
        self.seconds = math.floor(asset.mtime)
        self.last_modified = email.utils.formatdate(self.seconds, usegmt=True)
        self.size = asset.size
        self.content_type = asset.content_type
        cache = [("cache-control", cache_control)] if cache_control is not None else []
        #: What follows Content-Type and Content-Length (and Content-Range) in 200 and 206.
        self.tail: tuple[tuple[str, str], ...] = (
            ("etag", etag),
            ("last-modified", self.last_modified),
            *cache,
            ("accept-ranges", "bytes"),
            ("x-content-type-options", "nosniff"),
        )
        self.not_modified: tuple[tuple[str, str], ...] = (("etag", etag), ("last-modified", self.last_modified), *cache)
        #: The headers of a 200.
        self.whole = (("content-type", self.content_type), ("content-length", str(self.size)), *self.tail)

    def matches(self, value: str, *, strong: bool) -> bool:
        """Whether an If-Match (`strong`) or If-None-Match list names this asset's tag."""
        value = value.strip()
        if value == "*" or (value == self.etag and not (strong and self.weak)):
            return True
        for m in _ETAGS.finditer(value):
            if m.group(2) == self.opaque and not (strong and (m.group(1) or self.weak)):
                return True
        return False


_METAS: dict[tuple[Any, ...], _Meta] = {}


def _meta(asset: Asset, cache_control: str | None) -> _Meta:
    key = (asset.etag, asset.modified, asset.size, asset.content_type, cache_control)
    meta = _METAS.get(key)
    if meta is None:
        meta = _Meta(asset, cache_control)
        if len(_METAS) >= _CACHE_ENTRIES:
            _METAS.clear()
        _METAS[key] = meta
    return meta


# --- ranges ----------------------------------------------------------------------------

_RANGE_SPEC = re.compile(r"([0-9]{1,64})-([0-9]{0,64})|-([0-9]{1,64})")
#: The common shape, matched whole at once: `bytes=` and one range.
_ONE_RANGE = re.compile(r"bytes=(?:([0-9]{1,64})-([0-9]{0,64})|-([0-9]{1,64}))")


def byte_range(value: str, size: int) -> tuple[int, int] | None:
    """A `Range` value for an asset of `size` bytes: (start, end), end excluded, for one
    satisfiable range; `UNSATISFIABLE` for one that starts past the end (416); None to
    answer the whole body: another unit, a malformed value, several ranges, or a suffix
    range of an empty asset (which a 206 cannot express)."""
    m = _ONE_RANGE.fullmatch(value)
    if m is None:
        unit, eq, spec = value.partition("=")
        if not eq or unit.rstrip(" \t").lower() != "bytes":
            return None
        items = [s for s in (p.strip(" \t") for p in spec.split(",")) if s]
        if len(items) != 1:
            return None  # none (malformed) or several: the whole body
        m = _RANGE_SPEC.fullmatch(items[0])
        if m is None:
            return None
    first, last, suffix = m.groups()
    if suffix is not None:
        n = int(suffix)
        if n == 0:
            return UNSATISFIABLE
        if size == 0:
            return None
        return max(0, size - n), size
    start = int(first)
    if last:
        end = int(last)
        if end < start:
            return None  # an invalid range makes the header invalid: ignored
        if start >= size:
            return UNSATISFIABLE
        return start, min(end + 1, size)
    if start >= size:
        return UNSATISFIABLE
    return start, size


# --- the plan --------------------------------------------------------------------------


def _precondition(method: str, headers: Mapping[str, str], meta: _Meta) -> int:
    """RFC 9110 13.2.2, steps 1-4: 412, 304, or 0 to go on."""
    value = headers.get("if-match")
    if value is not None:
        if not meta.matches(value, strong=True):
            return 412
    else:
        value = headers.get("if-unmodified-since")
        if value is not None:
            t = http_date(value)
            if t is not None and meta.seconds > t:
                return 412
    value = headers.get("if-none-match")
    if value is not None:
        return 304 if meta.matches(value, strong=False) else 0
    value = headers.get("if-modified-since")
    if value is not None:
        if value == meta.last_modified:
            return 304
        t = http_date(value)
        if t is not None and meta.seconds <= t:
            return 304
    return 0


def _if_range_holds(value: str, meta: _Meta) -> bool:
    value = value.strip()
    if value.startswith('"'):
        return value == meta.etag and not meta.weak
    if value.startswith("W/"):
        return False  # a weak tag never matches here (strong comparison)
    return value == meta.last_modified or http_date(value) == meta.seconds


def plan(method: str, headers: Mapping[str, str], asset: Asset, cache_control: str | None = DEFAULT_CACHE_CONTROL) -> Plan:
    """The answer to a GET or HEAD (`method`, uppercase) of `asset`, given the request's
    `headers` (lowercase names; only `CONDITIONAL_HEADERS` are read):

    - `If-Match` / `If-Unmodified-Since` that fail: 412, no body;
    - `If-None-Match` (a list or `*`, weak comparison) that matches, or, without it,
      `If-Modified-Since` not older than the asset (to the second): 304, with `ETag`,
      `Last-Modified` and `Cache-Control` only;
    - GET with one satisfiable `Range` (and an `If-Range` that holds, if any): 206 with
      `Content-Range`; one starting past the end: 416 with `Content-Range: bytes */SIZE`;
    - else 200, the whole asset.

    200 and 206 carry `Content-Type`, `Content-Length`, a strong `ETag`,
    `Last-Modified`, `Cache-Control` (none when `cache_control` is None), `Accept-Ranges:
    bytes` and `X-Content-Type-Options: nosniff`; HEAD gets the same headers as GET."""
    meta = _meta(asset, cache_control)
    size = meta.size
    if headers:
        status = _precondition(method, headers, meta)
        if status == 304:
            return _new(Plan, (304, list(meta.not_modified), 0, 0))
        if status == 412:
            return _new(Plan, (412, [("content-length", "0")], 0, 0))
        value = headers.get("range")
        if value is not None and method == "GET":
            if_range = headers.get("if-range")
            span = byte_range(value, size) if if_range is None or _if_range_holds(if_range, meta) else None
            if span is UNSATISFIABLE:
                return _new(Plan, (416, [("content-range", f"bytes */{size}"), ("content-length", "0"), ("accept-ranges", "bytes")], 0, 0))
            if span is not None:
                start, end = span
                out = [
                    ("content-type", meta.content_type),
                    ("content-length", str(end - start)),
                    ("content-range", f"bytes {start}-{end - 1}/{size}"),
                    *meta.tail,
                ]
                return _new(Plan, (206, out, start, end - start))
    return _new(Plan, (200, list(meta.whole), 0, size if method == "GET" else 0))


# --- serving ---------------------------------------------------------------------------

_PATH = re.compile(r"(/[A-Za-z0-9._~!$&'()*+,;=:@-]+)+")
_HEADER_VALUE = re.compile(r"[\x20-\x7e]*")
_REASONS = {s.value: s.phrase for s in HTTPStatus}
_CONDITIONAL_RAW = frozenset(k.encode("ascii") for k in CONDITIONAL_HEADERS)
Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


def _text(status: int, message: str, extra: Iterable[tuple[str, str]] = ()) -> Response:
    body = (message + "\n").encode("utf-8")
    return status, [("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(body))), *extra], body


def _raw(headers: Headers) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


async def _send_all(send: Send, response: Response) -> None:
    status, headers, body = response
    await send({"type": "http.response.start", "status": status, "headers": _raw(headers)})
    await send({"type": "http.response.body", "body": body})


async def _disconnected(receive: Receive) -> None:
    while (await receive()).get("type") != "http.disconnect":
        pass


class AssetServer:
    """GET and HEAD of `{path}/<name>` from `store` (an `AssetStore`, or a URL for
    `AssetStore.open`), with `cache_control` as the `Cache-Control` of every answer
    (None: no such header). Other methods under the path are 405 (`Allow: GET, HEAD`),
    names that are not there or not valid 404. A store that fails is a 503 (logged).

    `asgi(scope, receive, send)` and `wsgi(environ, start_response)` answer one request
    (each is an app for the path: anything else is a 404); `respond(method, path,
    headers)` gives a whole answer in memory, for the gateway's plain core."""

    def __init__(self, store: AssetStore | str, *, path: str = DEFAULT_PATH, cache_control: str | None = DEFAULT_CACHE_CONTROL) -> None:
        if isinstance(store, str):
            store = AssetStore.open(store)
        elif not isinstance(store, AssetStore):
            raise TypeError(f"assets must be an AssetStore or a store URL, not {type(store).__name__}")
        path = path.rstrip("/") if isinstance(path, str) else path
        if not isinstance(path, str) or not _PATH.fullmatch(path):
            raise ValueError(f"the assets path must be a URL path like '/assets', not {shown(path)}")
        if cache_control is not None and not (isinstance(cache_control, str) and _HEADER_VALUE.fullmatch(cache_control)):
            raise ValueError("cache_control must be a header value of printable ASCII, or None")
        self.store = store
        self.path = path
        #: The path and its '/': what a request path under it starts with.
        self.prefix = path + "/"
        self._raw_prefix = self.prefix.encode("ascii")
        self.cache_control = cache_control

    def under(self, path: str) -> bool:
        """Whether a request path (decoded) is under this server's path."""
        return path.startswith(self.prefix)

    # --- shared steps ----------------------------------------------------------------

    def _refusal(self, method: str, path: str) -> Response | None:
        if not path.startswith(self.prefix):
            return _text(404, f"not found: {shown(path)} (assets are under {self.prefix})")
        if method != "GET" and method != "HEAD":
            return _text(405, f"method {shown(method)} not allowed", [("allow", ALLOW)])
        return None

    def _failure(self, name: str, error: Exception) -> Response:
        if isinstance(error, AssetNotFound):
            return _text(404, f"no asset {shown(name)}")
        logger.error("cannot read asset %s: %s", shown(name), error, exc_info=not isinstance(error, StoreUnavailable))
        return _text(503, "asset store unavailable", [("retry-after", "1")])

    # --- ASGI ------------------------------------------------------------------------

    async def asgi(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        """Answer one ASGI HTTP request. A body of at most `SMALL_BODY` bytes is read in
        one piece before the answer starts; a larger one is streamed in `CHUNK_SIZE`
        pieces (the next read overlapping the send of the last), and stops when the
        client goes away. An asset that changes under a stream (`AssetChanged`) ends it
        with that exception, so the server drops the connection rather than send a mix."""
        method = scope["method"]
        path = scope["path"]
        refusal = self._refusal(method, path)
        if refusal is not None:
            await _send_all(send, refusal)
            return
        raw = scope.get("raw_path")
        if raw and raw.startswith(self._raw_prefix):
            rest, percent = raw[len(self._raw_prefix) :].split(b"?", 1)[0].decode("latin-1"), True
        else:  # no raw path from this server: the decoded one, as its UTF-8 bytes
            rest, percent = path[len(self.prefix) :].encode("utf-8", "surrogateescape").decode("latin-1"), False
        try:
            name = name_from_path(rest, percent=percent)
        except AssetRequestError as e:
            await _send_all(send, _text(e.status, e.message))
            return
        headers: dict[str, str] = {}
        for k, v in scope["headers"]:  # ASGI header names are lowercase
            if k in _CONDITIONAL_RAW:
                key = k.decode("latin-1")
                headers[key] = headers[key] + ", " + v.decode("latin-1") if key in headers else v.decode("latin-1")
        store = self.store
        for _ in (1, 2):  # once more when the asset was replaced between open and read
            try:
                reader = await store.aopen_reader(name, preload=SMALL_BODY)
            except AssetChanged:
                continue  # replaced while its bytes were being read: again
            except (AssetError, OSError) as e:
                await _send_all(send, self._failure(name, e))
                return
            try:
                p = plan(method, headers, reader.asset, self.cache_control)
                if p.length > SMALL_BODY:
                    await send({"type": "http.response.start", "status": p.status, "headers": _raw(p.headers)})
                    await self._stream(reader, p.offset, p.length, receive, send)
                    return
                try:
                    body: bytes | None = await store.aread(reader, p.offset, p.length) if p.length else b""
                except AssetChanged:
                    body = None
                except (AssetError, OSError) as e:
                    await _send_all(send, self._failure(name, e))
                    return
            finally:
                reader.close()
            if body is not None and len(body) == p.length:
                await send({"type": "http.response.start", "status": p.status, "headers": _raw(p.headers)})
                await send({"type": "http.response.body", "body": body})
                return
        await _send_all(send, _text(503, "asset changing, try again", [("retry-after", "1")]))

    async def _stream(self, reader: AssetReader, offset: int, length: int, receive: Receive, send: Send) -> None:
        store = self.store
        gone = asyncio.ensure_future(_disconnected(receive))
        n = min(CHUNK_SIZE, length)
        pending: asyncio.Future[bytes] = asyncio.ensure_future(store.aread(reader, offset, n))
        try:
            while True:
                chunk = await pending
                if len(chunk) != n:
                    raise AssetChanged(f"asset {shown(reader.asset.name)} changed while being sent")
                offset += n
                length -= n
                if gone.done():
                    return  # the client went away: no more reading
                if length:
                    n = min(CHUNK_SIZE, length)
                    pending = asyncio.ensure_future(store.aread(reader, offset, n))
                await send({"type": "http.response.body", "body": chunk, "more_body": length > 0})
                if not length:
                    return
        finally:
            gone.cancel()
            if not pending.done():
                # The read runs in a thread: let it end before the reader is closed.
                await asyncio.wait([pending])
            if not pending.cancelled():
                pending.exception()  # retrieved: an ended stream's read may have failed

    # --- the plain core --------------------------------------------------------------

    async def respond(self, method: str, path: str, headers: Mapping[str, str]) -> Response:
        """The whole answer to one request, body in memory: `path` is the request path
        (percent-encoded, no query string), `headers` lowercase."""
        refusal = self._refusal(method, path)
        if refusal is not None:
            return refusal
        try:
            name = name_from_path(path[len(self.prefix) :].encode("utf-8", "surrogateescape").decode("latin-1"))
        except AssetRequestError as e:
            return _text(e.status, e.message)
        try:
            reader = await self.store.aopen_reader(name, preload=SMALL_BODY)
        except (AssetError, OSError) as e:
            return self._failure(name, e)
        try:
            p = plan(method, headers, reader.asset, self.cache_control)
            body = await self.store.aread(reader, p.offset, p.length) if p.length else b""
        except (AssetError, OSError) as e:
            return self._failure(name, e)
        finally:
            reader.close()
        if len(body) != p.length:
            return _text(503, "asset changing, try again", [("retry-after", "1")])
        return p.status, p.headers, body

    # --- WSGI ------------------------------------------------------------------------

    def wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Answer one WSGI request; the body is an iterable of chunks (one for a small
        body), read as the server asks for them."""
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        response = self._refusal(method, path)
        if response is None:
            try:
                name = name_from_path(path[len(self.prefix) :], percent=False)
            except AssetRequestError as e:
                response = _text(e.status, e.message)
        if response is not None:
            status, out, body = response
            start_response(f"{status} {_REASONS.get(status, 'Unknown')}", out)
            return [body]
        headers = {}
        for key in CONDITIONAL_HEADERS:
            value = environ.get("HTTP_" + key.upper().replace("-", "_"))
            if value is not None:
                headers[key] = value
        try:
            reader = self.store.open_reader(name, preload=SMALL_BODY)
        except (AssetError, OSError) as e:
            status, out, body = self._failure(name, e)
            start_response(f"{status} {_REASONS[status]}", out)
            return [body]
        streamed = False
        try:
            p = plan(method, headers, reader.asset, self.cache_control)
            if p.length > SMALL_BODY:
                start_response(f"{p.status} {_REASONS[p.status]}", p.headers)
                streamed = True
                return _WSGIBody(reader, p.offset, p.length)  # it closes the reader
            body = reader.read(p.offset, p.length) if p.length else b""
        except (AssetError, OSError) as e:
            status, out, body = self._failure(name, e)
            start_response(f"{status} {_REASONS[status]}", out)
            return [body]
        finally:
            if not streamed:
                reader.close()
        if len(body) != p.length:
            status, out, body = _text(503, "asset changing, try again", [("retry-after", "1")])
            start_response(f"{status} {_REASONS[status]}", out)
            return [body]
        start_response(f"{p.status} {_REASONS[p.status]}", p.headers)
        return [body]


class _WSGIBody:
    """A streamed WSGI body: `CHUNK_SIZE` reads of one asset version; the server calls
    `close` when done (or when the client went away)."""

    def __init__(self, reader: AssetReader, offset: int, length: int) -> None:
        self._reader: AssetReader | None = reader
        self._offset = offset
        self._left = length

    def __iter__(self) -> Iterator[bytes]:
        while self._left > 0:
            reader = self._reader
            if reader is None:
                return
            n = min(CHUNK_SIZE, self._left)
            chunk = reader.read(self._offset, n)
            if len(chunk) != n:
                raise AssetChanged(f"asset {shown(reader.asset.name)} changed while being sent")
            self._offset += n
            self._left -= n
            yield chunk

    def close(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
