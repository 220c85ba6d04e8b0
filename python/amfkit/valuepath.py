"""Paths into decoded AMF values: `amfkit sol --get/--set/--delete` and `amfkit.sol.edit`.

A path is member names joined by dots, list items by `[index]`, and any name that is not
a plain identifier quoted in brackets as JSON: `player.gold`, `items[0].name`,
`scores["high score"]`, `flags[3]`. A name made of digits reaches a member of an
object (`scores.15`, as in an AS2 array stored with string keys) as well as `[15]`
reaches an item of a list: each is tried as written first.

`|zlib`, `|deflate`, `|gzip`, `|base64`, `|amf3` and `|amf0` after a member step into
what it holds (`SDAT|zlib|amf3.player.gold`): they parse to `Codec` steps, which `get`
opens (`amfkit.nested`); editing through them is `amfkit.sol.edit`'s work (it writes
each layer back the way it was).
"""

from __future__ import annotations

import json
import re
from typing import Any, Union

from ._text import MAX_SHOWN, clip, shown

__all__ = ["Codec", "PathError", "Step", "parse", "parse_assignment", "get", "set_value", "delete", "text", "locate", "CODECS"]

#: The steps into nested data, each after a `|`.
CODECS = ("zlib", "deflate", "gzip", "base64", "amf3", "amf0")


