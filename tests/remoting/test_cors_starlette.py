"""The gateway's CORS against the reference: Starlette's `CORSMiddleware`, configured alike,
gets the same requests (preflights from listed and unlisted origins, allowed and refused
methods and headers, credentials on and off, "*"; then actual requests) through the same
ASGI path, and their CORS headers are compared.

Where amfkit differs on purpose (amfkit.remoting.cors says why), the comparison says so:
an allowed preflight is 204 (Starlette 200); `Access-Control-Allow-Headers` names the
headers asked for (Starlette lists every allowed one: both allow what was asked); a
refused preflight carries no `Access-Control-*` header (Starlette keeps its methods and
max age, and echoes an allowed origin when the method or a header is refused); an answer
to an origin not allowed carries no `Access-Control-Allow-Credentials` (Starlette's does,
without `Access-Control-Allow-Origin`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from starlette.middleware.cors import CORSMiddleware

from amfkit.remoting import Gateway
from amfkit.remoting.cors import ALLOWED_METHODS, DEFAULT_HEADERS

LISTED = ["https://game.example", "http://127.0.0.1:9000"]


async def _plain_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """What Starlette's middleware wraps: an app answering 200 with a Vary of its own,
    as the gateway's answers carry `Vary: Accept-Encoding`."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain"), (b"vary", b"Accept-Encoding")]})
    await send({"type": "http.response.body", "body": b"ok"})


def _apps(origins: Any, credentials: bool) -> tuple[Any, Gateway]:
    reference = CORSMiddleware(
        _plain_app,
        allow_origins=origins if isinstance(origins, list) else [origins],
        allow_methods=list(ALLOWED_METHODS),
        allow_headers=list(DEFAULT_HEADERS),
        allow_credentials=credentials,
        max_age=600,
    )
    gateway = Gateway({"Echo": lambda x: x}, cors=origins, cors_credentials=credentials)
    return reference, gateway


def _send(app: Any, method: str, headers: dict[str, str]) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as client:
            return await client.request(method, "/gateway", headers=headers)

    return asyncio.run(go())


def _cors(r: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in r.headers.items() if k.startswith("access-control-")}


def _vary(r: httpx.Response) -> set[str]:
    return {t.strip().lower() for v in r.headers.get_list("vary") for t in v.split(",")}


def _names(value: str | None) -> set[str]:
    return {t.strip().lower() for t in (value or "").split(",") if t.strip()}


CONFIGS = [(LISTED, False), (LISTED, True), ("*", False)]
PREFLIGHTS = [
    ("https://game.example", "POST", "content-type"),
    ("http://127.0.0.1:9000", "GET", "Range, If-None-Match"),
    ("https://game.example", "POST", None),
    ("https://game.example", "POST", "content-type, x-secret"),  # a header not allowed
    ("https://game.example", "DELETE", None),  # a method not allowed
    ("https://game.example", "post", None),  # methods are case-sensitive
    ("https://evil.example", "POST", "content-type"),  # an origin not listed
    ("https://GAME.example", "POST", None),  # origins compare exactly, as browsers send them
]


@pytest.mark.parametrize(("origins", "credentials"), CONFIGS, ids=["listed", "listed+credentials", "any"])
@pytest.mark.parametrize(("origin", "method", "asked"), PREFLIGHTS)
def test_preflights_match_starlette(origins: Any, credentials: bool, origin: str, method: str, asked: str | None) -> None:
    reference, gateway = _apps(origins, credentials)
    headers = {"Origin": origin, "Access-Control-Request-Method": method}
    if asked is not None:
        headers["Access-Control-Request-Headers"] = asked
    theirs, ours = _send(reference, "OPTIONS", headers), _send(gateway, "OPTIONS", headers)
    if theirs.status_code == 200:
        assert ours.status_code == 204 and ours.content == b""  # the status; Starlette's "OK"
        t, o = _cors(theirs), _cors(ours)
        for name in ("access-control-allow-origin", "access-control-allow-methods", "access-control-max-age", "access-control-allow-credentials"):
            assert o.get(name) == t.get(name), name
        # Both let the browser send what it asked for (Starlette by listing all it allows).
        assert _names(asked) <= _names(t.get("access-control-allow-headers")) or "access-control-allow-headers" not in t
        assert _names(o.get("access-control-allow-headers")) == _names(asked)
        assert _vary(ours) >= {"origin"} and _vary(theirs) >= {"origin"}
    else:
        assert theirs.status_code == ours.status_code == 400
        # amfkit sends no Access-Control-* header on a refusal; Starlette still echoes an
        # allowed origin when the method or a header is what it refuses. A browser
        # fails either preflight: its status is not 2xx.
        assert _cors(ours) == {}
        if "access-control-allow-origin" in theirs.headers:
            assert origin in LISTED or origins == "*"


@pytest.mark.parametrize(("origins", "credentials"), CONFIGS, ids=["listed", "listed+credentials", "any"])
@pytest.mark.parametrize("origin", ["https://game.example", "http://127.0.0.1:9000", "https://evil.example", None])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_actual_answers_match_starlette(origins: Any, credentials: bool, origin: str | None, method: str) -> None:
    reference, gateway = _apps(origins, credentials)
    headers = {"Origin": origin} if origin else {}
    if method == "POST":
        headers["Content-Type"] = "text/xml"  # a refused call (XML-RPC of nothing): its 4xx/200 carries them too
    theirs, ours = _send(reference, method, headers), _send(gateway, method, headers)
    t, o = _cors(theirs), _cors(ours)
    if origin is not None and origin not in LISTED and origins != "*":
        # Starlette adds Allow-Credentials to answers for origins it does not allow
        # (without Allow-Origin, so the browser reads nothing); amfkit adds nothing.
        t.pop("access-control-allow-credentials", None)
    assert o == t
    assert _vary(ours) == _vary(theirs) == {"accept-encoding", "origin"}


def test_a_preflight_asking_for_private_network_access_is_refused_by_both() -> None:
    reference, gateway = _apps(LISTED, False)
    headers = {"Origin": LISTED[0], "Access-Control-Request-Method": "POST", "Access-Control-Request-Private-Network": "true"}
    assert _send(reference, "OPTIONS", headers).status_code == _send(gateway, "OPTIONS", headers).status_code == 400
