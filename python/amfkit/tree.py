"""Print a decoded AMF value as an indented tree naming its AMF types: what `amfkit decode`
prints for a value (docs/cli.md; `amfkit.cli.tree` is the same module under its old name).

    >>> from amfkit.tree import render
    >>> node = {"n": 1}
    >>> node["self"] = node
    >>> print(render(node))
    object (2 members) #1
      n: integer 1
      self: <ref #1>
"""

from __future__ import annotations

import array
import datetime as _dt
import math
from typing import Any, Iterable, Iterator, Sequence

from ._values import alias_of, attributes, float_text, iso_utc

__all__ = ["render", "render_stream", "iter_lines", "iter_stream_lines", "type_name", "summary", "iso_utc"]

_INDENT = "  "
_AMF3_INT_MIN = -(2**28)
_AMF3_INT_MAX = 2**28 - 1
_VECTOR_NAMES = {
    "b": "Vector.<int>",
    "h": "Vector.<int>",
    "i": "Vector.<int>",
    "l": "Vector.<int>",
    "q": "Vector.<int>",
    "B": "Vector.<uint>",
    "H": "Vector.<uint>",
    "I": "Vector.<uint>",
    "L": "Vector.<uint>",
    "Q": "Vector.<uint>",
    "f": "Vector.<Number>",
    "d": "Vector.<Number>",
}
_SCALARS = (str, bytes, bytearray, memoryview, int, float, _dt.date, type(None))


def render(
    value: Any,
    *,
    version: int = 3,
    label: str | None = None,
    max_string: int = 120,
    max_bytes: int = 32,
) -> str:
    """The tree of one value as a string (no trailing newline)."""
    return "\n".join(_lines([(label, value)], version, max_string, max_bytes))


def render_stream(
    values: Sequence[Any], *, version: int = 0, max_string: int = 120, max_bytes: int = 32
) -> str:
    """The trees of several values read from one stream, labelled `[0]`, `[1]`, ...

    Reference tags are shared across the values, as the stream's reference table is."""
    return "\n".join(iter_stream_lines(values, version=version, max_string=max_string, max_bytes=max_bytes))


def iter_lines(
    value: Any, *, version: int = 3, label: str | None = None, max_string: int = 120, max_bytes: int = 32
) -> Iterator[str]:
    """The lines of `render(value)`, one at a time (for very large values)."""
    return _lines([(label, value)], version, max_string, max_bytes)


def iter_stream_lines(
    values: Sequence[Any], *, version: int = 0, max_string: int = 120, max_bytes: int = 32
) -> Iterator[str]:
    """The lines of `render_stream(values)`, one at a time."""
    return _lines([(f"[{i}]", v) for i, v in enumerate(values)], version, max_string, max_bytes)


def summary(value: Any, *, version: int = 3, width: int = 72) -> str:
    """A one-line description of a value: the first line of its tree, cut to `width`."""
    line = next(_lines([(None, value)], version, width, 16))
    return line if len(line) <= width else line[: width - 1] + "…"


def type_name(value: Any, version: int = 3) -> str:
    """The AMF type a value is (or would be written as) in the given AMF version."""
    from ._types import (
        XML,
        ArrayCollection,
        Date,
        Dictionary,
        MixedArray,
        ObjectProxy,
        ObjectVector,
        Opaque,
        TypedObject,
        UndefinedType,
        XMLDocument,
    )

    v0 = version == 0
    if value is None:
        return "null"
    if isinstance(value, Opaque):
        return _amf3_only("opaque object", v0)
    if isinstance(value, ArrayCollection):
        return _amf3_only("ArrayCollection", v0)
    if isinstance(value, ObjectProxy):
        return _amf3_only("ObjectProxy", v0)
    if isinstance(value, UndefinedType):
        return "undefined"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        if v0:
            return "number"
        return "integer" if _AMF3_INT_MIN <= value <= _AMF3_INT_MAX else "double"
    if isinstance(value, float):
        return "number" if v0 else "double"
    if isinstance(value, XMLDocument):
        return "XML document" if v0 else "XMLDocument"
    if isinstance(value, XML):
        return "XML document" if v0 else "XML"
    if isinstance(value, str):
        if v0 and _is_long_string(value):
            return "long string"
        return "string"
    if isinstance(value, (_dt.date, Date)):
        return "date"
    if isinstance(value, TypedObject):
        return "typed object" if v0 else "object"
    if isinstance(value, MixedArray):
        return "ECMA array" if v0 else "array"
    if isinstance(value, Dictionary):
        return _amf3_only("Dictionary", v0)
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return "object"
        if v0 and all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in value):
            return "ECMA array"
        return _amf3_only("Dictionary", v0)
    if isinstance(value, ObjectVector):
        return _amf3_only("Vector.<Object>", v0)
    if isinstance(value, (list, tuple)):
        return "strict array" if v0 else "array"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _amf3_only("ByteArray", v0)
    if isinstance(value, array.array):
        return _amf3_only(_VECTOR_NAMES.get(value.typecode, "Vector.<Number>"), v0)
    return "typed object" if v0 else "object"


