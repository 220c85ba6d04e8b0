"""`Gateway(browser=...)`: the page and its files served by the gateway itself (ASGI, WSGI
and `respond`), on with debug and for the demo, off otherwise (then `/` is the gateway's
404), and Server-Timing on with it."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import httpx

from amfkit.browser import CONTENT_SECURITY_POLICY
from amfkit.demo.app import build
from amfkit.remoting import Gateway


def get(app, path: str) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as client:
            return await client.get(path)

    return asyncio.run(go())


def test_off_by_default_and_on_with_debug_or_the_option() -> None:
    assert Gateway({}).browser is None and not Gateway({}).server_timing
    assert get(Gateway({}), "/").status_code == 404
    assert get(Gateway({}), "/_browser/amfkit-codec.js").status_code == 404
    for gateway in (Gateway({}, debug=True), Gateway({}, browser=True)):
        assert gateway.browser is not None and gateway.server_timing
        page = get(gateway, "/")
        assert page.status_code == 200 and page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert b'src="/_browser/browser.js"' in page.content or b"/_browser/" in page.content
        codec = get(gateway, "/_browser/amfkit-codec.js")
        assert codec.status_code == 200 and codec.headers["content-type"].startswith("text/javascript")
        assert get(gateway, "/_browser/../page.py").status_code == 404
    quiet = Gateway({}, debug=True, browser=False, server_timing=False)
    assert quiet.browser is None and get(quiet, "/").status_code == 404
    assert get(Gateway({}, browser=True), "/gateway").status_code == 200  # the gateway still answers


def test_the_page_under_wsgi_and_respond() -> None:
    gateway = Gateway({"Echo": lambda x: x}, browser=True)
    status, headers, body = asyncio.run(gateway.respond("GET", "/", {}, b""))
    assert status == 200 and dict(headers)["content-security-policy"] == CONTENT_SECURITY_POLICY and body
    seen = {}

    def start_response(status: str, headers: list) -> None:
        seen["status"], seen["headers"] = status, dict(headers)

    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/_browser/browser.css", "wsgi.input": io.BytesIO()}
    out = b"".join(gateway.wsgi(environ, start_response))
    assert seen["status"].startswith("200") and seen["headers"]["content-type"].startswith("text/css") and out


def test_the_demo_has_the_page_unless_told_not(tmp_path: Path, monkeypatch) -> None:
    assert build(tmp_path / "a.sqlite3").browser is not None
    monkeypatch.setenv("AMFKIT_DEMO_BROWSER", "0")
    quiet = build(tmp_path / "b.sqlite3")
    assert quiet.browser is None and not quiet.server_timing


def test_the_page_acknowledges_a_lifespan_and_refuses_websockets() -> None:
    from amfkit.browser import BrowserPage

    page = BrowserPage()

    async def run(incoming: list[dict]) -> list[dict]:
        sent: list[dict] = []
        queue = list(incoming)

        async def receive() -> dict:
            return queue.pop(0)

        async def send(message: dict) -> None:
            sent.append(message)

        kind = "lifespan" if incoming[0]["type"].startswith("lifespan") else "websocket"
        await page({"type": kind}, receive, send)
        return sent

    lifespan = asyncio.run(run([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]))
    assert [m["type"] for m in lifespan] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    websocket = asyncio.run(run([{"type": "websocket.connect"}]))
    assert websocket == [{"type": "websocket.close", "code": 1003}]
