"""A remoting packet as text, for the mitmproxy addon: `RENDER` (the "AMF" view: what
`amfkit decode` prints for the bytes, `amfkit.decodetext.render`, read as captures are
read: an externalizable class nobody registered kept opaque) and `to_json` (the "AMF
JSON" view, which `amfkit.capture.packetedit` turns back into bytes), the latter over
`layout`, the packet as read with each part's length field and where its value lies.

    >>> from amfkit.remoting import packet
    >>> data = packet.encode(packet.Envelope(0, bodies=[packet.Body("Echo.echo", "/1", ["hi"])]))
    >>> print(RENDER(data))
    # amf packet, version 0, 0 headers, 1 body, 35 bytes
    body 0: target 'Echo.echo', response '/1'
      strict array [1]
        [0]: string 'hi'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import _amfkit
from .calls import LENIENT, Limits

__all__ = ["Layout", "Part", "RENDER", "layout", "render", "to_json", "json_doc"]


@dataclass
class Part:
    """A header (`name`, `must_understand`) or a body (`target`, `response`): its value,
    its length field as written, and `data[start:end]`, its value's bytes."""

    kind: str  # "header" or "body"
    first: str  # a header's name, a body's target
    second: Any  # a header's must-understand flag, a body's response URI
    value: Any
    length: int
    start: int
    end: int


@dataclass
class Layout:
    version: int
    headers: list[Part] = field(default_factory=list)
    bodies: list[Part] = field(default_factory=list)
    size: int = 0


def layout(data: bytes, limits: Limits = Limits()) -> Layout:
    """The packet in `data`, read with `limits`; `amfkit.DecodeError` when it is none."""
    version, headers, bodies = _amfkit.decode_packet_layout(
        data, max_depth=limits.max_depth, max_objects=limits.max_objects, max_size=limits.max_size
    )
    return Layout(
        version,
        [Part("header", n, mu, v, ln, s, e) for n, mu, v, ln, s, e in headers],
        [Part("body", t, r, v, ln, s, e) for t, r, v, ln, s, e in bodies],
        len(data),
    )


def json_doc(p: Layout) -> dict[str, Any]:
    """The JSON form's document: version, headers (name, must_understand, value) and
    bodies (target, response, value), the values as `amfkit decode --json` gives them."""
    return {
        "version": p.version,
        "headers": [{"name": h.first, "must_understand": bool(h.second), "value": h.value} for h in p.headers],
        "bodies": [{"target": b.first, "response": b.second, "value": b.value} for b in p.bodies],
    }


def to_json(data: bytes, *, limits: Limits = Limits()) -> str:
    """The packet as JSON text (`amfkit.jsonio`'s mapping, two-space indent)."""
    from ..jsonio import dumps

    return dumps(json_doc(layout(data, limits)), indent=2)


def render(data: bytes, *, max_string: int = 120, limits: Limits = Limits()) -> str:
    """What `amfkit decode --unknown-externalizable opaque` prints for `data` (plain
    `amfkit decode` prints the same for a packet whose classes it all knows); a
    `ValueError` naming why when the bytes hold no AMF."""
    from ..decodetext import render as decode_text

    return decode_text(
        data, max_string=max_string, max_depth=limits.max_depth, max_objects=limits.max_objects, max_size=limits.max_size, **LENIENT
    )


#: What the mitmproxy "AMF" view prints for a body.
RENDER: Callable[[bytes], str] = render
