"""amfkit.remoting.Client and AsyncClient against a scripted gateway over real HTTP.

The scripted gateway (an ASGI app under uvicorn on 127.0.0.1, see tests/support/servers.py)
records every request it gets, decoded with amfkit's packet module, and answers what
each test tells it to: so these tests pin what the client puts on the wire and how it
reads every kind of reply. The client against real gateways (amfkit's and Py3AMF's) is
in test_interop_remoting.py.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import gzip
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import amfkit
from amfkit.remoting import messages, packet
from amfkit.remoting.client import AsyncClient, Client, Pending, TransportError
from amfkit.remoting.packet import Body, Envelope, Header
from amfkit.remoting.services import Fault

from servers import RunningServer, serve_asgi


# --------------------------------------------------------------------------------------
# The scripted gateway


@dataclasses.dataclass
class Seen:
    """One request as the scripted gateway saw it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    raw: bytes  # the body as sent (maybe gzip)
    envelope: Envelope | None
    peer: tuple[str, int]


Answer = Callable[[Seen], "tuple[int, list[tuple[str, str]], bytes]"]


def reply(seen: Seen, answer: Callable[[Body], tuple[str, Any]], headers: list[Header] | None = None) -> bytes:
    """An AMF reply to every body of the request: `answer(body) -> (kind, value)` with
    kind "onResult" or "onStatus"."""
    assert seen.envelope is not None
    bodies = []
    for body in seen.envelope.bodies:
        kind, value = answer(body)
        bodies.append(Body(f"{body.response}/{kind}", "null", value))
    return packet.encode(Envelope(seen.envelope.version, headers or [], bodies))


def ack(request: Any, body: Any = None, **fields: Any) -> messages.AcknowledgeMessage:
    return messages.AcknowledgeMessage(
        correlationId=request.messageId, clientId="CLIENT-1", body=body, headers={"DSId": "DS-1"}, **fields
    )


def standard_answer(body: Body) -> tuple[str, Any]:
    """NetConnection: `Svc.echo(x)` -> x, `Svc.fail(msg)` -> a status object, anything
    else -> {"target", "args"}. Flex: ping -> ack with DSId, login -> ack, remoting
    messages likewise (echo, fail, else a description)."""
    if body.target in ("null", ""):
        message = body.value[0]
        if isinstance(message, messages.CommandMessage):
            return "onResult", ack(message, True)
        assert isinstance(message, messages.RemotingMessage)
        if message.operation == "echo":
            return "onResult", ack(message, message.body[0])
        if message.operation == "fail":
            error = messages.ErrorMessage(
                correlationId=message.messageId,
                faultCode="Test.Failed",
                faultString=message.body[0],
                faultDetail="some detail",
                rootCause=None,
                extendedData=None,
            )
            return "onStatus", error
        return "onResult", ack(message, {"destination": message.destination, "operation": message.operation})
    args = body.value
    if body.target.endswith(".echo"):
        return "onResult", args[0]
    if body.target.endswith(".fail"):
        return "onStatus", {"level": "error", "code": "Test.Failed", "description": args[0], "details": ["line 1"]}
    return "onResult", {"target": body.target, "args": args}


def amf_response(data: bytes, *extra: tuple[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
    return 200, [("content-type", "application/x-amf"), *extra], data


class Scripted:
    """An ASGI app: records each request in `seen`, answers with `handler(seen)`."""

    def __init__(self, handler: Answer | None = None) -> None:
        self.handler: Answer = handler or (lambda seen: amf_response(reply(seen, standard_answer)))
        self.seen: list[Seen] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        raw = b""
        more = True
        while more:
            message = await receive()
            raw += message.get("body", b"")
            more = message.get("more_body", False)
        headers: dict[str, str] = {}
        for k, v in scope["headers"]:
            name = k.decode("latin-1").lower()
            headers[name] = headers[name] + "; " + v.decode("latin-1") if name in headers else v.decode("latin-1")
        body = gzip.decompress(raw) if headers.get("content-encoding") == "gzip" else raw
        envelope = packet.decode(body) if body else None
        seen = Seen(
            scope["method"], scope["path"], scope["query_string"].decode(), headers, raw, envelope, tuple(scope["client"])
        )
        self.seen.append(seen)
        status, out_headers, out = self.handler(seen)
        out_headers = [*out_headers, ("content-length", str(len(out)))]
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in out_headers],
            }
        )
        await send({"type": "http.response.body", "body": out})


class Switch:
    """The app of the module's one server: whatever app the current test installed."""

    app: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[tuple[Switch, RunningServer]]:
    # One uvicorn server for the module (starting one per test costs ~0.2 s); each test
    # installs its own Scripted app in it.
    switch = Switch()
    with serve_asgi(switch) as server:
        yield switch, server


@pytest.fixture
def serve(shared_server: tuple[Switch, RunningServer]) -> Iterator[Callable[[Any], RunningServer]]:
    """`serve(app)` installs an ASGI app in the shared server and returns the server."""
    switch, server = shared_server

    def install(app: Any) -> RunningServer:
        switch.app = app
        return server

    yield install
    switch.app = None


