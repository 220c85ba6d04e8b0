"""The gateway's short ASGI path answers exactly as its general core does."""

from __future__ import annotations

import asyncio

import pytest

from amfkit.remoting import Gateway, Services, packet
from amfkit.remoting.packet import Body, Envelope, Header


class Echo:
    def echo(self, value):
        return value

    def fail(self, message: str):
        raise RuntimeError(message)

    async def later(self, x: int) -> int:
        return x + 1


def asgi_call(app, body: bytes, headers: list[tuple[bytes, bytes]], query: bytes = b"") -> tuple[int, dict[bytes, bytes], bytes]:
    scope = {"type": "http", "method": "POST", "path": "/gateway", "query_string": query, "headers": headers}
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


PACKETS = [
    Envelope(3, [], [Body("Echo.echo", "/1", [{"a": [1, 2]}])]),
    Envelope(0, [], [Body("Echo.echo", "/1", ["x"]), Body("Echo.fail", "/2", ["no"]), Body("Echo.later", "/3", [1])]),
    Envelope(3, [], [Body("Echo.echo", "/1", "a lone argument")]),
    Envelope(3, [], [Body("Echo.later", "/1", ["wrong type"])]),
    Envelope(3, [], [Body("Nope.nothing", "/1", [])]),
    Envelope(3, [Header("Custom", 1, must_understand=True)], [Body("Echo.echo", "/1", [1])]),
    Envelope(3, [], [Body("Echo.echo", "/1", ["x" * 5000])]),
]


@pytest.mark.parametrize("envelope", PACKETS)
@pytest.mark.parametrize("gzip", [False, True])
def test_short_path_and_core_agree(envelope, gzip):
    gateway = Gateway(Services({"Echo": Echo()}))
    body = packet.encode(envelope)
    headers = [(b"content-type", b"application/x-amf"), (b"content-length", str(len(body)).encode())]
    if gzip:
        headers.append((b"accept-encoding", b"gzip"))
    status, out_headers, out = asgi_call(gateway, body, headers)
    expected = asyncio.run(
        gateway.respond("POST", "/gateway", {k.decode(): v.decode() for k, v in headers}, body)
    )
    assert status == expected[0]
    assert {k.decode(): v.decode() for k, v in out_headers.items()} == dict(expected[1])
    assert out == expected[2]


def test_requests_the_short_path_does_not_take_still_work():
    gateway = Gateway(Services({"Echo": Echo()}))
    body = packet.encode(Envelope(3, [], [Body("Echo.echo", "/1", [5])]))
    # a query string, another content type, an empty and a malformed body
    status, _, out = asgi_call(gateway, body, [(b"content-type", b"application/x-amf")], query=b"x=1")
    assert status == 200 and packet.decode(out).bodies[0].value == 5
    status, _, _ = asgi_call(gateway, body, [(b"content-type", b"image/png")])
    assert status == 415
    status, _, _ = asgi_call(gateway, b"", [(b"content-type", b"application/x-amf")])
    assert status == 400
    status, _, text = asgi_call(gateway, body[:-2], [(b"content-type", b"application/x-amf")])
    assert status == 400 and b"malformed AMF packet" in text
