"""Paths into decoded AMF values, for `amfkit sol --get/--set/--delete`.

A path is member names joined by dots, list items by `[index]`, and any name that is not
a plain identifier quoted in brackets as JSON: `player.gold`, `items[0].name`,
`scores["high score"]`, `flags[3]`. A name made of digits reaches a member of an
object (`scores.15`, as in an AS2 array stored with string keys) as well as `[15]`
reaches an item of a list: each is tried as written first.
"""

from __future__ import annotations

import json
import re
from typing import Any, Union

from .._text import MAX_SHOWN, clip, shown
from .jsonio import child_path

__all__ = ["PathError", "parse", "get", "set_value", "delete", "text"]

Step = Union[str, int]

_NAME = re.compile(r"[^.\[\]=\s]+")


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
        path = child_path(path, step)
    return path.removeprefix(".")


def _child(container: Any, step: Step, where: list[Step]) -> tuple[Any, Any]:
    """(the key as the container holds it, the value there); PathError if absent."""
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
        return index, container[index]
    raise PathError(f"{_at(where)} is {_kind(container)}, which has no members")


def _keys_for(step: Step) -> list[Any]:
    """The keys a step may name in a mapping: as written, then its other spelling (an
    AS2 array's members may be int keys or digit strings)."""
    if isinstance(step, int):
        return [step, str(step)]
    if re.fullmatch(r"-?\d+", step):
        return [step, int(step)]
    return [step]


def _index(step: Step) -> int | None:
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


def get(root: Any, steps: list[Step]) -> Any:
    """The value at `steps` below `root`."""
    value = root
    for i, step in enumerate(steps):
        _, value = _child(value, step, steps[:i])
    return value


def set_value(root: Any, steps: list[Step], value: Any) -> Any:
    """Put `value` at `steps` (a new member of an object may be added; a list item must
    exist). A number takes the kind of the number it replaces (an int given where a
    float was is stored as a float), so a save keeps its types. Returns the value
    stored."""
    parent = get(root, steps[:-1])
    last = steps[-1]
    where = steps[:-1]
    if isinstance(parent, dict):
        key: Any = last
        for k in _keys_for(last):
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
        index, old = _child(parent, last, where)
        value = _same_kind(old, value)
        parent[index] = value
        return value
    raise PathError(f"{_at(where)} is {_kind(parent)}, which has no members")


def delete(root: Any, steps: list[Step]) -> None:
    """Remove the member or list item at `steps`."""
    parent = get(root, steps[:-1])
    key, _ = _child(parent, steps[-1], steps[:-1])
    del parent[key]


_MISSING = object()


def _same_kind(old: Any, new: Any) -> Any:
    if isinstance(old, float) and type(new) is int:
        return float(new)
    return new
