"""The gateway over HTTP: paths, methods, content types, limits, gzip both ways, the ASGI
app and the WSGI adapter in process, end to end over uvicorn and wsgiref on 127.0.0.1,
and `amfkit serve`."""

from __future__ import annotations

import asyncio
import gc
import io
import json
import os
import sys
import time
import zlib
from typing import Any

import pytest

from amfkit.remoting import http as gwhttp
from amfkit.remoting import packet

from gateway_util import AMF, answer, authenticate, call, gateway, nc, request
from servers import serve_cli

ECHO = request(0, [("EchoService.echo", "/1", ["hi"])])


def big_request(n: int = 2000, version: int = 0) -> bytes:
    return request(version, [("EchoService.big", "/1", [n])])


# --- paths, methods, discovery ---------------------------------------------------------


def test_other_paths_are_404() -> None:
    status, h, out = call(gateway(), ECHO, path="/elsewhere")
    assert status == 404
    assert h["content-type"].startswith("text/plain")
    assert b"/gateway" in out


def test_trailing_slash_and_query_are_accepted() -> None:
    assert call(gateway(), ECHO, path="/gateway/")[0] == 200
    assert call(gateway(), ECHO, path="/gateway?x=1")[0] == 200


def test_custom_path_and_any_path() -> None:
    assert call(gateway(path="/amf"), ECHO, path="/amf")[0] == 200
    assert call(gateway(path="/amf"), ECHO, path="/gateway")[0] == 404
    assert call(gateway(path=None), ECHO, path="/anything/at/all")[0] == 200


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_other_methods_are_405(method: str) -> None:
    status, h, _ = call(gateway(), b"", method=method)
    assert status == 405
    assert h["allow"] == "GET, POST"


def test_get_answers_the_discovery_document() -> None:
    status, h, out = call(gateway(), method="GET", headers={})
    assert status == 200
    assert h["content-type"] == "application/json"
    doc = json.loads(out)
    (service,) = doc["services"]
    assert service["name"] == "EchoService"
    names = {m["name"] for m in service["methods"]}
    assert {"echo", "add", "secret"} <= names
    add = next(m for m in service["methods"] if m["name"] == "add")
    assert [p["name"] for p in add["params"]] == ["a", "b"]


# --- content types ---------------------------------------------------------------------


@pytest.mark.parametrize("ctype", ["application/x-amf", "application/x-amf; charset=utf-8", "Application/X-AMF", ""])
def test_amf_content_types(ctype: str) -> None:
    status, h, _ = call(gateway(), ECHO, {"content-type": ctype} if ctype else {})
    assert status == 200
    assert h["content-type"] == "application/x-amf"


@pytest.mark.parametrize("ctype", ["text/plain", "application/octet-stream", "multipart/form-data; boundary=x"])
def test_unknown_content_type_is_415(ctype: str) -> None:
    status, _, out = call(gateway(), ECHO, {"content-type": ctype})
    assert status == 415
    assert b"application/x-amf" in out


def test_json_rpc_on_the_same_url() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "EchoService.add", "params": [2, 3]}).encode()
    status, h, out = call(gateway(), body, {"content-type": "application/json"})
    assert status == 200
    assert h["content-type"] == "application/json"
    assert json.loads(out)["result"] == 5


def test_every_content_type_a_protocol_declares_reaches_it() -> None:
    from amfkit.remoting import amf, jsonrpc, xmlrpc

    json_body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "EchoService.add", "params": [2, 3]}).encode()
    xml_body = b"<methodCall><methodName>EchoService.add</methodName><params><param><value><int>2</int></value></param><param><value><int>3</int></value></param></params></methodCall>"
    for module, body, expected in ((amf, ECHO, b"onResult"), (jsonrpc, json_body, b'"result":5'), (xmlrpc, xml_body, b"<int>5</int>")):
        for ctype in module.CONTENT_TYPES:
            status, h, out = call(gateway(), body, {"content-type": ctype + "; charset=utf-8"})
            assert status == 200 and h["content-type"] == module.CONTENT_TYPE and expected in out, ctype


