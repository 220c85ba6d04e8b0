"""The gateway's short path outside its ASGI app: plain AMF calls answered by amfkit's HTTP
protocol for uvicorn (`Gateway.amf_fast_route`, amfkit.serving) with no ASGI task, and
by the WSGI adapter with no event loop. Through a real uvicorn with amfkit's protocol:
the answers are the ASGI app's, everything the route does not take still reaches the
app, and the server's bounds hold."""

from __future__ import annotations

import contextvars
import gzip
import socket
import time
from typing import Any

import httpx
import pytest
from abuse import Closed, amf_request, amf_result, read_response
from gateway_util import EchoService
from servers import Tagged, serve_asgi

from amfkit.remoting import Gateway, packet
from amfkit.remoting import messages as m
from amfkit.remoting.packet import Body, Envelope, Header

PROTOCOL = "amfkit.serving:HttpToolsProtocol"
CALLS = contextvars.ContextVar("calls", default=0)


class Service(EchoService):
    def later(self, value: Any) -> Any:
        """A synchronous method whose result must be awaited."""

        async def result() -> Any:
            return value

        return result()

    def counted(self) -> int:
        """How many times this context saw the call: 1 when each request has its own."""
        CALLS.set(CALLS.get() + 1)
        return CALLS.get()


def flex_request(destination: str, operation: str, args: list[Any]) -> bytes:
    """A Flex RemoteObject call, as Flex sends it (a RemotingMessage in an AMF3 body)."""
    message = m.RemotingMessage(destination=destination, operation=operation, body=args, headers={"DSId": "nil"})
    return packet.encode(Envelope(3, [], [Body("null", "/1", [message])]))


@pytest.fixture(scope="module")
def gateway() -> Gateway:
    return Gateway({"EchoService": Service()})


@pytest.fixture(scope="module")
def url(gateway: Gateway) -> Any:
    with serve_asgi(Tagged(gateway), http=PROTOCOL) as server:
        yield server.url + "/gateway"


