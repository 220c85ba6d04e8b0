"""The gateway as a WSGI app (`gateway.wsgi` is `adapter(gateway)`): `http.WSGIAdapter`
around the routing core (one event loop per worker thread runs it), GET and HEAD of
assets handed to the asset server's WSGI app, and the short path: a plain AMF POST
answered with no event loop; with the gateway's `cors`, preflights and the CORS headers
of every answer (`GatewayWSGI`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MethodType
from typing import Any

from .. import http as _http
from .plain import accepts_type, answer, answer_now, ok
from .served import Served

__all__ = ["GatewayWSGI", "adapter", "short_path"]


def adapter(gateway: Served) -> _http.WSGIAdapter:
    """The WSGI application of `gateway`."""
    mount = (gateway.assets.prefix, gateway.assets.wsgi) if gateway.assets is not None else None
    return GatewayWSGI(gateway, mount=mount, short=MethodType(short_path, gateway))


class GatewayWSGI(_http.WSGIAdapter):
    """`http.WSGIAdapter` around the gateway's core, with the gateway's CORS policy: a
    preflight answered first, and the CORS headers on every other answer (the short
    path's, the core's and the assets')."""

    def __init__(self, gateway: Served, **options: Any) -> None:
        super().__init__(gateway._respond, gateway.max_body_size, **options)
        self.gateway = gateway

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        cors = self.gateway.cors
        if cors is None:
            return super().__call__(environ, start_response)
        origin = environ.get("HTTP_ORIGIN")
        requested = environ.get("HTTP_ACCESS_CONTROL_REQUEST_METHOD")
        if origin is not None and requested is not None and environ.get("REQUEST_METHOD", "").upper() == "OPTIONS":
            status, headers, body = cors.preflight(
                origin, requested, environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS"), "HTTP_ACCESS_CONTROL_REQUEST_PRIVATE_NETWORK" in environ
            )
            start_response(f"{status} {_http._reason(status)}", headers)
            return [body]
        extra = cors.actual(origin)
        if not extra:
            return super().__call__(environ, start_response)

        def starting(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if exc_info is not None:
                return start_response(status, [*headers, *extra], exc_info)
            return start_response(status, [*headers, *extra])

        return super().__call__(environ, starting)


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
