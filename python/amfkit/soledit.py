"""Editing a .sol file in place, through the data nested in its members: `SaveEditor`,
which `amfkit.sol.edit(path_or_bytes)` opens (docs/sol.md, "Editing saves").

    >>> import zlib, amfkit
    >>> from amfkit import sol
    >>> inner = amfkit.amf3.encode({"player": {"gold": 120}})
    >>> data = sol.dumps(sol.SOL("game", {"SDAT": zlib.compress(inner, 9), "v": 2}))
    >>> save = sol.edit(data)
    >>> save["SDAT|zlib|amf3.player.gold"]
    120
    >>> save["SDAT|zlib|amf3.player.gold"] = 9999
    >>> edited = save.dumps()
    >>> amfkit.amf3.decode(zlib.decompress(sol.loads(edited)["SDAT"]))
    {'player': {'gold': 9999}}

The file is read losslessly (`sol.loads(..., lossless=True)`); each `|codec` step a path
goes through opens that layer once (`amfkit.nested`), and `dumps` writes every edited
layer back the way it was read, innermost first, then the file: what no edit touched
keeps its bytes.
"""

from __future__ import annotations

import os
from typing import IO, Any, Union

from . import _amfkit, nested, sol, valuepath
from .valuepath import Codec, PathError, Step

__all__ = ["SaveEditor", "edit"]

_Path = Union[str, "os.PathLike[str]"]
_Key = tuple[Any, ...]


class _Open:
    """A layer opened at `key` (the keys of the path to it as the containers hold them,
    its codec last): its content, and where the encoded value goes back (`parent`, the
    key of the layer holding it, () for the file; `rel`, the keys below that)."""

    __slots__ = ("layer", "content", "parent", "rel", "dirty")

    def __init__(self, layer: nested.Layer, content: Any, parent: _Key, rel: tuple[Any, ...]) -> None:
        self.layer = layer
        self.content = content
        self.parent = parent
        self.rel = rel
        self.dirty = False


