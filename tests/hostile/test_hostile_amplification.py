"""Memory per input byte: the inputs that make the most Python objects per byte (empty
arrays and objects, short distinct strings) cost at most `FACTOR` times their size in
peak RSS, and decode in linear time. Each shape runs in a child of its own, so that
memory freed by an earlier case cannot hide this one's peak.

Measured in the child (1 MiB inputs, Python 3.11, peak RSS growth over input size): empty
AMF3 arrays 26x, empty AMF3 objects 26x, 2-character strings 24x (the same through the
gateway), empty AMF0 objects 20x; 6-character strings 7x and dates 3x (standalone).
Arrays and objects count against `max_objects` (the gateway allows 1,000,000 per request:
at most ~3 MB of such input); strings and numbers do not, so a gateway request of
`max_body_size` (16 MiB) of short strings can take about 400 MB while it is decoded.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from gateway_util import raw_packet
from wire import u29

from .harness import Case, expect_ok, run

N = 1 << 20
FACTOR = 32
SECONDS = 1.0


def amf3_array(items: bytes, count: int) -> bytes:
    return b"\x09" + u29((count << 1) | 1) + b"\x01" + items


def two_char_strings(count: int) -> bytes:
    return b"".join(b"\x06\x05" + bytes([65 + i % 26, 65 + (i // 26) % 26]) for i in range(count))


SHAPES = {
    "amf3-empty-arrays": ("amf3", amf3_array(b"\x09\x01\x01" * (N // 3), N // 3)),
    "amf3-empty-objects": ("amf3", amf3_array(b"\x0a\x0b\x01\x01" + b"\x0a\x01\x01" * (N // 3), N // 3 + 1)),
    "amf3-2-char-strings": ("amf3", amf3_array(two_char_strings(N // 4), N // 4)),
    "amf0-empty-objects": ("amf0", b"\x0a" + (N // 4).to_bytes(4, "big") + b"\x03\x00\x00\x09" * (N // 4)),
    "gateway-2-char-strings": ("gateway", raw_packet(3, [("Nothing.here", "/1", b"\x11" + amf3_array(two_char_strings(N // 4), N // 4))])),
}


@functools.cache
def result(name: str) -> Any:
    codec, data = SHAPES[name]
    op = "gateway" if codec == "gateway" else codec
    return run([Case(name, op, data)])[name]


@pytest.mark.parametrize("name", SHAPES)
def test_peak_memory_per_input_byte(name: str) -> None:
    o = result(name)
    expect_ok(o, seconds=SECONDS, rss_kb=FACTOR * len(o.case.data) // 1024 + 4096)
    if name.startswith("gateway"):
        assert o.value["status"] == 200 and o.value["still_serving"], o.describe()