@pytest.fixture
def gateway(serve: Callable[[Any], RunningServer]) -> tuple[Scripted, str]:
    """A scripted gateway answering standard_answer, and its URL."""
    app = Scripted()
    return app, serve(app).url + "/gateway"


@pytest.fixture
def client(gateway: tuple[Scripted, str]) -> Iterator[Client]:
    with Client(gateway[1]) as c:
        yield c


# --------------------------------------------------------------------------------------
# NetConnection requests


@pytest.mark.parametrize("amf3, version", [(True, 3), (False, 0)], ids=["amf3", "amf0"])
def test_netconnection_request_shape(gateway: tuple[Scripted, str], amf3: bool, version: int) -> None:
    app, url = gateway
    with Client(url, amf3=amf3) as c:
        assert c.EchoService.echo({"a": [1, 2]}) == {"a": [1, 2]}
    (seen,) = app.seen
    assert seen.method == "POST" and seen.path == "/gateway"
    assert seen.headers["content-type"] == "application/x-amf"
    assert seen.headers["accept-encoding"] == "gzip"
    assert seen.headers["user-agent"] == f"amfkit/{amfkit.__version__}"
    assert "content-encoding" not in seen.headers
    assert seen.envelope is not None
    assert seen.envelope.version == version
    assert seen.envelope.headers == []
    assert seen.envelope.bodies == [Body("EchoService.echo", "/1", [{"a": [1, 2]}])]


def test_amf3_request_body_goes_through_the_avm_plus_switch(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    with Client(url) as c:
        c.Svc.m(1)
    raw = app.seen[0].raw
    # version 3, no headers, one body "Svc.m" "/1", length, then 0x11 + AMF3 array [1]
    assert raw.startswith(bytes.fromhex("0003 0000 0001 0005") + b"Svc.m" + b"\x00\x02/1")
    assert raw.endswith(bytes.fromhex("11 09 03 01 04 01"))


def test_response_numbers_increase_over_the_connection(client: Client, gateway: tuple[Scripted, str]) -> None:
    app, _ = gateway
    client.Svc.a()
    client.Svc.b()
    with client.batch() as b:
        b.Svc.c()
        b.Svc.d()
    assert [[body.response for body in s.envelope.bodies] for s in app.seen if s.envelope] == [
        ["/1"],
        ["/2"],
        ["/3", "/4"],
    ]


def test_attribute_item_and_call_targets(client: Client, gateway: tuple[Scripted, str]) -> None:
    assert client.TileService.getTiles(1) == {"target": "TileService.getTiles", "args": [1]}
    assert client["com.example.Tiles"].getTiles(2, "x") == {"target": "com.example.Tiles.getTiles", "args": [2, "x"]}
    assert client["Svc"]["weird-name"]() == {"target": "Svc.weird-name", "args": []}
    assert client.call("com.example.Svc.method", None) == {"target": "com.example.Svc.method", "args": [None]}
    assert client.call("plainFunction", 3) == {"target": "plainFunction", "args": [3]}


def test_private_looking_attributes_are_not_proxies(client: Client) -> None:
    with pytest.raises(AttributeError):
        client._hidden
    with pytest.raises(AttributeError):
        client.Svc._hidden
    with pytest.raises(AttributeError):
        client.Svc.__deepcopy__
    assert not hasattr(client, "__wrapped__")


def test_values_round_trip_through_the_client(client: Client) -> None:
    import datetime

    value = {
        "none": None,
        "int": 2**40,
        "float": 1.5,
        "str": "été",
        "bytes": b"\x00\xff",
        "date": datetime.datetime(2020, 1, 2, 3, 4, 5),
        "list": [1, [2, [3]]],
        "mixed": amfkit.MixedArray({0: "a", "k": "v"}),
        "collection": amfkit.ArrayCollection([1, 2]),
    }
    shared = {"x": 1}
    value["shared"] = [shared, shared]
    out = client.EchoService.echo(value)
    assert out == value
    assert out["shared"][0] is out["shared"][1]
    assert isinstance(out["collection"], amfkit.ArrayCollection)


def test_default_hook_encodes_unknown_values(gateway: tuple[Scripted, str]) -> None:
    class Point:
        def __init__(self, x: int) -> None:
            self.x = x

    with Client(gateway[1], default=lambda o: {"x": o.x}) as c:
        assert c.EchoService.echo(Point(3)) == {"x": 3}
    with Client(gateway[1]) as c, pytest.raises(amfkit.EncodeError):
        c.EchoService.echo(Point(3))


# --------------------------------------------------------------------------------------
# Faults


def test_on_status_raises_fault(client: Client) -> None:
    with pytest.raises(Fault) as info:
        client.EchoService.fail("it broke")
    fault = info.value
    assert str(fault) == "it broke"
    assert fault.code == "Test.Failed"
    assert fault.details == ["line 1"]
    assert fault.raw["level"] == "error"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "status, message, code",
    [
        (amfkit.TypedObject("flex.messaging.Fault", {"code": "C", "description": "typed"}), "typed", "C"),
        ({"code": "C", "message": "from message"}, "from message", "C"),
        ({"description": "no code"}, "no code", "Server.Processing"),
        ("just a string", "just a string", "Server.Processing"),
        (None, "", "Server.Processing"),
    ],
    ids=["typed", "message-member", "no-code", "string", "null"],
)
def test_status_objects_of_any_shape(status: Any, message: str, code: str, serve: Callable[[Any], RunningServer]) -> None:
    app = Scripted(lambda seen: amf_response(reply(seen, lambda body: ("onStatus", status))))
    server = serve(app)
    with Client(server.url) as c:
        with pytest.raises(Fault) as info:
            c.Svc.m()
    assert str(info.value) == message
    assert info.value.code == code


