"""A gateway with Flex messaging, for tests that talk to it over real sockets (the
client's Consumers and Producers: tests/messaging/test_client_messaging.py).

    with serve_asgi(messaging_gateway(poll_wait=1)) as server:
        client = Client(server.url + "/gateway")

Destinations: "prices" and "chat" (subtopics allowed), "plain" (no subtopics), "members"
(only principals with the role "member" subscribe; the authenticator knows alice,
password "s3cret", a member). The service `Ticker.quote(symbol, bid)` publishes to
"prices" from the server side (subtopic "fx.eur", header `symbol`); `Ticker.echo(x)`
returns x.
"""

from __future__ import annotations

from typing import Any

from amfkit.messaging import Destination, Messaging
from amfkit.remoting import Context, Gateway, Principal

__all__ = ["Ticker", "authenticate", "messaging_gateway"]


class Ticker:
    """Server code that publishes, as an application's does."""

    def quote(self, symbol: str, bid: float, context: Context) -> str:
        return context.publish("prices", {"symbol": symbol, "bid": bid}, headers={"symbol": symbol}, subtopic="fx.eur")

    def echo(self, value: Any) -> Any:
        return value


def authenticate(userid: Any, password: Any) -> Principal | None:
    if userid == "alice" and password == "s3cret":
        return Principal("alice", frozenset({"member"}))
    return None


def messaging_gateway(*, poll_wait: float = 1.0, **options: Any) -> Gateway:
    """A Gateway with `Ticker` and messaging on the destinations above; `options` go to
    `Messaging` (`queue_size`, `stream_heartbeat`, ...)."""
    destinations: list[str | Destination] = ["prices", "chat", Destination("plain", allow_subtopics=False), Destination("members", subscribe_roles=["member"])]
    messaging = Messaging(destinations, poll_wait=poll_wait, **options)
    return Gateway({"Ticker": Ticker()}, messaging=messaging, authenticator=authenticate)
