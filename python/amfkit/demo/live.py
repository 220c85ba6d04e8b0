"""The demo's live data (`amfkit serve --demo`): a `prices` destination fed by a
price feed, and a `chat` destination that clients send to and read from.

`PriceFeed(messaging)` publishes an InstrumentPriceSmall (the Protocol Buffers
article's message) for each of three currency pairs every `interval` seconds, with the
pair in the `symbol` header (for selectors such as `symbol = 'EURUSD'`) and a subtopic
per pair (`fx.eur`, `fx.gbp`, `fx.jpy`). Every price has a subtopic, so a Consumer
subscribes with one: `fx.*` for all pairs (a subscription without a subtopic gets only
messages without one, as in BlazeDS). `ChatService.post`
publishes a chat line from the server side; a Flex Producer sends to `chat` directly.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from ..messaging import Destination, Messaging
from ..remoting.services import Context, Fault
from .services import instrument_price

__all__ = ["ChatService", "PriceFeed", "PAIRS", "demo_messaging"]

#: (symbol header, subtopic, first bid) of each pair the feed quotes.
PAIRS = (("EURUSD", "fx.eur", 1.0850), ("GBPUSD", "fx.gbp", 1.2650), ("USDJPY", "fx.jpy", 151.20))

MAX_CHAT_TEXT = 1000


def demo_messaging(**options: Any) -> Messaging:
    """The demo's destinations: `prices` (only the server publishes: clients may
    subscribe, not send) and `chat` (anyone subscribes and sends). `options` go to
    `Messaging`."""
    return Messaging([Destination("prices", send_roles=()), Destination("chat")], **options)


class PriceFeed:
    """A daemon thread publishing a price for each of `PAIRS` every `interval` seconds
    until `stop()`. Publishing never blocks (a slow subscriber loses its oldest
    messages), so the feed keeps its pace whoever listens."""

    def __init__(self, messaging: Messaging, interval: float = 0.25) -> None:
        if not interval > 0:
            raise ValueError("interval must be positive seconds")
        self.messaging = messaging
        self.interval = interval
        self.published = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> PriceFeed:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="amfkit-demo-prices", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def tick(self) -> None:
        """Publish one price per pair (what the thread does every `interval`)."""
        n = self.published
        for i, (symbol, subtopic, first) in enumerate(PAIRS):
            price = instrument_price("small", n + i)
            # A small deterministic walk around the first bid.
            bid = round(first * (1 + ((n * 7 + i * 13) % 41 - 20) / 10_000), 5)
            self.messaging.publish("prices", price, headers={"symbol": symbol, "bid": bid}, subtopic=subtopic)
        self.published = n + len(PAIRS)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.messaging.closed:
                return
            if self._leading():
                self.tick()

    def _leading(self) -> bool:
        """Whether this process runs the feed. On a shared broker every worker has a
        feed thread, and the one holding a lease in the shared store publishes (a
        worker that dies loses it within two seconds to another); on its own, always."""
        store = getattr(self.messaging.broker, "store", None)
        if store is None:
            return True
        now = time.time()
        key, me = "demo:feed", str(os.getpid()).encode()
        try:
            held = store.get(key)
            if held is not None:
                owner, _, until = held.partition(b" ")
                if owner != me and float(until) > now:
                    return False
            return bool(store.cas(key, held, me + b" " + repr(now + 2 * max(self.interval, 0.5)).encode(), 10.0))
        except Exception:  # the store away or a damaged lease: no feed from here now
            return False


class ChatService:
    """The chat destination's server side."""

    def post(self, name: str, text: str, *, context: Context) -> str:
        """Publish a chat line `{"user": name, "text": text}` to `chat` (header `user`);
        returns the message id."""
        if not isinstance(name, str) or not isinstance(text, str) or not name or len(text) > MAX_CHAT_TEXT:
            raise Fault(f"post(name, text): a name and a text of at most {MAX_CHAT_TEXT} characters", code="Client.Argument")
        return context.publish("chat", {"user": name, "text": text}, headers={"user": name})
