"""`/crossdomain.xml` (`amfkit.remoting.crossdomain`), read back with defusedxml as Flash
Player reads it: the master policy (`site-control` master-only), one `allow-access-from`
per domain, values checked; 404 when the gateway has none; the demo's names its own host."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time

import httpx
import pytest
from defusedxml import ElementTree as SafeXML

from amfkit.remoting import Gateway
from amfkit.remoting.crossdomain import CONTENT_TYPE, CrossDomainPolicy, check_domain

from servers import serve_asgi, serve_wsgi


def parsed(body: bytes) -> tuple[str, list[str]]:
    """(site-control's permitted-cross-domain-policies, the allow-access-from domains)."""
    root = SafeXML.fromstring(body)  # refuses a DTD's entities, external or not
    assert root.tag == "cross-domain-policy"
    (control,) = root.findall("site-control")
    allowed = root.findall("allow-access-from")
    assert all(set(a.attrib) == {"domain"} for a in allowed)  # no to-ports, no secure="false"
    assert [c.tag for c in root] == ["site-control"] + ["allow-access-from"] * len(allowed)
    return control.attrib["permitted-cross-domain-policies"], [a.attrib["domain"] for a in allowed]


def test_served_under_asgi_and_wsgi_and_parsed_with_defusedxml() -> None:
    gateway = Gateway({}, crossdomain=["game.example", "*.cdn.example", "10.0.0.7", "Game.Example"])
    for serve in (serve_asgi, lambda app: serve_wsgi(app.wsgi)):
        with serve(gateway) as server:
            r = httpx.get(server.url + "/crossdomain.xml")
            assert r.status_code == 200 and r.headers["content-type"] == CONTENT_TYPE
            assert r.headers["x-content-type-options"] == "nosniff"
            assert parsed(r.content) == ("master-only", ["game.example", "*.cdn.example", "10.0.0.7"])
            head = httpx.head(server.url + "/crossdomain.xml")
            assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == r.headers["content-length"]
            post = httpx.post(server.url + "/crossdomain.xml", content=b"")
            assert post.status_code == 405 and post.headers["allow"] == "GET, HEAD"


def test_every_domain() -> None:
    assert parsed(CrossDomainPolicy("*").body) == ("master-only", ["*"])


def test_404_without_one_even_on_a_gateway_of_every_path() -> None:
    for gateway in (Gateway({}), Gateway({}, path=None)):
        status, _, body = asyncio.run(gateway.respond("GET", "/crossdomain.xml", {}, b""))
        assert status == 404 and b"serves no cross-domain policy" in body


@pytest.mark.parametrize(
    "domain",
    [
        'game.example" /><allow-access-from domain="*',  # an attribute breaking out
        "<evil>",
        "https://game.example",
        "game.example:8080",
        "game.example/path",
        "*game.example",
        "game.*.example",
        "-game.example",
        "game..example",
        "",
        "a" * 64 + ".example",
        "300.1.1.1.example/",
    ],
)
def test_domains_are_checked(domain: str) -> None:
    with pytest.raises(ValueError, match="is not a domain"):
        check_domain(domain)
    with pytest.raises(ValueError):
        Gateway({}, crossdomain=[domain])


def test_domains_that_pass() -> None:
    assert [check_domain(d) for d in ("localhost", "127.0.0.1", "*.Example.COM", "xn--bcher-kva.example")] == [
        "localhost",
        "127.0.0.1",
        "*.example.com",
        "xn--bcher-kva.example",
    ]
    with pytest.raises(ValueError, match="at least one domain"):
        CrossDomainPolicy([])
    with pytest.raises(TypeError):
        CrossDomainPolicy([7])  # type: ignore[list-item]


def test_the_demo_allows_its_own_host_only(tmp_path, python_env, python_exe) -> None:
    """`amfkit serve --demo` (what `make run` runs) serves a policy naming its --host."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(python_env, AMFKIT_DEMO_DB=str(tmp_path / "demo.sqlite3"), AMFKIT_DEMO_ASSETS=str(tmp_path / "assets"))
    proc = subprocess.Popen(
        [python_exe, "-m", "amfkit", "serve", "--demo", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/crossdomain.xml", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "the demo did not start"
                time.sleep(0.1)
        assert r.status_code == 200 and parsed(r.content) == ("master-only", ["127.0.0.1"])
        # Its CORS is off: a page elsewhere reads nothing.
        answer = httpx.get(f"http://127.0.0.1:{port}/gateway", headers={"Origin": "https://elsewhere.example"})
        assert "access-control-allow-origin" not in answer.headers
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=20)
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")
