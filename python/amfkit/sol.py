"""Local shared object files (`.sol`, "Flash cookies"): `loads`, `load`, `dumps`, `dump`.

    >>> from amfkit import sol
    >>> data = sol.dumps(sol.SOL("game", {"score": 42, "name": "Ada"}))
    >>> shared = sol.loads(data)
    >>> shared.name, shared.amf_version, dict(shared)
    ('game', 3, {'score': 42, 'name': 'Ada'})

`edit(path_or_bytes)` opens a save for editing, through the compressed, base64 and AMF
data nested in its members (`amfkit.soledit`). The file format, and what `loads` accepts
and refuses: docs/sol.md.
"""

from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Mapping, Union

from . import _amfkit

if TYPE_CHECKING:
    from .soledit import SaveEditor

__all__ = ["SOL", "dump", "dumps", "edit", "load", "loads"]

_Buffer = Union[bytes, bytearray, memoryview]
_Path = Union[str, "os.PathLike[str]"]


class SOL(dict[str, Any]):
    """A local shared object: its members (a dict, in file order), `.name` and
    `.amf_version` (0 or 3, default 3: the AMF version its values are written in).

        SOL("settings", {"volume": 0.5}, amf_version=0)
    """

    name: str
    amf_version: int
    # From a lossless read: the traits each AMF3 object was read with (an opaque
    # `_amfkit.Layout`) and whether the file's writer never references strings; None and
    # False for a SOL built in code, which `dumps` writes as Flash Player would.
    _layout: _amfkit.Layout | None = None
    _inline_strings: bool = False
    # From any read: the size of the file, which `dumps` reserves for its output at once.
    _size_hint: int = 0

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

    @property
    def lossless(self) -> bool:
        """Whether this SOL came from a lossless read (`loads(..., lossless=True)`): its
        objects are written back with the encoding choices they were read with."""
        return self._layout is not None

    def copy(self) -> SOL:
        """A shallow copy, with the same name and AMF version (and, from a lossless
        read, the same encoding choices: the values are shared)."""
        other = SOL(self.name, self, amf_version=self.amf_version)
        other._layout = self._layout
        other._inline_strings = self._inline_strings
        other._size_hint = self._size_hint
        return other


def loads(
    data: _Buffer,
    *,
    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
    max_size: int = _amfkit.DEFAULT_MAX_SIZE,
    tz_aware: bool = False,
    lossless: bool = False,
) -> SOL:
    """Decode the bytes of a .sol file (docs/sol.md tells what is accepted).
    The limits are those of `amfkit.amf0.decode`/`amfkit.amf3.decode` and apply to the
    whole file.

    With `lossless`, the SOL also remembers how its writer encoded it (each AMF3
    object's traits, inline or referenced, sealed members included; a writer that never
    references strings), and `dumps` writes it back byte for byte when nothing was
    changed, and everything that was not changed the same way when something was. The
    values are the same as without it: dicts, lists, TypedObjects."""
    name, version, values, layout, inline_strings = _amfkit.decode_sol(
        data, max_depth=max_depth, max_objects=max_objects, max_size=max_size, tz_aware=tz_aware, lossless=lossless
    )
    shared = SOL(name, values, amf_version=version)
    shared._size_hint = memoryview(data).nbytes
    if lossless:
        shared._layout = layout
        shared._inline_strings = inline_strings
    return shared


def load(
    file: _Path | IO[bytes],
    *,
    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
    max_size: int = _amfkit.DEFAULT_MAX_SIZE,
    tz_aware: bool = False,
    lossless: bool = False,
) -> SOL:
    """Decode a .sol file from a path (str or path-like) or a binary file opened for
    reading; the options are those of `loads`."""
    if isinstance(file, (str, os.PathLike)):
        with open(file, "rb") as f:
            data = f.read()
    elif hasattr(file, "read"):
        data = file.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"load expects a binary file, but read() gave {type(data).__name__}")
    else:
        raise TypeError(f"load expects a path or a binary file, not {type(file).__name__}")
    return loads(
        data, max_depth=max_depth, max_objects=max_objects, max_size=max_size, tz_aware=tz_aware, lossless=lossless
    )


def dumps(sol: Mapping[str, Any], *, default: Callable[[Any], Any] | None = None) -> bytes:
    """Encode a `SOL` (or any mapping of str names to values: name "", AMF3) as the bytes
    of a .sol file, members in the mapping's order. `default` is the encoders' hook for
    unknown objects. Raises `amfkit.EncodeError` for a value or name that cannot be
    written, and `ValueError` for an `amf_version` other than 0 and 3. A SOL from a
    lossless read is written with the encoding choices it was read with (see `loads`)."""
    return bytes(_encode(sol, default))


def dump(
    sol: Mapping[str, Any], file: _Path | IO[bytes], *, default: Callable[[Any], Any] | None = None
) -> None:
    """Write `dumps(sol)` to a path (str or path-like; created or replaced) or to a binary
    file opened for writing."""
    _write(_encode(sol, default), file, "dump")


def _encode(sol: Mapping[str, Any], default: Callable[[Any], Any] | None) -> _amfkit.Encoded:
    """The file's bytes, in the encoder's own buffer (not yet copied into a bytes)."""
    name = getattr(sol, "name", "")
    version = getattr(sol, "amf_version", 3)
    if not isinstance(sol, SOL):
        return _amfkit.encode_sol(name, version, sol, default=default)
    return _amfkit.encode_sol(
        name,
        version,
        sol,
        default=default,
        layout=sol._layout,
        inline_strings=sol._inline_strings,
        size_hint=sol._size_hint,
    )


def _write(data: _amfkit.Encoded, file: _Path | IO[bytes], what: str) -> None:
    """Write encoded bytes to a path (from the encoder's buffer, without a copy) or to a
    binary file (as a bytes)."""
    if isinstance(file, (str, os.PathLike)):
        with open(file, "wb") as f:
            f.write(data)
    elif hasattr(file, "write"):
        file.write(bytes(data))
    else:
        raise TypeError(f"{what} expects a path or a binary file, not {type(file).__name__}")


def edit(
    source: _Path | _Buffer | IO[bytes],
    *,
    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
    max_size: int = _amfkit.DEFAULT_MAX_SIZE,
    tz_aware: bool = False,
) -> SaveEditor:
    """Open a .sol file (its bytes, a path, or a binary file) for editing, through
    `|zlib`, `|deflate`, `|gzip`, `|base64`, `|amf3` and `|amf0` steps:

        save = sol.edit("game.sol")
        save["SDAT|zlib|amf3.player.gold"] = 9999
        save.dump("game.sol")

    Everything not edited is written back byte for byte (`amfkit.soledit.SaveEditor`)."""
    from .soledit import edit as _edit

    return _edit(source, max_depth=max_depth, max_objects=max_objects, max_size=max_size, tz_aware=tz_aware)
