"""The servers the gateway benchmark runs, as importable ASGI/WSGI apps for uvicorn.

- `amfkit.benchlab.apps:bare` answers every POST with the same pre-encoded bytes (the
  echo call's answer): the HTTP floor, what a gateway costs nothing above.
- `amfkit.benchlab.apps:py3amf_wsgi` is Py3AMF's WSGI gateway over the same demo
  services (benchmark only: Py3AMF is never imported by amfkit itself).

Both read `AMFKIT_BENCH_DB` for the demo database path, as the demo gateway does
(`AMFKIT_DEMO_DB`).
"""

from __future__ import annotations

import os
from typing import Any

from ..remoting.http import serve_lifespan

__all__ = ["bare", "echo_request", "echo_value", "py3amf_wsgi"]


def echo_value() -> dict[str, Any]:
    """The small value the echo benchmark sends and gets back."""
    return {"id": 42, "name": "tile", "tags": ["a", "b"], "ratio": 0.5}


def echo_request(version: int = 3) -> bytes:
    """An AMF packet calling EchoService.echo(echo_value())."""
    from ..remoting import packet

    return packet.encode(packet.Envelope(version, bodies=[packet.Body("EchoService.echo", "/1", [echo_value()])]))


def _echo_answer() -> bytes:
    from ..remoting import packet

    return packet.encode(packet.Envelope(3, bodies=[packet.Body("/1/onResult", "null", echo_value())]))


_ANSWER: bytes | None = None


async def bare(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Read the request, answer the pre-encoded echo result."""
    global _ANSWER
    if scope["type"] == "lifespan":
        return await serve_lifespan(receive, send)
    if _ANSWER is None:
        _ANSWER = _echo_answer()
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/x-amf"), (b"content-length", str(len(_ANSWER)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": _ANSWER})


def _py3amf_app() -> Any:
    from ..demo.services import EchoService, TileService
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
