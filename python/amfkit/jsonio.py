"""JSON for AMF values: what `amfkit decode --json` prints and `amfkit encode` reads.

Plain JSON types map to themselves; a value JSON has no type for (bytes, dates, NaN, XML,
typed objects, Dictionaries, a container seen before) is a JSON object with a reserved
key such as `__bytes__` or `__ref__`, so that `decode --json` and then `encode` give back
the same value. Both directions are iterative. The mapping, and what it loses on
purpose: docs/cli.md ("JSON").
"""

from __future__ import annotations

import array
import base64
import binascii
import datetime as _dt
import json
import math
import re
from typing import Any, Callable, Iterator

from ._text import MAX_SHOWN, clip, shown
from ._values import alias_of, attributes, float_text, iso_utc

__all__ = ["dumps", "iter_json", "loads", "from_json", "JSONInputError"]

_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class JSONInputError(ValueError):
    """The JSON given to `encode` does not describe an AMF value (with a JSON path)."""


def child_path(path: str, key: Any) -> str:
    """The JSON path of `key` (a str member name or an int index) below `path`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENT.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


# -- AMF value -> JSON text ------------------------------------------------------------


def dumps(value: Any, *, indent: int | None = 2) -> str:
    """JSON text for a decoded value (`indent=None`: one line)."""
    return "".join(iter_json(value, indent=indent))


def iter_json(value: Any, *, indent: int | None = 2) -> Iterator[str]:
    """The pieces of `dumps(value)`, produced without recursion."""
    from ._types import (
        XML,
        Date,
        Dictionary,
        ObjectKey,
        Opaque,
        TypedObject,
        UndefinedType,
        XMLDocument,
    )

    item_sep = "," if indent is not None else ", "

    def newline(depth: int) -> str:
        return "" if indent is None else "\n" + " " * (indent * depth)

    def scalar(v: Any) -> str | None:
        """JSON text for a value without children, or None for a container."""
        if v is None or isinstance(v, UndefinedType):
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if isinstance(v, _Raw):
            return v.text
        if isinstance(v, int):
            return str(int(v))
        if isinstance(v, float):
            if math.isfinite(v):
                return repr(float(v))
            return '{"__float__": "%s"}' % float_text(v)
        if isinstance(v, XMLDocument):
            return '{"__xmldocument__": %s}' % _str(v)
        if isinstance(v, XML):
            return '{"__xml__": %s}' % _str(v)
        if isinstance(v, str):
            return _str(v)
        if isinstance(v, (bytes, bytearray, memoryview)):
            return '{"__bytes__": "%s"}' % base64.b64encode(bytes(v)).decode("ascii")
        if isinstance(v, _dt.datetime):
            return '{"__date__": "%s"}' % iso_utc(v)
        if isinstance(v, _dt.date):
            return '{"__date__": "%sT00:00:00Z"}' % v.isoformat()
        if isinstance(v, Opaque):
            dyn = ', "__dynamic__": true' if v.dynamic else ""
            return '{"__alias__": %s, "__opaque__": "%s"%s}' % (_str(v.alias), base64.b64encode(v.data).decode("ascii"), dyn)
        if isinstance(v, Date):
            m = v.millis
            if not math.isfinite(m):
                ms = '"%s"' % float_text(m)
            else:
                ms = str(int(m)) if m == int(m) else repr(m)
            tz = ', "tz": %d' % v.tz if v.tz else ""
            return '{"__date__": %s%s}' % (ms, tz)
        return None

    def members(v: Any, path: str) -> tuple[str, list[tuple[str | None, Any, str]]]:
        """The bracket pair and the (key or None, child, child path) of a container."""
        if isinstance(v, _Pairs):  # the made-up arrays of a Dictionary's entries
            return "[]", [(None, item, child_path(path, i)) for i, item in enumerate(v.items)]
        if isinstance(v, Dictionary) or (
            isinstance(v, dict) and not all(isinstance(k, (str, int)) for k in v)
        ):
            pairs = _Pairs(
                [_Pairs([k.value if isinstance(k, ObjectKey) else k, val]) for k, val in v.items()]
            )
            items: list[tuple[str | None, Any, str]] = [
                ("__dictionary__", pairs, child_path(path, "__dictionary__"))
            ]
            if getattr(v, "weak_keys", False):
                items.append(("weak_keys", True, ""))
            return "{}", items
        if isinstance(v, TypedObject):
            items = [("__alias__", v.alias, "")]
            if v.sealed:
                items.append(("__sealed__", _Raw("[" + ", ".join(map(_str, v.sealed)) + "]"), ""))
            if not v.dynamic:
                items.append(("__dynamic__", False, ""))
            items.extend((str(k), val, child_path(path, str(k))) for k, val in v.items())
            return "{}", items
        if isinstance(v, dict):
            return "{}", [(_key_text(k), val, child_path(path, _key_text(k))) for k, val in v.items()]
        if isinstance(v, (list, tuple, array.array)):
            return "[]", [(None, val, child_path(path, i)) for i, val in enumerate(v)]
        # an instance of a registered class: written as the typed object it encodes to
        items = [("__alias__", alias_of(v), "")]
        items.extend((k, val, child_path(path, k)) for k, val in attributes(v))
        return "{}", items

    first_seen: dict[int, str] = {}  # id of a container -> path of its first occurrence
    # Frames: [iterator over (key, child, path), closing bracket, depth, is first item]
    stack: list[list[Any]] = []

    def open_value(v: Any, path: str, depth: int) -> str:
        text = scalar(v)
        if text is not None:
            return text
        if not isinstance(v, _Pairs):
            seen = first_seen.get(id(v))
            if seen is not None:
                return '{"__ref__": %s}' % _str(seen)
            first_seen[id(v)] = path
        brackets, items = members(v, path)
        if not items:
            return brackets
        stack.append([iter(items), brackets[1], depth, True])
        return brackets[0]

    yield open_value(value, "$", 0)
    while stack:
        frame = stack[-1]
        nxt = next(frame[0], None)
        if nxt is None:
            stack.pop()
            yield newline(frame[2]) + frame[1]
            continue
        key, child, path = nxt
        head = ("" if frame[3] else item_sep) + newline(frame[2] + 1)
        frame[3] = False
        if key is not None:
            head += _str(key) + ": "
        yield head + open_value(child, path, frame[2] + 1)


class _Pairs:
    """A JSON array the writer makes up (a Dictionary's entries): never a reference target."""

    __slots__ = ("items",)

    def __init__(self, items: list) -> None:
        self.items = items


class _Raw:
    """JSON text written as it is."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _str(s: str) -> str:
    return json.dumps(str(s), ensure_ascii=False)


def _key_text(k: Any) -> str:
    if isinstance(k, str):
        return k
    if isinstance(k, bool) or k is None:
        return json.dumps(k)
    if isinstance(k, (int, float)):
        return str(k)
    return repr(k)


# -- JSON text -> AMF value ------------------------------------------------------------

_TAG_KEYS = {
    "__bytes__": frozenset({"__bytes__"}),
    "__date__": frozenset({"__date__", "tz"}),
    "__float__": frozenset({"__float__"}),
    "__xml__": frozenset({"__xml__"}),
    "__xmldocument__": frozenset({"__xmldocument__"}),
    "__ref__": frozenset({"__ref__"}),
    "__dictionary__": frozenset({"__dictionary__", "weak_keys"}),
}


def loads(text: str | bytes) -> Any:
    """Parse JSON text into the value it describes (docs/cli.md, "JSON")."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise JSONInputError("JSON nested too deeply") from None
    except ValueError as e:  # json.JSONDecodeError, UnicodeDecodeError
        raise JSONInputError(f"not valid JSON: {e}") from None
    return from_json(doc)


def from_json(doc: Any) -> Any:
    """Turn a parsed JSON document into the value it describes, resolving `__ref__`s."""
    from ._types import XML, Date, Dictionary, ObjectKey, Opaque, TypedObject, XMLDocument

    built: dict[str, Any] = {}
    shapes: dict[tuple[str, tuple[str, ...], bool], tuple[str, tuple[str, ...], bool]] = {}
    finish: list[Callable[[], None]] = []
    holder: list[Any] = [None]
    # Work items: (json value, its path, a function storing the converted value).
    # Children are pushed in reverse so that they are converted in document order, which
    # is the order `dumps` writes first occurrences in: a reference always points back.
    stack: list[tuple[Any, str, Callable[[Any], None]]] = [
        (doc, "$", lambda v: holder.__setitem__(0, v))
    ]

    def fail(path: str, message: str) -> JSONInputError:
        return JSONInputError(clip(f"{message}, at {path}"))

    while stack:
        node, path, store = stack.pop()
        if isinstance(node, list):
            out: list[Any] = [None] * len(node)
            built[path] = out
            store(out)
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], child_path(path, i), _setter(out, i)))
            continue
        if not isinstance(node, dict):
            store(node)  # str, int, float, bool, None
            continue
        tag = next((k for k in _TAG_KEYS if k in node), None)
        if tag is not None and "__alias__" not in node:
            extra = set(node) - _TAG_KEYS[tag]
            if extra:
                raise fail(path, f"unexpected keys {clip(str(sorted(extra)), MAX_SHOWN)} beside {tag!r}")
            arg = node[tag]
            if tag == "__ref__":
                if not isinstance(arg, str) or arg not in built:
                    raise fail(path, f"__ref__ {shown(arg)} names no container that comes before it")
                store(built[arg])
            elif tag == "__bytes__":
                if not isinstance(arg, str):
                    raise fail(path, "__bytes__ must be a base64 string")
                try:
                    store(base64.b64decode(arg, validate=True))
                except (binascii.Error, ValueError):
                    raise fail(path, "__bytes__ is not valid base64") from None
            elif tag == "__float__":
                if arg not in _SPECIAL_FLOATS:
                    raise fail(path, '__float__ must be "NaN", "Infinity" or "-Infinity"')
                store(_SPECIAL_FLOATS[arg])
            elif tag == "__xml__" or tag == "__xmldocument__":
                if not isinstance(arg, str):
                    raise fail(path, f"{tag} must be a string")
                store(XML(arg) if tag == "__xml__" else XMLDocument(arg))
            elif tag == "__date__":
                store(_date_from_json(arg, node.get("tz", 0), path, Date))
            else:  # __dictionary__
                if not isinstance(arg, list) or not all(
                    isinstance(p, list) and len(p) == 2 for p in arg
                ):
                    raise fail(path, "__dictionary__ must be a list of [key, value] pairs")
                d = Dictionary(weak_keys=bool(node.get("weak_keys", False)))
                built[path] = d
                store(d)
                base = child_path(path, "__dictionary__")
                slots = [[None, None] for _ in arg]
                for i in range(len(arg) - 1, -1, -1):
                    pp = child_path(base, i)
                    stack.append((arg[i][1], child_path(pp, 1), _setter(slots[i], 1)))
                    stack.append((arg[i][0], child_path(pp, 0), _setter(slots[i], 0)))
                finish.append(_dictionary_filler(d, slots, ObjectKey))
            continue
        if "__alias__" in node:
            alias = node["__alias__"]
            if not isinstance(alias, str):
                raise fail(path, "__alias__ must be a string")
            if "__opaque__" in node:
                extra = set(node) - {"__alias__", "__opaque__", "__dynamic__"}
                if extra:
                    raise fail(path, f"unexpected keys {clip(str(sorted(extra)), MAX_SHOWN)} beside '__opaque__'")
                try:
                    data = base64.b64decode(node["__opaque__"], validate=True)
                except (binascii.Error, ValueError, TypeError):
                    raise fail(path, "__opaque__ is not valid base64") from None
                opaque = Opaque(alias, data, bool(node.get("__dynamic__", False)))
                built[path] = opaque
                store(opaque)
                continue
            sealed = node.get("__sealed__", [])
            if not isinstance(sealed, list) or not all(isinstance(s, str) for s in sealed):
                raise fail(path, "__sealed__ must be a list of member names")
            dynamic = bool(node.get("__dynamic__", True))
            # One alias string and trait tuple per class shape, as the decoder gives: the
            # encoder then writes the traits once and refers to them after.
            shape = (alias, tuple(sealed), dynamic)
            alias, sealed_t, _ = shapes.setdefault(shape, shape)
            obj: dict[str, Any] = TypedObject(alias, sealed=sealed_t, dynamic=dynamic)
            members = [(k, v) for k, v in node.items() if k not in ("__alias__", "__sealed__", "__dynamic__")]
        else:
            obj = {}
            members = list(node.items())
        built[path] = obj
        store(obj)
        for k, _ in members:
            obj[k] = None  # keep the member order of the document
        for k, v in reversed(members):
            stack.append((v, child_path(path, k), _setter(obj, k)))
    for fn in finish:
        fn()
    return holder[0]