def test_on_debug_events_and_unknown_bodies_are_ignored(serve: Callable[[Any], RunningServer]) -> None:
    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        assert seen.envelope is not None
        env = Envelope(
            3,
            [],
            [
                Body("/1/onDebugEvents", "null", [{"debug": 1}]),
                Body("/9/onResult", "null", "not ours"),
                Body("/1/onResult", "null", "ours"),
            ],
        )
        return amf_response(packet.encode(env))

    server = serve(Scripted(handler))

    with Client(server.url) as c:
        assert c.Svc.m() == "ours"


def test_missing_answer_is_a_transport_error(serve: Callable[[Any], RunningServer]) -> None:
    app = Scripted(lambda seen: amf_response(packet.encode(Envelope(3, [], []))))
    server = serve(app)
    with Client(server.url) as c:
        with pytest.raises(TransportError, match="no answer for /1"):
            c.Svc.m()


# --------------------------------------------------------------------------------------
# Transport errors


@pytest.mark.parametrize(
    "status, headers, body, match",
    [
        (500, [("content-type", "text/plain")], b"Internal Server Error", "HTTP 500 Internal Server Error: Internal"),
        (404, [], b"", "HTTP 404 Not Found"),
        (302, [("location", "/elsewhere")], b"", "HTTP 302"),
        (200, [("content-type", "text/html")], b"<html>login</html>", "text/html, not application/x-amf: <html>"),
        (200, [], b"\x00\x03", "no content type, not application/x-amf"),
        (200, [("content-type", "application/x-amf")], b"\x00\x03\x00", "not a valid AMF packet"),
        (200, [("content-type", "application/x-amf")], b"", "not a valid AMF packet"),
    ],
    ids=["500", "404", "redirect", "html", "no-type", "truncated", "empty"],
)
def test_bad_replies_raise_transport_error(
    status: int, headers: list[tuple[str, str]], body: bytes, match: str
, serve: Callable[[Any], RunningServer]) -> None:
    app = Scripted(lambda seen: (status, headers, body))
    server = serve(app)
    with Client(server.url + "/gw") as c:
        with pytest.raises(TransportError, match=match) as info:
            c.Svc.m()
    error = info.value
    assert error.url == server.url + "/gw"
    assert error.status == status
    assert error.body == body
    if status == 200 and body:
        assert isinstance(error.__cause__, amfkit.DecodeError) or error.__cause__ is None


def test_connection_refused_is_a_transport_error() -> None:
    with serve_asgi(Scripted()) as server:
        url = server.url
    with Client(url, timeout=5) as c, pytest.raises(TransportError, match="ConnectError") as info:
        c.Svc.m()
    assert info.value.status is None


