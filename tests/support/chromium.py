"""Debian's Chromium driven by Playwright, for the service browser's tests (docs/browser.md).

- ``browser``: a headless Chromium for a test module (``--no-sandbox`` as root);
  ``AMFKIT_CHROMIUM=/path`` picks another build. Module-scoped: Playwright's sync API
  runs an event loop while it lives, and other modules' tests call ``asyncio.run``. Without Chromium or the ``playwright``
  package the tests fail, naming what to run (``playwright install`` is not used).
- ``open_page(browser, url, path)``: a fresh context and page, opened and ready
  (``body[data-ready=true]``), ``Watched`` for what goes wrong on it.
- ``Watched.check()``: no console error or warning, uncaught exception, failed request,
  HTTP error, dialog or Content-Security-Policy violation.

Reading the page right after an action races the page's own work (a ``toggle`` event
comes a task later, a call answers when it answers): the tests wait for what they expect
with Playwright's ``expect(locator)`` assertions, which retry until they hold. Their
timeout is the pages' default, 20 s, so a loaded machine is slow, not wrong.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture fails, naming what to install
    expect = None

__all__ = ["TIMEOUT_MS", "Watched", "browser", "chromium_path", "expect", "launch", "open_page"]

TIMEOUT_MS = 20_000
INIT_SCRIPT = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


def chromium_path() -> str:
    found = os.environ.get("AMFKIT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(found, os.X_OK):
        pytest.fail(
            "Chromium is missing (the browser tests drive Debian's chromium package): "
            "run `make system-deps` (it runs apt-get install chromium), or set AMFKIT_CHROMIUM",
            pytrace=False,
        )
    return found


@contextlib.contextmanager
def launch() -> Iterator[Any]:
    """A headless Chromium (Playwright's sync API) for the `with` block."""
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
def browser() -> Iterator[Any]:
    with launch() as launched:
        assert expect is not None
        expect.set_options(timeout=TIMEOUT_MS)
        yield launched


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
    page.set_default_timeout(TIMEOUT_MS)
    page.add_init_script(INIT_SCRIPT)
    watched = Watched(page)
    page.goto(url + path)
    page.wait_for_selector("body[data-ready=true]")
    return watched
