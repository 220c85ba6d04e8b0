"""CORS on every answer the gateway gives, on every way it is served (docs/gateway.md,
"Clients on other origins"): the ASGI app under uvicorn (its short path, the general core,
assets, long-polls, HTTP streams), amfkit's own HTTP protocol (the AMF route and the asset
fast path answer before any ASGI app), WSGI, and `amfkit serve` with `--cors` and
`--crossdomain` on uvicorn and on granian (RSGI). Each request is sent from a listed
origin, an unlisted one and with no Origin; preflights are answered 204 or refused; the
WebSocket channel checks `Origin`; off by default nothing changes."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets.sync.client as ws_client
from websockets.exceptions import InvalidStatus

from amfkit.remoting import Gateway, packet
from amfkit.remoting import messages as m
from amfkit.remoting.cors import CORSPolicy, DEFAULT_HEADERS, check_origin

import cors_app
from abuse import amf_request
from messaging_util import Op, command, packet_of
from repo import ROOT
from servers import Tagged, serve_asgi, serve_wsgi

ALLOWED = "http://game.example:9000"
ALSO = "https://cdn.example"
OTHER = "https://evil.example"
ORIGINS = (ALLOWED, OTHER, None)
PROTOCOL = "amfkit.serving:HttpToolsProtocol"
SUPPORT = ROOT / "tests" / "support"


# --- raw HTTP: one write per request, every header line kept ------------------------------


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def get(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k == name]
        assert len(values) <= 1, (name, values)
        return values[0] if values else None

    def vary(self) -> set[str]:
        return {t.strip().lower() for k, v in self.headers if k == "vary" for t in v.split(",")}

    def cors(self) -> dict[str, str]:
        return {k: v for k, v in self.headers if k.startswith("access-control-")}


def http(port: int, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"", *, head_only: bool = False) -> Answer:
    """Send one request in one write (as browsers do for small requests, and as amfkit's
    protocol needs to answer it itself) and read the answer; `head_only`: read the
    status and headers of a held response (a stream) and close."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            assert chunk, f"connection closed before an answer: {buf[:200]!r}"
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        first, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(first.split()[1])
        out = []
        for line in header_lines:
            k, _, v = line.partition(":")
            out.append((k.strip().lower(), v.strip()))
        if head_only:
            return Answer(status, out, b"")
        length = next((int(v) for k, v in out if k == "content-length"), None)
        while length is None or len(rest) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        return Answer(status, out, rest if length is None else rest[:length])


# --- the servers -------------------------------------------------------------------------


@dataclass
class Server:
    kind: str
    port: int
    gateway: Gateway | None  # in this process (None: `amfkit serve`)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/gateway"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(server: str, tmp: Path, *extra: str) -> Iterator[Server]:
    port = _free_port()
    cmd = [sys.executable, "-m", "amfkit", "serve", "cors_app:gateway", "--port", str(port), "--log-level", "warning", "--server", server, *extra]
    env = dict(os.environ, AMFKIT_TEST_ASSETS=str(tmp / "assets"), PYTHONUNBUFFERED="1")
    stderr = tmp / f"{server}.stderr"
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=SUPPORT, stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/gateway", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"amfkit serve --server {server} did not start: {stderr.read_text()[-2000:]}")
            time.sleep(0.1)
        yield Server(f"cli-{server}", port, None)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log = stderr.read_text()
        assert "Traceback" not in log, log


CORS_OPTIONS: dict[str, Any] = {"cors": [ALLOWED, ALSO], "crossdomain": ["game.example"]}
CLI_OPTIONS = ("--cors", ALLOWED, "--cors", ALSO, "--crossdomain", "game.example")


@pytest.fixture(scope="module", params=["asgi", "protocol", "wsgi", "cli-uvicorn", "cli-granian"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp(request.param)
    kind = request.param
    if kind.startswith("cli-"):
        if kind == "cli-granian":
            pytest.importorskip("granian")
        yield from _cli(kind[4:], tmp, *CLI_OPTIONS)
        return
    gateway = cors_app.build(tmp / "assets", **CORS_OPTIONS)
    if kind == "wsgi":
        with serve_wsgi(gateway.wsgi) as running:
            yield Server(kind, running.port, gateway)
    else:
        options = {"http": PROTOCOL} if kind == "protocol" else {}
        with serve_asgi(Tagged(gateway), **options) as running:
            yield Server(kind, running.port, gateway)


def _json_rpc() -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "Game.echo", "params": [1], "id": 1}).encode()


