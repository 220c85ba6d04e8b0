"""`amfkit.compression`: capped inflation of zlib, raw deflate and gzip; the level a
stream was made with, found again; and new content packed the way the old was."""

from __future__ import annotations

import gzip
import io
import os
import random
import zlib

import pytest

from amfkit import compression
from amfkit.compression import CompressionError, Packing, inflate, unpack, zlib_level_hint

CONTENT = b"".join(b"player %d gold %d; " % (i, i * 7) for i in range(3000))


def deflate_raw(data: bytes, level: int) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def gzip_with(data: bytes, level: int, **kw) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=level, mtime=kw.get("mtime", 1234567890), filename=kw.get("filename", "")) as f:
        f.write(data)
    return out.getvalue()


@pytest.mark.parametrize("fmt, packed", [
    ("zlib", zlib.compress(CONTENT)),
    ("deflate", deflate_raw(CONTENT, 6)),
    ("gzip", gzip.compress(CONTENT)),
])
def test_inflate_each_format(fmt, packed):
    assert inflate(packed, fmt, limit=len(CONTENT)) == CONTENT


def test_the_cap_is_exact_and_stops_early():
    packed = zlib.compress(b"\0" * 50_000_000, 9)  # 49 KB that claim 50 MB
    with pytest.raises(CompressionError) as info:
        inflate(packed, "zlib", limit=1_000_000)
    assert info.value.kind == "too-large" and "more than 1000000 bytes" in str(info.value)
    small = zlib.compress(b"x" * 100)
    assert inflate(small, "zlib", limit=100) == b"x" * 100
    with pytest.raises(CompressionError, match="more than 99 bytes"):
        inflate(small, "zlib", limit=99)


def test_the_cap_spans_gzip_members():
    two = gzip.compress(b"a" * 60) + gzip.compress(b"b" * 60)
    assert inflate(two, "gzip", limit=120) == b"a" * 60 + b"b" * 60
    with pytest.raises(CompressionError) as info:
        inflate(two, "gzip", limit=100)
    assert info.value.kind == "too-large"
    many = gzip.compress(b"") * 17
    with pytest.raises(CompressionError) as info:
        inflate(many, "gzip", limit=100)
    assert info.value.kind == "members" and "more than 16 members" in str(info.value)


@pytest.mark.parametrize("fmt, packed, kind", [
    ("zlib", zlib.compress(CONTENT)[:-10], "truncated"),
    ("gzip", gzip.compress(CONTENT)[:40], "truncated"),
    ("zlib", b"\x78\x9c" + os.urandom(64), "corrupt"),
    ("zlib", b"not zlib at all", "corrupt"),
    ("gzip", gzip.compress(CONTENT) + b"trailing garbage", "corrupt"),
    ("deflate", b"\xff" * 20, "corrupt"),
])
def test_bad_streams_name_what_is_wrong(fmt, packed, kind):
    with pytest.raises(CompressionError) as info:
        inflate(packed, fmt, limit=10_000_000)
    assert info.value.kind == kind and info.value.format == fmt
    assert isinstance(info.value, ValueError)


def test_an_unknown_format_is_a_value_error():
    with pytest.raises(ValueError, match="unknown compression format 'lzma'"):
        inflate(b"", "lzma", limit=1)


@pytest.mark.parametrize("level, hint", [(0, 1), (1, 1), (2, 5), (5, 5), (6, 6), (7, 9), (9, 9)])
def test_the_zlib_header_hints_at_the_level(level, hint):
    assert zlib_level_hint(zlib.compress(CONTENT, level)) == hint


def test_no_hint_without_a_zlib_header():
    assert zlib_level_hint(b"") is None
    assert zlib_level_hint(gzip.compress(b"x")) is None
    assert zlib_level_hint(b"\x78\x00") is None  # the check bits do not add up


@pytest.mark.parametrize("level", range(10))
def test_unpack_finds_the_zlib_level_and_packs_the_same_way(level):
    packed = zlib.compress(CONTENT, level)
    content, packing = unpack(packed, "zlib", limit=len(CONTENT))
    assert content == CONTENT and packing.reproduced
    assert zlib.compress(CONTENT, packing.level) == packed  # the level found makes the same bytes
    edited = CONTENT.replace(b"gold 7;", b"gold 99999;")
    assert packing.pack(edited) == zlib.compress(edited, packing.level)
    assert packing.pack(edited)[:2] == packed[:2]  # the header says the same level


def test_a_zlib_stream_with_a_smaller_window_and_mem_level_is_packed_alike():
    words = [b"gold", b"level", b"hp", b"name", b"Ada", b"sword", b"x", b"y"]
    rnd = random.Random(7)
    text = b" ".join(rnd.choice(words) + b"%d" % rnd.randrange(1000) for _ in range(60_000))
    c = zlib.compressobj(9, zlib.DEFLATED, 12, 9)
    packed = c.compress(text) + c.flush()
    content, packing = unpack(packed, "zlib", limit=len(text))
    assert packing.reproduced and (packing.level, packing.wbits, packing.mem_level) == (9, 12, 9)
    new = text[::-1]
    c = zlib.compressobj(9, zlib.DEFLATED, 12, 9)
    assert packing.pack(new) == c.compress(new) + c.flush()


@pytest.mark.parametrize("level", [1, 4, 6, 9])
def test_unpack_finds_a_raw_deflate_level(level):
    packed = deflate_raw(CONTENT, level)
    content, packing = unpack(packed, "deflate", limit=len(CONTENT))
    assert content == CONTENT and packing.reproduced
    assert deflate_raw(CONTENT, packing.level) == packed


