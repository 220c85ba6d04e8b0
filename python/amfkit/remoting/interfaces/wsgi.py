"""The gateway as a WSGI app (`gateway.wsgi` is `adapter(gateway)`): `http.WSGIAdapter`
around the routing core (one event loop per worker thread runs it), GET and HEAD of
assets handed to the asset server's WSGI app, and the short path: a plain AMF POST
answered with no event loop."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from types import MethodType
from typing import Any

from .. import http as _http
from .plain import accepts_type, answer, answer_now, ok
from .served import Served

__all__ = ["adapter", "short_path"]


def adapter(gateway: Served) -> _http.WSGIAdapter:
    """The WSGI application of `gateway`."""
    mount = (gateway.assets.prefix, gateway.assets.wsgi) if gateway.assets is not None else None
    return _http.WSGIAdapter(gateway._respond, gateway.max_body_size, mount=mount, short=MethodType(short_path, gateway))


def short_path(gateway: Served, path: str, environ: Mapping[str, Any], body: bytes) -> _http.Response | Awaitable[_http.Response] | None:
    """The short path under WSGI: a plain AMF POST answered with no event loop (an
    awaitable when a result must be awaited); None for the core."""
    if environ.get("QUERY_STRING") or environ.get("HTTP_CONTENT_ENCODING"):
        return None
    if accepts_type(gateway, path, environ.get("CONTENT_TYPE")) is None:
        return None
    try:
        out = answer_now(gateway, body)
    except _http.HTTPError as e:
        return e.response()
    if out is None:
        return None
    # The plain answer's headers under WSGI: `plain.ok`'s.
    accept = environ.get("HTTP_ACCEPT_ENCODING") or ""
    if not isinstance(out, bytes):
        return answer(gateway, out, accept)
    return ok(gateway, out, accept)
