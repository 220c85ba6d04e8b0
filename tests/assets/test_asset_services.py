"""Services and assets: an `Asset` a service returns arrives as bytes (an AMF3 ByteArray,
AMF0's AVM+ ByteArray, base64 in JSON-RPC and XML-RPC), loaded or read from the store;
the store's refusals are plain faults; an upload (a ByteArray argument) is served back
at /assets/<name>. On the file and SQLite backends."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from amfkit.assets import Asset, AssetStore
from amfkit.remoting import AsyncClient, Context, Fault
from amfkit.remoting.gateway import Gateway

from gateway_util import answer, call, nc, request

DATA = os.urandom(5000) + b"\x00\xff"


class Files:
    """A service over an asset store, returning assets in every shape."""

    def __init__(self, store: AssetStore) -> None:
        self.store = store

    def load(self, name: str) -> Asset:
        return self.store.load(name)

    async def stat(self, name: str) -> Asset:
        return await self.store.astat(name)

    def several(self, a: str, b: str) -> list[Any]:
        return [self.store.load(a), self.store.stat(b), 3]

    def pair(self, a: str, b: str) -> tuple[Any, ...]:
        return (self.store.stat(a), self.store.stat(b))

    def mapping(self, name: str) -> dict[str, Any]:
        return {"name": name, "data": self.store.stat(name)}

    def in_context(self, name: str, context: Context) -> Any:
        return [self.store.stat(name)]  # a method with a context: the general AMF path

    async def put(self, name: str, data: bytes) -> dict[str, Any]:
        asset = await self.store.aput(name, data)
        return {"name": asset.name, "size": asset.size, "etag": asset.etag}

    def vanished(self, name: str) -> Asset:
        asset = self.store.stat(name)
        self.store.delete(name)
        return asset

    def vanished_inside(self, name: str) -> list[Any]:
        return [self.vanished(name)]

    def bad_name(self) -> Asset:
        return self.store.load("../etc/passwd")


@pytest.fixture(params=["file", "sqlite"])
def store(request: pytest.FixtureRequest, make_store: Callable[..., AssetStore]) -> AssetStore:
    s = make_store(request.param, max_size=100_000, **({"fsync": False} if request.param == "file" else {}))
    s.put("a.bin", DATA)
    s.put("b.txt", b"second")
    return s


@pytest.fixture
def gw(store: AssetStore) -> Gateway:
    return Gateway({"Files": Files(store)}, assets=store)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _client(gw: Gateway, **options: Any) -> AsyncIterator[tuple[AsyncClient, httpx.AsyncClient]]:
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=gw), base_url="http://testserver")
    async with http, AsyncClient("http://testserver/gateway", http_client=http, **options) as client:
        yield client, http


def with_client(gw: Gateway, body: Callable[[AsyncClient, httpx.AsyncClient], Any], **options: Any) -> Any:
    """Run `body(client, http)` against the gateway's ASGI app in process."""

    async def go() -> Any:
        async for client, http in _client(gw, **options):
            return await body(client, http)

    return run(go())


# --- results ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [{"amf3": True}, {"amf3": False}, {"flex": True}])
def test_an_asset_arrives_as_bytes(gw: Gateway, mode: dict[str, Any]) -> None:
    async def body(c: AsyncClient, _: Any) -> None:
        assert await c.Files.load("a.bin") == DATA
        assert await c.Files.stat("b.txt") == b"second"  # not loaded: read by the gateway
        assert await c.Files.several("a.bin", "b.txt") == [DATA, b"second", 3]
        assert await c.Files.pair("a.bin", "b.txt") == [DATA, b"second"]
        assert await c.Files.mapping("b.txt") == {"name": "b.txt", "data": b"second"}
        assert await c.Files.in_context("b.txt") == [b"second"]

    with_client(gw, body, **mode)


def test_the_wire_type_is_a_bytearray(gw: Gateway) -> None:
    for version in (0, 3):
        out = nc(gw, "Files.load", "b.txt", version=version)
        assert out.target == "/1/onResult" and out.value == b"second"
        status, _, raw = call(gw, request(version, [("Files.stat", "/1", ["b.txt"])]))
        assert status == 200 and raw.endswith(b"\x11\x0c\x0dsecond")  # AVM+, ByteArray, 6 bytes
    env = answer(gw, request(3, [("Files.stat", "/1", ["b.txt"]), ("Files.several", "/2", ["b.txt", "b.txt"])]))
    assert [b.value for b in env.bodies] == [b"second", [b"second", b"second", 3]]


def _jsonrpc(gw: Gateway, method: str, *params: Any) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "method": method, "params": list(params), "id": 7}).encode()
    status, _, out = run(gw.respond("POST", "/gateway", {"content-type": "application/json"}, body))
    assert status == 200
    reply: dict[str, Any] = json.loads(out)
    return reply


def _xmlrpc(gw: Gateway, method: str, *params: str) -> str:
    values = "".join(f"<param><value><string>{p}</string></value></param>" for p in params)
    body = f"<methodCall><methodName>{method}</methodName><params>{values}</params></methodCall>".encode()
    status, _, out = run(gw.respond("POST", "/gateway", {"content-type": "text/xml"}, body))
    assert status == 200
    return out.decode()