def test_json_rpc_notification_only_is_204() -> None:
    body = json.dumps({"jsonrpc": "2.0", "method": "EchoService.add", "params": [2, 3]}).encode()
    status, _, out = call(gateway(), body, {"content-type": "application/json"})
    assert status == 204 and out == b""


def test_xml_rpc_on_the_same_url() -> None:
    body = b"<?xml version='1.0'?><methodCall><methodName>EchoService.add</methodName><params><param><value><int>2</int></value></param><param><value><int>40</int></value></param></params></methodCall>"
    for ctype in ("text/xml", "application/xml"):
        status, h, out = call(gateway(), body, {"content-type": ctype})
        assert status == 200
        assert h["content-type"] == "text/xml"
        assert b"<int>42</int>" in out or b"<i4>42</i4>" in out


def test_xml_rpc_without_defusedxml_is_a_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    from amfkit.remoting import xmlrpc

    monkeypatch.setattr(xmlrpc, "_defused", None)  # as when defusedxml is not installed
    body = b"<methodCall><methodName>EchoService.add</methodName></methodCall>"
    status, h, out = call(gateway(), body, {"content-type": "text/xml"})
    assert status == 200 and h["content-type"] == "text/xml"
    assert b"<int>-32400</int>" in out and b"defusedxml" in out


def test_rpc_basic_auth() -> None:
    import base64

    gw = gateway(authenticator=authenticate)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "EchoService.secret", "params": []}).encode()
    good = "Basic " + base64.b64encode(b"alice:wonderland").decode()
    bad = "Basic " + base64.b64encode(b"alice:nope").decode()
    status, _, out = call(gw, body, {"content-type": "application/json", "authorization": good})
    assert status == 200 and json.loads(out)["result"] == "s3cret"
    status, h, _ = call(gw, body, {"content-type": "application/json", "authorization": bad})
    assert status == 401 and "basic" in h["www-authenticate"].lower()
    status, _, out = call(gw, body, {"content-type": "application/json"})
    assert status == 200 and "error" in json.loads(out)


# --- malformed bodies and limits ------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00",
        ECHO[:-3],
        ECHO[:9],
        b"garbage garbage garbage",
        b"\x00\x03\x00\x00\x00\x01\x00\x01a\x00\x01b\xff\xff\xff\xff\x0a\xff\xff\xff\xff",
        b"\x00\x03\x00\x00\x00\x01\x00\x01a\x00\x01b\x00\x00\x00\x00\x11\x0a\x07\x03DSC\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    ],
    ids=["empty", "one-byte", "truncated", "truncated-early", "garbage", "huge-array", "bad-small-form"],
)
def test_malformed_amf_is_400_and_the_gateway_keeps_serving(body: bytes) -> None:
    gw = gateway()
    status, h, out = call(gw, body)
    assert status == 400, out
    assert h["content-type"].startswith("text/plain")
    assert b"Traceback" not in out and len(out) < 300
    assert answer(gw, ECHO).bodies[0].value == "hi"


def test_body_too_large_is_413() -> None:
    gw = gateway(max_body_size=len(ECHO) - 1)
    status, _, _ = call(gw, ECHO)
    assert status == 413
    assert call(gateway(max_body_size=len(ECHO)), ECHO)[0] == 200


def test_decode_limits_apply() -> None:
    deep: Any = "x"
    for _ in range(40):
        deep = [deep]
    data = request(3, [("EchoService.echo", "/1", [deep])])
    assert call(gateway(max_depth=16), data)[0] == 400
    assert call(gateway(), data)[0] == 200
    many = request(3, [("EchoService.echo", "/1", [[{} for _ in range(50)]])])
    assert call(gateway(max_objects=10), many)[0] == 400


# --- gzip ------------------------------------------------------------------------------


