"""Assets over HTTP (amfkit.assets.http and the gateway's routes): headers, conditional
requests, ranges, HEAD, 405, names that try to leave the store, large bodies streamed
under ASGI (in process and through uvicorn) and WSGI, on the file and SQLite backends."""

from __future__ import annotations

import asyncio
import email.utils
import io
import math
import os
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, unquote_to_bytes

import httpx
import pytest

from amfkit.assets import Asset, AssetChanged, AssetReader, AssetStore
from amfkit.assets.http import (
    CHUNK_SIZE,
    SMALL_BODY,
    UNSATISFIABLE,
    AssetRequestError,
    AssetServer,
    byte_range,
    http_date,
    name_from_path,
    plan,
)
from amfkit.remoting.gateway import Gateway

from servers import serve_asgi, serve_wsgi

DATA = bytes(range(256)) * 40  # 10,240 bytes: one read
BIG = 20 * 1024 * 1024


@pytest.fixture(params=["file", "sqlite"])
def assets(request: pytest.FixtureRequest, make_store: Callable[..., AssetStore]) -> AssetStore:
    """An empty store of each kind that serves without a server of its own."""
    return make_store(request.param, fsync=False) if request.param == "file" else make_store(request.param)


@pytest.fixture
def gw(assets: AssetStore) -> Gateway:
    assets.put("logos/amfkit.png", DATA, content_type="image/png")
    return Gateway({}, assets=assets)


# --- calling the ASGI app in process ---------------------------------------------------


