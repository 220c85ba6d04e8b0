"""The service browser in a real browser: Debian's Chromium driven by Playwright, against
the demo gateway under uvicorn (docs/browser.md).

Opens the page, lists the demo services, calls EchoService and TileService over AMF3,
AMF0, Flex RemoteObject and JSON-RPC and reads the tree, sees a fault, runs the repeat
mode, calls a protected service with and without credentials, and keeps a screenshot
(out/browser/service-browser.png). Every page must finish without a console error or
warning, an uncaught exception, a failed request or a Content-Security-Policy violation.

Needs Chromium (`make system-deps` installs Debian's package) and the `playwright`
Python package (`make venv`); `playwright install` is not used. Without them the tests
fail, naming what to run.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from amfkit.demo.app import build
from amfkit.remoting import Gateway, Principal, Services, requires

from repo import ROOT
from servers import serve_asgi

OUT = ROOT / "out" / "browser"
SCREENSHOT = OUT / "service-browser.png"
PROTOCOLS = ("amf3", "amf0", "flex", "jsonrpc")
INIT_SCRIPT = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
window.__dialogs = 0;
"""


def chromium_path() -> str:
    found = os.environ.get("AMFKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(found, os.X_OK):
        pytest.fail(
            "Chromium is missing (the service browser's tests drive Debian's chromium package): "
            "run `make system-deps` (it runs apt-get install chromium), or set AMFKIT_CHROMIUM",
            pytrace=False,
        )
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "the playwright Python package is missing: run `make venv` (requirements-dev.txt) and "
            "`make system-deps` for Chromium, or `make test`, which runs both",
            pytrace=False,
        )
    args = ["--disable-dev-shm-usage", "--disable-gpu"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to start its sandbox as root
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=args)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("browser-demo")
    gateway = build(tmp / "tiles.sqlite3")  # the demo: the page and Server-Timing on
    assert gateway.browser is not None and gateway.server_timing
    with serve_asgi(gateway) as server:
        yield server.url