def test_gzip_response_over_the_threshold() -> None:
    status, h, out = call(gateway(), big_request(), {**AMF, "accept-encoding": "gzip, deflate, br"})
    assert status == 200
    assert h["content-encoding"] == "gzip"
    assert h["vary"] == "Accept-Encoding"
    assert int(h["content-length"]) == len(out)
    plain = zlib.decompress(out, 31)
    assert packet.decode(plain).bodies[0].value == "tile,1,2,FFAA00,90\n" * 2000
    assert len(out) < len(plain) / 10


def test_no_gzip_under_the_threshold() -> None:
    status, h, out = call(gateway(), ECHO, {**AMF, "accept-encoding": "gzip"})
    assert "content-encoding" not in h
    assert packet.decode(out).bodies[0].value == "hi"


@pytest.mark.parametrize("accept", [None, "identity", "deflate", "gzip;q=0", "br, gzip;q=0, *;q=0.5"])
def test_no_gzip_when_not_accepted(accept: str | None) -> None:
    headers = dict(AMF)
    if accept is not None:
        headers["accept-encoding"] = accept
    status, h, out = call(gateway(), big_request(), headers)
    assert "content-encoding" not in h
    assert packet.decode(out).bodies[0].value.startswith("tile")


def test_gzip_threshold_option() -> None:
    headers = {**AMF, "accept-encoding": "gzip"}
    assert call(gateway(gzip_threshold=0), ECHO, headers)[1]["content-encoding"] == "gzip"
    h = call(gateway(gzip_threshold=None), big_request(), headers)[1]
    assert "content-encoding" not in h and "vary" not in h


def test_gzip_threshold_is_inclusive() -> None:
    size = len(call(gateway(), big_request(100))[2])
    headers = {**AMF, "accept-encoding": "gzip"}
    assert call(gateway(gzip_threshold=size), big_request(100), headers)[1].get("content-encoding") == "gzip"
    assert "content-encoding" not in call(gateway(gzip_threshold=size + 1), big_request(100), headers)[1]


@pytest.mark.parametrize(
    "value,expected",
    [
        ("gzip", True),
        ("GZIP", True),
        ("x-gzip", True),
        ("deflate, gzip;q=0.5", True),
        ("gzip;q=0", False),
        ("gzip; q=0.0", False),
        ("*", True),
        ("*;q=0", False),
        ("identity", False),
        ("", False),
        ("gzip;q=nonsense", False),
    ],
)
def test_accept_encoding_parsing(value: str, expected: bool) -> None:
    assert gwhttp.accepts_gzip(value) is expected


def test_gzip_request_body() -> None:
    status, _, out = call(gateway(), gwhttp.gzip(ECHO), {**AMF, "content-encoding": "gzip"})
    assert status == 200
    assert packet.decode(out).bodies[0].value == "hi"


def test_deflate_request_bodies() -> None:
    for body in (zlib.compress(ECHO), zlib.compress(ECHO)[2:-4]):  # zlib-wrapped and raw
        status, _, out = call(gateway(), body, {**AMF, "content-encoding": "deflate"})
        assert status == 200, out


def test_multi_member_gzip_request_body() -> None:
    body = gwhttp.gzip(ECHO[:10]) + gwhttp.gzip(ECHO[10:])
    status, _, out = call(gateway(), body, {**AMF, "content-encoding": "gzip"})
    assert status == 200 and packet.decode(out).bodies[0].value == "hi"


def test_gzip_bomb_is_refused() -> None:
    bomb = gwhttp.gzip(b"\x00" * (64 * 1024 * 1024), 9)  # 64 MiB of zeros in about 64 KB
    assert len(bomb) < 100_000
    gw = gateway(max_body_size=1024 * 1024)
    t = time.thread_time()  # the CPU time of this thread, which inflates (load elsewhere aside)
    status, _, out = call(gw, bomb, {**AMF, "content-encoding": "gzip"})
    assert status == 413
    assert time.thread_time() - t < 2.0  # stopped at the limit, not inflated to the end
    assert answer(gw, ECHO).bodies[0].value == "hi"