class Exchange:
    """One request to an ASGI app in process: the messages it sent back."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages
        start = messages[0]
        assert start["type"] == "http.response.start"
        self.status: int = start["status"]
        self.headers = {k.decode(): v.decode() for k, v in start["headers"]}
        self.bodies = [m for m in messages[1:] if m["type"] == "http.response.body"]
        self.body = b"".join(m.get("body", b"") for m in self.bodies)


def scope_of(method: str, target: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """What uvicorn hands an app for a request line's target: `path` percent-decoded
    (invalid UTF-8 replaced), `raw_path` as sent."""
    raw = target.encode("latin-1")
    raw_path, _, query = raw.partition(b"?")
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": unquote(raw_path.decode("ascii")), "raw_path": raw_path, "query_string": query,
        "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in (headers or {}).items()],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }


async def asgi_call(app: Any, method: str, target: str, headers: dict[str, str] | None = None, *, scope: dict[str, Any] | None = None) -> Exchange:
    sent: list[dict[str, Any]] = []
    done = asyncio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    await app(scope or scope_of(method, target, headers), receive, send)
    assert done.is_set(), "the response did not end"
    return Exchange(sent)


def get(app: Any, target: str, headers: dict[str, str] | None = None, method: str = "GET") -> Exchange:
    return asyncio.run(asgi_call(app, method, target, headers))


# --- calling the WSGI app in process ---------------------------------------------------


def wsgi_call(app: Any, method: str, target: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], list[bytes]]:
    """A WSGI request as wsgiref makes it: PATH_INFO percent-decoded, read as Latin-1."""
    raw, _, query = target.partition("?")
    environ = {
        "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": unquote_to_bytes(raw).decode("latin-1"),
        "QUERY_STRING": query, "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.input": io.BytesIO(b""), "wsgi.url_scheme": "http",
    }
    for k, v in (headers or {}).items():
        environ["HTTP_" + k.upper().replace("-", "_")] = v
    seen: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        seen.append((status, headers))

    result = app(environ, start_response)
    try:
        chunks = list(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, out = seen[0]
    return int(status.split()[0]), dict(out), chunks


# --- the answer ------------------------------------------------------------------------


def last_modified(asset: Asset) -> str:
    return email.utils.formatdate(math.floor(asset.mtime), usegmt=True)


def test_get_answers_the_bytes_and_every_header(gw: Gateway, assets: AssetStore) -> None:
    asset = assets.stat("logos/amfkit.png")
    r = get(gw, "/assets/logos/amfkit.png", {"accept-encoding": "gzip"})
    assert r.status == 200
    assert r.body == DATA
    assert r.headers == {
        "content-type": "image/png",
        "content-length": str(len(DATA)),
        "etag": asset.etag,
        "last-modified": last_modified(asset),
        "cache-control": "public, max-age=3600",
        "accept-ranges": "bytes",
        "x-content-type-options": "nosniff",
    }  # never gzipped (no Content-Encoding, no Vary)
    assert not asset.etag.startswith("W/")


def test_head_has_the_same_headers_and_no_body(gw: Gateway) -> None:
    got = get(gw, "/assets/logos/amfkit.png")
    head = get(gw, "/assets/logos/amfkit.png", method="HEAD")
    assert head.status == 200 and head.body == b""
    assert head.headers == got.headers


def test_cache_control_is_configurable(assets: AssetStore) -> None:
    assets.put("a.txt", b"abc")
    r = get(Gateway({}, assets=assets, assets_cache_control="no-cache"), "/assets/a.txt")
    assert r.headers["cache-control"] == "no-cache"
    r = get(Gateway({}, assets=assets, assets_cache_control=None), "/assets/a.txt")
    assert "cache-control" not in r.headers and r.body == b"abc"
    assert get(Gateway({}, assets=assets, assets_cache_control=None), "/assets/a.txt", {"if-none-match": "*"}).headers.keys() == {"etag", "last-modified"}


def test_the_stored_content_type_and_an_empty_asset(assets: AssetStore) -> None:
    assets.put("data/table", b"", content_type="application/x-thing")
    r = get(Gateway({}, assets=assets), "/assets/data/table")
    assert (r.status, r.body, r.headers["content-type"], r.headers["content-length"]) == (200, b"", "application/x-thing", "0")


def test_a_missing_asset_and_paths_that_name_none_are_404(gw: Gateway) -> None:
    for target in ["/assets/nope.png", "/assets/logos", "/assets/logos/", "/assets/", "/assets"]:
        r = get(gw, target)
        assert r.status == 404, target
        assert r.headers["content-type"].startswith("text/plain")
    assert b"nope.png" in get(gw, "/assets/nope.png").body


def test_a_query_string_is_not_part_of_the_name(gw: Gateway) -> None:
    assert get(gw, "/assets/logos/amfkit.png?v=3").body == DATA


def test_a_percent_encoded_utf8_name(assets: AssetStore) -> None:
    assets.put("images/café du monde.png", b"espresso")
    gw = Gateway({}, assets=assets)
    assert get(gw, "/assets/images/caf%C3%A9%20du%20monde.png").body == b"espresso"
    assert get(gw, "/assets/images/caf%c3%a9%20du%20monde.png").body == b"espresso"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_are_405(gw: Gateway, method: str) -> None:
    r = get(gw, "/assets/logos/amfkit.png", method=method)
    assert r.status == 405
    assert r.headers["allow"] == "GET, HEAD"
    status, headers, _ = asyncio.run(gw.respond(method, "/assets/logos/amfkit.png", {}, b""))
    assert (status, dict(headers)["allow"]) == (405, "GET, HEAD")
    status, wsgi_headers, _ = wsgi_call(gw.wsgi, method, "/assets/logos/amfkit.png")
    assert (status, wsgi_headers["allow"]) == (405, "GET, HEAD")


def test_an_amf_post_to_an_asset_is_405_not_a_call(gw: Gateway) -> None:
    from gateway_util import asgi_post, request

    status, headers, _ = asgi_post(gw, request(3, [("EchoService.echo", "/1", [1])]), path="/assets/logos/amfkit.png")
    assert (status, headers["allow"]) == (405, "GET, HEAD")


def test_the_gateway_is_unchanged_beside_the_assets(gw: Gateway) -> None:
    r = get(gw, "/gateway")
    assert r.status == 200 and b'"assets": {"path": "/assets"}' in r.body
    assert get(gw, "/gateway", method="HEAD").status == 405
    assert get(gw, "/elsewhere").status == 404


# --- conditional requests --------------------------------------------------------------


def test_if_none_match_gives_304(gw: Gateway, assets: AssetStore) -> None:
    asset = assets.stat("logos/amfkit.png")
    for value in [asset.etag, f'"other", {asset.etag}', "*", f"W/{asset.etag}", f' "a,b" ,W/{asset.etag} ']:
        for method in ("GET", "HEAD"):
            r = get(gw, "/assets/logos/amfkit.png", {"if-none-match": value}, method=method)
            assert r.status == 304, value
            assert r.body == b""
            assert r.headers == {"etag": asset.etag, "last-modified": last_modified(asset), "cache-control": "public, max-age=3600"}
    for value in ['"other"', asset.etag[:-2] + '"', "", "garbage"]:
        r = get(gw, "/assets/logos/amfkit.png", {"if-none-match": value})
        assert (r.status, r.body) == (200, DATA), value


def test_if_modified_since_gives_304_to_the_second(gw: Gateway, assets: AssetStore) -> None:
    asset = assets.stat("logos/amfkit.png")
    lm = last_modified(asset)
    later = email.utils.formatdate(math.floor(asset.mtime) + 60, usegmt=True)
    earlier = email.utils.formatdate(math.floor(asset.mtime) - 1, usegmt=True)
    assert get(gw, "/assets/logos/amfkit.png", {"if-modified-since": lm}).status == 304
    assert get(gw, "/assets/logos/amfkit.png", {"if-modified-since": later}).status == 304
    assert get(gw, "/assets/logos/amfkit.png", {"if-modified-since": later}, method="HEAD").status == 304
    assert get(gw, "/assets/logos/amfkit.png", {"if-modified-since": earlier}).body == DATA
    assert get(gw, "/assets/logos/amfkit.png", {"if-modified-since": "yesterday"}).status == 200
    # RFC 850 and asctime forms are HTTP-dates too
    when = datetime.fromtimestamp(math.floor(asset.mtime), timezone.utc)
    assert get(gw, "/assets/logos/amfkit.png", {"if-modified-since": when.strftime("%A, %d-%b-%y %H:%M:%S GMT")}).status == 304
    assert get(gw, "/assets/logos/amfkit.png", {"if-modified-since": when.strftime("%a %b %d %H:%M:%S %Y")}).status == 304
    # If-None-Match wins: a date that would match is ignored beside a tag that does not
    assert get(gw, "/assets/logos/amfkit.png", {"if-modified-since": later, "if-none-match": '"other"'}).status == 200


def test_if_match_and_if_unmodified_since_give_412(gw: Gateway, assets: AssetStore) -> None:
    asset = assets.stat("logos/amfkit.png")
    earlier = email.utils.formatdate(math.floor(asset.mtime) - 1, usegmt=True)
    assert get(gw, "/assets/logos/amfkit.png", {"if-match": '"other"'}).status == 412
    assert get(gw, "/assets/logos/amfkit.png", {"if-match": f"W/{asset.etag}"}).status == 412  # strong comparison
    assert get(gw, "/assets/logos/amfkit.png", {"if-match": asset.etag}).body == DATA
    assert get(gw, "/assets/logos/amfkit.png", {"if-match": "*"}).status == 200
    assert get(gw, "/assets/logos/amfkit.png", {"if-unmodified-since": earlier}).status == 412
    assert get(gw, "/assets/logos/amfkit.png", {"if-unmodified-since": last_modified(asset)}).status == 200


# --- ranges ----------------------------------------------------------------------------

N = len(DATA)


@pytest.mark.parametrize(
    "value, start, end",
    [
        ("bytes=0-9", 0, 10),  # the first bytes
        ("bytes=-10", N - 10, N),  # the last bytes
        ("bytes=-100000", 0, N),  # a suffix longer than the asset: all of it
        ("bytes=100-", 100, N),  # open-ended
        ("bytes=0-", 0, N),  # the whole, as a range
        ("bytes=5000-99999999", 5000, N),  # past the end: cut there
        (f"bytes={N - 1}-{N - 1}", N - 1, N),  # the last byte
        ("Bytes=7-7", 7, 8),  # the unit in any case
        ("bytes=7-8, ", 7, 9),  # an empty list element
    ],
)
def test_one_range_is_206(gw: Gateway, value: str, start: int, end: int) -> None:
    r = get(gw, "/assets/logos/amfkit.png", {"range": value})
    assert r.status == 206
    assert r.body == DATA[start:end]
    assert r.headers["content-range"] == f"bytes {start}-{end - 1}/{N}"
    assert r.headers["content-length"] == str(end - start)
    assert r.headers["content-type"] == "image/png" and r.headers["accept-ranges"] == "bytes"


@pytest.mark.parametrize("value", [f"bytes={N}-", f"bytes={N}-{N + 10}", "bytes=99999999999-", "bytes=-0"])
def test_a_range_past_the_end_is_416(gw: Gateway, value: str) -> None:
    r = get(gw, "/assets/logos/amfkit.png", {"range": value})
    assert r.status == 416
    assert r.headers["content-range"] == f"bytes */{N}"
    assert r.body == b""


@pytest.mark.parametrize(
    "value",
    [
        "bytes=5-2",  # last before first
        "bytes=abc",
        "bytes=",
        "bytes=1-2-3",
        "bytes 0-9",
        "items=0-9",  # another unit
        "bytes=0-1,5-6",  # several ranges: the whole body
        "bytes=-5, 0-1",
        "bytes=+1-2",
        "bytes=\xb9-\xb2",  # superscript digits
    ],
)
def test_a_malformed_range_or_several_ranges_give_the_whole_body(gw: Gateway, value: str) -> None:
    r = get(gw, "/assets/logos/amfkit.png", {"range": value})
    assert (r.status, r.body) == (200, DATA)
    assert "content-range" not in r.headers


def test_if_range_keeps_the_range_only_while_unchanged(gw: Gateway, assets: AssetStore) -> None:
    asset = assets.stat("logos/amfkit.png")
    ranged = {"range": "bytes=0-3"}
    assert get(gw, "/assets/logos/amfkit.png", {**ranged, "if-range": asset.etag}).status == 206
    assert get(gw, "/assets/logos/amfkit.png", {**ranged, "if-range": last_modified(asset)}).body == DATA[:4]
    for stale in ['"other"', f"W/{asset.etag}", email.utils.formatdate(math.floor(asset.mtime) - 5, usegmt=True), "junk"]:
        r = get(gw, "/assets/logos/amfkit.png", {**ranged, "if-range": stale})
        assert (r.status, r.body) == (200, DATA), stale


def test_head_ignores_range(gw: Gateway) -> None:
    r = get(gw, "/assets/logos/amfkit.png", {"range": "bytes=0-3"}, method="HEAD")
    assert (r.status, r.body, r.headers["content-length"]) == (200, b"", str(N))


def test_a_range_of_an_empty_asset(assets: AssetStore) -> None:
    assets.put("empty", b"")
    gw = Gateway({}, assets=assets)
    assert get(gw, "/assets/empty", {"range": "bytes=0-"}).headers["content-range"] == "bytes */0"
    assert get(gw, "/assets/empty", {"range": "bytes=-5"}).status == 200


def test_a_replaced_asset_is_served_new_with_a_new_etag(gw: Gateway, assets: AssetStore) -> None:
    first = get(gw, "/assets/logos/amfkit.png")
    assets.put("logos/amfkit.png", b"new bytes", content_type="image/png")
    r = get(gw, "/assets/logos/amfkit.png", {"if-none-match": first.headers["etag"]})
    assert (r.status, r.body) == (200, b"new bytes")
    assert r.headers["etag"] != first.headers["etag"]
    assert get(gw, "/assets/logos/amfkit.png", {"range": "bytes=0-2", "if-range": first.headers["etag"]}).body == b"new bytes"


# --- the plain core (respond) and WSGI answer the same ---------------------------------


def test_respond_answers_as_the_asgi_app(gw: Gateway) -> None:
    for headers in [{}, {"Range": "bytes=10-19"}, {"If-None-Match": "*"}, {"Range": "bytes=99999999-"}]:
        status, out, body = asyncio.run(gw.respond("GET", "/assets/logos/amfkit.png", headers, b""))
        r = get(gw, "/assets/logos/amfkit.png", {k.lower(): v for k, v in headers.items()})
        assert (status, dict(out), body) == (r.status, r.headers, r.body)
    assert asyncio.run(gw.respond("HEAD", "/assets/logos/amfkit.png", {}, b""))[2] == b""
    assert asyncio.run(gw.respond("GET", "/assets/%2e%2e/x", {}, b""))[0] == 404


def test_wsgi_answers_as_the_asgi_app(gw: Gateway) -> None:
    for method, headers in [("GET", {}), ("GET", {"range": "bytes=-7"}), ("HEAD", {}), ("GET", {"if-none-match": "*"}), ("GET", {"range": "bytes=99999999-"})]:
        status, out, chunks = wsgi_call(gw.wsgi, method, "/assets/logos/amfkit.png", headers)
        r = get(gw, "/assets/logos/amfkit.png", headers, method=method)
        assert (status, out, b"".join(chunks)) == (r.status, r.headers, r.body)
    assert wsgi_call(gw.wsgi, "GET", "/assets/missing")[0] == 404
    assert wsgi_call(gw.wsgi, "GET", "/gateway")[0] == 200  # the gateway still answers


# --- names that try to leave the store -------------------------------------------------

TRAVERSALS = [
    "/assets/../secret.txt",
    "/assets/%2e%2e/secret.txt",
    "/assets/%2E%2E%2Fsecret.txt",
    "/assets/..%2fsecret.txt",
    "/assets/%252e%252e/secret.txt",
    "/assets/%252e%252e%252fsecret.txt",
    "/assets/a/../../secret.txt",
    "/assets/./../secret.txt",
    "/assets/..%5csecret.txt",
    "/assets/..\\secret.txt",
    "/assets/%5c..%5csecret.txt",
    "/assets/secret.txt%00.png",
    "/assets/%00",
    "/assets//etc/passwd",
    "/assets/%2Fetc%2Fpasswd",
    "/assets/%2F%2Fetc/passwd",
    "/assets/link.txt",  # a symbolic link inside the root to a file outside
    "/assets/linked/secret.txt",  # through a linked folder
    "/assets/.amfkit-tmp/x",
    "/assets/.hidden",
    "/assets/%ff%fe",  # not UTF-8
    "/assets/%c0%ae%c0%ae/secret.txt",  # overlong dots
    "/assets/%zz",  # not an escape
    "/assets/%",
    "/assets/" + "a/" * 600 + "x",  # too long
]


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[tuple[Gateway, bytes]]:
    """A file store with a secret file beside its root, a link to it and a link to its
    folder inside the root."""
    secret = b"the secret outside the store"
    (tmp_path / "secret.txt").write_bytes(secret)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_bytes(secret)
    store = AssetStore.open(str(tmp_path / "root"), fsync=False)
    store.put("ok.txt", b"fine")
    os.symlink(tmp_path / "secret.txt", tmp_path / "root" / "link.txt")
    os.symlink(tmp_path, tmp_path / "root" / "linked")
    (tmp_path / "root" / ".hidden").write_bytes(secret)
    yield Gateway({}, assets=store), secret
    store.close()


@pytest.mark.parametrize("target", TRAVERSALS)
def test_no_name_leaves_the_store(outside: tuple[Gateway, bytes], target: str) -> None:
    gw, secret = outside
    r = get(gw, target)
    assert r.status in (400, 404), target
    assert secret not in r.body
    status, _, body = asyncio.run(gw.respond("GET", target, {}, b""))
    assert status in (400, 404) and secret not in body
    status, _, chunks = wsgi_call(gw.wsgi, "GET", target)
    assert status in (400, 404) and secret not in b"".join(chunks)
    assert get(gw, "/assets/ok.txt").body == b"fine"


def test_invalid_utf8_and_bad_escapes_are_400(outside: tuple[Gateway, bytes]) -> None:
    gw, _ = outside
    assert get(gw, "/assets/%ff%fe").status == 400
    assert get(gw, "/assets/%zz").status == 400
    assert get(gw, "/assets/%2e%2e/secret.txt").status == 404


def test_without_raw_path_the_decoded_path_is_used(outside: tuple[Gateway, bytes]) -> None:
    gw, secret = outside
    scope = scope_of("GET", "/assets/ok.txt")
    del scope["raw_path"]
    assert asyncio.run(asgi_call(gw, "GET", "", scope=scope)).body == b"fine"
    scope = scope_of("GET", "/assets/%2e%2e/secret.txt")
    del scope["raw_path"]
    r = asyncio.run(asgi_call(gw, "GET", "", scope=scope))
    assert r.status == 404 and secret not in r.body


# --- streaming -------------------------------------------------------------------------


@pytest.fixture
def big(assets: AssetStore) -> tuple[Gateway, bytes]:
    data = os.urandom(BIG)
    assets.put("video/big.bin", data)
    return Gateway({}, assets=assets), data


def test_a_large_asset_is_streamed_in_chunks(big: tuple[Gateway, bytes]) -> None:
    gw, data = big
    r = get(gw, "/assets/video/big.bin")
    assert r.status == 200 and r.headers["content-length"] == str(BIG)
    assert len(r.bodies) == BIG // CHUNK_SIZE
    assert all(m["more_body"] for m in r.bodies[:-1]) and not r.bodies[-1]["more_body"]
    assert max(len(m["body"]) for m in r.bodies) == CHUNK_SIZE
    assert r.body == data
    part = get(gw, "/assets/video/big.bin", {"range": "bytes=1000000-3000000"})
    assert part.status == 206 and len(part.bodies) > 1
    assert part.body == data[1_000_000:3_000_001]
    head = get(gw, "/assets/video/big.bin", method="HEAD")
    assert (head.body, len(head.bodies), head.headers["content-length"]) == (b"", 1, str(BIG))


def test_a_body_up_to_64k_is_one_message_and_over_it_several(assets: AssetStore) -> None:
    assets.put("small", b"s" * SMALL_BODY)
    assets.put("larger", b"l" * (SMALL_BODY + 1))
    gw = Gateway({}, assets=assets)
    assert len(get(gw, "/assets/small").bodies) == 1
    r = get(gw, "/assets/larger")
    assert r.body == b"l" * (SMALL_BODY + 1) and r.bodies[-1]["more_body"] is False


def test_streaming_through_uvicorn(big: tuple[Gateway, bytes]) -> None:
    gw, data = big
    with serve_asgi(gw) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        chunks = []
        with client.stream("GET", "/assets/video/big.bin") as response:
            assert response.status_code == 200
            assert response.headers["content-length"] == str(BIG)
            assert response.headers["x-content-type-options"] == "nosniff"
            for chunk in response.iter_raw():
                chunks.append(chunk)
        assert len(chunks) > 1
        assert b"".join(chunks) == data
        etag = response.headers["etag"]
        # the same connection goes on serving
        assert client.get("/assets/video/big.bin", headers={"if-none-match": etag}).status_code == 304
        tail = client.get("/assets/video/big.bin", headers={"range": "bytes=-300000"})
        assert (tail.status_code, tail.content) == (206, data[-300_000:])
        assert client.head("/assets/video/big.bin").content == b""
        assert client.put("/assets/video/big.bin", content=b"x").status_code == 405
        assert client.get("/assets/%2e%2e/%2e%2e/etc/passwd").status_code == 404


def test_streaming_through_wsgi(big: tuple[Gateway, bytes]) -> None:
    gw, data = big
    status, headers, chunks = wsgi_call(gw.wsgi, "GET", "/assets/video/big.bin")
    assert status == 200 and len(chunks) == BIG // CHUNK_SIZE and b"".join(chunks) == data
    with serve_wsgi(gw.wsgi) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        r = client.get("/assets/video/big.bin")
        assert (r.status_code, r.headers["content-length"]) == (200, str(BIG))
        assert r.content == data
        r = client.get("/assets/video/big.bin", headers={"range": "bytes=10-19"})
        assert (r.status_code, r.content, r.headers["content-range"]) == (206, data[10:20], f"bytes 10-19/{BIG}")
        assert client.get("/assets/video/big.bin", headers={"if-none-match": r.headers["etag"]}).status_code == 304
        assert client.head("/assets/video/big.bin").headers["content-length"] == str(BIG)
        assert client.delete("/assets/video/big.bin").status_code == 405


class _Flaky(AssetStore):
    """A store of one asset whose reader fails (`AssetChanged`) after `good` reads, and
    counts its reads and closes."""

    def __init__(self, size: int, good: int) -> None:
        super().__init__("flaky://")
        self.size, self.good, self.reads, self.closed = size, good, 0, 0

    def _open(self, name: str) -> AssetReader:
        store = self
        asset = Asset(name, self.size, '"v1"', datetime(2024, 1, 1, tzinfo=timezone.utc), "application/octet-stream")

        class Reader(AssetReader):
            def __init__(self) -> None:
                self.asset = asset

            def read(self, offset: int, size: int) -> bytes:
                store.reads += 1
                if store.reads > store.good:
                    raise AssetChanged("replaced meanwhile")
                return b"x" * min(size, store.size - offset)

            def close(self) -> None:
                store.closed += 1

        return Reader()


def test_an_asset_changing_mid_stream_ends_the_response_with_an_error() -> None:
    store = _Flaky(10 * CHUNK_SIZE, good=3)
    gw = Gateway({}, assets=store)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with pytest.raises(AssetChanged):
        asyncio.run(gw(scope_of("GET", "/assets/a.bin"), receive, send))
    assert sent[0]["status"] == 200
    assert [len(m["body"]) for m in sent[1:]] == [CHUNK_SIZE] * 3  # and no end of body
    assert all(m["more_body"] for m in sent[1:])
    assert store.closed == 1


def test_a_client_gone_mid_stream_stops_the_reads() -> None:
    store = _Flaky(100 * CHUNK_SIZE, good=10**6)
    gw = Gateway({}, assets=store)
    sent: list[dict[str, Any]] = []
    messages = iter([{"type": "http.request", "body": b"", "more_body": False}])

    async def receive() -> dict[str, Any]:
        message = next(messages, None)
        if message is not None:
            return message
        if len(sent) < 3:
            await asyncio.sleep(0.05)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        await asyncio.sleep(0.01)

    asyncio.run(gw(scope_of("GET", "/assets/a.bin"), receive, send))
    assert store.reads < 50 and store.closed == 1


def test_a_wsgi_stream_closes_its_reader_when_dropped() -> None:
    store = _Flaky(10 * CHUNK_SIZE, good=10**6)
    gw = Gateway({}, assets=store)
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/assets/a.bin", "SCRIPT_NAME": "", "wsgi.input": io.BytesIO()}
    body = gw.wsgi(environ, lambda status, headers: None)
    first = next(iter(body))
    assert len(first) == CHUNK_SIZE and store.closed == 0
    body.close()  # type: ignore[attr-defined]
    assert store.closed == 1 and store.reads == 1


# --- options ---------------------------------------------------------------------------


def test_a_store_url_and_another_path(tmp_path: Path) -> None:
    AssetStore.open(str(tmp_path / "a"), fsync=False).put("x.txt", b"by url")
    gw = Gateway({}, assets=f"file://{tmp_path}/a", assets_path="/static/files/")
    assert get(gw, "/static/files/x.txt").body == b"by url"
    assert get(gw, "/assets/x.txt").status == 404
    assert b'"path": "/static/files"' in get(gw, "/gateway").body
    assert gw.assets is not None
    gw.assets.store.close()


@pytest.mark.parametrize("path", ["assets", "/", "", "/a b", "/a?b", "/caf\u00e9"])
def test_an_invalid_assets_path_is_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(ValueError, match="assets path"):
        AssetServer(AssetStore.open(str(tmp_path)), path=path)


def test_the_assets_and_the_gateway_may_not_share_a_path(tmp_path: Path) -> None:
    store = AssetStore.open(str(tmp_path))
    for gateway_path, assets_path in [("/gateway", "/gateway"), ("/assets/gateway", "/assets")]:
        with pytest.raises(ValueError, match="overlap"):
            Gateway({}, path=gateway_path, assets=store, assets_path=assets_path)
    Gateway({}, path="/gateway", assets=store, assets_path="/gateway/assets")  # beside it: fine


def test_an_unsafe_cache_control_or_store_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cache_control"):
        Gateway({}, assets=AssetStore.open(str(tmp_path)), assets_cache_control="public\r\nset-cookie: a=b")
    with pytest.raises(TypeError, match="AssetStore"):
        Gateway({}, assets=42)  # type: ignore[arg-type]


# --- the pure functions ----------------------------------------------------------------


@pytest.mark.parametrize(
    "value, size, expected",
    [
        ("bytes=0-0", 1, (0, 1)),
        ("bytes=0-", 0, UNSATISFIABLE),
        ("bytes=-1", 0, None),
        ("bytes=-3", 10, (7, 10)),
        ("bytes=3-", 10, (3, 10)),
        ("bytes=3-100", 10, (3, 10)),
        ("bytes=10-", 10, UNSATISFIABLE),
        ("bytes=-0", 10, UNSATISFIABLE),
        ("bytes=4-3", 10, None),
        ("bytes=١-٢", 10, None),  # digits, but not ASCII ones
        ("bytes=1-2,3-4", 10, None),
        ("bytes=,,1-2,,", 10, (1, 3)),
        (" bytes=1-2", 10, None),
        ("bytes=" + "9" * 65 + "-", 10, None),
        ("bytes=" + "9" * 60 + "-", 10, UNSATISFIABLE),
    ],
)
def test_byte_range(value: str, size: int, expected: Any) -> None:
    assert byte_range(value, size) == expected


@pytest.mark.parametrize(
    "path, percent, expected",
    [
        ("logos/a.png", True, "logos/a.png"),
        ("caf%C3%A9", True, "café"),
        ("caf\xc3\xa9", True, "café"),  # raw UTF-8 bytes read as Latin-1
        ("caf\xc3\xa9", False, "café"),
        ("%252e", True, "%2e"),  # decoded once
        ("a%2Fb", True, "a/b"),  # an encoded slash is a slash: still under the root
        ("%2e%2e", False, "%2e%2e"),  # a server decoded it already: a plain name
    ],
)
def test_name_from_path(path: str, percent: bool, expected: str) -> None:
    assert name_from_path(path, percent=percent) == expected


@pytest.mark.parametrize(
    "path, status",
    [("..", 404), ("%2e%2e/x", 404), ("a%00", 404), ("%5c", 404), ("/x", 404), ("", 404), ("%ff", 400), ("\xff", 400), ("%g0", 400), ("\u0100", 400)],
)
def test_name_from_path_refuses(path: str, status: int) -> None:
    with pytest.raises(AssetRequestError) as e:
        name_from_path(path)
    assert e.value.status == status


def test_http_date_forms() -> None:
    assert http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777
    assert http_date("Sunday, 06-Nov-94 08:49:37 GMT") == 784111777
    assert http_date("Sun Nov  6 08:49:37 1994") == 784111777
    assert http_date("not a date") is None
    assert http_date("x" * 100) is None


def test_plan_is_pure_and_reads_only_its_headers() -> None:
    asset = Asset("a.png", 100, '"t1"', datetime(2024, 5, 1, 12, 0, 30, 900000, tzinfo=timezone.utc), "image/png")
    p = plan("GET", {}, asset, None)
    assert p.status == 200 and (p.offset, p.length) == (0, 100)
    assert dict(p.headers)["last-modified"] == "Wed, 01 May 2024 12:00:30 GMT"  # to the second
    assert "cache-control" not in dict(p.headers)
    assert plan("HEAD", {"range": "bytes=0-1"}, asset).length == 0
    p = plan("GET", {"range": "bytes=10-19", "accept": "*/*"}, asset)
    assert (p.status, p.offset, p.length) == (206, 10, 10)
    assert plan("GET", {"if-modified-since": "Wed, 01 May 2024 12:00:30 GMT"}, asset).status == 304
    assert plan("GET", {"if-modified-since": "Wed, 01 May 2024 12:00:29 GMT"}, asset).status == 200
    weak = Asset("a.png", 100, 'W/"t1"', asset.modified, "image/png")
    assert plan("GET", {"if-none-match": '"t1"'}, weak).status == 304
    assert plan("GET", {"range": "bytes=0-1", "if-range": 'W/"t1"'}, weak).status == 200


def test_a_gateway_on_any_path_leaves_the_asset_path_to_the_assets(assets: AssetStore) -> None:
    from gateway_util import EchoService, asgi_post, request

    assets.put("a.txt", b"abc")
    gw = Gateway({"EchoService": EchoService}, path=None, assets=assets)
    assert get(gw, "/assets/a.txt").body == b"abc"
    assert asgi_post(gw, request(3, [("EchoService.echo", "/1", [1])]), path="/assets/a.txt")[0] == 405
    assert asgi_post(gw, request(3, [("EchoService.echo", "/1", [1])]), path="/anywhere")[0] == 200
