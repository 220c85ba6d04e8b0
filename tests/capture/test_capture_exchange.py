"""Content codings of captured bodies (`exchange.decoded_body`): gzip, zlib or raw
deflate for "deflate", a list of codings undone last first, unknown codings and
corrupt data named, and the cap on what a body inflates to."""

from __future__ import annotations

import gzip
import zlib

from amfkit.capture.exchange import decoded_body

BODY = b"\x00\x03\x00\x00\x00\x01" + b"gold=120;" * 50


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def test_codings_are_undone() -> None:
    notes: list[str] = []
    assert decoded_body(gzip.compress(BODY), "gzip", 10_000, "body", notes) == BODY
    assert decoded_body(gzip.compress(BODY), "X-Gzip", 10_000, "body", notes) == BODY
    assert decoded_body(zlib.compress(BODY), "deflate", 10_000, "body", notes) == BODY
    assert decoded_body(_raw_deflate(BODY), "deflate", 10_000, "body", notes) == BODY  # raw deflate, as some servers send
    assert decoded_body(gzip.compress(zlib.compress(BODY)), "deflate, gzip", 10_000, "body", notes) == BODY
    assert decoded_body(BODY, "identity", 10_000, "body", notes) == BODY
    assert notes == []


def test_what_cannot_be_undone_is_a_note() -> None:
    notes: list[str] = []
    assert decoded_body(BODY, "br", 10_000, "response body", notes) is None
    assert decoded_body(b"\x1f\x8b not gzip at all", "gzip", 10_000, "response body", notes) is None
    assert decoded_body(gzip.compress(b"\0" * 1_000_000), "gzip", 10_000, "response body", notes) is None
    assert decoded_body(b"x" * 10_001, None, 10_000, "request body", notes) is None
    assert notes[0] == "response body: content coding 'br' is not read (gzip and deflate are)"
    assert notes[1].startswith("response body: corrupt gzip data (")
    assert notes[2] == "response body: gzip inflates to more than 10000 bytes"
    assert notes[3] == "request body of 10001 bytes is over the 10000-byte limit"
