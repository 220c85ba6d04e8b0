"""One HTTP request and its answer as a capture holds them: what every capture reader
(HAR, mitmproxy flows, pcap) produces, bodies already freed of their content coding."""

from __future__ import annotations

from dataclasses import dataclass, field

from .._text import error_text
from ..remoting.http import DEFAULT_MAX_BODY_SIZE, HTTPError, inflate, media_type

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
    """`data` freed of its `Content-Encoding` (gzip, deflate, identity), at most `limit`
    bytes out (a compressed bomb stops there); None, with a note, when it cannot be."""
    if len(data) > limit:
        notes.append(f"{what} of {len(data)} bytes is over the {limit}-byte limit")
        return None
    if not encoding:
        return data
    try:
        return inflate(data, encoding, limit)
    except HTTPError as e:
        notes.append(f"{what}: {error_text(e).replace('request body', 'body')}")
        return None
