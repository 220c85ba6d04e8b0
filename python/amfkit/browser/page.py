"""The service browser's page: `GET /` and its static files under `/_browser/` (docs/browser.md).

`BrowserPage` answers those paths only: the page itself (`index.html`, with the gateway's
path filled in) and the flat folder `static/` beside this module (`browser.js`,
`browser.css`, `amfkit-codec.js`, ...). Every answer carries a strict
Content-Security-Policy (only the page's own scripts and styles, requests only to its own
origin), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`; static
files are cacheable (`public, max-age=300`), the page is revalidated every time
(`no-cache`), both with an ETag (a 304 when it matches) and gzipped when the client takes
it. A name that is not a file directly in `static/` with a known extension is a 404, so
nothing outside the folder can be reached.

    page = BrowserPage(gateway_path="/gateway")
    status, headers, body = page.respond("GET", "/", {"accept-encoding": "gzip"})
    app = with_browser(gateway)       # an ASGI app: the page at / and /_browser/, the rest to the gateway

The page is off unless enabled: nothing serves it but an app built with `with_browser`, or
a gateway that routes `handles(path)` paths to `respond` (`Gateway(..., browser=True)`).
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import threading
import zlib
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional

__all__ = [
    "BrowserApp",
    "BrowserPage",
    "CONTENT_SECURITY_POLICY",
    "PAGE_CACHE_CONTROL",
    "STATIC_CACHE_CONTROL",
    "STATIC_DIR",
    "STATIC_PREFIX",
    "mount",
    "with_browser",
]

Response = tuple[int, list[tuple[str, str]], bytes]

STATIC_DIR = Path(__file__).resolve().parent / "static"
STATIC_PREFIX = "/_browser/"
PAGE_PATH = "/"
INDEX = "index.html"
DEFAULT_GATEWAY_PATH = "/gateway"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
STATIC_CACHE_CONTROL = "public, max-age=300"
PAGE_CACHE_CONTROL = "no-cache"
GZIP_THRESHOLD = 1024
GZIP_LEVEL = 9

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".map": "application/json; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)+\Z")
# The placeholder index.html holds where the gateway's path goes (a <meta> content).
_GATEWAY_PLACEHOLDER = b"__AMFKIT_GATEWAY_PATH__"

_SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
)


class _File:
    """One static file as served: its bytes, gzipped bytes (when worth it), ETags."""

    __slots__ = ("stamp", "body", "gzipped", "etag", "etag_gz", "content_type")

    def __init__(self, stamp: tuple[int, int], body: bytes, content_type: str) -> None:
        self.stamp = stamp
        self.body = body
        self.content_type = content_type
        digest = hashlib.sha256(body).hexdigest()[:32]
        self.etag = f'"{digest}"'
        self.gzipped: Optional[bytes] = None
        self.etag_gz = f'"{digest}-gz"'
        if len(body) >= GZIP_THRESHOLD:
            c = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
            packed = c.compress(body) + c.flush()
            if len(packed) < len(body):
                self.gzipped = packed


class BrowserPage:
    """The service browser's HTTP answers (`respond`) and an ASGI app for them.

    `gateway_path` is where the page finds the gateway (its discovery document and its
    POSTs); `static_dir` the folder of the page's files (this package's `static/`)."""

    def __init__(self, gateway_path: str = DEFAULT_GATEWAY_PATH, *, static_dir: str | os.PathLike[str] | None = None) -> None:
        if not gateway_path.startswith("/") or gateway_path in (PAGE_PATH,) or gateway_path.startswith(STATIC_PREFIX):
            raise ValueError(f"the gateway path {gateway_path!r} must start with '/' and be neither '/' nor under {STATIC_PREFIX}")
        self.gateway_path = gateway_path
        self.static_dir = Path(static_dir).resolve() if static_dir is not None else STATIC_DIR
        self._cache: dict[str, _File] = {}
        self._lock = threading.Lock()

    def handles(self, path: str, method: str = "GET") -> bool:
        """Whether a request for `path` (without its query string) is the page's: a GET
        or HEAD of `/`, or anything under `/_browser/` (other methods there are 405).
        Other methods on `/` are left to the gateway (one answering on any path takes
        POSTs there)."""
        if path == PAGE_PATH:
            return method.upper() in ("GET", "HEAD")
        return path.startswith(STATIC_PREFIX)

    # --- the HTTP core ---------------------------------------------------------------

    def respond(self, method: str, path: str, headers: Mapping[str, str]) -> Response:
        """Answer one request for the page (`path` may carry a query string; header names
        in lowercase). Returns (status, headers, body)."""
        where = path.partition("?")[0]
        method = method.upper()
        if where == PAGE_PATH:
            name = INDEX
        elif where.startswith(STATIC_PREFIX):
            name = where[len(STATIC_PREFIX):]
        else:
            return _text(404, "not found")
        if method not in ("GET", "HEAD"):
            return _text(405, f"method {method[:32]} not allowed", [("allow", "GET, HEAD")])
        entry = self._file(name)
        if entry is None:
            return _text(404, "not found")
        cache = PAGE_CACHE_CONTROL if name == INDEX else STATIC_CACHE_CONTROL
        gzipped = entry.gzipped is not None and _accepts_gzip(headers.get("accept-encoding"))
        etag = entry.etag_gz if gzipped else entry.etag
        out = [("content-type", entry.content_type), ("cache-control", cache), ("etag", etag), *_SECURITY_HEADERS]
        if entry.gzipped is not None:
            out.append(("vary", "Accept-Encoding"))
        if _matches(headers.get("if-none-match"), (entry.etag, entry.etag_gz)):
            return 304, out, b""
        body = entry.gzipped if gzipped and entry.gzipped is not None else entry.body
        if gzipped:
            out.append(("content-encoding", "gzip"))
        out.append(("content-length", str(len(body))))
        return 200, out, (b"" if method == "HEAD" else body)

    def _file(self, name: str) -> Optional[_File]:
        """The static file `name` as served, from the cache while the file is unchanged;
        None when the name is not one of the folder's files."""
        suffix = os.path.splitext(name)[1].lower()
        if len(name) > 128 or not _NAME.match(name) or suffix not in _TYPES:
            return None
        path = self.static_dir / name
        try:
            if path.resolve().parent != self.static_dir:  # a link to elsewhere
                return None
            st = path.stat()
        except (OSError, ValueError):
            return None
        if not path.is_file():
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        entry = self._cache.get(name)
        if entry is not None and entry.stamp == stamp:
            return entry
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if name == INDEX:
            data = data.replace(_GATEWAY_PLACEHOLDER, html.escape(self.gateway_path, quote=True).encode("utf-8"))
        entry = _File(stamp, data, _TYPES[suffix])
        with self._lock:
            self._cache[name] = entry
        return entry

    # --- ASGI ------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        """The page as an ASGI app (HTTP only; lifespan is acknowledged)."""
        kind = scope["type"]
        if kind == "lifespan":
            from ..remoting.http import serve_lifespan

            await serve_lifespan(receive, send)
            return
        if kind != "http":
            if kind == "websocket":
                await receive()
                await send({"type": "websocket.close", "code": 1003})
            return
        headers: dict[str, str] = {}
        for k, v in scope["headers"]:
            name = k.decode("latin-1").lower()
            value = v.decode("latin-1")
            headers[name] = headers[name] + ", " + value if name in headers else value
        status, out, body = self.respond(scope["method"], scope["path"], headers)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in out],
            }
        )
        await send({"type": "http.response.body", "body": body})


