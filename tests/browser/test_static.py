"""The service browser's HTTP side, without a browser: the page and its static files, their
headers (Content-Security-Policy, caching, ETag, gzip), the names that are refused, and
the page's sources holding nothing that would turn a response into markup or code
(docs/browser.md)."""

from __future__ import annotations

import asyncio
import gzip
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from amfkit.browser import CONTENT_SECURITY_POLICY, STATIC_DIR, BrowserPage, mount, with_browser
from amfkit.remoting.gateway import Gateway

from servers import serve_asgi

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HAND_WRITTEN = ("index.html", "browser.js", "calls.js", "values.js", "dom.js", "docstring.js", "browser.css", "favicon.svg")


class EchoService:
    def echo(self, value: Any) -> Any:
        return value


@pytest.fixture(scope="module")
def page() -> BrowserPage:
    return BrowserPage("/gateway")


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    values = [v for k, v in headers if k == name]
    assert len(values) <= 1, f"{name} sent {len(values)} times"
    return values[0] if values else None


def test_the_policy_is_the_strict_one() -> None:
    assert CONTENT_SECURITY_POLICY == CSP


def test_the_page_is_index_html_with_the_gateway_path(page: BrowserPage) -> None:
    status, headers, body = page.respond("GET", "/", {})
    assert status == 200
    assert header(headers, "content-type") == "text/html; charset=utf-8"
    assert header(headers, "cache-control") == "no-cache"
    assert header(headers, "content-security-policy") == CSP
    assert header(headers, "x-content-type-options") == "nosniff"
    assert header(headers, "referrer-policy") == "no-referrer"
    assert header(headers, "content-length") == str(len(body))
    text = body.decode("utf-8")
    assert '<meta name="amfkit-gateway" content="/gateway">' in text
    assert "__AMFKIT_GATEWAY_PATH__" not in text
    # No inline script or style: the policy would refuse them anyway.
    assert re.search(r"<script(?![^>]*\bsrc=)", text) is None
    assert "<style" not in text and " style=" not in text
    assert re.search(r"\son[a-z]+=", text) is None


def test_the_gateway_path_is_escaped_in_the_page() -> None:
    body = BrowserPage('/gw"><script>x</script>').respond("GET", "/", {})[2].decode()
    assert "<script>x</script>" not in body
    assert 'content="/gw&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' in body


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("browser.js", "text/javascript; charset=utf-8"),
        ("calls.js", "text/javascript; charset=utf-8"),
        ("values.js", "text/javascript; charset=utf-8"),
        ("dom.js", "text/javascript; charset=utf-8"),
        ("docstring.js", "text/javascript; charset=utf-8"),
        ("browser.css", "text/css; charset=utf-8"),
        ("index.html", "text/html; charset=utf-8"),
        ("favicon.svg", "image/svg+xml"),
        ("amfkit-codec.js", "text/javascript; charset=utf-8"),
    ],
)
def test_static_files(page: BrowserPage, name: str, content_type: str) -> None:
    status, headers, body = page.respond("GET", f"/_browser/{name}", {})
    assert status == 200, name
    assert header(headers, "content-type") == content_type
    expected_cache = "no-cache" if name == "index.html" else "public, max-age=300"
    assert header(headers, "cache-control") == expected_cache
    assert header(headers, "content-security-policy") == CSP
    assert header(headers, "x-content-type-options") == "nosniff"
    etag = header(headers, "etag")
    assert etag is not None and re.fullmatch(r'"[0-9a-f]{32}"', etag)
    if name != "index.html":
        assert body == (STATIC_DIR / name).read_bytes()


def test_etag_and_304(page: BrowserPage) -> None:
    _, headers, body = page.respond("GET", "/_browser/browser.js", {})
    etag = header(headers, "etag")
    assert etag
    status, headers304, body304 = page.respond("GET", "/_browser/browser.js", {"if-none-match": etag})
    assert (status, body304) == (304, b"")
    assert header(headers304, "etag") == etag
    assert header(headers304, "content-length") is None
    assert page.respond("GET", "/_browser/browser.js", {"if-none-match": f'"other", W/{etag}'})[0] == 304
    assert page.respond("GET", "/_browser/browser.js", {"if-none-match": '"other"'})[0] == 200
    assert page.respond("GET", "/", {"if-none-match": "*"})[0] == 304


def test_gzip_when_accepted(page: BrowserPage) -> None:
    status, headers, body = page.respond("GET", "/_browser/browser.js", {"accept-encoding": "gzip, br"})
    assert status == 200
    assert header(headers, "content-encoding") == "gzip"
    assert header(headers, "vary") == "Accept-Encoding"
    assert gzip.decompress(body) == (STATIC_DIR / "browser.js").read_bytes()
    gz_etag = header(headers, "etag")
    plain = page.respond("GET", "/_browser/browser.js", {"accept-encoding": "gzip;q=0"})
    assert header(plain[1], "content-encoding") is None
    assert header(plain[1], "etag") != gz_etag  # two representations, two tags
    assert page.respond("GET", "/_browser/browser.js", {"if-none-match": gz_etag or ""})[0] == 304


def test_head_has_the_headers_and_no_body(page: BrowserPage) -> None:
    get = page.respond("GET", "/", {})
    head = page.respond("HEAD", "/", {})
    assert head[0] == 200 and head[2] == b""
    assert header(head[1], "content-length") == str(len(get[2]))


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS"])
def test_other_methods_are_405(page: BrowserPage, method: str) -> None:
    status, headers, _ = page.respond(method, "/", {})
    assert status == 405
    assert header(headers, "allow") == "GET, HEAD"
    assert header(headers, "content-security-policy") == CSP


