"""The demo's images: ten files of the sizes the file storage article used (nine from
891 to 55,242 bytes, the largest repeated to make ten; docs/benchmarks.md), made here as valid PNG pictures
(a colour gradient each, stored uncompressed and padded with a comment chunk to the exact
size) so that the demo can serve them and `amfkit bench assets` can fetch them."""

from __future__ import annotations

import struct
import zlib

__all__ = ["FILES", "SIZES", "files", "png"]

#: The article's smallest and largest sizes; the seven between spread evenly on a log scale.
SIZES = (891, 1_640, 3_021, 5_563, 10_245, 16_871, 25_122, 37_410, 55_242, 55_242)
#: The names the demo and the benchmark use.
FILES = tuple(f"images/{i:02d}.png" for i in range(1, len(SIZES) + 1))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(size: int, seed: int = 0) -> bytes:
    """A valid RGB PNG of exactly `size` bytes (at least 120)."""
    if size < 120:
        raise ValueError("a PNG made here is at least 120 bytes")
    side = 1
    while _estimate(side + 1) + 20 <= size:  # the largest square whose raw pixels fit
        side += 1
    body = _image(side, seed)
    pad = size - len(body) - 12  # a tEXt chunk: 12 bytes of frame, then keyword NUL text
    text = b"Comment\x00" + b"amfkit demo image ".ljust(max(0, pad - 8), b".")[: max(0, pad - 8)]
    out = body[:-12] + _chunk(b"tEXt", text) + body[-12:]
    assert len(out) == size, (len(out), size)
    return out


def _estimate(side: int) -> int:
    """An upper bound on `len(_image(side))` (stored deflate blocks of 16 KiB or more)."""
    raw = side * (3 * side + 1)
    return 8 + 25 + 12 + raw + 6 + 5 * (raw // 16383 + 1) + 12


def _image(side: int, seed: int) -> bytes:
    rows = bytearray()
    for y in range(side):
        rows.append(0)  # filter: none
        for x in range(side):
            rows += bytes(((x * 255 // side + seed * 40) & 255, (y * 255 // side) & 255, ((x + y + seed * 17) * 3) & 255))
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(bytes(rows), 0)) + _chunk(b"IEND", b"")


def files() -> list[tuple[str, bytes]]:
    """(name, PNG bytes) for the ten files; the two largest have the same bytes, as the
    article repeated its largest image."""
    made: dict[int, bytes] = {}
    out = []
    for i, (name, size) in enumerate(zip(FILES, SIZES)):
        if size not in made:
            made[size] = png(size, seed=i)
        out.append((name, made[size]))
    return out
