"""A remoting client: call the services of an AMF gateway from Python, as NetConnection
(AMF0 or AMF3) or as Flex RemoteObject; `AsyncClient` is the same API with `await`.

    >>> from amfkit.remoting import Client
    >>> client = Client("http://127.0.0.1:8000/gateway")          # doctest: +SKIP
    >>> client.EchoService.echo([1, 2, 3])                         # doctest: +SKIP
    [1, 2, 3]

docs/client.md has the rest: batches, the headers a gateway sends, errors, and Flex
messaging (`client.consumer(...)`, `client.producer(...)`).
"""

from __future__ import annotations

import base64
import gzip as _gzip
import itertools
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

try:
    import httpx
except ImportError as e:  # pragma: no cover - httpx is the client's one dependency
    raise ImportError(f"amfkit.remoting.client needs httpx (pip install httpx): {e}") from e

from .. import __version__
from .._text import MAX_SHOWN, clip, shown
from . import messages
from .packet import Body, Envelope, Header
from .packet import decode as decode_packet
from .packet import encode as encode_packet
from .services import Fault

if TYPE_CHECKING:
    from ..messaging.consumer import AsyncConsumer, AsyncProducer, Consumer, Producer
    from ..messaging.hub import AsyncHub, Hub

__all__ = ["AsyncBatch", "AsyncClient", "Batch", "Client", "Pending", "TransportError"]

CONTENT_TYPE = "application/x-amf"
#: The request size from which `compress_requests=True` gzips a request body: the
#: gateway's measured threshold for responses (docs/gateway.md, "Compression"), at the same
#: zlib level 1.
COMPRESS_THRESHOLD = 1024
COMPRESS_LEVEL = 1
#: The largest decoded reply accepted unless `max_response_size` says otherwise.
MAX_RESPONSE_SIZE = 256 * 1024 * 1024

_R = TypeVar("_R")


class TransportError(Exception):
    """The HTTP exchange with the gateway failed (not a fault answered by a service).

    `url` is the address used; `status`, `content_type` and `body` (at most the first
    4 KiB) describe the reply when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status: int | None = None,
        content_type: str | None = None,
        body: bytes = b"",
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.content_type = content_type
        self.body = body


class Pending(Generic[_R]):
    """The result of a call made in a batch, known once the batch has been sent."""

    __slots__ = ("target", "_done", "_value", "_error")

    def __init__(self, target: str) -> None:
        self.target = target
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        """Whether the batch has been sent and this call answered (or failed)."""
        return self._done

    def result(self) -> _R:
        """The call's result; raises its `Fault` (or `TransportError`) if it failed."""
        if not self._done:
            raise RuntimeError(f"{self.target}: the batch has not been sent yet")
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self) -> BaseException | None:
        """The call's `Fault` or `TransportError`, or None when it succeeded."""
        if not self._done:
            raise RuntimeError(f"{self.target}: the batch has not been sent yet")
        return self._error

    def _set(self, value: Any) -> None:
        self._done, self._value = True, value

    def _fail(self, error: BaseException) -> None:
        self._done, self._error = True, error

    def __repr__(self) -> str:
        if not self._done:
            state = "pending"
        elif self._error is not None:
            state = f"failed {self._error!r}"
        else:
            state = f"result {shown(self._value)}"
        return f"<Pending {self.target} {state}>"


# --------------------------------------------------------------------------------------
# Attribute proxies


class _ServiceProxy:
    """`client.Service`: attribute access names a method."""

    __slots__ = ("_invoke", "_service")

    def __init__(self, invoke: Callable[[str, str, tuple[Any, ...]], Any], service: str) -> None:
        self._invoke = invoke
        self._service = service

    def __getattr__(self, method: str) -> _MethodProxy:
        if method.startswith("_"):
            raise AttributeError(method)
        return _MethodProxy(self._invoke, self._service, method)

    def __getitem__(self, method: str) -> _MethodProxy:
        return _MethodProxy(self._invoke, self._service, method)

    def __repr__(self) -> str:
        return f"<remote service {self._service}>"


