"""The gateway as an RSGI app (granian's own interface: `granian --interface rsgi`,
`amfkit serve --server granian`; `gateway.__rsgi__` is `app`): the short path as under
ASGI, for a plain AMF POST that declares its length (with the CORS headers of the
gateway's `cors`); everything else is the ASGI app's, run through `amfkit.rsgi` (the same
answers, WebSocket, streaming and CORS included)."""

from __future__ import annotations

from typing import Any

from ... import rsgi as _bridge
from .. import amf
from .. import http as _http
from .plain import accepts_type, answer
from .served import Served

__all__ = ["app"]


async def app(gateway: Served, scope: Any, protocol: Any) -> None:
    """The RSGI application.

    The short path as under ASGI (a plain AMF POST with its `Content-Length`, the body
    read whole under the body deadline); everything else is the ASGI app's, run
    through `amfkit.rsgi` (the same answers, WebSocket and streaming included)."""
    if scope.proto == "http" and scope.method == "POST" and not scope.query_string:
        accept = _accepts(gateway, scope.path, scope.headers)
        if accept is not None:
            timer = gateway.body_timer
            task = timer.start()
            try:
                body = await _http.within_deadline(timer, task, protocol())
            except _http.HTTPError as e:
                status, headers, text = _http.refused(e)
                cors = gateway.cors
                if cors is not None:
                    headers = [*headers, *cors.actual(scope.headers.get("origin"))]
                _bridge.respond(protocol, (status, headers, text))
                return
            except _bridge.Closed:
                return  # the client went away
            finally:
                timer.stop(task)
            # The plain answer's headers under RSGI: `plain.ok`'s (and CORS's).
            cors = gateway.cors
            extra = cors.actual(scope.headers.get("origin")) if cors is not None else ()
            _bridge.respond(protocol, await answer(gateway, amf.handle(body, gateway, receive=_bridge.disconnected(protocol)), accept, extra))
            return
    await _bridge.serve(gateway, scope, protocol)


def _accepts(gateway: Served, path: str, headers: Any) -> str | None:
    """`plain.accepts` for an RSGI request (its headers a mapping of lowercase names),
    which must declare its length."""
    length = headers.get("content-length")
    if length is None or not length.isdigit() or int(length) > gateway.max_body_size:
        return None
    if "content-encoding" in headers:
        return None
    if accepts_type(gateway, path, headers.get("content-type")) is None:
        return None
    accept: str = headers.get("accept-encoding") or ""
    return accept
