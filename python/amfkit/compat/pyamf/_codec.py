"""PyAMF's `encode`, `decode`, `get_encoder`, `get_decoder`, and the `Encoder` and
`Decoder` of `pyamf.amf0`/`pyamf.amf3`, on amfkit's codec.

An `Encoder` writes to its `stream` (a `BufferedByteStream`); the values one encoder
writes share one reference context, as PyAMF's do (amfkit's `encode_all`). A `Decoder`
reads the values of its stream one at a time (`readElement`, or iterating), sharing one
context (amfkit's `decode_all` over what the stream holds). The values come back in
PyAMF's shapes (`_shapes.to_pyamf`); class loaders are asked about the aliases nobody
registered, and when one gives a class the data is read again with it.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Iterator

import amfkit
from amfkit import amf0 as _amf0
from amfkit import amf3 as _amf3

from . import _classes
from ._errors import DecodeError, EncodeError, EOStream, TruncatedError, UnknownClassAlias
from ._shapes import Writer, to_pyamf
from .util import BufferedByteStream

__all__ = ["AMF0", "AMF3", "DEFAULT_ENCODING", "ENCODING_TYPES", "Decoder", "Encoder", "decode", "encode", "get_decoder", "get_encoder"]

AMF0 = 0
AMF3 = 3
ENCODING_TYPES = (AMF0, AMF3)
DEFAULT_ENCODING = AMF3


def _default_encoding() -> int:
    """The package's DEFAULT_ENCODING now (a program may set it, as in PyAMF)."""
    return int(getattr(sys.modules[__package__], "DEFAULT_ENCODING", DEFAULT_ENCODING))


def _check_encoding(encoding: Any) -> int:
    if encoding not in ENCODING_TYPES:
        raise ValueError(f"unknown encoding {encoding!r}")
    return int(encoding)


def _no_timezone_offset(timezone_offset: Any) -> None:
    if timezone_offset is not None:
        raise ValueError(
            "timezone_offset is not supported by amfkit's PyAMF door: AMF dates are UTC, and amfkit reads and "
            "writes them as UTC (shift local times yourself)"
        )


def _stream_of(stream: Any) -> BufferedByteStream:
    if isinstance(stream, BufferedByteStream):
        return stream
    return BufferedByteStream(stream)


#: amfkit's reasons for data that ends too soon (tests/compat pin them).
_TRUNCATED = re.compile(r"unexpected end of input|exceeds the \d+ bytes? left")


def decode_error(e: amfkit.DecodeError) -> DecodeError:
    """The door's DecodeError for amfkit's (a TruncatedError, also an IOError, when the
    data ends too soon), with its `offset`, `path` and `reason`."""
    truncated = _TRUNCATED.search(str(getattr(e, "reason", e)))
    err = (TruncatedError if truncated else DecodeError)(str(e))
    for name in ("offset", "path", "reason"):
        if hasattr(e, name):
            setattr(err, name, getattr(e, name))
    return err


def decode_values(read: Any, data: bytes) -> list[Any]:
    """`read(data)` (a list of amfkit values) in PyAMF's shapes; read again while class
    loaders give classes for aliases that came back as TypedObjects."""
    asked: set[str] = set()
    while True:
        try:
            values = read(data)
        except amfkit.DecodeError as e:
            raise decode_error(e) from e
        aliases: set[str] = set()
        values = to_pyamf(values, aliases)
        new = False
        if _classes.state().CLASS_LOADERS:
            for alias in sorted(aliases - asked):
                asked.add(alias)
                try:
                    _classes.load_class(alias)
                except UnknownClassAlias:
                    continue
                new = True
        if not new:
            return values


class Context:
    """What PyAMF's codecs call their context (the reference tables): `clear()` starts
    a new one."""

    def __init__(self, codec: _Codec) -> None:
        self._codec = codec

    def clear(self) -> None:
        self._codec._restart()


class _Codec:
    """What PyAMF's encoders and decoders share: their stream (a `BufferedByteStream`),
    `strict`, `timezone_offset` and `context`."""

    encoding = AMF3

    def __init__(
        self, stream: Any = None, strict: bool = False, timezone_offset: Any = None, **kwargs: Any
    ) -> None:
        _no_timezone_offset(timezone_offset)
        self.stream = BufferedByteStream() if stream is None else _stream_of(stream)
        self.strict = strict
        self.timezone_offset = timezone_offset
        self.context = Context(self)
        self._restart()

    def _restart(self) -> None:
        raise NotImplementedError


