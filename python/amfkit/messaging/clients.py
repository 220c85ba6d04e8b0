"""The FlexClients one process has greeted, and the push channels attached to them
(docs/messaging.md, "Streaming and WebSocket").

A Flex channel pings before anything else: the ping gives the client its FlexClient id
(`DSId`) and says whether it reads small forms (`DSMessagingVersion`). `Clients`
remembers both, for the channels that push: an HTTP stream may open only for a client
that pinged (BlazeDS checks the same), and what it pushes is in small forms when the
client announced them. The table is bounded (`max_known`, least recently seen forgotten
first) and forgets a client idle for `idle` seconds, as the broker does.

A push channel (an HTTP stream, a WebSocket) is attached to its client while it is open:
one per client. A subscribe `poke`s it (a client the broker did not know has something
to wait for now), a disconnect command tells it, and `Messaging.close` ends them all.

    >>> clients = Clients(max_known=2, idle=60.0)
    >>> clients.greet("client-1", small=True)
    >>> clients.known("client-1"), clients.small("client-1"), clients.small("client-2")
    (True, True, False)
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable, Protocol

__all__ = ["Channel", "Clients", "MAX_KNOWN_CLIENTS"]

#: FlexClients one process remembers from their pings (past it the least recently seen
#: is forgotten first): the broker's own `max_clients` default.
MAX_KNOWN_CLIENTS = 100_000


class Channel(Protocol):
    """A push channel attached to a FlexClient. Every method is called from any thread
    and must not block."""

    #: "stream" (HTTP streaming) or "websocket".
    kind: str

    def poke(self) -> None:
        """The client subscribed: the broker knows it now."""

    def disconnected(self) -> None:
        """The client disconnected (a disconnect command): its subscriptions are gone."""

    def end(self) -> None:
        """Close the channel (the server shuts down, or another channel displaced it)."""


class Clients:
    """Greeted FlexClients (their small-forms flag) and their push channels; thread-safe."""

    def __init__(self, *, max_known: int = MAX_KNOWN_CLIENTS, idle: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        if max_known < 1 or not idle > 0:
            raise ValueError("max_known must be at least 1 and idle positive")
        self.max_known = int(max_known)
        self.idle = float(idle)
        self._clock = clock
        self._lock = threading.Lock()
        self._known: OrderedDict[str, tuple[bool, float]] = OrderedDict()  # id -> (small, last seen); oldest first
        self._channels: dict[str, Channel] = {}
        self._streams = 0

    # --- greeted clients ---------------------------------------------------------------

    def greet(self, client_id: str, *, small: bool) -> None:
        """Note a client's ping (or login): it is known, and reads small forms when it
        announced them."""
        now = self._clock()
        with self._lock:
            self._known[client_id] = (small, now)
            self._known.move_to_end(client_id)
            self._expire(now)

    def touch(self, client_id: str) -> None:
        """Note activity of a known client (a live channel keeps it known)."""
        with self._lock:
            entry = self._known.get(client_id)
            if entry is not None:
                self._known[client_id] = (entry[0], self._clock())
                self._known.move_to_end(client_id)

    def known(self, client_id: str) -> bool:
        """Whether the client pinged and was not forgotten since."""
        with self._lock:
            entry = self._known.get(client_id)
            return entry is not None and entry[1] > self._clock() - self.idle

    def small(self, client_id: str) -> bool:
        """Whether the client announced small forms at its ping."""
        entry = self._known.get(client_id)
        return entry is not None and entry[0]

    def _expire(self, now: float, budget: int = 16) -> None:
        known = self._known
        while len(known) > self.max_known:
            known.popitem(last=False)
        deadline = now - self.idle
        while known and budget > 0:
            client_id, (_, seen) = next(iter(known.items()))
            if seen > deadline:
                break
            del known[client_id]
            budget -= 1

    # --- push channels -----------------------------------------------------------------

    @property
    def streams(self) -> int:
        """The HTTP streams open now."""
        return self._streams

    def channels(self) -> int:
        """The push channels (streams and WebSockets) attached now."""
        with self._lock:
            return len(self._channels)

    def channel(self, client_id: str) -> Channel | None:
        """The client's push channel, if one is attached."""
        with self._lock:
            return self._channels.get(client_id)

    def attach(self, client_id: str, channel: Channel, *, max_streams: int | None = None, displace: bool = False) -> tuple[bool, Channel | None]:
        """Attach `channel` to the client: (attached, the channel it displaced). With
        another channel attached already, `displace` takes its place (the caller ends
        the displaced one), else nothing is attached. A stream is not attached past
        `max_streams` streams."""
        with self._lock:
            old = self._channels.get(client_id)
            if old is not None and not displace:
                return False, None
            is_stream = channel.kind == "stream"
            if is_stream and max_streams is not None and self._streams - (old is not None and old.kind == "stream") >= max_streams:
                return False, None
            if old is not None and old.kind == "stream":
                self._streams -= 1
            self._channels[client_id] = channel
            if is_stream:
                self._streams += 1
            return True, old

    def detach(self, client_id: str, channel: Channel) -> bool:
        """Detach `channel` if it is still the client's; whether it was."""
        with self._lock:
            if self._channels.get(client_id) is not channel:
                return False
            del self._channels[client_id]
            if channel.kind == "stream":
                self._streams -= 1
            return True

    def poke(self, client_id: str) -> None:
        """The client subscribed: tell its channel."""
        channel = self._channels.get(client_id)
        if channel is not None:
            channel.poke()

    def disconnected(self, client_id: str) -> None:
        """The client disconnected: tell its channel."""
        channel = self._channels.get(client_id)
        if channel is not None:
            channel.disconnected()

    def end_all(self) -> None:
        """End every channel (at shutdown)."""
        with self._lock:
            channels = list(self._channels.values())
        for channel in channels:
            channel.end()
