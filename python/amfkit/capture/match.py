"""AMF values compared by structure, for replay: `key(value)` is a hashable form two
values share when they carry the same data however they travelled (AMF0 or AMF3, an
integer or a double of the same value, an ECMA or a strict array of the same items,
shared references or copies); `distance(a, b)` counts the places where two keys differ,
to name the nearest recorded calls, and `differences(a, b)` says where, as
`amfkit.Difference`s (a path such as `$[0].name`, a kind, what each side holds). All
walk at most `MAX_NODES` nodes.

`amfkit.diff` compares two payloads' bytes and reports what only the wire shows (an
integer against a double, an ECMA array against a strict array, a reference against a
copy); replay matching ignores exactly those on purpose, so these walk the keys, in the
diff's vocabulary: kinds `type`, `class`, `missing`, `items`, `value`."""

from __future__ import annotations

import array
import ast
import datetime as _dt
import math
from typing import Any, Iterator

from .._types import Date, UndefinedType
from .._values import alias_of, attributes
from ..differences import Difference, _key_step

__all__ = ["key", "differences", "distance", "MAX_NODES"]

#: The most nodes one key or distance looks at; past it the rest counts as one opaque node.
MAX_NODES = 100_000


def key(value: Any) -> Any:
    """A hashable structural form of a decoded AMF value."""
    budget = [MAX_NODES]
    return _key(value, budget, {})


def _key(v: Any, budget: list[int], active: dict[int, int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        return ("…",)
    if v is None or isinstance(v, UndefinedType):
        return None
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        f = float(v)
        if math.isnan(f):
            return ("nan",)
        return ("n", int(f) if f.is_integer() and abs(f) < 2**63 else f)
    if isinstance(v, str):
        return ("s", str(v))
    if isinstance(v, (bytes, bytearray, memoryview)):
        return ("B", bytes(v))
    if isinstance(v, Date):
        return ("d", v.millis if not math.isnan(v.millis) else "nan")
    if isinstance(v, _dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        return ("d", v.timestamp() * 1000)
    if isinstance(v, _dt.date):
        return ("d", _dt.datetime(v.year, v.month, v.day, tzinfo=_dt.timezone.utc).timestamp() * 1000)
    ident = id(v)
    if ident in active:  # a cycle: named by its depth, the same for the same shape
        return ("^", active[ident])
    active[ident] = len(active)
    try:
        if isinstance(v, array.array):
            return ("l", tuple(_key(x, budget, active) for x in v))
        if isinstance(v, (list, tuple)):
            return ("l", tuple(_key(x, budget, active) for x in v))
        if isinstance(v, dict):
            items = _items(v)
            alias = getattr(v, "alias", None)
            if items is not None and alias is None and all(k == str(i) for i, (k, _) in enumerate(items)):
                return ("l", tuple(_key(x, budget, active) for _, x in items))  # an ECMA array of items
            pairs = tuple(sorted(((repr(_key(k, budget, active)), _key(x, budget, active)) for k, x in v.items()), key=lambda p: p[0]))
            return ("o", alias or "", pairs)
        members = attributes(v)
        return ("o", alias_of(v), tuple(sorted((k, _key(x, budget, active)) for k, x in members)))
    finally:
        del active[ident]


def _items(d: dict[Any, Any]) -> list[tuple[str, Any]] | None:
    if not d or not all(isinstance(k, str) for k in d):
        return None
    return sorted(d.items(), key=lambda kv: (len(kv[0]), kv[0]))


def distance(a: Any, b: Any) -> int:
    """How many places two structural keys (`key`) differ: 0 when equal (the items one
    array has beyond the other's count one each)."""
    return sum(weight for weight, *_ in _walk(a, b, "$", [MAX_NODES]))


def differences(a: Any, b: Any, *, limit: int = 10) -> list[Difference]:
    """The first `limit` places where two structural keys (`key`) differ, in order."""
    out = []
    for _, path, kind, shown_a, shown_b in _walk(a, b, "$", [MAX_NODES]):
        out.append(Difference(path, kind, shown_a, shown_b))
        if len(out) >= limit:
            break
    return out


def _walk(a: Any, b: Any, path: str, budget: list[int]) -> Iterator[tuple[int, str, str, str, str]]:
    """(weight, path, kind, a shown, b shown) of each place where keys `a` and `b` differ."""
    budget[0] -= 1
    if a == b:
        return
    if budget[0] < 0 or not (isinstance(a, tuple) and isinstance(b, tuple)) or not a or not b or a[0] != b[0]:
        yield 1, path, "type" if _tag(a) != _tag(b) else "value", _shown(a), _shown(b)
        return
    if a[0] == "l":
        xs, ys = a[1], b[1]
        for i, (x, y) in enumerate(zip(xs, ys)):
            yield from _walk(x, y, f"{path}[{i}]", budget)
        if len(xs) != len(ys):
            yield abs(len(xs) - len(ys)), path, "items", _items_text(len(xs)), _items_text(len(ys))
        return
    if a[0] == "o":
        if a[1] != b[1]:
            yield 1, path, "class", _shown(a), _shown(b)
        da, db = dict(a[2]), dict(b[2])
        for k in sorted(da.keys() | db.keys()):
            step = path + _step(k)
            if k in da and k in db:
                yield from _walk(da[k], db[k], step, budget)
            elif k in da:
                yield 1, step, "missing", _shown(da[k]), "no such member"
            else:
                yield 1, step, "missing", "no such member", _shown(db[k])
        return
    yield 1, path, "value", _shown(a), _shown(b)


def _tag(k: Any) -> Any:
    return k[0] if isinstance(k, tuple) and k else k


def _step(name: str) -> str:
    """A member's step in a path: a dict's keys are held as the repr of their own key
    (`('s', 'id')`), an object's members by name."""
    if name.startswith("("):
        try:
            k = ast.literal_eval(name)
        except (ValueError, SyntaxError):
            k = None
        if isinstance(k, tuple) and len(k) == 2 and k[0] == "s" and isinstance(k[1], str):
            return _key_step(k[1])
        if isinstance(k, tuple) and len(k) == 2 and k[0] == "n":
            return f"[{k[1]}]"
    return _key_step(name)


def _items_text(n: int) -> str:
    return f"{n} item" if n == 1 else f"{n} items"


def _shown(k: Any) -> str:
    """A key in a few words, as `amfkit.diff` shows a value."""
    if k is None:
        return "null"
    if not isinstance(k, tuple) or not k:
        return repr(k)
    tag = k[0]
    if tag == "b":
        return f"boolean {'true' if k[1] else 'false'}"
    if tag == "n":
        return f"number {k[1]!r}"
    if tag == "nan":
        return "number NaN"
    if tag == "s":
        text = k[1] if len(k[1]) <= 60 else k[1][:60] + "…"
        return f"string {text!r}"
    if tag == "B":
        return f"ByteArray ({len(k[1])} bytes)"
    if tag == "d":
        return f"date {k[1]!r}"
    if tag == "l":
        return f"array [{len(k[1])}]"
    if tag == "o":
        return f"typed object {k[1]!r}" if k[1] else "object"
    if tag == "^":
        return "a reference to a container around it"
    return "more than the nodes compared"
