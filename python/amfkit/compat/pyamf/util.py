"""`pyamf.util`: `BufferedByteStream`, the byte stream PyAMF's functions take and return.

A `io.BytesIO` with PyAMF's typed readers and writers (`read_ushort`, `write_double`,
...), network byte order unless `endian` says otherwise; reading past the end raises
`IOError`, as PyAMF's does.
"""

from __future__ import annotations

import datetime
import io
import struct
import sys
from typing import Any, Union

__all__ = ["BufferedByteStream", "as_bytes", "get_class_meta", "get_datetime", "get_timestamp", "is_class_sealed"]

_Data = Union[bytes, bytearray, memoryview, str, "io.BytesIO", "BufferedByteStream", None]

#: Byte orders, as PyAMF names them.
ENDIAN_NETWORK = "!"
ENDIAN_NATIVE = "@"
ENDIAN_LITTLE = "<"
ENDIAN_BIG = ">"
_ENDIANS = (ENDIAN_NETWORK, ENDIAN_NATIVE, ENDIAN_LITTLE, ENDIAN_BIG)


def as_bytes(buf: Any) -> bytes:
    """The bytes of `buf`: bytes-like, str (UTF-8, as PyAMF takes it), or a stream."""
    if buf is None:
        return b""
    if isinstance(buf, str):
        return buf.encode("utf-8")
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return bytes(buf)
    if hasattr(buf, "getvalue") or hasattr(buf, "read"):
        data = buf.getvalue() if hasattr(buf, "getvalue") else buf.read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    raise TypeError(f"unable to make a byte stream of {type(buf).__name__}")


