"""The service browser in a real browser: Debian's Chromium driven by Playwright, against
the demo gateway under uvicorn (docs/browser.md).

Opens the page, lists the demo services, calls EchoService and TileService over AMF3,
AMF0, Flex RemoteObject and JSON-RPC and reads the tree, sees a fault, runs the repeat
mode, calls a protected service with and without credentials, and keeps a screenshot
(out/browser/service-browser.png). Every page must finish without a console error or
warning, an uncaught exception, a failed request or a Content-Security-Policy violation.

Needs Chromium (`make system-deps` installs Debian's package) and the `playwright`
Python package (`make venv`); `playwright install` is not used. Without them the tests
fail, naming what to run (tests/support/chromium.py). What a test reads after an action
it waits for with `expect(locator)`, which retries until it holds: the page renders on
its own time (a tree row's members on its toggle event, an answer when it comes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from amfkit.demo.app import build
from amfkit.remoting import Gateway, Principal, Services, requires

from chromium import Watched, expect, open_page
from repo import ROOT
from servers import serve_asgi

OUT = ROOT / "out" / "browser"
SCREENSHOT = OUT / "service-browser.png"
PROTOCOLS = ("amf3", "amf0", "flex", "jsonrpc")


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("browser-demo")
    gateway = build(tmp / "tiles.sqlite3")  # the demo: the page and Server-Timing on
    assert gateway.browser is not None and gateway.server_timing
    with serve_asgi(gateway) as server:
        yield server.url


@pytest.fixture
def watched(browser: Any, demo_url: str) -> Iterator[Watched]:
    w = open_page(browser, demo_url)
    try:
        yield w
        w.check()
    finally:
        w.page.context.close()


def call(page: Any, target: str, protocol: str, values: dict[str, str] | None = None) -> str:
    """Call `target` from its form over `protocol`; the answer's text as shown (the tree tab)."""
    page.select_option("#protocol", protocol)
    page.click(f'button.method[data-method="{target}"]')
    expect(page.locator("#method h2")).to_contain_text(f"{target}(")
    for name, value in (values or {}).items():
        field = page.locator(f"#param-{name}")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    before = int(page.evaluate("document.body.dataset.calls ?? '0'"))
    page.click("#send")
    # The page counts an answer in body[data-calls] once it is shown whole. (Locators, not
    # wait_for_function: that evaluates a string, which the page's CSP refuses.)
    expect(page.locator("body")).to_have_attribute("data-calls", str(before + 1))
    outcome = page.locator("#outcome")
    expect(outcome).to_have_attribute("data-protocol", protocol)
    return str(outcome.inner_text())


# --- the page -----------------------------------------------------------------------------


def test_lists_the_demo_services(watched: Watched) -> None:
    page = watched.page
    services = page.locator("nav .service h3").all_inner_texts()
    for name in ("AssetService", "ChatService", "EchoService", "InstrumentPriceService", "PageableResult", "TileService"):
        assert name in services
    methods = page.locator("nav button.method").evaluate_all("bs => bs.map(b => b.dataset.method)")
    assert {"EchoService.echo", "EchoService.fail", "TileService.getTilesAsRecordSet", "TileService.getTiles"} <= set(methods)
    # A method's page: its docstring, its parameters with their types and defaults.
    page.click('button.method[data-method="TileService.getTilesAsRecordSet"]')
    expect(page.locator("#method .docs")).to_contain_text("ArrayCollection")
    expect(page.locator("#method .docs .doc code")).to_have_text(["RecordSet", "ArrayCollection", "org.amfkit.demo.Tile"])
    expect(page.locator("#method .docs")).not_to_contain_text("``")  # rendered, not shown as written
    expect(page.locator("#param-set_id")).to_have_value("1")
    expect(page.locator("#param-set_id")).to_have_attribute("type", "number")
    expect(page.locator("#method .ptype")).to_have_text("int")
    # The filter.
    page.fill("#filter", "tilesas")
    expect(page.locator("nav button.method:not([data-method^='TileService.getTilesAs'])")).to_have_count(0)
    expect(page.locator("nav button.method[data-method='TileService.getTilesAsRecordSet']")).to_be_visible()
    # A docstring's example fills the form.
    page.fill("#filter", "")
    page.click('button.method[data-method="AssetService.download"]')
    expect(page.locator("#param-name")).to_have_value("images/01.png")


