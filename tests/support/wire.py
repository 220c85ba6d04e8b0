"""Byte builders for tests that write AMF by hand: AMF3 U29 integers, inline strings and
object starts, AMF0 string bodies, and the Flex collection aliases. Used by the hostile
suite (tests/hostile/) and the gateway abuse run (abuse.py)."""

from __future__ import annotations


def u29(n: int) -> bytes:
    """An AMF3 variable-length unsigned 29-bit integer."""
    assert 0 <= n < 1 << 29
    if n < 0x80:
        return bytes([n])
    if n < 0x4000:
        return bytes([(n >> 7) | 0x80, n & 0x7F])
    if n < 0x200000:
        return bytes([(n >> 14) | 0x80, ((n >> 7) & 0x7F) | 0x80, n & 0x7F])
    return bytes([(n >> 22) | 0x80, ((n >> 15) & 0x7F) | 0x80, ((n >> 8) & 0x7F) | 0x80, n & 0xFF])


def s3(text: str | bytes) -> bytes:
    """An inline AMF3 string (length header, then the bytes)."""
    raw = text.encode() if isinstance(text, str) else text
    return u29((len(raw) << 1) | 1) + raw


def utf(text: str | bytes) -> bytes:
    """An AMF0 u16-length string body."""
    raw = text.encode() if isinstance(text, str) else text
    return len(raw).to_bytes(2, "big") + raw


def typed3(alias: str, *, externalizable: bool = False, dynamic: bool = True, sealed: tuple[str, ...] = ()) -> bytes:
    """The start of an AMF3 object with inline traits (members follow)."""
    h = (len(sealed) << 4) | (0b0111 if externalizable else (0b1011 if dynamic else 0b0011))
    return b"\x0a" + u29(h) + s3(alias) + b"".join(s3(n) for n in sealed)


ARRAY_COLLECTION = "flex.messaging.io.ArrayCollection"
OBJECT_PROXY = "flex.messaging.io.ObjectProxy"
