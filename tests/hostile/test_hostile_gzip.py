"""Compressed request bodies against the gateway, in the child process: a 1 GiB gzip bomb
(about 1 MB on the wire) in every coding the gateway accepts, nested gzip, truncated
streams, a bomb after a good member, and a body of hundreds of thousands of tiny gzip
members. Each is a 413 or 400 in under a second with the child's peak RSS growing by
less than `BOMB_KB` (the default `max_body_size` is 16 MiB: inflation stops there).

tests/remoting/test_gateway_http.py checks the status codes in process; this adds the 1 GiB
sizes, the codings and the time and memory bounds.
"""

from __future__ import annotations

import functools
import struct
import zlib
from typing import Any

import pytest

from amfkit.remoting import http as gwhttp

from gateway_util import request

from .harness import Case, expect_ok, run

GIB = 1 << 30
#: Peak-RSS growth allowed while a bomb is refused: the 16 MiB limit, the compressed
#: input and zlib's buffers.
BOMB_KB = 96 * 1024
ECHO = request(3, [("EchoService.echo", "/1", ["hi"])])
AMF = {"content-type": "application/x-amf"}


def zeros_deflate(size: int, wbits: int) -> bytes:
    """`size` zero bytes compressed (gzip: wbits 31, zlib: 15, raw deflate: -15), built
    without compressing them all: after a full flush the compressor's output for each
    further MiB of zeros is the same bytes, so one is compressed and repeated."""
    mib = bytes(1 << 20)
    assert size % len(mib) == 0
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    first = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    assert c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH) == again
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty final block
    chunks = size // len(mib)
    body = first + again * (chunks - 1) + final
    if wbits == 31:
        crc = 0
        for _ in range(chunks):
            crc = zlib.crc32(mib, crc)
        body += struct.pack("<II", crc, size & 0xFFFFFFFF)
    elif wbits == 15:
        adler = 1
        for _ in range(chunks):
            adler = zlib.adler32(mib, adler)
        body += struct.pack(">I", adler)
    return body


@functools.cache
def bombs() -> dict[str, bytes]:
    gzip_bomb = zeros_deflate(GIB, 31)
    return {
        "gzip": gzip_bomb,
        "deflate": zeros_deflate(GIB, 15),
        "raw-deflate": zeros_deflate(GIB, -15),
        "gzip-of-gzip": gwhttp.gzip(gzip_bomb, 9),
        "truncated": gzip_bomb[: len(gzip_bomb) // 2],
        "after-a-good-member": gwhttp.gzip(ECHO) + gzip_bomb,
        # 800,000 empty members: 16 MB, each a separate gzip stream
        "many-members": gwhttp.gzip(b"") * 800_000,
        "many-members-then-packet": gwhttp.gzip(b"") * 100_000 + gwhttp.gzip(ECHO),
    }


CASES = {
    # name: (body, content-encoding, gateway options, expected status)
    "gzip-bomb": ("gzip", "gzip", {}, 413),
    "x-gzip-bomb": ("gzip", "x-gzip", {}, 413),
    "deflate-bomb": ("deflate", "deflate", {}, 413),
    "raw-deflate-bomb": ("raw-deflate", "deflate", {}, 413),
    "gzip-bomb-small-limit": ("gzip", "gzip", {"max_body_size": 1 << 20}, 413),
    # inflated once (1 MB of gzip), which is not an AMF packet
    "nested-gzip": ("gzip-of-gzip", "gzip", {}, 400),
    # two codings in one header are not supported
    "nested-gzip-declared-twice": ("gzip-of-gzip", "gzip, gzip", {}, 415),
    "truncated-bomb": ("truncated", "gzip", {}, 413),
    "bomb-after-a-good-member": ("after-a-good-member", "gzip", {}, 413),
    "many-empty-members": ("many-members", "gzip", {}, 400),
    "many-members-then-packet": ("many-members-then-packet", "gzip", {}, 400),
}
TRUNCATED = {
    "gzip-header-only": (b"\x1f\x8b\x08", "gzip"),
    "gzip-no-trailer": (gwhttp.gzip(ECHO)[:-8], "gzip"),
    "gzip-corrupt-crc": (gwhttp.gzip(ECHO)[:-8] + b"\x00" * 8, "gzip"),
    "deflate-cut": (zlib.compress(ECHO)[:-6], "deflate"),
    "not-compressed": (ECHO, "gzip"),
}


def cases() -> list[Case]:
    out = [Case("warm-up", "gateway", ECHO)]
    for name, (body, coding, options, _) in CASES.items():
        out.append(Case(name, "gateway", bombs()[body], {"headers": {**AMF, "content-encoding": coding}, "options": options}))
    for name, (body, coding) in TRUNCATED.items():
        out.append(Case(f"truncated/{name}", "gateway", body, {"headers": {**AMF, "content-encoding": coding}}))
    return out


@functools.cache
def results() -> dict[str, Any]:
    return run(cases())


def test_the_bombs_are_small_and_what_they_claim() -> None:
    """About 1 MB each; the builder's output inflates to exactly the zeros it claims
    (checked at 64 MiB: inflating the whole GiB here would cost seconds)."""
    b = bombs()
    assert all(len(b[k]) < 1_100_000 for k in ("gzip", "deflate", "raw-deflate"))
    size = 64 << 20
    for wbits in (31, 15, -15):
        assert zlib.decompress(zeros_deflate(size, wbits), wbits) == bytes(size)
    assert len(zeros_deflate(size, 31)) * 15 < len(b["gzip"]) < len(zeros_deflate(size, 31)) * 17


@pytest.mark.parametrize("name", CASES)
def test_compressed_bodies_are_refused_quickly(name: str) -> None:
    o = results()[name]
    value = expect_ok(o, rss_kb=BOMB_KB)
    assert value["status"] == CASES[name][3], o.describe()
    assert "Traceback" not in value["body"] and value["still_serving"], o.describe()


@pytest.mark.parametrize("name", TRUNCATED)
def test_truncated_and_corrupt_streams_are_a_400(name: str) -> None:
    o = results()[f"truncated/{name}"]
    value = expect_ok(o)
    assert value["status"] == 400 and value["still_serving"], o.describe()
