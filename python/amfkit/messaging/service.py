"""`Messaging`: a gateway's destinations, its broker and its polling rules, and the
server's own `publish` (docs/messaging.md).

    gateway = Gateway(services, messaging=Messaging(["prices", "chat"]))
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .._text import shown
from ..remoting.messages import AbstractMessage, new_id
from ..remoting.services import Fault, Principal
from . import commands
from .broker import Broker, Message, message_fields, now_ms
from .clients import Clients
from .destinations import Destination
from .parking import Parking

logger = logging.getLogger("amfkit.messaging")

if TYPE_CHECKING:
    from ..remoting.packet import Body
    from ..remoting.request import Answer, Request

__all__ = ["DEFAULT_POLL_WAIT", "DEFAULT_STREAM_HEARTBEAT", "Messaging"]

#: Seconds a long-poll is held: under the minute after which proxies and load balancers
#: commonly cut an idle connection.
DEFAULT_POLL_WAIT = 25.0

#: Seconds an HTTP stream stays silent before a heartbeat byte: Flex's and BlazeDS's
#: habit is well under the minute after which proxies cut an idle connection.
DEFAULT_STREAM_HEARTBEAT = 15.0

#: The messaging version announced on a client's ping: 1.0 lets Flex send small forms.
MESSAGING_VERSION = 1.0

#: Headers a published copy never carries: the sender's client id and channel
#: (BlazeDS's MessageService.pushMessageToClient strips them) and its endpoint check
#: (MessageBroker.routeMessageToService removes it).
STRIPPED_HEADERS = ("DSId", "DSEndpoint", "DSValidateEndpoint")


class Messaging:
    """Publish-subscribe for a `Gateway`: `Gateway(services, messaging=Messaging([...]))`.

    - `destinations`: names or `Destination`s (access rules, subtopics, ttl).
    - `broker`: a URL (`"memory://"`, this process; `"shm://NAME"`, the processes of this
      host; `"redis://HOST:PORT/DB"`, every host) or a `Broker`; `queue_size`,
      `client_timeout` and `broker_options` configure a broker opened from a URL.
    - `poll_wait`: seconds a client's poll is held until a message arrives (long-polling);
      0 answers every poll at once (plain polling).
    - `poll_interval`: seconds a client waits before its next poll, sent as `DSPollWait`
      on poll answers; None: 1 ms after a long-poll (poll again at once), no hint after
      a plain poll (the client's own interval).
    - `max_parked`: polls one process holds at once (more are answered at once, with a
      3 s `DSPollWait`); `max_parked_per_client`: per client (a newer poll displaces the
      oldest, answered `DSNoOpPoll`).
    - `queue_size`: messages queued per client (past it the oldest is dropped and the
      consumer told); `client_timeout`: seconds after which an idle client and its
      subscriptions are forgotten.
    - `stream_heartbeat`: seconds an HTTP stream may stay silent before a heartbeat
      byte (0x00) is written; `max_streams`: HTTP streams one process holds open (more
      are refused, 503). Streams and WebSockets are ASGI only (docs/messaging.md,
      "Streaming and WebSocket").
    """

    version = MESSAGING_VERSION

    def __init__(
        self,
        destinations: Iterable[str | Destination],
        *,
        broker: str | Broker = "memory://",
        poll_wait: float = DEFAULT_POLL_WAIT,
        poll_interval: float | None = None,
        max_parked: int = 10_000,
        max_parked_per_client: int = 1,
        queue_size: int = 1000,
        client_timeout: float = 300.0,
        broker_options: Mapping[str, Any] | None = None,
        stream_heartbeat: float = DEFAULT_STREAM_HEARTBEAT,
        max_streams: int = 10_000,
    ) -> None:
        self.destinations: dict[str, Destination] = {}
        if isinstance(destinations, (str, Destination)):
            raise TypeError("destinations is a list of names or Destinations")
        for d in destinations:
            dest = d if isinstance(d, Destination) else Destination(d)
            if dest.name in self.destinations:
                raise ValueError(f"destination {dest.name!r} is given twice")
            self.destinations[dest.name] = dest
        if not math.isfinite(poll_wait) or poll_wait < 0:
            raise ValueError("poll_wait must be 0 (plain polling) or more seconds")
        if poll_interval is not None and not (poll_interval > 0 and math.isfinite(poll_interval)):
            raise ValueError("poll_interval must be positive seconds, or None")
        if not client_timeout > poll_wait:
            raise ValueError("client_timeout must be longer than poll_wait (a parked poll keeps its client alive)")
        if not (stream_heartbeat > 0 and math.isfinite(stream_heartbeat)):
            raise ValueError("stream_heartbeat must be positive seconds")
        if max_streams < 0:
            raise ValueError("max_streams must be 0 or more")
        self.closed = False
        self.poll_wait = float(poll_wait)
        self.poll_interval = poll_interval
        self.parking = Parking(max_parked, max_parked_per_client)
        self.stream_heartbeat = float(stream_heartbeat)
        self.max_streams = int(max_streams)
        if isinstance(broker, Broker):
            self.broker = broker
        else:
            options = {"queue_size": queue_size, "client_timeout": client_timeout, **(broker_options or {})}
            if isinstance(broker, str) and broker.lower().startswith("shm://"):
                # What tells this application's shared memory from another's of the same name.
                options.setdefault("app", "messaging:" + ",".join(sorted(self.destinations)))
            self.broker = Broker.open(broker, **options)
        timeout = getattr(self.broker, "client_timeout", client_timeout)
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            timeout = client_timeout
        #: Seconds between the touches an open push channel gives its client, so that a
        #: live channel never lets it expire.
        self.keepalive = float(timeout) / 3
        #: The FlexClients greeted by a ping, and the push channels attached to them.
        self.clients = Clients(idle=float(timeout))

    def destination(self, name: Any) -> Destination:
        """The destination of that name; a `Fault` (BlazeDS's MessageBroker error 10004,
        code `Server.Processing`) when there is none."""
        dest = self.destinations.get(name) if isinstance(name, str) else None
        if dest is None:
            raise Fault(f"the supplied destination id is not registered with any service: {shown(name)}", code="Server.Processing")
        return dest

    def publish(
        self,
        destination: str,
        body: Any,
        *,
        headers: Mapping[str, Any] | None = None,
        subtopic: str | None = None,
        ttl: float | None = None,
    ) -> str:
        """Publish `body` from the server to `destination`'s subscribers (send rules do
        not apply: this is server code); returns the message id. `headers` are what
        selectors see, `subtopic` a dotted name (no wildcard), `ttl` seconds the message
        lives (None: forever; a destination's own ttl replaces it). Never blocks: a slow
        subscriber loses its oldest messages instead."""
        dest = self.destination(destination)
        fields, subtopics, ttl_ms = message_fields(headers, subtopic, ttl)
        if subtopics and not dest.allow_subtopics:
            raise ValueError(f"destination {dest.name!r} does not allow subtopics")
        message = self.message(dest, body, fields, subtopics, ttl_ms=ttl_ms)
        self.broker.publish(message)
        return message.message_id

    def message(
        self,
        dest: Destination,
        body: Any,
        headers: dict[str, Any],
        subtopics: tuple[str, ...],
        *,
        ttl_ms: int | None = None,
        message_id: str | None = None,
        correlation_id: str | None = None,
    ) -> Message:
        """The broker's record of a message sent to `dest` now: the destination's ttl
        replaces the sender's; the sender's client id headers are stripped."""
        for name in STRIPPED_HEADERS:
            headers.pop(name, None)
        if dest.ttl is not None:
            ttl_ms = round(dest.ttl * 1000)
        return Message(
            dest.name,
            body,
            headers,
            subtopics,
            message_id=message_id or new_id(),
            timestamp=now_ms(),
            time_to_live=ttl_ms or 0,
            correlation_id=correlation_id,
        )

    def authorize(self, allowed: bool, principal: Principal | None) -> None:
        """A `Fault` unless `allowed`: as BlazeDS's LoginManager.checkConstraint,
        `Client.Authentication` (error 10056) without a principal, else
        `Client.Authorization` (error 10055)."""
        if allowed:
            return
        if principal is None:
            raise Fault("login required before authorization can proceed", code="Client.Authentication")
        raise Fault(f"access denied: {shown(principal.name)} is not authorized", code="Client.Authorization")

    def describe(self, url: str, ws_url: str | None = None) -> dict[str, Any]:
        """The messaging part of the gateway's discovery document: the channels (their
        Flex class and URL; streaming and WebSocket when `ws_url` is given, the gateway
        serving ASGI), the destinations and the polling rules."""
        polling = "long-polling" if self.poll_wait > 0 and self.parking.max_per_client > 0 else "polling"
        channels: list[dict[str, Any]] = [{"type": polling, "class": "mx.messaging.channels.AMFChannel", "url": url}]
        if ws_url is not None:
            sep = "&" if "?" in url else "?"
            channels.append({"type": "streaming", "class": "mx.messaging.channels.StreamingAMFChannel", "url": f"{url}{sep}command=open&version=1"})
            channels.append({"type": "websocket", "class": None, "url": ws_url})
        destinations = [
            {
                "name": d.name,
                "allow_subtopics": d.allow_subtopics,
                "ttl": d.ttl,
                "send_roles": None if d.send_roles is None else sorted(d.send_roles),
                "subscribe_roles": None if d.subscribe_roles is None else sorted(d.subscribe_roles),
            }
            for d in self.destinations.values()
        ]
        return {
            "channels": channels,
            "destinations": destinations,
            "poll_wait": self.poll_wait,
            "poll_interval": self.poll_interval,
            "stream_heartbeat": self.stream_heartbeat,
        }

    def greet(self, client_id: str, small: bool) -> None:
        """A client pinged (or logged in): remember it, and whether it reads small forms;
        with a shared broker, every worker learns it too (a stream may open on any)."""
        self.clients.greet(client_id, small=small)
        note = getattr(self.broker, "note_greeting", None)
        if note is not None:
            try:
                note(client_id, small)
            except Exception as e:  # the ping is still answered; a stream may then need this worker
                logger.warning("could not share the greeting of FlexClient %s: %s", shown(client_id), e)

    async def knows(self, client_id: str) -> bool | None:
        """Whether a client pinged this process, or (with a shared broker) any other;
        None when the shared store cannot say now (Redis away)."""
        if self.clients.known(client_id):
            return True
        lookup = getattr(self.broker, "greeting", None)
        if lookup is None:
            return False
        try:
            small = await asyncio.to_thread(lookup, client_id)
        except Exception as e:
            logger.warning("could not look up FlexClient %s in the shared store: %s", shown(client_id), e)
            return None
        if small is None:
            return False
        self.clients.greet(client_id, small=small)
        return True

    async def answer(self, request: Request, body: Body, message: AbstractMessage, client_id: str, principal: Principal | None, target: str) -> Answer:
        """The gateway's entry: the answer to a messaging command or a sent message."""
        return await commands.answer(self, request, body, message, client_id, principal, target)

    async def close(self) -> None:
        """Answer every parked poll (empty), end every stream (a DISCONNECT frame) and
        WebSocket (closed 1001), and release the broker: at shutdown."""
        self.closed = True
        self.clients.end_all()
        await self.broker.close()