def test_timeout_is_a_transport_error(serve: Callable[[Any], RunningServer]) -> None:
    stop = threading.Event()

    def slow(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        stop.wait(5)
        return amf_response(reply(seen, standard_answer))

    server = serve(Scripted(slow))
    try:
        with Client(server.url, timeout=0.3) as c, pytest.raises(TransportError, match="Timeout"):
            c.Svc.m()
    finally:
        stop.set()


def test_reply_size_limit(gateway: tuple[Scripted, str]) -> None:
    with Client(gateway[1], max_response_size=1000) as c:
        assert len(c.EchoService.echo("x" * 500)) == 500
        with pytest.raises(TransportError, match="larger than 1000 bytes"):
            c.EchoService.echo("x" * 2000)


def test_reply_size_limit_applies_after_gzip_decoding(serve: Callable[[Any], RunningServer]) -> None:
    def bomb(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        data = reply(seen, lambda body: ("onResult", "z" * 1_000_000))
        return amf_response(gzip.compress(data), ("content-encoding", "gzip"))

    server = serve(Scripted(bomb))

    with Client(server.url, max_response_size=100_000) as c:
        with pytest.raises(TransportError, match="larger than 100000 bytes"):
            c.Svc.m()


def test_decode_options_limit_replies(gateway: tuple[Scripted, str]) -> None:
    nested: Any = []
    for _ in range(20):
        nested = [nested]
    with Client(gateway[1], decode_options={"max_depth": 10}) as c:
        with pytest.raises(TransportError, match="not a valid AMF packet") as info:
            c.EchoService.echo(nested)
    assert isinstance(info.value.__cause__, amfkit.DecodeError)


# --------------------------------------------------------------------------------------
# Compression


def test_gzip_replies_are_decoded(serve: Callable[[Any], RunningServer]) -> None:
    def zipped(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        return amf_response(gzip.compress(reply(seen, standard_answer)), ("content-encoding", "gzip"))

    server = serve(Scripted(zipped))

    with Client(server.url) as c:
        assert c.EchoService.echo("y" * 10_000) == "y" * 10_000


def test_gzip_false_asks_for_identity(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    with Client(url, gzip=False) as c:
        c.Svc.m()
    assert app.seen[0].headers["accept-encoding"] == "identity"


@pytest.mark.parametrize("option, size, compressed", [(True, 100, False), (True, 5000, True), (200, 300, True), (False, 5000, False)])
def test_compress_requests(gateway: tuple[Scripted, str], option: bool | int, size: int, compressed: bool) -> None:
    app, url = gateway
    with Client(url, compress_requests=option) as c:
        assert c.EchoService.echo("q" * size) == "q" * size
    seen = app.seen[0]
    assert (seen.headers.get("content-encoding") == "gzip") is compressed
    assert (seen.raw[:2] == b"\x1f\x8b") is compressed


# --------------------------------------------------------------------------------------
# HTTP session: connection reuse, cookies, extra headers


def test_connection_is_reused(client: Client, gateway: tuple[Scripted, str]) -> None:
    app, _ = gateway
    for i in range(5):
        client.EchoService.echo(i)
    assert len({s.peer for s in app.seen}) == 1


def test_cookies_are_kept(serve: Callable[[Any], RunningServer]) -> None:
    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        data = reply(seen, lambda body: ("onResult", seen.headers.get("cookie")))
        return amf_response(data, ("set-cookie", "session=abc123; Path=/; HttpOnly"))

    server = serve(Scripted(handler))

    with Client(server.url + "/gateway") as c:
        assert c.Svc.m() is None
        assert c.Svc.m() == "session=abc123"
        assert c.cookies["session"] == "abc123"


def test_extra_http_headers(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    with Client(url, headers={"X-Api-Key": "k", "Referer": "http://example/app.swf"}) as c:
        c.Svc.m()
    assert app.seen[0].headers["x-api-key"] == "k"
    assert app.seen[0].headers["referer"] == "http://example/app.swf"


def test_given_http_client_is_used_and_not_closed(gateway: tuple[Scripted, str]) -> None:
    import httpx

    app, url = gateway
    with httpx.Client(headers={"X-From": "mine"}) as http:
        c = Client(url, http_client=http)
        c.Svc.m()
        c.close()
        assert not http.is_closed
    assert app.seen[0].headers["x-from"] == "mine"


# --------------------------------------------------------------------------------------
# Response headers: gateway URL and persistent headers


def _with_headers(headers: list[Header]) -> Scripted:
    """A gateway that sends `headers` in its first reply only, answering standard_answer
    with the request's query string added for NetConnection echo calls."""
    count = [0]

    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        count[0] += 1
        return amf_response(reply(seen, standard_answer, headers if count[0] == 1 else []))

    return Scripted(handler)


def test_append_to_gateway_url(serve: Callable[[Any], RunningServer]) -> None:
    app = _with_headers([Header("AppendToGatewayUrl", "?PHPSESSID=s1")])
    server = serve(app)
    with Client(server.url + "/gateway") as c:
        c.Svc.m()
        assert c.url == server.url + "/gateway?PHPSESSID=s1"
        c.Svc.m()
        c.Svc.m()
    assert [(s.path, s.query) for s in app.seen] == [
        ("/gateway", ""),
        ("/gateway", "PHPSESSID=s1"),
        ("/gateway", "PHPSESSID=s1"),
    ]


def test_append_to_gateway_url_does_not_accumulate(serve: Callable[[Any], RunningServer]) -> None:
    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        return amf_response(reply(seen, standard_answer, [Header("AppendToGatewayUrl", ";jsessionid=J")]))

    app = Scripted(handler)
    server = serve(app)
    with Client(server.url + "/gateway") as c:
        for _ in range(3):
            c.Svc.m()
        assert c.url == server.url + "/gateway;jsessionid=J"
    assert [s.path for s in app.seen] == ["/gateway", "/gateway;jsessionid=J", "/gateway;jsessionid=J"]


def test_append_to_gateway_url_appends_to_the_url_in_use(serve: Callable[[Any], RunningServer]) -> None:
    # a gateway renewing an expired session sends "&sid=2" after the "?sid=1" it gave
    suffixes = ["?sid=1", None, "&sid=2", None]

    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        suffix = suffixes[len(app.seen) - 1]
        headers = [Header("AppendToGatewayUrl", suffix)] if suffix else []
        return amf_response(reply(seen, standard_answer, headers))

    app = Scripted(handler)
    server = serve(app)
    with Client(server.url + "/gateway") as c:
        for _ in suffixes:
            c.Svc.m()
        assert c.url == server.url + "/gateway?sid=1&sid=2"
    assert [s.query for s in app.seen] == ["", "sid=1", "sid=1", "sid=1&sid=2"]


def test_replace_gateway_url() -> None:
    app = Scripted()
    first = Scripted(lambda seen: amf_response(reply(seen, standard_answer, [Header("ReplaceGatewayUrl", new_url)])))
    with serve_asgi(app) as second, serve_asgi(first) as server:
        new_url = second.url + "/moved"
        with Client(server.url + "/gateway") as c:
            c.Svc.m()
            assert c.url == new_url
            c.Svc.m()
    assert len(first.seen) == 1
    assert [s.path for s in app.seen] == ["/moved"]


def test_request_persistent_header_adds_and_clears(serve: Callable[[Any], RunningServer]) -> None:
    script = [
        [Header("RequestPersistentHeader", {"name": "Session", "mustUnderstand": True, "data": {"id": 7}})],
        [],
        [Header("RequestPersistentHeader", {"name": "Session", "mustUnderstand": False, "data": None})],
        [],
    ]

    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        return amf_response(reply(seen, standard_answer, script[len(app.seen) - 1]))

    app = Scripted(handler)
    server = serve(app)
    with Client(server.url) as c:
        c.Svc.m()
        assert c.amf_headers == {"Session": {"id": 7}}
        c.Svc.m()
        c.Svc.m()
        assert c.amf_headers == {}
        c.Svc.m()
    sent = [s.envelope.headers for s in app.seen if s.envelope]
    assert sent == [[], [Header("Session", {"id": 7}, must_understand=True)], [Header("Session", {"id": 7}, must_understand=True)], []]


def test_malformed_response_headers_are_ignored(serve: Callable[[Any], RunningServer]) -> None:
    headers = [
        Header("AppendToGatewayUrl", 5),
        Header("ReplaceGatewayUrl", None),
        Header("RequestPersistentHeader", "not an object"),
        Header("RequestPersistentHeader", {"data": 1}),
        Header("SomethingElse", {"x": 1}, must_understand=True),
    ]
    app = _with_headers(headers)
    server = serve(app)
    with Client(server.url + "/g") as c:
        assert c.EchoService.echo(1) == 1
        assert c.url == server.url + "/g"
        assert c.amf_headers == {}


def test_add_and_remove_header(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    with Client(url) as c:
        c.add_header("Trace", "abc", must_understand=True)
        c.Svc.m()
        c.remove_header("Trace")
        c.remove_header("Trace")
        c.Svc.m()
    assert app.seen[0].envelope and app.seen[0].envelope.headers == [Header("Trace", "abc", must_understand=True)]
    assert app.seen[1].envelope and app.seen[1].envelope.headers == []


def test_credentials_header_in_netconnection_mode(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    with Client(url, credentials=("alice", "s3cret")) as c:
        c.Svc.m()
        c.logout()
        c.Svc.m()
    assert app.seen[0].envelope is not None
    assert app.seen[0].envelope.headers == [Header("Credentials", {"userid": "alice", "password": "s3cret"}, must_understand=False)]
    assert app.seen[1].envelope is not None and app.seen[1].envelope.headers == []


def test_gateway_can_clear_credentials(serve: Callable[[Any], RunningServer]) -> None:
    clear = Header("RequestPersistentHeader", {"name": "Credentials", "mustUnderstand": False, "data": None})
    app = _with_headers([clear, Header("AppendToGatewayUrl", "?sid=1")])
    server = serve(app)
    with Client(server.url, credentials=("u", "p")) as c:
        c.Svc.m()
        c.Svc.m()
    assert [h.name for h in app.seen[0].envelope.headers] == ["Credentials"]  # type: ignore[union-attr]
    assert app.seen[1].envelope.headers == []  # type: ignore[union-attr]
    assert app.seen[1].query == "sid=1"


def test_bad_credentials_argument() -> None:
    with pytest.raises(TypeError):
        Client("http://127.0.0.1:1/", credentials=("only-user",))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Client("http://127.0.0.1:1/", credentials=("user", 5))  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# Batching


def test_batch_sends_one_request_and_answers_each_call(client: Client, gateway: tuple[Scripted, str]) -> None:
    app, _ = gateway
    with client.batch() as b:
        one = b.EchoService.echo(1)
        bad = b.EchoService.fail("second fails")
        three = b["com.x.Svc"].m(3)
        four = b.call("EchoService.echo", [4])
        assert len(b) == 4
        assert not one.done()
        with pytest.raises(RuntimeError, match="not been sent"):
            one.result()
    assert len(app.seen) == 1
    assert [body.target for body in app.seen[0].envelope.bodies] == [  # type: ignore[union-attr]
        "EchoService.echo",
        "EchoService.fail",
        "com.x.Svc.m",
        "EchoService.echo",
    ]
    assert one.result() == 1 and one.exception() is None
    with pytest.raises(Fault, match="second fails"):
        bad.result()
    assert isinstance(bad.exception(), Fault)
    assert three.result() == {"target": "com.x.Svc.m", "args": [3]}
    assert four.result() == [4]
    assert "result 1" in repr(one) and "failed" in repr(bad)


def test_batch_answers_are_matched_by_response_id_not_order(serve: Callable[[Any], RunningServer]) -> None:
    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        assert seen.envelope is not None
        bodies = [Body(f"{b.response}/onResult", "null", b.value[0]) for b in reversed(seen.envelope.bodies)]
        return amf_response(packet.encode(Envelope(3, [], bodies)))

    server = serve(Scripted(handler))

    with Client(server.url) as c:
        with c.batch() as b:
            pending = [b.Svc.echo(i) for i in range(5)]
    assert [p.result() for p in pending] == [0, 1, 2, 3, 4]


def test_batch_with_a_missing_answer_fails_only_that_call(serve: Callable[[Any], RunningServer]) -> None:
    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        assert seen.envelope is not None
        bodies = [Body(f"{b.response}/onResult", "null", b.value[0]) for b in seen.envelope.bodies[:-1]]
        return amf_response(packet.encode(Envelope(3, [], bodies)))

    server = serve(Scripted(handler))

    with Client(server.url) as c:
        with c.batch() as b:
            first, last = b.Svc.echo(1), b.Svc.echo(2)
    assert first.result() == 1
    with pytest.raises(TransportError, match="no answer for /2"):
        last.result()


def test_batch_transport_error_fails_every_call_and_raises(serve: Callable[[Any], RunningServer]) -> None:
    app = Scripted(lambda seen: (503, [("content-type", "text/plain")], b"busy"))
    server = serve(app)
    with Client(server.url) as c:
        with pytest.raises(TransportError, match="HTTP 503"):
            with c.batch() as b:
                first, second = b.Svc.a(), b.Svc.b()
    for p in (first, second):
        with pytest.raises(TransportError):
            p.result()


def test_batch_block_that_raises_sends_nothing(client: Client, gateway: tuple[Scripted, str]) -> None:
    app, _ = gateway
    with pytest.raises(KeyError):
        with client.batch() as b:
            pending = b.Svc.m()
            raise KeyError("oops")
    assert app.seen == []
    with pytest.raises(RuntimeError, match="not sent"):
        pending.result()


def test_empty_batch_sends_nothing(client: Client, gateway: tuple[Scripted, str]) -> None:
    with client.batch():
        pass
    assert gateway[0].seen == []


def test_pending_is_generic_and_reports_state() -> None:
    p: Pending[int] = Pending("S.m")
    assert "pending" in repr(p)
    with pytest.raises(RuntimeError):
        p.exception()
    p._set(3)
    assert p.done() and p.result() == 3


# --------------------------------------------------------------------------------------
# Flex RemoteObject


def test_flex_pings_then_sends_remoting_messages(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    with Client(url, flex=True) as c:
        assert c.dsid is None
        assert c.EchoService.echo([1, "two"]) == [1, "two"]
        assert c.dsid == "DS-1"
        assert c["com.example.Svc"].describe(1, 2) == {"destination": "com.example.Svc", "operation": "describe"}
    ping, call, second = app.seen
    assert ping.envelope is not None and call.envelope is not None and second.envelope is not None
    assert ping.envelope.version == 3
    (body,) = ping.envelope.bodies
    assert (body.target, body.response) == ("null", "/1")
    (command,) = body.value
    assert isinstance(command, messages.CommandMessage)
    assert command.operation == messages.Operation.CLIENT_PING
    assert command.headers["DSId"] == "nil"
    (body,) = call.envelope.bodies
    assert (body.target, body.response) == ("null", "/2")
    (message,) = body.value
    assert isinstance(message, messages.RemotingMessage)
    assert (message.destination, message.operation, message.body) == ("EchoService", "echo", [[1, "two"]])
    assert message.headers == {"DSId": "DS-1", "DSEndpoint": "my-amf"}
    assert message.clientId == "CLIENT-1"
    assert isinstance(message.messageId, str) and len(message.messageId) == 36
    (message,) = second.envelope.bodies[0].value
    assert message.destination == "com.example.Svc" and message.body == [1, 2]


def test_flex_error_message_raises_fault(gateway: tuple[Scripted, str]) -> None:
    with Client(gateway[1], flex=True) as c, pytest.raises(Fault) as info:
        c.EchoService.fail("flex says no")
    assert str(info.value) == "flex says no"
    assert info.value.code == "Test.Failed"
    assert info.value.details == "some detail"
    assert isinstance(info.value.raw, messages.ErrorMessage)  # type: ignore[attr-defined]


def test_flex_error_message_in_on_result_is_still_a_fault(serve: Callable[[Any], RunningServer]) -> None:
    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        def answer(body: Body) -> tuple[str, Any]:
            message = body.value[0]
            if isinstance(message, messages.CommandMessage):
                return "onResult", ack(message, True)
            return "onResult", messages.ErrorMessage(faultCode="X", faultString="judged by type")

        return amf_response(reply(seen, answer))

    server = serve(Scripted(handler))

    with Client(server.url, flex=True) as c:
        with pytest.raises(Fault, match="judged by type"):
            c.Svc.m()


def test_flex_small_acknowledge_form_is_read(serve: Callable[[Any], RunningServer]) -> None:
    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        def answer(body: Body) -> tuple[str, Any]:
            message = body.value[0]
            small = messages.AcknowledgeMessageExt.__new__(messages.AcknowledgeMessageExt)
            messages.AcknowledgeMessage.__init__(small, correlationId=message.messageId, clientId="SMALL-1")
            small.headers = {"DSId": "DS-SMALL"}
            small.body = True if isinstance(message, messages.CommandMessage) else message.body[0]
            return "onResult", small

        return amf_response(reply(seen, answer))

    server = serve(Scripted(handler))

    with Client(server.url, flex=True) as c:
        assert c.Svc.echo("s") == "s"
        assert c.dsid == "DS-SMALL"


def test_flex_dsid_falls_back_to_client_id(serve: Callable[[Any], RunningServer]) -> None:
    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        def answer(body: Body) -> tuple[str, Any]:
            message = body.value[0]
            return "onResult", messages.AcknowledgeMessage(correlationId=message.messageId, clientId="ONLY-CLIENT-ID", body=None)

        return amf_response(reply(seen, answer))

    server = serve(Scripted(handler))

    with Client(server.url, flex=True) as c:
        c.connect()
        assert c.dsid == "ONLY-CLIENT-ID"


def test_flex_ping_fault_raises_and_retries_later(serve: Callable[[Any], RunningServer]) -> None:
    state = {"fail": True}

    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        def answer(body: Body) -> tuple[str, Any]:
            message = body.value[0]
            if state["fail"]:
                return "onStatus", messages.ErrorMessage(faultCode="Down", faultString="not now")
            return standard_answer(body)

        return amf_response(reply(seen, answer))

    server = serve(Scripted(handler))

    with Client(server.url, flex=True) as c:
        with pytest.raises(Fault, match="not now"):
            c.EchoService.echo(1)
        assert c.dsid is None
        state["fail"] = False
        assert c.EchoService.echo(1) == 1


def test_flex_login_with_credentials(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    with Client(url, flex=True, credentials=("alice", "pässword:with:colons")) as c:
        c.EchoService.echo(1)
        c.EchoService.echo(2)
        c.logout()
    commands = [s.envelope.bodies[0].value[0] for s in app.seen]  # type: ignore[union-attr]
    kinds = [getattr(m, "operation", None) for m in commands]
    assert kinds == [messages.Operation.CLIENT_PING, messages.Operation.LOGIN, "echo", "echo", messages.Operation.LOGOUT]
    login = commands[1]
    assert base64.b64decode(login.body).decode() == "alice:pässword:with:colons"
    assert login.headers == {"DSId": "DS-1", "DSEndpoint": "my-amf"}
    # Credentials travel in the LOGIN command only, never as a Credentials header
    assert all(s.envelope and s.envelope.headers == [] for s in app.seen)


def test_flex_login_failure_raises(gateway: tuple[Scripted, str], serve: Callable[[Any], RunningServer]) -> None:
    def handler(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        def answer(body: Body) -> tuple[str, Any]:
            message = body.value[0]
            if getattr(message, "operation", None) == messages.Operation.LOGIN:
                return "onStatus", messages.ErrorMessage(faultCode="Client.Authentication", faultString="bad login")
            return standard_answer(body)

        return amf_response(reply(seen, answer))

    server = serve(Scripted(handler))

    with Client(server.url, flex=True, credentials=("a", "b")) as c:
        with pytest.raises(Fault) as info:
            c.EchoService.echo(1)
    assert info.value.code == "Client.Authentication"


def test_flex_batch(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    with Client(url, flex=True) as c:
        with c.batch() as b:
            one, bad, three = b.EchoService.echo(1), b.EchoService.fail("x"), b.EchoService.echo(3)
    assert (one.result(), three.result()) == (1, 3)
    assert isinstance(bad.exception(), Fault)
    ping, batch = app.seen
    assert batch.envelope is not None
    assert [b.target for b in batch.envelope.bodies] == ["null"] * 3
    assert [b.response for b in batch.envelope.bodies] == ["/2", "/3", "/4"]
    assert [b.value[0].operation for b in batch.envelope.bodies] == ["echo", "fail", "echo"]


def test_flex_endpoint_option(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    with Client(url, flex=True, endpoint="secure-amf") as c:
        c.Svc.echo(1)
    assert app.seen[1].envelope.bodies[0].value[0].headers["DSEndpoint"] == "secure-amf"  # type: ignore[union-attr]


def test_flex_needs_amf3_and_a_destination(gateway: tuple[Scripted, str]) -> None:
    with pytest.raises(ValueError, match="amf3=True"):
        Client("http://127.0.0.1:1/", flex=True, amf3=False)
    with Client(gateway[1], flex=True) as c, pytest.raises(ValueError, match="needs a destination"):
        c.call("noDot")


def test_flex_connects_once_under_threads(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway
    results: list[Any] = []
    with Client(url, flex=True) as c:
        threads = [threading.Thread(target=lambda i=i: results.append(c.EchoService.echo(i))) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(results) == list(range(8))
    pings = [s for s in app.seen if isinstance(s.envelope.bodies[0].value[0], messages.CommandMessage)]  # type: ignore[union-attr]
    assert len(pings) == 1
    responses = [b.response for s in app.seen for b in s.envelope.bodies]  # type: ignore[union-attr]
    assert len(set(responses)) == len(responses) == 9


# --------------------------------------------------------------------------------------
# AsyncClient


def test_async_client_calls_faults_and_batches(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway

    async def main() -> None:
        async with AsyncClient(url) as c:
            assert await c.EchoService.echo({"a": 1}) == {"a": 1}
            assert await c.call("com.x.Svc.m", 2) == {"target": "com.x.Svc.m", "args": [2]}
            with pytest.raises(Fault, match="async fault"):
                await c["EchoService"].fail("async fault")
            async with c.batch() as b:
                one, bad = b.EchoService.echo(1), b.EchoService.fail("x")
                assert len(b) == 2
            assert one.result() == 1
            assert isinstance(bad.exception(), Fault)
            results = await asyncio.gather(*(c.EchoService.echo(i) for i in range(10)))
            assert results == list(range(10))

    asyncio.run(main())
    assert len(app.seen) == 4 + 10
    assert len({s.peer for s in app.seen[:4]}) == 1  # one kept-alive connection while sequential


def test_async_client_flex_and_login(gateway: tuple[Scripted, str]) -> None:
    app, url = gateway

    async def main() -> None:
        async with AsyncClient(url, flex=True, credentials=("u", "p")) as c:
            results = await asyncio.gather(*(c.EchoService.echo(i) for i in range(5)))
            assert results == list(range(5))
            assert c.dsid == "DS-1"
            with pytest.raises(Fault):
                await c.EchoService.fail("no")
            await c.logout()

    asyncio.run(main())
    operations = [s.envelope.bodies[0].value[0].operation for s in app.seen]  # type: ignore[union-attr]
    assert operations.count(messages.Operation.CLIENT_PING) == 1
    assert operations[:2] == [messages.Operation.CLIENT_PING, messages.Operation.LOGIN]
    assert operations[-1] == messages.Operation.LOGOUT


def test_async_client_transport_errors_and_headers(serve: Callable[[Any], RunningServer]) -> None:
    app = _with_headers([Header("AppendToGatewayUrl", "?s=2")])

    async def main(url: str) -> None:
        async with AsyncClient(url, max_response_size=1000) as c:
            await c.Svc.m()
            assert c.url == url + "?s=2"
            with pytest.raises(TransportError, match="larger than 1000"):
                await c.EchoService.echo("x" * 5000)
        async with AsyncClient(url.replace("/gw", "/bad")) as c:
            app.handler = lambda seen: (500, [("content-type", "text/plain")], b"nope")
            with pytest.raises(TransportError, match="HTTP 500"):
                async with c.batch() as b:
                    p = b.Svc.m()
            assert isinstance(p.exception(), TransportError)

    server = serve(app)
    asyncio.run(main(server.url + "/gw"))
    assert app.seen[1].query == "s=2"


def test_async_batch_block_that_raises_sends_nothing(gateway: tuple[Scripted, str]) -> None:
    async def main() -> None:
        async with AsyncClient(gateway[1]) as c:
            with pytest.raises(ZeroDivisionError):
                async with c.batch() as b:
                    p = b.Svc.m()
                    1 / 0
            with pytest.raises(RuntimeError, match="not sent"):
                p.result()
            async with c.batch():
                pass

    asyncio.run(main())
    assert gateway[0].seen == []


def test_async_gzip_reply(serve: Callable[[Any], RunningServer]) -> None:
    def zipped(seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
        return amf_response(gzip.compress(reply(seen, standard_answer)), ("content-encoding", "gzip"))

    async def main(url: str) -> Any:
        async with AsyncClient(url, compress_requests=True) as c:
            return await c.EchoService.echo("w" * 20_000)

    app = Scripted(zipped)
    server = serve(app)
    assert asyncio.run(main(server.url)) == "w" * 20_000
    assert app.seen[0].headers["content-encoding"] == "gzip"


def test_repr() -> None:
    with Client("http://h/g") as c, Client("http://h/g", amf3=False) as c0, Client("http://h/g", flex=True) as cf:
        assert repr(c) == "<amfkit.remoting.Client http://h/g amf3>"
        assert repr(c0).endswith("amf0>") and repr(cf).endswith("flex>")
        assert repr(c.Svc) == "<remote service Svc>"
        assert repr(c.Svc.m) == "<remote method Svc.m>"
    assert repr(AsyncClient("http://h/g")) == "<amfkit.remoting.AsyncClient http://h/g amf3>"