def test_gzip_bomb_in_later_member_is_refused() -> None:
    body = gwhttp.gzip(ECHO) + gwhttp.gzip(b"\x00" * 4_000_000)
    status, _, _ = call(gateway(max_body_size=1_000_000), body, {**AMF, "content-encoding": "gzip"})
    assert status == 413


@pytest.mark.parametrize("body", [b"not gzip at all", gwhttp.gzip(ECHO)[:-12]], ids=["corrupt", "truncated"])
def test_bad_gzip_request_body_is_400(body: bytes) -> None:
    status, _, out = call(gateway(), body, {**AMF, "content-encoding": "gzip"})
    assert status == 400
    assert b"gzip" in out


def test_unsupported_content_encoding_is_415() -> None:
    status, _, _ = call(gateway(), ECHO, {**AMF, "content-encoding": "br"})
    assert status == 415


# --- ASGI in process -------------------------------------------------------------------


def run_asgi(app: Any, scope: dict[str, Any], chunks: list[bytes]) -> tuple[int, dict[str, str], bytes]:
    sent: list[dict[str, Any]] = []

    async def main() -> None:
        messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            await asyncio.sleep(3600)
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app(scope, receive, send)

    asyncio.run(main())
    start, body = sent[0], sent[1]
    assert start["type"] == "http.response.start" and body["type"] == "http.response.body"
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body["body"]


def http_scope(method: str = "POST", path: str = "/gateway", query: bytes = b"", headers: dict[str, str] | None = None) -> dict[str, Any]:
    h = {"content-type": "application/x-amf"} if headers is None else headers
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in h.items()],
    }


def test_asgi_body_in_chunks() -> None:
    chunks = [ECHO[i : i + 7] for i in range(0, len(ECHO), 7)]
    status, h, out = run_asgi(gateway(), http_scope(), chunks)
    assert status == 200 and h["content-type"] == "application/x-amf"
    assert packet.decode(out).bodies[0].value == "hi"


def test_asgi_content_length_over_the_limit_is_refused_before_reading() -> None:
    scope = http_scope(headers={"content-type": "application/x-amf", "content-length": str(10**9)})
    status, _, _ = run_asgi(gateway(), scope, [])  # receive() is never called
    assert status == 413


def test_asgi_streamed_body_over_the_limit() -> None:
    status, _, _ = run_asgi(gateway(max_body_size=1000), http_scope(), [b"\x00" * 600, b"\x00" * 600])
    assert status == 413


def test_asgi_query_string_carries_the_session() -> None:
    gw = gateway()
    status, _, out = run_asgi(gw, http_scope(), [request(0, [("EchoService.remember", "/1", ["q"])])])
    suffix = packet.decode(out).header("AppendToGatewayUrl").value  # type: ignore[union-attr]
    status, _, out = run_asgi(gw, http_scope(query=suffix[1:].encode()), [request(0, [("EchoService.recall", "/1", [])])])
    assert packet.decode(out).bodies[0].value == "q"


def test_asgi_lifespan() -> None:
    sent: list[str] = []

    async def main() -> None:
        incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

        async def receive() -> dict[str, Any]:
            return incoming.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message["type"])

        await gateway()({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)

    asyncio.run(main())
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_asgi_with_httpx() -> None:
    import httpx

    async def main() -> None:
        transport = httpx.ASGITransport(app=gateway())
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            r = await client.post("/gateway", content=ECHO, headers=AMF)
            assert r.status_code == 200
            assert packet.decode(r.content).bodies[0].value == "hi"
            r = await client.post("/gateway", content=big_request(), headers={**AMF, "accept-encoding": "gzip"})
            assert r.headers["content-encoding"] == "gzip"
            assert packet.decode(r.content).bodies[0].value.startswith("tile")  # httpx inflated it
            r = await client.get("/gateway")
            assert r.json()["services"][0]["name"] == "EchoService"
            r = await client.post("/gateway", content=b"junk", headers=AMF)
            assert r.status_code == 400
            r = await client.get("/nowhere")
            assert r.status_code == 404

    asyncio.run(main())


# --- WSGI in process -------------------------------------------------------------------


def run_wsgi(app: Any, body: bytes = ECHO, *, method: str = "POST", path: str = "/gateway", query: str = "", headers: dict[str, str] | None = None, length: bool = True) -> tuple[str, dict[str, str], bytes]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "test",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "CONTENT_TYPE": "application/x-amf",
    }
    if length:
        environ["CONTENT_LENGTH"] = str(len(body))
    else:
        environ["wsgi.input_terminated"] = True
    for k, v in (headers or {}).items():
        environ["HTTP_" + k.upper().replace("-", "_")] = v
    seen: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        seen["status"] = status
        seen["headers"] = dict(response_headers)

    out = b"".join(app(environ, start_response))
    return seen["status"], seen["headers"], out


