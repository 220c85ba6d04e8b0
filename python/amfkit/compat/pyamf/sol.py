"""`pyamf.sol`: local shared objects (`.sol` files) as PyAMF reads and writes them, on
`amfkit.sol`: `SOL` (a dict with a `name`), `load`, `save`, `decode`, `encode`. PyAMF
writes AMF0 by default, and so does this door."""

from __future__ import annotations

import os
from typing import IO, Any, Mapping, Union

from amfkit import sol as _sol

from ._codec import AMF0, AMF3, decode_values
from ._errors import DecodeError
from .util import BufferedByteStream, as_bytes

__all__ = ["LSO", "SOL", "decode", "encode", "load", "save"]

_File = Union[str, "os.PathLike[str]", IO[bytes]]


class SOL(dict):
    """A local shared object: its members, and `name`."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def save(self, name_or_file: _File, encoding: int = AMF0) -> None:
        save(self, name_or_file, encoding)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {dict.__repr__(self)} at 0x{id(self):x}>"


LSO = SOL


def decode(stream: Any, strict: bool = True) -> tuple[str, dict[str, Any]]:
    """(name, members) of the .sol bytes in `stream` (a `DecodeError` if malformed; with
    `strict`, also when the header's length field is not the file's)."""
    data = stream.getvalue() if isinstance(stream, BufferedByteStream) else as_bytes(stream)
    if strict and len(data) >= 6 and int.from_bytes(data[2:6], "big") != len(data) - 6:
        raise DecodeError("inconsistent stream header length")
    read: list[Any] = []

    def decode_sol(data: bytes) -> list[Any]:
        read[:] = [_sol.loads(data)]
        return [dict(read[0])]

    (values,) = decode_values(decode_sol, data)
    return read[0].name, values


def encode(name: str, values: Mapping[str, Any], strict: bool = True, encoding: int = AMF0) -> BufferedByteStream:
    """The .sol bytes of `values` named `name`, in AMF0 (`encoding=AMF3` for AMF3)."""
    from ._shapes import Writer

    if encoding not in (AMF0, AMF3):
        raise ValueError(f"unknown encoding {encoding!r}")
    with Writer(strict=strict) as writer:
        data = _sol.dumps(_sol.SOL(name, values, amf_version=encoding), default=writer.default)
    return BufferedByteStream(data)


def load(name_or_file: _File) -> SOL:
    """The SOL in a file (a path, or a binary file object)."""
    if isinstance(name_or_file, (str, os.PathLike)):
        with open(name_or_file, "rb") as f:
            data = f.read()
    elif hasattr(name_or_file, "read"):
        data = name_or_file.read()
    else:
        raise ValueError("readable stream expected")
    name, values = decode(data)
    s = SOL(name)
    s.update(values)
    return s


def save(sol: SOL, name_or_file: _File, encoding: int = AMF0) -> None:
    """Write a SOL to a file (a path, created or replaced; or a binary file object)."""
    data = encode(sol.name, sol, encoding=encoding).getvalue()
    if isinstance(name_or_file, (str, os.PathLike)):
        with open(name_or_file, "wb") as f:
            f.write(data)
    elif hasattr(name_or_file, "write"):
        name_or_file.write(data)
    else:
        raise ValueError("writable stream expected")
