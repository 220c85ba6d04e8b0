"""The file system fast path (amfkit.assets.fastpath, in amfkit.serving's protocol): through
a real uvicorn with amfkit's protocol, small file assets are answered without the ASGI
app, exactly as the ASGI route answers them, and everything else still reaches the app."""

from __future__ import annotations

import os
import socket
from typing import Any

import httpx
import pytest
from servers import Tagged, serve_asgi

from amfkit.assets import AssetStore
from amfkit.assets.fastpath import MAX_CACHED
from amfkit.remoting import Gateway

SMALL = bytes(range(256)) * 40  # 10,240 bytes


@pytest.fixture
def served(tmp_path):
    store = AssetStore.open(tmp_path / "assets")
    store.put("img/a.png", SMALL)
    store.put("big.bin", os.urandom(MAX_CACHED + 1))
    gateway = Gateway({"Echo": lambda x: x}, assets=store)
    with serve_asgi(Tagged(gateway), http="amfkit.serving:HttpToolsProtocol") as server:
        yield server, store, gateway
    store.close()


def _same_answer(fast: httpx.Response, slow: httpx.Response) -> None:
    skip = {"date", "server", "x-asgi"}
    assert fast.status_code == slow.status_code
    assert {k: v for k, v in fast.headers.items() if k not in skip} == {k: v for k, v in slow.headers.items() if k not in skip}
    assert fast.content == slow.content


@pytest.mark.parametrize(
    "method, headers",
    [
        ("GET", {}),
        ("HEAD", {}),
        ("GET", {"range": "bytes=100-199"}),
        ("GET", {"range": "bytes=-10"}),
        ("GET", {"range": "bytes=99999-"}),
        ("GET", {"if-match": '"nope"'}),
        ("GET", {"if-modified-since": "Thu, 01 Jan 2037 00:00:00 GMT"}),
    ],
)
def test_small_assets_are_answered_without_the_app_as_the_app_answers(served, method, headers) -> None:
    server, store, gateway = served
    url = server.url + "/assets/img/a.png"
    with httpx.Client() as http:
        fast = http.request(method, url, headers=headers)
        assert "x-asgi" not in fast.headers, "the fast path did not answer"
        gateway.asset_fast_route = None  # the same request through the ASGI route
        try:
            slow = http.request(method, url, headers=headers)
        finally:
            gateway.asset_fast_route = _route(gateway, store)
    assert slow.headers["x-asgi"] == "1"
    _same_answer(fast, slow)
    assert fast.status_code in (200, 206, 304, 412, 416)


def _route(gateway: Gateway, store: AssetStore) -> Any:
    from amfkit.assets.fastpath import FileRoute

    return FileRoute(store, "/assets", gateway.assets.cache_control)


def test_the_fast_path_answers_with_the_store_s_validators(served) -> None:
    server, store, gateway = served
    with httpx.Client() as http:
        r = http.get(server.url + "/assets/img/a.png")
    assert r.status_code == 200 and r.content == SMALL and "x-asgi" not in r.headers
    assert r.headers["etag"] == store.stat("img/a.png").etag and r.headers["date"]


def test_a_conditional_get_is_304(served) -> None:
    server, store, _ = served
    etag = store.stat("img/a.png").etag
    with httpx.Client() as http:
        r = http.get(server.url + "/assets/img/a.png", headers={"if-none-match": etag})
    assert r.status_code == 304 and r.content == b"" and r.headers["etag"] == etag and "x-asgi" not in r.headers


def test_a_replaced_file_is_served_new_at_once(served) -> None:
    server, store, _ = served
    with httpx.Client() as http:
        assert http.get(server.url + "/assets/img/a.png").content == SMALL
        store.put("img/a.png", b"new bytes")
        r = http.get(server.url + "/assets/img/a.png")
        assert r.content == b"new bytes" and r.headers["etag"] == store.stat("img/a.png").etag
        store.delete("img/a.png")
        r = http.get(server.url + "/assets/img/a.png")
        assert r.status_code == 404 and r.headers["x-asgi"] == "1"


