"""A SWF in Ruffle, on another origin, calling the gateway (docs/gateway.md, "Ruffle"): the
npm package `@ruffle-rs/ruffle` (its self-hosted build, `make ruffle-deps`) in Debian's
Chromium, and a SWF compiled here from tests/browser/ruffle/Probe.hx by Debian's `haxe`
(`make system-deps`): an AS3 NetConnection, declared AMF3, calling the gateway with
NetConnection.call. What the gateway receives is recorded, byte for byte.

What Ruffle 0.6.0 does that Flash Player would not, each pinned here: it answers the
gateway's CORS (a preflight, then fetch) and never asks for /crossdomain.xml; it sends a
version-0 packet of AMF0 values although the SWF declared AMF3; a dense Array goes out as
an ECMA array (which a `list` parameter takes as a list); a registered class loses its
alias, a ByteArray and a Vector become `unsupported` (0x0D); an object the arguments hold
twice is written twice; and its AVM2 reads an AMF0 reference in the answer as undefined,
which `amf0_answers="avmplus"` avoids.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amfkit.remoting import Gateway, packet

from sites import Site, launch
from repo import ROOT
from servers import serve_asgi

HERE = ROOT / "tests" / "browser" / "ruffle"
RUFFLE = HERE / "node_modules" / "@ruffle-rs" / "ruffle"

PAGE = """<!doctype html><meta charset="utf-8"><title>amfkit in Ruffle</title><link rel="icon" href="data:,">
<script>
window.reports = [];
function amfkitReport(step, kind, json) { window.reports.push([step, kind, JSON.parse(json)]); }
window.RufflePlayer = window.RufflePlayer || {};
window.RufflePlayer.config = {autoplay: "on", unmuteOverlay: "hidden", splashScreen: false, logLevel: "warn",
  allowScriptAccess: true, publicPath: "/ruffle/"};
