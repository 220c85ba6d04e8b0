"""Data nested inside a value: a ByteArray of zlib, raw deflate or gzip data, base64 in a
string, AMF written into a ByteArray. `open_layer(value, codec)` gives what the value
holds and the `Layer` that writes an edited content back the way the value was written.

    >>> import zlib, amfkit
    >>> from amfkit import nested
    >>> sdat = zlib.compress(amfkit.amf3.encode({"gold": 120}), 9)
    >>> inflated, zlayer = nested.open_layer(sdat, "zlib")
    >>> player, alayer = nested.open_layer(inflated, "amf3")
    >>> player
    {'gold': 120}
    >>> zlayer.encode(alayer.encode(player)) is sdat       # unchanged: the same bytes
    True
    >>> player["gold"] = 9999
    >>> amfkit.amf3.decode(zlib.decompress(zlayer.encode(alayer.encode(player))))
    {'gold': 9999}

The codecs (`amfkit.valuepath.CODECS`), each after a ByteArray (`bytes`) or a string:

- `zlib`, `deflate`, `gzip`: a ByteArray's bytes inflated, capped at `max_size`; written
  back at the level the stream was made with (`amfkit.compression.Packing`).
- `base64`: a string's (or an ASCII ByteArray's) base64 decoded; written back with the
  same alphabet, padding and line length, as a string or a ByteArray as it was.
- `amf3`, `amf0`: the AMF value a ByteArray holds, read losslessly (as `amfkit.sol.loads`
  with `lossless=True` reads a .sol file) under the decoders' limits; bytes holding
  several values (`writeObject` called more than once) are read as a list of them.
  Written back with the encoding choices they were read with.

Content equal to what was read is written back as the original value itself.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from . import _amfkit, compression
from ._text import MAX_SHOWN, clip
from .valuepath import CODECS

__all__ = ["CODECS", "Layer", "LayerError", "open_layer"]

_Bytes = (bytes, bytearray, memoryview)
_B64_SPACE = re.compile(r"\s+")


class LayerError(ValueError):
    """A value that does not hold what its step says (a string given to `|zlib`, bytes
    that are not zlib data, base64 or AMF), or content that cannot be written back."""


class Layer:
    """How a value's nested data was written: `encode(content)` writes new content the
    same way and returns the value to put where the original was."""

    codec: str

    def encode(self, content: Any) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        """One line: what the layer is and how it writes back."""
        raise NotImplementedError


def open_layer(
    value: Any,
    codec: str,
    *,
    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
    max_size: int = _amfkit.DEFAULT_MAX_SIZE,
    tz_aware: bool = False,
) -> tuple[Any, Layer]:
    """(what `value` holds, decoded by `codec`; the `Layer` that writes it back). The
    limits are the AMF decoders' (`max_size` also caps inflation). Raises LayerError."""
    if codec in compression.FORMATS:
        return _Compressed.open(value, codec, max_size)
    if codec == "base64":
        return _Base64.open(value)
    if codec in ("amf3", "amf0"):
        return _Amf.open(value, 3 if codec == "amf3" else 0, max_depth, max_objects, max_size, tz_aware)
    raise LayerError(f"unknown step |{clip(codec, MAX_SHOWN)} (known: {', '.join('|' + c for c in CODECS)})")


def _need_bytes(value: Any, codec: str) -> bytes:
    if isinstance(value, _Bytes):
        return bytes(value)
    if isinstance(value, str):
        hint = "; base64 text takes |base64 first" if codec != "base64" else ""
        raise LayerError(f"|{codec} reads a ByteArray, not a string{hint}")
    name = type(value).__name__ if value is not None else "null"
    raise LayerError(f"|{codec} reads a ByteArray, not {'an' if name[:1] in 'aeiou' else 'a'} {name}")


def _content_bytes(content: Any, codec: str) -> bytes:
    if isinstance(content, _Bytes):
        return bytes(content)
    raise LayerError(f"the content of |{codec} must be bytes (a ByteArray), not {type(content).__name__}")


class _Compressed(Layer):
    def __init__(self, codec: str, packing: compression.Packing) -> None:
        self.codec = codec
        self.packing = packing

    @classmethod
    def open(cls, value: Any, codec: str, limit: int) -> tuple[bytes, Layer]:
        data = _need_bytes(value, codec)
        try:
            content, packing = compression.unpack(data, codec, limit)
        except compression.CompressionError as e:
            raise LayerError(str(e)) from None
        return content, cls(codec, packing)

    def encode(self, content: Any) -> bytes:
        return self.packing.pack(_content_bytes(content, self.codec))

    def describe(self) -> str:
        return self.packing.describe()