class _MethodProxy:
    __slots__ = ("_invoke", "_service", "_method")

    def __init__(self, invoke: Callable[[str, str, tuple[Any, ...]], Any], service: str, method: str) -> None:
        self._invoke = invoke
        self._service = service
        self._method = method

    def __call__(self, *args: Any) -> Any:
        return self._invoke(self._service, self._method, args)

    def __repr__(self) -> str:
        return f"<remote method {self._service}.{self._method}>"


def _split_target(target: str) -> tuple[str, str]:
    service, dot, method = target.rpartition(".")
    if not dot:
        return "", target
    return service, method


class _Proxies:
    """`obj.Service.method(...)`, `obj["dotted.Service"].method(...)`, `obj.call(...)`."""

    def _invoke(self, service: str, method: str, args: tuple[Any, ...]) -> Any:
        raise NotImplementedError

    def __getattr__(self, service: str) -> _ServiceProxy:
        if service.startswith("_"):
            raise AttributeError(service)
        return _ServiceProxy(self._invoke, service)

    def __getitem__(self, service: str) -> _ServiceProxy:
        return _ServiceProxy(self._invoke, service)

    def call(self, target: str, *args: Any) -> Any:
        """Call `"Service.method"` (split at the last dot; a name without a dot is a
        NetConnection target of its own) with positional arguments."""
        service, method = _split_target(target)
        return self._invoke(service, method, args)


# --------------------------------------------------------------------------------------
# What both clients share: building requests and reading replies (no I/O here)


class _Call:
    __slots__ = ("service", "method", "args", "pending")

    def __init__(self, service: str, method: str, args: tuple[Any, ...], pending: Pending[Any] | None = None) -> None:
        self.service = service
        self.method = method
        self.args = args
        self.pending = pending

    @property
    def target(self) -> str:
        return f"{self.service}.{self.method}" if self.service else self.method