class Encoder(_Codec):
    """Writes values to `stream` (`writeElement`), all in one reference context (until
    `context.clear()`)."""

    def _restart(self) -> None:
        self._values: list[Any] = []
        self._start = self.stream.tell()
        self._end = self._start

    def writeElement(self, data: Any) -> None:
        """Write one value after the ones written before (references may point back).
        amfkit writes a context's values in one go: the values written so far are
        written again with this one (a stream moved or cut meanwhile starts afresh)."""
        if self.stream.tell() != self._end or len(self.stream) != self._end:
            self._restart()
        self._values.append(data)
        try:
            out = self._encode(self._values)
        except BaseException:
            self._values.pop()
            raise
        self.stream.truncate(self._start)
        self.stream.seek(self._start)
        self.stream.write(out)
        self._end = self.stream.tell()

    def send(self, data: Any) -> None:
        self.writeElement(data)

    def _encode(self, values: list[Any]) -> bytes:
        encoder_class = _amf3.Encoder if self.encoding == AMF3 else _amf0.Encoder
        with Writer(self, strict=self.strict) as writer:
            try:
                return bytes(encoder_class(default=writer.default).encode_all(values))
            except EncodeError:
                raise
            except amfkit.EncodeError as e:
                raise EncodeError(str(e)) from e

    def getvalue(self) -> bytes:
        return self.stream.getvalue()


class Decoder(_Codec):
    """Reads the values of `stream` one at a time (`readElement`; or iterate), all in
    one reference context. `EOStream` (or the end of the iteration) at the end.

    amfkit reads a context's values in one go: the first `readElement` reads every value
    from the stream's position; the position stays there until the last one is taken,
    then moves to the end (a stream written to or moved meanwhile is read afresh)."""

    def _restart(self) -> None:
        self._values: list[Any] | None = None
        self._data = b""
        self._pos = -1
        self._next = 0

    def send(self, data: Any) -> None:
        """Add bytes to read."""
        self.stream.append(data)

    def readElement(self) -> Any:
        pos = self.stream.tell()
        data = self.stream.getvalue()
        if self._values is None or pos != self._pos or data != self._data:
            decoder_class = _amf3.Decoder if self.encoding == AMF3 else _amf0.Decoder
            rest = data[pos:]
            self._values = decode_values(decoder_class().decode_all, rest) if rest else []
            self._data, self._next = data, 0
        if self._next >= len(self._values):
            self._pos = pos
            raise EOStream("end of stream")
        value = self._values[self._next]
        self._next += 1
        if self._next == len(self._values):
            pos = len(data)
            self.stream.seek(pos)
        self._pos = pos
        return value

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            return self.readElement()
        except EOStream:
            raise StopIteration from None

    next = __next__


class Amf0Encoder(Encoder):
    encoding = AMF0


class Amf0Decoder(Decoder):
    encoding = AMF0


def get_encoder(encoding: int, *args: Any, **kwargs: Any) -> Encoder:
    """An `Encoder` for AMF0 or AMF3."""
    kwargs.pop("use_ext", None)
    return (Amf0Encoder if _check_encoding(encoding) == AMF0 else Encoder)(*args, **kwargs)


def get_decoder(encoding: int, *args: Any, **kwargs: Any) -> Decoder:
    """A `Decoder` for AMF0 or AMF3 (of `args[0]`, the stream, if given)."""
    kwargs.pop("use_ext", None)
    return (Amf0Decoder if _check_encoding(encoding) == AMF0 else Decoder)(*args, **kwargs)


def encode(*args: Any, **kwargs: Any) -> BufferedByteStream:
    """The values, encoded one after the other in one context (`encoding=AMF3` by
    default), as a `BufferedByteStream` at position 0."""
    encoding = kwargs.pop("encoding", _default_encoding())
    encoder = get_encoder(encoding, **kwargs)
    encoder.stream.write(encoder._encode(list(args)))
    encoder.stream.seek(0)
    return encoder.stream


def decode(stream: Any, *args: Any, **kwargs: Any) -> Decoder:
    """A decoder of the values in `stream` (bytes, or a file-like object): iterate it,
    or call `readElement()`."""
    encoding = kwargs.pop("encoding", _default_encoding())
    if hasattr(stream, "read") and not isinstance(stream, BufferedByteStream):
        stream = stream.read()
    return get_decoder(encoding, stream, *args, **kwargs)
