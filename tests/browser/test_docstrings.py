"""Docstrings in the service browser, in a real Chromium (docs/browser.md, "Docstrings"):
their reStructuredText and Markdown markup made into elements (python/amfkit/browser/
static/docstring.js), and a hostile docstring shown as text, making no element and
running nothing."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from amfkit.demo.app import build
from amfkit.remoting import Gateway, Services

from chromium import Watched, expect, open_page
from servers import serve_asgi


class Documented:
    """A service with ``markup`` in its *own* docstring too."""

    def marked(self) -> None:
        """Returns a ``Tile`` (class alias ``org.amfkit.demo.Tile``), *always*, **never**
        `None`.

        See `the AMF3 specification <https://example.org/amf3.pdf>`_ or
        https://example.org/spec, :class:`~amfkit.remoting.Gateway` and
        [a Markdown link](https://example.org/md?a=1&b=2). Not markup: *args, **kwargs,
        2 * 3 * 4, snake_case_, "\\n".

        An example::

            call("x")
              indented more

        >>> 1 + 1
        2

        Notes
        -----
        - an item with ``code``
        - an item
          carried on

          - nested, one
          - nested, two

        ```
        fenced *as written*
        ```

        :param name: the *name*
        :returns: nothing
        """

    def plain(self) -> None:
        """No markup at all: the text as it is."""


class Hostile:
    def trap(self) -> None:
        """<img src=x onerror="window.__pwned = 1"> <script>window.__pwned = 2</script>

        ``<b>bold?</b>`` and `click <javascript:window.__pwned=3>`_ and
        [also](javascript:void) and `data <data:text/html,hi>`_ and
        <a href="javascript:window.__pwned=4">raw</a> and `relative <../up>`_.
        """

    def long(self) -> None:
        pass

    def tangled(self) -> None:
        pass


LONG = "word " * 30_000  # 150,000 characters: the page shows 100,000
TANGLED = "**a *b ``c `d :e:`f [g](h " * 4_000  # openers without closers, 104,000 characters
Hostile.long.__doc__ = LONG
Hostile.tangled.__doc__ = TANGLED


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    services = Services()
    services.register("Documented", Documented())
    services.register("Hostile", Hostile())
    with serve_asgi(Gateway(services, browser=True)) as server:
        yield server.url


@pytest.fixture
def page_at(browser: Any, url: str) -> Iterator[Any]:
    opened: list[Watched] = []

    def at(method: str) -> Any:
        w = open_page(browser, url, f"/#{method}")
        opened.append(w)
        expect(w.page.locator("#method h2")).to_contain_text(f"{method}(")
        return w.page

    try:
        yield at
        for w in opened:
            w.check()  # no error, no dialog, no CSP violation
    finally:
        for w in opened:
            w.page.context.close()


def test_each_construct_becomes_its_element(page_at: Any) -> None:
    page = page_at("Documented.marked")
    doc = page.locator("#method .docs > .doc")
    blocks = doc.locator(":scope > *")
    expect(blocks).to_have_count(9)
    tags = blocks.evaluate_all("nodes => nodes.map(n => n.tagName.toLowerCase())")
    assert tags == ["p", "p", "p", "pre", "pre", "h4", "ul", "pre", "dl"]
    expect(doc).not_to_contain_text("``")

    # ``literal``, *emphasis*, **strong**, `interpreted`; the lines of a paragraph joined.
    first = blocks.nth(0)
    expect(first).to_have_text("Returns a Tile (class alias org.amfkit.demo.Tile), always, never None.")
    expect(first.locator("code")).to_have_text(["Tile", "org.amfkit.demo.Tile", "None"])
    expect(first.locator("em")).to_have_text(["always"])
    expect(first.locator("strong")).to_have_text(["never"])

    # Links: reStructuredText's, a bare URL (its comma left out), Markdown's; a role.
    second = blocks.nth(1)
    links = second.locator("a")
    expect(links).to_have_text(["the AMF3 specification", "https://example.org/spec", "a Markdown link"])
    hrefs = links.evaluate_all("as => as.map(a => [a.getAttribute('href'), a.rel, a.target])")
    assert hrefs == [
        ["https://example.org/amf3.pdf", "noopener noreferrer", "_blank"],
        ["https://example.org/spec", "noopener noreferrer", "_blank"],
        ["https://example.org/md?a=1&b=2", "noopener noreferrer", "_blank"],
    ]
    expect(second.locator("code")).to_have_text(["Gateway"])
    # What only looks like markup stays as written, backslashes included.
    expect(second).to_contain_text('Not markup: *args, **kwargs, 2 * 3 * 4, snake_case_, "\\n".')
    expect(second.locator("em, strong")).to_have_count(0)

    # "Example::" is "Example:", and the indented block after it is shown as written.
    expect(blocks.nth(2)).to_have_text("An example:")
    expect(blocks.nth(3)).to_have_class("doc-literal")
    expect(blocks.nth(3)).to_have_js_property("textContent", 'call("x")\n  indented more')
    expect(blocks.nth(4)).to_have_class("doc-doctest")
    expect(blocks.nth(4)).to_have_js_property("textContent", ">>> 1 + 1\n2")

    # An underlined title, a bullet list (an item of one paragraph holds it bare, one with
    # a nested list holds both), a fenced block, a field list.
    expect(blocks.nth(5)).to_have_text("Notes")
    items = blocks.nth(6).locator(":scope > li")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_have_text("an item with code")
    expect(items.nth(0).locator("code")).to_have_text(["code"])
    expect(items.nth(1).locator(":scope > p")).to_have_text("an item carried on")
    expect(items.nth(1).locator(":scope > ul > li")).to_have_text(["nested, one", "nested, two"])
    expect(blocks.nth(7)).to_have_js_property("textContent", "fenced *as written*")
    fields = blocks.nth(8)
    expect(fields.locator("dt")).to_have_text(["param name", "returns"])
    expect(fields.locator("dd")).to_have_text(["the name", "nothing"])
    expect(fields.locator("dd em")).to_have_text(["name"])

    # The service's docstring likewise; titles get the first paragraph as plain text.
    service_doc = page.locator("#method .service-doc .doc")
    expect(service_doc.locator("code")).to_have_text(["markup"])
    expect(service_doc.locator("em")).to_have_text(["own"])
    expect(page.locator('button.method[data-method="Documented.marked"]')).to_have_attribute(
        "title", "Returns a Tile (class alias org.amfkit.demo.Tile), always, never None."
    )
    expect(page.locator('nav .service[data-service="Documented"] h3')).to_have_attribute(
        "title", "A service with markup in its own docstring too."
    )


def test_plain_text_is_one_paragraph(page_at: Any) -> None:
    page = page_at("Documented.plain")
    doc = page.locator("#method .docs > .doc")
    expect(doc.locator("*")).to_have_count(1)
    expect(doc.locator("p")).to_have_text("No markup at all: the text as it is.")


def test_a_hostile_docstring_is_text(page_at: Any) -> None:
    page = page_at("Hostile.trap")
    doc = page.locator("#method .docs > .doc")
    # Two paragraphs and the one literal: no other element, and no link.
    expect(doc.locator("*")).to_have_count(3)
    assert doc.locator("*").evaluate_all("ns => ns.map(n => n.tagName.toLowerCase())") == ["p", "p", "code"]
    expect(doc).to_contain_text('<img src=x onerror="window.__pwned = 1"> <script>window.__pwned = 2</script>')
    expect(doc.locator("code")).to_have_text(["<b>bold?</b>"])
    # A link that does not lead to an http(s) URL stays as written, without an href.
    for written in (
        "`click <javascript:window.__pwned=3>`_",
        "[also](javascript:void)",
        "`data <data:text/html,hi>`_",
        '<a href="javascript:window.__pwned=4">raw</a>',
        "`relative <../up>`_",
    ):
        expect(doc).to_contain_text(written)
    expect(page.locator("#method img, #method script, #method iframe, #method b, #method a")).to_have_count(0)
    assert page.evaluate("window.__pwned") is None


def test_a_long_docstring_is_cut(page_at: Any) -> None:
    page = page_at("Hostile.long")
    doc = page.locator("#method .docs > .doc")
    whole = inspect.getdoc(Hostile.long) or ""
    expect(doc.locator("p.muted")).to_have_text(f"(the docstring goes on: {len(whole) - 100_000:,} more characters not shown)")
    expect(doc.locator("p").first).to_have_js_property("textContent", whole[:100_000].rstrip())


def test_markup_that_never_closes_is_text(page_at: Any) -> None:
    """Openers without closers, 100,000 characters of them: each search for a closer goes
    on from the last, so the page renders them at once, as text."""
    page = page_at("Hostile.tangled")
    doc = page.locator("#method .docs > .doc")
    whole = inspect.getdoc(Hostile.tangled) or ""
    expect(doc.locator("p.muted")).to_have_count(1)
    expect(doc.locator("*")).to_have_count(2)
    expect(doc.locator("p").first).to_have_js_property("textContent", whole[:100_000].rstrip())