def test_gzip_keeps_its_header_and_finds_its_level():
    packed = gzip_with(CONTENT, 9, filename="save.bin", mtime=1111111111)
    content, packing = unpack(packed, "gzip", limit=len(CONTENT))
    assert content == CONTENT and packing.reproduced and packing.level == 9
    edited = CONTENT[:100]
    again = packing.pack(edited)
    assert again == gzip_with(edited, 9, filename="save.bin", mtime=1111111111)  # name, time, XFL kept
    assert gzip.decompress(again) == edited


def test_an_unknown_writer_gets_the_level_its_header_hints():
    """Settings zlib cannot reproduce (here Z_FILTERED) fall back to the header's hint:
    the header bytes stay the same, the content is right."""
    c = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_FILTERED)
    packed = c.compress(CONTENT) + c.flush()
    _, packing = unpack(packed, "zlib", limit=len(CONTENT))
    assert not packing.reproduced and packing.level == 9
    again = packing.pack(b"new")
    assert again[:2] == packed[:2] and zlib.decompress(again) == b"new"
    assert packing.describe() == "zlib, level 9 (from the header)"


def test_unchanged_content_packs_to_the_original_bytes_whatever_the_settings():
    c = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_FILTERED)
    packed = c.compress(CONTENT) + c.flush()
    content, packing = unpack(packed, "zlib", limit=len(CONTENT))
    assert packing.pack(content) is packed


def test_bytes_after_the_stream_are_kept():
    packed = zlib.compress(CONTENT, 9) + b"\x00\x01TAIL"
    content, packing = unpack(packed, "zlib", limit=len(CONTENT))
    assert packing.trailing == b"\x00\x01TAIL"
    assert packing.pack(b"x").endswith(b"\x00\x01TAIL")
    assert "6 bytes after the stream kept" in packing.describe()
    gz = gzip.compress(b"abc") + b"\x00\x00"
    content, packing = unpack(gz, "gzip", limit=10)
    assert content == b"abc" and packing.trailing == b"\x00\x00"


def test_several_gzip_members_pack_as_one():
    two = gzip_with(b"a" * 10, 6) + gzip_with(b"b" * 10, 6)
    content, packing = unpack(two, "gzip", limit=100)
    assert content == b"a" * 10 + b"b" * 10 and packing.members == 2
    assert gzip.decompress(packing.pack(b"c" * 5)) == b"c" * 5
    assert "2 members written back as one" in packing.describe()


def test_checking_a_long_stream_compresses_only_its_start(monkeypatch):
    """The level of a long stream is confirmed on its first 64 KiB of output, not by
    compressing all of it again."""
    big = os.urandom(16) * 10 + b"".join(b"%08d" % i for i in range(400_000))  # 3.2 MB
    packed = zlib.compress(big, 6)
    calls = []
    real = compression._reproduces

    def spy(content, stream, *a):
        calls.append(a)
        return real(content, stream, *a)

    monkeypatch.setattr(compression, "_reproduces", spy)
    fed = []
    real_obj = zlib.compressobj

    class Counting:
        def __init__(self, *a):
            self.c = real_obj(*a)

        def compress(self, data):
            fed.append(len(data))
            return self.c.compress(data)

        def flush(self):
            return self.c.flush()

    monkeypatch.setattr(compression.zlib, "compressobj", Counting)
    _, packing = unpack(packed, "zlib", limit=len(big))
    assert packing.reproduced and packing.level == 6 and len(calls) == 1
    assert sum(fed) < len(big) // 2


def test_http_inflate_delegates_with_its_status_codes():
    from amfkit.remoting.http import HTTPError
    from amfkit.remoting.http import inflate as http_inflate

    assert http_inflate(deflate_raw(b"abc", 6), "deflate", 10) == b"abc"  # raw deflate accepted too
    assert http_inflate(zlib.compress(b"abc"), "deflate", 10) == b"abc"
    for body, coding, status, text in [
        (gzip.compress(b"x" * 100), "gzip", 413, "request body inflates to more than 10 bytes"),
        (gzip.compress(b"x")[:-3], "gzip", 400, "truncated gzip request body"),
        (b"junk", "x-gzip", 400, "corrupt x-gzip request body"),
        (gzip.compress(b"") * 17, "gzip", 400, "gzip request body of more than 16 members"),
        (b"", "br", 415, "unsupported content encoding 'br'"),
    ]:
        with pytest.raises(HTTPError) as info:
            http_inflate(body, coding, 10)
        assert info.value.status == status and text in str(info.value), info.value


def test_a_packing_built_by_hand_writes_gzip():
    p = Packing("gzip", 1, wbits=31, header=gzip_with(b"", 1)[:10])
    assert gzip.decompress(p.pack(b"hello")) == b"hello"


def test_a_header_that_claims_another_level_is_kept_and_the_real_level_used():
    """Py3AMF's ByteArray.compress() writes zlib's level-6 stream with the second header
    byte set to 0xda (level 9's): the header is written back as it was, the body at the
    level that made it."""
    real = zlib.compress(CONTENT, 6)
    claimed = real[:1] + b"\xda" + real[2:]
    content, packing = unpack(claimed, "zlib", limit=len(CONTENT))
    assert content == CONTENT and packing.reproduced and packing.level == 6
    new = CONTENT[::-1]
    out = packing.pack(new)
    assert out[:2] == b"\x78\xda" and out[2:] == zlib.compress(new, 6)[2:]
    assert zlib.decompress(out) == new