XML_RPC = b"<?xml version='1.0'?><methodCall><methodName>Game.echo</methodName><params><param><value><int>1</int></value></param></params></methodCall>"
AMF = {"Content-Type": "application/x-amf"}

#: name: (method, path, headers, body, the status expected (or a function of the server's kind)).
REQUESTS: dict[str, tuple[str, str, dict[str, str], bytes, Any]] = {
    "amf call": ("POST", "/gateway", AMF, amf_request(3, "Game.echo", ["hi"]), 200),
    "amf array param": ("POST", "/gateway", AMF, amf_request(0, "Game.names", [["a"]]), 200),
    "amf fault": ("POST", "/gateway", AMF, amf_request(0, "Game.fail", ["no"]), 200),
    "amf async": ("POST", "/gateway", AMF, amf_request(3, "Game.later", [1]), 200),
    "amf malformed": ("POST", "/gateway", AMF, b"\x00\x03\x00\x00\x00\x01\xff", 400),
    "amf too large": ("POST", "/gateway", AMF, b"\x00" * 70_000, 413),
    "json-rpc": ("POST", "/gateway", {"Content-Type": "application/json"}, _json_rpc(), 200),
    "xml-rpc": ("POST", "/gateway", {"Content-Type": "text/xml"}, XML_RPC, 200),
    "unsupported type": ("POST", "/gateway", {"Content-Type": "image/png"}, b"x", 415),
    "discovery": ("GET", "/gateway", {}, b"", 200),
    "not found": ("GET", "/nowhere", {}, b"", 404),
    "method not allowed": ("PUT", "/gateway", {}, b"", 405),
    "not a preflight": ("OPTIONS", "/gateway", {}, b"", 405),
    "asset": ("GET", f"/assets/{cors_app.ASSET}", {}, b"", 200),
    "asset head": ("HEAD", f"/assets/{cors_app.ASSET}", {}, b"", 200),
    "asset range": ("GET", f"/assets/{cors_app.ASSET}", {"Range": "bytes=0-7"}, b"", 206),
    "asset missing": ("GET", "/assets/none.png", {}, b"", 404),
    "crossdomain.xml": ("GET", "/crossdomain.xml", {}, b"", 200),
    "stream refused": ("POST", "/gateway?command=open&version=1", {"Content-Type": "application/x-www-form-urlencoded"}, b"", 400),
}


def check_actual(answer: Answer, origin: str | None, where: str) -> None:
    """The CORS headers of an answer that is not a preflight's."""
    assert "origin" in answer.vary(), where
    if origin == ALLOWED:
        assert answer.cors() == {"access-control-allow-origin": ALLOWED}, where
    else:
        assert answer.cors() == {}, where


@pytest.mark.parametrize("name", list(REQUESTS))
def test_every_answer_carries_the_cors_headers(server: Server, name: str) -> None:
    method, path, headers, body, status = REQUESTS[name]
    for origin in ORIGINS:
        sent = dict(headers, **({"Origin": origin} if origin else {}))
        answer = http(server.port, method, path, sent, body)
        assert answer.status == status, (name, origin, answer.status, answer.body[:200])
        check_actual(answer, origin, f"{server.kind}: {name} from {origin}")
        if server.kind == "protocol" and name in ("amf call", "amf fault", "asset", "asset head", "asset range"):
            assert answer.get("x-asgi") is None, f"{name} was not answered by amfkit's protocol"
        elif server.kind in ("asgi", "protocol") and name in ("discovery", "json-rpc", "stream refused", "amf too large"):
            assert answer.get("x-asgi") == "1"