def test_a_method_from_the_url(browser: Any, demo_url: str) -> None:
    w = open_page(browser, demo_url, "/#TileService.getTilesAsString")
    try:
        expect(w.page.locator("#method h2")).to_contain_text("TileService.getTilesAsString(")
        w.check()
    finally:
        w.page.context.close()


ECHO_VALUE = '{"word": "héllo", "n": 7, "x": 2.5, "list": [1, "two"], "flag": true, "none": null}'
ECHO_TREES = {
    "amf3": ["result: object (6 members)", "word: string 'héllo'", "n: integer 7", "x: double 2.5", "list: array [2]", "[0]: integer 1", "flag: boolean true", "none: null"],
    "flex": ["result: object (6 members)", "word: string 'héllo'", "n: integer 7", "x: double 2.5", "list: array [2]", "[1]: string 'two'"],
    "amf0": ["result: object (6 members)", "word: string 'héllo'", "n: number 7", "x: number 2.5", "list: strict array [2]", "[0]: number 1", "flag: boolean true"],
    "jsonrpc": ["result: object (6 members)", "word: string 'héllo'", "n: number 7", "x: number 2.5", "list: array [2]", "flag: boolean true", "none: null"],
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_echo_in_each_encoding(watched: Watched, protocol: str) -> None:
    page = watched.page
    text = call(page, "EchoService.echo", protocol, {"value": ECHO_VALUE})
    for line in ECHO_TREES[protocol]:
        assert line in text, (line, text)
    assert "HTTP 200" in text
    assert re.search(r"time [0-9.]+ ms", text)
    assert re.search(r"raw [0-9,]+ B", text)
    assert "gzip" in text
    # Server-Timing, as a bar with its phases (three at least).
    legend = page.locator("#outcome figure.timing .legend")
    for phase in ("call EchoService.echo", "decode", "network & browser"):
        expect(legend).to_contain_text(phase)
    expect(page.locator("#outcome figure.timing svg.bar rect").nth(2)).to_be_attached()
    # The JSON tab and the hex dump: a packet's version, 3 or 0, or JSON's "{".
    page.click("#outcome button[data-tab=json]")
    expect(page.locator("#outcome .tab-body")).to_contain_text('"word": "héllo"')
    page.click("#outcome button[data-tab=hex]")
    first = {"amf3": "00 03", "flex": "00 03", "amf0": "00 00", "jsonrpc": "7b"}[protocol]
    expect(page.locator("#outcome pre.hex")).to_have_text(re.compile(rf"^00000000\s+{first}\s.*\|", re.S))
    # The profile lists the call with its bar.
    expect(page.locator("#profile ol.calls li")).to_have_count(1)


TILE_TREES = {
    "amf3": ["result: object 'flex.messaging.io.ArrayCollection' [24]", "[0]: object 'org.amfkit.demo.Tile' (5 members, 5 sealed, not dynamic)", "n: integer 0", "c: string '"],
    "flex": ["result: object 'flex.messaging.io.ArrayCollection' [24]", "[0]: object 'org.amfkit.demo.Tile' (5 members, 5 sealed, not dynamic)", "n: integer 0"],
    "amf0": ["result: typed object 'RecordSet' (1 member)", "serverInfo: object (7 members)", "totalCount: number 24", "initialData: strict array [24]", "[0]: strict array [5]", "[0]: number 0"],
    "jsonrpc": ["result: ", "[0]: "],
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tiles_in_each_encoding(watched: Watched, protocol: str) -> None:
    page = watched.page
    text = call(page, "TileService.getTilesAsRecordSet", protocol, {"set_id": "2"})
    for line in TILE_TREES[protocol]:
        assert line in text, (line, text)
    assert "Fault" not in text and "Error" not in text


def test_a_thousand_tiles_open_lazily(watched: Watched) -> None:
    page = watched.page
    text = call(page, "TileService.getTilesAsTypedObjects", "amf3")
    assert "result: array [1000]" in text
    assert "[999]: object 'org.amfkit.demo.Tile'" in text
    # Only the first row is open: the others are built when opened.
    tree = page.locator("#outcome .tree")
    opened = tree.locator("details[open]")
    expect(opened).to_have_count(2)
    expect(tree).not_to_contain_text("n: integer 999")
    tree.locator("summary", has_text="[999]:").click()
    # The row's members are built on its toggle event, a task after the click: wait for them.
    expect(opened).to_have_count(3)
    expect(tree).to_contain_text("n: integer 999")
    page.click("#outcome button:has-text('Collapse all')")
    expect(opened).to_have_count(0)
    page.click("#outcome button:has-text('Expand all')")
    expect(opened).to_have_count(1001)
    expect(tree).to_contain_text("n: integer 500")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_fault_is_shown_plainly(watched: Watched, protocol: str) -> None:
    page = watched.page
    text = call(page, "EchoService.fail", protocol, {"message": "boom <b>from</b> the page"})
    fault = page.locator("#outcome .problem.fault")
    expect(fault).to_have_count(1)
    expect(fault).to_contain_text("boom <b>from</b> the page")  # as text, not markup
    expect(fault).to_contain_text("Server.Processing")
    expect(fault.locator("b")).to_have_count(0)
    assert "fault" in text


def test_responses_are_text_never_markup(watched: Watched) -> None:
    page = watched.page
    hostile = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    value = '{"<b>key</b>": "%s"}' % hostile.replace('"', '\\"')
    text = call(page, "EchoService.echo", "amf3", {"value": value})
    assert "<b>key</b>" in text and hostile in text
    expect(page.locator("#outcome img, #outcome script, #outcome b:has-text('key')")).to_have_count(0)


def test_a_field_that_is_not_json_is_refused_before_sending(watched: Watched) -> None:
    page = watched.page
    page.click('button.method[data-method="EchoService.echo"]')
    page.fill("#param-value", "{not json")
    page.click("#send")
    expect(page.locator("#method .form-error")).to_contain_text("value: not JSON")
    expect(page.locator("#param-value.invalid")).to_have_count(1)
    expect(page.locator("body")).not_to_have_attribute("data-calls", re.compile("."))


def test_repeat_mode(watched: Watched) -> None:
    page = watched.page
    page.select_option("#protocol", "amf3")
    page.click('button.method[data-method="EchoService.echo"]')
    page.fill("#param-value", '"hi"')
    page.fill("#repeat-n", "20")
    page.fill("#repeat-c", "4")
    page.click("#repeat-run")
    expect(page.locator("body")).to_have_attribute("data-repeats", "1")
    stat = lambda name: page.locator(f"#repeat-outcome dd[data-stat='{name}']")  # noqa: E731
    expect(stat("calls")).to_have_text("20")
    expect(stat("failed")).to_have_text("0 faults, 0 errors")
    for name in ("median", "p99", "min", "max", "server median", "server p99"):
        expect(stat(name)).to_have_text(re.compile(r"^[0-9.]+ ms$"))
    chart = page.locator("#repeat-outcome svg.latency")
    expect(chart.locator("rect.call")).to_have_count(20)
    expect(chart.locator("line.mark.median")).to_have_count(1)
    expect(chart.locator("line.mark.p99")).to_have_count(1)
    expect(chart.locator("text.mark-label.median")).to_have_text(re.compile(r"^median [0-9.]+ ms$"))
    expect(chart.locator("text.mark-label.p99")).to_have_text(re.compile(r"^p99 [0-9.]+ ms$"))


# --- credentials ----------------------------------------------------------------------------


class Vault:
    @requires("admin")
    def secret(self, word: str) -> str:
        return f"the secret of {word}"


def authenticator(user: str, password: str) -> Principal | None:
    if (user, password) == ("ada", "lovelace"):
        return Principal("ada", frozenset({"admin"}))
    if (user, password) == ("bob", "builder"):
        return Principal("bob")
    return None


@pytest.fixture(scope="module")
def protected_url() -> Iterator[str]:
    services = Services()
    services.register("Vault", Vault())
    gateway = Gateway(services, authenticator=authenticator, browser=True)
    with serve_asgi(gateway) as server:
        yield server.url


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_credentials(browser: Any, protected_url: str, protocol: str) -> None:
    w = open_page(browser, protected_url)
    page = w.page
    try:
        expect(page.locator("nav .lock").first).to_have_attribute("title", "needs admin")
        call(page, "Vault.secret", protocol, {"word": "amf"})
        expect(page.locator("#method .method-head")).to_contain_text("needs role admin")
        expect(page.locator("#outcome .problem")).to_contain_text("Client.Authentication")
        page.fill("#cred-user", "bob")
        page.fill("#cred-password", "builder")
        call(page, "Vault.secret", protocol, {"word": "amf"})
        expect(page.locator("#outcome .problem")).to_contain_text("Client.Authorization")
        page.fill("#cred-user", "ada")
        page.fill("#cred-password", "lovelace")
        text = call(page, "Vault.secret", protocol, {"word": "amf"})
        assert "result: string 'the secret of amf'" in text
        expect(page.locator("#outcome .problem")).to_have_count(0)
        w.check()
    finally:
        page.context.close()


def test_refused_credentials_over_json_rpc_are_a_401(browser: Any, protected_url: str) -> None:
    w = open_page(browser, protected_url)
    page = w.page
    w.allowed = [re.compile(r"401")]  # the browser logs the refused request itself
    try:
        page.fill("#cred-user", "ada")
        page.fill("#cred-password", "wrong")
        call(page, "Vault.secret", "jsonrpc", {"word": "x"})
        problem = page.locator("#outcome .problem.error")
        expect(problem).to_contain_text("HTTP 401")
        expect(problem).to_contain_text("authentication failed")
        w.check()
    finally:
        page.context.close()


# --- the screenshot -------------------------------------------------------------------------


def test_screenshot(watched: Watched) -> None:
    """A tour whose end is kept as out/browser/service-browser.png: calls over each
    protocol in the profile, a tile recordset in the tree, and a repeat run's chart."""
    page = watched.page
    call(page, "EchoService.echo", "amf0", {"value": '"hello"'})
    call(page, "EchoService.echo", "jsonrpc", {"value": '{"a": [1, 2.5]}'})
    call(page, "EchoService.fail", "flex", {"message": "a fault, to see one"})
    call(page, "InstrumentPriceService.get", "amf3", {"size": "large", "count": "200"})
    call(page, "TileService.getTilesAsRecordSet", "amf3", {"set_id": "1"})
    page.fill("#repeat-n", "40")
    page.fill("#repeat-c", "4")
    page.click("#repeat-run")
    expect(page.locator("body")).to_have_attribute("data-repeats", "1")
    OUT.mkdir(parents=True, exist_ok=True)
    page.mouse.wheel(0, -100_000)  # from the top, so the sticky service list sits there
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 10_000


def test_no_codec_leaves_json_rpc(browser: Any, demo_url: str) -> None:
    """If amfkit-codec.js cannot load, the page says so and still calls over JSON-RPC."""
    context = browser.new_context()
    page = context.new_page()
    try:
        page.route("**/_browser/amfkit-codec.js", lambda route: route.fulfill(status=404, body="gone"))
        page.goto(demo_url + "/")
        page.wait_for_selector("body[data-ready=true]")
        expect(page.locator("#codec-note")).to_contain_text("only JSON-RPC works")
        expect(page.locator("#protocol")).to_have_value("jsonrpc")
        text = call(page, "EchoService.echo", "jsonrpc", {"value": '"still here"'})
        assert "result: string 'still here'" in text
    finally:
        context.close()