class SaveEditor:
    """A .sol file open for editing: `get`, `set` and `delete` take a value path (a str
    as `amfkit sol --get` takes it, or a list of steps) and go through `|zlib`,
    `|deflate`, `|gzip`, `|base64`, `|amf3` and `|amf0` steps; `save[path]`,
    `save[path] = value` and `del save[path]` are the same. `dumps()` gives the edited
    file's bytes, `dump(file)` writes them. `sol` is the `SOL` read (lossless).

    Errors: `amfkit.valuepath.PathError` for a path that does not lead to a value,
    `amfkit.nested.LayerError` for a step whose data is not what it says (both
    `ValueError`s, one line each); `amfkit.EncodeError` from `dumps` for a value that
    cannot be written. Nothing is written by a failed edit."""

    def __init__(
        self,
        data: bytes,
        *,
        max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
        max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
        max_size: int = _amfkit.DEFAULT_MAX_SIZE,
        tz_aware: bool = False,
    ) -> None:
        self._limits: dict[str, Any] = {"max_depth": max_depth, "max_objects": max_objects, "max_size": max_size, "tz_aware": tz_aware}
        self.sol = sol.loads(data, lossless=True, **self._limits)
        self._layers: dict[_Key, _Open] = {}

    def __repr__(self) -> str:
        return f"<SaveEditor {self.sol.name!r}, amf{self.sol.amf_version}, {len(self.sol)} members, {len(self._layers)} layers open>"

    @property
    def name(self) -> str:
        return self.sol.name

    @property
    def amf_version(self) -> int:
        return self.sol.amf_version

    # -- reading and editing -------------------------------------------------------------

    def get(self, path: str | list[Step]) -> Any:
        """The value at `path`."""
        steps = _steps(path)
        root, rest, _, where = self._open(steps)
        return valuepath.locate(root, rest, where=where)[1]

    def set(self, path: str | list[Step], value: Any) -> Any:
        """Put `value` at `path` (a new member may be added; a number keeps the kind of the
        one it replaces, as in `amfkit.valuepath.set_value`); returns the value stored.
        A path that ends with a step (`SDAT|zlib`) replaces the whole content there."""
        steps = _steps(path)
        root, rest, key, where = self._open(steps)
        if not rest:
            opened = self._layers[key]
            opened.content = value
            opened.dirty = True
            self._forget_below(key, ())
            return value
        stored = valuepath.set_value(root, rest, value, where=where)
        keys, _ = valuepath.locate(root, rest, where=where)  # the keys as now held
        self._touched(key, tuple(keys))
        return stored

    def delete(self, path: str | list[Step]) -> None:
        """Remove the member or list item at `path`."""
        steps = _steps(path)
        root, rest, key, where = self._open(steps)
        if not rest:
            raise PathError(f"{valuepath.text(steps)}: a step cannot be deleted (delete the member that holds it)")
        keys, _ = valuepath.locate(root, rest, where=where)
        valuepath.delete(root, rest, where=where)
        self._touched(key, tuple(keys))

    __getitem__ = get
    __delitem__ = delete

    def __setitem__(self, path: str | list[Step], value: Any) -> None:
        self.set(path, value)

    def __contains__(self, path: object) -> bool:
        try:
            self.get(path)  # type: ignore[arg-type]
        except (PathError, nested.LayerError):
            return False
        return True

    def layers(self) -> list[tuple[str, str]]:
        """The layers opened so far: (their path, how each is written back)."""
        return [(valuepath.text(list(k)), o.layer.describe()) for k, o in sorted(self._layers.items(), key=lambda kv: len(kv[0]))]

    # -- writing -----------------------------------------------------------------------

    def dumps(self) -> bytes:
        """The edited file's bytes: each edited layer encoded back into the value that
        holds it (innermost first), then the file (`amfkit.sol.dumps`, lossless)."""
        return bytes(self._encode())

    def dump(self, file: _Path | IO[bytes]) -> None:
        """Write `dumps()` to a path (created or replaced) or a binary file."""
        sol._write(self._encode(), file, "dump")

    def _encode(self) -> _amfkit.Encoded:
        for key in sorted(self._layers, key=len, reverse=True):
            opened = self._layers[key]
            if not opened.dirty:
                continue
            try:
                encoded = opened.layer.encode(opened.content)
            except nested.LayerError as e:
                raise nested.LayerError(f"{valuepath.text(list(key))}: {e}") from None
            if opened.parent:
                holder = self._layers[opened.parent]
                holder.dirty = True
                if not opened.rel:
                    holder.content = encoded
                    opened.dirty = False
                    continue
                container = holder.content
            else:
                container = self.sol
            _, parent = valuepath.locate(container, list(opened.rel[:-1]))
            parent[opened.rel[-1]] = encoded
            opened.dirty = False
        return sol._encode(self.sol, None)

    # -- the layers --------------------------------------------------------------------

    def _open(self, steps: list[Step]) -> tuple[Any, list[Step], _Key, list[Step]]:
        """(the container the steps after the last `|codec` apply to, those steps, the
        key of the layer holding it (() for the file), the path to it for messages)."""
        root: Any = self.sol
        base: _Key = ()
        start = 0
        for i, step in enumerate(steps):
            if not isinstance(step, Codec):
                continue
            where = list(steps[:start])
            keys, value = valuepath.locate(root, steps[start:i], where=where)
            key = (*base, *keys, step)
            opened = self._layers.get(key)
            if opened is None:
                try:
                    content, layer = nested.open_layer(value, step.name, **self._limits)
                except nested.LayerError as e:
                    raise nested.LayerError(f"{valuepath.text(steps[: i + 1])}: {e}") from None
                opened = _Open(layer, content, base, tuple(keys))
                self._layers[key] = opened
            root, base, start = opened.content, key, i + 1
        return root, steps[start:], base, list(steps[:start])

    def _touched(self, key: _Key, below: tuple[Any, ...]) -> None:
        """An edit at `below` inside the layer `key` (the file when ()): that layer is
        to be written back, and layers opened under the edited place are stale."""
        if key:
            self._layers[key].dirty = True
        self._forget_below(key, below)

    def _forget_below(self, key: _Key, below: tuple[Any, ...]) -> None:
        prefix = (*key, *below)
        for k in [k for k in self._layers if len(k) > len(prefix) and k[: len(prefix)] == prefix]:
            del self._layers[k]


def edit(
    source: _Path | bytes | bytearray | memoryview | IO[bytes],
    *,
    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
    max_size: int = _amfkit.DEFAULT_MAX_SIZE,
    tz_aware: bool = False,
) -> SaveEditor:
    """Open a .sol file for editing (`SaveEditor`): from its bytes, a path, or a binary
    file opened for reading. The limits are `amfkit.sol.loads`'s, and apply to the file
    and to each layer opened in it (`max_size` also caps each inflation)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            data = f.read()
    elif hasattr(source, "read"):
        data = source.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"edit expects a binary file, but read() gave {type(data).__name__}")
        data = bytes(data)
    else:
        raise TypeError(f"edit expects a path, bytes or a binary file, not {type(source).__name__}")
    return SaveEditor(data, max_depth=max_depth, max_objects=max_objects, max_size=max_size, tz_aware=tz_aware)


def _steps(path: str | list[Step]) -> list[Step]:
    if isinstance(path, str):
        return valuepath.parse(path)
    steps = list(path)
    if not steps:
        raise PathError("the path is empty (give a member name, such as player.gold)")
    return steps