def test_a_link_swapped_in_is_never_followed(served, tmp_path) -> None:
    server, store, _ = served
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOP-SECRET-CONTENT")
    with httpx.Client() as http:
        assert http.get(server.url + "/assets/img/a.png").status_code == 200  # now cached
        path = store.path("img/a.png")
        os.unlink(path)
        os.symlink(secret, path)
        r = http.get(server.url + "/assets/img/a.png")
        assert r.status_code == 404 and b"TOP-SECRET" not in r.content
        os.unlink(path)
        os.symlink(tmp_path, os.path.join(store.root, "up"))
        r = http.get(server.url + "/assets/up/secret.txt")
        assert r.status_code == 404 and b"TOP-SECRET" not in r.content


def test_what_the_fast_path_does_not_serve_reaches_the_app(served) -> None:
    server, store, _ = served
    with httpx.Client() as http:
        big = http.get(server.url + "/assets/big.bin")
        assert big.status_code == 200 and big.content == store.get("big.bin") and big.headers["x-asgi"] == "1"
        for path, status in (("/assets/missing.png", 404), ("/assets/%2e%2e/x", 404), ("/assets/a%ZZ", 400)):
            r = http.get(server.url + path)
            assert r.status_code == status and r.headers["x-asgi"] == "1", path
        r = http.post(server.url + "/assets/img/a.png", content=b"x")
        assert r.status_code == 405 and r.headers["x-asgi"] == "1"
        r = http.get(server.url + "/gateway")
        assert r.status_code == 200 and r.headers["x-asgi"] == "1"


def _raw(port: int, data: bytes) -> bytes:
    """Send `data` on a new connection; everything the server sends until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk


def test_pipelined_requests_mixing_the_fast_path_and_the_app_answer_in_order(served) -> None:
    server, _, _ = served
    requests = (
        b"GET /assets/img/a.png HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /gateway HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /assets/img/a.png HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    out = _raw(server.port, requests)
    first = out.index(b"HTTP/1.1 200")
    second = out.index(b"HTTP/1.1 200", first + 1)
    third = out.index(b"HTTP/1.1 200", second + 1)
    assert out[first:second].endswith(SMALL)
    assert b"x-asgi: 1" in out[second:third] and b'"services"' in out[second:third]
    assert out.endswith(SMALL) and b"connection: close" in out[third:].lower()


def test_an_http_1_0_request_is_answered_and_the_connection_closed(served) -> None:
    server, _, _ = served
    out = _raw(server.port, b"GET /assets/img/a.png HTTP/1.0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200 OK\r\n") and out.endswith(SMALL) and b"connection: close" in out


def test_without_the_option_the_app_answers(tmp_path) -> None:
    store = AssetStore.open(tmp_path / "assets")
    store.put("a.png", SMALL)
    gateway = Gateway({}, assets=store, assets_fast_path=False)
    assert gateway.asset_fast_route is None
    with serve_asgi(Tagged(gateway), http="amfkit.serving:HttpToolsProtocol") as server, httpx.Client() as http:
        r = http.get(server.url + "/assets/a.png")
    assert r.status_code == 200 and r.content == SMALL and r.headers["x-asgi"] == "1"
    store.close()


def test_an_idle_connection_after_a_fast_answer_is_closed_on_the_keep_alive_timeout(tmp_path) -> None:
    import time

    store = AssetStore.open(tmp_path / "assets")
    store.put("a.png", SMALL)
    gateway = Gateway({}, assets=store)
    request = b"GET /assets/a.png HTTP/1.1\r\nHost: x\r\n\r\n"
    with serve_asgi(Tagged(gateway), http="amfkit.serving:HttpToolsProtocol", timeout_keep_alive=1) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            # Requests every 0.4 s for 2 s: each moves the deadline, none is cut off.
            for _ in range(5):
                s.sendall(request)
                got = b""
                while not got.endswith(SMALL):
                    chunk = s.recv(65536)
                    assert chunk, "the server closed a connection in use"
                    got += chunk
                assert b"x-asgi" not in got
                time.sleep(0.4)
            started = time.monotonic()
            assert s.recv(1) == b""  # then idle: closed by the server
            assert 0.4 < time.monotonic() - started < 3
    store.close()
