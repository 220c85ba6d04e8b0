"""RSGI, granian's own interface, for an ASGI app: `await serve(app, scope, protocol)`
runs an ASGI 3 app for one RSGI HTTP request or WebSocket (the RSGI spec: granian's
docs/spec/RSGI.md). `Gateway.__rsgi__` answers its short path itself and hands
everything else here, so that under granian's RSGI the gateway answers as under ASGI.

What RSGI cannot carry: a WebSocket subprotocol (the handshake answers none; clients
that offered one go on without) and a close reason (the code only). A request body is
passed on chunk by chunk as granian reads it, so the app's size limit applies as it
comes; once it has all come, `receive()` waits for the client to go away
(`http.disconnect`), as a held response (a parked poll, a stream) needs.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

__all__ = ["Closed", "disconnected", "respond", "serve"]

logger = logging.getLogger("amfkit.rsgi")

ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
#: What granian raises when the client went away (its RSGIProtocolClosed is one).
Closed = RuntimeError

_ASGI = {"version": "3.0", "spec_version": "2.3"}
#: The answer to a request the app failed, or sent nothing for (as uvicorn answers).
_FAILED = (500, [("content-type", "text/plain; charset=utf-8")], b"internal server error\n")


def respond(protocol: Any, response: tuple[int, list[tuple[str, str]], bytes]) -> None:
    """Send a whole response (status, headers, body) on an RSGI HTTP protocol."""
    status, headers, body = response
    protocol.response_bytes(status, headers, body)


def disconnected(protocol: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An ASGI `receive` for an RSGI request whose body was read: it returns
    `http.disconnect` when the client goes away (a parked poll watches for it)."""

    async def receive() -> dict[str, Any]:
        try:
            await protocol.client_disconnect()
        except Closed:
            pass
        return {"type": "http.disconnect"}

    return receive


def _address(text: str) -> tuple[str, int] | None:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _scope(kind: str, scope: Any) -> dict[str, Any]:
    path = scope.path
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in scope.headers.items()]
    return {
        "type": kind,
        "asgi": _ASGI,
        "http_version": "1.1" if scope.http_version in ("1", "1.1") else scope.http_version,
        "method": scope.method,
        "scheme": scope.scheme if kind == "http" else ("wss" if scope.scheme == "https" else "ws"),
        "path": path,  # granian gives it percent-decoded: no raw_path
        "query_string": scope.query_string.encode("latin-1"),
        "root_path": "",
        "headers": headers,
        "client": _address(scope.client),
        "server": _address(scope.server),
    }


async def serve(app: ASGIApp, scope: Any, protocol: Any) -> None:
    """Run the ASGI 3 `app` for one RSGI connection scope (HTTP or WebSocket)."""
    if scope.proto == "http":
        await _HTTP(protocol).run(app, _scope("http", scope))
    elif scope.proto == "ws":
        asgi_scope = _scope("websocket", scope)
        offered = scope.headers.get("sec-websocket-protocol")
        asgi_scope["subprotocols"] = [p.strip() for p in offered.split(",")] if offered else []
        await _WebSocket(protocol).run(app, asgi_scope)


class _HTTP:
    """One HTTP request: the ASGI `receive` and `send` over the RSGI protocol."""

    __slots__ = ("protocol", "chunks", "body_done", "status", "headers", "stream", "done")

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol
        self.chunks: Any = None
        self.body_done = False
        self.status: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.stream: Any = None
        self.done = False

    async def run(self, app: ASGIApp, scope: dict[str, Any]) -> None:
        try:
            await app(scope, self.receive, self.send)
        except Exception:
            logger.exception("the ASGI app failed")
            if self.status is None:
                respond(self.protocol, _FAILED)
            return
        if self.status is None:  # the app sent nothing
            respond(self.protocol, _FAILED)
        elif not self.done and self.stream is None:  # a start with no body message
            self.protocol.response_bytes(self.status, self.headers, b"")

    async def receive(self) -> dict[str, Any]:
        if not self.body_done:
            if self.chunks is None:
                self.chunks = self.protocol.__aiter__()
            try:
                chunk = await self.chunks.__anext__()
            except StopAsyncIteration:
                self.body_done = True
                return {"type": "http.request", "body": b"", "more_body": False}
            except Closed:
                self.body_done = True
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": bytes(chunk), "more_body": True}
        try:
            await self.protocol.client_disconnect()
        except Closed:
            pass
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.status = message["status"]
            self.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", ())]
        elif kind == "http.response.body" and self.status is not None and not self.done:
            body = message.get("body", b"")
            more = message.get("more_body", False)
            if self.stream is None and not more:
                self.done = True
                self.protocol.response_bytes(self.status, self.headers, body)
                return
            if self.stream is None:
                self.stream = self.protocol.response_stream(self.status, self.headers)
            if not more:
                self.done = True
            if body:
                try:
                    await self.stream.send_bytes(body)
                except Closed:  # the client went away: as uvicorn, nothing more is sent
                    self.done = True


class _WebSocket:
    """One WebSocket: the ASGI `receive` and `send` over the RSGI protocol."""

    __slots__ = ("protocol", "transport", "connected", "closed")

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol
        self.transport: Any = None
        self.connected = False
        self.closed = False

    async def run(self, app: ASGIApp, scope: dict[str, Any]) -> None:
        try:
            await app(scope, self.receive, self.send)
        except Exception:
            logger.exception("the ASGI app failed on a WebSocket")
        if not self.closed:
            self.closed = True
            self.protocol.close(1011 if self.transport is not None else None)
        # granian closes the socket once its transport is gone; the app's objects (a
        # Flex client's registration) may hold this one longer.
        self.transport = None

    async def receive(self) -> dict[str, Any]:
        if not self.connected:
            self.connected = True
            return {"type": "websocket.connect"}
        if self.transport is None or self.closed:
            return {"type": "websocket.disconnect", "code": 1006}
        try:
            message = await self.transport.receive()
        except Closed:
            self.closed = True
            return {"type": "websocket.disconnect", "code": 1006}
        kind = int(message.kind)
        if kind == 1:
            return {"type": "websocket.receive", "bytes": bytes(message.data)}
        if kind == 2:
            return {"type": "websocket.receive", "text": str(message.data)}
        self.closed = True
        return {"type": "websocket.disconnect", "code": 1000}

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "websocket.accept":
            self.transport = await self.protocol.accept()
        elif kind == "websocket.send":
            if self.transport is None or self.closed:
                raise Closed("the WebSocket is closed")
            data = message.get("bytes")
            if data is not None:
                await self.transport.send_bytes(data)
            else:
                await self.transport.send_str(message.get("text") or "")
        elif kind == "websocket.close":
            if not self.closed:
                self.closed = True
                # Before the handshake: refused (granian answers 403). After it, granian
                # sends a close frame without the code.
                self.protocol.close(message.get("code", 1000) if self.transport is not None else None)
                self.transport = None