def test_jsonrpc_sends_base64(gw: Gateway) -> None:
    b64 = base64.b64encode(DATA).decode()
    assert _jsonrpc(gw, "Files.load", "a.bin")["result"] == b64
    assert _jsonrpc(gw, "Files.stat", "b.txt")["result"] == base64.b64encode(b"second").decode()
    assert _jsonrpc(gw, "Files.several", "a.bin", "b.txt")["result"] == [b64, base64.b64encode(b"second").decode(), 3]
    assert _jsonrpc(gw, "Files.mapping", "a.bin")["result"] == {"name": "a.bin", "data": b64}


def test_xmlrpc_sends_base64(gw: Gateway) -> None:
    second = base64.b64encode(b"second").decode()
    assert f"<base64>{second}</base64>" in _xmlrpc(gw, "Files.stat", "b.txt")
    assert f"<base64>{base64.b64encode(DATA).decode()}</base64>" in _xmlrpc(gw, "Files.load", "a.bin")
    out = _xmlrpc(gw, "Files.mapping", "b.txt")
    assert f"<name>data</name><value><base64>{second}</base64></value>" in out
    multi = (
        "<methodCall><methodName>system.multicall</methodName><params><param><value><array><data>"
        "<value><struct><member><name>methodName</name><value><string>Files.several</string></value></member>"
        "<member><name>params</name><value><array><data><value><string>b.txt</string></value>"
        "<value><string>b.txt</string></value></data></array></value></member></struct></value>"
        "</data></array></value></param></params></methodCall>"
    ).encode()
    status, _, raw = run(gw.respond("POST", "/gateway", {"content-type": "text/xml"}, multi))
    assert status == 200 and raw.decode().count(f"<base64>{second}</base64>") == 2


# --- faults ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, args, code, message",
    [
        ("Files.load", ["nope.png"], "Asset.NotFound", "no asset 'nope.png'"),
        ("Files.vanished", ["b.txt"], "Asset.NotFound", "no asset 'b.txt'"),  # gone before it was read
        ("Files.bad_name", [], "Asset.InvalidName", "asset name '../etc/passwd' has a component starting with '.' ('..')"),
    ],
)
def test_store_refusals_are_plain_faults(gw: Gateway, method: str, args: list[Any], code: str, message: str) -> None:
    async def body(c: AsyncClient, _: Any) -> None:
        with pytest.raises(Fault) as e:
            await getattr(c.Files, method.split(".")[1])(*args)
        assert (e.value.code, e.value.message) == (code, message)
        assert not e.value.details  # no traceback outside debug mode

    with_client(gw, body)
    if method == "Files.vanished":
        return
    reply = _jsonrpc(gw, method, *args)["error"]
    assert reply["message"] == message and reply["data"] == {"code": code, "details": None}
    assert f"<string>{code}: {message}</string>".replace("'", "&apos;") in _xmlrpc(gw, method, *args).replace("'", "&apos;")


def test_a_fault_has_the_traceback_in_debug_mode(store: AssetStore) -> None:
    gw = Gateway({"Files": Files(store)}, assets=store, debug=True)
    out = nc(gw, "Files.load", "nope.png", version=3)
    assert out.target == "/1/onStatus"
    assert out.value["code"] == "Asset.NotFound" and out.value["description"] == "no asset 'nope.png'"
    assert "Traceback" in out.value["details"]


def test_an_unreadable_asset_inside_a_result_faults_that_call_only(gw: Gateway) -> None:
    env = answer(gw, request(3, [("Files.vanished_inside", "/1", ["b.txt"]), ("Files.load", "/2", ["a.bin"])]))
    first, second = env.bodies
    assert first.target == "/1/onStatus" and first.value["code"] == "Asset.NotFound"
    assert second.value == DATA
    reply = _jsonrpc(gw, "Files.vanished_inside", "a.bin")
    assert reply["error"]["data"]["code"] == "Asset.NotFound"


# --- uploads ---------------------------------------------------------------------------


@pytest.mark.parametrize("amf3", [True, False])
def test_an_upload_is_served_back(gw: Gateway, amf3: bool) -> None:
    payload = os.urandom(70_000)  # over the size read in one piece

    async def body(c: AsyncClient, http: httpx.AsyncClient) -> None:
        meta = await c.Files.put("uploads/new.bin", payload)
        assert meta["name"] == "uploads/new.bin" and meta["size"] == len(payload)
        r = await http.get("/assets/uploads/new.bin")
        assert (r.status_code, r.content, r.headers["etag"]) == (200, payload, meta["etag"])
        assert await c.Files.load("uploads/new.bin") == payload

    with_client(gw, body, amf3=amf3)


def test_a_too_large_upload_is_a_clean_fault(gw: Gateway, store: AssetStore) -> None:
    async def body(c: AsyncClient, http: httpx.AsyncClient) -> None:
        with pytest.raises(Fault) as e:
            await c.Files.put("uploads/big.bin", b"x" * 100_001)
        assert e.value.code == "Asset.TooLarge"
        assert e.value.message == "asset 'uploads/big.bin' of 100001 bytes is larger than this store's max_size (100000)"
        assert (await http.get("/assets/uploads/big.bin")).status_code == 404

    with_client(gw, body)
    assert "uploads/big.bin" not in store
    too_large = _jsonrpc(gw, "Files.put", "x.bin", "not bytes")["error"]
    assert too_large["data"]["code"] == "Client.Argument"  # a JSON string is no bytes
