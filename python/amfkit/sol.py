"""Local shared object files (`.sol`, "Flash cookies"): `loads`, `load`, `dumps`, `dump`.

    >>> from amfkit import sol
    >>> data = sol.dumps(sol.SOL("game", {"score": 42, "name": "Ada"}))
    >>> shared = sol.loads(data)
    >>> shared.name, shared.amf_version, dict(shared)
    ('game', 3, {'score': 42, 'name': 'Ada'})

The file format, and what `loads` accepts and refuses: docs/sol.md.
"""

from __future__ import annotations

import os
from typing import IO, Any, Callable, Iterable, Mapping, Union

from . import _amfkit

__all__ = ["SOL", "dump", "dumps", "load", "loads"]

_Buffer = Union[bytes, bytearray, memoryview]
_Path = Union[str, "os.PathLike[str]"]


class SOL(dict[str, Any]):
    """A local shared object: its members (a dict, in file order), `.name` and
    `.amf_version` (0 or 3, default 3: the AMF version its values are written in).

        SOL("settings", {"volume": 0.5}, amf_version=0)
    """

    name: str
    amf_version: int

    def __init__(
        self,
        name: str = "",
        values: Mapping[str, Any] | Iterable[tuple[str, Any]] = (),
        /,
        *,
        amf_version: int = 3,
    ) -> None:
        super().__init__(values)
        self.name = name
        self.amf_version = amf_version

    def __repr__(self) -> str:
        return f"SOL({self.name!r}, {dict.__repr__(self)}, amf_version={self.amf_version!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SOL) and (self.name, self.amf_version) != (other.name, other.amf_version):
            return False
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def copy(self) -> SOL:
        """A shallow copy, with the same name and AMF version."""
        return SOL(self.name, self, amf_version=self.amf_version)


def loads(
    data: _Buffer,
    *,
    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
    max_size: int = _amfkit.DEFAULT_MAX_SIZE,
    tz_aware: bool = False,
) -> SOL:
    """Decode the bytes of a .sol file (docs/sol.md tells what is accepted).
    The limits are those of `amfkit.amf0.decode`/`amfkit.amf3.decode` and apply to the
    whole file."""
    name, version, values = _amfkit.decode_sol(
        data, max_depth=max_depth, max_objects=max_objects, max_size=max_size, tz_aware=tz_aware
    )
    return SOL(name, values, amf_version=version)


def load(
    file: _Path | IO[bytes],
    *,
    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
    max_size: int = _amfkit.DEFAULT_MAX_SIZE,
    tz_aware: bool = False,
) -> SOL:
    """Decode a .sol file from a path (str or path-like) or a binary file opened for
    reading; the limits are those of `loads`."""
    if isinstance(file, (str, os.PathLike)):
        with open(file, "rb") as f:
            data = f.read()
    elif hasattr(file, "read"):
        data = file.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"load expects a binary file, but read() gave {type(data).__name__}")
    else:
        raise TypeError(f"load expects a path or a binary file, not {type(file).__name__}")
    return loads(data, max_depth=max_depth, max_objects=max_objects, max_size=max_size, tz_aware=tz_aware)


def dumps(sol: Mapping[str, Any], *, default: Callable[[Any], Any] | None = None) -> bytes:
    """Encode a `SOL` (or any mapping of str names to values: name "", AMF3) as the bytes
    of a .sol file, members in the mapping's order. `default` is the encoders' hook for
    unknown objects. Raises `amfkit.EncodeError` for a value or name that cannot be
    written, and `ValueError` for an `amf_version` other than 0 and 3."""
    name = getattr(sol, "name", "")
    version = getattr(sol, "amf_version", 3)
    return _amfkit.encode_sol(name, version, sol, default=default)


def dump(
    sol: Mapping[str, Any], file: _Path | IO[bytes], *, default: Callable[[Any], Any] | None = None
) -> None:
    """Write `dumps(sol)` to a path (str or path-like; created or replaced) or to a binary
    file opened for writing."""
    data = dumps(sol, default=default)
    if isinstance(file, (str, os.PathLike)):
        with open(file, "wb") as f:
            f.write(data)
    elif hasattr(file, "write"):
        file.write(data)
    else:
        raise TypeError(f"dump expects a path or a binary file, not {type(file).__name__}")