def _post(url: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(url, content=body, headers={"content-type": "application/x-amf", **headers})


def test_plain_calls_are_answered_by_the_protocol_with_the_apps_answer(url: str, gateway: Gateway) -> None:
    import asyncio

    for body, accept in (
        (amf_request(3, "EchoService.echo", [{"a": [1, 2.5, "x"]}]), "identity"),
        (amf_request(0, "EchoService.add", [2, 3]), "identity"),
        (amf_request(3, "EchoService.big", [200]), "gzip"),  # 3,800 bytes: compressed
        (amf_request(3, "EchoService.fail", ["no"]), "identity"),  # a fault
    ):
        # Head and body in one write, so that they arrive in one read (the route's
        # condition; a client writing them apart gets the ASGI app, tested below).
        with _raw(url) as s:
            s.sendall(_request(body, f"Accept-Encoding: {accept}\r\n"))
            status, fast_headers, wire = read_response(s, 5)
        assert status == 200 and "x-asgi" not in fast_headers
        status, headers, out = asyncio.run(gateway.respond("POST", "/gateway", {"content-type": "application/x-amf", "accept-encoding": accept}, body))
        assert status == 200 and wire == out
        assert {k: v for k, v in fast_headers.items() if k not in ("date", "server")} == dict(headers)


@pytest.mark.parametrize(
    "body, headers, path",
    [
        (flex_request("EchoService", "echo", [1]), {}, "/gateway"),  # a Flex message
        (amf_request(3, "EchoService.slow_echo", [1]), {}, "/gateway"),  # an async method
        (amf_request(3, "EchoService.nothing", [1]), {}, "/gateway"),  # no such method: its fault
        (packet.encode(Envelope(3, [Header("Trace", 1)], [Body("EchoService.echo", "/1", [1])])), {}, "/gateway"),
        (amf_request(3, "EchoService.echo", [1]), {}, "/gateway?amfkit_session=x"),  # a query string
        (gzip.compress(amf_request(3, "EchoService.echo", [1])), {"content-encoding": "gzip"}, "/gateway"),
        (amf_request(3, "EchoService.echo", [1]), {"content-type": "application/octet-stream"}, "/gateway"),
    ],
    ids=["flex", "async method", "no such method", "packet header", "query string", "gzip body", "another content type"],
)
def test_what_the_route_leaves_goes_to_the_app(url: str, body: bytes, headers: dict[str, str], path: str) -> None:
    r = httpx.post(url.replace("/gateway", path), content=body, headers={"content-type": "application/x-amf", **headers})
    assert r.headers.get("x-asgi") == "1"
    if r.status_code == 200:
        assert packet.decode(r.content).bodies[0].target.endswith(("/onResult", "/onStatus"))
    else:
        assert r.status_code == 415  # the content type the gateway does not speak


def test_a_result_to_await_is_sent_from_a_task(url: str) -> None:
    assert amf_result(_post(url, amf_request(3, "EchoService.later", ["awaited"])).content) == "awaited"


def test_each_call_has_a_context_of_its_own(url: str) -> None:
    for _ in range(3):
        assert amf_result(_post(url, amf_request(3, "EchoService.counted", [])).content) == 1


def _raw(url: str) -> socket.socket:
    host, port = url.split("//")[1].split("/")[0].split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def _request(body: bytes, extra: str = "") -> bytes:
    return (
        f"POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def test_a_body_after_its_head_goes_to_the_app(url: str) -> None:
    request = _request(amf_request(3, "EchoService.echo", ["split"]))
    with _raw(url) as s:
        s.sendall(request[:-5])
        time.sleep(0.1)
        s.sendall(request[-5:])
        status, headers, body = read_response(s, 5)
        assert status == 200 and headers.get("x-asgi") == "1" and amf_result(body) == "split"


def test_pipelined_requests_are_answered_in_order(url: str) -> None:
    plain = [_request(amf_request(3, "EchoService.echo", [i])) for i in range(3)]
    flex = _request(flex_request("EchoService", "echo", ["flex"]))
    with _raw(url) as s:
        s.sendall(plain[0] + flex + plain[1] + b"POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nbad" + plain[2])
        buf = bytearray()
        answers = [read_response(s, 5, buf) for _ in range(5)]
    assert [a[0] for a in answers] == [200, 200, 200, 400, 200]
    assert amf_result(answers[0][2]) == 0 and amf_result(answers[2][2]) == 1 and amf_result(answers[4][2]) == 2
    assert packet.decode(answers[1][2]).bodies[0].value.body == "flex"
    assert b"malformed AMF packet" in answers[3][2]


def test_the_concurrency_limit_holds() -> None:
    """Past --limit-concurrency the route steps aside and uvicorn answers 503."""
    with serve_asgi(Gateway({"EchoService": Service()}), http=PROTOCOL, limit_concurrency=1) as server:
        r = _post(server.url + "/gateway", amf_request(3, "EchoService.echo", [1]))
        assert r.status_code == 503


def test_with_an_access_log_every_request_goes_through_the_app(gateway: Gateway) -> None:
    with serve_asgi(Tagged(gateway), http=PROTOCOL, access_log=True) as server:
        r = _post(server.url + "/gateway", amf_request(3, "EchoService.echo", [1]))
        assert r.headers.get("x-asgi") == "1" and amf_result(r.content) == 1


def test_a_refused_request_closes_the_connection(url: str) -> None:
    """413 on Content-Length: the route does not take it; the app refuses and closes."""
    with _raw(url) as s:
        s.sendall(b"POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\nContent-Length: 99999999999\r\n\r\n")
        status, headers, _ = read_response(s, 5)
        assert status == 413 and headers.get("x-asgi") == "1"
        with pytest.raises(Closed):
            read_response(s, 5)


def _wsgi(gateway: Gateway, body: bytes, **environ: str) -> tuple[str, dict[str, str], bytes]:
    import io

    seen: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        seen["status"], seen["headers"] = status, dict(headers)

    env = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/gateway",
        "CONTENT_TYPE": "application/x-amf",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        **environ,
    }
    out = b"".join(gateway.wsgi(env, start_response))
    return seen["status"], seen["headers"], out


def test_wsgi_answers_plain_calls_without_an_event_loop(gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    body = amf_request(3, "EchoService.echo", ["wsgi"])
    status, headers, out = _wsgi(gateway, body)
    assert status == "200 OK" and amf_result(out) == "wsgi"
    assert asyncio.run(gateway.respond("POST", "/gateway", {"content-type": "application/x-amf"}, body))[2] == out
    # what it does not take, and a result to await, the event loop answers
    assert amf_result(_wsgi(gateway, amf_request(3, "EchoService.later", ["x"]))[2]) == "x"
    assert amf_result(_wsgi(gateway, amf_request(3, "EchoService.slow_echo", ["y"]))[2]) == "y"
    status, _, out = _wsgi(gateway, b"bad")
    assert status.startswith("400") and b"malformed AMF packet" in out
    status, headers, out = _wsgi(gateway, amf_request(3, "EchoService.big", [200]), HTTP_ACCEPT_ENCODING="gzip")
    assert headers["content-encoding"] == "gzip" and amf_result(gzip.decompress(out)) == "tile,1,2,FFAA00,90\n" * 200


def test_a_chunked_body_past_the_limit_is_refused() -> None:
    """A body without Content-Length (chunked) that came whole in one read is still held
    to the gateway's max_body_size: the ASGI app answers 413."""
    small = Gateway({"EchoService": Service()}, max_body_size=1024)
    body = amf_request(3, "EchoService.echo", ["x" * 2000])
    chunked = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
    head = b"POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\nTransfer-Encoding: chunked\r\n\r\n"
    with serve_asgi(Tagged(small), http=PROTOCOL) as server:
        with _raw(server.url + "/gateway") as s:
            s.sendall(head + chunked)
            status, headers, _ = read_response(s, 5)
        assert status == 413 and headers.get("x-asgi") == "1"
        small_body = amf_request(3, "EchoService.echo", ["ok"])
        with _raw(server.url + "/gateway") as s:
            s.sendall(head + b"%x\r\n" % len(small_body) + small_body + b"\r\n0\r\n\r\n")
            status, headers, out = read_response(s, 5)
        assert status == 200 and "x-asgi" not in headers and amf_result(out) == "ok"


def test_flex_and_credentialed_packets_are_left_to_the_app_undecoded(gateway: Gateway, monkeypatch) -> None:
    """The route tells them from their first bytes, so the app's decode is the only one."""
    from amfkit.remoting import amf

    decoded: list[int] = []
    real = amf._decode
    monkeypatch.setattr(amf, "_decode", lambda body, settings: decoded.append(len(body)) or real(body, settings))
    credentials = packet.encode(
        Envelope(0, [Header("Credentials", {"userid": "u", "password": "p"})], [Body("EchoService.echo", "/1", [1])])
    )
    for body in (flex_request("EchoService", "echo", [1]), credentials):
        assert gateway.amf_fast_route.answer(body, "") is None
    assert decoded == []
    assert gateway.amf_fast_route.answer(amf_request(3, "EchoService.echo", ["plain"]), "") is not None
    assert len(decoded) == 1
