"""Capped decompression, and re-compression the way the input was compressed: zlib, raw
deflate and gzip.

    >>> import zlib
    >>> from amfkit import compression
    >>> packed = zlib.compress(b"gold=120;" * 100, 9)
    >>> compression.inflate(packed, "zlib", limit=1_000_000)[:9]
    b'gold=120;'
    >>> content, packing = compression.unpack(packed, "zlib", limit=1_000_000)
    >>> packing.describe()
    'zlib, level 9 (reproduced)'
    >>> packing.pack(content) == packed
    True
    >>> zlib.decompress(packing.pack(b"gold=9999;")) == b"gold=9999;"
    True

- `inflate(data, format, limit)`: the content of a zlib, raw deflate or gzip stream
  (gzip: every member), never more than `limit` bytes of it; bytes after a zlib or
  deflate stream are ignored. Raises `CompressionError` (a `ValueError`) whose `kind`
  is `"corrupt"`, `"truncated"`, `"too-large"` or `"members"`.
- `unpack(data, format, limit)`: the same content and a `Packing`, which says how the
  stream was made (the level, read from the zlib header's level field or gzip's XFL
  byte and confirmed by compressing the content again; the gzip header; the bytes after
  the stream) and writes new content the same way: `Packing.pack(content)`.
- `zlib_level_hint(data)`: the level class a zlib header declares.

Every inflation in amfkit goes through here (request bodies, compressed members of
saves), so every one has an output cap.
"""

from __future__ import annotations

import zlib
from typing import Any, Union

__all__ = [
    "FORMATS",
    "MAX_MEMBERS",
    "CompressionError",
    "Packing",
    "inflate",
    "unpack",
    "zlib_level_hint",
]

#: The stream formats: zlib (RFC 1950), raw deflate (RFC 1951) and gzip (RFC 1952).
FORMATS: tuple[str, ...] = ("zlib", "deflate", "gzip")
#: Most gzip members one input may hold (writers write one). Each member beyond the first
#: costs a copy of the rest of the input (zlib's `unused_data`): the cap keeps an input
#: of many tiny members from taking minutes.
MAX_MEMBERS = 16
_WBITS = {"zlib": 15, "deflate": -15, "gzip": 31}
_Buffer = Union[bytes, bytearray, memoryview]
# How much of a stream compressing the content again must reproduce before its settings
# are taken as the writer's (the rest of a long stream is not compressed twice).
_CONFIRM = 64 * 1024
_STEP = 64 * 1024