def test_a_long_poll_and_an_http_stream_carry_them(server: Server) -> None:
    """The messaging channels that hold their answer: a parked poll, and an open stream
    (not under WSGI, where a stream is refused with 400, carrying them too)."""
    port = server.port
    for origin in ORIGINS:
        extra = {"Origin": origin} if origin else {}
        ack = packet.decode(http(port, "POST", "/gateway", dict(AMF, **extra), packet_of(command(Op.CLIENT_PING))).body).bodies[0].value
        dsid = ack.headers["DSId"]
        subscribed = http(port, "POST", "/gateway", dict(AMF, **extra), packet_of(command(Op.SUBSCRIBE, dsid, "chat")))
        assert isinstance(packet.decode(subscribed.body).bodies[0].value, m.AcknowledgeMessage)
        started = time.monotonic()
        poll = http(port, "POST", "/gateway", dict(AMF, **extra), packet_of(command(Op.POLL, dsid, "chat")))
        assert poll.status == 200 and time.monotonic() - started >= 0.15  # held for poll_wait
        check_actual(poll, origin, f"{server.kind}: a long-poll from {origin}")
        form = {"Content-Type": "application/x-www-form-urlencoded", **extra}
        stream = http(port, "POST", "/gateway?command=open&version=1", form, f"DSId={dsid}".encode(), head_only=True)
        assert stream.status == (400 if server.kind == "wsgi" else 200), stream
        check_actual(stream, origin, f"{server.kind}: an HTTP stream from {origin}")