def test_wsgi_echo_and_status_line() -> None:
    gw = gateway()
    status, h, out = run_wsgi(gw.wsgi)
    assert status == "200 OK"
    assert h["content-type"] == "application/x-amf"
    assert packet.decode(out).bodies[0].value == "hi"
    assert run_wsgi(gw.wsgi, b"junk")[0] == "400 Bad Request"
    assert run_wsgi(gw.wsgi, method="DELETE")[0] == "405 Method Not Allowed"
    assert run_wsgi(gw.wsgi, path="/x")[0] == "404 Not Found"
    assert run_wsgi(gw.wsgi)[0] == "200 OK"
    gw.wsgi.close()


def test_wsgi_async_service_batching_and_sessions() -> None:
    gw = gateway()
    data = request(3, [("EchoService.slow_echo", "/1", [1]), ("EchoService.fail", "/2", ["x"]), ("EchoService.remember", "/3", ["w"])])
    _, _, out = run_wsgi(gw.wsgi, data)
    env = packet.decode(out)
    assert [b.target for b in env.bodies] == ["/1/onResult", "/2/onStatus", "/3/onResult"]
    suffix = env.header("AppendToGatewayUrl").value  # type: ignore[union-attr]
    _, _, out = run_wsgi(gw.wsgi, request(0, [("EchoService.recall", "/1", [])]), query=suffix[1:])
    assert packet.decode(out).bodies[0].value == "w"
    gw.wsgi.close()


def test_wsgi_gzip_both_ways_and_limits() -> None:
    gw = gateway(max_body_size=100_000)
    _, h, out = run_wsgi(gw.wsgi, big_request(), headers={"accept-encoding": "gzip"})
    assert h["content-encoding"] == "gzip"
    assert packet.decode(zlib.decompress(out, 31)).bodies[0].value.startswith("tile")
    _, h, out = run_wsgi(gw.wsgi, gwhttp.gzip(ECHO), headers={"content-encoding": "gzip"})
    assert packet.decode(out).bodies[0].value == "hi"
    assert run_wsgi(gw.wsgi, b"\x00" * 100_001)[0].startswith("413")
    assert run_wsgi(gw.wsgi, b"\x00" * 100_001, length=False)[0].startswith("413")
    assert run_wsgi(gw.wsgi, gwhttp.gzip(b"\x00" * 1_000_000), headers={"content-encoding": "gzip"})[0].startswith("413")
    assert run_wsgi(gw.wsgi, ECHO, length=False)[0] == "200 OK"
    gw.wsgi.close()


def test_wsgi_get_discovery() -> None:
    gw = gateway()
    status, h, out = run_wsgi(gw.wsgi, b"", method="GET")
    assert status == "200 OK" and json.loads(out)["services"]
    gw.wsgi.close()


# --- end to end over real servers ------------------------------------------------------