class Watched:
    """A page and what went wrong on it."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.problems: list[str] = []
        self.allowed: list[re.Pattern[str]] = []
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.problems.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.method} {r.url} {r.failure}"))
        page.on("response", self._response)
        page.on("dialog", self._dialog)

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning", "assert"):
            self.problems.append(f"console {message.type}: {message.text}")

    def _response(self, response: Any) -> None:
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.request.method} {response.url}")

    def _dialog(self, dialog: Any) -> None:
        self.problems.append(f"a dialog opened: {dialog.message}")
        dialog.dismiss()

    def check(self) -> None:
        violations = self.page.evaluate("window.__cspViolations")
        problems = [p for p in self.problems if not any(a.search(p) for a in self.allowed)]
        problems += [f"CSP violation: {v}" for v in violations]
        assert problems == []


def open_page(browser: Any, url: str, path: str = "/") -> Watched:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.add_init_script(INIT_SCRIPT)
    watched = Watched(page)
    page.goto(url + path)
    page.wait_for_selector("body[data-ready=true]")
    return watched


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
    page.wait_for_selector(f"#method h2:has-text('{target.split('.')[1]}')")
    for name, value in (values or {}).items():
        field = page.locator(f"#param-{name}")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    before = int(page.evaluate("document.body.dataset.calls ?? '0'"))
    page.click("#send")
    # Selectors, not wait_for_function: that evaluates a string, which the page's CSP refuses.
    page.wait_for_selector(f'body[data-calls="{before + 1}"]', state="attached")
    outcome = page.locator("#outcome")
    assert outcome.get_attribute("data-protocol") == protocol
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
    assert "ArrayCollection" in page.inner_text("#method .docs")
    assert page.input_value("#param-set_id") == "1"
    assert page.get_attribute("#param-set_id", "type") == "number"
    assert page.inner_text("#method .ptype") == "int"
    # The filter.
    page.fill("#filter", "tilesas")
    shown = page.locator("nav button.method").evaluate_all("bs => bs.map(b => b.dataset.method)")
    assert shown and all(m.startswith("TileService.getTilesAs") for m in shown)
    # A docstring's example fills the form.
    page.fill("#filter", "")
    page.click('button.method[data-method="AssetService.download"]')
    assert page.input_value("#param-name") == "images/01.png"


def test_a_method_from_the_url(browser: Any, demo_url: str) -> None:
    w = open_page(browser, demo_url, "/#TileService.getTilesAsString")
    try:
        assert "getTilesAsString" in w.page.inner_text("#method h2")
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
    # Server-Timing, as a bar with its phases.
    legend = page.inner_text("#outcome figure.timing .legend")
    assert "call EchoService.echo" in legend and "decode" in legend and "network & browser" in legend
    assert page.locator("#outcome figure.timing svg.bar rect").count() >= 3
    # The JSON tab and the hex dump.
    page.click("#outcome button[data-tab=json]")
    assert '"word": "héllo"' in page.inner_text("#outcome .tab-body")
    page.click("#outcome button[data-tab=hex]")
    hexdump = page.inner_text("#outcome pre.hex")
    assert hexdump.startswith("00000000  00 0" + ("3" if protocol in ("amf3", "flex") else "0")) or protocol == "jsonrpc"
    assert "|" in hexdump
    # The profile lists the call with its bar.
    assert page.locator("#profile ol.calls li").count() == 1


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
    assert page.locator("#outcome .tree details[open]").count() == 2
    page.locator("#outcome .tree summary", has_text="[999]:").click()
    assert "n: integer 999" in page.inner_text("#outcome .tree")
    page.click("#outcome button:has-text('Collapse all')")
    assert page.locator("#outcome .tree details[open]").count() == 0
    page.click("#outcome button:has-text('Expand all')")
    assert page.locator("#outcome .tree details[open]").count() == 1001
    assert "n: integer 500" in page.inner_text("#outcome .tree")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_fault_is_shown_plainly(watched: Watched, protocol: str) -> None:
    page = watched.page
    text = call(page, "EchoService.fail", protocol, {"message": "boom <b>from</b> the page"})
    fault = page.locator("#outcome .problem.fault")
    assert fault.count() == 1
    shown = fault.inner_text()
    assert "boom <b>from</b> the page" in shown  # as text, not markup
    assert "Server.Processing" in shown
    assert page.locator("#outcome .problem.fault b").count() == 0
    assert "fault" in text


def test_responses_are_text_never_markup(watched: Watched) -> None:
    page = watched.page
    hostile = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    value = '{"<b>key</b>": "%s"}' % hostile.replace('"', '\\"')
    text = call(page, "EchoService.echo", "amf3", {"value": value})
    assert "<b>key</b>" in text and hostile in text
    assert page.locator("#outcome img, #outcome script, #outcome b:has-text('key')").count() == 0


def test_a_field_that_is_not_json_is_refused_before_sending(watched: Watched) -> None:
    page = watched.page
    page.click('button.method[data-method="EchoService.echo"]')
    page.fill("#param-value", "{not json")
    page.click("#send")
    assert "value: not JSON" in page.inner_text("#method .form-error")
    assert page.locator("#param-value.invalid").count() == 1
    assert page.evaluate("document.body.dataset.calls ?? '0'") == "0"


def test_repeat_mode(watched: Watched) -> None:
    page = watched.page
    page.select_option("#protocol", "amf3")
    page.click('button.method[data-method="EchoService.echo"]')
    page.fill("#param-value", '"hi"')
    page.fill("#repeat-n", "20")
    page.fill("#repeat-c", "4")
    page.click("#repeat-run")
    page.wait_for_selector('body[data-repeats="1"]', state="attached")
    stat = lambda name: page.inner_text(f"#repeat-outcome dd[data-stat='{name}']")  # noqa: E731
    assert stat("calls") == "20"
    assert stat("failed") == "0 faults, 0 errors"
    for name in ("median", "p99", "min", "max", "server median", "server p99"):
        assert re.fullmatch(r"[0-9.]+ ms", stat(name)), (name, stat(name))
    chart = page.locator("#repeat-outcome svg.latency")
    assert chart.locator("rect.call").count() == 20
    assert chart.locator("line.mark.median").count() == 1 and chart.locator("line.mark.p99").count() == 1
    labels = chart.locator("text.mark-label").evaluate_all("ts => ts.map(t => t.textContent)")
    assert any(t.startswith("median ") for t in labels) and any(t.startswith("p99 ") for t in labels)


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
        assert page.locator("nav .lock").first.get_attribute("title") == "needs admin"
        text = call(page, "Vault.secret", protocol, {"word": "amf"})
        assert "needs role admin" in page.inner_text("#method .method-head")
        assert "Client.Authentication" in page.inner_text("#outcome .problem"), text
        page.fill("#cred-user", "bob")
        page.fill("#cred-password", "builder")
        call(page, "Vault.secret", protocol, {"word": "amf"})
        assert "Client.Authorization" in page.inner_text("#outcome .problem")
        page.fill("#cred-user", "ada")
        page.fill("#cred-password", "lovelace")
        text = call(page, "Vault.secret", protocol, {"word": "amf"})
        assert "result: string 'the secret of amf'" in text
        assert page.locator("#outcome .problem").count() == 0
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
        problem = page.inner_text("#outcome .problem.error")
        assert "HTTP 401" in problem and "authentication failed" in problem
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
    page.wait_for_selector('body[data-repeats="1"]', state="attached")
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
        assert "only JSON-RPC works" in page.inner_text("#codec-note")
        assert page.eval_on_selector("#protocol", "s => s.value") == "jsonrpc"
        text = call(page, "EchoService.echo", "jsonrpc", {"value": '"still here"'})
        assert "result: string 'still here'" in text
    finally:
        context.close()
