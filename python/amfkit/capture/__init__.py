"""Captured traffic: HAR files, mitmproxy flows and pcap/pcapng read into one list of
HTTP exchanges (`read`), their AMF calls paired with their answers (`calls_of`), and
what is built on them: `amfkit inspect`, replay (`Gateway.from_capture`, `amfkit serve
--replay`), `amfkit scaffold` and the mitmproxy content view (docs/capture.md).

    >>> from amfkit import capture
    >>> calls = capture.calls_of(capture.read("capture.har"))   # doctest: +SKIP
    >>> [c.target for c in calls.calls]                          # doctest: +SKIP
    ['EchoService.echo', 'command ping', 'TileService.getTiles']

Reading HAR needs nothing more; mitmproxy flows need mitmproxy, pcap files dpkt and h11
(pip install 'amfkit[capture]'). A capture reader only finds bytes: AMF bodies are read
by `amfkit.remoting.packet.decode`, with its limits, leniently (`LENIENT`: an
externalizable class nobody registered kept opaque where that is sound).
"""

from __future__ import annotations

import os

from .calls import LENIENT, Call, Calls, Limits, calls_of
from .exchange import DEFAULT_MAX_BODY_SIZE, CaptureError, Exchange

__all__ = ["LENIENT", "Call", "Calls", "CaptureError", "Exchange", "Limits", "calls_of", "detect", "read", "read_bytes"]

#: The largest capture file read (a file is read whole).
MAX_FILE_SIZE = 4 * 1024 * 1024 * 1024


def detect(data: bytes) -> str:
    """"har", "flows" or "pcap" by the content of a capture; CaptureError naming what
    the bytes look like when they are none of those."""
    from .flows import looks_like_flows
    from .pcap import looks_like_pcap

    if looks_like_pcap(data):
        return "pcap"
    head = data[:4096].lstrip()
    if head.startswith(b"{"):
        return "har"
    if looks_like_flows(data):
        return "flows"
    raise CaptureError(f"not a capture (HAR, mitmproxy flows, pcap or pcapng): {_looks(data)}")


#: The most bytes of a file that is no capture read to say what it is (as AMF or not).
_LOOK_SIZE = 16 * 1024 * 1024


def _looks(data: bytes) -> str:
    """What a file that is no capture holds, in a few words: AMF that `amfkit decode`
    reads (what `amfkit.payload.read` finds in it, in any input form), else what
    `amfkit.forms.describe` says the bytes look like."""
    from .. import forms
    from ..payload import read as read_payload

    if not data:
        return "the file is empty"
    if len(data) <= _LOOK_SIZE:
        try:
            found = read_payload(data, max_inflate=_LOOK_SIZE, unknown_externalizable=LENIENT["unknown_externalizable"])
        except ValueError:  # PayloadError, FormError: no AMF in it
            pass
        else:
            return f"it holds AMF ({found.describe()}): amfkit decode reads it"
    return forms.describe(data, max_size=_LOOK_SIZE).removeprefix("not AMF: ")


def read_bytes(data: bytes, *, name: str = "capture", kind: str | None = None, max_body_size: int = DEFAULT_MAX_BODY_SIZE) -> list[Exchange]:
    """The exchanges of a capture held in memory; `kind` ("har", "flows", "pcap") or
    detected."""
    kind = kind or detect(data)
    if kind == "har":
        from .har import read_har

        return read_har(data, name=name, max_body_size=max_body_size)
    if kind == "flows":
        from .flows import read_flows

        return read_flows(data, name=name, max_body_size=max_body_size)
    if kind == "pcap":
        from .pcap import read_pcap

        return read_pcap(data, name=name, max_body_size=max_body_size)
    raise ValueError(f"unknown capture kind {kind!r} (har, flows or pcap)")


def read(path: str | os.PathLike[str], *, kind: str | None = None, max_body_size: int = DEFAULT_MAX_BODY_SIZE) -> list[Exchange]:
    """The exchanges of the capture file at `path` (HAR, mitmproxy flows, pcap, pcapng:
    told by its content unless `kind` says)."""
    name = os.fspath(path)
    try:
        size = os.path.getsize(name)
        if size > MAX_FILE_SIZE:
            raise CaptureError(f"{name}: a file of {size} bytes, over the {MAX_FILE_SIZE}-byte limit")
        with open(name, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CaptureError(f"{name}: {e.strerror or e}") from None
    try:
        return read_bytes(data, name=os.path.basename(name), kind=kind, max_body_size=max_body_size)
    except CaptureError as e:
        raise CaptureError(f"{os.path.basename(name)}: {e}") from None