def test_end_to_end_over_uvicorn() -> None:
    import httpx

    from servers import serve_asgi

    gw = gateway(authenticator=authenticate)
    with serve_asgi(gw) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        url = "/gateway"
        r = client.post(url, content=request(0, [("EchoService.echo", "/1", ["hi"]), ("EchoService.fail", "/2", ["no"])]), headers=AMF)
        assert r.status_code == 200 and r.headers["content-type"] == "application/x-amf"
        env = packet.decode(r.content)
        assert env.bodies[0].value == "hi" and env.bodies[1].value["code"] == "Server.Processing"
        # garbage, then the server still serves
        for junk in (b"", b"\x00\x03", b"garbage!"):
            assert client.post(url, content=junk, headers=AMF).status_code == 400
        r = client.post(url, content=big_request(5000, 3), headers={**AMF, "accept-encoding": "gzip"})
        assert r.headers["content-encoding"] == "gzip"
        assert int(r.headers["content-length"]) < 10_000
        assert packet.decode(r.content).bodies[0].value.count("\n") == 5000
        r = client.post(url, content=gwhttp.gzip(ECHO), headers={**AMF, "content-encoding": "gzip"})
        assert packet.decode(r.content).bodies[0].value == "hi"
        r = client.post(url, content=b"\x00" * (gw.max_body_size + 1), headers=AMF)
        assert r.status_code == 413
        r = client.post(url, content=b"x", headers={"content-type": "text/plain"})
        assert r.status_code == 415
        assert client.get(url).json()["services"][0]["name"] == "EchoService"
        assert client.post(url, content=ECHO, headers=AMF).status_code == 200


def test_end_to_end_with_the_amfkit_client() -> None:
    from amfkit.remoting.client import Client

    from servers import serve_asgi

    with serve_asgi(gateway(authenticator=authenticate)) as server:
        with Client(server.url + "/gateway") as client:
            assert client.EchoService.add(1, 2) == 3
        with Client(server.url + "/gateway", flex=True) as client:
            assert client.EchoService.echo([1, "a"]) == [1, "a"]


@pytest.mark.parametrize("server_kind", ["wsgiref", "uvicorn"])
def test_end_to_end_wsgi(server_kind: str) -> None:
    """wsgiref runs a thread per request: each thread's event loop is closed when the
    thread ends (an unclosed loop would be a ResourceWarning, an error in this suite);
    uvicorn's WSGI adapter calls from a pool of threads that keep theirs."""
    import httpx

    from servers import serve_wsgi

    gw = gateway()
    with serve_wsgi(gw.wsgi, server=server_kind) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        for _ in range(5):
            r = client.post("/gateway", content=request(3, [("EchoService.slow_echo", "/1", [7])]), headers=AMF)
            assert packet.decode(r.content).bodies[0].value == 7
        assert client.post("/gateway", content=b"junk", headers=AMF).status_code == 400
    gc.collect()


# --- amfkit serve ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv,message",
    [
        (["serve"], "MODULE:ATTR"),
        (["serve", "os:sep", "--demo"], "give one of MODULE:ATTR, --demo and --replay"),
        (["serve", "no_such_module_xyz:app"], "no such module"),
        (["serve", "os"], "not MODULE:ATTR"),
        (["serve", "os:nope"], "no attribute"),
        (["serve", "os:sep"], "not an ASGI app"),
    ],
)
def test_serve_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from amfkit.cli.main import main

    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_serve_demo_missing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from amfkit.cli import main as cli

    monkeypatch.setattr(cli, "DEMO_APP", "amfkit.no_such_demo_server:app")
    assert cli.main(["serve", "--demo"]) == 1
    assert "demo gateway" in capsys.readouterr().err


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_runs_uvicorn(workers: int, tmp_path: Any, python_env: dict[str, str], python_exe: str) -> None:
    import httpx

    (tmp_path / "gwapp.py").write_text(
        "from amfkit.remoting import Gateway\n"
        "class Echo:\n"
        "    def echo(self, v):\n"
        "        return v\n"
        "gateway = Gateway({'EchoService': Echo()})\n"
    )
    replies = []

    def echo(url: str) -> None:
        replies.append(httpx.post(url, content=ECHO, headers=AMF, timeout=5))

    with serve_cli(python_exe, python_env, tmp_path, "gwapp:gateway", workers=workers, ready=echo):
        r = replies[-1]
        assert r.status_code == 200
        assert packet.decode(r.content).bodies[0].value == "hi"