# -- internals -------------------------------------------------------------------------


def _amf3_only(name: str, v0: bool) -> str:
    return f"{name} (AMF3)" if v0 else name


def _is_long_string(s: str) -> bool:
    if len(s) <= 16383:  # at most 4 UTF-8 bytes a character: cannot exceed 65535 bytes
        return False
    return len(s) > 65535 or len(s.encode("utf-8", "surrogatepass")) > 65535


def _is_container(value: Any) -> bool:
    """Whether a value is an object AMF can reference (and Python can share) with children."""
    if isinstance(value, _SCALARS):
        return False
    from ._types import Date, UndefinedType

    if isinstance(value, (UndefinedType, Date)):
        return False
    return True


def _key_label(key: Any) -> str:
    if isinstance(key, str):
        if key and key.isprintable() and not any(c in key for c in " :'\"[]") and key.strip() == key:
            return key
        return repr(key)
    if isinstance(key, int) and not isinstance(key, bool):
        return f"[{key}]"
    return repr(key)


class _Entry:
    """A Dictionary entry whose key is itself a container: printed as a node of two."""

    __slots__ = ("key", "value")

    def __init__(self, key: Any, value: Any) -> None:
        self.key = key
        self.value = value


def _children(value: Any) -> Iterable[tuple[str | None, Any]]:
    from ._types import Dictionary, ObjectKey

    if isinstance(value, _Entry):
        return (("key", value.key), ("value", value.value))
    if isinstance(value, Dictionary) or (
        isinstance(value, dict) and not all(isinstance(k, (str, int)) for k in value)
    ):
        out: list[tuple[str | None, Any]] = []
        for k, v in value.items():
            if isinstance(k, ObjectKey):
                k = k.value
            if _is_container(k):
                out.append((None, _Entry(k, v)))
            else:
                out.append((_scalar_key(k) + " =>", v))
        return out
    if isinstance(value, dict):
        return ((_key_label(k), v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ((f"[{i}]", v) for i, v in enumerate(value))
    if isinstance(value, array.array):
        return ()
    from ._types import Opaque

    if isinstance(value, Opaque):
        return ()
    return attributes(value)


def _scalar_key(key: Any) -> str:
    return repr(key)


def _count(value: Any) -> int | None:
    if isinstance(value, (dict, list, tuple, array.array)):
        return len(value)
    return None


def _describe(value: Any, version: int, max_string: int, max_bytes: int) -> str:
    """Type name and, for scalars, the value; for containers, their size and shape."""
    from ._types import (
        ArrayCollection,
        Date,
        Dictionary,
        MixedArray,
        ObjectProxy,
        ObjectVector,
        Opaque,
        TypedObject,
        UndefinedType,
    )

    name = type_name(value, version)
    if value is None or isinstance(value, UndefinedType):
        return name
    if isinstance(value, bool):
        return f"{name} {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"{name} {value}"
    if isinstance(value, float):
        return f"{name} {float_text(value)}"
    if isinstance(value, str):
        if len(value) > max_string:
            return f"{name} {value[:max_string]!r}… ({len(value)} chars)"
        return f"{name} {str.__repr__(value)}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        shown = raw[:max_bytes].hex()
        more = "…" if len(raw) > max_bytes else ""
        return f"{name} [{len(raw)}] {shown}{more}".rstrip()
    if isinstance(value, _dt.datetime):
        return f"{name} {iso_utc(value)}"
    if isinstance(value, _dt.date):
        return f"{name} {value.isoformat()}"
    if isinstance(value, Date):
        m = value.millis
        if not math.isfinite(m):
            text = float_text(m)
        else:
            text = f"{int(m) if m == int(m) else m} ms since 1970"
        return f"{name} {text}" + (f", tz {value.tz:+d} min" if value.tz else "")
    if isinstance(value, array.array):
        items = value.tolist()
        shown = ", ".join(float_text(x) if isinstance(x, float) else str(x) for x in items[:16])
        more = ", …" if len(items) > 16 else ""
        return f"{name} [{len(items)}] [{shown}{more}]"
    if isinstance(value, ObjectVector):
        tn = value.type_name or "*"
        extra = ", fixed" if value.fixed else ""
        return f"{name} [{len(value)}] of {tn!r}{extra}"
    if isinstance(value, Opaque):
        raw = value.data
        more = "…" if len(raw) > max_bytes else ""
        return f"{name} {value.alias!r} (its body kept as {len(raw)} bytes) {raw[:max_bytes].hex()}{more}".rstrip()
    if isinstance(value, (ArrayCollection, ObjectProxy)) and getattr(value, "alias", None):
        size = f"[{len(value)}]" if isinstance(value, list) else f"({_plural(len(value), 'member', 'members')})"
        return f"{name} {size}, of class {value.alias!r}"
    if isinstance(value, ObjectProxy):
        return f"{name} ({_plural(len(value), 'member', 'members')})"
    if isinstance(value, Dictionary):
        weak = ", weak keys" if value.weak_keys else ""
        return f"{name} ({_plural(len(value), 'entry', 'entries')}{weak})"
    if isinstance(value, TypedObject):
        shape = ""
        if value.sealed or not value.dynamic:
            shape = f", {len(value.sealed)} sealed" + ("" if value.dynamic else ", not dynamic")
        return f"{name} {value.alias!r} ({_plural(len(value), 'member', 'members')}{shape})"
    if isinstance(value, MixedArray):
        if version == 0:
            return f"{name} [{len(value)}]"
        dense = 0
        while dense in value:
            dense += 1
        return f"{name} [{dense} dense, {len(value) - dense} associative]"
    if isinstance(value, dict):
        if name == "object":
            return f"{name} ({_plural(len(value), 'member', 'members')})"
        return f"{name} [{len(value)}]"
    if isinstance(value, (list, tuple)):
        return f"{name} [{len(value)}]"
    # an instance of a registered (or any other) class
    attrs = attributes(value)
    cls = type(value)
    return f"{name} {alias_of(value)!r} ({cls.__name__}, {_plural(len(attrs), 'member', 'members')})"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _shared(roots: Sequence[tuple[str | None, Any]]) -> set[int]:
    """Ids of the containers reached more than once from the roots (iteratively)."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [v for _, v in reversed(roots)]
    while stack:
        v = stack.pop()
        if not _is_container(v):
            continue
        if isinstance(v, _Entry):  # built afresh per visit: never shared, never tagged
            stack.extend(child for _, child in reversed(list(_children(v))))
            continue
        i = id(v)
        if i in seen:
            shared.add(i)
            continue
        seen.add(i)
        stack.extend(child for _, child in _children(v))
    return shared


def _lines(
    roots: Sequence[tuple[str | None, Any]], version: int, max_string: int, max_bytes: int
) -> Iterator[str]:
    shared = _shared(roots)
    tags: dict[int, int] = {}
    stack: list[tuple[int, str | None, Any]] = [(0, label, v) for label, v in reversed(roots)]
    while stack:
        depth, label, value = stack.pop()
        prefix = _INDENT * depth + (f"{label}: " if label is not None else "")
        if label is not None and label.endswith(" =>"):
            prefix = _INDENT * depth + label + " "
        if isinstance(value, _Entry):
            yield prefix + "entry (an object key)"
            stack.extend((depth + 1, k, v) for k, v in reversed(list(_children(value))))
        elif _is_container(value):
            i = id(value)
            if i in tags:
                yield f"{prefix}<ref #{tags[i]}>"
                continue
            line = prefix + _describe(value, version, max_string, max_bytes)
            if i in shared:
                tags[i] = len(tags) + 1
                line += f" #{tags[i]}"
            yield line
            children = list(_children(value))
            stack.extend((depth + 1, k, v) for k, v in reversed(children))
        else:
            yield prefix + _describe(value, version, max_string, max_bytes)