class CompressionError(ValueError):
    """A stream that cannot be inflated: `kind` is `"corrupt"`, `"truncated"`,
    `"too-large"` (it inflates past the limit) or `"members"` (a gzip input of more than
    `MAX_MEMBERS` members); `format` is the stream's format; `detail` is zlib's own
    words for a corrupt stream ("" otherwise)."""

    def __init__(self, kind: str, format: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.format = format
        self.detail = detail


def inflate(data: _Buffer, format: str, limit: int, *, max_members: int = MAX_MEMBERS) -> bytes:
    """The content of `data`, a `format` stream ("zlib", "deflate" or "gzip"), at most
    `limit` bytes of it. A gzip input may be several members, read as one stream (up to
    `max_members`); bytes after a zlib or deflate stream are ignored.

    Raises CompressionError."""
    content, _, _ = _inflate(data, _check_format(format), limit, max_members, strict_members=True)
    return content


def unpack(data: _Buffer, format: str, limit: int, *, max_members: int = MAX_MEMBERS) -> tuple[bytes, Packing]:
    """The content of `data` (as `inflate` reads it, at most `limit` bytes) and the
    `Packing` that writes content back the way `data` was written. Bytes after the
    stream (after the last gzip member) are kept by the Packing, not refused.

    Raises CompressionError."""
    fmt = _check_format(format)
    data = bytes(data)
    content, end, members = _inflate(data, fmt, limit, max_members, strict_members=False)
    return content, Packing._detect(fmt, data, content, end, members)


def zlib_level_hint(data: _Buffer) -> int | None:
    """The compression level class a zlib header declares (its FLEVEL field): 1 (the
    fastest: zlib's levels 0 and 1, Huffman-only and RLE), 5 (levels 2 to 5), 6 (the
    default) or 9 (levels 7 to 9); None when `data` does not start with a zlib header."""
    if len(data) < 2:
        return None
    cmf, flg = data[0], data[1]
    if cmf & 0x0F != 8 or cmf >> 4 > 7 or (cmf << 8 | flg) % 31:
        return None
    return (1, 5, 6, 9)[flg >> 6]


class Packing:
    """How a compressed stream was written, and `pack(content)` to write new content the
    same way: the same format, level, window and memory settings, the gzip header as it
    was (its name, time and flags), and the bytes that followed the stream.

    `level` is the level `pack` uses; `reproduced` says that compressing the content
    again with these settings gave the stream's own deflate data (the first 64 KiB of
    it, for a longer stream), so the writer used them; otherwise they come from the
    header's hint (zlib's FLEVEL, gzip's XFL) or zlib's default. The zlib and gzip
    headers are written back as they were, even when they claim another level than the
    one used. Content equal to what was read packs to the original bytes, whatever the
    settings."""

    __slots__ = ("format", "level", "wbits", "mem_level", "strategy", "reproduced", "header", "trailing", "members", "_content", "_data")

    def __init__(
        self,
        format: str,
        level: int,
        *,
        wbits: int,
        mem_level: int = 8,
        strategy: int = zlib.Z_DEFAULT_STRATEGY,
        reproduced: bool = False,
        header: bytes = b"",
        trailing: bytes = b"",
        members: int = 1,
        content: bytes | None = None,
        data: bytes | None = None,
    ) -> None:
        self.format = format
        self.level = level
        self.wbits = wbits
        self.mem_level = mem_level
        self.strategy = strategy
        self.reproduced = reproduced
        self.header = header
        self.trailing = trailing
        self.members = members
        self._content = content
        self._data = data

    def __repr__(self) -> str:
        return f"<Packing {self.describe()}>"

    def describe(self) -> str:
        """One line: format, level, and whether the level was reproduced."""
        how = "reproduced" if self.reproduced else "from the header" if self.format != "deflate" else "assumed"
        text = f"{self.format}, level {self.level} ({how})"
        if self.members > 1:
            text += f", {self.members} members written back as one"
        if self.trailing:
            text += f", {len(self.trailing)} bytes after the stream kept"
        return text

    def pack(self, content: _Buffer) -> bytes:
        """`content` compressed the way the original stream was, followed by the bytes
        that followed it."""
        content = bytes(content)
        if self._data is not None and content == self._content:
            return self._data
        if self.format == "gzip":
            body = _compress(content, self.level, -15, self.mem_level, self.strategy)
            size = (len(content) & 0xFFFFFFFF).to_bytes(4, "little")
            crc = zlib.crc32(content).to_bytes(4, "little")
            return self.header + body + crc + size + self.trailing
        if self.format == "zlib" and self.header:
            body = _compress(content, self.level, -self.wbits, self.mem_level, self.strategy)
            return self.header + body + zlib.adler32(content).to_bytes(4, "big") + self.trailing
        return _compress(content, self.level, self.wbits, self.mem_level, self.strategy) + self.trailing

    @classmethod
    def _detect(cls, fmt: str, data: bytes, content: bytes, end: int, members: int) -> Packing:
        trailing = data[end:]
        common: dict[str, Any] = {"trailing": trailing, "content": content, "data": data}
        if fmt == "zlib":
            # The two header bytes are kept as they are (a writer may claim a level it
            # did not use); the deflate body between them and the Adler-32 is compared.
            hint = zlib_level_hint(data) or 6
            wbits = max((data[0] >> 4) + 8, 9)
            body = data[2 : end - 4]
            found = _find(content, body, hint, wbits)
            if found is not None:
                level, mem, strategy = found
                return cls(fmt, level, wbits=wbits, mem_level=mem, strategy=strategy, reproduced=True,
                           header=data[:2], **common)
            return cls(fmt, hint, wbits=wbits, header=data[:2], **common)
        if fmt == "deflate":
            found = _find(content, data[:end], 6, 15)
            if found is not None:
                level, mem, strategy = found
                return cls(fmt, level, wbits=-15, mem_level=mem, strategy=strategy, reproduced=True, **common)
            return cls(fmt, 6, wbits=-15, **common)
        header_end = _gzip_header_end(data)
        xfl = data[8]
        hint = 9 if xfl == 2 else 1 if xfl == 4 else 6
        if members == 1:
            # The first member's deflate body ends 8 bytes (CRC32, ISIZE) before `end`.
            found = _find(content, data[header_end : end - 8], hint, 15)
            if found is not None:
                level, mem, strategy = found
                return cls(fmt, level, wbits=31, mem_level=mem, strategy=strategy, reproduced=True,
                           header=data[:header_end], **common)
        return cls(fmt, hint, wbits=31, header=data[:header_end], members=members, **common)


def _check_format(format: str) -> str:
    if format not in _WBITS:
        raise ValueError(f"unknown compression format {format!r} (zlib, deflate and gzip are known)")
    return format


def _inflate(data: _Buffer, fmt: str, limit: int, max_members: int, *, strict_members: bool) -> tuple[bytes, int, int]:
    """(content, end of the stream (of the last gzip member), members read)."""
    wbits = _WBITS[fmt]
    view = memoryview(data)
    chunks: list[bytes] = []
    size = 0
    pos = 0
    members = 0
    while True:
        d = zlib.decompressobj(wbits)
        try:
            out = d.decompress(view[pos:], limit + 1 - size)
        except zlib.error as e:
            raise CompressionError("corrupt", fmt, f"corrupt {fmt} data ({e})", str(e)) from None
        members += 1
        chunks.append(out)
        size += len(out)
        if size > limit or d.unconsumed_tail:
            raise CompressionError("too-large", fmt, f"{fmt} data inflates to more than {limit} bytes")
        if not d.eof:
            raise CompressionError("truncated", fmt, f"truncated {fmt} data (the stream ends after {size} bytes of content)")
        pos = len(view) - len(d.unused_data)
        if fmt != "gzip" or pos == len(view):
            break
        if not strict_members and bytes(view[pos : pos + 2]) != b"\x1f\x8b":
            break  # bytes after the last member, kept by unpack's Packing
        if members >= max_members:
            raise CompressionError("members", fmt, f"gzip data of more than {max_members} members")
    content = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return content, pos, members


def _candidates(hint: int) -> list[tuple[int, int, int]]:
    """(level, memLevel, strategy) settings a writer may have used, the likeliest first:
    the levels of the header's class (zlib's FLEVEL, gzip's XFL), then the others, with
    zlib's default memLevel, then memLevel 9, then the Huffman-only and RLE strategies."""
    default = zlib.Z_DEFAULT_STRATEGY
    first = {1: (1, 0), 5: (5, 4, 3, 2), 6: (6,), 9: (9, 8, 7)}.get(hint, (hint,))
    levels = [*first, *(x for x in (6, 9, 1, 5, 4, 3, 2, 7, 8, 0) if x not in first)]
    out = [(level, mem, default) for mem in (8, 9) for level in levels]
    return out + [(6, 8, zlib.Z_HUFFMAN_ONLY), (6, 8, zlib.Z_RLE)]


def _find(content: bytes, body: bytes, hint: int, window: int) -> tuple[int, int, int] | None:
    """The first candidate settings whose raw deflate of `content` is `body`."""
    for level, mem, strategy in _candidates(hint):
        if _reproduces(content, body, level, -window, mem, strategy):
            return level, mem, strategy
    return None


def _compress(content: bytes, level: int, wbits: int, mem_level: int, strategy: int) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy)
    return c.compress(content) + c.flush()


