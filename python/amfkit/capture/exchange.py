"""One HTTP request and its answer as a capture holds them: what every capture reader
(HAR, mitmproxy flows, pcap) produces, bodies already freed of their content coding."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import compression
from .._text import shown
from ..remoting.http import DEFAULT_MAX_BODY_SIZE, media_type

__all__ = ["CaptureError", "Exchange", "DEFAULT_MAX_BODY_SIZE", "decoded_body"]


class CaptureError(ValueError):
    """A capture file that cannot be read at all: the message is one line naming why."""


@dataclass
class Exchange:
    """An HTTP request and its response. `time` is the request's start in seconds since
    the epoch (None when the capture does not say); `status` is None when no answer was
    recorded; a body is None when the capture holds none (or it could not be read: then
    `notes` says why). `notes` are short remarks such as "request body lossy"."""

    index: int
    method: str
    url: str
    time: float | None = None
    status: int | None = None
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    request_body: bytes | None = None
    response_body: bytes | None = None
    notes: list[str] = field(default_factory=list)
    #: Other byte strings a body stored as text may have been ("request", "response"):
    #: tried in order when the body does not decode (HAR, `har.text_candidates`).
    candidates: dict[str, list[bytes]] = field(default_factory=dict)
    #: Where it came from: "capture.har#3", "flows.mitm#0", "traffic.pcap tcp 10.0.0.1:5123".
    source: str = ""

    def header(self, name: str, *, response: bool = False) -> str | None:
        """The first header of that name (any case) of the request, or of the response."""
        name = name.lower()
        for k, v in self.response_headers if response else self.request_headers:
            if k.lower() == name:
                return v
        return None

    @property
    def request_type(self) -> str:
        """The request's media type, lowercase, without parameters ("" when absent)."""
        return media_type(self.header("content-type"))

    @property
    def response_type(self) -> str:
        return media_type(self.header("content-type", response=True))


def decoded_body(data: bytes, encoding: str | None, limit: int, what: str, notes: list[str]) -> bytes | None:
    """`data` freed of its `Content-Encoding` (gzip, deflate, identity, or a list of
    them, undone last first) by `amfkit.compression`, at most `limit` bytes out (a
    compressed bomb stops there); None, with a note, when it cannot be."""
    if len(data) > limit:
        notes.append(f"{what} of {len(data)} bytes is over the {limit}-byte limit")
        return None
    codings = [c.strip().lower() for c in (encoding or "").split(",")]
    for coding in reversed([c for c in codings if c and c != "identity"]):
        fmt = _FORMATS.get(coding)
        if fmt is None:
            notes.append(f"{what}: content coding {shown(coding)} is not read (gzip and deflate are)")
            return None
        try:
            data = _inflate(data, fmt, limit)
        except compression.CompressionError as e:
            if e.kind == "too-large":
                notes.append(f"{what}: {coding} inflates to more than {limit} bytes")
            elif e.kind == "corrupt":
                notes.append(f"{what}: corrupt {coding} data ({e.detail})")
            else:
                notes.append(f"{what}: {e}")
            return None
    return data


#: HTTP content codings and the compression format each names.
_FORMATS = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "zlib"}


def _inflate(data: bytes, fmt: str, limit: int) -> bytes:
    try:
        return compression.inflate(data, fmt, limit)
    except compression.CompressionError as e:
        # "deflate" is zlib-wrapped (RFC 9110), but some servers send raw deflate.
        if fmt != "zlib" or e.kind != "corrupt":
            raise
        return compression.inflate(data, "deflate", limit)
