"""Helpers for the gateway tests: services to call, request packets (including the exact
byte shapes Flex and Royale send), and running the gateway's plain core in process."""

from __future__ import annotations

import asyncio
import struct
from typing import Any, Iterable, Mapping

import amfkit
from amfkit.remoting import packet
from amfkit.remoting.gateway import Gateway
from amfkit.remoting.packet import Body, Envelope, Header
from amfkit.remoting.services import Context, Fault, requires

AMF = {"content-type": "application/x-amf"}


class EchoService:
    """The services the gateway tests call."""

    def echo(self, value: Any) -> Any:
        return value

    def add(self, a: int, b: int) -> int:
        return a + b

    def fail(self, message: str) -> None:
        raise RuntimeError(message)

    def fault(self, message: str) -> None:
        raise Fault(message, code="App.Custom", details={"field": "name"})

    def fault_text(self, message: str) -> None:
        raise Fault(message, code="App.Text", details="see the manual")

    async def slow_echo(self, value: Any) -> Any:
        await asyncio.sleep(0.001)
        return value

    def count(self, items: list) -> int:  # type: ignore[type-arg]
        return len(items)

    def kind(self, value: Any) -> str:
        return type(value).__name__

    @requires("admin")
    def secret(self) -> str:
        return "s3cret"

    def whoami(self, context: Context) -> Any:
        p = context.principal
        return None if p is None else {"name": p.name, "roles": sorted(p.roles)}

    def remember(self, value: Any, context: Context) -> bool:
        context.session["value"] = value
        return True

    def recall(self, context: Context) -> Any:
        return context.session.get("value")

    def headers(self, context: Context) -> Any:
        return sorted(context.headers)

    def protocol(self, context: Context) -> str:
        return context.protocol

    def unencodable(self) -> Any:
        return object()

    def big(self, n: int) -> str:
        return "tile,1,2,FFAA00,90\n" * n


class Vault:
    """A service registered with roles=["admin"] by the JSON-RPC and XML-RPC tests."""

    def open(self):  # unannotated: the XML-RPC signature tests expect "any"
        return "gold"


def ping():  # unannotated: system.methodSignature answers [["any"]]
    """A function registered as a service."""
    return "pong"


USERS = {"alice": ("wonderland", {"admin"}), "bob": ("builder", set())}


def authenticate(userid: Any, password: Any) -> Any:
    from amfkit.remoting.services import Principal

    entry = USERS.get(userid)
    if entry is None or entry[0] != password:
        return None
    return Principal(userid, frozenset(entry[1]))


async def authenticate_async(userid: Any, password: Any) -> Any:
    await asyncio.sleep(0)
    return authenticate(userid, password)


def gateway(**options: Any) -> Gateway:
    return Gateway({"EchoService": EchoService}, **options)


def call(
    gw: Gateway,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
    *,
    method: str = "POST",
    path: str = "/gateway",
) -> tuple[int, dict[str, str], bytes]:
    """Run the gateway's plain core; headers come back as a dict (lowercase names)."""
    h = dict(AMF if headers is None else headers)
    status, out_headers, out = asyncio.run(gw.respond(method, path, h, body))
    return status, dict(out_headers), out


def request(
    version: int,
    bodies: Iterable[tuple[str, str, Any]],
    headers: Iterable[tuple[str, Any, bool]] = (),
) -> bytes:
    return packet.encode(
        Envelope(version, [Header(n, v, must_understand=mu) for n, v, mu in headers], [Body(t, r, v) for t, r, v in bodies])
    )


def answer(gw: Gateway, data: bytes, *, path: str = "/gateway", headers: Mapping[str, str] | None = None) -> Envelope:
    """POST an AMF packet and decode the 200 answer."""
    status, h, out = call(gw, data, headers, path=path)
    assert status == 200, (status, out)
    assert h["content-type"] == "application/x-amf"
    return packet.decode(out)


def nc(gw: Gateway, target: str, *args: Any, version: int = 0, headers: Iterable[tuple[str, Any, bool]] = (), path: str = "/gateway") -> Body:
    """One NetConnection call; the single answer body."""
    env = answer(gw, request(version, [(target, "/1", list(args))], headers), path=path)
    assert len(env.bodies) == 1
    return env.bodies[0]


# --- raw packets: the byte shapes real clients send ------------------------------------


def _utf(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack(">H", len(b)) + b


def raw_packet(version: int, bodies: Iterable[tuple[str, str, bytes]], headers: Iterable[tuple[str, bool, bytes]] = (), length: int | None = None) -> bytes:
    """A packet whose values are given as encoded bytes; `length` forces every header and
    body length field to that value (peers write -1, 0, 1 or the real length)."""
    headers = list(headers)
    bodies = list(bodies)
    out = bytearray(struct.pack(">HH", version, len(headers)))
    for name, mu, value in headers:
        out += _utf(name) + bytes([mu]) + struct.pack(">I", len(value) if length is None else length & 0xFFFFFFFF) + value
    out += struct.pack(">H", len(bodies))
    for target, response, value in bodies:
        out += _utf(target) + _utf(response) + struct.pack(">I", len(value) if length is None else length & 0xFFFFFFFF) + value
    return bytes(out)


def flex_shape(message: Any) -> bytes:
    """What Flex sends as a body value: an AMF0 strict array of one AVM+-switched AMF3 value."""
    return b"\x0a\x00\x00\x00\x01\x11" + amfkit.amf3.encode(message)


def royale_shape(message: Any) -> bytes:
    """What Royale's JS client sends: the AVM+ switch, then an AMF3 array of the message."""
    return b"\x11" + amfkit.amf3.encode([message])


def fp9_args(*args: Any) -> bytes:
    """Flash Player 9 NetConnection (AMF3 encoding): an AMF0 strict array whose items are
    each AVM+-switched AMF3 values."""
    return b"\x0a" + struct.pack(">I", len(args)) + b"".join(b"\x11" + amfkit.amf3.encode(a) for a in args)


def asgi_post(
    app: Any,
    body: bytes,
    content_type: str | None = "application/x-amf",
    *,
    method: str = "POST",
    path: str = "/gateway",
    extra_headers: Iterable[tuple[str, str]] = (),
    loop: asyncio.AbstractEventLoop | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """Call an ASGI `app` in this process the way a server hands it a request (the whole
    body in one receive message) and collect its answer: (status, headers, body). The
    client stays connected until the answer is complete (a later `receive` gives
    `http.disconnect` then, as uvicorn's does)."""
    headers = [(b"content-length", str(len(body)).encode())]
    if content_type:
        headers.append((b"content-type", content_type.encode()))
    headers += [(k.encode(), v.encode()) for k, v in extra_headers]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }
    sent: list[dict[str, Any]] = []
    delivered = False
    complete: asyncio.Event | None = None

    async def receive() -> dict[str, Any]:
        nonlocal delivered, complete
        if delivered:
            if not _complete(sent):
                complete = complete or asyncio.Event()
                await complete.wait()
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if complete is not None and _complete(sent):
            complete.set()

    if loop is None:
        asyncio.run(app(scope, receive, send))
    else:
        loop.run_until_complete(app(scope, receive, send))
    start = sent[0]
    assert start["type"] == "http.response.start"
    out = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, out


def _complete(sent: list[dict[str, Any]]) -> bool:
    """Whether the ASGI messages `sent` end a response."""
    return bool(sent) and sent[-1]["type"] == "http.response.body" and not sent[-1].get("more_body")
