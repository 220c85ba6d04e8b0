"""A remoting packet as text: `render` (the tree `amfkit decode` prints) and `to_json`
(the JSON form, which `amfkit.capture.packetedit` turns back into bytes), both over
`layout`, the packet as read with each part's length field and where its value lies.

    >>> from amfkit.remoting import packet
    >>> data = packet.encode(packet.Envelope(0, bodies=[packet.Body("Echo.echo", "/1", ["hi"])]))
    >>> print(render(data))
    AMF0 packet, 0 headers, 1 body, 35 bytes
    body 1: target 'Echo.echo', response '/1'
      strict array [1]
        [0]: string 'hi'

ISSUE 26: `amfkit decode` learns to print packets in branch i26-foreign; `render` is
this module's own until then, and is meant to be replaced by that printing (the
mitmproxy view calls it through `RENDER`, so one assignment swaps it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import _amfkit
from .calls import Limits, message_of

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


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def render(data: bytes, *, max_string: int = 120, limits: Limits = Limits()) -> str:
    """The packet as an indented tree: version, headers, then each body's target,
    response URI and value (Flex messages by their class), values as `amfkit decode`
    prints them."""
    from ..cli.tree import iter_lines

    p = layout(data, limits)
    # A version-3 packet's values are AMF0 that switch to AMF3 where they say so; the
    # tree names AMF0 types for version 0 and AMF3 types (what clients mean) for 3.
    version = 0 if p.version in (0, 1) else 3
    lines = [f"AMF{version} packet, {_count(len(p.headers), 'header', 'headers')}, {_count(len(p.bodies), 'body', 'bodies')}, {p.size} bytes"]
    for h in p.headers:
        flag = " (must understand)" if h.second else ""
        lines.append(f"header {h.first!r}{flag}")
        lines.extend("  " + line for line in iter_lines(h.value, version=version, max_string=max_string))
    for i, b in enumerate(p.bodies, 1):
        lines.append(f"body {i}: target {b.first!r}, response {b.second!r}")
        msg = message_of(b.value)
        if msg is not None:
            lines.append(f"  Flex {type(msg).__name__}")
        lines.extend("  " + line for line in iter_lines(b.value, version=version, max_string=max_string))
    return "\n".join(lines)


def json_doc(p: Layout) -> dict[str, Any]:
    """The JSON form's document: version, headers (name, must_understand, value) and
    bodies (target, response, value), the values as `amfkit decode --json` gives them."""
    return {
        "version": p.version,
        "headers": [{"name": h.first, "must_understand": bool(h.second), "value": h.value} for h in p.headers],
        "bodies": [{"target": b.first, "response": b.second, "value": b.value} for b in p.bodies],
    }


def to_json(data: bytes, *, limits: Limits = Limits()) -> str:
    """The packet as JSON text (`amfkit.cli.jsonio`'s mapping, two-space indent)."""
    from ..cli.jsonio import dumps

    return dumps(json_doc(layout(data, limits)), indent=2)


#: What the mitmproxy view prints: swapped for issue 26's packet printing when it lands.
RENDER: Callable[[bytes], str] = render