class _Base64(Layer):
    codec = "base64"

    def __init__(self, original: Any, content: bytes, *, urlsafe: bool, padded: bool, line: int, newline: str, final_newline: bool) -> None:
        self.original = original
        self.content = content
        self.urlsafe = urlsafe
        self.padded = padded
        self.line = line
        self.newline = newline
        self.final_newline = final_newline

    @classmethod
    def open(cls, value: Any) -> tuple[bytes, Layer]:
        if isinstance(value, str):
            text = value
        elif isinstance(value, _Bytes):
            try:
                text = bytes(value).decode("ascii")
            except UnicodeDecodeError:
                raise LayerError("|base64 reads base64 text, and this ByteArray is not ASCII") from None
        else:
            _need_bytes(value, "base64")
            raise AssertionError("unreachable")
        packed = _B64_SPACE.sub("", text)
        urlsafe = "-" in packed or "_" in packed
        if urlsafe and ("+" in packed or "/" in packed):
            raise LayerError("the base64 text mixes the standard alphabet (+/) and the URL-safe one (-_)")
        padded = packed.endswith("=") or len(packed) % 4 == 0
        try:
            content = base64.b64decode(packed + "=" * (-len(packed) % 4), altchars=b"-_" if urlsafe else None, validate=True)
        except (binascii.Error, ValueError) as e:
            raise LayerError(f"not base64 text ({e})") from None
        lines = text.strip().splitlines()
        line = len(lines[0]) if len(lines) > 1 else 0
        newline = "\r\n" if "\r\n" in text else "\n"
        layer = cls(value, content, urlsafe=urlsafe, padded=padded, line=line, newline=newline,
                    final_newline=text.endswith("\n"))
        return content, layer

    def encode(self, content: Any) -> Any:
        data = _content_bytes(content, "base64")
        if data == self.content:
            return self.original
        text = base64.b64encode(data).decode("ascii")
        if self.urlsafe:
            text = text.replace("+", "-").replace("/", "_")
        if not self.padded:
            text = text.rstrip("=")
        if self.line:
            text = self.newline.join(text[i : i + self.line] for i in range(0, len(text), self.line))
        if self.final_newline:
            text += self.newline
        return text if isinstance(self.original, str) else text.encode("ascii")

    def describe(self) -> str:
        how = "URL-safe" if self.urlsafe else "standard"
        pad = "padded" if self.padded else "unpadded"
        wrap = f", lines of {self.line}" if self.line else ""
        kind = "a string" if isinstance(self.original, str) else "a ByteArray"
        return f"base64 ({how}, {pad}{wrap}) in {kind}"


class _Amf(Layer):
    def __init__(self, original: bytes, version: int, layout: _amfkit.Layout, inline_strings: bool, stream: bool) -> None:
        self.codec = f"amf{version}"
        self.original = original
        self.version = version
        self.layout = layout
        self.inline_strings = inline_strings
        self.stream = stream

    @classmethod
    def open(cls, value: Any, version: int, max_depth: int, max_objects: int, max_size: int, tz_aware: bool) -> tuple[Any, Layer]:
        codec = f"amf{version}"
        data = _need_bytes(value, codec)
        if not data:
            raise LayerError(f"|{codec} reads AMF, and the ByteArray is empty")
        try:
            content, layout, inline, stream = _amfkit.decode_values(
                data, version, max_depth=max_depth, max_objects=max_objects, max_size=max_size, tz_aware=tz_aware
            )
        except _amfkit.DecodeError as e:
            raise LayerError(str(e)) from None
        original = value if isinstance(value, bytes) else data
        return content, cls(original, version, layout, inline, stream)

    def encode(self, content: Any) -> bytes:
        if self.stream and not isinstance(content, list):
            raise LayerError(f"|{self.codec} holds several values: its content is a list of them, not {type(content).__name__}")
        try:
            data = _amfkit.encode_values(
                content, self.version, stream=self.stream, layout=self.layout, inline_strings=self.inline_strings
            )
        except _amfkit.EncodeError as e:
            raise LayerError(str(e)) from None
        return self.original if data == self.original else data

    def describe(self) -> str:
        what = "a stream of values" if self.stream else "one value"
        return f"AMF{self.version}, {what}, written back losslessly"
