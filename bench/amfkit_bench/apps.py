"""The servers the experiments start, as importable apps for uvicorn and granian: the
HTTP floor (`bare`, `bare_wsgi`, `bare_rsgi`), Py3AMF's gateway (`py3amf_wsgi`), the
messaging server (`messaging`) and the asset server (`assets`), each set by
`AMFKIT_BENCH_*` environment variables (docs/benchmarks.md, "The lab's code").
"""

from __future__ import annotations

import functools

import os
import time
from typing import Any

from amfkit.remoting.http import serve_lifespan
from amfkit.remoting.services import Context

__all__ = [
    "MessagingBench",
    "assets",
    "bare",
    "bare_rsgi",
    "bare_wsgi",
    "echo_request",
    "echo_value",
    "messaging",
    "messaging_gateway",
    "py3amf_wsgi",
]


def echo_value() -> dict[str, Any]:
    """The small value the echo benchmark sends and gets back."""
    return {"id": 42, "name": "tile", "tags": ["a", "b"], "ratio": 0.5}


def echo_request(version: int = 3) -> bytes:
    """An AMF packet calling EchoService.echo(echo_value())."""
    from amfkit.remoting import packet

    return packet.encode(packet.Envelope(version, bodies=[packet.Body("EchoService.echo", "/1", [echo_value()])]))


@functools.cache
def _echo_answer() -> bytes:
    """The echo call's pre-encoded answer (encoded once per process)."""
    from amfkit.remoting import packet

    return packet.encode(packet.Envelope(3, bodies=[packet.Body("/1/onResult", "null", echo_value())]))


async def bare(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Read the request, answer the pre-encoded echo result."""
    if scope["type"] == "lifespan":
        return await serve_lifespan(receive, send)
    answer = _echo_answer()
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/x-amf"), (b"content-length", str(len(answer)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": answer})


def bare_wsgi(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """`bare` for WSGI."""
    answer = _echo_answer()
    length = environ.get("CONTENT_LENGTH")
    if length:
        environ["wsgi.input"].read(int(length))
    start_response("200 OK", [("content-type", "application/x-amf"), ("content-length", str(len(answer)))])
    return [answer]


async def bare_rsgi(scope: Any, protocol: Any) -> None:
    """`bare` for RSGI (granian's interface)."""
    answer = _echo_answer()
    await protocol()
    protocol.response_bytes(200, [("content-type", "application/x-amf"), ("content-length", str(len(answer)))], answer)


def _py3amf_app() -> Any:
    from amfkit.demo.services import EchoService, TileService
    from .peers import import_py3amf

    WSGIGateway = import_py3amf("remoting.gateway.wsgi").remoting.gateway.wsgi.WSGIGateway

    db = os.environ.get("AMFKIT_BENCH_DB") or None
    return WSGIGateway({"EchoService": EchoService(), "TileService": TileService(db)}, debug=False)


class _Lazy:
    """Build Py3AMF's gateway in the worker that serves it, on its first request."""

    def __init__(self) -> None:
        self._app: Any = None

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if self._app is None:
            self._app = _py3amf_app()
        return self._app(environ, start_response)


py3amf_wsgi = _Lazy()


# --- the messaging benchmark's server ---------------------------------------------------

#: The destination the messaging benchmark publishes to and subscribes to.
BENCH_DESTINATION = "prices"


class MessagingBench:
    """The messaging benchmark's publisher, called over HTTP by its load generator."""

    def publish(self, count: int, first: int, size: str, context: Context) -> int:
        """Publish `count` InstrumentPrice messages of `size` to "prices", numbered from
        `first`: message `seq` has body `instrument_price(size, seq)` and headers `seq`
        and `sent` (this process's `time.time()` taken just before its publish, for the
        publish-to-delivery latency). Returns `count`."""
        from amfkit.demo.services import instrument_price

        for seq in range(first, first + count):
            body = instrument_price(size, seq)
            context.publish(BENCH_DESTINATION, body, headers={"seq": seq, "sent": time.time()})
        return count

    def stats(self, context: Context) -> dict[str, int]:
        """The broker's table sizes (clients, consumers, queued messages, waiters)."""
        stats: dict[str, int] = context.messaging.broker.stats()
        return stats


def messaging_gateway(poll_wait: float = 25.0, queue_size: int = 1000, broker: str = "memory://") -> Any:
    """A gateway serving `MessagingBench`, with messaging on destination "prices" on the
    broker at `broker` (a URL)."""
    from amfkit.messaging import Messaging
    from amfkit.remoting.gateway import Gateway

    messaging_ = Messaging([BENCH_DESTINATION], poll_wait=poll_wait, queue_size=queue_size, broker=broker)
    return Gateway({"MessagingBench": MessagingBench()}, messaging=messaging_)


class _LazyMessaging:
    """The messaging gateway, built in the worker on its first ASGI call from the
    environment; at lifespan shutdown its parked polls are answered (`Messaging.close`)."""

    def __init__(self) -> None:
        self._app: Any = None

    def _gateway(self) -> Any:
        if self._app is None:
            self._app = messaging_gateway(
                float(os.environ.get("AMFKIT_BENCH_POLL_WAIT", "25")),
                int(os.environ.get("AMFKIT_BENCH_QUEUE_SIZE", "1000")),
                os.environ.get("AMFKIT_BENCH_BROKER") or "memory://",
            )
        return self._app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        app = self._gateway()
        if scope["type"] != "lifespan":
            return await app(scope, receive, send)
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await app.messaging.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


messaging = _LazyMessaging()



def _assets_gateway() -> Any:
    import json

    from amfkit.assets import AssetStore
    from amfkit.remoting import Gateway

    options = json.loads(os.environ.get("AMFKIT_BENCH_ASSETS_OPTIONS") or "{}")
    store = AssetStore.open(os.environ["AMFKIT_BENCH_ASSETS"], cache=os.environ.get("AMFKIT_BENCH_ASSETS_CACHE") or None, **options)
    return Gateway({}, assets=store, assets_fast_path=os.environ.get("AMFKIT_BENCH_ASSETS_FAST", "1") != "0")


def __getattr__(name: str) -> Any:
    """`assets`, the asset benchmark's server: a `Gateway` with no services and the store
    `AMFKIT_BENCH_ASSETS` names (with the cache `AMFKIT_BENCH_ASSETS_CACHE`, the store
    options `AMFKIT_BENCH_ASSETS_OPTIONS` as JSON, and the file system fast path off when
    `AMFKIT_BENCH_ASSETS_FAST` is 0), made when uvicorn imports it in each worker (a
    Gateway object, so that amfkit's HTTP protocol finds its fast path)."""
    if name == "assets":
        gateway = globals()["assets"] = _assets_gateway()
        return gateway
    raise AttributeError(name)