def _setter(container: Any, key: Any) -> Callable[[Any], None]:
    def store(v: Any) -> None:
        container[key] = v

    return store


def _dictionary_filler(d: Any, slots: list, object_key: type) -> Callable[[], None]:
    def fill() -> None:
        for k, v in slots:
            try:
                hash(k)
            except TypeError:
                k = object_key(k)
            d[k] = v

    return fill


def _date_from_json(arg: Any, tz: Any, path: str, date_type: type) -> Any:
    if not isinstance(tz, int) or isinstance(tz, bool):
        raise JSONInputError(clip(f"tz must be an integer number of minutes, at {path}"))
    if isinstance(arg, str) and arg not in _SPECIAL_FLOATS:
        text = arg[:-1] + "+00:00" if arg.endswith(("Z", "z")) else arg
        try:
            dt = _dt.datetime.fromisoformat(text)
        except ValueError:
            raise JSONInputError(clip(f"__date__ {shown(arg)} is not an ISO 8601 date, at {path}")) from None
        if dt.tzinfo is not None:
            dt = dt.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return dt if not tz else date_type(_millis(dt), tz)
    if isinstance(arg, str):
        return date_type(_SPECIAL_FLOATS[arg], tz)
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        return date_type(float(arg), tz)
    raise JSONInputError(clip(f"__date__ must be an ISO 8601 string or milliseconds, at {path}"))


def _millis(dt: _dt.datetime) -> float:
    epoch = _dt.datetime(1970, 1, 1)
    return (dt - epoch) // _dt.timedelta(microseconds=1) / 1000.0
