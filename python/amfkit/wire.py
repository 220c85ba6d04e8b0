"""The exact document of AMF bytes: JSON-ready data that keeps every choice a writer made
that a reader can see, so that it writes back to the same bytes.

    >>> from amfkit import wire
    >>> data = bytes.fromhex("0a000000010200024869")      # AMF0: a strict array ["Hi"]
    >>> wire.read(data, "amf0")
    ['Hi']
    >>> wire.read(bytes.fromhex("08000000010001300200024869000009"), "amf0")  # ECMA {"0": "Hi"}
    {'__ecma__': {'0': 'Hi'}}
    >>> wire.write(wire.read(data, "amf0"), "amf0") == data
    True

It is what `amfkit decode --json` prints for a remoting packet, what `amfkit encode`
writes back, and what `amfkit.diff` compares: plain JSON where the usual writing writes
the bytes that were read, a tagged value (`{"__ecma__": ...}`, `{"__amf3__": ...}`,
`{"__ref__": "$.path"}`, ...) everywhere else. The format is in docs/cli.md ("The exact
JSON of packets"). The core's `Value` tree reads the bytes, so the document holds
Flex's small messages (`DSK`, `DSA`, `DSC`) by their members and the collections by
their body, and never runs a registered class's code.

- `read(data, form, *, stream=False, **options)`: `form` is `"packet"`, `"amf0"` or
  `"amf3"`; `options` are the decoder limits (`max_depth`, `max_objects`, `max_size`)
  and the lenient options (`unknown_externalizable`, `externalizable`). Raises
  `amfkit.DecodeError`.
- `write(doc, form=None, *, stream=False)`: the bytes; `form` None takes a packet
  document (`{"__packet__": version, ...}`) for a packet. Raises `DocumentError` (a
  `ValueError`, with the JSON path) for a document that describes no AMF.
"""

from __future__ import annotations

from typing import Any, Mapping, Union

from . import _amfkit

__all__ = ["FORMS", "DocumentError", "is_packet", "read", "write"]

#: What `read` and `write` take as `form`.
FORMS = ("packet", "amf0", "amf3")

_Buffer = Union[bytes, bytearray, memoryview]


class DocumentError(ValueError):
    """A document that describes no AMF bytes; the message ends with its JSON path."""


def read(
    data: _Buffer,
    form: str,
    *,
    stream: bool = False,
    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
    max_size: int = _amfkit.DEFAULT_MAX_SIZE,
    unknown_externalizable: str = "error",
    externalizable: Mapping[str, str] | None = None,
) -> Any:
    """The exact document of `data` read as `form` (one value, or with `stream` the list
    of a stream's values)."""
    return _amfkit.wire_read(
        data,
        form,
        stream=stream,
        max_depth=max_depth,
        max_objects=max_objects,
        max_size=max_size,
        unknown_externalizable=unknown_externalizable,
        externalizable=externalizable,
    )


def is_packet(doc: Any) -> bool:
    """Whether `doc` is a packet's document (a dict with `__packet__`)."""
    return isinstance(doc, dict) and "__packet__" in doc


def write(doc: Any, form: str | None = None, *, stream: bool = False) -> bytes:
    """The AMF bytes `doc` describes; `form` None: a packet for a packet's document, else
    an error (a value's version is not in its document)."""
    if form is None:
        if not is_packet(doc):
            raise DocumentError('a value\'s document needs its form ("amf0" or "amf3"), at $')
        form = "packet"
    try:
        return _amfkit.wire_write(doc, form, stream=stream)
    except ValueError as e:
        raise DocumentError(str(e)) from None