class Codec:
    """A `|name` step of a path: the data of the value before it, decoded (`CODECS`)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if name not in CODECS:
            raise PathError(f"unknown step |{clip(name, MAX_SHOWN)} (known: {', '.join('|' + c for c in CODECS)})")
        self.name = name

    def __repr__(self) -> str:
        return f"Codec({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Codec) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("|", self.name))


Step = Union[str, int, Codec]

_NAME = re.compile(r"[^.\[\]=|\s]+")
_CODEC = re.compile(r"[A-Za-z0-9]+")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


class PathError(ValueError):
    """A path that does not parse, or that does not lead to a value."""


def parse(path: str) -> list[Step]:
    """The steps of `path` (names are str, `[n]` indexes are int). Raises PathError."""
    steps, _ = _parse(path, stop_at_equals=False)
    return steps


def parse_assignment(text: str) -> tuple[list[Step], str]:
    """`PATH=VALUE`: the steps of PATH and the VALUE text after the first `=` that ends
    the path (a quoted name may hold `=`)."""
    steps, end = _parse(text, stop_at_equals=True)
    if end >= len(text) or text[end] != "=":
        raise PathError(f"expected PATH=JSON, got {shown(text)}")
    return steps, text[end + 1 :]


def _parse(path: str, *, stop_at_equals: bool) -> tuple[list[Step], int]:
    steps: list[Step] = []
    i, n = 0, len(path)
    while i < n:
        c = path[i]
        if c == "=" and stop_at_equals:
            break
        if c == "[":
            close = _bracket_end(path, i)
            inner = path[i + 1 : close].strip()
            if re.fullmatch(r"-?\d+", inner):
                steps.append(int(inner))
            else:
                try:
                    name = json.loads(inner)
                except ValueError:
                    name = None
                if not isinstance(name, str):
                    raise PathError(f"in {shown(path)}: [{clip(inner, MAX_SHOWN)}] is neither an index nor a quoted name")
                steps.append(name)
            i = close + 1
        elif c == "|":
            if not steps:
                raise PathError(f"in {shown(path)}: |... follows a member (such as SDAT|zlib)")
            m = _CODEC.match(path, i + 1)
            if m is None:
                raise PathError(f"in {shown(path)}: a step name is missing after the | at character {i}")
            steps.append(Codec(m.group().lower()))
            i = m.end()
        elif c == "." and steps:
            i += 1
            m = _NAME.match(path, i)
            if m is None:
                raise PathError(f"in {shown(path)}: a name is missing after the dot at character {i}")
            steps.append(m.group())
            i = m.end()
        elif not steps:
            m = _NAME.match(path, i)
            if m is None:
                raise PathError(f"in {shown(path)}: unexpected {c!r} at character {i}")
            steps.append(m.group())
            i = m.end()
        else:
            raise PathError(f"in {shown(path)}: unexpected {c!r} at character {i}")
    if not steps:
        raise PathError("the path is empty (give a member name, such as player.gold)")
    return steps, i


def _bracket_end(path: str, start: int) -> int:
    """The index of the `]` closing the bracket at `start` (skipping a quoted name)."""
    i = start + 1
    quoted = False
    while i < len(path):
        c = path[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "]":
            return i
        i += 1
    raise PathError(f"in {shown(path)}: the bracket at character {start} is not closed")


def text(steps: list[Step]) -> str:
    """The path of `steps` as written (the JSON paths' spelling, without their root)."""
    path = ""
    for step in steps:
        if isinstance(step, Codec):
            path += f"|{step.name}"
        elif isinstance(step, int):
            path += f"[{step}]"
        elif _IDENT.match(step):
            path += f".{step}" if path else step
        else:
            path += f"[{json.dumps(step, ensure_ascii=False)}]"
    return path


def _child(container: Any, step: Step, where: list[Step]) -> tuple[Any, Any]:
    """(the key as the container holds it, the value there); PathError if absent."""
    if isinstance(step, Codec):
        raise PathError(f"{text([*where, step])}: a |{step.name} step is opened by amfkit.sol.edit")
    if isinstance(container, dict):
        for key in _keys_for(step):
            if key in container:
                return key, container[key]
        raise PathError(f"no member {shown(step)} in {_at(where)}")
    if isinstance(container, list):
        index = _index(step)
        if index is None:
            raise PathError(f"{_at(where)} is a list: use an index such as [0], not {shown(step)}")
        if not -len(container) <= index < len(container):
            raise PathError(f"index {index} is out of range in {_at(where)} (it has {len(container)} items)")
        index %= len(container)  # the key as held: [-1] and [n-1] are one place
        return index, container[index]
    raise PathError(f"{_at(where)} is {_kind(container)}, which has no members")


def _keys_for(step: str | int) -> list[Any]:
    """The keys a step may name in a mapping: as written, then its other spelling (an
    AS2 array's members may be int keys or digit strings)."""
    if isinstance(step, int):
        return [step, str(step)]
    if re.fullmatch(r"-?\d+", step):
        return [step, int(step)]
    return [step]


def _index(step: str | int) -> int | None:
    if isinstance(step, int):
        return step
    return int(step) if re.fullmatch(r"-?\d+", step) else None


def _at(where: list[Step]) -> str:
    return "the top level" if not where else text(where)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiouAEIOU' else 'a'} {name}"


def locate(root: Any, steps: list[Step], *, where: list[Step] | None = None) -> tuple[list[Any], Any]:
    """(the keys of `steps` as the containers hold them, the value they lead to);
    `where` is the path above `root`, for messages. No `Codec` steps."""
    base = list(where or ())
    keys: list[Any] = []
    value = root
    for i, step in enumerate(steps):
        key, value = _child(value, step, base + list(steps[:i]))
        keys.append(key)
    return keys, value


def get(root: Any, steps: list[Step], *, where: list[Step] | None = None) -> Any:
    """The value at `steps` below `root`; a `Codec` step opens what the value before it
    holds (`amfkit.nested.open_layer`, with the decoders' default limits)."""
    from . import nested

    base = list(where or ())
    value = root
    start = 0
    for i, step in enumerate(steps):
        if isinstance(step, Codec):
            _, value = locate(value, steps[start:i], where=base + list(steps[:start]))
            try:
                value, _ = nested.open_layer(value, step.name)
            except nested.LayerError as e:
                raise PathError(f"{text(base + list(steps[: i + 1]))}: {e}") from None
            start = i + 1
    return locate(value, steps[start:], where=base + list(steps[:start]))[1]


def set_value(root: Any, steps: list[Step], value: Any, *, where: list[Step] | None = None) -> Any:
    """Put `value` at `steps` (a new member of an object may be added; a list item must
    exist). A number takes the kind of the number it replaces (an int given where a
    float was is stored as a float), so a save keeps its types. Returns the value
    stored. No `Codec` steps (`amfkit.sol.edit` writes through them)."""
    base = list(where or ())
    _, parent = locate(root, steps[:-1], where=base)
    last = steps[-1]
    at = base + list(steps[:-1])
    if isinstance(last, Codec):
        _child(parent, last, at)
    if isinstance(parent, dict):
        key: Any = last
        for k in _keys_for(last):  # type: ignore[arg-type]
            if k in parent:
                key = k
                break
        else:
            if not isinstance(last, str):
                key = str(last) if all(isinstance(k, str) for k in parent) else last
        old = parent.get(key, _MISSING)
        value = _same_kind(old, value)
        parent[key] = value
        return value
    if isinstance(parent, list):
        index, old = _child(parent, last, at)
        value = _same_kind(old, value)
        parent[index] = value
        return value
    raise PathError(f"{_at(at)} is {_kind(parent)}, which has no members")


def delete(root: Any, steps: list[Step], *, where: list[Step] | None = None) -> None:
    """Remove the member or list item at `steps` (no `Codec` steps)."""
    base = list(where or ())
    _, parent = locate(root, steps[:-1], where=base)
    key, _ = _child(parent, steps[-1], base + list(steps[:-1]))
    del parent[key]


_MISSING = object()


def _same_kind(old: Any, new: Any) -> Any:
    if isinstance(old, float) and type(new) is int:
        return float(new)
    return new