class BufferedByteStream(io.BytesIO):
    """Bytes to read and write at a position: `BufferedByteStream(b"...")`, `.getvalue()`,
    `.read(n)`, `.peek(n)`, `.remaining()`, `.at_eof()`, and the typed readers/writers."""

    def __init__(self, buf: _Data = None, min_buf_size: int | None = None) -> None:
        super().__init__(as_bytes(buf))
        self.endian = ENDIAN_NETWORK

    # -- the stream ---------------------------------------------------------------------

    def __len__(self) -> int:
        pos = self.tell()
        end = self.seek(0, io.SEEK_END)
        self.seek(pos)
        return end

    def read(self, length: int | None = -1) -> bytes:
        if length is not None and length < -1:
            raise IOError(f"cannot read {length} bytes")
        if length is None or length < 0:
            if self.at_eof():
                raise IOError("attempted to read from the buffer but already at the end")
            return super().read()
        if self.tell() + length > len(self):
            raise IOError(f"attempted to read {length} bytes from the buffer but only {self.remaining()} remain")
        return super().read(length)

    def write(self, data: Any) -> int:
        return super().write(data.encode("utf-8") if isinstance(data, str) else data)

    def truncate(self, size: int | None = 0) -> int:
        """Cut the stream to `size` bytes (PyAMF's default: 0, which also rewinds)."""
        size = 0 if size is None else size
        end = super().truncate(size)
        if self.tell() > size:
            self.seek(size)
        return end

    def peek(self, size: int = 1) -> bytes:
        """The next `size` bytes (all that is left with -1), without moving."""
        if size < -1:
            raise ValueError("cannot peek backwards")
        pos = self.tell()
        data = super().read() if size == -1 else super().read(size)
        self.seek(pos)
        return data

    def remaining(self) -> int:
        return len(self) - self.tell()

    def at_eof(self) -> bool:
        return self.tell() >= len(self)

    def append(self, data: Any) -> None:
        """Add bytes at the end, keeping the position."""
        pos = self.tell()
        self.seek(0, io.SEEK_END)
        self.write(as_bytes(data))
        self.seek(pos)

    def consume(self) -> None:
        """Drop the bytes already read: what remains becomes the whole stream."""
        rest = self.getvalue()[self.tell() :]
        self.truncate(0)
        super().write(rest)
        self.seek(0)

    def __add__(self, other: Any) -> BufferedByteStream:
        return BufferedByteStream(self.getvalue() + as_bytes(other))

    # -- typed values ---------------------------------------------------------------------

    def _order(self) -> str:
        # Native byte order, standard sizes (a long is 4 bytes here, as in PyAMF).
        return "=" if self.endian == ENDIAN_NATIVE else self.endian

    def _unpack(self, fmt: str) -> Any:
        fmt = self._order() + fmt
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def _pack(self, fmt: str, value: Any) -> None:
        if fmt in "df":
            if not isinstance(value, (int, float)):
                raise TypeError(f"expected a number, not {type(value).__name__}")
        elif not isinstance(value, int):
            raise TypeError(f"expected an int, not {type(value).__name__}")
        try:
            self.write(struct.pack(self._order() + fmt, value))
        except struct.error as e:
            raise OverflowError(f"{value!r} does not fit: {e}") from None

    def read_uchar(self) -> int:
        return int(self._unpack("B"))

    def write_uchar(self, c: int) -> None:
        self._pack("B", c)

    def read_char(self) -> int:
        return int(self._unpack("b"))

    def write_char(self, c: int) -> None:
        self._pack("b", c)

    def read_ushort(self) -> int:
        return int(self._unpack("H"))

    def write_ushort(self, s: int) -> None:
        self._pack("H", s)

    def read_short(self) -> int:
        return int(self._unpack("h"))

    def write_short(self, s: int) -> None:
        self._pack("h", s)

    def read_ulong(self) -> int:
        return int(self._unpack("L"))

    def write_ulong(self, v: int) -> None:
        self._pack("L", v)

    def read_long(self) -> int:
        return int(self._unpack("l"))

    def write_long(self, v: int) -> None:
        self._pack("l", v)

    def read_24bit_uint(self) -> int:
        b = self.read(3)
        return int.from_bytes(b, "little" if self._little() else "big")

    def write_24bit_uint(self, n: int) -> None:
        if not 0 <= n <= 0xFFFFFF:
            raise OverflowError(f"{n} is not a 24 bit unsigned integer")
        self.write(n.to_bytes(3, "little" if self._little() else "big"))

    def read_24bit_int(self) -> int:
        n = self.read_24bit_uint()
        return n - 0x1000000 if n & 0x800000 else n

    def write_24bit_int(self, n: int) -> None:
        if not -0x800000 <= n <= 0x7FFFFF:
            raise OverflowError(f"{n} is not a 24 bit signed integer")
        self.write_24bit_uint(n & 0xFFFFFF)

    def read_double(self) -> float:
        return float(self._unpack("d"))

    def write_double(self, d: float) -> None:
        self._pack("d", d)

    def read_float(self) -> float:
        return float(self._unpack("f"))

    def write_float(self, f: float) -> None:
        self._pack("f", f)

    def read_utf8_string(self, length: int) -> str:
        return self.read(length).decode("utf-8")

    def write_utf8_string(self, u: Any) -> None:
        if not isinstance(u, (str, bytes)):
            raise TypeError(f"expected a str, not {type(u).__name__}")
        self.write(u.encode("utf-8") if isinstance(u, str) else u)

    def _little(self) -> bool:
        if self.endian == ENDIAN_NATIVE:
            return sys.byteorder == "little"
        return self.endian == ENDIAN_LITTLE

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "endian" and isinstance(value, bytes):
            value = value.decode("ascii")
        if name == "endian" and value not in _ENDIANS:
            raise ValueError(f"unknown endian {value!r} (one of {', '.join(map(repr, _ENDIANS))})")
        super().__setattr__(name, value)


def get_timestamp(d: datetime.date) -> float:
    """Seconds since the epoch (UTC) of a date or a naive UTC datetime."""
    if not isinstance(d, datetime.datetime):
        d = datetime.datetime(d.year, d.month, d.day)
    if d.tzinfo is not None:
        d = d.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return (d - _EPOCH).total_seconds()


def get_datetime(secs: float) -> datetime.datetime:
    """The naive UTC datetime of seconds since the epoch."""
    return _EPOCH + datetime.timedelta(seconds=secs)


def is_class_sealed(klass: type) -> bool:
    """Whether instances of `klass` can take no attributes but their slots."""
    return all("__dict__" not in vars(k) and ("__slots__" in vars(k) or k is object) for k in klass.__mro__)


def get_class_meta(klass: type) -> dict[str, Any]:
    """The `__amf__` meta of a class, as PyAMF reads it."""
    from ._classes import get_class_meta as meta

    return meta(klass)


_EPOCH = datetime.datetime(1970, 1, 1)
