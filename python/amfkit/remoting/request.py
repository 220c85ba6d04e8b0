"""One AMF remoting request: what its bodies share (packet headers, credentials, the
NetConnection session and the Flex clients' sessions, the response headers), and the
gateway settings it is answered with; and the `Timings` of any request the gateway
answers with a Server-Timing header (docs/gateway.md)."""

from __future__ import annotations

import logging
import re
import traceback
from time import perf_counter
from typing import Any, Awaitable, Callable, Iterable, Mapping, Protocol, cast
from urllib.parse import parse_qsl

from .._text import error_text, shown
from .auth import Authenticator, authenticate, principal_of, stored
from .messages import AbstractMessage
from .packet import Body, Header
from .services import Fault, Principal, Services
from .sessions import PRINCIPAL_KEY, Session, SessionStore, new_session_id

__all__ = ["Answer", "ID", "MAX_TIMED_CALLS", "MAX_TIMING_DESC", "Request", "Settings", "Timings", "fault_of", "timing_desc"]

logger = logging.getLogger("amfkit.gateway")

#: A client or session id accepted from a client: what new_session_id() makes, and the
#: ids other Flex servers hand out (letters, digits, '-', '_'), at most 64 characters.
ID = re.compile(r"[A-Za-z0-9_-]{8,64}")


class Settings(Protocol):
    """What AMF remoting reads from the gateway (a `Gateway` is one)."""

    services: Services
    sessions: SessionStore
    authenticator: Authenticator | None
    debug: bool
    default: Callable[[Any], Any] | None
    max_depth: int
    max_objects: int
    max_body_size: int
    max_calls: int
    session_param: str
    clear_credentials: bool
    understood_headers: frozenset[str]
    #: A `amfkit.messaging.Messaging`, or None: subscribe and poll are then faults.
    messaging: Any
    #: How AMF0 requests are answered (`amf.AMF0_ANSWERS`).
    amf0_answers: str


def fault_of(error: BaseException, debug: bool) -> tuple[Fault, str | None]:
    """The fault a body answers for `error`, and the traceback it carries (debug only)."""
    fault = Fault.of(error, debug=debug)
    if fault is error:
        logger.debug("fault %s: %s", fault.code, fault.message)
    trace = "".join(traceback.format_exception(type(error), error, error.__traceback__)) if debug else None
    return fault, trace


class Answer:
    """One response body, with what is needed to replace it by a fault."""

    __slots__ = ("body", "response", "target", "message", "client_id")

    def __init__(self, body: Body, response: str, target: str, message: AbstractMessage | None = None, client_id: str | None = None) -> None:
        self.body = body
        self.response = response
        self.target = target
        self.message = message
        self.client_id = client_id


class Request:
    """What one AMF request shares across its bodies: packet headers, the principal, the
    NetConnection session and the Flex clients' sessions, and the response headers."""

    __slots__ = (
        "settings",
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
        "batched",
        "push",
        "receive",
    )

    def __init__(self, settings: Settings, version: int, headers: list[Header], query: str) -> None:
        self.settings = settings
        self.version = version
        self.protocol = "amf3" if version == 3 else "amf0"
        self.query = query
        self.headers = headers
        self.header_values = {h.name: h.value for h in headers}
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
        #: Whether the packet holds more than one body (a poll in it is never parked).
        self.batched = False
        #: Whether the message came over a channel that pushes (a WebSocket): a poll is
        #: answered at once, never parked.
        self.push = False
        #: The ASGI `receive` of the HTTP request (None under WSGI and `respond`): a
        #: parked poll watches it, to end when the client goes away.
        self.receive: Callable[[], Awaitable[Any]] | None = None

    def new_client_id(self) -> str:
        """One new Flex client id for all the messages of this request that came without one."""
        if self._new_client_id is None:
            self._new_client_id = new_session_id()
        return self._new_client_id

    async def prepare(self) -> None:
        """Check the packet headers, find the NetConnection session and take the
        credentials; a refusal becomes `fault`, the answer of every body."""
        settings = self.settings
        for h in self.headers:
            if h.must_understand and h.name not in settings.understood_headers:
                self.fault = Fault(f"header {shown(h.name)} must be understood and is not", code="Client.UnknownHeader")
                return
        if self.query:
            sid = None
            for k, v in parse_qsl(self.query, keep_blank_values=True):
                if k == settings.session_param:
                    sid = v
            if sid and ID.fullmatch(sid):
                session = await settings.sessions.get(sid)
                if session is not None:
                    self.session_id = sid
                    self._session = session
                    self._session_known = True
                    self.principal = principal_of(session)
        credentials = self.header_values.get("Credentials")
        if credentials is not None and settings.authenticator is not None:
            try:
                if not isinstance(credentials, dict):
                    raise Fault("malformed Credentials header (an object with userid and password was expected)", code="Client.Authentication")
                principal = await authenticate(settings.authenticator, credentials.get("userid"), credentials.get("password"))
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
            if settings.clear_credentials or self._session_known:
                session = self.session()
                value = stored(principal)
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
            session = await self.settings.sessions.get(client_id)
            item = (session, True) if session is not None else (Session(), False)
            self._flex[client_id] = item
            self._forget.discard(client_id)
        return item[0]

    def forget_flex_session(self, client_id: str) -> None:
        self._forget.add(client_id)
        self._flex[client_id] = (Session(), False)

    async def finish(self) -> None:
        """Save the sessions the bodies changed or started, and add the response headers
        a new NetConnection session needs."""
        settings = self.settings
        store = settings.sessions
        session = self._session
        if session is not None:
            if self._session_known:
                if session.modified:
                    await store.save(self.session_id, session)  # type: ignore[arg-type]
            elif session:
                sid, new = await store.create()
                new.update(session)
                await store.save(sid, new)
                self.session_id = sid
                sep = "&" if self.query else "?"
                self.out_headers.append(Header("AppendToGatewayUrl", f"{sep}{settings.session_param}={sid}"))
            if self._credentials_ok and settings.clear_credentials:
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
                _, new = await store.create(client_id)
                new.update(s)
                await store.save(client_id, new)


