"""The remoting gateway: AMF remoting (AS2/AS3 NetConnection, Flex and Royale
RemoteObject), JSON-RPC and XML-RPC on the same services and the same URL.

    from amfkit.remoting import Gateway

    class EchoService:
        def echo(self, value):
            return value

    gateway = Gateway({"EchoService": EchoService()})   # an ASGI app
    application = gateway.wsgi                           # the same gateway for WSGI hosts

The core is a plain function, `await gateway.respond(method, path, headers, body) ->
(status, headers, body)`; the ASGI app and the WSGI adapter (`amfkit.remoting.http`) only
translate to and from it, so a request never goes through a framework.

HTTP
- `POST path`: the body's `Content-Type` chooses the protocol: `application/x-amf` (or
  none) AMF remoting, `application/json` JSON-RPC 2.0, `text/xml` or `application/xml`
  XML-RPC; anything else is 415. `GET path` answers the discovery document (JSON). Other
  paths are 404, other methods 405 (`path=None` answers on any path).
- A malformed AMF packet is a 400 with a one-line text body; a body over `max_body_size`
  (before or after gzip inflation) is a 413. No response carries a traceback unless
  `debug=True`.
- gzip: see `amfkit.remoting.http` for the measured threshold and level.

AMF remoting
- The answer has the request's packet version (0, 1 or 3; values are AMF3 only in
  version 3, where they are written after the AVM+ switch, which is what Flash Player 9+,
  Flex and Royale read). Every body is answered on its own, in order: one failing call
  does not fail the others.
- NetConnection bodies: target `Service.method`, arguments in an array (any other value
  is the one argument); the answer goes to `<response>/onResult`, a fault to
  `<response>/onStatus` as a status object `{level: "error", code, description, details,
  type, line}` (`details` and `type` stay empty unless debug or the `Fault` gave details).
- Packet headers: `Credentials` `{userid, password}` goes to the authenticator; a refused
  one faults every body with `Client.Authentication`. A header marked must-understand
  that the gateway does not understand (see `understood_headers`) faults every body with
  `Client.UnknownHeader`.
- NetConnection sessions: when a call stores something in `context.session` (or, with
  `clear_credentials=True`, when credentials are accepted) the gateway creates a session
  and answers an `AppendToGatewayUrl` header (`?amfkit_session=<id>`), which Flash's
  NetConnection appends to the URL of its next calls. With `clear_credentials=True` it
  also answers `RequestPersistentHeader` `{name: "Credentials", mustUnderstand: false,
  data: null}` so the client stops sending the password and the session carries the
  login; use it with a session store every worker shares.
- Flex bodies: a message alone, or in an array of one (Flex sends an AMF0 strict array
  holding an AMF3 message, Royale an AVM+ switch and an AMF3 array). `RemotingMessage`
  calls `destination.operation` with the body as the arguments and is answered by an
  `AcknowledgeMessage` (correlationId, clientId, destination, messageId, timestamp,
  headers `{"DSId": <client id>}`); a fault by an `ErrorMessage` with every field.
  `CommandMessage`: ping, trigger-connect and disconnect are acknowledged; login (body:
  base64 `user:password`) goes to the authenticator and keeps the principal in the
  client's session; logout forgets the session; other operations are faults. A client
  sending `DSId` "nil" (or none) is given a new id. Successes are answered in the small
  form (`DSK`) when the request came in a small form or announced `DSMessagingVersion`;
  errors never are.
- Flex sessions are keyed by the client id (`DSId`): a well-formed id the store does not
  know starts a new session under that id when something is stored in it.

Faults: a `Fault` raised by a service keeps its code and message (and `details`); any
other exception becomes `Server.Processing` with the exception's message, logged with its
traceback on the "amfkit.gateway" logger. The traceback is sent to the client only with
`debug=True`. Anything that fails between the request and the service (a Flex message
missing fields or holding odd types, a session store, the authenticator) is a fault for
its body, never a 500. Texts built from input (faults, 4xx bodies, log lines) quote at
most 64 characters of any one input value and are at most 1,024 characters long
(`amfkit._text`; docs/limits.md, "Texts built from input").
"""

