"""The gateway as an ASGI 3 app (`gateway(scope, receive, send)` is `app`): its short path
for a plain AMF POST, messaging's HTTP streaming and WebSocket, GET and HEAD of assets,
and everything else through `http.asgi` to the routing core (`Gateway._respond`). With
the gateway's `cors`, a preflight is answered first and every other answer, whichever
path gives it, carries the CORS headers; a WebSocket handshake's `Origin` is checked
(`cors.websocket_allowed`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .. import amf, cors as _cors
from .. import http as _http
from ..._text import error_text, shown
from .plain import Resumed, accepts, failure
from .served import Served

__all__ = ["app"]

logger = logging.getLogger("amfkit.gateway")

_CONTENT_TYPE_AMF = (b"content-type", amf.CONTENT_TYPE.encode())


async def app(gateway: Served, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
    """The ASGI application.

    An AMF POST to the gateway's path with no query string and no Content-Encoding,
    whose body arrives in one message, takes a short path here (the request path is
    the HTTP floor plus what the gateway must do); everything else goes through the
    general core, which answers the same way.
    """
    kind = scope["type"]
    if kind == "http" and gateway.cors is not None:
        with_cors = await _cors_http(gateway.cors, scope, send)
        if with_cors is None:
            return  # a preflight, answered
        send = with_cors
    if kind == "http" and scope["method"] == "POST" and not scope.get("query_string"):
        accept = accepts(gateway, scope["path"], scope["headers"])
        if accept is not None:
            # The body is read eagerly: when the server has it already (a small
            # request), no deadline is needed; else the rest of the read is awaited
            # under the body deadline.
            timer = gateway.body_timer
            task = None
            reading = receive().__await__()
            try:
                try:
                    pending = next(reading)
                except StopIteration as done:
                    message = done.value
                else:
                    task = timer.start()
                    message = await _http.within_deadline(timer, task, Resumed(reading, pending))
            except _http.HTTPError as e:
                await _http.send_response(send, _http.refused(e))
                return
            body = message.get("body", b"")
            if message["type"] == "http.request" and not message.get("more_body") and len(body) <= gateway.max_body_size:
                timer.stop(task)  # else the general path goes on with the same deadline
                try:
                    out = await amf.handle(body, gateway, receive=receive)
                except Exception as e:
                    await _http.send_response(send, failure(e))
                    return
                # The plain answer's headers under ASGI.
                out, coding = _http.compress(out, accept, gateway.gzip_threshold, gateway.gzip_level)
                headers = [_CONTENT_TYPE_AMF, *coding.raw, (b"content-length", str(len(out)).encode())]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": out})
                return
            receive = _replay(message, receive)
    elif kind == "http":
        method = scope["method"]
        if method == "POST":
            qs = scope.get("query_string")
            if qs and b"command=" in qs and gateway._on_path(scope["path"]):
                from ...messaging import streaming

                if streaming.command_of(qs.decode("latin-1")) is not None:
                    await streaming.serve(gateway, scope, receive, send)
                    return
        elif (method == "GET" or method == "HEAD") and gateway.assets is not None and gateway.assets.under(scope["path"]):
            await gateway.assets.asgi(scope, receive, send)
            return
    elif kind == "websocket":
        await _websocket(gateway, scope, receive, send)
        return
    elif kind == "lifespan":
        await _lifespan(gateway, receive, send)
        return
    scheme = scope.get("scheme") or "http"

    def core(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Awaitable[_http.Response]:
        return gateway._respond(method, path, headers, body, receive=receive, scheme=scheme)

    await _http.asgi(core, gateway.max_body_size, scope, receive, send, gateway.body_timer)


async def _websocket(gateway: Served, scope: dict[str, Any], receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
    """A WebSocket on the gateway's path is the messaging channel, for clients that send
    no `Origin`, pages of the gateway's own origin and of those its `cors` allows;
    without messaging, on another path or from another origin, the handshake is refused
    (HTTP 403)."""
    if gateway.messaging is not None and gateway._on_path(scope["path"]):
        origin = host = None
        for k, v in scope["headers"]:
            if k == b"origin":
                origin = v.decode("latin-1")
            elif k == b"host":
                host = v.decode("latin-1")
        if _cors.websocket_allowed(gateway.cors, origin, host, scope.get("scheme")):
            from ...messaging import websocket

            await websocket.serve(gateway, scope, receive, send)
            return
        logger.info("WebSocket refused: origin %s is not allowed", shown(origin))
    if (await receive()).get("type") == "websocket.connect":
        await send({"type": "websocket.close", "code": 1008})


async def _lifespan(gateway: Served, receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
    """The ASGI lifespan: nothing to start; at shutdown the gateway closes what it opened
    (`Gateway.close`), and a failure there is reported as `lifespan.shutdown.failed`."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            try:
                gateway.close()
            except Exception as e:
                logger.exception("closing the gateway failed")
                await send({"type": "lifespan.shutdown.failed", "message": error_text(e)})
            else:
                await send({"type": "lifespan.shutdown.complete"})
            return


async def _cors_http(cors: _cors.CORSPolicy, scope: dict[str, Any], send: Callable[[Any], Any]) -> Callable[[Any], Any] | None:
    """For an HTTP request under a CORS policy: None when it was a preflight (answered
    here), else a `send` that adds the CORS headers to the response's start."""
    origin = requested = None
    for k, v in scope["headers"]:
        if k == b"origin":
            origin = v
        elif k == b"access-control-request-method":
            requested = v
    if scope["method"] == "OPTIONS" and origin is not None and requested is not None:
        headers = None
        private = False
        for k, v in scope["headers"]:
            if k == b"access-control-request-headers":
                headers = v.decode("latin-1") if headers is None else headers + ", " + v.decode("latin-1")
            elif k == b"access-control-request-private-network":
                private = True
        await _http.send_response(send, cors.preflight(origin.decode("latin-1"), requested.decode("latin-1"), headers, private))
        return None
    extra = cors.raw(origin)
    if not extra:
        return send

    async def sending(message: Any) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return sending


def _replay(message: dict[str, Any], receive: Callable[[], Any]) -> Callable[[], Any]:
    """An ASGI `receive` that gives `message` (already received) first."""
    pending = [message]

    async def again() -> Any:
        if pending:
            return pending.pop()
        return await receive()

    return again
