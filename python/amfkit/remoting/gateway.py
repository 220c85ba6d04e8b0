"""The remoting gateway: AMF remoting, JSON-RPC and XML-RPC on the same services and the
same URL, as an ASGI app, an RSGI app (granian), a WSGI app (`.wsgi`) or a plain async
function (`respond`).

    gateway = Gateway({"EchoService": EchoService()})   # an ASGI app, and an RSGI one
    application = gateway.wsgi                           # the same gateway for WSGI hosts

The gateway routes a request by path and content type to its protocol's module (`amf`,
`jsonrpc`, `xmlrpc`) and owns the HTTP around them (`http`); plain AMF calls take a short
path on every interface, and `amf_fast_route` (`AMFRoute`) lets `amfkit serve`'s HTTP
protocol answer them with no ASGI task. docs/gateway.md describes the whole behaviour.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any

from .. import rsgi as _rsgi
from .._text import MAX_SHOWN, clip, error_text, shown
from . import amf, jsonrpc, xmlrpc
from . import http as _http
from .auth import Authenticator, authenticate, split_credentials
from .request import Timings
from .services import DEFAULT_MAX_CALLS, INTERNAL_ERROR_MESSAGE, Context, Principal, Services
from .sessions import SessionStore, open_session_store

if TYPE_CHECKING:
    from ..assets import AssetStore
    from ..browser.page import BrowserPage
    from ..assets.fastpath import FileRoute
    from ..assets.http import AssetServer
    from ..messaging import Messaging

__all__ = ["AMFRoute", "Gateway", "AMF_CONTENT_TYPE", "INTERNAL_ERROR_MESSAGE"]

AMF_CONTENT_TYPE = amf.CONTENT_TYPE

logger = logging.getLogger("amfkit.gateway")

# The RPC protocols by request content type: (module, name in messages).
_RPC = {ctype: (module, name) for module, name in ((jsonrpc, "JSON-RPC"), (xmlrpc, "XML-RPC")) for ctype in module.CONTENT_TYPES}
_OFFERED = f"{amf.CONTENT_TYPE}, {jsonrpc.CONTENT_TYPE} or {xmlrpc.CONTENT_TYPE}"


class Gateway:
    """An AMF remoting gateway over `services` (a `Services`, or a mapping of names to
    objects, classes or functions), usable as an ASGI app, an RSGI app (`__rsgi__`), a
    WSGI app (`.wsgi`) or a plain async function (`respond`).

    Options:
    - `debug`: send tracebacks in faults (never in production).
    - `browser`: serve the service browser page at `/` and its files under `/_browser/`
      (docs/browser.md); None (the default): on with `debug`. Off, those paths are the
      gateway's as any other.
    - `server_timing`: answer every POST with a `Server-Timing` header (decoding, each
      call, encoding, gzip, total) and log the same at debug level; None (the default):
      on with `debug` or `browser`. Off, nothing is timed.
    - `authenticator(userid, password)`: sync or async, returns a `Principal` (or None to
      refuse; any other true value is taken as a principal named `userid` with no roles).
    - `gzip_threshold` / `gzip_level`: compress responses of at least this many bytes
      when the client accepts gzip (None turns compression off).
    - `max_body_size`: the largest request body, also after gzip inflation (413 above).
    - `max_depth`, `max_objects`: the decode budget of one request. For AMF, the
      decoder limits for each packet header and body (over them: 400). For JSON-RPC
      and XML-RPC, `max_objects` bounds the values (JSON) or elements (XML) a body may
      hold, counted before parsing (over it: the protocol's parse error, -32700);
      their nesting is bounded by the parsers (JSON: Python's recursion limit; XML-RPC
      values: `xmlrpc.MAX_DEPTH`).
    - `max_calls`: the most calls one request may carry: AMF bodies (over: 400), a
      JSON-RPC batch (over: -32600) or an XML-RPC system.multicall (over: a fault).
    - `body_timeout`: seconds a request body may take to arrive after the headers
      under ASGI (408 and the connection closed past it; None: no deadline).
    - `session_store`: where sessions live: a store, or its URL (`"memory://"`, the
      default: a `MemorySessionStore` of this process; `"sqlite:///PATH"`: a
      `SQLiteSessionStore`, shared by every worker of the host).
    - `path`: the URL path answered (default "/gateway"; None: any path).
    - `session_param`: the query parameter carrying a NetConnection session id.
    - `clear_credentials`: see docs/gateway.md, "NetConnection sessions".
    - `understood_headers`: more packet header names to accept when marked
      must-understand (the services read them from `context.headers`).
    - `default`: called with a result value the encoder cannot write; returns one it can.
    - `messaging`: an `amfkit.messaging.Messaging`: Flex Producers and Consumers on this
      gateway's URL (polling and long-polling; under ASGI also HTTP streaming,
      `POST path?command=open&version=1`, and WebSocket, `ws://host/path`;
      docs/messaging.md), and `context.publish` for services. Without it, subscribe and
      poll are answered with ErrorMessages, a streaming command with 400 and a WebSocket
      handshake with 403.
    - `assets`: an `amfkit.assets.AssetStore`, or a URL for `AssetStore.open`: GET and
      HEAD of `assets_path + "/<name>"` answer its assets (conditional requests,
      ranges, large bodies streamed; `amfkit.assets.http`), other methods there 405.
      Services may return an `Asset`: it is sent as its bytes.
    - `assets_path`: where the assets are served (default "/assets").
    - `assets_cache_control`: the `Cache-Control` of asset answers (default "public,
      max-age=3600"; None: no such header).
    - `assets_fast_path`: under `amfkit serve`, answer GET and HEAD of small assets of a
      file system store from the HTTP protocol itself (`amfkit.assets.fastpath`).
    """

    def __init__(
        self,
        services: Services | Mapping[str, Any],
        *,
        debug: bool = False,
        browser: bool | None = None,
        server_timing: bool | None = None,
        authenticator: Authenticator | None = None,
        gzip_threshold: int | None = _http.DEFAULT_GZIP_THRESHOLD,
        gzip_level: int = _http.DEFAULT_GZIP_LEVEL,
        max_body_size: int = _http.DEFAULT_MAX_BODY_SIZE,
        max_depth: int = 64,
        max_objects: int = 1_000_000,
        max_calls: int = DEFAULT_MAX_CALLS,
        body_timeout: float | None = _http.DEFAULT_BODY_TIMEOUT,
        session_store: SessionStore | str | None = None,
        path: str | None = "/gateway",
        session_param: str = "amfkit_session",
        clear_credentials: bool = False,
        understood_headers: Iterable[str] = (),
        default: Callable[[Any], Any] | None = None,
        messaging: Messaging | None = None,
        assets: AssetStore | str | None = None,
        assets_path: str = "/assets",
        assets_cache_control: str | None = "public, max-age=3600",
        assets_fast_path: bool = True,
    ) -> None:
        self.services = services if isinstance(services, Services) else Services(services)
        self.debug = bool(debug)
        show_page = self.debug if browser is None else bool(browser)
        #: Whether POST answers carry Server-Timing (decided here only).
        self.server_timing = (self.debug or show_page) if server_timing is None else bool(server_timing)
        self.authenticator = authenticator
        if gzip_threshold is not None and gzip_threshold < 0:
            raise ValueError("gzip_threshold must be 0 or more (None turns gzip off)")
        if not 0 <= gzip_level <= 9:
            raise ValueError("gzip_level must be between 0 and 9")
        self.gzip_threshold = gzip_threshold
        self.gzip_level = gzip_level
        if max_body_size < 1:
            raise ValueError("max_body_size must be positive")
        self.max_body_size = int(max_body_size)
        self.max_depth = int(max_depth)
        self.max_objects = int(max_objects)
        if max_calls < 1:
            raise ValueError("max_calls must be positive")
        self.max_calls = int(max_calls)
        self.body_timer = _http.BodyTimer(body_timeout)
        self.sessions: SessionStore = open_session_store(session_store)
        if path is not None and not path.startswith("/"):
            raise ValueError("path must start with '/'")
        self.path = (path.rstrip("/") or "/") if path is not None else None
        #: The service browser page (None: not served).
        self.browser: BrowserPage | None = None
        if show_page:
            from ..browser.page import mount

            self.browser = mount(self)
        self.session_param = session_param
        self.clear_credentials = bool(clear_credentials)
        self.understood_headers = frozenset(understood_headers) | {"Credentials"}
        self.default = default
        if messaging is not None and not callable(getattr(messaging, "answer", None)):
            raise TypeError("messaging must be an amfkit.messaging.Messaging")
        self.messaging = messaging
        self.assets: AssetServer | None = None
        #: What `amfkit serve`'s HTTP protocol answers small file assets with (None: nothing).
        self.asset_fast_route: FileRoute | None = None
        #: What `amfkit serve`'s HTTP protocol answers plain AMF POSTs with (the short path).
        self.amf_fast_route = AMFRoute(self)
        if assets is not None:
            self._mount_assets(assets, assets_path, assets_cache_control, assets_fast_path)
        self._wsgi: _http.WSGIAdapter | None = None

    def _mount_assets(self, store: AssetStore | str, path: str, cache_control: str | None, fast_path: bool) -> None:
        from ..assets.filesystem import FileStore
        from ..assets.http import AssetServer

        server = AssetServer(store, path=path, cache_control=cache_control)
        if self.path is not None and (self.path == server.path or server.under(self.path)):
            raise ValueError(f"assets_path {shown(server.path)} and the gateway's path {shown(self.path)} overlap")
        self.assets = server
        if fast_path and isinstance(server.store, FileStore):
            from ..assets.fastpath import FileRoute

            self.asset_fast_route = FileRoute(server.store, server.path, cache_control)

    # --- the adapters ----------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
        """The ASGI application.

        An AMF POST to the gateway's path with no query string and no Content-Encoding,
        whose body arrives in one message, takes a short path here (the request path is
        the HTTP floor plus what the gateway must do); everything else goes through the
        general core, which answers the same way.
        """
        kind = scope["type"]
        if kind == "http" and scope["method"] == "POST" and not scope.get("query_string"):
            accept = self._plain_post(scope["path"], scope["headers"])
            if accept is not None:
                # The body is read eagerly: when the server has it already (a small
                # request), no deadline is needed; else the rest of the read is awaited
                # under the body deadline.
                timer = self.body_timer
                task = None
                reading = receive().__await__()
                try:
                    try:
                        pending = next(reading)
                    except StopIteration as done:
                        message = done.value
                    else:
                        task = timer.start()
                        message = await _http.within_deadline(timer, task, _Resumed(reading, pending))
                except _http.HTTPError as e:
                    await _http.send_response(send, _http.refused(e))
                    return
                body = message.get("body", b"")
                if message["type"] == "http.request" and not message.get("more_body") and len(body) <= self.max_body_size:
                    timer.stop(task)  # else the general path goes on with the same deadline
                    try:
                        out = await amf.handle(body, self, receive=receive)
                    except Exception as e:
                        await _http.send_response(send, _amf_failure(e))
                        return
                    out, coding = _http.compress(out, accept, self.gzip_threshold, self.gzip_level)
                    headers = [_CONTENT_TYPE_AMF, *coding.raw, (b"content-length", str(len(out)).encode())]
                    await send({"type": "http.response.start", "status": 200, "headers": headers})
                    await send({"type": "http.response.body", "body": out})
                    return
                receive = _replay(message, receive)
        elif kind == "http":
            method = scope["method"]
            if method == "POST":
                qs = scope.get("query_string")
                if qs and b"command=" in qs and self._on_path(scope["path"]):
                    from ..messaging import streaming

                    if streaming.command_of(qs.decode("latin-1")) is not None:
                        await streaming.serve(self, scope, receive, send)
                        return
            elif (method == "GET" or method == "HEAD") and self.assets is not None and self.assets.under(scope["path"]):
                await self.assets.asgi(scope, receive, send)
                return
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
            return
        scheme = scope.get("scheme") or "http"

        def core(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Awaitable[_http.Response]:
            return self._respond(method, path, headers, body, receive=receive, scheme=scheme)

        await _http.asgi(core, self.max_body_size, scope, receive, send, self.body_timer)

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        """The RSGI application (granian's own interface: `granian --interface rsgi`,
        `amfkit serve --server granian`).

        The short path as under ASGI (a plain AMF POST with its `Content-Length`, the body
        read whole under the body deadline); everything else is the ASGI app's, run
        through `amfkit.rsgi` (the same answers, WebSocket and streaming included)."""
        if scope.proto == "http" and scope.method == "POST" and not scope.query_string:
            headers = scope.headers
            accept = self._plain_rsgi(scope.path, headers)
            if accept is not None:
                timer = self.body_timer
                task = timer.start()
                try:
                    body = await _http.within_deadline(timer, task, protocol())
                except _http.HTTPError as e:
                    _rsgi.respond(protocol, _http.refused(e))
                    return
                except _rsgi.Closed:
                    return  # the client went away
                finally:
                    timer.stop(task)
                _rsgi.respond(protocol, await self._amf_answer(amf.handle(body, self, receive=_rsgi.disconnected(protocol)), accept))
                return
        await _rsgi.serve(self, scope, protocol)

    def _plain_rsgi(self, path: str, headers: Any) -> str | None:
        """`_plain_post` for an RSGI request (its headers a mapping of lowercase names),
        which must declare its length."""
        length = headers.get("content-length")
        if length is None or not length.isdigit() or int(length) > self.max_body_size:
            return None
        if "content-encoding" in headers:
            return None
        if self._plain_type(path, headers.get("content-type")) is None:
            return None
        accept: str = headers.get("accept-encoding") or ""
        return accept

    async def _websocket(self, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
        """A WebSocket on the gateway's path is the messaging channel; without messaging,
        or on another path, the handshake is refused (HTTP 403)."""
        if self.messaging is not None and self._on_path(scope["path"]):
            from ..messaging import websocket

            await websocket.serve(self, scope, receive, send)
            return
        if (await receive()).get("type") == "websocket.connect":
            await send({"type": "websocket.close", "code": 1008})

    def _on_path(self, path: str) -> bool:
        return self.path is None or path == self.path or path.rstrip("/") == self.path

    def _plain_post(self, path: str, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """For a POST to `path` (no query string) with `headers` (lowercase names, as ASGI
        gives them) that can take the short path: its `Accept-Encoding` ("" when absent);
        None when it cannot (another path or protocol, a compressed or too large body, or
        Server-Timing on: the general core times the phases)."""
        if self.server_timing:
            return None
        if self.path is not None:
            if path != self.path and path.rstrip("/") != self.path:
                return None
        elif self.assets is not None and self.assets.under(path):
            return None  # any path but the assets' (405 from the core)
        accept = ""
        for k, v in headers:
            if k == b"content-type":
                if _http.media_type(v.decode("latin-1")) not in _AMF_TYPES:
                    return None
            elif k == b"accept-encoding":
                accept = v.decode("latin-1")
            elif k == b"content-encoding":
                return None
            elif k == b"content-length":
                if not v.isdigit() or int(v) > self.max_body_size:
                    return None
        return accept

    def _plain_type(self, path: str, content_type: str | None) -> str | None:
        """`_plain_post` for an adapter that checks the other headers itself: the
        Content-Type alone (None when absent)."""
        return self._plain_post(path, [(b"content-type", content_type.encode("latin-1"))] if content_type else ())

    def _amf_ok(self, out: bytes, accept: str) -> _http.Response:
        """The 200 response carrying a response packet, gzipped as `accept` allows."""
        out, coding = _http.compress(out, accept, self.gzip_threshold, self.gzip_level)
        return 200, [_CONTENT_TYPE_TEXT, *coding.text, ("content-length", str(len(out)))], out

    async def _amf_answer(self, pending: Awaitable[bytes], accept: str) -> _http.Response:
        """The response to a plain AMF request whose response packet `pending` gives."""
        try:
            out = await pending
        except Exception as e:
            return _amf_failure(e)
        return self._amf_ok(out, accept)

    def _answer_now(self, body: bytes) -> bytes | Awaitable[bytes] | None:
        """The short path's answer to a plain AMF request `body` (no query string), made
        without an ASGI task: the response packet, when every call ran to its end now;
        an awaitable of it, when a result must be awaited (its rest runs in the caller's
        task); None, with nothing called, when the packet is not one of plain calls to
        synchronous methods (headers, Flex messages, an async method...: the general
        route answers it). A malformed packet raises `HTTPError` (400) before any call.

        The answer is `amf.handle`'s, made by the same functions: only the first steps
        run outside a task (synchronous methods: `asyncio.current_task()` is None there,
        and they run in a context of their own, as in a task)."""
        if not _may_be_plain(body):
            return None
        version, headers, bodies = amf._decode(body, self)
        if headers:
            return None
        methods = amf._plain_calls(bodies, self)
        if methods is None:
            return None
        for method in methods:
            if method.is_async:
                return None
        steps = amf._answer_plain(version, bodies, methods, self).__await__()
        context = contextvars.copy_context()
        try:
            pending = context.run(next, steps)
        except StopIteration as done:
            out: bytes = done.value
            return out
        return _Resumed(steps, pending, context)

    @property
    def wsgi(self) -> _http.WSGIAdapter:
        """The WSGI application (one event loop per worker thread runs the async core)."""
        if self._wsgi is None:
            mount = (self.assets.prefix, self.assets.wsgi) if self.assets is not None else None
            self._wsgi = _http.WSGIAdapter(self._respond, self.max_body_size, mount=mount, short=self._wsgi_short)
        return self._wsgi

    def _wsgi_short(self, path: str, environ: Mapping[str, Any], body: bytes) -> _http.Response | Awaitable[_http.Response] | None:
        """The short path under WSGI: a plain AMF POST answered with no event loop (an
        awaitable when a result must be awaited); None for the core."""
        if environ.get("QUERY_STRING") or environ.get("HTTP_CONTENT_ENCODING"):
            return None
        if self._plain_type(path, environ.get("CONTENT_TYPE")) is None:
            return None
        try:
            out = self._answer_now(body)
        except _http.HTTPError as e:
            return e.response()
        if out is None:
            return None
        accept = environ.get("HTTP_ACCEPT_ENCODING") or ""
        if not isinstance(out, bytes):
            return self._amf_answer(out, accept)
        return self._amf_ok(out, accept)

    # --- the HTTP core ---------------------------------------------------------------

    async def respond(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]],
        body: bytes,
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Answer one HTTP request. `path` may carry a query string (and is
        percent-encoded, as in a request line: it matters for asset names); header names
        are matched without regard to case. Returns (status, headers, body)."""
        items = headers.items() if isinstance(headers, Mapping) else headers
        lowered: dict[str, str] = {}
        for k, v in items:
            k = k.lower()
            lowered[k] = lowered[k] + ", " + v if k in lowered else v
        return await self._respond(method.upper(), path, lowered, bytes(body))

    async def _respond(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes,
        *,
        receive: Callable[[], Awaitable[Any]] | None = None,
        scheme: str | None = None,
    ) -> _http.Response:
        """The HTTP core. `receive` is the ASGI request's (None under WSGI and `respond`:
        a parked poll then cannot see its client go away, and the channels that push are
        not served); `scheme` the request's URL scheme, for discovery."""
        where, _, query = path.partition("?")
        page = self.browser
        if page is not None and page.handles(where, method):
            return page.respond(method, path, headers)
        assets = self.assets
        if assets is not None and assets.under(where):  # answered whole, never compressed
            return await assets.respond(method, where, headers)
        if not self._on_path(where):
            return _http.text_response(404, f"not found: {clip(where, MAX_SHOWN)} (the gateway answers at {self.path})")
        try:
            if method == "POST":
                if "command=" in query:
                    from ..messaging.streaming import command_of

                    if command_of(query) is not None:  # the ASGI app answers these itself
                        raise _http.HTTPError(400, "HTTP streaming needs the gateway's ASGI app (a response held open); use polling under WSGI")
                if self.server_timing:
                    return await self._timed_post(query, headers, body, receive)
                status, ctype, out = await self._post(query, headers, body, receive)
            elif method == "GET":
                status, ctype, out = 200, "application/json", self._discovery(where, headers.get("host"), scheme, push=receive is not None)
            else:
                return _http.text_response(405, f"method {clip(method, MAX_SHOWN)} not allowed", [("allow", "GET, POST")])
        except _http.HTTPError as e:
            return e.response()
        out, coding = _http.compress(out, headers.get("accept-encoding"), self.gzip_threshold, self.gzip_level)
        return status, [("content-type", ctype), *coding.text, ("content-length", str(len(out)))], out

    async def _timed_post(self, query: str, headers: Mapping[str, str], body: bytes, receive: Callable[[], Awaitable[Any]] | None) -> _http.Response:
        """`_post` and the compression with each phase timed: the answer carries them as
        `Server-Timing` (a refusal too), and they are logged at debug level."""
        timings = Timings()
        try:
            status, ctype, out = await self._post(query, headers, body, receive, timings)
        except _http.HTTPError as e:
            status, out_headers, out = e.response()
            return status, [*out_headers, ("server-timing", self._timing_header(timings, status))], out
        timings.encoded_around_calls()  # JSON-RPC, XML-RPC (AMF times its encoding itself)
        started = perf_counter()
        sent, coding = _http.compress(out, headers.get("accept-encoding"), self.gzip_threshold, self.gzip_level)
        if sent is not out:
            timings.gzip = perf_counter() - started
        timing = self._timing_header(timings, status)
        return status, [("content-type", ctype), *coding.text, ("content-length", str(len(sent))), ("server-timing", timing)], sent

    @staticmethod
    def _timing_header(timings: Timings, status: int) -> str:
        """The Server-Timing value of `timings`, logged at debug level."""
        metrics = timings.metrics()
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("timings of a POST (%d): %s", status, Timings.log_line(metrics))
        return Timings.header(metrics)

    async def _post(
        self,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        receive: Callable[[], Awaitable[Any]] | None = None,
        timings: Timings | None = None,
    ) -> tuple[int, str, bytes]:
        """A POST's body to its protocol: AMF for its content types or none, else JSON-RPC
        or XML-RPC by theirs; 415 for any other. `timings`: see `Timings`."""
        if len(body) > self.max_body_size:
            raise _http.too_large(self.max_body_size)
        encoding = headers.get("content-encoding")
        if encoding:
            body = _http.inflate(body, encoding, self.max_body_size)
        kind = _http.media_type(headers.get("content-type"))
        if not kind or kind in _AMF_TYPES:
            return 200, amf.CONTENT_TYPE, await amf.handle(body, self, query=query, receive=receive, timings=timings)
        route = _RPC.get(kind)
        if route is None:
            raise _http.HTTPError(415, f"unsupported content type {shown(kind)} ({_OFFERED})")
        module, name = route
        return await self._call_rpc(module, name, body, headers, timings)

    def _discovery(self, where: str, host: str | None, scheme: str | None, *, push: bool) -> bytes:
        """The discovery document: the services, and with messaging its channels (their
        URLs: absolute when the request named its host), destinations and poll_wait. The
        channels that push are listed when the gateway runs as an ASGI app (`push`)."""
        doc = self.services.describe()
        if self.messaging is not None:
            path = self.path if self.path is not None else where
            secure = scheme in ("https", "wss")
            if host and _HOST.fullmatch(host):
                url, ws_url = f"{'https' if secure else 'http'}://{host}{path}", f"{'wss' if secure else 'ws'}://{host}{path}"
            else:
                url = ws_url = path
            doc["messaging"] = self.messaging.describe(url, ws_url if push else None)
        if self.assets is not None:
            doc["assets"] = {"path": self.assets.path}
        return json.dumps(doc, default=str, ensure_ascii=False).encode("utf-8")

    async def _call_rpc(
        self, module: Any, name: str, body: bytes, headers: Mapping[str, str], timings: Timings | None = None
    ) -> tuple[int, str, bytes]:
        """A JSON-RPC or XML-RPC body to `module`'s `handle`, after its budget check and
        the HTTP Basic credentials."""
        ctype = module.CONTENT_TYPE
        refusal = module.budget_error(body, self.max_objects)  # before anything is parsed
        if refusal is not None:
            return 200, ctype, refusal
        try:
            principal = await self._basic_auth(headers.get("authorization"))
        except _http.HTTPError:
            raise
        except Exception as e:  # the authenticator failed: the call is not made
            logger.error("the authenticator failed: %s", error_text(e), exc_info=e)
            raise _http.HTTPError(401, "authentication failed", [("www-authenticate", 'Basic realm="amfkit"')]) from None
        context = Context(principal=principal, headers=dict(headers), messaging=self.messaging)  # `handle` sets its protocol
        if timings is not None:
            timings.restart()  # decoding starts: the budget check and the credentials are in the total only
        try:
            out = await module.handle(body, self.services, context, debug=self.debug, max_calls=self.max_calls, timings=timings)
        except Exception:
            logger.exception("%s handler failed", name)
            raise _http.HTTPError(500, f"{name} handler failed") from None
        if not out:
            return 204, ctype, b""
        return 200, ctype, out

    async def _basic_auth(self, authorization: str | None) -> Principal | None:
        """HTTP Basic credentials for JSON-RPC and XML-RPC calls (401 when refused)."""
        if not authorization or self.authenticator is None:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "basic":
            return None
        refused = _http.HTTPError(401, "authentication failed", [("www-authenticate", 'Basic realm="amfkit"')])
        try:
            user, password = split_credentials(token)
        except ValueError:
            raise refused from None
        principal = await authenticate(self.authenticator, user, password)
        if principal is None:
            raise refused
        return principal

    async def handle_amf(self, data: bytes, *, query: str = "") -> bytes:
        """Answer one AMF remoting packet (the request body) with the response packet.
        `query` is the request URL's query string (it may carry a session id). A packet
        that does not decode raises `amfkit.remoting.http.HTTPError` (400)."""
        return await amf.handle(data, self, query=query)


_AMF_TYPES = amf.CONTENT_TYPES
#: A Host header value that may go into a URL (a name or address, and a port).
_HOST = re.compile(r"[A-Za-z0-9.\-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?")
_CONTENT_TYPE_AMF = (b"content-type", amf.CONTENT_TYPE.encode())
_CONTENT_TYPE_TEXT = ("content-type", amf.CONTENT_TYPE)

#: A first body's target as Flex messages write it: length 4, "null".
_FLEX_TARGET = b"\x00\x04null"


def _may_be_plain(body: bytes) -> bool:
    """Whether a packet may hold plain calls, read off its first bytes without decoding
    it: no headers (version, header count 0), and a first body whose target is not
    Flex's "null" (body count, then the target). The rest is not decoded twice (here,
    then by the app) for what the short path would not take anyway; a packet too short
    to tell is decoded, so that a malformed one is refused here."""
    if len(body) < 12:
        return True
    return body[2:4] == b"\x00\x00" and body[6:12] != _FLEX_TARGET


def _amf_failure(error: Exception) -> _http.Response:
    """The answer when answering a plain AMF request raised `error` (called in its
    `except` block): 400 for a malformed packet, as the core says; anything else is a
    bug (every body's failure is a fault already), logged and answered 500 as the
    general core answers one."""
    if isinstance(error, _http.HTTPError):
        return error.response()
    logger.exception("unexpected error answering an AMF request")
    return _http.text_response(500, "internal server error")


def _replay(message: dict[str, Any], receive: Callable[[], Any]) -> Callable[[], Any]:
    """An ASGI `receive` that gives `message` (already received) first."""
    pending = [message]

    async def again() -> Any:
        if pending:
            return pending.pop()
        return await receive()

    return again


class _Resumed:
    """The rest of an awaitable that was run by hand until it first waited: `steps` is its
    iterator (`__await__()`), `pending` what it yielded then (an asyncio future, or None
    for a bare yield). Awaited in a task, it hands `pending` to the task and goes on as
    `yield from` would, each step in `context` (None: the task's own)."""

    __slots__ = ("_steps", "_pending", "_context")

    def __init__(self, steps: Any, pending: Any, context: contextvars.Context | None = None) -> None:
        self._steps = steps
        self._pending = pending
        self._context = context

    def __await__(self) -> Generator[Any, None, Any]:
        steps, pending = self._steps, self._pending
        run: Callable[..., Any] = self._context.run if self._context is not None else _call
        while True:
            # A task resumes with None (the next step), or throws in (a cancellation:
            # the awaitable sees it where it waits).
            try:
                yield pending
            except BaseException as e:
                throw = getattr(steps, "throw", None)
                if throw is None:
                    raise
                step: Callable[..., Any] = throw
                arg: Any = e
            else:
                step, arg = next, steps
            try:
                pending = run(step, arg)
            except StopIteration as done:
                return done.value


def _call(step: Callable[[Any], Any], arg: Any) -> Any:
    return step(arg)


class AMFRoute:
    """The short path for an HTTP protocol that parses requests itself (`amfkit serve`'s,
    amfkit.serving): a plain AMF POST answered in the protocol's callbacks, with no ASGI
    task, by the same functions and with the same answer as the gateway's ASGI app."""

    __slots__ = ("gateway",)

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def accepts(self, url: bytes, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """For a POST of `url` (the request target) with `headers` (lowercase names): its
        `Accept-Encoding` ("" when absent) when this route may answer it, else None."""
        if b"?" in url or b"%" in url or b"#" in url:
            return None
        return self.gateway._plain_post(url.decode("latin-1"), headers)

    def answer(self, body: bytes, accept: str) -> tuple[bytes, bytes] | Awaitable[_http.Response] | None:
        """The answer to a POST `accepts` took, whose whole `body` came: (the response
        head without the server's own headers and the blank line, body); an awaitable
        of the response (status, headers, body), to be sent from a task, when a
        result must be awaited; None, with nothing called, to let the ASGI app answer."""
        gateway = self.gateway
        if len(body) > gateway.max_body_size:
            return None  # a chunked body past the limit: the ASGI app refuses it (413)
        try:
            out = gateway._answer_now(body)
        except Exception as e:  # a malformed packet: 400, the connection kept
            status, headers, text = _amf_failure(e)
            return _head(status, headers), text
        if out is None:
            return None
        if not isinstance(out, bytes):
            return gateway._amf_answer(out, accept)
        out, coding = _http.compress(out, accept, gateway.gzip_threshold, gateway.gzip_level)
        head = _HEADS.get(coding)
        if head is None:
            head = _HEADS[coding] = _head(200, [_CONTENT_TYPE_TEXT, *coding.text])
        return head + b"content-length: %d\r\n" % len(out), out


#: Response heads of the short path by compression outcome (`_http.Coding`).
_HEADS: dict[Any, bytes] = {}


def _head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    """An HTTP/1.1 status line and header lines (without the blank line)."""
    lines = [f"HTTP/1.1 {status} {_http._reason(status)}\r\n"]
    lines += [f"{k}: {v}\r\n" for k, v in headers]
    return "".join(lines).encode("latin-1")