from __future__ import annotations

import base64
import binascii
import importlib
import inspect
import json
import logging
import re
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from .. import _amfkit
from .._text import MAX_SHOWN, clip, error_text, shown
from . import http as _http
from . import packet
from .messages import (
    AbstractMessage,
    AcknowledgeMessage,
    AcknowledgeMessageExt,
    CommandMessage,
    ErrorMessage,
    Operation,
    RemotingMessage,
)
from .packet import Body, Envelope, Header
from .services import DEFAULT_MAX_CALLS, INTERNAL_ERROR_MESSAGE, Context, Fault, Principal, Services, awaitable
from .sessions import PRINCIPAL_KEY, MemorySessionStore, Session, SessionStore, new_session_id

__all__ = ["Gateway", "AMF_CONTENT_TYPE", "INTERNAL_ERROR_MESSAGE"]

AMF_CONTENT_TYPE = "application/x-amf"
_JSON_TYPES = ("application/json", "application/json-rpc", "application/jsonrequest")
_XML_TYPES = ("text/xml", "application/xml")

logger = logging.getLogger("amfkit.gateway")

# A client or session id we accept from a client: what new_session_id() makes, and the
# ids other Flex servers hand out (letters, digits, '-', '_'), at most 64 characters.
_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")

Authenticator = Callable[[str, str], Any]


