"""The short path for an HTTP protocol that parses requests itself (`amfkit serve`'s,
amfkit.serving): `AMFRoute` (`gateway.amf_fast_route`) answers a plain AMF POST in the
protocol's callbacks, with no ASGI task, by the same functions and with the same answer
as the gateway's ASGI app."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from typing import Any

from .. import http as _http
from .plain import CONTENT_TYPE, accepts, answer, answer_now, failure
from .served import Served

__all__ = ["AMFRoute", "Cross"]


class AMFRoute:
    """A plain AMF POST answered from the protocol's callbacks (amfkit.serving.uvicorn
    asks `accepts` when the head is parsed, `answer` when the whole body came)."""

    __slots__ = ("gateway",)

    def __init__(self, gateway: Served) -> None:
        self.gateway = gateway

    def accepts(self, url: bytes, headers: Iterable[tuple[bytes, bytes]]) -> str | Cross | None:
        """For a POST of `url` (the request target) with `headers` (lowercase names): what
        `answer` takes when this route may answer it (its `Accept-Encoding`, "" when
        absent; with the gateway's CORS policy, a `Cross` that adds the CORS headers
        too), else None."""
        if b"?" in url or b"%" in url or b"#" in url:
            return None
        accept = accepts(self.gateway, url.decode("latin-1"), headers)
        cors = self.gateway.cors
        if accept is None or cors is None:
            return accept
        origin = None
        for k, v in headers:
            if k == b"origin":
                origin = v
        return Cross(accept, cors.lines(origin), cors.actual(origin.decode("latin-1") if origin is not None else None))

    def answer(self, body: bytes, accept: str | Cross) -> tuple[bytes, bytes] | Awaitable[_http.Response] | None:
        """The answer to a POST `accepts` took (`accept` is what it returned), whose whole
        `body` came: (the response head without the server's own headers and the blank
        line, body); an awaitable of the response (status, headers, body), to be sent
        from a task, when a result must be awaited; None, with nothing called, to let
        the ASGI app answer."""
        gateway = self.gateway
        if len(body) > gateway.max_body_size:
            return None  # a chunked body past the limit: the ASGI app refuses it (413)
        if type(accept) is str:
            lines, extra = b"", ()
        else:
            accept, lines, extra = accept.accept, accept.lines, accept.headers  # type: ignore[union-attr]
        try:
            out = answer_now(gateway, body)
        except Exception as e:  # a malformed packet: 400, the connection kept
            status, headers, text = failure(e, extra)
            return _head(status, headers), text
        if out is None:
            return None
        if not isinstance(out, bytes):
            return answer(gateway, out, accept, extra)  # its headers: `plain.ok`'s
        # The plain answer's head on this route, made once per compression outcome.
        out, coding = _http.compress(out, accept, gateway.gzip_threshold, gateway.gzip_level)
        head = _HEADS.get(coding)
        if head is None:
            head = _HEADS[coding] = _head(200, [CONTENT_TYPE, *coding.text])
        return head + lines + b"content-length: %d\r\n" % len(out), out


class Cross:
    """What `AMFRoute.accepts` gives for a request under a CORS policy: its
    Accept-Encoding, and the CORS headers of its answer as header lines and as pairs."""

    __slots__ = ("accept", "lines", "headers")

    def __init__(self, accept: str, lines: bytes, headers: tuple[tuple[str, str], ...]) -> None:
        self.accept = accept
        self.lines = lines
        self.headers = headers


#: Response heads of the short path by compression outcome (`_http.Coding`).
_HEADS: dict[Any, bytes] = {}


def _head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    """An HTTP/1.1 status line and header lines (without the blank line)."""
    lines = [f"HTTP/1.1 {status} {_http._reason(status)}\r\n"]
    lines += [f"{k}: {v}\r\n" for k, v in headers]
    return "".join(lines).encode("latin-1")
