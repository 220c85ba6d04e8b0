"""One AMF remoting request: what its bodies share (packet headers, credentials, the
NetConnection session and the Flex clients' sessions, the response headers), and the
gateway settings it is answered with (docs/gateway.md)."""

from __future__ import annotations

import logging
import re
import traceback
from typing import Any, Awaitable, Callable, Protocol
from urllib.parse import parse_qsl

from .._text import error_text, shown
from .auth import Authenticator, authenticate, principal_of, stored
from .messages import AbstractMessage
from .packet import Body, Header
from .services import Fault, Principal, Services
from .sessions import PRINCIPAL_KEY, Session, SessionStore, new_session_id

__all__ = ["Answer", "ID", "Request", "Settings", "fault_of"]

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