class Gateway:
    """An AMF remoting gateway over `services` (a `Services`, or a mapping of names to
    objects, classes or functions), usable as an ASGI app, a WSGI app (`.wsgi`) or a plain
    async function (`respond`).

    Options:
    - `debug`: send tracebacks in faults (never in production).
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
    - `session_store`: where sessions live (default: a `MemorySessionStore`).
    - `path`: the URL path answered (default "/gateway"; None: any path).
    - `session_param`: the query parameter carrying a NetConnection session id.
    - `clear_credentials`: see the module docstring.
    - `understood_headers`: more packet header names to accept when marked
      must-understand (the services read them from `context.headers`).
    - `default`: called with a result value the encoder cannot write; returns one it can.
    """

    def __init__(
        self,
        services: Services | Mapping[str, Any],
        *,
        debug: bool = False,
        authenticator: Authenticator | None = None,
        gzip_threshold: int | None = _http.DEFAULT_GZIP_THRESHOLD,
        gzip_level: int = _http.DEFAULT_GZIP_LEVEL,
        max_body_size: int = _http.DEFAULT_MAX_BODY_SIZE,
        max_depth: int = 64,
        max_objects: int = 1_000_000,
        max_calls: int = DEFAULT_MAX_CALLS,
        body_timeout: float | None = _http.DEFAULT_BODY_TIMEOUT,
        session_store: SessionStore | None = None,
        path: str | None = "/gateway",
        session_param: str = "amfkit_session",
        clear_credentials: bool = False,
        understood_headers: Iterable[str] = (),
        default: Callable[[Any], Any] | None = None,
    ) -> None:
        self.services = services if isinstance(services, Services) else Services(services)
        self.debug = bool(debug)
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
        self.sessions: SessionStore = session_store if session_store is not None else MemorySessionStore()
        if path is not None and not path.startswith("/"):
            raise ValueError("path must start with '/'")
        self.path = (path.rstrip("/") or "/") if path is not None else None
        self.session_param = session_param
        self.clear_credentials = bool(clear_credentials)
        self.understood_headers = frozenset(understood_headers) | {"Credentials"}
        self.default = default
        self._rpc: dict[str, Any] = {}
        self._wsgi: _http.WSGIAdapter | None = None

    # --- the adapters ----------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
        """The ASGI application.

        An AMF POST to the gateway's path with no query string and no Content-Encoding,
        whose body arrives in one message, takes a short path here (the request path is
        the HTTP floor plus what the gateway must do); everything else, and any packet
        that is not plain, goes through the general core, which answers the same way.
        """
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("query_string"):
            gzip_ok = self._plain_post(scope)
            if gzip_ok is not None:
                timer = self.body_timer
                task = timer.start()
                try:
                    message = await _http.within_deadline(timer, task, receive())
                except _http.HTTPError as e:
                    await _http.send_response(send, _http.refused(e))
                    return
                if message["type"] == "http.request" and not message.get("more_body"):
                    timer.stop(task)  # else the general path goes on with the same deadline
                    try:
                        out = await self._fast_amf(message.get("body", b""))
                    except Exception:
                        # Every body's failure is a fault already: this is a bug, answered
                        # as the general core answers one (services were called, so the
                        # packet is not run again there).
                        logger.exception("unexpected error answering an AMF request")
                        await _http.send_response(send, _http.text_response(500, "internal server error"))
                        return
                    if out is not None:
                        headers = [_CONTENT_TYPE_AMF]
                        if self.gzip_threshold is not None:
                            headers.append(_VARY)
                            if gzip_ok and len(out) >= self.gzip_threshold:
                                out = _http.gzip(out, self.gzip_level)
                                headers.append(_CONTENT_ENCODING_GZIP)
                        headers.append((b"content-length", str(len(out)).encode()))
                        await send({"type": "http.response.start", "status": 200, "headers": headers})
                        await send({"type": "http.response.body", "body": out})
                        return
                receive = _replay(message, receive)
        await _http.asgi(self._respond, self.max_body_size, scope, receive, send, self.body_timer)

    def _plain_post(self, scope: dict[str, Any]) -> bool | None:
        """For a POST that can take the short path: whether the client accepts gzip;
        None when it cannot (another path or protocol, a compressed or too large body)."""
        path = scope["path"]
        if self.path is not None and path != self.path and path.rstrip("/") != self.path:
            return None
        gzip_ok = False
        for k, v in scope["headers"]:
            if k == b"content-type":
                if _http.media_type(v.decode("latin-1")) != AMF_CONTENT_TYPE:
                    return None
            elif k == b"accept-encoding":
                gzip_ok = _http.accepts_gzip(v.decode("latin-1"))
            elif k == b"content-encoding":
                return None
            elif k == b"content-length":
                if not v.isdigit() or int(v) > self.max_body_size:
                    return None
        return gzip_ok

    async def _fast_amf(self, data: bytes) -> bytes | None:
        """Answer a packet on the short path; None for an empty or malformed one (the
        general core then gives the precise 400)."""
        if len(data) > self.max_body_size:
            return None
        try:
            version, headers, bodies = self._decode(data)
        except Exception:  # the general core answers it: a 400, or a logged 500
            return None
        return await self._answer_packet(version, headers, bodies, "")

    @property
    def wsgi(self) -> _http.WSGIAdapter:
        """The WSGI application (one event loop per worker thread runs the async core)."""
        if self._wsgi is None:
            self._wsgi = _http.WSGIAdapter(self._respond, self.max_body_size)
        return self._wsgi

    # --- the HTTP core ---------------------------------------------------------------

    async def respond(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]],
        body: bytes,
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Answer one HTTP request. `path` may carry a query string; header names are
        matched without regard to case. Returns (status, headers, body)."""
        items = headers.items() if isinstance(headers, Mapping) else headers
        lowered: dict[str, str] = {}
        for k, v in items:
            k = k.lower()
            lowered[k] = lowered[k] + ", " + v if k in lowered else v
        return await self._respond(method.upper(), path, lowered, bytes(body))

    async def _respond(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> _http.Response:
        where, _, query = path.partition("?")
        if self.path is not None and where != self.path and where.rstrip("/") != self.path:
            return _http.text_response(404, f"not found: {clip(where, MAX_SHOWN)} (the gateway answers at {self.path})")
        try:
            if method == "POST":
                status, ctype, out = await self._post(query, headers, body)
            elif method == "GET":
                status, ctype, out = 200, "application/json", self._discovery()
            else:
                return _http.text_response(405, f"method {clip(method, MAX_SHOWN)} not allowed", [("allow", "GET, POST")])
        except _http.HTTPError as e:
            return e.response()
        out_headers = [("content-type", ctype)]
        if self.gzip_threshold is not None:
            out_headers.append(("vary", "Accept-Encoding"))
            if len(out) >= self.gzip_threshold and _http.accepts_gzip(headers.get("accept-encoding")):
                out = _http.gzip(out, self.gzip_level)
                out_headers.append(("content-encoding", "gzip"))
        out_headers.append(("content-length", str(len(out))))
        return status, out_headers, out

    async def _post(self, query: str, headers: Mapping[str, str], body: bytes) -> tuple[int, str, bytes]:
        if len(body) > self.max_body_size:
            raise _http.too_large(self.max_body_size)
        encoding = headers.get("content-encoding")
        if encoding:
            body = _http.inflate(body, encoding, self.max_body_size)
        kind = _http.media_type(headers.get("content-type"))
        if kind == AMF_CONTENT_TYPE or not kind:
            return 200, AMF_CONTENT_TYPE, await self.handle_amf(body, query=query)
        if kind in _JSON_TYPES:
            return await self._call_rpc("jsonrpc", "JSON-RPC", "application/json", body, headers)
        if kind in _XML_TYPES:
            return await self._call_rpc("xmlrpc", "XML-RPC", "text/xml", body, headers)
        raise _http.HTTPError(
            415,
            f"unsupported content type {shown(kind)} (application/x-amf, application/json or text/xml)",
        )

    def _discovery(self) -> bytes:
        return json.dumps(self.services.describe(), default=str, ensure_ascii=False).encode("utf-8")

    async def _call_rpc(self, name: str, label: str, ctype: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, str, bytes]:
        module = self._rpc.get(name)
        if module is None:
            try:
                module = importlib.import_module(f"{__package__}.{name}")
            except ImportError as e:
                raise _http.HTTPError(415, f"{label} is not available on this gateway ({e})") from None
            self._rpc[name] = module
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
        context = Context(protocol=name, principal=principal, headers=dict(headers))
        try:
            out = await module.handle(body, self.services, context, debug=self.debug, max_calls=self.max_calls)
        except Exception:
            logger.exception("%s handler failed", label)
            raise _http.HTTPError(500, f"{label} handler failed") from None
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
            user, password = _split_credentials(token)
        except ValueError:
            raise refused from None
        principal = await self._authenticate(user, password)
        if principal is None:
            raise refused
        return principal

    # --- AMF remoting ----------------------------------------------------------------

    async def handle_amf(self, data: bytes, *, query: str = "") -> bytes:
        """Answer one AMF remoting packet (the request body) with the response packet.
        `query` is the request URL's query string (it may carry a session id). A packet
        that does not decode raises `amfkit.remoting.http.HTTPError` (400)."""
        version, headers, bodies = self._decode(data)
        return await self._answer_packet(version, headers, bodies, query)

    def _decode(self, data: bytes) -> tuple[int, list[tuple[str, bool, Any]], list[tuple[str, str, Any]]]:
        """A request packet as `(version, headers, bodies)` tuples; HTTPError 400 if it
        is empty or does not decode."""
        if not data:
            raise _http.HTTPError(400, "empty request body (an AMF remoting packet was expected)")
        try:
            version, headers, bodies = _amfkit.decode_packet(
                data, max_depth=self.max_depth, max_objects=self.max_objects, max_size=self.max_body_size
            )
        except _amfkit.DecodeError as e:
            raise _http.HTTPError(400, clip(f"malformed AMF packet: {e}")) from None
        except Exception as e:
            # An externalizable reader (a Flex small form, a registered class's
            # __readamf__) refused its bytes: still the request's fault.
            logger.debug("malformed AMF packet", exc_info=True)
            raise _http.HTTPError(400, clip(f"malformed AMF packet: {error_text(e)}")) from None
        if len(bodies) > self.max_calls:
            raise _http.HTTPError(400, f"a packet of {len(bodies)} bodies, more than the {self.max_calls} allowed")
        return version, headers, bodies

    async def _answer_packet(
        self, version: int, headers: list[tuple[str, bool, Any]], bodies: list[tuple[str, str, Any]], query: str
    ) -> bytes:
        """Answer a decoded packet: `(name, must_understand, value)` headers and
        `(target, response, value)` bodies."""
        if not headers and not query:
            plain = self._plain_calls(bodies)
            if plain is not None:
                return await self._answer_plain(version, bodies, plain)
        envelope = Envelope(version, [Header(n, v, mu) for n, mu, v in headers], [Body(t, r, v) for t, r, v in bodies])
        request = _Request(self, envelope, query)
        try:
            await request.prepare()
        except Exception as e:  # the session store or the authenticator's principal
            request.fault = Fault.of(e, debug=self.debug)  # every body is this fault
        answers = []
        for body in envelope.bodies:
            answers.append(await self._answer(request, body))
        try:
            await request.finish()
        except Exception as e:  # the session store failed: the answers still go out
            logger.error("cannot save the sessions of a request: %s", error_text(e), exc_info=e)
        return self._encode(envelope.version, request.out_headers, answers)

    def _plain_calls(self, bodies: list[tuple[str, str, Any]]) -> list[Any] | None:
        """The methods of a packet whose every body is a plain NetConnection call: to an
        existing method taking positional arguments only, needing no roles and no
        context. None when any body is anything else (nothing has been called yet): the
        general path answers those, sessions and headers included."""
        methods = []
        lookup = self.services.lookup
        for target, _, value in bodies:
            if isinstance(value, AbstractMessage) or (
                type(value) is list and len(value) == 1 and isinstance(value[0], AbstractMessage)
            ):
                return None
            try:
                method = lookup(target)
            except Exception:  # a Fault, or anything else: the general path answers it
                return None
            if method.fast is None or method.roles:
                return None
            methods.append(method)
        return methods

    async def _answer_plain(self, version: int, bodies: list[tuple[str, str, Any]], methods: list[Any]) -> bytes:
        answers: list[tuple[str, str, Any]] = []
        call = self.services.call
        for (target, response, value), method in zip(bodies, methods):
            args = value if type(value) is list else [value]
            try:
                if method.accepts(args):
                    result = method.fn(*args)
                    if method.is_async or awaitable(result):
                        result = await result
                else:
                    result = await call(target, args)  # raises the precise Fault
            except Exception as e:
                body = self._fault_body(response, None, None, e, version)
                answers.append((body.target, body.response, body.value))
            else:
                answers.append((response + "/onResult", "null", result))
        try:
            return _amfkit.encode_packet(version, [], answers, default=self.default)
        except Exception:  # the general encoder below finds the body that cannot be written
            pass
        return self._encode(
            version, [], [_Answer(Body(*a), b[1], clip(b[0], MAX_SHOWN)) for a, b in zip(answers, bodies)]
        )

    def _encode(self, version: int, headers: list[Header], answers: list[_Answer]) -> bytes:
        try:
            return packet.encode(Envelope(version, headers, [a.body for a in answers]), default=self.default)
        except Exception:  # an EncodeError, or an error raised by `default` or __writeamf__
            pass
        # Some result cannot be written: find it and answer a fault for that body only.
        for a in answers:
            try:
                packet.encode(Envelope(version, [], [a.body]), default=self.default)
            except Exception as e:
                text = error_text(e)
                logger.error("cannot encode the result of %s: %s", a.target, text, exc_info=not isinstance(e, _amfkit.EncodeError))
                fault = Fault(f"the result cannot be encoded: {text}", code="Server.Processing")
                a.body = self._fault_body(a.response, a.message, a.client_id, fault, version)
                try:
                    packet.encode(Envelope(version, [], [a.body]), default=self.default)
                except Exception:  # the fault's own details cannot be written: drop them
                    bare = Fault(fault.message, code=fault.code)
                    a.body = self._fault_body(a.response, a.message, a.client_id, bare, version)
        return packet.encode(Envelope(version, headers, [a.body for a in answers]), default=self.default)

    async def _answer(self, request: _Request, body: Body) -> _Answer:
        value = body.value
        message = None
        if isinstance(value, AbstractMessage):
            message = value
        elif isinstance(value, list) and len(value) == 1 and isinstance(value[0], AbstractMessage):
            message = value[0]
        if message is not None:
            return await self._flex(request, body, message)
        response = body.response
        target = clip(body.target, MAX_SHOWN)  # names the call in the log
        if request.fault is not None:
            return _Answer(self._fault_body(response, None, None, request.fault, request.version), response, target)
        try:
            context = Context(request.protocol, request.principal, request.session(), request.header_values, request.session_id)
            args = value if isinstance(value, list) else [value]
            result = await self.services.call(body.target, args, context)
        except Exception as e:
            return _Answer(self._fault_body(response, None, None, e, request.version), response, target)
        return _Answer(Body(response + "/onResult", "null", result), response, target)

    async def _flex(self, request: _Request, body: Body, message: AbstractMessage) -> _Answer:
        headers = message.headers if isinstance(message.headers, dict) else {}
        dsid = headers.get("DSId")
        if isinstance(dsid, str) and _ID.fullmatch(dsid):
            client_id = dsid
        else:
            # One new id for all the messages of this request that came without one.
            client_id = request.new_client_id()
        operation = getattr(message, "operation", None)
        destination = message.destination
        # What the log calls this message: the input's names, each shown bounded.
        if isinstance(message, RemotingMessage):
            target = f"{_name(destination)}.{_name(operation)}"
        else:
            target = f"command {_name(operation)}"
        if request.fault is not None:
            fault = self._fault_body(body.response, message, client_id, request.fault, request.version)
            return _Answer(fault, body.response, target, message, client_id)
        try:
            session = await request.flex_session(client_id)
            principal = request.principal or _principal_of(session)
            if isinstance(message, RemotingMessage):
                context = Context(request.protocol, principal, session, headers, client_id)
                args = message.body
                if args is None:
                    args = []
                elif not isinstance(args, list):
                    args = [args]
                if not isinstance(destination, str):
                    raise Fault(f"no service {shown(destination)}", code="Server.ResourceUnavailable")
                if not isinstance(operation, str):
                    raise Fault(f"no method {shown(operation)} on {shown(destination)}", code="Server.ResourceUnavailable")
                result = await self.services.call(f"{destination}.{operation}", args, context)
            elif isinstance(message, CommandMessage):
                result = await self._command(request, message, client_id, session)
            else:
                raise Fault(f"{type(message).__name__} is not handled by this gateway (remoting only)", code="Server.Processing")
        except Exception as e:
            return _Answer(self._fault_body(body.response, message, client_id, e, request.version), body.response, target, message, client_id)
        small = request.version == 3 and (getattr(message, "small", False) or "DSMessagingVersion" in headers)
        ack = (AcknowledgeMessageExt if small else AcknowledgeMessage)()
        ack.correlationId = message.messageId if isinstance(message.messageId, str) else None
        ack.clientId = message.clientId if isinstance(message.clientId, str) and message.clientId else client_id
        ack.destination = destination if isinstance(destination, str) else None
        ack.headers = {"DSId": client_id}
        ack.body = result
        return _Answer(Body(body.response + "/onResult", "null", ack), body.response, target, message, client_id)

    async def _command(self, request: _Request, message: CommandMessage, client_id: str, session: Session) -> Any:
        op = message.operation
        if not isinstance(op, (int, float)) or isinstance(op, bool):
            # Only numbers are compared: any other value (a list, a class with its own
            # __eq__) is an operation this gateway does not know.
            raise Fault(f"command operation {shown(op)} is not supported by this gateway", code="Server.Processing")
        if op in (Operation.CLIENT_PING, Operation.TRIGGER_CONNECT, Operation.DISCONNECT):
            return None
        if op == Operation.LOGIN:
            if self.authenticator is None:
                raise Fault("this gateway has no authenticator", code="Client.Authentication")
            try:
                user, password = _split_credentials(message.body, message.headers.get("DSCredentialsCharset") if isinstance(message.headers, dict) else None)
            except ValueError as e:
                raise Fault(f"malformed login credentials: {e}", code="Client.Authentication") from None
            principal = await self._authenticate(user, password)
            if principal is None:
                raise Fault("authentication failed", code="Client.Authentication")
            session[PRINCIPAL_KEY] = [principal.name, sorted(principal.roles)]
            return "success"
        if op == Operation.LOGOUT:
            request.forget_flex_session(client_id)
            return "success"
        raise Fault(f"command operation {shown(op)} is not supported by this gateway", code="Server.Processing")

    async def _authenticate(self, user: Any, password: Any) -> Principal | None:
        assert self.authenticator is not None
        result = self.authenticator(user, password)
        if inspect.isawaitable(result):
            result = await result
        if result is None or result is False:
            return None
        if isinstance(result, Principal):
            return result
        return Principal(user if isinstance(user, str) else shown(user))

    # --- faults ----------------------------------------------------------------------

    def _fault_body(self, response: str, message: AbstractMessage | None, client_id: str | None, error: BaseException, version: int) -> Body:
        fault = Fault.of(error, debug=self.debug)
        if fault is error:
            logger.debug("fault %s: %s", fault.code, fault.message)
        code, text, details = fault.code, fault.message, fault.details
        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__)) if self.debug else None
        if message is None:
            status = {
                "level": "error",
                "code": code,
                "description": text,
                "details": details if details is not None else (trace or ""),
                "type": type(error).__name__ if self.debug else "",
                "line": 0,
            }
            return Body(response + "/onStatus", "null", status)
        # Only text is echoed: an id or destination of any other type (a value the
        # encoder may not write back, or one holding the whole request) is left out.
        err = ErrorMessage()
        err.correlationId = message.messageId if isinstance(message.messageId, str) else None
        err.clientId = message.clientId if isinstance(message.clientId, str) and message.clientId else client_id
        err.destination = message.destination if isinstance(message.destination, str) else None
        err.headers = {}
        err.timeToLive = 0
        err.body = None
        err.faultCode = code
        err.faultString = text
        err.faultDetail = details if isinstance(details, str) else (trace or "")
        err.rootCause = None
        err.extendedData = details if details is not None and not isinstance(details, str) else None
        return Body(response + "/onStatus", "null", err)


_CONTENT_TYPE_AMF = (b"content-type", AMF_CONTENT_TYPE.encode())
_VARY = (b"vary", b"Accept-Encoding")
_CONTENT_ENCODING_GZIP = (b"content-encoding", b"gzip")


def _replay(message: dict[str, Any], receive: Callable[[], Any]) -> Callable[[], Any]:
    """An ASGI `receive` that gives `message` (already received) first."""
    pending = [message]

    async def again() -> Any:
        if pending:
            return pending.pop()
        return await receive()

    return again


class _Answer:
    """One response body, with what is needed to replace it by a fault."""

    __slots__ = ("body", "response", "target", "message", "client_id")

    def __init__(self, body: Body, response: str, target: str, message: AbstractMessage | None = None, client_id: str | None = None) -> None:
        self.body = body
        self.response = response
        self.target = target
        self.message = message
        self.client_id = client_id


class _Request:
    """What one AMF request shares across its bodies: packet headers, the principal, the
    NetConnection session and the Flex clients' sessions, and the response headers."""

    __slots__ = (
        "gateway",
        "version",
        "protocol",
        "query",
        "headers",
        "header_values",
        "principal",
        "fault",
        "session_id",
        "_session",
        "_session_known",
        "_flex",
        "_forget",
        "_credentials_ok",
        "_new_client_id",
        "out_headers",
    )

    def __init__(self, gateway: Gateway, envelope: Envelope, query: str) -> None:
        self.gateway = gateway
        self.version = envelope.version
        self.protocol = "amf3" if envelope.version == 3 else "amf0"
        self.query = query
        self.headers = envelope.headers
        self.header_values = {h.name: h.value for h in envelope.headers}
        self.principal: Principal | None = None
        self.fault: Fault | None = None
        self.session_id: str | None = None
        self._session: Session | None = None
        self._session_known = False
        self._flex: dict[str, tuple[Session, bool]] = {}
        self._forget: set[str] = set()
        self._credentials_ok = False
        self._new_client_id: str | None = None
        self.out_headers: list[Header] = []

    def new_client_id(self) -> str:
        if self._new_client_id is None:
            self._new_client_id = new_session_id()
        return self._new_client_id

    async def prepare(self) -> None:
        gateway = self.gateway
        for h in self.headers:
            if h.must_understand and h.name not in gateway.understood_headers:
                self.fault = Fault(f"header {shown(h.name)} must be understood and is not", code="Client.UnknownHeader")
                return
        if self.query:
            sid = None
            for k, v in parse_qsl(self.query, keep_blank_values=True):
                if k == gateway.session_param:
                    sid = v
            if sid and _ID.fullmatch(sid):
                session = await gateway.sessions.get(sid)
                if session is not None:
                    self.session_id = sid
                    self._session = session
                    self._session_known = True
                    self.principal = _principal_of(session)
        credentials = self.header_values.get("Credentials")
        if credentials is not None and gateway.authenticator is not None:
            try:
                if not isinstance(credentials, dict):
                    raise Fault("malformed Credentials header (an object with userid and password was expected)", code="Client.Authentication")
                principal = await gateway._authenticate(credentials.get("userid"), credentials.get("password"))
                if principal is None:
                    raise Fault("authentication failed", code="Client.Authentication")
            except Fault as e:
                self.fault = e
                return
            except Exception as e:
                text = error_text(e)
                logger.error("the authenticator failed: %s", text, exc_info=e)
                self.fault = Fault(f"the authenticator failed: {text}", code="Server.Processing")
                return
            self.principal = principal
            self._credentials_ok = True
            if gateway.clear_credentials or self._session_known:
                session = self.session()
                value = [principal.name, sorted(principal.roles)]
                if session.get(PRINCIPAL_KEY) != value:
                    session[PRINCIPAL_KEY] = value

    def session(self) -> Session:
        """The NetConnection session (a new, not yet stored one when there is none)."""
        if self._session is None:
            self._session = Session()
        return self._session

    async def flex_session(self, client_id: str) -> Session:
        item = self._flex.get(client_id)
        if item is None:
            session = await self.gateway.sessions.get(client_id)
            item = (session, True) if session is not None else (Session(), False)
            self._flex[client_id] = item
            self._forget.discard(client_id)
        return item[0]

    def forget_flex_session(self, client_id: str) -> None:
        self._forget.add(client_id)
        self._flex[client_id] = (Session(), False)

    async def finish(self) -> None:
        gateway = self.gateway
        store = gateway.sessions
        session = self._session
        if session is not None:
            if self._session_known:
                if session.modified:
                    await store.save(self.session_id, session)  # type: ignore[arg-type]
            elif session:
                sid, stored = await store.create()
                stored.update(session)
                await store.save(sid, stored)
                self.session_id = sid
                sep = "&" if self.query else "?"
                self.out_headers.append(Header("AppendToGatewayUrl", f"{sep}{gateway.session_param}={sid}"))
            if self._credentials_ok and gateway.clear_credentials:
                self.out_headers.append(
                    Header("RequestPersistentHeader", {"name": "Credentials", "mustUnderstand": False, "data": None})
                )
        for client_id in self._forget:
            await store.delete(client_id)
        for client_id, (s, known) in self._flex.items():
            if known:
                if s.modified:
                    await store.save(client_id, s)
            elif s:
                _, stored = await store.create(client_id)
                stored.update(s)
                await store.save(client_id, stored)


def _name(value: Any) -> str:
    """A destination or operation in the log: a short text as it is, else bounded."""
    return clip(value, MAX_SHOWN) if isinstance(value, str) else shown(value)


def _principal_of(session: Mapping[str, Any] | None) -> Principal | None:
    if not session:
        return None
    value = session.get(PRINCIPAL_KEY)
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str):
        return Principal(value[0], frozenset(value[1] or ()))
    return None


def _split_credentials(token: Any, charset: Any = None) -> tuple[str, str]:
    """base64 `user:password` (a str or bytes) -> (user, password); ValueError if not."""
    if isinstance(token, str):
        token = token.strip().encode("ascii", "replace")
    if not isinstance(token, (bytes, bytearray)):
        raise ValueError("base64 'user:password' text was expected")
    try:
        raw = base64.b64decode(bytes(token), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64") from None
    enc = charset if isinstance(charset, str) and charset.lower() in ("utf-8", "iso-8859-1", "latin-1", "us-ascii") else "utf-8"
    try:
        text = raw.decode(enc)
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    user, sep, password = text.partition(":")
    if not sep:
        raise ValueError("no ':' between user and password")
    return user, password
