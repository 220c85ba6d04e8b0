"""The commands' input and output: a file named on the command line, or standard input
and output for "-"; a failure is a `CLIError` naming the file."""

from __future__ import annotations

import sys
from typing import BinaryIO

from .errors import CLIError

__all__ = ["input_name", "read_input", "write_output"]


def input_name(path: str) -> str:
    """How a message names the input `path`."""
    return "<stdin>" if path == "-" else path


def read_input(path: str) -> bytes:
    """The bytes of the file `path`, or of standard input for "-"."""
    if path == "-":
        stream: BinaryIO | None = getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise CLIError("standard input is not available")
        return stream.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise CLIError(f"{path}: {e.strerror or e}") from None


def write_output(path: str, data: bytes) -> None:
    """Write AMF bytes to the file `path`, or to standard output for "-" (not a terminal)."""
    if path == "-":
        if sys.stdout.isatty():
            raise CLIError("refusing to write AMF bytes to a terminal; use -o FILE or a pipe")
        sys.stdout.flush()
        stream: BinaryIO | None = getattr(sys.stdout, "buffer", None)
        if stream is None:
            raise CLIError("standard output takes no bytes here; use -o FILE")
        stream.write(data)
        stream.flush()
        return
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise CLIError(f"{path}: {e.strerror or e}") from None
