"""The remoting gateway: AMF remoting, JSON-RPC and XML-RPC on the same services and the
same URL, as an ASGI app, an RSGI app (granian), a WSGI app (`.wsgi`) or a plain async
function (`respond`).

    gateway = Gateway({"EchoService": EchoService()})   # an ASGI app, and an RSGI one
    application = gateway.wsgi                           # the same gateway for WSGI hosts

The gateway is the routing: a request goes by path and content type to its protocol's
module (`amf`, `jsonrpc`, `xmlrpc`), to the asset server or to the browser page, with the
HTTP around them from `http`. Each interface it is served through (ASGI, RSGI, WSGI, and
`amf_fast_route` for `amfkit serve`'s HTTP protocol) lives in `interfaces`, with the
short path each takes for plain AMF calls. docs/gateway.md describes the whole behaviour.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any

from .._text import MAX_SHOWN, clip, error_text, shown
from . import amf, jsonrpc, xmlrpc
from . import http as _http
from . import cors as _cors, crossdomain as _crossdomain
from .auth import Authenticator, authenticate, split_credentials
from .interfaces import asgi as _asgi, rsgi as _rsgi, wsgi as _wsgi
from .interfaces.fastroute import AMFRoute
from .request import Timings
from .services import DEFAULT_MAX_CALLS, INTERNAL_ERROR_MESSAGE, Context, Principal, Services
from .sessions import SessionStore, open_session_store

if TYPE_CHECKING:
    from ..assets import AssetStore
    from ..browser.page import BrowserPage
    from ..assets.fastpath import FileRoute
    from ..assets.http import AssetServer
    from ..messaging import Messaging

__all__ = ["Gateway", "AMF_CONTENT_TYPE", "INTERNAL_ERROR_MESSAGE"]

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
    - `cors`: the other origins whose pages may call the gateway and read its answers
      (`"*"`, or origins such as `"https://game.example"`; None, the default: none),
      on every answer and every interface (`amfkit.remoting.cors`); they may open the
      WebSocket channel too. `cors_credentials`: requests made with credentials too
      (listed origins only); `cors_max_age`: seconds a browser keeps a preflight's
      answer; `cors_headers`: request headers to allow besides `cors.DEFAULT_HEADERS`.
    - `crossdomain`: the domains whose SWFs Flash Player and AIR may let call the
      gateway: `/crossdomain.xml` (`amfkit.remoting.crossdomain`; None: 404).
    - `include` / `exclude`: per service name, the only methods callable, or methods
      not callable (BlazeDS's include-methods and exclude-methods; `Services.register`).
    - `amf0_answers`: how AMF0 (version 0) requests are answered: `"amf0"` (the
      default), or `"avmplus"`: each body's value after the AVM+ switch (0x11) in AMF3,
      which Ruffle's AVM2 reads whole where it loses AMF0 references (docs/gateway.md,
      "Ruffle"); a request may ask for either with `?amf0_answers=...` in its URL.
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
        cors: _cors.CORSOption = None,
        cors_credentials: bool = False,
        cors_max_age: int = _cors.DEFAULT_MAX_AGE,
        cors_headers: Iterable[str] = (),
        crossdomain: _crossdomain.CrossDomainPolicy | str | Iterable[str] | None = None,
        include: Mapping[str, Iterable[str]] | None = None,
        exclude: Mapping[str, Iterable[str]] | None = None,
        amf0_answers: str = amf.AMF0_ANSWERS[0],
    ) -> None:
        if isinstance(services, Services):
            self.services = services
            for name, names in (include or {}).items():
                services.restrict(name, include=names)
            for name, names in (exclude or {}).items():
                services.restrict(name, exclude=names)
        else:
            self.services = Services(services, include=include, exclude=exclude)
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
        # A store opened here from its URL is the gateway's to close; one given is its owner's.
        self._owns_sessions = session_store is None or isinstance(session_store, str)
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
        #: Who may read the answers from other origins (None: nobody; set it to change).
        self.cors: _cors.CORSPolicy | None = _cors.policy_of(cors, credentials=cors_credentials, max_age=cors_max_age, headers=cors_headers)
        #: The `/crossdomain.xml` served (None: 404; set it to change).
        self.crossdomain: _crossdomain.CrossDomainPolicy | None = _crossdomain.policy_of(crossdomain)
        if amf0_answers not in amf.AMF0_ANSWERS:
            raise ValueError(f"amf0_answers must be one of {', '.join(map(repr, amf.AMF0_ANSWERS))}")
        #: How version-0 requests are answered unless one asks otherwise (`amf.AMF0_ANSWERS`).
        self.amf0_answers = amf0_answers
        self._wsgi: _http.WSGIAdapter | None = None

    @classmethod
    def from_capture(cls, *paths: str | os.PathLike[str], match: str = "arguments", **options: Any) -> Gateway:
        """A gateway answering the calls recorded in the capture files `paths` (HAR,
        mitmproxy flows, pcap: `amfkit.capture`), matched by target and arguments
        (`match="target"` or `"order"` for looser matching); other options as for
        `Gateway`. docs/capture.md, "Replay"."""
        from ..capture.replay import replay_gateway

        gateway: Gateway = replay_gateway(paths, match=match, gateway_cls=cls, **options)
        return gateway

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

    # --- the interfaces (amfkit.remoting.interfaces): thin faces of the routing below ---

    #: The ASGI application: `gateway(scope, receive, send)` (interfaces.asgi).
    __call__ = _asgi.app
    #: The RSGI application, granian's interface (interfaces.rsgi).
    __rsgi__ = _rsgi.app

    @property
    def wsgi(self) -> _http.WSGIAdapter:
        """The WSGI application (one event loop per worker thread runs the async core;
        interfaces.wsgi)."""
        if self._wsgi is None:
            self._wsgi = _wsgi.adapter(self)
        return self._wsgi

    def close(self) -> None:
        """Close what the gateway opened itself: the session store it opened from a URL
        (its SQLite connections, its hold on a shared store). The ASGI lifespan's shutdown
        and granian's `__rsgi_del__` call it; a WSGI host calls it at exit. A store given
        as an object is left to its owner. Closing twice is harmless."""
        if self._owns_sessions:
            self._owns_sessions = False
            close = getattr(self.sessions, "close", None)
            if close is not None:
                close()

    def __rsgi_del__(self, loop: Any) -> None:
        """granian's hook when a worker stops serving the RSGI app: `close()`."""
        self.close()

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
        are matched without regard to case. Returns (status, headers, body), with the
        CORS headers of the gateway's `cors` (a preflight answered here)."""
        items = headers.items() if isinstance(headers, Mapping) else headers
        lowered: dict[str, str] = {}
        for k, v in items:
            k = k.lower()
            lowered[k] = lowered[k] + ", " + v if k in lowered else v
        method = method.upper()
        cors = self.cors
        if cors is None:
            return await self._respond(method, path, lowered, bytes(body))
        origin = lowered.get("origin")
        if method == "OPTIONS" and origin is not None and "access-control-request-method" in lowered:
            return cors.preflight(
                origin,
                lowered["access-control-request-method"],
                lowered.get("access-control-request-headers"),
                "access-control-request-private-network" in lowered,
            )
        status, out_headers, out = await self._respond(method, path, lowered, bytes(body))
        return status, [*out_headers, *cors.actual(origin)], out

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
        not served); `scheme` the request's URL scheme, for discovery. CORS is the
        interfaces' (preflights and the headers of every answer: `cors`)."""
        where, _, query = path.partition("?")
        if where == _crossdomain.PATH:
            policy = self.crossdomain
            if policy is not None:
                return policy.respond(method)
            return _http.text_response(404, f"not found: {_crossdomain.PATH} (this gateway serves no cross-domain policy)")
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

    def _on_path(self, path: str) -> bool:
        """Whether `path` (no query string) is the gateway's."""
        return self.path is None or path == self.path or path.rstrip("/") == self.path

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