#: The calls a Server-Timing header names one by one; the rest are one `calls` entry.
MAX_TIMED_CALLS = 32
#: Characters of a call's target in its Server-Timing `desc` (then "...").
MAX_TIMING_DESC = 64
# What a `desc` keeps of a target (input): letters, digits and a few harmless signs; any
# other character (quotes, backslashes, ';', ',', '=', controls, non-ASCII) becomes '_'.
_UNSAFE_DESC = re.compile(r"[^A-Za-z0-9 _.:/@()<>'+-]")


def timing_desc(text: str) -> str:
    """A call's target as a Server-Timing `desc`: at most MAX_TIMING_DESC characters
    (then "..."), only safe ASCII (it goes into a quoted string of a response header)."""
    cut = len(text) > MAX_TIMING_DESC
    text = _UNSAFE_DESC.sub("_", text[:MAX_TIMING_DESC])
    return text + "..." if cut else text


class Timings:
    """How long the phases of one request took, for its `Server-Timing` header and the
    log (docs/gateway.md, "Server-Timing"): decoding the request, each call, encoding
    the answer and compressing it, and the total. One is made only when the gateway
    reports timings: with them off nothing is timed.

    Durations are `time.perf_counter()` differences in seconds. `mark` is where the
    phase under way began (`restart`, `decoded`, `encoded` move it)."""

    __slots__ = ("started", "mark", "decode", "encode", "gzip", "calls", "busy", "more", "more_busy")

    def __init__(self) -> None:
        self.started = self.mark = perf_counter()
        self.decode: float | None = None
        self.encode: float | None = None
        self.gzip: float | None = None
        #: (desc, seconds) of the first MAX_TIMED_CALLS calls, in order.
        self.calls: list[tuple[str, float]] = []
        #: The time all the calls took.
        self.busy = 0.0
        #: The calls past MAX_TIMED_CALLS, and the time they took.
        self.more = 0
        self.more_busy = 0.0

    def restart(self) -> None:
        """A phase begins now."""
        self.mark = perf_counter()

    def decoded(self) -> None:
        """The request is decoded (since `mark`)."""
        now = perf_counter()
        self.decode = now - self.mark
        self.mark = now

    def encoded(self) -> None:
        """The answer is encoded (since `mark`)."""
        now = perf_counter()
        self.encode = now - self.mark
        self.mark = now

    def encoded_around_calls(self) -> None:
        """The answers are written: the time since decoding that no call took (JSON-RPC
        and XML-RPC write each answer after its call). Nothing when the request did not
        decode."""
        if self.decode is not None and self.encode is None:
            now = perf_counter()
            self.encode = max(0.0, now - self.mark - self.busy)
            self.mark = now

    def call(self, target: str, started: float) -> None:
        """A call to `target` (input: only its `timing_desc` is kept), begun at
        `started`, has ended."""
        took = perf_counter() - started
        self.busy += took
        if len(self.calls) < MAX_TIMED_CALLS:
            self.calls.append((timing_desc(target), took))
        else:
            self.more += 1
            self.more_busy += took

    def watching(self, services: Services) -> Services:
        """`services` whose `call`s are timed as calls (the RPC protocols call through it)."""
        return cast(Services, _Watched(services, self))

    def metrics(self) -> list[tuple[str, str | None, float]]:
        """(name, desc, seconds) of each metric, in order, the total last (until now)."""
        out: list[tuple[str, str | None, float]] = []
        if self.decode is not None:
            out.append(("decode", None, self.decode))
        out += [("call", desc, took) for desc, took in self.calls]
        if self.more:
            out.append(("calls", f"{self.more} more", self.more_busy))
        if self.encode is not None:
            out.append(("encode", None, self.encode))
        if self.gzip is not None:
            out.append(("gzip", None, self.gzip))
        out.append(("total", None, perf_counter() - self.started))
        return out

    @staticmethod
    def header(metrics: Iterable[tuple[str, str | None, float]]) -> str:
        """The `Server-Timing` value of `metrics` (durations in milliseconds)."""
        return ", ".join(
            f'{name};desc="{desc}";dur={took * 1000:.3f}' if desc is not None else f"{name};dur={took * 1000:.3f}"
            for name, desc, took in metrics
        )

    @staticmethod
    def log_line(metrics: Iterable[tuple[str, str | None, float]]) -> str:
        """The same figures for the log: `decode 0.123 ms, call EchoService.echo 0.045 ms, ...`."""
        return ", ".join(f"{name} {desc} {took * 1000:.3f} ms" if desc is not None else f"{name} {took * 1000:.3f} ms" for name, desc, took in metrics)


class _Watched:
    """A `Services` whose calls are timed into a `Timings`; anything else is the
    services' own."""

    __slots__ = ("_services", "_timings")

    def __init__(self, services: Services, timings: Timings) -> None:
        self._services = services
        self._timings = timings

    async def call(
        self, target: str, args: Iterable[Any] = (), context: Any = None, kwargs: Mapping[str, Any] | None = None
    ) -> Any:
        started = perf_counter()
        try:
            return await self._services.call(target, args, context, kwargs)
        finally:
            self._timings.call(target, started)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._services, name)
