"""AMF values compared by structure, for replay: `key(value)` is a hashable form two
values share when they carry the same data however they travelled (AMF0 or AMF3, an
integer or a double of the same value, an ECMA or a strict array of the same items,
shared references or copies); `distance(a, b)` counts the places where two values
differ, to name the nearest recorded calls. Both walk at most `MAX_NODES` nodes.

(A structural diff of two payloads, with paths and kinds, is issue 26's `amfkit.diff`;
`distance` only needs a count.)"""

from __future__ import annotations

import array
import datetime as _dt
import math
from typing import Any

from .._types import Date, UndefinedType
from .._values import alias_of, attributes

__all__ = ["key", "distance", "MAX_NODES"]

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
    """How many places two structural keys (`key`) differ: 0 when equal."""
    budget = [MAX_NODES]
    return _distance(a, b, budget)


def _distance(a: Any, b: Any, budget: list[int]) -> int:
    budget[0] -= 1
    if a == b:
        return 0
    if budget[0] < 0 or not (isinstance(a, tuple) and isinstance(b, tuple)) or not a or not b or a[0] != b[0]:
        return 1
    if a[0] == "l":
        xs, ys = a[1], b[1]
        return sum(_distance(x, y, budget) for x, y in zip(xs, ys)) + abs(len(xs) - len(ys))
    if a[0] == "o":
        n = 1 if a[1] != b[1] else 0
        da, db = dict(a[2]), dict(b[2])
        for k in da.keys() | db.keys():
            n += _distance(da[k], db[k], budget) if k in da and k in db else 1
        return n
    return 1