</script>
<script src="/ruffle/ruffle.js"></script>
<body><div id="stage"></div>
<script>
window.addEventListener("load", () => {
  const player = window.RufflePlayer.newest().createPlayer();
  document.getElementById("stage").appendChild(player);
  player.ruffle().load({url: "/probe.swf", parameters: "gateway=" + encodeURIComponent(GATEWAY), allowScriptAccess: true});
});
</script></body>
"""


class Game:
    def echo(self, *values: Any) -> list[Any]:
        return list(values)

    def kinds(self, *values: Any) -> list[str]:
        """The Python type each argument arrived as."""
        return [type(v).__name__ for v in values]

    def names(self, names: list[str]) -> list[str]:
        return names

    def pair(self) -> dict[str, Any]:
        item = {"name": "sword", "power": 7}
        return {"left": item, "right": item}  # one object, twice


class Recorded:
    """The gateway, with every HTTP request it is sent kept: (method, path, headers, body)."""

    def __init__(self, gateway: Gateway) -> None:
        self.app = gateway
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []

        async def recording() -> Any:
            message = await receive()
            chunks.append(message.get("body", b""))
            return message

        await self.app(scope, recording, send)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.requests.append((scope["method"], scope["path"], headers, b"".join(chunks)))


@pytest.fixture(scope="module")
def probe_swf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    haxe = shutil.which("haxe")
    if haxe is None:
        pytest.fail("haxe is missing (it compiles the test's SWF): run `make system-deps` (apt-get install haxe)", pytrace=False)
    out = tmp_path_factory.mktemp("swf") / "probe.swf"
    subprocess.run(
        [haxe, "-cp", str(HERE), "-main", "Probe", "-swf", str(out), "-swf-version", "11", "-swf-header", "200:100:30:ffffff"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out.read_bytes()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (RUFFLE / "ruffle.js").is_file():
        pytest.fail("Ruffle's npm package is missing: run `make ruffle-deps` (npm ci in tests/browser/ruffle)", pytrace=False)
    with launch() as running:
        yield running


def run_swf(browser: Any, probe_swf: bytes, reports: int, **gateway_options: Any) -> tuple[list[list[Any]], Recorded, Site]:
    """Serve the page and the SWF from one origin and the gateway (`gateway_options`,
    `cors` being the page's origin when True) from another; wait for `reports` reports.
    Returns (the reports, the recorded gateway, the page's site)."""
    holder: dict[str, str] = {}
    site = Site({"/": lambda: PAGE.replace("GATEWAY", json.dumps(holder["gateway"])).encode(), "/probe.swf": probe_swf}, {"/ruffle/": RUFFLE})
    with serve_asgi(site) as page_server:
        origin = f"http://127.0.0.1:{page_server.port}"
        if gateway_options.get("cors") is True:
            gateway_options["cors"] = [origin]
        recorded = Recorded(Gateway({"Game": Game}, **gateway_options))
        with serve_asgi(recorded) as gateway_server:
            holder["gateway"] = gateway_server.url + "/gateway"
            context = browser.new_context()
            try:
                page = context.new_page()
                page.set_default_timeout(60_000)
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(origin + "/")
                page.wait_for_function(f"window.reports.length >= {reports}")
                found = page.evaluate("window.reports")
            finally:
                context.close()
            assert errors == []
    return found, recorded, site


def by_step(reports: list[list[Any]]) -> dict[str, tuple[str, Any]]:
    return {step: (kind, value) for step, kind, value in reports}


#: `["G2C Online", "x"]` as Ruffle 0.6.0 writes it: an ECMA array (count 2, keys "0", "1").
ECMA_NAMES = bytes.fromhex("08 00000002 0001 30 02 000a") + b"G2C Online" + bytes.fromhex("0001 31 02 0001") + b"x" + bytes.fromhex("0000 09")


def test_a_swf_in_ruffle_on_another_origin_reaches_the_services(browser: Any, probe_swf: bytes) -> None:
    reports, recorded, site = run_swf(browser, probe_swf, 4, cors=True)
    got = by_step(reports)
    assert got["echo"] == ("result", ["hi", 1.5, True])
    assert got["names"] == ("result", ["G2C Online", "x"])  # an ECMA array, taken as the list it is
    assert got["kinds"] == ("result", ["dict", "UndefinedType", "UndefinedType", "datetime", "MixedArray", "dict", "int"])
    # Ruffle's AVM2 reads the AMF0 reference (0x07) of the answer's second `item` as undefined.
    assert got["pair"] == ("result", {"left": {"name": "sword", "power": 7}})
    # The preflight, then one POST of the four calls; nothing asked for /crossdomain.xml.
    assert [(m, p) for m, p, _, _ in recorded.requests] == [("OPTIONS", "/gateway"), ("POST", "/gateway")]
    _, _, preflight, _ = recorded.requests[0]
    assert preflight["access-control-request-method"] == "POST" and preflight["access-control-request-headers"] == "content-type"
    _, _, headers, body = recorded.requests[1]
    assert headers["content-type"] == "application/x-amf" and headers["origin"] == site_origin(recorded)
    request = packet.decode(body)
    assert request.version == 0 and [b.target for b in request.bodies] == ["Game.echo", "Game.kinds", "Game.names", "Game.pair"]
    assert b"\x11" not in body[:8] and ECMA_NAMES in body  # AMF0 although declared AMF3; the Array as an ECMA array
    assert ("GET", "/crossdomain.xml") not in site.asked


def site_origin(recorded: Recorded) -> str:
    return recorded.requests[0][2]["origin"]


def test_avmplus_answers_reach_ruffle_whole(browser: Any, probe_swf: bytes) -> None:
    reports, recorded, _ = run_swf(browser, probe_swf, 4, cors=True, amf0_answers="avmplus")
    got = by_step(reports)
    assert got["pair"] == ("result", {"left": {"name": "sword", "power": 7}, "right": {"name": "sword", "power": 7}})
    assert got["echo"] == ("result", ["hi", 1.5, True]) and got["names"] == ("result", ["G2C Online", "x"])


def test_a_page_of_an_origin_not_listed_cannot_call(browser: Any, probe_swf: bytes) -> None:
    reports, recorded, _ = run_swf(browser, probe_swf, 1, cors=["https://game.example"])
    assert reports == [["netstatus", "event", "NetConnection.Call.Failed"]]
    # The refused preflight only: no call reached a service.
    assert [(m, p) for m, p, _, _ in recorded.requests] == [("OPTIONS", "/gateway")]