def mount(gateway: Any) -> BrowserPage:
    """The page for `gateway` (its `path`; "/gateway" when it answers on any path)."""
    path = getattr(gateway, "path", None)
    return BrowserPage(path if isinstance(path, str) and path not in ("", PAGE_PATH) else DEFAULT_GATEWAY_PATH)


class BrowserApp:
    """An ASGI app: the page (`/`, `/_browser/...`) and a gateway (everything else,
    lifespan and websockets included)."""

    def __init__(self, gateway: Any, page: BrowserPage) -> None:
        self.gateway = gateway
        self.page = page

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] == "http" and self.page.handles(scope["path"], scope["method"]):
            await self.page(scope, receive, send)
        else:
            await self.gateway(scope, receive, send)


def with_browser(gateway: Any, page: Optional[BrowserPage] = None) -> BrowserApp:
    """An ASGI app serving the page (`mount(gateway)` unless `page` is given) at `/` and
    `/_browser/...`, and `gateway` on every other path."""
    return BrowserApp(gateway, page if page is not None else mount(gateway))


def _text(status: int, message: str, extra: Iterable[tuple[str, str]] = ()) -> Response:
    body = (message + "\n").encode("utf-8")
    headers = [
        ("content-type", "text/plain; charset=utf-8"),
        ("cache-control", "no-store"),
        *_SECURITY_HEADERS,
        *extra,
        ("content-length", str(len(body))),
    ]
    return status, headers, body


def _accepts_gzip(accept_encoding: Optional[str]) -> bool:
    # Imported here: the gateway may import this module, and the remoting package the gateway.
    from ..remoting.http import accepts_gzip

    return accepts_gzip(accept_encoding)


def _matches(if_none_match: Optional[str], etags: tuple[str, ...]) -> bool:
    """Whether an If-None-Match value names one of `etags` (weak comparison) or is `*`."""
    if not if_none_match:
        return False
    for item in if_none_match.split(","):
        tag = item.strip()
        if tag == "*":
            return True
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag in etags:
            return True
    return False