def _member(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _fault_from_status(status: Any) -> Fault:
    """A NetConnection status object (`code`, `description`, `details`, `level`)."""
    description = _member(status, "description")
    if description is None:
        description = _member(status, "message")
    if description is None:
        description = status if isinstance(status, str) else ""
    fault = Fault(_reply_text(description), code=_reply_code(_member(status, "code")), details=_member(status, "details"))
    fault.raw = status
    return fault


def _fault_from_error_message(error: messages.ErrorMessage) -> Fault:
    text = getattr(error, "faultString", None)
    fault = Fault(
        _reply_text(text) if text is not None else "",
        code=_reply_code(getattr(error, "faultCode", None)),
        details=getattr(error, "faultDetail", None),
    )
    fault.raw = error
    return fault


def _reply_text(value: Any) -> str:
    """A fault text from a reply: a string as it is (`Fault` cuts it to
    `amfkit._text.MAX_MESSAGE`), any other value shown by its type (its str could be any
    size)."""
    return value if isinstance(value, str) else shown(value)


def _reply_code(code: Any) -> str:
    """A fault code from a reply, at most `amfkit._text.MAX_SHOWN` characters."""
    if code is None:
        return "Server.Processing"
    return clip(code, MAX_SHOWN) if isinstance(code, str) else shown(code)


class _Core:
    """State and wire logic shared by `Client` and `AsyncClient`."""

    def __init__(
        self,
        url: str,
        *,
        amf3: bool,
        flex: bool,
        credentials: tuple[str, str] | None,
        gzip: bool,
        compress_requests: bool | int,
        endpoint: str,
        max_response_size: int,
        decode_options: Mapping[str, Any] | None,
        default: Callable[[Any], Any] | None,
    ) -> None:
        if flex and not amf3:
            raise ValueError("Flex RemoteObject messages are AMF3: flex=True needs amf3=True")
        if credentials is not None and (len(credentials) != 2 or not all(isinstance(c, str) for c in credentials)):
            raise TypeError("credentials must be a (user, password) pair of str")
        self._url = url
        self.version = 3 if amf3 else 0
        self.flex = flex
        self._credentials = tuple(credentials) if credentials is not None else None
        self._gzip = gzip
        if compress_requests is True:
            self._compress_from: int | None = COMPRESS_THRESHOLD
        elif compress_requests is False:
            self._compress_from = None
        else:
            self._compress_from = int(compress_requests)
        self._endpoint = endpoint
        self._max_response_size = max_response_size
        self._decode_options = dict(decode_options or {})
        self._default = default
        self._amf_headers: dict[str, Header] = {}
        self._state_lock = threading.Lock()
        self._numbers = itertools.count(1)
        # Flex: the id the gateway gave this client (DSId), and its clientId.
        self._dsid: str | None = None
        self._client_id: Any = None
        if credentials is not None and not flex:
            self.add_header("Credentials", {"userid": credentials[0], "password": credentials[1]})

    # -- public state -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The URL requests go to now (after `AppendToGatewayUrl`/`ReplaceGatewayUrl`)."""
        return self._url

    @property
    def amf_headers(self) -> dict[str, Any]:
        """The AMF headers sent with every request, by name (a copy)."""
        with self._state_lock:
            return {name: h.value for name, h in self._amf_headers.items()}

    @property
    def dsid(self) -> str | None:
        """Flex mode: the client id the gateway assigned (header `DSId`), once connected."""
        return self._dsid

    def add_header(self, name: str, value: Any, must_understand: bool = False) -> None:
        """Send an AMF header with every later request (replacing one of that name)."""
        with self._state_lock:
            self._amf_headers[name] = Header(name, value, must_understand=must_understand)

    def remove_header(self, name: str) -> None:
        """Stop sending an AMF header (no error if it is not set)."""
        with self._state_lock:
            self._amf_headers.pop(name, None)

    # -- building requests ------------------------------------------------------------

    def _http_headers(self) -> dict[str, str]:
        return {
            "Content-Type": CONTENT_TYPE,
            "Accept-Encoding": "gzip" if self._gzip else "identity",
            "User-Agent": f"amfkit/{__version__}",
        }

    def _next_response(self) -> str:
        return f"/{next(self._numbers)}"

    def _envelope(self, bodies: list[Body]) -> Envelope:
        with self._state_lock:
            headers = list(self._amf_headers.values())
        return Envelope(self.version, headers, bodies)

    def _call_bodies(self, calls: list[_Call]) -> list[Body]:
        bodies = []
        for call in calls:
            response = self._next_response()
            if self.flex:
                if not call.service:
                    raise ValueError(f"Flex mode needs a destination: {call.target!r} is not 'Service.method'")
                message = messages.RemotingMessage(
                    destination=call.service,
                    operation=call.method,
                    body=list(call.args),
                    clientId=self._client_id,
                    headers={"DSId": self._dsid, "DSEndpoint": self._endpoint},
                )
                bodies.append(Body("null", response, [message]))
            else:
                bodies.append(Body(call.target, response, list(call.args)))
        return bodies

    def _command_body(self, operation: int, body: Any = None) -> Body:
        command = messages.CommandMessage(operation=operation, body=body, clientId=self._client_id, destination="")
        return self._flex_body(command, endpoint=operation != messages.Operation.CLIENT_PING)

    def _flex_body(self, message: messages.AbstractMessage, *, endpoint: bool = True) -> Body:
        """`message` as a body of its own (target `null`), with the client's `DSId` (and
        `DSEndpoint`) added to its headers: every Flex message goes out this way."""
        headers: dict[str, Any] = dict(message.headers or {})
        headers["DSId"] = self._dsid or "nil"
        if endpoint:
            headers["DSEndpoint"] = self._endpoint
        message.headers = headers
        return Body("null", self._next_response(), [message])

    def _ping_body(self, messaging: bool) -> Body:
        """The handshake: a CLIENT_PING, announcing messaging version 1.0 for a Consumer's
        or Producer's sake (the server may then push small forms)."""
        body = self._command_body(messages.Operation.CLIENT_PING)
        if messaging:
            body.value[0].headers["DSMessagingVersion"] = 1.0
        return body

    def _login_body(self) -> Body:
        assert self._credentials is not None
        user, password = self._credentials
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        return self._command_body(messages.Operation.LOGIN, token)

    def _request(self, envelope: Envelope) -> tuple[str, dict[str, str], bytes]:
        content = encode_packet(envelope, default=self._default)
        headers = self._http_headers()
        if self._compress_from is not None and len(content) >= self._compress_from:
            content = _gzip.compress(content, compresslevel=COMPRESS_LEVEL)
            headers["Content-Encoding"] = "gzip"
        return self._url, headers, content

    # -- reading replies ----------------------------------------------------------------

    def _check_reply(self, url: str, response: httpx.Response, content: bytes) -> Envelope:
        content_type = response.headers.get("content-type", "")
        if response.status_code != 200:
            raise TransportError(
                f"the gateway answered HTTP {response.status_code} {clip(response.reason_phrase, MAX_SHOWN)}"
                + _snippet(content_type, content),
                url=url,
                status=response.status_code,
                content_type=content_type,
                body=content[:4096],
            )
        if CONTENT_TYPE not in content_type.lower():
            raise TransportError(
                f"the gateway answered {clip(content_type, MAX_SHOWN) if content_type else 'no content type'}, not {CONTENT_TYPE}"
                + _snippet(content_type, content),
                url=url,
                status=200,
                content_type=content_type,
                body=content[:4096],
            )
        try:
            envelope = decode_packet(content, **self._decode_options)
        except (ValueError, TypeError, LookupError, AttributeError) as e:
            # amfkit.DecodeError (a ValueError), or a Flex small form's reader refusing
            # its bytes
            raise TransportError(
                clip(f"the gateway's reply is not a valid AMF packet: {e}"),
                url=url,
                status=200,
                content_type=content_type,
                body=content[:4096],
            ) from e
        self._follow_headers(envelope)
        return envelope

    def _follow_headers(self, envelope: Envelope) -> None:
        with self._state_lock:
            for header in envelope.headers:
                if header.name == "AppendToGatewayUrl" and isinstance(header.value, str):
                    # Appended to the URL in use, as Flash does (a renewed session may come
                    # as "&sid=..." after the old one); a gateway repeating the same suffix
                    # in every reply does not make the URL grow.
                    if not self._url.endswith(header.value):
                        self._url += header.value
                elif header.name == "ReplaceGatewayUrl" and isinstance(header.value, str):
                    self._url = header.value
                elif header.name == "RequestPersistentHeader":
                    name = _member(header.value, "name")
                    if not isinstance(name, str):
                        continue
                    data = _member(header.value, "data")
                    if data is None:
                        self._amf_headers.pop(name, None)
                    else:
                        self._amf_headers[name] = Header(name, data, must_understand=bool(_member(header.value, "mustUnderstand")))

    def _outcomes(self, envelope: Envelope, responses: list[str]) -> list[tuple[bool, Any]]:
        """For each request body (by its response id): (True, result) or (False, error)."""
        answers: dict[str, tuple[str, Any]] = {}
        for body in envelope.bodies:
            key, slash, kind = body.target.rpartition("/")
            if slash and kind in ("onResult", "onStatus") and key not in answers:
                answers[key] = (kind, body.value)
        out: list[tuple[bool, Any]] = []
        for response in responses:
            if response not in answers:
                out.append((False, TransportError(f"the gateway's reply has no answer for {response}", url=self._url)))
                continue
            kind, value = answers[response]
            if isinstance(value, messages.ErrorMessage):
                out.append((False, _fault_from_error_message(value)))
            elif isinstance(value, messages.AcknowledgeMessage):
                if kind == "onStatus":
                    out.append((False, _fault_from_status(value.body)))
                else:
                    out.append((True, value.body))
            elif kind == "onStatus":
                out.append((False, _fault_from_status(value)))
            else:
                out.append((True, value))
        return out

    def _result(self, envelope: Envelope, body: Body) -> Any:
        """The result of the call sent as `body`; raises its fault."""
        ok, value = self._outcomes(envelope, [body.response])[0]
        if not ok:
            raise value
        return value

    def _acknowledgement(self, envelope: Envelope, body: Body) -> Any:
        """The acknowledgement of the command sent as `body` (the message itself, to read
        its headers and clientId); raises its fault."""
        value = self._result(envelope, body)
        for b in envelope.bodies:
            if b.target.rpartition("/")[0] == body.response:
                return b.value
        return value  # pragma: no cover - _outcomes found it

    def _settle(self, calls: list[_Call], bodies: list[Body], envelope: Envelope) -> None:
        """Give each batched call its result or its fault."""
        for call, (ok, value) in zip(calls, self._outcomes(envelope, [b.response for b in bodies])):
            assert call.pending is not None
            if ok:
                call.pending._set(value)
            else:
                call.pending._fail(value)

    def _connected(self, ack: Any) -> None:
        headers = getattr(ack, "headers", None)
        dsid = headers.get("DSId") if isinstance(headers, Mapping) else None
        client_id = getattr(ack, "clientId", None)
        # Only text is taken (the id goes back in a header; a value of another type
        # from the reply could be of any size).
        self._dsid = next((i for i in (dsid, client_id) if isinstance(i, str) and i), "nil")
        self._client_id = client_id

    def _forget_credentials(self) -> None:
        self._credentials = None
        self.remove_header("Credentials")


def _snippet(content_type: str, content: bytes) -> str:
    if not content:
        return ""
    if content_type.startswith("text/") or content_type.startswith("application/json"):
        text = content[:200].decode("utf-8", "replace").strip()
    else:
        text = content[:64].hex(" ")
    return f": {text}"


# --------------------------------------------------------------------------------------
# The sync client


class Client(_Core, _Proxies):
    """A synchronous client for one gateway URL (thread-safe; reuses connections).

    `credentials`: a `(user, password)` pair. `headers`: extra HTTP headers for every
    request. `timeout`: seconds, for connecting and for each read. `compress_requests`:
    gzip request bodies of at least `COMPRESS_THRESHOLD` bytes (True) or of at least
    that many bytes (an int). `endpoint`: the Flex `DSEndpoint` header.
    `decode_options`: limits for decoding replies (`max_depth`, `max_objects`,
    `max_size`, `tz_aware`). `default`: called for values amfkit cannot encode, as in
    `amfkit.amf3.encode`. `http_client`: an `httpx.Client` to use (it is not closed by
    `close()` then).
    """

    def __init__(
        self,
        url: str,
        *,
        amf3: bool = True,
        flex: bool = False,
        credentials: tuple[str, str] | None = None,
        gzip: bool = True,
        timeout: float | None = 30,
        headers: Mapping[str, str] | None = None,
        compress_requests: bool | int = False,
        endpoint: str = "my-amf",
        max_response_size: int = MAX_RESPONSE_SIZE,
        decode_options: Mapping[str, Any] | None = None,
        default: Callable[[Any], Any] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(
            url,
            amf3=amf3,
            flex=flex,
            credentials=credentials,
            gzip=gzip,
            compress_requests=compress_requests,
            endpoint=endpoint,
            max_response_size=max_response_size,
            decode_options=decode_options,
            default=default,
        )
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)
        if headers:
            self._http.headers.update(headers)
        self._connect_lock = threading.Lock()
        self._hub: Hub | None = None

    def __repr__(self) -> str:
        mode = "flex" if self.flex else f"amf{self.version}"
        return f"<amfkit.remoting.Client {self._url} {mode}>"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the Consumers, then close the HTTP connections (unless the `httpx.Client`
        was given)."""
        if self._hub is not None:
            self._hub.close()
        if self._owns_http:
            self._http.close()

    @property
    def cookies(self) -> httpx.Cookies:
        """The session's cookies (kept across requests)."""
        return self._http.cookies

    def batch(self) -> Batch:
        """Collect calls, then send them in one request when the `with` block ends."""
        return Batch(self)

    def consumer(
        self,
        destination: str,
        *,
        subtopic: str | None = None,
        selector: str | None = None,
        channel: str = "long-poll",
        queue_size: int = 1000,
        reconnect: bool = True,
        max_attempts: int | None = None,
        poll_interval: float = 1.0,
    ) -> Consumer:
        """Subscribe to a messaging destination: a `Consumer` (`poll()`, `stream()`,
        `unsubscribe()`), subscribed when returned. `channel`: "poll", "long-poll",
        "streaming" or "websocket"; docs/client.md, "Messaging", has the options."""
        from ..messaging.consumer import Consumer

        return Consumer(
            self._messaging(), destination, subtopic=subtopic, selector=selector, channel=channel, queue_size=queue_size,
            reconnect=reconnect, max_attempts=max_attempts, poll_interval=poll_interval,
        )  # fmt: skip

    def producer(self, destination: str, *, subtopic: str | None = None) -> Producer:
        """A `Producer` for a messaging destination: `send(body, headers=..., subtopic=...)`."""
        from ..messaging.consumer import Producer

        return Producer(self._messaging(), destination, subtopic=subtopic)

    def _messaging(self) -> Hub:
        if not self.version == 3:
            raise ValueError("Flex messaging is AMF3: a consumer or producer needs amf3=True")
        with self._state_lock:
            if self._hub is None:
                from ..messaging.hub import Hub

                self._hub = Hub(self)
            return self._hub

    def connect(self) -> None:
        """Flex mode: ping the gateway for a client id, and log in when the client has
        credentials. Done before the first call anyway; does nothing in NetConnection
        mode or once connected."""
        if not self.flex or self._dsid is not None:
            return
        self._handshake()

    def _handshake(self, stale: str | None = None, *, messaging: bool = False, keep: bool = False) -> None:
        """Ping for a DSId (and log in, in Flex mode), unless the client has one other
        than `stale`. `keep`: ping under the DSId the client has (a Consumer whose server
        forgot the client greets it again as the same FlexClient, which its Consumer ids
        and positions belong to)."""
        with self._connect_lock:
            if not keep:
                if self._dsid is not None and self._dsid != stale:
                    return
                self._dsid = None
            ack = self._command(self._ping_body(messaging))
            self._connected(ack)
            if self._credentials is not None and self.flex:
                self._command(self._login_body())

    def logout(self) -> None:
        """Forget the credentials; in Flex mode also send a LOGOUT command."""
        if self.flex and self._dsid is not None:
            self._command(self._command_body(messages.Operation.LOGOUT))
        self._forget_credentials()

    def _command(self, body: Body, timeout: httpx.Timeout | None = None) -> Any:
        return self._acknowledgement(self._exchange(self._envelope([body]), timeout), body)

    def _invoke(self, service: str, method: str, args: tuple[Any, ...]) -> Any:
        call = _Call(service, method, args)
        self.connect()
        bodies = self._call_bodies([call])
        return self._result(self._exchange(self._envelope(bodies)), bodies[0])

    def _send(self, calls: list[_Call]) -> None:
        try:
            self.connect()
            bodies = self._call_bodies(calls)
            envelope = self._exchange(self._envelope(bodies))
        except BaseException as e:
            _fail_all(calls, e)
            raise
        self._settle(calls, bodies, envelope)

    def _exchange(self, envelope: Envelope, timeout: httpx.Timeout | None = None) -> Envelope:
        url, headers, content = self._request(envelope)
        reply = _Reply(self._max_response_size, url)
        try:
            with self._http.stream("POST", url, content=content, headers=headers, timeout=_timeout(timeout)) as response:
                for chunk in response.iter_bytes():
                    reply.add(chunk)
        except httpx.HTTPError as e:
            raise _transport_error(e, url) from e
        return self._check_reply(url, response, bytes(reply.data))


class _Reply:
    """A reply's bytes as they arrive; a TransportError past `limit`."""

    def __init__(self, limit: int, url: str) -> None:
        self.data = bytearray()
        self.limit = limit
        self.url = url

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.limit:
            raise TransportError(f"the gateway's reply is larger than {self.limit} bytes", url=self.url)


def _timeout(timeout: httpx.Timeout | None) -> Any:
    """A request's own timeout (a long-poll's), or the client's."""
    return httpx.USE_CLIENT_DEFAULT if timeout is None else timeout


def _transport_error(e: httpx.HTTPError, url: str) -> TransportError:
    return TransportError(clip(f"{type(e).__name__}: {str(e) or 'no detail'} ({url})"), url=url)


def _fail_all(calls: list[_Call], error: BaseException) -> None:
    for call in calls:
        assert call.pending is not None
        call.pending._fail(error)


class _Collector(_Proxies):
    """The calls of a batch block, collected to be sent together."""

    def __init__(self) -> None:
        self._calls: list[_Call] = []

    def _invoke(self, service: str, method: str, args: tuple[Any, ...]) -> Pending[Any]:
        call = _Call(service, method, args)
        call.pending = Pending(call.target)
        self._calls.append(call)
        return call.pending

    def __len__(self) -> int:
        return len(self._calls)

    def _take(self, raised: bool) -> list[_Call]:
        """The calls to send when the block ends; none when it raised (each call then
        fails with a RuntimeError saying so)."""
        calls, self._calls = self._calls, []
        if raised:
            for call in calls:
                assert call.pending is not None
                call.pending._fail(RuntimeError(f"{call.target}: not sent, the batch block raised"))
            return []
        return calls


class Batch(_Collector):
    """Calls collected in a `with client.batch() as b:` block and sent together.

    Each call returns a `Pending`; its `result()` is available after the block. One
    failing call does not fail the others. If the block raises, nothing is sent.
    """

    def __init__(self, client: Client) -> None:
        super().__init__()
        self._client = client

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        calls = self._take(exc_type is not None)
        if calls:
            self._client._send(calls)


# --------------------------------------------------------------------------------------
# The async client


class AsyncClient(_Core, _Proxies):
    """The asynchronous client: `await client.Service.method(...)`.

    Same options as `Client` (`http_client` is an `httpx.AsyncClient`).
    """

    def __init__(
        self,
        url: str,
        *,
        amf3: bool = True,
        flex: bool = False,
        credentials: tuple[str, str] | None = None,
        gzip: bool = True,
        timeout: float | None = 30,
        headers: Mapping[str, str] | None = None,
        compress_requests: bool | int = False,
        endpoint: str = "my-amf",
        max_response_size: int = MAX_RESPONSE_SIZE,
        decode_options: Mapping[str, Any] | None = None,
        default: Callable[[Any], Any] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            url,
            amf3=amf3,
            flex=flex,
            credentials=credentials,
            gzip=gzip,
            compress_requests=compress_requests,
            endpoint=endpoint,
            max_response_size=max_response_size,
            decode_options=decode_options,
            default=default,
        )
        self._owns_http = http_client is None
        self._http = http_client if http_client is not None else httpx.AsyncClient(timeout=timeout)
        if headers:
            self._http.headers.update(headers)
        self._connect_lock: Any = None  # an asyncio.Lock, made in the running loop
        self._hub: AsyncHub | None = None

    def __repr__(self) -> str:
        mode = "flex" if self.flex else f"amf{self.version}"
        return f"<amfkit.remoting.AsyncClient {self._url} {mode}>"

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the Consumers, then close the HTTP connections (unless the
        `httpx.AsyncClient` was given)."""
        if self._hub is not None:
            await self._hub.close()
        if self._owns_http:
            await self._http.aclose()

    @property
    def cookies(self) -> httpx.Cookies:
        """The session's cookies (kept across requests)."""
        return self._http.cookies

    def batch(self) -> AsyncBatch:
        """Collect calls, then send them in one request when the `async with` block ends."""
        return AsyncBatch(self)

    def consumer(
        self,
        destination: str,
        *,
        subtopic: str | None = None,
        selector: str | None = None,
        channel: str = "long-poll",
        queue_size: int = 1000,
        reconnect: bool = True,
        max_attempts: int | None = None,
        poll_interval: float = 1.0,
    ) -> AsyncConsumer:
        """An `AsyncConsumer`, subscribed once awaited or entered: `consumer = await
        client.consumer(...)` or `async with client.consumer(...) as consumer`; options
        as `Client.consumer`."""
        from ..messaging.consumer import AsyncConsumer

        return AsyncConsumer(
            self._messaging(), destination, subtopic=subtopic, selector=selector, channel=channel, queue_size=queue_size,
            reconnect=reconnect, max_attempts=max_attempts, poll_interval=poll_interval,
        )  # fmt: skip

    def producer(self, destination: str, *, subtopic: str | None = None) -> AsyncProducer:
        """An `AsyncProducer`: `await producer.send(body, headers=..., subtopic=...)`."""
        from ..messaging.consumer import AsyncProducer

        return AsyncProducer(self._messaging(), destination, subtopic=subtopic)

    def _messaging(self) -> AsyncHub:
        if not self.version == 3:
            raise ValueError("Flex messaging is AMF3: a consumer or producer needs amf3=True")
        if self._hub is None:
            from ..messaging.hub import AsyncHub

            self._hub = AsyncHub(self)
        return self._hub

    async def connect(self) -> None:
        """Flex mode: ping (and log in); see `Client.connect`."""
        if not self.flex or self._dsid is not None:
            return
        await self._handshake()

    async def _handshake(self, stale: str | None = None, *, messaging: bool = False, keep: bool = False) -> None:
        """`Client._handshake`, awaited."""
        import asyncio

        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            if not keep:
                if self._dsid is not None and self._dsid != stale:
                    return
                self._dsid = None
            ack = await self._command(self._ping_body(messaging))
            self._connected(ack)
            if self._credentials is not None and self.flex:
                await self._command(self._login_body())

    async def logout(self) -> None:
        """Forget the credentials; in Flex mode also send a LOGOUT command."""
        if self.flex and self._dsid is not None:
            await self._command(self._command_body(messages.Operation.LOGOUT))
        self._forget_credentials()

    async def _command(self, body: Body, timeout: httpx.Timeout | None = None) -> Any:
        return self._acknowledgement(await self._exchange(self._envelope([body]), timeout), body)

    async def _invoke(self, service: str, method: str, args: tuple[Any, ...]) -> Any:
        call = _Call(service, method, args)
        await self.connect()
        bodies = self._call_bodies([call])
        return self._result(await self._exchange(self._envelope(bodies)), bodies[0])

    async def _send(self, calls: list[_Call]) -> None:
        try:
            await self.connect()
            bodies = self._call_bodies(calls)
            envelope = await self._exchange(self._envelope(bodies))
        except BaseException as e:
            _fail_all(calls, e)
            raise
        self._settle(calls, bodies, envelope)

    async def _exchange(self, envelope: Envelope, timeout: httpx.Timeout | None = None) -> Envelope:
        url, headers, content = self._request(envelope)
        reply = _Reply(self._max_response_size, url)
        try:
            async with self._http.stream("POST", url, content=content, headers=headers, timeout=_timeout(timeout)) as response:
                async for chunk in response.aiter_bytes():
                    reply.add(chunk)
        except httpx.HTTPError as e:
            raise _transport_error(e, url) from e
        return self._check_reply(url, response, bytes(reply.data))


class AsyncBatch(_Collector):
    """`async with client.batch() as b:` — like `Batch`, for `AsyncClient`."""

    def __init__(self, client: AsyncClient) -> None:
        super().__init__()
        self._client = client

    async def __aenter__(self) -> AsyncBatch:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        calls = self._take(exc_type is not None)
        if calls:
            await self._client._send(calls)
