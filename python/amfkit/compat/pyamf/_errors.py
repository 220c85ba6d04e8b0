"""PyAMF's exceptions. The codec's errors come out as these, and they are also
amfkit's: a `DecodeError` is an `amfkit.DecodeError` (a `ValueError`), an `EncodeError` an
`amfkit.EncodeError` (a `TypeError`)."""

from __future__ import annotations

import amfkit

__all__ = ["BaseError", "DecodeError", "EOStream", "EncodeError", "ReferenceError", "TruncatedError", "UnknownClassAlias"]


class BaseError(Exception):
    """Base of PyAMF's errors."""


class DecodeError(BaseError, amfkit.DecodeError):
    """The data is not AMF that can be read (the codec's message says where)."""


class TruncatedError(DecodeError, IOError):
    """The data ends before the value does: a DecodeError, and an `IOError` as PyAMF
    raises for reading past the end of its stream."""


class EncodeError(BaseError, amfkit.EncodeError):
    """A value cannot be written as AMF."""


class EOStream(BaseError):
    """The stream has no more values."""


class ReferenceError(BaseError):  # noqa: A001 (PyAMF's name)
    """A reference to an object or string that the stream never gave."""


class UnknownClassAlias(Exception):
    """No class is registered for an alias (and no class loader gave one). The door never
    imports a module named by its input to find one."""