PREFLIGHTS: list[tuple[str, dict[str, str], int, str | None]] = [
    # (what, request headers, status, Access-Control-Allow-Headers expected)
    ("an AMF POST", {"Origin": ALLOWED, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}, 204, "content-type"),
    ("JSON-RPC with credentials", {"Origin": ALSO, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "Content-Type, Authorization"}, 204, "content-type, authorization"),
    ("an asset range", {"Origin": ALLOWED, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "range"}, 204, "range"),
    ("no headers asked", {"Origin": ALLOWED, "Access-Control-Request-Method": "GET"}, 204, None),
    ("an unlisted origin", {"Origin": OTHER, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}, 400, None),
    ("a header not allowed", {"Origin": ALLOWED, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-secret"}, 400, None),
    ("a method not allowed", {"Origin": ALLOWED, "Access-Control-Request-Method": "DELETE"}, 400, None),
    ("private network access", {"Origin": ALLOWED, "Access-Control-Request-Method": "POST", "Access-Control-Request-Private-Network": "true"}, 400, None),
]


@pytest.mark.parametrize("path", ["/gateway", f"/assets/{cors_app.ASSET}", "/crossdomain.xml"])
@pytest.mark.parametrize(("what", "headers", "status", "allow_headers"), PREFLIGHTS, ids=[p[0] for p in PREFLIGHTS])
def test_preflights(server: Server, path: str, what: str, headers: dict[str, str], status: int, allow_headers: str | None) -> None:
    answer = http(server.port, "OPTIONS", path, headers)
    assert answer.status == status, (what, answer.body)
    assert {"origin", "access-control-request-method", "access-control-request-headers"} <= answer.vary()
    if status == 400:
        assert answer.cors() == {} and answer.body.startswith(b"CORS preflight refused: ")
        return
    expected = {
        "access-control-allow-origin": headers["Origin"],
        "access-control-allow-methods": "GET, HEAD, POST",
        "access-control-max-age": "600",
    }
    if allow_headers is not None:
        expected["access-control-allow-headers"] = allow_headers
    assert answer.cors() == expected and answer.body == b""


def test_the_crossdomain_file_is_served(server: Server) -> None:
    answer = http(server.port, "GET", "/crossdomain.xml")
    assert answer.get("content-type") == "text/x-cross-domain-policy"
    assert b'<allow-access-from domain="game.example" />' in answer.body


# --- the WebSocket channel checks Origin ---------------------------------------------------


def _opens(port: int, origin: str | None) -> bool:
    """Whether a WebSocket to the gateway's path opens (and answers a ping) from a page of
    `origin` (None: a client outside a browser, which sends none)."""
    try:
        with ws_client.connect(f"ws://127.0.0.1:{port}/gateway", origin=origin, open_timeout=10) as ws:  # type: ignore[arg-type]
            ws.send(amfkit_amf3_encode(command(Op.CLIENT_PING)))
            reply = amfkit_amf3_decode(ws.recv(timeout=10))
            assert isinstance(reply, m.AcknowledgeMessage)
            return True
    except InvalidStatus as e:
        assert e.response.status_code == 403
        return False


def amfkit_amf3_encode(value: Any) -> bytes:
    import amfkit

    return amfkit.amf3.encode(value)


def amfkit_amf3_decode(data: Any) -> Any:
    import amfkit

    return amfkit.amf3.decode(data)


@pytest.mark.parametrize("server", ["asgi", "protocol", "cli-uvicorn", "cli-granian"], indirect=True)  # WSGI has none
def test_the_websocket_is_refused_to_an_unlisted_origin(server: Server) -> None:
    port = server.port
    assert _opens(port, None)  # no Origin: not a browser
    assert _opens(port, f"http://127.0.0.1:{port}")  # the gateway's own origin
    assert _opens(port, ALLOWED) and _opens(port, ALSO)  # listed
    assert not _opens(port, OTHER)
    assert not _opens(port, f"http://127.0.0.1:{port + 1}")  # the same host, another port
    assert not _opens(port, "null")


def test_without_cors_only_the_gateways_own_origin_opens_the_websocket(tmp_path: Path) -> None:
    gateway = cors_app.build(tmp_path)
    with serve_asgi(gateway) as running:
        assert _opens(running.port, None)
        assert _opens(running.port, f"http://127.0.0.1:{running.port}")
        assert _opens(running.port, f"http://localhost:{running.port}") is False  # another host name: another origin
        assert not _opens(running.port, ALLOWED)


# --- off by default, and the policy's checks ----------------------------------------------


def test_off_by_default_nothing_changes(tmp_path: Path) -> None:
    gateway = cors_app.build(tmp_path)
    assert gateway.cors is None and gateway.crossdomain is None
    with serve_asgi(Tagged(gateway), http=PROTOCOL) as running:
        for name in ("amf call", "discovery", "asset", "not found"):
            method, path, headers, body, status = REQUESTS[name]
            answer = http(running.port, method, path, dict(headers, Origin=ALLOWED), body)
            assert answer.status == status and answer.cors() == {} and "origin" not in answer.vary(), name
        preflight = http(running.port, "OPTIONS", "/gateway", {"Origin": ALLOWED, "Access-Control-Request-Method": "POST"})
        assert preflight.status == 405 and preflight.cors() == {}
        assert http(running.port, "GET", "/crossdomain.xml").status == 404


def test_credentials_and_every_origin(tmp_path: Path) -> None:
    with_credentials = cors_app.build(tmp_path / "a", cors=ALLOWED, cors_credentials=True)
    status, headers, _ = asyncio.run(with_credentials.respond("GET", "/gateway", {"Origin": ALLOWED}, b""))
    assert ("access-control-allow-credentials", "true") in headers and ("access-control-allow-origin", ALLOWED) in headers
    status, headers, _ = asyncio.run(
        with_credentials.respond("OPTIONS", "/gateway", {"Origin": ALLOWED, "Access-Control-Request-Method": "POST"}, b"")
    )
    assert status == 204 and ("access-control-allow-credentials", "true") in headers
    anyone = cors_app.build(tmp_path / "b", cors="*")
    status, headers, _ = asyncio.run(anyone.respond("POST", "/gateway", {"Origin": OTHER, "Content-Type": "application/x-amf"}, amf_request(3, "Game.echo", [1])))
    assert status == 200 and ("access-control-allow-origin", "*") in headers and not any(k == "access-control-allow-credentials" for k, _ in headers)
    with pytest.raises(ValueError, match="forbids credentials with"):
        Gateway({}, cors="*", cors_credentials=True)
    with pytest.raises(ValueError, match="needs cors="):
        Gateway({}, cors_credentials=True)


@pytest.mark.parametrize(
    ("origin", "message"),
    [
        ("https://game.example/", "not an origin"),
        ("https://game.example/play", "not an origin"),
        ("game.example", "not an origin"),
        ("null", "sandboxed"),
        ("https://user@game.example", "not an origin"),
        ("https://game.example:99999", "out of range"),
    ],
)
def test_origins_are_checked(origin: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CORSPolicy([origin])


def test_origins_as_browsers_write_them() -> None:
    assert check_origin("HTTPS://Game.Example:443") == "https://game.example"
    assert check_origin("http://127.0.0.1:9000") == "http://127.0.0.1:9000"
    assert check_origin("http://[::1]:8080") == "http://[::1]:8080"
    policy = CORSPolicy(["https://game.example:443"], headers=["X-Game-Token"])
    assert policy.allows("https://game.example") and not policy.allows("https://game.example:443")
    assert "x-game-token" in policy.allowed_headers and set(DEFAULT_HEADERS) <= policy.allowed_headers
    with pytest.raises(ValueError, match="give it alone"):
        CORSPolicy(["*", ALLOWED])
    with pytest.raises(ValueError, match="not a header name"):
        CORSPolicy(ALLOWED, headers=["bad header"])