def _reproduces(content: bytes, stream: bytes, level: int, wbits: int, mem_level: int, strategy: int) -> bool:
    """Whether compressing `content` with these settings gives `stream` (its first
    `_CONFIRM` bytes, for a longer one: a wrong guess differs within the first block)."""
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy)
    view = memoryview(content)
    done = 0
    for i in range(0, len(content), _STEP):
        out = c.compress(view[i : i + _STEP])
        if out:
            if stream[done : done + len(out)] != out:
                return False
            done += len(out)
            if done >= _CONFIRM:
                return True
    out = c.flush()
    return done + len(out) == len(stream) and stream[done:] == out


def _gzip_header_end(data: bytes) -> int:
    """Where a gzip member's header ends (RFC 1952 section 2.3: ten fixed bytes, then the
    optional extra field, file name, comment and header CRC that FLG announces). The
    member was inflated already, so the header is whole."""
    flg = data[3]
    pos = 10
    if flg & 4:  # FEXTRA
        pos += 2 + int.from_bytes(data[pos : pos + 2], "little")
    if flg & 8:  # FNAME, zero-terminated
        pos = data.index(0, pos) + 1
    if flg & 16:  # FCOMMENT, zero-terminated
        pos = data.index(0, pos) + 1
    if flg & 2:  # FHCRC
        pos += 2
    return pos