@pytest.mark.parametrize(
    "path",
    [
        "/_browser/",
        "/_browser/nothing.js",
        "/_browser/page.py",  # not a type the folder serves
        "/_browser/../page.py",
        "/_browser/..%2fpage.py",
        "/_browser/%2e%2e/page.py",
        "/_browser/./browser.js",
        "/_browser/sub/browser.js",
        "/_browser//etc/passwd",
        "/_browser/.hidden.js",
        "/_browser/browser.js/",
        "/_browser/browser.js\x00.css",
        "/_browser/BROWSER.JS",
        "/_browser/" + "a" * 300 + ".js",
        "/other",
    ],
)
def test_names_outside_the_folder_are_404(page: BrowserPage, path: str) -> None:
    status, headers, _ = page.respond("GET", path, {})
    assert status == 404, path
    assert header(headers, "content-security-policy") == CSP


def test_a_file_outside_the_folder_through_a_link_is_404(tmp_path: Path) -> None:
    static = tmp_path / "static"
    static.mkdir()
    (static / "index.html").write_text("<p>hi</p>")
    (tmp_path / "secret.js").write_text("secret")
    (static / "link.js").symlink_to(tmp_path / "secret.js")
    own = BrowserPage("/gateway", static_dir=static)
    assert own.respond("GET", "/", {})[0] == 200
    assert own.respond("GET", "/_browser/link.js", {})[0] == 404


def test_a_changed_file_is_served_anew(tmp_path: Path) -> None:
    static = tmp_path / "static"
    static.mkdir()
    (static / "a.js").write_text("one")
    own = BrowserPage("/gateway", static_dir=static)
    first = own.respond("GET", "/_browser/a.js", {})
    (static / "a.js").write_text("two, longer")
    second = own.respond("GET", "/_browser/a.js", {})
    assert (first[2], second[2]) == (b"one", b"two, longer")
    assert header(first[1], "etag") != header(second[1], "etag")


def test_bad_gateway_paths_are_refused() -> None:
    for path in ("", "gateway", "/", "/_browser/gateway"):
        with pytest.raises(ValueError):
            BrowserPage(path)


def test_what_the_page_handles(page: BrowserPage) -> None:
    assert page.handles("/") and page.handles("/", "HEAD") and page.handles("/_browser/browser.js")
    assert page.handles("/_browser/x", "POST")  # a 405 from the page
    assert not page.handles("/", "POST")  # left to the gateway (path=None answers there)
    assert not page.handles("/gateway") and not page.handles("/_browserx") and not page.handles("/index.html")


def test_a_gateway_on_any_path_still_takes_posts_at_the_root() -> None:
    gateway = Gateway({"EchoService": EchoService()}, path=None)
    with serve_asgi(with_browser(gateway)) as server, httpx.Client(base_url=server.url) as client:
        assert client.get("/").headers["content-type"] == "text/html; charset=utf-8"
        answer = client.post("/", json={"jsonrpc": "2.0", "method": "EchoService.echo", "params": [1], "id": 1})
        assert answer.json()["result"] == 1


def test_mount_follows_the_gateway_path() -> None:
    assert mount(Gateway({"EchoService": EchoService()}, path="/amf")).gateway_path == "/amf"
    assert mount(Gateway({"EchoService": EchoService()}, path=None)).gateway_path == "/gateway"


def test_the_sources_never_turn_text_into_markup_or_code() -> None:
    """What the page is built of makes elements with createElement and puts text in
    text nodes; nothing evaluates text or writes markup."""
    forbidden = re.compile(
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\s*\(|new\s+Function\b|"
        r"setTimeout\s*\(\s*['\"`]|setInterval\s*\(\s*['\"`]|createContextualFragment|DOMParser|srcdoc|javascript:"
    )
    for name in HAND_WRITTEN:
        text = (STATIC_DIR / name).read_text("utf-8")
        found = forbidden.findall(text)
        assert not found, f"{name}: {found}"


def test_with_browser_routes_the_page_and_the_gateway(tmp_path: Path) -> None:
    gateway = Gateway({"EchoService": EchoService()})
    app = with_browser(gateway)
    assert app.page.gateway_path == "/gateway"
    with serve_asgi(app) as server, httpx.Client(base_url=server.url) as client:
        page = client.get("/")
        assert page.status_code == 200
        assert page.headers["content-security-policy"] == CSP
        assert client.get("/_browser/browser.js").headers["cache-control"] == "public, max-age=300"
        assert client.get("/_browser/nope.js").status_code == 404
        assert client.head("/").status_code == 200
        doc = client.get("/gateway").json()
        assert [s["name"] for s in doc["services"]] == ["EchoService"]
        answer = client.post("/gateway", json={"jsonrpc": "2.0", "method": "EchoService.echo", "params": ["hi"], "id": 1})
        assert answer.json()["result"] == "hi"
        assert client.get("/elsewhere").status_code == 404  # the gateway's 404


def test_the_page_answers_under_asgi_alone() -> None:
    page = BrowserPage()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/", "headers": [(b"accept-encoding", b"gzip")]}
    asyncio.run(page(scope, receive, send))
    assert sent[0]["status"] == 200
    headers = dict(sent[0]["headers"])
    assert headers[b"content-security-policy"] == CSP.encode()
    body = sent[1]["body"]
    if headers.get(b"content-encoding") == b"gzip":
        body = gzip.decompress(body)
    assert b'<meta name="amfkit-gateway" content="/gateway">' in body
