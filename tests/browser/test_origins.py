"""A page on another origin calling the gateway in Debian's Chromium (docs/gateway.md,
"Clients on other origins"): the page, served from another port, loads amfkit's
TypeScript codec (js/, python/amfkit/browser/static/amfkit-codec.js) and calls the gateway
with `fetch` (an AMF3 call, a JSON-RPC call with credentials, an asset) and opens the
messaging WebSocket: all work from a listed origin, and none from an origin the gateway
does not list (`http://localhost:PORT` is another origin than `http://127.0.0.1:PORT`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amfkit.remoting import Principal

import cors_app
from sites import Site, launch
from repo import ROOT
from servers import Tagged, serve_asgi

STATIC = ROOT / "python" / "amfkit" / "browser" / "static"
PAGE = b"""<!doctype html><meta charset="utf-8"><title>another origin</title><link rel="icon" href="data:,">
<script type="module">
import * as codec from "/amfkit-codec.js";
window.codec = codec;
document.body.dataset.ready = "true";
</script><body></body>
"""

#: The calls the page makes, each returning what it got or the error it met.
CALL_AMF = """async (gateway) => {
  const { packet } = window.codec;
  const body = packet.encode({ version: 3, headers: [], bodies: [{ target: "Game.names", response: "/1", value: [["a", "b"]] }] });
  try {
    const r = await fetch(gateway, { method: "POST", headers: { "Content-Type": "application/x-amf" }, body });
    const answer = packet.decode(new Uint8Array(await r.arrayBuffer()));
    return { status: r.status, target: answer.bodies[0].target, value: answer.bodies[0].value };
  } catch (e) {
    return { error: String(e) };
  }
}"""
CALL_JSON_RPC = """async (gateway) => {
  try {
    const r = await fetch(gateway, { method: "POST", credentials: "include",
      headers: { "Content-Type": "application/json", "Authorization": "Basic " + btoa("ann:secret") },
      body: JSON.stringify({ jsonrpc: "2.0", method: "Game.echo", params: ["json"], id: 1 }) });
    return { status: r.status, value: (await r.json()).result };
  } catch (e) {
    return { error: String(e) };
  }
}"""
GET_ASSET = """async (url) => {
  try {
    const r = await fetch(url, { headers: { "Range": "bytes=0-7" } });
    return { status: r.status, bytes: Array.from(new Uint8Array(await r.arrayBuffer())) };
  } catch (e) {
    return { error: String(e) };
  }
}"""
OPEN_WEBSOCKET = """(url) => new Promise((resolve) => {
  const ws = new WebSocket(url);
  ws.onopen = () => { ws.close(); resolve("open"); };
  ws.onerror = () => resolve("refused");
})"""


def authenticate(user: str, password: str) -> Principal | None:
    return Principal(user) if (user, password) == ("ann", "secret") else None


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    """(the page's port, the gateway's port): the gateway lists the page's origin as
    `http://127.0.0.1:PAGE_PORT` only, with credentials."""
    site = Site({"/": PAGE}, {"/": STATIC})
    with serve_asgi(site) as page:
        gateway = cors_app.build(
            tmp_path_factory.mktemp("assets"), cors=[f"http://127.0.0.1:{page.port}"], cors_credentials=True, authenticator=authenticate
        )
        with serve_asgi(Tagged(gateway), http="amfkit.serving:HttpToolsProtocol") as served:
            yield page.port, served.port


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launch() as running:
        yield running


def open_page(browser: Any, url: str) -> tuple[Any, list[str]]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"uncaught: {e}"))
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]", state="attached")
    return page, console


def test_a_listed_origin_calls_the_gateway(browser: Any, servers: tuple[int, int]) -> None:
    page_port, gateway_port = servers
    page, console = open_page(browser, f"http://127.0.0.1:{page_port}/")
    try:
        gateway = f"http://127.0.0.1:{gateway_port}/gateway"
        assert page.evaluate(CALL_AMF, gateway) == {"status": 200, "target": "/1/onResult", "value": ["a", "b"]}
        assert page.evaluate(CALL_JSON_RPC, gateway) == {"status": 200, "value": "json"}
        asset = page.evaluate(GET_ASSET, f"http://127.0.0.1:{gateway_port}/assets/{cors_app.ASSET}")
        assert asset == {"status": 206, "bytes": list(cors_app.ASSET_BYTES[:8])}
        assert page.evaluate(OPEN_WEBSOCKET, f"ws://127.0.0.1:{gateway_port}/gateway") == "open"
        assert console == []
    finally:
        page.context.close()


def test_an_origin_not_listed_cannot(browser: Any, servers: tuple[int, int]) -> None:
    page_port, gateway_port = servers
    page, console = open_page(browser, f"http://localhost:{page_port}/")  # another origin
    try:
        gateway = f"http://127.0.0.1:{gateway_port}/gateway"
        for call in (CALL_AMF, CALL_JSON_RPC):
            assert page.evaluate(call, gateway) == {"error": "TypeError: Failed to fetch"}
        assert page.evaluate(GET_ASSET, f"http://127.0.0.1:{gateway_port}/assets/{cors_app.ASSET}") == {"error": "TypeError: Failed to fetch"}
        assert page.evaluate(OPEN_WEBSOCKET, f"ws://127.0.0.1:{gateway_port}/gateway") == "refused"
        blocked = [c for c in console if "blocked by CORS policy" in c]
        assert len(blocked) == 3 and all("http://localhost:" in c for c in blocked)
    finally:
        page.context.close()


def test_the_gateways_own_pages_need_no_cors(browser: Any, tmp_path: Path) -> None:
    """The service browser's way: a page of the gateway's own origin, with CORS off."""
    gateway = cors_app.build(tmp_path, browser=True)
    assert gateway.cors is None
    with serve_asgi(gateway) as served:
        page, console = open_page(browser, f"http://127.0.0.1:{served.port}/")
        try:
            page.evaluate("""async () => { window.codec = await import("/_browser/amfkit-codec.js"); }""")
            own = f"http://127.0.0.1:{served.port}/gateway"
            assert page.evaluate(CALL_AMF, own) == {"status": 200, "target": "/1/onResult", "value": ["a", "b"]}
            assert page.evaluate(OPEN_WEBSOCKET, f"ws://127.0.0.1:{served.port}/gateway") == "open"
            assert console == []
        finally:
            page.context.close()
